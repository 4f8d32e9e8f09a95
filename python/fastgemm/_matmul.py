"""fastgemm.matmul: numpy.matmul's semantics, float32 / float64 products on fastgemm.

Everything fastgemm does not compute itself -- other dtypes, array subclasses and objects
that override ufuncs, and every input NumPy rejects -- is handed to numpy.matmul, so the
answer (or the exception) is NumPy's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core, _lowp, _packed
from ._layout import may_self_overlap, native_ok, run_stack

_BATCHED: dict[np.dtype[Any], Callable[..., None]] = {
    np.dtype(np.float32): _core.sgemm_batched,
    np.dtype(np.float64): _core.dgemm_batched,
}

# np.matmul's keywords fastgemm honours itself when they leave the result unchanged; any
# other keyword (axes, axis, keepdims, signature, or one np.matmul does not know) goes to
# np.matmul with the call, which applies it or raises its own error.
_OWN_KEYWORDS = frozenset(("dtype", "casting", "order", "subok"))
_CASTINGS = frozenset(("no", "equiv", "safe", "same_kind", "unsafe"))

# Input kinds whose promotion with float32/float64 NumPy's matmul resolves exactly as
# np.result_type does (bool, signed and unsigned integers, floats).
_CASTABLE_KINDS = frozenset("biuf")

# Plain Python containers and numbers NumPy converts with asarray and no override hook.
_PLAIN_TYPES = (np.ndarray, list, tuple, int, float, bool, complex)


def _operand(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    if x.dtype != dtype:  # also turns a non-native byte order into native
        x = x.astype(dtype)
    elif not native_ok(x):
        x = x.copy()
    return x


_Plan = tuple[np.ndarray, np.ndarray, "np.dtype[Any]", tuple[int, ...], tuple[int, int, int], tuple[int, ...]]


def _plan(a: Any, b: Any, out: Any) -> _Plan | None:
    """(a, b, dtype, result shape) when fastgemm computes this product, else None."""
    if type(a) not in _PLAIN_TYPES or type(b) not in _PLAIN_TYPES:
        return None
    if out is not None and type(out) is not np.ndarray:
        return None
    a = a if type(a) is np.ndarray else np.asarray(a)
    b = b if type(b) is np.ndarray else np.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return None
    if a.dtype.kind not in _CASTABLE_KINDS or b.dtype.kind not in _CASTABLE_KINDS:
        return None
    # The common case (same native float dtype) without np.result_type's cost.
    dtype = (
        a.dtype if a.dtype == b.dtype and a.dtype in _BATCHED else np.dtype(np.result_type(a.dtype, b.dtype).type)
    )  # native byte order
    if dtype not in _BATCHED:
        return None
    n, k = a.shape[-2:] if a.ndim > 1 else (1, a.shape[0])
    kb, m = b.shape[-2:] if b.ndim > 1 else (b.shape[0], 1)
    if k != kb:
        return None
    if a.ndim == 1 and b.ndim == 1 and k * dtype.itemsize > _core.VECTOR_DOT_MAX_BYTES:
        return None  # NumPy's BLAS dot is faster on long vectors
    if a.ndim <= 2 and b.ndim <= 2:
        batch = ()  # np.broadcast_shapes costs microseconds; a single product needs none
    else:
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            return None
    shape = batch + ((n,) if a.ndim > 1 else ()) + ((m,) if b.ndim > 1 else ())
    if out is not None and (out.shape != shape or out.dtype != dtype or not out.flags.writeable):
        return None
    return a, b, dtype, batch, (n, k, m), shape


def _keywords_native(kwargs: dict[str, Any], a: np.ndarray, b: np.ndarray, dtype: np.dtype[Any]) -> bool:
    """True when np.matmul with these keywords gives what fastgemm's plain product gives:
    the result dtype unchanged, no cast that ``casting`` forbids, a C-ordered result."""
    if not kwargs.keys() <= _OWN_KEYWORDS:
        return False
    want = kwargs.get("dtype")
    if want is not None:
        try:
            if np.dtype(want) != dtype:
                return False
        except TypeError:
            return False  # np.matmul raises its own error
    casting = kwargs.get("casting", "same_kind")
    if casting not in _CASTINGS:
        return False
    # The operands are cast to the result dtype; "no", "equiv" and "safe" may forbid it.
    if casting not in ("same_kind", "unsafe") and not all(np.can_cast(x.dtype, dtype, casting) for x in (a, b)):
        return False
    # Only the result's memory order differs between "K", "C" (what fastgemm allocates) and
    # the rest; "F" and "A" go to NumPy. subok only matters for subclasses, which never get here.
    if kwargs.get("order", "K") not in ("K", "C"):
        return False
    subok = kwargs.get("subok", True)
    return type(subok) is bool


def matmul(
    a: npt.ArrayLike,
    b: npt.ArrayLike | _packed.PackedMatrix,
    out: np.ndarray | tuple[np.ndarray] | None = None,
    **kwargs: Any,
) -> Any:
    """The matrix product of two arrays, with exactly numpy.matmul's semantics.

    1-D operands are promoted to a row (left) or column (right) and the added dimension is
    removed from the result; leading dimensions broadcast as stacks of matrices, which run
    in one native call. float32 with float64 gives float64; integers and bool promote as
    NumPy promotes them. Products NumPy resolves to float32 or float64 run on fastgemm,
    everything else (other dtypes, subclasses, ``__array_ufunc__`` overrides, bad input)
    goes to numpy.matmul, which gives the result or raises its own exception.

    ``out``, if given, must be an ndarray of the result's exact shape; it is returned. An
    ``out`` whose elements share memory (a zero or overlapping stride) or that overlaps an
    operand gets the product through a temporary, as NumPy does.

    np.matmul's keywords are accepted: ``dtype``, ``casting``, ``order`` and ``subok`` run on
    fastgemm when they leave the result as the plain product has it (``dtype`` equal to the
    result's dtype, a ``casting`` that allows the operands' cast, ``order`` "K" or "C", any
    ``subok``); any other value, and ``axes``, ``axis``, ``keepdims``, ``signature``, go to
    numpy.matmul with the call.

    ``b`` may be a :class:`fastgemm.PackedMatrix` (:func:`fastgemm.pack`): ``a`` must then
    have its dtype (no promotion), every leading axis of ``a`` is a row of one product, and
    only ``out=`` is accepted.
    """
    if not kwargs:
        # Same-dtype float arrays without a catch: in C, no Python.
        r = _core.matmul_call(a, b, out)
        if r is not NotImplemented:
            return r
    if isinstance(b, _packed.PackedMatrix):
        return _packed.matmul(a, b, out, **kwargs)
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if type(a) is np.ndarray and a.dtype.itemsize == 2:  # float16 / bfloat16: _lowp.py
        if not kwargs:
            r = _core.lowp_matmul_call(a, b, out)  # two 2-D arrays, no out: in C
            if r is not NotImplemented:
                return r
        low = _lowp.plan(a, b, out)
        if low is not None and (not kwargs or _keywords_native(kwargs, low.a, low.b, low.result)):
            return _lowp.run(low, out)
    plan = _plan(a, b, out)
    if plan is not None and kwargs and not _keywords_native(kwargs, plan[0], plan[1], plan[2]):
        plan = None
    if plan is None:
        numpy_matmul: Any = np.matmul  # its overloads do not cover every keyword combination
        return numpy_matmul(a, b, out=out, **kwargs)
    return _native(plan, out)


def _native(plan: _Plan, out: Any) -> Any:
    a, b, dtype, batch, (n, k, m), shape = plan
    a3 = _operand(a if a.ndim > 1 else a[None, :], dtype)
    b3 = _operand(b if b.ndim > 1 else b[:, None], dtype)
    if a3.shape[:-2] != batch:
        a3 = np.broadcast_to(a3, batch + (n, k))
    if b3.shape[:-2] != batch:
        b3 = np.broadcast_to(b3, batch + (k, m))

    direct = (
        out is not None
        and native_ok(out)
        and not may_self_overlap(out)
        and not np.may_share_memory(out, a3)
        and not np.may_share_memory(out, b3)
    )
    result = out if direct else np.empty(shape, dtype=dtype)
    run_stack(_BATCHED[dtype], a3, b3, result, a.ndim, b.ndim, k)
    if out is not None:
        if not direct:
            out[...] = result
        return out
    return result[()] if result.ndim == 0 else result
