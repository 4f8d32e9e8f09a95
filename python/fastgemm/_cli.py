"""`python -m fastgemm bench|info|run|switch`: argument parsing, start-up order and exit codes.

Every user mistake ends in one line on stderr and exit code 2; a wrong fastgemm result found
by the benchmark's guard exits with 3 after printing the table; nothing ends in a traceback
(set FASTGEMM_DEBUG=1 to see one). Output cut short by the reader (``| head``) ends quietly.
The bench command itself lives in fastgemm.bench.cli, `run` in fastgemm._run, `switch` in
fastgemm._persist.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from .bench import cli as bench_cli

EXIT_USAGE, EXIT_FAILED = 2, 1
EXIT_WRONG = bench_cli.EXIT_WRONG
UsageError = bench_cli.UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m fastgemm", description="fastgemm command line: benchmark and machine info.")
    sub = p.add_subparsers(dest="command", metavar="{bench,info,run,switch}", parser_class=_Parser)
    b = sub.add_parser(
        "bench",
        prog="python -m fastgemm bench",
        help="time fastgemm against numpy.matmul (and torch, blis when installed)",
        description=bench_cli.DESCRIPTION,
    )
    bench_cli.add_arguments(b)
    i = sub.add_parser(
        "info",
        prog="python -m fastgemm info",
        help="what fastgemm runs on this machine",
        description="Print fastgemm.info(): kernel, tile, block sizes, caches, CPU features, threads.",
    )
    i.add_argument("--peak", action="store_true", help="also measure each kernel's FMA peak (about a second)")
    sub.add_parser("run", help="run a script with NumPy's products on fastgemm: run [--] script.py args...")
    sub.add_parser("switch", help="on|off|status: start every interpreter of this environment with the switch on")
    return p


# --- info ----------------------------------------------------------------------------------


def _bytes(n: int) -> str:
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def info(args: argparse.Namespace) -> int:
    import numpy as np

    import fastgemm as fg

    from . import _core
    from ._runtime import usable_cpus
    from .bench import machine

    i = fg.info()
    f64 = i["float64"]
    rows = [
        ("fastgemm", i["version"]),
        ("CPU", f"{machine.cpu_model()} ({usable_cpus()} usable CPUs)"),
        ("kernel", f"{i['kernel']} ({i['isa']})"),
        ("float32", f"tile {i['mr']} x {i['nr']}, MC {i['mc']}, KC {i['kc']}, NC {i['nc']}"),
        ("float64", f"tile {f64['mr']} x {f64['nr']}, MC {f64['mc']}, KC {f64['kc']}, NC {f64['nc']}"),
        ("bf16/fp16", i["low_precision"]),
    ]
    for level, c in i["caches"].items():
        how = "detected" if c.get("detected") else "assumed"
        rows.append((f"cache {level}", f"{_bytes(c['size'])}, {c['ways']}-way, {c['line']} B lines ({how})"))
    rows += [
        ("CPU features", " ".join(i["cpu_features"]) or "(none beyond the baseline)"),
        ("kernels here", ", ".join(i["kernels"]) + "  (choose with FASTGEMM_KERNEL or fastgemm.set_kernel)"),
        ("threads", f"{i['threads']}  (FASTGEMM_NUM_THREADS, OMP_NUM_THREADS or fastgemm.set_num_threads)"),
        ("thread pool", i["thread_pool"]),
        ("small tails", i["small_tails"]),
        ("numpy", np.__version__),
    ]
    for key in sorted(
        set(i)
        - {
            "version",
            "kernel",
            "isa",
            "mr",
            "nr",
            "mc",
            "kc",
            "nc",
            "float64",
            "caches",
            "cpu_features",
            "kernels",
            "threads",
            "thread_pool",
            "small_tails",
            "low_precision",
        }
    ):
        rows.append((key, str(i[key])))
    if args.peak:
        for name in i["kernels"]:
            p32 = _core.fma_peak(name, False, 0.3)
            p64 = _core.fma_peak(name, True, 0.3)
            line = f"float32 {p32:.1f}, float64 {p64:.1f} GFLOP/s per core"
            if _core.lowp_info(name)["bf16_pairs"] is not None:
                line += f", bfloat16 (vdpbf16ps) {_core.bf16_pair_peak(name, 0.3):.1f}"
            rows.append((f"FMA peak {name}", line))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    env = machine.env_settings()
    if env:
        print(f"{'env':<{width}}  " + " ".join(f"{k}={v}" for k, v in env.items()))
    return 0


def _command(argv: list[str]) -> int:
    if argv[:1] == ["run"]:  # the program's own options must reach it unparsed
        from ._run import main as run

        return run(argv[1:])
    if argv[:1] == ["switch"]:
        from ._persist import main as switch

        return switch(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"python -m fastgemm {args.command or ''}".rstrip()
    try:
        if args.command == "bench":
            return bench_cli.run(args, argv[argv.index("bench") + 1 :])
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
    except BrokenPipeError:
        raise
    except Exception as e:  # a user sees one sentence; FASTGEMM_DEBUG=1 shows where it came from
        if os.environ.get("FASTGEMM_DEBUG"):
            raise
        sys.stderr.write(f"{prog}: error: {type(e).__name__}: {e}\n")
        return EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _command(args)
        sys.stdout.flush()  # a closed pipe shows here rather than at interpreter exit
    except BrokenPipeError:
        # The reader went away (`python -m fastgemm info | head -1`): stop quietly, as
        # Python's documentation recommends; stdout is pointed at devnull so the
        # interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    return code
