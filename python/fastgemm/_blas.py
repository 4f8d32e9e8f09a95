"""BLAS-style entry points: C = alpha * op(A) @ op(B) + beta * C on float32 / float64 arrays.

All argument checking lives here; the native core receives only well-formed 2-D views.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _core

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_NATIVE = {_F32: _core.sgemm, _F64: _core.dgemm}


def _as_matrix(x, name, dtype, fn):
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    if x.dtype != dtype:
        raise TypeError(f"{fn}: {name} must have dtype {dtype}, got {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{fn}: {name} must be a 2-D array, got {x.ndim}-D with shape {x.shape}")
    return x


def _native_ok(x):
    """The core indexes whole elements through aligned pointers."""
    if not x.flags.aligned:
        return False
    size = x.itemsize
    for s in x.strides:
        if s % size:
            return False
    return True


def _scalar(x, name, fn):
    if type(x) is float:  # the common case, without the cost of an ABC check
        return x
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{fn}: {name} must be a real number, got {type(x).__name__}")
    return float(x)


def _gemm(dtype, fn, a, b, c, alpha, beta, trans_a, trans_b):
    a = _as_matrix(a, "a", dtype, fn)
    b = _as_matrix(b, "b", dtype, fn)
    alpha = _scalar(alpha, "alpha", fn)
    beta = _scalar(beta, "beta", fn)
    opa = a.T if trans_a else a
    opb = b.T if trans_b else b
    (m, k), (kb, n) = opa.shape, opb.shape
    if k != kb:
        raise ValueError(
            f"{fn}: op(a) has shape {opa.shape} and op(b) has shape {opb.shape}; "
            f"inner dimensions {k} and {kb} differ"
        )
    if c is None:
        if beta != 0.0:
            raise ValueError(f"{fn}: beta={beta} scales c, but no c was given")
        c = np.empty((m, n), dtype=dtype)
    else:
        if not isinstance(c, np.ndarray):
            raise TypeError(f"{fn}: c must be a numpy.ndarray, got {type(c).__name__}")
        if c.dtype != dtype:
            raise TypeError(f"{fn}: c must have dtype {dtype}, got {c.dtype}")
        if c.shape != (m, n):
            raise ValueError(
                f"{fn}: c has shape {c.shape}, but op(a) {opa.shape} @ op(b) {opb.shape} "
                f"gives {(m, n)}"
            )
        if not c.flags.writeable:
            raise ValueError(f"{fn}: c is read-only")
        # The core reads A and B while writing C: an input that shares memory with C is
        # copied first, so the result is what separate arrays would give.
        if np.may_share_memory(c, opa):
            opa = opa.copy()
        if np.may_share_memory(c, opb):
            opb = opb.copy()
    # np.ascontiguousarray would return a misaligned or odd-strided array unchanged when
    # numpy deems it contiguous (always so for a 1 x 1), so copy into fresh memory instead.
    if not _native_ok(opa):
        opa = opa.copy(order="C")
    if not _native_ok(opb):
        opb = opb.copy(order="C")
    if _native_ok(c):
        _NATIVE[dtype](opa, opb, c, alpha, beta)
    else:
        tmp = c.copy(order="C") if beta != 0.0 else np.empty((m, n), dtype=dtype)
        _NATIVE[dtype](opa, opb, tmp, alpha, beta)
        c[...] = tmp
    return c


def sgemm(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False):
    """C = alpha * op(A) @ op(B) + beta * C for float32 arrays; returns C.

    op(X) is X, or X.T when ``trans_x`` is true. Without ``c`` a new C-ordered array is
    returned (and ``beta`` must be 0); with ``c`` (any writable float32 2-D array, any
    strides) the result is written into it. With ``beta == 0`` C is never read, so NaN in
    it does not survive; with ``alpha == 0`` or an empty inner dimension A and B are not
    read. Inputs that overlap ``c`` in memory are copied first.
    """
    return _gemm(_F32, "sgemm", a, b, c, alpha, beta, trans_a, trans_b)


def dgemm(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False):
    """float64 counterpart of :func:`sgemm`, same semantics."""
    return _gemm(_F64, "dgemm", a, b, c, alpha, beta, trans_a, trans_b)


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False):
    """:func:`sgemm` or :func:`dgemm` by the dtype of ``a`` (float32 or float64)."""
    dt = a.dtype if isinstance(a, np.ndarray) else np.asarray(a).dtype
    if dt == np.float32:
        return sgemm(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)
    if dt == np.float64:
        return dgemm(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)
    raise TypeError(f"gemm: a must have dtype float32 or float64, got {dt}")
