"""Per-pair statistics, counts and order statistics of the review pass."""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from ._blocks import PairBlock
from ._keys import (
    KEY_SHIFT,
    N_COARSE_KEYS,
    KeyCollectReducer,
    KeyHistogramReducer,
    float_key,
    key_floor,
)
from ._scaling import _normalise, _outcome_range, _scaling
from ._types import check_option

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from ._engine import PairwiseEngine
    from ._scaling import Scaling


#: Lipschitz constants of :func:`lipschitz_profile` when none are given.
DEFAULT_CONSTANTS = (0.25, 0.5, 1.0, 2.0, 4.0)

#: Most values of one histogram bin gathered in memory (32 MB) to find an order
#: statistic; a fuller bin is refined by another histogram over its own keys.
_MAX_GATHER = 2**22

#: Key shifts of the successive histograms of an order statistic: 64 bins per
#: power of two, then 2**16 sub-bins per bin, twice, then single values.
_SHIFTS = (KEY_SHIFT, 30, 14, 0)

#: Shift of the keys that the main pass computes (and the coarse keys derive
#: from): 2**16 sub-bins per coarse bin, for the windows of :func:`_guess_windows`.
_FINE_SHIFT = 30


# --------------------------------------------------------------------------
# Per-pair statistics shared by the reducers of one pass
# --------------------------------------------------------------------------
class _ThreadLocalCache:
    """Per-thread scratch (``self._local``) that is not pickled.

    A threading joblib backend maps blocks in several threads with one
    reducer object; a process backend pickles it, and each worker starts
    with empty scratch of its own.
    """

    _local: threading.local

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_local"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()


class _PairStatistics(_ThreadLocalCache):
    """Normalised distances and score differences of a block, computed once.

    The reducers of one pass (:class:`MultiReducer`) all ask for statistics of
    the same block in turn; the last block's arrays are kept so that the
    normalisation is done once per block. The cache is per thread (a threading
    joblib backend maps blocks in several threads with this one object) and is
    dropped when the object is pickled for a joblib worker.
    """

    def __init__(
        self, y: NDArray[np.float64], d_scaling: Scaling, o_scaling: Scaling, L: float
    ) -> None:
        self.y = y
        self.d_scaling, self.o_scaling = d_scaling, o_scaling
        self.L = L
        self._local = threading.local()

    def _arrays(self, block: PairBlock) -> dict[str, NDArray[Any]]:
        local = self._local
        if getattr(local, "block", None) is not block:
            local.block, local.cached = block, {}
            d = _normalise(block.checked_distances(), self.d_scaling)
            # The blocked distances can fall below a range found by the float32
            # screen by rounding (1e-16): clip, so that no normalised value is
            # negative (a no-op when the range comes from these blocks).
            np.maximum(d, 0.0, out=d)
            o = block.outcome_differences(self.y)
            o = _normalise(o, self.o_scaling, out=o)
            np.maximum(o, 0.0, out=o)
            local.cached.update(d=d, o=o)
        cached: dict[str, NDArray[Any]] = local.cached
        return cached

    def violation(self, block: PairBlock) -> NDArray[np.float64]:
        """``norm(|dy|) - L * norm(d)`` of every pair (> 0: the pair violates)."""
        arrays = self._arrays(block)
        if "v" not in arrays:
            d, o = arrays["d"], arrays["o"]
            # the product as lipschitz_fraction forms it, so signs agree with it
            Ld = d * self.L if self.L != 1.0 else d
            arrays["v"] = o - Ld
        return arrays["v"]

    def keys(self, block: PairBlock, shift: int) -> NDArray[np.int64]:
        """Exact :func:`float_key` (at ``shift``) of every pair's critical constant.

        The quotient ``o / d`` is within a few units in the last place of the
        critical constant, so its key is the constant's key unless it lies
        within 8 units of a bin edge; only those pairs (and, at ``shift=0``,
        all) get the exact constant, which is far dearer than the quotient.
        Keys at shifts from :data:`_FINE_SHIFT` up are those at
        :data:`_FINE_SHIFT` with the low bits dropped (its edges are theirs).
        """
        arrays = self._arrays(block)
        name = f"k{shift}"
        if name in arrays:
            return arrays[name]
        if shift > _FINE_SHIFT:
            arrays[name] = self.keys(block, _FINE_SHIFT) >> (shift - _FINE_SHIFT)
            return arrays[name]
        d, o = arrays["d"], arrays["o"]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            q = np.divide(o, d)
        q[o <= 0] = 0.0  # also 0/0
        bits = q.view(np.int64)
        low = bits & ((1 << shift) - 1)
        near = np.flatnonzero((low < 8) | (low >= (1 << shift) - 8))
        flat = bits.reshape(-1)
        exact = _critical_constants(o.reshape(-1)[near], d.reshape(-1)[near])
        flat[near] = exact.view(np.int64)
        np.right_shift(bits, shift, out=bits)
        arrays[name] = bits
        return bits

    def exact(self, block: PairBlock, positions: NDArray[np.intp]) -> NDArray[np.float64]:
        """Critical constants of the pairs at ``positions`` of ``block.values()``."""
        arrays = self._arrays(block)
        o = block.values(arrays["o"])[positions]
        d = block.values(arrays["d"])[positions]
        return _critical_constants(o, d)


class _LipschitzCounts:
    """Pairs satisfying the condition at each constant, and with no difference.

    The comparison is that of :func:`lipschitz_fraction`'s float64 count, so
    the counts equal its counts.
    """

    def __init__(self, stats: _PairStatistics, constants: Sequence[float]) -> None:
        self.stats = stats
        self.constants = list(constants)

    def map(self, block: PairBlock) -> NDArray[np.int64]:
        arrays = self.stats._arrays(block)
        d, o = arrays["d"], arrays["o"]
        hits = [o <= 0]
        hits += [np.less_equal(o, d * L if L != 1.0 else d) for L in self.constants]
        if block.mask is not None:
            for h in hits:
                h &= block.mask
        return np.array([np.count_nonzero(h) for h in hits], dtype=np.int64)

    def combine(self, a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
        return a + b

    def empty(self) -> NDArray[np.int64]:
        return np.zeros(len(self.constants) + 1, dtype=np.int64)


def _critical_constants(
    o: NDArray[np.float64], d: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Smallest float ``L`` with ``o <= fl(L * d)``, elementwise (``o, d >= 0``).

    ``fl(L * d)`` does not decrease with ``L``, so the pairs satisfied at ``L``
    are exactly those with a critical constant at most ``L``. The correctly
    rounded quotient ``o / d`` is within one unit in the last place of it: one
    step up repairs a quotient that is too small (``fl(q * d) < o``), and steps
    down find a smaller float that still satisfies.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c = np.divide(o, d)
        # 0/0 (duplicates with equal scores) and 0/d: satisfied at every L
        c[o <= 0] = 0.0
        low = c * d < o  # False for inf (d == 0 gives nan, d > 0 gives inf)
        np.nextafter(c, np.inf, out=c, where=low)
        flat_c, flat_o, flat_d = c.reshape(-1), o.reshape(-1), d.reshape(-1)
        down = np.nextafter(flat_c, 0.0)
        idx = np.flatnonzero((down < flat_c) & (down * flat_d >= flat_o))
        while idx.size:
            flat_c[idx] = down[idx]
            step = np.nextafter(flat_c[idx], 0.0)
            ok = (step < flat_c[idx]) & (step * flat_d[idx] >= flat_o[idx])
            idx = idx[ok]
            down[idx] = step[ok]
    return c


# --------------------------------------------------------------------------
# The shared pass
# --------------------------------------------------------------------------
def _check_normalize(normalize: object) -> Literal["minmax", "max"] | None:
    return cast(
        "Literal['minmax', 'max'] | None",
        check_option(normalize, "normalize", ("minmax", "max", None)),
    )


def _scalings(
    engine: PairwiseEngine, y: NDArray[np.float64], normalize: str | None
) -> tuple[Scaling, Scaling, tuple[float, float] | None, tuple[float, float]]:
    """The normalisations of :func:`lipschitz_fraction` (same range passes)."""
    o_range = _outcome_range(y)
    d_range: tuple[float, float] | None = None
    if normalize is not None:
        found = engine.distance_range(screened=True) if engine.screenable else None
        d_range = (found or engine.distance_range())[:2]
    d_scaling = _scaling(*(d_range or (0.0, 0.0)), normalize, "distance")
    o_scaling = _scaling(*o_range, normalize, "score difference")
    return d_scaling, o_scaling, d_range, o_range


def _needed(q: float, total: int) -> int:
    """Smallest ``m`` with ``m / total >= q`` as a float64 comparison."""
    m = min(total, max(1, math.ceil(q * total)))
    while m > 1 and (m - 1) / total >= q:
        m -= 1
    while m < total and m / total < q:
        m += 1
    return m


def _order_statistics(
    engine: PairwiseEngine,
    stats: _PairStatistics,
    counts: NDArray[np.intp],
    ranks: Sequence[int],
) -> list[float]:
    """Critical constants of 1-based ``ranks`` of the ascending order.

    ``counts`` is the coarse histogram (:data:`KEY_SHIFT`) of all pairs. The
    bin holding a rank is gathered and sorted; a bin too full to gather is
    refined by a histogram of its finer keys, down to single values. Each
    level of refinement, and each gathering, is one pass for all the ranks.
    """
    out: dict[int, float] = {}
    # (rank, rank within the bin, bin key, shift of the key, pairs in the bin)
    todo: list[tuple[int, int, int, int, int]] = []
    cum = np.cumsum(counts)
    for r in ranks:
        if r in out:
            continue
        b = int(np.searchsorted(cum, r, side="left"))
        todo.append((r, r - (int(cum[b - 1]) if b else 0), b, KEY_SHIFT, int(counts[b])))
    while todo:
        gather: list[tuple[int, int, int, int, int]] = []
        refine: list[tuple[int, int, int, int, int]] = []
        for item in todo:
            rank, _, key, shift, size = item
            if shift == KEY_SHIFT and key == N_COARSE_KEYS - 1:
                out[rank] = math.inf  # the bin of +inf holds nothing else
            elif shift == 0:
                out[rank] = key_floor(key, 0)  # a single value
            elif size <= _MAX_GATHER:
                gather.append(item)
            else:
                refine.append(item)
        todo = []
        for shift in sorted({item[3] for item in gather}):
            items = [item for item in gather if item[3] == shift]
            values, _ = engine.map_reduce(
                KeyCollectReducer(
                    stats.keys, stats.exact, [item[2] for item in items], shift
                )
            )
            keys = float_key(values, shift)
            for rank, within, key, _, _ in items:
                mine = np.sort(values[keys == key])
                out[rank] = float(mine[within - 1])
        # one pass per level for all the bins refined at it, not one per rank
        for shift in sorted({item[3] for item in refine}, reverse=True):
            items = [item for item in refine if item[3] == shift]
            finer = _SHIFTS[_SHIFTS.index(shift) + 1]
            bins = sorted({item[2] for item in items})
            subs = engine.map_reduce(
                KeyHistogramReducer(stats.keys, shift=finer, prefix=(bins, shift))
            )
            for rank, within, key, _, _ in items:
                sub = subs[bins.index(key)]
                sub_cum = np.cumsum(sub)
                b = int(np.searchsorted(sub_cum, within, side="left"))
                new_within = within - (int(sub_cum[b - 1]) if b else 0)
                new_key = (key << (shift - finer)) + b
                todo.append((rank, new_within, new_key, finer, int(sub[b])))
    return [out[r] for r in ranks]


#: Pairs drawn to guess where the quantiles fall (see :func:`_guess_windows`),
#: unless the windows would then hold more than :data:`_WINDOW_PAIRS` pairs each.
_N_GUESS = 2**18
#: Pairs a guessed window should hold: half the screened pass's cap
#: (``_review_screened._MAX_WINDOW``), beyond which it keeps none.
_WINDOW_PAIRS = 2**23
#: Most pairs drawn for the guess (about 8 s of distances at d=384; 320 MB).
_N_GUESS_MAX = 2**23


def _n_guess(n_pairs: int, quantiles: Sequence[float]) -> int:
    """Pairs to draw so that each guessed window holds about :data:`_WINDOW_PAIRS`.

    A window spans about ``10 sqrt(q (1 - q) / s)`` of the ``n_pairs`` pairs
    for a sample of ``s``, so its pairs grow as ``n_pairs / sqrt(s)``: past
    about 2.9e9 pairs (N = 76,000) the default sample would give the 90%
    window more pairs than the screened pass keeps, and each such quantile
    would cost float64 passes after the main one (N = 100,000: 459 s against
    48 s for ``lipschitz_fraction``). The sample grows from about 1.4e9 pairs
    (N = 53,000) on; below, it is the default.
    """
    s = min(_N_GUESS, max(1024, n_pairs // 256))
    spread = max((q * (1 - q) for q in quantiles), default=0.0)
    needed = math.ceil((10 * math.sqrt(spread) * n_pairs / _WINDOW_PAIRS) ** 2)
    return int(max(s, min(needed, _N_GUESS_MAX, n_pairs // 16)))


def _guess_windows(
    engine: PairwiseEngine, stats: _PairStatistics, quantiles: Sequence[float]
) -> list[tuple[int, int]]:
    """Ranges of fine keys likely to hold the quantiles, from a sample of pairs.

    Gathering the constants there in the main pass saves the passes that would
    find them afterwards. A guess only (five standard deviations of the
    sample quantile on either side): a quantile outside its window is found
    by those passes. Without groups, ``quantiles`` lie above the pairs of
    equal scores (:func:`_review` sets the others to 0), and a window that
    would start at 0 starts at half the smallest positive constant drawn.
    """
    n_draws = _n_guess(engine.n_pairs, quantiles)
    i, j = engine.sample_pairs(n_draws, random_state=0)
    d = np.maximum(_normalise(engine.paired_distances(i, j), stats.d_scaling), 0.0)
    o = np.maximum(_normalise(np.abs(stats.y[i] - stats.y[j]), stats.o_scaling), 0.0)
    c = np.sort(_critical_constants(o, d))
    s = c.size
    windows = []
    first_positive = int(np.searchsorted(c, 0.0, side="right"))
    for q in quantiles:
        half = 5 * math.sqrt(q * (1 - q) / s) + 2 / s
        lo = c[max(0, math.floor((q - half) * s) - 1)]
        hi = c[min(s - 1, math.ceil((q + half) * s))]
        if lo == 0 and first_positive < s and engine.groups is None:
            # these quantiles lie above the pairs of equal scores (see _review):
            # a window from 0 would send the problem to the float64 pass
            lo = c[first_positive] / 2
        keys = float_key(np.array([lo, hi]), _FINE_SHIFT)
        windows.append((int(keys[0]), int(keys[1])))
    return windows


class _WindowCollect:
    """Per window of fine keys: the pairs below it, and its exact constants.

    Partial result ``(below, values, overflow)``; beyond ``cap`` constants in
    all nothing is kept and ``overflow`` is True.
    """

    def __init__(
        self, stats: _PairStatistics, windows: Sequence[tuple[int, int]], cap: int
    ) -> None:
        self.stats, self.windows, self.cap = stats, list(windows), cap

    def map(self, block: PairBlock) -> tuple[NDArray[np.int64], list[Any], bool]:
        k = block.values(self.stats.keys(block, _FINE_SHIFT))
        below = np.array([np.count_nonzero(k < lo) for lo, _ in self.windows], np.int64)
        values = []
        for lo, hi in self.windows:
            pos = np.flatnonzero((k >= lo) & (k <= hi))
            if pos.size > self.cap:
                return below, [], True
            values.append(self.stats.exact(block, pos))
        return below, values, False

    def combine(
        self,
        a: tuple[NDArray[np.int64], list[Any], bool],
        b: tuple[NDArray[np.int64], list[Any], bool],
    ) -> tuple[NDArray[np.int64], list[Any], bool]:
        below = a[0] + b[0]
        if a[2] or b[2]:
            return below, [], True
        values = [np.concatenate([x, y]) for x, y in zip(a[1], b[1])]
        if sum(v.size for v in values) > self.cap:
            return below, [], True
        return below, values, False

    def empty(self) -> tuple[NDArray[np.int64], list[Any], bool]:
        return (
            np.zeros(len(self.windows), np.int64),
            [np.empty(0)] * len(self.windows),
            False,
        )


def _combine_windows(
    a: tuple[NDArray[np.int64], list[Any], bool],
    b: tuple[NDArray[np.int64], list[Any], bool],
    cap: int,
) -> tuple[NDArray[np.int64], list[Any], bool]:
    """:meth:`_WindowCollect.combine` with the cap given."""
    below = a[0] + b[0]
    if a[2] or b[2]:
        return below, [], True
    values = [np.concatenate([x, y]) for x, y in zip(a[1], b[1])]
    if sum(v.size for v in values) > cap:
        return below, [], True
    return below, values, False
