// int8 matrix-vector kernels: one row of an int8 product (a decode step), x (uint8 or int8)
// times an int8 matrix streamed once where it is, no packing. Exact int32 sums that wrap modulo
// 2^32 like the tile's (integer sums in any order give the same bits). Included only from
// kernels/*.cpp (through int8.hpp); each file's traits I is its own type (see int8.hpp).
//
// I provides, beside the tile's members:
//   GC, xq, x4(x0, x1, x2, x3), rows4(t, r0, r1, r2, r3, xq): t[0:GC] += sum_q x_q * r_q[0:GC]
//     (uint32, wrapping) for four rows of the matrix and their x values (int32, a missing row
//     has x 0 and repeats r0).
//   GD, dreg, dzero(), widen_x<A>(p) (GD x values as the dot step reads them), dot_row(acc, row, xw)
//     (acc + the GD products of row[0:GD] and those x values, wrapping), hsum(acc) (uint32).
// See docs/DESIGN.md, "int8 products".
#pragma once

#include <cstdint>

#include "../kernel.hpp"

namespace fastgemm {
namespace kernels {

// Output j of a row (at y + i * 4 bytes): the int32 sum, added to y's int32 when `add`, or with
// a scale the float32 sum * scale[j * scale_inc] -- one rounding to float32, one multiplication,
// as the tile finishes a dequantised C.
inline void put_i8(void* y, int64_t i, int64_t j, uint32_t sum, bool add, const float* scale, int64_t scale_inc) {
    if (scale) {
        static_cast<float*>(y)[i] = float(int32_t(sum)) * scale[j * scale_inc];
        return;
    }
    uint32_t* out = static_cast<uint32_t*>(y) + i;
    *out = add ? *out + sum : sum;
}

// y[j] = sum_p x[p * incx] M[p, j] for j < n, M's rows contiguous (ldm apart), y contiguous:
// four rows of M at a time into partial sums held in `chunk` (kGemvChunkBytes, the float
// gemv_rows' chunk; see docs/DESIGN.md, "Matrix-vector chunk"), each row one sequential stream.
template <typename I, typename A>
void gemv_rows_i8(int64_t n, int64_t k, const A* x, int64_t incx, const int8_t* mat, int64_t ldm, void* y, bool add,
                  const float* scale, int64_t scale_inc, void* chunk) {
    constexpr int64_t kChunk = kGemvChunkBytes / 4, C = I::GC;
    static_assert(kChunk % C == 0, "the chunk holds whole steps");
    auto* t = static_cast<uint32_t*>(chunk);
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
        const int64_t len = n - j0 < kChunk ? n - j0 : kChunk;
        const int64_t full = len / C * C;
        for (int64_t j = 0; j < len; ++j) t[j] = 0;
        for (int64_t p = 0; p < k; p += 4) {
            const int8_t* r[4];
            int32_t xv[4];
            for (int q = 0; q < 4; ++q) {
                const bool live = p + q < k;
                r[q] = mat + (live ? p + q : p) * ldm + j0;
                xv[q] = live ? int32_t(x[(p + q) * incx]) : 0;
            }
            const typename I::xq xs = I::x4(xv[0], xv[1], xv[2], xv[3]);
            for (int64_t j = 0; j < full; j += C) I::rows4(t + j, r[0] + j, r[1] + j, r[2] + j, r[3] + j, xs);
            for (int64_t j = full; j < len; ++j)
                for (int q = 0; q < 4; ++q) t[j] += uint32_t(xv[q] * int32_t(r[q][j]));
        }
        for (int64_t j = 0; j < len; ++j) put_i8(y, j0 + j, j0 + j, t[j], add, scale, scale_inc);
    }
}

// y[j * incy] = sum_p x[p] M[j, p] for j < n, x and M's rows contiguous (a Linear layer's n x k
// weights): one dot product per row of M, four rows at a time (x widened once per four).
template <typename I, typename A>
void gemv_dots_i8(int64_t n, int64_t k, const A* x, const int8_t* mat, int64_t ldm, void* y, int64_t incy, bool add,
                  const float* scale, int64_t scale_inc) {
    constexpr int64_t D = I::GD;
    const int64_t full = k / D * D;
    auto rest = [&](const int8_t* row) {
        uint32_t s = 0;
        for (int64_t p = full; p < k; ++p) s += uint32_t(int32_t(x[p]) * int32_t(row[p]));
        return s;
    };
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const int8_t *r0 = mat + j * ldm, *r1 = r0 + ldm, *r2 = r1 + ldm, *r3 = r2 + ldm;
        typename I::dreg a0 = I::dzero(), a1 = I::dzero(), a2 = I::dzero(), a3 = I::dzero();
        for (int64_t p = 0; p < full; p += D) {
            const auto xw = I::template widen_x<A>(x + p);
            a0 = I::dot_row(a0, r0 + p, xw);
            a1 = I::dot_row(a1, r1 + p, xw);
            a2 = I::dot_row(a2, r2 + p, xw);
            a3 = I::dot_row(a3, r3 + p, xw);
        }
        put_i8(y, j * incy, j, I::hsum(a0) + rest(r0), add, scale, scale_inc);
        put_i8(y, (j + 1) * incy, j + 1, I::hsum(a1) + rest(r1), add, scale, scale_inc);
        put_i8(y, (j + 2) * incy, j + 2, I::hsum(a2) + rest(r2), add, scale, scale_inc);
        put_i8(y, (j + 3) * incy, j + 3, I::hsum(a3) + rest(r3), add, scale, scale_inc);
    }
    for (; j < n; ++j) {
        const int8_t* r = mat + j * ldm;
        typename I::dreg acc = I::dzero();
        for (int64_t p = 0; p < full; p += D) acc = I::dot_row(acc, r + p, I::template widen_x<A>(x + p));
        put_i8(y, j * incy, j, I::hsum(acc) + rest(r), add, scale, scale_inc);
    }
}

}  // namespace kernels
}  // namespace fastgemm
