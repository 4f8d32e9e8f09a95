"""fastgemm.pack and PackedMatrix: a B (a layer's weights) copied once into the packed layout of
the kernel in use, so every product that reuses it skips packing B.

All argument checking for a packed B lives here; _gemm.py and _matmul.py hand a PackedMatrix
over with one line each. See docs/DESIGN.md, "Pre-packed B".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core, _epilogue, _gemm, _int8
from ._layout import addressable, core_target, readable_beside, write_back

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_I8 = np.dtype(np.int8)
_I32 = np.dtype(np.int32)
_PACKERS: dict[np.dtype[Any], Any] = {_F32: _core.PackedF32, _F64: _core.PackedF64, _I8: _core.PackedI8}
_GEMM: dict[np.dtype[Any], Any] = {_F32: _core.sgemm_packed, _F64: _core.dgemm_packed}


class PackedMatrix:
    """A matrix B (k x n) copied once into the packed layout of a kernel, made by :func:`pack`.

    Pass it as ``b`` to :func:`fastgemm.gemm`, :func:`fastgemm.sgemm`, :func:`fastgemm.dgemm` or
    :func:`fastgemm.matmul` (also ``x @ p``): the product then skips packing B. An int8 one is
    taken by :func:`fastgemm.gemm` (uint8 or int8 ``a``, ``scale=`` as for an int8 array) and
    :func:`fastgemm.matmul` (an int32 result); one packed B serves both types of ``a``. It owns its
    memory (changing or deleting the array it was packed from changes nothing), exposes no
    writable buffer, pickles as its unpacked values, and compares equal to another
    PackedMatrix of the same shape, dtype and values. After :func:`fastgemm.set_kernel` the
    next product repacks it from its own values for the new kernel (once).
    """

    __slots__ = ("_packed", "_dtype", "__weakref__")
    _packed: Any  # _core.PackedF32, PackedF64 or PackedI8
    _dtype: np.dtype[Any]
    # NumPy defers to __rmatmul__ for ``x @ p`` (and refuses its ufuncs on a PackedMatrix).
    __array_ufunc__ = None
    __hash__ = None  # type: ignore[assignment]  # equal by value, like an ndarray

    def __init__(self) -> None:
        raise TypeError("PackedMatrix is made by fastgemm.pack(b)")

    @classmethod
    def _wrap(cls, packed: Any, dtype: np.dtype[Any]) -> PackedMatrix:
        self = object.__new__(cls)
        self._packed = packed
        self._dtype = dtype
        return self

    @property
    def shape(self) -> tuple[int, int]:
        """(k, n): the shape of B as the product uses it (W.T's for ``pack(w, trans=True)``)."""
        return (int(self._packed.rows), int(self._packed.cols))

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._dtype

    @property
    def nbytes(self) -> int:
        """Bytes of packed memory held, the zero padding of the last sliver of each panel included."""
        return int(self._packed.nbytes)

    @property
    def kernel(self) -> str:
        """Name of the kernel (:func:`fastgemm.get_kernel`) the layout is for."""
        return str(self._packed.kernel)

    def _stand_in(self) -> np.ndarray:
        """An array of B's shape and dtype for the shared checks of C (one element, read by nothing)."""
        return np.broadcast_to(np.zeros((), self._dtype), self.shape)

    def unpack(self) -> np.ndarray:
        """A new C-ordered (k, n) array holding B's values."""
        out: np.ndarray = self._packed.unpack()
        return out

    def _for_active_kernel(self) -> Any:
        """The packed B for the kernel in use, repacked from its own values after set_kernel."""
        packed = self._packed
        if packed.kernel != _core.active_kernel():
            packed = _PACKERS[self._dtype](packed.unpack())
            self._packed = packed
        return packed

    def __repr__(self) -> str:
        k, n = self.shape
        return f"PackedMatrix(shape=({k}, {n}), dtype={self._dtype}, kernel={self.kernel!r}, nbytes={self.nbytes})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PackedMatrix):
            return NotImplemented
        return (
            self.shape == other.shape
            and self._dtype == other._dtype
            and bool(np.array_equal(self.unpack(), other.unpack(), equal_nan=True))
        )

    def __reduce__(self) -> tuple[Any, tuple[np.ndarray]]:
        return (pack, (self.unpack(),))

    def __rmatmul__(self, a: Any) -> Any:
        return matmul(a, self)


def pack(b: npt.ArrayLike, *, trans: _gemm.Trans = False) -> PackedMatrix:
    """Copy B once into the packed layout of the kernel in use; returns a :class:`PackedMatrix`.

    ``b`` is a 2-D float32, float64 or int8 array (any strides, native byte order) holding B, k x n;
    with ``trans=True`` it holds W, n x k, as a linear layer stores its weights, and B = W.T
    (``trans`` takes what ``trans_b`` of :func:`fastgemm.gemm` takes). The whole of B is
    packed, blocked as the kernel blocks a product; the copy is independent of ``b``.

    An int8 B multiplied by one row at a time (a decode step) is faster unpacked: such a product
    streams the int8 array once, where the packed copy is twice its bytes on most CPUs (int16).
    """
    fn = "pack"
    t = _gemm._trans(trans, "trans", fn)
    if isinstance(b, PackedMatrix):
        raise TypeError(f"{fn}: b is already a PackedMatrix")
    x = b if isinstance(b, np.ndarray) else np.asarray(b)
    dtype = x.dtype.newbyteorder("=")
    if dtype not in _PACKERS:
        raise TypeError(f"{fn}: b must have dtype float32, float64 or int8, got {x.dtype}")
    x = _gemm._as_matrix(x, "b", dtype, fn)
    return PackedMatrix._wrap(_PACKERS[dtype](addressable(x.T if t else x)), dtype)


def refuse_trans_b(trans_b: bool, fn: str) -> None:
    """A PackedMatrix is B as packed: op(B) = B only."""
    if trans_b:
        raise ValueError(
            f"{fn}: trans_b must be False or 'N' with a PackedMatrix: its transpose was fixed at pack time "
            f"(fastgemm.pack(w, trans=True))"
        )


def gemm(
    fn: str,
    dtype: np.dtype[Any],
    a: Any,
    b: PackedMatrix,
    c: np.ndarray | None,
    alpha: Any,
    beta: Any,
    trans_a: Any,
    trans_b: Any,
    bias: Any = None,
    activation: Any = None,
) -> np.ndarray:
    """``fn`` (sgemm, dgemm or gemm, computing in ``dtype``) with a packed B: every argument
    checked as for an array B before anything is computed; ``bias`` / ``activation`` the fused
    epilogue, as for an array B."""
    if b.dtype != dtype:
        raise TypeError(f"{fn}: b is a PackedMatrix of {b.dtype}, but {fn} computes in {dtype} here")
    a = _gemm._as_matrix(a, "a", dtype, fn)
    alpha = _gemm._scalar(alpha, "alpha", fn)
    beta = _gemm._scalar(beta, "beta", fn)
    opa = a.T if _gemm._trans(trans_a, "trans_a", fn) else a
    refuse_trans_b(_gemm._trans(trans_b, "trans_b", fn), fn)
    if c is None and opa.shape[1] == b.shape[0] and beta == 0.0:  # the common call, checked cheaply
        c = np.empty((opa.shape[0], b.shape[1]), dtype)
        opa = addressable(opa)
    else:
        shape_b = b._stand_in()
        c = _gemm.checked_c(opa, shape_b, c, beta, dtype, fn)
        opa, _ = readable_beside(c, opa, shape_b, fn)
    epi = _epilogue.native_args(bias, activation, b.shape[1], dtype, c, fn)
    packed = b._for_active_kernel()
    target = core_target(c, beta)
    _GEMM[dtype](opa, packed, target, alpha, beta, *epi)
    return write_back(c, target)


def matmul(a: Any, b: PackedMatrix, out: Any = None, **kwargs: Any) -> Any:
    """``fastgemm.matmul(a, p)`` and ``a @ p``: a of one or more dimensions, of p's dtype (no
    type promotion: the weights were packed in one precision; uint8 or int8 for an int8 p, the
    result then int32), its last axis k; the result has shape ``a.shape[:-1] + (n,)``, every
    leading axis taken as rows of one product."""
    fn = "matmul"
    if kwargs:
        raise TypeError(f"{fn}: with a PackedMatrix only out= is accepted, got {sorted(kwargs)}")
    x = a if isinstance(a, np.ndarray) else np.asarray(a)
    out_dt = b.dtype
    if b.dtype == _I8:  # uint8 or int8 x, an exact int32 result
        if x.dtype not in _int8.EXACT_MAX_K:
            raise TypeError(f"{fn}: a has dtype {x.dtype}, b is a PackedMatrix of int8: a must be uint8 or int8")
        out_dt = _I32
    elif x.dtype != b.dtype:
        raise TypeError(f"{fn}: a has dtype {x.dtype}, b is a PackedMatrix of {b.dtype}: convert a first")
    k, n = b.shape
    if x.ndim == 0 or x.shape[-1] != k:
        raise ValueError(
            f"{fn}: a has shape {x.shape}, b is a PackedMatrix of shape {b.shape}; a's last axis must be {k}"
        )
    shape = x.shape[:-1] + (n,)
    if out is not None:
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        if not isinstance(out, np.ndarray):
            raise TypeError(f"{fn}: out must be a numpy.ndarray, got {type(out).__name__}")
        if out.shape != shape or out.dtype != out_dt:
            raise ValueError(f"{fn}: out must have shape {shape} and dtype {out_dt}, got {out.shape} {out.dtype}")
    m = math.prod(x.shape[:-1])
    result = np.empty(shape, out_dt)
    if out_dt == _I32:
        _int8.gemm(x.reshape(m, k), b, result.reshape(m, n), 1.0, 0.0, False, False, None)
    else:
        gemm(fn, b.dtype, x.reshape(m, k), b, result.reshape(m, n), 1.0, 0.0, False, False)
    if out is None:
        return result
    out[...] = result
    return out
