// Public entry of the core for low-precision inputs: C (float32) = alpha * A @ B + beta * C
// with A and B both bfloat16 or both float16, accumulated in float32 (BLAS sbgemm / shgemm).
// See docs/DESIGN.md, "Low-precision products".
#pragma once

#include <vector>

#include "batched.hpp"
#include "blocking.hpp"
#include "epilogue.hpp"
#include "half.hpp"
#include "kernel.hpp"
#include "view.hpp"

namespace fastgemm {

// gemm<float>'s contract (gemm.hpp) with A and B stored as S (bfloat16_t or float16_t): each
// input widened exactly to float32, float32 FMAs, one float32 C. beta == 0: C is never read;
// alpha == 0 or k == 0: A and B are never read. Results do not depend on the thread count.
// Throws std::invalid_argument / std::overflow_error as gemm() does. `ep` (bias, activation)
// runs on the float32 C as in gemm<float>.
template <typename S>
void gemm_lowp(float alpha, View<const S> a, View<const S> b, float beta, View<float> c,
               const Epilogue<float>& ep = {});

// gemm_batched's contract (batched.hpp) for gemm_lowp: a stack of same-shaped products, the
// views describing item 0, spread over threads by batch when that uses more threads.
template <typename S>
void gemm_lowp_batched(float alpha, View<const S> a, View<const S> b, float beta, View<float> c,
                       const std::vector<BatchAxis>& batch);

// MC / KC / NC of the pair kernels: the float32 tile's blocking (a slot is 4 bytes like a
// float), KC counted in elements, two a slot.
Blocking pair_blocking(const PairKernels& pk);

// dst = src rounded to float16 (to nearest even, overflow to Inf, NaN kept), elementwise, on
// the active kernel set (F16C / fcvtn where there is one). Shapes must match; any strides.
void narrow_to_f16(View<const float> src, View<float16_t> dst);

extern template void gemm_lowp<bfloat16_t>(float, View<const bfloat16_t>, View<const bfloat16_t>, float, View<float>,
                                           const Epilogue<float>&);
extern template void gemm_lowp<float16_t>(float, View<const float16_t>, View<const float16_t>, float, View<float>,
                                          const Epilogue<float>&);
extern template void gemm_lowp_batched<bfloat16_t>(float, View<const bfloat16_t>, View<const bfloat16_t>, float,
                                                   View<float>, const std::vector<BatchAxis>&);
extern template void gemm_lowp_batched<float16_t>(float, View<const float16_t>, View<const float16_t>, float,
                                                  View<float>, const std::vector<BatchAxis>&);

}  // namespace fastgemm
