"""fastgemm and NumPy's BLAS called alternately, call by call, with no pause between them.

A program that mixes NumPy operations with fastgemm products runs each library right after
the other, while the other's idle worker threads may still be spinning. This times
np.matmul and fastgemm.matmul in strict alternation on the same thread count and prints the
median of each and their ratio (NumPy time / fastgemm time), next to the same two timed with a
pause before every call (what `python -m fastgemm bench` does), so the cost of the neighbour's
threads shows as the difference between the two rows.

    python bench/alternating.py                  # 2048^3 and 4096^3 float32, all usable CPUs
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
    p.add_argument("--sizes", default="2048,4096", help="comma-separated n of n x n x n products")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--samples", type=int, default=9)
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    args = p.parse_args()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError as e:
        raise SystemExit("needs threadpoolctl (pip install threadpoolctl) to give NumPy's BLAS the same threads") from e
    threadpool_limits(args.threads, user_api="blas")
    fg.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, {args.threads} threads, {args.dtype}")
    print(f"{'n':>6} {'mode':<12} {'numpy GF/s':>11} {'fastgemm GF/s':>14} {'ratio':>7}")
    for n in (int(s) for s in args.sizes.split(",")):
        a = rng.standard_normal((n, n)).astype(args.dtype)
        b = rng.standard_normal((n, n)).astype(args.dtype)
        c = np.empty((n, n), args.dtype)
        flops = 2.0 * n**3
        for mode, pause in (("alternating", 0.0), ("paused", 0.2)):
            tn, tf = [], []
            for _ in range(args.samples):
                for lib, times in ((np.matmul, tn), (fg.matmul, tf)):
                    time.sleep(pause)
                    t0 = time.perf_counter()
                    lib(a, b, out=c)
                    times.append(time.perf_counter() - t0)
            mn, mf = statistics.median(tn), statistics.median(tf)
            print(f"{n:>6} {mode:<12} {flops / mn / 1e9:11.1f} {flops / mf / 1e9:14.1f} {mn / mf:6.2f}x")


if __name__ == "__main__":
    main()
