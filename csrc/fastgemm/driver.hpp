// The five loops around the microkernel.
#pragma once

#include "blocking.hpp"
#include "epilogue.hpp"
#include "kernel.hpp"
#include "view.hpp"

namespace fastgemm {

// C = alpha * A @ B + beta * C for m, n, k >= 1 and alpha != 0, on `threads` threads.
// C with unit column stride is written by the microkernel directly; any other C goes
// through a register-tile bounce buffer. direct_b (B row-major, unit column stride): the
// microkernel reads full-width slivers of B in place instead of packing them. Never splits
// k, so the result is bitwise the same for any thread count. `ep` runs on each tile after its
// last k block, while the tile is still in L1.
template <typename T>
void run_blocked(const KernelTable<T>& uk, const Blocking& bs, int threads, bool direct_b, T alpha, View<const T> a,
                 View<const T> b, T beta, View<T> c, const Epilogue<T>& ep = {});

// Packers from A and B's storage type S into slivers of the table's type T (S == T: the
// table's own; S a 2-byte float: LowpTable's, which widen while packing).
template <typename S, typename T>
struct Packers {
    void (*pack_a)(int64_t mc, int64_t kc, const S* a, int64_t rsa, int64_t csa, T* ap);
    void (*pack_b)(int64_t kc, int64_t nc, const S* b, int64_t rsb, int64_t csb, T* bp, int64_t s0, int64_t s1);
};

// run_blocked with A and B stored as S and packed by `pk` into T slivers (B always packed),
// accumulated and written in T: the same five loops, tiles, thread grid and determinism.
template <typename S, typename T>
void run_blocked_packed(const KernelTable<T>& uk, Packers<S, T> pk, const Blocking& bs, int threads, T alpha,
                        View<const S> a, View<const S> b, T beta, View<T> c, const Epilogue<T>& ep = {});

// run_blocked_packed for bfloat16 on a dot-product instruction: A and B packed as pairs along k
// by pk's packers, pk's tiles; bs.kc counts elements of k (even, so slices hold whole pairs).
void run_blocked_pairs(const PairKernels& pk, const Blocking& bs, int threads, float alpha, View<const bfloat16_t> a,
                       View<const bfloat16_t> b, float beta, View<float> c);

template <typename T>
class PackedB;

// run_blocked with B's panels taken from a PackedB packed for uk (the main tile of B's kernel
// set): the same loops with no pack_b and no barrier (B is only read), so threads split C
// alone, B's columns first (each streams its own part of B). mc: A's row block.
template <typename T>
void run_blocked_prepacked(const KernelTable<T>& uk, int64_t mc, int threads, T alpha, View<const T> a,
                           const PackedB<T>& b, T beta, View<T> c, const Epilogue<T>& ep = {});

}  // namespace fastgemm
