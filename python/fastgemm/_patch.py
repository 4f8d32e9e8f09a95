"""The switch that runs NumPy's float32 / float64 products (and float16 matmul) on fastgemm.

One switch, four parts, turned on and off together:
- NumPy's float32 and float64 inner loops of the gufuncs matmul (`@`, `@=`, np.linalg.matmul,
  np.einsum(optimize=...) on NumPy >= 2.4) and, where NumPy has them, vecdot, matvec and vecmat
  are swapped for fastgemm's inside NumPy itself (csrc/bindings/ufunc_loops.cpp), so every
  caller is affected, including code that imported numpy before the switch;
- np.dot and np.inner are replaced in every loaded numpy module that holds them
  (fastgemm._numpy_funcs), which takes np.tensordot, np.linalg.multi_dot and NumPy's other
  Python callers of dot along;
- NumPy's float16 matmul loop (e,e->e) is swapped for fastgemm's (csrc/bindings/lowp.cpp:
  float32 accumulation, one rounding to float16);
- np.matmul on two ml_dtypes.bfloat16 operands (NumPy: cast to float32, float32 loop, float32
  result) runs fastgemm's bfloat16 product with the same float32 result (fastgemm._bf16_switch).
  NumPy cannot remove a loop, so that one is registered once and follows the switch at each
  call: off, it hands the call back to NumPy's own cast and float32 loop, bit for bit.
  NumPy caches how it resolved a call for good: bfloat16 np.matmul calls made before the loop
  was registered (before the first patch in the process, with ml_dtypes loaded) fix NumPy's
  cast to float32 for the process; those products then run on the float32 loop (fastgemm's
  while the switch is on) after the cast;
- restore_numpy() puts NumPy's loops and objects back exactly (the bfloat16 loop, if it was
  registered, then gives NumPy's results by NumPy's own code).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from . import _bf16_switch, _core, _numpy_funcs

_lock = threading.Lock()
_depth = 0  # patched() contexts open, in any thread
_was_on = False  # whether the switch was on when the outermost context was entered


def _reinit_after_fork() -> None:
    """A child of fork() has only the thread that forked: a lock another thread held at that
    moment would stay held forever, and the child's next patched() would hang. The counters
    are kept: the blocks open in the forking thread still close in the child."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_reinit_after_fork)


_vec_ufuncs: list[str] | None = None


def _gufuncs() -> list[str]:
    """The gufuncs whose loops the switch replaces: matmul, and NumPy 2's vecdot, matvec and
    vecmat where this NumPy has them with the signature fastgemm's loops are written for."""
    global _vec_ufuncs
    if _vec_ufuncs is None:
        _vec_ufuncs = [name for name in _core.replaceable_ufuncs() if name != "matmul"]
    return ["matmul", *_vec_ufuncs]


def _on() -> None:
    done: list[str] = []
    try:
        for name in _gufuncs():
            _core.replace_ufunc_loops(name)
            done.append(name)
        _core.replace_f16_matmul_loop()
        _bf16_switch.turn_on(_ml_dtypes_imported)
        _numpy_funcs.install()
    except BaseException:  # all or nothing: a half-on switch would be on for some calls only
        _numpy_funcs.uninstall()
        _bf16_switch.turn_off()
        _core.restore_f16_matmul_loop()
        for name in reversed(done):
            _core.restore_ufunc_loops(name)
        raise


def _ml_dtypes_imported() -> None:
    """ml_dtypes was imported after the switch went on: register the bfloat16 loop now,
    before any bfloat16 product is resolved by NumPy (NumPy caches that resolution)."""
    with _lock:
        _bf16_switch.register_if_on()


def _off() -> None:
    _numpy_funcs.uninstall()
    _bf16_switch.turn_off()
    _core.restore_f16_matmul_loop()
    for name in reversed(_gufuncs()):
        _core.restore_ufunc_loops(name)


def is_patched() -> bool:
    """True while the switch is on: NumPy's matmul, vecdot, matvec, vecmat float loops (and
    matmul's float16 and bfloat16 products) are fastgemm's and np.dot / np.inner are
    fastgemm's functions."""
    return (
        all(_core.ufunc_loops_replaced(name) for name in _gufuncs())
        and bool(_core.f16_matmul_loop_replaced())
        and bool(_core.bf16_matmul_loop_on())
        and _numpy_funcs.installed()
    )


def patch_numpy() -> None:
    """Run NumPy's float32 / float64 products on fastgemm from now on.

    Covered: np.matmul, `@`, `@=`, np.linalg.matmul, np.dot, np.inner, np.tensordot,
    np.linalg.multi_dot, np.einsum(..., optimize=...) and, on NumPy 2, np.vecdot,
    np.linalg.vecdot, np.matvec, np.vecmat. Not covered: the method ``ndarray.dot`` (NumPy
    calls its BLAS directly; write ``a @ b`` or ``np.dot(a, b)``).

    Only float32 and float64 products change, with NumPy's semantics, and np.matmul on float16
    pairs (accumulated in float32, rounded once to float16) and on ml_dtypes.bfloat16 pairs
    (float32 result, as NumPy's; see the module docstring for one limit); every other dtype,
    subclasses,
    and products too small to gain from fastgemm keep NumPy's code, as do operands it cannot
    address (unaligned data, strides that are not a multiple of the item size).
    Calling it when the switch is already on does nothing.
    """
    with _lock:
        _on()


def restore_numpy() -> None:
    """Put NumPy's own loops and functions back. Calling it when the switch is off does nothing.

    This turns the switch off even inside a ``patched()`` block; the block then leaves it
    off when it ends.
    """
    global _was_on
    with _lock:
        _off()
        _was_on = False


@contextlib.contextmanager
def patched() -> Iterator[None]:
    """``with fastgemm.patched(): ...`` runs NumPy's products on fastgemm inside the block
    (what patch_numpy() covers).

    Blocks nest and may be open in several threads at once: the switch is turned on by the
    first block to open and set back to what it was before by the last one to close. Since
    the switch is process-wide, other threads' matmul calls also run on fastgemm meanwhile.
    A child created by ``os.fork()`` while another thread was inside patched(),
    patch_numpy() or restore_numpy() can use them at once: the lock is renewed in the child.
    """
    global _depth, _was_on
    with _lock:
        if _depth == 0:
            _was_on = is_patched()
        _on()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and not _was_on:
                _off()
