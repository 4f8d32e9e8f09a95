"""np.dot with the switch off and on, in one process, timed in thread CPU time.

Each sample is a loop of np.dot(a, b) calls; the two states alternate (fg.restore_numpy() /
fg.patch_numpy() between samples), and the median sample of each is kept. Thread CPU time
(time.thread_time) leaves out the time this thread waits for a CPU, which on a shared machine
is most of what disturbs wall time; other programs still compete for caches, so say how
loaded the machine was. Prints the time per call and the ratio (NumPy's own np.dot / the
switch's): the issue-13 target is >= 0.97x at 8, 16, 32.

    python bench/switch_dot.py                   # float32 and float64, n = 8 .. 512, 1 thread
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np
from switch_small import parse_and_pin  # bench/ is this script's directory, first on sys.path

import fastgemm as fg


def _sample(a: np.ndarray, b: np.ndarray, calls: int) -> float:
    dot = np.dot  # looked up once per sample, as a caller's loop would
    t0 = time.thread_time()
    for _ in range(calls):
        dot(a, b)
    return (time.thread_time() - t0) / calls


def main() -> None:
    args = parse_and_pin(__doc__, "8,16,32,64,512", 21)
    rng = np.random.default_rng(0)
    print(
        f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, {args.threads} thread(s), "
        f"load average {os.getloadavg()[0]:.1f} before"
    )
    for dt in (np.float32, np.float64):
        for n in (int(s) for s in args.sizes.split(",")):
            a, b = rng.standard_normal((n, n)).astype(dt), rng.standard_normal((n, n)).astype(dt)
            calls = max(3, int(4e7 / (2 * n**3 + 20000)))  # samples of ~1 ms and more
            t_np: list[float] = []
            t_fg: list[float] = []
            try:
                for _ in range(args.rounds):
                    fg.restore_numpy()
                    t_np.append(_sample(a, b, calls))
                    fg.patch_numpy()
                    t_fg.append(_sample(a, b, calls))
            finally:
                fg.restore_numpy()
            m_np, m_fg = statistics.median(t_np), statistics.median(t_fg)
            print(
                f"{np.dtype(dt).name} {n}x{n}: numpy {m_np * 1e6:9.2f} us, switch {m_fg * 1e6:9.2f} us, "
                f"{m_np / m_fg:.2f}x ({calls} calls x {args.rounds} samples each)"
            )
    print(f"load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
