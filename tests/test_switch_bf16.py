"""The switch's bfloat16 part: np.matmul / `@` on two ml_dtypes.bfloat16 operands.

NumPy caches how it resolved a call for the whole process, so each state is checked in a fresh
interpreter (tests/bf16_switch_cases.py runs the same calls there): NumPy alone, fastgemm
imported with the switch never on, on (patch_numpy), and off again (restore_numpy). Off, every
result, dtype and error must be NumPy's own, bit for bit; on, the same dtypes and errors and
values within the bound of tests/test_lowp.py against the float64 product of the exact inputs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fastgemm
from fastgemm import _core

ml_dtypes = pytest.importorskip("ml_dtypes")
import bf16_switch_cases as cases  # noqa: E402  (needs ml_dtypes)

SCRIPT = cases.__file__
U32 = 2.0**-24
K_MAX = 260  # the largest k of the cases
# On, NumPy's error for casting='no' / 'equiv' is a TypeError with another message (the loop
# stands for NumPy's safe cast of the inputs): docs/DESIGN.md, "Low-precision products".
MESSAGE_DIFFERS_ON = {"casting_no"}
# Calls whose operands are not two bfloat16 arrays: NumPy's resolution, whose float32 loop is
# fastgemm's under the switch (so the bits may differ from NumPy's).
NOT_BF16_PAIRS = {"mixed_bf16_f32", "mixed_f32_bf16", "mixed_bf16_f16", "dtype_f64"}


def run(mode, tmp_path, kernel=None):
    path = tmp_path / f"{mode.replace(',', '_')}_{kernel}.npz"
    env = dict(os.environ)
    env.pop("FASTGEMM_SWITCH", None)
    if kernel:
        env["FASTGEMM_KERNEL"] = kernel
    r = subprocess.run(
        [sys.executable, SCRIPT, mode, str(path)], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert r.returncode == 0, r.stderr
    with np.load(path) as f:
        return dict(f)


@pytest.fixture(scope="module")
def numpys(tmp_path_factory):
    """Every case's result or error with NumPy alone (fastgemm never imported)."""
    return run("numpy", tmp_path_factory.mktemp("numpy"))


def names():
    return list(cases.cases())


def same(x, y):
    return x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")


def assert_numpys(got, state, numpys):
    for name in names():
        for suffix in ("", "@dtype"):
            key = name + suffix
            if "numpy/" + key in numpys:
                assert same(got[f"{state}/{key}"], numpys["numpy/" + key]), f"{state}: {key}"


def assert_within_bound(got, state, numpys):
    """Same dtypes and errors as NumPy; values within the bound of the exact product."""
    f64, mag = cases.cases("f64"), cases.cases("abs")
    for name in names():
        mine, theirs = got[f"{state}/{name}"], numpys[f"numpy/{name}"]
        if theirs.dtype.kind == "U":  # an error
            if name in MESSAGE_DIFFERS_ON:
                assert same(mine, theirs) or str(mine).startswith("TypeError: The ufunc implementation"), name
            else:
                assert same(mine, theirs), name
            continue
        dtype = str(numpys[f"numpy/{name}@dtype"])
        assert str(got[f"{state}/{name}@dtype"]) == dtype and mine.shape == theirs.shape, name
        if dtype == "bfloat16":
            g, u_out = mine.astype(np.uint32).__lshift__(16).view(np.float32).astype(np.float64), 2.0**-8
        else:
            g, u_out = mine.astype(np.float64), 0.0
        with np.errstate(invalid="ignore"):
            ref, m = np.asarray(f64[name]()), np.asarray(mag[name]())
            bound = 2 * (K_MAX + 2) * U32 * m + u_out * abs(ref)
            assert np.array_equal(np.isnan(g), np.isnan(ref)), name
            fin = np.isfinite(ref)
            assert np.array_equal(g[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)]), name
            assert np.all(abs(g[fin] - ref[fin]) <= bound[fin]), name


def test_on_runs_fastgemm_and_off_gives_numpys_bits(numpys, tmp_path, kernel):
    got = run("on,off", tmp_path, kernel)
    assert got["registered"]
    ours_on, numpys_on = got["on/calls"]
    # five calls fail before any loop runs, two empty ones run none
    pairs = len(names()) - len(NOT_BF16_PAIRS) - 5 - 2
    assert ours_on >= pairs and numpys_on == 0
    assert_within_bound(got, "on", numpys)
    ours_off, numpys_off = got["off/calls"] - got["on/calls"]
    assert ours_off == 0 and numpys_off >= pairs  # off, the registered loop hands over to NumPy's
    assert_numpys(got, "off", numpys)


def test_switch_never_on_registers_nothing(numpys, tmp_path):
    got = run("before", tmp_path)
    assert not got["registered"]
    assert list(got["before/calls"]) == [0, 0]
    assert_numpys(got, "before", numpys)


def test_products_numpy_resolved_before_the_first_patch_keep_its_cast(numpys, tmp_path):
    """NumPy caches its resolution (cast to float32) of calls made before the loop exists: those
    keep it for the process, now on fastgemm's float32 loop. Results stay right."""
    got = run("before,on", tmp_path)
    assert got["registered"]
    assert list(got["on/calls"]) == [0, 0]
    assert_within_bound(got, "on", numpys)


def subprocess_ok(code):
    env = dict(os.environ)
    env.pop("FASTGEMM_SWITCH", None)
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_registration_waits_for_the_import_of_ml_dtypes():
    """Switch on before ml_dtypes is loaded (the persistent switch's case): nothing is imported,
    and the loop is registered as soon as ml_dtypes is, before any bfloat16 product."""
    subprocess_ok(
        """
        import sys
        import numpy as np
        import fastgemm
        from fastgemm import _core
        fastgemm.patch_numpy()
        assert "ml_dtypes" not in sys.modules and not _core.bf16_matmul_loop_registered()
        import ml_dtypes
        assert _core.bf16_matmul_loop_registered()
        a = np.ones((4, 5), ml_dtypes.bfloat16)
        assert (a @ a.T).dtype == np.float32 and _core.bf16_matmul_loop_calls()["fastgemm"] == 1
        fastgemm.restore_numpy()
        assert (a @ a.T).dtype == np.float32 and _core.bf16_matmul_loop_calls()["numpy"] == 1
        print("ok")
        """
    )
    # switched off by the time ml_dtypes is imported: registered at the next patch only
    subprocess_ok(
        """
        import numpy as np
        import fastgemm
        from fastgemm import _core
        with fastgemm.patched():
            pass
        import ml_dtypes
        assert not _core.bf16_matmul_loop_registered()
        with fastgemm.patched():
            assert _core.bf16_matmul_loop_registered()
            a = np.ones((4, 5), ml_dtypes.bfloat16)
            assert np.array_equal(a @ a.T, np.full((4, 4), 5, np.float32))
        assert _core.bf16_matmul_loop_calls()["fastgemm"] == 1
        print("ok")
        """
    )


def test_switch_without_ml_dtypes():
    """ml_dtypes not importable: the switch works, registers nothing, imports nothing."""
    subprocess_ok(
        """
        import sys
        sys.modules["ml_dtypes"] = None  # import ml_dtypes now raises ImportError
        import numpy as np
        import fastgemm
        from fastgemm import _core
        with fastgemm.patched():
            assert fastgemm.is_patched()
            a = np.ones((30, 30), np.float16)
            assert (a @ a).dtype == np.float16
            try:
                import ml_dtypes
            except ImportError:
                pass
        assert not fastgemm.is_patched() and not _core.bf16_matmul_loop_registered()
        assert sys.modules["ml_dtypes"] is None
        print("ok")
        """
    )


def test_in_process_products_are_right_whichever_resolution_numpy_cached():
    """In this process NumPy may have resolved bfloat16 matmul before (other tests): the result
    is right and float32 either way, and is_patched follows the switch."""
    a = np.random.default_rng(5).uniform(-1, 1, (10, 12)).astype(ml_dtypes.bfloat16)
    want = a.astype(np.float64) @ a.T.astype(np.float64)
    with fastgemm.patched():
        assert fastgemm.is_patched() and _core.bf16_matmul_loop_on()
        got = np.matmul(a, a.T)
    assert not _core.bf16_matmul_loop_on()
    assert got.dtype == np.float32
    assert np.all(abs(got - want) <= 2 * 14 * U32 * (abs(a).astype(np.float64) @ abs(a.T).astype(np.float64)))
