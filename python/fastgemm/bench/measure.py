"""Measuring: the libraries compared, the timing protocol, the FMA peak and the correctness guard.

Protocol (docs/DESIGN.md, "Measuring protocol"): one process, the same inputs for every library, a warm-up
call each, then samples taken in turn A B C A B C ..., the median sample per library. Every
library runs on the same thread count. A sample times enough back-to-back calls to last a
couple of milliseconds, so the clock's resolution and call overhead don't dominate small
shapes; the number of samples adapts so a shape costs about `budget` seconds.

With more than one thread, each sample is preceded by SETTLE_S seconds of untimed calls of
the same library: a BLAS's worker threads keep spinning on the cores for a while after its
call returns (OpenBLAS's for about 2^28 cycles), and a library timed in that window runs its
own threads on cores that are not free. Measured at 2048^3 float32, 2 threads: fastgemm 130
GFLOP/s when timed right after NumPy, 203 after the other library's threads had gone idle,
while NumPy's own figure (192) did not change. Running rather than sleeping through that
time keeps this library's threads and cores awake: after an idle pause, waking a worker
(on this VM, an idle virtual CPU) made small products erratic for every library.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from dataclasses import dataclass, field

import numpy as np

import fastgemm as fg

from .. import _core, _numpy_funcs
from .suite import INT8_DTYPES, LOWP_DTYPES, PACKED_LAYOUT, SWITCH_DOT, Case, linear_bias, linear_numpy

MIN_SAMPLE_S = 2e-3
# At least 5 rounds: a median of 3 let one slow minute of the host set a large product's ratio.
MIN_REPEATS, MAX_REPEATS = 5, 50
PEAK_SECONDS = 0.3
SETTLE_S = 0.15


# NumPy's float16 loop takes ~0.3 s at 512^3 and minutes at 2048^3; its integer loops likewise.
NUMPY_F16_MAX_FLOPS = 2 * 512**3


# torch's bfloat16 / float16 CPU matmul without AVX512_BF16 ran ~0.4 GFLOP/s on Zen 3 (torch
# 2.13, 1 thread, 256^3 .. 512^3; 0.1 at 1 x 4096 x 4096): 2048^3 would take ~40 s a call.
TORCH_LOWP_SLOW_MAX_FLOPS = 2 * 512**3


class Unsupported(Exception):
    """The library cannot run this case (its reason is shown in the table's notes)."""


# --- the libraries -------------------------------------------------------------------------


class FastGemm:
    name = "fastgemm"

    def __init__(self, threads):
        fg.set_num_threads(threads)

    def prepare(self, case, a, b):
        if case.group == SWITCH_DOT:  # the object np.dot is while the switch is on
            dot = _numpy_funcs.dot
            return lambda: dot(a, b)
        if case.layout == PACKED_LAYOUT:  # packed once, before timing
            b = fg.pack(b)
        if case.activation:
            bias, act = linear_bias(case), case.activation
            return lambda: fg.gemm(a, b, bias=bias, activation=act)
        if case.dtype in INT8_DTYPES:  # exact int32 C
            return lambda: fg.gemm(a, b)
        if case.batch or case.dtype in LOWP_DTYPES:  # 2-byte: NumPy's result dtype, as np.matmul
            return lambda: fg.matmul(a, b)
        gemm = fg.sgemm if case.dtype == "float32" else fg.dgemm
        return lambda: gemm(a, b)


class NumPy:
    name = "numpy"

    def __init__(self, threads):
        self.threads = threads

    def prepare(self, case, a, b):
        if case.dtype == "float16" and case.flops > NUMPY_F16_MAX_FLOPS:
            raise Unsupported(
                "NumPy's float16 matmul is a scalar loop (~0.5 GFLOP/s): not timed above 512^3; "
                "time 512^3 or smaller and scale"
            )
        if case.group == SWITCH_DOT:  # NumPy's own np.dot, whether or not the switch is on now
            dot = _numpy_funcs.original("dot")
            return lambda: dot(a, b)
        if case.activation:
            bias = linear_bias(case)
            return lambda: linear_numpy(a, b, bias)
        if case.dtype in INT8_DTYPES:
            if case.flops > NUMPY_F16_MAX_FLOPS:
                raise Unsupported("NumPy's integer matmul is a scalar loop (no BLAS): not timed above 512^3")
            return lambda: np.matmul(a, b, dtype=np.int32)
        return lambda: np.matmul(a, b)


def _numpy_only(case):
    if case.group == SWITCH_DOT:
        raise Unsupported("switch dot compares np.dot with fastgemm's switch on and off")


class Torch:
    name = "torch"

    def __init__(self, threads):
        import torch  # type: ignore[import-not-found, import-untyped, unused-ignore]

        self.torch = torch
        torch.set_num_threads(threads)

    def _tensor(self, x):
        # torch knows no ml_dtypes bfloat16: the same bits through a uint16 view, read as its own
        # bfloat16 (torch's bf16 @ bf16 gives bfloat16, rounded once from its accumulators).
        if x.dtype.itemsize == 2 and x.dtype.kind == "V":
            return self.torch.from_numpy(x.view(np.uint16)).view(self.torch.bfloat16)
        return self.torch.from_numpy(x)

    def prepare(self, case, a, b):
        _numpy_only(case)
        slow = case.dtype in LOWP_DTYPES and "avx512_bf16" not in _core.cpu_features()
        if slow and case.flops > TORCH_LOWP_SLOW_MAX_FLOPS:
            raise Unsupported(
                "torch's 2-byte CPU matmul without AVX512_BF16 is a slow loop (~0.4 GFLOP/s): not timed above 512^3"
            )
        try:
            ta, tb = self._tensor(a), self._tensor(b)
        except (TypeError, ValueError, RuntimeError) as e:
            raise Unsupported(f"torch.from_numpy refused the operands: {e}") from None
        if case.activation:
            # A Linear layer's weight is stored out x in (W.T, contiguous), its bias a tensor.
            wt = self.torch.from_numpy(np.ascontiguousarray(b.T))
            bt = self.torch.from_numpy(linear_bias(case))
            gelu, linear = self.torch.nn.functional.gelu, self.torch.nn.functional.linear
            return lambda: gelu(linear(ta, wt, bt), approximate="tanh")
        if case.dtype in INT8_DTYPES:
            # torch._int_mm: int8 x int8 -> int32; it has no uint8 A form
            if case.dtype != "s8s8":
                raise Unsupported("torch._int_mm multiplies int8 by int8 only")
            int_mm = self.torch._int_mm
            return lambda: int_mm(ta, tb)
        matmul = self.torch.matmul
        return lambda: matmul(ta, tb)


class Blis:
    """cython-blis: the BLIS library as the PyPI package `blis` ships it (one thread)."""

    name = "blis"

    def __init__(self, threads):
        from blis.py import gemm  # type: ignore[import-not-found, import-untyped, unused-ignore]

        self.gemm = gemm
        self.threads = threads

    @staticmethod
    def _as_op(x):
        # blis.py.gemm reads C-ordered memory only; a transposed view is passed as its
        # C-ordered base with the transpose flag, which is how a BLAS user would call it.
        if x.flags.c_contiguous:
            return x, False
        if x.T.flags.c_contiguous:
            return x.T, True
        raise Unsupported("blis.py.gemm needs C-ordered or transposed operands")

    def prepare(self, case, a, b):
        _numpy_only(case)
        if case.batch:
            raise Unsupported("blis.py.gemm has no batched form")
        if case.activation:
            raise Unsupported("blis.py.gemm has no bias or activation")
        if self.threads != 1:
            raise Unsupported("the blis wheel is single-threaded; compared at --threads 1 only")
        (a0, ta), (b0, tb) = self._as_op(a), self._as_op(b)
        gemm = self.gemm
        return lambda: gemm(a0, b0, trans1=ta, trans2=tb, beta=0.0)


OPTIONAL = (("torch", Torch), ("blis", Blis))


def competitors(threads):
    """fastgemm and numpy always; torch and blis when importable. -> (libs, missing-notes)."""
    libs = [FastGemm(threads), NumPy(threads)]
    missing = []
    for name, cls in OPTIONAL:
        try:
            libs.append(cls(threads))
        except ImportError:
            missing.append(name)
    return libs, missing


# --- the run -------------------------------------------------------------------------------


@dataclass
class LibResult:
    times: list = field(default_factory=list)  # seconds per call, one per sample
    number: int = 0  # calls per sample
    error: str = ""  # why this library has no result for the case

    @property
    def median(self):
        return statistics.median(self.times) if self.times else None


@dataclass
class CaseResult:
    case: Case
    libs: dict  # name -> LibResult
    check: dict  # the correctness guard's verdict on fastgemm's result
    skipped: str = ""

    def gflops(self, name):
        r = self.libs.get(name)
        if r is None or r.median is None:
            return None
        return self.case.flops / r.median / 1e9


def _timed(fn, number, clock=time.perf_counter):
    t0 = clock()
    for _ in range(number):
        fn()
    return (clock() - t0) / number


def cpu_time_medians(fns, number, rounds):
    """Median seconds per call of each callable in `fns` (name -> fn) in thread CPU time: `rounds`
    rounds, each timing `number` calls of every fn in turn (the bench/ scripts' protocol on a
    shared machine, where wall time would count other processes' time too)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(_timed(fn, number, time.thread_time))
    return {name: statistics.median(v) for name, v in times.items()}


def _calibrate(fn):
    """Seconds per call, from enough calls to outlast the clock's resolution."""
    n = 1
    while True:
        t = _timed(fn, n)
        if t * n >= MIN_SAMPLE_S / 10 or n >= 10**5:
            return max(t, 1e-9)
        n *= 10


def _settle(fn, seconds):
    """Call fn, untimed, for `seconds`: other libraries' threads go idle meanwhile."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        fn()


def measure(fns, repeats=None, budget=1.5, tick=None, settle=0.0):
    """Time each callable in `fns` (name -> fn) as the module docstring says; `settle`
    seconds of untimed calls before every sample (and calibration)."""
    results = {name: LibResult() for name in fns}
    per_call = {}
    for name, fn in fns.items():
        _timed(fn, 1)  # warm-up: page faults, packing buffers, thread start-up
        _settle(fn, settle)
        per_call[name] = _calibrate(fn)
        results[name].number = max(1, math.ceil(MIN_SAMPLE_S / per_call[name]))
    if repeats is None:
        round_s = sum(per_call[n] * results[n].number + settle for n in fns)
        repeats = min(MAX_REPEATS, max(MIN_REPEATS, int(budget / round_s)))
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        for r in range(repeats):
            for name, fn in fns.items():
                _settle(fn, settle)
                results[name].times.append(_timed(fn, results[name].number))
            if tick:
                tick((r + 1) / repeats)
    finally:
        if gc_was_on:
            gc.enable()
    return results


def check_result(case, a, b, c, rng):
    """Is fastgemm's C within the K-scaled bound of a float64 reference (docs/DESIGN.md, "Numerics")?

    Big products are checked on a sample of rows (the first and last tile rows, where edge
    handling lives, plus random ones) so the guard costs a small part of the measurement.
    """
    if case.dtype in INT8_DTYPES:
        return _check_exact(case, a, b, np.asarray(c), rng)
    f32 = case.dtype != "float64"  # 2-byte inputs accumulate in float32
    # float64 is checked against numpy's float64 product, which carries an error of its own
    # of the same order, hence the larger constant.
    const, u = (2.0, 2.0**-24) if f32 else (4.0, 2.0**-53)
    # A float16 result is rounded once more (bfloat16 products give float32).
    u_out = 2.0**-11 if case.dtype == "float16" else 0.0
    if case.batch:
        idx = sorted({0, case.batch // 2, case.batch - 1})
        a, b, c = a[idx], b[idx], c[idx]
    else:
        a, b, c = a[None], b[None], c[None]
    m = case.m
    if m > 64:
        rows = np.unique(np.concatenate([np.arange(16), np.arange(m - 16, m), rng.integers(0, m, 32)]))
        a, c = a[:, rows], c[:, rows]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = np.matmul(a64, b64)
    bound = const * case.k * u * np.matmul(np.abs(a64), np.abs(b64)) + u_out * np.abs(ref)
    if case.activation:
        # gelu_tanh (the suite's one activation) of z = product + bias: |gelu_tanh'| < 1.2, the
        # bias add's rounding, the activation's few ulps with room for the float64 reference's.
        z = ref + linear_bias(case).astype(np.float64)
        ref = 0.5 * z * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (z + 0.044715 * z**3)))
        bound = 1.2 * (bound + u * np.abs(z)) + 16 * u * np.abs(ref) + np.finfo(np.float32).tiny
    err = np.abs(c.astype(np.float64) - ref)
    finite = bool(np.isfinite(c).all())
    worst = float(np.max(err / np.maximum(bound, np.finfo(np.float64).tiny))) if err.size else 0.0
    return {"ok": finite and bool((err <= bound).all()), "finite": finite, "worst_err_over_bound": worst}


def _check_exact(case, a, b, c, rng):
    """An int8 product's C against the int64 product of sampled rows (exact below K = 65793)."""
    m = case.m
    rows = np.unique(np.concatenate([np.arange(min(m, 16)), np.arange(max(0, m - 16), m), rng.integers(0, m, 32)]))
    ref = a[rows].astype(np.int64) @ b.astype(np.int64)
    ok = c.dtype == np.int32 and bool((c[rows].astype(np.int64) == ref).all())
    return {"ok": ok, "finite": True, "worst_err_over_bound": 0.0 if ok else float("inf")}


def run_case(case, libs, operands, repeats, budget, rng, tick=None, threads=1):
    a, b = operands
    fns, results = {}, {}
    for lib in libs:
        try:
            # fastgemm reads a packed W from its own store: the others get their own copy of W
            # too, or they would find it in cache after each other's samples where the packed
            # store was evicted (1 x 4096 x 4096 float32: 0.65x NumPy shared, 1.17x own copies).
            own_b = case.layout == PACKED_LAYOUT and lib.name != "fastgemm"
            fn = lib.prepare(case, a, b.copy() if own_b else b)
            if lib.name != "fastgemm":
                fn()  # a competitor that cannot do this case is a note, not the end of the run
            fns[lib.name] = fn
        except Unsupported as e:
            results[lib.name] = LibResult(error=str(e))
        except Exception as e:
            if lib.name == "fastgemm":
                raise
            results[lib.name] = LibResult(error=f"failed: {type(e).__name__}: {e}")
    if "fastgemm" not in fns:
        return CaseResult(case, results, {}, skipped=results["fastgemm"].error)
    # The guard runs once, before any timing: a fast wrong answer is worthless.
    check = check_result(case, a, b, fns["fastgemm"](), rng)
    measured = measure(fns, repeats=repeats, budget=budget, tick=tick, settle=SETTLE_S if threads > 1 else 0.0)
    results.update(measured)
    return CaseResult(case, {lib.name: results[lib.name] for lib in libs}, check)


def fma_peaks(kernel, dtypes):
    """GFLOP/s of one core's FMA loop for `kernel`, per dtype (measured once per run); bfloat16
    on a kernel with pair kernels: its vdpbf16ps loop."""

    def peak(dt):
        if dt == "bfloat16" and _core.lowp_info(kernel)["bf16_pairs"] is not None:
            return _core.bf16_pair_peak(kernel, PEAK_SECONDS)
        return _core.fma_peak(kernel, dt == "float64", PEAK_SECONDS)

    return {dt: peak(dt) for dt in dtypes}
