"""Stacks of small products against an elementwise add over the same arrays, in one process.

A stack of square items reads A and B and writes C, three arrays of the same size; so does
`np.add(A, B, out=C)`, which does no arithmetic to speak of. Past L2 both move the same bytes
from and to the same level of the memory hierarchy, so the add's time is what moving them costs
on this machine (`np.copyto(C, A)`, one array less to read, is shown beside it). For each
stack, `fg.matmul`, `np.matmul`, the add and the copy alternate sample by sample (all with
out=); prints the medians, NumPy / fastgemm, and fastgemm / add: near 1, fastgemm's stack runs
at the speed of moving its operands, and a ratio to NumPy above NumPy / add is out of reach.

    python bench/stack_memory.py                 # issue 10's stacks, float32 and float64, 1 thread
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable

import numpy as np
from matvec_offsets import time_into  # bench/ is this script's directory, first on sys.path
from switch_small import parse_and_pin

import fastgemm as fg


def main() -> None:
    args = parse_and_pin(__doc__, "100000*3,10000*8,4096*16,1000*32,1000*64", 15)
    rng = np.random.default_rng(0)
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, {args.threads} thread(s); medians of {args.rounds}")
    for dt in (np.float32, np.float64):
        for spec in args.sizes.split(","):
            count, n = (int(s) for s in spec.split("*"))
            a = rng.standard_normal((count, n, n)).astype(dt)
            b = rng.standard_normal((count, n, n)).astype(dt)
            c = np.empty_like(a)
            calls = max(3, int(2e-3 / (c.nbytes / 2e10)))  # about 2 ms a sample at 20 GB/s
            runs: dict[str, Callable[[], object]] = {
                "fastgemm": functools.partial(fg.matmul, a, b, out=c),
                "numpy": functools.partial(np.matmul, a, b, out=c),
                "add": functools.partial(np.add, a, b, out=c),
                "copy": functools.partial(np.copyto, c, a),
            }
            times: dict[str, list[float]] = {name: [] for name in runs}
            for f in runs.values():
                f()
            for _ in range(args.rounds):
                for name, f in runs.items():
                    time_into(f, calls, times[name])
            t = {name: statistics.median(s) for name, s in times.items()}
            print(
                f"{np.dtype(dt).name} {count} x {n}^3 ({3 * c.nbytes / 1e6:.1f} MB): "
                + ", ".join(f"{name} {t[name] * 1e6:.0f} us" for name in runs)
                + f"; numpy / fastgemm {t['numpy'] / t['fastgemm']:.2f}x, fastgemm / add {t['fastgemm'] / t['add']:.2f}"
                + f", numpy / add {t['numpy'] / t['add']:.2f}"
            )


if __name__ == "__main__":
    main()
