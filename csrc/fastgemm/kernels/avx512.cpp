// AVX-512 (F/BW/VL/DQ) kernels: compiled with AVX-512 flags, only ever called after dispatch
// has seen the CPU and the OS's saved state allow them.
// Tiles 14 x 32 fp32 (28 zmm accumulators) and 6 x 32 fp64 (24); skinny 16 x 16 / 16 x 8 for
// few rows with B read in place: see docs/DESIGN.md, "Tile shapes" and "Skinny tiles".
#include <immintrin.h>

#include "avx512_traits.hpp"
#include "int8.hpp"
#include "table.hpp"

namespace fastgemm {
namespace {

// Packing row-major A into MR-row slivers is a transpose: these move 16 (fp32) or 8 (fp64)
// k-steps of a sliver at once in registers; see docs/DESIGN.md, "Packing transposes".

// rows[0..15] -> columns: out[c] holds rows[0..15][c].
inline void transpose_block(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    __m512 s[16];  // s[4g + e], lane L: rows 4g..4g+3 at column 4L + e
    for (int g = 0; g < 4; ++g) {
        s[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(1, 0, 1, 0));
        s[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(3, 2, 3, 2));
        s[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(1, 0, 1, 0));
        s[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int e = 0; e < 4; ++e) {  // 4x4 transpose of 128-bit lanes across s[e], s[4+e], ...
        const __m512 a0 = _mm512_shuffle_f32x4(s[e], s[4 + e], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512 a1 = _mm512_shuffle_f32x4(s[e], s[4 + e], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512 a2 = _mm512_shuffle_f32x4(s[8 + e], s[12 + e], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512 a3 = _mm512_shuffle_f32x4(s[8 + e], s[12 + e], _MM_SHUFFLE(3, 2, 3, 2));
        r[0 + e] = _mm512_shuffle_f32x4(a0, a2, _MM_SHUFFLE(2, 0, 2, 0));
        r[4 + e] = _mm512_shuffle_f32x4(a0, a2, _MM_SHUFFLE(3, 1, 3, 1));
        r[8 + e] = _mm512_shuffle_f32x4(a1, a3, _MM_SHUFFLE(2, 0, 2, 0));
        r[12 + e] = _mm512_shuffle_f32x4(a1, a3, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

// rows[0..7] -> columns: out[c] holds rows[0..7][c].
inline void transpose_block(__m512d r[8]) {
    __m512d t[8];  // t[2g + e], lane L: rows 2g, 2g+1 at column 2L + e
    for (int g = 0; g < 4; ++g) {
        t[2 * g] = _mm512_unpacklo_pd(r[2 * g], r[2 * g + 1]);
        t[2 * g + 1] = _mm512_unpackhi_pd(r[2 * g], r[2 * g + 1]);
    }
    for (int e = 0; e < 2; ++e) {
        const __m512d a0 = _mm512_shuffle_f64x2(t[e], t[2 + e], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512d a1 = _mm512_shuffle_f64x2(t[e], t[2 + e], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512d a2 = _mm512_shuffle_f64x2(t[4 + e], t[6 + e], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512d a3 = _mm512_shuffle_f64x2(t[4 + e], t[6 + e], _MM_SHUFFLE(3, 2, 3, 2));
        r[0 + e] = _mm512_shuffle_f64x2(a0, a2, _MM_SHUFFLE(2, 0, 2, 0));
        r[2 + e] = _mm512_shuffle_f64x2(a0, a2, _MM_SHUFFLE(3, 1, 3, 1));
        r[4 + e] = _mm512_shuffle_f64x2(a1, a3, _MM_SHUFFLE(2, 0, 2, 0));
        r[6 + e] = _mm512_shuffle_f64x2(a1, a3, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

// MR <= W rows: one W x W transpose moves W k-steps of a sliver.
template <typename V, int MR>
void pack_a_rows(int64_t mc, int64_t kc, const typename V::T* a, int64_t rsa, int64_t csa, typename V::T* ap) {
    using T = typename V::T;
    constexpr int W = V::W;
    if (csa != 1) return kernels::pack_a<V, MR>(mc, kc, a, rsa, csa, ap);
    const typename V::mask rows_mask = V::lanes(MR);
    const int64_t full = mc / MR * MR, kv = kc / W * W;
    for (int64_t i0 = 0; i0 < full; i0 += MR, ap += MR * kc) {
        const T* a0 = a + i0 * rsa;
        for (int64_t p = 0; p < kv; p += W) {
            typename V::reg r[W];
            for (int i = 0; i < W; ++i) r[i] = i < MR ? V::loadu(a0 + i * rsa + p) : V::zero();
            transpose_block(r);
            for (int c = 0; c < W; ++c) V::mask_storeu(ap + (p + c) * MR, rows_mask, r[c]);
        }
        for (int64_t p = kv; p < kc; ++p)
            for (int i = 0; i < MR; ++i) ap[p * MR + i] = a0[i * rsa + p];
    }
    if (full < mc) kernels::pack_a<V, MR>(mc - full, kc, a + full * rsa, rsa, csa, ap);
}

// bfloat16 -> float32 is a 16-bit shift, float16 -> float32 vcvtph2ps (exact, subnormals kept).
// Conversion in packing on this set; avx512bf16 below runs bfloat16 on vdpbf16ps.
struct Avx512Bf16 {
    using S = bfloat16_t;
    static float one(S x) { return to_float(x); }
    static __m512 load(const S* p) {
        const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    }
};
struct Avx512F16 {
    using S = float16_t;
    static float one(S x) { return _cvtsh_ss(x.bits); }
    static __m512 load(const S* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
};
struct Avx512Narrow {
    static void narrow(int64_t n, const float* src, float16_t* dst) {
        int64_t i = 0;
        for (; i + 16 <= n; i += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                                _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
        for (; i < n; ++i) dst[i] = to_float16(src[i]);
    }
};

// int8 without VNNI (Skylake-SP/X): avx2.cpp's vpmaddwd scheme on zmm, operands widened to int16
// while packing, exact. CPUs with AVX512_VNNI run avx512_vnni.cpp's vpdpbusd kernels instead.
struct Avx512I8 : Avx512I32 {
    using areg = __m512i;
    using breg = __m512i;
    using PA = int16_t;
    using PB = int16_t;
    static constexpr int KG = 2;
    static constexpr bool kSignedA = true;
    static areg bcast_a(const PA* p) { return bcast32(p); }
    static breg load_b(const PB* p) { return _mm512_loadu_si512(p); }
    static reg dot(reg acc, areg a, breg b) { return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b)); }
    static PA pa(uint8_t x) { return x; }
    static PA pa(int8_t x) { return x; }
    static PB pb(int8_t x) { return x; }
};

template <typename V, int MR, int NV>
constexpr KernelTable<typename V::T> table() {
    KernelTable<typename V::T> k = kernels::kernel_table<V, MR, NV>();
    if constexpr (MR <= V::W) k.pack_a = &pack_a_rows<V, MR>;
    return k;
}

}  // namespace

// Today's thresholds for every ISA: they were measured on Zen 4 AVX-512 only; see
// docs/DESIGN.md, "Measured decisions".
constexpr KernelSet avx512_kernels{
    "avx512", "AVX-512 F/BW/VL/DQ", &runs_avx512, Tuning{256, 128, int64_t(512) * 512 * 512, 16},
    table<Avx512F32, 14, 2>(), table<Avx512F64, 6, 4>(), table<Avx512F32, 16, 1>(), table<Avx512F64, 16, 1>(),
    kernels::lowp_kernels<Avx512F32, Avx512Bf16, Avx512F16, Avx512Narrow, 14, 2>(),
    // 12 x 32 int32: 24 accumulators, 2 B vectors, a broadcast, a product.
    kernels::int8_kernels<Avx512I8, 12, 2>("AVX-512BW vpmaddwd", &avx512_vnni_int8, &runs_avx512_vnni)};

// avx512 with bfloat16 products on vdpbf16ps (avx512bf16.cpp) for CPUs with AVX512_BF16: the
// same tables and thresholds otherwise, so `set_kernel("avx512")` still tests conversion in
// packing on those CPUs.
constexpr KernelSet with_bf16_pairs(KernelSet ks) {
    ks.name = "avx512bf16";
    ks.isa = "AVX-512 F/BW/VL/DQ + AVX512_BF16";
    ks.can_run = &runs_avx512_bf16;
    ks.lowp.bf16_pairs = &avx512bf16_pair_kernels;
    return ks;
}
constexpr KernelSet avx512bf16_kernels = with_bf16_pairs(avx512_kernels);

}  // namespace fastgemm
