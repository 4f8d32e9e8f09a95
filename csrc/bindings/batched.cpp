// fastgemm._core.{s,d}gemm_batched: a stack of same-shaped products in one native call.
// python/fastgemm/_matmul.py has already broadcast the operands to one batch shape.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "../fastgemm/batched.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;

namespace {

template <typename T>
int64_t elements(const py::array& x, py::ssize_t axis, const char* name) {
    const auto item = py::ssize_t(sizeof(T));
    if (x.strides(axis) % item)
        throw py::value_error(std::string(name) + ": strides are not a multiple of the item size");
    return x.strides(axis) / item;
}

template <typename T>
View<T> matrix_of(const py::array& x, const char* name, T* data) {
    const py::ssize_t r = x.ndim() - 2, c = x.ndim() - 1;
    return {data, x.shape(r), x.shape(c), elements<T>(x, r, name), elements<T>(x, c, name)};
}

template <typename T>
void gemm_batched_py(const py::array& a, const py::array& b, py::array& c, T alpha, T beta) {
    const py::dtype dt = py::dtype::of<T>();
    const py::array* const operands[] = {&a, &b, &c};
    for (const py::array* x : operands)
        if (!x->dtype().is(dt)) throw py::type_error("gemm_batched: operands must all have dtype " + std::string(py::str(dt)));
    const py::ssize_t nd = c.ndim();
    if (nd < 2 || a.ndim() != nd || b.ndim() != nd)
        throw py::value_error("gemm_batched: a, b and c must have the same number (>= 2) of dimensions");
    for (py::ssize_t d = 0; d < nd - 2; ++d)
        if (a.shape(d) != c.shape(d) || b.shape(d) != c.shape(d))
            throw py::value_error("gemm_batched: a, b and c must have the same batch shape");
    if (!c.writeable()) throw py::value_error("gemm_batched: c is read-only");
    for (const py::array* x : operands)
        if (reinterpret_cast<uintptr_t>(x->data()) % alignof(T))
            throw py::value_error("gemm_batched: operands must be aligned");

    const View<const T> va = matrix_of<const T>(a, "a", static_cast<const T*>(a.data()));
    const View<const T> vb = matrix_of<const T>(b, "b", static_cast<const T*>(b.data()));
    const View<T> vc = matrix_of<T>(c, "c", static_cast<T*>(c.mutable_data()));
    std::vector<BatchAxis> axes;
    for (py::ssize_t d = 0; d < nd - 2; ++d)
        axes.push_back({c.shape(d), elements<T>(a, d, "a"), elements<T>(b, d, "b"), elements<T>(c, d, "c")});
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
