// Public entry of the C++ core: C = act(alpha * A @ B + beta * C + bias) on strided views.
// No Python here; the bindings and the C++ test driver both call this.
#pragma once

#include "epilogue.hpp"
#include "view.hpp"

namespace fastgemm {

// C (m x n) = act(alpha * A (m x k) @ B (k x n) + beta * C + bias), bias and act from `ep`
// (bias: n values, one per column of C, not overlapping C).
// beta == 0: C is never read. alpha == 0 or k == 0: A and B are never read.
// Throws std::invalid_argument on mismatched shapes or a C whose elements overlap each other
// (as BLAS refuses ldc < m), std::overflow_error when the sizes cannot be indexed with 64-bit
// integers. Results do not depend on the thread count. Floating-point exception flags of the
// calling thread: only those the true product raises (zero padding of the tiles raises none).
template <typename T>
void gemm(T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const Epilogue<T>& ep = {});

extern template void gemm<float>(float, View<const float>, View<const float>, float, View<float>,
                                 const Epilogue<float>&);
extern template void gemm<double>(double, View<const double>, View<const double>, double, View<double>,
                                  const Epilogue<double>&);

// One vector . vector product with operands longer than this many bytes runs faster in a BLAS
// dot than in gemm's dot form (written for many outputs at once): 0.64x-0.89x of OpenBLAS's from
// 32 KiB per operand, 1.08x-1.29x at 8-16 KiB (Zen 3, 1 thread). NumPy's entries under the
// switch hand such products back to NumPy; docs/DESIGN.md, "np.dot in C".
constexpr int64_t kVectorDotMaxBytes = 16384;
// Whether a vector . vector product of k elements of elem_bytes each is such a product.
constexpr bool long_vector_dot(int64_t k, int64_t elem_bytes) { return k * elem_bytes > kVectorDotMaxBytes; }

}  // namespace fastgemm
