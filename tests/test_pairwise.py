"""The blocked all-pairs engine, against scipy's pdist and brute-force loops."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import require_module
from joblib import parallel_config
from scipy.spatial.distance import pdist, squareform

from sklearn_fairaes.metrics import condensed_distances
from sklearn_fairaes.metrics._pairs import _blocks, _engine, _types
from sklearn_fairaes.metrics._pairs._engine import PairwiseEngine
from sklearn_fairaes.metrics._pairs._keys import select_rank_windows
from sklearn_fairaes.metrics._pairs._range import MinMaxReducer
from sklearn_fairaes.metrics._pairs._reducers import HistogramReducer, TopKReducer
from sklearn_fairaes.metrics._pairs._types import (
    condensed_to_pairs,
    n_pairs_of,
    pairs_to_condensed,
)


@pytest.fixture
def no_cache(monkeypatch):
    """Force the joblib path: no block cache, several small tasks."""
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_blocks, "_TASK_PAIRS", 500)


@pytest.fixture
def no_sort(monkeypatch):
    """Force the histogram/selection path instead of sorting all pairs."""
    monkeypatch.setattr(_types, "EXACT_SORT_MAX_PAIRS", 0)


# --------------------------------------------------------------------------
# Distances
# --------------------------------------------------------------------------
@pytest.mark.parametrize("block_size", [1, 7, 64, None])
def test_cosine_matches_pdist(rng, block_size):
    X = rng.normal(size=(150, 384))
    ours = condensed_distances(X, block_size=block_size)
    ref = pdist(X, "cosine")
    assert ours.shape == ref.shape
    assert np.abs(ours - ref).max() <= 2e-15


def test_cosine_sparse_matches_pdist_of_dense(rng):
    rare = sp.random(120, 3000, density=0.02, random_state=1, format="csr")
    frequent = sp.csr_matrix(rng.random(size=(120, 5)))  # take the dense product
    X = sp.hstack([frequent, rare], format="csr")
    ours = condensed_distances(X, block_size=50)
    ref = pdist(X.toarray(), "cosine")
    assert np.abs(ours - ref).max() <= 2e-15
    dense = condensed_distances(X.toarray(), block_size=50)
    assert np.abs(ours - dense).max() <= 2e-15


@pytest.mark.parametrize("sparse", [False, True])
def test_cosine_zero_vectors(sparse):
    X = np.array([[1.0, 2.0], [0.0, 0.0], [3.0, 0.0], [0.0, 0.0], [2.0, 4.0]])
    if sparse:
        X = sp.csr_matrix(X)
    D = squareform(condensed_distances(X, block_size=2))
    assert not np.isnan(D).any()
    assert D[1, 3] == 0.0  # two zero vectors: identical
    np.testing.assert_array_equal(D[1, [0, 2, 4]], 1.0)  # zero vs non-zero
    np.testing.assert_array_equal(D[3, [0, 2, 4]], 1.0)
    assert D[0, 4] == 0.0  # parallel vectors: exactly 0, not rounding noise
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = squareform(pdist(np.asarray(sp.csr_matrix(X).toarray()), "cosine"))
    assert np.isnan(ref[1, 3])  # what scipy gives instead
    ok = ~np.isnan(ref)
    assert np.abs(D[ok] - ref[ok]).max() <= 1e-15
    # the same convention on sampled pairs
    engine = PairwiseEngine(X)
    i, j = np.array([1, 0, 0]), np.array([3, 1, 4])
    np.testing.assert_array_equal(engine.paired_distances(i, j), [0.0, 1.0, 0.0])


@pytest.mark.parametrize(
    "metric, scipy_metric, rtol",
    [("euclidean", "euclidean", 1e-9), ("manhattan", "cityblock", 1e-13),
     ("chebyshev", "chebyshev", 1e-13)],
)  # fmt: skip
def test_other_metric_names(rng, metric, scipy_metric, rtol):
    X = rng.normal(size=(60, 5))
    np.testing.assert_allclose(
        condensed_distances(X, metric=metric, block_size=16),
        pdist(X, scipy_metric),
        rtol=rtol,
    )


def test_callable_metric(rng):
    X = rng.normal(size=(25, 3))

    def l1(u, v):
        return float(np.abs(u - v).sum())

    np.testing.assert_allclose(
        condensed_distances(X, metric=l1, block_size=6), pdist(X, "cityblock"), rtol=1e-13
    )


def test_precomputed_condensed_and_square_agree(rng):
    d = rng.random(n_pairs_of(30))
    for D in (d, squareform(d)):
        engine = PairwiseEngine(D, metric="precomputed", block_size=7)
        assert engine.n_samples == 30
        np.testing.assert_array_equal(engine.condensed(), d)
        i, j = engine.sample_pairs(200, random_state=0)
        np.testing.assert_array_equal(
            engine.paired_distances(i, j), d[pairs_to_condensed(i, j, 30)]
        )
        rows = np.array([3, 0, 29])
        np.testing.assert_array_equal(
            engine.distances(rows, slice(None)), squareform(d)[rows]
        )


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "chebyshev"])
def test_paired_distances_match_blocks(rng, metric):
    X = rng.normal(size=(40, 6))
    engine = PairwiseEngine(X, metric=metric, block_size=9)
    i, j = engine.sample_pairs(300, random_state=1)
    ref = engine.condensed()[pairs_to_condensed(i, j, 40)]
    np.testing.assert_allclose(engine.paired_distances(i, j), ref, rtol=1e-9, atol=1e-15)


# --------------------------------------------------------------------------
# Pair indices and sampling
# --------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 17, 1569, 100_003])
def test_condensed_index_round_trip(n):
    total = n_pairs_of(n)
    k = np.unique(np.r_[0, total - 1, np.random.default_rng(0).integers(0, total, 5000)])
    i, j = condensed_to_pairs(k, n)
    assert np.all((0 <= i) & (i < j) & (j < n))
    np.testing.assert_array_equal(pairs_to_condensed(i, j, n), k)


def test_condensed_order_is_pdist_order():
    n = 9
    i, j = condensed_to_pairs(np.arange(n_pairs_of(n)), n)
    ref = [(a, b) for a in range(n) for b in range(a + 1, n)]
    assert list(zip(i.tolist(), j.tolist())) == ref


def test_sample_pairs_uniform_and_seeded():
    engine = PairwiseEngine(np.eye(5) + 1.0)
    i, j = engine.sample_pairs(100_000, random_state=0)
    assert np.all(i < j)
    freq = np.bincount(pairs_to_condensed(i, j, 5), minlength=10) / 100_000
    # each of the 10 pairs has probability 0.1; 6 standard errors
    assert np.abs(freq - 0.1).max() < 6 * np.sqrt(0.1 * 0.9 / 100_000)
    i2, j2 = engine.sample_pairs(100_000, random_state=0)
    np.testing.assert_array_equal(i, i2)
    np.testing.assert_array_equal(j, j2)


@pytest.mark.parametrize("n_levels", [None, 3, 50, 100_000])
def test_stable_argsort_equals_numpy_stable(rng, n_levels):
    if n_levels is None:
        values = rng.random(20_000)
    else:
        values = rng.integers(0, n_levels, size=20_000).astype(float)
    values[::97] = values[5]  # one long run of ties in any case
    np.testing.assert_array_equal(
        _types.stable_argsort(values), np.argsort(values, kind="stable")
    )


# --------------------------------------------------------------------------
# Reductions: determinism, parallelism, group filters
# --------------------------------------------------------------------------
def _hist(engine, y):
    lo, hi, _ = engine.map_reduce(MinMaxReducer())
    return engine.map_reduce(HistogramReducer(lo, hi, 97, y=y))


def test_identical_for_n_jobs_1_and_2(rng, no_cache):
    X = rng.normal(size=(300, 20))
    y = rng.normal(size=300)
    one = _hist(PairwiseEngine(X, block_size=37, n_jobs=1), y)
    two = _hist(PairwiseEngine(X, block_size=37, n_jobs=2), y)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)  # bit for bit, float sums included
    with parallel_config(backend="threading", n_jobs=2):
        three = _hist(PairwiseEngine(X, block_size=37), y)
    for a, b in zip(one, three):
        np.testing.assert_array_equal(a, b)
    assert one[0].sum() == n_pairs_of(300)


def test_dask_backend_spreads_blocks(rng, no_cache):
    distributed = require_module("distributed", "dask")
    X = rng.normal(size=(120, 8))
    y = rng.normal(size=120)
    ref = _hist(PairwiseEngine(X, block_size=25), y)
    with distributed.Client(
        processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
    ) as client:
        with distributed.get_task_stream(client) as stream:
            with parallel_config(backend="dask"):
                got = _hist(PairwiseEngine(X, block_size=25), y)
    assert len(stream.data) > 1  # the blocks went through the dask scheduler
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("pairs", ["all", "within", "between"])
def test_group_filters(rng, pairs, no_cache):
    X = rng.normal(size=(50, 4))
    groups = rng.integers(0, 3, size=50)
    engine = PairwiseEngine(X, block_size=8, groups=groups, pairs=pairs, n_jobs=2)
    d = pdist(X, "cosine")
    i, j = condensed_to_pairs(np.arange(d.size), 50)
    same = groups[i] == groups[j]
    keep = {"all": np.ones_like(same), "within": same, "between": ~same}[pairs]
    assert engine.n_pairs == keep.sum()
    lo, hi, count = engine.map_reduce(MinMaxReducer())
    assert count == keep.sum()
    assert lo == pytest.approx(d[keep].min(), abs=1e-15)
    assert hi == pytest.approx(d[keep].max(), abs=1e-15)


def test_group_filter_sampling(rng):
    groups = np.repeat([0, 1, 2], 10)
    engine = PairwiseEngine(rng.normal(size=(30, 3)), groups=groups, pairs="within")
    i, j = engine.sample_pairs(500, random_state=0)
    assert i.size == 500 and np.all(groups[i] == groups[j]) and np.all(i < j)
    between = PairwiseEngine(rng.normal(size=(30, 3)), groups=groups, pairs="between")
    i, j = between.sample_pairs(500, random_state=0)
    assert np.all(groups[i] != groups[j])
    with pytest.raises(ValueError, match="pairs='all' only"):
        engine.condensed()


def test_group_filter_errors(rng):
    X = rng.normal(size=(5, 2))
    with pytest.raises(ValueError, match="needs groups"):
        PairwiseEngine(X, pairs="within")
    with pytest.raises(ValueError, match="one label per essay"):
        PairwiseEngine(X, groups=[0, 1], pairs="within")
    with pytest.raises(ValueError, match="pairs='some' is not supported"):
        PairwiseEngine(X, groups=[0] * 5, pairs="some")


# --------------------------------------------------------------------------
# Top-k and rank selection
# --------------------------------------------------------------------------
@pytest.mark.parametrize("ties", ["low", "high"])
def test_topk_matches_sorted_order_with_ties(rng, ties):
    n = 40
    d = rng.integers(0, 4, size=n_pairs_of(n)).astype(float)  # many ties
    engine = PairwiseEngine(d, metric="precomputed", block_size=6)
    (nd, ni, nj), (fd, fi, fj) = engine.map_reduce(TopKReducer(25, n, farthest_ties=ties))
    order = np.argsort(d, kind="stable")
    np.testing.assert_array_equal(pairs_to_condensed(ni, nj, n), order[:25])
    np.testing.assert_array_equal(nd, d[order[:25]])
    if ties == "high":
        expected = order[::-1][:25]  # the last 25 of the ascending order
    else:
        expected = np.lexsort((np.arange(d.size), -d))[:25]
    np.testing.assert_array_equal(pairs_to_condensed(fi, fj, n), expected)


def test_select_windows_exact_path_equals_selection_path(rng, monkeypatch):
    X = rng.normal(size=(90, 5))
    engine = PairwiseEngine(X, block_size=11)
    T = engine.n_pairs
    windows = [(0, 10), (T // 2 - 50, T // 2 + 50), (T - 7, T), (1000, 1001), (0, T)]
    by_sort = select_rank_windows(engine, windows)
    monkeypatch.setattr(_types, "EXACT_SORT_MAX_PAIRS", 0)
    for n_bins, cap, used in [(65536, None, 5), (8, 20, 5), (4, 30, 5), (2, 3, 4)]:
        # a cap below the window size forces a split at every level, which is
        # slow on the whole range: the tightest setting skips that window
        by_hist = select_rank_windows(
            engine, windows[:used], n_fine_bins=n_bins, max_candidates=cap
        )
        for a, b in zip(by_sort, by_hist):
            for x, z in zip(a, b):
                np.testing.assert_array_equal(x, z)


def test_select_windows_inside_runs_of_ties(rng, no_sort):
    n = 60
    d = rng.integers(0, 3, size=n_pairs_of(n)).astype(float)
    engine = PairwiseEngine(d, metric="precomputed", block_size=9)
    order = np.argsort(d, kind="stable")
    windows = [(0, 5), (300, 900), (1000, 1001), (n_pairs_of(n) - 40, n_pairs_of(n))]
    got = select_rank_windows(engine, windows, n_fine_bins=4, max_candidates=10)
    for (start, stop), (gd, gi, gj) in zip(windows, got):
        np.testing.assert_array_equal(pairs_to_condensed(gi, gj, n), order[start:stop])
        np.testing.assert_array_equal(gd, d[order[start:stop]])


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------
def test_bad_metric_and_options(rng):
    X = rng.normal(size=(6, 3))
    with pytest.raises(ValueError, match="metric='cosinus' is not supported"):
        PairwiseEngine(X, metric="cosinus")
    with pytest.raises(ValueError, match="estimates its parameters"):
        PairwiseEngine(X, metric="mahalanobis")
    with pytest.raises(TypeError, match="metric must be a str or a callable"):
        PairwiseEngine(X, metric=3)
    with pytest.raises(TypeError, match="does not accept a sparse X"):
        PairwiseEngine(sp.csr_matrix(X), metric="chebyshev")
    with pytest.raises(ValueError, match="block_size must be at least 1"):
        PairwiseEngine(X, block_size=0)


def test_bad_embeddings():
    with pytest.raises(ValueError, match="X must be 2-D"):
        condensed_distances(np.ones(5))
    with pytest.raises(ValueError, match="NaN or infinity"):
        condensed_distances(np.array([[1.0, np.nan], [1.0, 2.0]]))
    with pytest.raises(ValueError, match="at least 2 essays"):
        condensed_distances(np.ones((1, 3)))
    with pytest.raises(TypeError, match="numeric matrix"):
        condensed_distances(np.array([["a", "b"], ["c", "d"]]))


def test_bad_precomputed():
    with pytest.raises(ValueError, match="not N\\(N-1\\)/2"):
        PairwiseEngine(np.ones(4), metric="precomputed")
    with pytest.raises(ValueError, match="not N\\(N-1\\)/2"):
        PairwiseEngine(np.ones(0), metric="precomputed")
    with pytest.raises(ValueError, match="square"):
        PairwiseEngine(np.ones((3, 4)), metric="precomputed")
    with pytest.raises(ValueError, match="not symmetric"):
        PairwiseEngine(np.array([[0.0, 1.0], [2.0, 0.0]]), metric="precomputed")
    with pytest.raises(ValueError, match="negative"):
        PairwiseEngine(np.array([-1.0, 1.0, 1.0]), metric="precomputed")
    with pytest.raises(ValueError, match="NaN or infinity"):
        PairwiseEngine(np.array([np.inf, 1.0, 1.0]), metric="precomputed")
    with pytest.raises(TypeError, match="sparse"):
        PairwiseEngine(sp.csr_matrix(np.eye(3)), metric="precomputed")
    with pytest.raises(ValueError, match="at least 2"):
        PairwiseEngine(np.zeros((1, 1)), metric="precomputed")


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("magnitude", [1e-160, 1e-300, 1e150, 1e300])
def test_cosine_extreme_magnitudes(rng, sparse, magnitude):
    """Tiny or huge rows: no underflow or overflow in the norms."""
    X = rng.normal(size=(20, 6))
    big = X * magnitude
    if sparse:
        big = sp.csr_matrix(big)
    np.testing.assert_allclose(
        condensed_distances(big), condensed_distances(X), rtol=0, atol=1e-15
    )


@pytest.mark.parametrize("sparse", [False, True])
def test_cosine_duplicates_are_exactly_zero(rng, sparse):
    base = rng.normal(size=(4, 300))
    X = np.vstack([base, base[1] * 3.7, base[2] + 1e-4 * rng.normal(size=300)])
    if sparse:
        X = sp.csr_matrix(X)
    D = squareform(condensed_distances(X, block_size=3))
    assert D[1, 4] == 0.0  # parallel rows: 0, not rounding noise
    ref = pdist(sp.csr_matrix(X).toarray(), "cosine")
    assert np.abs(squareform(D) - ref).max() <= 1e-15
    assert D[2, 5] > 1e-10  # a real small distance is kept
    assert D[2, 5] == pytest.approx(squareform(ref)[2, 5], rel=1e-6)


# --------------------------------------------------------------------------
# One engine shared by several metrics (issue 32: the audit holds one per
# study and representation)
# --------------------------------------------------------------------------
def _assert_same_result(a, b):
    if not isinstance(a, dict):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        return
    assert sorted(a) == sorted(b)
    for key in a:
        _assert_same_result(a[key], b[key])


def _pair_metrics(X, y, groups, **kw):
    from sklearn_fairaes.metrics import (
        essay_consistency,
        extreme_pairs,
        group_lipschitz_fraction,
        lipschitz_fraction,
        lipschitz_profile,
        lipschitz_violations,
        score_distance_curve,
    )

    return [
        lipschitz_fraction(X, y, return_counts=True, **kw),
        lipschitz_fraction(X, y, normalize="max", return_counts=True, **kw),
        score_distance_curve(X, y, n_bins=7, **kw),
        extreme_pairs(X, k=3, **kw),
        essay_consistency(X, y, n_neighbors=3, **kw),
        lipschitz_violations(X, y, top=5, **kw),
        lipschitz_profile(X, y, **kw),
        group_lipschitz_fraction(X, y, groups=groups, **kw),
    ]


@pytest.mark.parametrize("kind", ["cosine", "screened", "precomputed"])
def test_metrics_on_a_shared_engine_equal_those_on_X(rng, monkeypatch, kind):
    X = rng.normal(size=(240, 6))
    y = rng.integers(0, 6, size=240).astype(float)
    groups = rng.integers(0, 2, size=240)
    metric = "cosine"
    if kind == "screened":  # no block cache: dense cosine is then float32-screened
        monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    if kind == "precomputed":
        X, metric = pdist(X, "cosine"), "precomputed"
    fresh = _pair_metrics(X, y, groups, metric=metric)
    ranges = []
    real = PairwiseEngine._distance_range

    def counted(self, screened):
        ranges.append(screened)
        return real(self, screened)

    monkeypatch.setattr(PairwiseEngine, "_distance_range", counted)
    engine = PairwiseEngine(X, metric=metric)
    assert engine.screenable == (kind == "screened")
    shared = _pair_metrics(engine, y, groups, metric=metric)
    for a, b in zip(fresh, shared):
        _assert_same_result(a, b)
    # the range of all pairs once, for the eight metrics together (the group
    # metric normalises by it too); of the screened kind when the engine is
    assert ranges == [kind == "screened"]
    # the engine itself is left as it was: no block kept past a call
    assert engine._cache is None and engine._screen_cache is None


def test_an_engine_as_x_refuses_other_options(rng):
    from sklearn_fairaes.metrics import lipschitz_fraction

    X = rng.normal(size=(30, 4))
    y = rng.normal(size=30)
    engine = PairwiseEngine(X, block_size=8, n_jobs=1)
    for kw, shown in [
        ({"metric": "euclidean"}, "metric='euclidean' (the engine's: 'cosine')"),
        ({"block_size": 16}, "block_size=16 (the engine's: 8)"),
        ({"n_jobs": 2}, "n_jobs=2 (the engine's: 1)"),
    ]:
        with pytest.raises(ValueError, match=r"X is a PairwiseEngine") as info:
            lipschitz_fraction(engine, y, **kw)
        assert shown in str(info.value)
    # the engine's own options, or None, are accepted
    assert lipschitz_fraction(engine, y, block_size=8, n_jobs=1) == lipschitz_fraction(X, y)


@pytest.mark.parametrize("pairs", ["within", "between"])
def test_filtered_engine_equals_one_built_with_groups(rng, pairs):
    X = rng.normal(size=(50, 5))
    groups = rng.choice(["a", "b", "c"], size=50)
    built = PairwiseEngine(X, groups=groups, pairs=pairs, block_size=16)
    derived = PairwiseEngine(X, block_size=16).filtered(groups, pairs)
    assert derived.n_pairs == built.n_pairs
    assert derived.distance_range() == built.distance_range()
    with pytest.raises(ValueError, match="needs an engine over all pairs"):
        derived.filtered(groups, pairs)


def test_a_shared_engine_pickles_with_its_range(rng):
    import pickle

    engine = PairwiseEngine(rng.normal(size=(40, 3)))
    expected = engine.distance_range()
    again = pickle.loads(pickle.dumps(engine))
    assert again._ranges == {False: expected}
    assert again.for_call().distance_range() == expected
