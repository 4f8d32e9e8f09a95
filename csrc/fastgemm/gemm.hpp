// Public entry of the C++ core: C = alpha * A @ B + beta * C on strided views.
// No Python here; the bindings and the C++ test driver both call this.
#pragma once

#include "view.hpp"

namespace fastgemm {

// C (m x n) = alpha * A (m x k) @ B (k x n) + beta * C.
// beta == 0: C is never read. alpha == 0 or k == 0: A and B are never read.
// Throws std::invalid_argument on mismatched shapes or a C whose elements overlap each other
// (as BLAS refuses ldc < m), std::overflow_error when the sizes cannot be indexed with 64-bit
// integers. Results do not depend on the thread count. Floating-point exception flags of the
// calling thread: only those the true product raises (zero padding of the tiles raises none).
template <typename T>
void gemm(T alpha, View<const T> a, View<const T> b, T beta, View<T> c);

extern template void gemm<float>(float, View<const float>, View<const float>, float, View<float>);
extern template void gemm<double>(double, View<const double>, View<const double>, double, View<double>);

}  // namespace fastgemm
