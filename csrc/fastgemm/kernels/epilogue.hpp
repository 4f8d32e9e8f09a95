// The fused epilogue of one block of C: bias add and activation, vectorised over the kernel
// file's vector traits V, with the exp / expm1 / erfc approximations the activations need.
// Included only from kernels/*.cpp (through table.hpp). Every template takes a vector-traits
// type V, and each kernel file's V is a distinct type in an anonymous namespace, so
// instantiations compiled with different ISA flags never share a symbol.
//
// Besides table.hpp's operations V provides add, sub, div, max(a, b) and min(a, b) (b
// returned when either is NaN on x86, NaN on NEON: NaN goes in b), abs, blend_lt(a, b, x, y)
// (x where a < b, else y) and pow2i(n) (2^n for integral n in the normal exponent range).
// Errors measured against float64 / mpmath references: docs/DESIGN.md, "Fused bias and activation".
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../epilogue.hpp"
#include "../kernel.hpp"

// The exact-error steps (FMA residuals, two-sums) need each product rounded on its own: GCC
// contracts a * b + c across statements by default in C++, which makes the residuals 0.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace fastgemm {
namespace kernels {
namespace epi {

template <typename T>
constexpr bool kF32 = std::is_same_v<T, float>;

// a * b - p exactly when p = a * b rounded: one FMA; the one-lane traits of kernels/generic.cpp
// compute fmadd unfused (baseline x86-64 has no FMA), so they take libm's fma.
template <typename V>
typename V::reg residual(typename V::reg a, typename V::reg b, typename V::reg p) {
    if constexpr (V::W == 1) return std::fma(a, b, -p);
    else return V::fmadd(a, b, V::sub(V::zero(), p));
}

// round(x) for |x| < 2^22 (float) / 2^51 (double): the magic-number add rounds to nearest even.
template <typename V>
typename V::reg round_small(typename V::reg x) {
    using T = typename V::T;
    const T magic = kF32<T> ? T(12582912.0) : T(6755399441055744.0);  // 1.5 * 2^23 / 2^52
    return V::sub(V::add(x, V::set1(magic)), V::set1(magic));
}

// x = n ln2 + r, |r| <= ln2 / 2, n integral (Cody-Waite: n * ln2_hi is exact).
template <typename V>
typename V::reg reduce_ln2(typename V::reg x, typename V::reg& n) {
    using T = typename V::T;
    const T log2e = T(1.4426950408889634), hi = kF32<T> ? T(0.693359375) : T(6.93147180369123816490e-01),
            lo = kF32<T> ? T(-2.12194440e-4) : T(1.90821492927058770002e-10);
    n = round_small<V>(V::mul(x, V::set1(log2e)));
    const typename V::reg r = V::fmadd(n, V::set1(-hi), x);
    return V::fmadd(n, V::set1(-lo), r);
}

// 1 / j! for j <= N, the Taylor coefficients of e^r.
template <typename T, int N>
struct InvFactorials {
    T v[N + 1];
    constexpr InvFactorials() : v() {
        v[0] = T(1);
        for (int j = 1; j <= N; ++j) v[j] = v[j - 1] / T(j);
    }
};

// (e^r - 1 - r) / r^2 for |r| <= ln2 / 2: Taylor to degree 7 (float, truncation < 0.1 ulp)
// or 13 (double).
template <typename V>
typename V::reg expm1_tail(typename V::reg r) {
    using T = typename V::T;
    constexpr int kTop = kF32<T> ? 7 : 13;
    static constexpr InvFactorials<T, kTop> inv{};
    typename V::reg q = V::set1(inv.v[kTop]);
#pragma GCC unroll 16
    for (int j = kTop - 1; j >= 2; --j) q = V::fmadd(q, r, V::set1(inv.v[j]));
    return q;
}

// e^x 2^scale for every x (NaN stays NaN), scale 0 or 64: 0 far below the subnormal range,
// inf above the finite range. 2^n is applied as two factors so a subnormal result rounds
// once, as the true value would; scale 64 keeps a tiny e^x normal for a later product.
template <typename V>
typename V::reg exp(typename V::reg x, typename V::T scale = 0) {
    using T = typename V::T;
    using R = typename V::reg;
    const T lo = kF32<T> ? T(-150) : T(-1100), hi = kF32<T> ? T(89) : T(710);
    x = V::min(V::set1(hi), V::max(V::set1(lo), x));
    R n;
    const R r = reduce_ln2<V>(x, n);
    const R p = V::add(V::fmadd(V::mul(r, r), expm1_tail<V>(r), r), V::set1(T(1)));  // one rounding near 1
    n = V::add(n, V::set1(scale));
    const R h = round_small<V>(V::mul(n, V::set1(T(0.5))));
    return V::mul(V::mul(p, V::pow2i(h)), V::pow2i(V::sub(n, h)));
}

// e^x - 1 for 0 <= x <= 2^(exponent bits - 2) (what tanh needs), accurate near 0.
template <typename V>
typename V::reg expm1(typename V::reg x) {
    using T = typename V::T;
    using R = typename V::reg;
    R n;
    const R r = reduce_ln2<V>(x, n);
    const R p = V::fmadd(V::mul(r, r), expm1_tail<V>(r), r);  // e^r - 1
    const R s = V::pow2i(n);
    return V::fmadd(s, p, V::sub(s, V::set1(T(1))));  // 2^n (e^r - 1) + 2^n - 1
}

// 1 / (1 + e^-v), from e^-|v| so neither tail cancels.
template <typename V>
typename V::reg sigmoid(typename V::reg v) {
    using T = typename V::T;
    using R = typename V::reg;
    const R one = V::set1(T(1));
    const R e = exp<V>(V::sub(V::zero(), V::abs(v)));
    return V::div(V::blend_lt(v, V::zero(), e, one), V::add(one, e));
}

// r 2^-S where c < 0 (S = 64 float, 128 double), r elsewhere; r taken as 0 where the scaled
// product would underflow to 0 (x86 cores take a slow assist for results that underflow).
template <typename V>
typename V::reg unscale_tail(typename V::reg r, typename V::reg c) {
    using T = typename V::T;
    constexpr bool f = kF32<T>;
    const T zero_below = f ? T(0x1p-86) : T(0x1p-947);  // 2^-150 / 2^-1075 times 2^S
    const typename V::reg thr = V::blend_lt(c, V::zero(), V::set1(zero_below), V::zero());
    r = V::blend_lt(V::abs(r), thr, V::mul(r, V::zero()), r);
    return V::mul(r, V::blend_lt(c, V::zero(), V::set1(f ? T(0x1p-64) : T(0x1p-128)), V::set1(T(1))));
}

// x sigmoid(v) for v = vh + vl (vl: the low part of v carried by gelu_tanh, or 0): e^-|v| is
// kept scaled by 2^S (S = 64 float, 128 double) until the last product, so a subnormal result
// rounds once and no subnormal is made on the way: |vh| is held at 113 / 770 (the callers
// hold x where the result is already 0 below that), 1 + e is one FMA, and lanes with v >= 0
// skip the scaling.
template <typename V, bool kLow>
typename V::reg x_sigmoid(typename V::reg x, typename V::reg vh, typename V::reg vl) {
    using T = typename V::T;
    using R = typename V::reg;
    constexpr bool f = kF32<T>;
    const T scale = f ? T(64) : T(128), unscale = f ? T(0x1p-64) : T(0x1p-128);
    const R va = V::min(V::set1(f ? T(113) : T(770)), V::abs(vh));
    R es = exp<V>(V::sub(V::zero(), va), scale);  // e^-|vh| 2^S
    if constexpr (kLow) es = V::fmadd(es, V::blend_lt(vh, V::zero(), vl, V::sub(V::zero(), vl)), es);
    const R q = V::div(x, V::fmadd(es, V::set1(unscale), V::set1(T(1))));  // x / (1 + e)
    const R neg = V::blend_lt(vh, V::zero(), es, V::set1(T(1)));
    return unscale_tail<V>(V::mul(q, neg), vh);
}

// tanh(x) = sign(x) e / (e + 2) with e = expm1(2|x|): no cancellation near 0; 1 from |x| = 10
// (float) / 20 (double) on, where tanh rounds to 1.
template <typename V>
typename V::reg tanh(typename V::reg x) {
    using T = typename V::T;
    using R = typename V::reg;
    const R xa = V::min(V::set1(kF32<T> ? T(10) : T(20)), V::abs(x));
    const R e = expm1<V>(V::add(xa, xa));
    const R t = V::div(e, V::add(e, V::set1(T(2))));
    return V::blend_lt(x, V::zero(), V::sub(V::zero(), t), V::blend_lt(xa, V::set1(T(1e-30)), x, t));
}

// 2^64 erfc(|x| / sqrt 2) / 2 for float: Numerical Recipes' erfcc, t exp(-z^2 + P(t)), t = 1 / (1 +
// z / 2) (fractional error < 1.2e-7), with z^2 = x^2 / 2 carried exactly (FMA error term and
// a two-sum) so the exponent's rounding does not grow with z^2.
template <typename V>
typename V::reg half_erfc_f32(typename V::reg xa) {
    using R = typename V::reg;
    const R z = V::mul(xa, V::set1(0.70710678118654752f));
    const R t = V::div(V::set1(1.0f), V::fmadd(z, V::set1(0.5f), V::set1(1.0f)));
    const float c[10] = {-1.26551223f, 1.00002368f,  0.37409196f, 0.09678418f,  -0.18628806f,
                         0.27886807f,  -1.13520398f, 1.48851587f, -0.82215223f, 0.17087277f};
    R p = V::set1(c[9]);
#pragma GCC unroll 9
    for (int j = 8; j >= 0; --j) p = V::fmadd(p, t, V::set1(c[j]));
    const R sq = V::mul(xa, xa);
    const R sq_err = residual<V>(xa, xa, sq);  // xa^2 = sq + sq_err exactly
    const R a = V::mul(sq, V::set1(-0.5f));    // exact
    const R b = V::fmadd(sq_err, V::set1(-0.5f), p);
    const R s = V::add(a, b);  // two-sum: s + err = a + b exactly
    const R bb = V::sub(s, a);
    const R err = V::add(V::sub(a, V::sub(s, bb)), V::sub(b, bb));
    const R e = exp<V>(s, 64.0f);
    return V::mul(V::mul(t, V::set1(0.5f)), V::fmadd(e, err, e));
}

// Each activation as a functor over registers.
template <typename V>
struct Identity {
    typename V::reg operator()(typename V::reg x) const { return x; }
};

template <typename V>
struct Relu {
    typename V::reg operator()(typename V::reg x) const { return V::max(V::zero(), x); }  // NaN stays
};

template <typename V>
struct Sigmoid {
    typename V::reg operator()(typename V::reg x) const { return sigmoid<V>(x); }
};

template <typename V>
struct Tanh {
    typename V::reg operator()(typename V::reg x) const { return tanh<V>(x); }
};

// x sigmoid(x); x held at -110 (float) / -755 (double) below, where the result is -0 anyway,
// so -inf gives -0, not -inf * 0.
template <typename V>
struct Silu {
    typename V::reg operator()(typename V::reg x) const {
        using T = typename V::T;
        x = V::max(V::set1(kF32<T> ? T(-110) : T(-755)), x);
        return x_sigmoid<V, false>(x, x, V::zero());
    }
};

// 0.5 x (1 + tanh(u)) = x sigmoid(2u), 2u = v = x (c1 + c2 x^2): the sigmoid form keeps the
// negative tail from cancelling, and v is carried as vh + vl (exact products by FMA, the
// constants split in two) because the tail's relative error is |v| times v's. x held at
// -11 / -21.7 below (the result is -0 there) and, for v only, at +11 / +21.7 above (sigmoid is 1).
template <typename V>
struct GeluTanh {
    typename V::reg operator()(typename V::reg x) const {
        using T = typename V::T;
        using R = typename V::reg;
        constexpr bool f = kF32<T>;
        const R c1h = V::set1(f ? T(1.5957691669464111) : T(1.5957691216057308)),
                c1l = V::set1(f ? T(-4.534068054340423e-08) : T(-9.96930880911092e-17)),
                c2h = V::set1(f ? T(0.07135481387376785) : T(0.07135481627260025)),
                c2l = V::set1(f ? T(2.3988324659995897e-09) : T(-6.175149918155315e-19));
        const T bound = f ? T(11) : T(21.7);
        x = V::max(V::set1(-bound), x);
        const R xc = V::min(V::set1(bound), x);
        const R x2 = V::mul(xc, xc), x2l = residual<V>(xc, xc, x2);  // xc^2 = x2 + x2l
        const R p = V::mul(c2h, x2), pl = residual<V>(c2h, x2, p);   // c2h x2 = p + pl
        const R s = V::add(c1h, p), bb = V::sub(s, c1h);             // two-sum c1h + p
        const R sl = V::add(V::sub(c1h, V::sub(s, bb)), V::sub(p, bb));
        const R il = V::add(V::add(sl, pl), V::fmadd(c2h, x2l, V::fmadd(c2l, x2, c1l)));  // c1 + c2 xc^2 = s + il
        const R vh = V::mul(xc, s);
        const R vl = V::fmadd(xc, il, residual<V>(xc, s, vh));
        return x_sigmoid<V, true>(x, vh, vl);
    }
};

// x Phi(x) = x (1 - q) for x >= 0, x q for x < 0, q = erfc(|x| / sqrt 2) / 2. float: the
// vector erfc above; double: libm's erfc per lane (a double-accurate vector erfc is not
// written), its argument's rounding corrected to first order. x held at -15 (float) / -40
// (double) below, where the result is -0.
template <typename V>
struct Gelu {
    typename V::reg operator()(typename V::reg x) const {
        using T = typename V::T;
        using R = typename V::reg;
        if constexpr (kF32<T>) {
            x = V::max(V::set1(-15.0f), x);
            const R qs = half_erfc_f32<V>(V::min(V::set1(15.0f), V::abs(x)));  // q 2^64
            // x q 2^64 or x (1 - q), then the 2^-64 only where x < 0 (no subnormal in other lanes).
            const R r = V::blend_lt(x, V::zero(), qs, V::fmadd(qs, V::set1(-0x1p-64f), V::set1(1.0f)));
            return unscale_tail<V>(V::mul(x, r), x);
        } else {
            T lanes[V::W];
            V::storeu(lanes, x);
            for (int l = 0; l < V::W; ++l) {
                const T xl = lanes[l] < T(-40) ? T(-40) : lanes[l];  // NaN stays
                // w + wl = -x / sqrt 2 to about 2^-106; erfc(w + wl) = erfc(w) - wl 2/sqrt(pi) e^-w^2.
                const T rh = 0.7071067811865476, rl = -4.833646656726457e-17;
                const T w = -xl * rh, wl = std::fma(-xl, rh, -w) - xl * rl;
                const T fix = std::isfinite(w) ? wl * T(1.1283791670955126) * std::exp(-w * w) : T(0);
                const T q = std::erfc(w) - fix;
                lanes[l] = T(0.5) * xl * q;
            }
            return V::loadu(lanes);
        }
    }
};

// c[i, j] = f(c[i, j] + bias[j]) (no add without a bias: -0 stays -0).
template <typename V, bool kBias, typename F>
void apply(int64_t m, int64_t n, typename V::T* c, int64_t rsc, const typename V::T* bias, F f) {
    using R = typename V::reg;
    constexpr int W = V::W;
    const int64_t full = n / W * W;
    for (int64_t j = 0; j < full; j += W) {
        R b = V::zero();
        if constexpr (kBias) b = V::loadu(bias + j);
        for (int64_t i = 0; i < m; ++i) {
            typename V::T* p = c + i * rsc + j;
            R x = V::loadu(p);
            if constexpr (kBias) x = V::add(x, b);
            V::storeu(p, f(x));
        }
    }
    if (full == n) return;
    const typename V::mask tail = V::lanes(int(n - full));
    R b = V::zero();
    if constexpr (kBias) b = V::maskz_loadu(tail, bias + full);
    for (int64_t i = 0; i < m; ++i) {
        typename V::T* p = c + i * rsc + full;
        R x = V::maskz_loadu(tail, p);
        if constexpr (kBias) x = V::add(x, b);
        V::mask_storeu(p, tail, f(x));
    }
}

template <typename V, typename F>
void apply(int64_t m, int64_t n, typename V::T* c, int64_t rsc, const typename V::T* bias, F f) {
    if (bias) apply<V, true>(m, n, c, rsc, bias, f);
    else apply<V, false>(m, n, c, rsc, bias, f);
}

}  // namespace epi

// KernelTable::epilogue: c[i, j] = act(c[i, j] + bias[j]) for i < m, j < n (bias may be null).
template <typename V>
void epilogue(int64_t m, int64_t n, typename V::T* c, int64_t rsc, const typename V::T* bias, Activation act) {
    switch (act) {
        case Activation::none: return epi::apply<V>(m, n, c, rsc, bias, epi::Identity<V>{});
        case Activation::relu: return epi::apply<V>(m, n, c, rsc, bias, epi::Relu<V>{});
        case Activation::gelu: return epi::apply<V>(m, n, c, rsc, bias, epi::Gelu<V>{});
        case Activation::gelu_tanh: return epi::apply<V>(m, n, c, rsc, bias, epi::GeluTanh<V>{});
        case Activation::silu: return epi::apply<V>(m, n, c, rsc, bias, epi::Silu<V>{});
        case Activation::sigmoid: return epi::apply<V>(m, n, c, rsc, bias, epi::Sigmoid<V>{});
        case Activation::tanh: return epi::apply<V>(m, n, c, rsc, bias, epi::Tanh<V>{});
    }
}

}  // namespace kernels
}  // namespace fastgemm

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
