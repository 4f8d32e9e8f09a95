"""Memory-layout predicates shared by the native API, matmul and the SciPy shim, the
output checks sgemm / dgemm and the 2-byte gemm share, and the write of a matmul stack.

The core indexes whole elements through aligned pointers, so an operand it reads or writes
in place must be aligned with strides that are whole multiples of its item size; anything
else is copied first.
"""

from __future__ import annotations

from collections.abc import Callable
from math import gcd
from typing import Any

import numpy as np


def native_ok(x: np.ndarray) -> bool:
    """True when the core can address ``x`` in place: aligned data, every stride a whole
    number of elements."""
    if not x.flags.aligned:
        return False
    size = x.itemsize
    return all(s % size == 0 for s in x.strides)


def require_2d(x: np.ndarray, name: str, fn: str) -> None:
    """ValueError unless the operand ``name`` is a 2-D array."""
    if x.ndim != 2:
        raise ValueError(f"{fn}: {name} must be a 2-D array, got {x.ndim}-D with shape {x.shape}")


def core_target(c: np.ndarray, beta: float, dtype: np.dtype[Any] | None = None) -> np.ndarray:
    """What the core writes C into: ``c`` itself when it can address it and it has the core's
    ``dtype`` (C's own by default), else a C-ordered stand-in of ``dtype`` (holding C's values when
    beta reads them) to copy back with :func:`write_back`."""
    if native_ok(c) and (dtype is None or c.dtype == dtype):
        return c
    dt = c.dtype if dtype is None else dtype
    return c.astype(dt, order="C") if beta != 0.0 else np.empty(c.shape, dtype=dt)


def write_back(c: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``c`` holding what the core wrote into ``target`` (core_target's result; one rounding when
    ``c`` is narrower)."""
    if target is not c:
        c[...] = target
    return c


def self_overlaps(x: np.ndarray) -> bool:
    """True when two different elements of the 2-D array ``x`` share memory.

    Exact for strides that are whole multiples of the item size (the ones the core writes
    through): in element units, with g = gcd(|rs|, |cs|), index pairs (i, j) != (0, 0) with
    i * rs + j * cs == 0 exist within the shape iff |cs|/g < rows and |rs|/g < cols, and a
    zero stride collides as soon as its dimension has two entries. Other strides get the
    conservative test of :func:`may_self_overlap`.
    """
    if x.ndim != 2:
        return may_self_overlap(x)
    if x.size == 0:
        return False
    rows, cols = x.shape
    size = x.itemsize
    rs, cs = x.strides
    if rs % size or cs % size:
        return may_self_overlap(x)
    rs, cs = abs(rs) // size, abs(cs) // size
    if rows > 1 and rs == 0 or cols > 1 and cs == 0:
        return True
    if rows <= 1 or cols <= 1:
        return False
    g = gcd(rs, cs)
    return cs // g < rows and rs // g < cols


def may_self_overlap(x: np.ndarray) -> bool:
    """False when the elements of ``x`` certainly occupy disjoint memory, True when they
    might overlap (a cheap sufficient test: sorted by stride, each dimension must step past
    the whole extent of the smaller ones)."""
    if x.size == 0:
        return False
    extent = x.itemsize  # bytes spanned by the dimensions taken so far
    for s, d in sorted((abs(s), d) for s, d in zip(x.strides, x.shape) if d > 1):
        if s < extent:
            return True
        extent += s * (d - 1)
    return False


def new_or_given_c(
    opa: np.ndarray, opb: np.ndarray, c: object, beta: float, dtype: np.dtype[Any], fn: str
) -> np.ndarray:
    """op(a) and op(b) checked to fit each other; a new ``dtype`` C when ``c`` is None (beta must
    then be 0), else ``c`` itself once it is known to be an ndarray (its dtype is the caller's)."""
    (m, k), (kb, n) = opa.shape, opb.shape
    if k != kb:
        raise ValueError(
            f"{fn}: op(a) has shape {opa.shape} and op(b) has shape {opb.shape}; inner dimensions {k} and {kb} differ"
        )
    if c is None:
        if beta != 0.0:
            raise ValueError(f"{fn}: beta={beta} scales c, but no c was given")
        return np.empty((m, n), dtype=dtype)
    if not isinstance(c, np.ndarray):
        raise TypeError(f"{fn}: c must be a numpy.ndarray, got {type(c).__name__}")
    return c


def readable_beside(c: np.ndarray, opa: np.ndarray, opb: np.ndarray, fn: str) -> tuple[np.ndarray, np.ndarray]:
    """Check ``c`` as the output of op(a) @ op(b) (shape, writable, no element twice) and return
    op(a), op(b) as the core may read them while it writes ``c``: copies where they share
    memory with ``c`` (the result is then what separate arrays give) or where the core cannot
    address them in place (misaligned data, strides that are not whole elements)."""
    m, n = opa.shape[0], opb.shape[1]
    if c.shape != (m, n):
        raise ValueError(f"{fn}: c has shape {c.shape}, but op(a) {opa.shape} @ op(b) {opb.shape} gives {(m, n)}")
    if not c.flags.writeable:
        raise ValueError(f"{fn}: c is read-only")
    # Two elements of C at one address would be written by whichever thread came last (BLAS
    # refuses such a C too: ldc < m).
    if self_overlaps(c):
        raise ValueError(f"{fn}: c's elements overlap each other (shape {c.shape}, strides {c.strides})")
    if np.may_share_memory(c, opa):
        opa = opa.copy()
    if np.may_share_memory(c, opb):
        opb = opb.copy()
    return addressable(opa), addressable(opb)


def addressable(x: np.ndarray) -> np.ndarray:
    """``x``, or a C-ordered copy in fresh memory when the core cannot index it in place
    (np.ascontiguousarray would return a misaligned or odd-strided array unchanged when NumPy
    deems it contiguous, always so for a 1 x 1)."""
    return x if native_ok(x) else x.copy(order="C")


def run_stack(
    batched: Callable[..., None], a3: np.ndarray, b3: np.ndarray, result: np.ndarray, a_ndim: int, b_ndim: int, k: int
) -> None:
    """``result`` = the numpy.matmul of operands of ``a_ndim`` / ``b_ndim`` dimensions, computed
    by ``batched`` (a stacked native product) on their stacks ``a3``, ``b3`` (k their inner size)."""
    # Put back the dimensions 1-D operands had removed (views, never copies of result).
    c3 = result
    if b_ndim == 1:
        c3 = c3[..., None]
    if a_ndim == 1:
        c3 = c3[..., None, :]
    if k == 0 or result.size == 0:
        # Nothing to read: an empty operand may sit at any address (NumPy allows odd ones).
        result[...] = 0
    else:
        batched(a3, b3, c3, 1.0, 0.0)
