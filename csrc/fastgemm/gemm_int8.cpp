#include "gemm_int8.hpp"

#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "blocking.hpp"
#include "cpu.hpp"
#include "dispatch.hpp"
#include "driver.hpp"
#include "packed.hpp"
#include "paths.hpp"
#include "scratch.hpp"
#include "threading.hpp"

namespace fastgemm {
namespace {

// An int8 product for five_loops (driver.hpp). C's elements are 4 bytes, int32 or float32: an
// int32 C, or a float32 C (scale != nullptr) whose memory holds the int32 sum of the k slices
// done so far until the last slice turns each tile into scale * sum while it is in registers.
template <typename A>
struct Int8Product {
    const Int8Table<A>& t;
    View<const A> a;
    View<const int8_t> b;
    char* c;
    int64_t rsc, csc;  // C's strides in elements
    bool accumulate;   // C += A @ B (int32 C only)
    const float* scale;
    int64_t scale_inc;
    const KernelTable<float>& f32;  // its epilogue finishes a dequantised tile
    const Epilogue<float>& ep;
    int64_t k;
    int mr = t.mr, nr = t.nr;
    int64_t k_align = t.kgroup;  // slices of whole k groups: no padding inside a product
    static constexpr bool prepacked = false;

    int64_t a_sliver(int64_t kc) const { return round_up(kc, t.kgroup) * mr * t.a_size; }
    int64_t b_sliver(int64_t kc) const { return int8_b_sliver_bytes(kc, t.kgroup, nr, t.b_size, t.b_sums); }
    int64_t in_place(int64_t) const { return 0; }
    void pack_b(int64_t jc, int64_t nc, int64_t pc, int64_t kc, char* bp, int64_t s0, int64_t s1) const {
        t.pack_b(kc, nc, b.data + pc * b.rs + jc * b.cs, b.rs, b.cs, bp, s0, s1);
    }
    void pack_a(int64_t ic, int64_t mc, int64_t pc, int64_t kc, char* ap) const {
        t.pack_a(mc, kc, a.data + ic * a.rs + pc * a.cs, a.rs, a.cs, ap);
    }
    void tile(const char* ap, const char* bp, bool, int64_t i, int64_t j, int m, int n, int64_t pc, int64_t kc) const {
        const bool add = pc > 0 || accumulate;
        const float* sc = scale && pc + kc == k ? scale + j * scale_inc : nullptr;
        char* cij = c + (i * rsc + j * csc) * 4;
        const Int8UkernelFn fn = tile_for(t.tiles[m], n, t.lanes);
        const bool finish = sc && ep.active();
        const Epilogue<float> tile_ep = finish ? ep.from_column(j) : Epilogue<float>{};
        if (csc == 1) {
            fn(kc, ap, bp, cij, rsc, n, add, sc, scale_inc);  // a finished float32 tile when sc != nullptr
            if (finish) f32.epilogue(m, n, reinterpret_cast<float*>(cij), rsc, tile_ep.bias, tile_ep.act);
            return;
        }
        // Any other C through a tile buffer: the raw sums, finished here exactly as the kernel
        // finishes them (one rounding to float32, one multiplication), then scattered.
        alignas(64) uint32_t buf[kMaxMR * 64];
        fn(kc, ap, bp, buf, nr, n, false, nullptr, 0);
        for (int r = 0; r < m; ++r)
            for (int q = 0; q < n; ++q) {
                uint32_t v = buf[r * nr + q], prev = 0;
                if (add) std::memcpy(&prev, cij + (r * rsc + q * csc) * 4, 4);
                v += prev;
                if (sc) {
                    const float f = float(int32_t(v)) * sc[q * scale_inc];
                    std::memcpy(&v, &f, 4);
                }
                buf[r * nr + q] = v;
            }
        // buf: the finished tile (float32 when sc != nullptr), row stride nr.
        if (finish) f32.epilogue(m, n, reinterpret_cast<float*>(buf), nr, tile_ep.bias, tile_ep.act);
        for (int r = 0; r < m; ++r)
            for (int q = 0; q < n; ++q) std::memcpy(cij + (r * rsc + q * csc) * 4, &buf[r * nr + q], 4);
    }
};

// B of a product: an int8 matrix, packed as the product runs on the active kernel set, or a
// PackedInt8B, packed for its own kernel set (one read of the active set per call: a concurrent
// set_kernel must not mix two kernels in a call).
const KernelSet& kernels_for(View<const int8_t>) { return active_kernels(); }
const KernelSet& kernels_for(const PackedInt8B& b) { return b.kernels(); }
View<const int8_t> shape_of(View<const int8_t> b) { return b; }
View<const int8_t> shape_of(const PackedInt8B& b) { return {nullptr, b.rows(), b.cols(), b.cols(), 1}; }

// One row of C (a decode step) or one column from an unpacked B: the matrix-vector kernels
// stream the matrix once where it is, where the tile would widen and pack all of it first; the
// form is the float products' (gemv_form). The kernels' matrix is int8 and their x is A's type,
// so a row of C takes either form, and a column only the dots form with an int8 A: exact
// integer sums commute, so y[i] = dot(b[:, 0], a[i, :]) runs with the column as x and A's rows
// as the matrix (scale index 0 and bias[0] on every output, as C's one column takes them).
// Outputs split over threads in whole cache lines (the sums are exact, so any split gives the
// same bits). False for the tile. See docs/DESIGN.md, "int8 products".
template <typename A>
bool try_gemv(const KernelSet& ks, const Int8Table<A>& t, View<const A> a, View<const int8_t> b, char* c, int64_t rsc,
              int64_t csc, bool accumulate, const float* scale, int64_t scale_inc, const Epilogue<float>& ep) {
    const int64_t m = a.rows, n = b.cols, k = a.cols;
    GemvForm f;
    if (!gemv_form(a, b, View<int32_t>{nullptr, m, n, rsc, csc}, f)) return false;
    if (!f.x_from_a && (f.rows || !std::is_same_v<A, int8_t>)) return false;
    const int threads = threads_for(m, n, k);
    const int64_t y_scale_inc = f.x_from_a ? scale_inc : 0;
    char* chunks = f.rows ? static_cast<char*>(thread_gemv_chunks(threads, kGemvChunkBytes)) : nullptr;
    parallel_ranges(threads, f.len, 16, [&](int tid, int64_t lo, int64_t hi) {
        const float* s = scale ? scale + lo * y_scale_inc : nullptr;
        if (f.rows) {
            t.gemv_rows(hi - lo, k, a.data, f.incx, b.data + lo, f.ldm, c + lo * 4, accumulate, s, y_scale_inc,
                        chunks + tid * kGemvChunkBytes);
        } else {
            const A* x = a.data;
            const int8_t* mat = b.data;
            if constexpr (std::is_same_v<A, int8_t>)
                if (!f.x_from_a) std::swap(x, mat);
            t.gemv_dots(hi - lo, k, x, mat + lo * f.ldm, f.ldm, c + lo * f.incy * 4, f.incy, accumulate, s,
                        y_scale_inc);
        }
        if (scale) gemv_epilogue(ks.f32, m, ep, lo, hi, reinterpret_cast<float*>(c), f.incy);
    });
    return true;
}

// m, n, k >= 1.
template <typename A, typename B>
void run(const KernelSet& ks, View<const A> a, const B& b, char* c, int64_t rsc, int64_t csc, bool accumulate,
         const float* scale, int64_t scale_inc, const Epilogue<float>& ep) {
    const Int8Kernels& ik = int8_kernels(ks);
    const View<const int8_t> vb = shape_of(b);
    const int64_t m = a.rows, n = vb.cols, k = a.cols;
    const Int8Table<A>& t = pick<Int8Table<A>>(ik.u8, ik.s8);
    if constexpr (std::is_same_v<B, PackedInt8B>)
        if (b.values() && m <= kPackedRowsMaxM) {
            // Up to 3 rows stream B's int8 values (half the bytes of the int16 slivers) as they
            // would an int8 array B; from 4 rows the packed tile is faster (docs/DESIGN.md,
            // "Pre-packed B").
            run<A>(ks, a, View<const int8_t>{b.values(), k, n, n, 1}, c, rsc, csc, accumulate, scale, scale_inc, ep);
            return;
        }
    const int threads = threads_for(m, n, k);
    if constexpr (!std::is_same_v<B, PackedInt8B>) {
        if ((m == 1 || n == 1) && try_gemv(ks, t, a, b, c, rsc, csc, accumulate, scale, scale_inc, ep)) return;
        if (few_rows_fit(ks.tuning.int8_few_rows_max_m, m, b.cs, csc)) {
            // A few rows: B streamed once where it is per group of rows, as for one row; see
            // docs/DESIGN.md, "Few rows".
            few_rows_split(
                threads, m, n, 4,
                [&](int64_t i0, int64_t rows, int64_t lo, int64_t hi, char* chunk) {
                    t.few_rows(rows, hi - lo, k, a.data + i0 * a.rs, a.rs, a.cs, b.data + lo, b.rs,
                               c + (i0 * rsc + lo) * 4, rsc, accumulate, scale ? scale + lo * scale_inc : nullptr,
                               scale_inc, chunk);
                },
                [&](int64_t lo, int64_t hi) {
                    if (scale && ep.active())
                        apply_epilogue(ks.f32, View<float>{reinterpret_cast<float*>(c) + lo, m, hi - lo, rsc, 1},
                                       ep.from_column(lo));
                });
            return;
        }
    }
    const Int8Product<A> product{t, a, vb, c, rsc, csc, accumulate, scale, scale_inc, ks.f32, ep, k};
    if constexpr (std::is_same_v<B, PackedInt8B>)
        five_loops(FromPacked<Int8Product<A>>{product, b}, int8_blocking(ik), threads, m, n, k);
    else five_loops(product, int8_blocking(ik), threads, m, n, k);
}

}  // namespace

const Int8Kernels& int8_kernels(const KernelSet& ks) {
    return ks.int8.better && ks.int8.better_can_run(cpu_features()) ? *ks.int8.better : ks.int8;
}

Blocking int8_blocking(const Int8Kernels& ik) {
    const Int8Table<uint8_t>& t = ik.u8;
    Blocking bs = blocking_for(t.mr, t.nr, t.a_size, 0);
    bs.kc = round_up(bs.kc, t.kgroup);  // whole k-groups in every slice but the last
    return bs;
}

template <typename A, typename B>
void gemm_int8(View<const A> a, const B& b, bool accumulate, View<int32_t> c) {
    check_single(a, shape_of(b), c);
    if (c.rows == 0 || c.cols == 0) return;
    if (a.cols == 0) {
        if (!accumulate)
            for (int64_t i = 0; i < c.rows; ++i)
                for (int64_t j = 0; j < c.cols; ++j) c.data[i * c.rs + j * c.cs] = 0;
        return;
    }
    run<A>(kernels_for(b), a, b, reinterpret_cast<char*>(c.data), c.rs, c.cs, accumulate, nullptr, 0,
           Epilogue<float>{});
}

template <typename A, typename B>
void gemm_int8_scaled(View<const A> a, const B& b, const float* scale, int64_t scale_inc, View<float> c,
                      const Epilogue<float>& ep) {
    check_single(a, shape_of(b), c);
    if (!scale || (scale_inc != 0 && scale_inc != 1))
        throw std::invalid_argument("gemm_int8_scaled: one scale, or one per column of C");
    if (c.rows == 0 || c.cols == 0) return;
    const KernelSet& ks = kernels_for(b);
    if (a.cols == 0) {
        for (int64_t i = 0; i < c.rows; ++i)
            for (int64_t j = 0; j < c.cols; ++j) c.data[i * c.rs + j * c.cs] = 0.0f * scale[j * scale_inc];
        if (ep.active()) apply_epilogue(ks.f32, c, ep);
        return;
    }
    run<A>(ks, a, b, reinterpret_cast<char*>(c.data), c.rs, c.cs, false, scale, scale_inc, ep);
}

#define FASTGEMM_INT8(A, B)                                                                           \
    template void gemm_int8<A, B>(View<const A>, const B&, bool, View<int32_t>);                      \
    template void gemm_int8_scaled<A, B>(View<const A>, const B&, const float*, int64_t, View<float>, \
                                         const Epilogue<float>&);
FASTGEMM_INT8(uint8_t, View<const int8_t>)
FASTGEMM_INT8(int8_t, View<const int8_t>)
FASTGEMM_INT8(uint8_t, PackedInt8B)
FASTGEMM_INT8(int8_t, PackedInt8B)
#undef FASTGEMM_INT8

}  // namespace fastgemm
