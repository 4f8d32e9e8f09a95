"""fastgemm.blas.sgemm / dgemm: SciPy's signature and return conventions, compared with SciPy."""

import warnings

import numpy as np
import pytest

from fastgemm import blas

RNG = np.random.default_rng(5)
U = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 2.0**-53}
ROUTINES = {"sgemm": np.float32, "dgemm": np.float64}


def _rand(shape, dtype=np.float64):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def _close(got, alpha, a, b, beta, c0, trans_a=0, trans_b=0):
    """|got - ref| <= 2 K u (|alpha||op(A)||op(B)| + |beta||C0|) with ref in a wider type."""
    dtype = np.dtype(got.dtype)
    wide = np.float64 if dtype == np.float32 else np.longdouble
    opa = np.asarray(a, dtype).astype(wide)
    opb = np.asarray(b, dtype).astype(wide)
    opa, opb = (opa.T if trans_a else opa), (opb.T if trans_b else opb)
    c0 = np.zeros(got.shape, wide) if c0 is None else np.asarray(c0, dtype).astype(wide)
    alpha, beta = wide(dtype.type(alpha)), wide(dtype.type(beta))
    ref = alpha * (opa @ opb) + beta * c0
    mag = abs(alpha) * (np.abs(opa) @ np.abs(opb)) + abs(beta) * np.abs(c0)
    k = max(opa.shape[1], 1)
    return np.all(np.abs(got.astype(wide) - ref) <= 2 * (k + 1) * U[dtype] * mag)


@pytest.mark.parametrize("name", list(ROUTINES))
def test_new_result_is_fortran_ordered(name):
    f, dt = getattr(blas, name), ROUTINES[name]
    a, b = _rand((7, 5), dt), _rand((5, 3), dt)
    c = f(1.5, a, b)
    assert c.dtype == dt and c.shape == (7, 3) and c.flags.f_contiguous
    assert _close(c, 1.5, a, b, 0.0, None)


@pytest.mark.parametrize("name", list(ROUTINES))
@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (2, 2), (True, 1.7)])
def test_transposes(name, trans_a, trans_b):
    f, dt = getattr(blas, name), ROUTINES[name]
    a = _rand((5, 7) if int(trans_a) else (7, 5), dt)
    b = _rand((3, 5) if int(trans_b) else (5, 3), dt)
    c0 = _rand((7, 3), dt)
    c = f(0.5, a, b, -2.0, c0, trans_a, trans_b)
    assert _close(c, 0.5, a, b, -2.0, c0, int(trans_a), int(trans_b))


@pytest.mark.parametrize("name", list(ROUTINES))
def test_overwrite_c_only_for_a_writable_fortran_array_of_the_dtype(name):
    f, dt = getattr(blas, name), ROUTINES[name]
    a, b = _rand((6, 4), dt), _rand((4, 5), dt)
    c = np.asfortranarray(_rand((6, 5), dt))
    c0 = c.copy()
    assert f(1.0, a, b, 1.0, c, overwrite_c=1) is c
    assert _close(c, 1.0, a, b, 1.0, c0)
    other = np.float64 if dt == np.float32 else np.float32
    for not_in_place in (np.ascontiguousarray(c0), np.asfortranarray(c0.astype(other)), c0.tolist()):
        before = np.array(not_in_place, copy=True)
        r = f(1.0, a, b, 1.0, not_in_place, overwrite_c=1)
        assert r is not not_in_place and r.dtype == dt and r.flags.f_contiguous
        assert np.array_equal(np.asarray(not_in_place), before)
        assert _close(r, 1.0, a, b, 1.0, before)
    ro = np.asfortranarray(c0)
    ro.flags.writeable = False
    r = f(1.0, a, b, 1.0, ro, overwrite_c=1)
    assert r is not ro and np.array_equal(ro, c0)
    r = f(1.0, a, b, 1.0, c0, overwrite_c=0)
    assert r is not c0 and np.array_equal(c0, np.asfortranarray(c0))


def test_conversions():
    a = [[1, 2], [3, 4]]
    r = blas.dgemm(1, a, [5, 6])  # ints convert, a 1-D b is a column
    assert r.shape == (2, 1) and np.array_equal(r, [[17.0], [39.0]])
    assert blas.sgemm(2.0, np.float32(3), 4.0).shape == (1, 1)
    assert blas.sgemm(1 + 5j, np.ones((1, 2, 3)), np.ones((3, 1, 2))).shape == (2, 2)
    assert blas.sgemm(np.array([2.0]), np.eye(2), np.eye(2))[0, 0] == 2.0


def test_alpha_zero_never_reads_a_and_beta_zero_never_reads_c():
    a = np.full((3, 4), np.nan)
    b = _rand((4, 2))
    assert np.array_equal(blas.dgemm(0.0, a, b), np.zeros((3, 2)))
    c = np.full((3, 2), np.nan, order="F")
    r = blas.dgemm(1.0, _rand((3, 4)), b, 0.0, c, overwrite_c=1)
    assert r is c and not np.isnan(c).any()


def test_input_overlapping_c_in_place():
    x = np.asfortranarray(_rand((6, 6)))
    x0 = x.copy()
    assert blas.dgemm(1.0, x, x, 1.0, x, overwrite_c=1) is x
    assert _close(x, 1.0, x0, x0, 1.0, x0)


@pytest.mark.parametrize(
    "call,exc",
    [
        (lambda: blas.sgemm(1.0, np.ones((2, 3)), np.ones((2, 3))), ValueError),
        (lambda: blas.sgemm(1.0, np.ones((2, 3)), np.ones((3, 2)), c=np.ones((3, 3))), ValueError),
        (lambda: blas.sgemm(1.0, np.ones((2, 3)), np.ones((3, 2)), trans_a=3), ValueError),
        (lambda: blas.sgemm(1.0, np.ones((2, 3)), np.ones((3, 2)), trans_b=-1), ValueError),
        (lambda: blas.sgemm(1.0, np.ones((2, 3)), np.ones((3, 2)), trans_a="T"), ValueError),
        (lambda: blas.sgemm("x", np.ones((2, 3)), np.ones((3, 2))), ValueError),
        (lambda: blas.sgemm(None, np.ones((2, 3)), np.ones((3, 2))), TypeError),
        (lambda: blas.dgemm(1.0, np.ones((2, 2, 3)), np.ones((3, 2))), ValueError),
        (lambda: blas.dgemm(1.0, np.ones((2, 3)), np.ones((3, 2)), foo=1), TypeError),
    ],
)
def test_errors(call, exc):
    with pytest.raises(exc):
        call()


# --- against SciPy ---------------------------------------------------------------------------

CASES = [
    dict(alpha=1.0, a=(7, 5), b=(5, 3)),
    dict(alpha=-0.5, a=(5, 7), b=(5, 3), trans_a=1),
    dict(alpha=2.0, a=(7, 5), b=(3, 5), trans_b=2, beta=0.5, c="F"),
    dict(alpha=1.0, a=(7, 5), b=(5, 3), beta=1.0, c="C", overwrite_c=1),
    dict(alpha=1.0, a=(7, 5), b=(5, 3), beta=1.0, c="F", overwrite_c=1),
    dict(alpha=1.0, a=(7, 5), b=(5, 3), beta=1.0, c="other-dtype", overwrite_c=1),
    dict(alpha=1.0, a=(7, 5), b=(5,)),
    dict(alpha=1.0, a=(), b=()),
    dict(alpha=1.0, a=(1, 7, 5), b=(5, 1, 3)),
    dict(alpha=1.0, a=(3, 1, 1), b=(1, 2)),
    dict(alpha=1.0, a=(7, 0), b=(0, 3), beta=0.5, c="F"),
    dict(alpha=1.0, a=(0, 5), b=(5, 3)),
    dict(alpha=1.0, a=(7, 5), b=(5, 3), beta=2.0),
    dict(alpha=1 + 2j, a=(7, 5), b=(5, 3)),
]


@pytest.mark.parametrize("name", list(ROUTINES))
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_same_as_scipy(name, case):
    sblas = pytest.importorskip("scipy.linalg.blas")
    dt = ROUTINES[name]
    a, b = _rand(case["a"], dt), _rand(case["b"], dt)
    opa_rows = blas._rank2(a).shape[1 if case.get("trans_a") else 0]
    opb_cols = blas._rank2(b).shape[0 if case.get("trans_b") else 1]
    c_kind = case.get("c")
    kwargs = {k: v for k, v in case.items() if k in ("beta", "trans_a", "trans_b", "overwrite_c")}

    def make_c():
        if c_kind is None:
            return None
        c = _rand((opa_rows, opb_cols), dt)
        if c_kind == "F":
            return np.asfortranarray(c)
        if c_kind == "other-dtype":
            return np.asfortranarray(c, np.float64 if dt == np.float32 else np.float32)
        return c

    c_ours, c_theirs = make_c(), None
    if c_ours is not None:
        c_theirs = c_ours.copy(order="A")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        ours = getattr(blas, name)(case["alpha"], a, b, c=c_ours, **kwargs)
        theirs = getattr(sblas, name)(case["alpha"], a, b, c=c_theirs, **kwargs)
    assert type(ours) is type(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.flags.f_contiguous == theirs.flags.f_contiguous
    assert (ours is c_ours) == (theirs is c_theirs)
    tol = 4 * max(a.size, 1) * U[np.dtype(dt)] * (1 + np.abs(theirs).max(initial=0))
    assert np.allclose(ours, theirs, rtol=0, atol=tol)


@pytest.mark.parametrize("name", list(ROUTINES))
def test_signature_matches_scipy(name):
    sblas = pytest.importorskip("scipy.linalg.blas")
    a, b = _rand((4, 3)), _rand((3, 2))
    c = np.asfortranarray(_rand((4, 2), ROUTINES[name]))
    # All positional, in SciPy's order: alpha, a, b, beta, c, trans_a, trans_b, overwrite_c.
    ours = getattr(blas, name)(1.0, a, b, 0.5, c.copy(order="F"), 0, 0, 0)
    theirs = getattr(sblas, name)(1.0, a, b, 0.5, c.copy(order="F"), 0, 0, 0)
    assert np.allclose(ours, theirs)
    ours = getattr(blas, name)(alpha=1.0, a=a, b=b, beta=0.5, c=c, trans_a=0, trans_b=0, overwrite_c=0)
    assert np.allclose(ours, theirs)
