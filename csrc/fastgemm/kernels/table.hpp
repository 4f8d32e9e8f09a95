// What a kernel file includes: the FMA-peak loop and the builder of a KernelTable from the
// kernel templates, written once over a vector-traits type V and instantiated by each kernel
// file under its own ISA flags.
// Included only from kernels/*.cpp (through table.hpp). Every template takes a vector-traits
// type V, and each kernel file's V is a distinct type in an anonymous namespace, so
// instantiations compiled with different ISA flags never share a symbol (the linker could
// otherwise keep an AVX-512 copy and hand it to baseline code).
//
// V provides: T, reg, mask, W (lanes), zero(), set1(x), loadu(p), storeu(p, r),
// lanes(n) (mask of the first n lanes), maskz_loadu(m, p) (masked-off lanes read as 0),
// mask_storeu(p, m, r), fmadd(a, b, c) = a*b + c, mul(a, b), and the epilogue's operations
// (kernels/epilogue.hpp).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "../kernel.hpp"
#include "epilogue.hpp"
#include "gemv.hpp"
#include "lowp.hpp"
#include "microkernel.hpp"
#include "packing.hpp"
#include "small.hpp"

namespace fastgemm {
namespace kernels {

// Independent FMA chains, enough to cover latency x issue width on the cores we target
// (4 cycles x 2 pipes), few enough that chains plus operands fit in 16 registers (AVX2):
// a spill would measure the load/store units instead. Returns the flops done; the caller times it.
template <typename V>
double fma_loop(int64_t reps) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr int CHAINS = 12;
    R acc[CHAINS];
#pragma GCC unroll 12
    for (int i = 0; i < CHAINS; ++i) acc[i] = V::set1(T(i));
    const R x = V::set1(T(0.999999)), y = V::set1(T(1e-7));
    for (int64_t r = 0; r < reps; ++r) {
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; ++i) acc[i] = V::fmadd(acc[i], x, y);
    }
    R sum = acc[0];
#pragma GCC unroll 12
    for (int i = 1; i < CHAINS; ++i) sum = V::mul(sum, acc[i]);
    T out[V::W];
    V::storeu(out, sum);
    volatile T sink = out[0];
    (void)sink;
    return double(reps) * CHAINS * V::W * 2;
}

// fma_loop in V's half-width registers, where V has them.
template <typename V>
constexpr double (*half_fma_loop())(int64_t) {
    if constexpr (has_half<V>) return &fma_loop<typename HalfOf<V>::type>;
    else return nullptr;
}

// The deepest k slice for V's tile, V::kMaxKC where the ISA file measured one, else 0 (the cache
// model's alone).
template <typename V, typename = void>
constexpr int64_t max_kc = 0;
template <typename V>
constexpr int64_t max_kc<V, std::void_t<decltype(V::kMaxKC)>> = V::kMaxKC;

// The half-width tile of M rows (TileRow::by_nv[0]) for V's own multiply-add, or null.
template <typename V, int M, typename D>
constexpr UkernelFn<typename V::T> half_tile() {
    if constexpr (std::is_same_v<D, V> && has_half<V>) return &ukernel<typename HalfOf<V>::type, M, 1>;
    else return nullptr;
}

// The tiles of M rows, 1..NV vectors wide; D: the k step's multiply-add (see ukernel).
template <typename V, int M, typename D = V, int... N>
constexpr TileRow<typename V::T> tile_row(std::integer_sequence<int, N...>) {
    return {{half_tile<V, M, D>(), &ukernel<V, M, N + 1, D>...}};
}

template <typename V, int MR, int NV, int PV, int... M>
constexpr KernelTable<typename V::T> kernel_table(std::integer_sequence<int, M...>) {
    return {MR,
            NV * V::W,
            V::W,
            {TileRow<typename V::T>{}, tile_row<V, M + 1>(std::make_integer_sequence<int, NV>{})...},
            &pack_a<V, MR>,
            &pack_b<V, NV * V::W>,
            &copy_columns<V>,
            &gemv_rows<V>,
            &gemv_dots<V>,
            &dots<V>,
            &few_rows<V>,
            &small<V, PV>,
            &small_stack<V, PV>,
            &small_stack_b_cols<V, PV>,
            &small_stack_c_cols<V, PV>,
            &fma_loop<V>,
            half_fma_loop<V>(),
            &epilogue<V>,
            &gemv_packed<V, NV>,
            max_kc<V>,
            transposed_min_k<V>};
}

// The table of every kernel for an MR x (NV vectors) register tile over vector traits V;
// small products in panels of PV vectors (4 x PV accumulators).
template <typename V, int MR, int NV, int PV = 4>
constexpr KernelTable<typename V::T> kernel_table() {
    static_assert(MR <= kMaxMR && NV <= kMaxNV, "raise kMaxMR / kMaxNV");
    return kernel_table<V, MR, NV, PV>(std::make_integer_sequence<int, MR>{});
}

}  // namespace kernels
}  // namespace fastgemm
