"""The reductions the engine runs itself: the distance range, exact and screened, and whole blocks."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _torch_backend
from ._blocks import PairBlock

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ._types import (
        _Candidates,
        _Collected,
        _Ranges,
    )


# --------------------------------------------------------------------------
# Reducers (module level so that joblib can pickle them)
# --------------------------------------------------------------------------
class _BlockCollector:
    """Collect whole blocks (for :meth:`PairwiseEngine.condensed`)."""

    def map(self, block: PairBlock) -> _Collected:
        return [(block.row_start, block.row_stop, block.col_start, block.col_stop,
                 block.checked_distances())]  # fmt: skip

    def combine(self, a: _Collected, b: _Collected) -> _Collected:
        return a + b

    def empty(self) -> _Collected:
        return []


class MinMaxReducer:
    """Smallest and largest distance and number of pairs.

    With ``bin_filter=(lo, hi, n_bins, b)`` only pairs with ``lo <= d <= hi``
    whose fine bin (see :func:`fine_bin_index`) is ``b`` count.
    """

    def __init__(self, bin_filter: tuple[float, float, int, int] | None = None) -> None:
        self.bin_filter = bin_filter

    def map(self, block: PairBlock) -> tuple[float, float, int]:
        d = block.values()
        if self.bin_filter is not None:
            lo, hi, n_bins, b = self.bin_filter
            d = d[(d >= lo) & (d <= hi)]
            d = d[fine_bin_index(d, lo, hi, n_bins) == b]
        if d.size == 0:
            return self.empty()
        return (float(d.min()), float(d.max()), int(d.size))

    def combine(
        self, a: tuple[float, float, int], b: tuple[float, float, int]
    ) -> tuple[float, float, int]:
        return (min(a[0], b[0]), max(a[1], b[1]), a[2] + b[2])

    def empty(self) -> tuple[float, float, int]:
        return (math.inf, -math.inf, 0)


#: Most candidate pairs a screened reduction keeps before it gives up and the
#: caller falls back to exact float64 blocks (only with massive ties).
_SCREEN_CANDIDATES = 2**22


def _f32_at_most(value: float) -> np.float32:
    """Largest float32 not above ``value`` (a conservative threshold)."""
    v = np.float32(value)
    return v if float(v) <= value else np.nextafter(v, np.float32(-np.inf))


def _f32_at_least(value: float) -> np.float32:
    """Smallest float32 not below ``value`` (a conservative threshold)."""
    v = np.float32(value)
    return v if float(v) >= value else np.nextafter(v, np.float32(np.inf))


class _ScreenedRange:
    """Largest and smallest float32 similarity of each block."""

    block_kind = "similarity32"

    def map(self, block: PairBlock) -> _Ranges:
        g, mask = block.checked_similarities(), block.mask
        count = block.n_valid
        if count == 0:
            return self.empty()
        if mask is None:
            top, bottom = float(g.max()), float(g.min())
        else:
            top = float(np.max(g, where=mask, initial=-np.inf))
            bottom = float(np.min(g, where=mask, initial=np.inf))
        spec = (block.row_start, block.row_stop, block.col_start, block.col_stop)
        return [(top, bottom, spec)], count

    def map_torch(self, block: _torch_backend.TorchBlock) -> _Ranges:
        """:meth:`map` of a block on the torch backend."""
        if block.n_valid == 0:
            return self.empty()
        top, bottom = _torch_backend.block_extremes(block)
        spec = (block.row_start, block.row_stop, block.col_start, block.col_stop)
        return [(top, bottom, spec)], block.n_valid

    def combine(self, a: _Ranges, b: _Ranges) -> _Ranges:
        # in place: a fold owns its running partial, and copying it at every
        # block would be quadratic in the blocks (10**5 at a million essays)
        a[0].extend(b[0])
        return a[0], a[1] + b[1]

    def empty(self) -> _Ranges:
        return [], 0


class _ScreenedCandidates:
    """Pairs with float32 similarity ``>= high`` or ``<= low``.

    Gives up (``overflow``) beyond :data:`_SCREEN_CANDIDATES` pairs, which only
    massive ties produce.
    """

    block_kind = "similarity32"

    def __init__(self, high: np.float32, low: np.float32) -> None:
        self.high, self.low = high, low

    def map(self, block: PairBlock) -> _Candidates:
        g = block.values(block.checked_similarities())
        hi = np.flatnonzero(g >= self.high)
        lo = np.flatnonzero(g <= self.low)
        if hi.size + lo.size > _SCREEN_CANDIDATES:
            return self.empty(overflow=True)
        return block.pair_indices(hi), block.pair_indices(lo), False

    def map_torch(self, block: _torch_backend.TorchBlock) -> _Candidates:
        """:meth:`map` of a block on the torch backend."""
        found = _torch_backend.block_candidates(
            block, self.high, self.low, _SCREEN_CANDIDATES
        )
        if found is None:
            return self.empty(overflow=True)
        return found[0], found[1], False

    def combine(self, a: _Candidates, b: _Candidates) -> _Candidates:
        if (
            a[2]
            or b[2]
            or a[0][0].size + a[1][0].size + b[0][0].size + b[1][0].size
            > (_SCREEN_CANDIDATES)
        ):
            return self.empty(overflow=True)
        high = (np.concatenate([a[0][0], b[0][0]]), np.concatenate([a[0][1], b[0][1]]))
        low = (np.concatenate([a[1][0], b[1][0]]), np.concatenate([a[1][1], b[1][1]]))
        return high, low, False

    def empty(self, overflow: bool = False) -> _Candidates:
        e = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        return e, e, overflow


def fine_bin_index(d: NDArray[Any], lo: float, hi: float, n_bins: int) -> NDArray[np.intp]:
    """Fine-bin index of distances ``d`` in ``[lo, hi]`` (``n_bins`` equal bins).

    Non-decreasing in ``d``, so each bin holds a contiguous run of the sorted
    distances: the pairs of bin ``b`` are exactly those between its smallest and
    its largest distance.
    """
    if not hi > lo:
        return np.zeros(d.shape, dtype=np.intp)
    t = np.subtract(d, lo)
    np.multiply(t, n_bins / (hi - lo), out=t)
    idx = t.astype(np.intp)
    np.clip(idx, 0, n_bins - 1, out=idx)
    return idx
