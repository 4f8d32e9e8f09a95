// fastgemm._core.{s,d}gemm_batched: a stack of same-shaped products in one native call.
// python/fastgemm/_matmul.py has already broadcast the operands to one batch shape.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "../fastgemm/batched.hpp"
#include "convert.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;

namespace {

template <typename T>
void gemm_batched_py(const py::array& a, const py::array& b, py::array& c, T alpha, T beta) {
    bindings::require_same_batch(a, b, c, "gemm_batched");
    if (!c.writeable()) throw py::value_error("gemm_batched: c is read-only");
    const View<const T> va = bindings::matrix_view<const T>(a, "gemm_batched: a");
    const View<const T> vb = bindings::matrix_view<const T>(b, "gemm_batched: b");
    const View<T> vc = bindings::matrix_view<T>(c, "gemm_batched: c");
    // An empty array has no element to misalign (NumPy may give it any address).
    const py::array* const operands[] = {&a, &b, &c};
    for (const py::array* x : operands)
        if (x->size() > 0 && reinterpret_cast<uintptr_t>(x->data()) % alignof(T))
            throw py::value_error("gemm_batched: operands must be aligned");
    const std::vector<BatchAxis> axes = bindings::batch_axes<T, T, T>(a, b, c, "gemm_batched");
    py::gil_scoped_release release;
    gemm_batched<T>(alpha, va, vb, beta, vc, axes);
}

}  // namespace

void register_batched(py::module_& m) {
    m.def("sgemm_batched", &gemm_batched_py<float>, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha"),
          py::arg("beta"));
    m.def("dgemm_batched", &gemm_batched_py<double>, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha"),
          py::arg("beta"));
}
