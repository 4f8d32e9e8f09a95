// pybind11 module fastgemm._core: turns ndarrays into core views and back. No semantics here;
// python/fastgemm/ decides what a call means, the core computes it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "../fastgemm/blocking.hpp"
#include "../fastgemm/caches.hpp"
#include "../fastgemm/cpu.hpp"
#include "../fastgemm/dispatch.hpp"
#include "../fastgemm/gemm.hpp"
#include "../fastgemm/peak.hpp"
#include "../fastgemm/threading.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;

namespace {

template <typename T>
View<T> view_of(const py::array& x, const char* name, T* data) {
    if (!x.dtype().is(py::dtype::of<std::remove_const_t<T>>()))
        throw py::type_error(std::string(name) + ": wrong dtype");
    if (x.ndim() != 2) throw py::value_error(std::string(name) + ": expected a 2-D array");
    const auto item = py::ssize_t(sizeof(T));
    if (x.strides(0) % item || x.strides(1) % item)
        throw py::value_error(std::string(name) + ": strides are not a multiple of the item size");
    return {data, x.shape(0), x.shape(1), x.strides(0) / item, x.strides(1) / item};
}

template <typename T>
void gemm_py(const py::array& a, const py::array& b, py::array& c, T alpha, T beta) {
    const View<const T> va = view_of<const T>(a, "a", static_cast<const T*>(a.data()));
    const View<const T> vb = view_of<const T>(b, "b", static_cast<const T*>(b.data()));
    if (!c.writeable()) throw py::value_error("c: array is read-only");
    const View<T> vc = view_of<T>(c, "c", static_cast<T*>(c.mutable_data()));
    py::gil_scoped_release release;
    gemm<T>(alpha, va, vb, beta, vc);
}

const KernelSet& kernel_named(const std::string& name) {
    for (const KernelSet* ks : compiled_kernels())
        if (name == ks->name) return *ks;
    throw py::value_error("unknown kernel '" + name + "'");
}

py::dict tile_info(const KernelSet& ks) {
    py::dict d;
    const Blocking s = blocking_for(ks.f32.mr, ks.f32.nr, 4), dd = blocking_for(ks.f64.mr, ks.f64.nr, 8);
    d["name"] = ks.name;
    d["isa"] = ks.isa;
    d["float32"] = py::dict(py::arg("mr") = ks.f32.mr, py::arg("nr") = ks.f32.nr, py::arg("mc") = s.mc,
                            py::arg("kc") = s.kc, py::arg("nc") = s.nc);
    d["float64"] = py::dict(py::arg("mr") = ks.f64.mr, py::arg("nr") = ks.f64.nr, py::arg("mc") = dd.mc,
                            py::arg("kc") = dd.kc, py::arg("nc") = dd.nc);
    return d;
}

py::dict cache_level(const CacheLevel& c) {
    return py::dict(py::arg("size") = c.size, py::arg("ways") = c.ways, py::arg("line") = c.line,
                    py::arg("detected") = c.detected);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "fastgemm native core (internal; use the fastgemm package)";
    m.def("sgemm", &gemm_py<float>, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha"), py::arg("beta"));
    m.def("dgemm", &gemm_py<double>, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("alpha"), py::arg("beta"));

    m.def("compiled_kernels", [] {
        py::list out;
        for (const KernelSet* ks : compiled_kernels()) out.append(ks->name);
        return out;
    });
    m.def("runnable_kernels", [] {
        py::list out;
        for (const KernelSet* ks : runnable_kernels()) out.append(ks->name);
        return out;
    });
    m.def("active_kernel", [] { return std::string(active_kernels().name); });
    m.def("set_kernel", [](const std::string& name) { set_kernels(name); }, py::arg("name"));
    m.def("kernel_info", [](const std::string& name) { return tile_info(kernel_named(name)); }, py::arg("name"));
    m.def("caches", [] {
        const Caches& c = caches();
        return py::dict(py::arg("l1d") = cache_level(c.l1d), py::arg("l2") = cache_level(c.l2),
                        py::arg("l3") = cache_level(c.l3));
    });
    m.def("cpu_features", [] { return cpu_features().names; });
    m.def(
        "fma_peak",
        [](const std::string& name, bool f64, double seconds) {
            const KernelSet& ks = kernel_named(name);
            bool runnable = false;
            for (const KernelSet* r : runnable_kernels()) runnable |= r == &ks;
            if (!runnable) throw py::value_error("kernel '" + name + "' cannot run on this CPU/OS");
            py::gil_scoped_release release;
            return fma_peak_gflops(ks, f64, seconds);
        },
        py::arg("name"), py::arg("f64"), py::arg("seconds"));
    m.def("get_num_threads", &max_threads);
    m.def("set_num_threads", &set_max_threads, py::arg("n"));
    m.def("openmp_runtime", &openmp_runtime);
    register_batched(m);
    register_ufunc_loops(m);
}
