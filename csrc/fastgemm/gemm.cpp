#include "gemm.hpp"

#include <algorithm>
#include <cstdint>
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

// One row or one column of C is a matrix-vector product: memory-bound on the matrix, which
// the blocked path would pack (a full extra pass) and then feed through 1/MR of a tile.
// Streams the matrix once instead, when the vector and output strides allow vector loads.
template <typename T>
bool try_gemv(const KernelTable<T>& uk, T alpha, View<const T> a, View<const T> b, T beta, View<T> c,
              const Epilogue<T>& ep) {
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    const int threads = threads_for(m, n, k);
    // Outputs split over threads in whole cache lines; each output's sum is the same on any
    // split, so the result does not depend on the thread count.
    const int64_t grain = 64 / int64_t(sizeof(T));
    // The epilogue of outputs [lo, hi) (y's stride incy), right after the thread computed them:
    // a row of C takes bias[lo:hi], a column bias[0] throughout.
    auto finish = [&](int64_t lo, int64_t hi, T* y, int64_t incy) {
        if (!ep.active()) return;
        if (m == 1) apply_epilogue(uk, View<T>{y + lo * incy, 1, hi - lo, 1, incy}, ep.from_column(lo));
        else apply_epilogue(uk, View<T>{y + lo * incy, hi - lo, 1, incy, 1}, ep);
    };
    auto rows_form = [&](int64_t len, const T* x, int64_t incx, const T* mat, int64_t ldm, T* y) {
        T* chunks = static_cast<T*>(thread_gemv_chunks(threads));
        parallel_ranges(threads, len, grain, [&](int tid, int64_t lo, int64_t hi) {
            uk.gemv_rows(hi - lo, k, alpha, x, incx, mat + lo, ldm, beta, y + lo,
                         chunks + tid * (kGemvChunkBytes / int64_t(sizeof(T))));
            finish(lo, hi, y, 1);
        });
    };
    auto dots_form = [&](int64_t len, const T* x, const T* mat, int64_t ldm, T* y, int64_t incy) {
        parallel_ranges(threads, len, grain, [&](int, int64_t lo, int64_t hi) {
            uk.gemv_dots(hi - lo, k, alpha, x, mat + lo * ldm, ldm, beta, y + lo * incy, incy);
            finish(lo, hi, y, incy);
        });
    };
    if (m == 1 && b.cs == 1 && (c.cs == 1 || n == 1)) {  // c[0, j] = sum_p a[0, p] b[p, j]
        rows_form(n, a.data, a.cs, b.data, b.rs, c.data);
    } else if (m == 1 && b.rs == 1 && (a.cs == 1 || k == 1)) {
        dots_form(n, a.data, b.data, b.cs, c.data, c.cs);
    } else if (n == 1 && a.rs == 1 && (c.rs == 1 || m == 1)) {  // c[i, 0] = sum_p a[i, p] b[p, 0]
        rows_form(m, b.data, b.rs, a.data, a.cs, c.data);
    } else if (n == 1 && a.cs == 1 && (b.rs == 1 || k == 1)) {
        dots_form(m, b.data, a.data, a.rs, c.data, c.rs);
    } else {
        return false;
    }
    return true;
}

// The packed path, or B read in place for few rows (tuning.direct_max_m); see docs/DESIGN.md,
// "B read in place".
template <typename T>
void run(const KernelSet& ks, T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const Epilogue<T>& ep) {
    const Tuning& tune = ks.tuning;
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    const int threads = threads_for(m, n, k);
    const KernelTable<T>& main = main_table<T>(ks);
    // B in place needs whole 64-byte lines per row: a load straddling two lines on every row
    // of a sliver costs more than packing.
    const bool lines = (b.rs * int64_t(sizeof(T))) % 64 == 0;
    if (m > tune.direct_max_m || b.cs != 1 || !lines) {
        run_blocked(main, blocking_for(main.mr, main.nr, int(sizeof(T))), threads, false, alpha, a, b, beta, c, ep);
        return;
    }
    const KernelTable<T>& uk = m <= tune.skinny_max_m ? skinny_table<T>(ks) : main;
    const Blocking bs = blocking_for(uk.mr, uk.nr, int(sizeof(T)));
    // Columns before B's first 64-byte boundary go through the packed path, the rest in place.
    // That head is one more narrow column of tiles: worth it only when there are many; see
    // docs/DESIGN.md, "Head columns".
    const auto misalign = int64_t(reinterpret_cast<uintptr_t>(b.data) % 64);
    const int64_t head = std::min<int64_t>(n, misalign ? (64 - misalign) / int64_t(sizeof(T)) : 0);
    if (head > 0 && n < tune.head_min_slivers * int64_t(uk.nr)) {
        run_blocked(main, blocking_for(main.mr, main.nr, int(sizeof(T))), threads, false, alpha, a, b, beta, c, ep);
        return;
    }
    if (head > 0)
        run_blocked(uk, bs, threads, false, alpha, a, View<const T>{b.data, k, head, b.rs, b.cs}, beta,
                    View<T>{c.data, m, head, c.rs, c.cs}, ep);
    if (head < n)
        run_blocked(uk, bs, threads, true, alpha, a, View<const T>{b.data + head, k, n - head, b.rs, b.cs}, beta,
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

// m, n, k >= 1, alpha != 0.
template <typename T>
void compute(T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const Epilogue<T>& ep) {
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    // One read of the active set: a concurrent set_kernel must not mix two kernels in a call.
    const KernelSet& ks = active_kernels();
    const KernelTable<T>& main = main_table<T>(ks);
    if ((m == 1 || n == 1) && try_gemv(main, alpha, a, b, beta, c, ep)) return;
    SmallProduct<T> sp;
    if (small_product(ks, a, b, c, sp)) {
        // Threads take whole 4-row groups; every C element is computed the same way on any
        // split (and by the fixed-shape kernels of small_stack), so the result does not
        // depend on the thread count.
        const int threads = threads_for(m, n, k);
        if (threads == 1 && !ep.active()) {
            main.small_stack(StackRun{1, 0, 0, 0}, sp.c.rows, sp.c.cols, k, alpha, sp.a.data, sp.a.rs, sp.a.cs,
                             sp.b.data, sp.b.rs, beta, sp.c.data, sp.c.rs);
            return;
        }
        // With an epilogue, blocks of rows small enough to stay in L1 between the two passes.
        const int64_t block =
            ep.active() ? std::max<int64_t>(4, 4096 / int64_t(sizeof(T)) / sp.c.cols / 4 * 4) : sp.c.rows;
        parallel_ranges(threads, sp.c.rows, 4, [&](int, int64_t lo, int64_t hi) {
            for (int64_t r0 = lo; r0 < hi; r0 += block) {
                const int64_t r1 = std::min(hi, r0 + block);
                main.small(r1 - r0, sp.c.cols, k, alpha, sp.a.data + r0 * sp.a.rs, sp.a.rs, sp.a.cs, sp.b.data, sp.b.rs,
                           beta, sp.c.data + r0 * sp.c.rs, sp.c.rs);
                if (ep.active()) small_epilogue(main, sp, c, r0, r1, ep);
            }
        });
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
    check_single(a, b, c);
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    if (m == 0 || n == 0) return;
    if (alpha == T(0) || k == 0) {
        scale(beta, c);
        if (ep.active()) apply_epilogue(main_table<T>(active_kernels()), c, ep);
        return;
    }
    const PaddingFlags flags;
    compute(alpha, a, b, beta, c, ep);
    flags.settle([&] { return has_nan(c); });
}

template <typename T>
bool small_product(const KernelSet& ks, View<const T> a, View<const T> b, View<T> c, SmallProduct<T>& out) {
    // A stride along a dimension of size 1 is meaningless; make it unit so the row-major
    // paths catch vectors and single rows.
    if (c.cols == 1) c.cs = 1;
    if (c.rows == 1) c.rs = 1;
    out.transposed = c.cs != 1 && c.rs == 1;
    if (out.transposed) {
        // Column-major C: compute C^T = B^T A^T, which is row-major.
        out.a = {b.data, b.cols, b.rows, b.cs, b.rs};
        out.b = {a.data, a.cols, a.rows, a.cs, a.rs};
        out.c = {c.data, c.cols, c.rows, c.cs, c.rs};
    } else {
        out = {a, b, c, false};
    }
    const View<const T>& bb = out.b;
    const double m = double(out.c.rows), n = double(out.c.cols), k = double(out.a.cols);
    // In double: m * n * k of a huge product overflows int64.
    return out.c.cs == 1 && bb.cs == 1 && m * n * k <= double(ks.tuning.small_max_work) &&
           n * k * double(sizeof(T)) <= double(caches().l2.size);
}

template bool small_product<float>(const KernelSet&, View<const float>, View<const float>, View<float>,
                                   SmallProduct<float>&);
template bool small_product<double>(const KernelSet&, View<const double>, View<const double>, View<double>,
                                    SmallProduct<double>&);

template void gemm<float>(float, View<const float>, View<const float>, float, View<float>, const Epilogue<float>&);
template void gemm<double>(double, View<const double>, View<const double>, double, View<double>,
                           const Epilogue<double>&);

}  // namespace fastgemm
