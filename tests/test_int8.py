"""int8 products: fastgemm.gemm with uint8 / int8 ``a`` and int8 ``b`` on every kernel this machine
runs: an exact int32 C against an int64 NumPy reference (wrapped to int32 where the sum passes
the int32 range), a dequantised float32 C against the same sum rounded to float32 and scaled in
float32 (bitwise: one rounding of the sum, one of the product), and the errors raised before
anything is computed.
"""

from __future__ import annotations

import numpy as np
import pytest

import fastgemm
from fastgemm import _core
from gemm_check import ELEMENT_LAYOUTS, Placed

RNG = np.random.default_rng(8888)
A_TYPES = (np.uint8, np.int8)


def rand(shape, dtype):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, size=shape, dtype=np.int64).astype(dtype)


def reference(a, b):
    """a @ b in int64, then wrapped modulo 2^32 into int32 (what an int32 sum gives)."""
    exact = a.astype(np.int64) @ b.astype(np.int64)
    return ((exact + 2**31) % 2**32 - 2**31).astype(np.int32)


def dequantised(a, b, scale):
    """float32(sum) * float32(scale), computed in float32 as the kernels do."""
    return reference(a, b).astype(np.float32) * np.asarray(scale, dtype=np.float32)


def int8_tiles(kernel):
    t = _core.int8_info(kernel)
    return t["mr"], t["nr"], t["mc"], t["kc"]


def shapes(kernel):
    mr, nr, mc, kc = int8_tiles(kernel)
    out = [(0, 0, 0), (0, 5, 3), (5, 0, 3), (5, 3, 0), (1, 1, 1), (1, 7, 1), (7, 1, 1), (1, 1, 9)]
    out += [(13, 17, 19), (31, 37, 41), (2, 3, 509), (401, 2, 3)]
    for d in (-1, 0, 1):
        out += [(mr + d, nr + 1, 7), (2 * mr + d, 2 * nr - 1, 3), (mr + 1, nr + d, 5), (mr - 1, nr + 1, kc + d)]
    out.append((mc + 1, nr + 1, kc + 1))  # a partial block in every loop
    return [s for s in out if min(s) >= 0]


@pytest.mark.parametrize("adt", A_TYPES)
def test_exact_on_edge_shapes(kernel, adt):
    for m, n, k in shapes(kernel):
        a, b = rand((m, k), adt), rand((k, n), np.int8)
        got = fastgemm.gemm(a, b)
        assert got.dtype == np.int32 and got.shape == (m, n)
        np.testing.assert_array_equal(got, reference(a, b), err_msg=f"{kernel} {adt.__name__} {m}x{n}x{k}")


@pytest.mark.parametrize("adt", A_TYPES)
def test_scale_scalar_and_vector(kernel, adt):
    for m, n, k in shapes(kernel)[4:]:
        a, b = rand((m, k), adt), rand((k, n), np.int8)
        s = RNG.uniform(-0.02, 0.02, size=n).astype(np.float32)
        got = fastgemm.gemm(a, b, scale=s)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, dequantised(a, b, s), err_msg=f"{kernel} {m}x{n}x{k} vector")
        np.testing.assert_array_equal(fastgemm.gemm(a, b, scale=0.125), dequantised(a, b, 0.125))
        # and within a float32 rounding or two of the float64 value
        ref64 = reference(a, b).astype(np.float64) * s.astype(np.float64)
        assert np.all(np.abs(got - ref64) <= 2.0**-23 * np.abs(ref64))


def test_scale_forms():
    a, b = rand((5, 40), np.uint8), rand((40, 3), np.int8)
    want = dequantised(a, b, np.float32(0.5))
    for s in (0.5, np.float32(0.5), np.float64(0.5), np.array(0.5), 1 / 2):
        np.testing.assert_array_equal(fastgemm.gemm(a, b, scale=s), want)
    c = np.full((5, 3), np.nan, np.float32)
    assert fastgemm.gemm(a, b, c, scale=0.5) is c
    np.testing.assert_array_equal(c, want)
    np.testing.assert_array_equal(fastgemm.gemm(a, b[:, :0], scale=np.ones(0, np.float32)), np.zeros((5, 0)))
    # k == 0: scale * 0, so an infinite scale gives NaN as float32(0) * inf does
    with np.errstate(invalid="ignore"):
        z = fastgemm.gemm(a[:, :0], b[:0], scale=np.array([1, np.inf, 2], np.float32))
    np.testing.assert_array_equal(np.isnan(z), [[False, True, False]] * 5)


@pytest.mark.parametrize("adt", A_TYPES)
def test_layouts_and_transposes(kernel, adt):
    mr, nr, _, kc = int8_tiles(kernel)
    m, n, k = mr + 1, nr + 3, kc + 5  # two k slices: the scaled path keeps a partial sum in C
    a, b = rand((m, k), adt), rand((k, n), np.int8)
    ref, s = reference(a, b), RNG.uniform(0.5, 1, size=n).astype(np.float32)
    for la in ELEMENT_LAYOUTS:
        for lc in ELEMENT_LAYOUTS:
            pa, pb = Placed(a, la), Placed(b, ELEMENT_LAYOUTS[::-1][ELEMENT_LAYOUTS.index(la)])
            pc = Placed(np.zeros((m, n), np.int32), lc)
            fastgemm.gemm(pa.arr, pb.arr, pc.arr)
            np.testing.assert_array_equal(pc.arr, ref, err_msg=f"{kernel} A {la} C {lc}")
            assert pc.untouched_outside() and pa.untouched() and pb.untouched()
            pf = Placed(np.zeros((m, n), np.float32), lc)
            fastgemm.gemm(pa.arr, pb.arr, pf.arr, scale=s)
            np.testing.assert_array_equal(pf.arr, dequantised(a, b, s), err_msg=f"{kernel} scaled C {lc}")
            assert pf.untouched_outside()
    at, bt = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
    for ta, tb in ((False, True), (True, False), (True, True)):
        got = fastgemm.gemm(at if ta else a, bt if tb else b, trans_a=ta, trans_b=tb)
        np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(fastgemm.gemm(at, bt, trans_a="T", trans_b="T", scale=s), dequantised(a, b, s))
    # odd byte strides (unaligned int32 C) go through a copy
    pu = Placed(np.zeros((m, n), np.int32), "oddbytes")
    fastgemm.gemm(a, b, pu.arr)
    np.testing.assert_array_equal(pu.arr, ref)


@pytest.mark.parametrize("adt", A_TYPES)
def test_given_c_beta_0_and_1(kernel, adt):
    mr, nr, _, kc = int8_tiles(kernel)
    for m, n, k in ((3, 5, 7), (2 * mr + 1, nr + 1, 2 * kc + 1)):
        a, b = rand((m, k), adt), rand((k, n), np.int8)
        c0 = rand((m, n), np.int32)
        c = c0.copy()
        assert fastgemm.gemm(a, b, c) is c
        np.testing.assert_array_equal(c, reference(a, b))
        c = c0.copy()
        fastgemm.gemm(a, b, c, beta=1)
        want = ((c0.astype(np.int64) + reference(a, b) + 2**31) % 2**32 - 2**31).astype(np.int32)
        np.testing.assert_array_equal(c, want)  # exact, wrapping like any int32 sum
        cf = np.asfortranarray(c0)
        fastgemm.gemm(a, b, cf, beta=1.0)
        np.testing.assert_array_equal(cf, want)
        c = c0.copy()
        fastgemm.gemm(a[:, :0], b[:0], c, beta=1)  # k == 0 leaves C as it was
        np.testing.assert_array_equal(c, c0)
        fastgemm.gemm(a[:, :0], b[:0], c)
        assert not c.any()


def test_extremes_at_the_overflow_bound(kernel):
    """255 x -128 and -128 x -128 over the longest K whose int32 sum is exact, and one more."""
    cases = (
        (np.uint8, 255, -128, fastgemm._int8.EXACT_MAX_K[np.dtype(np.uint8)]),
        (np.int8, -128, -128, fastgemm._int8.EXACT_MAX_K[np.dtype(np.int8)]),
        (np.int8, -128, 127, 131072),
    )
    for adt, x, y, kmax in cases:
        for k in (kmax, kmax + 1):
            a = np.full((3, k), x, adt)
            b = np.full((k, 2), y, np.int8)
            b[-1, 1] = 0  # a second column one term short
            got = fastgemm.gemm(a, b)
            np.testing.assert_array_equal(got, reference(a, b), err_msg=f"{kernel} {x} x {y} K={k}")
            exact = k * x * y
            if k == kmax and (adt, y) != (np.int8, 127):
                assert int(got[0, 0]) == exact  # still in range: the true value
    assert fastgemm._int8.EXACT_MAX_K[np.dtype(np.uint8)] * 255 * 128 <= 2**31 < 65794 * 255 * 128
    assert 131071 * 128 * 128 <= 2**31 - 1 < 131072 * 128 * 128
    # the wrap is NumPy's: int32 matmul of the same values
    a = np.full((1, 65794), 255, np.uint8)
    b = np.full((65794, 1), -128, np.int8)
    np.testing.assert_array_equal(fastgemm.gemm(a, b), a.astype(np.int32) @ b.astype(np.int32))


def test_long_k_random(kernel):
    a, b = rand((9, 20000), np.int8), rand((20000, 11), np.int8)
    np.testing.assert_array_equal(fastgemm.gemm(a, b), reference(a, b))
    a = rand((9, 20000), np.uint8)
    np.testing.assert_array_equal(fastgemm.gemm(a, b, scale=0.25), dequantised(a, b, 0.25))


@pytest.mark.parametrize("adt", A_TYPES)
@pytest.mark.parametrize("m,k,n", [(300, 700, 200), (150, 1100, 20)])  # 20 columns: B packed by each thread
def test_threads_bitwise(kernel, adt, m, k, n):
    a, b = rand((m, k), adt), rand((k, n), np.int8)
    s = RNG.uniform(-1, 1, size=n).astype(np.float32)
    before = fastgemm.get_num_threads()
    try:
        fastgemm.set_num_threads(1)
        one, one_f = fastgemm.gemm(a, b), fastgemm.gemm(a, b, scale=s)
        fastgemm.set_num_threads(2)
        two, two_f = fastgemm.gemm(a, b), fastgemm.gemm(a, b, scale=s)
    finally:
        fastgemm.set_num_threads(before)
    np.testing.assert_array_equal(one, reference(a, b))
    assert one.tobytes() == two.tobytes() and one_f.tobytes() == two_f.tobytes()


def test_int8_info_names_the_kernels():
    for name in fastgemm.available_kernels():
        info = _core.int8_info(name)
        assert info["mr"] >= 1 and info["nr"] >= 1 and info["kgroup"] in (1, 2, 4)
        assert info["kc"] % info["kgroup"] == 0
    if "avx512_vnni" in _core.cpu_features() and "avx512" in fastgemm.available_kernels():
        assert _core.int8_info("avx512")["isa"].startswith("AVX512_VNNI")


U8, I8 = np.zeros((3, 4), np.uint8), np.zeros((4, 2), np.int8)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: fastgemm.gemm(U8, U8.T), TypeError, "uint8 or int8 `a` with an int8 `b`"),
        (lambda: fastgemm.gemm(U8.astype(np.int16), I8), TypeError, "int16"),
        (lambda: fastgemm.gemm(U8.astype(np.int32), I8.astype(np.int32)), TypeError, "supported|int8 `b`"),
        (lambda: fastgemm.gemm(U8.astype(np.float32), I8), TypeError, "float32 and b is int8"),
        (lambda: fastgemm.gemm(I8.T, U8.astype(np.float32).T), TypeError, "int8 `b`"),
        (lambda: fastgemm.gemm(U8.astype(np.float32), I8.astype(np.float32), scale=1.0), TypeError, "dequantises"),
        (lambda: fastgemm.gemm(U8, I8, alpha=2), ValueError, "alpha=2"),
        (lambda: fastgemm.gemm(U8, I8, np.zeros((3, 2), np.int32), beta=0.5), ValueError, "beta=0.5"),
        (lambda: fastgemm.gemm(U8, I8, beta=1), ValueError, "no c was given"),
        (lambda: fastgemm.gemm(U8, I8, np.zeros((3, 2), np.float32)), TypeError, "c must be int32"),
        (lambda: fastgemm.gemm(U8, I8, np.zeros((3, 2), np.int64)), TypeError, "c must be int32"),
        (lambda: fastgemm.gemm(U8, I8, np.zeros((3, 2), np.int32), scale=1.0), TypeError, "c must be float32"),
        (lambda: fastgemm.gemm(U8, I8, np.zeros((3, 2), np.float32), beta=1, scale=1.0), ValueError, "scale="),
        (lambda: fastgemm.gemm(U8, I8, scale=np.ones(3, np.float32)), ValueError, r"shape \(2,\)"),
        (lambda: fastgemm.gemm(U8, I8, scale=np.ones(2)), TypeError, "float32"),
        (lambda: fastgemm.gemm(U8, I8, scale=True), TypeError, "real number"),
        (lambda: fastgemm.gemm(U8, I8, scale="1"), TypeError, "real number"),
        (lambda: fastgemm.gemm(U8, I8.T), ValueError, "inner dimensions"),
        (lambda: fastgemm.gemm(U8[None], I8), ValueError, "2-D"),
        (lambda: fastgemm.gemm(U8, I8, np.zeros((3, 3), np.int32)), ValueError, "shape"),
        (
            lambda: fastgemm.gemm(U8, I8, np.lib.stride_tricks.as_strided(np.zeros(8, np.int32), (3, 2), (4, 4))),
            ValueError,
            "overlap",
        ),
        (lambda: fastgemm.gemm(U8, I8, trans_a=2), ValueError, "trans_a"),
    ],
)
def test_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_errors_leave_c_untouched():
    c = np.full((3, 2), 7, np.int32)
    c.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        fastgemm.gemm(U8, I8, c)
    c = np.full((3, 2), 7, np.int32)
    with pytest.raises(ValueError):
        fastgemm.gemm(U8, I8, c, alpha=3)
    with pytest.raises(TypeError):
        fastgemm.gemm(U8, I8.astype(np.uint8), c)
    assert (c == 7).all()


@pytest.mark.parametrize("adt", A_TYPES)
def test_scale_then_bias_and_activation(kernel, adt):
    from test_epilogue import ACT_ULPS, act_ref

    for m, n, k in [(1, 7, 5), (13, 17, 19), (31, 37, 41), (70, 130, 300)]:
        a, b = rand((m, k), adt), rand((k, n), np.int8)
        s = RNG.uniform(-0.002, 0.002, size=n).astype(np.float32)
        bias = RNG.uniform(-2.0, 2.0, size=n).astype(np.float32)
        z = (dequantised(a, b, s) + bias).astype(np.float64)  # the two float32 roundings the core makes
        for act in ("relu", "gelu_tanh", "sigmoid"):
            got = fastgemm.gemm(a, b, scale=s, bias=bias, activation=act)
            with np.errstate(over="ignore"):
                ref = act_ref(act, z)
            ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(ref), np.finfo(np.float32).tiny)))) * 2.0**-23
            bound = ACT_ULPS[np.dtype(np.float32)][act] * ulp + np.finfo(np.float32).smallest_subnormal
            assert np.all(np.abs(got - ref) <= bound), f"{kernel} {m}x{n}x{k} {act}"
        # a column-major C goes through the tile buffer, finished the same way
        c = np.empty((m, n), np.float32, order="F")
        fastgemm.gemm(a, b, c, scale=s, bias=bias, activation="relu")
        np.testing.assert_array_equal(c, np.maximum(dequantised(a, b, s) + bias, 0))
    a, b = rand((3, 4), adt), rand((4, 5), np.int8)
    with pytest.raises(ValueError, match="need scale="):
        fastgemm.gemm(a, b, bias=np.zeros(5, np.float32))
    with pytest.raises(TypeError, match="bias"):
        fastgemm.gemm(a, b, scale=0.5, bias=np.zeros(5, np.float64))
