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

// y += sum_p x[p] M[p, :], four rows of M at a time so y, kept in L1 in chunks, is loaded and
// stored once per four rows; each row of M is one sequential stream. Per element of y the
// sum runs over p in order.
template <typename V>
void gemv_rows(int64_t n, int64_t k, typename V::T alpha, const typename V::T* x, int64_t incx,
               const typename V::T* mat, int64_t ldm, typename V::T beta, typename V::T* y) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W;
    // 16 KiB of partial sums, half of L1: 8 KiB ran 8.5 GF/s on a 1 x 4096 x 4096 fp32
    // product against 11.3 (each row of the matrix read in two halves), 24 KiB no better.
    constexpr int64_t kChunk = 16384 / int64_t(sizeof(T));
    alignas(64) T t[kChunk];
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
        const int64_t len = n - j0 < kChunk ? n - j0 : kChunk;
        const int64_t full = len / W * W;
        const typename V::mask tail = V::lanes(int(len - full));
        for (int64_t j = 0; j < len; ++j) t[j] = T(0);
        const T* m0 = mat + j0;
        int64_t p = 0;
        for (; p + 4 <= k; p += 4) {
            const R x0 = V::set1(x[p * incx]), x1 = V::set1(x[(p + 1) * incx]),
                    x2 = V::set1(x[(p + 2) * incx]), x3 = V::set1(x[(p + 3) * incx]);
            const T *r0 = m0 + p * ldm, *r1 = r0 + ldm, *r2 = r1 + ldm, *r3 = r2 + ldm;
            for (int64_t j = 0; j < full; j += W) {
                R acc = V::loadu(t + j);
                acc = V::fmadd(x0, V::loadu(r0 + j), acc);
                acc = V::fmadd(x1, V::loadu(r1 + j), acc);
                acc = V::fmadd(x2, V::loadu(r2 + j), acc);
                acc = V::fmadd(x3, V::loadu(r3 + j), acc);
                V::storeu(t + j, acc);
            }
            if (full < len) {
                R acc = V::loadu(t + full);
                acc = V::fmadd(x0, V::maskz_loadu(tail, r0 + full), acc);
                acc = V::fmadd(x1, V::maskz_loadu(tail, r1 + full), acc);
                acc = V::fmadd(x2, V::maskz_loadu(tail, r2 + full), acc);
                acc = V::fmadd(x3, V::maskz_loadu(tail, r3 + full), acc);
                V::storeu(t + full, acc);
            }
        }
        for (; p < k; ++p) {
            const R xp = V::set1(x[p * incx]);
            const T* r = m0 + p * ldm;
            for (int64_t j = 0; j < full; j += W) V::storeu(t + j, V::fmadd(xp, V::loadu(r + j), V::loadu(t + j)));
            if (full < len) V::storeu(t + full, V::fmadd(xp, V::maskz_loadu(tail, r + full), V::loadu(t + full)));
        }
        T* yc = y + j0;
        for (int64_t j = 0; j < len; ++j) yc[j] = beta == T(0) ? alpha * t[j] : alpha * t[j] + beta * yc[j];
    }
}

// y[j] = dot(x, M[j, :]) for four rows of M at a time (x loaded once per four dots); each dot
// keeps W partial sums and adds them up at the end.
template <typename V>
void gemv_dots(int64_t n, int64_t k, typename V::T alpha, const typename V::T* x,
               const typename V::T* mat, int64_t ldm, typename V::T beta, typename V::T* y,
               int64_t incy) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W;
    const int64_t full = k / W * W;
    const typename V::mask tail = V::lanes(int(k - full));
    auto finish = [&](R acc, int64_t j) {
        T lanes[W];
        V::storeu(lanes, acc);
        T sum = T(0);
        for (int l = 0; l < W; ++l) sum += lanes[l];
        T& yj = y[j * incy];
        yj = beta == T(0) ? alpha * sum : alpha * sum + beta * yj;
    };
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const T *r0 = mat + j * ldm, *r1 = r0 + ldm, *r2 = r1 + ldm, *r3 = r2 + ldm;
        R a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
        for (int64_t p = 0; p < full; p += W) {
            const R xv = V::loadu(x + p);
            a0 = V::fmadd(V::loadu(r0 + p), xv, a0);
            a1 = V::fmadd(V::loadu(r1 + p), xv, a1);
            a2 = V::fmadd(V::loadu(r2 + p), xv, a2);
            a3 = V::fmadd(V::loadu(r3 + p), xv, a3);
        }
        if (full < k) {
            const R xv = V::maskz_loadu(tail, x + full);
            a0 = V::fmadd(V::maskz_loadu(tail, r0 + full), xv, a0);
            a1 = V::fmadd(V::maskz_loadu(tail, r1 + full), xv, a1);
            a2 = V::fmadd(V::maskz_loadu(tail, r2 + full), xv, a2);
            a3 = V::fmadd(V::maskz_loadu(tail, r3 + full), xv, a3);
        }
        finish(a0, j);
        finish(a1, j + 1);
        finish(a2, j + 2);
        finish(a3, j + 3);
    }
    for (; j < n; ++j) {
        const T* r = mat + j * ldm;
        R acc = V::zero();
        for (int64_t p = 0; p < full; p += W) acc = V::fmadd(V::loadu(r + p), V::loadu(x + p), acc);
        if (full < k) acc = V::fmadd(V::maskz_loadu(tail, r + full), V::maskz_loadu(tail, x + full), acc);
        finish(acc, j);
    }
}

// RG rows of C at a time: RG x NV independent accumulators hide the FMA latency that a
// single row's chain over k would expose, and each B vector loaded serves RG rows.
template <typename V, int RG, int NV>
void small_rows(int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
                const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c,
                int64_t rsc, const typename V::mask* mk) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W;
    R acc[RG][NV];
#pragma GCC unroll 4
    for (int r = 0; r < RG; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[r][j] = V::zero();
    for (int64_t p = 0; p < k; ++p) {
        const T* bp = b + p * rsb;
        R bv[NV];
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) bv[j] = V::maskz_loadu(mk[j], bp + j * W);
#pragma GCC unroll 4
        for (int r = 0; r < RG; ++r) {
            const R av = V::set1(a[r * rsa + p * csa]);
#pragma GCC unroll 4
            for (int j = 0; j < NV; ++j) acc[r][j] = V::fmadd(av, bv[j], acc[r][j]);
        }
    }
    const R va = V::set1(alpha), vb = V::set1(beta);
#pragma GCC unroll 4
    for (int r = 0; r < RG; ++r) {
        T* cr = c + r * rsc;
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) {
            R x = V::mul(acc[r][j], va);
            if (beta != T(0)) x = V::fmadd(vb, V::maskz_loadu(mk[j], cr + j * W), x);
            V::mask_storeu(cr + j * W, mk[j], x);
        }
    }
}

template <typename V, int NV>
void small_nv(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a,
              int64_t rsa, int64_t csa, const typename V::T* b, int64_t rsb, typename V::T beta,
              typename V::T* c, int64_t rsc) {
    typename V::mask mk[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) mk[j] = V::lanes(int(n - j * V::W));
    int64_t i = 0;
    for (; i + 4 <= m; i += 4)
        small_rows<V, 4, NV>(k, alpha, a + i * rsa, rsa, csa, b, rsb, beta, c + i * rsc, rsc, mk);
    switch (m - i) {
        case 3: return small_rows<V, 3, NV>(k, alpha, a + i * rsa, rsa, csa, b, rsb, beta, c + i * rsc, rsc, mk);
        case 2: return small_rows<V, 2, NV>(k, alpha, a + i * rsa, rsa, csa, b, rsb, beta, c + i * rsc, rsc, mk);
        case 1: return small_rows<V, 1, NV>(k, alpha, a + i * rsa, rsa, csa, b, rsb, beta, c + i * rsc, rsc, mk);
        default: return;
    }
}

// The C row is held in as few vectors as cover n (at most kSmallMaxVectors).
template <typename V>
void small(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a,
           int64_t rsa, int64_t csa, const typename V::T* b, int64_t rsb, typename V::T beta,
           typename V::T* c, int64_t rsc) {
    static_assert(kSmallMaxVectors == 4, "one case per vector count");
    switch ((n + V::W - 1) / V::W) {
        case 1: return small_nv<V, 1>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
        case 2: return small_nv<V, 2>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
        case 3: return small_nv<V, 3>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
        default: return small_nv<V, 4>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
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

template <typename V, int M, int... N>
constexpr TileRow<typename V::T> tile_row(std::integer_sequence<int, N...>) {
    return {{nullptr, &ukernel<V, M, N + 1>...}};
}

template <typename V, int MR, int NV, int... M>
constexpr Microkernel<typename V::T> microkernel(std::integer_sequence<int, M...>) {
    return {MR, NV * V::W, V::W,
            {TileRow<typename V::T>{}, tile_row<V, M + 1>(std::make_integer_sequence<int, NV>{})...},
            &pack_a<V, MR>,
            &pack_b<V, NV * V::W>, &gemv_rows<V>, &gemv_dots<V>, &small<V>, &fma_loop<V>};
}

template <typename V, int MR, int NV>
constexpr Microkernel<typename V::T> microkernel() {
    static_assert(MR <= kMaxMR && NV <= kMaxNV, "raise kMaxMR / kMaxNV");
    return microkernel<V, MR, NV>(std::make_integer_sequence<int, MR>{});
}

}  // namespace tile
}  // namespace fastgemm
