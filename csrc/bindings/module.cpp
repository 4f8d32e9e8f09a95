// pybind11 module fastgemm._core: turns ndarrays into core views and back. No semantics here;
// python/fastgemm/ decides what a call means, the core computes it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../fastgemm/blocking.hpp"
#include "../fastgemm/caches.hpp"
#include "../fastgemm/cpu.hpp"
#include "../fastgemm/dispatch.hpp"
#include "../fastgemm/fma_width.hpp"
#include "../fastgemm/peak.hpp"
#include "../fastgemm/threading.hpp"
#include "gemm_entry.hpp"
#include "registrations.hpp"

namespace py = pybind11;
using namespace fastgemm;

namespace {

py::dict tile_info(const KernelSet& ks) {
    py::dict d;
    const Blocking s = blocking_for(ks.f32), dd = blocking_for(ks.f64);
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
    bindings::def_gemm<float, py::array>(m, "sgemm");
    bindings::def_gemm<double, py::array>(m, "dgemm");

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
    m.def("kernel_info", [](const std::string& name) { return tile_info(find_kernels(name, false)); }, py::arg("name"));
    m.def("caches", [] {
        const Caches& c = caches();
        return py::dict(py::arg("l1d") = cache_level(c.l1d), py::arg("l2") = cache_level(c.l2),
                        py::arg("l3") = cache_level(c.l3));
    });
    m.def("cpu_features", [] { return cpu_features().names; });
    m.def(
        "fma_peak",
        [](const std::string& name, bool f64, double seconds) {
            const KernelSet& ks = find_kernels(name, true);
            py::gil_scoped_release release;
            return fma_peak_gflops(ks, f64, seconds);
        },
        py::arg("name"), py::arg("f64"), py::arg("seconds"));
    m.def("fma_widths", [] {
        const FmaWidths& w = fma_widths();
        return py::dict(py::arg("whole") = w.whole, py::arg("half") = w.half, py::arg("half_tails") = half_tails());
    });
    m.def("set_half_tails", &set_half_tails, py::arg("mode"));
    m.def("get_num_threads", &max_threads);
    m.def("set_num_threads", &set_max_threads, py::arg("n"));
    m.def("max_thread_limit", &max_thread_limit);
    m.def("thread_pool_policy", &thread_pool_policy);
    // FASTGEMM_KC / MC / NC values the core ignored: (variable, raw value, reason) tuples.
    m.def("rejected_env_settings", [] {
        std::vector<std::tuple<std::string, std::string, std::string>> out;
        for (const RejectedSetting& r : rejected_env_settings()) out.emplace_back(r.variable, r.value, r.reason);
        return out;
    });
    register_batched(m);
    register_calls(m);
    register_ufunc_loops(m);
    register_lowp(m);
    register_bf16_loop(m);
    register_numpy_dot(m);
    register_packed(m);
    register_int8(m);
}
