"""Kernel choice, thread count and the description of what runs (fastgemm.info())."""
from __future__ import annotations

import operator
import os
import warnings
from importlib.metadata import PackageNotFoundError, version as _dist_version

import numpy as np

from . import _core, _threadpool

try:
    __version__ = _dist_version("fastgemm")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"


def available_kernels():
    """Names of the kernels this CPU and OS can run, best first."""
    return list(_core.runnable_kernels())


def get_kernel():
    """Name of the kernel in use."""
    return _core.active_kernel()


def set_kernel(name):
    """Use kernel ``name`` (one of :func:`available_kernels`) for every following call.

    Raises ValueError for a name this build does not have and RuntimeError for a kernel
    this CPU or OS cannot run.
    """
    if not isinstance(name, str):
        raise TypeError(f"set_kernel: name must be a str, got {type(name).__name__}")
    _core.set_kernel(name)


def get_num_threads():
    """Most threads one call may use.

    The default comes from ``FASTGEMM_NUM_THREADS``, else ``OMP_NUM_THREADS`` (its first
    entry), else the number of CPUs this process may run on (its affinity mask). A process
    created by ``os.fork()`` starts at 1 (see :func:`set_num_threads`).
    """
    return _core.get_num_threads()


def set_num_threads(n):
    """Let each call use up to ``n`` threads (an int >= 1).

    Small products run on fewer threads than this, and a call made inside another OpenMP
    parallel region runs on one. In a child created by ``os.fork()`` fastgemm starts on one
    thread; if the parent had already run fastgemm on several, GNU OpenMP cannot start
    threads in the child at all (it would hang), so there the limit stays 1 and this warns.
    ``threadpoolctl.threadpool_limits`` sets the same limit.
    """
    if isinstance(n, (bool, np.bool_)):
        raise TypeError("set_num_threads: n must be an int, got bool")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"set_num_threads: n must be an int, got {type(n).__name__}") from None
    if n < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    if n > _MAX_THREADS:
        raise ValueError(f"set_num_threads: n must be <= {_MAX_THREADS}, got {n}")
    _core.set_num_threads(n)
    if n > 1 and _core.get_num_threads() == 1:
        warnings.warn(
            "fastgemm: this process was forked after fastgemm ran on several threads; GNU OpenMP "
            "cannot start threads in it, so fastgemm stays on 1 thread",
            RuntimeWarning,
            stacklevel=2,
        )


# The core takes a C int; far more threads than any machine has is a typo, not a request.
_MAX_THREADS = 1 << 16


def _parse_thread_count(var, raw):
    """The positive thread count in environment variable ``var``, or None with a warning."""
    # OMP_NUM_THREADS may be a nesting list ("4,2"); the outer level is ours.
    head = raw.split(",")[0].strip()
    if head.isdecimal() and 1 <= int(head) <= _MAX_THREADS:
        return int(head)
    warnings.warn(
        f"fastgemm: ignoring {var}={raw!r}, expected a positive integer",
        RuntimeWarning,
        stacklevel=4,
    )
    return None


def _default_threads():
    # A bad value warns and falls through to the next source instead of failing the import:
    # OMP_NUM_THREADS is shared with every OpenMP library in the process, and a program
    # that merely imports fastgemm through another package should still start.
    for var in ("FASTGEMM_NUM_THREADS", "OMP_NUM_THREADS"):
        raw = os.environ.get(var, "").strip()
        if raw:
            n = _parse_thread_count(var, raw)
            if n is not None:
                return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _configure_from_environment():
    set_num_threads(_default_threads())
    _threadpool.register()
    forced = os.environ.get("FASTGEMM_KERNEL", "").strip()
    if forced:
        try:
            set_kernel(forced)
        except (ValueError, RuntimeError) as e:
            raise RuntimeError(f"FASTGEMM_KERNEL={forced!r}: {e}") from None


def info():
    """What fastgemm runs on this machine: kernel, tile and block sizes, caches, threads."""
    name = get_kernel()
    k = _core.kernel_info(name)
    f32 = k["float32"]
    return {
        "version": __version__,
        "kernel": name,
        "isa": k["isa"],
        "mr": f32["mr"],
        "nr": f32["nr"],
        "mc": f32["mc"],
        "kc": f32["kc"],
        "nc": f32["nc"],
        "float64": dict(k["float64"]),
        "caches": _core.caches(),
        "cpu_features": list(_core.cpu_features()),
        "kernels": available_kernels(),
        "threads": get_num_threads(),
        "openmp": _core.openmp_runtime(),
    }
