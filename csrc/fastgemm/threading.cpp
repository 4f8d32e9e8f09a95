#include "threading.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fastgemm {
namespace {

std::atomic<int> g_max_threads{1};

// Below this many multiply-adds per thread, waking another thread costs more than it saves.
constexpr int64_t kMinWorkPerThread = int64_t(1) << 21;

}  // namespace

int max_threads() { return g_max_threads.load(std::memory_order_relaxed); }

void set_max_threads(int n) {
    if (n < 1) throw std::invalid_argument("number of threads must be >= 1");
    g_max_threads.store(n, std::memory_order_relaxed);
}

int threads_for(int64_t m, int64_t n, int64_t k) {
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
    const int cap = max_threads();
    if (cap <= 1) return 1;
    // m*n*k may overflow; divide first.
    const double work = double(m) * double(n) * double(k);
    const double by_work = work / double(kMinWorkPerThread);
    return by_work >= cap ? cap : std::max(1, int(by_work));
#else
    (void)m, (void)n, (void)k;
    return 1;
#endif
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
