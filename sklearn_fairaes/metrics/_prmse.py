"""PRMSE: the proportional reduction in mean squared error for the true score.

The human score an essay received is itself a noisy measurement; with two
(or more) raters per essay, their disagreement estimates the rater error
variance, and from it the variance of the essays' *true* scores (classical
test theory). PRMSE (Loukina et al. 2020) is ``1 - MSE_true / Var(true)``:
the share of the true-score variance a system's scores explain, which,
unlike QWK or Pearson's r with one rater, does not drop because the human
score it is compared with is unreliable. The definition is RSMTool's
(``rsmtool.utils.prmse.prmse_true``); ``tests/rsmtool_reference`` records
its values and ``tests/test_agreement.py`` compares them.
"""

from __future__ import annotations

import numbers
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .._validation import check_scores
from ..exceptions import UndefinedMetricWarning

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["prmse"]


def _check_ratings(y_true: ArrayLike, n_samples: int) -> NDArray[np.float64]:
    """The rater matrix as float (n, k); NaN marks a missing rating, nothing else."""
    try:
        ratings = np.asarray(y_true, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "y_true must be a numeric rater matrix of shape (n_samples, n_raters), "
            "with NaN for a missing rating"
        ) from None
    if ratings.ndim != 2:
        raise ValueError(
            f"y_true must be a rater matrix of shape (n_samples, n_raters), one column "
            f"per rater, got an array of shape {ratings.shape}; stack the raters' "
            f"scores, e.g. numpy.column_stack([rater1, rater2])"
        )
    if ratings.shape[0] != n_samples:
        raise ValueError(
            f"y_true has {ratings.shape[0]} rows but y_pred {n_samples} scores; give "
            f"one row of ratings per essay, in the same order"
        )
    if np.isinf(ratings).any():
        i, j = np.argwhere(np.isinf(ratings))[0]
        raise ValueError(
            f"y_true holds an infinite rating at row {i}, rater {j}; ratings must be "
            f"finite (NaN marks a missing one)"
        )
    empty = np.isnan(ratings).all(axis=1)
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise ValueError(
            f"y_true has no rating at all in row {i} ({int(empty.sum())} such row(s)); "
            f"drop those essays"
        )
    return ratings


def prmse(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    rater_error_variance: float | None = None,
    sample_weight: ArrayLike | None = None,
) -> float:
    """Proportional reduction in mean squared error for the true score (PRMSE).

    RSMTool's ``prmse_true`` (Loukina et al. 2020). With ``n_i`` ratings of
    essay ``i`` (mean ``h_i``), ``N`` essays, ``M = sum(n_i)`` ratings and
    ``mu`` the mean of all ratings:

    * rater error variance ``V_e``: the within-essay variances of the
      essays with two or more ratings (``ddof=1``), averaged with weights
      ``n_i - 1``;
    * true-score variance
      ``V_T = (sum(n_i * (h_i - mu) ** 2) - (N - 1) * V_e) / (M - sum(n_i ** 2) / M)``;
    * ``MSE_true = (sum(n_i * (h_i - y_pred_i) ** 2) - N * V_e) / M``;
    * ``PRMSE = 1 - MSE_true / V_T``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples, n_raters)
        The human ratings, one column per rater, NaN where an essay was not
        rated by that rater (every essay needs at least one rating, and
        unless ``rater_error_variance`` is given some essays need two).
    y_pred : array-like of shape (n_samples,)
        The system's scores.
    rater_error_variance : float, default=None
        The rater error variance ``V_e`` when known from elsewhere (e.g. a
        larger double-scored sample); None estimates it from ``y_true``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of each essay; an integer weight counts as that
        many copies of the essay (the bootstrap's multiplicities).

    Returns
    -------
    prmse : float
        1 for a system predicting the true score exactly, 0 for one no
        better than the mean; an estimate, so it can exceed 1 on a small
        sample, and be negative. NaN, with an
        :class:`~sklearn_fairaes.exceptions.UndefinedMetricWarning`, when the
        estimated true-score variance is not positive (the raters disagree
        as much as the essays differ).

    Raises
    ------
    ValueError
        If ``y_true`` is not two-dimensional, has a row without ratings or an
        infinite rating, does not match ``y_pred`` in length, or no essay has
        two ratings and ``rater_error_variance`` is not given.

    See Also
    --------
    qwk : Agreement with the (observed) human score.

    References
    ----------
    .. [1] A. Loukina, N. Madnani, A. Cahill, L. Yao, M. S. Johnson, B. Riordan
       and D. F. McCaffrey, "Using PRMSE to evaluate automated scoring systems
       in the presence of label noise", BEA workshop, ACL 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import prmse
    >>> raters = np.array([[1, 2], [2, 2], [3, 4], [4, 4], [5, 4], [2, 3], [3, 2], [1, 1]])
    >>> system = np.array([2.0, 2.5, 3.0, 3.6, 4.0, 2.8, 3.1, 1.9])
    >>> round(prmse(raters, system), 4)
    0.8908

    A missing rating is NaN; the essay then counts with its one rating:

    >>> raters = raters.astype(float)
    >>> raters[1, 1] = np.nan
    >>> round(prmse(raters, system), 4)
    0.9158
    """
    pred = check_scores(y_pred, name="y_pred", min_samples=2)
    ratings = _check_ratings(y_true, pred.shape[0])
    w = np.ones(pred.shape[0])
    if sample_weight is not None:
        w = check_scores(sample_weight, name="sample_weight", n_samples=pred.shape[0])
        if (w < 0).any() or w.sum() == 0:
            raise ValueError(
                "sample_weight must be non-negative and not all zero, got "
                f"min {w.min():g}, sum {w.sum():g}"
            )
    counts = (~np.isnan(ratings)).sum(axis=1).astype(np.float64)
    means = np.nanmean(ratings, axis=1)
    if rater_error_variance is None:
        several = (counts > 1) & (w > 0)
        if not several.any():
            raise ValueError(
                "PRMSE needs the rater error variance: give at least some essays two "
                "ratings (a second column of y_true), or pass rater_error_variance"
            )
        within = np.nanvar(ratings[several], ddof=1, axis=1)
        v_error = float(np.average(within, weights=(counts[several] - 1) * w[several]))
    else:
        if (
            not isinstance(rater_error_variance, numbers.Real)
            or isinstance(rater_error_variance, bool)
            or not np.isfinite(rater_error_variance)
            or rater_error_variance < 0
        ):
            raise ValueError(
                f"rater_error_variance must be a finite number >= 0, got "
                f"{rater_error_variance!r}"
            )
        v_error = float(rater_error_variance)
    n_essays = w.sum()
    n_ratings = np.sum(w * counts)
    grand_mean = np.sum(w * counts * means) / n_ratings
    spread = np.sum(w * counts * (means - grand_mean) ** 2)
    v_true = (spread - (n_essays - 1) * v_error) / (
        n_ratings - np.sum(w * counts**2) / n_ratings
    )
    if not v_true > 0:
        warnings.warn(
            f"PRMSE is undefined: the estimated true-score variance is {v_true:.3g} "
            f"(the raters disagree as much as the essays differ); returning NaN",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        return float("nan")
    mse = (np.sum(w * counts * (means - pred) ** 2) - n_essays * v_error) / n_ratings
    return float(1.0 - mse / v_true)
