// One call for a stack of products C[i] = alpha * A[i] @ B[i] + beta * C[i], as NumPy's
// matmul hands them over: the same matrix shape for every i, any (broadcast) batch layout.
#pragma once

#include <algorithm>
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

// True when no element of C belongs to two (item, row, column) triples: the matrix does not
// overlap itself and, taking the axes from the smallest stride up, each one steps past
// everything the matrix and the axes below it cover. Sufficient, not necessary (an
// interleaved stack is reported as overlapping). Throws std::overflow_error.
template <typename T>
bool c_disjoint(const View<T>& c, std::vector<BatchAxis> axes) {
    if (overlaps_itself(c)) return false;
    axes.erase(std::remove_if(axes.begin(), axes.end(), [](const BatchAxis& ax) { return ax.size <= 1; }), axes.end());
    std::sort(axes.begin(), axes.end(), [](const BatchAxis& x, const BatchAxis& y) { return abs64(x.c) < abs64(y.c); });
    int64_t covered = extent(c);
    for (const BatchAxis& ax : axes) {
        if (abs64(ax.c) <= covered) return false;
        covered = checked_add(covered, checked_mul(ax.size - 1, abs64(ax.c)));
    }
    return true;
}

// The views describe item 0 of the stack; item (i0, i1, ...) starts at
// data + sum(i_d * stride_d) for each operand. Many small products are spread over the
// threads by batch (each one single-threaded, so the result is bitwise the same as one at
// a time); a batch of one, or products large enough to use every thread, run one after
// another on the threaded path. When the C items might overlap each other they run in order.
// Throws as gemm() does (a C matrix that overlaps itself included), before anything is written.
template <typename T>
void gemm_batched(T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const std::vector<BatchAxis>& batch);

extern template void gemm_batched<float>(float, View<const float>, View<const float>, float, View<float>,
                                         const std::vector<BatchAxis>&);
extern template void gemm_batched<double>(double, View<const double>, View<const double>, double, View<double>,
                                          const std::vector<BatchAxis>&);

}  // namespace fastgemm
