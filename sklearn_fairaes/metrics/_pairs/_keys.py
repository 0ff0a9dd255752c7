"""Float keys of distances and statistics, their reducers, and rank selection."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from . import _types
from ._blocks import PairBlock
from ._range import MinMaxReducer
from ._reducers import CollectReducer, HistogramReducer, _EqualPairs, _EqualRowCounts
from ._types import (
    condensed_to_pairs,
    pairs_to_condensed,
    stable_argsort,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import NDArray

    from ._engine import PairwiseEngine
    from ._types import (
        BlockKeys,
        PairDistances,
    )


KEY_SHIFT = 46
#: Number of coarse keys of the non-negative float64 values, +inf included.
N_COARSE_KEYS = (0x7FF0000000000000 >> KEY_SHIFT) + 1


def float_key(values: NDArray[np.float64], shift: int = KEY_SHIFT) -> NDArray[np.int64]:
    """Monotone integer key of non-negative float64 values (``+inf`` included).

    The bit pattern of a non-negative IEEE float, read as an integer, increases
    with the value; dropping its ``shift`` lowest bits gives bins whose edges are
    exact floats. ``shift=0`` gives one key per value, so a histogram can be
    refined down to single values without any rounding.
    """
    return np.asarray(values, dtype=np.float64).view(np.int64) >> shift


def key_floor(key: int, shift: int = KEY_SHIFT) -> float:
    """The smallest float64 of key ``key`` (at ``shift``)."""
    return float(np.array([key << shift], dtype=np.int64).view(np.float64)[0])


class KeyHistogramReducer:
    """Counts of a non-negative per-pair statistic by its :func:`float_key`.

    Parameters
    ----------
    keys : callable
        ``keys(block, shift)`` returns the int64 keys (:func:`float_key` at
        ``shift``) of the statistic of every entry of the block (2-D).
    shift : int, default=KEY_SHIFT
    prefix : (sequence of int, int), default=None
        ``(keys, coarser_shift)``: row ``r`` of the result counts only values
        whose key at the coarser shift is ``keys[r]``, in the
        ``2**(coarser_shift - shift)`` finer keys inside it, numbered from 0
        (one pass for several bins refined at once).
    """

    def __init__(
        self,
        keys: BlockKeys,
        *,
        shift: int = KEY_SHIFT,
        prefix: tuple[Sequence[int], int] | None = None,
    ) -> None:
        self.keys = keys
        self.shift = shift
        self.prefix = prefix
        if prefix is None:
            self.n_bins = (0x7FF0000000000000 >> shift) + 1
        else:
            self.n_bins = 1 << (prefix[1] - shift)

    def map(self, block: PairBlock) -> NDArray[np.intp]:
        k = block.values(self.keys(block, self.shift))
        if self.prefix is None:
            return np.bincount(k, minlength=self.n_bins)
        coarse_keys, coarser = self.prefix
        drop = coarser - self.shift
        top = k >> drop
        out = self.empty()
        for r, key in enumerate(coarse_keys):
            out[r] = np.bincount(k[top == key] - (key << drop), minlength=self.n_bins)
        return out

    def combine(self, a: NDArray[np.intp], b: NDArray[np.intp]) -> NDArray[np.intp]:
        return a + b

    def empty(self) -> NDArray[np.intp]:
        if self.prefix is None:
            return np.zeros(self.n_bins, dtype=np.intp)
        return np.zeros((len(self.prefix[0]), self.n_bins), dtype=np.intp)


class KeyCollectReducer:
    """Values of a per-pair statistic whose key (at ``shift``) is one of ``selected``.

    ``keys`` is as for :class:`KeyHistogramReducer`; ``values(block, positions)``
    returns the statistic at the given positions of :meth:`PairBlock.values`
    (so that a statistic whose keys are cheap to get exactly but whose values
    are not is computed exactly for the selected pairs only). The partial
    result is ``(values, overflow)``: beyond ``cap`` values nothing is kept and
    ``overflow`` is True.
    """

    def __init__(
        self,
        keys: BlockKeys,
        values: Callable[[PairBlock, NDArray[np.intp]], NDArray[np.float64]],
        selected: Sequence[int],
        shift: int,
        *,
        cap: int | None = None,
    ) -> None:
        self.keys, self.values = keys, values
        self.selected = np.asarray(sorted(set(selected)), dtype=np.int64)
        self.shift = shift
        self.cap = cap

    def _capped(self, values: NDArray[np.float64]) -> tuple[NDArray[np.float64], bool]:
        if self.cap is not None and values.size > self.cap:
            return np.empty(0), True
        return values, False

    def map(self, block: PairBlock) -> tuple[NDArray[np.float64], bool]:
        k = block.values(self.keys(block, self.shift))
        pos = np.flatnonzero(np.isin(k, self.selected))
        if self.cap is not None and pos.size > self.cap:
            return np.empty(0), True
        return self.values(block, pos), False

    def combine(
        self, a: tuple[NDArray[np.float64], bool], b: tuple[NDArray[np.float64], bool]
    ) -> tuple[NDArray[np.float64], bool]:
        if a[1] or b[1]:
            return np.empty(0), True
        return self._capped(np.concatenate([a[0], b[0]]))

    def empty(self) -> tuple[NDArray[np.float64], bool]:
        return np.empty(0), False


# --------------------------------------------------------------------------
# Rank selection
# --------------------------------------------------------------------------
def select_rank_windows(
    engine: PairwiseEngine,
    windows: Sequence[tuple[int, int]],
    *,
    n_fine_bins: int = 2**16,
    max_candidates: int | None = None,
) -> list[PairDistances]:
    """Pairs at given ranks of the order by (distance, pair index).

    Parameters
    ----------
    engine : PairwiseEngine
    windows : list of (int, int)
        Half-open rank ranges ``[start, stop)`` of the ascending order of all
        (filtered) pairs by distance, ties broken by the condensed index.
    n_fine_bins : int, default=2**16
        Fine bins per histogram pass.
    max_candidates : int, default=None
        Most pairs gathered in memory at once for one window; None means
        ``max(4 * window size, 2**20)``.

    Returns
    -------
    list of (d, i, j) tuples of 1-D arrays, in ascending order, one per window.

    Notes
    -----
    Small problems (at most :data:`EXACT_SORT_MAX_PAIRS` pairs) sort all
    distances. Larger ones need no ``N x N`` memory: a pass finds the distance
    range, a histogram pass locates the fine bins holding each window, and a
    last pass gathers the pairs of those bins, which are sorted. A fine bin too
    full to gather is refined with another histogram over its own range, and a
    run of equal distances is split by counting its pairs row by row.
    """
    T = engine.n_pairs
    for start, stop in windows:
        if not 0 <= start < stop <= T:  # pragma: no cover - internal misuse
            raise ValueError(f"rank window [{start}, {stop}) outside [0, {T})")
    # read at call time (a module attribute): the tests lower it to reach the
    # selection path on small problems
    if T <= _types.EXACT_SORT_MAX_PAIRS and (
        engine.groups is None or engine.pairs == "all"
    ):
        d = engine.condensed()
        order = stable_argsort(d)
        out: list[PairDistances] = []
        for start, stop in windows:
            k = order[start:stop]
            i, j = condensed_to_pairs(k, engine.n_samples)
            out.append((d[k], i, j))
        return out
    lo, hi, _ = engine.map_reduce(MinMaxReducer())
    return _select_windows(
        engine, list(windows), lo, hi, 0, False, n_fine_bins, max_candidates
    )


def _sort_pairs(
    d: NDArray[np.float64], i: NDArray[np.int64], j: NDArray[np.int64], n: int
) -> PairDistances:
    order = np.lexsort((pairs_to_condensed(i, j, n), d))
    return d[order], i[order], j[order]


def _select_windows(
    engine: PairwiseEngine,
    windows: list[tuple[int, int]],
    lo: float,
    hi: float,
    below: int,
    restrict: bool,
    n_bins: int,
    cap: int | None,
) -> list[PairDistances]:
    """Select rank windows among pairs with ``lo <= d <= hi`` (ranks from ``below``)."""
    n = engine.n_samples
    if lo == hi:
        return [_select_ties(engine, lo, s - below, e - below) for s, e in windows]
    # without y, the reducer's partial result is the array of counts
    counts = cast(
        "NDArray[np.intp]",
        engine.map_reduce(HistogramReducer(lo, hi, n_bins, restrict=restrict)),
    )
    cum = np.concatenate([[0], np.cumsum(counts)])  # cum[f]: pairs in bins < f

    def first_rank(f: int) -> int:
        return below + int(cum[f])

    plans: list[tuple[str, int, int, int, int]] = []
    collect: list[int] = []
    for start, stop in windows:
        f_lo = int(np.searchsorted(cum, start - below, side="right")) - 1
        f_hi = int(np.searchsorted(cum, stop - 1 - below, side="right")) - 1
        n_cand = int(cum[f_hi + 1] - cum[f_lo])
        limit = cap if cap is not None else max(4 * (stop - start), 2**20)
        if n_cand <= limit:
            plans.append(("collect", start, stop, f_lo, f_hi))
            collect.extend(range(f_lo, f_hi + 1))
        else:
            plans.append(("split", start, stop, f_lo, f_hi))
    gathered: PairDistances | None = None
    offsets: dict[int, int] = {}
    if collect:
        sel = np.unique(np.asarray(collect, dtype=np.intp))
        d, i, j = engine.map_reduce(CollectReducer(lo, hi, n_bins, sel, restrict=restrict))
        expected = int(counts[sel].sum())
        if d.size != expected:
            raise RuntimeError(
                f"two passes over the same pairs disagreed ({d.size} pairs gathered, "
                f"{expected} counted); the distances are not reproducible across "
                f"workers (different BLAS builds?). Run with n_jobs=1"
            )
        # Bins are monotone in the distance, so after sorting the gathered pairs
        # each selected bin is a contiguous run, in bin order.
        gathered = _sort_pairs(d, i, j, n)
        starts = np.concatenate([[0], np.cumsum(counts[sel])])
        offsets = {int(f): int(s) for f, s in zip(sel, starts)}
    out: list[PairDistances] = []
    for kind, start, stop, f_lo, f_hi in plans:
        if kind == "collect":
            # a "collect" plan put its bins in collect, so they were gathered
            gd, gi, gj = cast("PairDistances", gathered)
            base = offsets[f_lo] + (start - first_rank(f_lo))
            sl = slice(base, base + (stop - start))
            out.append((gd[sl], gi[sl], gj[sl]))
            continue
        pieces: list[PairDistances] = []
        if f_lo == f_hi:
            pieces.append(_select_in_bin(engine, start, stop, f_lo, lo, hi, first_rank,
                                         restrict, n_bins, cap))  # fmt: skip
        else:
            end_lo, begin_hi = first_rank(f_lo + 1), first_rank(f_hi)
            pieces.append(_select_in_bin(engine, start, end_lo, f_lo, lo, hi, first_rank,
                                         restrict, n_bins, cap))  # fmt: skip
            if begin_hi > end_lo:
                mid = np.arange(f_lo + 1, f_hi)
                d, i, j = engine.map_reduce(
                    CollectReducer(lo, hi, n_bins, mid, restrict=restrict)
                )
                pieces.append(_sort_pairs(d, i, j, n))
            pieces.append(_select_in_bin(engine, begin_hi, stop, f_hi, lo, hi, first_rank,
                                         restrict, n_bins, cap))  # fmt: skip
        out.append(
            (
                np.concatenate([p[0] for p in pieces]),
                np.concatenate([p[1] for p in pieces]),
                np.concatenate([p[2] for p in pieces]),
            )
        )
    return out


def _select_in_bin(
    engine: PairwiseEngine,
    start: int,
    stop: int,
    f: int,
    lo: float,
    hi: float,
    first_rank: Callable[[int], int],
    restrict: bool,
    n_bins: int,
    cap: int | None,
) -> PairDistances:
    sub_lo, sub_hi, _ = engine.map_reduce(MinMaxReducer(bin_filter=(lo, hi, n_bins, f)))
    # Bins are monotone in the distance, so the pairs of bin f are exactly those
    # between its smallest and largest distance: refine over that range.
    return _select_windows(
        engine, [(start, stop)], sub_lo, sub_hi, first_rank(f), True, n_bins, cap
    )[0]


def _select_ties(
    engine: PairwiseEngine, value: float, start: int, stop: int
) -> PairDistances:
    """Pairs of relative ranks ``[start, stop)`` among those at distance ``value``."""
    per_row = engine.map_reduce(_EqualRowCounts(value, engine.n_samples))
    cum = np.concatenate([[0], np.cumsum(per_row)])
    row_a = int(np.searchsorted(cum, start, side="right")) - 1
    row_b = int(np.searchsorted(cum, stop - 1, side="right")) - 1
    i, j = engine.map_reduce(_EqualPairs(value, row_a, row_b + 1), rows=(row_a, row_b + 1))
    order = np.lexsort((j, i))
    i, j = i[order], j[order]
    base = start - int(cum[row_a])
    sl = slice(base, base + (stop - start))
    i, j = i[sl], j[sl]
    return np.full(i.shape[0], value), i, j
