// The register-tile microkernel, packing and FMA-peak loop, written once over a vector-traits
// type V and instantiated by each kernel file under its own ISA flags.
//
// Included only from kernels/*.cpp. Every template takes V, and each kernel file's V is a
// distinct type, so instantiations compiled with different ISA flags never share a symbol
// (the linker could otherwise keep an AVX-512 copy and hand it to baseline code).
//
// V provides: T, reg, mask, W (lanes), zero(), set1(x), loadu(p),
// storeu(p, r), lanes(n) (mask of the first n lanes), maskz_loadu(m, p), mask_storeu(p, m, r),
// fmadd(a, b, c) = a*b + c, mul(a, b).
#pragma once

#include <cstdint>
#include <utility>

#include "../kernel.hpp"

namespace fastgemm {
namespace tile {

template <typename V, int MR, int NV>
void ukernel(int64_t k, typename V::T alpha, const typename V::T* a, int64_t lda,
             const typename V::T* b, int64_t ldb, typename V::T beta, typename V::T* c, int64_t ldc,
             int n) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W;
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
#pragma GCC unroll 64
            for (int i = 0; i < MR; ++i) {
                const R av = V::set1(a[i]);
#pragma GCC unroll 8
                for (int j = 0; j < NV; ++j) acc[i][j] = V::fmadd(av, bv[j], acc[i][j]);
            }
            a += lda;
            b += ldb;
        }
    };
    // C is touched once per call, usually from L3 or memory. Fetch its lines (for writing:
    // beta == 0 still needs them owned) far enough before the end of the k loop to hide that
    // latency, late enough that the A and B streams do not evict them again.
    constexpr int64_t kPrefetchDistance = 48;
    const int64_t head = k > kPrefetchDistance ? k - kPrefetchDistance : 0;
    steps(head);
    constexpr int kRowBytes = NV * W * int(sizeof(T));
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

template <typename V, int MR>
void pack_a(int64_t mc, int64_t kc, const typename V::T* a, int64_t rsa, int64_t csa,
            typename V::T* ap) {
    using T = typename V::T;
    for (int64_t i0 = 0; i0 < mc; i0 += MR, ap += MR * kc) {
        const T* a0 = a + i0 * rsa;
        const int64_t rows = mc - i0 < MR ? mc - i0 : MR;
        if (rows == MR && csa == 1) {
            // Each row of A is contiguous along k: read rows, write the sliver's columns.
            for (int i = 0; i < MR; ++i) {
                const T* ar = a0 + i * rsa;
                for (int64_t p = 0; p < kc; ++p) ap[p * MR + i] = ar[p];
            }
        } else if (rows == MR && rsa == 1) {
            for (int64_t p = 0; p < kc; ++p) {
                const T* ac = a0 + p * csa;
#pragma GCC unroll 64
                for (int i = 0; i < MR; ++i) ap[p * MR + i] = ac[i];
            }
        } else {
            for (int64_t p = 0; p < kc; ++p)
                for (int i = 0; i < MR; ++i) ap[p * MR + i] = i < rows ? a0[i * rsa + p * csa] : T(0);
        }
    }
}

template <typename V, int NR>
void pack_b(int64_t kc, int64_t nc, const typename V::T* b, int64_t rsb, int64_t csb,
            typename V::T* bp, int64_t s0, int64_t s1) {
    using T = typename V::T;
    for (int64_t s = s0; s < s1; ++s) {
        const int64_t j0 = s * NR;
        const int64_t cols = nc - j0 < NR ? nc - j0 : NR;
        const T* b0 = b + j0 * csb;
        T* dst = bp + s * NR * kc;
        if (cols == NR && csb == 1) {
            for (int64_t p = 0; p < kc; ++p) {
                const T* br = b0 + p * rsb;
#pragma GCC unroll 64
                for (int j = 0; j < NR; ++j) dst[p * NR + j] = br[j];
            }
        } else if (cols == NR && rsb == 1) {
            // B transposed: each column is contiguous along k.
            for (int j = 0; j < NR; ++j) {
                const T* bc = b0 + j * csb;
                for (int64_t p = 0; p < kc; ++p) dst[p * NR + j] = bc[p];
            }
        } else {
            for (int64_t p = 0; p < kc; ++p)
                for (int j = 0; j < NR; ++j) dst[p * NR + j] = j < cols ? b0[p * rsb + j * csb] : T(0);
        }
    }
}

// Independent FMA chains, enough to cover latency x issue width on the cores we target
// (4 cycles x 2 pipes), few enough that chains plus operands fit in 16 registers (AVX2):
// a spill would measure the load/store units instead. Returns the flops done; the caller times it.
template <typename V>
double fma_loop(int64_t reps) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int CHAINS = 12;
    R acc[CHAINS];
#pragma GCC unroll 12
    for (int i = 0; i < CHAINS; ++i) acc[i] = V::set1(T(i));
    const R x = V::set1(T(0.999999)), y = V::set1(T(1e-7));
    for (int64_t r = 0; r < reps; ++r) {
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; ++i) acc[i] = V::fmadd(acc[i], x, y);
    }
    R sum = acc[0];
#pragma GCC unroll 12
    for (int i = 1; i < CHAINS; ++i) sum = V::mul(sum, acc[i]);
    T out[V::W];
    V::storeu(out, sum);
    volatile T sink = out[0];
    (void)sink;
    return double(reps) * CHAINS * V::W * 2;
}

template <typename V, int MR, int NV, int... M>
constexpr Microkernel<typename V::T> microkernel(std::integer_sequence<int, M...>) {
    return {MR, NV * V::W, {nullptr, &ukernel<V, M + 1, NV>...}, &pack_a<V, MR>,
            &pack_b<V, NV * V::W>, &fma_loop<V>};
}

template <typename V, int MR, int NV>
constexpr Microkernel<typename V::T> microkernel() {
    static_assert(MR <= kMaxMR, "raise kMaxMR");
    return microkernel<V, MR, NV>(std::make_integer_sequence<int, MR>{});
}

}  // namespace tile
}  // namespace fastgemm
