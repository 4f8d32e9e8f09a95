// NEON (Advanced SIMD) kernels for aarch64, where NEON is part of the baseline ISA, so this
// file needs no ISA flags. fp32 8 x 12 and fp64 8 x 6: 24 accumulators, 3 for the B row and
// 1 broadcast of the 32 128-bit registers.
//
// NEON has no masked loads or stores. A partial vector at the right edge of C moves lane by
// lane (fp32 through a small stack buffer, fp64 by lane insert/extract), so no byte past the
// last column is ever touched (C may end at a page boundary); full vectors, the common case,
// take the plain ld1/st1 path.
#include <arm_neon.h>

#include <type_traits>

#include "int8.hpp"
#include "table.hpp"

namespace fastgemm {
namespace {

struct NeonF32 {
    using T = float;
    using reg = float32x4_t;
    using mask = int;  // how many leading lanes are live
    static constexpr int W = 4;
    static reg zero() { return vdupq_n_f32(0.0f); }
    static reg set1(T x) { return vdupq_n_f32(x); }
    static reg loadu(const T* p) { return vld1q_f32(p); }
    static void storeu(T* p, reg r) { vst1q_f32(p, r); }
    static mask lanes(int n) { return n >= W ? W : n <= 0 ? 0 : n; }
    static reg maskz_loadu(mask m, const T* p) {
        if (m == W) return vld1q_f32(p);
        T buf[W] = {};
        for (int i = 0; i < m; ++i) buf[i] = p[i];
        return vld1q_f32(buf);
    }
    static void mask_storeu(T* p, mask m, reg r) {
        if (m == W) return vst1q_f32(p, r);
        T buf[W];
        vst1q_f32(buf, r);
        for (int i = 0; i < m; ++i) p[i] = buf[i];
    }
    static reg fmadd(reg a, reg b, reg c) { return vfmaq_f32(c, a, b); }
    static reg mul(reg a, reg b) { return vmulq_f32(a, b); }
    // The lanes' sum (pairwise): dots' reduction.
    static T reduce(reg r) { return vaddvq_f32(r); }
    // r as it is, but the compiler must hold it in a register: GCC otherwise folds a loaded
    // vector that several FMAs read into each of them, one load per FMA (dots: 1.3-1.5x slower).
    static reg held(reg r) {
        __asm__("" : "+w"(r));
        return r;
    }
    // For the epilogue (kernels/epilogue.hpp).
    static reg add(reg a, reg b) { return vaddq_f32(a, b); }
    static reg sub(reg a, reg b) { return vsubq_f32(a, b); }
    static reg div(reg a, reg b) { return vdivq_f32(a, b); }
    static reg max(reg a, reg b) { return vmaxq_f32(a, b); }
    static reg min(reg a, reg b) { return vminq_f32(a, b); }
    static reg abs(reg a) { return vabsq_f32(a); }
    static reg blend_lt(reg a, reg b, reg x, reg y) { return vbslq_f32(vcltq_f32(a, b), x, y); }
    static reg pow2i(reg n) {
        const uint32x4_t e = vreinterpretq_u32_f32(vaddq_f32(n, vdupq_n_f32(12582912.0f + 127.0f)));
        return vreinterpretq_f32_u32(vshlq_n_u32(e, 23));
    }
};

struct NeonF64 {
    using T = double;
    using reg = float64x2_t;
    using mask = int;
    static constexpr int W = 2;
    static reg zero() { return vdupq_n_f64(0.0); }
    static reg set1(T x) { return vdupq_n_f64(x); }
    static reg loadu(const T* p) { return vld1q_f64(p); }
    static void storeu(T* p, reg r) { vst1q_f64(p, r); }
    static mask lanes(int n) { return n >= W ? W : n <= 0 ? 0 : n; }
    static reg maskz_loadu(mask m, const T* p) {
        if (m == W) return vld1q_f64(p);
        return m == 1 ? vsetq_lane_f64(p[0], vdupq_n_f64(0.0), 0) : vdupq_n_f64(0.0);
    }
    static void mask_storeu(T* p, mask m, reg r) {
        if (m == W) return vst1q_f64(p, r);
        if (m == 1) p[0] = vgetq_lane_f64(r, 0);
    }
    static reg fmadd(reg a, reg b, reg c) { return vfmaq_f64(c, a, b); }
    static reg mul(reg a, reg b) { return vmulq_f64(a, b); }
    static T reduce(reg r) { return vaddvq_f64(r); }
    static reg held(reg r) {
        __asm__("" : "+w"(r));
        return r;
    }
    // For the epilogue (kernels/epilogue.hpp).
    static reg add(reg a, reg b) { return vaddq_f64(a, b); }
    static reg sub(reg a, reg b) { return vsubq_f64(a, b); }
    static reg div(reg a, reg b) { return vdivq_f64(a, b); }
    static reg max(reg a, reg b) { return vmaxq_f64(a, b); }
    static reg min(reg a, reg b) { return vminq_f64(a, b); }
    static reg abs(reg a) { return vabsq_f64(a); }
    static reg blend_lt(reg a, reg b, reg x, reg y) { return vbslq_f64(vcltq_f64(a, b), x, y); }
    static reg pow2i(reg n) {
        const uint64x2_t e = vreinterpretq_u64_f64(vaddq_f64(n, vdupq_n_f64(6755399441055744.0 + 1023.0)));
        return vreinterpretq_f64_u64(vshlq_n_u64(e, 52));
    }
};

// bfloat16 -> float32 is a 16-bit shift (ushll), float16 -> float32 fcvtl; float32 -> float16
// fcvtn rounds by FPCR, to nearest even unless the program changed it.
struct NeonBf16 {
    using S = bfloat16_t;
    static float one(S x) { return to_float(x); }
    static float32x4_t load(const S* p) {
        return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)), 16));
    }
};
struct NeonF16 {
    using S = float16_t;
    static float one(S x) { return to_float(x); }
    static float32x4_t load(const S* p) {
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
    }
};
struct NeonNarrow {
    static void narrow(int64_t n, const float* src, float16_t* dst) {
        int64_t i = 0;
        for (; i + 4 <= n; i += 4)
            vst1_u16(reinterpret_cast<uint16_t*>(dst + i), vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(src + i))));
        for (; i < n; ++i) dst[i] = to_float16(src[i]);
    }
};

// int8 by widening multiplies: operands widened to int16 while packing, then smlal (int16 x int16
// -> int32, accumulated with wrap-around): exact. sdot (ARMv8.2 dot product) is not baseline
// armv8-a, which is all this file is compiled for; it would need its own flags and a run-time check.
struct NeonI8 {
    using F = NeonF32;
    using reg = int32x4_t;
    using areg = int16x4_t;
    using breg = int16x4_t;
    using PA = int16_t;
    using PB = int16_t;
    static constexpr int W = 4, KG = 1;
    static constexpr bool kSignedA = true;
    static reg zero() { return vdupq_n_s32(0); }
    static areg bcast_a(const PA* p) { return vld1_dup_s16(p); }
    static breg load_b(const PB* p) { return vld1_s16(p); }
    static reg dot(reg acc, areg a, breg b) { return vmlal_s16(acc, a, b); }
    static reg add(reg x, reg y) { return vaddq_s32(x, y); }
    static reg loadu(const void* p) { return vld1q_s32(static_cast<const int32_t*>(p)); }
    static void storeu(void* p, reg r) { vst1q_s32(static_cast<int32_t*>(p), r); }
    static reg maskz_loadu(int m, const void* p) {
        if (m == W) return loadu(p);
        int32_t buf[W] = {};
        for (int i = 0; i < m; ++i) buf[i] = static_cast<const int32_t*>(p)[i];
        return vld1q_s32(buf);
    }
    static void mask_storeu(void* p, int m, reg r) {
        if (m == W) return storeu(p, r);
        int32_t buf[W];
        vst1q_s32(buf, r);
        for (int i = 0; i < m; ++i) static_cast<int32_t*>(p)[i] = buf[i];
    }
    static float32x4_t to_float(reg r) { return vcvtq_f32_s32(r); }
    static PA pa(uint8_t x) { return x; }
    static PA pa(int8_t x) { return x; }
    static PB pb(int8_t x) { return x; }

    // Matrix-vector (int8_gemv.hpp): 16 bytes of a row widened to int16 (sxtl), then smlal by the
    // row's x value (an int16: uint8 and int8 both fit), 16 columns a step.
    static constexpr int GC = 16, GD = 16;
    struct xq {
        int16_t v[4];
    };
    static xq x4(int32_t x0, int32_t x1, int32_t x2, int32_t x3) {
        return {{int16_t(x0), int16_t(x1), int16_t(x2), int16_t(x3)}};
    }
    static void rows4(uint32_t* t, const int8_t* r0, const int8_t* r1, const int8_t* r2, const int8_t* r3,
                      const xq& x) {
        int32_t* ts = reinterpret_cast<int32_t*>(t);
        int32x4_t acc[4] = {vld1q_s32(ts), vld1q_s32(ts + 4), vld1q_s32(ts + 8), vld1q_s32(ts + 12)};
        const int8_t* r[4] = {r0, r1, r2, r3};
        for (int q = 0; q < 4; ++q) {
            const int8x16_t b = vld1q_s8(r[q]);
            const int16x8_t lo = vmovl_s8(vget_low_s8(b)), hi = vmovl_high_s8(b);
            acc[0] = vmlal_n_s16(acc[0], vget_low_s16(lo), x.v[q]);
            acc[1] = vmlal_high_n_s16(acc[1], lo, x.v[q]);
            acc[2] = vmlal_n_s16(acc[2], vget_low_s16(hi), x.v[q]);
            acc[3] = vmlal_high_n_s16(acc[3], hi, x.v[q]);
        }
        for (int v = 0; v < 4; ++v) vst1q_s32(ts + 4 * v, acc[v]);
    }
    struct dreg {
        int32x4_t lo, hi;
    };
    struct xw16 {
        int16x8_t lo, hi;
    };
    static dreg dzero() { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }
    template <typename A>
    static xw16 widen_x(const A* p) {
        if constexpr (std::is_same_v<A, uint8_t>) {
            const uint8x16_t v = vld1q_u8(p);
            return {vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(v))), vreinterpretq_s16_u16(vmovl_high_u8(v))};
        } else {
            const int8x16_t v = vld1q_s8(p);
            return {vmovl_s8(vget_low_s8(v)), vmovl_high_s8(v)};
        }
    }
    static dreg dot_row(dreg acc, const int8_t* row, const xw16& x) {
        const int8x16_t b = vld1q_s8(row);
        const int16x8_t lo = vmovl_s8(vget_low_s8(b)), hi = vmovl_high_s8(b);
        acc.lo = vmlal_s16(acc.lo, vget_low_s16(lo), vget_low_s16(x.lo));
        acc.hi = vmlal_high_s16(acc.hi, lo, x.lo);
        acc.lo = vmlal_s16(acc.lo, vget_low_s16(hi), vget_low_s16(x.hi));
        acc.hi = vmlal_high_s16(acc.hi, hi, x.hi);
        return acc;
    }
    static uint32_t hsum(dreg acc) { return uint32_t(vaddvq_s32(vaddq_s32(acc.lo, acc.hi))); }
};

}  // namespace

// Today's thresholds for every ISA: they were measured on Zen 4 AVX-512 only; see
// docs/DESIGN.md, "Measured decisions".
constexpr KernelSet neon_kernels{
    "neon", "NEON (Advanced SIMD)", &runs_neon,
    Tuning{256, 128, int64_t(512) * 512 * 512, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    kernels::kernel_table<NeonF32, 8, 3>(), kernels::kernel_table<NeonF64, 8, 3>(),
    // No aarch64 machine to measure a skinny tile on: reuse the main one.
    kernels::kernel_table<NeonF32, 8, 3>(), kernels::kernel_table<NeonF64, 8, 3>(),
    kernels::lowp_kernels<NeonF32, NeonBf16, NeonF16, NeonNarrow, 8, 3>(),
    // 8 x 8 int32: 16 accumulators. GCC 12 spilled 8 x 12's (10 stack loads per 4
    // k steps); counted in the generated code, not timed.
    kernels::int8_kernels<NeonI8, 8, 2>("NEON smlal")};

}  // namespace fastgemm
