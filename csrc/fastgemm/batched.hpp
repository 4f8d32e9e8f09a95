// One call for a stack of products C[i] = alpha * A[i] @ B[i] + beta * C[i], as NumPy's
// matmul hands them over: the same matrix shape for every i, any (broadcast) batch layout.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
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

// The axes of a stack that select anything (length > 1), neighbours that step every operand
// evenly merged into one (a C-ordered stack is one run however many batch dimensions it has),
// with the number of items: 0 when an axis is empty. Throws std::invalid_argument for a
// negative length and std::overflow_error when an item cannot be indexed with 64-bit integers.
struct Stack {
    std::vector<BatchAxis> axes;
    int64_t count;
};
template <typename A, typename B, typename C>
Stack read_stack(const A& a, const B& b, const C& c, const std::vector<BatchAxis>& batch) {
    Stack st{{}, 1};
    int64_t reach_a = extent(a), reach_b = extent(b), reach_c = extent(c);
    for (const BatchAxis& ax : batch) {
        if (ax.size < 0) throw std::invalid_argument("batched gemm: negative batch size");
        if (ax.size == 0) return {{}, 0};
        if (ax.size == 1) continue;
        st.count = checked_mul(st.count, ax.size);
        reach_a = checked_add(reach_a, checked_mul(ax.size - 1, abs64(ax.a)));
        reach_b = checked_add(reach_b, checked_mul(ax.size - 1, abs64(ax.b)));
        reach_c = checked_add(reach_c, checked_mul(ax.size - 1, abs64(ax.c)));
        st.axes.push_back(ax);
    }
    for (size_t d = st.axes.size(); d-- > 1;) {
        BatchAxis &outer = st.axes[d - 1], &inner = st.axes[d];
        if (outer.a == inner.a * inner.size && outer.b == inner.b * inner.size && outer.c == inner.c * inner.size) {
            inner.size *= outer.size;
            st.axes.erase(st.axes.begin() + std::ptrdiff_t(d - 1));
        }
    }
    return st;
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
