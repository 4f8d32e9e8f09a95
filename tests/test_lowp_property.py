"""Random shapes, layouts, transposes, scalars and stacks for bfloat16 / float16 against the
float64 product of the exact inputs (bound: see tests/test_lowp.py)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fastgemm
from gemm_check import ELEMENT_LAYOUTS, LAYOUTS, Placed
from test_lowp import BF16, F16, check

dims = st.integers(0, 40)
scalars = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5]), st.floats(-4, 4, allow_nan=False, allow_infinity=False))


@pytest.mark.parametrize("dt", [F16, BF16], ids=["f16", "bf16"])
def test_gemm_matches_reference(kernel, dt):
    @given(
        m=dims,
        n=dims,
        k=dims,
        trans=st.tuples(st.booleans(), st.booleans()),
        lays=st.tuples(st.sampled_from(ELEMENT_LAYOUTS), st.sampled_from(ELEMENT_LAYOUTS)),
        c_layout=st.sampled_from(sorted(LAYOUTS)),
        alpha=scalars,
        beta=scalars,
        seed=st.integers(0, 2**32 - 1),
    )
    def run(m, n, k, trans, lays, c_layout, alpha, beta, seed):
        rng = np.random.default_rng(seed)
        a0 = rng.uniform(-1, 1, size=(k, m) if trans[0] else (m, k)).astype(np.float32).astype(dt)
        b0 = rng.uniform(-1, 1, size=(n, k) if trans[1] else (k, n)).astype(np.float32).astype(dt)
        c0 = rng.uniform(-1, 1, size=(m, n)).astype(np.float32)
        a, b, c = Placed(a0, lays[0]), Placed(b0, lays[1]), Placed(c0, c_layout)
        out = fastgemm.gemm(a.arr, b.arr, c.arr, alpha=alpha, beta=beta, trans_a=trans[0], trans_b=trans[1])
        assert out is c.arr
        opa = a0.T if trans[0] else a0
        opb = b0.T if trans[1] else b0
        alpha32, beta32 = float(np.float32(alpha)), float(np.float32(beta))
        if alpha32 == 0.0 or k == 0:
            want = np.zeros_like(c0) if beta32 == 0.0 else np.float32(beta) * c0
            assert np.array_equal(c.arr, want)
        else:
            check(c.arr, opa, opb, alpha=alpha32, beta=beta32, c0=c0)
        assert c.untouched_outside() and a.untouched() and b.untouched()

    run()


@pytest.mark.parametrize("dt", [F16, BF16], ids=["f16", "bf16"])
def test_matmul_stacks_match_reference(dt):
    @given(
        batch_a=st.lists(st.integers(1, 3), max_size=2),
        batch_b=st.lists(st.integers(1, 3), max_size=2),
        n=st.integers(1, 20),
        k=st.integers(1, 20),
        m=st.integers(1, 20),
        vec=st.sampled_from(["", "a", "b"]),
        seed=st.integers(0, 2**32 - 1),
    )
    def run(batch_a, batch_b, n, k, m, vec, seed):
        rng = np.random.default_rng(seed)
        sa = (k,) if vec == "a" else (*batch_a, n, k)
        sb = (k,) if vec == "b" else (*batch_b, k, m)
        a = rng.uniform(-1, 1, size=sa).astype(np.float32).astype(dt)
        b = rng.uniform(-1, 1, size=sb).astype(np.float32).astype(dt)
        try:
            want = np.matmul(a.astype(np.float32), b.astype(np.float32))
        except ValueError:
            with pytest.raises(ValueError):
                fastgemm.matmul(a, b)
            return
        got = np.asarray(fastgemm.matmul(a, b))
        assert got.shape == want.shape
        check(got, a, b, out_dtype=np.float16 if dt == F16 else np.float32)

    run()
