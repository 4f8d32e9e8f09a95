#include "gemm.hpp"

#include <cstdlib>
#include <utility>
#include <stdexcept>
#include <string>

#include "blocking.hpp"
#include "dispatch.hpp"
#include "driver.hpp"
#include "threading.hpp"

namespace fastgemm {
namespace {

std::string shape(int64_t r, int64_t c) { return "(" + std::to_string(r) + ", " + std::to_string(c) + ")"; }

int64_t checked_mul(int64_t x, int64_t y) {
    int64_t r;
    if (__builtin_mul_overflow(x, y, &r)) throw std::overflow_error("matrix dimensions overflow 64-bit indexing");
    return r;
}

// The farthest element offset must be representable, or pointer arithmetic in the loops wraps.
template <typename V>
void check_extent(const V& v) {
    if (v.rows < 0 || v.cols < 0) throw std::invalid_argument("negative matrix dimension");
    if (v.rows == 0 || v.cols == 0) return;
    const int64_t r = checked_mul(v.rows - 1, v.rs < 0 ? -v.rs : v.rs);
    const int64_t c = checked_mul(v.cols - 1, v.cs < 0 ? -v.cs : v.cs);
    int64_t sum;
    if (__builtin_add_overflow(r, c, &sum)) throw std::overflow_error("matrix extent overflows 64-bit indexing");
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
const Microkernel<T>& microkernel(const KernelSet& ks);
template <>
const Microkernel<float>& microkernel<float>(const KernelSet& ks) { return ks.f32; }
template <>
const Microkernel<double>& microkernel<double>(const KernelSet& ks) { return ks.f64; }

}  // namespace

template <typename T>
void gemm(T alpha, View<const T> a, View<const T> b, T beta, View<T> c) {
    if (a.rows != c.rows || b.cols != c.cols || a.cols != b.rows)
        throw std::invalid_argument("gemm: A " + shape(a.rows, a.cols) + " @ B " + shape(b.rows, b.cols) +
                                    " does not fit C " + shape(c.rows, c.cols));
    check_extent(a);
    check_extent(b);
    check_extent(c);
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    if (m == 0 || n == 0) return;
    if (alpha == T(0) || k == 0) {
        scale(beta, c);
        return;
    }
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
    const Microkernel<T>& uk = microkernel<T>(active_kernels());
    const Blocking bs = blocking_for(uk.mr, uk.nr, int(sizeof(T)));
    run_blocked(uk, bs, threads_for(c.rows, c.cols, k), alpha, a, b, beta, c);
}

template void gemm<float>(float, View<const float>, View<const float>, float, View<float>);
template void gemm<double>(double, View<const double>, View<const double>, double, View<double>);

}  // namespace fastgemm
