"""Bad input raises a Python exception with a sentence naming what was wrong, and writes nothing."""
import numpy as np
import pytest

import fastgemm
from gemm_check import DTYPES, GEMM, Placed

OTHER_DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype,wrong", [(d, w) for d in DTYPES for w in OTHER_DTYPES if d != w])
@pytest.mark.parametrize("which", ["a", "b", "c"])
def test_wrong_dtype_names_both(dtype, wrong, which):
    args = {x: np.ones((3, 3), dtype) for x in "abc"}
    args[which] = np.ones((3, 3), wrong)
    c_before = args["c"].copy()
    with pytest.raises(TypeError) as e:
        GEMM[np.dtype(dtype)](args["a"], args["b"], args["c"], beta=1.0)
    msg = str(e.value)
    assert str(np.dtype(wrong)) in msg and str(np.dtype(dtype)) in msg, msg
    np.testing.assert_array_equal(args["c"], c_before)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_rejects_other_dtypes(dtype):
    with pytest.raises(TypeError, match="int64"):
        fastgemm.gemm(np.ones((2, 2), np.int64), np.ones((2, 2), np.int64))
    with pytest.raises(TypeError, match="float32"):  # mixed precisions are not silently cast
        fastgemm.gemm(np.ones((2, 2), dtype), np.ones((2, 2), np.float32 if dtype == np.float64 else np.float64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bad", [(3,), (2, 3, 4), ()])
@pytest.mark.parametrize("which", ["a", "b", "c"])
def test_not_2d(dtype, bad, which):
    args = {"a": np.ones((2, 3), dtype), "b": np.ones((3, 4), dtype), "c": np.ones((2, 4), dtype)}
    args[which] = np.ones(bad, dtype)
    c = Placed(args["c"]) if which != "c" else None
    if c is not None:
        args["c"] = c.arr
    with pytest.raises(ValueError) as e:
        GEMM[np.dtype(dtype)](args["a"], args["b"], args["c"], beta=1.0)
    assert str(bad) in str(e.value), str(e.value)
    assert c is None or c.untouched()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("trans", [(False, False), (True, False), (False, True)])
def test_inner_dimensions_differ(dtype, trans):
    a = np.ones((2, 3), dtype)
    b = np.ones((4, 5), dtype)
    c = Placed(np.ones((2, 5), dtype) if not trans[0] else np.ones((3, 5), dtype))
    with pytest.raises(ValueError) as e:
        GEMM[np.dtype(dtype)](a, b, c.arr, beta=1.0, trans_a=trans[0], trans_b=trans[1])
    msg = str(e.value)
    opa = a.T.shape if trans[0] else a.shape
    opb = b.T.shape if trans[1] else b.shape
    assert str(opa) in msg and str(opb) in msg, msg
    assert c.untouched()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 4), (5, 3), (3, 5, 1), (0, 0)])
def test_c_wrong_shape(dtype, shape):
    a, b = np.ones((3, 4), dtype), np.ones((4, 5), dtype)
    c = Placed(np.ones(shape[:2], dtype)) if len(shape) == 2 else None
    arr = c.arr if c else np.ones(shape, dtype)
    with pytest.raises(ValueError) as e:
        GEMM[np.dtype(dtype)](a, b, arr)
    msg = str(e.value)
    assert str(shape) in msg, msg
    if c:
        assert "(3, 5)" in msg, msg
        assert c.untouched()


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_only_c(dtype):
    c0 = np.arange(6, dtype=dtype).reshape(2, 3)
    c = c0.copy()
    c.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        GEMM[np.dtype(dtype)](np.ones((2, 2), dtype), np.ones((2, 3), dtype), c)
    np.testing.assert_array_equal(c, c0)
    bc = np.broadcast_to(np.ones(3, dtype), (2, 3))
    with pytest.raises(ValueError, match="read-only"):
        GEMM[np.dtype(dtype)](np.ones((2, 2), dtype), np.ones((2, 3), dtype), bc)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta", [1.0, -2.0, float("nan"), float("inf")])
def test_beta_without_c(dtype, beta):
    with pytest.raises(ValueError, match="beta"):
        GEMM[np.dtype(dtype)](np.ones((2, 2), dtype), np.ones((2, 2), dtype), beta=beta)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["alpha", "beta"])
@pytest.mark.parametrize("value", [1j, complex(1, 0), np.complex64(1), "1.0", None, [1.0], True, np.ones(1)])
def test_non_real_scalars(dtype, name, value):
    c = Placed(np.ones((2, 2), dtype))
    with pytest.raises(TypeError, match=name):
        GEMM[np.dtype(dtype)](np.ones((2, 2), dtype), np.ones((2, 2), dtype), c.arr, **{name: value})
    assert c.untouched()


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_real_scalars_accepted(dtype):
    c = np.ones((2, 2), dtype)
    GEMM[np.dtype(dtype)](np.ones((2, 2), dtype), np.ones((2, 2), dtype), c,
                          alpha=np.float32(0.5), beta=np.int64(2))
    np.testing.assert_array_equal(c, np.full((2, 2), 3.0, dtype))


def test_c_not_an_ndarray():
    with pytest.raises(TypeError, match="c"):
        fastgemm.sgemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), [[0.0, 0.0], [0.0, 0.0]])

