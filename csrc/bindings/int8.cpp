// fastgemm._core's int8 part: uint8 / int8 x int8 products into an int32 C (gemm_int8) or a
// dequantised float32 C (gemm_int8_scaled), B an int8 array or a PackedI8 (packed.cpp), and the
// int8 tile of a kernel set. Conversion only:
// fastgemm/_int8.py checks the arguments. See docs/DESIGN.md, "int8 products".
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>

#include "../fastgemm/dispatch.hpp"
#include "../fastgemm/gemm_int8.hpp"
#include "../fastgemm/packed.hpp"
#include "convert.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;

namespace {

// B as the core takes it: an int8 array's view, or the pre-packed B itself.
View<const int8_t> b_operand(const py::array& b) {
    bindings::require_2d(b, "b");
    return bindings::matrix_view<const int8_t>(b, "b");
}
const PackedInt8B& b_operand(const PackedInt8B& b) { return b; }

bool a_is_unsigned(const py::array& a) {
    bindings::require_2d(a, "a");
    const int num = a.dtype().num();
    if (num == py::dtype::of<uint8_t>().num()) return true;
    if (num == py::dtype::of<int8_t>().num()) return false;
    throw py::type_error("a: wrong dtype " + std::string(py::str(a.dtype())) + ", expected uint8 or int8");
}

template <typename A, typename B>
void int32_typed(const py::array& a, const B& b, py::array& c, bool accumulate) {
    const View<const A> va = bindings::matrix_view<const A>(a, "a");
    const auto& vb = b_operand(b);
    bindings::require_2d(c, "c");
    const View<int32_t> vc = bindings::matrix_view<int32_t>(c, "c");
    py::gil_scoped_release release;
    gemm_int8<A>(va, vb, accumulate, vc);
}

template <typename B>
void gemm_int8_py(const py::array& a, const B& b, py::array& c, bool accumulate) {
    if (a_is_unsigned(a)) int32_typed<uint8_t>(a, b, c, accumulate);
    else int32_typed<int8_t>(a, b, c, accumulate);
}

template <typename A, typename B>
void scaled_typed(const py::array& a, const B& b, const py::array& scale, py::array& c,
                  const std::optional<py::array>& bias, int activation) {
    const View<const A> va = bindings::matrix_view<const A>(a, "a");
    const auto& vb = b_operand(b);
    bindings::require_2d(c, "c");
    const View<float> vc = bindings::matrix_view<float>(c, "c");
    bindings::check_dtype<float>(scale, "scale");
    if (scale.ndim() != 1 || !(scale.flags() & py::array::c_style) || (scale.size() != 1 && scale.size() != vc.cols))
        throw py::value_error("scale: expected a contiguous 1-D array of 1 or n values");
    const float* s = static_cast<const float*>(scale.data());
    const int64_t inc = scale.size() == 1 ? 0 : 1;
    const Epilogue<float> ep = bindings::epilogue_of<float>(bias, activation, vc);
    py::gil_scoped_release release;
    gemm_int8_scaled<A>(va, vb, s, inc, vc, ep);
}

template <typename B>
void gemm_int8_scaled_py(const py::array& a, const B& b, const py::array& scale, py::array& c,
                         const std::optional<py::array>& bias, int activation) {
    if (a_is_unsigned(a)) scaled_typed<uint8_t>(a, b, scale, c, bias, activation);
    else scaled_typed<int8_t>(a, b, scale, c, bias, activation);
}

py::dict int8_info(const std::string& name) {
    const Int8Kernels& ik = int8_kernels(find_kernels(name, false));
    const Blocking bs = int8_blocking(ik);
    return py::dict(py::arg("isa") = ik.isa, py::arg("mr") = ik.u8.mr, py::arg("nr") = ik.u8.nr,
                    py::arg("kgroup") = ik.u8.kgroup, py::arg("mc") = bs.mc, py::arg("kc") = bs.kc,
                    py::arg("nc") = bs.nc);
}

// Each function twice: B an int8 array, or a PackedI8 (pybind11 tries the exact type first).
template <typename B>
void register_products(py::module_& m) {
    m.def("gemm_int8", &gemm_int8_py<B>, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("accumulate"));
    m.def("gemm_int8_scaled", &gemm_int8_scaled_py<B>, py::arg("a"), py::arg("b"), py::arg("scale"), py::arg("c"),
          py::arg("bias") = py::none(), py::arg("activation") = 0);
}

}  // namespace

void register_int8(py::module_& m) {
    register_products<py::array>(m);
    register_products<PackedInt8B>(m);
    m.def("int8_info", &int8_info, py::arg("name"));
}
