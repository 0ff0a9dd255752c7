"""Spread-aware individual fairness (issue 33, item 1): the lipschitz section's
score SDs, spread-matched fraction and figures relative to the human scores,
checked against brute force over all pairs and a direct kNN in numpy, and on
the deliberate length flaw on real ASAP prompt 7 essays."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

from sklearn_fairaes.metrics._bootstrap import bootstrap_interval, replicate_weights
from sklearn_fairaes.report._study import PairSpace, Settings, Study, System
from sklearn_fairaes.report.analyses._lipschitz import ANALYSIS as LIPSCHITZ


def _study(systems, *, n=40, seed=0, n_bootstrap=0, n_neighbors=4, n_review=5):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 5))
    D = pdist(X, "cosine")
    human = np.clip(np.round(1 + 9 * X[:, 0] + rng.normal(0, 1, n)), 1, 10)
    study = Study(
        prompt="p", prompt_text=None, essays=["essay"] * n, ids=np.arange(100, 100 + n),
        rows=np.arange(1, n + 1), human=human, score_range=(1.0, 10.0),
        score_range_source="declared",
        settings=Settings(n_bootstrap=n_bootstrap, n_neighbors=n_neighbors,
                          n_review=n_review),
        systems={name: System(name, "given", {None: f(human, rng)})
                 for name, f in systems.items()},
        spaces={"r": PairSpace("r", None, X, D, "precomputed", D)},
    )  # fmt: skip
    return study, X, D


def _noisy(human, rng):
    return np.clip(np.round(human + rng.normal(0, 1.5, human.size)), 1, 10)


def _row(table, system):
    return table[table["system"] == system].iloc[0]


def _brute_matched(D, y, human):
    """Every pair by pdist: |dy| rescaled to the human SD, min-max by the human range."""
    c = np.std(human, ddof=1) / np.std(y, ddof=1)
    o = pdist((c * y)[:, None], "cityblock")
    h = pdist(human[:, None], "cityblock")
    d = (D - D.min()) / (D.max() - D.min())
    return float(np.mean((o - h.min()) / (h.max() - h.min()) <= d))


def _direct_knn(D, k):
    """Each essay's k nearest others: a stable sort of its row of the square matrix."""
    S = squareform(D)
    np.fill_diagonal(S, np.inf)
    return np.argsort(S, axis=1, kind="stable")[:, :k]


def test_matched_fraction_equals_brute_force_and_the_paper_for_humans():
    study, _, D = _study({"engine": _noisy})
    lip = LIPSCHITZ.run(study).tables["lipschitz"]
    for system, y in (
        ("engine", study.systems["engine"].scores[None]),
        ("human", study.human),
    ):
        row = _row(lip, system)
        assert row.lipschitz_matched == pytest.approx(_brute_matched(D, y, study.human))
        assert row.score_sd == pytest.approx(np.std(y, ddof=1))
        assert row.human_sd == pytest.approx(np.std(study.human, ddof=1))
    # for the human scores the matched fraction is the paper's min-max fraction
    human = _row(lip, "human")
    assert human.lipschitz_matched == human.lipschitz_minmax


def test_relative_figures_equal_a_direct_knn():
    k = 4
    study, _, D = _study({"engine": _noisy}, n_neighbors=k, n_review=5)
    out = LIPSCHITZ.run(study)
    rel = out.tables["relative_fairness"]
    assert rel["system"].tolist() == ["engine"]  # the humans are the reference
    nb = _direct_knn(D, k)
    y, h = study.systems["engine"].scores[None], study.human
    sd_y, sd_h = np.std(y, ddof=1), np.std(h, ddof=1)
    spread_y = np.mean([abs(y[i] - y[j]) for i in range(len(y)) for j in nb[i]]) / sd_y
    spread_h = np.mean([abs(h[i] - h[j]) for i in range(len(h)) for j in nb[i]]) / sd_h
    e = y - h
    gap = np.array([e[i] - np.mean(e[nb[i]]) for i in range(len(e))])
    row = rel.iloc[0]
    assert row.n_neighbors == k
    assert row.neighbor_spread == pytest.approx(spread_y)
    assert row.human_neighbor_spread == pytest.approx(spread_h)
    assert row.neighbor_spread_ratio == pytest.approx(spread_y / spread_h)
    assert row.error_inconsistency == pytest.approx(np.mean(np.abs(gap)) / sd_h)
    # the per-essay list: the n_review largest |error gap|, ties by position
    err = out.tables["error_review"]
    worst = sorted(range(len(e)), key=lambda i: (-abs(gap[i]), i))[:5]
    assert err["id"].tolist() == [100 + i for i in worst]
    assert err["error_gap"].to_numpy() == pytest.approx(gap[worst])
    assert err["error"].to_numpy() == pytest.approx(e[worst])
    assert err["neighbor_mean_error"].to_numpy() == pytest.approx((e - gap)[worst])
    assert err["rank"].tolist() == [1, 2, 3, 4, 5]


def test_intervals_are_weighted_means_with_the_neighbours_fixed():
    k, B = 4, 50
    study, _, D = _study({"engine": _noisy}, n_neighbors=k, n_bootstrap=B)
    out = LIPSCHITZ.run(study)
    w = replicate_weights(study.ids, B, int(study.settings.random_state), stream="p")
    nb = _direct_knn(D, k)
    y, h = study.systems["engine"].scores[None], study.human
    e = y - h
    gap = np.abs(e - e[nb].mean(axis=1))
    expected = []
    for b in range(B):
        # the replicate's essays, each as many times as drawn
        take = np.repeat(np.arange(len(y)), w[b].astype(int))
        expected.append(gap[take].mean() / np.std(h[take], ddof=1))
    replicates = out.replicates[("relative_fairness", "r", "engine", "error_inconsistency")]
    assert replicates == pytest.approx(expected)
    row = out.tables["relative_fairness"].iloc[0]
    low, high = bootstrap_interval(expected, 0.95)
    assert (
        row.error_inconsistency_ci_low,
        row.error_inconsistency_ci_high,
    ) == pytest.approx((low, high))
    sd = out.replicates[("lipschitz", "r", "engine", "score_sd")]
    take = np.repeat(np.arange(len(y)), w[0].astype(int))
    assert sd[0] == pytest.approx(np.std(y[take], ddof=1))
    lip = _row(out.tables["lipschitz"], "engine")
    assert lip.score_sd_ci_low < lip.score_sd < lip.score_sd_ci_high


def _compress(y, keep_range):
    mean = y.mean()
    out = mean + 0.5 * (y - mean)
    if keep_range:
        # the extremes stay: the spread narrows but the range does not, as when
        # an engine lifts its lowest scores
        lo, hi = np.argmin(y), np.argmax(y)
        out[lo], out[hi] = y[lo], y[hi]
    return out


def test_compressing_scores_buys_nothing():
    def engine(human, rng):
        return _noisy(human, rng)

    base, _, _ = _study({"engine": engine}, seed=1)
    y = base.systems["engine"].scores[None]
    base.systems["squeezed"] = System("squeezed", "given", {None: _compress(y, False)})
    base.systems["lifted"] = System("lifted", "given", {None: _compress(y, True)})
    out = LIPSCHITZ.run(base)
    lip, rel = out.tables["lipschitz"], out.tables["relative_fairness"]
    # a linear compression changes none of the scale-free figures
    for column in ("lipschitz_matched", "lipschitz_minmax"):
        assert _row(lip, "squeezed")[column] == pytest.approx(_row(lip, "engine")[column])
    assert _row(rel, "squeezed").neighbor_spread_ratio == pytest.approx(
        _row(rel, "engine").neighbor_spread_ratio
    )
    assert _row(lip, "squeezed").score_sd == pytest.approx(
        0.5 * _row(lip, "engine").score_sd
    )
    # The paper's min-max fraction is unchanged too: its confound is a spread
    # narrowed within the same range. Then it rises far more than the matched
    # fraction, which moves only as far as the SD misjudges the compression (two
    # extreme essays keep the SD up)
    raw = _row(lip, "lifted").lipschitz_minmax - _row(lip, "engine").lipschitz_minmax
    matched = _row(lip, "lifted").lipschitz_matched - _row(lip, "engine").lipschitz_matched
    assert raw > 0.15
    assert abs(matched) < raw / 3


def test_constant_scores_have_no_matched_fraction():
    study, _, _ = _study({"flat": lambda h, rng: np.full(h.size, 5.0)})
    out = LIPSCHITZ.run(study)
    row = _row(out.tables["lipschitz"], "flat")
    assert np.isnan(row.lipschitz_matched) and row.n_satisfied_matched == 0
    assert row.lipschitz_minmax == 1.0  # the paper's fraction passes every pair
