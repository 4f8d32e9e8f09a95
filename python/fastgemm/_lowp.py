"""bfloat16 and float16 products: fastgemm.matmul and fastgemm.gemm on 2-byte inputs.

Inputs are widened exactly to float32 while the core packs them (or as its matrix-vector
kernels stream them), products accumulate in float32, and a 2-byte result is rounded once,
to nearest even. See docs/DESIGN.md, "Low-precision products".

bfloat16 is ml_dtypes' dtype (what JAX and TensorFlow use). It is recognised by its name and
size, so this module never imports ml_dtypes: without it no bfloat16 array can exist, and
everything else works (``pip install fastgemm[bf16]`` installs it).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import _core, _epilogue
from ._layout import (
    core_target,
    may_self_overlap,
    native_ok,
    new_or_given_c,
    readable_beside,
    require_2d,
    run_stack,
    write_back,
)

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)

INSTALL_HINT = "bfloat16 arrays come from ml_dtypes: pip install 'fastgemm[bf16]' (or ml_dtypes)"


# Scalar types already recognised as bfloat16: dtype.name builds a string on every access
# (~0.9 us), a set lookup of dtype.type does not.
_BF16_TYPES: set[type] = set()


def is_bfloat16(dt: np.dtype[Any]) -> bool:
    """True for ml_dtypes' bfloat16 (native byte order), without importing ml_dtypes."""
    if dt.type in _BF16_TYPES:
        return dt.isnative
    if dt.itemsize == 2 and dt.kind == "V" and dt.name == "bfloat16":
        _BF16_TYPES.add(dt.type)
        return dt.isnative
    return False


def is_lowp(dt: np.dtype[Any]) -> bool:
    """True for the 2-byte float dtypes fastgemm computes on: native float16, bfloat16."""
    return dt == _F16 or is_bfloat16(dt)


def result_dtype(dt: np.dtype[Any]) -> np.dtype[Any]:
    """numpy.matmul's result dtype for two operands of the 2-byte dtype ``dt``: float16 for
    float16, float32 for bfloat16 (ml_dtypes has no matmul loop; NumPy casts to float32)."""
    return _F16 if dt == _F16 else _F32


class Plan(NamedTuple):
    a: np.ndarray
    b: np.ndarray
    result: np.dtype[Any]  # the result's dtype
    batch: tuple[int, ...]
    nkm: tuple[int, int, int]
    shape: tuple[int, ...]


def plan(a: np.ndarray, b: Any, out: Any) -> Plan | None:
    """The plan when fastgemm.matmul computes ``a @ b`` for 2-byte ``a``, else None (NumPy
    then gets the call: mixed dtypes, shapes it rejects, an ``out`` that needs a cast)."""
    if type(b) is not np.ndarray or a.dtype != b.dtype or not is_lowp(a.dtype):
        return None
    if out is not None and type(out) is not np.ndarray:
        return None
    if a.ndim == 0 or b.ndim == 0:
        return None
    n, k = a.shape[-2:] if a.ndim > 1 else (1, a.shape[0])
    kb, m = b.shape[-2:] if b.ndim > 1 else (b.shape[0], 1)
    if k != kb:
        return None
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) if a.ndim > 2 or b.ndim > 2 else ()
    except ValueError:
        return None
    shape = batch + ((n,) if a.ndim > 1 else ()) + ((m,) if b.ndim > 1 else ())
    result = result_dtype(a.dtype)
    if out is not None and (out.shape != shape or out.dtype != result or not out.flags.writeable):
        return None
    return Plan(a, b, result, batch, (n, k, m), shape)


def _operand(x: np.ndarray) -> np.ndarray:
    return x if native_ok(x) else x.copy()


def run(p: Plan, out: np.ndarray | None) -> Any:
    """Compute a plan: one native call for the whole stack, float32 accumulators, a float16
    result rounded once from them."""
    a, b, result_dt, batch, (n, k, m), shape = p
    a3 = _operand(a if a.ndim > 1 else a[None, :])
    b3 = _operand(b if b.ndim > 1 else b[:, None])
    if a3.shape[:-2] != batch:
        a3 = np.broadcast_to(a3, batch + (n, k))
    if b3.shape[:-2] != batch:
        b3 = np.broadcast_to(b3, batch + (k, m))
    direct = (
        result_dt == _F32
        and out is not None
        and native_ok(out)
        and not may_self_overlap(out)
        and not np.may_share_memory(out, a3)
        and not np.may_share_memory(out, b3)
    )
    # The float32 accumulators: out itself for a bfloat16 product when the core can write it.
    acc: np.ndarray = out if direct and out is not None else np.empty(shape, dtype=_F32)
    run_stack(_core.gemm_lowp_batched, a3, b3, acc, a.ndim, b.ndim, k)
    res: np.ndarray
    if result_dt == _F16:
        res = out if out is not None and out.flags.c_contiguous and out.flags.aligned else np.empty(shape, _F16)
        _core.narrow_f16(acc, res)  # one rounding, to nearest even
    else:
        res = acc
    if out is not None:
        if res is not out:
            out[...] = res
        return out
    return res[()] if res.ndim == 0 else res


def gemm(
    a: np.ndarray,
    b: Any,
    c: np.ndarray | None,
    alpha: float,
    beta: float,
    trans_a: bool,
    trans_b: bool,
    bias: Any = None,
    activation: Any = None,
) -> np.ndarray:
    """C = act(alpha op(A) op(B) + beta C + bias) with A and B both bfloat16 or both float16
    (BLAS sbgemm / shgemm, and gemm's fused epilogue): float32 accumulation, a float32 C (new
    when ``c`` is None). A ``c`` of the inputs' dtype is updated through a float32 copy, the
    epilogue applied in float32, and rounded once. ``bias``: float32 or the inputs' dtype
    (widened exactly), one value per column of C. Arguments are already parsed by
    fastgemm.gemm (scalars, transposes)."""
    fn = "gemm"
    if not isinstance(b, np.ndarray):
        b = np.asarray(b)
    dt = a.dtype
    if b.dtype != dt:
        if is_lowp(b.dtype):
            raise TypeError(
                f"{fn}: a is {dt} and b is {b.dtype}; mixed bfloat16 / float16 operands are not supported: "
                f"convert one (e.g. b.astype(a.dtype))"
            )
        raise TypeError(f"{fn}: a is {dt}, so b must be {dt} too, got {b.dtype}")
    require_2d(a, "a", fn)
    require_2d(b, "b", fn)
    opa = a.T if trans_a else a
    opb = b.T if trans_b else b
    given = c is not None
    c = new_or_given_c(opa, opb, c, beta, _F32, fn)
    if given:
        if c.dtype != _F32 and c.dtype != dt:
            raise TypeError(f"{fn}: with {dt} a and b, c must be float32 or {dt}, got {c.dtype}")
        require_2d(c, "c", fn)
    opa, opb = readable_beside(c, opa, opb, fn)
    number = _epilogue.activation_number(activation, fn)
    if bias is not None:
        bias = bias if isinstance(bias, np.ndarray) else np.asarray(bias)
        if bias.dtype == dt:
            bias = bias.astype(_F32)  # exact: every 2-byte value is a float32 value
        elif bias.dtype != _F32:
            raise TypeError(f"{fn}: with {dt} a and b, bias must be float32 or {dt}, got {bias.dtype}")
    vec = _epilogue.bias_vector(bias, c.shape[1], _F32, c, fn)
    # A 2-byte (or unaligned) C: computed and finished in float32, rounded once on the way back.
    target = core_target(c, beta, _F32)
    _core.gemm_lowp(opa, opb, target, alpha, beta, vec, number)
    return write_back(c, target)
