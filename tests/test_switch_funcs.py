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
    want = _outcome(np.dot, a, b)
    with fastgemm.patched():
        got = _outcome(np.dot, a, b)
    _same(got, want, sa[-1])


@pytest.mark.parametrize("dtypes", [("f4", "f4"), ("f8", "f8"), ("f4", "f8"), ("i4", "f8")])
@pytest.mark.parametrize(
    "sa,sb",
    [((7,), (7,)), ((5, 7), (4, 7)), ((2, 3, 7), (7,)), ((2, 3, 7), (4, 2, 7)), ((0, 7), (3, 7)), ((5, 7), (4, 6))],
)
def test_inner_semantics_match_numpy(sa, sb, dtypes):
    a, b = _rand(sa, dtypes[0]), _rand(sb, dtypes[1])
    want = _outcome(np.inner, a, b)
    with fastgemm.patched():
        got = _outcome(np.inner, a, b)
    _same(got, want, sa[-1])


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
        want = _outcome(np.dot, x, y)
        with fastgemm.patched():
            got = _outcome(np.dot, x, y)
        _same(got, want, 5)


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
