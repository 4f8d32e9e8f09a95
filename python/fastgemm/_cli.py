"""`python -m fastgemm bench|info`: argument parsing, start-up order and exit codes.

Every user mistake ends in one line on stderr and exit code 2; a wrong fastgemm result found
by the benchmark's guard exits with 3 after printing the table; nothing ends in a traceback
(set FASTGEMM_DEBUG=1 to see one).
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time

EXIT_USAGE, EXIT_FAILED, EXIT_WRONG = 2, 1, 3


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def _positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return v


def build_parser():
    p = _Parser(prog="python -m fastgemm", description="fastgemm command line: benchmark and machine info.")
    sub = p.add_subparsers(dest="command", metavar="{bench,info,run}", parser_class=_Parser)
    b = sub.add_parser(
        "bench",
        prog="python -m fastgemm bench",
        help="time fastgemm against numpy.matmul (and torch, blis when installed)",
        description=(
            "Time fastgemm against numpy.matmul (and torch.matmul and blis when installed) in one "
            "process: the same inputs, alternating libraries, median of repeats, the same thread "
            "count for all, each result also as %% of this machine's measured FMA peak. Shapes "
            "are m x n x k (C is m x n, inner dimension k)."
        ),
    )
    which = b.add_mutually_exclusive_group()
    which.add_argument("--quick", action="store_true",
                       help="a few shapes, about half a minute: 256, 1024, 2048 squares and an LLM decode step")
    which.add_argument("--shapes", metavar="LIST",
                       help="comma-separated shapes instead of the suite: N (N x N x N), MxNxK, "
                            "B*MxNxK (B stacked products), e.g. 512,1024x2048x256,1000*64")
    b.add_argument("--dtype", choices=("float32", "float64", "all"),
                   help="only this dtype, or every case in both (default: the suite's choice: "
                        "both, LLM shapes float32 only; --shapes: both)")
    b.add_argument("--threads", type=_positive_int, metavar="N",
                   help="threads for every library (default: all CPUs this process may use)")
    b.add_argument("--repeats", type=_positive_int, metavar="R",
                   help="timed samples per library and shape (default: adapted to the time per call, "
                        "3 to 50 within --budget)")
    b.add_argument("--budget", type=_positive_float, metavar="SECONDS", default=1.5,
                   help="time to spend on one shape when the repeats are adapted (default 1.5)")
    b.add_argument("--kernel", metavar="NAME", help="fastgemm kernel to use (default: the best this CPU runs)")
    b.add_argument("--plot", metavar="FILE.png", help="GFLOP/s against size for the square shapes (needs matplotlib)")
    b.add_argument("--json", metavar="FILE", help="save the full record: machine, versions, every repeat's time")
    b.add_argument("--compare", metavar="OLD.json", help="print the change against a record saved with --json")
    b.add_argument("--list", action="store_true", help="list the shapes that would run, and exit")
    i = sub.add_parser("info", prog="python -m fastgemm info", help="what fastgemm runs on this machine",
                       description="Print fastgemm.info(): kernel, tile, block sizes, caches, CPU features, threads.")
    i.add_argument("--peak", action="store_true", help="also measure each kernel's FMA peak (about a second)")
    sub.add_parser("run", help="run a script with numpy.matmul on fastgemm: run [--] script.py args...")
    return p


# --- bench ---------------------------------------------------------------------------------


def _plan(args):
    from . import _bench_suite as suite

    if args.shapes is not None:
        try:
            return suite.parse_shapes(args.shapes, args.dtype)
        except ValueError as e:
            raise UsageError(str(e)) from None
    return suite.quick_suite(args.dtype) if args.quick else suite.full_suite(args.dtype)


def _validate(args, cases):
    """Everything that can be wrong with the request, checked before a second is spent measuring."""
    import fastgemm as fg

    from . import _bench_report as report

    if not cases:
        raise UsageError("no shapes to run")
    if args.kernel is not None and args.kernel not in fg.available_kernels():
        raise UsageError(f"--kernel: {args.kernel!r} cannot run here; this CPU runs "
                         + ", ".join(fg.available_kernels()))
    old = None
    try:
        if args.plot:
            # The run's own contents first: that error does not depend on what is installed.
            if not report.has_squares(cases):
                raise ValueError("--plot draws the square shapes (m = n = k) and this run has none")
            report.require_matplotlib()
        if args.compare:
            old = report.load_record(args.compare)
    except ValueError as e:
        raise UsageError(str(e)) from None
    for opt, path in (("--json", args.json), ("--plot", args.plot)):
        if path:
            parent = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(parent):
                raise UsageError(f"{opt}: directory {parent} does not exist")
    return old


def _reexec_pinned(threads, argv):
    """Run this same command in a child whose BLAS reads the thread count at start-up."""
    from . import _bench_machine as machine

    sys.stderr.write(f"bench: threadpoolctl is not installed; restarting with OPENBLAS_NUM_THREADS="
                     f"OMP_NUM_THREADS={threads} so NumPy uses {threads} thread(s) like fastgemm\n")
    sys.stderr.flush()
    cmd = [sys.executable, "-m", "fastgemm", "bench", *argv]
    return subprocess.run(cmd, env=machine.reexec_env(threads)).returncode


def bench(args, argv):
    cases = _plan(args)
    old = _validate(args, cases)
    if args.list:
        for c in cases:
            print(f"{c.group:<8} {c.label():<26} {c.dtype}")
        print(f"{len(cases)} cases")
        return 0

    import numpy as np

    import fastgemm as fg

    from . import _bench as bm
    from . import _bench_machine as machine
    from . import _bench_report as report
    from . import _bench_suite as suite

    threads = args.threads or machine.usable_cpus()
    if machine.needs_reexec(threads):
        return _reexec_pinned(threads, argv)
    if args.kernel:
        fg.set_kernel(args.kernel)
    kernel = fg.get_kernel()

    libs, missing = bm.competitors(threads)
    pinning = machine.BlasPinning(threads)
    fg.set_num_threads(threads)  # after the pinning, which also sets every OpenMP runtime's default
    try:
        dtypes = [dt for dt in suite.DTYPES if any(c.dtype == dt for c in cases)]
        peaks = bm.fma_peaks(kernel, dtypes)
        desc = machine.describe(libs, missing, threads, pinning, peaks)
        date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        print(report.header(desc, date))
        if threads > desc["usable_cpus"]:
            print(f"warning:  --threads {threads} exceeds the {desc['usable_cpus']} CPUs this process may use")
        print(flush=True)

        rng = np.random.default_rng(20240501)
        progress = bm.Progress(len(cases))
        results = []
        t0 = time.monotonic()
        for idx, case in enumerate(cases):
            progress.begin(idx, f"{case.label()} {case.dtype}")
            try:
                ops = suite.operands(case, rng)
            except MemoryError:
                raise RuntimeError(f"not enough memory for the operands of {case.label()} {case.dtype}") from None
            results.append(bm.run_case(case, libs, ops, args.repeats, args.budget, rng,
                                          tick=progress.draw, threads=threads))
            del ops
        progress.finish()
        seconds = time.monotonic() - t0
    finally:
        pinning.release()

    names = [lib.name for lib in libs]
    print(report.table(results, names, peaks, threads))
    if old is not None:
        print()
        print(report.compare(old, results, peaks, threads, desc))
    if args.json:
        report.write_record(args.json, report.make_record(desc, results, peaks, threads, argv, date, seconds))
        print(f"\nrecord saved to {args.json}")
    if args.plot:
        report.plot(args.plot, results, names, peaks, threads, desc, date)
        print(f"plot saved to {args.plot}")
    wrong = any(r.check and not r.check.get("ok") for r in results)
    return EXIT_WRONG if wrong else 0


# --- info ----------------------------------------------------------------------------------


def _bytes(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def info(args):
    import numpy as np

    import fastgemm as fg

    from . import _bench_machine as machine
    from . import _core

    i = fg.info()
    f64 = i["float64"]
    rows = [
        ("fastgemm", i["version"]),
        ("CPU", f"{machine.cpu_model()} ({machine.usable_cpus()} usable CPUs)"),
        ("kernel", f"{i['kernel']} ({i['isa']})"),
        ("float32", f"tile {i['mr']} x {i['nr']}, MC {i['mc']}, KC {i['kc']}, NC {i['nc']}"),
        ("float64", f"tile {f64['mr']} x {f64['nr']}, MC {f64['mc']}, KC {f64['kc']}, NC {f64['nc']}"),
    ]
    for level, c in i["caches"].items():
        how = "detected" if c.get("detected") else "assumed"
        rows.append((f"cache {level}", f"{_bytes(c['size'])}, {c['ways']}-way, {c['line']} B lines ({how})"))
    rows += [
        ("CPU features", " ".join(i["cpu_features"]) or "(none beyond the baseline)"),
        ("kernels here", ", ".join(i["kernels"]) + "  (choose with FASTGEMM_KERNEL or fastgemm.set_kernel)"),
        ("threads", f"{i['threads']}  (FASTGEMM_NUM_THREADS, OMP_NUM_THREADS or fastgemm.set_num_threads)"),
        ("OpenMP", i["openmp"]),
        ("numpy", np.__version__),
    ]
    for key in sorted(set(i) - {"version", "kernel", "isa", "mr", "nr", "mc", "kc", "nc", "float64", "caches",
                                "cpu_features", "kernels", "threads", "openmp"}):
        rows.append((key, str(i[key])))
    if args.peak:
        for name in i["kernels"]:
            p32 = _core.fma_peak(name, False, 0.3)
            p64 = _core.fma_peak(name, True, 0.3)
            rows.append((f"FMA peak {name}", f"float32 {p32:.1f}, float64 {p64:.1f} GFLOP/s per core"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    env = machine.env_settings()
    if env:
        print(f"{'env':<{width}}  " + " ".join(f"{k}={v}" for k, v in env.items()))
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:  # the program's own options must reach it unparsed
        from ._run import main as run

        return run(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"python -m fastgemm {args.command or ''}".rstrip()
    try:
        if args.command == "bench":
            return bench(args, argv[argv.index("bench") + 1:])
        if args.command == "info":
            return info(args)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except UsageError as e:
        sys.stderr.write(f"{prog}: error: {e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{prog}: interrupted\n")
        return 130
    except Exception as e:  # a user sees one sentence; FASTGEMM_DEBUG=1 shows where it came from
        if os.environ.get("FASTGEMM_DEBUG"):
            raise
        sys.stderr.write(f"{prog}: error: {type(e).__name__}: {e}\n")
        return EXIT_FAILED
