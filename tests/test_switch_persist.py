"""`python -m fastgemm switch on|off|status`: the .pth hook, in a fresh virtual environment.

The venv is made with ``python -m venv --without-pip`` (a fraction of a second); instead of a pip
install, a .pth in it points at the directories this fastgemm and numpy are imported from (the
source tree in development, the test venv's site-packages when CI runs from an installed wheel).
Every check starts a real interpreter of that venv.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fastgemm
from fastgemm import _persist


def _run(python, code, env=None, timeout=120):
    e = dict(os.environ)
    e.pop("FASTGEMM_SWITCH", None)
    e.pop("PYTHONPATH", None)
    e.update(env or {})
    return subprocess.run([python, *code], capture_output=True, text=True, timeout=timeout, env=e, cwd="/")


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = str(root / "bin" / "python")
    site = _run(python, ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    dirs = {os.path.dirname(os.path.dirname(m.__file__)) for m in (fastgemm, np)}
    with open(os.path.join(site, "paths.pth"), "w") as f:
        f.write("\n".join(sorted(dirs)) + "\n")
    return python, site


CHECK = textwrap.dedent("""
    import sys
    import numpy as np
    loaded = "fastgemm" in sys.modules
    import fastgemm
    from fastgemm import _numpy_funcs
    print(loaded, fastgemm.is_patched(), np.dot is _numpy_funcs.dot)
""")


def test_switch_on_off_status_in_a_fresh_venv(venv):
    python, site = venv
    r = _run(python, ["-m", "fastgemm", "switch", "status"])
    assert r.returncode == 0 and "off" in r.stdout
    r = _run(python, ["-c", CHECK])
    assert r.stdout.split() == ["False", "False", "False"], r.stderr

    r = _run(python, ["-m", "fastgemm", "switch", "on"])
    assert r.returncode == 0, r.stderr
    assert os.path.isfile(os.path.join(site, _persist.PTH_NAME))
    r = _run(python, ["-m", "fastgemm", "switch", "status"])
    assert r.returncode == 0 and "switch: on" in r.stdout
    # numpy imported first: the hook imports fastgemm and turns the switch on
    r = _run(python, ["-c", CHECK])
    assert r.stdout.split() == ["True", "True", "True"], r.stderr
    assert r.stderr == ""
    # fastgemm imported first (it imports numpy itself): on at the end of its import
    r = _run(python, ["-c", "import fastgemm; print(fastgemm.is_patched())"])
    assert r.stdout.split() == ["True"], r.stderr
    # a product in that interpreter really runs on fastgemm
    code = "import numpy as np; from fastgemm import _core; a = np.ones((300, 300)); a @ a; print(_core.matmul_loop_calls()['fastgemm'])"
    assert int(_run(python, ["-c", code]).stdout) >= 1
    # bfloat16 (ml_dtypes imported after numpy, so after the switch went on) runs on fastgemm too
    code = (
        "import numpy as np, ml_dtypes; from fastgemm import _core; a = np.ones((30, 30), ml_dtypes.bfloat16); "
        "assert (a @ a).dtype == np.float32; print(_core.bf16_matmul_loop_calls()['fastgemm'])"
    )
    r = _run(python, ["-c", code])
    assert r.stdout.strip() == "1", r.stderr
    # an interpreter that never imports numpy does not pay for fastgemm
    r = _run(python, ["-c", "import sys; print('numpy' in sys.modules, 'fastgemm' in sys.modules)"])
    assert r.stdout.split() == ["False", "False"], r.stderr
    # FASTGEMM_SWITCH=0: off for one run
    r = _run(python, ["-c", CHECK], env={"FASTGEMM_SWITCH": "0"})
    assert r.stdout.split() == ["False", "False", "False"], r.stderr
    r = _run(python, ["-m", "fastgemm", "switch", "on"])  # again: idempotent
    assert r.returncode == 0

    r = _run(python, ["-m", "fastgemm", "switch", "off"])
    assert r.returncode == 0 and not os.path.exists(os.path.join(site, _persist.PTH_NAME))
    r = _run(python, ["-c", CHECK])
    assert r.stdout.split() == ["False", "False", "False"], r.stderr
    r = _run(python, ["-m", "fastgemm", "switch", "off"])  # already off: fine
    assert r.returncode == 0


def test_hook_is_harmless_when_fastgemm_cannot_be_imported(venv, tmp_path):
    """Uninstalled (or broken) fastgemm: the interpreter starts and numpy imports, silently."""
    python, site = venv
    assert _run(python, ["-m", "fastgemm", "switch", "on"]).returncode == 0
    try:
        # A fastgemm that fails to import shadows the real one, first on the path.
        broken = tmp_path / "broken"
        (broken / "fastgemm").mkdir(parents=True)
        (broken / "fastgemm" / "__init__.py").write_text("raise ImportError('fastgemm is gone')\n")
        env = {"PYTHONPATH": str(broken)}
        r = _run(python, ["-c", "import numpy as np; print((np.ones((200, 200)) @ np.ones(200))[0])"], env=env)
        assert r.returncode == 0 and r.stdout.strip() == "200.0" and r.stderr == "", r.stderr
        r = _run(python, ["-c", "print('started')"], env=env)
        assert r.returncode == 0 and r.stdout.strip() == "started" and r.stderr == ""
        # and with no fastgemm on the path at all (paths.pth gone: numpy only)
        paths = os.path.join(site, "paths.pth")
        with open(paths) as f:
            saved = f.read()
        os.remove(paths)
        try:
            r = _run(python, ["-c", "import sys; print('started', 'fastgemm' in sys.modules)"])
            assert r.returncode == 0 and r.stdout.split() == ["started", "False"] and r.stderr == ""
        finally:
            with open(paths, "w") as f:
                f.write(saved)
    finally:
        _run(python, ["-m", "fastgemm", "switch", "off"])


def test_refuses_where_site_packages_is_not_writable(capsys):
    # /proc refuses new files even to root, where a chmod'ed directory would not.
    assert _persist.main(["on"], site="/proc") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m fastgemm switch: error: cannot write to /proc")
    assert _persist.main(["on"], site="/nonexistent/site-packages") == 2
    assert "does not exist" in capsys.readouterr().err


def test_usage_errors():
    r = subprocess.run(
        [sys.executable, "-m", "fastgemm", "switch", "maybe"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "on, off, status" in r.stderr
    r = subprocess.run([sys.executable, "-m", "fastgemm", "switch"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
