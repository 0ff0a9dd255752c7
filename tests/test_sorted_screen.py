"""The score-sorted float32 screen and the bfloat16 range pass of the pair engine.

``_SortedScreenedLipschitzCounter`` must decide every pair exactly as
``_ScreenedLipschitzCounter`` (same sure count, same undecided pairs), and
``lipschitz_fraction`` must equal a pdist/squareform count; the bfloat16 range
pass must give the same exact distance range as the float32 one. References
are computed here from full matrices.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist

import sklearn_fairaes
from sklearn_fairaes.metrics import _review, lipschitz_fraction
from sklearn_fairaes.metrics._pairs import (
    _blocks,
    _counters,
    _engine,
    _scaling,
    _torch_backend,
)


def _problem(n, d, kind, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if kind == "integer":
        y = np.clip(np.round(12 + 3 * X[:, 0] + 4 * rng.standard_normal(n)), 2, 24)
    elif kind == "continuous":
        y = 12 + 3 * X[:, 0] + 4 * rng.standard_normal(n)
    elif kind == "few":  # two scores: whole blocks of one run
        y = (X[:, 0] > 0).astype(float)
    elif kind == "duplicates":  # repeated essays (distance 0) with unequal scores
        X[n // 2 :] = X[: n - n // 2]
        y = np.round(rng.uniform(0, 10, n))
    else:
        raise AssertionError(kind)
    return X, y


class _Recording:
    """A settler that records the undecided pairs it is given (one thread)."""

    def __init__(self, engine, y, d_scaling, o_scaling, L):
        self.settle = _counters._Settler(engine, y, d_scaling, o_scaling, L)
        self.pairs = []

    def __call__(self, i, j):
        self.pairs.extend(zip(i.tolist(), j.tolist()))
        return self.settle(i, j)


def _counts(reducer_cls, engine, y, L):
    """(hits, pairs, the undecided pairs, whether any pair was given twice)."""
    o_range = _scaling._outcome_range(y)
    d_range = engine.distance_range(screened=True)[:2]
    d_scaling = _scaling._scaling(*d_range, "minmax", "distance")
    o_scaling = _scaling._scaling(*o_range, "minmax", "score difference")
    a, b, c, margin = _counters._screening_coefficients(
        engine, y, d_scaling, o_scaling, L, o_range[1]
    )
    settle = _Recording(engine, y, d_scaling, o_scaling, L)
    hits, n_eval = engine.map_reduce(reducer_cls(y, a, b, c, margin, settle))
    undecided = set(settle.pairs)
    return hits, n_eval, undecided, len(undecided) < len(settle.pairs)


@pytest.mark.parametrize("kind", ["integer", "continuous", "few", "duplicates"])
@pytest.mark.parametrize("L", [0.5, 1.0, 3.0])
def test_sorted_screen_decides_every_pair_like_the_unsorted_one(kind, L):
    X, y = _problem(3000, 24, kind)
    order = np.argsort(y, kind="stable")
    engine = _engine.PairwiseEngine(X, block_size=512).reordered(order)
    ys = y[order]
    old = _counts(_counters._ScreenedLipschitzCounter, engine, ys, L)
    new = _counts(_counters._SortedScreenedLipschitzCounter, engine, ys, L)
    assert new == old
    assert old[1] == 3000 * 2999 // 2


def test_sorted_screen_merges_runs_and_falls_back_on_wide_bands(monkeypatch):
    # continuous scores, few runs allowed: merged runs make wide score ranges
    # per tile, so tiles go through the band and the pair-by-pair paths
    X, y = _problem(2000, 16, "continuous", seed=3)
    order = np.argsort(y, kind="stable")
    engine = _engine.PairwiseEngine(X, block_size=700).reordered(order)
    ys = y[order]
    calls = {"per_pair": 0, "band": 0}
    for name in calls:
        real = getattr(_counters._SortedScreenedLipschitzCounter, f"_{name}")

        def counted(self, *args, _real=real, _name=name, **kw):
            calls[_name] += 1
            return _real(self, *args, **kw)

        monkeypatch.setattr(_counters._SortedScreenedLipschitzCounter, f"_{name}", counted)
    monkeypatch.setattr(_counters, "_MAX_RUNS", 3)
    old = _counts(_counters._ScreenedLipschitzCounter, engine, ys, 1.0)
    new = _counts(_counters._SortedScreenedLipschitzCounter, engine, ys, 1.0)
    assert new == old
    assert calls["band"] > 0 and calls["per_pair"] > 0
    monkeypatch.setattr(
        _counters, "_BAND_SHARE", 0.0
    )  # every tile with a band: pair by pair
    assert _counts(_counters._SortedScreenedLipschitzCounter, engine, ys, 1.0) == old


def test_sorted_screen_refuses_unsorted_scores():
    with pytest.raises(ValueError, match="ascending"):
        _counters._SortedScreenedLipschitzCounter(
            np.array([2.0, 1.0]), 0.5, 0.25, 0.1, 1e-6, settle=None
        )


def _naive(X, y, L=1.0):
    d = pdist(X, "cosine")
    o = pdist(y[:, None], "cityblock")
    d = (d - d.min()) / (d.max() - d.min())
    o = (o - o.min()) / (o.max() - o.min())
    return int(np.count_nonzero(o <= L * d))


@pytest.mark.parametrize("kind", ["integer", "continuous", "duplicates"])
def test_lipschitz_fraction_sorted_path_equals_pdist(monkeypatch, kind):
    # no block caches: the engine screens in float32 as on large inputs
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_engine, "_SCREEN_CACHE_BYTES", 0)
    X, y = _problem(1500, 12, kind, seed=5)
    used = []
    real = _counters._SortedScreenedLipschitzCounter.map
    monkeypatch.setattr(
        _counters._SortedScreenedLipschitzCounter,
        "map",
        lambda self, block: used.append(1) or real(self, block),
    )
    for L in (1.0, 2.0):
        res = lipschitz_fraction(X, y, lipschitz_constant=L, return_counts=True,
                                 block_size=256)  # fmt: skip
        assert res.n_satisfied == _naive(X, y, L)
    assert used  # the sorted screen counted


def test_reordered_engine_has_the_same_distances():
    X, _ = _problem(300, 8, "integer")
    engine = _engine.PairwiseEngine(X)
    order = np.random.default_rng(0).permutation(300)
    other = engine.reordered(order)
    i, j = np.triu_indices(300, 1)
    assert np.array_equal(
        other.paired_distances(i, j), engine.paired_distances(order[i], order[j])
    )
    with pytest.raises(ValueError, match="permutation"):
        engine.reordered(np.zeros(300, dtype=int))
    grouped = _engine.PairwiseEngine(X, groups=np.arange(300) % 2, pairs="within")
    with pytest.raises(ValueError, match="no groups"):
        grouped.reordered(order)


# -- bfloat16 range pass ---------------------------------------------------
def _exact_range(X):
    d = _engine.PairwiseEngine(X).paired_distances(*np.triu_indices(X.shape[0], 1))
    return float(d.min()), float(d.max())


@pytest.mark.parametrize("kind", ["integer", "duplicates"])
def test_bf16_candidates_hold_both_exact_extremes(kind):
    X, _ = _problem(900, 32, kind, seed=2)
    engine = _engine.PairwiseEngine(X, block_size=256)
    engine._prepare_screening()
    window = 2 * _torch_backend.bf16_error(32) + 4 * engine.screen_error
    i, j = _torch_backend.bf16_extreme_candidates(
        engine._unit32, engine._block_specs(), window
    )
    assert np.all(i < j)
    d = engine.paired_distances(i, j)
    assert (float(d.min()), float(d.max())) == _exact_range(X)
    # a window below the error bound may miss them: the bound is what makes
    # the candidates complete (here it is far smaller than the spread)
    assert i.size < 900 * 899 // 2


def test_distance_range_with_and_without_bf16_agree(monkeypatch):
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_engine, "_SCREEN_CACHE_BYTES", 0)
    monkeypatch.setattr(_torch_backend, "BF16_MIN_ESSAYS", (0, 0))
    monkeypatch.setattr(_torch_backend, "cpu_has_amx_bf16", lambda: True)
    X, y = _problem(1200, 16, "integer", seed=4)
    calls = []
    real = _torch_backend.bf16_extreme_candidates
    monkeypatch.setattr(
        _torch_backend, "bf16_extreme_candidates", lambda *a: calls.append(1) or real(*a)
    )
    with sklearn_fairaes.config_context(bf16_range=True):
        on = _engine.PairwiseEngine(X, block_size=300).distance_range(screened=True)
        lf_on = lipschitz_fraction(X, y, return_counts=True, block_size=300)
    assert len(calls) == 2
    with sklearn_fairaes.config_context(bf16_range=False):
        off = _engine.PairwiseEngine(X, block_size=300).distance_range(screened=True)
        lf_off = lipschitz_fraction(X, y, return_counts=True, block_size=300)
    assert len(calls) == 2  # not called with the setting off
    assert on == off
    assert on[:2] == _exact_range(X)
    assert lf_on.n_satisfied == lf_off.n_satisfied == _naive(X, y)
    # too many candidates: the float32 pass runs instead, same range
    monkeypatch.setattr(_torch_backend, "BF16_MAX_CANDIDATES", 5)
    with sklearn_fairaes.config_context(bf16_range=True):
        assert (
            _engine.PairwiseEngine(X, block_size=300).distance_range(screened=True) == off
        )


def test_bf16_range_is_not_used_without_amx_or_below_the_size(monkeypatch):
    X, _ = _problem(600, 8, "integer")
    engine = _engine.PairwiseEngine(X)
    monkeypatch.setattr(_torch_backend, "BF16_MIN_ESSAYS", (0, 0))
    monkeypatch.setattr(_torch_backend, "cpu_has_amx_bf16", lambda: False)
    assert engine._bf16_extreme_candidates() is None
    monkeypatch.setattr(_torch_backend, "cpu_has_amx_bf16", lambda: True)
    monkeypatch.setattr(_torch_backend, "BF16_MIN_ESSAYS", (601, 601))
    assert engine._bf16_extreme_candidates() is None
    monkeypatch.setattr(_torch_backend, "BF16_MIN_ESSAYS", (600, 600))
    assert engine._bf16_extreme_candidates() is not None


def test_cpu_has_amx_bf16_reads_the_cpu_flags(monkeypatch):
    monkeypatch.setattr(_torch_backend, "_AMX", None)
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
        flags = fh.read()
    assert _torch_backend.cpu_has_amx_bf16() == (" amx_bf16" in flags)


def test_bf16_range_setting_is_validated():
    with pytest.raises(TypeError, match="bf16_range"):
        sklearn_fairaes.set_config(bf16_range="yes")
    assert sklearn_fairaes.get_config()["bf16_range"] is True


# -- threads of the in-process float32 passes --------------------------------
@pytest.mark.parametrize("screen_cache", [True, False])
def test_threaded_screened_passes_equal_the_sequential_ones(monkeypatch, screen_cache):
    from threadpoolctl import threadpool_info

    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    if not screen_cache:
        monkeypatch.setattr(_engine, "_SCREEN_CACHE_BYTES", 0)
    monkeypatch.setattr(_blocks, "_TASK_PAIRS", 20_000)  # many chunks
    X, y = _problem(1500, 12, "continuous", seed=8)
    seen = []
    real = _counters._SortedScreenedLipschitzCounter.map

    def spy(self, block):
        seen.append(
            max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        )
        return real(self, block)

    monkeypatch.setattr(_counters._SortedScreenedLipschitzCounter, "map", spy)
    default = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    results = {}
    for threads in (1, 2):
        monkeypatch.setattr(_blocks, "_pass_threads", lambda n, t=threads: min(t, n))
        seen.clear()
        res = lipschitz_fraction(X, y, return_counts=True, block_size=128)
        results[threads] = (res.n_satisfied, res.distance_range)
        # BLAS runs on one core per thread inside the threaded pass only
        assert set(seen) == ({1} if threads == 2 else {default})
    assert results[1] == results[2]
    assert results[1][0] == _naive(X, y)


def test_pass_threads_follow_blas_threads():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        assert _blocks._pass_threads(50) == 1
    assert _blocks._pass_threads(1) == 1
    with threadpool_limits(2, user_api="blas"):
        assert _blocks._pass_threads(50) == 2


def test_threaded_float64_passes_equal_the_sequential_ones(monkeypatch):
    from sklearn_fairaes.metrics import score_distance_curve

    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_engine, "_SCREEN_CACHE_BYTES", 0)
    monkeypatch.setattr(_blocks, "_TASK_PAIRS", 20_000)
    X, y = _problem(900, 12, "integer", seed=9)
    out = {}
    for threads in (1, 2):
        monkeypatch.setattr(_blocks, "_pass_threads", lambda n, t=threads: min(t, n))
        curve = score_distance_curve(X, y, block_size=100)
        review = _review._review_all(X, y, n_neighbors=5, top=20, block_size=100)
        out[threads] = (curve.mean_abs_diff.tolist(), _plain(review))
    assert out[1] == out[2]


def _plain(value):
    """Nested results as lists and tuples, for an exact comparison."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value
