"""Floating-point exception flags with the switch on: the same as NumPy's own matmul."""

import numpy as np
import pytest

import fastgemm as fg
from fastgemm import _core

SHAPES = [(65, 65, 65), (100, 100, 100), (1, 300, 1000), (64, 17, 300), (300, 1000, 1), (3, 5, 7)]


@pytest.fixture(autouse=True)
def _every_product_on_fastgemm():
    # One thread: flags raised on worker threads never reach NumPy, on either side.
    old_flops, old_threads = _core.switch_min_flops(), fg.get_num_threads()
    _core.set_switch_min_flops(0)
    fg.set_num_threads(1)
    yield
    _core.set_switch_min_flops(old_flops)
    fg.set_num_threads(old_threads)
    fg.restore_numpy()


def _operands(m, n, k, dtype, where):
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a = rng.uniform(0.5, 1.0, (m, k)).astype(dtype)
    b = rng.uniform(0.5, 1.0, (k, n)).astype(dtype)
    if where == "A":
        a[0, 0] = np.inf
    elif where == "B":
        b[-1, -1] = np.inf
    elif where == "inf-inf":
        a[0, 0] = np.inf
        a[0, -1] = -np.inf
    return a, b


def _outcome(a, b):
    """The error np.matmul raises under errstate(all='raise'), or its result."""
    try:
        with np.errstate(all="raise"):
            return "ok", np.matmul(a, b)
    except FloatingPointError as e:
        return str(e), None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("where", ["A", "B", "inf-inf"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_flags_match_numpy(shape, where, dtype):
    m, n, k = shape
    if where == "inf-inf" and k == 1:
        pytest.skip("needs two terms")
    a, b = _operands(m, n, k, dtype, where)
    fg.restore_numpy()
    want, want_c = _outcome(a, b)
    with fg.patched():
        got, got_c = _outcome(a, b)
        assert _core.matmul_loop_calls()["fastgemm"] > 0
    if where == "inf-inf":
        assert got == want and "invalid" in got
    else:
        # The true product has no invalid operation. NumPy's own loop raises nothing either,
        # except where its BLAS pads too (seen at 3x5x7 fp32, Inf in B): never more than that.
        assert got == "ok", f"NumPy: {want}"
    if want == "ok":
        np.testing.assert_array_equal(np.isinf(got_c), np.isinf(want_c))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_invalid_warning_not_spurious(dtype):
    a, b = _operands(65, 65, 65, dtype, "A")
    with fg.patched(), np.errstate(invalid="raise"):
        c = a @ b
    assert np.isinf(c[0]).all() and np.isfinite(c[1:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_genuine_inf_minus_inf_still_raises(dtype):
    a, b = _operands(64, 17, 300, dtype, "inf-inf")
    with fg.patched(), np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="invalid"):
        a @ b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [257, 1023, 1025, 4100])
def test_gemv_tail(n, dtype):
    # 1 x k @ k x n runs on the matrix-vector kernel, whose tail vector spans lanes past n.
    rng = np.random.default_rng(n)
    x = rng.uniform(-1, 1, (1, 1024)).astype(dtype)
    mat = rng.uniform(-1, 1, (1024, n)).astype(dtype)
    with np.errstate(all="raise"):
        got = fg.gemm(x, mat)
    xw, mw = x.astype(np.longdouble), mat.astype(np.longdouble)
    bound = 2 * 1024 * np.finfo(dtype).eps * (np.abs(xw) @ np.abs(mw))
    assert np.all(np.abs(got - xw @ mw) <= bound)
