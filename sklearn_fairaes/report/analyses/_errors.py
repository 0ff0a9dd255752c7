"""Where a system's errors come from: the error related to essay features (issue 33, item 2).

For every system (given and fitted systems once, with ``representation=""``;
trained baselines per representation, as in the agreement section) the error
``e = system - human`` of each essay is related to each interpretable feature
of the study (``source="feature"``) and to each numeric column the user named
with ``covariate_cols`` (``source="covariate"``). Three tables:

``error_correlates``
    One row per variable: Pearson's r of the error with it, its Fisher-z
    confidence interval (``r_ci_low``, ``r_ci_high``: ``tanh(atanh(r) ± z /
    sqrt(n - 3))``, the interval of :func:`scipy.stats.pearsonr`) and its
    two-sided p-value (t test with ``n - 2`` degrees of freedom), Spearman's
    rho, and ``slope``: how many score points the error changes per standard
    deviation of the variable (the least-squares slope of the error on the
    standardised variable, ``r * sd(error)``). Rows are ranked by ``|r|``
    within each system, undefined correlations last.
``error_regression``
    The least-squares regression of the error on all the standardised
    variables jointly (an intercept, then one ``term`` per variable), with
    HC3 heteroscedasticity-robust standard errors (MacKinnon and White,
    1985), t intervals and p-values on ``n - k`` degrees of freedom, and the
    model's R² on every row. A variable constant within the study is left
    out (a note says which); when the variables are collinear or outnumber
    the essays, no regression is reported for that system (a note says why).
``error_bins``
    Each variable cut into quantile bins (5, fewer when ties make bin edges
    coincide: :func:`pandas.qcut` with ``duplicates="drop"``), with the
    number of essays and the mean error per bin and its t interval (the mean
    ± ``t(n - 1)`` standard errors; undefined for a bin of one essay).

All intervals are analytic, at the audit's ``confidence_level``. A system
whose error is 0 for every essay (its scores are the human scores) has no
correlation with anything: its ``r`` and ``rho`` are NaN and the page says
that it reproduces the human scores. The ``slope`` and the bins' means stay
defined (0).

The correlations are descriptive: a trained engine that shrinks its scores
toward the mean has errors that fall with anything correlated with the human
score (longer essays get higher human scores), so compare a system's figures
with another system's (or with a human rater's) before calling a variable a
flaw. A flaw specific to one system shows as a correlation much stronger
than the other systems' and as bins whose mean error jumps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...resources import require
from .._cells import _mod, _num, _present, _pvalue, _rep, _table
from .._plots import _check_table, feature_label
from ._base import AnalysisOutput, Heading, Section

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

    from .._study import Study

#: The fewest essays the section works with: a Fisher-z interval needs n > 3.
MIN_ESSAYS = 4
#: Quantile bins per variable (fewer when ties make edges coincide).
N_BINS = 5
#: ``|r|`` from which a correlation whose interval excludes 0 is called notable
#: in the finding sentence: Cohen's "small" effect.
NOTABLE_R = 0.1

CORRELATE_COLUMNS = (
    "system", "representation", "variable", "source", "n", "pearson_r", "r_ci_low",
    "r_ci_high", "p_value", "spearman_rho", "slope",
)  # fmt: skip
REGRESSION_COLUMNS = (
    "system", "representation", "term", "source", "n", "coefficient", "se_hc3",
    "coefficient_ci_low", "coefficient_ci_high", "p_value", "r_squared",
)  # fmt: skip
BIN_COLUMNS = (
    "system", "representation", "variable", "source", "bin", "low", "high", "n",
    "mean_error", "mean_error_ci_low", "mean_error_ci_high",
)  # fmt: skip


# --------------------------------------------------------------------------- statistics


def _sd(x: NDArray[np.float64]) -> float:
    return float(np.std(x, ddof=1)) if len(x) > 1 else 0.0


def _constant(x: NDArray[np.float64]) -> bool:
    # a spread below rounding noise of the values is no spread
    return _sd(x) <= 1e-12 * max(1.0, float(np.max(np.abs(x))))


def error_correlation(
    error: NDArray[np.float64], x: NDArray[np.float64], confidence_level: float = 0.95
) -> dict[str, float]:
    """Pearson's r of ``error`` with ``x``, its Fisher-z interval and p-value, rho and slope.

    Parameters
    ----------
    error : ndarray of shape (n,)
        Each essay's error (system minus human).
    x : ndarray of shape (n,)
        The variable.
    confidence_level : float, default=0.95
        Of the interval of r.

    Returns
    -------
    result : dict of str to float
        ``pearson_r``, ``r_ci_low``, ``r_ci_high``, ``p_value``,
        ``spearman_rho`` (NaN when either input is constant) and ``slope``
        (error points per SD of ``x``: 0 when the error is constant, NaN
        when ``x`` is).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report.analyses._errors import error_correlation
    >>> x = np.array([100.0, 150, 200, 250, 300, 350])
    >>> e = np.array([2.0, 1, 1, 0, -1, 0])
    >>> out = error_correlation(e, x)
    >>> round(out["pearson_r"], 3), round(out["slope"], 3)
    (-0.866, -0.909)
    """
    from scipy import stats

    n = len(x)
    nan = float("nan")
    out = dict.fromkeys(
        ("pearson_r", "r_ci_low", "r_ci_high", "p_value", "spearman_rho", "slope"), nan
    )
    if _constant(x):
        return out
    if _constant(error):
        out["slope"] = 0.0
        return out
    r = float(np.clip(np.corrcoef(error, x)[0, 1], -1.0, 1.0))
    out["pearson_r"] = r
    out["slope"] = r * _sd(error)
    out["spearman_rho"] = float(np.corrcoef(stats.rankdata(error), stats.rankdata(x))[0, 1])
    df = n - 2
    if abs(r) == 1.0:
        out["p_value"] = 0.0
    else:
        t = r * math.sqrt(df / (1.0 - r * r))
        out["p_value"] = float(2.0 * stats.t.sf(abs(t), df))
    if n > 3:
        z = float(stats.norm.ppf(0.5 + confidence_level / 2))
        with np.errstate(divide="ignore"):
            centre = np.arctanh(r)
        half = z / math.sqrt(n - 3)
        out["r_ci_low"] = float(np.tanh(centre - half))
        out["r_ci_high"] = float(np.tanh(centre + half))
    return out


def hc3_regression(
    error: NDArray[np.float64], X: NDArray[np.float64], confidence_level: float = 0.95
) -> dict[str, Any] | None:
    """Least squares of ``error`` on an intercept and the columns of ``X``, HC3 errors.

    Parameters
    ----------
    error : ndarray of shape (n,)
        Each essay's error.
    X : ndarray of shape (n, p)
        The (standardised) variables, without the intercept.
    confidence_level : float, default=0.95
        Of the coefficients' t intervals (``n - p - 1`` degrees of freedom).

    Returns
    -------
    fit : dict or None
        ``coefficient``, ``se_hc3``, ``ci_low``, ``ci_high``, ``p_value``
        (arrays of length ``p + 1``, the intercept first) and ``r_squared``
        (NaN when the error is constant); None when the design is
        rank-deficient or leaves no degree of freedom.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report.analyses._errors import hc3_regression
    >>> x = np.array([[-1.5], [-0.5], [0.5], [1.5], [0.0]])
    >>> fit = hc3_regression(np.array([1.0, 0.5, 0.0, -0.5, 0.2]), x)
    >>> [round(float(b), 3) for b in fit["coefficient"]]
    [0.24, -0.5]
    """
    from scipy import stats

    n, p = X.shape
    design = np.column_stack([np.ones(n), X])
    k = p + 1
    if n - k < 1 or np.linalg.matrix_rank(design) < k:
        return None
    bread = np.linalg.inv(design.T @ design)
    beta = bread @ design.T @ error
    resid = error - design @ beta
    leverage = np.einsum("ij,jk,ik->i", design, bread, design)
    with np.errstate(divide="ignore", invalid="ignore"):
        # an essay with leverage 1 is fitted exactly: its HC3 weight is undefined
        scaled = np.where(leverage < 1 - 1e-10, resid / (1.0 - leverage), np.nan)
    meat = (design * (scaled**2)[:, None]).T @ design
    se = np.sqrt(np.clip(np.diag(bread @ meat @ bread), 0.0, None))
    t_crit = float(stats.t.ppf(0.5 + confidence_level / 2, n - k))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = beta / se
    p_value = np.where(
        se > 0, 2.0 * stats.t.sf(np.abs(t), n - k), np.where(beta == 0, 1.0, 0.0)
    )
    total = float(np.sum((error - error.mean()) ** 2))
    r2 = float("nan") if total == 0 else 1.0 - float(resid @ resid) / total
    return {
        "coefficient": beta,
        "se_hc3": se,
        "ci_low": beta - t_crit * se,
        "ci_high": beta + t_crit * se,
        "p_value": p_value,
        "r_squared": r2,
    }


def error_bins(
    error: NDArray[np.float64],
    x: NDArray[np.float64],
    n_bins: int = N_BINS,
    confidence_level: float = 0.95,
) -> list[dict[str, float]]:
    """The mean error in quantile bins of ``x``, with t intervals.

    Parameters
    ----------
    error : ndarray of shape (n,)
        Each essay's error.
    x : ndarray of shape (n,)
        The variable to bin.
    n_bins : int, default=5
        Quantile bins asked for; fewer when ties make edges coincide
        (:func:`pandas.qcut` with ``duplicates="drop"``).
    confidence_level : float, default=0.95
        Of each mean's t interval.

    Returns
    -------
    bins : list of dict
        Per bin, lowest first: ``bin`` (from 1), ``low`` and ``high`` (its
        edges), ``n``, ``mean_error``, ``mean_error_ci_low``,
        ``mean_error_ci_high`` (NaN for a bin of one essay).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report.analyses._errors import error_bins
    >>> x = np.arange(10.0)
    >>> e = np.array([3.0, 3, 0, 0, 0, 0, 0, 0, 0, 1])
    >>> [(b["n"], b["mean_error"]) for b in error_bins(e, x)]
    [(2, 3.0), (2, 0.0), (2, 0.0), (2, 0.0), (2, 0.5)]
    """
    from scipy import stats

    pd = require("pandas", purpose="the audit")
    codes, edges = pd.qcut(x, n_bins, labels=False, retbins=True, duplicates="drop")
    codes = np.asarray(codes)
    out = []
    for b in range(len(edges) - 1):
        part = error[codes == b]
        m = len(part)
        if m == 0:
            continue
        mean = float(part.mean())
        low = high = float("nan")
        if m > 1:
            half = float(stats.t.ppf(0.5 + confidence_level / 2, m - 1)) * _sd(part)
            half /= math.sqrt(m)
            low, high = mean - half, mean + half
        out.append(
            {
                "bin": b + 1,
                "low": float(edges[b]),
                "high": float(edges[b + 1]),
                "n": m,
                "mean_error": mean,
                "mean_error_ci_low": low,
                "mean_error_ci_high": high,
            }
        )
    return out


# --------------------------------------------------------------------------- analysis


def _variables(study: Study) -> list[tuple[str, str, NDArray[np.float64]]]:
    """``(name, source, values)`` of the study's features, then its covariates."""
    out: list[tuple[str, str, NDArray[np.float64]]] = []
    if study.features is not None:
        feats = np.asarray(study.features, dtype=float)
        for j, name in enumerate(study.feature_names):
            out.append((str(name), "feature", feats[:, j]))
    for name, values in getattr(study, "covariates", {}).items():
        out.append((str(name), "covariate", np.asarray(values, dtype=float)))
    return out


def _audited(study: Study) -> list[tuple[str, str, NDArray[np.float64]]]:
    """``(system, representation, scores)``: own scores first, then per representation."""
    order = {r: k for k, r in enumerate(study.spaces)}
    rows = [
        (system.name, rname, scores)
        for system in study.systems.values()
        for rname, scores in system.agreement_rows()
    ]
    rows.sort(key=lambda r: -1 if r[1] == "" else order.get(r[1], len(order)))
    return rows


def _independent(
    variables: list[tuple[str, str, NDArray[np.float64]]], n: int
) -> tuple[list[tuple[str, str, NDArray[np.float64]]], list[str]]:
    """The variables the regression can hold, in order, and the names of the others.

    A variable that adds no rank to the intercept and the variables kept
    before it (a covariate that repeats a feature) is left out, so that one
    duplicate does not cost the whole regression.
    """
    kept: list[tuple[str, str, NDArray[np.float64]]] = []
    left: list[str] = []
    design = np.ones((n, 1))
    for name, source, x in variables:
        trial = np.column_stack([design, (x - x.mean()) / _sd(x)])
        if np.linalg.matrix_rank(trial) == trial.shape[1]:
            kept.append((name, source, x))
            design = trial
        else:
            left.append(name)
    return kept, left


class _Errors:
    """The ``error_correlates``, ``error_regression`` and ``error_bins`` tables."""

    name = "errors"

    def absent(self, study: Study) -> str | None:
        """Why the errors cannot be related to anything here, or None."""
        if study.n < MIN_ESSAYS:
            return (
                f"{study.n} essay(s); relating the errors to essay features needs at "
                f"least {MIN_ESSAYS}"
            )
        if not study.systems:
            return "no system to compare with the human scores"
        if not _variables(study):
            skipped = study.skipped.get("features")
            return (
                "no interpretable features and no covariate to relate the errors to; "
                + ("" if skipped is None else f"the features were {skipped}; ")
                + "name numeric columns with covariate_cols (--covariate-cols)"
            )
        return None

    def run(self, study: Study) -> AnalysisOutput:
        """The three tables of ``study``; see the module docstring."""
        pd = require("pandas", purpose="the audit")
        level = float(getattr(study.settings, "confidence_level", 0.95))
        variables = _variables(study)
        notes: list[str] = []
        constant = [name for name, _, x in variables if _constant(x)]
        if constant:
            notes.append(
                f"Error diagnosis: {', '.join(constant)} took one value for every essay; "
                f"no correlation with them is defined and the regression leaves them out."
            )
        kept, collinear = _independent(
            [(name, source, x) for name, source, x in variables if not _constant(x)],
            study.n,
        )
        if collinear:
            notes.append(
                f"Error diagnosis: the regression leaves out {', '.join(collinear)}, "
                f"a linear combination of the variables before it (a covariate that "
                f"repeats a feature, say)."
            )
        Z = (
            np.column_stack([(x - x.mean()) / _sd(x) for _, _, x in kept])
            if kept
            else np.empty((study.n, 0))
        )
        corr_rows: list[dict[str, Any]] = []
        reg_rows: list[dict[str, Any]] = []
        bin_rows: list[dict[str, Any]] = []
        exact: list[str] = []
        no_fit: list[str] = []
        for sname, rname, scores in _audited(study):
            error = np.asarray(scores, dtype=float) - study.human
            label = sname if rname == "" else f"{rname} + {sname}"
            if _constant(error) and float(np.abs(error).max()) == 0.0:
                exact.append(label)
            key = {"system": sname, "representation": rname}
            rows: list[dict[str, Any]] = [
                {**key, "variable": name, "source": source, "n": study.n,
                 **error_correlation(error, x, level)}
                for name, source, x in variables
            ]  # fmt: skip
            rows.sort(
                key=lambda r: (
                    -abs(r["pearson_r"]) if r["pearson_r"] == r["pearson_r"] else 1.0
                )
            )
            corr_rows += rows
            for name, source, x in variables:
                for b in error_bins(error, x, N_BINS, level):
                    bin_rows.append({**key, "variable": name, "source": source, **b})
            if _constant(error):
                continue  # nothing to regress (the finding says so)
            fit = hc3_regression(error, Z, level) if kept else None
            if fit is None:
                if kept:
                    no_fit.append(label)
                continue
            terms = [("intercept", "")] + [(name, source) for name, source, _ in kept]
            for k, (term, source) in enumerate(terms):
                reg_rows.append(
                    {
                        **key,
                        "term": term,
                        "source": source,
                        "n": study.n,
                        "coefficient": float(fit["coefficient"][k]),
                        "se_hc3": float(fit["se_hc3"][k]),
                        "coefficient_ci_low": float(fit["ci_low"][k]),
                        "coefficient_ci_high": float(fit["ci_high"][k]),
                        "p_value": float(fit["p_value"][k]),
                        "r_squared": fit["r_squared"],
                    }
                )
        if exact:
            notes.append(
                f"Error diagnosis: {', '.join(exact)} gave every essay its human score "
                f"(error 0 throughout); there is no error to explain."
            )
        if no_fit:
            notes.append(
                f"Error diagnosis: no joint regression for {', '.join(no_fit)}: "
                f"{len(kept)} variables leave no degree of freedom with {study.n} essays."
            )
        tables = {
            "error_correlates": pd.DataFrame(corr_rows, columns=list(CORRELATE_COLUMNS)),
            "error_regression": pd.DataFrame(reg_rows, columns=list(REGRESSION_COLUMNS)),
            "error_bins": pd.DataFrame(bin_rows, columns=list(BIN_COLUMNS)),
        }
        return AnalysisOutput(tables=tables, notes=notes)


ANALYSIS = _Errors()


# --------------------------------------------------------------------------- view


def _label(system: object, representation: object) -> str:
    name = _mod(system).text
    rep = str(representation)
    return name if rep == "" else f"{name} ({_rep(rep).text})"


def _variable(row: Mapping[str, Any], key: str = "variable", lower: bool = False) -> str:
    """A feature by its label (lower-case in a sentence), a covariate by its column."""
    if row.get("source") == "covariate":
        return str(row[key])
    label = feature_label(row[key])
    return label.lower() if lower else label


def _interval(low: object, high: object) -> str:
    if _num(low).kind == "na" or _num(high).kind == "na":
        return "—"
    return f"{float(low):.2f} to {float(high):.2f}"  # type: ignore[arg-type]


def finding(rows: list[dict[str, Any]], mean_error: float | None, level: float) -> str:
    """The plain sentence on one system's error: its strongest variable, or that none is notable.

    ``rows`` are the system's ``error_correlates`` rows; ``mean_error`` its
    mean error (for a system whose error is constant). A correlation is
    notable when its interval excludes 0 and ``|r|`` is at least
    :data:`NOTABLE_R`.

    Examples
    --------
    >>> from sklearn_fairaes.report.analyses._errors import finding
    >>> row = {"system": "engine", "representation": "", "variable": "word_count",
    ...        "pearson_r": -0.57, "r_ci_low": -0.6, "r_ci_high": -0.53, "slope": -1.6}
    >>> finding([row], -0.1, 0.95)
    'engine: the error falls by 1.60 points per SD of word count (r = -0.57, 95% CI -0.60 to -0.53).'
    """
    who = _label(rows[0]["system"], rows[0]["representation"])
    defined = [r for r in rows if r["pearson_r"] == r["pearson_r"]]
    if not defined:
        if mean_error is not None and mean_error == 0:
            return f"{who} gives every essay its human score: its error is 0 throughout."
        slopes = [r["slope"] for r in rows if r["slope"] == r["slope"]]
        if mean_error is not None and slopes and all(v == 0 for v in slopes):
            return (
                f"{who}: the error is {mean_error:+.3g} for every essay, a constant "
                f"offset that no variable explains."
            )
        return f"{who}: no correlation with the error is defined (constant variables)."
    top = max(defined, key=lambda r: abs(r["pearson_r"]))
    var = _variable(top, lower=True)
    stats = (
        f"r = {top['pearson_r']:.2f}, {100 * level:g}% CI "
        f"{_interval(top['r_ci_low'], top['r_ci_high'])}"
    )
    low, high = top["r_ci_low"], top["r_ci_high"]
    excludes_zero = low == low and high == high and (low > 0 or high < 0)
    if excludes_zero and abs(top["pearson_r"]) >= NOTABLE_R:
        way = "rises" if top["slope"] > 0 else "falls"
        return (
            f"{who}: the error {way} by {abs(top['slope']):.2f} points per SD of "
            f"{var} ({stats})."
        )
    return (
        f"{who}: nothing notable; no variable is clearly related to the error (the "
        f"strongest, {var}, has {stats})."
    )


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The finding sentences, then the strongest correlates, the regressions and the bins."""
    out: dict[str, Any] = {"findings": [], "correlates": None}
    if not _present(tables, "error_correlates"):
        return out
    corr = tables["error_correlates"]
    _check_table(corr, "error_correlates", CORRELATE_COLUMNS)
    level = float(meta.get("confidence_level") or 0.95)
    bins = tables.get("error_bins")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in cast("list[dict[str, Any]]", corr.to_dict("records")):
        groups.setdefault((str(r["system"]), str(r["representation"])), []).append(r)
    top_rows, bin_rows = [], []
    for (sname, rname), rows in groups.items():
        mean_error = None
        mine = None
        if bins is not None and len(bins):
            mine = bins[(bins["system"].astype(str) == sname)
                        & (bins["representation"].astype(str) == rname)]  # fmt: skip
            if len(mine):
                # every variable's bins hold every essay once: one variable's suffice
                first = mine[mine["variable"] == mine["variable"].iloc[0]]
                mean_error = float(np.average(first["mean_error"], weights=first["n"]))
        out["findings"].append(finding(rows, mean_error, level))
        if all(r["pearson_r"] != r["pearson_r"] for r in rows):
            continue  # a constant error: the finding is all there is to say
        ranked = sorted(
            rows,
            key=lambda r: -abs(r["pearson_r"]) if r["pearson_r"] == r["pearson_r"] else 1.0,
        )
        for r in ranked[:3]:
            top_rows.append(
                [
                    _rep(rname),
                    _mod(sname),
                    _variable(r),
                    _num(r["pearson_r"]),
                    _interval(r["r_ci_low"], r["r_ci_high"]),
                    _pvalue(r["p_value"]),
                    _num(r["spearman_rho"]),
                    _num(r["slope"]),
                ]
            )
        best = ranked[0]
        if mine is not None and best["pearson_r"] == best["pearson_r"]:
            for b in mine[mine["variable"] == best["variable"]].to_dict("records"):
                bin_rows.append(
                    [
                        _rep(rname),
                        _mod(sname),
                        _variable(best),
                        f"{b['low']:.4g} to {b['high']:.4g}",
                        _num(int(b["n"])),
                        _num(b["mean_error"]),
                        _interval(b["mean_error_ci_low"], b["mean_error_ci_high"]),
                    ]
                )
    ci = f"{100 * level:g}% CI"
    out["correlates"] = _table(
        [
            "Representation",
            "System",
            "Variable",
            "r",
            ci,
            "p",
            "Spearman's rho",
            "Error points per SD",
        ],  # fmt: skip
        top_rows,
        caption="The three variables most correlated with each system's error",
    )
    out["bins"] = (
        _table(
            ["Representation", "System", "Variable", "Bin", "n", "Mean error", ci],
            bin_rows,
            caption="Mean error in quantile bins of each system's strongest variable",
        )
        if bin_rows
        else None
    )
    out["regression"] = None
    if _present(tables, "error_regression"):
        reg = tables["error_regression"]
        _check_table(reg, "error_regression", REGRESSION_COLUMNS)
        reg_rows = []
        for (sname, rname), part in reg.groupby(  # type: ignore[assignment]
            [reg["system"].astype(str), reg["representation"].astype(str)], sort=False
        ):
            terms = part[part["term"] != "intercept"]
            if not len(terms):
                continue
            t = (terms["coefficient"] / terms["se_hc3"]).abs().fillna(0.0)
            best = terms.loc[t.idxmax()]
            reg_rows.append(
                [
                    _rep(rname),
                    _mod(sname),
                    _num(int(best["n"])),
                    _num(best["r_squared"]),
                    _variable(best, "term"),
                    _num(best["coefficient"]),
                    _interval(best["coefficient_ci_low"], best["coefficient_ci_high"]),
                    _pvalue(best["p_value"]),
                ]
            )
        if reg_rows:
            out["regression"] = _table(
                [
                    "Representation",
                    "System",
                    "n",
                    "R²",
                    "Strongest term",
                    "Error points per SD",
                    ci,
                    "p",
                ],  # fmt: skip
                reg_rows,
                caption="Joint regression of the error on all standardised variables "
                "(HC3 robust errors): the term with the largest |t|",
            )
    return out


SECTION = Section(
    "errors",
    (
        Heading(
            "errors",
            "Where the errors come from",
            ("error_correlates", "error_regression", "error_bins"),
        ),
    ),
    analysis=ANALYSIS,
    view=view,
    schema={
        "error_correlates": CORRELATE_COLUMNS,
        "error_regression": REGRESSION_COLUMNS,
        "error_bins": BIN_COLUMNS,
    },
)
