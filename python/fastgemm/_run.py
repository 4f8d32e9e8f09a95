"""`python -m fastgemm run [--] script.py args...`: run a program with numpy.matmul on fastgemm."""
from __future__ import annotations

import os
import runpy
import sys

USAGE = (
    "usage: python -m fastgemm run [--] script.py [args...]\n"
    "       python -m fastgemm run -m module [args...]\n"
    "Runs the script (or module) as __main__ with numpy.matmul, `@` and np.linalg.matmul on fastgemm."
)


def main(argv):
    """Run the program argv names with the switch on; returns its exit status."""
    argv = list(argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        sys.stderr.write(USAGE + "\n")
        return 0 if argv else 2
    as_module = argv[0] == "-m"
    if as_module:
        if len(argv) < 2:
            sys.stderr.write("python -m fastgemm run: error: -m needs a module name\n" + USAGE + "\n")
            return 2
        target, args = argv[1], argv[2:]
    else:
        target, args = argv[0], argv[1:]
        if not os.path.exists(target):
            sys.stderr.write(f"python -m fastgemm run: error: {target}: no such file\n")
            return 2

    from . import _patch

    # What `python script.py` / `python -m module` would set up.
    sys.argv = [target, *args]
    sys.path[0] = os.getcwd() if as_module else os.path.dirname(os.path.abspath(target))
    _patch.patch_numpy()
    try:
        if as_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
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
