"""Group fairness: do essays of different groups get the same treatment?

The paper measures individual fairness and places it next to group fairness,
the comparison of writers' demographic groups that earlier work on automated
scoring studied (its §1) and whose relation to individual fairness it leaves
for future work (its §6). This module offers both views by group:

* :func:`group_agreement_report`: the agreement table of
  :func:`~sklearn_fairaes.metrics.agreement_report` per group, with RSMTool's
  difference of standardized means (DSM) of each group against all essays;
* :func:`fairness_analyses`: the overall score accuracy, overall score
  difference and conditional score difference of Loukina, Madnani and Zechner
  (2019), as RSMTool's ``fairness_utils.get_fairness_analyses`` computes them;
* :func:`group_lipschitz_fraction`: the Lipschitz fraction of
  :func:`~sklearn_fairaes.metrics.lipschitz_fraction` within groups and
  across groups, so that one sees whether similar essays of different groups
  are scored alike.

Conventions of this module
--------------------------
* Signatures are scikit-learn's, ``(y_true, y_pred, *, groups, ...)`` or
  ``(X, y_pred, *, groups, ...)``: ``groups`` holds one label per essay
  (validated by :func:`~sklearn_fairaes._validation.check_groups`: no missing
  label, same length as the scores).
* Groups appear in sorted label order, except in :func:`fairness_analyses`,
  which keeps RSMTool's order (the reference group first, then by size).
* A group with fewer than 2 essays has no standard deviation, QWK or pairs:
  its undefined values are NaN, announced by one
  :class:`~sklearn_fairaes.exceptions.UndefinedMetricWarning`.
* Signed differences are machine minus human, as in RSMTool.
* Tables are pandas DataFrames (pandas is imported when they are built); the
  pairwise result is a dict-like with a ``to_frame()`` method.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from sklearn.utils import Bunch

from .._validation import check_groups, check_same_length, check_scores
from ..exceptions import UndefinedMetricWarning
from ..resources import require
from ._agreement import (
    _SMD_METHODS,
    _check_integer_valued,
    _check_rounding,
    _check_thresholds,
    difference_of_standardized_means,
    qwk,
    standardized_mean_difference,
)
from ._pairs import _counters, _torch_backend
from ._pairs._counters import (
    _LipschitzCounter,
    _ScreenedLipschitzCounter,
    _screening_coefficients,
)
from ._pairs._engine import PairwiseEngine, as_engine
from ._pairs._results import TableResult
from ._pairs._scaling import _check_score_span, _normalise, _outcome_range, _scaling
from ._pairs._types import check_option, check_real

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pandas as pd
    import scipy.sparse as sp
    from numpy.typing import ArrayLike, NDArray

    from ._pairs._blocks import PairBlock
    from ._pairs._scaling import Scaling
    from ._pairs._types import Metric, ScreenedCounts

    #: Counts of the Lipschitz pairs: per group within groups (satisfied,
    #: evaluated), then across groups (satisfied, evaluated).
    GroupCounts = tuple[NDArray[np.int64], NDArray[np.int64], int, int]
    #: Per group, the pairs that satisfy the inequality and the pairs evaluated.
    PerGroup = tuple[NDArray[np.int64], NDArray[np.int64]]

__all__ = ["fairness_analyses", "group_agreement_report", "group_lipschitz_fraction"]

#: Default flag thresholds of the group table: the QWK and \|SMD\| limits of
#: Williamson et al. (2012), and the \|DSM\| limit of 0.1 that RSMTool's
#: evaluation-by-group report draws.
GROUP_THRESHOLDS = {"abs_dsm": 0.10, "abs_smd": 0.15, "qwk": 0.70}

_ANALYSES = (
    ("osa", "Overall score accuracy"),
    ("osd", "Overall score difference"),
    ("csd", "Conditional score difference"),
)


def _label(value: Any) -> Any:
    """A group label as a plain Python value (for messages and tables)."""
    return value.item() if hasattr(value, "item") else value


def _warn_small_groups(
    names: NDArray[Any], counts: NDArray[np.integer[Any]], consequence: str
) -> None:
    small = [repr(_label(v)) for v, c in zip(names, counts) if c < 2]
    if small:
        warnings.warn(
            f"group(s) {', '.join(small)} have fewer than 2 essays: {consequence}; "
            f"merge small groups or drop them",
            UndefinedMetricWarning,
            stacklevel=3,
        )


def _check_scores_pair(
    y_true: ArrayLike, y_pred: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = check_scores(y_true, name="y_true", min_samples=2)
    b = check_scores(y_pred, name="y_pred", min_samples=2)
    check_same_length(y_true=a, y_pred=b)
    return a, b


# --------------------------------------------------------------------------- table


def _agreement_row(
    human: NDArray[np.float64],
    machine: NDArray[np.float64],
    population: Mapping[str, float],
    *,
    labels: ArrayLike | None,
    rounding: Literal["round", "truncate"] | None,
    smd_method: Literal["johnson", "pooled", "unpooled", "williamson"],
    smd_ddof: int,
) -> dict[str, float]:
    """One row of :func:`group_agreement_report` (scores of at least 2 essays)."""
    smd_population: dict[str, Any] = {}
    if smd_method in ("johnson", "williamson"):
        smd_population["population_y_true_observed_sd"] = population["smd_true_sd"]
    if smd_method == "williamson":
        smd_population["population_y_pred_sd"] = population["smd_pred_sd"]
    return {
        "human_sd": float(np.std(human, ddof=1)),
        "machine_sd": float(np.std(machine, ddof=1)),
        # without n_bootstrap both return floats
        "qwk": cast(float, qwk(human, machine, labels=labels, rounding=rounding)),
        "smd": cast(
            float,
            standardized_mean_difference(
                human, machine, method=smd_method, ddof=smd_ddof, **smd_population
            ),
        ),
        "dsm": difference_of_standardized_means(
            human,
            machine,
            population_y_true_observed_mn=population["true_mn"],
            population_y_true_observed_sd=population["true_sd"],
            population_y_pred_mn=population["pred_mn"],
            population_y_pred_sd=population["pred_sd"],
        ),
    }


def group_agreement_report(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    groups: ArrayLike,
    labels: ArrayLike | None = None,
    rounding: Literal["round", "truncate"] | None = "round",
    smd_method: Literal["johnson", "pooled", "unpooled", "williamson"] = "pooled",
    smd_ddof: int = 1,
    thresholds: Mapping[str, float] | None = None,
    include_all: bool = True,
) -> pd.DataFrame:
    """Agreement of machine with human scores in each group, as a tidy table.

    The subgroup table of RSMTool's evaluation report: per group the number of
    essays, mean and SD of the human and machine scores, QWK, SMD, and the
    difference of standardized means (DSM) of the group against all essays
    (RSMTool's convention for subgroups), with flags. The paper's agreement
    criteria are §4.3; group fairness is the related work of its §1.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Human scores.
    y_pred : array-like of shape (n_samples,)
        Machine scores.
    groups : array-like of shape (n_samples,)
        Group label of each essay (no missing labels).
    labels : array-like of int, default=None
        Score scale of ``y_true`` for the QWK (see
        :func:`~sklearn_fairaes.metrics.qwk`). When None and ``rounding`` is
        ``"round"``, every integer from the lowest to the highest human score
        of *all* essays, so that every group's QWK uses the same scale. With
        ``"truncate"`` and no labels, each group's QWK takes its range from
        that group's scores, as the Kaggle function would on the group alone.
    rounding : {"round", "truncate"} or None, default="round"
        How predictions are mapped onto the scale for the QWK (see
        :func:`~sklearn_fairaes.metrics.qwk`); None gives the continuous QWK
        that RSMTool's table reports for real-valued predictions.
    smd_method : {"johnson", "pooled", "unpooled", "williamson"}, default="pooled"
        Denominator of the SMD (see
        :func:`~sklearn_fairaes.metrics.standardized_mean_difference`).
        ``"pooled"`` and ``"unpooled"`` use the group's own SDs;
        ``"johnson"`` and ``"williamson"`` the SDs of all essays.
    smd_ddof : int, default=1
        Delta degrees of freedom of the SMD's SDs (also of the SDs of all
        essays that ``"johnson"`` and ``"williamson"`` use).
    thresholds : dict, default=None
        Overrides of the flag thresholds, keys ``"abs_dsm"`` (0.10),
        ``"abs_smd"`` (0.15) and ``"qwk"`` (0.70).
    include_all : bool, default=True
        Whether to add a last row ``"all"`` computed on all essays (its DSM is
        0 by construction, up to rounding). Not allowed when a group is
        itself labelled ``"all"``.

    Returns
    -------
    report : pandas.DataFrame
        Indexed by group label (index name ``"group"``, sorted), then
        ``"all"``. Columns: ``n``; ``human_mean``, ``human_sd``,
        ``machine_mean``, ``machine_sd`` (SDs with ddof=1, as RSMTool);
        ``qwk``; ``smd`` (signed, machine minus human); ``dsm`` (signed);
        ``qwk_ok`` (QWK >= 0.70), ``smd_ok`` (\\|SMD\\| <= 0.15) and
        ``dsm_ok`` (\\|DSM\\| <= 0.10). A flag is False when its value is NaN.

    Warns
    -----
    UndefinedMetricWarning
        For groups with fewer than 2 essays: their SDs, QWK, SMD and DSM are
        NaN (``n`` and the means are reported). Also, from the single
        metrics, when a group's QWK or SMD is undefined (e.g. one score for
        every essay of the group), or when all human or all machine scores
        are equal (no DSM).

    Notes
    -----
    The DSM of a group is ``mean(z_pred) - mean(z_true)``, where each score
    is standardized with the mean and SD (ddof=1) of its kind over all
    essays (:func:`~sklearn_fairaes.metrics.difference_of_standardized_means`).
    A positive DSM means the machine scores the group higher, relative to
    the human scores, than it scores essays on the whole. RSMTool's report
    marks \\|DSM\\| > 0.1.

    Examples
    --------
    >>> from sklearn_fairaes.metrics import group_agreement_report
    >>> y = [1, 2, 3, 4, 2, 3, 1, 4]
    >>> pred = [1.2, 2.1, 3.4, 3.8, 2.9, 3.6, 1.8, 4.4]
    >>> groups = ["a", "a", "a", "a", "b", "b", "b", "b"]
    >>> report = group_agreement_report(y, pred, groups=groups)
    >>> report[["n", "qwk", "dsm", "dsm_ok"]].round(3)
           n   qwk    dsm  dsm_ok
    group
    a      4  1.00 -0.249   False
    b      4  0.70  0.249   False
    all    8  0.85  0.000    True
    """
    pd = require("pandas", purpose="group_agreement_report")
    _check_rounding(rounding)
    check_option(smd_method, "smd_method", _SMD_METHODS)
    if not isinstance(include_all, (bool, np.bool_)):
        raise TypeError(f"include_all must be True or False, got {include_all!r}")
    limits = _check_thresholds(thresholds, GROUP_THRESHOLDS)
    human, machine = _check_scores_pair(y_true, y_pred)
    g = check_groups(groups, n_samples=human.shape[0])
    names, codes, counts = np.unique(g, return_inverse=True, return_counts=True)
    if include_all and any(isinstance(v, str) and v == "all" for v in names.tolist()):
        raise ValueError(
            "a group is labelled 'all', which is the label of the row for all "
            "essays; rename that group or pass include_all=False"
        )
    if labels is None and rounding == "round":
        _check_integer_valued(human, "y_true", rounding)
        labels = np.arange(human.min(), human.max() + 1)
    population = {
        "true_mn": float(human.mean()),
        "true_sd": float(np.std(human, ddof=1)),
        "pred_mn": float(machine.mean()),
        "pred_sd": float(np.std(machine, ddof=1)),
    }
    if smd_method in ("johnson", "williamson"):
        population["smd_true_sd"] = float(np.std(human, ddof=smd_ddof))
        population["smd_pred_sd"] = float(np.std(machine, ddof=smd_ddof))
    _warn_small_groups(names, counts, "their SDs, QWK, SMD and DSM are NaN")
    parts: list[tuple[Any, NDArray[np.bool_] | slice]] = [
        (_label(v), codes == k) for k, v in enumerate(names)
    ]
    if include_all:
        parts.append(("all", slice(None)))
    rows: dict[Any, dict[str, float]] = {}
    for label, keep in parts:
        h, m = human[keep], machine[keep]
        row: dict[str, float] = {"n": int(h.shape[0]), "human_mean": float(h.mean()),
                                 "machine_mean": float(m.mean())}  # fmt: skip
        if h.shape[0] >= 2:
            row.update(
                _agreement_row(
                    h,
                    m,
                    population,
                    labels=labels,
                    rounding=rounding,
                    smd_method=smd_method,
                    smd_ddof=smd_ddof,
                )
            )
        else:
            row.update(dict.fromkeys(("human_sd", "machine_sd", "qwk", "smd", "dsm"),
                                     float("nan")))  # fmt: skip
        row["qwk_ok"] = bool(row["qwk"] >= limits["qwk"])
        row["smd_ok"] = bool(abs(row["smd"]) <= limits["abs_smd"])
        row["dsm_ok"] = bool(abs(row["dsm"]) <= limits["abs_dsm"])
        rows[label] = row
    columns = ["n", "human_mean", "human_sd", "machine_mean", "machine_sd", "qwk",
               "smd", "dsm", "qwk_ok", "smd_ok", "dsm_ok"]  # fmt: skip
    report = pd.DataFrame.from_dict(rows, orient="index")[columns]
    report.index.name = "group"
    return report


# --------------------------------------------------------------------------- OLS


def _rsmtool_order(
    values: NDArray[Any], first: int | None = None
) -> tuple[NDArray[Any], NDArray[np.intp], list[int]]:
    """Distinct values by decreasing count, ties by increasing value; ``first`` first.

    RSMTool's ``convert_to_ordered_category``: the first level is the
    reference category of the regression.
    """
    names, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    order = sorted(range(names.shape[0]), key=lambda k: (-counts[k], k))
    if first is not None:
        order.remove(first)
        order.insert(0, first)
    return names, inverse, order


def _dummies(inverse: NDArray[np.intp], order: Sequence[int]) -> NDArray[np.float64]:
    """Treatment-coded indicator columns of every level but the reference."""
    return np.stack([inverse == k for k in order[1:]], axis=1).astype(np.float64)


def _ols(y: NDArray[np.float64], X: NDArray[np.float64], level: float) -> Bunch:
    """Ordinary least squares as statsmodels' OLS(...).fit() computes it.

    Parameters are ``pinv(X) @ y`` (the minimum-norm solution when ``X`` is
    rank deficient); degrees of freedom use the rank of ``X``. Columns whose
    coefficient is not estimable (not determined by the data) get NaN.
    """
    from scipy import stats

    n, k = X.shape
    pinv = np.linalg.pinv(X)
    params = pinv @ y
    rank = int(np.linalg.matrix_rank(X))
    # e_j lies in the row space of X (the coefficient is estimable) exactly when
    # the projection onto that space, pinv(X) @ X, has 1 on its diagonal there.
    estimable = np.abs(np.diag(pinv @ X) - 1.0) < 1e-8
    resid = y - X @ params
    ssr = float(resid @ resid)
    centred = y - y.mean()
    tss = float(centred @ centred)
    df_resid = n - rank
    df_model = rank - 1
    constant = np.ptp(y) == 0
    out = Bunch(
        params=params, ssr=ssr, tss=tss, rank=rank, df_resid=df_resid,
        df_model=df_model, estimable=estimable, constant=constant,
    )  # fmt: skip
    nan = np.full(k, np.nan)
    if df_resid == 0 or constant:
        out.update(bse=nan, tvalues=nan, pvalues=nan, ci_low=nan, ci_high=nan)
    else:
        scale = ssr / df_resid
        bse = np.sqrt(np.diag(pinv @ pinv.T) * scale)
        tvalues = params / bse
        q = stats.t.ppf(0.5 + level / 2, df_resid)
        out.update(
            bse=bse,
            tvalues=tvalues,
            pvalues=2 * stats.t.sf(np.abs(tvalues), df_resid),
            ci_low=params - q * bse,
            ci_high=params + q * bse,
        )
    if constant:
        out.update(r2=np.nan, r2_adjusted=np.nan, fvalue=np.nan, f_pvalue=np.nan)
    else:
        r2 = 1.0 - ssr / tss
        r2_adjusted = np.nan if df_resid == 0 else 1.0 - (n - 1) / df_resid * (1 - r2)
        if df_resid == 0 or df_model == 0:
            fvalue = f_pvalue = np.nan
        else:
            fvalue = ((tss - ssr) / df_model) / (ssr / df_resid)
            f_pvalue = float(stats.f.sf(fvalue, df_model, df_resid))
        out.update(r2=r2, r2_adjusted=r2_adjusted, fvalue=fvalue, f_pvalue=f_pvalue)
    for key in ("params", "bse", "tvalues", "pvalues", "ci_low", "ci_high"):
        out[key] = np.where(estimable, out[key], np.nan)
    return out


class FairnessAnalyses(Bunch):
    """Result of :func:`fairness_analyses`: two tables and the reference group.

    Keys (also attributes): ``summary`` and ``coefficients`` (pandas
    DataFrames, described in :func:`fairness_analyses`) and ``base_group``
    (the reference group's label).

    Examples
    --------
    >>> from sklearn_fairaes.metrics import fairness_analyses
    >>> result = fairness_analyses([1, 2, 3, 2, 1, 3], [1.2, 2.3, 2.9, 2.5, 1.6, 3.4],
    ...                            groups=["a", "a", "a", "b", "b", "b"])
    >>> sorted(result)
    ['base_group', 'coefficients', 'summary']
    """


def fairness_analyses(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    groups: ArrayLike,
    base_group: object = None,
    confidence_level: float = 0.95,
) -> FairnessAnalyses:
    """OSA, OSD and CSD of Loukina et al. (2019), as RSMTool computes them.

    How much of the machine's error is explained by group membership, each
    measured with an ordinary least squares fit on indicator variables of the
    groups (the reference group is the intercept):

    * overall score accuracy (OSA): the squared error
      ``(y_pred - y_true) ** 2`` regressed on the groups. Do some groups get
      less accurate scores?
    * overall score difference (OSD): the signed error ``y_pred - y_true``
      regressed on the groups. Does the machine score some groups higher or
      lower than the humans do?
    * conditional score difference (CSD): the signed error regressed on the
      groups and the human score as a categorical covariate, compared with
      the fit on the human score alone. Does the difference remain among
      essays with the same human score?

    Group fairness is the related work the paper (§1) contrasts with
    individual fairness.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Human scores; each distinct value is a level of CSD's covariate.
    y_pred : array-like of shape (n_samples,)
        Machine scores.
    groups : array-like of shape (n_samples,)
        Group label of each essay; at least 2 distinct groups.
    base_group : label, default=None
        The reference group. None takes the largest group, ties broken by the
        smallest label (RSMTool's rule).
    confidence_level : float, default=0.95
        Level of the coefficients' intervals (RSMTool reports 0.95).

    Returns
    -------
    result : FairnessAnalyses
        Dict-like with:

        ``summary``
            pandas.DataFrame indexed by ``metric`` (``"osa"``,
            ``"osd"``, ``"csd"``), columns ``name`` (the long name),
            ``r2`` (R² of the fit; for CSD the increase in R² over the fit on
            the human score alone), ``r2_adjusted`` (adjusted R², or its
            increase for CSD: RSMTool's ``R2``), ``f_statistic``, ``df_num``
            and ``df_denom`` (the F test that every group coefficient is 0;
            for CSD the nested-model F test), ``p_value`` (its p-value:
            RSMTool's ``sig``) and ``base_group``.

        ``coefficients``
            pandas.DataFrame, one row per metric and group
            (the reference group first, then by decreasing size, as RSMTool),
            columns ``metric``, ``group``, ``term`` (``"intercept"`` for the
            reference group's row, ``"difference"`` for the others),
            ``estimate``, ``std_error``, ``t_statistic``, ``p_value``,
            ``ci_low`` and ``ci_high``. The intercept of OSA and OSD is the
            reference group's mean squared or signed error and a difference
            row is that group's mean minus it; for CSD both are taken at the
            reference level of the human score (its most frequent value).

        ``base_group``
            The reference group's label.

    Raises
    ------
    ValueError
        On fewer than 2 groups, a missing group label, scores of different
        lengths, NaN scores, or a ``base_group`` that is not a label.

    Warns
    -----
    UndefinedMetricWarning
        When an error is the same for every essay (no variance to explain:
        R², F and p-values are NaN), when a fit leaves no residual degrees
        of freedom (adjusted R², p-values and intervals are NaN), or when the
        groups are confounded with the human score, so that some CSD
        coefficients are not determined by the data (those are NaN, where
        RSMTool reports arbitrary numbers; its F test then has fewer
        numerator degrees of freedom, NaN when none is left).

    Notes
    -----
    Every number equals RSMTool 12's (statsmodels' OLS on the formulas
    ``SE ~ group``, ``error ~ group``, ``error ~ group + sc1_cat`` and
    ``error ~ sc1_cat``, with ``anova_lm`` for CSD), which
    ``tests/rsmtool_reference`` records; here they are computed with numpy
    and scipy. R² is ``1 - SSR / TSS``; adjusted R² is
    ``1 - (n - 1) / (n - rank) * (1 - R²)``; the p-values of the
    coefficients are two-sided t tests.

    References
    ----------
    .. [1] A. Loukina, N. Madnani and K. Zechner, "The many dimensions of
       algorithmic fairness in educational applications", Proceedings of the
       14th Workshop on Innovative Use of NLP for Building Educational
       Applications (BEA), 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import fairness_analyses
    >>> rng = np.random.default_rng(0)
    >>> groups = np.repeat(["a", "b"], 50)
    >>> y = rng.integers(1, 7, size=100).astype(float)
    >>> pred = y + 0.5 * (groups == "b") + rng.normal(0, 0.5, size=100)
    >>> result = fairness_analyses(y, pred, groups=groups)
    >>> result.summary[["r2_adjusted", "p_value"]].round(4)
            r2_adjusted  p_value
    metric
    osa          0.0870   0.0017
    osd          0.1964   0.0000
    csd          0.1746   0.0000

    OSD's intercept is group a's mean error; b's row is its mean error minus a's:

    >>> osd = result.coefficients.query("metric == 'osd'")
    >>> osd[["group", "term", "estimate"]].round(3)
      group        term  estimate
    2     a   intercept     0.017
    3     b  difference     0.497
    """
    pd = require("pandas", purpose="fairness_analyses")
    confidence_level = check_real(confidence_level, "confidence_level", lower=0, upper=1)
    human, machine = _check_scores_pair(y_true, y_pred)
    g = check_groups(groups, n_samples=human.shape[0], min_groups=2)
    first = None
    if base_group is not None:
        names = np.unique(g)
        matches = [k for k, v in enumerate(names.tolist()) if v == base_group]
        if not matches:
            shown = ", ".join(repr(_label(v)) for v in names)
            raise ValueError(
                f"base_group={base_group!r} is not one of the group labels ({shown}); "
                f"pass one of them, or None for the largest group"
            )
        first = matches[0]
    names, inverse, order = _rsmtool_order(g, first)
    base = _label(names[order[0]])
    _, score_inverse, score_order = _rsmtool_order(human)
    error = machine - human
    ones = np.ones((human.shape[0], 1))
    group_cols = _dummies(inverse, order)
    score_cols = (
        _dummies(score_inverse, score_order)
        if len(score_order) > 1
        else np.empty((human.shape[0], 0))
    )
    n_group = group_cols.shape[1]
    level = confidence_level
    fits = {
        "osa": _ols(error**2, np.hstack([ones, group_cols]), level),
        "osd": _ols(error, np.hstack([ones, group_cols]), level),
        "csd": _ols(error, np.hstack([ones, group_cols, score_cols]), level),
    }
    null = _ols(error, np.hstack([ones, score_cols]), level)
    _warn_undefined_fits(fits, null, n_group, human.shape[0])

    csd = fits["csd"]
    df_diff = null.df_resid - csd.df_resid
    if csd.constant or csd.df_resid == 0 or df_diff == 0:
        f_csd = p_csd = np.nan
    else:
        from scipy import stats

        f_csd = ((null.ssr - csd.ssr) / df_diff) / (csd.ssr / csd.df_resid)
        p_csd = float(stats.f.sf(f_csd, df_diff, csd.df_resid))
    summary = {
        "osa": _summary_row(fits["osa"]),
        "osd": _summary_row(fits["osd"]),
        "csd": {
            "r2": csd.r2 - null.r2,
            "r2_adjusted": csd.r2_adjusted - null.r2_adjusted,
            "f_statistic": f_csd,
            "df_num": int(df_diff),
            "df_denom": int(csd.df_resid),
            "p_value": p_csd,
        },
    }
    for key, name in _ANALYSES:
        summary[key] = {"name": name, **summary[key], "base_group": base}
    summary = pd.DataFrame.from_dict(summary, orient="index")
    summary.index.name = "metric"

    group_labels = [_label(names[k]) for k in order]
    rows = []
    for key, _ in _ANALYSES:
        fit = fits[key]
        for c in range(n_group + 1):
            rows.append(
                {
                    "metric": key,
                    "group": group_labels[c],
                    "term": "intercept" if c == 0 else "difference",
                    "estimate": float(fit.params[c]),
                    "std_error": float(fit.bse[c]),
                    "t_statistic": float(fit.tvalues[c]),
                    "p_value": float(fit.pvalues[c]),
                    "ci_low": float(fit.ci_low[c]),
                    "ci_high": float(fit.ci_high[c]),
                }
            )
    coefficients = pd.DataFrame(rows)
    return FairnessAnalyses(summary=summary, coefficients=coefficients, base_group=base)


def _summary_row(fit: Bunch) -> dict[str, float]:
    return {
        "r2": float(fit.r2),
        "r2_adjusted": float(fit.r2_adjusted),
        "f_statistic": float(fit.fvalue),
        "df_num": int(fit.df_model),
        "df_denom": int(fit.df_resid),
        "p_value": float(fit.f_pvalue),
    }


def _warn_undefined_fits(fits: dict[str, Bunch], null: Bunch, n_group: int, n: int) -> None:
    problems = []
    if fits["osa"].constant:
        problems.append(
            "the squared error is the same for every essay, so OSA has no variance "
            "to explain (its R², F and p-values are NaN)"
        )
    if fits["osd"].constant:
        problems.append(
            "the error (y_pred - y_true) is the same for every essay, so OSD and CSD "
            "have no variance to explain (their R², F and p-values are NaN)"
        )
    if any(fit.df_resid == 0 for fit in (*fits.values(), null)):
        problems.append(
            f"a fit has as many parameters as there are essays ({n}), so no residual "
            f"degrees of freedom are left (adjusted R², p-values and intervals are "
            f"NaN); more essays per group and per human score are needed"
        )
    csd = fits["csd"]
    hidden = ~csd.estimable[: n_group + 1]
    if hidden.any():
        problems.append(
            "the groups are confounded with the human score (group membership is "
            f"determined by it, in part or whole), so {int(hidden.sum())} CSD "
            "coefficient(s) cannot be estimated and are NaN"
            + (
                "; no degrees of freedom are left for CSD's F test (NaN)"
                if null.df_resid == csd.df_resid
                else ""
            )  # fmt: skip
        )
    for problem in problems:
        warnings.warn(problem, UndefinedMetricWarning, stacklevel=3)


# --------------------------------------------------------------------------- pairs


class _GroupLipschitzCounter:
    """Per group, the pairs of a within-group engine that satisfy the inequality.

    The arithmetic is that of :class:`._pairs._counters._LipschitzCounter`, step for
    step, so every pair is decided as :func:`lipschitz_fraction` decides it.
    """

    def __init__(
        self,
        y: NDArray[np.float64],
        d_scaling: Scaling,
        o_scaling: Scaling,
        lipschitz_constant: float,
        codes: NDArray[np.intp],
        n_groups: int,
    ) -> None:
        self.y = y
        self.d_scaling, self.o_scaling = d_scaling, o_scaling
        self.lipschitz_constant = lipschitz_constant
        self.codes, self.n_groups = codes, n_groups

    def map(self, block: PairBlock) -> PerGroup:
        d = _normalise(block.checked_distances(), self.d_scaling)
        if self.lipschitz_constant != 1.0:
            np.multiply(d, self.lipschitz_constant, out=d)
        o = block.outcome_differences(self.y)
        _normalise(o, self.o_scaling, out=o)
        hit = np.less_equal(o, d)
        valid = block.mask
        if valid is None:  # pragma: no cover - a within-group engine always masks
            valid = np.ones(hit.shape, dtype=bool)
        hit &= valid
        # A within-group pair's two essays share the row's group.
        rows = self.codes[block.rows]
        return self._by_group(rows, hit), self._by_group(rows, valid)

    def _by_group(
        self, rows: NDArray[np.intp], flags: NDArray[np.bool_]
    ) -> NDArray[np.int64]:
        counts = np.bincount(rows, weights=np.count_nonzero(flags, axis=1),
                             minlength=self.n_groups)  # fmt: skip
        return counts.astype(np.int64)

    def combine(self, a: PerGroup, b: PerGroup) -> PerGroup:
        return a[0] + b[0], a[1] + b[1]

    def empty(self) -> PerGroup:
        zero = np.zeros(self.n_groups, dtype=np.int64)
        return zero, zero.copy()


class _ScreenedGroupLipschitzCounter(_ScreenedLipschitzCounter):
    """Float32 screening of :class:`._pairs._counters._ScreenedLipschitzCounter`, per group."""

    def __init__(
        self,
        y: NDArray[np.float64],
        a: float,
        b: float,
        c: float,
        margin: float,
        codes: NDArray[np.intp],
        n_groups: int,
        settle: _counters._Settler,
    ) -> None:
        super().__init__(y, a, b, c, margin, settle)
        self.codes, self.n_groups = codes, n_groups

    def settled(self, sure: Any, i: NDArray[np.int64], j: NDArray[np.int64]) -> Any:
        # a within-group pair's two essays share the group of i
        if not i.size:
            return sure
        return sure + np.bincount(self.codes[i[self.settle(i, j)]], minlength=self.n_groups)

    def map(self, block: PairBlock) -> ScreenedCounts:
        T = self.statistic(block)
        valid = block.mask
        if valid is None:  # pragma: no cover - a within-group engine always masks
            valid = np.ones(T.shape, dtype=bool)
        rows = self.codes[block.rows]
        sure = np.bincount(rows, weights=np.count_nonzero(T >= self.margin, axis=1),
                           minlength=self.n_groups).astype(np.int64)  # fmt: skip
        pairs = np.bincount(rows, weights=np.count_nonzero(valid, axis=1),
                            minlength=self.n_groups).astype(np.int64)  # fmt: skip
        i, j = self.undecided(block, T)
        return self.settled(sure, i, j), pairs

    def map_torch(self, block: _torch_backend.TorchBlock) -> ScreenedCounts:
        """:meth:`map` of a block on the torch backend (same counts, on the device)."""
        sure_rows, (i, j) = _torch_backend.lipschitz_screen(
            block, self.y32, self.a, self.b, self.c, self.torch_margin, per_row=True
        )
        rows = self.codes[block.row_start : block.row_stop]
        sure = np.bincount(rows, weights=sure_rows, minlength=self.n_groups)
        valid = _torch_backend.valid_per_row(block)
        pairs = np.bincount(rows, weights=valid, minlength=self.n_groups)
        return self.settled(sure.astype(np.int64), i, j), pairs.astype(np.int64)

    # combine() is the parent's: its sums work on the per-group count arrays too

    def empty(self) -> ScreenedCounts:
        zero = np.zeros(self.n_groups, dtype=np.int64)
        return zero, zero.copy()


def _screened_group_counts(
    engines: tuple[PairwiseEngine, PairwiseEngine, PairwiseEngine],
    y: NDArray[np.float64],
    codes: NDArray[np.intp],
    n_groups: int,
    d_scaling: Scaling,
    o_scaling: Scaling,
    L: float,
    o_max: float,
) -> GroupCounts:
    """Within-group (per group) and cross-group counts through float32 screening.

    Each block's undecided pairs are settled in the block, as in
    :func:`lipschitz_fraction`, with the exact distances of the overall engine.
    """
    engine, within, between = engines
    a, b, c, margin = _screening_coefficients(engine, y, d_scaling, o_scaling, L, o_max)
    settle = _counters._Settler(engine, y, d_scaling, o_scaling, L)
    w_hits, w_pairs = within.map_reduce(
        _ScreenedGroupLipschitzCounter(y, a, b, c, margin, codes, n_groups, settle)
    )
    b_hits, b_pairs = 0, 0
    if between.n_pairs:
        b_hits, b_pairs = between.map_reduce(
            _ScreenedLipschitzCounter(y, a, b, c, margin, settle)
        )
    return w_hits, w_pairs, b_hits, b_pairs


def _plain_group_counts(
    engines: tuple[PairwiseEngine, PairwiseEngine, PairwiseEngine],
    y: NDArray[np.float64],
    codes: NDArray[np.intp],
    n_groups: int,
    d_scaling: Scaling,
    o_scaling: Scaling,
    L: float,
) -> GroupCounts:
    _, within, between = engines
    w_hits, w_pairs = within.map_reduce(
        _GroupLipschitzCounter(y, d_scaling, o_scaling, L, codes, n_groups)
    )
    b_hits, b_pairs = 0, 0
    if between.n_pairs:
        b_hits, b_pairs = between.map_reduce(_LipschitzCounter(y, d_scaling, o_scaling, L))
    return w_hits, w_pairs, b_hits, b_pairs


class GroupLipschitzFraction(TableResult):
    """Lipschitz fractions within and across groups (see :func:`group_lipschitz_fraction`).

    Scalars: ``overall``, ``within`` and ``cross`` (fractions), the pair
    counts ``n_pairs``, ``n_pairs_within``, ``n_pairs_cross``, the counts of
    pairs that satisfy the inequality ``n_satisfied``,
    ``n_satisfied_within``, ``n_satisfied_cross``, and ``distance_range``,
    ``outcome_range`` (the normalisation's ``(min, max)`` over all pairs).
    Per group (arrays in the order of ``group``, the sorted labels):
    ``group_n_essays``, ``group_n_pairs``, ``group_n_satisfied`` and
    ``group_fraction``. :meth:`to_frame` gives the per-group table.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import group_lipschitz_fraction
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> result = group_lipschitz_fraction(X, [2, 2, 5, 5], groups=["a", "b", "a", "b"])
    >>> result.to_frame()
           n_essays  n_pairs  n_satisfied  fraction
    group
    a             2        1            1       1.0
    b             2        1            0       0.0
    """

    def to_frame(self) -> pd.DataFrame:
        """The per-group table as a :class:`pandas.DataFrame` (needs pandas).

        Indexed by ``group``; columns ``n_essays``, ``n_pairs``,
        ``n_satisfied`` and ``fraction``.
        """
        pd = require("pandas", purpose="DataFrame output")
        frame = pd.DataFrame(
            {
                "n_essays": self.group_n_essays,
                "n_pairs": self.group_n_pairs,
                "n_satisfied": self.group_n_satisfied,
                "fraction": self.group_fraction,
            },
            index=pd.Index([_label(v) for v in self.group], name="group"),
        )
        return frame


def _fraction(hits: int, pairs: int) -> float:
    return float(hits / pairs) if pairs else float("nan")


def group_lipschitz_fraction(
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y_pred: ArrayLike,
    *,
    groups: ArrayLike,
    metric: Metric = "cosine",
    normalize: Literal["minmax", "max"] | None = "minmax",
    lipschitz_constant: float = 1.0,
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> GroupLipschitzFraction:
    """Lipschitz fraction among pairs of essays within groups and across groups.

    The individual fairness of the paper (§5.3.2, Table 3; see
    :func:`~sklearn_fairaes.metrics.lipschitz_fraction`) split by the
    writers' groups: a pair satisfies the inequality when its normalised
    score difference is at most ``L`` times its normalised distance. If
    similar essays of *different* groups satisfy it less often than similar
    essays of the same group, the model treats groups differently at the
    level of individual essays (the link between individual and group
    fairness that the paper's §6 leaves open).

    Distances and score differences are normalised with their minimum and
    maximum over *all* pairs, exactly as :func:`lipschitz_fraction` does;
    the shares are then taken among within-group pairs, cross-group pairs,
    and the pairs within each group. So ``n_satisfied_within +
    n_satisfied_cross`` equals ``lipschitz_fraction(..., return_counts=True)
    .n_satisfied`` and ``overall`` equals ``lipschitz_fraction(...)`` with the
    same options, exactly.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Essay representations, one row per essay; with
        ``metric="precomputed"``, a condensed distance vector (as from
        ``pdist``) or a square distance matrix.
    y_pred : array-like of shape (n_samples,)
        Scores of the essays.
    groups : array-like of shape (n_samples,)
        Group label of each essay (no missing labels).
    metric : str or callable, default="cosine"
        As in :func:`lipschitz_fraction`.
    normalize : {"minmax", "max"} or None, default="minmax"
        As in :func:`lipschitz_fraction`.
    lipschitz_constant : float, default=1.0
        The constant ``L`` (> 0).
    n_jobs : int, default=None
        Number of joblib workers over the blocks of pairs; the result does not
        depend on it.
    block_size : int, default=None
        Side of the blocks of the distance matrix (None: 2048).

    Returns
    -------
    result : GroupLipschitzFraction
        Dict-like with ``overall``, ``within``, ``cross`` (fractions),
        ``n_pairs``, ``n_pairs_within``, ``n_pairs_cross``, ``n_satisfied``,
        ``n_satisfied_within``, ``n_satisfied_cross``, ``distance_range``,
        ``outcome_range``, and per group (sorted labels in ``group``)
        ``group_n_essays``, ``group_n_pairs``, ``group_n_satisfied``,
        ``group_fraction``; ``to_frame()`` gives the per-group table.

    Warns
    -----
    UndefinedMetricWarning
        When every essay is in one group (no cross-group pairs: ``cross`` is
        NaN), when every group has a single essay (``within`` is NaN), and
        for groups with a single essay (their ``group_fraction`` is NaN).
        Also as :func:`lipschitz_fraction` when min-max normalisation is
        undefined.

    Notes
    -----
    The pairs are walked by the blocked engine of
    ``sklearn_fairaes.metrics._pairs`` with its group filter, never
    as an ``N x N`` matrix: one pass for the distance range over all pairs,
    one over the within-group pairs and one over the cross-group pairs
    (three passes, against two for :func:`lipschitz_fraction`). Large dense
    inputs are screened in float32 exactly as there.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import group_lipschitz_fraction
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> result = group_lipschitz_fraction(X, [2, 2, 5, 5], groups=["a", "a", "b", "b"])
    >>> result.within, result.cross, result.overall
    (1.0, 0.25, 0.5)
    >>> int(result.n_pairs_within), int(result.n_pairs_cross)
    (2, 4)
    """
    check_option(normalize, "normalize", ("minmax", "max", None))
    L = check_real(lipschitz_constant, "lipschitz_constant", positive=True)
    engine = as_engine(X, metric=metric, block_size=block_size, n_jobs=n_jobs)
    y = check_scores(y_pred, name="y_pred", n_samples=engine.n_samples, min_samples=2)
    y = _check_score_span(y, "y_pred")  # differences must not overflow
    labels = check_groups(groups, n_samples=engine.n_samples)
    names, codes, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    n_groups = names.shape[0]
    codes = codes.astype(np.intp)
    engines = (engine, engine.filtered(codes, "within"), engine.filtered(codes, "between"))
    o_range = _outcome_range(y)
    counted: GroupCounts | None = None
    d_range: tuple[float, float] | None = None
    # The same two paths, in the same order, as lipschitz_fraction: a float32
    # screening when the engine allows it, else (or when the screened range
    # gives up) exact float64 blocks for both the range and the counts.
    for screened in (True, False) if engine.screenable else (False,):
        d_range = None
        if normalize is not None:
            found = engine.distance_range(screened=screened)
            # The counts run on the filtered engines, which make their own
            # blocks: free the ones this engine kept for its range pass.
            engine._cache = engine._screen_cache = None
            if found is None:
                continue
            d_range = found[:2]
        d_scaling = _scaling(*(d_range or (0.0, 0.0)), normalize, "distance")
        o_scaling = _scaling(*o_range, normalize, "score difference")
        if screened:
            counted = _screened_group_counts(
                engines, y, codes, n_groups, d_scaling, o_scaling, L, o_range[1]
            )
        else:
            counted = _plain_group_counts(
                engines, y, codes, n_groups, d_scaling, o_scaling, L
            )
        break
    # the loop ends on a count: only the screened range pass gives up
    w_hits, w_pairs, b_hits, b_pairs = cast("GroupCounts", counted)
    n_within, n_cross = int(w_pairs.sum()), int(b_pairs)
    hits_within, hits_cross = int(w_hits.sum()), int(b_hits)
    if n_groups == 1:
        warnings.warn(
            f"every essay is in one group ({_label(names[0])!r}), so there are no "
            f"cross-group pairs and the cross-group fraction is NaN; pass at least "
            f"two groups",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    if n_within == 0:
        warnings.warn(
            "every group has a single essay, so there are no within-group pairs and "
            "the within-group fraction is NaN",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    elif (sizes < 2).any():
        _warn_small_groups(names, sizes, "they have no pairs, their fraction is NaN")
    group_fraction = np.divide(
        w_hits, w_pairs, out=np.full(n_groups, np.nan), where=w_pairs > 0
    )
    return GroupLipschitzFraction(
        overall=_fraction(hits_within + hits_cross, n_within + n_cross),
        within=_fraction(hits_within, n_within),
        cross=_fraction(hits_cross, n_cross),
        n_pairs=n_within + n_cross,
        n_pairs_within=n_within,
        n_pairs_cross=n_cross,
        n_satisfied=hits_within + hits_cross,
        n_satisfied_within=hits_within,
        n_satisfied_cross=hits_cross,
        distance_range=d_range,
        outcome_range=o_range,
        group=names,
        group_n_essays=sizes.astype(np.int64),
        group_n_pairs=w_pairs,
        group_n_satisfied=w_hits.astype(np.int64),
        group_fraction=group_fraction,
    )
