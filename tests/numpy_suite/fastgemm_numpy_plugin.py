"""pytest plugin: run NumPy's own tests with the switch on (matmul, dot, inner, tensordot,
multi_dot, einsum, vecdot, matvec, vecmat on fastgemm).

    python -m pytest -p fastgemm_numpy_plugin --pyargs numpy._core.tests.test_multiarray -k matmul

(with this directory on PYTHONPATH; tests/numpy_suite/run.py does exactly that). The switch is
turned on at session start and every float32/float64 product, however small, takes fastgemm's
path, so NumPy's small test matrices exercise it too. The summary line says how many products
fastgemm computed and how many it handed back to NumPy (unaligned or odd-strided data, other
dtypes and inputs for dot / inner).
"""

import fastgemm
from fastgemm import _core, _numpy_funcs

_state = {}


def _calls():
    """fastgemm / NumPy call counts over every part of the switch."""
    counts = [_core.ufunc_loop_calls(name) for name in _core.replaceable_ufuncs()]
    counts += list(_numpy_funcs.calls().values())
    return {who: sum(c[who] for c in counts) for who in ("fastgemm", "numpy")}


def pytest_sessionstart(session):
    _state["min_flops"] = _core.switch_min_flops()
    _core.set_switch_min_flops(0)
    _state["calls"] = _calls()
    fastgemm.patch_numpy()


def pytest_sessionfinish(session, exitstatus):
    still_on = fastgemm.is_patched()
    fastgemm.restore_numpy()
    _core.set_switch_min_flops(_state["min_flops"])
    now = _calls()
    _state["summary"] = (
        f"fastgemm numpy suite: switch {'on' if still_on else 'OFF'} at the end; products: "
        f"fastgemm {now['fastgemm'] - _state['calls']['fastgemm']}, "
        f"handed to NumPy {now['numpy'] - _state['calls']['numpy']}"
    )
    if not still_on and exitstatus == 0:
        session.exitstatus = 1  # a test that switched it off would prove nothing


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(_state.get("summary", "fastgemm numpy suite: no summary"))
