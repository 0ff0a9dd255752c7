"""The blocked pairwise engine."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, effective_n_jobs
from sklearn.utils import check_random_state

from ..._config import _delayed, check_device_name, check_pair_backend, get_config
from ..._validation import check_embeddings
from . import _torch_backend
from ._blocks import (
    PairBlock,
    Reducer,
    _chunk_specs,
    _fold,
    _in_threads,
    _map_spec,
    _pass_threads,
    _run_chunk,
    _run_task,
)
from ._distances import (
    _SPARSE_SKLEARN_METRICS,
    _check_metric,
    _check_precomputed,
    _Distances,
)
from ._range import (
    MinMaxReducer,
    _BlockCollector,
    _f32_at_least,
    _f32_at_most,
    _ScreenedCandidates,
    _ScreenedRange,
)
from ._types import _default_block_size, _row_start, check_int, check_option, n_pairs_of

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from numpy.typing import ArrayLike, NDArray

    from ._types import (
        BlockSpec,
        Metric,
        Pairs,
    )

_P = TypeVar("_P")

#: Distance blocks totalling at most this many bytes are computed once and
#: kept for the later passes of a metric.
_CACHE_BYTES = 64 * 2**20

#: Float32 similarity blocks totalling at most this many bytes are kept from
#: the first screened pass for the second (N up to about 10,000 with 2048
#: blocks), which then needs no matrix product.
_SCREEN_CACHE_BYTES = 2**28


class PairwiseEngine(_Distances):
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
        ``sklearn_fairaes.metrics._pairs._torch_backend``). Results are identical.
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
    >>> from sklearn_fairaes.metrics._pairs._engine import PairwiseEngine
    >>> from sklearn_fairaes.metrics._pairs._range import MinMaxReducer
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
    # Set by _prepare_screening, on first use.
    _unit32: NDArray[np.float32]
    _screen_error: float
    # Set by _torch_pairs(), on first use by a torch pass; never pickled.
    _torch: _torch_backend.TorchPairs | None

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
            _torch_backend.check_device(self.device)
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
                block_size = _torch_backend.device_block_size(n)
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
        # distance_range() by `screened`; shared with copies over the same pairs
        self._ranges: dict[bool, tuple[float, float, int] | None] = {}
        self._ranges_lock = threading.RLock()

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

    def for_call(self) -> PairwiseEngine:
        """A copy of this engine for one metric call, sharing its work so far.

        The copy holds the same prepared rows (bitwise equal, not copied) and
        shares the distance range once computed (:meth:`distance_range`), but
        keeps its own block caches: those belong to one call's passes, and
        are freed with the copy when the call returns, as with an engine
        made for the call.

        Returns
        -------
        engine : PairwiseEngine
            The copy, with empty block caches.
        """
        import copy

        if self.screenable:
            # prepared once here, so that every copy uses the same float32 rows
            self._prepare_screening()
        new = copy.copy(self)
        new._cache = new._screen_cache = None
        new._triu = {}
        return new

    def filtered(
        self, groups: ArrayLike, pairs: Literal["within", "between"]
    ) -> PairwiseEngine:
        """A copy of this engine over the pairs within or between ``groups``.

        The same as ``PairwiseEngine(X, groups=groups, pairs=pairs, ...)``
        with this engine's ``X`` and options, without preparing ``X`` again.

        Parameters
        ----------
        groups : array-like of shape (n_samples,)
            Group label of each essay.
        pairs : {"within", "between"}
            The pairs of two essays of the same group, or of different groups.

        Returns
        -------
        engine : PairwiseEngine
            The filtered copy, with its own distance range and empty caches.
        """
        if self.groups is not None:
            raise ValueError("filtered() needs an engine over all pairs (no groups)")
        new = self.for_call()
        new.pairs = check_option(pairs, "pairs", ("within", "between"))
        labels = np.asarray(groups)
        if labels.ndim != 1 or labels.shape[0] != self.n_samples:
            raise ValueError(
                f"groups must be 1-D with one label per essay ({self.n_samples}), "
                f"got shape {labels.shape}"
            )
        _, new.groups = np.unique(labels, return_inverse=True)
        new.n_pairs = new._count_pairs()
        new._ranges = {}
        new._ranges_lock = threading.RLock()
        return new

    def _count_pairs(self) -> int:
        if self.groups is None or self.pairs == "all":
            return n_pairs_of(self.n_samples)
        within = int(sum(n_pairs_of(int(c)) for c in np.bincount(self.groups)))
        return within if self.pairs == "within" else n_pairs_of(self.n_samples) - within

    def __sizeof__(self) -> int:
        # Its arrays, as dask.sizeof measures objects with sys.getsizeof:
        # joblib's Dask backend then scatters the engine to the workers once
        # per pass instead of embedding it in every task of the graph.
        size = object.__sizeof__(self)
        for value in self.__dict__.values():
            if isinstance(value, np.ndarray):
                size += value.nbytes
            elif sp.issparse(value):  # CSR rows: their three arrays
                for part in ("data", "indices", "indptr"):
                    size += getattr(value, part, np.empty(0)).nbytes
        return size

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_cache"] = state["_screen_cache"] = None
        state["_triu"] = {}
        state["_torch"] = None  # device tensors: each process makes its own
        del state["_ranges_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._ranges_lock = threading.RLock()

    def _total_entries(self) -> int:
        return sum((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in self._block_specs())

    def _cacheable(self) -> bool:
        return self._total_entries() * 8 <= _CACHE_BYTES

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

    def _torch_pairs(self) -> _torch_backend.TorchPairs:
        """The unit rows on the torch device (made on first use, per process)."""
        with _torch_backend.setup_lock:  # threads of one engine make it once
            if self._torch is None:
                self._prepare_screening()
                self._torch = _torch_backend.TorchPairs(
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

        Computed once per engine and kind: the metrics called on one engine
        (:func:`as_engine`), and the copies of :meth:`reordered` and
        :meth:`for_call`, share the result.
        """
        # the lock only keeps two threads from computing the same range twice
        with self._ranges_lock:
            if screened not in self._ranges:
                self._ranges[screened] = self._distance_range(screened)
            return self._ranges[screened]

    def _distance_range(self, screened: bool) -> tuple[float, float, int] | None:
        if screened:
            # A pair can hold the exact minimum distance only if its float32
            # similarity is within twice the error bound of the largest one (and
            # likewise for the maximum): find the blocks holding such pairs, then
            # the pairs, then their exact distances.
            found = self._bf16_extreme_candidates()
            if found is None:
                found = self._int8_extreme_candidates()
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

    def _low_precision_range_applies(
        self, min_essays: tuple[int, int], max_features: int
    ) -> bool:
        """Whether a low-precision range pass may run here, whatever the CPU offers.

        ``get_config()["bf16_range"]``, the NumPy backend, no groups, no two
        zero rows (distance 0, which products do not give), at most
        ``max_features`` columns, torch installed, and at least ``min_essays``
        essays (its first entry when torch is already imported, else the
        second, which also pays torch's import).
        """
        import importlib.util
        import sys

        n_min = min_essays[0 if "torch" in sys.modules else 1]
        return bool(
            get_config()["bf16_range"]
            and self.backend == "numpy"
            and self.n_samples >= n_min
            and self.groups is None
            and not self._any_zero
            and self._unit.shape[1] <= max_features
            and importlib.util.find_spec("torch") is not None
        )

    def _bf16_extreme_candidates(self) -> Pairs | None:
        """Candidates for both extremes from bfloat16 products, or None (not used here).

        With ``get_config()["bf16_range"]``, on the NumPy backend, on a CPU with
        AMX bfloat16 tiles, for many essays and when torch is installed
        (:data:`._torch_backend.BF16_MIN_ESSAYS`): every pair whose bfloat16
        similarity is within ``2 * e16 + 4 * e32`` of the bfloat16 extremes
        (``e16`` the bound of ``_torch_backend.bf16_error``, ``e32`` of
        :attr:`screen_error`). These include every candidate of the float32
        pass (float32 similarity within ``2 * e32`` of the float32 extreme), so
        the exact extremes over them are the same. None also when there are
        too many (massive near-ties); the float32 pass then runs.
        """
        if not (
            self._low_precision_range_applies(_torch_backend.BF16_MIN_ESSAYS, 2**14)
            and _torch_backend.cpu_has_amx_bf16()
        ):
            return None
        self._prepare_screening()
        window = 2 * _torch_backend.bf16_error(self._unit.shape[1]) + 4 * self.screen_error
        return _torch_backend.bf16_extreme_candidates(
            self._unit32, self._block_specs(), window
        )

    def _int8_extreme_candidates(self) -> Pairs | None:
        """Candidates for both extremes from int8 products, or None (not used here).

        Under the conditions of :meth:`_bf16_extreme_candidates`, but on a CPU
        with int8 dot products (:func:`._range_int8.cpu_has_int8_dot`) and
        torch's ``_int_mm``: every pair whose int8 similarity is within ``2 *
        (e8 + e32) + 4 * e32`` of the int8 extremes (``e8`` the bound of
        :func:`._range_int8.int8_rows` against the exact product of the float64
        rows, and ``e32`` of :attr:`screen_error`, which also bounds the exact
        side's rounding). As for bfloat16, with ``e8 + e32`` bounding ``|1 -
        s8 - d|``, these include every candidate of the float32 pass, so the
        exact extremes over them are the same.
        """
        from . import _range_int8

        if not (
            self._low_precision_range_applies(
                _range_int8.INT8_MIN_ESSAYS, _range_int8.INT8_MAX_FEATURES
            )
            and _range_int8.cpu_has_int8_dot()
            and hasattr(_torch_backend.import_torch(), "_int_mm")
        ):
            return None
        self._prepare_screening()
        q, scale, e8 = _range_int8.int8_rows(cast("NDArray[np.float64]", self._unit))
        window = 2 * (e8 + self.screen_error) + 4 * self.screen_error
        specs = self._block_specs()
        return _range_int8.int8_extreme_candidates(
            q, scale, specs, window, _pass_threads(len(specs))
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
                    return _fold(reducer, (_map_spec(reducer, s, screened) for s in chunk))

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
                yield _fold(reducer, (_map_spec(reducer, s, cached) for s in chunk))
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


# --------------------------------------------------------------------------
# Public helper
# --------------------------------------------------------------------------
def as_engine(
    X: object,
    *,
    metric: Metric,
    block_size: int | None,
    n_jobs: int | None,
) -> PairwiseEngine:
    """The engine of one metric call: over ``X``, or a copy of ``X`` when it is one.

    The pair metrics accept a :class:`PairwiseEngine` as ``X``, so that the
    metrics called on the same essays share its prepared rows and its
    distance range (the audit holds one per study and representation); each
    call works on :meth:`PairwiseEngine.for_call`, with its own block caches.

    Parameters
    ----------
    X : object
        The metric's ``X``: essay rows or precomputed distances, or an engine.
    metric, block_size, n_jobs
        The metric's options. With an engine, ``metric`` must be the engine's,
        and ``block_size`` and ``n_jobs`` None or the engine's.

    Returns
    -------
    engine : PairwiseEngine

    Raises
    ------
    ValueError
        If ``X`` is an engine whose options differ from those given.
    """
    if not isinstance(X, PairwiseEngine):
        return PairwiseEngine(
            cast("ArrayLike", X), metric=metric, block_size=block_size, n_jobs=n_jobs
        )
    given = {"metric": metric, "block_size": block_size, "n_jobs": n_jobs}
    own = {"metric": X.metric, "block_size": X.block_size, "n_jobs": X.n_jobs}
    differ = [
        f"{key}={given[key]!r} (the engine's: {own[key]!r})"
        for key in given
        if (key == "metric" or given[key] is not None) and given[key] != own[key]
    ]
    if differ:
        raise ValueError(
            f"X is a PairwiseEngine, which fixes the distances and their blocks, but "
            f"{', '.join(differ)} was asked for; pass the engine's options (or None "
            f"for block_size and n_jobs), or pass the essays' rows as X"
        )
    return X.for_call()


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
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    return engine.condensed().copy()
