// How many threads a call may use, and which OpenMP runtime provides them.
#pragma once

#include <cstdint>

namespace fastgemm {

// The cap set by the user (>= 1). Defaults to 1 until set; the Python layer sets the default.
int max_threads();
// Throws std::invalid_argument for n < 1.
void set_max_threads(int n);
// Threads for an m x n x k product: 1 inside an OpenMP parallel region or for small work,
// never more than the work can use, never more than max_threads().
int threads_for(int64_t m, int64_t n, int64_t k);
// "libgomp", "libomp", ... or "none" when built without OpenMP.
const char* openmp_runtime();

}  // namespace fastgemm
