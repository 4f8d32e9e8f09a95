// A gufunc inner loop's dims and byte steps read as the core's views of one product of the
// stack and its batch axis. ufunc_loops.cpp (float32 / float64 matmul, vecdot, matvec, vecmat)
// and bf16_loop.cpp (bfloat16 x bfloat16 -> float32 matmul) share it.
#pragma once

#include <numpy/npy_common.h>

#include <cstdint>

#include "../fastgemm/batched.hpp"

namespace fastgemm {
namespace bindings {

// One product of the stack, in byte steps: A (n x k), B (k x m), C (n x m); a dimension of
// length 1 that the gufunc does not have gets step 0.
struct Geometry {
    npy_intp n, k, m;
    npy_intp a_n, a_k, b_k, b_m, c_n, c_m;
};

// matmul's (n?,k),(k,m?)->(n?,m?): dims [batch, n, k, m], steps [sA, sB, sC, A_n, A_k, B_k,
// B_m, C_n, C_m], as NumPy hands them to the loop.
inline Geometry matmul_geometry(npy_intp const* d, npy_intp const* s) {
    return {d[1], d[2], d[3], s[3], s[4], s[5], s[6], s[7], s[8]};
}

// The product's views and the batch axis, in element steps (A, B, C items of TA, TB, TC).
template <typename TA, typename TB, typename TC>
struct StackViews {
    View<const TA> a;
    View<const TB> b;
    View<TC> c;
    BatchAxis batch;
};

// p aligned to `size` and `step` a whole number of `size`-byte items.
inline bool fits(const char* p, npy_intp step, npy_intp size) {
    return reinterpret_cast<uintptr_t>(p) % uintptr_t(size) == 0 && step % size == 0;
}

// The stack of `batch` products at args (steps [sA, sB, sC, ...], g) as views, or false when a
// base is misaligned or a step is not a whole number of its operand's items. Declared inline:
// GCC then inlines it into the hot matmul loop, as when the loop held this code (objdump).
template <typename TA, typename TB, typename TC>
inline bool stack_views(char* const* args, npy_intp batch, npy_intp const* steps, const Geometry& g,
                        StackViews<TA, TB, TC>& v) {
    constexpr npy_intp ea = sizeof(TA), eb = sizeof(TB), ec = sizeof(TC);
    if (!fits(args[0], steps[0], ea) || !fits(args[1], steps[1], eb) || !fits(args[2], steps[2], ec)) return false;
    if (g.a_n % ea || g.a_k % ea || g.b_k % eb || g.b_m % eb || g.c_n % ec || g.c_m % ec) return false;
    v.a = {reinterpret_cast<const TA*>(args[0]), g.n, g.k, g.a_n / ea, g.a_k / ea};
    v.b = {reinterpret_cast<const TB*>(args[1]), g.k, g.m, g.b_k / eb, g.b_m / eb};
    v.c = {reinterpret_cast<TC*>(args[2]), g.n, g.m, g.c_n / ec, g.c_m / ec};
    v.batch = {batch, steps[0] / ea, steps[1] / eb, steps[2] / ec};
    return true;
}

}  // namespace bindings
}  // namespace fastgemm
