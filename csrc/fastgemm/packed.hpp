// Pre-packed B: a whole k x n matrix copied once into the sliver layout of one kernel set's
// main tile (PackedB, floating point) or int8 tile (PackedInt8B), so products that reuse B (a
// layer's weights) skip pack_b and its barriers. See docs/DESIGN.md, "Pre-packed B".
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "blocking.hpp"
#include "epilogue.hpp"
#include "kernel.hpp"
#include "scratch.hpp"
#include "view.hpp"

namespace fastgemm {

// B blocked once, as the driver blocks a product: k in equal slices of at most KC (whole
// groups of `group` k values but the last), n in equal panels of at most NC (a multiple of
// NR). Panel (pc, jc) is laid out as the tile's pack_b writes the driver's panel: ceil(width
// / NR) slivers, sliver_bytes(depth) apart. Panels of one column follow each other in k;
// columns follow each other in n. Immutable once built; what the bytes hold is the subclass's.
class PackedPanels {
   public:
    struct Format {
        int nr, group, elem;  // sliver width, k values a group holds, bytes of one element
        bool sums;            // NR int32 corrections follow each sliver
        int align;            // bytes a sliver is padded to
    };
    // The kernel set the layout is for; products with this B run on it.
    const KernelSet& kernels() const { return *ks_; }
    int64_t rows() const { return k_; }
    int64_t cols() const { return n_; }
    int64_t kc() const { return kc_; }  // depth of every k slice but possibly the last
    int64_t nc() const { return nc_; }  // width of every panel but possibly the last
    int nr() const { return f_.nr; }
    std::size_t bytes() const { return std::size_t(size_); }

    // Bytes from one sliver of a slice `depth` deep to the next: whole groups of NR elements,
    // then NR int32 column sums when the format has them, padded to `align`.
    int64_t sliver_bytes(int64_t depth) const {
        return round_up(round_up(depth, f_.group) * f_.nr * f_.elem + (f_.sums ? f_.nr * 4 : 0), f_.align);
    }
    // Panel (pc, jc): pc a multiple of kc() below rows(), jc a multiple of nc() below cols().
    const char* panel_bytes(int64_t pc, int64_t jc) const {
        const int64_t slivers = ceil_div(std::min(nc_, n_ - jc), f_.nr);
        return static_cast<const char*>(store_.data()) + jc / f_.nr * column_bytes_ + pc / kc_ * slivers * slice_bytes_;
    }

   protected:
    // The geometry of B (k x n) for blocks bs, storage allocated (uninitialised). Throws
    // std::overflow_error when the sizes cannot be indexed, std::bad_alloc.
    PackedPanels(const KernelSet& ks, int64_t k, int64_t n, const Blocking& bs, Format f);
    // pack(pc, jc, kc, nc, dst): panel (pc, jc), kc x nc, into dst, for every panel.
    template <typename F>
    void fill(F pack);
    // out (k x n, any strides) = B, exactly: the packed element E at (p, j) converted to Out.
    // Throws std::invalid_argument when out is not k x n.
    template <typename E, typename Out>
    void unpack_as(View<Out> out) const;

   private:
    const KernelSet* ks_;
    int64_t k_, n_, kc_, nc_;
    Format f_;
    int64_t slice_bytes_;   // one sliver of a full slice, kc() deep
    int64_t column_bytes_;  // one sliver over all of k
    int64_t size_;          // bytes, padding included
    AlignedBuffer store_;
};

// B of T (float, double) for ks's main tile of T.
template <typename T>
class PackedB : public PackedPanels {
   public:
    // Packs B (k x n, any strides). Throws std::overflow_error, std::bad_alloc.
    PackedB(const KernelSet& ks, View<const T> b);
    // Panel (pc, jc) as T: slivers of depth x NR, rows contiguous, the last zero-padded.
    const T* panel(int64_t pc, int64_t jc) const { return reinterpret_cast<const T*>(panel_bytes(pc, jc)); }
    // out (k x n, any strides) = B, exactly.
    void unpack(View<T> out) const;
};

// int8 B for the int8 kernels products on ks run on (int8_kernels(ks)), in the layout of the
// int8 A table's pack_b: its column sums (when that table needs them) make one packed B
// serve uint8 A and int8 A alike (the uint8 tiles read the same slivers and skip the sums).
//
// Where the packed elements are wider than int8 (int16 for vpmaddwd), it also keeps B's values
// row-major: products with up to kPackedRowsMaxM rows stream those (half the bytes) as they
// stream an int8 array B; see docs/DESIGN.md, "Pre-packed B".
class PackedInt8B : public PackedPanels {
   public:
    // Packs B (k x n, any strides). Throws std::overflow_error, std::bad_alloc.
    PackedInt8B(const KernelSet& ks, View<const int8_t> b);
    // out (k x n, any strides) = B, exactly.
    void unpack(View<int8_t> out) const;
    // B's values, k x n row-major, or null when the packed elements are int8 themselves.
    const int8_t* values() const { return static_cast<const int8_t*>(values_.data()); }
    // Bytes held: the packed slivers and the values.
    std::size_t bytes() const { return PackedPanels::bytes() + values_.size(); }

   private:
    AlignedBuffer values_;
};

// C = alpha * A @ B + beta * C with B pre-packed; gemm<T>'s contract (shapes checked first,
// beta == 0 never reads C, alpha == 0 or k == 0 never reads A or B, floating-point flags of
// the true product only, results independent of the thread count). Runs on B's kernel set,
// which need not be the active one.
template <typename T>
void gemm(T alpha, View<const T> a, const PackedB<T>& b, T beta, View<T> c, const Epilogue<T>& ep = {});

extern template class PackedB<float>;
extern template class PackedB<double>;
extern template void gemm<float>(float, View<const float>, const PackedB<float>&, float, View<float>,
                                 const Epilogue<float>&);
extern template void gemm<double>(double, View<const double>, const PackedB<double>&, double, View<double>,
                                  const Epilogue<double>&);

}  // namespace fastgemm
