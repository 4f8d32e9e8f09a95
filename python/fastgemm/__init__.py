"""fastgemm: fast matrix multiplication for NumPy arrays.

import fastgemm as fg
c = fg.sgemm(a, b)                        # float32 C = A @ B
fg.sgemm(a, b, c, alpha=0.5, beta=1.0)    # BLAS semantics, C updated in place
fg.info()                                 # kernel, tile, block sizes, caches, threads
w = fg.pack(weights, trans=True)          # pack a layer's weights once; y = fg.gemm(x, w)
"""

from . import _persist, _threadpool, blas
from ._gemm import dgemm, gemm, sgemm
from ._matmul import matmul
from ._packed import PackedMatrix, pack
from ._patch import is_patched, patch_numpy, patched, restore_numpy
from ._runtime import (
    _configure_from_environment,
    available_kernels,
    get_kernel,
    get_num_threads,
    info,
    set_kernel,
    set_num_threads,
)
from ._version import __version__

_configure_from_environment()
_threadpool.register()
_persist.on_import()  # `python -m fastgemm switch on` installed the hook: the switch starts on
del _configure_from_environment

__all__ = [
    "PackedMatrix",
    "__version__",
    "available_kernels",
    "blas",
    "dgemm",
    "gemm",
    "get_kernel",
    "get_num_threads",
    "info",
    "is_patched",
    "matmul",
    "pack",
    "patch_numpy",
    "patched",
    "restore_numpy",
    "set_kernel",
    "set_num_threads",
    "sgemm",
]
