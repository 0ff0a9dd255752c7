"""Agreement of every system with the human scores (paper §4.3, Table 2).

One row per system and representation (given and fitted systems once, with
``representation=""``: their scores do not depend on one), from
:func:`~sklearn_fairaes.metrics.agreement_report` on the study's score
scale -- declared, or inferred from the human scores, never the range a
system happens to use. A system predicting 0 and 6 on a declared 0-6 scale
where the humans used 2-4 is scored as wrong, not clipped into agreement.
Continuous predictions are trimmed to ``[low - 0.4998, high + 0.4998]``
before rounding (RSMTool's ``trim``), and ``n_outside_scale`` counts the
scores that were off the scale before trimming.

Two columns reproduce the paper's own code, on the untrimmed predictions:
``qwk_truncated`` (the Kaggle function, which truncates both score vectors
to integers) and ``abs_smd_paper`` (the SMD with population SDs).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ...resources import require
from ._base import AnalysisOutput

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from pandas import DataFrame

    from .._study import Study


class _Agreement:
    """The ``agreement`` and ``human_agreement`` tables of one study."""

    name = "agreement"
    title = "Agreement with the human scores"

    def absent(self, study: Study) -> str | None:
        """None, unless the study grades short answers (see the grading section)."""
        if study.short_answer:
            return (
                "short answers are graded as fractions of the question's points; their "
                "agreement with the human grades is the RMSE and wRMSE of the grading "
                "section"
            )
        if not study.systems:
            return "no system to compare with the human scores"
        return None

    def run(self, study: Study) -> AnalysisOutput:
        """The agreement of every system, and of the two raters when given."""
        tables = {"agreement": agreement_table(study)}
        if study.raters is not None and study.rater_cols is not None:
            tables["human_agreement"] = human_agreement_table(
                study.raters, study.rater_cols
            )
        return AnalysisOutput(tables=tables)


def agreement_table(study: Study) -> DataFrame:
    """The ``agreement`` table of ``study`` (no ``prompt`` column); see the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report._study import Settings, Study, System
    >>> from sklearn_fairaes.report.analyses._agreement import agreement_table
    >>> human = np.array([2.0, 3, 4, 3, 2, 4])
    >>> study = Study(prompt="all", prompt_text=None, essays=["a"] * 6,
    ...               ids=np.arange(6), rows=np.arange(1, 7), human=human,
    ...               score_range=(0, 6), score_range_source="declared",
    ...               settings=Settings())
    >>> study.systems["engine"] = System("engine", "given",
    ...                                  {None: np.array([0.0, 3, 6, 3, 0, 6])})
    >>> row = agreement_table(study).iloc[0]
    >>> row["system"], row["kind"], round(float(row["qwk"]), 3), int(row["n_outside_scale"])
    ('engine', 'given', 0.6, 0)
    """
    from ...metrics import agreement_report, qwk, standardized_mean_difference

    pd = require("pandas", purpose="the audit")
    lo, hi = study.score_range
    order = {r: k for k, r in enumerate(study.spaces)}
    rows: list[tuple[str, str, str, Any]] = []
    for system in study.systems.values():
        for rname, scores in system.agreement_rows():
            rows.append((rname, system.name, system.kind, scores))
    # given and fitted systems first, then each representation's baselines
    rows.sort(key=lambda r: -1 if r[0] == "" else order.get(r[0], len(order)))
    preds = {str(k): r[3] for k, r in enumerate(rows)}
    raters = study.raters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        table = agreement_report(
            study.human,
            preds,
            rater1=None if raters is None else raters[0],
            rater2=None if raters is None else raters[1],
            score_range=(lo, hi),
        ).reset_index(drop=True)
        trunc = [qwk(study.human, p, rounding="truncate") for p in preds.values()]
        paper_smd = [
            abs(standardized_mean_difference(study.human, p, ddof=0))
            for p in preds.values()
        ]
    table.insert(0, "representation", [r[0] for r in rows])
    table.insert(1, "system", [r[1] for r in rows])
    table.insert(2, "kind", [r[2] for r in rows])
    table.insert(table.columns.get_loc("qwk") + 1, "qwk_truncated", trunc)
    table.insert(table.columns.get_loc("smd") + 1, "abs_smd_paper", paper_smd)
    if "degradation" not in table.columns:  # no raters: the contract keeps the columns
        at = table.columns.get_loc("abs_smd_paper")
        table.insert(at - 1, "human_human_qwk", np.nan)
        table.insert(at, "degradation", np.nan)
        table.insert(table.columns.get_loc("qwk_ok") + 1, "degradation_ok", False)
    return pd.DataFrame(table)


def human_agreement_table(
    raters: tuple[NDArray[np.float64], NDArray[np.float64]], rater_cols: tuple[str, str]
) -> DataFrame:
    """Agreement of the two raters, on the scale their scores span."""
    from ...metrics import agreement_rate, qwk

    pd = require("pandas", purpose="the audit")
    r1, r2 = raters
    scale = np.arange(min(r1.min(), r2.min()), max(r1.max(), r2.max()) + 1)
    return pd.DataFrame(
        [
            {
                "rater1": rater_cols[0],
                "rater2": rater_cols[1],
                "n": len(r1),
                "qwk": qwk(r1, r2, labels=scale),
                "exact_agreement": agreement_rate(r1, r2, labels=scale),
                "adjacent_agreement": agreement_rate(r1, r2, tolerance=1, labels=scale),
            }
        ]
    )


ANALYSIS = _Agreement()
