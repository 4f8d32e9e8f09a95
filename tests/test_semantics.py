"""BLAS corner semantics: alpha/beta special values, when C or A/B must not be read, and
NaN/Inf in A or B reaching exactly the entries of C they feed."""

import math

import numpy as np
import pytest

from gemm_check import DTYPES, GEMM, Placed, assert_matches, check_into_placed, random_matrix, reference, tiles

INF, NAN = math.inf, math.nan
SCALARS = [0.0, 1.0, -1.0, 0.5, INF, -INF, NAN]


def integer_matrix(rng, shape, dtype):
    """Small positive integers: products and sums are exact, so inf * value keeps its sign."""
    return rng.integers(1, 4, size=shape).astype(dtype)


def shapes_for(kernel, dtype):
    mr, nr, _, kc, _ = tiles(kernel, dtype)
    return [(1, 1, 1), (mr + 1, nr - 1, 5), (2 * mr - 1, nr + 3, kc + 2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta", SCALARS)
@pytest.mark.parametrize("alpha", SCALARS)
def test_alpha_beta(kernel, dtype, alpha, beta):
    rng = np.random.default_rng(10)
    for m, n, k in shapes_for(kernel, dtype):
        a = integer_matrix(rng, (m, k), dtype)
        b = integer_matrix(rng, (k, n), dtype)
        c0 = integer_matrix(rng, (m, n), dtype)
        c0[0, 0] = -c0[0, 0]  # so beta = inf meets both signs
        check_into_placed(a, b, c0, "F", alpha, beta, f"{kernel} alpha={alpha} beta={beta} {(m, n, k)}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c_layout", ["C", "F", "stepped"])
@pytest.mark.parametrize("fill", [NAN, INF])
def test_beta_zero_never_reads_c(kernel, dtype, c_layout, fill):
    rng = np.random.default_rng(11)
    for m, n, k in shapes_for(kernel, dtype) + [(4, 3, 0)]:
        a = random_matrix(rng, (m, k), dtype)
        b = random_matrix(rng, (k, n), dtype)
        for alpha in (1.0, 0.0):
            c = Placed(np.full((m, n), fill, dtype), c_layout)
            GEMM[np.dtype(dtype)](a, b, c.arr, alpha=alpha, beta=0.0)
            ref, bound = reference(a, b, None, alpha, 0.0)
            assert np.isfinite(c.arr).all(), f"{kernel} {fill} in C survived beta=0, alpha={alpha}"
            assert_matches(c.arr, ref, bound, f"{kernel} {(m, n, k)} alpha={alpha}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta", [0.0, 1.0, -0.5])
def test_alpha_zero_never_reads_a_b(kernel, dtype, beta):
    rng = np.random.default_rng(12)
    for m, n, k in shapes_for(kernel, dtype):
        a = np.full((m, k), NAN, dtype)
        b = np.full((k, n), INF, dtype)
        c0 = random_matrix(rng, (m, n), dtype)
        c = c0.copy()
        GEMM[np.dtype(dtype)](a, b, c, alpha=0.0, beta=beta)
        np.testing.assert_array_equal(c, (dtype(beta) * c0) if beta else np.zeros_like(c0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta", [0.0, 1.0, 2.0, NAN])
def test_k_zero_scales_c(kernel, dtype, beta):
    rng = np.random.default_rng(13)
    for m, n in [(1, 1), (7, 33), (40, 3)]:
        c0 = random_matrix(rng, (m, n), dtype)
        c = Placed(c0, "stepped")
        GEMM[np.dtype(dtype)](np.empty((m, 0), dtype), np.empty((0, n), dtype), c.arr, alpha=NAN, beta=beta)
        expected = dtype(beta) * c0 if beta != 0 else np.zeros_like(c0)
        np.testing.assert_array_equal(c.arr, expected)
        assert c.untouched_outside()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("alpha", [1.0, -1.0])
@pytest.mark.parametrize("trans", [(False, False), (True, True)])
def test_nan_inf_reach_exactly_their_entries(kernel, dtype, alpha, trans):
    """NaN in A row i -> C row i all NaN; +Inf in B column j -> C column j +-Inf (A > 0);
    where both meet, NaN. Everything else finite and right."""
    rng = np.random.default_rng(14)
    mr, nr, _, kc, _ = tiles(kernel, dtype)
    for m, n, k in [(1, 1, 1), (mr + 2, nr + 3, 7), (2 * mr + 1, 2 * nr - 1, kc + 3)]:
        a = rng.uniform(0.5, 1.5, size=(m, k)).astype(dtype)
        b = rng.uniform(0.5, 1.5, size=(k, n)).astype(dtype)
        nan_row, inf_col = m - 1, n // 2
        a[nan_row, rng.integers(k)] = NAN
        b[rng.integers(1, k) if k > 1 else 0, inf_col] = INF
        if m > 2:
            # With B > 0, row 0 is -Inf, and NaN where -Inf + Inf meet (k index differs).
            a[0, 0] = -INF
        c0 = random_matrix(rng, (m, n), dtype)
        c = c0.copy()
        a_in = a.T.copy() if trans[0] else a
        b_in = b.T.copy() if trans[1] else b
        GEMM[np.dtype(dtype)](a_in, b_in, c, alpha=alpha, beta=0.5, trans_a=trans[0], trans_b=trans[1])
        ref, bound = reference(a, b, c0, alpha, 0.5)
        expect_nan = np.zeros((m, n), bool)
        expect_nan[nan_row, :] = True
        if m > 2:
            expect_nan[0, inf_col] = True
        np.testing.assert_array_equal(np.isnan(c), expect_nan)
        np.testing.assert_array_equal(np.isnan(ref), expect_nan)  # the reference agrees
        assert_matches(c, ref, bound, f"{kernel} {(m, n, k)}")
