// int8 streaming kernels: one row (a decode step) or a few rows of an int8 product, A (uint8 or
// int8) times an int8 matrix streamed once where it is, no packing. Exact int32 sums that wrap modulo
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
#include "gemv.hpp"

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

// C[i, j] = sum_p A[i, p] B[p, j] for M rows of C (row i at c + i * rsc elements), j < n, B's
// rows contiguous (rsb apart): four rows of B at a time into partial sums held in `chunk` (the
// calling thread's; M rows x as much of B's row as fits chunk_bytes, rows chunk_row_stride
// apart), each row of B one sequential stream. Each row of C is the one-row form's (rows4 per
// row of C).
template <typename I, typename A, int M>
void stream_rows_i8(int64_t n, int64_t k, const A* a, int64_t rsa, int64_t csa, const int8_t* b, int64_t rsb, void* c,
                    int64_t rsc, bool add, const float* scale, int64_t scale_inc, void* chunk, int64_t chunk_bytes) {
    constexpr int64_t C = I::GC;
    const int64_t tl = chunk_bytes / 4 / M / C * C;  // partial sums per row of C
    const int64_t ld = chunk_row_stride<M>(tl * 4) / 4;
    auto* t = static_cast<uint32_t*>(chunk);
    for (int64_t j0 = 0; j0 < n; j0 += tl) {
        const int64_t len = n - j0 < tl ? n - j0 : tl;
        const int64_t full = len / C * C;
        for (int i = 0; i < M; ++i)
            for (int64_t j = 0; j < len; ++j) t[i * ld + j] = 0;
        for (int64_t p = 0; p < k; p += 4) {
            const int8_t* r[4];
            int32_t xv[M][4];
            typename I::xq xs[M];
            for (int q = 0; q < 4; ++q) {
                const bool live = p + q < k;
                r[q] = b + (live ? p + q : p) * rsb + j0;
                for (int i = 0; i < M; ++i) xv[i][q] = live ? int32_t(a[i * rsa + (p + q) * csa]) : 0;
            }
            for (int i = 0; i < M; ++i) xs[i] = I::x4(xv[i][0], xv[i][1], xv[i][2], xv[i][3]);
            for (int64_t j = 0; j < full; j += C)
                for (int i = 0; i < M; ++i) I::rows4(t + i * ld + j, r[0] + j, r[1] + j, r[2] + j, r[3] + j, xs[i]);
            for (int64_t j = full; j < len; ++j)
                for (int i = 0; i < M; ++i)
                    for (int q = 0; q < 4; ++q) t[i * ld + j] += uint32_t(xv[i][q] * int32_t(r[q][j]));
        }
        for (int i = 0; i < M; ++i) {
            void* ci = static_cast<char*>(c) + i * rsc * 4;
            for (int64_t j = 0; j < len; ++j) put_i8(ci, j0 + j, j0 + j, t[i * ld + j], add, scale, scale_inc);
        }
    }
}

// y[j] = sum_p x[p * incx] M[p, j] for j < n, M's rows contiguous (ldm apart), y contiguous:
// stream_rows_i8 for one row, in the matrix-vector chunk (kGemvChunkBytes, the float
// gemv_rows' chunk; see docs/DESIGN.md, "Matrix-vector chunk").
template <typename I, typename A>
void gemv_rows_i8(int64_t n, int64_t k, const A* x, int64_t incx, const int8_t* mat, int64_t ldm, void* y, bool add,
                  const float* scale, int64_t scale_inc, void* chunk) {
    stream_rows_i8<I, A, 1>(n, k, x, 0, incx, mat, ldm, y, 0, add, scale, scale_inc, chunk, kGemvChunkBytes);
}

// stream_rows_i8 for 1 <= m <= kFewRowsMaxM rows of C, kFewRowsChunkBytes of partial sums in a
// buffer of kFewRowsBufferBytes.
template <typename I, typename A>
void few_rows_i8(int64_t m, int64_t n, int64_t k, const A* a, int64_t rsa, int64_t csa, const int8_t* b, int64_t rsb,
                 void* c, int64_t rsc, bool add, const float* scale, int64_t scale_inc, void* chunk) {
    with_rows<kFewRowsMaxM>(m, [&](auto rows) {
        stream_rows_i8<I, A, rows()>(n, k, a, rsa, csa, b, rsb, c, rsc, add, scale, scale_inc, chunk,
                                     kFewRowsChunkBytes);
    });
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
