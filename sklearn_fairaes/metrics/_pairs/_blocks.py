"""Blocks of the distance matrix, the reducer protocol and how passes are scheduled."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from numpy.typing import NDArray

    from ._engine import PairwiseEngine
    from ._types import (
        BlockSpec,
        Pairs,
    )

_P = TypeVar("_P")

#: Most threads of an in-process pass over the blocks (one block each).
_MAX_PASS_THREADS = 8

#: Pairs per joblib task. Fixed (not derived from n_jobs) so that floating
#: point sums are combined in the same grouping whatever the parallelism.
_TASK_PAIRS = 2**24

#: A run of blocks is cut into at least this many chunks when the blocks allow
#: it, so that n_jobs workers get a few chunks each.
_MIN_CHUNKS = 16


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
    overwrite them), and have a ``bind(engine)`` method, which each task sent
    to workers calls with its engine before the reducer's first ``map``, and a
    ``known(spec)`` method (see :func:`_map_spec`).
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


def _map_spec(
    reducer: Reducer[_P], spec: BlockSpec, make: Callable[[BlockSpec], PairBlock]
) -> _P:
    """``reducer.map`` of the block at ``spec``, made by ``make`` only when needed.

    A reducer may have a ``known(spec)`` method that gives the block's partial
    result without the block (its products are then never computed), or None.
    """
    known = getattr(reducer, "known", None)
    if known is not None:
        got = known(spec)
        if got is not None:
            return cast("_P", got)
    return reducer.map(make(spec))


def _run_chunk(
    engine: PairwiseEngine, reducer: Reducer[_P], specs: Sequence[BlockSpec]
) -> _P:
    if engine._on_torch(reducer):
        pairs = engine._torch_pairs()
        map_torch = reducer.map_torch  # type: ignore[attr-defined]
        return _fold(reducer, (map_torch(pairs.block(spec)) for spec in specs))
    kind = getattr(reducer, "block_kind", "distance")
    return _fold(
        reducer,
        (_map_spec(reducer, spec, lambda s: engine._make_block(s, kind)) for spec in specs),
    )


def _run_task(
    engine: PairwiseEngine, reducer: Reducer[_P], chunks: Sequence[Sequence[BlockSpec]]
) -> list[_P]:
    # a reducer that needs the engine (to settle pairs exactly) does not ship
    # its own copy: it takes the task's, which on Dask is scattered once
    bind = getattr(reducer, "bind", None)
    if bind is not None:
        bind(engine)
    return [_run_chunk(engine, reducer, specs) for specs in chunks]
