#include "blocking.hpp"

#include <algorithm>
#include <cstdlib>

#include "caches.hpp"

namespace fastgemm {
namespace {

int64_t env_size(const char* name) {
    const char* s = std::getenv(name);
    if (!s || !*s) return 0;
    char* end = nullptr;
    const long long v = std::strtoll(s, &end, 10);
    return (end && *end == '\0' && v > 0) ? v : 0;
}

int64_t round_down(int64_t x, int64_t m) { return std::max(m, x / m * m); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Blocking blocking_for(int mr, int nr, int s) {
    const Caches& c = caches();
    const CacheLevel &l1 = c.l1d, &l2 = c.l2, &l3 = c.l3;

    // KC. Low et al. size it so the KC x NR sliver of B stays in L1 beside a streaming
    // sliver of A (here: 146 for AVX-512 fp32). Measured on Zen 4 (1 thread, 2048^3, thread
    // CPU time) that depth loses 6-10% to the per-call C-tile update, while both slivers
    // stream from L2 at full speed: fp32 14x32 went 96 -> 105 GF/s from kc 146 to 512, fp64
    // 14x16 46 -> 52 from 128 to 512, AVX2 6x16 100 -> 104 from 256 to 512, flat to 768.
    // So: as deep as keeps both slivers, (MR + NR) x KC, within a quarter of L2, and no
    // deeper than 512, past which there is nothing left to amortise.
    const int64_t l1_model = std::max<int64_t>(1, (l1.ways - 1) * mr / (mr + nr)) *
                             (l1.size / (l1.ways * l1.line)) * l1.line / (mr * s);
    int64_t kc = std::max(l1_model, std::min<int64_t>(512, l2.size / 4 / ((mr + nr) * s)));

    // L2: the MC x KC block of A fills the ways left after one for the B sliver and one for C.
    const int64_t way2 = l2.size / l2.ways;
    const int64_t b_ways2 = ceil_div(kc * nr * s, way2);
    const int64_t cac = std::max<int64_t>(1, l2.ways - 1 - b_ways2);
    int64_t mc = cac * way2 / (kc * s);

    // L3: the KC x NC panel of B takes what the A block leaves, capped so the packed panel
    // stays a modest allocation when L3 is large and shared.
    const int64_t way3 = l3.size / l3.ways;
    const int64_t a_ways3 = ceil_div(mc * kc * s, way3);
    const int64_t cbc = std::max<int64_t>(1, l3.ways - 1 - a_ways3);
    int64_t nc = std::min<int64_t>(cbc * way3 / (kc * s), 8192);

    // Read once: getenv scans the whole environment, a cost a small product would notice.
    static const int64_t env_kc = env_size("FASTGEMM_KC"), env_mc = env_size("FASTGEMM_MC"),
                         env_nc = env_size("FASTGEMM_NC");
    if (env_kc) kc = env_kc;
    if (env_mc) mc = env_mc;
    if (env_nc) nc = env_nc;
    return {round_down(mc, mr), std::max<int64_t>(kc, 1), round_down(nc, nr)};
}

}  // namespace fastgemm
