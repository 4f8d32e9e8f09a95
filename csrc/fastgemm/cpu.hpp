// What this CPU and the OS's saved register state let us execute, read once.
#pragma once

#include <string>
#include <vector>

namespace fastgemm {

struct CpuFeatures {
    bool avx2 = false;         // AVX2 + FMA + F16C + OS saves ymm
    bool avx512 = false;       // AVX-512 F/BW/VL/DQ + OS saves zmm and opmask
    bool avx512_bf16 = false;  // avx512 + AVX512_BF16 (vdpbf16ps)
    bool avx512_vnni = false;  // avx512 and AVX512_VNNI (vpdpbusd)
    bool neon = false;
    bool intel = false;              // vendor GenuineIntel (caches.cpp: how fast one core reads L3;
                                     // rows_line_offset)
    std::vector<std::string> names;  // for info(): every flag we looked at and found
};

const CpuFeatures& cpu_features();

// The kernel sets' can_run predicates, compiled for the baseline ISA.
bool runs_anywhere(const CpuFeatures&);
bool runs_avx2(const CpuFeatures& f);
bool runs_avx512(const CpuFeatures& f);
bool runs_avx512_bf16(const CpuFeatures& f);
bool runs_avx512_vnni(const CpuFeatures& f);
bool runs_neon(const CpuFeatures& f);

}  // namespace fastgemm
