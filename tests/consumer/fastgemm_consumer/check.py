"""Multiply with the installed fastgemm and compare against NumPy; exit non-zero on a mismatch.

Run as ``python -m fastgemm_consumer.check``.
"""

import sys

import numpy as np

import fastgemm as fg


def error_bound(a, b, dtype):
    # 2 K u |A||B|: how far a correct float result may be from the exact product.
    u = np.finfo(dtype).eps / 2
    return 2 * a.shape[1] * u * (np.abs(a).astype(np.longdouble) @ np.abs(b).astype(np.longdouble))


def main():
    rng = np.random.default_rng(7)
    failures = []
    for dtype in (np.float32, np.float64):
        name = np.dtype(dtype).name
        a = rng.standard_normal((67, 45)).astype(dtype)
        b = rng.standard_normal((45, 29)).astype(dtype)
        c = fg.gemm(a, b)
        if c.dtype != dtype or c.shape != (67, 29):
            failures.append(f"{name}: expected a {name} (67, 29) result, got {c.dtype} {c.shape}")
            continue
        bound = error_bound(a, b, dtype)
        exact = a.astype(np.longdouble) @ b.astype(np.longdouble)
        if not np.all(np.abs(c - exact) <= bound):
            failures.append(f"{name}: differs from the exact product beyond the error bound")
        # NumPy's own result carries the same kind of error, so the two may differ by twice it.
        if not np.all(np.abs(c.astype(np.longdouble) - a @ b) <= 2 * bound):
            failures.append(f"{name}: differs from numpy.matmul beyond twice the error bound")
    print(f"fastgemm {fg.__version__}, kernel {fg.get_kernel()}: " + ("OK" if not failures else "; ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
