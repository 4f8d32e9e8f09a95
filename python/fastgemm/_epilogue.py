"""The fused epilogue of :func:`fastgemm.gemm`: C = act(alpha op(A) op(B) + beta C + bias).

Checks ``bias`` and ``activation`` and turns them into what the native core takes (a
contiguous bias of C's dtype that does not overlap C, and the activation's number); the core
applies both to each tile of C while it is still in cache.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

#: What ``activation`` accepts besides None.
Activation = Literal["relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"]

# Numbers of csrc/fastgemm/epilogue.hpp's Activation enum.
ACTIVATIONS: dict[str, int] = {"relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4, "sigmoid": 5, "tanh": 6}


def activation_number(activation: Any, fn: str) -> int:
    """The core's number for an activation name (0: none); ValueError / TypeError otherwise."""
    if activation is None:
        return 0
    if not isinstance(activation, str):
        raise TypeError(f"{fn}: activation must be None or a str, got {type(activation).__name__}")
    try:
        return ACTIVATIONS[activation]
    except KeyError:
        valid = ", ".join(repr(name) for name in ACTIVATIONS)
        raise ValueError(f"{fn}: unknown activation {activation!r}; valid: None, {valid}") from None


def bias_vector(bias: Any, n: int, dtype: np.dtype[Any], c: np.ndarray, fn: str) -> np.ndarray | None:
    """``bias`` checked against C (dtype, n values), contiguous and not sharing C's memory."""
    if bias is None:
        return None
    vec: np.ndarray = bias if isinstance(bias, np.ndarray) else np.asarray(bias)
    if vec.dtype != dtype:
        raise TypeError(f"{fn}: bias must have C's dtype {dtype}, got {vec.dtype}")
    if vec.ndim != 1 or vec.shape[0] != n:
        raise ValueError(
            f"{fn}: bias must be a 1-D array of length {n} (one value per column of C), got shape {vec.shape}"
        )
    # C is written while later tiles still read the bias: never let them share memory.
    if not vec.flags.c_contiguous or np.may_share_memory(vec, c):
        vec = vec.copy()
    return vec


def native_args(bias: Any, activation: Any, n: int, dtype: np.dtype[Any], c: np.ndarray, fn: str) -> tuple[Any, ...]:
    """The trailing (bias, activation) arguments of _core.sgemm / dgemm; () for no epilogue."""
    number = activation_number(activation, fn)
    vec = bias_vector(bias, n, dtype, c, fn)
    return () if vec is None and number == 0 else (vec, number)
