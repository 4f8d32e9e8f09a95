"""A linear layer y = gelu_tanh(x @ W + b), K = N = 4096, as issue 12 states its targets.

Times, in one process, alternating, thread CPU time on one thread, median of rounds:
NumPy's composition (x @ W, then the bias and an in-place gelu_tanh, as the bench's `linear`
group writes it), fastgemm fused with W unpacked, fastgemm fused with W pre-packed
(`fastgemm.pack`), and torch's `gelu(linear(x, W.T, b), approximate="tanh")` when torch imports.

    python bench/linear_layer.py
"""

from __future__ import annotations

import numpy as np

import fastgemm as fg
from fastgemm.bench.measure import cpu_time_medians
from fastgemm.bench.suite import linear_numpy


def main() -> None:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError as e:
        raise SystemExit("needs threadpoolctl (pip install threadpoolctl) to give NumPy's BLAS one thread") from e
    fg.set_num_threads(1)
    threadpool_limits(1, user_api="blas")
    rng = np.random.default_rng(0)
    k = n = 4096
    w = rng.standard_normal((k, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    packed = fg.pack(w)
    try:
        import torch  # type: ignore[import-not-found, import-untyped, unused-ignore]

        torch.set_num_threads(1)
        wt, bt = torch.from_numpy(np.ascontiguousarray(w.T)), torch.from_numpy(b)
    except ImportError:
        torch = None
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}, 1 thread, float32, K = N = {k}, GFLOP/s")
    for m in (1, 16, 128, 512):
        x = rng.standard_normal((m, k)).astype(np.float32)
        fns = {
            "numpy": lambda x=x: linear_numpy(x, w, b),
            "fused": lambda x=x: fg.gemm(x, w, bias=b, activation="gelu_tanh"),
            "fused+packed": lambda x=x: fg.gemm(x, packed, bias=b, activation="gelu_tanh"),
        }
        if torch is not None:
            xt = torch.from_numpy(x)
            fns["torch"] = lambda xt=xt: torch.nn.functional.gelu(
                torch.nn.functional.linear(xt, wt, bt), approximate="tanh"
            )
        reps = 30 if m == 1 else max(3, int(2e9 / (2 * m * k * n)))
        med = cpu_time_medians(fns, reps, 5 if m >= 128 else 9)
        rates = "  ".join(f"{name} {2 * m * k * n / t / 1e9:6.1f}" for name, t in med.items())
        ratio = f"fused+packed / numpy {med['numpy'] / med['fused+packed']:.2f}x"
        if "torch" in med:
            ratio += f", / torch {med['torch'] / med['fused+packed']:.2f}x"
        print(f"M = {m:4d}: {rates}  ({ratio})")


if __name__ == "__main__":
    main()
