"""A chunked dask.array product on a distributed LocalCluster, with and without fastgemm.

    python bench/dask_matmul.py                        # 4096^2 @ 4096^2 in 1024 chunks, float32
    python bench/dask_matmul.py --n 8192 --chunk 2048  # the issue's case (about 3 GiB of operands)
    python bench/dask_matmul.py --dtype float64 --workers 2 --threads 1 --repeats 5

The operands are made in the workers and kept there (persist), so only the product is timed:
``(x @ y).persist()`` and waiting for every block. Runs alternate NumPy's own BLAS in the
workers (plugin off) and fastgemm (fastgemm.dask.enable, the switch on in every worker), on the
same cluster and the same operands; the median of each is reported, and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time


def _status_numpy_blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info

        return ", ".join(
            f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info() if i["user_api"] == "blas"
        )
    except ImportError:
        return "threadpoolctl not installed"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=4096, help="square size N of both operands (default 4096)")
    p.add_argument("--chunk", type=int, default=1024, help="square chunk size (default 1024)")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--threads", type=int, default=1, help="threads per worker (default 1)")
    p.add_argument("--repeats", type=int, default=3, help="timed runs of each (default 3)")
    args = p.parse_args()

    import dask.array as da
    import numpy as np
    from distributed import Client, LocalCluster, wait

    import fastgemm
    import fastgemm.dask

    with (
        LocalCluster(
            n_workers=args.workers, threads_per_worker=args.threads, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        rng = da.random.default_rng(0)
        x = rng.standard_normal((args.n, args.n), chunks=args.chunk).astype(args.dtype).persist()
        y = rng.standard_normal((args.n, args.n), chunks=args.chunk).astype(args.dtype).persist()
        wait([x, y])
        blas = client.run(_status_numpy_blas_threads)
        print(
            f"{args.n}^2 @ {args.n}^2 {args.dtype} in {args.chunk}^2 chunks; {args.workers} worker processes x "
            f"{args.threads} threads; fastgemm {fastgemm.__version__}, numpy {np.__version__}; "
            f"NumPy's BLAS in a worker: {next(iter(blas.values()))}"
        )

        def run() -> float:
            t = time.perf_counter()
            z = (x @ y).persist()
            wait(z)
            elapsed = time.perf_counter() - t
            del z
            return elapsed

        times: dict[str, list[float]] = {"numpy": [], "fastgemm": []}
        run()  # warm-up: imports, first-task costs
        for i in range(args.repeats):
            for which in ("numpy", "fastgemm"):
                if which == "fastgemm":
                    fastgemm.dask.enable(client)
                elif i > 0:
                    fastgemm.dask.disable(client)
                on = client.run(fastgemm.dask.worker_status)
                assert all(s["patched"] == (which == "fastgemm") for s in on.values()), on
                times[which].append(run())
        flop = 2.0 * args.n**3
        for which, ts in times.items():
            med = statistics.median(ts)
            print(
                f"{which:>9}: median {med:.3f} s ({flop / med / 1e9:.1f} GFLOP/s), runs "
                + ", ".join(f"{t:.3f}" for t in ts)
            )
        ratio = statistics.median(times["numpy"]) / statistics.median(times["fastgemm"])
        print(f"ratio (NumPy time / fastgemm time): {ratio:.2f}x")


if __name__ == "__main__":
    main()
