"""Benchmark of the blocked all-pairs engine and the individual-fairness metrics.

Measured in one run:

1. N=10,000 random 384-d vectors, integer scores: ``lipschitz_fraction``
   against the naive recipe of the paper's code (``pdist`` + ``squareform``
   matrices, min-max over all pairs): identical count, speed ratio (target
   >= 20x) and peak memory of both.
2. N=50,000, d=384: ``lipschitz_fraction`` time, pairs/s and peak memory
   (target < 1 GB), and its ratio to the bare blocked float64 matrix products
   over the same upper-triangle blocks (one pass, results discarded; target
   <= 3x).
3. ASAP prompt 7 (1,569 essays, TF-IDF of ``TfidfEssayVectorizer``, out-of-fold
   Ridge predictions and the human scores): every metric of
   ``metrics/_individual.py`` together (target under 1 s), called on ``X`` and
   on distances computed once by ``condensed_distances``; ``paraphrase_ndcg``
   on a word-dropping stand-in for paraphrases, timed apart.
4. Issue 17, N=50,000, d=384 (``--n-review``): the three review metrics
   (``essay_consistency`` with 10 neighbours, ``lipschitz_violations`` top
   100, ``lipschitz_profile`` at 5 constants and the 90/95/99% quantiles)
   from their one shared pass (``_review._review_all``) against
   ``lipschitz_fraction`` alone (target <= 1.5x), best of ``--repeat``
   alternating runs, with peak memory from one more run of each; the three
   public functions called one after the other are timed
   as well (each makes its own passes). ``--review-phases`` runs the shared
   pass once more with each of its phases timed (the range pass, the engine's
   blocks, the screened pass's per-pair work, the exact neighbours,
   violations and quantiles; the fused float64 pass's parts where the screen
   refuses the problem), for when the target is missed. ``--review-numpy``
   times the shared pass once more with its per-pair work in NumPy, as it
   runs without numba (the ``fast`` extra).
5. Issue 18, ``--engine-ratio``: ``lipschitz_fraction`` against the bare
   float32 upper-triangle products (blocks of the engine's size, results
   discarded) at N=10,000 and 50,000 (``--ratio-sizes``), best of ``--repeat``
   alternating runs, in fresh processes: one with this machine's
   ``OPENBLAS_CORETYPE`` (unset if it is unset) and one with it unset, or with
   ``--ratio-coretype`` (default ``Haswell``) when the machine leaves it unset,
   so that two OpenBLAS kernels are compared. Each process prints the kernel
   threadpoolctl reports. Target <= 2x at N=50,000.

Peak memory is measured with :mod:`tracemalloc` (every numpy array is traced;
OpenBLAS's own work buffers, a few tens of MB, are not). Timings are the best
of ``--repeat`` runs. The machine's load average is printed: other processes
on a 2-core machine slow every figure.

Usage::

    python benchmarks/bench_pairs.py                      # all three, full size
    python benchmarks/bench_pairs.py --n-naive 2000 --n-large 5000   # quick (CI)
    python benchmarks/bench_pairs.py --skip-large --skip-naive       # ASAP only
    python benchmarks/bench_pairs.py --only-review --n-review 20000  # issue 17 only
    python benchmarks/bench_pairs.py --only-review --review-together-only --review-phases
    python benchmarks/bench_pairs.py --engine-ratio --repeat 3             # issue 18 only
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ASAP7 = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "asap-aes"
    / ("asap_aes_prompt7.tsv")
)

#: The paper's five-bin mean |score difference| for TF-IDF + Ridge (REFERENCE_NUMBERS.md).
PAPER_TFIDF_RIDGE_BINS = (3.16, 3.46, 3.70, 3.98, 4.33)


def best_of(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def peak_memory(fn):
    """Run ``fn`` under tracemalloc; return (result, peak MB above the start)."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    out = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, (peak - base) / 2**20


def naive_lipschitz(X, y):
    """The paper's code: full square matrices, min-max over all pairs."""
    from scipy.spatial.distance import pdist, squareform

    D = squareform(pdist(X, "cosine"))
    O = squareform(pdist(y[:, None], "euclidean"))  # noqa: E741
    upper = np.triu_indices(X.shape[0], 1)
    d, o = D[upper], O[upper]
    d = (d - d.min()) / (d.max() - d.min())
    o = (o - o.min()) / (o.max() - o.min())
    return int(np.count_nonzero(o <= d)), d.size


def random_problem(n, dim, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dim))
    y = np.clip(np.round(12 + 3 * X[:, 0] + 4 * rng.standard_normal(n)), 2, 24)
    return X, y


def bench_naive(n, dim, repeat, block_size, n_jobs):
    from sklearn_fairaes.metrics import lipschitz_fraction

    X, y = random_problem(n, dim)
    print(f"\n[1] N={n:,}, d={dim}: lipschitz_fraction vs the pdist/squareform recipe")
    t_naive = time.perf_counter()
    (ok_naive, total), mem_naive = peak_memory(lambda: naive_lipschitz(X, y))
    t_naive = time.perf_counter() - t_naive
    t_ours, res = best_of(
        lambda: lipschitz_fraction(
            X, y, return_counts=True, block_size=block_size, n_jobs=n_jobs
        ),
        repeat,
    )
    _, mem_ours = peak_memory(
        lambda: lipschitz_fraction(X, y, block_size=block_size, n_jobs=n_jobs)
    )
    same = res.n_satisfied == ok_naive and res.n_pairs == total
    print(f"    naive : {t_naive:8.2f} s   peak {mem_naive:8.0f} MB   "
          f"{ok_naive:,} of {total:,} pairs")  # fmt: skip
    print(f"    ours  : {t_ours:8.2f} s   peak {mem_ours:8.0f} MB   "
          f"{res.n_satisfied:,} of {res.n_pairs:,} pairs")  # fmt: skip
    print(f"    identical count: {same}   speed ratio: {t_naive / t_ours:.1f}x "
          f"(target >= 20x)")  # fmt: skip
    return same


def bare_products(X, block_size, dtype):
    """One pass of the blocked matrix products over the upper triangle, discarded."""
    A = np.asarray(X / np.linalg.norm(X, axis=1, keepdims=True), dtype=dtype)
    n = A.shape[0]
    for r0 in range(0, n, block_size):
        for c0 in range(r0, n, block_size):
            A[r0 : r0 + block_size] @ A[c0 : c0 + block_size].T


def bench_large(n, dim, repeat, block_size, n_jobs):
    from sklearn_fairaes.metrics import lipschitz_fraction
    from sklearn_fairaes.metrics._pairs._types import DEFAULT_BLOCK_SIZE

    bs = block_size or DEFAULT_BLOCK_SIZE
    X, y = random_problem(n, dim, seed=1)
    pairs = n * (n - 1) // 2
    print(f"\n[2] N={n:,}, d={dim}: {pairs:,} pairs, block_size={bs}, n_jobs={n_jobs}")
    t0 = time.perf_counter()
    res, mem = peak_memory(
        lambda: lipschitz_fraction(
            X, y, return_counts=True, block_size=block_size, n_jobs=n_jobs
        )
    )
    t_ours = time.perf_counter() - t0
    if repeat > 1:
        t_ours = min(
            t_ours,
            best_of(
                lambda: lipschitz_fraction(X, y, block_size=block_size, n_jobs=n_jobs),
                repeat - 1,
            )[0],
        )
    t_bare64, _ = best_of(lambda: bare_products(X, bs, np.float64), 1)
    t_bare32, _ = best_of(lambda: bare_products(X, bs, np.float32), 1)
    print(f"    lipschitz_fraction: {t_ours:8.2f} s   {pairs / t_ours / 1e6:7.1f} M pairs/s"
          f"   peak {mem:6.0f} MB (tracemalloc; target < 1024)")  # fmt: skip
    print(f"    fraction {res.fraction:.6f} ({res.n_satisfied:,} of {res.n_pairs:,})")
    print(f"    bare float64 block products, one pass: {t_bare64:8.2f} s -> ratio "
          f"{t_ours / t_bare64:.2f}x (target <= 3x)")  # fmt: skip
    print(f"    bare float32 block products, one pass: {t_bare32:8.2f} s -> ratio "
          f"{t_ours / t_bare32:.2f}x (two float32 passes + exact checks)")  # fmt: skip


@contextlib.contextmanager
def timing_phases():
    """Time the phases of ``_review_all`` (the methods below), in a dict of seconds."""
    from sklearn_fairaes.metrics._pairs import (
        _engine,
        _review_fused,
        _review_pass,
        _review_screened,
    )

    totals = collections.defaultdict(float)
    patched = []

    def wrap(owner, name, label):
        real = getattr(owner, name)

        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                key = label(args, kwargs) if callable(label) else label
                totals[key] += time.perf_counter() - t

        patched.append((owner, name, real))
        setattr(owner, name, timed)

    def block_kind(args, kwargs):
        kind = args[2] if len(args) > 2 else kwargs.get("kind", "distance")
        return f"engine: {kind} blocks"

    wrap(_engine.PairwiseEngine, "distance_range", "distance-range pass (float32 screened)")
    wrap(_review_pass, "_guess_windows", "quantile windows guessed (sampled pairs)")
    wrap(_engine.PairwiseEngine, "_make_block", block_kind)
    # the screened review (dense cosine problems) and its exact settling
    wrap(
        _review_screened._ScreenedReview,
        "map",
        "screened pass: per-pair work of the blocks",
    )
    wrap(
        _review_screened._ScreenedReview,
        "combine",
        "screened pass: combining partial results",
    )
    wrap(_review_screened, "_neighbors", "exact neighbours from the candidates")
    wrap(_review_screened, "_violations", "exact violations from the candidates")
    wrap(_review_screened, "_quantile", "exact quantile constants from the windows")
    wrap(
        _engine.PairwiseEngine,
        "paired_distances",
        "paired distances (inside the three above)",
    )
    # the float64 fused pass (problems the screen cannot take)
    wrap(_review_fused._FusedReview, "_map_neighbors", "fused pass: neighbours")
    wrap(
        _review_fused._FusedReview,
        "_map_lipschitz",
        "fused pass: histogram, counts, violations, windows",
    )
    wrap(_review_fused._FusedReview, "combine", "fused pass: combining partial results")
    try:
        yield totals
    finally:
        for owner, name, real in reversed(patched):
            setattr(owner, name, real)


def bench_review(
    n, dim, block_size, n_jobs, separate=True, phases=False, repeat=1, numpy_strips=False
):
    from sklearn_fairaes.metrics import (
        essay_consistency,
        lipschitz_fraction,
        lipschitz_profile,
        lipschitz_violations,
    )
    from sklearn_fairaes.metrics._review import _review_all

    X, y = random_problem(n, dim, seed=2)
    pairs = n * (n - 1) // 2
    kw = dict(block_size=block_size, n_jobs=n_jobs)
    print(f"\n[4] N={n:,}, d={dim}: {pairs:,} pairs; issue 17's review metrics")

    # Times and peaks come from separate runs: tracemalloc traces every numpy
    # allocation, which slows the shared pass (many small candidate arrays)
    # far more than lipschitz_fraction (14.6 s against 9.0 s at N=20,000).
    def lf():
        return lipschitz_fraction(X, y, return_counts=True, **kw)

    def shared():
        return _review_all(X, y, n_neighbors=10, top=100, **kw)

    t_lf = t_all = np.inf
    for _ in range(repeat):  # alternating, so that load hits both alike
        t, res = best_of(lf, 1)
        t_lf = min(t_lf, t)
        t, out = best_of(shared, 1)
        t_all = min(t_all, t)
    mem_lf = peak_memory(lf)[1]
    mem_all = peak_memory(shared)[1]
    n_ok = int(out["counts"][1 + [0.25, 0.5, 1.0, 2.0, 4.0].index(1.0)])
    print(f"    best of {repeat} alternating runs; peak memory from one more run of each")
    print(f"    lipschitz_fraction alone          : {t_lf:8.2f} s   peak {mem_lf:6.0f} MB")
    print(f"    the three from one shared pass    : {t_all:8.2f} s   peak {mem_all:6.0f} MB"
          f"   -> ratio {t_all / t_lf:.2f}x (target <= 1.5x)")  # fmt: skip
    print(f"    Lipschitz count at L=1: {n_ok:,} (lipschitz_fraction: {res.n_satisfied:,}; "
          f"equal: {n_ok == res.n_satisfied}); violations {out['violations'][1]:,}; "
          f"95% constant {out['quantile_constants'][1]:.4f}")  # fmt: skip
    if numpy_strips:
        from sklearn_fairaes.metrics._pairs import _review_screened

        _review_screened.USE_KERNEL = False
        try:
            t_np, out_np = best_of(shared, 1)
        finally:
            _review_screened.USE_KERNEL = True
        same = out_np["counts"].tolist() == out["counts"].tolist()
        print(f"    the same, per-pair work in NumPy  : {t_np:8.2f} s"
              f"   -> ratio {t_np / t_lf:.2f}x (no numba; counts equal: {same})")  # fmt: skip
    if phases:
        with timing_phases() as totals:
            t0 = time.perf_counter()
            _review_all(X, y, n_neighbors=10, top=100, **kw)
            t_timed = time.perf_counter() - t0
        print(f"    where the time of the shared pass goes (a second run, {t_timed:.2f} s; "
              f"the range pass includes its float32 blocks):")  # fmt: skip
        for key, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
            print(f"        {key:52s} {seconds:7.2f} s")
    if separate:
        t0 = time.perf_counter()
        essay_consistency(X, y, n_neighbors=10, **kw)
        t_c = time.perf_counter() - t0
        t0 = time.perf_counter()
        lipschitz_violations(X, y, top=100, **kw)
        t_v = time.perf_counter() - t0
        t0 = time.perf_counter()
        lipschitz_profile(X, y, **kw)
        t_p = time.perf_counter() - t0
        print(f"    one by one: essay_consistency {t_c:.2f} s, lipschitz_violations "
              f"{t_v:.2f} s, lipschitz_profile {t_p:.2f} s (sum {t_c + t_v + t_p:.2f} s, "
              f"{(t_c + t_v + t_p) / t_lf:.2f}x)")  # fmt: skip


def _blas_kernels():
    from threadpoolctl import threadpool_info

    return sorted(
        {f"{i['internal_api']} {i.get('architecture')}" for i in threadpool_info()
         if i.get("user_api") == "blas"}
    )  # fmt: skip


def engine_ratio_child(sizes, dim, repeat, block_size):
    """One process of [5]: the ratio at each size under this process's kernel."""
    from sklearn_fairaes.metrics import lipschitz_fraction
    from sklearn_fairaes.metrics._pairs import _counters
    from sklearn_fairaes.metrics._pairs._types import DEFAULT_BLOCK_SIZE

    # the pairs the float32 screen leaves to float64 (settled block by block)
    settled = []
    real_settle = _counters._settle

    def counting_settle(engine, y, i, j, *args):
        settled.append(i.size)
        return real_settle(engine, y, i, j, *args)

    _counters._settle = counting_settle

    bs = block_size or DEFAULT_BLOCK_SIZE
    lipschitz_fraction(*random_problem(500, dim))  # imports and BLAS threads started
    coretype = os.environ.get("OPENBLAS_CORETYPE", "unset")
    print(f"    OPENBLAS_CORETYPE={coretype}: BLAS kernel {', '.join(_blas_kernels())}")
    for n in sizes:
        X, y = random_problem(n, dim, seed=1)
        t_lf = t_bare = np.inf
        for _ in range(repeat):  # alternating, so that load hits both alike
            t0 = time.perf_counter()
            bare_products(X, bs, np.float32)
            t_bare = min(t_bare, time.perf_counter() - t0)
            settled.clear()
            t0 = time.perf_counter()
            res = lipschitz_fraction(X, y, return_counts=True, block_size=bs)
            t = time.perf_counter() - t0
            t_lf = min(t_lf, t)
        print(f"      N={n:>9,}: lipschitz_fraction {t_lf:7.2f} s, bare float32 products "
              f"{t_bare:7.2f} s -> ratio {t_lf / t_bare:.2f}x "
              f"({res.n_satisfied:,} of {res.n_pairs:,} pairs; {sum(settled):,} settled "
              f"in float64, {sum(settled) / res.n_pairs:.1e} of them)",
              flush=True)  # fmt: skip


def bench_engine_ratio(sizes, dim, repeat, block_size, alternative):
    here = os.environ.get("OPENBLAS_CORETYPE")
    settings = [here, None] if here else [None, alternative]
    print(f"\n[5] lipschitz_fraction / bare float32 products, d={dim}, best of {repeat} "
          f"alternating runs; this machine's OPENBLAS_CORETYPE: {here or 'unset'}")  # fmt: skip
    for setting in settings:
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        if setting:
            env["OPENBLAS_CORETYPE"] = setting
        cmd = [sys.executable, __file__, "--engine-ratio-child",
               "--ratio-sizes", ",".join(map(str, sizes)), "--dim", str(dim),
               "--repeat", str(repeat)]  # fmt: skip
        if block_size:
            cmd += ["--block-size", str(block_size)]
        subprocess.run(cmd, env=env, check=True)
    print("    target <= 2x at N=50,000 (aim 1.5x)")


def simple_features(essays):
    """Cheap interpretable features for the profile (not the package's twelve)."""
    words = [e.split() for e in essays]
    return np.array(
        [
            [len(w), len(e), len(set(w)) / max(len(w), 1), e.count(".") + e.count("!")]
            for e, w in zip(essays, words)
        ],
        dtype=float,
    )


def bench_asap(repeat):
    import pandas as pd
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import KFold, cross_val_predict

    from sklearn_fairaes.metrics import (
        condensed_distances,
        extreme_pairs,
        feature_difference_profile,
        lipschitz_fraction,
        score_distance_curve,
    )
    from sklearn_fairaes.metrics._ranking import paraphrase_ndcg
    from sklearn_fairaes.text import TfidfEssayVectorizer

    if not ASAP7.exists():
        print(f"\n[3] skipped: missing {ASAP7}")
        return
    df = pd.read_csv(
        ASAP7, sep="\t", encoding="utf-8-sig", dtype=str, keep_default_na=False
    )
    essays = df["essay"].tolist()
    y = df["domain1_score"].astype(float).to_numpy()
    t0 = time.perf_counter()
    vec = TfidfEssayVectorizer()
    X = vec.fit_transform(essays)
    t_vec = time.perf_counter() - t0
    pred = cross_val_predict(
        Ridge(alpha=0.1), X, y, cv=KFold(5, shuffle=True, random_state=42)
    ).round(3)
    F = simple_features(essays)
    print(f"\n[3] ASAP prompt 7: N={X.shape[0]:,}, TF-IDF {X.shape[1]:,} columns "
          f"(vectorising {t_vec:.1f} s, not timed)")  # fmt: skip

    def all_metrics(data, metric):
        out = {}
        for name, scores in (("ridge", pred), ("human", y)):
            out[name, "lf"] = lipschitz_fraction(data, scores, metric=metric)
            out[name, "lf_max"] = lipschitz_fraction(
                data, scores, metric=metric, normalize="max"
            )
            out[name, "curve"] = score_distance_curve(data, scores, metric=metric)
        out["extreme"] = extreme_pairs(data, k=1, metric=metric)
        out["profile"] = feature_difference_profile(data, F, n_pairs=10000, metric=metric)
        return out

    t_x, res = best_of(lambda: all_metrics(X, "cosine"), repeat)

    def precomputed():
        return all_metrics(condensed_distances(X), "precomputed")

    t_pre, res_pre = best_of(precomputed, repeat)
    print("    all metrics of _individual (Lipschitz minmax + max, 5-bin curve, for Ridge "
          "and human scores; extreme pairs; feature profile):")  # fmt: skip
    print(f"      on X (each call recomputes distances)   : {t_x:6.2f} s")
    print(f"      condensed_distances once + precomputed  : {t_pre:6.2f} s (target < 1 s)")
    same = all(
        res["ridge", "lf"] == res_pre["ridge", "lf"]
        and np.array_equal(res[k, "curve"].mean_abs_diff, res_pre[k, "curve"].mean_abs_diff)
        for k in ("ridge", "human")
    )
    print(f"      same results both ways: {same}")
    for who in ("ridge", "human"):
        c = res[who, "curve"]
        bins = np.round(c.mean_abs_diff, 2).tolist()
        print(f"    {who:5s}: Lipschitz {100 * res[who, 'lf']:.3f} % (minmax), "
              f"{100 * res[who, 'lf_max']:.3f} % (max); 5-bin mean |diff| "
              f"{bins} rho={c.spearman_rho:.2f}")  # fmt: skip
    print(f"    paper, TF-IDF + Ridge 5-bin: {list(PAPER_TFIDF_RIDGE_BINS)}")
    ext = res["extreme"]
    print(f"    nearest pair {ext.nearest.i[0]}-{ext.nearest.j[0]} "
          f"d={ext.nearest.distance[0]:.3f}; farthest {ext.farthest.i[0]}-"
          f"{ext.farthest.j[0]} d={ext.farthest.distance[0]:.3f} "
          f"(paper: TF-IDF range 0.403-1.000)")  # fmt: skip
    rng = np.random.default_rng(0)
    dropped = [
        " ".join(w for w in e.split() if rng.random() > 0.2) for e in essays
    ]  # a crude stand-in for paraphrases: drop a fifth of the words
    Xp = vec.transform(dropped)
    t_ndcg, det = best_of(
        lambda: paraphrase_ndcg(X, Xp, return_details=True, random_state=0), repeat
    )
    print(f"    paraphrase_ndcg (100 queries, 20 % of words dropped): {t_ndcg:.2f} s; "
          f"NDCG {det.ndcg:.3f}, NDCG@10 {det.ndcg_at_10:.3f}, "
          f"Spearman {det.spearman:.3f}")  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-naive", type=int, default=10_000)
    parser.add_argument("--n-large", type=int, default=50_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--block-size", type=int, default=None)
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-asap", action="store_true")
    parser.add_argument("--n-review", type=int, default=50_000)
    parser.add_argument("--skip-review", action="store_true")
    parser.add_argument("--only-review", action="store_true")
    parser.add_argument(
        "--review-together-only",
        action="store_true",
        help="in [4], time only the shared pass (not the three functions one by one)",
    )
    parser.add_argument(
        "--review-phases",
        action="store_true",
        help="in [4], run the shared pass once more and print where its time goes",
    )
    parser.add_argument(
        "--review-numpy",
        action="store_true",
        help="in [4], time the shared pass once more with its per-pair work in NumPy "
        "(what runs without numba, the fast extra)",
    )
    parser.add_argument(
        "--engine-ratio",
        action="store_true",
        help="run only [5], the ratio to the bare float32 products (issue 18)",
    )
    parser.add_argument("--engine-ratio-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ratio-sizes", default="10000,50000")
    parser.add_argument("--ratio-coretype", default="Haswell")
    args = parser.parse_args(argv)
    sizes = [int(v) for v in args.ratio_sizes.split(",")]
    if args.engine_ratio_child:
        engine_ratio_child(sizes, args.dim, args.repeat, args.block_size)
        return
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    if args.engine_ratio:
        bench_engine_ratio(sizes, args.dim, args.repeat, args.block_size,
                           args.ratio_coretype)  # fmt: skip
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return
    if args.only_review:
        args.skip_naive = args.skip_large = args.skip_asap = True
    if not args.skip_naive:
        bench_naive(args.n_naive, args.dim, args.repeat, args.block_size, args.n_jobs)
    if not args.skip_large:
        bench_large(args.n_large, args.dim, min(args.repeat, 1), args.block_size,
                    args.n_jobs)  # fmt: skip
    if not args.skip_asap:
        bench_asap(args.repeat)
    if not args.skip_review:
        bench_review(args.n_review, args.dim, args.block_size, args.n_jobs,
                     separate=not args.review_together_only,
                     phases=args.review_phases, repeat=args.repeat,
                     numpy_strips=args.review_numpy)  # fmt: skip
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
