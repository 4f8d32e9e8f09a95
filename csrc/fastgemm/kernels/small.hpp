// Whole small products without packing: rows of C held in registers over all of k, B read in
// place; and stacks of them in one call, the common square sizes with fixed-shape kernels.
// Included only from kernels/*.cpp (through table.hpp). Every template takes a vector-traits
// type V, and each kernel file's V is a distinct type in an anonymous namespace, so
// instantiations compiled with different ISA flags never share a symbol (the linker could
// otherwise keep an AVX-512 copy and hand it to baseline code).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>

#include "../kernel.hpp"
#include "gemv.hpp"
#include "packing.hpp"

namespace fastgemm {
namespace kernels {

// How many k steps ahead the small kernels prefetch B's rows for a product of at most
// kSmallPrefetchMaxM rows, one row group (each B line read once, rows a whole B row apart: too
// far for the hardware's stride prefetcher; with a second group, 5-6 rows lost 2-14%):
// V::kSmallPrefetchB where the ISA file measured one, else 0 (none). See docs/DESIGN.md, "Small
// products".
template <typename V, typename = void>
constexpr int small_prefetch_b = 0;
template <typename V>
constexpr int small_prefetch_b<V, std::void_t<decltype(V::kSmallPrefetchB)>> = V::kSmallPrefetchB;
constexpr int64_t kSmallPrefetchMaxM = 4;

// An A stored by columns (rows 1 apart, its elements for one k step at least
// kSmallAheadAMinStride bytes from the next step's) of more than kSmallAheadABytes: each row group
// reads a line of every one of its k columns, k streams no hardware prefetcher follows, so each k
// step prefetches the line kSmallAheadARows rows further down (float32 x.T @ w, 3000 x 64 x 130,
// 0.74x -> 1.21x NumPy on an Intel Xeon; an A within L2 lost: float64 700 x 20 x 20 0.90x ->
// 0.84x) into L2, and its own group's line kSmallAheadAColumns steps on into L1: into L1, the
// lines a group ahead (k of them, twice where columns start off a line) outgrew it past a few
// hundred k (float64 x.T @ y.T 300 x 8 x 300 0.68-0.70x -> 0.83-0.85x NumPy, float32 x.T @ w
// 3000 x 64 x 130 1.11-1.19x -> 1.32-1.37x; the own group's line alone lost the second; in the
// last steps it reaches past A, which a prefetch may: it never faults). A template argument of
// small_panel (AHEAD_A), chosen per pass: a test in every product's k loop cost float64 130 x
// 130 x 20 6%, one per row group in small_panel 5-8% on 700 x 20 x 20. See docs/DESIGN.md,
// "Small products".
constexpr int64_t kSmallAheadAMinStride = 256;
constexpr int64_t kSmallAheadABytes = 512 * 1024;
constexpr int64_t kSmallAheadARows = 16;
constexpr int64_t kSmallAheadAColumns = 8;
// An A stored by rows of more than kSmallAheadRowsBytes comes from memory, each row group
// broadcasting from RG rows at once: RG streams the hardware prefetchers left at 3.8 GB/s (float64
// 3000 x 20 x 3000, 19 GFLOP/s), so each k step prefetches one of the group's rows, in turn,
// kSmallAheadRowElems elements ahead (38-40 GFLOP/s). Elements of kSmallAheadRowsMinElem bytes or
// more: float32 lines last twice the k steps, and it lost there (3000 x 20 x 3000 75 -> 69
// GFLOP/s); in cache it cost 6-7% (float32 64^3). See docs/DESIGN.md, "Small products".
constexpr int64_t kSmallAheadRowsBytes = int64_t(32) << 20;
constexpr int64_t kSmallAheadRowsMinElem = 8;
constexpr int64_t kSmallAheadRowElems = 64;
// small_panel's AHEAD_A: A not prefetched, down its columns or along its rows.
constexpr int kAheadNone = 0, kAheadColumns = 1, kAheadRows = 2;
template <typename T>
constexpr int small_ahead_a(int64_t m, int64_t k, int64_t rsa, int64_t csa) {
    const int64_t bytes = int64_t(sizeof(T));
    if (rsa == 1 && csa * bytes >= kSmallAheadAMinStride && m * k * bytes > kSmallAheadABytes) return kAheadColumns;
    if (csa == 1 && bytes >= kSmallAheadRowsMinElem && m * k * bytes > kSmallAheadRowsBytes) return kAheadRows;
    return kAheadNone;
}

// The raw sums of C's elements carried from one k chunk of a product to the next (small's
// k chunks): the accumulators start from `from` (null: zero) and, when `to` is set, are left
// there unscaled instead of finishing C. Rows rs apart, columns as C's. Each element then sums
// its k products in the same order as without chunks, so the bits are the same.
template <typename T>
struct SmallSums {
    const T* from = nullptr;
    T* to = nullptr;
    int64_t rs = 0;
    SmallSums at(int64_t i, int64_t j) const {
        return {from ? from + i * rs + j : nullptr, to ? to + i * rs + j : nullptr, rs};
    }
};

// The lines of a stack's next item (its B, then A, then C) that small_stack has the current
// item's row groups prefetch into L2, `per` lines a k step: the items of a stack past L2 come
// from memory, and a core that reads them only when it needs them waits for each (float64
// 1000 x 64^3 ran at 60% of the speed of the same items in L2). See docs/DESIGN.md, "Small
// products". In an anonymous namespace, as the traits are: each kernel file keeps its own copy
// of the member functions, compiled with its own flags (.ci/isa_check.sh).
namespace {
struct NextItem {
    const char* lo[3] = {};
    const char* hi[3] = {};
    int r = 3;          // the region being prefetched; 3: none left
    int per = 1;        // lines a k step
    int64_t steps = 0;  // k steps the row groups took, which sets the next item's `per`

    // The region [lo, hi) of one operand, skipped when it spans more than twice its elements (a
    // strided view: most of the lines would be gaps).
    template <typename T>
    void add(int i, const T* base, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
        const int64_t first = std::min<int64_t>(0, (rows - 1) * rs) + std::min<int64_t>(0, (cols - 1) * cs);
        const int64_t last = std::max<int64_t>(0, (rows - 1) * rs) + std::max<int64_t>(0, (cols - 1) * cs);
        if (last - first >= 2 * rows * cols) return;
        lo[i] = reinterpret_cast<const char*>(base + first);
        hi[i] = reinterpret_cast<const char*>(base + last + 1);
        r = 0;
    }
    int64_t lines() const {
        int64_t n = 0;
        for (int i = 0; i < 3; ++i) n += (hi[i] - lo[i] + 63) / 64;
        return n;
    }
    // The lines for a row group of k steps, from where the last one stopped, within one region.
    void take(int64_t k, const char*& from, const char*& to) {
        steps += k;
        while (r < 3 && lo[r] >= hi[r]) ++r;
        if (r == 3) return;
        from = lo[r];
        to = std::min(hi[r], from + k * per * 64);
        lo[r] = to;
    }
};
}  // namespace

// RG rows x NV vectors of C's raw sums over all of k, in acc: RG x NV independent accumulators
// hide the FMA latency that one row's chain over k would expose, and each B vector loaded serves
// RG rows. K > 0 fixes the depth at compile time (the k loop unrolls fully); FULL: every vector
// is whole, else the last one has `last`'s lanes and only it is masked. pf > 0: B's rows
// prefetched pf steps ahead; AHEAD_A: A's element kSmallAheadARows rows down and
// kSmallAheadAColumns steps on too (kAheadColumns) or a row's kSmallAheadRowElems elements on,
// the group's rows in turn (kAheadRows). AHEAD: `next` holds lines of a stack's next item to
// prefetch (a template argument: the check in each k step cost single products of 80^3-96^3
// 4-6%).
template <typename V, int RG, int NV, int K, bool FULL, bool AHEAD, int AHEAD_A = kAheadNone>
[[gnu::always_inline]] inline void small_sums(typename V::reg (&acc)[RG][NV], int64_t k, const typename V::T* a,
                                              int64_t rsa, int64_t csa, const typename V::T* b, int64_t rsb,
                                              typename V::mask last, int pf, const SmallSums<typename V::T>& sums,
                                              NextItem* next) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W;
    [[maybe_unused]] const char *ahead = nullptr, *ahead_end = nullptr;
    [[maybe_unused]] int per = 0;
    if constexpr (AHEAD) {
        next->take(k, ahead, ahead_end);
        per = next->per;
    }
    // Both always inlined: GCC left `step` out of line in some row groups of the larger panel
    // functions, the accumulators then going through memory each k step (float64 2- and 3-row
    // groups one vector wide ran 4-5x slower per k step than 1 or 4 rows).
    auto load = [&](const T* p, int j) __attribute__((always_inline)) {
        return FULL || j + 1 < NV ? V::loadu(p + j * W) : V::maskz_loadu(last, p + j * W);
    };
#pragma GCC unroll 8
    for (int r = 0; r < RG; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[r][j] = sums.from ? V::loadu(sums.from + r * sums.rs + j * W) : V::zero();
    auto step = [&](int64_t p) __attribute__((always_inline)) {
        const T* bp = b + p * rsb;
        if constexpr (AHEAD)
            for (int l = 0; l < per && ahead < ahead_end; ++l, ahead += 64) __builtin_prefetch(ahead, 0, 2);
        if constexpr (AHEAD_A == kAheadColumns) {
            __builtin_prefetch(a + kSmallAheadARows * rsa + p * csa, 0, 1);
            __builtin_prefetch(a + (p + kSmallAheadAColumns) * csa, 0, 3);
        }
        if constexpr (AHEAD_A == kAheadRows) __builtin_prefetch(a + (p % RG) * rsa + p + kSmallAheadRowElems, 0, 3);
        if (pf && p + pf < k)
#pragma GCC unroll 4
            for (int j = 0; j < NV; ++j) __builtin_prefetch(bp + pf * rsb + j * W, 0, 3);
        // Held in registers: GCC would fold each into every row's FMA, two or three loads of it,
        // each split across lines when B's rows start off a 32-byte boundary (NumPy's 16-byte
        // alignment): float32 2 x 64 x 2000 ran at 54 GFLOP/s against 83 held (B at 16 bytes).
        R bv[NV];
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) bv[j] = RG > 1 ? V::held(load(bp, j)) : load(bp, j);
#pragma GCC unroll 8
        for (int r = 0; r < RG; ++r) {
            const R av = V::set1(a[r * rsa + p * csa]);
#pragma GCC unroll 4
            for (int j = 0; j < NV; ++j) acc[r][j] = V::fmadd(av, bv[j], acc[r][j]);
        }
    };
    if constexpr (K > 0) {
#pragma GCC unroll 32
        for (int p = 0; p < K; ++p) step(p);
    } else {
        for (int64_t p = 0; p < k; ++p) step(p);
    }
}

// small_sums' RG x NV block of C finished: alpha * sums + beta * C (C not read where beta is 0),
// or the raw sums left in sums.to. Only the last vector is masked where not FULL (a masked store
// is microcoded on AMD cores: masking every vector cost float32 2630 x 30 x 10 15%).
template <typename V, int RG, int NV, int K, bool FULL, bool AHEAD = false, int AHEAD_A = kAheadNone>
inline void small_rows(int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
                       const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc,
                       typename V::mask last, int pf = 0, const SmallSums<typename V::T>& sums = {},
                       NextItem* next = nullptr) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W;
    R acc[RG][NV];
    small_sums<V, RG, NV, K, FULL, AHEAD, AHEAD_A>(acc, k, a, rsa, csa, b, rsb, last, pf, sums, next);
    auto whole = [](int j) { return FULL || j + 1 < NV; };
    if (sums.to) {
#pragma GCC unroll 8
        for (int r = 0; r < RG; ++r)
#pragma GCC unroll 4
            for (int j = 0; j < NV; ++j) V::storeu(sums.to + r * sums.rs + j * W, acc[r][j]);
        return;
    }
    const R va = V::set1(alpha), vb = V::set1(beta);
    // alpha = 1 (every matmul) skips the multiply: RG x NV of them beside K x NV x RG FMAs is
    // 1/K of the work (8^3: an eighth), and x * 1 is x, so the bits are the same.
    auto finish = [&](auto scaled) {
#pragma GCC unroll 8
        for (int r = 0; r < RG; ++r) {
            T* cr = c + r * rsc;
#pragma GCC unroll 4
            for (int j = 0; j < NV; ++j) {
                R x = decltype(scaled)::value ? V::mul(acc[r][j], va) : acc[r][j];
                if (beta != T(0))
                    x = V::fmadd(vb, whole(j) ? V::loadu(cr + j * W) : V::maskz_loadu(last, cr + j * W), x);
                if (whole(j)) V::storeu(cr + j * W, x);
                else V::mask_storeu(cr + j * W, last, x);
            }
        }
    };
    if (alpha == T(1)) finish(std::false_type{});
    else finish(std::true_type{});
}

// RG <= W rows of C^T x NV vectors (C^T = B^T A^T, beta 0; small_stack_c_cols), written to C
// (rows rsc apart) transposed: each W x W block of the sums (rows past RG zero) transposed in
// registers and stored as up to W rows of C, `rows_last` of them for the last vector where not
// FULL, each RG elements wide (masked where RG < W). C is never read. The same sums as
// small_rows on C^T, so the same bits as the small kernels on C.
template <typename V, int RG, int NV, int K, bool FULL, bool AHEAD = false>
[[gnu::always_inline]] inline void transposed_rows(int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa,
                                                   const typename V::T* b, int64_t rsb, typename V::T* c, int64_t rsc,
                                                   typename V::mask last, int rows_last, NextItem* next = nullptr) {
    using R = typename V::reg;
    constexpr int W = V::W;
    static_assert(RG <= W, "at most W rows of C^T a block");
    R acc[RG][NV];
    small_sums<V, RG, NV, K, FULL, AHEAD>(acc, k, a, rsa, 1, b, rsb, last, 0, {}, next);
    const R va = V::set1(alpha);
    const typename V::mask cols = V::lanes(RG);
    auto finish = [&](auto scaled) {
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) {
            R blk[W];
#pragma GCC unroll 16
            for (int r = 0; r < W; ++r)
                blk[r] = r >= RG ? V::zero() : decltype(scaled)::value ? V::mul(acc[r][j], va) : acc[r][j];
            V::transpose(blk);
            const int rows = FULL || j + 1 < NV ? W : rows_last;
#pragma GCC unroll 16
            for (int q = 0; q < W; ++q) {
                if (q >= rows) break;
                if constexpr (RG == W) V::storeu(c + (j * W + q) * rsc, blk[q]);
                else V::mask_storeu(c + (j * W + q) * rsc, cols, blk[q]);
            }
        }
    };
    if (alpha == typename V::T(1)) finish(std::false_type{});
    else finish(std::true_type{});
}

// One panel of C, NV vectors (n <= NV * W columns) wide, all m rows: groups of 8 rows when one
// vector wide (a last 5-11 rows in groups of 4-7), 6 when two (4 rows held 4 or 8 accumulators,
// too few chains for the FMA's latency on two pipes), and when three or four where the
// registers hold 6 x NV accumulators beside a row of B (each B vector loaded then serves 6 rows,
// not 4; see docs/DESIGN.md, "Small products"), else 4; after 6-row groups a last 7, 8 or 11
// rows go as 4 + 3, 4 + 4 or 4 + 4 + 3, not with a 1- or 2-row group; then the 1-3 left over.
template <typename V, int NV, int K, bool FULL, int AHEAD_A = kAheadNone>
inline void small_panel(int64_t m, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
                        const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc,
                        typename V::mask last, const SmallSums<typename V::T>& sums = {}, NextItem* next = nullptr) {
    // Only the 4-row and last groups can belong to a product of kSmallPrefetchMaxM rows.
    const int pf = m <= kSmallPrefetchMaxM ? small_prefetch_b<V> : 0;
    int64_t i = 0;
    auto rows = [&](auto rg, int pfi) {
        constexpr int RG = decltype(rg)::value;
        if constexpr (AHEAD_A == kAheadColumns)  // rows 1 apart, a constant: RG row strides spilled at 8 rows
            small_rows<V, RG, NV, K, FULL, false, kAheadColumns>(k, alpha, a + i, 1, csa, b, rsb, beta, c + i * rsc,
                                                                 rsc, last, pfi, sums.at(i, 0));
        else if constexpr (AHEAD_A == kAheadRows)  // elements 1 apart along a row, a constant
            small_rows<V, RG, NV, K, FULL, false, kAheadRows>(k, alpha, a + i * rsa, rsa, 1, b, rsb, beta, c + i * rsc,
                                                              rsc, last, pfi, sums.at(i, 0));
        else if (next)
            small_rows<V, RG, NV, K, FULL, true>(k, alpha, a + i * rsa, rsa, csa, b, rsb, beta, c + i * rsc, rsc, last,
                                                 pfi, sums.at(i, 0), next);
        else
            small_rows<V, RG, NV, K, FULL>(k, alpha, a + i * rsa, rsa, csa, b, rsb, beta, c + i * rsc, rsc, last, pfi,
                                           sums.at(i, 0));
    };
    if constexpr (NV == 1) {
        for (; m - i >= 12 || m - i == 8; i += 8) rows(std::integral_constant<int, 8>{}, 0);
        // 5-11 rows left: in groups of 4-7, not with a group of 1-3 rows, whose one to three FMA
        // chains wait on the FMA's latency each k step as long as 4 chains take.
        if (m - i > 8) {
            rows(std::integral_constant<int, 4>{}, 0);
            i += 4;
        }
        switch (m - i) {
            case 5: return rows(std::integral_constant<int, 5>{}, 0);
            case 6: return rows(std::integral_constant<int, 6>{}, 0);
            case 7: return rows(std::integral_constant<int, 7>{}, 0);
            default: break;
        }
    }
    if constexpr (NV == 2 || (NV >= 3 && vector_regs<V> >= 7 * NV + 1))
        for (; m - i >= 12 || m - i == 6 || m - i == 9 || m - i == 10; i += 6)
            rows(std::integral_constant<int, 6>{}, 0);
    for (; i + 4 <= m; i += 4) rows(std::integral_constant<int, 4>{}, pf);
    switch (m - i) {
        case 3: return rows(std::integral_constant<int, 3>{}, pf);
        case 2: return rows(std::integral_constant<int, 2>{}, pf);
        case 1: return rows(std::integral_constant<int, 1>{}, pf);
        default: return;
    }
}

// Whether a pass's last `cols` columns go to half_tail: they end in a part of a vector that fits
// half-width registers, alone, or after whole vectors where half_tails() says a pass of its own
// pays (a masked whole vector costs it an FMA of twice the width).
template <typename V>
bool to_half_tail(int64_t cols) {
    const int64_t part = cols % V::W;
    return has_half<V> && part != 0 && part <= HalfOf<V>::type::W && (cols < V::W || half_tails());
}

// The last columns of a pass, `whole` (< PV) whole vectors and then `part` columns that fit a
// half-width vector: those in HalfOf<V>'s registers, not a masked full vector (Zen 4 runs two
// 256-bit FMAs a cycle and one 512-bit one, so 20 float32 columns cost 1.5 vectors, not 2).
template <typename V, int PV>
void half_tail(int64_t whole, int64_t part, int64_t m, int64_t k, typename V::T alpha, const typename V::T* a,
               int64_t rsa, int64_t csa, const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c,
               int64_t rsc, const SmallSums<typename V::T>& sums, NextItem* next) {
    using H = typename HalfOf<V>::type;
    auto full = [&](auto nv) {
        small_panel<V, decltype(nv)::value, 0, true>(m, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc, typename V::mask{},
                                                     sums, next);
    };
    switch (whole) {
        case 0: break;
        case 1: full(std::integral_constant<int, 1>{}); break;
        case 2: full(std::integral_constant<int, 2 <= PV ? 2 : 1>{}); break;
        default: full(std::integral_constant<int, 3 <= PV ? 3 : 1>{}); break;
    }
    const int64_t j = whole * V::W;
    small_panel<H, 1, 0, false>(m, k, alpha, a, rsa, csa, b + j, rsb, beta, c + j, rsc, H::lanes(int(part)),
                                sums.at(0, j), next);
}

// The elements from p to the first vector boundary past it (0 on one, or for a p not on an
// element boundary).
template <typename V>
int64_t vector_head(const typename V::T* p) {
    constexpr int64_t eb = sizeof(typename V::T);
    const auto addr = reinterpret_cast<uintptr_t>(p);
    return addr % eb == 0 ? (V::W - int64_t(addr / eb) % V::W) % V::W : 0;
}

// Products of k <= kShortKMax over a C wider than a panel: RG rows at a time sweep C's whole
// rows (A's RG x k elements broadcast once, then k loads of B and RG x k FMAs a vector of C),
// where the panels would write C a panel of every row at a time: with k this short a vector of
// C costs a store against k FMAs, and C's rows, past L1, are best written in order. Each
// element sums over p in order from zero and finishes as small_rows does: the same bits. Stacks
// past kShortKStackBytes keep the panels and their prefetch of the next item. See
// docs/DESIGN.md, "Small products".
template <typename V, int RG, int K>
void short_k_rows(int64_t n, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
                  const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W;
    R av[RG][K];
#pragma GCC unroll 4
    for (int r = 0; r < RG; ++r)
#pragma GCC unroll 8
        for (int p = 0; p < K; ++p) av[r][p] = V::set1(a[r * rsa + p * csa]);
    const R va = V::set1(alpha), vb = V::set1(beta);
    auto sweep = [&](auto scaled) {
        auto vec = [&](int64_t j, auto full, typename V::mask mk) {
            auto load = [&](const T* p) { return decltype(full)::value ? V::loadu(p) : V::maskz_loadu(mk, p); };
            R bv[K];
#pragma GCC unroll 8
            for (int p = 0; p < K; ++p) bv[p] = load(b + p * rsb + j);
#pragma GCC unroll 4
            for (int r = 0; r < RG; ++r) {
                R x = V::zero();
#pragma GCC unroll 8
                for (int p = 0; p < K; ++p) x = V::fmadd(av[r][p], bv[p], x);
                if (decltype(scaled)::value) x = V::mul(x, va);
                T* cr = c + r * rsc + j;
                if (beta != T(0)) x = V::fmadd(vb, load(cr), x);
                if (decltype(full)::value) V::storeu(cr, x);
                else V::mask_storeu(cr, mk, x);
            }
        };
        // The columns before C's first vector boundary in one masked vector, so that the full
        // vectors store within a line each (and load so from a B at C's offset, as NumPy's
        // arrays are): 512-bit stores across two lines cost an Intel Xeon 2.7x the time.
        int64_t j = std::min(n, vector_head<V>(c));
        if (j > 0) vec(0, std::false_type{}, V::lanes(int(j)));
        for (; j + W <= n; j += W) vec(j, std::true_type{}, typename V::mask{});
        if (j < n) vec(j, std::false_type{}, V::lanes(int(n - j)));
    };
    if (alpha == T(1)) sweep(std::false_type{});
    else sweep(std::true_type{});
}

// Rows a group for K: RG x K broadcasts, K B vectors, an accumulator, alpha and beta within the
// register file, at most 4.
template <typename V>
constexpr int short_k_group(int K) {
    int rg = 4;
    while (rg > 1 && rg * K + K + 3 > vector_regs<V>) --rg;
    return rg;
}

// short_k takes a C wider than a panel of PV vectors with k <= kShortKMax. A group of one row
// (AVX2's 16 registers from k = 5) loads k B vectors for every vector of C its row writes, where
// the panels load one for four rows: such products only for C's rows from this many bytes, over
// which the panels' pass down the rows a panel at a time costs more (Zen 3, 1 thread, fastgemm /
// NumPy short_k -> panels: float32 1000 x 20 x 8 0.61 -> 1.16, 1000 x 200 x 8 0.93-0.98 ->
// 1.20-1.37, float64 1000 x 40 x 5 1.17-1.22 -> 1.48-1.58; 1000 x 300 x 5 1.38-1.66 -> 1.20,
// float64 1000 x 1000 x 8 1.08-1.16 -> 0.98).
constexpr int64_t kShortKOneRowMinBytes = 1024;
template <typename V, int PV>
constexpr bool short_k_takes(int64_t n, int64_t k) {
    return n > PV * V::W && k <= kShortKMax &&
           (short_k_group<V>(int(k)) > 1 || n * int64_t(sizeof(typename V::T)) >= kShortKOneRowMinBytes);
}

// The rows of C apart that short_k groups: rows that many 64-byte vectors' worth of lines apart
// share their offset in a line, so every row of a group stores its full vectors within lines
// from the same head. Rows a whole number of vectors apart, a C within L1 (up to
// kShortKRowStrideMinBytes, where a split store cost less than the shorter groups: float32 50 x
// 70 x 3 1.86x -> 1.67x NumPy) and 32-byte vectors (a store crosses a line at most every other
// time; not measured) keep consecutive rows (1). Intel Xeon (session 43), 1 thread, fastgemm /
// NumPy consecutive -> rows apart: float64 130 x 700 x 5 0.81 -> 1.20, 130 x 700 x 6 0.96 ->
// 1.25, 300 x 300 x 7 1.10 -> 1.24, float32 130 x 700 x 5 0.83 -> 1.24; against a row at a time
// for k <= 4 (session 42): float64 130 x 700 x 4 1.21 -> 1.40, float32 3000 x 130 x 3 0.58 ->
// 0.92, 1000 x 130 x 2 1.48 -> 1.43.
constexpr int64_t kShortKRowStrideMinBytes = 48 * 1024;
template <typename V>
int64_t short_k_row_stride(int64_t m, int64_t n, int64_t rsc) {
    constexpr int64_t eb = sizeof(typename V::T), vb = V::W * eb;
    if (vb != 64 || m * n * eb <= kShortKRowStrideMinBytes) return 1;
    return vb / std::gcd(vb, rsc * eb);
}

// short_k_rows over m rows, k <= kShortKMax, in groups of up to RG rows short_k_row_stride
// apart. Each row group sweeping all of a B past L1 read its k rows from L2 again (k loads a
// vector of C): blocks of columns keep B in L1 for all the groups. Intel Xeon (session 42), 1
// thread, fastgemm / NumPy whole rows -> 16 KiB blocks past 32 KiB of B (32 KiB blocks past 64:
// less): float64 20 x 3000 x 8 0.68 -> 0.94, 20 x 3000 x 6 1.01 -> 1.17, 200 x 1000 x 5 1.46 ->
// 1.61, float32 20 x 3000 x 8 0.77 -> 1.03, 200 x 3000 x 8 0.92 -> 1.33; 300 x 300 x 7, 1000 x
// 1000 x 7 and 3000 x 3000 x 3 within the noise.
constexpr int64_t kShortKBlockBytes = 16 * 1024;
template <typename V>
void short_k(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
             const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc) {
    with_rows<kShortKMax>(k, [&](auto kc) {
        constexpr int K = decltype(kc)::value;
        constexpr int RG = short_k_group<V>(K);
        constexpr int64_t eb = sizeof(typename V::T);
        const int64_t block = K * n * eb > kShortKBlockPastBytes
                                  ? std::max<int64_t>(V::W, kShortKBlockBytes / (K * eb) / V::W * V::W)
                                  : n;
        // A group's block t starts t blocks past its rows' head (at or past t * block): the first
        // block also takes short_k_rows' head, so that the later ones start on C's vector
        // boundaries.
        const int64_t st = short_k_row_stride<V>(m, n, rsc);
        for (int64_t t = 0; t * block < n; ++t)
            for (int64_t i0 = 0; i0 < m; i0 += RG * st)
                for (int64_t i = i0; i < std::min(m, i0 + st); ++i) {
                    const int64_t head = std::min(n, vector_head<V>(c + i * rsc));
                    const int64_t from = t == 0 ? 0 : std::min(n, head + t * block);
                    const int64_t to = std::min(n, head + (t + 1) * block);
                    if (from == to) continue;
                    const int64_t rows = (std::min(m, i0 + RG * st) - i + st - 1) / st;
                    with_rows<RG>(rows, [&](auto rg) {
                        short_k_rows<V, decltype(rg)::value, K>(to - from, alpha, a + i * rsa, st * rsa, csa, b + from,
                                                                rsb, beta, c + i * rsc + from, st * rsc);
                    });
                }
    });
}

// Any m x n x k in one pass over k: panels of PV vectors (PV is per ISA: a row group of
// small_panel x PV vectors of accumulators, plus the PV B vectors, must fit the register
// file), the last one as narrow as it can be.
template <typename V, int PV>
void small_pass(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
                const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc,
                const SmallSums<typename V::T>& sums, NextItem* next, bool rows_ahead = false) {
    static_assert(PV >= 1 && PV <= 4, "one case per panel width");
    constexpr int W = V::W;
    if (!next && short_k_takes<V, PV>(n, k) && !sums.from && !sums.to)
        return short_k<V>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc);
    // A panel NV vectors wide at column j0 (FULL: no masks, `last` unread), A prefetched ahead
    // where small_ahead_a says so for this pass, or along its rows where `rows_ahead` (the whole
    // product's A, of which a k chunk may be a pass) says so; never with a next item to prefetch.
    const int ahead_a = next                                                            ? kAheadNone
                        : small_ahead_a<typename V::T>(m, k, rsa, csa) == kAheadColumns ? kAheadColumns
                        : rows_ahead                                                    ? kAheadRows
                                                                                        : kAheadNone;
    auto panel_at = [&](auto nv, auto full, int64_t j0, typename V::mask last) {
        constexpr int NV = decltype(nv)::value;
        constexpr bool FULL = decltype(full)::value;
        if (ahead_a == kAheadColumns)
            small_panel<V, NV, 0, FULL, kAheadColumns>(m, k, alpha, a, rsa, csa, b + j0, rsb, beta, c + j0, rsc, last,
                                                       sums.at(0, j0));
        else if (ahead_a == kAheadRows)
            small_panel<V, NV, 0, FULL, kAheadRows>(m, k, alpha, a, rsa, csa, b + j0, rsb, beta, c + j0, rsc, last,
                                                    sums.at(0, j0));
        else
            small_panel<V, NV, 0, FULL>(m, k, alpha, a, rsa, csa, b + j0, rsb, beta, c + j0, rsc, last, sums.at(0, j0),
                                        next);
    };
    int64_t j = 0;
    for (; j + PV * W <= n; j += PV * W)
        panel_at(std::integral_constant<int, PV>{}, std::true_type{}, j, typename V::mask{});
    if (j == n) return;
    if constexpr (has_half<V>)
        if (to_half_tail<V>(n - j))
            return half_tail<V, PV>((n - j) / W, (n - j) % W, m, k, alpha, a, rsa, csa, b + j, rsb, beta, c + j, rsc,
                                    sums.at(0, j), next);
    // A last panel of whole vectors (a B chunk of run_small_chunks, 16 or 48 columns of
    // float64) goes without masks, as the full panels do.
    auto panel = [&](auto nv) {
        const typename V::mask last = V::lanes(int(n - j - (decltype(nv)::value - 1) * W));
        if ((n - j) % W == 0) panel_at(nv, std::true_type{}, j, last);
        else panel_at(nv, std::false_type{}, j, last);
    };
    switch ((n - j + W - 1) / W) {
        case 1: return panel(std::integral_constant<int, 1>{});
        case 2: return panel(std::integral_constant<int, 2 <= PV ? 2 : 1>{});
        case 3: return panel(std::integral_constant<int, 3 <= PV ? 3 : 1>{});
        default: return panel(std::integral_constant<int, PV>{});
    }
}

// A B that small_chunks_b chunks (kernel.hpp), for a C that small_one_pass does not take:
// every row group of a block of C's rows goes through a k chunk of B before the next, so each
// group rereads the chunk from L1, where in one pass it would reread all of B from L2 or beyond
// while A's rows stream past. The block's raw sums wait on the stack between chunks
// (kSmallSumsBytes: 32 rows or more, as B's rows are at most kSmallChunkBytes / kSmallChunkMinK
// bytes). See docs/DESIGN.md, "Small products".
constexpr int64_t kSmallSumsBytes = 16 * 1024;

// Any m x n x k: small_pass, over all of k or in k chunks; next as small_rows'.
template <typename V, int PV>
void small_ahead(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
                 const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc,
                 NextItem* next) {
    using T = typename V::T;
    const int64_t row_bytes = n * int64_t(sizeof(T));
    const bool rows_ahead = small_ahead_a<T>(m, k, rsa, csa) == kAheadRows;
    if (!small_chunks_b(row_bytes, k) || small_one_pass(m, n, PV * V::W, sizeof(T)))
        return small_pass<V, PV>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc, {}, next, rows_ahead);
    constexpr int64_t sums_elems = kSmallSumsBytes / int64_t(sizeof(T));
    alignas(64) T sums[sums_elems];
    // Rows of whole vectors: the partial panel's sums need no masks (microcoded stores on AMD).
    const int64_t rs = (n + V::W - 1) / V::W * V::W;
    const int64_t depth = kSmallChunkBytes / row_bytes, block = sums_elems / rs;
    for (int64_t i = 0; i < m; i += block) {
        const int64_t rows = std::min(block, m - i);
        for (int64_t p = 0; p < k; p += depth) {
            const int64_t d = std::min(depth, k - p);
            const SmallSums<T> s{p == 0 ? nullptr : sums, p + d < k ? sums : nullptr, rs};
            small_pass<V, PV>(rows, n, d, alpha, a + i * rsa + p * csa, rsa, csa, b + p * rsb, rsb, beta, c + i * rsc,
                              rsc, s, next, rows_ahead);
        }
    }
}

template <typename V, int PV>
void small(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa,
           const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc) {
    small_ahead<V, PV>(m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc, nullptr);
}

// An N x N x N product fixed at compile time, N a multiple of the vector width, rows of A
// contiguous: whole vectors, no masks, k unrolled with constant offsets; panels of up to PV
// vectors, rows in groups that keep 8 accumulators live, 16 for panels of 2-4 512-bit vectors
// from N = 32 (32 registers; a 16^3 group of 8 x 2 ends its 16 k steps in 16 stores and ran
// 5-18% slower than 4 x 2 on Zen 4; see docs/DESIGN.md, "Small products"). Always inlined:
// stack_items passes constant strides for items stored whole, which become immediate offsets
// only when inlined (a build where GCC stopped inlining it ran float64 8^3 items at 40%). TC:
// the product is C^T, beta 0, and C (rows rsc apart) gets it transposed, W rows of C^T at a
// time (transposed_rows), panels wide enough for 8 accumulators.
template <typename V, int N, int PV, bool TC = false>
[[gnu::always_inline]] inline void square_fixed(typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t,
                                                const typename V::T* b, int64_t rsb, typename V::T beta,
                                                typename V::T* c, int64_t rsc, NextItem* next) {
    constexpr int W = V::W;
    static_assert(N % W == 0, "whole vectors only");
    constexpr int WIDE = N / W < PV ? N / W : PV;
    constexpr int NV = TC ? std::min(std::max(1, 8 / W), WIDE) : WIDE;
    constexpr int ACC = W * int(sizeof(typename V::T)) == 64 && NV >= 2 && N >= 32 ? 16 : 8;
    constexpr int RG = TC ? W : ACC / NV < N ? (ACC / NV > 0 ? ACC / NV : 1) : N;
    static_assert(N % (NV * W) == 0 && N % RG == 0, "the panels and row groups tile the product");
    // Only k unrolls: unrolled panels and row groups of a 32^3 product outgrow the L1
    // instruction cache.
#pragma GCC unroll 1
    for (int j = 0; j < N; j += NV * W)
#pragma GCC unroll 1
        for (int i = 0; i < N; i += RG) {
            if constexpr (TC) {
                if (next)
                    transposed_rows<V, RG, NV, N, true, true>(N, alpha, a + i * rsa, rsa, b + j, rsb, c + j * rsc + i,
                                                              rsc, typename V::mask{}, W, next);
                else
                    transposed_rows<V, RG, NV, N, true>(N, alpha, a + i * rsa, rsa, b + j, rsb, c + j * rsc + i, rsc,
                                                        typename V::mask{}, W);
            } else if (next) {
                small_rows<V, RG, NV, N, true, true>(N, alpha, a + i * rsa, rsa, 1, b + j, rsb, beta, c + i * rsc + j,
                                                     rsc, typename V::mask{}, 0, {}, next);
            } else {
                small_rows<V, RG, NV, N, true>(N, alpha, a + i * rsa, rsa, 1, b + j, rsb, beta, c + i * rsc + j, rsc,
                                               typename V::mask{});
            }
        }
}

// A tiny N x N x N product narrower than one vector, in scalar code the compiler unrolls whole
// (fused multiply-adds in the same order as the vector kernels, so the same result).
// Templated on V like every kernel template (the ISA files' copies must not share a symbol).
template <typename V, int N>
void square_tiny(typename V::T alpha, const typename V::T* a, int64_t rsa, int64_t csa, const typename V::T* b,
                 int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc) {
    using T = typename V::T;
    T acc[N][N] = {};
    for (int p = 0; p < N; ++p)
        for (int i = 0; i < N; ++i)
            for (int j = 0; j < N; ++j) acc[i][j] = std::fma(a[i * rsa + p * csa], b[p * rsb + j], acc[i][j]);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            T& cij = c[i * rsc + j];
            cij = beta == T(0) ? alpha * acc[i][j] : std::fma(beta, cij, alpha * acc[i][j]);
        }
}

// Whether a stack's items get the next item's lines prefetched: from kStackAheadBytes of A, B
// and C, and then only when B is wider than one panel of PanelCols columns, or k reaches
// kStackAheadMinK and a row of B spans 3 lines or a row of A more than 4. Smaller items lost to
// the extra instructions (float64 3000 x 12^3) or gained nothing; one panel over a short k reads
// its rows as a few sequential streams the hardware follows, and prefetching cost float64
// 20^3-28^3 and 12 x 24 x 24 items 10-35%, float32 items with B rows of 1-2 lines 4-20% and
// float64 16 x 16 x 32 10%. See docs/DESIGN.md, "Small products".
constexpr int64_t kStackAheadBytes = 8 * 1024;
constexpr int64_t kStackAheadMinK = 32;
constexpr int64_t kStackAheadRowB = 192, kStackAheadRowA = 256;
template <int PanelCols, typename T>
constexpr bool stack_ahead(int64_t m, int64_t n, int64_t k) {
    constexpr int64_t size = int64_t(sizeof(T));
    return (m * k + k * n + m * n) * size >= kStackAheadBytes &&
           (n > PanelCols || (k >= kStackAheadMinK && (n * size >= kStackAheadRowB || k * size > kStackAheadRowA)));
}

// The bytes a run's items span: A, B and C of every item, an operand broadcast over the run
// (stride 0) once.
template <typename T>
constexpr int64_t stack_bytes(const StackRun& s, int64_t m, int64_t n, int64_t k) {
    auto span = [&](int64_t stride, int64_t elems) { return (stride != 0 ? s.count : 1) * elems; };
    return (span(s.sa, m * k) + span(s.sb, k * n) + s.count * m * n) * int64_t(sizeof(T));
}

// Stacks of short_k items (short_k_takes) up to this many bytes sweep each item's C rows as a
// single product does, without the next item's prefetch: in cache the sweep won, from memory the
// panels and that prefetch did (see docs/DESIGN.md, "Small products").
constexpr int64_t kShortKStackBytes = int64_t(8) << 20;

// product(a, b, c, next) and then after(a, b, c) for each item of a run, next the lines of the
// item after it to prefetch, or null (the last item, items stack_ahead leaves to the hardware,
// or every item when not `prefetch`). Each row group takes `per` lines a k step, set from the
// steps the previous item took (the same for every item) so that the lines are spread over the
// whole item.
template <int PanelCols, typename T, typename F, typename After>
inline void each_item(const StackRun& s, int64_t m, int64_t n, int64_t k, const T* a, int64_t rsa, int64_t csa,
                      const T* b, int64_t rsb, T* c, int64_t rsc, F product, After after, bool prefetch = true,
                      bool c_transposed = false) {
    const bool ahead = prefetch && s.next_ahead && stack_ahead<PanelCols, T>(m, n, k);
    int per = 1;
    for (int64_t i = 0; i < s.count; ++i, a += s.sa, b += s.sb, c += s.sc) {
        if (!ahead || i + 1 == s.count) {
            product(a, b, c, nullptr);
            after(a, b, c);
            continue;
        }
        NextItem next;
        next.per = per;
        // An operand broadcast over the stack (stride 0) is already in cache.
        if (s.sb != 0) next.add(0, b + s.sb, k, n, rsb, 1);
        if (s.sa != 0) next.add(1, a + s.sa, m, k, rsa, csa);
        next.add(2, c + s.sc, c_transposed ? n : m, c_transposed ? m : n, rsc, 1);
        const int64_t lines = next.lines();
        product(a, b, c, &next);
        after(a, b, c);
        if (next.steps > 0) per = int(std::clamp<int64_t>((lines + next.steps - 1) / next.steps, 1, 4));
    }
}

// One item's last `tail` columns as dot products (the caller's small_tail_dots): B's columns
// copied along k onto the stack (tail x k within kTailDotsBytes), then the dot kernel, as gemm
// computes them for the single product.
template <typename V>
void item_tail(int64_t m, int64_t k, int64_t tail, typename V::T alpha, const typename V::T* a, int64_t rsa,
               const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c, int64_t rsc) {
    alignas(64) typename V::T bt[kTailDotsBytes / sizeof(typename V::T)];
    copy_columns<V>(tail, k, b, rsb, bt, k);
    dots<V>(tail, m, k, alpha, bt, k, a, rsa, beta, c, 1, rsc);
}

// One item's last `tail` columns (at most kTailColumnsMax) with A stored by columns (rows 1
// apart, column p at a + p * csa), down A's columns: MV vectors of C's rows at a time, each k
// step MV vectors of A's column times one element of B (at b + p * rsb + j * csb) a column,
// where the small kernels spend a half-width vector a row and k step on them (the caller's
// small_tail_columns). Each element sums its k products in order from zero and finishes as
// small_rows does: the same bits.
template <typename V>
void column_tail(int64_t m, int64_t k, int64_t tail, typename V::T alpha, const typename V::T* a, int64_t csa,
                 const typename V::T* b, int64_t rsb, int64_t csb, typename V::T beta, typename V::T* c, int64_t rsc) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int W = V::W;
    // MV x kTailColumnsMax accumulators, MV vectors of A and a broadcast within the registers.
    constexpr int MV = vector_regs<V> >= 32 ? 4 : 2;
    const R va = V::set1(alpha), vb = V::set1(beta);
    for (int64_t i0 = 0; i0 < m; i0 += MV * W) {
        const int64_t rows = std::min<int64_t>(MV * W, m - i0);
        const typename V::mask last = V::lanes(int(rows - (rows - 1) / W * W));
        with_rows<MV>((rows + W - 1) / W, [&](auto nv) {
            constexpr int NV = decltype(nv)::value;
            auto load = [&](const T* p, int v) __attribute__((always_inline)) {
                return v + 1 < NV ? V::loadu(p + v * W) : V::maskz_loadu(last, p + v * W);
            };
            with_rows<kTailColumnsMax>(tail, [&](auto tc) {
                constexpr int TC = decltype(tc)::value;
                R acc[TC][NV];
#pragma GCC unroll 4
                for (int j = 0; j < TC; ++j)
#pragma GCC unroll 4
                    for (int v = 0; v < NV; ++v) acc[j][v] = V::zero();
                for (int64_t p = 0; p < k; ++p) {
                    R av[NV];
#pragma GCC unroll 4
                    for (int v = 0; v < NV; ++v) av[v] = load(a + i0 + p * csa, v);
#pragma GCC unroll 4
                    for (int j = 0; j < TC; ++j) {
                        const R bj = V::set1(b[p * rsb + j * csb]);
#pragma GCC unroll 4
                        for (int v = 0; v < NV; ++v) acc[j][v] = V::fmadd(av[v], bj, acc[j][v]);
                    }
                }
                // C's column j, rows i0 .. i0 + rows, through a buffer (rsc apart in C).
                alignas(64) T col[MV * W];
#pragma GCC unroll 4
                for (int j = 0; j < TC; ++j) {
                    T* cj = c + i0 * rsc + j;
                    if (beta != T(0))
                        for (int64_t l = 0; l < rows; ++l) col[l] = cj[l * rsc];
#pragma GCC unroll 4
                    for (int v = 0; v < NV; ++v) {
                        R x = alpha == T(1) ? acc[j][v] : V::mul(acc[j][v], va);
                        if (beta != T(0)) x = V::fmadd(vb, load(col, v), x);
                        V::storeu(col + v * W, x);
                    }
                    for (int64_t l = 0; l < rows; ++l) cj[l * rsc] = col[l];
                }
            });
        });
    }
}

// each_item over a run of N x N x N items with rows of A contiguous, as product(a, rsa, b, rsb, c,
// rsc, next): items stored whole (every row stride N, the usual contiguous stack) get the
// strides as constants, so each load and store of an inlined product is an immediate offset
// from the item's base.
template <int N, int PanelCols, typename T, typename F, typename After>
[[gnu::always_inline]] inline void each_square(const StackRun& s, const T* a, int64_t rsa, const T* b, int64_t rsb,
                                               T* c, int64_t rsc, F product, After after) {
    using Fixed = std::integral_constant<int64_t, N>;
    if (rsa == N && rsb == N && rsc == N)
        return each_item<PanelCols>(
            s, N, N, N, a, N, 1, b, N, c, N,
            [&](const T* ai, const T* bi, T* ci, NextItem* nx) { product(ai, Fixed{}, bi, Fixed{}, ci, Fixed{}, nx); },
            after);
    each_item<PanelCols>(
        s, N, N, N, a, rsa, 1, b, rsb, c, rsc,
        [&](const T* ai, const T* bi, T* ci, NextItem* nx) { product(ai, rsa, bi, rsb, ci, rsc, nx); }, after);
}

// 32^3 items with rows of more than 4 vectors (AVX2 float64: 8) take the fixed kernel only in
// stacks up to this many bytes: past them the panels ran faster (Zen 3, 1 thread, fixed ->
// panels, GFLOP/s: float64 1000 x 32^3 14.6-17.7 -> 21.5-23.7, x NumPy 200 items 1.54-1.74 ->
// 1.34-1.36; the cause not pinned down).
constexpr int64_t kFixedLongRowsStackBytes = int64_t(8) << 20;

// A run of same-shaped small products (a stack, or one axis of it): the shape is decided once,
// not per item, and the square sizes stacks are made of get a kernel fixed at compile time.
// after(a, b, c) runs on each item right after it (the tail's dots).
template <typename V, int PV, typename After>
void stack_items(const StackRun& s, int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a,
                 int64_t rsa, int64_t csa, const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c,
                 int64_t rsc, After after) {
    using T = typename V::T;
    constexpr int W = V::W;
    using H = typename HalfOf<V>::type;
    auto tiny = [&](auto sq) {
        constexpr int N = decltype(sq)::value;
        each_square<N, PV * W>(
            s, a, rsa, b, rsb, c, rsc,
            [&](const T* ai, auto ra, const T* bi, auto rb, T* ci, auto rc, NextItem*) {
                square_tiny<V, N>(alpha, ai, ra, 1, bi, rb, beta, ci, rc);
            },
            after);
    };
    auto fixed = [&](auto sq, auto u) {
        constexpr int N = decltype(sq)::value;
        using U = typename decltype(u)::type;
        each_square<N, PV * W>(
            s, a, rsa, b, rsb, c, rsc,
            [&](const T* ai, auto ra, const T* bi, auto rb, T* ci, auto rc, NextItem* nx) {
                square_fixed<U, N, PV>(alpha, ai, ra, 1, bi, rb, beta, ci, rc, nx);
            },
            after);
    };
    if (m == n && n == k && csa == 1) {
        switch (n) {
            case 2:
                if constexpr (W > 2) return tiny(std::integral_constant<int, 2>{});
                break;
            case 3:
                if constexpr (W > 3) return tiny(std::integral_constant<int, 3>{});
                break;
            case 4:
                if constexpr (4 % W == 0) return fixed(std::integral_constant<int, 4>{}, Tag<V>{});
                else if constexpr (4 % H::W == 0) return fixed(std::integral_constant<int, 4>{}, Tag<H>{});
                else return tiny(std::integral_constant<int, 4>{});
            case 8:
                if constexpr (8 % W == 0) return fixed(std::integral_constant<int, 8>{}, Tag<V>{});
                else if constexpr (8 % H::W == 0) return fixed(std::integral_constant<int, 8>{}, Tag<H>{});
                break;
            case 16:
                if constexpr (16 % W == 0) return fixed(std::integral_constant<int, 16>{}, Tag<V>{});
                break;
            case 32:
                if constexpr (32 % W == 0)
                    if (32 / W <= 4 || stack_bytes<T>(s, 32, 32, 32) <= kFixedLongRowsStackBytes)
                        return fixed(std::integral_constant<int, 32>{}, Tag<V>{});
                break;
            default: break;
        }
    }
    // Items of one panel (n up to PV vectors, B not chunked): the panel's width and masks are
    // decided once for the run, and each item is one small_panel call.
    if (n <= PV * W && !small_chunks_b(n * int64_t(sizeof(T)), k)) {
        if constexpr (has_half<V>) {
            if (to_half_tail<V>(n))
                return each_item<PV * W>(
                    s, m, n, k, a, rsa, csa, b, rsb, c, rsc,
                    [&](const T* ai, const T* bi, T* ci, NextItem* nx) {
                        half_tail<V, PV>(n / W, n % W, m, k, alpha, ai, rsa, csa, bi, rsb, beta, ci, rsc, {}, nx);
                    },
                    after);
        }
        auto panels = [&](auto nv, auto full) {
            constexpr int NV = decltype(nv)::value;
            const typename V::mask last = V::lanes(int(n - (NV - 1) * W));
            // Items whose A small_ahead_a prefetches: their own lines, not the next item's.
            auto ahead = [&](auto mode) {
                each_item<PV * W>(
                    s, m, n, k, a, rsa, csa, b, rsb, c, rsc,
                    [&](const T* ai, const T* bi, T* ci, NextItem*) {
                        small_panel<V, NV, 0, decltype(full)::value, decltype(mode)::value>(
                            m, k, alpha, ai, rsa, csa, bi, rsb, beta, ci, rsc, last);
                    },
                    after);
            };
            switch (small_ahead_a<T>(m, k, rsa, csa)) {
                case kAheadColumns: return ahead(std::integral_constant<int, kAheadColumns>{});
                case kAheadRows: return ahead(std::integral_constant<int, kAheadRows>{});
                default: break;
            }
            each_item<PV * W>(
                s, m, n, k, a, rsa, csa, b, rsb, c, rsc,
                [&](const T* ai, const T* bi, T* ci, NextItem* nx) {
                    small_panel<V, NV, 0, decltype(full)::value>(m, k, alpha, ai, rsa, csa, bi, rsb, beta, ci, rsc,
                                                                 last, {}, nx);
                },
                after);
        };
        auto width = [&](auto nv) {
            if (n % W == 0) panels(nv, std::true_type{});
            else panels(nv, std::false_type{});
        };
        switch ((n + W - 1) / W) {
            case 1: return width(std::integral_constant<int, 1>{});
            case 2:
                if constexpr (PV >= 2) return width(std::integral_constant<int, 2>{});
                break;
            case 3:
                if constexpr (PV >= 3) return width(std::integral_constant<int, 3>{});
                break;
            case 4:
                if constexpr (PV >= 4) return width(std::integral_constant<int, 4>{});
                break;
            default: break;
        }
    }
    // A run of short_k items within kShortKStackBytes goes without the next item's prefetch, so
    // small_pass sweeps each item as it does a single product.
    const bool short_k_in_cache = short_k_takes<V, PV>(n, k) && stack_bytes<T>(s, m, n, k) <= kShortKStackBytes;
    each_item<PV * W>(
        s, m, n, k, a, rsa, csa, b, rsb, c, rsc,
        [&](const T* ai, const T* bi, T* ci, NextItem* nx) {
            small_ahead<V, PV>(m, n, k, alpha, ai, rsa, csa, bi, rsb, beta, ci, rsc, nx);
        },
        after, !short_k_in_cache);
}

// stack_items on a run, the last `tail` columns of each item as item_tail's dot products (A's
// rows contiguous) or down A's columns (column_tail: A stored by columns, rows 1 apart).
template <typename V, int PV>
void small_stack(const StackRun& s, int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a,
                 int64_t rsa, int64_t csa, const typename V::T* b, int64_t rsb, typename V::T beta, typename V::T* c,
                 int64_t rsc, int64_t tail) {
    using T = typename V::T;
    if (tail == 0)
        return stack_items<V, PV>(s, m, n, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc, [](const T*, const T*, T*) {});
    const int64_t j0 = n - tail;
    auto tail_of = [&](const T* ai, const T* bi, T* ci) {
        if (csa == 1) item_tail<V>(m, k, tail, alpha, ai, rsa, bi + j0, rsb, beta, ci + j0, rsc);
        else column_tail<V>(m, k, tail, alpha, ai, csa, bi + j0, rsb, 1, beta, ci + j0, rsc);
    };
    if (j0 == 0) {  // a C narrower than a vector: all of it as the tail
        for (int64_t i = 0; i < s.count; ++i, a += s.sa, b += s.sb, c += s.sc) tail_of(a, b, c);
        return;
    }
    stack_items<V, PV>(s, m, j0, k, alpha, a, rsa, csa, b, rsb, beta, c, rsc, tail_of);
}

// An N x N matrix stored by columns (cs apart) copied row-major into dst (rows ld apart):
// copy_columns with N fixed, each W x W block transposed in registers (the general
// copy_columns kept its pointers on the stack: 30% of a float32 16^3 stack of C^T items).
template <typename V, int N>
[[gnu::always_inline]] inline void transpose_square(const typename V::T* src, int64_t cs, typename V::T* dst,
                                                    int64_t ld) {
    constexpr int W = V::W;
#pragma GCC unroll 1
    for (int j = 0; j < N; j += W)
#pragma GCC unroll 1
        for (int i = 0; i < N; i += W) transpose_block<V>(src + j * cs + i, cs, dst + i * ld + j, ld);
}

// The squares with kernels fixed in size for moves by columns: f(N, Tag<U>) where n is as wide
// as V's half-width vector (U = the half) or W, 2W or 4W (U = V), U with a register transpose
// of at most MaxW lanes; false where n is none of them.
template <typename V, int MaxW, typename F>
bool with_fixed_square(int64_t n, F f) {
    constexpr int W = V::W;
    using H = typename HalfOf<V>::type;
    auto take = [&](auto sq, auto u) {
        if (n != decltype(sq)::value) return false;
        f(sq, u);
        return true;
    };
    if constexpr (has_half<V> && has_transpose<H> && H::W <= MaxW)
        if (take(std::integral_constant<int, H::W>{}, Tag<H>{})) return true;
    if constexpr (has_transpose<V> && W <= MaxW)
        return take(std::integral_constant<int, W>{}, Tag<V>{}) ||
               take(std::integral_constant<int, 2 * W>{}, Tag<V>{}) ||
               take(std::integral_constant<int, 4 * W>{}, Tag<V>{});
    return false;
}

// copy(src, cs, dst, ld): copy_columns of a rows x cols matrix, transpose_square's fixed
// kernels where it is a fixed square (float32 10000 x 8^3 x.T @ W.T items: copy_columns' lane
// picks took 2/3 of the time).
template <typename V, typename F>
void with_column_copy(int64_t rows, int64_t cols, F f) {
    using T = typename V::T;
    if (rows == cols && with_fixed_square<V, V::W>(rows, [&](auto sq, auto u) {
            constexpr int N = decltype(sq)::value;
            using U = typename decltype(u)::type;
            f([](const T* s, int64_t cs, T* d, int64_t ld) { transpose_square<U, N>(s, cs, d, ld); });
        }))
        return;
    f([rows, cols](const T* s, int64_t cs, T* d, int64_t ld) { copy_columns<V>(rows, cols, s, cs, d, ld); });
}

// From what k a table's x.T @ W.T stack items (beta 0) all go to small_stack_c_cols and are
// written there straight from registers (transposed_product), not through t:
// V::kTransposedMinK where the ISA file measured one, else 0 (only items with m <= k, through
// t). See docs/DESIGN.md, "Operands stored by columns".
template <typename V, typename = void>
constexpr int64_t transposed_min_k = 0;
template <typename V>
constexpr int64_t transposed_min_k<V, std::void_t<decltype(V::kTransposedMinK)>> = V::kTransposedMinK;

// An m x n C^T = B^T A^T (beta 0) written to C transposed, no scratch: C^T's rows W at a time,
// then the m % W left in one narrower group, each group sweeping C^T's columns in panels of
// vectors: NV for whole groups (W rows x NV vectors: 16 accumulators where there are 32
// registers, 8 where 16), up to kTransposedFewRowsPanel for groups of at most W / 2 rows, which
// would otherwise hold too few accumulators to cover the FMA's latency (one row's 2 chains ran
// a quarter of float64 49 x 9 x 34 for 1/9 of its work). next as small_rows'.
constexpr int kTransposedFewRowsPanel = 4;

template <typename V>
void transposed_product(int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a, int64_t rsa,
                        const typename V::T* b, int64_t rsb, typename V::T* c, int64_t rsc, NextItem* next) {
    constexpr int W = V::W;
    static_assert(has_transpose<V> && W <= 8, "8 x 8 blocks at most (16 lanes spill: see small_stack_c_cols)");
    constexpr int NV = std::max(1, (vector_regs<V> >= 32 ? 16 : 8) / W);
    // Rows [i, i + RG) of C^T over all its columns, panels of P vectors, the last one narrower.
    auto sweep = [&](int64_t i, auto rg, auto pv) {
        constexpr int RG = decltype(rg)::value, P = decltype(pv)::value;
        const typename V::T* ai = a + i * rsa;
        auto panel = [&](int64_t j, auto nv, auto full, typename V::mask last, int rows_last) {
            constexpr int Q = decltype(nv)::value;
            constexpr bool FULL = decltype(full)::value;
            typename V::T* ci = c + j * rsc + i;
            if (next)
                transposed_rows<V, RG, Q, 0, FULL, true>(k, alpha, ai, rsa, b + j, rsb, ci, rsc, last, rows_last, next);
            else transposed_rows<V, RG, Q, 0, FULL>(k, alpha, ai, rsa, b + j, rsb, ci, rsc, last, rows_last);
        };
        int64_t j = 0;
        for (; j + P * W <= n; j += P * W)
            panel(j, std::integral_constant<int, P>{}, std::true_type{}, typename V::mask{}, W);
        if (j == n) return;
        const int tail = int((n - j - 1) % W) + 1;
        with_rows<P>((n - j + W - 1) / W, [&](auto nv) {
            if (tail == W) panel(j, nv, std::true_type{}, typename V::mask{}, W);
            else panel(j, nv, std::false_type{}, V::lanes(tail), tail);
        });
    };
    int64_t i = 0;
    for (; i + W <= m; i += W) sweep(i, std::integral_constant<int, W>{}, std::integral_constant<int, NV>{});
    if (i < m)
        with_rows<W>(m - i, [&](auto rg) {
            constexpr int P = 2 * decltype(rg)::value <= W ? std::max(NV, kTransposedFewRowsPanel) : NV;
            sweep(i, rg, std::integral_constant<int, P>{});
        });
}

// Runs of small products with B or C stored by columns (x @ W.T, x.T @ W.T stacks), the moves
// decided once for the run instead of by gemm per item (float32 1000 x 16^3 x.T @ W.T items
// copied item by item ran at 0.68x NumPy). t: scratch for one item's B (k x n, n rounded up to
// whole vectors) or C (m x n).
// small_stack_b_cols: column j of an item's B at b + j * csb, contiguous; each item's B copied
// row-major into t before it (the previous item's `after` copies the next one's), but for its
// last `tail` columns, which go down A's columns (column_tail, A stored by columns) reading B
// in place.
template <typename V, int PV>
void small_stack_b_cols(const StackRun& s, int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a,
                        int64_t rsa, int64_t csa, const typename V::T* b, int64_t csb, typename V::T beta,
                        typename V::T* c, int64_t rsc, typename V::T* t, int64_t tail) {
    using T = typename V::T;
    constexpr int W = V::W;
    const int64_t j0 = n - tail;
    // Rows of t in whole vectors where B's copy ends in over half of one past the first
    // (copy_columns' WHOLE; at most half, the half-width transposes waste less): the small
    // kernels still load that part masked, so the padding is never read.
    const bool whole = has_transpose<V> && j0 > W && 2 * (j0 % W) > W;
    const int64_t ldt = whole ? (j0 + W - 1) / W * W : j0;
    auto run = [&](auto copy) {
        // Item i's B copied into t, then the next item's prefetched into L2: each copy is the
        // first read of its item's B, and from L3 it waited on the lines (float64 512 x (13 x 13
        // x 64) q @ k.T: the copy's loads its hottest instructions).
        auto take = [&](int64_t i) {
            copy(b + i * s.sb, csb, t, ldt);
            if (s.sb == 0 || i + 1 == s.count) return;
            for (int64_t j = 0; j < j0; ++j) {
                const T* col = b + (i + 1) * s.sb + j * csb;
                for (int64_t p = 0; p < k; p += 64 / int64_t(sizeof(T))) __builtin_prefetch(col + p, 0, 2);
                __builtin_prefetch(col + k - 1, 0, 2);
            }
        };
        take(0);
        int64_t i = 0;
        stack_items<V, PV>(StackRun{s.count, s.sa, 0, s.sc, s.next_ahead}, m, j0, k, alpha, a, rsa, csa, t, ldt, beta,
                           c, rsc, [&](const T* ai, const T*, T* ci) {
                               if (tail)
                                   column_tail<V>(m, k, tail, alpha, ai, csa, b + i * s.sb + j0 * csb, 1, csb, beta,
                                                  ci + j0, rsc);
                               if (++i < s.count && s.sb != 0) take(i);
                           });
    };
    if (whole)
        run([&](const T* src, int64_t cs, T* dst, int64_t ld) { copy_columns<V, true>(k, j0, src, cs, dst, ld); });
    else with_column_copy<V>(k, j0, run);
}

// small_stack_c_cols: column j of an item's C at c + j * csc, contiguous, rows of A and B
// contiguous, beta 0: each item's C computed row-major into t, then transposed into place.
template <typename V, int PV>
void small_stack_c_cols(const StackRun& s, int64_t m, int64_t n, int64_t k, typename V::T alpha, const typename V::T* a,
                        int64_t rsa, const typename V::T* b, int64_t rsb, typename V::T* c, int64_t csc,
                        typename V::T* t) {
    using T = typename V::T;
    auto squares = [&](auto sq, auto u) {
        constexpr int N = decltype(sq)::value;
        using U = typename decltype(u)::type;
        each_square<N, PV * V::W>(
            s, a, rsa, b, rsb, c, csc,
            [&](const T* ai, auto ra, const T* bi, auto rb, T* ci, auto rc, NextItem* nx) {
                square_fixed<U, N, PV, true>(alpha, ai, ra, 1, bi, rb, T(0), ci, rc, nx);
            },
            [](const T*, const T*, T*) {});
    };
    // C^T's blocks in registers of up to 8 lanes: 16 (float32 in 512-bit registers) make 16
    // accumulators and a 16-register transpose, which spilled (float32 4096 x 16^3 x.T @ W.T
    // items 1.31 -> 0.62x NumPy).
    if (m == n && n == k && with_fixed_square<V, 8>(n, squares)) return;
    if constexpr (transposed_min_k<V> > 0)
        return each_item<PV * V::W>(
            s, m, n, k, a, rsa, 1, b, rsb, c, csc,
            [&](const T* ai, const T* bi, T* ci, NextItem* nx) {
                transposed_product<V>(m, n, k, alpha, ai, rsa, bi, rsb, ci, csc, nx);
            },
            [](const T*, const T*, T*) {}, true, true);
    with_column_copy<V>(n, m, [&](auto copy) {
        T* ci = c;
        stack_items<V, PV>(StackRun{s.count, s.sa, s.sb, 0, s.next_ahead}, m, n, k, alpha, a, rsa, 1, b, rsb, T(0), t,
                           n, [&](const T*, const T*, T*) {
                               copy(t, n, ci, csc);
                               ci += s.sc;
                           });
    });
}

}  // namespace kernels
}  // namespace fastgemm
