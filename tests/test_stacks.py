"""Stacks of small products (KernelTable::small_stack: fixed-shape kernels for squares 2..32,
the general small kernel otherwise) and the per-call C path (sgemm_call, gemm_call,
matmul_call), under every kernel this machine runs."""

import numpy as np
import pytest

import fastgemm
from fastgemm import _core
from gemm_check import DTYPES, assert_matches, on_threads, reference

SQUARES = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64)
BATCHED = {np.dtype(np.float32): _core.sgemm_batched, np.dtype(np.float64): _core.dgemm_batched}


def _rand(rng, shape, dtype):
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def _check_stack(c, a, b, alpha=1.0, beta=0.0, c0=None):
    batch = c.shape[:-2]
    a, b = np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])
    for idx in np.ndindex(*c.shape[:-2]):
        ref, bound = reference(a[idx], b[idx], None if c0 is None else c0[idx], alpha, beta)
        assert_matches(c[idx], ref, bound, f"item {idx}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SQUARES)
def test_square_stacks(kernel, n, dtype):
    rng = np.random.default_rng(n)
    a, b = _rand(rng, (7, n, n), dtype), _rand(rng, (7, n, n), dtype)
    c = fastgemm.matmul(a, b)
    _check_stack(c, a, b)
    # The same kernels as one product at a time: a stack item is the single product, bitwise.
    assert np.array_equal(c[3], fastgemm.matmul(a[3], b[3]))


# (64, 128, 64) to (64, 1024, 8) have 64+ rows and B rows 512, 1024 or 4096 bytes apart (as
# float32; twice as far as float64), which crowd a few L1 sets: a single such product copies B
# with its rows apart, a stack reads each item's B in place and prefetches the next item's
# operands (items of 8 KiB up). Then two narrow items past the small kernels' work cap (on AVX2
# narrow C takes them at any size), and one row of 2-4 columns (the narrow dots, not the
# matrix-vector kernels, alone and in a stack).
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape",
    [
        (1, 8, 8),
        (8, 1, 8),
        (8, 8, 1),
        (3, 17, 5),
        (17, 3, 40),
        (6, 24, 9),
        (5, 32, 12),
        (33, 9, 2),
        (64, 128, 64),
        (70, 256, 32),
        (64, 1024, 8),
        (700, 10, 320),
        (1500, 3, 500),
        (1, 2, 300),
        (1, 4, 130),
    ],
)
def test_rectangular_stacks(kernel, shape, dtype):
    m, n, k = shape
    rng = np.random.default_rng(m * 100 + n)
    a, b = _rand(rng, (5, m, k), dtype), _rand(rng, (5, k, n), dtype)
    c = fastgemm.matmul(a, b)
    _check_stack(c, a, b)
    assert np.array_equal(c[2], fastgemm.matmul(a[2], b[2]))


# C one vector wide or less (8 float32 / 4 float64 columns fit every kernel's vector, 16 / 8
# AVX-512's): every row count 1-13 covers each row grouping of a one-vector panel (groups of 8,
# then 4-7 or 4 and 5-7 rows, then 1-4); k long enough to leave the short-k kernels. Against the
# float64 reference, each item the single product bit for bit, beta and alpha applied.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", range(1, 14))
def test_one_vector_panel_rows(kernel, m, dtype):
    n = 16 if np.dtype(dtype) == np.float32 else 8
    rng = np.random.default_rng(m)
    for cols in (n, n // 2 + 1):
        a, b = _rand(rng, (6, m, 40), dtype), _rand(rng, (6, 40, cols), dtype)
        c0 = _rand(rng, (6, m, cols), dtype)
        c = c0.copy()
        BATCHED[np.dtype(dtype)](a, b, c, 0.75, -0.5)
        _check_stack(c, a, b, 0.75, -0.5, c0)
        one = c0[4].copy()
        fastgemm.gemm(a[4], b[4], one, alpha=0.75, beta=-0.5)
        assert np.array_equal(c[4], one)


# x @ W.T items that gemm gives the dot kernels (5-8 rows from k = 16, W's rows along k; 4 rows
# of any such B; on AVX-512 9-12 rows of 9-11 columns from 256 bytes of k): a stack calls the
# dot kernel item by item, each item the single product bit for bit, W per item or broadcast, on
# 1 and 2 threads; with x stored by columns, each item's x copied along k first
# (run_dots_copied), as gemm does.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape",
    [
        (4, 30, 24),
        (5, 16, 16),
        (6, 169, 107),
        (8, 20, 32),
        (7, 40, 100),
        (9, 9, 64),
        (12, 11, 32),
        (4, 37, 48),
        (29, 4, 64),
        (17, 4, 40),
    ],
)
def test_dot_stacks(kernel, shape, dtype):
    m, n, k = shape
    rng = np.random.default_rng(m * 1000 + n)
    w = _rand(rng, (6, n, k), dtype)
    for a in (_rand(rng, (6, m, k), dtype), np.swapaxes(_rand(rng, (6, k, m), dtype), -1, -2)):
        for b in (np.swapaxes(w, -1, -2), w[0].T):
            for c in on_threads(lambda a=a, b=b: fastgemm.matmul(a, b)):
                _check_stack(c, a, b)
                assert np.array_equal(c[4], fastgemm.matmul(a[4], b if b.ndim == 2 else b[4]))


# Narrow items (2-4 columns) that go to the dot kernel where narrow_dots_pay says so for the
# kernel set (float64 4 x 56 on AVX-512's costs, NT only; 4 x 128 there from min_k, but not on
# avx2, whose 4 float64 lanes it fills; elsewhere the small kernels, checked the same way), in a
# stack whose long operand (x) passes half of L3: each item's dots then
# prefetch the next item's x a chunk of rows ahead (run_dots' next_l), which must not change a
# bit of any item; W per item (NT) or B by rows copied along k (NN).
@pytest.mark.parametrize(
    "dtype, n, k",
    [
        (np.float64, 2, 64),
        (np.float64, 3, 64),
        (np.float64, 4, 56),
        (np.float64, 4, 128),
        (np.float32, 2, 32),
        (np.float32, 4, 32),
    ],
)
@pytest.mark.parametrize("layout", ["NT", "NN"])
def test_narrow_dot_stack_from_memory(kernel, dtype, n, k, layout):
    m, itemsize = 64, np.dtype(dtype).itemsize
    l3 = fastgemm.info()["caches"]["l3"]["size"]
    count = min(3000, int(0.6 * l3 / (m * k * itemsize)) + 1)
    rng = np.random.default_rng(n * k)
    a = _rand(rng, (count, m, k), dtype)
    b = _rand(rng, (count, n, k), dtype).swapaxes(-1, -2) if layout == "NT" else _rand(rng, (count, k, n), dtype)
    c = fastgemm.matmul(a, b)
    _check_stack(c, a, b)
    for i in (0, count // 2, count - 1):
        assert np.array_equal(c[i], fastgemm.matmul(a[i], b[i])), i


# Few-column items (A by columns: C^T's 2-6 rows streamed from A's columns) longer than the
# narrow kernels' registers: with 32 registers each item's C^T rows are summed in register blocks
# of columns, and in a stack past a quarter of L3 in the partial-sum chunk with prefetch
# (stream_in_blocks): every item the same bits as its single product, alpha and beta too.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(50, 4, 45), (64, 2, 40), (100, 4, 64), (97, 3, 33), (70, 6, 20), (129, 5, 17)])
@pytest.mark.parametrize("trans_b", [False, True])
def test_few_column_items_from_cache_and_memory(kernel, dtype, shape, trans_b):
    m, n, k = shape
    itemsize = np.dtype(dtype).itemsize
    count = min(4000, int(0.3 * fastgemm.info()["caches"]["l3"]["size"] / (m * k * itemsize)) + 1)
    rng = np.random.default_rng(m * n * k)
    a = _rand(rng, (count, k, m), dtype).swapaxes(-1, -2)
    b = _rand(rng, (count, n, k), dtype).swapaxes(-1, -2) if trans_b else _rand(rng, (count, k, n), dtype)
    c0 = _rand(rng, (count, m, n), dtype)
    for alpha, beta in ((1.0, 0.0), (-1.5, 0.5)):
        c = c0.copy()
        BATCHED[c.dtype](a, b, c, alpha, beta)
        for i in (0, count // 2, count - 1):
            _check_stack(c[i : i + 1], a[i : i + 1], b[i : i + 1], alpha, beta, c0[i : i + 1])
            one = c0[i].copy()
            fastgemm.gemm(a[i], b[i], one, alpha=alpha, beta=beta)
            assert np.array_equal(c[i], one), (alpha, i)


# C's last 1-4 columns past whole vectors go to the dot kernel where small_tail_dots says so
# (enough rows and k; 16 x 20 x 1024 float32 is the largest B copy a stack item makes on the
# stack, 16 x 20 x 1025 one past it; float32 C of 5-7 columns goes there whole), or with A stored by columns (TN, TT) to the few-row
# kernels (small_tail_rows): the same bits alone and in a stack, with B broadcast, on 1 and 2
# threads, with a bias (the same as adding it after), against the reference. A column-major C
# is computed as C^T = B^T A^T, whose last columns are C's last rows: with B stored by columns
# (NT) 65 x 40 x 200 and 130 x 9 x 128 float64 take them as dots.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape",
    [
        (310, 17, 128),
        (64, 18, 64),
        (40, 65, 200),
        (65, 40, 200),
        (130, 9, 128),
        (100, 11, 300),
        (16, 20, 1024),
        (16, 20, 1025),
        (192, 5, 684),
        (130, 7, 128),
        (300, 21, 128),
        (12, 17, 700),  # TN, TT: from 12 rows the last column goes to the few-row kernels
        (11, 17, 700),
    ],
)
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_last_columns_past_whole_vectors(kernel, shape, dtype, layout):
    m, n, k = shape
    rng = np.random.default_rng(m + n + k)
    a = _rand(rng, (4, k, m), dtype).swapaxes(-1, -2) if layout[0] == "T" else _rand(rng, (4, m, k), dtype)
    b = _rand(rng, (4, n, k), dtype).swapaxes(-1, -2) if layout[1] == "T" else _rand(rng, (4, k, n), dtype)
    c = fastgemm.matmul(a, b)
    _check_stack(c, a, b)
    one, two = on_threads(lambda: fastgemm.matmul(a[1], b[1]))
    assert np.array_equal(c[1], one) and np.array_equal(one, two)
    shared = fastgemm.matmul(a, b[2])
    assert np.array_equal(shared[0], fastgemm.matmul(a[0], b[2]))
    bias = _rand(rng, (n,), dtype)
    assert np.array_equal(fastgemm.gemm(a[3], b[3], bias=bias), fastgemm.gemm(a[3], b[3]) + bias)
    c0 = _rand(rng, (m, n), dtype)
    f = np.asfortranarray(c0)
    fastgemm.gemm(a[0], b[0], f, alpha=-1.5, beta=0.5)
    ref, bound = reference(a[0], b[0], c0, -1.5, 0.5)
    assert_matches(f, ref, bound, "column-major C")
    fb, plain = np.zeros((m, n), dtype, order="F"), np.zeros((m, n), dtype, order="F")
    fastgemm.gemm(a[3], b[3], fb, bias=bias)
    fastgemm.gemm(a[3], b[3], plain)
    assert np.array_equal(fb, plain + bias)


# Stacks of A.T @ B and A.T @ B.T items (A stored by columns) whose last 1-4 columns past C's
# whole vectors go down A's columns (small_tail_columns, column_tail; n = 2 x 16 or 2 x 8 plus
# the tail, so AVX-512's tails, and AVX2's where they fit), B by rows or by columns (the rest of
# it copied by rows): one row, partial vectors, passes of 4 vectors +- 1 row, tails of 1-5
# columns (5: past the bound), k short and long (whether k pays for the columns written apart),
# alpha and beta against the float64 reference, each item the single product bit for bit, under
# every kernel.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", [1, 7, 16, 30, 63, 64, 65, 129])
@pytest.mark.parametrize("tail", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("b_by_columns", [False, True])
@pytest.mark.parametrize("k", [9, 37])
def test_column_tail_stacks(kernel, dtype, m, tail, b_by_columns, k):
    n = (32 if np.dtype(dtype) == np.float32 else 16) + tail
    rng = np.random.default_rng(m * 10 + tail)
    a = _rand(rng, (5, k, m), dtype).swapaxes(-1, -2)
    b = _rand(rng, (5, n, k), dtype).swapaxes(-1, -2) if b_by_columns else _rand(rng, (5, k, n), dtype)
    c0 = _rand(rng, (5, m, n), dtype)
    _assert_items_equal_single_products(a, b, c0, 0.75, -0.5)
    _assert_items_equal_single_products(a, b, c0, 1.0, 0.0)


# k <= 8 over C wider than a panel of the small kernels (64 float32 / 32 float64 columns on
# AVX-512): products and stacks of up to 8 MiB sweep C's rows a group at a time (short_k), on
# any thread count, with alpha and beta, partial row groups (1-5 rows past 4, 3 or 2 a group)
# and partial vectors; A stored by columns (TN, TT: x.T @ y at any size, no longer packed) reads
# its elements strided. Each row's columns before a vector boundary go first; with C past 48
# KiB, rows not a whole number of 64-byte vectors apart go in groups of rows that share their
# offset in a line, 2-16 rows apart (301 x 98 x 2, 130 x 130 x 3, float32 70 x 200 x 4, 37 x 700
# x 5, 21 x 1300 x 7); B past 32 KiB goes in blocks of columns (5 x 1500 x 6, 9 x 700 x 8, 21 x
# 1300 x 7); a C past half of L2 goes to the kernel whole (2100 x 130 x 3, float64). Where a
# group is one row (AVX2 from k = 5) only rows from 1 KiB sweep, narrower ones take the panels
# (the bound's edges: 256 / 255 float32 and 128 / 127 float64 columns).
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape",
    [
        (1, 70, 1),
        (2, 130, 2),
        (5, 33, 3),
        (7, 100, 4),
        (9, 65, 5),
        (6, 300, 6),
        (11, 97, 7),
        (64, 130, 8),
        (3, 40, 8),
        (301, 98, 2),
        (130, 130, 3),
        (70, 200, 4),
        (5, 1500, 6),
        (9, 700, 8),
        (37, 700, 5),
        (21, 1300, 7),
        (2100, 130, 3),
        (13, 256, 8),
        (13, 255, 8),
        (13, 128, 6),
        (13, 127, 6),
    ],
)
@pytest.mark.parametrize("layout", ["NN", "TN", "TT"])
def test_short_k_over_wide_c(kernel, shape, dtype, layout):
    m, n, k = shape
    rng = np.random.default_rng(m * 31 + n * 7 + k)
    a = _rand(rng, (4, k, m), dtype).swapaxes(-1, -2) if layout[0] == "T" else _rand(rng, (4, m, k), dtype)
    b = _rand(rng, (4, n, k), dtype).swapaxes(-1, -2) if layout[1] == "T" else _rand(rng, (4, k, n), dtype)
    c = fastgemm.matmul(a, b)
    _check_stack(c, a, b)
    one, two = on_threads(lambda: fastgemm.matmul(a[1], b[1]))
    assert np.array_equal(c[1], one) and np.array_equal(one, two)
    for alpha, beta in ((1.0, 0.0), (-1.5, 0.5), (2.0, 0.0)):
        c0 = _rand(rng, (m, n), dtype)
        got = c0.copy()
        fastgemm.gemm(a[2], b[2], got, alpha=alpha, beta=beta)
        ref, bound = reference(a[2], b[2], c0, alpha, beta)
        assert_matches(got, ref, bound, f"alpha={alpha} beta={beta}")


# A part of a vector after whole ones (float32 20 = 16 + 4 on AVX-512, float64 12 = 8 + 4 and
# 20 = 16 + 4) ends a pass in half-width registers or in a masked whole vector, as the measured
# FMA rates choose (half_tails, forced each way here); a part alone (float32 6 or 7) always in
# half-width ones. Either way the same bits, single products, stacks and x.T @ y (which weighs
# the lanes swept each way) alike.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 20, 7), (12, 12, 12), (13, 36, 30), (20, 7, 20), (30, 20, 3), (7, 40, 100)])
@pytest.mark.parametrize("layout", ["NN", "TN"])
def test_half_tails_either_way(kernel, shape, dtype, layout):
    m, n, k = shape
    rng = np.random.default_rng(m * 31 + n * 7 + k)
    a = _rand(rng, (5, k, m), dtype).swapaxes(-1, -2) if layout[0] == "T" else _rand(rng, (5, m, k), dtype)
    b = _rand(rng, (5, k, n), dtype)
    got = {}
    try:
        for mode in (0, 1):
            _core.set_half_tails(mode)
            got[mode] = (fastgemm.matmul(a, b), fastgemm.matmul(a[2], b[2]))
    finally:
        _core.set_half_tails(-1)
    assert np.array_equal(got[0][0], got[1][0]) and np.array_equal(got[0][1], got[1][1])
    assert np.array_equal(got[0][0][2], got[0][1])
    _check_stack(got[1][0], a, b)


def test_half_tails_follow_the_measured_fma_rates():
    w = _core.fma_widths()
    wide = any(k.startswith("avx512") for k in fastgemm.available_kernels())
    assert (w["half"] > 0) == wide and (w["whole"] > 0) == wide
    assert w["half_tails"] == (wide and w["whole"] < 1.5 * w["half"])
    try:
        for mode in (1, 0):
            _core.set_half_tails(mode)
            assert _core.fma_widths()["half_tails"] == bool(mode)
    finally:
        _core.set_half_tails(-1)
    assert _core.fma_widths()["half_tails"] == w["half_tails"]
    assert ("GFLOP/s" in fastgemm.info()["small_tails"]) == wide


# An A stored by columns past half a MiB (x.T @ w with x 70 x 2100 float32, 70 x 1100 float64)
# has each k step prefetch A's line 16 rows further down: one to three vectors wide (its own
# panel instantiation), full panels, a stack of such items (not the next item's prefetch), and
# the last rows' prefetches past A's end. Same bits as without: the stack items equal the single
# products, on 1 and 2 threads.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [16, 20, 40, 64, 72])
def test_a_by_columns_prefetched_ahead(kernel, dtype, n):
    m = 2100 if np.dtype(dtype).itemsize == 4 else 1100
    rng = np.random.default_rng(n)
    a = _rand(rng, (2, 70, m), dtype).swapaxes(-1, -2)
    b = _rand(rng, (2, 70, n), dtype)
    c = fastgemm.matmul(a, b)
    one, two = on_threads(lambda: fastgemm.matmul(a[1], b[1]))
    assert np.array_equal(c[1], one) and np.array_equal(one, two)
    for i in (0, 1):
        ref, bound = reference(a[i], b[i], None, 1.0, 0.0)
        assert_matches(c[i], ref, bound, f"item {i}")


# A stack of such items past 8 MiB keeps the panels and their prefetch of the next item (on one
# thread; a thread's piece of it may sweep): the same bits as the single product's sweep.
@pytest.mark.parametrize("dtype", DTYPES)
def test_short_k_stack_past_the_sweep_bound(kernel, dtype):
    rng = np.random.default_rng(8)
    count = (9 << 20) // ((64 * 8 + 8 * 130 + 64 * 130) * np.dtype(dtype).itemsize)
    a, b = _rand(rng, (count, 64, 8), dtype), _rand(rng, (count, 8, 130), dtype)
    c, two = on_threads(lambda: fastgemm.matmul(a, b))
    assert np.array_equal(c, two)
    for i in (0, count // 2, count - 1):
        assert np.array_equal(c[i], fastgemm.matmul(a[i], b[i])), i
    ref, bound = reference(a[1], b[1], None, 1.0, 0.0)
    assert_matches(c[1], ref, bound, "item 1")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (3, 8, 16, 32))
@pytest.mark.parametrize(
    "layout",
    [
        "broadcast-a",
        "broadcast-b",
        "2-axes",
        "stepped",
        "reversed",
        "transposed-ops",
        "F-out",
        "F-out-broadcast",
        "axis-views",
    ],
)
def test_stack_layouts(kernel, n, dtype, layout):
    rng = np.random.default_rng(n)
    a, b = _rand(rng, (6, n, n), dtype), _rand(rng, (6, n, n), dtype)
    out = None
    if layout == "broadcast-a":
        a = a[0]
    elif layout == "broadcast-b":
        b = b[:1]
    elif layout == "2-axes":
        a, b = a.reshape(2, 3, n, n), _rand(rng, (3, n, n), dtype)
    elif layout == "stepped":
        a, b = _rand(rng, (12, n, n), dtype)[::2], _rand(rng, (12, n, n), dtype)[1::2]
    elif layout == "reversed":
        a, b = a[::-1], b[:, ::-1]
    elif layout == "transposed-ops":
        a, b = a.transpose(0, 2, 1), b.transpose(0, 2, 1)
    elif layout == "F-out":
        out = np.empty((6, n, n), dtype).transpose(0, 2, 1)
    elif layout == "F-out-broadcast":  # C^T = B^T A^T swaps which batch stride steps which operand
        a, out = np.asfortranarray(a[0]), np.empty((6, n, n), dtype).transpose(0, 2, 1)
    elif layout == "axis-views":  # the batch axis in the middle of the array
        a = _rand(rng, (n, 6, n), dtype).transpose(1, 0, 2)
    c = fastgemm.matmul(a, b, out=out)
    assert out is None or c is out
    _check_stack(c, a, b)


# Items with one row or one column of C, in each matrix-vector form (rows: the matrix's rows
# along the output; dots: along k) and as one dot; k around the vector widths and chunks.
VECTOR_ITEMS = [(17, 1, 33), (1, 17, 33), (1, 1, 33), (64, 1, 64), (1, 64, 64), (3, 1, 3), (1, 5, 1), (1, 1, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", VECTOR_ITEMS)
@pytest.mark.parametrize("layout", ["C", "transposed-a", "transposed-b", "stepped", "F-out", "broadcast-vector"])
@pytest.mark.parametrize("alpha, beta", [(1.0, 0.0), (-0.5, 1.0)])
def test_vector_item_stacks(kernel, shape, dtype, layout, alpha, beta):
    m, n, k = shape
    rng = np.random.default_rng(m * 31 + n * 7 + k)
    a, b = _rand(rng, (6, m, k), dtype), _rand(rng, (6, k, n), dtype)
    c0 = _rand(rng, (6, m, n), dtype)
    if layout == "transposed-a":
        a = np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
    elif layout == "transposed-b":
        b = np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)
    elif layout == "stepped":
        a, b = np.repeat(a, 2, axis=0)[::2], np.repeat(b, 3, axis=0)[::3]
    elif layout == "F-out":
        c0 = np.asfortranarray(c0.transpose(0, 2, 1)).transpose(0, 2, 1)
    elif layout == "broadcast-vector":
        b = np.broadcast_to(b[:1], b.shape) if n == 1 else b  # one vector for the whole stack
        a = np.broadcast_to(a[:1], a.shape) if m == 1 and n > 1 else a
    c = c0.copy(order="K")
    BATCHED[np.dtype(dtype)](a, b, c, alpha, beta)
    _check_stack(c, a, b, alpha, beta, c0)
    # An item is computed as the single product is, bitwise, on any thread count.
    one, two = on_threads(lambda: fastgemm.matmul(a, b))
    assert np.array_equal(one, two)
    assert np.array_equal(one[2], fastgemm.matmul(a[min(2, len(a) - 1)], b[min(2, len(b) - 1)]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_item_stacks_nan_inf(kernel, dtype):
    rng = np.random.default_rng(5)
    a, v = _rand(rng, (4, 9, 13), dtype), _rand(rng, (13,), dtype)
    a[1, 2, 3], a[2, 0, 0], v[5] = np.inf, np.nan, -np.inf
    with np.errstate(invalid="ignore"):
        got, want = fastgemm.matmul(a, v), np.matmul(a.astype(np.float64), v.astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[np.isinf(want)], want[np.isinf(want)].astype(dtype))


# Products whose B rows crowd L1 sets (512- or 1024-byte rows) with 9-30 rows go to the few-row
# kernels alone (B streamed once per group of rows) and to the small kernels as stack items, and
# 7 x 1024 x 100 to the few-row kernels both ways: each item equals its single product bit for
# bit, with alpha and beta too (both sum over k in order from zero and finish alike).
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(12, 128, 128), (20, 64, 64), (30, 128, 128), (9, 4096, 32), (7, 1024, 100)])
@pytest.mark.parametrize("alpha, beta", [(1.0, 0.0), (-1.5, 0.5), (1.0, -2.0)])
def test_stack_items_equal_few_row_products(kernel, shape, dtype, alpha, beta):
    m, n, k = shape
    rng = np.random.default_rng(m + n + k)
    a, b = _rand(rng, (3, m, k), dtype), _rand(rng, (3, k, n), dtype)
    _assert_items_equal_single_products(a, b, _rand(rng, (3, m, n), dtype), alpha, beta)


def _assert_items_equal_single_products(a, b, c0, alpha, beta):
    c = c0.copy()
    BATCHED[c.dtype](a, b, c, alpha, beta)
    _check_stack(c, a, b, alpha, beta, c0)
    for i in range(len(c)):
        one = c0[i].copy()
        fastgemm.gemm(a[i], b[i], one, alpha=alpha, beta=beta)
        assert np.array_equal(c[i], one), f"item {i}"


# Items of x.T @ w with C narrower than a vector (A by columns, B by rows) that gemm computes as
# C^T on the small kernels (try_narrow_small_transposed) run so item by item in a stack
# (small_item's narrow_columns), and the short ones it leaves in C's rows stay in place: each
# item equals its single product bit for bit, alpha and beta included (64 x 8 x 96 and 70 x 4 x
# 130: half-width rows of B by rows, kHalfRowsLongMinM / MinK; 200 x 3 x 8: short k from
# kNarrowShortKMinM rows).
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape",
    [
        (30, 12, 40),
        (24, 9, 16),
        (20, 11, 70),
        (22, 12, 23),
        (40, 5, 33),
        (9, 3, 64),
        (64, 8, 96),
        (70, 4, 130),
        (200, 3, 8),
    ],
)
@pytest.mark.parametrize("alpha, beta", [(1.0, 0.0), (-1.5, 0.5)])
def test_stack_items_with_narrow_c_equal_single_products(kernel, shape, dtype, alpha, beta):
    m, n, k = shape
    rng = np.random.default_rng(m * n + k)
    a = _rand(rng, (4, k, m), dtype).transpose(0, 2, 1)
    _assert_items_equal_single_products(a, _rand(rng, (4, k, n), dtype), _rand(rng, (4, m, n), dtype), alpha, beta)


# Items whose B is stored by columns (x.T @ W.T, x @ W.T with W's columns strided): gemm_batched
# copies each one's B row-major or computes C^T = B^T A^T a run at a time (small_item), or hands
# the item to gemm; either way each item equals its single product bit for bit, with the shapes
# where gemm computes C^T (m < k) or ends in dot products or few-row tails (35 x 9 x 55 float64,
# 50 x 17 x 50 float32: C^T for the whole item in a stack), items of more rows than k that a
# stack computes as C^T by transposed_pays' lane count (40 x 18 x 20, 39 x 18 x 32, 46 x 5 x
# 11), a few-row, narrow product gemm gives the dot kernels before its few-column form (3 x 2 x
# 200), and copies of B whose rows end in over half a vector past the first (13 and 14 float64
# columns, 29 float32; k = 37 leaves rows past the last whole transpose) that a stack pads to
# whole vectors, and x @ W.T of 5-11 columns that AVX-512 gives the dot kernels up to 64
# float32 rows from k = 80 and 32 float64 rows from k = 64 (ShortDots), on both sides of
# those bounds, q @ k.T items of 12 columns that go to them from 256 bytes of k, of 9 to 47
# float32 (23 float64) columns up to 24 rows from 384 bytes and 32 from 768 (25 x 20 x 96 is
# past the first bound), and of few rows against W past L1, whose dots take W's rows in
# strips outer (8 x 128 x 64, 16 x 201 x 64), and x.T @ W.T items of 2-6 columns, which a
# stack runs as C^T on the small kernels where gemm takes the few-row kernels (21 x 4 x 36, 60 x
# 4 x 20, 33 x 2 x 40).
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape",
    [
        (13, 13, 64),
        (20, 14, 37),
        (12, 29, 37),
        (7, 6, 10),
        (3, 24, 8),
        (16, 16, 16),
        (46, 28, 3),
        (5, 13, 51),
        (15, 78, 5),
        (40, 18, 20),
        (39, 18, 32),
        (46, 5, 11),
        (33, 2, 40),
        (35, 9, 55),
        (50, 17, 50),
        (3, 2, 200),
        (30, 9, 96),
        (16, 6, 120),
        (24, 10, 64),
        (64, 11, 80),
        (65, 11, 80),
        (32, 7, 64),
        (10, 12, 80),
        (12, 12, 32),
        (20, 20, 128),
        (13, 28, 155),
        (32, 20, 192),
        (25, 20, 96),
        (9, 40, 96),
        (8, 128, 64),
        (16, 201, 64),
        (21, 4, 36),
        (60, 4, 20),
    ],
)
@pytest.mark.parametrize("a_by_columns", [False, True])
@pytest.mark.parametrize("alpha, beta", [(1.0, 0.0), (-1.5, 0.5)])
def test_stack_items_with_b_by_columns_equal_single_products(kernel, shape, dtype, a_by_columns, alpha, beta):
    m, n, k = shape
    rng = np.random.default_rng(m * n + k)
    a = _rand(rng, (5, k, m), dtype).transpose(0, 2, 1) if a_by_columns else _rand(rng, (5, m, k), dtype)
    b = _rand(rng, (5, n, k), dtype).transpose(0, 2, 1)
    _assert_items_equal_single_products(a, b, _rand(rng, (5, m, n), dtype), alpha, beta)


# The same runs with the batch strides of each operand apart (one operand broadcast, two batch
# axes), the squares of every kernel's vector width and twice and four times it (the fixed
# transposes of B or C^T), shapes off them, and a narrow x.T @ W.T (few_columns_fit: gemm's
# C^T on the few-row kernels, item by item).
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape",
    [
        (4, 4, 4),
        (8, 8, 8),
        (16, 16, 16),
        (32, 32, 32),
        (64, 64, 64),
        (12, 10, 12),
        (20, 31, 40),
        (9, 7, 5),
        (30, 2, 40),
    ],
)
@pytest.mark.parametrize("a_by_columns", [False, True])
@pytest.mark.parametrize("batch", ["stack", "broadcast-a", "broadcast-b", "2-axes"])
def test_stack_runs_with_b_by_columns(kernel, shape, dtype, a_by_columns, batch):
    m, n, k = shape
    rng = np.random.default_rng(m + n * k)
    a = _rand(rng, (6, k, m), dtype).transpose(0, 2, 1) if a_by_columns else _rand(rng, (6, m, k), dtype)
    b = _rand(rng, (6, n, k), dtype).transpose(0, 2, 1)
    if batch == "broadcast-a":
        a = a[0]
    elif batch == "broadcast-b":
        b = b[:1]
    elif batch == "2-axes":
        a, b = a.reshape(2, 3, m, k), b[:3]
    c = fastgemm.matmul(a, b)
    _check_stack(c, a, b)
    a, b = np.broadcast_to(a, c.shape[:-2] + (m, k)), np.broadcast_to(b, c.shape[:-2] + (k, n))
    for idx in np.ndindex(*c.shape[:-2]):
        assert np.array_equal(c[idx], fastgemm.matmul(a[idx], b[idx])), f"item {idx}"


# 32^3 items past 8 MiB (400 of them): where a row is more than 4 vectors (AVX2 float64) the
# panels take them instead of the fixed kernel, with the same bits.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["NN", "TT"])
def test_stack_of_32_cubes_past_the_fixed_bound(kernel, dtype, layout):
    rng = np.random.default_rng(32)
    a, b = _rand(rng, (400, 32, 32), dtype), _rand(rng, (400, 32, 32), dtype)
    if layout == "TT":
        a, b = a.swapaxes(-1, -2), b.swapaxes(-1, -2)
    c = fastgemm.matmul(a, b)
    _check_stack(c, a, b)
    for i in (0, 257, 399):
        assert np.array_equal(c[i], fastgemm.matmul(a[i], b[i])), f"item {i}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (2, 3, 8, 16, 20))
@pytest.mark.parametrize("alpha, beta", [(1.0, 0.0), (-0.5, 1.0), (2.0, -3.0), (0.0, 2.0), (1.5, 0.0)])
def test_stack_alpha_beta(kernel, n, dtype, alpha, beta):
    rng = np.random.default_rng(1)
    a, b = _rand(rng, (5, n, n), dtype), _rand(rng, (5, n, n), dtype)
    c0 = _rand(rng, (5, n, n), dtype)
    if beta == 0.0:
        c0[...] = np.nan  # beta == 0 never reads C
    c = c0.copy()
    BATCHED[np.dtype(dtype)](a, b, c, alpha, beta)
    _check_stack(c, a, b, alpha, beta, c0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (3, 8, 16, 24))
def test_stack_nan_inf_propagate(kernel, n, dtype):
    rng = np.random.default_rng(2)
    a, b = _rand(rng, (4, n, n), dtype), _rand(rng, (4, n, n), dtype)
    a[1, 0, n - 1] = np.inf
    b[2, n - 1, 0] = np.nan
    a[3, n // 2, :] = -np.inf
    _check_stack(fastgemm.matmul(a, b), a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (3, 8, 13, 32))
def test_stack_same_bits_on_any_thread_count(n, dtype):
    rng = np.random.default_rng(3)
    a, b = _rand(rng, (2000, n, n), dtype), _rand(rng, (2000, n, n), dtype)
    one, two = on_threads(lambda: fastgemm.matmul(a, b))
    assert np.array_equal(one, two)


@pytest.mark.parametrize("n", (3, 8, 20))
def test_stack_with_inf_raises_no_spurious_flag(n):
    # Masked lanes of the general kernel compute inf * 0; NumPy's answer has no invalid operation.
    rng = np.random.default_rng(4)
    a, b = _rand(rng, (10, n, n), np.float32), _rand(rng, (10, n, n), np.float32)
    a[4, 1, 1] = np.inf
    with np.errstate(all="raise"):
        c = fastgemm.matmul(a, b)
    assert np.isinf(c[4, 1]).all()


def test_per_call_path_falls_back_for_the_unusual():
    # What the C path declines, the Python path handles (and its errors are the Python ones).
    a = np.ones((4, 4), np.float32)
    assert _core.sgemm_call(a, a, None, 1.0, 0.0, "N", False) is NotImplemented
    assert _core.sgemm_call(a, a.astype(np.float64), None, 1.0, 0.0, False, False) is NotImplemented
    assert _core.sgemm_call(a, a, a, 1.0, 0.0, False, False) is NotImplemented  # c overlaps a
    long = np.ones(_core.VECTOR_DOT_MAX_BYTES // 4 + 1, np.float32)
    assert _core.matmul_call(long, long, None) is NotImplemented  # a long dot: NumPy's BLAS dot
    assert _core.matmul_call(a[0], a[0], np.empty((), np.float32)) is NotImplemented  # dot into out
    assert _core.matmul_call(a, a, (np.empty((4, 4), np.float32),)) is NotImplemented
    assert _core.gemm_call(a.astype(np.int32), a, None, 1.0, 0.0, False, False) is NotImplemented
    np.testing.assert_array_equal(fastgemm.sgemm(a, a, trans_a="N"), a @ a)
    with pytest.raises(ValueError, match="beta"):
        fastgemm.sgemm(a, a, beta=1.0)
    c = a.copy()
    np.testing.assert_array_equal(fastgemm.sgemm(c, a, c), a @ a)  # c aliasing a is copied first


@pytest.mark.parametrize("dtype", DTYPES)
def test_per_call_path_results(dtype):
    rng = np.random.default_rng(5)
    a, b = _rand(rng, (9, 7), dtype), _rand(rng, (9, 5), dtype)
    c = _core.gemm_call(a, b, None, 2.0, 0.0, True, False)
    ref, bound = reference(a, b, None, 2.0, 0.0, trans_a=True)
    assert_matches(c, ref, bound, "gemm_call")
    c0 = _rand(rng, (7, 5), dtype)
    c = c0.copy()
    assert _core.gemm_call(a, b, c, 1, -1, True, False) is c
    ref, bound = reference(a, b, c0, 1.0, -1.0, trans_a=True)
    assert_matches(c, ref, bound, "gemm_call into c")
    out = np.empty((3, 9, 5), dtype)
    x = _rand(rng, (3, 9, 7), dtype)
    w = _rand(rng, (7, 5), dtype)
    assert _core.matmul_call(x, w, out) is out
    _check_stack(out, x, w)
