"""The group view: group fairness beside individual fairness, per system.

With a group column (e.g. a demographic), four tidy tables put group
fairness (the related work of the paper's §1) beside its individual
fairness (§5.3.2, whose link to group fairness its §6 leaves open). Each is
a direct call of a metric function of :mod:`sklearn_fairaes.metrics`, so the
report shows exactly what a direct call gives:

* ``group_agreement``: ``representation``, ``system``, ``group``, then the
  columns of :func:`~sklearn_fairaes.metrics.group_agreement_report`, one
  row per group and a last row ``group="all"``;
* ``group_fairness``: ``representation``, ``system``, ``metric`` (``"osa"``,
  ``"osd"``, ``"csd"``), then the summary of
  :func:`~sklearn_fairaes.metrics.fairness_analyses`;
* ``group_fairness_coefficients``: ``representation``, ``system``, then its
  coefficient table;
* ``group_lipschitz``: ``representation``, ``system`` (the systems and
  ``"human"``), ``scope`` (``"overall"``, ``"within"``, ``"cross"``, or
  ``"group"``), ``group``, ``n_essays``, ``n_pairs``, ``n_satisfied``,
  ``fraction``, from :func:`~sklearn_fairaes.metrics.group_lipschitz_fraction`
  on the study's shared pairs with min-max normalisation: its ``overall`` row
  equals the ``lipschitz`` table's ``lipschitz_minmax``.

The agreement tables have one block per agreement row of a system: a trained
baseline under its own representation, a given or fitted system once with
``representation=""`` (its scores do not depend on one). The Lipschitz table
has one block per representation and every system audited under it.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ...exceptions import UndefinedMetricWarning
from ...resources import require
from ._base import AnalysisOutput
from ._common import noting, pair_notes

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from pandas import DataFrame

    from .._study import Study

__all__ = ["ANALYSIS", "GROUP_LIPSCHITZ_COLUMNS"]

#: Columns of the ``group_lipschitz`` table, in order.
GROUP_LIPSCHITZ_COLUMNS = (
    "representation", "system", "scope", "group", "n_essays", "n_pairs", "n_satisfied",
    "fraction",
)  # fmt: skip

# RSMTool's trim: continuous predictions are clipped to half a point (less a
# hair, so that rounding stays on the scale) beyond its ends before the QWK,
# as in the agreement table.
_TRIM = 0.4998


def _qwk_options(
    study: Study, kind: str, scores: NDArray[np.float64]
) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """The scores of the group tables and the QWK options for one system.

    Essays: the study's scale (declared or inferred) as the labels, never
    the observed range, and continuous predictions trimmed as in the
    agreement table (RSMTool computes its fairness analyses on trimmed
    predictions too). Short answers are grades in [0, 1]: the continuous QWK,
    with predictions clipped to [0, 1].
    """
    given = kind == "given"  # given scores are on the scale: checked up front
    if study.short_answer:
        # a grade cannot leave [0, 1]: clipped, as in the grading table
        return (scores if given else np.clip(scores, 0.0, 1.0)), {"rounding": None}
    lo, hi = study.score_range
    if not given:
        scores = np.clip(scores, lo - _TRIM, hi + _TRIM)
    return scores, {"labels": np.arange(lo, hi + 1)}


def _lipschitz_rows(
    representation: str, system: str, result: Any, n: int
) -> list[tuple[Any, ...]]:
    """Rows of the ``group_lipschitz`` table for one representation and score series."""
    rows = [
        (representation, system, scope, "", n, int(result[pairs]), int(result[hits]),
         float(result[scope]))
        for scope, pairs, hits in (
            ("overall", "n_pairs", "n_satisfied"),
            ("within", "n_pairs_within", "n_satisfied_within"),
            ("cross", "n_pairs_cross", "n_satisfied_cross"),
        )
    ]  # fmt: skip
    for k, label in enumerate(result["group"]):
        rows.append(
            (
                representation,
                system,
                "group",
                str(label),
                int(result["group_n_essays"][k]),
                int(result["group_n_pairs"][k]),
                int(result["group_n_satisfied"][k]),
                float(result["group_fraction"][k]),
            )
        )
    return rows


def _stacked(frames: list[DataFrame], columns: list[str]) -> DataFrame:
    """The frames one below the other, ``representation`` and ``system`` first."""
    pd = require("pandas", purpose="the audit")
    if not frames:
        return pd.DataFrame(columns=["representation", "system", *columns])
    frame = pd.concat(frames, ignore_index=True)
    rest = [c for c in frame.columns if c not in ("representation", "system")]
    return frame[["representation", "system", *rest]]


class _GroupView:
    """The ``groups`` analysis; see the module docstring."""

    name = "groups"
    title = "Group view"

    def absent(self, study: Study) -> str | None:
        """Why the group view cannot run on ``study``, or None when it can."""
        if study.groups is None:
            return "no group column was given (group_col= / --group-col)"
        if not study.systems and not study.spaces:
            return "no scoring system and no representation to compare groups with"
        return None

    def run(self, study: Study) -> AnalysisOutput:
        """The four group tables of one study.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_fairaes.report._study import Settings, Study, System
        >>> from sklearn_fairaes.report.analyses._groups import ANALYSIS
        >>> study = Study(
        ...     prompt="all", prompt_text=None, essays=["a", "b", "c", "d"],
        ...     ids=np.arange(1, 5), rows=np.arange(1, 5),
        ...     human=np.array([1.0, 2.0, 3.0, 4.0]), score_range=(1, 4),
        ...     score_range_source="declared", settings=Settings(),
        ...     groups=np.array(["x", "y", "x", "y"]),
        ...     systems={"engine": System("engine", "given",
        ...                               {None: np.array([1.0, 2.0, 4.0, 4.0])})})
        >>> out = ANALYSIS.run(study)
        >>> out.tables["group_agreement"][["system", "group", "n"]].values.tolist()
        [['engine', 'x', 2], ['engine', 'y', 2], ['engine', 'all', 4]]
        """
        from ...metrics import (
            fairness_analyses,
            group_agreement_report,
            group_lipschitz_fraction,
        )

        pd = require("pandas", purpose="the audit")
        groups = study.groups
        if groups is None:
            raise ValueError(f"prompt {study.prompt!r} has no groups: {self.absent(study)}")
        collected: dict[str, list[str]] = {}
        agreement: list[DataFrame] = []
        summary: list[DataFrame] = []
        coefficients: list[DataFrame] = []
        for name, system in study.systems.items():
            for representation, raw in system.agreement_rows():
                where = f"{representation} + {name}" if representation else name
                scores, options = _qwk_options(study, system.kind, raw)
                report = noting(
                    collected,
                    where,
                    group_agreement_report,
                    study.human,
                    scores,
                    groups=groups,
                    keep=UndefinedMetricWarning,
                    **options,
                ).reset_index()
                fair = noting(
                    collected,
                    where,
                    fairness_analyses,
                    study.human,
                    scores,
                    groups=groups,
                    keep=UndefinedMetricWarning,
                )
                for frame, out in (
                    (report, agreement),
                    (fair.summary.reset_index(), summary),
                    (fair.coefficients, coefficients),
                ):
                    out.append(frame.assign(representation=representation, system=name))

        rows: list[tuple[Any, ...]] = []
        for rname, space in study.spaces.items():
            for sname, scores in study.scored(rname).items():
                where = (
                    f"{rname}, human scores" if sname == "human" else f"{rname} + {sname}"
                )
                with warnings.catch_warnings():
                    # the pair metrics' own UserWarnings (all distances equal, ...)
                    # concern the same pairs and scores as the Lipschitz table,
                    # whose notes report them once
                    warnings.simplefilter("ignore", category=UserWarning)
                    result = noting(
                        collected,
                        where,
                        group_lipschitz_fraction,
                        space.pairs,
                        scores,
                        groups=groups,
                        metric=space.metric,
                        normalize="minmax",
                        n_jobs=study.settings.n_jobs,
                        keep=UndefinedMetricWarning,
                    )
                rows += _lipschitz_rows(rname, sname, result, study.n)
        tables = {
            "group_agreement": _stacked(agreement, ["group"]),
            "group_fairness": _stacked(summary, ["metric"]),
            "group_fairness_coefficients": _stacked(coefficients, ["metric"]),
            "group_lipschitz": pd.DataFrame(rows, columns=list(GROUP_LIPSCHITZ_COLUMNS)),
        }
        return AnalysisOutput(tables=tables, notes=pair_notes(collected, "Group view"))


#: The group view, as the audit runs it.
ANALYSIS = _GroupView()
