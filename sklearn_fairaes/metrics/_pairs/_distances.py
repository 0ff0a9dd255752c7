"""Distances between essays: cosine, precomputed and scikit-learn metrics."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import numpy as np
import scipy.sparse as sp

from ._types import n_pairs_of, pairs_to_condensed

if TYPE_CHECKING:
    from collections.abc import Callable

    from numpy.typing import ArrayLike, NDArray

    from ._types import (
        Index,
        Metric,
    )


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


class _Distances:
    """The distances of :class:`~._engine.PairwiseEngine`, between rows it has validated.

    A base class, so that the engine's block walk and its distances are two
    modules: this one computes, for the essays at given rows and columns (or
    given pairs), the cosine distance from float64 unit rows, the distances of
    a precomputed matrix, or those of a scikit-learn metric.
    """

    metric: Metric
    n_samples: int
    _precomputed: NDArray[np.float64] | None
    _X: NDArray[np.float64] | sp.csr_matrix | None
    # Set for metric="cosine" only (by _prepare_cosine): unit rows, the rows
    # that are zero vectors, and for sparse input the dense and sparse columns.
    _unit: NDArray[np.float64] | sp.csr_matrix
    _zero: NDArray[np.bool_]
    _any_zero: bool
    _snap: float
    _dense_part: sp.csr_matrix | None
    _sparse_part: sp.csr_matrix | None

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
