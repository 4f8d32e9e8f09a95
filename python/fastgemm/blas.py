"""Drop-in replacements for scipy.linalg.blas.sgemm and dgemm, computed by fastgemm.

    from fastgemm.blas import sgemm, dgemm      # instead of: from scipy.linalg.blas import ...
    c = dgemm(1.0, a, b)                        # C = alpha * op(A) @ op(B) + beta * C

Same signature, argument conversions and return conventions as SciPy's f2py wrappers:

- ``a``, ``b`` and ``c`` are converted to the routine's dtype (any array-like; a 0-d input is a
  1 x 1 matrix, a 1-D input a column, size-1 dimensions beyond two are dropped).
- ``trans_a`` / ``trans_b``: 0 uses the matrix, 1 or 2 its transpose (2, the conjugate
  transpose, is the transpose for real matrices).
- Without ``c`` the result is a new Fortran-ordered array (``beta`` then multiplies zeros).
  With ``c`` the result is a new Fortran-ordered array too, unless ``overwrite_c`` is true and
  ``c`` is already a writable, aligned, Fortran-contiguous array of the routine's dtype: then
  ``c`` itself is updated and returned.

Where SciPy's behaviour is an accident of BLAS rather than a convention, fastgemm keeps its
own rules: ``alpha == 0`` or an empty inner dimension never reads A and B (the BLAS
specification; OpenBLAS lets a NaN in A through), a read-only ``c`` is never written (SciPy
writes into it with ``overwrite_c``), inputs overlapping ``c`` are read as they were before the
call, and bad shapes or ``trans`` values raise ValueError (SciPy raises its module's ``error``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core
from ._layout import addressable, native_ok

__all__ = ["sgemm", "dgemm"]


def _number(x: Any, name: str, fn: str) -> float:
    """f2py's conversion of a real scalar argument: complex keeps its real part."""
    if isinstance(x, np.ndarray) and x.size == 1:
        x = x.reshape(()).item()
    if isinstance(x, (complex, np.complexfloating)):
        x = x.real
    try:
        return float(x)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be a real number, got {type(x).__name__}") from None
    except ValueError:
        raise ValueError(f"{fn}: {name} must be a real number, got {x!r}") from None


def _flag(x: Any, name: str, fn: str, top: int) -> int:
    try:
        v = int(x)
    except (TypeError, ValueError):
        raise ValueError(f"{fn}: {name} must be an int, got {x!r}") from None
    if not 0 <= v <= top:
        raise ValueError(f"{fn}: {name} must be between 0 and {top}, got {v}")
    return v


def _rank2(x: np.ndarray) -> np.ndarray | None:
    """f2py's rank-2 view of an array: 0-d -> 1 x 1, 1-D -> a column, size-1 axes dropped
    beyond two (what is left of fewer than two is a column), or None when that cannot work."""
    if x.ndim == 0:
        return x.reshape(1, 1)
    if x.ndim == 1:
        return x[:, None]
    if x.ndim > 2:
        kept = [d for d in x.shape if d != 1]
        if len(kept) > 2:
            return None
        # order="A" keeps a Fortran-ordered c a view, so an in-place c is really written.
        return x.reshape(kept + [1] * (2 - len(kept)), order="A")
    return x


def _matrix(x: Any, name: str, dtype: np.dtype[Any], fn: str) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype != dtype:
        x = x.astype(dtype)
    m = _rank2(x)
    if m is None:
        raise ValueError(f"{fn}: {name} must be a matrix (2-D), got shape {x.shape}")
    return m


def _gemm(
    dtype: np.dtype[Any],
    fn: str,
    native: Callable[..., None],
    alpha: npt.ArrayLike,
    a: Any,
    b: Any,
    beta: Any,
    c: Any,
    trans_a: Any,
    trans_b: Any,
    overwrite_c: Any,
) -> np.ndarray:
    alpha = _number(alpha, "alpha", fn)
    beta = _number(beta, "beta", fn)
    trans_a = _flag(trans_a, "trans_a", fn, 2)
    trans_b = _flag(trans_b, "trans_b", fn, 2)
    a = _matrix(a, "a", dtype, fn)
    b = _matrix(b, "b", dtype, fn)
    opa = a.T if trans_a else a
    opb = b.T if trans_b else b
    (m, k), (kb, n) = opa.shape, opb.shape
    if k != kb:
        raise ValueError(
            f"{fn}: op(a) has shape {opa.shape} and op(b) has shape {opb.shape}; inner dimensions {k} and {kb} differ"
        )

    in_place = (
        c is not None
        and bool(overwrite_c)
        and type(c) is np.ndarray
        and c.dtype == dtype
        and c.flags.f_contiguous
        and c.flags.writeable
        and native_ok(c)
    )
    work: np.ndarray | None
    if c is None:
        result = np.zeros((m, n), dtype=dtype, order="F")
        work = result
    else:
        result = c if in_place else np.array(c, dtype=dtype, order="F", copy=True)
        work = _rank2(result)
        if work is None or work.shape != (m, n):
            raise ValueError(
                f"{fn}: c has shape {np.shape(c)}, but op(a) {opa.shape} @ op(b) {opb.shape} gives {(m, n)}"
            )
        if in_place:
            # C is written while A and B are read: read inputs that share its memory from copies.
            if np.may_share_memory(work, opa):
                opa = opa.copy()
            if np.may_share_memory(work, opb):
                opb = opb.copy()
    native(addressable(opa), addressable(opb), work, alpha, beta)
    return result


def sgemm(
    alpha: npt.ArrayLike,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    beta: npt.ArrayLike = 0.0,
    c: npt.ArrayLike | None = None,
    trans_a: int = 0,
    trans_b: int = 0,
    overwrite_c: int = 0,
) -> npt.NDArray[np.float32]:
    """c = alpha * op(a) @ op(b) + beta * c in float32, like scipy.linalg.blas.sgemm."""
    return _gemm(np.dtype(np.float32), "sgemm", _core.sgemm, alpha, a, b, beta, c, trans_a, trans_b, overwrite_c)


def dgemm(
    alpha: npt.ArrayLike,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    beta: npt.ArrayLike = 0.0,
    c: npt.ArrayLike | None = None,
    trans_a: int = 0,
    trans_b: int = 0,
    overwrite_c: int = 0,
) -> npt.NDArray[np.float64]:
    """c = alpha * op(a) @ op(b) + beta * c in float64, like scipy.linalg.blas.dgemm."""
    return _gemm(np.dtype(np.float64), "dgemm", _core.dgemm, alpha, a, b, beta, c, trans_a, trans_b, overwrite_c)
