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

}  // namespace

// Thresholds measured on Zen 4 and, from session 11, on an Intel Xeon (2 MiB L2), where B read
// in place ran 0.35-0.6x the packed path (so no skinny tiles either); the float64 dot side, the
// chunked small products at any size and x @ W.T with up to 8 rows as dots on Zen 4 (session 17:
// 1.0-1.9x what they replace, no shape slower; the Xeon not remeasured); few rows in groups up to
// 30 rows on Zen 4 (session 23: 1.1-1.7x the packed path; the Xeon not measured); x @ W.T with W
// in half of L2 as dots up to 64 / 32 rows on Zen 4 (session 25: median 1.07x the small path,
// float64 lost from 40 rows); float32 x @ W.T of 5-6 or 9-12 columns as dots on Zen 4 (session
// 27: up to 1.5x the small kernels, lowest 0.95x, none below NumPy); float64 x @ W.T of 2-4
// columns as dots where NarrowDots' costs fitted on Zen 4 say so (session 39: the half-width
// small kernels ran 4 FMAs in 3 cycles, a dot's sum cost 3.25; 0.84-0.89x the time at 4 columns from
// k = 40); x @ W.T of 5-11 float32 columns but 8 as dots up to 64 rows from k = 80, 5-10 float64 columns
// but 8 up to 32 rows from k = 64 on Zen 4 (session 40: 0.62-0.96x the small path's time on 200-item stacks,
// whose copy of each W the dots spare); see docs/DESIGN.md, "Measured decisions".
constexpr Tuning avx512_tuning = [] {
    Tuning t{0, 0, int64_t(512) * 512 * 512, 16, 6, 0, 256, 4, 2, 192, 24, 24, 1, 8, 30, 64, 32, 12};
    t.f64_narrow_dots = {4, 13, 3, 4, 128};
    t.f32_short_dots = {64, 11, 80};
    t.f64_short_dots = {32, 10, 64};
    return t;
}();
constexpr KernelSet avx512_kernels{
    "avx512", "AVX-512 F/BW/VL/DQ", &runs_avx512, avx512_tuning, kernels::kernel_table<Avx512F32, 14, 2>(),
    kernels::kernel_table<Avx512F64, 6, 4>(), kernels::kernel_table<Avx512F32, 14, 2>(),
    kernels::kernel_table<Avx512F64, 6, 4>(),
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
