"""np.matmul on two ml_dtypes.bfloat16 matrices with the switch on and off, in one process.

Off, NumPy casts both operands to float32 and runs its float32 loop (OpenBLAS sgemm); on,
fastgemm's bfloat16 loop runs (docs/DESIGN.md, "Low-precision products"). The switch is turned
on first, so the loop is registered before NumPy resolves any bfloat16 call; off, that loop
hands the call back to NumPy's own cast and loop (tests/test_switch_bf16.py checks the bits).
The two states alternate sample by sample; each sample is thread CPU time (robust to other
processes on a shared machine) of enough calls to take ~0.1 s. Prints medians and the ratio
NumPy / fastgemm (the issue-11 target, 1.5x at 512^3, is for AVX512_BF16 CPUs).

    python bench/switch_bf16.py                  # n = 64, 256, 512, 1 thread
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import fastgemm as fg


def _sample(a: np.ndarray, b: np.ndarray, calls: int) -> float:
    t0 = time.thread_time()
    for _ in range(calls):
        np.matmul(a, b)
    return (time.thread_time() - t0) / calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="64,256,512", help="comma-separated n of n x n x n products")
    p.add_argument("--samples", type=int, default=11)
    args = p.parse_args()
    try:
        import ml_dtypes
        from threadpoolctl import threadpool_limits
    except ImportError as e:
        raise SystemExit("needs ml_dtypes and threadpoolctl") from e
    threadpool_limits(1, user_api="blas")  # thread CPU time counts this thread only
    fg.set_num_threads(1)
    fg.patch_numpy()  # registers the bfloat16 loop before NumPy resolves a bfloat16 call
    rng = np.random.default_rng(0)
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, 1 thread, thread CPU time, medians")
    print(f"{'n':>5} {'numpy us':>10} {'fastgemm us':>12} {'numpy / fastgemm':>17}")
    for n in (int(s) for s in args.sizes.split(",")):
        a = rng.uniform(-1, 1, (n, n)).astype(ml_dtypes.bfloat16)
        b = rng.uniform(-1, 1, (n, n)).astype(ml_dtypes.bfloat16)
        calls = max(1, int(0.1 / (2.0 * n**3 / 50e9)))
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.samples):
            for on in (True, False):
                if on:
                    fg.patch_numpy()
                else:
                    fg.restore_numpy()
                times[on].append(_sample(a, b, calls))
        t_on, t_off = statistics.median(times[True]), statistics.median(times[False])
        print(f"{n:>5} {t_off * 1e6:>10.1f} {t_on * 1e6:>12.1f} {t_off / t_on:>17.2f}")
    fg.restore_numpy()


if __name__ == "__main__":
    main()
