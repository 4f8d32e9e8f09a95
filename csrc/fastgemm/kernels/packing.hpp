// Packing A into MR-row slivers and B into NR-column slivers, zero-padding the edges.
// Included only from kernels/*.cpp (through table.hpp). Every template takes a vector-traits
// type V, and each kernel file's V is a distinct type in an anonymous namespace, so
// instantiations compiled with different ISA flags never share a symbol (the linker could
// otherwise keep an AVX-512 copy and hand it to baseline code).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "../kernel.hpp"
#include "lanes.hpp"

namespace fastgemm {
namespace kernels {

// True where the ISA file gives V::transpose(r): W rows of W elements in registers become W
// columns.
template <typename V, typename = void>
constexpr bool has_transpose = false;
template <typename V>
constexpr bool has_transpose<V, std::void_t<decltype(V::transpose(std::declval<typename V::reg*>()))>> = true;

// W k steps of an MR-row sliver of row-major A at a time, through ceil(MR / W) register
// transposes, rows from `rows` on zero (the sliver's padding); returns the k steps done. Whole
// registers are stored in address order, so a column's spare lanes land on the next column,
// written after them; the last W steps are left to the caller when they would spill past the
// sliver. See docs/DESIGN.md, "Packing transposes".
template <typename V, int MR>
int64_t pack_a_rows(int64_t kc, int64_t rows, const typename V::T* a0, int64_t rsa, typename V::T* ap) {
    constexpr int W = V::W, G = (MR + W - 1) / W;
    constexpr int64_t spill = MR % W != 0;
    int64_t p = 0;
    for (; p + W + spill <= kc; p += W) {
        typename V::reg r[G][W];
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
#pragma GCC unroll 16
            for (int i = 0; i < W; ++i) r[g][i] = g * W + i < rows ? V::loadu(a0 + (g * W + i) * rsa + p) : V::zero();
            V::transpose(r[g]);
        }
#pragma GCC unroll 16
        for (int c = 0; c < W; ++c)
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) V::storeu(ap + (p + c) * MR + g * W, r[g][c]);
    }
    return p;
}

// Lines of an operand that packing reads together: rows of a row-major B (across all its
// slivers), columns of an A stored by columns. As many streams at once, each followed by the
// hardware prefetcher; see docs/DESIGN.md, "Packing B by rows".
constexpr int kPackRows = 8;

// f(count, p) for p = 0, kPackRows, ... over [0, kc): count a std::integral_constant of
// kPackRows, then of 1 for each of the last kc % kPackRows lines.
template <typename F>
void in_pack_groups(int64_t kc, F f) {
    int64_t p = 0;
    for (; p + kPackRows <= kc; p += kPackRows) f(std::integral_constant<int, kPackRows>{}, p);
    for (; p < kc; ++p) f(std::integral_constant<int, 1>{}, p);
}

// Full MR-row slivers [0, slivers) of an A stored by columns (a: the first sliver's element (0,
// 0), each column contiguous along the rows) into ap, kc x MR each: kPackRows columns at a time
// across all the slivers, each sliver's piece of a column copied whole.
template <typename V, int MR>
void pack_a_columns(int64_t kc, int64_t slivers, const typename V::T* a, int64_t csa, typename V::T* ap) {
    using T = typename V::T;
    in_pack_groups(kc, [&](auto count, int64_t p) {
        constexpr int R = decltype(count)::value;
        for (int64_t s = 0; s < slivers; ++s) {
            const T* as = a + s * MR + p * csa;
            T* d = ap + s * MR * kc + p * MR;
#pragma GCC unroll 8
            for (int q = 0; q < R; ++q) __builtin_memcpy(d + q * MR, as + q * csa, MR * sizeof(T));
        }
    });
}

template <typename V, int MR>
void pack_a(int64_t mc, int64_t kc, const typename V::T* a, int64_t rsa, int64_t csa, typename V::T* ap) {
    using T = typename V::T;
    int64_t i0 = 0;
    if (rsa == 1 && csa != 1 && mc >= MR) {
        pack_a_columns<V, MR>(kc, mc / MR, a, csa, ap);
        i0 = mc / MR * MR, ap += mc / MR * MR * kc;
    }
    for (; i0 < mc; i0 += MR, ap += MR * kc) {
        const T* a0 = a + i0 * rsa;
        const int64_t rows = mc - i0 < MR ? mc - i0 : MR;
        if (csa == 1 && (rows == MR || has_transpose<V>)) {
            // Each row of A is contiguous along k: read rows, write the sliver's columns (a
            // last sliver of few rows too, its missing rows zero).
            int64_t p0 = 0;
            // A full sliver's call keeps MR as the constant bound of its loads.
            if constexpr (has_transpose<V>)
                p0 = rows == MR ? pack_a_rows<V, MR>(kc, MR, a0, rsa, ap) : pack_a_rows<V, MR>(kc, rows, a0, rsa, ap);
            for (int i = 0; i < MR; ++i) {
                const T* ar = a0 + i * rsa;
                for (int64_t p = p0; p < kc; ++p) ap[p * MR + i] = i < rows ? ar[p] : T(0);
            }
        } else {
            for (int64_t p = 0; p < kc; ++p)
                for (int i = 0; i < MR; ++i) ap[p * MR + i] = i < rows ? a0[i * rsa + p * csa] : T(0);
        }
    }
}

// W k steps of an NR-column sliver of B stored by columns at a time, through W x W register
// transposes of W columns each, columns from `cols` on zero (the sliver's padding); returns the
// k steps done (the rest is the caller's).
template <typename V, int NR>
int64_t pack_b_columns(int64_t kc, int64_t cols, const typename V::T* b0, int64_t csb, typename V::T* dst) {
    constexpr int W = V::W;
    static_assert(NR % W == 0, "a sliver is whole vectors");
    int64_t p = 0;
    for (; p + W <= kc; p += W)
#pragma GCC unroll 4
        for (int g = 0; g < NR / W; ++g) {
            typename V::reg r[W];
#pragma GCC unroll 16
            for (int i = 0; i < W; ++i) r[i] = g * W + i < cols ? V::loadu(b0 + (g * W + i) * csb + p) : V::zero();
            V::transpose(r);
#pragma GCC unroll 16
            for (int c = 0; c < W; ++c) V::storeu(dst + (p + c) * NR + g * W, r[c]);
        }
    return p;
}

// Full slivers [0, slivers) of a row-major B (b0: the first one's column 0) into dst, kc x NR
// each, kPackRows rows at a time. load(p): W elements at p as a V::reg (V::loadu, or a widening
// load).
template <typename V, int NR, typename S, typename Load>
void pack_b_rows(int64_t kc, int64_t slivers, const S* b0, int64_t rsb, typename V::T* dst, Load load) {
    constexpr int W = V::W;
    static_assert(NR % W == 0, "a sliver is whole vectors");
    in_pack_groups(kc, [&](auto count, int64_t p) {
        constexpr int R = decltype(count)::value;
        for (int64_t s = 0; s < slivers; ++s) {
            const S* br = b0 + p * rsb + s * NR;
            typename V::T* d = dst + s * NR * kc + p * NR;
#pragma GCC unroll 8
            for (int q = 0; q < R; ++q)
#pragma GCC unroll 8
                for (int j = 0; j < NR; j += W) V::storeu(d + q * NR + j, load(br + q * rsb + j));
        }
    });
}

// Reading elements stored as V::T: pack_b's conversion traits (the 2-byte packers' are the
// kernel file's, see below).
template <typename V>
struct SameType {
    using S = typename V::T;
    static typename V::reg load(const S* p) { return V::loadu(p); }
    static S one(S x) { return x; }
};

// Slivers [s0, s1) of a kc x nc block of B stored as C::S, any strides, into V::T slivers,
// each element converted by C (load: W elements, one: a single one).
template <typename V, int NR, typename C>
void pack_b_as(int64_t kc, int64_t nc, const typename C::S* b, int64_t rsb, int64_t csb, typename V::T* bp, int64_t s0,
               int64_t s1) {
    using T = typename V::T;
    using S = typename C::S;
    int64_t s = s0;
    if (csb == 1 && s < nc / NR) {
        const int64_t full = (s1 < nc / NR ? s1 : nc / NR) - s;
        pack_b_rows<V, NR>(kc, full, b + s * NR, rsb, bp + s * NR * kc, [](const S* p) { return C::load(p); });
        s += full;
    }
    for (; s < s1; ++s) {
        const int64_t j0 = s * NR;
        const int64_t cols = nc - j0 < NR ? nc - j0 : NR;
        const S* b0 = b + j0 * csb;
        T* dst = bp + s * NR * kc;
        if (rsb == 1 && (cols == NR || (std::is_same_v<S, T> && has_transpose<V>))) {
            // B transposed: each column is contiguous along k. A last sliver of few columns
            // read one element per column a k step took 3/4 of 7 x 7 x 10000 float64 (0.37x
            // NumPy on Zen 3); the transposes pad it with zeros.
            int64_t p0 = 0;
            // A full sliver's call keeps NR as the constant bound of its loads.
            if constexpr (std::is_same_v<S, T> && has_transpose<V>)
                p0 = cols == NR ? pack_b_columns<V, NR>(kc, NR, b0, csb, dst)
                                : pack_b_columns<V, NR>(kc, cols, b0, csb, dst);
            for (int j = 0; j < NR; ++j) {
                const S* bc = b0 + j * csb;
                for (int64_t p = p0; p < kc; ++p) dst[p * NR + j] = j < cols ? C::one(bc[p]) : T(0);
            }
        } else if (std::is_same_v<S, T> && csb == 1) {
            // The last sliver of a row-major B: each row's piece read through a mask (zeros in
            // the lanes past it, which are the sliver's padding), whole vectors stored.
            typename V::mask mk[NR / V::W];
#pragma GCC unroll 8
            for (int g = 0; g < NR / V::W; ++g) mk[g] = V::lanes(int(cols) - g * V::W);
            for (int64_t p = 0; p < kc; ++p)
#pragma GCC unroll 8
                for (int g = 0; g < NR / V::W; ++g)
                    V::storeu(dst + p * NR + g * V::W,
                              V::maskz_loadu(mk[g], reinterpret_cast<const T*>(b0) + p * rsb + g * V::W));
        } else {
            for (int64_t p = 0; p < kc; ++p)
                for (int j = 0; j < NR; ++j) dst[p * NR + j] = j < cols ? C::one(b0[p * rsb + j * csb]) : T(0);
        }
    }
}

template <typename V, int NR>
void pack_b(int64_t kc, int64_t nc, const typename V::T* b, int64_t rsb, int64_t csb, typename V::T* bp, int64_t s0,
            int64_t s1) {
    pack_b_as<V, NR, SameType<V>>(kc, nc, b, rsb, csb, bp, s0, s1);
}

// p + step, the result in a register GCC cannot see into: a block's W rows reached one from
// the last, where GCC hoisted all W of their pointers out of copy_columns' loop over blocks and
// reloaded them from the stack (float32 512 x 16x16x64 q @ k.T stacks: the copy 28% of the time).
template <typename P>
[[gnu::always_inline]] inline P opaque_step(P p, int64_t step) {
    p += step;
    __asm__("" : "+r"(p));
    return p;
}

// A W x W block stored by columns (cs apart) written row-major at dst (rows ld apart) through
// V's register transpose.
template <typename V>
[[gnu::always_inline]] inline void transpose_block(const typename V::T* src, int64_t cs, typename V::T* dst,
                                                   int64_t ld) {
    constexpr int W = V::W;
    typename V::reg r[W];
#pragma GCC unroll 16
    for (int q = 0; q < W; ++q, src = opaque_step(src, cs)) r[q] = V::loadu(src);
    V::transpose(r);
#pragma GCC unroll 16
    for (int q = 0; q < W; ++q, dst = opaque_step(dst, ld)) V::storeu(dst, r[q]);
}

// A rows x cols matrix stored by columns (cs apart, each contiguous) copied row-major into dst
// (rows ld apart): W x W blocks through register transposes where V has them (the last rows
// % W rows too, from half a vector, through masked loads), else W columns at a time, so only W
// of its lines are live whatever cs (64 columns at a time, 1 KiB apart, fell into 4 of L1's
// sets and missed on every element); the last cols % W columns likewise, the missing ones zero
// and the stores masked. WHOLE: dst's rows have room for whole vectors (ld at least cols rounded
// up to W), and the last columns go through W x W transposes stored whole, their missing columns
// zero, where the narrower transposes and masked stores (microcoded on AMD cores) took 31% of
// float64 512 x (13 x 13 x 64) q @ k.T stacks.
template <typename V, bool WHOLE = false>
void copy_columns(int64_t rows, int64_t cols, const typename V::T* src, int64_t cs, typename V::T* dst, int64_t ld) {
    constexpr int W = V::W;
    // Fewer rows than a vector, interleaved back to back (B of x @ w with 2-4 columns copied
    // along k, C^T of a few rows transposed back): element by element that was 60% of 2 x 2 x
    // 2048 float64 (perf); and the other way, fewer columns than a vector into rows back to back.
    if constexpr (lane_picks_max_k<V> > 0) {
        if (rows >= 1 && rows < W && rows <= lane_picks_max_k<V> && cs == rows)
            return with_rows<lane_picks_max_k<V>>(rows, [&](auto kc) { deinterleave<V, kc()>(cols, src, dst, ld); });
        if (cols >= 2 && cols < W && cols <= lane_picks_max_k<V> && ld == cols)
            return with_rows<lane_picks_max_k<V>>(cols, [&](auto kc) { weave_columns<V, kc()>(rows, src, cs, dst); });
    }
    int64_t j = 0;
    for (; j + W <= cols; j += W) {
        int64_t i = 0;
        if constexpr (has_transpose<V>)
            for (; i + W <= rows; i += W) transpose_block<V>(src + j * cs + i, cs, dst + i * ld + j, ld);
        // The last rows % W rows, from half a vector: masked loads and the transpose, where
        // element by element was 41% of 13 x 557 x 12 float32 with both operands by columns.
        if constexpr (has_transpose<V>)
            if (2 * (rows - i) >= W) {
                const typename V::mask mr = V::lanes(int(rows - i));
                typename V::reg r[W];
#pragma GCC unroll 16
                for (int q = 0; q < W; ++q) r[q] = V::maskz_loadu(mr, src + (j + q) * cs + i);
                V::transpose(r);
                for (int q = 0; q < rows - i; ++q) V::storeu(dst + (i + q) * ld + j, r[q]);
                i = rows;
            }
        for (; i < rows; ++i)
#pragma GCC unroll 16
            for (int q = 0; q < W; ++q) dst[i * ld + j + q] = src[(j + q) * cs + i];
    }
    if (j == cols) return;
    // One column at a time wrote a strided element per row: copying 20 columns of 1000 took
    // longer than the 20 x 20 x 1000 product it fed.
    const int rem = int(cols - j);
    // Through the half-width registers' transposes (a block and a part for over half a vector):
    // a W x W transpose spends as many shuffles on the missing columns' zero rows as on these.
    using H = typename HalfOf<V>::type;
    if constexpr (!WHOLE && has_half<V> && has_transpose<H>)
        return copy_columns<H>(rows, rem, src + j * cs, cs, dst + j, ld);
    int64_t i = 0;
    if constexpr (has_transpose<V>) {
        const typename V::mask mk = V::lanes(rem);
        for (; i + W <= rows; i += W) {
            typename V::reg r[W];
            const typename V::T* s = src + j * cs + i;
#pragma GCC unroll 16
            for (int q = 0; q < W; ++q) {
                r[q] = q < rem ? V::loadu(s) : V::zero();
                if (q < rem) s = opaque_step(s, cs);
            }
            V::transpose(r);
            typename V::T* d = dst + i * ld + j;
#pragma GCC unroll 16
            for (int q = 0; q < W; ++q, d = opaque_step(d, ld)) {
                if constexpr (WHOLE) V::storeu(d, r[q]);
                else V::mask_storeu(d, mk, r[q]);
            }
        }
    }
    for (; i < rows; ++i)
        for (int q = 0; q < rem; ++q) dst[i * ld + j + q] = src[(j + q) * cs + i];
}

// Packers for 2-byte inputs (bfloat16, float16) into float32 slivers: the same slivers as
// pack_a / pack_b of the float32 table, each element widened on the way (exactly: every
// bfloat16 and float16 value is a float32 value). V: the float32 vector traits. C: the
// conversion traits of the kernel file, C::S the storage type, C::load(p) W elements at p
// widened to a V::reg, C::one(x) one element widened.
template <typename V, typename C, int MR>
void pack_a_cvt(int64_t mc, int64_t kc, const typename C::S* a, int64_t rsa, int64_t csa, float* ap) {
    constexpr int W = V::W;
    for (int64_t i0 = 0; i0 < mc; i0 += MR, ap += MR * kc) {
        const typename C::S* a0 = a + i0 * rsa;
        const int64_t rows = mc - i0 < MR ? mc - i0 : MR;
        if (rows == MR && csa == 1) {
            // Rows contiguous along k: widen W steps at a time, then write the sliver's columns.
            const int64_t kv = kc / W * W;
            for (int i = 0; i < MR; ++i) {
                const typename C::S* ar = a0 + i * rsa;
                float t[W];
                for (int64_t p = 0; p < kv; p += W) {
                    V::storeu(t, C::load(ar + p));
                    for (int l = 0; l < W; ++l) ap[(p + l) * MR + i] = t[l];
                }
                for (int64_t p = kv; p < kc; ++p) ap[p * MR + i] = C::one(ar[p]);
            }
        } else if (rows == MR && rsa == 1) {
            for (int64_t p = 0; p < kc; ++p) {
                const typename C::S* ac = a0 + p * csa;
#pragma GCC unroll 16
                for (int i = 0; i < MR; ++i) ap[p * MR + i] = C::one(ac[i]);
            }
        } else {
            for (int64_t p = 0; p < kc; ++p)
                for (int i = 0; i < MR; ++i) ap[p * MR + i] = i < rows ? C::one(a0[i * rsa + p * csa]) : 0.0f;
        }
    }
}

template <typename V, typename C, int NR>
void pack_b_cvt(int64_t kc, int64_t nc, const typename C::S* b, int64_t rsb, int64_t csb, float* bp, int64_t s0,
                int64_t s1) {
    pack_b_as<V, NR, C>(kc, nc, b, rsb, csb, bp, s0, s1);
}

}  // namespace kernels
}  // namespace fastgemm
