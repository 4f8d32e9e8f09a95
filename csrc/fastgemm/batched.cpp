#include "batched.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "extent.hpp"
#include "threading.hpp"

namespace fastgemm {
namespace {

// A sufficient test that no two C items share an element: taking the axes from the smallest
// stride up, each one steps past everything the matrix and the axes below it cover.
template <typename T>
bool c_items_disjoint(const View<T>& c, std::vector<BatchAxis> axes) {
    std::sort(axes.begin(), axes.end(),
              [](const BatchAxis& x, const BatchAxis& y) { return std::llabs(x.c) < std::llabs(y.c); });
    int64_t covered = extent(c);
    for (const BatchAxis& ax : axes) {
        if (std::llabs(ax.c) <= covered) return false;
        covered = checked_add(covered, checked_mul(ax.size - 1, std::llabs(ax.c)));
    }
    return true;
}

}  // namespace

template <typename T>
void gemm_batched(T alpha, View<const T> a, View<const T> b, T beta, View<T> c,
                  const std::vector<BatchAxis>& batch) {
    if (a.rows != c.rows || b.cols != c.cols || a.cols != b.rows)
        throw std::invalid_argument("batched gemm: A " + shape_str(a.rows, a.cols) + " @ B " + shape_str(b.rows, b.cols) +
                                    " does not fit C " + shape_str(c.rows, c.cols));
    if (a.rows < 0 || a.cols < 0 || b.cols < 0) throw std::invalid_argument("batched gemm: negative matrix dimension");

    // Axes of length 1 select nothing; an empty axis means there is nothing to do.
    std::vector<BatchAxis> axes;
    int64_t count = 1;
    int64_t reach_a = extent(a), reach_b = extent(b), reach_c = extent(c);
    for (const BatchAxis& ax : batch) {
        if (ax.size < 0) throw std::invalid_argument("batched gemm: negative batch size");
        if (ax.size == 0) return;
        if (ax.size == 1) continue;
        count = checked_mul(count, ax.size);
        reach_a = checked_add(reach_a, checked_mul(ax.size - 1, std::llabs(ax.a)));
        reach_b = checked_add(reach_b, checked_mul(ax.size - 1, std::llabs(ax.b)));
        reach_c = checked_add(reach_c, checked_mul(ax.size - 1, std::llabs(ax.c)));
        axes.push_back(ax);
    }
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    if (m == 0 || n == 0) return;

    // Items [lo, hi) in order. The batch index is decomposed once per range and then stepped
    // like an odometer, not divided out per item (a 64-bit division per axis per item: a stack
    // of 1000 4x4 products went 54 -> 51 us without them).
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
            gemm<T>(alpha, {a.data + oa, a.rows, a.cols, a.rs, a.cs}, {b.data + ob, b.rows, b.cols, b.rs, b.cs},
                    beta, {c.data + oc, c.rows, c.cols, c.rs, c.cs});
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
    if (count == 1 || by_batch <= per_item || !c_items_disjoint(c, axes)) {
        run_range(0, count);
        return;
    }

    // An exception must not leave an OpenMP region: keep the first, stop the rest, rethrow.
    // Small dynamic chunks: on a busy machine a descheduled thread's share goes to the others.
    std::exception_ptr error;
    std::atomic<bool> failed{false};
    const int64_t chunk = std::max<int64_t>(1, count / (int64_t(by_batch) * 8));
    const int64_t chunks = (count + chunk - 1) / chunk;
#pragma omp parallel for num_threads(by_batch) schedule(dynamic, 1)
    for (int64_t ch = 0; ch < chunks; ++ch) {
        if (failed.load(std::memory_order_relaxed)) continue;
        try {
            run_range(ch * chunk, std::min(count, (ch + 1) * chunk));
        } catch (...) {
#pragma omp critical(fastgemm_batched_error)
            if (!error) error = std::current_exception();
            failed.store(true, std::memory_order_relaxed);
        }
    }
    if (error) std::rethrow_exception(error);
}

template void gemm_batched<float>(float, View<const float>, View<const float>, float, View<float>,
                                  const std::vector<BatchAxis>&);
template void gemm_batched<double>(double, View<const double>, View<const double>, double, View<double>,
                                   const std::vector<BatchAxis>&);

}  // namespace fastgemm
