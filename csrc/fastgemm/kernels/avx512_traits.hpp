// The AVX-512 vector traits the kernel files compiled with AVX-512 flags share: avx512.cpp
// (F/BW/VL/DQ), avx512bf16.cpp and avx512_vnni.cpp (the same plus BF16 / VNNI). Types in an
// anonymous namespace: each file that includes this gets its own, compiled with its own flags
// (see table.hpp). Included only from those kernel files.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ymm_transpose.hpp"

namespace fastgemm {
namespace {

// float32 in 256-bit registers with AVX-512VL masks: the vector width of 8-wide products (a
// stack of 8^3 items), where 16 lanes would leave half of every vector empty. Only what the
// small and narrow matrix-vector kernels use.
struct Avx512YmmF32 {
    using T = float;
    using reg = __m256;
    using mask = __mmask8;
    static constexpr int W = 8;
    static constexpr int kVectorRegs = 32;  // ymm0-31: dots' blocks (gemv.hpp)
    static reg zero() { return _mm256_setzero_ps(); }
    static reg set1(T x) { return _mm256_set1_ps(x); }
    static reg loadu(const T* p) { return _mm256_loadu_ps(p); }
    static void storeu(T* p, reg r) { _mm256_storeu_ps(p, r); }
    static mask lanes(int n) { return n >= W ? mask(0xFF) : n <= 0 ? mask(0) : mask((1u << n) - 1); }
    static reg maskz_loadu(mask m, const T* p) { return _mm256_maskz_loadu_ps(m, p); }
    static void mask_storeu(T* p, mask m, reg r) { _mm256_mask_storeu_ps(p, m, r); }
    // copy_columns' blocks, and 8^3 items' C^T in registers (small_stack_c_cols).
    [[gnu::always_inline]] static void transpose(reg r[8]) { transpose_ymm(r); }
    static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
    static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
    static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
    static reg held(reg r) {
        __asm__("" : "+v"(r));
        return r;
    }
    // Avx512F32's short dots (gemv.hpp, dots_in_half): ((r0 + r4) + (r2 + r6)) + ((r1 + r5) +
    // (r3 + r7)), and that tree on 8 registers at once, lane l the sum of v[kTreeOrder[l]].
    static T reduce(reg r) {
        const __m128 q = _mm_add_ps(_mm256_extractf128_ps(r, 1), _mm256_castps256_ps128(r));
        const __m128 e = _mm_add_ps(_mm_movehl_ps(q, q), q);
        return _mm_cvtss_f32(_mm_add_ss(_mm_movehdup_ps(e), e));
    }
    static constexpr int kTreeOrder[W] = {0, 2, 4, 6, 1, 3, 5, 7};
    template <int E>
    [[gnu::always_inline]] static void store_part(T* p, reg r, int s) {  // as Avx512F32's
        static_assert(E == 4);
        _mm_storeu_ps(p, s == 0 ? _mm256_castps256_ps128(r) : _mm256_extractf128_ps(r, 1));
    }
    [[gnu::always_inline]] static reg reduce_w(const reg* v) {
        reg u[4], w[2];
        for (int i = 0; i < 4; ++i)  // each register's halves added: v[2i] low, v[2i + 1] high
            u[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
                                 _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
        for (int i = 0; i < 2; ++i)
            w[i] = _mm256_add_ps(_mm256_shuffle_ps(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm256_shuffle_ps(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
        return _mm256_add_ps(_mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
};

// float64 in 256-bit registers with AVX-512VL masks: Avx512F64's half (kernels/gemv.hpp,
// HalfOf). Only what the small and narrow matrix-vector kernels use.
struct Avx512YmmF64 {
    using T = double;
    using reg = __m256d;
    using mask = __mmask8;
    static constexpr int W = 4;
    static reg zero() { return _mm256_setzero_pd(); }
    static reg set1(T x) { return _mm256_set1_pd(x); }
    static reg loadu(const T* p) { return _mm256_loadu_pd(p); }
    static void storeu(T* p, reg r) { _mm256_storeu_pd(p, r); }
    static mask lanes(int n) { return n >= W ? mask(0xF) : n <= 0 ? mask(0) : mask((1u << n) - 1); }
    static reg maskz_loadu(mask m, const T* p) { return _mm256_maskz_loadu_pd(m, p); }
    static void mask_storeu(T* p, mask m, reg r) { _mm256_mask_storeu_pd(p, m, r); }
    [[gnu::always_inline]] static void transpose(reg r[4]) { transpose_ymm(r); }
    static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_pd(a, b, c); }
    static reg mul(reg a, reg b) { return _mm256_mul_pd(a, b); }
    static reg add(reg a, reg b) { return _mm256_add_pd(a, b); }
    static reg held(reg r) {
        __asm__("" : "+v"(r));
        return r;
    }
};

struct Avx512F32 {
    using T = float;
    using reg = __m512;
    using half = Avx512YmmF32;  // see kernels/small.hpp, HalfOf
    using mask = __mmask16;
    static constexpr int W = 16;
    static constexpr int kVectorRegs = 32;  // zmm0-31: stream_rows_step (gemv.hpp)
    // Few-row small products: B's rows 8 steps ahead (16 lost; docs/DESIGN.md, "Small products").
    static constexpr int kSmallPrefetchB = 8;
    // Lane picks (lanes.hpp: short dots, narrow column copies): lanes from two registers.
    static constexpr int kLanePicksMaxK = 8;
    // Dots of 4 short rows over 32-64 k steps in 256-bit registers (gemv.hpp, dots_in_half):
    // Zen 4 runs two 256-bit FMAs a cycle against one 512-bit one, and a block's 16 sums take half
    // the shuffles. Switched per call, 200-item x @ W.T stacks with 4 columns, fastgemm / NumPy:
    // 59 x 4 x 44 0.87x -> 0.95x, 14 x 4 x 52 0.92x -> 1.07x, 46 x 4 x 61 0.84x -> 0.92x, 4 rows:
    // 4 x 40 x 50 0.90x -> 1.03x (ten random shapes, 0.87-0.97 of the time each); 2-3 rows or
    // columns were mixed (10 x 2 x 48 1.16x the time), past 64 even or slower (30 x 4 x 120 1.11x),
    // float64 lost 26%.
    static constexpr int64_t kDotsHalfMinK = 32, kDotsHalfMaxK = 64;
    using index = __m512i;
    static index make_index(const int* lane) { return _mm512_loadu_si512(lane); }
    static reg permute2(reg a, index ix, reg b) { return _mm512_permutex2var_ps(a, ix, b); }
    static reg blend(mask m, reg a, reg b) { return _mm512_mask_blend_ps(m, a, b); }
    static reg zero() { return _mm512_setzero_ps(); }
    static reg set1(T x) { return _mm512_set1_ps(x); }
    static reg loadu(const T* p) { return _mm512_loadu_ps(p); }
    // The same vector as loadu, from two 256-bit loads (kernels/gemv.hpp, HalvesLoad); the asm
    // keeps GCC from merging them back into one 512-bit load.
    static reg loadu_halves(const T* p) {
        __m256 lo = _mm256_loadu_ps(p);
        __asm__("" : "+v"(lo));
        return _mm512_insertf32x8(_mm512_castps256_ps512(lo), _mm256_loadu_ps(p + 8), 1);
    }
    static void storeu(T* p, reg r) { _mm512_storeu_ps(p, r); }
    static mask lanes(int n) { return n >= W ? mask(0xFFFF) : n <= 0 ? mask(0) : mask((1u << n) - 1); }
    static reg maskz_loadu(mask m, const T* p) { return _mm512_maskz_loadu_ps(m, p); }
    static void mask_storeu(T* p, mask m, reg r) { _mm512_mask_storeu_ps(p, m, r); }
    // W rows in registers become W columns (r[c] holds row i's element c in lane i): packing
    // row-major A is a transpose; see docs/DESIGN.md, "Packing transposes".
    [[gnu::always_inline]] static void transpose(reg r[16]) {
        reg t[16];
        for (int i = 0; i < 8; ++i) {
            t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        reg s[16];  // s[4g + e], lane L: rows 4g..4g+3 at column 4L + e
        for (int g = 0; g < 4; ++g) {
            s[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(1, 0, 1, 0));
            s[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(3, 2, 3, 2));
            s[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(1, 0, 1, 0));
            s[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(3, 2, 3, 2));
        }
        for (int e = 0; e < 4; ++e) {  // 4x4 transpose of 128-bit lanes across s[e], s[4+e], ...
            const reg a0 = _mm512_shuffle_f32x4(s[e], s[4 + e], _MM_SHUFFLE(1, 0, 1, 0));
            const reg a1 = _mm512_shuffle_f32x4(s[e], s[4 + e], _MM_SHUFFLE(3, 2, 3, 2));
            const reg a2 = _mm512_shuffle_f32x4(s[8 + e], s[12 + e], _MM_SHUFFLE(1, 0, 1, 0));
            const reg a3 = _mm512_shuffle_f32x4(s[8 + e], s[12 + e], _MM_SHUFFLE(3, 2, 3, 2));
            r[0 + e] = _mm512_shuffle_f32x4(a0, a2, _MM_SHUFFLE(2, 0, 2, 0));
            r[4 + e] = _mm512_shuffle_f32x4(a0, a2, _MM_SHUFFLE(3, 1, 3, 1));
            r[8 + e] = _mm512_shuffle_f32x4(a1, a3, _MM_SHUFFLE(2, 0, 2, 0));
            r[12 + e] = _mm512_shuffle_f32x4(a1, a3, _MM_SHUFFLE(3, 1, 3, 1));
        }
    }
    static reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
    static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
    // The lanes' sum as a tree in registers, dots' reduction: lane l + W/2 added to lane l, then
    // the same on those W/2 sums, ... (GCC's _mm512_reduce_add_ps tree), written out because
    // tree_dots (gemv.hpp) gives the same bits by this tree, which no compiler's order may decide.
    static T reduce(reg r) {
        const __m256 h = _mm256_add_ps(_mm512_extractf32x8_ps(r, 1), _mm512_castps512_ps256(r));
        const __m128 q = _mm_add_ps(_mm256_extractf128_ps(h, 1), _mm256_castps256_ps128(h));
        const __m128 e = _mm_add_ps(_mm_movehl_ps(q, q), q);
        return _mm_cvtss_f32(_mm_add_ss(_mm_movehdup_ps(e), e));
    }
    // reduce on W registers at once (dots_block): lane l of the result is the sum of
    // v[kTreeOrder[l]] by reduce's tree, each level a shuffle of two registers with an immediate;
    // 15 adds and 30 shuffles for 16 sums where reduce takes 4 adds and 4 shuffles a sum. Always
    // inlined: with its inputs placed by kTreeOrder, GCC called it out of line with all 16
    // registers in memory (29% of the time).
    static constexpr int kTreeOrder[W] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
    // Lanes [s, s + E) of r to p where E elements are a 128- or 256-bit part of it (s a multiple
    // of E, a constant once the caller's loop unrolls): dots_block's lines of C in one plain
    // store, where a masked 512-bit store of E lanes cost 3-12% more of the dots' time (see
    // docs/DESIGN.md, "Dot products").
    template <int E>
    [[gnu::always_inline]] static void store_part(T* p, reg r, int s) {
        static_assert(E == 4);
        _mm_storeu_ps(p, s == 0   ? _mm512_castps512_ps128(r)
                         : s == 4 ? _mm512_extractf32x4_ps(r, 1)
                         : s == 8 ? _mm512_extractf32x4_ps(r, 2)
                                  : _mm512_extractf32x4_ps(r, 3));
    }
    [[gnu::always_inline]] static reg reduce_w(const reg* v) {
        reg u[8], w[4], x[2];
        for (int i = 0; i < 8; ++i)  // lane l + 8 to lane l: the two registers' halves side by side
            u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
        for (int i = 0; i < 4; ++i)  // + 4: v[4i + t] in 128-bit lane t
            w[i] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
        for (int i = 0; i < 2; ++i)  // + 2, within 128-bit lanes
            x[i] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * i], w[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(w[2 * i], w[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
        return _mm512_add_ps(_mm512_shuffle_ps(x[0], x[1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_ps(x[0], x[1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
    // r as it is, but the compiler must hold it in a register: GCC otherwise folds a loaded
    // vector that several FMAs read into each of them, one load per FMA (dots: 1.3-1.5x slower).
    static reg held(reg r) {
        __asm__("" : "+v"(r));
        return r;
    }
    // For the epilogue (kernels/epilogue.hpp). Masked forms with a given source: GCC 12 warns
    // on the unmasked ones' undefined source.
    static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
    static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
    static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
    static reg max(reg a, reg b) { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
    static reg min(reg a, reg b) { return _mm512_mask_min_ps(a, 0xFFFF, a, b); }
    static reg abs(reg a) {
        return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));
    }
    static reg blend_lt(reg a, reg b, reg x, reg y) {
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
    }
    static reg pow2i(reg n) {
        const __m512i e = _mm512_castps_si512(_mm512_add_ps(n, _mm512_set1_ps(12582912.0f + 127.0f)));
        return _mm512_castsi512_ps(_mm512_mask_slli_epi32(e, 0xFFFF, e, 23));
    }
};

struct Avx512F64 {
    using T = double;
    using reg = __m512d;
    using half = Avx512YmmF64;  // see kernels/small.hpp, HalfOf
    using mask = __mmask8;
    static constexpr int W = 8;
    static constexpr int kVectorRegs = 32;
    static constexpr int kSmallPrefetchB = 8;  // as Avx512F32's
    static constexpr int kLanePicksMaxK = 8;   // as Avx512F32's
    // dots' blocks out of line (gemv.hpp, dots_block_apart): float64 4 x 512 x 512 NT 4.45x ->
    // 5.07x NumPy, 12 x 12 x 64 stacks 0.82x -> 0.92x.
    static constexpr bool kDotsBlockApart = true;
    // x.T @ W.T stack items from k = 12 as C^T straight from registers (small.hpp,
    // transposed_min_k): 200 x (49 x 9 x 34) 0.73 -> 0.90x NumPy; shorter k lost up to 20% to
    // the transposes (17 x 28 x 11 1.13 -> 0.90x). Not for float32, whose 8-lane halves lost
    // (59 x 42 x 17 1.01 -> 0.93x), nor AVX2 (float64 57 x 39 x 11 0.97 -> 0.81x).
    static constexpr int64_t kTransposedMinK = 12;
    using index = __m512i;
    static index make_index(const int* lane) {
        int64_t q[W];
        for (int l = 0; l < W; ++l) q[l] = lane[l];
        return _mm512_loadu_si512(q);
    }
    static reg permute2(reg a, index ix, reg b) { return _mm512_permutex2var_pd(a, ix, b); }
    static reg blend(mask m, reg a, reg b) { return _mm512_mask_blend_pd(m, a, b); }
    static reg zero() { return _mm512_setzero_pd(); }
    static reg set1(T x) { return _mm512_set1_pd(x); }
    static reg loadu(const T* p) { return _mm512_loadu_pd(p); }
    // As Avx512F32::loadu_halves.
    static reg loadu_halves(const T* p) {
        __m256d lo = _mm256_loadu_pd(p);
        __asm__("" : "+v"(lo));
        return _mm512_insertf64x4(_mm512_castpd256_pd512(lo), _mm256_loadu_pd(p + 4), 1);
    }
    static void storeu(T* p, reg r) { _mm512_storeu_pd(p, r); }
    static mask lanes(int n) { return n >= W ? mask(0xFF) : n <= 0 ? mask(0) : mask((1u << n) - 1); }
    static reg maskz_loadu(mask m, const T* p) { return _mm512_maskz_loadu_pd(m, p); }
    static void mask_storeu(T* p, mask m, reg r) { _mm512_mask_storeu_pd(p, m, r); }
    // As Avx512F32::transpose, for 8 rows of 8.
    [[gnu::always_inline]] static void transpose(reg r[8]) {
        reg t[8];  // t[2g + e], lane L: rows 2g, 2g+1 at column 2L + e
        for (int g = 0; g < 4; ++g) {
            t[2 * g] = _mm512_unpacklo_pd(r[2 * g], r[2 * g + 1]);
            t[2 * g + 1] = _mm512_unpackhi_pd(r[2 * g], r[2 * g + 1]);
        }
        for (int e = 0; e < 2; ++e) {
            const reg a0 = _mm512_shuffle_f64x2(t[e], t[2 + e], _MM_SHUFFLE(1, 0, 1, 0));
            const reg a1 = _mm512_shuffle_f64x2(t[e], t[2 + e], _MM_SHUFFLE(3, 2, 3, 2));
            const reg a2 = _mm512_shuffle_f64x2(t[4 + e], t[6 + e], _MM_SHUFFLE(1, 0, 1, 0));
            const reg a3 = _mm512_shuffle_f64x2(t[4 + e], t[6 + e], _MM_SHUFFLE(3, 2, 3, 2));
            r[0 + e] = _mm512_shuffle_f64x2(a0, a2, _MM_SHUFFLE(2, 0, 2, 0));
            r[2 + e] = _mm512_shuffle_f64x2(a0, a2, _MM_SHUFFLE(3, 1, 3, 1));
            r[4 + e] = _mm512_shuffle_f64x2(a1, a3, _MM_SHUFFLE(2, 0, 2, 0));
            r[6 + e] = _mm512_shuffle_f64x2(a1, a3, _MM_SHUFFLE(3, 1, 3, 1));
        }
    }
    static reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_pd(a, b, c); }
    static reg mul(reg a, reg b) { return _mm512_mul_pd(a, b); }
    static T reduce(reg r) {  // Avx512F32's tree
        const __m256d h = _mm256_add_pd(_mm512_extractf64x4_pd(r, 1), _mm512_castpd512_pd256(r));
        const __m128d q = _mm_add_pd(_mm256_extractf128_pd(h, 1), _mm256_castpd256_pd128(h));
        return _mm_cvtsd_f64(_mm_add_sd(_mm_unpackhi_pd(q, q), q));
    }
    static constexpr int kTreeOrder[W] = {0, 4, 1, 5, 2, 6, 3, 7};  // as Avx512F32's
    template <int E>
    [[gnu::always_inline]] static void store_part(T* p, reg r, int s) {  // as Avx512F32's
        static_assert(E == 2 || E == 4);
        if constexpr (E == 4) _mm256_storeu_pd(p, s == 0 ? _mm512_castpd512_pd256(r) : _mm512_extractf64x4_pd(r, 1));
        else
            _mm_storeu_pd(p, s == 0   ? _mm512_castpd512_pd128(r)
                             : s == 2 ? _mm512_extractf64x2_pd(r, 1)
                             : s == 4 ? _mm512_extractf64x2_pd(r, 2)
                                      : _mm512_extractf64x2_pd(r, 3));
    }
    [[gnu::always_inline]] static reg reduce_w(const reg* v) {
        reg u[4], w[2];
        for (int i = 0; i < 4; ++i)  // lane l + 4 to lane l
            u[i] = _mm512_add_pd(_mm512_shuffle_f64x2(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_f64x2(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
        for (int i = 0; i < 2; ++i)  // + 2: v[4i + t] in 128-bit lane t
            w[i] = _mm512_add_pd(_mm512_shuffle_f64x2(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f64x2(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
        return _mm512_add_pd(_mm512_unpacklo_pd(w[0], w[1]), _mm512_unpackhi_pd(w[0], w[1]));
    }
    static reg held(reg r) {
        __asm__("" : "+v"(r));
        return r;
    }
    // For the epilogue (kernels/epilogue.hpp).
    static reg add(reg a, reg b) { return _mm512_add_pd(a, b); }
    static reg sub(reg a, reg b) { return _mm512_sub_pd(a, b); }
    static reg div(reg a, reg b) { return _mm512_div_pd(a, b); }
    static reg max(reg a, reg b) { return _mm512_mask_max_pd(a, 0xFF, a, b); }
    static reg min(reg a, reg b) { return _mm512_mask_min_pd(a, 0xFF, a, b); }
    static reg abs(reg a) {
        return _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(a), _mm512_set1_epi64(0x7fffffffffffffff)));
    }
    static reg blend_lt(reg a, reg b, reg x, reg y) {
        return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, b, _CMP_LT_OQ), y, x);
    }
    static reg pow2i(reg n) {
        const __m512i e = _mm512_castpd_si512(_mm512_add_pd(n, _mm512_set1_pd(6755399441055744.0 + 1023.0)));
        return _mm512_castsi512_pd(_mm512_mask_slli_epi64(e, 0xFF, e, 52));
    }
};

// int32 accumulators on zmm for the int8 traits (kernels/int8.hpp), with the float32 traits of
// their dequantising store; each file adds its packing and its dot step.
struct Avx512I32 {
    using F = Avx512F32;
    using reg = __m512i;
    static constexpr int W = 16;
    static reg zero() { return _mm512_setzero_si512(); }
    // A row's k-group (4 bytes) in every 32-bit lane.
    static reg bcast32(const void* p) {
        int32_t group;
        std::memcpy(&group, p, sizeof group);
        return _mm512_set1_epi32(group);
    }
    static reg add(reg x, reg y) { return _mm512_add_epi32(x, y); }
    static reg loadu(const void* p) { return _mm512_loadu_si512(p); }
    static void storeu(void* p, reg r) { _mm512_storeu_si512(p, r); }
    static reg maskz_loadu(__mmask16 m, const void* p) { return _mm512_maskz_loadu_epi32(m, p); }
    static void mask_storeu(void* p, __mmask16 m, reg r) { _mm512_mask_storeu_epi32(p, m, r); }
    static __m512 to_float(reg r) { return _mm512_cvtepi32_ps(r); }

    // Matrix-vector (int8_gemv.hpp), for the vpmaddwd and the VNNI tiles alike: vpmaddwd on the
    // matrix as stored (memory-bound: vpdpbusd would need a 4-row byte transpose, and int8 x a
    // +128 correction). Rows p and p + 1 interleaved by bytes, 32 columns a step: the 64-bit
    // quarters reordered (0, 2, 1, 3) so the in-lane unpacks give columns 0-15 and 16-31 in order.
    static constexpr int GC = 32, GD = 32;
    struct xq {
        __m512i x01, x23;
    };
    static __m512i pair(int32_t lo, int32_t hi) {
        return _mm512_set1_epi32(int32_t(uint32_t(lo & 0xffff) | uint32_t(hi) << 16));
    }
    static xq x4(int32_t x0, int32_t x1, int32_t x2, int32_t x3) { return {pair(x0, x1), pair(x2, x3)}; }
    static __m256i load32(const int8_t* p) {
        return _mm256_permute4x64_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                                        _MM_SHUFFLE(3, 1, 2, 0));
    }
    static void rows4(uint32_t* t, const int8_t* r0, const int8_t* r1, const int8_t* r2, const int8_t* r3,
                      const xq& x) {
        const __m256i a0 = load32(r0), a1 = load32(r1), a2 = load32(r2), a3 = load32(r3);
        const __m512i lo =
            _mm512_add_epi32(_mm512_madd_epi16(_mm512_cvtepi8_epi16(_mm256_unpacklo_epi8(a0, a1)), x.x01),
                             _mm512_madd_epi16(_mm512_cvtepi8_epi16(_mm256_unpacklo_epi8(a2, a3)), x.x23));
        const __m512i hi =
            _mm512_add_epi32(_mm512_madd_epi16(_mm512_cvtepi8_epi16(_mm256_unpackhi_epi8(a0, a1)), x.x01),
                             _mm512_madd_epi16(_mm512_cvtepi8_epi16(_mm256_unpackhi_epi8(a2, a3)), x.x23));
        _mm512_storeu_si512(t, _mm512_add_epi32(_mm512_loadu_si512(t), lo));
        _mm512_storeu_si512(t + 16, _mm512_add_epi32(_mm512_loadu_si512(t + 16), hi));
    }
    using dreg = __m512i;
    static dreg dzero() { return _mm512_setzero_si512(); }
    template <typename A>
    static __m512i widen_x(const A* p) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        if constexpr (std::is_same_v<A, uint8_t>) return _mm512_cvtepu8_epi16(v);
        else return _mm512_cvtepi8_epi16(v);
    }
    static dreg dot_row(dreg acc, const int8_t* row, __m512i xw) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
        return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_cvtepi8_epi16(v), xw));
    }
    // Halves added with vpaddd, which wraps: GCC's _mm512_reduce_add_epi32 adds as signed int
    // in C, an overflow UBSan reports for the wrapping int32 sums this must give.
    static uint32_t hsum(dreg acc) {
        const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
        const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        const __m128i s2 = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
        return uint32_t(_mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, _MM_SHUFFLE(2, 3, 0, 1)))));
    }
};

}  // namespace
}  // namespace fastgemm
