"""Individual fairness of every system: the Lipschitz fraction and the score-distance curves.

The paper's §5.3.2 (Table 3, Figure 4) and §5.3.3 (Figures 5 and 6), on one
study (one prompt): for every representation and every scoring system
audited under it (given and fitted systems under every representation,
trained baselines under their own), and for the human scores,

* ``"lipschitz"``: the Lipschitz fraction with min-max and with max
  normalisation, with its pair counts (so that the audit can pool prompts
  weighted by pairs);
* ``"score_distance"``: the mean absolute score difference per distance bin,
  5 and 100 bins (fewer on tiny corpora: every bin holds two pairs);
* ``"trend"``: Spearman's rho of those curves (do far essays differ more?);
* ``"distance_distribution"``: normalised histograms of the pair distances
  (series ``"distance"``) and of each system's pair score differences.

Every pair is within the study: essays on different prompts are never paired.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray

from ...resources import require
from ._base import AnalysisOutput
from ._common import PairAnalysis, degenerate_distances, noting, pair_notes, where

if TYPE_CHECKING:
    from .._study import PairSpace, Study

__all__ = ["ANALYSIS", "LipschitzAnalysis"]

_HIST_BINS = 50

LIPSCHITZ_COLUMNS = [
    "representation", "system", "lipschitz_minmax", "lipschitz_max", "n_pairs",
    "n_satisfied_minmax", "n_satisfied_max",
]  # fmt: skip
SCORE_DISTANCE_COLUMNS = [
    "representation", "system", "n_bins", "bin", "n_pairs", "distance_min", "distance_max",
    "mean_abs_diff", "se",
]  # fmt: skip
TREND_COLUMNS = ["representation", "system", "n_bins", "spearman_rho", "spearman_pvalue"]
DISTRIBUTION_COLUMNS = ["representation", "series", "bin_left", "bin_right", "density"]


def curve_bins(n: int) -> list[int]:
    """Give the bin counts of the score-distance curves for ``n`` essays: 5 and 100.

    Every bin needs two pairs, so tiny corpora get fewer bins (and one curve
    when 5 and 100 coincide).

    Parameters
    ----------
    n : int
        Number of essays.

    Returns
    -------
    n_bins : list of int
        The distinct bin counts, smallest first.

    Examples
    --------
    >>> curve_bins(40), curve_bins(5), curve_bins(4)
    ([5, 100], [5], [3])
    """
    most = n * (n - 1) // 4
    return sorted({min(5, most), min(100, most)})


def normalised_histogram(
    values: NDArray[Any], bins: int = _HIST_BINS
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Histogram ``values`` min-max scaled to [0, 1].

    Distances and score differences have different units; scaled, their
    distributions can be drawn on one axis (the paper's Figure 4). All-equal
    values are all put at 0.

    Parameters
    ----------
    values : ndarray of shape (n_values,)
        Pair distances or score differences.
    bins : int, default=50
        Number of equal-width bins over [0, 1].

    Returns
    -------
    edges : ndarray of shape (bins + 1,)
        Bin edges.
    density : ndarray of shape (bins,)
        Density per bin (integrates to 1 over [0, 1]).

    Examples
    --------
    >>> import numpy as np
    >>> edges, density = normalised_histogram(np.array([0.0, 1.0, 2.0, 2.0]), bins=2)
    >>> edges.tolist(), density.tolist()
    ([0.0, 0.5, 1.0], [0.5, 1.5])
    """
    lo, hi = float(values.min()), float(values.max())
    scaled = (values - lo) / (hi - lo) if hi > lo else np.zeros_like(values)
    density, edges = np.histogram(scaled, bins=bins, range=(0.0, 1.0), density=True)
    return edges, density


def _score_differences(space: PairSpace, s: NDArray[np.float64]) -> NDArray[np.float64]:
    """The absolute score differences of the pairs whose distances ``distance_sample`` holds."""
    if space.sample_pairs is None:
        from scipy.spatial.distance import pdist

        # distance_sample holds every pair, in pdist's condensed order
        return cast("NDArray[np.float64]", pdist(s[:, None], "cityblock"))
    i, j = space.sample_pairs
    return np.abs(s[i] - s[j])


class LipschitzAnalysis(PairAnalysis):
    """Lipschitz fractions, score-distance curves, their trend and the distributions.

    See the module docstring for the tables. Notes: the pair metrics'
    UserWarnings with the places they arose, and, for a representation
    whose distances are sampled (too many essays to hold all pairs), that
    its distribution is drawn from a sample. Warnings: a representation
    under which most pair distances are 0 or one same value.

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
    ...     score_range_source="inferred", settings=Settings(),
    ...     systems={"engine": System("engine", "given", {None: human[::-1].copy()})},
    ...     spaces={"tfidf": PairSpace("tfidf", None, X, D, "precomputed", D)},
    ... )
    >>> out = ANALYSIS.run(study)
    >>> out.tables["lipschitz"]["system"].tolist()
    ['engine', 'human']
    >>> int(out.tables["lipschitz"]["n_pairs"].iloc[0])
    15
    """

    name = "lipschitz"
    title = "Individual fairness: Lipschitz fraction and score difference vs. distance"

    def run(self, study: Study) -> AnalysisOutput:
        """Compute the four tables of the module docstring on one study.

        Parameters
        ----------
        study : Study
            One prompt's essays, systems and pair spaces.

        Returns
        -------
        output : AnalysisOutput
            The tables (no ``prompt`` column), notes and warnings.
        """
        from ...metrics import lipschitz_fraction, score_distance_curve

        pd = require("pandas", purpose="the audit")
        n_jobs = study.settings.n_jobs
        out = AnalysisOutput()
        collected: dict[str, list[str]] = {}
        rows_lip: list[tuple[Any, ...]] = []
        rows_curve: list[tuple[Any, ...]] = []
        rows_trend: list[tuple[Any, ...]] = []
        rows_dist: list[tuple[Any, ...]] = []
        for rname, space in study.spaces.items():
            pairs, metric = space.pairs, space.metric
            d_sample = np.asarray(space.distance_sample, dtype=float)
            if space.sample_pairs is not None:
                out.notes.append(
                    f"{rname}: distance distributions are drawn from {len(d_sample):,} "
                    f"random pairs ({study.n:,} essays are too many to hold all pairs); "
                    f"every other pair metric uses all pairs."
                )
            degenerate = degenerate_distances(rname, d_sample)
            if degenerate is not None:
                out.warnings.append({"representation": rname, "message": degenerate})
            edges, dens = normalised_histogram(d_sample)
            rows_dist += [
                (rname, "distance", edges[k], edges[k + 1], dens[k])
                for k in range(len(dens))
            ]
            for sname, s in study.scored(rname).items():
                s = np.asarray(s, dtype=float)
                place = where(rname, sname)
                # the pair metrics' UserWarnings (e.g. all distances equal) are
                # facts about this representation and these scores: report notes
                counts = {
                    normalize: cast(
                        Mapping[str, Any],
                        noting(
                            collected,
                            place,
                            lipschitz_fraction,
                            pairs,
                            s,
                            metric=metric,
                            normalize=normalize,
                            return_counts=True,
                            n_jobs=n_jobs,
                        ),
                    )
                    for normalize in ("minmax", "max")
                }
                rows_lip.append(
                    (
                        rname,
                        sname,
                        float(counts["minmax"]["fraction"]),
                        float(counts["max"]["fraction"]),
                        int(counts["minmax"]["n_pairs"]),
                        int(counts["minmax"]["n_satisfied"]),
                        int(counts["max"]["n_satisfied"]),
                    )
                )
                for n_bins in curve_bins(study.n):
                    curve = noting(
                        collected,
                        place,
                        score_distance_curve,
                        pairs,
                        s,
                        n_bins=n_bins,
                        metric=metric,
                        n_jobs=n_jobs,
                    )
                    rows_curve += [
                        (
                            rname,
                            sname,
                            n_bins,
                            int(curve["bin"][b]),
                            int(curve["n_pairs"][b]),
                            float(curve["distance_min"][b]),
                            float(curve["distance_max"][b]),
                            float(curve["mean_abs_diff"][b]),
                            float(curve["sem"][b]),
                        )
                        for b in range(len(curve["bin"]))
                    ]
                    rows_trend.append(
                        (
                            rname,
                            sname,
                            n_bins,
                            float(curve["spearman_rho"]),
                            float(curve["spearman_pvalue"]),
                        )
                    )
                edges, dens = normalised_histogram(_score_differences(space, s))
                rows_dist += [
                    (rname, sname, edges[k], edges[k + 1], dens[k])
                    for k in range(len(dens))
                ]
        out.notes += pair_notes(collected)
        out.tables = {
            "lipschitz": pd.DataFrame(rows_lip, columns=LIPSCHITZ_COLUMNS),
            "score_distance": pd.DataFrame(rows_curve, columns=SCORE_DISTANCE_COLUMNS),
            "trend": pd.DataFrame(rows_trend, columns=TREND_COLUMNS),
            "distance_distribution": pd.DataFrame(rows_dist, columns=DISTRIBUTION_COLUMNS),
        }
        return out


ANALYSIS = LipschitzAnalysis()
