// How many threads a call may use, and which OpenMP runtime provides them.
#pragma once

#include <cstdint>
#include <functional>

namespace fastgemm {

// The cap a call may use (>= 1). Defaults to 1 until set; the Python layer sets the default.
// Always 1 in a process forked after fastgemm ran threaded (see fork.hpp).
int max_threads();
// Throws std::invalid_argument for n < 1.
void set_max_threads(int n);
// Threads for an m x n x k product: 1 inside an OpenMP parallel region or for small work,
// never more than the work can use, never more than max_threads(). A result > 1 means
// the caller is about to start an OpenMP team, which fork safety must know about.
int threads_for(int64_t m, int64_t n, int64_t k);
// body(lo, hi) over [0, len) cut into `threads` contiguous ranges whose inner bounds are
// multiples of `grain`, one per thread of an OpenMP team (no team when threads == 1).
void parallel_ranges(int threads, int64_t len, int64_t grain,
                     const std::function<void(int64_t, int64_t)>& body);
// "libgomp", "libomp", ... or "none" when built without OpenMP.
const char* openmp_runtime();

// For fork.cpp: the child of a fork drops to one thread; if the parent had started an
// OpenMP team, the child can never start one again (GNU OpenMP's pool does not survive fork).
void after_fork_in_child();

}  // namespace fastgemm
