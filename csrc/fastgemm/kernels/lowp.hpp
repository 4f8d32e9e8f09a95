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

// gemv_rows (gemv.hpp) with x and the matrix in C::S: the same order of operations per
// element of y, the matrix widened as it streams.
template <typename V, typename C>
void gemv_rows_cvt(int64_t n, int64_t k, float alpha, const typename C::S* x, int64_t incx, const typename C::S* mat,
                   int64_t ldm, float beta, float* y, float* t) {
    using R = typename V::reg;
    using S = typename C::S;
    constexpr int W = V::W;
    constexpr int64_t kChunk = kGemvChunkBytes / int64_t(sizeof(float));
    static_assert(kChunk % W == 0, "the chunk holds whole vectors");
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
        const int64_t len = n - j0 < kChunk ? n - j0 : kChunk;
        const int64_t full = len / W * W, rest = len - full;
        for (int64_t j = 0, padded = full < len ? full + W : full; j < padded; ++j) t[j] = 0.0f;
        const S* m0 = mat + j0;
        int64_t p = 0;
        // Eight rows per pass over the chunk: a 2-byte row costs twice the arithmetic per byte
        // of a float32 one (widen, then FMA), so the chunk's load and store are spread over
        // more rows. Each element's sum still runs over p in order.
        for (; p + 8 <= k; p += 8) {
            R xs[8];
#pragma GCC unroll 8
            for (int q = 0; q < 8; ++q) xs[q] = V::set1(C::one(x[(p + q) * incx]));
            const S* r0 = m0 + p * ldm;
            for (int64_t j = 0; j < full; j += W) {
                R acc = V::loadu(t + j);
#pragma GCC unroll 8
                for (int q = 0; q < 8; ++q) acc = V::fmadd(xs[q], C::load(r0 + q * ldm + j), acc);
                V::storeu(t + j, acc);
            }
            if (rest) {
                R acc = V::loadu(t + full);
#pragma GCC unroll 8
                for (int q = 0; q < 8; ++q) acc = V::fmadd(xs[q], load_part<V, C>(r0 + q * ldm + full, rest), acc);
                V::storeu(t + full, acc);
            }
        }
        for (; p + 4 <= k; p += 4) {
            const R x0 = V::set1(C::one(x[p * incx])), x1 = V::set1(C::one(x[(p + 1) * incx])),
                    x2 = V::set1(C::one(x[(p + 2) * incx])), x3 = V::set1(C::one(x[(p + 3) * incx]));
            const S *r0 = m0 + p * ldm, *r1 = r0 + ldm, *r2 = r1 + ldm, *r3 = r2 + ldm;
            for (int64_t j = 0; j < full; j += W) {
                R acc = V::loadu(t + j);
                acc = V::fmadd(x0, C::load(r0 + j), acc);
                acc = V::fmadd(x1, C::load(r1 + j), acc);
                acc = V::fmadd(x2, C::load(r2 + j), acc);
                acc = V::fmadd(x3, C::load(r3 + j), acc);
                V::storeu(t + j, acc);
            }
            if (rest) {
                R acc = V::loadu(t + full);
                acc = V::fmadd(x0, load_part<V, C>(r0 + full, rest), acc);
                acc = V::fmadd(x1, load_part<V, C>(r1 + full, rest), acc);
                acc = V::fmadd(x2, load_part<V, C>(r2 + full, rest), acc);
                acc = V::fmadd(x3, load_part<V, C>(r3 + full, rest), acc);
                V::storeu(t + full, acc);
            }
        }
        for (; p < k; ++p) {
            const R xp = V::set1(C::one(x[p * incx]));
            const S* r = m0 + p * ldm;
            for (int64_t j = 0; j < full; j += W) V::storeu(t + j, V::fmadd(xp, C::load(r + j), V::loadu(t + j)));
            if (rest) V::storeu(t + full, V::fmadd(xp, load_part<V, C>(r + full, rest), V::loadu(t + full)));
        }
        float* yc = y + j0;
        for (int64_t j = 0; j < len; ++j) yc[j] = beta == 0.0f ? alpha * t[j] : alpha * t[j] + beta * yc[j];
    }
}

// gemv_dots' reading (gemv.hpp) of x and the matrix in C::S, widened as they stream.
template <typename V, typename C>
struct WidenLoad {
    using S = typename C::S;
    int64_t rest;
    explicit WidenLoad(int64_t r) : rest(r) {}
    bool any(int64_t, int64_t) const { return rest != 0; }
    static typename V::reg load(const S* p) { return C::load(p); }
    typename V::reg part(const S* p) const { return load_part<V, C>(p, rest); }
};

// Conversion traits may also give load_pairs(p, even, odd): 2W elements at p, the even-indexed
// ones widened into `even`, the odd-indexed ones into `odd`. For bfloat16 that is one load, a
// shift and an and for 2W elements (a bfloat16 at the top of a 32-bit word is already a float32),
// against a widening load and a shift per W elements.
// (Traits with load_pairs say so with `static constexpr bool kPairs = true`.)
template <typename C, typename = void>
struct has_pairs : std::false_type {};
template <typename C>
struct has_pairs<C, std::void_t<decltype(C::kPairs)>> : std::bool_constant<C::kPairs> {};

// 2W elements at p of which only the first `count` exist (the rest read as 0), as pairs.
template <typename V, typename C>
void load_pairs_part(const typename C::S* p, int64_t count, typename V::reg& even, typename V::reg& odd) {
    typename C::S buf[2 * V::W] = {};
    for (int64_t l = 0; l < count; ++l) buf[l] = p[l];
    C::load_pairs(buf, even, odd);
}

// gemv_rows_cvt through load_pairs: the chunk keeps each block of 2W partial sums as its even
// elements then its odd ones, and y is written back in order. The sum per element runs over p in
// order from 0, exactly as in gemv_rows_cvt, so the result is bitwise the same.
template <typename V, typename C>
void gemv_rows_pairs(int64_t n, int64_t k, float alpha, const typename C::S* x, int64_t incx, const typename C::S* mat,
                     int64_t ldm, float beta, float* y, float* t) {
    using R = typename V::reg;
    using S = typename C::S;
    constexpr int W = V::W, B = 2 * V::W;
    constexpr int64_t kChunk = kGemvChunkBytes / int64_t(sizeof(float));
    static_assert(kChunk % B == 0, "the chunk holds whole pairs of vectors");
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
        const int64_t len = n - j0 < kChunk ? n - j0 : kChunk;
        const int64_t full = len / B * B, rest = len - full;
        for (int64_t j = 0, padded = rest ? full + B : full; j < padded; ++j) t[j] = 0.0f;
        const S* m0 = mat + j0;
        // `rows` rows from p on, their x values broadcast in xs.
        auto pass = [&](const R* xs, int rows, const S* r0) {
            for (int64_t j = 0; j < full; j += B) {
                R ae = V::loadu(t + j), ao = V::loadu(t + j + W);
                for (int q = 0; q < rows; ++q) {
                    R e, o;
                    C::load_pairs(r0 + q * ldm + j, e, o);
                    ae = V::fmadd(xs[q], e, ae);
                    ao = V::fmadd(xs[q], o, ao);
                }
                V::storeu(t + j, ae);
                V::storeu(t + j + W, ao);
            }
            if (rest) {
                R ae = V::loadu(t + full), ao = V::loadu(t + full + W);
                for (int q = 0; q < rows; ++q) {
                    R e, o;
                    load_pairs_part<V, C>(r0 + q * ldm + full, rest, e, o);
                    ae = V::fmadd(xs[q], e, ae);
                    ao = V::fmadd(xs[q], o, ao);
                }
                V::storeu(t + full, ae);
                V::storeu(t + full + W, ao);
            }
        };
        int64_t p = 0;
        for (; p + 8 <= k; p += 8) {
            R xs[8];
            for (int q = 0; q < 8; ++q) xs[q] = V::set1(C::one(x[(p + q) * incx]));
            pass(xs, 8, m0 + p * ldm);
        }
        for (; p < k; ++p) {
            const R xs[1] = {V::set1(C::one(x[p * incx]))};
            pass(xs, 1, m0 + p * ldm);
        }
        float* yc = y + j0;
        for (int64_t j = 0; j < len; ++j) {
            const int64_t b = j / B * B, i = j - b;
            const float tj = t[b + (i & 1) * W + (i >> 1)];
            yc[j] = beta == 0.0f ? alpha * tj : alpha * tj + beta * yc[j];
        }
    }
}

template <typename V, typename C>
void gemv_rows_best(int64_t n, int64_t k, float alpha, const typename C::S* x, int64_t incx, const typename C::S* mat,
                    int64_t ldm, float beta, float* y, float* t) {
    if constexpr (has_pairs<C>::value) gemv_rows_pairs<V, C>(n, k, alpha, x, incx, mat, ldm, beta, y, t);
    else gemv_rows_cvt<V, C>(n, k, alpha, x, incx, mat, ldm, beta, y, t);
}

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
    return {&pack_a_cvt<V, C, MR>, &pack_b_cvt<V, C, NR>, &gemv_rows_best<V, C>, &gemv_dots<V, WidenLoad<V, C>>,
            &widen<V, C>};
}

// The LowpKernels of a kernel file whose float32 main tile is MR x (NV vectors of V).
template <typename V, typename Cbf16, typename Cf16, typename N, int MR, int NV>
constexpr LowpKernels lowp_kernels() {
    return {lowp_table<V, Cbf16, MR, NV * V::W>(), lowp_table<V, Cf16, MR, NV * V::W>(), &N::narrow, nullptr};
}

}  // namespace kernels
}  // namespace fastgemm
