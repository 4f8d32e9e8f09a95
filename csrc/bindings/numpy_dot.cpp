// np.dot and np.inner under the switch: fastgemm._core.numpy_dot / numpy_inner, which
// fastgemm._numpy_funcs puts in place of NumPy's functions. Exact native ndarrays of float32 /
// float64 are computed here (a mixed pair in float64, an unaligned operand copied first, as
// NumPy does both); every other call -- other dtypes, subclasses and objects with
// __array_function__, scalars, lists, 0-d operands, shapes that do not fit, an `out` NumPy
// would refuse or that overlaps an operand, other keyword spellings -- goes to NumPy's original
// function with the very same arguments, so the result or the exception is NumPy's.
#include <pybind11/pybind11.h>

#include <atomic>
#include <cfenv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <type_traits>
#include <vector>

#include "../fastgemm/threading.hpp"
#include "raw_call.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;
using namespace fastgemm::bindings;

namespace {

enum Func { kDot, kInner, kFuncs };
enum Who { kFastgemm, kNumpy };

// NumPy's functions (strong references), as fastgemm._numpy_funcs found them before the switch.
PyObject* g_original[kFuncs] = {nullptr, nullptr};
std::atomic<uint64_t> g_calls[kFuncs][2];

// The floating-point exceptions NumPy reports (np.errstate); inexact is not one of them.
constexpr int kFpFlags = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID;

PyObject* hand_back(Func f, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    g_calls[f][kNumpy].fetch_add(1, std::memory_order_relaxed);
    PyObject* original = g_original[f];
    if (original == nullptr) {
        PyErr_SetString(PyExc_RuntimeError, "fastgemm: NumPy's dot / inner were not recorded (set_numpy_originals)");
        return nullptr;
    }
    Py_INCREF(original);  // a concurrent set_numpy_originals may drop the module's reference
    PyObject* r = PyObject_Vectorcall(original, args, size_t(nargs), kwnames);
    Py_DECREF(original);
    return r;
}

// Owns one reference (the operands cast or copied on the way).
struct Ref {
    PyObject* p = nullptr;
    Ref() = default;
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    ~Ref() { Py_XDECREF(p); }
    PyArrayObject* array() const { return reinterpret_cast<PyArrayObject*>(p); }
};

// The leading axes [0, nd - 1) of x stepped as one axis of `count` items, `stride` elements
// apart; false when one stride cannot step them (the caller copies x). Axes of length 1 step
// nothing, so their strides do not matter.
bool merged_rows(PyArrayObject* x, npy_intp e, int64_t& count, int64_t& stride) {
    count = 1;
    stride = PyArray_DIM(x, PyArray_NDIM(x) - 1);  // any stride serves one row
    for (int d = PyArray_NDIM(x) - 2; d >= 0; --d) {
        const int64_t n = PyArray_DIM(x, d), s = PyArray_STRIDE(x, d) / e;
        if (n == 1) continue;
        if (count == 1) stride = s;
        else if (s != stride * count) return false;
        count *= n;
    }
    return true;
}

// x, or a C-ordered copy of it (held in `copy`) when its leading axes do not merge.
PyArrayObject* rows_of(PyArrayObject* x, npy_intp e, Ref& copy, int64_t& count, int64_t& stride) {
    if (merged_rows(x, e, count, stride)) return x;
    copy.p = PyArray_NewCopy(x, NPY_CORDER);
    if (copy.p == nullptr) return nullptr;
    merged_rows(copy.array(), e, count, stride);
    return copy.array();
}

// True when every element is finite (no exponent field all ones); integer compares vectorise.
template <typename T>
bool all_finite(const T* x, int64_t n) {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    constexpr Bits exponent = sizeof(T) == 4 ? Bits(0x7f800000u) : Bits(0x7ff0000000000000ull);
    Bits bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        Bits u;
        std::memcpy(&u, x + i, sizeof u);
        bad |= Bits((u & exponent) == exponent);
    }
    return bad == 0;
}

// One call's product: C (the result, C-ordered) = A @ B over `axes`.
template <typename T>
struct Product {
    View<const T> a, b;
    View<T> c;
    std::vector<BatchAxis> axes;
};

// np.errstate ignores all four exceptions, so NumPy would report none whatever its product
// raised. Asks np.geterr(): only products that raised a flag or left a NaN / Inf get here.
bool errstate_ignores_all() {
    PyObject* numpy = PyImport_ImportModule("numpy");
    PyObject* err = numpy ? PyObject_CallMethod(numpy, "geterr", nullptr) : nullptr;
    Py_XDECREF(numpy);
    bool all_ignored = err != nullptr && PyDict_Check(err);
    for (const char* what : {"divide", "over", "under", "invalid"}) {
        if (!all_ignored) break;
        PyObject* mode = PyDict_GetItemString(err, what);
        all_ignored = mode && PyUnicode_Check(mode) && PyUnicode_CompareWithASCIIString(mode, "ignore") == 0;
    }
    Py_XDECREF(err);
    PyErr_Clear();  // in doubt, NumPy computes the call and reports as it does
    return all_ignored;
}

// Computes p into its C. False when NumPy must compute the call instead, so that its
// floating-point reports are NumPy's: this thread saw an exception flag, or the product may
// have run on other threads (whose flags never reach this one) and left a NaN or Inf, and
// np.errstate does not ignore every exception.
template <typename T>
bool compute(const Product<T>& p, int64_t size) {
    if (std::fetestexcept(kFpFlags)) std::feclearexcept(kFpFlags);  // as NumPy's dot does first
    run<T>(T(1), p.a, p.b, T(0), p.c, p.axes);
    if (!std::fetestexcept(kFpFlags)) {
        int64_t rows = p.c.rows;
        for (const BatchAxis& ax : p.axes) rows *= ax.size;
        if (!may_run_threaded(rows, p.c.cols, p.a.cols) || all_finite(p.c.data, size)) return true;
    }
    return errstate_ignores_all();
}

// The operands of a call fastgemm may compute: exact native ndarrays of float32 / float64 as
// given (`given_*`), and as read (`a`, `b`): both of one type T (a mixed pair: float64, the
// float32 one converted exactly, as NumPy does), aligned and strided in whole elements (an
// operand that is not is copied first, as NumPy's dot copies it).
struct Operands {
    PyArrayObject *given_a = nullptr, *given_b = nullptr;
    PyArrayObject *a = nullptr, *b = nullptr;
    bool f32 = false;
    Ref hold_a, hold_b;
};

// The NumPy type number of an exact native float32 / float64 ndarray, else -1.
int float_type(PyObject* o) {
    if (!PyArray_CheckExact(o)) return -1;
    auto* x = reinterpret_cast<PyArrayObject*>(o);
    const int t = PyArray_TYPE(x);
    return (t == NPY_FLOAT || t == NPY_DOUBLE) && PyArray_ISNOTSWAPPED(x) ? t : -1;
}

// x read as T: itself, or a C-ordered converted / aligned copy held in `hold`.
template <typename T>
PyArrayObject* read_as(PyArrayObject* x, Ref& hold) {
    if (PyArray_TYPE(x) != type_num<T>()) hold.p = PyArray_Cast(x, type_num<T>());
    else if (usable<T>(reinterpret_cast<PyObject*>(x))) return x;
    else hold.p = PyArray_NewCopy(x, NPY_CORDER);
    return hold.array();
}

bool float_operands(PyObject* x, PyObject* y, Operands& ops) {
    const int tx = float_type(x), ty = float_type(y);
    if (tx < 0 || ty < 0) return false;
    ops.given_a = reinterpret_cast<PyArrayObject*>(x);
    ops.given_b = reinterpret_cast<PyArrayObject*>(y);
    ops.f32 = tx == NPY_FLOAT && ty == NPY_FLOAT;
    if (ops.f32) {
        ops.a = read_as<float>(ops.given_a, ops.hold_a);
        ops.b = read_as<float>(ops.given_b, ops.hold_b);
    } else {
        ops.a = read_as<double>(ops.given_a, ops.hold_a);
        ops.b = read_as<double>(ops.given_b, ops.hold_b);
    }
    if (ops.a && ops.b) return true;
    PyErr_Clear();  // out of memory: NumPy's call will say so
    return false;
}

// The result array: a new C-ordered one, or `out` when NumPy's dot would write into it
// directly (an exact ndarray of the result's dtype and shape, C-contiguous, aligned,
// writeable, native) and it does not overlap an operand as given (NumPy, recomputing a flagged
// call, must find them intact). nullptr with no error set: hand back.
template <typename T>
PyArrayObject* result_array(int nd, const npy_intp* dims, PyObject* out, const Operands& ops) {
    if (out == nullptr || out == Py_None)
        return reinterpret_cast<PyArrayObject*>(PyArray_EMPTY(nd, const_cast<npy_intp*>(dims), type_num<T>(), 0));
    PyArrayObject* c = usable<T>(out);
    if (c == nullptr || PyArray_NDIM(c) != nd || !PyArray_ISCARRAY(c) || bounds_overlap(c, ops.given_a) ||
        bounds_overlap(c, ops.given_b))
        return nullptr;
    for (int d = 0; d < nd; ++d)
        if (PyArray_DIM(c, d) != dims[d]) return nullptr;
    Py_INCREF(c);
    return c;
}

// NumPy's value for a result array: the array, or its scalar when it is 0-d (also for a 0-d
// `out`, as NumPy's dot returns). Steals the reference.
PyObject* returned(PyArrayObject* c) { return PyArray_Return(c); }

// The result's shape for a product of a and b over a's last axis and b's axis `bk`: a's other
// axes, then b's. False (hand the call back) for a 0-d operand (NumPy multiplies), axes that
// do not fit (NumPy's error), too many axes, or a long vector . vector product.
bool result_shape(PyArrayObject* a, PyArrayObject* b, int bk, npy_intp e, int& nd, npy_intp* dims) {
    const int na = PyArray_NDIM(a), nb = PyArray_NDIM(b);
    if (na == 0 || nb == 0 || PyArray_DIM(a, na - 1) != PyArray_DIM(b, bk)) return false;
    nd = na + nb - 2;
    if (nd > NPY_MAXDIMS || (nd == 0 && long_vector_dot(PyArray_DIM(a, 0), e))) return false;
    int d = 0;
    for (int i = 0; i < na - 1; ++i) dims[d++] = PyArray_DIM(a, i);
    for (int j = 0; j < nb; ++j)
        if (j != bk) dims[d++] = PyArray_DIM(b, j);
    return true;
}

// The call's value once C holds p's product, or NotImplemented (NumPy computes the call).
template <typename T>
PyObject* finish(const Product<T>& p, PyArrayObject* c, int64_t size) {
    try {
        if (compute(p, size)) return returned(c);
    } catch (const std::exception&) {
    }
    Py_DECREF(c);
    return not_implemented();
}

// dot(a, b[, out]) on T operands. NotImplemented: hand the call back to NumPy.
template <typename T>
PyObject* dot_typed(const Operands& ops, PyObject* out) {
    PyArrayObject *a = ops.a, *b = ops.b;
    const int nb = PyArray_NDIM(b);
    const npy_intp e = sizeof(T);
    // dot(a, b)[i..., j..., m] = sum_k a[i..., k] * b[j..., k, m]
    int nd;
    npy_intp dims[NPY_MAXDIMS];
    if (!result_shape(a, b, nb == 1 ? 0 : nb - 2, e, nd, dims)) return not_implemented();
    PyArrayObject* c = result_array<T>(nd, dims, out, ops);
    if (c == nullptr) return PyErr_Occurred() ? nullptr : not_implemented();
    const int64_t size = PyArray_SIZE(c);
    if (size == 0) return returned(c);
    Ref a_copy;
    int64_t p, a_rs;
    a = rows_of(a, e, a_copy, p, a_rs);
    if (a == nullptr) return Py_DECREF(c), nullptr;
    const int64_t k = PyArray_DIM(a, PyArray_NDIM(a) - 1), m = nb > 1 ? PyArray_DIM(b, nb - 1) : 1;
    // The result as (p, q, m) C-ordered: stack item j of b writes the (p, m) matrix c[:, j, :].
    int64_t q = 1;
    Product<T> prod;
    for (int j = nb - 3; j >= 0; --j) {
        prod.axes.insert(prod.axes.begin(), {PyArray_DIM(b, j), 0, PyArray_STRIDE(b, j) / e, q * m});
        q *= PyArray_DIM(b, j);
    }
    prod.a = {static_cast<const T*>(PyArray_DATA(a)), p, k, a_rs, PyArray_STRIDE(a, PyArray_NDIM(a) - 1) / e};
    // A 1-D b is a (k, 1) column; its column stride is free, and a Fortran-ordered one (k, not
    // 1) sends the core's single-row products to its vector dot form instead of walking k rows
    // of a 1-wide matrix.
    if (nb == 1) {
        prod.b = {static_cast<const T*>(PyArray_DATA(b)), k, 1, PyArray_STRIDE(b, 0) / e, k};
    } else {
        prod.b = matrix<const T>(b, false);
    }
    prod.c = {static_cast<T*>(PyArray_DATA(c)), p, m, q * m, 1};
    return finish(prod, c, size);
}

// inner(a, b) on T operands: a (p, k) times b (q, k) transposed. NotImplemented: hand back.
template <typename T>
PyObject* inner_typed(const Operands& ops) {
    PyArrayObject *a = ops.a, *b = ops.b;
    const npy_intp e = sizeof(T);
    int nd;
    npy_intp dims[NPY_MAXDIMS];
    if (!result_shape(a, b, PyArray_NDIM(b) - 1, e, nd, dims)) return not_implemented();
    PyArrayObject* c = result_array<T>(nd, dims, nullptr, ops);
    if (c == nullptr) return nullptr;
    const int64_t size = PyArray_SIZE(c);
    if (size == 0) return returned(c);
    Ref a_copy, b_copy;
    int64_t p, a_rs, q, b_rs;
    a = rows_of(a, e, a_copy, p, a_rs);
    if (a != nullptr) b = rows_of(b, e, b_copy, q, b_rs);
    if (a == nullptr || b == nullptr) return Py_DECREF(c), nullptr;
    const int na = PyArray_NDIM(a), nb = PyArray_NDIM(b);
    const int64_t k = PyArray_DIM(a, na - 1);
    Product<T> prod;
    prod.a = {static_cast<const T*>(PyArray_DATA(a)), p, k, a_rs, PyArray_STRIDE(a, na - 1) / e};
    prod.b = {static_cast<const T*>(PyArray_DATA(b)), k, q, PyArray_STRIDE(b, nb - 1) / e, b_rs};
    prod.c = {static_cast<T*>(PyArray_DATA(c)), p, q, q, 1};
    return finish(prod, c, size);
}

// The call's result, or NotImplemented / nullptr + error from the typed path.
PyObject* settle(Func f, PyObject* r, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    if (r != Py_NotImplemented) {
        if (r != nullptr) g_calls[f][kFastgemm].fetch_add(1, std::memory_order_relaxed);
        return r;
    }
    Py_DECREF(r);
    return hand_back(f, args, nargs, kwnames);
}

bool is_out(PyObject* name) { return PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "out") == 0; }

// dot(a, b, out=None), as np.dot.
PyObject* numpy_dot(PyObject*, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject* out = nullptr;
    if (nargs == 3 && nkw == 0) out = args[2];
    else if (nargs == 2 && nkw == 1 && is_out(PyTuple_GET_ITEM(kwnames, 0))) out = args[2];
    else if (nargs != 2 || nkw != 0) return hand_back(kDot, args, nargs, kwnames);
    Operands ops;
    if (!float_operands(args[0], args[1], ops)) return hand_back(kDot, args, nargs, kwnames);
    PyObject* r = ops.f32 ? dot_typed<float>(ops, out) : dot_typed<double>(ops, out);
    return settle(kDot, r, args, nargs, kwnames);
}

// inner(a, b, /), as np.inner.
PyObject* numpy_inner(PyObject*, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Operands ops;
    if (nargs != 2 || kwnames != nullptr || !float_operands(args[0], args[1], ops))
        return hand_back(kInner, args, nargs, kwnames);
    PyObject* r = ops.f32 ? inner_typed<float>(ops) : inner_typed<double>(ops);
    return settle(kInner, r, args, nargs, kwnames);
}

// The type of numpy_dot and numpy_inner, laid out as NumPy's _ArrayFunctionDispatcher (the
// type of np.dot): called through vectorcall, with a __dict__ (fastgemm._numpy_funcs copies
// NumPy's __name__, __doc__, __signature__ into it), bound like a function when read from a
// class, pickled by qualified name.
struct Function {
    PyObject_HEAD vectorcallfunc vectorcall;
    PyObject* dict;
};

void function_dealloc(PyObject* self) {
    Py_CLEAR(reinterpret_cast<Function*>(self)->dict);
    Py_TYPE(self)->tp_free(self);
}

PyObject* function_get(PyObject* self, PyObject* obj, PyObject*) {
    if (obj == nullptr) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

PyObject* function_repr(PyObject* self) {
    PyObject* name = PyObject_GetAttrString(self, "__name__");
    if (name == nullptr) return nullptr;
    PyObject* r = PyUnicode_FromFormat("<function %S at %p>", name, self);
    Py_DECREF(name);
    return r;
}

PyObject* function_reduce(PyObject* self, PyObject*) { return PyObject_GetAttrString(self, "__qualname__"); }

PyMethodDef kFunctionMethods[] = {{"__reduce__", function_reduce, METH_NOARGS, nullptr},
                                  {nullptr, nullptr, 0, nullptr}};
PyGetSetDef kFunctionGetSet[] = {{"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
                                 {nullptr, nullptr, nullptr, nullptr, nullptr}};
PyTypeObject g_function_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* new_function(vectorcallfunc call) {
    auto* f = reinterpret_cast<Function*>(g_function_type.tp_alloc(&g_function_type, 0));
    if (f == nullptr) throw py::error_already_set();
    f->vectorcall = call;
    return reinterpret_cast<PyObject*>(f);
}

void set_originals(py::object dot, py::object inner) {
    PyObject* given[kFuncs] = {dot.ptr(), inner.ptr()};
    for (PyObject* f : given)
        if (!PyCallable_Check(f)) throw py::type_error("set_numpy_originals: NumPy's functions must be callable");
    for (int f = 0; f < kFuncs; ++f) {
        Py_INCREF(given[f]);
        Py_XSETREF(g_original[f], given[f]);
    }
}

}  // namespace

void register_numpy_dot(py::module_& m) {
    if (_import_array() < 0) throw py::error_already_set();
    PyTypeObject& t = g_function_type;
    t.tp_name = "fastgemm._core.NumpyFunction";
    t.tp_basicsize = sizeof(Function);
    t.tp_dictoffset = offsetof(Function, dict);
    t.tp_vectorcall_offset = offsetof(Function, vectorcall);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
    t.tp_call = PyVectorcall_Call;
    t.tp_dealloc = function_dealloc;
    t.tp_descr_get = function_get;
    t.tp_repr = function_repr;
    t.tp_methods = kFunctionMethods;
    t.tp_getset = kFunctionGetSet;
    t.tp_doc = "np.dot / np.inner on fastgemm (fastgemm._numpy_funcs)";
    if (PyType_Ready(&t) < 0) throw py::error_already_set();
    m.add_object("numpy_dot", py::reinterpret_steal<py::object>(new_function(numpy_dot)));
    m.add_object("numpy_inner", py::reinterpret_steal<py::object>(new_function(numpy_inner)));
    m.def("set_numpy_originals", &set_originals, py::arg("dot"), py::arg("inner"),
          "Record NumPy's np.dot and np.inner: numpy_dot / numpy_inner hand them every call they do not compute.");
    m.def(
        "numpy_dot_calls",
        [] {
            py::dict d;
            const char* names[kFuncs] = {"dot", "inner"};
            for (int f = 0; f < kFuncs; ++f)
                d[names[f]] = py::dict(py::arg("fastgemm") = g_calls[f][kFastgemm].load(),
                                       py::arg("numpy") = g_calls[f][kNumpy].load());
            return d;
        },
        "Calls of numpy_dot / numpy_inner so far: computed on fastgemm / handed to NumPy.");
}
