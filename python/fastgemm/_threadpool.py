"""threadpoolctl sees and limits fastgemm like any other BLAS.

threadpoolctl walks the shared libraries loaded in the process and hands each one whose file
name starts with a registered prefix to that prefix's controller. fastgemm's library is the
extension module ``fastgemm/_core.<abi tag>.so``, so the prefix is ``_core``; other packages
ship modules called ``_core`` too, so the controller also requires the
``fastgemm_get_num_threads`` symbol, which only fastgemm exports (threading.cpp).
threadpool_limits({key: n}) matches a key against a library's file path, prefix or user_api,
never its internal_api; the controller therefore reports its prefix as "fastgemm", so the
name users know works as a key: threadpool_limits({"fastgemm": 1}).
threadpoolctl is optional: without it (or with a version before ``register``) nothing happens.
"""
from __future__ import annotations

import ctypes


def register():
    """Make threadpoolctl.threadpool_info() list fastgemm and threadpool_limits() limit it."""
    try:
        import threadpoolctl
    except ImportError:
        return
    if not hasattr(threadpoolctl, "register") or not hasattr(threadpoolctl, "LibController"):
        return

    class FastgemmController(threadpoolctl.LibController):
        user_api = "blas"
        internal_api = "fastgemm"
        filename_prefixes = ("_core",)
        check_symbols = ("fastgemm_get_num_threads", "fastgemm_set_num_threads")

        def set_additional_attributes(self):
            self.prefix = "fastgemm"

        def get_num_threads(self):
            get = getattr(self.dynlib, "fastgemm_get_num_threads", None)
            if get is None:  # another package's _core module, about to be rejected
                return None
            get.restype = ctypes.c_int
            return get()

        def set_num_threads(self, num_threads):
            set_ = self.dynlib.fastgemm_set_num_threads
            set_.argtypes = [ctypes.c_int]
            set_.restype = ctypes.c_int
            if set_(int(num_threads)) != 0:
                raise ValueError(f"fastgemm: number of threads must be >= 1, got {num_threads}")

        def get_version(self):
            if not hasattr(self.dynlib, "fastgemm_get_num_threads"):
                return None
            from ._runtime import __version__

            return __version__

    threadpoolctl.register(FastgemmController)
