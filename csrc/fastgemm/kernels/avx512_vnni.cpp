// AVX512_VNNI int8 kernels (vpdpbusd; Ice Lake, Cascade Lake, Zen 4 and later): compiled with the
// avx512 file's flags plus -mavx512vnni. Not a kernel set of its own: the avx512 set's
// `int8.better`, run only after dispatch has seen runs_avx512_vnni (cpu.cpp) hold.
// vpdpbusd multiplies 4 unsigned bytes of A by 4 signed bytes of B and adds the four products to
// an int32 lane, wrapping (vpdpbusds, the saturating form, is never used). An int8 A is packed as
// A + 128 (a uint8: x ^ 0x80) and each B sliver carries -128 x its column sums, which the tile
// adds: sum (a + 128) b - 128 sum b = sum a b, exactly, modulo 2^32 like every int32 sum here.
// Tile 14 x 32 int32: 28 zmm accumulators, 2 B vectors, 1 broadcast (of 32).
#include "avx512_traits.hpp"
#include "int8.hpp"

namespace fastgemm {
namespace {

struct VnniI8 : Avx512I32 {
    using areg = __m512i;
    using breg = __m512i;
    using PA = uint8_t;
    using PB = int8_t;
    static constexpr int KG = 4;
    static constexpr bool kSignedA = false;
    static areg bcast_a(const PA* p) { return bcast32(p); }
    static breg load_b(const PB* p) { return _mm512_loadu_si512(p); }
    static reg dot(reg acc, areg a, breg b) { return _mm512_dpbusd_epi32(acc, a, b); }
    static PA pa(uint8_t x) { return x; }
    static PA pa(int8_t x) { return PA(uint8_t(x) ^ 0x80u); }
    static PB pb(int8_t x) { return x; }
};

}  // namespace

constexpr Int8Kernels avx512_vnni_int8 = kernels::int8_kernels<VnniI8, 14, 2>("AVX512_VNNI vpdpbusd");

}  // namespace fastgemm
