// Data cache geometry of the CPU this process runs on.
#pragma once

#include <cstdint>

namespace fastgemm {

struct CacheLevel {
    int64_t size = 0;       // bytes
    int64_t ways = 0;       // associativity
    int64_t line = 64;      // bytes
    bool detected = false;  // false: a conservative default stands in
};

struct Caches {
    CacheLevel l1d, l2, l3;
};

const Caches& caches();

}  // namespace fastgemm
