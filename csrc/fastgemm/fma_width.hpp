// Whether half-width vector FMAs cost this CPU less than whole ones: the small kernels' choice of
// how to end a pass (kernel.hpp, half_tails), measured once per process.
#pragma once

namespace fastgemm {

// One core's float32 FMA rate in GFLOP/s in whole vectors and in half-width ones, from a short
// timed loop on the best runnable kernel set that has half-width registers (both 0: none has).
struct FmaWidths {
    double whole = 0, half = 0;
};
const FmaWidths& fma_widths();

// The small kernels' half_tails(): measured (fma_widths), unless forced by set_half_tails.
// mode 1 or 0 forces it on or off (the tests run both); -1 returns to the measured choice.
void set_half_tails(int mode);

}  // namespace fastgemm
