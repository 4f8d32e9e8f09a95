"""Random shapes, layouts, transposes and scalars against the wide reference."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from gemm_check import DTYPES, ELEMENT_LAYOUTS, GEMM, LAYOUTS, Placed, assert_matches, reference

dims = st.integers(0, 40)
scalars = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5]), st.floats(-4, 4, allow_nan=False, allow_infinity=False))


@st.composite
def problems(draw, dtype):
    m, n, k = draw(dims), draw(dims), draw(dims)
    trans_a, trans_b = draw(st.booleans()), draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, size=(k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, size=(n, k) if trans_b else (k, n)).astype(dtype)
    c0 = rng.uniform(-1, 1, size=(m, n)).astype(dtype)
    return dict(
        a=a,
        b=b,
        c0=c0,
        trans_a=trans_a,
        trans_b=trans_b,
        a_layout=draw(st.sampled_from(ELEMENT_LAYOUTS)),
        b_layout=draw(st.sampled_from(ELEMENT_LAYOUTS)),
        c_layout=draw(st.sampled_from(sorted(LAYOUTS))),
        alpha=draw(scalars),
        beta=draw(scalars),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_reference(kernel, dtype):
    @given(problems(dtype))
    def check(p):
        a, b, c = Placed(p["a"], p["a_layout"]), Placed(p["b"], p["b_layout"]), Placed(p["c0"], p["c_layout"])
        out = GEMM[np.dtype(dtype)](
            a.arr, b.arr, c.arr, alpha=p["alpha"], beta=p["beta"], trans_a=p["trans_a"], trans_b=p["trans_b"]
        )
        assert out is c.arr
        ref, bound = reference(p["a"], p["b"], p["c0"], p["alpha"], p["beta"], p["trans_a"], p["trans_b"])
        assert_matches(c.arr, ref, bound, kernel)
        assert c.untouched_outside() and a.untouched() and b.untouched()

    check()
