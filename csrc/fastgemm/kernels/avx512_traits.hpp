// The AVX-512 vector traits of float32 and float64, for the kernel files compiled with AVX-512
// flags (avx512.cpp, avx512bf16.cpp). Included only from those files; the anonymous namespace
// makes each file's copy a distinct type, so their template instantiations never share a symbol.
#pragma once

#include <immintrin.h>

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
};

}  // namespace
}  // namespace fastgemm
