// Low-precision inputs on the float32 kernels: matrix-vector kernels that read the 2-byte
// matrix once, widening as they go, and the builder of a kernel file's LowpKernels.
// Included only from kernels/*.cpp (through table.hpp). Every template takes a vector-traits
// type V, and each kernel file's V is a distinct type in an anonymous namespace, so
// instantiations compiled with different ISA flags never share a symbol.
//
// V: the float32 vector traits. C: conversion traits for one storage type, C::S the 2-byte
// type, C::load(p) W elements at p widened to a V::reg, C::one(x) one element widened.
// N: the kernel file's float32 -> float16 rounding, N::narrow(n, src, dst).
#pragma once

#include <cstdint>
#include <type_traits>

#include "../kernel.hpp"
#include "gemv.hpp"
#include "packing.hpp"

namespace fastgemm {
namespace kernels {

// The first `count` < W elements at p widened, the other lanes 0; nothing past p + count read.
template <typename V, typename C>
typename V::reg load_part(const typename C::S* p, int64_t count) {
    typename C::S buf[V::W] = {};
    for (int64_t l = 0; l < count; ++l) buf[l] = p[l];
    return C::load(buf);
}

// Blocks of 2W elements, as gemv_rows_cvt reads the matrix: load(p, lo, hi) widens the block at
// p into two vectors, element i landing at lane(i) of [lo | hi]. Conversion traits may give their
// own (C::load2 and C::lane, e.g. AVX2 bfloat16: one load, both halves unpacked against zero);
// otherwise two C::load in order.
template <typename V, typename C, typename = void>
struct Block2 {
    static void load(const typename C::S* p, typename V::reg& lo, typename V::reg& hi) {
        lo = C::load(p);
        hi = C::load(p + V::W);
    }
    static int lane(int i) { return i; }
};
template <typename V, typename C>
struct Block2<V, C, std::void_t<decltype(C::lane(0))>> {
    static void load(const typename C::S* p, typename V::reg& lo, typename V::reg& hi) { C::load2(p, lo, hi); }
    static int lane(int i) { return C::lane(i); }
};

// A block of which only the first `count` elements exist (the rest read as 0; nothing past them read).
template <typename V, typename C>
void load_block_part(const typename C::S* p, int64_t count, typename V::reg& lo, typename V::reg& hi) {
    typename C::S buf[2 * V::W] = {};
    for (int64_t l = 0; l < count; ++l) buf[l] = p[l];
    Block2<V, C>::load(buf, lo, hi);
}

// y = alpha * sum_p x[p] M[p, :] + beta * y with x and M in C::S, M widened as it streams: a
// chunk of y's partial sums stays in L1 (each block of 2W in Block2's lane order, y written back
// in order) while passes of eight rows add into it. Every element's sum runs over p in the same
// fixed order whatever the split of the columns (so any thread count gives the same bits): in
// each group of 32 rows p0 + h + 4q, h = 0..3 outer, q = 0..7 inner; the rows past the last
// whole group in order.
template <typename V, typename C>
void gemv_rows_cvt(int64_t n, int64_t k, float alpha, const typename C::S* x, int64_t incx, const typename C::S* mat,
                   int64_t ldm, float beta, float* y, float* t, bool ahead) {
    using R = typename V::reg;
    using S = typename C::S;
    using Blk = Block2<V, C>;
    constexpr int W = V::W, B = 2 * V::W;
    constexpr int64_t kChunk = kGemvChunkBytes / int64_t(sizeof(float));
    static_assert(kChunk % B == 0, "the chunk holds whole blocks");
    // ahead: each block read is also prefetched stream_far of rows on (a pass: eight), as stream_rows does.
    const int64_t far = ahead ? stream_far(ldm, int64_t(sizeof(S)), 8) : 0;
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
        const int64_t len = n - j0 < kChunk ? n - j0 : kChunk;
        const int64_t full = len / B * B, rest = len - full;
        for (int64_t j = 0, padded = rest ? full + B : full; j < padded; ++j) t[j] = 0.0f;
        const S* m0 = mat + j0;
        // Rows p, p + step, ..., p + (rows - 1) step added into the chunk, in that order.
        auto pass = [&](auto rows_c, int64_t p, int64_t step) {
            constexpr int rows = decltype(rows_c)::value;
            R xs[rows];
#pragma GCC unroll 8
            for (int q = 0; q < rows; ++q) xs[q] = V::set1(C::one(x[(p + q * step) * incx]));
            const S* r0 = m0 + p * ldm;
            const int64_t rs = step * ldm;
            for (int64_t j = 0; j < full; j += B) {
                R lo = V::loadu(t + j), hi = V::loadu(t + j + W);
#pragma GCC unroll 8
                for (int q = 0; q < rows; ++q) {
                    R a, b;
                    Blk::load(r0 + q * rs + j, a, b);
                    if (far) __builtin_prefetch(r0 + q * rs + far + j, 0, 2);
                    lo = V::fmadd(xs[q], a, lo);
                    hi = V::fmadd(xs[q], b, hi);
                }
                V::storeu(t + j, lo);
                V::storeu(t + j + W, hi);
            }
            if (rest) {
                R lo = V::loadu(t + full), hi = V::loadu(t + full + W);
                for (int q = 0; q < rows; ++q) {
                    R a, b;
                    load_block_part<V, C>(r0 + q * rs + full, rest, a, b);
                    lo = V::fmadd(xs[q], a, lo);
                    hi = V::fmadd(xs[q], b, hi);
                }
                V::storeu(t + full, lo);
                V::storeu(t + full + W, hi);
            }
        };
        using Eight = std::integral_constant<int, 8>;
        int64_t p = 0;
        // Each pass reads eight rows four apart, so each of the eight streams runs on through four
        // consecutive rows (one contiguous run when the rows are): DRAM delivered a 2-byte matrix
        // faster that way than eight rows in a row (docs/DESIGN.md, "Measured decisions").
        for (; p + 32 <= k; p += 32)
            for (int64_t h = 0; h < 4; ++h) pass(Eight{}, p + h, 4);
        for (; p + 8 <= k; p += 8) pass(Eight{}, p, 1);
        for (; p < k; ++p) pass(std::integral_constant<int, 1>{}, p, 1);
        float* yc = y + j0;
        for (int64_t j = 0; j < len; ++j) {
            const int64_t b = j / B * B;
            const float tj = t[b + Blk::lane(int(j - b))];
            yc[j] = beta == 0.0f ? alpha * tj : alpha * tj + beta * yc[j];
        }
    }
}

// The streaming kernels' reading (gemv.hpp: gemv_dots, few_rows) of their inputs in C::S,
// widened as they stream.
template <typename V, typename C>
struct WidenLoad {
    using S = typename C::S;
    int64_t rest;
    explicit WidenLoad(int64_t r) : rest(r) {}
    bool any(int64_t, int64_t) const { return rest != 0; }
    static typename V::reg load(const S* p) { return C::load(p); }
    static float one(S x) { return C::one(x); }
    typename V::reg part(const S* p) const { return load_part<V, C>(p, rest); }
};

// dst (rows x cols, row-major, contiguous) = src widened, from any strides: the operands of a
// small product, made float32 for the float32 small kernels.
template <typename V, typename C>
void widen(int64_t rows, int64_t cols, const typename C::S* src, int64_t rs, int64_t cs, float* dst) {
    constexpr int W = V::W;
    for (int64_t i = 0; i < rows; ++i, dst += cols) {
        const typename C::S* r = src + i * rs;
        if (cs != 1) {
            for (int64_t j = 0; j < cols; ++j) dst[j] = C::one(r[j * cs]);
            continue;
        }
        int64_t j = 0;
        for (; j + W <= cols; j += W) V::storeu(dst + j, C::load(r + j));
        for (; j < cols; ++j) dst[j] = C::one(r[j]);
    }
}

template <typename V, typename C, int MR, int NR>
constexpr LowpTable<typename C::S> lowp_table() {
    return {&pack_a_cvt<V, C, MR>,          &pack_b_cvt<V, C, NR>,         &gemv_rows_cvt<V, C>,
            &gemv_dots<V, WidenLoad<V, C>>, &few_rows<V, WidenLoad<V, C>>, &widen<V, C>};
}

// The LowpKernels of a kernel file whose float32 main tile is MR x (NV vectors of V).
template <typename V, typename Cbf16, typename Cf16, typename N, int MR, int NV>
constexpr LowpKernels lowp_kernels() {
    return {lowp_table<V, Cbf16, MR, NV * V::W>(), lowp_table<V, Cf16, MR, NV * V::W>(), &N::narrow, nullptr};
}

}  // namespace kernels
}  // namespace fastgemm
