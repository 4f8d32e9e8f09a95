"""threadpoolctl sees and limits fastgemm like any other BLAS.

threadpoolctl walks the shared libraries loaded in the process and hands each one whose file
name starts with a registered prefix to that prefix's controller. fastgemm's library is the
extension module ``fastgemm/_core.<abi tag>.so``, so the prefix is ``_core``; other packages
ship modules called ``_core`` too, so the controller also requires the
``fastgemm_get_num_threads`` symbol, which only fastgemm exports (threading.cpp).
threadpool_limits({key: n}) matches a key against a library's file path, prefix or user_api,
never its internal_api; the controller therefore reports its prefix as "fastgemm", so the
name users know works as a key: threadpool_limits({"fastgemm": 1}).

A limit is a maximum, so the controller clamps it into fastgemm's range (1 to
fastgemm's thread limit) instead of raising: threadpool_limits() changes the libraries one
after the other in load order, and an exception from one leaves the libraries before it
changed with nothing to restore them (threadpool_limits(0) used to leave libgomp at 1). libgomp
treats a limit below 1 as 1 too. Only a limit that is not an integer raises (TypeError), and
it does so before fastgemm's count changes; the C function takes a C int, so the value is
checked in Python, where 2**32 + 1 cannot wrap to 1.
threadpoolctl is optional: without it (or with a version before ``register``) nothing happens.
"""

from __future__ import annotations

import ctypes
import operator
from typing import Any

from ._runtime import max_threads
from ._version import __version__


def clamp_limit(num_threads: Any) -> int:
    """The thread count fastgemm applies for a threadpoolctl limit ``num_threads``."""
    if isinstance(num_threads, bool):
        raise TypeError(f"fastgemm: a thread limit must be an int, got {num_threads!r}")
    try:
        n = operator.index(num_threads)
    except TypeError:
        raise TypeError(f"fastgemm: a thread limit must be an int, got {type(num_threads).__name__}") from None
    return min(max(n, 1), max_threads())


def register() -> None:
    """Make threadpoolctl.threadpool_info() list fastgemm and threadpool_limits() limit it."""
    try:
        import threadpoolctl  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return
    if not hasattr(threadpoolctl, "register") or not hasattr(threadpoolctl, "LibController"):
        return

    class FastgemmController(threadpoolctl.LibController):  # type: ignore[misc, name-defined, unused-ignore]
        user_api = "blas"
        internal_api = "fastgemm"
        filename_prefixes = ("_core",)
        check_symbols = ("fastgemm_get_num_threads", "fastgemm_set_num_threads")

        def set_additional_attributes(self) -> None:
            self.prefix = "fastgemm"

        def get_num_threads(self) -> int | None:
            get = getattr(self.dynlib, "fastgemm_get_num_threads", None)
            if get is None:  # another package's _core module, about to be rejected
                return None
            get.restype = ctypes.c_int
            return int(get())

        def set_num_threads(self, num_threads: Any) -> None:
            n = clamp_limit(num_threads)  # before anything changes
            set_ = self.dynlib.fastgemm_set_num_threads
            set_.argtypes = [ctypes.c_int]
            set_.restype = ctypes.c_int
            if set_(n) != 0:
                raise ValueError(f"fastgemm: number of threads must be >= 1, got {num_threads}")

        def get_version(self) -> str | None:
            if not hasattr(self.dynlib, "fastgemm_get_num_threads"):
                return None
            return __version__

    threadpoolctl.register(FastgemmController)
