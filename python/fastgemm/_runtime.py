"""Kernel choice, thread count and the description of what runs (fastgemm.info())."""
from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version as _dist_version

from . import _core

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
    """Most threads one call may use."""
    return _core.get_num_threads()


def set_num_threads(n):
    """Let each call use up to ``n`` threads (an int >= 1)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads: n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    _core.set_num_threads(n)


def _default_threads():
    for var in ("FASTGEMM_NUM_THREADS", "OMP_NUM_THREADS"):
        raw = os.environ.get(var, "").strip()
        if not raw:
            continue
        # OMP_NUM_THREADS may be a nesting list ("4,2"); the outer level is ours.
        head = raw.split(",")[0].strip()
        if not head.isdigit() or int(head) < 1:
            raise ValueError(f"{var}={raw!r}: expected a positive integer")
        return int(head)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _configure_from_environment():
    set_num_threads(_default_threads())
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
