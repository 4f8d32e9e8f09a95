// Functions that add their part of fastgemm._core to the module; module.cpp calls each once.
#pragma once

#include <pybind11/pybind11.h>

void register_batched(pybind11::module_& m);
void register_calls(pybind11::module_& m);
void register_ufunc_loops(pybind11::module_& m);
void register_lowp(pybind11::module_& m);
void register_bf16_loop(pybind11::module_& m);
void register_numpy_dot(pybind11::module_& m);
void register_packed(pybind11::module_& m);
void register_int8(pybind11::module_& m);
