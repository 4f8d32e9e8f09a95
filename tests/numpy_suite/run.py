"""Run NumPy's own tests of what the switch covers (shipped inside the numpy package) with it on.

    python tests/numpy_suite/run.py [extra pytest args]

Exit status is pytest's. NumPy's test files and their selection are listed in SELECTION.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# (module, -k expression): the matmul classes and tests of test_multiarray (MatmulCommon
# through TestMatmul, TestMatmulOperator, TestMatmulInplace, TestMethods' matmul tests,
# test_matmul_axes) and test_ufunc's axes/axis/keepdims tests, which run gufuncs such as
# matmul with their axes arguments; then NumPy's tests of dot (TestDot, the dot tests of
# TestMethods and the casting test shared with matmul), inner, tensordot, einsum (its optimized
# paths reach matmul, on older NumPy tensordot), multi_dot and the NumPy 2 gufuncs vecdot,
# matvec, vecmat. test_huge_vectordot (marked slow) needs 18 GB free and an 8 GiB operand: left out.
SELECTION = [
    ("numpy._core.tests.test_multiarray", "matmul or Matmul"),
    ("numpy._core.tests.test_ufunc", "axes_argument or axis_argument or keepdims_argument or matmul"),
    ("numpy._core.tests.test_multiarray", "(Dot or dot or Inner or inner) and not huge"),
    ("numpy._core.tests.test_numeric", "Tensordot or tensordot"),
    ("numpy._core.tests.test_einsum", "optimize or inner or Einsum"),
    ("numpy._core.tests.test_ufunc", "vecdot or matvec or vecmat"),
    ("numpy.linalg.tests.test_linalg", "MultiDot or tensordot or vecdot"),
]


def command(module, expr, extra=()):
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "fastgemm_numpy_plugin",
        "--pyargs",
        module,
        "-k",
        expr,
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        *extra,
    ]


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = HERE + os.pathsep + e.get("PYTHONPATH", "")
    return e


def main(extra):
    status = 0
    for module, expr in SELECTION:
        cmd = command(module, expr, extra)
        print("$", " ".join(cmd), flush=True)
        # Run from a neutral directory so the project's own conftest.py is not collected.
        status = max(status, subprocess.call(cmd, env=env(), cwd=HERE))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
