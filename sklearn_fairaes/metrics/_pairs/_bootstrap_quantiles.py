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
2. sort them once, largest first, and, for a chunk of replicates at a time,
   cumulate their weights ``w[b, i] * w[b, j]`` down that order: the weight
   above position ``k`` is ``S_b(k)``, so ``C_b = T_b - S_b`` without
   touching the pairs below ``t``; replicate ``b``'s constant at ``q`` is the
   first position where ``(T_b - S_b) / T_b < q`` fails to hold any longer,
   read from the top (see :func:`replicate_quantile_constants`).

Cost: ``O(B x m)`` for the ``m`` gathered pairs, not ``B`` passes. The
90-99% constants sit in the upper tail, so ``m`` is a small share of the
pairs when ``t`` starts near the full sample's 90% constant; a replicate
whose constant lies below ``t`` is detected (its weight never reaches the
share) and the pass is redone with a lower ``t`` (at last ``t = 0``: all
pairs). The normalisation ranges are the full sample's, as for the
replicate Lipschitz fractions (:mod:`._bootstrap_pairs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ._bootstrap_pairs import replicate_pair_totals
from ._review_stats import _critical_constants, _PairStatistics

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ._blocks import PairBlock
    from ._engine import PairwiseEngine
    from ._scaling import Scaling

__all__ = ["replicate_quantile_constants"]

#: Most pairs gathered (16 bytes each): beyond it the constants are not bootstrapped.
MAX_GATHERED = 2**26

#: Replicates whose weights are cumulated together (memory: chunk x gathered pairs).
_CHUNK = 16

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
    """Each replicate's constants from the gathered tail, and where the tail fell short."""
    i, j, c = gathered
    order = np.argsort(-c, kind="stable")
    i, j, c = i[order], j[order], c[order]
    n_boot = weights.shape[0]
    out = np.full((len(quantiles), n_boot), np.nan)
    short = np.zeros(n_boot, dtype=bool)
    for start in range(0, n_boot, _CHUNK):
        rows = slice(start, min(start + _CHUNK, n_boot))
        w = weights[rows]
        t = totals[rows]
        if c.size:
            above = np.cumsum(w[:, i] * w[:, j], axis=1)  # weight down to each position
        else:
            above = np.zeros((w.shape[0], 0))
        with np.errstate(invalid="ignore", divide="ignore"):
            share = (t[:, None] - above) / t[:, None]  # weight at most c, over all pairs
        for k, q in enumerate(quantiles):
            # from the top, the share below a position reaches q until the
            # first position whose own weight pushes it under q: its constant
            failed = share < q
            found = failed.any(axis=1)
            first = failed.argmax(axis=1)
            values = np.where(found, c[first] if c.size else np.nan, np.nan)
            out[k, rows] = np.where(t > 0, values, np.nan)
            short[rows] |= (t > 0) & ~found
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
