#include "threading.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>

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

// Per-thread work below which another thread costs more than it saves; see docs/DESIGN.md,
// "Thread thresholds".
constexpr int64_t kMinWorkPerThread = int64_t(1) << 20;
// The driver's threads meet at two barriers per KC step: each must own this much of C.
constexpr int64_t kMinAreaPerThread = 32 * 32;

// GNU OpenMP keeps its worker pool across parallel regions; a forked child inherits the
// belief that the pool exists but not its threads, so its next multi-thread region waits
// forever. The child runs single-threaded instead. Async-signal-safe: atomic stores only.
void after_fork_in_child() {
    g_max_threads.store(1, std::memory_order_relaxed);
    if (g_team_started.load(std::memory_order_relaxed)) g_single_after_fork.store(true, std::memory_order_relaxed);
}

// threading.o is always linked (gemm needs threads_for), so every binary that can start a
// team registers the handler.
const bool g_fork_handler_installed = (pthread_atfork(nullptr, nullptr, after_fork_in_child), true);

void note_team(int threads) {
    if (threads > 1) g_team_started.store(true, std::memory_order_relaxed);
}

// A busy machine (other processes on every core): a thread of ours that is not running when
// its team starts, or that is preempted, holds every other one at the next barrier for a
// scheduler time slice, which is worth thousands of small products. When a team's threads
// start late, for a while a product of at most kContendedMaxWork multiply-adds runs on one
// thread if the delay seen is more than half its one-thread time (two threads would then take
// longer than one); the while doubles (up to kSoloMaxNs) while late starts go on; see
// docs/DESIGN.md, "Threads on a busy machine".
constexpr int64_t kLateStartNs = 200'000;
constexpr double kNsPerMultiplyAdd = 1.0 / 50.0;  // a conservative 50 G multiply-adds/s per core
// Larger products keep their threads: next to another library's spinning thread pool (which
// also delays a team's start) they still gain from them.
constexpr double kContendedMaxWork = double(int64_t(1) << 25);
constexpr int64_t kSoloMinNs = 5'000'000, kSoloMaxNs = 1'280'000'000;
std::atomic<int64_t> g_solo_until{0};  // steady-clock ns until which delayed teams are avoided
std::atomic<int64_t> g_solo_ns{kSoloMinNs};
std::atomic<int64_t> g_late_ns{0};  // how late the last delayed team started
// A neighbour's spinning thread pool (OpenBLAS spins ~0.1 s after each call) delays teams only
// for a while: the windows grow only once late starts have gone on for longer than that.
constexpr int64_t kStreakBeforeGrowthNs = 250'000'000;
std::atomic<int64_t> g_streak_start{0};  // when the current run of delayed teams began, 0: none

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// When each thread of one team started, against when the team was asked for.
class StartWatch {
   public:
    StartWatch() : asked_(now_ns()) {}
    void started() {
        const int64_t late = now_ns() - asked_;
        int64_t seen = latest_.load(std::memory_order_relaxed);
        while (late > seen && !latest_.compare_exchange_weak(seen, late, std::memory_order_relaxed)) {
        }
    }
    ~StartWatch() {
        const int64_t late = latest_.load(std::memory_order_relaxed);
        if (late > kLateStartNs) {
            const int64_t now = now_ns();
            int64_t streak = g_streak_start.load(std::memory_order_relaxed);
            if (streak == 0) g_streak_start.store(streak = now, std::memory_order_relaxed);
            g_late_ns.store(late, std::memory_order_relaxed);
            const int64_t solo = g_solo_ns.load(std::memory_order_relaxed);
            g_solo_until.store(now + solo, std::memory_order_relaxed);
            if (now - streak > kStreakBeforeGrowthNs)
                g_solo_ns.store(std::min(2 * solo, kSoloMaxNs), std::memory_order_relaxed);
        } else {
            g_streak_start.store(0, std::memory_order_relaxed);
            g_solo_ns.store(kSoloMinNs, std::memory_order_relaxed);
        }
    }

   private:
    int64_t asked_;
    std::atomic<int64_t> latest_{0};
};

}  // namespace

int max_threads() {
    return g_single_after_fork.load(std::memory_order_relaxed) ? 1 : g_max_threads.load(std::memory_order_relaxed);
}

int max_thread_limit() {
    int cpus = 0;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
#endif
#ifdef _OPENMP
    if (cpus <= 0) cpus = omp_get_num_procs();
#endif
    return std::max(8, 4 * std::max(cpus, 1));
}

void set_max_threads(int n) {
    if (n < 1) throw std::invalid_argument("set_num_threads: number of threads must be >= 1");
    const int limit = max_thread_limit();
    if (n > limit)
        throw std::invalid_argument("set_num_threads: " + std::to_string(n) + " threads is more than " +
                                    std::to_string(limit) + " (4x the CPUs this process may use)");
    g_max_threads.store(n, std::memory_order_relaxed);
}

#ifdef _OPENMP
namespace {
// Threads an m x n x k product's work can keep busy, before the cap and the busy-machine rule.
double threads_by_work(int64_t m, int64_t n, int64_t k) {
    // m*n*k may overflow int64.
    const double work = double(m) * double(n) * double(k);
    return std::min(work / double(kMinWorkPerThread), double(m) * double(n) / double(kMinAreaPerThread));
}
}  // namespace
#endif

int threads_for(int64_t m, int64_t n, int64_t k) {
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
    const int cap = max_threads();
    if (cap <= 1) return 1;
    const double by_work = threads_by_work(m, n, k);
    if (by_work < 2) return 1;
    const double work = double(m) * double(n) * double(k);
    if (work <= kContendedMaxWork &&
        work * kNsPerMultiplyAdd < 2.0 * double(g_late_ns.load(std::memory_order_relaxed)) &&
        now_ns() < g_solo_until.load(std::memory_order_relaxed))
        return 1;
    return by_work >= cap ? cap : int(by_work);
#else
    (void)m, (void)n, (void)k;
    return 1;
#endif
}

bool may_run_threaded(int64_t m, int64_t n, int64_t k) {
#ifdef _OPENMP
    return !omp_in_parallel() && max_threads() > 1 && threads_by_work(m, n, k) >= 2;
#else
    (void)m, (void)n, (void)k;
    return false;
#endif
}

void run_team(int threads, FunctionRef<void(int, int)> fn) {
#ifdef _OPENMP
    // One thread: no region at all; even a one-thread team costs microseconds per call.
    if (threads > 1) {
        note_team(threads);
        StartWatch watch;
#pragma omp parallel num_threads(threads)
        {
            watch.started();
            fn(omp_get_thread_num(), omp_get_num_threads());
        }
        return;
    }
#endif
    (void)threads;
    fn(0, 1);
}

void team_barrier() {
#pragma omp barrier
}

void parallel_ranges(int threads, int64_t len, int64_t grain, FunctionRef<void(int, int64_t, int64_t)> body) {
    const int64_t grains = (len + grain - 1) / grain;
    run_team(threads, [&](int t, int team) {
        const int64_t lo = std::min(len, grains * t / team * grain);
        const int64_t hi = std::min(len, grains * (t + 1) / team * grain);
        if (lo < hi) body(t, lo, hi);
    });
}

void dynamic_chunks(int threads, int64_t count, FunctionRef<void(int64_t)> body) {
    if (threads <= 1) {
        for (int64_t i = 0; i < count; ++i) body(i);
        return;
    }
    // An exception must not leave an OpenMP region: keep the first, skip the rest, rethrow.
    std::exception_ptr error;
    std::atomic<bool> failed{false};
    note_team(threads);
    StartWatch watch;
#pragma omp parallel num_threads(threads)
    {
        watch.started();
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < count; ++i) {
            if (failed.load(std::memory_order_relaxed)) continue;
            try {
                body(i);
            } catch (...) {
#pragma omp critical(fastgemm_dynamic_error)
                if (!error) error = std::current_exception();
                failed.store(true, std::memory_order_relaxed);
            }
        }
    }
    if (error) std::rethrow_exception(error);
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
// Returns 0 on success, -1 for n < 1 or n > the limit (fastgemm::max_thread_limit()).
__attribute__((visibility("default"))) int fastgemm_set_num_threads(int n) {
    if (n < 1 || n > fastgemm::max_thread_limit()) return -1;
    fastgemm::set_max_threads(n);
    return 0;
}
}
