// int8 products: packing uint8 / int8 A and int8 B into k-grouped slivers, the register-tile
// microkernel with int32 accumulators, and the builder of a kernel file's Int8Kernels.
// Included only from kernels/*.cpp. Every template takes an int8 traits type I, and each kernel
// file's I is a distinct type in an anonymous namespace, so instantiations compiled with
// different ISA flags never share a symbol.
//
// I provides: F (the file's float32 vector traits: mask, lanes(n), set1, loadu, maskz_loadu,
// storeu, mask_storeu, mul), W (int32 lanes, F::W), KG (k values one dot step reduces), PA / PB
// (packed A / B element types), kSignedA (an int8 A can be packed as it is; otherwise it is
// packed as A + 128, a uint8, and the tile adds -128 x B's column sums), reg (W int32), areg /
// breg (operands of dot), zero(), bcast_a(p) (row i's KG packed values at p, in every lane),
// load_b(p) (W columns x KG packed values at p), dot(acc, a, b) (acc + the KG-deep products, exact,
// wrapping mod 2^32), add(x, y), loadu / storeu / maskz_loadu / mask_storeu of int32 at void*,
// to_float(r) (int32 -> float32, to nearest), pa(uint8_t), pa(int8_t), pb(int8_t) (one element
// packed), and the matrix-vector members int8_gemv.hpp lists. See docs/DESIGN.md, "int8 products".
#pragma once

#include <cstdint>
#include <type_traits>

#include "../kernel.hpp"
#include "int8_gemv.hpp"

namespace fastgemm {
namespace kernels {

// Whether the tables for A = int8_t pack A + 128 and correct by B's column sums.
template <typename I, typename A>
constexpr bool kCorrected = std::is_same_v<A, int8_t> && !I::kSignedA;

// Slivers of MR rows: k-group q of row i is at (q * MR + i) * KG, zero-padded rows and groups.
template <typename I, typename A, int MR>
void pack_a_i8(int64_t mc, int64_t kc, const A* a, int64_t rsa, int64_t csa, void* out) {
    using PA = typename I::PA;
    constexpr int KG = I::KG;
    const int64_t kp = (kc + KG - 1) / KG * KG;
    PA* ap = static_cast<PA*>(out);
    for (int64_t i0 = 0; i0 < mc; i0 += MR, ap += MR * kp) {
        const int64_t rows = mc - i0 < MR ? mc - i0 : MR;
        for (int i = 0; i < MR; ++i) {
            PA* dst = ap + i * KG;
            int64_t p = 0;
            if (i < rows) {
                const A* ar = a + (i0 + i) * rsa;
                if (csa == 1)
                    for (; p + KG <= kc; p += KG)
#pragma GCC unroll 4
                        for (int q = 0; q < KG; ++q) dst[p * MR + q] = I::pa(ar[p + q]);
                for (; p < kc; ++p) dst[p / KG * KG * MR + p % KG] = I::pa(ar[p * csa]);
            }
            for (; p < kp; ++p) dst[p / KG * KG * MR + p % KG] = PA(0);
        }
    }
}

// Slivers of NR columns: k-group q of column j is at (q * NR + j) * KG, then (kCorrected) NR
// int32 corrections, -128 x the column's sum over the kc values.
template <typename I, int NR, bool Sums>
void pack_b_i8(int64_t kc, int64_t nc, const int8_t* b, int64_t rsb, int64_t csb, void* out, int64_t s0, int64_t s1) {
    using PB = typename I::PB;
    constexpr int KG = I::KG;
    const int64_t kp = (kc + KG - 1) / KG * KG;
    const int64_t stride = int8_b_sliver_bytes(kc, KG, NR, int(sizeof(PB)), Sums);
    for (int64_t s = s0; s < s1; ++s) {
        const int64_t j0 = s * NR;
        const int64_t cols = nc - j0 < NR ? nc - j0 : NR;
        const int8_t* b0 = b + j0 * csb;
        PB* dst = reinterpret_cast<PB*>(static_cast<char*>(out) + s * stride);
        if (cols == NR && csb == 1) {
            int64_t p = 0;
            for (; p + KG <= kc; p += KG)
#pragma GCC unroll 4
                for (int q = 0; q < KG; ++q) {
                    const int8_t* br = b0 + (p + q) * rsb;
#pragma GCC unroll 64
                    for (int j = 0; j < NR; ++j) dst[p * NR + j * KG + q] = I::pb(br[j]);
                }
            for (; p < kp; ++p)
                for (int j = 0; j < NR; ++j)
                    dst[p / KG * KG * NR + j * KG + p % KG] = p < kc ? I::pb(b0[p * rsb + j]) : PB(0);
        } else {
            for (int j = 0; j < NR; ++j)
                for (int64_t p = 0; p < kp; ++p)
                    dst[p / KG * KG * NR + j * KG + p % KG] = j < cols && p < kc ? I::pb(b0[p * rsb + j * csb]) : PB(0);
        }
        if constexpr (Sums) {
            int32_t* fix = reinterpret_cast<int32_t*>(dst + kp * NR);
            for (int j = 0; j < NR; ++j) {
                int64_t sum = 0;
                if (j < cols)
                    for (int64_t p = 0; p < kc; ++p) sum += b0[p * rsb + j * csb];
                fix[j] = int32_t(-128 * sum);  // |sum| <= 128 kc: no overflow for any KC
            }
        }
    }
}

// acc over the kc-deep slivers, then C written as Int8UkernelFn (kernel.hpp) says. An MR x NV-vector
// tile of slivers packed SR rows and SC columns wide (the table's tile: edge tiles are smaller).
template <typename I, int MR, int NV, bool Corrected, int SR, int SC>
void ukernel_i8(int64_t kc, const void* ap, const void* bp, void* c, int64_t ldc, int n, bool add, const float* scale,
                int64_t scale_inc) {
    using R = typename I::reg;
    using F = typename I::F;
    constexpr int W = I::W, KG = I::KG, NR = NV * W;
    const auto* a = static_cast<const typename I::PA*>(ap);
    const auto* b = static_cast<const typename I::PB*>(bp);
    const int64_t groups = (kc + KG - 1) / KG;
    // The accumulators start at the sliver's corrections, which follow its groups (added after
    // the k loop instead, they made GCC 12 store every accumulator to the stack in the loop).
    R init[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j)
        init[j] = Corrected ? I::loadu(reinterpret_cast<const int32_t*>(b + groups * SC * KG) + j * W) : I::zero();
    R acc[MR][NV];
#pragma GCC unroll 64
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) acc[i][j] = init[j];
#pragma GCC unroll 4
    for (int64_t q = 0; q < groups; ++q) {
        typename I::breg bv[NV];
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) bv[j] = I::load_b(b + j * W * KG);
#pragma GCC unroll 64
        for (int i = 0; i < MR; ++i) {
            const typename I::areg av = I::bcast_a(a + i * KG);
#pragma GCC unroll 8
            for (int j = 0; j < NV; ++j) acc[i][j] = I::dot(acc[i][j], av, bv[j]);
        }
        a += SR * KG;
        b += SC * KG;
    }
    const bool full = n == NR;
    typename F::mask mk[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) mk[j] = F::lanes(n - j * W);
    typename F::reg sc[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j)
        sc[j] = !scale           ? F::set1(0.0f)
                : scale_inc == 0 ? F::set1(*scale)
                : full           ? F::loadu(scale + j * W)
                                 : F::maskz_loadu(mk[j], scale + j * W);
#pragma GCC unroll 64
    for (int i = 0; i < MR; ++i) {
        // int32 and float32 C elements are both 4 bytes: row i starts i * ldc * 4 bytes in.
        char* ci = static_cast<char*>(c) + i * ldc * 4;
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) {
            if (j * W >= n) break;
            void* cij = ci + j * W * 4;
            R v = acc[i][j];
            if (add) v = I::add(v, full ? I::loadu(cij) : I::maskz_loadu(mk[j], cij));
            if (scale) {
                const typename F::reg f = F::mul(I::to_float(v), sc[j]);
                if (full) F::storeu(static_cast<float*>(cij), f);
                else F::mask_storeu(static_cast<float*>(cij), mk[j], f);
            } else if (full) {
                I::storeu(cij, v);
            } else {
                I::mask_storeu(cij, mk[j], v);
            }
        }
    }
}

template <typename I, int M, bool Corrected, int SR, int SC, int... N>
constexpr Int8TileRow int8_tile_row(std::integer_sequence<int, N...>) {
    return {{nullptr, &ukernel_i8<I, M, N + 1, Corrected, SR, SC>...}};
}

template <typename I, typename A, int MR, int NV, int... M>
constexpr Int8Table<A> int8_table(std::integer_sequence<int, M...>) {
    constexpr bool fix = kCorrected<I, A>;
    return {MR,
            NV * I::W,
            I::W,
            I::KG,
            int(sizeof(typename I::PA)),
            int(sizeof(typename I::PB)),
            fix,
            {Int8TileRow{}, int8_tile_row<I, M + 1, fix, MR, NV * I::W>(std::make_integer_sequence<int, NV>{})...},
            &pack_a_i8<I, A, MR>,
            &pack_b_i8<I, NV * I::W, fix>,
            &gemv_rows_i8<I, A>,
            &gemv_dots_i8<I, A>,
            &few_rows_i8<I, A>};
}

// The Int8Kernels of a kernel file: an MR x (NV vectors) int32 tile over traits I.
template <typename I, int MR, int NV>
constexpr Int8Kernels int8_kernels(const char* isa, const Int8Kernels* better = nullptr,
                                   bool (*better_can_run)(const CpuFeatures&) = nullptr) {
    static_assert(MR <= kMaxMR && NV <= kMaxNV, "raise kMaxMR / kMaxNV");
    return {int8_table<I, uint8_t, MR, NV>(std::make_integer_sequence<int, MR>{}),
            int8_table<I, int8_t, MR, NV>(std::make_integer_sequence<int, MR>{}), better, better_can_run, isa};
}

}  // namespace kernels
}  // namespace fastgemm
