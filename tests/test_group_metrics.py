"""Group metrics: against RSMTool's recorded values (fairness analyses, evaluation by
group), one-way ANOVA, the single agreement metrics on each group, and a naive
pdist-and-loop Lipschitz count split by group."""

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.spatial.distance import pdist, squareform

from sklearn_fairaes._validation import check_groups
from sklearn_fairaes.exceptions import UndefinedMetricWarning
from sklearn_fairaes.metrics import _group as G
from sklearn_fairaes.metrics import (
    _individual,
    difference_of_standardized_means,
    fairness_analyses,
    group_agreement_report,
    group_lipschitz_fraction,
    lipschitz_fraction,
    qwk,
    standardized_mean_difference,
)
from sklearn_fairaes.metrics._pairs import _blocks, _counters, _engine, _range, _types

REFERENCE = Path(__file__).resolve().parent / "rsmtool_reference" / "rsmtool_values.json"
RECORDED = json.loads(REFERENCE.read_text(encoding="utf-8"))
RTOL, ATOL = 1e-10, 1e-12
METRICS = ("osa", "osd", "csd")
COLUMN = {
    "osa": "Overall score accuracy",
    "osd": "Overall score difference",
    "csd": "Conditional score difference",
}


def _close(ours, theirs, rtol=RTOL):
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=ATOL)


def _fairness_sets():
    base = RECORDED["fairness"]
    sets = {
        "seeded": (base, base["rsmtool"], RECORDED["fairness_fits"], None),
    }
    for v in RECORDED["fairness_variants"]:
        sets[v["name"]] = (v, v["rsmtool"], v["fits"], v["base_group"])
    return sets


FAIRNESS = _fairness_sets()


def _run_fairness(name, **kwargs):
    data, _, _, base_group = FAIRNESS[name]
    with warnings.catch_warnings():
        if name == "confounded":
            warnings.simplefilter("ignore", UndefinedMetricWarning)
        return fairness_analyses(
            data["sc1"],
            data["system"],
            groups=data["group"],
            base_group=base_group,
            **kwargs,
        )


# ------------------------------------------------------------ fairness vs RSMTool


def test_reference_records_every_fairness_set():
    assert sorted(FAIRNESS) == [
        "base_group_c", "confounded", "int_labels", "seeded", "tied_sizes_halves",
    ]  # fmt: skip
    assert RECORDED["provenance"]["packages"]["rsmtool"] == "12.0.0"


@pytest.mark.parametrize("name", sorted(FAIRNESS))
def test_fairness_summary_matches_rsmtool(name):
    _, rsm, _, _ = FAIRNESS[name]
    table = rsm["fairness_metrics_by_group"]
    assert table["index"] == ["R2", "sig"]
    result = _run_fairness(name)
    for key in METRICS:
        j = table["columns"].index(COLUMN[key])
        r2, sig = table["data"][0][j], table["data"][1][j]
        row = result.summary.loc[key]
        assert row["name"] == COLUMN[key]
        _close(row["r2_adjusted"], r2)
        if np.isnan(sig):  # the confounded set: no degrees of freedom for CSD's test
            assert name == "confounded" and key == "csd"
            assert np.isnan(row["p_value"]) and np.isnan(row["f_statistic"])
        else:
            _close(row["p_value"], sig, rtol=1e-9)
    base = table["data"][0][table["columns"].index("base_category")]
    assert result.base_group == base
    assert (result.summary["base_group"] == base).all()


def _rsmtool_group(index_label):
    """RSMTool's row label: 'Intercept (a)' for the reference group, else the group."""
    if index_label.startswith("Intercept ("):
        return index_label[len("Intercept (") : -1], "intercept"
    return index_label, "difference"


@pytest.mark.parametrize("name", sorted(FAIRNESS))
def test_fairness_coefficients_match_rsmtool(name):
    _, rsm, _, _ = FAIRNESS[name]
    result = _run_fairness(name)
    assert list(result.coefficients["metric"]) == [
        m for m in METRICS for _ in rsm[f"estimates_{m}_by_group"]["index"]
    ]
    for key in METRICS:
        table = rsm[f"estimates_{key}_by_group"]
        assert table["columns"] == ["estimate", "P>[t]", "[0.025", "0.975]"]
        ours = result.coefficients[result.coefficients["metric"] == key]
        for (_, row), label, values in zip(ours.iterrows(), table["index"], table["data"]):
            group, term = _rsmtool_group(label)
            assert (str(row["group"]), row["term"]) == (group, term)
            got = row[["estimate", "p_value", "ci_low", "ci_high"]].to_numpy(float)
            if name == "confounded" and key == "csd" and term == "difference":
                # statsmodels reports a minimum-norm value for a coefficient the
                # data do not determine; we report NaN.
                assert np.isnan(got).all()
                continue
            _close(got, values, rtol=1e-9)


@pytest.mark.parametrize("name", sorted(FAIRNESS))
def test_fairness_fit_statistics_match_statsmodels(name):
    _, _, fits, _ = FAIRNESS[name]
    result = _run_fairness(name)
    for key in ("osa", "osd"):
        fit, row = fits[key], result.summary.loc[key]
        _close(row["r2"], fit["rsquared"])
        _close(row["f_statistic"], fit["fvalue"])
        assert (row["df_num"], row["df_denom"]) == (fit["df_model"], fit["df_resid"])
        _close(row["p_value"], fit["f_pvalue"], rtol=1e-9)
    full, null, anova = fits["csd"], fits["csd_null"], fits["csd_anova"]
    row = result.summary.loc["csd"]
    _close(row["r2"], full["rsquared"] - null["rsquared"])
    _close(row["r2_adjusted"], full["rsquared_adj"] - null["rsquared_adj"])
    assert row["df_num"] == anova["df_diff"] and row["df_denom"] == full["df_resid"]
    if np.isnan(anova["F"]):
        assert np.isnan(row["f_statistic"])
    else:
        _close(row["f_statistic"], anova["F"])
    for key in METRICS:
        fit = fits[key]
        ours = result.coefficients[result.coefficients["metric"] == key]
        terms = [t for t in fit["params"] if t == "Intercept" or t.startswith("group")]
        for (_, row), term in zip(ours.iterrows(), terms):
            if np.isnan(row["estimate"]):
                assert name == "confounded" and key == "csd"
                continue
            _close(row["estimate"], fit["params"][term])
            _close(row["std_error"], fit["bse"][term])
            _close(row["t_statistic"], fit["params"][term] / fit["bse"][term])
            _close(row["p_value"], fit["pvalues"][term], rtol=1e-9)


def test_fairness_csd_reference_level_is_rsmtools():
    # RSMTool's CSD intercept is at the most frequent human score (ties: smallest).
    for name in FAIRNESS:
        data, _, fits, _ = FAIRNESS[name]
        names, _, order = G._rsmtool_order(np.asarray(data["sc1"]))
        assert [float(names[k]) for k in order] == fits["sc1_levels_in_order"]


def test_fairness_confounded_groups_warn():
    data = FAIRNESS["confounded"][0]
    with pytest.warns(UndefinedMetricWarning, match="confounded with the human score"):
        result = fairness_analyses(data["sc1"], data["system"], groups=data["group"])
    csd = result.coefficients[result.coefficients["metric"] == "csd"]
    assert np.isfinite(csd["estimate"].iloc[0]) and np.isnan(csd["estimate"].iloc[1])


# ------------------------------------------------------------ fairness by hand


def _grouped(rng, n=90):
    groups = rng.choice(["p", "q", "r"], size=n, p=[0.5, 0.3, 0.2])
    y = rng.integers(1, 6, size=n).astype(float)
    pred = y + 0.4 * (groups == "q") + rng.normal(0, 0.7, size=n)
    return y, pred, groups


def test_osa_and_osd_are_one_way_anova(rng):
    y, pred, groups = _grouped(rng)
    result = fairness_analyses(y, pred, groups=groups)
    error = pred - y
    assert result.base_group == "p"  # the largest group
    for key, outcome in (("osa", error**2), ("osd", error)):
        parts = [outcome[groups == g] for g in ("p", "q", "r")]
        f, p = stats.f_oneway(*parts)
        row = result.summary.loc[key]
        _close(row["f_statistic"], f)
        _close(row["p_value"], p, rtol=1e-9)
        between = sum(len(x) * (x.mean() - outcome.mean()) ** 2 for x in parts)
        _close(row["r2"], between / np.sum((outcome - outcome.mean()) ** 2))
        coef = result.coefficients[result.coefficients["metric"] == key]
        assert list(coef["group"]) == ["p", "q", "r"]
        expected = [parts[0].mean(), parts[1].mean() - parts[0].mean(),
                    parts[2].mean() - parts[0].mean()]  # fmt: skip
        _close(coef["estimate"].to_numpy(), expected)


def test_csd_with_one_human_score_equals_osd(rng):
    _, pred, groups = _grouped(rng)
    y = np.full(pred.shape[0], 3.0)
    result = fairness_analyses(y, pred, groups=groups)
    osd, csd = result.summary.loc["osd"], result.summary.loc["csd"]
    for column in ("r2", "r2_adjusted", "f_statistic", "p_value"):
        _close(csd[column], osd[column])
    coef = result.coefficients.set_index(["metric", "group"])["estimate"]
    _close(coef.loc["csd"].to_numpy(), coef.loc["osd"].to_numpy())


def test_fairness_confidence_level_sets_the_t_quantile(rng):
    y, pred, groups = _grouped(rng)
    wide = fairness_analyses(y, pred, groups=groups)
    narrow = fairness_analyses(y, pred, groups=groups, confidence_level=0.8)
    for result, level in ((wide, 0.95), (narrow, 0.8)):
        c = result.coefficients
        # CSD's fit has more parameters than OSA's and OSD's: fewer residual df
        df = c["metric"].map(result.summary["df_denom"].to_dict())
        half = stats.t.ppf(0.5 + level / 2, df) * c["std_error"]
        _close(c["ci_high"] - c["estimate"], half)
        _close(c["estimate"] - c["ci_low"], half)


def test_fairness_base_group_and_ties():
    # Two groups of equal size: the smaller label is the reference, as in RSMTool.
    y = np.array([1, 2, 3, 1, 2, 3, 2, 2.0])
    pred = y + np.array([0.1, -0.2, 0.3, 0.5, 0.4, 0.6, 0.2, -0.1])
    groups = ["b", "b", "b", "a", "a", "a", "c", "c"]
    assert fairness_analyses(y, pred, groups=groups).base_group == "a"
    result = fairness_analyses(y, pred, groups=groups, base_group="c")
    assert result.base_group == "c"
    assert list(result.coefficients["group"][:3]) == ["c", "a", "b"]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=74)  # the labels' order changes: rows move (a regression example)
def test_fairness_invariant_to_relabelling_and_row_order(seed):
    rng = np.random.default_rng(seed)
    y, pred, groups = _grouped(rng, n=40)
    if len(set(groups)) < 2:
        return
    ref = fairness_analyses(y, pred, groups=groups)
    rename = {"p": 30, "q": 10, "r": 20}  # other labels and another sort order
    order = rng.permutation(y.shape[0])
    got = fairness_analyses(
        y[order],
        pred[order],
        groups=[rename[g] for g in groups[order]],
        base_group=rename[ref.base_group],
    )
    columns = ["r2", "r2_adjusted", "f_statistic", "p_value"]
    _close(got.summary[columns].to_numpy(float), ref.summary[columns].to_numpy(float),
           rtol=1e-8)  # fmt: skip
    # Non-base groups are listed in label order, which the renaming changes (seed
    # 74 puts q before r under the old labels, 10 before 20 before 30 under the
    # new ones): align the rows by (metric, group), not by position.
    numbers = ["estimate", "std_error", "p_value", "ci_low", "ci_high"]
    ref_rows = ref.coefficients.assign(group=ref.coefficients["group"].map(rename))
    ref_rows = ref_rows.set_index(["metric", "group"])
    got_rows = got.coefficients.set_index(["metric", "group"])
    assert sorted(got_rows.index) == sorted(ref_rows.index)
    assert len(got_rows.index) == len(set(got_rows.index))
    _close(got_rows.loc[ref_rows.index, numbers].to_numpy(float),
           ref_rows[numbers].to_numpy(float), rtol=1e-8)  # fmt: skip
    # the base group comes first within each metric, under both labellings
    assert set(got.coefficients.groupby("metric")["group"].first()) == {
        rename[ref.base_group]
    }


def test_fairness_constant_error_warns_and_gives_nan():
    y = np.array([1, 2, 3, 4, 1, 2, 3, 4.0])
    groups = ["a"] * 4 + ["b"] * 4
    with pytest.warns(UndefinedMetricWarning, match="same for every essay"):
        result = fairness_analyses(y, y + 0.5, groups=groups)
    assert result.summary[["r2", "r2_adjusted", "p_value"]].isna().all().all()
    coef = result.coefficients
    _close(coef.loc[coef["metric"] == "osd", "estimate"].to_numpy(), [0.5, 0.0])
    assert coef["p_value"].isna().all()


def test_fairness_without_residual_degrees_of_freedom_warns():
    with pytest.warns(UndefinedMetricWarning, match="no residual"):
        result = fairness_analyses([2, 2, 2], [1.5, 2.0, 3.5], groups=["a", "b", "c"])
    assert np.isnan(result.summary.loc["osd", "r2_adjusted"])
    assert result.coefficients["p_value"].isna().all()


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(groups=["a"] * 4), ValueError, "1 distinct group"),
        (dict(groups=["a", "b", "a", "b"], base_group="z"), ValueError,
         "base_group='z' is not one of the group labels"),
        (dict(groups=["a", None, "a", "b"]), ValueError, "missing at position 1"),
        (dict(groups=["a", "b", "a"]), ValueError, "has 3 labels but there are 4"),
        (dict(groups=["a", "b", "a", "b"], confidence_level=1.5), ValueError,
         "confidence_level must be less than 1"),
    ],
)  # fmt: skip
def test_fairness_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        fairness_analyses([1, 2, 3, 4], [1.5, 2, 3, 4], **kwargs)


def test_fairness_nan_score_names_the_row():
    with pytest.raises(ValueError, match="y_pred is NaN at position 2"):
        fairness_analyses([1, 2, 3, 4], [1, 2, np.nan, 4], groups=["a", "b"] * 2)


# ------------------------------------------------------------ agreement table


def _group_metrics_reference():
    gm = RECORDED["group_metrics"]
    table = gm["by_group"]
    rows = {
        i: dict(zip(table["columns"], r)) for i, r in zip(table["index"], table["data"])
    }
    return gm, rows


def test_group_table_matches_rsmtool_evaluation_by_group():
    gm, rows = _group_metrics_reference()
    data = RECORDED["fairness"]
    trim = np.asarray(gm["raw_trim"])
    scale = np.arange(gm["scale"][0], gm["scale"][1] + 1)
    continuous = group_agreement_report(data["sc1"], trim, groups=data["group"],
                                        rounding=None)  # fmt: skip
    rounded = group_agreement_report(data["sc1"], np.rint(trim), groups=data["group"],
                                     labels=scale)  # fmt: skip
    assert list(continuous.index) == ["a", "b", "c", "all"]
    for label, ref in rows.items():
        key = "all" if label == "All data" else label
        c, r = continuous.loc[key], rounded.loc[key]
        assert c["n"] == ref["N"] == r["n"]
        _close(c[["human_mean", "human_sd"]].to_numpy(float), [ref["h_mean"], ref["h_sd"]])
        _close(c["machine_mean"], ref["sys_mean.raw_trim"])
        _close(c["machine_sd"], ref["sys_sd.raw_trim"])
        _close(c["qwk"], ref["wtkappa.raw_trim"])
        _close(c["dsm"], ref["DSM.raw_trim"])
        _close(r["machine_mean"], ref["sys_mean.raw_trim_round"])
        _close(r["machine_sd"], ref["sys_sd.raw_trim_round"])
        _close(r["dsm"], ref["DSM.raw_trim_round"])
        _close(r["qwk"], gm["wtkappa_raw_trim_round"][label])
    # the default scale is that of all essays: the same as passing it
    default = group_agreement_report(data["sc1"], trim, groups=data["group"])
    _close(default["qwk"].to_numpy(), rounded["qwk"].to_numpy())


@pytest.mark.parametrize("smd_method", ["pooled", "unpooled", "johnson", "williamson"])
def test_group_rows_equal_the_single_metrics(rng, smd_method):
    y, pred, groups = _grouped(rng)
    report = group_agreement_report(y, pred, groups=groups, smd_method=smd_method,
                                    smd_ddof=0)  # fmt: skip
    scale = np.arange(y.min(), y.max() + 1)
    population = {}
    if smd_method in ("johnson", "williamson"):
        population["population_y_true_observed_sd"] = np.std(y)
    if smd_method == "williamson":
        population["population_y_pred_sd"] = np.std(pred)
    for g in ("p", "q", "r"):
        h, m = y[groups == g], pred[groups == g]
        row = report.loc[g]
        assert row["n"] == h.shape[0]
        _close(row["qwk"], qwk(h, m, labels=scale))
        _close(row["smd"], standardized_mean_difference(h, m, method=smd_method, ddof=0,
                                                        **population))  # fmt: skip
        dsm = difference_of_standardized_means(
            h, m,
            population_y_true_observed_mn=y.mean(),
            population_y_true_observed_sd=np.std(y, ddof=1),
            population_y_pred_mn=pred.mean(),
            population_y_pred_sd=np.std(pred, ddof=1),
        )  # fmt: skip
        _close(row["dsm"], dsm)
        assert row["dsm_ok"] == (abs(dsm) <= 0.1)
    # group DSMs weighted by size sum to the DSM of all essays, which is 0
    _close(np.sum(report["dsm"][:-1] * report["n"][:-1]), 0.0)


def test_group_qwk_uses_the_scale_of_all_essays():
    # Group b's human scores are 2-3 only; its predictions of 4.2 would be clipped
    # to 3 on its own range but stay 4 on the scale 1-4 of all essays.
    y = [1, 2, 3, 4, 2, 3, 2, 3]
    pred = [1, 2, 3, 4, 2, 4.2, 2, 4.2]
    groups = ["a"] * 4 + ["b"] * 4
    report = group_agreement_report(y, pred, groups=groups)
    _close(report.loc["b", "qwk"], qwk(y[4:], pred[4:], labels=[1, 2, 3, 4]))
    assert report.loc["b", "qwk"] < qwk(y[4:], pred[4:])


def test_group_with_one_essay_warns_and_gives_nan():
    y, pred = [1, 2, 3, 4, 2], [1.2, 2.1, 2.8, 3.9, 2.5]
    with pytest.warns(UndefinedMetricWarning, match=r"'z' have fewer than 2 essays"):
        report = group_agreement_report(y, pred, groups=["a"] * 4 + ["z"])
    row = report.loc["z"]
    assert row["n"] == 1 and row["human_mean"] == 2 and row["machine_mean"] == 2.5
    assert row[["human_sd", "machine_sd", "qwk", "smd", "dsm"]].isna().all()
    assert not row[["qwk_ok", "smd_ok", "dsm_ok"]].any()


def test_group_table_options():
    y, pred = [1, 2, 3, 4, 2, 3], [1.1, 2.2, 2.9, 3.6, 2.4, 3.3]
    groups = [2, 1, 2, 1, 2, 1]
    report = group_agreement_report(y, pred, groups=groups, include_all=False)
    assert list(report.index) == [1, 2] and report.index.name == "group"
    assert list(report.columns) == [
        "n", "human_mean", "human_sd", "machine_mean", "machine_sd", "qwk", "smd",
        "dsm", "qwk_ok", "smd_ok", "dsm_ok",
    ]  # fmt: skip
    strict = group_agreement_report(y, pred, groups=groups, thresholds={"qwk": 1.01})
    assert not strict["qwk_ok"].any()
    named_all = ["all", "b", "all", "b", "all", "b"]
    report = group_agreement_report(y, pred, groups=named_all, include_all=False)
    assert list(report.index) == ["all", "b"]


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(groups=["all", "b"] * 3), ValueError, "labelled 'all'"),
        (dict(groups=["a", "b"] * 3, thresholds={"kappa": 0.7}), ValueError,
         "unknown threshold"),
        (dict(groups=["a", "b"] * 3, smd_method="cohen"), ValueError,
         "smd_method='cohen' is not supported"),
        (dict(groups=["a", "b"] * 3, rounding="floor"), ValueError, "rounding must be"),
        (dict(groups=["a", "b"] * 3, include_all="yes"), TypeError, "include_all"),
        (dict(groups=["a", "b", np.nan, "a", "b", "a"]), ValueError,
         "missing at position 2"),
        (dict(groups=["a", 1] * 3), TypeError, "cannot be compared"),
    ],
)  # fmt: skip
def test_group_table_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        group_agreement_report([1, 2, 3, 4, 2, 3], [1, 2, 3, 4, 2, 3], **kwargs)


def test_group_table_non_integer_human_scores_need_rounding_none():
    with pytest.raises(ValueError, match="non-integer scores"):
        group_agreement_report([1.5, 2, 3, 4], [1, 2, 3, 4], groups=["a", "b"] * 2)
    report = group_agreement_report([1.5, 2, 3, 4], [1, 2, 3, 4], groups=["a", "b"] * 2,
                                    rounding=None)  # fmt: skip
    assert report.shape[0] == 3


# ------------------------------------------------------------ pairs


def naive_group_counts(d, y, codes, normalize="minmax", L=1.0):
    """The paper's recipe on condensed distances, pairs classified in a loop."""
    o = pdist(np.asarray(y, dtype=float)[:, None])
    if normalize == "minmax":
        d = (d - d.min()) / (d.max() - d.min()) if d.max() > d.min() else d * 0
        o = (o - o.min()) / (o.max() - o.min()) if o.max() > o.min() else o * 0
    elif normalize == "max":
        d, o = d / d.max(), (o / o.max() if o.max() > 0 else o)
    ok = o <= L * d
    n = len(y)
    n_groups = int(codes.max()) + 1
    within = np.zeros((n_groups, 2), dtype=int)  # satisfied, pairs
    cross = [0, 0]
    k = 0
    for i in range(n):
        for j in range(i + 1, n):
            if codes[i] == codes[j]:
                within[codes[i]] += (int(ok[k]), 1)
            else:
                cross[0] += int(ok[k])
                cross[1] += 1
            k += 1
    return within, cross


def _check_against_naive(result, d, y, groups, normalize="minmax", L=1.0):
    _, codes = np.unique(groups, return_inverse=True)
    within, cross = naive_group_counts(d, y, codes, normalize, L)
    assert list(result.group_n_satisfied) == list(within[:, 0])
    assert list(result.group_n_pairs) == list(within[:, 1])
    assert (result.n_satisfied_cross, result.n_pairs_cross) == tuple(cross)
    assert result.n_satisfied_within == within[:, 0].sum()


def _pair_inputs():
    rng = np.random.default_rng(11)
    n = 60
    dense = rng.normal(size=(n, 12))
    scores = rng.integers(0, 6, size=n)
    groups = rng.choice(["x", "y", "z"], size=n)
    small_int = rng.integers(0, 4, size=(n, 5)).astype(float)
    return dense, scores, groups, small_int


DENSE, SCORES, GROUPS, SMALL_INT = _pair_inputs()


@pytest.mark.parametrize("normalize, L", [("minmax", 1.0), ("minmax", 0.6), ("max", 1.5),
                                          (None, 2.0)])  # fmt: skip
def test_pair_counts_equal_naive_loop(normalize, L):
    d = pdist(DENSE, "cosine")
    # precomputed pdist: the same distances bit for bit, every count exact
    result = group_lipschitz_fraction(d, SCORES, groups=GROUPS, metric="precomputed",
                                      normalize=normalize, lipschitz_constant=L,
                                      block_size=7)  # fmt: skip
    _check_against_naive(result, d, SCORES, GROUPS, normalize, L)
    # cosine computed by the engine: no exact ties in Gaussian data, pdist agrees
    result = group_lipschitz_fraction(DENSE, SCORES, groups=GROUPS, normalize=normalize,
                                      lipschitz_constant=L)  # fmt: skip
    _check_against_naive(result, d, SCORES, GROUPS, normalize, L)
    # integer features under the cityblock metric: exact distances, many ties
    d = pdist(SMALL_INT, "cityblock")
    result = group_lipschitz_fraction(SMALL_INT, SCORES, groups=GROUPS, metric="cityblock",
                                      normalize=normalize, lipschitz_constant=L,
                                      block_size=16)  # fmt: skip
    _check_against_naive(result, d, SCORES, GROUPS, normalize, L)


def _inputs_for_consistency():
    tfidf = sp.random(60, 300, density=0.05, random_state=2, format="csr")
    return {
        "dense-cosine": (DENSE, {}),
        "sparse-cosine": (tfidf, {}),
        "euclidean": (DENSE, {"metric": "euclidean"}),
        "precomputed-square": (
            squareform(pdist(SMALL_INT, "cityblock")),
            {"metric": "precomputed"},
        ),  # fmt: skip
        "max": (DENSE, {"normalize": "max", "lipschitz_constant": 0.8}),
    }


CONSISTENCY = _inputs_for_consistency()


@pytest.mark.parametrize("name", sorted(CONSISTENCY))
def test_within_and_cross_add_up_to_lipschitz_fraction(name):
    X, options = CONSISTENCY[name]
    result = group_lipschitz_fraction(X, SCORES, groups=GROUPS, **options)
    overall = lipschitz_fraction(X, SCORES, return_counts=True, **options)
    n = SCORES.shape[0]
    assert (
        result.n_pairs_within + result.n_pairs_cross == result.n_pairs == n * (n - 1) // 2
    )
    assert result.n_satisfied_within + result.n_satisfied_cross == overall.n_satisfied
    assert result.overall == lipschitz_fraction(X, SCORES, **options)
    combined = (result.within * result.n_pairs_within
                + result.cross * result.n_pairs_cross) / result.n_pairs  # fmt: skip
    assert combined == pytest.approx(result.overall, rel=1e-15, abs=0)
    assert result.group_n_satisfied.sum() == result.n_satisfied_within
    assert result.group_n_pairs.sum() == result.n_pairs_within
    sizes = np.array([np.sum(GROUPS == g) for g in ("x", "y", "z")])
    assert list(result.group_n_pairs) == list(sizes * (sizes - 1) // 2)
    assert result.distance_range == overall.distance_range
    assert result.outcome_range == overall.outcome_range


@pytest.fixture
def no_cache(monkeypatch):
    """Large-problem path: no block caches, many chunks, float32 screening."""
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_engine, "_SCREEN_CACHE_BYTES", 0)
    monkeypatch.setattr(_blocks, "_TASK_PAIRS", 3000)


@pytest.mark.parametrize("normalize, L", [("minmax", 1.0), ("max", 2.0), (None, 3.0)])
@pytest.mark.parametrize("features", ["gauss", "small-int"])
def test_screened_path_equals_lipschitz_fraction(no_cache, normalize, L, features):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 24)) if features == "gauss" else (
        rng.integers(0, 3, size=(150, 4)).astype(float))  # fmt: skip
    X[9] = 0.0  # a zero row
    y = rng.integers(0, 7, size=150)
    groups = rng.choice([1, 2, 3, 4], size=150)
    assert _engine.PairwiseEngine(X, block_size=37).screenable
    options = dict(normalize=normalize, lipschitz_constant=L, block_size=37)
    got = group_lipschitz_fraction(X, y, groups=groups, **options)
    ref = lipschitz_fraction(X, y, return_counts=True, **options)
    assert got.n_satisfied == ref.n_satisfied and got.n_pairs == ref.n_pairs
    # the engine's exact pair distances through the naive loop
    engine = _engine.PairwiseEngine(X)
    i, j = _types.condensed_to_pairs(np.arange(engine.n_pairs), 150)
    _check_against_naive(got, engine.paired_distances(i, j), y, groups, normalize, L)


@pytest.mark.parametrize("candidates", [0, 10**9])
def test_screening_gives_up_exactly_when_lipschitz_fraction_does(monkeypatch, candidates):
    # only the screened range pass gives up (too many candidates for an
    # extreme); the counts settle their undecided pairs block by block
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_range, "_SCREEN_CANDIDATES", candidates)
    rng = np.random.default_rng(8)
    X = rng.integers(0, 3, size=(120, 3)).astype(float)  # many exact ties
    y = rng.integers(0, 3, size=120)
    groups = rng.choice(["a", "b"], size=120)
    calls = {"fraction": 0, "group": 0}

    class Spy(_counters._LipschitzCounter):
        def __init__(self, *args):
            calls["fraction"] += 1
            super().__init__(*args)

    plain = G._plain_group_counts

    def spy_plain(*args):
        calls["group"] += 1
        return plain(*args)

    monkeypatch.setattr(_individual, "_LipschitzCounter", Spy)
    monkeypatch.setattr(G, "_plain_group_counts", spy_plain)
    ref = lipschitz_fraction(X, y, return_counts=True, block_size=30)
    got = group_lipschitz_fraction(X, y, groups=groups, block_size=30)
    assert got.n_satisfied == ref.n_satisfied
    assert calls["fraction"] == calls["group"] == (1 if candidates == 0 else 0)


def test_pairs_identical_for_n_jobs_and_block_size(no_cache):
    ref = group_lipschitz_fraction(DENSE, SCORES, groups=GROUPS)
    for n_jobs, block_size in [(1, 5), (2, 7), (2, 64)]:
        got = group_lipschitz_fraction(DENSE, SCORES, groups=GROUPS, n_jobs=n_jobs,
                                       block_size=block_size)  # fmt: skip
        assert list(got.group_n_satisfied) == list(ref.group_n_satisfied)
        assert got.n_satisfied_cross == ref.n_satisfied_cross


small_problems = st.integers(3, 12).flatmap(
    lambda n: st.tuples(
        st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3), min_size=n,
                 max_size=n),
        st.lists(st.integers(0, 4), min_size=n, max_size=n),
        st.lists(st.sampled_from(["u", "v", "w"]), min_size=n, max_size=n),
        st.permutations(range(n)),
    )
)  # fmt: skip


def _summary(result):
    return (result.n_satisfied_within, result.n_pairs_within, result.n_satisfied_cross,
            result.n_pairs_cross)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(problem=small_problems)
def test_pairs_invariant_to_relabelling_and_row_order(problem):
    X, y, groups, order = problem
    X, y, groups = np.array(X, dtype=float), np.array(y), np.array(groups)
    options = dict(metric="cityblock")  # exact on integers: equal pairs, equal sides
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        ref = group_lipschitz_fraction(X, y, groups=groups, **options)
        rename = {"u": 7, "v": -1, "w": 3}
        relabelled = group_lipschitz_fraction(
            X, y, groups=[rename[g] for g in groups], **options
        )
        order = np.array(order)
        permuted = group_lipschitz_fraction(X[order], y[order], groups=groups[order],
                                            **options)  # fmt: skip
    per_group = dict(zip(ref.group, zip(ref.group_n_satisfied, ref.group_n_pairs)))
    assert _summary(relabelled) == _summary(ref) == _summary(permuted)
    assert dict(zip(permuted.group, zip(permuted.group_n_satisfied,
                                        permuted.group_n_pairs))) == per_group  # fmt: skip
    assert {rename[g]: v for g, v in per_group.items()} == dict(
        zip(relabelled.group, zip(relabelled.group_n_satisfied, relabelled.group_n_pairs))
    )


@settings(max_examples=20, deadline=None)
@given(problem=small_problems)
def test_one_group_has_no_cross_pairs(problem):
    X, y, _, _ = problem
    X = np.array(X, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # normalisation only
        overall = lipschitz_fraction(X, y, metric="cityblock")
    with pytest.warns(UndefinedMetricWarning, match="one group"):
        result = group_lipschitz_fraction(X, y, groups=["g"] * len(y), metric="cityblock")
    assert np.isnan(result.cross) and result.n_pairs_cross == 0
    assert result.within == result.overall == overall
    assert list(result.group_fraction) == [overall]


def test_single_essay_groups_warn_and_give_nan():
    with pytest.warns(UndefinedMetricWarning, match=r"'z' have fewer than 2 essays"):
        result = group_lipschitz_fraction(DENSE[:7], SCORES[:7],
                                          groups=["x", "y"] * 3 + ["z"])  # fmt: skip
    frame = result.to_frame()
    assert np.isnan(frame.loc["z", "fraction"]) and frame.loc["z", "n_pairs"] == 0
    assert list(frame.columns) == ["n_essays", "n_pairs", "n_satisfied", "fraction"]
    with pytest.warns(UndefinedMetricWarning, match="every group has a single essay"):
        result = group_lipschitz_fraction(DENSE[:4], SCORES[:4], groups=[1, 2, 3, 4])
    assert np.isnan(result.within) and result.cross == result.overall


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(groups=["a", "b"] * 2), ValueError, "has 4 labels but there are 6"),
        (dict(groups=["a", None, "b", "a", "b", "a"]), ValueError,
         "missing at position 1"),
        (dict(groups=["a", "b"] * 3, normalize="z"), ValueError, "normalize='z'"),
        (dict(groups=["a", "b"] * 3, lipschitz_constant=0), ValueError,
         "must be positive"),
        (dict(groups="ab"), TypeError, "a single str"),
    ],
)  # fmt: skip
def test_pairs_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        group_lipschitz_fraction(DENSE[:6], SCORES[:6], **kwargs)


# ------------------------------------------------------------ check_groups


def test_check_groups_accepts_common_containers():
    series = pd.Series(["b", "a", "b"], index=[10, 11, 12])
    assert check_groups(series).tolist() == ["b", "a", "b"]
    assert check_groups(pd.DataFrame({"g": [1, 2]})).tolist() == [1, 2]
    assert check_groups(np.array([[1], [2]])).tolist() == [1, 2]
    assert check_groups(pd.Series(["x", "y"], dtype="category")).tolist() == ["x", "y"]
    assert check_groups([1, 2.5]).dtype == np.float64
    assert check_groups([(1, "a"), (1, "b")]).shape == (2,)  # tuples stay labels


@pytest.mark.parametrize(
    "groups, kwargs, exc, match",
    [
        (None, {}, TypeError, "groups is None"),
        ("abc", {}, TypeError, "a single str"),
        (np.zeros((2, 2)), {}, ValueError, r"must be 1-D.*shape \(2, 2\)"),
        (pd.DataFrame({"a": [1], "b": [2]}), {}, ValueError, "2 columns"),
        (sp.csr_matrix([[1, 2]]), {}, TypeError, "sparse"),
        (pd.Series(["a", None], index=[5, 6]), {}, ValueError,
         r"missing at position 1 \(index label 6\)"),
        (pd.Series(["a", pd.NA], dtype="string"), {}, ValueError, "missing at position 1"),
        ([1.0, np.nan, np.nan], {}, ValueError, "2 essay\\(s\\) have no group label"),
        ([pd.NaT, "a"], {}, ValueError, "missing at position 0"),
        ([1, "a"], {}, TypeError, r"1 \(int\) at position 0 and 'a' \(str\)"),
        (["a", "b"], {"n_samples": 3}, ValueError, "has 2 labels but there are 3"),
        (["a", "a"], {"min_groups": 2}, ValueError, r"1 distinct group\(s\) \('a'\)"),
    ],
)  # fmt: skip
def test_check_groups_errors(groups, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        check_groups(groups, **kwargs)
