"""fastgemm on a dask.distributed cluster: every block product in the workers on fastgemm.

    from distributed import Client
    import fastgemm.dask
    client = Client(...)                 # your cluster
    fastgemm.dask.enable(client)         # every worker, now and after restarts, runs on fastgemm

dask.array's products are NumPy calls in the workers, one per block: ``x @ y`` and
``da.matmul`` call np.matmul, ``da.dot``, ``da.tensordot`` and ``da.einsum`` np.tensordot or
np.einsum; the switch (fastgemm.patch_numpy) puts all of them on fastgemm. The plugin is kept by
the scheduler, so workers that join later or come back from ``client.restart()`` get it too.
Needs the ``distributed`` package: ``pip install "fastgemm[dask]"``.
"""

from __future__ import annotations

from typing import Any

from distributed import Client
from distributed.diagnostics.plugin import WorkerPlugin

PLUGIN_NAME = "fastgemm"


def _worker_threads(worker: Any) -> int:
    state = getattr(worker, "state", None)
    n = getattr(state, "nthreads", None) or getattr(worker, "nthreads", None)
    return max(1, int(n or 1))


class FastgemmPlugin(WorkerPlugin):
    """A WorkerPlugin that turns fastgemm's switch on in each worker and sets fastgemm's
    threads to ``threads``, by default the worker's thread budget (its ``nthreads``).

    A worker runs up to ``nthreads`` tasks at once, each of which may run a product: with
    several threads per worker, ``threads=1`` avoids ``nthreads**2`` threads on
    ``nthreads`` cores when every task slot is busy; the default suits one thread per worker
    process (``threads_per_worker=1``), where the budget is 1 anyway, and workers that run
    one large product at a time.
    """

    name = PLUGIN_NAME

    def __init__(self, threads: int | None = None) -> None:
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1 or None, not {threads}")
        self.threads = threads

    def setup(self, worker: Any) -> None:
        import fastgemm

        fastgemm.set_num_threads(self.threads or _worker_threads(worker))
        fastgemm.patch_numpy()

    def teardown(self, worker: Any) -> None:
        import fastgemm

        fastgemm.restore_numpy()


def enable(client: Client, threads: int | None = None) -> None:
    """Register FastgemmPlugin(threads) with the cluster behind ``client``: every worker,
    present and future, runs NumPy's float32 / float64 products on fastgemm."""
    client.register_plugin(FastgemmPlugin(threads), name=PLUGIN_NAME)


def disable(client: Client) -> None:
    """Unregister the plugin: each worker puts NumPy's own functions back (its teardown).
    Does nothing when the plugin is not registered."""
    try:
        client.unregister_worker_plugin(PLUGIN_NAME)
    except ValueError as e:  # the scheduler's "The worker plugin fastgemm does not exist"
        if "does not exist" not in str(e):
            raise


def worker_status() -> dict[str, Any]:
    """What a worker runs: the switch's state and fastgemm's threads (for ``client.run``)."""
    import fastgemm

    return {"patched": fastgemm.is_patched(), "threads": fastgemm.get_num_threads()}
