// MC / KC / NC for a kernel's tile and element size, from the cache geometry.
#pragma once

#include <cstdint>

namespace fastgemm {

struct Blocking {
    int64_t mc, kc, nc;
};

// The analytical model of Low et al. (2016), "Analytical modeling is enough for
// high-performance BLIS", overridden by FASTGEMM_MC / FASTGEMM_KC / FASTGEMM_NC when set.
Blocking blocking_for(int mr, int nr, int elem_size);

}  // namespace fastgemm
