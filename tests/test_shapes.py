"""Edge shapes around every blocking boundary, for each kernel and both precisions, with C
placed inside a sentinel-filled buffer so any write past its edges is caught."""

import numpy as np
import pytest

import fastgemm as fg
from gemm_check import DTYPES, GEMM, assert_matches, check_into_placed, random_matrix, reference, tiles


def edge_shapes(kernel, dtype):
    mr, nr, mc, kc, nc = tiles(kernel, dtype)
    shapes = {
        (0, 0, 0),
        (0, 5, 3),
        (5, 0, 3),
        (5, 3, 0),
        (0, 0, 4),
        (1, 1, 1),
        (1, 1, 9),
        (1, 7, 1),
        (7, 1, 1),
        (2, 3, 1),
        # primes, so no tile or block divides anything
        (13, 17, 19),
        (31, 37, 41),
        (97, 101, 103),
        # tall-skinny, short-wide, long inner dimension
        (1009, 1, 3),
        (2003, 2, 5),
        (1, 3001, 7),
        (3, 1013, 2),
        (3, 2, 2999),
    }
    for d in (-1, 0, 1):
        shapes |= {
            (mr + d, nr + 1, 7),
            (2 * mr + d, 2 * nr - 1, 3),
            (mr + 1, nr + d, 5),
            (mr - 1, 2 * nr + d, 4),
            (mr + 1, nr - 1, kc + d),
            (3, 5, 2 * kc + d),
            (mc + d, 3, 4),
            (mc + d, nr + 1, kc + 1),
            (2, nc + d, 3),
        }
    # Widths whose last columns fit half a vector (AVX-512: 256-bit registers after whole
    # vectors; kernels/small.hpp, half_tail), after 1-3 whole vectors or a whole panel.
    shapes |= {(11, n, 13) for n in (4, 20, 28, 52, 56)}
    # The small kernels take a B past 256 KiB whose rows are at most 512 bytes in k chunks of
    # 16 KiB (kernel.hpp, small_chunks_b): a last chunk of one step, or one step short; rows
    # past one block of carried sums (as many as a chunk has steps).
    size = np.dtype(dtype).itemsize
    for n in (5, 20, 256 // size, 512 // size):
        depth, past = 16384 // (n * size), 262144 // (n * size)
        shapes |= {(13, n, past + 1), (depth + 5, n, past + depth - 1)}
    # B past two L1s whose 256-byte column panel over all of k fits half of L1 (k <= 64 with a
    # 32 KiB L1d) goes to the small kernels for up to 128 rows (gemm.cpp, b_panel_in_l1): on
    # either side of both bounds.
    shapes |= {(13, 2003, 17), (128, 1500, 33), (129, 1500, 33), (40, 1100, 64), (40, 1100, 65)}
    return sorted(s for s in shapes if min(s) >= 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta", [0.0, -0.5])
def test_edge_shapes(kernel, dtype, beta):
    rng = np.random.default_rng(1)
    for m, n, k in edge_shapes(kernel, dtype):
        a = random_matrix(rng, (m, k), dtype)
        b = random_matrix(rng, (k, n), dtype)
        c0 = random_matrix(rng, (m, n), dtype)
        check_into_placed(a, b, c0, "C", 0.75, beta, f"{kernel} {(m, n, k)}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_new_c_is_c_ordered_and_right(kernel, dtype):
    rng = np.random.default_rng(2)
    mr, nr, _, kc, _ = tiles(kernel, dtype)
    for m, n, k in [(0, 3, 2), (3, 0, 2), (4, 3, 0), (mr + 1, nr - 1, kc + 1), (29, 23, 31)]:
        a = random_matrix(rng, (m, k), dtype)
        b = random_matrix(rng, (k, n), dtype)
        out = GEMM[np.dtype(dtype)](a, b)
        assert out.dtype == dtype and out.shape == (m, n) and out.flags.c_contiguous
        ref, bound = reference(a, b, None, 1.0, 0.0)
        assert_matches(out, ref, bound, f"{kernel} {(m, n, k)}")


@pytest.mark.parametrize("transposed", [False, True])
def test_small_kernels_prefetch_a_from_memory(kernel, transposed):
    """A float64 A by rows past 32 MiB with a narrow C: the small kernels prefetch its rows ahead
    (kernels/small.hpp, kAheadRows), over all of k or in k chunks; as X.T @ Y.T, the same
    kernels on C^T. Small integers, so every sum is exact and the result must equal NumPy's."""
    rng = np.random.default_rng(7)
    m, n, k = 2100, 20, 2000  # A: 33.6 MB
    a = rng.integers(-3, 4, (m, k)).astype(np.float64)
    b = rng.integers(-3, 4, (k, n)).astype(np.float64)
    expected = a @ b
    if transposed:  # b.T @ a.T: both operands stored by columns, C = (a @ b).T computed as C^T
        np.testing.assert_array_equal(fg.matmul(b.T, a.T), expected.T)
    else:
        np.testing.assert_array_equal(fg.matmul(a, b), expected)
