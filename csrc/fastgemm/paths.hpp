// Shape decisions shared by gemm, gemm_batched and gemm_lowp: orientation, which products the
// small kernels take and how they run, the matrix-vector and dot-product forms, and the
// floating-point flag rule every path follows.
#pragma once

#include <algorithm>
#include <cfenv>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "caches.hpp"
#include "epilogue.hpp"
#include "kernel.hpp"
#include "scratch.hpp"
#include "threading.hpp"
#include "view.hpp"

namespace fastgemm {

// The one of `options` whose type is Want: a kernel table chosen by element type at compile time.
template <typename Want, typename First, typename... Rest>
const Want& pick(const First& first, const Rest&... rest) {
    if constexpr (std::is_same_v<First, Want>) return first;
    else return pick<Want>(rest...);
}

// The kernel tables of element type T in a kernel set.
template <typename T>
const KernelTable<T>& main_table(const KernelSet& ks) {
    return pick<KernelTable<T>>(ks.f32, ks.f64);
}
template <typename T>
const KernelTable<T>& skinny_table(const KernelSet& ks) {
    return pick<KernelTable<T>>(ks.f32_skinny, ks.f64_skinny);
}

// One product as the row-major paths see it: a stride along a dimension of size 1 made unit
// (so they catch vectors and single rows), and a column-major C computed as C^T = B^T A^T,
// which is row-major (`transposed` then says so). A and B are stored as S, C as T.
template <typename S, typename T>
struct Oriented {
    View<const S> a, b;
    View<T> c;
    bool transposed;
};

template <typename S, typename T>
Oriented<S, T> orient(View<const S> a, View<const S> b, View<T> c) {
    if (c.cols == 1) c.cs = 1;
    if (c.rows == 1) c.rs = 1;
    if (c.cs != 1 && c.rs == 1)
        return {{b.data, b.cols, b.rows, b.cs, b.rs},
                {a.data, a.cols, a.rows, a.cs, a.rs},
                {c.data, c.cols, c.rows, c.cs, c.rs},
                true};
    return {a, b, c, false};
}

// One product as the small kernels see it: oriented, with C's and B's rows contiguous.
template <typename T>
using SmallProduct = Oriented<T, T>;

// Whether a product of m x n x k is within the small kernels' reach on kernel set ks: B inside
// L2, and tuning.small_max_work float32 multiply-adds (8-byte elements count twice) with B
// within tuning.small_max_b_l1s L1s or few rows, or C's rows within tuning.small_narrow_bytes
// (packing A for one or two slivers costs more than the packed tile saves); or, where
// tuning.small_chunked_any, a B the small kernels take in k chunks (small_chunks_b) at any
// size (rows of C past 256 bytes: up to 32 rows); see docs/DESIGN.md, "Small products".
bool small_shape(const KernelSet& ks, int64_t m, int64_t n, int64_t k, int64_t elem_bytes);

// How a stack item of these views (m, n, k >= 1, one thread) runs: as gemm's C^T on the
// few-row kernels where gemm takes that (few_columns: run_few_columns item by item), or on the
// small kernels for a C narrower than a vector (narrow_columns: run_narrow_transposed item by
// item); else on the small kernels of ks, none where gemm would give it another form (dot
// products, a narrow C^T of the blocked path, a dot-kernel tail; a few-row tail with B copied):
// small_shape, C's rows contiguous once oriented and A read well. B read in place by
// KernelTable::small_stack when its rows are contiguous, even where they crowd L1
// (small_stack prefetches the next item, which a copy of B would wait for; gemm.cpp); else, by
// columns, a run at a time by small_stack_b_cols (each B copied row-major) or, x.T @ W.T with
// beta 0, small_stack_c_cols (C^T = B^T A^T, both read in place); else item by item, B copied
// (run_b_copied). Any of them sums each element's products in order as gemm's small kernels
// do: the same bits, without gemm's per-call checks, flag rule and choice of path (3571 x (7 x
// 6 x 10) float64 x.T @ W.T spent 4/5 of its time there).
enum class SmallItem { none, in_place, b_columns, c_columns, b_copied, few_columns, narrow_columns };
template <typename T>
SmallItem small_item(const KernelSet& ks, View<const T> a, View<const T> b, View<T> c, T beta, SmallProduct<T>& out);
// An item small_item found b_copied.
template <typename T>
void run_b_copied(const KernelTable<T>& uk, T alpha, SmallProduct<T> sp, T beta);

extern template SmallItem small_item<float>(const KernelSet&, View<const float>, View<const float>, View<float>, float,
                                            SmallProduct<float>&);
extern template SmallItem small_item<double>(const KernelSet&, View<const double>, View<const double>, View<double>,
                                             double, SmallProduct<double>&);
extern template void run_b_copied<float>(const KernelTable<float>&, float, SmallProduct<float>, float);
extern template void run_b_copied<double>(const KernelTable<double>&, double, SmallProduct<double>, double);

// C^T's columns lo..hi (C's rows) of a product narrow_small_transposed takes (small_item's
// narrow_columns), on the small kernels into t (C^T, n x m) and from there into C with beta.
template <typename T>
void run_narrow_transposed(const KernelTable<T>& uk, T alpha, const SmallProduct<T>& sp, T beta, int64_t lo, int64_t hi,
                           T* t);

extern template void run_narrow_transposed<float>(const KernelTable<float>&, float, const SmallProduct<float>&, float,
                                                  int64_t, int64_t, float*);
extern template void run_narrow_transposed<double>(const KernelTable<double>&, double, const SmallProduct<double>&,
                                                   double, int64_t, int64_t, double*);

// The products of a run (run.count items, run.sa / sb / sc elements apart; a single product: 1)
// as dot products, dots_side's `side` (not 0): the short side's operand (A's rows or B's
// columns) copied along k into thread_scratch where it is not; on_caller as run_dots'.
template <typename T>
void run_dots_copied(const KernelTable<T>& uk, int side, T alpha, View<const T> a, View<const T> b, T beta, View<T> c,
                     const StackRun& run, bool on_caller = false);

extern template void run_dots_copied<float>(const KernelTable<float>&, int, float, View<const float>, View<const float>,
                                            float, View<float>, const StackRun&, bool);
extern template void run_dots_copied<double>(const KernelTable<double>&, int, double, View<const double>,
                                             View<const double>, double, View<double>, const StackRun&, bool);

// A product gemm computes as C^T = B^T A^T on the few-row kernels (a narrow C with A stored by
// columns: x.T @ w with a few columns of w; small_item's few_columns), so run (n x m scratch,
// beta applied as C^T moves into C); ahead as rows_from_memory says for the product or its stack.
template <typename T>
void run_few_columns(const KernelTable<T>& uk, T alpha, View<const T> a, View<const T> b, T beta, View<T> c,
                     bool ahead);

extern template void run_few_columns<float>(const KernelTable<float>&, float, View<const float>, View<const float>,
                                            float, View<float>, bool);
extern template void run_few_columns<double>(const KernelTable<double>&, double, View<const double>, View<const double>,
                                             double, View<double>, bool);

// The columns gemm gives the dot kernel at the end of a small product of these views
// (small_tail_dots; data unused), 0 when it has none or is not a small one. For a product that
// is not a matrix-vector, dot-product or few-column one (the caller's checks).
template <typename T>
int64_t small_tail_of(const KernelSet& ks, View<const T> a, View<const T> b, View<T> c);

extern template int64_t small_tail_of<float>(const KernelSet&, View<const float>, View<const float>, View<float>);

// Pieces of 4-row groups per thread for the small kernels: a thread descheduled on a busy
// machine then costs the others only a piece, not its whole share.
constexpr int kSmallPiecesPerThread = 4;

// The widest column panel of the small kernels: four 512-bit vectors.
constexpr int64_t kSmallPanelBytes = 256;

// The small kernels sweep C one column panel at a time down all the rows they are given. A C
// past half of L2 and wider than one panel goes to them kSmallBlockRows rows at a time instead,
// so C is written along its rows (3000 x 3000 x 3 float32 2.2x, 1000 x 1000 x 20 1.5x; a C within
// L2 lost 3%); see docs/DESIGN.md, "Small products". Products that short_k takes (k <= kShortKMax)
// with B's k rows within kShortKBlockPastBytes go whole: short_k writes along C's rows itself and
// groups rows that share their offset in a line only over the rows it is given (Intel Xeon,
// float64 3000 x 130 x 3 0.66x -> 1.81x NumPy); past that bound each of its blocks of B's columns
// would cross all of C's rows (1000 x 1000 x 7 1.83x -> 1.43x).
constexpr int64_t kSmallBlockRows = 16;

// The rows of C a call of the small kernels takes, 0 for C whole through small_stack.
template <typename T>
int64_t small_block_rows(const SmallProduct<T>& sp) {
    const int64_t k = sp.a.cols, row_bytes = sp.c.cols * int64_t(sizeof(T));
    if (row_bytes <= kSmallPanelBytes || 2.0 * double(sp.c.rows) * double(row_bytes) <= double(caches().l2.size))
        return 0;
    return k <= kShortKMax && k * row_bytes <= kShortKBlockPastBytes ? sp.c.rows : kSmallBlockRows;
}

// An oriented small product on `threads` threads: on one, small_stack with a run of one (its
// fixed-shape kernels); on more, whole 4-row groups per thread; blocks of rows when
// small_block_rows says so. Every C element is computed the same way on any split, so the
// result does not depend on the thread count.
template <typename T>
void run_small(const KernelTable<T>& uk, int threads, T alpha, const SmallProduct<T>& sp, T beta) {
    const int64_t k = sp.a.cols, blocks = small_block_rows(sp), block = blocks ? blocks : sp.c.rows;
    auto rows = [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; i += block)
            uk.small(std::min(block, hi - i), sp.c.cols, k, alpha, sp.a.data + i * sp.a.rs, sp.a.rs, sp.a.cs, sp.b.data,
                     sp.b.rs, beta, sp.c.data + i * sp.c.rs, sp.c.rs);
    };
    if (threads == 1 && blocks) return rows(0, sp.c.rows);
    if (threads == 1) {
        uk.small_stack(StackRun{1, 0, 0, 0}, sp.c.rows, sp.c.cols, k, alpha, sp.a.data, sp.a.rs, sp.a.cs, sp.b.data,
                       sp.b.rs, beta, sp.c.data, sp.c.rs, 0);
        return;
    }
    parallel_ranges(threads, sp.c.rows, 4, [&](int, int64_t lo, int64_t hi) { rows(lo, hi); }, kSmallPiecesPerThread);
}

// try_gemv's `finish` for an epilogue: on outputs [lo, hi) (stride incy) right after the
// thread computed them, a row of C (m == 1) takes bias[lo:hi], a column bias[0] throughout.
template <typename T>
void gemv_epilogue(const KernelTable<T>& uk, int64_t m, const Epilogue<T>& ep, int64_t lo, int64_t hi, T* y,
                   int64_t incy) {
    if (!ep.active()) return;
    if (m == 1) apply_epilogue(uk, View<T>{y + lo * incy, 1, hi - lo, 1, incy}, ep.from_column(lo));
    else apply_epilogue(uk, View<T>{y + lo * incy, hi - lo, 1, incy, 1}, ep);
}

// One row or one column of C as a matrix-vector product y = M x: which kernel form, and where x,
// M and y are. `rows`: y += x[p] M[p, :] (gemv_rows, y contiguous); else y[j] = dot(x, M[j, :])
// (gemv_dots, x and M's rows contiguous). x is A's row (x_from_a) or B's column.
struct GemvForm {
    bool rows, x_from_a;
    int64_t len, incx, ldm, incy;
};

// The form for a product with m == 1 or n == 1, or false when the strides fit none.
template <typename SA, typename SB, typename T>
bool gemv_form(View<const SA> a, View<const SB> b, View<T> c, GemvForm& f) {
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    if (m == 1 && n == 1 && a.cs == 1 && b.rs == 1)  // one dot: the rows form would run one lane
        f = {false, true, 1, 1, 0, 1};
    else if (m == 1 && b.cs == 1 && (c.cs == 1 || n == 1))  // c[0, j] = sum_p a[0, p] b[p, j]
        f = {true, true, n, a.cs, b.rs, 1};
    else if (m == 1 && b.rs == 1 && (a.cs == 1 || k == 1)) f = {false, true, n, 1, b.cs, c.cs};
    else if (n == 1 && a.rs == 1 && (c.rs == 1 || m == 1))  // c[i, 0] = sum_p a[i, p] b[p, 0]
        f = {true, false, m, b.rs, a.cs, 1};
    else if (n == 1 && a.cs == 1 && (b.rs == 1 || k == 1)) f = {false, false, m, 1, a.rs, c.rs};
    else return false;
    return true;
}

// Whether the rows form of f keeps its sums in registers (gemv_rows without a chunk): a float
// table's y within kGemvNarrowVectors vectors. Their order differs from the chunk's, so this is
// decided on the whole y (a thread's piece of a wider one could be narrow) and such a product
// runs on one thread.
template <typename Tab>
bool gemv_narrow(const Tab& uk, const GemvForm& f) {
    if constexpr (std::is_same_v<Tab, KernelTable<float>> || std::is_same_v<Tab, KernelTable<double>>)
        return f.rows && f.len <= kGemvNarrowVectors * uk.lanes;
    else return false;
}

// The gemv_rows chunks of `threads` threads for form f (T: the output's type), null where
// gemv_narrow or for the dots form.
template <typename T, typename Tab>
T* gemv_chunks(const Tab& uk, const GemvForm& f, int threads) {
    return f.rows && !gemv_narrow(uk, f) ? static_cast<T*>(thread_gemv_chunks(threads, kGemvChunkBytes)) : nullptr;
}

// Whether rows a kernel streams once, `bytes` of them over a product or its whole stack, come
// from memory and are worth prefetching (stream_rows' ahead, run_dots' next_l, the small
// kernels' next stack item): past a quarter of L3 for the few-row kernels and stacks
// (rows_from_memory), half for the matrix-vector and dot kernels (vectors_from_memory). On Zen 4 (L3
// 32 MiB), 1 thread: float32 4 x 4096 x 4096 2.68x -> 3.50x NumPy, float64 6 x 2048 x 1024 (16
// MiB) 1.75x -> 2.05x, stacks of 100 x 4 x 64 x.T @ W.T 0.54x -> 0.70x (2000 items), 0.73x ->
// 0.83x (500: 12.8 MB), float64 1000 of them 1.13x -> 1.80x; float32 1 x 4096 x 1536 (24 MiB)
// 1.08x -> 1.20x. Within L3 it cost up to 10% (float32 3000 x 4 x 200 x.T @ W.T 2.74x ->
// 2.60x; 4 x 2048 x 1024 with an eighth of L3 as the bound 6.28x -> 5.69x), and matrix-vector
// products of 16 MiB 3-13% (float64 1 x 2048 x 1024 1.01x -> 0.88x), hence their half.
// The few-row and stack rule counts at most kL3CountedMaxBytes of L3: a virtual machine reports
// its host's whole L3, which the host's other cores share (480 MiB on an Intel Xeon, whose
// stacks of 49-98 MB a quarter of that left to the hardware prefetchers, and ran faster with
// the next item prefetched); the matrix-vector rule keeps the reported size (its prefetch lost
// there at 134-180 MB). See docs/DESIGN.md, "Small products".
constexpr double kL3CountedMaxBytes = double(int64_t(128) << 20);
inline bool rows_from_memory(double bytes) {
    return bytes > std::min(double(caches().l3.size), kL3CountedMaxBytes) / 4;
}
inline bool vectors_from_memory(double bytes) { return bytes > double(caches().l3.size) / 2; }

// The elements of a float row form's matrix rows before their first 64-byte boundary, when
// every row starts at the same offset in a line and at least kGemvHeadMinBytes of the range
// follow: gemv_range runs them as a range of their own, so that the rest loads whole lines
// instead of a vector straddling two on every row. Intel Xeon, float32 v @ A, A 16-48 bytes past
// a line (on one: 50-58 GFLOP/s), one range -> the head apart: 128^2 25 -> 29 GFLOP/s, 256^2
// 31-32 -> 43-45, 512^2 33-34 -> 53; float64 96^2 13 -> 16, 256^2 17 -> 26; under 384 bytes
// after the head the extra pass over the rows cost more (float64 48^2 11 -> 10, float32 80^2 23
// -> 22); from memory level (1024^2, 2048^2); 2-byte matrices, 32-byte loads, lost (bfloat16
// 512^2 24-26 -> 18).
// Only with a chunk: there every output sums its k products in order whatever range it is in
// (stream_rows); gemv_rows_narrow's chains depend on the range's width. Only where
// rows_line_offset says so (Intel; not measured on Zen 4). 0 for none.
constexpr int64_t kGemvHeadMinBytes = 384;

template <typename S>
int64_t gemv_head(const S* row, int64_t ldm, int64_t len) {
    const int64_t off = rows_line_offset(row, ldm * int64_t(sizeof(S)));
    if (off == 0 || off % int64_t(sizeof(S)) != 0) return 0;
    const int64_t head = (64 - off) / int64_t(sizeof(S));
    return (len - head) * int64_t(sizeof(S)) >= kGemvHeadMinBytes ? head : 0;
}

// Outputs [lo, hi) of one matrix-vector product in form f on the calling thread (`chunk`: its
// gemv_rows chunk, null where gemv_narrow, unused by the dots form; ahead: vectors_from_memory's, for
// the rows form). Tab: as for try_gemv.
template <typename Tab, typename S, typename T>
void gemv_range(const Tab& uk, const GemvForm& f, int64_t k, T alpha, const S* x, const S* mat, T beta, T* y,
                int64_t lo, int64_t hi, T* chunk, bool ahead) {
    if (f.rows) {
        const int64_t head = std::is_same_v<S, T> && chunk ? gemv_head(mat + lo, f.ldm, hi - lo) : 0;
        if (head > 0) uk.gemv_rows(head, k, alpha, x, f.incx, mat + lo, f.ldm, beta, y + lo, chunk, ahead);
        uk.gemv_rows(hi - lo - head, k, alpha, x, f.incx, mat + lo + head, f.ldm, beta, y + lo + head, chunk, ahead);
    } else uk.gemv_dots(hi - lo, k, alpha, x, mat + lo * f.ldm, f.ldm, beta, y + lo * f.incy, f.incy);
}

// One row or one column of C is a matrix-vector product: memory-bound on the matrix, which
// the blocked path would pack (a full extra pass) and then feed through 1/MR of a tile.
// Streams the matrix once instead, when the vector and output strides allow vector loads.
// Tab: a KernelTable<T> (S == T) or a LowpTable<S> (T float), whose gemv_rows / gemv_dots read
// A and B as S. finish(lo, hi, y, incy) runs on each thread's outputs [lo, hi) right after it
// computed them (the epilogue). Returns false when the strides do not fit a form.
template <typename Tab, typename S, typename T, typename Finish>
bool try_gemv(const Tab& uk, T alpha, View<const S> a, View<const S> b, T beta, View<T> c, Finish finish) {
    GemvForm f;
    if (!gemv_form(a, b, c, f)) return false;
    const int threads = gemv_narrow(uk, f) ? 1 : threads_for(c.rows, c.cols, a.cols);
    const S* x = f.x_from_a ? a.data : b.data;
    const S* mat = f.x_from_a ? b.data : a.data;
    T* chunks = gemv_chunks<T>(uk, f, threads);
    const bool ahead = vectors_from_memory(double(a.cols) * double(f.len) * double(sizeof(S)));
    // Outputs split over threads in whole cache lines; each output's sum is the same on any
    // split, so the result does not depend on the thread count.
    parallel_ranges(threads, f.len, 64 / int64_t(sizeof(T)), [&](int tid, int64_t lo, int64_t hi) {
        gemv_range(uk, f, a.cols, alpha, x, mat, beta, c.data, lo, hi,
                   chunks ? chunks + tid * (kGemvChunkBytes / int64_t(sizeof(T))) : nullptr, ahead);
        finish(lo, hi, c.data, f.incy);
    });
    return true;
}

// Whether the few-row kernels take a product of m rows (n, k >= 1): 2 up to max_m (the kernel
// set's tuning.few_rows_max_m, or int8_few_rows_max_m), B's and C's rows contiguous. See
// docs/DESIGN.md, "Few rows".
inline bool few_rows_fit(int64_t max_m, int64_t m, int64_t b_cs, int64_t c_cs) {
    return m >= 2 && m <= max_m && b_cs == 1 && c_cs == 1;
}

// Whether the few-row kernels take a product of m rows past few_rows_max_m (n, k >= 1): up to
// tuning.few_row_groups_max_m rows, k from kFewRowGroupsMinK, B's and C's rows contiguous, with
// B streamed once per group of at most kFewRowsMaxM rows (few_rows_split) within L3, or B within
// half of L2 where L3 is not fast (Caches::l3_fast). On Zen 4 that beat packing B for 7-30 rows
// (1.1-1.7x), and lost where the streams left L3 (16 x 1400 x 1400 float64 0.90x), past 30 rows
// with A by columns (32 x 512 x 512 float64 0.98x) and with k under 32 (each pass over the
// partial sums serves too few FMAs: 25 x 1344 x 18 float64 0.89x). On an Intel Xeon every group
// past the first read B from L3 at memory speed: 20 x 700 x 700 float64 0.59x NumPy against the
// packed path's 1.12x, while B in L2 still paid (24 x 256 x 256 1.42x against 1.18x); see
// docs/DESIGN.md, "Few rows".
constexpr int64_t kFewRowGroupsMinK = 32;

inline bool few_row_groups_fit(const Tuning& t, int64_t m, int64_t n, int64_t k, int64_t elem_bytes, int64_t b_cs,
                               int64_t c_cs) {
    if (k < kFewRowGroupsMinK || !few_rows_fit(t.few_row_groups_max_m, m, b_cs, c_cs)) return false;
    const double b_bytes = double(n) * double(k) * double(elem_bytes);
    if (!caches().l3_fast) return b_bytes <= double(caches().l2.size) / 2;
    return double(ceil_div(m, int64_t(kFewRowsMaxM))) * b_bytes <= double(caches().l3.size);
}

// Products with at most kDotsMaxSide rows or columns of C as dot products of rows along k:
// x @ W.T with few rows of x (B's columns contiguous along k) from kDotsFewRowsMinKBytes of k,
// or a narrow C (n <= 4: C^T = B^T A^T, A's rows streamed once against B's few columns) where
// narrow_dots_pay says so. The few rows or columns of the short side are copied
// along k when they are not (a copy of at most 4 x k elements); the long side must be. The small
// path would copy or read all of the long operand per 4-row group and the packed one pack it for
// those few rows or columns. On Zen 4 few rows won from 96 bytes of k (12 float64, 24 float32:
// 1.0-2.4x the small path on both kernel sets; 64 bytes lost at 4 rows). See docs/DESIGN.md,
// "Dot products".
constexpr int64_t kDotsMaxSide = 4;
constexpr int64_t kDotsFewRowsMinKBytes = 96;

// Rows of a stack's long operand run_dots prefetches ahead of the dots on the same rows.
constexpr int64_t kDotsAheadRows = 8;

// C (short x long) = alpha * S L^T + beta * C, S's rows (lds apart) and L's rows (ldl apart)
// contiguous along k; C's long side split over threads (each output computed the same way on
// any split), from the small kernels' work per thread: no barriers either (2 threads, fastgemm
// alone: float64 32 x 200 x 300 NT 48.7 -> 94.3 GFLOP/s, 8 x 256 x 256 45.0 -> 85.7). on_caller:
// the calling thread alone (an item of a stack spread over the threads by batch); with next_l,
// a stack's item whose next item's long operand is next_l elements on, prefetched
// kDotsAheadRows rows at a time.
template <typename T>
void run_dots(const KernelTable<T>& uk, int64_t shorter, int64_t longer, int64_t k, T alpha, const T* s, int64_t lds,
              const T* l, int64_t ldl, T beta, T* c, int64_t rsc, int64_t csc, bool on_caller = false,
              int64_t next_l = 0) {
    if (on_caller && next_l != 0) {
        // As small_stack prefetches the next item; each output's sum is the dot kernel's on any
        // chunk of rows, so the chunks give the same bits.
        for (int64_t lo = 0; lo < longer; lo += kDotsAheadRows) {
            const int64_t hi = std::min(longer, lo + kDotsAheadRows);
            for (int64_t r = lo; r < hi; ++r) {
                const char* row = reinterpret_cast<const char*>(l + next_l + r * ldl);
                for (int64_t e = 0; e < k * int64_t(sizeof(T)); e += 64) __builtin_prefetch(row + e, 0, 2);
            }
            uk.dots(shorter, hi - lo, k, alpha, s, lds, l + lo * ldl, ldl, beta, c + lo * csc, rsc, csc);
        }
        return;
    }
    if (on_caller) return uk.dots(shorter, longer, k, alpha, s, lds, l, ldl, beta, c, rsc, csc);
    parallel_ranges(threads_for(shorter, longer, k, kSmallMinWorkPerThread), longer, 4,
                    [&](int, int64_t lo, int64_t hi) {
                        uk.dots(shorter, hi - lo, k, alpha, s, lds, l + lo * ldl, ldl, beta, c + lo * csc, rsc, csc);
                    });
}

// C = alpha * A B + beta * C as dots_side's `side` says (1: C's rows the short side, 2: its
// columns, C^T = B^T A^T), A's rows (ar, lda apart) and B's columns (bt, ldb apart) both
// contiguous along k; on_caller and next_l (the long side's operand: B for side 1, A for 2) as
// run_dots'.
template <typename T>
void run_dots_side(const KernelTable<T>& uk, int side, int64_t k, T alpha, const T* ar, int64_t lda, const T* bt,
                   int64_t ldb, T beta, View<T> c, bool on_caller = false, int64_t next_l = 0) {
    if (side == 1)
        run_dots(uk, c.rows, c.cols, k, alpha, ar, lda, bt, ldb, beta, c.data, c.rs, c.cs, on_caller, next_l);
    else run_dots(uk, c.cols, c.rows, k, alpha, bt, ldb, ar, lda, beta, c.data, c.cs, c.rs, on_caller, next_l);
}

// Whether try_dots takes the product: 1 for few rows, 2 for few columns, 0 not. Past
// kDotsMaxSide, products with A's rows and B's columns both along k (x @ W.T, nothing to copy):
// float32 with up to tuning.f32_dots_idle_max_n columns that leave a sixth or more of the small
// kernels' lanes idle (lanes_idle: 5-6 or 9-12 of 16-lane vectors), k from kDotsIdleMinK (82 x
// 9 x 352 0.74x -> 1.12x NumPy; float64 lost, shorter k spent the gain on adding up lanes); up to
// tuning.dots_rows_max_m rows with k from kDotsRowsMinK, at least a quarter of the long
// side, and the long operand within half of L3 (8 x 256 x 256 float64 0.88x -> 1.35x NumPy; W
// is reread per 3 rows, and 8 x 4096 x 4096 lost 5%; the small path copies all of W for those
// rows: float32 6 x 169 x 107 0.73x -> 1.12x, float64 5 x 181 x 124 0.60x -> 1.04x); up to
// tuning.f32_dots_l2_max_m / f64_dots_l2_max_m rows with W within half of L2 and k from
// kDotsL2MinKBytes, from kDotsL2FewRowsMinKBytes up to kDotsL2FewRows rows (float32 15 x 39 x 352
// 0.71x -> 1.17x, 10 x 57 x 195 0.83x -> 1.12x; shorter k spends too much of a dot adding up its
// lanes, float64 from 16 rows lost at 512 bytes, W from L3 is reread too often), and from
// kDotsL2NarrowMinKBytes for a C of kDotsL2NarrowMinN-kDotsL2NarrowMaxN columns, whose one
// vector and a part leave lanes idle on the small kernels and need a copy of W by rows (Zen 4,
// 512-item q @ k.T stacks: float32 9 x 9 x 64 0.72-0.75x -> 0.97-1.01x NumPy, 10 x 10 x 64
// 0.69-0.71x -> 0.90x, float64 11 x 11 x 32 0.77-0.90x -> 1.02-1.05x; 12 columns since the
// dots store C's rows whole: float32 10 x 12 x 80 0.76x -> 0.91x, float64 9 x 12 x 40 0.72x ->
// 1.04x; 13 lost, float32 13 x 13 x 64 1.13x the time), and for C's columns not whole vectors
// from kDotsL2MidMinN to under kDotsL2MidMaxVectors vectors from kDotsL2MidShortMinKBytes up to
// kDotsL2MidShortM rows and from kDotsL2MidMinKBytes up to kDotsL2MidMaxM (the small kernels copy
// each W by rows for few rows and leave lanes idle: 200-item float32 q @ k.T 20 x 20 x 198 0.81x
// -> 1.03x NumPy, 15 x 34 x 184 0.81x -> 0.99x, 13 x 28 x 155 0.78x -> 0.96x, float64 15 x 27 x
// 126 0.86x -> 1.03x; float64 44 columns lost a fifth); up to the set's ShortDots
// max_m rows of kDotsShortMinN to max_n columns, not whole or half vectors, from min_k (stack
// items of 16-60 rows, whose W the small path copies each: float32 200 x (24 x 5 x 90) 0.73x ->
// 1.01x NumPy, float64 200 x (15 x 9 x 123) 0.74x -> 1.11x); or up to
// tuning.f32_dots_max_side (float32) or f64_dots_max_side (float64) rows or columns, k from
// kDotsWideMinK and at least 4 times the long side, the long operand within half of L2; see
// docs/DESIGN.md, "Dot products".
constexpr int64_t kDotsRowsMinK = 16;
constexpr int64_t kDotsWideMinK = 512;
constexpr int64_t kDotsL2MinKBytes = 1024;
constexpr int64_t kDotsL2FewRows = 12, kDotsL2FewRowsMinKBytes = 512;
constexpr int64_t kDotsL2NarrowMinN = 9, kDotsL2NarrowMaxN = 12, kDotsL2NarrowMinKBytes = 256;
constexpr int64_t kDotsL2MidMinN = 9, kDotsL2MidMaxVectors = 3, kDotsL2MidMaxM = 32, kDotsL2MidMinKBytes = 768;
constexpr int64_t kDotsL2MidShortM = 24, kDotsL2MidShortMinKBytes = 384;
constexpr int64_t kDotsIdleMinK = 128;
constexpr int64_t kDotsShortMinN = 5;

// Whether the dot kernel beats the small kernels on an m x n C (n <= kDotsMaxSide, A's rows
// along k), by the set's costs d (NarrowDots) from kDotsRowsMinK (float32 2000 x 2 x 12 lost 6%
// at 12): always from d.min_k, else never where n fills the small kernels' vector (no lanes
// idle). b_along_k: B's columns contiguous along k (W.T), which the dots read in place and the
// small kernels copy; b_by_rows the other way round. See docs/DESIGN.md, "Dot products".
constexpr bool narrow_dots_pay(const NarrowDots& d, int64_t m, int64_t n, int64_t k, int64_t lanes, bool b_along_k,
                               bool b_by_rows) {
    if (k < kDotsRowsMinK) return false;
    if (d.min_k != 0 && k >= d.min_k) return true;
    if (n >= lanes) return false;
    const double copy = double(d.copy * n * k);
    const double dots = double(m) * double(n * (d.fma * ((k + lanes - 1) / lanes) + d.sum));
    const double small = double(m) * double(d.per_k * k);
    return dots + (b_by_rows && !b_along_k ? copy : 0.0) <= small + (b_along_k && !b_by_rows ? copy : 0.0);
}

template <typename T>
int dots_side(const KernelSet& ks, View<const T> a, View<const T> b, View<T> c) {
    const Tuning& t = ks.tuning;
    const KernelTable<T>& uk = main_table<T>(ks);
    const int64_t k = a.cols;
    if (c.rows <= kDotsMaxSide && b.rs == 1) return k * int64_t(sizeof(T)) >= kDotsFewRowsMinKBytes ? 1 : 0;
    if (c.cols <= kDotsMaxSide && a.cs == 1 &&
        narrow_dots_pay(sizeof(T) == 4 ? t.f32_narrow_dots : t.f64_narrow_dots, c.rows, c.cols, k, uk.lanes, b.rs == 1,
                        b.cs == 1))
        return 2;
    if (a.cs != 1 || b.rs != 1) return 0;
    if (sizeof(T) == 4 && c.cols <= t.f32_dots_idle_max_n && k >= kDotsIdleMinK &&
        lanes_idle(uk.tiles[1], c.cols, uk.lanes))
        return 2;
    const ShortDots& sd = sizeof(T) == 4 ? t.f32_short_dots : t.f64_short_dots;
    if (c.rows <= sd.max_m && k >= sd.min_k && c.cols >= kDotsShortMinN && c.cols <= sd.max_n &&
        c.cols % (uk.lanes / 2) != 0)
        return 1;
    if (c.rows <= t.dots_rows_max_m && k >= kDotsRowsMinK && 4 * k >= c.cols &&
        2.0 * double(c.cols) * double(k) * double(sizeof(T)) <= double(caches().l3.size))
        return 1;
    const int64_t l2_max_m = sizeof(T) == 4 ? t.f32_dots_l2_max_m : t.f64_dots_l2_max_m;
    const bool narrow = c.cols >= kDotsL2NarrowMinN && c.cols <= kDotsL2NarrowMaxN;
    int64_t l2_min_k_bytes = c.rows > kDotsL2FewRows ? kDotsL2MinKBytes
                             : narrow                ? kDotsL2NarrowMinKBytes
                                                     : kDotsL2FewRowsMinKBytes;
    const bool mid = c.cols >= kDotsL2MidMinN && c.cols < kDotsL2MidMaxVectors * uk.lanes && c.cols % uk.lanes != 0;
    if (mid && c.rows <= kDotsL2MidMaxM)
        l2_min_k_bytes =
            std::min(l2_min_k_bytes, c.rows <= kDotsL2MidShortM ? kDotsL2MidShortMinKBytes : kDotsL2MidMinKBytes);
    if (c.rows <= l2_max_m && k * int64_t(sizeof(T)) >= l2_min_k_bytes &&
        2.0 * double(c.cols) * double(k) * double(sizeof(T)) <= double(caches().l2.size))
        return 1;
    if (k < kDotsWideMinK) return 0;
    const int64_t max_side = sizeof(T) == 4 ? t.f32_dots_max_side : t.f64_dots_max_side;
    auto fits = [&](int64_t shorter, int64_t longer) {
        return shorter <= max_side && k >= 4 * longer &&
               2.0 * double(longer) * double(k) * double(sizeof(T)) <= double(caches().l2.size);
    };
    if (fits(c.rows, c.cols)) return 1;
    if (fits(c.cols, c.rows)) return 2;
    return 0;
}

// The last columns of a small product (oriented) that go to the dot kernels, 0 for none: the
// t = n % W columns past C's whole vectors of W lanes, under half a vector (and, for a C
// narrower than a vector, more than dots_side's kDotsMaxSide), A's rows along k, where the model
// below says so. Per row and k step the small kernels spend half a vector on them (AVX-512's
// half-width registers; a masked vector elsewhere), the dots t / W of one and
// kTailDotsSumCycles for each output's sum at the end; the dots pay from kTailDotsFixedCycles
// saved (B's columns copied, the call). Fitted on Zen 4 (0.96-1.05 at the
// boundary, float32 and float64, t = 1-4, m = 16-310, k = 16-128; float32 310 x 18 x 128 0.78x ->
// 1.06x NumPy). gemm, gemm_batched and gemm_lowp ask the same, so a stack item is the single
// product; see docs/DESIGN.md, "Small products".
constexpr int64_t kTailDotsSumCycles = 3;
constexpr int64_t kTailDotsFixedCycles = 384;

template <typename T>
int64_t small_tail_dots(const KernelTable<T>& uk, const SmallProduct<T>& sp) {
    const int64_t m = sp.c.rows, n = sp.c.cols, k = sp.a.cols, w = uk.lanes, t = n % w;
    if (t == 0 || 2 * t >= w || (n < w && t <= kDotsMaxSide) || sp.a.cs != 1) return 0;
    if (t * k * int64_t(sizeof(T)) > kTailDotsBytes) return 0;
    // Cycles saved per row, times 2 W: k (W / 2 - t) steps of a vector less, t sums more.
    const int64_t per_row = k * (w - 2 * t) - 2 * w * t * kTailDotsSumCycles;
    return per_row > 0 && double(m) * double(per_row) >= double(2 * w * kTailDotsFixedCycles) ? t : 0;
}

// The last columns of a small stack item (oriented) with A stored by columns, rows 1 apart, that
// small_stack takes down A's columns (column_tail), 0 for none: the t = n % W columns past C's
// whole vectors, 1 to kTailColumnsMax of them and under half a vector, where their t x ceil(m /
// W) vectors a k step are at most a quarter of the m half-width vectors (a row each) the small
// kernels spend on them (float32 200 x (30 x 17 x 40) TN: a 1-column tail was a third of the
// time), or where the k steps' saving (a half vector is half a cycle, a full one one) pays 1.5
// cycles for each of the t x m elements column_tail writes apart (float64 200 x (38 x 18 x 31)
// 0.89x -> 0.97x NumPy; float32 40 x 20 x 8 lost 14%, 40 x 20 x 24 gained 10%). Its sums are
// the small kernels' (and gemm's few-row tail's) bits, so an item stays the single product.
template <typename T>
int64_t small_tail_columns(const KernelTable<T>& uk, const SmallProduct<T>& sp) {
    const int64_t m = sp.c.rows, n = sp.c.cols, w = uk.lanes, t = n % w;
    if (n < w || t == 0 || t > kTailColumnsMax || 2 * t >= w || sp.a.rs != 1 || sp.a.cs == 1) return 0;
    const int64_t cv = (m + w - 1) / w, k = sp.a.cols;
    return 4 * t * cv <= m || k * (m - 2 * t * cv) >= 3 * t * m ? t : 0;
}

// Whether an m x n product whose dots_side is `side` goes to the matrix-vector kernels: one
// row or one column of C, but not one row of 2 or more columns that the narrow dots take (up to
// kDotsMaxSide over a long k; the rows form would stream k rows of a few elements: 1 x 2 x 2048
// float64 0.38x NumPy). gemm and gemm_batched ask the same, so a stack item is the single
// product.
inline bool vector_product(int64_t m, int64_t n, int side) {
    return (m == 1 || n == 1) && !(m == 1 && n > 1 && side == 2);
}

// How the few-row kernels run on `threads` threads: C's n columns split in whole cache lines of
// elem_bytes elements (each element's sum is the same on any split), its m rows in equal groups
// of at most kFewRowsMaxM, each group streaming the thread's columns of B once.
// rows(i0, count, lo, hi, chunk): rows [i0, i0 + count) x columns [lo, hi), in the thread's
// buffer (kFewRowsBufferBytes); done(lo, hi) then runs on the thread's columns (the epilogue).
template <typename Rows, typename Done>
void few_rows_split(int threads, int64_t m, int64_t n, int64_t elem_bytes, Rows rows, Done done) {
    char* chunks = static_cast<char*>(thread_gemv_chunks(threads, kFewRowsBufferBytes));
    const int64_t group = ceil_div(m, ceil_div(m, int64_t(kFewRowsMaxM)));
    parallel_ranges(threads, n, 64 / elem_bytes, [&](int tid, int64_t lo, int64_t hi) {
        for (int64_t i0 = 0; i0 < m; i0 += group)
            rows(i0, std::min(group, m - i0), lo, hi, chunks + tid * kFewRowsBufferBytes);
        done(lo, hi);
    });
}

// A few_rows_fit product: few streams B once, unpacked, split as few_rows_split says; the
// epilogue (uk's) runs on each thread's columns right after. Tab: a KernelTable<T> (S == T) or
// a LowpTable<S> (T float).
template <typename Tab, typename S, typename T>
void run_few_rows(const Tab& few, const KernelTable<T>& uk, int threads, T alpha, View<const S> a, View<const S> b,
                  T beta, View<T> c, const Epilogue<T>& ep) {
    const bool ahead = rows_from_memory(double(b.rows) * double(b.cols) * double(sizeof(S)));
    few_rows_split(
        threads, c.rows, c.cols, sizeof(T),
        [&](int64_t i0, int64_t rows, int64_t lo, int64_t hi, char* chunk) {
            few.few_rows(rows, hi - lo, a.cols, alpha, a.data + i0 * a.rs, a.rs, a.cs, b.data + lo, b.rs, beta,
                         c.data + i0 * c.rs + lo, c.rs, reinterpret_cast<T*>(chunk), ahead);
        },
        [&](int64_t lo, int64_t hi) {
            if (ep.active()) apply_epilogue(uk, View<T>{c.data + lo, c.rows, hi - lo, c.rs, 1}, ep.from_column(lo));
        });
}

// Zero-padded or masked-off lanes compute x * 0, which raises FE_INVALID for x = inf although
// the true product raises nothing. An invalid operation of the true product leaves a NaN in
// C, so a FE_INVALID raised during the product with no NaN in C came from padding: clear it.
// (Padding raises no other flag: x * 0 with x finite is an exact 0.) Flags are per thread;
// only the calling thread's reach the caller.
// On x86 the kernels' operations raise flags in MXCSR only: reading it alone skips the x87
// status word fetestexcept also reads (a single 4^3 product spent 5% of its time there).
class PaddingFlags {
   public:
    PaddingFlags() : invalid_before_(invalid()) {}
    // After the product: has_nan() says whether C holds a NaN (called only when needed).
    template <typename F>
    void settle(F has_nan) const {
        if (!invalid_before_ && invalid() && !has_nan()) clear_invalid();
    }

   private:
#if defined(__x86_64__) || defined(__i386__)
    static bool invalid() { return (_mm_getcsr() & _MM_EXCEPT_INVALID) != 0; }
    static void clear_invalid() { _mm_setcsr(_mm_getcsr() & ~unsigned(_MM_EXCEPT_INVALID)); }
#else
    static bool invalid() { return std::fetestexcept(FE_INVALID) != 0; }
    static void clear_invalid() { std::feclearexcept(FE_INVALID); }
#endif
    bool invalid_before_;
};

// C = beta * C without a product (alpha == 0 or k == 0); beta == 0 does not keep NaN from C.
template <typename T>
void scale(T beta, View<T> c) {
    if (beta == T(1)) return;
    for (int64_t i = 0; i < c.rows; ++i)
        for (int64_t j = 0; j < c.cols; ++j) {
            T& x = c.data[i * c.rs + j * c.cs];
            x = beta == T(0) ? T(0) : beta * x;
        }
}

// C = act(beta * C + bias) without a product: scale, then the epilogue (table uk's).
template <typename T>
void scale(const KernelTable<T>& uk, T beta, View<T> c, const Epilogue<T>& ep) {
    scale(beta, c);
    if (ep.active()) apply_epilogue(uk, c, ep);
}

// The checks every single-product entry makes before anything is written: shapes and index
// ranges (check_product), and a C with one element per (row, column), as BLAS needs ldc >= m.
template <typename A, typename B, typename C>
void check_single(const A& a, const B& b, const C& c) {
    check_product(a, b, c, "gemm");
    if (overlaps_itself(c))
        throw std::invalid_argument(
            "gemm: C's elements overlap each other (a zero or repeating stride); "
            "C must have one element per (row, column), as BLAS needs ldc >= m");
}

template <typename T>
bool has_nan(View<T> c) {
    for (int64_t i = 0; i < c.rows; ++i)
        for (int64_t j = 0; j < c.cols; ++j) {
            const T x = c.data[i * c.rs + j * c.cs];
            if (x != x) return true;
        }
    return false;
}

}  // namespace fastgemm
