// The AVX-512 vector traits two kernel files share: avx512.cpp (F/BW/VL/DQ) and avx512_vnni.cpp
// (the same plus VNNI). Types in an anonymous namespace: each file that includes this gets its
// own, compiled with its own flags (see table.hpp). Included only from those kernel files.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace fastgemm {
namespace {

struct Avx512F32 {
    using T = float;
    using reg = __m512;
    using mask = __mmask16;
    static constexpr int W = 16;
    static reg zero() { return _mm512_setzero_ps(); }
    static reg set1(T x) { return _mm512_set1_ps(x); }
    static reg loadu(const T* p) { return _mm512_loadu_ps(p); }
    static void storeu(T* p, reg r) { _mm512_storeu_ps(p, r); }
    static mask lanes(int n) { return n >= W ? mask(0xFFFF) : n <= 0 ? mask(0) : mask((1u << n) - 1); }
    static reg maskz_loadu(mask m, const T* p) { return _mm512_maskz_loadu_ps(m, p); }
    static void mask_storeu(T* p, mask m, reg r) { _mm512_mask_storeu_ps(p, m, r); }
    static reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
    static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
};

// int32 accumulators on zmm for the int8 traits (kernels/int8.hpp), with the float32 traits of
// their dequantising store; each file adds its packing and its dot step.
struct Avx512I32 {
    using F = Avx512F32;
    using reg = __m512i;
    static constexpr int W = 16;
    static reg zero() { return _mm512_setzero_si512(); }
    // A row's k-group (4 bytes) in every 32-bit lane.
    static reg bcast32(const void* p) {
        int32_t group;
        std::memcpy(&group, p, sizeof group);
        return _mm512_set1_epi32(group);
    }
    static reg add(reg x, reg y) { return _mm512_add_epi32(x, y); }
    static reg loadu(const void* p) { return _mm512_loadu_si512(p); }
    static void storeu(void* p, reg r) { _mm512_storeu_si512(p, r); }
    static reg maskz_loadu(__mmask16 m, const void* p) { return _mm512_maskz_loadu_epi32(m, p); }
    static void mask_storeu(void* p, __mmask16 m, reg r) { _mm512_mask_storeu_epi32(p, m, r); }
    static __m512 to_float(reg r) { return _mm512_cvtepi32_ps(r); }
};

}  // namespace
}  // namespace fastgemm
