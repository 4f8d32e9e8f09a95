// One call for a stack of products C[i] = alpha * A[i] @ B[i] + beta * C[i], as NumPy's
// matmul hands them over: the same matrix shape for every i, any (broadcast) batch layout.
#pragma once

#include <cstdint>
#include <vector>

#include "gemm.hpp"

namespace fastgemm {

// One batch axis: its length and the element strides that step A, B and C along it.
// A zero stride broadcasts that operand over the axis.
struct BatchAxis {
    int64_t size;
    int64_t a, b, c;
};

// The views describe item 0 of the stack; item (i0, i1, ...) starts at
// data + sum(i_d * stride_d) for each operand. Many small products are spread over the
// threads by batch (each one single-threaded, so the result is bitwise the same as one at
// a time); a batch of one, or products large enough to use every thread, run one after
// another on the threaded path. When the C items might overlap in memory they run in order.
// Throws as gemm() does, before anything is written.
template <typename T>
void gemm_batched(T alpha, View<const T> a, View<const T> b, T beta, View<T> c,
                  const std::vector<BatchAxis>& batch);

extern template void gemm_batched<float>(float, View<const float>, View<const float>, float, View<float>,
                                         const std::vector<BatchAxis>&);
extern template void gemm_batched<double>(double, View<const double>, View<const double>, double,
                                          View<double>, const std::vector<BatchAxis>&);

}  // namespace fastgemm
