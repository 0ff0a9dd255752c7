"""The audit's pair metrics on one shared engine vs a fresh engine per call.

Above 6,000 essays the audit cannot hold all pairs' distances, so each pair
metric walks the vectors in blocks; a metric called on the rows builds its
own engine (unit rows, float32 rows) and its own pass for the distance range.
The audit now builds one engine per study and representation
(``report._build.pair_space``) and passes it as ``X`` to every metric, which
then share the prepared rows and the distance range (issue 32, item 2).

This script runs, for one representation (N=10,000 random vectors, d=384,
cosine) and four score vectors (three systems and the human scores), the pair
metrics the audit computes: per scores the Lipschitz fraction under both
normalisations, the score-distance curves (5 and 100 bins), the review pass
(``_review_results``, as the review analysis calls it) and the within/cross-
group fraction; once per representation the extreme pairs and the feature
difference profile. First with the rows as ``X`` (a fresh engine per call),
then with one engine as ``X``; it prints both times, their ratio, and whether
every result (every array of every metric) is identical.

Run: ``python benchmarks/bench_shared_engine.py [--n 10000] [--dim 384]``.
"""

import argparse
import os
import time

import numpy as np

from sklearn_fairaes.metrics import (
    extreme_pairs,
    feature_difference_profile,
    group_lipschitz_fraction,
    lipschitz_fraction,
    score_distance_curve,
)
from sklearn_fairaes.metrics._pairs._engine import PairwiseEngine
from sklearn_fairaes.metrics._review import _review_results


def problem(n, dim, seed=0):
    """Vectors with some structure, three systems' scores and the human scores."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, dim))
    X = centres[rng.integers(0, 20, n)] + 0.8 * rng.normal(size=(n, dim))
    quality = X @ rng.normal(size=dim)
    quality = (quality - quality.min()) / np.ptp(quality)
    human = np.round(12 * quality + rng.normal(0, 1.0, n)).clip(0, 12)
    systems = {
        f"system {k}": np.round(12 * quality + rng.normal(0, 0.5 + k / 2, n)).clip(0, 12)
        for k in range(3)
    }
    scores = {"human": human, **systems}
    groups = rng.integers(0, 2, n)
    F = rng.normal(size=(n, 8))
    return X, scores, groups, F


def flat(result):
    """Every entry of a metric's result as plain lists (compared with ``==``)."""
    return {key: np.asarray(value).tolist() for key, value in result.items()}


def audit_metrics(X, scores, groups, F):
    """Every pair metric of the audit for one representation; all they returned."""
    out = {}
    kw = {"metric": "cosine"}
    ext = extreme_pairs(X, k=1, **kw)
    out["extreme"] = {which: flat(ext[which]) for which in ("nearest", "farthest")}
    out["profile"] = flat(feature_difference_profile(X, F, n_pairs=10_000, **kw))
    for name, y in scores.items():
        for normalize in ("minmax", "max"):
            r = lipschitz_fraction(X, y, normalize=normalize, return_counts=True, **kw)
            out[name, "lipschitz", normalize] = flat(r)
        for n_bins in (5, 100):
            out[name, "curve", n_bins] = flat(
                score_distance_curve(X, y, n_bins=n_bins, **kw)
            )
        results = _review_results(
            X, y, n_neighbors=5, top=20, quantiles=(0.9, 0.95, 0.99), **kw
        )
        out[name, "review"] = [flat(r) for r in results]
        g = group_lipschitz_fraction(X, y, groups=groups, normalize="minmax", **kw)
        out[name, "groups"] = flat(g)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    X, scores, groups, F = problem(args.n, args.dim)
    print(f"N={args.n:,}, d={args.dim}, {len(scores)} score vectors; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    audit_metrics(X[:500], {k: v[:500] for k, v in scores.items()}, groups[:500], F[:500])
    t0 = time.perf_counter()
    fresh = audit_metrics(X, scores, groups, F)
    t_fresh = time.perf_counter() - t0
    print(f"fresh engine per call: {t_fresh:.2f} s", flush=True)
    t0 = time.perf_counter()
    engine = PairwiseEngine(X, metric="cosine")  # as report._build.pair_space does
    shared = audit_metrics(engine, scores, groups, F)
    t_shared = time.perf_counter() - t0
    print(f"one shared engine:     {t_shared:.2f} s (the engine's construction included)")
    print(f"ratio {t_fresh / t_shared:.2f}x; results identical: {fresh == shared}; "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
