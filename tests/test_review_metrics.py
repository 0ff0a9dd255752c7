"""essay_consistency, lipschitz_violations and lipschitz_profile (issue 17).

Every result is checked against an independent reference computed here: the
full distance matrix of ``pdist``/``squareform`` with ``argsort`` and explicit
loops, sklearn's ``NearestNeighbors``, AIF360's consistency formula, and
``lipschitz_fraction`` itself for the profile.
"""

import math
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.distance import pdist, squareform
from sklearn.linear_model import Ridge
from sklearn.neighbors import NearestNeighbors

import sklearn_fairaes as sf
from sklearn_fairaes.exceptions import UndefinedMetricWarning
from sklearn_fairaes.metrics import _review
from sklearn_fairaes.metrics._pairs import _keys, _review_pass, _review_stats
from sklearn_fairaes.metrics._pairs._engine import PairwiseEngine
from sklearn_fairaes.metrics._pairs._review_stats import _critical_constants
from sklearn_fairaes.metrics._review import _review_all


# --------------------------------------------------------------------------
# naive references
# --------------------------------------------------------------------------
def naive_neighbors(D, k):
    """k nearest others of each row of the square matrix D, stable ties."""
    D = np.array(D, dtype=float)
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(D, order, 1)


def naive_normalised(d, y, normalize="minmax"):
    """Condensed normalised distances and score differences (the paper's recipe)."""
    o = pdist(np.asarray(y, dtype=float)[:, None])
    if normalize == "minmax":
        d = (d - d.min()) / (d.max() - d.min()) if d.max() > d.min() else np.zeros_like(d)
        o = (o - o.min()) / (o.max() - o.min()) if o.max() > o.min() else np.zeros_like(o)
    elif normalize == "max":
        d = d / d.max() if d.max() > 0 else np.zeros_like(d)
        o = o / o.max() if o.max() > 0 else np.zeros_like(o)
    return d, o


def naive_violations(d, y, L=1.0, normalize="minmax"):
    """All violating pairs, worst first, ties by condensed index: (v, i, j)."""
    n = len(y)
    dn, on = naive_normalised(d, y, normalize)
    v = on - (dn * L if L != 1.0 else dn)
    i, j = np.triu_indices(n, 1)
    keep = np.flatnonzero(v > 0)
    order = keep[np.lexsort((keep, -v[keep]))]
    return v[order], i[order], j[order]


def sorted_ratios(d, y, normalize="minmax"):
    dn, on = naive_normalised(d, y, normalize)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(on == 0, 0.0, on / dn)
    return np.sort(r)


@pytest.fixture
def rs():
    # legacy RandomState: randint and sp.random's random_state
    return np.random.RandomState(0)


@pytest.fixture
def data(rs):
    X = rs.normal(size=(70, 6))
    y = rs.randint(0, 7, size=70).astype(float)
    return X, y


# --------------------------------------------------------------------------
# essay_consistency
# --------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 4, 69])
def test_neighbors_equal_argsort_of_the_precomputed_matrix(data, k):
    X, y = data
    d = pdist(X, "cosine")
    result = sf.essay_consistency(d, y, n_neighbors=k, metric="precomputed", block_size=16)
    ref, ref_d = naive_neighbors(squareform(d), k)
    np.testing.assert_array_equal(result.neighbors, ref)
    np.testing.assert_array_equal(result.distances, ref_d)
    np.testing.assert_array_equal(result.neighbor_scores, y[ref])
    mean = y[ref].mean(axis=1)
    np.testing.assert_allclose(result.neighbor_mean, mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.gap, y - mean, rtol=0, atol=1e-12)
    diffs = np.abs(y[ref] - y[:, None])
    np.testing.assert_array_equal(result.max_abs_diff, diffs.max(axis=1))
    np.testing.assert_allclose(result.mean_abs_diff, diffs.mean(axis=1), atol=1e-12)
    assert result.consistency == pytest.approx(1 - np.mean(np.abs(y - mean)), abs=1e-12)


def test_neighbors_equal_sklearn_nearest_neighbors_under_the_cosine(data):
    X, y = data
    result = sf.essay_consistency(X, y, n_neighbors=5)
    nn = NearestNeighbors(n_neighbors=6, metric="cosine", algorithm="brute").fit(X)
    dist, idx = nn.kneighbors(X)
    # continuous data: no ties, and each essay is its own nearest point
    assert (idx[:, 0] == np.arange(len(X))).all()
    np.testing.assert_array_equal(result.neighbors, idx[:, 1:])
    np.testing.assert_allclose(result.distances, dist[:, 1:], rtol=0, atol=1e-12)


def test_include_self_is_aif360_consistency(data):
    X, y = data
    k = 5
    # AIF360's consistency_score: kNN on X (Euclidean), the point among its own
    # neighbours, 1 - mean |y - mean of the neighbours' y|
    _, idx = NearestNeighbors(n_neighbors=k).fit(X).kneighbors(X)
    aif360 = 1 - np.mean(np.abs(y - y[idx].mean(axis=1)))
    result = sf.essay_consistency(
        X, y, n_neighbors=k, metric="euclidean", include_self=True
    )
    np.testing.assert_array_equal(result.neighbors, idx)
    assert result.distances[:, 0].tolist() == [0.0] * len(X)
    assert result.consistency == pytest.approx(aif360, abs=1e-12)
    # excluding self: the k nearest others, the convention of the default
    other = sf.essay_consistency(X, y, n_neighbors=k - 1, metric="euclidean")
    np.testing.assert_array_equal(other.neighbors, idx[:, 1:])


def test_ties_keep_the_lower_position_and_duplicates_are_neighbours():
    # essays 0, 2 and 5 are the same vector; 1 and 4 another; 3 alone
    X = np.array([[1, 0], [0, 1], [1, 0], [1, 1], [0, 1], [1, 0]], dtype=float)
    y = np.array([2.0, 3, 2, 4, 1, 6])
    result = sf.essay_consistency(X, y, n_neighbors=2)
    assert result.neighbors.tolist() == [[2, 5], [4, 3], [0, 5], [0, 1], [1, 3], [0, 2]]
    assert result.distances[0].tolist() == [0.0, 0.0]
    # essay 5 is scored 4 points above its two duplicates: first to review
    assert result.gap[5] == 4.0 and result.review_order[0] == 5
    frame = result.to_frame()
    assert frame.index.name == "essay"
    assert frame.loc[5, "nearest_neighbor"] == 0 and frame.loc[5, "max_abs_diff"] == 4.0
    long = result.to_frame("neighbors")
    assert list(long.columns) == [
        "essay", "rank", "neighbor", "distance", "score", "neighbor_score", "abs_diff"
    ]  # fmt: skip
    assert long.shape == (12, 7)
    assert long.iloc[10:].abs_diff.tolist() == [4.0, 4.0]


def test_integer_distances_with_many_ties(rs):
    n = 40
    D = rs.randint(0, 3, size=(n, n)).astype(float)
    D = np.triu(D, 1) + np.triu(D, 1).T
    y = rs.randint(0, 4, size=n).astype(float)
    for block in (7, 2048):
        result = sf.essay_consistency(
            D, y, n_neighbors=9, metric="precomputed", block_size=block
        )
        ref, ref_d = naive_neighbors(D, 9)
        np.testing.assert_array_equal(result.neighbors, ref)
        np.testing.assert_array_equal(result.distances, ref_d)


def test_constant_scores_are_perfectly_consistent(data):
    X, _ = data
    result = sf.essay_consistency(X, np.full(len(X), 3.0), n_neighbors=3)
    assert result.consistency == 1.0
    assert not result.gap.any() and not result.max_abs_diff.any()


def test_sparse_input_equals_dense(rs):
    X = sp.random(50, 30, density=0.2, random_state=rs, format="csr")
    y = rs.normal(size=50)
    a = sf.essay_consistency(X, y, n_neighbors=4)
    b = sf.essay_consistency(X.toarray(), y, n_neighbors=4)
    np.testing.assert_array_equal(a.neighbors, b.neighbors)
    np.testing.assert_allclose(a.distances, b.distances, rtol=0, atol=1e-12)


def test_bad_numbers_of_neighbours_are_refused(data):
    X, y = data
    with pytest.raises(ValueError, match=r"n_neighbors=70 is too many for 70 essays"):
        sf.essay_consistency(X, y, n_neighbors=70)
    with pytest.raises(ValueError, match=r"use n_neighbors <= 70"):
        sf.essay_consistency(X, y, n_neighbors=71, include_self=True)
    with pytest.raises(ValueError, match="n_neighbors must be at least 1, got 0"):
        sf.essay_consistency(X, y, n_neighbors=0)
    with pytest.raises(TypeError, match="n_neighbors must be an int"):
        sf.essay_consistency(X, y, n_neighbors=2.5)
    with pytest.raises(ValueError, match="y_pred"):
        sf.essay_consistency(X, y[:-1])
    # all 70 with self counted: every essay's neighbours are all the essays
    whole = sf.essay_consistency(X, y, n_neighbors=70, include_self=True)
    assert whole.neighbor_mean == pytest.approx(np.full(70, y.mean()))


# --------------------------------------------------------------------------
# lipschitz_violations
# --------------------------------------------------------------------------
@pytest.mark.parametrize("normalize", ["minmax", "max", None])
@pytest.mark.parametrize("L", [1.0, 0.5, 3.0])
def test_violations_equal_the_naive_list(data, normalize, L):
    X, y = data
    d = pdist(X, "cosine")
    v, i, j = naive_violations(d, y, L, normalize)
    result = sf.lipschitz_violations(
        d, y, top=25, normalize=normalize, lipschitz_constant=L, metric="precomputed",
        block_size=16,
    )  # fmt: skip
    assert result.n_violations == v.size
    np.testing.assert_array_equal(result.i, i[:25])
    np.testing.assert_array_equal(result.j, j[:25])
    np.testing.assert_array_equal(result.violation, v[:25])
    np.testing.assert_array_equal(result.distance, squareform(d)[i[:25], j[:25]])
    assert result.score_i.tolist() == y[i[:25]].tolist()
    # the count is the complement of lipschitz_fraction's
    counts = sf.lipschitz_fraction(
        X, y, normalize=normalize, lipschitz_constant=L, return_counts=True
    )
    assert result.n_violations == counts.n_pairs - counts.n_satisfied
    assert result.n_pairs == counts.n_pairs


def test_violations_on_the_cosine_metric_and_their_columns(data):
    X, y = data
    result = sf.lipschitz_violations(X, y, top=10)
    v, i, j = naive_violations(pdist(X, "cosine"), y)
    np.testing.assert_array_equal(result.i, i[:10])
    np.testing.assert_array_equal(result.j, j[:10])
    np.testing.assert_allclose(result.violation, v[:10], rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        result.normalized_diff - result.normalized_distance, result.violation, atol=1e-12
    )
    frame = result.to_frame()
    assert frame.index.name == "rank" and frame.index.tolist() == list(range(1, 11))
    assert list(frame.columns) == [
        "i", "j", "distance", "normalized_distance", "score_i", "score_j", "abs_diff",
        "normalized_diff", "violation",
    ]  # fmt: skip


def test_duplicates_violate_by_their_whole_score_difference():
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    y = np.array([1.0, 4.0, 4.0, 2.0])
    result = sf.lipschitz_violations(X, y)
    # pair (0, 1): distance 0, |dy| = 3 = max -> violation 1
    assert (result.i[0], result.j[0]) == (0, 1)
    assert result.distance[0] == 0.0 and result.violation[0] == 1.0
    assert np.isfinite(result.violation).all()


def test_constant_scores_violate_nowhere(data):
    X, _ = data
    result = sf.lipschitz_violations(X, np.ones(len(X)))
    assert result.n_violations == 0 and result.i.size == 0
    assert result.to_frame().shape == (0, 9)


def test_violation_ties_keep_the_lowest_pair(rs):
    # integer distances and scores: many equal violations
    n = 30
    d = rs.randint(1, 4, size=n * (n - 1) // 2).astype(float)
    y = rs.randint(0, 3, size=n).astype(float)
    v, i, j = naive_violations(d, y)
    result = sf.lipschitz_violations(d, y, top=40, metric="precomputed", block_size=8)
    assert len(np.unique(v[:40])) < 40  # the test has ties to break
    np.testing.assert_array_equal(result.i, i[:40])
    np.testing.assert_array_equal(result.j, j[:40])


def test_bad_arguments_of_violations(data):
    X, y = data
    with pytest.raises(ValueError, match="top must be at least 1"):
        sf.lipschitz_violations(X, y, top=0)
    with pytest.raises(ValueError, match="lipschitz_constant must be positive"):
        sf.lipschitz_violations(X, y, lipschitz_constant=0)
    with pytest.raises(ValueError, match="normalize='range' is not supported"):
        sf.lipschitz_violations(X, y, normalize="range")


# --------------------------------------------------------------------------
# lipschitz_profile
# --------------------------------------------------------------------------
def test_profile_at_the_constants_equals_lipschitz_fraction(data):
    X, y = data
    constants = [0.1, 0.5, 1.0, 1.5, 7.0]
    profile = sf.lipschitz_profile(X, y, constants=constants)
    for L, fraction, count in zip(constants, profile.fraction, profile.n_satisfied):
        counts = sf.lipschitz_fraction(X, y, lipschitz_constant=L, return_counts=True)
        assert fraction == counts.fraction
        assert count == counts.n_satisfied
    assert profile.to_frame().index.tolist() == constants
    assert sf.lipschitz_profile(X, y).lipschitz_constant.tolist() == [0.25, 0.5, 1, 2, 4]


def _check_quantile_constant(X, y, q, L, metric="cosine"):
    """L is the smallest float at which at least q of the pairs satisfy."""
    at = sf.lipschitz_fraction(X, y, lipschitz_constant=L, metric=metric)
    below = sf.lipschitz_fraction(
        X, y, lipschitz_constant=float(np.nextafter(L, 0)), metric=metric
    )
    assert at >= q > below


@pytest.mark.parametrize("normalize", ["minmax", "max", None])
def test_quantile_constants_are_exact_order_statistics(data, normalize):
    X, y = data
    y = y + np.random.RandomState(1).normal(scale=0.1, size=len(y))  # continuous
    qs = (0.1, 0.5, 0.9, 0.95, 0.99)
    profile = sf.lipschitz_profile(X, y, quantiles=qs, normalize=normalize)
    r = sorted_ratios(pdist(X, "cosine"), y, normalize)
    T = len(r)
    for q, L in zip(qs, profile.quantile_constants):
        m = math.ceil(q * T)
        assert L == pytest.approx(r[m - 1], rel=1e-12)
        if normalize == "minmax":
            _check_quantile_constant(X, y, q, float(L))
    assert profile.to_frame("quantiles").lipschitz_constant.tolist() == list(
        profile.quantile_constants
    )


def test_refined_histograms_give_the_same_constants(data, monkeypatch):
    X, y = data
    qs = (0.2, 0.9, 0.95)
    expected = sf.lipschitz_profile(X, y, quantiles=qs).quantile_constants
    # no bin may be gathered: every order statistic is refined to single values
    monkeypatch.setattr(_review_stats, "_MAX_GATHER", 0)
    monkeypatch.setattr(_review_pass, "_guess_windows", lambda *args: [])
    refined = sf.lipschitz_profile(X, y, quantiles=qs).quantile_constants
    np.testing.assert_array_equal(refined, expected)
    for q, L in zip(qs, refined):
        _check_quantile_constant(X, y, q, float(L))


def test_refining_takes_one_pass_per_level_for_all_quantiles(data, monkeypatch):
    X, y = data
    y = y + np.random.RandomState(1).normal(scale=0.1, size=len(y))  # continuous
    qs = (0.2, 0.5, 0.9, 0.95, 0.99)
    expected = sorted_ratios(pdist(X, "cosine"), y, "minmax")
    monkeypatch.setattr(_review_stats, "_MAX_GATHER", 0)
    monkeypatch.setattr(_review_pass, "_guess_windows", lambda *args: [])
    levels = []

    class Counted(_keys.KeyHistogramReducer):
        def __init__(self, keys, *, shift=_keys.KEY_SHIFT, prefix=None):
            if prefix is not None:  # a refinement pass
                levels.append((prefix[1], len(prefix[0])))
            super().__init__(keys, shift=shift, prefix=prefix)

    monkeypatch.setattr(_review_stats, "KeyHistogramReducer", Counted)
    got = sf.lipschitz_profile(X, y, quantiles=qs).quantile_constants
    for q, L in zip(qs, got):
        assert L == pytest.approx(expected[math.ceil(q * len(expected)) - 1], rel=1e-12)
    # 46 -> 30 -> 14 -> 0, each level one pass for the five ranks' bins
    assert [shift for shift, _ in levels] == [46, 30, 14]
    assert levels[0][1] == 5


def test_quantiles_found_without_the_guessed_bins_are_the_same(data, monkeypatch):
    X, y = data
    qs = (0.3, 0.9, 0.99)
    expected = sf.lipschitz_profile(X, y, quantiles=qs).quantile_constants

    # the main pass finds them in the guessed windows: no pass after it
    def no_more_passes(*args):
        raise AssertionError("a quantile was not in its guessed window")

    monkeypatch.setattr(_review_pass, "_order_statistics", no_more_passes)
    np.testing.assert_array_equal(
        sf.lipschitz_profile(X, y, quantiles=qs).quantile_constants, expected
    )
    monkeypatch.undo()
    # the guess misses every quantile: each is found by a gathering pass
    monkeypatch.setattr(_review_pass, "_guess_windows", lambda *args: [])
    np.testing.assert_array_equal(
        sf.lipschitz_profile(X, y, quantiles=qs).quantile_constants, expected
    )
    # the guessed windows overflow their cap: the same
    monkeypatch.undo()
    monkeypatch.setattr(_review_pass, "_MAX_GUESSED", 1)
    np.testing.assert_array_equal(
        sf.lipschitz_profile(X, y, quantiles=qs).quantile_constants, expected
    )
    for q, L in zip(qs, expected):
        _check_quantile_constant(X, y, q, float(L))


def test_curve_points_are_exact_fractions(data):
    X, y = data
    profile = sf.lipschitz_profile(X, y)
    assert np.all(np.diff(profile.curve_constant) > 0)
    assert np.all(np.diff(profile.curve_fraction) > 0)
    picks = np.linspace(0, profile.curve_constant.size - 1, 6).astype(int)
    for p in picks:
        L = float(profile.curve_constant[p])
        assert profile.curve_fraction[p] == sf.lipschitz_fraction(
            X, y, lipschitz_constant=L
        )
    # adjacent bins are about 1.1% apart: the curve resolves L finely
    ratios = profile.curve_constant[1:] / profile.curve_constant[:-1]
    assert ratios.min() >= 1.0 and np.median(ratios) < 1.05
    assert profile.to_frame("curve").shape == (profile.curve_constant.size, 1)


def test_duplicates_with_different_scores_need_an_infinite_constant():
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, 3.0, 1.0])
    # pairs: (0,1) duplicates, |dy| 2 -> never; (0,2) no difference -> always;
    # (1,2) far apart, max difference -> L = 1
    profile = sf.lipschitz_profile(X, y, constants=[1.0, 100.0], quantiles=[0.3, 0.6, 1.0])
    assert profile.n_never == 1 and profile.n_always == 1
    assert profile.quantile_constants.tolist() == [0.0, 1.0, math.inf]
    assert profile.fraction.tolist() == [2 / 3, 2 / 3]


def test_constant_scores_have_constant_zero(data):
    X, _ = data
    profile = sf.lipschitz_profile(X, np.full(len(X), 2.0))
    assert profile.quantile_constants.tolist() == [0.0, 0.0, 0.0]
    assert profile.fraction.tolist() == [1.0] * 5
    assert profile.curve_constant.size == 0


def test_equal_distances_warn_as_lipschitz_fraction_does():
    X = np.eye(4)  # every cosine distance is 1
    y = np.array([0.0, 1.0, 2.0, 3.0])
    with pytest.warns(UndefinedMetricWarning, match="same distance"):
        profile = sf.lipschitz_profile(X, y)
    with pytest.warns(UndefinedMetricWarning, match="same distance"):
        expected = sf.lipschitz_fraction(X, y)
    assert profile.fraction[2] == expected


def test_bad_arguments_of_the_profile(data):
    X, y = data
    with pytest.raises(ValueError, match=r"quantiles must be shares of pairs in \(0, 1\]"):
        sf.lipschitz_profile(X, y, quantiles=[95])
    with pytest.raises(ValueError, match="constants must be positive"):
        sf.lipschitz_profile(X, y, constants=[1.0, -1.0])
    with pytest.raises(ValueError, match="constants must be a non-empty"):
        sf.lipschitz_profile(X, y, constants=[])


def test_critical_constant_is_the_smallest_satisfying_float(rs):
    o = np.abs(rs.normal(size=5000))
    d = np.abs(rs.normal(size=5000)) * 10.0 ** rs.randint(-3, 3, size=5000)
    c = _critical_constants(o.copy(), d.copy())
    assert np.all(o <= c * d)
    smaller = np.nextafter(c, 0)
    assert not np.any(o <= smaller * d)
    # 0/0 and d = 0 with a difference
    c = _critical_constants(np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 2.0]))
    assert c.tolist() == [0.0, math.inf, 0.0]


# --------------------------------------------------------------------------
# all three: parallelism, one pass, sparse, property tests
# --------------------------------------------------------------------------
def test_results_do_not_depend_on_n_jobs(rs):
    X = rs.normal(size=(120, 5))
    y = rs.randint(0, 5, size=120).astype(float)
    kw = dict(block_size=16)
    one = _review_all(X, y, n_neighbors=6, top=30, n_jobs=1, **kw)
    two = _review_all(X, y, n_neighbors=6, top=30, n_jobs=2, **kw)
    for a, b in zip(one["neighbors"], two["neighbors"]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(one["violations"][0], two["violations"][0]):
        np.testing.assert_array_equal(a, b)
    assert one["violations"][1] == two["violations"][1]
    np.testing.assert_array_equal(one["histogram"], two["histogram"])
    np.testing.assert_array_equal(one["counts"], two["counts"])
    assert one["quantile_constants"] == two["quantile_constants"]
    # threads share the reducers (and their per-block cache): the same again
    with joblib.parallel_config(backend="threading", n_jobs=2):
        threads = _review_all(X, y, n_neighbors=6, top=30, **kw)
    for a, b in zip(one["neighbors"], threads["neighbors"]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(one["violations"][0], threads["violations"][0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(one["histogram"], threads["histogram"])
    np.testing.assert_array_equal(one["counts"], threads["counts"])
    assert one["quantile_constants"] == threads["quantile_constants"]
    # the public functions give the same values as the shared pass
    c = sf.essay_consistency(X, y, n_neighbors=6, n_jobs=2, **kw)
    np.testing.assert_array_equal(c.neighbors, one["neighbors"][1])
    p = sf.lipschitz_profile(X, y, n_jobs=2, **kw)
    assert p.quantile_constants.tolist() == one["quantile_constants"]


def test_sparse_tfidf_of_real_essays(asap7):
    from sklearn.feature_extraction.text import TfidfVectorizer

    essays = list(asap7["essay"].iloc[:300])
    y = asap7["domain1_score"].iloc[:300].astype(float).to_numpy()
    X = TfidfVectorizer().fit_transform(essays)
    result = sf.essay_consistency(X, y, n_neighbors=5, block_size=64)
    nn = NearestNeighbors(n_neighbors=6, metric="cosine", algorithm="brute")
    dist, _ = nn.fit(X).kneighbors(X)
    np.testing.assert_allclose(result.distances, dist[:, 1:], rtol=0, atol=1e-10)
    d = pdist(X.toarray(), "cosine")
    v, i, j = naive_violations(d, y)
    worst = sf.lipschitz_violations(X, y, top=20)
    np.testing.assert_allclose(worst.violation, v[:20], rtol=0, atol=1e-12)
    profile = sf.lipschitz_profile(X, y, constants=[1.0])
    assert profile.fraction[0] == sf.lipschitz_fraction(X, y)


def test_scorers_equal_the_metrics(rs):
    X = rs.normal(size=(60, 4))
    y = X[:, 0] * 2 + rs.normal(size=60)
    model = Ridge().fit(X, y)
    p = model.predict(X)
    assert sf.get_scorer("consistency").kind == "fairness"
    assert (
        sf.get_scorer("consistency")(model, X, y) == sf.essay_consistency(X, p).consistency
    )
    constant = sf.lipschitz_profile(X, p, quantiles=[0.95]).quantile_constants[0]
    assert sf.get_scorer("neg_lipschitz_constant_95")(model, X, y) == -constant
    scorer = sf.make_fairness_scorer("neg_lipschitz_constant_95", normalize="max")
    constant = sf.lipschitz_profile(X, p, quantiles=[0.95], normalize="max")
    assert scorer(model, X, y) == -constant.quantile_constants[0]
    scorer = sf.make_fairness_scorer("consistency", n_neighbors=3, include_self=True)
    assert (
        scorer(model, X, y)
        == sf.essay_consistency(X, p, n_neighbors=3, include_self=True).consistency
    )
    with pytest.raises(ValueError, match="use 'neg_lipschitz_constant_95'"):
        sf.get_scorer("lipschitz_constant_95")
    with pytest.raises(TypeError, match="unexpected keyword"):
        sf.make_fairness_scorer("neg_lipschitz_constant_95", quantiles=[0.9])


@given(
    n=st.integers(3, 14),
    k=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    L=st.sampled_from([0.5, 1.0, 2.0]),
    block=st.sampled_from([1, 2, 3, 5, 2048]),
)
def test_property_all_three_against_naive_loops(n, k, seed, L, block):
    rs = np.random.RandomState(seed)
    k = min(k, n - 1)
    # small integer distances and scores: ties and duplicates everywhere
    d = rs.randint(0, 4, size=n * (n - 1) // 2).astype(float)
    if d.max() == d.min():
        d[0] += 1
    y = rs.randint(0, 4, size=n).astype(float)
    D = squareform(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        c = sf.essay_consistency(
            D, y, n_neighbors=k, metric="precomputed", block_size=block
        )
        worst = sf.lipschitz_violations(
            d, y, top=5, lipschitz_constant=L, metric="precomputed", block_size=block
        )
        profile = sf.lipschitz_profile(
            d, y, constants=[L], quantiles=[0.5, 0.9, 1.0], metric="precomputed",
            block_size=block,
        )  # fmt: skip
        fraction = sf.lipschitz_fraction(d, y, lipschitz_constant=L, metric="precomputed")
    # neighbours: an explicit loop over each row, stable by position
    for i in range(n):
        others = sorted((D[i, j], j) for j in range(n) if j != i)[:k]
        assert c.neighbors[i].tolist() == [j for _, j in others]
    v, i, j = naive_violations(d, y, L)
    assert worst.i.tolist() == i[:5].tolist() and worst.j.tolist() == j[:5].tolist()
    assert worst.n_violations == v.size
    assert profile.fraction[0] == fraction
    r = sorted_ratios(d, y)
    for q, constant in zip([0.5, 0.9, 1.0], profile.quantile_constants):
        m = math.ceil(q * len(r))
        assert constant == pytest.approx(r[m - 1], rel=1e-12) or constant == r[m - 1]


def test_counts_equal_lipschitz_fraction_on_its_float32_screened_path(rs):
    # dense cosine input too large to cache: lipschitz_fraction screens pairs
    # in float32 and settles the undecided ones pair by pair; the review
    # metrics use float64 blocks, and the counts agree
    X = rs.normal(size=(4000, 4))
    y = rs.randint(0, 6, size=4000).astype(float)
    assert PairwiseEngine(X).screenable
    profile = sf.lipschitz_profile(X, y, constants=[0.5, 1.0], quantiles=[0.95])
    for L, count in zip([0.5, 1.0], profile.n_satisfied):
        expected = sf.lipschitz_fraction(X, y, lipschitz_constant=L, return_counts=True)
        assert count == expected.n_satisfied
    worst = sf.lipschitz_violations(X, y, top=3)
    assert worst.n_pairs - worst.n_violations == profile.n_satisfied[1]
    _check_quantile_constant(X, y, 0.95, float(profile.quantile_constants[0]))


@pytest.mark.parametrize("kind", ["dense", "sparse", "precomputed"])
def test_review_results_equal_the_three_functions(rs, kind):
    # the audit's one shared pass gives what the public functions give one by one
    X = rs.normal(size=(90, 6))
    y = rs.randint(0, 6, size=90).astype(float)
    metric = "cosine"
    if kind == "sparse":
        X = sp.random(90, 40, density=0.2, format="csr", random_state=rs)
    elif kind == "precomputed":
        X, metric = pdist(X, "cosine"), "precomputed"
    kw = dict(metric=metric, block_size=16)
    ec, lv, lp = _review._review_results(X, y, n_neighbors=4, top=12, **kw)
    ref_ec = sf.essay_consistency(X, y, n_neighbors=4, **kw)
    ref_lv = sf.lipschitz_violations(X, y, top=12, **kw)
    ref_lp = sf.lipschitz_profile(X, y, **kw)
    for got, ref in [(ec, ref_ec), (lv, ref_lv), (lp, ref_lp)]:
        assert sorted(got) == sorted(ref)
        for key in ref:
            np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(ref[key]))
