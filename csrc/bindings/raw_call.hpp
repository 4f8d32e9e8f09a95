// Helpers of the per-call entries written on the raw CPython / NumPy C API (calls.cpp,
// numpy_dot.cpp, lowp.cpp): which ndarrays they take as they are, their views, and the GIL rule.
// Each including file calls _import_array() once before using them.
#pragma once

#include <pybind11/pybind11.h>

#ifndef NPY_NO_DEPRECATED_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#endif
#include <numpy/arrayobject.h>

#include <exception>
#include <vector>

#include "../fastgemm/batched.hpp"
#include "../fastgemm/gemm.hpp"

namespace fastgemm {
namespace bindings {

// Above this many multiply-adds the GIL is released (releasing it costs more than a tiny product).
constexpr double kReleaseGilWork = 32768;

template <typename T>
constexpr int type_num() {
    return sizeof(T) == 4 ? NPY_FLOAT : NPY_DOUBLE;
}

// An exact ndarray of NumPy type `type`, native byte order, aligned, strides whole `item`s.
inline PyArrayObject* usable(PyObject* o, int type, npy_intp item) {
    if (!PyArray_CheckExact(o)) return nullptr;
    auto* x = reinterpret_cast<PyArrayObject*>(o);
    if (PyArray_TYPE(x) != type || !PyArray_ISNOTSWAPPED(x) || !PyArray_ISALIGNED(x)) return nullptr;
    for (int d = 0; d < PyArray_NDIM(x); ++d)
        if (PyArray_STRIDE(x, d) % item) return nullptr;
    return x;
}

template <typename T>
PyArrayObject* usable(PyObject* o) {
    return usable(o, type_num<T>(), npy_intp(sizeof(T)));
}

// The matrix in x's last two axes (item 0 of a stack), transposed if asked.
template <typename T>
View<T> matrix(PyArrayObject* x, bool transpose) {
    const int nd = PyArray_NDIM(x);
    const npy_intp e = sizeof(T);
    View<T> v{static_cast<T*>(PyArray_DATA(x)), PyArray_DIM(x, nd - 2), PyArray_DIM(x, nd - 1),
              PyArray_STRIDE(x, nd - 2) / e, PyArray_STRIDE(x, nd - 1) / e};
    if (transpose) v = {v.data, v.cols, v.rows, v.cs, v.rs};
    return v;
}

// Byte ranges [lo, hi) of two arrays intersect (NumPy's cheap may_share_memory test).
inline bool bounds_overlap(PyArrayObject* x, PyArrayObject* y) {
    npy_intp xl, xh, yl, yh;
    auto bounds = [](PyArrayObject* a, npy_intp& lo, npy_intp& hi) {
        lo = hi = reinterpret_cast<npy_intp>(PyArray_DATA(a));
        for (int d = 0; d < PyArray_NDIM(a); ++d) {
            const npy_intp reach = (PyArray_DIM(a, d) - 1) * PyArray_STRIDE(a, d);
            if (PyArray_DIM(a, d) == 0) return false;
            (reach < 0 ? lo : hi) += reach;
        }
        hi += PyArray_ITEMSIZE(a);
        return true;
    };
    if (!bounds(x, xl, xh) || !bounds(y, yl, yh)) return false;
    return xl < yh && yl < xh;
}

inline PyObject* not_implemented() { Py_RETURN_NOTIMPLEMENTED; }

// Adds `def` (a METH_FASTCALL entry that outlives the module) to m as a builtin function.
inline void add_function(pybind11::module_& m, PyMethodDef& def) {
    PyObject* f = PyCFunction_NewEx(&def, nullptr, m.ptr());
    if (!f) throw pybind11::error_already_set();
    m.add_object(def.ml_name, pybind11::reinterpret_steal<pybind11::object>(f));
}

// product(), with the GIL released when `work` multiply-adds are worth it (and taken back
// before an exception leaves). Throws as product() does.
template <typename F>
void release_gil_for(double work, F&& product) {
    if (work <= kReleaseGilWork) return product();
    std::exception_ptr error;
    Py_BEGIN_ALLOW_THREADS try { product(); } catch (...) {
        error = std::current_exception();
    }
    Py_END_ALLOW_THREADS if (error) std::rethrow_exception(error);
}

// gemm<T>, or gemm_batched<T> over `axes`, under release_gil_for. Throws as they do.
template <typename T>
void run(T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const std::vector<BatchAxis>& axes = {}) {
    double work = double(c.rows) * double(c.cols) * double(a.cols);
    for (const BatchAxis& ax : axes) work *= double(ax.size);
    release_gil_for(work, [&] {
        if (axes.empty()) gemm<T>(alpha, a, b, beta, c);
        else gemm_batched<T>(alpha, a, b, beta, c, axes);
    });
}

}  // namespace bindings
}  // namespace fastgemm
