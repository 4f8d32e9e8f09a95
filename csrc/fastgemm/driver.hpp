// The five loops around the microkernel.
#pragma once

#include "blocking.hpp"
#include "kernel.hpp"
#include "view.hpp"

namespace fastgemm {

// C = alpha * A @ B + beta * C for m, n, k >= 1 and alpha != 0, on `threads` threads.
// C with unit column stride is written by the microkernel directly; any other C goes
// through a register-tile bounce buffer. direct_b (B row-major, unit column stride): the
// microkernel reads full-width slivers of B in place instead of packing them. Never splits
// k, so the result is bitwise the same for any thread count.
template <typename T>
void run_blocked(const KernelTable<T>& uk, const Blocking& bs, int threads, bool direct_b, T alpha, View<const T> a,
                 View<const T> b, T beta, View<T> c);

}  // namespace fastgemm
