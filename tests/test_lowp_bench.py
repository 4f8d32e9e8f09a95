"""The low-precision parts of `python -m fastgemm bench` and `info`."""

from __future__ import annotations

import numpy as np
import pytest

import fastgemm
from fastgemm import _cli
from fastgemm.bench import measure as bm, suite

pytest.importorskip("ml_dtypes")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("m", [1, 5, 200])
def test_guard_on_2_byte_cases(dtype, m):
    rng = np.random.default_rng(3)
    case = suite.Case("custom", m, 33, 70, dtype)
    a, b = suite.operands(case, rng)
    assert a.dtype == suite.np_dtype(dtype) and a.dtype.itemsize == 2
    c = bm.FastGemm(1).prepare(case, a, b)()
    assert c.dtype == np.matmul(a[:1], b).dtype
    assert bm.check_result(case, a, b, c, rng)["ok"]
    bad = c.astype(np.float32)
    bad[0, 3] += 0.05 * (1 + abs(bad[0, 3]))
    assert not bm.check_result(case, a, b, bad, rng)["ok"]


def test_dtype_lists_parse():
    assert suite.parse_shapes("8", "bfloat16,float16")[0].dtype == "bfloat16"
    assert [c.dtype for c in suite.parse_shapes("8", "bfloat16,float16")] == ["bfloat16", "float16"]
    assert {c.dtype for c in suite.full_suite("float16")} == {"float16"}
    # fastgemm.pack takes no 2-byte dtype: the packed group is left out for them.
    assert not any(c.group == "packed" for c in suite.full_suite("bfloat16,float16"))


def test_numpy_float16_loop_is_not_timed_on_big_products():
    case = suite.Case("square", 1024, 1024, 1024, "float16")
    with pytest.raises(bm.Unsupported, match="scalar loop"):
        bm.NumPy(1).prepare(case, None, None)


def test_bench_runs_2_byte_cases(monkeypatch, capsys):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    code = _cli.main(
        ["bench", "--shapes", "16,1x64x32", "--dtype", "bfloat16,float16", "--threads", "1", "--repeats", "1"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "bfloat16" in out and "float16" in out


def test_info_lists_the_low_precision_path(capsys):
    assert "float32 while packing" in fastgemm.info()["low_precision"]
    assert _cli.main(["info"]) == 0
    assert "bf16/fp16" in capsys.readouterr().out


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_torch_column_on_2_byte_cases(dtype):
    """torch (when installed) gets the same 2-byte values: bfloat16 through a uint16 view read
    as torch.bfloat16, float16 directly; its result is of the input type, rounded once."""
    torch = pytest.importorskip("torch")
    case = suite.Case("custom", 20, 24, 30, dtype)
    a, b = suite.operands(case, np.random.default_rng(5))
    got = bm.Torch(1).prepare(case, a, b)()
    assert got.dtype == (torch.bfloat16 if dtype == "bfloat16" else torch.float16)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    u = 2.0**-8 if dtype == "bfloat16" else 2.0**-11
    mag = np.matmul(abs(a.astype(np.float64)), abs(b.astype(np.float64)))
    assert np.all(abs(got.float().numpy() - want) <= u * abs(want) + 2 * 32 * 2.0**-24 * mag + 2.0**-24)


def test_torch_slow_2_byte_loop_is_not_timed_on_big_products():
    pytest.importorskip("torch")
    if "avx512_bf16" in fastgemm._core.cpu_features():
        pytest.skip("torch has a fast bfloat16 path on this CPU")
    case = suite.Case("square", 1024, 1024, 1024, "bfloat16")
    with pytest.raises(bm.Unsupported, match="slow loop"):
        bm.Torch(1).prepare(case, None, None)
