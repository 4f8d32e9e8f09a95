// Lane picks: W groups of K elements stored back to back (W * K elements in K vectors) split
// into K vectors, vector p holding element p of every group (lane l: element l * K + p), by
// two-register permutes where the ISA has them (V::kLanePicksMaxK, V::permute2, V::blend,
// V::make_index); groups of lanes added up across registers (HalvingPicks); with_rows, which
// hands such a K, known at run time, to a kernel that fixes it at compile time; and HalfOf, the
// half-width traits the kernels fall back to. Included only from kernels/*.cpp (through
// table.hpp); templated on V like every kernel.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace fastgemm {
namespace kernels {

// f(std::integral_constant<int, m>{}) for 1 <= m <= Max: a row count known at run time handed
// to a kernel that fixes it at compile time (larger m are taken as Max).
template <int Max, typename F>
void with_rows(int64_t m, F f) {
    if constexpr (Max > 1)
        if (m < Max) return with_rows<Max - 1>(m, f);
    f(std::integral_constant<int, Max>{});
}

// The vector traits for products half as wide as V's vectors: V::half where the ISA has one
// (AVX-512: its 256-bit registers), else V itself.
template <typename V, typename = void>
struct HalfOf {
    using type = V;
};
template <typename V>
struct HalfOf<V, std::void_t<typename V::half>> {
    using type = typename V::half;
};
template <typename V>
constexpr bool has_half = !std::is_same_v<typename HalfOf<V>::type, V>;

// The largest K the ISA picks lanes for: V::kLanePicksMaxK, else 0 (none).
template <typename V, typename = void>
constexpr int lane_picks_max_k = 0;
template <typename V>
constexpr int lane_picks_max_k<V, std::void_t<decltype(V::kLanePicksMaxK)>> = V::kLanePicksMaxK;

// K vectors gathered from the W * K elements that K vectors v hold (element s in v[s / W], lane
// s % W; for odd K one more vector, any value): lane l of vector o is element at(o, l). Each
// takes ceil(K / 2) two-register permutes and the blends between them.
template <typename V, int K>
struct LaneGather {
    static constexpr int kPairs = (K + 1) / 2;
    typename V::index ix[K][kPairs];
    typename V::mask from[K][kPairs];

    template <typename At>
    explicit LaneGather(At at) {
        using M = typename V::mask;
        constexpr int W = V::W;
        for (int o = 0; o < K; ++o)
            for (int c = 0; c < kPairs; ++c) {
                int lane[W];
                M m = 0;
                for (int l = 0; l < W; ++l) {
                    const int e = at(o, l) - 2 * W * c;  // its place in register pair c
                    lane[l] = e & (2 * W - 1);
                    if (e >= 0 && e < 2 * W) m = M(m | (M(1) << l));
                }
                ix[o][c] = V::make_index(lane);
                from[o][c] = m;
            }
    }
    typename V::reg get(const typename V::reg* v, int o) const {
        typename V::reg r = V::permute2(v[0], ix[o][0], v[1]);
#pragma GCC unroll 4
        for (int c = 1; c < kPairs; ++c) r = V::blend(from[o][c], r, V::permute2(v[2 * c], ix[o][c], v[2 * c + 1]));
        return r;
    }
};

// The picks for K: pick(v, p) gives the vector whose lane l is element l * K + p of the W * K
// elements in v (W groups of K back to back, element p of every group).
template <typename V, int K>
struct LanePicks : LaneGather<V, K> {
    LanePicks() : LaneGather<V, K>([](int p, int l) { return l * K + p; }) {}
    typename V::reg pick(const typename V::reg* v, int p) const { return this->get(v, p); }
};

// f(picks) with the LanePicks for K. Up to 4 the compiler folds the table into constants; past
// that it built the table on every call (64% of a stack of 300 x (13 x 48 x 8) float32 x @ W.T
// items, each item's B deinterleaved; a float32 stack of 3738 x (11 x 1 x 7) matrix-vector
// items ran at 0.13x NumPy), so it is built once (a static one for K <= 4 cost float32 2 x 3 x
// 2048 4%) and copied to the stack per call: read in place from the static one, single
// products lost (float32 3000 x 1 x 6 11%, float64 3000 x 1 x 5 16%), with the copy they did not.
template <typename V, int K, typename F>
void with_lane_picks(F f) {
    if constexpr (K <= 4) {
        f(LanePicks<V, K>{});
    } else {
        static const LanePicks<V, K> table;
        const LanePicks<V, K> picks = table;
        f(picks);
    }
}

// The picks undone: weave(v, o) gives vector o of the W groups of K elements back to back that
// v holds element by element (v[p]'s lane g is element p of group g).
template <typename V, int K>
struct LaneWeave : LaneGather<V, K> {
    LaneWeave() : LaneGather<V, K>([](int o, int l) { return (o * V::W + l) % K * V::W + (o * V::W + l) / K; }) {}
    typename V::reg weave(const typename V::reg* v, int o) const { return this->get(v, o); }
};

// V::reduce's tree across registers: sum(v) adds up the K vectors v of W / K groups of K lanes
// (one dot's products a group) to one vector of the W dots, in group order, each level making
// one vector of every pair with groups of half the lanes, lane l of a group the sum of lanes
// l + G / 2 and l of the old group of G. repeat(x): x's lanes 0 to K - 1 in every group.
template <typename V, int K>
struct HalvingPicks {
    static_assert(K >= 2 && K <= V::W && (K & (K - 1)) == 0, "groups of a power of two lanes");
    static constexpr int kLevels = __builtin_ctz(K);
    typename V::index hi[kLevels], lo[kLevels], rep;

    // Unrolled whole, so the indices fold into constants: as loops, float32 K = 8 divided by
    // `half` on every call (3738 x (11 x 1 x 8) stacks at 0.39x NumPy, the table's build most of
    // each item).
    HalvingPicks() {
        constexpr int W = V::W;
        int lane[W];
#pragma GCC unroll 4
        for (int s = 0; s < kLevels; ++s) {
            const int half = (K >> s) / 2;  // lanes of a group this level makes
#pragma GCC unroll 16
            for (int l = 0; l < W; ++l) lane[l] = l / half * 2 * half + l % half;
            lo[s] = V::make_index(lane);
#pragma GCC unroll 16
            for (int l = 0; l < W; ++l) lane[l] += half;
            hi[s] = V::make_index(lane);
        }
#pragma GCC unroll 16
        for (int l = 0; l < W; ++l) lane[l] = l % K;
        rep = V::make_index(lane);
    }
    typename V::reg repeat(typename V::reg x) const { return V::permute2(x, rep, x); }
    typename V::reg sum(typename V::reg* v) const {
#pragma GCC unroll 4
        for (int s = 0; s < kLevels; ++s)
#pragma GCC unroll 8
            for (int i = 0; i < (K >> s) / 2; ++i)
                v[i] = V::add(V::permute2(v[2 * i], hi[s], v[2 * i + 1]), V::permute2(v[2 * i], lo[s], v[2 * i + 1]));
        return v[0];
    }
};

// v = the K vectors that n <= W groups of K elements fill, and a zero one after them (an odd K's
// last pair): full(q) reads vector q whole (n == W), part(q, count) its first count elements.
template <typename V, int K, typename Full, typename Part>
void load_groups(int64_t n, typename V::reg (&v)[K + 1], Full full, Part part) {
    constexpr int W = V::W;
#pragma GCC unroll 8
    for (int q = 0; q < K; ++q)
        v[q] = n == W ? full(q) : n * K > q * W ? part(q, std::min<int64_t>(W, n * K - q * W)) : V::zero();
    v[K] = V::zero();
}

// dst (K rows, rows ld apart) = the K rows interleaved in src (element (i, j) at j * K + i),
// cols of them: W columns a step by LanePicks, the last step masked.
template <typename V, int K>
void deinterleave(int64_t cols, const typename V::T* src, typename V::T* dst, int64_t ld) {
    constexpr int W = V::W;
    auto run = [&](const LanePicks<V, K>& picks) {
        for (int64_t j = 0; j < cols; j += W) {
            const int64_t n = cols - j < W ? cols - j : W;
            const typename V::T* s = src + j * K;
            typename V::reg v[K + 1];
            load_groups<V, K>(
                n, v, [&](int q) { return V::loadu(s + q * W); },
                [&](int q, int64_t count) { return V::maskz_loadu(V::lanes(int(count)), s + q * W); });
#pragma GCC unroll 8
            for (int i = 0; i < K; ++i) {
                if (n == W) V::storeu(dst + i * ld + j, picks.pick(v, i));
                else V::mask_storeu(dst + i * ld + j, V::lanes(int(n)), picks.pick(v, i));
            }
        }
    };
    with_lane_picks<V, K>(run);
}

// dst (rows of K elements back to back) = the K columns of a rows x K matrix stored by columns
// (cs apart): W rows a step by LaneWeave (C^T of a few-column product put back into C: the
// register transposes' W x W blocks and masked stores took 22% of float32 1650 x 4 x 30), the
// last rows % W element by element.
template <typename V, int K>
void weave_columns(int64_t rows, const typename V::T* src, int64_t cs, typename V::T* dst) {
    constexpr int W = V::W;
    // Built once: per call it cost 64 x 6 x 64 float32 (A.T @ W) a quarter of its time.
    static const LaneWeave<V, K> weave;
    int64_t i = 0;
    for (; i + W <= rows; i += W) {
        typename V::reg v[K + 1];
#pragma GCC unroll 8
        for (int q = 0; q < K; ++q) v[q] = V::loadu(src + q * cs + i);
        v[K] = V::zero();
#pragma GCC unroll 8
        for (int o = 0; o < K; ++o) V::storeu(dst + i * K + o * W, weave.weave(v, o));
    }
    for (; i < rows; ++i)
        for (int q = 0; q < K; ++q) dst[i * K + q] = src[q * cs + i];
}

}  // namespace kernels
}  // namespace fastgemm
