"""The int8 range pass of the pair engine (CPUs with int8 dot products).

The int8 similarities must stay within the bound of ``int8_rows`` of the exact
products (checked with exact rationals), the candidates must hold both exact
extremes, and ``distance_range`` and ``lipschitz_fraction`` must give exactly
what the float32 pass gives, and what pdist gives.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy.spatial.distance import pdist

import sklearn_fairaes
from sklearn_fairaes.metrics import lipschitz_fraction
from sklearn_fairaes.metrics._pairs import _engine, _range_int8, _torch_backend


def _problem(n, d, kind, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if kind == "prompt":  # a shared direction: similarities of mean ~0.5
        X += 2.5 * rng.standard_normal(d)
    elif kind == "duplicates":  # repeated essays: the smallest distance is 0
        X[n // 2 :] = X[: n - n // 2]
    elif kind == "spiky":  # one large entry per row: coarse int8 steps
        X[:, 0] *= 30
    y = np.clip(np.round(6 + 2 * X[:, 1] / X[:, 1].std() + rng.standard_normal(n)), 0, 12)
    return X, y


def _naive(X, y, L=1.0):
    d = pdist(X, "cosine")
    o = pdist(y[:, None], "cityblock")
    d = (d - d.min()) / (d.max() - d.min())
    o = (o - o.min()) / (o.max() - o.min())
    return int(np.count_nonzero(o <= L * d))


def _exact_range(X):
    d = _engine.PairwiseEngine(X).paired_distances(*np.triu_indices(X.shape[0], 1))
    return float(d.min()), float(d.max())


@pytest.mark.parametrize("kind", ["plain", "prompt", "spiky"])
def test_int8_similarities_are_within_the_bound_in_exact_arithmetic(kind):
    X, _ = _problem(40, 24, kind, seed=1)
    unit = _engine.PairwiseEngine(X)._unit
    q, scale, error = _range_int8.int8_rows(unit)
    assert q.dtype == np.int8 and np.abs(q.astype(int)).max() == 127
    rows = [[Fraction(v) for v in row] for row in unit]
    s = Fraction(scale) ** 2
    worst = Fraction(0)
    for i in range(40):
        for j in range(i + 1, 40):
            exact = sum(a * b for a, b in zip(rows[i], rows[j]))
            int8 = s * int(q[i].astype(np.int64) @ q[j].astype(np.int64))
            worst = max(worst, abs(exact - int8))
    assert worst <= Fraction(error)
    # a bound, not a guess: it is met within a small factor, which is what
    # keeps the candidates few
    assert Fraction(error) < 20 * worst


def test_int8_rows_in_runs_of_rows_bound_every_pair():
    # 8,192 dimensions: the rows are rounded in runs of 64, the bound must
    # still hold over pairs from different runs
    X, _ = _problem(200, 8192, "spiky", seed=6)
    unit = _engine.PairwiseEngine(X)._unit
    q, scale, error = _range_int8.int8_rows(unit)
    assert np.array_equal(q, np.clip(np.rint(unit / scale), -127, 127).astype(np.int8))
    Q = q.astype(np.float64)
    worst = np.max(np.abs(unit @ unit.T - scale**2 * (Q @ Q.T)))
    assert worst <= error < 20 * worst


def test_int8_rows_of_zeros():
    q, scale, error = _range_int8.int8_rows(np.zeros((3, 4)))
    assert not q.any() and error == 0.0 and scale == 1.0


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("kind", ["prompt", "duplicates"])
def test_int8_candidates_hold_both_exact_extremes(kind, threads):
    X, _ = _problem(900, 32, kind, seed=2)
    engine = _engine.PairwiseEngine(X, block_size=256)
    engine._prepare_screening()
    q, scale, e8 = _range_int8.int8_rows(engine._unit)
    window = 2 * (e8 + engine.screen_error) + 4 * engine.screen_error
    i, j = _range_int8.int8_extreme_candidates(
        q, scale, engine._block_specs(), window, threads
    )
    assert np.all(i < j)
    assert len(set(zip(i.tolist(), j.tolist()))) == i.size  # each pair once
    d = engine.paired_distances(i, j)
    assert (float(d.min()), float(d.max())) == _exact_range(X)
    assert i.size < 900 * 899 // 20


def test_int8_candidates_with_a_one_row_diagonal_block():
    # the last diagonal block holds one row and no pair: its masked entries
    # are no candidates, whatever the extremes
    X, _ = _problem(257, 16, "prompt", seed=3)
    engine = _engine.PairwiseEngine(X, block_size=128)
    engine._prepare_screening()
    q, scale, e8 = _range_int8.int8_rows(engine._unit)
    # the engine leaves such a block out; the pass must not trip on one
    specs = [(256, 257, 256, 257), *engine._block_specs()]
    i, j = _range_int8.int8_extreme_candidates(q, scale, specs, 1e9, 1)
    # a huge window: every pair, found as near both extremes
    assert np.all(i < j)
    assert len(set(zip(i.tolist(), j.tolist()))) == 257 * 256 // 2


def _patched(monkeypatch):
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_engine, "_SCREEN_CACHE_BYTES", 0)
    monkeypatch.setattr(_range_int8, "INT8_MIN_ESSAYS", (0, 0))
    monkeypatch.setattr(_range_int8, "cpu_has_int8_dot", lambda: True)
    monkeypatch.setattr(_torch_backend, "cpu_has_amx_bf16", lambda: False)
    calls = []
    real = _range_int8.int8_extreme_candidates
    monkeypatch.setattr(
        _range_int8, "int8_extreme_candidates", lambda *a: calls.append(1) or real(*a)
    )
    return calls


@pytest.mark.parametrize("kind", ["prompt", "duplicates", "spiky"])
def test_distance_range_and_count_with_and_without_int8_agree(monkeypatch, kind):
    calls = _patched(monkeypatch)
    X, y = _problem(1200, 16, kind, seed=4)
    with sklearn_fairaes.config_context(bf16_range=True):
        on = _engine.PairwiseEngine(X, block_size=300).distance_range(screened=True)
        lf_on = lipschitz_fraction(X, y, return_counts=True, block_size=300)
        lf_half = lipschitz_fraction(
            X, y, lipschitz_constant=0.5, return_counts=True, block_size=300
        )
    assert len(calls) == 3
    with sklearn_fairaes.config_context(bf16_range=False):
        off = _engine.PairwiseEngine(X, block_size=300).distance_range(screened=True)
        lf_off = lipschitz_fraction(X, y, return_counts=True, block_size=300)
    assert len(calls) == 3  # not called with the setting off
    assert on == off
    assert on[:2] == _exact_range(X)
    assert lf_on.n_satisfied == lf_off.n_satisfied == _naive(X, y)
    assert lf_half.n_satisfied == _naive(X, y, 0.5)


def test_too_many_int8_candidates_fall_back_to_the_float32_pass(monkeypatch):
    calls = _patched(monkeypatch)
    X, _ = _problem(1200, 16, "prompt", seed=5)
    monkeypatch.setattr(_range_int8, "INT8_MAX_CANDIDATES", 5)
    with sklearn_fairaes.config_context(bf16_range=True):
        got = _engine.PairwiseEngine(X, block_size=300).distance_range(screened=True)
    assert calls and got[:2] == _exact_range(X)


def test_int8_range_is_not_used_without_int8_dots_groups_or_below_the_size(monkeypatch):
    X, _ = _problem(600, 8, "prompt")
    engine = _engine.PairwiseEngine(X)
    monkeypatch.setattr(_range_int8, "INT8_MIN_ESSAYS", (0, 0))
    monkeypatch.setattr(_range_int8, "cpu_has_int8_dot", lambda: False)
    assert engine._int8_extreme_candidates() is None
    monkeypatch.setattr(_range_int8, "cpu_has_int8_dot", lambda: True)
    monkeypatch.setattr(_range_int8, "INT8_MIN_ESSAYS", (601, 601))
    assert engine._int8_extreme_candidates() is None
    monkeypatch.setattr(_range_int8, "INT8_MIN_ESSAYS", (600, 600))
    assert engine._int8_extreme_candidates() is not None
    grouped = _engine.PairwiseEngine(X, groups=np.arange(600) % 2, pairs="within")
    assert grouped._int8_extreme_candidates() is None
    with sklearn_fairaes.config_context(bf16_range=False):
        assert engine._int8_extreme_candidates() is None


def test_cpu_has_int8_dot_reads_the_cpu_flags(monkeypatch):
    monkeypatch.setattr(_range_int8, "_VNNI", None)
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
        flags = fh.read()
    expected = " avx512_vnni" in flags or " avx_vnni" in flags
    assert _range_int8.cpu_has_int8_dot() == expected
