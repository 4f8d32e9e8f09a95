// Pre-packed B: a whole k x n matrix copied once into the sliver layout of one kernel set's
// main tile, so products that reuse B (a layer's weights) skip pack_b and its barriers.
// See docs/DESIGN.md, "Pre-packed B".
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "epilogue.hpp"
#include "kernel.hpp"
#include "scratch.hpp"
#include "view.hpp"

namespace fastgemm {

// B blocked once: k in equal slices of at most KC, n in equal panels of at most NC (a
// multiple of NR), KC and NC from blocking_for for the main tile of T on the kernel set.
// Panel (pc, jc) is laid out as pack_b writes the driver's panel: ceil(width / NR) slivers of
// depth x NR, rows contiguous, one after another, the last zero-padded. Panels of one column
// follow each other in k; columns follow each other in n. Immutable once built.
template <typename T>
class PackedB {
   public:
    // Packs B (k x n, any strides) for ks's main tile of type T. Throws std::overflow_error
    // when the sizes cannot be indexed, std::bad_alloc.
    PackedB(const KernelSet& ks, View<const T> b);

    // The kernel set the layout is for; products with this B run on it.
    const KernelSet& kernels() const { return *ks_; }
    int64_t rows() const { return k_; }
    int64_t cols() const { return n_; }
    int64_t kc() const { return kc_; }  // depth of every k slice but possibly the last
    int64_t nc() const { return nc_; }  // width of every panel but possibly the last
    int nr() const { return nr_; }
    std::size_t bytes() const { return std::size_t(size_) * sizeof(T); }

    // Panel (pc, jc): pc a multiple of kc() below rows(), jc a multiple of nc() below cols().
    const T* panel(int64_t pc, int64_t jc) const {
        const int64_t width = round_up(std::min(nc_, n_ - jc), nr_);
        return static_cast<const T*>(store_.data()) + jc * k_ + pc * width;
    }
    // out (k x n, any strides) = B, exactly.
    void unpack(View<T> out) const;

   private:
    const KernelSet* ks_;
    int64_t k_, n_, kc_, nc_;
    int nr_;
    int64_t size_;  // elements, padding included
    AlignedBuffer store_;
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
