#include "gemm_lowp.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "blocking.hpp"
#include "dispatch.hpp"
#include "driver.hpp"
#include "paths.hpp"
#include "scratch.hpp"
#include "threading.hpp"

namespace fastgemm {
namespace {

template <typename S>
const LowpTable<S>& lowp_table(const KernelSet& ks);
template <>
const LowpTable<bfloat16_t>& lowp_table<bfloat16_t>(const KernelSet& ks) {
    return ks.lowp.bf16;
}
template <>
const LowpTable<float16_t>& lowp_table<float16_t>(const KernelSet& ks) {
    return ks.lowp.f16;
}

// One row or one column of C: the 2-byte matrix streamed once, widened as it is read (half
// the bytes of a float32 matrix-vector product). The same four forms as gemm.cpp's try_gemv.
template <typename S>
bool try_gemv(const LowpTable<S>& lp, float alpha, View<const S> a, View<const S> b, float beta, View<float> c) {
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    const int threads = threads_for(m, n, k);
    const int64_t grain = 16;  // outputs per thread in whole 64-byte lines of float32
    auto rows_form = [&](int64_t len, const S* x, int64_t incx, const S* mat, int64_t ldm, float* y) {
        float* chunks = static_cast<float*>(thread_gemv_chunks(threads));
        parallel_ranges(threads, len, grain, [&](int tid, int64_t lo, int64_t hi) {
            lp.gemv_rows(hi - lo, k, alpha, x, incx, mat + lo, ldm, beta, y + lo,
                         chunks + tid * (kGemvChunkBytes / int64_t(sizeof(float))));
        });
    };
    auto dots_form = [&](int64_t len, const S* x, const S* mat, int64_t ldm, float* y, int64_t incy) {
        parallel_ranges(threads, len, grain, [&](int, int64_t lo, int64_t hi) {
            lp.gemv_dots(hi - lo, k, alpha, x, mat + lo * ldm, ldm, beta, y + lo * incy, incy);
        });
    };
    if (m == 1 && b.cs == 1 && (c.cs == 1 || n == 1)) {
        rows_form(n, a.data, a.cs, b.data, b.rs, c.data);
    } else if (m == 1 && b.rs == 1 && (a.cs == 1 || k == 1)) {
        dots_form(n, a.data, b.data, b.cs, c.data, c.cs);
    } else if (n == 1 && a.rs == 1 && (c.rs == 1 || m == 1)) {
        rows_form(m, b.data, b.rs, a.data, a.cs, c.data);
    } else if (n == 1 && a.cs == 1 && (b.rs == 1 || k == 1)) {
        dots_form(m, b.data, a.data, a.rs, c.data, c.rs);
    } else {
        return false;
    }
    return true;
}

// m, n, k >= 1, alpha != 0. Matrix-vector shapes stream the matrix; everything else takes the
// packed path on the float32 main tile (small products too: no unpacked small kernel for
// 2-byte inputs yet).
template <typename S>
void compute(float alpha, View<const S> a, View<const S> b, float beta, View<float> c) {
    const KernelSet& ks = active_kernels();  // read once: set_kernel must not mix two sets
    const LowpTable<S>& lp = lowp_table<S>(ks);
    if ((c.rows == 1 || c.cols == 1) && try_gemv(lp, alpha, a, b, beta, c)) return;
    if (c.cols == 1) c.cs = 1;
    if (c.rows == 1) c.rs = 1;
    if (c.cs != 1 && c.rs == 1) {  // column-major C: C^T = B^T A^T is row-major
        std::swap(c.rows, c.cols);
        std::swap(c.rs, c.cs);
        const View<const S> at{a.data, a.cols, a.rows, a.cs, a.rs};
        a = View<const S>{b.data, b.cols, b.rows, b.cs, b.rs};
        b = at;
    }
    const KernelTable<float>& uk = ks.f32;
    run_blocked_packed<S, float>(uk, Packers<S, float>{lp.pack_a, lp.pack_b}, blocking_for(uk.mr, uk.nr, 4),
                                 threads_for(c.rows, c.cols, a.cols), alpha, a, b, beta, c);
}

}  // namespace

template <typename S>
void gemm_lowp(float alpha, View<const S> a, View<const S> b, float beta, View<float> c) {
    check_single(a, b, c);
    if (c.rows == 0 || c.cols == 0) return;
    if (alpha == 0.0f || a.cols == 0) {
        scale(beta, c);
        return;
    }
    const PaddingFlags flags;
    compute<S>(alpha, a, b, beta, c);
    flags.settle([&] { return has_nan(c); });
}

template <typename S>
void gemm_lowp_batched(float alpha, View<const S> a, View<const S> b, float beta, View<float> c,
                       const std::vector<BatchAxis>& batch) {
    check_product(a, b, c, "batched gemm");
    const Stack st = read_stack(a, b, c, batch);
    const std::vector<BatchAxis>& axes = st.axes;
    const int64_t count = st.count;
    if (count == 0) return;
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    if (m == 0 || n == 0) return;
    if (overlaps_itself(c)) throw std::invalid_argument("batched gemm: C's elements overlap each other");
    auto item = [&](int64_t i) {
        int64_t oa = 0, ob = 0, oc = 0;
        for (size_t d = axes.size(); d-- > 0;) {
            const int64_t id = i % axes[d].size;
            i /= axes[d].size;
            oa += id * axes[d].a;
            ob += id * axes[d].b;
            oc += id * axes[d].c;
        }
        gemm_lowp<S>(alpha, {a.data + oa, a.rows, a.cols, a.rs, a.cs}, {b.data + ob, b.rows, b.cols, b.rs, b.cs}, beta,
                     {c.data + oc, c.rows, c.cols, c.rs, c.cs});
    };
    // As gemm_batched: items spread over threads (each single-threaded, so the same bits) when
    // the batch gives more threads work than one product could use and C items are disjoint.
    const int per_item = threads_for(m, n, k);
    const int by_batch = int(std::min<int64_t>(threads_for(checked_mul(m, count), n, k), count));
    if (count == 1 || by_batch <= per_item || !c_disjoint(c, axes)) {
        for (int64_t i = 0; i < count; ++i) item(i);
        return;
    }
    const int64_t chunk = std::max<int64_t>(1, count / (int64_t(by_batch) * 8));
    dynamic_chunks(by_batch, ceil_div(count, chunk), [&](int64_t ch) {
        for (int64_t i = ch * chunk, hi = std::min(count, (ch + 1) * chunk); i < hi; ++i) item(i);
    });
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

template void gemm_lowp<bfloat16_t>(float, View<const bfloat16_t>, View<const bfloat16_t>, float, View<float>);
template void gemm_lowp<float16_t>(float, View<const float16_t>, View<const float16_t>, float, View<float>);
template void gemm_lowp_batched<bfloat16_t>(float, View<const bfloat16_t>, View<const bfloat16_t>, float, View<float>,
                                            const std::vector<BatchAxis>&);
template void gemm_lowp_batched<float16_t>(float, View<const float16_t>, View<const float16_t>, float, View<float>,
                                           const std::vector<BatchAxis>&);

}  // namespace fastgemm
