"""The review pass of large dense cosine problems, screened in float32.

:func:`sklearn_fairaes.metrics._pairs._review_pass._review` needs, over all pairs, each
essay's nearest neighbours, the worst violations, the counts at a few
Lipschitz constants, a histogram of the critical constants (the profile's
curve) and a few order statistics of them (the quantile constants). The
float64 pass (``_FusedReview``) computes every pair's distance in float64 and
about 20 element-wise operations on it. This pass reads the float32 products
that :func:`lipschitz_fraction`'s screen reads, does about ten float32
operations per pair (in one compiled loop, ``_kernels``, when numba is
installed; else NumPy passes over strips that stay in the cache, with the
same results), and settles exactly,
with distances computed pair by pair (:meth:`PairwiseEngine.paired_distances`,
as :func:`lipschitz_fraction` does), only the pairs that the float32 values
cannot decide:

- each pair's critical constant ``c`` is approximated by the float32 quotient
  ``q = o / d`` of its normalised score difference and distance. With the
  float32 errors ``eps_o`` of ``o`` and ``eps_d`` of ``d`` (from
  :attr:`PairwiseEngine.screen_error`) and ``d >= delta``,
  ``|q - c| <= A + B c`` with ``A = eps_o / delta`` and ``B = eps_d / delta``
  (plus rounding). ``delta`` is ``1024 eps_d``, so ``B`` is about ``1e-3``;
  the few pairs closer than ``delta`` (near-duplicates) are settled exactly;
- the count at a constant ``L``: pairs whose ``q`` is in a coarse bin below
  ``L (1 - B) - A`` are satisfied, above ``L (1 + B) + A`` they are not; in
  the bins between, the float32 test ``o - L d`` decides all but the pairs
  within its error bound, which are settled exactly with the comparison of
  :func:`lipschitz_fraction`, whose counts these equal;
- the neighbours: per essay the pairs within ``2 * screen_error`` of the
  ``k``-th largest float32 similarity, whose exact distances then rank them;
- the violations: the pairs within twice the float32 error of the ``top``-th
  largest float32 violation, then exact;
- the quantile constants: the pairs of a window around each quantile,
  guessed from a sample, are kept with their float32 quotient and distance
  (16 bytes a pair, at most :data:`_MAX_WINDOW` pairs a window); the interval
  each pair's constant lies in, from its quotient alone and then, for a band
  of them, from its own distance, narrows the order statistic to a range
  that a few pairs can hold, and those are settled exactly. A quantile
  outside its window is found by the float64 passes afterwards;
- the curve is the histogram of the float32 quotients (the settled pairs'
  exact constants): each of its fractions is within the bound above of the
  exact fraction at a nearby constant (the fractions at the requested
  constants and the quantile constants are exact).

When a problem is outside these bounds (a distance or score scale that makes
``delta`` large, constants or quantile windows near 0) or too many pairs need
settling, the caller falls back to the float64 pass, with the same counts,
neighbours, violations and constants (to the last bits of the distances).
"""

from __future__ import annotations

import functools
import math
import threading
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ...exceptions import CacheWriteWarning
from ._blocks import _pass_threads
from ._counters import _settle
from ._keys import N_COARSE_KEYS, float_key
from ._review_stats import _critical_constants, _ThreadLocalCache
from ._scaling import _normalise
from ._types import pairs_to_condensed

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import NDArray

    from ._blocks import PairBlock
    from ._engine import PairwiseEngine
    from ._review_stats import _PairStatistics
    from ._scaling import Scaling

_U32 = float(np.finfo(np.float32).eps) / 2
_U64 = float(np.finfo(np.float64).eps) / 2
#: Spacing of the float32 subnormals: the largest error of a float32 underflow.
_TINY32 = float(np.finfo(np.float32).smallest_subnormal)

#: Rows of a block worked on at a time: 32 rows of 2048 float32 are 256 KB, so
#: a strip's arrays stay in the L2 cache through its dozen operations.
_STRIP_ROWS = 32

#: ``q``'s coarse key: its float32 bits without the 17 lowest, 64 bins per power
#: of two (the bins of :data:`KEY_SHIFT` for float64 values).
_SHIFT32 = 17
#: Number of coarse float32 keys; the last (NaN patterns) is never a quotient of
#: a kept pair and marks the entries that are not pairs or are settled exactly.
_N_KEYS32 = 1 << (31 - _SHIFT32)
_DISCARD32 = _N_KEYS32 - 1

#: Flags of :attr:`_ScreenedReview._special`: why a coarse bin's pairs are looked at.
_CONSTANT, _WINDOW, _TAIL = 1, 2, 4

#: ``delta`` in units of the distance error: ``B`` is then about ``1 / 1024``.
_DELTA_FACTOR = 1024.0
#: Largest ``delta`` (normalised distance) for which the screen is used: beyond
#: it too many pairs would be settled one by one.
_MAX_DELTA = 0.25
#: Most pairs settled exactly (undecided, near-duplicates) and most pairs kept
#: in the quantiles' windows; beyond either the caller falls back.
_MAX_SETTLED = 2**22
_MAX_WINDOW = 2**24
#: First size of each of the compiled kernel's output arrays (grown on demand).
_KERNEL_CAPACITY = 1 << 15


#: False (tests set it) runs the NumPy strips even where numba is installed.
USE_KERNEL = True


@functools.cache
def _load_kernel() -> Any:
    try:
        from . import _kernels
    except ModuleNotFoundError as exc:
        if exc.name != "numba":
            raise
        return None
    if not _kernels.CACHED:
        warnings.warn(
            "numba found no writable folder for its cache, so the review kernel "
            "is compiled again in every process (a few seconds each); set "
            "NUMBA_CACHE_DIR to a writable folder to keep it",
            CacheWriteWarning,
            stacklevel=2,
        )
    return _kernels


_KERNEL_LOCK = threading.Lock()


def kernel() -> Any:
    """The compiled kernels' module (the ``fast`` extra), or None for the NumPy strips."""
    if not USE_KERNEL:
        return None
    with _KERNEL_LOCK:  # the pass threads' first calls: one import, one warning
        return _load_kernel()


def _f32(value: float) -> np.float32:
    return np.float32(value)


def _f32_down(value: float) -> float:
    """The largest float32 at most ``value`` (as a float)."""
    v = np.float32(value)
    if float(v) > value:
        v = np.nextafter(v, np.float32(-np.inf))
    return float(v)


def _f32_up(value: float) -> float:
    """The smallest float32 at least ``value`` (as a float)."""
    v = np.float32(value)
    if float(v) < value:
        v = np.nextafter(v, np.float32(np.inf))
    return float(v)


def _key32(value: float) -> int:
    """Coarse key of a non-negative float32 ``value``."""
    return int(np.array([value], dtype=np.float32).view(np.int32)[0]) >> _SHIFT32


def _keys64_of_keys32() -> NDArray[np.int64]:
    """The float64 coarse key (:data:`KEY_SHIFT`) of each float32 coarse bin.

    Normal float32 bins are float64 bins (the same six mantissa bits); the
    subnormal ones go to the float64 bin of their smallest value.
    """
    edges = (np.arange(_N_KEYS32, dtype=np.int64) << _SHIFT32).astype(np.int32)
    with np.errstate(invalid="ignore"):  # the NaN patterns of the last bins
        values = edges.view(np.float32).astype(np.float64)
    keys = np.full(_N_KEYS32, N_COARSE_KEYS - 1, dtype=np.int64)
    finite = np.isfinite(values)
    keys[finite] = float_key(values[finite])
    return keys


def n_zero_differences(y: NDArray[np.float64], o_scaling: Scaling) -> int:
    """Pairs whose normalised score difference is 0, from the sorted scores.

    ``(fl|y_i - y_j| - shift) / divisor <= 0`` exactly when ``fl(y_j - y_i) <=
    shift`` for ``y_i <= y_j``; that rounded difference grows with ``y_j``, so
    the pairs of each ``i`` are a run of the sorted scores.
    """
    if o_scaling is None:
        return len(y) * (len(y) - 1) // 2
    shift = o_scaling[0]
    s = np.sort(y)
    n = s.size
    idx = np.arange(n)
    end = np.searchsorted(s, s + shift, side="right")  # a guess, fixed below
    end = np.maximum(end, idx + 1)
    while True:
        grow = (end < n) & (s[np.minimum(end, n - 1)] - s <= shift)
        if not grow.any():
            break
        end[grow] += 1
    while True:
        shrink = (end - 1 > idx) & (s[end - 1] - s > shift)
        if not shrink.any():
            break
        end[shrink] -= 1
    return int(np.sum(end - idx - 1))


class _Setup:
    """The float32 coefficients and error bounds of one screened review."""

    def __init__(
        self,
        engine: PairwiseEngine,
        y: NDArray[np.float64],
        d_scaling: tuple[float, float],
        o_scaling: tuple[float, float],
    ) -> None:
        eps_s = engine.screen_error
        d_shift, d_div = d_scaling
        # normalised distance of similarity s: a - b s
        self.a, self.b = (1.0 - d_shift) / d_div, 1.0 / d_div
        self.a32, self.nb32 = _f32(self.a), _f32(-self.b)
        self.d_max = abs(self.a) + 1.02 * self.b
        self.eps_d = 1.01 * (self.b * eps_s + 5 * _U32 * self.d_max) + 8 * _U64 * (
            self.d_max + 1
        )
        # normalised score difference: |z_i - z_j| - shift, z = (y - mid) / divisor
        o_shift, o_div = o_scaling
        mid = float(y.min()) / 2 + float(y.max()) / 2
        z = (y - mid) / o_div
        z_max = float(np.abs(z).max(initial=0.0)) * (1 + 4 * _U32)
        self.sh = o_shift / o_div
        # scores too large for float32 make the screen impossible (the caller
        # falls back); tiny ones underflow, which the absolute term covers
        self.o_max = 2 * z_max + abs(self.sh)
        with np.errstate(over="ignore"):
            self.z32 = z.astype(np.float32)
            self.sh32 = _f32(self.sh)
        self.eps_o = 8 * _U32 * self.o_max + 8 * _U64 * (self.o_max + 1) + 8 * _TINY32
        self.delta = _DELTA_FACTOR * max(self.eps_d, self.eps_o)
        self.A = 1.01 * self.eps_o / self.delta
        self.B = 1.01 * self.eps_d / self.delta + 2 * _U32 + 4 * _U64
        # smallest float32 similarity whose float32 distance is below delta:
        # such pairs (and those at or below distance 0) are settled exactly
        # (scores beyond float32 make delta inf: screened_setup refuses them)
        with np.errstate(over="ignore", invalid="ignore"):
            s = _f32((self.a - self.delta) / self.b)
            for _ in range(64):
                lower = np.nextafter(s, np.float32(-np.inf))
                if self.dn32(lower) < self.delta:
                    s = lower
                else:
                    break
            while self.dn32(s) >= self.delta:
                s = np.nextafter(s, np.float32(np.inf))
        self.s_star = np.float32(s)
        self.eps_s = eps_s

    def dn32(self, s: np.float32) -> float:
        """The float32 normalised distance of the strips, for one similarity."""
        prod = np.multiply(np.float32(s), self.nb32, dtype=np.float32)
        return float(np.add(prod, self.a32, dtype=np.float32))

    def test_error(self, L: float) -> float:
        """Bound on the error of the float32 test ``o - L d`` against float64."""
        return 1.01 * (
            self.eps_o + L * self.eps_d + 4 * _U32 * (self.o_max + L * self.d_max)
        ) + 4 * _U64 * (self.o_max + L * self.d_max)

    def zone(self, t: float) -> tuple[float, float]:
        """Quotients beyond which a pair's critical constant is surely on one side of ``t``."""
        return _f32_down(t * (1 - self.B) - self.A), _f32_up(t * (1 + self.B) + self.A)


def screened_setup(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    stats: _PairStatistics | None,
    thresholds: Sequence[float],
) -> _Setup | None:
    """The setup of a screened review, or None when the float64 pass must run.

    ``thresholds``: the constants and the quantile windows' lower ends; each
    must be clear of the score error ``A`` (else the zones around it would
    reach the pairs of equal scores, whose constant is 0).
    """
    if not engine.screenable or engine.groups is not None:
        return None
    if engine.n_samples >= 2**31:  # the windows' pairs keep int32 indices
        return None
    if stats is None:
        return None
    if stats.d_scaling is None or stats.o_scaling is None:
        return None
    setup = _Setup(engine, y, stats.d_scaling, stats.o_scaling)
    if not setup.o_max < 2.0**100 or not np.isfinite(setup.z32).all():
        return None
    if not (math.isfinite(setup.delta) and setup.delta <= _MAX_DELTA):
        return None
    if setup.B > 2**-8:
        return None
    # each threshold clear of the score error above 0, and small enough that
    # ``t * d`` stays far inside float32 (a window at +inf holds the pairs at
    # distance 0, which are settled exactly)
    if any(
        not (t > 0 and setup.A <= t / 4 and (t < 2.0**100 or t == math.inf))
        for t in thresholds
    ):
        return None
    return setup


class _ScreenedReview(_ThreadLocalCache):
    """Map of the screened review pass: float32 blocks to candidates and counts.

    The partial result is a dict of lists of arrays (concatenated once at the
    end) and counts. Running thresholds (the ``k`` largest similarities per
    essay, the ``top`` largest float32 violations) are per thread and only
    prune: a pair that can be in a result is always kept.
    """

    block_kind = "similarity32"

    def __init__(
        self,
        setup: _Setup,
        n_samples: int,
        *,
        n_others: int | None,
        top: int | None,
        L: float,
        constants: Sequence[float],
        windows: Sequence[tuple[float, float]],
    ) -> None:
        self.s = setup
        self.n = n_samples
        self.k = n_others or 0
        self.top = top
        self.L = L
        self.constants = list(constants)
        self.windows = list(windows)
        special = np.zeros(_N_KEYS32, dtype=np.uint8)
        self.const_zones = []
        for c in self.constants:
            lo, hi = setup.zone(c)
            klo, khi = _key32(max(lo, 0.0)), _key32(hi)
            special[klo : khi + 1] |= _CONSTANT
            self.const_zones.append((klo, khi, setup.test_error(c)))
        self.window_zones = []
        for w_lo, w_hi in self.windows:
            lo, _ = setup.zone(w_lo)
            _, hi = setup.zone(w_hi)
            lo = max(lo, 0.0)
            klo, khi = _key32(lo), min(_key32(hi), _DISCARD32 - 1)
            special[klo : khi + 1] |= _WINDOW
            self.window_zones.append((klo, khi, lo, hi))
        special[_DISCARD32] = 0
        self._special = special
        # for the compiled kernel: the constant (window) whose bins hold a key,
        # -1 for none and -2 for several
        self._c_of_key = _owners([z[:2] for z in self.const_zones])
        self._w_of_key = _owners([z[:2] for z in self.window_zones])
        # the zones as the kernel's typed arrays, built once for every block
        self._const_arrays = (
            np.array([_f32(x) for x in self.constants], dtype=np.float32),
            np.array([z[0] for z in self.const_zones], dtype=np.int64),
            np.array([z[1] for z in self.const_zones], dtype=np.int64),
            np.array([z[2] for z in self.const_zones], dtype=np.float64),
        )
        self._window_arrays = (
            np.array([w[0] for w in self.window_zones], dtype=np.int64),
            np.array([w[1] for w in self.window_zones], dtype=np.int64),
            np.array([w[2] for w in self.window_zones], dtype=np.float32),
            np.array([w[3] for w in self.window_zones], dtype=np.float32),
        )
        self.eps_v = setup.test_error(L)
        self.L32 = _f32(L)
        self.two_eps_s = _f32(2 * setup.eps_s)
        self._local = threading.local()
        # each thread's k largest similarities per essay, for _neighbors' first
        # cut (a process worker's stay there: its copy of the list is its own)
        self._bests: list[NDArray[np.float32]] = []
        self._bests_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        del state["_bests"], state["_bests_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._bests = []
        self._bests_lock = threading.Lock()

    # -- the partial result ----------------------------------------------------
    def empty(self) -> dict[str, Any]:
        return {
            "hist": np.zeros(_N_KEYS32, dtype=np.int64),
            "knn": [],  # (i, j, s) per block, both directions of each pair
            "sure": np.zeros(len(self.constants), dtype=np.int64),
            "undecided": [[] for _ in self.constants],  # (i, j)
            "w_below": np.zeros(len(self.windows), dtype=np.int64),
            "w_pairs": [[] for _ in self.windows],  # (i, j, q, d)
            "tail": [],  # (i, j, v)
            "routed": [],  # (i, j)
        }

    def combine(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        return {
            "hist": a["hist"] + b["hist"],
            "knn": a["knn"] + b["knn"],
            "sure": a["sure"] + b["sure"],
            "undecided": [x + y for x, y in zip(a["undecided"], b["undecided"])],
            "w_below": a["w_below"] + b["w_below"],
            "w_pairs": [self._capped(x + y) for x, y in zip(a["w_pairs"], b["w_pairs"])],
            "tail": a["tail"] + b["tail"],
            "routed": a["routed"] + b["routed"],
        }

    @staticmethod
    def _capped(parts: list[Any]) -> list[Any]:
        """A window's kept pairs, or ``[None]`` once they exceed :data:`_MAX_WINDOW`."""
        if any(p is None for p in parts):
            return [None]
        if sum(p[0].size for p in parts) > _MAX_WINDOW:
            return [None]
        return parts

    # -- per-thread state ----------------------------------------------------------
    def _state(self, c: int) -> threading.local:
        local = self._local
        if getattr(local, "o", None) is None or local.o.size < _STRIP_ROWS * c:
            # flat, so that a strip's views of them are contiguous
            size = _STRIP_ROWS * c
            local.o = np.empty(size, dtype=np.float32)
            local.dn = np.empty(size, dtype=np.float32)
            local.q = np.empty(size, dtype=np.float32)
            local.key = np.empty(size, dtype=np.int64)
            local.code = np.empty(size, dtype=np.uint8)
            local.hit = np.empty(size, dtype=bool)
        if self.k and getattr(local, "best", None) is None:
            # the k largest float32 similarities seen per essay, ascending
            local.best = np.full((self.n, self.k), -np.inf, dtype=np.float32)
            with self._bests_lock:
                self._bests.append(local.best)
        if self.top and getattr(local, "worst", None) is None:
            local.worst = np.empty(0, dtype=np.float32)
        return local

    # -- neighbours -----------------------------------------------------------------
    def _thresholds(
        self, M: NDArray[np.float32], best: NDArray[np.float32]
    ) -> NDArray[np.float32]:
        """Per row of ``M``: the smallest similarity that can be among the k nearest.

        ``best[:, 0]`` is the k-th largest similarity seen; a fresh row gets the
        smallest of the largest of ``k`` disjoint groups of its columns (``k``
        pairs at least that similar). Less twice the float32 error: an exact
        k-th nearest is at least that similar in float32.
        """
        k = self.k
        thr = best[:, 0].copy()
        fresh = np.flatnonzero(np.isinf(thr))
        g = M.shape[1] // k
        if fresh.size and g:
            maxs = M[fresh, : k * g].reshape(fresh.size, k, g).max(axis=2)
            thr[fresh] = np.maximum(thr[fresh], maxs.min(axis=1))
        return thr - self.two_eps_s

    def _diagonal_thresholds(
        self, S: NDArray[np.float32], best: NDArray[np.float32]
    ) -> NDArray[np.float32]:
        """:meth:`_thresholds` of a diagonal block (its pairs above the diagonal).

        A fresh essay's pairs in the block are its row and its column: the
        groups are taken over both (the upper triangle alone leaves the last
        rows and first columns nearly empty).
        """
        fresh = np.flatnonzero(np.isinf(best[:, 0]))
        if not fresh.size:
            return self._thresholds(S, best)
        M = np.maximum(S[fresh], S[:, fresh].T)  # -2 on and below the diagonal
        thr = self._thresholds(M, best[fresh])
        out = best[:, 0] - self.two_eps_s
        out[fresh] = thr
        return out

    def _col_thresholds(
        self, M: NDArray[np.float32], best: NDArray[np.float32]
    ) -> NDArray[np.float32]:
        """:meth:`_thresholds` of the columns of ``M`` (groups of rows: contiguous)."""
        k = self.k
        thr = best[:, 0].copy()
        fresh = np.isinf(thr)
        g = M.shape[0] // k
        if fresh.any() and g:
            maxs = M[: k * g].reshape(k, g, M.shape[1]).max(axis=1).min(axis=0)
            thr[fresh] = np.maximum(thr[fresh], maxs[fresh])
        return thr - self.two_eps_s

    def _remember(
        self, best: NDArray[np.float32], rows: NDArray[np.int64], s: NDArray[np.float32]
    ) -> None:
        """Fold candidate similarities into the k largest per essay."""
        if not rows.size:
            return
        order = np.lexsort((-s, rows))
        rows, s = rows[order], s[order]
        first = np.searchsorted(rows, rows, side="left")
        rank = np.arange(rows.size) - first
        keep = rank < self.k
        rows, s, rank = rows[keep], s[keep], rank[keep]
        u = np.unique(rows)
        mine = np.full((u.size, self.k), -np.inf, dtype=np.float32)
        mine[np.searchsorted(u, rows), rank] = s
        both = np.concatenate([best[u], mine], axis=1)
        both.sort(axis=1)
        best[u] = both[:, self.k :]

    def _keep_neighbours(
        self,
        out: dict[str, Any],
        local: threading.local,
        i: NDArray[np.int64],
        j: NDArray[np.int64],
        s: NDArray[np.float32],
    ) -> None:
        """Fold a block's candidates into the k largest, and keep those that can
        still be among an essay's nearest.

        The k-th largest similarity an essay ends with is at least the one it
        has now: a candidate below that, less twice the float32 error, is
        dropped here by the test :func:`_neighbors` makes with the final one.
        """
        self._remember(local.best, i, s)
        kth = local.best[i, 0].astype(np.float64)
        keep = np.flatnonzero(s.astype(np.float64) >= kth - 2 * self.s.eps_s)
        out["knn"].append((i[keep], j[keep], s[keep]))

    # -- one block ------------------------------------------------------------------
    def map(self, block: PairBlock) -> dict[str, Any]:
        kern = kernel()
        if kern is not None:
            return self._map_compiled(block, kern)
        return self._map_strips(block)

    def _buffers(self, local: threading.local, grow: dict[str, int]) -> dict[str, Any]:
        """The kernel's output arrays of this thread, grown to ``grow``'s sizes."""
        bufs: dict[str, Any] | None = getattr(local, "bufs", None)
        if bufs is None:
            bufs = {}
            local.bufs = bufs
        spec = {
            "u": ((np.int64, np.int64, np.int64), _KERNEL_CAPACITY),
            # a window's pairs are kept to the end of the pass: 16 bytes each
            "w": ((np.int32, np.int32, np.float32, np.float32, np.int64), _KERNEL_CAPACITY),
            "k": ((np.int64, np.int64, np.float32), _KERNEL_CAPACITY),
            "r": ((np.int64, np.int64), _KERNEL_CAPACITY),
            "t": (
                (np.int64, np.int64, np.float32),
                max(_KERNEL_CAPACITY, 4 * (self.top or 0)),
            ),
        }
        for name, (dtypes, size) in spec.items():
            size = max(size, grow.get(name, 0))
            if name not in bufs or bufs[name][0].size < size:
                bufs[name] = tuple(np.empty(size, dtype=t) for t in dtypes)
        return bufs

    def _map_compiled(self, block: PairBlock, kern: Any) -> dict[str, Any]:
        """:meth:`_map_strips`'s result, from the compiled kernel."""
        S = block.checked_similarities()
        r0, c0 = block.row_start, block.col_start
        m, c = S.shape
        s = self.s
        local = self._state(0)
        out = self.empty()
        mask = block.mask
        # no neighbours: thresholds no similarity reaches
        thr_r = np.full(m, np.inf, dtype=np.float32)
        thr_c = np.full(c, np.inf, dtype=np.float32)
        if self.k:
            best = local.best
            if mask is not None:
                thr_r = thr_c = best[r0 : r0 + m, 0] - self.two_eps_s
                if np.isinf(thr_r).any():  # rows this thread has not seen
                    Sm = np.where(mask, S, np.float32(-2.0))
                    thr_r = thr_c = self._diagonal_thresholds(Sm, best[r0 : r0 + m])
            else:
                thr_r = self._thresholds(S, best[r0 : r0 + m])
                thr_c = self._col_thresholds(S, best[c0 : c0 + c])
        floor0 = max(self._worst_floor(local), -self.eps_v) if self.top else np.inf
        z = s.z32
        consts, c_lo, c_hi, c_err = self._const_arrays
        w_lo_key, w_hi_key, w_lo, w_hi = self._window_arrays
        counts = np.zeros(5, dtype=np.int64)
        has_mask = mask is not None
        # read-only views, whatever the block's arrays are: numba compiles the
        # kernel once per combination of array flags (seconds each)
        mask_arr = _read_only(mask if mask is not None else np.ones((1, 1), dtype=bool))
        S = _read_only(np.ascontiguousarray(S))
        grow: dict[str, int] = {}
        while True:
            bufs = self._buffers(local, grow)
            (u_i, u_j, u_e), (w_i, w_j, w_q, w_d, w_e) = bufs["u"], bufs["w"]
            (k_i, k_j, k_s), (r_i, r_j), (t_i, t_j, t_v) = bufs["k"], bufs["r"], bufs["t"]
            kern.review_block(
                S, mask_arr, has_mask, z[r0 : r0 + m], z[c0 : c0 + c],
                s.sh32, s.a32, s.nb32, s.s_star,
                self._special, self._c_of_key, self._w_of_key, _SHIFT32, _DISCARD32,
                out["hist"],
                consts, c_lo, c_hi, c_err, out["sure"], u_i, u_j, u_e,
                w_lo_key, w_hi_key, w_lo, w_hi, out["w_below"], w_i, w_j, w_q, w_d, w_e,
                thr_r, thr_c, k_i, k_j, k_s,
                r_i, r_j,
                int(self.top or 0), self.L32, float(floor0), float(self.eps_v),
                t_i, t_j, t_v,
                r0, c0, counts,
            )  # fmt: skip
            over = {
                name: 2 * int(counts[slot])
                for name, slot in zip("uwkrt", range(5))
                if counts[slot] > bufs[name][0].size
            }
            if not over:
                break
            grow.update(over)
        n_u, n_w, n_k, n_r, n_t = (int(x) for x in counts)
        for e in range(len(self.constants)):
            sel = np.flatnonzero(u_e[:n_u] == e)
            if sel.size:
                out["undecided"][e].append((u_i[sel], u_j[sel]))
        for e in range(len(self.windows)):
            sel = np.flatnonzero(w_e[:n_w] == e)
            if sel.size:
                out["w_pairs"][e].append((w_i[sel], w_j[sel], w_q[sel], w_d[sel]))
        if n_k:
            kept = kern.remember_and_keep(
                local.best, k_i[:n_k], k_j[:n_k], k_s[:n_k], 2 * s.eps_s
            )
            out["knn"].append((k_i[:kept].copy(), k_j[:kept].copy(), k_s[:kept].copy()))
        if n_r:
            out["routed"].append((r_i[:n_r].copy(), r_j[:n_r].copy()))
        if n_t:
            tv = t_v[:n_t].copy()
            out["tail"].append((t_i[:n_t].copy(), t_j[:n_t].copy(), tv))
            self._note_worst(local, tv)
        return out

    def _map_strips(self, block: PairBlock) -> dict[str, Any]:
        """The block's candidates and counts, in NumPy passes over strips of rows."""
        S = block.checked_similarities()
        r0, c0 = block.row_start, block.col_start
        m, c = S.shape
        s = self.s
        local = self._state(c)
        out = self.empty()
        mask = block.mask
        diagonal = mask is not None
        if mask is not None:
            S = np.where(mask, S, np.float32(-2.0))
        knn_i: list[NDArray[np.int64]] = []
        knn_j: list[NDArray[np.int64]] = []
        knn_s: list[NDArray[np.float32]] = []
        if self.k:
            # a diagonal block too: its pairs i < j are the entries above the
            # diagonal (the rest hold -2), each the row's and the column's
            best = local.best
            if diagonal:
                thr_r = thr_c = self._diagonal_thresholds(S, best[r0 : r0 + m])
            else:
                thr_r = self._thresholds(S, best[r0 : r0 + m])
                thr_c = self._col_thresholds(S, best[c0 : c0 + c])
        special = self._special
        worst_floor = -np.inf
        if self.top:
            special = special.copy()
            special[self._tail_key(local) : _DISCARD32] |= _TAIL
            worst_floor = self._worst_floor(local)
        hist = out["hist"]
        z = s.z32
        zc = z[c0 : c0 + c]
        sh32 = s.sh32
        s_star = s.s_star
        v_i: list[NDArray[np.int64]] = []
        v_j: list[NDArray[np.int64]] = []
        v_v: list[NDArray[np.float32]] = []
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for a in range(0, m, _STRIP_ROWS):
                b = min(a + _STRIP_ROWS, m)
                h = b - a
                Ss = S[a:b]
                o, dn, q, key, code, hit = (
                    buf[: h * c].reshape(h, c)
                    for buf in (
                        local.o,
                        local.dn,
                        local.q,
                        local.key,
                        local.code,
                        local.hit,
                    )
                )
                np.subtract(z[r0 + a : r0 + b, None], zc[None, :], out=o)
                np.abs(o, out=o)
                if sh32 != 0:
                    np.subtract(o, sh32, out=o)
                    np.maximum(o, np.float32(0.0), out=o)
                np.multiply(Ss, s.nb32, out=dn)
                np.add(dn, s.a32, out=dn)
                np.divide(o, dn, out=q)
                np.right_shift(q.view(np.int32), _SHIFT32, out=key)
                # pairs at or above the neighbours' thresholds or s_star (a
                # handful per strip once the thresholds are tight)
                if self.k:
                    t_r = thr_r[a:b]
                    lowest = min(float(t_r.min()), float(thr_c.min()), float(s_star))
                    np.greater_equal(Ss, np.float32(lowest), out=hit)
                    pos = np.flatnonzero(hit)
                    vals = Ss.reshape(-1)[pos]
                    routed_pos = pos[vals >= s_star]
                    if pos.size > hit.size // 16:
                        # loose thresholds: compare with each one
                        np.greater_equal(Ss, t_r[:, None], out=hit)
                        pos_r = np.flatnonzero(hit)
                        np.greater_equal(Ss, thr_c[None, :], out=hit)
                        pos_c = np.flatnonzero(hit)
                    else:
                        rows, cols = np.divmod(pos, c)
                        pos_r = pos[vals >= t_r[rows]]
                        pos_c = pos[vals >= thr_c[cols]]
                    for p_, mine in ((pos_r, True), (pos_c, False)):
                        if not p_.size:
                            continue
                        rr, cc = np.divmod(p_, c)
                        if diagonal:  # entries below or on the diagonal are no pairs
                            ok = rr + a < cc
                            p_, rr, cc = p_[ok], rr[ok], cc[ok]
                        row, col = r0 + a + rr, c0 + cc
                        knn_i.append(row if mine else col)
                        knn_j.append(col if mine else row)
                        knn_s.append(Ss.reshape(-1)[p_])
                else:
                    np.greater_equal(Ss, s_star, out=hit)
                    routed_pos = np.flatnonzero(hit)
                kf = key.reshape(-1)
                if routed_pos.size:
                    kf[routed_pos] = _DISCARD32
                    rr, cc = np.divmod(routed_pos, c)
                    out["routed"].append((r0 + a + rr, c0 + cc))
                if mask is not None:
                    kf[~mask[a:b].reshape(-1)] = _DISCARD32
                hist += np.bincount(kf, minlength=_N_KEYS32)
                np.take(special, kf, out=code.reshape(-1), mode="clip")
                # nonzero has a fast path for booleans only (5x faster)
                np.not_equal(code, 0, out=hit)
                pos = np.flatnonzero(hit)
                if not pos.size:
                    continue
                kinds = code.reshape(-1)[pos]
                of, df, qf = o.reshape(-1), dn.reshape(-1), q.reshape(-1)
                if self.constants:
                    sub = pos[(kinds & _CONSTANT) != 0]
                    ks = kf[sub]
                    for e, (klo, khi, err) in enumerate(self.const_zones):
                        sel = sub[(ks >= klo) & (ks <= khi)]
                        if not sel.size:
                            continue
                        T = of[sel] - _f32(self.constants[e]) * df[sel]
                        out["sure"][e] += np.count_nonzero(T < -err)
                        und = sel[np.abs(T) <= err]
                        if und.size:
                            rr, cc = np.divmod(und, c)
                            out["undecided"][e].append((r0 + a + rr, c0 + cc))
                if self.windows:
                    sub = pos[(kinds & _WINDOW) != 0]
                    ks, qs = kf[sub], qf[sub]
                    for e, (klo, khi, lo, hi) in enumerate(self.window_zones):
                        inb = (ks >= klo) & (ks <= khi)
                        out["w_below"][e] += np.count_nonzero(inb & (qs < lo))
                        sel = sub[inb & (qs >= lo) & (qs <= hi)]
                        if sel.size:
                            rr, cc = np.divmod(sel, c)
                            out["w_pairs"][e].append(
                                (
                                    (r0 + a + rr).astype(np.int32),
                                    (c0 + cc).astype(np.int32),
                                    qf[sel].copy(),
                                    df[sel].copy(),
                                )
                            )
                if self.top:
                    sub = pos[(kinds & _TAIL) != 0]
                    if sub.size:
                        v = of[sub] - self.L32 * df[sub]
                        floor = max(worst_floor, -self.eps_v)
                        keep = np.flatnonzero(v >= floor)
                        if keep.size:
                            rr, cc = np.divmod(sub[keep], c)
                            v_i.append(r0 + a + rr)
                            v_j.append(c0 + cc)
                            v_v.append(v[keep])
                            self._note_worst(local, v[keep])
                            worst_floor = self._worst_floor(local)
        if self.k and knn_i:
            self._keep_neighbours(
                out,
                local,
                np.concatenate(knn_i),
                np.concatenate(knn_j),
                np.concatenate(knn_s),
            )
        if v_i:
            out["tail"].append(
                (np.concatenate(v_i), np.concatenate(v_j), np.concatenate(v_v))
            )
        hist[_DISCARD32] = 0
        return out

    # -- violations -----------------------------------------------------------------
    def _note_worst(self, local: threading.local, v: NDArray[np.float32]) -> None:
        top = int(self.top or 0)  # called only when violations are asked for
        worst = np.concatenate([local.worst, v])
        if worst.size > top:
            worst = np.partition(worst, worst.size - top)[worst.size - top :]
        local.worst = worst

    def _worst_floor(self, local: threading.local) -> float:
        """Smallest float32 violation that can still be among the top (or -inf)."""
        worst = local.worst
        if worst.size < self.top:
            return -np.inf
        return float(worst.min()) - 2 * self.eps_v

    def _tail_key(self, local: threading.local) -> int:
        """Smallest coarse key of a quotient whose pair can still be a top violation.

        A violation ``v = o - L d >= tau > 0`` needs ``d <= (o - tau) / L`` with
        ``o <= o_max``, so a critical constant of at least ``L o_max / (o_max -
        tau)``; below ``tau`` (or before ``top`` are known) any ``c > L``.
        """
        s = self.s
        bound = self.L
        floor = self._worst_floor(local) - self.eps_v
        if floor > 0 and floor < s.o_max * (1 - 1e-6):
            bound = self.L * s.o_max / (s.o_max - floor)
        lo = s.zone(bound * (1 - 1e-6))[0]
        return _key32(max(lo, 0.0))


def _read_only(a: NDArray[Any]) -> NDArray[Any]:
    view = a.view()
    view.flags.writeable = False
    return view


def _owners(zones: Sequence[tuple[int, int]]) -> NDArray[np.int16]:
    """Per coarse key: the index of the one zone ``(first, last key)`` holding it,
    -1 if none, -2 if several (the kernel then tests each)."""
    owner = np.full(_N_KEYS32, -1, dtype=np.int16)
    for e, (klo, khi) in enumerate(zones):
        span = owner[klo : khi + 1]
        span[span == -1] = e
        span[(span >= 0) & (span != e)] = -2
    owner[_DISCARD32] = -1
    return owner


def _pairs(parts: list[tuple[NDArray[Any], ...]], n: int) -> list[NDArray[Any]]:
    """The ``n`` arrays of a list of tuples, each concatenated."""
    if not parts:
        return [np.empty(0, dtype=np.int64)] * n
    return [np.concatenate([p[t] for p in parts]) for t in range(n)]


def _exact_od(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    stats: _PairStatistics,
    i: NDArray[np.int64],
    j: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Normalised score differences and distances of pairs, distances pair by pair."""
    d = np.maximum(_normalise(engine.paired_distances(i, j), stats.d_scaling), 0.0)
    o = np.maximum(_normalise(np.abs(y[i] - y[j]), stats.o_scaling), 0.0)
    return o, d


def screened_review(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    setup: _Setup,
    stats: _PairStatistics,
    *,
    n_others: int | None,
    top: int | None,
    constants: Sequence[float] | None,
    ranks: Sequence[int],
    windows: Sequence[tuple[float, float]],
) -> dict[str, Any] | None:
    """The parts of :func:`_review` from one screened pass, or None to fall back.

    ``ranks`` are the 1-based ranks of the quantile constants and ``windows``
    their guessed ranges of constants; a rank not resolved in its window maps
    to None under ``"quantiles_by_rank"``, for the float64 passes. The exact
    neighbours and each quantile are independent work on the pass's
    candidates, done side by side in the pass's threads.
    """
    L = stats.L
    counted = sorted(set(constants or ()) | ({L} if top else set()))
    reducer = _ScreenedReview(
        setup, engine.n_samples, n_others=n_others, top=top, L=L,
        constants=counted, windows=windows if constants is not None else (),
    )  # fmt: skip
    part = engine.map_reduce(reducer)
    n = engine.n_samples
    ri, rj = _pairs(part["routed"], 2)
    undecided = [_pairs(u, 2) for u in part["undecided"]]
    if ri.size + sum(u[0].size for u in undecided) > _MAX_SETTLED:
        return None
    out: dict[str, Any] = {}
    tasks: dict[Any, Callable[[], Any]] = {}
    if n_others:
        tasks["neighbors"] = functools.partial(
            _neighbors, engine, part["knn"], n_others, setup.eps_s, n, bests=reducer._bests
        )
    # the pairs settled exactly: near-duplicates and the like
    r_o, r_d = _exact_od(engine, y, stats, ri, rj)
    r_c = _critical_constants(r_o, r_d)
    # the comparison of lipschitz_fraction's settling (no clipping), per constant
    r_do = _normalise(engine.paired_distances(ri, rj), stats.d_scaling)
    r_oo = _normalise(np.abs(y[ri] - y[rj]), stats.o_scaling)
    keys64 = _keys64_of_keys32()
    hist32 = part["hist"]
    hist = np.bincount(keys64, weights=hist32, minlength=N_COARSE_KEYS).astype(np.int64)
    hist += np.bincount(float_key(r_c), minlength=N_COARSE_KEYS)[:N_COARSE_KEYS]
    out["histogram"] = hist
    cum32 = np.concatenate([[0], np.cumsum(hist32)])
    satisfied: dict[float, int] = {}
    for e, Lc in enumerate(reducer.constants):
        klo = reducer.const_zones[e][0]
        ui, uj = undecided[e]
        ok = _settle(engine, y, ui, uj, stats.d_scaling, stats.o_scaling, Lc)
        satisfied[Lc] = (
            int(cum32[klo]) + int(part["sure"][e]) + int(np.count_nonzero(ok))
            + int(np.count_nonzero(r_oo <= (r_do * Lc if Lc != 1.0 else r_do)))
        )  # fmt: skip
    if constants is not None:
        out["counts"] = np.array(
            [n_zero_differences(y, stats.o_scaling)] + [satisfied[c] for c in constants],
            dtype=np.int64,
        )
    if top:
        out["violations"] = (
            _violations(
                engine,
                y,
                stats,
                part["tail"],
                (ri, rj, r_o - r_d * L if L != 1.0 else r_o - r_d),
                top,
                reducer.eps_v,
            ),
            engine.n_pairs - satisfied[L],
        )
    found: dict[int, float | None] = {}
    if constants is not None and ranks:
        for e, m in enumerate(ranks):
            klo = reducer.window_zones[e][0]
            if any(p is None for p in part["w_pairs"][e]):
                found[m] = None  # too many pairs in the window
                continue
            tasks[m] = functools.partial(
                _quantile, engine, y, stats, setup, m,
                below=int(cum32[klo]) + int(part["w_below"][e]),
                parts=part["w_pairs"][e], window=windows[e], routed=r_c,
            )  # fmt: skip
    done = _side_by_side(tasks)
    if n_others:
        out["neighbors"] = done.pop("neighbors")
    found.update(done)
    if constants is not None and ranks:
        out["quantiles_by_rank"] = found
    return out


def _side_by_side(tasks: dict[Any, Callable[[], Any]]) -> dict[Any, Any]:
    """Each task's result, computed in as many threads as the pass had.

    The tasks are NumPy work that mostly releases the GIL (sorts, partitions,
    gathered dot products); each is deterministic, so the results do not
    depend on the threads.
    """
    threads = _pass_threads(len(tasks))
    if threads <= 1:
        return {key: task() for key, task in tasks.items()}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads) as pool:
        futures = {key: pool.submit(task) for key, task in tasks.items()}
        return {key: f.result() for key, f in futures.items()}


def _neighbors(
    engine: PairwiseEngine,
    parts: list[tuple[NDArray[Any], ...]],
    k: int,
    eps_s: float,
    n: int,
    *,
    bests: Sequence[NDArray[np.float32]] = (),
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Exact ``k`` nearest per essay from the float32 candidates (ties by index).

    ``bests``: k largest float32 similarities per essay that some threads saw
    (:class:`_ScreenedReview`); an essay's k-th largest over all candidates
    is at least theirs, so the candidates below it (less twice the error) are
    dropped before the sort.
    """
    i, j, s = _pairs(parts, 3)
    if bests:
        kth = np.max([b[:, 0] for b in bests], axis=0).astype(np.float64)
        keep = np.flatnonzero(s.astype(np.float64) >= kth[i] - 2 * eps_s)
        i, j, s = i[keep], j[keep], s[keep]
    order = np.lexsort((-s, i))
    i, j, s = i[order], j[order], s[order]
    first = np.searchsorted(i, np.arange(n), side="left")
    counts = np.diff(np.append(first, i.size))
    if np.any(counts < k):  # pragma: no cover - every essay has k candidates
        raise RuntimeError("the screened neighbours missed candidates of an essay")
    kth = s[first + k - 1].astype(np.float64)  # k-th largest similarity per essay
    keep = s.astype(np.float64) >= kth[i] - 2 * eps_s
    i, j = i[keep], j[keep]
    d = engine.paired_distances(i, j)
    order = np.lexsort((j, d, i))
    i, j, d = i[order], j[order], d[order]
    first = np.searchsorted(i, np.arange(n), side="left")
    rank = np.arange(i.size) - first[i]
    sel = rank < k
    dist = np.empty((n, k))
    idx = np.empty((n, k), dtype=np.int64)
    dist[i[sel], rank[sel]] = d[sel]
    idx[i[sel], rank[sel]] = j[sel]
    return dist, idx


def _violations(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    stats: _PairStatistics,
    parts: list[tuple[NDArray[Any], ...]],
    routed: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]],
    top: int,
    eps_v: float,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """The ``top`` largest exact violations (ties by pair index), from the candidates."""
    i, j, v = _pairs(parts, 3)
    ri, rj, rv = routed
    approx = np.concatenate([v.astype(np.float64), rv])
    i, j = np.concatenate([i, ri]), np.concatenate([j, rj])
    if approx.size > top:
        tau = float(np.partition(approx, approx.size - top)[approx.size - top])
    else:
        tau = -np.inf
    keep = approx >= max(tau - 2 * eps_v, -eps_v)
    i, j = i[keep], j[keep]
    o, d = _exact_od(engine, y, stats, i, j)
    L = stats.L
    exact = o - (d * L if L != 1.0 else d)
    viol = exact > 0
    i, j, exact = i[viol], j[viol], exact[viol]
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    order = np.lexsort((pairs_to_condensed(lo, hi, engine.n_samples), -exact))[:top]
    return exact[order], lo[order], hi[order]


def _quantile(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    stats: _PairStatistics,
    setup: _Setup,
    m: int,
    *,
    below: int,
    parts: list[tuple[NDArray[Any], ...]],
    window: tuple[float, float],
    routed: NDArray[np.float64],
) -> float | None:
    """The ``m``-th smallest critical constant, or None if outside its window.

    ``parts``: the kept pairs of the window, ``(i, j, q, d)`` per block, with
    their float32 quotient and distance. Each pair gets an interval its
    constant lies in, first from ``q`` alone (``|q - c| <= A + B c``, monotone
    in ``q``): the ``m``-th smallest lower and upper ends bracket the order
    statistic (the pairs below the kept zone have lower end -inf and upper end
    ``w_lo``, those above lower end ``w_hi``, so the bracket must be inside the
    window), and the pairs whose interval is wholly below or above it are only
    counted. The few left (a band about ``2 B`` wide) get the tighter interval
    of their own distance, a second bracket, and the pairs that meet it are
    settled exactly. Only the window's quotients are concatenated (4 bytes a
    pair), not its pairs.
    """
    w_lo, w_hi = window
    r_below = int(np.count_nonzero(routed < w_lo))
    r_in = routed[(routed >= w_lo) & (routed <= w_hi)]
    rank = m - below - r_below
    q = np.concatenate([p[2] for p in parts]) if parts else np.empty(0, np.float32)
    if not 1 <= rank <= q.size + r_in.size:
        return None
    lo_g = _kth(np.concatenate([_q_bound(setup, q, -1.0), r_in]), rank)
    hi_g = _kth(np.concatenate([_q_bound(setup, q, 1.0), r_in]), rank)
    if not (lo_g > w_lo and hi_g < w_hi):
        return None
    high = _q_bound(setup, q, 1.0)
    n_below = below + r_below + int(np.count_nonzero(high < lo_g))
    n_below += int(np.count_nonzero(r_in < lo_g))
    band = np.flatnonzero((high >= lo_g) & (_q_bound(setup, q, -1.0) <= hi_g))
    del high
    r_band = r_in[(r_in >= lo_g) & (r_in <= hi_g)]
    i, j, dn = _gather(parts, band)
    qb = q[band].astype(np.float64)
    dn = dn.astype(np.float64)
    qu = (qb + setup.A) / (1 - setup.B) * (1 + 1e-6)
    err = 1.01 * (setup.eps_o + qu * setup.eps_d) / dn + (2 * _U32 + 4 * _U64) * qu
    lows = np.concatenate([qb - err, r_band])
    highs = np.concatenate([qb + err, r_band])
    rank = m - n_below
    if not 1 <= rank <= lows.size:  # pragma: no cover - the first bracket holds it
        return None
    lo_m, hi_m = _kth(lows.copy(), rank), _kth(highs.copy(), rank)
    n_band = qb.size
    meets = (highs >= lo_m) & (lows <= hi_m)
    strictly_below = int(np.count_nonzero(highs < lo_m))
    cand = np.flatnonzero(meets[:n_band])
    o, d = _exact_od(engine, y, stats, i[cand], j[cand])
    values = np.concatenate([_critical_constants(o, d), r_band[meets[n_band:]]])
    within = rank - strictly_below
    if not 1 <= within <= values.size:  # pragma: no cover - the bracket holds it
        return None
    return _kth(values, within)


def _q_bound(setup: _Setup, q: NDArray[np.float32], sign: float) -> NDArray[np.float64]:
    """``q -/+ (A + B c_max)``: bounds of the critical constants of quotients ``q``.

    ``c_max = (q + A) / (1 - B)`` bounds ``c`` from above; each bound grows
    with ``q`` (``B`` is far below 1).
    """
    qq = q.astype(np.float64)
    qu = (qq + setup.A) / (1 - setup.B) * (1 + 1e-6)
    qu *= setup.B
    qu += setup.A
    if sign < 0:
        qq -= qu
    else:
        qq += qu
    return qq


def _kth(values: NDArray[np.float64], rank: int) -> float:
    """The ``rank``-th smallest (1-based) of ``values``, which it reorders."""
    values.partition(rank - 1)
    return float(values[rank - 1])


def _gather(
    parts: list[tuple[NDArray[Any], ...]], positions: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
    """``(i, j, d)`` of the kept pairs at sorted ``positions`` of the parts laid end to end."""
    ends = np.cumsum([p[0].size for p in parts])
    cuts = np.searchsorted(positions, np.concatenate([[0], ends]))
    out_i, out_j, out_d = [], [], []
    for k, p in enumerate(parts):
        local = positions[cuts[k] : cuts[k + 1]] - (ends[k] - p[0].size)
        out_i.append(p[0][local].astype(np.int64))
        out_j.append(p[1][local].astype(np.int64))
        out_d.append(p[3][local])
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32)
    return np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_d)
