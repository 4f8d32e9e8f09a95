"""Matrix-vector products with the matrix at each 16-byte offset in a 64-byte line, in one process.

NumPy's arrays start 16-48 bytes past a line (its allocator's header), so where a matrix sits
in a line decides whether every vector load along its rows straddles two lines
(docs/DESIGN.md, "Matrix-vector chunk"). For each size and offset, `v @ A` (the rows form) and
`A @ v` (the dots form) on fastgemm (`fg.matmul(..., out=)`) and NumPy (`np.matmul(..., out=)`)
alternate sample by sample; prints GFLOP/s and the ratio fastgemm / NumPy (medians).

    python bench/matvec_offsets.py               # float32 and float64, n = 128 .. 1024, 1 thread
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable

import numpy as np
from switch_small import parse_and_pin  # bench/ is this script's directory, first on sys.path

import fastgemm as fg


def _at(shape: tuple[int, ...], dt: type, offset: int) -> np.ndarray:
    """An array of `shape` starting `offset` bytes past a 64-byte boundary."""
    items = int(np.prod(shape))
    size = np.dtype(dt).itemsize
    buf = np.empty(items * size + 128, np.uint8)
    start = (-buf.ctypes.data) % 64 + offset
    return buf[start : start + items * size].view(dt).reshape(shape)


def time_into(f: Callable[[], object], calls: int, samples: list[float]) -> None:
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    samples.append((time.perf_counter() - t0) / calls)


def main() -> None:
    args = parse_and_pin(__doc__, "128,256,512,1024", 9)
    rng = np.random.default_rng(0)
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, {args.threads} thread(s)")
    for dt in (np.float32, np.float64):
        for n in (int(s) for s in args.sizes.split(",")):
            for offset in (0, 16, 32, 48):
                a = _at((n, n), dt, offset)
                a[:] = rng.standard_normal((n, n))
                v, out = _at((n,), dt, 16), _at((n,), dt, 16)
                v[:] = rng.standard_normal(n)
                calls = max(3, int(1e7 / (n * n + 1000)))
                row: list[str] = []
                for form, (x, y) in (("v @ A", (v, a)), ("A @ v", (a, v))):
                    fg_call = functools.partial(fg.matmul, x, y, out=out)
                    np_call = functools.partial(np.matmul, x, y, out=out)
                    t_fg: list[float] = []
                    t_np: list[float] = []
                    for _ in range(args.rounds):
                        time_into(fg_call, calls, t_fg)
                        time_into(np_call, calls, t_np)
                    g_fg, g_np = (2 * n * n / statistics.median(t) / 1e9 for t in (t_fg, t_np))
                    row.append(f"{form}: fastgemm {g_fg:6.1f} numpy {g_np:6.1f} GFLOP/s {g_fg / g_np:.2f}x")
                print(f"{np.dtype(dt).name} {n}x{n} A +{offset:2d} bytes  " + "   ".join(row), flush=True)


if __name__ == "__main__":
    main()
