"""The fused float64 review pass of large dense cosine problems."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._blocks import PairBlock
from ._keys import KEY_SHIFT, N_COARSE_KEYS, float_key
from ._reducers import RowNeighborsReducer, _concat_pairs
from ._review_stats import (
    _FINE_SHIFT,
    _combine_windows,
    _critical_constants,
    _PairStatistics,
    _ThreadLocalCache,
)
from ._types import pairs_to_condensed

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from ._types import (
        PairDistances,
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
