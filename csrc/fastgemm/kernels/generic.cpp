// Portable C++ kernels: correct on every target, the reference the SIMD kernels are tested
// against, and the fallback on CPUs without the SIMD sets we have kernels for.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "int8.hpp"
#include "table.hpp"

namespace fastgemm {
namespace {

// A "vector" of one lane: the tile template then reduces to plain scalar loops.
template <typename Tp>
struct Scalar {
    using T = Tp;
    using reg = Tp;
    using mask = bool;
    static constexpr int W = 1;
    static reg zero() { return T(0); }
    static reg set1(T x) { return x; }
    static reg loadu(const T* p) { return *p; }
    static void storeu(T* p, reg r) { *p = r; }
    static mask lanes(int n) { return n > 0; }
    static reg maskz_loadu(mask m, const T* p) { return m ? *p : T(0); }
    static void mask_storeu(T* p, mask m, reg r) {
        if (m) *p = r;
    }
    static reg fmadd(reg a, reg b, reg c) { return a * b + c; }
    static reg mul(reg a, reg b) { return a * b; }
    static T reduce(reg r) { return r; }  // dots' reduction of one lane
    static reg held(reg r) { return r; }  // as the SIMD sets' (kept in a register), a no-op here
    // For the epilogue (kernels/epilogue.hpp); max / min return b when either is NaN, as x86 does.
    static reg add(reg a, reg b) { return a + b; }
    static reg sub(reg a, reg b) { return a - b; }
    static reg div(reg a, reg b) { return a / b; }
    static reg max(reg a, reg b) { return a > b ? a : b; }
    static reg min(reg a, reg b) { return a < b ? a : b; }
    static reg abs(reg a) { return std::fabs(a); }
    static reg blend_lt(reg a, reg b, reg x, reg y) { return a < b ? x : y; }
    // The exponent-field construction of the SIMD files (no float -> int conversion: n may be NaN).
    static reg pow2i(reg n) {
        using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
        constexpr bool f32 = sizeof(T) == 4;
        T t = n + (f32 ? T(12582912.0 + 127.0) : T(6755399441055744.0 + 1023.0));
        U u;
        std::memcpy(&u, &t, sizeof u);
        u <<= f32 ? 23 : 52;
        std::memcpy(&t, &u, sizeof t);
        return t;
    }
};

// Conversion traits of one lane: the exact scalar conversions of half.hpp.
struct ScalarBf16 {
    using S = bfloat16_t;
    static float one(S x) { return to_float(x); }
    static float load(const S* p) { return to_float(*p); }
};
struct ScalarF16 {
    using S = float16_t;
    static float one(S x) { return to_float(x); }
    static float load(const S* p) { return to_float(*p); }
};
struct ScalarNarrow {
    static void narrow(int64_t n, const float* src, float16_t* dst) {
        for (int64_t i = 0; i < n; ++i) dst[i] = to_float16(src[i]);
    }
};

// int8 one lane at a time: int16 operands, int32 products (exact), summed in uint32 so a sum past
// the int32 range wraps modulo 2^32 as the SIMD kernels' does (signed overflow is undefined).
struct ScalarI8 {
    using F = Scalar<float>;
    using reg = uint32_t;
    using areg = int32_t;
    using breg = int32_t;
    using PA = int16_t;
    using PB = int16_t;
    static constexpr int W = 1, KG = 1;
    static constexpr bool kSignedA = true;
    static reg zero() { return 0; }
    static areg bcast_a(const PA* p) { return *p; }
    static breg load_b(const PB* p) { return *p; }
    static reg dot(reg acc, areg a, breg b) { return acc + uint32_t(a * b); }
    static reg add(reg x, reg y) { return x + y; }
    static reg loadu(const void* p) {
        reg r;
        std::memcpy(&r, p, sizeof r);
        return r;
    }
    static void storeu(void* p, reg r) { std::memcpy(p, &r, sizeof r); }
    static reg maskz_loadu(bool m, const void* p) { return m ? loadu(p) : 0; }
    static void mask_storeu(void* p, bool m, reg r) {
        if (m) storeu(p, r);
    }
    static float to_float(reg r) { return float(int32_t(r)); }
    static PA pa(uint8_t x) { return x; }
    static PA pa(int8_t x) { return x; }
    static PB pb(int8_t x) { return x; }

    // Matrix-vector (int8_gemv.hpp): int32 products summed in uint32, 8 columns a step.
    static constexpr int GC = 8, GD = 1;
    struct xq {
        int32_t v[4];
    };
    static xq x4(int32_t x0, int32_t x1, int32_t x2, int32_t x3) { return {{x0, x1, x2, x3}}; }
    static void rows4(uint32_t* t, const int8_t* r0, const int8_t* r1, const int8_t* r2, const int8_t* r3,
                      const xq& x) {
        for (int j = 0; j < GC; ++j)
            t[j] += uint32_t(x.v[0] * r0[j]) + uint32_t(x.v[1] * r1[j]) + uint32_t(x.v[2] * r2[j]) +
                    uint32_t(x.v[3] * r3[j]);
    }
    using dreg = uint32_t;
    static dreg dzero() { return 0; }
    template <typename A>
    static int32_t widen_x(const A* p) {
        return *p;
    }
    static dreg dot_row(dreg acc, const int8_t* row, int32_t xw) { return acc + uint32_t(xw * *row); }
    static uint32_t hsum(dreg acc) { return acc; }
};

}  // namespace

// Today's thresholds for every ISA: they were measured on Zen 4 AVX-512 only; see
// docs/DESIGN.md, "Measured decisions".
constexpr KernelSet generic_kernels{
    "generic",
    "portable C++",
    &runs_anywhere,
    Tuning{256, 128, int64_t(512) * 512 * 512, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    kernels::kernel_table<Scalar<float>, 4, 8>(),
    kernels::kernel_table<Scalar<double>, 4, 4>(),
    kernels::kernel_table<Scalar<float>, 4, 8>(),
    kernels::kernel_table<Scalar<double>, 4, 4>(),
    kernels::lowp_kernels<Scalar<float>, ScalarBf16, ScalarF16, ScalarNarrow, 4, 8>(),
    kernels::int8_kernels<ScalarI8, 4, 8>("portable C++")};

}  // namespace fastgemm
