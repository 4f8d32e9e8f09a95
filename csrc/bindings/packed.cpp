// fastgemm._core.PackedF32 / PackedF64 / PackedI8 (a pre-packed B, core PackedB<T> /
// PackedInt8B) and sgemm_packed / dgemm_packed (int8.cpp has the int8 products with a PackedI8).
// python/fastgemm/_packed.py gives them their meaning.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "../fastgemm/dispatch.hpp"
#include "../fastgemm/packed.hpp"
#include "convert.hpp"
#include "gemm_entry.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;

namespace {

// Packed: PackedB<T> or PackedInt8B (elements T).
template <typename Packed, typename T>
void register_class(py::module_& m, const char* cls) {
    // No buffer protocol and no data accessor but a copy: the packed memory is never writable.
    py::class_<Packed>(m, cls)
        .def(py::init([](const py::array& b) {
                 bindings::require_2d(b, "b");
                 const View<const T> vb = bindings::matrix_view<const T>(b, "b");
                 py::gil_scoped_release release;
                 return std::make_unique<Packed>(active_kernels(), vb);
             }),
             py::arg("b"))
        .def_property_readonly("rows", &Packed::rows)
        .def_property_readonly("cols", &Packed::cols)
        .def_property_readonly("kc", &Packed::kc)
        .def_property_readonly("nc", &Packed::nc)
        .def_property_readonly("nr", &Packed::nr)
        .def_property_readonly("nbytes", &Packed::bytes)
        .def_property_readonly("kernel", [](const Packed& p) { return std::string(p.kernels().name); })
        .def("unpack", [](const Packed& p) {
            py::array_t<T> out({p.rows(), p.cols()});
            const View<T> v{out.mutable_data(), p.rows(), p.cols(), p.cols(), 1};
            py::gil_scoped_release release;
            p.unpack(v);
            return out;
        });
}

template <typename T>
void register_type(py::module_& m, const char* cls, const char* gemm_name) {
    register_class<PackedB<T>, T>(m, cls);
    bindings::def_gemm<T, PackedB<T>>(m, gemm_name);
}

}  // namespace

void register_packed(py::module_& m) {
    register_type<float>(m, "PackedF32", "sgemm_packed");
    register_type<double>(m, "PackedF64", "dgemm_packed");
    register_class<PackedInt8B, int8_t>(m, "PackedI8");
}
