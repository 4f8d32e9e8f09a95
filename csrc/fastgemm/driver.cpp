#include "driver.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "packed.hpp"
#include "scratch.hpp"
#include "threading.hpp"

namespace fastgemm {
namespace {

int64_t align64(int64_t bytes) { return round_up(bytes, 64); }

constexpr int kMaxTile = kMaxMR * 64;  // largest MR x NR of any kernel

// How `threads` threads split one macro-kernel: tm groups along M (each its own A blocks),
// tn along the NR slivers of the shared B panel. Split M while every group still gets a few
// MR slivers (balanced to within ~25%), N for the rest.
struct Grid {
    int tm, tn;
};

Grid make_grid(int threads, int64_t m, int mr) {
    const int64_t slivers = ceil_div(m, mr);
    int tm = threads;
    while (tm > 1 && (threads % tm != 0 || slivers < 4 * int64_t(tm))) --tm;
    return {tm, threads / tm};
}

// Elements of k one packed slot holds: 1, or 2 for bfloat16 pairs (PairKernels).
template <typename T>
constexpr int64_t k_per_slot(const KernelTable<T>&) {
    return 1;
}
constexpr int64_t k_per_slot(const PairKernels&) { return 2; }

template <typename T, typename Tab>
void bounce_tile(const Tab& uk, int64_t kc, T alpha, const T* ap, const T* bp, int64_t ldb, T beta, T* c, int64_t rsc,
                 int64_t csc, int m, int n, const Epilogue<T>* ep) {
    alignas(64) T tile[kMaxTile];
    uk.tiles[m].by_nv[(n + uk.lanes - 1) / uk.lanes](kc, alpha, ap, uk.mr, bp, ldb, T(0), tile, uk.nr, n);
    if (ep) {  // the last k block: finish the tile in the buffer, then write it once
        if (beta != T(0))
            for (int i = 0; i < m; ++i)
                for (int j = 0; j < n; ++j) tile[i * uk.nr + j] += beta * c[i * rsc + j * csc];
        uk.epilogue(m, n, tile, uk.nr, ep->bias, ep->act);
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) c[i * rsc + j * csc] = tile[i * uk.nr + j];
        return;
    }
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            T& cij = c[i * rsc + j * csc];
            cij = beta == T(0) ? tile[i * uk.nr + j] : tile[i * uk.nr + j] + beta * cij;
        }
}

// The five loops, A and B stored as S and packed into T by `pk`. direct_b (S == T only): full
// slivers of B are read in place. Tab: a KernelTable<T>, or PairKernels, whose slots hold two
// elements of k (a sliver then has ceil(kc / 2) slot steps, each k slice but the last even).
template <typename S, typename T, typename Tab>
void blocked(const Tab& uk, Packers<S, T> pk, const Blocking& bs, int threads, bool direct_b, T alpha, View<const S> a,
             View<const S> b, T beta, View<T> c, const Epilogue<T>& ep) {
    const int MR = uk.mr, NR = uk.nr;
    const int64_t G = k_per_slot(uk);
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    // A thread without an MR x NR tile of C would only wait at the barriers.
    threads = int(std::min<int64_t>(threads, ceil_div(m, MR) * ceil_div(n, NR)));

    // Even splits: no thin tail block in k, n or m.
    const int64_t kc_max = round_up(ceil_div(k, ceil_div(k, bs.kc)), G);
    const int64_t nc_max = round_up(ceil_div(n, ceil_div(n, bs.nc)), NR);
    const Grid grid = make_grid(threads, m, MR);
    const int64_t m_slivers = ceil_div(m, MR);
    // Largest A block any thread packs (each thread cuts its rows into blocks in `work`).
    const int64_t mc_max = std::min(bs.mc, m_slivers * MR);

    const int64_t b_bytes = align64(kc_max / G * nc_max * int64_t(sizeof(T)));
    const int64_t a_bytes = align64(kc_max / G * mc_max * int64_t(sizeof(T)));
    char* scratch = static_cast<char*>(thread_scratch(size_t(b_bytes + a_bytes * threads)));
    T* bp = reinterpret_cast<T*>(scratch);
    const bool unit_cs = c.cs == 1;

    // One thread's share of the five loops; `team` threads run it together.
    auto work = [&](int tid, int team) {
        // The runtime may give fewer threads than asked: re-derive the grid from the team.
        const Grid g = team == threads ? grid : make_grid(team, m, MR);
        const int gm = tid / g.tn, gn = tid % g.tn;
        // This thread's rows: an equal share of MR slivers, cut into equal blocks of at most
        // MC (dealt round-robin, MC blocks left one thread a short block behind).
        const int64_t r0 = std::min(m, m_slivers * gm / g.tm * MR);
        const int64_t r1 = std::min(m, m_slivers * (gm + 1) / g.tm * MR);
        const int64_t mc_t = r1 > r0 ? round_up(ceil_div(r1 - r0, ceil_div(r1 - r0, mc_max)), MR) : MR;
        T* ap = reinterpret_cast<T*>(scratch + b_bytes + a_bytes * tid);

        for (int64_t jc = 0; jc < n; jc += nc_max) {
            const int64_t nc = std::min(nc_max, n - jc);
            const int64_t slivers = ceil_div(nc, NR);
            const int64_t in_place = direct_b ? nc / NR : 0;  // slivers read from B itself
            const int64_t packed = slivers - in_place;
            for (int64_t pc = 0; pc < k; pc += kc_max) {
                const int64_t kc = std::min(kc_max, k - pc);
                const int64_t ks = ceil_div(kc, G);  // slot steps of this slice's slivers
                const T beta_pc = pc == 0 ? beta : T(1);
                const Epilogue<T>* ep_pc = pc + kc == k && ep.active() ? &ep : nullptr;  // last k block
                const S* b_pc = b.data + pc * b.rs + jc * b.cs;
                pk.pack_b(kc, nc, b_pc, b.rs, b.cs, bp, in_place + packed * tid / team,
                          in_place + packed * (tid + 1) / team);
                if (team > 1) team_barrier();
                const int64_t s_lo = slivers * gn / g.tn, s_hi = slivers * (gn + 1) / g.tn;
                for (int64_t ic = r0; ic < r1; ic += mc_t) {
                    const int64_t mc = std::min(mc_t, r1 - ic);
                    pk.pack_a(mc, kc, a.data + ic * a.rs + pc * a.cs, a.rs, a.cs, ap);
                    for (int64_t s = s_lo; s < s_hi; ++s) {
                        const int64_t jr = s * NR;
                        const int nr = int(std::min<int64_t>(NR, nc - jr));
                        const bool b_direct = s < in_place;
                        const T* bs_ = bp + jr * ks;
                        if constexpr (std::is_same_v<S, T>)
                            if (b_direct) bs_ = b_pc + jr;
                        const int64_t ldb = b_direct ? b.rs : NR;
                        const int nv = (nr + uk.lanes - 1) / uk.lanes;  // vectors this sliver needs
                        for (int64_t ir = 0; ir < mc; ir += MR) {
                            const int mr = int(std::min<int64_t>(MR, mc - ir));
                            T* cij = c.data + (ic + ir) * c.rs + (jc + jr) * c.cs;
                            const Epilogue<T> tile_ep = ep_pc ? ep_pc->from_column(jc + jr) : Epilogue<T>{};
                            if (unit_cs) {
                                uk.tiles[mr].by_nv[nv](ks, alpha, ap + ir * ks, MR, bs_, ldb, beta_pc, cij, c.rs, nr);
                                if (ep_pc) uk.epilogue(mr, nr, cij, c.rs, tile_ep.bias, tile_ep.act);
                            } else {
                                bounce_tile(uk, ks, alpha, ap + ir * ks, bs_, ldb, beta_pc, cij, c.rs, c.cs, mr, nr,
                                            ep_pc ? &tile_ep : nullptr);
                            }
                        }
                    }
                }
                // The B panel is repacked next round: everyone must be done reading it.
                if (team > 1) team_barrier();
            }
        }
    };

    run_team(threads, work);
}

}  // namespace

template <typename T>
void run_blocked(const KernelTable<T>& uk, const Blocking& bs, int threads, bool direct_b, T alpha, View<const T> a,
                 View<const T> b, T beta, View<T> c, const Epilogue<T>& ep) {
    blocked<T, T>(uk, Packers<T, T>{uk.pack_a, uk.pack_b}, bs, threads, direct_b, alpha, a, b, beta, c, ep);
}

void run_blocked_pairs(const PairKernels& pk, const Blocking& bs, int threads, float alpha, View<const bfloat16_t> a,
                       View<const bfloat16_t> b, float beta, View<float> c) {
    blocked<bfloat16_t, float>(pk, Packers<bfloat16_t, float>{pk.pack_a, pk.pack_b}, bs, threads, false, alpha, a, b,
                               beta, c, Epilogue<float>{});
}

template <typename S, typename T>
void run_blocked_packed(const KernelTable<T>& uk, Packers<S, T> pk, const Blocking& bs, int threads, T alpha,
                        View<const S> a, View<const S> b, T beta, View<T> c, const Epilogue<T>& ep) {
    blocked<S, T>(uk, pk, bs, threads, false, alpha, a, b, beta, c, ep);
}

template void run_blocked<float>(const KernelTable<float>&, const Blocking&, int, bool, float, View<const float>,
                                 View<const float>, float, View<float>, const Epilogue<float>&);
template void run_blocked<double>(const KernelTable<double>&, const Blocking&, int, bool, double, View<const double>,
                                  View<const double>, double, View<double>, const Epilogue<double>&);

template void run_blocked_packed<bfloat16_t, float>(const KernelTable<float>&, Packers<bfloat16_t, float>,
                                                    const Blocking&, int, float, View<const bfloat16_t>,
                                                    View<const bfloat16_t>, float, View<float>, const Epilogue<float>&);
template void run_blocked_packed<float16_t, float>(const KernelTable<float>&, Packers<float16_t, float>,
                                                   const Blocking&, int, float, View<const float16_t>,
                                                   View<const float16_t>, float, View<float>, const Epilogue<float>&);

template <typename T>
void run_blocked_prepacked(const KernelTable<T>& uk, int64_t mc, int threads, T alpha, View<const T> a,
                           const PackedB<T>& b, T beta, View<T> c, const Epilogue<T>& ep) {
    const int MR = uk.mr, NR = uk.nr;
    const int64_t m = c.rows, n = c.cols, k = a.cols;
    threads = int(std::min<int64_t>(threads, ceil_div(m, MR) * ceil_div(n, NR)));
    // make_grid splits its first dimension first: here n, then m.
    auto grid_for = [&](int team) {
        const Grid g = make_grid(team, n, NR);
        return Grid{g.tn, g.tm};
    };
    const Grid grid = grid_for(threads);
    const int64_t m_slivers = ceil_div(m, MR);
    const int64_t mc_max = std::min(mc, m_slivers * MR);
    const int64_t a_bytes = align64(b.kc() * mc_max * int64_t(sizeof(T)));
    char* scratch = static_cast<char*>(thread_scratch(size_t(a_bytes * threads)));
    const bool unit_cs = c.cs == 1;

    auto work = [&](int tid, int team) {
        const Grid g = team == threads ? grid : grid_for(team);
        const int gm = tid / g.tn, gn = tid % g.tn;
        const int64_t r0 = std::min(m, m_slivers * gm / g.tm * MR);
        const int64_t r1 = std::min(m, m_slivers * (gm + 1) / g.tm * MR);
        const int64_t mc_t = r1 > r0 ? round_up(ceil_div(r1 - r0, ceil_div(r1 - r0, mc_max)), MR) : MR;
        T* ap = reinterpret_cast<T*>(scratch + a_bytes * tid);
        for (int64_t jc = 0; jc < n; jc += b.nc()) {
            const int64_t nc = std::min(b.nc(), n - jc);
            const int64_t slivers = ceil_div(nc, NR);
            const int64_t s_lo = slivers * gn / g.tn, s_hi = slivers * (gn + 1) / g.tn;
            if (s_lo == s_hi || r0 == r1) continue;
            for (int64_t pc = 0; pc < k; pc += b.kc()) {
                const int64_t kc = std::min(b.kc(), k - pc);
                const T beta_pc = pc == 0 ? beta : T(1);
                const Epilogue<T>* ep_pc = pc + kc == k && ep.active() ? &ep : nullptr;  // last k block
                const T* bp = b.panel(pc, jc);
                for (int64_t ic = r0; ic < r1; ic += mc_t) {
                    const int64_t mc_i = std::min(mc_t, r1 - ic);
                    uk.pack_a(mc_i, kc, a.data + ic * a.rs + pc * a.cs, a.rs, a.cs, ap);
                    for (int64_t s = s_lo; s < s_hi; ++s) {
                        const int64_t jr = s * NR;
                        const int nr = int(std::min<int64_t>(NR, nc - jr));
                        const int nv = (nr + uk.lanes - 1) / uk.lanes;
                        for (int64_t ir = 0; ir < mc_i; ir += MR) {
                            const int mr = int(std::min<int64_t>(MR, mc_i - ir));
                            T* cij = c.data + (ic + ir) * c.rs + (jc + jr) * c.cs;
                            const Epilogue<T> tile_ep = ep_pc ? ep_pc->from_column(jc + jr) : Epilogue<T>{};
                            if (unit_cs) {
                                uk.tiles[mr].by_nv[nv](kc, alpha, ap + ir * kc, MR, bp + jr * kc, NR, beta_pc, cij,
                                                       c.rs, nr);
                                if (ep_pc) uk.epilogue(mr, nr, cij, c.rs, tile_ep.bias, tile_ep.act);
                            } else {
                                bounce_tile(uk, kc, alpha, ap + ir * kc, bp + jr * kc, NR, beta_pc, cij, c.rs, c.cs, mr,
                                            nr, ep_pc ? &tile_ep : nullptr);
                            }
                        }
                    }
                }
            }
        }
    };
    run_team(threads, work);
}

template void run_blocked_prepacked<float>(const KernelTable<float>&, int64_t, int, float, View<const float>,
                                           const PackedB<float>&, float, View<float>, const Epilogue<float>&);
template void run_blocked_prepacked<double>(const KernelTable<double>&, int64_t, int, double, View<const double>,
                                            const PackedB<double>&, double, View<double>, const Epilogue<double>&);

}  // namespace fastgemm
