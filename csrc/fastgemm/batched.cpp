#include "batched.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "dispatch.hpp"
#include "paths.hpp"
#include "scratch.hpp"
#include "stacks.hpp"
#include "threading.hpp"

namespace fastgemm {

template <typename T>
void gemm_batched(T alpha, View<const T> a, View<const T> b, T beta, View<T> c, const std::vector<BatchAxis>& batch) {
    Stack st;
    if (!read_nonempty_stack(a, b, c, batch, st)) return;
    const int64_t m = c.rows, n = c.cols, k = a.cols;

    const int per_item = threads_for(m, n, k);
    // Small products go to KernelTable::small_stack (or its forms for B or C by columns) a run at
    // a time, products with one row or one column of C (whose vectors the small kernels would
    // fill one lane of) to the matrix-vector kernels item by item, and those gemm gives the dot
    // kernels (the short side's operand copied along k where it is not, as gemm does), or the
    // few-row kernels as C^T, to them item by item: kernel, form and checks are decided once for
    // the stack, not once per item.
    const KernelSet& ks = active_kernels();
    const KernelTable<T>& table = main_table<T>(ks);
    const bool runs = alpha != T(0) && k > 0 && per_item == 1;
    const int side = runs ? dots_side(ks, a, b, c) : 0;
    GemvForm gv;
    SmallProduct<T> sp{};  // set by small_item for the small forms, read by orient_run for all
    const bool vectors = runs && vector_product(m, n, side) && gemv_form(a, b, c, gv);
    const bool dotted = !vectors && side != 0;
    const SmallItem small = runs && !vectors && !dotted ? small_item(ks, a, b, c, beta, sp) : SmallItem::none;
    const bool stacked = vectors || dotted || small == SmallItem::in_place;
    // At most one of the two tails: A's rows along k (dots) or A stored by columns.
    const int64_t tail = small == SmallItem::in_place
                             ? std::max(small_tail_dots(table, sp), small_tail_columns(table, sp))
                         : small == SmallItem::b_columns ? small_tail_columns(table, sp)
                                                         : 0;
    const bool moved = small == SmallItem::b_columns || small == SmallItem::c_columns;
    const BatchAxis in = innermost(st);
    const bool next_ahead = stack_from_memory(st, m, n, k, sizeof(T));
    run_stack(
        c, st, m, n, k, per_item, stacked || small != SmallItem::none,
        [&](int64_t len, int64_t oa, int64_t ob, int64_t oc) {
            OrientedRun r = orient_run(sp.transposed, len, in, oa, ob);
            r.run.next_ahead = next_ahead;
            if (moved) {
                const int64_t cols = round_up(sp.c.cols, table.lanes);  // small_stack_b_cols' rows
                T* t = static_cast<T*>(thread_scratch(size_t(std::max(sp.c.rows, k) * cols) * sizeof(T)));
                if (small == SmallItem::b_columns)
                    return table.small_stack_b_cols(r.run, sp.c.rows, sp.c.cols, k, alpha, sp.a.data + r.oa, sp.a.rs,
                                                    sp.a.cs, sp.b.data + r.ob, sp.b.cs, beta, sp.c.data + oc, sp.c.rs,
                                                    t, tail);
                // C^T = B^T A^T: B^T and A^T by rows, C^T by columns.
                return table.small_stack_c_cols({len, r.run.sb, r.run.sa, r.run.sc, r.run.next_ahead}, sp.c.cols,
                                                sp.c.rows, k, alpha, sp.b.data + r.ob, sp.b.cs, sp.a.data + r.oa,
                                                sp.a.cs, sp.c.data + oc, sp.c.rs, t);
            }
            if (small == SmallItem::few_columns) {
                const bool ahead = rows_from_memory(double(st.count) * double(m) * double(k) * double(sizeof(T)));
                for (int64_t i = 0; i < len; ++i, oa += in.a, ob += in.b, oc += in.c)
                    run_few_columns(table, alpha, View<const T>{a.data + oa, m, k, a.rs, a.cs},
                                    View<const T>{b.data + ob, k, n, b.rs, b.cs}, beta,
                                    View<T>{c.data + oc, m, n, c.rs, c.cs}, ahead);
                return;
            }
            if (small == SmallItem::b_copied || small == SmallItem::narrow_columns) {
                const bool narrow = small == SmallItem::narrow_columns;
                T* t = narrow ? static_cast<T*>(thread_c_scratch(size_t(sp.c.rows * sp.c.cols) * sizeof(T))) : nullptr;
                SmallProduct<T> item = sp;
                for (int64_t i = 0; i < len; ++i) {
                    item.a.data = sp.a.data + r.oa + i * r.run.sa;
                    item.b.data = sp.b.data + r.ob + i * r.run.sb;
                    item.c.data = sp.c.data + oc + i * r.run.sc;
                    if (narrow) run_narrow_transposed(table, alpha, item, beta, 0, sp.c.rows, t);
                    else run_b_copied(table, alpha, item, beta);
                }
                return;
            }
            if (dotted) {
                return run_dots_copied(table, side, alpha, View<const T>{a.data + oa, m, k, a.rs, a.cs},
                                       View<const T>{b.data + ob, k, n, b.rs, b.cs}, beta,
                                       View<T>{c.data + oc, m, n, c.rs, c.cs}, StackRun{len, in.a, in.b, in.c}, true);
            }
            if (vectors) {
                T* chunk = gemv_chunks<T>(table, gv, 1);
                const bool ahead =
                    vectors_from_memory(double(st.count) * double(k) * double(gv.len) * double(sizeof(T)));
                for (int64_t i = 0; i < len; ++i, oa += in.a, ob += in.b, oc += in.c)
                    gemv_range(table, gv, k, alpha, gv.x_from_a ? a.data + oa : b.data + ob,
                               gv.x_from_a ? b.data + ob : a.data + oa, beta, c.data + oc, 0, gv.len, chunk, ahead);
                return;
            }
            table.small_stack(r.run, sp.c.rows, sp.c.cols, sp.a.cols, alpha, sp.a.data + r.oa, sp.a.rs, sp.a.cs,
                              sp.b.data + r.ob, sp.b.rs, beta, sp.c.data + oc, sp.c.rs, tail);
        },
        [&](int64_t oa, int64_t ob, int64_t oc) {
            gemm<T>(alpha, {a.data + oa, a.rows, a.cols, a.rs, a.cs}, {b.data + ob, b.rows, b.cols, b.rs, b.cs}, beta,
                    {c.data + oc, c.rows, c.cols, c.rs, c.cs});
        });
}

template void gemm_batched<float>(float, View<const float>, View<const float>, float, View<float>,
                                  const std::vector<BatchAxis>&);
template void gemm_batched<double>(double, View<const double>, View<const double>, double, View<double>,
                                   const std::vector<BatchAxis>&);

}  // namespace fastgemm
