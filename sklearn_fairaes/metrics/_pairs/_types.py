"""Shared types, constants and checks of the pair engine."""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from numpy.typing import ArrayLike, NDArray

    from ._blocks import PairBlock

    #: A distance between essays: a name, or a function of two 1-D rows.
    Metric = str | Callable[..., float]
    #: A selection of essays: a slice or integer positions.
    Index = slice | NDArray[np.integer[Any]]
    #: A block of the distance matrix: ``(row_start, row_stop, col_start, col_stop)``.
    BlockSpec = tuple[int, int, int, int]
    #: Pairs of essays as two arrays of positions ``(i, j)``.
    Pairs = tuple[NDArray[np.int64], NDArray[np.int64]]
    #: Distances of pairs and the pairs: ``(d, i, j)``.
    PairDistances = tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]
    # Partial results of the reducers.
    _Ranges = tuple[list[tuple[float, float, BlockSpec]], int]
    _Candidates = tuple[Pairs, Pairs, bool]
    _Sums = tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64]]
    _Histogram = NDArray[np.intp] | _Sums
    _TopK = tuple[PairDistances, PairDistances]
    _Collected = list[tuple[int, int, int, int, NDArray[np.float64]]]
    #: A per-pair statistic of a block: a picklable callable ``block -> 2-D
    #: float64 array`` of the block's shape (entries outside its mask ignored).
    BlockStatistic = Callable[[PairBlock], NDArray[np.float64]]
    #: Partial result of RowNeighborsReducer: per band of rows (keyed by its
    #: first row) the distances and indices of the best candidates so far.
    _RowBest = dict[int, tuple[NDArray[np.float64], NDArray[np.int64]]]
    #: Keys (float_key at a shift) of a per-pair statistic of a block (2-D).
    BlockKeys = Callable[[PairBlock, int], NDArray[np.int64]]
    #: Partial result of the screened Lipschitz counters: the pairs that
    #: satisfy the inequality (undecided ones settled in their block) and the
    #: pairs evaluated (ints overall, per-group arrays in :mod:`.._group`).
    ScreenedCounts = tuple[Any, Any]

_T = TypeVar("_T")

#: Default side of a square block of the distance matrix: 2048 x 2048 float64
#: is 32 MB. On 2 cores, Lipschitz fraction of 10,000 x 384 essays, best of 3:
#: 1024 -> 1.56 s, 2048 -> 1.50 s, 3072 -> 1.62 s, 4096 -> 1.68 s (the matrix
#: products dominate; smaller blocks pay more per-block overhead, larger ones
#: more cache misses in the element-wise work).
DEFAULT_BLOCK_SIZE = 2048

#: Largest number of pairs for which a metric may sort all pairs at once
#: (about 32 bytes per pair: 320 MB). Larger problems use histogram or
#: selection passes over the blocks.
EXACT_SORT_MAX_PAIRS = 10_000_000

#: The default block side gives at least this many bands of rows (so about
#: bands**2 / 2 blocks) ...
_MIN_BANDS = 8
#: ... but is never below this. On 2 busy cores with threaded OpenBLAS,
#: Lipschitz fraction of 1,569 x 384 essays, n_jobs=1, best of 3: one 1569
#: block 0.37 s, 512 -> 0.45 s, 256 -> 1.1-1.3 s (small products pay BLAS's
#: thread start-up); with OPENBLAS_NUM_THREADS=1 all three take 0.23-0.30 s.
_MIN_BLOCK_SIZE = 512


def _default_block_size(n_samples: int) -> int:
    """Block side for ``n_samples`` essays; a function of ``N`` only (see above)."""
    return min(DEFAULT_BLOCK_SIZE, max(_MIN_BLOCK_SIZE, -(-n_samples // _MIN_BANDS)))


# --------------------------------------------------------------------------
# Small argument checks shared by the pair metrics
# --------------------------------------------------------------------------
def check_option(value: _T, name: str, options: Collection[object]) -> _T:
    """Raise ValueError unless ``value`` is one of ``options``."""
    if value not in options:
        shown = ", ".join(repr(o) for o in sorted(options, key=repr))
        raise ValueError(f"{name}={value!r} is not supported; use one of {shown}")
    return value


@overload
def check_int(
    value: object,
    name: str,
    *,
    minimum: int | None = ...,
    maximum: int | None = ...,
    allow_none: Literal[False] = ...,
) -> int: ...
@overload
def check_int(
    value: object,
    name: str,
    *,
    minimum: int | None = ...,
    maximum: int | None = ...,
    allow_none: bool,
) -> int | None: ...
def check_int(
    value: object,
    name: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    allow_none: bool = False,
) -> int | None:
    """Return ``value`` as int after checking its type and range."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        kind = "an int or None" if allow_none else "an int"
        raise TypeError(f"{name} must be {kind}, got {value!r} ({type(value).__name__})")
    number = int(value)
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {number}")
    return number


def check_real(
    value: object,
    name: str,
    *,
    positive: bool = False,
    lower: float | None = None,
    upper: float | None = None,
) -> float:
    """Return ``value`` as a finite float after checking its type and range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {number}")
    if positive and number <= 0:
        raise ValueError(f"{name} must be positive, got {number}")
    if lower is not None and not number > lower:
        raise ValueError(f"{name} must be greater than {lower}, got {number}")
    if upper is not None and not number < upper:
        raise ValueError(f"{name} must be less than {upper}, got {number}")
    return number


# --------------------------------------------------------------------------
# Pair indices
# --------------------------------------------------------------------------
def n_pairs_of(n_samples: int) -> int:
    """Number of unordered pairs of ``n_samples`` items."""
    return n_samples * (n_samples - 1) // 2


def _row_start(i: ArrayLike, n: int) -> NDArray[np.int64]:
    """Condensed index of the pair ``(i, i + 1)``."""
    i = np.asarray(i, dtype=np.int64)
    return i * (2 * n - i - 1) // 2


def pairs_to_condensed(i: ArrayLike, j: ArrayLike, n: int) -> NDArray[np.int64]:
    """Condensed (``pdist``) index of pairs ``(i, j)`` with ``i < j``."""
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    return _row_start(i, n) + (j - i - 1)


def condensed_to_pairs(k: ArrayLike, n: int) -> Pairs:
    """Pairs ``(i, j)``, ``i < j``, at condensed (``pdist``) indices ``k``."""
    k = np.asarray(k, dtype=np.int64)
    # The closed form is exact in real numbers; the float square root can be one
    # row off, which the integer checks below repair.
    b = 2 * n - 1
    i = np.floor((b - np.sqrt(np.maximum(b * b - 8.0 * k, 0.0))) / 2).astype(np.int64)
    i = np.clip(i, 0, n - 2)
    i = np.where(_row_start(i, n) > k, i - 1, i)
    i = np.where(_row_start(i + 1, n) <= k, i + 1, i)
    j = k - _row_start(i, n) + i + 1
    return i, j


def stable_argsort(values: ArrayLike) -> NDArray[np.intp]:
    """``np.argsort(values, kind="stable")``, about twice as fast on distances.

    An introsort (not stable) followed by re-ordering each run of equal values
    by index; with many ties the stable sort itself is faster and is used.
    """
    values = np.asarray(values)
    order = np.argsort(values)
    ordered = values[order]
    eq = ordered[1:] == ordered[:-1]
    n_eq = int(np.count_nonzero(eq))
    if n_eq == 0:
        return order
    if n_eq > values.size // 8:
        return np.argsort(values, kind="stable")
    in_run = np.zeros(values.size, dtype=bool)
    in_run[1:] |= eq
    in_run[:-1] |= eq
    run = np.cumsum(np.concatenate([[True], ~eq]))  # runs are contiguous
    pos = np.flatnonzero(in_run)
    sub = order[pos]
    order[pos] = sub[np.lexsort((sub, run[pos]))]
    return order
