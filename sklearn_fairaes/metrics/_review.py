"""Who was treated unfairly: essays to review, the worst pairs, a Lipschitz profile.

The Lipschitz fraction of :mod:`sklearn_fairaes.metrics._individual` says how
many pairs of essays are scored consistently with their distance; a scoring
programme needs to know *which* essays to send for a second human read. The
three metrics of this module answer that, over all ``N(N-1)/2`` pairs, through
the one blocked engine of :mod:`sklearn_fairaes.metrics._pairwise` (no
``N x N`` matrix is held):

- :func:`essay_consistency`: each essay's exact ``k`` nearest neighbours under
  the representation, their scores, and how far the essay's score is from
  theirs (the essays to review), with AIF360's consistency summary;
- :func:`lipschitz_violations`: the pairs that break the Lipschitz condition
  the most (normalised ``|dy|`` minus ``L`` times normalised distance);
- :func:`lipschitz_profile`: the fraction of pairs satisfied as a function of
  ``L`` and the smallest ``L`` at which 90/95/99% of pairs satisfy it, a
  number that compares models, the human scores and representations.

Signature rule: ``metric_name(X, y_pred, *, ...)`` as for every pair metric
(``X`` one row per essay, or precomputed distances with
``metric="precomputed"``). Results are dict-like :class:`TableResult`
objects with a ``to_frame()`` method, like :func:`score_distance_curve`.

Conventions shared with :func:`lipschitz_fraction`
--------------------------------------------------
Normalisation
    With ``normalize="minmax"`` (the paper) distances and score differences
    are each mapped from ``[min, max]`` over all pairs to ``[0, 1]``; ``"max"``
    divides by the maximum; None keeps raw values. The ranges are found by the
    same passes as in :func:`lipschitz_fraction` (the exact score-difference
    range from the sorted scores, the distance range from one pass over the
    blocks).
Critical constant of a pair
    The smallest float ``L`` at which the pair satisfies
    ``norm(|y_i - y_j|) <= L * norm(d_ij)`` as :func:`lipschitz_fraction`
    evaluates it (the product rounded to float64). It is ``o / d`` up to one
    unit in the last place, 0 when the normalised score difference is 0
    (satisfied at every ``L``), and ``inf`` for two essays at normalised
    distance 0 (duplicates) with different scores (satisfied at no ``L``).
Exactness
    Counts, violations, neighbours and constants are exact. Counts equal those
    of :func:`lipschitz_fraction` exactly: on its float64 path (sparse input,
    any metric but the cosine, precomputed distances, or dense cosine problems
    up to about 2,900 essays) both use the same blocked distances; on larger
    dense cosine problems both screen pairs with a float32 product and settle
    the pairs it cannot decide with the same distances computed pair by pair.
    Those agree with the blocked float64 distances to about ``1e-16``, so
    distances, violations and constants on the two paths agree to about that,
    and a count differs between them only for a pair whose two sides are equal
    to the last bit. The profile's curve between the requested constants is,
    on the screened path, the histogram of float32 quotients: each pair's bin
    is its exact one or a neighbouring one (the quotient is within a relative
    ``1e-3`` of the constant, a bin is 1.1% wide); the fractions at the
    requested constants and the quantile constants are exact.
Cost
    :func:`lipschitz_violations` and :func:`lipschitz_profile` take the
    distance-range pass of :func:`lipschitz_fraction` (float32-screened on large
    dense inputs) and one more pass; :func:`essay_consistency` alone one
    float64 pass. On large dense cosine problems (those
    :func:`lipschitz_fraction` screens in float32) that pass reads the float32
    products of :func:`lipschitz_fraction`'s screen
    (``_review_screened``): per pair a dozen float32 steps, compiled into
    one loop by numba when the ``fast`` extra is installed (NumPy passes over
    strips of rows otherwise, with the same results), and exact work only for
    the pairs the float32 values cannot decide: near a requested constant, in
    the windows of the quantiles (guessed from a sample of pairs), among the
    candidates of the top violations and the nearest neighbours. A problem
    outside the screen's error bounds (scores beyond float32, constants or
    positive quantile constants within the score error of 0, constant scores,
    the neighbours alone) gets one fused float64 pass instead (``_FusedReview``,
    whose values are the separate reducers', bit for bit). For 50,000 essays
    of 384 dimensions the three together from one shared pass took 1.32 times
    as long as :func:`lipschitz_fraction` (16.8 s against 12.8 s, best of 3 on
    2 cores; 2.5 times with the NumPy strips; numba's first compile, once per
    installation, adds about 5 s), with a peak of 821 MB against 317 MB: the
    quantile windows' pairs (about 1.4% of all pairs, 16 bytes each, at most
    ``2**24`` per window; beyond it the quantile is found by exact passes
    after the main one) on top of ``O(N k + block^2)``. Past about 1.4e9 pairs
    (N = 53,000) the sample that guesses the windows grows with the pairs (up
    to ``2**23`` of them), so that each window keeps about ``2**23`` pairs: at
    100,000 essays the three took 1.48 times :func:`lipschitz_fraction`
    (71.4 s against 48.2 s, peak 1.7 GB) where the default sample's full
    windows had cost float64 passes after the main one (459 s). Beyond about
    180,000 essays (1.6e10 pairs; reckoned from the window sizes, not
    measured) the windows of the 90% and 95% constants outgrow their cap again
    and those passes return; ``quantiles=()`` skips them. Figures:
    ``benchmarks/bench_pairs.py``, section 4 (its ``--review-phases`` shows
    where the time goes), and ``benchmarks/bench_review_compile.py`` for the
    compile.
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from ._individual import _normalise, _outcome_range, _scaling, _scores
from ._pairwise import (
    KEY_SHIFT,
    N_COARSE_KEYS,
    KeyCollectReducer,
    KeyHistogramReducer,
    MultiReducer,
    PairwiseEngine,
    RowNeighborsReducer,
    TableResult,
    TopPairsReducer,
    _concat_pairs,
    check_int,
    check_option,
    check_real,
    float_key,
    key_floor,
    pairs_to_condensed,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd
    import scipy.sparse as sp
    from numpy.typing import ArrayLike, NDArray

    from ._individual import Scaling
    from ._pairwise import Metric, PairBlock, PairDistances, Reducer

__all__ = ["essay_consistency", "lipschitz_profile", "lipschitz_violations"]

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
#: Most constants gathered in the main pass in the guessed windows (128 MB).
_MAX_GUESSED = 2**24


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


# --------------------------------------------------------------------------
# The fused pass of large dense cosine problems
# --------------------------------------------------------------------------
#: Rows of a block that the fused pass works on at a time: a strip of 32 rows
#: of a 2048-wide block is 512 KB per float64 array, so the strip's arrays stay
#: in the L2 cache while a dozen element-wise operations run over them (the
#: same operations over whole 32 MB blocks ran 3 to 4 times slower).
_STRIP_ROWS = 32

#: Low bits of a float64 below its coarse key (:data:`KEY_SHIFT`).
_LOW_BITS = (1 << KEY_SHIFT) - 1

#: Why the fused pass looks at the pairs of a coarse bin (flags of a uint8):
#: a constant's bin, a quantile window's bin, a bin that can hold top violations.
_IN_CONSTANT_BIN, _IN_WINDOW_BIN, _IN_TAIL = 1, 2, 4

#: Coarse key of the entries that are not pairs (the lower triangle of a
#: diagonal block): a bin past the last one, dropped from the histogram.
_DISCARD = N_COARSE_KEYS


def _fine_keys_of(
    bits: NDArray[np.int64], o: NDArray[np.float64], d: NDArray[np.float64]
) -> NDArray[np.int64]:
    """Exact :func:`float_key` at :data:`_FINE_SHIFT` from quotient bits ``o / d``.

    As in :meth:`_PairStatistics.keys`: a quotient within 8 units in the last
    place of a fine bin edge gets the exact critical constant first.
    """
    low = bits & ((1 << _FINE_SHIFT) - 1)
    near = np.flatnonzero((low < 8) | (low >= (1 << _FINE_SHIFT) - 8))
    if near.size:
        bits = bits.copy()
        bits[near] = _critical_constants(o[near], d[near]).view(np.int64)
    return bits >> _FINE_SHIFT


class _Strips:
    """Work arrays of the fused pass, one set per thread, reused block after block."""

    def __init__(self, n_cols: int, n_rows: int, with_keys: bool) -> None:
        size = _STRIP_ROWS * n_cols
        self.d = np.empty(size)
        self.o = np.empty(size)
        self.q = np.empty(size)
        self.t = np.empty(size, dtype=np.int64)
        self.b1 = np.empty(size, dtype=bool)
        self.b2 = np.empty(size, dtype=bool)
        self.code = np.empty(size, dtype=np.uint8)
        self.keys = np.empty(n_rows * n_cols if with_keys else 0, dtype=np.int64)
        self.n_cols, self.n_rows = n_cols, n_rows

    def fits(self, n_rows: int, n_cols: int) -> bool:
        return n_cols <= self.n_cols and n_rows <= self.n_rows


class _FusedReview(_ThreadLocalCache):
    """Every reducer of :func:`_review` in one pass over float64 blocks.

    For large dense cosine problems (:attr:`PairwiseEngine.screenable`). The
    values are those of the separate reducers (:class:`RowNeighborsReducer`,
    :class:`TopPairsReducer` over :meth:`_PairStatistics.violation`,
    :class:`KeyHistogramReducer`, :class:`_LipschitzCounts`,
    :class:`_WindowCollect`), bit for bit: the same float64 distances, the
    same operations in the same order. What changes is the work per block:

    - the element-wise operations run over strips of :data:`_STRIP_ROWS` rows
      that stay in the cache, into reused arrays;
    - neighbours and violations keep only the pairs that can still enter the
      result: per essay the ``k``-th smallest distance found so far (an upper
      bound of the final one; before any, the largest of ``k`` minima over
      disjoint groups of the block's columns), and the ``top``-th largest
      violation so far (and, from it, a lower bound of the critical constant
      of any pair that can still enter, so that only pairs in the bins above
      it are looked at);
    - the count at each constant comes from the histogram (all pairs in bins
      below the constant's bin are satisfied, none above it) and an exact
      comparison for the pairs in its bin only; the windows of the quantiles
      are looked at in their bins only.

    Which pairs are looked at depends on the order of the blocks (and so on
    the parallelism), the results do not: every pair that can be in them is
    looked at. The running thresholds are per thread (``threading.local``)
    and are not pickled, so each joblib task starts its own.
    """

    def __init__(
        self,
        y: NDArray[np.float64],
        n_samples: int,
        *,
        n_others: int | None,
        top: int | None,
        stats: _PairStatistics | None,
        constants: Sequence[float],
        windows: Sequence[tuple[int, int]],
        cap: int,
        o_max: float,
    ) -> None:
        self.y, self.n = y, n_samples
        self.k = n_others or 0
        self.top = top
        self.stats = stats
        self.lipschitz = stats is not None
        # the constants whose counts are needed, the violations' among them
        self.constants = sorted(set(constants) | ({stats.L} if top and stats else set()))
        self.const_keys = [int(float_key(np.array([c]))[0]) for c in self.constants]
        self.windows = list(windows)
        self.cap = cap
        self.o_max = o_max
        self.neighbors = RowNeighborsReducer(self.k, n_samples) if self.k else None
        # what each coarse bin is looked at for (none: only counted)
        base = np.zeros(_DISCARD + 1, dtype=np.uint8)
        base[self.const_keys] |= _IN_CONSTANT_BIN
        for lo, hi in self.windows:
            shift = KEY_SHIFT - _FINE_SHIFT
            base[lo >> shift : (hi >> shift) + 1] |= _IN_WINDOW_BIN
        self._base_special = base
        self._local = threading.local()

    def _keep(
        self, v: NDArray[np.float64], i: NDArray[np.int64], j: NDArray[np.int64]
    ) -> PairDistances:
        """The ``top`` largest violations, ties by pair index (as TopPairsReducer)."""
        order = np.lexsort((pairs_to_condensed(i, j, self.n), -v))[: self.top]
        return v[order], i[order], j[order]

    # -- per-thread state ---------------------------------------------------
    def _state(self, n_rows: int, n_cols: int) -> threading.local:
        local = self._local
        if getattr(local, "strips", None) is None or not local.strips.fits(n_rows, n_cols):
            local.strips = _Strips(n_cols, n_rows, self.lipschitz)
        if self.k and getattr(local, "best", None) is None:
            # the k smallest distances found so far per essay (values only)
            local.best = np.full((self.n, self.k), np.inf)
        if self.top and getattr(local, "worst", None) is None:
            local.worst = np.empty(0)  # the top largest violations so far
        return local

    # -- the partial result ------------------------------------------------
    def empty(self) -> tuple[Any, ...]:
        return (
            self.neighbors.empty() if self.neighbors else None,
            _NO_PAIRS if self.top else None,
            np.zeros(N_COARSE_KEYS, dtype=np.int64) if self.lipschitz else None,
            np.zeros(1 + len(self.constants), dtype=np.int64),
            (
                np.zeros(len(self.windows), np.int64),
                [np.empty(0)] * len(self.windows),
                False,
            ),
        )

    def combine(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        nbr = self.neighbors.combine(a[0], b[0]) if self.neighbors else None
        worst = self._keep(*_concat_pairs(a[1], b[1])) if self.top else None
        hist = a[2] + b[2] if self.lipschitz else None
        return nbr, worst, hist, a[3] + b[3], _combine_windows(a[4], b[4], self.cap)

    # -- one block ------------------------------------------------------------
    def map(self, block: PairBlock) -> tuple[Any, ...]:
        D = block.checked_distances()
        m, c = D.shape
        local = self._state(m, c)
        out = list(self.empty())
        if self.k:
            out[0] = self._map_neighbors(block, D, local)
        if self.lipschitz:
            self._map_lipschitz(block, D, local, out)
        return tuple(out)

    # -- neighbours ---------------------------------------------------------
    def _thresholds(
        self, M: NDArray[np.float64], best: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Per row of ``M``: the largest distance that can still be among the k nearest."""
        k = self.k
        thr = best[:, k - 1].copy()
        fresh = np.flatnonzero(np.isinf(thr))
        g = M.shape[1] // k
        if fresh.size and g:
            # k disjoint groups of columns: k distinct pairs at most the largest
            # of the groups' minima, an upper bound of the k-th smallest distance
            mins = M[fresh, : k * g].reshape(fresh.size, k, g).min(axis=2)
            thr[fresh] = np.minimum(thr[fresh], mins.max(axis=1))
        return thr

    def _best_of(
        self,
        rows: NDArray[np.int64],
        cols: NDArray[np.int64],
        d: NDArray[np.float64],
        n_rows: int,
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """The k best candidates of each row (by distance, then column), padded."""
        k = self.k
        dist = np.full((n_rows, k), np.inf)
        idx = np.full((n_rows, k), self.n, dtype=np.int64)
        if rows.size:
            order = np.lexsort((cols, d, rows))
            rows, cols, d = rows[order], cols[order], d[order]
            first = np.searchsorted(rows, np.arange(n_rows))
            rank = np.arange(rows.size) - first[rows]
            keep = rank < k
            dist[rows[keep], rank[keep]] = d[keep]
            idx[rows[keep], rank[keep]] = cols[keep]
        return dist, idx

    def _remember(
        self, best: NDArray[np.float64], start: int, dist: NDArray[np.float64]
    ) -> None:
        """Fold a block's best distances into the running k smallest per essay."""
        rows = np.flatnonzero(dist[:, 0] < np.inf)
        if rows.size:
            both = np.concatenate([best[start + rows], dist[rows]], axis=1)
            both.sort(axis=1)
            best[start + rows] = both[:, : self.k]

    def _map_neighbors(
        self, block: PairBlock, D: NDArray[np.float64], local: threading.local
    ) -> dict[int, tuple[NDArray[np.float64], NDArray[np.int64]]]:
        r0, c0 = block.row_start, block.col_start
        m, c = D.shape
        best = local.best
        if block.mask is not None:
            # a diagonal block: its upper triangle mirrored, the diagonal excluded
            upper = np.where(block.mask, D, np.inf)
            full = np.minimum(upper, upper.T)
            thr = self._thresholds(full, best[r0 : r0 + m])
            rows, cols = np.nonzero(full <= thr[:, None])
            part = self._best_of(rows, cols + c0, full[rows, cols], m)
            self._remember(best, r0, part[0])
            return {r0: part}
        thr_r = self._thresholds(D, best[r0 : r0 + m])
        thr_c = self._thresholds(D.T, best[c0 : c0 + c])
        s = local.strips
        found_r: list[NDArray[np.int64]] = []
        found_c: list[NDArray[np.int64]] = []
        top_c = float(thr_c.max(initial=-np.inf))
        for a in range(0, m, _STRIP_ROWS):
            b = min(a + _STRIP_ROWS, m)
            Ds = D[a:b]
            n = (b - a) * c
            # one comparison with the strip's largest threshold finds a superset
            # of both sides' candidates, usually a handful (thresholds are near
            # the smallest distances); when it is not, compare with each
            # threshold over the strip
            hit_r = s.b1[:n].reshape(b - a, c)
            np.less_equal(Ds, max(float(thr_r[a:b].max()), top_c), out=hit_r)
            pos = np.flatnonzero(hit_r)
            if pos.size <= n // 16:
                rows, cols = np.divmod(pos, c)
                vals = Ds.reshape(-1)[pos]
                found_r.append(pos[vals <= thr_r[a + rows]] + a * c)
                found_c.append(pos[vals <= thr_c[cols]] + a * c)
                continue
            hit_c = s.b2[:n].reshape(b - a, c)
            np.less_equal(Ds, thr_r[a:b, None], out=hit_r)
            np.less_equal(Ds, thr_c[None, :], out=hit_c)
            found_r.append(np.flatnonzero(hit_r) + a * c)
            found_c.append(np.flatnonzero(hit_c) + a * c)
        flat_r, flat_c = np.concatenate(found_r), np.concatenate(found_c)
        Dflat = D.reshape(-1)
        part_r = self._best_of(flat_r // c, flat_r % c + c0, Dflat[flat_r], m)
        part_c = self._best_of(flat_c % c, flat_c // c + r0, Dflat[flat_c], c)
        self._remember(best, r0, part_r[0])
        self._remember(best, c0, part_c[0])
        return {r0: part_r, c0: part_c}

    # -- the Lipschitz parts ------------------------------------------------
    def _tail_key(self, local: threading.local) -> int:
        """Smallest coarse key of a pair that can still be among the top violations.

        A pair violates (``v > 0``) exactly when its critical constant exceeds
        ``L``. Once ``top`` violations of at least ``tau > 0`` are known, a pair
        with ``v >= tau`` has ``L * d <= o - tau <= o_max - tau``, hence a
        critical constant of at least ``L * o_max / (o_max - tau)`` (up to
        rounding, which the factor ``1 - 1e-9`` covers many times over).
        """
        L = self.stats.L  # type: ignore[union-attr]
        bound = L
        worst = local.worst
        if self.top and worst.size >= self.top:
            tau = float(worst.min())
            if 0 < tau < self.o_max * (1 - 1e-9):
                bound = L * self.o_max / (self.o_max - tau)
        return int(float_key(np.array([bound * (1 - 1e-9)]))[0])

    def _map_lipschitz(
        self,
        block: PairBlock,
        D: NDArray[np.float64],
        local: threading.local,
        out: list[Any],
    ) -> None:
        stats = cast(_PairStatistics, self.stats)
        d_scaling, o_scaling = stats.d_scaling, stats.o_scaling
        r0, c0 = block.row_start, block.col_start
        m, c = D.shape
        s = local.strips
        keys = s.keys[: m * c].reshape(m, c)
        y_cols = self.y[block.cols]
        mask = block.mask
        counts = out[3]
        within = np.zeros(len(self.constants), dtype=np.int64)
        w_below = np.zeros(len(self.windows), dtype=np.int64)
        w_values: list[list[NDArray[np.float64]]] = [[] for _ in self.windows]
        v_found: list[PairDistances] = []
        n_always = 0
        special = self._base_special
        tail = N_COARSE_KEYS
        if self.top:
            tail = self._tail_key(local)
            special = special.copy()
            special[tail:N_COARSE_KEYS] |= _IN_TAIL
        L = stats.L
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for a in range(0, m, _STRIP_ROWS):
                b = min(a + _STRIP_ROWS, m)
                n = (b - a) * c
                d = s.d[:n].reshape(b - a, c)
                o = s.o[:n].reshape(b - a, c)
                q = s.q[:n].reshape(b - a, c)
                # the normalised distances and score differences of
                # _PairStatistics._arrays (the same operations, so the same bits)
                if d_scaling is None:
                    d[...] = 0.0
                else:
                    np.subtract(D[a:b], d_scaling[0], out=d)
                    if d_scaling[1] != 1.0:
                        np.divide(d, d_scaling[1], out=d)
                    np.maximum(d, 0.0, out=d)
                np.subtract.outer(self.y[r0 + a : r0 + b], y_cols, out=o)
                np.abs(o, out=o)
                if o_scaling is None:
                    o[...] = 0.0
                else:
                    # o >= the smallest difference, so o - shift >= 0 and the
                    # clip of _PairStatistics is a no-op; a shift of 0 leaves o
                    if o_scaling[0] != 0.0:
                        np.subtract(o, o_scaling[0], out=o)
                    if o_scaling[1] != 1.0:
                        np.divide(o, o_scaling[1], out=o)
                # the quotient, whose coarse key is the critical constant's
                # unless it lies within 8 units of a bin edge (then, and for
                # 0/0, inf and the zeros, the exact constant is put in)
                np.divide(o, d, out=q)
                bits = q.view(np.int64).reshape(-1)
                t = s.t[:n]
                np.add(bits, 8, out=t)
                np.bitwise_and(t, _LOW_BITS, out=t)
                hit = s.b1[:n]
                np.less(t, 16, out=hit)
                near = np.flatnonzero(hit)
                of, df = o.reshape(-1), d.reshape(-1)
                if near.size:
                    on = of[near]
                    zero = on <= 0
                    if mask is not None:
                        n_always += int(
                            np.count_nonzero(zero & mask[a:b].reshape(-1)[near])
                        )
                    else:
                        n_always += int(np.count_nonzero(zero))
                    bits[near[zero]] = 0
                    rest = ~zero
                    if rest.any():
                        bits[near[rest]] = _critical_constants(
                            on[rest], df[near[rest]]
                        ).view(np.int64)
                kf = keys[a:b].reshape(-1)
                np.right_shift(bits, KEY_SHIFT, out=kf)
                if mask is not None:
                    kf[~mask[a:b].reshape(-1)] = _DISCARD
                code = s.code[:n]
                np.take(special, kf, out=code)
                pos = np.flatnonzero(code)
                if not pos.size:
                    continue
                kinds = code[pos]
                if self.constants:
                    sub = pos[(kinds & _IN_CONSTANT_BIN) != 0]
                    kp, op, dp = kf[sub], of[sub], df[sub]
                    for e, (kc, Lc) in enumerate(zip(self.const_keys, self.constants)):
                        sel = kp == kc
                        if sel.any():
                            ds = dp[sel]
                            within[e] += np.count_nonzero(
                                op[sel] <= (ds * Lc if Lc != 1.0 else ds)
                            )
                if self.windows:
                    sub = pos[(kinds & _IN_WINDOW_BIN) != 0]
                    kp, op, dp = kf[sub], of[sub], df[sub]
                    fine = _fine_keys_of(bits[sub], op, dp)
                    for e, (lo, hi) in enumerate(self.windows):
                        w_below[e] += np.count_nonzero(
                            (kp == lo >> (KEY_SHIFT - _FINE_SHIFT)) & (fine < lo)
                        )
                        sel = np.flatnonzero((fine >= lo) & (fine <= hi))
                        if sel.size:
                            w_values[e].append(_critical_constants(op[sel], dp[sel]))
                if self.top:
                    sub = pos[(kinds & _IN_TAIL) != 0]
                    if sub.size:
                        ds = df[sub]
                        v = of[sub] - (ds * L if L != 1.0 else ds)
                        floor = local.worst.min() if local.worst.size >= self.top else 0.0
                        keep = np.flatnonzero((v > 0) & (v >= floor))
                        if keep.size:
                            flat = sub[keep] + a * c
                            found = self._keep(v[keep], r0 + flat // c, c0 + flat % c)
                            v_found.append(found)
                            worst = np.concatenate([local.worst, found[0]])
                            if worst.size > self.top:
                                worst = np.partition(worst, worst.size - self.top)[
                                    worst.size - self.top :
                                ]
                            local.worst = worst
        if self.lipschitz:
            hist = np.bincount(keys.reshape(-1), minlength=_DISCARD + 1)
            out[2] = hist[:N_COARSE_KEYS]
        counts[0] = n_always
        counts[1:] = within
        if self.top:
            best = out[1]
            for found in v_found:
                best = self._keep(*_concat_pairs(best, found))
            out[1] = best
        if self.windows:
            values = [np.concatenate(parts) if parts else np.empty(0) for parts in w_values]
            overflow = sum(v.size for v in values) > self.cap
            out[4] = (w_below, [] if overflow else values, overflow)

    # -- after the pass -----------------------------------------------------
    def finish(self, result: tuple[Any, ...], n_pairs: int) -> dict[str, Any]:
        """The entries of :func:`_review`'s dict from the combined partial result."""
        nbr, worst, hist, counts, windows = result
        found: dict[str, Any] = {}
        if self.neighbors is not None:
            found["neighbors"] = nbr
        if not self.lipschitz:
            return found
        cum = np.concatenate([[0], np.cumsum(hist)])
        satisfied = {
            L: int(cum[kc]) + int(w)
            for L, kc, w in zip(self.constants, self.const_keys, counts[1:])
        }
        found["histogram"] = hist
        found["satisfied"] = satisfied
        found["n_always"] = int(counts[0])
        if self.top:
            L = cast(_PairStatistics, self.stats).L
            found["violations"] = (worst, n_pairs - satisfied[L])
        if self.windows:
            below, values, overflow = windows
            shift = KEY_SHIFT - _FINE_SHIFT
            below = np.array(
                [int(cum[lo >> shift]) + int(b) for (lo, _), b in zip(self.windows, below)],
                dtype=np.int64,
            )
            found["guessed"] = (below, values, overflow)
        return found


#: No pairs: (values, i, j) of length 0.
_NO_PAIRS: PairDistances = (
    np.empty(0),
    np.empty(0, dtype=np.int64),
    np.empty(0, dtype=np.int64),
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


def _fused(engine: PairwiseEngine) -> bool:
    """Whether :func:`_review` makes the fused pass (large dense cosine problems).

    The fused pass takes the masks of diagonal blocks as their upper triangles,
    so it needs an engine without a group filter (as the neighbours do).
    """
    return engine.screenable and engine.groups is None


def _separate_pass(
    engine: PairwiseEngine,
    n_others: int | None,
    top: int | None,
    constants: Sequence[float] | None,
    stats: _PairStatistics | None,
    windows: Sequence[tuple[int, int]],
) -> dict[str, Any]:
    """The parts of :func:`_review` from one pass of separate reducers."""
    reducers: list[Reducer[Any]] = []
    names: list[str] = []
    neighbors = None
    if n_others:
        neighbors = RowNeighborsReducer(n_others, engine.n_samples)
        reducers.append(neighbors)
        names.append("neighbors")
    if stats is not None:
        if top is not None:
            reducers.append(
                TopPairsReducer(top, engine.n_samples, stats.violation, above=0.0)
            )
            names.append("violations")
        if constants is not None:
            reducers.append(KeyHistogramReducer(stats.keys))
            reducers.append(_LipschitzCounts(stats, constants))
            names += ["histogram", "counts"]
            if windows:
                reducers.append(_WindowCollect(stats, windows, _MAX_GUESSED))
                names.append("guessed")
    if not reducers:
        return {}
    results: tuple[Any, ...] = engine.map_reduce(MultiReducer(reducers))
    out = dict(zip(names, results))
    if neighbors is not None:
        out["neighbors"] = neighbors.result(out["neighbors"])
    return out


def _fused_pass(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    n_others: int | None,
    top: int | None,
    constants: Sequence[float] | None,
    stats: _PairStatistics | None,
    windows: Sequence[tuple[int, int]],
) -> dict[str, Any]:
    """The parts of :func:`_review` from :class:`_FusedReview` (the same values)."""
    if not n_others and stats is None:
        return {}
    o_max = 0.0
    if stats is not None and stats.o_scaling is not None:
        o_max = float(_normalise(np.array([float(np.ptp(y))]), stats.o_scaling)[0])
    reducer = _FusedReview(
        y,
        engine.n_samples,
        n_others=n_others,
        top=top,
        stats=stats,
        constants=constants or (),
        windows=windows,
        cap=_MAX_GUESSED,
        o_max=o_max,
    )
    found = reducer.finish(engine.map_reduce(reducer), engine.n_pairs)
    out: dict[str, Any] = {}
    if n_others:
        out["neighbors"] = cast(RowNeighborsReducer, reducer.neighbors).result(
            found["neighbors"]
        )
    if stats is not None:
        if top is not None:
            out["violations"] = found["violations"]
        if constants is not None:
            satisfied = found["satisfied"]
            out["histogram"] = found["histogram"]
            out["counts"] = np.array(
                [found["n_always"]] + [satisfied[c] for c in constants], dtype=np.int64
            )
            if windows:
                out["guessed"] = found["guessed"]
    return out


def _review(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    *,
    n_others: int | None = None,
    top: int | None = None,
    constants: Sequence[float] | None = None,
    quantiles: Sequence[float] = (),
    normalize: str | None = "minmax",
    lipschitz_constant: float = 1.0,
) -> dict[str, Any]:
    """One pass over the pairs for whichever of the three metrics are asked.

    ``n_others``: neighbours per essay (:func:`essay_consistency`); ``top``:
    violating pairs (:func:`lipschitz_violations`, at ``lipschitz_constant``);
    ``constants``: the profile's exact fractions and histogram
    (:func:`lipschitz_profile`, with ``quantiles``). A first pass finds the
    distance range when a Lipschitz part is asked and ``normalize`` is set.
    """
    out: dict[str, Any] = {}
    stats: _PairStatistics | None = None
    windows: list[tuple[int, int]] = []
    if top is not None or constants is not None:
        d_scaling, o_scaling, d_range, o_range = _scalings(engine, y, normalize)
        out.update(d_scaling=d_scaling, o_scaling=o_scaling, distance_range=d_range,
                   outcome_range=o_range)  # fmt: skip
        stats = _PairStatistics(y, d_scaling, o_scaling, lipschitz_constant)
    all_ranks = (
        [_needed(q, engine.n_pairs) for q in quantiles] if constants is not None else []
    )
    # a rank among the pairs of equal (normalised) scores has the constant 0;
    # a window reaching down to 0 would send the problem to the float64 pass
    zero_ranks = set()
    ranks = all_ranks
    if all_ranks:  # constants were asked for, so stats is set
        known = cast(_PairStatistics, stats)
        if engine.groups is None:
            from ._review_screened import n_zero_differences

            n_zero = n_zero_differences(y, known.o_scaling)
            zero_ranks = {m for m in all_ranks if m <= n_zero}
        ranks = [m for m in all_ranks if m not in zero_ranks]
        if ranks:
            open_q = [q for q, m in zip(quantiles, all_ranks) if m not in zero_ranks]
            windows = _guess_windows(engine, known, open_q)
    screened = None
    if _fused(engine) and stats is not None:
        from ._review_screened import screened_review, screened_setup

        # the windows' constants (the key past +inf's is a NaN: no upper end)
        value_windows = [
            (key_floor(lo, _FINE_SHIFT), key_floor(hi + 1, _FINE_SHIFT))
            for lo, hi in windows
        ]
        value_windows = [(lo, hi if hi == hi else math.inf) for lo, hi in value_windows]
        thresholds = [*(constants or ()), *([stats.L] if top else ())]
        thresholds += [lo for lo, _ in value_windows]
        setup = screened_setup(engine, y, stats, thresholds)
        if setup is not None:
            screened = screened_review(
                engine, y, setup, stats, n_others=n_others, top=top,
                constants=constants, ranks=ranks, windows=value_windows,
            )  # fmt: skip
    if screened is not None:
        out.update(screened)
    elif _fused(engine):
        out.update(_fused_pass(engine, y, n_others, top, constants, stats, windows))
    else:
        out.update(_separate_pass(engine, n_others, top, constants, stats, windows))
    if constants is not None and quantiles:
        stats = cast(_PairStatistics, stats)
        found: dict[int, float] = dict.fromkeys(zero_ranks, 0.0)
        by_rank = out.pop("quantiles_by_rank", None)
        if by_rank is not None:
            found.update({m: v for m, v in by_rank.items() if v is not None})
        else:
            below, values, overflow = out.pop("guessed", ((), [], True))
            if not overflow:
                for m, low, mine in zip(ranks, below, values):
                    if low < m <= low + mine.size:
                        found[m] = float(np.sort(mine)[m - low - 1])
        missing = [m for m in ranks if m not in found]
        if missing:
            # the screened pass's histogram is of float32 quotients: the passes
            # that refine an order statistic need the exact one
            counts = (
                out["histogram"]
                if by_rank is None
                else engine.map_reduce(KeyHistogramReducer(stats.keys))
            )
            found.update(zip(missing, _order_statistics(engine, stats, counts, missing)))
        out["quantile_constants"] = [found[m] for m in all_ranks]
    return out


# --------------------------------------------------------------------------
# Essay consistency
# --------------------------------------------------------------------------
class EssayConsistency(TableResult):
    """Each essay's nearest neighbours and its score gap to them.

    Result of :func:`essay_consistency`. Per-essay arrays (row ``i`` is essay
    ``i``): ``neighbors``, ``distances`` and ``neighbor_scores`` of shape
    ``(n_samples, n_neighbors)`` (nearest first), ``score``,
    ``neighbor_mean``, ``gap`` (``score - neighbor_mean``), ``mean_abs_diff``
    and ``max_abs_diff``; ``review_order`` (the essays by decreasing ``|gap|``).
    Scalars: ``consistency``, ``n_neighbors``, ``include_self``.

    :meth:`to_frame` gives one row per essay (``kind="essays"``) or one row per
    essay and neighbour (``kind="neighbors"``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import essay_consistency
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> result = essay_consistency(X, [2, 2, 5, 1], n_neighbors=1)
    >>> result.to_frame()["gap"].tolist()
    [0.0, 0.0, 4.0, -4.0]
    """

    def to_frame(self, kind: Literal["essays", "neighbors"] = "essays") -> pd.DataFrame:
        """The result as a :class:`pandas.DataFrame` (needs pandas).

        Parameters
        ----------
        kind : {"essays", "neighbors"}, default="essays"
            ``"essays"``: indexed by ``essay`` (position), columns ``score``,
            ``neighbor_mean``, ``gap``, ``mean_abs_diff``, ``max_abs_diff``,
            ``nearest_neighbor`` and ``nearest_distance``. ``"neighbors"``:
            columns ``essay``, ``rank`` (1 = nearest), ``neighbor``,
            ``distance``, ``score``, ``neighbor_score`` and ``abs_diff``.
        """
        from ..resources import require

        pd = require("pandas", purpose="DataFrame output")
        check_option(kind, "kind", ("essays", "neighbors"))
        n, k = self.neighbors.shape
        if kind == "neighbors":
            return pd.DataFrame(
                {
                    "essay": np.repeat(np.arange(n), k),
                    "rank": np.tile(np.arange(1, k + 1), n),
                    "neighbor": self.neighbors.reshape(-1),
                    "distance": self.distances.reshape(-1),
                    "score": np.repeat(self.score, k),
                    "neighbor_score": self.neighbor_scores.reshape(-1),
                    "abs_diff": np.abs(self.neighbor_scores - self.score[:, None]).reshape(
                        -1
                    ),
                }
            )
        first = 1 if self.include_self and k > 1 else 0
        frame = pd.DataFrame(
            {
                "score": self.score,
                "neighbor_mean": self.neighbor_mean,
                "gap": self.gap,
                "mean_abs_diff": self.mean_abs_diff,
                "max_abs_diff": self.max_abs_diff,
                "nearest_neighbor": self.neighbors[:, first],
                "nearest_distance": self.distances[:, first],
            }
        )
        frame.index.name = "essay"
        return frame


def essay_consistency(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    n_neighbors: int = 10,
    metric: Metric = "cosine",
    include_self: bool = False,
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> EssayConsistency:
    """Each essay's nearest neighbours, their scores, and the essays to review.

    Individual fairness essay by essay: an essay scored far from its
    near-duplicates is the one a second human should read. For every essay
    the exact ``n_neighbors`` nearest other essays under the representation
    are found (over all pairs, block by block, never an ``N x N`` matrix),
    with their distances and scores, and the essay's gap to them: the mean
    and the largest ``|y_i - y_j|`` over its neighbours, and its score minus
    their mean score. The summary is the consistency of Zemel et al. (2013),
    as AIF360's ``consistency_score`` defines it::

        1 - mean_i |y_i - mean of y over the neighbours of i|

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Essay representations, one row per essay; or precomputed distances
        with ``metric="precomputed"`` (see :func:`lipschitz_fraction`).
    y_pred : array-like of shape (n_samples,)
        Scores of the essays, predicted by a model or given by humans.
    n_neighbors : int, default=10
        Neighbours per essay: at least 1, and fewer than ``n_samples`` (the
        essay's other essays), or at most ``n_samples`` with
        ``include_self=True``.
    metric : str or callable, default="cosine"
        Distance between essays: ``"cosine"``, ``"precomputed"``, a metric name
        of :func:`sklearn.metrics.pairwise_distances`, or a callable on two
        rows.
    include_self : bool, default=False
        False: the neighbours are the ``n_neighbors`` nearest *other* essays.
        True: AIF360's convention (that of ``NearestNeighbors.kneighbors(X)``
        on the training rows): each essay is its own first neighbour, at
        distance 0, followed by its ``n_neighbors - 1`` nearest others, and the
        neighbour mean includes its own score (which pulls every gap towards 0
        by a factor ``(k - 1) / k``).
    n_jobs : int, default=None
        Number of joblib workers over the blocks of pairs; the result does not
        depend on it.
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048).

    Returns
    -------
    result : EssayConsistency
        Dict-like with per-essay arrays ``neighbors``, ``distances`` and
        ``neighbor_scores`` (shape ``(n_samples, n_neighbors)``, nearest
        first), ``score``, ``neighbor_mean``, ``gap`` (``score -
        neighbor_mean``: negative when the essay is scored below its
        neighbours), ``mean_abs_diff`` and ``max_abs_diff`` (of ``|y_i -
        y_j|`` over the listed neighbours), ``review_order`` (essay positions
        by decreasing ``|gap|``, ties by position), and the scalars
        ``consistency`` (a float in score units: 1 minus the mean ``|gap|``;
        scale scores to ``[0, 1]`` for AIF360's reading, where 1 is perfectly
        consistent), ``n_neighbors`` and ``include_self``.
        ``result.to_frame()`` returns a DataFrame.

    Raises
    ------
    ValueError
        When ``n_neighbors`` is below 1 or leaves too few other essays.

    Notes
    -----
    Ties in distance are broken by the lower position of the neighbour, so
    the neighbours are those of a stable sort of each row of the distance
    matrix: for essay ``i``, ``np.argsort(D[i], kind="stable")`` with ``D``
    the square distance matrix and ``D[i, i]`` left out. Duplicate essays are
    each other's neighbours at distance 0. Constant scores give gaps of 0 and
    a consistency of 1. Memory is ``O(N * n_neighbors + block_size**2)``.

    References
    ----------
    Zemel, R. et al. (2013). Learning fair representations. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import essay_consistency
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.8, 0.2], [0.0, 1.0]])
    >>> result = essay_consistency(X, [3, 3, 1, 1], n_neighbors=2)
    >>> result.neighbors.tolist()
    [[1, 2], [0, 2], [1, 0], [2, 1]]
    >>> result.gap.tolist()  # essay 2 is scored 2 points below its neighbours
    [1.0, 1.0, -2.0, -1.0]
    >>> result.review_order.tolist()
    [2, 0, 1, 3]
    >>> result.consistency  # in score points: 1 - mean |gap|
    -0.25
    """
    engine = PairwiseEngine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    n = engine.n_samples
    k = check_int(n_neighbors, "n_neighbors", minimum=1)
    if not isinstance(include_self, (bool, np.bool_)):
        raise TypeError(f"include_self must be True or False, got {include_self!r}")
    n_others = k - 1 if include_self else k
    if n_others > n - 1:
        limit = n if include_self else n - 1
        raise ValueError(
            f"n_neighbors={k} is too many for {n} essays: each essay has {n - 1} "
            f"other essays, so use n_neighbors <= {limit}"
            + ("" if include_self else " (or include_self=True, which counts the essay)")
        )
    found = _review(engine, y, n_others=n_others)
    return _consistency_result(y, found, k, bool(include_self))


def _consistency_result(
    y: NDArray[np.float64], found: dict[str, Any], k: int, include_self: bool
) -> EssayConsistency:
    """:func:`essay_consistency`'s result from the parts of :func:`_review`."""
    n = y.shape[0]
    if "neighbors" in found:
        dist, nbr = found["neighbors"]
    else:
        dist, nbr = np.empty((n, 0)), np.empty((n, 0), dtype=np.int64)
    if include_self:
        dist = np.concatenate([np.zeros((n, 1)), dist], axis=1)
        nbr = np.concatenate([np.arange(n, dtype=np.int64)[:, None], nbr], axis=1)
    scores = y[nbr]
    mean = scores.mean(axis=1)
    gap = y - mean
    diff = np.abs(scores - y[:, None])
    order = np.lexsort((np.arange(n), -np.abs(gap)))
    return EssayConsistency(
        neighbors=nbr,
        distances=dist,
        neighbor_scores=scores,
        score=y,
        neighbor_mean=mean,
        gap=gap,
        mean_abs_diff=diff.mean(axis=1),
        max_abs_diff=diff.max(axis=1),
        review_order=order,
        consistency=float(1.0 - np.mean(np.abs(gap))),
        n_neighbors=k,
        include_self=include_self,
    )


# --------------------------------------------------------------------------
# Lipschitz violations
# --------------------------------------------------------------------------
class LipschitzViolations(TableResult):
    """The pairs that violate the Lipschitz condition the most.

    Result of :func:`lipschitz_violations`. Per-pair arrays (worst first):
    ``rank`` (1, 2, ...), ``i``, ``j`` (``i < j``), ``distance``,
    ``normalized_distance``, ``score_i``, ``score_j``, ``abs_diff``,
    ``normalized_diff`` and ``violation``. Scalars: ``n_violations``,
    ``n_pairs``, ``lipschitz_constant``, ``normalize``, ``distance_range`` and
    ``outcome_range``. :meth:`to_frame` gives the pairs indexed by ``rank``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import lipschitz_violations
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    >>> lipschitz_violations(X, [1, 3, 3]).to_frame()[["i", "j"]].values.tolist()
    [[0, 1]]
    """

    _frame_keys = (
        "i",
        "j",
        "distance",
        "normalized_distance",
        "score_i",
        "score_j",
        "abs_diff",
        "normalized_diff",
        "violation",
    )
    _frame_index = "rank"


def lipschitz_violations(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    top: int = 100,
    normalize: Literal["minmax", "max"] | None = "minmax",
    lipschitz_constant: float = 1.0,
    metric: Metric = "cosine",
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> LipschitzViolations:
    """The pairs of essays whose score difference exceeds their distance the most.

    The pairs :func:`lipschitz_fraction` counts as failing, worst first: a pair
    violates the condition when ``norm(|y_i - y_j|) > L * norm(d_ij)``, and its
    violation is ``norm(|y_i - y_j|) - L * norm(d_ij)`` (in ``(0, 1]`` with
    min-max normalisation). The ``top`` largest are found exactly in one pass
    over the blocks of pairs, which also counts all violating pairs.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Essay representations; or precomputed distances with
        ``metric="precomputed"`` (see :func:`lipschitz_fraction`).
    y_pred : array-like of shape (n_samples,)
        Scores of the essays, predicted by a model or given by humans.
    top : int, default=100
        Most pairs returned (fewer when fewer pairs violate the condition).
    normalize : {"minmax", "max"} or None, default="minmax"
        As in :func:`lipschitz_fraction`, with the same ranges.
    lipschitz_constant : float, default=1.0
        The constant ``L`` (> 0).
    metric : str or callable, default="cosine"
        Distance between essays: ``"cosine"``, ``"precomputed"``, a metric name
        of :func:`sklearn.metrics.pairwise_distances`, or a callable on two
        rows.
    n_jobs : int, default=None
        Number of joblib workers; the result does not depend on it.
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048).

    Returns
    -------
    violations : LipschitzViolations
        Dict-like with per-pair arrays, worst first: ``rank``, ``i`` and ``j``
        (``i < j``, positions of the essays), ``distance`` (raw),
        ``normalized_distance``, ``score_i``, ``score_j``, ``abs_diff``
        (``|score_i - score_j|``), ``normalized_diff`` and ``violation``; and
        ``n_violations`` (all violating pairs, so ``1 - n_violations /
        n_pairs`` is the Lipschitz fraction), ``n_pairs``,
        ``lipschitz_constant``, ``normalize``, ``distance_range`` (None with
        ``normalize=None``) and ``outcome_range``. ``to_frame()`` returns a
        DataFrame indexed by ``rank``.

    Warns
    -----
    UndefinedMetricWarning
        When every pair has the same non-zero distance, as in
        :func:`lipschitz_fraction`.

    Notes
    -----
    Ties in violation are broken by the lowest pair ``(i, j)`` (the condensed
    order of ``pdist``). Duplicate essays (distance 0) with different scores
    violate by their whole normalised score difference. Constant scores
    violate nowhere (an empty table). Memory is ``O(top + block_size**2)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import lipschitz_violations
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> worst = lipschitz_violations(X, [2, 5, 5, 5], top=2)
    >>> worst.i.tolist(), worst.j.tolist()
    ([0, 0], [1, 3])
    >>> worst.violation.round(3).tolist()  # the near-duplicates (0, 1) first
    [0.999, 0.1]
    >>> worst.n_violations, worst.n_pairs
    (2, 6)
    """
    normalize = _check_normalize(normalize)
    L = check_real(lipschitz_constant, "lipschitz_constant", positive=True)
    top = check_int(top, "top", minimum=1)
    engine = PairwiseEngine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    found = _review(engine, y, top=top, normalize=normalize, lipschitz_constant=L)
    return _violations_result(engine, y, found, L, normalize)


def _violations_result(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    found: dict[str, Any],
    L: float,
    normalize: Literal["minmax", "max"] | None,
) -> LipschitzViolations:
    """:func:`lipschitz_violations`' result from the parts of :func:`_review`."""
    (v, i, j), count = found["violations"]
    d = engine.paired_distances(i, j)
    o = np.abs(y[i] - y[j])
    d_n = _normalise(d, found["d_scaling"])
    o_n = _normalise(o, found["o_scaling"])
    return LipschitzViolations(
        rank=np.arange(1, v.size + 1),
        i=i,
        j=j,
        distance=d,
        normalized_distance=np.maximum(d_n, 0.0),
        score_i=y[i],
        score_j=y[j],
        abs_diff=o,
        normalized_diff=np.maximum(o_n, 0.0),
        violation=v,
        n_violations=int(count),
        n_pairs=int(engine.n_pairs),
        lipschitz_constant=L,
        normalize=normalize,
        distance_range=found["distance_range"],
        outcome_range=found["outcome_range"],
    )


# --------------------------------------------------------------------------
# Lipschitz profile
# --------------------------------------------------------------------------
class LipschitzProfile(TableResult):
    """The fraction of pairs satisfied as a function of the Lipschitz constant.

    Result of :func:`lipschitz_profile`. At the requested constants:
    ``lipschitz_constant``, ``fraction`` and ``n_satisfied``; at the quantiles:
    ``quantiles`` and ``quantile_constants``; the whole curve:
    ``curve_constant`` and ``curve_fraction``; and ``n_pairs``, ``n_always``,
    ``n_never``, ``normalize``, ``distance_range``, ``outcome_range``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import lipschitz_profile
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> profile = lipschitz_profile(X, [2, 2, 5, 5], constants=[1.0])
    >>> profile.to_frame()["fraction"].tolist()
    [0.5]
    """

    def to_frame(
        self, kind: Literal["constants", "quantiles", "curve"] = "constants"
    ) -> pd.DataFrame:
        """A table of the profile as a :class:`pandas.DataFrame` (needs pandas).

        Parameters
        ----------
        kind : {"constants", "quantiles", "curve"}, default="constants"
            ``"constants"``: ``fraction`` and ``n_satisfied`` indexed by
            ``lipschitz_constant``; ``"quantiles"``: ``lipschitz_constant``
            indexed by ``quantile``; ``"curve"``: ``fraction`` indexed by
            ``lipschitz_constant`` at every step of the curve.
        """
        from ..resources import require

        pd = require("pandas", purpose="DataFrame output")
        check_option(kind, "kind", ("constants", "quantiles", "curve"))
        if kind == "quantiles":
            frame = pd.DataFrame(
                {"lipschitz_constant": self.quantile_constants},
                index=pd.Index(self.quantiles, name="quantile"),
            )
            return frame
        if kind == "curve":
            return pd.DataFrame(
                {"fraction": self.curve_fraction},
                index=pd.Index(self.curve_constant, name="lipschitz_constant"),
            )
        return pd.DataFrame(
            {"fraction": self.fraction, "n_satisfied": self.n_satisfied},
            index=pd.Index(self.lipschitz_constant, name="lipschitz_constant"),
        )


def _curve(
    counts: NDArray[np.intp], total: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Steps of the fraction satisfied, exact at each returned constant.

    For every coarse bin ``b`` holding a finite critical constant, the largest
    float below the next bin: the pairs satisfied there are exactly those of
    bins ``<= b``.
    """
    # Bin 0 holds the constants 0 (and subnormals): its step, at a subnormal L,
    # is left out; ``n_always / n_pairs`` is the fraction as L tends to 0.
    finite = counts[: N_COARSE_KEYS - 1]
    bins = np.flatnonzero(finite[1:]) + 1
    cum = np.cumsum(counts)
    tops = np.array([key_floor(int(b) + 1) for b in bins], dtype=np.float64)
    constants = np.nextafter(tops, 0.0)
    return constants, cum[bins] / total


def _check_constants(constants: ArrayLike | None) -> list[float]:
    """The profile's constants, sorted and without repeats (None: the defaults)."""
    given = DEFAULT_CONSTANTS if constants is None else constants
    values = np.atleast_1d(np.asarray(given, dtype=np.float64))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(
            f"constants must be a non-empty 1-D list of Lipschitz constants, got {given!r}"
        )
    return sorted({check_real(float(c), "constants", positive=True) for c in values})


def _check_quantiles(quantiles: ArrayLike) -> NDArray[np.float64]:
    """The profile's quantiles as a 1-D array of shares in ``(0, 1]``."""
    qs = np.atleast_1d(np.asarray(quantiles, dtype=np.float64))
    if qs.ndim != 1:
        raise ValueError(f"quantiles must be a 1-D list of shares, got {quantiles!r}")
    for q in qs:
        if not 0 < q <= 1:
            raise ValueError(
                f"quantiles must be shares of pairs in (0, 1], got {float(q)!r}; "
                f"write 0.95 for 95%"
            )
    return qs


def lipschitz_profile(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    constants: ArrayLike | None = None,
    quantiles: ArrayLike = (0.9, 0.95, 0.99),
    normalize: Literal["minmax", "max"] | None = "minmax",
    metric: Metric = "cosine",
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> LipschitzProfile:
    """Fraction of pairs satisfying the Lipschitz condition as ``L`` varies.

    "94.4% of pairs satisfy the condition at L = 1" cannot be compared across
    representations, each with its own distance distribution. The empirical
    Lipschitz constant can: the smallest ``L`` at which 95% (say) of the pairs
    satisfy ``norm(|y_i - y_j|) <= L * norm(d_ij)``. A model with a smaller
    constant than the human scores under the same representation scores near
    essays more alike than the raters do. One pass over the blocks of pairs
    gives the whole curve (a histogram of each pair's critical constant,
    ``norm(|dy|) / norm(d)``), the fractions at ``constants`` and the
    constants at ``quantiles``, exactly.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Essay representations; or precomputed distances with
        ``metric="precomputed"`` (see :func:`lipschitz_fraction`).
    y_pred : array-like of shape (n_samples,)
        Scores of the essays, predicted by a model or given by humans.
    constants : array-like of float, default=None
        Constants ``L`` (> 0) at which the fraction is counted exactly (equal
        to ``lipschitz_fraction(X, y_pred, lipschitz_constant=L)``); None means
        ``(0.25, 0.5, 1, 2, 4)``.
    quantiles : array-like of float, default=(0.9, 0.95, 0.99)
        Shares of pairs in ``(0, 1]``: for each, the smallest ``L`` at which at
        least that share of the pairs satisfies the condition.
    normalize : {"minmax", "max"} or None, default="minmax"
        As in :func:`lipschitz_fraction`, with the same ranges.
    metric : str or callable, default="cosine"
        Distance between essays: ``"cosine"``, ``"precomputed"``, a metric name
        of :func:`sklearn.metrics.pairwise_distances`, or a callable on two
        rows.
    n_jobs : int, default=None
        Number of joblib workers; the result does not depend on it.
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048).

    Returns
    -------
    profile : LipschitzProfile
        Dict-like with ``lipschitz_constant`` (the constants, sorted),
        ``fraction`` and ``n_satisfied`` at each; ``quantiles`` and
        ``quantile_constants`` (the smallest ``L`` per quantile: 0.0 when that
        share of pairs has no score difference, ``inf`` when it needs pairs of
        duplicate essays with different scores, which no ``L`` satisfies);
        ``curve_constant`` and ``curve_fraction`` (the fraction satisfied at
        each constant, exact there, one point per bin of about 1.1% of ``L``
        that holds pairs, from the smallest positive constant); ``n_pairs``;
        ``n_always`` (pairs with no normalised score difference, satisfied at
        every ``L``: ``n_always / n_pairs`` is the fraction as ``L`` tends to 0); ``n_never`` (pairs at
        normalised distance 0 with a score difference); ``normalize``,
        ``distance_range`` and ``outcome_range``. ``to_frame()`` returns a
        DataFrame.

    Warns
    -----
    UndefinedMetricWarning
        When every pair has the same non-zero distance, as in
        :func:`lipschitz_fraction`.

    Notes
    -----
    The constant at quantile ``q`` is the ``m``-th smallest critical constant,
    ``m`` the smallest count with ``m / n_pairs >= q``: the fraction satisfied
    at it is at least ``q``, and below it less than ``q``. The coarse histogram
    locates the bin holding rank ``m``; a second pass gathers that bin's
    constants and sorts them (a bin too full to gather is refined by
    histograms over finer bins first). The curve's points are the largest
    floats below each bin's upper edge, so the fraction there is a count, not
    an interpolation. Constant scores give a constant of 0 at every quantile.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import lipschitz_fraction, lipschitz_profile
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> y = [2, 2, 5, 5]
    >>> profile = lipschitz_profile(X, y, constants=[1.0, 1.2], quantiles=[0.5, 1.0])
    >>> profile.fraction.tolist()
    [0.5, 0.8333333333333334]
    >>> bool(profile.fraction[1] == lipschitz_fraction(X, y, lipschitz_constant=1.2))
    True
    >>> [round(float(c), 4) for c in profile.quantile_constants]
    [1.0, 1.2655]
    """
    normalize = _check_normalize(normalize)
    consts = _check_constants(constants)
    qs = _check_quantiles(quantiles)
    engine = PairwiseEngine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    found = _review(
        engine, y, constants=consts, quantiles=[float(q) for q in qs], normalize=normalize
    )
    return _profile_result(engine, found, consts, qs, normalize)


def _profile_result(
    engine: PairwiseEngine,
    found: dict[str, Any],
    consts: Sequence[float],
    qs: NDArray[np.float64],
    normalize: Literal["minmax", "max"] | None,
) -> LipschitzProfile:
    """:func:`lipschitz_profile`'s result from the parts of :func:`_review`."""
    counts, below = found["histogram"], found["counts"]
    total = engine.n_pairs
    curve_c, curve_f = _curve(counts, total)
    return LipschitzProfile(
        lipschitz_constant=np.asarray(consts),
        fraction=below[1:] / total,
        n_satisfied=below[1:].astype(np.int64),
        quantiles=qs,
        quantile_constants=np.asarray(found.get("quantile_constants", []), dtype=float),
        curve_constant=curve_c,
        curve_fraction=curve_f,
        n_pairs=int(total),
        n_always=int(below[0]),
        n_never=int(counts[N_COARSE_KEYS - 1]),
        normalize=normalize,
        distance_range=found["distance_range"],
        outcome_range=found["outcome_range"],
    )


def _review_all(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    n_neighbors: int = 10,
    top: int = 100,
    constants: Sequence[float] = DEFAULT_CONSTANTS,
    quantiles: Sequence[float] = (0.9, 0.95, 0.99),
    normalize: Literal["minmax", "max"] | None = "minmax",
    lipschitz_constant: float = 1.0,
    metric: Metric = "cosine",
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> dict[str, Any]:
    """The raw parts of the three metrics from one shared pass (for the audit).

    Returns the dict of :func:`_review`: ``neighbors`` (distances, positions of
    shape ``(n_samples, n_neighbors)``, self excluded), ``violations``
    (``((violation, i, j), n_violations)``), ``histogram`` (coarse counts of
    the critical constants), ``counts`` (pairs with no score difference, then
    pairs satisfied at each constant), ``quantile_constants`` and the
    normalisation. The public functions give the same values one by one.
    """
    engine = PairwiseEngine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    return _review(
        engine,
        y,
        n_others=check_int(
            n_neighbors, "n_neighbors", minimum=1, maximum=engine.n_samples - 1
        ),
        top=check_int(top, "top", minimum=1),
        constants=sorted(constants),
        quantiles=list(quantiles),
        normalize=_check_normalize(normalize),
        lipschitz_constant=check_real(
            lipschitz_constant, "lipschitz_constant", positive=True
        ),
    )


def _review_results(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    n_neighbors: int = 10,
    top: int = 100,
    constants: ArrayLike | None = None,
    quantiles: ArrayLike = (0.9, 0.95, 0.99),
    normalize: Literal["minmax", "max"] | None = "minmax",
    lipschitz_constant: float = 1.0,
    metric: Metric = "cosine",
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> tuple[EssayConsistency, LipschitzViolations, LipschitzProfile]:
    """The three metrics' results from one shared pass (for the audit).

    Equal to ``essay_consistency(X, y_pred, n_neighbors=n_neighbors)``,
    ``lipschitz_violations(X, y_pred, top=top, ...)`` and
    ``lipschitz_profile(X, y_pred, constants=constants, quantiles=quantiles,
    ...)`` called one by one (same arguments, same checks, same values), in
    about the time of one of them: one engine, one distance-range pass and one
    main pass.
    """
    normalize = _check_normalize(normalize)
    L = check_real(lipschitz_constant, "lipschitz_constant", positive=True)
    top = check_int(top, "top", minimum=1)
    consts = _check_constants(constants)
    qs = _check_quantiles(quantiles)
    engine = PairwiseEngine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    k = check_int(n_neighbors, "n_neighbors", minimum=1, maximum=engine.n_samples - 1)
    found = _review(
        engine,
        y,
        n_others=k,
        top=top,
        constants=consts,
        quantiles=[float(q) for q in qs],
        normalize=normalize,
        lipschitz_constant=L,
    )
    return (
        _consistency_result(y, found, k, False),
        _violations_result(engine, y, found, L, normalize),
        _profile_result(engine, found, consts, qs, normalize),
    )
