"""bfloat16 and float16 products: fastgemm.gemm (sbgemm / shgemm semantics), fastgemm.matmul
(NumPy's result dtypes) and the switch's float16 loop, on every kernel this machine runs.

Reference: the float64 product of the exact 2-byte input values. Bound: 2 (K + 2) u32 |A||B|
(float32 accumulation of exact inputs) plus, for a 2-byte result, one rounding of the output
type (u = 2^-11 for float16, 2^-8 for bfloat16) times |C|.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fastgemm
from fastgemm import _core
from gemm_check import Placed, tiles

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
LOWP = (F16, BF16)
U32 = 2.0**-24
U_OUT = {F16: 2.0**-11, BF16: 2.0**-8, np.dtype(np.float32): 0.0}
# Half the spacing of the output type's subnormals: a rounding there is absolute, not relative.
SUB_OUT = {F16: 2.0**-25, BF16: 2.0**-134, np.dtype(np.float32): 0.0}
RNG = np.random.default_rng(1111)


def rand(shape, dtype, scale=1.0):
    return (RNG.uniform(-1, 1, size=shape) * scale).astype(np.float32).astype(dtype)


def check(got, a, b, *, alpha=1.0, beta=0.0, c0=None, out_dtype=np.float32, what=""):
    """got == alpha a @ b + beta c0 within the bound (a, b: the exact 2-byte inputs)."""
    a64, b64 = np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ref = alpha * np.matmul(a64, b64) if alpha != 0 else np.zeros(np.broadcast_shapes(got.shape))
        mag = abs(alpha) * np.matmul(abs(a64), abs(b64)) if alpha != 0 else np.zeros_like(ref)
        if beta != 0:
            c64 = np.asarray(c0).astype(np.float64)
            ref = ref + beta * c64
            mag = mag + abs(beta) * abs(c64)
    k = a64.shape[-1]
    with np.errstate(invalid="ignore"):
        out = np.dtype(out_dtype)
        bound = 2 * (k + 2) * (U32 * mag + 2.0**-149) + U_OUT[out] * abs(ref) + SUB_OUT[out]
    assert got.dtype == np.dtype(out_dtype), what
    assert got.shape == ref.shape, what
    g = np.asarray(got).astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(ref)), what
    fin = np.isfinite(ref)
    assert np.array_equal(g[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)]), what
    err = abs(g[fin] - ref[fin])
    assert np.all(err <= bound[fin]), f"{what}: worst excess {np.max(err - bound[fin])}"


# --- fastgemm.gemm: sbgemm / shgemm ------------------------------------------------------


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
def test_gemm_edges_around_tiles_and_blocks(dt, kernel):
    mr, nr, mc, kc, _ = tiles(kernel, np.float32)
    shapes = [(1, 1, 1), (1, 37, 41), (37, 1, 41), (13, 17, 19), (mc + 1, nr + 1, kc + 1)]
    for d in (-1, 0, 1):
        shapes += [(mr + d, nr + 1, 7), (mr + 1, nr + d, kc + d), (2 * mr + d, 2 * nr - d, 3)]
    for m, n, k in shapes:
        a, b = rand((m, k), dt), rand((k, n), dt)
        c = fastgemm.gemm(a, b)
        check(c, a, b, what=f"{kernel} {dt} {m}x{n}x{k}")


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
@pytest.mark.parametrize("la", ["C", "F", "stepped", "negative"])
@pytest.mark.parametrize("lb", ["C", "F", "stepped", "negative"])
def test_gemm_layouts_and_transposes(dt, la, lb, kernel):
    for m, n, k in ((23, 29, 31), (1, 40, 33), (40, 1, 33)):
        a0, b0 = rand((m, k), dt), rand((k, n), dt)
        pa, pb = Placed(a0, la), Placed(b0, lb)
        c0 = rand((m, n), np.float32)
        pc = Placed(c0, "F")
        fastgemm.gemm(pa.arr, pb.arr, pc.arr, alpha=0.5, beta=-1.5)
        check(pc.arr, a0, b0, alpha=0.5, beta=-1.5, c0=c0, what=f"{la} {lb}")
        assert pc.untouched_outside() and pa.untouched() and pb.untouched()
        ct = fastgemm.gemm(np.ascontiguousarray(a0.T), b0.T.copy(), trans_a=True, trans_b="T")
        check(ct, a0, b0)


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
def test_gemm_misaligned_operands_are_copied(dt):
    a0, b0 = rand((9, 10), dt), rand((10, 11), dt)
    pa, pb = Placed(a0, "unaligned"), Placed(b0, "oddbytes")
    check(fastgemm.gemm(pa.arr, pb.arr), a0, b0)


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
@pytest.mark.parametrize(("alpha", "beta"), [(1.0, 0.0), (0.0, 0.0), (0.0, 2.0), (-2.0, 1.0), (1.0, 1.0)])
def test_gemm_alpha_beta_corners(dt, alpha, beta):
    a, b = rand((20, 30), dt), rand((30, 25), dt)
    c0 = rand((20, 25), np.float32)
    if beta == 0.0:
        c0[0, 0] = np.nan  # beta == 0 never reads C
    if alpha == 0.0:
        a[0, 0] = np.nan  # alpha == 0 never reads A or B
    c = c0.copy()
    fastgemm.gemm(a, b, c, alpha=alpha, beta=beta)
    if alpha == 0.0:
        want = np.zeros_like(c0) if beta == 0.0 else (np.float32(beta) * c0)
        assert np.array_equal(c, want)
    else:
        check(c, a, b, alpha=alpha, beta=beta, c0=c0)


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
def test_gemm_c_of_the_input_type_is_rounded_once(dt):
    a, b = rand((30, 40), dt), rand((40, 20), dt)
    c0 = rand((30, 20), dt)
    c = c0.copy()
    out = fastgemm.gemm(a, b, c, alpha=1.0, beta=0.5)
    assert out is c and c.dtype == dt
    c32 = c0.astype(np.float32)
    fastgemm.gemm(a, b, c32, beta=0.5)
    assert np.array_equal(c, c32.astype(dt))  # exactly one rounding of the float32 result
    check(c, a, b, beta=0.5, c0=c0, out_dtype=dt)


def test_gemm_k_zero_and_empty():
    for dt in LOWP:
        a, b = np.zeros((3, 0), dt), np.zeros((0, 4), dt)
        assert np.array_equal(fastgemm.gemm(a, b), np.zeros((3, 4), np.float32))
        assert fastgemm.gemm(np.zeros((0, 5), dt), np.zeros((5, 4), dt)).shape == (0, 4)


def test_gemm_bad_dtypes():
    a16, abf = rand((4, 4), F16), rand((4, 4), BF16)
    with pytest.raises(TypeError, match="mixed bfloat16 / float16"):
        fastgemm.gemm(a16, abf)
    with pytest.raises(TypeError, match="mixed bfloat16 / float16"):
        fastgemm.gemm(abf, a16)
    with pytest.raises(TypeError, match="must be float16 too"):
        fastgemm.gemm(a16, a16.astype(np.float32))
    with pytest.raises(TypeError, match="c must be float32 or"):
        fastgemm.gemm(abf, abf, np.zeros((4, 4), np.float64))
    with pytest.raises(TypeError, match="c must be float32 or"):
        fastgemm.gemm(abf, abf, np.zeros((4, 4), F16))
    with pytest.raises(TypeError, match="non-native byte order"):
        fastgemm.gemm(a16.astype(">f2"), a16)
    with pytest.raises(TypeError, match="ml_dtypes"):
        fastgemm.gemm(np.ones((2, 2), np.int16), np.ones((2, 2), np.int16))
    with pytest.raises(ValueError, match="inner dimensions"):
        fastgemm.gemm(a16, rand((5, 4), F16))
    with pytest.raises(ValueError, match="beta"):
        fastgemm.gemm(a16, a16, beta=1.0)
    with pytest.raises(ValueError, match="overlap"):
        fastgemm.gemm(a16, a16, np.lib.stride_tricks.as_strided(np.zeros(4, np.float32), (4, 4), (0, 4)))
    with pytest.raises(TypeError):
        _core.gemm_lowp(a16, abf, np.zeros((4, 4), np.float32), 1.0, 0.0)
    with pytest.raises(TypeError):
        _core.gemm_lowp(a16.astype(">f2"), a16, np.zeros((4, 4), np.float32), 1.0, 0.0)


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
def test_nan_and_inf(dt, kernel):
    a, b = rand((20, 30), dt), rand((30, 18), dt)
    a[3, 4] = np.nan
    b[5, 7] = np.inf
    a[7, 5] = 0.0  # inf * 0 in the true product: NaN at (7, 7)
    c = fastgemm.gemm(a, b)
    check(c, a, b)
    assert np.isnan(c[7, 7]) and np.isnan(c[3]).all()


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
def test_subnormal_inputs_are_kept_exactly(dt, kernel):
    """float16 / bfloat16 subnormals widen exactly to float32 and are never flushed."""
    tiny = ml_dtypes.finfo(dt).smallest_subnormal
    assert tiny > 0
    for m, n, k in ((1, 33, 50), (33, 1, 50), (20, 30, 50)):
        a = np.full((m, k), tiny, dt)
        b = np.ones((k, n), dt)
        c = fastgemm.gemm(a, b)
        assert np.all(c == np.float32(float(tiny) * k)), (m, n, k)  # exact: a small sum of one value
        s = rand((m, k), dt, scale=float(ml_dtypes.finfo(dt).smallest_normal))  # mostly subnormal
        bb = rand((k, n), dt)
        check(fastgemm.gemm(s, bb), s, bb)


def pairs(kernel):
    """The bfloat16 pair kernels (vdpbf16ps) of a kernel set, or None."""
    return _core.lowp_info(kernel)["bf16_pairs"]


@pytest.mark.parametrize("lay", ["C", "F", "stepped", "negative"])
def test_bf16_blocked_products_around_pair_tiles(kernel, lay):
    """bfloat16 products above 64^3 multiply-adds: on a set with pair kernels (avx512bf16) they
    run on vdpbf16ps with A and B packed as pairs along k (odd k and odd slices pad a zero),
    elsewhere on the packed float32 path. Edges around the tile, KC and MC; strided,
    transposed and column-major operands; a C with no unit stride (the bounce tile)."""
    t = pairs(kernel) or dict(zip(("mr", "nr", "mc", "kc", "nc"), tiles(kernel, np.float32)))
    mr, nr, mc, kc = t["mr"], t["nr"], t["mc"], t["kc"]
    shapes = [(2 * mr + 3, 4 * nr + 5, 2 * kc + 1), (mr - 1, 3 * nr - 1, kc - 1), (mc + 1, nr + 1, 301), (65, 65, 65)]
    for m, n, k in shapes:
        a0, b0 = rand((m, k), BF16), rand((k, n), BF16)
        pa, pb = Placed(a0, lay), Placed(b0, "stepped" if lay == "C" else "C")
        c = fastgemm.gemm(pa.arr, pb.arr)
        check(c, a0, b0, what=f"{kernel} {lay} {m}x{n}x{k}")
        c0 = rand((m, n), np.float32)
        pc = Placed(c0, "stepped")
        fastgemm.gemm(pa.arr, pb.arr, pc.arr, alpha=-0.5, beta=2.0)
        check(pc.arr, a0, b0, alpha=-0.5, beta=2.0, c0=c0, what=f"{kernel} {lay} {m}x{n}x{k} stepped C")
        assert pc.untouched_outside()
    a0, b0 = rand((100, 90), BF16), rand((90, 80), BF16)
    check(fastgemm.gemm(a0.T.copy(), b0.T.copy(), trans_a=True, trans_b=True), a0, b0)
    check(fastgemm.matmul(np.stack([a0] * 3), b0), np.stack([a0] * 3), b0)


def test_bf16_nan_inf_on_the_blocked_path(kernel):
    a, b = rand((70, 90), BF16), rand((90, 75), BF16)
    a[3, 4] = np.nan
    b[5, 7] = np.inf
    a[7, 5] = 0.0  # inf * 0 in the true product: NaN at (7, 7)
    b[89, 74] = -np.inf  # in the last (odd) k step's pair and the last column's edge sliver
    c = fastgemm.gemm(a, b)
    check(c, a, b)
    assert np.isnan(c[7, 7]) and np.isnan(c[3]).all()


def test_bf16_subnormals_on_the_blocked_path(kernel):
    """Pair kernels (vdpbf16ps) read bfloat16 subnormal inputs as 0 and flush float32 subnormal
    results to 0; every other path keeps both exactly. 80^3 takes the pair kernels where a set
    has them."""
    m = n = k = 80
    tiny = float(ml_dtypes.finfo(BF16).smallest_subnormal)
    a = np.full((m, k), tiny, BF16)
    b = np.ones((k, n), BF16)
    small = np.full((m, k), 2.0**-70, BF16)  # normal; products 2^-140 are float32 subnormals
    if pairs(kernel):
        assert np.all(fastgemm.gemm(a, b) == 0)
        assert np.all(fastgemm.gemm(small, small.T) == 0)
    else:
        assert np.all(fastgemm.gemm(a, b) == np.float32(tiny * k))
        assert np.all(fastgemm.gemm(small, small.T) == np.float32(k * 2.0**-140))
    # Matrix-vector and small products widen, on every set: kept.
    assert np.all(fastgemm.gemm(a[:1], b) == np.float32(tiny * k))
    assert np.all(fastgemm.gemm(a[:8, :8], b[:8, :8]) == np.float32(tiny * 8))


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
def test_same_bits_for_any_thread_count(dt):
    a, b = rand((300, 200), dt), rand((200, 250), dt)
    v = rand((1, 200), dt)
    sa, sb = rand((3000, 8, 8), dt), rand((3000, 8, 8), dt)  # a small stack spread by batch
    na, nb = rand((150, 1100), dt), rand((1100, 20), dt)  # one B sliver: packed by each thread
    before = fastgemm.get_num_threads()
    try:
        fastgemm.set_num_threads(1)
        one = [fastgemm.gemm(a, b), fastgemm.gemm(v, b), fastgemm.matmul(sa, sb), fastgemm.gemm(na, nb)]
        fastgemm.set_num_threads(2)
        two = [fastgemm.gemm(a, b), fastgemm.gemm(v, b), fastgemm.matmul(sa, sb), fastgemm.gemm(na, nb)]
    finally:
        fastgemm.set_num_threads(before)
    assert all(np.array_equal(x, y) for x, y in zip(one, two))
    check(one[2][::97], sa[::97], sb[::97], out_dtype=result(dt))


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
@pytest.mark.parametrize("shape", [(2, 2100, 530), (3, 5470, 203), (5, 3300, 300), (6, 2740, 400)])
def test_few_rows_streamed(dt, shape, kernel):
    """2 to 6 rows with the widened B past L2: the 2-byte B streamed once where the kernel set
    streams few rows; strided A, beta, the same bits on 1 and 2 threads."""
    m, n, k = shape
    a, b = rand((m, 2 * k), dt)[:, ::2], rand((k, n), dt)
    c0 = rand((m, n), np.float32)
    before = fastgemm.get_num_threads()
    try:
        got = []
        for t in (1, 2):
            fastgemm.set_num_threads(t)
            c = c0.copy()
            fastgemm.gemm(a, b, c, alpha=0.5, beta=2.0)
            got.append(c)
    finally:
        fastgemm.set_num_threads(before)
    check(got[0], a, b, alpha=0.5, beta=2.0, c0=c0, what=f"{kernel} {dt} {shape}")
    assert np.array_equal(got[0], got[1])


def rows_order(k):
    """The order the streamed matrix-vector kernel (gemv_rows_cvt) sums over k: in each whole
    group of 32 rows p0 + h + 4 q (h outer, q inner), then the remaining rows in order."""
    whole = k // 32 * 32
    grouped = [p0 + h + 4 * q for p0 in range(0, whole, 32) for h in range(4) for q in range(8)]
    return grouped + list(range(whole, k))


def rows_reference(x, w):
    """x @ w (x of length k, w k x n) summed in float32 in rows_order: each product of two
    2-byte values is exact in float32, so this is one rounding per addition, as an FMA gives."""
    x32, w32 = np.asarray(x).astype(np.float32), np.asarray(w).astype(np.float32)
    y = np.zeros(w32.shape[1], np.float32)
    for p in rows_order(len(x32)):
        y = y + x32[p] * w32[p]
    return y


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
def test_matrix_vector_rows_form_sums_in_its_documented_order(dt, kernel):
    """One row of C against a streamed 2-byte matrix gives exactly the float32 sum of exact
    products in rows_order: blocks of 16 (AVX2 two vectors) and chunks of 4096 +-1, 32-row
    groups +-1, a strided x, a matrix with padded rows, and the n == 1 form on A's columns."""
    for n, k in ((15, 33), (16, 32), (17, 31), (33, 65), (300, 1), (4095, 9), (4096, 40), (4097, 7), (4133, 97)):
        x, w = rand((1, k), dt), rand((k, n), dt)
        want = rows_reference(x[0], w)
        assert np.array_equal(fastgemm.gemm(x, w)[0], want), (n, k)
        if k in (33, 65, 97):
            xs = rand((1, 3 * k), dt)[:, ::3]  # x with a stride
            wp = rand((k, n + 5), dt)[:, 2 : n + 2]  # rows longer than n, unaligned start
            assert np.array_equal(fastgemm.gemm(xs, wp)[0], rows_reference(xs[0], wp)), (n, k)
            assert np.array_equal(fastgemm.gemm(wp.T, xs.T)[:, 0], rows_reference(xs[0], wp)), (n, k)


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
def test_matrix_vector_dots_form_is_sgemm_on_the_widened_inputs(dt, kernel):
    """Dot products along contiguous rows sum in the float32 kernel's order: sgemm's bits on
    the widened inputs; k <= 8 with rows back to back (AVX-512's short_dots, tree_dots) too."""
    for n, k in ((37, 41), (4133, 19), (300, 1), (45, 3), (33, 7), (16, 2), (301, 8)):
        x, w = rand((1, k), dt), rand((n, k), dt)
        want = fastgemm.sgemm(w.astype(np.float32), x.T.astype(np.float32))
        assert np.array_equal(fastgemm.gemm(w, x.T), want)


def test_kernels_agree_within_the_bound():
    a, b = rand((50, 60), F16), rand((60, 70), F16)
    before = fastgemm.get_kernel()
    try:
        for name in fastgemm.available_kernels():
            fastgemm.set_kernel(name)
            check(fastgemm.gemm(a, b), a, b, what=name)
    finally:
        fastgemm.set_kernel(before)


# --- fastgemm.matmul ----------------------------------------------------------------------


def test_result_dtypes_are_numpys():
    for dt in LOWP:
        a = rand((3, 4), dt)
        assert fastgemm.matmul(a, a.T).dtype == np.matmul(a, a.T).dtype
    assert fastgemm.matmul(rand((3, 4), BF16), rand((4, 2), BF16)).dtype == np.float32
    assert fastgemm.matmul(rand((3, 4), F16), rand((4, 2), F16)).dtype == np.float16


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
@pytest.mark.parametrize(
    ("sa", "sb"),
    [
        ((7, 9), (9, 5)),
        ((9,), (9, 5)),
        ((7, 9), (9,)),
        ((9,), (9,)),
        ((4, 7, 9), (9, 5)),
        ((7, 9), (3, 9, 5)),
        ((2, 1, 7, 9), (3, 9, 5)),
        ((1, 4096), (4096, 64)),
        ((64, 4096), (4096,)),
        ((0, 9), (9, 5)),
        ((7, 0), (0, 5)),
    ],
)
def test_matmul_shapes_and_stacks(dt, sa, sb, kernel):
    a, b = rand(sa, dt), rand(sb, dt)
    got = fastgemm.matmul(a, b)
    want_dtype = np.matmul(a, b).dtype
    assert got.shape == np.matmul(a, b).shape
    check(np.asarray(got), a, b, out_dtype=want_dtype)


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
def test_matmul_out(dt):
    a, b = rand((3, 20, 30), dt), rand((30, 25), dt)
    rdt = np.matmul(a[:1, :1, :1], b[:1, :1]).dtype
    out = np.empty((3, 20, 25), rdt)
    assert fastgemm.matmul(a, b, out=out) is out
    check(out, a, b, out_dtype=rdt)
    # A non-contiguous out, and one given as a 1-tuple.
    big = np.zeros((3, 20, 50), rdt)
    assert fastgemm.matmul(a, b, out=(big[..., ::2],)) is not None
    check(big[..., ::2], a, b, out_dtype=rdt)
    assert np.all(big[..., 1::2] == 0)
    # An out of another dtype is NumPy's business (a cast), with NumPy's answer.
    out64 = np.empty((3, 20, 25), np.float64)
    fastgemm.matmul(a, b, out=out64)
    assert np.array_equal(out64, np.matmul(a, b, out=np.empty_like(out64)))


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
@pytest.mark.parametrize("n", [2, 3, 4, 7, 8, 9, 16, 17, 32, 33, 48, 96])
def test_small_products_are_sgemm_on_the_widened_inputs(dt, n, kernel):
    """Small 2-byte products and stacks are widened whole and run on the float32 small kernels,
    or on its dot kernel where float32 takes that (few rows against W.T from 96 bytes of k, a
    narrow C): fastgemm.matmul of the float32 copies gives the same bits (float16: then rounded
    once). bfloat16 items past 64^3 on a set with pair kernels run on those instead (96^3 here)."""
    cases = [((n, n), (n, n)), ((5, n, n), (5, n, n)), ((n, n + 1), (n + 1, 3)), ((4, n, 2), (2, n))]
    cases += [((3, n), (40, n, "T")), ((5, 2, n), (5, 40, n, "T"))]  # B stored by columns
    for sa, sb in cases:
        if dt == BF16 and pairs(kernel) and sa[-2] * sa[-1] * sb[-3 if sb[-1] == "T" else -1] > 64**3:
            continue
        a = rand(sa, dt)
        b = np.swapaxes(rand(sb[:-1], dt), -1, -2) if sb[-1] == "T" else rand(sb, dt)
        got = np.asarray(fastgemm.matmul(a, b))
        want = np.asarray(fastgemm.matmul(a.astype(np.float32), b.astype(np.float32)))
        assert np.array_equal(got, want.astype(got.dtype)), (sa, sb)
        check(got, a, b, out_dtype=got.dtype, what=f"{sa} {sb}")


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
@pytest.mark.parametrize("shape", [(310, 17, 128), (64, 18, 64), (40, 65, 48), (16, 20, 1024), (130, 6, 128)])
def test_small_products_with_dot_columns_are_sgemm_on_the_widened_inputs(dt, shape, kernel):
    """Where float32 sends a small product's last columns to the dot kernel, the 2-byte product
    (widened for the float32 kernels) does the same: alone, in a stack, with B broadcast, and
    with B stored by columns, the bits of fastgemm.matmul on the float32 copies."""
    m, n, k = shape
    if dt == BF16 and pairs(kernel) and m * n * k > 64**3:
        pytest.skip("bfloat16 runs on the pair kernels here")
    a, b = rand((3, m, k), dt), rand((3, k, n), dt)
    bt = np.swapaxes(rand((3, n, k), dt), -1, -2)
    for x, y in ((a, b), (a[0], b[0]), (a, b[1]), (a[2], bt[2]), (a, bt)):
        got = np.asarray(fastgemm.matmul(x, y))
        want = np.asarray(fastgemm.matmul(x.astype(np.float32), y.astype(np.float32)))
        assert np.array_equal(got, want.astype(got.dtype)), (x.shape, y.strides)
        check(got, x, y, out_dtype=got.dtype, what=f"{x.shape} {y.shape}")


@pytest.mark.parametrize("dt", LOWP, ids=["f16", "bf16"])
def test_small_stacks_broadcast_strided_and_transposed(dt, kernel):
    """Stacks of small products whose items are broadcast, strided or transposed, and a
    column-major out (computed as C^T = B^T A^T), against the reference."""
    a, b = rand((6, 9, 11), dt), rand((6, 11, 10), dt)
    cases = [
        (a, b[0]),  # B broadcast
        (a[0], b),  # A broadcast
        (a[:, :, ::-1], b[:, ::-1, :]),  # negative strides along k
        (a.transpose(0, 2, 1)[:, :9, :], b[:, :9, :]),  # A column-major items
        (a[::2], b[::2]),  # items two apart
    ]
    for x, y in cases:
        check(np.asarray(fastgemm.matmul(x, y)), x, y, out_dtype=result(dt))
    rdt = result(dt)
    out = np.empty((6, 10, 9), rdt).transpose(0, 2, 1)
    fastgemm.matmul(a, b, out=out)
    check(out, a, b, out_dtype=rdt)
    c = rand((9, 10), np.float32)
    cf = np.asfortranarray(c)
    fastgemm.gemm(a[0], b[0], cf, alpha=2.0, beta=-1.0)  # column-major C, one product
    check(cf, a[0], b[0], alpha=2.0, beta=-1.0, c0=c)


def test_small_inf_in_a_raises_no_flag():
    """A small product with Inf in A and no NaN in its result raises no FE_INVALID from the
    kernels' masked lanes (the flag rule of "Numerics")."""
    for dt in LOWP:
        a, b = rand((5, 7), dt), np.abs(rand((7, 5), dt)) + np.asarray(0.5, dt)
        a[1, 2] = np.inf
        with np.errstate(invalid="raise"):
            got = fastgemm.matmul(a, b)
            stack = fastgemm.matmul(np.stack([a] * 4), np.stack([b] * 4))
        assert np.isinf(got[1]).all() and np.isinf(stack[:, 1]).all()


def result(dt):
    return np.matmul(np.zeros((1, 1), dt), np.zeros((1, 1), dt)).dtype


def test_matmul_float16_rounds_once_from_float32():
    a, b = rand((40, 300), F16), rand((300, 30), F16)
    acc = fastgemm.gemm(a, b)
    assert np.array_equal(fastgemm.matmul(a, b), acc.astype(np.float16))


def test_matmul_mixed_and_other_dtypes_are_numpys():
    a16, abf, a32 = rand((4, 5), F16), rand((4, 5), BF16), rand((5, 3), np.float32)
    assert np.array_equal(fastgemm.matmul(a16, a32), np.matmul(a16.astype(np.float32), a32))
    assert fastgemm.matmul(abf, abf.T.astype(F16)).dtype == np.matmul(abf, abf.T.astype(F16)).dtype
    with pytest.raises(ValueError):
        fastgemm.matmul(a16, a16)  # NumPy's own error for mismatched shapes


def test_matmul_keywords():
    a = rand((6, 7), F16)
    assert fastgemm.matmul(a, a.T, dtype=np.float16).dtype == np.float16
    assert fastgemm.matmul(a, a.T, dtype=np.float32).dtype == np.float32  # NumPy computes it


def test_matmul_nan_inf():
    for dt in LOWP:
        a, b = rand((5, 6), dt), rand((6, 7), dt)
        a[1, 2] = np.inf
        b[3, 4] = np.nan
        got = fastgemm.matmul(a, b)
        check(np.asarray(got), a, b, out_dtype=np.matmul(a[:1], b).dtype)


def test_float16_overflow_rounds_to_inf():
    a = np.full((2, 100), 100.0, F16)
    assert np.all(np.isinf(fastgemm.matmul(a, a.T)))  # 1e6 > float16's max: Inf as NumPy gives
    with np.errstate(over="ignore"):
        assert np.all(np.isinf(np.matmul(a, a.T)))


# --- the switch ---------------------------------------------------------------------------


@pytest.fixture
def switch_off():
    before = _core.f16_matmul_loop_min_flops()
    _core.set_f16_matmul_loop_min_flops(0)
    fastgemm.restore_numpy()
    yield
    fastgemm.restore_numpy()
    _core.set_f16_matmul_loop_min_flops(before)


def _ours16():
    return _core.f16_matmul_loop_calls()["fastgemm"]


def test_switch_runs_float16_on_fastgemm_and_restores_exactly(switch_off):
    a, b = rand((3, 20, 30), F16), rand((30, 25), F16)
    want = np.matmul(a, b)  # NumPy's own float16 loop
    with fastgemm.patched():
        assert fastgemm.is_patched() and _core.f16_matmul_loop_replaced()
        before = _ours16()
        got = a @ b
        x = a.copy()
        x[..., :25] @= b[:25, :25]
        assert _ours16() >= before + 2
        assert got.dtype == np.float16
        assert np.array_equal(got, fastgemm.matmul(a, b))
        check(got, a, b, out_dtype=F16)
        out = np.empty((3, 25, 20), F16).transpose(0, 2, 1)  # a strided out
        np.matmul(a, b, out=out)
        assert np.array_equal(out, got)
    assert not fastgemm.is_patched() and not _core.f16_matmul_loop_replaced()
    before = _ours16()
    assert np.array_equal(np.matmul(a, b), want)
    assert _ours16() == before


def test_switch_float16_stack_bigger_than_one_buffer(switch_off):
    """The loop accumulates at most 2^22 float32 at a time: a 20 x 512 x 512 stack takes two
    rounds and still gives fastgemm.matmul's bits."""
    a, b = rand((20, 512, 8), F16), rand((20, 8, 512), F16)
    want = fastgemm.matmul(a, b)
    with fastgemm.patched():
        got = a @ b
    assert np.array_equal(got, want)
    check(got[::7], a[::7], b[::7], out_dtype=F16)


def test_switch_float16_odd_operands_go_to_numpy(switch_off):
    buf = np.zeros(2 * 64 + 1, np.uint8)
    odd = np.ndarray((8, 8), F16, buffer=buf, offset=1)  # misaligned
    odd[...] = rand((8, 8), F16)
    with fastgemm.patched():
        before = _core.f16_matmul_loop_calls()["numpy"]
        got = odd @ odd
        assert _core.f16_matmul_loop_calls()["numpy"] >= before  # NumPy may copy first
    check(got, odd, odd, out_dtype=F16)


# --- ml_dtypes is optional ----------------------------------------------------------------


def test_fastgemm_works_without_ml_dtypes():
    """With ml_dtypes unimportable, fastgemm imports, float16 works, nothing imports it."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["ml_dtypes"] = None  # import ml_dtypes now raises ImportError
        import numpy as np
        import fastgemm
        a = np.ones((3, 4), np.float16)
        assert fastgemm.matmul(a, a.T).dtype == np.float16
        assert fastgemm.gemm(a, a.T).dtype == np.float32
        try:
            fastgemm.gemm(np.ones((2, 2), np.int8), np.ones((2, 2), np.int8))
        except TypeError as e:
            assert "fastgemm[bf16]" in str(e)
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    r = subprocess.run(
        [sys.executable, "-c", "import sys, fastgemm; print('ml_dtypes' in sys.modules)"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.stdout.strip() == "False", "importing fastgemm must not import ml_dtypes"
