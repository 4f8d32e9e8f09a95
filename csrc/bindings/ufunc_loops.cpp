// Swaps NumPy's float32 / float64 matmul gufunc inner loops for fastgemm's and back.
// PyUFunc_ReplaceLoopBySignature swaps the function pointer NumPy looks up on every call, so
// np.matmul, `@`, `@=` and np.linalg.matmul all reach these loops.
#include <pybind11/pybind11.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "../fastgemm/batched.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;

namespace {

// Below this many multiply-adds per product NumPy's own loop is faster: fastgemm's fixed cost
// per call outweighs what its kernels gain; see docs/DESIGN.md, "NumPy loop threshold". Tests lower it to 0 so every
// product takes fastgemm's path.
constexpr int64_t kDefaultMinFlops = int64_t(64) * 64 * 64;
std::atomic<int64_t> g_min_flops{kDefaultMinFlops};

template <typename T>
struct Slot {
    static constexpr int type_num = sizeof(T) == 4 ? NPY_FLOAT : NPY_DOUBLE;
    // NumPy's loop, kept from the first replacement; never cleared, so a call already inside
    // our loop while another thread restores still has somewhere to go.
    static std::atomic<PyUFuncGenericFunction> original;
    static bool replaced;  // guarded by the GIL
};
template <typename T>
std::atomic<PyUFuncGenericFunction> Slot<T>::original{nullptr};
template <typename T>
bool Slot<T>::replaced = false;

std::atomic<uint64_t> g_ours{0}, g_numpys{0};

bool fits(const void* p, npy_intp step, size_t size) {
    return reinterpret_cast<uintptr_t>(p) % size == 0 && step % npy_intp(size) == 0;
}

// The gufunc loop for (n?,k),(k,m?)->(n?,m?): dimensions [batch, n, k, m], steps
// [sA, sB, sC, A_n, A_k, B_k, B_m, C_n, C_m] in bytes. It may run without the GIL, so it
// touches no Python object; anything it cannot take (odd strides, unaligned data, tiny
// products, an `out` whose matrices overlap themselves or each other, an allocation failure)
// goes to NumPy's loop, which always fully writes C, so the result is NumPy's by definition.
template <typename T>
void matmul_loop(char** args, npy_intp const* dims, npy_intp const* steps, void* data) {
    const PyUFuncGenericFunction numpys = Slot<T>::original.load(std::memory_order_acquire);
    const npy_intp batch = dims[0], n = dims[1], k = dims[2], m = dims[3];
    constexpr size_t s = sizeof(T);
    bool ok = double(n) * double(k) * double(m) >= double(g_min_flops.load(std::memory_order_relaxed));
    for (int i = 0; ok && i < 3; ++i) ok = fits(args[i], steps[i], s);
    for (int i = 3; ok && i < 9; ++i) ok = steps[i] % npy_intp(s) == 0;
    if (ok) {
        try {
            const npy_intp e = npy_intp(s);
            const View<T> c{reinterpret_cast<T*>(args[2]), n, m, steps[7] / e, steps[8] / e};
            const std::vector<BatchAxis> axes{{batch, steps[0] / e, steps[1] / e, steps[2] / e}};
            if (!c_disjoint(c, axes)) throw std::invalid_argument("out overlaps itself");
            gemm_batched<T>(T(1), {reinterpret_cast<const T*>(args[0]), n, k, steps[3] / e, steps[4] / e},
                            {reinterpret_cast<const T*>(args[1]), k, m, steps[5] / e, steps[6] / e}, T(0), c, axes);
            g_ours.fetch_add(1, std::memory_order_relaxed);
            return;
        } catch (...) {
        }
    }
    g_numpys.fetch_add(1, std::memory_order_relaxed);
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
    return reinterpret_cast<PyUFuncObject*>(f.ptr());  // numpy keeps it alive
}

template <typename T>
void swap_in(PyUFuncObject* ufunc, PyUFuncGenericFunction f, PyUFuncGenericFunction* previous) {
    int sig[3] = {Slot<T>::type_num, Slot<T>::type_num, Slot<T>::type_num};
    if (PyUFunc_ReplaceLoopBySignature(ufunc, f, sig, previous) < 0)
        throw py::value_error("numpy.matmul has no loop for this type; cannot replace it");
}

template <typename T>
void replace(PyUFuncObject* ufunc) {
    if (Slot<T>::replaced) return;
    PyUFuncGenericFunction previous = nullptr;
    swap_in<T>(ufunc, &matmul_loop<T>, &previous);
    // Only the first replacement sees NumPy's loop; later ones would see a restored copy of it.
    PyUFuncGenericFunction expected = nullptr;
    Slot<T>::original.compare_exchange_strong(expected, previous, std::memory_order_release);
    Slot<T>::replaced = true;
}

template <typename T>
void restore(PyUFuncObject* ufunc) {
    if (!Slot<T>::replaced) return;
    PyUFuncGenericFunction previous = nullptr;
    swap_in<T>(ufunc, Slot<T>::original.load(std::memory_order_acquire), &previous);
    Slot<T>::replaced = false;
    if (previous != &matmul_loop<T>)
        throw std::runtime_error("numpy.matmul's loop was changed by someone else while fastgemm's was in place");
}

}  // namespace

void register_ufunc_loops(py::module_& m) {
    m.def("replace_matmul_loops", [] {
        PyUFuncObject* u = numpy_matmul();
        replace<float>(u);
        try {
            replace<double>(u);
        } catch (...) {
            restore<float>(u);
            throw;
        }
    });
    m.def("restore_matmul_loops", [] {
        PyUFuncObject* u = numpy_matmul();
        restore<float>(u);
        restore<double>(u);
    });
    m.def("matmul_loops_replaced", [] { return Slot<float>::replaced && Slot<double>::replaced; });
    m.def("matmul_loop_calls",
          [] { return py::dict(py::arg("fastgemm") = g_ours.load(), py::arg("numpy") = g_numpys.load()); });
    m.def("matmul_loop_min_flops", [] { return g_min_flops.load(); });
    m.def(
        "set_matmul_loop_min_flops",
        [](int64_t n) {
            if (n < 0) throw py::value_error("the smallest product for fastgemm's matmul loop must be >= 0");
            g_min_flops.store(n);
        },
        py::arg("n"));
}
