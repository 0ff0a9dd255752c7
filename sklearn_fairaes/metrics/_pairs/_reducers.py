"""Reducers of blocks of distances: histograms, collections, top-k lists, neighbours."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from ._blocks import PairBlock, Reducer
from ._range import fine_bin_index
from ._types import pairs_to_condensed

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from ._types import (
        BlockStatistic,
        PairDistances,
        Pairs,
        _Histogram,
        _RowBest,
        _Sums,
        _TopK,
    )


class HistogramReducer:
    """Counts (and outcome sums) of pairs per fine distance bin.

    Parameters
    ----------
    lo, hi : float
        Range of the bins; pairs outside it are skipped when ``restrict``.
    n_bins : int
    y : ndarray, default=None
        When given, also per-bin sums of ``|y_i - y_j|`` and of its square.
    restrict : bool, default=False
        Whether to skip pairs outside ``[lo, hi]`` (False when it is the range
        of all distances).
    """

    def __init__(
        self,
        lo: float,
        hi: float,
        n_bins: int,
        *,
        y: NDArray[np.float64] | None = None,
        restrict: bool = False,
    ) -> None:
        self.lo, self.hi, self.n_bins = lo, hi, n_bins
        self.y = y
        self.restrict = restrict

    def map(self, block: PairBlock) -> _Histogram:
        d = block.values()
        o = None
        if self.y is not None:
            o = block.values(block.outcome_differences(self.y))
        if self.restrict:
            keep = (d >= self.lo) & (d <= self.hi)
            d = d[keep]
            o = None if o is None else o[keep]
        idx = fine_bin_index(d, self.lo, self.hi, self.n_bins)
        counts = np.bincount(idx, minlength=self.n_bins)
        if o is None:
            return counts
        # with weights, bincount sums them in float64 (numpy's stubs say intp)
        sums = cast(
            "NDArray[np.float64]", np.bincount(idx, weights=o, minlength=self.n_bins)
        )
        squares = cast(
            "NDArray[np.float64]", np.bincount(idx, weights=o * o, minlength=self.n_bins)
        )
        return counts, sums, squares

    def combine(self, a: _Histogram, b: _Histogram) -> _Histogram:
        # the partial results are counts without y, (counts, sums, squares) with it
        if self.y is None:
            return cast("NDArray[np.intp]", a) + cast("NDArray[np.intp]", b)
        sa, sb = cast("_Sums", a), cast("_Sums", b)
        return sa[0] + sb[0], sa[1] + sb[1], sa[2] + sb[2]

    def empty(self) -> _Histogram:
        counts = np.zeros(self.n_bins, dtype=np.int64)
        if self.y is None:
            return counts
        return counts, np.zeros(self.n_bins), np.zeros(self.n_bins)


class CollectReducer:
    """Pairs ``(d, i, j)`` in ``[lo, hi]`` whose fine bin is selected."""

    def __init__(
        self,
        lo: float,
        hi: float,
        n_bins: int,
        selected_bins: NDArray[np.intp],
        *,
        restrict: bool = False,
    ) -> None:
        self.lo, self.hi, self.n_bins = lo, hi, n_bins
        self.selected = np.zeros(n_bins, dtype=bool)
        self.selected[selected_bins] = True
        self.restrict = restrict

    def map(self, block: PairBlock) -> PairDistances:
        d = block.values()
        keep = np.ones(d.shape, dtype=bool)
        if self.restrict:
            keep &= (d >= self.lo) & (d <= self.hi)
        keep[keep] = self.selected[fine_bin_index(d[keep], self.lo, self.hi, self.n_bins)]
        pos = np.flatnonzero(keep)
        i, j = block.pair_indices(pos)
        return d[pos], i, j

    def combine(self, a: PairDistances, b: PairDistances) -> PairDistances:
        return _concat_pairs(a, b)

    def empty(self) -> PairDistances:
        return np.empty(0), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)


def _concat_pairs(a: PairDistances, b: PairDistances) -> PairDistances:
    """The pairs of ``a`` followed by those of ``b``."""
    return (
        np.concatenate([a[0], b[0]]),
        np.concatenate([a[1], b[1]]),
        np.concatenate([a[2], b[2]]),
    )


class _EqualRowCounts:
    """Per-row number of pairs whose distance equals ``value``."""

    def __init__(self, value: float, n_samples: int) -> None:
        self.value, self.n_samples = value, n_samples

    def map(self, block: PairBlock) -> NDArray[np.int64]:
        eq = block.checked_distances() == self.value
        if block.mask is not None:
            eq &= block.mask
        out = np.zeros(self.n_samples, dtype=np.int64)
        out[block.rows] = np.count_nonzero(eq, axis=1)
        return out

    def combine(self, a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
        return a + b

    def empty(self) -> NDArray[np.int64]:
        return np.zeros(self.n_samples, dtype=np.int64)


class _EqualPairs:
    """Pairs ``(i, j)`` with distance ``value`` and ``row_lo <= i < row_hi``."""

    def __init__(self, value: float, row_lo: int, row_hi: int) -> None:
        self.value, self.row_lo, self.row_hi = value, row_lo, row_hi

    def map(self, block: PairBlock) -> Pairs:
        d = block.values()
        i, j = block.pair_indices(np.flatnonzero(d == self.value))
        keep = (i >= self.row_lo) & (i < self.row_hi)
        return i[keep], j[keep]

    def combine(self, a: Pairs, b: Pairs) -> Pairs:
        return np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])

    def empty(self) -> Pairs:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)


class TopKReducer:
    """The ``k`` nearest and ``k`` farthest pairs of the blocks.

    Nearest pairs are ordered by increasing distance, then increasing ``(i,
    j)``. Farthest pairs are ordered by decreasing distance, then by increasing
    ``(i, j)`` when ``farthest_ties="low"`` or decreasing ``(i, j)`` when
    ``"high"`` (which makes them the last ``k`` pairs of the ascending order).
    """

    def __init__(
        self, k: int, n_samples: int, *, farthest_ties: Literal["low", "high"] = "low"
    ) -> None:
        self.k, self.n_samples = k, n_samples
        self.farthest_ties = farthest_ties

    def _keep(
        self, d: NDArray[np.float64], i: NDArray[np.int64], j: NDArray[np.int64]
    ) -> _TopK:
        key = pairs_to_condensed(i, j, self.n_samples)
        near = np.lexsort((key, d))[: self.k]
        tie_key = key if self.farthest_ties == "low" else -key
        far = np.lexsort((tie_key, -d))[: self.k]
        return (d[near], i[near], j[near]), (d[far], i[far], j[far])

    def map(self, block: PairBlock) -> _TopK:
        d = block.values()
        k, m = self.k, d.size
        if m <= k:
            i, j = block.pair_indices()
            return self._keep(d, i, j)
        part = np.partition(d, (k - 1, m - k))
        pos = np.flatnonzero((d <= part[k - 1]) | (d >= part[m - k]))
        i, j = block.pair_indices(pos)
        return self._keep(d[pos], i, j)

    def combine(self, a: _TopK, b: _TopK) -> _TopK:
        near = _concat_pairs(a[0], b[0])
        far = _concat_pairs(a[1], b[1])
        # Both halves hold whole candidate lists; re-select from their union.
        d = np.concatenate([near[0], far[0]])
        i = np.concatenate([near[1], far[1]])
        j = np.concatenate([near[2], far[2]])
        key = pairs_to_condensed(i, j, self.n_samples)
        _, first = np.unique(key, return_index=True)
        return self._keep(d[first], i[first], j[first])

    def empty(self) -> _TopK:
        e = (np.empty(0), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        return e, e


# --------------------------------------------------------------------------
# Reducers of the review metrics (per-row neighbours, top pairs by a
# statistic, histograms of a statistic by its bit pattern)
# --------------------------------------------------------------------------


def _smallest_per_row(
    d: NDArray[np.float64], col_start: int, k: int, sentinel: int
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The ``k`` smallest entries of each row of ``d``, by (value, column).

    Columns are the essays ``col_start, col_start + 1, ...``. Rows with fewer
    than ``k`` columns are padded with ``inf`` at index ``sentinel`` (sorted
    last). Ties at the ``k``-th value keep the lowest columns: the entries
    below it, then the first equal ones from the left (columns increase along a
    row, so a running count of equal entries picks them).
    """
    m, c = d.shape
    cols = np.arange(col_start, col_start + c, dtype=np.int64)
    if c <= k:
        dist = np.full((m, k), np.inf)
        idx = np.full((m, k), sentinel, dtype=np.int64)
        dist[:, :c] = d
        idx[:, :c] = cols
    else:
        kth = np.partition(d, k - 1, axis=1)[:, k - 1 : k]
        take = d <= kth
        extra = np.flatnonzero(np.count_nonzero(take, axis=1) > k)
        if extra.size:
            # rows with ties at the k-th value: keep the first equal ones only
            sub, top = d[extra], kth[extra]
            equal = sub == top
            need = k - np.count_nonzero(sub < top, axis=1)
            take[extra] = (sub < top) | (
                equal & (np.cumsum(equal, axis=1) <= need[:, None])
            )
        # exactly k entries per row, in increasing column order
        rows, pos = np.nonzero(take)
        dist = d[rows, pos].reshape(m, k)
        idx = cols[pos].reshape(m, k)
    order = np.lexsort((idx, dist), axis=1)
    return np.take_along_axis(dist, order, 1), np.take_along_axis(idx, order, 1)


class RowNeighborsReducer:
    """The ``k`` nearest other essays of every essay, exactly.

    Each block of the upper triangle serves both its rows (neighbours among its
    columns) and its columns (neighbours among its rows, through the transposed
    block), so every pair is seen once and the result holds ``O(N * k)``
    numbers, never ``N x N``. Ties in distance are broken by the lower index of
    the neighbour. Blocks must all come from one engine without a group filter
    (bands of rows are aligned with bands of columns).

    :meth:`result` turns the combined partial result into two arrays of shape
    ``(n_samples, k)``: distances (increasing along a row) and neighbours.
    """

    def __init__(self, k: int, n_samples: int) -> None:
        self.k, self.n_samples = k, n_samples

    def _merge(
        self,
        a: tuple[NDArray[np.float64], NDArray[np.int64]],
        b: tuple[NDArray[np.float64], NDArray[np.int64]],
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        d = np.concatenate([a[0], b[0]], axis=1)
        idx = np.concatenate([a[1], b[1]], axis=1)
        order = np.lexsort((idx, d), axis=1)[:, : self.k]
        return np.take_along_axis(d, order, 1), np.take_along_axis(idx, order, 1)

    def map(self, block: PairBlock) -> _RowBest:
        D = block.checked_distances()
        r0, c0 = block.row_start, block.col_start
        n = self.n_samples
        if block.mask is not None:
            if r0 != c0:  # pragma: no cover - internal misuse
                raise ValueError("RowNeighborsReducer needs an engine without groups")
            # A diagonal block: its upper triangle mirrored, the diagonal excluded.
            upper = np.where(block.mask, D, np.inf)
            full = np.minimum(upper, upper.T)
            return {r0: _smallest_per_row(full, c0, self.k, n)}
        return {
            r0: _smallest_per_row(D, c0, self.k, n),
            c0: _smallest_per_row(D.T, r0, self.k, n),
        }

    def combine(self, a: _RowBest, b: _RowBest) -> _RowBest:
        out = dict(a)
        for start, part in b.items():
            out[start] = self._merge(out[start], part) if start in out else part
        return out

    def empty(self) -> _RowBest:
        return {}

    def result(self, partial: _RowBest) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """``(distances, neighbours)`` of shape ``(n_samples, k)``, rows in order."""
        starts = sorted(partial)
        dist = np.concatenate([partial[s][0] for s in starts])
        idx = np.concatenate([partial[s][1] for s in starts])
        if dist.shape[0] != self.n_samples:  # pragma: no cover - internal misuse
            raise RuntimeError("RowNeighborsReducer did not see every row")
        return dist, idx


class TopPairsReducer:
    """The ``k`` pairs with the largest value of a per-pair statistic.

    Parameters
    ----------
    k : int
    n_samples : int
    statistic : callable
        ``statistic(block)`` returns a float64 array of the block's shape.
    above : float, default=-inf
        Only pairs whose value is strictly greater count and are kept; the
        partial result also counts them.

    Pairs come back ordered by decreasing value, ties by increasing condensed
    index (the lowest ``(i, j)`` first), as ``((value, i, j), count)``.
    """

    def __init__(
        self,
        k: int,
        n_samples: int,
        statistic: BlockStatistic,
        *,
        above: float = -math.inf,
    ) -> None:
        self.k, self.n_samples = k, n_samples
        self.statistic = statistic
        self.above = above

    def _keep(
        self, v: NDArray[np.float64], i: NDArray[np.int64], j: NDArray[np.int64]
    ) -> PairDistances:
        order = np.lexsort((pairs_to_condensed(i, j, self.n_samples), -v))[: self.k]
        return v[order], i[order], j[order]

    def map(self, block: PairBlock) -> tuple[PairDistances, int]:
        v = block.values(self.statistic(block))
        pos = np.flatnonzero(v > self.above)
        count = int(pos.size)
        if pos.size > self.k:
            # the k-th largest value; every pair at or above it is a candidate
            # (ties at the threshold are settled by the pair index in _keep)
            kth = np.partition(v[pos], pos.size - self.k)[pos.size - self.k]
            pos = pos[v[pos] >= kth]
        i, j = block.pair_indices(pos)
        return self._keep(v[pos], i, j), count

    def combine(
        self, a: tuple[PairDistances, int], b: tuple[PairDistances, int]
    ) -> tuple[PairDistances, int]:
        return self._keep(*_concat_pairs(a[0], b[0])), a[1] + b[1]

    def empty(self) -> tuple[PairDistances, int]:
        e = (np.empty(0), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        return e, 0


#: Bits of a float64 below the bins of :func:`float_key` at the coarsest level:
#: 2**6 = 64 bins per power of two (each about 1.1% wide).


class MultiReducer:
    """Several reducers over the same blocks in one pass (a tuple of results).

    Reducers that share a statistic object share its per-block work when the
    statistic caches it (see ``sklearn_fairaes.metrics._review``).
    """

    def __init__(self, reducers: Sequence[Reducer[Any]]) -> None:
        self.reducers = tuple(reducers)

    def map(self, block: PairBlock) -> tuple[Any, ...]:
        return tuple(r.map(block) for r in self.reducers)

    def combine(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(r.combine(x, y) for r, x, y in zip(self.reducers, a, b))

    def empty(self) -> tuple[Any, ...]:
        return tuple(r.empty() for r in self.reducers)
