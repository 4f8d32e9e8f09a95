"""fastgemm on 1 and on N threads against NumPy on N threads, in one process.

    python bench/thread_scaling.py 2048 [float32|float64] [threads]

Prints GFLOP/s of fastgemm on 1 thread, fastgemm on N threads, NumPy (pinned with
threadpoolctl) on N threads, the speedup of fastgemm from 1 to N threads and the ratio to
NumPy. Each figure is the median of 7 calls after a warm-up; a pause before NumPy's and after
it lets the other library's spinning worker threads go idle (see bench/README.md).
"""

import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

import fastgemm as fg


def median_time(fn, repeats=7):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[repeats // 2]


def main(argv):
    n = int(argv[1])
    dtype = np.dtype(argv[2] if len(argv) > 2 else "float32")
    threads = int(argv[3]) if len(argv) > 3 else 2
    rng = np.random.default_rng(0)
    a = rng.random((n, n)).astype(dtype)
    b = rng.random((n, n)).astype(dtype)
    c = np.empty((n, n), dtype)
    gflop = 2 * n**3 / 1e9
    fg.set_num_threads(1)
    t1 = median_time(lambda: fg.gemm(a, b, c))
    fg.set_num_threads(threads)
    tn = median_time(lambda: fg.gemm(a, b, c))
    time.sleep(0.3)
    with threadpool_limits(threads):
        tnp = median_time(lambda: np.matmul(a, b, out=c))
    print(
        f"{dtype.name} {n}^3: fastgemm 1 thread {gflop / t1:.1f}, {threads} threads {gflop / tn:.1f}, "
        f"NumPy {threads} threads {gflop / tnp:.1f} GFLOP/s; speedup {t1 / tn:.2f}x, "
        f"fastgemm / NumPy {tnp / tn:.2f}x"
    )


if __name__ == "__main__":
    main(sys.argv)
