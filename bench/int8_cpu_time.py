"""int8 products against fastgemm's float32 (and torch when installed), on one thread, in thread
CPU time: usable on a shared machine, where wall-clock time counts the other jobs too.

fastgemm u8 x s8, s8 x s8 and sgemm (and torch._int_mm / torch.matmul) are called in turn on the
same data, a few rounds; each median is printed in GOP/s (2 per multiply-add) with its ratio to
fastgemm's float32 rate at the same size.

    python bench/int8_cpu_time.py 512 2048

`decode` times one row instead, 1 x 4096 x 4096 (a decode step): u8 x s8 -> int32 through the
matrix-vector path, the same with W stored n x k (a Linear layer's), the dequantised row with bias
and gelu_tanh, the int8 tile on the same row (a strided C, which the matrix-vector path does not
take: what every int8 row ran before it), and fastgemm's float32 row:

    python bench/int8_cpu_time.py decode
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import fastgemm as fg
from fastgemm.bench.measure import cpu_time_medians


def one_size(n: int, torch: Any, rng: np.random.Generator) -> None:
    u8 = rng.integers(0, 256, (n, n)).astype(np.uint8)
    s8 = rng.integers(-128, 128, (n, n)).astype(np.int8)
    b8 = rng.integers(-128, 128, (n, n)).astype(np.int8)
    af, bf = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    fns = {
        "fastgemm u8s8": lambda: fg.gemm(u8, b8),
        "fastgemm s8s8": lambda: fg.gemm(s8, b8),
        "fastgemm float32": lambda: fg.sgemm(af, bf),
    }
    if torch is not None:
        ts, tb, taf, tbf = (torch.from_numpy(x) for x in (s8, b8, af, bf))
        fns["torch._int_mm s8s8"] = lambda: torch._int_mm(ts, tb)
        fns["torch float32"] = lambda: torch.matmul(taf, tbf)
    rounds, number = (7 if n <= 1024 else 5), max(1, int(2e8 / n**3))
    for f in fns.values():
        f()
    med = cpu_time_medians(fns, number, rounds)
    f32 = 2 * n**3 / med["fastgemm float32"] / 1e9
    for k, v in med.items():
        g = 2 * n**3 / v / 1e9
        print(f"{n}^3 {k:<20} {g:7.1f} GOP/s  {g / f32:5.2f}x fastgemm float32")


def decode(rng: np.random.Generator, k: int = 4096, n: int = 4096) -> None:
    x = rng.integers(0, 256, (1, k)).astype(np.uint8)
    w = rng.integers(-128, 128, (k, n)).astype(np.int8)
    wt = np.ascontiguousarray(w.T)
    scale = rng.uniform(-0.01, 0.01, n).astype(np.float32)
    bias = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    xf, wf = rng.random((1, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    strided = np.empty((1, 2 * n), np.int32)[:, ::2]
    fns = {
        "u8s8 int32": lambda: fg.gemm(x, w),
        "u8s8 int32, W n x k": lambda: fg.gemm(x, wt, trans_b=True),
        "u8s8 dequant+gelu": lambda: fg.gemm(x, w, scale=scale, bias=bias, activation="gelu_tanh"),
        "u8s8 int32 tile": lambda: fg.gemm(x, w, strided),
        "fastgemm float32": lambda: fg.sgemm(xf, wf),
    }
    for f in fns.values():
        f()
    med = cpu_time_medians(fns, 5, 9)
    f32 = 2 * k * n / med["fastgemm float32"] / 1e9
    tile = med["u8s8 int32 tile"]
    for name, v in med.items():
        g = 2 * k * n / v / 1e9
        print(f"1x{n}x{k} {name:<20} {g:7.1f} GOP/s  {g / f32:5.2f}x fastgemm float32  {tile / v:5.2f}x the tile")


def main(sizes: list[int]) -> None:
    fg.set_num_threads(1)
    try:
        import torch  # type: ignore[import-not-found, import-untyped, unused-ignore]

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    for n in sizes:
        one_size(n, torch, rng)


if __name__ == "__main__":
    if sys.argv[1:] == ["decode"]:
        fg.set_num_threads(1)
        decode(np.random.default_rng(0))
    else:
        main([int(s) for s in sys.argv[1:]] or [512, 2048])
