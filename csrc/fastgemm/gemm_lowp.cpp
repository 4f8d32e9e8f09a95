#include "gemm_lowp.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "blocking.hpp"
#include "caches.hpp"
#include "dispatch.hpp"
#include "driver.hpp"
#include "paths.hpp"
#include "scratch.hpp"
#include "stacks.hpp"
#include "threading.hpp"

namespace fastgemm {
namespace {

template <typename S>
const LowpTable<S>& lowp_table(const KernelSet& ks) {
    return pick<LowpTable<S>>(ks.lowp.bf16, ks.lowp.f16);
}

// Floats of widened operands a small stack gets at a time: with its C items they stay in L1.
constexpr int64_t kWidenGroupFloats = 4096;

// Above this many multiply-adds a bfloat16 product on a set with PairKernels runs on them
// instead of the widened small path. Not measured (no AVX512_BF16 machine yet): the packed float32
// path ran 0.8x the small one at 64^3 on Zen 4, and the pairs double the multiply-adds per
// instruction.
constexpr double kPairsMinWork = 64.0 * 64 * 64;

// The pair kernels an oriented product runs on, or null: bfloat16 on a set that has them, above
// kPairsMinWork.
template <typename S>
const PairKernels* pairs_for(const KernelSet& ks, const Oriented<S, float>& o) {
    if constexpr (!std::is_same_v<S, bfloat16_t>) return nullptr;
    const double work = double(o.c.rows) * double(o.c.cols) * double(o.a.cols);
    return work > kPairsMinWork ? ks.lowp.bf16_pairs : nullptr;
}

// Whether an oriented product (m, n, k >= 1) takes the small path: the float32 rule
// (small_shape) on its widened operands, C's rows contiguous, and widened A within L2 too
// (its scratch copy is made whole), and not one for pair kernels.
template <typename S>
bool small_widened_fits(const KernelSet& ks, const Oriented<S, float>& o) {
    const int64_t m = o.c.rows, n = o.c.cols, k = o.a.cols;
    return o.c.cs == 1 && !pairs_for(ks, o) && small_shape(ks, m, n, k, sizeof(float)) &&
           double(m) * double(k) * double(sizeof(float)) <= double(caches().l2.size);
}

// A run of run.count small products (item i's operands run.sa, run.sb, run.sc elements after
// item 0's, 0 for a broadcast operand) on the float32 small kernels: A and B widened into the
// calling thread's scratch (row-major float32, a group of items at a time, a broadcast operand
// once), then small_stack on the group, or run_small on `threads` for a single product. B is
// widened once per item instead of once per 4-row group; see docs/DESIGN.md, "Low-precision
// products". The last `tail` columns go to the dot kernel as float32 sends them
// (float32_small_tail), B's columns widened along k.
template <typename S>
void small_widened(const KernelSet& ks, const LowpTable<S>& lp, int threads, float alpha, const Oriented<S, float>& o,
                   float beta, const StackRun& run, int64_t tail) {
    const int64_t m = o.c.rows, n = o.c.cols, k = o.a.cols, j0 = n - tail;
    const int64_t na = m * k, nb = k * n;  // floats of one widened A, B
    const int64_t per = (run.sa ? na : 0) + (run.sb ? nb : 0);
    const int64_t group = per == 0 ? run.count : std::clamp<int64_t>(kWidenGroupFloats / per, 1, run.count);
    const int64_t la = round_up(run.sa ? group * na : na, 16), lb = round_up(run.sb ? group * nb : nb, 16);
    float* wa = static_cast<float*>(thread_scratch(size_t(la + lb + tail * k) * sizeof(float)));
    float* wb = wa + la;
    float* wbt = wb + lb;  // the tail's columns of B along k
    // Items i0 .. i0 + g - 1 of operand v (item step `step`) into dst, one after another: in one
    // call when they are one contiguous run (a C-ordered stack), which the vector loop then
    // widens whole instead of row by row.
    auto widen = [&](const View<const S>& v, int64_t step, int64_t i0, int64_t g, float* dst) {
        const int64_t size = v.rows * v.cols;
        if (v.cs == 1 && (v.rs == v.cols || v.rows == 1) && (step == size || g == 1))
            return lp.widen(1, g * size, v.data + i0 * step, 0, 1, dst);
        for (int64_t i = 0; i < g; ++i) lp.widen(v.rows, v.cols, v.data + (i0 + i) * step, v.rs, v.cs, dst + i * size);
    };
    if (!run.sa) widen(o.a, 0, 0, 1, wa);
    if (!run.sb) widen(o.b, 0, 0, 1, wb);
    for (int64_t i0 = 0; i0 < run.count; i0 += group) {
        const int64_t g = std::min(group, run.count - i0);
        if (run.sa) widen(o.a, run.sa, i0, g, wa);
        if (run.sb) widen(o.b, run.sb, i0, g, wb);
        float* c0 = o.c.data + i0 * run.sc;
        if (j0 > 0 && threads > 1)
            run_small(ks.f32, threads, alpha,
                      SmallProduct<float>{{wa, m, k, k, 1}, {wb, k, j0, n, 1}, {c0, m, j0, o.c.rs, 1}, false}, beta);
        else if (j0 > 0)  // j0 == 0: all of C is the tail's dots
            ks.f32.small_stack(StackRun{g, run.sa ? na : 0, run.sb ? nb : 0, run.sc}, m, j0, k, alpha, wa, k, 1, wb, n,
                               beta, c0, o.c.rs, 0);
        for (int64_t i = 0; i < g && tail > 0; ++i) {
            if (run.sb || i0 + i == 0)
                lp.widen(tail, k, o.b.data + (i0 + i) * run.sb + j0 * o.b.cs, o.b.cs, o.b.rs, wbt);
            run_dots(ks.f32, tail, m, k, alpha, wbt, k, wa + (run.sa ? i * na : 0), k, beta, c0 + i * run.sc + j0, 1,
                     o.c.rs);
        }
    }
}

// Which dot-product form float32 gives a product laid out as this one (dots_side on float32
// views of the same shape and strides), 0 none.
template <typename S>
int float32_dots_side(const KernelSet& ks, View<const S> a, View<const S> b, View<float> c) {
    auto f32 = [](const View<const S>& v) { return View<const float>{nullptr, v.rows, v.cols, v.rs, v.cs}; };
    return dots_side<float>(ks, f32(a), f32(b), c);
}

// The columns float32 gives the dot kernel at the end of a small product laid out as this one
// (small_tail_of on float32 views of the same shape and strides), 0 none.
template <typename S>
int64_t float32_small_tail(const KernelSet& ks, View<const S> a, View<const S> b, View<float> c) {
    auto f32 = [](const View<const S>& v) { return View<const float>{nullptr, v.rows, v.cols, v.rs, v.cs}; };
    return small_tail_of<float>(ks, f32(a), f32(b), c);
}

// A small product that float32 computes as dot products (side 1: few rows, 2: few columns):
// A's rows and B's columns widened whole along k into the calling thread's scratch, where
// float32's try_dots copies the short side along k and reads the long side there in place, and
// the same dot kernel on them: float32's bits on the widened inputs, as for the small kernels.
template <typename S>
void widened_dots(const KernelSet& ks, const LowpTable<S>& lp, int side, float alpha, View<const S> a, View<const S> b,
                  float beta, View<float> c) {
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    float* wa = static_cast<float*>(thread_scratch(size_t((m + n) * k) * sizeof(float)));
    float* wbt = wa + m * k;  // B^T, n x k
    lp.widen(m, k, a.data, a.rs, a.cs, wa);
    lp.widen(n, k, b.data, b.cs, b.rs, wbt);
    run_dots_side(ks.f32, side, k, alpha, wa, k, wbt, k, beta, c);
}

// m, n, k >= 1, alpha != 0. Matrix-vector shapes and a few rows stream the 2-byte matrix (half
// the bytes of float32); small products are widened whole into scratch for the float32 small
// kernels (or its dot kernel, where float32 takes that); bfloat16 on a set with pair kernels
// runs on them; the rest takes the packed path on the float32 main tile. The epilogue runs on
// each tile (blocked paths), on each thread's outputs (matrix-vector), or on the small C once
// computed (still in cache).
template <typename S>
void compute(float alpha, View<const S> a, View<const S> b, float beta, View<float> c, const Epilogue<float>& ep) {
    const KernelSet& ks = active_kernels();  // read once: set_kernel must not mix two sets
    const LowpTable<S>& lp = lowp_table<S>(ks);
    const KernelTable<float>& uk = ks.f32;
    auto finish = [&](int64_t lo, int64_t hi, float* y, int64_t incy) {
        gemv_epilogue(uk, c.rows, ep, lo, hi, y, incy);
    };
    if ((c.rows == 1 || c.cols == 1) && try_gemv(lp, alpha, a, b, beta, c, finish)) return;
    const Oriented<S, float> o = orient(a, b, c);
    const int threads = threads_for(o.c.rows, o.c.cols, o.a.cols);
    if (small_widened_fits(ks, o)) {
        if (const int side = float32_dots_side(ks, a, b, c)) widened_dots(ks, lp, side, alpha, a, b, beta, c);
        else small_widened(ks, lp, threads, alpha, o, beta, StackRun{1, 0, 0, 0}, float32_small_tail(ks, a, b, c));
        if (ep.active()) apply_epilogue(uk, c, ep);
        return;
    }
    // C^T's tiles would need a bias per row: then the epilogue finishes C in one pass after.
    const bool after = o.transposed && ep.bias;
    const Epilogue<float> tile_ep = after ? Epilogue<float>{} : ep;
    if (few_rows_fit(ks.tuning.few_rows_max_m, o.c.rows, o.b.cs, o.c.cs)) {
        run_few_rows(lp, uk, threads, alpha, o.a, o.b, beta, o.c, tile_ep);
    } else if (const PairKernels* pk = pairs_for(ks, o)) {
        if constexpr (std::is_same_v<S, bfloat16_t>)
            run_blocked_pairs(*pk, pair_blocking(*pk), threads, alpha, o.a, o.b, beta, o.c, tile_ep);
    } else {
        run_blocked_packed<S, float>(uk, Packers<S, float>{lp.pack_a, lp.pack_b},
                                     blocking_for_rows(blocking_for(uk), o.c.rows, threads, uk.nr, 4), threads, alpha,
                                     o.a, o.b, beta, o.c, tile_ep);
    }
    if (after) apply_epilogue(uk, c, ep);
}

}  // namespace

template <typename S>
void gemm_lowp(float alpha, View<const S> a, View<const S> b, float beta, View<float> c, const Epilogue<float>& ep) {
    check_single(a, b, c);
    if (c.rows == 0 || c.cols == 0) return;
    if (alpha == 0.0f || a.cols == 0) {
        scale(active_kernels().f32, beta, c, ep);
        return;
    }
    const PaddingFlags flags;
    compute<S>(alpha, a, b, beta, c, ep);
    flags.settle([&] { return has_nan(c); });
}

template <typename S>
void gemm_lowp_batched(float alpha, View<const S> a, View<const S> b, float beta, View<float> c,
                       const std::vector<BatchAxis>& batch) {
    Stack st;
    if (!read_nonempty_stack(a, b, c, batch, st)) return;
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    const int per_item = threads_for(m, n, k);
    // Small products run a stack at a time (small_widened): widened in groups, one
    // small_stack call per group, as gemm_batched's stacks of float32 products; those float32
    // computes as dot products go item by item, as there.
    const KernelSet& ks = active_kernels();
    const Oriented<S, float> o = orient(a, b, c);
    const bool stacked =
        alpha != 0.0f && k > 0 && per_item == 1 && small_widened_fits(ks, o) && float32_dots_side(ks, a, b, c) == 0;
    const int64_t tail = stacked ? float32_small_tail(ks, a, b, c) : 0;
    const BatchAxis in = innermost(st);
    run_stack(
        c, st, m, n, k, per_item, stacked,
        [&](int64_t len, int64_t oa, int64_t ob, int64_t oc) {
            const OrientedRun r = orient_run(o.transposed, len, in, oa, ob);
            Oriented<S, float> item = o;
            item.a.data += r.oa;
            item.b.data += r.ob;
            item.c.data += oc;
            small_widened(ks, lowp_table<S>(ks), 1, alpha, item, beta, r.run, tail);
        },
        [&](int64_t oa, int64_t ob, int64_t oc) {
            gemm_lowp<S>(alpha, {a.data + oa, a.rows, a.cols, a.rs, a.cs}, {b.data + ob, b.rows, b.cols, b.rs, b.cs},
                         beta, {c.data + oc, c.rows, c.cols, c.rs, c.cs});
        });
}

Blocking pair_blocking(const PairKernels& pk) {
    const Blocking bs = blocking_for(pk.mr, pk.nr, 4, 0);
    return {bs.mc, 2 * bs.kc, bs.nc};
}

void narrow_to_f16(View<const float> src, View<float16_t> dst) {
    if (src.rows != dst.rows || src.cols != dst.cols)
        throw std::invalid_argument("narrow_to_f16: " + shape_str(src.rows, src.cols) + " into " +
                                    shape_str(dst.rows, dst.cols));
    extent(src);
    extent(dst);
    const auto narrow = active_kernels().lowp.narrow_f16;
    for (int64_t i = 0; i < src.rows; ++i) {
        const float* s = src.data + i * src.rs;
        float16_t* d = dst.data + i * dst.rs;
        if (src.cs == 1 && dst.cs == 1) {
            narrow(src.cols, s, d);
        } else {
            for (int64_t j = 0; j < src.cols; ++j) d[j * dst.cs] = to_float16(s[j * src.cs]);
        }
    }
}

template void gemm_lowp<bfloat16_t>(float, View<const bfloat16_t>, View<const bfloat16_t>, float, View<float>,
                                    const Epilogue<float>&);
template void gemm_lowp<float16_t>(float, View<const float16_t>, View<const float16_t>, float, View<float>,
                                   const Epilogue<float>&);
template void gemm_lowp_batched<bfloat16_t>(float, View<const bfloat16_t>, View<const bfloat16_t>, float, View<float>,
                                            const std::vector<BatchAxis>&);
template void gemm_lowp_batched<float16_t>(float, View<const float16_t>, View<const float16_t>, float, View<float>,
                                           const std::vector<BatchAxis>&);

}  // namespace fastgemm
