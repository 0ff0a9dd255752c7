"""Where the audit's per-chunk work runs: local processes (joblib) or a Dask cluster.

One mapper per place, each a function ``mapper(fn, calls, stop) -> [fn(*c)
for c in calls]`` (in order; once ``stop`` is set no further call starts and
:class:`Stopped` is raised), so that the per-essay stage (:mod:`._per_essay`)
does not know where it runs. The heavy models a chunk needs (spaCy's
tagger, WordNet) are loaded once per worker process by the package's own
per-process caches, not once per chunk.

The studies' pair passes (Lipschitz counts, review passes: whatever the
pairwise engine sends to joblib) reach the same workers through joblib's
Dask backend (:func:`pair_passes`); the engine ships its arrays once per pass.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "Mapper",
    "Stopped",
    "check_client",
    "dask_mapper",
    "describe_client",
    "local_mapper",
    "pair_passes",
    "run_place",
    "run_place_text",
]

Mapper = Callable[
    [Callable[..., Any], Sequence[tuple[Any, ...]], threading.Event], list[Any]
]


class Stopped(Exception):
    """The caller stopped the mapping (``stop`` set) before every call ran."""


def local_mapper(n_jobs: int | None) -> Mapper | None:
    """Map over ``n_jobs`` joblib processes; None for one process (nothing to spread)."""
    from joblib import effective_n_jobs

    if n_jobs is None or effective_n_jobs(n_jobs) < 2:
        return None

    def mapper(
        fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], stop: threading.Event
    ) -> list[Any]:
        from joblib import Parallel, delayed

        # loky's reusable executor: the same worker processes (their loaded
        # tagger and WordNet) serve the features' own joblib calls later
        results = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(fn)(*c) for c in calls
        )
        out = []
        for r in results:
            out.append(r)
            if stop.is_set():
                with warnings.catch_warnings():
                    # joblib's note that it threw finished and running calls away:
                    # what a stop asks for
                    warnings.simplefilter("ignore", UserWarning)
                    results.close()  # joblib aborts the calls not yet done
                raise Stopped
        return out

    return mapper


def dask_mapper(client: Any) -> Mapper:
    """Map over a ``distributed.Client``'s workers, results in the order of the calls."""

    def mapper(
        fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], stop: threading.Event
    ) -> list[Any]:
        from distributed import wait

        if not calls:
            return []
        # pure=False: a chunk writes to the result cache, it is not a value to dedupe
        futures = client.map(fn, *zip(*calls), pure=False)
        while True:
            try:
                wait(futures, timeout=0.5)
                break
            except TimeoutError:
                if stop.is_set():
                    client.cancel(futures)
                    raise Stopped from None
        return list(client.gather(futures))

    return mapper


def check_client(client: Any) -> Any:
    """``audit(client=)``: None, or a ``distributed.Client`` (ImportError naming the extra)."""
    if client is None:
        return None
    from ..resources import require

    distributed = require("distributed", purpose="audit(client=) on a Dask cluster")
    if not isinstance(client, distributed.Client):
        raise TypeError(
            f"client must be a distributed.Client (or None for local processes), got "
            f"{type(client).__name__}; connect one with distributed.Client(address)"
        )
    return client


def describe_client(client: Any) -> dict[str, Any]:
    """The cluster a client runs on, for the report: scheduler address and workers."""
    info = client.scheduler_info()
    workers = info.get("workers", {})
    return {
        "scheduler": str(client.scheduler.address),
        "workers": len(workers),
        "threads": int(sum(w.get("nthreads", 0) for w in workers.values())),
    }


def pair_passes(client: Any) -> contextlib.AbstractContextManager[Any]:
    """Where the analyses' joblib work runs: the client's workers, or as configured.

    With a client, joblib's Dask backend on that client (not whichever client
    was made last): each pass of the pairwise engine is cut into runs of
    chunks over every worker thread of the cluster when the engine's
    ``n_jobs`` is None (the audit's default); ``n_jobs=1`` keeps the passes in
    this process, as joblib reads 1 before any backend. A pass of a single
    chunk (a few dozen essays) stays here: nothing to spread. The results are
    the local run's: the chunks, and so the order of every sum, do not depend
    on where they run. Without a client, nothing changes (``n_jobs`` local
    processes, or the caller's :func:`joblib.parallel_config`).
    """
    if client is None:
        return contextlib.nullcontext()
    from joblib import parallel_config

    return parallel_config(backend="dask", client=client)


def run_place(client: Any, n_jobs: int | None) -> dict[str, Any]:
    """Where the audit ran, for its meta: ``n_jobs``, and the cluster when a client is given."""
    place: dict[str, Any] = {"n_jobs": n_jobs}
    if client is not None:
        place["cluster"] = describe_client(client)
    return place


def run_place_text(meta: Any) -> str | None:
    """Where an audit ran, in words, from its meta; None when the meta does not say.

    Examples
    --------
    >>> from sklearn_fairaes.report._cluster import run_place_text
    >>> run_place_text({"n_jobs": None}), run_place_text({"n_jobs": 4})
    ('local (1 process)', 'local (4 processes)')
    >>> run_place_text({"n_jobs": None, "cluster": {"scheduler": "tcp://10.0.0.5:8786",
    ...                 "workers": 8, "threads": 16}})
    'Dask cluster tcp://10.0.0.5:8786 (8 workers, 16 threads): per-essay chunks and pair passes on the workers'
    >>> run_place_text({"n_jobs": None, "cluster": {"scheduler": "tcp://10.0.0.5:8786",
    ...                 "workers": 8, "threads": 16}, "study_tasks": {"on_workers": True}})
    'Dask cluster tcp://10.0.0.5:8786 (8 workers, 16 threads): per-essay chunks and the studies as tasks on the workers, one per prompt'
    """
    cluster = meta.get("cluster") or (meta.get("per_essay") or {}).get("cluster")
    if cluster:
        workers, threads = int(cluster.get("workers", 0)), int(cluster.get("threads", 0))
        return (
            f"Dask cluster {cluster.get('scheduler')} ({workers} worker"
            f"{'s' if workers != 1 else ''}, {threads} thread{'s' if threads != 1 else ''})"
            + (
                ": per-essay chunks and the studies as tasks on the workers, one per prompt"
                if (meta.get("study_tasks") or {}).get("on_workers")
                else ": per-essay chunks and pair passes on the workers"
            )
        )
    if "n_jobs" not in meta:  # results of a version that did not record it
        return None
    n_jobs = meta["n_jobs"]
    if n_jobs is None or n_jobs == 1:
        return "local (1 process)"
    if n_jobs < 0:
        return f"local (all cores{'' if n_jobs == -1 else f' but {-n_jobs - 1}'})"
    return f"local ({n_jobs} processes)"
