#include "blocking.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "caches.hpp"
#include "view.hpp"

namespace fastgemm {
namespace {

constexpr int64_t kMaxKC = 4096, kMaxMC = 4096, kMaxNC = 16384;

struct EnvBlocking {
    int64_t kc = 0, mc = 0, nc = 0;  // 0: not set
    std::vector<RejectedSetting> rejected;
};

int64_t env_size(const char* name, int64_t max, std::vector<RejectedSetting>& rejected) {
    const char* s = std::getenv(name);
    if (!s || !*s) return 0;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s, &end, 10);
    const std::string range = "expected an integer from 1 to " + std::to_string(max);
    if (end == s || *end != '\0') {
        rejected.push_back({name, s, "not an integer; " + range});
        return 0;
    }
    if (errno == ERANGE || v < 1 || v > max) {
        rejected.push_back({name, s, "out of range; " + range});
        return 0;
    }
    return v;
}

// Read once: getenv scans the whole environment, a cost a small product would notice.
const EnvBlocking& env_blocking() {
    static const EnvBlocking env = [] {
        EnvBlocking e;
        e.kc = env_size("FASTGEMM_KC", kMaxKC, e.rejected);
        e.mc = env_size("FASTGEMM_MC", kMaxMC, e.rejected);
        e.nc = env_size("FASTGEMM_NC", kMaxNC, e.rejected);
        return e;
    }();
    return env;
}

int64_t round_down(int64_t x, int64_t m) { return std::max(m, x / m * m); }

}  // namespace

const std::vector<RejectedSetting>& rejected_env_settings() { return env_blocking().rejected; }

Blocking blocking_for(int mr, int nr, int s, int64_t max_kc) {
    const Caches& c = caches();
    const CacheLevel &l1 = c.l1d, &l2 = c.l2, &l3 = c.l3;

    // KC: as deep as keeps an A and a B sliver, (MR + NR) x KC, within a quarter of L2, at most
    // 512; never shallower than Low et al.'s L1 model. A tile's measured cap (max_kc) bounds the
    // result. See docs/DESIGN.md, "KC depth".
    const int64_t l1_model =
        std::max<int64_t>(1, (l1.ways - 1) * mr / (mr + nr)) * (l1.size / (l1.ways * l1.line)) * l1.line / (mr * s);
    int64_t kc = std::max(l1_model, std::min<int64_t>(512, l2.size / 4 / ((mr + nr) * s)));
    if (max_kc > 0) kc = std::min(kc, max_kc);

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

    const EnvBlocking& env = env_blocking();
    if (env.kc) kc = env.kc;
    if (env.mc) mc = env.mc;
    if (env.nc) nc = env.nc;
    return {round_down(mc, mr), std::max<int64_t>(kc, 1), round_down(nc, nr)};
}

Blocking blocking_for_rows(const Blocking& bs, int64_t m, int threads, int nr, int s) {
    if (env_blocking().nc) return bs;
    const int64_t panel_nc = 4 * caches().l2.size * threads / (bs.kc * s);
    const int64_t nc = std::max(panel_nc, 8 * m);
    return nc < bs.nc ? Blocking{bs.mc, bs.kc, round_down(nc, nr)} : bs;
}

}  // namespace fastgemm
