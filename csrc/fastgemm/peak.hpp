// One core's measured FMA ceiling, the yardstick every GFLOP/s figure is reported against.
#pragma once

#include "kernel.hpp"

namespace fastgemm {

// GFLOP/s of the kernel set's independent-FMA loop for fp32 (f64 false) or fp64, on the
// calling thread, timed over about `seconds` (best of a few runs).
double fma_peak_gflops(const KernelSet& ks, bool f64, double seconds);

// The same for any such loop (`loop(reps)` returns the flops it did), e.g. PairKernels::dot_loop.
double loop_peak_gflops(double (*loop)(int64_t), double seconds);

}  // namespace fastgemm
