// The contract between the driver (baseline ISA) and one kernel file (its own ISA flags).
#pragma once

#include <cstdint>

#include "cpu.hpp"
#include "epilogue.hpp"
#include "half.hpp"

namespace fastgemm {

// Largest MR of any kernel.
constexpr int kMaxMR = 16;
// Bytes of the partial-sum chunk gemv_rows works in; see docs/DESIGN.md, "Matrix-vector chunk".
constexpr int64_t kGemvChunkBytes = 16384;
// Up to this many vectors of y gemv_rows keeps its sums in registers when given no chunk, in
// another order than the chunk's (kernels/gemv.hpp, gemv_rows_narrow; paths.hpp, gemv_narrow);
// and stream_rows its rows of C, in the chunk's order (stream_narrow_nv).
constexpr int kGemvNarrowVectors = 4;
// Most rows of C few_rows takes, and the bytes of its partial sums: whole 4096-element float32
// rows of B for 4 rows of C, held in L2; see docs/DESIGN.md, "Few rows".
constexpr int kFewRowsMaxM = 6;
constexpr int64_t kFewRowsChunkBytes = 65536;
// The bytes from one row of the streamed rows' partial sums (row_bytes of them, float or int8)
// to the next: for M > 1 rows, padded to about 4 KiB / M more than a multiple of 4 KiB, so the
// rows' addresses differ in their low 12 bits. Rows a multiple of 4 KiB apart (4 rows of a 64
// KiB chunk: 16 KiB) made each row's load wait for the store to the row before (4K aliasing:
// x.T @ w with 4 columns, 3000 x 4 x 64, ran at 0.3-0.5x NumPy on Zen 4, depending on where the
// buffers fell). A few-rows buffer (kFewRowsBufferBytes) has room for the padding.
template <int M>
constexpr int64_t chunk_row_stride(int64_t row_bytes) {
    constexpr int64_t skew = 4096 / M / 64 * 64;
    return M == 1 ? row_bytes : row_bytes + (skew - row_bytes % 4096 + 4096) % 4096;
}
constexpr int64_t kFewRowsBufferBytes = kFewRowsChunkBytes + (kFewRowsMaxM - 1) * 4096;
// Most rows of C gemv_packed takes against a pre-packed B; see docs/DESIGN.md, "Pre-packed B".
constexpr int kPackedRowsMaxM = 3;

// C[0:m, 0:n] = alpha * A @ B + beta * C for one register tile, m fixed by the instantiation.
// Step p of the k loop reads A's m values at a + p*lda (contiguous: a packed sliver has
// lda == MR) and B's NR values at b + p*ldb (a packed sliver has ldb == NR; a row-major B
// can be read in place). C is row-major with row stride ldc; n <= NR columns are written,
// the rest masked, never read or written. beta == 0: C is not read.
template <typename T>
using UkernelFn = void (*)(int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                           int64_t ldc, int n);

// A run of same-shaped products: item i's operands start i * sa, i * sb, i * sc elements after
// item 0's. next_ahead: the small kernels may prefetch each next item's lines (stack_ahead's
// shapes); gemm_batched clears it for stacks within cache, whose lines the hardware's
// prefetchers bring in better.
struct StackRun {
    int64_t count, sa, sb, sc;
    bool next_ahead = true;
};

// Most vectors in an NR-wide row of any kernel.
constexpr int kMaxNV = 8;

// by_nv[v] computes a tile v vectors wide (n <= v * lanes), 1 <= v <= NR / lanes; by_nv[0] one
// at most half a vector wide in half-width registers, where the ISA has them (AVX-512's 256-bit
// ones: Zen 4 runs a 512-bit FMA at the cost of two 256-bit ones), else null.
template <typename T>
struct TileRow {
    UkernelFn<T> by_nv[kMaxNV + 1];
};

// The tile of a TileRow (or Int8TileRow, whose by_nv[0] is null) for n columns, 1 <= n <= NR.
template <typename Row>
auto tile_for(const Row& row, int64_t n, int lanes) {
    return n <= lanes / 2 && row.by_nv[0] ? row.by_nv[0] : row.by_nv[(n + lanes - 1) / lanes];
}

// The lanes tile_for's vectors span for n columns (half a vector where the row has a half tile).
template <typename Row>
int64_t lanes_spanned(const Row& row, int64_t n, int lanes) {
    return n <= lanes / 2 && row.by_nv[0] ? lanes / 2 : (n + lanes - 1) / lanes * lanes;
}

// Whether n columns leave a sixth or more of the lanes of tile_for's vectors idle (float64 on
// 8 lanes: 9-13 columns in 16): then other forms than C's rows in vectors may pay.
template <typename Row>
bool lanes_idle(const Row& row, int64_t n, int lanes) {
    return 5 * lanes_spanned(row, n, lanes) >= 6 * n;
}

// Every kernel of one element type and one register tile shape.
template <typename T>
struct KernelTable {
    int mr;
    int nr;
    int lanes;  // elements per vector register
    // tiles[m].by_nv[v]: an m-row tile, 1 <= m <= mr, v vectors wide. An edge tile pays for
    // the rows and vectors it has, not for MR x NR (a decode step, n = 129 = 4 x 32 + 1).
    TileRow<T> tiles[kMaxMR + 1];
    // Copy an mc x kc block of A into ceil(mc/MR) slivers of MR x kc (column of the sliver
    // contiguous), zero-padding the last one.
    void (*pack_a)(int64_t mc, int64_t kc, const T* a, int64_t rsa, int64_t csa, T* ap);
    // Copy a kc x nc block of B into ceil(nc/NR) slivers of kc x NR (row contiguous),
    // zero-padding the last one. Slivers [s0, s1) only, so threads can share the work.
    void (*pack_b)(int64_t kc, int64_t nc, const T* b, int64_t rsb, int64_t csb, T* bp, int64_t s0, int64_t s1);
    // dst[i * ld + j] = src[j * cs + i] for i < rows, j < cols: a matrix stored by columns (each
    // contiguous) copied row-major, rows ld apart (an operand of the small kernels).
    void (*copy_columns)(int64_t rows, int64_t cols, const T* src, int64_t cs, T* dst, int64_t ld);
    // Matrix-vector products, the shape of a product with one row or one column.
    // y[j] = alpha * sum_p x[p*incx] * M[p*ldm + j] + beta * y[j], j < n, y contiguous:
    // M's rows are contiguous and streamed one after another. `chunk`: kGemvChunkBytes of
    // 64-byte aligned memory owned by the calling thread (off the stack: OpenMP workers may
    // have small ones); null for n up to kGemvNarrowVectors vectors: the sums in registers.
    // ahead: M comes from memory, its rows to be prefetched (vectors_from_memory; with a chunk).
    void (*gemv_rows)(int64_t n, int64_t k, T alpha, const T* x, int64_t incx, const T* mat, int64_t ldm, T beta, T* y,
                      T* chunk, bool ahead);
    // y[j*incy] = alpha * sum_p x[p] * M[j*ldm + p] + beta * y[j*incy], j < n, x contiguous:
    // one dot product per contiguous row of M.
    void (*gemv_dots)(int64_t n, int64_t k, T alpha, const T* x, const T* mat, int64_t ldm, T beta, T* y, int64_t incy);
    // C[i * rsc + j * csc] = alpha * sum_p A[i * lda + p] * B[j * ldb + p] + beta * C[...], i < m,
    // j < n: dot products of rows contiguous along k (x @ W.T with few rows on one side).
    void (*dots)(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
                 T* c, int64_t rsc, int64_t csc);
    // C[i, j] = alpha * sum_p A[i, p] B[p, j] + beta * C[i, j] for m <= kFewRowsMaxM rows of C,
    // B's and C's rows contiguous: B's rows streamed once as gemv_rows streams its matrix, not
    // packed. `chunk`: kFewRowsBufferBytes, 64-byte aligned, the calling thread's. ahead: B comes
    // from memory, its rows to be prefetched (rows_from_memory).
    void (*few_rows)(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t rsa, int64_t csa, const T* b,
                     int64_t rsb, T beta, T* c, int64_t rsc, T* chunk, bool ahead);
    // A whole product small enough that packing would cost more than it saves:
    // C[i, j] = alpha * sum_p A[i, p] B[p, j] + beta * C[i, j], rows of B and C contiguous.
    // A few rows of C stay in registers over all of k, one panel of columns at a time; k in
    // chunks when small_chunks_b says so.
    void (*small)(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t rsa, int64_t csa, const T* b,
                  int64_t rsb, T beta, T* c, int64_t rsc);
    // `small` for each product of a run, the shape dispatched once for the run; each item's last
    // `tail` columns (0: none) then go to `dots` where A's rows are contiguous (small_tail_dots,
    // paths.hpp; B's columns copied along k, tail x k within kTailDotsBytes), else down A's
    // columns (small_tail_columns: A stored by columns, rows 1 apart, tail <= kTailColumnsMax).
    void (*small_stack)(const StackRun& run, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t rsa,
                        int64_t csa, const T* b, int64_t rsb, T beta, T* c, int64_t rsc, int64_t tail);
    // `small_stack` for runs with B stored by columns (column j at b + j * csb, contiguous), or
    // with C so (at c + j * csc; rows of B contiguous, beta 0): each item's B copied row-major
    // into t (k rows of room for n rounded up to whole vectors) before it, or its C computed
    // there (m x n) and transposed into place (where transposed_min_k is set, transposed from
    // registers, t unused). B's last `tail` columns (small_tail_columns; A stored by columns) go
    // down A's columns, not copied.
    void (*small_stack_b_cols)(const StackRun& run, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t rsa,
                               int64_t csa, const T* b, int64_t csb, T beta, T* c, int64_t rsc, T* t, int64_t tail);
    void (*small_stack_c_cols)(const StackRun& run, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t rsa,
                               const T* b, int64_t rsb, T* c, int64_t csc, T* t);
    // `reps` rounds of independent vector FMAs; returns the flops done. Timed by the caller
    // to measure one core's FMA ceiling for this ISA and type.
    double (*fma_loop)(int64_t reps);
    // fma_loop in the ISA's half-width registers (kernels/lanes.hpp, HalfOf), null where it has
    // none: half_tails compares the two.
    double (*half_fma_loop)(int64_t reps);
    // c[i*rsc + j] = act(c[i*rsc + j] + bias[j]) for i < m, j < n (bias null: no add), on a
    // finished block of C; see docs/DESIGN.md, "Fused bias and activation".
    void (*epilogue)(int64_t m, int64_t n, T* c, int64_t rsc, const T* bias, Activation act);
    // C[0:m, 0:n] = alpha * A @ B + beta * C (beta == 0: C not read) for m <= kPackedRowsMaxM
    // rows, A[i, p] at a[i * rsa + p * csa], C's rows contiguous (row stride rsc), B pack_b's
    // ceil(n / nr) slivers of k x nr (a pre-packed B's panel): the slivers streamed several at
    // a time. Each row equals the tile's row.
    void (*gemv_packed)(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t rsa, int64_t csa, const T* bp,
                        T beta, T* c, int64_t rsc);
    // KC at most this for this tile (0: the cache model's alone); see docs/DESIGN.md, "KC depth".
    int64_t max_kc;
    // From this k every x.T @ W.T stack item with beta 0 goes to small_stack_c_cols, which
    // writes C^T transposed from registers (0: only items with m <= k, C^T through t).
    int64_t transposed_min_k;
};

// The small kernels take a B past kSmallChunkPastBytes in k chunks of kSmallChunkBytes (half
// of a 32 KiB L1, so each row group rereads its chunk from L1) when its rows are at most
// kSmallChunkBytes / kSmallChunkMinK bytes (a B within L2 lost 5-10% to chunks on many rows,
// and 20-step chunks lost to carrying the sums between them); see docs/DESIGN.md, "Small
// products".
constexpr int64_t kSmallChunkBytes = 16 * 1024;
constexpr int64_t kSmallChunkMinK = 32;
constexpr int64_t kSmallChunkPastBytes = 256 * 1024;
// A C of at most kSmallOneGroupRows rows is one row group of the small kernels, which rereads
// nothing of B: they take its B in one pass, where chunks would only restart the B prefetch and
// carry the sums (float32 2 x 64 x 2000 1.29x, float64 4 x 50 x 6000 1.24x), also in several
// panels of kSmallOnePassPanelBytes or more (AVX-512: float32 3 x 100 x 3000 1.14x). Narrower
// panels (AVX2's 64 bytes) each read part of every B row's lines, two lines a row at NumPy's
// 16-byte offset, so several of them go in chunks (AVX2: float64 2 x 64 x 3000 0.77x in one
// pass); see docs/DESIGN.md, "Small products".
constexpr int64_t kSmallOneGroupRows = 4;
constexpr int64_t kSmallOnePassPanelBytes = 256;
constexpr bool small_one_pass(int64_t m, int64_t n, int64_t panel_cols, int64_t elem_bytes) {
    return m <= kSmallOneGroupRows && (n <= panel_cols || panel_cols * elem_bytes >= kSmallOnePassPanelBytes);
}
constexpr bool small_chunks_b(int64_t row_bytes, int64_t k) {
    return row_bytes * kSmallChunkMinK <= kSmallChunkBytes && k * row_bytes > kSmallChunkPastBytes;
}

// Up to this k the small kernels sweep a C wider than one panel a group of rows at a time
// (kernels/small.hpp, short_k), reading A's elements a group's k at a time: an A stored by
// columns costs them k lines a group at any size.
constexpr int64_t kShortKMax = 8;
// Past this many bytes of B's k rows short_k sweeps B in blocks of columns, every row group on a
// block before the next (so each stays in L1).
constexpr int64_t kShortKBlockPastBytes = 32 * 1024;

// Whether the small kernels end a pass whose last columns fill part of a vector after whole ones
// (20 float32 columns: 16 + 4) with a pass of its own in half-width registers (AVX-512's 256-bit
// ones), not with a masked whole vector in the same pass: where the CPU runs half-width FMAs at
// well over the rate of whole ones (Zen 4, whose 512-bit FMA takes both 256-bit pipes), not where
// it runs both at one rate (an Intel Xeon with two 512-bit pipes). A part alone goes in half-width
// registers on any CPU. Measured once (fma_width.cpp); see docs/DESIGN.md, "Half-width tails".
bool half_tails();

// The most bytes of B's columns small_stack copies along k for an item's tail (on the stack).
constexpr int64_t kTailDotsBytes = 16 * 1024;

// The most columns of an item's tail small_stack takes down A's columns (column_tail).
constexpr int kTailColumnsMax = 4;

// Costs for x @ W.T with a C of n <= kDotsMaxSide columns, fewer than a vector's lanes
// (narrow_dots_pay, paths.hpp), in quarter cycles: the dot kernels take a row of C in
// fma x n x ceil(k / lanes) + sum x n, the small kernels in per_k x k, and the path that reads B
// in place spares the other's copy of its n x k elements (copy each). From min_k on (0: never)
// any C of at most kDotsMaxSide columns takes the dots, whatever the lanes.
struct NarrowDots {
    int64_t fma, sum, per_k, copy, min_k;
};

// x @ W.T with a C of kDotsShortMinN to max_n columns, other than whole or half vectors, and up
// to max_m rows (0: never) as dot products from min_k: the small kernels leave lanes idle there
// and copy each W by rows, which a stack item's few rows do not amortize.
struct ShortDots {
    int64_t max_m, max_n, min_k;
};

// Which path a product takes, by shape; see docs/DESIGN.md, "Shape-specific paths".
struct Tuning {
    int64_t direct_max_m;    // up to this many rows B is read in place, not packed (0: never)
    int64_t skinny_max_m;    // up to this many rows the skinny tables are used
    int64_t small_max_work;  // up to this many float32 multiply-adds (B in L2; a float64 one counts 2) the small kernel
                             // runs
    int64_t head_min_slivers;     // a misaligned B gets a packed head only from this many slivers
    int64_t few_rows_max_m;       // from 2 up to this many rows (<= kFewRowsMaxM) few_rows streams B (0: never)
    int64_t int8_few_rows_max_m;  // the same for int8 products, in groups of at most kFewRowsMaxM rows
    int64_t small_narrow_bytes;   // C's rows up to this many bytes take the small kernel whatever the work (B in L2)
    int64_t a_in_place_slivers;   // up to this many B slivers an A stored by columns is read in place (0: never)
    int64_t small_max_b_l1s;      // small_max_work's products only with B within this many L1s (0: L2 bounds B)
    int64_t small_columns_max_m;  // an A stored by columns: the small kernel only up to this many rows of C wider than
                                  // small_narrow_bytes (0: any)
    int64_t f32_dots_max_side;  // float32 x @ W.T: dot products up to this many rows or columns of C past 4 (k >= 512)
    int64_t f64_dots_max_side;  // the same for float64
    int64_t small_chunked_any;  // 1: products whose B the small kernels take in chunks (small_chunks_b) go to them at
                                // any work and any size of B (rows of C past 256 bytes: up to 32 rows)
    int64_t dots_rows_max_m;    // x @ W.T up to this many rows as dot products from kDotsRowsMinK (k at least
                                // a quarter of W's rows, W within half of L3; 0: up to 4 rows only)
    int64_t few_row_groups_max_m;  // past few_rows_max_m, up to this many rows few_rows streams B once per group of at
                                   // most kFewRowsMaxM rows, when those streams fit L3 (0: never)
    int64_t f32_dots_l2_max_m;     // float32 x @ W.T up to this many rows as dot products when W fits half of L2 and
                                   // k spans kDotsL2MinKBytes (0: never)
    int64_t f64_dots_l2_max_m;     // the same for float64
    int64_t f32_dots_idle_max_n;   // float32 x @ W.T with up to this many columns of C that leave lanes idle
                                   // (lanes_idle) as dot products from kDotsIdleMinK (0: never)
    // x @ W.T with a few columns, past the few rows, as dot products (ShortDots; none by default).
    ShortDots f32_short_dots{0, 0, 0};
    ShortDots f64_short_dots{0, 0, 0};
    // Narrow x @ W.T as dot products (NarrowDots); the defaults are session 31's rule, fitted
    // on Zen 4's float32 AVX-512 kernels.
    NarrowDots f32_narrow_dots{4, 6, 2, 0, 48};
    NarrowDots f64_narrow_dots{4, 6, 2, 0, 128};
};

// Low-precision inputs (S = bfloat16_t or float16_t) on the float32 kernels: packers that
// widen to float32 while packing, into the slivers of the set's f32 main tile (same MR, NR
// and layout as KernelTable<float>'s pack_a / pack_b), and matrix-vector kernels that widen
// as they stream the 2-byte matrix once (half the bytes of float32). Same contracts as
// KernelTable<float>'s functions of the same names, with A, B, x and the matrix in S.
// See docs/DESIGN.md, "Low-precision products".
template <typename S>
struct LowpTable {
    void (*pack_a)(int64_t mc, int64_t kc, const S* a, int64_t rsa, int64_t csa, float* ap);
    void (*pack_b)(int64_t kc, int64_t nc, const S* b, int64_t rsb, int64_t csb, float* bp, int64_t s0, int64_t s1);
    void (*gemv_rows)(int64_t n, int64_t k, float alpha, const S* x, int64_t incx, const S* mat, int64_t ldm,
                      float beta, float* y, float* chunk, bool ahead);
    void (*gemv_dots)(int64_t n, int64_t k, float alpha, const S* x, const S* mat, int64_t ldm, float beta, float* y,
                      int64_t incy);
    void (*few_rows)(int64_t m, int64_t n, int64_t k, float alpha, const S* a, int64_t rsa, int64_t csa, const S* b,
                     int64_t rsb, float beta, float* c, int64_t rsc, float* chunk, bool ahead);
    // dst (rows x cols, row-major, contiguous) = src widened, any strides: the operands of a
    // small product, for the float32 small kernels.
    void (*widen)(int64_t rows, int64_t cols, const S* src, int64_t rs, int64_t cs, float* dst);
};

// bfloat16 x bfloat16 on a pairwise dot-product instruction (AVX512_BF16 vdpbf16ps): A and B
// packed as pairs along k, one 32-bit slot holding elements 2q (low half) and 2q + 1 (high
// half), a missing last element 0; float32 accumulators. Slivers as pack_a / pack_b's with
// ceil(kc / 2) slot steps instead of kc element steps (slots stored in float-sized memory).
// tiles[m].by_nv[v]: UkernelFn<float>'s contract with k counted in slot steps and a, b at pair
// slivers (lda == mr, ldb == nr slots a step). See docs/DESIGN.md, "Low-precision products".
struct PairKernels {
    int mr;
    int nr;
    int lanes;
    TileRow<float> tiles[kMaxMR + 1];
    void (*pack_a)(int64_t mc, int64_t kc, const bfloat16_t* a, int64_t rsa, int64_t csa, float* ap);
    void (*pack_b)(int64_t kc, int64_t nc, const bfloat16_t* b, int64_t rsb, int64_t csb, float* bp, int64_t s0,
                   int64_t s1);
    // KernelTable<float>::epilogue of the same ISA (the tiles' C is float32).
    void (*epilogue)(int64_t m, int64_t n, float* c, int64_t rsc, const float* bias, Activation act);
    // `reps` rounds of independent dot-product instructions; returns the flops done (2 per
    // product), timed like KernelTable::fma_loop for the pair kernels' peak.
    double (*dot_loop)(int64_t reps);
};

struct LowpKernels {
    LowpTable<bfloat16_t> bf16;
    LowpTable<float16_t> f16;
    // dst[i] = src[i] rounded to float16, to nearest even, i < n (the one rounding of a
    // float16 result).
    void (*narrow_f16)(int64_t n, const float* src, float16_t* dst);
    // bfloat16 products on a dot-product instruction, or null: widened to the f32 tile.
    const PairKernels* bf16_pairs;
};

// int8 products (A uint8 or int8, B int8): int32 accumulators, exact, wrapping modulo 2^32
// like every int32 sum in C++'s unsigned arithmetic and NumPy's int32 matmul (never saturating).
// A and B are packed in k-groups of `kgroup` (the depth one multiply instruction reduces: 2 for
// vpmaddwd, 4 for vpdpbusd, 1 for scalar or widening multiplies), zero-padded to a whole group.
// See docs/DESIGN.md, "int8 products".
//
// One register tile: acc = the kc-deep product of a packed A sliver (MR rows) and a packed B
// sliver (NR columns, followed by the sliver's column corrections when the table has them).
// C is row-major with row stride ldc, n <= NR columns written, the rest masked. Then:
//   scale == nullptr: C is int32; C = acc, or C += acc when `add` (C holds the sum of earlier
//     k slices, or the caller's C to accumulate into).
//   scale != nullptr: C is float32, this is the last k slice: C = float(acc + (add ? the int32
//     partial sum held in C's memory : 0)) * scale[j * scale_inc] (scale_inc 0: one scale).
using Int8UkernelFn = void (*)(int64_t kc, const void* a, const void* b, void* c, int64_t ldc, int n, bool add,
                               const float* scale, int64_t scale_inc);

struct Int8TileRow {
    Int8UkernelFn by_nv[kMaxNV + 1];
};

// Bytes from one packed int8 B sliver to the next: round_up(kc, kgroup) x `width` elements of
// `size` bytes, then `width` int32 corrections when `sums`, padded to a 64-byte line.
constexpr int64_t int8_b_sliver_bytes(int64_t kc, int kgroup, int width, int size, bool sums) {
    return ((kc + kgroup - 1) / kgroup * kgroup * width * size + (sums ? width * 4 : 0) + 63) / 64 * 64;
}

// Every int8 kernel for one type of A (uint8_t or int8_t) and one register tile shape.
template <typename A>
struct Int8Table {
    int mr;
    int nr;
    int lanes;    // int32 accumulators per vector register
    int kgroup;   // k values one multiply instruction reduces; packed slivers hold whole groups
    int a_size;   // bytes of one packed A element (a k value of one row)
    int b_size;   // bytes of one packed B element
    bool b_sums;  // each packed B sliver is followed by NR int32 corrections (-128 x its column sums)
    Int8TileRow tiles[kMaxMR + 1];
    // An mc x kc block of A into ceil(mc/MR) slivers of MR x round_up(kc, kgroup), zero-padded.
    void (*pack_a)(int64_t mc, int64_t kc, const A* a, int64_t rsa, int64_t csa, void* ap);
    // Slivers [s0, s1) of a kc x nc block of B, each round_up(kc, kgroup) x NR (then its
    // corrections when b_sums), zero-padded; a sliver starts every int8_b_sliver_bytes(kc) bytes.
    void (*pack_b)(int64_t kc, int64_t nc, const int8_t* b, int64_t rsb, int64_t csb, void* bp, int64_t s0, int64_t s1);
    // One row of C (m == 1) from an int8 matrix where it is (no packing): output j is the exact
    // sum over p < k of x's p-th value times M's (p, j) element, finished as the tile finishes
    // it (int32, added to y's int32 when `add`; or float32 times scale[j * scale_inc] when
    // scale != nullptr).
    // gemv_rows: x[p * incx], M[p * ldm + j] (M's rows contiguous), y contiguous; `chunk`: as
    // KernelTable::gemv_rows' (kGemvChunkBytes, 64-byte aligned, the calling thread's).
    void (*gemv_rows)(int64_t n, int64_t k, const A* x, int64_t incx, const int8_t* mat, int64_t ldm, void* y, bool add,
                      const float* scale, int64_t scale_inc, void* chunk);
    // gemv_dots: x[p] (contiguous), M[j * ldm + p] (a Linear layer's n x k weights), y[j * incy].
    void (*gemv_dots)(int64_t n, int64_t k, const A* x, const int8_t* mat, int64_t ldm, void* y, int64_t incy, bool add,
                      const float* scale, int64_t scale_inc);
    // few_rows: 1 <= m <= kFewRowsMaxM rows of C, A[i, p] at a[i * rsa + p * csa], B's rows
    // contiguous (rsb apart), C's row i at c + i * rsc elements (4 bytes each) and contiguous,
    // each row finished as gemv_rows finishes one; `chunk`: kFewRowsBufferBytes, the calling thread's.
    void (*few_rows)(int64_t m, int64_t n, int64_t k, const A* a, int64_t rsa, int64_t csa, const int8_t* b,
                     int64_t rsb, void* c, int64_t rsc, bool add, const float* scale, int64_t scale_inc, void* chunk);
};

struct Int8Kernels {
    Int8Table<uint8_t> u8;
    Int8Table<int8_t> s8;
    // Faster int8 kernels of an instruction-set extension this set's flags do not assume (compiled
    // in their own file, e.g. AVX512_VNNI), used instead when better_can_run says the CPU has it.
    const Int8Kernels* better;
    bool (*better_can_run)(const CpuFeatures&);
    const char* isa;  // what the int8 kernels use, for info()
};

struct KernelSet {
    const char* name;  // what FASTGEMM_KERNEL / set_kernel accept
    const char* isa;   // human-readable instruction set
    // Whether this CPU and OS can execute the set. Baseline code (cpu.cpp), never code of the
    // kernel file: it runs before anyone knows.
    bool (*can_run)(const CpuFeatures&);
    Tuning tuning;
    KernelTable<float> f32;
    KernelTable<double> f64;
    // For products with few rows, B read in place: a taller, narrower tile loads one vector
    // of B per MR FMAs, so a B streamed from memory still feeds the FMA units.
    KernelTable<float> f32_skinny;
    KernelTable<double> f64_skinny;
    // bfloat16 / float16 inputs, converted to float32 for the f32 main tile.
    LowpKernels lowp;
    // uint8 / int8 x int8 products, exact int32 accumulation.
    Int8Kernels int8;
};

// One per kernel file; which ones exist depends on the target architecture. Constant-initialised
// data, so nothing in a kernel file runs before dispatch has checked the CPU can execute it.
extern const KernelSet generic_kernels;
#if defined(__x86_64__) || defined(_M_X64)
extern const KernelSet avx2_kernels;
extern const KernelSet avx512_kernels;
extern const KernelSet avx512bf16_kernels;  // avx512's set with bf16_pairs (vdpbf16ps)
extern const PairKernels avx512bf16_pair_kernels;
// The AVX512_VNNI int8 kernels (vpdpbusd), the avx512 set's `int8.better`.
extern const Int8Kernels avx512_vnni_int8;
#elif defined(__aarch64__)
extern const KernelSet neon_kernels;
#endif

}  // namespace fastgemm
