"""`python -m fastgemm bench`: its options, their checks and the run.

Every option is checked before a second is spent measuring (and the --json / --plot paths
are opened for writing then), so a mistake costs nothing and a finished run is never lost
to one. A wrong fastgemm result found by the guard exits with EXIT_WRONG after the table.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

EXIT_WRONG = 3


class UsageError(Exception):
    """A mistake in the command line: one line on stderr, exit code 2."""


def _dtypes(text: str) -> str:
    """--dtype: 'all' or a comma-separated list of known dtypes (kept as the string)."""
    if text == "all":
        return text
    from . import suite

    known = suite.DTYPES + suite.LOWP_DTYPES + suite.INT8_DTYPES
    items = [t.strip() for t in text.split(",")]
    bad = [t for t in items if t not in known]
    if bad or not items:
        raise argparse.ArgumentTypeError(
            f"unknown dtype {', '.join(bad) or text!r}; choose from {', '.join(known)}, all"
        )
    return ",".join(dict.fromkeys(items))


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def _positive_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"expected a positive, finite number of seconds, got {text}")
    return v


DESCRIPTION = (
    "Time fastgemm against numpy.matmul (and torch.matmul and blis when installed) in one "
    "process: the same inputs, alternating libraries, median of repeats, the same thread "
    "count for all, each result also as % of this machine's measured FMA peak. Shapes "
    "are m x n x k (C is m x n, inner dimension k)."
)


def add_arguments(b: argparse.ArgumentParser) -> None:
    """The bench command's options (argparse %-formats help strings, not the description)."""
    which = b.add_mutually_exclusive_group()
    which.add_argument(
        "--quick",
        action="store_true",
        help="a few shapes, about half a minute: 256, 1024, 2048 squares and an LLM decode step",
    )
    which.add_argument(
        "--shapes",
        metavar="LIST",
        help="comma-separated shapes instead of the suite: N (N x N x N), MxNxK, "
        "B*MxNxK (B stacked products), e.g. 512,1024x2048x256,1000*64",
    )
    which.add_argument(
        "--switch-dot",
        action="store_true",
        help="np.dot on 8, 16, 32, 64 and 512 squares with fastgemm's switch on (the fastgemm "
        "column) against NumPy's own np.dot (also the last group of the full suite)",
    )
    which.add_argument(
        "--group",
        metavar="LIST",
        help="comma-separated groups of the full suite only, e.g. linear (the fused bias + gelu_tanh "
        "layer) or small,square; --list shows each case's group",
    )
    b.add_argument(
        "--dtype",
        type=_dtypes,
        metavar="LIST",
        help="comma-separated dtypes from float32, float64, bfloat16, float16 (2-byte inputs, "
        "float32 accumulation; bfloat16 needs ml_dtypes), u8s8, s8s8 (int8 products, exact int32 C, "
        "in GOP/s: the int8 group at 512^3 and 2048^3 beside float32), or all (float32 and float64) "
        "(default: the suite's choice: float32 and float64, LLM shapes float32 only; --shapes: both)",
    )
    b.add_argument(
        "--threads",
        type=_positive_int,
        metavar="N",
        help="threads for every library (default: all CPUs this process may use)",
    )
    b.add_argument(
        "--repeats",
        type=_positive_int,
        metavar="R",
        help="timed samples per library and shape (default: adapted to the time per call, 3 to 50 within --budget)",
    )
    b.add_argument(
        "--budget",
        type=_positive_seconds,
        metavar="SECONDS",
        default=1.5,
        help="time to spend on one shape when the repeats are adapted (default 1.5)",
    )
    b.add_argument("--kernel", metavar="NAME", help="fastgemm kernel to use (default: the best this CPU runs)")
    b.add_argument(
        "--plot",
        metavar="FILE.png",
        help="GFLOP/s against size for the square shapes (needs matplotlib; no extension: .png is added)",
    )
    b.add_argument("--json", metavar="FILE", help="save the full record: machine, versions, every repeat's time")
    b.add_argument("--compare", metavar="OLD.json", help="print the change against a record saved with --json")
    b.add_argument("--list", action="store_true", help="list the shapes that would run, and exit")


def _plan(args: argparse.Namespace) -> list[Any]:
    from . import suite

    if args.shapes is not None:
        try:
            return suite.parse_shapes(args.shapes, args.dtype)
        except ValueError as e:
            raise UsageError(str(e)) from None
    if args.switch_dot:
        return suite.switch_dot_suite(args.dtype)
    if args.group is not None:
        groups = {g.strip() for g in args.group.split(",")}
        cases = suite.full_suite(args.dtype)
        unknown = groups - {c.group for c in cases}
        if unknown:
            known = ", ".join(dict.fromkeys(c.group for c in cases))
            raise UsageError(f"--group: no group {', '.join(sorted(unknown))}; the suite's groups: {known}")
        return [c for c in cases if c.group in groups]
    return suite.quick_suite(args.dtype) if args.quick else suite.full_suite(args.dtype)


class _Outputs:
    """The files the run will write, opened for writing before it starts; a file that did
    not exist before is removed again if the run ends without writing it."""

    def __init__(self) -> None:
        self.created: list[str] = []

    def claim(self, opt: str, path: str) -> None:
        _check_path(opt, path)
        existed = os.path.exists(path)
        try:
            with open(path, "a"):
                pass
        except OSError as e:
            raise UsageError(f"{opt}: cannot write {path}: {e.strerror}") from None
        if not existed:
            self.created.append(path)

    def written(self, path: str) -> None:
        if path in self.created:
            self.created.remove(path)

    def discard(self) -> None:
        for path in self.created:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self.created = []


def _check_path(opt: str, path: str) -> None:
    """A file name the run can create: not empty, not a directory, in a directory that exists."""
    if path == "":
        raise UsageError(f"{opt}: empty file name")
    if os.path.isdir(path):
        raise UsageError(f"{opt}: {path} is a directory; give a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{opt}: directory {parent} does not exist")


def _plot_path(path: str) -> str:
    """The file matplotlib writes for --plot: .png added when there is no extension (as
    savefig does), an extension matplotlib cannot write refused."""
    from . import report

    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if not ext:
        return path + ".png"
    formats = report.plot_formats()
    if ext not in formats:
        raise UsageError(
            f"--plot: matplotlib cannot write .{ext} files; use one of " + ", ".join("." + f for f in sorted(formats))
        )
    return path


def _validate(args: argparse.Namespace, cases: Sequence[Any], outputs: _Outputs) -> Any:
    """Everything that can be wrong with the request, checked before a second is spent
    measuring; returns the --compare record, if any."""
    import fastgemm as fg

    from . import report

    if not cases:
        raise UsageError("no shapes to run")
    if args.kernel is not None and args.kernel not in fg.available_kernels():
        raise UsageError(
            f"--kernel: {args.kernel!r} cannot run here; this CPU runs " + ", ".join(fg.available_kernels())
        )
    old = None
    try:
        if args.plot is not None:
            # The run's own contents first: that error does not depend on what is installed.
            if not report.has_squares(cases):
                raise ValueError("--plot draws the square shapes (m = n = k) and this run has none")
            _check_path("--plot", args.plot)
            report.require_matplotlib()
        if args.compare is not None:
            old = report.load_record(args.compare)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.json is not None:
        _check_path("--json", args.json)
    if args.plot is not None:
        args.plot = _plot_path(args.plot)
    if not args.list:
        if args.json is not None:
            outputs.claim("--json", args.json)
        if args.plot is not None:
            outputs.claim("--plot", args.plot)
    return old


def _reexec_pinned(threads: int, argv: Sequence[str]) -> int:
    """Run this same command in a child whose BLAS reads the thread count at start-up."""
    from . import machine

    sys.stderr.write(
        f"bench: threadpoolctl is not installed; restarting with OPENBLAS_NUM_THREADS="
        f"OMP_NUM_THREADS={threads} so NumPy uses {threads} thread(s) like fastgemm\n"
    )
    sys.stderr.flush()
    cmd = [sys.executable, "-m", "fastgemm", "bench", *argv]
    return subprocess.run(cmd, env=machine.reexec_env(threads)).returncode


def run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """The bench command; returns the exit code (raises UsageError for a bad request)."""
    cases = _plan(args)
    outputs = _Outputs()
    try:
        code = _run(args, argv, cases, outputs)
    finally:
        outputs.discard()  # what a failed or interrupted run claimed and never wrote
    return code


def _run(args: argparse.Namespace, argv: Sequence[str], cases: list[Any], outputs: _Outputs) -> int:
    old = _validate(args, cases, outputs)
    if args.list:
        for c in cases:
            print(f"{c.group:<8} {c.label():<26} {c.dtype}")
        print(f"{len(cases)} cases")
        return 0

    import numpy as np

    import fastgemm as fg

    from . import machine, measure as bm, report, suite
    from .progress import Progress

    threads = args.threads or machine.usable_cpus()
    if machine.needs_reexec(threads):
        outputs.discard()  # the child claims the files itself
        return _reexec_pinned(threads, argv)
    if args.kernel:
        fg.set_kernel(args.kernel)
    kernel = fg.get_kernel()

    libs, missing = bm.competitors(threads)
    pinning = machine.BlasPinning(threads)
    fg.set_num_threads(threads)  # after the pinning, which also sets every OpenMP runtime's default
    try:
        dtypes = [dt for dt in suite.DTYPES + suite.LOWP_DTYPES if any(c.dtype == dt for c in cases)]
        peaks = bm.fma_peaks(kernel, dtypes)
        desc = machine.describe(libs, missing, threads, pinning, peaks)
        date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        print(report.header(desc, date))
        if threads > desc["usable_cpus"]:
            print(f"warning:  --threads {threads} exceeds the {desc['usable_cpus']} CPUs this process may use")
        print(flush=True)

        rng = np.random.default_rng(20240501)
        progress = Progress(len(cases))
        results = []
        t0 = time.monotonic()
        for idx, case in enumerate(cases):
            progress.begin(idx, f"{case.label()} {case.dtype}")
            try:
                ops = suite.operands(case, rng)
            except MemoryError:
                raise RuntimeError(f"not enough memory for the operands of {case.label()} {case.dtype}") from None
            results.append(
                bm.run_case(case, libs, ops, args.repeats, args.budget, rng, tick=progress.draw, threads=threads)
            )
            del ops
        progress.finish()
        seconds = time.monotonic() - t0
        desc["load_average_after"] = machine.load_average()
    finally:
        pinning.release()

    names = [lib.name for lib in libs]
    print(
        report.table(
            results, names, peaks, threads, load_before=desc["load_average"], load_after=desc["load_average_after"]
        )
    )
    if old is not None:
        print()
        print(report.compare(old, results, peaks, threads, desc))
    if args.json is not None:
        report.write_record(args.json, report.make_record(desc, results, peaks, threads, list(argv), date, seconds))
        outputs.written(args.json)
        print(f"\nrecord saved to {args.json}")
    if args.plot is not None:
        report.plot(args.plot, results, names, peaks, threads, desc, date)
        outputs.written(args.plot)
        print(f"plot saved to {args.plot}")
    wrong = any(r.check and not r.check.get("ok") for r in results)
    return EXIT_WRONG if wrong else 0
