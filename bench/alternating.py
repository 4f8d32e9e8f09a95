"""fastgemm and NumPy's BLAS called alternately, call by call, with no pause between them.

A program that mixes NumPy operations with fastgemm products runs each library right after
the other, while the other's idle worker threads may still be spinning. This times
np.matmul and fastgemm.matmul in strict alternation on the same thread count and prints the
median of each and their ratio (NumPy time / fastgemm time), next to the same two timed with a
pause before every call (what `python -m fastgemm bench` does), so the cost of the neighbour's
threads shows as the difference between the two rows. The mean columns are what a program
of such calls gets: a call that waits a scheduler time slice for a preempted thread moves the
mean, not the median. With --burst K a third row pauses as the second, then makes K calls of
one library and times calls 2..K (a program that computes in bursts between pauses: the first
call pays the wake-ups, the rest show whether the threads are back at work).

    python bench/alternating.py                  # 2048^3 and 4096^3 float32, all usable CPUs
    python bench/alternating.py --sizes 350x222x175,200 --samples 400 --no-pause
    python bench/alternating.py --sizes 128,256,512 --samples 15 --burst 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import fastgemm as fg


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="2048,4096", help="comma-separated products: n (n x n x n) or MxNxK")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--samples", type=int, default=9)
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--no-pause", action="store_true", help="only the alternating row")
    p.add_argument("--burst", type=int, default=0, help="also K calls after each pause, calls 2..K timed (K >= 2)")
    args = p.parse_args()
    if args.burst == 1 or args.burst < 0:
        p.error("--burst takes K >= 2 (0: no burst row)")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError as e:
        raise SystemExit("needs threadpoolctl (pip install threadpoolctl) to give NumPy's BLAS the same threads") from e
    threadpool_limits(args.threads, user_api="blas")
    fg.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, {args.threads} threads, {args.dtype}")
    print(
        f"{'m x n x k':>16} {'mode':<12} {'GF/s median: numpy':>19} {'fastgemm':>9} {'ratio':>6}   "
        f"{'mean: numpy':>11} {'fastgemm':>9} {'ratio':>6}"
    )
    modes = [("alternating", 0.0, 1)] if args.no_pause else [("alternating", 0.0, 1), ("paused", 0.2, 1)]
    if args.burst:
        modes.append((f"burst {args.burst}", 0.2, args.burst))
    for size in args.sizes.split(","):
        m, n, k = (int(d) for d in size.split("x")) if "x" in size else (int(size),) * 3
        a = rng.standard_normal((m, k)).astype(args.dtype)
        b = rng.standard_normal((k, n)).astype(args.dtype)
        c = np.empty((m, n), args.dtype)
        flops = 2.0 * m * n * k
        for mode, pause, calls in modes:
            tn, tf = [], []
            for _ in range(args.samples):
                for lib, times in ((np.matmul, tn), (fg.matmul, tf)):
                    if pause:  # not even sleep(0) otherwise: that system call hid NumPy's stalls (session 35)
                        time.sleep(pause)
                    if calls > 1:
                        lib(a, b, out=c)  # the burst's first call, untimed
                    timed = max(1, calls - 1)
                    t0 = time.perf_counter()
                    for _ in range(timed):
                        lib(a, b, out=c)
                    times.append((time.perf_counter() - t0) / timed)
            mn, mf = statistics.median(tn), statistics.median(tf)
            an, af = statistics.fmean(tn), statistics.fmean(tf)
            print(
                f"{f'{m}x{n}x{k}':>16} {mode:<12} {flops / mn / 1e9:19.1f} {flops / mf / 1e9:9.1f} {mn / mf:5.2f}x   "
                f"{flops / an / 1e9:11.1f} {flops / af / 1e9:9.1f} {an / af:5.2f}x"
            )


if __name__ == "__main__":
    main()
