"""np.dot and np.inner on fastgemm, and the module attributes the switch swaps for them.

``dot`` and ``inner`` below have exactly NumPy's semantics: a call fastgemm computes itself is
a product of plain ndarrays of float32 / float64 (mixed: float64), neither 0-d, whose shapes
fit, and for ``dot`` an ``out`` that NumPy would accept (an ndarray, C-contiguous, of the
result's exact shape and dtype); every other call -- other dtypes, subclasses and objects with
``__array_function__``, Python scalars and lists, bad input -- goes to NumPy's own function,
which gives the result or raises its own exception. Products under the switch's threshold
(``_core.switch_min_flops()``, 64^3 multiply-adds) go to NumPy too, which is faster there.

The switch (fastgemm._patch) replaces ``dot`` and ``inner`` in every loaded ``numpy.*`` module
that holds NumPy's function, which is where NumPy's own Python code finds them: ``tensordot``
calls ``numpy._core.numeric``'s ``dot``, ``np.linalg.multi_dot`` calls ``numpy.linalg._linalg``'s
(and NumPy < 2.4's ``einsum(optimize=...)`` calls ``tensordot``), so those run on fastgemm too
with NumPy's own argument handling. ``uninstall()`` puts NumPy's objects back wherever ours are.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _core
from ._matmul import matmul

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_F64 = np.dtype(np.float64)

# The functions the switch replaces, by attribute name, and what was there before the first
# replacement (kept afterwards, so a call already inside ours while another thread restores
# still has somewhere to go).
_originals: dict[str, Callable[..., Any]] = {}
_calls: dict[str, dict[str, int]] = {"dot": {"fastgemm": 0, "numpy": 0}, "inner": {"fastgemm": 0, "numpy": 0}}


def _original(name: str) -> Callable[..., Any]:
    f = _originals.get(name)
    return f if f is not None else getattr(np, name)


def _dtype(a: Any, b: Any) -> np.dtype[Any] | None:
    """The result dtype when fastgemm computes a product of a and b, else None."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim == 0 or b.ndim == 0:
        return None
    da, db = a.dtype, b.dtype
    if da not in _FLOATS or db not in _FLOATS:  # non-native byte order compares unequal too
        return None
    return da if da == db else _F64


def _large_enough(n: int, k: int, m: int) -> bool:
    return n * k * m >= _core.switch_min_flops()


def _fp_checked(result: np.ndarray) -> bool:
    """True when NumPy would report no floating-point error for this result.

    NumPy's dot and inner report invalid / overflow / underflow as np.errstate says (a warning
    by default, "invalid value encountered in dot"). Invalid and overflow always leave a NaN or
    Inf in the result, so a finite result needs no check; a non-finite one under an errstate
    that is not "ignore" is recomputed by NumPy, which warns or raises as it does. Underflow
    leaves no trace, so an errstate that reports it sends every call to NumPy (see _fp_quiet).
    """
    if result.size == 0 or np.isfinite(result).all():
        return True
    err = np.geterr()
    return err["invalid"] == "ignore" and err["over"] == "ignore"


def _fp_quiet() -> bool:
    return np.geterr()["under"] == "ignore"  # NumPy's default


def dot(a: Any, b: Any, out: Any = None) -> Any:
    """numpy.dot, with float32 / float64 products on fastgemm (see the module docstring)."""
    dtype = _dtype(a, b)
    if dtype is not None and (out is None or type(out) is np.ndarray):
        k = a.shape[-1]
        if k == (b.shape[0] if b.ndim == 1 else b.shape[-2]):
            # dot(a, b)[i..., j..., m] = sum_k a[i..., k] * b[j..., k, m]
            shape = a.shape[:-1] + (b.shape[:-2] + b.shape[-1:] if b.ndim > 1 else ())
            if out is None or (
                out.shape == shape and out.dtype == dtype and out.flags.c_contiguous and out.flags.writeable
            ):
                p, m = math.prod(a.shape[:-1]), (b.shape[-1] if b.ndim > 1 else 1)
                # An out that shares memory with an operand goes to NumPy: a result that must
                # be recomputed by NumPy (_fp_checked) would find its operands overwritten.
                if (
                    _large_enough(p, k, m)
                    and _fp_quiet()
                    and (out is None or not (np.may_share_memory(out, a) or np.may_share_memory(out, b)))
                ):
                    result = _dot(a, b, out, dtype, shape, p, k, m)
                    if _fp_checked(result):
                        _calls["dot"]["fastgemm"] += 1
                        if out is not None:
                            return out
                        return result[()] if result.ndim == 0 else result
    _calls["dot"]["numpy"] += 1
    return _original("dot")(a, b, out)


def _dot(
    a: np.ndarray, b: np.ndarray, out: Any, dtype: np.dtype[Any], shape: tuple[int, ...], p: int, k: int, m: int
) -> np.ndarray:
    result: np.ndarray = np.empty(shape, dtype) if out is None else out
    a2 = a.reshape(p, k)
    if b.ndim == 1:
        matmul(a2, b, out=result.reshape(p))
    else:
        q = math.prod(b.shape[:-2])
        # The (P, Q, M) result seen as Q products of (P, M): a view, written in place.
        matmul(a2, b.reshape(q, k, m), out=result.reshape(p, q, m).transpose(1, 0, 2))
    return result


def inner(a: Any, b: Any) -> Any:
    """numpy.inner, with float32 / float64 products on fastgemm (see the module docstring)."""
    dtype = _dtype(a, b)
    if dtype is not None and a.shape[-1] == b.shape[-1]:
        k = a.shape[-1]
        p, q = math.prod(a.shape[:-1]), math.prod(b.shape[:-1])
        if _large_enough(p, k, q) and _fp_quiet():
            result = np.empty(a.shape[:-1] + b.shape[:-1], dtype)
            matmul(a.reshape(p, k), b.reshape(q, k).T, out=result.reshape(p, q))
            if _fp_checked(result):
                _calls["inner"]["fastgemm"] += 1
                return result[()] if result.ndim == 0 else result
    _calls["inner"]["numpy"] += 1
    return _original("inner")(a, b)


_OURS: dict[str, Callable[..., Any]] = {"dot": dot, "inner": inner}
for _name, _f in _OURS.items():
    _np_f = getattr(np, _name)
    _f.__doc__ = (_np_f.__doc__ or "") + f"\n\n(fastgemm: {_f.__doc__})"
    if hasattr(_np_f, "__signature__"):  # NumPy >= 2.3 gives its C functions one; keep it
        _f.__signature__ = _np_f.__signature__  # type: ignore[attr-defined]
del _name, _f, _np_f


def calls() -> dict[str, dict[str, int]]:
    """Calls of the replacements so far: per function, computed on fastgemm / handed to NumPy."""
    return {name: dict(c) for name, c in _calls.items()}


def _numpy_modules() -> list[Any]:
    return [m for name, m in list(sys.modules.items()) if (name == "numpy" or name.startswith("numpy.")) and m]


def install() -> None:
    """Put ``dot`` and ``inner`` in place of NumPy's wherever a loaded numpy module holds them."""
    for name, ours in _OURS.items():
        current = getattr(np, name)
        if current is not ours:
            _originals[name] = current
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
