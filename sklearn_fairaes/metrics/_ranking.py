"""Does a representation keep the similarity ranking of essays under paraphrase?

The paper's §3 step 4 and §5.2: an essay and its paraphrase should be treated
alike, so the essays most similar to an original essay should also be the
ones most similar to its paraphrase, among the paraphrased essays.

Signature rule: ``metric_name(X_original, X_paraphrased, *, ...)`` with one
row per essay in both (row ``i`` of ``X_paraphrased`` paraphrases row ``i`` of
``X_original``); the result is a Python ``float`` in ``[0, 1]``.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ..exceptions import UndefinedMetricWarning
from ._pairs._engine import PairwiseEngine
from ._pairs._types import check_int

if TYPE_CHECKING:
    import scipy.sparse as sp
    from numpy.typing import ArrayLike, NDArray

    from ._pairs._types import Metric

__all__ = ["paraphrase_ndcg"]

#: Query essays whose distances to all others are computed at once.
_QUERY_CHUNK = 64


def _row_spearman(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Spearman's rho of each row of ``a`` with the same row of ``b``.

    Average ranks for ties, as :func:`scipy.stats.spearmanr`; NaN for a row
    where either side is constant.
    """
    from scipy.stats import rankdata

    ra = rankdata(a, axis=1)
    rb = rankdata(b, axis=1)
    ra -= ra.mean(axis=1, keepdims=True)
    rb -= rb.mean(axis=1, keepdims=True)
    num = np.einsum("ij,ij->i", ra, rb)
    den = np.sqrt(np.einsum("ij,ij->i", ra, ra) * np.einsum("ij,ij->i", rb, rb))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def paraphrase_ndcg(
    X_original: ArrayLike | sp.spmatrix | sp.sparray,
    X_paraphrased: ArrayLike | sp.spmatrix | sp.sparray,
    *,
    n_samples: int = 100,
    k: int | None = None,
    return_details: bool = False,
    random_state: int | np.random.RandomState | None = None,
    metric: Metric = "cosine",
) -> float | Bunch:
    """How well the similarity ranking of essays survives paraphrasing (NDCG).

    For each sampled essay ``i``, the other essays are ranked twice: the
    original essays by their similarity to original ``i`` (the reference), and
    the paraphrased essays by their similarity to paraphrase ``i``. The
    paraphrase ranking is scored with :func:`sklearn.metrics.ndcg_score`
    against relevances taken from the original similarities, and the scores
    are averaged over the sampled essays (the paper's §5.2, Figure 3).

    Parameters
    ----------
    X_original : {array-like, sparse matrix} of shape (n_essays, n_features)
        Representations of the original essays.
    X_paraphrased : {array-like, sparse matrix} of shape (n_essays, n_features_p)
        Representations of the paraphrased essays, row ``i`` paraphrasing row
        ``i`` of ``X_original``. The number of columns may differ.
    n_samples : int, default=100
        Number of query essays, drawn without replacement; all essays when the
        corpus has no more than ``n_samples``.
    k : int, default=None
        None scores the whole ranking (as the paper); an int scores NDCG@k.
    return_details : bool, default=False
        Return a :class:`~sklearn.utils.Bunch` with further statistics.
    random_state : int, RandomState instance or None, default=None
        Seeds the draw of query essays.
    metric : str or callable, default="cosine"
        Distance between essays (similarity is its negative); ``"cosine"``, a
        metric name of :func:`sklearn.metrics.pairwise_distances`, a callable,
        or ``"precomputed"`` with square distance matrices.

    Returns
    -------
    ndcg : float
        Mean NDCG (or NDCG@k) over the query essays, in ``[0, 1]``.
    details : Bunch
        Only with ``return_details=True``. Keys: ``ndcg`` and ``ndcg_std``
        (the returned mean and its standard deviation over queries);
        ``ndcg_at_10`` and ``ndcg_at_10_std``; ``spearman`` and
        ``spearman_std`` (Spearman's rho of the two rankings); per query,
        ``sample_indices``, ``ndcg_per_essay``, ``ndcg_at_10_per_essay`` and
        ``spearman_per_essay``; ``k``; ``n_undefined``.

    Warns
    -----
    UndefinedMetricWarning
        When, for some query, all original distances are equal (every ranking
        is then ideal: its NDCG values are set to 1 and its Spearman's rho to
        0) or all paraphrase distances are equal (Spearman's rho set to 0).
        ``n_undefined`` counts those queries.

    Notes
    -----
    The relevance of essay ``j`` for query ``i`` is ``max_l d(i, l) - d(i,
    j)`` over the original essays: the original similarity shifted so that the
    least similar essay has relevance 0 (cosine similarity can be negative,
    which NDCG does not allow). The paraphrase ranking is by decreasing
    similarity, i.e. increasing distance. The query essay itself is left out
    of both rankings (it would always come first). Under the cosine distance,
    shifted values within rounding error of 0 (about ``1e-13``) are set to 0,
    so that essays tied in exact arithmetic stay tied.

    NDCG over a whole ranking of graded relevances is close to 1 even for a
    random ranking (about 0.92 for random 64-dimensional vectors over 600
    essays), so NDCG@10 and Spearman's rho are reported beside it: a random
    ranking gives about 0.5 and 0 on them. The paper's code ranked two index
    arrays instead of the similarities, which is why every representation
    scored exactly 1.0 there.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import paraphrase_ndcg
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(50, 16))
    >>> paraphrase_ndcg(X, X)
    1.0
    >>> details = paraphrase_ndcg(X, X + 0.3 * rng.normal(size=X.shape),
    ...                           return_details=True, random_state=0)
    >>> bool(details.ndcg_at_10 > 0.7), bool(details.spearman > 0.8)
    (True, True)
    """
    from sklearn.metrics import ndcg_score

    n_samples = check_int(n_samples, "n_samples", minimum=1)
    k = check_int(k, "k", minimum=1, allow_none=True)
    eng_o = PairwiseEngine(X_original, metric=metric, name="X_original")
    eng_p = PairwiseEngine(X_paraphrased, metric=metric, name="X_paraphrased")
    n = eng_o.n_samples
    if n < 3:
        raise ValueError(
            f"X_original has {n} essays; ranking the others by similarity needs at "
            f"least 3 essays"
        )
    if eng_p.n_samples != n:
        raise ValueError(
            f"inputs describe different numbers of essays: X_original has {n}, "
            f"X_paraphrased has {eng_p.n_samples}; row i of X_paraphrased must "
            f"paraphrase row i of X_original"
        )
    rng = check_random_state(random_state)
    if n_samples >= n:
        queries = np.arange(n)
    else:
        queries = np.sort(rng.choice(n, size=n_samples, replace=False))
    k10 = min(10, n - 1)
    ndcg = np.empty(queries.shape[0])
    ndcg10 = np.empty(queries.shape[0])
    rho = np.empty(queries.shape[0])
    undefined = np.zeros(queries.shape[0], dtype=bool)
    for start in range(0, queries.shape[0], _QUERY_CHUNK):
        q = queries[start : start + _QUERY_CHUNK]
        keep = np.ones((q.shape[0], n), dtype=bool)
        keep[np.arange(q.shape[0]), q] = False  # leave the query essay out
        d_o = eng_o.distances(q, slice(None))[keep].reshape(q.shape[0], n - 1)
        d_p = eng_p.distances(q, slice(None))[keep].reshape(q.shape[0], n - 1)
        # Similarities shifted to start at 0; differences within rounding of the
        # largest distance count as 0, so that rankings that are tied in exact
        # arithmetic stay tied (and a scaled copy of a row changes nothing).
        relevance = d_o.max(axis=1, keepdims=True) - d_o
        relevance[relevance <= eng_o.rounding_tolerance] = 0.0
        score = d_p.max(axis=1, keepdims=True) - d_p
        score[score <= eng_p.rounding_tolerance] = 0.0
        rho[start : start + q.shape[0]] = _row_spearman(relevance, score)
        for r in range(q.shape[0]):
            at = start + r
            if not relevance[r].any():
                ndcg[at] = ndcg10[at] = 1.0
                undefined[at] = True
                continue
            rel, sc = relevance[r : r + 1], score[r : r + 1]
            ndcg[at] = ndcg_score(rel, sc, k=k)
            ndcg10[at] = ndcg_score(rel, sc, k=k10)
    bad_rho = np.isnan(rho)
    undefined |= bad_rho
    if undefined.any():
        warnings.warn(
            f"{int(undefined.sum())} of {queries.shape[0]} query essays have equal "
            f"distances to all other essays (original or paraphrased), so their "
            f"ranking is undefined; their NDCG is set to 1 where the original "
            f"distances are equal and their Spearman's rho to 0",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        rho[bad_rho] = 0.0
    result = float(np.mean(ndcg))
    if not return_details:
        return result
    return Bunch(
        ndcg=result,
        ndcg_std=float(np.std(ndcg)),
        ndcg_at_10=float(np.mean(ndcg10)),
        ndcg_at_10_std=float(np.std(ndcg10)),
        spearman=float(np.mean(rho)),
        spearman_std=float(np.std(rho)),
        k=k,
        sample_indices=queries,
        ndcg_per_essay=ndcg,
        ndcg_at_10_per_essay=ndcg10,
        spearman_per_essay=rho,
        n_undefined=int(undefined.sum()),
    )
