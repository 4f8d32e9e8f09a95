"""Pre-packed B against the same fastgemm.gemm with B unpacked, on 1 and 2 threads.

x (m x k) times W (k x n), K = N = 4096: ``fg.gemm(x, fg.pack(W))`` and ``fg.gemm(x, W)``
timed in strict alternation (unpacked 1 thread, unpacked 2, packed 1, packed 2, ...), the
median of each. One-thread samples are thread CPU time (a shared machine's other processes
then cost little), two-thread samples wall time; the speed-up columns are one thread's time
over two threads' for the same path.

    python bench/packed.py                       # float32, m = 1, 16, 64, 256
    python bench/packed.py --dtype float64 --m 1,64
    python bench/packed.py --dtype int8          # uint8 x int8 -> int32, GOP/s
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import numpy as np

import fastgemm as fg


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", default="1,16,64,256", help="comma-separated row counts of x")
    p.add_argument("--kn", type=int, default=4096, help="K = N")
    p.add_argument("--samples", type=int, default=9)
    p.add_argument("--dtype", default="float32", choices=("float32", "float64", "int8"), help="int8: uint8 x")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    k = n = args.kn
    int8 = args.dtype == "int8"
    w = rng.integers(-128, 128, (k, n)).astype(np.int8) if int8 else rng.uniform(-1, 1, (k, n)).astype(args.dtype)
    unit = "GOP/s" if int8 else "GF/s"
    t = time.perf_counter()
    packed = fg.pack(w)
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, {args.dtype}, K = N = {k}")
    print(f"pack: {1e3 * (time.perf_counter() - t):.0f} ms, {packed.nbytes / 2**20:.1f} MiB")
    print(
        f"{'m':>5} {unit + ' unpacked 1t':>17} {'2t':>6} {'x':>5} {'packed 1t':>10} {'2t':>6} {'x':>5}  packed/unpacked 1t  2t"
    )
    for m in (int(s) for s in args.m.split(",")):
        x = rng.integers(0, 256, (m, k)).astype(np.uint8) if int8 else rng.uniform(-1, 1, (m, k)).astype(args.dtype)
        c = np.empty((m, n), np.int32 if int8 else args.dtype)
        paths = {"unpacked": functools.partial(fg.gemm, x, w, c), "packed": functools.partial(fg.gemm, x, packed, c)}
        calls = {(path, threads): (threads, f) for path, f in paths.items() for threads in (1, 2)}
        reps = max(2, int(0.1 / (2 * m * k * n / 60e9)))
        times: dict[tuple[str, int], list[float]] = {key: [] for key in calls}
        for _ in range(args.samples):
            for key, (threads, f) in calls.items():
                fg.set_num_threads(threads)
                f()
                clock = time.thread_time if threads == 1 else time.perf_counter
                t = clock()
                for _ in range(reps):
                    f()
                times[key].append((clock() - t) / reps)
        med = {key: statistics.median(v) for key, v in times.items()}
        gf = {key: 2 * m * k * n / v / 1e9 for key, v in med.items()}
        print(
            f"{m:>5} {gf['unpacked', 1]:>17.1f} {gf['unpacked', 2]:>6.1f} {med['unpacked', 1] / med['unpacked', 2]:>5.2f}"
            f" {gf['packed', 1]:>10.1f} {gf['packed', 2]:>6.1f} {med['packed', 1] / med['packed', 2]:>5.2f}"
            f"  {med['unpacked', 1] / med['packed', 1]:>18.2f} {med['unpacked', 2] / med['packed', 2]:>4.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
