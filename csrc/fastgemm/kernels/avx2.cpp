// AVX2 + FMA kernels (Haswell and later, Zen): compiled with -mavx2 -mfma -mf16c only (F16C
// came with or before AVX2 on every Intel and AMD core; dispatch checks all three).
// fp32 6 x 16 and fp64 6 x 8: 12 ymm accumulators, 2 for the B row, 1 broadcast, the shape
// BLIS and OpenBLAS use on these cores (16 ymm registers in all). B is always packed, so the
// skinny tables are the main ones (see the Tuning below).
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "int8.hpp"
#include "table.hpp"
#include "ymm_transpose.hpp"

namespace fastgemm {
namespace {

// The live lanes of a partial vector at C's right edge, always the first n: the vmaskmov mask
// for loads, and n for stores, which go out in 4-, 2- and 1-lane pieces. A vmaskmov store is
// microcoded on AMD cores; see docs/DESIGN.md, "Masked stores".
struct Lanes {
    __m256i bits;
    int n;
};
template <int W>
Lanes first_lanes(int n) {
    n = n < 0 ? 0 : n > W ? W : n;
    if constexpr (W == 8)
        return {_mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), n};
    else return {_mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3)), n};
}
// The first n 32-bit lanes of r at p (n in 0..8).
inline void store_first(void* p, int n, __m256i r) {
    auto* q = static_cast<char*>(p);
    if (n == 8) return _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), r);
    __m128i x = _mm256_castsi256_si128(r);
    if (n & 4) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q), x);
        x = _mm256_extracti128_si256(r, 1);
        q += 16;
    }
    if (n & 2) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(q), x);
        x = _mm_srli_si128(x, 8);
        q += 8;
    }
    if (n & 1) _mm_storeu_si32(q, x);
}

struct Avx2F32 {
    using T = float;
    using reg = __m256;
    using mask = Lanes;
    static constexpr int W = 8;
    // The B sliver streams from L2 past the A sliver held in L1: its row 8 steps (512 bytes)
    // ahead; see docs/DESIGN.md, "Microkernel prefetch".
    static constexpr int kPrefetchB = 8;
    static reg zero() { return _mm256_setzero_ps(); }
    static reg set1(T x) { return _mm256_set1_ps(x); }
    static reg loadu(const T* p) { return _mm256_loadu_ps(p); }
    static void storeu(T* p, reg r) { _mm256_storeu_ps(p, r); }
    static mask lanes(int n) { return first_lanes<W>(n); }
    static reg maskz_loadu(mask m, const T* p) { return _mm256_maskload_ps(p, m.bits); }
    static void mask_storeu(T* p, mask m, reg r) { store_first(p, m.n, _mm256_castps_si256(r)); }
    // 8 rows in registers become 8 columns (r[c] holds row i's element c in lane i): packing
    // row-major A is a transpose; see docs/DESIGN.md, "Packing transposes".
    [[gnu::always_inline]] static void transpose(reg r[8]) { transpose_ymm(r); }
    static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
    static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
    // The lanes' sum as a tree in registers (halves, then quarters, ...): dots' reduction.
    static T reduce(reg r) {
        const __m128 h = _mm_add_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1));
        const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
        return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
    }
    // r as it is, but the compiler must hold it in a register: GCC otherwise folds a loaded
    // vector that several FMAs read into each of them, one load per FMA (dots: 1.3-1.5x slower).
    static reg held(reg r) {
        __asm__("" : "+x"(r));
        return r;
    }
    // For the epilogue (kernels/epilogue.hpp).
    static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
    static reg sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
    static reg div(reg a, reg b) { return _mm256_div_ps(a, b); }
    static reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
    static reg min(reg a, reg b) { return _mm256_min_ps(a, b); }
    static reg abs(reg a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
    static reg blend_lt(reg a, reg b, reg x, reg y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
    static reg pow2i(reg n) {
        const __m256i e = _mm256_castps_si256(_mm256_add_ps(n, _mm256_set1_ps(12582912.0f + 127.0f)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
    }
};

struct Avx2F64 {
    using T = double;
    using reg = __m256d;
    using mask = Lanes;
    static constexpr int W = 4;
    static constexpr int kPrefetchB = 8;
    // A sliver of 6 x 320 doubles (15 KiB) stays in L1 beside the streaming B sliver; at the
    // model's 512 (24 KiB) it did not; see docs/DESIGN.md, "KC depth".
    static constexpr int64_t kMaxKC = 320;
    static reg zero() { return _mm256_setzero_pd(); }
    static reg set1(T x) { return _mm256_set1_pd(x); }
    static reg loadu(const T* p) { return _mm256_loadu_pd(p); }
    static void storeu(T* p, reg r) { _mm256_storeu_pd(p, r); }
    static mask lanes(int n) { return first_lanes<W>(n); }
    static reg maskz_loadu(mask m, const T* p) { return _mm256_maskload_pd(p, m.bits); }
    static void mask_storeu(T* p, mask m, reg r) { store_first(p, 2 * m.n, _mm256_castpd_si256(r)); }
    // As Avx2F32::transpose, for 4 rows of 4.
    [[gnu::always_inline]] static void transpose(reg r[4]) { transpose_ymm(r); }
    static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_pd(a, b, c); }
    static reg mul(reg a, reg b) { return _mm256_mul_pd(a, b); }
    static T reduce(reg r) {
        const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(r), _mm256_extractf128_pd(r, 1));
        return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
    }
    static reg held(reg r) {
        __asm__("" : "+x"(r));
        return r;
    }
    // For the epilogue (kernels/epilogue.hpp).
    static reg add(reg a, reg b) { return _mm256_add_pd(a, b); }
    static reg sub(reg a, reg b) { return _mm256_sub_pd(a, b); }
    static reg div(reg a, reg b) { return _mm256_div_pd(a, b); }
    static reg max(reg a, reg b) { return _mm256_max_pd(a, b); }
    static reg min(reg a, reg b) { return _mm256_min_pd(a, b); }
    static reg abs(reg a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
    static reg blend_lt(reg a, reg b, reg x, reg y) { return _mm256_blendv_pd(y, x, _mm256_cmp_pd(a, b, _CMP_LT_OQ)); }
    static reg pow2i(reg n) {
        const __m256i e = _mm256_castpd_si256(_mm256_add_pd(n, _mm256_set1_pd(6755399441055744.0 + 1023.0)));
        return _mm256_castsi256_pd(_mm256_slli_epi64(e, 52));
    }
};

// Small products in panels of 2 vectors: 6 x 2 accumulators plus 2 B vectors and a broadcast
// fit the 16 ymm registers (4 x 4 spilled); see docs/DESIGN.md, "Small products".
constexpr int kSmallPanel = 2;

// bfloat16 -> float32 is a 16-bit shift; float16 -> float32 is F16C's vcvtph2ps (exact, subnormals
// kept: it ignores MXCSR's DAZ).
struct Avx2Bf16 {
    using S = bfloat16_t;
    static float one(S x) { return to_float(x); }
    static __m256 load(const S* p) {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
    // 16 bfloat16 from one load: interleaving them with zeros puts each at the top of a 32-bit
    // lane, already a float32, lanes [0-3, 8-11] in lo and [4-7, 12-15] in hi.
    static void load2(const S* p, __m256& lo, __m256& hi) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), z = _mm256_setzero_si256();
        lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, w));
        hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, w));
    }
    static int lane(int i) { return (i & 4) * 2 + (i & 8) / 2 + (i & 3); }
};
struct Avx2F16 {
    using S = float16_t;
    static float one(S x) { return _cvtsh_ss(x.bits); }
    static __m256 load(const S* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
};
struct Avx2Narrow {
    static void narrow(int64_t n, const float* src, float16_t* dst) {
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
        for (; i < n; ++i) dst[i] = to_float16(src[i]);
    }
};

// int8: both operands widened to int16 while packing (A by sign or zero extension), a k pair of
// row i broadcast as one 32-bit word, and vpmaddwd: 16 exact int16 products summed in pairs into
// 8 int32 lanes (|pair| <= 2 x 255 x 128, far from vpmaddwd's one saturating case, -32768^2 x 2).
// Never vpmaddubsw, whose int16 pair sums saturate. An int8 A needs no +128 correction.
struct Avx2I8 {
    using F = Avx2F32;
    using reg = __m256i;
    using areg = __m256i;
    using breg = __m256i;
    using PA = int16_t;
    using PB = int16_t;
    static constexpr int W = 8, KG = 2;
    static constexpr bool kSignedA = true;
    static reg zero() { return _mm256_setzero_si256(); }
    static areg bcast_a(const PA* p) {
        int32_t pair;
        std::memcpy(&pair, p, sizeof pair);
        return _mm256_set1_epi32(pair);
    }
    static breg load_b(const PB* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
    static reg dot(reg acc, areg a, breg b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
    static reg add(reg x, reg y) { return _mm256_add_epi32(x, y); }
    static reg loadu(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
    static void storeu(void* p, reg r) { _mm256_storeu_si256(static_cast<__m256i*>(p), r); }
    static reg maskz_loadu(Lanes m, const void* p) { return _mm256_maskload_epi32(static_cast<const int*>(p), m.bits); }
    static void mask_storeu(void* p, Lanes m, reg r) { store_first(p, m.n, r); }
    static __m256 to_float(reg r) { return _mm256_cvtepi32_ps(r); }
    static PA pa(uint8_t x) { return x; }
    static PA pa(int8_t x) { return x; }
    static PB pb(int8_t x) { return x; }

    // Matrix-vector (int8_gemv.hpp), the same vpmaddwd on the matrix as stored: rows p and p + 1
    // interleaved by bytes (column j's two values side by side), widened to int16, times the x pair.
    static constexpr int GC = 16, GD = 16;
    struct xq {
        __m256i x01, x23;
    };
    static __m256i pair(int32_t lo, int32_t hi) {
        return _mm256_set1_epi32(int32_t(uint32_t(lo & 0xffff) | uint32_t(hi) << 16));
    }
    static xq x4(int32_t x0, int32_t x1, int32_t x2, int32_t x3) { return {pair(x0, x1), pair(x2, x3)}; }
    static __m128i load16(const int8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
    static void rows4(uint32_t* t, const int8_t* r0, const int8_t* r1, const int8_t* r2, const int8_t* r3,
                      const xq& x) {
        const __m128i a0 = load16(r0), a1 = load16(r1), a2 = load16(r2), a3 = load16(r3);
        auto* tv = reinterpret_cast<__m256i*>(t);
        const __m256i lo = _mm256_add_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a0, a1)), x.x01),
                                            _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a2, a3)), x.x23));
        const __m256i hi = _mm256_add_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a0, a1)), x.x01),
                                            _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a2, a3)), x.x23));
        _mm256_storeu_si256(tv, _mm256_add_epi32(_mm256_loadu_si256(tv), lo));
        _mm256_storeu_si256(tv + 1, _mm256_add_epi32(_mm256_loadu_si256(tv + 1), hi));
    }
    using dreg = __m256i;
    static dreg dzero() { return _mm256_setzero_si256(); }
    template <typename A>
    static __m256i widen_x(const A* p) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        if constexpr (std::is_same_v<A, uint8_t>) return _mm256_cvtepu8_epi16(v);
        else return _mm256_cvtepi8_epi16(v);
    }
    static dreg dot_row(dreg acc, const int8_t* row, __m256i xw) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_cvtepi8_epi16(load16(row)), xw));
    }
    static uint32_t hsum(dreg acc) {
        const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
        const __m128i s2 = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
        return uint32_t(_mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, _MM_SHUFFLE(2, 3, 0, 1)))));
    }
};

}  // namespace

// Measured on Zen 3: the small-path cap, and C rows of up to 80 bytes on the small path at any
// size ("Small products"); B never read in place (a wide B read in place ran at half the packed
// speed; "B read in place"); up to 6 rows streamed, 12 for int8 in two groups ("Few rows"); an
// A stored by columns read in place for up to 4 slivers of B ("A read in place"); x @ W.T up to 24 rows
// or columns as dot products in both types ("Dot products"); no few-row groups past 6 rows (Zen 4,
// session 23: 1.07x the packed path at 16 x 512 x 512, 0.63-0.91x at 12 x 2048 x 2048 and from 32
// rows); float32 x @ W.T of 5-6 columns as dots (Zen 4 running avx2, session 27: 1.4-1.9x the
// small kernels; 10 columns lost, 0.78-0.90x); x @ W.T of 2 to lanes - 1 columns as dots from k =
// 16, never a whole vector of them (Zen 4 running avx2, session 39: 0.25-0.74x the masked small
// kernels' time; float64 4 columns 1.0-2.0x, k 16-512). Head columns only matter in place; see
// docs/DESIGN.md, "Measured decisions".
constexpr Tuning avx2_tuning = [] {
    Tuning t{0, 0, int64_t(128) * 128 * 128, 16, 6, 12, 80, 4, 0, 0, 24, 24, 1, 8, 0, 0, 0, 6};
    t.f32_narrow_dots = {2, 6, 4, 0, 48};
    t.f64_narrow_dots = {2, 6, 4, 0, 0};
    return t;
}();
constexpr KernelSet avx2_kernels{
    "avx2", "AVX2+FMA", &runs_avx2, avx2_tuning, kernels::kernel_table<Avx2F32, 6, 2, kSmallPanel>(),
    kernels::kernel_table<Avx2F64, 6, 2, kSmallPanel>(), kernels::kernel_table<Avx2F32, 6, 2, kSmallPanel>(),
    kernels::kernel_table<Avx2F64, 6, 2, kSmallPanel>(),
    kernels::lowp_kernels<Avx2F32, Avx2Bf16, Avx2F16, Avx2Narrow, 6, 2>(),
    // 4 x 16 int32: 8 accumulators (6 x 16 spilled); see docs/DESIGN.md, "int8 products".
    kernels::int8_kernels<Avx2I8, 4, 2>("AVX2 vpmaddwd")};

}  // namespace fastgemm
