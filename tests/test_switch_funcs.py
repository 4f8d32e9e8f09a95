"""The switch beyond matmul: np.dot, np.inner, np.tensordot, np.linalg.multi_dot, einsum's
optimized paths and NumPy 2's vecdot / matvec / vecmat run on fastgemm, with NumPy's semantics,
and restore_numpy() puts back exactly what was there."""

import pickle
import sys
import warnings

import numpy as np
import pytest

import fastgemm
from fastgemm import _core, _numpy_funcs
from gemm_check import on_threads

RNG = np.random.default_rng(13)
U = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 2.0**-53}
VEC_UFUNCS = [name for name in ("vecdot", "matvec", "vecmat") if name in _core.replaceable_ufuncs()]


@pytest.fixture(autouse=True)
def switch_off_around_each_test():
    fastgemm.restore_numpy()
    before = _core.switch_min_flops()
    _core.set_switch_min_flops(0)  # every product, however small, takes fastgemm's path
    yield
    _core.set_switch_min_flops(before)
    fastgemm.restore_numpy()
    assert not fastgemm.is_patched()


def _rand(shape, dtype=np.float64):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def _numpy_attributes():
    """Every (module, name) -> object of the names the switch may touch, in every numpy module."""
    names = ("dot", "inner", "tensordot", "multi_dot", "einsum", "matmul", "vecdot", "matvec", "vecmat")
    return {
        (mod, name): m.__dict__[name]
        for mod, m in list(sys.modules.items())
        if m and (mod == "numpy" or mod.startswith("numpy."))
        for name in names
        if name in m.__dict__
    }


def _fastgemm_calls():
    c = _numpy_funcs.calls()
    total = c["dot"]["fastgemm"] + c["inner"]["fastgemm"] + _core.matmul_loop_calls()["fastgemm"]
    return total + sum(_core.ufunc_loop_calls(n)["fastgemm"] for n in VEC_UFUNCS)


def _close(got, want, k):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    u = U.get(got.dtype, 0)
    assert np.all(np.abs(got - want) <= 4 * (k + 2) * u * np.maximum(1, np.abs(want)) + 1e-300)


def test_restore_puts_back_every_object_it_replaced():
    before = _numpy_attributes()
    for _ in range(2):
        fastgemm.patch_numpy()
        on = _numpy_attributes()
        assert on[("numpy", "dot")] is _numpy_funcs.dot
        # NumPy's own holders: tensordot calls numeric's dot, multi_dot _linalg's.
        assert on[("numpy._core.numeric", "dot")] is _numpy_funcs.dot
        assert on[("numpy.linalg._linalg", "dot")] is _numpy_funcs.dot
        assert on[("numpy", "inner")] is _numpy_funcs.inner
        fastgemm.restore_numpy()
        after = _numpy_attributes()
        assert after.keys() == before.keys()
        assert all(after[key] is before[key] for key in before), [k for k in before if after[k] is not before[k]]


def test_restore_gives_back_numpys_loops_bitwise():
    a, b = _rand((9, 300), np.float32), _rand((9, 300), np.float32)
    want = [np.vecdot(a, b), np.matvec(a, b[0]), np.vecmat(a[0], b.T)] if VEC_UFUNCS else []
    fastgemm.patch_numpy()
    fastgemm.restore_numpy()
    got = [np.vecdot(a, b), np.matvec(a, b[0]), np.vecmat(a[0], b.T)] if VEC_UFUNCS else []
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_function_reaches_fastgemm(dtype):
    a, b, c = _rand((20, 30), dtype), _rand((30, 25), dtype), _rand((25, 10), dtype)
    t1, t2 = _rand((4, 5, 30), dtype), _rand((30, 5, 6), dtype)
    spellings = {
        "np.dot": (lambda: np.dot(a, b), lambda: a @ b),
        "np.dot 1-D": (lambda: np.dot(a[0], b[:, 0]), lambda: a[0] @ b[:, 0]),
        "np.dot N-D": (lambda: np.dot(t1, t2.transpose(1, 0, 2)), None),
        "np.inner": (lambda: np.inner(a, b.T), lambda: a @ b),
        "np.tensordot": (lambda: np.tensordot(t1, t2, axes=([2, 1], [0, 1])), None),
        "np.linalg.multi_dot": (lambda: np.linalg.multi_dot([a, b, c]), None),  # it picks the order
        "np.einsum optimize": (lambda: np.einsum("ij,jk->ik", a, b, optimize=True), lambda: a @ b),
    }
    if hasattr(np.linalg, "tensordot"):
        spellings["np.linalg.tensordot"] = (lambda: np.linalg.tensordot(t1, t2, axes=([2, 1], [0, 1])), None)
    if "vecdot" in VEC_UFUNCS:
        spellings["np.vecdot"] = (lambda: np.vecdot(a, b.T[:20]), None)
        spellings["np.linalg.vecdot"] = (lambda: np.linalg.vecdot(a, b.T[:20]), None)
    if "matvec" in VEC_UFUNCS:
        spellings["np.matvec"] = (lambda: np.matvec(a, b[:, 0]), lambda: a @ b[:, 0])
    if "vecmat" in VEC_UFUNCS:
        spellings["np.vecmat"] = (lambda: np.vecmat(b[:, 0], b), lambda: b[:, 0] @ b)
    wants = {name: f() for name, (f, _) in spellings.items()}
    with fastgemm.patched():
        for name, (f, same_as) in spellings.items():
            before = _fastgemm_calls()
            got = f()
            assert _fastgemm_calls() > before, f"{name} did not run on fastgemm"
            _close(got, wants[name], 60)
            if same_as is not None:  # bitwise what `@` (fastgemm's matmul loop) gives
                assert np.array_equal(got, same_as()), name
    before = _fastgemm_calls()
    for f, _ in spellings.values():
        f()
    assert _fastgemm_calls() == before, "restored NumPy must not reach fastgemm"


def test_dot_is_fastgemm_matmul_bitwise():
    a, b = _rand((70, 90), np.float32), _rand((90, 50), np.float32)
    with fastgemm.patched():
        assert np.array_equal(np.dot(a, b), fastgemm.matmul(a, b))
        assert np.array_equal(np.tensordot(a, b, axes=1), fastgemm.matmul(a, b))


def test_pickled_float32_array_takes_the_switch_path():
    """An unpickled array's dtype is a distinct object equal to float32 (the house issue's
    dtype-identity bug): it must still be recognised and computed by fastgemm."""
    a = pickle.loads(pickle.dumps(_rand((40, 50), np.float32)))
    b = pickle.loads(pickle.dumps(_rand((50, 30), np.float32)))
    with fastgemm.patched():
        before = _numpy_funcs.calls()["dot"]["fastgemm"]
        got = np.dot(a, b)
        assert _numpy_funcs.calls()["dot"]["fastgemm"] == before + 1
        before = _core.matmul_loop_calls()["fastgemm"]
        assert np.array_equal(a @ b, got)
        assert _core.matmul_loop_calls()["fastgemm"] == before + 1
    assert np.array_equal(fastgemm.sgemm(a, b), got)


def test_ndarray_dot_method_is_not_switched():
    """Documented limitation: the method calls NumPy's BLAS directly (README)."""
    a = _rand((30, 30))
    with fastgemm.patched():
        before = _fastgemm_calls()
        a.dot(a)
        assert _fastgemm_calls() == before


SHAPES = [
    ((7,), (7,)),
    ((7,), (7, 4)),
    ((5, 7), (7,)),
    ((5, 7), (7, 4)),
    ((2, 3, 7), (7,)),
    ((2, 3, 7), (7, 4)),
    ((2, 3, 7), (5, 7, 4)),
    ((7,), (2, 7, 4)),
    ((0, 7), (7, 3)),
    ((5, 0), (0, 3)),
    ((0,), (0,)),
    ((2, 0, 7), (3, 7, 0)),
]


def _outcome(f, *args, **kwargs):
    """What a call gives: ('ok', result) or ('raise', exception type)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", f(*args, **kwargs)
    except Exception as e:
        return "raise", type(e)


def _check_as_numpy(k, f, *args):
    """f(*args) under fastgemm.patched() gives what NumPy's own f gives (float results within the
    K-scaled bound)."""
    want = _outcome(f, *args)
    with fastgemm.patched():
        got = _outcome(f, *args)
    _same(got, want, k)


def _same(got, want, k):
    assert got[0] == want[0], (got, want)
    if got[0] == "raise":
        assert got[1] is want[1]
        return
    g, w = got[1], want[1]
    assert type(g) is type(w)
    if isinstance(w, (np.ndarray, np.floating)) and w.dtype in U:
        _close(g, w, k)
    else:
        assert np.array_equal(np.asarray(g), np.asarray(w), equal_nan=np.asarray(w).dtype.kind in "fc")


@pytest.mark.parametrize(
    "dtypes", [("f4", "f4"), ("f8", "f8"), ("f4", "f8"), ("i8", "f4"), ("f2", "f4"), ("c16", "f8")]
)
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_dot_semantics_match_numpy(sa, sb, dtypes):
    a, b = _rand(sa, dtypes[0]), _rand(sb, dtypes[1])
    _check_as_numpy(sa[-1], np.dot, a, b)


@pytest.mark.parametrize("dtypes", [("f4", "f4"), ("f8", "f8"), ("f4", "f8"), ("i4", "f8")])
@pytest.mark.parametrize(
    "sa,sb",
    [((7,), (7,)), ((5, 7), (4, 7)), ((2, 3, 7), (7,)), ((2, 3, 7), (4, 2, 7)), ((0, 7), (3, 7)), ((5, 7), (4, 6))],
)
def test_inner_semantics_match_numpy(sa, sb, dtypes):
    a, b = _rand(sa, dtypes[0]), _rand(sb, dtypes[1])
    _check_as_numpy(sa[-1], np.inner, a, b)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.asmatrix
def test_dot_odd_inputs_match_numpy():
    a, b = _rand((6, 5)), _rand((5, 4))
    cases = [
        (a, 2.0),  # 0-d operand: multiply
        (np.float64(3.0), b),
        (a.tolist(), b.tolist()),  # lists: NumPy's own conversion
        (a, b[:4]),  # shapes that do not fit
        (np.asmatrix(a), b),  # subclasses keep NumPy's function (and its result type)
        (np.ma.masked_array(a), b),
        (a.astype(object), b),
        (a.astype(">f8"), b),  # non-native byte order
        (a[:, ::2], b[::2]),  # strided views
        (a.T.copy().T, np.asfortranarray(b)),
    ]
    for x, y in cases:
        _check_as_numpy(5, np.dot, x, y)


def test_dot_out_matches_numpy():
    a, b = _rand((6, 5)), _rand((5, 4))
    outs = [
        np.empty((6, 4)),  # accepted
        np.empty((6, 4), np.float32),  # wrong dtype: NumPy raises
        np.empty((4, 6)).T,  # not C-contiguous: NumPy raises
        np.empty((6, 5)),  # wrong shape
        np.empty((6, 4))[:, :],
    ]
    for out in outs:
        want_out, got_out = out.copy(), out.copy()
        want = _outcome(np.dot, a, b, out=want_out)
        with fastgemm.patched():
            got = _outcome(np.dot, a, b, out=got_out)
        assert got[0] == want[0]
        if got[0] == "ok":
            assert got[1] is got_out
            _close(got_out, want_out, 5)
        else:
            assert got[1] is want[1]
    # out overlapping an operand: NumPy computes through a temporary, so does fastgemm
    sq = _rand((8, 8))
    want = np.dot(sq, sq)
    with fastgemm.patched():
        x = sq.copy()
        r = np.dot(x, x, out=x)
    assert r is x
    _close(x, want, 8)
    # a 0-d out for a 1-D . 1-D product: NumPy writes it and returns a scalar, not out
    v = _rand((9,))
    want_out0, out0 = np.empty(()), np.empty(())
    want = np.dot(v, v, out=want_out0)
    with fastgemm.patched():
        got = np.dot(v, v, out=out0)
    assert type(got) is type(want) is np.float64
    _close(out0, want_out0, 9)
    _close(got, want, 9)


def test_multi_dot_and_tensordot_match_numpy():
    arrays = [_rand((10, 20)), _rand((20, 5)), _rand((5, 30)), _rand((30,))]
    want_md = np.linalg.multi_dot(arrays)
    a, b = _rand((3, 4, 5)), _rand((4, 3, 2))
    c = _rand((5, 2))
    want_td = [np.tensordot(a, b, axes=([1, 0], [0, 1])), np.tensordot(a, b, 0), np.tensordot(a, c, 1)]
    want_td.append(np.tensordot(a, a, 3))
    with fastgemm.patched():
        _close(np.linalg.multi_dot(arrays), want_md, 60)
        out = np.empty((10, 30))
        assert np.linalg.multi_dot(arrays[:3], out=out) is out
        _close(out, np.linalg.multi_dot(arrays[:3]), 60)
        # NumPy refuses a 1-D out here (its 2-D intermediate does not fit); so does the switch
        assert _outcome(np.linalg.multi_dot, arrays, out=np.empty(10)) == ("raise", ValueError)
        got = [np.tensordot(a, b, axes=([1, 0], [0, 1])), np.tensordot(a, b, 0), np.tensordot(a, c, 1)]
        got.append(np.tensordot(a, a, 3))
    for g, w in zip(got, want_td):
        _close(g, w, 20)


@pytest.mark.skipif(not VEC_UFUNCS, reason="this NumPy has no vecdot / matvec / vecmat")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vec_gufuncs_match_numpy(dtype):
    a, v, m = _rand((3, 4, 33), dtype), _rand((4, 33), dtype), _rand((33, 6), dtype)
    calls = [
        lambda: np.vecdot(a, v),
        lambda: np.vecdot(a[..., ::2], v[..., ::2]),
        lambda: np.vecdot(a, v, axis=0) if a.shape[0] == v.shape[0] else np.vecdot(a[0], v[:3], axis=0),
        lambda: np.matvec(a, v[0]),
        lambda: np.matvec(a[..., :6], m),
        lambda: np.vecmat(v, m),
        lambda: np.vecmat(a, m),
        lambda: np.vecdot(a, v, out=np.empty((3, 4), dtype)),
        lambda: np.vecdot(a.astype(np.int64), v.astype(np.int64)),  # other dtypes: NumPy's loop
        lambda: np.vecdot(np.zeros((2, 0), dtype), np.zeros((2, 0), dtype)),
    ]
    wants = [_outcome(f) for f in calls]
    with fastgemm.patched():
        gots = [_outcome(f) for f in calls]
    for got, want in zip(gots, wants):
        _same(got, want, 33)


def test_floating_point_errors_are_reported_as_numpy_does():
    """NumPy's dot warns / raises per np.errstate ("invalid value encountered in dot")."""
    a, b = np.ones((3, 2)), np.array([[-np.inf, 1.0], [np.inf, 1.0]])
    with fastgemm.patched():
        with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="invalid value encountered in dot"):
            np.dot(a, b)
        with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
            np.inner(a, b.T)
        with np.errstate(all="ignore"):
            before = _numpy_funcs.calls()["dot"]["fastgemm"]
            assert np.isnan(np.dot(a, b)[:, 0]).all()
            assert _numpy_funcs.calls()["dot"]["fastgemm"] == before + 1
        with np.errstate(invalid="raise"):  # a finite result stays on fastgemm
            before = _numpy_funcs.calls()["dot"]["fastgemm"]
            np.dot(a, np.ones((2, 2)))
            assert _numpy_funcs.calls()["dot"]["fastgemm"] == before + 1


# --- np.dot / np.inner in C (csrc/bindings/numpy_dot.cpp) ------------------------------------

UNIT_ROUNDOFF = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 2.0**-53}
FLOAT_CODES = ("f4", "f8")


def _calls(name):
    return _numpy_funcs.calls()[name]["fastgemm"]


def _check_dot(got, a, b, inner=False):
    """NumPy's result type, dtype and shape, and values within the K-scaled bound of
    tests/gemm_check.py (c = 2) of the product in a wider type. Call with the switch off."""
    f = np.inner if inner else np.dot
    want = f(a, b)
    assert type(got) is type(want)
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    wide = np.float64 if want.dtype == np.float32 else np.longdouble
    a, b = np.asarray(a, wide), np.asarray(b, wide)
    ref, mag = f(a, b), f(np.abs(a), np.abs(b))
    k = a.shape[-1]
    bound = 2 * (k + 2) * UNIT_ROUNDOFF[want.dtype] * mag + np.finfo(want.dtype).tiny
    assert np.all(np.abs(got.astype(wide) - ref) <= bound)


FLOAT_PRODUCTS = [
    ("dot", (8, 8), (8, 8)),
    ("dot", (16, 16), (16, 16)),
    ("dot", (33, 17), (17, 5)),
    ("dot", (1, 9), (9, 1)),
    ("dot", (9,), (9,)),
    ("dot", (9,), (9, 4)),
    ("dot", (4, 9), (9,)),
    ("dot", (2, 3, 9), (9,)),
    ("dot", (9,), (2, 9, 4)),
    ("dot", (2, 3, 9), (5, 9, 4)),
    ("dot", (2, 1, 3, 9), (1, 5, 9, 4)),
    ("dot", (4, 0), (0, 3)),
    ("dot", (0, 4), (4, 3)),
    ("dot", (3, 4), (4, 0)),
    ("dot", (2, 0, 4), (3, 4, 5)),
    ("dot", (4000,), (4000,)),  # 16 KiB float32: still fastgemm's; float64 goes to NumPy's BLAS dot
    ("inner", (8, 8), (8, 8)),
    ("inner", (9,), (9,)),
    ("inner", (5, 9), (9,)),
    ("inner", (2, 3, 9), (4, 9)),
    ("inner", (2, 3, 9), (4, 2, 9)),
    ("inner", (0, 9), (3, 9)),
    ("inner", (4000,), (4000,)),
]


@pytest.mark.parametrize("func,sa,sb", FLOAT_PRODUCTS)
@pytest.mark.parametrize("da,db", [(x, y) for x in FLOAT_CODES for y in FLOAT_CODES])
def test_float_products_run_on_fastgemm(func, sa, sb, da, db, kernel):
    a, b = _rand(sa, da), _rand(sb, db)
    with fastgemm.patched():
        before = _calls(func)
        got = getattr(np, func)(a, b)
        computed = _calls(func) - before
    _check_dot(got, a, b, inner=func == "inner")
    long_vectors = len(sa) == len(sb) == 1 and sa[0] * np.result_type(a, b).itemsize > 16384
    assert computed == (0 if long_vectors else 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("length", [9, 2048, 4096, 4097, 9000])
def test_matmul_long_vector_dot_is_numpys(dtype, length):
    """np.matmul of one vector by one vector follows np.dot's rule: fastgemm's up to 16 KiB per
    operand, NumPy's own loop (its BLAS dot, bitwise NumPy's result) beyond."""
    a, b = _rand((length,), dtype), _rand((length,), dtype)
    want = np.matmul(a, b)
    with fastgemm.patched():
        before = _core.matmul_loop_calls()
        got = np.matmul(a, b)
        after = _core.matmul_loop_calls()
        dot = np.dot(a, b)
    long_vectors = length * np.dtype(dtype).itemsize > 16384
    assert after["fastgemm"] - before["fastgemm"] == (0 if long_vectors else 1)
    assert after["numpy"] - before["numpy"] == (1 if long_vectors else 0)
    _close(got, want, length)
    assert np.array_equal(got, dot)  # the same rule and the same computation as np.dot
    if long_vectors:
        assert np.array_equal(got, want)


def _views(dtype):
    """Operand layouts fastgemm reads in place or copies: (name, a, b) with a . b defined."""
    base = _rand((6, 10, 14), dtype)
    m = _rand((14, 12), dtype)
    return [
        ("transposed a", _rand((14, 6), dtype).T, m),
        ("transposed b", _rand((6, 14), dtype), _rand((12, 14), dtype).T),
        ("stepped", base[:, ::2, :][0], m[:, ::3]),
        ("negative strides", base[0, ::-1, ::-1], m[::-1]),
        ("broadcast (zero strides)", np.broadcast_to(_rand((14,), dtype), (5, 14)), m),
        ("N-d a whose rows do not merge (copied)", base[:, ::2, :], m),
        ("N-d a, column-major", np.asfortranarray(base), m),
        ("N-d b stepped", _rand((3, 14), dtype), _rand((4, 14, 24), dtype)[:, :, ::2]),
        ("1-D stepped", base[0, 0, ::2], _rand((7,), dtype)),
        ("unaligned (copied, as NumPy copies it)", _unaligned(_rand((6, 14), dtype)), m),
        ("strides in parts of elements (copied)", _odd_strides(_rand((6, 14), dtype)), m),
    ]


def _unaligned(x):
    """x's values in memory one byte off its dtype's alignment (as distributed's frames give)."""
    buf = np.empty(x.nbytes + 1, np.uint8)
    y = np.ndarray(x.shape, x.dtype, buffer=buf, offset=1)
    y[...] = x
    assert not y.flags.aligned
    return y


def _odd_strides(x):
    """x's values with a row stride that is not a whole number of elements."""
    rs = x.shape[1] * x.itemsize + 3
    buf = np.zeros(rs * x.shape[0] + 8, np.uint8)
    y = np.ndarray(x.shape, x.dtype, buffer=buf, offset=0, strides=(rs, x.itemsize))
    y[...] = x
    return y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_reads_every_strided_layout(dtype):
    for name, a, b in _views(dtype):
        with fastgemm.patched():
            before = _calls("dot")
            got = np.dot(a, b)
            assert _calls("dot") == before + 1, name
        _check_dot(got, a, b)


ALL_CODES = ("?", "u1", "i4", "i8", "f2", "f4", "f8", "c8", "c16", "O", ">f8", ">f4")


@pytest.mark.parametrize("da", ALL_CODES)
@pytest.mark.parametrize("db", ALL_CODES)
def test_every_dtype_pair_is_numpys_answer(da, db):
    """Float32 / float64 pairs on fastgemm, every other pair handed to NumPy's own function."""
    a, b = (_rand((5, 7)) * 4).astype(da), (_rand((7, 3)) * 4).astype(db)
    want = [_outcome(np.dot, a, b), _outcome(np.inner, a, b.T)]
    with fastgemm.patched():
        before = (_calls("dot"), _calls("inner"))
        got = [_outcome(np.dot, a, b), _outcome(np.inner, a, b.T)]
        computed = (_calls("dot") - before[0], _calls("inner") - before[1])
    for g, w in zip(got, want):
        _same(g, w, 7)
    assert computed == ((1, 1) if da in FLOAT_CODES and db in FLOAT_CODES else (0, 0))


class _Sub(np.ndarray):
    pass


class _Duck:
    """Not an array; NumPy's dispatch hands np.dot / np.inner to its __array_function__."""

    def __array_function__(self, func, types, args, kwargs):
        return ("duck", func.__name__)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_odd_operands_go_to_numpy_with_numpys_answer():
    a, b, v = _rand((6, 5)), _rand((5, 4)), _rand((5,))
    cases = [
        (a.view(_Sub), b),
        (a, b.view(_Sub)),
        (np.matrix(a), np.matrix(b)),
        (np.ma.masked_array(a, mask=a > 0.5), b),
        (_Duck(), b),
        (a, _Duck()),
        (np.float32(2), b),
        (np.array(2.0), b),  # 0-d arrays: NumPy multiplies
        (a, np.array(2.0)),
        (2.0, 3.0),
        (a.tolist(), v.tolist()),
        (a, b[:4]),  # shapes that do not fit: NumPy's ValueError
        (v, v[:4]),
        (a.astype(np.longdouble), b),
    ]
    for x, y in cases:
        for f in (np.dot, np.inner):
            yy = y.T if f is np.inner and isinstance(y, np.ndarray) and y.ndim == 2 else y
            want = _outcome(f, x, yy)
            with fastgemm.patched():
                before = (_calls("dot"), _calls("inner"))
                got = _outcome(f, x, yy)
                assert (_calls("dot"), _calls("inner")) == before, (f, type(x), type(y))
            _same(got, want, 5)


def test_dot_argument_spellings_are_numpys():
    a, b = _rand((6, 5)), _rand((5, 4))
    spellings = [
        ((a, b), {}),
        ((a, b, None), {}),
        ((a, b), {"out": None}),
        ((a,), {"b": b}),
        ((), {"a": a, "b": b}),
        ((a, b), {"out": np.empty((6, 4))}),
        ((a, b, np.empty((6, 4))), {}),
        ((a, b), {"c": 1}),  # unknown keyword: NumPy's TypeError
        ((a, b, None, None), {}),
        ((a,), {}),
        ((a, b), {"out": [[0.0] * 4] * 6}),  # not an array: NumPy's TypeError
    ]
    for args, kwargs in spellings:
        want = _outcome(np.dot, *args, **kwargs)
        with fastgemm.patched():
            got = _outcome(np.dot, *args, **kwargs)
        assert got[0] == want[0], (args, kwargs)
        if want[0] == "raise":
            assert got[1] is want[1]
        else:
            _close(got[1], want[1], 5)
    for args, kwargs in [((a, b.T), {}), ((a,), {}), ((a, b.T), {"out": None}), ((), {"a": a, "b": b.T})]:
        want = _outcome(np.inner, *args, **kwargs)
        with fastgemm.patched():
            got = _outcome(np.inner, *args, **kwargs)
        assert got[0] == want[0] and (got[0] == "ok" or got[1] is want[1]), (args, kwargs)


def _out_cases(dtype):
    """(name, a, b, out) for every rule NumPy's dot applies to `out`; the same values (and
    layouts) on every call."""
    rng = np.random.default_rng(7)

    def rand(*shape):
        return rng.uniform(-1, 1, size=shape).astype(dtype)

    a, b, v = rand(6, 5), rand(5, 4), rand(5)
    other = np.float32 if dtype == np.float64 else np.float64
    ro = np.empty((6, 4), dtype)
    ro.flags.writeable = False
    shared, square = rand(6, 5), rand(4, 4)
    mixed = rng.uniform(-1, 1, size=(6, 10)).astype(np.float32)
    mixed_out = mixed.reshape(-1).view(np.float64)[:24].reshape(6, 4)  # float64 over mixed's bytes
    return [
        ("accepted", a, b, np.empty((6, 4), dtype)),
        ("accepted 1-D", a, v, np.empty(6, dtype)),
        ("accepted 0-d", v, v, np.empty((), dtype)),
        ("accepted N-d", rand(2, 3, 5), rand(2, 5, 4), np.empty((2, 3, 2, 4), dtype)),
        ("wrong dtype", a, b, np.empty((6, 4), other)),
        ("wrong shape", a, b, np.empty((4, 6), dtype)),
        ("wrong ndim", a, b, np.empty(24, dtype)),
        ("not C-contiguous", a, b, np.empty((4, 6), dtype).T),
        ("stepped", a, b, np.empty((6, 8), dtype)[:, ::2]),
        ("read-only", a, b, ro),
        ("byte-swapped", a, b, np.empty((6, 4), np.dtype(dtype).newbyteorder())),
        ("subclass", a, b, np.empty((6, 4), dtype).view(_Sub)),
        ("overlaps a", shared, b, shared.reshape(-1)[:24].reshape(6, 4)),
        ("overlaps a float32 operand converted to float64", mixed[:, :5], b.astype(np.float64), mixed_out),
        ("is b", square, square, square),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_out_follows_numpys_rules(dtype):
    for (name, a, b, out), (_, wa, wb, wout) in zip(_out_cases(dtype), _out_cases(dtype)):
        want = _outcome(np.dot, wa, wb, out=wout)
        with fastgemm.patched():
            before = _calls("dot")
            got = _outcome(np.dot, a, b, out=out)
            computed = _calls("dot") - before
        assert got[0] == want[0], name
        if want[0] == "raise":
            assert got[1] is want[1], name
            assert computed == 0
            continue
        assert type(got[1]) is type(want[1]), name
        if isinstance(want[1], np.ndarray):
            assert got[1] is out, name  # NumPy returns out itself (a 0-d one as a scalar)
        _close(out, wout, 5)
        # fastgemm writes an out NumPy would write directly; one sharing memory goes to NumPy
        assert computed == (1 if name.startswith("accepted") else 0), name


FP_CASES = {
    "inf*0": ([[np.inf, 1.0], [1.0, 1.0]], [[0.0, 1.0], [1.0, 1.0]]),
    "inf-inf": ([[np.inf, 1.0], [1.0, 1.0]], [[-1.0, -1.0], [np.inf, -1.0]]),
    "nan in": ([[np.nan, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]),
    "inf in, finite out": ([[np.inf, 0.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]),
    "overflow": ([["big", 1.0], [1.0, 1.0]], [["big", 1.0], [1.0, 1.0]]),
    "underflow": ([["tiny", 0.0], [0.0, 1.0]], [["tiny", 0.0], [0.0, 1.0]]),
}


def _fp_operands(case, dtype, shape):
    big, tiny = (1e30, 1e-30) if dtype == np.float32 else (1e200, 1e-200)

    def arr(rows):
        x = np.array([[{"big": big, "tiny": tiny}.get(v, v) for v in r] for r in rows], dtype)
        if shape == "2x2":
            return x
        if shape == "vector":
            return x[0]
        y = np.ones((300, 300), dtype)  # threaded on 2 threads
        y[:2, :2] = x
        return y

    a, b = FP_CASES[case]
    return arr(a), arr(b)


def _fp_outcome(f, a, b, mode):
    seen = []
    kwargs = {"all": mode, "call": lambda kind, flag: seen.append(kind)} if mode == "call" else {"all": mode}
    with warnings.catch_warnings(record=True) as caught, np.errstate(**kwargs):
        warnings.simplefilter("always")
        try:
            r = f(a, b)
        except FloatingPointError as e:
            return "raise", str(e)
    return [str(w.message) for w in caught], seen, np.isnan(r).sum(), np.isinf(r).sum()


@pytest.mark.parametrize("case", list(FP_CASES))
@pytest.mark.parametrize("shape", ["2x2", "vector", "300x300"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_floating_point_reports_are_numpys(case, shape, dtype):
    """Warnings, exceptions and errstate callbacks as NumPy's dot gives them, on 1 or 2 threads."""
    a, b = _fp_operands(case, dtype, shape)
    threads = fastgemm.get_num_threads()
    fastgemm.set_num_threads(2)
    try:
        for mode in ("warn", "raise", "call", "ignore"):
            for f, bb in ((np.dot, b), (np.inner, b.T)):
                want = _fp_outcome(f, a, bb, mode)
                with fastgemm.patched():
                    got = _fp_outcome(f, a, bb, mode)
                assert got == want, (f.__name__, mode)
    finally:
        fastgemm.set_num_threads(threads)


def test_flagged_products_stay_on_fastgemm_when_errstate_ignores_all():
    a, b = _fp_operands("inf*0", np.float64, "2x2")
    with fastgemm.patched():
        before = _calls("dot")
        with np.errstate(all="ignore"):
            np.dot(a, b)
        assert _calls("dot") == before + 1
        with np.errstate(all="ignore", invalid="warn"), pytest.warns(RuntimeWarning, match="invalid value"):
            np.dot(a, b)
        assert _calls("dot") == before + 1  # recomputed by NumPy, which warned


def test_dot_from_many_threads_at_once():
    import threading

    mats = [(_rand((40 + i, 30), np.float32), _rand((30, 20 + i), np.float32)) for i in range(8)]
    wants = [np.dot(a, b) for a, b in mats]
    errors = []

    def work(i):
        a, b = mats[i]
        for _ in range(50):
            got = np.dot(a, b, out=np.empty_like(wants[i])) if i % 2 else np.dot(a, b)
            if not np.allclose(got, wants[i], rtol=1e-5, atol=1e-5):
                errors.append(i)

    with fastgemm.patched():
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_has_the_same_bits_on_any_thread_count(dtype):
    a, b = _rand((300, 200), dtype), _rand((200, 260), dtype)
    with fastgemm.patched():
        one, two = on_threads(lambda: np.dot(a, b))
    assert np.array_equal(one, two)


def test_replacements_look_like_numpys_functions():
    import inspect

    originals = {"dot": np.dot, "inner": np.inner}
    with fastgemm.patched():
        for name, original in originals.items():
            ours = getattr(np, name)
            assert ours is not original
            assert ours.__name__ == name and name in repr(ours)
            assert inspect.signature(ours) == inspect.signature(original)
            assert ours.__doc__.startswith(original.__doc__)
            assert pickle.loads(pickle.dumps(ours)) is ours

            class Holder:
                f = ours  # bound like a function, as NumPy's dispatcher is

            class NumpyHolder:
                f = original

            assert _outcome(Holder().f, _rand((3,)))[0] == _outcome(NumpyHolder().f, _rand((3,)))[0]
