"""The core under hostile settings: blocking overrides, thread counts, small worker stacks,
and memory returned after a call on many threads. Each case runs in a fresh interpreter."""

import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

import fastgemm as fg
from fastgemm import _core


def run_python(code, env=None, timeout=180):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("FASTGEMM_", "OMP_"))}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=full, capture_output=True, text=True, timeout=timeout
    )


_BLOCKING = """
    import numpy as np
    import fastgemm as fg
    from fastgemm import _core
    a = np.ones((300, 200), np.float32)
    b = np.ones((200, 100), np.float32)
    assert (fg.gemm(a, b) == 200).all()
    i = fg.info()
    print(i["mc"], i["kc"], i["nc"], i["float64"]["kc"])
    print(repr(_core.rejected_env_settings()))
"""


def test_blocking_defaults():
    r = run_python(_BLOCKING)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] == "[]"


@pytest.mark.parametrize("var", ["FASTGEMM_KC", "FASTGEMM_MC", "FASTGEMM_NC"])
@pytest.mark.parametrize("value", ["99999999999999999999", "1000000000000", "0", "-5", "12abc", "4097000"])
def test_bad_blocking_override_is_ignored(var, value):
    # Used to die with SIGFPE (strtoll clamps, ceil_div overflows) or std::bad_alloc.
    default = run_python(_BLOCKING)
    r = run_python(_BLOCKING, env={var: value})
    assert r.returncode == 0, (r.returncode, r.stderr)
    sizes, rejected = r.stdout.splitlines()
    assert sizes == default.stdout.splitlines()[0]
    entries = eval(rejected)
    assert len(entries) == 1
    name, raw, reason = entries[0]
    assert (name, raw) == (var, value) and ("range" in reason or "integer" in reason)


def test_good_blocking_override_is_used():
    r = run_python(_BLOCKING, env={"FASTGEMM_KC": "100", "FASTGEMM_NC": "16384"})
    assert r.returncode == 0, r.stderr
    mc, kc, nc, kc64 = map(int, r.stdout.splitlines()[0].split())
    assert kc == 100 and kc64 == 100 and nc <= 16384 and nc > 16384 - 64
    assert r.stdout.splitlines()[1] == "[]"


def test_thread_limit():
    limit = _core.max_thread_limit()
    assert limit == max(8, 4 * len(os.sched_getaffinity(0)))
    before = fg.get_num_threads()
    with pytest.raises(ValueError, match="set_num_threads"):
        _core.set_num_threads(limit + 1)
    with pytest.raises(ValueError):
        _core.set_num_threads(65536)
    assert fg.get_num_threads() == before
    # threadpoolctl's path: the exported C ABI refuses what set_max_threads would.
    lib = ctypes.CDLL(_core.__file__)
    assert lib.fastgemm_set_num_threads(limit + 1) == -1
    assert lib.fastgemm_set_num_threads(10**6) == -1
    assert lib.fastgemm_get_num_threads() == before
    try:
        assert lib.fastgemm_set_num_threads(limit) == 0
        assert fg.get_num_threads() == limit
    finally:
        fg.set_num_threads(before)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc/self/statm")
def test_scratch_is_returned_after_a_many_thread_call():
    # A call's packing memory (B's panel, one block of A a thread) stays with the calling thread
    # for the next call; a large one must be given back once 32 later calls in a row need far
    # less (not at the first: a loop alternating a large and a small product would map it
    # afresh every time), and kept while 31 do. The
    # panel (2048 x 2048 float32 at KC 2048: 16 MiB) is packed whole whatever share of the work
    # each of the 8 threads takes. The later call's 128 columns (512 bytes a row of C) take the
    # packed path on every set (narrow C, which the small kernels take, ends at 256 bytes).
    r = run_python(
        """
        import os
        import numpy as np
        import fastgemm as fg
        page = os.sysconf("SC_PAGE_SIZE")
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * page
        a = np.ones((2048, 2048), np.float32)
        b = np.ones((2048, 2048), np.float32)
        c = np.empty((2048, 2048), np.float32)
        c_small = np.empty((2048, 128), np.float32)
        fg.set_num_threads(1)
        fg.gemm(a, b[:, :128], c_small)
        fg.set_num_threads(8)
        fg.gemm(a, b, c)
        high = rss()
        fg.set_num_threads(1)
        for _ in range(31):
            fg.gemm(a, b[:, :128], c_small)
        kept = rss()
        fg.gemm(a, b[:, :128], c_small)
        low = rss()
        assert (c == 2048).all() and (c_small == 2048).all()
        print(high, kept, low)
    """,
        env={"FASTGEMM_KC": "2048"},
    )
    assert r.returncode == 0, r.stderr
    high, kept, low = map(int, r.stdout.split())
    assert high - kept < 1 << 20, f"RSS {high >> 20} MiB on 8 threads, {kept >> 20} MiB after 31 calls on 1"
    assert high - low > 6 << 20, f"RSS {high >> 20} MiB on 8 threads, {low >> 20} MiB after 32 calls on 1"
