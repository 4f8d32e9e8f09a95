"""fastgemm.matmul against np.matmul over a grid of rectangular shapes, in one process.

Every m x n x k with m, n, k from --dims (125 shapes for five sizes), in the operands' layout
(NN: both C-ordered; TN, NT, TT: A and/or B transposed views). Each sample is a loop of calls
of about 4 MFLOP; the two libraries alternate sample by sample and the median of --samples is
kept (thread CPU time on 1 thread, wall clock otherwise). Prints each ratio fastgemm / NumPy
and marks those under 0.97 (issue 10: never slower than NumPy on any shape). This sweep is how
the rectangular gaps of docs/DESIGN.md ("Masked stores", "Tile order", "A read in place") were
found.

With --stack N each shape is a stack of N products (operands of N items, in the layout), and
with --random COUNT the shapes are COUNT random (m, n, k) with each side drawn between the
smallest and largest of --dims (--seed picks them): the random 200-item stacks of docs/DESIGN.md
("Narrow C as C^T", "Stacks from memory", session 34) came from such runs.

    python bench/shape_sweep.py                                 # float32, NN, 1 thread
    python bench/shape_sweep.py --dtype float64 --layout TN --dims 3,20,130,1000
    python bench/shape_sweep.py --dtype float64 --layout TN --stack 200 --random 24 --dims 4,64 --seed 3
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import numpy as np

import fastgemm as fg


def operands(rng, m, n, k, dtype, layout, stack=()):
    """(a, b) with op(a) m x k and op(b) k x n (items of a stack of shape `stack`), transposed views
    where layout says T."""

    def matrix(rows, cols, transposed):
        if transposed:
            return np.swapaxes(rng.uniform(-1, 1, (*stack, cols, rows)).astype(dtype), -1, -2)
        return rng.uniform(-1, 1, (*stack, rows, cols)).astype(dtype)

    return matrix(m, k, layout[0] == "T"), matrix(k, n, layout[1] == "T")


def sample(f, a, b, c, calls, clock) -> float:
    """Seconds per call of f(a, b, out=c) over `calls` calls."""
    t0 = clock()
    for _ in range(calls):
        f(a, b, out=c)
    return (clock() - t0) / calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--dims", default="3,20,130,700,3000", help="sizes each of m, n and k takes")
    p.add_argument("--layout", default="NN", choices=("NN", "TN", "NT", "TT"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--samples", type=int, default=7)
    p.add_argument("--stack", type=int, default=0, help="items per stack (0: single products)")
    p.add_argument("--random", type=int, default=0, help="this many random shapes instead of the grid")
    p.add_argument("--seed", type=int, default=0, help="the random shapes' seed")
    args = p.parse_args()
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads, user_api="blas")
    fg.set_num_threads(args.threads)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    dims = [int(x) for x in args.dims.split(",")]
    rng = np.random.default_rng(0)
    if args.random:
        pick = np.random.default_rng(args.seed)
        shapes = [tuple(int(x) for x in pick.integers(min(dims), max(dims) + 1, 3)) for _ in range(args.random)]
    else:
        shapes = list(itertools.product(dims, dims, dims))
    stack = (args.stack,) if args.stack else ()
    behind = 0
    for m, n, k in shapes:
        a, b = operands(rng, m, n, k, np.dtype(args.dtype), args.layout, stack)
        c = np.empty((*stack, m, n), args.dtype)
        flops = 2 * m * n * k * max(1, args.stack)
        calls = max(1, int(4e6 / flops))
        for f in (np.matmul, fg.matmul):
            sample(f, a, b, c, calls, clock)
        times: dict[str, list[float]] = {"numpy": [], "fastgemm": []}
        for _ in range(args.samples):
            times["numpy"].append(sample(np.matmul, a, b, c, calls, clock))
            times["fastgemm"].append(sample(fg.matmul, a, b, c, calls, clock))
        tn, tf = statistics.median(times["numpy"]), statistics.median(times["fastgemm"])
        behind += tn / tf < 0.97
        print(
            f"{f'{args.stack}*' if args.stack else ''}{m}x{n}x{k} {args.dtype} {args.layout}: NumPy {flops / tn / 1e9:.1f} fastgemm {flops / tf / 1e9:.1f} "
            f"GFLOP/s, ratio {tn / tf:.2f}{'  <' if tn / tf < 0.97 else ''}",
            flush=True,
        )
    print(f"{behind} of {len(shapes)} shapes under 0.97x NumPy ({args.threads} thread(s))")


if __name__ == "__main__":
    main()
