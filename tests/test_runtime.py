"""Kernel selection (set_kernel, FASTGEMM_KERNEL at import), info(), and the block-size
overrides, which are read by the core so they are tested in a fresh interpreter."""

import os
import subprocess
import sys
import textwrap

import pytest

import fastgemm

HERE = os.path.dirname(os.path.abspath(__file__))


def run_python(code, **env):
    full = dict(os.environ, PYTHONPATH=HERE, **env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=full, cwd=HERE, capture_output=True, text=True, timeout=120
    )


def test_available_kernels():
    ks = fastgemm.available_kernels()
    assert ks and ks[-1] == "generic" and len(set(ks)) == len(ks)
    assert set(ks) <= set(fastgemm._core.compiled_kernels())


def test_set_kernel_switches_and_fixture_restores(kernel):
    assert fastgemm.get_kernel() == kernel
    assert fastgemm.info()["kernel"] == kernel


@pytest.mark.parametrize("name", ["avx9000", "", "AVX2 ", "neon-ish"])
def test_set_kernel_unknown_name(name):
    before = fastgemm.get_kernel()
    with pytest.raises(ValueError) as e:
        fastgemm.set_kernel(name)
    assert repr(name)[1:-1] in str(e.value) and "generic" in str(e.value), str(e.value)
    assert fastgemm.get_kernel() == before


def test_set_kernel_not_a_str():
    with pytest.raises(TypeError):
        fastgemm.set_kernel(2)


def test_set_kernel_the_cpu_cannot_run():
    unrunnable = set(fastgemm._core.compiled_kernels()) - set(fastgemm.available_kernels())
    if not unrunnable:
        pytest.skip("this CPU runs every kernel built in")
    before = fastgemm.get_kernel()
    for name in unrunnable:
        with pytest.raises(RuntimeError, match="cannot run"):
            fastgemm.set_kernel(name)
    assert fastgemm.get_kernel() == before


def test_info_keys():
    i = fastgemm.info()
    for key in ("version", "kernel", "mr", "nr", "mc", "kc", "nc", "caches", "cpu_features", "kernels"):
        assert key in i, key
    assert i["kernel"] in i["kernels"] and i["kernels"] == fastgemm.available_kernels()
    assert i["version"] == fastgemm.__version__
    for key in ("mr", "nr", "mc", "kc", "nc"):
        assert isinstance(i[key], int) and i[key] >= 1, (key, i[key])
    assert i["mc"] % i["mr"] == 0 and i["nc"] % i["nr"] == 0
    assert {"l1d", "l2", "l3"} <= set(i["caches"])
    assert all(isinstance(f, str) for f in i["cpu_features"])


def test_default_kernel_is_the_best():
    r = run_python("import fastgemm; print(fastgemm.get_kernel())", FASTGEMM_KERNEL="")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == fastgemm.available_kernels()[0]


@pytest.mark.parametrize("name", fastgemm.available_kernels())
def test_env_kernel_honoured_at_import(name):
    r = run_python(
        """
        import numpy as np, fastgemm
        print(fastgemm.get_kernel(), fastgemm.info()["kernel"])
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        assert (fastgemm.sgemm(a, a.T) == a @ a.T).all()
        """,
        FASTGEMM_KERNEL=name,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [name, name]


@pytest.mark.parametrize("value", ["bogus", "AVX512x"])
def test_env_kernel_bad_value_warns_and_falls_back(value):
    """A bad FASTGEMM_KERNEL must not make `import fastgemm` fail (it may come from a
    shell profile or a launcher): one RuntimeWarning, then the best kernel, as for threads."""
    r = run_python(
        """
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            import fastgemm
        msgs = [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]
        assert len(msgs) == 1, msgs
        print(fastgemm.get_kernel() == fastgemm.available_kernels()[0])
        print(msgs[0])
        try:
            fastgemm.set_kernel("bogus")
        except ValueError:
            print("set_kernel raises")
        """,
        FASTGEMM_KERNEL=value,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "True"
    assert "FASTGEMM_KERNEL" in lines[1] and value in lines[1] and "generic" in lines[1], lines[1]
    assert lines[2] == "set_kernel raises"


def test_rejected_block_sizes_warn_once_each():
    """The core ignores bad FASTGEMM_KC/MC/NC values; the import says so, one warning each."""
    r = run_python(
        """
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            import fastgemm
        for x in w:
            if issubclass(x.category, RuntimeWarning):
                print(x.message)
        """,
        FASTGEMM_KC="99999999999999999999",
        FASTGEMM_NC="banana",
        FASTGEMM_KERNEL="",
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2, r.stdout
    kc = [ln for ln in lines if "FASTGEMM_KC" in ln]
    nc = [ln for ln in lines if "FASTGEMM_NC" in ln]
    assert len(kc) == 1 and "99999999999999999999" in kc[0], r.stdout
    assert len(nc) == 1 and "banana" in nc[0], r.stdout


def test_tiny_blocks_from_environment():
    """FASTGEMM_MC/KC/NC force many blocks in every loop (MC and NC round up to one tile)."""
    r = run_python(
        """
        import numpy as np, fastgemm
        from gemm_check import DTYPES, GEMM, Placed, assert_matches, random_matrix, reference, tiles
        rng = np.random.default_rng(0)
        for name in fastgemm.available_kernels():
            fastgemm.set_kernel(name)
            for dtype in DTYPES:
                mr, nr, mc, kc, nc = tiles(name, dtype)
                assert (mc, kc, nc) == (mr, 5, nr), (name, mr, nr, mc, kc, nc)
                # The last shape is enough work for two threads (a longdouble reference of
                # it is slow, hence one layout).
                cases = [(s, t, l) for s in [(1, 1, 1), (2 * mr + 1, 3 * nr + 1, 11),
                                             (4 * mr - 1, 7 * nr - 1, 23)]
                         for t in (False, True) for l in ("C", "stepped", "F")]
                for (m, n, k), trans, layout in cases + [((200, 100, 250), True, "C")]:
                    a = random_matrix(rng, (k, m) if trans else (m, k), dtype)
                    b = random_matrix(rng, (k, n), dtype)
                    c0 = random_matrix(rng, (m, n), dtype)
                    c = Placed(c0, layout)
                    GEMM[np.dtype(dtype)](a, b, c.arr, alpha=0.5, beta=-1.0, trans_a=trans)
                    ref, bound = reference(a, b, c0, 0.5, -1.0, trans, False)
                    assert_matches(c.arr, ref, bound, f"{name} {(m, n, k)} {layout}")
                    assert c.untouched_outside()
        print("ok")
        """,
        FASTGEMM_KC="5",
        FASTGEMM_MC="1",
        FASTGEMM_NC="1",
        FASTGEMM_KERNEL="",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
