// Public entry of the C++ core: C = alpha * A @ B + beta * C on strided views.
// No Python here; the bindings and the C++ test driver both call this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fastgemm {

// A matrix view with signed element strides (a transpose is just swapped strides,
// a reversed axis a negative stride, a broadcast axis a zero stride).
template <typename T>
struct View {
    T* data;
    int64_t rows;
    int64_t cols;
    int64_t rs;  // elements between rows
    int64_t cs;  // elements between columns
};

// C (m x n) = alpha * A (m x k) @ B (k x n) + beta * C.
// beta == 0: C is never read. alpha == 0 or k == 0: A and B are never read.
// Throws std::invalid_argument on mismatched shapes, std::overflow_error when the
// sizes cannot be indexed with 64-bit integers. Results do not depend on the thread count.
template <typename T>
void gemm(T alpha, View<const T> a, View<const T> b, T beta, View<T> c);

extern template void gemm<float>(float, View<const float>, View<const float>, float, View<float>);
extern template void gemm<double>(double, View<const double>, View<const double>, double, View<double>);

}  // namespace fastgemm
