"""The benchmark's parts in-process: shape parsing, the suite, operand layouts, the timing loop,
the correctness guard, the table, the record, the plot. Tiny shapes only."""

import io
import json

import numpy as np
import pytest

import fastgemm
from fastgemm import _cli
from fastgemm.bench import measure as bm, report, suite
from fastgemm.bench.progress import Progress


def test_parse_shapes_forms():
    cases = suite.parse_shapes("512, 1024x2048x256,1000*64,3*4x5x6", "float32")
    assert [(c.m, c.n, c.k, c.batch) for c in cases] == [
        (512, 512, 512, 0),
        (1024, 2048, 256, 0),
        (64, 64, 64, 1000),
        (4, 5, 6, 3),
    ]
    assert [c.group for c in cases] == ["square", "custom", "stacked", "stacked"]
    assert len(suite.parse_shapes("64")) == 2  # both dtypes unless told


@pytest.mark.parametrize("text", ["", "x", "12x13", "1x2x3x4", "-5", "0x4x4", "0*4", "4.5"])
def test_parse_shapes_rejects(text):
    with pytest.raises(ValueError, match="--shapes"):
        suite.parse_shapes(text)


def test_full_suite_covers_the_issue():
    cases = suite.full_suite()
    shapes = {(c.m, c.n, c.k, c.batch, c.dtype) for c in cases}
    for s in (64, 4096):
        assert (s, s, s, 0, "float32") in shapes and (s, s, s, 0, "float64") in shapes
    for m, n, k in ((127, 129, 131), (1000, 1000, 1000)):
        assert (m, n, k, 0, "float64") in shapes
    llm = ((2048, 11008, 4096), (1, 4096, 4096), (4, 4096, 4096), (16, 4096, 4096), (4096, 4096, 16), (8192, 64, 8192))
    for m, n, k in llm:
        assert (m, n, k, 0, "float32") in shapes
    assert (64, 64, 64, 1000, "float32") in shapes and (8, 8, 8, 10000, "float64") in shapes
    rect = {(c.m, c.n, c.k, c.layout, c.dtype) for c in cases if c.group == "rect"}
    assert rect == {(m, n, k, lay, dt) for m, n, k, lay in suite.RECT for dt in suite.DTYPES}
    assert {c.layout for c in cases} == set(suite.LAYOUTS) | {suite.PACKED_LAYOUT}
    kn = {(c.m, c.layout) for c in cases if (c.n, c.k, c.dtype) == (4096, 4096, "float32")}
    assert kn >= {(m, lay) for m in (1, 4, 16, 64, 256) for lay in ("contiguous", suite.PACKED_LAYOUT)}
    assert all(c.group in ("packed", "linear") for c in cases if c.layout == suite.PACKED_LAYOUT)
    # issue 12's linear layer: fused on a pre-packed W at M = 1, 16, 128, 512
    linear = {(c.m, c.layout, c.activation) for c in cases if c.group == "linear"}
    assert linear == {(m, suite.PACKED_LAYOUT, "gelu_tanh") for m in (1, 16, 128, 512)}
    assert len({c.key for c in cases}) == len(cases)
    assert all(c.dtype == "float64" for c in suite.full_suite("float64"))


def test_quick_suite_is_small():
    cases = suite.quick_suite()
    assert sum(c.flops for c in cases) < 2 * 2048**3 * 1.5
    assert any(c.group == "llm" for c in cases)


@pytest.mark.parametrize("layout", list(suite.LAYOUTS))
def test_operands_have_the_layout(layout):
    case = suite.Case("strided", 6, 10, 8, "float64", layout=layout)
    a, b = suite.operands(case, np.random.default_rng(0))
    assert a.shape == (6, 8) and b.shape == (8, 10) and a.dtype == b.dtype == np.float64
    assert a.flags.c_contiguous == ("A.T" not in layout)
    assert b.flags.c_contiguous == (layout in ("contiguous", "A.T"))
    if layout == "B[:,::2]":
        assert b.strides[1] == 2 * b.itemsize


def test_stacked_operands():
    a, b = suite.operands(suite.Case("stacked", 3, 4, 5, "float32", batch=7), np.random.default_rng(0))
    assert a.shape == (7, 3, 5) and b.shape == (7, 5, 4) and a.dtype == np.float32
    case = suite.Case("stacked", 3, 4, 5, "float64", batch=7, layout="A.T,B.T")
    a, b = suite.operands(case, np.random.default_rng(0))
    assert a.shape == (7, 3, 5) and b.shape == (7, 5, 4) and a.dtype == np.float64
    assert a[0].T.flags.c_contiguous and b[0].T.flags.c_contiguous
    assert case.label() == "7*3x4x5 A.T,B.T"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m", [5, 200])
def test_guard_accepts_right_and_flags_wrong(dtype, m):
    rng = np.random.default_rng(1)
    case = suite.Case("custom", m, 33, 70, dtype)
    a, b = suite.operands(case, rng)
    c = fastgemm.gemm(a, b)
    assert bm.check_result(case, a, b, c, rng)["ok"]
    for row in (0, m - 1):  # edge rows are always in the sample
        bad = c.copy()
        bad[row, 17] += 1e-2 * (1 + abs(bad[row, 17]))
        assert not bm.check_result(case, a, b, bad, rng)["ok"]
    bad = c.copy()
    bad[m // 2 if m <= 64 else 0, 3] = np.nan
    verdict = bm.check_result(case, a, b, bad, rng)
    assert not verdict["ok"] and not verdict["finite"]


def test_measure_alternates_and_counts_repeats():
    calls = []
    fns = {"x": lambda: calls.append("x"), "y": lambda: calls.append("y")}
    res = bm.measure(fns, repeats=4)
    assert all(len(r.times) == 4 and r.median > 0 for r in res.values())
    nx, ny = res["x"].number, res["y"].number
    assert nx > 1 and ny > 1  # cheap calls are batched into samples
    timed = calls[-4 * (nx + ny) :]  # after the warm-up and calibration calls
    assert timed == (["x"] * nx + ["y"] * ny) * 4


def test_measure_adapts_repeats_to_budget():
    res = bm.measure({"x": lambda: None}, budget=0.05)
    assert bm.MIN_REPEATS <= len(res["x"].times) <= bm.MAX_REPEATS


def test_progress_without_terminal_writes_lines():
    s = io.StringIO()
    p = Progress(2, stream=s)
    p.begin(0, "a")
    p.draw(0.5)
    p.begin(1, "b")
    p.finish()
    lines = s.getvalue().splitlines()
    assert lines[0].startswith("bench [1/2] a") and lines[1].startswith("bench [2/2] b")
    assert "\r" not in s.getvalue() and "2 cases" in lines[-1]


def test_progress_on_terminal_redraws_in_place():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    s = Tty()
    p = Progress(4, stream=s)
    p.begin(1, "shape")
    p.draw(1.0, force=True)
    assert "\r[" in s.getvalue() and "2/4" in s.getvalue() and "#" in s.getvalue()


def _result(case, gf, check_ok=True):
    libs = {name: bm.LibResult(times=[case.flops / (g * 1e9)], number=1) for name, g in gf.items()}
    return bm.CaseResult(case, libs, {"ok": check_ok, "finite": True, "worst_err_over_bound": 0.1})


def test_table_ratio_peak_and_wrong_rows():
    ok = _result(suite.Case("square", 64, 64, 64, "float32"), {"fastgemm": 50.0, "numpy": 25.0, "torch": 40.0})
    wrong = _result(suite.Case("square", 128, 128, 128, "float32"), {"fastgemm": 90.0, "numpy": 30.0}, False)
    text = report.table([ok, wrong], ["fastgemm", "numpy", "torch"], {"float32": 100.0}, 1)
    row = next(ln for ln in text.splitlines() if ln.startswith("64x64x64"))
    assert "1.25x" in row and " 50 " in row + " " and row.rstrip().endswith("ok")
    assert "WRONG" in next(ln for ln in text.splitlines() if ln.startswith("128x128x128"))
    assert "!! fastgemm gave a WRONG result" in text
    assert report.pct_peak(ok, {"float32": 100.0}, 2) == pytest.approx(25.0)


def test_bench_exits_3_when_fastgemm_is_wrong(monkeypatch, capsys):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(fastgemm, "sgemm", lambda a, b: np.matmul(a, b) + np.float32(1))
    code = _cli.main(["bench", "--shapes", "8", "--dtype", "float32", "--threads", "1", "--repeats", "1"])
    assert code == _cli.EXIT_WRONG
    assert "WRONG" in capsys.readouterr().out


def test_record_compare_and_plot(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    out = tmp_path / "r.json"
    args = [
        "bench",
        "--shapes",
        "8,16,7x5x3",
        "--dtype",
        "float64",
        "--threads",
        "1",
        "--repeats",
        "3",
        "--json",
        str(out),
    ]
    try:
        import matplotlib  # noqa: F401

        args += ["--plot", str(tmp_path / "p.png")]
    except ImportError:
        pass
    assert _cli.main(args) == 0
    rec = report.load_record(str(out))
    assert rec["machine"]["fastgemm"]["kernel"] == fastgemm.get_kernel()
    assert set(rec["machine"]["peak_gflops_per_core"]) == {"float64"}
    assert all(len(r["libs"]["numpy"]["times_s"]) == 3 for r in rec["results"])
    json.dumps(rec)  # plain data only
    if "--plot" in args:
        assert (tmp_path / "p.png").stat().st_size > 1000
    capsys.readouterr()
    assert (
        _cli.main(
            ["bench", "--shapes", "16", "--dtype", "float64", "--threads", "1", "--repeats", "1", "--compare", str(out)]
        )
        == 0
    )
    tail = capsys.readouterr().out.split("Against", 1)[1]
    assert "16x16x16" in tail and "%" in tail


@pytest.mark.parametrize("layout", list(suite.LAYOUTS))
@pytest.mark.parametrize("threads", [1, 2])
def test_every_library_runs_every_layout(layout, threads):
    libs, _ = bm.competitors(threads)
    case = suite.Case("strided", 16, 12, 8, "float32", layout=layout)
    rng = np.random.default_rng(3)
    res = bm.run_case(case, libs, suite.operands(case, rng), repeats=2, budget=0.01, rng=rng)
    assert res.check["ok"] and not res.skipped
    for lib in libs:
        r = res.libs[lib.name]
        assert r.error or (len(r.times) == 2 and res.gflops(lib.name) > 0), lib.name
    assert not res.libs["fastgemm"].error and not res.libs["numpy"].error


@pytest.mark.parametrize("threads", [1, 2])
def test_packed_rows_time_a_packed_b(threads, monkeypatch):
    """fastgemm gets fastgemm.pack(b), packed before timing; the others get b itself."""
    packs = []
    monkeypatch.setattr(fastgemm, "pack", lambda b: packs.append(b) or fastgemm._packed.pack(b))
    libs, _ = bm.competitors(threads)
    case = suite.Case("packed", 3, 40, 24, "float32", layout=suite.PACKED_LAYOUT)
    rng = np.random.default_rng(4)
    res = bm.run_case(case, libs, suite.operands(case, rng), repeats=2, budget=0.01, rng=rng)
    assert res.check["ok"] and len(packs) == 1
    assert not res.libs["fastgemm"].error and not res.libs["numpy"].error


def test_unsteady_samples_are_marked():
    case = suite.Case("square", 64, 64, 64, "float32")
    steady = bm.CaseResult(
        case,
        {
            "fastgemm": bm.LibResult(times=[1e-5, 1.01e-5], number=1),
            "numpy": bm.LibResult(times=[2e-5, 2.02e-5], number=1),
        },
        {"ok": True},
    )
    text = report.table([steady], ["fastgemm", "numpy"], {"float32": 100.0}, 1)
    assert "~" not in text
    steady.libs["numpy"].times.append(4e-5)
    text = report.table([steady], ["fastgemm", "numpy"], {"float32": 100.0}, 1)
    assert "ok  ~" in text and "quiet machine" in text


# Issue 9


def _machine(missing, load=0.0):
    info = fastgemm.info()
    return {
        "fastgemm": info,
        "versions": {"fastgemm": "x", "numpy": np.__version__, "python": "3"},
        "cpu": "cpu",
        "usable_cpus": 2,
        "system": "Linux",
        "threads": 1,
        "pinning": "threadpoolctl",
        "peak_gflops_per_core": {"float32": 100.0},
        "blas": [],
        "missing": missing,
        "env": {},
        "load_average": load,
    }


def test_missing_competitors_name_the_extra_that_installs_them():
    """The hint said fastgemm[bench] for torch, which is in fastgemm[bench-torch]."""
    text = report.header(_machine(["torch"]), "today")
    assert 'pip install "fastgemm[bench-torch]" adds it' in text and 'fastgemm[bench]"' not in text
    text = report.header(_machine(["blis"]), "today")
    assert 'pip install "fastgemm[bench]" adds it' in text
    text = report.header(_machine(["torch", "blis"]), "today")
    assert '"fastgemm[bench]"' in text and '"fastgemm[bench-torch]"' in text


def test_ratio_under_unsteady_samples_or_load_is_flagged():
    """A 403x ratio measured under load was printed without a mark."""
    case = suite.Case("square", 64, 64, 64, "float32")

    def res(np_times):
        return bm.CaseResult(
            case,
            {
                "fastgemm": bm.LibResult(times=[1e-5, 1.01e-5], number=1),
                "numpy": bm.LibResult(times=np_times, number=1),
            },
            {"ok": True},
        )

    def ratio_cell(text):
        row = next(ln for ln in text.splitlines() if ln.startswith("64x64x64"))
        return row.split()[5]

    steady = report.table([res([2e-5, 2.02e-5])], ["fastgemm", "numpy"], {"float32": 100.0}, 1)
    assert ratio_cell(steady) == "2.00x" and "not to be trusted" not in steady
    unsteady = report.table([res([2e-5, 2e-5, 4e-3])], ["fastgemm", "numpy"], {"float32": 100.0}, 1)
    assert ratio_cell(unsteady).endswith("x?") and "not to be trusted" in unsteady
    loaded = report.table([res([2e-5, 2.02e-5])], ["fastgemm", "numpy"], {"float32": 100.0}, 1, load_before=3.0)
    assert ratio_cell(loaded) == "2.00x?" and "load average was 3.0 before" in loaded
    after = report.table([res([2e-5, 2.02e-5])], ["fastgemm", "numpy"], {"float32": 100.0}, 2, load_after=5.0)
    assert ratio_cell(after) == "2.00x?" and "5.0 after" in after
    assert "ratios marked ?" in report.header(_machine([], load=3.0), "today")


def test_switch_dot_group_times_np_dot_on_and_off(monkeypatch):
    cases = suite.switch_dot_suite()
    assert {(c.m, c.dtype) for c in cases} == {(s, dt) for s in (8, 16, 32, 64, 512) for dt in suite.DTYPES}
    assert all(c.group == suite.SWITCH_DOT and not c.square and c.label().startswith("np.dot") for c in cases)
    full = suite.full_suite()
    assert set(cases) <= set(full) and len({c.key for c in full}) == len(full)
    from fastgemm import _numpy_funcs

    libs, _ = bm.competitors(1)
    case = suite.Case(suite.SWITCH_DOT, 16, 16, 16, "float64")
    rng = np.random.default_rng(5)
    a, b = suite.operands(case, rng)
    before = _numpy_funcs.calls()["dot"]
    res = bm.run_case(case, libs, (a, b), repeats=2, budget=0.01, rng=rng)
    after = _numpy_funcs.calls()["dot"]
    assert res.check["ok"] and not res.libs["fastgemm"].error and not res.libs["numpy"].error
    assert after["fastgemm"] > before["fastgemm"]  # the fastgemm column is the switch's np.dot
    assert after["numpy"] == before["numpy"]  # NumPy's column calls NumPy's own, not through it
    for name in ("torch", "blis"):
        if name in res.libs:
            assert "switch" in res.libs[name].error


def test_int8_group_beside_float32():
    cases = suite.full_suite("u8s8,s8s8")
    assert {c.group for c in cases} == {"int8", "packed"}
    int8 = [c for c in cases if c.group == "int8"]
    assert {(c.m, c.n, c.k, c.dtype) for c in int8} == {
        (m, n, k, dt) for m, n, k in ((512,) * 3, (2048,) * 3, (1, 4096, 4096)) for dt in ("u8s8", "s8s8", "float32")
    }
    packed = {(c.m, c.n, c.k, c.dtype, c.layout) for c in cases if c.group == "packed"}
    kn = suite.PACKED_KN
    layouts = ("contiguous", suite.PACKED_LAYOUT)
    assert packed == {(m, kn, kn, dt, lay) for m in suite.PACKED_M for dt in ("u8s8", "s8s8") for lay in layouts}
    assert not any(c.group == "int8" for c in suite.full_suite())  # only when asked for
    for dt, adt in (("u8s8", np.uint8), ("s8s8", np.int8)):
        case = suite.Case("int8", 5, 7, 9, dt)
        a, b = suite.operands(case, np.random.default_rng(0))
        assert a.dtype == adt and b.dtype == np.int8 and a.shape == (5, 9) and b.shape == (9, 7)
        c = fastgemm.gemm(a, b)
        assert bm.check_result(case, a, b, c, np.random.default_rng(1))["ok"]
        c[0, 0] += 1
        assert not bm.check_result(case, a, b, c, np.random.default_rng(1))["ok"]
        # the packed row's fastgemm call multiplies by fastgemm.pack(b): the same int32 C
        call = bm.FastGemm(1).prepare(suite.Case("packed", 5, 7, 9, dt, layout=suite.PACKED_LAYOUT), a, b)
        assert np.array_equal(call(), fastgemm.gemm(a, b))
