"""Agreement between human and machine scores (paper, Section 4.3).

The paper judges a scoring model by the three criteria of Williamson, Xi and
Breyer (2012): quadratic weighted kappa (QWK) with the human score, the
degradation of that QWK from the human-human QWK, and the standardized mean
difference (SMD) between machine and human scores.

Conventions of this module
--------------------------
* Every metric has scikit-learn's form ``metric(y_true, y_pred, *, ...)`` and
  returns a Python ``float``: ``y_true`` is the human (reference) score,
  ``y_pred`` the machine score. Rates are fractions, never percentages.
* Signed differences are machine minus human, as in RSMTool.
* An undefined value (zero expected disagreement, zero standard deviation)
  emits :class:`~sklearn_fairaes.exceptions.UndefinedMetricWarning` and returns
  the documented value (NaN unless stated), never ``None``.
* Each metric gives the same number as RSMTool (ETS's scoring-evaluation
  package) on the same input; ``tests/rsmtool_reference`` records RSMTool's
  values and the tests compare against them.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from .._validation import check_same_length, check_score_range, check_scores
from ..exceptions import UndefinedMetricWarning
from ..resources import require
from ._bootstrap import (
    bootstrap_result,
    bootstrap_seed,
    check_n_bootstrap,
    kappa_replicates,
    replicate_weights,
    smd_replicates,
)

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import ArrayLike, NDArray
    from sklearn.utils import Bunch

    Rounding = Literal["round", "truncate"] | None
    SMDMethod = Literal["johnson", "pooled", "unpooled", "williamson"]

__all__ = [
    "agreement_rate",
    "agreement_report",
    "difference_of_standardized_means",
    "mean_qwk",
    "qwk",
    "qwk_degradation",
    "standardized_mean_difference",
]

_ROUNDINGS = ("round", "truncate", None)
_SMD_METHODS = ("johnson", "pooled", "unpooled", "williamson")

#: Acceptance thresholds of Williamson, Xi and Breyer (2012), as the paper uses them.
WILLIAMSON_THRESHOLDS = {"qwk": 0.70, "degradation": 0.10, "abs_smd": 0.15}

#: How far past the ends of a declared scale a continuous prediction may lie
#: before it is trimmed: RSMTool's ``trim`` tolerance, so that after rounding
#: every prediction lands on the scale's own end points.
TRIM_TOLERANCE = 0.4998


# --------------------------------------------------------------------------- helpers


def _check_pair(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    min_samples: int = 2,
    names: tuple[str, str] = ("y_true", "y_pred"),
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate two score vectors describing the same essays."""
    a = check_scores(y_true, name=names[0], min_samples=min_samples)
    b = check_scores(y_pred, name=names[1], min_samples=min_samples)
    check_same_length(**{names[0]: a, names[1]: b})
    return a, b


def _check_rounding(rounding: object) -> None:
    if rounding not in _ROUNDINGS:
        raise ValueError(
            f"rounding must be one of 'round', 'truncate' or None, got {rounding!r}"
        )


def _first_bad(mask: NDArray[np.bool_]) -> int:
    return int(np.flatnonzero(mask)[0])


def _check_integer_valued(
    values: NDArray[np.float64], name: str, rounding: Rounding
) -> None:
    bad = values != np.rint(values)
    if bad.any():
        i = _first_bad(bad)
        raise ValueError(
            f"{name} holds non-integer scores ({float(values[i])!r} at position {i}); "
            f"rounding={rounding!r} compares integer score points. Pass rounding=None "
            f"for the continuous QWK, or rescale a half-point scale (e.g. multiply by 2)"
        )


def _check_labels(labels: ArrayLike, rounding: Rounding) -> NDArray[np.float64]:
    if rounding is None:
        raise ValueError(
            "labels is only used to round and clip predictions onto a score scale; "
            "with rounding=None the continuous QWK uses the scores as given. Drop "
            "labels, or pass rounding='round'"
        )
    scale = check_scores(labels, name="labels", min_samples=1)
    _check_integer_valued(scale, "labels", rounding)
    return np.unique(scale)


def _check_on_scale(
    values: NDArray[np.float64], scale: NDArray[np.float64], name: str, hint: str
) -> NDArray[np.float64]:
    pos = np.searchsorted(scale, values)
    found = scale[np.minimum(pos, scale.shape[0] - 1)] == values
    if not found.all():
        i = _first_bad(~found)
        raise ValueError(
            f"{name} has the score {values[i]:g} at position {i}, which is not on the "
            f"score scale {_describe_scale(scale)}; {hint}"
        )
    return pos.astype(np.float64)


def _describe_scale(scale: NDArray[np.float64]) -> str:
    if scale.shape[0] > 8:
        return f"[{scale[0]:g}, {scale[1]:g}, ..., {scale[-1]:g}]"
    return "[" + ", ".join(f"{v:g}" for v in scale) + "]"


def _check_scale(score_range: object, labels: object) -> tuple[float, float] | None:
    """Validate ``score_range`` (None stays None); refuse it together with ``labels``."""
    if score_range is None:
        return None
    if labels is not None:
        raise ValueError(
            "pass labels or score_range, not both: score_range=(low, high) means "
            "labels=numpy.arange(low, high + 1) with the predictions trimmed to the "
            "scale first"
        )
    return check_score_range(score_range)


def _trim_to_scale(
    y_pred: NDArray[np.float64], score_range: tuple[float, float]
) -> NDArray[np.float64]:
    """Trim predictions to ``[low - TRIM_TOLERANCE, high + TRIM_TOLERANCE]``.

    RSMTool's ``trim``: a continuous prediction far outside the scale (a
    regression's 9.7 on a 0-6 scale) counts as the scale's end, and rounding
    the trimmed value can never leave the scale.
    """
    low, high = score_range
    return np.clip(y_pred, low - TRIM_TOLERANCE, high + TRIM_TOLERANCE)


def _check_within(
    y_true: NDArray[np.float64], score_range: tuple[float, float], name: str = "y_true"
) -> None:
    """Refuse a human score outside the declared scale (it is a data error)."""
    low, high = score_range
    outside = (y_true < low) | (y_true > high)
    if outside.any():
        i = _first_bad(outside)
        raise ValueError(
            f"{name} has the score {y_true[i]:g} at position {i}, outside "
            f"score_range=({low:g}, {high:g}) ({int(outside.sum())} such score(s)); "
            f"correct the score, or declare the scale the human scores use"
        )


def _on_scale(
    y_true: NDArray[np.float64],
    y_pred: NDArray[np.float64],
    labels: ArrayLike | None,
    score_range: tuple[float, float] | None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], ArrayLike | None]:
    """With a declared scale: check ``y_true``, trim ``y_pred``, give its labels."""
    if score_range is None:
        return y_true, y_pred, labels
    _check_within(y_true, score_range)
    low, high = score_range
    return y_true, _trim_to_scale(y_pred, score_range), np.arange(low, high + 1)


def _score_points(
    y_true: NDArray[np.float64],
    y_pred: NDArray[np.float64],
    labels: ArrayLike | None,
    rounding: Rounding,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Map both score vectors to positions on the score scale.

    Returns two float arrays of positions (0 = lowest score point), so that a
    quadratic weight of ``(i - j) ** 2`` treats score points as equally spaced
    whether or not every point occurs in the data.
    """
    if rounding == "truncate":
        # The Kaggle function casts both raters to int: truncation toward zero.
        y_true = np.trunc(y_true)
        y_pred = np.trunc(y_pred)
    else:
        _check_integer_valued(y_true, "y_true", rounding)
        y_pred = np.rint(y_pred)  # half to even, as numpy's rint and RSMTool
    if labels is None:
        low, high = y_true.min(), y_true.max()
        if rounding == "truncate":
            # The Kaggle function takes the rating range from both raters and
            # never clips.
            low, high = min(low, y_pred.min()), max(high, y_pred.max())
        return y_true - low, np.clip(y_pred, low, high) - low
    scale = _check_labels(labels, rounding)
    y_pred = np.clip(y_pred, scale[0], scale[-1])
    pos_true = _check_on_scale(
        y_true, scale, "y_true", "add it to labels or correct the score"
    )
    pos_pred = _check_on_scale(
        y_pred,
        scale,
        "y_pred (after rounding and clipping)",
        "labels with gaps cannot hold every rounded prediction; list every score point",
    )
    return pos_true, pos_pred


def _check_sample_weight(
    sample_weight: ArrayLike | None, n_samples: int
) -> NDArray[np.float64] | None:
    """Non-negative weights, one per essay, not all zero (None stays None)."""
    if sample_weight is None:
        return None
    w = check_scores(sample_weight, name="sample_weight", n_samples=n_samples)
    negative = w < 0
    if negative.any():
        i = _first_bad(negative)
        raise ValueError(
            f"sample_weight must be non-negative; the weight at position {i} is "
            f"{float(w[i])!r}"
        )
    if w.sum() == 0:
        raise ValueError("sample_weight is all zeros; give at least one essay a weight")
    return w


def _weighted_var(
    x: NDArray[np.float64], w: NDArray[np.float64] | None, ddof: int
) -> np.floating[Any]:
    """Variance with divisor ``n - ddof``; with weights, frequency weights:
    ``sum(w * (x - mean_w) ** 2) / (sum(w) - ddof)``, which equals the
    unweighted variance of ``x`` with each value repeated ``w`` times."""
    if w is None:
        return np.var(x, ddof=ddof)
    total = w.sum()
    if total <= ddof:
        raise ValueError(
            f"ddof={ddof} needs the weights to sum to more than {ddof}, got {total:g}"
        )
    mean = np.average(x, weights=w)
    return np.sum(w * (x - mean) ** 2) / (total - ddof)


def _check_replace_undefined_by(value: object) -> float:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        if np.isnan(number) or -1.0 <= number <= 1.0:
            return number
    raise ValueError(
        f"replace_undefined_by must be np.nan or a number in [-1, 1], got {value!r}"
    )


def _kappa(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    replace_undefined_by: float,
    context: str,
    w: NDArray[np.float64] | None = None,
) -> float:
    """Quadratic kappa of two vectors: 2 Cov / (Var a + Var b + (mean diff)^2).

    Population moments (ddof=0), so that on score points it equals Cohen's
    quadratically weighted kappa exactly (Haberman 2019). With weights the
    moments are weighted, which equals Cohen's kappa of the weighted
    confusion matrix (``cohen_kappa_score(sample_weight=w)``).
    """
    if w is not None:
        keep = w > 0  # a zero weight removes the essay
        a, b, w = a[keep], b[keep], w[keep]
    if np.ptp(a) == 0 and np.ptp(b) == 0 and a[0] == b[0]:
        warnings.warn(
            f"QWK is undefined: {context} give every essay one and the same score, "
            f"so there is no expected disagreement; returning "
            f"replace_undefined_by={replace_undefined_by!r}",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return float(replace_undefined_by)
    # Kappa is invariant to a common shift and scale of both vectors; putting
    # them on a unit range keeps tiny (subnormal) or huge scores from
    # underflowing or overflowing the moments.
    centre = (a.mean() + b.mean()) / 2
    scale = max(np.abs(a - centre).max(), np.abs(b - centre).max())
    a, b = (a - centre) / scale, (b - centre) / scale
    ma, mb = np.average(a, weights=w), np.average(b, weights=w)
    da, db = a - ma, b - mb
    cov = np.average(da * db, weights=w)
    denominator = (
        np.average(da * da, weights=w) + np.average(db * db, weights=w) + (ma - mb) ** 2
    )
    return float(2.0 * cov / denominator)


# --------------------------------------------------------------------------- QWK


def qwk(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    labels: ArrayLike | None = None,
    score_range: tuple[float, float] | None = None,
    rounding: Rounding = "round",
    replace_undefined_by: float = np.nan,
    sample_weight: ArrayLike | None = None,
    n_bootstrap: int | None = None,
    random_state: int | np.random.RandomState | None = None,
    confidence_level: float = 0.95,
) -> float | Bunch:
    """Quadratic weighted kappa between human and machine scores.

    The agreement measure of the paper (Section 4.3) and of Williamson et al.
    (2012). Three ways to treat real-valued predictions are offered:

    * ``rounding="round"`` (default): predictions are rounded to the nearest
      integer, halves to even (``numpy.rint``, as RSMTool's
      ``raw_trim_round``), then clipped to the score scale. This equals
      RSMTool's QWK on its trimmed-and-rounded predictions.
    * ``rounding="truncate"``: reproduces the Kaggle function used by the
      paper's code, which casts both score vectors to ``int`` (truncation
      toward zero), takes the rating range from both vectors and never clips.
    * ``rounding=None``: the continuous QWK of Haberman (2019) that RSMTool
      reports for real-valued scores,
      ``2 Cov(H, M) / (Var H + Var M + (mean M - mean H) ** 2)`` with
      population moments (``ddof=0``, RSMTool's default). On integer scores
      it equals the discrete QWK.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Human (reference) scores. Integer-valued unless ``rounding`` is
        ``"truncate"`` or None.
    y_pred : array-like of shape (n_samples,)
        Machine scores, integer or real-valued.
    labels : array-like of int, default=None
        The score scale, as ordered, equally spaced score points (the weight
        of a disagreement is the squared difference of the points' positions,
        as in scikit-learn's ``cohen_kappa_score``). When None, every integer
        from ``min(y_true)`` to ``max(y_true)``, so that two scores stay two
        points apart even when the score between them never occurs (which
        ``cohen_kappa_score`` without ``labels`` gets wrong). Not allowed with
        ``rounding=None``, nor with ``score_range``.
    score_range : tuple of two int, default=None
        The rubric's score scale ``(low, high)``, both ends included: the
        same as ``labels=numpy.arange(low, high + 1)``, and the predictions
        are first trimmed to ``[low - 0.4998, high + 0.4998]`` as RSMTool
        does (``TRIM_TOLERANCE``), so a prediction far off the scale counts
        as its end point. With ``rounding=None`` the continuous QWK is taken
        of the trimmed predictions. Declare it whenever the rubric is known:
        without it the scale is the human scores' observed range, and a
        model scoring 0 and 6 on a 0-6 scale where the humans used only 2 to
        4 is clipped to 2 and 4 and looks perfect. A human score outside the
        range is refused.
    rounding : {"round", "truncate"} or None, default="round"
        How real-valued scores are mapped onto the scale (see above).
    replace_undefined_by : np.nan or float in [-1, 1], default=np.nan
        Returned, with an :class:`~sklearn_fairaes.exceptions.UndefinedMetricWarning`,
        when both score vectors give one and the same score to every essay
        (no expected disagreement; this includes a one-point scale).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of each essay (not all zero), as in
        ``cohen_kappa_score``: the moments are weighted, so an integer weight
        counts as that many copies of the essay. The score scale still comes
        from every essay.
    n_bootstrap : int, default=None
        An int ``B``: return a Bunch with the percentile interval of ``B``
        essay-level bootstrap replicates (see Notes).
    random_state : int, RandomState instance or None, default=None
        Seeds the replicates (an int makes them reproducible).
    confidence_level : float, default=0.95
        Level of the bootstrap interval.

    Returns
    -------
    kappa : float
        In [-1, 1]; 1 is perfect agreement, 0 chance agreement.
    result : Bunch
        Only with ``n_bootstrap``: ``qwk`` (the kappa), ``ci_low``,
        ``ci_high``, ``replicates`` (shape ``(n_bootstrap,)``; NaN, or
        ``replace_undefined_by``, on a replicate whose essays all have one
        same score), ``confidence_level`` and ``n_bootstrap``.

    Raises
    ------
    ValueError
        On inputs of different lengths, fewer than 2 essays, NaN or infinity,
        non-integer ``y_true`` or ``labels`` with ``rounding="round"``, a
        ``y_true`` score outside ``labels`` or ``score_range``, ``labels`` with
        ``rounding=None``, or both ``labels`` and ``score_range``.

    See Also
    --------
    sklearn.metrics.cohen_kappa_score : Equal on integer scores when passed
        ``labels=scale, weights="quadratic"``.
    mean_qwk : Fisher-z average of QWKs across prompts.

    Notes
    -----
    On score points, Cohen's quadratically weighted kappa
    ``1 - sum(w * O) / sum(w * E)`` with ``w_ij = (i - j) ** 2`` reduces to
    the continuous formula applied to the points' positions; this module
    computes it that way, which needs no confusion matrix.

    With ``n_bootstrap``, replicate ``b`` draws ``n`` essays with replacement
    (essay ``i`` ``w[b, i]`` times) and the kappa is that of
    ``sample_weight=w[b]`` (times ``sample_weight`` when given); the score
    scale and the rounding stay those of the full sample. All replicates come
    from a few ``(B, n)`` array operations, not ``B`` calls.

    References
    ----------
    .. [1] J. Cohen, "Weighted kappa: nominal scale agreement provision for
       scaled disagreement or partial credit", Psychological Bulletin 70(4),
       1968.
    .. [2] S. J. Haberman, "Measures of agreement versus measures of
       prediction accuracy", ETS Research Report RR-19-20, 2019.
    .. [3] D. M. Williamson, X. Xi and F. J. Breyer, "A framework for
       evaluation and use of automated scoring", Educational Measurement:
       Issues and Practice 31(1), 2012.

    Examples
    --------
    >>> from sklearn_fairaes.metrics import qwk
    >>> y_true = [1, 2, 3, 4, 4]
    >>> round(qwk(y_true, [1, 2, 4, 4, 3]), 4)
    0.8529

    Halves round to even (2.5 -> 2, 3.5 -> 4) and 4.9 -> 5 is clipped to 4:

    >>> round(qwk(y_true, [1.4, 2.5, 3.5, 4.9, 3.6]), 4)
    0.9333
    >>> round(qwk(y_true, [1.4, 2.5, 3.5, 4.9, 3.6], rounding=None), 4)
    0.8867

    A declared scale: the humans used 2 to 4 of a 0-6 rubric, and a model
    that scores 0 and 6 is no longer clipped into their range:

    >>> round(qwk([2, 3, 4, 3], [0, 3, 6, 3]), 4)
    1.0
    >>> round(qwk([2, 3, 4, 3], [0, 3, 6, 3], score_range=(0, 6)), 4)
    0.6
    >>> r = qwk([1, 2, 3, 4, 4, 2, 3, 1], [1, 2, 4, 4, 3, 2, 3, 2],
    ...         n_bootstrap=500, random_state=0)
    >>> round(r.qwk, 4), bool(r.ci_low <= r.qwk <= r.ci_high), r.replicates.shape
    (0.8333, True, (500,))
    """
    _check_rounding(rounding)
    replace_undefined_by = _check_replace_undefined_by(replace_undefined_by)
    a, b = _check_pair(y_true, y_pred)
    w = _check_sample_weight(sample_weight, a.shape[0])
    scale = _check_scale(score_range, labels)
    n_bootstrap = check_n_bootstrap(n_bootstrap, confidence_level)
    context = "y_true and y_pred"
    if rounding is None:
        if labels is not None:
            _check_labels(labels, rounding)
        if scale is not None:
            _check_within(a, scale)
            b = _trim_to_scale(b, scale)
    else:
        a, b, labels = _on_scale(a, b, labels, scale)
        a, b = _score_points(a, b, labels, rounding)
        context = "y_true and the rounded y_pred"
    kappa = _kappa(a, b, replace_undefined_by, context, w)
    if n_bootstrap is None:
        return kappa
    weights = replicate_weights(a.shape[0], n_bootstrap, bootstrap_seed(random_state))
    if w is not None:
        weights = weights * w
    reps = kappa_replicates(a, b, weights, replace_undefined_by)
    return bootstrap_result("qwk", kappa, reps, confidence_level)


def mean_qwk(kappas: ArrayLike, weights: ArrayLike | None = None) -> float:
    """Average QWKs across prompts with Fisher's z transformation.

    As the ASAP competition (Kaggle, 2012) did: each kappa is clipped to
    [-0.999, 0.999], transformed with ``z = arctanh(kappa)``, the (weighted)
    mean of ``z`` is taken and transformed back with ``tanh``.

    Parameters
    ----------
    kappas : array-like of shape (n_prompts,)
        One QWK per prompt, each in [-1, 1].
    weights : array-like of shape (n_prompts,), default=None
        Non-negative weights, not all zero; equal weights when None.

    Returns
    -------
    kappa : float
        The mean QWK, in [-0.999, 0.999].

    Examples
    --------
    >>> from sklearn_fairaes.metrics import mean_qwk
    >>> round(mean_qwk([0.7, 0.8]), 4)
    0.7543
    >>> round(mean_qwk([0.7, 0.8], weights=[1, 0]), 4)
    0.7
    """
    k = check_scores(kappas, name="kappas", min_samples=1)
    outside = np.abs(k) > 1
    if outside.any():
        i = _first_bad(outside)
        raise ValueError(
            f"kappas must lie in [-1, 1]; the value at position {i} is {float(k[i])!r}"
        )
    if weights is None:
        w = np.ones_like(k)
    else:
        w = check_scores(weights, name="weights", n_samples=k.shape[0])
        if (w < 0).any():
            i = _first_bad(w < 0)
            raise ValueError(
                f"weights must be non-negative; the value at position {i} is "
                f"{float(w[i])!r}"
            )
        if w.sum() == 0:
            raise ValueError("weights are all zero; give at least one prompt a weight")
    z = np.arctanh(np.clip(k, -0.999, 0.999))
    return float(np.tanh(np.sum(w * z) / np.sum(w)))


def qwk_degradation(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    rater1: ArrayLike,
    rater2: ArrayLike,
    labels: ArrayLike | None = None,
    score_range: tuple[float, float] | None = None,
    rater_labels: ArrayLike | None = None,
    rounding: Rounding = "round",
) -> float:
    """Degradation of machine-human QWK from the human-human QWK.

    ``qwk(rater1, rater2) - qwk(y_true, y_pred)``: positive when the machine
    agrees with the human score less well than the two human raters agree
    with each other (paper, Section 4.3; Williamson et al. 2012 accept up to
    0.10). The paper's code compares the model with the resolved score
    (``y_true``, e.g. ASAP's ``domain1_score``, the sum of both raters on
    prompt 7) and the two raters with each other, each on its own scale.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Resolved human scores the machine is judged against.
    y_pred : array-like of shape (n_samples,)
        Machine scores.
    rater1, rater2 : array-like of shape (n_samples,)
        The first and second human rater's scores of the same essays.
    labels : array-like of int, default=None
        Score scale of ``y_true`` (see :func:`qwk`).
    score_range : tuple of two int, default=None
        The declared scale of ``y_true`` (see :func:`qwk`); not with ``labels``.
    rater_labels : array-like of int, default=None
        Score scale of the raters; when None, every integer from the lowest
        to the highest score either rater gave (so neither rater is clipped).
    rounding : {"round", "truncate"} or None, default="round"
        Passed to both QWKs (see :func:`qwk`).

    Returns
    -------
    degradation : float
        Human-human QWK minus machine-human QWK. RSMTool's degradation table
        has the opposite sign (human-machine minus human-human).

    Examples
    --------
    >>> from sklearn_fairaes.metrics import qwk_degradation
    >>> r1, r2 = [1, 2, 3, 4, 2, 3], [1, 3, 3, 4, 2, 2]
    >>> resolved = [2, 5, 6, 8, 4, 5]
    >>> round(qwk_degradation(resolved, [3, 5, 6, 7, 4, 6], rater1=r1, rater2=r2), 4)
    -0.085
    """
    _check_rounding(rounding)
    a, b = _check_pair(y_true, y_pred)
    r1, r2 = _check_pair(rater1, rater2, names=("rater1", "rater2"))
    check_same_length(y_true=a, rater1=r1)
    human_human = _human_human_qwk(r1, r2, rater_labels, rounding)
    return human_human - qwk(
        a, b, labels=labels, score_range=score_range, rounding=rounding
    )


def _human_human_qwk(
    rater1: ArrayLike, rater2: ArrayLike, rater_labels: ArrayLike | None, rounding: Rounding
) -> float:
    r1, r2 = _check_pair(rater1, rater2, names=("rater1", "rater2"))
    if rounding == "round":
        _check_integer_valued(r1, "rater1", rounding)
        _check_integer_valued(r2, "rater2", rounding)
        if rater_labels is None:
            low = min(r1.min(), r2.min())
            rater_labels = np.arange(low, max(r1.max(), r2.max()) + 1)
    return qwk(r1, r2, labels=rater_labels, rounding=rounding)


def agreement_rate(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    tolerance: float = 0,
    labels: ArrayLike | None = None,
    score_range: tuple[float, float] | None = None,
    rounding: Rounding = "round",
    sample_weight: ArrayLike | None = None,
) -> float:
    """Fraction of essays whose machine score is within ``tolerance`` of the human's.

    ``tolerance=0`` gives exact agreement and ``tolerance=1`` adjacent
    agreement (RSMTool's ``exact_agr`` and ``adj_agr``, which are percentages).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Human scores.
    y_pred : array-like of shape (n_samples,)
        Machine scores.
    tolerance : float, default=0
        Largest accepted absolute difference, in score points.
    labels : array-like of int, default=None
        Score scale (see :func:`qwk`).
    score_range : tuple of two int, default=None
        The declared scale ``(low, high)``: ``y_pred`` is trimmed to it and
        rounded as in :func:`qwk`; not with ``labels``.
    rounding : {"round", "truncate"} or None, default="round"
        How ``y_pred`` is mapped onto the scale before comparing, as in
        :func:`qwk`; None compares the scores as given (trimmed when
        ``score_range`` is given).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of each essay (not all zero); the rate is the
        weighted fraction.

    Returns
    -------
    rate : float
        A fraction in [0, 1].

    Examples
    --------
    >>> from sklearn_fairaes.metrics import agreement_rate
    >>> agreement_rate([1, 2, 3, 4], [1.2, 2.6, 3.4, 1.0])
    0.5
    >>> agreement_rate([1, 2, 3, 4], [1.2, 2.6, 3.4, 1.0], tolerance=1)
    0.75
    """
    _check_rounding(rounding)
    if not isinstance(tolerance, numbers.Real) or isinstance(tolerance, bool):
        raise TypeError(f"tolerance must be a number, got {type(tolerance).__name__}")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
    a, b = _check_pair(y_true, y_pred, min_samples=1)
    w = _check_sample_weight(sample_weight, a.shape[0])
    scale = _check_scale(score_range, labels)
    if rounding is not None:
        a, b, labels = _on_scale(a, b, labels, scale)
        a, b = _score_points(a, b, labels, rounding)
    else:
        if labels is not None:
            _check_labels(labels, rounding)
        if scale is not None:
            _check_within(a, scale)
            b = _trim_to_scale(b, scale)
    return float(np.average(np.abs(a - b) <= tolerance, weights=w))


def _pearson_r(a: NDArray[np.float64], b: NDArray[np.float64], context: str) -> float:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        warnings.warn(
            f"Pearson's r is undefined for {context}: one score vector is constant; "
            f"returning NaN",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return float("nan")
    da, db = a - a.mean(), b - b.mean()
    return float(np.sum(da * db) / np.sqrt(np.sum(da * da) * np.sum(db * db)))


# --------------------------------------------------------------------------- SMD


def _check_ddof(ddof: int, n: int) -> None:
    if not isinstance(ddof, numbers.Integral) or isinstance(ddof, bool) or ddof < 0:
        raise ValueError(f"ddof must be a non-negative integer, got {ddof!r}")
    if n <= ddof:
        raise ValueError(
            f"ddof={ddof} needs more than {ddof} essays to estimate a standard "
            f"deviation, got {n}"
        )


def _check_population_value(
    value: object, name: str, *, positive: bool = False
) -> float | None:
    if value is None:
        return None
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    number = float(value)
    if not np.isfinite(number) or (positive and number < 0):
        expected = "a finite number >= 0" if positive else "a finite number"
        raise ValueError(f"{name} must be {expected}, got {number!r}")
    return number


def _undefined_nan(message: str) -> float:
    warnings.warn(message + "; returning NaN", UndefinedMetricWarning, stacklevel=3)
    return float("nan")


def standardized_mean_difference(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    method: SMDMethod = "pooled",
    ddof: int = 1,
    population_y_true_observed_sd: float | None = None,
    population_y_pred_sd: float | None = None,
    sample_weight: ArrayLike | None = None,
    n_bootstrap: int | None = None,
    random_state: int | np.random.RandomState | None = None,
    confidence_level: float = 0.95,
) -> float | Bunch:
    """Standardized mean difference between machine and human scores.

    ``(mean(y_pred) - mean(y_true)) / denominator``, signed (machine minus
    human), with RSMTool's four denominators:

    * ``"pooled"``: ``sqrt((sd(y_true) ** 2 + sd(y_pred) ** 2) / 2)`` of these
      scores (Williamson et al. 2012);
    * ``"unpooled"``: ``sd(y_true)`` of these scores (RSMTool's default);
    * ``"williamson"``: the pooled value of the two given population SDs;
    * ``"johnson"``: the given population SD of the human scores.

    The population methods serve subgroup analyses, where the denominator
    must come from the whole population. The paper's \\|SMD\\| is
    ``abs(standardized_mean_difference(y, pred, method="pooled", ddof=0))``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Human scores.
    y_pred : array-like of shape (n_samples,)
        Machine scores.
    method : {"johnson", "pooled", "unpooled", "williamson"}, default="pooled"
        The denominator (see above).
    ddof : int, default=1
        Delta degrees of freedom of the sample SDs (divisor ``n - ddof``);
        RSMTool's default is 1, the paper's code used 0.
    population_y_true_observed_sd : float, default=None
        Population SD of the human scores; required by ``"johnson"`` and
        ``"williamson"``, refused by the other methods.
    population_y_pred_sd : float, default=None
        Population SD of the machine scores; required by ``"williamson"``,
        refused by the other methods.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of each essay (not all zero): weighted means, and
        SDs with frequency weights (divisor ``sum(w) - ddof``), so an integer
        weight counts as that many copies of the essay.
    n_bootstrap : int, default=None
        An int ``B``: return a Bunch with the percentile interval of ``B``
        essay-level bootstrap replicates (see Notes).
    random_state : int, RandomState instance or None, default=None
        Seeds the replicates (an int makes them reproducible).
    confidence_level : float, default=0.95
        Level of the bootstrap interval.

    Returns
    -------
    smd : float
        NaN, with an :class:`~sklearn_fairaes.exceptions.UndefinedMetricWarning`,
        when the denominator is zero (constant scores, or a zero population SD).
    result : Bunch
        Only with ``n_bootstrap``: ``smd``, ``ci_low``, ``ci_high``,
        ``replicates`` (the SMD with ``sample_weight`` the replicate's
        multiplicities, times ``sample_weight`` when given; NaN where the
        resampled scores are constant; the population SDs stay fixed),
        ``confidence_level`` and ``n_bootstrap`` (for the absolute SMD,
        take absolute values).

    Examples
    --------
    >>> from sklearn_fairaes.metrics import standardized_mean_difference
    >>> y, pred = [1, 2, 3, 4], [1.5, 2.5, 3.5, 4.5]
    >>> round(standardized_mean_difference(y, pred), 4)
    0.3873
    >>> round(standardized_mean_difference(pred, y), 4)
    -0.3873
    >>> round(standardized_mean_difference(
    ...     y, pred, method="johnson", population_y_true_observed_sd=2.0), 4)
    0.25
    >>> r = standardized_mean_difference(y * 3, [1, 2, 4, 4, 2, 3, 3, 5, 4, 5, 2, 4],
    ...                                  n_bootstrap=500, random_state=0)
    >>> round(r.smd, 4), bool(r.ci_low < r.smd < r.ci_high)
    (0.6101, True)
    """
    if method not in _SMD_METHODS:
        raise ValueError(
            f"method must be one of {', '.join(map(repr, _SMD_METHODS))}, got {method!r}"
        )
    a, b = _check_pair(y_true, y_pred)
    _check_ddof(ddof, a.shape[0])
    w = _check_sample_weight(sample_weight, a.shape[0])
    sd_true = _check_population_value(
        population_y_true_observed_sd, "population_y_true_observed_sd", positive=True
    )
    sd_pred = _check_population_value(
        population_y_pred_sd, "population_y_pred_sd", positive=True
    )
    needs = {
        "johnson": ("population_y_true_observed_sd",),
        "williamson": ("population_y_true_observed_sd", "population_y_pred_sd"),
    }.get(method, ())
    given = {"population_y_true_observed_sd": sd_true, "population_y_pred_sd": sd_pred}
    for name, value in given.items():
        if name in needs and value is None:
            raise ValueError(
                f"method={method!r} needs {name}: the SD over the whole population "
                f"(e.g. the full test set) when y_true/y_pred are a subgroup"
            )
        if name not in needs and value is not None:
            raise ValueError(
                f"{name} is not used by method={method!r}; drop it, or use "
                f"method='williamson' (both SDs) or method='johnson' (the human SD)"
            )
    n_bootstrap = check_n_bootstrap(n_bootstrap, confidence_level)
    value = _smd(a, b, w, method, ddof, sd_true, sd_pred)
    if n_bootstrap is None:
        return value
    weights = replicate_weights(a.shape[0], n_bootstrap, bootstrap_seed(random_state))
    if w is not None:
        weights = weights * w
    reps = smd_replicates(
        a, b, weights, method=method, ddof=ddof, population_sds=(sd_true, sd_pred)
    )
    return bootstrap_result("smd", value, reps, confidence_level)


def _smd(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    w: NDArray[np.float64] | None,
    method: SMDMethod,
    ddof: int,
    sd_true: float | None,
    sd_pred: float | None,
) -> float:
    """The SMD of checked inputs (see :func:`standardized_mean_difference`)."""
    if w is not None:
        keep = w > 0  # a zero weight removes the essay
        a, b, w = a[keep], b[keep], w[keep]
    numerator = np.average(b, weights=w) - np.average(a, weights=w)
    denominator: float | np.floating[Any]
    if method == "unpooled":
        if np.ptp(a) == 0:
            return _undefined_nan("SMD (unpooled) is undefined: y_true is constant")
        denominator = np.sqrt(_weighted_var(a, w, ddof))
    elif method == "pooled":
        if np.ptp(a) == 0 and np.ptp(b) == 0:
            return _undefined_nan(
                "SMD (pooled) is undefined: y_true and y_pred are both constant"
            )
        denominator = np.sqrt((_weighted_var(a, w, ddof) + _weighted_var(b, w, ddof)) / 2)
    elif method == "johnson":
        if sd_true == 0:
            return _undefined_nan(
                "SMD (johnson) is undefined: population_y_true_observed_sd is 0"
            )
        # johnson needs population_y_true_observed_sd: checked above
        denominator = cast(float, sd_true)
    else:
        if sd_true == 0 and sd_pred == 0:
            return _undefined_nan(
                "SMD (williamson) is undefined: both population SDs are 0"
            )
        # williamson needs both population SDs: checked above
        sd_t, sd_p = cast(float, sd_true), cast(float, sd_pred)
        denominator = np.sqrt((sd_t**2 + sd_p**2) / 2)
    return float(numerator / denominator)


def difference_of_standardized_means(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    population_y_true_observed_mn: float | None = None,
    population_y_pred_mn: float | None = None,
    population_y_true_observed_sd: float | None = None,
    population_y_pred_sd: float | None = None,
    ddof: int = 1,
) -> float:
    """Difference of standardized means (DSM) of a subgroup, as RSMTool defines it.

    Both score vectors are turned into z-scores with the population mean and
    SD of their own kind, then ``mean(z_pred - z_true)`` is returned. Meant
    for a subgroup of essays, with the population values taken from all
    essays; a value near 0 means the machine neither favours nor penalises
    the subgroup relative to the human scores.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Human scores of the subgroup.
    y_pred : array-like of shape (n_samples,)
        Machine scores of the subgroup.
    population_y_true_observed_mn : float, default=None
        Population mean of the human scores; give it with
        ``population_y_true_observed_sd``, or neither: both are then computed
        from ``y_true`` itself.
    population_y_pred_mn : float, default=None
        Population mean of the machine scores; give it with
        ``population_y_pred_sd``, or neither: both are then computed from
        ``y_pred`` itself.
    population_y_true_observed_sd : float, default=None
        Population SD of the human scores; give it with
        ``population_y_true_observed_mn``, or neither.
    population_y_pred_sd : float, default=None
        Population SD of the machine scores; give it with
        ``population_y_pred_mn``, or neither.
    ddof : int, default=1
        Delta degrees of freedom of the SDs computed from the data.

    Returns
    -------
    dsm : float
        NaN, with an :class:`~sklearn_fairaes.exceptions.UndefinedMetricWarning`,
        when an SD is zero (RSMTool returns None there). When no population
        value is given, both means of z-scores are 0 by construction: the
        result is 0 (up to rounding) and an ``UndefinedMetricWarning`` says so.

    Examples
    --------
    >>> from sklearn_fairaes.metrics import difference_of_standardized_means
    >>> round(difference_of_standardized_means(
    ...     [3, 4, 5], [4, 4, 6],
    ...     population_y_true_observed_mn=3.0, population_y_true_observed_sd=1.0,
    ...     population_y_pred_mn=3.5, population_y_pred_sd=1.5), 4)
    -0.2222
    """
    a, b = _check_pair(y_true, y_pred)
    _check_ddof(ddof, a.shape[0])
    # numpy scalars once computed from the data below
    mn_true: float | np.floating[Any] | None = _check_population_value(
        population_y_true_observed_mn, "population_y_true_observed_mn"
    )
    sd_true: float | np.floating[Any] | None = _check_population_value(
        population_y_true_observed_sd, "population_y_true_observed_sd", positive=True
    )
    mn_pred: float | np.floating[Any] | None = _check_population_value(
        population_y_pred_mn, "population_y_pred_mn"
    )
    sd_pred: float | np.floating[Any] | None = _check_population_value(
        population_y_pred_sd, "population_y_pred_sd", positive=True
    )
    for kind, mn, sd in (
        ("y_true_observed", mn_true, sd_true),
        ("y_pred", mn_pred, sd_pred),
    ):
        if (mn is None) != (sd is None):
            raise ValueError(
                f"pass both population_{kind}_mn and population_{kind}_sd, or neither"
            )
    if mn_true is None and mn_pred is None:
        warnings.warn(
            "no population mean or SD was given, so both sets of z-scores are "
            "standardized on this sample and the DSM is 0 by construction; pass the "
            "population values of all essays to compare a subgroup",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    # a mean is given exactly when its SD is (checked above)
    if mn_true is None or sd_true is None:
        mn_true, sd_true = a.mean(), (0.0 if np.ptp(a) == 0 else np.std(a, ddof=ddof))
    if mn_pred is None or sd_pred is None:
        mn_pred, sd_pred = b.mean(), (0.0 if np.ptp(b) == 0 else np.std(b, ddof=ddof))
    if sd_true == 0 or sd_pred == 0:
        return _undefined_nan("DSM is undefined: a standard deviation is 0")
    return float(np.mean((b - mn_pred) / sd_pred - (a - mn_true) / sd_true))


# --------------------------------------------------------------------------- report


def _models(y_pred: Any) -> list[tuple[str, str, ArrayLike]]:
    """(row name, argument name for messages, predictions) of each model."""
    if isinstance(y_pred, Mapping) or (
        hasattr(y_pred, "columns") and hasattr(y_pred, "items")
    ):
        models = [(name, f"y_pred[{name!r}]", pred) for name, pred in y_pred.items()]
        if not models:
            raise ValueError("y_pred holds no models; pass at least one prediction vector")
        return models
    return [("y_pred", "y_pred", y_pred)]


def _check_thresholds(
    thresholds: Mapping[str, float] | None, defaults: Mapping[str, float] | None = None
) -> dict[str, float]:
    """``defaults`` (Williamson et al.'s when None) updated with the user's ``thresholds``."""
    merged = dict(WILLIAMSON_THRESHOLDS if defaults is None else defaults)
    if thresholds is None:
        return merged
    unknown = sorted(set(thresholds) - set(merged))
    if unknown:
        raise ValueError(f"unknown threshold(s) {unknown}; the keys are {sorted(merged)}")
    for key, value in thresholds.items():
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise TypeError(f"threshold {key!r} must be a number, got {value!r}")
    merged.update({k: float(v) for k, v in thresholds.items()})
    return merged


def agreement_report(
    y_true: ArrayLike,
    y_pred: ArrayLike | Mapping[str, ArrayLike] | pd.DataFrame,
    *,
    rater1: ArrayLike | None = None,
    rater2: ArrayLike | None = None,
    labels: ArrayLike | None = None,
    score_range: tuple[float, float] | None = None,
    rater_labels: ArrayLike | None = None,
    rounding: Rounding = "round",
    smd_method: SMDMethod = "pooled",
    smd_ddof: int = 1,
    thresholds: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Agreement of one or more models with human scores, as a tidy table.

    One row per model with the paper's Table 2 criteria (Section 4.3) and the
    acceptance flags of Williamson et al. (2012): QWK >= 0.70, degradation
    from the human-human QWK <= 0.10 and \\|SMD\\| <= 0.15.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Human (resolved) scores.
    y_pred : array-like of shape (n_samples,), or dict of str to array-like
        Machine scores: one vector (row ``"y_pred"``), a dict mapping model
        names to vectors, or a DataFrame with one column per model.
    rater1, rater2 : array-like of shape (n_samples,), default=None
        The two human raters' scores; give both to get the degradation.
    labels : array-like of int, default=None
        Score scale of ``y_true`` (see :func:`qwk`).
    score_range : tuple of two int, default=None
        The rubric's scale ``(low, high)`` of ``y_true``, both ends included
        (see :func:`qwk`); not with ``labels``. The predictions are trimmed
        to ``[low - 0.4998, high + 0.4998]`` for every column, as RSMTool
        does, and the report gains the column ``n_outside_scale``.
    rater_labels : array-like of int, default=None
        Score scale of the raters (see :func:`qwk_degradation`).
    rounding : {"round", "truncate"} or None, default="round"
        How predictions are mapped onto the scale for QWK and the agreement
        rates (see :func:`qwk`). ``"truncate"`` reproduces the paper's code.
    smd_method : {"johnson", "pooled", "unpooled", "williamson"}, default="pooled"
        Only the sample-based ``"pooled"`` (Williamson et al.) and
        ``"unpooled"`` make sense for a whole data set.
    smd_ddof : int, default=1
        Delta degrees of freedom of the SMD's SDs (the paper's code used 0).
    thresholds : dict, default=None
        Overrides of the acceptance thresholds, keys ``"abs_smd"``,
        ``"degradation"``, ``"qwk"``; Williamson et al.'s values otherwise.

    Returns
    -------
    report : pandas.DataFrame
        Indexed by model name (index name ``"model"``), with columns ``n``,
        ``n_outside_scale`` (only with ``score_range``: predictions strictly
        outside ``[low, high]`` before trimming),
        ``qwk``, ``human_human_qwk`` and ``degradation`` (only with both
        raters), ``smd`` (signed, machine minus human), ``exact_agreement``,
        ``adjacent_agreement``, ``pearson_r``, ``qwk_ok``,
        ``degradation_ok`` (only with both raters), ``smd_ok`` and
        ``acceptable`` (all flags true).

    Notes
    -----
    QWK and the exact/adjacent agreement rates use the predictions mapped
    onto the scale (``rounding``); SMD and Pearson's r use the predictions as
    given, as the paper's code did for SMD, or trimmed to ``score_range``
    when it is given (RSMTool's ``raw_trim`` scores, which its reports
    evaluate; QWK and the rates then equal its ``raw_trim_round``). A flag is
    False when its value is undefined (NaN).

    Examples
    --------
    >>> from sklearn_fairaes.metrics import agreement_report
    >>> y = [1, 2, 3, 4, 2, 3]
    >>> report = agreement_report(y, {"a": [1.2, 2.1, 3.4, 3.8, 2.2, 2.6],
    ...                               "b": [2.0, 2.0, 2.9, 3.1, 2.5, 2.5]})
    >>> report[["qwk", "exact_agreement", "acceptable"]].round(3)
             qwk  exact_agreement  acceptable
    model
    a      1.000              1.0        True
    b      0.571              0.5       False

    With the rubric's scale declared, a prediction off the scale is counted
    and trimmed (here 0.2 on a 1-4 scale):

    >>> report = agreement_report(y, {"a": [0.2, 2.1, 3.4, 3.8, 2.2, 2.6]},
    ...                           score_range=(1, 4))
    >>> report[["n", "n_outside_scale", "qwk"]].round(3)
           n  n_outside_scale  qwk
    model
    a      6                1  1.0
    """
    pd = require("pandas", purpose="agreement_report")
    _check_rounding(rounding)
    limits = _check_thresholds(thresholds)
    if (rater1 is None) != (rater2 is None):
        given = "rater1" if rater2 is None else "rater2"
        raise ValueError(
            f"only {given} was given; pass both rater1 and rater2 to get the "
            f"degradation from the human-human QWK, or neither"
        )
    scale = _check_scale(score_range, labels)
    models = _models(y_pred)
    human = check_scores(y_true, name="y_true", min_samples=2)
    if scale is not None:
        _check_within(human, scale)
    with_raters = rater1 is not None
    if rater1 is not None and rater2 is not None:  # both or neither: checked above
        r1, r2 = _check_pair(rater1, rater2, names=("rater1", "rater2"))
        check_same_length(y_true=human, rater1=r1)
        human_human = _human_human_qwk(r1, r2, rater_labels, rounding)
    rows = {}
    for name, argument, pred in models:
        machine = check_scores(pred, name=argument, min_samples=2)
        check_same_length(y_true=human, **{argument: machine})
        row: dict[str, Any] = {"n": int(human.shape[0])}
        if scale is not None:
            low, high = scale
            row["n_outside_scale"] = int(((machine < low) | (machine > high)).sum())
            machine = _trim_to_scale(machine, scale)
        kappa = qwk(human, machine, labels=labels, score_range=scale, rounding=rounding)
        row["qwk"] = kappa
        if with_raters:
            row["human_human_qwk"] = human_human
            row["degradation"] = human_human - kappa
        row["smd"] = standardized_mean_difference(
            human, machine, method=smd_method, ddof=smd_ddof
        )
        row["exact_agreement"] = agreement_rate(
            human, machine, labels=labels, score_range=scale, rounding=rounding
        )
        row["adjacent_agreement"] = agreement_rate(
            human,
            machine,
            tolerance=1,
            labels=labels,
            score_range=scale,
            rounding=rounding,
        )
        row["pearson_r"] = _pearson_r(human, machine, f"model {name!r}")
        row["qwk_ok"] = bool(kappa >= limits["qwk"])
        if with_raters:
            row["degradation_ok"] = bool(row["degradation"] <= limits["degradation"])
        row["smd_ok"] = bool(abs(row["smd"]) <= limits["abs_smd"])
        flags = [v for k, v in row.items() if k.endswith("_ok")]
        row["acceptable"] = all(flags)
        rows[name] = row
    report = pd.DataFrame.from_dict(rows, orient="index")
    report.index.name = "model"
    return report
