"""The review pass: nearest neighbours, violations and profile in one walk."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._blocks import Reducer
from ._keys import KeyHistogramReducer, key_floor
from ._reducers import MultiReducer, RowNeighborsReducer, TopPairsReducer
from ._review_fused import _FusedReview
from ._review_stats import (
    _FINE_SHIFT,
    _guess_windows,
    _LipschitzCounts,
    _needed,
    _order_statistics,
    _PairStatistics,
    _scalings,
    _WindowCollect,
)
from ._scaling import _normalise

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from ._engine import PairwiseEngine


#: Most constants gathered in the main pass in the guessed windows (128 MB).
_MAX_GUESSED = 2**24


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
