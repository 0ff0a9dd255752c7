"""Who was treated unfairly: essays to review, the worst pairs, a Lipschitz profile.

The Lipschitz fraction of :mod:`sklearn_fairaes.metrics._individual` says how
many pairs of essays are scored consistently with their distance; a scoring
programme needs to know *which* essays to send for a second human read. The
three metrics of this module answer that, over all ``N(N-1)/2`` pairs, through
the one blocked engine of :mod:`sklearn_fairaes.metrics._pairs` (no
``N x N`` matrix is held):

- :func:`essay_consistency`: each essay's exact ``k`` nearest neighbours under
  the representation, their scores, and how far the essay's score is from
  theirs (the essays to review), with AIF360's consistency summary;
- :func:`lipschitz_violations`: the pairs that break the Lipschitz condition
  the most (normalised ``|dy|`` minus ``L`` times normalised distance);
- :func:`lipschitz_profile`: the fraction of pairs satisfied as a function of
  ``L`` and the smallest ``L`` at which 90/95/99% of pairs satisfy it, a
  number that compares models, the human scores and representations.

Signature rule: ``metric_name(X, y_pred, *, ...)`` as for every pair metric
(``X`` one row per essay, or precomputed distances with
``metric="precomputed"``). Results are dict-like :class:`TableResult`
objects with a ``to_frame()`` method, like :func:`score_distance_curve`.

Conventions shared with :func:`lipschitz_fraction`
--------------------------------------------------
Normalisation
    With ``normalize="minmax"`` (the paper) distances and score differences
    are each mapped from ``[min, max]`` over all pairs to ``[0, 1]``; ``"max"``
    divides by the maximum; None keeps raw values. The ranges are found by the
    same passes as in :func:`lipschitz_fraction` (the exact score-difference
    range from the sorted scores, the distance range from one pass over the
    blocks).
Critical constant of a pair
    The smallest float ``L`` at which the pair satisfies
    ``norm(|y_i - y_j|) <= L * norm(d_ij)`` as :func:`lipschitz_fraction`
    evaluates it (the product rounded to float64). It is ``o / d`` up to one
    unit in the last place, 0 when the normalised score difference is 0
    (satisfied at every ``L``), and ``inf`` for two essays at normalised
    distance 0 (duplicates) with different scores (satisfied at no ``L``).
Exactness
    Counts, violations, neighbours and constants are exact. Counts equal those
    of :func:`lipschitz_fraction` exactly: on its float64 path (sparse input,
    any metric but the cosine, precomputed distances, or dense cosine problems
    up to about 2,900 essays) both use the same blocked distances; on larger
    dense cosine problems both screen pairs with a float32 product and settle
    the pairs it cannot decide with the same distances computed pair by pair.
    Those agree with the blocked float64 distances to about ``1e-16``, so
    distances, violations and constants on the two paths agree to about that,
    and a count differs between them only for a pair whose two sides are equal
    to the last bit. The profile's curve between the requested constants is,
    on the screened path, the histogram of float32 quotients: each pair's bin
    is its exact one or a neighbouring one (the quotient is within a relative
    ``1e-3`` of the constant, a bin is 1.1% wide); the fractions at the
    requested constants and the quantile constants are exact.
Cost
    :func:`lipschitz_violations` and :func:`lipschitz_profile` take the
    distance-range pass of :func:`lipschitz_fraction` (float32-screened on large
    dense inputs) and one more pass; :func:`essay_consistency` alone one
    float64 pass. On large dense cosine problems (those
    :func:`lipschitz_fraction` screens in float32) that pass reads the float32
    products of :func:`lipschitz_fraction`'s screen
    (``_review_screened``): per pair a dozen float32 steps, compiled into
    one loop by numba when the ``fast`` extra is installed (NumPy passes over
    strips of rows otherwise, with the same results), and exact work only for
    the pairs the float32 values cannot decide: near a requested constant, in
    the windows of the quantiles (guessed from a sample of pairs), among the
    candidates of the top violations and the nearest neighbours. A problem
    outside the screen's error bounds (scores beyond float32, constants or
    positive quantile constants within the score error of 0, constant scores,
    the neighbours alone) gets one fused float64 pass instead (``_FusedReview``,
    whose values are the separate reducers', bit for bit). For 50,000 essays
    of 384 dimensions the three together from one shared pass took 1.32 times
    as long as :func:`lipschitz_fraction` (16.8 s against 12.8 s, best of 3 on
    2 cores; 2.5 times with the NumPy strips; numba's first compile, once per
    installation, adds about 5 s), with a peak of 821 MB against 317 MB: the
    quantile windows' pairs (about 1.4% of all pairs, 16 bytes each, at most
    ``2**24`` per window; beyond it the quantile is found by exact passes
    after the main one) on top of ``O(N k + block^2)``. Past about 1.4e9 pairs
    (N = 53,000) the sample that guesses the windows grows with the pairs (up
    to ``2**23`` of them), so that each window keeps about ``2**23`` pairs: at
    100,000 essays the three took 1.48 times :func:`lipschitz_fraction`
    (71.4 s against 48.2 s, peak 1.7 GB) where the default sample's full
    windows had cost float64 passes after the main one (459 s). Beyond about
    180,000 essays (1.6e10 pairs; reckoned from the window sizes, not
    measured) the windows of the 90% and 95% constants outgrow their cap again
    and those passes return; ``quantiles=()`` skips them. Figures:
    ``benchmarks/bench_pairs.py``, section 4 (its ``--review-phases`` shows
    where the time goes), and ``benchmarks/bench_review_compile.py`` for the
    compile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ._bootstrap import (
    bootstrap_interval,
    bootstrap_seed,
    check_n_bootstrap,
    replicate_weights,
)
from ._pairs._engine import PairwiseEngine, as_engine
from ._pairs._keys import N_COARSE_KEYS, key_floor
from ._pairs._results import TableResult
from ._pairs._review_pass import _review
from ._pairs._review_stats import DEFAULT_CONSTANTS, _check_normalize
from ._pairs._scaling import _normalise, _scores
from ._pairs._types import check_int, check_option, check_real

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd
    import scipy.sparse as sp
    from numpy.typing import ArrayLike, NDArray

    from ._pairs._types import Metric

__all__ = ["essay_consistency", "lipschitz_profile", "lipschitz_violations"]


# --------------------------------------------------------------------------
# Essay consistency
# --------------------------------------------------------------------------
class EssayConsistency(TableResult):
    """Each essay's nearest neighbours and its score gap to them.

    Result of :func:`essay_consistency`. Per-essay arrays (row ``i`` is essay
    ``i``): ``neighbors``, ``distances`` and ``neighbor_scores`` of shape
    ``(n_samples, n_neighbors)`` (nearest first), ``score``,
    ``neighbor_mean``, ``gap`` (``score - neighbor_mean``), ``mean_abs_diff``
    and ``max_abs_diff``; ``review_order`` (the essays by decreasing ``|gap|``).
    Scalars: ``consistency``, ``n_neighbors``, ``include_self``.

    :meth:`to_frame` gives one row per essay (``kind="essays"``) or one row per
    essay and neighbour (``kind="neighbors"``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import essay_consistency
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> result = essay_consistency(X, [2, 2, 5, 1], n_neighbors=1)
    >>> result.to_frame()["gap"].tolist()
    [0.0, 0.0, 4.0, -4.0]
    """

    def to_frame(self, kind: Literal["essays", "neighbors"] = "essays") -> pd.DataFrame:
        """The result as a :class:`pandas.DataFrame` (needs pandas).

        Parameters
        ----------
        kind : {"essays", "neighbors"}, default="essays"
            ``"essays"``: indexed by ``essay`` (position), columns ``score``,
            ``neighbor_mean``, ``gap``, ``mean_abs_diff``, ``max_abs_diff``,
            ``nearest_neighbor`` and ``nearest_distance``. ``"neighbors"``:
            columns ``essay``, ``rank`` (1 = nearest), ``neighbor``,
            ``distance``, ``score``, ``neighbor_score`` and ``abs_diff``.
        """
        from ..resources import require

        pd = require("pandas", purpose="DataFrame output")
        check_option(kind, "kind", ("essays", "neighbors"))
        n, k = self.neighbors.shape
        if kind == "neighbors":
            return pd.DataFrame(
                {
                    "essay": np.repeat(np.arange(n), k),
                    "rank": np.tile(np.arange(1, k + 1), n),
                    "neighbor": self.neighbors.reshape(-1),
                    "distance": self.distances.reshape(-1),
                    "score": np.repeat(self.score, k),
                    "neighbor_score": self.neighbor_scores.reshape(-1),
                    "abs_diff": np.abs(self.neighbor_scores - self.score[:, None]).reshape(
                        -1
                    ),
                }
            )
        first = 1 if self.include_self and k > 1 else 0
        frame = pd.DataFrame(
            {
                "score": self.score,
                "neighbor_mean": self.neighbor_mean,
                "gap": self.gap,
                "mean_abs_diff": self.mean_abs_diff,
                "max_abs_diff": self.max_abs_diff,
                "nearest_neighbor": self.neighbors[:, first],
                "nearest_distance": self.distances[:, first],
            }
        )
        frame.index.name = "essay"
        return frame


def essay_consistency(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    n_neighbors: int = 10,
    metric: Metric = "cosine",
    include_self: bool = False,
    n_jobs: int | None = None,
    block_size: int | None = None,
    n_bootstrap: int | None = None,
    random_state: int | np.random.RandomState | None = None,
    confidence_level: float = 0.95,
) -> EssayConsistency:
    """Each essay's nearest neighbours, their scores, and the essays to review.

    Individual fairness essay by essay: an essay scored far from its
    near-duplicates is the one a second human should read. For every essay
    the exact ``n_neighbors`` nearest other essays under the representation
    are found (over all pairs, block by block, never an ``N x N`` matrix),
    with their distances and scores, and the essay's gap to them: the mean
    and the largest ``|y_i - y_j|`` over its neighbours, and its score minus
    their mean score. The summary is the consistency of Zemel et al. (2013),
    as AIF360's ``consistency_score`` defines it::

        1 - mean_i |y_i - mean of y over the neighbours of i|

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Essay representations, one row per essay; or precomputed distances
        with ``metric="precomputed"`` (see :func:`lipschitz_fraction`).
    y_pred : array-like of shape (n_samples,)
        Scores of the essays, predicted by a model or given by humans.
    n_neighbors : int, default=10
        Neighbours per essay: at least 1, and fewer than ``n_samples`` (the
        essay's other essays), or at most ``n_samples`` with
        ``include_self=True``.
    metric : str or callable, default="cosine"
        Distance between essays: ``"cosine"``, ``"precomputed"``, a metric name
        of :func:`sklearn.metrics.pairwise_distances`, or a callable on two
        rows.
    include_self : bool, default=False
        False: the neighbours are the ``n_neighbors`` nearest *other* essays.
        True: AIF360's convention (that of ``NearestNeighbors.kneighbors(X)``
        on the training rows): each essay is its own first neighbour, at
        distance 0, followed by its ``n_neighbors - 1`` nearest others, and the
        neighbour mean includes its own score (which pulls every gap towards 0
        by a factor ``(k - 1) / k``).
    n_jobs : int, default=None
        Number of joblib workers over the blocks of pairs; the result does not
        depend on it.
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048).
    n_bootstrap : int, default=None
        None: no bootstrap. An int ``B``: the result gains the percentile
        interval of the consistency over ``B`` essay-level bootstrap
        replicates (see Notes).
    random_state : int, RandomState instance or None, default=None
        Seeds the replicates (an int makes them reproducible).
    confidence_level : float, default=0.95
        Level of the bootstrap interval.

    Returns
    -------
    result : EssayConsistency
        Dict-like with per-essay arrays ``neighbors``, ``distances`` and
        ``neighbor_scores`` (shape ``(n_samples, n_neighbors)``, nearest
        first), ``score``, ``neighbor_mean``, ``gap`` (``score -
        neighbor_mean``: negative when the essay is scored below its
        neighbours), ``mean_abs_diff`` and ``max_abs_diff`` (of ``|y_i -
        y_j|`` over the listed neighbours), ``review_order`` (essay positions
        by decreasing ``|gap|``, ties by position), and the scalars
        ``consistency`` (a float in score units: 1 minus the mean ``|gap|``;
        scale scores to ``[0, 1]`` for AIF360's reading, where 1 is perfectly
        consistent), ``n_neighbors`` and ``include_self``. With
        ``n_bootstrap``, also ``consistency_ci_low``, ``consistency_ci_high``,
        ``consistency_replicates`` (shape ``(n_bootstrap,)``) and
        ``confidence_level``. ``result.to_frame()`` returns a DataFrame.

    Raises
    ------
    ValueError
        When ``n_neighbors`` is below 1 or leaves too few other essays.

    Notes
    -----
    Ties in distance are broken by the lower position of the neighbour, so
    the neighbours are those of a stable sort of each row of the distance
    matrix: for essay ``i``, ``np.argsort(D[i], kind="stable")`` with ``D``
    the square distance matrix and ``D[i, i]`` left out. Duplicate essays are
    each other's neighbours at distance 0. Constant scores give gaps of 0 and
    a consistency of 1. Memory is ``O(N * n_neighbors + block_size**2)``.

    With ``n_bootstrap``, replicate ``b`` draws ``N`` essays with replacement
    (essay ``i`` ``w[b, i]`` times) and its consistency is ``1 - sum_i w[b, i]
    |gap_i| / N``: the neighbours and gaps are those found once on the full
    sample, and only the mean over essays is resampled. This is an
    approximation *conditional on the neighbourhoods*: a full bootstrap would
    search each resampled set for neighbours again, where an essay's copies
    are each other's nearest neighbours at distance 0, which makes the gaps of
    the drawn duplicates 0 and biases the consistency upwards; keeping the
    full sample's neighbours avoids that bias but leaves out the variability
    of the neighbour search itself, so the interval is a little narrow.

    References
    ----------
    Zemel, R. et al. (2013). Learning fair representations. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import essay_consistency
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.8, 0.2], [0.0, 1.0]])
    >>> result = essay_consistency(X, [3, 3, 1, 1], n_neighbors=2)
    >>> result.neighbors.tolist()
    [[1, 2], [0, 2], [1, 0], [2, 1]]
    >>> result.gap.tolist()  # essay 2 is scored 2 points below its neighbours
    [1.0, 1.0, -2.0, -1.0]
    >>> result.review_order.tolist()
    [2, 0, 1, 3]
    >>> result.consistency  # in score points: 1 - mean |gap|
    -0.25
    >>> boot = essay_consistency(X, [3, 3, 1, 1], n_neighbors=2, n_bootstrap=200,
    ...                          random_state=0)
    >>> boot.consistency_replicates.shape, bool(boot.consistency_ci_low <= -0.25)
    ((200,), True)
    """
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    n = engine.n_samples
    k = check_int(n_neighbors, "n_neighbors", minimum=1)
    if not isinstance(include_self, (bool, np.bool_)):
        raise TypeError(f"include_self must be True or False, got {include_self!r}")
    n_others = k - 1 if include_self else k
    if n_others > n - 1:
        limit = n if include_self else n - 1
        raise ValueError(
            f"n_neighbors={k} is too many for {n} essays: each essay has {n - 1} "
            f"other essays, so use n_neighbors <= {limit}"
            + ("" if include_self else " (or include_self=True, which counts the essay)")
        )
    n_bootstrap = check_n_bootstrap(n_bootstrap, confidence_level)
    found = _review(engine, y, n_others=n_others)
    result = _consistency_result(y, found, k, bool(include_self))
    if n_bootstrap is not None:
        weights = replicate_weights(n, n_bootstrap, bootstrap_seed(random_state))
        reps = consistency_replicates(result.gap, weights)
        low, high = bootstrap_interval(reps, confidence_level)
        result.update(
            consistency_ci_low=low,
            consistency_ci_high=high,
            consistency_replicates=reps,
            confidence_level=float(confidence_level),
        )
    return result


def consistency_replicates(
    gap: NDArray[np.float64], weights: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The consistency ``1 - mean |gap|`` on every replicate, neighbours fixed.

    Parameters
    ----------
    gap : ndarray of shape (n_samples,)
        Each essay's gap to its neighbours, found on the full sample.
    weights : ndarray of shape (n_bootstrap, n_samples)
        Multiplicities of the essays.

    Returns
    -------
    replicates : ndarray of shape (n_bootstrap,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics._review import consistency_replicates
    >>> consistency_replicates(np.array([1.0, -1.0, 0.0]), np.array([[3.0, 0, 0]]))
    array([0.])
    """
    w = np.asarray(weights, dtype=np.float64)
    out: NDArray[np.float64] = 1.0 - (w @ np.abs(gap)) / w.sum(axis=1)
    return out


def _consistency_result(
    y: NDArray[np.float64], found: dict[str, Any], k: int, include_self: bool
) -> EssayConsistency:
    """:func:`essay_consistency`'s result from the parts of :func:`_review`."""
    n = y.shape[0]
    if "neighbors" in found:
        dist, nbr = found["neighbors"]
    else:
        dist, nbr = np.empty((n, 0)), np.empty((n, 0), dtype=np.int64)
    if include_self:
        dist = np.concatenate([np.zeros((n, 1)), dist], axis=1)
        nbr = np.concatenate([np.arange(n, dtype=np.int64)[:, None], nbr], axis=1)
    scores = y[nbr]
    mean = scores.mean(axis=1)
    gap = y - mean
    diff = np.abs(scores - y[:, None])
    order = np.lexsort((np.arange(n), -np.abs(gap)))
    return EssayConsistency(
        neighbors=nbr,
        distances=dist,
        neighbor_scores=scores,
        score=y,
        neighbor_mean=mean,
        gap=gap,
        mean_abs_diff=diff.mean(axis=1),
        max_abs_diff=diff.max(axis=1),
        review_order=order,
        consistency=float(1.0 - np.mean(np.abs(gap))),
        n_neighbors=k,
        include_self=include_self,
    )


# --------------------------------------------------------------------------
# Lipschitz violations
# --------------------------------------------------------------------------
class LipschitzViolations(TableResult):
    """The pairs that violate the Lipschitz condition the most.

    Result of :func:`lipschitz_violations`. Per-pair arrays (worst first):
    ``rank`` (1, 2, ...), ``i``, ``j`` (``i < j``), ``distance``,
    ``normalized_distance``, ``score_i``, ``score_j``, ``abs_diff``,
    ``normalized_diff`` and ``violation``. Scalars: ``n_violations``,
    ``n_pairs``, ``lipschitz_constant``, ``normalize``, ``distance_range`` and
    ``outcome_range``. :meth:`to_frame` gives the pairs indexed by ``rank``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import lipschitz_violations
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    >>> lipschitz_violations(X, [1, 3, 3]).to_frame()[["i", "j"]].values.tolist()
    [[0, 1]]
    """

    _frame_keys = (
        "i",
        "j",
        "distance",
        "normalized_distance",
        "score_i",
        "score_j",
        "abs_diff",
        "normalized_diff",
        "violation",
    )
    _frame_index = "rank"


def lipschitz_violations(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    top: int = 100,
    normalize: Literal["minmax", "max"] | None = "minmax",
    lipschitz_constant: float = 1.0,
    metric: Metric = "cosine",
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> LipschitzViolations:
    """The pairs of essays whose score difference exceeds their distance the most.

    The pairs :func:`lipschitz_fraction` counts as failing, worst first: a pair
    violates the condition when ``norm(|y_i - y_j|) > L * norm(d_ij)``, and its
    violation is ``norm(|y_i - y_j|) - L * norm(d_ij)`` (in ``(0, 1]`` with
    min-max normalisation). The ``top`` largest are found exactly in one pass
    over the blocks of pairs, which also counts all violating pairs.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Essay representations; or precomputed distances with
        ``metric="precomputed"`` (see :func:`lipschitz_fraction`).
    y_pred : array-like of shape (n_samples,)
        Scores of the essays, predicted by a model or given by humans.
    top : int, default=100
        Most pairs returned (fewer when fewer pairs violate the condition).
    normalize : {"minmax", "max"} or None, default="minmax"
        As in :func:`lipschitz_fraction`, with the same ranges.
    lipschitz_constant : float, default=1.0
        The constant ``L`` (> 0).
    metric : str or callable, default="cosine"
        Distance between essays: ``"cosine"``, ``"precomputed"``, a metric name
        of :func:`sklearn.metrics.pairwise_distances`, or a callable on two
        rows.
    n_jobs : int, default=None
        Number of joblib workers; the result does not depend on it.
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048).

    Returns
    -------
    violations : LipschitzViolations
        Dict-like with per-pair arrays, worst first: ``rank``, ``i`` and ``j``
        (``i < j``, positions of the essays), ``distance`` (raw),
        ``normalized_distance``, ``score_i``, ``score_j``, ``abs_diff``
        (``|score_i - score_j|``), ``normalized_diff`` and ``violation``; and
        ``n_violations`` (all violating pairs, so ``1 - n_violations /
        n_pairs`` is the Lipschitz fraction), ``n_pairs``,
        ``lipschitz_constant``, ``normalize``, ``distance_range`` (None with
        ``normalize=None``) and ``outcome_range``. ``to_frame()`` returns a
        DataFrame indexed by ``rank``.

    Warns
    -----
    UndefinedMetricWarning
        When every pair has the same non-zero distance, as in
        :func:`lipschitz_fraction`.

    Notes
    -----
    Ties in violation are broken by the lowest pair ``(i, j)`` (the condensed
    order of ``pdist``). Duplicate essays (distance 0) with different scores
    violate by their whole normalised score difference. Constant scores
    violate nowhere (an empty table). Memory is ``O(top + block_size**2)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import lipschitz_violations
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> worst = lipschitz_violations(X, [2, 5, 5, 5], top=2)
    >>> worst.i.tolist(), worst.j.tolist()
    ([0, 0], [1, 3])
    >>> worst.violation.round(3).tolist()  # the near-duplicates (0, 1) first
    [0.999, 0.1]
    >>> worst.n_violations, worst.n_pairs
    (2, 6)
    """
    normalize = _check_normalize(normalize)
    L = check_real(lipschitz_constant, "lipschitz_constant", positive=True)
    top = check_int(top, "top", minimum=1)
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    found = _review(engine, y, top=top, normalize=normalize, lipschitz_constant=L)
    return _violations_result(engine, y, found, L, normalize)


def _violations_result(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    found: dict[str, Any],
    L: float,
    normalize: Literal["minmax", "max"] | None,
) -> LipschitzViolations:
    """:func:`lipschitz_violations`' result from the parts of :func:`_review`."""
    (v, i, j), count = found["violations"]
    d = engine.paired_distances(i, j)
    o = np.abs(y[i] - y[j])
    d_n = _normalise(d, found["d_scaling"])
    o_n = _normalise(o, found["o_scaling"])
    return LipschitzViolations(
        rank=np.arange(1, v.size + 1),
        i=i,
        j=j,
        distance=d,
        normalized_distance=np.maximum(d_n, 0.0),
        score_i=y[i],
        score_j=y[j],
        abs_diff=o,
        normalized_diff=np.maximum(o_n, 0.0),
        violation=v,
        n_violations=int(count),
        n_pairs=int(engine.n_pairs),
        lipschitz_constant=L,
        normalize=normalize,
        distance_range=found["distance_range"],
        outcome_range=found["outcome_range"],
    )


# --------------------------------------------------------------------------
# Lipschitz profile
# --------------------------------------------------------------------------
class LipschitzProfile(TableResult):
    """The fraction of pairs satisfied as a function of the Lipschitz constant.

    Result of :func:`lipschitz_profile`. At the requested constants:
    ``lipschitz_constant``, ``fraction`` and ``n_satisfied``; at the quantiles:
    ``quantiles`` and ``quantile_constants``; the whole curve:
    ``curve_constant`` and ``curve_fraction``; and ``n_pairs``, ``n_always``,
    ``n_never``, ``normalize``, ``distance_range``, ``outcome_range``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import lipschitz_profile
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> profile = lipschitz_profile(X, [2, 2, 5, 5], constants=[1.0])
    >>> profile.to_frame()["fraction"].tolist()
    [0.5]
    """

    def to_frame(
        self, kind: Literal["constants", "quantiles", "curve"] = "constants"
    ) -> pd.DataFrame:
        """A table of the profile as a :class:`pandas.DataFrame` (needs pandas).

        Parameters
        ----------
        kind : {"constants", "quantiles", "curve"}, default="constants"
            ``"constants"``: ``fraction`` and ``n_satisfied`` indexed by
            ``lipschitz_constant``; ``"quantiles"``: ``lipschitz_constant``
            indexed by ``quantile``; ``"curve"``: ``fraction`` indexed by
            ``lipschitz_constant`` at every step of the curve.
        """
        from ..resources import require

        pd = require("pandas", purpose="DataFrame output")
        check_option(kind, "kind", ("constants", "quantiles", "curve"))
        if kind == "quantiles":
            frame = pd.DataFrame(
                {"lipschitz_constant": self.quantile_constants},
                index=pd.Index(self.quantiles, name="quantile"),
            )
            return frame
        if kind == "curve":
            return pd.DataFrame(
                {"fraction": self.curve_fraction},
                index=pd.Index(self.curve_constant, name="lipschitz_constant"),
            )
        return pd.DataFrame(
            {"fraction": self.fraction, "n_satisfied": self.n_satisfied},
            index=pd.Index(self.lipschitz_constant, name="lipschitz_constant"),
        )


def _curve(
    counts: NDArray[np.intp], total: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Steps of the fraction satisfied, exact at each returned constant.

    For every coarse bin ``b`` holding a finite critical constant, the largest
    float below the next bin: the pairs satisfied there are exactly those of
    bins ``<= b``.
    """
    # Bin 0 holds the constants 0 (and subnormals): its step, at a subnormal L,
    # is left out; ``n_always / n_pairs`` is the fraction as L tends to 0.
    finite = counts[: N_COARSE_KEYS - 1]
    bins = np.flatnonzero(finite[1:]) + 1
    cum = np.cumsum(counts)
    tops = np.array([key_floor(int(b) + 1) for b in bins], dtype=np.float64)
    constants = np.nextafter(tops, 0.0)
    return constants, cum[bins] / total


def _check_constants(constants: ArrayLike | None) -> list[float]:
    """The profile's constants, sorted and without repeats (None: the defaults)."""
    given = DEFAULT_CONSTANTS if constants is None else constants
    values = np.atleast_1d(np.asarray(given, dtype=np.float64))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(
            f"constants must be a non-empty 1-D list of Lipschitz constants, got {given!r}"
        )
    return sorted({check_real(float(c), "constants", positive=True) for c in values})


def _check_quantiles(quantiles: ArrayLike) -> NDArray[np.float64]:
    """The profile's quantiles as a 1-D array of shares in ``(0, 1]``."""
    qs = np.atleast_1d(np.asarray(quantiles, dtype=np.float64))
    if qs.ndim != 1:
        raise ValueError(f"quantiles must be a 1-D list of shares, got {quantiles!r}")
    for q in qs:
        if not 0 < q <= 1:
            raise ValueError(
                f"quantiles must be shares of pairs in (0, 1], got {float(q)!r}; "
                f"write 0.95 for 95%"
            )
    return qs


def lipschitz_profile(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    constants: ArrayLike | None = None,
    quantiles: ArrayLike = (0.9, 0.95, 0.99),
    normalize: Literal["minmax", "max"] | None = "minmax",
    metric: Metric = "cosine",
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> LipschitzProfile:
    """Fraction of pairs satisfying the Lipschitz condition as ``L`` varies.

    "94.4% of pairs satisfy the condition at L = 1" cannot be compared across
    representations, each with its own distance distribution. The empirical
    Lipschitz constant can: the smallest ``L`` at which 95% (say) of the pairs
    satisfy ``norm(|y_i - y_j|) <= L * norm(d_ij)``. A model with a smaller
    constant than the human scores under the same representation scores near
    essays more alike than the raters do. One pass over the blocks of pairs
    gives the whole curve (a histogram of each pair's critical constant,
    ``norm(|dy|) / norm(d)``), the fractions at ``constants`` and the
    constants at ``quantiles``, exactly.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Essay representations; or precomputed distances with
        ``metric="precomputed"`` (see :func:`lipschitz_fraction`).
    y_pred : array-like of shape (n_samples,)
        Scores of the essays, predicted by a model or given by humans.
    constants : array-like of float, default=None
        Constants ``L`` (> 0) at which the fraction is counted exactly (equal
        to ``lipschitz_fraction(X, y_pred, lipschitz_constant=L)``); None means
        ``(0.25, 0.5, 1, 2, 4)``.
    quantiles : array-like of float, default=(0.9, 0.95, 0.99)
        Shares of pairs in ``(0, 1]``: for each, the smallest ``L`` at which at
        least that share of the pairs satisfies the condition.
    normalize : {"minmax", "max"} or None, default="minmax"
        As in :func:`lipschitz_fraction`, with the same ranges.
    metric : str or callable, default="cosine"
        Distance between essays: ``"cosine"``, ``"precomputed"``, a metric name
        of :func:`sklearn.metrics.pairwise_distances`, or a callable on two
        rows.
    n_jobs : int, default=None
        Number of joblib workers; the result does not depend on it.
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048).

    Returns
    -------
    profile : LipschitzProfile
        Dict-like with ``lipschitz_constant`` (the constants, sorted),
        ``fraction`` and ``n_satisfied`` at each; ``quantiles`` and
        ``quantile_constants`` (the smallest ``L`` per quantile: 0.0 when that
        share of pairs has no score difference, ``inf`` when it needs pairs of
        duplicate essays with different scores, which no ``L`` satisfies);
        ``curve_constant`` and ``curve_fraction`` (the fraction satisfied at
        each constant, exact there, one point per bin of about 1.1% of ``L``
        that holds pairs, from the smallest positive constant); ``n_pairs``;
        ``n_always`` (pairs with no normalised score difference, satisfied at
        every ``L``: ``n_always / n_pairs`` is the fraction as ``L`` tends to 0); ``n_never`` (pairs at
        normalised distance 0 with a score difference); ``normalize``,
        ``distance_range`` and ``outcome_range``. ``to_frame()`` returns a
        DataFrame.

    Warns
    -----
    UndefinedMetricWarning
        When every pair has the same non-zero distance, as in
        :func:`lipschitz_fraction`.

    Notes
    -----
    The constant at quantile ``q`` is the ``m``-th smallest critical constant,
    ``m`` the smallest count with ``m / n_pairs >= q``: the fraction satisfied
    at it is at least ``q``, and below it less than ``q``. The coarse histogram
    locates the bin holding rank ``m``; a second pass gathers that bin's
    constants and sorts them (a bin too full to gather is refined by
    histograms over finer bins first). The curve's points are the largest
    floats below each bin's upper edge, so the fraction there is a count, not
    an interpolation. Constant scores give a constant of 0 at every quantile.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import lipschitz_fraction, lipschitz_profile
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> y = [2, 2, 5, 5]
    >>> profile = lipschitz_profile(X, y, constants=[1.0, 1.2], quantiles=[0.5, 1.0])
    >>> profile.fraction.tolist()
    [0.5, 0.8333333333333334]
    >>> bool(profile.fraction[1] == lipschitz_fraction(X, y, lipschitz_constant=1.2))
    True
    >>> [round(float(c), 4) for c in profile.quantile_constants]
    [1.0, 1.2655]
    """
    normalize = _check_normalize(normalize)
    consts = _check_constants(constants)
    qs = _check_quantiles(quantiles)
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    found = _review(
        engine, y, constants=consts, quantiles=[float(q) for q in qs], normalize=normalize
    )
    return _profile_result(engine, found, consts, qs, normalize)


def _profile_result(
    engine: PairwiseEngine,
    found: dict[str, Any],
    consts: Sequence[float],
    qs: NDArray[np.float64],
    normalize: Literal["minmax", "max"] | None,
) -> LipschitzProfile:
    """:func:`lipschitz_profile`'s result from the parts of :func:`_review`."""
    counts, below = found["histogram"], found["counts"]
    total = engine.n_pairs
    curve_c, curve_f = _curve(counts, total)
    return LipschitzProfile(
        lipschitz_constant=np.asarray(consts),
        fraction=below[1:] / total,
        n_satisfied=below[1:].astype(np.int64),
        quantiles=qs,
        quantile_constants=np.asarray(found.get("quantile_constants", []), dtype=float),
        curve_constant=curve_c,
        curve_fraction=curve_f,
        n_pairs=int(total),
        n_always=int(below[0]),
        n_never=int(counts[N_COARSE_KEYS - 1]),
        normalize=normalize,
        distance_range=found["distance_range"],
        outcome_range=found["outcome_range"],
    )


def _review_all(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    n_neighbors: int = 10,
    top: int = 100,
    constants: Sequence[float] = DEFAULT_CONSTANTS,
    quantiles: Sequence[float] = (0.9, 0.95, 0.99),
    normalize: Literal["minmax", "max"] | None = "minmax",
    lipschitz_constant: float = 1.0,
    metric: Metric = "cosine",
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> dict[str, Any]:
    """The raw parts of the three metrics from one shared pass (for the audit).

    Returns the dict of :func:`_review`: ``neighbors`` (distances, positions of
    shape ``(n_samples, n_neighbors)``, self excluded), ``violations``
    (``((violation, i, j), n_violations)``), ``histogram`` (coarse counts of
    the critical constants), ``counts`` (pairs with no score difference, then
    pairs satisfied at each constant), ``quantile_constants`` and the
    normalisation. The public functions give the same values one by one.
    """
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    return _review(
        engine,
        y,
        n_others=check_int(
            n_neighbors, "n_neighbors", minimum=1, maximum=engine.n_samples - 1
        ),
        top=check_int(top, "top", minimum=1),
        constants=sorted(constants),
        quantiles=list(quantiles),
        normalize=_check_normalize(normalize),
        lipschitz_constant=check_real(
            lipschitz_constant, "lipschitz_constant", positive=True
        ),
    )


def _review_results(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    n_neighbors: int = 10,
    top: int = 100,
    constants: ArrayLike | None = None,
    quantiles: ArrayLike = (0.9, 0.95, 0.99),
    normalize: Literal["minmax", "max"] | None = "minmax",
    lipschitz_constant: float = 1.0,
    metric: Metric = "cosine",
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> tuple[EssayConsistency, LipschitzViolations, LipschitzProfile]:
    """The three metrics' results from one shared pass (for the audit).

    Equal to ``essay_consistency(X, y_pred, n_neighbors=n_neighbors)``,
    ``lipschitz_violations(X, y_pred, top=top, ...)`` and
    ``lipschitz_profile(X, y_pred, constants=constants, quantiles=quantiles,
    ...)`` called one by one (same arguments, same checks, same values), in
    about the time of one of them: one engine, one distance-range pass and one
    main pass.
    """
    normalize = _check_normalize(normalize)
    L = check_real(lipschitz_constant, "lipschitz_constant", positive=True)
    top = check_int(top, "top", minimum=1)
    consts = _check_constants(constants)
    qs = _check_quantiles(quantiles)
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    k = check_int(n_neighbors, "n_neighbors", minimum=1, maximum=engine.n_samples - 1)
    found = _review(
        engine,
        y,
        n_others=k,
        top=top,
        constants=consts,
        quantiles=[float(q) for q in qs],
        normalize=normalize,
        lipschitz_constant=L,
    )
    return (
        _consistency_result(y, found, k, False),
        _violations_result(engine, y, found, L, normalize),
        _profile_result(engine, found, consts, qs, normalize),
    )
