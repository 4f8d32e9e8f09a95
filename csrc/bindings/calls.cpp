// fastgemm._core.{s,d}gemm_call and matmul_call: the per-call path of fg.sgemm/dgemm and
// fg.matmul for the common case, in C, so a small product does not pay for Python's
// argument handling. They return NotImplemented for anything unusual (other types,
// non-native layouts, overlap, bad input); the Python layer then takes its
// general path, which also raises every error.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <exception>
#include <vector>

#include "raw_call.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;
using namespace fastgemm::bindings;

namespace {

bool flag(PyObject* o, bool& out) {
    if (o == Py_False) return out = false, true;
    if (o == Py_True) return out = true, true;
    return false;
}

bool real(PyObject* o, double& out) {
    if (PyFloat_CheckExact(o)) return out = PyFloat_AS_DOUBLE(o), true;
    if (PyLong_CheckExact(o)) {
        out = PyLong_AsDouble(o);
        if (out == -1.0 && PyErr_Occurred()) return PyErr_Clear(), false;
        return true;
    }
    return false;
}

// gemm_call(a, b, c, alpha, beta, trans_a, trans_b): C or NotImplemented.
template <typename T>
PyObject* gemm_call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 7) return not_implemented();
    PyArrayObject* a = usable<T>(args[0]);
    PyArrayObject* b = usable<T>(args[1]);
    double alpha, beta;
    bool ta, tb;
    if (!a || !b || PyArray_NDIM(a) != 2 || PyArray_NDIM(b) != 2 || !real(args[3], alpha) || !real(args[4], beta) ||
        !flag(args[5], ta) || !flag(args[6], tb))
        return not_implemented();
    const View<const T> va = matrix<const T>(a, ta), vb = matrix<const T>(b, tb);
    if (va.cols != vb.rows) return not_implemented();
    PyArrayObject* c;
    if (args[2] == Py_None) {
        if (beta != 0.0) return not_implemented();
        npy_intp dims[2] = {va.rows, vb.cols};
        c = reinterpret_cast<PyArrayObject*>(PyArray_EMPTY(2, dims, type_num<T>(), 0));
        if (!c) return nullptr;
    } else {
        c = usable<T>(args[2]);
        if (!c || PyArray_NDIM(c) != 2 || PyArray_DIM(c, 0) != va.rows || PyArray_DIM(c, 1) != vb.cols ||
            !PyArray_ISWRITEABLE(c) || bounds_overlap(c, a) || bounds_overlap(c, b))
            return not_implemented();
        Py_INCREF(c);
    }
    try {
        run<T>(T(alpha), va, vb, T(beta), matrix<T>(c, false));
    } catch (const std::exception&) {
        Py_DECREF(c);
        return not_implemented();  // the general path raises the right error
    }
    return reinterpret_cast<PyObject*>(c);
}

// gemm_call(a, ...): gemm_call<float> or <double> by a's dtype.
PyObject* gemm_call_any(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs >= 1 && PyArray_CheckExact(args[0])) {
        const int t = PyArray_TYPE(reinterpret_cast<PyArrayObject*>(args[0]));
        if (t == NPY_FLOAT) return gemm_call<float>(self, args, nargs);
        if (t == NPY_DOUBLE) return gemm_call<double>(self, args, nargs);
    }
    return not_implemented();
}

// The matrix of a matmul operand: its last two axes, or a 1-D operand as NumPy promotes it,
// a row on the left (`left`), a column on the right.
template <typename T>
View<const T> operand(PyArrayObject* x, bool left) {
    if (PyArray_NDIM(x) >= 2) return matrix<const T>(x, false);
    const npy_intp len = PyArray_DIM(x, 0), st = PyArray_STRIDE(x, 0) / npy_intp(sizeof(T));
    const auto* data = static_cast<const T*>(PyArray_DATA(x));
    return left ? View<const T>{data, 1, len, len * st, st} : View<const T>{data, len, 1, st, 1};
}

// matmul_call(a, b, out): np.matmul(a, b, out=out) for float operands whose stacks broadcast,
// 1-D ones promoted as NumPy promotes them and their axis dropped from the result; or
// NotImplemented. A long vector . vector product (long_vector_dot) is left to NumPy's BLAS dot,
// as np.dot's and the switch's are; with `out` it takes the general path.
template <typename T>
PyObject* matmul_typed(PyArrayObject* a, PyArrayObject* b, PyObject* out_obj) {
    const int na = PyArray_NDIM(a), nb = PyArray_NDIM(b);
    if (na < 1 || nb < 1) return not_implemented();
    const npy_intp e = sizeof(T);
    const View<const T> va = operand<T>(a, true), vb = operand<T>(b, false);
    if (va.cols != vb.rows) return not_implemented();
    if (na == 1 && nb == 1 && (out_obj != Py_None || long_vector_dot(va.cols, e))) return not_implemented();
    // Batch axes: an operand's axes before its matrix (none for a 1-D one), aligned at the right.
    const int ba = na > 2 ? na - 2 : 0, bb = nb > 2 ? nb - 2 : 0, nbatch = ba > bb ? ba : bb;
    const int nd = nbatch + (na > 1) + (nb > 1);  // the result's dimensions
    if (nbatch + 2 > NPY_MAXDIMS) return not_implemented();
    npy_intp shape[NPY_MAXDIMS];
    std::vector<BatchAxis> axes;
    for (int d = 0; d < nbatch; ++d) {
        const int da = d - (nbatch - ba), db = d - (nbatch - bb);
        const npy_intp sa = da >= 0 ? PyArray_DIM(a, da) : 1, sb = db >= 0 ? PyArray_DIM(b, db) : 1;
        if (sa != sb && sa != 1 && sb != 1) return not_implemented();
        shape[d] = sa == 1 ? sb : sa;
        axes.push_back({shape[d], sa == 1 ? 0 : PyArray_STRIDE(a, da) / e, sb == 1 ? 0 : PyArray_STRIDE(b, db) / e, 0});
    }
    int d = nbatch;
    if (na > 1) shape[d++] = va.rows;
    if (nb > 1) shape[d++] = vb.cols;
    PyArrayObject* c;
    if (out_obj == Py_None) {
        c = reinterpret_cast<PyArrayObject*>(PyArray_EMPTY(nd, shape, type_num<T>(), 0));
        if (!c) return nullptr;
    } else {
        c = usable<T>(out_obj);
        if (!c || PyArray_NDIM(c) != nd || !PyArray_ISWRITEABLE(c) || bounds_overlap(c, a) || bounds_overlap(c, b))
            return not_implemented();
        for (int i = 0; i < nd; ++i)
            if (PyArray_DIM(c, i) != shape[i]) return not_implemented();
        Py_INCREF(c);
    }
    for (int i = 0; i < nbatch; ++i) axes[size_t(i)].c = PyArray_STRIDE(c, i) / e;
    // C's matrix: the result's last axes, a dropped one of length 1 (any stride serves).
    const npy_intp cs = nb > 1 ? PyArray_STRIDE(c, nd - 1) / e : 1;
    const npy_intp rs = na > 1 ? PyArray_STRIDE(c, nd - (nb > 1 ? 2 : 1)) / e : cs * vb.cols;
    const View<T> vc{static_cast<T*>(PyArray_DATA(c)), va.rows, vb.cols, rs, cs};
    try {
        if (out_obj != Py_None && !c_disjoint(vc, axes)) throw std::invalid_argument("out overlaps itself");
        run<T>(T(1), va, vb, T(0), vc, axes);
    } catch (const std::exception&) {
        Py_DECREF(c);
        return not_implemented();
    }
    // A 0-d result is returned as NumPy's scalar, as np.matmul returns it.
    return nd == 0 ? PyArray_Return(c) : reinterpret_cast<PyObject*>(c);
}

PyObject* matmul_call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 3) return not_implemented();
    if (PyArrayObject* a = usable<float>(args[0])) {
        if (PyArrayObject* b = usable<float>(args[1])) return matmul_typed<float>(a, b, args[2]);
    } else if (PyArrayObject* a = usable<double>(args[0])) {
        if (PyArrayObject* b = usable<double>(args[1])) return matmul_typed<double>(a, b, args[2]);
    }
    return not_implemented();
}

PyMethodDef kCalls[] = {
    {"sgemm_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&gemm_call<float>)), METH_FASTCALL,
     "sgemm_call(a, b, c, alpha, beta, trans_a, trans_b): C, or NotImplemented for the general path"},
    {"dgemm_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&gemm_call<double>)), METH_FASTCALL,
     "dgemm_call(a, b, c, alpha, beta, trans_a, trans_b): C, or NotImplemented for the general path"},
    {"gemm_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&gemm_call_any)), METH_FASTCALL,
     "gemm_call(a, b, c, alpha, beta, trans_a, trans_b): sgemm_call or dgemm_call by a's dtype"},
    {"matmul_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&matmul_call)), METH_FASTCALL,
     "matmul_call(a, b, out): np.matmul's result for float operands, or NotImplemented"},
};

}  // namespace

void register_calls(py::module_& m) {
    if (_import_array() < 0) throw py::error_already_set();
    for (PyMethodDef& def : kCalls) add_function(m, def);
    m.attr("VECTOR_DOT_MAX_BYTES") = kVectorDotMaxBytes;
}
