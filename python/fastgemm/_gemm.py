"""The native API: C = alpha * op(A) @ op(B) + beta * C on float32 / float64 arrays
(sgemm, dgemm, gemm).

All argument checking lives here; the native core receives only well-formed 2-D views.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core, _epilogue, _int8, _lowp, _packed
from ._layout import core_target, new_or_given_c, readable_beside, require_2d, write_back

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_NATIVE: dict[np.dtype[Any], Callable[..., None]] = {_F32: _core.sgemm, _F64: _core.dgemm}

#: What ``trans_a`` / ``trans_b`` accept: a bool, 0 or 1, or a BLAS character.
Trans = bool | int | str | np.bool_ | np.integer[Any]
#: What ``alpha`` / ``beta`` accept: a real number, NumPy scalar or 0-d real array.
Scalar = float | int | np.floating[Any] | np.integer[Any] | npt.NDArray[Any]

_TRANS_CHARS = {"N": False, "T": True, "C": True}  # C (conjugate) is T for real data


def _as_matrix(x: Any, name: str, dtype: np.dtype[Any], fn: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    if x.dtype != dtype:  # by equality: a dtype that went through pickle is still float32
        if x.dtype.newbyteorder("=") == dtype:
            raise TypeError(
                f"{fn}: {name} has dtype {x.dtype.str} (non-native byte order); fastgemm "
                f"computes in native {dtype}: pass {name}.astype(np.{dtype})"
            )
        raise TypeError(f"{fn}: {name} must have dtype {dtype}, got {x.dtype}")
    require_2d(x, name, fn)
    return x


def checked_c(opa: np.ndarray, opb: np.ndarray, c: Any, beta: float, dtype: np.dtype[Any], fn: str) -> np.ndarray:
    """C of op(a) @ op(b) for sgemm / dgemm: a new one when ``c`` is None, else ``c`` checked as a
    2-D ``dtype`` array (new_or_given_c's checks first)."""
    given = c is not None
    c = new_or_given_c(opa, opb, c, beta, dtype, fn)
    if given:
        _as_matrix(c, "c", dtype, fn)
    return c


def _scalar(x: Any, name: str, fn: str) -> float:
    if type(x) is float:  # the common case, without the cost of an ABC check
        return x
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iuf":
        return float(x)
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{fn}: {name} must be a real number, got {type(x).__name__}")
    return float(x)


def _trans(x: Any, name: str, fn: str) -> bool:
    """A transpose flag: True/False, 0/1 (Python or NumPy) or 'N', 'T', 'C' in either case."""
    if type(x) is bool:
        return x
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, str):
        try:
            return _TRANS_CHARS[x.upper()]
        except KeyError:
            raise ValueError(f"{fn}: {name} must be 'N', 'T' or 'C' (or a bool), got {x!r}") from None
    try:
        v = operator.index(x)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be a bool, 0, 1 or one of 'N', 'T', 'C', got {type(x).__name__}") from None
    if v not in (0, 1):
        raise ValueError(f"{fn}: {name} must be 0 or 1 (or a bool, or 'N', 'T', 'C'), got {v}")
    return bool(v)


def _gemm(
    dtype: np.dtype[Any],
    fn: str,
    a: Any,
    b: Any,
    c: np.ndarray | None,
    alpha: Any,
    beta: Any,
    trans_a: Any,
    trans_b: Any,
    bias: Any = None,
    activation: Any = None,
) -> np.ndarray:
    if isinstance(b, _packed.PackedMatrix):
        return _packed.gemm(fn, dtype, a, b, c, alpha, beta, trans_a, trans_b, bias, activation)
    a = _as_matrix(a, "a", dtype, fn)
    b = _as_matrix(b, "b", dtype, fn)
    alpha = _scalar(alpha, "alpha", fn)
    beta = _scalar(beta, "beta", fn)
    opa = a.T if _trans(trans_a, "trans_a", fn) else a
    opb = b.T if _trans(trans_b, "trans_b", fn) else b
    c = checked_c(opa, opb, c, beta, dtype, fn)
    opa, opb = readable_beside(c, opa, opb, fn)
    epi = _epilogue.native_args(bias, activation, opb.shape[1], dtype, c, fn)
    target = core_target(c, beta)
    _NATIVE[dtype](opa, opb, target, alpha, beta, *epi)
    return write_back(c, target)


def sgemm(
    a: npt.ArrayLike,
    b: npt.ArrayLike | _packed.PackedMatrix,
    c: npt.NDArray[np.float32] | None = None,
    *,
    alpha: Scalar = 1.0,
    beta: Scalar = 0.0,
    trans_a: Trans = False,
    trans_b: Trans = False,
) -> npt.NDArray[np.float32]:
    """C = alpha * op(A) @ op(B) + beta * C for float32 arrays; returns C.

    op(X) is X, or X.T when ``trans_x`` says so: ``trans_x`` is a bool, 0 or 1 (Python or
    NumPy integers and bools), or a BLAS character: 'N' (no transpose), 'T' or 'C'
    (transpose; the conjugate transpose of real data), in either case. Any other str or
    integer raises ValueError, any other type TypeError.

    ``a`` and ``b`` are 2-D float32 arrays (or array-likes that convert to one) of native
    byte order: an array of another dtype, or of non-native byte order such as '>f4', raises
    TypeError (convert it with ``.astype``). ``alpha`` and ``beta`` are real numbers: Python or
    NumPy scalars or 0-d real arrays.

    Without ``c`` a new C-ordered array is returned (and ``beta`` must be 0); with ``c`` (a
    writable float32 2-D array, any strides) the result is written into it. A ``c`` whose
    elements share memory (a zero or too small stride) raises ValueError, as BLAS refuses
    ldc < m. With ``beta == 0`` C is never read, so NaN in it does not survive; with
    ``alpha == 0`` or an empty inner dimension A and B are not read. Inputs that overlap
    ``c`` in memory are copied first.

    ``b`` may be a :class:`fastgemm.PackedMatrix` of this dtype (:func:`fastgemm.pack`): B is
    then not packed again; ``trans_b`` must be False or 'N' (the transpose was fixed at pack
    time, else ValueError).
    """
    r = _core.sgemm_call(a, b, c, alpha, beta, trans_a, trans_b)
    return _gemm(_F32, "sgemm", a, b, c, alpha, beta, trans_a, trans_b) if r is NotImplemented else r


def dgemm(
    a: npt.ArrayLike,
    b: npt.ArrayLike | _packed.PackedMatrix,
    c: npt.NDArray[np.float64] | None = None,
    *,
    alpha: Scalar = 1.0,
    beta: Scalar = 0.0,
    trans_a: Trans = False,
    trans_b: Trans = False,
) -> npt.NDArray[np.float64]:
    """float64 counterpart of :func:`sgemm`, same semantics."""
    r = _core.dgemm_call(a, b, c, alpha, beta, trans_a, trans_b)
    return _gemm(_F64, "dgemm", a, b, c, alpha, beta, trans_a, trans_b) if r is NotImplemented else r


def gemm(
    a: npt.ArrayLike,
    b: npt.ArrayLike | _packed.PackedMatrix,
    c: npt.NDArray[Any] | None = None,
    *,
    alpha: Scalar = 1.0,
    beta: Scalar = 0.0,
    trans_a: Trans = False,
    trans_b: Trans = False,
    bias: npt.NDArray[np.floating[Any]] | None = None,
    activation: _epilogue.Activation | None = None,
    scale: float | npt.NDArray[np.float32] | None = None,
) -> npt.NDArray[Any]:
    """:func:`sgemm` or :func:`dgemm` by the dtype of ``a`` (float32 or float64).

    Fused epilogue (float32 / float64): C = act(alpha * op(A) @ op(B) + beta * C + bias).
    ``bias`` is None or a 1-D ndarray of C's dtype with one value per column of C (any
    strides; it is copied when not contiguous or when it shares memory with ``c``);
    ``activation`` is None or one of 'relu', 'gelu' (erf form), 'gelu_tanh', 'silu',
    'sigmoid', 'tanh'. Both are applied to each tile of C while it is in cache. A bias of
    another dtype raises TypeError, of another length or dimension ValueError, an unknown
    activation ValueError, all before anything is computed. NaN stays NaN through every
    activation (relu(NaN) is NaN, like np.maximum); the limits at +-inf are the
    mathematical ones (sigmoid 1 / 0, tanh +-1, gelu / gelu_tanh / silu +inf / 0). Accuracy:
    docs/DESIGN.md, "Fused bias and activation".

    With bfloat16 (ml_dtypes) or float16 ``a`` and ``b`` (both the same type): BLAS sbgemm /
    shgemm semantics, the inputs widened exactly to float32, float32 accumulation and a
    float32 C; ``c`` may be float32 or the inputs' type (computed in float32, rounded once to
    nearest even). Mixed bfloat16 / float16 operands raise TypeError. The fused epilogue runs
    on the float32 C (before that one rounding for a 2-byte ``c``); ``bias`` is float32 or the
    inputs' dtype (widened exactly), any other dtype raises TypeError.

    With uint8 or int8 ``a`` and int8 ``b`` (an array, or an int8 PackedMatrix): an exact int32 C
    (``beta=1`` adds to an int32 ``c``; ``alpha`` must be 1), or with ``scale`` (a real number, or a
    float32 vector of one value per column of C) a float32 C = scale * (op(A) @ op(B)). Past
    K = 65793 (uint8 a) or 131071 (int8 a) the int32 sums wrap around modulo 2^32, as NumPy's int32
    matmul does. Other integer operands raise TypeError.
    """
    fused = bias is not None or activation is not None
    r = NotImplemented if fused or scale is not None else _core.gemm_call(a, b, c, alpha, beta, trans_a, trans_b)
    if r is not NotImplemented:
        return r
    if isinstance(b, _packed.PackedMatrix) and b.dtype.kind == "f" and scale is None:
        return _packed.gemm("gemm", b.dtype, a, b, c, alpha, beta, trans_a, trans_b, bias, activation)
    dt = a.dtype if isinstance(a, np.ndarray) else np.asarray(a).dtype
    if _int8.wants_int8(dt, b, scale):
        return _int8.gemm(
            a,
            b,
            c,
            _scalar(alpha, "alpha", "gemm"),
            _scalar(beta, "beta", "gemm"),
            _trans(trans_a, "trans_a", "gemm"),
            _trans(trans_b, "trans_b", "gemm"),
            scale,
            bias,
            activation,
        )
    dt = dt.newbyteorder("=")  # a byte-swapped float32 gets sgemm's byte-order message
    if dt == np.float32:
        if fused:
            return _gemm(_F32, "gemm", a, b, c, alpha, beta, trans_a, trans_b, bias, activation)
        return sgemm(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)
    if dt == np.float64:
        if fused:
            return _gemm(_F64, "gemm", a, b, c, alpha, beta, trans_a, trans_b, bias, activation)
        return dgemm(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)
    if dt.itemsize == 2 and isinstance(a, np.ndarray) and _lowp.is_lowp(a.dtype):  # bfloat16 / float16
        return _lowp.gemm(
            a,
            b,
            c,
            _scalar(alpha, "alpha", "gemm"),
            _scalar(beta, "beta", "gemm"),
            _trans(trans_a, "trans_a", "gemm"),
            _trans(trans_b, "trans_b", "gemm"),
            bias,
            activation,
        )
    if dt == np.float16:  # only a byte-swapped float16 gets here
        raise TypeError(
            f"gemm: a has dtype {np.asarray(a).dtype.str} (non-native byte order): pass a.astype(np.float16)"
        )
    raise TypeError(f"gemm: a must have dtype float32, float64, float16 or bfloat16 ({_lowp.INSTALL_HINT}), got {dt}")
