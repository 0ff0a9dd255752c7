"""Blocks of one score, counted without their products by the sorted screen.

A pair of equal scores satisfies the Lipschitz inequality whatever its
distance (``0 <= L * d_n``, ``d_n >= 0``), so the score-sorted count takes a
block whose essays share one score as all satisfied. The counts must equal a
pdist count and the count with the shortcut off, with ties at distance 0
(repeated essays of one score) and every normalisation.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from sklearn_fairaes.metrics import lipschitz_fraction
from sklearn_fairaes.metrics._pairs import _counters, _engine, _scaling


def _problem(n, kind, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 12))
    y = np.round(rng.uniform(0, 3, n))  # four scores: blocks of one score
    if kind == "duplicates":  # repeated essays, most with their score
        X[n // 2 :] = X[: n - n // 2]
        y[n // 2 :] = y[: n - n // 2]
        y[-5:] = 3 - y[-5:]  # a few copies with another score: violations at d = 0
    return X, y


def _naive(X, y, L, normalize):
    d = pdist(X, "cosine")
    o = pdist(y[:, None], "cityblock")
    if normalize == "minmax":
        d = (d - d.min()) / (d.max() - d.min())
        o = (o - o.min()) / (o.max() - o.min())
    elif normalize == "max":
        d, o = d / d.max(), o / o.max()
    return int(np.count_nonzero(o <= L * d))


@pytest.fixture
def shortcut(monkeypatch):
    """Whether the one-score shortcut answered, and a switch to turn it off."""
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_engine, "_SCREEN_CACHE_BYTES", 0)
    state = {"on": True, "answered": 0}
    real = _counters._SortedScreenedLipschitzCounter.known

    def known(self, spec):
        if not state["on"]:
            return None
        got = real(self, spec)
        state["answered"] += got is not None
        return got

    monkeypatch.setattr(_counters._SortedScreenedLipschitzCounter, "known", known)
    return state


@pytest.mark.parametrize("normalize", ["minmax", "max", None])
@pytest.mark.parametrize("L", [1.0, 0.5, 3.0])
@pytest.mark.parametrize("kind", ["plain", "duplicates"])
def test_one_score_blocks_count_as_pdist(shortcut, kind, L, normalize):
    X, y = _problem(1500, kind)
    kw = dict(lipschitz_constant=L, normalize=normalize, return_counts=True)
    got = lipschitz_fraction(X, y, block_size=64, **kw)
    if normalize is None:  # no range pass: the blocks are screened as before
        assert shortcut["answered"] == 0
    else:
        assert shortcut["answered"] > 20  # most blocks within one score's run
    shortcut["on"] = False
    off = lipschitz_fraction(X, y, block_size=64, **kw)
    assert got.n_satisfied == off.n_satisfied == _naive(X, y, L, normalize)
    assert got.n_pairs == off.n_pairs == 1500 * 1499 // 2


def test_known_counts_the_pairs_of_a_block():
    y = np.array([0.0, 1, 1, 1, 1, 1, 1, 2])
    counter = _counters._SortedScreenedLipschitzCounter(
        y, 1.0, 0.5, 0.5, 1e-6, lambda i, j: np.ones(i.size, bool), True
    )
    assert counter.known((1, 4, 1, 4)) == (3, 3)  # a diagonal block: i < j
    assert counter.known((1, 3, 4, 7)) == (6, 6)
    assert counter.known((0, 3, 3, 6)) is None  # scores 0 and 1
    assert counter.known((4, 7, 7, 8)) is None  # scores 1 and 2
    off = _counters._SortedScreenedLipschitzCounter(
        y, 1.0, 0.5, 0.5, 1e-6, lambda i, j: np.ones(i.size, bool)
    )
    assert off.known((1, 4, 1, 4)) is None


def test_equal_scores_satisfy_needs_the_exact_smallest_distance():
    X, y = _problem(300, "plain")
    engine = _engine.PairwiseEngine(X)
    o_scaling = _scaling._scaling(0.0, 3.0, "minmax", "score difference")
    # no range pass yet: the smallest distance is not known
    assert not _counters._equal_scores_satisfy(engine, (0.0, 1.0), (0.0, 1.0), 1.0)
    lo, hi, _ = engine.distance_range(screened=True)
    exact = _scaling._scaling(lo, hi, "minmax", "distance")
    assert _counters._equal_scores_satisfy(engine, exact, o_scaling, 1.0)
    assert _counters._equal_scores_satisfy(engine, (0.0, hi), (0.0, 3.0), 2.0)  # max
    # a shift above the smallest distance: (lo - (lo + 0.1)) / 1.0 < 0 = normalise(0)
    assert not _counters._equal_scores_satisfy(engine, (lo + 0.1, 1.0), o_scaling, 1.0)
    # scores with no two equal: normalise(0) < 0 always holds
    assert _counters._equal_scores_satisfy(engine, (lo + 0.1, 1.0), (0.5, 2.0), 1.0)
