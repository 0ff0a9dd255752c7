"""Essays to review: who was scored unlike their near-duplicates (issue 17).

On one study (one prompt), for every representation and every scoring system
audited under it (given and fitted systems under every representation,
trained baselines under their own), and for the human scores (``"human"``:
rater monitoring, near-identical essays the raters scored far apart),

* ``"review_list"``: the essays with the largest gap between their score and
  the mean score of their ``n_neighbors`` nearest other essays
  (:func:`~sklearn_fairaes.metrics.essay_consistency`), at most ``n_review``
  per representation and system, largest ``|gap|`` first, with the human
  score, the essay's text and a sentence saying why it is listed. Essays
  scored exactly like their neighbours' mean are never listed;
* ``"review_neighbors"``: the nearest neighbours of each listed essay, one
  row per (listed essay, neighbour), nearest first, with their distances,
  scores, human scores and texts;
* ``"lipschitz_violations"``: the pairs whose normalised score difference
  exceeds their normalised distance the most
  (:func:`~sklearn_fairaes.metrics.lipschitz_violations`, min-max
  normalisation, ``L = 1``), at most ``n_review``, worst first;
* ``"essay_consistency"``: per representation and system, the consistency
  (``1 - mean |gap|``), the mean ``|gap|``, the number of essays listed,
  and the number of violating pairs among all pairs;
* ``"lipschitz_constants"``: the empirical Lipschitz constants, the smallest
  ``L`` at which 90, 95 and 99% of the pairs satisfy the condition
  (:func:`~sklearn_fairaes.metrics.lipschitz_profile`); comparable across
  representations, unlike the fraction at ``L = 1``;
* ``"lipschitz_profile"``: the whole curve (fraction of pairs satisfied vs.
  ``L``) that the report draws.

Every pair is within the study: essays on different prompts are never paired.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ...resources import require
from ._base import AnalysisOutput
from ._common import PairAnalysis, noting, pair_notes, where

if TYPE_CHECKING:
    from .._study import Study

__all__ = ["ANALYSIS", "ReviewAnalysis", "review_reason"]

#: The quantiles of the empirical Lipschitz constants.
QUANTILES = (0.9, 0.95, 0.99)

REVIEW_COLUMNS = [
    "representation", "system", "rank", "id", "data_row", "score", "human_score",
    "neighbor_mean", "gap", "mean_abs_diff", "max_abs_diff", "n_neighbors",
    "nearest_id", "nearest_distance", "farthest_neighbor_distance", "reason", "text",
]  # fmt: skip
NEIGHBOR_COLUMNS = [
    "representation", "system", "rank", "id", "neighbor_rank", "neighbor_id",
    "neighbor_data_row", "distance", "neighbor_score", "neighbor_human_score",
    "abs_diff", "neighbor_text",
]  # fmt: skip
VIOLATION_COLUMNS = [
    "representation", "system", "rank", "id_a", "id_b", "data_row_a", "data_row_b",
    "distance", "normalized_distance", "score_a", "score_b", "human_score_a",
    "human_score_b", "abs_diff", "normalized_diff", "violation", "text_a", "text_b",
]  # fmt: skip
CONSISTENCY_COLUMNS = [
    "representation", "system", "n", "n_neighbors", "consistency", "mean_abs_gap",
    "n_listed", "n_pairs", "n_violations",
]  # fmt: skip
CONSTANT_COLUMNS = ["representation", "system", "quantile", "lipschitz_constant"]
PROFILE_COLUMNS = ["representation", "system", "lipschitz_constant", "fraction"]

# A gap this small is rounding, not a score unlike the neighbours'.
_GAP_TOLERANCE = 1e-9


def _number(value: float) -> str:
    """A score difference or distance for a sentence: at most 3 significant digits."""
    return f"{value:.3g}"


def review_reason(gap: float, n_neighbors: int, farthest: float) -> str:
    """Say why an essay is on the review list.

    Parameters
    ----------
    gap : float
        The essay's score minus the mean score of its nearest neighbours.
    n_neighbors : int
        How many neighbours the mean is over.
    farthest : float
        The distance of the farthest of those neighbours.

    Returns
    -------
    reason : str
        A sentence for the review list.

    Examples
    --------
    >>> review_reason(-3.2, 5, 0.1234)
    'scored 3.2 below the mean of its 5 nearest neighbours (distance <= 0.123)'
    >>> review_reason(1.0, 1, 0.05)
    'scored 1 above its nearest neighbour (distance 0.05)'
    """
    side = "below" if gap < 0 else "above"
    if n_neighbors == 1:
        return f"scored {_number(abs(gap))} {side} its nearest neighbour (distance {_number(farthest)})"
    return (
        f"scored {_number(abs(gap))} {side} the mean of its {n_neighbors} nearest "
        f"neighbours (distance <= {_number(farthest)})"
    )


class ReviewAnalysis(PairAnalysis):
    """Essays to review, worst pairs and empirical Lipschitz constants.

    See the module docstring for the tables. ``n_neighbors`` and ``n_review``
    come from the study's settings; a study with ``n_neighbors`` or fewer
    essays uses every other essay as neighbours, with a note. Notes also
    carry the pair metrics' UserWarnings (e.g. all distances equal) with the
    places they arose.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.spatial.distance import pdist
    >>> from sklearn_fairaes.report._study import PairSpace, Settings, Study, System
    >>> X = np.random.default_rng(0).random((6, 3))
    >>> D = pdist(X, "cosine")
    >>> human = np.array([1.0, 2, 3, 1, 2, 3])
    >>> study = Study(
    ...     prompt="all", prompt_text=None, essays=["essay"] * 6, ids=np.arange(1, 7),
    ...     rows=np.arange(1, 7), human=human, score_range=(1.0, 3.0),
    ...     score_range_source="inferred", settings=Settings(n_neighbors=2, n_review=3),
    ...     systems={"engine": System("engine", "given", {None: human[::-1].copy()})},
    ...     spaces={"tfidf": PairSpace("tfidf", None, X, D, "precomputed", D)},
    ... )
    >>> out = ANALYSIS.run(study)
    >>> review = out.tables["review_list"]
    >>> sorted(set(review["system"])), int(review["rank"].max())
    (['engine', 'human'], 3)
    >>> out.tables["lipschitz_constants"]["quantile"].tolist()[:3]
    [0.9, 0.95, 0.99]
    """

    name = "review"
    title = "Essays to review"

    def run(self, study: Study) -> AnalysisOutput:
        """Compute the tables of the module docstring on one study.

        Parameters
        ----------
        study : Study
            One prompt's essays, systems and pair spaces.

        Returns
        -------
        output : AnalysisOutput
            The tables (no ``prompt`` column), notes and warnings.
        """
        from ...metrics._review import _review_results

        pd = require("pandas", purpose="the audit")
        settings = study.settings
        n_jobs = settings.n_jobs
        n_review = int(settings.n_review)
        k = min(int(settings.n_neighbors), study.n - 1)
        out = AnalysisOutput()
        if k < settings.n_neighbors:
            out.notes.append(
                f"Essays to review: {study.n} essays, so each is compared with its {k} "
                f"other essays instead of the {settings.n_neighbors} nearest neighbours "
                f"asked for (n_neighbors)."
            )
        collected: dict[str, list[str]] = {}
        human = np.asarray(study.human, dtype=float)
        # numpy scalars (np.str_) as plain Python values in the tables
        ids, rows, texts = study.ids.tolist(), study.rows, study.essays
        rows_review: list[tuple[Any, ...]] = []
        rows_neighbors: list[tuple[Any, ...]] = []
        rows_violations: list[tuple[Any, ...]] = []
        rows_consistency: list[tuple[Any, ...]] = []
        rows_constants: list[tuple[Any, ...]] = []
        rows_profile: list[tuple[Any, ...]] = []
        for rname, space in study.spaces.items():
            pairs, metric = space.pairs, space.metric
            for sname, s in study.scored(rname).items():
                s = np.asarray(s, dtype=float)
                place = where(rname, sname)
                # the three metrics from one shared pass over the pairs (the
                # values of essay_consistency, lipschitz_violations and
                # lipschitz_profile called one by one)
                ec, lv, lp = noting(
                    collected,
                    place,
                    _review_results,
                    pairs,
                    s,
                    n_neighbors=k,
                    top=n_review,
                    quantiles=QUANTILES,
                    metric=metric,
                    n_jobs=n_jobs,
                )
                flagged = _flagged(ec, n_review)
                for rank, i in enumerate(flagged, start=1):
                    neighbors = np.asarray(ec.neighbors[i])
                    distances = np.asarray(ec.distances[i], dtype=float)
                    rows_review.append(
                        (
                            rname,
                            sname,
                            rank,
                            ids[i],
                            int(rows[i]),
                            float(s[i]),
                            float(human[i]),
                            float(ec.neighbor_mean[i]),
                            float(ec.gap[i]),
                            float(ec.mean_abs_diff[i]),
                            float(ec.max_abs_diff[i]),
                            k,
                            ids[neighbors[0]],
                            float(distances[0]),
                            float(distances[-1]),
                            review_reason(float(ec.gap[i]), k, float(distances[-1])),
                            texts[i],
                        )
                    )
                    rows_neighbors += [
                        (
                            rname,
                            sname,
                            rank,
                            ids[i],
                            r,
                            ids[j],
                            int(rows[j]),
                            float(distances[r - 1]),
                            float(s[j]),
                            float(human[j]),
                            float(abs(s[i] - s[j])),
                            texts[j],
                        )
                        for r, j in enumerate(neighbors.tolist(), start=1)
                    ]
                rows_violations += [
                    (
                        rname,
                        sname,
                        int(lv.rank[t]),
                        ids[a],
                        ids[b],
                        int(rows[a]),
                        int(rows[b]),
                        float(lv.distance[t]),
                        float(lv.normalized_distance[t]),
                        float(lv.score_i[t]),
                        float(lv.score_j[t]),
                        float(human[a]),
                        float(human[b]),
                        float(lv.abs_diff[t]),
                        float(lv.normalized_diff[t]),
                        float(lv.violation[t]),
                        texts[a],
                        texts[b],
                    )
                    for t, (a, b) in enumerate(
                        zip(np.asarray(lv.i).tolist(), np.asarray(lv.j).tolist())
                    )
                ]
                rows_consistency.append(
                    (
                        rname,
                        sname,
                        study.n,
                        k,
                        float(ec.consistency),
                        float(np.mean(np.abs(ec.gap))),
                        len(flagged),
                        int(lv.n_pairs),
                        int(lv.n_violations),
                    )
                )
                rows_constants += [
                    (rname, sname, float(q), float(c))
                    for q, c in zip(lp.quantiles, lp.quantile_constants)
                ]
                rows_profile += [
                    (rname, sname, float(c), float(f))
                    for c, f in zip(lp.curve_constant, lp.curve_fraction)
                ]
        out.notes += pair_notes(collected, label="Essays to review")
        out.tables = {
            "review_list": pd.DataFrame(rows_review, columns=REVIEW_COLUMNS),
            "review_neighbors": pd.DataFrame(rows_neighbors, columns=NEIGHBOR_COLUMNS),
            "lipschitz_violations": pd.DataFrame(
                rows_violations, columns=VIOLATION_COLUMNS
            ),
            "essay_consistency": pd.DataFrame(
                rows_consistency, columns=CONSISTENCY_COLUMNS
            ),
            "lipschitz_constants": pd.DataFrame(rows_constants, columns=CONSTANT_COLUMNS),
            "lipschitz_profile": pd.DataFrame(rows_profile, columns=PROFILE_COLUMNS),
        }
        return out


def _flagged(ec: Any, n_review: int) -> list[int]:
    """The positions of the essays to review: largest ``|gap|`` first, gap not 0."""
    order = np.asarray(ec.review_order)[:n_review]
    gap = np.abs(np.asarray(ec.gap, dtype=float))
    keep: NDArray[np.intp] = order[gap[order] > _GAP_TOLERANCE]
    return [int(i) for i in keep]


ANALYSIS = ReviewAnalysis()
