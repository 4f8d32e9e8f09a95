"""`python -m fastgemm run`: run a program with numpy.matmul on fastgemm.

    python -m fastgemm run [--] script.py [args...]
    python -m fastgemm run -m module [args...]
    python -m fastgemm run -c "code" [args...]

The program runs as ``python`` would run it (``__main__``, sys.argv, sys.path[0]) and fails
as python fails: a missing module, or a directory or zip file without ``__main__``, is one
line on stderr and exit code 1; a missing script file is one line and exit code 2.
"""

from __future__ import annotations

import os
import runpy
import sys
import types
from collections.abc import Sequence

USAGE = (
    "usage: python -m fastgemm run [--] script.py [args...]\n"
    "       python -m fastgemm run -m module [args...]\n"
    "       python -m fastgemm run -c code [args...]\n"
    "Runs the script, module or code as __main__ with numpy.matmul, `@` and np.linalg.matmul on fastgemm."
)


def _raised_by_runpy(e: BaseException) -> bool:
    """True for the ImportError runpy raises when it cannot find what to run (no such
    module, a directory without __main__.py), which python prints as one line; an
    ImportError raised by the program itself has the program's frame innermost."""
    tb = e.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_globals.get("__name__") == "runpy"


def _run_code(code: str) -> None:
    """Run ``code`` as python -c does: in a fresh __main__ module, file name "<string>"."""
    compiled = compile(code, "<string>", "exec")
    main = types.ModuleType("__main__")
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(compiled, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def main(argv: Sequence[str]) -> int:
    """Run the program argv names with the switch on; returns its exit status."""
    argv = list(argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        sys.stderr.write(USAGE + "\n")
        return 0 if argv else 2
    mode = argv[0] if argv[0] in ("-m", "-c") else "path"
    if mode != "path":
        if len(argv) < 2:
            what = "a module name" if mode == "-m" else "the code to run"
            sys.stderr.write(f"python -m fastgemm run: error: {mode} needs {what}\n" + USAGE + "\n")
            return 2
        target, args = argv[1], argv[2:]
    else:
        target, args = argv[0], argv[1:]
        if not os.path.exists(target):
            sys.stderr.write(f"python -m fastgemm run: error: {target}: no such file\n")
            return 2

    from . import _patch

    # What `python script.py` / `python -m module` / `python -c code` would set up.
    if mode == "-c":
        sys.argv = ["-c", *args]
        sys.path[0] = ""
    elif mode == "-m":
        sys.argv = [target, *args]
        sys.path[0] = os.getcwd()
    else:
        sys.argv = [target, *args]
        # A directory or zip file is itself put on the path (python runs its __main__.py).
        path = os.path.abspath(target)
        sys.path[0] = path if os.path.isdir(target) or _is_zip(target) else os.path.dirname(path)
    _patch.patch_numpy()
    try:
        if mode == "-c":
            _run_code(target)
        elif mode == "-m":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except ImportError as e:
        if not _raised_by_runpy(e):
            raise
        sys.stderr.write(f"{sys.executable}: {e}\n")  # python's own one line
        return 1
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        sys.stderr.write(f"{code}\n")
        return 1
    finally:
        _patch.restore_numpy()
    return 0


def _is_zip(path: str) -> bool:
    import zipfile

    return zipfile.is_zipfile(path)
