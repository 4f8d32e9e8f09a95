#include "driver.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace fastgemm {
namespace {

constexpr int kMaxTile = kMaxMR * 64;  // largest MR x NR of any kernel

template <typename T>
void bounce_tile(const KernelTable<T>& uk, int64_t kc, T alpha, const T* ap, const T* bp, int64_t ldb, T beta, T* c,
                 int64_t rsc, int64_t csc, int m, int n) {
    alignas(64) T tile[kMaxTile];
    uk.tiles[m].by_nv[(n + uk.lanes - 1) / uk.lanes](kc, alpha, ap, uk.mr, bp, ldb, T(0), tile, uk.nr, n);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            T& cij = c[i * rsc + j * csc];
            cij = beta == T(0) ? tile[i * uk.nr + j] : tile[i * uk.nr + j] + beta * cij;
        }
}

// A floating-point product for five_loops: A and B stored as S and packed into T by `pk`.
// direct_b (S == T only): full slivers of B are read in place. C with unit column stride is
// written by the microkernel directly; any other C goes through a register-tile bounce buffer.
// The first k slice applies beta, later ones accumulate.
template <typename S, typename T>
struct FloatProduct {
    const KernelTable<T>& uk;
    Packers<S, T> pk;
    bool direct_b;
    T alpha, beta;
    View<const S> a, b;
    View<T> c;
    int mr = uk.mr, nr = uk.nr;

    int64_t a_sliver(int64_t kc) const { return mr * kc * int64_t(sizeof(T)); }
    int64_t b_sliver(int64_t kc) const { return nr * kc * int64_t(sizeof(T)); }
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
        const T* bs = reinterpret_cast<const T*>(bp);
        if constexpr (std::is_same_v<S, T>)
            if (direct) bs = b.data + pc * b.rs + j;
        const int64_t ldb = direct ? b.rs : nr;
        const T* as = reinterpret_cast<const T*>(ap);
        T* cij = c.data + i * c.rs + j * c.cs;
        if (c.cs == 1)
            uk.tiles[m].by_nv[(n + uk.lanes - 1) / uk.lanes](kc, alpha, as, mr, bs, ldb, beta_pc, cij, c.rs, n);
        else bounce_tile(uk, kc, alpha, as, bs, ldb, beta_pc, cij, c.rs, c.cs, m, n);
    }
};

template <typename S, typename T>
void blocked(const KernelTable<T>& uk, Packers<S, T> pk, const Blocking& bs, int threads, bool direct_b, T alpha,
             View<const S> a, View<const S> b, T beta, View<T> c) {
    five_loops(FloatProduct<S, T>{uk, pk, direct_b, alpha, beta, a, b, c}, bs, threads, c.rows, c.cols, a.cols);
}

}  // namespace

template <typename T>
void run_blocked(const KernelTable<T>& uk, const Blocking& bs, int threads, bool direct_b, T alpha, View<const T> a,
                 View<const T> b, T beta, View<T> c) {
    blocked<T, T>(uk, Packers<T, T>{uk.pack_a, uk.pack_b}, bs, threads, direct_b, alpha, a, b, beta, c);
}

template <typename S, typename T>
void run_blocked_packed(const KernelTable<T>& uk, Packers<S, T> pk, const Blocking& bs, int threads, T alpha,
                        View<const S> a, View<const S> b, T beta, View<T> c) {
    blocked<S, T>(uk, pk, bs, threads, false, alpha, a, b, beta, c);
}

template void run_blocked<float>(const KernelTable<float>&, const Blocking&, int, bool, float, View<const float>,
                                 View<const float>, float, View<float>);
template void run_blocked<double>(const KernelTable<double>&, const Blocking&, int, bool, double, View<const double>,
                                  View<const double>, double, View<double>);

template void run_blocked_packed<bfloat16_t, float>(const KernelTable<float>&, Packers<bfloat16_t, float>,
                                                    const Blocking&, int, float, View<const bfloat16_t>,
                                                    View<const bfloat16_t>, float, View<float>);
template void run_blocked_packed<float16_t, float>(const KernelTable<float>&, Packers<float16_t, float>,
                                                   const Blocking&, int, float, View<const float16_t>,
                                                   View<const float16_t>, float, View<float>);

}  // namespace fastgemm
