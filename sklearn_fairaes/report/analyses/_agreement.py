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
    """The ``agreement``, ``confusion`` and ``human_agreement`` tables of one study."""

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
        out = AnalysisOutput()
        table = agreement_table(study, out.replicates)
        differences = _bootstrap_agreement(study, table, out)
        out.tables["agreement"] = table
        out.tables["confusion"] = confusion_table(study)
        if study.raters is not None and study.rater_cols is not None:
            out.tables["human_agreement"] = human_agreement_table(
                study.raters, study.rater_cols, study.score_step
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
    from ...metrics._bootstrap import (
        bootstrap_interval,
        kappa_replicates,
        smd_replicates,
    )

    pd = require("pandas", purpose="the audit")
    weights = study.bootstrap_weights()
    level = float(getattr(study.settings, "confidence_level", 0.95))
    smd_method = str(getattr(study.settings, "smd_method", "unpooled"))
    intervals: dict[str, list[tuple[float, float]]] = {f: [] for f in _CI_FIGURES}
    preds = _table_predictions(study, table)
    human = np.asarray(study.human, dtype=float)
    hh = None
    if weights is not None and study.raters is not None:
        hh = kappa_replicates(*_rater_positions(study), weights)
    found: dict[tuple[str, str], dict[str, NDArray[np.float64]]] = {}
    for rname, sname, machine in preds:
        if weights is None or machine is None:
            for f in _CI_FIGURES:
                intervals[f].append((np.nan, np.nan))
            continue
        # as agreement_table: trimmed to the scale, on its score points for QWK
        a, m, trimmed = _positions(study, np.asarray(machine, dtype=float))
        reps = {
            "qwk": kappa_replicates(a, m, weights),
            "smd": smd_replicates(human, trimmed, weights, method=smd_method),
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


def _positions(
    study: Study, machine: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The human and machine scores as :func:`agreement_table`'s QWK and SMD see them.

    Returns the human scores' and the machine scores' positions on the score
    points (0 = the scale's low end, one per step; the trimmed, unrounded
    scores with ``score_step="continuous"``), and the trimmed machine scores
    (the SMD's).
    """
    from ...metrics._agreement import TRIM_TOLERANCE

    lo, hi = study.score_range
    unit = _unit(study)
    trimmed = np.clip(machine, lo - TRIM_TOLERANCE * unit, hi + TRIM_TOLERANCE * unit)
    if study.score_step == "continuous":
        return np.asarray(study.human, dtype=float), trimmed, trimmed
    # half to even in steps from low, as numpy's rint in the table
    return _index(study.human, lo, unit), np.rint((trimmed - lo) / unit), trimmed


def _rater_positions(study: Study) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The two raters' scores as the human-human QWK of :func:`agreement_table` sees them."""
    assert study.raters is not None  # for mypy: called with raters only
    r1, r2 = (np.asarray(r, dtype=float) for r in study.raters)
    if study.score_step == "continuous":
        return r1, r2
    low = float(min(r1.min(), r2.min()))
    unit = _unit(study)
    return _index(r1, low, unit), _index(r2, low, unit)


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


def _rows(study: Study) -> list[tuple[str, str, str, Any]]:
    """(representation, system, kind, scores) of every row of the agreement table."""
    order = {r: k for k, r in enumerate(study.spaces)}
    rows: list[tuple[str, str, str, Any]] = []
    for system in study.systems.values():
        for rname, scores in system.agreement_rows():
            rows.append((rname, system.name, system.kind, scores))
    # given and fitted systems first, then each representation's baselines
    rows.sort(key=lambda r: -1 if r[0] == "" else order.get(r[0], len(order)))
    return rows


def _unit(study: Study) -> float:
    """The width of one score point (1 unless a numeric ``score_step`` is declared)."""
    return study.score_step if isinstance(study.score_step, float) else 1.0


def score_points(study: Study, scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """System scores on the study's score points: trimmed, then rounded to the nearest step.

    RSMTool's ``raw_trim_round`` generalised to a step: trimmed to
    ``[low - 0.4998 * step, high + 0.4998 * step]``, then rounded half to
    even in steps counted from ``low`` (with integer points, ``numpy.rint``
    of the score itself, exactly as the QWK of the agreement table).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report._study import Settings, Study
    >>> from sklearn_fairaes.report.analyses._agreement import score_points
    >>> study = Study(prompt="all", prompt_text=None, essays=["a"] * 3, ids=np.arange(3),
    ...               rows=np.arange(1, 4), human=np.array([1.0, 1.5, 5.0]),
    ...               score_range=(1, 5), score_range_source="declared",
    ...               settings=Settings(), score_step=0.5)
    >>> score_points(study, np.array([0.2, 1.6, 2.8, 9.0])).tolist()
    [1.0, 1.5, 3.0, 5.0]
    """
    from ...metrics._agreement import TRIM_TOLERANCE

    lo, hi = study.score_range
    if not isinstance(study.score_step, float):
        return np.rint(np.clip(scores, lo - TRIM_TOLERANCE, hi + TRIM_TOLERANCE))
    step = study.score_step
    k = np.clip((scores - lo) / step, -TRIM_TOLERANCE, (hi - lo) / step + TRIM_TOLERANCE)
    return lo + step * np.rint(k)


def _index(values: NDArray[np.float64], low: float, unit: float) -> NDArray[np.float64]:
    """Scores as positions on a scale of equally spaced points (0 = ``low``)."""
    return np.round((values - low) / unit, 9)


def agreement_table(
    study: Study,
    replicates: dict[tuple[str, str, str, str], NDArray[np.float64]] | None = None,
) -> DataFrame:
    """The ``agreement`` table of ``study`` (no ``prompt`` column); see the module docstring.

    ``replicates``, when given, receives the bootstrap replicates of the
    ``prmse`` column (two raters and ``n_bootstrap > 0``).

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
    from ...metrics._agreement import TRIM_TOLERANCE

    pd = require("pandas", purpose="the audit")
    lo, hi = study.score_range
    rows = _rows(study)
    raw = {str(k): np.asarray(r[3], dtype=float) for k, r in enumerate(rows)}
    raters = study.raters
    step = study.score_step
    smd_method: Any = getattr(study.settings, "smd_method", "unpooled")
    continuous = step == "continuous"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        if continuous:
            # RSMTool's continuous QWK of the trimmed, unrounded scores
            trimmed = {
                k: np.clip(p, lo - TRIM_TOLERANCE, hi + TRIM_TOLERANCE)
                for k, p in raw.items()
            }
            table = agreement_report(
                study.human,
                trimmed,
                rater1=None if raters is None else raters[0],
                rater2=None if raters is None else raters[1],
                rounding=None,
                smd_method=smd_method,
            ).reset_index(drop=True)
            table.insert(
                1,
                "n_outside_scale",
                [int(((p < lo) | (p > hi)).sum()) for p in raw.values()],
            )
            table["exact_agreement"] = np.nan
            table["adjacent_agreement"] = np.nan
            trunc = [np.nan] * len(raw)
        else:
            # one score point per step: positions 0..K, so a half point is a category
            unit = _unit(study)
            top = round((hi - lo) / unit)
            rlow = 0.0 if raters is None else float(min(raters[0].min(), raters[1].min()))
            on_grid = isinstance(step, float)
            table = agreement_report(
                _index(study.human, lo, unit) if on_grid else study.human,
                {k: (p - lo) / unit for k, p in raw.items()} if on_grid else raw,
                rater1=None if raters is None else _index(raters[0], rlow, unit),
                rater2=None if raters is None else _index(raters[1], rlow, unit),
                score_range=(0, top) if on_grid else (lo, hi),
                smd_method=smd_method,
            ).reset_index(drop=True)
            trunc = [
                qwk(_index(study.human, lo, unit), (p - lo) / unit, rounding="truncate")
                if on_grid
                else qwk(study.human, p, rounding="truncate")
                for p in raw.values()
            ]
        paper_smd = [
            abs(standardized_mean_difference(study.human, p, ddof=0)) for p in raw.values()
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
    prmse_cols = _prmse_columns(study, rows, raw, replicates)
    at = table.columns.get_loc("pearson_r") + 1
    for offset, (name, values) in enumerate(prmse_cols.items()):
        table.insert(at + offset, name, values)
    return pd.DataFrame(table)


def rater_matrix(study: Study) -> NDArray[np.float64] | None:
    """The raters' scores as an (n, 2) matrix on the human score's scale, or None.

    PRMSE compares a system with the mean of the ratings, so the ratings
    must be on the scale the system predicts: when the human score is the
    raters' sum (ASAP's 2-24 from two 0-12 raters) each rating is doubled;
    otherwise (a mean, or a rater's score) they are used as given.
    """
    if study.raters is None:
        return None
    r1, r2 = study.raters
    factor = 2.0 if np.allclose(study.human, r1 + r2) else 1.0
    return np.column_stack([r1, r2]) * factor


def _prmse_columns(
    study: Study,
    rows: Sequence[tuple[str, str, str, Any]],
    raw: Mapping[str, NDArray[np.float64]],
    replicates: dict[tuple[str, str, str, str], NDArray[np.float64]] | None,
) -> dict[str, list[float]]:
    """``prmse`` (with its interval) of every row, NaN without two raters."""
    from ...metrics import prmse
    from ...metrics._agreement import TRIM_TOLERANCE
    from ...metrics._bootstrap import bootstrap_interval

    ratings = rater_matrix(study)
    n_rows = len(rows)
    nan = [float("nan")] * n_rows
    if ratings is None:
        return {"prmse": nan, "prmse_ci_low": nan, "prmse_ci_high": nan}
    lo, hi = study.score_range
    weights = study.bootstrap_weights()
    values, low, high = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        for row, pred in zip(rows, raw.values()):
            # the continuous (trimmed, unrounded) scores, as RSMTool evaluates them
            pred = np.clip(pred, lo - TRIM_TOLERANCE, hi + TRIM_TOLERANCE)
            values.append(prmse(ratings, pred))
            if weights is None:
                low.append(float("nan"))
                high.append(float("nan"))
                continue
            reps = np.array([prmse(ratings, pred, sample_weight=w) for w in weights])
            a, b = bootstrap_interval(reps, study.settings.confidence_level)
            low.append(a)
            high.append(b)
            if replicates is not None:
                replicates[("agreement", row[0], row[1], "prmse")] = reps
    return {"prmse": values, "prmse_ci_low": low, "prmse_ci_high": high}


def confusion_table(study: Study) -> DataFrame:
    """Counts of (human score, system score) on the score points, per system.

    One row per representation, system and pair of score points that
    occurs (pairs never seen are left out, count 0); system scores are
    trimmed and rounded as for QWK (:func:`score_points`). Empty with
    ``score_step="continuous"``, where there are no score points.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report._study import Settings, Study, System
    >>> from sklearn_fairaes.report.analyses._agreement import confusion_table
    >>> study = Study(prompt="all", prompt_text=None, essays=["a"] * 4, ids=np.arange(4),
    ...               rows=np.arange(1, 5), human=np.array([1.0, 1, 2, 3]),
    ...               score_range=(1, 3), score_range_source="declared",
    ...               settings=Settings())
    >>> study.systems["e"] = System("e", "given", {None: np.array([1.2, 1.4, 2.6, 3.0])})
    >>> table = confusion_table(study)
    >>> [(r.human_score, r.system_score, r.count) for r in table.itertuples()]
    [(1.0, 1.0, 2), (2.0, 3.0, 1), (3.0, 3.0, 1)]
    """
    pd = require("pandas", purpose="the audit")
    columns = ["representation", "system", "human_score", "system_score", "count"]
    if study.score_step == "continuous":
        return pd.DataFrame(columns=columns)
    out = []
    for rname, sname, _, scores in _rows(study):
        pts = score_points(study, np.asarray(scores, dtype=float))
        frame = pd.DataFrame({"human_score": study.human, "system_score": pts})
        counts = frame.groupby(["human_score", "system_score"]).size()
        for (h, m), c in counts.items():
            out.append((rname, sname, float(h), float(m), int(c)))
    return pd.DataFrame(out, columns=columns)


def human_agreement_table(
    raters: tuple[NDArray[np.float64], NDArray[np.float64]],
    rater_cols: tuple[str, str],
    score_step: float | str | None = None,
) -> DataFrame:
    """Agreement of the two raters, on the scale their scores span (in ``score_step`` steps)."""
    from ...metrics import agreement_rate, qwk

    pd = require("pandas", purpose="the audit")
    r1, r2 = raters
    if score_step == "continuous":
        kappa = qwk(r1, r2, rounding=None)
        exact = adjacent = float("nan")
    else:
        unit = score_step if isinstance(score_step, float) else 1.0
        low = min(r1.min(), r2.min())
        r1, r2 = _index(r1, low, unit), _index(r2, low, unit)
        scale = np.arange(0, max(r1.max(), r2.max()) + 1)
        kappa = qwk(r1, r2, labels=scale)
        exact = agreement_rate(r1, r2, labels=scale)
        adjacent = agreement_rate(r1, r2, tolerance=1, labels=scale)
    return pd.DataFrame(
        [
            {
                "rater1": rater_cols[0],
                "rater2": rater_cols[1],
                "n": len(r1),
                "qwk": kappa,
                "exact_agreement": exact,
                "adjacent_agreement": adjacent,
            }
        ]
    )


ANALYSIS = _Agreement()


# --------------------------------------------------------------------------- view


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The agreement tables as the template shows them, with the thresholds each row meets."""
    out: dict[str, Any] = {
        "scale": _scale_text(meta, prompt),
        "main": None,
        "measures": _measures(meta),
        "continuous": meta.get("score_step") == "continuous",
        "confusion": _confusion_views(tables),
    }
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
    with_prmse = "prmse" in table.columns and not all(
        _missing(r.get("prmse")) for r in records
    )
    out["with_prmse"] = with_prmse
    out["n_outside"] = int(sum(outside)) if with_outside else 0
    out["further"] = _table(
        [
            "Representation",
            "System",
            "QWK, truncated predictions (paper's code)",
            "|SMD|, paper's formula",
            "Exact agreement",
            "Adjacent agreement (±1 point)",
            "Pearson r",
            *(["PRMSE", "PRMSE CI"] if with_prmse else []),
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
                *(
                    [
                        _num(r.get("prmse")),
                        _interval(r.get("prmse_ci_low"), r.get("prmse_ci_high")),
                    ]
                    if with_prmse
                    else []
                ),
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


def _interval(low: Any, high: Any) -> Any:
    """``[low, high]`` for a table cell, or the n/a mark."""
    if _missing(low) or _missing(high):
        return _NA
    return f"[{_num(low)}, {_num(high)}]"


def _measures(meta: Mapping[str, Any]) -> dict[str, str]:
    """Which QWK and which SMD the table shows, in words, from the audit's settings."""
    step = meta.get("score_step")
    if step == "continuous":
        qwk_text = (
            "continuous QWK (RSMTool's, Haberman 2019) of the trimmed, unrounded scores: "
            "the human scores are not on score points"
        )
    elif isinstance(step, (int, float)):
        qwk_text = (
            f"QWK with every step of {step:g} as one score point; system scores trimmed "
            f"and rounded to the nearest step"
        )
    else:
        qwk_text = "QWK on integer score points; system scores trimmed and rounded"
    method = meta.get("smd_method", "unpooled")
    smd_text = {
        "unpooled": "SMD divided by the human scores' SD (smd_method='unpooled', "
        "RSMTool rsmeval's default)",
        "pooled": "SMD divided by the pooled SD, sqrt((SD_human² + SD_machine²) / 2) "
        "(smd_method='pooled', Williamson et al. 2012)",
    }.get(str(method), f"SMD with smd_method={method!r}")
    return {"qwk": qwk_text, "smd": smd_text}


def _confusion_views(tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """One compact matrix (human scores down, system scores across) per row of systems."""
    if not _present(tables, "confusion"):
        return []
    table = tables["confusion"]
    _check_table(
        table,
        "confusion",
        ["representation", "system", "human_score", "system_score", "count"],
    )
    views = []
    for (rname, sname), part in table.groupby(["representation", "system"], sort=False):
        points = sorted(set(part["human_score"]) | set(part["system_score"]))
        counts = {
            (float(h), float(m)): int(c)
            for h, m, c in zip(part["human_score"], part["system_score"], part["count"])
        }
        views.append(
            {
                "label": f"{_mod(sname)}" + (f", {_rep(rname)}" if rname else ""),
                "table": _table(
                    ["Human ↓ / system →", *[_num(p) for p in points]],
                    [
                        [_num(h), *[_num(counts.get((h, m), 0)) for m in points]]
                        for h in points
                    ],
                ),
            }
        )
    return views


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
            "prmse",
            "prmse_ci_low",
            "prmse_ci_high",
            "qwk_ok",
            "degradation_ok",
            "smd_ok",
            "acceptable",
        ),
        "confusion": ("representation", "system", "human_score", "system_score", "count"),
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
