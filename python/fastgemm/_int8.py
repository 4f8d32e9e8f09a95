"""int8 products: fastgemm.gemm on uint8 or int8 ``a`` with int8 ``b``.

The result is exact: an int32 C (every product of two 8-bit values is exact and every sum is
taken in int32), or with ``scale=`` a float32 C = scale * (A @ B), the int32 sum rounded once
to float32 and then multiplied (dequantisation). Past the inner dimension K where an int32 sum
can overflow (K > 65793 for uint8 x int8, K > 131071 for int8 x int8) the sum wraps around
modulo 2^32, as NumPy's int32 matmul does; it never saturates. See docs/DESIGN.md, "int8 products".
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from . import _core, _epilogue, _lowp, _packed
from ._layout import core_target, new_or_given_c, readable_beside, require_2d, write_back

_U8 = np.dtype(np.uint8)
_I8 = np.dtype(np.int8)
_I32 = np.dtype(np.int32)
_F32 = np.dtype(np.float32)

SUPPORTED = "integer products take a uint8 or int8 `a` with an int8 `b` (an int32 C, or a float32 C with scale=)"

#: Largest K whose int32 sums cannot overflow, by the dtype of ``a`` (b is int8):
#: |255 * -128| * K <= 2^31 and (-128)^2 * K <= 2^31 - 1.
EXACT_MAX_K = {_U8: 65793, _I8: 131071}


def wants_int8(a_dt: np.dtype[Any], b: Any, scale: Any) -> bool:
    """Whether fastgemm.gemm hands the call to this module: an integer operand (an int8
    PackedMatrix too), or scale= given."""
    if scale is not None or a_dt.kind in "iu":
        return True
    b_dt = b.dtype if isinstance(b, (np.ndarray, _packed.PackedMatrix)) else None
    return b_dt is not None and b_dt.kind in "iu"


def _matrix(x: Any, name: str, fn: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        x = np.asarray(x)
    require_2d(x, name, fn)
    return x


def _scale(scale: Any, n: int, fn: str) -> np.ndarray:
    """The scale as the core reads it: a float32 array of 1 or n values."""
    if isinstance(scale, np.ndarray) and scale.ndim > 0:
        if scale.dtype != _F32:
            raise TypeError(f"{fn}: a scale vector must be float32, got {scale.dtype}: pass scale.astype(np.float32)")
        if scale.shape != (n,):
            raise ValueError(
                f"{fn}: scale must be a scalar or have shape ({n},) (one per column of C), got {scale.shape}"
            )
        return np.ascontiguousarray(scale)
    if isinstance(scale, np.ndarray) and scale.dtype.kind in "iuf":
        return np.array([scale], dtype=_F32).reshape(1)
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Real):
        raise TypeError(f"{fn}: scale must be a real number or a float32 vector, got {type(scale).__name__}")
    return np.array([float(scale)], dtype=_F32)


def gemm(
    a: Any,
    b: Any,
    c: np.ndarray | None,
    alpha: float,
    beta: float,
    trans_a: bool,
    trans_b: bool,
    scale: Any,
    bias: Any = None,
    activation: Any = None,
) -> np.ndarray:
    """C = op(A) @ op(B) (int32, exact; beta=1 adds it to an int32 ``c``), or with ``scale`` a
    float32 C = act(scale * (op(A) @ op(B)) + bias). ``b`` an array or a PackedMatrix. Every
    argument is checked before anything is computed; alpha, beta, transposes are already parsed
    by fastgemm.gemm."""
    fn = "gemm"
    a = _matrix(a, "a", fn)
    packed = isinstance(b, _packed.PackedMatrix)
    if not packed:
        b = _matrix(b, "b", fn)
    if scale is not None and a.dtype.kind not in "iu" and b.dtype.kind not in "iu":
        raise TypeError(f"{fn}: scale= dequantises int8 products; a is {a.dtype} (use alpha= to scale it)")
    if a.dtype not in (_U8, _I8) or b.dtype != _I8:
        raise TypeError(
            f"{fn}: a is {a.dtype} and b is {b.dtype}; {SUPPORTED}; floating-point ones a and b of one "
            f"dtype: float32, float64, float16 or bfloat16 ({_lowp.INSTALL_HINT})"
        )
    if alpha != 1.0:
        raise ValueError(
            f"{fn}: alpha={alpha} with integer inputs; the int32 product is exact and not scaled "
            f"(use scale= for a float32 result)"
        )
    if beta not in (0.0, 1.0):
        raise ValueError(f"{fn}: beta={beta} with integer inputs; beta must be 0 (overwrite c) or 1 (add to c)")
    if scale is not None and beta != 0.0:
        raise ValueError(f"{fn}: beta={beta} with scale=: a dequantised C is written, never accumulated (beta=0)")
    if scale is None and (bias is not None or activation is not None):
        raise ValueError(
            f"{fn}: bias= / activation= on an int8 product need scale= (the epilogue runs on the dequantised "
            f"float32 C; the int32 C is exact)"
        )
    if packed:
        _packed.refuse_trans_b(trans_b, fn)
    opa = a.T if trans_a else a
    opb = b._stand_in() if packed else b.T if trans_b else b
    out_dt = _I32 if scale is None else _F32
    given = c is not None
    c = new_or_given_c(opa, opb, c, beta, out_dt, fn)
    if given:
        if c.dtype != out_dt:
            raise TypeError(
                f"{fn}: c must be {out_dt} for {a.dtype} x int8 "
                f"{'with' if scale is not None else 'without'} scale=, got {c.dtype}"
            )
        require_2d(c, "c", fn)
    s = None if scale is None else _scale(scale, opb.shape[1], fn)
    epi = _epilogue.native_args(bias, activation, opb.shape[1], _F32, c, fn) if s is not None else ()
    opa, opb = readable_beside(c, opa, opb, fn)
    if s is not None and np.may_share_memory(c, s):
        s = s.copy()
    core_b = b._for_active_kernel() if packed else opb
    target = core_target(c, beta)
    if s is None:
        _core.gemm_int8(opa, core_b, target, beta == 1.0)
    else:
        _core.gemm_int8_scaled(opa, core_b, s, target, *epi)
    return write_back(c, target)
