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
    // Whether one core reads L3 well above memory speed, so that data streamed more than once
    // may come from there: not on Intel, whose mesh L3 served one core of an Intel Xeon (session
    // 42) at 27 GB/s, as memory did, against 168 from L2; Zen 4's L3 is where streams paid.
    bool l3_fast = true;
};

const Caches& caches();

// The offset in a 64-byte line at which every row of a matrix starts (rows `row_bytes` apart,
// the first at `row`), where a vector straddling two lines was measured to cost: on Intel (the
// matrix-vector kernels' head apart and half-width loads; docs/DESIGN.md, "Matrix-vector
// chunk"). 0 where the rows start on lines, do not share an offset, or elsewhere.
int64_t rows_line_offset(const void* row, int64_t row_bytes);

}  // namespace fastgemm
