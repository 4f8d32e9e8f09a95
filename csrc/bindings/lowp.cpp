// fastgemm._core's low-precision part: bfloat16 / float16 products (gemm_lowp, its batched
// form, the float32 -> float16 rounding) and the switch's float16 matmul loop (e,e->e), which
// replaces NumPy's the way ufunc_loops.cpp replaces the float32 / float64 ones.
// bfloat16 (ml_dtypes) is recognised by its dtype's name and size, never by importing
// ml_dtypes: without it no bfloat16 array exists. See docs/DESIGN.md, "Low-precision products".
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../fastgemm/dispatch.hpp"
#include "../fastgemm/gemm_lowp.hpp"
#include "../fastgemm/peak.hpp"
#include "convert.hpp"
#include "raw_call.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;

namespace {

enum class Lowp { bf16, f16, other };

// The type number NumPy gave bfloat16 when ml_dtypes registered it (a user type number, fixed
// for the process), once a dtype has been recognised by name: reading the name costs ~1 us.
int g_bf16_num = -1;  // guarded by the GIL

Lowp kind_of(const py::array& x) {
    const py::dtype dt = x.dtype();
    if (dt.itemsize() != 2) return Lowp::other;
    constexpr char native = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '<' : '>';
    const char order = dt.byteorder();
    if (order != '=' && order != '|' && order != native) return Lowp::other;
    const int num = dt.num();
    if (num == NPY_HALF) return Lowp::f16;
    if (num == g_bf16_num) return Lowp::bf16;
    if (num >= NPY_USERDEF && dt.kind() == 'V' && std::string(py::str(dt.attr("name"))) == "bfloat16") {
        g_bf16_num = num;
        return Lowp::bf16;
    }
    return Lowp::other;
}

template <typename S>
View<const S> lowp_view(const py::array& x, const std::string& what) {
    if (x.ndim() < 2) throw py::value_error(what + ": expected at least 2 dimensions");
    const py::ssize_t r = x.ndim() - 2, c = x.ndim() - 1;
    if (x.size() > 0 && reinterpret_cast<uintptr_t>(x.data()) % 2) throw py::value_error(what + ": misaligned data");
    return {static_cast<const S*>(x.data()), x.shape(r), x.shape(c), bindings::element_stride<S>(x, r, what),
            bindings::element_stride<S>(x, c, what)};
}

Lowp pair_kind(const py::array& a, const py::array& b, const char* fn) {
    const Lowp ka = kind_of(a), kb = kind_of(b);
    if (ka == Lowp::other || kb == Lowp::other || ka != kb)
        throw py::type_error(std::string(fn) +
                             ": a and b must both be bfloat16 or both float16 (native byte order), got " +
                             std::string(py::str(a.dtype())) + " and " + std::string(py::str(b.dtype())));
    return ka;
}

template <typename S>
void gemm_lowp_typed(const py::array& a, const py::array& b, py::array& c, float alpha, float beta,
                     const std::optional<py::array>& bias, int activation) {
    const View<const S> va = lowp_view<S>(a, "a"), vb = lowp_view<S>(b, "b");
    const View<float> vc = bindings::matrix_view<float>(c, "c");
    const Epilogue<float> ep = bindings::epilogue_of<float>(bias, activation, vc);
    py::gil_scoped_release release;
    gemm_lowp<S>(alpha, va, vb, beta, vc, ep);
}

void gemm_lowp_py(const py::array& a, const py::array& b, py::array& c, float alpha, float beta,
                  const std::optional<py::array>& bias, int activation) {
    bindings::require_2d(a, "a");
    bindings::require_2d(b, "b");
    bindings::require_2d(c, "c");
    if (pair_kind(a, b, "gemm_lowp") == Lowp::bf16) gemm_lowp_typed<bfloat16_t>(a, b, c, alpha, beta, bias, activation);
    else gemm_lowp_typed<float16_t>(a, b, c, alpha, beta, bias, activation);
}

template <typename S>
void batched_typed(const py::array& a, const py::array& b, py::array& c, float alpha, float beta) {
    const View<const S> va = lowp_view<S>(a, "gemm_lowp_batched: a"), vb = lowp_view<S>(b, "gemm_lowp_batched: b");
    const View<float> vc = bindings::matrix_view<float>(c, "gemm_lowp_batched: c");
    if (c.size() > 0 && reinterpret_cast<uintptr_t>(c.data()) % alignof(float))
        throw py::value_error("gemm_lowp_batched: operands must be aligned");
    const std::vector<BatchAxis> axes = bindings::batch_axes<S, S, float>(a, b, c, "gemm_lowp_batched");
    py::gil_scoped_release release;
    gemm_lowp_batched<S>(alpha, va, vb, beta, vc, axes);
}

void gemm_lowp_batched_py(const py::array& a, const py::array& b, py::array& c, float alpha, float beta) {
    bindings::require_same_batch(a, b, c, "gemm_lowp_batched");
    if (pair_kind(a, b, "gemm_lowp_batched") == Lowp::bf16) batched_typed<bfloat16_t>(a, b, c, alpha, beta);
    else batched_typed<float16_t>(a, b, c, alpha, beta);
}

// dst (float16) = src (float32) rounded once; both C-contiguous, same number of elements.
void narrow_f16_py(const py::array& src, py::array& dst) {
    bindings::check_dtype<float>(src, "narrow_f16: src");
    if (kind_of(dst) != Lowp::f16) throw py::type_error("narrow_f16: dst must be a native float16 array");
    if (!(src.flags() & py::array::c_style) || !(dst.flags() & py::array::c_style) || src.size() != dst.size())
        throw py::value_error("narrow_f16: src and dst must be C-contiguous and of the same size");
    if (!dst.writeable()) throw py::value_error("narrow_f16: dst is read-only");
    const int64_t n = src.size();
    if (n == 0) return;
    const View<const float> vs{static_cast<const float*>(src.data()), 1, n, n, 1};
    const View<float16_t> vd{static_cast<float16_t*>(dst.mutable_data()), 1, n, n, 1};
    py::gil_scoped_release release;
    narrow_to_f16(vs, vd);
}

// --- fastgemm.matmul's per-call path ---------------------------------------------------------

// An exact 2-D ndarray of 2-byte elements, native byte order, aligned, as a View of S.
template <typename S>
bool matrix_2byte(PyObject* o, int type_num, View<const S>& v) {
    PyArrayObject* x = bindings::usable(o, type_num, 2);
    if (x == nullptr || PyArray_NDIM(x) != 2) return false;
    v = bindings::matrix<const S>(x, false);
    return true;
}

// np.matmul(a, b) for 2-D operands of one 2-byte type, out None: float32 accumulators rounded
// once into a new float16 result, or the new float32 result of bfloat16 (NumPy's dtypes).
template <typename S>
PyObject* matmul_2d(PyObject* a_obj, PyObject* b_obj, int type_num) {
    View<const S> a, b;
    if (!matrix_2byte(a_obj, type_num, a) || !matrix_2byte(b_obj, type_num, b) || a.cols != b.rows)
        Py_RETURN_NOTIMPLEMENTED;
    npy_intp shape[2] = {a.rows, b.cols};
    PyObject* c = PyArray_EMPTY(2, shape, NPY_FLOAT, 0);
    if (!c) return nullptr;
    const View<float> vc{static_cast<float*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(c))), a.rows, b.cols, b.cols,
                         1};
    PyObject* r = c;
    if constexpr (std::is_same_v<S, float16_t>) {
        r = PyArray_EMPTY(2, shape, NPY_HALF, 0);
        if (!r) {
            Py_DECREF(c);
            return nullptr;
        }
    }
    auto compute = [&] {
        gemm_lowp<S>(1.0f, a, b, 0.0f, vc);  // k == 0: zeros
        if constexpr (std::is_same_v<S, float16_t>) {
            const View<float16_t> vr{static_cast<float16_t*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(r))), a.rows,
                                     b.cols, b.cols, 1};
            narrow_to_f16(View<const float>{vc.data, vc.rows, vc.cols, vc.rs, 1}, vr);
        }
    };
    try {
        bindings::release_gil_for(double(a.rows) * double(a.cols) * double(b.cols), compute);
    } catch (const std::exception&) {
        if (r != c) Py_DECREF(r);
        Py_DECREF(c);
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (r != c) Py_DECREF(c);
    return r;
}

// lowp_matmul_call(a, b, out): fastgemm.matmul's result for two 2-D arrays of one 2-byte float
// type and no out, in C (the Python path costs ~4 us a call), or NotImplemented for anything
// else. bfloat16 is taken once its type number is known (the first call through the Python
// path, lowp_view, learns it).
PyObject* lowp_matmul_call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 3 || args[2] != Py_None || !PyArray_CheckExact(args[0])) Py_RETURN_NOTIMPLEMENTED;
    const int t = PyArray_TYPE(reinterpret_cast<PyArrayObject*>(args[0]));
    if (t == NPY_HALF) return matmul_2d<float16_t>(args[0], args[1], t);
    if (t == g_bf16_num) return matmul_2d<bfloat16_t>(args[0], args[1], t);
    Py_RETURN_NOTIMPLEMENTED;
}

PyMethodDef kLowpCall = {"lowp_matmul_call",
                         reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&lowp_matmul_call)), METH_FASTCALL,
                         "lowp_matmul_call(a, b, out): fastgemm.matmul of 2-D bfloat16 / float16 arrays with out "
                         "None, or NotImplemented"};

// --- The switch's float16 loop ------------------------------------------------------------

// Below this many multiply-adds per product NumPy's float16 loop keeps the product (its
// fixed cost is lower for tiny ones); see docs/DESIGN.md, "Low-precision products". Tests
// lower it to 0.
constexpr int64_t kDefaultF16MinFlops = int64_t(8) * 8 * 8;
std::atomic<int64_t> g_f16_min_flops{kDefaultF16MinFlops};
std::atomic<PyUFuncGenericFunction> g_f16_original{nullptr};  // NumPy's, kept once seen
bool g_f16_replaced = false;                                  // guarded by the GIL
std::atomic<uint64_t> g_f16_ours{0}, g_f16_numpys{0};

// (n?,k),(k,m?)->(n?,m?) on float16: dims [batch, n, k, m], steps [sA, sB, sC, A_n, A_k, B_k,
// B_m, C_n, C_m] in bytes. The products accumulate in float32 into a temporary, then are
// rounded once to float16 into C. Anything it cannot take goes to NumPy's loop. No Python
// object is touched (it may run without the GIL).
void f16_matmul_loop(char** args, npy_intp const* dims, npy_intp const* steps, void* data) {
    const PyUFuncGenericFunction numpys = g_f16_original.load(std::memory_order_acquire);
    const npy_intp batch = dims[0], n = dims[1], k = dims[2], m = dims[3];
    bool ok = double(n) * double(k) * double(m) >= double(g_f16_min_flops.load(std::memory_order_relaxed));
    for (int i = 0; ok && i < 3; ++i) ok = reinterpret_cast<uintptr_t>(args[i]) % 2 == 0;
    for (int i = 0; ok && i < 9; ++i) ok = steps[i] % 2 == 0;
    if (ok) {
        try {
            const View<float16_t> c{reinterpret_cast<float16_t*>(args[2]), n, m, steps[7] / 2, steps[8] / 2};
            if (!c_disjoint(c, {{batch, 0, 0, steps[2] / 2}})) throw std::invalid_argument("out overlaps itself");
            // The float32 accumulators of up to kTmpFloats elements at a time (whole items), so a
            // big stack does not need a float32 copy of all of C at once.
            constexpr int64_t kTmpFloats = int64_t(1) << 22;
            const int64_t per = checked_mul(n, m), group = per >= kTmpFloats ? 1 : kTmpFloats / per;
            std::vector<float> tmp(size_t(checked_mul(std::min<int64_t>(group, batch), per)));
            for (int64_t i0 = 0; i0 < batch; i0 += group) {
                const int64_t items = std::min(group, batch - i0);
                gemm_lowp_batched<float16_t>(
                    1.0f,
                    {reinterpret_cast<const float16_t*>(args[0] + i0 * steps[0]), n, k, steps[3] / 2, steps[4] / 2},
                    {reinterpret_cast<const float16_t*>(args[1] + i0 * steps[1]), k, m, steps[5] / 2, steps[6] / 2},
                    0.0f, {tmp.data(), n, m, m, 1}, {{items, steps[0] / 2, steps[1] / 2, per}});
                for (int64_t i = 0; i < items; ++i)
                    narrow_to_f16({tmp.data() + i * per, n, m, m, 1},
                                  {c.data + (i0 + i) * (steps[2] / 2), n, m, c.rs, c.cs});
            }
            g_f16_ours.fetch_add(1, std::memory_order_relaxed);
            return;
        } catch (...) {  // NumPy's loop then writes every element of C itself
        }
    }
    g_f16_numpys.fetch_add(1, std::memory_order_relaxed);
    numpys(args, dims, steps, data);
}

PyUFuncObject* numpy_matmul() {
    static bool imported = false;
    if (!imported) {
        if (_import_array() < 0 || _import_umath() < 0) throw py::error_already_set();
        imported = true;
    }
    py::object f = py::module_::import("numpy").attr("matmul");
    if (!PyObject_TypeCheck(f.ptr(), &PyUFunc_Type)) throw py::type_error("numpy.matmul is not a ufunc here");
    return reinterpret_cast<PyUFuncObject*>(f.ptr());
}

void swap_f16(PyUFuncGenericFunction f, PyUFuncGenericFunction* previous) {
    // numpy_matmul() first: it imports NumPy's C API, which the macro below reads.
    PyUFuncObject* ufunc = numpy_matmul();
    int sig[3] = {NPY_HALF, NPY_HALF, NPY_HALF};
    if (PyUFunc_ReplaceLoopBySignature(ufunc, f, sig, previous) < 0)
        throw py::value_error("numpy.matmul has no float16 loop; cannot replace it");
}

void replace_f16() {
    if (g_f16_replaced) return;
    PyUFuncGenericFunction previous = nullptr;
    swap_f16(&f16_matmul_loop, &previous);
    PyUFuncGenericFunction expected = nullptr;  // only the first replacement sees NumPy's loop
    g_f16_original.compare_exchange_strong(expected, previous, std::memory_order_release);
    g_f16_replaced = true;
}

void restore_f16() {
    if (!g_f16_replaced) return;
    PyUFuncGenericFunction previous = nullptr;
    swap_f16(g_f16_original.load(std::memory_order_acquire), &previous);
    g_f16_replaced = false;
    if (previous != &f16_matmul_loop)
        throw std::runtime_error(
            "numpy.matmul's float16 loop was changed by someone else while fastgemm's was in place");
}

}  // namespace

void register_lowp(py::module_& m) {
    if (_import_array() < 0) throw py::error_already_set();
    bindings::add_function(m, kLowpCall);
    m.def("gemm_lowp", &gemm_lowp_py, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha"), py::arg("beta"),
          py::arg("bias") = py::none(), py::arg("activation") = 0);
    m.def("gemm_lowp_batched", &gemm_lowp_batched_py, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha"),
          py::arg("beta"));
    m.def("narrow_f16", &narrow_f16_py, py::arg("src"), py::arg("dst"));
    m.def(
        "lowp_info",
        [](const std::string& name) {
            py::object pairs = py::none();
            if (const PairKernels* pk = find_kernels(name, false).lowp.bf16_pairs) {
                const Blocking bs = pair_blocking(*pk);
                pairs = py::dict(py::arg("mr") = pk->mr, py::arg("nr") = pk->nr, py::arg("mc") = bs.mc,
                                 py::arg("kc") = bs.kc, py::arg("nc") = bs.nc);
            }
            return py::dict(py::arg("bf16_pairs") = pairs);
        },
        py::arg("name"));
    m.def(
        "bf16_pair_peak",
        [](const std::string& name, double seconds) {
            const PairKernels* pk = find_kernels(name, true).lowp.bf16_pairs;
            if (!pk) throw py::value_error("kernel '" + name + "' has no bfloat16 pair kernels");
            py::gil_scoped_release release;
            return loop_peak_gflops(pk->dot_loop, seconds);
        },
        py::arg("name"), py::arg("seconds"));
    m.def("replace_f16_matmul_loop", &replace_f16);
    m.def("restore_f16_matmul_loop", &restore_f16);
    m.def("f16_matmul_loop_replaced", [] { return g_f16_replaced; });
    m.def("f16_matmul_loop_calls",
          [] { return py::dict(py::arg("fastgemm") = g_f16_ours.load(), py::arg("numpy") = g_f16_numpys.load()); });
    m.def("f16_matmul_loop_min_flops", [] { return g_f16_min_flops.load(); });
    m.def(
        "set_f16_matmul_loop_min_flops",
        [](int64_t n) {
            if (n < 0) throw py::value_error("the smallest product for fastgemm's float16 loop must be >= 0");
            g_f16_min_flops.store(n);
        },
        py::arg("n"));
}
