"""What a benchmark ran on: CPU, library versions, the BLAS behind NumPy, thread pinning, env."""

from __future__ import annotations

import os
import platform
import sys
from importlib.metadata import PackageNotFoundError, version as dist_version

import numpy as np

import fastgemm as fg

from .._runtime import usable_cpus

# Variables that change what a library does; the bench reports them and never alters them.
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE in particular can make NumPy pick a slower kernel.
ENV_VARS = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "MKL_ENABLE_INSTRUCTIONS",
    "BLIS_NUM_THREADS",
    "FASTGEMM_KERNEL",
    "FASTGEMM_NUM_THREADS",
    "FASTGEMM_MC",
    "FASTGEMM_KC",
    "FASTGEMM_NC",
)
SLOWING_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

# Marks the child process started to pin NumPy's BLAS threads through the environment.
REEXEC_MARK = "FASTGEMM_BENCH_PINNED"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Model", "Hardware")) and ":" in line:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def pkg_version(name):
    try:
        return dist_version(name)
    except PackageNotFoundError:
        return None


def env_settings():
    return {v: os.environ[v] for v in ENV_VARS if v in os.environ}


def blas_pools():
    """BLAS/OpenMP libraries loaded in this process with their thread counts (threadpoolctl),
    or NumPy's build configuration when threadpoolctl is not installed."""
    try:
        from threadpoolctl import threadpool_info  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        return _numpy_build_blas()
    pools = []
    for p in threadpool_info():
        pools.append(
            {
                "api": p.get("internal_api"),
                "library": os.path.basename(p.get("filepath", "")),
                "version": p.get("version"),
                "threads": p.get("num_threads"),
                "architecture": p.get("architecture"),
                "threading_layer": p.get("threading_layer"),
            }
        )
    return pools


def _numpy_build_blas():
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return [
            {
                "api": blas.get("name"),
                "version": blas.get("version"),
                "threads": None,
                "source": "numpy build configuration",
            }
        ]
    except Exception:  # older NumPy has no mode="dicts"; the versions are still recorded
        return []


class BlasPinning:
    """NumPy's (and torch's OpenMP) thread pools set to `threads` for the whole run.

    threadpoolctl changes them at run time. Without it the only lever is the environment,
    read when the BLAS loads, which happened when fastgemm imported NumPy: the CLI then runs
    the bench in a child process started with OPENBLAS/OMP/MKL_NUM_THREADS set
    (see needs_reexec), and this class records that."""

    def __init__(self, threads):
        self.threads = threads
        self._limiter = None
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            got = ", ".join(f"{v}={os.environ.get(v)}" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"))
            self.how = f"environment at start-up ({got}); threadpoolctl not installed"
            return
        self._limiter = threadpool_limits(limits=threads)
        self.how = "threadpoolctl"

    def release(self):
        if self._limiter is not None:
            self._limiter.restore_original_limits()
            self._limiter = None


def have_threadpoolctl():
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        return False
    return True


def needs_reexec(threads):
    """True when NumPy's BLAS threads can only be pinned by restarting with env set."""
    if have_threadpoolctl() or os.environ.get(REEXEC_MARK):
        return False
    # OpenBLAS reads OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS; MKL reads MKL_NUM_THREADS, else OMP_.
    given = [os.environ[v] for v in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS") if v in os.environ]
    pinned = ("OPENBLAS_NUM_THREADS" in os.environ or "OMP_NUM_THREADS" in os.environ) and all(
        g.strip() == str(threads) for g in given
    )
    return not pinned


def reexec_env(threads):
    env = dict(os.environ)
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[v] = str(threads)
    env[REEXEC_MARK] = "1"
    return env


def load_average() -> float | None:
    """The 1-minute load average, or None where the OS has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def describe(libs, missing, threads, pinning, peaks):
    info = fg.info()
    versions = {
        "fastgemm": fg.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    for lib in libs:
        if lib.name in ("torch", "blis"):
            versions[lib.name] = pkg_version(lib.name)
    if any(lib.name == "torch" for lib in libs):
        import torch  # type: ignore[import-not-found, import-untyped, unused-ignore]

        versions["torch_blas"] = "MKL" if torch.backends.mkl.is_available() else "not MKL"
    return {
        "cpu": cpu_model(),
        "machine": platform.machine(),
        "system": f"{platform.system()} {platform.release()}",
        "usable_cpus": usable_cpus(),
        "fastgemm": info,
        "versions": versions,
        "blas": blas_pools(),
        "threads": threads,
        "pinning": pinning.how,
        "env": env_settings(),
        "missing": missing,
        "peak_gflops_per_core": peaks,
        "executable": sys.executable,
        "load_average": load_average(),
    }
