"""A 2-byte decode step against float32: fastgemm.matmul(x, W), x 1 x K, W K x N, in bfloat16
and float16 against the same call on float32 (issue 11: bfloat16 >= 1.8x at 1 x 4096 x 4096).

Each pair times one float32 call, then one call per 2-byte dtype (each call once, so every
matrix comes from DRAM, as a decode step's weights do); the ratio of a pair is the float32
time over the 2-byte time, and the median of the ratios is printed with the median GB/s of
each. One thread is timed in thread CPU time (usable on a shared machine), more in wall time.

    python bench/lowp_gemv.py                    # 1 x 4096 x 4096, 1 thread, 21 pairs
    python bench/lowp_gemv.py --threads 2 --shape 1x8192x4096
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import fastgemm as fg


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="1x4096x4096", help="MxKxN")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--pairs", type=int, default=21)
    args = p.parse_args()
    try:
        import ml_dtypes
    except ImportError as e:
        raise SystemExit("needs ml_dtypes (pip install 'fastgemm[bf16]')") from e
    m, k, n = (int(s) for s in args.shape.split("x"))
    fg.set_num_threads(args.threads)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    rng = np.random.default_rng(0)
    x32 = rng.standard_normal((m, k)).astype(np.float32)
    w32 = rng.standard_normal((k, n)).astype(np.float32)
    lowp = {
        name: (x32.astype(dt), w32.astype(dt))
        for name, dt in (("bfloat16", ml_dtypes.bfloat16), ("float16", np.float16))
    }

    def timed(x: np.ndarray, w: np.ndarray) -> float:
        t0 = clock()
        fg.matmul(x, w)
        return clock() - t0

    for _ in range(3):  # warm-up: scratch, page faults
        timed(x32, w32)
        for x, w in lowp.values():
            timed(x, w)
    f32: list[float] = []
    ratios: dict[str, list[float]] = {name: [] for name in lowp}
    times: dict[str, list[float]] = {name: [] for name in lowp}
    for _ in range(args.pairs):
        for name, (x, w) in lowp.items():
            f = timed(x32, w32)
            t = timed(x, w)
            f32.append(f)
            ratios[name].append(f / t)
            times[name].append(t)
    print(
        f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, {args.threads} thread(s), {m}x{k}x{n}, {args.pairs} pairs"
    )
    print(f"float32   {w32.nbytes / statistics.median(f32) / 1e9:6.1f} GB/s")
    for name in lowp:
        r = ratios[name]
        gbs = w32.nbytes / 2 / statistics.median(times[name]) / 1e9
        print(f"{name:<9} {gbs:6.1f} GB/s  {statistics.median(r):.3f}x float32 (pairs {min(r):.2f}..{max(r):.2f})")


if __name__ == "__main__":
    main()
