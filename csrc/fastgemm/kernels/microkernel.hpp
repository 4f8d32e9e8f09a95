// The register-tile microkernel: an m x (NV vectors) block of C in registers over all of k.
// Included only from kernels/*.cpp (through table.hpp). Every template takes a vector-traits
// type V, and each kernel file's V is a distinct type in an anonymous namespace, so
// instantiations compiled with different ISA flags never share a symbol (the linker could
// otherwise keep an AVX-512 copy and hand it to baseline code).
#pragma once

#include <cstdint>
#include <type_traits>

#include "../kernel.hpp"

namespace fastgemm {
namespace kernels {

// How many k steps ahead the microkernel prefetches its B sliver's row: V::kPrefetchB where the
// ISA file measured one, else 0 (no prefetch instruction).
template <typename V, typename = void>
constexpr int prefetch_b_steps = 0;
template <typename V>
constexpr int prefetch_b_steps<V, std::void_t<decltype(V::kPrefetchB)>> = V::kPrefetchB;

// D::fmadd(a, b, acc) is the k step's multiply-add (V's own FMA by default; a dot-product
// instruction on packed pairs for PairKernels); alpha and beta are applied with V's.
template <typename V, int MR, int NV, typename D = V>
void ukernel(int64_t k, typename V::T alpha, const typename V::T* a, int64_t lda, const typename V::T* b, int64_t ldb,
             typename V::T beta, typename V::T* c, int64_t ldc, int n) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W;
    constexpr int kRowBytes = NV * W * int(sizeof(T));  // a row of the tile: of B's sliver and of C
    R acc[MR][NV];
#pragma GCC unroll 64
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) acc[i][j] = V::zero();

    auto steps = [&](int64_t count) {
#pragma GCC unroll 4
        for (int64_t p = 0; p < count; ++p) {
            R bv[NV];
#pragma GCC unroll 8
            for (int j = 0; j < NV; ++j) bv[j] = V::loadu(b + j * W);
            if constexpr (prefetch_b_steps<V> > 0) {
                const char* ahead = reinterpret_cast<const char*>(b + prefetch_b_steps<V> * ldb);
#pragma GCC unroll 8
                for (int off = 0; off < kRowBytes; off += 64) __builtin_prefetch(ahead + off, 0, 3);
            }
#pragma GCC unroll 64
            for (int i = 0; i < MR; ++i) {
                const R av = V::set1(a[i]);
#pragma GCC unroll 8
                for (int j = 0; j < NV; ++j) acc[i][j] = D::fmadd(av, bv[j], acc[i][j]);
            }
            a += lda;
            b += ldb;
        }
    };
    // Fetch C's lines for writing before the last k steps: C usually comes from L3 or memory.
    constexpr int64_t kPrefetchDistance = 48;
    const int64_t head = k > kPrefetchDistance ? k - kPrefetchDistance : 0;
    steps(head);
#pragma GCC unroll 64
    for (int i = 0; i < MR; ++i) {
        const char* ci = reinterpret_cast<const char*>(c + i * ldc);
#pragma GCC unroll 8
        for (int off = 0; off < kRowBytes; off += 64) __builtin_prefetch(ci + off, 1, 3);
        __builtin_prefetch(ci + kRowBytes - 1, 1, 3);
    }
    steps(k - head);

    const R va = V::set1(alpha), vb = V::set1(beta);
    const bool read_c = beta != T(0);
    if (n == NV * W) {
        // Full-width rows: plain stores (masked stores cost more on some cores).
#pragma GCC unroll 64
        for (int i = 0; i < MR; ++i) {
            T* ci = c + i * ldc;
#pragma GCC unroll 8
            for (int j = 0; j < NV; ++j) {
                R r = V::mul(acc[i][j], va);
                if (read_c) r = V::fmadd(vb, V::loadu(ci + j * W), r);
                V::storeu(ci + j * W, r);
            }
        }
        return;
    }
    typename V::mask mk[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) mk[j] = V::lanes(n - j * W);
#pragma GCC unroll 64
    for (int i = 0; i < MR; ++i) {
        T* ci = c + i * ldc;
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) {
            if (j * W >= n) break;
            R r = V::mul(acc[i][j], va);
            if (read_c) r = V::fmadd(vb, V::maskz_loadu(mk[j], ci + j * W), r);
            V::mask_storeu(ci + j * W, mk[j], r);
        }
    }
}

}  // namespace kernels
}  // namespace fastgemm
