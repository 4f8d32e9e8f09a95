"""np.vecdot, np.matvec and np.vecmat with the switch off, on, and on with every product on fastgemm.

With the switch on, the vector gufuncs keep NumPy's own loop for items under
`_core.switch_min_flops()` multiply-adds (docs/DESIGN.md, "NumPy loop threshold"); this measures
that choice. Each sample is a loop of calls; the three states alternate sample by sample in one
process and the median of each is kept. Prints NumPy's time per call and the ratio NumPy / state
for the switch as shipped and with the threshold lowered to 0 (every item on fastgemm's loop).

    python bench/switch_vector.py                # float32 and float64, 1 thread (NumPy 2.x)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
from switch_small import parse_and_pin  # bench/ is this script's directory, first on sys.path

import fastgemm as fg
from fastgemm import _core


def _sample(f: Callable[[], object], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls


def _cases(sizes: list[int], dt: type) -> list[tuple[str, Callable[[], object], int]]:
    rng = np.random.default_rng(0)
    cases: list[tuple[str, Callable[[], object], int]] = []
    for n in sizes:
        x, y = rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt)
        xs, ys = rng.standard_normal((100, n)).astype(dt), rng.standard_normal((100, n)).astype(dt)
        a = rng.standard_normal((n, n)).astype(dt)
        cases += [
            (f"vecdot {n}", lambda x=x, y=y: np.vecdot(x, y), n),
            (f"vecdot 100x{n}", lambda xs=xs, ys=ys: np.vecdot(xs, ys), 100 * n),
            (f"matvec {n}x{n}", lambda a=a, x=x: np.matvec(a, x), n * n),
            (f"vecmat {n}x{n}", lambda a=a, x=x: np.vecmat(x, a), n * n),
        ]
    return cases


def main() -> None:
    args = parse_and_pin(__doc__, "4,16,64,256,512", 11)
    if not hasattr(np, "matvec"):
        raise SystemExit("np.matvec and np.vecmat need NumPy >= 2.2")
    shipped = _core.switch_min_flops()
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, {args.threads} thread(s), threshold {shipped}")
    sizes = [int(s) for s in args.sizes.split(",")]
    for dt in (np.float32, np.float64):
        for name, f, madds in _cases(sizes, dt):
            calls = max(20, int(1e6 / (madds + 1000)))
            times: dict[str, list[float]] = {"numpy": [], "switch": [], "all": []}
            try:
                for _ in range(args.rounds):
                    fg.restore_numpy()
                    times["numpy"].append(_sample(f, calls))
                    fg.patch_numpy()
                    times["switch"].append(_sample(f, calls))
                    _core.set_switch_min_flops(0)
                    times["all"].append(_sample(f, calls))
                    _core.set_switch_min_flops(shipped)
            finally:
                _core.set_switch_min_flops(shipped)
                fg.restore_numpy()
            m = {k: statistics.median(v) for k, v in times.items()}
            print(
                f"{np.dtype(dt).name} {name:16s} numpy {m['numpy'] * 1e6:9.3f} us, "
                f"switch {m['numpy'] / m['switch']:.2f}x, every item on fastgemm {m['numpy'] / m['all']:.2f}x"
            )


if __name__ == "__main__":
    main()
