#include "threading.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "fork.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fastgemm {
namespace {

std::atomic<int> g_max_threads{1};
// Set once this process has asked OpenMP for a team of more than one thread.
std::atomic<bool> g_team_started{false};
// Set in a child forked after g_team_started: OpenMP teams would hang there.
std::atomic<bool> g_single_after_fork{false};

// Below this many multiply-adds per thread, waking another thread costs more than it saves.
// Measured on a 2-core AVX-512 VM, float32, 1 vs 2 threads, median of 25 alternating runs:
// back-to-back calls (workers still spinning) 64^3 1.19x, 96^3 1.24x, 128^3 1.61x, 160^3 1.73x,
// 192^3 1.82x; but a sporadic call pays the wake-up of a sleeping worker, which on the same
// machine under load (other jobs running) made 128^3..192^3 take 24-36 ms on 2 threads against
// 0.2-0.3 ms on 1. 2^21 per thread puts the 2-thread switch at ~161^3, where the hot speedup
// is already ~1.7x: a small product never risks a wake-up for a gain under ~1.6x.
constexpr int64_t kMinWorkPerThread = int64_t(1) << 21;
// The driver's threads meet at two barriers per KC step, so a thread must own enough of C to
// outweigh them; K does not help (a 32 x 32 x 4096 product is 28 tiny steps). Same runs:
// 32x32x4096 (1024 of C per thread) 0.99-1.00x, 32x64x4096 (2048) 1.62x, 64x64x4096 1.50x.
constexpr int64_t kMinAreaPerThread = 32 * 32;

// threading.o is always linked (gemm needs threads_for), so this pulls the fork handler
// into every binary that can start a team.
const bool g_fork_handler_installed = (install_fork_handler(), true);

}  // namespace

int max_threads() {
    return g_single_after_fork.load(std::memory_order_relaxed) ? 1
                                                               : g_max_threads.load(std::memory_order_relaxed);
}

void set_max_threads(int n) {
    if (n < 1) throw std::invalid_argument("number of threads must be >= 1");
    g_max_threads.store(n, std::memory_order_relaxed);
}

void after_fork_in_child() {
    g_max_threads.store(1, std::memory_order_relaxed);
    if (g_team_started.load(std::memory_order_relaxed)) g_single_after_fork.store(true, std::memory_order_relaxed);
}

int threads_for(int64_t m, int64_t n, int64_t k) {
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
    const int cap = max_threads();
    if (cap <= 1) return 1;
    // m*n*k may overflow; divide first.
    const double work = double(m) * double(n) * double(k);
    const double by_work = std::min(work / double(kMinWorkPerThread), double(m) * double(n) / double(kMinAreaPerThread));
    const int t = by_work >= cap ? cap : std::max(1, int(by_work));
    if (t > 1) g_team_started.store(true, std::memory_order_relaxed);
    return t;
#else
    (void)m, (void)n, (void)k;
    return 1;
#endif
}

void parallel_ranges(int threads, int64_t len, int64_t grain,
                     const std::function<void(int64_t, int64_t)>& body) {
    const int64_t grains = (len + grain - 1) / grain;
    auto share = [&](int t, int team) {
        const int64_t lo = std::min(len, grains * t / team * grain);
        const int64_t hi = std::min(len, grains * (t + 1) / team * grain);
        if (lo < hi) body(lo, hi);
    };
#ifdef _OPENMP
    if (threads > 1) {
#pragma omp parallel num_threads(threads)
        share(omp_get_thread_num(), omp_get_num_threads());
        return;
    }
#endif
    (void)threads;
    share(0, 1);
}

const char* openmp_runtime() {
#if defined(_OPENMP) && defined(__GNUC__) && !defined(__clang__)
    return "libgomp";
#elif defined(_OPENMP) && defined(__clang__)
    return "libomp";
#elif defined(_OPENMP)
    return "openmp";
#else
    return "none";
#endif
}

}  // namespace fastgemm

// A C ABI so tools that find libraries by their exported symbols (threadpoolctl's controller
// in python/fastgemm/_threadpool.py) can read and set the cap without going through Python.
extern "C" {
__attribute__((visibility("default"))) int fastgemm_get_num_threads(void) { return fastgemm::max_threads(); }
// Returns 0 on success, -1 for n < 1.
__attribute__((visibility("default"))) int fastgemm_set_num_threads(int n) {
    if (n < 1) return -1;
    fastgemm::set_max_threads(n);
    return 0;
}
}
