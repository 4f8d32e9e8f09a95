"""fastgemm.matmul: numpy.matmul's semantics, float32 / float64 products on fastgemm.

Everything fastgemm does not compute itself -- other dtypes, array subclasses and objects
that override ufuncs, and every input NumPy rejects -- is handed to numpy.matmul, so the
answer (or the exception) is NumPy's own.
"""
from __future__ import annotations

import numpy as np

from . import _core
from ._blas import _native_ok

_BATCHED = {np.dtype(np.float32): _core.sgemm_batched, np.dtype(np.float64): _core.dgemm_batched}

# Input kinds whose promotion with float32/float64 NumPy's matmul resolves exactly as
# np.result_type does (bool, signed and unsigned integers, floats).
_CASTABLE_KINDS = frozenset("biuf")

# Plain Python containers and numbers NumPy converts with asarray and no override hook.
_PLAIN_TYPES = (np.ndarray, list, tuple, int, float, bool, complex)


def _operand(x, dtype):
    if x.dtype != dtype:  # also turns a non-native byte order into native
        x = x.astype(dtype)
    elif not _native_ok(x):
        x = x.copy()
    return x


def _plan(a, b, out):
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
    dtype = a.dtype if a.dtype == b.dtype and a.dtype in _BATCHED else \
        np.dtype(np.result_type(a.dtype, b.dtype).type)  # native byte order
    if dtype not in _BATCHED:
        return None
    n, k = a.shape[-2:] if a.ndim > 1 else (1, a.shape[0])
    kb, m = b.shape[-2:] if b.ndim > 1 else (b.shape[0], 1)
    if k != kb:
        return None
    if a.ndim <= 2 and b.ndim <= 2:
        batch = ()  # np.broadcast_shapes costs microseconds; a single product needs none
    else:
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            return None
    shape = batch + ((n,) if a.ndim > 1 else ()) + ((m,) if b.ndim > 1 else ())
    if out is not None:
        if out.shape != shape or out.dtype != dtype or not out.flags.writeable:
            return None
    return a, b, dtype, batch, (n, k, m), shape


def matmul(a, b, out=None):
    """The matrix product of two arrays, with exactly numpy.matmul's semantics.

    1-D operands are promoted to a row (left) or column (right) and the added dimension is
    removed from the result; leading dimensions broadcast as stacks of matrices, which run
    in one native call. float32 with float64 gives float64; integers and bool promote as
    NumPy promotes them. Products NumPy resolves to float32 or float64 run on fastgemm,
    everything else (other dtypes, subclasses, ``__array_ufunc__`` overrides, bad input)
    goes to numpy.matmul, which gives the result or raises its own exception.

    ``out``, if given, must be an ndarray of the result's exact shape; it is returned.
    """
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    plan = _plan(a, b, out)
    if plan is None:
        return np.matmul(a, b, out=out)
    a, b, dtype, batch, (n, k, m), shape = plan
    a3 = _operand(a if a.ndim > 1 else a[None, :], dtype)
    b3 = _operand(b if b.ndim > 1 else b[:, None], dtype)
    if a3.shape[:-2] != batch:
        a3 = np.broadcast_to(a3, batch + (n, k))
    if b3.shape[:-2] != batch:
        b3 = np.broadcast_to(b3, batch + (k, m))

    direct = (
        out is not None
        and _native_ok(out)
        and not any(s == 0 and d > 1 for s, d in zip(out.strides, out.shape))
        and not np.may_share_memory(out, a3)
        and not np.may_share_memory(out, b3)
    )
    result = out if direct else np.empty(shape, dtype=dtype)
    # Put back the dimensions 1-D operands had removed (views, never copies of out).
    c3 = result
    if b.ndim == 1:
        c3 = c3[..., None]
    if a.ndim == 1:
        c3 = c3[..., None, :]
    _BATCHED[dtype](a3, b3, c3, 1.0, 0.0)
    if out is not None:
        if not direct:
            out[...] = result
        return out
    return result[()] if result.ndim == 0 else result
