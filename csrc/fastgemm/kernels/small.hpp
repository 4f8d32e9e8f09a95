// Whole small products without packing: rows of C held in registers over all of k.
// Included only from kernels/*.cpp (through table.hpp). Every template takes a vector-traits
// type V, and each kernel file's V is a distinct type in an anonymous namespace, so
// instantiations compiled with different ISA flags never share a symbol (the linker could
// otherwise keep an AVX-512 copy and hand it to baseline code).
#pragma once

#include <cstdint>

#include "../kernel.hpp"

namespace fastgemm {
namespace kernels {

// RG rows of C at a time: RG x NV independent accumulators hide the FMA latency that a
// single row's chain over k would expose, and each B vector loaded serves RG rows.
template <typename V, int RG, int NV>
void small_rows(int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
                const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc,
                const typename V::mask* mk) {
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
void small_nv(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
              const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc) {
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
void small(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
           const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc) {
    static_assert(kSmallMaxVectors == 4, "one case per vector count");
    switch ((n + V::W - 1) / V::W) {
        case 1: return small_nv<V, 1>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
        case 2: return small_nv<V, 2>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
        case 3: return small_nv<V, 3>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
        default: return small_nv<V, 4>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
    }
}

}  // namespace kernels
}  // namespace fastgemm
