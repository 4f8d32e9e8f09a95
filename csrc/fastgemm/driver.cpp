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
void bounce_tile(const Tab& uk, int64_t kc, T alpha, const T* ap, int64_t lda, const T* bp, int64_t ldb, T beta, T* c,
                 int64_t rsc, int64_t csc, int m, int n, const Epilogue<T>* ep) {
    alignas(64) T tile[kMaxTile];
    tile_for(uk.tiles[m], n, uk.lanes)(kc, alpha, ap, lda, bp, ldb, T(0), tile, uk.nr, n);
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
    bool direct_a;  // S == T, A stored by columns: each tile reads its rows' piece of A's columns in place
    T alpha, beta;
    View<const S> a, b;
    View<T> c;
    const Epilogue<T>& ep;
    int mr = uk.mr, nr = uk.nr;
    int64_t k_align = k_per_slot(uk);  // k slices of whole slots
    static constexpr bool prepacked = false;

    int64_t a_sliver(int64_t kc) const { return mr * ceil_div(kc, k_align) * int64_t(sizeof(T)); }
    int64_t b_sliver(int64_t kc) const { return nr * ceil_div(kc, k_align) * int64_t(sizeof(T)); }
    int64_t in_place(int64_t nc) const { return direct_b ? nc / nr : 0; }
    void pack_b(int64_t jc, int64_t nc, int64_t pc, int64_t kc, char* bp, int64_t s0, int64_t s1) const {
        pk.pack_b(kc, nc, b.data + pc * b.rs + jc * b.cs, b.rs, b.cs, reinterpret_cast<T*>(bp), s0, s1);
    }
    void pack_a(int64_t ic, int64_t mc, int64_t pc, int64_t kc, char* ap) const {
        if (direct_a) return;
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
        if constexpr (std::is_same_v<S, T>)
            if (direct_a) as = a.data + i + pc * a.cs;
        const int64_t lda = direct_a ? a.cs : mr;
        T* cij = c.data + i * c.rs + j * c.cs;
        const bool last = pc + kc == a.cols && ep.active();
        const Epilogue<T> tile_ep = last ? ep.from_column(j) : Epilogue<T>{};
        if (c.cs == 1) {
            tile_for(uk.tiles[m], n, uk.lanes)(ks, alpha, as, lda, bs, ldb, beta_pc, cij, c.rs, n);
            if (last) uk.epilogue(m, n, cij, c.rs, tile_ep.bias, tile_ep.act);
        } else {
            bounce_tile(uk, ks, alpha, as, lda, bs, ldb, beta_pc, cij, c.rs, c.cs, m, n, last ? &tile_ep : nullptr);
        }
    }
};

template <typename S, typename T, typename Tab>
void blocked(const Tab& uk, Packers<S, T> pk, const Blocking& bs, int threads, bool direct_b, bool direct_a, T alpha,
             View<const S> a, View<const S> b, T beta, View<T> c, const Epilogue<T>& ep) {
    five_loops(FloatProduct<S, T, Tab>{uk, pk, direct_b, direct_a, alpha, beta, a, b, c, ep}, bs, threads, c.rows,
               c.cols, a.cols);
}

}  // namespace

template <typename T>
void run_blocked(const KernelTable<T>& uk, const Blocking& bs, int threads, bool direct_b, bool direct_a, T alpha,
                 View<const T> a, View<const T> b, T beta, View<T> c, const Epilogue<T>& ep) {
    blocked<T, T>(uk, Packers<T, T>{uk.pack_a, uk.pack_b}, bs, threads, direct_b, direct_a && a.rs == 1, alpha, a, b,
                  beta, c, ep);
}

void run_blocked_pairs(const PairKernels& pk, const Blocking& bs, int threads, float alpha, View<const bfloat16_t> a,
                       View<const bfloat16_t> b, float beta, View<float> c, const Epilogue<float>& ep) {
    blocked<bfloat16_t, float>(pk, Packers<bfloat16_t, float>{pk.pack_a, pk.pack_b}, bs, threads, false, false, alpha,
                               a, b, beta, c, ep);
}

template <typename S, typename T>
void run_blocked_packed(const KernelTable<T>& uk, Packers<S, T> pk, const Blocking& bs, int threads, T alpha,
                        View<const S> a, View<const S> b, T beta, View<T> c, const Epilogue<T>& ep) {
    blocked<S, T>(uk, pk, bs, threads, false, false, alpha, a, b, beta, c, ep);
}

template void run_blocked<float>(const KernelTable<float>&, const Blocking&, int, bool, bool, float, View<const float>,
                                 View<const float>, float, View<float>, const Epilogue<float>&);
template void run_blocked<double>(const KernelTable<double>&, const Blocking&, int, bool, bool, double,
                                  View<const double>, View<const double>, double, View<double>,
                                  const Epilogue<double>&);

template void run_blocked_packed<bfloat16_t, float>(const KernelTable<float>&, Packers<bfloat16_t, float>,
                                                    const Blocking&, int, float, View<const bfloat16_t>,
                                                    View<const bfloat16_t>, float, View<float>, const Epilogue<float>&);
template void run_blocked_packed<float16_t, float>(const KernelTable<float>&, Packers<float16_t, float>,
                                                   const Blocking&, int, float, View<const float16_t>,
                                                   View<const float16_t>, float, View<float>, const Epilogue<float>&);

template <typename T>
void run_blocked_prepacked(const KernelTable<T>& uk, const Blocking& bs, int threads, T alpha, View<const T> a,
                           const PackedB<T>& b, T beta, View<T> c, const Epilogue<T>& ep) {
    const View<const T> no_b{nullptr, b.rows(), b.cols(), 0, 0};  // B is only read from b's panels
    const FloatProduct<T, T, KernelTable<T>> product{uk, {uk.pack_a, uk.pack_b}, false, false, alpha, beta, a, no_b, c,
                                                     ep};
    five_loops(FromPacked<FloatProduct<T, T, KernelTable<T>>>{product, b}, bs, threads, c.rows, c.cols, a.cols);
}

template void run_blocked_prepacked<float>(const KernelTable<float>&, const Blocking&, int, float, View<const float>,
                                           const PackedB<float>&, float, View<float>, const Epilogue<float>&);
template void run_blocked_prepacked<double>(const KernelTable<double>&, const Blocking&, int, double,
                                            View<const double>, const PackedB<double>&, double, View<double>,
                                            const Epilogue<double>&);

}  // namespace fastgemm
