"""Lipschitz counters: exact, float32-screened and score-sorted."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _torch_backend
from ._blocks import PairBlock
from ._range import _f32_at_least, _f32_at_most
from ._scaling import _normalise

if TYPE_CHECKING:
    from collections.abc import Callable

    from numpy.typing import NDArray

    from ._engine import PairwiseEngine
    from ._scaling import Scaling
    from ._types import (
        Pairs,
        ScreenedCounts,
    )


class _LipschitzCounter:
    """Count pairs with ``norm(|y_i - y_j|) <= L * norm(d_ij)`` in each block."""

    def __init__(
        self,
        y: NDArray[np.float64],
        d_scaling: Scaling,
        o_scaling: Scaling,
        lipschitz_constant: float,
    ) -> None:
        self.y = y
        self.d_scaling, self.o_scaling = d_scaling, o_scaling
        self.lipschitz_constant = lipschitz_constant

    def map(self, block: PairBlock) -> tuple[int, int]:
        d = _normalise(block.checked_distances(), self.d_scaling)
        if self.lipschitz_constant != 1.0:
            np.multiply(d, self.lipschitz_constant, out=d)
        o = block.outcome_differences(self.y)
        _normalise(o, self.o_scaling, out=o)
        hit = np.less_equal(o, d)
        if block.mask is not None:
            hit &= block.mask
        return int(np.count_nonzero(hit)), block.n_valid

    def combine(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return a[0] + b[0], a[1] + b[1]

    def empty(self) -> tuple[int, int]:
        return 0, 0


def _screen_scores(y: NDArray[np.float64]) -> tuple[NDArray[np.float64], int]:
    """Scores on ``[0, 1]`` for the float32 screen: ``z = (y - min y) / 2**e``.

    ``2**e`` is the power of two just above the score range, so float32 holds
    ``z`` whatever the scale of the scores (float32 overflows above 3.4e38 and
    loses them below 1e-38). ``|z_i - z_j|`` is ``|y_i - y_j| / 2**e`` up to
    ``eps64`` (one rounding of each ``y - min y``, whose quotient is at most 1;
    division by a power of two is exact).
    """
    lo = float(np.min(y))
    span = float(np.max(y)) - lo  # finite: _scores refuses spans that overflow
    if span == 0:
        return np.zeros(y.shape), 0
    e = math.frexp(span)[1]
    # ldexp, not a multiplication by 2**-e, which overflows for subnormal spans
    return np.ldexp(np.subtract(y, lo), -e), e


class _ScreenedLipschitzCounter:
    """Count Lipschitz pairs from float32 similarities, settling undecided pairs.

    ``T = a - b * G - c * |z_i - z_j|`` (``z`` from :func:`_screen_scores`)
    equals ``L * d_n - o_n`` times a power of two up to ``margin``; pairs with
    ``T >= margin`` satisfy the inequality, pairs with ``T <= -margin`` do not,
    and the others are settled by ``settle(i, j)`` (exact float64 decisions,
    :class:`_Settler`) in the block that found them. The coefficients come from
    :func:`_screening_coefficients`, scaled so that ``|T| <= 3``.

    Each block's undecided pairs are settled at once, on every backend, and
    only counts leave :meth:`map`: the undecided pairs are a fixed share of all
    pairs (1.3e-4 to 1.5e-4 for 384-d embeddings and integer scores), so a count
    that kept them to the end would hold about 7 x 10**7 at a million essays.
    Settled per block they take at most a block's pairs (``block_size**2``) at
    a time, whatever ``N``, and none travels between workers.
    """

    block_kind = "similarity32"
    consumes_blocks = True  # T is computed in place of the similarities

    def __init__(
        self,
        y: NDArray[np.float64],
        a: float,
        b: float,
        c: float,
        margin: float,
        settle: Callable[[NDArray[np.int64], NDArray[np.int64]], NDArray[np.bool_]],
    ) -> None:
        self.settle = settle
        self.y32 = _screen_scores(y)[0].astype(np.float32)
        self.a, self.b, self.c = np.float32(a), np.float32(b), np.float32(c)
        self.margin = _f32_at_least(margin)
        self.torch_margin = _f32_at_least(margin + _torch_backend.FLUSH_SLACK)

    def statistic(self, block: PairBlock) -> NDArray[np.float32]:
        """``T`` of every pair of the block; pairs outside its mask get ``-inf``."""
        T = block.checked_similarities()
        self._screen(
            T, lambda: np.subtract.outer(self.y32[block.rows], self.y32[block.cols])
        )
        if block.mask is not None:
            T[~block.mask] = -np.inf
        return T

    def _screen(
        self, T: NDArray[np.float32], differences: Callable[[], NDArray[np.float32]]
    ) -> None:
        """``T = a - b * T - c * |differences()|`` in place, in float32, in this order.

        The one sequence of float32 operations every screen uses (the margin
        bounds its rounding); ``differences`` is called only when ``c != 0``.
        """
        np.multiply(T, -self.b, out=T)
        np.add(T, self.a, out=T)
        if self.c:
            diff = differences()
            np.abs(diff, out=diff)
            np.multiply(diff, self.c, out=diff)
            np.subtract(T, diff, out=T)

    def undecided(self, block: PairBlock, T: NDArray[np.float32]) -> Pairs:
        """Global ``(i, j)`` of the pairs within the margin (``T`` is overwritten)."""
        np.abs(T, out=T)
        pos = np.flatnonzero(T < self.margin)
        n_cols = block.col_stop - block.col_start
        return block.row_start + pos // n_cols, block.col_start + pos % n_cols

    def bind(self, engine: PairwiseEngine) -> None:
        """Called by a worker's task with its engine (see :class:`_Settler`)."""
        bind = getattr(self.settle, "bind", None)
        if bind is not None:
            bind(engine)

    def settled(self, sure: Any, i: NDArray[np.int64], j: NDArray[np.int64]) -> Any:
        """``sure`` plus the undecided pairs ``(i, j)`` that satisfy the inequality.

        The one place where a block's undecided pairs are settled (every
        ``map`` calls it once per block); per group in :mod:`.._group`.
        """
        if not i.size:
            return sure
        return sure + int(np.count_nonzero(self.settle(i, j)))

    def map(self, block: PairBlock) -> ScreenedCounts:
        T = self.statistic(block)
        sure = int(np.count_nonzero(T >= self.margin))
        i, j = self.undecided(block, T)
        return self.settled(sure, i, j), block.n_valid

    def map_torch(self, block: _torch_backend.TorchBlock) -> ScreenedCounts:
        """:meth:`map` of a block on the torch backend (same counts, on the device)."""
        sure, (i, j) = _torch_backend.lipschitz_screen(
            block, self.y32, self.a, self.b, self.c, self.torch_margin
        )
        return self.settled(sure, i, j), block.n_valid

    def combine(self, a: ScreenedCounts, b: ScreenedCounts) -> ScreenedCounts:
        return a[0] + b[0], a[1] + b[1]

    def empty(self) -> ScreenedCounts:
        return 0, 0


#: The sorted screen cuts each block side where ``floor(z * 2**_RUN_BITS)``
#: changes (``z`` the screen scores, on [0, 1]): integer scores on any scale up
#: to 256 points get one run per score, continuous ones runs of width 2**-8.
_RUN_BITS = 8
#: At most this many runs per block side (more are merged): each run pair costs
#: a few NumPy calls.
_MAX_RUNS = 16
#: A tile whose undecided band holds more than this share of its pairs is
#: screened pair by pair (the band's gather would cost more).
_BAND_SHARE = 0.25


def _clip2(value: float) -> float:
    return min(max(value, -2.0), 2.0)


class _SortedScreenedLipschitzCounter(_ScreenedLipschitzCounter):
    """The float32 screen of :class:`_ScreenedLipschitzCounter`, essays sorted by score.

    With the essays sorted by score (``PairwiseEngine.reordered``), each block
    splits into tiles of a few runs of near-equal scores. On a tile the score
    difference lies in ``[dz_lo, dz_hi]``, so ``T >= margin`` holds for every
    similarity up to one threshold and ``|T| < margin`` fails for every one
    from another: two comparisons count the tile, instead of the six float32
    operations per pair of ``statistic``, which cost as much as the matrix
    product. Only the pairs between the two thresholds (a thin band for
    integer scores) get ``T`` computed, with the same float32 operations in the
    same order as ``statistic``. The thresholds are moved inward by a bound on
    the rounding of those operations, so every pair is counted sure, left
    undecided or rejected exactly as :class:`_ScreenedLipschitzCounter` does:
    the same counts, and the same undecided pairs settled.

    ``y`` must be sorted (ascending) in the engine's order.

    With ``equal_scores_satisfy`` (every pair of equal scores satisfies the
    inequality, as :func:`_equal_scores_satisfy` checks), a block whose essays
    all have one score is counted whole, without its products
    (:meth:`known`): about 11% of the pairs for integer scores on a 0-12
    scale, all of them in such blocks at a million essays (7.6% at 100,000).
    """

    def __init__(
        self,
        y: NDArray[np.float64],
        a: float,
        b: float,
        c: float,
        margin: float,
        settle: Callable[[NDArray[np.int64], NDArray[np.int64]], NDArray[np.bool_]],
        equal_scores_satisfy: bool = False,
    ) -> None:
        super().__init__(y, a, b, c, margin, settle)
        self._equal_y = y if equal_scores_satisfy else None
        if np.any(np.diff(y) < 0):
            raise ValueError("the sorted screen needs the scores in ascending order")
        if not self.b > 0:
            raise ValueError(
                "the sorted screen needs a positive float32 distance coefficient"
            )
        z = self.y32.astype(np.float64)
        key = np.floor(np.ldexp(z, _RUN_BITS))
        self.cuts = np.flatnonzero(np.diff(key)) + 1
        a32, b32, c32 = float(self.a), float(self.b), float(self.c)
        u32 = float(np.finfo(np.float32).eps) / 2
        u64 = float(np.finfo(np.float64).eps) / 2
        big = abs(a32) + b32 + c32 + float(self.margin)
        # rounding of the five float32 operations of ``statistic`` (each at most
        # u32 times a value <= big), doubled, and of the float64 thresholds
        self.slack = 16 * u32 * big + 16 * u64 * big
        self._masks: dict[tuple[int, ...], NDArray[np.bool_]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_masks": {}}

    def known(self, spec: tuple[int, int, int, int]) -> ScreenedCounts | None:
        """Counts of a block of one score without its products (else None).

        The essays are sorted by score and ``r0 <= c0``, so the block's scores
        lie between ``y[r0]`` and ``y[c1 - 1]``; the pairs are those of an
        unfiltered engine (the sorted screen runs on no other): ``i < j`` in a
        diagonal block, all of them elsewhere.
        """
        r0, r1, c0, c1 = spec
        y = self._equal_y
        if y is None or y[r0] != y[c1 - 1]:
            return None
        n = (r1 - r0) * (r1 - r0 - 1) // 2 if r0 == c0 else (r1 - r0) * (c1 - c0)
        none = np.empty(0, dtype=np.int64)
        # through settled (nothing to settle) as every block is, once
        return self.settled(n, none, none), n

    def _runs(self, start: int, stop: int) -> NDArray[np.intp]:
        """Boundaries of the runs of rows ``start:stop`` (block coordinates)."""
        inner = self.cuts[(self.cuts > start) & (self.cuts < stop)]
        if inner.size > _MAX_RUNS - 1:
            inner = inner[np.linspace(0, inner.size - 1, _MAX_RUNS - 1).astype(np.intp)]
        return np.concatenate([[start], inner, [stop]]) - start

    def _per_pair(
        self, tile: NDArray[np.float32], rs: int, cs: int, triu: bool
    ) -> tuple[int, NDArray[np.int64], NDArray[np.int64]]:
        """``statistic`` on one tile (a copy); global indices of its undecided pairs."""
        T = tile.copy()
        self._screen(
            T,
            lambda: np.subtract.outer(
                self.y32[rs : rs + tile.shape[0]], self.y32[cs : cs + tile.shape[1]]
            ),
        )
        if triu:  # a square tile on the diagonal: the pairs i < j only
            T[~self._upper(T.shape)] = -np.inf
        sure = int(np.count_nonzero(T >= self.margin))
        np.abs(T, out=T)
        pos = np.flatnonzero(T < self.margin)
        return sure, rs + pos // tile.shape[1], cs + pos % tile.shape[1]

    def _band(
        self, tile: NDArray[np.float32], pos: NDArray[np.intp], rs: int, cs: int
    ) -> tuple[int, NDArray[np.int64], NDArray[np.int64]]:
        """``statistic`` on the pairs of ``tile`` at flat positions ``pos`` only."""
        i, j = rs + pos // tile.shape[1], cs + pos % tile.shape[1]
        T = tile[i - rs, j - cs]  # a copy (fancy indexing)
        self._screen(T, lambda: np.subtract(self.y32[i], self.y32[j]))
        sure = int(np.count_nonzero(T >= self.margin))
        np.abs(T, out=T)
        keep = T < self.margin
        return sure, i[keep], j[keep]

    def _upper(self, shape: tuple[int, ...]) -> NDArray[np.bool_]:
        upper = self._masks.get(shape)
        if upper is None:
            upper = self._masks[shape] = np.triu(np.ones(shape, dtype=bool), k=1)
        return upper

    def map(self, block: PairBlock) -> ScreenedCounts:
        S = block.checked_similarities()
        r0, c0 = block.row_start, block.col_start
        diagonal = r0 == c0
        if block.mask is not None and not diagonal:  # pragma: no cover - no groups here
            return super().map(block)
        rows = self._runs(r0, block.row_stop)
        cols = rows if diagonal else self._runs(c0, block.col_stop)
        a, b, c = float(self.a), float(self.b), float(self.c)
        margin = float(self.margin)
        sure = 0
        found_i: list[NDArray[np.int64]] = []
        found_j: list[NDArray[np.int64]] = []
        for p in range(rows.size - 1):
            r_lo, r_hi = rows[p], rows[p + 1]
            zr_lo, zr_hi = float(self.y32[r0 + r_lo]), float(self.y32[r0 + r_hi - 1])
            for q in range(p if diagonal else 0, cols.size - 1):
                c_lo, c_hi = cols[q], cols[q + 1]
                tile = S[r_lo:r_hi, c_lo:c_hi]
                on_diagonal = diagonal and p == q  # a square tile: pairs i < j only
                zc_lo = float(self.y32[c0 + c_lo])
                zc_hi = float(self.y32[c0 + c_hi - 1])
                dz_lo = max(0.0, zr_lo - zc_hi, zc_lo - zr_hi)
                dz_hi = max(zr_hi - zc_lo, zc_hi - zr_lo)
                # s <= sure_at: T >= margin for every score difference of the
                # tile; s >= out_at: T <= -margin for every one (similarities
                # lie in [-1.01, 1.01]: beyond +-2 is as far); sure_at < out_at
                sure_at = _f32_at_most(_clip2((a - c * dz_hi - margin - self.slack) / b))
                out_at = _f32_at_least(_clip2((a - c * dz_lo + margin + self.slack) / b))
                is_sure = tile <= sure_at
                inside = tile < out_at
                if on_diagonal:
                    upper = self._upper(tile.shape)
                    np.logical_and(is_sure, upper, out=is_sure)
                    np.logical_and(inside, upper, out=inside)
                n_sure = int(np.count_nonzero(is_sure))
                n_band = int(np.count_nonzero(inside)) - n_sure
                if n_band > _BAND_SHARE * tile.size:
                    got = self._per_pair(tile, r0 + r_lo, c0 + c_lo, triu=on_diagonal)
                elif n_band:
                    np.logical_xor(inside, is_sure, out=inside)
                    got = self._band(tile, np.flatnonzero(inside), r0 + r_lo, c0 + c_lo)
                    got = (n_sure + got[0], got[1], got[2])
                else:
                    sure += n_sure
                    continue
                sure += got[0]
                if got[1].size:
                    found_i.append(got[1])
                    found_j.append(got[2])
        e = np.empty(0, dtype=np.int64)
        i = np.concatenate(found_i) if found_i else e
        j = np.concatenate(found_j) if found_j else e
        return self.settled(sure, i.astype(np.int64), j.astype(np.int64)), block.n_valid


def _screening_coefficients(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    d_scaling: Scaling,
    o_scaling: Scaling,
    L: float,
    o_max: float,
) -> tuple[float, float, float, float]:
    """``(a, b, c, margin)`` of the float32 test ``T = a - b*sim - c*|dz|``.

    ``z`` are the scores of :func:`_screen_scores` and the whole inequality is
    divided by a power of two (exact), so that every coefficient is at most 1
    and ``T`` fits float32 whatever the scale of the scores, the distances or
    ``L``. ``o_max`` is no longer needed (``|dz| <= 1``); it stays in the
    signature shared with :mod:`._group`.

    Shared by every Lipschitz count (overall and by group), so that all of them
    screen, and therefore decide, the same pairs the same way.
    """
    u32 = float(np.finfo(np.float32).eps) / 2
    u64 = float(np.finfo(np.float64).eps) / 2
    if d_scaling is None:
        a_d = b = 0.0
    else:
        shift, divisor = d_scaling
        b = L / divisor
        a_d = L * (1.0 - shift) / divisor
    e = _screen_scores(y)[1]
    if o_scaling is None:
        a_o = c = 0.0
    else:
        shift, divisor = o_scaling
        c = 1.0 / divisor
        a_o = shift / divisor
    a = a_d + a_o
    if not all(math.isfinite(v) for v in (a, b, c)):
        # The float64 coefficients overflow (an enormous L, say): screen nothing,
        # every pair is undecided and settled exactly in float64.
        return 0.0, 0.0, 0.0, math.inf
    # |dy| = 2**e |dz|: the score coefficient becomes c * 2**e, and everything is
    # divided by 2**m, the power of two above the largest coefficient. frexp and
    # ldexp keep these exact and free of overflow (c * 2**e alone may overflow).
    exponents = [math.frexp(v)[1] for v in (a, b) if v != 0]
    if c != 0:
        exponents.append(math.frexp(c)[1] + e)
    m = max(exponents, default=0)
    a, b, c = math.ldexp(a, -m), math.ldexp(b, -m), math.ldexp(c, e - m)
    big = abs(a) + abs(b) + c  # |dz| <= 1
    # similarity error, float32 rounding of ~6 operations on values <= big and of
    # the scores z (<= 1), float64 rounding of z and of the exact side, float32
    # underflow of coefficients or scores below 2**-126; doubled for safety
    margin = 2 * (b * engine.screen_error + 8 * u32 * big + 3 * c * u32
                  + 2 * c * u64 + 8 * u64 * big + 2.0**-140)  # fmt: skip
    return a, b, c, margin


def _settle(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    i: NDArray[np.int64],
    j: NDArray[np.int64],
    d_scaling: Scaling,
    o_scaling: Scaling,
    L: float,
) -> NDArray[np.bool_]:
    """Exact float64 decisions for the pairs the float32 screen left undecided."""
    d = _normalise(engine.paired_distances(i, j), d_scaling)
    if L != 1.0:
        d *= L
    o = np.abs(y[i] - y[j])
    o = _normalise(o, o_scaling, out=None if o_scaling is None else o)
    return o <= d


class _Settler:
    """:func:`_settle` with its fixed arguments, for the counters (picklable).

    Pickled without its engine: a pass sent to workers ships the engine once,
    as the task's own argument (on Dask scattered once per pass, see
    ``PairwiseEngine.__sizeof__``), and :meth:`bind` attaches that copy on the
    worker. Its exact distances are the same: every engine a pass can run on
    (:meth:`PairwiseEngine.filtered`, :meth:`PairwiseEngine.reordered` with the
    scores reordered alike) computes a pair's distance from the same rows.
    """

    def __init__(
        self,
        engine: PairwiseEngine | None,
        y: NDArray[np.float64],
        d_scaling: Scaling,
        o_scaling: Scaling,
        L: float,
    ) -> None:
        self.engine, self.y = engine, y
        self.d_scaling, self.o_scaling, self.L = d_scaling, o_scaling, L

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "engine": None}

    def bind(self, engine: PairwiseEngine) -> None:
        """Use ``engine``'s exact distances, unless this settler has its own."""
        if self.engine is None:
            self.engine = engine

    def __call__(self, i: NDArray[np.int64], j: NDArray[np.int64]) -> NDArray[np.bool_]:
        if self.engine is None:  # pragma: no cover - _run_task binds it
            raise RuntimeError("this settler was unpickled without bind(engine)")
        return _settle(self.engine, self.y, i, j, self.d_scaling, self.o_scaling, self.L)


def _equal_scores_satisfy(
    engine: PairwiseEngine, d_scaling: Scaling, o_scaling: Scaling, L: float
) -> bool:
    """Whether :func:`_settle` finds every pair of equal scores satisfied.

    Such a pair has ``|y_i - y_j| = 0`` exactly, and :func:`_settle` compares
    ``normalise(0)`` with ``L * normalise(d)``, which cannot decrease with
    ``d`` (each float64 operation is correctly rounded, so monotone, and
    ``divisor > 0``, ``L >= 0``). Every computed distance is at least the
    exact minimum of the screened range pass (the smallest of the
    same computed distances): if the smallest one satisfies the inequality,
    every pair of equal scores does, both when the screen decides it (the
    screen agrees with :func:`_settle`) and when it is settled.

    False when no screened range pass ran (``normalize=None``): every
    distance is then at least 0, which would do as well, but those counts
    keep screening and settling every pair as before (the shortcut is for the
    normalised counts, which need the range pass anyway).
    """
    found = engine._ranges.get(True)
    if found is None or L < 0:  # L: validated positive; monotonicity needs it
        return False
    d = _normalise(np.array([found[0]]), d_scaling)
    if L != 1.0:
        d *= L
    o = _normalise(np.zeros(1), o_scaling)
    return bool(o[0] <= d[0])


def _screened_count(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    d_scaling: Scaling,
    o_scaling: Scaling,
    L: float,
    o_max: float,
    sorted_scores: bool = False,
) -> tuple[int, int]:
    """Exact Lipschitz count through float32 screening: ``(n_satisfied, n_pairs)``.

    ``sorted_scores``: ``engine`` holds the essays sorted by ``y`` (ascending),
    so the sorted screen may count them (the same decisions, fewer operations).
    """
    a, b, c, margin = _screening_coefficients(engine, y, d_scaling, o_scaling, L, o_max)
    settle = _Settler(engine, y, d_scaling, o_scaling, L)
    counter: _ScreenedLipschitzCounter
    if (
        sorted_scores
        and engine.backend == "numpy"
        and np.float32(b) > 0  # else every pair is screened alike: nothing to sort
        and math.isfinite(margin)
    ):
        counter = _SortedScreenedLipschitzCounter(
            y, a, b, c, margin, settle,
            equal_scores_satisfy=engine.groups is None
            and _equal_scores_satisfy(engine, d_scaling, o_scaling, L),
        )  # fmt: skip
    else:
        counter = _ScreenedLipschitzCounter(y, a, b, c, margin, settle)
    hits, n_eval = engine.map_reduce(counter)
    return int(hits), int(n_eval)
