// Public entry of the core for int8 products: A uint8 or int8, B int8, int32 accumulation, exact
// (modulo 2^32 past the K in docs/DESIGN.md, "int8 products"; never saturating).
#pragma once

#include <cstdint>

#include "blocking.hpp"
#include "epilogue.hpp"
#include "kernel.hpp"
#include "view.hpp"

namespace fastgemm {

class PackedInt8B;

// A is uint8_t or int8_t; B is View<const int8_t>, or a PackedInt8B (packed.hpp), whose kernel
// set (which need not be the active one) the product then runs on. Instantiated in
// gemm_int8.cpp for these four pairs.

// C (int32) = A @ B, or C += A @ B when `accumulate`: every product exact, every sum modulo 2^32
// (two's complement wrap-around, as NumPy's int32 matmul). Results do not depend on the thread
// count, the kernel or whether B was pre-packed. Throws std::invalid_argument /
// std::overflow_error as gemm() does.
template <typename A, typename B>
void gemm_int8(View<const A> a, const B& b, bool accumulate, View<int32_t> c);

// Dequantisation: C (float32) = float(A @ B) * scale[j * scale_inc] for column j, the int32 sum
// (as gemm_int8 computes it) rounded once to float32 and then multiplied. scale_inc is 0 (one
// scale) or 1 (n scales). C is never read. `ep` (bias per column, activation) then runs on each
// dequantised tile while it is in L1, as gemm's epilogue does.
template <typename A, typename B>
void gemm_int8_scaled(View<const A> a, const B& b, const float* scale, int64_t scale_inc, View<float> c,
                      const Epilogue<float>& ep = {});

// The int8 kernels products on kernel set ks run on this CPU: ks.int8, or its `better` variant
// when the CPU can run that.
const Int8Kernels& int8_kernels(const KernelSet& ks);

// MC / KC / NC of the int8 kernels ik (the uint8 and int8 tables share their tile and packing
// sizes): blocking_for's model for the packed element size, KC a whole number of k-groups.
Blocking int8_blocking(const Int8Kernels& ik);

}  // namespace fastgemm
