#include "driver.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "packed.hpp"
#include "scratch.hpp"
#include "threading.hpp"

namespace fastgemm {
namespace {

constexpr int kMaxTile = kMaxMR * 64;  // largest MR x NR of any kernel

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

// A floating-point product for five_loops: A and B stored as S and packed into T by `pk`.
// direct_b (S == T only): full slivers of B are read in place. Tab: a KernelTable<T>, or
// PairKernels, whose slots hold two elements of k (a sliver then has ceil(kc / 2) slot steps).
// C with unit column stride is written by the microkernel directly; any other C goes through a
// register-tile bounce buffer. The first k slice applies beta, later ones accumulate; the last
// runs the epilogue on each tile while it is in L1.
template <typename S, typename T, typename Tab>
struct FloatProduct {
    const Tab& uk;
    Packers<S, T> pk;
    bool direct_b;
    T alpha, beta;
    View<const S> a, b;
    View<T> c;
    const Epilogue<T>& ep;
    int mr = uk.mr, nr = uk.nr;
    int64_t k_align = k_per_slot(uk);  // k slices of whole slots

    int64_t a_sliver(int64_t kc) const { return mr * ceil_div(kc, k_align) * int64_t(sizeof(T)); }
    int64_t b_sliver(int64_t kc) const { return nr * ceil_div(kc, k_align) * int64_t(sizeof(T)); }
    int64_t in_place(int64_t nc) const { return direct_b ? nc / nr : 0; }
    void pack_b(int64_t jc, int64_t nc, int64_t pc, int64_t kc, char* bp, int64_t s0, int64_t s1) const {
        pk.pack_b(kc, nc, b.data + pc * b.rs + jc * b.cs, b.rs, b.cs, reinterpret_cast<T*>(bp), s0, s1);
    }
    void pack_a(int64_t ic, int64_t mc, int64_t pc, int64_t kc, char* ap) const {
        pk.pack_a(mc, kc, a.data + ic * a.rs + pc * a.cs, a.rs, a.cs, reinterpret_cast<T*>(ap));
    }
    void tile(const char* ap, const char* bp, bool direct, int64_t i, int64_t j, int m, int n, int64_t pc,
              int64_t kc) const {
        const T beta_pc = pc == 0 ? beta : T(1);
        const int64_t ks = ceil_div(kc, k_align);  // slot steps of this slice's slivers
        const T* bs = reinterpret_cast<const T*>(bp);
        if constexpr (std::is_same_v<S, T>)
            if (direct) bs = b.data + pc * b.rs + j;
        const int64_t ldb = direct ? b.rs : nr;
        const T* as = reinterpret_cast<const T*>(ap);
        T* cij = c.data + i * c.rs + j * c.cs;
        const bool last = pc + kc == a.cols && ep.active();
        const Epilogue<T> tile_ep = last ? ep.from_column(j) : Epilogue<T>{};
        if (c.cs == 1) {
            uk.tiles[m].by_nv[(n + uk.lanes - 1) / uk.lanes](ks, alpha, as, mr, bs, ldb, beta_pc, cij, c.rs, n);
            if (last) uk.epilogue(m, n, cij, c.rs, tile_ep.bias, tile_ep.act);
        } else {
            bounce_tile(uk, ks, alpha, as, bs, ldb, beta_pc, cij, c.rs, c.cs, m, n, last ? &tile_ep : nullptr);
        }
    }
};

template <typename S, typename T, typename Tab>
void blocked(const Tab& uk, Packers<S, T> pk, const Blocking& bs, int threads, bool direct_b, T alpha, View<const S> a,
             View<const S> b, T beta, View<T> c, const Epilogue<T>& ep) {
    five_loops(FloatProduct<S, T, Tab>{uk, pk, direct_b, alpha, beta, a, b, c, ep}, bs, threads, c.rows, c.cols,
               a.cols);
}

}  // namespace

template <typename T>
void run_blocked(const KernelTable<T>& uk, const Blocking& bs, int threads, bool direct_b, T alpha, View<const T> a,
                 View<const T> b, T beta, View<T> c, const Epilogue<T>& ep) {
    blocked<T, T>(uk, Packers<T, T>{uk.pack_a, uk.pack_b}, bs, threads, direct_b, alpha, a, b, beta, c, ep);
}

void run_blocked_pairs(const PairKernels& pk, const Blocking& bs, int threads, float alpha, View<const bfloat16_t> a,
                       View<const bfloat16_t> b, float beta, View<float> c, const Epilogue<float>& ep) {
    blocked<bfloat16_t, float>(pk, Packers<bfloat16_t, float>{pk.pack_a, pk.pack_b}, bs, threads, false, alpha, a, b,
                               beta, c, ep);
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
    const int64_t a_bytes = round_up(b.kc() * mc_max * int64_t(sizeof(T)), 64);
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
