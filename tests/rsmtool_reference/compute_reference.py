"""Record RSMTool's values of the agreement metrics, for tests/test_agreement.py.

RSMTool pins old numpy/scikit-learn, so it runs in a separate virtual
environment, never in the package's own. See README.md in this folder:

    python3 -m venv /tmp/rsm-venv
    /tmp/rsm-venv/bin/pip install rsmtool==12.0.0
    /tmp/rsm-venv/bin/python tests/rsmtool_reference/compute_reference.py

The script writes ``rsmtool_values.json`` next to itself: provenance, the exact
inputs of every case (so the tests need neither RSMTool nor this numpy's
random streams) and RSMTool's outputs. Each metric family has one function
``<family>_values(case) -> dict``; to record another family (e.g. more of
``rsmtool.fairness_utils``), add a function and list it in ``FAMILIES`` or
next to ``fairness_values``.

The group data sets (``make_fairness_data`` and ``make_fairness_variants``)
feed ``fairness_values`` (RSMTool's fairness tables), ``fairness_fit_values``
(the OLS fits behind them) and ``group_metrics_values`` (RSMTool's evaluation
by group); tests/test_group_metrics.py compares the package with all of them.

Nothing here is imported at module level beyond the standard library and
numpy, so pytest's doctest collection can import this file without RSMTool.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "rsmtool_values.json"
SEED = 20240611


# --------------------------------------------------------------------------- inputs


def _ints(rng, low, high, n):
    return rng.integers(low, high + 1, size=n).astype(float)


def make_cases():
    """Deterministic inputs: integer and real-valued predictions, several scales, ties.

    ``scale`` is the score scale (min, max) used for trimming and rounding;
    ``population`` holds the population means/SDs passed to the subgroup
    metrics (made-up numbers near the sample values).
    """
    rng = np.random.default_rng(SEED)
    cases = []

    def add(name, description, y_true, y_pred, scale, **extra):
        y_true = np.asarray(y_true, dtype=float)
        y_pred = np.asarray(y_pred, dtype=float)
        population = {
            "y_true_mn": round(float(y_true.mean()) - 0.1, 6),
            "y_true_sd": round(float(y_true.std(ddof=1)) * 1.1, 6),
            "y_pred_mn": round(float(y_pred.mean()) + 0.05, 6),
            "y_pred_sd": round(float(y_pred.std(ddof=1)) * 0.9, 6),
        }
        case = {
            "name": name,
            "description": description,
            "y_true": y_true.tolist(),
            "y_pred": y_pred.tolist(),
            "scale": list(scale) if scale is not None else None,
            "population": population,
        }
        case.update({k: np.asarray(v, dtype=float).tolist() for k, v in extra.items()})
        cases.append(case)

    y = _ints(rng, 1, 6, 150)
    add(
        "int_1_6",
        "integer scores 1-6, integer predictions off by at most one point",
        y,
        np.clip(y + rng.integers(-1, 2, size=150), 1, 6),
        (1, 6),
    )

    y = rng.choice([0.0, 2.0, 3.0, 5.0], size=120)
    add(
        "int_gap_0_5",
        "human scores never take the values 1 and 4 of the 0-5 scale; integer predictions",
        y,
        np.clip(y + rng.integers(-2, 3, size=120), 0, 5),
        (0, 5),
    )

    y = _ints(rng, 0, 3, 200)
    add(
        "float_0_3_ties",
        "0-3 scale; predictions with one decimal (many exact halves) and out of range",
        y,
        np.round(y + rng.normal(0, 0.8, size=200), 1),
        (0, 3),
    )

    r1 = _ints(rng, 1, 12, 250)
    r2 = np.clip(r1 + rng.integers(-2, 3, size=250), 0, 12)
    y = r1 + r2
    add(
        "float_asap7_like",
        "resolved score = rater1 + rater2 (raters 0-12), predictions rounded to 3 decimals",
        y,
        np.round(y + rng.normal(0.3, 2.5, size=250), 3),
        (int(y.min()), int(y.max())),
        rater1=r1,
        rater2=r2,
    )

    y = _ints(rng, 1, 5, 160)
    add(
        "float_exact_halves",
        "every prediction is an exact half (x.5): rounding half to even matters",
        y,
        y + rng.choice([-1.5, -0.5, 0.5, 1.5], size=160),
        (1, 5),
    )

    add(
        "continuous_both",
        "human scores are averages of two raters (halves); real-valued predictions",
        (_ints(rng, 1, 6, 140) + _ints(rng, 1, 6, 140)) / 2,
        np.round(rng.uniform(1, 6, size=140), 4),
        None,
    )

    y = np.array([1.0, 2, 2, 3, 3, 3, 4, 4])
    add(
        "small_n8",
        "eight essays, predictions with a tie at 2.5",
        y,
        np.array([1.2, 2.5, 1.9, 3.5, 2.6, 3.1, 4.4, 3.7]),
        (1, 4),
    )

    y = _ints(rng, -2, 2, 100)
    add(
        "negative_scale",
        "scale -2..2 (truncation toward zero differs from flooring here)",
        y,
        np.round(y + rng.normal(0, 0.9, size=100), 2),
        (-2, 2),
    )
    return cases


def make_fairness_data():
    """One seeded data set with a group column, for get_fairness_analyses."""
    rng = np.random.default_rng(SEED + 1)
    n = 300
    group = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    sc1 = _ints(rng, 1, 6, n)
    bias = np.select([group == "b", group == "c"], [0.3, -0.2], 0.0)
    system = np.round(sc1 + bias + rng.normal(0, 0.8, size=n), 4)
    return {"group": group.tolist(), "sc1": sc1.tolist(), "system": system.tolist()}


# --------------------------------------------------------------------------- families


def _trim_round(case):
    """RSMTool's raw_trim_round: trim to the scale +- 0.4998, then numpy.rint."""
    from rsmtool.preprocessor import FeaturePreprocessor

    low, high = case["scale"]
    trimmed = FeaturePreprocessor().trim(np.array(case["y_pred"]), low, high)
    return np.rint(trimmed)


def qwk_values(case):
    from rsmtool.utils.metrics import quadratic_weighted_kappa

    y_true, y_pred = np.array(case["y_true"]), np.array(case["y_pred"])
    out = {"qwk_continuous": float(quadratic_weighted_kappa(y_true, y_pred))}
    if case["scale"] is not None:
        out["qwk_trim_round"] = float(quadratic_weighted_kappa(y_true, _trim_round(case)))
    return out


def smd_values(case):
    from rsmtool.utils.metrics import standardized_mean_difference

    y_true, y_pred = np.array(case["y_true"]), np.array(case["y_pred"])
    pop = case["population"]
    out = {}
    for ddof in (0, 1):
        for method in ("pooled", "unpooled"):
            out[f"smd_{method}_ddof{ddof}"] = float(
                standardized_mean_difference(y_true, y_pred, method=method, ddof=ddof)
            )
    out["smd_johnson"] = float(
        standardized_mean_difference(
            y_true, y_pred, population_y_true_observed_sd=pop["y_true_sd"], method="johnson"
        )
    )
    out["smd_williamson"] = float(
        standardized_mean_difference(
            y_true,
            y_pred,
            population_y_true_observed_sd=pop["y_true_sd"],
            population_y_pred_sd=pop["y_pred_sd"],
            method="williamson",
        )
    )
    return out


def dsm_values(case):
    from rsmtool.utils.metrics import difference_of_standardized_means

    y_true, y_pred = np.array(case["y_true"]), np.array(case["y_pred"])
    pop = case["population"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RSMTool warns when a pair is left out
        both = difference_of_standardized_means(
            y_true,
            y_pred,
            population_y_true_observed_mn=pop["y_true_mn"],
            population_y_pred_mn=pop["y_pred_mn"],
            population_y_true_observed_sd=pop["y_true_sd"],
            population_y_pred_sd=pop["y_pred_sd"],
        )
        true_only = difference_of_standardized_means(
            y_true,
            y_pred,
            population_y_true_observed_mn=pop["y_true_mn"],
            population_y_true_observed_sd=pop["y_true_sd"],
        )
    return {"dsm_population": float(both), "dsm_true_population_only": float(true_only)}


def agreement_values(case):
    from rsmtool.utils.metrics import agreement

    y_true, y_pred = case["y_true"], case["y_pred"]
    out = {
        "exact_agr_raw_percent": float(agreement(y_true, y_pred)),
        "adj_agr_raw_percent": float(agreement(y_true, y_pred, tolerance=1)),
    }
    if case["scale"] is not None:
        rounded = _trim_round(case).tolist()
        out["exact_agr_trim_round_percent"] = float(agreement(y_true, rounded))
        out["adj_agr_trim_round_percent"] = float(agreement(y_true, rounded, tolerance=1))
    return out


def metrics_helper_values(case):
    """RSMTool's per-model evaluation row (Analyzer.metrics_helper), pooled SMD."""
    import pandas as pd
    from rsmtool.analyzer import Analyzer

    if case["scale"] is None:
        return {}
    human = pd.Series(case["y_true"])
    keep = ("wtkappa", "exact_agr", "adj_agr", "SMD", "corr", "N")
    out = {}
    for label, system in (("raw", case["y_pred"]), ("trim_round", _trim_round(case))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row = Analyzer.metrics_helper(human, pd.Series(system), smd_method="pooled")
        out[label] = {k: float(row[k]) for k in keep}
    return out


def degradation_values(case):
    """RSMTool's degradation table (human-system minus human-human), sc1 = rater1.

    RSMTool compares the system with the first human score, so the predictions
    are put on the raters' scale (half the resolved-score prediction).
    """
    import pandas as pd
    from rsmtool.analyzer import Analyzer
    from rsmtool.preprocessor import FeaturePreprocessor

    if "rater1" not in case:
        return {}
    scores = case["rater1"] + case["rater2"]
    low, high = min(scores), max(scores)
    raw = np.array(case["y_pred"]) / 2
    df = pd.DataFrame(
        {
            "sc1": case["rater1"],
            "sc2": case["rater2"],
            "raw": raw,
            "raw_trim_round": np.rint(FeaturePreprocessor().trim(raw, low, high)),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        degradation, _ = Analyzer().compute_degradation_and_disattenuated_correlations(df)
    return {
        "rater_scale": [low, high],
        "y_pred_rater_scale": raw.tolist(),
        "wtkappa_degradation": {
            col: float(degradation.loc[col, "wtkappa"]) for col in ("raw", "raw_trim_round")
        },
    }


def smd_default_values(case):
    """RSMTool's SMD with no method given: rsmeval's default (the human SD, ddof 1)."""
    from rsmtool.utils.metrics import standardized_mean_difference

    y_true, y_pred = np.array(case["y_true"]), np.array(case["y_pred"])
    return {"smd_default": float(standardized_mean_difference(y_true, y_pred))}


def prmse_values(case):
    """RSMTool's PRMSE (rsmtool.utils.prmse) for the case with two raters.

    On the resolved score (the raters' sum, each rating doubled, as the audit
    does), on the raters' scale (half the prediction), and with every fifth
    essay's second rating missing.
    """
    from rsmtool.utils.prmse import prmse_true, true_score_variance, variance_of_errors

    if "rater1" not in case:
        return {}
    ratings = np.column_stack([case["rater1"], case["rater2"]])
    y_pred = np.array(case["y_pred"])
    missing = ratings.copy()
    missing[::5, 1] = np.nan
    return {
        "prmse_resolved": float(prmse_true(y_pred, 2 * ratings)),
        "prmse_rater_scale": float(prmse_true(y_pred / 2, ratings)),
        "prmse_missing": float(prmse_true(y_pred / 2, missing)),
        "variance_of_errors": float(variance_of_errors(ratings)),
        "true_score_variance": float(true_score_variance(ratings)),
    }


FAMILIES = (
    qwk_values,
    smd_values,
    dsm_values,
    agreement_values,
    metrics_helper_values,
    degradation_values,
    smd_default_values,
    prmse_values,
)


def fairness_values(data, base_group=None):
    """rsmtool.fairness_utils.get_fairness_analyses (Loukina et al. 2019: OSA/OSD/CSD)."""
    import pandas as pd
    from rsmtool.fairness_utils import get_fairness_analyses

    df = pd.DataFrame({k: data[k] for k in ("group", "sc1", "system")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, container = get_fairness_analyses(
            df, "group", "system", human_score_column="sc1", base_group=base_group
        )
    out = {}
    for name in container.keys():
        split = container[name].to_dict(orient="split")
        out[name] = {
            "index": [str(i) for i in split["index"]],
            "columns": [str(c) for c in split["columns"]],
            "data": [[_plain(v) for v in row] for row in split["data"]],
        }
    return out


# --------------------------------------------------------------------------- groups


def make_fairness_variants():
    """More data sets for get_fairness_analyses, each with what it exercises.

    ``base_group``: the reference group passed to RSMTool (None: the largest).
    """
    rng = np.random.default_rng(SEED + 2)
    variants = []

    data = make_fairness_data()
    variants.append(
        {
            "name": "base_group_c",
            "description": "the seeded 'fairness' data with the smallest group as reference",
            "base_group": "c",
            **data,
        }
    )

    sizes = {"x": 80, "y": 80, "w": 40, "v": 5}
    group = np.array([g for g, k in sizes.items() for _ in range(k)])
    rng.shuffle(group)
    n = group.size
    sc1 = (_ints(rng, 1, 6, n) + _ints(rng, 1, 6, n)) / 2
    bias = np.select([group == "y", group == "v"], [0.25, -0.6], 0.0)
    system = np.round(sc1 + bias + rng.normal(0, 0.7, size=n), 4)
    variants.append(
        {
            "name": "tied_sizes_halves",
            "description": (
                "two largest groups of equal size (RSMTool breaks the tie "
                "alphabetically), a group of 5, human scores in halves (11 levels)"
            ),
            "base_group": None,
            "group": group.tolist(),
            "sc1": sc1.tolist(),
            "system": system.tolist(),
        }
    )

    n = 260
    group = rng.choice([3, 1, 2], size=n, p=[0.35, 0.2, 0.45])
    sc1 = _ints(rng, 0, 4, n)
    sc1[np.flatnonzero(group == 1)[:3]] = 5.0  # a score point only group 1 has
    system = np.round(sc1 + 0.2 * (group == 3) + rng.normal(0, 0.9, size=n), 4)
    variants.append(
        {
            "name": "int_labels",
            "description": "integer group labels; a human score point only one group has",
            "base_group": None,
            "group": group.tolist(),
            "sc1": sc1.tolist(),
            "system": system.tolist(),
        }
    )

    n = 200
    sc1 = _ints(rng, 1, 6, n)
    group = np.where(sc1 <= 3, "low", "high")
    system = np.round(sc1 + rng.normal(0, 0.8, size=n), 4)
    variants.append(
        {
            "name": "confounded",
            "description": (
                "the group is a function of the human score, so CSD's group effect "
                "is not identifiable (rank-deficient design)"
            ),
            "base_group": None,
            "group": group.tolist(),
            "sc1": sc1.tolist(),
            "system": system.tolist(),
        }
    )
    return variants


def _fit_values(fit):
    """Every number of a statsmodels OLS fit that the package reports."""
    return {
        "nobs": float(fit.nobs),
        "df_model": float(fit.df_model),
        "df_resid": float(fit.df_resid),
        "rsquared": float(fit.rsquared),
        "rsquared_adj": float(fit.rsquared_adj),
        "fvalue": _plain(fit.fvalue),
        "f_pvalue": _plain(fit.f_pvalue),
        "ssr": float(fit.ssr),
        "params": {k: float(v) for k, v in fit.params.items()},
        "bse": {k: float(v) for k, v in fit.bse.items()},
        "pvalues": {k: float(v) for k, v in fit.pvalues.items()},
    }


def fairness_fit_values(data, base_group=None):
    """The OLS fits behind get_fairness_analyses, and CSD's nested-model F test.

    get_fairness_analyses returns the fits of OSA, OSD and CSD; the "null"
    model of CSD (error ~ human score) is refitted here with the same formula,
    and anova_lm compares the two as RSMTool does.
    """
    import pandas as pd
    import statsmodels.formula.api as smf
    from rsmtool.fairness_utils import get_fairness_analyses
    from statsmodels.stats.anova import anova_lm

    df = pd.DataFrame({k: data[k] for k in ("group", "sc1", "system")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits, _ = get_fairness_analyses(
            df, "group", "system", human_score_column="sc1", base_group=base_group
        )
        # get_fairness_analyses added the columns error, SE, group and sc1_cat to df
        null = smf.ols(formula="error ~ sc1_cat", data=df).fit()
        anova = anova_lm(null, fits["csd"])
    out = {name: _fit_values(fit) for name, fit in fits.items()}
    out["csd_null"] = _fit_values(null)
    out["csd_anova"] = {
        "df_diff": _plain(anova["df_diff"].iloc[1]),
        "ss_diff": _plain(anova["ss_diff"].iloc[1]),
        "F": _plain(anova["F"].iloc[1]),
        "p_value": _plain(anova["Pr(>F)"].iloc[1]),
    }
    out["sc1_levels_in_order"] = [_plain(v) for v in df["sc1_cat"].cat.categories.tolist()]
    return out


def group_metrics_values(data):
    """RSMTool's evaluation by group (Analyzer.compute_metrics_by_group).

    The system scores are trimmed to the 1-6 scale (raw_trim: [0.5002, 6.4998])
    and rounded (raw_trim_round), the two score types RSMTool's by-group table
    reports. RSMTool's table holds the continuous QWK of raw_trim only; the
    QWK of raw_trim_round per group is added from quadratic_weighted_kappa.
    """
    import pandas as pd
    from rsmtool.analyzer import Analyzer
    from rsmtool.preprocessor import FeaturePreprocessor
    from rsmtool.utils.metrics import quadratic_weighted_kappa

    trim = FeaturePreprocessor().trim(np.array(data["system"]), 1, 6)
    df = pd.DataFrame(
        {
            "sc1": data["sc1"],
            "raw_trim": trim,
            "raw_trim_round": np.rint(trim),
            "group": data["group"],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table, _ = Analyzer().compute_metrics_by_group(df, "group")
    split = table.to_dict(orient="split")
    qwk_round = {
        str(g): float(quadratic_weighted_kappa(part["sc1"], part["raw_trim_round"]))
        for g, part in df.groupby("group")
    }
    qwk_round["All data"] = float(quadratic_weighted_kappa(df["sc1"], df["raw_trim_round"]))
    return {
        "scale": [1, 6],
        "raw_trim": trim.tolist(),
        "by_group": {
            "index": [str(i) for i in split["index"]],
            "columns": [str(c) for c in split["columns"]],
            "data": [[_plain(v) for v in row] for row in split["data"]],
        },
        "wtkappa_raw_trim_round": qwk_round,
    }


def _plain(value):
    """A JSON value with every digit of a float kept."""
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def main():
    cases = make_cases()
    for case in cases:
        values = {}
        for family in FAMILIES:
            values.update(family(case))
        case["rsmtool"] = values
    fairness = make_fairness_data()
    fairness["rsmtool"] = fairness_values(fairness)
    fairness_fits = fairness_fit_values(fairness)
    group_metrics = group_metrics_values(fairness)
    variants = make_fairness_variants()
    for variant in variants:
        variant["rsmtool"] = fairness_values(variant, variant["base_group"])
        variant["fits"] = fairness_fit_values(variant, variant["base_group"])
    payload = {
        "provenance": {
            "generated_by": "tests/rsmtool_reference/compute_reference.py",
            "date": datetime.date.today().isoformat(),
            "python": platform.python_version(),
            "packages": {
                name: version(name)
                for name in (
                    "rsmtool",
                    "skll",
                    "numpy",
                    "scipy",
                    "scikit-learn",
                    "pandas",
                    "statsmodels",
                )
            },
            "seed": SEED,
            "note": (
                "Inputs are stored verbatim; the tests read them from here. RSMTool's "
                "qwk_trim_round trims predictions to [min - 0.4998, max + 0.4998] of "
                "'scale' and rounds with numpy.rint, as its raw_trim_round. Agreement "
                "rates are RSMTool's percentages. Degradation is RSMTool's sign: "
                "human-system minus human-human."
            ),
        },
        "cases": cases,
        "fairness": fairness,
        "fairness_fits": fairness_fits,
        "fairness_variants": variants,
        "group_metrics": group_metrics,
    }
    OUT.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(
        f"wrote {OUT} ({len(cases)} cases) with rsmtool {version('rsmtool')}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
