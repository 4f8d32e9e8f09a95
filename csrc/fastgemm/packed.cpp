#include "packed.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "blocking.hpp"
#include "driver.hpp"
#include "paths.hpp"
#include "threading.hpp"

namespace fastgemm {

template <typename T>
PackedB<T>::PackedB(const KernelSet& ks, View<const T> b) : ks_(&ks), k_(b.rows), n_(b.cols) {
    const KernelTable<T>& uk = main_table<T>(ks);
    extent(b);
    nr_ = uk.nr;
    const Blocking bs = blocking_for(uk.mr, uk.nr, int(sizeof(T)));
    // Even splits, as the driver makes them: no thin tail slice or panel.
    kc_ = k_ > 0 ? ceil_div(k_, ceil_div(k_, bs.kc)) : 1;
    nc_ = n_ > 0 ? round_up(ceil_div(n_, ceil_div(n_, bs.nc)), nr_) : nr_;
    // Every column of panels is k deep; all but the last are nc wide, the last padded to NR.
    const int64_t width = n_ > 0 ? checked_add(checked_mul(n_ / nc_, nc_), round_up(n_ % nc_, nr_)) : 0;
    size_ = checked_mul(k_, width);
    checked_mul(size_, int64_t(sizeof(T)));  // the bytes must be countable too
    if (size_ == 0) return;
    store_.allocate(std::size_t(size_) * sizeof(T));
    for (int64_t jc = 0; jc < n_; jc += nc_) {
        const int64_t nc = std::min(nc_, n_ - jc);
        for (int64_t pc = 0; pc < k_; pc += kc_)
            uk.pack_b(std::min(kc_, k_ - pc), nc, b.data + pc * b.rs + jc * b.cs, b.rs, b.cs,
                      const_cast<T*>(panel(pc, jc)), 0, ceil_div(nc, nr_));
    }
}

template <typename T>
void PackedB<T>::unpack(View<T> out) const {
    if (out.rows != k_ || out.cols != n_)
        throw std::invalid_argument("unpack: B is " + shape_str(k_, n_) + ", the output " +
                                    shape_str(out.rows, out.cols));
    extent(out);
    for (int64_t jc = 0; jc < n_; jc += nc_) {
        const int64_t nc = std::min(nc_, n_ - jc);
        for (int64_t pc = 0; pc < k_; pc += kc_) {
            const int64_t kc = std::min(kc_, k_ - pc);
            const T* bp = panel(pc, jc);
            for (int64_t j = 0; j < nc; ++j) {
                const T* src = bp + j / nr_ * nr_ * kc + j % nr_;
                T* dst = out.data + pc * out.rs + (jc + j) * out.cs;
                for (int64_t p = 0; p < kc; ++p) dst[p * out.rs] = src[p * nr_];
            }
        }
    }
}

template <typename T>
void gemm(T alpha, View<const T> a, const PackedB<T>& b, T beta, View<T> c, const Epilogue<T>& ep) {
    const int64_t k = b.rows(), n = b.cols();
    check_single(a, View<const T>{nullptr, k, n, n, 1}, c);
    const int64_t m = c.rows;
    if (m == 0 || n == 0) return;
    const KernelTable<T>& uk = main_table<T>(b.kernels());
    if (alpha == T(0) || k == 0) {
        scale(beta, c);
        if (ep.active()) apply_epilogue(uk, c, ep);
        return;
    }
    const PaddingFlags flags;
    const int threads = threads_for(m, n, k);
    if (n == 1) c.cs = 1;  // a stride along a size-1 dimension is meaningless
    if (m == 1 && c.cs == 1) {
        // One row (a decode step): the slivers streamed several at a time, outputs split over
        // threads in groups of four slivers. See docs/DESIGN.md, "Pre-packed B".
        parallel_ranges(threads, n, 4 * int64_t(b.nr()), [&](int, int64_t lo, int64_t hi) {
            for (int64_t jc = lo / b.nc() * b.nc(); jc < hi; jc += b.nc()) {
                const int64_t j0 = std::max(lo, jc), j1 = std::min(hi, jc + b.nc());  // j0 - jc: whole slivers
                for (int64_t pc = 0; pc < k; pc += b.kc()) {
                    const int64_t kc = std::min(b.kc(), k - pc);
                    uk.gemv_packed(j1 - j0, kc, alpha, a.data + pc * a.cs, a.cs, b.panel(pc, jc) + (j0 - jc) * kc,
                                   pc == 0 ? beta : T(1), c.data + j0);
                }
                if (ep.active()) apply_epilogue(uk, View<T>{c.data + j0, 1, j1 - j0, 1, 1}, ep.from_column(j0));
            }
        });
    } else {
        run_blocked_prepacked(uk, blocking_for(uk.mr, uk.nr, int(sizeof(T))).mc, threads, alpha, a, b, beta, c, ep);
    }
    flags.settle([&] { return has_nan(c); });
}

template class PackedB<float>;
template class PackedB<double>;
template void gemm<float>(float, View<const float>, const PackedB<float>&, float, View<float>, const Epilogue<float>&);
template void gemm<double>(double, View<const double>, const PackedB<double>&, double, View<double>,
                           const Epilogue<double>&);

}  // namespace fastgemm
