"""A user's script, checked with ``mypy --strict`` in CI (.ci/run): the public API is typed.

Not a pytest module (nothing here starts with ``test``); it also runs as a plain script:
``python tests/typing/user_script.py``. Every call below is one a user writes, with the
argument kinds the documentation promises (NumPy scalars and 0-d arrays as alpha/beta, BLAS
characters as transpose flags), so an annotation narrower than the runtime fails here.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

import fastgemm as fg
import fastgemm.blas


def products() -> None:
    rng = np.random.default_rng(0)
    a: npt.NDArray[np.float32] = rng.random((64, 32), dtype=np.float32)
    b: npt.NDArray[np.float32] = rng.random((32, 16), dtype=np.float32)

    c: npt.NDArray[np.float32] = fg.sgemm(a, b)
    fg.sgemm(a, b, c, alpha=0.5, beta=1.0)
    fg.sgemm(a.T.copy(), b, c, trans_a=True)
    fg.sgemm(a, b.T.copy(), c, trans_b="T", alpha=np.float32(2.0), beta=np.array(0.0))

    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    d: npt.NDArray[np.float64] = fg.dgemm(a64, b64)
    fg.dgemm(a64, b64, d, alpha=2, beta=np.float64(0.5), trans_a="N", trans_b=False)

    e = fg.gemm(a, b)
    print(e.shape, e.dtype)
    y = fg.gemm(a, b, bias=np.zeros(b.shape[1], np.float32), activation="gelu_tanh")
    fg.gemm(a64, b64, d, beta=1.0, activation="relu")
    print(y.shape)

    p: fg.PackedMatrix = fg.pack(b.T.copy(), trans=True)
    fg.gemm(a, p, c, alpha=0.5, beta=1.0)
    fg.sgemm(a, p, trans_b="N")
    print(fg.matmul(a, p).shape, (a @ p).shape, p.shape, p.dtype, p.nbytes, p.kernel, p.unpack().sum(), repr(p))
    w8 = np.ones((3, 4), np.int8)
    q: fg.PackedMatrix = fg.pack(w8, trans=True)
    x8 = np.ones((2, 4), np.uint8)
    print(fg.gemm(x8, q).sum(), fg.gemm(x8, q, scale=0.5, activation="relu").sum(), (x8 @ q).shape)

    f = fg.matmul(a, b)
    fg.matmul(a, b, out=c)
    g = fg.matmul(a64[None], b64)  # a stack of one
    print(f.shape, g.shape)

    with fg.patched():
        y = a @ b
    print(y.sum())
    fg.patch_numpy()
    on: bool = fg.is_patched()
    fg.restore_numpy()
    print(on)

    # scipy.linalg.blas's signature
    s = fastgemm.blas.sgemm(1.0, a, b)
    t = fastgemm.blas.dgemm(1.0, a64, b64, beta=0.0, trans_a=0)
    print(s.shape, t.shape)


def runtime() -> None:
    before: int = fg.get_num_threads()
    fg.set_num_threads(1)
    fg.set_num_threads(before)

    kernels: list[str] = fg.available_kernels()
    current: str = fg.get_kernel()
    fg.set_kernel(kernels[-1])
    fg.set_kernel(current)

    info = fg.info()
    print(info["kernel"], info["threads"])
    version: str = fg.__version__
    print(version)


if __name__ == "__main__":
    products()
    runtime()
