"""np.matmul calls on ml_dtypes.bfloat16 operands, run in a fresh interpreter by
tests/test_switch_bf16.py (NumPy caches how it resolved a call for the whole process, so each
state of the switch is checked in a process of its own).

    python bf16_switch_cases.py numpy RESULTS.npz    NumPy alone (fastgemm never imported)
    python bf16_switch_cases.py STATES RESULTS.npz   with fastgemm: STATES is a comma list of
                                                     before, on, off (restore_numpy)
Each state writes every case's result (float32, or the bits of a bfloat16 out) or its error
message under "<state>/<case>", and the loop call counts under "<state>/calls".
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)


def cases(ref=None):
    """name -> a function computing one call on arrays from a fixed seed. ref="f64": the same
    calls on the exact input values in float64 (float64 outs), ref="abs": on their absolute
    values (|A||B|, for the error bound)."""
    rng = np.random.default_rng(20261201)

    def rand(shape, dtype=BF16):
        x = rng.uniform(-1, 1, size=shape).astype(np.float32).astype(dtype)
        if ref is None:
            return x
        x = x.astype(np.float64)
        return abs(x) if ref == "abs" else x

    def special():
        a = rand((9, 11))
        a[1, 2], a[4, 0], a[7, 7] = np.nan, np.inf, -np.inf
        return a

    def out(shape, dtype=F32, order="C"):
        real = np.dtype(dtype).kind == "f" or np.dtype(dtype) == BF16
        return np.full(shape, 7, np.float64 if ref is not None and real else dtype, order=order)

    def self_overlapping_out(n, m):
        """An out whose rows all share one buffer row (stride 0): the core cannot write it."""
        buf = out((m,))
        return np.lib.stride_tricks.as_strided(buf, (n, m), (0, buf.itemsize), writeable=True)

    a, b = rand((37, 29)), rand((29, 41))
    big_a, big_b = rand((130, 260)), rand((260, 70))
    s3a, s3b = rand((4, 5, 6)), rand((4, 6, 7))
    bca, bcb = rand((2, 1, 5, 6)), rand((3, 6, 7))
    v = rand((29,))
    sq = rand((8, 8))
    f32 = rand((29, 41), F32)
    sp = special()
    wide = rand((40, 60))
    other = rand((3, 6, 7))

    def inplace():
        x = sq.copy()
        x @= sq
        return x

    return {
        "c_order": lambda: np.matmul(a, b),
        "operator": lambda: a @ b,
        "f_order": lambda: np.matmul(np.asfortranarray(a), np.asfortranarray(b)),
        "transposed": lambda: np.matmul(b.T, a.T),
        "strided": lambda: np.matmul(wide[::2, 1::3], wide[::3, ::2].T[:20]),
        "negative_strides": lambda: np.matmul(a[::-1, ::-1], b[::-1]),
        "packed_size": lambda: np.matmul(big_a, big_b),
        "stack": lambda: np.matmul(s3a, s3b),
        "broadcast": lambda: np.matmul(bca, bcb),
        "vec_mat": lambda: np.matmul(v, b),
        "mat_vec": lambda: np.matmul(a, v),
        "vec_vec": lambda: np.matmul(v, v),
        "linalg": lambda: np.linalg.matmul(a, b),
        "out_f32": lambda: np.matmul(a, b, out=out((37, 41))),
        "out_f32_fortran": lambda: np.matmul(a, b, out=out((37, 41), order="F")),
        "out_f32_swapped": lambda: np.matmul(a, b, out=out((37, 41), np.dtype(">f4"))),
        "out_bf16": lambda: np.matmul(a, b, out=out((37, 41), BF16)),
        "out_overlapping": lambda: np.matmul(sq, sq, out=self_overlapping_out(8, 8)),
        "inplace": inplace,
        "dtype_f32": lambda: np.matmul(a, b, dtype=np.float32),
        "dtype_f64": lambda: np.matmul(a, b, dtype=np.float64),
        "empty_n": lambda: np.matmul(a[:0], b),
        "empty_k": lambda: np.matmul(a[:, :0], b[:0]),
        "empty_stack": lambda: np.matmul(s3a[:0], s3b[:0]),
        "mixed_bf16_f32": lambda: np.matmul(a, f32),
        "mixed_f32_bf16": lambda: np.matmul(f32.T, a.T),
        "mixed_bf16_f16": lambda: np.matmul(a, b.astype(np.float16)),
        "nan_inf": lambda: np.matmul(sp, sp.T),
        "shape_mismatch": lambda: np.matmul(a, a),
        "stack_mismatch": lambda: np.matmul(s3a, other),
        "casting_no": lambda: np.matmul(a, b, casting="no"),
        "casting_safe": lambda: np.matmul(a, b, casting="safe"),
        "out_wrong_shape": lambda: np.matmul(a, b, out=out((37, 40))),
        "out_int": lambda: np.matmul(a, b, out=out((37, 41), np.int32)),
    }


def run_cases(state, results):
    for name, fn in cases().items():
        key = f"{state}/{name}"
        try:
            with np.errstate(all="ignore"):
                r = np.asarray(fn())
        except Exception as e:  # the error itself is what is compared
            results[key] = np.array(f"{type(e).__name__}: {e}")
            continue
        results[key] = r.view(np.uint16) if r.dtype == BF16 else r
        results[key + "@dtype"] = np.array(str(r.dtype))


def main(mode, path):
    results = {}
    if mode == "numpy":
        run_cases("numpy", results)
    else:
        import fastgemm
        from fastgemm import _core

        for state in mode.split(","):
            if state == "on":
                fastgemm.patch_numpy()
            elif state == "off":
                fastgemm.restore_numpy()
            run_cases(state, results)
            calls = _core.bf16_matmul_loop_calls()
            results[f"{state}/calls"] = np.array([calls["fastgemm"], calls["numpy"]])
        results["registered"] = np.array(_core.bf16_matmul_loop_registered())
    np.savez(path, **results)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
