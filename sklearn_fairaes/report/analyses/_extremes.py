"""What each representation calls alike: extreme pairs and the feature-difference profile.

The paper's §5.1.2 (Figure 1) and §5.1.3 (Figure 2), on one study (one
prompt), per representation:

* ``"extreme_pairs"``: the ``k_extreme`` nearest and farthest pairs of
  essays, with their ids, texts and human scores (``row_a``/``row_b`` are
  the essays' positions in the study, from 0, as the pair metrics'
  ``i``/``j``; ``data_row_a``/``data_row_b`` their rows in the user's
  table, from 1, header not counted);
* ``"extreme_pair_features"``: the interpretable features of the nearest and
  of the farthest pair's two essays, min-max scaled over the study's
  essays;
* ``"feature_profile"``: the mean absolute feature difference of the
  nearest, medium and farthest pairs (``n_profile_pairs`` each, at most a
  tenth of all pairs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ...resources import require
from ._base import AnalysisOutput
from ._common import PairAnalysis

if TYPE_CHECKING:
    from .._study import Study

__all__ = ["ANALYSIS", "ExtremesAnalysis"]

EXTREME_PAIR_COLUMNS = [
    "representation", "which", "rank", "row_a", "row_b", "data_row_a", "data_row_b", "id_a",
    "id_b", "distance", "text_a", "text_b", "score_a", "score_b",
]  # fmt: skip
EXTREME_FEATURE_COLUMNS = ["representation", "which", "feature", "value_a", "value_b"]
PROFILE_COLUMNS = ["representation", "group", "feature", "mean_abs_diff"]


def minmax_columns(F: NDArray[Any]) -> NDArray[np.float64]:
    """Min-max scale each column of ``F`` to [0, 1]; a constant column becomes 0.

    Parameters
    ----------
    F : array-like of shape (n_essays, n_features)
        Interpretable features.

    Returns
    -------
    F_scaled : ndarray of shape (n_essays, n_features)
        The scaled features.

    Examples
    --------
    >>> import numpy as np
    >>> minmax_columns(np.array([[1.0, 5.0], [3.0, 5.0]])).tolist()
    [[0.0, 0.0], [1.0, 0.0]]
    """
    F = np.asarray(F, dtype=float)
    lo = F.min(axis=0)
    span = F.max(axis=0) - lo
    return np.where(span > 0, (F - lo) / np.where(span > 0, span, 1), 0.0)


def profile_pairs(n: int, n_profile_pairs: int) -> int:
    """Give the pairs per group of the feature profile: at most a tenth of all pairs.

    Parameters
    ----------
    n : int
        Number of essays.
    n_profile_pairs : int
        The requested pairs per group.

    Returns
    -------
    n_pairs : int
        ``n_profile_pairs`` capped at a tenth of the ``n * (n - 1) / 2`` pairs,
        and at least 1.

    Examples
    --------
    >>> profile_pairs(1000, 10_000), profile_pairs(40, 10_000), profile_pairs(4, 10)
    (10000, 78, 1)
    """
    return int(max(1, min(n_profile_pairs, n * (n - 1) // 2 // 10)))


class ExtremesAnalysis(PairAnalysis):
    """Extreme pairs per representation, their features and the feature profile.

    See the module docstring for the tables. Without interpretable features
    in the study only ``"extreme_pairs"`` is computed, and a note says so.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.spatial.distance import pdist
    >>> from sklearn_fairaes.report._study import PairSpace, Settings, Study
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.5, 0.5]])
    >>> D = pdist(X, "cosine")
    >>> study = Study(
    ...     prompt="all", prompt_text=None, essays=["a", "b", "c", "d"],
    ...     ids=np.array(["e1", "e2", "e3", "e4"]), rows=np.arange(1, 5),
    ...     human=np.array([1.0, 1, 3, 2]), score_range=(1.0, 3.0),
    ...     score_range_source="inferred", settings=Settings(),
    ...     spaces={"bow": PairSpace("bow", None, X, D, "precomputed", D)},
    ...     features=np.array([[10.0], [12.0], [30.0], [20.0]]), feature_names=["n_words"],
    ... )
    >>> out = ANALYSIS.run(study)
    >>> pairs = out.tables["extreme_pairs"]
    >>> [(p.which, str(p.id_a), str(p.id_b)) for p in pairs.itertuples()]
    [('nearest', 'e1', 'e2'), ('farthest', 'e1', 'e3')]
    """

    name = "extremes"
    title = "Essay similarity: extreme pairs and aggregate feature differences"

    def run(self, study: Study) -> AnalysisOutput:
        """Compute the three tables of the module docstring on one study.

        Parameters
        ----------
        study : Study
            One prompt's essays, systems and pair spaces.

        Returns
        -------
        output : AnalysisOutput
            The tables (no ``prompt`` column), notes and warnings.
        """
        from ...metrics import extreme_pairs, feature_difference_profile

        pd = require("pandas", purpose="the audit")
        settings = study.settings
        names = list(study.feature_names)
        F = None if study.features is None else np.asarray(study.features, dtype=float)
        if F is not None and F.shape != (study.n, len(names)):
            raise ValueError(
                f"prompt {study.prompt!r}: the study's features have shape {F.shape}, "
                f"expected ({study.n}, {len(names)}) (essays, feature_names)"
            )
        if F is not None and not names:
            F = None
        F_norm = None if F is None else minmax_columns(F)
        out = AnalysisOutput()
        if F is None:
            out.notes.append(
                "Extreme pairs: the study has no interpretable features, so the "
                "features of the extreme pairs and the feature-difference profile are "
                "left out."
            )
        rows_ext: list[tuple[Any, ...]] = []
        rows_feat: list[tuple[Any, ...]] = []
        rows_prof: list[tuple[Any, ...]] = []
        # a small prompt of a many-prompt audit may have fewer pairs than the
        # k_extreme asked for every prompt: show all of its pairs
        n_pairs = study.n * (study.n - 1) // 2
        k = min(settings.k_extreme, n_pairs)
        if k < settings.k_extreme:
            out.notes.append(
                f"Extreme pairs: {study.n} essays have {n_pairs} pairs, fewer than "
                f"k_extreme={settings.k_extreme}; each end shows all {n_pairs}."
            )
        for rname, space in study.spaces.items():
            ext = extreme_pairs(
                space.pairs,
                k=k,
                metric=space.metric,
                n_jobs=settings.n_jobs,
            )
            for which in ("nearest", "farthest"):
                part = ext[which]
                for rank in range(len(part["i"])):
                    a, b = int(part["i"][rank]), int(part["j"][rank])
                    rows_ext.append(
                        (
                            rname,
                            which,
                            rank + 1,
                            a,
                            b,
                            int(study.rows[a]),
                            int(study.rows[b]),
                            study.ids[a],
                            study.ids[b],
                            float(part["distance"][rank]),
                            study.essays[a],
                            study.essays[b],
                            float(study.human[a]),
                            float(study.human[b]),
                        )
                    )
                    if rank == 0 and F_norm is not None:
                        rows_feat += [
                            (rname, which, f, float(F_norm[a, k]), float(F_norm[b, k]))
                            for k, f in enumerate(names)
                        ]
            if F is None:
                continue
            prof = feature_difference_profile(
                space.pairs,
                F,
                n_pairs=profile_pairs(study.n, settings.n_profile_pairs),
                metric=space.metric,
                feature_names=names,
                n_jobs=settings.n_jobs,
            )
            for g, group in enumerate(prof["group"]):
                # the report's word for the pairs around the median distance
                label = {"median": "medium"}.get(str(group), str(group))
                rows_prof += [
                    (rname, label, f, float(prof["mean_abs_diff"][g][k]))
                    for k, f in enumerate(names)
                ]
        out.tables["extreme_pairs"] = pd.DataFrame(rows_ext, columns=EXTREME_PAIR_COLUMNS)
        if F is not None:
            out.tables["extreme_pair_features"] = pd.DataFrame(
                rows_feat, columns=EXTREME_FEATURE_COLUMNS
            )
            out.tables["feature_profile"] = pd.DataFrame(rows_prof, columns=PROFILE_COLUMNS)
        return out


ANALYSIS = ExtremesAnalysis()
