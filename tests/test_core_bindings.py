"""The bindings' handling of arrays: dtype by type, byte order, empty operands, overlapping C."""

import pickle

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import fastgemm as fg
from fastgemm import _core

RNG = np.random.default_rng(9)
NATIVE = {np.float32: _core.sgemm, np.float64: _core.dgemm}
BATCHED = {np.float32: _core.sgemm_batched, np.float64: _core.dgemm_batched}


def _rand(shape, dtype):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unpickled_arrays_are_accepted(dtype):
    # A pickled array comes back with its own dtype object: equal, not identical.
    a = _rand((5, 7), dtype)
    b = _rand((7, 3), dtype)
    a2, b2 = pickle.loads(pickle.dumps(a)), pickle.loads(pickle.dumps(b))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(fg.gemm(a2, b2), want, rtol=1e-5)
    np.testing.assert_allclose(fg.matmul(a2, b2), want, rtol=1e-5)
    sq = _rand((4, 4), dtype)
    np.testing.assert_allclose(fg.gemm(pickle.loads(pickle.dumps(sq)), sq), sq.astype(np.float64) @ sq, rtol=1e-5)
    c = pickle.loads(pickle.dumps(np.zeros((5, 3), dtype)))
    NATIVE[dtype](a2, b2, c, 1.0, 0.0)
    np.testing.assert_allclose(c, want, rtol=1e-5)
    c3 = pickle.loads(pickle.dumps(np.zeros((2, 5, 3), dtype)))
    BATCHED[dtype](np.stack([a2, a2]), np.stack([b2, b2]), c3, 1.0, 0.0)
    np.testing.assert_allclose(c3, np.stack([want, want]), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_native_byte_order_is_a_clear_type_error(dtype):
    swapped = np.dtype(dtype).newbyteorder()
    a = _rand((3, 4), dtype).astype(swapped)
    b = _rand((4, 2), dtype)
    c = np.zeros((3, 2), dtype)
    with pytest.raises(TypeError, match="byte order"):
        NATIVE[dtype](a, b, c, 1.0, 0.0)
    with pytest.raises(TypeError, match="byte order"):
        BATCHED[dtype](a[None], b[None], c[None], 1.0, 0.0)
    assert not c.any()


def _odd_empty(shape, dtype):
    buf = np.zeros(64, np.uint8)
    x = np.ndarray(shape, dtype=dtype, buffer=buf, offset=1)
    assert x.size == 0 and x.ctypes.data % 2 == 1
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_empty_operand_at_odd_address(dtype):
    # Size-0 operands have no element to misalign; NumPy returns zeros.
    b = _rand((0, 4), dtype)
    a = _odd_empty((3, 0), dtype)
    got = fg.matmul(a, b)
    np.testing.assert_array_equal(got, np.matmul(a, b))
    c = _odd_empty((2, 3, 0), dtype)
    BATCHED[dtype](_rand((2, 3, 5), dtype), _rand((2, 5, 0), dtype), c, 1.0, 0.0)
    a3 = _odd_empty((0, 3, 5), dtype)
    np.testing.assert_array_equal(fg.matmul(a3, _rand((5, 2), dtype)), np.zeros((0, 3, 2), dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("strides", [(0, 1), (1, 1), (2, 1), (1, 0)], ids=["zero-row", "rows-1", "rows-2", "zero-col"])
def test_self_overlapping_c_is_refused(dtype, strides):
    item = np.dtype(dtype).itemsize
    base = np.zeros(64, dtype)
    c = as_strided(base, shape=(4, 3), strides=(strides[0] * item, strides[1] * item))
    a, b = _rand((4, 5), dtype), _rand((5, 3), dtype)
    with pytest.raises(ValueError, match="overlap"):
        NATIVE[dtype](a, b, c, 1.0, 0.0)
    with pytest.raises(ValueError, match="overlap"):
        fg.gemm(a, b, c)
    assert not base.any()
    with pytest.raises(ValueError, match="overlap"):
        BATCHED[dtype](a[None], b[None], c[None], 1.0, 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["rows", "items"])
def test_switch_hands_overlapping_out_to_numpy(dtype, kind):
    item = np.dtype(dtype).itemsize
    old = _core.switch_min_flops()
    _core.set_switch_min_flops(0)
    try:
        if kind == "rows":  # rows of one out matrix alias each other
            a, b = _rand((6, 8), dtype), _rand((8, 5), dtype)
            shape, strides = (6, 5), (2 * item, item)
        else:  # two out matrices share elements
            a, b = _rand((3, 6, 8), dtype), _rand((3, 8, 5), dtype)
            shape, strides = (3, 6, 5), (10 * item, 5 * item, item)
        results = []
        for on in (False, True):
            base = np.zeros(256, dtype)
            out = as_strided(base, shape=shape, strides=strides)
            if on:
                with fg.patched():
                    np.matmul(a, b, out=out)
            else:
                fg.restore_numpy()
                np.matmul(a, b, out=out)
            results.append(base.copy())
        np.testing.assert_array_equal(results[1], results[0])
    finally:
        _core.set_switch_min_flops(old)
