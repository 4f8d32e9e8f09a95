// The one entry behind fastgemm._core.sgemm / dgemm (module.cpp, B an array) and sgemm_packed /
// dgemm_packed (packed.cpp, B a pre-packed PackedB<T>): convert, release the GIL, run gemm<T>.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <type_traits>

#include "../fastgemm/gemm.hpp"
#include "../fastgemm/packed.hpp"
#include "convert.hpp"

namespace fastgemm {
namespace bindings {

// B as the core takes it: an array's view, or the pre-packed B itself.
template <typename T>
View<const T> b_operand(const pybind11::array& b) {
    return matrix_view<const T>(b, "b");
}
template <typename T>
const PackedB<T>& b_operand(const PackedB<T>& b) {
    return b;
}

// Every 2-D test before any dtype test, in argument order (the messages a caller sees first).
template <typename T, typename B>
void gemm_py(const pybind11::array& a, const B& b, pybind11::array& c, T alpha, T beta,
             const std::optional<pybind11::array>& bias, int activation) {
    require_2d(a, "a");
    if constexpr (std::is_same_v<B, pybind11::array>) require_2d(b, "b");
    require_2d(c, "c");
    const View<const T> va = matrix_view<const T>(a, "a");
    const auto& vb = b_operand<T>(b);
    const View<T> vc = matrix_view<T>(c, "c");
    const Epilogue<T> ep = epilogue_of<T>(bias, activation, vc);
    pybind11::gil_scoped_release release;
    gemm<T>(alpha, va, vb, beta, vc, ep);
}

// Adds gemm_py<T, B> to m as `name`.
template <typename T, typename B>
void def_gemm(pybind11::module_& m, const char* name) {
    namespace py = pybind11;
    m.def(name, &gemm_py<T, B>, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha"), py::arg("beta"),
          py::arg("bias") = py::none(), py::arg("activation") = 0);
}

}  // namespace bindings
}  // namespace fastgemm
