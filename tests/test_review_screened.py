"""The review metrics' passes of large dense cosine problems (issue 17).

On problems too large to cache, ``_review`` makes one pass over float32
similarity blocks (``_ScreenedReview``: the screen of ``lipschitz_fraction``)
and settles exactly, pair by pair, what float32 cannot decide; a problem
outside the screen's error bounds gets one fused pass over float64 distance
blocks (``_FusedReview``) instead. The tests force these paths at small N (no
cache, as the float32-screening tests of ``lipschitz_fraction`` do) and check
them

* against the separate reducers on the same engine (the path of small, sparse
  and precomputed problems): the same neighbours, violations, counts and
  quantile constants (distances and constants to the last bits: the exact
  values come from dot products pair by pair there, from matrix products
  here), the histogram exact on the float64 path and within one bin of it on
  the screened one (its documented bound),
* against independent references: ``pdist``/``squareform`` with a stable
  ``argsort`` for the neighbours, explicit lists of violations, and
  ``lipschitz_fraction`` (on its own float32-screened path) for the counts,
* the compiled kernel (numba, the ``fast`` extra) against the NumPy strips,
  bit for bit,

on data with exact ties in distance (one-hot rows: every distance is exactly
0 or 1), duplicate essays, ties at the top-k cut and at a constant, constant
scores and scores scaled by 1e-300 and 1e300, with one and two joblib workers.
"""

import collections
import math
import warnings

import joblib
import numpy as np
import pytest
from conftest import require_module
from scipy.spatial.distance import pdist, squareform

import sklearn_fairaes as sf
from sklearn_fairaes.exceptions import UndefinedMetricWarning
from sklearn_fairaes.metrics._pairs import (
    _blocks,
    _engine,
    _keys,
    _review_fused,
    _review_pass,
    _review_screened,
    _review_stats,
)
from sklearn_fairaes.metrics._review import _review_all


@pytest.fixture
def large(monkeypatch):
    """Every dense cosine problem is 'too large to cache'; counts the blocks of each pass."""
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_engine, "_SCREEN_CACHE_BYTES", 0)
    monkeypatch.setattr(_blocks, "_TASK_PAIRS", 3000)  # many chunks for the workers
    calls = collections.Counter()
    for cls, name in (
        (_review_screened._ScreenedReview, "screened"),
        (_review_fused._FusedReview, "fused"),
    ):
        real = cls.map

        def counted(self, block, _real=real, _name=name):
            calls[_name] += 1
            return _real(self, block)

        monkeypatch.setattr(cls, "map", counted)
    return calls


@pytest.fixture(params=["kernel", "strips"])
def per_pair(request, monkeypatch):
    """Both implementations of the screened pass's per-pair work."""
    if request.param == "kernel":
        require_module("numba", "fast")
        assert _review_screened.kernel() is not None
    else:
        monkeypatch.setattr(_review_screened, "USE_KERNEL", False)
    return request.param


def separate(monkeypatch, X, y, **kw):
    """``_review_all`` through the separate reducers, on the same engine settings."""
    with monkeypatch.context() as m:
        m.setattr(_review_pass, "_fused", lambda engine: False)
        return _review_all(X, y, **kw)


def float64_pass(monkeypatch, X, y, **kw):
    """``_review_all`` through the fused float64 pass (the screen refused)."""
    with monkeypatch.context() as m:
        m.setattr(_review_screened, "screened_setup", lambda *args: None)
        return _review_all(X, y, **kw)


def assert_histograms_agree(got, ref, exact):
    """Equal, or (screened) every pair within one coarse bin of its exact one."""
    got, ref = np.asarray(got), np.asarray(ref)
    if exact:
        np.testing.assert_array_equal(got, ref)
        return
    assert got.sum() == ref.sum()
    cg, cr = np.cumsum(got), np.cumsum(ref)
    # fraction at or below bin k: between the exact ones at bins k - 1 and k + 1
    assert np.all(cg[1:] >= cr[:-1]) and np.all(cg[:-1] <= cr[1:])
    assert got[-1] == ref[-1]  # +inf: the duplicates scored apart, settled exactly


def assert_same(a, b, exact_histogram=False, rtol=1e-12):
    """Two results of ``_review_all`` agree: equal indices and counts; distances,
    violations and constants to ``rtol`` (they come from different float64
    dot products); histograms as :func:`assert_histograms_agree`."""
    assert sorted(a) == sorted(b)
    for key in a:
        x, z = a[key], b[key]
        if key == "neighbors":
            np.testing.assert_array_equal(x[1], z[1])
            np.testing.assert_allclose(x[0], z[0], rtol=rtol, atol=1e-15)
        elif key == "violations":
            np.testing.assert_allclose(x[0][0], z[0][0], rtol=rtol, atol=1e-15)
            np.testing.assert_array_equal(x[0][1], z[0][1])
            np.testing.assert_array_equal(x[0][2], z[0][2])
            assert x[1] == z[1]
        elif key == "counts":
            np.testing.assert_array_equal(x, z)
        elif key == "histogram":
            assert_histograms_agree(x, z, exact_histogram)
        elif key == "quantile_constants":
            np.testing.assert_allclose(x, z, rtol=rtol, atol=0)
        else:
            assert x == z, key


def assert_identical(a, b):
    """Two results of ``_review_all`` are identical, bit for bit."""
    assert sorted(a) == sorted(b)
    for key in a:
        x, z = a[key], b[key]
        if key == "neighbors":
            for p, r in zip(x, z):
                np.testing.assert_array_equal(p, r)
        elif key == "violations":
            for p, r in zip(x[0], z[0]):
                np.testing.assert_array_equal(p, r)
            assert x[1] == z[1]
        elif key in ("histogram", "counts"):
            np.testing.assert_array_equal(x, z)
        else:
            assert x == z, key


def one_hot(n, n_features, rs, n_dup=0):
    """Rows that are unit vectors of the axes: all distances exactly 0 or 1."""
    X = np.zeros((n, n_features))
    X[np.arange(n), rs.randint(0, n_features, size=n)] = 1.0
    return X


@pytest.fixture
def rs():
    return np.random.RandomState(0)


def gauss(rs, n=150, dim=7):
    X = rs.normal(size=(n, dim))
    X[7] = X[3]  # duplicates: distance 0
    X[40] = 2.5 * X[3]  # parallel: distance 0 too
    y = rs.randint(0, 7, size=n).astype(float)
    return X, y


# --------------------------------------------------------------------------
# the fused pass equals the separate reducers
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw",
    [
        dict(n_neighbors=5, top=40),
        dict(n_neighbors=1, top=1, lipschitz_constant=0.7, constants=[0.3, 0.7, 2.0]),
        # (a 10% quantile is 0: 1 in 7 pairs have equal scores, and a window
        # that reaches 0 is refused by the screen, see test_fused_pass_...)
        dict(normalize="max", quantiles=(0.3, 0.5, 0.99)),
        dict(normalize=None, top=7, lipschitz_constant=3.0),
    ],
)
@pytest.mark.parametrize("block_size", [16, 37, 2048])
def test_screened_pass_equals_the_separate_reducers(
    large, per_pair, monkeypatch, rs, kw, block_size
):
    X, y = gauss(rs)
    assert _engine.PairwiseEngine(X).screenable
    got = _review_all(X, y, block_size=block_size, **kw)
    assert large["screened"] and not large["fused"], "the screened pass was not used"
    assert_same(got, separate(monkeypatch, X, y, block_size=block_size, **kw))


@pytest.mark.parametrize("block_size", [16, 37, 2048])
def test_fused_pass_equals_the_separate_reducers(large, monkeypatch, rs, block_size):
    # the float64 pass of the problems the screen refuses: bit for bit
    X, y = gauss(rs)
    kw = dict(n_neighbors=5, top=40, constants=[0.3, 0.7, 2.0], block_size=block_size)
    got = float64_pass(monkeypatch, X, y, **kw)
    assert large["fused"] and not large["screened"]
    assert_identical(got, separate(monkeypatch, X, y, **kw))
    # a quantile constant of 0 (1 in 7 pairs have equal scores), on this pass
    large.clear()
    kw = dict(quantiles=(0.1, 0.5), block_size=block_size)
    got = float64_pass(monkeypatch, X, y, **kw)
    assert large["fused"] and not large["screened"] and got["quantile_constants"][0] == 0
    assert_identical(got, separate(monkeypatch, X, y, **kw))


@pytest.mark.parametrize("normalize", ["minmax", "max", None])
def test_quantiles_among_the_pairs_of_equal_scores(
    large, per_pair, monkeypatch, rs, normalize
):
    # A quantile among the pairs of equal scores is 0: it needs no window, and
    # a window reaching 0 (a threshold within the score error of 0) would send
    # the problem to the float64 pass. Integer scores, low quantiles.
    X, y = gauss(rs, n=160)
    y = np.minimum(y, 3)  # 0..3: nearly 4 in 10 pairs have equal scores
    n_equal = sum(c * (c - 1) // 2 for c in collections.Counter(y).values())
    T = 160 * 159 // 2
    assert 0.3 < n_equal / T < 0.45
    kw = dict(quantiles=(0.1, 0.3, 0.45, 0.5, 0.9), normalize=normalize, block_size=32)
    with monkeypatch.context() as m:
        m.setattr(_review_pass, "_order_statistics", None)  # no pass after the main one
        got = _review_all(X, y, **kw)
    assert large["screened"] and not large["fused"]
    d = pdist(X, "cosine")
    o = pdist(y[:, None])
    if normalize == "minmax":
        d, o = (d - d.min()) / (d.max() - d.min()), (o - o.min()) / (o.max() - o.min())
    elif normalize == "max":
        d, o = d / d.max(), o / o.max()
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(o <= 0, 0.0, o / d)
    c = np.sort(c)
    for q, L in zip(kw["quantiles"], got["quantile_constants"]):
        m = math.ceil(q * T)
        if m <= n_equal:
            assert L == 0.0
        else:
            assert L == pytest.approx(c[m - 1], rel=1e-12)
    assert_same(got, separate(monkeypatch, X, y, **kw))


@pytest.mark.parametrize(
    "kw",
    [
        dict(n_neighbors=5, top=40),
        dict(n_neighbors=7, top=3, lipschitz_constant=0.7, constants=[0.3, 0.7, 0.71, 2.0]),
        dict(normalize="max", quantiles=(0.1, 0.5, 0.99), top=500),
        dict(normalize=None, n_neighbors=1, top=7, lipschitz_constant=3.0),
    ],
)
def test_kernel_equals_the_numpy_strips(large, monkeypatch, rs, kw):
    # the same candidates, so the same results, bit for bit; small buffers make
    # the kernel grow them (a block run again) and prune its tail candidates
    require_module("numba", "fast")
    X, y = gauss(rs, n=300)
    y = y + rs.normal(scale=0.05, size=y.size)
    for block_size in (16, 64, 300):
        with monkeypatch.context() as m:
            m.setattr(_review_screened, "USE_KERNEL", False)
            strips = _review_all(X, y, block_size=block_size, **kw)
        assert_identical(_review_all(X, y, block_size=block_size, **kw), strips)
        with monkeypatch.context() as m:
            m.setattr(_review_screened, "_KERNEL_CAPACITY", 8)
            assert_identical(_review_all(X, y, block_size=block_size, **kw), strips)
    assert large["screened"] and not large["fused"]


@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e300])
@pytest.mark.parametrize("normalize", ["minmax", "max", None])
def test_scores_of_any_scale(large, per_pair, monkeypatch, rs, scale, normalize):
    X, y = gauss(rs, n=90)
    y = (y + rs.normal(scale=0.01, size=y.size)) * scale  # continuous, tiny or huge
    kw = dict(block_size=20, n_neighbors=3, top=25, normalize=normalize)
    got = _review_all(X, y, **kw)
    # unnormalised scores of 1e300 (beyond float32) or 1e-300 (constants of
    # 1e-300, within the float32 score error of 0) are refused by the screen
    assert large["screened" if scale == 1.0 or normalize else "fused"]
    assert_same(got, separate(monkeypatch, X, y, **kw))
    assert all(math.isfinite(c) for c in got["quantile_constants"])
    # the counts at the constants are lipschitz_fraction's (float32-screened)
    for L, count in zip(_review_stats.DEFAULT_CONSTANTS, got["counts"][1:]):
        expected = sf.lipschitz_fraction(
            X, y, normalize=normalize, lipschitz_constant=L, block_size=20,
            return_counts=True,
        )  # fmt: skip
        assert count == expected.n_satisfied


def test_constant_scores(large, monkeypatch, rs):
    X, _ = gauss(rs, n=80)
    y = np.full(80, 3.0)
    kw = dict(block_size=16, n_neighbors=4, top=10)
    got = _review_all(X, y, **kw)
    assert large["fused"]  # no score range to normalise by: the float64 pass
    assert_identical(got, separate(monkeypatch, X, y, **kw))
    n_pairs = 80 * 79 // 2
    assert got["violations"][1] == 0 and got["violations"][0][0].size == 0
    assert got["counts"].tolist() == [n_pairs] * 6
    assert got["quantile_constants"] == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------
# exact ties everywhere: one-hot rows
# --------------------------------------------------------------------------
@pytest.mark.parametrize("normalize", ["minmax", None])
def test_ties_at_the_cut_and_at_the_constants(large, per_pair, monkeypatch, rs, normalize):
    # 120 rows on 6 axes: ~20 duplicates of each (distance 0) and ~100 essays
    # at exactly distance 1; scores 0..2 so that o = L * d exactly at L = 1, 2
    n = 120
    X = one_hot(n, 6, rs)
    y = rs.randint(0, 3, size=n).astype(float)
    kw = dict(block_size=16, n_neighbors=25, top=60, normalize=normalize,
              constants=[0.5, 1.0, 2.0], lipschitz_constant=1.0)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = _review_all(X, y, **kw)
    assert large["screened"]
    assert_same(got, separate(monkeypatch, X, y, **kw))
    # neighbours: a stable argsort of each row of pdist's matrix (exact here)
    D = squareform(pdist(X, "cosine"))
    assert set(np.unique(D)) == {0.0, 1.0}
    np.fill_diagonal(D, np.inf)
    ref = np.argsort(D, axis=1, kind="stable")[:, :25]
    np.testing.assert_array_equal(got["neighbors"][1], ref)
    np.testing.assert_array_equal(got["neighbors"][0], np.take_along_axis(D, ref, 1))
    # counts at the constants: explicit loops over the pairs
    d = pdist(X, "cosine")
    o = pdist(y[:, None])
    if normalize == "minmax":
        d = (d - d.min()) / (d.max() - d.min())
        o = (o - o.min()) / (o.max() - o.min())
    for L, count in zip([0.5, 1.0, 2.0], got["counts"][1:]):
        assert count == sum(1 for a, b in zip(o, d) if a <= L * b)
    assert got["counts"][0] == np.count_nonzero(o == 0)
    # violations: o - d, ties by the pair index (condensed order)
    v = o - d
    keep = np.flatnonzero(v > 0)
    order = keep[np.lexsort((keep, -v[keep]))][:60]
    i, j = np.triu_indices(n, 1)
    (gv, gi, gj), count = got["violations"]
    assert count == keep.size
    np.testing.assert_array_equal(gv, v[order])
    np.testing.assert_array_equal(gi, i[order])
    np.testing.assert_array_equal(gj, j[order])


def test_duplicates_are_nearest_and_never_satisfied(large, per_pair, monkeypatch, rs):
    X, y = gauss(rs, n=100)
    y[7] = y[3] + 4  # a duplicate pair scored apart: an infinite constant
    kw = dict(block_size=16, n_neighbors=2, top=5, quantiles=(0.5, 1.0))
    got = _review_all(X, y, **kw)
    assert large["screened"]
    assert_same(got, separate(monkeypatch, X, y, **kw))
    dist, nbr = got["neighbors"]
    assert dist[3, :2].tolist() == [0.0, 0.0] and set(nbr[3, :2]) == {7, 40}
    (v, i, j), _ = got["violations"]
    # the worst pair: two of the duplicates 3, 7, 40, by their whole normalised
    # score difference (distance 0, no division)
    assert (int(i[0]), int(j[0])) in {(3, 7), (3, 40), (7, 40)}
    span = y.max() - y.min()
    assert v[0] == max(abs(y[a] - y[b]) for a, b in [(3, 7), (3, 40), (7, 40)]) / span
    assert got["histogram"][-1] >= 1  # the bin of +inf
    assert got["quantile_constants"][1] == math.inf


# --------------------------------------------------------------------------
# against references on continuous data
# --------------------------------------------------------------------------
def test_public_functions_against_pdist(large, rs):
    X = rs.normal(size=(200, 9))
    y = np.round(rs.normal(10, 3, size=200))
    c = sf.essay_consistency(X, y, n_neighbors=6, block_size=32)
    assert large["fused"]  # neighbours alone: no score scaling, the float64 pass
    D = squareform(pdist(X, "cosine"))
    np.fill_diagonal(D, np.inf)
    ref = np.argsort(D, axis=1, kind="stable")[:, :6]
    np.testing.assert_array_equal(c.neighbors, ref)
    np.testing.assert_allclose(c.distances, np.take_along_axis(D, ref, 1), atol=1e-13)
    worst = sf.lipschitz_violations(X, y, top=30, block_size=32)
    assert large["screened"]
    d = pdist(X, "cosine")
    dn = (d - d.min()) / (d.max() - d.min())
    o = pdist(y[:, None])
    on = o / o.max()
    v = on - dn
    keep = np.flatnonzero(v > 0)
    order = keep[np.argsort(-v[keep], kind="stable")][:30]
    i, j = np.triu_indices(200, 1)
    assert worst.i.tolist() == i[order].tolist() and worst.j.tolist() == j[order].tolist()
    np.testing.assert_allclose(worst.violation, v[order], atol=1e-12)
    assert worst.n_violations == keep.size
    profile = sf.lipschitz_profile(X, y, constants=[0.5, 1.0], block_size=32)
    for L, count in zip([0.5, 1.0], profile.n_satisfied):
        assert (
            count
            == sf.lipschitz_fraction(
                X, y, lipschitz_constant=L, block_size=32, return_counts=True
            ).n_satisfied
        )


def test_quantiles_outside_the_guessed_windows(large, monkeypatch, rs):
    X, y = gauss(rs, n=120)
    y = y + rs.normal(scale=0.1, size=y.size)
    kw = dict(block_size=16, quantiles=(0.2, 0.9, 0.95))
    expected = separate(monkeypatch, X, y, **kw)["quantile_constants"]

    def check(got):
        np.testing.assert_allclose(got["quantile_constants"], expected, rtol=1e-12, atol=0)

    # the guessed windows: the screened pass finds them, no pass after it
    with monkeypatch.context() as m:
        m.setattr(_review_pass, "_order_statistics", None)  # called: a TypeError
        check(_review_all(X, y, **kw))
    # windows that miss: found by the exact passes after the main one
    with monkeypatch.context() as m:
        m.setattr(
            _review_pass, "_guess_windows", lambda engine, stats, q: [(0, 1)] * len(q)
        )
        check(_review_all(X, y, **kw))
    # windows too full to keep (screened) or gather (float64): the same
    with monkeypatch.context() as m:
        m.setattr(_review_screened, "_MAX_WINDOW", 1)
        check(_review_all(X, y, **kw))
    with monkeypatch.context() as m:
        m.setattr(_review_pass, "_MAX_GUESSED", 1)
        check(float64_pass(monkeypatch, X, y, **kw))
    # no window at all (the float64 pass)
    with monkeypatch.context() as m:
        m.setattr(_review_pass, "_guess_windows", lambda *args: [])
        check(float64_pass(monkeypatch, X, y, **kw))
    assert large["screened"] and large["fused"]


def test_large_problems_draw_a_sample_that_keeps_the_windows(large, monkeypatch, rs):
    # At N = 100,000 the default sample gave windows too full to keep and each
    # quantile cost float64 passes after the main one; the sample now grows with
    # the pairs. Here the caps are shrunk to make 600 essays "large".
    X, y = gauss(rs, n=600, dim=12)
    y = y + rs.normal(scale=0.1, size=y.size)
    kw = dict(block_size=64, quantiles=(0.9, 0.95, 0.99))
    expected = separate(monkeypatch, X, y, **kw)["quantile_constants"]
    monkeypatch.setattr(_review_screened, "_MAX_WINDOW", 8000)
    calls = []
    real = _review_pass._order_statistics

    def counted(*args):
        calls.append(args[-1])
        return real(*args)

    monkeypatch.setattr(_review_pass, "_order_statistics", counted)
    # the sample of small problems (1,024 pairs): windows of ~17,000 pairs
    with monkeypatch.context() as m:
        m.setattr(_review_stats, "_WINDOW_PAIRS", 2**40)
        got = _review_all(X, y, **kw)
    np.testing.assert_allclose(got["quantile_constants"], expected, rtol=1e-12, atol=0)
    assert calls, "the control: the windows should have been too full"
    calls.clear()
    monkeypatch.setattr(_review_stats, "_WINDOW_PAIRS", 2000)
    assert _review_stats._n_guess(X.shape[0] * 599 // 2, kw["quantiles"]) > 10 * 1024
    got = _review_all(X, y, **kw)
    np.testing.assert_allclose(got["quantile_constants"], expected, rtol=1e-12, atol=0)
    assert calls == []  # all three found in the screened pass
    assert large["screened"]


def test_too_many_pairs_to_settle_fall_back(large, monkeypatch, rs):
    X, y = gauss(rs, n=120)
    kw = dict(block_size=16, n_neighbors=3, top=10, quantiles=(0.5,))
    monkeypatch.setattr(
        _review_screened, "_MAX_SETTLED", 0
    )  # the duplicates alone exceed it
    got = _review_all(X, y, **kw)
    assert large["screened"] and large["fused"]  # begun screened, done in float64
    assert_identical(got, separate(monkeypatch, X, y, **kw))


@pytest.mark.parametrize("constants", [[1e-9, 1.0], [0.5, 1e300]])
def test_constants_the_screen_cannot_take(large, monkeypatch, rs, constants):
    # a constant within the score error of 0 (its zone would reach the pairs of
    # equal scores): the float64 pass, the same results
    X, y = gauss(rs, n=90)
    y = y + rs.normal(scale=1e-3, size=y.size)
    kw = dict(block_size=16, constants=constants, top=5)
    got = _review_all(X, y, **kw)
    if constants[0] < 1e-6:
        assert large["fused"] and not large["screened"]
    assert_same(
        got, separate(monkeypatch, X, y, **kw), exact_histogram=bool(large["fused"])
    )


# --------------------------------------------------------------------------
# parallelism
# --------------------------------------------------------------------------
def test_the_same_with_two_workers_and_threads(large, monkeypatch, rs):
    X, y = gauss(rs, n=160)
    kw = dict(block_size=16, n_neighbors=6, top=30, quantiles=(0.5, 0.9))
    one = _review_all(X, y, n_jobs=1, **kw)
    assert large["screened"]
    assert_same(one, separate(monkeypatch, X, y, n_jobs=1, **kw))
    assert_identical(one, _review_all(X, y, n_jobs=2, **kw))
    with joblib.parallel_config(backend="threading", n_jobs=2):
        assert_identical(one, _review_all(X, y, **kw))


# --------------------------------------------------------------------------
# cases built to sit on the decisions' edges
# --------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 3, 6])
def test_ties_at_the_first_thresholds(large, per_pair, monkeypatch, rs, k):
    # blocks wide enough for the first threshold of each essay (the largest of
    # k minima over groups of columns); with one-hot rows it is exactly 0 or 1,
    # so pairs at exactly that distance decide the neighbours
    # 300 rows on 150 axes: about 2 duplicates each, fewer than k = 3 or 6, so
    # the nearest others include pairs at exactly distance 1, lowest first
    X = one_hot(300, 150, rs)
    y = rs.randint(0, 3, size=300).astype(float)
    got = _review_all(X, y, n_neighbors=k, block_size=64)
    assert large["screened"]
    assert_same(got, separate(monkeypatch, X, y, n_neighbors=k, block_size=64))
    D = squareform(pdist(X, "cosine"))
    np.fill_diagonal(D, np.inf)
    ref = np.argsort(D, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(got["neighbors"][1], ref)


@pytest.mark.parametrize("normalize", ["minmax", None])
def test_violations_at_the_bound_of_their_bins(large, per_pair, monkeypatch, rs, normalize):
    # binary scores: every differing pair has the largest score difference, so
    # the lower bound of the critical constant of a pair that can still enter
    # the top violations (L * o_max / (o_max - tau)) is attained by the pairs at
    # the running threshold tau. Rows e_a and e_a + e_(a+1) (a = 0..149) have
    # distances 1 - 1/sqrt(2), 1/2 and 1 only, so many pairs tie at tau, in
    # blocks that come after the first ones but hold pairs of lower index.
    K = 150
    X = np.zeros((2 * K, K + 1))
    X[np.arange(K), np.arange(K)] = 1.0
    X[K + np.arange(K), np.arange(K)] = 1.0
    X[K + np.arange(K), np.arange(K) + 1] = 1.0
    X = X[rs.permutation(2 * K)]
    y = rs.randint(0, 2, size=2 * K).astype(float)
    d = pdist(X, "cosine")
    if normalize == "minmax":
        d = (d - d.min()) / (d.max() - d.min())
    v = pdist(y[:, None]) - d
    best = v[v < 0.99].max()
    tied = np.isclose(v, best, rtol=0, atol=1e-12)
    n_first = np.count_nonzero(v > best + 1e-9)
    assert tied.sum() > 30
    for top in (1, 3, 10, 50, n_first + 1, n_first + tied.sum() // 2, 400):
        kw = dict(block_size=32, top=int(top), normalize=normalize)
        got = _review_all(X, y, **kw)
        assert large["screened"]
        assert_same(got, separate(monkeypatch, X, y, **kw))
        ref = np.sort(v[v > 1e-9])[::-1][:top]
        np.testing.assert_allclose(got["violations"][0][0], ref, rtol=0, atol=1e-12)


def test_quotients_next_to_a_bin_edge(large, monkeypatch, rs):
    # scores that put the pairs (0, j) on a bin edge: o = fl(edge * d), so that
    # the quotient o / d and the critical constant can fall on both sides of
    # it; normalize=None keeps o and d as they are
    n = 400
    X = rs.normal(size=(n, 6))
    engine = _engine.PairwiseEngine(X, block_size=n)
    D = engine.distances(slice(0, n), slice(0, n))  # the blocks' own values
    bins = _keys.KEY_SHIFT
    edges = np.array([_keys.key_floor(b) for b in range(65472 - 40, 65472 + 40)])
    y = np.zeros(n)
    y[1:] = edges[rs.randint(0, edges.size, size=n - 1)] * D[0, 1:]
    o, d = np.abs(y[1:] - y[0]), D[0, 1:]
    crit = _review_stats._critical_constants(o.copy(), d.copy())
    with np.errstate(divide="ignore", invalid="ignore"):
        q = o / d
    straddle = _keys.float_key(q, bins) != _keys.float_key(crit, bins)
    assert straddle.sum() >= 3  # the case this test is about does occur
    kw = dict(block_size=n, normalize=None, constants=list(edges[::7]), quantiles=(0.5,))
    # the float64 pass: the histogram is that of the exact constants of all pairs
    got = float64_pass(monkeypatch, X, y, **kw)
    assert_identical(got, separate(monkeypatch, X, y, **kw))
    i, j = np.triu_indices(n, 1)
    all_crit = _review_stats._critical_constants(np.abs(y[i] - y[j]), D[i, j].copy())
    expected = np.bincount(_keys.float_key(all_crit), minlength=_keys.N_COARSE_KEYS)
    np.testing.assert_array_equal(got["histogram"], expected)
    # the screened pass: the histogram within one bin; the counts at the
    # constants (pairs with o = L d to the last bit of the blocks' distances)
    # those of lipschitz_fraction, which settles with the same pair-by-pair
    # distances (they can differ from the blocks' in the last bit)
    screened = _review_all(X, y, **kw)
    assert large["screened"]
    assert_histograms_agree(screened["histogram"], got["histogram"], exact=False)
    for L, count in zip(kw["constants"], screened["counts"][1:]):
        expected = sf.lipschitz_fraction(
            X, y, normalize=None, lipschitz_constant=L, block_size=n, return_counts=True
        ).n_satisfied
        assert count == expected
    assert np.abs(screened["counts"] - got["counts"]).max() <= 3
    np.testing.assert_allclose(
        screened["quantile_constants"], got["quantile_constants"], rtol=1e-12
    )


def test_neighbours_over_several_strips(large, per_pair, monkeypatch, rs):
    # blocks of several strips of rows, and thresholds that leave few
    # candidates: the one-comparison route of the neighbours
    X = rs.normal(size=(700, 10))
    y = rs.randint(0, 5, size=700).astype(float)
    kw = dict(block_size=160, n_neighbors=3)
    assert 160 > 2 * _review_fused._STRIP_ROWS
    got = _review_all(X, y, **kw)
    assert large["screened"]
    assert_same(got, separate(monkeypatch, X, y, **kw))
    D = squareform(pdist(X, "cosine"))
    np.fill_diagonal(D, np.inf)
    ref = np.argsort(D, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(got["neighbors"][1], ref)


UNCACHED = """
import pickle, sys, warnings
import numpy as np
import numba.core.caching
# what numba meets where neither the installation nor the home can be written
numba.core.caching.CacheImpl._locator_classes = []
from sklearn_fairaes.metrics._pairs import _blocks, _engine, _review_screened
from sklearn_fairaes.metrics._review import _review_all
_engine._CACHE_BYTES = _engine._SCREEN_CACHE_BYTES = 0
_blocks._TASK_PAIRS = 3000
data = np.load(sys.argv[1])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    got = _review_all(data["X"], data["y"], block_size=64, n_neighbors=4, top=30)
    again = _review_all(data["X"], data["y"], block_size=64, n_neighbors=4, top=30)
assert _review_screened.kernel() is not None and not _review_screened.kernel().CACHED
with open(sys.argv[2], "wb") as fh:
    pickle.dump((got, [(w.category.__name__, str(w.message)) for w in caught]), fh)
"""


def test_kernel_without_a_writable_cache_folder(large, monkeypatch, rs, tmp_path):
    # numba raises at import when it finds no folder for its cache: the kernel
    # is compiled without one instead, once per process, with one warning
    require_module("numba", "fast")
    import pickle
    import subprocess
    import sys

    X, y = gauss(rs, n=200)
    np.savez(tmp_path / "data.npz", X=X, y=y)
    subprocess.run(
        [sys.executable, "-c", UNCACHED, str(tmp_path / "data.npz"), str(tmp_path / "out")],
        check=True,
        timeout=300,
    )
    with open(tmp_path / "out", "rb") as fh:
        got, caught = pickle.load(fh)
    assert [c for c, _ in caught] == ["CacheWriteWarning"]
    assert "NUMBA_CACHE_DIR" in caught[0][1]
    monkeypatch.setattr(_review_screened, "USE_KERNEL", False)
    assert_identical(got, _review_all(X, y, block_size=64, n_neighbors=4, top=30))
    assert large["screened"] and not large["fused"]
