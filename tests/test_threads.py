"""Threads: results independent of the thread count, safe concurrent calls and fork, the
controls (set/get, environment defaults, threadpoolctl)."""

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import fastgemm
from conftest import KERNELS
from gemm_check import GEMM, assert_matches, random_matrix, reference

# Shapes big enough that fastgemm starts threads (test_shapes_start_a_team checks that):
# square-ish (ic split), few rows (jr split), a single row / column, odd edges, and K much
# larger than M and N (never split, so it must not change the bits). 1023 and 900 rows are
# two or more row blocks a thread, which threads take as they come free; 1600 columns also
# pack B in pieces taken that way; 20 rows against a wide B (one block of rows, B packed a group
# of slivers at a time by each thread for its own columns, three k slices); a small product with
# a C past half of L2, taken 16 rows at a time (1037 rows: a partial block); 128^3, whose B rows
# 512 bytes apart crowd L1: B copied, each thread copying the columns it computes. 150 x 20 x 1100
# (one B sliver, three k slices): each thread packs the whole panel for itself, the rows taken as
# they come free, so only the k slices wait for each other.
THREADED_SHAPES = [
    (20, 2600, 1100),
    (150, 20, 1100),
    (1037, 700, 5),
    (128, 128, 128),
    (300, 280, 250),
    (900, 1600, 300),
    (5, 4099, 513),
    (1, 8191, 700),
    (4097, 1, 1200),
    (131, 97, 1500),
    (45, 65, 9000),
    (1023, 129, 65),
]


@pytest.fixture(autouse=True)
def restore_threads():
    before = fastgemm.get_num_threads()
    yield
    fastgemm.set_num_threads(before)


def run_python(code, env=None, timeout=120):
    """Run `code` in a fresh interpreter (so fastgemm's import-time defaults apply); return it."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("FASTGEMM_NUM_THREADS", "OMP_NUM_THREADS")}
    full_env.update(env or {})
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [tests_dir, full_env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _operands(shape, dtype, seed):
    m, n, k = shape
    rng = np.random.default_rng(seed)
    return random_matrix(rng, (m, k), dtype), random_matrix(rng, (k, n), dtype), random_matrix(rng, (m, n), dtype)


# ---------------------------------------------------------------------------------------------
# Determinism


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", THREADED_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_bitwise_identical_for_any_thread_count(kernel, shape, dtype):
    a, b, c0 = _operands(shape, dtype, seed=sum(shape))
    results = {}
    for threads in (1, 2, 3, 4, 1, 4):  # 3 and 4 oversubscribe a 2-core machine on purpose
        fastgemm.set_num_threads(threads)
        c = c0.copy()
        GEMM[np.dtype(dtype)](a, b, c, alpha=0.75, beta=-0.5)
        results.setdefault(threads, []).append(c)
    if kernel == KERNELS[0]:  # the reference is slow for float64; one kernel checks the values
        ref, bound = reference(a, b, c0, 0.75, -0.5)
        assert_matches(results[1][0], ref, bound, f"{shape} on 1 thread")
    for threads, outs in results.items():
        for c in outs:
            assert np.array_equal(c, results[1][0]), f"{shape}: {threads} threads changed bits"


@pytest.mark.parametrize("trans_a,trans_b,order", [(True, False, "C"), (False, True, "F"), (True, True, "F")])
def test_bitwise_identical_for_transposes_and_column_major_c(trans_a, trans_b, order):
    m, n, k = 203, 517, 389
    rng = np.random.default_rng(7)
    a = random_matrix(rng, (k, m) if trans_a else (m, k), np.float32)
    b = random_matrix(rng, (n, k) if trans_b else (k, n), np.float32)
    outs = []
    for threads in (1, 2, 4):
        fastgemm.set_num_threads(threads)
        c = np.zeros((m, n), np.float32, order=order)
        fastgemm.sgemm(a, b, c, trans_a=trans_a, trans_b=trans_b)
        outs.append(c)
    ref, bound = reference(a, b, np.zeros((m, n), np.float32), 1.0, 0.0, trans_a, trans_b)
    assert_matches(outs[0], ref, bound, "1 thread")
    assert all(np.array_equal(o, outs[0]) for o in outs[1:])


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc to count threads")
def test_shapes_start_a_team_and_small_products_do_not():
    """Guards the tests above against passing vacuously on one thread, and the small-problem
    threshold against regressing: the first product that starts a team leaves its worker
    threads alive in the process."""
    code = """
        import os, numpy as np, fastgemm
        fastgemm.set_num_threads(3)
        m, n, k = SHAPE
        before = len(os.listdir("/proc/self/task"))
        fastgemm.sgemm(np.ones((m, k), np.float32), np.ones((k, n), np.float32))
        print(len(os.listdir("/proc/self/task")) - before)
    """
    cases = [(s, True) for s in THREADED_SHAPES] + [((64, 64, 64), False), ((14, 32, 100_000), False)]
    for shape, team in cases:
        # NumPy's BLAS workers spin for ~0.1 s after they start; a packed product up to 2^26
        # multiply-adds then finds no CPU free and keeps to one thread.
        r = run_python(code.replace("SHAPE", repr(shape)), env={"OPENBLAS_NUM_THREADS": "1"})
        assert r.returncode == 0, r.stderr
        started = int(r.stdout.split()[-1])
        assert (started > 0) == team, f"{shape}: {started} new threads, expected a team: {team}"


# ---------------------------------------------------------------------------------------------
# Concurrency and fork


def test_concurrent_calls_from_python_threads():
    fastgemm.set_num_threads(2)
    cases = []
    for i, shape in enumerate(THREADED_SHAPES + [(64, 48, 32), (7, 5, 3)]):
        a, b, c0 = _operands(shape, np.float32, seed=100 + i)
        expected = fastgemm.sgemm(a, b)
        ref, bound = reference(a, b, c0, 1.0, 0.0)
        assert_matches(expected, ref, bound, f"{shape}")
        cases.append((a, b, expected))

    def work(i):
        a, b, expected = cases[i % len(cases)]
        return np.array_equal(fastgemm.sgemm(a, b), expected)

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert all(pool.map(work, range(6 * len(cases))))


# 512^3: past 2^26 multiply-adds a product takes its workers whatever else is runnable (NumPy's
# BLAS workers spinning after they start, the parent's idle worker seen from the child).
_FORK_CODE = """
    import os, numpy as np, fastgemm
    fastgemm.set_num_threads(2)
    a = np.ones((512, 512), np.float32)
    before = len(os.listdir("/proc/self/task"))
    assert fastgemm.sgemm(a, a)[0, 0] == 512 and len(os.listdir("/proc/self/task")) > before  # the pool
    pid = os.fork()
    if pid == 0:  # the parent's workers are gone: one thread, then a pool of the child's own
        ok = fastgemm.get_num_threads() == 1 and fastgemm.sgemm(a, a)[3, 5] == 512
        fastgemm.set_num_threads(2)
        before = len(os.listdir("/proc/self/task"))
        ok = ok and fastgemm.sgemm(a, a)[7, 9] == 512 and len(os.listdir("/proc/self/task")) > before
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
    print("parent", fastgemm.get_num_threads(), fastgemm.sgemm(a, a)[1, 1] == 512)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs os.fork and /proc to count threads")
def test_forked_child_after_threaded_gemm_starts_its_own_workers():
    r = run_python(_FORK_CODE, timeout=60)  # without the atfork handler the child waits forever
    assert r.returncode == 0, r.stderr
    assert "child 0" in r.stdout and "parent 2 True" in r.stdout, r.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_multiprocessing_fork_pool_after_threaded_gemm():
    code = """
        import multiprocessing as mp, numpy as np, fastgemm
        a = np.arange(300 * 300, dtype=np.float32).reshape(300, 300) % 7
        expected = fastgemm.sgemm(a, a)  # threaded in the parent
        def child(_):
            import warnings
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                fastgemm.set_num_threads(2)  # from 1 after fork; no warning
            return fastgemm.get_num_threads(), len(w), bool((fastgemm.sgemm(a, a) == expected).all())
        with mp.get_context("fork").Pool(2) as pool:
            print(pool.map(child, range(4)))
    """
    r = run_python(code, env={"FASTGEMM_NUM_THREADS": "2"}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str([(2, 0, True)] * 4), r.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_before_any_threaded_gemm_may_raise_threads_again():
    code = """
        import os, numpy as np, fastgemm
        fastgemm.set_num_threads(2)
        pid = os.fork()
        if pid == 0:
            first = fastgemm.get_num_threads()
            fastgemm.set_num_threads(2)
            a = np.ones((400, 400), np.float32)
            ok = first == 1 and fastgemm.get_num_threads() == 2 and fastgemm.sgemm(a, a)[0, 0] == 400
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
    """
    r = run_python(code, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "child 0" in r.stdout, r.stdout


@pytest.mark.skipif(
    not os.path.isdir("/proc/self/task") or len(getattr(os, "sched_getaffinity", lambda _: ())(0)) < 2,
    reason="needs Linux /proc and two CPUs this process may use",
)
def test_sleeping_workers_keep_off_the_callers_cpu_and_wake_with_their_affinity():
    """An idle worker goes to sleep after 20 ms without the CPU its caller last ran on (woken,
    the scheduler would queue it there behind the caller); woken, it takes its affinity back,
    unless the program changed it meanwhile. The products stay exact throughout."""
    code = """
        import os, threading, time, numpy as np, fastgemm
        fastgemm.set_num_threads(2)
        # Past 2^28 multiply-adds: a team of two whatever the machine's load (the crowded- and
        # busy-machine rules keep smaller products to one thread), exact in float32.
        a = (np.arange(700 * 700, dtype=np.float32).reshape(700, 700) % 7)
        expected = a.astype(np.float64) @ a
        full = os.sched_getaffinity(0)
        before = set(os.listdir("/proc/self/task"))
        assert (fastgemm.matmul(a, a) == expected).all()
        workers = [int(t) for t in set(os.listdir("/proc/self/task")) - before]
        assert len(workers) == 1, workers

        def asleep_without_one_cpu():
            time.sleep(0.2)  # idle 20 ms, then asleep
            got = os.sched_getaffinity(workers[0])
            return got < full and len(full - got) == 1

        def full_while_working(seconds):
            # Watched while products run (they release the GIL): on a loaded machine an idle
            # worker goes back to sleep within microseconds of its share, before a check made
            # after the call could see it.
            seen, done = [], threading.Event()

            def watch():
                while not done.is_set() and not seen:
                    if os.sched_getaffinity(workers[0]) == full:
                        seen.append(True)
                    time.sleep(0.0002)

            watcher = threading.Thread(target=watch)
            watcher.start()
            ok, end, calls = True, time.monotonic() + seconds, 0
            # At least 3: the first product after a pause may run alone and wake the worker.
            while calls < 3 or (not seen and time.monotonic() < end):
                ok &= bool((fastgemm.matmul(a, a) == expected).all())
                calls += 1
            done.set()
            watcher.join()
            return bool(seen), ok

        print("asleep", asleep_without_one_cpu())
        woken, ok = full_while_working(1.0)
        print("woken", woken, ok)
        print("asleep again", asleep_without_one_cpu())
        mine = full - os.sched_getaffinity(workers[0])
        os.sched_setaffinity(workers[0], mine)  # the program's choice while it sleeps
        for _ in range(3):
            ok &= bool((fastgemm.matmul(a, a) == expected).all())
        time.sleep(0.01)
        print("kept", os.sched_getaffinity(workers[0]) == mine, ok)
    """
    r = run_python(code, env={"OPENBLAS_NUM_THREADS": "1"}, timeout=60)
    assert r.returncode == 0, r.stderr
    expected = ["asleep True", "woken True True", "asleep again True", "kept True True"]
    assert r.stdout.split("\n")[:4] == expected, r.stdout + r.stderr


# ---------------------------------------------------------------------------------------------
# Controls


def test_set_get_and_info():
    for n in (1, 3, np.int64(2)):
        fastgemm.set_num_threads(n)
        assert fastgemm.get_num_threads() == n
        assert fastgemm.info()["threads"] == n
    assert fastgemm.info()["thread_pool"].startswith("fastgemm's own pool")


@pytest.mark.parametrize(
    "bad,error",
    [
        (0, ValueError),
        (-2, ValueError),
        (2**40, ValueError),
        (1.5, TypeError),
        (2.0, TypeError),
        ("2", TypeError),
        (None, TypeError),
        (True, TypeError),
        (np.bool_(True), TypeError),
    ],
)
def test_bad_thread_counts_are_rejected(bad, error):
    fastgemm.set_num_threads(2)
    with pytest.raises(error, match="set_num_threads"):
        fastgemm.set_num_threads(bad)
    assert fastgemm.get_num_threads() == 2


_DEFAULT_CODE = """
    import os, warnings
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # this process may use 1 CPU
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        import fastgemm
    print(fastgemm.get_num_threads(), len(w), *[str(x.message) for x in w])
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
@pytest.mark.parametrize(
    "env,threads,warned",
    [
        ({}, 1, False),  # the affinity mask, not the machine's CPU count
        ({"OMP_NUM_THREADS": "5"}, 5, False),
        ({"OMP_NUM_THREADS": "4,2"}, 4, False),
        ({"FASTGEMM_NUM_THREADS": "3", "OMP_NUM_THREADS": "5"}, 3, False),
        ({"FASTGEMM_NUM_THREADS": " 6 "}, 6, False),
        ({"FASTGEMM_NUM_THREADS": "0", "OMP_NUM_THREADS": "5"}, 5, True),
        ({"FASTGEMM_NUM_THREADS": "two"}, 1, True),
        ({"FASTGEMM_NUM_THREADS": "-3"}, 1, True),
        ({"FASTGEMM_NUM_THREADS": "2.5"}, 1, True),
    ],
)
def test_default_thread_count_from_environment(env, threads, warned):
    r = run_python(_DEFAULT_CODE, env=env)
    assert r.returncode == 0, r.stderr
    fields = r.stdout.split(maxsplit=2)
    assert int(fields[0]) == threads, r.stdout
    assert (int(fields[1]) > 0) == warned, r.stdout
    if warned:
        assert "NUM_THREADS" in fields[2] and "positive integer" in fields[2], r.stdout


# ---------------------------------------------------------------------------------------------
# threadpoolctl


def _fastgemm_entries(threadpoolctl):
    return [i for i in threadpoolctl.threadpool_info() if i["internal_api"] == "fastgemm"]


def test_threadpoolctl_lists_fastgemm():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    fastgemm.set_num_threads(3)
    (entry,) = _fastgemm_entries(threadpoolctl)
    assert entry["user_api"] == "blas"
    assert entry["num_threads"] == 3
    assert entry["version"] == fastgemm.__version__
    assert os.path.samefile(entry["filepath"], fastgemm._core.__file__)


@pytest.mark.parametrize("how", ["int", "dict", "user_api", "info_list"])
def test_threadpoolctl_limits_and_restores(how):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    fastgemm.set_num_threads(3)
    limits = {
        "int": lambda: threadpoolctl.threadpool_limits(1),
        "dict": lambda: threadpoolctl.threadpool_limits({"fastgemm": 1}),
        "user_api": lambda: threadpoolctl.threadpool_limits(1, user_api="blas"),
        "info_list": lambda: threadpoolctl.threadpool_limits(
            [dict(e, num_threads=1) for e in _fastgemm_entries(threadpoolctl)]
        ),
    }[how]
    a = np.ones((300, 300), np.float32)
    with limits():
        assert fastgemm.get_num_threads() == 1
        assert fastgemm.sgemm(a, a)[0, 0] == 300
    assert fastgemm.get_num_threads() == 3


def test_threadpoolctl_openmp_limit_leaves_fastgemm_alone():
    """fastgemm has its own cap; limiting user_api="openmp" must not silently change it."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    fastgemm.set_num_threads(3)
    with threadpoolctl.threadpool_limits(1, user_api="openmp"):
        assert fastgemm.get_num_threads() == 3


def test_import_without_threadpoolctl_still_works():
    code = """
        import sys
        sys.modules["threadpoolctl"] = None  # makes `import threadpoolctl` raise ImportError
        import fastgemm, numpy as np
        print(fastgemm.sgemm(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))[0, 0])
    """
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "3.0"


# ---------------------------------------------------------------------------------------------
# Issue 9: the thread cap and threadpoolctl limits out of range


def test_set_num_threads_is_capped_near_the_cpu_count():
    """65536 used to be accepted (4096 threads at 2048^3, 16 s, GBs of scratch)."""
    from fastgemm._runtime import max_threads, usable_cpus

    top = max_threads()
    assert usable_cpus() <= top <= 64 * usable_cpus()
    before = fastgemm.get_num_threads()
    try:
        fastgemm.set_num_threads(top)
        assert fastgemm.get_num_threads() == top
        for bad in (top + 1, 65536):
            with pytest.raises(ValueError, match=f"<= {top}"):
                fastgemm.set_num_threads(bad)
        assert fastgemm.get_num_threads() == top
    finally:
        fastgemm.set_num_threads(before)


def _pools(threadpoolctl):
    return sorted((i["filepath"], i["num_threads"]) for i in threadpoolctl.threadpool_info())


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("limit", [0, -3, 2**31, 2**32 + 1, 10**6])
def test_threadpoolctl_limits_out_of_range_leave_every_library_as_it_was(limit, reverse):
    """threadpool_limits(0) left libgomp at 1 when libgomp came before fastgemm (fastgemm's
    controller raised midway, so nothing was restored); 2**32 + 1 became 1 (a C int wrap).
    reverse=True puts the OpenMP runtime before fastgemm, as another load order does."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from fastgemm._runtime import max_threads

    fastgemm.set_num_threads(2)
    controller = threadpoolctl.ThreadpoolController()
    if reverse:
        controller.lib_controllers.reverse()
    before = _pools(threadpoolctl)
    with controller.limit(limits=limit):
        inside = fastgemm.get_num_threads()
    assert inside == (1 if limit < 1 else max_threads())
    assert _pools(threadpoolctl) == before
    assert fastgemm.get_num_threads() == 2


@pytest.mark.parametrize("limit", [1.5, "2", True])
def test_threadpoolctl_non_integer_limit_is_refused_before_fastgemm_changes(limit):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    fastgemm.set_num_threads(2)
    controller = threadpoolctl.ThreadpoolController()
    fg = [c for c in controller.lib_controllers if c.internal_api == "fastgemm"]
    with pytest.raises(TypeError, match="fastgemm"):
        fg[0].set_num_threads(limit)
    assert fastgemm.get_num_threads() == 2
