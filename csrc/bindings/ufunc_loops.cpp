// Swaps NumPy's float32 / float64 gufunc inner loops of matmul (and NumPy 2's vecdot, matvec
// and vecmat) for fastgemm's and back. PyUFunc_ReplaceLoopBySignature swaps the function
// pointer NumPy looks up on every call, so np.matmul, `@`, `@=`, np.linalg.matmul, np.vecdot,
// np.linalg.vecdot, np.matvec and np.vecmat all reach these loops.
#include <pybind11/pybind11.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "../fastgemm/batched.hpp"
#include "../fastgemm/gemm.hpp"
#include "gufunc_views.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;
using namespace fastgemm::bindings;

namespace {

// The matmul loop takes every product: since the per-product cost went into the kernels
// (stacks in one kernel call, no per-call setup) it beats NumPy's loop at every size. The
// vector gufuncs keep NumPy's loop below this many multiply-adds an item, where NumPy's loop
// measured faster; see docs/DESIGN.md, "NumPy loop threshold". Tests lower it to 0 so every
// product takes fastgemm's path.
constexpr int64_t kDefaultMinFlops = int64_t(64) * 64 * 64;
std::atomic<int64_t> g_min_flops{kDefaultMinFlops};

// The gufuncs whose float32 / float64 loops are replaced, with the core signature each loop
// is written for: a NumPy whose ufunc has another signature is refused, not guessed at.
enum Op { kMatmul, kVecdot, kMatvec, kVecmat, kOps };
constexpr const char* kNames[kOps] = {"matmul", "vecdot", "matvec", "vecmat"};
constexpr const char* kSignatures[kOps] = {"(n?,k),(k,m?)->(n?,m?)", "(n),(n)->()", "(m,n),(n)->(m)", "(n),(n,m)->(m)"};

template <typename T, int O>
struct Slot {
    static constexpr int type_num = sizeof(T) == 4 ? NPY_FLOAT : NPY_DOUBLE;
    // NumPy's loop, kept from the first replacement; never cleared, so a call already inside
    // our loop while another thread restores still has somewhere to go.
    static std::atomic<PyUFuncGenericFunction> original;
    static bool replaced;  // guarded by the GIL
};
template <typename T, int O>
std::atomic<PyUFuncGenericFunction> Slot<T, O>::original{nullptr};
template <typename T, int O>
bool Slot<T, O>::replaced = false;

std::atomic<uint64_t> g_ours[kOps], g_numpys[kOps];

// dims [batch, core dims in order of first appearance], steps [sA, sB, sC, core steps of A,
// B, C in signature order], as NumPy hands them to a gufunc loop.
template <int O>
Geometry geometry(npy_intp const* d, npy_intp const* s) {
    if constexpr (O == kMatmul) return matmul_geometry(d, s);
    else if constexpr (O == kVecdot)  // (n),(n)->(): dims [n]; a row times a column
        return {1, d[1], 1, 0, s[3], s[4], 0, 0, 0};
    else if constexpr (O == kMatvec)  // (m,n),(n)->(m): dims [m, n]
        return {d[1], d[2], 1, s[3], s[4], s[5], 0, s[6], 0};
    else  // kVecmat, (n),(n,m)->(m): dims [n, m]; vecmat conjugates the vector, a no-op for reals
        return {1, d[1], d[2], 0, s[3], s[4], s[5], 0, s[6]};
}

// The gufunc loop for op O. It may run without the GIL, so it touches no Python object;
// anything it cannot take (odd strides, unaligned data, tiny products, an `out` whose items
// overlap themselves or each other, an allocation failure) goes to NumPy's loop, which always
// fully writes C, so the result is NumPy's by definition.
template <typename T, int O>
void gufunc_loop(char** args, npy_intp const* dims, npy_intp const* steps, void* data) {
    const PyUFuncGenericFunction numpys = Slot<T, O>::original.load(std::memory_order_acquire);
    const npy_intp batch = dims[0];
    const Geometry g = geometry<O>(dims, steps);
    // A long vector . vector product goes to NumPy's loop (its BLAS dot), as np.dot's does.
    const bool long_dot = batch == 1 && g.n == 1 && g.m == 1 && long_vector_dot(g.k, sizeof(T));
    const bool ok =
        O == kMatmul ? !long_dot
                     : double(g.n) * double(g.k) * double(g.m) >= double(g_min_flops.load(std::memory_order_relaxed));
    StackViews<T, T, T> v;
    if (ok && stack_views(args, batch, steps, g, v)) {
        try {
            if (batch == 1) {
                gemm<T>(T(1), v.a, v.b, T(0), v.c);  // refuses a C that overlaps itself
            } else {
                const std::vector<BatchAxis> axes{v.batch};
                if (!c_disjoint(v.c, axes)) throw std::invalid_argument("out overlaps itself");
                gemm_batched<T>(T(1), v.a, v.b, T(0), v.c, axes);
            }
            g_ours[O].fetch_add(1, std::memory_order_relaxed);
            return;
        } catch (...) {
        }
    }
    g_numpys[O].fetch_add(1, std::memory_order_relaxed);
    numpys(args, dims, steps, data);
}

void import_numpy_c_api() {
    static bool imported = false;
    if (!imported) {
        if (_import_array() < 0 || _import_umath() < 0) throw py::error_already_set();
        imported = true;
    }
}

int op_of(const std::string& name) {
    for (int o = 0; o < kOps; ++o)
        if (name == kNames[o]) return o;
    throw py::value_error("fastgemm replaces the loops of matmul, vecdot, matvec and vecmat, not " + name);
}

// numpy.<name> as a ufunc, or nullptr when this NumPy has none (vecdot, matvec and vecmat are
// NumPy 2.x) or it is not the gufunc the loops are written for.
PyUFuncObject* numpy_ufunc(int o) {
    import_numpy_c_api();
    py::object f = py::module_::import("numpy").attr("__dict__").attr("get")(kNames[o]);
    if (f.is_none() || !PyObject_TypeCheck(f.ptr(), &PyUFunc_Type)) return nullptr;
    auto* u = reinterpret_cast<PyUFuncObject*>(f.ptr());  // numpy keeps it alive
    if (u->nin != 2 || u->nout != 1 || u->core_signature == nullptr) return nullptr;
    std::string sig(u->core_signature);
    sig.erase(std::remove(sig.begin(), sig.end(), ' '), sig.end());
    return sig == kSignatures[o] ? u : nullptr;
}

PyUFuncObject* required_ufunc(int o) {
    PyUFuncObject* u = numpy_ufunc(o);
    if (u == nullptr)
        throw py::type_error(std::string("numpy.") + kNames[o] + " is not a ufunc with signature " + kSignatures[o] +
                             " here");
    return u;
}

template <typename T, int O>
void swap_in(PyUFuncObject* ufunc, PyUFuncGenericFunction f, PyUFuncGenericFunction* previous) {
    int sig[3] = {Slot<T, O>::type_num, Slot<T, O>::type_num, Slot<T, O>::type_num};
    if (PyUFunc_ReplaceLoopBySignature(ufunc, f, sig, previous) < 0)
        throw py::value_error(std::string("numpy.") + kNames[O] + " has no loop for this type; cannot replace it");
}

template <typename T, int O>
void replace(PyUFuncObject* ufunc) {
    if (Slot<T, O>::replaced) return;
    PyUFuncGenericFunction previous = nullptr;
    swap_in<T, O>(ufunc, &gufunc_loop<T, O>, &previous);
    // Only the first replacement sees NumPy's loop; later ones would see a restored copy of it.
    PyUFuncGenericFunction expected = nullptr;
    Slot<T, O>::original.compare_exchange_strong(expected, previous, std::memory_order_release);
    Slot<T, O>::replaced = true;
}

template <typename T, int O>
void restore(PyUFuncObject* ufunc) {
    if (!Slot<T, O>::replaced) return;
    PyUFuncGenericFunction previous = nullptr;
    swap_in<T, O>(ufunc, Slot<T, O>::original.load(std::memory_order_acquire), &previous);
    Slot<T, O>::replaced = false;
    if (previous != &gufunc_loop<T, O>)
        throw std::runtime_error(std::string("numpy.") + kNames[O] +
                                 "'s loop was changed by someone else while fastgemm's was in place");
}

template <int O>
void replace_both() {
    PyUFuncObject* u = required_ufunc(O);
    replace<float, O>(u);
    try {
        replace<double, O>(u);
    } catch (...) {
        restore<float, O>(u);
        throw;
    }
}

template <int O>
void restore_both() {
    if (!Slot<float, O>::replaced && !Slot<double, O>::replaced) return;
    PyUFuncObject* u = required_ufunc(O);
    restore<float, O>(u);
    restore<double, O>(u);
}

template <int O>
bool replaced_both() {
    return Slot<float, O>::replaced && Slot<double, O>::replaced;
}

// Run f<O>() for the op named at run time.
template <typename R, template <int> class F>
R for_op(int o) {
    switch (o) {
        case kMatmul: return F<kMatmul>::run();
        case kVecdot: return F<kVecdot>::run();
        case kMatvec: return F<kMatvec>::run();
        default: return F<kVecmat>::run();
    }
}
template <int O>
struct Replace {
    static void run() { replace_both<O>(); }
};
template <int O>
struct Restore {
    static void run() { restore_both<O>(); }
};
template <int O>
struct Replaced {
    static bool run() { return replaced_both<O>(); }
};

py::dict calls(int o) {
    return py::dict(py::arg("fastgemm") = g_ours[o].load(), py::arg("numpy") = g_numpys[o].load());
}

}  // namespace

void register_ufunc_loops(py::module_& m) {
    m.def("replace_matmul_loops", [] { replace_both<kMatmul>(); });
    m.def("restore_matmul_loops", [] { restore_both<kMatmul>(); });
    m.def("matmul_loops_replaced", [] { return replaced_both<kMatmul>(); });
    m.def("matmul_loop_calls", [] { return calls(kMatmul); });
    // The same for any of matmul, vecdot, matvec, vecmat by name.
    m.def(
        "replaceable_ufuncs",
        [] {
            py::list names;
            for (int o = 0; o < kOps; ++o)
                if (numpy_ufunc(o) != nullptr) names.append(kNames[o]);
            return names;
        },
        "The gufuncs of this NumPy whose float32 / float64 loops fastgemm can replace.");
    m.def("replace_ufunc_loops", [](const std::string& name) { for_op<void, Replace>(op_of(name)); }, py::arg("name"));
    m.def("restore_ufunc_loops", [](const std::string& name) { for_op<void, Restore>(op_of(name)); }, py::arg("name"));
    m.def(
        "ufunc_loops_replaced", [](const std::string& name) { return for_op<bool, Replaced>(op_of(name)); },
        py::arg("name"));
    m.def("ufunc_loop_calls", [](const std::string& name) { return calls(op_of(name)); }, py::arg("name"));
    m.def("switch_min_flops", [] { return g_min_flops.load(); });
    m.def(
        "set_switch_min_flops",
        [](int64_t n) {
            if (n < 0) throw py::value_error("the smallest product for fastgemm's matmul loop must be >= 0");
            g_min_flops.store(n);
        },
        py::arg("n"));
}
