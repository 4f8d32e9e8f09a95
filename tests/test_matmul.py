"""fastgemm.matmul against numpy.matmul: shapes, dtypes, out=, errors, and the batched core."""

import numpy as np
import pytest

import fastgemm
from fastgemm import _core, _matmul

RNG = np.random.default_rng(7)
U = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 2.0**-53}

# (shape of a, shape of b): 1-D promotion, stacks, broadcasting, empty and k == 0 cases.
SHAPES = [
    ((5, 7), (7, 3)),
    ((7,), (7,)),
    ((7,), (7, 4)),
    ((5, 7), (7,)),
    ((4, 5, 7), (7, 3)),
    ((5, 7), (4, 7, 3)),
    ((2, 1, 5, 7), (3, 7, 6)),
    ((3, 7), (2, 7, 4)),
    ((6, 7), (2, 3, 7, 2)),
    ((2, 3, 7), (7,)),
    ((7,), (2, 3, 7, 4)),
    ((0, 7), (7, 3)),
    ((5, 0), (0, 3)),
    ((0,), (0,)),
    ((0, 5, 7), (7, 3)),
    ((3, 0, 7), (3, 7, 2)),
    ((64, 9, 33), (64, 33, 17)),
    ((130, 70), (70, 90)),
]


def _rand(shape, dtype):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def _check_close(got, a, b):
    """|got - A@B| <= 2 K u |A||B| elementwise, with A@B in a wider type."""
    dtype = np.dtype(got.dtype)
    wide = np.float64 if dtype == np.float32 else np.longdouble
    aw, bw = np.asarray(a).astype(wide), np.asarray(b).astype(wide)
    ref = np.matmul(aw, bw)
    mag = np.matmul(np.abs(aw), np.abs(bw))
    k = np.asarray(a).shape[-1]
    assert np.shape(got) == np.shape(ref)
    assert np.all(np.abs(np.asarray(got, wide) - ref) <= 2 * max(k, 1) * U[dtype] * mag)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_matches_numpy(sa, sb, dtype):
    a, b = _rand(sa, dtype), _rand(sb, dtype)
    got = fastgemm.matmul(a, b)
    want = np.matmul(a, b)
    assert type(got) is type(want)  # a 1-D @ 1-D product is a NumPy scalar, like NumPy's
    assert np.shape(got) == np.shape(want) and got.dtype == want.dtype
    _check_close(got, a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sa,sb", [s for s in SHAPES if len(s[0]) == 1 or len(s[1]) == 1])
@pytest.mark.parametrize("step", [1, 3])
def test_vector_operands_in_the_c_path(sa, sb, dtype, step):
    # 1-D operands (contiguous or strided) are promoted in C as NumPy promotes them.
    a, b = (_rand(s[:-1] + (s[-1] * step,), dtype)[..., ::step] for s in (sa, sb))
    want = np.matmul(a, b)
    got = _core.matmul_call(a, b, None)
    assert type(got) is type(want)
    assert np.shape(got) == np.shape(want) and got.dtype == want.dtype
    _check_close(got, a, b)
    if np.ndim(want):
        out = np.full(np.shape(want), np.nan, dtype)
        assert _core.matmul_call(a, b, out) is out
        _check_close(out, a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_long_vector_dot_is_numpys(dtype):
    # Above VECTOR_DOT_MAX_BYTES per operand NumPy's BLAS dot runs it (faster there).
    n = _core.VECTOR_DOT_MAX_BYTES // np.dtype(dtype).itemsize
    for length in (n, n + 1, 4 * n):
        x, y = _rand((length,), dtype), _rand((length,), dtype)
        got = fastgemm.matmul(x, y)
        _check_close(got, x, y)
        if length > n:
            assert got == np.matmul(x, y)


@pytest.mark.parametrize(
    "da,db",
    [
        (np.float32, np.float64),
        (np.float64, np.float32),
        (np.int64, np.float32),
        (np.int8, np.float32),
        (np.float32, np.bool_),
        (np.uint16, np.float64),
        (np.float16, np.float32),
        (np.int32, np.float64),
    ],
)
def test_promotion_like_numpy(da, db):
    a = (RNG.uniform(-4, 4, size=(6, 5)) > 0) if da is np.bool_ else RNG.uniform(0, 4, size=(6, 5)).astype(da)
    b = (RNG.uniform(-4, 4, size=(5, 4)) > 0) if db is np.bool_ else RNG.uniform(0, 4, size=(5, 4)).astype(db)
    a, b = np.asarray(a, da), np.asarray(b, db)
    got, want = fastgemm.matmul(a, b), np.matmul(a, b)
    assert got.dtype == want.dtype
    _check_close(got, a.astype(got.dtype), b.astype(got.dtype))


@pytest.mark.parametrize(
    "make",
    [
        lambda: (RNG.integers(-9, 9, (4, 3)), RNG.integers(-9, 9, (3, 2))),
        lambda: (RNG.integers(0, 2, (4, 3)).astype(bool), RNG.integers(0, 2, (3, 2)).astype(bool)),
        lambda: (_rand((4, 3), np.float16), _rand((3, 2), np.float16)),
        lambda: (_rand((4, 3), np.longdouble), _rand((3, 2), np.float64)),
        lambda: (_rand((4, 3), np.float64) + 1j, _rand((3, 2), np.float32)),
        lambda: (_rand((4, 3), np.float64).astype(object), _rand((3, 2), np.float64)),
        lambda: ([[1, 2], [3, 4]], [[5], [6]]),
        lambda: ([[1.5, 2], [3, 4]], [5.0, 6]),
    ],
)
def test_other_dtypes_are_numpys_answer(make):
    a, b = make()
    got, want = fastgemm.matmul(a, b), np.matmul(a, b)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_subclasses_keep_numpys_behaviour():
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    got, want = fastgemm.matmul(m, m), np.matmul(m, m)
    assert type(got) is type(want) and np.array_equal(got, want)
    ma = np.ma.masked_array(_rand((3, 3), np.float64), mask=np.eye(3, dtype=bool))
    got, want = fastgemm.matmul(ma, ma), np.matmul(ma, ma)
    assert type(got) is type(want) and np.array_equal(got, want)


def _numpy_error(a, b, **kw):
    with pytest.raises(Exception) as e:
        np.matmul(a, b, **kw)
    return type(e.value)


BAD = [
    ("scalar left", lambda: (np.float64(2.0), _rand((2, 2), np.float64)), {}),
    ("scalar right", lambda: (_rand((2, 2), np.float32), 3.0), {}),
    ("0-d arrays", lambda: (np.array(1.0), np.array(2.0)), {}),
    ("inner mismatch", lambda: (_rand((2, 3), np.float64), _rand((4, 2), np.float64)), {}),
    ("1-D mismatch", lambda: (_rand((3,), np.float32), _rand((4,), np.float32)), {}),
    ("stack mismatch", lambda: (_rand((2, 2, 3), np.float64), _rand((3, 3, 2), np.float64)), {}),
    ("out shape", lambda: (_rand((2, 3), np.float64), _rand((3, 2), np.float64)), {"out": np.empty((2, 3))}),
    ("out int", lambda: (_rand((2, 3), np.float64), _rand((3, 2), np.float64)), {"out": np.empty((2, 2), int)}),
    ("out list", lambda: (_rand((2, 3), np.float64), _rand((3, 2), np.float64)), {"out": [[0, 0], [0, 0]]}),
    (
        "out read-only",
        lambda: (_rand((2, 3), np.float32), _rand((3, 2), np.float32)),
        {"out": np.broadcast_to(np.zeros(2, np.float32), (2, 2))},
    ),
    ("strings", lambda: (np.array([["a"]]), np.array([["b"]])), {}),
    ("datetimes", lambda: (np.zeros((2, 2), "M8[s]"), np.zeros((2, 2), "M8[s]")), {}),
]


@pytest.mark.parametrize("name,make,kw", BAD, ids=[b[0] for b in BAD])
def test_rejects_what_numpy_rejects(name, make, kw):
    a, b = make()
    expected = _numpy_error(a, b, **kw)
    with pytest.raises(expected):
        fastgemm.matmul(a, b, **kw)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "sliced", "negative"])
def test_out_is_written_and_returned(dtype, layout):
    a, b = _rand((3, 20, 30), dtype), _rand((30, 10), dtype)
    base = np.full((3, 40, 30), 99.0, dtype)
    out = {
        "C": np.empty((3, 20, 10), dtype),
        "F": np.empty((3, 20, 10), dtype, order="F"),
        "sliced": base[:, ::2, 5:25:2],
        "negative": base[::-1, :20, 10::-1][:, :, :10],
    }[layout]
    before = base.copy()
    res = fastgemm.matmul(a, b, out=out)
    assert res is out
    _check_close(out, a, b)
    if layout in ("sliced", "negative"):
        mask = np.zeros(base.shape, bool)
        view = mask[:, ::2, 5:25:2] if layout == "sliced" else mask[::-1, :20, 10::-1][:, :, :10]
        view[...] = True
        assert np.array_equal(base[~mask], before[~mask])


def test_out_overlapping_inputs_is_as_if_copied():
    a = _rand((40, 40), np.float64)
    want = np.matmul(a, a)
    x = a.copy()
    assert fastgemm.matmul(x, x, out=x) is x
    _check_close(x, a, a)
    assert np.allclose(x, want)
    s = _rand((4, 8, 8), np.float32)
    s0 = s.copy()
    fastgemm.matmul(s[:, :, :], s[0], out=s)
    _check_close(s, s0, s0[0])


def test_out_with_castable_dtype_follows_numpy():
    a, b = _rand((4, 5), np.float64), _rand((5, 3), np.float64)
    out, ref = np.empty((4, 3), np.float32), np.empty((4, 3), np.float32)
    fastgemm.matmul(a, b, out=out)
    np.matmul(a, b, out=ref)
    assert np.array_equal(out, ref)
    o = np.empty((4, 3))
    assert fastgemm.matmul(a, b, (o,)) is o
    # NumPy lets an out keep the size-1 dimension a 1-D operand's promotion added.
    v = a[0]
    out, ref = np.empty((1, 3)), np.empty((1, 3))
    assert fastgemm.matmul(v, b, out=out) is out
    np.matmul(v, b, out=ref)
    assert np.allclose(out, ref)


def test_nonnative_and_unaligned_operands():
    a = _rand((30, 20), np.float64).astype(">f8")
    b = _rand((20, 10), np.float64)
    got = fastgemm.matmul(a, b)
    assert got.dtype == np.float64 and got.dtype.isnative
    _check_close(got, a.astype(np.float64), b)
    buf = np.zeros(20 * 10 * 4 + 1, np.uint8)
    u = np.ndarray((20, 10), np.float32, buffer=buf, offset=1)
    u[...] = b
    assert not u.flags.aligned
    a32 = a.astype(np.float32)
    _check_close(fastgemm.matmul(a32, u), a32, u)


def test_nan_propagates():
    a, b = _rand((8, 8), np.float32), _rand((8, 8), np.float32)
    a[2, 3] = np.nan
    c = fastgemm.matmul(a, b)
    assert np.isnan(c[2]).all() and not np.isnan(np.delete(c, 2, axis=0)).any()


def test_k_zero_gives_zeros_even_in_garbage_out():
    out = np.full((2, 4, 3), np.nan)
    fastgemm.matmul(np.empty((2, 4, 0)), np.empty((0, 3)), out=out)
    assert np.array_equal(out, np.zeros((2, 4, 3)))


def test_a_stack_is_one_native_call(monkeypatch):
    calls = []
    native = _matmul._BATCHED[np.dtype(np.float32)]
    monkeypatch.setitem(_matmul._BATCHED, np.dtype(np.float32), lambda *args: calls.append(1) or native(*args))
    a, b = _rand((100, 4, 6), np.float32), _rand((1, 6, 5), np.float32)
    # A keyword takes the Python path (the C one, matmul_call, is one call by construction).
    _check_close(fastgemm.matmul(a, b, dtype=np.float32), a, b)
    assert len(calls) == 1


@pytest.mark.parametrize("threads", [1, 2])
def test_stack_equals_one_product_at_a_time_bitwise(threads):
    before = fastgemm.get_num_threads()
    fastgemm.set_num_threads(threads)
    try:
        a, b = _rand((300, 24, 40), np.float64), _rand((300, 40, 16), np.float64)
        c = fastgemm.matmul(a, b)
        one_by_one = np.stack([fastgemm.dgemm(a[i], b[i]) for i in range(300)])
        assert np.array_equal(c, one_by_one)
        big_a, big_b = _rand((2, 300, 200), np.float32), _rand((200, 250), np.float32)
        c = fastgemm.matmul(big_a, big_b)
        assert np.array_equal(c, np.stack([fastgemm.sgemm(big_a[i], big_b) for i in range(2)]))
    finally:
        fastgemm.set_num_threads(before)


# --- property: any shapes NumPy accepts or rejects, any layout --------------------------------

from hypothesis import given, strategies as st  # noqa: E402

_dims = st.integers(0, 6)


@st.composite
def _operands(draw):
    n, k, m = draw(_dims), draw(_dims), draw(_dims)
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    # Each operand keeps a random suffix of the batch, with random axes set to 1 (broadcast).
    ba = [d if draw(st.booleans()) else 1 for d in batch[draw(st.integers(0, len(batch))) :]]
    bb = [d if draw(st.booleans()) else 1 for d in batch[draw(st.integers(0, len(batch))) :]]
    sa = (k,) if draw(st.integers(0, 4)) == 0 else (*ba, n, k)
    sb = (k,) if draw(st.integers(0, 4)) == 0 else (*bb, k, m)
    if draw(st.integers(0, 6)) == 0:  # sometimes a mismatch NumPy must reject
        sb = (*sb[:-2], k + 1, sb[-1]) if len(sb) > 1 else (k + 1,)
    dt = draw(st.sampled_from([np.float32, np.float64, np.int16]))
    dt2 = draw(st.sampled_from([dt, np.float32, np.float64]))
    a, b = _rand(sa, dt), _rand(sb, dt2)
    if draw(st.booleans()) and a.ndim >= 2:
        a = np.asfortranarray(a)
    if draw(st.booleans()) and b.ndim >= 2:
        b = np.swapaxes(np.ascontiguousarray(np.swapaxes(b, -1, -2)), -1, -2)[..., ::-1, :][..., ::-1, :]
    return a, b


@given(_operands())
def test_property_same_shape_dtype_values_or_exception_as_numpy(ops):
    a, b = ops
    try:
        want = np.matmul(a, b)
    except Exception as e:
        with pytest.raises(type(e)):
            fastgemm.matmul(a, b)
        return
    got = fastgemm.matmul(a, b)
    assert type(got) is type(want) and np.shape(got) == np.shape(want) and got.dtype == want.dtype
    if got.dtype.kind == "f":
        _check_close(got, np.asarray(a, got.dtype), np.asarray(b, got.dtype))
    else:
        assert np.array_equal(got, want)


# ---------------------------------------------------------------------------------------------
# Issue 9


def test_byte_swapped_operands_and_out_are_converted_like_numpy():
    a = _rand((6, 5), np.float32).astype(">f4")
    b = _rand((5, 4), np.float32).astype(">f4")
    got = fastgemm.matmul(a, b)
    assert got.dtype == np.float32 and got.dtype.isnative
    _check_close(got, a.astype(np.float32), b.astype(np.float32))
    out = np.zeros((6, 4), ">f4")
    assert fastgemm.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, np.matmul(a, b, out=np.zeros((6, 4), ">f4")), rtol=1e-6)


def _same_as_numpy(a, b, **kw):
    try:
        want = np.matmul(a, b, **kw)
    except Exception as e:
        with pytest.raises(type(e)):
            fastgemm.matmul(a, b, **kw)
        return
    got = fastgemm.matmul(a, b, **kw)
    assert type(got) is type(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.flags.c_contiguous == want.flags.c_contiguous
    assert got.flags.f_contiguous == want.flags.f_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


A32, B32 = _rand((4, 3), np.float32), _rand((3, 5), np.float32)
A64, B64 = _rand((4, 3), np.float64), _rand((3, 5), np.float64)
I64 = np.arange(15, dtype=np.int64).reshape(3, 5)
KEYWORDS = [
    ("dtype same", A32, B32, {"dtype": np.float32}),
    ("dtype str", A32, B32, {"dtype": "float32"}),
    ("dtype wider", A32, B32, {"dtype": np.float64}),
    ("dtype narrower", A64, B64, {"dtype": np.float32}),
    ("dtype narrower casting safe", A64, B64, {"dtype": np.float32, "casting": "safe"}),
    ("dtype int", A32, B32, {"dtype": np.int64}),
    ("casting no", A32, B32, {"casting": "no"}),
    ("casting no mixed", A32, B64, {"casting": "no"}),
    ("casting equiv", A64, B64, {"casting": "equiv"}),
    ("casting safe int", A64, I64, {"casting": "safe"}),
    ("casting same_kind", A32, B64, {"casting": "same_kind"}),
    ("casting unsafe", A32, B64, {"casting": "unsafe"}),
    ("casting bogus", A32, B32, {"casting": "bogus"}),
    ("order K", np.asfortranarray(A32), np.asfortranarray(B32), {"order": "K"}),
    ("order C", A32, B32, {"order": "C"}),
    ("order F", A32, B32, {"order": "F"}),
    ("order A", np.asfortranarray(A64), np.asfortranarray(B64), {"order": "A"}),
    ("subok true", A32, B32, {"subok": True}),
    ("subok false", A32, B32, {"subok": False}),
    ("axes default", A32, B32, {"axes": [(-2, -1), (-2, -1), (-2, -1)]}),
    ("axes swapped", _rand((3, 4), np.float64), _rand((5, 3), np.float64), {"axes": [(-1, -2), (-1, -2), (-1, -2)]}),
    ("axis", A32, B32, {"axis": -1}),
    ("keepdims", A32, B32, {"keepdims": True}),
    ("signature", A32, B32, {"signature": "dd->d"}),
    ("signature tuple", A32, B32, {"signature": (np.float64, np.float64, np.float64)}),
    ("where", A32, B32, {"where": True}),
    ("unknown", A32, B32, {"frobnicate": 1}),
    ("dtype with out", A32, B32, {"dtype": np.float32, "out": np.zeros((4, 5), np.float32)}),
]


@pytest.mark.parametrize("name,a,b,kw", KEYWORDS, ids=[k[0] for k in KEYWORDS])
def test_numpy_matmul_keywords_give_numpys_result(name, a, b, kw):
    """fg.matmul used to reject every keyword of np.matmul but out."""
    _same_as_numpy(a, b, **kw)


def test_keywords_that_change_nothing_stay_native(monkeypatch):
    calls = []
    native = _matmul._BATCHED[np.dtype(np.float32)]
    monkeypatch.setitem(_matmul._BATCHED, np.dtype(np.float32), lambda *args: calls.append(1) or native(*args))
    for kw in ({"dtype": np.float32}, {"casting": "no"}, {"order": "C"}, {"order": "K"}, {"subok": False}):
        fastgemm.matmul(A32, B32, **kw)
    assert len(calls) == 5
    fastgemm.matmul(A32, B32, order="F")
    assert len(calls) == 5  # NumPy's own


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape,strides", [((3, 4), (1, 1)), ((3, 4), (0, 1)), ((2, 3, 4), (4, 2, 1)), ((4, 3), (1, 2))]
)
def test_out_whose_elements_alias_gets_numpys_result(dtype, shape, strides):
    a = _rand(shape[:-1] + (5,), dtype)
    b = _rand((5, shape[-1]), dtype)
    results = []
    for f in (np.matmul, fastgemm.matmul):
        base = np.zeros(64, dtype)
        out = np.lib.stride_tricks.as_strided(base, shape, tuple(s * base.itemsize for s in strides))
        f(a, b, out=out)
        results.append(base)
    # Computed into a temporary and copied, the last write of each element wins in both.
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_empty_operand_at_an_odd_address(which):
    buf = np.zeros(64, np.uint8)
    empty = np.ndarray((0, 4), np.float32, buffer=buf, offset=1)
    a = empty if which != "b" else np.ones((3, 0), np.float32)
    b = np.ones((4, 3), np.float32) if which == "a" else np.ndarray((0, 3), np.float32, buffer=buf, offset=3)
    if which == "b":
        a = np.ones((2, 0), np.float32)
    if which == "both":
        b = np.ndarray((4, 0), np.float32, buffer=buf, offset=5)
    want = np.matmul(a, b)
    got = fastgemm.matmul(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want)
