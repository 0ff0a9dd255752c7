"""Bootstrap replicates of the per-group SMD and DSM, all replicates at once.

:func:`~sklearn_fairaes.metrics.group_agreement_report` computes a group's
SMD and DSM from the group's means and SDs and from the means and SDs of all
essays. On a bootstrap replicate (essay multiplicities ``w``, see
:mod:`._bootstrap`) every one of these is a weighted sum, so the replicates of
every group come from two matrix products: ``W @ onehot`` counts each group's
resampled essays, ``W @ (onehot * x)`` and ``W @ (onehot * x**2)`` give its
weighted means and SDs (frequency weights, divisor ``sum(w) - ddof``, as
``sample_weight`` in :func:`~sklearn_fairaes.metrics.standardized_mean_difference`).
The DSM's population means and SDs are recomputed on each replicate too: the
resampled set is the population of that replicate.

A replicate in which a group has fewer than 2 essays has no SD: its SMD and
DSM are NaN there, which :func:`._bootstrap.bootstrap_interval` leaves out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["group_agreement_replicates"]


def _weighted_moments(
    W: NDArray[np.float64], onehot: NDArray[np.float64], x: NDArray[np.float64], ddof: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(count, mean, variance) of ``x`` per replicate and group, shape (B, G)."""
    count = W @ onehot
    # centring on the overall mean first keeps the sum of squares accurate
    xc = x - x.mean()
    s1 = W @ (onehot * xc[:, None])
    s2 = W @ (onehot * (xc**2)[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_c = s1 / count
        var = (s2 - count * mean_c**2) / (count - ddof)
    var = np.where(count - ddof > 0, np.maximum(var, 0.0), np.nan)
    return count, mean_c + x.mean(), var


def group_agreement_replicates(
    y_true: NDArray[np.float64],
    y_pred: NDArray[np.float64],
    codes: NDArray[np.intp],
    n_groups: int,
    weights: NDArray[np.float64],
    *,
    smd_method: str = "pooled",
    smd_ddof: int = 1,
) -> dict[str, NDArray[np.float64]]:
    """The SMD and DSM of every group on every bootstrap replicate.

    Parameters
    ----------
    y_true, y_pred : ndarray of shape (n_samples,)
        Human and machine scores.
    codes : ndarray of int of shape (n_samples,)
        Each essay's group, ``0 .. n_groups - 1``; a code of ``-1`` leaves
        the essay out of every group (it still counts in the population).
    n_groups : int
        The number of groups.
    weights : ndarray of shape (n_bootstrap, n_samples)
        Essay multiplicities of each replicate.
    smd_method : {"johnson", "pooled", "unpooled", "williamson"}, default="pooled"
        The SMD's denominator, as in
        :func:`~sklearn_fairaes.metrics.group_agreement_report`.
    smd_ddof : int, default=1
        Delta degrees of freedom of the SMD's SDs.

    Returns
    -------
    replicates : dict
        ``"smd"``, ``"dsm"``: arrays of shape (n_bootstrap, n_groups); NaN
        where a group has fewer than 2 essays in a replicate or an SD is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics._group_bootstrap import group_agreement_replicates
    >>> y = np.array([1.0, 2.0, 3.0, 4.0, 2.0, 3.0])
    >>> pred = np.array([1.5, 2.0, 3.5, 4.0, 2.5, 2.5])
    >>> codes = np.array([0, 0, 0, 1, 1, 1])
    >>> out = group_agreement_replicates(y, pred, codes, 2, np.ones((1, 6)))
    >>> # group 0: means 2 and 2.333, SDs 1 and 1.041: 0.333 / sqrt((1 + 1.083) / 2)
    >>> [round(float(v), 4) for v in out["smd"][0]]
    [0.3266, 0.0]
    """
    h = np.asarray(y_true, dtype=np.float64)
    m = np.asarray(y_pred, dtype=np.float64)
    W = np.asarray(weights, dtype=np.float64)
    onehot = np.zeros((h.shape[0], n_groups))
    inside = codes >= 0
    onehot[np.flatnonzero(inside), codes[inside]] = 1.0
    count, h_mean, h_var = _weighted_moments(W, onehot, h, 1)
    _, m_mean, m_var = _weighted_moments(W, onehot, m, 1)
    everyone = np.ones((h.shape[0], 1))
    _, pop_h_mean, pop_h_var = _weighted_moments(W, everyone, h, 1)
    _, pop_m_mean, pop_m_var = _weighted_moments(W, everyone, m, 1)
    small = count < 2
    denominator: Any
    if smd_method in ("pooled", "unpooled"):
        if smd_ddof != 1:
            _, _, h_var = _weighted_moments(W, onehot, h, smd_ddof)
            _, _, m_var = _weighted_moments(W, onehot, m, smd_ddof)
        denominator = np.sqrt(h_var if smd_method == "unpooled" else (h_var + m_var) / 2)
    else:
        _, _, sd_h = _weighted_moments(W, everyone, h, smd_ddof)
        _, _, sd_m = _weighted_moments(W, everyone, m, smd_ddof)
        denominator = np.sqrt(sd_h if smd_method == "johnson" else (sd_h + sd_m) / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        smd = (m_mean - h_mean) / denominator
        dsm = (m_mean - pop_m_mean) / np.sqrt(pop_m_var) - (h_mean - pop_h_mean) / np.sqrt(
            pop_h_var
        )
    smd = np.where(small | ~np.isfinite(smd), np.nan, smd)
    dsm = np.where(small | ~np.isfinite(dsm), np.nan, dsm)
    return {"smd": smd, "dsm": dsm}
