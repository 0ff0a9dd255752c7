"""One blocked engine for every all-pairs computation of the package.

The individual-fairness metrics look at all ``N(N-1)/2`` pairs of essays: 1.23
million for ASAP prompt 7 (N=1,569), 1.25 billion for 50,000 essays. The
paper's code built full ``N x N`` matrices with ``pdist`` + ``squareform``,
which needs tens of GB beyond ~20,000 essays. This module walks the upper
triangle of the distance matrix in square blocks instead, and lets each metric
reduce every block to a small partial result (a count, a min/max, a histogram,
a top-k list) that is combined with the others. Memory is ``O(N * d +
block_size**2)`` per worker.

Conventions shared by every pair metric
---------------------------------------
Pair order
    Pairs are ``(i, j)`` with ``i < j``, ordered row by row as
    :func:`scipy.spatial.distance.pdist` returns them ("condensed" order). Ties
    are always broken by this order (the lowest ``(i, j)`` first), so results
    are deterministic.

Cosine distance
    ``1 - u.v / (|u| |v|)``, clipped to ``[0, 2]`` as scipy does. It is
    computed as ``1 - u_hat . v_hat`` from float64 unit rows with a BLAS matrix
    product (for sparse input: a dense product over the frequent columns plus a
    sparse product over the rare ones). The values agree with ``pdist(X,
    "cosine")`` to about ``1e-15`` but not bit for bit, because the dot products
    are summed in another order. A count that compares distances with another
    quantity (such as the Lipschitz fraction) can therefore differ from one made
    on ``pdist`` values only for a pair whose two sides are equal to the last
    bit; pass ``pdist``'s own array with ``metric="precomputed"`` to reproduce a
    ``pdist``-based count exactly.

Duplicates
    Two parallel vectors (duplicate essays) have cosine distance 0, but the
    float computation returns rounding noise of about ``1e-16`` instead (scipy
    too), and min-max normalisation would blow that noise up when it is the
    whole range. Cosine distances below the rounding-error bound of the dot
    product (``8 * k * eps``, ``k`` the number of features, or the most
    non-zeros of a row for sparse input: about ``7e-13`` for 384 dimensions)
    are therefore set to exactly 0.

Zero vectors
    An essay with no in-vocabulary word (a TF-IDF row of zeros) or an empty
    essay has no direction, and scipy's cosine distance is NaN for it. Here the
    cosine distance between two zero vectors is ``0`` (two essays with nothing
    in them are identical to the representation) and between a zero vector and
    a non-zero one is ``1`` (nothing in common, as for orthogonal vectors).

Other metrics
    ``metric`` may also be ``"precomputed"`` (``X`` is then a condensed distance
    vector of length ``N(N-1)/2`` or a symmetric square matrix), any metric name
    of :func:`sklearn.metrics.pairwise_distances` (evaluated block by block), or
    a callable taking two 1-D rows and returning a float.

Parallelism and determinism
    The default block side depends on ``N`` only: 2048, or less when that
    gives fewer than 8 bands of rows (never below 512), so that ASAP-sized
    problems (1,569 essays: 10 blocks) have work to split. Blocks are grouped
    into chunks of a size that depends only on the blocks (at least 16 chunks
    when the blocks allow it); runs of chunks go to :class:`joblib.Parallel`
    (so the backend of :func:`joblib.parallel_config`, Dask included, spreads
    them), and partial results are folded within each chunk, then chunk by
    chunk, in a fixed order, on every path. Results are therefore bit-identical
    for every ``n_jobs`` and backend, float sums included. Neither the blocks
    nor the chunks depend on ``n_jobs``: if they did, float sums would be
    grouped differently for different ``n_jobs``. Without parallelism, problems
    whose distance blocks fit in 64 MB are computed once and reused across the
    passes of a metric; with ``n_jobs > 1`` (or a parallel backend) every pass
    goes to the workers.

Float32 screening
    On large dense inputs under the cosine distance, the Lipschitz count and
    the distance range first use a float32 matrix product (twice as fast) with
    a rigorous bound on its error: pairs it decides are decided, and the few it
    cannot are settled with exact float64 distances computed pair by pair.
    Exact values there come from per-pair dot products instead of the float64
    matrix product; both agree with ``pdist`` to about ``1e-15``.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, overload

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, effective_n_jobs
from sklearn.utils import Bunch, check_random_state

from .._config import _delayed, check_device_name, check_pair_backend, get_config
from .._validation import check_embeddings
from . import _torch_pairs

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

    import pandas as pd
    from numpy.typing import ArrayLike, NDArray

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
    # Partial results of the reducers below.
    _Ranges = tuple[list[tuple[float, float, BlockSpec]], int]
    _Candidates = tuple[Pairs, Pairs, bool]
    _Sums = tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64]]
    _Histogram = NDArray[np.intp] | _Sums
    _TopK = tuple[PairDistances, PairDistances]
    _Collected = list[tuple[int, int, int, int, NDArray[np.float64]]]
    #: A per-pair statistic of a block: a picklable callable ``block -> 2-D
    #: float64 array`` of the block's shape (entries outside its mask ignored).
    BlockStatistic = Callable[["PairBlock"], NDArray[np.float64]]
    #: Partial result of RowNeighborsReducer: per band of rows (keyed by its
    #: first row) the distances and indices of the best candidates so far.
    _RowBest = dict[int, tuple[NDArray[np.float64], NDArray[np.int64]]]
    #: Keys (float_key at a shift) of a per-pair statistic of a block (2-D).
    BlockKeys = Callable[["PairBlock", int], NDArray[np.int64]]

_T = TypeVar("_T")
_P = TypeVar("_P")

__all__ = ["condensed_distances"]

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

#: Distance blocks totalling at most this many bytes are computed once and
#: kept for the later passes of a metric.
_CACHE_BYTES = 64 * 2**20

#: Float32 similarity blocks totalling at most this many bytes are kept from
#: the first screened pass for the second (N up to about 10,000 with 2048
#: blocks), which then needs no matrix product.
_SCREEN_CACHE_BYTES = 2**28
#: Most threads of an in-process pass over the blocks (one block each).
_MAX_PASS_THREADS = 8

#: Pairs per joblib task. Fixed (not derived from n_jobs) so that floating
#: point sums are combined in the same grouping whatever the parallelism.
_TASK_PAIRS = 2**24

#: The default block side gives at least this many bands of rows (so about
#: bands**2 / 2 blocks) ...
_MIN_BANDS = 8
#: ... but is never below this. On 2 busy cores with threaded OpenBLAS,
#: Lipschitz fraction of 1,569 x 384 essays, n_jobs=1, best of 3: one 1569
#: block 0.37 s, 512 -> 0.45 s, 256 -> 1.1-1.3 s (small products pay BLAS's
#: thread start-up); with OPENBLAS_NUM_THREADS=1 all three take 0.23-0.30 s.
_MIN_BLOCK_SIZE = 512
#: A run of blocks is cut into at least this many chunks when the blocks allow
#: it, so that n_jobs workers get a few chunks each.
_MIN_CHUNKS = 16


def _default_block_size(n_samples: int) -> int:
    """Block side for ``n_samples`` essays; a function of ``N`` only (see above)."""
    return min(DEFAULT_BLOCK_SIZE, max(_MIN_BLOCK_SIZE, -(-n_samples // _MIN_BANDS)))


#: Sparse columns present in more than this share of the essays go through a
#: dense BLAS product; common words make a sparse-sparse product slow.
_DENSE_COLUMN_SHARE = 0.05

#: Metrics of sklearn whose parameters would be estimated from each block
#: separately (so two blocks would use different metrics).
_DATA_DEPENDENT_METRICS = ("mahalanobis", "seuclidean", "wminkowski")


def _sklearn_metric_names() -> set[str]:
    from sklearn.metrics import pairwise

    names = set(pairwise.distance_metrics())
    names.update(getattr(pairwise, "_VALID_METRICS", ()))
    names.difference_update(_DATA_DEPENDENT_METRICS)
    names.discard("precomputed")
    return names


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


def _check_metric(metric: object) -> Metric:
    if callable(metric):
        return cast("Callable[..., float]", metric)
    if not isinstance(metric, str):
        raise TypeError(
            f"metric must be a str or a callable, got {metric!r} ({type(metric).__name__})"
        )
    valid = _sklearn_metric_names() | {"cosine", "precomputed"}
    if metric in _DATA_DEPENDENT_METRICS:
        raise ValueError(
            f"metric={metric!r} estimates its parameters from the data it is given, "
            f"so each block would use a different metric; compute the distances "
            f"yourself and pass them with metric='precomputed'"
        )
    if metric not in valid:
        raise ValueError(
            f"metric={metric!r} is not supported; use one of {sorted(valid)} or a "
            f"callable taking two 1-D arrays"
        )
    return metric


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


# --------------------------------------------------------------------------
# Validation of precomputed distances
# --------------------------------------------------------------------------
def _check_precomputed(D: object, name: str) -> tuple[NDArray[np.float64], int]:
    if sp.issparse(D):
        raise TypeError(
            f"{name} is a sparse matrix but metric='precomputed' needs dense "
            f"distances; call {name}.toarray() or pass a condensed vector"
        )
    D = np.asarray(D)
    if D.dtype.kind not in "iufb":
        raise TypeError(f"{name} must hold numeric distances, got dtype {D.dtype}")
    D = np.ascontiguousarray(D, dtype=np.float64)
    if D.ndim == 1:
        m = D.shape[0]
        n = int(round((1 + math.sqrt(1 + 8 * m)) / 2))
        if m == 0 or n_pairs_of(n) != m:
            raise ValueError(
                f"{name} has length {m}, which is not N(N-1)/2 for any N >= 2; pass "
                f"a condensed distance vector as returned by scipy's pdist, or a "
                f"square distance matrix"
            )
    elif D.ndim == 2:
        n = D.shape[0]
        if D.shape[1] != n:
            raise ValueError(
                f"{name} has shape {D.shape}; with metric='precomputed' it must be a "
                f"square (N, N) distance matrix or a condensed vector of length "
                f"N(N-1)/2"
            )
        if n < 2:
            raise ValueError(f"{name} describes {n} essay(s); at least 2 are needed")
    else:
        raise ValueError(
            f"{name} must be a condensed distance vector or a square matrix with "
            f"metric='precomputed', got shape {D.shape}"
        )
    if not np.isfinite(D).all():
        raise ValueError(f"{name} contains NaN or infinity; distances must be finite")
    if D.size and D.min() < 0:
        raise ValueError(
            f"{name} contains negative distances (smallest {D.min()!r}); distances "
            f"must be non-negative"
        )
    if D.ndim == 2:
        scale = max(float(np.abs(D).max()), 1.0)
        if not np.allclose(D, D.T, rtol=0, atol=1e-10 * scale):
            bad = np.argwhere(~np.isclose(D, D.T, rtol=0, atol=1e-10 * scale))[0]
            raise ValueError(
                f"{name} is not symmetric (D[{bad[0]}, {bad[1]}] != D[{bad[1]}, "
                f"{bad[0]}]); a distance matrix must be symmetric"
            )
    return D, n


# --------------------------------------------------------------------------
# Blocks
# --------------------------------------------------------------------------
class PairBlock:
    """One rectangle of the upper triangle of the distance matrix.

    Attributes
    ----------
    row_start, row_stop, col_start, col_stop : int
        The block covers rows ``row_start:row_stop`` and columns
        ``col_start:col_stop`` (with ``row_start <= col_start``).
    distances : ndarray of shape (n_rows, n_cols)
        Read-only distances; entries outside ``mask`` are meaningless.
    mask : ndarray of bool of the same shape, or None
        The pairs of the block to use (``i < j``, and the group filter of the
        engine); None means all of them.
    similarities : ndarray of float32 of the same shape, or None
        For reducers with ``block_kind = "similarity32"``: cosine similarities
        from a float32 product, within ``engine.screen_error`` of ``1 - d``
        (``distances`` is then None). Only a reducer with ``consumes_blocks =
        True`` may overwrite it.
    """

    __slots__ = (
        "row_start", "row_stop", "col_start", "col_stop", "distances", "mask",
        "similarities",
    )  # fmt: skip

    row_start: int
    row_stop: int
    col_start: int
    col_stop: int
    distances: NDArray[np.float64] | None
    mask: NDArray[np.bool_] | None
    similarities: NDArray[np.float32] | None

    def __init__(
        self,
        row_start: int,
        row_stop: int,
        col_start: int,
        col_stop: int,
        distances: NDArray[np.float64] | None,
        mask: NDArray[np.bool_] | None,
        similarities: NDArray[np.float32] | None = None,
    ) -> None:
        self.row_start, self.row_stop = row_start, row_stop
        self.col_start, self.col_stop = col_start, col_stop
        self.distances = distances
        self.mask = mask
        self.similarities = similarities

    @property
    def rows(self) -> slice:
        """Rows of the block, as a slice of the essays."""
        return slice(self.row_start, self.row_stop)

    @property
    def cols(self) -> slice:
        """Columns of the block, as a slice of the essays."""
        return slice(self.col_start, self.col_stop)

    @property
    def n_valid(self) -> int:
        """Number of pairs of the block to use."""
        if self.mask is None:
            return (self.row_stop - self.row_start) * (self.col_stop - self.col_start)
        return int(np.count_nonzero(self.mask))

    def checked_distances(self) -> NDArray[np.float64]:
        """:attr:`distances`, which a ``"distance"`` block always has."""
        if self.distances is None:  # pragma: no cover - a reducer of the wrong kind
            raise TypeError(
                "this block holds float32 similarities, not distances; a reducer "
                "that reads distances must not set block_kind"
            )
        return self.distances

    def checked_similarities(self) -> NDArray[np.float32]:
        """:attr:`similarities`, which a ``"similarity32"`` block always has."""
        if self.similarities is None:  # pragma: no cover - a reducer of the wrong kind
            raise TypeError(
                "this block holds distances, not float32 similarities; a reducer "
                "that reads similarities needs block_kind = 'similarity32'"
            )
        return self.similarities

    def values(self, array: NDArray[Any] | None = None) -> NDArray[Any]:
        """Entries of ``array`` (default: the distances) at the valid pairs, 1-D."""
        array = self.checked_distances() if array is None else array
        if self.mask is None:
            return array.reshape(-1)
        return array[self.mask]

    def outcome_differences(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        """``|y_i - y_j|`` for every entry of the block (2-D)."""
        out = np.subtract.outer(y[self.rows], y[self.cols])
        return np.abs(out, out=out)

    def pair_indices(self, positions: NDArray[np.integer[Any]] | None = None) -> Pairs:
        """Sample indices ``(i, j)`` of valid pairs.

        ``positions`` indexes the 1-D output of :meth:`values`; None means all.
        """
        n_cols = self.col_stop - self.col_start
        if self.mask is None:
            flat = np.arange(self.n_valid) if positions is None else positions
        else:
            flat = np.flatnonzero(self.mask)
            if positions is not None:
                flat = flat[positions]
        flat = np.asarray(flat, dtype=np.int64)
        return self.row_start + flat // n_cols, self.col_start + flat % n_cols


class Reducer(Protocol[_P]):
    """What :meth:`PairwiseEngine.map_reduce` needs of a reducer.

    ``map`` turns a :class:`PairBlock` into a partial result, ``combine`` folds
    two partial results into one, and ``empty`` is the result of no block. A
    reducer may also set ``block_kind = "similarity32"`` (it then gets float32
    similarities instead of distances) and ``consumes_blocks = True`` (it may
    overwrite them).
    """

    def map(self, block: PairBlock) -> _P:
        """Partial result of one block."""
        ...

    def combine(self, a: _P, b: _P) -> _P:
        """Partial result of the blocks of ``a`` and ``b`` together."""
        ...

    def empty(self) -> _P:
        """Result of no block at all."""
        ...


def _chunk_specs(specs: Sequence[BlockSpec]) -> list[list[BlockSpec]]:
    # a function of the blocks only, never of n_jobs (see the module docstring)
    total = sum((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in specs)
    n_target = min(_TASK_PAIRS, max(1, total // _MIN_CHUNKS))  # read at call time
    tasks: list[list[BlockSpec]] = []
    current: list[BlockSpec] = []
    size = 0
    for spec in specs:
        r0, r1, c0, c1 = spec
        current.append(spec)
        size += (r1 - r0) * (c1 - c0)
        if size >= n_target:
            tasks.append(current)
            current, size = [], 0
    if current:
        tasks.append(current)
    return tasks


def _pass_threads(n_chunks: int) -> int:
    """Threads for an in-process pass over the blocks: as many as BLAS would use.

    BLAS's own thread count is what this process may use (joblib's workers,
    for one, limit it to their share of the cores).
    """
    from threadpoolctl import threadpool_info

    blas = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(1, min(max(blas, default=1), n_chunks, _MAX_PASS_THREADS))


def _in_threads(
    run: Callable[[list[BlockSpec]], _P], chunks: list[list[BlockSpec]]
) -> Iterator[_P]:
    """``run`` of each chunk, in order: in as many threads as BLAS has, one core each.

    One two-core product at a time leaves a core idle while NumPy's
    element-wise work on the block (one core) runs; with one block per thread
    and BLAS limited to one thread each (threadpoolctl, as scikit-learn's
    k-means does) one block's element-wise work overlaps another's product
    (N=50,000: the screened count 7.7 s -> 5.9 s; the review pass at N=20,000
    7.6 s -> 5.7 s). The results come back in chunk order, as on every path,
    so they are the same. Reducers keep no state across ``map`` calls, or keep
    it per thread (the review's fused pass).
    """
    threads = _pass_threads(len(chunks))
    if threads == 1:
        yield from map(run, chunks)
        return
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    with (
        threadpool_limits(1, user_api="blas"),
        ThreadPoolExecutor(threads, thread_name_prefix="sklearn_fairaes-pairs") as pool,
    ):
        yield from pool.map(run, chunks)


def _fold(reducer: Reducer[_P], parts: Iterable[_P]) -> _P:
    """``parts`` combined left to right (the one grouping every path uses)."""
    out: _P | None = None
    for part in parts:
        out = part if out is None else reducer.combine(out, part)
    # chunks are never empty (see _chunk_specs), so out is set
    return cast("_P", out)


def _run_chunk(
    engine: PairwiseEngine, reducer: Reducer[_P], specs: Sequence[BlockSpec]
) -> _P:
    if engine._on_torch(reducer):
        pairs = engine._torch_pairs()
        map_torch = reducer.map_torch  # type: ignore[attr-defined]
        return _fold(reducer, (map_torch(pairs.block(spec)) for spec in specs))
    kind = getattr(reducer, "block_kind", "distance")
    return _fold(reducer, (reducer.map(engine._make_block(spec, kind)) for spec in specs))


def _run_task(
    engine: PairwiseEngine, reducer: Reducer[_P], chunks: Sequence[Sequence[BlockSpec]]
) -> list[_P]:
    return [_run_chunk(engine, reducer, specs) for specs in chunks]


class PairwiseEngine:
    """Distances between essays, delivered block by block over all pairs.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        One row per essay; with ``metric="precomputed"`` a condensed distance
        vector or a square distance matrix.
    metric : str or callable, default="cosine"
    block_size : int, default=None
        Side of the square blocks; None means :data:`DEFAULT_BLOCK_SIZE`, or
        less for fewer than ``8 * DEFAULT_BLOCK_SIZE`` essays (see the module
        docstring).
    n_jobs : int, default=None
        Number of joblib workers; None means 1 unless in a
        :func:`joblib.parallel_config` context.
    groups : array-like of shape (n_samples,), default=None
        Group label of each essay, used with ``pairs``.
    pairs : {"all", "within", "between"}, default="all"
        Which pairs to use: all, those of two essays of the same group, or those
        of two essays of different groups.
    name : str, default="X"
        Name of ``X`` in error messages.
    backend : {"numpy", "torch"}, default=None
        How the float32-screened passes run (see :attr:`screenable`): NumPy on
        the CPU, or torch on ``device``, where each block's product and its
        elementwise screen stay on the device and only counts, per-block
        extremes and undecided pairs come back (see the private module
        ``sklearn_fairaes.metrics._torch_pairs``). Results are identical.
        Reducers without a ``map_torch`` method and passes over float64
        distances run in NumPy on either backend. None means
        ``sklearn_fairaes.get_config()["pair_backend"]`` (default ``"numpy"``).
    device : {"cpu", "cuda", "cuda:N"}, default=None
        Device of the torch backend; None means
        ``sklearn_fairaes.get_config()["device"]`` (default ``"cpu"``). On a
        CUDA device the default block side is up to 8192 instead of 2048
        (fewer, larger products keep the GPU busy).

    Raises
    ------
    ValueError
        If ``backend`` or ``device`` is not one of the choices, if ``device``
        is a CUDA device that this machine lacks, or if it is not ``"cpu"``
        with the NumPy backend (checked before ``X`` is read).
    ImportError
        If ``backend="torch"`` and torch is not installed (it comes with the
        ``sbert`` extra).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics._pairwise import MinMaxReducer, PairwiseEngine
    >>> engine = PairwiseEngine(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]))
    >>> engine.n_pairs
    3
    >>> lo, hi, n = engine.map_reduce(MinMaxReducer())
    >>> round(lo, 4), hi, n
    (0.2929, 1.0, 3)
    """

    metric: Metric
    block_size: int
    n_jobs: int | None
    name: str
    backend: str
    device: str
    n_samples: int
    pairs: str
    groups: NDArray[np.intp] | None
    n_pairs: int
    # Set for metric="cosine" only (by _prepare_cosine): unit rows, the rows
    # that are zero vectors, and for sparse input the dense and sparse columns.
    _unit: NDArray[np.float64] | sp.csr_matrix
    _zero: NDArray[np.bool_]
    _any_zero: bool
    _snap: float
    _dense_part: sp.csr_matrix | None
    _sparse_part: sp.csr_matrix | None
    # Set by _prepare_screening, on first use.
    _unit32: NDArray[np.float32]
    _screen_error: float
    # Set by _torch_pairs(), on first use by a torch pass; never pickled.
    _torch: _torch_pairs.TorchPairs | None

    def __init__(
        self,
        X: ArrayLike | sp.spmatrix | sp.sparray,
        *,
        metric: Metric = "cosine",
        block_size: int | None = None,
        n_jobs: int | None = None,
        groups: ArrayLike | None = None,
        pairs: Literal["all", "within", "between"] = "all",
        name: str = "X",
        backend: Literal["numpy", "torch"] | None = None,
        device: str | None = None,
    ) -> None:
        # the backend and its device first: a missing GPU is an error before any
        # work on X
        config = get_config()
        self.backend = check_pair_backend(
            config["pair_backend"] if backend is None else backend, "backend"
        )
        self.device = check_device_name(config["device"] if device is None else device)
        if self.backend == "torch":
            _torch_pairs.check_device(self.device)
        elif self.device != "cpu":
            raise ValueError(
                f"device={self.device!r} needs backend='torch' (the NumPy backend runs "
                "on the CPU only); pass backend='torch', or device='cpu', or call "
                "sklearn_fairaes.set_config(pair_backend='torch')"
            )
        self._torch = None
        self.metric = _check_metric(metric)
        block_size = check_int(block_size, "block_size", minimum=1, allow_none=True)
        self.n_jobs = n_jobs
        self.name = name
        self._precomputed: NDArray[np.float64] | None = None
        self._X: NDArray[np.float64] | sp.csr_matrix | None = None
        if metric == "precomputed":
            self._precomputed, n = _check_precomputed(X, name)
        else:
            X = check_embeddings(X, name=name)
            n = X.shape[0]
            if metric == "cosine":
                self._prepare_cosine(X)
            else:
                if sp.issparse(X) and not (
                    callable(metric) or metric in _SPARSE_SKLEARN_METRICS
                ):
                    raise TypeError(
                        f"metric={metric!r} does not accept a sparse {name}; pass "
                        f"{name}.toarray() or use one of "
                        f"{sorted(_SPARSE_SKLEARN_METRICS)}"
                    )
                self._X = X
        self.n_samples = n
        if block_size is None:
            block_size = _default_block_size(n)
            if self.backend == "torch" and self.device != "cpu":
                block_size = _torch_pairs.device_block_size(n)
        self.block_size = block_size
        self.pairs = check_option(pairs, "pairs", ("all", "within", "between"))
        self.groups = None
        if groups is not None or pairs != "all":
            if groups is None:
                raise ValueError(f"pairs={pairs!r} needs groups (one label per essay)")
            labels = np.asarray(groups)
            if labels.ndim != 1 or labels.shape[0] != n:
                raise ValueError(
                    f"groups must be 1-D with one label per essay ({n}), got shape "
                    f"{labels.shape}"
                )
            _, self.groups = np.unique(labels, return_inverse=True)
        self.n_pairs = self._count_pairs()
        self._cache: dict[BlockSpec, PairBlock] | None = None
        self._screen_cache: dict[BlockSpec, PairBlock] | None = None
        self._triu: dict[tuple[int, int], NDArray[np.bool_]] = {}

    # -- setup ------------------------------------------------------------
    def _prepare_cosine(self, X: NDArray[np.float64] | sp.csr_matrix) -> None:
        # Rows are first scaled by a power of two (exact) so that their largest
        # entry is in [0.5, 1): squares then neither underflow nor overflow.
        if sp.issparse(X):
            X = X.tocsr(copy=True)
            X.sum_duplicates()
            X.eliminate_zeros()
            n = X.shape[0]
            rows = np.repeat(np.arange(n), np.diff(X.indptr))
            top = np.zeros(n)
            np.maximum.at(top, rows, np.abs(X.data))
            data = np.ldexp(X.data, -np.frexp(top)[1][rows])
            norms = np.sqrt(np.bincount(rows, weights=data * data, minlength=n))
            self._zero = norms == 0
            data /= norms[rows]
            unit = sp.csr_matrix((data, X.indices, X.indptr), shape=X.shape)
            self._unit = unit
            doc_freq = np.bincount(unit.indices, minlength=unit.shape[1])
            dense_cols = np.flatnonzero(doc_freq > _DENSE_COLUMN_SHARE * unit.shape[0])
            sparse_cols = np.flatnonzero(doc_freq <= _DENSE_COLUMN_SHARE * unit.shape[0])
            # Only the non-zeros of a row enter its dot products.
            n_terms = int(np.diff(unit.indptr).max(initial=1))
            csc = unit.tocsc()
            self._dense_part = csc[:, dense_cols].tocsr() if dense_cols.size else None
            self._sparse_part = csc[:, sparse_cols].tocsr() if sparse_cols.size else None
        else:
            top = np.max(np.abs(X), axis=1)
            scaled: NDArray[np.float64] = np.ldexp(X, -np.frexp(top)[1][:, None])
            norms = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
            self._zero = norms == 0
            # scaled is ours (ldexp made it): divided in place; zero rows stay 0
            np.divide(scaled, np.where(self._zero, 1.0, norms)[:, None], out=scaled)
            self._unit = scaled
            n_terms = scaled.shape[1]
        self._any_zero = bool(self._zero.any())
        self._snap = 8 * max(n_terms, 1) * np.finfo(np.float64).eps

    def reordered(self, order: ArrayLike) -> PairwiseEngine:
        """A copy of this engine whose essay ``i`` is this engine's ``order[i]``.

        For dense input under the cosine distance with no group filter. The
        copy's unit rows are this engine's, permuted (bitwise equal), so every
        distance, screen and count of a pair is the same; a count over all
        pairs does not depend on the order. :func:`lipschitz_fraction` sorts
        the essays by score, so that each block's score differences come in a
        few constant runs (see ``_SortedScreenedLipschitzCounter``).

        Parameters
        ----------
        order : array-like of int of shape (n_samples,)
            A permutation of ``range(n_samples)``.

        Returns
        -------
        engine : PairwiseEngine
            The permuted copy, with empty block caches.
        """
        import copy

        if self.metric != "cosine" or sp.issparse(self._unit) or self.groups is not None:
            raise ValueError(
                "reordered() needs dense input under metric='cosine' and no groups"
            )
        order = np.asarray(order, dtype=np.intp)
        if order.shape != (self.n_samples,) or not np.array_equal(
            np.sort(order), np.arange(self.n_samples)
        ):
            raise ValueError(f"order must be a permutation of range({self.n_samples})")
        new = copy.copy(self)
        new._unit = self._unit[order]
        new._zero = self._zero[order]
        if getattr(self, "_unit32", None) is not None:
            new._unit32 = self._unit32[order]
        new._cache = new._screen_cache = None
        new._triu = {}
        new._torch = None
        return new

    def _count_pairs(self) -> int:
        if self.groups is None or self.pairs == "all":
            return n_pairs_of(self.n_samples)
        within = int(sum(n_pairs_of(int(c)) for c in np.bincount(self.groups)))
        return within if self.pairs == "within" else n_pairs_of(self.n_samples) - within

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_cache"] = state["_screen_cache"] = None
        state["_triu"] = {}
        state["_torch"] = None  # device tensors: each process makes its own
        return state

    def _total_entries(self) -> int:
        return sum((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in self._block_specs())

    def _cacheable(self) -> bool:
        return self._total_entries() * 8 <= _CACHE_BYTES

    def _data(self) -> NDArray[np.float64] | sp.csr_matrix:
        """The validated rows of a metric other than cosine and precomputed."""
        # __init__ sets _X for every metric but "cosine" and "precomputed"
        return cast("NDArray[np.float64] | sp.csr_matrix", self._X)

    # -- distances --------------------------------------------------------
    def distances(self, rows: Index, cols: Index) -> NDArray[np.float64]:
        """Distances between the essays at ``rows`` and at ``cols`` (2-D, float64).

        ``rows`` and ``cols`` are slices or integer arrays.
        """
        if self._precomputed is not None:
            return self._precomputed_block(self._precomputed, rows, cols)
        if self.metric == "cosine":
            return self._cosine_block(rows, cols)
        from sklearn.metrics import pairwise_distances

        X = self._data()
        D = pairwise_distances(X[rows], X[cols], metric=self.metric)
        return np.asarray(D, dtype=np.float64)

    def _cosine_block(self, rows: Index, cols: Index) -> NDArray[np.float64]:
        G: NDArray[np.float64] | None
        if sp.issparse(self._unit):
            G = None
            if self._dense_part is not None:
                a = self._dense_part[rows].toarray()
                b = a if _same(rows, cols) else self._dense_part[cols].toarray()
                G = a @ b.T
            if self._sparse_part is not None:
                S = (self._sparse_part[rows] @ self._sparse_part[cols].T).toarray()
                G = S if G is None else np.add(G, S, out=G)
            # the matrix has at least one column, so one of the two parts exists
            G = cast("NDArray[np.float64]", G)
        else:
            G = self._unit[rows] @ self._unit[cols].T
        np.subtract(1.0, G, out=G)
        np.clip(G, 0.0, 2.0, out=G)
        G[G < self._snap] = 0.0
        if self._any_zero:
            zr = np.flatnonzero(self._zero[rows])
            zc = np.flatnonzero(self._zero[cols])
            if zr.size and zc.size:
                G[np.ix_(zr, zc)] = 0.0
        return G

    def _precomputed_block(
        self, D: NDArray[np.float64], rows: Index, cols: Index
    ) -> NDArray[np.float64]:
        if D.ndim == 2:
            if isinstance(rows, slice) and isinstance(cols, slice):
                return D[rows, cols].copy()
            return D[
                np.ix_(_as_index(rows, self.n_samples), _as_index(cols, self.n_samples))
            ]
        r = _as_index(rows, self.n_samples)
        c = _as_index(cols, self.n_samples)
        n = self.n_samples
        ii, jj = np.meshgrid(r, c, indexing="ij")
        lo, hi = np.minimum(ii, jj), np.maximum(ii, jj)
        out = np.zeros(ii.shape)
        off = lo != hi
        out[off] = D[pairs_to_condensed(lo[off], hi[off], n)]
        return out

    def paired_distances(self, i: ArrayLike, j: ArrayLike) -> NDArray[np.float64]:
        """Distances of the pairs ``(i[k], j[k])`` (1-D float64)."""
        i = np.asarray(i, dtype=np.int64)
        j = np.asarray(j, dtype=np.int64)
        out = np.empty(i.shape[0])
        if self._precomputed is not None:
            D = self._precomputed
            if D.ndim == 2:
                out[:] = D[i, j]
            else:
                lo, hi = np.minimum(i, j), np.maximum(i, j)
                out[:] = 0.0
                off = lo != hi
                out[off] = D[pairs_to_condensed(lo[off], hi[off], self.n_samples)]
            return out
        n_features = (
            self._unit.shape[1] if self.metric == "cosine" else self._data().shape[1]
        )
        dense = not sp.issparse(self._data())
        if dense:
            # gathered rows of 256 KB stay in the cache (the 32 MB chunks below
            # do not), and each row's dot product is the same whatever the chunk
            step = max(64, 2**18 // max(n_features, 1))
        else:
            step = max(1, 2**22 // max(n_features, 1))
        order = None
        if dense and i.shape[0] > 4 * step and np.any(i[1:] < i[:-1]):
            # pairs in the order of their first essay: its row is gathered from
            # the cache, not from memory; the same dot products, in another order
            order = np.argsort(i, kind="stable")
            i, j = i[order], j[order]
        for s in range(0, i.shape[0], step):
            a, b = i[s : s + step], j[s : s + step]
            out[s : s + step] = self._paired_chunk(a, b)
        if order is not None:
            unsorted = np.empty_like(out)
            unsorted[order] = out
            out = unsorted
        return out

    def _paired_chunk(
        self, a: NDArray[np.int64], b: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        if self.metric == "cosine":
            U = self._unit
            if sp.issparse(U):
                g = np.asarray(U[a].multiply(U[b]).sum(axis=1)).ravel()
            else:
                g = np.einsum("ij,ij->i", U[a], U[b])
            d = np.clip(1.0 - g, 0.0, 2.0)
            d[d < self._snap] = 0.0
            if self._any_zero:
                d[self._zero[a] & self._zero[b]] = 0.0
            return d
        from sklearn.metrics.pairwise import PAIRED_DISTANCES, paired_distances

        X = self._data()
        if callable(self.metric) or self.metric in PAIRED_DISTANCES:
            return paired_distances(X[a], X[b], metric=self.metric)
        from sklearn.metrics import pairwise_distances

        return np.array(
            [
                pairwise_distances(X[p : p + 1], X[q : q + 1], metric=self.metric)[0, 0]
                for p, q in zip(a, b)
            ]
        )

    # -- blocks -----------------------------------------------------------
    def _block_specs(self, rows: tuple[int, int] | None = None) -> list[BlockSpec]:
        n, b = self.n_samples, self.block_size
        specs: list[BlockSpec] = []
        for r0 in range(0, n, b):
            r1 = min(r0 + b, n)
            if rows is not None and (r1 <= rows[0] or r0 >= rows[1]):
                continue
            for c0 in range(r0, n, b):
                c1 = min(c0 + b, n)
                if c0 == r0 and r1 - r0 < 2:
                    continue  # a 1x1 diagonal block holds no pair
                specs.append((r0, r1, c0, c1))
        return specs

    def _mask(self, r0: int, r1: int, c0: int, c1: int) -> NDArray[np.bool_] | None:
        mask = None
        if r0 == c0:
            shape = (r1 - r0, c1 - c0)
            mask = self._triu.get(shape)
            if mask is None:
                mask = np.triu(np.ones(shape, dtype=bool), k=1)
                mask.setflags(write=False)
                self._triu[shape] = mask
        if self.groups is not None and self.pairs != "all":
            same = self.groups[r0:r1, None] == self.groups[None, c0:c1]
            keep = same if self.pairs == "within" else ~same
            mask = keep if mask is None else (mask & keep)
        return mask

    def _upper_block(self, r0: int, r1: int, c0: int, c1: int) -> NDArray[np.float64]:
        """Distances of a block of the upper triangle; entries with j <= i unset."""
        D = self._precomputed
        if D is None or D.ndim == 2:
            return self.distances(slice(r0, r1), slice(c0, c1))
        # Each row of the upper triangle is a contiguous run of the condensed
        # vector: copy runs instead of gathering pair by pair.
        n = self.n_samples
        out = np.zeros((r1 - r0, c1 - c0))
        starts = _row_start(np.arange(r0, r1), n).tolist()
        for i, first in zip(range(r0, r1), starts):
            lo = max(c0, i + 1)
            if lo < c1:
                start = first + (lo - i - 1)
                out[i - r0, lo - c0 :] = D[start : start + c1 - lo]
        return out

    def _make_block(self, spec: BlockSpec, kind: str = "distance") -> PairBlock:
        r0, r1, c0, c1 = spec
        mask = self._mask(r0, r1, c0, c1)
        if kind == "similarity32":
            if r0 == c0 and r1 == c1:
                from scipy.linalg import blas

                # a diagonal block needs only its upper triangle: syrk does half
                # the work of gemm (the lower triangle is masked anyway)
                G = blas.ssyrk(1.0, self._unit32[r0:r1].T, trans=1, lower=1).T
            else:
                G = self._unit32[r0:r1] @ self._unit32[c0:c1].T
            if self._any_zero:
                zr = np.flatnonzero(self._zero[r0:r1])
                zc = np.flatnonzero(self._zero[c0:c1])
                if zr.size and zc.size:
                    G[np.ix_(zr, zc)] = 1.0  # two zero vectors: distance 0
            return PairBlock(r0, r1, c0, c1, None, mask, similarities=G)
        D = self._upper_block(r0, r1, c0, c1)
        D.setflags(write=False)
        return PairBlock(r0, r1, c0, c1, D, mask)

    @property
    def rounding_tolerance(self) -> float:
        """Distances closer than this are equal up to rounding (cosine only; else 0)."""
        return self._snap if self.metric == "cosine" else 0.0

    # -- float32 screening --------------------------------------------------
    @property
    def screenable(self) -> bool:
        """Whether passes may screen pairs with a float32 product first.

        True for dense input under the cosine distance when the problem is too
        large to cache. A float32 matrix product is twice as fast as a float64
        one; reducers that use it settle the pairs it cannot decide with exact
        float64 distances (:meth:`paired_distances`).
        """
        return (
            self.metric == "cosine"
            and self._precomputed is None
            and not sp.issparse(self._unit)
            and not self._cacheable()
        )

    def _prepare_screening(self) -> None:
        if getattr(self, "_unit32", None) is None:
            self._unit32 = self._unit.astype(np.float32)
            n = self._unit.shape[1] + 2
            u32 = float(np.finfo(np.float32).eps) / 2
            u64 = float(np.finfo(np.float64).eps) / 2
            # Dot products of unit rows: |error| <= gamma_n * sum|a_k b_k| <= gamma_n
            # (Cauchy-Schwarz), for any summation order; float32 rounding of the
            # rows adds 2 u32. The exact side (float64, then snapped) adds its own.
            g32 = n * u32 / (1 - n * u32)
            g64 = n * u64 / (1 - n * u64)
            self._screen_error = 1.01 * (g32 + 2 * u32 + g64) + self._snap + 4 * u64

    def _on_torch(self, reducer: object) -> bool:
        """Whether ``reducer``'s pass runs on the torch backend."""
        return (
            self.backend == "torch"
            and getattr(reducer, "block_kind", "distance") == "similarity32"
            and hasattr(reducer, "map_torch")
        )

    def _torch_pairs(self) -> _torch_pairs.TorchPairs:
        """The unit rows on the torch device (made on first use, per process)."""
        with _torch_pairs.setup_lock:  # threads of one engine make it once
            if self._torch is None:
                self._prepare_screening()
                self._torch = _torch_pairs.TorchPairs(
                    self._unit32, self._zero, self.groups, self.pairs, self.device
                )
            return self._torch

    @property
    def screen_error(self) -> float:
        """Bound on ``|(1 - s) - d|`` for a float32 similarity ``s`` and exact ``d``."""
        self._prepare_screening()
        return self._screen_error

    @overload
    def distance_range(
        self, *, screened: Literal[False] = ...
    ) -> tuple[float, float, int]: ...
    @overload
    def distance_range(self, *, screened: bool) -> tuple[float, float, int] | None: ...
    def distance_range(self, *, screened: bool = False) -> tuple[float, float, int] | None:
        """Exact ``(min, max, n_pairs)`` of the distances of all (filtered) pairs.

        With ``screened=True`` (only when :attr:`screenable`), a float32 pass
        finds the candidates for both extremes and their distances are computed
        by :meth:`paired_distances`, the exact values that screened reducers
        use; None when there are too many candidates (massive ties). On CPUs
        with AMX the candidates come from bfloat16 products instead, within a
        window that holds every float32 candidate
        (:meth:`_bf16_extreme_candidates`): the same range. Otherwise the
        extremes of the float64 blocks.
        """
        if screened:
            # A pair can hold the exact minimum distance only if its float32
            # similarity is within twice the error bound of the largest one (and
            # likewise for the maximum): find the blocks holding such pairs, then
            # the pairs, then their exact distances.
            found = self._bf16_extreme_candidates()
            if found is not None and found[0].size and self.n_pairs:
                d = self.paired_distances(*found)
                return float(d.min()), float(d.max()), self.n_pairs
            ranges, count = self.map_reduce(_ScreenedRange())
            if not count:
                return None
            err = 2 * self.screen_error
            top = max(r[0] for r in ranges)
            bottom = min(r[1] for r in ranges)
            specs = [spec for t, b, spec in ranges if t >= top - err or b <= bottom + err]
            high, low, overflow = self.map_reduce(
                _ScreenedCandidates(_f32_at_most(top - err), _f32_at_least(bottom + err)),
                specs=specs,
            )
            if overflow:
                return None
            lo = self.paired_distances(*high)
            hi = self.paired_distances(*low)
            return float(lo.min()), float(hi.max()), count
        return self.map_reduce(MinMaxReducer())

    def _bf16_extreme_candidates(self) -> Pairs | None:
        """Candidates for both extremes from bfloat16 products, or None (not used here).

        With ``get_config()["bf16_range"]``, on the NumPy backend, on a CPU with
        AMX bfloat16 tiles, for many essays and when torch is installed
        (:data:`._torch_pairs.BF16_MIN_ESSAYS`): every pair whose bfloat16
        similarity is within ``2 * e16 + 4 * e32`` of the bfloat16 extremes
        (``e16`` the bound of ``_torch_pairs.bf16_error``, ``e32`` of
        :attr:`screen_error`). These include every candidate of the float32
        pass (float32 similarity within ``2 * e32`` of the float32 extreme), so
        the exact extremes over them are the same. None also when there are
        too many (massive near-ties); the float32 pass then runs.
        """
        import importlib.util
        import sys

        n_min = _torch_pairs.BF16_MIN_ESSAYS[0 if "torch" in sys.modules else 1]
        if (
            not get_config()["bf16_range"]
            or self.backend != "numpy"
            or self.n_samples < n_min
            or self.groups is not None
            or self._any_zero  # two zero rows: distance 0, which products do not give
            or self._unit.shape[1] > 2**14
            or not _torch_pairs.cpu_has_amx_bf16()
            or importlib.util.find_spec("torch") is None
        ):
            return None
        self._prepare_screening()
        window = 2 * _torch_pairs.bf16_error(self._unit.shape[1]) + 4 * self.screen_error
        return _torch_pairs.bf16_extreme_candidates(
            self._unit32, self._block_specs(), window
        )

    def _iter_partials(
        self, reducer: Reducer[_P], specs: Sequence[BlockSpec]
    ) -> Iterator[_P]:
        """Partial results of ``reducer``, one per chunk of ``specs``, in a fixed order."""
        # Chunks fix how partial results are combined (so the result does not
        # depend on the parallelism): every path folds within a chunk first.
        chunks = _chunk_specs(specs)
        n_workers = effective_n_jobs(self.n_jobs)
        # asked for workers: every pass goes to them, none is cached in-process
        in_process = n_workers == 1 or len(chunks) == 1
        if self._cache is None and in_process and self._cacheable():
            self._cache = {}
        kind = getattr(reducer, "block_kind", "distance")
        # torch passes make every block on the device: blocks of a first pass
        # are not kept for a second (recomputing them there is cheap)
        if kind != "distance" and not self._on_torch(reducer):
            self._prepare_screening()
            if (
                self._screen_cache is None
                and in_process
                and self._total_entries() * 4 <= _SCREEN_CACHE_BYTES
            ):
                self._screen_cache = {}

            if self._screen_cache is not None:
                screen_cache = self._screen_cache
                # In-process; a reducer that overwrites its blocks consumes them.
                consumes = getattr(reducer, "consumes_blocks", False)

                def screened(spec: BlockSpec) -> PairBlock:
                    # dict get/set/pop are atomic: safe from the threads below
                    block = (
                        screen_cache.pop(spec, None) if consumes else screen_cache.get(spec)
                    )
                    if block is None:
                        block = self._make_block(spec, kind)
                        if not consumes:
                            screen_cache[spec] = block
                    return block

                def run_cached(chunk: list[BlockSpec]) -> _P:
                    return _fold(reducer, (reducer.map(screened(s)) for s in chunk))

                yield from _in_threads(run_cached, chunks)
                return
        if self._cache is not None and kind == "distance":
            cache = self._cache

            def cached(spec: BlockSpec) -> PairBlock:
                block = cache.get(spec)
                if block is None:
                    block = cache[spec] = self._make_block(spec)
                return block

            for chunk in chunks:
                yield _fold(reducer, (reducer.map(cached(s)) for s in chunk))
            return
        if in_process:

            def run_chunk(chunk: list[BlockSpec]) -> _P:
                return _run_chunk(self, reducer, chunk)

            if self._on_torch(reducer):  # torch has its own threads (or a device)
                yield from map(run_chunk, chunks)
            else:
                yield from _in_threads(run_chunk, chunks)
            return
        # tasks only schedule runs of chunks, a few per worker, so that the
        # engine's arrays are shipped a few times only; the workers run under
        # the caller's sklearn_fairaes settings
        groups = np.array_split(np.arange(len(chunks)), min(len(chunks), 4 * n_workers))
        # captured here: joblib may draw the tasks below from another thread
        task = _delayed(_run_task, get_config())
        for results in Parallel(n_jobs=self.n_jobs, return_as="generator")(
            task(self, reducer, [chunks[k] for k in group]) for group in groups
        ):
            yield from results

    def map_reduce(
        self,
        reducer: Reducer[_P],
        *,
        rows: tuple[int, int] | None = None,
        specs: Sequence[BlockSpec] | None = None,
    ) -> _P:
        """Apply ``reducer.map`` to every block and fold with ``reducer.combine``.

        Parameters
        ----------
        reducer : object
            With ``map(block) -> partial``, ``combine(a, b) -> partial`` and
            ``empty() -> partial``. ``map`` must not modify ``block.distances``.
        rows : (int, int), default=None
            Only blocks that meet rows ``rows[0]:rows[1]``.
        specs : list of (int, int, int, int), default=None
            Only these blocks ``(row_start, row_stop, col_start, col_stop)``.
        """
        if specs is None:
            specs = self._block_specs(rows)
        out: _P | None = None
        for part in self._iter_partials(reducer, specs):
            out = part if out is None else reducer.combine(out, part)
        return reducer.empty() if out is None else out

    def condensed(self) -> NDArray[np.float64]:
        """All distances in ``pdist`` order (1-D float64 of length ``N(N-1)/2``).

        Holds ``8 * N(N-1)/2`` bytes; meant for problems small enough to sort.
        """
        if self.groups is not None and self.pairs != "all":
            raise ValueError("condensed distances are defined for pairs='all' only")
        D = self._precomputed
        if D is not None and D.ndim == 1:
            return D
        n = self.n_samples
        out = np.empty(n_pairs_of(n))
        for part in self._iter_partials(_BlockCollector(), self._block_specs()):
            for r0, r1, c0, c1, block in part:
                starts = _row_start(np.arange(r0, r1), n).tolist()
                for a, first in enumerate(starts):
                    i = r0 + a
                    lo = max(c0, i + 1)
                    if lo >= c1:
                        continue
                    start = first + (lo - i - 1)
                    out[start : start + c1 - lo] = block[a, lo - c0 :]
        return out

    def sample_pairs(
        self, n_draws: int, random_state: int | np.random.RandomState | None = None
    ) -> Pairs:
        """Pairs drawn independently and uniformly (with replacement).

        Returns ``(i, j)`` with ``i < j``. With a group filter, pairs outside it
        are rejected and redrawn.
        """
        rng = check_random_state(random_state)
        n = self.n_samples
        got_i: list[NDArray[np.int64]] = []
        got_j: list[NDArray[np.int64]] = []
        have = 0
        for _ in range(10_000):
            need = n_draws - have
            if need <= 0:
                break
            # Two distinct positions drawn uniformly give each unordered pair the
            # same probability 2 / (N (N - 1)).
            a = rng.randint(0, n, size=need)
            b = rng.randint(0, n - 1, size=need)
            b = b + (b >= a)
            i, j = np.minimum(a, b), np.maximum(a, b)
            if self.groups is not None and self.pairs != "all":
                same = self.groups[i] == self.groups[j]
                keep = same if self.pairs == "within" else ~same
                i, j = i[keep], j[keep]
            got_i.append(i)
            got_j.append(j)
            have += i.shape[0]
        else:  # pragma: no cover - only with a vanishing share of admissible pairs
            raise RuntimeError("could not draw enough pairs that pass the group filter")
        return np.concatenate(got_i)[:n_draws], np.concatenate(got_j)[:n_draws]


_SPARSE_SKLEARN_METRICS = frozenset(
    {"cityblock", "cosine", "euclidean", "l1", "l2", "manhattan"}
)


def _same(a: Index, b: Index) -> bool:
    if isinstance(a, slice) and isinstance(b, slice):
        return a == b
    return a is b


def _as_index(sel: Index, n: int) -> NDArray[np.int64]:
    if isinstance(sel, slice):
        return np.arange(n)[sel]
    return np.asarray(sel, dtype=np.int64)


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

    def map_torch(self, block: _torch_pairs.TorchBlock) -> _Ranges:
        """:meth:`map` of a block on the torch backend."""
        if block.n_valid == 0:
            return self.empty()
        top, bottom = _torch_pairs.block_extremes(block)
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

    def map_torch(self, block: _torch_pairs.TorchBlock) -> _Candidates:
        """:meth:`map` of a block on the torch backend."""
        found = _torch_pairs.block_candidates(
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
    if T <= EXACT_SORT_MAX_PAIRS and (engine.groups is None or engine.pairs == "all"):
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


# --------------------------------------------------------------------------
# Public helper
# --------------------------------------------------------------------------
def condensed_distances(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    *,
    metric: Metric = "cosine",
    block_size: int | None = None,
    n_jobs: int | None = None,
) -> NDArray[np.float64]:
    """Return the distances of all pairs of essays, in the condensed order of ``pdist``.

    A drop-in for :func:`scipy.spatial.distance.pdist` that is computed block by
    block with BLAS, accepts sparse matrices (TF-IDF) and defines the cosine
    distance of zero vectors. Compute it once and pass it to several metrics
    with ``metric="precomputed"``.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        One row per essay.
    metric : str or callable, default="cosine"
        ``"cosine"``, a metric name of
        :func:`sklearn.metrics.pairwise_distances`, or a callable on two rows.
    block_size : int, default=None
        Side of the square blocks (None: 2048).
    n_jobs : int, default=None
        Number of joblib workers (None: 1 unless in a
        :func:`joblib.parallel_config` context).

    Returns
    -------
    distances : ndarray of shape (n_samples * (n_samples - 1) // 2,)
        ``distances[k]`` is the distance of the ``k``-th pair ``(i, j)``,
        ``i < j``, row by row.

    Notes
    -----
    The cosine distance is ``1 - u.v / (|u| |v|)`` clipped to ``[0, 2]``; it is
    0 between two zero vectors and 1 between a zero and a non-zero vector
    (scipy returns NaN for both), and exactly 0 for parallel vectors (scipy
    returns rounding noise). Values agree with ``pdist`` to about ``1e-15``.
    The result holds ``8 * N(N-1)/2`` bytes (10 MB for 1,569 essays, 10 GB for
    50,000): for large corpora call the metrics on ``X`` directly.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import condensed_distances
    >>> X = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0], [0.0, 0.0]])
    >>> condensed_distances(X).round(4)
    array([1.    , 0.2929, 1.    , 0.2929, 1.    , 1.    ])
    """
    engine = PairwiseEngine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    return engine.condensed().copy()


class TableResult(Bunch):
    """A dict of arrays with attribute access and a pandas view.

    Keys are also attributes (``result.mean_abs_diff``). :meth:`to_frame`
    returns the per-row arrays as a :class:`pandas.DataFrame` (pandas is
    imported only then).

    Examples
    --------
    >>> from sklearn_fairaes.metrics._pairwise import TableResult
    >>> result = TableResult(n_pairs=[3, 3])
    >>> result.n_pairs
    [3, 3]
    """

    #: Keys of the per-row arrays that :meth:`to_frame` puts in columns.
    _frame_keys: tuple[str, ...] = ()
    #: Key of the array that indexes the frame, or None for a range index.
    _frame_index: str | None = None

    def to_frame(self) -> pd.DataFrame:
        """The table as a :class:`pandas.DataFrame` (needs pandas)."""
        from ..resources import require

        pd = require("pandas", purpose="DataFrame output")
        data = {key: np.asarray(self[key]) for key in self._frame_keys}
        index = None if self._frame_index is None else self[self._frame_index]
        frame = pd.DataFrame(data, index=index)
        if self._frame_index is not None:
            frame.index.name = self._frame_index
        return frame
