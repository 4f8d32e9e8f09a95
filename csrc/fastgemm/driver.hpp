// The five loops around the microkernel.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

#include "blocking.hpp"
#include "caches.hpp"
#include "epilogue.hpp"
#include "kernel.hpp"
#include "packed.hpp"
#include "scratch.hpp"
#include "threading.hpp"
#include "view.hpp"

namespace fastgemm {

// C = alpha * A @ B + beta * C for m, n, k >= 1 and alpha != 0, on `threads` threads.
// C with unit column stride is written by the microkernel directly; any other C goes
// through a register-tile bounce buffer. direct_b (B row-major, unit column stride): the
// microkernel reads full-width slivers of B in place instead of packing them. direct_a (taken
// only for an A stored by columns): each tile reads its rows' piece of every column of A in
// place, A is not packed. Never splits k, so the result is bitwise the same for any thread
// count. `ep` runs on each tile after its last k block, while the tile is still in L1.
template <typename T>
void run_blocked(const KernelTable<T>& uk, const Blocking& bs, int threads, bool direct_b, bool direct_a, T alpha,
                 View<const T> a, View<const T> b, T beta, View<T> c, const Epilogue<T>& ep = {});

// Packers from A and B's storage type S into slivers of the table's type T (S == T: the
// table's own; S a 2-byte float: LowpTable's, which widen while packing).
template <typename S, typename T>
struct Packers {
    void (*pack_a)(int64_t mc, int64_t kc, const S* a, int64_t rsa, int64_t csa, T* ap);
    void (*pack_b)(int64_t kc, int64_t nc, const S* b, int64_t rsb, int64_t csb, T* bp, int64_t s0, int64_t s1);
};

// run_blocked with A and B stored as S and packed by `pk` into T slivers (B always packed),
// accumulated and written in T: the same five loops, tiles, thread grid and determinism.
template <typename S, typename T>
void run_blocked_packed(const KernelTable<T>& uk, Packers<S, T> pk, const Blocking& bs, int threads, T alpha,
                        View<const S> a, View<const S> b, T beta, View<T> c, const Epilogue<T>& ep = {});

// run_blocked_packed for bfloat16 on a dot-product instruction: A and B packed as pairs along k
// by pk's packers, pk's tiles; bs.kc counts elements of k (even, so slices hold whole pairs).
void run_blocked_pairs(const PairKernels& pk, const Blocking& bs, int threads, float alpha, View<const bfloat16_t> a,
                       View<const bfloat16_t> b, float beta, View<float> c, const Epilogue<float>& ep = {});

// run_blocked with B's panels taken from a PackedB packed for uk (the main tile of B's kernel
// set): five_loops with FromPacked (no pack_b, no barrier). bs.mc: A's row block.
template <typename T>
void run_blocked_prepacked(const KernelTable<T>& uk, const Blocking& bs, int threads, T alpha, View<const T> a,
                           const PackedB<T>& b, T beta, View<T> c, const Epilogue<T>& ep = {});

// How `threads` threads split one macro-kernel: tm groups along M (each its own A blocks),
// tn along the NR slivers of the shared B panel. Split M while every group still gets a few
// MR slivers (balanced to within ~25%), N for the rest.
struct Grid {
    int tm, tn;
};

inline Grid make_grid(int threads, int64_t m, int mr) {
    const int64_t slivers = ceil_div(m, mr);
    int tm = threads;
    while (tm > 1 && (threads % tm != 0 || slivers < 4 * int64_t(tm))) --tm;
    return {tm, threads / tm};
}

// Tile t of the `tiles` = ceil(mc / MR) tiles of an mc-row block: its first row and its height,
// the heights as equal as can be. An edge tile of 1 or 2 rows holds too few accumulators to hide
// the FMA's latency, so 8 rows run as 4 + 4, not 6 + 2; see docs/DESIGN.md, "Tile heights".
inline std::pair<int64_t, int> tile_rows(int64_t mc, int64_t tiles, int64_t t) {
    const int64_t base = mc / tiles, extra = mc % tiles;
    return {t * base + std::min(t, extra), int(base + (t < extra))};
}

// The five loops around the microkernel for any kind of packed product P (floating point in
// driver.cpp, int8 in gemm_int8.cpp), m, n, k >= 1. P provides:
//   mr, nr                    its register tile;
//   k_align                   k slices (all but the last) are multiples of it;
//   a_sliver(kc), b_sliver(kc)  bytes of one packed A / B sliver kc deep;
//   in_place(nc)              how many leading NR slivers of an nc-wide panel tile() reads from B itself;
//   pack_b(jc, nc, pc, kc, bp, s0, s1)  slivers [s0, s1) of B's kc x nc panel at (pc, jc) into bp;
//   pack_a(ic, mc, pc, kc, ap)  A's mc x kc block at (ic, pc) into ap;
//   tile(ap, bp, in_place, i, j, mr, nr, pc, kc)  the mr x nr tile of C at (i, j) for the k slice
//     [pc, pc + kc) from a packed A sliver and a packed (or in-place) B sliver;
//   prepacked                 (constexpr) false, or true for a FromPacked<P>: B's panels are read
//     from its store, blocked as the store is (no pack_b, no barrier: B is only read), and
//     threads split C alone, B's columns first (each streams its own part of B).
// Never splits k, so the result is bitwise the same for any thread count.
template <typename P>
void five_loops(const P& p, const Blocking& bs, int threads, int64_t m, int64_t n, int64_t k) {
    const int MR = p.mr, NR = p.nr;
    // A thread without an MR x NR tile of C would only wait at the barriers.
    threads = int(std::min<int64_t>(threads, ceil_div(m, MR) * ceil_div(n, NR)));

    // Even splits: no thin tail block in k, n or m.
    int64_t kc_max = 0, nc_max = 0;
    if constexpr (P::prepacked) kc_max = p.store.kc(), nc_max = p.store.nc();
    else kc_max = even_block(k, bs.kc, p.k_align), nc_max = even_block(n, bs.nc, NR);
    auto grid_for = [&](int team) {
        if constexpr (P::prepacked) {
            const Grid g = make_grid(team, n, NR);  // make_grid splits its first dimension first: here n
            return Grid{g.tn, g.tm};
        } else if (m <= bs.mc && ceil_div(n, int64_t(NR)) >= 4 * int64_t(team) &&
                   double(m) * double(n) * double(k) <= kContendedMaxWork) {
            // One block of rows and a few B slivers a thread: threads split the slivers, each
            // packing its own (b_by_group). Rows taken as threads come free matter only next to a
            // spinning pool or on a busy machine, where a product this small runs on one thread;
            // see docs/DESIGN.md, "B packed as the tiles use it".
            return Grid{1, team};
        } else {
            return make_grid(team, m, MR);
        }
    };
    const Grid grid = grid_for(threads);
    const int64_t m_slivers = ceil_div(m, MR);
    // Largest A block any thread packs (each thread cuts its rows into blocks in `work`).
    const int64_t mc_max = std::min(bs.mc, m_slivers * MR);

    // B slivers a row of tiles sweeps together: a quarter of L2, beside A's block.
    const int64_t group_bytes = int64_t(caches().l2.size) / 4;
    // Rows of one block and each thread its own slivers (threads split N): each thread packs a
    // group of its slivers into its own buffer right before the tiles that read them, so the
    // packed B stays in L2 (a panel packed whole went through L3 and back: with 20 rows of C,
    // float64, packing took 43% of the time) and no thread waits for another. See
    // docs/DESIGN.md, "B packed as the tiles use it".
    // A group reads each of B's rows in runs of group_bytes / KC bytes. Runs under 1 KiB (256
    // bytes on Zen 3's 512 KiB L2) read a B past a quarter of L3 slower than the panel's whole
    // rows do, which costs more than the panel's trip through L3 (16 x 2048 x 2048 float64 0.76-0.83x
    // NumPy by group, 0.89-0.91x by panel); see docs/DESIGN.md, "B packed as the tiles use it".
    const double b_all_bytes = double(k) * double(n) * double(p.b_sliver(kc_max)) / double(NR * kc_max);
    const bool short_runs = group_bytes / kc_max < 1024 && b_all_bytes > double(caches().l3.size) / 4;
    const bool b_by_group = !P::prepacked && grid.tm == 1 && m <= bs.mc && p.in_place(nc_max) == 0 && !short_runs;
    // A panel of at most 4 slivers to pack: each thread packs all of it into its own buffer
    // instead of a share into one. Shared, the others waited while one packed a lone sliver and
    // then read it from that core's cache, and it wrote over lines the others held, every call
    // (pack_b took 5x its one-thread time); see docs/DESIGN.md, "B packed by each thread".
    constexpr int64_t kOwnPanelSlivers = 4;
    const bool b_own =
        !P::prepacked && !b_by_group && threads > 1 && nc_max / NR - p.in_place(nc_max) <= kOwnPanelSlivers;
    const int64_t b_bytes = P::prepacked ? 0
                            : b_by_group ? round_up(std::max(group_bytes, p.b_sliver(kc_max)), 64)
                                         : round_up(nc_max / NR * p.b_sliver(kc_max), 64);
    const int64_t b_buffers = b_by_group || b_own ? threads : 1;
    const int64_t a_bytes = round_up(ceil_div(mc_max, MR) * p.a_sliver(kc_max), 64);
    char* scratch = static_cast<char*>(thread_scratch(size_t(b_bytes * b_buffers + a_bytes * threads)));

    // A team splitting M takes its work piece by piece as its threads come free instead of in
    // equal shares: the packing of wide B panels in pieces of 8 slivers, and each panel's tiles as
    // items of a block of rows by a part of the slivers, at least 4 items a thread (a team of few
    // rows, split along B's slivers, keeps computing on the slivers it packed). A thread slowed by
    // another process on its CPU (another library's spinning workers, a busy machine) then
    // leaves its pieces to the others rather than holding them at the barrier; see
    // docs/DESIGN.md, "Threads on a busy machine". Each tile is still one thread's whole: the
    // result does not change.
    constexpr int64_t kPackPiece = 8, kItemsPerThread = 4, kMinPartSlivers = 4;
    const int64_t k_steps = ceil_div(k, kc_max), panels = ceil_div(n, nc_max) * k_steps;
    // Row blocks of equal height, at most MC, a whole number of them for each row group of the
    // static grid (so a quiet machine splits the rows as before).
    const int64_t block_rows = round_up(ceil_div(m, round_up(ceil_div(m, mc_max), int64_t(grid.tm))), MR);
    const int64_t blocks = ceil_div(m, block_rows);
    std::unique_ptr<std::atomic<int64_t>[]> next_item, next_pack;
    if (!P::prepacked && threads > 1 && grid.tn == 1) {
        next_item.reset(new std::atomic<int64_t>[size_t(panels)]());
        next_pack.reset(new std::atomic<int64_t>[size_t(panels)]());
    }

    // One thread's share of the five loops; `team` threads run it together.
    auto work = [&](int tid, int team) {
        // The pool may give fewer threads than asked: re-derive the grid from the team.
        const Grid g = b_by_group ? Grid{1, team} : team == threads ? grid : grid_for(team);
        const bool pieces = next_item && team > 1 && g.tn == 1;
        const int gm = tid / g.tn, gn = tid % g.tn;
        // This thread's rows: an equal share of MR slivers, cut into equal blocks of at most
        // MC (dealt round-robin, MC blocks left one thread a short block behind).
        const int64_t r0 = std::min(m, m_slivers * gm / g.tm * MR);
        const int64_t r1 = std::min(m, m_slivers * (gm + 1) / g.tm * MR);
        const int64_t mc_t = r1 > r0 ? round_up(ceil_div(r1 - r0, ceil_div(r1 - r0, mc_max)), MR) : MR;
        char* ap = scratch + b_bytes * b_buffers + a_bytes * tid;
        char* own_b = scratch + b_bytes * tid;  // this thread's B buffer (b_by_group, b_own)

        for (int64_t jc = 0; jc < n; jc += nc_max) {
            const int64_t nc = std::min(nc_max, n - jc);
            const int64_t slivers = ceil_div(nc, NR);
            const int64_t s_lo = slivers * gn / g.tn, s_hi = slivers * (gn + 1) / g.tn;
            if constexpr (P::prepacked)
                if (s_lo == s_hi || r0 == r1) continue;  // nothing to do here, no barrier to meet
            const int64_t in_place = p.in_place(nc);     // slivers read from B itself
            const int64_t packed = slivers - in_place;
            for (int64_t pc = 0; pc < k; pc += kc_max) {
                const int64_t kc = std::min(kc_max, k - pc);
                const int64_t a_sl = p.a_sliver(kc), b_sl = p.b_sliver(kc);
                const int64_t panel = jc / nc_max * k_steps + pc / kc_max;
                const char* bp = scratch;
                if constexpr (P::prepacked) {
                    bp = p.store.panel_bytes(pc, jc);
                } else if (b_own) {
                    p.pack_b(jc, nc, pc, kc, own_b, in_place, slivers);
                    bp = own_b;
                } else if (!b_by_group) {
                    if (pieces && packed >= 4 * kPackPiece * team)
                        for (int64_t s0;
                             (s0 = next_pack[panel].fetch_add(kPackPiece, std::memory_order_relaxed)) < packed;)
                            p.pack_b(jc, nc, pc, kc, scratch, in_place + s0,
                                     in_place + std::min(packed, s0 + kPackPiece));
                    else
                        p.pack_b(jc, nc, pc, kc, scratch, in_place + packed * tid / team,
                                 in_place + packed * (tid + 1) / team);
                    if (team > 1) team_barrier();
                }
                // A's block of rows [ic, ic + mc) at ap, one sliver per tile (tile_rows).
                auto pack_block = [&](int64_t ic, int64_t mc) {
                    if (mc % MR == 0) return p.pack_a(ic, mc, pc, kc, ap);
                    for (int64_t t = 0, tiles = ceil_div(mc, MR); t < tiles; ++t) {
                        const auto [r, h] = tile_rows(mc, tiles, t);
                        p.pack_a(ic + r, h, pc, kc, ap + t * a_sl);
                    }
                };
                // The tiles of rows [ic, ic + mc) and slivers [s0, s1) from A's block packed at ap
                // and B's slivers from `first` on at bsl: slivers in groups whose B stays in L2, each
                // group a row of tiles at a time, so C is written along its rows (a tile's rows per
                // sliver across the block made a k = 3 product write C at half the speed); see
                // docs/DESIGN.md, "Tile order".
                const int64_t group = std::max<int64_t>(1, group_bytes / b_sl);
                auto sweep = [&](int64_t ic, int64_t mc, int64_t s0, int64_t s1, const char* bsl, int64_t first) {
                    const int64_t tiles = ceil_div(mc, MR);
                    for (int64_t g0 = s0; g0 < s1; g0 += group)
                        for (int64_t t = 0; t < tiles; ++t) {
                            const auto [r, h] = tile_rows(mc, tiles, t);
                            for (int64_t s = g0; s < std::min(s1, g0 + group); ++s) {
                                const int64_t jr = s * NR;
                                const int nr = int(std::min<int64_t>(NR, nc - jr));
                                p.tile(ap + t * a_sl, bsl + (s - first) * b_sl, s < in_place, ic + r, jc + jr, h, nr,
                                       pc, kc);
                            }
                        }
                };
                if (b_by_group) {
                    if (s_lo == s_hi) continue;
                    pack_block(r0, r1 - r0);
                    for (int64_t g0 = s_lo; g0 < s_hi; g0 += group) {
                        const int64_t g1 = std::min(s_hi, g0 + group);
                        p.pack_b(jc + g0 * NR, std::min(nc - g0 * NR, (g1 - g0) * NR), pc, kc, own_b, 0, g1 - g0);
                        sweep(r0, r1 - r0, g0, g1, own_b, g0);
                    }
                    continue;
                }
                if (pieces) {
                    const int64_t parts = std::clamp(ceil_div(kItemsPerThread * team, blocks), int64_t(1),
                                                     std::max<int64_t>(1, slivers / kMinPartSlivers));
                    int64_t packed_block = -1;
                    for (int64_t u; (u = next_item[panel].fetch_add(1, std::memory_order_relaxed)) < blocks * parts;) {
                        const int64_t blk = u / parts, part = u % parts, ic = blk * block_rows;
                        const int64_t mc = std::min(block_rows, m - ic);
                        if (blk != packed_block) pack_block(ic, mc), packed_block = blk;
                        sweep(ic, mc, slivers * part / parts, slivers * (part + 1) / parts, bp, 0);
                    }
                } else {
                    for (int64_t ic = r0; ic < r1; ic += mc_t) {
                        const int64_t mc = std::min(mc_t, r1 - ic);
                        pack_block(ic, mc);
                        sweep(ic, mc, s_lo, s_hi, bp, 0);
                    }
                }
                // The B panel is repacked next round: everyone must be done reading it. Each
                // thread's own panel needs that only when the next k slice's tiles may go to
                // another thread (pieces).
                if constexpr (!P::prepacked)
                    if (team > 1 && (!b_own || (pieces && pc + kc < k))) team_barrier();
            }
        }
    };

    run_team(threads, work, double(m) * double(n) * double(k));
}

// Product P (FloatProduct, Int8Product) with B's panels read from `store`, packed beforehand
// by P's pack_b for P's tile (a PackedB, a PackedInt8B): see five_loops.
template <typename P>
struct FromPacked : P {
    static constexpr bool prepacked = true;
    const PackedPanels& store;
    int64_t in_place(int64_t) const { return 0; }
    int64_t b_sliver(int64_t kc) const { return store.sliver_bytes(kc); }
};

}  // namespace fastgemm
