#include "gemm_int8.hpp"

#include <cstring>
#include <stdexcept>

#include "blocking.hpp"
#include "cpu.hpp"
#include "dispatch.hpp"
#include "driver.hpp"
#include "paths.hpp"
#include "threading.hpp"

namespace fastgemm {
namespace {

template <typename A>
const Int8Table<A>& table_of(const Int8Kernels& ik);
template <>
const Int8Table<uint8_t>& table_of<uint8_t>(const Int8Kernels& ik) {
    return ik.u8;
}
template <>
const Int8Table<int8_t>& table_of<int8_t>(const Int8Kernels& ik) {
    return ik.s8;
}

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
        const Int8UkernelFn fn = t.tiles[m].by_nv[(n + t.lanes - 1) / t.lanes];
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

// m, n, k >= 1.
template <typename A>
void run(View<const A> a, View<const int8_t> b, char* c, int64_t rsc, int64_t csc, bool accumulate, const float* scale,
         int64_t scale_inc, const Epilogue<float>& ep) {
    // One read of the active set: a concurrent set_kernel must not mix two kernels in a call.
    const KernelSet& ks = active_kernels();
    const Int8Kernels& ik = int8_kernels(ks);
    const Int8Table<A>& t = table_of<A>(ik);
    const int64_t m = a.rows, n = b.cols, k = a.cols;
    five_loops(Int8Product<A>{t, a, b, c, rsc, csc, accumulate, scale, scale_inc, ks.f32, ep, k}, int8_blocking(ik),
               threads_for(m, n, k), m, n, k);
}

}  // namespace

const Int8Kernels& int8_kernels(const KernelSet& ks) {
    return ks.int8.better && ks.int8.better_can_run(cpu_features()) ? *ks.int8.better : ks.int8;
}

Blocking int8_blocking(const Int8Kernels& ik) {
    const Int8Table<uint8_t>& t = ik.u8;
    Blocking bs = blocking_for(t.mr, t.nr, t.a_size);
    bs.kc = round_up(bs.kc, t.kgroup);  // whole k-groups in every slice but the last
    return bs;
}

template <typename A>
void gemm_int8(View<const A> a, View<const int8_t> b, bool accumulate, View<int32_t> c) {
    check_single(a, b, c);
    if (c.rows == 0 || c.cols == 0) return;
    if (a.cols == 0) {
        if (!accumulate)
            for (int64_t i = 0; i < c.rows; ++i)
                for (int64_t j = 0; j < c.cols; ++j) c.data[i * c.rs + j * c.cs] = 0;
        return;
    }
    run<A>(a, b, reinterpret_cast<char*>(c.data), c.rs, c.cs, accumulate, nullptr, 0, Epilogue<float>{});
}

template <typename A>
void gemm_int8_scaled(View<const A> a, View<const int8_t> b, const float* scale, int64_t scale_inc, View<float> c,
                      const Epilogue<float>& ep) {
    check_single(a, b, c);
    if (!scale || (scale_inc != 0 && scale_inc != 1))
        throw std::invalid_argument("gemm_int8_scaled: one scale, or one per column of C");
    if (c.rows == 0 || c.cols == 0) return;
    if (a.cols == 0) {
        for (int64_t i = 0; i < c.rows; ++i)
            for (int64_t j = 0; j < c.cols; ++j) c.data[i * c.rs + j * c.cs] = 0.0f * scale[j * scale_inc];
        if (ep.active()) apply_epilogue(active_kernels().f32, c, ep);
        return;
    }
    run<A>(a, b, reinterpret_cast<char*>(c.data), c.rs, c.cs, false, scale, scale_inc, ep);
}

template void gemm_int8<uint8_t>(View<const uint8_t>, View<const int8_t>, bool, View<int32_t>);
template void gemm_int8<int8_t>(View<const int8_t>, View<const int8_t>, bool, View<int32_t>);
template void gemm_int8_scaled<uint8_t>(View<const uint8_t>, View<const int8_t>, const float*, int64_t, View<float>,
                                        const Epilogue<float>&);
template void gemm_int8_scaled<int8_t>(View<const int8_t>, View<const int8_t>, const float*, int64_t, View<float>,
                                       const Epilogue<float>&);

}  // namespace fastgemm
