#include "peak.hpp"

#include <algorithm>
#include <chrono>

namespace fastgemm {

double fma_peak_gflops(const KernelSet& ks, bool f64, double seconds) {
    return loop_peak_gflops(f64 ? ks.f64.fma_loop : ks.f32.fma_loop, seconds);
}

double loop_peak_gflops(double (*loop)(int64_t), double seconds) {
    using clock = std::chrono::steady_clock;
    // Calibrate to ~1 ms per run, then keep the best run: interference only ever slows it down.
    int64_t reps = 1024;
    for (;;) {
        const auto t0 = clock::now();
        loop(reps);
        const double dt = std::chrono::duration<double>(clock::now() - t0).count();
        if (dt > 1e-3 || reps > (int64_t(1) << 40)) break;
        reps *= 2;
    }
    double best = 0;
    const auto start = clock::now();
    do {
        const auto t0 = clock::now();
        const double flops = loop(reps);
        const double dt = std::chrono::duration<double>(clock::now() - t0).count();
        best = std::max(best, flops / dt * 1e-9);
    } while (std::chrono::duration<double>(clock::now() - start).count() < seconds);
    return best;
}

}  // namespace fastgemm
