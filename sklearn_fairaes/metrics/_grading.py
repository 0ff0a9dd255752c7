"""Error metrics for short-answer grading on a [0, 1] grade scale.

Conventions as in :mod:`sklearn_fairaes.metrics._agreement`: the form
``metric(y_true, y_pred, *, ...)``, ``y_true`` the human grade, a Python
``float`` returned; ``*_error``-style metrics are lower-is-better.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import check_same_length, check_scores

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["weighted_rmse"]

# A grade produced by floating-point scaling (3 * 0.1 = 0.30000000000000004,
# or 0.7 computed as 0.69999999999999996) must land in the range whose lower
# edge it denotes, not one range lower. Grades often pass through float32
# (pandas, torch, a CSV read with dtype float32), where 0.7 is 0.699999988,
# about 1.2e-8 below its edge; the tolerance is float32's precision, so such
# grades still land where they denote even after a cast back to float64.
# No real grade (points / max_points) lies that close below an edge.
_EDGE_TOLERANCE = 2.0**-23
# float16 grades are off by up to 2**-12 (0.7 is 0.7002, 0.8 is 0.7998).
_FLOAT16_EDGE_TOLERANCE = 2.0**-8


def _check_unit_interval(values: NDArray[np.float64], name: str, hint: str) -> None:
    bad = (values < 0) | (values > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must hold grades in [0, 1]; the value at position {i} is "
            f"{float(values[i])!r} ({int(bad.sum())} such value(s) in all). {hint}"
        )


def _check_sources(source: Any, n: int) -> list[Any]:
    if isinstance(source, (str, bytes)):
        raise TypeError(
            "source must hold one data-source label per answer, got a single string"
        )
    if hasattr(source, "tolist"):
        labels = source.tolist()
    else:
        try:
            labels = list(source)
        except TypeError:
            raise TypeError(
                f"source must be a list, array or pandas Series of labels, got "
                f"{type(source).__name__}"
            ) from None
    check_same_length(y_true=range(n), source=labels)
    for i, label in enumerate(labels):
        if label is None or (isinstance(label, float) and np.isnan(label)):
            raise ValueError(
                f"source is missing at position {i}; give every answer its data "
                f"source (e.g. the dataset name)"
            )
    return labels


def _edge_tolerance(values: object) -> float:
    """How far below a range's lower edge a grade may lie and still count in it."""
    dtype = getattr(values, "dtype", None)
    if not isinstance(dtype, np.dtype):  # a list (of numpy scalars, perhaps)
        try:
            dtype = np.asarray(values).dtype
        except (TypeError, ValueError):  # check_scores says what is wrong
            return _EDGE_TOLERANCE
    if dtype.kind == "f" and dtype.itemsize < 4:
        return _FLOAT16_EDGE_TOLERANCE
    return _EDGE_TOLERANCE


def _bin_weights(
    y_true: NDArray[np.float64], n_bins: int, tolerance: float = _EDGE_TOLERANCE
) -> NDArray[np.float64]:
    """Weight of each answer: 1 / (non-empty ranges * answers in its range)."""
    # float64 throughout: y_true is float64 here, and so are the edges k / n_bins
    bins = np.floor(y_true * n_bins + tolerance * n_bins).astype(np.intp)
    bins = np.minimum(bins, n_bins - 1)  # a grade of 1.0 belongs to the last range
    counts = np.bincount(bins, minlength=n_bins)
    n_filled = np.count_nonzero(counts)
    return 1.0 / (n_filled * counts[bins])


def _weighted_rmse(
    y_true: NDArray[np.float64],
    y_pred: NDArray[np.float64],
    n_bins: int,
    tolerance: float = _EDGE_TOLERANCE,
) -> float:
    weights = _bin_weights(y_true, n_bins, tolerance)
    errors = np.abs(y_true - y_pred)
    largest = errors.max()
    if largest == 0:
        return 0.0
    # Scaling by the largest error keeps tiny errors from underflowing to 0.
    return float(largest * np.sqrt(np.sum(weights * (errors / largest) ** 2)))


def weighted_rmse(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    n_bins: int = 10,
    source: ArrayLike | None = None,
    return_per_source: bool = False,
) -> float | tuple[float, dict[Any, float]]:
    """Weighted RMSE of grades in [0, 1] (ASAG2024's wRMSE).

    The grade scale [0, 1] is cut into ``n_bins`` ranges of equal width by the
    TRUE grade. Every range that holds at least one answer receives an equal
    share of the total weight, split equally among its answers; the share of
    an empty range goes to the others equally. So a data set dominated by
    full marks cannot hide large errors on the rare low grades, as a plain
    RMSE (and a mean predictor) would.

    ``wRMSE = sqrt(sum_i w_i * (y_i - y_pred_i) ** 2)`` with
    ``w_i = 1 / (K * n_b(i))``, where ``K`` is the number of non-empty ranges
    and ``n_b(i)`` the number of answers in answer ``i``'s range; the weights
    sum to 1.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Human grades, scaled to [0, 1].
    y_pred : array-like of shape (n_samples,)
        Predicted grades in [0, 1].
    n_bins : int, default=10
        Number of ranges (ASAG2024: 10 ranges of width 0.1). Range ``k``
        holds grades in ``[k / n_bins, (k + 1) / n_bins)``; the last range
        also holds 1.0. A grade less than ``2**-23`` (about 1.2e-7, the
        precision of float32) below a range's lower edge counts in that range:
        it is a rounding artefact (0.7 stored as float32 is 0.699999988), also
        after a cast back to float64. For float16 grades the tolerance is
        ``2**-8``.
    source : array-like of shape (n_samples,), default=None
        Data-source label of each answer (e.g. the dataset name). When given,
        the wRMSE is computed within each source (its own ranges and weights)
        and the unweighted mean over sources is returned, as ASAG2024's
        "Mean" row.
    return_per_source : bool, default=False
        With ``source``, also return the per-source values.

    Returns
    -------
    wrmse : float
        The wRMSE, or the mean over sources when ``source`` is given.
    per_source : dict
        Only with ``return_per_source=True``: source label to wRMSE, in order
        of first appearance.

    Raises
    ------
    ValueError
        If a grade is outside [0, 1] (the message names the argument,
        position and value), on NaN or infinity, inputs of different lengths,
        an empty input or a missing source label.

    References
    ----------
    .. [1] G. Meyer, P. Breuer and J. Fürst, "ASAG2024: A combined benchmark
       for short answer grading", SIGCSE Virtual 2024, Section 3.

    Examples
    --------
    >>> from sklearn_fairaes.metrics import weighted_rmse
    >>> y_true = [0.0, 1.0, 1.0, 1.0]
    >>> y_pred = [0.5, 1.0, 1.0, 1.0]

    Two non-empty ranges share the weight equally, so the one low grade
    carries half of it:

    >>> weighted_rmse(y_true, y_pred)
    0.3535533905932738
    >>> weighted_rmse(y_true + [0.2], y_pred + [0.2], source=["a"] * 4 + ["b"],
    ...               return_per_source=True)
    (0.1767766952966369, {'a': 0.3535533905932738, 'b': 0.0})
    """
    if not isinstance(n_bins, numbers.Integral) or isinstance(n_bins, bool) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if return_per_source and source is None:
        raise ValueError(
            "return_per_source=True needs source: the data-source label of each answer"
        )
    tolerance = _edge_tolerance(y_true)
    a = check_scores(y_true, name="y_true", min_samples=1)
    b = check_scores(y_pred, name="y_pred", min_samples=1)
    check_same_length(y_true=a, y_pred=b)
    _check_unit_interval(
        a, "y_true", "Scale grades to [0, 1] first: grade / max_points of the question"
    )
    _check_unit_interval(
        b, "y_pred", "Predict on the [0, 1] scale, or clip with np.clip(y_pred, 0, 1)"
    )
    if source is None:
        return _weighted_rmse(a, b, n_bins, tolerance)
    labels = _check_sources(source, a.shape[0])
    groups: dict[Any, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(label, []).append(i)
    per_source: dict[Any, float] = {}
    for label, positions in groups.items():
        rows = np.asarray(positions)
        per_source[label] = _weighted_rmse(a[rows], b[rows], n_bins, tolerance)
    mean = float(np.mean(list(per_source.values())))
    if return_per_source:
        return mean, per_source
    return mean
