"""Scores and their normalisation, shared by the pair metrics."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from ..._validation import check_scores
from ...exceptions import UndefinedMetricWarning

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ._engine import PairwiseEngine

    #: ``(shift, divisor)`` of a normalisation, or None to map every value to 0.
    Scaling = tuple[float, float] | None


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------
def _scores(
    y_pred: ArrayLike, engine: PairwiseEngine, name: str = "y_pred"
) -> NDArray[np.float64]:
    y = check_scores(y_pred, name=name, n_samples=engine.n_samples, min_samples=2)
    return _check_score_span(y, name)


def _check_score_span(y: NDArray[np.float64], name: str) -> NDArray[np.float64]:
    """Refuse scores whose pairwise differences overflow float64 (become inf)."""
    lo, hi = float(np.min(y)), float(np.max(y))
    if not math.isfinite(hi - lo):
        raise ValueError(
            f"{name} ranges from {lo:.6g} (position {int(np.argmin(y))}) to {hi:.6g} "
            f"(position {int(np.argmax(y))}): the difference of these scores overflows "
            f"float64 (it is larger than 1.8e308), so score differences cannot be "
            f"computed; rescale the scores first (e.g. divide them by "
            f"{10.0 ** math.ceil(math.log10(max(abs(lo), abs(hi)))):.0e})"
        )
    return y


def _outcome_range(y: NDArray[np.float64]) -> tuple[float, float]:
    """Smallest and largest ``|y_i - y_j|`` over all pairs, in O(N log N).

    Exact in floating point: rounding is monotone, so the smallest computed
    difference is one between neighbours of the sorted scores and the largest
    is ``max - min``.
    """
    s = np.sort(y)
    return float(np.min(s[1:] - s[:-1])), float(s[-1] - s[0])


def _scaling(vmin: float, vmax: float, normalize: str | None, what: str) -> Scaling:
    """``(shift, divisor)`` of the normalisation, or None to map all values to 0.

    A quantity that is 0 for every pair stays 0. One that is constant but not 0
    has no min-max scaling: its values are set to 0 with a warning.
    """
    if normalize is None:
        return 0.0, 1.0
    if normalize == "max":
        return (0.0, vmax) if vmax > 0 else None
    if vmax > vmin:
        return vmin, vmax - vmin
    if vmax != 0:
        warnings.warn(
            f"every pair has the same {what} ({vmax!r}), so min-max normalisation is "
            f"undefined; the normalised {what}s are set to 0",
            UndefinedMetricWarning,
            stacklevel=3,
        )
    return None


def _normalise(
    values: NDArray[np.float64], scaling: Scaling, out: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """``(values - shift) / divisor`` in the order of operations of the paper."""
    if scaling is None:
        if out is None:
            return np.zeros(values.shape)
        out[...] = 0.0
        return out
    shift, divisor = scaling
    out = np.subtract(values, shift, out=out)
    if divisor != 1.0:
        np.divide(out, divisor, out=out)
    return out
