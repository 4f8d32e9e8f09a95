"""Max error of the fused epilogue's activations, in ulps of the output type.

float32: every 61st float32 bit pattern of each sign (about 70 million inputs, every binade),
against a float64 reference (SciPy's erfc for gelu). float64: 4000 inputs per activation,
log-spaced over each activation's range of both signs, against mpmath at 40 digits. An ulp is
the spacing of the output type at the reference value (at the smallest normal for subnormal
results). Run with the kernel to measure: FASTGEMM_KERNEL=avx2 python bench/epilogue_accuracy.py
Results go into docs/DESIGN.md, "Fused bias and activation".
"""

from __future__ import annotations

import mpmath
import numpy as np
from scipy import special

import fastgemm as fg

ACTS = ("relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh")
C1 = np.sqrt(2 / np.pi)


def ref64(act, x):
    """float64 reference of act at float32 inputs (exact to well under a float32 ulp)."""
    if act == "relu":
        return np.maximum(x, 0)
    if act == "gelu":
        return 0.5 * x * special.erfc(-x / np.sqrt(2))
    if act == "gelu_tanh":
        return x * special.expit(2 * C1 * (x + 0.044715 * x**3))
    if act == "silu":
        return x * special.expit(x)
    if act == "sigmoid":
        return special.expit(x)
    return np.tanh(x)


def ref_mp(act, x):
    x = mpmath.mpf(float(x))
    if act == "relu":
        return max(x, 0)
    if act == "gelu":
        return x * mpmath.erfc(-x / mpmath.sqrt(2)) / 2
    if act == "gelu_tanh":
        return x / (1 + mpmath.exp(-2 * mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3)))
    if act == "silu":
        return x / (1 + mpmath.exp(-x))
    if act == "sigmoid":
        return 1 / (1 + mpmath.exp(-x))
    return mpmath.tanh(x)


def run(x, act):
    """act(x) through fastgemm's epilogue: alpha = 0, beta = 1 leaves C = act(C)."""
    c = np.array(x).reshape(1, -1)
    a = np.zeros((1, 0), x.dtype)
    b = np.zeros((0, c.shape[1]), x.dtype)
    return fg.gemm(a, b, c, beta=1.0, activation=act).ravel()


def ulps(y, ref, mant_bits, min_exp):
    r = np.abs(ref)
    finite = np.isfinite(r) & np.isfinite(y)
    e = np.floor(np.log2(np.maximum(r, 2.0**min_exp)))
    err = np.abs(y.astype(np.float64) - ref) / 2.0 ** (e - mant_bits)
    return np.where(finite, err, 0.0), np.abs(y.astype(np.float64) - ref)


def float32_errors():
    out = {}
    pats = np.arange(0, 0x7F800000, 61, dtype=np.uint32)
    for act in ACTS:
        worst, at = 0.0, 0.0
        for sign in (0, 0x80000000):
            for chunk in np.array_split(pats, 16):
                x = (chunk | np.uint32(sign)).view(np.float32)
                y = run(x, act)
                err, _ = ulps(y, ref64(act, x.astype(np.float64)), 23, -126)
                i = int(np.argmax(err))
                if err[i] > worst:
                    worst, at = float(err[i]), float(x[i])
        out[act] = (worst, at)
    return out


def float64_errors():
    mpmath.mp.dps = 40
    out = {}
    rng = np.random.default_rng(1)
    for act in ACTS:
        mag = 10.0 ** rng.uniform(-8, 2.2, 4000)
        x = mag * rng.choice([-1.0, 1.0], 4000)
        y = run(x, act)
        ref = np.array([float(ref_mp(act, v)) for v in x])
        # float(mpf) rounds the reference once: good to 0.5 ulp of float64, so measured
        # errors below about 1 ulp are within the reference's own rounding.
        err, _ = ulps(y, ref, 52, -1022)
        i = int(np.argmax(err))
        out[act] = (float(err[i]), float(x[i]))
    return out


if __name__ == "__main__":
    print("kernel", fg.get_kernel() if hasattr(fg, "get_kernel") else "")
    for name, res in (("float32", float32_errors()), ("float64", float64_errors())):
        for act, (e, at) in res.items():
            print(f"{name:8s} {act:10s} max {e:6.2f} ulp  at x = {at:.6g}")
