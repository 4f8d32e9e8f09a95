"""`python -m fastgemm bench|info` from the outside: exit codes, one-line errors, no tracebacks.

Every bench run here is a few tiny shapes, so the file takes seconds."""

import json
import os
import subprocess
import sys

import pytest

import fastgemm


def run(*args, env_extra=None, pythonpath=None):
    env = dict(os.environ)
    env.pop("FASTGEMM_DEBUG", None)
    env.update(env_extra or {})
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "fastgemm", *args], capture_output=True, text=True, env=env, timeout=120
    )


def assert_one_line_error(p, code=2, needle=""):
    assert p.returncode == code, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert "error" in lines[0] and needle in lines[0], lines[0]


def test_info_prints_kernel_tile_and_caches():
    p = run("info")
    assert p.returncode == 0, p.stderr
    i = fastgemm.info()
    assert f"{i['kernel']} (" in p.stdout
    assert f"tile {i['mr']} x {i['nr']}" in p.stdout
    for level in i["caches"]:
        assert f"cache {level}" in p.stdout


def test_no_command_shows_help_and_fails():
    p = run()
    assert p.returncode == 2
    assert "bench" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize(
    "args,needle",
    [
        (("bench", "--frobnicate"), "--frobnicate"),
        (("bench", "--shapes", "12x"), "12x"),
        (("bench", "--shapes", "0"), "zero"),
        (("bench", "--shapes", "a,b"), "'a'"),
        (("bench", "--shapes", ""), "empty"),
        (("bench", "--threads", "0"), "--threads"),
        (("bench", "--repeats", "x"), "--repeats"),
        (("bench", "--dtype", "float8"), "--dtype"),
        (("bench", "--quick", "--shapes", "64"), "not allowed"),
        (("bench", "--kernel", "nosuchkernel", "--quick"), "nosuchkernel"),
        (("bench", "--shapes", "8x9x10", "--plot", "x.png"), "square"),
        (("bench", "--quick", "--json", "/nonexistent-dir/r.json"), "does not exist"),
        (("info", "--bogus"), "--bogus"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, needle):
    assert_one_line_error(run(*args), needle=needle)


def test_compare_with_missing_file(tmp_path):
    assert_one_line_error(run("bench", "--quick", "--compare", str(tmp_path / "none.json")), needle="no such file")


def test_compare_with_invalid_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert_one_line_error(run("bench", "--quick", "--compare", str(bad)), needle="not JSON")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    assert_one_line_error(run("bench", "--quick", "--compare", str(other)), needle="not a record")


def test_plot_without_matplotlib_fails_before_measuring(tmp_path):
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "matplotlib.py").write_text("raise ImportError('hidden by the test')\n")
    p = run("bench", "--quick", "--plot", str(tmp_path / "p.png"), pythonpath=hide)
    assert_one_line_error(p, needle="pip install")
    assert p.stdout == ""  # nothing was measured


def test_list_quick_runs_nothing():
    p = run("bench", "--quick", "--list")
    assert p.returncode == 0, p.stderr
    assert "2048x2048x2048" in p.stdout and "16x4096x4096" in p.stdout
    assert p.stdout.strip().endswith("4 cases")


def test_tiny_bench_end_to_end(tmp_path):
    out = tmp_path / "r.json"
    p = run(
        "bench", "--shapes", "16,8x9x10", "--dtype", "float32", "--threads", "1", "--repeats", "2", "--json", str(out)
    )
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert "FMA peak" in p.stdout and "fg/best" in p.stdout
    assert "16x16x16" in p.stdout and "8x9x10" in p.stdout
    assert "bench [2/2]" in p.stderr  # progress without a terminal: one line per case
    rec = json.loads(out.read_text())
    assert [r["key"] for r in rec["results"]] == ["16x16x16/b0/float32/contiguous", "8x9x10/b0/float32/contiguous"]
    for r in rec["results"]:
        assert r["check"]["ok"] is True
        assert len(r["libs"]["fastgemm"]["times_s"]) == 2
        assert len(r["libs"]["numpy"]["times_s"]) == 2
    p2 = run("bench", "--shapes", "16", "--dtype", "float32", "--threads", "1", "--repeats", "1", "--compare", str(out))
    assert p2.returncode == 0, p2.stderr
    assert "Against" in p2.stdout and "16x16x16" in p2.stdout.split("Against", 1)[1]


def test_without_threadpoolctl_numpy_is_pinned_by_restarting(tmp_path):
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "threadpoolctl.py").write_text("raise ImportError('hidden by the test')\n")
    env = {"OPENBLAS_NUM_THREADS": "", "OMP_NUM_THREADS": ""}
    p = run(
        "bench",
        "--shapes",
        "8",
        "--dtype",
        "float32",
        "--threads",
        "1",
        "--repeats",
        "1",
        pythonpath=hide,
        env_extra=env,
    )
    assert p.returncode == 0, p.stderr
    assert "restarting with OPENBLAS_NUM_THREADS" in p.stderr
    assert "OPENBLAS_NUM_THREADS=1" in p.stdout  # the child reports how it was pinned


# ---------------------------------------------------------------------------------------------
# Issue 9


def test_bench_help_shows_a_percent_sign_not_two():
    p = run("bench", "--help")
    assert p.returncode == 0
    assert "%%" not in p.stdout and "% of this machine" in " ".join(p.stdout.split())


def test_output_cut_short_by_the_reader_ends_quietly():
    """`python -m fastgemm info | head -1` ended in a BrokenPipeError traceback."""
    # The reader is gone before the command writes its first line (importing takes far longer
    # than closing a pipe), which is what `head -1` does to all but the first line.
    proc = subprocess.Popen(
        [sys.executable, "-m", "fastgemm", "info"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert proc.returncode == 1


def test_run_c_runs_code_like_python(tmp_path):
    p = run("run", "-c", "import sys, fastgemm; print(sys.argv, fastgemm.is_patched(), __name__)", "x", "-y")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "['-c', 'x', '-y'] True __main__"
    p = run("run", "-c", "raise SystemExit(7)")
    assert p.returncode == 7
    p = run("run", "-c")
    assert p.returncode == 2 and "-c needs" in p.stderr


def _python_one_line(args, cwd):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def test_run_missing_module_and_directory_fail_like_python(tmp_path):
    """python prints one line and exits 1; `run` printed a runpy traceback."""
    empty = tmp_path / "emptydir"
    empty.mkdir()
    for args in (("-m", "no_such_module_xyz"), (str(empty),)):
        ours = run("run", *args)
        theirs = _python_one_line(args, tmp_path)
        assert ours.returncode == theirs.returncode == 1, ours.stderr
        assert "Traceback" not in ours.stderr
        assert ours.stderr.splitlines() == theirs.stderr.splitlines(), (ours.stderr, theirs.stderr)


def test_run_directory_with_main_and_program_import_errors(tmp_path):
    pkg = tmp_path / "app"
    pkg.mkdir()
    (pkg / "__main__.py").write_text("import fastgemm, sys\nprint('app', fastgemm.is_patched(), sys.path[0])\n")
    p = run("run", str(pkg))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["app", "True", str(pkg)]
    bad = tmp_path / "bad.py"
    bad.write_text("import no_such_module_xyz\n")
    p = run("run", str(bad))  # the program's own ImportError keeps python's traceback
    assert p.returncode == 1 and "Traceback" in p.stderr and "no_such_module_xyz" in p.stderr


@pytest.mark.parametrize(
    "args,needle",
    [
        (("--budget", "inf"), "finite"),
        (("--budget", "nan"), "--budget"),
        (("--json", ""), "empty"),
        (("--plot", ""), "empty"),
    ],
)
def test_bench_rejects_before_measuring(args, needle):
    p = run("bench", "--shapes", "64", *args)
    assert_one_line_error(p, needle=needle)
    assert p.stdout == ""


def test_bench_json_and_plot_that_are_directories(tmp_path):
    p = run("bench", "--shapes", "64", "--json", str(tmp_path))
    assert_one_line_error(p, needle="is a directory")
    p = run("bench", "--shapes", "64", "--plot", str(tmp_path))
    assert_one_line_error(p, needle="is a directory")


def test_bench_damaged_compare_record_fails_before_measuring(tmp_path):
    good = {"format": "fastgemm-bench", "results": []}
    for bad_result in (
        {"key": 1},
        {"key": "k", "threads": "2", "libs": {}},
        {"key": "k", "threads": 1},
        {"key": "k", "threads": 1, "libs": {"fastgemm": {"gflops": "fast"}}},
        "nope",
    ):
        f = tmp_path / "bad.json"
        f.write_text(json.dumps(dict(good, results=[bad_result])))
        p = run("bench", "--shapes", "64", "--compare", str(f))
        assert_one_line_error(p, needle="damaged")
        assert p.stdout == ""


def test_bench_failed_run_leaves_no_empty_json(tmp_path):
    out = tmp_path / "r.json"
    hide = tmp_path / "hide"
    hide.mkdir()
    # A run that fails after the options were checked (the FMA peak measurement raises).
    (hide / "sitecustomize.py").write_text(
        "import fastgemm.bench.measure as m\n"
        "def boom(*a, **k):\n    raise RuntimeError('injected failure')\n"
        "m.fma_peaks = boom\n"
    )
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    p = run(
        "bench", "--shapes", "8", "--threads", "1", "--repeats", "1", "--json", str(out), pythonpath=hide, env_extra=env
    )
    assert p.returncode == 1 and "injected failure" in p.stderr, p.stderr
    assert not out.exists()
