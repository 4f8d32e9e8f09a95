#include "gemm.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <stdexcept>
#include <string>

#include "blocking.hpp"
#include "caches.hpp"
#include "dispatch.hpp"
#include "driver.hpp"
#include "extent.hpp"
#include "threading.hpp"

namespace fastgemm {
namespace {

template <typename V>
void check_extent(const V& v) {
    if (v.rows < 0 || v.cols < 0) throw std::invalid_argument("negative matrix dimension");
    extent(v);
}

template <typename T>
void scale(T beta, View<T> c) {
    if (beta == T(1)) return;
    for (int64_t i = 0; i < c.rows; ++i)
        for (int64_t j = 0; j < c.cols; ++j) {
            T& x = c.data[i * c.rs + j * c.cs];
            x = beta == T(0) ? T(0) : beta * x;  // beta == 0 must not propagate NaN from C
        }
}

template <typename T>
const Microkernel<T>& main_kernel(const KernelSet& ks);
template <>
const Microkernel<float>& main_kernel<float>(const KernelSet& ks) { return ks.f32; }
template <>
const Microkernel<double>& main_kernel<double>(const KernelSet& ks) { return ks.f64; }
template <typename T>
const Microkernel<T>& skinny_kernel(const KernelSet& ks);
template <>
const Microkernel<float>& skinny_kernel<float>(const KernelSet& ks) { return ks.f32_skinny; }
template <>
const Microkernel<double>& skinny_kernel<double>(const KernelSet& ks) { return ks.f64_skinny; }

// Up to this many rows, B is read in place rather than packed: packing costs a pass over B
// that only M rows of FMAs amortise. Measured (AVX-512, 1 thread, N = K = 4096 fp32, B rows
// 64-byte aligned): in place vs packed 7.3 vs 3.5 GF/s at M = 1, 95 vs 42 at 16, 105 vs 60
// at 32, 107 vs 86 at 128, 106 vs 98 at 256, 107.5 vs 105 at 512; but a 512^3 product
// (B small enough that packing it is cheap) ran 0.975x NumPy in place against 1.07x packed.
constexpr int64_t kDirectMaxM = 256;
// Up to this many rows the skinny tile is used (see kernels/avx512.cpp for its numbers).
constexpr int64_t kSkinnyMaxM = 128;

// One row or one column of C is a matrix-vector product: memory-bound on the matrix, which
// the blocked path would pack (a full extra pass) and then feed through 1/MR of a tile.
// Streams the matrix once instead, when the vector and output strides allow vector loads.
template <typename T>
bool try_gemv(const Microkernel<T>& uk, T alpha, View<const T> a, View<const T> b, T beta,
              View<T> c) {
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    const int threads = threads_for(m, n, k);
    // Outputs split over threads in whole cache lines; each output's sum is the same on any
    // split, so the result does not depend on the thread count.
    const int64_t grain = 64 / int64_t(sizeof(T));
    auto rows_form = [&](int64_t len, const T* x, int64_t incx, const T* mat, int64_t ldm, T* y) {
        parallel_ranges(threads, len, grain, [&](int64_t lo, int64_t hi) {
            uk.gemv_rows(hi - lo, k, alpha, x, incx, mat + lo, ldm, beta, y + lo);
        });
    };
    auto dots_form = [&](int64_t len, const T* x, const T* mat, int64_t ldm, T* y, int64_t incy) {
        parallel_ranges(threads, len, grain, [&](int64_t lo, int64_t hi) {
            uk.gemv_dots(hi - lo, k, alpha, x, mat + lo * ldm, ldm, beta, y + lo * incy, incy);
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

// Up to this many multiply-adds, with B no larger than L2, a product runs on
// Microkernel::small: no packing, 4 rows x 4 vectors of C in registers over all of k, B read
// in place from cache by every 4-row group. On this Zen 4 that beat the packed path all the
// way to 512^3 (1 thread vs NumPy: 64^3 0.87x where packing gave 0.70x, 128^3 1.13x vs 1.02x,
// 256^3 1.11x vs 1.08x, 384^3 1.10x, 512^3 1.08x vs 1.06x, at 95-97% of the FMA peak;
// 2 threads 256^3 1.29x, 512^3 1.15x).
constexpr int64_t kSmallMaxWork = int64_t(512) * 512 * 512;
// Every 4-row group streams all of B, which must therefore stay in L2: with a 4 MiB cap,
// 64x1024x1024 ran 1.26x NumPy fp32 against 1.34x on the skinny in-place tiles, 512^3 fp64
// (B 2 MiB) 1.02x against 1.08x packed, and 16x4096x2048 (B 32 MiB) 0.63x on 2 threads.

template <typename T>
void run(const KernelSet& ks, T alpha, View<const T> a, View<const T> b, T beta, View<T> c) {
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    const int threads = threads_for(m, n, k);
    const Microkernel<T>& main = main_kernel<T>(ks);
    // B in place needs whole 64-byte lines per row: a load that straddles two lines, on every
    // row of a sliver, ran 3x slower than packing (63 -> 20 GF/s at M = 14).
    const bool lines = (b.rs * int64_t(sizeof(T))) % 64 == 0;
    if (m > kDirectMaxM || b.cs != 1 || !lines) {
        run_blocked(main, blocking_for(main.mr, main.nr, int(sizeof(T))), threads, false, alpha,
                    a, b, beta, c);
        return;
    }
    const Microkernel<T>& uk = m <= kSkinnyMaxM ? skinny_kernel<T>(ks) : main;
    const Blocking bs = blocking_for(uk.mr, uk.nr, int(sizeof(T)));
    // Columns before B's first 64-byte boundary go through the packed path, the rest in place.
    // That head is one more (narrow) column of tiles: worth it only when there are many (with
    // the split from 8 slivers up, 256^3 ran 0.99x NumPy fp32 and 1.03x fp64; packed, 1.08x).
    const auto misalign = int64_t(reinterpret_cast<uintptr_t>(b.data) % 64);
    const int64_t head = std::min<int64_t>(n, misalign ? (64 - misalign) / int64_t(sizeof(T)) : 0);
    if (head > 0 && n < 16 * int64_t(uk.nr)) {
        run_blocked(main, blocking_for(main.mr, main.nr, int(sizeof(T))), threads, false, alpha,
                    a, b, beta, c);
        return;
    }
    if (head > 0)
        run_blocked(uk, bs, threads, false, alpha, a, View<const T>{b.data, k, head, b.rs, b.cs},
                    beta, View<T>{c.data, m, head, c.rs, c.cs});
    if (head < n)
        run_blocked(uk, bs, threads, true, alpha, a,
                    View<const T>{b.data + head, k, n - head, b.rs, b.cs}, beta,
                    View<T>{c.data + head * c.cs, m, n - head, c.rs, c.cs});
}

}  // namespace

template <typename T>
void gemm(T alpha, View<const T> a, View<const T> b, T beta, View<T> c) {
    if (a.rows != c.rows || b.cols != c.cols || a.cols != b.rows)
        throw std::invalid_argument("gemm: A " + shape_str(a.rows, a.cols) + " @ B " + shape_str(b.rows, b.cols) +
                                    " does not fit C " + shape_str(c.rows, c.cols));
    check_extent(a);
    check_extent(b);
    check_extent(c);
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    if (m == 0 || n == 0) return;
    if (alpha == T(0) || k == 0) {
        scale(beta, c);
        return;
    }
    // One read of the active set: a concurrent set_kernel must not mix two kernels in a call.
    const KernelSet& ks = active_kernels();
    const Microkernel<T>& main = main_kernel<T>(ks);
    if ((m == 1 || n == 1) && try_gemv(main, alpha, a, b, beta, c)) return;
    // A stride along a dimension of size 1 is meaningless; make it unit so the row-major
    // fast path catches vectors and single rows.
    if (n == 1) c.cs = 1;
    if (m == 1) c.rs = 1;
    if (c.cs != 1 && c.rs == 1) {
        // Column-major C: compute C^T = B^T A^T, which is row-major.
        std::swap(c.rows, c.cols);
        std::swap(c.rs, c.cs);
        View<const T> at{a.data, a.cols, a.rows, a.cs, a.rs};
        View<const T> bt{b.data, b.cols, b.rows, b.cs, b.rs};
        a = bt;
        b = at;
    }
    // In double: m * n * k of a huge product would overflow int64.
    if (c.cs == 1 && b.cs == 1 &&
        double(c.rows) * double(c.cols) * double(k) <= double(kSmallMaxWork) &&
        double(c.cols) * double(k) * double(sizeof(T)) <= double(caches().l2.size)) {
        // Threads take whole 4-row groups; every C element is computed the same way on any
        // split, so the result does not depend on the thread count.
        const int64_t width = kSmallMaxVectors * main.lanes;
        auto rows = [&](int64_t lo, int64_t hi) {
            for (int64_t j = 0; j < c.cols; j += width)
                main.small(hi - lo, std::min(width, c.cols - j), k, alpha, a.data + lo * a.rs, a.rs,
                           a.cs, b.data + j, b.rs, beta, c.data + lo * c.rs + j, c.rs);
        };
        // Direct call on one thread: through a std::function, a stack of 10000 8x8x8 products
        // ran 12.7 GFLOP/s instead of 16.8.
        const int threads = threads_for(c.rows, c.cols, k);
        if (threads == 1)
            rows(0, c.rows);
        else
            parallel_ranges(threads, c.rows, 4, rows);
        return;
    }
    run(ks, alpha, a, b, beta, c);
}

template void gemm<float>(float, View<const float>, View<const float>, float, View<float>);
template void gemm<double>(double, View<const double>, View<const double>, double, View<double>);

}  // namespace fastgemm
