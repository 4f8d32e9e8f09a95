#include "fma_width.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "dispatch.hpp"

namespace fastgemm {
namespace {

// GFLOP/s of one run of `loop`.
double rate(double (*loop)(int64_t), int64_t reps) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const double flops = loop(reps);
    const double dt = std::chrono::duration<double>(clock::now() - t0).count();
    return dt > 0 ? flops / dt * 1e-9 : 0;
}

FmaWidths measure() {
    using clock = std::chrono::steady_clock;
    for (const KernelSet* ks : runnable_kernels()) {
        const KernelTable<float>& t = ks->f32;
        if (!t.half_fma_loop) continue;
        // Whole vectors first, for 200 us: an Intel core runs its first 512-bit FMAs at a lower
        // rate until its power state changes, which would make half-width ones look cheaper.
        const auto start = clock::now();
        while (clock::now() - start < std::chrono::microseconds(200)) t.fma_loop(256);
        // Runs of 15-30 us (shorter ones read a third low on the Intel Xeon, in both widths alike),
        // best of 3 alternating: interference only slows a run.
        FmaWidths w;
        for (int i = 0; i < 3; ++i) {
            w.whole = std::max(w.whole, rate(t.fma_loop, 16384));
            w.half = std::max(w.half, rate(t.half_fma_loop, 16384));
        }
        return w;
    }
    return {};
}

std::atomic<int> forced{-1};

}  // namespace

const FmaWidths& fma_widths() {
    static const FmaWidths w = measure();
    return w;
}

// A pass of its own for the part pays where half-width FMAs run at well over half the whole ones'
// GFLOP/s: Zen 4 ran float32 FMAs at 113.7 GFLOP/s in 512-bit vectors and 115.9 in 256-bit ones
// (`fastgemm info --peak` on an EPYC), so 20 columns in a whole and a half vector cost 1.5 whole
// ones; the Intel Xeon of sessions 42-44 at 217 and 109 (two FMAs a cycle in either width: a
// masked whole vector costs what a half one does, and the pass of its own adds a sweep of A).
bool half_tails() {
    const int f = forced.load(std::memory_order_relaxed);
    if (f >= 0) return f != 0;
    const FmaWidths& w = fma_widths();
    return w.half > 0 && w.whole < 1.5 * w.half;
}

void set_half_tails(int mode) { forced.store(mode < 0 ? -1 : mode != 0, std::memory_order_relaxed); }

}  // namespace fastgemm
