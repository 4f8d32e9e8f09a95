"""np.dot and np.inner on fastgemm, and the module attributes the switch swaps for them.

``dot`` and ``inner`` are C functions (csrc/bindings/numpy_dot.cpp) with exactly NumPy's
semantics: a call they compute themselves is a product of plain native ndarrays of float32 /
float64 (mixed: float64, as NumPy converts; unaligned ones copied first, as NumPy does),
neither 0-d, whose shapes fit, and for ``dot`` an ``out`` NumPy would write into directly (an
ndarray of the result's exact shape and dtype, C-contiguous, writeable, not overlapping an
operand); every other call -- other dtypes, subclasses and objects with ``__array_function__``,
Python scalars and lists, bad input -- goes to NumPy's own function with the same arguments,
which gives the result or raises its own exception. Floating-point exceptions are NumPy's too:
a call whose product raised a flag (or, run on several threads, left a NaN or Inf) is
recomputed by NumPy, which warns or raises as np.errstate says.

The switch (fastgemm._patch) replaces ``dot`` and ``inner`` in every loaded ``numpy.*`` module
that holds NumPy's function, which is where NumPy's own Python code finds them: ``tensordot``
calls ``numpy._core.numeric``'s ``dot``, ``np.linalg.multi_dot`` calls ``numpy.linalg._linalg``'s
(and NumPy < 2.4's ``einsum(optimize=...)`` calls ``tensordot``), so those run on fastgemm too
with NumPy's own argument handling. ``uninstall()`` puts NumPy's objects back wherever ours are.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _core

dot = _core.numpy_dot
inner = _core.numpy_inner

# The functions the switch replaces, by attribute name, and what was there before the first
# replacement (kept afterwards, so a call already inside ours while another thread restores
# still has somewhere to go). The C functions hold the same objects.
_OURS: dict[str, Callable[..., Any]] = {"dot": dot, "inner": inner}
_originals: dict[str, Callable[..., Any]] = {}


def _record_originals() -> None:
    """Note what numpy holds now unless it is ours, and hand it to the C functions."""
    for name, ours in _OURS.items():
        current = getattr(np, name)
        if current is not ours:
            _originals[name] = current
    if _originals.keys() == _OURS.keys():
        _core.set_numpy_originals(_originals["dot"], _originals["inner"])


_record_originals()

for _name, _f in _OURS.items():
    _np_f = _originals[_name]
    # What help() and inspect read: NumPy's name, docs and signature. Pickled by name, as
    # fastgemm._numpy_funcs.dot / .inner (what the Python functions before them pickled as).
    _f.__name__ = _f.__qualname__ = _name
    _f.__module__ = __name__
    _f.__doc__ = (_np_f.__doc__ or "") + (
        "\n\n(fastgemm: float32 / float64 ndarrays are multiplied by fastgemm with NumPy's semantics;"
        " every other call is NumPy's own.)"
    )
    if hasattr(_np_f, "__signature__"):  # NumPy >= 2.3 gives its C functions one; keep it
        _f.__signature__ = _np_f.__signature__  # type: ignore[attr-defined]
del _name, _f, _np_f


def original(name: str) -> Callable[..., Any]:
    """NumPy's own ``dot`` or ``inner``, whether or not the switch is on."""
    return _originals[name]


def calls() -> dict[str, dict[str, int]]:
    """Calls of the replacements so far: per function, computed on fastgemm / handed to NumPy."""
    return {name: {"fastgemm": c["fastgemm"], "numpy": c["numpy"]} for name, c in _core.numpy_dot_calls().items()}


def _numpy_modules() -> list[Any]:
    return [m for name, m in list(sys.modules.items()) if (name == "numpy" or name.startswith("numpy.")) and m]


def install() -> None:
    """Put ``dot`` and ``inner`` in place of NumPy's wherever a loaded numpy module holds them."""
    _record_originals()
    for name, ours in _OURS.items():
        original = _originals[name]
        for module in _numpy_modules():
            if module.__dict__.get(name) is original:
                setattr(module, name, ours)


def uninstall() -> None:
    """Put NumPy's objects back wherever ours are (modules loaded since included)."""
    for name, ours in _OURS.items():
        if name not in _originals:
            continue
        for module in _numpy_modules():
            if module.__dict__.get(name) is ours:
                setattr(module, name, _originals[name])


def installed() -> bool:
    return all(getattr(np, name) is ours for name, ours in _OURS.items())
