// The two 2-byte floating-point storage types of low-precision products, and their exact
// scalar conversions. No arithmetic is ever done in them: inputs are widened to float32
// (exactly: every bfloat16 and float16 value, subnormals included, is a float32 value) and
// float32 results are rounded once, to nearest even, when a 2-byte output is asked for.
// See docs/DESIGN.md, "Low-precision products".
#pragma once

#include <cstdint>
#include <cstring>

namespace fastgemm {

// The functions below are `static inline`: each translation unit keeps its own copy, so a copy
// compiled under a kernel file's ISA flags can never be picked by the linker for baseline code.

// Distinct types (not uint16_t) so templates and Views cannot mix them up.
struct bfloat16_t {
    uint16_t bits;
};
struct float16_t {
    uint16_t bits;
};

static inline float bits_to_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
static inline uint32_t float_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// bfloat16 is the top half of a float32: widening is a 16-bit shift.
static inline float to_float(bfloat16_t x) { return bits_to_float(uint32_t(x.bits) << 16); }

static inline float to_float(float16_t x) {
    const uint32_t sign = uint32_t(x.bits & 0x8000u) << 16;
    const uint32_t exp = (x.bits >> 10) & 0x1fu, man = x.bits & 0x3ffu;
    if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man << 13));  // Inf, NaN (payload kept)
    if (exp != 0) return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
    // Zero or subnormal: man * 2^-24, exact in float32.
    const float mag = float(man) * bits_to_float(0x33800000u);  // 2^-24
    return bits_to_float(sign | float_to_bits(mag));
}

// float32 -> bfloat16, round to nearest even; NaN stays NaN (quiet).
static inline bfloat16_t to_bfloat16(float f) {
    const uint32_t u = float_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t((u >> 16) | 0x40u)};
    return {uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}

// float32 -> float16, round to nearest even (overflow to Inf, gradual underflow); NaN stays
// NaN (quiet, top payload bits kept).
static inline float16_t to_float16(float f) {
    const uint32_t u = float_to_bits(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return {uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu))};
    if (a >= 0x477ff000u) return {uint16_t(sign | 0x7c00u)};  // >= 65520 rounds to Inf (or is Inf)
    if (a < 0x38800000u) {                                    // below 2^-14: subnormal or zero
        // Adding 0.5 puts the value's float16-subnormal bits at the bottom of the mantissa,
        // rounded to nearest even by the float32 addition itself.
        const float r = bits_to_float(a) + 0.5f;
        return {uint16_t(sign | (float_to_bits(r) - 0x3f000000u))};
    }
    const uint32_t odd = (a >> 13) & 1u;
    return {uint16_t(sign | ((a - 0x38000000u + 0xfffu + odd) >> 13))};
}

}  // namespace fastgemm
