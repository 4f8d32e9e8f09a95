// AVX2 + FMA kernels (Haswell and later, Zen): compiled with -mavx2 -mfma only.
// fp32 6 x 16 and fp64 6 x 8: 12 ymm accumulators, 2 for the B row, 1 broadcast, the shape
// BLIS and OpenBLAS use on these cores (16 ymm registers in all). Skinny tiles 12 x 8 / 12 x 4:
// 12 accumulators, one B vector, one broadcast.
#include <immintrin.h>

#include "table.hpp"

namespace fastgemm {
namespace {

struct Avx2F32 {
    using T = float;
    using reg = __m256;
    using mask = __m256i;
    static constexpr int W = 8;
    static reg zero() { return _mm256_setzero_ps(); }
    static reg set1(T x) { return _mm256_set1_ps(x); }
    static reg loadu(const T* p) { return _mm256_loadu_ps(p); }
    static void storeu(T* p, reg r) { _mm256_storeu_ps(p, r); }
    static mask lanes(int n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static reg maskz_loadu(mask m, const T* p) { return _mm256_maskload_ps(p, m); }
    static void mask_storeu(T* p, mask m, reg r) { _mm256_maskstore_ps(p, m, r); }
    static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
    static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
};

struct Avx2F64 {
    using T = double;
    using reg = __m256d;
    using mask = __m256i;
    static constexpr int W = 4;
    static reg zero() { return _mm256_setzero_pd(); }
    static reg set1(T x) { return _mm256_set1_pd(x); }
    static reg loadu(const T* p) { return _mm256_loadu_pd(p); }
    static void storeu(T* p, reg r) { _mm256_storeu_pd(p, r); }
    static mask lanes(int n) { return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3)); }
    static reg maskz_loadu(mask m, const T* p) { return _mm256_maskload_pd(p, m); }
    static void mask_storeu(T* p, mask m, reg r) { _mm256_maskstore_pd(p, m, r); }
    static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_pd(a, b, c); }
    static reg mul(reg a, reg b) { return _mm256_mul_pd(a, b); }
};

// Small products in panels of 2 vectors: 4 x 2 accumulators plus 2 B vectors leave room in
// the 16 ymm registers (4 x 4 spilled); see docs/DESIGN.md, "Small products".
constexpr int kSmallPanel = 2;

}  // namespace

// The small-path cap was measured on Zen 3 ("Small products"); the other thresholds on Zen 4
// AVX-512 only; see docs/DESIGN.md, "Measured decisions".
constexpr KernelSet avx2_kernels{"avx2",
                                 "AVX2+FMA",
                                 &runs_avx2,
                                 Tuning{256, 128, int64_t(128) * 128 * 128, 16},
                                 kernels::kernel_table<Avx2F32, 6, 2, kSmallPanel>(),
                                 kernels::kernel_table<Avx2F64, 6, 2, kSmallPanel>(),
                                 kernels::kernel_table<Avx2F32, 12, 1>(),
                                 kernels::kernel_table<Avx2F64, 12, 1>()};

}  // namespace fastgemm
