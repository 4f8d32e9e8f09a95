#include "gemm.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "blocking.hpp"
#include "caches.hpp"
#include "dispatch.hpp"
#include "driver.hpp"
#include "paths.hpp"
#include "scratch.hpp"
#include "threading.hpp"

namespace fastgemm {
namespace {

constexpr int64_t kAInPlaceMaxColumnBytes = 8192;

// Few rows streamed, the packed path, or B read in place for few rows (tuning.direct_max_m);
// see docs/DESIGN.md, "Few rows" and "B read in place".
template <typename T>
void run(const KernelSet& ks, T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const Epilogue<T>& ep) {
    const Tuning& tune = ks.tuning;
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    const int threads = threads_for(m, n, k);
    const KernelTable<T>& main = main_table<T>(ks);
    // An A stored by columns is read in place by the main tile for a product with few of its
    // slivers: each of A's pieces would be packed for one to four tiles. Columns past 8 KiB
    // apart lost to packing on an Intel Xeon; see docs/DESIGN.md, "A read in place". (The
    // in-place-B paths below run other tiles and keep packing A.)
    const bool direct_a = a.rs == 1 && a.cs != 1 && a.cs * int64_t(sizeof(T)) <= kAInPlaceMaxColumnBytes &&
                          (n + main.nr - 1) / main.nr <= tune.a_in_place_slivers;
    if (few_rows_fit(tune.few_rows_max_m, m, b.cs, c.cs) || few_row_groups_fit(tune, m, n, k, sizeof(T), b.cs, c.cs)) {
        run_few_rows(main, main, threads, alpha, a, b, beta, c, ep);
        return;
    }
    // B in place needs whole 64-byte lines per row: a load straddling two lines on every row
    // of a sliver costs more than packing.
    const bool lines = (b.rs * int64_t(sizeof(T))) % 64 == 0;
    const Blocking packed = blocking_for_rows(blocking_for(main), m, threads, main.nr, int(sizeof(T)));
    if (m > tune.direct_max_m || b.cs != 1 || !lines) {
        run_blocked(main, packed, threads, false, direct_a, alpha, a, b, beta, c, ep);
        return;
    }
    const KernelTable<T>& uk = m <= tune.skinny_max_m ? skinny_table<T>(ks) : main;
    const Blocking bs = blocking_for(uk);
    // Columns before B's first 64-byte boundary go through the packed path, the rest in place.
    // That head is one more narrow column of tiles: worth it only when there are many; see
    // docs/DESIGN.md, "Head columns".
    const auto misalign = int64_t(reinterpret_cast<uintptr_t>(b.data) % 64);
    const int64_t head = std::min<int64_t>(n, misalign ? (64 - misalign) / int64_t(sizeof(T)) : 0);
    if (head > 0 && n < tune.head_min_slivers * int64_t(uk.nr)) {
        run_blocked(main, packed, threads, false, direct_a, alpha, a, b, beta, c, ep);
        return;
    }
    if (head > 0)
        run_blocked(uk, bs, threads, false, false, alpha, a, View<const T>{b.data, k, head, b.rs, b.cs}, beta,
                    View<T>{c.data, m, head, c.rs, c.cs}, ep);
    if (head < n)
        run_blocked(uk, bs, threads, true, false, alpha, a, View<const T>{b.data + head, k, n - head, b.rs, b.cs}, beta,
                    View<T>{c.data + head * c.cs, m, n - head, c.rs, c.cs}, ep.from_column(head));
}

// Rows [lo, hi) of a small product's C as the caller sees them (sp.c's rows are C's columns
// when sp.transposed), and the epilogue they take.
template <typename T>
void small_epilogue(const KernelTable<T>& uk, const SmallProduct<T>& sp, View<T> c, int64_t lo, int64_t hi,
                    const Epilogue<T>& ep) {
    if (sp.transposed) apply_epilogue(uk, View<T>{c.data + lo * c.cs, c.rows, hi - lo, c.rs, c.cs}, ep.from_column(lo));
    else apply_epilogue(uk, View<T>{sp.c.data + lo * sp.c.rs, hi - lo, sp.c.cols, sp.c.rs, 1}, ep);
}

// The small kernels read A's rows four at a time along k. An A stored by columns gives each group
// of four rows one line per k step, which the next groups reuse from L1 while those k lines fit
// there, and from L2 while all of A does: past both every group reads A from memory (16 x 4096 x
// 16 float64 ran at half NumPy's speed); the packed path reads such an A once. Past
// tuning.small_columns_max_m rows (C wider than a narrow one) the blocked path's tile wins even
// then. With B in k chunks (small_chunks_b) a group's lines of A are reused within the chunk:
// up to kChunkedColumnsMaxM rows that beat the packed path (x.T @ y, float64 20 x 20 x 3000
// 0.91x -> 1.33x NumPy; 200 rows lost 28%); see docs/DESIGN.md, "Operands stored by columns".
// Up to kShortKMax a group's k lines are all it reads of A at any size (x.T @ y, float64 300 x
// 300 x 4 0.86x -> 1.53x NumPy against the packed path).
constexpr int64_t kChunkedColumnsMaxM = 48;

// Past small_columns_max_m rows, k up to kShortColumnsMaxK with C's rows within
// kShortColumnsMaxBytes and A within a sixth of L2 still go small: the tile's pass over C costs
// more than rereading a group's k lines of A per panel (Zen 4, A.T @ W float64 806 x 58 x 15
// 0.90 -> 1.04x NumPy, float32 292 x 268 x 10 0.95 -> 1.14x; rows of 1.4-4.5 KB lost 3-7%). A
// larger A or k, first read from memory (a call after a pause), comes in k column streams
// that the packed path reads better (float64 2000 x 120 x 14 1.24 -> 0.75x, float32 766 x 137 x
// 25 1.20 -> 0.97x). See docs/DESIGN.md, "Operands stored by columns".
constexpr int64_t kShortColumnsMaxK = 16;
constexpr int64_t kShortColumnsMaxBytes = 1152;

bool short_columns_fit(int64_t m, int64_t n, int64_t k, int64_t elem_bytes) {
    return k <= kShortColumnsMaxK && n * elem_bytes <= kShortColumnsMaxBytes &&
           6 * m * k * elem_bytes <= int64_t(caches().l2.size);
}

bool small_reads_a(const Tuning& t, int64_t m, int64_t n, int64_t k, int64_t csa, int64_t elem_bytes) {
    if (csa == 1 || k <= kShortKMax) return true;
    if (t.small_chunked_any && m <= kChunkedColumnsMaxM && small_chunks_b(n * elem_bytes, k)) return true;
    if (t.small_columns_max_m > 0 && m > t.small_columns_max_m && n * elem_bytes > t.small_narrow_bytes &&
        !short_columns_fit(m, n, k, elem_bytes))
        return false;
    return k * 64 <= int64_t(caches().l1d.size) / 2 ||
           double(m) * double(k) * double(elem_bytes) <= double(caches().l2.size) / 4;
}

// A small product but perhaps for B's rows: C's rows contiguous once oriented, small_shape, and
// small_reads_a.
template <typename T>
bool small_shaped(const KernelSet& ks, const SmallProduct<T>& sp) {
    return sp.c.cs == 1 && small_shape(ks, sp.c.rows, sp.c.cols, sp.a.cols, sizeof(T)) &&
           small_reads_a(ks.tuning, sp.a.rows, sp.c.cols, sp.a.cols, sp.a.cs, sizeof(T));
}

// Whether k rows of B `rs_bytes` apart crowd into few L1 sets: the small kernels read a 64-byte
// piece of every row per panel, and each 4-row group rereads the panel from L1; with as many of
// its lines to one set as the set has ways, none is left for A's and C's lines and the panel
// misses L1 every time (128^3 float32 by rows of 512 bytes ran 0.7x the same product with its
// rows padded to 576; see docs/DESIGN.md, "Small products").
bool rows_crowd_l1(int64_t rs_bytes, int64_t k) {
    const CacheLevel& l1 = caches().l1d;
    const int64_t way = std::max<int64_t>(64, l1.size / l1.ways);  // bytes one way spans
    const int64_t period = way / std::gcd(rs_bytes, way);          // rows before the set repeats
    return k * 64 <= l1.size / 2 && (k + period - 1) / period >= l1.ways;
}

// Whether k rows of B `rs_bytes` apart crowd L1 for a small product with `c_rows` rows of C:
// enough row groups to reread them (with 8-16 rows a copy apart cost more than it saved).
bool b_rows_crowd(int64_t c_rows, int64_t rs_bytes, int64_t k) { return c_rows >= 64 && rows_crowd_l1(rs_bytes, k); }

// dst (rows x cols, rows ld apart) = src, element (i, j) at i * rs + j * cs: whole rows when
// they are contiguous, copy_columns' register transposes when the columns are, else 8 columns
// at a time (few of src's lines live).
template <typename T>
void copy_to_rows(const KernelTable<T>& uk, int64_t rows, int64_t cols, const T* src, int64_t rs, int64_t cs, T* dst,
                  int64_t ld) {
    if (cs == 1)
        for (int64_t i = 0; i < rows; ++i) std::memcpy(dst + i * ld, src + i * rs, size_t(cols) * sizeof(T));
    else if (rs == 1) uk.copy_columns(rows, cols, src, cs, dst, ld);
    else
        for (int64_t j0 = 0; j0 < cols; j0 += 8)
            for (int64_t i = 0; i < rows; ++i)
                for (int64_t j = j0; j < std::min(cols, j0 + 8); ++j) dst[i * ld + j] = src[i * rs + j * cs];
}

// How the small kernels get B: read in place when its rows are contiguous and spread over L1;
// else copied row-major, which costs less than packing both operands for the blocked path (5 x
// 1000 x 5 with B by columns ran at half NumPy's speed), its rows an odd number of lines apart
// when they would crowd L1 and enough row groups reread them (the copy lost at 8-16 rows:
// 0.77-0.89x in place); or not at all, when the blocked path is the better one.
enum class SmallB { in_place, copied, none };

template <typename T>
SmallB small_b_plan(const SmallProduct<T>& sp) {
    const int64_t k = sp.b.rows, n = sp.b.cols;
    if (sp.b.cs == 1 && !b_rows_crowd(sp.c.rows, sp.b.rs * int64_t(sizeof(T)), k)) return SmallB::in_place;
    // A B past a quarter of L2 is read by the small kernels from L2 once per four rows: unless
    // there are only one or two such groups, the blocked path's tile reuses it more (16 x 4096 x
    // 16 float32: 0.55x NumPy copied, 0.66x packed).
    if (sp.c.rows > 8 && double(n) * double(k) * double(sizeof(T)) > double(caches().l2.size) / 4)
        return sp.b.cs == 1 ? SmallB::in_place : SmallB::none;
    return SmallB::copied;
}

// Columns [lo, hi) of sp's B copied row-major into the calling thread's scratch, each row from
// a line's start (rows n apart split half their vector loads and the copy's stores across
// lines: float32 20 x 700 x 20 x.T @ y.T 1.10-1.20 -> 1.42-1.44x NumPy), an odd number of lines
// apart where they would crowd L1: the view of them the small kernels read.
template <typename T>
View<const T> copy_b_columns(const KernelTable<T>& uk, const SmallProduct<T>& sp, int64_t lo, int64_t hi) {
    const int64_t k = sp.b.rows, n = hi - lo;
    constexpr int64_t line = 64 / int64_t(sizeof(T));
    const int64_t lines = (n + line - 1) / line;
    const int64_t ld = (rows_crowd_l1(lines * 64, k) ? lines | 1 : lines) * line;
    T* copy = static_cast<T*>(thread_scratch(size_t(k * ld) * sizeof(T)));
    copy_to_rows(uk, k, n, sp.b.data + lo * sp.b.cs, sp.b.rs, sp.b.cs, copy, ld);
    return {copy, k, n, ld, 1};
}

// A small product whose B is copied, with up to kCopiedColumnsMaxM rows, on several threads or
// with more of B than one chunk: each thread copies the columns it computes and runs all rows on
// them, instead of one thread copying all of B before the team starts (128^3 float32 with rows
// 512 bytes apart ran no faster on 2 threads than on 1). With more rows the copy is a small part
// and splitting the rows won (512 x 512 x 32 float32: columns 0.58x); see docs/DESIGN.md, "Small
// products". Columns are handed out in whole panels (a line at a time left 128^3 one-vector
// panels: 178 against 227 GFLOP/s) and copied `chunk` (copied_chunk_columns) at a time; each
// element is computed as on one thread.
constexpr int64_t kCopiedColumnsMaxM = 128;

// Columns of B a thread copies at a time: whole panels filling half of L1, so the kernels read
// the copy from L1 (all of B copied first spilled it to L2: float64 20 x 700 x 20 x.T @ y.T
// 0.95x -> 1.07x NumPy).
template <typename T>
int64_t copied_chunk_columns(int64_t k) {
    constexpr int64_t panel = kSmallPanelBytes / int64_t(sizeof(T));
    return std::max(panel, int64_t(caches().l1d.size) / 2 / (k * int64_t(sizeof(T))) / panel * panel);
}

template <typename T>
void run_small_copied(const KernelTable<T>& uk, int threads, T alpha, const SmallProduct<T>& sp, T beta,
                      int64_t chunk) {
    parallel_ranges(
        threads, sp.c.cols, kSmallPanelBytes / int64_t(sizeof(T)),
        [&](int, int64_t lo, int64_t hi) {
            for (int64_t j = lo; j < hi; j += chunk) {
                const View<const T> b = copy_b_columns(uk, sp, j, std::min(hi, j + chunk));
                uk.small(sp.c.rows, b.cols, b.rows, alpha, sp.a.data, sp.a.rs, sp.a.cs, b.data, b.rs, beta,
                         sp.c.data + j, sp.c.rs);
            }
        },
        kSmallPiecesPerThread);
}

// A small product whose B, read in place, crowds L1 (b_rows_crowd would not copy it: too few
// rows of C, or B past a quarter of L2), for more than two 4-row groups: the small kernels take
// B a chunk of columns at a time, copied with its rows an odd number of lines apart into the
// thread's chunk (half of L1, at most half of a kFewRowsChunkBytes buffer), so each line of
// B is read once and its rereads hit L1; see docs/DESIGN.md, "Small products". Threads take
// whole chunks; each element is computed as in place. The chunk of one line a row, plus the
// padding line of a wider one, must fit the buffer whatever L1's size: k <= 512 lines.
template <typename T>
bool small_b_chunks(const SmallProduct<T>& sp) {
    return sp.c.rows > 8 && sp.b.rows * 64 <= kFewRowsChunkBytes / 2 &&
           rows_crowd_l1(sp.b.rs * int64_t(sizeof(T)), sp.b.rows);
}

template <typename T>
void run_small_chunks(const KernelTable<T>& uk, int threads, T alpha, const SmallProduct<T>& sp, T beta) {
    const int64_t m = sp.c.rows, n = sp.c.cols, k = sp.b.rows;
    constexpr int64_t line = 64 / int64_t(sizeof(T));
    const int64_t budget = std::min<int64_t>(int64_t(caches().l1d.size) / 2, kFewRowsChunkBytes / 2);
    const int64_t width = std::max(line, budget / (k * int64_t(sizeof(T))) / line * line);
    const int64_t ld = (width / line | 1) * line;
    char* chunks = static_cast<char*>(thread_gemv_chunks(threads, kFewRowsChunkBytes));
    parallel_ranges(
        threads, n, width,
        [&](int tid, int64_t lo, int64_t hi) {
            T* buf = reinterpret_cast<T*>(chunks + tid * kFewRowsChunkBytes);
            for (int64_t j0 = lo; j0 < hi; j0 += width) {
                const int64_t w = std::min(width, hi - j0);
                for (int64_t p = 0; p < k; ++p)
                    std::memcpy(buf + p * ld, sp.b.data + p * sp.b.rs + j0, size_t(w) * sizeof(T));
                uk.small(m, w, k, alpha, sp.a.data, sp.a.rs, sp.a.cs, buf, ld, beta, sp.c.data + j0, sp.c.rs);
            }
        },
        kSmallPiecesPerThread);
}

// C^T = B^T A^T of an oriented product with A stored by columns: B^T as C^T's A (any strides),
// A^T's rows (A's columns) in place as its B, C^T n x m by rows with no data yet.
template <typename T>
SmallProduct<T> transposed_operands(const SmallProduct<T>& sp) {
    const int64_t m = sp.c.rows, n = sp.c.cols, k = sp.a.cols;
    return {{sp.b.data, n, k, sp.b.cs, sp.b.rs}, {sp.a.data, k, m, sp.a.cs, 1}, {nullptr, n, m, m, 1}, false};
}

// A product with both operands stored by columns (x.T @ W.T: A^T and B^T row-major) whose B
// the small kernels would copy or which is not a small product, m < k or C narrow, and C^T =
// B^T A^T a small product reading both in place: computed so into the calling thread's scratch,
// then transposed into C by copy_columns, moving m x n elements instead of B's k x n. Each
// element sums the same products in the same order as the small kernels on C, so the bits are
// the same; see docs/DESIGN.md, "Operands stored by columns". Narrow C from k = 32 (shorter k
// lost: float32 69 x 50 x 27 0.92x the copied B). threads() (the team for the product) is asked
// only once the product is taken, and C^T's scratch claimed only then: a product the tiles take
// neither wakes the pool nor grows the scratch to its m x n.
constexpr int64_t kTransposedNarrowMinK = 32;

// Whether C^T = B^T A^T reads both operands of an oriented product in place (both stored by
// columns) and writes C's rows without reading them (beta 0).
template <typename T>
bool transposes_in_place(const SmallProduct<T>& sp, T beta) {
    return beta == T(0) && sp.a.rs == 1 && sp.b.rs == 1 && sp.c.cs == 1;
}

template <typename T, typename Threads>
bool try_small_transposed(const KernelSet& ks, const KernelTable<T>& uk, Threads threads, T alpha,
                          const SmallProduct<T>& sp, T beta) {
    const int64_t m = sp.c.rows, n = sp.c.cols, k = sp.a.cols;
    if (!transposes_in_place(sp, beta)) return false;
    // From m = k, moving C costs more than copying B, unless C's rows fill at most 80% of their
    // vectors' lanes (and no dot kernel takes their last columns): C^T's m-long rows fill theirs.
    auto narrow = [&] {
        const int64_t w = uk.lanes, lanes = (n + w - 1) / w * w;
        return k >= kTransposedNarrowMinK && 5 * n <= 4 * lanes && small_tail_dots(uk, sp) == 0;
    };
    if (m >= k && !narrow()) return false;
    SmallProduct<T> st = transposed_operands(sp);
    if (!small_shaped(ks, st) || small_b_plan(st) != SmallB::in_place || small_b_chunks(st)) return false;
    st.c.data = static_cast<T*>(thread_scratch(size_t(n * m) * sizeof(T)));
    run_small(uk, threads(), alpha, st, T(0));
    uk.copy_columns(m, n, st.c.data, m, sp.c.data, sp.c.rs);
    return true;
}

// The product as dot products when dots_side gave `side` (0: not).
template <typename T>
bool try_dots(const KernelTable<T>& uk, int side, T alpha, View<const T> a, View<const T> b, T beta, View<T> c) {
    if (side == 0) return false;
    run_dots_copied(uk, side, alpha, a, b, beta, c, StackRun{1, 0, 0, 0});
    return true;
}

// C's rows [lo, hi) = C^T's columns, C^T (C's columns as rows, ldt apart) computed with beta 0
// into scratch t, then beta * C added with one rounding (fma), as the kernels finish: with beta 0
// and C's rows contiguous, the register transposes of copy_columns write C.
template <typename T>
void put_transposed(const KernelTable<T>& uk, int64_t lo, int64_t hi, const T* t, int64_t ldt, T beta, View<T> c) {
    if (beta == T(0) && c.cs == 1) return uk.copy_columns(hi - lo, c.cols, t + lo, ldt, c.data + lo * c.rs, c.rs);
    for (int64_t i = lo; i < hi; ++i)
        for (int64_t j = 0; j < c.cols; ++j) {
            T& cij = c.data[i * c.rs + j * c.cs];
            cij = beta == T(0) ? t[j * ldt + i] : std::fma(beta, cij, t[j * ldt + i]);
        }
}

// Past kNarrowShortMinM rows with k up to kFewColumnsShortMaxK the small kernels take C^T
// instead (try_narrow_small_transposed): the few-row kernels pass over C^T's partial sums once
// per 2-4 rows of A^T, too often for so short a k (float32 2469 x 6 x 18 A.T @ W.T 0.85x ->
// 1.02x NumPy, float64 2346 x 2 x 41 0.80x -> 0.98x; under 100 rows lost up to a fifth, and 5
// columns with k of 77-117 a fifth).
constexpr int64_t kNarrowShortMinM = 200;
constexpr int64_t kFewColumnsShortMaxK = 48;

bool few_columns_short(int64_t m, int64_t k) { return m >= kNarrowShortMinM && k <= kFewColumnsShortMaxK; }

// A narrow C with A stored by columns (x.T @ w with few columns of w): C^T = B^T A^T is a
// few-row product that streams A^T's rows (A's columns) once, where the tiles would pack all of
// A for one sliver of a few columns. C^T's rows are C's columns, not contiguous: each thread's
// piece goes through scratch and into C (with beta) right after. From 2 columns up to
// few_rows_max_m and 40 bytes a row of C, k from 16 (k = 3 and 8 lost, 16 won); see
// docs/DESIGN.md, "Few rows".
template <typename T>
bool few_columns_fit(const KernelSet& ks, View<const T> a, View<T> c) {
    const int64_t n = c.cols;
    return a.rs == 1 && c.rs != 1 && n >= 2 && n <= ks.tuning.few_rows_max_m && n * int64_t(sizeof(T)) <= 40 &&
           a.cols >= 16 && !few_columns_short(c.rows, a.cols);
}

// An oriented x.T @ W.T stack item (both operands by columns, beta 0) that small_stack_c_cols
// writes from registers (its table's transposed_min_k), before the few-row kernels would take
// it (float64 200 x (38 x 5 x 35) 0.77 -> 0.95x NumPy): up to kTransposedMaxSide a side (the
// random sweeps' range; past it single products lost, 17 x 300 x 400 1.34 -> 1.26x, and stacks
// split), C^T a small product and no dot tail (gemm's sums for those columns go in another
// order).
constexpr int64_t kTransposedMaxSide = 64;

template <typename T>
bool transposed_in_registers(const KernelSet& ks, const SmallProduct<T>& sp, T beta) {
    const KernelTable<T>& uk = main_table<T>(ks);
    const int64_t m = sp.c.rows, n = sp.c.cols, k = sp.a.cols;
    return transposes_in_place(sp, beta) && uk.transposed_min_k > 0 && k >= uk.transposed_min_k &&
           std::max({m, n, k}) <= kTransposedMaxSide && small_tail_dots(uk, sp) == 0 &&
           small_shaped(ks, transposed_operands(sp));
}

// A single x.T @ W.T product (as orient sees it) that transposed_in_registers takes, on one
// thread: small_stack_c_cols on a run of one, as its stack items (the same bits as the paths it
// replaces, which sum in the same order). Zen 4, float64, 1 thread, switched per call
// alternating with NumPy: 49 x 9 x 34 1.38 -> 1.64x, 64 x 34 x 28 0.93 -> 1.05x, 31 x 9 x 20 1.57
// -> 2.27x, 24 x 20 x 55 1.39 -> 1.66x; past 64 rows the copied B won (100 x 100 x 40 1.08 ->
// 1.02x, 90 x 40 x 20 1.29 -> 1.20x).
template <typename T>
bool try_transposed_single(const KernelSet& ks, const KernelTable<T>& uk, T alpha, View<const T> a, View<const T> b,
                           T beta, View<T> c) {
    const SmallProduct<T> sp = orient(a, b, c);
    const int64_t m = sp.c.rows, n = sp.c.cols, k = sp.a.cols;
    // The stride checks first: every product asks, few are x.T @ W.T.
    if (!transposed_in_registers(ks, sp, beta) || threads_for(m, n, k, kSmallMinWorkPerThread) != 1) return false;
    uk.small_stack_c_cols(StackRun{1, 0, 0, 0}, n, m, k, alpha, sp.b.data, sp.b.cs, sp.a.data, sp.a.cs, sp.c.data,
                          sp.c.rs, nullptr);
    return true;
}

}  // namespace

template <typename T>
void run_dots_copied(const KernelTable<T>& uk, int side, T alpha, View<const T> a, View<const T> b, T beta, View<T> c,
                     const StackRun& run, bool on_caller) {
    // The long side's operand is along k (dots_side's rule); the short side's is copied along k
    // when it is not: A's rows (few rows, side 1, B's columns along k) or B's columns (few
    // columns, side 2, A's rows along k), so one scratch serves.
    const int64_t k = a.cols;
    const bool copy_a = a.cs != 1, copy_b = b.rs != 1;
    T* t = copy_a || copy_b ? static_cast<T*>(thread_scratch(size_t((copy_a ? a.rows : b.cols) * k) * sizeof(T)))
                            : nullptr;
    // The long operands of a stack from memory (vectors_from_memory): each item's dots then prefetch the
    // next item's (run_dots' next_l). Within L3 the chunks cost more than they gain (float64 309
    // x (25 x 2 x 46) x @ W.T 1.0x NumPy without, 0.69-0.79x with).
    const double long_bytes = double((side == 1 ? b.cols : a.rows) * k) * double(sizeof(T));
    const bool stream = vectors_from_memory(double(run.count) * long_bytes);
    const int64_t long_stride = side == 1 ? run.sb : run.sa;  // never the copied operand
    for (int64_t i = 0; i < run.count; ++i) {
        const T *ar = a.data + i * run.sa, *bt = b.data + i * run.sb;
        int64_t lda = a.rs, ldb = b.cs;
        if (copy_a) {
            copy_to_rows(uk, a.rows, k, ar, a.rs, a.cs, t, k);
            ar = t, lda = k;
        }
        if (copy_b) {
            copy_to_rows(uk, b.cols, k, bt, b.cs, b.rs, t, k);
            bt = t, ldb = k;
        }
        run_dots_side(uk, side, k, alpha, ar, lda, bt, ldb, beta,
                      View<T>{c.data + i * run.sc, c.rows, c.cols, c.rs, c.cs}, on_caller,
                      stream && i + 1 < run.count ? long_stride : 0);
    }
}

template <typename T>
void run_few_columns(const KernelTable<T>& uk, T alpha, View<const T> a, View<const T> b, T beta, View<T> c,
                     bool ahead) {
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    T* t = static_cast<T*>(thread_scratch(size_t(n * m) * sizeof(T)));
    few_rows_split(
        threads_for(m, n, k), n, m, sizeof(T),
        [&](int64_t i0, int64_t rows, int64_t lo, int64_t hi, char* chunk) {
            uk.few_rows(rows, hi - lo, k, alpha, b.data + i0 * b.cs, b.cs, b.rs, a.data + lo, a.cs, T(0),
                        t + i0 * m + lo, m, reinterpret_cast<T*>(chunk), ahead);
        },
        [&](int64_t lo, int64_t hi) { put_transposed(uk, lo, hi, t, m, beta, c); });
}

namespace {

template <typename T>
bool try_few_columns(const KernelSet& ks, const KernelTable<T>& uk, T alpha, View<const T> a, View<const T> b, T beta,
                     View<T> c) {
    if (!few_columns_fit(ks, a, c)) return false;
    run_few_columns(uk, alpha, a, b, beta, c, rows_from_memory(double(a.rows) * double(a.cols) * double(sizeof(T))));
    return true;
}

// The last columns of a small product (oriented) with A stored by columns that go to the
// few-row kernels as C^T's rows (run_few_columns, streaming A^T's rows once), 0 for none: the
// t = n % W columns past C's whole vectors, 1 to few_rows_max_m of them and under half a vector,
// beta 0, from kTailRowsMinM rows, kTailRowsMinK of k (float32: kTailRowsMinKF32) and
// kTailRowsMinBytes of A (below, the scratch and the transposition back cost more than the
// small kernels' half-width vector per row and k step: float32 16 x 17 x 32 0.83x, 64 x 18 x 8
// 0.86x their time, 8 x 18 x 411 0.87x; float32 k = 9-14 split either way, 16-31 gained, 611 x
// 17 x 29 0.82x -> 1.00x NumPy; float64 at k 16-31 lost 4% past 2000 rows). few_rows sums
// each element over k in order and finishes with alpha * sum, as the small kernels do: the
// same bits, so stacks (small_stack, no such tail) keep the single product's. See
// docs/DESIGN.md, "Small products".
constexpr int64_t kTailRowsMinM = 12;
constexpr int64_t kTailRowsMinK = 32;
constexpr int64_t kTailRowsMinKF32 = 16;
constexpr int64_t kTailRowsMinBytes = 8192;

template <typename T>
int64_t small_tail_rows(const KernelSet& ks, const SmallProduct<T>& sp, T beta) {
    const int64_t w = main_table<T>(ks).lanes, m = sp.c.rows, n = sp.c.cols, k = sp.a.cols, t = n % w;
    if (n < w || t == 0 || t > ks.tuning.few_rows_max_m || 2 * t >= w || beta != T(0)) return 0;
    if (sp.a.rs != 1 || sp.a.cs == 1 || m < kTailRowsMinM || k < (sizeof(T) == 4 ? kTailRowsMinKF32 : kTailRowsMinK))
        return 0;
    return m * k * int64_t(sizeof(T)) >= kTailRowsMinBytes ? t : 0;
}

// A C narrower than the tile whose last vector would leave a sixth or more of its lanes idle
// (float64: 9-13 columns fill 16 lanes) goes to the blocked path as C^T = B^T A^T, its n rows
// in the tile's row slivers (no lane idle), into scratch, and from there into C by copy_columns'
// register transposes; from kNarrowTransposedMinM rows (C^T's columns). See docs/DESIGN.md,
// "Narrow C as C^T".
constexpr int64_t kNarrowTransposedMinM = 8;

template <typename T>
bool try_narrow_transposed(const KernelSet& ks, const KernelTable<T>& uk, T alpha, const SmallProduct<T>& sp, T beta) {
    const int64_t m = sp.c.rows, n = sp.c.cols, k = sp.a.cols;
    if (n >= uk.nr || m < kNarrowTransposedMinM || !lanes_idle(uk.tiles[1], n, uk.lanes)) return false;
    T* t = static_cast<T*>(thread_c_scratch(size_t(n * m) * sizeof(T)));
    run(ks, alpha, View<const T>{sp.b.data, n, k, sp.b.cs, sp.b.rs}, View<const T>{sp.a.data, k, m, sp.a.cs, sp.a.rs},
        T(0), View<T>{t, n, m, m, 1}, Epilogue<T>{});
    put_transposed(uk, 0, m, t, m, beta, sp.c);
    return true;
}

// A C narrower than one vector with A stored by columns (x.T @ w) as C^T = B^T A^T on the small
// kernels: C^T's n rows run along m in whole vectors, its B is A^T (A's columns) read in place,
// and each thread's columns of C^T (C's rows) go through scratch into C right after
// (put_transposed: beta with one rounding, as the kernels finish). Taken where C's rows would
// leave a fifth or more of the small kernels' lanes idle (float32 9-12 columns in 16: 677 x 9 x
// 150 A.T @ W 0.85x -> 1.13x NumPy, 2707 x 11 x 253 1.85x -> 2.52x; 13 columns lost up to 8%),
// for the few-column products few_columns_short leaves, and past kNarrowShortMinM rows with k
// up to kHalfRowsMaxK for rows in half-width vectors (float32 7-8 columns on AVX-512: 838 x 8 x
// 115 0.77x -> 1.15x, 2046 x 7 x 50 1.22x -> 1.75x), and with B by rows (x.T @ w) from
// kHalfRowsLongMinM rows and kHalfRowsLongMinK of k, where each k step of C's one-vector
// panel broadcast 8 elements of A for 8 FMAs (Intel Xeon, float32 64 x 8 x 1000 0.66-0.69x ->
// 1.00-1.06x, 300 x 8 x 300 0.70-0.74x -> 1.08x, 100 x 8 x 100 1.03x -> 1.28-1.33x; 24 x 8 x
// 64 2.30x -> 1.77-1.84x, 32 x 8 x 32 2.2x -> 1.86-1.89x, and x.T @ W.T, B copied, 64 x 8 x
// 300 1.19x -> 1.03x lost); from kNarrowSmallMinM rows and kNarrowSmallMinK of k; under
// kNarrowSmallCopyMinM rows with k under kNarrowSmallCopyMinK moving C^T into C costs more
// than the idle lanes (200-item stacks float32 22 x 12 x 23 0.82x -> 1.16x NumPy, 11 x 12 x 63
// 0.84x -> 1.33x; from k = 64 C^T won, 11 x 12 x 165 0.95x -> 1.07x). Stack items run the same
// way item by item (small_item's narrow_columns), with the single product's bits. See
// docs/DESIGN.md, "Narrow C as C^T".
constexpr int64_t kNarrowSmallMinM = 8;
constexpr int64_t kNarrowSmallMinK = 16;
constexpr int64_t kNarrowSmallCopyMinM = 24;
constexpr int64_t kNarrowSmallCopyMinK = 64;
constexpr int64_t kHalfRowsMaxK = 128;
constexpr int64_t kHalfRowsLongMinM = 64;
constexpr int64_t kHalfRowsLongMinK = 96;
// Under kNarrowSmallMinK of k, float32 from kNarrowShortKMinM rows: C's rows of 3-8 columns
// spent a masked 16-lane vector on each row and k step (Intel Xeon, float32 A.T @ W 3000 x 3 x
// 3 0.80-0.87x -> 1.24-1.25x NumPy, 1000 x 3 x 8 0.75-0.77x -> 1.61-1.63x, 300 x 3 x 8 1.27x ->
// 2.13x, A.T @ W.T 1000 x 3 x 8 0.69-0.71x -> 1.54-1.58x); float64 lost some (3000 x 3 x 3 1.25x
// -> 1.11x, 600 x 6 x 12 1.10x -> 0.96-0.99x) and keeps the bound.
constexpr int64_t kNarrowShortKMinM = 200;

// Whether try_narrow_small_transposed takes the oriented product sp.
template <typename T>
bool narrow_small_transposed(const KernelSet& ks, const SmallProduct<T>& sp) {
    const KernelTable<T>& uk = main_table<T>(ks);
    const int64_t m = sp.c.rows, n = sp.c.cols, k = sp.a.cols;
    if (n >= uk.lanes || sp.a.rs != 1 || sp.a.cs == 1 || m < kNarrowSmallMinM) return false;
    if (k < kNarrowSmallMinK && !(sizeof(T) == 4 && m >= kNarrowShortKMinM)) return false;
    if (m < kNarrowSmallCopyMinM && k < kNarrowSmallCopyMinK) return false;
    const bool half_rows = 2 * n <= uk.lanes && ((m >= kNarrowShortMinM && k <= kHalfRowsMaxK) ||
                                                 (sp.b.cs == 1 && m >= kHalfRowsLongMinM && k >= kHalfRowsLongMinK));
    if (4 * lanes_spanned(uk.tiles[1], n, uk.lanes) < 5 * n && !few_columns_short(m, k) && !half_rows) return false;
    return small_reads_a(ks.tuning, n, m, k, sp.b.rs, sizeof(T)) && !small_b_chunks(transposed_operands(sp));
}

}  // namespace

template <typename T>
void run_narrow_transposed(const KernelTable<T>& uk, T alpha, const SmallProduct<T>& sp, T beta, int64_t lo, int64_t hi,
                           T* t) {
    const SmallProduct<T> st = transposed_operands(sp);
    const int64_t m = sp.c.rows, n = sp.c.cols, k = sp.a.cols;
    uk.small(n, hi - lo, k, alpha, st.a.data, st.a.rs, st.a.cs, st.b.data + lo, st.b.rs, T(0), t + lo, m);
    put_transposed(uk, lo, hi, t, m, beta, sp.c);
}

namespace {

template <typename T>
bool try_narrow_small_transposed(const KernelSet& ks, const KernelTable<T>& uk, int threads, T alpha,
                                 const SmallProduct<T>& sp, T beta) {
    if (!narrow_small_transposed(ks, sp)) return false;
    T* t = static_cast<T*>(thread_c_scratch(size_t(sp.c.cols * sp.c.rows) * sizeof(T)));
    parallel_ranges(
        threads, sp.c.rows, uk.lanes,
        [&](int, int64_t lo, int64_t hi) { run_narrow_transposed(uk, alpha, sp, beta, lo, hi, t); },
        kSmallPiecesPerThread);
    return true;
}

// The views (shapes and strides), kernel set and beta == 0 of the last single product each
// thread ran whole on the small kernels by compute()'s route below: every decision on that
// route reads only these (no data pointer, no thread count: work that one thread takes whatever
// the settings and load), so gemm sends a product with the same key straight to small_stack,
// skipping check_single (which these also decide) and some twenty tests (a C++ loop of float64 4^3
// products: 58.7 -> 36.1 ns a call, 8^3 71 -> 43).
struct SmallRoute {
    const KernelSet* ks = nullptr;
    std::array<int64_t, 12> views{};
    bool beta0 = false;
    bool operator==(const SmallRoute& o) const { return ks == o.ks && views == o.views && beta0 == o.beta0; }
};

template <typename T>
SmallRoute small_route(const KernelSet& ks, View<const T> a, View<const T> b, T beta, View<T> c) {
    return {&ks, {a.rows, a.cols, a.rs, a.cs, b.rows, b.cols, b.rs, b.cs, c.rows, c.cols, c.rs, c.cs}, beta == T(0)};
}

thread_local SmallRoute t_small_route_f32, t_small_route_f64;

template <typename T>
SmallRoute& last_small_route() {
    return sizeof(T) == 4 ? t_small_route_f32 : t_small_route_f64;
}

// m, n, k >= 1, alpha != 0.
template <typename T>
void compute(T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const Epilogue<T>& ep) {
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    // One read of the active set: a concurrent set_kernel must not mix two kernels in a call.
    const KernelSet& ks = active_kernels();
    const KernelTable<T>& main = main_table<T>(ks);
    auto finish = [&](int64_t lo, int64_t hi, T* y, int64_t incy) { gemv_epilogue(main, m, ep, lo, hi, y, incy); };
    const int side = dots_side(ks, a, b, c);
    if (vector_product(m, n, side) && try_gemv(main, alpha, a, b, beta, c, finish)) return;
    if (side == 0 && try_transposed_single(ks, main, alpha, a, b, beta, c)) {
        if (ep.active()) apply_epilogue(main, c, ep);
        return;
    }
    if (try_dots(main, side, alpha, a, b, beta, c) || try_few_columns(ks, main, alpha, a, b, beta, c)) {
        if (ep.active()) apply_epilogue(main, c, ep);
        return;
    }
    SmallProduct<T> sp = orient(a, b, c);
    const int64_t c_cols = sp.c.cols;  // before a tail takes columns off
    const SmallB plan = small_shaped(ks, sp) ? small_b_plan(sp) : SmallB::none;
    // A B in place whose rows crowd L1 would be copied a chunk at a time (run_small_chunks); for
    // few_row_groups_fit's rows the few-row kernels stream it in place instead (float64 12 x
    // 128^2 1.24x, 20 x 128^2 1.21x), with the same bits: both sum over k in order from zero and
    // finish alike, so a stack item (small kernels, in place) equals the single product.
    const bool stream = plan == SmallB::in_place && small_b_chunks(sp) &&
                        few_row_groups_fit(ks.tuning, sp.c.rows, sp.c.cols, k, sizeof(T), sp.b.cs, sp.c.cs);
    // x.T @ W.T with too large a W for the small path (the tiles would pack W by columns: half the
    // time of float64 8 x 256 x 256) may still be small as C^T = W X (try_small_transposed); an
    // epilogue then runs after it, as after the dots, so a bias gives the plain product's bits.
    if (plan == SmallB::none &&
        try_small_transposed(ks, main, [&] { return threads_for(m, n, k, kSmallMinWorkPerThread); }, alpha, sp, beta)) {
        if (ep.active()) apply_epilogue(main, c, ep);
        return;
    }
    if (plan != SmallB::none && !stream) {
        const int threads = threads_for(m, n, k, kSmallMinWorkPerThread);
        if (try_narrow_small_transposed(ks, main, threads, alpha, sp, beta)) {
            if (ep.active()) apply_epilogue(main, c, ep);
            return;
        }
        // The last columns first, as dot products (small_tail_dots) or with A by columns on the
        // few-row kernels (small_tail_rows), then the rest as a small product of whole vectors;
        // C's view shrinks with sp's (its rows when transposed).
        const int64_t dots_tail = small_tail_dots(main, sp);
        if (const int64_t tail = dots_tail ? dots_tail : small_tail_rows(ks, sp, beta)) {
            const int64_t j0 = sp.c.cols - tail;
            const View<const T> bt{sp.b.data + j0 * sp.b.cs, k, tail, sp.b.rs, sp.b.cs};
            const View<T> ct{sp.c.data + j0, sp.c.rows, tail, sp.c.rs, 1};
            if (dots_tail) try_dots(main, 2, alpha, sp.a, bt, beta, ct);
            else run_few_columns(main, alpha, sp.a, bt, beta, ct, false);
            if (sp.transposed) {
                if (ep.active()) apply_epilogue(main, View<T>{c.data + j0 * c.rs, tail, c.cols, c.rs, c.cs}, ep);
                c.rows = j0;
            } else {
                if (ep.active()) apply_epilogue(main, View<T>{c.data + j0, c.rows, tail, c.rs, 1}, ep.from_column(j0));
                c.cols = j0;
            }
            if (j0 == 0) return;
            sp.b.cols = sp.c.cols = j0;
        }
        if (plan == SmallB::copied && !ep.active()) {
            if (try_small_transposed(ks, main, [&] { return threads; }, alpha, sp, beta)) return;
            const int64_t chunk = copied_chunk_columns<T>(k);
            if ((threads > 1 || sp.c.cols > chunk) && sp.c.rows <= kCopiedColumnsMaxM)
                return run_small_copied(main, threads, alpha, sp, beta, chunk);
        }
        if (plan == SmallB::copied) sp.b = copy_b_columns(main, sp, 0, sp.c.cols);
        if (!ep.active()) {
            if (small_b_chunks(sp)) return run_small_chunks(main, threads, alpha, sp, beta);
            if (plan == SmallB::in_place && sp.c.cols == c_cols && small_block_rows(sp) == 0 &&
                one_thread_by_work(m, n, k, kSmallMinWorkPerThread))
                last_small_route<T>() = small_route(ks, a, b, beta, c);
            run_small(main, threads, alpha, sp, beta);
            return;
        }
        // With an epilogue, blocks of rows small enough to stay in L1 between the two passes;
        // threads take whole 4-row groups as in run_small.
        const int64_t block = std::max<int64_t>(4, 4096 / int64_t(sizeof(T)) / sp.c.cols / 4 * 4);
        parallel_ranges(
            threads, sp.c.rows, 4,
            [&](int, int64_t lo, int64_t hi) {
                for (int64_t r0 = lo; r0 < hi; r0 += block) {
                    const int64_t r1 = std::min(hi, r0 + block);
                    main.small(r1 - r0, sp.c.cols, k, alpha, sp.a.data + r0 * sp.a.rs, sp.a.rs, sp.a.cs, sp.b.data,
                               sp.b.rs, beta, sp.c.data + r0 * sp.c.rs, sp.c.rs);
                    small_epilogue(main, sp, c, r0, r1, ep);
                }
            },
            kSmallPiecesPerThread);
        return;
    }
    if (try_narrow_transposed(ks, main, alpha, sp, beta)) {
        if (ep.active()) apply_epilogue(main, c, ep);
        return;
    }
    if (sp.transposed && ep.bias) {
        // C^T's tiles would need a bias per row: finish the column-major C in one pass instead.
        run(ks, alpha, sp.a, sp.b, beta, sp.c, Epilogue<T>{});
        apply_epilogue(main, c, ep);
        return;
    }
    run(ks, alpha, sp.a, sp.b, beta, sp.c, ep);
}

}  // namespace

template <typename T>
void gemm(T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const Epilogue<T>& ep) {
    if (alpha != T(0) && !ep.active()) {
        const KernelSet& ks = active_kernels();
        if (small_route(ks, a, b, beta, c) == last_small_route<T>()) {
            const PaddingFlags flags;
            const SmallProduct<T> sp = orient(a, b, c);
            main_table<T>(ks).small_stack(StackRun{1, 0, 0, 0}, sp.c.rows, sp.c.cols, sp.a.cols, alpha, sp.a.data,
                                          sp.a.rs, sp.a.cs, sp.b.data, sp.b.rs, beta, sp.c.data, sp.c.rs, 0);
            flags.settle([&] { return has_nan(c); });
            return;
        }
    }
    check_single(a, b, c);
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    if (m == 0 || n == 0) return;
    if (alpha == T(0) || k == 0) {
        scale(main_table<T>(active_kernels()), beta, c, ep);
        return;
    }
    const PaddingFlags flags;
    compute(alpha, a, b, beta, c, ep);
    flags.settle([&] { return has_nan(c); });
}

namespace {

// Past small_max_b_l1s L1s every 4-row group of C rereads B from L2. That still pays for a few
// groups (up to 48 rows), but not where B's rows are whole lines (power-of-two widths, measured:
// the packed path ran 1.07-1.5x), nor for 2 to few_rows_max_m rows from k = 128 (few_rows
// streams B once); see docs/DESIGN.md, "Small products".
// How far small_shape sends a chunked B to the small kernels (below).
constexpr int64_t kChunkedNarrowBytes = 256;
constexpr int64_t kChunkedWideMaxM = 32;

bool b_reread_pays(const Tuning& t, int64_t m, int64_t n, int64_t k, int64_t elem_bytes) {
    if (m <= t.few_rows_max_m) return k < 128;
    return m <= 48 && n * elem_bytes % 64 != 0;
}

// Nor does B's size matter where one column panel of it over all of k fits half of L1: the
// small kernels sweep C a panel at a time down all the rows, so each panel comes from L2 once,
// as packing would read it. Up to kPanelInL1MaxM rows (float64 12 x 2000 x 16 1.28x the packed
// path, 69 x 1568 x 30 1.06x; past 400 rows the packed path won, 571 x 2545 x 14 by 1.45x).
constexpr int64_t kPanelInL1MaxM = 128;
bool b_panel_in_l1(int64_t m, int64_t k) {
    return m <= kPanelInL1MaxM && 2 * k * kSmallPanelBytes <= caches().l1d.size;
}

// The lanes the small kernels' vectors span over `cols` columns: whole vectors, and the last
// part in a half-width one where the table has them and the part is alone or half_tails() says
// so (kernels/small.hpp, to_half_tail), else in a whole one.
template <typename T>
int64_t lanes_swept(const KernelTable<T>& uk, int64_t cols) {
    const int64_t whole = cols / uk.lanes * uk.lanes, part = cols - whole;
    if (part == 0) return whole;
    if (whole > 0 && !half_tails()) return whole + uk.lanes;
    return whole + lanes_spanned(uk.tiles[1], part, uk.lanes);
}

// Whether an x.T @ W.T item (oriented; both operands by columns) costs less as C^T = W X, C^T
// moved into C, than as C with B copied by rows: always with m <= k (fewer elements moved);
// past that, the lanes the FMAs span each way (C's n columns against C^T's m) plus each moved
// element at a quarter of a vector FMA (a register transpose's share). Zen 4, 200-item stacks
// with m > k, switched per call: float32 39 x 18 x 32 0.84 -> 0.99x NumPy, 38 x 19 x 26 0.97 ->
// 1.09x, 47 x 57 x 35 0.85 -> 0.90x, float64 46 x 5 x 11 0.88 -> 1.08x; where the model says C,
// C^T lost (float32 23 x 39 x 13 1.04 -> 0.86x, 58 x 51 x 18 1.02 -> 0.90x, 41 x 63 x 32 1.05 ->
// 0.88x).
template <typename T>
bool transposed_pays(const KernelTable<T>& uk, const SmallProduct<T>& sp) {
    const int64_t m = sp.c.rows, n = sp.c.cols, k = sp.a.cols, w = uk.lanes;
    if (m <= k) return true;
    return 4 * n * k * lanes_swept(uk, m) + w * m * n < 4 * m * k * lanes_swept(uk, n) + w * k * n;
}

}  // namespace

bool small_shape(const KernelSet& ks, int64_t m, int64_t n, int64_t k, int64_t elem_bytes) {
    // In double: m * n * k of a huge product overflows int64. Work counts in float32 multiply-adds:
    // an 8-byte product twice (its vectors hold half the elements; docs/DESIGN.md, "Small products").
    const Tuning& t = ks.tuning;
    // A B the small kernels take in chunks kept in L1 beat the packed tile at every size
    // measured with rows of C up to kChunkedNarrowBytes (up to 4000 x 64 x 4000 float32), and
    // for wider rows up to kChunkedWideMaxM of them (64 x 128 x 4000 float32 lost 0.79x); see
    // docs/DESIGN.md, "Small products".
    if (t.small_chunked_any && small_chunks_b(n * elem_bytes, k) &&
        (n * elem_bytes <= kChunkedNarrowBytes || m <= kChunkedWideMaxM))
        return true;
    const double b_bytes = double(n) * double(k) * double(elem_bytes);
    // Narrow C at any work with B of at most 3/4 of L2: a B filling L2 (8192 x 64 x 8192 float32,
    // 2 MiB) lost 0.73x to the packed path; 1.5 MiB still won 1.10x.
    const bool narrow = n * elem_bytes <= t.small_narrow_bytes && 4.0 * b_bytes <= 3.0 * double(caches().l2.size);
    // B counted in float32-sized elements: a float64 B of twice the bytes still won (128^3).
    const bool b_near = t.small_max_b_l1s == 0 ||
                        4.0 * double(n) * double(k) <= double(t.small_max_b_l1s) * double(caches().l1d.size) ||
                        b_panel_in_l1(m, k) || b_reread_pays(t, m, n, k, elem_bytes);
    return (narrow ||
            (double(m) * double(n) * double(k) * double(elem_bytes) <= 4.0 * double(t.small_max_work) && b_near)) &&
           b_bytes <= double(caches().l2.size);
}

template <typename T>
SmallItem small_item(const KernelSet& ks, View<const T> a, View<const T> b, View<T> c, T beta, SmallProduct<T>& out) {
    // A product compute() gives the dot-product or few-column paths is not a small one in a stack
    // either: an item equals the same product alone. Items whose B rows crowd L1 stay in place:
    // small_stack prefetches each next item, which a copy of B apart would have to wait for
    // (float64 1000 x 64^3: 1.40-1.50x NumPy in place, 0.85-0.88x copied item by item).
    if (dots_side(ks, a, b, c) != 0) return SmallItem::none;
    out = orient(a, b, c);
    // C^T = W @ x for x.T @ W.T (beta 0) where C^T is a small product.
    const bool transposed_small = transposes_in_place(out, beta) && small_shaped(ks, transposed_operands(out));
    if (transposed_in_registers(ks, out, beta)) return SmallItem::c_columns;
    // x.T @ W.T items gemm gives the few-row kernels as C^T run as C^T = W @ x on the small kernels
    // a run at a time, with the same sums in the same order: run_few_columns' per-item setup
    // (the thread split, the scratch lookups, C^T moved back through scratch) took more than its
    // kernel (float32 200 x (16 x 5 x 40) 0.57 of the time, 21 x 4 x 36 0.79, 60 x 4 x 20 0.77,
    // 300 x 2 x 40 0.97; float64 100 x 4 x 50 0.82).
    if (few_columns_fit(ks, a, c)) {
        return transposed_small ? SmallItem::c_columns : SmallItem::few_columns;
    }
    if (!small_shaped(ks, out)) return SmallItem::none;
    if (narrow_small_transposed(ks, out)) return SmallItem::narrow_columns;
    if (out.b.cs == 1) return SmallItem::in_place;
    // A dot-kernel tail keeps gemm (its sums go in another order).
    const KernelTable<T>& uk = main_table<T>(ks);
    if (small_b_plan(out) != SmallB::copied || small_tail_dots(uk, out) != 0) return SmallItem::none;
    // x.T @ W.T items as C^T = W @ x, both read in place, move C (m x n) where a copy of B moves
    // k x n elements: when that is fewer, or as many (both operands then by rows, as the square
    // kernels take them), or where C^T's lanes save more than the extra moves (transposed_pays).
    // A few-row tail gemm would give the last columns sums as the small kernels do, so C^T takes
    // those items too (float64 146 x (35 x 9 x 55) 0.69 -> 0.91x NumPy).
    if (transposed_small && transposed_pays(uk, out)) return SmallItem::c_columns;
    // With B copied, gemm's few-row tail spares the last vector's idle lanes (float32 100 x (60 x
    // 34 x 50) 0.88x NumPy through gemm, 0.84x all on the small kernels).
    if (small_tail_rows(ks, out, beta) != 0) return SmallItem::none;
    return out.b.rs == 1 ? SmallItem::b_columns : SmallItem::b_copied;
}

template <typename T>
void run_b_copied(const KernelTable<T>& uk, T alpha, SmallProduct<T> sp, T beta) {
    sp.b = copy_b_columns(uk, sp, 0, sp.c.cols);
    run_small(uk, 1, alpha, sp, beta);
}

template <typename T>
int64_t small_tail_of(const KernelSet& ks, View<const T> a, View<const T> b, View<T> c) {
    const SmallProduct<T> sp = orient(a, b, c);
    return small_shaped(ks, sp) && small_b_plan(sp) != SmallB::none ? small_tail_dots(main_table<T>(ks), sp) : 0;
}

template SmallItem small_item<float>(const KernelSet&, View<const float>, View<const float>, View<float>, float,
                                     SmallProduct<float>&);
template SmallItem small_item<double>(const KernelSet&, View<const double>, View<const double>, View<double>, double,
                                      SmallProduct<double>&);
template void run_b_copied<float>(const KernelTable<float>&, float, SmallProduct<float>, float);
template void run_b_copied<double>(const KernelTable<double>&, double, SmallProduct<double>, double);

template void run_narrow_transposed<float>(const KernelTable<float>&, float, const SmallProduct<float>&, float, int64_t,
                                           int64_t, float*);
template void run_narrow_transposed<double>(const KernelTable<double>&, double, const SmallProduct<double>&, double,
                                            int64_t, int64_t, double*);

template void run_dots_copied<float>(const KernelTable<float>&, int, float, View<const float>, View<const float>, float,
                                     View<float>, const StackRun&, bool);
template void run_dots_copied<double>(const KernelTable<double>&, int, double, View<const double>, View<const double>,
                                      double, View<double>, const StackRun&, bool);
template void run_few_columns<float>(const KernelTable<float>&, float, View<const float>, View<const float>, float,
                                     View<float>, bool);
template void run_few_columns<double>(const KernelTable<double>&, double, View<const double>, View<const double>,
                                      double, View<double>, bool);

template int64_t small_tail_of<float>(const KernelSet&, View<const float>, View<const float>, View<float>);
template void gemm<float>(float, View<const float>, View<const float>, float, View<float>, const Epilogue<float>&);
template void gemm<double>(double, View<const double>, View<const double>, double, View<double>,
                           const Epilogue<double>&);

}  // namespace fastgemm
