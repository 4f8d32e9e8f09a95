#include "packed.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "blocking.hpp"
#include "driver.hpp"
#include "gemm_int8.hpp"
#include "paths.hpp"
#include "threading.hpp"

namespace fastgemm {

PackedPanels::PackedPanels(const KernelSet& ks, int64_t k, int64_t n, const Blocking& bs, Format f)
    : ks_(&ks), k_(k), n_(n), f_(f) {
    // Even splits, as the driver makes them: no thin tail slice or panel.
    kc_ = k_ > 0 ? even_block(k_, bs.kc, f_.group) : f_.group;
    nc_ = n_ > 0 ? even_block(n_, bs.nc, f_.nr) : f_.nr;
    slice_bytes_ = sliver_bytes(kc_);
    column_bytes_ = checked_add(checked_mul(k_ / kc_, slice_bytes_), k_ % kc_ ? sliver_bytes(k_ % kc_) : 0);
    size_ = checked_mul(ceil_div(n_, f_.nr), column_bytes_);
    if (size_ > 0) store_.allocate(std::size_t(size_));
}

template <typename F>
void PackedPanels::fill(F pack) {
    for (int64_t jc = 0; jc < n_; jc += nc_)
        for (int64_t pc = 0; pc < k_; pc += kc_)
            pack(pc, jc, std::min(kc_, k_ - pc), std::min(nc_, n_ - jc), const_cast<char*>(panel_bytes(pc, jc)));
}

template <typename E, typename Out>
void PackedPanels::unpack_as(View<Out> out) const {
    if (out.rows != k_ || out.cols != n_)
        throw std::invalid_argument("unpack: B is " + shape_str(k_, n_) + ", the output " +
                                    shape_str(out.rows, out.cols));
    extent(out);
    const int nr = f_.nr, g = f_.group;
    for (int64_t jc = 0; jc < n_; jc += nc_) {
        const int64_t nc = std::min(nc_, n_ - jc);
        for (int64_t pc = 0; pc < k_; pc += kc_) {
            const int64_t kc = std::min(kc_, k_ - pc), sliver = sliver_bytes(kc);
            const char* bp = panel_bytes(pc, jc);
            for (int64_t j = 0; j < nc; ++j) {
                // Element p of column j: group p / g of the sliver, position p % g in it.
                const E* src = reinterpret_cast<const E*>(bp + j / nr * sliver) + j % nr * g;
                Out* dst = out.data + pc * out.rs + (jc + j) * out.cs;
                for (int64_t q = 0; q < kc; q += g)
                    for (int64_t r = q; r < std::min<int64_t>(q + g, kc); ++r)
                        dst[r * out.rs] = Out(src[q * nr + r - q]);
            }
        }
    }
}

template <typename T>
PackedB<T>::PackedB(const KernelSet& ks, View<const T> b)
    : PackedPanels(ks, b.rows, b.cols, blocking_for(main_table<T>(ks)),
                   Format{main_table<T>(ks).nr, 1, int(sizeof(T)), false, 1}) {
    extent(b);
    const KernelTable<T>& uk = main_table<T>(ks);
    fill([&](int64_t pc, int64_t jc, int64_t kc, int64_t nc, char* dst) {
        uk.pack_b(kc, nc, b.data + pc * b.rs + jc * b.cs, b.rs, b.cs, reinterpret_cast<T*>(dst), 0,
                  ceil_div(nc, uk.nr));
    });
}

template <typename T>
void PackedB<T>::unpack(View<T> out) const {
    unpack_as<T, T>(out);
}

namespace {

// Layout of the int8 A table's pack_b (the uint8 table's slivers are the same but for the sums).
PackedPanels::Format int8_format(const Int8Table<int8_t>& t) { return {t.nr, t.kgroup, t.b_size, t.b_sums, 64}; }

}  // namespace

PackedInt8B::PackedInt8B(const KernelSet& ks, View<const int8_t> b)
    : PackedPanels(ks, b.rows, b.cols, int8_blocking(int8_kernels(ks)), int8_format(int8_kernels(ks).s8)) {
    extent(b);
    const Int8Table<int8_t>& t = int8_kernels(ks).s8;
    fill([&](int64_t pc, int64_t jc, int64_t kc, int64_t nc, char* dst) {
        t.pack_b(kc, nc, b.data + pc * b.rs + jc * b.cs, b.rs, b.cs, dst, 0, ceil_div(nc, t.nr));
    });
    if (t.b_size != 1 && b.rows > 0 && b.cols > 0) {
        values_.allocate(std::size_t(b.rows) * std::size_t(b.cols));
        auto* v = static_cast<int8_t*>(values_.data());
        for (int64_t p = 0; p < b.rows; ++p)
            for (int64_t j = 0; j < b.cols; ++j) v[p * b.cols + j] = b.data[p * b.rs + j * b.cs];
    }
}

void PackedInt8B::unpack(View<int8_t> out) const {
    if (int8_kernels(kernels()).s8.b_size == 1) unpack_as<int8_t, int8_t>(out);
    else unpack_as<int16_t, int8_t>(out);  // widened while packing (vpmaddwd, scalar, NEON)
}

template <typename T>
void gemm(T alpha, View<const T> a, const PackedB<T>& b, T beta, View<T> c, const Epilogue<T>& ep) {
    const int64_t k = b.rows(), n = b.cols();
    check_single(a, View<const T>{nullptr, k, n, n, 1}, c);
    const int64_t m = c.rows;
    if (m == 0 || n == 0) return;
    const KernelTable<T>& uk = main_table<T>(b.kernels());
    if (alpha == T(0) || k == 0) {
        scale(uk, beta, c, ep);
        return;
    }
    const PaddingFlags flags;
    const int threads = threads_for(m, n, k);
    if (n == 1) c.cs = 1;  // a stride along a size-1 dimension is meaningless
    if (m <= kPackedRowsMaxM && c.cs == 1) {
        // A few rows (decode steps): the slivers streamed several at a time, outputs split over
        // threads in groups of four slivers. See docs/DESIGN.md, "Pre-packed B".
        parallel_ranges(threads, n, 4 * int64_t(b.nr()), [&](int, int64_t lo, int64_t hi) {
            for (int64_t jc = lo / b.nc() * b.nc(); jc < hi; jc += b.nc()) {
                const int64_t j0 = std::max(lo, jc), j1 = std::min(hi, jc + b.nc());  // j0 - jc: whole slivers
                for (int64_t pc = 0; pc < k; pc += b.kc()) {
                    const int64_t kc = std::min(b.kc(), k - pc);
                    uk.gemv_packed(m, j1 - j0, kc, alpha, a.data + pc * a.cs, a.rs, a.cs,
                                   b.panel(pc, jc) + (j0 - jc) * kc, pc == 0 ? beta : T(1), c.data + j0, c.rs);
                }
                if (ep.active()) apply_epilogue(uk, View<T>{c.data + j0, m, j1 - j0, c.rs, 1}, ep.from_column(j0));
            }
        });
    } else {
        run_blocked_prepacked(uk, blocking_for(uk), threads, alpha, a, b, beta, c, ep);
    }
    flags.settle([&] { return has_nan(c); });
}

template class PackedB<float>;
template class PackedB<double>;
template void gemm<float>(float, View<const float>, const PackedB<float>&, float, View<float>, const Epilogue<float>&);
template void gemm<double>(double, View<const double>, const PackedB<double>&, double, View<double>,
                           const Epilogue<double>&);

}  // namespace fastgemm
