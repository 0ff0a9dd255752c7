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

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...exceptions import UndefinedMetricWarning
from ...resources import require
from .._cells import (
    _NA,
    _THRESHOLDS,
    Cell,
    _cell,
    _flag,
    _mean_sd,
    _mod,
    _num,
    _ordered,
    _pct,
    _present,
    _pvalue,
    _rep,
    _system_order,
    _table,
    _text,
    _th,
)
from .._plots import (
    _ALL_ESSAYS_COLOR,
    _GROUP_PALETTE,
    _PANEL_H,
    _PANEL_W,
    _check_table,
    _figure,
    _legend,
    _mpl,
    _panel_axes,
    model_colors,
    model_label,
    representation_label,
)
from .._plots import _ordered as _pordered
from .._plots import _text as _ptext
from ._base import AnalysisOutput, FigureContext, Heading, Section
from ._common import noting, pair_notes

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure
    from numpy.typing import NDArray
    from pandas import DataFrame

    from .._study import Study

__all__ = ["ANALYSIS", "GROUP_LIPSCHITZ_COLUMNS"]

#: Columns of the ``group_lipschitz`` table, in order.
GROUP_LIPSCHITZ_COLUMNS = (
    "representation", "system", "grouping", "scope", "group", "n_essays", "n_pairs", "n_satisfied",
    "fraction",
)  # fmt: skip


def _smd_method(study: Study) -> Any:
    """The SMD denominator of the audit (``smd_method``), for the estimates and their replicates alike."""
    return getattr(study.settings, "smd_method", "unpooled")


# The interval columns of the agreement table (NaN without a bootstrap and for
# groups too small to test).
_CI_COLUMNS = ("smd_ci_low", "smd_ci_high", "dsm_ci_low", "dsm_ci_high")

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
    if study.score_step == "continuous":
        return np.clip(scores, lo - _TRIM, hi + _TRIM), {"rounding": None}
    if isinstance(study.score_step, float):
        from ._agreement import score_points

        # on the step's grid; the quadratic-weighted kappa of grid values is
        # the continuous formula applied to them (the weights' normaliser
        # cancels), so no integer labels are needed
        return score_points(study, scores), {"rounding": None}
    if not given:
        scores = np.clip(scores, lo - _TRIM, hi + _TRIM)
    return scores, {"labels": np.arange(lo, hi + 1)}


def _lipschitz_rows(
    representation: str, system: str, grouping: str, result: Any, n: int
) -> list[tuple[Any, ...]]:
    """Rows of the ``group_lipschitz`` table for one representation, score series
    and grouping."""
    rows = [
        (representation, system, grouping, scope, "", n, int(result[pairs]), int(result[hits]),
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
                grouping,
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

    def absent(self, study: Study) -> str | None:
        """Why the group view cannot run on ``study``, or None when it can."""
        if not study.grouping_labels():
            return "no group column was given (group_col= / --group-col, bin_cols= / --bin-col)"
        if not study.systems and not study.spaces:
            return "no scoring system and no representation to compare groups with"
        return None

    def run(self, study: Study) -> AnalysisOutput:
        """The four group tables of one study, one block of rows per grouping.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_fairaes.report._study import Settings, Study, System
        >>> from sklearn_fairaes.report.analyses._groups import ANALYSIS
        >>> study = Study(
        ...     prompt="all", prompt_text=None, essays=["a", "b", "c", "d"],
        ...     ids=np.arange(1, 5), rows=np.arange(1, 5),
        ...     human=np.array([1.0, 2.0, 3.0, 4.0]), score_range=(1, 4),
        ...     score_range_source="declared",
        ...     settings=Settings(min_group_size=2, n_bootstrap=0),
        ...     groups=np.array(["x", "y", "x", "y"]),
        ...     systems={"engine": System("engine", "given",
        ...                               {None: np.array([1.0, 2.0, 4.0, 4.0])})})
        >>> out = ANALYSIS.run(study)
        >>> out.tables["group_agreement"][["grouping", "group", "n", "tested"]].values.tolist()
        [['group', 'x', 2, True], ['group', 'y', 2, True], ['group', 'all', 4, True]]
        """
        pd = require("pandas", purpose="the audit")
        groupings = study.grouping_labels()
        if not groupings:
            raise ValueError(f"prompt {study.prompt!r} has no groups: {self.absent(study)}")
        collected: dict[str, list[str]] = {}
        notes: list[str] = []
        frames: dict[str, list[DataFrame]] = {"agreement": [], "summary": [], "coef": []}
        replicates: dict[tuple[str, str, str, str], NDArray[np.float64]] = {}
        rows: list[tuple[Any, ...]] = []
        for gname, labels in groupings.items():
            notes += self._grouping(study, gname, labels, collected, frames, replicates)
            rows += self._lipschitz(study, gname, labels, collected)
        tables = {
            "group_agreement": _stacked(frames["agreement"], ["grouping", "group"]),
            "group_fairness": _stacked(frames["summary"], ["grouping", "metric"]),
            "group_fairness_coefficients": _stacked(frames["coef"], ["grouping", "metric"]),
            "group_lipschitz": pd.DataFrame(rows, columns=list(GROUP_LIPSCHITZ_COLUMNS)),
        }
        for key in ("group_agreement", "group_fairness", "group_fairness_coefficients"):
            tables[key] = tables[key].reindex(columns=list(SCHEMA[key]))
        return AnalysisOutput(
            tables=tables,
            notes=notes + pair_notes(collected, "Group view"),
            replicates=replicates,
        )

    @staticmethod
    def _grouping(
        study: Study,
        gname: str,
        labels: NDArray[Any],
        collected: dict[str, list[str]],
        frames: dict[str, list[DataFrame]],
        replicates: dict[tuple[str, str, str, str], NDArray[np.float64]],
    ) -> list[str]:
        """The agreement and fairness-regression rows of one grouping; its notes."""
        from ...metrics import fairness_analyses, group_agreement_report
        from ...metrics._bootstrap import bootstrap_interval
        from ...metrics._group_bootstrap import group_agreement_replicates

        min_size = int(getattr(study.settings, "min_group_size", 1))
        level = float(getattr(study.settings, "confidence_level", 0.95))
        names, codes, counts = np.unique(labels, return_inverse=True, return_counts=True)
        names = np.asarray([str(v) for v in names], dtype=object)
        tested = counts >= min_size
        notes = []
        if not tested.all():
            small = ", ".join(
                f"{v!r} (n={c})" for v, c in zip(names[~tested], counts[~tested])
            )
            notes.append(
                f"Group view, grouping {gname!r}: group(s) {small} have fewer than "
                f"min_group_size={min_size} essays; they are reported (n, means, "
                f"estimates) but not tested: no flags, no intervals, and they are left "
                f"out of the fairness regressions (OSA, OSD, CSD)."
            )
        keep = tested[codes]
        if tested.sum() < 2:
            notes.append(
                f"Group view, grouping {gname!r}: fewer than 2 groups have "
                f"min_group_size={min_size} essays, so no fairness regression is fitted."
            )
        weights = study.bootstrap_weights()
        # replicates of the tested groups, then of all essays (one more column)
        rep_codes = np.where(keep, np.searchsorted(np.flatnonzero(tested), codes), -1)
        n_rep = int(tested.sum())
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
                    groups=labels,
                    smd_method=_smd_method(study),
                    keep=UndefinedMetricWarning,
                    **options,
                ).reset_index()
                report["group"] = report["group"].astype(str)
                is_tested = [
                    g == "all" or bool(tested[names.tolist().index(g)])
                    for g in report["group"]
                ]
                report["tested"] = is_tested
                if not all(is_tested):
                    # no flag on a group too small to test (object column: None)
                    for flag in ("qwk_ok", "smd_ok", "dsm_ok"):
                        report[flag] = report[flag].astype(object).where(is_tested, None)
                ci = {c: np.full(len(report), np.nan) for c in _CI_COLUMNS}
                if weights is not None:
                    reps = group_agreement_replicates(
                        study.human,
                        scores,
                        rep_codes,
                        n_rep,
                        weights,
                        smd_method=_smd_method(study),
                    )
                    every = group_agreement_replicates(
                        study.human, scores, np.zeros(study.n, dtype=np.intp), 1, weights,
                        smd_method=_smd_method(study),
                    )  # fmt: skip
                    order = {str(v): k for k, v in enumerate(names[tested])}
                    for i, g in enumerate(report["group"]):
                        for stat in ("smd", "dsm"):
                            if g == "all":
                                r = every[stat][:, 0]
                            elif g in order:
                                r = reps[stat][:, order[g]]
                            else:
                                continue
                            low, high = bootstrap_interval(r, level)
                            ci[f"{stat}_ci_low"][i], ci[f"{stat}_ci_high"][i] = low, high
                            column = f"{stat}[{gname}={g}]"
                            replicates[
                                ("group_agreement", representation, name, column)
                            ] = r
                for c, values in ci.items():
                    report[c] = values
                frames["agreement"].append(
                    report.assign(
                        representation=representation, system=name, grouping=gname
                    )
                )
                if tested.sum() < 2:
                    continue
                fair = noting(
                    collected,
                    where,
                    fairness_analyses,
                    study.human[keep],
                    scores[keep],
                    groups=labels[keep],
                    keep=UndefinedMetricWarning,
                )
                for frame, out in (
                    (fair.summary.reset_index(), frames["summary"]),
                    (fair.coefficients, frames["coef"]),
                ):
                    out.append(
                        frame.assign(
                            representation=representation, system=name, grouping=gname
                        )  # fmt: skip
                    )
        return notes

    @staticmethod
    def _lipschitz(
        study: Study, gname: str, labels: NDArray[Any], collected: dict[str, list[str]]
    ) -> list[tuple[Any, ...]]:
        """The ``group_lipschitz`` rows of one grouping (every group: counts, no test)."""
        from ...metrics import group_lipschitz_fraction

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
                        groups=labels,
                        metric=space.metric,
                        normalize="minmax",
                        n_jobs=study.settings.n_jobs,
                        keep=UndefinedMetricWarning,
                    )
                rows += _lipschitz_rows(rname, sname, gname, result, study.n)
        return rows


#: The group view, as the audit runs it.
ANALYSIS = _GroupView()


# --------------------------------------------------------------------------- view


_FAIRNESS_ANALYSES = (("osa", "OSA"), ("osd", "OSD"), ("csd", "CSD"))


def _group_name(label: object) -> Cell:
    return Cell("All essays", "em") if str(label) == "all" else Cell(str(label))


def _by_system(
    table: pd.DataFrame, meta: Mapping[str, Any], *, human: bool = False
) -> list[tuple[str, str, pd.DataFrame]]:
    """(representation, system, rows) in the report's order."""
    out = []
    for r in _ordered(table["representation"], meta.get("representations") or ()):
        sub = table[table["representation"].astype(str) == r]
        last = ("human",) if human else ()
        for m in _ordered(sub["system"], _system_order(meta), last=last):
            out.append((r, m, sub[sub["system"].astype(str) == m]))
    return out


# what a flag cell of a group below min_group_size says
_UNTESTED = Cell("too small to test", "na")


def _tested_flag(value: object, tested: object) -> Cell:
    return _flag(value) if tested is not False else _UNTESTED


def _with_ci(value: object, low: object, high: object) -> Cell:
    """A figure and its interval: ``0.123 [0.051, 0.204]`` (the figure alone without one)."""
    cell = _num(value)
    if cell.kind == "na" or _num(low).kind == "na" or _num(high).kind == "na":
        return cell
    return Cell(f"{cell.text} [{_num(low).text}, {_num(high).text}]", numeric=True)


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The group view, one block per grouping (see :func:`_grouping_view`).

    ``blocks`` lists ``{"grouping", "agreement", "fairness", "coefficients",
    "lipschitz"}`` per grouping, in the tables' order; the top-level keys are
    the first block's.
    """
    names: list[str] = []
    for table in tables.values():
        if table is not None and "grouping" in getattr(table, "columns", ()):
            names += [str(g) for g in table["grouping"]]
    names = list(dict.fromkeys(names))
    if not names:
        block = _grouping_view(tables, meta)
        return {**block, "blocks": [{"grouping": None, **block}]}
    blocks = []
    for name in names:
        part = {
            key: None
            if table is None or "grouping" not in getattr(table, "columns", ())
            else table[table["grouping"].astype(str) == name]
            for key, table in tables.items()
        }
        blocks.append({"grouping": name, **_grouping_view(part, meta)})
    return {**{k: v for k, v in blocks[0].items() if k != "grouping"}, "blocks": blocks}


def _grouping_view(tables: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """The agreement, fairness models and Lipschitz fractions of one grouping."""
    out: dict[str, Any] = {
        "agreement": None,
        "fairness": None,
        "coefficients": None,
        "lipschitz": None,
    }
    th = _THRESHOLDS
    if _present(tables, "group_agreement"):
        table = tables["group_agreement"]
        _check_table(
            table,
            "group_agreement",
            [
                "representation", "system", "group", "n", "human_mean", "human_sd",
                "machine_mean", "machine_sd", "qwk", "smd", "dsm", "qwk_ok", "smd_ok",
                "dsm_ok",
            ],
        )  # fmt: skip
        rows: list[list[object]] = []
        for r, m, part in _by_system(table, meta):
            part = part.assign(_all=part["group"].astype(str) == "all").sort_values(
                "_all", kind="stable"
            )
            for g in part.to_dict("records"):
                tested = g.get("tested")
                rows.append(
                    [
                        _rep(r),
                        _mod(m),
                        _group_name(g["group"]),
                        _num(g["n"]),
                        _mean_sd(g["human_mean"], g["human_sd"]),
                        _mean_sd(g["machine_mean"], g["machine_sd"]),
                        _num(g["qwk"]),
                        _tested_flag(g["qwk_ok"], tested),
                        _with_ci(g["smd"], g.get("smd_ci_low"), g.get("smd_ci_high")),
                        _tested_flag(g["smd_ok"], tested),
                        _with_ci(g["dsm"], g.get("dsm_ci_low"), g.get("dsm_ci_high")),
                        _tested_flag(g["dsm_ok"], tested),
                    ]
                )
        grouping = set(table["grouping"].astype(str)) if "grouping" in table else set()
        columns = [c.strip() for c in str(meta.get("group_col") or "").split(",")]
        name = next(iter(grouping)) if len(grouping) == 1 else None
        column = (
            "" if name is None else f" (column {name})" if name in columns else f" ({name})"
        )
        out["agreement"] = _table(
            [
                "Representation", "System", "Group", "n", "Human score (mean ± SD)",
                "Machine score (mean ± SD)", "QWK", f"QWK ≥ {th['qwk']}",
                "SMD (machine − human)", f"|SMD| ≤ {th['smd']}", "DSM",
                f"|DSM| ≤ {th['dsm']}",
            ],
            rows,
            caption=f"Agreement with the human score by group{column}; DSM against all "
            "essays, as in RSMTool's report; SMD and DSM with their bootstrap interval "
            "[low, high] where there is one",
            flags={7, 9, 11},
        )  # fmt: skip
    if _present(tables, "group_fairness"):
        table = tables["group_fairness"]
        _check_table(
            table,
            "group_fairness",
            ["representation", "system", "metric", "r2_adjusted", "p_value", "base_group"],
        )
        top = [_th("Representation", rowspan=2), _th("System", rowspan=2)]
        top += [_th("Reference group", rowspan=2)]
        top += [_th(label, colspan=2, scope="colgroup") for _, label in _FAIRNESS_ANALYSES]
        second = []
        for _ in _FAIRNESS_ANALYSES:
            second += [
                _th("adj. R²", cls="num", scope=None),
                _th("p", cls="num", scope=None),
            ]
        rows = []
        for r, m, part in _by_system(table, meta):
            cells = {str(t["metric"]): t for t in part.to_dict("records")}
            base = next(iter(cells.values()))["base_group"] if cells else None
            row: list[object] = [_rep(r), _mod(m), _cell(base)]
            for key, _ in _FAIRNESS_ANALYSES:
                t = cells.get(key)
                row += [_num(t["r2_adjusted"]), _pvalue(t["p_value"])] if t else [_NA, _NA]
            rows.append(row)
        out["fairness"] = _table(
            None,
            rows,
            header_rows=[top, second],
            caption="Fairness analyses (Loukina, Madnani and Zechner 2019; as RSMTool): "
            "share of the machine's error explained by group membership (adjusted R²) "
            "and the p-value of its F test. For CSD, the increase over the human score "
            "alone.",
        )
    if _present(tables, "group_fairness_coefficients"):
        table = tables["group_fairness_coefficients"]
        _check_table(
            table,
            "group_fairness_coefficients",
            ["representation", "system", "metric", "group", "term", "estimate", "p_value"],
        )
        headers = ["Representation", "System", "Group"]
        for _, label in _FAIRNESS_ANALYSES:
            headers += [f"{label} estimate", f"{label} p"]
        rows = []
        for r, m, part in _by_system(table, meta):
            records = part.to_dict("records")
            estimates = {(str(t["metric"]), str(t["group"])): t for t in records}
            terms = {str(t["group"]): str(t["term"]) for t in records}
            for g in dict.fromkeys(str(v) for v in part["group"]):
                label = f"{g} (reference)" if terms[g] == "intercept" else g
                row = [_rep(r), _mod(m), label]
                for key, _ in _FAIRNESS_ANALYSES:
                    t = estimates.get((key, g))
                    row += [_num(t["estimate"]), _pvalue(t["p_value"])] if t else [_NA, _NA]
                rows.append(row)
        out["coefficients"] = _table(
            headers,
            rows,
            caption="Coefficients of the fairness analyses: for the reference group its "
            "mean squared error (OSA) or mean signed error (OSD; CSD at the most frequent "
            "human score); for every other group its difference from the reference group",
        )
    if _present(tables, "group_lipschitz"):
        out["lipschitz"] = _group_lipschitz(tables["group_lipschitz"], meta)
    return out


def _group_lipschitz(table: pd.DataFrame, meta: Mapping[str, Any]) -> dict[str, Any]:
    _check_table(
        table,
        "group_lipschitz",
        ["representation", "system", "scope", "group", "n_essays", "n_pairs", "fraction"],
    )
    per_group = table[table["scope"].astype(str) == "group"]
    groups = list(dict.fromkeys(str(g) for g in per_group["group"]))
    sizes = dict(zip(per_group["group"].astype(str), per_group["n_essays"]))
    headers = ["Representation", "System", "All pairs", "Within a group", "Across groups"]
    headers += [f"Within {g} (n = {_text(_num(sizes[g]))})" for g in groups]
    rows = []
    for r, m, part in _by_system(table, meta, human=True):
        scopes = {
            (str(t["scope"]), str(t["group"]) if str(t["scope"]) == "group" else ""): t[
                "fraction"
            ]
            for t in part.to_dict("records")
        }
        row = [_rep(r), _mod(m)]
        row += [_pct(scopes.get((s, ""))) for s in ("overall", "within", "cross")]
        row += [_pct(scopes.get(("group", g))) for g in groups]
        rows.append(row)
    counts = {
        str(t["scope"]): t["n_pairs"]
        for t in table.to_dict("records")
        if str(t["scope"]) in ("within", "cross")
    }
    return {
        "table": _table(headers, rows),
        "within": _text(_num(counts.get("within"))) if counts else None,
        "cross": _text(_num(counts.get("cross"))) if counts else None,
    }


# --------------------------------------------------------------------------- figures


def plot_group_agreement(
    group_agreement: pd.DataFrame,
    *,
    representations: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
) -> Figure:
    """QWK, SMD and DSM per group of students, per representation and model.

    Three rows of panels (QWK; SMD, machine minus human within the group;
    DSM, the group's difference of standardized means against all essays)
    and one column per representation; in each panel one group of bars per
    model and one bar per student group, then a grey bar for all essays.
    Dashed lines mark the thresholds: QWK 0.70 and SMD +-0.15 (Williamson et
    al., 2012), DSM +-0.10 (RSMTool's group report).

    Parameters
    ----------
    group_agreement : pandas.DataFrame
        The audit's ``"group_agreement"`` table: ``representation``,
        ``system``, ``group`` (``"all"`` for the row of all essays), ``qwk``,
        ``smd``, ``dsm``.
    representations, models : list of str, default=None
        Order of the columns and of the bar groups; order of appearance when None.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure, not registered with pyplot.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report.analyses._groups import plot_group_agreement
    >>> table = pd.DataFrame({"representation": ["bow"] * 3, "system": ["ridge"] * 3,
    ...                       "group": ["A", "B", "all"], "qwk": [0.71, 0.64, 0.68],
    ...                       "smd": [-0.03, 0.12, 0.04], "dsm": [-0.06, 0.08, 0.0]})
    >>> fig = plot_group_agreement(table)
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['QWK', 'SMD (machine − human)', 'DSM (group vs. all essays)']
    """
    _check_table(
        group_agreement,
        "group_agreement",
        ["representation", "system", "group", "qwk", "smd", "dsm"],
    )
    table = group_agreement
    reps = _pordered(table["representation"], representations)
    mods = _pordered(table["system"], models)
    groups = _pordered(table["group"], last=("all",))
    colors = {g: _GROUP_PALETTE[i % len(_GROUP_PALETTE)] for i, g in enumerate(groups)}
    colors["all"] = _ALL_ESSAYS_COLOR
    # Wide enough for the bars, but not wider than a page can show at a glance.
    width = min(20.0, max(8.0, (1.2 + 0.45 * len(mods) * len(groups)) * len(reps)))
    fig = _figure(width, 8.6)
    axes = fig.subplots(3, len(reps), sharex="col", sharey="row", squeeze=False)
    x = np.arange(len(mods))
    width = 0.8 / len(groups)
    rows = (
        ("qwk", "QWK", (0.70,)),
        ("smd", "SMD (machine − human)", (-0.15, 0.0, 0.15)),
        ("dsm", "DSM (group vs. all essays)", (-0.10, 0.0, 0.10)),
    )
    for c, r in enumerate(reps):
        sub = table[table["representation"].astype(str) == r]
        for row, (col, ylabel, refs) in enumerate(rows):
            ax = axes[row, c]
            for j, g in enumerate(groups):
                part = sub[sub["group"].astype(str) == g]
                value = dict(zip(part["system"].astype(str), part[col]))
                ax.bar(
                    x - 0.4 + width * (j + 0.5),
                    [value.get(m, np.nan) for m in mods],
                    width=width * 0.92,
                    color=colors[g],
                    edgecolor="#4D4D4D" if g == "all" else None,
                    linewidth=0.6,
                )
            for ref in refs:
                ax.axhline(ref, color="black", lw=0.8, ls="-" if ref == 0 else "--")
            if col != "qwk" and c == 0:
                # The row shares its y axis: fit every panel's bars, and keep both
                # threshold lines in view even when every value is small.
                values = np.abs(table[col].to_numpy(dtype=float))
                top = np.nanmax(values, initial=0.0)
                limit = max(refs[-1] + 0.05, 1.1 * top)
                ax.set_ylim(-limit, limit)
            ax.set_xticks(
                x, [_ptext(model_label(m)) for m in mods], rotation=20, ha="right"
            )
            ax.grid(axis="y", alpha=0.3)
            ax.set_axisbelow(True)
            if c == 0:
                ax.set_ylabel(ylabel)
            if row == 0:
                ax.set_title(_ptext(representation_label(r)))
    fig.suptitle("Agreement with the human scores by group (dashed lines: thresholds)")
    handles = [axes[0, 0].patches[j * len(mods)] for j in range(len(groups))]
    _legend(fig, handles, [_group_label(g) for g in groups])
    return fig


def _group_label(group: str) -> str:
    return "All essays" if group == "all" else _ptext(group)


def plot_group_lipschitz(
    group_lipschitz: pd.DataFrame,
    *,
    representations: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """Lipschitz fraction within groups and across groups, per representation.

    One panel per representation; for each model and for the human scores,
    the share of essay pairs meeting the Lipschitz condition among pairs of
    the same group (circle) and among pairs of different groups (triangle),
    joined by a line, with the share over all pairs as a short dash. Pairs
    of different groups satisfying the condition less often than pairs of
    one group means that similar essays are scored less alike across groups.

    Parameters
    ----------
    group_lipschitz : pandas.DataFrame
        The audit's ``"group_lipschitz"`` table: ``representation``,
        ``system``, ``scope`` (rows ``"overall"``, ``"within"`` and
        ``"cross"`` are drawn; ``"group"`` rows are not), ``fraction``.
    representations, models : list of str, default=None
        Order of the panels and of the models; order of appearance when None.
        ``"human"`` always comes last.
    colors : dict, default=None
        Model -> colour; :func:`model_colors` when None.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure, not registered with pyplot.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report.analyses._groups import plot_group_lipschitz
    >>> table = pd.DataFrame({"representation": ["bow"] * 6,
    ...                       "system": ["ridge"] * 3 + ["human"] * 3,
    ...                       "scope": ["overall", "within", "cross"] * 2,
    ...                       "fraction": [0.97, 0.98, 0.96, 0.95, 0.96, 0.94]})
    >>> fig = plot_group_lipschitz(table)
    >>> fig.axes[0].get_title()
    'BOW'
    """
    _check_table(
        group_lipschitz,
        "group_lipschitz",
        ["representation", "system", "scope", "fraction"],
    )
    table = group_lipschitz[group_lipschitz["scope"].astype(str) != "group"]
    reps = _pordered(table["representation"], representations)
    mods = _pordered(table["system"], models, last=("human",))
    colors = colors or model_colors(mods)
    values = {
        (str(r), str(m), str(s)): 100.0 * float(f)
        for r, m, s, f in zip(
            table["representation"], table["system"], table["scope"], table["fraction"]
        )
    }
    width = max(_PANEL_W, 0.9 * len(mods) + 1.5)
    ncols = min(len(reps), 2)
    fig = _figure(width * ncols, _PANEL_H * math.ceil(len(reps) / ncols) + 0.9)
    axes, _, _ = _panel_axes(fig, len(reps))
    x = np.arange(len(mods))
    for i, (ax, r) in enumerate(zip(axes, reps)):
        for j, m in enumerate(mods):
            within = values.get((r, m, "within"), np.nan)
            cross = values.get((r, m, "cross"), np.nan)
            overall = values.get((r, m, "overall"), np.nan)
            ax.plot([j - 0.12, j + 0.12], [within, cross], color=colors[m], lw=1.2)
            ax.plot(j - 0.12, within, marker="o", ms=7, color=colors[m], ls="none")
            ax.plot(j + 0.12, cross, marker="^", ms=7, color=colors[m], ls="none")
            ax.plot([j - 0.25, j + 0.25], [overall, overall], color="#4D4D4D", lw=0.8)
        ax.set_xticks(x, [_ptext(model_label(m)) for m in mods], rotation=20, ha="right")
        ax.set_xlim(-0.6, len(mods) - 0.4)
        low, high = ax.get_ylim()
        if high - low < 1.0:  # a hair's difference should not fill the panel
            middle = (high + low) / 2
            ax.set_ylim(middle - 0.5, middle + 0.5)
        ax.set_title(_ptext(representation_label(r)))
        if i % ncols == 0:
            ax.set_ylabel("Pairs with |Δscore| ≤ distance (%)")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    fig.suptitle("Individual fairness by group: pairs within a group vs. across groups")
    _, Line2D = _mpl()
    handles = [
        Line2D([], [], color="#4D4D4D", marker="o", ls="none"),
        Line2D([], [], color="#4D4D4D", marker="^", ls="none"),
        Line2D([], [], color="#4D4D4D", lw=0.8),
    ]
    _legend(
        fig,
        handles,
        ["Pairs within a group", "Pairs across groups", "All pairs"],
        ncols=3,
    )
    return fig


def figures(tables: Mapping[str, pd.DataFrame], ctx: FigureContext) -> dict[str, Figure]:
    """Agreement per group, and the Lipschitz fraction within and across groups."""
    out: dict[str, Figure] = {}
    if _present(tables, "group_agreement"):
        out["group_agreement"] = plot_group_agreement(
            tables["group_agreement"],
            models=ctx.systems,
            representations=ctx.representations,
        )
    if _present(tables, "group_lipschitz"):
        out["group_lipschitz"] = plot_group_lipschitz(
            tables["group_lipschitz"],
            models=ctx.systems,
            colors=ctx.colors,
            representations=ctx.representations,
        )
    return out


#: The columns of the group view's tables, in order.
SCHEMA: dict[str, tuple[str, ...]] = {
    "group_agreement": (
        "representation", "system", "grouping", "group", "n", "human_mean", "human_sd",
        "machine_mean", "machine_sd", "qwk", "smd", "smd_ci_low", "smd_ci_high", "dsm",
        "dsm_ci_low", "dsm_ci_high", "qwk_ok", "smd_ok", "dsm_ok", "tested",
    ),
    "group_fairness": (
        "representation", "system", "grouping", "metric", "name", "r2", "r2_adjusted",
        "f_statistic", "df_num", "df_denom", "p_value", "base_group",
    ),
    "group_fairness_coefficients": (
        "representation", "system", "grouping", "metric", "group", "term", "estimate",
        "std_error", "t_statistic", "p_value", "ci_low", "ci_high",
    ),
    "group_lipschitz": tuple(GROUP_LIPSCHITZ_COLUMNS),
}  # fmt: skip


SECTION = Section(
    "groups",
    (
        Heading(
            "groups",
            "Group view",
            (
                "group_agreement",
                "group_fairness",
                "group_fairness_coefficients",
                "group_lipschitz",
            ),
        ),
    ),
    analysis=ANALYSIS,
    view=view,
    schema=SCHEMA,
    figures=figures,
    figure_names=("group_agreement", "group_lipschitz"),
    color_keys=(("group_lipschitz", "system"),),
    optional=True,
    default_reason="no group column was given, so it is left out",
)
