"""NumPy's own tests of matmul, dot, inner, tensordot, einsum, multi_dot, vecdot, matvec and vecmat
pass with the switch on (tests/numpy_suite/run.py)."""

import importlib.util
import os
import re
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("fastgemm_numpy_suite_run", os.path.join(HERE, "numpy_suite", "run.py"))
suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suite)


def _counts(output):
    counts = {}
    for n, what in re.findall(r"(\d+) (passed|failed|skipped|error|errors|xfailed|xpassed|deselected)", output):
        counts[what.rstrip("s") if what == "errors" else what] = int(n)
    return counts


@pytest.mark.parametrize(
    "module,expr",
    suite.SELECTION,
    ids=[f"{m.rsplit('.', 1)[-1]}-{e.split()[0].strip('(')}" for m, e in suite.SELECTION],
)
def test_numpys_tests_pass_with_the_switch_on(module, expr):
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # NumPy 1.x has no numpy._core
        found = False
    if not found:
        pytest.skip(f"this NumPy has no {module}")
    proc = subprocess.run(
        suite.command(module, expr),
        env=suite.env(),
        cwd=os.path.join(HERE, "numpy_suite"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    counts = _counts(out.strip().splitlines()[-1] if out.strip() else "")
    used = re.search(r"products: fastgemm (\d+), handed to NumPy (\d+)", out)
    print(f"{module} -k {expr!r}: {counts}; {used.group(0) if used else 'no fastgemm summary'}")
    assert proc.returncode == 0, out[-4000:]
    assert counts.get("passed", 0) > 0 and counts.get("failed", 0) == 0 and counts.get("error", 0) == 0, out[-4000:]
    assert "switch on at the end" in out
    assert used and int(used.group(1)) > 0, "NumPy's tests never reached fastgemm"
