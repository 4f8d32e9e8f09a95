// The AVX-512 vector traits the kernel files compiled with AVX-512 flags share: avx512.cpp
// (F/BW/VL/DQ), avx512bf16.cpp and avx512_vnni.cpp (the same plus BF16 / VNNI). Types in an
// anonymous namespace: each file that includes this gets its own, compiled with its own flags
// (see table.hpp). Included only from those kernel files.
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
    // For the epilogue (kernels/epilogue.hpp). Masked forms with a given source: GCC 12 warns
    // on the unmasked ones' undefined source.
    static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
    static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
    static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
    static reg max(reg a, reg b) { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
    static reg min(reg a, reg b) { return _mm512_mask_min_ps(a, 0xFFFF, a, b); }
    static reg abs(reg a) {
        return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));
    }
    static reg blend_lt(reg a, reg b, reg x, reg y) {
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
    }
    static reg pow2i(reg n) {
        const __m512i e = _mm512_castps_si512(_mm512_add_ps(n, _mm512_set1_ps(12582912.0f + 127.0f)));
        return _mm512_castsi512_ps(_mm512_mask_slli_epi32(e, 0xFFFF, e, 23));
    }
};

struct Avx512F64 {
    using T = double;
    using reg = __m512d;
    using mask = __mmask8;
    static constexpr int W = 8;
    static reg zero() { return _mm512_setzero_pd(); }
    static reg set1(T x) { return _mm512_set1_pd(x); }
    static reg loadu(const T* p) { return _mm512_loadu_pd(p); }
    static void storeu(T* p, reg r) { _mm512_storeu_pd(p, r); }
    static mask lanes(int n) { return n >= W ? mask(0xFF) : n <= 0 ? mask(0) : mask((1u << n) - 1); }
    static reg maskz_loadu(mask m, const T* p) { return _mm512_maskz_loadu_pd(m, p); }
    static void mask_storeu(T* p, mask m, reg r) { _mm512_mask_storeu_pd(p, m, r); }
    static reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_pd(a, b, c); }
    static reg mul(reg a, reg b) { return _mm512_mul_pd(a, b); }
    // For the epilogue (kernels/epilogue.hpp).
    static reg add(reg a, reg b) { return _mm512_add_pd(a, b); }
    static reg sub(reg a, reg b) { return _mm512_sub_pd(a, b); }
    static reg div(reg a, reg b) { return _mm512_div_pd(a, b); }
    static reg max(reg a, reg b) { return _mm512_mask_max_pd(a, 0xFF, a, b); }
    static reg min(reg a, reg b) { return _mm512_mask_min_pd(a, 0xFF, a, b); }
    static reg abs(reg a) {
        return _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(a), _mm512_set1_epi64(0x7fffffffffffffff)));
    }
    static reg blend_lt(reg a, reg b, reg x, reg y) {
        return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, b, _CMP_LT_OQ), y, x);
    }
    static reg pow2i(reg n) {
        const __m512i e = _mm512_castpd_si512(_mm512_add_pd(n, _mm512_set1_pd(6755399441055744.0 + 1023.0)));
        return _mm512_castsi512_pd(_mm512_mask_slli_epi64(e, 0xFF, e, 52));
    }
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
