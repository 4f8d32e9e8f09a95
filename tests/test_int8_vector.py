"""int8 products with one row (a decode step, x @ W) or a few rows: the streaming kernels on every
kernel this machine runs, exact against an int64 NumPy reference, for W row-major (k x n) and W stored n x k
as a Linear layer does (trans_b=True), shapes around the kernels' vector widths and the chunk,
the int32 extremes over long K, and the dequantised float32 row (scale, bias, activation)
bitwise equal to the same row computed by the int8 tile.
"""

from __future__ import annotations

import numpy as np
import pytest

import fastgemm
from test_int8 import A_TYPES, dequantised, rand, reference

# Columns per matrix-vector step: 16 (avx2, neon), 32 (avx512), 8 (generic); the partial-sum
# chunk: 4096 int32 (kGemvChunkBytes); 16: the outputs' split between threads.
WIDTHS = (1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 97, 4095, 4096, 4097)
DEPTHS = (1, 2, 3, 4, 5, 7, 15, 16, 17, 31, 32, 33, 131, 509)


def row_ref(x, w):
    return reference(x[None, :], w)


@pytest.mark.parametrize("adt", A_TYPES)
def test_exact_rows_and_dots(kernel, adt):
    for n in WIDTHS:
        for k in DEPTHS if n < 100 else (3, 33, 131):
            x, w = rand(k, adt), rand((k, n), np.int8)
            want = row_ref(x, w)
            got = fastgemm.gemm(x[None, :], w)
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got, want, err_msg=f"{kernel} {adt.__name__} rows n={n} k={k}")
            wt = np.ascontiguousarray(w.T)  # a Linear layer's n x k weights
            got_t = fastgemm.gemm(x[None, :], wt, trans_b=True)
            np.testing.assert_array_equal(got_t, want, err_msg=f"{kernel} {adt.__name__} dots n={n} k={k}")


@pytest.mark.parametrize("adt", A_TYPES)
def test_strides_and_given_c(kernel, adt):
    k, n = 67, 45
    big_x, big_w = rand((3, 3 * k), adt), rand((2 * k, 3 * n), np.int8)
    x = big_x[1, ::3]  # strided x
    w = big_w[::2, 5 : 5 + n]  # rows of W ldm apart
    want = row_ref(x, w)
    np.testing.assert_array_equal(fastgemm.gemm(x[None, :], w), want)
    np.testing.assert_array_equal(fastgemm.gemm(x[None, :], w[:, ::-1]), want[:, ::-1])  # the tile: no form fits
    np.testing.assert_array_equal(fastgemm.gemm(x[None, :], big_w[::2, ::3][:, :n]), row_ref(x, big_w[::2, ::3][:, :n]))
    # strided C (the dots form writes it in place), and beta=1 accumulation into it
    wt = np.ascontiguousarray(w.T)
    c = np.zeros((1, 2 * n), np.int32)[:, ::2]
    fastgemm.gemm(np.ascontiguousarray(x)[None, :], wt, c, trans_b=True)
    np.testing.assert_array_equal(c, want)
    c0 = rand((1, n), np.int32)
    c = c0.copy()
    fastgemm.gemm(x[None, :], w, c, beta=1.0)
    np.testing.assert_array_equal(c, ((c0.astype(np.int64) + want + 2**31) % 2**32 - 2**31).astype(np.int32))
    # a transposed view of a column vector as x
    xc = np.ascontiguousarray(x[:, None])
    np.testing.assert_array_equal(fastgemm.gemm(xc, w, trans_a=True), want)


def test_extremes_over_long_k(kernel):
    """255 x -128 and -128 x -128 over the longest exact K and past it (wrapping), both forms."""
    for adt, xv, wv, k in ((np.uint8, 255, -128, 65793), (np.uint8, 255, -128, 65794), (np.int8, -128, -128, 131072)):
        x = np.full(k, xv, adt)
        w = np.full((k, 19), wv, np.int8)
        w[-1, 3] = 0
        want = row_ref(x, w)
        np.testing.assert_array_equal(fastgemm.gemm(x[None, :], w), want, err_msg=f"{kernel} {xv}x{wv} K={k}")
        wt = np.ascontiguousarray(w.T)
        np.testing.assert_array_equal(fastgemm.gemm(x[None, :], wt, trans_b=True), want)
        if k == 65793:
            assert int(want[0, 0]) == k * xv * wv


@pytest.mark.parametrize("adt", A_TYPES)
def test_dequantised_row_is_the_tile_row(kernel, adt):
    """scale / bias / activation on one row: the bits the tile gives the same row of a 2-row product."""
    for n, k in ((37, 70), (4097, 33), (130, 1031)):
        x, w = rand(k, adt), rand((k, n), np.int8)
        wt = np.ascontiguousarray(w.T)
        two = np.vstack([x, rand((15, k), adt)])  # m = 16: past the few-row forms, the tile path
        s = RNG_SCALE.uniform(-0.002, 0.002, size=n).astype(np.float32)
        bias = RNG_SCALE.uniform(-2.0, 2.0, size=n).astype(np.float32)
        np.testing.assert_array_equal(fastgemm.gemm(x[None, :], w, scale=s), dequantised(x[None, :], w, s))
        np.testing.assert_array_equal(fastgemm.gemm(x[None, :], w, scale=0.5), dequantised(x[None, :], w, 0.5))
        for act in (None, "relu", "gelu_tanh", "silu"):
            for scale in (s, 0.003):
                tile = fastgemm.gemm(two, w, scale=scale, bias=bias, activation=act)[:1]
                assert fastgemm.gemm(x[None, :], w, scale=scale, bias=bias, activation=act).tobytes() == tile.tobytes()
                got_t = fastgemm.gemm(x[None, :], wt, trans_b=True, scale=scale, bias=bias, activation=act)
                assert got_t.tobytes() == tile.tobytes(), f"{kernel} dots n={n} k={k} {act}"


RNG_SCALE = np.random.default_rng(1212)


@pytest.mark.parametrize("adt", A_TYPES)
def test_few_rows_exact_and_the_tile_rows(kernel, adt):
    """2 to 13 rows (streamed in groups of up to 6 where the kernel set streams few int8 rows, up
    to 12 on avx2): exact, accumulated into a given C, and dequantised with bias and activation
    bitwise equal to the same rows of a 16-row product (the tile); around the partial-sum chunk
    of 3 and 6 rows; 1 and 2 threads."""
    shapes = ((2, 300, 70), (3, 5470, 33), (5, 130, 1031), (6, 2730, 17), (7, 64, 9), (8, 300, 70), (12, 2730, 17))
    for m, n, k in shapes + ((13, 64, 9),):
        a, w = rand((16, k), adt), rand((k, n), np.int8)
        s = RNG_SCALE.uniform(-0.002, 0.002, size=n).astype(np.float32)
        bias = RNG_SCALE.uniform(-2.0, 2.0, size=n).astype(np.float32)
        tile = fastgemm.gemm(a, w, scale=s, bias=bias, activation="gelu_tanh")[:m]
        c0 = rand((m, n), np.int8).astype(np.int32) * 1000
        before = fastgemm.get_num_threads()
        try:
            for threads in (1, 2):
                fastgemm.set_num_threads(threads)
                np.testing.assert_array_equal(fastgemm.gemm(a[:m], w), reference(a[:m], w), err_msg=f"{m}x{n}x{k}")
                c = c0.copy()
                fastgemm.gemm(a[:m], w, c, beta=1)
                np.testing.assert_array_equal(c, c0 + reference(a[:m], w))
                got = fastgemm.gemm(a[:m], w, scale=s, bias=bias, activation="gelu_tanh")
                assert got.tobytes() == tile.tobytes(), f"{kernel} {m}x{n}x{k} threads={threads}"
        finally:
            fastgemm.set_num_threads(before)


@pytest.mark.parametrize("adt", A_TYPES)
def test_threads_bitwise(kernel, adt):
    # Past 2^25 multiply-adds, so a busy machine does not keep it on one thread (threading.cpp).
    k, n = 8200, 4100
    x, w = rand(k, adt), rand((k, n), np.int8)
    wt = np.ascontiguousarray(w.T)
    s = RNG_SCALE.uniform(-1, 1, size=n).astype(np.float32)
    before = fastgemm.get_num_threads()
    outs = []
    try:
        for threads in (1, 2):
            fastgemm.set_num_threads(threads)
            outs.append(
                [
                    fastgemm.gemm(x[None, :], w),
                    fastgemm.gemm(x[None, :], wt, trans_b=True),
                    fastgemm.gemm(x[None, :], w, scale=s, bias=s, activation="gelu"),
                ]
            )
    finally:
        fastgemm.set_num_threads(before)
    np.testing.assert_array_equal(outs[0][0][:, :64], row_ref(x, w[:, :64]))
    for one, two in zip(*outs):
        assert one.tobytes() == two.tobytes()


def test_int8_column_exact_and_dequantised(kernel):
    """W @ x with int8 W (m x k, rows contiguous) and an int8 column x: the one-row dots kernel
    with the roles swapped, exact, and its dequantised column the tile's bits (2 columns)."""
    for m in WIDTHS[:-3] + (4097,):
        for k in (1, 3, 16, 17, 33, 509) if m < 100 else (3, 131):
            w, x = rand((m, k), np.int8), rand((k, 1), np.int8)
            want = reference(w, x)
            np.testing.assert_array_equal(fastgemm.gemm(w, x), want, err_msg=f"{kernel} column m={m} k={k}")
            np.testing.assert_array_equal(fastgemm.gemm(w, np.ascontiguousarray(x.T), trans_b=True), want)
    m, k = 301, 77
    w, x = rand((m, k), np.int8), rand((k, 1), np.int8)
    two = np.hstack([x, rand((k, 1), np.int8)])  # n = 2: the tile path
    bias = RNG_SCALE.uniform(-2.0, 2.0, size=1).astype(np.float32)
    for act in (None, "relu", "gelu_tanh"):
        for scale in (np.float32(0.003), np.array([0.002], np.float32)):
            tile = fastgemm.gemm(w, two, scale=np.full(2, scale, np.float32), bias=np.repeat(bias, 2), activation=act)
            got = fastgemm.gemm(w, x, scale=scale, bias=bias, activation=act)
            assert got.tobytes() == np.ascontiguousarray(tile[:, :1]).tobytes(), f"{kernel} column {act}"
    # strided C and beta=1 accumulation; a uint8 A (no swap: the tile) still exact
    c0 = rand((m, 2), np.int32)
    c = c0.copy()
    fastgemm.gemm(w, x, c[:, :1], beta=1.0)
    np.testing.assert_array_equal(c[:, :1], ((c0[:, :1].astype(np.int64) + reference(w, x) + 2**31) % 2**32 - 2**31))
    np.testing.assert_array_equal(c[:, 1:], c0[:, 1:])
    wu = rand((m, k), np.uint8)
    np.testing.assert_array_equal(fastgemm.gemm(wu, x), reference(wu, x))


def test_int8_column_extremes_and_threads(kernel):
    k = 131072
    w, x = np.full((40, k), -128, np.int8), np.full((k, 1), -128, np.int8)
    np.testing.assert_array_equal(fastgemm.gemm(w, x), reference(w, x))
    w, x = rand((8200, 4100), np.int8), rand((4100, 1), np.int8)
    before = fastgemm.get_num_threads()
    try:
        outs = []
        for threads in (1, 2):
            fastgemm.set_num_threads(threads)
            outs.append(fastgemm.gemm(w, x, scale=0.01, bias=np.ones(1, np.float32), activation="silu").tobytes())
    finally:
        fastgemm.set_num_threads(before)
    assert outs[0] == outs[1]
