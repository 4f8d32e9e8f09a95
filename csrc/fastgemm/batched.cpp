#include "batched.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "threading.hpp"

namespace fastgemm {

template <typename T>
void gemm_batched(T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const std::vector<BatchAxis>& batch) {
    check_product(a, b, c, "batched gemm");

    // Axes of length 1 select nothing; an empty axis means there is nothing to do.
    std::vector<BatchAxis> axes;
    int64_t count = 1;
    int64_t reach_a = extent(a), reach_b = extent(b), reach_c = extent(c);
    for (const BatchAxis& ax : batch) {
        if (ax.size < 0) throw std::invalid_argument("batched gemm: negative batch size");
        if (ax.size == 0) return;
        if (ax.size == 1) continue;
        count = checked_mul(count, ax.size);
        reach_a = checked_add(reach_a, checked_mul(ax.size - 1, abs64(ax.a)));
        reach_b = checked_add(reach_b, checked_mul(ax.size - 1, abs64(ax.b)));
        reach_c = checked_add(reach_c, checked_mul(ax.size - 1, abs64(ax.c)));
        axes.push_back(ax);
    }
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    if (m == 0 || n == 0) return;
    // After the empty cases: NumPy gives an empty array zero strides.
    if (overlaps_itself(c)) throw std::invalid_argument("batched gemm: C's elements overlap each other");

    // Items [lo, hi) in order. The batch index is decomposed once per range and then stepped
    // like an odometer: a division per axis per item showed in stacks of tiny products.
    auto run_range = [&](int64_t lo, int64_t hi) {
        std::vector<int64_t> idx(axes.size());
        int64_t oa = 0, ob = 0, oc = 0;
        for (size_t d = axes.size(), i = size_t(lo); d-- > 0;) {
            idx[d] = int64_t(i % size_t(axes[d].size));
            i /= size_t(axes[d].size);
            oa += idx[d] * axes[d].a;
            ob += idx[d] * axes[d].b;
            oc += idx[d] * axes[d].c;
        }
        for (int64_t i = lo; i < hi; ++i) {
            gemm<T>(alpha, {a.data + oa, a.rows, a.cols, a.rs, a.cs}, {b.data + ob, b.rows, b.cols, b.rs, b.cs}, beta,
                    {c.data + oc, c.rows, c.cols, c.rs, c.cs});
            for (size_t d = axes.size(); d-- > 0;) {
                oa += axes[d].a;
                ob += axes[d].b;
                oc += axes[d].c;
                if (++idx[d] < axes[d].size) break;
                oa -= axes[d].size * axes[d].a;
                ob -= axes[d].size * axes[d].b;
                oc -= axes[d].size * axes[d].c;
                idx[d] = 0;
            }
        }
    };

    // One product per thread at a time beats one threaded product at a time once the batch
    // gives more threads work than a single product could use.
    const int per_item = threads_for(m, n, k);
    const int by_batch = int(std::min<int64_t>(threads_for(checked_mul(m, count), n, k), count));
    if (count == 1 || by_batch <= per_item || !c_disjoint(c, axes)) {
        run_range(0, count);
        return;
    }

    // Small dynamic chunks: on a busy machine a descheduled thread's share goes to the others.
    const int64_t chunk = std::max<int64_t>(1, count / (int64_t(by_batch) * 8));
    dynamic_chunks(by_batch, ceil_div(count, chunk),
                   [&](int64_t ch) { run_range(ch * chunk, std::min(count, (ch + 1) * chunk)); });
}

template void gemm_batched<float>(float, View<const float>, View<const float>, float, View<float>,
                                  const std::vector<BatchAxis>&);
template void gemm_batched<double>(double, View<const double>, View<const double>, double, View<double>,
                                   const std::vector<BatchAxis>&);

}  // namespace fastgemm
