"""Individual fairness of a scoring model: are similar essays scored similarly?

The metrics of the paper's §3 (steps 3b-3c and 5) and §5.1.2-5.1.3, 5.3,
computed over all ``N(N-1)/2`` pairs of essays by the blocked engine of
:mod:`sklearn_fairaes.metrics._pairs` (no ``N x N`` matrix is ever held).

Signature rule: ``metric_name(X, y_pred, *, ...)`` where ``X`` is the essay
representation (one row per essay, dense or sparse; or precomputed distances
with ``metric="precomputed"``) and ``y_pred`` the scores given by a model (or
by humans). Scalar metrics return a Python ``float`` that is a fraction, not a
percentage; tables come back as a dict-like result with a ``to_frame()``
method.

Pair order, tie-breaking, the cosine distance of zero vectors and the
agreement with :func:`scipy.spatial.distance.pdist` are described in
:mod:`sklearn_fairaes.metrics._pairs`.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from sklearn.utils import Bunch

from .._validation import check_embeddings
from ..exceptions import UndefinedMetricWarning
from ._bootstrap import bootstrap_interval, bootstrap_seed, replicate_weights
from ._pairs import _types
from ._pairs._bootstrap_pairs import LipschitzCondition, replicate_lipschitz_fractions
from ._pairs._counters import _LipschitzCounter, _screened_count
from ._pairs._engine import PairwiseEngine, as_engine
from ._pairs._keys import select_rank_windows
from ._pairs._range import MinMaxReducer
from ._pairs._reducers import HistogramReducer, TopKReducer
from ._pairs._results import TableResult
from ._pairs._scaling import _normalise, _outcome_range, _scaling, _scores
from ._pairs._types import (
    check_int,
    check_option,
    check_real,
    pairs_to_condensed,
    stable_argsort,
)

if TYPE_CHECKING:
    import pandas as pd
    import scipy.sparse as sp
    from numpy.typing import ArrayLike, NDArray

    from ._pairs._types import Metric

__all__ = [
    "extreme_pairs",
    "feature_difference_profile",
    "lipschitz_fraction",
    "score_distance_curve",
]


def _wilson_interval(k: int, n: int, level: float) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``k / n``."""
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


# --------------------------------------------------------------------------
# Lipschitz fraction
# --------------------------------------------------------------------------
def lipschitz_fraction(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    metric: Metric = "cosine",
    normalize: Literal["minmax", "max"] | None = "minmax",
    lipschitz_constant: float = 1.0,
    n_jobs: int | None = None,
    return_counts: bool = False,
    max_pairs: int | None = None,
    random_state: int | np.random.RandomState | None = None,
    block_size: int | None = None,
    confidence_level: float = 0.95,
    n_bootstrap: int | None = None,
) -> float | Bunch:
    """Share of pairs of essays whose score difference respects their distance.

    Individual fairness in the sense of Dwork et al.: a scoring model is fair
    on a pair of essays when ``D(y_i, y_j) <= L * d(x_i, x_j)``, the
    ``(D, d)``-Lipschitz property (the paper's §5.3.2, Table 3). Following the
    paper, ``D`` is the absolute score difference, ``d`` the distance of the
    essay representations, and both are min-max normalised over all pairs
    before the comparison, so a pair counts when::

        (|y_i - y_j| - min|dy|) / (max|dy| - min|dy|)
            <= L * (d_ij - min d) / (max d - min d)

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Essay representations (BOW, TF-IDF, Sentence-BERT, ...), one row per
        essay. With ``metric="precomputed"``, a condensed distance vector of
        length ``n_samples * (n_samples - 1) / 2`` (as from ``pdist``) or a
        square distance matrix. Every pair metric also takes the pair engine
        of the private package ``sklearn_fairaes.metrics._pairs``
        (``PairwiseEngine``) as ``X``: the metrics called on one engine share
        its prepared rows and its distance range (the audit passes one per
        study and representation); ``metric`` must then be the engine's, and
        ``block_size`` and ``n_jobs`` None or the engine's.
    y_pred : array-like of shape (n_samples,)
        Scores of the essays, predicted by a model or given by humans.
    metric : str or callable, default="cosine"
        Distance between essays: ``"cosine"``, ``"precomputed"``, a metric name
        of :func:`sklearn.metrics.pairwise_distances`, or a callable on two
        rows.
    normalize : {"minmax", "max"} or None, default="minmax"
        How distances and score differences are put on one scale, each
        separately over all pairs: ``"minmax"`` maps ``[min, max]`` to
        ``[0, 1]`` (the paper), ``"max"`` divides by the maximum (the paper's
        second variant), None compares raw values (then choose
        ``lipschitz_constant`` in score units per unit of distance).
    lipschitz_constant : float, default=1.0
        The constant ``L`` (> 0).
    n_jobs : int, default=None
        Number of joblib workers over the blocks of pairs; None means 1 unless
        in a :func:`joblib.parallel_config` context (a Dask backend spreads
        the blocks over a cluster). The result does not depend on it.
    return_counts : bool, default=False
        Return a :class:`~sklearn.utils.Bunch` with the counts and a confidence
        interval instead of the fraction alone.
    max_pairs : int, default=None
        None computes the exact fraction over all pairs. An int estimates it
        from that many pairs drawn independently and uniformly (with
        replacement), for corpora too large to count all pairs; the
        normalisation still uses the exact ranges (see Notes).
    random_state : int, RandomState instance or None, default=None
        Seeds the draw of pairs when ``max_pairs`` is set, and the bootstrap
        replicates when ``n_bootstrap`` is set (an int makes them
        reproducible; None or a RandomState draws the seed from it).
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048); memory grows
        with its square.
    confidence_level : float, default=0.95
        Level of the interval returned with ``return_counts=True``.
    n_bootstrap : int, default=None
        None: no bootstrap. An int ``B``: with ``return_counts=True``, the
        interval is the percentile interval of ``B`` essay-level bootstrap
        replicates (see Notes), all computed in one extra pass over the
        pairs. Only for the exact fraction (``max_pairs`` None).

    Returns
    -------
    fraction : float
        Share of pairs, in ``[0, 1]``, that satisfy the inequality.
    counts : Bunch
        Only with ``return_counts=True``. Keys: ``fraction``; ``n_satisfied``
        and ``n_pairs`` (pairs that satisfy it, pairs evaluated);
        ``n_total_pairs`` (all pairs); ``exact`` (False when estimated from a
        sample); ``ci_low``, ``ci_high`` (Wilson score interval at
        ``confidence_level`` for the exact fraction over all pairs, equal to
        the fraction when exact; with ``n_bootstrap``, the percentile
        bootstrap interval); ``replicates`` (only with ``n_bootstrap``: the
        fraction on each replicate, shape ``(n_bootstrap,)``);
        ``confidence_level``; ``distance_range`` and ``outcome_range`` (the
        ``(min, max)`` used by the normalisation; ``distance_range`` is None
        with ``normalize=None``, where it is not computed).

    Warns
    -----
    UndefinedMetricWarning
        When all pairs have the same non-zero distance or score difference, so
        that min-max normalisation is undefined; the normalised values of that
        quantity are then set to 0 (only possible for the distances, or with
        two essays). A model that gives every essay the same score is not a
        special case: its score differences are all 0 and every pair
        satisfies the inequality (the fraction is 1).

    Notes
    -----
    The exact computation takes two passes over the blocks of pairs (the
    distance range, then the count) and ``O(N * d + block_size**2)`` memory.
    On large dense inputs both passes screen pairs with a float32 matrix product
    whose error is bounded, and settle the undecided ones exactly in float64
    (see the private package ``sklearn_fairaes.metrics._pairs``). The count
    equals the paper's recipe ``d = pdist(X, "cosine"); o = pdist(y[:, None]);
    mean(minmax(o) <= minmax(d))``
    up to pairs whose two sides are equal to the last bit; with the ``pdist``
    array passed as ``X`` and ``metric="precomputed"``, it equals it exactly.
    The float32 screen sees the scores shifted and scaled by a power of two to
    ``[0, 1]``, so scores of any magnitude (1e39, 1e-300) are counted exactly;
    scores whose range overflows float64 (``max - min`` above 1.8e308) are
    refused with a ValueError.

    With ``max_pairs``, both normalisation ranges are those over all pairs:
    the score-difference range follows from the sorted scores, and the
    distance range is found in one blocked pass over all pairs that keeps
    only the running minimum and maximum (screened in float32 on large dense
    inputs, as the exact count). Each drawn pair then satisfies the inequality
    with probability equal to the exact fraction, so the estimate is unbiased
    and the Wilson interval covers the exact fraction over all pairs at
    ``confidence_level`` (up to the normal approximation, good when
    ``max_pairs`` times the fraction and times one minus it are above ~10).
    The range pass costs about as much as one exact pass, so ``max_pairs``
    saves the counting pass only; with ``normalize=None`` no range is needed
    and the cost is that of the drawn pairs alone. (A sample's own distance
    range is narrower than the true one and biased the estimate beyond its
    interval.)

    With ``n_bootstrap``, the bootstrap resamples *essays*, not pairs (pairs
    that share an essay are dependent): replicate ``b`` draws ``N`` essays
    with replacement, essay ``i`` ``w[b, i]`` times, and the fraction is
    recomputed over the pairs of two different essays of the resampled set,
    i.e. the pair ``(i, j)`` weighted by ``w[b, i] * w[b, j]`` (a copy of an
    essay is not paired with itself). The normalisation ranges stay those of
    the full sample: they set the scale of the figure, and a replicate's own
    range is biased (its extremes are missing from about a third of the
    replicates). All replicates come from one pass over the blocks of pairs
    (a matrix product of the replicate weights by each block's 0/1 matrix of
    satisfied pairs), whose cost grows with ``B`` but not with ``B`` passes.

    The percentile interval undercovers a little at small ``N``: in a
    simulation with a known population fraction (``normalize=None``, iid
    essays, 400 samples each, 95% nominal), it covered 93.0% at ``N = 60``
    (94.2% with ``B = 1000``), 93.5% at ``N = 150``, 94.8% at ``N = 200``
    (95.8% with ``B = 1000``) and 94.0% at ``N = 400``, with ``B = 200``
    unless stated (each figure +-1.1 points of simulation error). A pair
    fraction is a U-statistic whose resampling distribution is skewed and
    slightly too narrow at small ``N`` (a resample holds about ``0.63 N``
    distinct essays); from a few hundred essays the interval is close to
    nominal. Simulation: ``tests/test_bootstrap.py``.

    References
    ----------
    Dwork, C. et al. (2012). Fairness through awareness. ITCS.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import lipschitz_fraction
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> # The near-duplicate pairs agree. The four other pairs differ by the
    >>> # largest score gap, which min-max maps to 1: only the farthest pair,
    >>> # whose normalised distance is 1, satisfies the inequality.
    >>> lipschitz_fraction(X, [2, 2, 5, 5])
    0.5
    >>> lipschitz_fraction(X, [2, 2, 5, 5], lipschitz_constant=1.2)
    0.8333333333333334
    >>> counts = lipschitz_fraction(X, [2, 2, 5, 5], return_counts=True)
    >>> int(counts.n_satisfied), int(counts.n_pairs)
    (3, 6)
    >>> boot = lipschitz_fraction(
    ...     X, [2, 2, 5, 5], return_counts=True, n_bootstrap=200, random_state=0
    ... )
    >>> boot.replicates.shape, bool(boot.ci_low <= 0.5 <= boot.ci_high)
    ((200,), True)
    """
    check_option(normalize, "normalize", ("minmax", "max", None))
    lipschitz_constant = check_real(lipschitz_constant, "lipschitz_constant", positive=True)
    max_pairs = check_int(max_pairs, "max_pairs", minimum=1, allow_none=True)
    confidence_level = check_real(confidence_level, "confidence_level", lower=0, upper=1)
    n_bootstrap = check_int(n_bootstrap, "n_bootstrap", minimum=1, allow_none=True)
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    if n_bootstrap is not None and max_pairs is not None and max_pairs < engine.n_pairs:
        raise ValueError(
            "n_bootstrap needs the exact fraction over all pairs; leave max_pairs=None "
            "(the bootstrap pass costs about one exact count per few hundred replicates)"
        )
    full_engine, full_y = engine, y
    total = engine.n_pairs
    o_range = _outcome_range(y)

    exact = max_pairs is None or max_pairs >= total
    d_range: tuple[float, float] | None
    if exact:
        counted = None
        # sorted by score, the screen counts each block in a few comparisons
        # per tile of near-equal scores (_SortedScreenedLipschitzCounter); the
        # count over all pairs does not depend on the order
        by_score = engine.screenable and engine.backend == "numpy" and engine.groups is None
        if by_score:
            order = np.argsort(y, kind="stable")
            engine, y = engine.reordered(order), y[order]
        # Large dense problems: a float32 product decides most pairs and exact
        # float64 distances settle the rest, block by block. Both passes must
        # use the same exact distances, so a screened range pass that gives up
        # (too many candidates for an extreme: massive ties) redoes both in
        # float64.
        for screened in (True, False) if engine.screenable else (False,):
            d_range = None
            if normalize is not None:
                found = engine.distance_range(screened=screened)
                if found is None:
                    continue
                d_range = found[:2]
            d_scaling = _scaling(*(d_range or (0.0, 0.0)), normalize, "distance")
            o_scaling = _scaling(*o_range, normalize, "score difference")
            if screened:
                counted = _screened_count(
                    engine,
                    y,
                    d_scaling,
                    o_scaling,
                    lipschitz_constant,
                    o_range[1],
                    sorted_scores=by_score,
                )
            else:
                reducer = _LipschitzCounter(y, d_scaling, o_scaling, lipschitz_constant)
                counted = engine.map_reduce(reducer)
            break
        # the loop ends on a count: the float64 pass never gives up
        n_ok, n_eval = cast("tuple[int, int]", counted)
    else:
        # not exact: max_pairs is an int below the number of pairs
        d_range = None
        if normalize is not None:
            # The normalisation constants come from all pairs, in one blocked pass
            # that stores no pairs: the sample's own range is narrower (its
            # extremes are less extreme), which biased the estimate by more than
            # its interval (95% intervals covered the exact value 2 times in 40).
            # With exact constants each drawn pair satisfies the inequality with
            # probability equal to the exact fraction, and the interval holds.
            found = engine.distance_range(screened=True) if engine.screenable else None
            d_range = (found or engine.distance_range())[:2]
        i, j = engine.sample_pairs(cast(int, max_pairs), random_state)
        d = engine.paired_distances(i, j)
        o = np.abs(y[i] - y[j])
        d_scaling = _scaling(*(d_range or (0.0, 0.0)), normalize, "distance")
        o_scaling = _scaling(*o_range, normalize, "score difference")
        d = _normalise(d, d_scaling, out=None if d_scaling is None else d)
        if lipschitz_constant != 1.0:
            d *= lipschitz_constant
        o = _normalise(o, o_scaling, out=None if o_scaling is None else o)
        n_ok, n_eval = int(np.count_nonzero(o <= d)), int(d.size)
    fraction = n_ok / n_eval
    if not return_counts:
        return float(fraction)
    low, high = (
        (fraction, fraction) if exact else _wilson_interval(n_ok, n_eval, confidence_level)
    )
    extra: dict[str, Any] = {}
    if n_bootstrap is not None:
        replicates = _lipschitz_replicates(
            full_engine,
            full_y,
            n_bootstrap,
            random_state,
            _scaling(*(d_range or (0.0, 0.0)), normalize, "distance"),
            _scaling(*o_range, normalize, "score difference"),
            lipschitz_constant,
        )
        low, high = bootstrap_interval(replicates, confidence_level)
        extra["replicates"] = replicates
    return Bunch(
        fraction=float(fraction),
        n_satisfied=int(n_ok),
        n_pairs=int(n_eval),
        n_total_pairs=int(total),
        exact=bool(exact),
        ci_low=float(low),
        ci_high=float(high),
        confidence_level=confidence_level,
        distance_range=d_range,
        outcome_range=o_range,
        **extra,
    )


def _lipschitz_replicates(
    engine: PairwiseEngine,
    y: NDArray[np.float64],
    n_bootstrap: int,
    random_state: int | np.random.RandomState | None,
    d_scaling: Any,
    o_scaling: Any,
    lipschitz_constant: float,
) -> NDArray[np.float64]:
    """The fraction on each essay-level bootstrap replicate (one pass)."""
    weights = replicate_weights(engine.n_samples, n_bootstrap, bootstrap_seed(random_state))
    condition = LipschitzCondition(y, d_scaling, o_scaling, lipschitz_constant)
    # the scalings of the full sample (see lipschitz_fraction's Notes)
    return replicate_lipschitz_fractions(engine, weights, [condition])[0]


# --------------------------------------------------------------------------
# Score difference against distance
# --------------------------------------------------------------------------
class ScoreDistanceCurve(TableResult):
    """Mean score difference per distance bin (result of :func:`score_distance_curve`).

    Per-bin arrays (one entry per bin, nearest first): ``bin`` (1, 2, ...),
    ``n_pairs``, ``mean_abs_diff``, ``std_abs_diff``, ``sem``,
    ``distance_min``, ``distance_max``, ``n_uncertain`` and
    ``mean_error_bound``. Scalars: ``spearman_rho``, ``spearman_pvalue``,
    ``method`` and ``n_total_pairs``. :meth:`to_frame` gives the per-bin
    arrays as a DataFrame indexed by ``bin``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import score_distance_curve
    >>> X = np.random.RandomState(0).normal(size=(10, 3))
    >>> curve = score_distance_curve(X, np.arange(10.0), n_bins=3)
    >>> curve.n_pairs, curve.method
    (array([15, 15, 15]), 'exact')
    """

    _frame_keys = (
        "n_pairs",
        "mean_abs_diff",
        "std_abs_diff",
        "sem",
        "distance_min",
        "distance_max",
        "n_uncertain",
        "mean_error_bound",
    )
    _frame_index = "bin"


def _trend(means: NDArray[np.float64]) -> tuple[float, float]:
    """Spearman's rho of bin index against ``means`` and its two-sided p-value.

    Exact (all permutations) up to 8 bins, scipy's t approximation beyond.
    """
    from scipy.stats import rankdata, spearmanr

    n = means.shape[0]
    if np.ptp(means) == 0:
        warnings.warn(
            "the mean score difference is the same in every bin, so Spearman's rho "
            "is undefined; it is reported as 0.0 with p-value 1.0",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return 0.0, 1.0
    x = np.arange(n, dtype=np.float64)
    ry = rankdata(means)
    xc, yc = x - x.mean(), ry - ry.mean()
    rho = float(xc @ yc / math.sqrt((xc @ xc) * (yc @ yc)))
    if n <= 8:
        perms = np.array(list(itertools.permutations(range(n))))
        null = yc[perms] @ xc / math.sqrt((xc @ xc) * (yc @ yc))
        pvalue = float(np.mean(np.abs(null) >= abs(rho) - 1e-12))
    else:
        pvalue = float(spearmanr(x, means).pvalue)
    return rho, pvalue


def _bin_sizes(n_items: int, n_bins: int) -> NDArray[np.int64]:
    """Sizes of ``np.array_split(range(n_items), n_bins)``."""
    base, extra = divmod(n_items, n_bins)
    return np.array([base + 1] * extra + [base] * (n_bins - extra), dtype=np.int64)


def _condensed_outcomes(y: NDArray[np.float64]) -> NDArray[np.float64]:
    n = y.shape[0]
    out = np.empty(n * (n - 1) // 2)
    start = 0
    for i in range(n - 1):
        stop = start + n - i - 1
        np.subtract(y[i], y[i + 1 :], out=out[start:stop])
        start = stop
    return np.abs(out, out=out)


def _curve_from_sorted(
    d: NDArray[np.float64],
    o: NDArray[np.float64],
    order: NDArray[np.integer[Any]],
    n_bins: int,
) -> tuple[
    NDArray[np.int64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
]:
    sizes = _bin_sizes(order.shape[0], n_bins)
    edges = np.concatenate([[0], np.cumsum(sizes)])
    mean, std, dmin, dmax = (np.empty(n_bins) for _ in range(4))
    for b in range(n_bins):
        idx = order[edges[b] : edges[b + 1]]
        chunk = o[idx]
        mean[b] = chunk.mean()
        std[b] = chunk.std(ddof=1)
        dmin[b], dmax[b] = d[idx[0]], d[idx[-1]]
    return sizes, mean, std, dmin, dmax


def _curve_histogram(
    engine: PairwiseEngine, y: NDArray[np.float64], n_bins: int, n_fine: int
) -> tuple[
    NDArray[np.int64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.int64],
    NDArray[np.float64],
    int,
]:
    lo, hi, total = engine.map_reduce(MinMaxReducer())
    # with y, the reducer's partial result is (counts, sums, squares)
    counts, sums, squares = cast(
        "tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64]]",
        engine.map_reduce(HistogramReducer(lo, hi, n_fine, y=y)),
    )
    sizes = _bin_sizes(int(total), n_bins)
    edges = np.concatenate([[0], np.cumsum(sizes)])
    cum = np.concatenate([[0], np.cumsum(counts)])
    width = (hi - lo) / n_fine if hi > lo else 0.0
    o_span = float(np.ptp(y))
    with np.errstate(invalid="ignore", divide="ignore"):
        fine_var_sum = np.maximum(squares - sums * sums / np.maximum(counts, 1), 0.0)
    mean, std, dmin, dmax = (np.empty(n_bins) for _ in range(4))
    n_uncertain = np.zeros(n_bins, dtype=np.int64)
    bound = np.zeros(n_bins)
    for b in range(n_bins):
        a, z = edges[b], edges[b + 1]
        f_first = int(np.searchsorted(cum, a, side="right")) - 1
        f_last = int(np.searchsorted(cum, z - 1, side="right")) - 1
        s = q = 0.0
        err = 0.0
        for f in (f_first, f_last) if f_first != f_last else (f_first,):
            c = int(counts[f])
            take = min(int(cum[f + 1]), z) - max(int(cum[f]), a)
            s += sums[f] * take / c
            q += squares[f] * take / c
            if take < c:
                # Which `take` pairs of the fine bin belong here is unknown. The sum
                # of any `take` of them differs from take * mean by at most
                # sqrt(take (c - take) / c * SS) (Cauchy-Schwarz), and by at most
                # take * (score range).
                n_uncertain[b] += take
                err += min(
                    math.sqrt(take * (c - take) / c * fine_var_sum[f]), take * o_span
                )
        if f_last - f_first > 1:
            s += sums[f_first + 1 : f_last].sum()
            q += squares[f_first + 1 : f_last].sum()
        m = int(sizes[b])
        mean[b] = s / m
        std[b] = math.sqrt(max(q - s * s / m, 0.0) / (m - 1))
        bound[b] = err / m
        dmin[b] = max(lo, lo + f_first * width)
        dmax[b] = min(hi, lo + (f_last + 1) * width)
    return sizes, mean, std, dmin, dmax, n_uncertain, bound, int(total)


def score_distance_curve(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    n_bins: int = 5,
    metric: Metric = "cosine",
    method: Literal["auto", "exact", "histogram"] = "auto",
    n_jobs: int | None = None,
    max_pairs: int | None = None,
    random_state: int | np.random.RandomState | None = None,
    block_size: int | None = None,
    n_fine_bins: int = 65536,
) -> ScoreDistanceCurve:
    """Mean score difference of pairs of essays, from the nearest to the farthest.

    The paper's §5.3.3 (Figures 5 and 6): all pairs are sorted by the distance
    of their essays and cut into ``n_bins`` bins of equal size; a fair model
    gives small score differences to near pairs and larger ones to far pairs,
    so the mean ``|y_i - y_j|`` should rise from bin to bin.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Essay representations; or precomputed distances with
        ``metric="precomputed"`` (see :func:`lipschitz_fraction`).
    y_pred : array-like of shape (n_samples,)
        Scores of the essays; differences are reported in these units.
    n_bins : int, default=5
        Number of equal-count bins (at least 2, with at least 2 pairs each).
    metric : str or callable, default="cosine"
        Distance between essays: ``"cosine"``, ``"precomputed"``, a metric name
        of :func:`sklearn.metrics.pairwise_distances`, or a callable on two
        rows (see :func:`lipschitz_fraction`).
    method : {"auto", "exact", "histogram"}, default="auto"
        ``"exact"`` sorts all pairs (about 32 bytes per pair);
        ``"histogram"`` needs no memory per pair (see Notes); ``"auto"`` sorts
        up to 10 million pairs (N of about 4,500) and uses the histogram beyond.
    n_jobs : int, default=None
        Number of joblib workers (see :func:`lipschitz_fraction`).
    max_pairs : int, default=None
        Estimate the curve from that many pairs drawn uniformly with
        replacement (``random_state`` seeds them) instead of all pairs.
    random_state : int, RandomState instance or None, default=None
        Seeds the draw of pairs when ``max_pairs`` is set.
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048).
    n_fine_bins : int, default=65536
        Fine distance bins of the histogram method.

    Returns
    -------
    curve : ScoreDistanceCurve
        Dict-like; per bin ``n_pairs``, ``mean_abs_diff``, ``std_abs_diff``
        (ddof=1), ``sem`` (``std / sqrt(n)``), ``distance_min`` and
        ``distance_max``, ``n_uncertain`` and ``mean_error_bound`` (0 unless
        the histogram method was used); ``spearman_rho`` and
        ``spearman_pvalue`` of bin index against mean difference (two-sided;
        exact over all orderings up to 8 bins, scipy's t approximation beyond);
        ``method`` (``"exact"``, ``"histogram"`` or ``"sampled"``);
        ``n_total_pairs``. ``curve.to_frame()`` returns a DataFrame.

    Warns
    -----
    UndefinedMetricWarning
        When every bin has the same mean (e.g. constant scores): Spearman's rho
        is then reported as 0.0 with p-value 1.0.

    Notes
    -----
    Ties in distance keep the condensed pair order (a stable sort), so the
    exact method gives, bit for bit, ``[c.mean() for c in
    np.array_split(o[np.argsort(d, kind="stable")], n_bins)]`` with ``d`` the
    condensed distances and ``o`` the condensed ``|y_i - y_j|``.

    The histogram method makes two passes: the distance range, then per fine
    bin (``n_fine_bins`` equal-width bins) the count, sum and sum of squares of
    the score differences. Bins are assembled from whole fine bins; a fine bin
    straddling the border of two bins is shared in proportion to the ranks it
    covers there. Only its pairs can be misassigned: ``n_uncertain`` counts
    them, and ``mean_error_bound`` bounds the resulting error of each mean
    (from the spread of the straddling fine bins). Distance ranges are then the
    edges of the fine bins, exact to one fine-bin width.

    With ``max_pairs``, the sampled pairs are sorted as in the exact method;
    the bins, means and ranges are estimates.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import score_distance_curve
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(40, 8))
    >>> y = X[:, 0] * 3 + 10
    >>> curve = score_distance_curve(X, y, n_bins=4)
    >>> curve.n_pairs
    array([195, 195, 195, 195])
    >>> bool(curve.mean_abs_diff[0] < curve.mean_abs_diff[-1])
    True
    >>> curve.spearman_rho
    1.0
    """
    n_bins = check_int(n_bins, "n_bins", minimum=2)
    check_option(method, "method", ("auto", "exact", "histogram"))
    max_pairs = check_int(max_pairs, "max_pairs", minimum=1, allow_none=True)
    n_fine_bins = check_int(n_fine_bins, "n_fine_bins", minimum=1)
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = _scores(y_pred, engine)
    total = engine.n_pairs
    sampled = max_pairs is not None and max_pairs < total
    n_used = cast(int, max_pairs) if sampled else total
    if n_bins > n_used // 2:
        raise ValueError(
            f"n_bins={n_bins} is too many for {n_used} pairs; each bin needs at least "
            f"2 pairs, so use n_bins <= {n_used // 2}"
        )
    n_uncertain = np.zeros(n_bins, dtype=np.int64)
    bound = np.zeros(n_bins)
    if sampled:
        i, j = engine.sample_pairs(cast(int, max_pairs), random_state)
        d = engine.paired_distances(i, j)
        o = np.abs(y[i] - y[j])
        order = np.lexsort((pairs_to_condensed(i, j, engine.n_samples), d))
        sizes, mean, std, dmin, dmax = _curve_from_sorted(d, o, order, n_bins)
        used = "sampled"
    elif method == "exact" or (method == "auto" and total <= _types.EXACT_SORT_MAX_PAIRS):
        d = engine.condensed()
        o = _condensed_outcomes(y)
        order = stable_argsort(d)
        sizes, mean, std, dmin, dmax = _curve_from_sorted(d, o, order, n_bins)
        used = "exact"
    else:
        sizes, mean, std, dmin, dmax, n_uncertain, bound, _ = _curve_histogram(
            engine, y, n_bins, n_fine_bins
        )
        used = "histogram"
    rho, pvalue = _trend(mean)
    return ScoreDistanceCurve(
        bin=np.arange(1, n_bins + 1),
        n_pairs=sizes,
        mean_abs_diff=mean,
        std_abs_diff=std,
        sem=std / np.sqrt(sizes),
        distance_min=dmin,
        distance_max=dmax,
        n_uncertain=n_uncertain,
        mean_error_bound=bound,
        spearman_rho=rho,
        spearman_pvalue=pvalue,
        method=used,
        n_total_pairs=int(total),
    )


# --------------------------------------------------------------------------
# Extreme pairs
# --------------------------------------------------------------------------
class ExtremePairs(TableResult):
    """Nearest and farthest pairs (result of :func:`extreme_pairs`).

    ``result.nearest`` and ``result.farthest`` are Bunches of arrays ``i``,
    ``j`` (``i < j``) and ``distance``, ranked from the most extreme.
    :meth:`to_frame` stacks them with columns ``kind``, ``rank``, ``i``, ``j``
    and ``distance``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import extreme_pairs
    >>> pairs = extreme_pairs(np.array([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0]]), k=2)
    >>> pairs.nearest.j.tolist(), pairs.farthest.j.tolist()
    ([1, 2], [2, 2])
    """

    def to_frame(self) -> pd.DataFrame:
        """The pairs as a :class:`pandas.DataFrame` (needs pandas)."""
        from ..resources import require

        pd = require("pandas", purpose="DataFrame output")
        parts = []
        for kind in ("nearest", "farthest"):
            part = self[kind]
            parts.append(
                pd.DataFrame(
                    {
                        "kind": kind,
                        "rank": np.arange(1, len(part.i) + 1),
                        "i": part.i,
                        "j": part.j,
                        "distance": part.distance,
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)


def extreme_pairs(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    *,
    k: int = 1,
    metric: Metric = "cosine",
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> ExtremePairs:
    """The ``k`` most similar and ``k`` most dissimilar pairs of essays.

    The paper's "extreme cases" (§3 step 3b, §5.1.2): a quick look at whether
    the representation puts alike essays close and unlike ones far apart.
    Found in one pass over the blocks of pairs, with ``O(k)`` memory per block.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Essay representations; or precomputed distances with
        ``metric="precomputed"``.
    k : int, default=1
        Number of pairs of each kind (at most the number of pairs).
    metric : str or callable, default="cosine"
        Distance between essays: ``"cosine"``, ``"precomputed"``, a metric name
        of :func:`sklearn.metrics.pairwise_distances`, or a callable on two
        rows (see :func:`lipschitz_fraction`).
    n_jobs : int, default=None
        Number of joblib workers.
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048).

    Returns
    -------
    pairs : ExtremePairs
        Dict-like with ``nearest`` (increasing distance) and ``farthest``
        (decreasing distance), each a Bunch of arrays ``i``, ``j`` (``i < j``)
        and ``distance``. Ties are broken by the lowest ``(i, j)`` for both.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import extreme_pairs
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.2]])
    >>> pairs = extreme_pairs(X)
    >>> int(pairs.nearest.i[0]), int(pairs.nearest.j[0])
    (0, 1)
    >>> int(pairs.farthest.i[0]), int(pairs.farthest.j[0])
    (0, 3)
    """
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    k = check_int(k, "k", minimum=1)
    if k > engine.n_pairs:
        raise ValueError(
            f"k={k} is larger than the number of pairs ({engine.n_pairs}) of "
            f"{engine.n_samples} essays"
        )
    near, far = engine.map_reduce(TopKReducer(k, engine.n_samples, farthest_ties="low"))
    return ExtremePairs(
        nearest=Bunch(i=near[1], j=near[2], distance=near[0]),
        farthest=Bunch(i=far[1], j=far[2], distance=far[0]),
    )


# --------------------------------------------------------------------------
# Feature differences of near, median and far pairs
# --------------------------------------------------------------------------
class FeatureDifferenceProfile(TableResult):
    """Mean feature differences of near, median and far pairs.

    Result of :func:`feature_difference_profile`. Keys: ``group`` (the row
    labels ``"nearest"``, ``"median"``, ``"farthest"``), ``feature_names``,
    ``mean_abs_diff`` (array of shape (3, n_features)), ``n_pairs``,
    ``distance_min`` and ``distance_max`` (per group). :meth:`to_frame` gives
    a 3 x n_features DataFrame indexed by group.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import feature_difference_profile
    >>> X = np.random.RandomState(0).normal(size=(10, 3))
    >>> profile = feature_difference_profile(X, X[:, :1], n_pairs=5)
    >>> profile.group.tolist(), profile.mean_abs_diff.shape
    (['nearest', 'median', 'farthest'], (3, 1))
    """

    def to_frame(self) -> pd.DataFrame:
        """The 3 x n_features table as a :class:`pandas.DataFrame` (needs pandas)."""
        from ..resources import require

        pd = require("pandas", purpose="DataFrame output")
        frame = pd.DataFrame(
            self.mean_abs_diff,
            index=pd.Index(self.group, name="group"),
            columns=list(self.feature_names),
        )
        return frame


def _feature_names(
    F: object, feature_names: ArrayLike | None, n_features: int
) -> NDArray[np.object_]:
    if feature_names is None:
        columns = getattr(F, "columns", None)
        if columns is not None:
            return np.asarray([str(c) for c in columns], dtype=object)
        return np.asarray([f"x{c}" for c in range(n_features)], dtype=object)
    names = np.asarray(feature_names, dtype=object)
    if names.ndim != 1 or names.shape[0] != n_features:
        raise ValueError(
            f"feature_names has {names.size} entries but F has {n_features} columns; "
            f"give one name per column"
        )
    return names


def feature_difference_profile(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    F: ArrayLike | pd.DataFrame,
    *,
    n_pairs: int = 10000,
    metric: Metric = "cosine",
    feature_names: ArrayLike | None = None,
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> FeatureDifferenceProfile:
    """Mean difference of interpretable features for near, median and far pairs.

    The paper's "aggregate of feature differences" (§3 step 3c, §5.1.3,
    Figure 2): if the distance of a representation captures what makes essays
    alike, then the ``n_pairs`` nearest pairs should differ least in
    interpretable features (length, spelling errors, ...), the ``n_pairs``
    around the median distance more, and the ``n_pairs`` farthest pairs most.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features_X)
        Essay representations; or precomputed distances with
        ``metric="precomputed"``.
    F : array-like of shape (n_samples, n_features)
        Interpretable features of the essays (a DataFrame's column names are
        used as feature names). Each column is min-max scaled to ``[0, 1]``
        over the essays; a constant column has difference 0 for every pair.
    n_pairs : int, default=10000
        Pairs per group (at most the number of pairs; groups may overlap when
        ``3 * n_pairs`` exceeds it).
    metric : str or callable, default="cosine"
        Distance between essays: ``"cosine"``, ``"precomputed"``, a metric name
        of :func:`sklearn.metrics.pairwise_distances`, or a callable on two
        rows (see :func:`lipschitz_fraction`).
    feature_names : array-like of str, default=None
        Names of the columns of ``F``; default: the DataFrame's columns, else
        ``x0, x1, ...``.
    n_jobs : int, default=None
        Number of joblib workers.
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048).

    Returns
    -------
    profile : FeatureDifferenceProfile
        Dict-like with ``mean_abs_diff`` of shape (3, n_features), rows
        ``group = ["nearest", "median", "farthest"]``, and per group
        ``n_pairs``, ``distance_min``, ``distance_max``; ``to_frame()`` gives
        the 3 x n_features table.

    Notes
    -----
    With ``T`` pairs sorted by distance (ties in condensed pair order), the
    groups are ranks ``[0, n)``, ``[T//2 - n//2, T//2 - n//2 + n)`` (half
    below the median, half above) and ``[T - n, T)``. Up to 10 million pairs
    they are found by sorting; beyond, by histogram and selection passes over
    the blocks of pairs, which need memory for about ``n_pairs`` pairs, not
    ``N x N``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import feature_difference_profile
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(30, 5))
    >>> F = np.c_[X[:, 0], rng.normal(size=30)]
    >>> profile = feature_difference_profile(X, F, n_pairs=20)
    >>> profile.mean_abs_diff.shape
    (3, 2)
    >>> bool(profile.mean_abs_diff[0, 0] < profile.mean_abs_diff[2, 0])
    True
    """
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    total = engine.n_pairs
    n = check_int(n_pairs, "n_pairs", minimum=1)
    if n > total:
        raise ValueError(
            f"n_pairs={n} is larger than the number of pairs ({total}) of "
            f"{engine.n_samples} essays; pass n_pairs <= {total}"
        )
    names = None
    if hasattr(F, "columns"):
        names = _feature_names(F, feature_names, len(F.columns))
    F_arr = check_embeddings(F, name="F", min_samples=2, accept_sparse=False)
    if F_arr.shape[0] != engine.n_samples:
        raise ValueError(
            f"F has {F_arr.shape[0]} rows but X describes {engine.n_samples} essays; "
            f"they must describe the same essays in the same order"
        )
    if names is None:
        names = _feature_names(F, feature_names, F_arr.shape[1])
    f_min, f_max = F_arr.min(axis=0), F_arr.max(axis=0)
    span = f_max - f_min
    F_norm = np.divide(F_arr - f_min, span, out=np.zeros_like(F_arr), where=span > 0)
    middle = total // 2 - n // 2
    windows = [(0, n), (middle, middle + n), (total - n, total)]
    selected = select_rank_windows(engine, windows)
    means = np.empty((3, F_arr.shape[1]))
    dmin, dmax = np.empty(3), np.empty(3)
    step = max(1, 2**22 // max(F_arr.shape[1], 1))
    for g, (d, i, j) in enumerate(selected):
        acc = np.zeros(F_arr.shape[1])
        for s in range(0, i.shape[0], step):
            a, b = i[s : s + step], j[s : s + step]
            acc += np.abs(F_norm[a] - F_norm[b]).sum(axis=0)
        means[g] = acc / i.shape[0]
        dmin[g], dmax[g] = d[0], d[-1]
    return FeatureDifferenceProfile(
        group=np.array(["nearest", "median", "farthest"], dtype=object),
        feature_names=names,
        mean_abs_diff=means,
        n_pairs=np.full(3, n, dtype=np.int64),
        distance_min=dmin,
        distance_max=dmax,
    )
