"""The switch's bfloat16 part: np.matmul / `@` on two ml_dtypes.bfloat16 operands on fastgemm.

NumPy has no bfloat16 matmul loop to replace: without fastgemm it casts both operands to
float32 and runs its float32 loop. fastgemm registers its own (bfloat16, bfloat16) -> float32
loop on np.matmul (csrc/bindings/bf16_loop.cpp) once, the first time the switch is on while
ml_dtypes is loaded. NumPy cannot remove a loop again, so the loop follows the switch at every
call: on, it runs fastgemm's bfloat16 product; off, NumPy casts to float32 and the loop runs
NumPy's own float32 loop, giving NumPy's bits. ml_dtypes is never imported here: when the
switch turns on before ml_dtypes is loaded, a finder waits for its import and registers then.
See docs/DESIGN.md, "Low-precision products".
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from typing import Any

import numpy as np

from . import _core
from ._lowp import is_bfloat16


def loaded_dtype() -> np.dtype[Any] | None:
    """ml_dtypes' bfloat16 dtype when ml_dtypes is loaded, else None (nothing is imported)."""
    scalar = getattr(sys.modules.get("ml_dtypes"), "bfloat16", None)
    if scalar is None:
        return None
    dt = np.dtype(scalar)
    return dt if is_bfloat16(dt) else None


class _AfterImport:
    """A sys.meta_path finder that runs `then` once ml_dtypes has been imported (its loader's
    exec_module wrapped), then steps aside for good."""

    then: Callable[[], None] | None = None
    done = False

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name != "ml_dtypes" or cls.done:
            return None
        cls.done = True  # from here on the other finders answer, this lookup included
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            if cls.then is not None:
                cls.then()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def turn_on(after_import: Callable[[], None]) -> None:
    """The bfloat16 part on: registered now if ml_dtypes is loaded, else `after_import` (which
    calls register_if_on) is run once ml_dtypes has been imported."""
    _core.set_bf16_matmul_loop_on(True)
    if not register_if_on() and not _AfterImport.done and _AfterImport not in sys.meta_path:
        _AfterImport.then = after_import
        sys.meta_path.insert(0, _AfterImport)


def register_if_on() -> bool:
    """Registers the loop (once per process) when the switch is on and ml_dtypes is loaded;
    True when it is registered. False on NumPy 1.x: bfloat16 keeps NumPy's cast to float32."""
    dt = loaded_dtype()
    if dt is None or not _core.bf16_matmul_loop_on():
        return bool(_core.bf16_matmul_loop_registered())
    return bool(_core.register_bf16_matmul_loop(dt))


def turn_off() -> None:
    _core.set_bf16_matmul_loop_on(False)
