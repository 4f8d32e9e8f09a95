// Shape decisions shared by gemm (one product) and gemm_batched (a stack): which products the
// small kernels take, and the floating-point flag rule every path follows.
#pragma once

#include <cfenv>
#include <stdexcept>

#include "kernel.hpp"
#include "view.hpp"

namespace fastgemm {

// The kernel tables of element type T in a kernel set.
template <typename T>
const KernelTable<T>& main_table(const KernelSet& ks);
template <>
inline const KernelTable<float>& main_table<float>(const KernelSet& ks) {
    return ks.f32;
}
template <>
inline const KernelTable<double>& main_table<double>(const KernelSet& ks) {
    return ks.f64;
}
template <typename T>
const KernelTable<T>& skinny_table(const KernelSet& ks);
template <>
inline const KernelTable<float>& skinny_table<float>(const KernelSet& ks) {
    return ks.f32_skinny;
}
template <>
inline const KernelTable<double>& skinny_table<double>(const KernelSet& ks) {
    return ks.f64_skinny;
}

// One product as the small kernels see it: C row-major (a column-major C is computed as
// C^T = B^T A^T, `transposed` then says so) and B's rows contiguous.
template <typename T>
struct SmallProduct {
    View<const T> a, b;
    View<T> c;
    bool transposed;
};

// Whether KernelTable::small takes this product (m, n, k >= 1) on kernel set ks, and how: it
// must be within tuning.small_max_work multiply-adds with B inside L2; see docs/DESIGN.md,
// "Small products".
template <typename T>
bool small_product(const KernelSet& ks, View<const T> a, View<const T> b, View<T> c, SmallProduct<T>& out);

extern template bool small_product<float>(const KernelSet&, View<const float>, View<const float>, View<float>,
                                          SmallProduct<float>&);
extern template bool small_product<double>(const KernelSet&, View<const double>, View<const double>, View<double>,
                                           SmallProduct<double>&);

// Zero-padded or masked-off lanes compute x * 0, which raises FE_INVALID for x = inf although
// the true product raises nothing. An invalid operation of the true product leaves a NaN in
// C, so a FE_INVALID raised during the product with no NaN in C came from padding: clear it.
// (Padding raises no other flag: x * 0 with x finite is an exact 0.) Flags are per thread;
// only the calling thread's reach the caller.
class PaddingFlags {
   public:
    PaddingFlags() : invalid_before_(std::fetestexcept(FE_INVALID) != 0) {}
    // After the product: has_nan() says whether C holds a NaN (called only when needed).
    template <typename F>
    void settle(F has_nan) const {
        if (!invalid_before_ && std::fetestexcept(FE_INVALID) && !has_nan()) std::feclearexcept(FE_INVALID);
    }

   private:
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
