// AVX512_BF16 kernels: bfloat16 x bfloat16 on vdpbf16ps (Cooper Lake, Sapphire Rapids, Zen 4 and
// later). Compiled with the AVX-512 flags plus -mavx512bf16, only ever called after dispatch has
// seen the CPU report AVX512_BF16 and the OS save zmm state (runs_avx512_bf16).
// A and B are packed as bfloat16 pairs along k (kernel.hpp, PairKernels), so one vdpbf16ps
// multiplies 16 pairs and adds both products to 16 float32 accumulators: avx512's 14 x 32 fp32
// register tile (28 accumulators, 2 B vectors, 1 broadcast) with twice the multiply-adds per
// instruction. vdpbf16ps reads bfloat16 subnormals as 0 and flushes float32 subnormal results to
// 0 (and sets no MXCSR flag); see docs/DESIGN.md, "Low-precision products".
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "avx512_traits.hpp"
#include "table.hpp"

namespace fastgemm {
namespace {

// The k step of the pair tiles: acc += a.lo * b.lo + a.hi * b.hi in each lane, a and b holding
// bfloat16 pairs (the float32 registers only carry their bits).
struct Bf16PairStep {
    static __m512 fmadd(__m512 a, __m512 b, __m512 acc) {
        return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_castps_si512(a), (__m512bh)_mm512_castps_si512(b));
    }
};

// One slot: element 2q in the low half, 2q + 1 in the high half.
inline void put(float* dst, uint32_t lo, uint32_t hi) {
    const uint32_t u = lo | hi << 16;
    std::memcpy(dst, &u, 4);
}

// An mc x kc block of A into MR-row pair slivers: slot (q, i) of a sliver at ap[q * MR + i]. Rows
// past mc and the element past an odd kc are 0.
template <int MR>
void pack_a_pairs(int64_t mc, int64_t kc, const bfloat16_t* a, int64_t rsa, int64_t csa, float* ap) {
    const int64_t kp = (kc + 1) / 2, even = kc / 2;
    for (int64_t i0 = 0; i0 < mc; i0 += MR, ap += MR * kp) {
        const int64_t rows = mc - i0 < MR ? mc - i0 : MR;
        for (int i = 0; i < MR; ++i) {
            if (i >= rows) {
                for (int64_t q = 0; q < kp; ++q) put(ap + q * MR + i, 0, 0);
                continue;
            }
            const bfloat16_t* ar = a + (i0 + i) * rsa;
            if (csa == 1) {
                for (int64_t q = 0; q < even; ++q) std::memcpy(ap + q * MR + i, ar + 2 * q, 4);
            } else {
                for (int64_t q = 0; q < even; ++q)
                    put(ap + q * MR + i, ar[2 * q * csa].bits, ar[(2 * q + 1) * csa].bits);
            }
            if (kc % 2) put(ap + even * MR + i, ar[(kc - 1) * csa].bits, 0);
        }
    }
}

// A kc x nc block of B into NR-column pair slivers [s0, s1): slot (q, j) of sliver s at
// bp[s * NR * kp + q * NR + j]. Columns past nc and the row past an odd kc are 0.
template <int NR>
void pack_b_pairs(int64_t kc, int64_t nc, const bfloat16_t* b, int64_t rsb, int64_t csb, float* bp, int64_t s0,
                  int64_t s1) {
    static_assert(NR % 16 == 0, "a sliver is whole vectors");
    const int64_t kp = (kc + 1) / 2;
    for (int64_t s = s0; s < s1; ++s) {
        const int64_t j0 = s * NR;
        const int64_t cols = nc - j0 < NR ? nc - j0 : NR;
        const bfloat16_t* b0 = b + j0 * csb;
        float* dst = bp + s * NR * kp;
        if (cols == NR && csb == 1) {
            // Rows 2q and 2q + 1 interleaved 16 columns at a time: zero-extend each to 32 bits,
            // shift the second into the high halves.
            for (int64_t q = 0; q < kp; ++q) {
                const bfloat16_t* r0 = b0 + 2 * q * rsb;
                const bool pair = 2 * q + 1 < kc;
                for (int j = 0; j < NR; j += 16) {
                    const __m512i lo =
                        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + j)));
                    const __m512i hi =
                        pair ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + rsb + j)))
                             : _mm512_setzero_si512();
                    _mm512_storeu_si512(dst + q * NR + j, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
                }
            }
            continue;
        }
        for (int64_t q = 0; q < kp; ++q)
            for (int j = 0; j < NR; ++j) {
                const bool col = j < cols;
                const uint32_t lo = col ? b0[2 * q * rsb + j * csb].bits : 0;
                const uint32_t hi = col && 2 * q + 1 < kc ? b0[(2 * q + 1) * rsb + j * csb].bits : 0;
                put(dst + q * NR + j, lo, hi);
            }
    }
}

// kernels::fma_loop's 12 independent chains with vdpbf16ps: 16 lanes x 2 products x 2 flops
// each per instruction.
double dot_loop(int64_t reps) {
    constexpr int kChains = 12;
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i));
    const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-3f);
    for (int64_t r = 0; r < reps; ++r) {
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) acc[i] = Bf16PairStep::fmadd(x, y, acc[i]);
    }
    __m512 sum = acc[0];
    for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
    alignas(64) float out[16];
    _mm512_store_ps(out, sum);
    volatile float sink = out[0];
    (void)sink;
    return double(reps) * kChains * 16 * 4;
}

template <int MR, int NV, int... M>
constexpr PairKernels pair_kernels(std::integer_sequence<int, M...>) {
    return {
        MR,
        NV * Avx512F32::W,
        Avx512F32::W,
        {TileRow<float>{}, kernels::tile_row<Avx512F32, M + 1, Bf16PairStep>(std::make_integer_sequence<int, NV>{})...},
        &pack_a_pairs<MR>,
        &pack_b_pairs<NV * Avx512F32::W>,
        &kernels::epilogue<Avx512F32>,
        &dot_loop};
}

}  // namespace

// avx512's fp32 main tile, 14 x 32; see docs/DESIGN.md, "Tile shapes".
constexpr PairKernels avx512bf16_pair_kernels = pair_kernels<14, 2>(std::make_integer_sequence<int, 14>{});

}  // namespace fastgemm
