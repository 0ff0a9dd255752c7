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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...resources import require
from .._cells import (
    _KIND_LABELS,
    _NA,
    _THRESHOLDS,
    Cell,
    _cell,
    _flag,
    _missing,
    _mod,
    _num,
    _num_ci,
    _present,
    _pvalue,
    _rep,
    _scale_text,
    _systems,
    _table,
)
from .._plots import _check_table
from ._base import AnalysisOutput, Heading, Section
from ._common import DIFFERENCE_COLUMNS

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray
    from pandas import DataFrame

    from .._study import Study


class _Agreement:
    """The ``agreement`` and ``human_agreement`` tables of one study."""

    name = "agreement"

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
        table = agreement_table(study)
        out = AnalysisOutput()
        differences = _bootstrap_agreement(study, table, out)
        out.tables["agreement"] = table
        if study.raters is not None and study.rater_cols is not None:
            out.tables["human_agreement"] = human_agreement_table(
                study.raters, study.rater_cols
            )
        out.tables["system_differences"] = differences
        return out


#: The headline columns of the agreement table that get bootstrap intervals.
_CI_FIGURES = ("qwk", "degradation", "smd")
#: The figures of the agreement rows of ``system_differences``.
_DIFF_FIGURES = ("qwk", "abs_smd")


def _bootstrap_agreement(study: Study, table: DataFrame, out: AnalysisOutput) -> DataFrame:
    """Insert ``X_ci_low`` / ``X_ci_high`` after qwk, degradation and smd (NaN when off).

    Each replicate recomputes the figure with the essays weighted by their
    multiplicities (as ``sample_weight``), all replicates at once
    (:func:`~sklearn_fairaes.metrics._bootstrap.kappa_replicates`,
    ``smd_replicates``); the degradation's human-human QWK with the same
    weights. The replicates go to ``out.replicates``; returns the
    ``system_differences`` rows: the paired differences of QWK and the
    absolute SMD between every two systems (none when the bootstrap is off).
    """
    from ...metrics._agreement import _score_points, _trim_to_scale
    from ...metrics._bootstrap import (
        bootstrap_interval,
        kappa_replicates,
        smd_replicates,
    )

    pd = require("pandas", purpose="the audit")
    weights = study.bootstrap_weights()
    level = float(getattr(study.settings, "confidence_level", 0.95))
    scale = (float(study.score_range[0]), float(study.score_range[1]))
    intervals: dict[str, list[tuple[float, float]]] = {f: [] for f in _CI_FIGURES}
    preds = _table_predictions(study, table)
    human = np.asarray(study.human, dtype=float)
    hh = None
    if weights is not None and study.raters is not None:
        r1, r2 = study.raters
        labels = np.arange(min(r1.min(), r2.min()), max(r1.max(), r2.max()) + 1)
        hh = kappa_replicates(*_score_points(r1, r2, labels, "round"), weights)
    found: dict[tuple[str, str], dict[str, NDArray[np.float64]]] = {}
    for rname, sname, machine in preds:
        if weights is None or machine is None:
            for f in _CI_FIGURES:
                intervals[f].append((np.nan, np.nan))
            continue
        # as agreement_report: trimmed to the scale, then rounded for QWK
        trimmed = _trim_to_scale(np.asarray(machine, dtype=float), scale)
        points = np.arange(scale[0], scale[1] + 1)  # the declared or inferred scale
        reps = {
            "qwk": kappa_replicates(
                *_score_points(human, trimmed, points, "round"), weights
            ),
            "smd": smd_replicates(human, trimmed, weights),
        }
        if hh is not None:
            reps["degradation"] = hh - reps["qwk"]
        for f in _CI_FIGURES:
            r = reps.get(f)
            intervals[f].append(
                (np.nan, np.nan) if r is None else bootstrap_interval(r, level)
            )
            if r is not None:
                out.replicates[("agreement", rname, sname, f)] = r
        found[(rname, sname)] = reps
    for f in _CI_FIGURES:
        at = list(table.columns).index(f) + 1
        table.insert(at, f"{f}_ci_low", [c[0] for c in intervals[f]])
        table.insert(at + 1, f"{f}_ci_high", [c[1] for c in intervals[f]])
    return pd.DataFrame(_difference_rows(table, found, level), columns=DIFFERENCE_COLUMNS)


def _difference_rows(
    table: DataFrame,
    found: Mapping[tuple[str, str], Mapping[str, NDArray[np.float64]]],
    level: float,
) -> list[tuple[Any, ...]]:
    """Paired differences of QWK and the absolute SMD between every two rows of ``table``.

    Two rows are compared when they are scorings of one representation, or
    one of them is a given or fitted system (representation ``""``, the same
    under every representation); two trained baselines of different
    representations are not. ``representation`` is the pair's (``""`` for
    two given or fitted systems).
    """
    from ...metrics._bootstrap import paired_difference

    est: dict[tuple[str, str], dict[str, float]] = {
        (str(r["representation"]), str(r["system"])): {
            "qwk": float(r["qwk"]),
            "abs_smd": abs(float(r["smd"])),
        }
        for r in table.to_dict("records")
    }
    keys = [k for k in est if k in found]
    rows: list[tuple[Any, ...]] = []
    for i, ka in enumerate(keys):
        for kb in keys[i + 1 :]:
            if ka[0] and kb[0] and ka[0] != kb[0]:
                continue
            reps_a = {"qwk": found[ka]["qwk"], "abs_smd": np.abs(found[ka]["smd"])}
            reps_b = {"qwk": found[kb]["qwk"], "abs_smd": np.abs(found[kb]["smd"])}
            for figure in _DIFF_FIGURES:
                d = paired_difference(
                    est[ka][figure], est[kb][figure], reps_a[figure], reps_b[figure], level
                )
                rows.append(
                    (ka[0] or kb[0], figure, ka[1], kb[1], d.difference, d.ci_low,
                     d.ci_high, d.p_value)
                )  # fmt: skip
    return rows


def _table_predictions(
    study: Study, table: DataFrame
) -> list[tuple[str, str, NDArray[np.float64] | None]]:
    """Each row's (representation, system, scores), in the table's order."""
    found = {
        (rname, system.name): scores
        for system in study.systems.values()
        for rname, scores in system.agreement_rows()
    }
    return [
        (str(r), str(s), found.get((r, s)))
        for r, s in zip(table["representation"], table["system"])
    ]


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


# --------------------------------------------------------------------------- view


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The agreement tables as the template shows them, with the thresholds each row meets."""
    out: dict[str, Any] = {"scale": _scale_text(meta, prompt), "main": None}
    if not _present(tables, "agreement"):
        return out
    table = tables["agreement"]
    _check_table(
        table,
        "agreement",
        [
            "representation", "system", "n", "qwk", "qwk_truncated", "human_human_qwk",
            "degradation", "smd", "abs_smd_paper", "exact_agreement", "adjacent_agreement",
            "pearson_r", "qwk_ok", "degradation_ok", "smd_ok", "acceptable",
        ],
    )  # fmt: skip
    records = table.to_dict("records")
    systems = _systems(meta)
    with_raters = not all(_missing(r["human_human_qwk"]) for r in records)
    outside = [
        float(r["n_outside_scale"])
        for r in records
        if not _missing(r.get("n_outside_scale"))
    ]
    with_outside = any(v > 0 for v in outside)
    th = _THRESHOLDS
    headers = ["Representation", "System", "Kind", "n"]
    if with_outside:
        headers.append("Outside the scale")
    headers += ["QWK", f"QWK ≥ {th['qwk']}"]
    flags = {len(headers) - 1}
    if with_raters:
        headers += ["Human–human QWK", "Degradation", f"Degradation ≤ {th['degradation']}"]
        flags.add(len(headers) - 1)
    headers += ["SMD (machine − human)", f"|SMD| ≤ {th['smd']}", "Acceptable"]
    flags |= {len(headers) - 2, len(headers) - 1}
    rows = []
    for r in records:
        kind = r.get("kind")
        if _missing(kind):
            kind = systems.get(str(r["system"]), {}).get("kind")
        row = [
            _rep(r["representation"]),
            _mod(r["system"]),
            _KIND_LABELS.get(str(kind), kind).split(",")[0] if kind else _NA,
            _num(r["n"]),
        ]
        if with_outside:
            row.append(_num(r.get("n_outside_scale")))
        row += [_ci(r, "qwk"), _flag(r["qwk_ok"])]
        if with_raters:
            row += [_num(r["human_human_qwk"]), _ci(r, "degradation")]
            row.append(_flag(r["degradation_ok"]))
        row += [_ci(r, "smd"), _flag(r["smd_ok"]), _flag(r["acceptable"])]
        rows.append(row)
    with_ci = any(not _missing(r.get("qwk_ci_low")) for r in records)
    out["main"] = _table(
        headers,
        rows,
        caption="Agreement with the human score (cf. the paper's Table 2)"
        + (", with the essay-level bootstrap interval in brackets" if with_ci else ""),
        flags=flags,
    )
    out["differences"] = _differences(tables)
    out["with_raters"] = with_raters
    out["n_outside"] = int(sum(outside)) if with_outside else 0
    out["further"] = _table(
        [
            "Representation",
            "System",
            "QWK, truncated predictions (paper's code)",
            "|SMD|, paper's formula",
            "Exact agreement",
            "Adjacent agreement (±1)",
            "Pearson r",
        ],
        [
            [
                _rep(r["representation"]),
                _mod(r["system"]),
                _num(r["qwk_truncated"]),
                _num(r["abs_smd_paper"]),
                _num(r["exact_agreement"]),
                _num(r["adjacent_agreement"]),
                _num(r["pearson_r"]),
            ]
            for r in records
        ],
        caption="Further agreement statistics",
    )
    out["human"] = None
    if _present(tables, "human_agreement"):
        human = tables["human_agreement"]
        _check_table(
            human,
            "human_agreement",
            ["rater1", "rater2", "qwk", "exact_agreement", "adjacent_agreement", "n"],
        )
        out["human"] = _table(
            [
                "Rater 1",
                "Rater 2",
                "n",
                "QWK",
                "Exact agreement",
                "Adjacent agreement (±1)",
            ],
            [
                [
                    h["rater1"],
                    h["rater2"],
                    _num(h["n"]),
                    _num(h["qwk"]),
                    _num(h["exact_agreement"]),
                    _num(h["adjacent_agreement"]),
                ]
                for h in human.to_dict("records")
            ],
            caption="Agreement between the two human raters",
        )
    return out


def _ci(record: Mapping[Any, Any], figure: str) -> Cell:
    """``figure`` of a row with its interval columns, when the table has them."""
    return _num_ci(
        record[figure], record.get(f"{figure}_ci_low"), record.get(f"{figure}_ci_high")
    )


_DIFF_LABELS = {"qwk": "QWK", "abs_smd": "|SMD|"}


def _differences(tables: Mapping[str, pd.DataFrame]) -> dict[str, Any] | None:
    """The agreement rows of ``system_differences`` (QWK, |SMD|), or None."""
    diffs = tables.get("system_differences")
    if diffs is None or not len(diffs):
        return None
    diffs = diffs[diffs["figure"].astype(str).isin(list(_DIFF_LABELS))]
    if not len(diffs):
        return None
    return _table(
        ["Representation", "Figure", "System A", "System B", "A − B", "Interval", "p"],
        [
            [_rep(d["representation"]), _DIFF_LABELS[str(d["figure"])],
             _mod(d["system_a"]), _mod(d["system_b"]), _num(d["difference"]),
             _cell(f"[{float(d['ci_low']):.3f}, {float(d['ci_high']):.3f}]"),
             _pvalue(d["p_value"])]
            for d in diffs.to_dict("records")
        ],
        caption="Paired bootstrap differences of QWK and |SMD| between two systems "
        "scoring the same essays (same replicates for both; p: two-sided, no "
        "difference)",
    )  # fmt: skip


# --------------------------------------------------------------------------- pooling


def _pooled(table: DataFrame) -> DataFrame:
    """Append one ``prompt="pooled"`` row per (representation, system).

    Its ``qwk`` is the Fisher-z mean of the prompts' QWKs with equal weights
    (:func:`~sklearn_fairaes.metrics.mean_qwk`, as the ASAP competition
    averaged its prompts), ``n`` and ``n_outside_scale`` are sums, ``qwk_ok``
    the acceptance threshold on the pooled QWK; the other columns are NaN,
    since a mean of per-prompt SMDs or rates on different scales means little.
    """
    from ...metrics import mean_qwk

    pd = require("pandas", purpose="the audit")
    rows = []
    for (rname, sname), part in table.groupby(["representation", "system"], sort=False):
        kappas = part["qwk"].to_numpy(dtype=float)
        pooled = mean_qwk(kappas) if np.isfinite(kappas).all() else np.nan
        rows.append(
            {
                "prompt": "pooled",
                "representation": rname,
                "system": sname,
                "kind": part["kind"].iloc[0],
                "n": int(part["n"].sum()),
                "n_outside_scale": int(part["n_outside_scale"].sum()),
                "qwk": pooled,
                "qwk_ok": bool(pooled >= 0.7),
            }
        )
    return pd.concat([table, pd.DataFrame(rows, columns=table.columns)], ignore_index=True)


def pool(tables: dict[str, DataFrame], studies: Sequence[Study]) -> dict[str, DataFrame]:
    """The agreement table with its rows pooled across prompts."""
    if "agreement" in tables:
        tables["agreement"] = _pooled(tables["agreement"])
    return tables


SECTION = Section(
    "agreement",
    (Heading("agreement", "Agreement with human raters", ("agreement",)),),
    analysis=ANALYSIS,
    view=view,
    schema={
        "agreement": (
            "representation",
            "system",
            "kind",
            "n",
            "n_outside_scale",
            "qwk",
            "qwk_ci_low",
            "qwk_ci_high",
            "qwk_truncated",
            "human_human_qwk",
            "degradation",
            "degradation_ci_low",
            "degradation_ci_high",
            "smd",
            "smd_ci_low",
            "smd_ci_high",
            "abs_smd_paper",
            "exact_agreement",
            "adjacent_agreement",
            "pearson_r",
            "qwk_ok",
            "degradation_ok",
            "smd_ok",
            "acceptable",
        ),
        "system_differences": tuple(DIFFERENCE_COLUMNS),
        "human_agreement": (
            "rater1",
            "rater2",
            "qwk",
            "exact_agreement",
            "adjacent_agreement",
            "n",
        ),
    },  # fmt: skip
    pool=pool,
)
