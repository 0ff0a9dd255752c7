"""The audit's pair passes on a Dask ``LocalCluster`` against the local run (issue 35).

ASAP prompt 7 (1,569 essays), TF-IDF, the second rater as a given system,
no features or paraphrases (so that the per-essay stage does not run and
the difference is the pair passes): the audit in this process, then with
``client=`` a process ``LocalCluster`` of ``--workers`` single-threaded
workers (both warmed up on 100 essays first). Prints both wall times, their
ratio, the engine's chunks each worker ran, the machine's load, and checks
that every table is identical.

Usage::

    python benchmarks/bench_audit_dask_passes.py [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ASAP7 = Path(__file__).resolve().parents[2] / "shared/data/asap-aes/asap_aes_prompt7.tsv"

KW = {
    "text_col": "essay",
    "score_col": "rater1_domain1",
    "systems": {"rater2": "rater2_domain1"},
    "score_range": (0, 30),
    "representations": ["tfidf"],
    "features": False,
    "paraphrases": False,
    "cache": False,
}


def _count_chunks_here() -> None:
    # the engine's tasks call their module's _run_chunk (see tests/test_audit_dask.py);
    # the count lives in that module: this script's globals reach a worker as copies
    from sklearn_fairaes.metrics._pairs import _blocks

    real = _blocks._run_chunk
    _blocks._bench_chunks = 0  # type: ignore[attr-defined]

    def counted(engine, reducer, specs):  # type: ignore[no-untyped-def]
        _blocks._bench_chunks += 1  # type: ignore[attr-defined]
        return real(engine, reducer, specs)

    _blocks._run_chunk = counted


def _chunks_here() -> int:
    from sklearn_fairaes.metrics._pairs import _blocks

    return int(getattr(_blocks, "_bench_chunks", 0))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    if not ASAP7.exists():
        raise SystemExit(f"{ASAP7} not found: this benchmark needs ../shared/data")
    import distributed
    import pandas as pd
    from pandas.testing import assert_frame_equal

    import sklearn_fairaes as sf

    data = pd.read_csv(
        ASAP7, sep="\t", encoding="utf-8-sig", dtype=str, keep_default_na=False
    )
    load0 = os.getloadavg()[0]
    sf.audit(data.iloc[:100], **KW)  # imports and first calls
    t0 = time.perf_counter()
    local = sf.audit(data, **KW)
    t_local = time.perf_counter() - t0
    with (
        distributed.LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        sf.audit(data.iloc[:100], client=client, **KW)  # the workers' imports
        client.run(_count_chunks_here)
        t0 = time.perf_counter()
        on_dask = sf.audit(data, client=client, **KW)
        t_dask = time.perf_counter() - t0
        chunks = client.run(_chunks_here)
    load1 = os.getloadavg()[0]
    for name, table in local.tables.items():
        assert_frame_equal(on_dask.tables[name], table, check_exact=True, obj=name)
    print(
        f"{len(data):,} essays: local {t_local:.1f} s, LocalCluster of {args.workers} "
        f"processes {t_dask:.1f} s (ratio {t_dask / t_local:.2f}); engine chunks per "
        f"worker {sorted(chunks.values())}; load {load0:.1f} -> {load1:.1f}; "
        f"{len(local.tables)} tables identical"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
