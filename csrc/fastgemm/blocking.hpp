// MC / KC / NC for a kernel's tile and element size, from the cache geometry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernel.hpp"
#include "view.hpp"

namespace fastgemm {

struct Blocking {
    int64_t mc, kc, nc;
};

// The block size that cuts `total` (>= 1) into equal blocks of at most ~`block`, a multiple of
// `align`: no thin tail block.
constexpr int64_t even_block(int64_t total, int64_t block, int64_t align) {
    return round_up(ceil_div(total, ceil_div(total, block)), align);
}

// The analytical model of Low et al. (2016), "Analytical modeling is enough for
// high-performance BLIS", with KC at most max_kc when that is not 0 (a tile's measured depth),
// overridden by FASTGEMM_MC / FASTGEMM_KC / FASTGEMM_NC when set to an integer in range (see
// rejected_env_settings).
Blocking blocking_for(int mr, int nr, int elem_size, int64_t max_kc);

// blocking_for a kernel table's tile.
template <typename T>
Blocking blocking_for(const KernelTable<T>& uk) {
    return blocking_for(uk.mr, uk.nr, int(sizeof(T)), uk.max_kc);
}

// `bs` for a product with m rows of C on `threads` threads: with few rows each packed B panel
// is read by only ceil(m / MR) tiles per sliver, and a panel within 4 x L2 per thread ran
// 10-30% faster than the L3-sized one at m <= 128 on one thread (docs/DESIGN.md, "B panel for
// few rows"). NC goes down to that, but not below 8 m, where repacking A (once per panel)
// would cost more than an eighth of packing B. FASTGEMM_NC, when set, stands.
Blocking blocking_for_rows(const Blocking& bs, int64_t m, int threads, int nr, int elem_size);

// An environment override that was ignored.
struct RejectedSetting {
    std::string variable, value, reason;
};
// FASTGEMM_KC and FASTGEMM_MC must be 1..4096 and FASTGEMM_NC 1..16384, so a packed B panel
// stays within 512 MiB and an A block within 128 MiB a thread (fp64). Values outside (or not
// integers) are ignored, the model's value stands, and they are listed here.
const std::vector<RejectedSetting>& rejected_env_settings();

}  // namespace fastgemm
