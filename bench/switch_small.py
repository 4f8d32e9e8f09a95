"""np.matmul on single small products with the switch off and on, in one process.

Each sample is a loop of np.matmul(a, b, out=c) calls long enough to time; the two states
alternate, and the best of the samples of each is kept. Prints the time per call and the ratio
(NumPy's own loop / fastgemm's loop): the issue-10 target is >= 0.97x at every size.

    python bench/switch_small.py                 # float32 and float64, n = 2 .. 96, 1 thread
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fastgemm as fg


def _best(a: np.ndarray, b: np.ndarray, c: np.ndarray, calls: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            np.matmul(a, b, out=c)
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def parse_and_pin(doc: str | None, sizes: str, rounds: int) -> argparse.Namespace:
    """The options of the switch-off-and-on scripts (this one, switch_dot.py); puts NumPy's
    BLAS (through threadpoolctl) and fastgemm on --threads threads."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=sizes)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=rounds, help=f"alternations of the two states (default {rounds})")
    args = p.parse_args()
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads, user_api="blas")
    except ImportError:
        print("(threadpoolctl not installed: NumPy's BLAS keeps its own thread count)")
    fg.set_num_threads(args.threads)
    return args


def main() -> None:
    args = parse_and_pin(__doc__, "2,3,4,8,16,24,32,48,64,96", 3)
    rng = np.random.default_rng(0)
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, {args.threads} thread(s)")
    for dt in (np.float32, np.float64):
        for n in (int(s) for s in args.sizes.split(",")):
            a, b = rng.standard_normal((n, n)).astype(dt), rng.standard_normal((n, n)).astype(dt)
            c = np.empty((n, n), dt)
            calls = max(20, int(2e6 / (2 * n**3)))
            t_np, t_fg = float("inf"), float("inf")
            try:
                for _ in range(args.rounds):
                    fg.restore_numpy()
                    t_np = min(t_np, _best(a, b, c, calls, 9))
                    fg.patch_numpy()
                    t_fg = min(t_fg, _best(a, b, c, calls, 9))
            finally:
                fg.restore_numpy()
            print(
                f"{np.dtype(dt).name} {n}^3: numpy {t_np * 1e6:.2f} us, switch {t_fg * 1e6:.2f} us, {t_np / t_fg:.2f}x"
            )


if __name__ == "__main__":
    main()
