"""All bootstrap replicates of Lipschitz counts from one pass over the blocks.

A replicate of the essay-level bootstrap is a vector ``w`` of multiplicities
(essay ``i`` drawn ``w[i]`` times, see
:func:`sklearn_fairaes.metrics._bootstrap.replicate_weights`). In the
resampled set, the copies of essays ``i != j`` form ``w[i] * w[j]`` pairs,
all with the distance and the score difference of ``(i, j)``; a copy paired
with another copy of the same essay is not a pair of two essays and is left
out. The count of replicate ``b`` is therefore ``sum_{i<j} w[b,i] w[b,j]
hit[i,j]``, and for one block of rows ``R`` and columns ``C``, all ``B``
replicates come from one matrix product::

    counts += ((W[:, R] @ hit) * W[:, C]).sum(axis=1)

The number of pairs needs no pass: ``((sum w)^2 - sum w^2) / 2`` over all
pairs, the same per group for the pairs within groups.

Several *conditions* (scores, the two normalisations, ``L``) share the pass:
their hit matrices of a block are laid side by side and multiplied by the
row weights at once, which keeps the product large enough for BLAS.

Exactness: a hit matrix holds 0 and 1 and the multiplicities are small
integers, so ``W[:, R] @ hit`` in float32 is exact (every partial sum is an
integer at most ``n < 2**24``), and the products by ``W[:, C]`` are summed
in float64, exact below ``2**53``. The counts are exact integers whatever
the order of the sums, hence the same for every ``n_jobs``.

Normalisation: the ranges (``min``/``max`` of distances and score
differences) are those of the full sample, not of each replicate. They are
the scale of the paper's figure, fixed by the data's observed range: the
statistic bootstrapped is "the share of pairs within the scale of this
audit". A replicate's own maximum distance can only shrink (the extremes
are left out of a third of the replicates), which biased the replicate
fractions upwards under min-max normalisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ._blocks import PairBlock
from ._scaling import _normalise

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ._engine import PairwiseEngine
    from ._scaling import Scaling

__all__ = [
    "LipschitzCondition",
    "ReplicateLipschitzCounter",
    "replicate_lipschitz_fractions",
    "replicate_pair_totals",
]

#: Multiplicities up to this are exact in the float32 product (see above).
_F32_EXACT = 2**24


class LipschitzCondition(NamedTuple):
    """One Lipschitz inequality: ``o_scaling(|y_i - y_j|) <= L * d_scaling(d_ij)``."""

    y: NDArray[np.float64]
    d_scaling: Scaling
    o_scaling: Scaling
    lipschitz_constant: float = 1.0


class ReplicateLipschitzCounter:
    """Weighted Lipschitz counts of every replicate and every condition.

    Parameters
    ----------
    weights : ndarray of shape (n_bootstrap, n_samples)
        Multiplicities of the essays, in the engine's order.
    conditions : sequence of LipschitzCondition
        The inequalities counted in the same pass.

    The partial result of a block is a float64 array of shape
    ``(n_conditions, n_bootstrap)``.
    """

    def __init__(
        self, weights: NDArray[np.float64], conditions: Sequence[LipschitzCondition]
    ) -> None:
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 2:
            raise ValueError(f"weights must be 2-D (n_bootstrap, n_samples), got {w.shape}")
        if w.size and (w.min() < 0 or float(w.sum(axis=1).max()) >= _F32_EXACT):
            raise ValueError(
                "weights must be non-negative multiplicities summing to less than 2**24 "
                "per replicate"
            )
        self.weights = np.ascontiguousarray(w)
        # float32 rows: the product with 0/1 hit matrices is exact (module docstring)
        self.w32 = self.weights.astype(np.float32)
        self.conditions = list(conditions)

    def __sizeof__(self) -> int:
        # Its weights, as dask.sizeof measures objects with sys.getsizeof: on
        # joblib's Dask backend the counter is then scattered once per pass
        # instead of embedded in every task (1,000 replicates of 1,569
        # essays: an 18 MiB graph per pass, and Dask's warning about it).
        return object.__sizeof__(self) + self.weights.nbytes + self.w32.nbytes

    def map(self, block: PairBlock) -> NDArray[np.float64]:
        d = block.checked_distances()
        n_rows = block.row_stop - block.row_start
        n_cols = block.col_stop - block.col_start
        k = len(self.conditions)
        hits = np.empty((n_rows, k * n_cols), dtype=np.float32)
        # conditions of several systems share the normalised distances
        scaled: dict[tuple[Scaling, float], NDArray[np.float64]] = {}
        for c, cond in enumerate(self.conditions):
            key = (cond.d_scaling, cond.lipschitz_constant)
            dn = scaled.get(key)
            if dn is None:
                dn = _normalise(d, cond.d_scaling)
                if cond.lipschitz_constant != 1.0:
                    np.multiply(dn, cond.lipschitz_constant, out=dn)
                scaled[key] = dn
            o = block.outcome_differences(cond.y)
            _normalise(o, cond.o_scaling, out=o)
            hit = np.less_equal(o, dn)
            if block.mask is not None:
                hit &= block.mask
            hits[:, c * n_cols : (c + 1) * n_cols] = hit
        weighted = self.w32[:, block.rows] @ hits  # (B, k * n_cols), exact
        cols = self.weights[:, block.cols]
        out = np.empty((k, self.weights.shape[0]))
        for c in range(k):
            part = weighted[:, c * n_cols : (c + 1) * n_cols].astype(np.float64)
            out[c] = np.einsum("bj,bj->b", part, cols)
        return out

    def combine(
        self, a: NDArray[np.float64], b: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        return a + b

    def empty(self) -> NDArray[np.float64]:
        return np.zeros((len(self.conditions), self.weights.shape[0]))


def replicate_pair_totals(
    weights: NDArray[np.float64],
    groups: NDArray[np.intp] | None = None,
    pairs: str = "all",
) -> NDArray[np.float64]:
    """Pairs of two different essays in each replicate, without a pass.

    ``((sum w)^2 - sum w^2) / 2`` over all essays; with ``groups``, the same
    summed over each group (``pairs="within"``) or its complement
    (``"between"``).

    Parameters
    ----------
    weights : ndarray of shape (n_bootstrap, n_samples)
    groups : ndarray of int of shape (n_samples,), default=None
        Group codes ``0..G-1``, as the engine holds them.
    pairs : {"all", "within", "between"}, default="all"

    Returns
    -------
    totals : ndarray of shape (n_bootstrap,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics._pairs._bootstrap_pairs import replicate_pair_totals
    >>> replicate_pair_totals(np.array([[1.0, 1.0, 1.0], [2.0, 1.0, 0.0]])).tolist()
    [3.0, 2.0]
    """
    w = np.asarray(weights, dtype=np.float64)
    s = w.sum(axis=1)
    everything = (s * s - (w * w).sum(axis=1)) / 2.0
    if groups is None or pairs == "all":
        return everything
    codes = np.asarray(groups)
    within = np.zeros(w.shape[0])
    for g in np.unique(codes):
        wg = w[:, codes == g]
        sg = wg.sum(axis=1)
        within += (sg * sg - (wg * wg).sum(axis=1)) / 2.0
    return within if pairs == "within" else everything - within


def replicate_lipschitz_fractions(
    engine: PairwiseEngine,
    weights: NDArray[np.float64],
    conditions: Sequence[LipschitzCondition],
) -> NDArray[np.float64]:
    """Lipschitz fractions of every condition on every replicate, in one pass.

    Parameters
    ----------
    engine : PairwiseEngine
        Its blocks (and group filter) give the pairs.
    weights : ndarray of shape (n_bootstrap, n_samples)
        Multiplicities in the engine's order of essays.
    conditions : sequence of LipschitzCondition
        Scalings fixed beforehand, from the full sample (module docstring).

    Returns
    -------
    fractions : ndarray of shape (n_conditions, n_bootstrap)
        NaN where a replicate has no pair (every copy of one essay).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics._pairs._engine import PairwiseEngine
    >>> from sklearn_fairaes.metrics._pairs._bootstrap_pairs import (
    ...     LipschitzCondition, replicate_lipschitz_fractions)
    >>> engine = PairwiseEngine(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]))
    >>> y = np.array([2.0, 2.0, 5.0])
    >>> cond = LipschitzCondition(y, (0.0, 1.0), (0.0, 1.0), 1.0)
    >>> replicate_lipschitz_fractions(engine, np.ones((1, 3)), [cond]).round(3).tolist()
    [[0.333]]
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] != engine.n_samples:
        raise ValueError(
            f"weights must have shape (n_bootstrap, {engine.n_samples}), got {w.shape}"
        )
    counts = engine.map_reduce(ReplicateLipschitzCounter(w, conditions))
    totals = replicate_pair_totals(w, engine.groups, engine.pairs)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), np.nan)
