"""What the tests share: the reference product with its error bound, and matrices placed in
guarded byte buffers with chosen strides so a test can check nothing outside them changed."""

from __future__ import annotations

import numpy as np

import fastgemm

DTYPES = (np.float32, np.float64)
UNIT_ROUNDOFF = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 2.0**-53}
GEMM = {np.dtype(np.float32): fastgemm.sgemm, np.dtype(np.float64): fastgemm.dgemm}

# Byte strides as a function of (rows, cols, itemsize), plus a byte offset added to the start.
# "unaligned" and "oddbytes" give arrays the core cannot index by whole elements.
LAYOUTS = {
    "C": (lambda r, c, s: (c * s, s), 0),
    "F": (lambda r, c, s: (s, r * s), 0),
    "stepped": (lambda r, c, s: ((2 * c + 3) * s, 2 * s), 0),
    "negative": (lambda r, c, s: (-c * s, -s), 0),
    "negrow_F": (lambda r, c, s: (-s, r * s), 0),
    "unaligned": (lambda r, c, s: (c * s, s), 1),
    "oddbytes": (lambda r, c, s: ((s + 1) * c + 3, s + 1), 1),
}
ELEMENT_LAYOUTS = ("C", "F", "stepped", "negative", "negrow_F")  # strides in whole elements

_GUARD = 64
_SENTINEL = 0x7F  # as float32/float64 bytes: a huge finite number, easy to tell from results


class Placed:
    """`arr` holds `values` with the layout's strides inside a larger sentinel-filled buffer."""

    def __init__(self, values, layout="C"):
        values = np.asarray(values)
        r, c = values.shape
        s = values.itemsize
        strides_fn, extra = LAYOUTS[layout]
        strides = strides_fn(max(r, 1), max(c, 1), s)
        lo = sum(min(0, (d - 1) * st) for d, st in zip((r, c), strides) if d > 0)
        hi = sum(max(0, (d - 1) * st) for d, st in zip((r, c), strides) if d > 0) + s
        start = _GUARD + extra - lo
        self.buf = np.full(start + hi + _GUARD, _SENTINEL, dtype=np.uint8)
        self.arr = np.ndarray((r, c), values.dtype, buffer=self.buf, offset=start, strides=strides)
        self.arr[...] = values
        marks = np.zeros_like(self.buf)
        uint = np.dtype(f"u{s}")
        np.ndarray((r, c), uint, buffer=marks, offset=start, strides=strides)[...] = np.iinfo(uint).max
        self._outside = marks == 0
        self._before = self.buf.copy()

    def untouched_outside(self):
        return np.array_equal(self.buf[self._outside], self._before[self._outside])

    def untouched(self):
        return np.array_equal(self.buf, self._before)


def on_threads(fn, counts=(1, 2)):
    """[fn() with fastgemm on each thread count in turn]; the count in use is restored after."""
    before = fastgemm.get_num_threads()
    try:
        results = []
        for n in counts:
            fastgemm.set_num_threads(n)
            results.append(fn())
        return results
    finally:
        fastgemm.set_num_threads(before)


def random_matrix(rng, shape, dtype):
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def op(x, trans):
    return x.T if trans else x


def reference(a, b, c0, alpha, beta, trans_a=False, trans_b=False):
    """alpha * op(A) @ op(B) + beta * C0 in a wider type, and the error bound each entry may
    differ by. BLAS rules: beta == 0 ignores C0, alpha == 0 or k == 0 ignores A and B."""
    wide = np.float64 if a.dtype == np.float32 else np.longdouble
    # The scalars are used in the array's precision (a beta that underflows to 0 is 0).
    alpha, beta = a.dtype.type(alpha), a.dtype.type(beta)
    opa = op(a, trans_a).astype(wide)
    opb = op(b, trans_b).astype(wide)
    m, k = opa.shape
    n = opb.shape[1]
    prod = np.zeros((m, n), wide)
    mag = np.zeros((m, n), wide)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf inputs are tested on purpose
        if alpha != 0 and k != 0:
            prod = wide(alpha) * (opa @ opb)
            mag = abs(wide(alpha)) * (abs(opa) @ abs(opb))
        if beta != 0:
            prod = prod + wide(beta) * c0.astype(wide)
            mag = mag + abs(wide(beta)) * abs(c0.astype(wide))
    # K roundings in the dot product, one for alpha, one for the beta update (docs/DESIGN.md, "Numerics":
    # 2*K*u with K+2 so K = 0 and K = 1 still allow the scaling roundings), plus as many
    # subnormal spacings for results that underflow.
    u = UNIT_ROUNDOFF[np.dtype(a.dtype)]
    tiny = np.finfo(a.dtype).smallest_subnormal
    return prod, 2 * (k + 2) * (u * mag + wide(tiny))


def assert_matches(got, ref, bound, what=""):
    """Finite entries within the bound; non-finite entries exactly as IEEE arithmetic gives."""
    got = np.asarray(got)
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, expected {ref.shape}"
    g = got.astype(ref.dtype)
    fin = np.isfinite(ref)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(g), nan), f"{what}: NaN at {np.argwhere(np.isnan(g) != nan)[:5].tolist()}"
    inf = ~fin & ~nan
    assert np.array_equal(g[inf], ref[inf]), f"{what}: Inf entries differ"
    err = abs(g[fin] - ref[fin])
    ok = err <= bound[fin]
    if not ok.all():
        i = np.argmin(ok)
        raise AssertionError(
            f"{what}: {np.count_nonzero(~ok)} of {ok.size} entries outside the bound; "
            f"worst index {np.argwhere(fin)[i].tolist()}: got {g[fin][i]!r}, "
            f"reference {ref[fin][i]!r}, bound {bound[fin][i]!r}"
        )


def check_into_placed(a, b, c0, layout, alpha, beta, what):
    """sgemm / dgemm (by dtype) into C = c0 placed with `layout`: it returns that very array, which
    then matches the reference, and nothing outside C changed."""
    c = Placed(c0, layout)
    out = GEMM[np.dtype(c0.dtype)](a, b, c.arr, alpha=alpha, beta=beta)
    assert out is c.arr, what
    ref, bound = reference(a, b, c0, alpha, beta)
    assert_matches(c.arr, ref, bound, what)
    assert c.untouched_outside(), f"{what}: wrote outside C"


def check_placed_on_threads(a, b, c0, layout, alpha, beta, what):
    """sgemm / dgemm (by dtype) into C = c0 placed with `layout` (NaN-filled for beta 0: no NaN
    may survive) on 1 and 2 threads: nothing outside C changes, the 1-thread result matches the
    reference, and the 2-thread one has its bits."""

    def product():
        placed = Placed(c0, layout)
        if beta == 0:
            placed.arr[...] = np.nan
        GEMM[np.dtype(c0.dtype)](a, b, placed.arr, alpha=alpha, beta=beta)
        assert placed.untouched_outside(), f"{what}: wrote outside C"
        return placed.arr.copy()

    got = on_threads(product)
    ref, bound = reference(a, b, c0, alpha, beta)
    assert_matches(got[0], ref, bound, what)
    assert np.array_equal(got[0], got[1]), f"{what}: 1 and 2 threads differ"


def tiles(kernel, dtype):
    """mr, nr, mc, kc, nc of `kernel` for `dtype`."""
    t = fastgemm._core.kernel_info(kernel)["float32" if np.dtype(dtype) == np.float32 else "float64"]
    return t["mr"], t["nr"], t["mc"], t["kc"], t["nc"]
