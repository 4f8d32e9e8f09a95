#include "batched.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "dispatch.hpp"
#include "paths.hpp"
#include "threading.hpp"

namespace fastgemm {

template <typename T>
void gemm_batched(T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const std::vector<BatchAxis>& batch) {
    check_product(a, b, c, "batched gemm");

    Stack st = read_stack(a, b, c, batch);
    const int64_t count = st.count;
    if (count == 0) return;
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    if (m == 0 || n == 0) return;
    // After the empty cases: NumPy gives an empty array zero strides.
    if (overlaps_itself(c)) throw std::invalid_argument("batched gemm: C's elements overlap each other");
    std::vector<BatchAxis>& axes = st.axes;
    if (axes.empty()) axes.push_back({1, 0, 0, 0});
    const BatchAxis& in = axes.back();

    // Items [lo, hi) in order, as runs along the innermost axis: run(len, oa, ob, oc) for items
    // starting at those offsets. The batch index is decomposed once per range and then stepped
    // like an odometer: a division per axis per item showed in stacks of tiny products.
    auto for_runs = [&](int64_t lo, int64_t hi, auto&& run) {
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
    };

    const int per_item = threads_for(m, n, k);
    // Small products go to KernelTable::small_stack a run at a time: kernel, shape and checks
    // are decided once for the stack, not once per item.
    const KernelSet& ks = active_kernels();
    SmallProduct<T> sp;
    const bool stacked = alpha != T(0) && k > 0 && per_item == 1 && small_product(ks, a, b, c, sp);
    auto run_range = [&](int64_t lo, int64_t hi) {
        if (stacked) {
            const KernelTable<T>& table = main_table<T>(ks);
            for_runs(lo, hi, [&](int64_t len, int64_t oa, int64_t ob, int64_t oc) {
                // C^T = B^T A^T swaps which operand each batch stride steps.
                const StackRun run = sp.transposed ? StackRun{len, in.b, in.a, in.c} : StackRun{len, in.a, in.b, in.c};
                const T* a0 = sp.transposed ? sp.a.data + ob : sp.a.data + oa;
                const T* b0 = sp.transposed ? sp.b.data + oa : sp.b.data + ob;
                table.small_stack(run, sp.c.rows, sp.c.cols, sp.a.cols, alpha, a0, sp.a.rs, sp.a.cs, b0, sp.b.rs, beta,
                                  sp.c.data + oc, sp.c.rs);
            });
            return;
        }
        for_runs(lo, hi, [&](int64_t len, int64_t oa, int64_t ob, int64_t oc) {
            for (int64_t i = 0; i < len; ++i, oa += in.a, ob += in.b, oc += in.c)
                gemm<T>(alpha, {a.data + oa, a.rows, a.cols, a.rs, a.cs}, {b.data + ob, b.rows, b.cols, b.rs, b.cs},
                        beta, {c.data + oc, c.rows, c.cols, c.rs, c.cs});
        });
    };
    // Per-item gemm calls keep the flags rule themselves; a stacked run keeps it for the stack.
    const PaddingFlags flags;
    auto settle = [&] {
        if (!stacked) return;
        flags.settle([&] {
            bool nan = false;
            for_runs(0, count, [&](int64_t len, int64_t, int64_t, int64_t oc) {
                for (int64_t i = 0; i < len && !nan; ++i)
                    nan = has_nan(View<T>{c.data + oc + i * in.c, c.rows, c.cols, c.rs, c.cs});
            });
            return nan;
        });
    };

    // One product per thread at a time beats one threaded product at a time once the batch
    // gives more threads work than a single product could use.
    const int by_batch = int(std::min<int64_t>(threads_for(checked_mul(m, count), n, k), count));
    if (count == 1 || by_batch <= per_item || !c_disjoint(c, axes)) {
        run_range(0, count);
        settle();
        return;
    }

    // Small dynamic chunks: on a busy machine a descheduled thread's share goes to the others.
    const int64_t chunk = std::max<int64_t>(1, count / (int64_t(by_batch) * 8));
    dynamic_chunks(by_batch, ceil_div(count, chunk),
                   [&](int64_t ch) { run_range(ch * chunk, std::min(count, (ch + 1) * chunk)); });
    settle();
}

template void gemm_batched<float>(float, View<const float>, View<const float>, float, View<float>,
                                  const std::vector<BatchAxis>&);
template void gemm_batched<double>(double, View<const double>, View<const double>, double, View<double>,
                                   const std::vector<BatchAxis>&);

}  // namespace fastgemm
