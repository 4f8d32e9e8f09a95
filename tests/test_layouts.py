"""A, B and C with any strides: C/Fortran order, transposed views, steps, negative and zero
strides, misaligned or odd-byte-strided C, and C overlapping A or B."""

import numpy as np
import pytest

import fastgemm
from gemm_check import (
    DTYPES,
    ELEMENT_LAYOUTS,
    GEMM,
    LAYOUTS,
    Placed,
    assert_matches,
    check_into_placed,
    check_placed_on_threads,
    random_matrix,
    reference,
    tiles,
)


def shapes_for(kernel, dtype):
    mr, nr, _, kc, _ = tiles(kernel, dtype)
    # 13 x 20 with a B of 256 KiB and a row: the small kernels take it in k chunks (kernel.hpp,
    # small_chunks_b), A by rows or, up to 48 rows, by columns.
    chunked = (13, 20, 262144 // (20 * np.dtype(dtype).itemsize) + 1)
    return [(0, 3, 2), (2, 3, 0), (1, 1, 1), (mr + 1, nr - 1, 7), (mr - 1, nr + 1, kc + 1), (13, 17, 19), chunked]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("b_layout", ELEMENT_LAYOUTS)
@pytest.mark.parametrize("a_layout", ELEMENT_LAYOUTS)
def test_input_strides(kernel, dtype, a_layout, b_layout, trans_a, trans_b):
    rng = np.random.default_rng(3)
    for m, n, k in shapes_for(kernel, dtype):
        a0 = random_matrix(rng, (k, m) if trans_a else (m, k), dtype)
        b0 = random_matrix(rng, (n, k) if trans_b else (k, n), dtype)
        c0 = random_matrix(rng, (m, n), dtype)
        a, b = Placed(a0, a_layout), Placed(b0, b_layout)
        c = c0.copy()
        GEMM[np.dtype(dtype)](a.arr, b.arr, c, alpha=-1.0, beta=0.5, trans_a=trans_a, trans_b=trans_b)
        ref, bound = reference(a0, b0, c0, -1.0, 0.5, trans_a, trans_b)
        assert_matches(c, ref, bound, f"{kernel} {(m, n, k)}")
        assert a.untouched() and b.untouched(), "an input was written"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["unaligned", "oddbytes"])
def test_inputs_the_core_cannot_index(kernel, dtype, layout):
    """Misaligned or odd-byte-strided A and B are read correctly (through a copy)."""
    rng = np.random.default_rng(9)
    for m, n, k in shapes_for(kernel, dtype):
        a0 = random_matrix(rng, (m, k), dtype)
        b0 = random_matrix(rng, (k, n), dtype)
        a, b = Placed(a0, layout), Placed(b0, layout)
        ref, bound = reference(a0, b0, None, 1.0, 0.0)
        assert_matches(GEMM[np.dtype(dtype)](a.arr, b.arr), ref, bound, f"{kernel} {(m, n, k)}")
        assert a.untouched() and b.untouched(), "an input was written"


@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_views_equal_trans_flags(kernel, dtype):
    rng = np.random.default_rng(4)
    a0 = random_matrix(rng, (23, 37), dtype)
    b0 = random_matrix(rng, (29, 37), dtype)
    ref, bound = reference(a0, b0, None, 1.0, 0.0, False, True)
    gemm = GEMM[np.dtype(dtype)]
    assert_matches(gemm(a0, b0.T), ref, bound, "b.T view")
    assert_matches(gemm(a0.T.copy().T, b0.T), ref, bound, "Fortran a, b.T view")
    assert_matches(gemm(a0.T.copy(), b0, trans_a=True, trans_b=True), ref, bound, "trans flags")


# x.T @ W.T with W too large for the small path but few rows, or with m >= k and C's rows filling
# few of their vectors' lanes (from k = 32): with beta 0 computed as C^T = W X on the small
# kernels and transposed into C (C of either order), otherwise on the tiles or the small
# kernels over a copy of W.T; the same bits on 1 and 2 threads, nothing written around C, NaN
# in C not surviving beta 0.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape",
    [(8, 256, 256), (16, 217, 208), (5, 700, 300), (24, 150, 256), (40, 300, 600), (146, 9, 141), (370, 10, 125)]
    + [(300, 12, 170), (214, 8, 32), (214, 8, 31)],
)
@pytest.mark.parametrize("c_layout", ["C", "F"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_both_operands_by_columns_few_rows(kernel, dtype, shape, c_layout, beta):
    m, n, k = shape
    rng = np.random.default_rng(m + n + k)
    x = random_matrix(rng, (k, m), dtype)
    w = random_matrix(rng, (n, k), dtype)
    c0 = random_matrix(rng, (m, n), dtype)
    check_placed_on_threads(x.T, w.T, c0, c_layout, 0.75, beta, f"{kernel} {shape} C={c_layout} beta={beta}")


# A C narrower than the tile whose last vector would leave lanes idle goes to the blocked path
# as C^T = B^T A^T and is transposed into C (gemm.cpp, try_narrow_transposed): n narrow columns
# of a C by rows with A by columns (too large for the small kernels to read), or n narrow rows
# of a C by columns with B by rows (the same once oriented), the other operand either way, C's
# elements also apart (copied one by one); k within one KC block and past it; 2 threads give 1
# thread's bits.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("other_by_columns", [False, True])
@pytest.mark.parametrize("c_layout", ["C", "F", "stepped"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_narrow_c_as_transposed(kernel, dtype, other_by_columns, c_layout, beta):
    _, nr, _, kc, _ = tiles(kernel, dtype)
    rng = np.random.default_rng(nr + kc)
    for wide, k in ((300, 400), (140, kc + 3)):
        for n in sorted({5, 6, nr // 2 + 1, nr // 2 + 2} - {nr}):
            long_side = random_matrix(rng, (k, wide), dtype)
            narrow = random_matrix(rng, (n, k), dtype) if other_by_columns else random_matrix(rng, (k, n), dtype).T
            if c_layout != "F":  # wide x n: A = long_side.T by columns, B = narrow.T
                a, b, shape = long_side.T, narrow.T, (wide, n)
            else:  # n x wide by columns: A = narrow, B = long_side by rows
                a, b, shape = narrow, long_side, (n, wide)
            c0 = random_matrix(rng, shape, dtype)
            what = f"{kernel} {shape} k={k} other by columns={other_by_columns} C={c_layout} beta={beta}"
            check_placed_on_threads(a, b, c0, c_layout, 0.75, beta, what)


# A C narrower than one vector with A by columns that the small kernels would run with idle
# lanes (float32 9-12 columns in 16), in half-width vectors past 200 rows (7-8 columns), or a
# few-column product past 200 rows with short k, goes to the small kernels as C^T = B^T A^T and
# is put into C (gemm.cpp, try_narrow_small_transposed): C of either order (by columns: n
# narrow rows, B by rows; a C with elements apart takes other paths), the narrow operand either
# way, beta 0 and 0.5, the short products around kNarrowSmallCopyMinM / MinK (24 x 40 taken,
# 23 x 63 not, 20 x 64 taken) and the half-width rows of B by rows around kHalfRowsLongMinM /
# MinK (64 x 96 taken, 63 x 200 and 64 x 95 not) and the float32 short k around
# kNarrowShortKMinM (200 x 3 and 300 x 15 taken, 199 x 8 not); 2 threads give 1 thread's bits,
# and an item of a stack the single product's.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("other_by_columns", [False, True])
@pytest.mark.parametrize("c_layout", ["C", "F", "stepped"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_narrow_c_small_as_transposed(kernel, dtype, other_by_columns, c_layout, beta):
    rng = np.random.default_rng(7)
    for wide, k in (
        (677, 150),
        (300, 40),
        (250, 100),
        (8, 16),
        (24, 40),
        (23, 63),
        (20, 64),
        (64, 96),
        (63, 200),
        (64, 95),
        (200, 3),
        (199, 8),
        (300, 15),
    ):
        for n in (2, 3, 5, 6, 7, 8, 9, 11, 12):
            long_side = random_matrix(rng, (k, wide), dtype)
            narrow = random_matrix(rng, (n, k), dtype) if other_by_columns else random_matrix(rng, (k, n), dtype).T
            if c_layout != "F":
                a, b, shape = long_side.T, narrow.T, (wide, n)
            else:
                a, b, shape = narrow, long_side, (n, wide)
            c0 = random_matrix(rng, shape, dtype)
            what = f"{kernel} {shape} k={k} other by columns={other_by_columns} C={c_layout} beta={beta}"
            check_placed_on_threads(a, b, c0, c_layout, 0.75, beta, what)
    if beta == 0.0 and c_layout == "C":
        xs = random_matrix(rng, (3, 150, 677), dtype)
        ws = random_matrix(rng, (3, 11, 150), dtype) if other_by_columns else random_matrix(rng, (3, 150, 11), dtype)
        a, b = np.swapaxes(xs, 1, 2), np.swapaxes(ws, 1, 2) if other_by_columns else ws
        stack = fastgemm.matmul(a, b)
        assert np.array_equal(stack[1], fastgemm.matmul(a[1], b[1])), f"{kernel}: stack item differs"


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_strides(kernel, dtype):
    """np.broadcast_to gives stride-0 axes: every row (or column) is the same memory."""
    rng = np.random.default_rng(5)
    mr, nr, _, kc, _ = tiles(kernel, dtype)
    m, n, k = mr + 3, nr + 5, kc + 3
    row = random_matrix(rng, (1, k), dtype)
    col = random_matrix(rng, (k, 1), dtype)
    cases = {
        "a rows": (np.broadcast_to(row, (m, k)), random_matrix(rng, (k, n), dtype)),
        "a scalar": (np.broadcast_to(dtype(0.25), (m, k)), random_matrix(rng, (k, n), dtype)),
        "b cols": (random_matrix(rng, (m, k), dtype), np.broadcast_to(col, (k, n))),
        "b rows": (random_matrix(rng, (m, k), dtype), np.broadcast_to(row.T[:, :1].T.repeat(n, 0).T[:k], (k, n))),
        "both": (np.broadcast_to(row, (m, k)), np.broadcast_to(col, (k, n))),
    }
    for what, (a, b) in cases.items():
        assert 0 in a.strides or 0 in b.strides or what == "b rows"
        ref, bound = reference(np.array(a), np.array(b), None, 1.0, 0.0)
        assert_matches(GEMM[np.dtype(dtype)](a, b), ref, bound, f"{kernel} {what}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta", [0.0, 1.0, -0.5])
@pytest.mark.parametrize("c_layout", LAYOUTS)
def test_output_strides(kernel, dtype, c_layout, beta):
    rng = np.random.default_rng(6)
    for m, n, k in shapes_for(kernel, dtype):
        a0 = random_matrix(rng, (m, k), dtype)
        b0 = random_matrix(rng, (k, n), dtype)
        c0 = random_matrix(rng, (m, n), dtype)
        check_into_placed(a0, b0, c0, c_layout, 1.5, beta, f"{kernel} {c_layout} {(m, n, k)}")


def _aliasing_cases(rng, dtype, n):
    """(name, a, b, c) where c shares memory with a or b; n x n throughout."""

    def sq():
        return random_matrix(rng, (n, n), dtype)

    x = sq()
    yield "c is a", x, sq(), x
    x = sq()
    yield "c is b", sq(), x, x
    x = sq()
    yield "c is a and b", x, x, x
    x = sq()
    yield "c is a.T", x.T, sq(), x
    buf = random_matrix(rng, (n + 1, n + 1), dtype)
    yield "c shifted over a", buf[:n, :n], sq(), buf[1:, 1:]
    buf = random_matrix(rng, (n, 2 * n), dtype)
    yield "c beside a in one buffer", buf[:, :n], sq(), buf[:, n:]
    buf = random_matrix(rng, (2 * n, n), dtype)
    yield "c interleaved with b", sq(), buf[::2], buf[1::2]
    buf = random_matrix(rng, (n, n), dtype)
    yield "c reversed a", buf, sq(), buf[::-1, ::-1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_c_overlapping_inputs(kernel, dtype, beta):
    rng = np.random.default_rng(7)
    mr, nr, _, kc, _ = tiles(kernel, dtype)
    for n in (1, 3, max(mr, nr) + 1, 37):
        for what, a, b, c in _aliasing_cases(rng, dtype, n):
            a0, b0, c0 = a.copy(), b.copy(), c.copy()
            expected = c0.copy()
            GEMM[np.dtype(dtype)](a0, b0, expected, alpha=1.0, beta=beta)
            GEMM[np.dtype(dtype)](a, b, c, alpha=1.0, beta=beta)
            ref, bound = reference(a0, b0, c0, 1.0, beta)
            assert_matches(c, ref, bound, f"{kernel} {what} n={n}")
            np.testing.assert_array_equal(c, expected, err_msg=f"{kernel} {what} n={n}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("trans", [(False, True), (True, False), (True, True)])
def test_in_place_with_transposes(kernel, dtype, trans):
    rng = np.random.default_rng(8)
    x = random_matrix(rng, (19, 19), dtype)
    y = random_matrix(rng, (19, 19), dtype)
    x0 = x.copy()
    GEMM[np.dtype(dtype)](x, y, x, beta=-1.0, trans_a=trans[0], trans_b=trans[1])
    ref, bound = reference(x0, y, x0, 1.0, -1.0, *trans)
    assert_matches(x, ref, bound, f"{kernel} in place {trans}")
