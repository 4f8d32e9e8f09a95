"""The switch that runs numpy.matmul, `@`, `@=` and np.linalg.matmul on fastgemm.

NumPy's float32, float64 and float16 matmul inner loops are swapped for fastgemm's inside
NumPy itself (csrc/bindings/ufunc_loops.cpp; float16: csrc/bindings/lowp.cpp), so every caller of the matmul ufunc is affected,
including code that imported numpy before the switch. NumPy's loops are kept and put back
exactly by restore_numpy().
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from . import _core

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


def is_patched() -> bool:
    """True while numpy.matmul's float32, float64 and float16 loops are fastgemm's."""
    return bool(_core.matmul_loops_replaced()) and bool(_core.f16_matmul_loop_replaced())


def patch_numpy() -> None:
    """Run numpy.matmul (and `@`, `@=`, np.linalg.matmul) on fastgemm from now on.

    Only float32, float64 and float16 products change (float16: accumulated in float32,
    rounded once to float16); every other dtype keeps NumPy's loop. bfloat16 (ml_dtypes) is
    not switched: NumPy has no way to take a registered loop back out, so it could not be
    restored exactly; use fastgemm.matmul for bfloat16. Products
    too small to gain from fastgemm, and operands it cannot address (unaligned data, strides
    that are not a multiple of the item size), still go to NumPy's loop. Calling it when the
    switch is already on does nothing.
    """
    with _lock:
        _core.replace_matmul_loops()
        _core.replace_f16_matmul_loop()


def restore_numpy() -> None:
    """Put NumPy's own matmul loops back. Calling it when the switch is off does nothing.

    This turns the switch off even inside a ``patched()`` block; the block then leaves it
    off when it ends.
    """
    global _was_on
    with _lock:
        _core.restore_matmul_loops()
        _core.restore_f16_matmul_loop()
        _was_on = False


@contextlib.contextmanager
def patched() -> Iterator[None]:
    """``with fastgemm.patched(): ...`` runs numpy.matmul on fastgemm inside the block.

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
        _core.replace_matmul_loops()
        _core.replace_f16_matmul_loop()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and not _was_on:
                _core.restore_matmul_loops()
                _core.restore_f16_matmul_loop()
