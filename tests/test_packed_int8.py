"""fastgemm.pack on int8 B: one PackedMatrix for uint8 and int8 A, exact int32 products against an
int64 reference and bitwise equal to the same product with B unpacked (int32 and dequantised
float32, bias and activation included) on every kernel, edge shapes around the int8 tiles and KC
blocks, the extremes over long K, trans=True, thread counts, pickling, matmul, bad arguments
(lifetime and set_kernel after packing: test_packed.py)."""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fastgemm
from gemm_check import ELEMENT_LAYOUTS, Placed, on_threads
from test_int8 import A_TYPES, dequantised, int8_tiles, rand, reference, shapes

RNG = np.random.default_rng(1212)


def test_exact_on_edge_shapes(kernel):
    for m, n, k in shapes(kernel):
        b = rand((k, n), np.int8)
        p = fastgemm.pack(b)
        assert p.kernel == kernel and p.shape == (k, n) and p.dtype == np.int8
        for adt in A_TYPES:  # one packed B for both types of A
            a = rand((m, k), adt)
            got = fastgemm.gemm(a, p)
            assert got.dtype == np.int32 and got.shape == (m, n)
            what = f"{kernel} {adt.__name__} {m}x{n}x{k}"
            np.testing.assert_array_equal(got, reference(a, b), err_msg=what)
            np.testing.assert_array_equal(got, fastgemm.gemm(a, b), err_msg=what)


@pytest.mark.parametrize("adt", A_TYPES)
def test_scale_bias_activation_as_unpacked(kernel, adt):
    """Dequantisation and the epilogue give the bits the unpacked product gives."""
    for m, n, k in shapes(kernel)[4:]:
        a, b = rand((m, k), adt), rand((k, n), np.int8)
        p = fastgemm.pack(b)
        s = RNG.uniform(-0.02, 0.02, size=n).astype(np.float32)
        bias = RNG.uniform(-1, 1, size=n).astype(np.float32)
        np.testing.assert_array_equal(fastgemm.gemm(a, p, scale=s), dequantised(a, b, s))
        np.testing.assert_array_equal(fastgemm.gemm(a, p, scale=0.25), dequantised(a, b, 0.25))
        for act in (None, "relu", "gelu_tanh"):
            got = fastgemm.gemm(a, p, scale=s, bias=bias, activation=act)
            np.testing.assert_array_equal(got, fastgemm.gemm(a, b, scale=s, bias=bias, activation=act))


@pytest.mark.parametrize("adt", A_TYPES)
def test_layouts_and_given_c(kernel, adt):
    mr, nr, _, kc = int8_tiles(kernel)
    m, n, k = 2 * mr + 1, nr + 3, kc + 5  # two k slices: the scaled path keeps a partial sum in C
    a, b = rand((m, k), adt), rand((k, n), np.int8)
    ref, s = reference(a, b), RNG.uniform(0.5, 1, size=n).astype(np.float32)
    for layout in ELEMENT_LAYOUTS:
        pb = Placed(b, layout)
        p = fastgemm.pack(pb.arr)
        assert pb.untouched() and np.array_equal(p.unpack(), b)
        pa = Placed(a, layout)
        pc = Placed(np.zeros((m, n), np.int32), layout)
        assert fastgemm.gemm(pa.arr, p, pc.arr) is pc.arr
        np.testing.assert_array_equal(pc.arr, ref, err_msg=f"{kernel} {layout}")
        assert pc.untouched_outside() and pa.untouched()
        pf = Placed(np.zeros((m, n), np.float32), layout)
        fastgemm.gemm(pa.arr, p, pf.arr, scale=s)
        np.testing.assert_array_equal(pf.arr, dequantised(a, b, s), err_msg=f"{kernel} scaled {layout}")
        assert pf.untouched_outside()
    c0 = rand((m, n), np.int32)
    c = c0.copy()
    fastgemm.gemm(a, p, c, beta=1)
    np.testing.assert_array_equal(c, ((c0.astype(np.int64) + ref + 2**31) % 2**32 - 2**31).astype(np.int32))
    np.testing.assert_array_equal(fastgemm.gemm(np.ascontiguousarray(a.T), p, trans_a=True), ref)


def test_trans_packs_w_transposed(kernel):
    w = rand((45, 70), np.int8)  # a layer's weights: n x k
    x = rand((9, 70), np.uint8)
    p = fastgemm.pack(w, trans=True)
    assert p.shape == (70, 45)
    assert np.array_equal(p.unpack(), w.T)
    assert p == fastgemm.pack(np.ascontiguousarray(w.T))
    np.testing.assert_array_equal(fastgemm.gemm(x, p), reference(x, w.T))


def test_extremes_over_long_k(kernel):
    """255 x -128 and -128 x -128 over the longest K whose int32 sum is exact, and one more."""
    cases = ((np.uint8, 255, -128), (np.int8, -128, -128))
    for adt, x, y in cases:
        kmax = fastgemm._int8.EXACT_MAX_K[np.dtype(adt)]
        for k in (kmax, kmax + 1):
            a = np.full((3, k), x, adt)
            b = np.full((k, 2), y, np.int8)
            b[-1, 1] = 0  # a second column one term short
            got = fastgemm.gemm(a, fastgemm.pack(b))
            np.testing.assert_array_equal(got, reference(a, b), err_msg=f"{kernel} {x} x {y} K={k}")
            if k == kmax:
                assert int(got[0, 0]) == k * x * y


@pytest.mark.parametrize("adt", A_TYPES)
def test_thread_counts_give_the_same_bits(kernel, adt):
    a, b = rand((300, 700), adt), rand((700, 200), np.int8)
    p = fastgemm.pack(b)
    s = RNG.uniform(-1, 1, size=200).astype(np.float32)
    results = on_threads(lambda: (fastgemm.gemm(a, p), fastgemm.gemm(a, p, scale=s)))
    np.testing.assert_array_equal(results[0][0], reference(a, b))
    assert all(x.tobytes() == y.tobytes() for x, y in zip(*results))


def test_small_blocks_in_a_fresh_process():
    """Many KC slices and NC panels (each slice with its own column sums where the kernel packs
    them): FASTGEMM_KC / NC / MC are read once per process."""
    code = """
        import numpy as np, fastgemm
        from test_int8 import rand, reference
        for kernel in fastgemm.available_kernels():
            fastgemm.set_kernel(kernel)
            for m, n, k in ((1, 70, 50), (7, 67, 61), (40, 129, 100), (13, 33, 16)):
                b = rand((k, n), np.int8)
                p = fastgemm.pack(b)
                assert np.array_equal(p.unpack(), b)
                for adt in (np.uint8, np.int8):
                    a = rand((m, k), adt)
                    assert np.array_equal(fastgemm.gemm(a, p), reference(a, b)), (kernel, m, n, k)
        print("ok")
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTGEMM_")}
    env.update({"FASTGEMM_KC": "16", "FASTGEMM_NC": "32", "FASTGEMM_MC": "8"})
    env["PYTHONPATH"] = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_pickles_as_its_values():
    b = rand((33, 29), np.int8)
    b[0, :3] = (-128, 127, 0)
    p = fastgemm.pack(b)
    q = pickle.loads(pickle.dumps(p))
    assert isinstance(q, fastgemm.PackedMatrix)
    assert q == p and q.shape == p.shape and q.dtype == np.int8
    assert np.array_equal(q.unpack(), b) and q.unpack().dtype == np.int8
    assert p != fastgemm.pack(np.zeros_like(b))
    assert p != fastgemm.pack(b.astype(np.float32))
    a = rand((5, 33), np.int8)
    np.testing.assert_array_equal(fastgemm.gemm(a, q), reference(a, b))


def test_read_only_and_described():
    p = fastgemm.pack(np.ones((10, 20), np.int8))
    with pytest.raises(TypeError):
        memoryview(p)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        p.shape = (20, 10)  # type: ignore[misc]
    assert p.nbytes >= 10 * 20
    assert "int8" in repr(p) and "(10, 20)" in repr(p)


def test_matmul_and_operator():
    w = rand((24, 31), np.int8)
    p = fastgemm.pack(w, trans=True)
    for adt in A_TYPES:
        x = rand((2, 3, 31), adt)
        for got in (fastgemm.matmul(x, p), x @ p):
            assert got.dtype == np.int32 and got.shape == (2, 3, 24)
            np.testing.assert_array_equal(got.reshape(6, 24), reference(x.reshape(6, 31), w.T))
        out = np.empty((2, 3, 24), np.int32)
        assert fastgemm.matmul(x, p, out=out) is out
        np.testing.assert_array_equal(out, x @ p)
    with pytest.raises(TypeError, match="uint8 or int8"):
        fastgemm.matmul(x.astype(np.float32), p)
    with pytest.raises(ValueError):
        fastgemm.matmul(x[..., :5], p)
    with pytest.raises(ValueError, match="int32"):
        fastgemm.matmul(x, p, out=np.empty((2, 3, 24), np.float32))


def test_empty_dimensions():
    for m, n, k in ((0, 5, 3), (4, 0, 3), (4, 5, 0), (0, 0, 0)):
        p = fastgemm.pack(np.ones((k, n), np.int8))
        assert p.shape == (k, n) and p.unpack().shape == (k, n)
        got = fastgemm.gemm(np.ones((m, k), np.uint8), p)
        assert got.shape == (m, n) and got.dtype == np.int32 and not got.any()


U8, I8 = rand((3, 4), np.uint8), rand((4, 2), np.int8)
P8 = fastgemm.pack(I8)
PF = fastgemm.pack(I8.astype(np.float32))


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: fastgemm.gemm(U8.astype(np.float32), P8), TypeError, "float32 and b is int8"),
        (lambda: fastgemm.gemm(U8.astype(np.int16), P8), TypeError, "int16"),
        (lambda: fastgemm.gemm(U8, PF), TypeError, "must have dtype float32, got uint8"),
        (lambda: fastgemm.gemm(U8.astype(np.float32), PF, scale=1.0), TypeError, "dequantises"),
        (lambda: fastgemm.sgemm(U8.astype(np.float32), P8), TypeError, "PackedMatrix of int8"),
        (lambda: fastgemm.gemm(U8, P8, trans_b=True), ValueError, "fixed at pack time"),
        (lambda: fastgemm.gemm(U8[:, :3], P8), ValueError, "inner dimensions"),
        (lambda: fastgemm.gemm(U8, P8, alpha=2), ValueError, "alpha=2"),
        (lambda: fastgemm.gemm(U8, P8, np.zeros((3, 2), np.int32), beta=0.5), ValueError, "beta=0.5"),
        (lambda: fastgemm.gemm(U8, P8, np.zeros((3, 2), np.float32)), TypeError, "c must be int32"),
        (lambda: fastgemm.gemm(U8, P8, np.zeros((3, 3), np.int32)), ValueError, "shape"),
        (lambda: fastgemm.gemm(U8, P8, scale=np.ones(3, np.float32)), ValueError, r"shape \(2,\)"),
        (lambda: fastgemm.gemm(U8, P8, bias=np.zeros(2, np.float32)), ValueError, "need scale="),
        (lambda: fastgemm.pack(U8), TypeError, "float32, float64 or int8"),
        (lambda: fastgemm.pack(I8.astype(np.int16)), TypeError, "int16"),
    ],
)
def test_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_errors_leave_c_untouched():
    c = np.full((3, 2), 7, np.int32)
    for call in (
        lambda: fastgemm.gemm(U8, P8, c, alpha=3),
        lambda: fastgemm.gemm(U8.astype(np.float32), P8, c),
        lambda: fastgemm.gemm(U8, P8, c, trans_b="T"),
    ):
        with pytest.raises((TypeError, ValueError)):
            call()
    assert (c == 7).all()
