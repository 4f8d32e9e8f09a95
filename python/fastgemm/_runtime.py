"""Kernel choice, thread count, the CPUs this process may use and fastgemm.info()."""

from __future__ import annotations

import operator
import os
import warnings
from typing import Any

import numpy as np

from . import _core
from ._version import __version__


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask), else the machine's CPU count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def max_threads() -> int:
    """The most threads :func:`set_num_threads` accepts on this machine.

    Far more threads than CPUs only costs time and per-thread scratch, so the core caps the
    count at a multiple of the usable CPUs: 4 x the usable CPUs, at least 8.
    """
    return int(_core.max_thread_limit())


def available_kernels() -> list[str]:
    """Names of the kernels this CPU and OS can run, best first."""
    return list(_core.runnable_kernels())


def get_kernel() -> str:
    """Name of the kernel in use."""
    return str(_core.active_kernel())


def set_kernel(name: str) -> None:
    """Use kernel ``name`` (one of :func:`available_kernels`) for every following call.

    Raises TypeError for a name that is not a str, ValueError for a name this build does
    not have and RuntimeError for a kernel this CPU or OS cannot run.
    """
    if not isinstance(name, str):
        raise TypeError(f"set_kernel: name must be a str, got {type(name).__name__}")
    _core.set_kernel(name)


def get_num_threads() -> int:
    """Most threads one call may use.

    The default comes from ``FASTGEMM_NUM_THREADS``, else ``OMP_NUM_THREADS`` (its first
    entry), else the number of CPUs this process may run on (its affinity mask). A process
    created by ``os.fork()`` starts at 1 (see :func:`set_num_threads`).
    """
    return int(_core.get_num_threads())


def set_num_threads(n: int) -> None:
    """Let each call use up to ``n`` threads (an int from 1 to :func:`max_threads`).

    Small products run on fewer threads than this, and a call made while another thread's
    call holds fastgemm's workers runs on its own thread. In a child created by ``os.fork()``
    fastgemm starts on one thread; this raises the limit there as anywhere (the child starts
    workers of its own). ``threadpoolctl.threadpool_limits`` sets the same limit (clamped to
    that range there).

    Raises TypeError for a non-integer (bool included) and ValueError outside 1..max.
    """
    if isinstance(n, (bool, np.bool_)):
        raise TypeError("set_num_threads: n must be an int, got bool")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"set_num_threads: n must be an int, got {type(n).__name__}") from None
    if n < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    top = max_threads()
    if n > top:
        raise ValueError(
            f"set_num_threads: n must be <= {top} (a multiple of the {usable_cpus()} CPUs this "
            f"process may use), got {n}"
        )
    _core.set_num_threads(n)


# A bad environment variable warns and falls back instead of failing the import: these
# variables (OMP_NUM_THREADS above all) are shared with other libraries, and a program that
# merely imports fastgemm through another package should still start. `depth` is the number
# of fastgemm frames between the caller and fastgemm/__init__.py, so the warning points at
# the `import fastgemm` that read the variable.


def _env_warning(message: str, depth: int) -> None:
    warnings.warn(f"fastgemm: {message}", RuntimeWarning, stacklevel=depth + 3)


def _parse_thread_count(var: str, raw: str) -> int | None:
    """The thread count in environment variable ``var``: None (after a warning) when it is
    not a positive integer, the limit (after a warning) when it is above it."""
    # OMP_NUM_THREADS may be a nesting list ("4,2"); the outer level is ours.
    head = raw.split(",")[0].strip()
    if not head.isdecimal() or int(head) < 1:
        _env_warning(f"ignoring {var}={raw!r}, expected a positive integer", 2)
        return None
    n, top = int(head), max_threads()
    if n > top:
        _env_warning(f"{var}={raw!r} is above the limit of {top} threads on this machine; using {top}", 2)
        return top
    return n


def _default_threads() -> int:
    for var in ("FASTGEMM_NUM_THREADS", "OMP_NUM_THREADS"):
        raw = os.environ.get(var, "").strip()
        if raw:
            n = _parse_thread_count(var, raw)
            if n is not None:
                return n
    return min(usable_cpus(), max_threads())


def _configure_from_environment() -> None:
    """Apply FASTGEMM_NUM_THREADS / OMP_NUM_THREADS and FASTGEMM_KERNEL, and report the
    FASTGEMM_KC/MC/NC values the core ignored: every bad value is one RuntimeWarning."""
    set_num_threads(_default_threads())
    forced = os.environ.get("FASTGEMM_KERNEL", "").strip()
    if forced:
        try:
            set_kernel(forced)
        except (ValueError, RuntimeError) as e:
            _env_warning(f"ignoring FASTGEMM_KERNEL={forced!r} ({e}); using {get_kernel()}", 0)
    for var, raw, reason in _core.rejected_env_settings():
        _env_warning(f"ignoring {var}={raw!r}: {reason}", 0)


def info() -> dict[str, Any]:
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
        "thread_pool": _core.thread_pool_policy(),
        "low_precision": _low_precision(name, f32["mr"], f32["nr"]),
        "small_tails": _small_tails(),
    }


def _small_tails() -> str:
    """How the small kernels end a pass with part of a vector after whole ones, and why."""
    w = _core.fma_widths()
    if not w["half"]:
        return "masked whole vectors (no kernel here has half-width registers)"
    how = "a pass in half-width vectors" if w["half_tails"] else "a masked whole vector"
    return (
        f"part of a vector after whole ones: {how} (float32 FMAs measured at {w['whole']:.0f} GFLOP/s "
        f'in whole vectors, {w["half"]:.0f} in half-width ones; docs/DESIGN.md, "Half-width tails")'
    )


# How each kernel set widens 2-byte inputs (docs/DESIGN.md, "Low-precision products").
_WIDEN = {
    "avx512bf16": "bfloat16 by a 16-bit shift, float16 by vcvtph2ps",
    "avx512": "bfloat16 by a 16-bit shift, float16 by vcvtph2ps",
    "avx2": "bfloat16 by a 16-bit shift, float16 by F16C vcvtph2ps",
    "neon": "bfloat16 by a 16-bit shift, float16 by fcvtl",
    "generic": "bfloat16 by a 16-bit shift, float16 in portable C++",
}


def _low_precision(kernel: str, mr: int, nr: int) -> str:
    """One line on the bfloat16 / float16 path of ``kernel``."""
    how = _WIDEN.get(kernel, "converted in portable C++")
    pairs = _core.lowp_info(kernel)["bf16_pairs"]
    line = (
        f"bfloat16, float16: widened to float32 while packing ({how}), float32 tile "
        f"{mr} x {nr}, so its peak is the float32 FMA peak; matrix-vector products "
        "stream the 2-byte matrix"
    )
    if pairs is None:
        return line + "; no AVX512_BF16 (vdpbf16ps) kernel on this set"
    return line + (
        f"; bfloat16 products above 64^3 run on vdpbf16ps (AVX512_BF16): pairs along k, "
        f"tile {pairs['mr']} x {pairs['nr']}, twice the float32 multiply-adds per instruction"
    )
