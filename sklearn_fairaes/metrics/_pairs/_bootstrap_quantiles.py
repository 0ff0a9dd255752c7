"""Empirical Lipschitz constants of every bootstrap replicate, exactly.

The empirical Lipschitz constant at share ``q`` is the smallest ``L`` at
which a share ``q`` of the pairs satisfies ``norm(|dy|) <= L * norm(d)``,
i.e. the ``q``-quantile of the pairs' critical constants (see
:mod:`._review_stats`). On replicate ``b`` of the essay-level bootstrap the
pair ``(i, j)`` counts ``w[b, i] * w[b, j]`` times (the pairs of two
different essays of the resampled set), so the replicate's constant is the
weighted quantile: the smallest critical constant ``c`` with
``C_b(c) / T_b >= q``, where ``C_b(c)`` is the weight of the pairs with a
constant at most ``c`` and ``T_b = ((sum w)^2 - sum w^2) / 2`` all pairs'.

Method (exact, one gathering pass per try):

1. gather the pairs whose critical constant is at least a threshold ``t``
   below every replicate's answer, with their constants (the exact
   :func:`._review_stats._critical_constants`, the profile's own values);
2. sort them once, largest first, and cumulate the weights ``w[b, i] *
   w[b, j]`` of all replicates down that order, a chunk of positions at a
   time: the weight above position ``k`` is ``S_b(k)``, so ``C_b = T_b -
   S_b`` without touching the pairs below ``t``; replicate ``b``'s constant
   at ``q`` is the one where ``S_b`` first exceeds ``T_b - m_b`` (``m_b``
   the smallest weight with ``m_b / T_b >= q``, the full sample's rule).

Cost: ``O(B x depth)``, where the walk stops at the depth every replicate
needs (about ``1 - min(q)`` of the pairs: 10% for the 90% constant), not
``B`` passes. A replicate whose constant lies below ``t`` is detected (its
weight never reaches the share) and the pass is redone with a lower ``t``
(at last ``t = 0``: all pairs). The normalisation ranges are the full sample's, as for the
replicate Lipschitz fractions (:mod:`._bootstrap_pairs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ._bootstrap_pairs import replicate_pair_totals
from ._review_stats import _critical_constants, _needed, _PairStatistics

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ._blocks import PairBlock
    from ._engine import PairwiseEngine
    from ._scaling import Scaling

__all__ = ["replicate_quantile_constants"]

#: Most pairs gathered (16 bytes each): beyond it the constants are not bootstrapped.
MAX_GATHERED = 2**26

_Gathered = tuple["NDArray[np.int64]", "NDArray[np.int64]", "NDArray[np.float64]"]


class _TailGatherer:
    """The pairs with a critical constant at least ``threshold``: ``(i, j, c)``."""

    def __init__(self, stats: _PairStatistics, threshold: float) -> None:
        self.stats, self.threshold = stats, threshold

    def map(self, block: PairBlock) -> _Gathered:
        arrays = self.stats._arrays(block)
        d, o = arrays["d"], arrays["o"]
        with np.errstate(divide="ignore", invalid="ignore"):
            quotient = np.divide(o, d)
        quotient[o <= 0] = 0.0
        # the quotient is within one unit in the last place of the constant
        keep = quotient >= self.threshold * (1 - 1e-12)
        if block.mask is not None:
            keep &= block.mask
        pos = np.flatnonzero(keep)
        c = _critical_constants(o.reshape(-1)[pos], d.reshape(-1)[pos])
        sel = c >= self.threshold
        pos, c = pos[sel], c[sel]
        n_cols = block.col_stop - block.col_start
        return block.row_start + pos // n_cols, block.col_start + pos % n_cols, c

    def combine(self, a: _Gathered, b: _Gathered) -> _Gathered:
        return (
            np.concatenate([a[0], b[0]]),
            np.concatenate([a[1], b[1]]),
            np.concatenate([a[2], b[2]]),
        )

    def empty(self) -> _Gathered:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)


def _weighted_tail_quantiles(
    gathered: _Gathered,
    weights: NDArray[np.float64],
    totals: NDArray[np.float64],
    quantiles: Sequence[float],
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Each replicate's constants from the gathered tail, and where the tail fell short.

    Replicate ``b``'s constant at ``q`` is the one at the first position
    (largest constant first) where the weight cumulated from the top, ``S``,
    exceeds ``T_b - m``, with ``m`` the smallest weight whose share ``m /
    T_b`` reaches ``q`` (the full sample's rule, :func:`_needed`): above it
    the pairs at most that constant weigh at least ``m``, below it less. The
    positions are walked from the top in chunks, all replicates at once, and
    the walk stops once every replicate has found its smallest share's
    constant (about ``1 - min(q)`` of the pairs, not the whole tail).
    Weights and cumulated sums are integers (exact); int32 while every
    replicate's total fits.
    """
    i, j, c = gathered
    order = np.argsort(-c, kind="stable")
    i, j, c = i[order], j[order], c[order]
    n_boot, n_q = weights.shape[0], len(quantiles)
    out = np.full((n_q, n_boot), np.nan)
    defined = totals > 0
    # S must exceed T - m: integer thresholds, one per replicate and share
    thresholds = np.array(
        [[t - _needed(q, int(t)) if t > 0 else np.inf for t in totals] for q in quantiles]
    )
    done = ~np.broadcast_to(defined, (n_q, n_boot)).copy()
    small = float(totals.max(initial=0.0)) < 2**31
    w = weights.astype(np.int32 if small else np.int64)
    acc = np.int32 if small else np.int64
    offset = np.zeros(n_boot, dtype=np.int64)
    step = max(1024, (1 << 22) // max(n_boot, 1))
    for start in range(0, c.size, step):
        if done.all():
            break
        stop = min(start + step, c.size)
        mass = w[:, i[start:stop]]
        mass *= w[:, j[start:stop]]
        cum = np.cumsum(mass, axis=1, dtype=acc)
        reach = offset + cum[:, -1]
        for k in range(n_q):
            # the replicates whose threshold is crossed within this chunk
            crossing = np.flatnonzero(~done[k] & (reach > thresholds[k]))
            for b in crossing:
                at = np.searchsorted(cum[b], thresholds[k, b] - offset[b], side="right")
                out[k, b] = c[start + at]
            done[k, crossing] = True
        offset = reach
    short = ~done.all(axis=0)
    return out, short


def replicate_quantile_constants(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    weights: NDArray[np.float64],
    quantiles: Sequence[float],
    d_scaling: Scaling,
    o_scaling: Scaling,
    start: float,
) -> NDArray[np.float64] | None:
    """The empirical Lipschitz constants of every replicate (module docstring).

    Parameters
    ----------
    engine : PairwiseEngine
    y : ndarray of shape (n_samples,)
        Scores in the engine's order.
    weights : ndarray of shape (n_bootstrap, n_samples)
        Multiplicities of the essays.
    quantiles : sequence of float
        Shares in ``(0, 1]``.
    d_scaling, o_scaling : Scaling
        The full sample's normalisations (those of ``lipschitz_profile``).
    start : float
        First threshold ``t`` (e.g. half the full sample's smallest constant);
        lowered until every replicate's constants lie above it.

    Returns
    -------
    constants : ndarray of shape (n_quantiles, n_bootstrap), or None
        NaN for a replicate without pairs; None when the tail to gather
        exceeds :data:`MAX_GATHERED` pairs.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import lipschitz_profile
    >>> from sklearn_fairaes.metrics._pairs._engine import PairwiseEngine
    >>> from sklearn_fairaes.metrics._pairs._bootstrap_quantiles import (
    ...     replicate_quantile_constants)
    >>> X = np.random.default_rng(0).random((12, 3))
    >>> y = np.arange(12.0)
    >>> engine = PairwiseEngine(X)
    >>> full = lipschitz_profile(engine, y, quantiles=[0.9])
    >>> d = full.distance_range
    >>> o = full.outcome_range
    >>> got = replicate_quantile_constants(
    ...     engine, y, np.ones((1, 12)), [0.9], (d[0], d[1] - d[0]), (o[0], o[1] - o[0]), 0.5)
    >>> bool(got[0, 0] == full.quantile_constants[0])
    True
    """
    w = np.asarray(weights, dtype=np.float64)
    qs = [float(q) for q in quantiles]
    totals = replicate_pair_totals(w, engine.groups, engine.pairs)
    stats = _PairStatistics(y, d_scaling, o_scaling, 1.0)
    threshold = max(float(start), 0.0) if np.isfinite(start) else 0.0
    while True:
        gathered = engine.map_reduce(_TailGatherer(stats, threshold))
        if gathered[2].size > MAX_GATHERED:
            return None
        out, short = _weighted_tail_quantiles(gathered, w, totals, qs)
        if not short.any() or threshold == 0.0:
            return out
        # some replicate's constant lies below the threshold: gather more
        threshold = threshold / 4 if threshold > 1e-12 else 0.0
