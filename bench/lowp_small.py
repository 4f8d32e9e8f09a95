"""Small 2-byte products and stacks of them: fastgemm.matmul on bfloat16 / float16 against
NumPy's own np.matmul on the same arrays (bfloat16: ml_dtypes' cast to float32 + sgemm;
float16: NumPy's scalar loop) and against converting to float32 first and calling
fastgemm.matmul. Thread CPU time (time.thread_time), one thread, the three calls alternating
sample by sample; prints the median time per call and the ratios (> 1: fastgemm's 2-byte path
is faster). The issue-11 target is >= 1.0x against both at every row.

    python bench/lowp_small.py                       # n = 4..96, stacks 10000 x 8^3, 4096 x 16^3
    python bench/lowp_small.py --sizes 8,16 --samples 9
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fastgemm as fg
from fastgemm.bench.measure import cpu_time_medians


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="4,8,16,24,32,48,64,96")
    p.add_argument("--stacks", default="10000x8,4096x16", help="COUNTxN: a stack of COUNT N^3 products")
    p.add_argument("--dtypes", default="bfloat16,float16")
    p.add_argument("--samples", type=int, default=15, help="alternating samples of each call (default 15)")
    args = p.parse_args()
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
    except ImportError:
        print("(threadpoolctl not installed: NumPy's BLAS keeps its own thread count)")
    fg.set_num_threads(1)
    rng = np.random.default_rng(0)
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, 1 thread, thread CPU time, medians")
    cases = [(1, int(s)) for s in args.sizes.split(",") if s]
    cases += [tuple(int(x) for x in s.split("x")) for s in args.stacks.split(",") if s]
    for name in args.dtypes.split(","):
        if name == "bfloat16":
            import ml_dtypes

            dt = np.dtype(ml_dtypes.bfloat16)
        else:
            dt = np.dtype(name)
        for count, n in cases:
            shape = (count, n, n) if count > 1 else (n, n)
            a = rng.uniform(-1, 1, shape).astype(np.float32).astype(dt)
            b = rng.uniform(-1, 1, shape).astype(np.float32).astype(dt)
            fns = {
                "fastgemm": lambda a=a, b=b: fg.matmul(a, b),
                "numpy": lambda a=a, b=b: np.matmul(a, b),
                "f32+fastgemm": lambda a=a, b=b: fg.matmul(a.astype(np.float32), b.astype(np.float32)),
            }
            for f in fns.values():
                f()
            t0 = time.perf_counter()
            fns["numpy"]()
            calls = max(3, int(2e-3 / max(time.perf_counter() - t0, 1e-7)))
            med = cpu_time_medians(fns, calls, args.samples)
            label = f"{count} x {n}^3" if count > 1 else f"{n}^3"
            print(
                f"{dt.name:8s} {label:>12s}: fastgemm {med['fastgemm'] * 1e6:9.2f} us, numpy {med['numpy'] * 1e6:9.2f} us,"
                f" f32+fastgemm {med['f32+fastgemm'] * 1e6:9.2f} us;"
                f" vs numpy {med['numpy'] / med['fastgemm']:5.2f}x, vs f32+fastgemm"
                f" {med['f32+fastgemm'] / med['fastgemm']:5.2f}x"
            )


if __name__ == "__main__":
    main()
