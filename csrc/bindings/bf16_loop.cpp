// The switch's bfloat16 matmul loop: a (bfloat16, bfloat16) -> float32 implementation of
// numpy.matmul for ml_dtypes' dtype, registered once through NumPy 2's ArrayMethod API. NumPy
// cannot remove a loop again (and caches every resolution), so the loop follows the switch at
// every call instead: on, it takes bfloat16 operands and runs fastgemm's product; off, its
// descriptors ask NumPy for float32 operands (NumPy casts them as it does without the loop) and
// it runs numpy.matmul's current float32 loop, so a call gives NumPy's own bits. See
// docs/DESIGN.md, "Low-precision products".
#include <pybind11/pybind11.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>
// The ArrayMethod types are NumPy >= 2.0 API, which the headers hide below NPY_TARGET_VERSION
// 2.0; a translation unit built for 2.0 would see another PyArray_Descr than the rest (an ODR
// violation), so this one includes the types alone and calls the 2.0 entry only on NumPy >= 2.
#include <numpy/dtype_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#include "../fastgemm/batched.hpp"
#include "../fastgemm/gemm_lowp.hpp"
#include "gufunc_views.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;
using namespace fastgemm::bindings;

namespace {

// NumPy 2.0's C API version, and PyUFunc_AddLoopFromSpec's slot in its ufunc API table (the
// table's slots never move: numpy/_core/include/numpy/__ufunc_api.h).
constexpr unsigned kNumpy2Api = 0x12;
constexpr int kAddLoopFromSpec = 43;

std::atomic<bool> g_on{false};     // the switch's bfloat16 part; set by _patch with the rest
PyObject* g_registered = nullptr;  // the DType the loop was registered for (a strong reference)
std::atomic<uint64_t> g_ours{0}, g_numpys{0};

// Item by item through contiguous copies, for what the core cannot address (odd steps, an
// `out` whose elements overlap): C written in row-major order, as NumPy's own loop does.
void gathered(char* const* args, npy_intp batch, const npy_intp* steps, const Geometry& g) {
    const npy_intp n = g.n, k = g.k, m = g.m;
    std::vector<bfloat16_t> a(size_t(n * k)), b(size_t(k * m));
    std::vector<float> c(size_t(n * m));
    for (npy_intp t = 0; t < batch; ++t) {
        const char* pa = args[0] + t * steps[0];
        const char* pb = args[1] + t * steps[1];
        char* pc = args[2] + t * steps[2];
        for (npy_intp i = 0; i < n; ++i)
            for (npy_intp p = 0; p < k; ++p) std::memcpy(&a[size_t(i * k + p)], pa + i * g.a_n + p * g.a_k, 2);
        for (npy_intp p = 0; p < k; ++p)
            for (npy_intp j = 0; j < m; ++j) std::memcpy(&b[size_t(p * m + j)], pb + p * g.b_k + j * g.b_m, 2);
        gemm_lowp<bfloat16_t>(1.0f, {a.data(), n, k, k, 1}, {b.data(), k, m, m, 1}, 0.0f, {c.data(), n, m, m, 1});
        for (npy_intp i = 0; i < n; ++i)
            for (npy_intp j = 0; j < m; ++j) std::memcpy(pc + i * g.c_n + j * g.c_m, &c[size_t(i * m + j)], 4);
    }
}

// The loop with the switch on: float32 accumulation straight into C (NumPy's float32 result).
// It runs without the GIL and touches no Python object except to report a failure.
int bf16_loop(PyArrayMethod_Context*, char* const* args, const npy_intp* dims, const npy_intp* steps, NpyAuxData*) {
    try {
        const Geometry g = matmul_geometry(dims, steps);
        StackViews<bfloat16_t, bfloat16_t, float> v{};
        const bool addressable = stack_views(args, dims[0], steps, g, v);
        const std::vector<BatchAxis> axes{v.batch};
        if (addressable && c_disjoint(v.c, axes)) gemm_lowp_batched<bfloat16_t>(1.0f, v.a, v.b, 0.0f, v.c, axes);
        else gathered(args, dims[0], steps, g);
        g_ours.fetch_add(1, std::memory_order_relaxed);
        return 0;
    } catch (const std::exception& e) {
        const PyGILState_STATE gil = PyGILState_Ensure();
        if (dynamic_cast<const std::bad_alloc*>(&e)) PyErr_NoMemory();
        else PyErr_SetString(PyExc_RuntimeError, e.what());
        PyGILState_Release(gil);
        return -1;
    }
}

// The loop with the switch off: numpy.matmul's float32 loop on the float32 operands NumPy made.
struct Float32Loop {
    NpyAuxData base;
    PyUFuncGenericFunction loop;
    void* data;
};

void free_float32_loop(NpyAuxData* p) { delete reinterpret_cast<Float32Loop*>(p); }

int float32_loop(PyArrayMethod_Context*, char* const* args, const npy_intp* dims, const npy_intp* steps,
                 NpyAuxData* aux) {
    const auto* f = reinterpret_cast<const Float32Loop*>(aux);
    g_numpys.fetch_add(1, std::memory_order_relaxed);
    f->loop(const_cast<char**>(args), dims, steps, f->data);
    return 0;
}

bool is_bf16(PyArray_Descr* d) { return NPY_DTYPE(d) == reinterpret_cast<PyArray_DTypeMeta*>(g_registered); }

// Switch on: bfloat16 in (native byte order), float32 out. Off, or an input NumPy would have
// to byte-swap: float32 throughout, what NumPy's own resolution (cast to float32) gives. The
// output is float32 whatever `out` is (NumPy casts into another out's dtype). On, the loop
// stands for the safe cast NumPy would make: casting='no' / 'equiv' are refused.
NPY_CASTING resolve(PyArrayMethodObject_tag*, PyArray_DTypeMeta* const*, PyArray_Descr* const* given,
                    PyArray_Descr** loop, npy_intp*) {
    const bool on = g_on.load(std::memory_order_acquire) && PyArray_ISNBO(given[0]->byteorder) &&
                    PyArray_ISNBO(given[1]->byteorder);
    for (int i = 0; i < 2; ++i) {
        loop[i] = on ? given[i] : PyArray_DescrFromType(NPY_FLOAT);
        if (on) Py_INCREF(given[i]);
    }
    PyArray_Descr* out = given[2];
    if (out != nullptr && out->type_num == NPY_FLOAT && PyArray_ISNBO(out->byteorder)) {
        loop[2] = out;
        Py_INCREF(out);
    } else {
        loop[2] = PyArray_DescrFromType(NPY_FLOAT);
    }
    return on ? NPY_SAFE_CASTING : NPY_NO_CASTING;
}

int get_loop(PyArrayMethod_Context* context, int, int, const npy_intp*, PyArrayMethod_StridedLoop** out,
             NpyAuxData** aux, NPY_ARRAYMETHOD_FLAGS* flags) {
    *flags = NPY_ARRAYMETHOD_FLAGS(0);  // NumPy's float32 loop's: no Python, floating-point errors checked
    if (is_bf16(context->descriptors[0])) {
        *out = &bf16_loop;
        *aux = nullptr;
        return 0;
    }
    // The float32 loop numpy.matmul holds now (NumPy's, as the switch is off), looked up as
    // NumPy's legacy loop selector does.
    auto* ufunc = reinterpret_cast<PyUFuncObject*>(context->caller);
    for (int i = 0; i < ufunc->ntypes; ++i) {
        const char* t = ufunc->types + i * ufunc->nargs;
        if (t[0] == NPY_FLOAT && t[1] == NPY_FLOAT && t[2] == NPY_FLOAT) {
            auto* f = new (std::nothrow) Float32Loop{{&free_float32_loop, nullptr, {nullptr, nullptr}},
                                                     ufunc->functions[i],
                                                     ufunc->data ? ufunc->data[i] : nullptr};
            if (f == nullptr) {
                PyErr_NoMemory();
                return -1;
            }
            *out = &float32_loop;
            *aux = &f->base;
            return 0;
        }
    }
    PyErr_SetString(PyExc_RuntimeError, "numpy.matmul has no float32 loop");
    return -1;
}

// Registers the loop for `dtype` (ml_dtypes' bfloat16) on numpy.matmul, once per process.
// False on NumPy < 2 (no ArrayMethod API): bfloat16 then keeps NumPy's cast to float32.
bool register_loop(const py::object& dtype) {
    if (g_registered != nullptr) {
        if (reinterpret_cast<PyObject*>(Py_TYPE(dtype.ptr())) != g_registered)
            throw py::value_error("the bfloat16 matmul loop is registered for another dtype");
        return true;
    }
    if (_import_array() < 0 || _import_umath() < 0) throw py::error_already_set();
    if (PyArray_GetNDArrayCFeatureVersion() < kNumpy2Api) return false;  // NumPy 1.x: no ArrayMethod API
    if (!PyArray_DescrCheck(dtype.ptr())) throw py::type_error("expected a numpy dtype");
    py::object matmul = py::module_::import("numpy").attr("matmul");
    py::object f32 = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(PyArray_DescrFromType(NPY_FLOAT)));
    PyArray_DTypeMeta* dtypes[3] = {NPY_DTYPE(dtype.ptr()), NPY_DTYPE(dtype.ptr()), NPY_DTYPE(f32.ptr())};
    PyType_Slot slots[] = {{NPY_METH_resolve_descriptors, reinterpret_cast<void*>(&resolve)},
                           {NPY_METH_get_loop, reinterpret_cast<void*>(&get_loop)},
                           {0, nullptr}};
    PyArrayMethod_Spec spec{"fastgemm_bf16_matmul", 2, 1, NPY_NO_CASTING, NPY_ARRAYMETHOD_FLAGS(0), dtypes, slots};
    const auto add_loop = reinterpret_cast<int (*)(PyObject*, PyArrayMethod_Spec*)>(PyUFunc_API[kAddLoopFromSpec]);
    if (add_loop(matmul.ptr(), &spec) < 0) throw py::error_already_set();
    g_registered = reinterpret_cast<PyObject*>(Py_TYPE(dtype.ptr()));
    Py_INCREF(g_registered);
    return true;
}

}  // namespace

void register_bf16_loop(py::module_& m) {
    m.def("register_bf16_matmul_loop", &register_loop, py::arg("dtype"));
    m.def("bf16_matmul_loop_registered", [] { return g_registered != nullptr; });
    m.def("set_bf16_matmul_loop_on", [](bool on) { g_on.store(on, std::memory_order_release); }, py::arg("on"));
    m.def("bf16_matmul_loop_on", [] { return g_on.load(); });
    m.def("bf16_matmul_loop_calls",
          [] { return py::dict(py::arg("fastgemm") = g_ours.load(), py::arg("numpy") = g_numpys.load()); });
}
