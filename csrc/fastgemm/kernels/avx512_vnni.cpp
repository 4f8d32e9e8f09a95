// AVX512_VNNI int8 kernels (vpdpbusd; Ice Lake, Cascade Lake, Zen 4 and later): compiled with the
// avx512 file's flags plus -mavx512vnni. Not a kernel set of its own: the avx512 set's
// `int8.better`, run only after dispatch has seen runs_avx512_vnni (cpu.cpp) hold.
// vpdpbusd multiplies 4 unsigned bytes of A by 4 signed bytes of B and adds the four products to
// an int32 lane, wrapping (vpdpbusds, the saturating form, is never used). An int8 A is packed as
// A + 128 (a uint8: x ^ 0x80) and each B sliver carries -128 x its column sums, which the tile
// adds: sum (a + 128) b - 128 sum b = sum a b, exactly, modulo 2^32 like every int32 sum here.
// Tile 14 x 32 int32: 28 zmm accumulators, 2 B vectors, 1 broadcast (of 32).
#include <immintrin.h>

#include <cstring>

#include "int8.hpp"

namespace fastgemm {
namespace {

// The float32 operations of the dequantising store.
struct VnniF32 {
    using T = float;
    using reg = __m512;
    using mask = __mmask16;
    static constexpr int W = 16;
    static reg set1(T x) { return _mm512_set1_ps(x); }
    static reg loadu(const T* p) { return _mm512_loadu_ps(p); }
    static void storeu(T* p, reg r) { _mm512_storeu_ps(p, r); }
    static mask lanes(int n) { return n >= W ? mask(0xFFFF) : n <= 0 ? mask(0) : mask((1u << n) - 1); }
    static reg maskz_loadu(mask m, const T* p) { return _mm512_maskz_loadu_ps(m, p); }
    static void mask_storeu(T* p, mask m, reg r) { _mm512_mask_storeu_ps(p, m, r); }
    static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
};

struct VnniI8 {
    using F = VnniF32;
    using reg = __m512i;
    using areg = __m512i;
    using breg = __m512i;
    using PA = uint8_t;
    using PB = int8_t;
    static constexpr int W = 16, KG = 4;
    static constexpr bool kSignedA = false;
    static reg zero() { return _mm512_setzero_si512(); }
    static areg bcast_a(const PA* p) {
        int32_t quad;
        std::memcpy(&quad, p, sizeof quad);
        return _mm512_set1_epi32(quad);
    }
    static breg load_b(const PB* p) { return _mm512_loadu_si512(p); }
    static reg dot(reg acc, areg a, breg b) { return _mm512_dpbusd_epi32(acc, a, b); }
    static reg add(reg x, reg y) { return _mm512_add_epi32(x, y); }
    static reg loadu(const void* p) { return _mm512_loadu_si512(p); }
    static void storeu(void* p, reg r) { _mm512_storeu_si512(p, r); }
    static reg maskz_loadu(__mmask16 m, const void* p) { return _mm512_maskz_loadu_epi32(m, p); }
    static void mask_storeu(void* p, __mmask16 m, reg r) { _mm512_mask_storeu_epi32(p, m, r); }
    static __m512 to_float(reg r) { return _mm512_cvtepi32_ps(r); }
    static PA pa(uint8_t x) { return x; }
    static PA pa(int8_t x) { return PA(uint8_t(x) ^ 0x80u); }
    static PB pb(int8_t x) { return x; }
};

}  // namespace

constexpr Int8Kernels avx512_vnni_int8 = kernels::int8_kernels<VnniI8, 14, 2>("AVX512_VNNI vpdpbusd");

}  // namespace fastgemm
