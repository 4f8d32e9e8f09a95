#include "cpu.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#include <cstdint>
#endif

namespace fastgemm {
namespace {

#if defined(__x86_64__) || defined(_M_X64)
// xgetbv through its opcode, so this file needs no -mxsave and stays baseline x86-64.
uint64_t xgetbv0() {
    uint32_t eax, edx;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
    return (uint64_t(edx) << 32) | eax;
}

CpuFeatures detect() {
    CpuFeatures f;
    unsigned a, b, c, d;
    // "GenuineIntel" in ebx, edx, ecx of leaf 0.
    if (__get_cpuid(0, &a, &b, &c, &d)) f.intel = b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
    if (fma) f.names.push_back("fma");
    if (avx) f.names.push_back("avx");
    if (f16c) f.names.push_back("f16c");
    // The CPU may have the instructions while the OS does not save the registers on a context
    // switch (XCR0); executing them then corrupts state or faults.
    const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    const bool os_ymm = (xcr0 & 0x6) == 0x6;
    const bool os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
    const bool avx2 = b & (1u << 5), f512 = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30),
               vl = b & (1u << 31);
    if (avx2) f.names.push_back("avx2");
    if (f512) f.names.push_back("avx512f");
    if (dq) f.names.push_back("avx512dq");
    if (bw) f.names.push_back("avx512bw");
    if (vl) f.names.push_back("avx512vl");
    const bool vnni = c & (1u << 11);
    if (vnni) f.names.push_back("avx512_vnni");
    unsigned a1, b1, c1, d1;
    const bool bf16 = __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 & (1u << 5));
    if (bf16) f.names.push_back("avx512_bf16");
    if (d & (1u << 24)) f.names.push_back("amx_tile");
    if (d & (1u << 22)) f.names.push_back("amx_bf16");
    // F16C converts float16 in the avx2 / avx512 sets' low-precision kernels; every core with
    // AVX2 has it, but a hypervisor may hide it.
    f.avx2 = avx && avx2 && fma && f16c && os_ymm;
    f.avx512 = f.avx2 && f512 && dq && bw && vl && os_zmm;
    f.avx512_bf16 = f.avx512 && bf16;
    f.avx512_vnni = f.avx512 && vnni;
    if (!os_ymm) f.names.push_back("os-no-ymm");
    else if (f512 && !os_zmm) f.names.push_back("os-no-zmm");
    return f;
}
#elif defined(__aarch64__)
CpuFeatures detect() {
    CpuFeatures f;
    f.neon = true;  // Advanced SIMD is mandatory in armv8-a
    f.names.push_back("neon");
    return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect();
    return f;
}

bool runs_anywhere(const CpuFeatures&) { return true; }
bool runs_avx2(const CpuFeatures& f) { return f.avx2; }
bool runs_avx512(const CpuFeatures& f) { return f.avx512; }
bool runs_avx512_bf16(const CpuFeatures& f) { return f.avx512_bf16; }
bool runs_avx512_vnni(const CpuFeatures& f) { return f.avx512_vnni; }
bool runs_neon(const CpuFeatures& f) { return f.neon; }

}  // namespace fastgemm
