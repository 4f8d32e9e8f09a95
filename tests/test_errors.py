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
    GEMM[np.dtype(dtype)](np.ones((2, 2), dtype), np.ones((2, 2), dtype), c, alpha=np.float32(0.5), beta=np.int64(2))
    np.testing.assert_array_equal(c, np.full((2, 2), 3.0, dtype))


def test_c_not_an_ndarray():
    with pytest.raises(TypeError, match="c"):
        fastgemm.sgemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), [[0.0, 0.0], [0.0, 0.0]])


# ---------------------------------------------------------------------------------------------
# Issue 9: argument forms users pass


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "flag,transposed",
    [
        (False, False),
        (True, True),
        (0, False),
        (1, True),
        (np.int64(1), True),
        (np.bool_(False), False),
        ("N", False),
        ("n", False),
        ("T", True),
        ("t", True),
        ("C", True),
        ("c", True),
    ],
)
def test_trans_flags_bool_int_and_blas_characters(dtype, flag, transposed):
    """trans_a="N" used to transpose (a non-empty str is truthy)."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (3, 5)).astype(dtype)
    b = rng.uniform(-1, 1, (5, 4)).astype(dtype)
    ref = a.astype(np.float64) @ b
    got = GEMM[np.dtype(dtype)](a.T.copy() if transposed else a, b, trans_a=flag)
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    got = GEMM[np.dtype(dtype)](a, b.T.copy() if transposed else b, trans_b=flag)
    np.testing.assert_allclose(got, ref, rtol=1e-5)


@pytest.mark.parametrize(
    "flag,error",
    [
        ("X", ValueError),
        ("", ValueError),
        ("NT", ValueError),
        ("yes", ValueError),
        (2, ValueError),
        (-1, ValueError),
        (np.int32(2), ValueError),
        (None, TypeError),
        (1.0, TypeError),
        (0.0, TypeError),
        (b"N", TypeError),
        ([1], TypeError),
    ],
)
def test_trans_flags_other_values_are_refused(flag, error):
    a = np.ones((3, 3), np.float32)
    with pytest.raises(error, match="trans_a"):
        fastgemm.sgemm(a, a, trans_a=flag)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "value",
    [
        np.array(2.0),
        np.array(2, np.int64),
        np.array(2.0, np.float32),
        np.float32(2.0),
        np.float64(2.0),
        np.int16(2),
        2,
        2.0,
    ],
)
def test_scalars_numpy_and_zero_d_arrays_work_like_floats(dtype, value):
    a = np.arange(6, dtype=dtype).reshape(2, 3)
    b = np.ones((3, 2), dtype)
    c = np.ones((2, 2), dtype)
    got = GEMM[np.dtype(dtype)](a, b, c.copy(), alpha=value, beta=value)
    np.testing.assert_array_equal(got, 2.0 * (a @ b) + 2.0 * c)


@pytest.mark.parametrize("value", [np.array([2.0]), np.array(True), np.bool_(True), True, "2", 1j, np.array(1j)])
def test_scalars_that_are_not_real_numbers_are_refused(value):
    a = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match="alpha"):
        fastgemm.sgemm(a, a, alpha=value)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("which", ["a", "b", "c"])
def test_non_native_byte_order_is_a_clear_type_error(dtype, which):
    """Never a wrong answer: a byte-swapped operand is refused with a message naming the byte
    order (sgemm/dgemm do not convert; fastgemm.matmul does, see test_matmul)."""
    args = {x: np.ones((3, 3), dtype) for x in "abc"}
    swapped = np.dtype(dtype).newbyteorder()
    args[which] = args[which].astype(swapped)
    c_before = args["c"].copy()
    with pytest.raises(TypeError, match="byte order") as e:
        GEMM[np.dtype(dtype)](args["a"], args["b"], args["c"], beta=1.0)
    assert swapped.str in str(e.value)
    np.testing.assert_array_equal(args["c"], c_before)
    if which == "a":
        with pytest.raises(TypeError, match="byte order"):
            fastgemm.gemm(args["a"], args["b"])


def _strided(base, shape, strides_elems):
    s = base.itemsize
    return np.lib.stride_tricks.as_strided(base, shape, tuple(x * s for x in strides_elems))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,strides",
    [
        ((3, 4), (0, 1)),  # zero row stride: every row is the same memory
        ((3, 4), (1, 0)),
        ((3, 4), (2, 1)),  # rows of 4 every 2 elements
        ((4, 3), (1, 2)),  # columns overlap
        ((3, 4), (6, 4)),  # gcd 2: (2, -3) collides within the shape
        ((2, 5), (-3, 1)),  # negative stride, rows of 5 every 3
    ],
)
def test_self_overlapping_c_is_refused(dtype, shape, strides):
    base = np.zeros(64, dtype)
    c = _strided(base[20:], shape, strides)
    a, b = np.ones((shape[0], 2), dtype), np.ones((2, shape[1]), dtype)
    with pytest.raises(ValueError, match="overlap"):
        GEMM[np.dtype(dtype)](a, b, c)
    assert not base.any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,strides",
    [
        ((3, 4), (4, 1)),
        ((3, 4), (1, 3)),
        ((1, 4), (0, 1)),
        ((3, 1), (1, 0)),
        ((2, 3), (1, 2)),
        ((3, 4), (6, 4)[::-1]),
        ((4, 3), (5, 3)),
        ((2, 2), (-3, 1)),
        ((0, 4), (0, 0)),
    ],
)
def test_c_with_unusual_but_disjoint_strides_is_written(dtype, shape, strides):
    base = np.zeros(64, dtype)
    c = _strided(base[20:], shape, strides)
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (shape[0], 3)).astype(dtype)
    b = rng.uniform(-1, 1, (3, shape[1])).astype(dtype)
    GEMM[np.dtype(dtype)](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_self_overlap_rule_matches_brute_force():
    from fastgemm._layout import self_overlaps

    base = np.zeros(400, np.float32)
    for rows in range(1, 6):
        for cols in range(1, 6):
            for rs in range(-7, 8):
                for cs in range(-7, 8):
                    x = _strided(base[200:], (rows, cols), (rs, cs))
                    offsets = [i * rs + j * cs for i in range(rows) for j in range(cols)]
                    assert self_overlaps(x) == (len(set(offsets)) < len(offsets)), (rows, cols, rs, cs)
