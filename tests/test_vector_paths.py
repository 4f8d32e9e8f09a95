"""Products with one row or one column of C (matrix-vector) and with few rows (B streamed, B
read in place, skinny tiles): the paths gemm takes instead of packing, in every orientation
their conditions distinguish, checked against the reference and for writes outside C."""

import numpy as np
import pytest

import fastgemm
from gemm_check import (
    DTYPES,
    GEMM,
    Placed,
    assert_matches,
    check_placed_on_threads,
    on_threads,
    random_matrix,
    reference,
)

# (m, n, k): one-row, one-column, vectors longer than one partial-sum chunk, primes, one row
# against a matrix past kStreamDeepBytes (16 MiB as float32; 8 rows of it a pass, then 4, then
# 1), dots of k <= 8 (short_dots: rows back to back, a partial last group of outputs), and
# narrow outputs.
VECTOR_SHAPES = [
    (1, 1, 1),
    (1, 1, 333),
    (1, 1, 4099),
    (1, 37, 5),
    (1, 1000, 333),
    (37, 1, 5),
    (1000, 1, 333),
    (1, 8193, 3),
    (5000, 1, 7),
    (1, 5003, 17),
    (4099, 1, 17),
    (1, 2050, 2053),
    (1, 700, 300),  # 8 rows of the matrix a pass from 128 KiB (rows not 4 KiB apart)
    (16, 1, 1),
    (45, 1, 3),
    (33, 1, 6),
    (53, 1, 8),
    (1, 17, 2),
    (1, 40, 7),
    # y of up to 4 vectors with its sums in registers (gemv_rows without a chunk): around half a
    # vector, one and four vectors of 4-16 lanes, k past and short of whole rounds of 8 chains.
    (1, 4, 1003),
    (1, 9, 1001),
    (1, 33, 1009),
    (1, 64, 1007),
    (1, 65, 999),
    (8, 1, 2979),
    (3, 1, 5001),
]
# Few rows with B wide enough to be read in place, around the skinny/main and in-place limits.
# Products small enough to skip packing: row counts around the 4-row groups, widths around
# 1..4 vectors (4, 8 and 16 lanes), sizes at the work limit, and B rows 512 or 1024 bytes apart
# (copied with padded rows: they would crowd a few L1 sets); narrow C past the work limit (rows
# of up to 80 bytes take the small kernels at any size on AVX2), and just wider.
SMALL_SHAPES = [
    (1, 2, 1),
    (2, 3, 5),
    (3, 8, 8),
    (4, 9, 16),
    (5, 16, 3),
    (7, 17, 31),
    (8, 33, 8),
    (13, 47, 29),
    (31, 64, 16),
    (64, 64, 64),
    (63, 65, 64),
    (40, 31, 200),
    (5, 5, 1000),
    (7, 3000, 7),
    (9, 9, 300),
    (16, 16, 4096),
    (64, 128, 128),
    (67, 256, 40),
    (2000, 3, 700),
    (700, 10, 1000),
    (1500, 20, 300),
    (301, 21, 1000),
    # A by columns with 2-6 columns: C^T's rows of up to 4 vectors held in registers
    # (stream_rows_narrow): around half a vector, one and four vectors.
    (4, 2, 2001),
    (9, 3, 300),
    (17, 5, 100),
    (33, 4, 64),
    (64, 2, 50),
    (65, 3, 40),
]
FEW_ROW_SHAPES = [
    (2, 700, 33),
    (15, 515, 64),
    (16, 520, 9),
    (17, 600, 31),
    (129, 530, 20),
    (256, 513, 7),
    (257, 520, 5),
]

# 2 to 7 rows with B past any L2 the small kernels would take (4+ MiB as float32): streamed
# where the kernel set streams few rows (up to 6), around its partial-sum chunk (64 KiB: 5456
# float32 columns a row for 3 rows, 3272 for 5, 2728 for 6; half as many float64).
STREAMED_SHAPES = [
    (2, 2100, 530),
    (3, 5470, 203),
    (4, 1030, 1100),
    (5, 3300, 300),
    (6, 2740, 400),
    (7, 1030, 1030),
]

# Past 6 rows, where the kernel set streams B once per group of at most 6 rows (few_row_groups_fit:
# AVX-512 up to 30 rows with the streams within L3): 7 (4 + 3), 12 (6 + 6), 13 (5 + 5 + 3), 29 and
# 30, B past one partial-sum chunk (3008 columns), and 31 rows past the bound; each but the last
# reaches the few-row kernels on AVX-512 in both types, by rows or columns of A.
FEW_ROW_GROUP_SHAPES = [
    (7, 216, 369),
    (7, 1024, 100),
    (12, 1024, 130),
    (13, 515, 700),
    (29, 256, 300),
    (30, 3008, 40),
    (31, 256, 300),
]


def _check(kernel, dtype, shape, trans_a, trans_b, beta, b_offset=0):
    m, n, k = shape
    rng = np.random.default_rng(hash((shape, trans_a, trans_b)) % 2**32)
    a = random_matrix(rng, (k, m) if trans_a else (m, k), dtype)
    b_vals = random_matrix(rng, (n, k) if trans_b else (k, n), dtype)
    # b inside a larger buffer at an element offset: B's first 64-byte boundary moves.
    big = np.zeros((b_vals.shape[0], b_vals.shape[1] + 16), dtype)
    b = big[:, b_offset : b_offset + b_vals.shape[1]]
    b[...] = b_vals
    c0 = random_matrix(rng, (m, n), dtype)
    placed = Placed(c0)
    if beta == 0:
        placed.arr[...] = np.nan  # must not survive
    GEMM[np.dtype(dtype)](a, b, placed.arr, alpha=1.5, beta=beta, trans_a=trans_a, trans_b=trans_b)
    ref, bound = reference(a, b, c0, 1.5, beta, trans_a, trans_b)
    assert_matches(placed.arr, ref, bound, f"{kernel} {shape} ta={trans_a} tb={trans_b} beta={beta}")
    assert placed.untouched_outside()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", VECTOR_SHAPES)
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_matrix_vector(kernel, dtype, shape, trans_a, trans_b, beta):
    _check(kernel, dtype, shape, trans_a, trans_b, beta)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SMALL_SHAPES)
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_small_products(kernel, dtype, shape, trans_a, trans_b, beta):
    # trans_b: B's columns contiguous, copied row-major for the small kernels; trans_a: A read by
    # columns, or the packed path once its columns are long and A large.
    _check(kernel, dtype, shape, trans_a, trans_b, beta)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", FEW_ROW_SHAPES)
@pytest.mark.parametrize("b_offset", [0, 1, 3])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_few_rows_b_in_place(kernel, dtype, shape, b_offset, beta):
    _check(kernel, dtype, shape, False, False, beta, b_offset)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", STREAMED_SHAPES + FEW_ROW_GROUP_SHAPES)
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("b_offset", [0, 3])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_few_rows_streamed(kernel, dtype, shape, trans_a, b_offset, beta):
    _check(kernel, dtype, shape, trans_a, False, beta, b_offset)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape",
    [
        (1, 20000, 300),
        (1, 2050, 2053),
        (20000, 1, 300),
        (3, 20000, 300),
        (7, 4096, 64),
        (29, 3008, 100),
        (301, 200, 400),
        (3001, 20, 300),
    ],
)
def test_same_bits_for_any_thread_count(dtype, shape):
    m, n, k = shape
    rng = np.random.default_rng(7)
    a, b = random_matrix(rng, (m, k), dtype), random_matrix(rng, (k, n), dtype)
    before = fastgemm.get_num_threads()
    try:
        results = []
        for t in (1, 2, 3):
            fastgemm.set_num_threads(t)
            results.append(GEMM[np.dtype(dtype)](a, b))
    finally:
        fastgemm.set_num_threads(before)
    assert all(np.array_equal(results[0], r) for r in results[1:])


# Small products whose B rows are a multiple of 4 KiB apart (every row on the same L1 set): with
# more than two 4-row groups of C, the small kernels take B a chunk of columns at a time, copied
# with padded rows. Widths around the chunk (a quarter of L1 over k rows) and a B that is a view
# into a wider row-major buffer (its last chunk narrower).
CROWDED_SHAPES = [(16, 4096, 16), (12, 1024, 32), (9, 512, 64), (33, 1000, 17), (16, 64, 8)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", CROWDED_SHAPES)
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_small_products_with_crowding_b_rows(kernel, dtype, shape, beta):
    m, n, k = shape
    rng = np.random.default_rng(m * n * k)
    a = random_matrix(rng, (m, k), dtype)
    wide = np.zeros((k, 1024 if n <= 1024 else 4096), dtype)
    b = wide[:, :n]
    b[...] = random_matrix(rng, (k, n), dtype)
    c0 = random_matrix(rng, (m, n), dtype)

    def product(bb):
        c = c0.copy()
        GEMM[np.dtype(dtype)](a, bb, c, beta=beta)
        return c

    got = on_threads(lambda: product(b))
    ref, bound = reference(a, b, c0, 1.0, beta)
    assert_matches(got[0], ref, bound, f"{shape}")
    assert np.array_equal(got[0], got[1]), "1 and 2 threads differ"
    # B with rows a line further apart is read in place: the same bits.
    padded = np.zeros((k, wide.shape[1] + 16), dtype)[:, :n]
    padded[...] = b
    assert np.array_equal(got[0], product(padded))


# A stored by columns against few slivers of B: the tiles read A's columns in place on AVX2 (up
# to 4 slivers of 16 float32 or 8 float64 columns), packed past that. Columns 5 elements longer
# than A's rows (a view of a larger array), B by rows and by columns, 1 and 2 threads.
A_COLUMN_SHAPES = [(130, 20, 1000), (301, 3, 517), (64, 64, 300), (97, 65, 300), (1000, 33, 64)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", A_COLUMN_SHAPES)
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_a_by_columns_read_in_place(kernel, dtype, shape, trans_b, beta):
    m, n, k = shape
    rng = np.random.default_rng(m * n + k)
    a = np.zeros((k, m + 5), dtype)[:, :m]
    a[...] = random_matrix(rng, (k, m), dtype)
    b = random_matrix(rng, (n, k) if trans_b else (k, n), dtype)
    c0 = random_matrix(rng, (m, n), dtype)

    def product():
        placed = Placed(c0)
        if beta == 0:
            placed.arr[...] = np.nan  # must not survive
        GEMM[np.dtype(dtype)](a, b, placed.arr, alpha=1.5, beta=beta, trans_a=True, trans_b=trans_b)
        assert placed.untouched_outside()
        return placed.arr.copy()

    got = on_threads(product)
    ref, bound = reference(a, b, c0, 1.5, beta, True, trans_b)
    assert_matches(got[0], ref, bound, f"{kernel} {shape} tb={trans_b} beta={beta}")
    assert np.array_equal(got[0], got[1]), "1 and 2 threads differ"


# Few rows or few columns of C with operands stored either way (docs/DESIGN.md, "Dot products" and
# "Few rows"): dot products of rows along k (at most 4 rows from 96 bytes of k, at most 4 columns
# from k = 128, float32 from k = 48; the short side copied along k when it is not; x @ W.T up to
# dots_rows_max_m rows with k from 16 and a quarter of n, up to the *_dots_l2_max_m settings with
# W within half of L2 from 1 KiB of k (512 bytes up to 12 rows), up to the *_dots_max_side
# settings from k = 512, float32 with up to f32_dots_idle_max_n columns that leave lanes idle
# from k = 128), and a narrow C with A stored by columns through C^T's few rows (2-6 columns, k
# from 16); k around the vector widths and both lines, n and m around the dot kernel's 3- and
# 4-wide blocks and past a thread's piece.
FEW_SHAPES = [
    (20, 23, 1000),
    (100, 24, 512),
    (7, 7, 2049),
    (2, 4, 129),
    (3, 130, 1000),
    (4, 9, 257),
    (4, 1030, 300),
    (8, 1030, 258),
    (5, 300, 200),
    (3, 7, 127),
    (4, 130, 12),  # 96 bytes of float64 k: dots; float32: the small path
    (3, 300, 24),
    (2, 33, 11),
    (130, 3, 200),
    (300, 3, 48),  # narrow C from k = 48: float32 dots, float64 the small path
    (130, 4, 50),
    (70, 2, 47),
    (257, 4, 129),
    (1000, 2, 20),
    (100, 6, 64),
    (100, 5, 16),
    (100, 3, 15),
    (30000, 3, 40),  # enough work for 2 threads: C written in pieces
    # x @ W.T with W within half of L2 from 1 KiB of k: dots up to 32 rows (float64) or 64
    # (float32); blocks of 4, 3 and 2 rows by 4 and 5 of W
    (13, 47, 300),
    (32, 64, 128),  # float64 dots, float32 (512 bytes of k) not
    (33, 41, 128),
    (64, 17, 256),  # float32 dots, float64 (64 rows) not
    (65, 9, 256),
    (30, 200, 300),
    (6, 60, 16),  # x @ W.T of 5-8 rows from k = 16: dots
    (8, 60, 15),
    (12, 57, 64),  # up to 12 rows from 512 bytes of k: float64 dots, float32 not
    (13, 57, 128),  # 13 rows from 1 KiB: float64 dots, float32 not
    # float32 x @ W.T with columns that leave vector lanes idle: dots from k = 128
    (82, 9, 352),
    (37, 6, 128),
    (41, 12, 127),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", FEW_SHAPES)
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT", "ST", "NS"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_few_rows_or_columns_any_layout(kernel, dtype, shape, layout, beta):
    m, n, k = shape
    rng = np.random.default_rng(m * n + k)
    # N: by rows, T: by columns (a transposed view), S: every other element of a row (neither
    # stride 1); all slices of wider arrays.
    views = {
        "N": lambda r, c: np.zeros((r, c + 3), dtype)[:, :c],
        "T": lambda r, c: np.zeros((c, r + 5), dtype)[:, :r].T,
        "S": lambda r, c: np.zeros((r, 2 * c), dtype)[:, ::2],
    }
    a, b = views[layout[0]](m, k), views[layout[1]](k, n)
    a[...] = random_matrix(rng, (m, k), dtype)
    b[...] = random_matrix(rng, (k, n), dtype)
    c0 = random_matrix(rng, (m, n), dtype)
    check_placed_on_threads(a, b, c0, "C", 1.5, beta, f"{kernel} {shape} {layout} beta={beta}")
    bias = random_matrix(rng, (n,), dtype)
    fused = fastgemm.gemm(a, b, bias=bias, activation="relu")
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0)
    assert_matches(fused, want, reference(a, b, c0, 1.0, 0.0, False, False)[1] + np.abs(bias), f"{kernel} fused")


# Dots of k = W / 2 or W along rows stored back to back (AVX-512's tree_dots: float32 k = 8,
# float64 k = 4 and 8) add each dot's products in V::reduce's tree, as the four-row form does for
# rows stored apart: the same bits either way, a row of -0 products +0 as there. k = 16 (the
# four-row form both ways) for comparison.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [4, 8, 16])
@pytest.mark.parametrize("m", [1, 5, 16, 17, 301])
def test_dots_of_rows_back_to_back_sum_as_rows_apart(kernel, dtype, k, m):
    if k == 4 and np.dtype(dtype) == np.float32:
        pytest.skip("float32 k = 4 sums in order (short_dots' lane picks)")
    rng = np.random.default_rng(m * 100 + k)
    a = random_matrix(rng, (m, k), dtype)
    a[0] = -0.0
    apart = np.zeros((m, k + 3), dtype)[:, :k]
    apart[...] = a
    x = random_matrix(rng, (k, 1), dtype)
    for beta in (0.0, 0.5):
        c0 = random_matrix(rng, (m, 1), dtype)
        column = [c0.copy(), c0.copy()]  # y = A x
        row = [c0.T.copy(), c0.T.copy()]  # y = x^T A^T (x @ W.T)
        for i, mat in enumerate((a, apart)):
            GEMM[np.dtype(dtype)](mat, x, column[i], alpha=1.5, beta=beta)
            GEMM[np.dtype(dtype)](x.T, mat.T, row[i], alpha=1.5, beta=beta)
        assert column[0].tobytes() == column[1].tobytes(), (kernel, beta)
        assert row[0].tobytes() == row[1].tobytes(), (kernel, beta)
        ref, bound = reference(a, x, c0, 1.5, beta)
        assert_matches(column[0], ref, bound, f"{kernel} {m} x 1 x {k} beta={beta}")
        if beta == 0:
            assert not np.signbit(column[0][0, 0]) and not np.signbit(row[0][0, 0])


# x @ w with w contiguous: 2-4 columns are copied along k for the narrow dot kernel (de-interleaved
# W columns a step by lane picks where the ISA has them, the last step partial), one row of x
# included (taken from the rows form to the dots); 5-8 columns read in place for comparison.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 2, 300), (1, 3, 130), (2, 2, 2051), (3, 5, 700), (4, 7, 129), (2, 8, 1000)])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_narrow_contiguous_b(kernel, dtype, shape, beta):
    m, n, k = shape
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a, b = random_matrix(rng, (m, k), dtype), random_matrix(rng, (k, n), dtype)
    c0 = random_matrix(rng, (m, n), dtype)
    placed = Placed(c0)
    if beta == 0:
        placed.arr[...] = np.nan  # must not survive
    GEMM[np.dtype(dtype)](a, b, placed.arr, alpha=1.5, beta=beta)
    ref, bound = reference(a, b, c0, 1.5, beta)
    assert_matches(placed.arr, ref, bound, f"{kernel} {shape} beta={beta}")
    assert placed.untouched_outside()
