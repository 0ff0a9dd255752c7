"""Each prompt's study as a task (issue 35): local against a Dask ``LocalCluster``.

A few ASAP prompts (``--prompts``, ``--max-per-prompt`` essays each, from the
NEA folds that ``bench_audit_prompts.py`` reads), TF-IDF, the second rater as
a given system, no features or paraphrases unless ``--features`` (so that the
difference is the studies: representations, pair distances, every analysis).
Runs the audit in this process, then with ``client=`` a process
``LocalCluster`` of ``--workers`` single-threaded workers (each study one
task), and with ``--n-jobs N`` also locally with ``n_jobs=N`` (each study a
task on N joblib processes); all cold (a fresh cache folder each) after a
warm-up on 10 essays per prompt.
Prints the wall times, their ratio, the machine's load, where each study ran,
and checks that every table and replicate is identical.

Usage::

    python benchmarks/bench_audit_study_tasks.py [--prompts 1,2,3,4] [--max-per-prompt 400]
        [--workers 2] [--n-jobs 2] [--features]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_audit_prompts import FOLDS, RATER_SCALE, _sample, read_asap  # noqa: E402


def _kw(features: bool) -> dict:
    return {
        "text_col": "essay",
        "score_col": "rater1_domain1",
        "systems": {"rater2": "rater2_domain1"},
        "prompt_col": "essay_set",
        "id_col": "essay_id",
        "score_range": {p: RATER_SCALE[p] for p in RATER_SCALE},
        "representations": ["tfidf"],
        "features": features,
        "paraphrases": None if features else False,
    }


def _same(a, b, what: str) -> bool:
    """Print whether ``a`` has every table and replicate of ``b``, bit for bit."""
    try:
        _assert_same(a, b)
    except AssertionError as exc:
        print(f"  {what}: NOT identical to the local run: {str(exc).splitlines()[0]}")
        return False
    print(f"  {what}: every table and replicate identical to the local run")
    return True


def _assert_same(a, b) -> None:
    from pandas.testing import assert_frame_equal

    assert set(a.tables) == set(b.tables)
    for name, table in b.tables.items():
        assert_frame_equal(a.tables[name], table, check_exact=True, obj=name)
    assert list(a.replicates) == list(b.replicates)
    for key, values in b.replicates.items():
        assert np.array_equal(a.replicates[key], values, equal_nan=True), key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", default="1,2,3,4")
    parser.add_argument("--max-per-prompt", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--features", action="store_true")
    args = parser.parse_args(argv)

    import distributed

    import sklearn_fairaes as sf

    data = read_asap(FOLDS)
    data = data[data["essay_set"].isin(args.prompts.split(","))]
    data = _sample(data, "essay_set", args.max_per_prompt).reset_index(drop=True)
    for col in ("rater1_domain1", "rater2_domain1"):
        data[col] = data[col].astype(float)
    kw = _kw(args.features)
    kw["score_range"] = {p: kw["score_range"][p] for p in data["essay_set"].unique()}
    print(f"{len(data):,} essays, prompts {args.prompts}, features={args.features}")
    print(f"load before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as work:
        sf.audit(data.groupby("essay_set").head(10), cache=False, **kw)  # imports
        t0 = time.perf_counter()
        local = sf.audit(data, cache=Path(work, "local"), **kw)
        t_local = time.perf_counter() - t0
        print(f"local, 1 process: {t_local:.1f} s (load {os.getloadavg()[0]:.2f})")
        same = True
        if args.n_jobs is not None:
            sf.audit(
                data.groupby("essay_set").head(10), cache=False, n_jobs=args.n_jobs, **kw
            )
            t0 = time.perf_counter()
            spread = sf.audit(data, cache=Path(work, "n_jobs"), n_jobs=args.n_jobs, **kw)
            t_spread = time.perf_counter() - t0
            print(
                f"local, n_jobs={args.n_jobs}: {t_spread:.1f} s (load "
                f"{os.getloadavg()[0]:.2f}); ratio to 1 process {t_spread / t_local:.2f}; "
                f"studies as tasks: {spread.meta.get('study_tasks', {}).get('on_workers')}"
            )
            same = _same(spread, local, f"n_jobs={args.n_jobs}")
        with (
            distributed.LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                host="127.0.0.1",
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            sf.audit(data.groupby("essay_set").head(10), cache=False, client=client, **kw)
            t0 = time.perf_counter()
            on_dask = sf.audit(data, cache=Path(work, "dask"), client=client, **kw)
            t_dask = time.perf_counter() - t0
        tasks = on_dask.meta.get("study_tasks", {})
        print(
            f"local:{args.workers} ({args.workers} workers): {t_dask:.1f} s "
            f"(load {os.getloadavg()[0]:.2f}); ratio dask/local {t_dask / t_local:.2f}"
        )
        print(f"studies on the workers: {tasks.get('on_workers')}; {tasks.get('places')}")
        same = _same(on_dask, local, f"local:{args.workers}") and same
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
