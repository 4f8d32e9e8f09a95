"""fastgemm on a busy machine: its default thread count against one thread, under load.

Starts --busy CPU-bound processes (as CI runners, notebooks or dask workers that each use every
core would be), then times each case on fastgemm with --threads threads and with one thread,
alternating sample by sample, and prints the median time of each and their ratio (1-thread
time / N-thread time: >= 0.8 is the issue-10 target, above 1.0 the threads still help). The
busy processes are stopped at the end, also on error or Ctrl-C.

    python bench/busy_machine.py                 # 2 busy processes, 2 threads
    python bench/busy_machine.py --busy 0        # the same on a quiet machine
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time

import numpy as np

import fastgemm as fg

CASES = {
    "10000*8x8x8": ((10000, 8, 8), (10000, 8, 8)),
    "4096*16x16x16": ((4096, 16, 16), (4096, 16, 16)),
    "1000*64x64x64": ((1000, 64, 64), (1000, 64, 64)),
    "128x128x128": ((128, 128), (128, 128)),
    "256x256x256": ((256, 256), (256, 256)),
    "1024x1024x1024": ((1024, 1024), (1024, 1024)),
}


def _spin(stop: mp.synchronize.Event) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def _sample(a: np.ndarray, b: np.ndarray, out: np.ndarray, threads: int, calls: int) -> float:
    fg.set_num_threads(threads)
    t0 = time.perf_counter()
    for _ in range(calls):
        fg.matmul(a, b, out=out)
    return (time.perf_counter() - t0) / calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--busy", type=int, default=2, help="CPU-bound processes to run beside (default 2)")
    p.add_argument("--threads", type=int, default=2, help="fastgemm's thread count to test (default 2)")
    p.add_argument("--samples", type=int, default=15, help="samples per thread count and case (default 15)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    args = p.parse_args()

    stop = mp.Event()
    spinners = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for s in spinners:
        s.start()
    rng = np.random.default_rng(0)
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, {args.busy} busy processes, {args.dtype}")
    print(f"{'case':<16} {'1 thread':>11} {f'{args.threads} threads':>11} {'ratio':>7}")
    try:
        time.sleep(0.5)  # let the spinners reach the scheduler
        for name, (sa, sb) in CASES.items():
            a = rng.standard_normal(sa).astype(args.dtype)
            b = rng.standard_normal(sb).astype(args.dtype)
            out = fg.matmul(a, b)
            flops = 2.0 * out.size * a.shape[-1]
            calls = max(1, int(2e7 / flops))  # ~10 ms of work per sample on one core
            one, many = [], []
            for _ in range(args.samples):
                one.append(_sample(a, b, out, 1, calls))
                many.append(_sample(a, b, out, args.threads, calls))
            t1, tn = statistics.median(one), statistics.median(many)
            print(f"{name:<16} {t1 * 1e3:9.3f}ms {tn * 1e3:9.3f}ms {t1 / tn:6.2f}x")
    finally:
        stop.set()
        for s in spinners:
            s.join(timeout=2)
            if s.is_alive():
                s.terminate()


if __name__ == "__main__":
    main()
