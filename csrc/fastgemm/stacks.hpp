// The loop over a stack of products that gemm_batched and gemm_lowp_batched share: items in
// runs along the innermost batch axis, on the calling thread or spread over threads by batch,
// and the floating-point flag rule for stacked runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "batched.hpp"
#include "paths.hpp"
#include "threading.hpp"

namespace fastgemm {

// The checks every stack entry makes before anything is written, and its stack: shapes and
// index ranges (check_product, read_stack); false when there is nothing to compute (an empty
// batch axis or empty C items). Throws for a C matrix that overlaps itself.
template <typename A, typename B, typename C>
bool read_nonempty_stack(const A& a, const B& b, const C& c, const std::vector<BatchAxis>& batch, Stack& st) {
    check_product(a, b, c, "batched gemm");
    st = read_stack(a, b, c, batch);
    if (st.count == 0 || c.rows == 0 || c.cols == 0) return false;
    // After the empty cases: NumPy gives an empty array zero strides.
    if (overlaps_itself(c)) throw std::invalid_argument("batched gemm: C's elements overlap each other");
    return true;
}

// The axis a stack's runs go along: its innermost batch axis, or one axis of one item when it has
// none.
inline BatchAxis innermost(const Stack& st) { return st.axes.empty() ? BatchAxis{1, 0, 0, 0} : st.axes.back(); }

// Items [lo, hi) of a stack in order, as runs along the innermost axis: run(len, oa, ob, oc)
// for `len` items starting at those element offsets, each next item one step of axes.back()
// further. The batch index is decomposed once per range and then stepped like an odometer: a
// division per axis per item showed in stacks of tiny products (see docs/DESIGN.md, "Small
// products"). axes: non-empty.
template <typename F>
void for_runs(const std::vector<BatchAxis>& axes, int64_t lo, int64_t hi, F&& run) {
    const BatchAxis& in = axes.back();
    std::vector<int64_t> idx(axes.size());
    int64_t oa = 0, ob = 0, oc = 0;
    for (size_t d = axes.size(), i = size_t(lo); d-- > 0;) {
        idx[d] = int64_t(i % size_t(axes[d].size));
        i /= size_t(axes[d].size);
        oa += idx[d] * axes[d].a;
        ob += idx[d] * axes[d].b;
        oc += idx[d] * axes[d].c;
    }
    for (int64_t i = lo; i < hi;) {
        const int64_t len = std::min(hi - i, in.size - idx.back());
        run(len, oa, ob, oc);
        i += len;
        oa += len * in.a;
        ob += len * in.b;
        oc += len * in.c;
        idx.back() += len;
        for (size_t d = axes.size(); d-- > 0 && idx[d] == axes[d].size;) {
            oa -= axes[d].size * axes[d].a;
            ob -= axes[d].size * axes[d].b;
            oc -= axes[d].size * axes[d].c;
            idx[d] = 0;
            if (d > 0) {
                ++idx[d - 1];
                oa += axes[d - 1].a;
                ob += axes[d - 1].b;
                oc += axes[d - 1].c;
            }
        }
    }
}

// Whether a stack's items come from memory, so that the small kernels' prefetch of each next
// item pays (StackRun::next_ahead): rows_from_memory's rule for its A, B and C (an operand
// broadcast over every batch axis once). Within a quarter of L3 the prefetches cost float64
// 200 x (41 x 33 x 20) 5-25% of its time; past it they gained (800 x (41 x 33 x 20) 1.2x,
// 1000 x 64^3 1.5x).
inline bool stack_from_memory(const Stack& st, int64_t m, int64_t n, int64_t k, int64_t elem_bytes) {
    auto bytes = [&](int64_t BatchAxis::* stride, int64_t elems) {
        const bool broadcast =
            std::all_of(st.axes.begin(), st.axes.end(), [&](const BatchAxis& ax) { return ax.*stride == 0; });
        return double(broadcast ? 1 : st.count) * double(elems) * double(elem_bytes);
    };
    return rows_from_memory(bytes(&BatchAxis::a, m * k) + bytes(&BatchAxis::b, k * n) + bytes(&BatchAxis::c, m * n));
}

// `len` items from offsets (oa, ob) of A and B along axis `in`, as an oriented product's
// small_stack sees them: C^T = B^T A^T (transposed) swaps which operand each batch stride and
// offset steps.
struct OrientedRun {
    StackRun run;
    int64_t oa, ob;  // offsets of the oriented A and B
};
inline OrientedRun orient_run(bool transposed, int64_t len, const BatchAxis& in, int64_t oa, int64_t ob) {
    if (transposed) return {{len, in.b, in.a, in.c}, ob, oa};
    return {{len, in.a, in.b, in.c}, oa, ob};
}

// Every item of a stack whose C (item 0's view) may be written: stacked, run(len, oa, ob, oc)
// per run (one small_stack call; the flag rule is kept here for the whole stack); otherwise
// item(oa, ob, oc) per item (a gemm call, which keeps it itself). One product per thread at a
// time beats one threaded product at a time once the batch gives more threads work than a
// single product (m x n x k, per_item threads) could use and C's items are disjoint; then the
// items go out in small dynamic chunks, so on a busy machine a descheduled thread's share goes to
// the others. The result is the same on any thread count. Throws as gemm_batched does.
template <typename T, typename Run, typename Item>
void run_stack(View<T> c, const Stack& st, int64_t m, int64_t n, int64_t k, int per_item, bool stacked, Run run,
               Item item) {
    std::vector<BatchAxis> axes = st.axes;
    if (axes.empty()) axes.push_back(innermost(st));
    const int64_t count = st.count;
    const BatchAxis in = axes.back();
    auto run_range = [&](int64_t lo, int64_t hi) {
        for_runs(axes, lo, hi, [&](int64_t len, int64_t oa, int64_t ob, int64_t oc) {
            if (stacked) return run(len, oa, ob, oc);
            for (int64_t i = 0; i < len; ++i, oa += in.a, ob += in.b, oc += in.c) item(oa, ob, oc);
        });
    };
    const PaddingFlags flags;
    auto settle = [&] {
        if (!stacked) return;
        flags.settle([&] {
            bool nan = false;
            for_runs(axes, 0, count, [&](int64_t len, int64_t, int64_t, int64_t oc) {
                for (int64_t i = 0; i < len && !nan; ++i)
                    nan = has_nan(View<T>{c.data + oc + i * in.c, c.rows, c.cols, c.rs, c.cs});
            });
            return nan;
        });
    };
    const int by_batch = int(std::min<int64_t>(threads_for(checked_mul(m, count), n, k), count));
    if (count == 1 || by_batch <= per_item || !c_disjoint(c, axes)) {
        run_range(0, count);
        settle();
        return;
    }
    const int64_t chunk = std::max<int64_t>(1, count / (int64_t(by_batch) * 8));
    dynamic_chunks(by_batch, ceil_div(count, chunk),
                   [&](int64_t ch) { run_range(ch * chunk, std::min(count, (ch + 1) * chunk)); });
    settle();
}

}  // namespace fastgemm
