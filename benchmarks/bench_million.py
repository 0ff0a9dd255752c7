"""A million essays: the exact Lipschitz count on the NumPy path, and on Dask.

Issue 35 item 3. ``sf.lipschitz_fraction`` (exact, min-max) on unit-norm
float32 embeddings of dimension 384 (as Sentence-BERT MiniLM gives), random
but shaped like essays on one prompt (a shared prompt direction, 40 subtopics
and a quality direction that the scores follow: cosine similarities of mean
0.45, sd 0.07, 1-99% 0.24-0.61), integer scores on a 0-12 scale.

1. The NumPy path at each ``--sizes`` (default 100,000 and 200,000): time,
   pairs/s, the pairs the float32 screen left undecided (settled in float64,
   block by block), the largest number settled at once, peak RSS, CPU
   seconds (and with ``--bare`` those of one pass of the bare float32 products
   over the same blocks: the floor of each of the count's two passes). The ratio of
   the last two times (near 4 when the pairs, N^2/2, set the cost) and the
   projection ``t(1,000,000) = t(N) * pairs(1,000,000) / pairs(N)`` (25x from
   200,000) against the target of one hour on this machine's cores.
2. ``--dask N``: the same count on a ``distributed.LocalCluster`` of
   ``--workers`` processes (one thread each) through joblib's Dask backend:
   its time, whether the count equals the local one (run first at the same N
   if not already measured), and the blocks each worker settled (a counter
   installed on the workers with ``client.run``).

The load average is printed before and after each figure: the machine is
shared, and other processes slow every figure.

Usage::

    nice -n 5 python benchmarks/bench_million.py --sizes 100000 200000
    nice -n 5 python benchmarks/bench_million.py --sizes 200000 --dask 200000
    python benchmarks/bench_million.py --sizes 20000 --dask 20000       # quick
"""

from __future__ import annotations

import argparse
import os
import resource
import threading
import time

import numpy as np

ONE_MILLION = 1_000_000
TARGET_S = 3600.0


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def problem(n: int, dim: int = 384, seed: int = 0, n_topics: int = 40):
    """Unit float32 rows shaped like one prompt's essays; integer scores 0-12."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((n_topics + 2, dim)).astype(np.float32)
    basis /= np.linalg.norm(basis, axis=1, keepdims=True)
    prompt, quality, topics = basis[0], basis[1], basis[2:]
    q = rng.standard_normal(n).astype(np.float32)
    X = rng.standard_normal((n, dim), dtype=np.float32)
    X *= np.float32(0.9 / np.sqrt(dim))
    X += prompt
    X += np.float32(0.55) * topics[rng.integers(0, n_topics, size=n)]
    X += (np.float32(0.35) * q)[:, None] * quality
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(np.round(6 + 2.2 * q + 1.3 * rng.standard_normal(n)), 0, 12)
    return X, y.astype(np.int64)


def similarity_summary(X, n_sample: int = 2000) -> str:
    S = X[:n_sample] @ X[:n_sample].T
    s = S[np.triu_indices(min(n_sample, X.shape[0]), 1)]
    q = np.quantile(s, [0.01, 0.5, 0.99])
    return (f"cosine similarity mean {s.mean():.3f} sd {s.std():.3f}, "
            f"1/50/99% {q[0]:.2f}/{q[1]:.2f}/{q[2]:.2f}")  # fmt: skip


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def n_pairs(n: int) -> int:
    return n * (n - 1) // 2


class SettleSpy:
    """Counts the pairs the screen leaves to float64 (thread-safe)."""

    def __init__(self):
        from sklearn_fairaes.metrics._pairs import _counters

        self.real = _counters._Settler.__call__
        self.lock = threading.Lock()
        self.calls, self.total, self.largest = 0, 0, 0
        spy = self

        def call(settler, i, j):
            with spy.lock:
                spy.calls += 1
                spy.total += i.size
                spy.largest = max(spy.largest, i.size)
            return spy.real(settler, i, j)

        _counters._Settler.__call__ = call

    def reset(self):
        self.calls = self.total = self.largest = 0


def run_local(
    n: int, spy: SettleSpy, dim: int, bare: bool = False
) -> tuple[float, float, int, int]:
    import sklearn_fairaes as sf

    X, y = problem(n, dim)
    print(f"[1] N={n:,}, d={dim}: {similarity_summary(X)}; {load()}", flush=True)
    spy.reset()
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    got = sf.lipschitz_fraction(X, y, return_counts=True)
    seconds = time.perf_counter() - start
    cpu = cpu_seconds() - cpu0
    pairs = int(got.n_pairs)
    assert pairs == n_pairs(n)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"    exact lipschitz_fraction {seconds:.1f} s, {pairs / seconds / 1e6:.0f} M "
        f"pairs/s; {int(got.n_satisfied):,} of {pairs:,} pairs (fraction "
        f"{float(got.fraction):.6f}); {spy.total:,} undecided pairs settled in "
        f"float64 ({spy.total / pairs:.1e} of all) in {spy.calls:,} blocks, at most "
        f"{spy.largest:,} at once; peak RSS {rss:.2f} GB; {cpu:.1f} CPU-s "
        f"({cpu / seconds:.2f} cores busy); {load()}",
        flush=True,
    )
    if bare:
        from bench_pairs import bare_products  # this folder is on sys.path

        from sklearn_fairaes.metrics._pairs._types import _default_block_size

        cpu0 = cpu_seconds()
        start = time.perf_counter()
        bare_products(X, _default_block_size(n), np.float32)  # BLAS on 2 threads
        t_bare, cpu_bare = time.perf_counter() - start, cpu_seconds() - cpu0
        print(
            f"    one pass of bare float32 products over the upper triangle "
            f"{t_bare:.1f} s, {cpu_bare:.1f} CPU-s: lipschitz_fraction (two passes: "
            f"range, count) = {cpu / cpu_bare:.2f}x its CPU-s; {load()}",
            flush=True,
        )
    return seconds, cpu, int(got.n_satisfied), pairs


# -- on the Dask workers ------------------------------------------------------
def _install_block_counter() -> None:
    """Count, in this worker process, the blocks whose undecided pairs it settles."""
    from sklearn_fairaes.metrics._pairs import _counters

    cls = _counters._ScreenedLipschitzCounter
    if getattr(cls, "_blocks_here", None) is None:
        real = cls.settled
        cls._blocks_here = [0]

        def settled(self, sure, i, j):
            cls._blocks_here[0] += 1
            return real(self, sure, i, j)

        cls.settled = settled
    cls._blocks_here[0] = 0


def _blocks_here() -> int:
    from sklearn_fairaes.metrics._pairs import _counters

    return _counters._ScreenedLipschitzCounter._blocks_here[0]


def run_dask(n: int, workers: int, local: tuple[int, int] | None, dim: int) -> None:
    import distributed
    from joblib import parallel_config

    import sklearn_fairaes as sf
    from sklearn_fairaes.metrics._pairs._engine import PairwiseEngine

    X, y = problem(n, dim)
    n_blocks = len(PairwiseEngine(X[:, :2])._block_specs())  # the blocks depend on N only
    print(f"[2] N={n:,} on a LocalCluster of {workers} processes x 1 thread; {load()}",
          flush=True)  # fmt: skip
    with (
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True,
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):  # fmt: skip
        client.run(_install_block_counter)
        start = time.perf_counter()
        with parallel_config(backend="dask"):
            got = sf.lipschitz_fraction(X, y, return_counts=True)
        seconds = time.perf_counter() - start
        per_worker = client.run(_blocks_here)
    pairs = int(got.n_pairs)
    same = "not compared" if local is None else str((int(got.n_satisfied), pairs) == local)
    print(
        f"    Dask exact lipschitz_fraction {seconds:.1f} s, "
        f"{pairs / seconds / 1e6:.0f} M pairs/s; {int(got.n_satisfied):,} of "
        f"{pairs:,}; equal to the local count: {same}; blocks settled per worker "
        f"{sorted(per_worker.values())} (sum {sum(per_worker.values())}, the pass has "
        f"{n_blocks}); {load()}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 200_000])
    parser.add_argument("--dask", type=int, default=0, help="N of the Dask run (0: none)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument(
        "--bare", action="store_true", help="also one pass of bare float32 products"
    )
    args = parser.parse_args(argv)

    from threadpoolctl import threadpool_info

    blas = {f"{i['internal_api']} {i.get('architecture')} x{i['num_threads']}"
            for i in threadpool_info() if i.get("user_api") == "blas"}  # fmt: skip
    print(f"{os.cpu_count()} CPUs, BLAS {sorted(blas)}; {load()}", flush=True)
    spy = SettleSpy()
    times, cpus, counts = {}, {}, {}
    for n in args.sizes:
        seconds, cpu, ok, pairs = run_local(n, spy, args.dim, args.bare)
        times[n], cpus[n], counts[n] = seconds, cpu, (ok, pairs)
    if len(times) >= 2:
        n1, n2 = sorted(times)[-2:]
        print(f"    t({n2:,}) / t({n1:,}) = {times[n2] / times[n1]:.2f} wall, "
              f"{cpus[n2] / cpus[n1]:.2f} CPU (pairs ratio "
              f"{n_pairs(n2) / n_pairs(n1):.2f})")  # fmt: skip
    if times:
        n_big = max(times)
        scale = n_pairs(ONE_MILLION) / n_pairs(n_big)
        # wall time under this load, and CPU time over the cores (what an
        # unloaded machine would take, if the pass kept every core busy)
        for what, seconds in (
            ("wall", times[n_big]),
            (f"CPU-s / {os.cpu_count()} cores", cpus[n_big] / os.cpu_count()),
        ):
            projected = seconds * scale
            verdict = "met" if projected <= TARGET_S else "NOT met"
            print(f"    projection to N=1,000,000 from N={n_big:,} ({what}): "
                  f"{projected:.0f} s = {projected / 60:.1f} min (target <= "
                  f"{TARGET_S / 60:.0f} min: {verdict})")  # fmt: skip
    if args.dask:
        run_dask(args.dask, args.workers, counts.get(args.dask), args.dim)


if __name__ == "__main__":
    main()
