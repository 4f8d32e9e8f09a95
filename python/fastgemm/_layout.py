"""Memory-layout predicates shared by the native API, matmul and the SciPy shim.

The core indexes whole elements through aligned pointers, so an operand it reads or writes
in place must be aligned with strides that are whole multiples of its item size; anything
else is copied first.
"""

from __future__ import annotations

from math import gcd

import numpy as np


def native_ok(x: np.ndarray) -> bool:
    """True when the core can address ``x`` in place: aligned data, every stride a whole
    number of elements."""
    if not x.flags.aligned:
        return False
    size = x.itemsize
    return all(s % size == 0 for s in x.strides)


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
