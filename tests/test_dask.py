"""fastgemm.dask against a real distributed.LocalCluster with 2 worker processes.

With K in a single chunk every output block is one NumPy product in a worker, so with the
plugin on, each block is bitwise what fastgemm.matmul computes here for the same blocks
(fastgemm's result does not depend on the thread count). The arrays reach the workers
pickled, which is the path the house issue's dtype-identity bug broke.
"""

import numpy as np
import pytest

pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
from distributed import Client, LocalCluster  # noqa: E402

import fastgemm  # noqa: E402
import fastgemm.dask  # noqa: E402

RNG = np.random.default_rng(17)
M, K, N, CM, CN = 256, 96, 192, 128, 64  # chunks: M and N split, K whole


def _worker_calls():
    from fastgemm import _core, _numpy_funcs

    return _core.matmul_loop_calls()["fastgemm"] + _numpy_funcs.calls()["dot"]["fastgemm"]


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as c,
    ):
        fastgemm.dask.enable(c)
        yield c


def _blockwise_fastgemm(a, b):
    """The chunked product computed here, block by block, with fastgemm.matmul."""
    return np.block(
        [[fastgemm.matmul(a[i : i + CM], b[:, j : j + CN]) for j in range(0, N, CN)] for i in range(0, M, CM)]
    )


def test_switch_is_on_in_every_worker(client):
    status = client.run(fastgemm.dask.worker_status)
    assert len(status) == 2
    assert all(s == {"patched": True, "threads": 1} for s in status.values()), status


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunked_products_are_fastgemms_bitwise(client, dtype):
    a, b = RNG.uniform(-1, 1, (M, K)).astype(dtype), RNG.uniform(-1, 1, (K, N)).astype(dtype)
    x, y = da.from_array(a, chunks=(CM, K)), da.from_array(b, chunks=(K, CN))
    want = _blockwise_fastgemm(a, b)
    products = {
        "x @ y": x @ y,
        "da.matmul": da.matmul(x, y),
        "da.dot": da.dot(x, y),
        "da.tensordot": da.tensordot(x, y, axes=1),
        "da.einsum": da.einsum("ij,jk->ik", x, y, optimize=True),
    }
    for name, expr in products.items():
        before = sum(client.run(_worker_calls).values())
        got = expr.compute()
        assert got.dtype == want.dtype and np.array_equal(got, want), name
        assert sum(client.run(_worker_calls).values()) >= before + (M // CM) * (N // CN), f"{name}: not on fastgemm"


def test_plugin_survives_restart(client):
    client.restart()
    status = client.run(fastgemm.dask.worker_status)
    assert len(status) == 2 and all(s["patched"] for s in status.values()), status
    a, b = RNG.uniform(-1, 1, (M, K)).astype(np.float32), RNG.uniform(-1, 1, (K, N)).astype(np.float32)
    x, y = da.from_array(a, chunks=(CM, K)), da.from_array(b, chunks=(K, CN))
    assert np.array_equal((x @ y).compute(), _blockwise_fastgemm(a, b))


def test_threads_option_and_validation(client):
    with pytest.raises(ValueError):
        fastgemm.dask.FastgemmPlugin(threads=0)
    fastgemm.dask.enable(client, threads=2)  # replaces the registered plugin by name
    try:
        assert all(s == {"patched": True, "threads": 2} for s in client.run(fastgemm.dask.worker_status).values())
    finally:
        fastgemm.dask.enable(client)
    assert all(s["threads"] == 1 for s in client.run(fastgemm.dask.worker_status).values())


def test_disable_puts_numpy_back_in_the_workers(client):
    fastgemm.dask.disable(client)
    try:
        assert not any(s["patched"] for s in client.run(fastgemm.dask.worker_status).values())
        fastgemm.dask.disable(client)  # not registered: nothing to do
    finally:
        fastgemm.dask.enable(client)
    assert all(s["patched"] for s in client.run(fastgemm.dask.worker_status).values())
