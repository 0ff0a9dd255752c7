"""Spread-aware individual fairness: figures a narrower score spread cannot buy.

The paper's Lipschitz fraction normalises each system's score differences by
their own range. A system whose scores bunch together (a smaller SD over the
same range, as when an engine lifts its lowest scores) then passes more pairs
without scoring any pair of similar essays more alike than another system
would: on ASAP prompt 7 an engine that adds 3 points to every essay under 150
words beat its fixed version and the human raters. The lipschitz analysis
therefore adds, per representation and system:

* ``score_sd`` and ``human_sd`` (sample SDs, ``ddof=1``) beside every fraction;
* ``lipschitz_matched``: the fraction with the system's score differences
  rescaled to the humans' SD, ``|y_i - y_j| * sd_h / sd_y``, and min-max
  normalised by the *human* score-difference range, the same denominator for
  every system (distances min-max as in the paper). Multiplying a system's
  scores by any positive factor leaves it unchanged; for the human scores it
  equals the paper's fraction;
* on each essay's ``k`` nearest neighbours (``n_neighbors``, the neighbours of
  :func:`~sklearn_fairaes.metrics.essay_consistency`, found once per
  representation): ``neighbor_spread_ratio``, the mean ``|s_i - s_j| / sd_s``
  over the neighbour pairs divided by the same for the human scores (above 1:
  the system separates near-identical essays more than the humans do,
  relative to its own spread), and ``error_inconsistency``, the mean
  ``|e_i - mean of e over i's neighbours|`` divided by the human SD, with
  ``e = system - human`` (a system whose error jumps between near-identical
  essays scores them inconsistently with the humans, whatever its spread).

Bootstrap intervals (the study's replicate weights) reweight the essays with
the neighbours fixed: each essay keeps the neighbours and per-essay values it
has on the full sample, and a replicate's figure is the weighted mean of those
values over the weighted SD(s) of the replicate (an essay drawn twice is not
its own neighbour). The intervals so reflect which essays were sampled, not
the search for neighbours among them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from .._study import PairSpace

__all__ = ["RelativeFairness", "matched_lipschitz", "relative_fairness", "weighted_sd"]


def weighted_sd(
    values: NDArray[np.float64], weights: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Give the sample SD (``ddof=1``) of ``values`` resampled with multiplicities ``weights``.

    Parameters
    ----------
    values : ndarray of shape (n,)
        One value per essay.
    weights : ndarray of shape (n,) or (B, n)
        How many times each essay is drawn, per replicate.

    Returns
    -------
    sd : ndarray of shape () or (B,)
        The SD of the resampled values (NaN for fewer than two draws).

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([[2.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    >>> weighted_sd(np.array([1.0, 4.0, 7.0]), w).round(6).tolist()
    [1.732051, 3.0]
    """
    w = np.asarray(weights, dtype=np.float64)
    total = w.sum(axis=-1)
    mean = (w @ values) / total
    dev = values - np.expand_dims(mean, -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (w * dev**2).sum(axis=-1) / (total - 1.0)
    return np.sqrt(np.where(total > 1.0, var, np.nan))


def matched_lipschitz(
    space: PairSpace,
    y: NDArray[np.float64],
    human: NDArray[np.float64],
    *,
    lipschitz_constant: float = 1.0,
) -> tuple[float, int, int]:
    """Count the pairs of the spread-matched Lipschitz condition on a study's engine.

    A pair counts when::

        (|c y_i - c y_j| - min|dh|) / (max|dh| - min|dh|)
            <= L * (d_ij - min d) / (max d - min d)

    with ``c = sd_h / sd_y`` and ``dh`` the human score differences. The
    counting reducer and the distance range are those of
    :func:`~sklearn_fairaes.metrics.lipschitz_fraction` on ``space.pairs``
    (one float64 pass over the blocks of pairs).

    Parameters
    ----------
    space : PairSpace
        The representation's pair engine (``pairs``) and ``metric``.
    y : ndarray of shape (n,)
        The system's scores.
    human : ndarray of shape (n,)
        The human scores.
    lipschitz_constant : float, default=1.0
        The constant ``L``.

    Returns
    -------
    fraction : float
        Satisfied pairs over all pairs; NaN when either SD is 0 (a constant
        series has no spread to match).
    n_satisfied, n_pairs : int
        The counts (``n_satisfied`` is 0 when the fraction is NaN).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.spatial.distance import pdist
    >>> from sklearn_fairaes.report._study import PairSpace
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> D = pdist(X, "cosine")
    >>> space = PairSpace("bow", None, X, D, "precomputed", D)
    >>> human = np.array([2.0, 2, 5, 5])
    >>> matched_lipschitz(space, human, human)
    (0.5, 3, 6)
    >>> matched_lipschitz(space, 10 * human, human)  # spread does not matter
    (0.5, 3, 6)
    """
    from ...metrics._pairs._counters import _LipschitzCounter
    from ...metrics._pairs._engine import as_engine
    from ...metrics._pairs._scaling import _outcome_range, _scaling

    engine = as_engine(space.pairs, metric=space.metric, block_size=None, n_jobs=None)
    n_pairs = int(engine.n_pairs)
    sd_y, sd_h = float(np.std(y, ddof=1)), float(np.std(human, ddof=1))
    if not (sd_y > 0 and sd_h > 0):
        return math.nan, 0, n_pairs
    scaled = np.asarray(y, dtype=np.float64) * (sd_h / sd_y)
    d_min, d_max = engine.distance_range()[:2]
    d_scaling = _scaling(d_min, d_max, "minmax", "distance")
    # the humans' range for every system: the same denominator for all rows
    h_range = _outcome_range(np.asarray(human, dtype=np.float64))
    o_scaling = _scaling(*h_range, "minmax", "score difference")
    reducer = _LipschitzCounter(scaled, d_scaling, o_scaling, float(lipschitz_constant))
    n_ok, n_eval = engine.map_reduce(reducer)
    return n_ok / n_eval, int(n_ok), int(n_eval)


class RelativeFairness:
    """Individual fairness of one system relative to the human scores on fixed neighbours.

    Parameters
    ----------
    neighbors : ndarray of shape (n, k)
        Each essay's ``k`` nearest other essays (positions).
    scores : ndarray of shape (n,)
        The system's scores.
    human : ndarray of shape (n,)
        The human scores.

    Attributes
    ----------
    score_sd, human_sd : float
        Sample SDs of the system's and the human scores.
    neighbor_spread, human_neighbor_spread : float
        Mean ``|s_i - s_j|`` over the neighbour pairs, over the SD.
    neighbor_spread_ratio : float
        ``neighbor_spread / human_neighbor_spread``.
    error, neighbor_error, error_gap : ndarray of shape (n,)
        ``e = scores - human``, the mean of ``e`` over each essay's
        neighbours, and ``e - neighbor_error``.
    error_inconsistency : float
        Mean ``|error_gap|`` over the human SD.

    Examples
    --------
    >>> import numpy as np
    >>> nb = np.array([[1], [0], [3], [2]])
    >>> human = np.array([1.0, 2.0, 3.0, 4.0])
    >>> rel = RelativeFairness(nb, human + np.array([0.0, 0.0, 2.0, 0.0]), human)
    >>> rel.error_gap.tolist()
    [0.0, 0.0, 2.0, -2.0]
    >>> round(rel.error_inconsistency * rel.human_sd, 6)
    1.0
    """

    def __init__(
        self,
        neighbors: NDArray[np.intp],
        scores: NDArray[np.float64],
        human: NDArray[np.float64],
    ) -> None:
        self.neighbors = np.asarray(neighbors)
        self.scores = np.asarray(scores, dtype=np.float64)
        self.human = np.asarray(human, dtype=np.float64)
        nb = self.neighbors
        self.score_sd = float(np.std(self.scores, ddof=1))
        self.human_sd = float(np.std(self.human, ddof=1))
        # per essay: mean |s_i - s_j| over its neighbours, system and humans
        self._diff_s = np.abs(self.scores[:, None] - self.scores[nb]).mean(axis=1)
        self._diff_h = np.abs(self.human[:, None] - self.human[nb]).mean(axis=1)
        self.error = self.scores - self.human
        self.neighbor_error = self.error[nb].mean(axis=1)
        self.error_gap = self.error - self.neighbor_error
        with np.errstate(invalid="ignore", divide="ignore"):
            self.neighbor_spread = float(self._diff_s.mean() / self.score_sd)
            self.human_neighbor_spread = float(self._diff_h.mean() / self.human_sd)
            self.neighbor_spread_ratio = float(
                self.neighbor_spread / self.human_neighbor_spread
            )
            self.error_inconsistency = float(np.abs(self.error_gap).mean() / self.human_sd)

    def replicates(self, weights: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        """Give the figures on each bootstrap replicate, the neighbours fixed.

        Parameters
        ----------
        weights : ndarray of shape (B, n)
            Essay multiplicities per replicate.

        Returns
        -------
        replicates : dict of str to ndarray of shape (B,)
            ``score_sd``, ``neighbor_spread_ratio`` and ``error_inconsistency``.
        """
        w = np.asarray(weights, dtype=np.float64)
        total = w.sum(axis=1)
        sd_s, sd_h = weighted_sd(self.scores, w), weighted_sd(self.human, w)
        with np.errstate(invalid="ignore", divide="ignore"):
            spread_s = (w @ self._diff_s) / total / sd_s
            spread_h = (w @ self._diff_h) / total / sd_h
            return {
                "score_sd": sd_s,
                "neighbor_spread_ratio": spread_s / spread_h,
                "error_inconsistency": (w @ np.abs(self.error_gap)) / total / sd_h,
            }


def relative_fairness(
    neighbors: NDArray[np.intp], scores: NDArray[np.float64], human: NDArray[np.float64]
) -> RelativeFairness:
    """Compute the figures relative to the human scores (see :class:`RelativeFairness`).

    Parameters
    ----------
    neighbors : ndarray of shape (n, k)
        Each essay's nearest other essays.
    scores, human : ndarray of shape (n,)
        The system's and the human scores.

    Returns
    -------
    result : RelativeFairness
        The figures and the per-essay errors.

    Examples
    --------
    >>> import numpy as np
    >>> nb = np.array([[1], [0], [3], [2]])
    >>> human = np.array([1.0, 2.0, 3.0, 4.0])
    >>> relative_fairness(nb, human, human).neighbor_spread_ratio
    1.0
    """
    return RelativeFairness(neighbors, scores, human)
