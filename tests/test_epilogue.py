"""The fused epilogue of fastgemm.gemm: C = act(alpha op(A) op(B) + beta C + bias) on every
path a product can take (small, matrix-vector rows and dots, B in place, blocked, alpha == 0),
every kernel, C layouts, NaN/Inf, thread counts and bad arguments, against a float64 (or
long double) composition with the K-scaled bound of gemm_check plus each activation's
measured error (docs/DESIGN.md, "Fused bias and activation")."""

import math

import numpy as np
import pytest

import fastgemm
from gemm_check import DTYPES, UNIT_ROUNDOFF, Placed, op, random_matrix, reference

ACTS = (None, "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh")
# Max error of each activation in ulps of the output type: measured (bench/epilogue_accuracy.py,
# float32 7.6 / 3.4 / 3.1 / 2.4 / 2.4, float64 <= 2) plus margin for the reference's own
# rounding (float64: libm's erfc and float64 arithmetic against the long double composition).
ACT_ULPS = {
    np.dtype(np.float32): {None: 0, "relu": 0, "gelu": 8, "gelu_tanh": 4, "silu": 4, "sigmoid": 3, "tanh": 3},
    np.dtype(np.float64): {None: 0, "relu": 0, "gelu": 8, "gelu_tanh": 8, "silu": 8, "sigmoid": 8, "tanh": 8},
}
# Bound of |act'|: an error of the product grows by at most this much through the activation.
LIPSCHITZ = 1.2


def act_ref(act, z):
    """act at the wide reference values z (float64 or long double)."""
    if act is None:
        return z
    if act == "relu":
        return np.maximum(z, 0)
    if act == "gelu":  # erfc form: accurate in the negative tail
        erfc = np.frompyfunc(math.erfc, 1, 1)(-(z.astype(np.float64)) / np.sqrt(2)).astype(np.float64)
        return (0.5 * z * erfc).astype(z.dtype)
    if act == "gelu_tanh":
        v = 2 * np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)
        return z / (1 + np.exp(-v))
    if act == "silu":
        return z / (1 + np.exp(-z))
    if act == "sigmoid":
        return 1 / (1 + np.exp(-z))
    return np.tanh(z)


def act_mp(act, x):
    """act at one value in 40-digit arithmetic (the float64 references lose the tails)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    x = mpmath.mpf(float(x))
    if act == "relu":
        return max(x, 0)
    if act == "gelu":
        return x * mpmath.erfc(-x / mpmath.sqrt(2)) / 2
    v = 2 * mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3) if act == "gelu_tanh" else x
    if act == "tanh":
        return mpmath.tanh(x)
    s = 1 / (1 + mpmath.exp(-v))
    return s if act == "sigmoid" else x * s


def expected(a, b, c0, alpha, beta, bias, act, trans_a=False, trans_b=False, product=None):
    """(reference, bound) of the fused product; `product`: reference()'s result, if at hand."""
    prod, bound = product or reference(a, b, c0, alpha, beta, trans_a, trans_b)
    dt = np.dtype(a.dtype)
    u = UNIT_ROUNDOFF[dt]
    z = prod if bias is None else prod + bias.astype(prod.dtype)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        y = act_ref(act, z)
    if act is None:
        # the bias add's one rounding
        return y, bound + (0 if bias is None else 2 * u * abs(z))
    tiny = np.finfo(dt).tiny
    ulp = np.exp2(np.floor(np.log2(np.maximum(abs(y), tiny)))) * 2 * u
    return y, LIPSCHITZ * (bound + 2 * u * abs(z)) + ACT_ULPS[dt][act] * ulp + np.finfo(dt).smallest_subnormal


def check(got, ref, bound, what):
    got = np.asarray(got).astype(ref.dtype)
    assert np.array_equal(np.isnan(got), np.isnan(ref)), f"{what}: NaN pattern differs"
    fin = np.isfinite(ref)
    assert np.array_equal(got[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)]), f"{what}: Inf differs"
    err = abs(got[fin] - ref[fin])
    bad = err > bound[fin]
    if bad.any():
        i = int(np.argmax(bad))
        raise AssertionError(
            f"{what}: {bad.sum()} of {bad.size} outside; got {got[fin][i]!r}, ref {ref[fin][i]!r}, "
            f"bound {bound[fin][i]!r}"
        )


# (m, n, k) and the path it takes on avx2 (generic's small-product limit is larger, so some
# of these go through small there): 1, primes, MR/NR +-1 (6 x 16 / 6 x 8 avx2, 4 x 8 / 4 x 4
# generic), one row (gemv rows form), one column, small, B in place with a misaligned head,
# blocked with several k blocks.
SHAPES = [
    (1, 1, 1),
    (1, 37, 5),  # gemv rows
    (37, 1, 5),  # gemv, one column
    (1, 1000, 333),
    (2, 3, 5),  # small
    (5, 15, 7),
    (7, 17, 31),
    (6, 16, 9),
    (13, 47, 29),
    (63, 65, 64),
    (20, 1040, 131),  # B in place (rows of whole lines), misaligned head columns
    (70, 1100, 130),  # blocked: B beyond L2
    (13, 1030, 700),  # several k blocks
    (131, 97, 1500),
]


def operands(rng, m, n, k, dtype, trans_a=False, trans_b=False):
    a = random_matrix(rng, (k, m) if trans_a else (m, k), dtype)
    b = random_matrix(rng, (n, k) if trans_b else (k, n), dtype)
    return a, b, rng.uniform(-2.0, 2.0, n).astype(dtype)


def check_every_epilogue(a, b_arg, b, bias, label):
    """gemm(a, b_arg) (b_arg: b or a PackedMatrix of it) with every activation, with and without
    the bias, against the reference of a @ b."""
    product = reference(a, b, None, 1.0, 0.0)
    for act in ACTS:
        for bv in (None, bias):
            if act is None and bv is None:
                continue
            got = fastgemm.gemm(a, b_arg, bias=bv, activation=act)
            ref, bound = expected(a, b, None, 1.0, 0.0, bv, act, product=product)
            check(got, ref, bound, f"{label} {act} bias={bv is not None}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_activation_and_bias(kernel, shape, dtype):
    rng = np.random.default_rng(sum(shape))
    m, n, k = shape
    a, b, bias = operands(rng, m, n, k, dtype)
    a *= 3  # values well into each activation's curved part
    check_every_epilogue(a, b, b, bias, f"{kernel} {shape}")


LAYOUT_SHAPES = [(1, 37, 5), (37, 1, 5), (1, 1, 3), (7, 17, 31), (63, 65, 64)]


@pytest.mark.parametrize("layout", ["C", "F", "stepped", "negative"])
@pytest.mark.parametrize("trans", [(False, False), (True, False), (False, True), (True, True)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", LAYOUT_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_c_layouts_transposes_and_beta(kernel, shape, dtype, trans, layout):
    """Given C in each layout (column-major C takes the transposed small product and C^T in
    the driver), beta != 0, op(A) / op(B) transposed (the gemv dots form for trans_b)."""
    rng = np.random.default_rng(7 + sum(shape))
    m, n, k = shape
    ta, tb = trans
    a, b, bias = operands(rng, m, n, k, dtype, ta, tb)
    a *= 3
    c0 = random_matrix(rng, (m, n), dtype)
    product = reference(a, b, c0, 0.5, -1.5, ta, tb)
    for act in ("gelu_tanh", "relu", "tanh"):
        placed = Placed(c0, layout)
        fastgemm.gemm(a, b, placed.arr, alpha=0.5, beta=-1.5, trans_a=ta, trans_b=tb, bias=bias, activation=act)
        ref, bound = expected(a, b, c0, 0.5, -1.5, bias, act, ta, tb, product)
        check(placed.arr, ref, bound, f"{kernel} {shape} {layout} {trans} {act}")
        assert placed.untouched_outside(), "wrote outside C"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    "case",
    [
        ((70, 1100, 130), "F", (False, False)),
        ((20, 1040, 131), "stepped", (True, False)),
        ((13, 1030, 700), "F", (True, True)),
        ((131, 97, 1500), "negative", (False, True)),
    ],
    ids=str,
)
def test_tiled_paths_with_strided_or_column_major_c(kernel, case, dtype):
    """The driver with a C of non-unit column stride (the bounce tile) and column-major C (C^T
    computed, the bias then a post-pass over C)."""
    shape, layout, (ta, tb) = case
    rng = np.random.default_rng(17)
    m, n, k = shape
    a, b, bias = operands(rng, m, n, k, dtype, ta, tb)
    c0 = random_matrix(rng, (m, n), dtype)
    product = reference(a, b, c0, 1.0, 2.0, ta, tb)
    for bv, act in ((bias, "gelu"), (None, "silu")):
        placed = Placed(c0, layout)
        fastgemm.gemm(a, b, placed.arr, beta=2.0, trans_a=ta, trans_b=tb, bias=bv, activation=act)
        ref, bound = expected(a, b, c0, 1.0, 2.0, bv, act, ta, tb, product)
        check(placed.arr, ref, bound, f"{kernel} {shape} {layout} {act}")
        assert placed.untouched_outside()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(5, 7, 0), (5, 7, 3), (1, 9, 4), (9, 1, 4)], ids=lambda s: "x".join(map(str, s)))
def test_alpha_zero_or_empty_k(kernel, shape, dtype):
    """No product: C = act(beta C + bias)."""
    rng = np.random.default_rng(3)
    m, n, k = shape
    a, b, bias = operands(rng, m, n, k, dtype)
    c0 = random_matrix(rng, (m, n), dtype) * 4
    for layout in ("C", "F", "stepped"):
        for act in ACTS[1:]:
            placed = Placed(c0, layout)
            fastgemm.gemm(a, b, placed.arr, alpha=0.0 if k else 1.0, beta=0.75, bias=bias, activation=act)
            ref, bound = expected(a, b, c0, 0.0, 0.75, bias, act)
            check(placed.arr, ref, bound, f"{kernel} {shape} {layout} {act}")
            assert placed.untouched_outside()


SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 3.0, -3.0, 20.0, -20.0, 100.0, -100.0, 1e30, -1e30]
LIMITS = {  # act: (at +inf, at -inf)
    "relu": (np.inf, 0.0),
    "gelu": (np.inf, 0.0),
    "gelu_tanh": (np.inf, 0.0),
    "silu": (np.inf, 0.0),
    "sigmoid": (1.0, 0.0),
    "tanh": (1.0, -1.0),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("act", ACTS[1:])
def test_nan_inf_through_each_activation(kernel, act, dtype):
    """NaN stays NaN (relu too, like np.maximum), the limits at +-inf, special values exact
    to the activation's bound; through the epilogue alone (alpha = 0) and through a product."""
    x = np.array(SPECIAL, dtype)
    c = x.reshape(1, -1).copy()
    fastgemm.gemm(np.zeros((1, 0), dtype), np.zeros((0, x.size), dtype), c, beta=1.0, activation=act)
    y = c.ravel()
    assert np.isnan(y[0])
    assert (y[1], y[2]) == LIMITS[act]
    ref = np.array([float(act_mp(act, v)) for v in x[3:]])
    dt = np.dtype(dtype)
    ulp = np.exp2(np.floor(np.log2(np.maximum(abs(ref), np.finfo(dt).tiny)))) * 2 * UNIT_ROUNDOFF[dt]
    assert np.all(abs(y[3:] - ref) <= (ACT_ULPS[dt][act] + 1) * ulp), (y[3:], ref)
    # Through a tiled product: a NaN row of A, an Inf bias column.
    rng = np.random.default_rng(0)
    m, n, k = 13, 40, 9
    a, b, bias = operands(rng, m, n, k, dtype)
    a[4, 2] = np.nan
    bias[5], bias[6] = np.inf, -np.inf
    got = fastgemm.gemm(a, b, bias=bias, activation=act)
    assert np.isnan(got[4]).all()
    rows = np.arange(m) != 4
    assert (got[rows, 5] == LIMITS[act][0]).all() and (got[rows, 6] == LIMITS[act][1]).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    "shape", [(257, 301, 129), (131, 97, 1500), (1, 5003, 300), (4099, 1, 300), (200, 150, 60)], ids=str
)
def test_bitwise_identical_for_any_thread_count(kernel, shape, dtype):
    rng = np.random.default_rng(11)
    m, n, k = shape
    a, b, bias = operands(rng, m, n, k, dtype)
    c0 = random_matrix(rng, (m, n), dtype)
    before = fastgemm.get_num_threads()
    try:
        outs = []
        for threads in (1, 2, 1, 2):
            fastgemm.set_num_threads(threads)
            for order in ("C", "F"):
                c = np.array(c0, order=order)
                fastgemm.gemm(a, b, c, beta=0.5, bias=bias, activation="gelu")
                outs.append((order, c))
    finally:
        fastgemm.set_num_threads(before)
    for order, c in outs:
        assert np.array_equal(c, next(o for r, o in outs if r == order)), f"{shape} {order}: threads changed bits"
    ref, bound = expected(a, b, c0, 1.0, 0.5, bias, "gelu")
    check(outs[0][1], ref, bound, f"{shape}")


# One row (the packed matrix-vector kernel), tiles with several k blocks, B wider than one panel.
PACKED_SHAPES = [(1, 37, 5), (1, 1000, 333), (7, 17, 31), (13, 1030, 700), (70, 1100, 130)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", PACKED_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_packed_b_takes_the_epilogue(kernel, shape, dtype):
    rng = np.random.default_rng(sum(shape) + 7)
    m, n, k = shape
    a, b, bias = operands(rng, m, n, k, dtype)
    a *= 3
    p = fastgemm.pack(b)
    check_every_epilogue(a, p, b, bias, f"{kernel} packed {shape}")
    # A column-major C with beta (the bounce tile), alpha == 0, and any thread count: the same bits.
    c0 = np.asfortranarray(random_matrix(rng, (m, n), dtype))
    c = c0.copy(order="F")
    fastgemm.gemm(a, p, c, beta=0.5, bias=bias, activation="silu")
    ref, bound = expected(a, b, c0, 1.0, 0.5, bias, "silu")
    check(c, ref, bound, f"{kernel} packed {shape} column-major C")
    z = fastgemm.gemm(a, p, c0.copy(), alpha=0.0, beta=0.5, bias=bias, activation="relu")
    ref, bound = expected(a, b, c0, 0.0, 0.5, bias, "relu")
    check(z, ref, bound, f"{kernel} packed {shape} alpha 0")
    before = fastgemm.get_num_threads()
    try:
        fastgemm.set_num_threads(1)
        one = fastgemm.gemm(a, p, bias=bias, activation="gelu")
        fastgemm.set_num_threads(2)
        two = fastgemm.gemm(a, p, bias=bias, activation="gelu")
    finally:
        fastgemm.set_num_threads(before)
    assert np.array_equal(one, two, equal_nan=True), f"{kernel} packed {shape}: threads change the bits"


def test_bias_copied_when_strided_or_sharing_c():
    rng = np.random.default_rng(5)
    a, b, _ = operands(rng, 9, 33, 7, np.float32)
    wide = rng.uniform(-1, 1, 66).astype(np.float32)
    ref = fastgemm.gemm(a, b, bias=wide[::2].copy(), activation="silu")
    assert np.array_equal(fastgemm.gemm(a, b, bias=wide[::2], activation="silu"), ref)
    # bias is row 0 of C itself, with beta = 1: every row takes the bias as it was before the call.
    c = rng.uniform(-1, 1, (9, 33)).astype(np.float32)
    c0 = c.copy()
    fastgemm.gemm(a, b, c, beta=1.0, bias=c[0], activation="relu")
    want = fastgemm.gemm(a, b, c0.copy(), beta=1.0, bias=c0[0].copy(), activation="relu")
    assert np.array_equal(c, want)


def test_matches_plain_gemm_without_activation():
    """bias alone is the plain product plus one add; activation None with a bias is allowed."""
    rng = np.random.default_rng(2)
    a, b, bias = operands(rng, 40, 50, 60, np.float64)
    assert np.array_equal(fastgemm.gemm(a, b, bias=bias), fastgemm.gemm(a, b) + bias)
    assert np.array_equal(fastgemm.gemm(a, b, activation="relu"), np.maximum(fastgemm.gemm(a, b), 0))
    # x.T @ W.T, whose C^T goes out of registers on AVX-512 before the epilogue runs over C.
    at, bt, bias = operands(rng, 40, 50, 60, np.float64, trans_a=True, trans_b=True)
    plain = fastgemm.gemm(at, bt, trans_a=True, trans_b=True)
    assert np.array_equal(fastgemm.gemm(at, bt, trans_a=True, trans_b=True, bias=bias), plain + bias)


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"bias": np.zeros(6, np.float32)}, ValueError, "length 5"),
        ({"bias": np.zeros((1, 5), np.float32)}, ValueError, "1-D"),
        ({"bias": np.zeros(5, np.float64)}, TypeError, "dtype float32"),
        ({"bias": [0.0] * 5}, TypeError, "dtype float32"),
        ({"activation": "swish"}, ValueError, "'relu', 'gelu', 'gelu_tanh', 'silu', 'sigmoid', 'tanh'"),
        ({"activation": "RELU"}, ValueError, "unknown activation"),
        ({"activation": 1}, TypeError, "activation"),
    ],
)
def test_bad_arguments_before_anything_is_computed(kwargs, exc, match):
    a = np.ones((3, 4), np.float32)
    b = np.ones((4, 5), np.float32)
    c = np.full((3, 5), 7.0, np.float32)
    with pytest.raises(exc, match=match):
        fastgemm.gemm(a, b, c, **kwargs)
    assert (c == 7).all()


# --- 2-byte inputs (bfloat16, float16): the epilogue on the float32 C ----------------------

try:
    import ml_dtypes

    LOWP = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
except ImportError:  # bfloat16 cases need ml_dtypes
    LOWP = [np.dtype(np.float16)]
U_OUT = {"float16": (2.0**-11, 2.0**-25), "bfloat16": (2.0**-8, 2.0**-134)}  # unit roundoff, half subnormal step
F32 = np.dtype(np.float32)
# Paths of a 2-byte product on avx2: matrix-vector rows / dots, small (widened), packed with
# several k blocks, C^T oriented (the bias then runs after the tiles).
LOWP_SHAPES = [
    (1, 1, 1),
    (1, 37, 5),
    (37, 1, 5),
    (1, 300, 333),
    (5, 15, 7),
    (7, 17, 31),
    (63, 65, 64),
    (70, 300, 130),
    (13, 200, 700),
]


def lowp_operands(rng, m, n, k, dt, trans_a=False, trans_b=False):
    a, b, bias = operands(rng, m, n, k, np.float32, trans_a, trans_b)
    return a.astype(dt), b.astype(dt), bias


def lowp_expected(a, b, c0, alpha, beta, bias, act, trans_a=False, trans_b=False):
    """The float32 epilogue's reference and bound on the exact (widened) 2-byte inputs."""
    c32 = None if c0 is None else c0.astype(F32)
    return expected(a.astype(F32), b.astype(F32), c32, alpha, beta, bias, act, trans_a, trans_b)


@pytest.mark.parametrize("dt", LOWP, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", LOWP_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_two_byte_inputs_every_activation_and_bias(kernel, shape, dt):
    rng = np.random.default_rng(sum(shape))
    m, n, k = shape
    a, b, bias = lowp_operands(rng, m, n, k, dt)
    for act in ACTS:
        for with_bias in (False, True):
            ref, bound = lowp_expected(a, b, None, 1.0, 0.0, bias if with_bias else None, act)
            got = fastgemm.gemm(a, b, bias=bias if with_bias else None, activation=act)
            assert got.dtype == F32
            check(got, ref, bound, f"{kernel} {dt.name} {shape} {act} bias={with_bias}")


@pytest.mark.parametrize("dt", LOWP, ids=lambda d: d.name)
@pytest.mark.parametrize("trans", [(False, False), (True, False), (False, True), (True, True)], ids=str)
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("shape", [(5, 15, 7), (63, 65, 64), (70, 300, 130)], ids=lambda s: "x".join(map(str, s)))
def test_two_byte_inputs_transposes_c_orders_and_beta(kernel, shape, dt, trans, order):
    rng = np.random.default_rng(7)
    m, n, k = shape
    a, b, bias = lowp_operands(rng, m, n, k, dt, *trans)
    c0 = np.asarray(rng.uniform(-1, 1, (m, n)), F32, order=order)
    c = c0.copy(order=order)
    fastgemm.gemm(a, b, c, alpha=0.75, beta=-1.25, trans_a=trans[0], trans_b=trans[1], bias=bias, activation="silu")
    ref, bound = lowp_expected(a, b, c0, 0.75, -1.25, bias, "silu", *trans)
    check(c, ref, bound, f"{kernel} {dt.name} {shape} {trans} {order}")


@pytest.mark.parametrize("dt", LOWP, ids=lambda d: d.name)
@pytest.mark.parametrize("act", ACTS)
def test_two_byte_c_takes_the_activation_before_its_one_rounding(kernel, dt, act):
    """A c of the inputs' type: the float32 result with its epilogue, then one rounding: the
    bits of the float32-c call rounded, and within the bound plus one rounding of dt."""
    rng = np.random.default_rng(3)
    m, n, k = 33, 70, 45
    a, b, bias = lowp_operands(rng, m, n, k, dt)
    c0 = rng.uniform(-1, 1, (m, n)).astype(dt)
    c = c0.copy()
    fastgemm.gemm(a, b, c, beta=0.5, bias=bias, activation=act)
    wide = c0.astype(F32)
    fastgemm.gemm(a, b, wide, beta=0.5, bias=bias, activation=act)
    assert np.array_equal(c.view(np.uint16), wide.astype(dt).view(np.uint16))
    ref, bound = lowp_expected(a, b, c0, 1.0, 0.5, bias, act)
    u, sub = U_OUT[dt.name]
    check(c.astype(F32), ref, bound + u * abs(ref) + sub, f"{kernel} {dt.name} {act}")


@pytest.mark.parametrize("dt", LOWP, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(5, 7, 0), (5, 7, 3), (1, 9, 4), (9, 1, 4)], ids=lambda s: "x".join(map(str, s)))
def test_two_byte_inputs_alpha_zero_or_empty_k(kernel, shape, dt):
    rng = np.random.default_rng(11)
    m, n, k = shape
    a, b, bias = lowp_operands(rng, m, n, k, dt)
    c0 = rng.uniform(-1, 1, (m, n)).astype(F32)
    for alpha in (0.0, 1.0):
        c = c0.copy()
        fastgemm.gemm(a, b, c, alpha=alpha, beta=2.0, bias=bias, activation="tanh")
        ref, bound = lowp_expected(a, b, c0, alpha, 2.0, bias, "tanh")
        check(c, ref, bound, f"{kernel} {dt.name} {shape} alpha={alpha}")


@pytest.mark.parametrize("dt", LOWP, ids=lambda d: d.name)
@pytest.mark.parametrize("act", ACTS[1:])
@pytest.mark.parametrize("shape", [(13, 40, 9), (1, 40, 9), (70, 300, 130)], ids=lambda s: "x".join(map(str, s)))
def test_two_byte_nan_inf_through_each_activation(kernel, act, dt, shape):
    rng = np.random.default_rng(0)
    m, n, k = shape
    a, b, bias = lowp_operands(rng, m, n, k, dt)
    a[m // 2, 2] = np.nan
    bias[5], bias[6] = np.inf, -np.inf
    got = fastgemm.gemm(a, b, bias=bias, activation=act)
    assert np.isnan(got[m // 2]).all()
    rows = np.arange(m) != m // 2
    assert (got[rows, 5] == LIMITS[act][0]).all() and (got[rows, 6] == LIMITS[act][1]).all()


@pytest.mark.parametrize("dt", LOWP, ids=lambda d: d.name)
def test_two_byte_bias_of_the_input_type_is_widened_exactly(dt):
    rng = np.random.default_rng(4)
    a, b, bias = lowp_operands(rng, 9, 20, 11, dt)
    narrow = bias.astype(dt)
    got = fastgemm.gemm(a, b, bias=narrow, activation="relu")
    assert np.array_equal(got, fastgemm.gemm(a, b, bias=narrow.astype(F32), activation="relu"))


@pytest.mark.parametrize("dt", LOWP, ids=lambda d: d.name)
@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"bias": np.zeros(5, np.float64)}, TypeError, "bias must be float32 or"),
        ({"bias": np.zeros(5, np.int32)}, TypeError, "bias must be float32 or"),
        ({"bias": [0.0] * 5}, TypeError, "bias must be float32 or"),
        ({"bias": np.zeros(4, np.float32)}, ValueError, "length 5"),
        ({"bias": np.zeros((1, 5), np.float32)}, ValueError, "length 5"),
        ({"activation": "softmax"}, ValueError, "unknown activation"),
        ({"activation": 1}, TypeError, "activation must be None or a str"),
    ],
)
def test_two_byte_bad_epilogue_arguments_before_anything_is_computed(dt, kwargs, exc, match):
    a, b = np.ones((3, 4), dt), np.ones((4, 5), dt)
    for c in (np.full((3, 5), 7, F32), np.full((3, 5), 7, dt)):
        with pytest.raises(exc, match=match):
            fastgemm.gemm(a, b, c, beta=1.0, **kwargs)
        assert (c.astype(F32) == 7).all()


def test_two_byte_bias_of_the_other_two_byte_type_is_refused():
    if len(LOWP) < 2:
        pytest.skip("needs ml_dtypes")
    a = np.ones((3, 4), LOWP[1])
    with pytest.raises(TypeError, match="bias must be float32 or bfloat16"):
        fastgemm.gemm(a, a.T.copy(), bias=np.zeros(3, np.float16))


def test_float64_bias_for_float64():
    a = np.ones((2, 3))
    out = fastgemm.gemm(a, a.T, bias=np.array([1.0, -10.0]), activation="relu")
    assert np.array_equal(out, [[4.0, 0.0], [4.0, 0.0]])


def test_op_helper_consistency():
    """trans_b with one output row takes the dots form: same values as the explicit copy."""
    rng = np.random.default_rng(9)
    a, bt, bias = operands(rng, 1, 300, 40, np.float32, trans_b=True)
    got = fastgemm.gemm(a, bt, trans_b=True, bias=bias, activation="sigmoid")
    ref = fastgemm.gemm(a, np.ascontiguousarray(op(bt, True)), bias=bias, activation="sigmoid")
    assert np.allclose(got, ref, rtol=1e-6, atol=1e-7)


def test_bench_linear_group():
    """The bench's "linear" group: its cases, and its NumPy composition against the fused gemm."""
    from fastgemm.bench import measure, suite

    cases = suite.linear_suite()
    assert [(c.m, c.n, c.k) for c in cases] == [(m, 4096, 4096) for m in (1, 16, 128, 512)]
    assert all(c.group == "linear" and c.activation == "gelu_tanh" for c in cases)
    assert len({c.key for c in suite.full_suite()}) == len(suite.full_suite())
    case = suite.Case("linear", 5, 24, 16, "float32", activation="gelu_tanh")
    x, w = suite.operands(case, np.random.default_rng(0))
    fused = measure.FastGemm(1).prepare(case, x, w)()
    composed = measure.NumPy(1).prepare(case, x, w)()
    assert np.allclose(fused, composed, rtol=1e-5, atol=1e-6)
    assert measure.check_result(case, x, w, fused, np.random.default_rng(1))["ok"]
    assert not measure.check_result(case, x, w, x @ w, np.random.default_rng(1))["ok"]
