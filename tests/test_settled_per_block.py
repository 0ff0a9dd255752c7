"""Screened Lipschitz counts settle each block's undecided pairs in that block.

The float32 screen leaves a fixed share of the pairs undecided (ties at the
threshold, duplicates, near-ties); each block settles its own in float64, on
every backend, so no count keeps them to the end, none is capped and no count
falls back to float64 blocks. The counts must stay exact: they are checked
against brute force in exact rational arithmetic (ties exactly at
``|dy| = L * d``, duplicated essays, zero rows), against ``pdist``, against the
settling of all undecided pairs at the end (the former path, which kept them
up to 2**24), and on a problem with more undecided pairs than that.
"""

from fractions import Fraction

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from sklearn_fairaes.metrics import _group, group_lipschitz_fraction, lipschitz_fraction
from sklearn_fairaes.metrics._pairs import _blocks, _counters, _engine, _scaling


@pytest.fixture
def screened(monkeypatch):
    """Large-problem path at small N: float32 screening, many chunks, no caches."""
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_engine, "_SCREEN_CACHE_BYTES", 0)
    monkeypatch.setattr(_blocks, "_TASK_PAIRS", 3000)


@pytest.fixture
def calls(monkeypatch):
    """Counts of settled pairs per call, and of float64-block (fallback) maps."""
    seen = {"settled": [], "fallback": 0}
    settle = _counters._Settler.__call__

    def spy_settle(self, i, j):
        seen["settled"].append(i.size)
        return settle(self, i, j)

    def spy_map(real):
        def map(self, block):
            seen["fallback"] += 1
            return real(self, block)

        return map

    monkeypatch.setattr(_counters._Settler, "__call__", spy_settle)
    for cls in (_counters._LipschitzCounter, _group._GroupLipschitzCounter):
        monkeypatch.setattr(cls, "map", spy_map(cls.map))
    return seen


def _axis_rows(rng, n, n_axes=4):
    """Rows ``+-m * e_k`` or zero, and their exact cosine distances (Fractions).

    Same axis and sign (parallel duplicates): 0; opposite signs: 2; other
    axes, or a zero row against a non-zero one: 1; two zero rows: 0.
    """
    axis = rng.integers(-1, n_axes, size=n)  # -1: a zero row
    sign = rng.choice([-1.0, 1.0], size=n)
    X = np.zeros((n, n_axes))
    nonzero = axis >= 0
    X[nonzero, axis[nonzero]] = (sign * rng.integers(1, 5, size=n))[nonzero]
    exact = []
    for p in range(n):
        for q in range(p + 1, n):
            if axis[p] < 0 or axis[q] < 0:
                exact.append(Fraction(0 if axis[p] == axis[q] else 1))
            elif axis[p] != axis[q]:
                exact.append(Fraction(1))
            else:
                exact.append(Fraction(0 if sign[p] == sign[q] else 2))
    return X, exact


def _brute_force(d, y, groups, normalize, L):
    """Per pair (condensed order): satisfied, same group; exact arithmetic."""
    n = len(y)
    pairs = [(p, q) for p in range(n) for q in range(p + 1, n)]
    o = [abs(y[p] - y[q]) for p, q in pairs]
    if normalize == "minmax":
        dlo, dhi, olo, ohi = min(d), max(d), min(o), max(o)
        d = [(v - dlo) / (dhi - dlo) for v in d]
        o = [(v - olo) / (ohi - olo) for v in o]
    elif normalize == "max":
        dhi, ohi = max(d), max(o)
        d = [v / dhi for v in d]
        o = [v / ohi for v in o]
    ok = np.array([ov <= L * dv for dv, ov in zip(d, o)])
    same = np.array([groups[p] == groups[q] for p, q in pairs])
    return ok, same, np.array([groups[p] for p, _ in pairs])


def _check(X, y, groups, d, normalize, L, block_size):
    ok, same, first = _brute_force(d, y, groups, normalize, L)
    assert ok.any() and not ok.all()  # the test can fail both ways
    got = lipschitz_fraction(X, y, normalize=normalize, lipschitz_constant=L,
                             block_size=block_size, return_counts=True)  # fmt: skip
    assert (got.n_satisfied, got.n_pairs) == (ok.sum(), ok.size)
    res = group_lipschitz_fraction(X, y, groups=groups, normalize=normalize,
                                   lipschitz_constant=L, block_size=block_size)  # fmt: skip
    assert res.n_satisfied_cross == np.count_nonzero(ok & ~same)
    names = sorted(set(groups))
    want = [np.count_nonzero(ok & same & (first == g)) for g in names]
    assert list(res.group_n_satisfied) == want
    assert res.n_satisfied == got.n_satisfied


@pytest.mark.parametrize("normalize, L", [("minmax", 1), ("minmax", 2), ("max", 1),
                                          (None, 2)])  # fmt: skip
def test_ties_duplicates_and_zero_rows_equal_exact_brute_force(
    screened, calls, normalize, L
):
    # distances 0, 1, 2 and integer scores 0..4: with minmax, orthogonal pairs
    # (d_n = 1/2) whose scores differ by 2 (o_n = 1/2) sit exactly on the
    # boundary; duplicates (d = 0) with equal scores too (0 <= 0)
    rng = np.random.default_rng(3)
    X, exact = _axis_rows(rng, 130)
    y = rng.integers(0, 5, size=130)
    groups = rng.choice(["a", "b", "c"], size=130).tolist()
    assert _engine.PairwiseEngine(X, block_size=31).screenable
    _check(X, y, groups, exact, normalize, L, block_size=31)
    assert calls["fallback"] == 0
    assert sum(calls["settled"]) > 1000  # the ties went through the settling
    assert max(calls["settled"]) <= 31 * 31  # one block's pairs at a time


@pytest.mark.parametrize("kind", ["gauss", "duplicates"])
def test_counts_equal_pdist_brute_force(screened, calls, kind):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((300, 16))
    if kind == "duplicates":  # repeated essays, some with other scores
        X[150:] = X[:150]
    y = rng.integers(0, 13, size=300)
    groups = rng.choice([1, 2], size=300).tolist()
    d = pdist(X, "cosine")
    if kind == "duplicates":  # pdist's rounding noise; the engine's exact 0
        d[d < 1e-12] = 0.0
    # float64 in place of rationals: pdist's values are the reference here
    d_ref = [float(v) for v in d]
    y_ref = [float(v) for v in y]
    _check(X, y_ref, groups, d_ref, "minmax", 1.0, block_size=64)
    assert calls["fallback"] == 0
    if kind == "duplicates":  # equal scores at distance 0: undecided, settled
        assert sum(calls["settled"]) > 0


def _counts_settled_at_the_end(engine, y, L):
    """The former path: every undecided pair kept to the end, then settled."""
    o_range = _scaling._outcome_range(y)
    d_range = engine.distance_range(screened=True)[:2]
    d_scaling = _scaling._scaling(*d_range, "minmax", "distance")
    o_scaling = _scaling._scaling(*o_range, "minmax", "score difference")
    a, b, c, margin = _counters._screening_coefficients(
        engine, y, d_scaling, o_scaling, L, o_range[1]
    )
    kept = []

    def keep(i, j):
        kept.append((i, j))
        return np.zeros(i.shape, dtype=bool)  # counted below, not here

    sure, n_eval = engine.map_reduce(
        _counters._ScreenedLipschitzCounter(y, a, b, c, margin, keep)
    )
    i = np.concatenate([p[0] for p in kept])
    j = np.concatenate([p[1] for p in kept])
    ok = _counters._settle(engine, y, i, j, d_scaling, o_scaling, L)
    return sure + int(np.count_nonzero(ok)), n_eval, i.size


@pytest.mark.parametrize("L", [0.5, 1.0, 2.0])
def test_per_block_settling_equals_settling_at_the_end(screened, L):
    rng = np.random.default_rng(11)
    X = rng.standard_normal((2500, 24))
    X[2000:] = X[:500]  # duplicates
    y = np.clip(np.round(6 + 2 * X[:, 0] + 2 * rng.standard_normal(2500)), 0, 12)
    y[2100:] = y[100:500]  # duplicates with their scores: ties at d = 0
    hits, n_eval, n_kept = _counts_settled_at_the_end(
        _engine.PairwiseEngine(X, block_size=300), y, L
    )
    assert n_kept >= 400  # pairs the former path kept
    got = lipschitz_fraction(X, y, lipschitz_constant=L, block_size=300,
                             return_counts=True)  # fmt: skip
    assert (got.n_satisfied, got.n_pairs) == (hits, n_eval)
    res = group_lipschitz_fraction(X, y, groups=rng.choice(["x", "y"], size=2500),
                                   lipschitz_constant=L, block_size=300)  # fmt: skip
    assert (res.n_satisfied, res.n_pairs) == (hits, n_eval)


def test_more_undecided_pairs_than_the_former_cap_stay_exact(calls):
    # Two orthogonal directions, 7,000 essays (24.5 million pairs): A essays
    # scored 0 or 6, B essays 12. With normalize=None and L = 12 every pair of
    # two A0, two A6, two B, or an A0 and a B sits exactly on the threshold
    # (0 <= 0, 12 <= 12): 18.5 million undecided pairs, above the 2**24 that a
    # count used to keep before it fell back to float64 blocks. A0-A6 pairs
    # fail (6 > 0), A6-B pairs pass (6 <= 12).
    n_a0, n_a6, n_b = 3000, 1000, 3000
    X = np.zeros((n_a0 + n_a6 + n_b, 2))
    X[: n_a0 + n_a6, 0] = 1.0
    X[n_a0 + n_a6 :, 1] = 1.0
    kind = np.repeat([0, 1, 2], [n_a0, n_a6, n_b])  # A0, A6, B
    y = np.array([0.0, 6.0, 12.0])[kind]
    groups = np.arange(kind.size) % 3  # every kind in every group

    def c2(m):
        return m * (m - 1) // 2

    ties = c2(n_a0) + c2(n_a6) + c2(n_b) + n_a0 * n_b
    assert ties > 2**24
    got = lipschitz_fraction(X, y, normalize=None, lipschitz_constant=12.0,
                             return_counts=True)  # fmt: skip
    assert got.n_satisfied == ties + n_a6 * n_b
    assert got.n_pairs == c2(kind.size)
    assert sum(calls["settled"]) == ties  # each undecided pair settled once
    assert calls["fallback"] == 0
    bs = _engine.PairwiseEngine(X).block_size
    assert max(calls["settled"]) <= bs * bs  # memory: one block's pairs at most

    calls["settled"].clear()
    res = group_lipschitz_fraction(X, y, groups=groups, normalize=None,
                                   lipschitz_constant=12.0)  # fmt: skip
    assert calls["fallback"] == 0 and sum(calls["settled"]) == ties
    # per group g: its essays of each kind (ceil/floor thirds)
    per = np.array([[np.count_nonzero((kind == k) & (groups == g)) for k in range(3)]
                    for g in range(3)])  # fmt: skip
    within = [c2(a0) + c2(a6) + c2(b) + a0 * b + a6 * b for a0, a6, b in per]
    assert list(res.group_n_satisfied) == within
    assert res.n_satisfied == got.n_satisfied
    assert res.n_satisfied_cross == got.n_satisfied - sum(within)
