"""fastgemm.pack / PackedMatrix: products against the float64 reference on every kernel, edge
shapes around the tiles and the KC / NC blocks, trans=True, alpha/beta with a given C, thread
counts, lifetime, pickling, set_kernel after packing, read-only, bad arguments."""

import gc
import os
import pickle
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import fastgemm
from conftest import KERNELS
from gemm_check import DTYPES, ELEMENT_LAYOUTS, LAYOUTS, Placed, assert_matches, random_matrix, reference, tiles


@pytest.fixture(autouse=True)
def restore_threads():
    before = fastgemm.get_num_threads()
    yield
    fastgemm.set_num_threads(before)


def check_product(a, p, b, c=None, alpha=1.0, beta=0.0, what=""):
    """gemm(a, p) against the reference of a @ b (b: the values p was packed from)."""
    c0 = None if c is None else c.copy()
    got = fastgemm.gemm(a, p, c, alpha=alpha, beta=beta)
    ref, bound = reference(a, b, c0 if c0 is not None else np.zeros(got.shape, a.dtype), alpha, beta)
    assert_matches(got, ref, bound, what)
    return got


def edge_shapes(kernel, dtype):
    """(m, n, k) around the tile (MR, NR), the gemv groups (4 NR) and the KC block."""
    mr, nr, _, kc, _ = tiles(kernel, dtype)
    return sorted(
        {
            (1, 1, 1),
            (1, 4 * nr + 1, 7),
            (1, 4 * nr - 1, kc + 1),
            (1, 13, 2 * kc + 3),
            (mr - 1, nr - 1, 5),
            (mr, nr, kc),
            (mr + 1, nr + 1, kc - 1),
            (2 * mr + 1, 3 * nr - 1, kc + 1),
            (37, 41, 43),
            (97, 5, 211),
            (3, 101, 2 * kc + 1),
        }
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_edge_shapes(kernel, dtype):
    rng = np.random.default_rng(1)
    for m, n, k in edge_shapes(kernel, dtype):
        a, b = random_matrix(rng, (m, k), dtype), random_matrix(rng, (k, n), dtype)
        p = fastgemm.pack(b)
        assert p.kernel == kernel and p.shape == (k, n) and p.dtype == dtype
        check_product(a, p, b, what=f"{kernel} {m}x{n}x{k}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_n_beyond_one_panel(kernel, dtype):
    """N larger than one NC panel (the default NC, so few rows and a shallow k keep it cheap)."""
    rng = np.random.default_rng(2)
    nc = tiles(kernel, dtype)[4]
    for m in (1, 5):
        a, b = random_matrix(rng, (m, 3), dtype), random_matrix(rng, (3, nc + 5), dtype)
        check_product(a, fastgemm.pack(b), b, what=f"{kernel} {m}x{nc + 5}x3")


def test_small_blocks_in_a_fresh_process():
    """Many KC slices and NC panels at once: FASTGEMM_KC / NC / MC are read once per process."""
    code = """
        import numpy as np, fastgemm
        from gemm_check import assert_matches, random_matrix, reference
        rng = np.random.default_rng(3)
        for kernel in fastgemm.available_kernels():
            fastgemm.set_kernel(kernel)
            for dtype in (np.float32, np.float64):
                for m, n, k in ((1, 70, 50), (7, 67, 61), (40, 129, 100), (13, 33, 16)):
                    a, b = random_matrix(rng, (m, k), dtype), random_matrix(rng, (k, n), dtype)
                    c = random_matrix(rng, (m, n), dtype)
                    ref, bound = reference(a, b, c, 0.5, -1.5)
                    got = fastgemm.gemm(a, fastgemm.pack(b), c.copy(), alpha=0.5, beta=-1.5)
                    assert_matches(got, ref, bound, f"{kernel} {m}x{n}x{k}")
        print("ok")
    """
    env = {"FASTGEMM_KC": "16", "FASTGEMM_NC": "32", "FASTGEMM_MC": "8", "PYTHONPATH": _tests_path()}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=_env(env), capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def _tests_path():
    return os.path.dirname(os.path.abspath(__file__))


def _env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTGEMM_")}
    env.update(extra)
    return env


@pytest.mark.parametrize("dtype", DTYPES)
def test_trans_packs_w_transposed(kernel, dtype):
    rng = np.random.default_rng(4)
    w = random_matrix(rng, (45, 70), dtype)  # a layer's weights: n x k
    x = random_matrix(rng, (9, 70), dtype)
    p = fastgemm.pack(w, trans=True)
    assert p.shape == (70, 45)
    assert np.array_equal(p.unpack(), w.T)
    assert p == fastgemm.pack(np.ascontiguousarray(w.T))
    for flag in ("T", 1, np.True_):
        assert fastgemm.pack(w, trans=flag) == p
    got = check_product(x, p, w.T)
    assert np.array_equal(got, fastgemm.gemm(x, fastgemm.pack(w.T.copy())))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ELEMENT_LAYOUTS)
def test_alpha_beta_into_a_given_c(kernel, dtype, layout):
    rng = np.random.default_rng(5)
    mr, nr = tiles(kernel, dtype)[:2]
    for m, n, k in ((1, 3 * nr + 2, 19), (mr + 2, nr + 3, 31)):
        a, b = random_matrix(rng, (m, k), dtype), random_matrix(rng, (k, n), dtype)
        p = fastgemm.pack(b)
        for alpha, beta in ((1.0, 0.0), (0.75, -0.5), (-1.0, 1.0), (0.0, 0.5), (np.float32(2), np.array(0.25))):
            placed = Placed(random_matrix(rng, (m, n), dtype), layout)
            c0 = placed.arr.copy()
            got = fastgemm.gemm(a, p, placed.arr, alpha=alpha, beta=beta)
            assert got is placed.arr
            ref, bound = reference(a, b, c0, alpha, beta)
            assert_matches(got, ref, bound, f"{kernel} {layout} alpha={alpha} beta={beta}")
            assert placed.untouched_outside()


@pytest.mark.parametrize("dtype", DTYPES)
def test_blas_rules_nan_and_inf(kernel, dtype):
    rng = np.random.default_rng(6)
    a, b = random_matrix(rng, (7, 30), dtype), random_matrix(rng, (30, 21), dtype)
    # beta == 0 never reads C: NaN there does not survive.
    c = np.full((7, 21), np.nan, dtype)
    assert not np.isnan(fastgemm.gemm(a, fastgemm.pack(b), c)).any()
    # alpha == 0 never reads B: NaN packed in it does not reach C.
    bn = np.full_like(b, np.nan)
    c = random_matrix(rng, (7, 21), dtype)
    assert np.array_equal(fastgemm.gemm(a, fastgemm.pack(bn), c.copy(), alpha=0.0, beta=0.5), c * dtype(0.5))
    # NaN and Inf propagate as IEEE arithmetic says, through the tile and the one-row path.
    a[2, 3], a[4, 5], b[6, 7] = np.inf, np.nan, -np.inf
    for m in (1, 3, 7):
        check_product(a[:m].copy(), fastgemm.pack(b), b, what=f"{kernel} specials m={m}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_dimensions(dtype):
    for m, n, k in ((0, 5, 3), (4, 0, 3), (4, 5, 0), (0, 0, 0)):
        p = fastgemm.pack(np.ones((k, n), dtype))
        assert p.shape == (k, n) and p.unpack().shape == (k, n)
        got = fastgemm.gemm(np.ones((m, k), dtype), p)
        assert got.shape == (m, n) and not got.any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_packs_any_layout(dtype, layout):
    rng = np.random.default_rng(7)
    values = random_matrix(rng, (23, 37), dtype)
    placed = Placed(values, layout)
    p = fastgemm.pack(placed.arr)
    assert np.array_equal(p.unpack(), values)
    assert placed.untouched()


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_row_is_the_tiles_row(kernel, dtype):
    """The one-row path and the tile finish each element the same way: same bits."""
    rng = np.random.default_rng(8)
    a, b = random_matrix(rng, (9, 1100), dtype), random_matrix(rng, (1100, 301), dtype)
    p = fastgemm.pack(b)
    full = fastgemm.gemm(a, p)
    for i in (0, 4, 8):
        assert np.array_equal(fastgemm.gemm(a[i : i + 1], p)[0], full[i])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 4099, 513), (1, 8191, 700), (300, 280, 250), (45, 65, 9000), (1023, 129, 65)])
def test_thread_counts_give_the_same_bits(kernel, dtype, shape):
    m, n, k = shape
    rng = np.random.default_rng(9)
    a, b = random_matrix(rng, (m, k), dtype), random_matrix(rng, (k, n), dtype)
    p = fastgemm.pack(b)
    results = []
    for threads in (1, 2):
        fastgemm.set_num_threads(threads)
        results.append(fastgemm.gemm(a, p))
    assert np.array_equal(results[0], results[1])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(200, 700, 1000), (300, 280, 250), (1023, 129, 1100), (64, 2100, 1000)])
def test_same_bits_as_unpacked_b(kernel, dtype, shape):
    """Shapes where gemm with an array B runs the blocked loops with B packed per call: the
    packed B takes the same loops (five_loops) with the same k slices and tile, so the same bits,
    fused epilogue included, on 1 and 2 threads. 200 x 700 x 1000 is past every set's small-product
    cap (200 x 300 x 700 was not, with a 2 MiB L2: the small kernels sum k in one chain), and
    1023 x 129 x 1100 past the AVX-512 sets' B of 2 L1s and the generic set's cap (1023 x 129 x 65
    is a small product on AVX-512, whose last column goes to the dot kernel)."""
    m, n, k = shape
    rng = np.random.default_rng(15)
    a, b = random_matrix(rng, (m, k), dtype), random_matrix(rng, (k, n), dtype)
    bias = random_matrix(rng, (1, n), dtype)[0]
    p = fastgemm.pack(b)
    for threads in (1, 2):
        fastgemm.set_num_threads(threads)
        assert np.array_equal(fastgemm.gemm(a, p), fastgemm.gemm(a, b))
        fused = fastgemm.gemm(a, p, bias=bias, activation="gelu_tanh")
        assert np.array_equal(fused, fastgemm.gemm(a, b, bias=bias, activation="gelu_tanh"))


def test_owns_its_memory():
    rng = np.random.default_rng(10)
    a, b = random_matrix(rng, (6, 50), np.float32), random_matrix(rng, (50, 40), np.float32)
    before = fastgemm.gemm(a, b)
    p = fastgemm.pack(b)
    b[...] = np.nan  # changing the original changes nothing
    assert np.array_equal(fastgemm.gemm(a, p), before)
    a8, b8 = rng.integers(0, 256, (6, 50)).astype(np.uint8), rng.integers(-128, 128, (50, 40)).astype(np.int8)
    before = fastgemm.gemm(a8, b8)
    p = fastgemm.pack(b8)
    b8[...] = 0
    assert np.array_equal(fastgemm.gemm(a8, p), before)
    makers = (
        lambda: random_matrix(rng, (40, 50), np.float64),
        lambda: rng.integers(-128, 128, (40, 50)).astype(np.int8),
    )
    for make in makers:  # the only reference to w is the loop's
        w = make()
        ref = w.T.copy()
        ref_b = weakref.ref(w)
        p = fastgemm.pack(w, trans=True)
        del w
        gc.collect()
        assert ref_b() is None  # the original is gone...
        assert np.array_equal(p.unpack(), ref)  # ...and the packed copy is whole
        u = p.unpack()
        u[...] = 0  # unpack gives a fresh copy
        assert np.array_equal(p.unpack(), ref)


def test_freed_when_dropped():
    p = fastgemm.pack(np.ones((64, 64), np.float32))
    ref = weakref.ref(p)
    del p
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("dtype", DTYPES)
def test_pickles_as_its_values(dtype):
    rng = np.random.default_rng(11)
    b = random_matrix(rng, (33, 29), dtype)
    b[1, 2] = np.nan
    p = fastgemm.pack(b, trans=False)
    q = pickle.loads(pickle.dumps(p))
    assert isinstance(q, fastgemm.PackedMatrix)
    assert q == p and q.shape == p.shape and q.dtype == p.dtype
    assert np.array_equal(q.unpack(), b, equal_nan=True)
    assert p != fastgemm.pack(np.zeros_like(b))
    assert p != fastgemm.pack(b.astype(np.float32 if dtype == np.float64 else np.float64))
    assert (p == b) is False  # an array is not a PackedMatrix
    with pytest.raises(TypeError):
        hash(p)


@pytest.mark.skipif(len(KERNELS) < 2, reason="one kernel on this machine")
@pytest.mark.parametrize("dtype", (*DTYPES, np.int8))
def test_survives_set_kernel(dtype):
    rng = np.random.default_rng(12)
    if dtype == np.int8:  # uint8 A, an exact int32 product
        a, b = rng.integers(0, 256, (13, 77)).astype(np.uint8), rng.integers(-128, 128, (77, 45)).astype(np.int8)
    else:
        a, b = random_matrix(rng, (13, 77), dtype), random_matrix(rng, (77, 45), dtype)
    before = fastgemm.get_kernel()
    try:
        fastgemm.set_kernel(KERNELS[0])
        p = fastgemm.pack(b)
        assert p.kernel == KERNELS[0]
        for name in KERNELS[1:] + KERNELS[:1]:
            fastgemm.set_kernel(name)
            what = f"packed for another kernel, run on {name}"
            if dtype == np.int8:
                np.testing.assert_array_equal(fastgemm.gemm(a, p), a.astype(np.int64) @ b, err_msg=what)
            else:
                check_product(a, p, b, what=what)
            assert p.kernel == name  # repacked once, for the kernel in use
            assert np.array_equal(p.unpack(), b)
    finally:
        fastgemm.set_kernel(before)


def test_read_only_and_described():
    p = fastgemm.pack(np.ones((10, 20), np.float32))
    with pytest.raises(TypeError):
        memoryview(p)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        np.add(p, 1)
    with pytest.raises(AttributeError):
        p.shape = (20, 10)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        p.extra = 1  # type: ignore[attr-defined]
    assert p.nbytes >= 10 * 20 * 4
    text = repr(p)
    assert "PackedMatrix" in text and "(10, 20)" in text and "float32" in text and p.kernel in text


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_and_operator(dtype):
    rng = np.random.default_rng(13)
    w = random_matrix(rng, (24, 31), dtype)
    p = fastgemm.pack(w, trans=True)
    x = random_matrix(rng, (2, 3, 31), dtype)
    for got in (fastgemm.matmul(x, p), x @ p):
        assert got.shape == (2, 3, 24)
        ref, bound = reference(x.reshape(6, 31), w.T, np.zeros((6, 24), dtype), 1.0, 0.0)
        assert_matches(got.reshape(6, 24), ref, bound)
    v = x[0, 0]
    assert np.array_equal(v @ p, fastgemm.matmul(x, p)[0, 0])
    out = np.empty((2, 3, 24), dtype)
    assert fastgemm.matmul(x, p, out=out) is out
    assert np.array_equal(out, x @ p)
    with pytest.raises(TypeError):
        fastgemm.matmul(x.astype(np.float16), p)
    with pytest.raises(ValueError):
        fastgemm.matmul(x[..., :5], p)
    with pytest.raises(ValueError):
        fastgemm.matmul(x, p, out=np.empty((6, 24), dtype))
    with pytest.raises(TypeError):
        fastgemm.matmul(x, p, dtype=dtype)


def test_bad_arguments_raise_before_computing():
    rng = np.random.default_rng(14)
    a, b = random_matrix(rng, (4, 6), np.float32), random_matrix(rng, (6, 5), np.float32)
    p = fastgemm.pack(b)
    c = random_matrix(rng, (4, 5), np.float32)
    c0 = c.copy()
    read_only = c.copy()
    read_only.flags.writeable = False
    bad = [
        (TypeError, lambda: fastgemm.pack(b.astype(np.int32))),
        (TypeError, lambda: fastgemm.pack(b.astype(np.float16))),
        (TypeError, lambda: fastgemm.pack(b.astype(">f4"))),
        (TypeError, lambda: fastgemm.pack(p)),
        (ValueError, lambda: fastgemm.pack(b[0])),
        (ValueError, lambda: fastgemm.pack(b[None])),
        (ValueError, lambda: fastgemm.pack(b, trans="X")),
        (TypeError, lambda: fastgemm.pack(b, trans=1.5)),
        (TypeError, lambda: fastgemm.PackedMatrix()),
        (ValueError, lambda: fastgemm.gemm(a, p, c, trans_b=True)),
        (ValueError, lambda: fastgemm.sgemm(a, p, c, trans_b="T")),
        (TypeError, lambda: fastgemm.gemm(a.astype(np.float64), p, c)),
        (TypeError, lambda: fastgemm.dgemm(a, p)),
        (ValueError, lambda: fastgemm.gemm(a[:, :5], p, c)),
        (ValueError, lambda: fastgemm.gemm(a, p, c[:, :4])),
        (ValueError, lambda: fastgemm.gemm(a, p, beta=1.0)),
        (TypeError, lambda: fastgemm.gemm(a, p, c.astype(np.float64))),
        (TypeError, lambda: fastgemm.gemm(a, p, c, alpha="2")),
        (ValueError, lambda: fastgemm.gemm(a, p, read_only)),
        (ValueError, lambda: fastgemm.gemm(a, p, np.lib.stride_tricks.as_strided(c, (4, 5), (4, 4)))),
    ]
    for exc, call in bad:
        with pytest.raises(exc):
            call()
        assert np.array_equal(c, c0)
