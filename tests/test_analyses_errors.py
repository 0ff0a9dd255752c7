"""The error section (issue 33, item 2): where each system's errors come from.

Its statistics are checked against independent computations (scipy's
pearsonr and its Fisher-z interval, a leave-one-out refit for HC3, pandas'
qcut), its input checks against bad covariate columns (Python and the
command, exit 2), and the whole section on the deliberate length flaw of
issue 33 on real ASAP prompt 7 essays (slow).
"""

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.report import AuditInputError
from sklearn_fairaes.report._study import Settings, Study, System
from sklearn_fairaes.report.analyses._errors import (
    ANALYSIS,
    error_bins,
    error_correlation,
    hc3_regression,
)

# -- the statistics against independent computations ----------------------------


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_correlation_matches_scipy(level):
    rng = np.random.default_rng(3)
    x = rng.gamma(3.0, 50.0, size=60)
    e = -0.01 * x + rng.normal(size=60)
    out = error_correlation(e, x, level)
    ref = stats.pearsonr(x, e)
    ci = ref.confidence_interval(confidence_level=level)
    assert out["pearson_r"] == pytest.approx(ref.statistic, abs=1e-12)
    assert out["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert out["r_ci_low"] == pytest.approx(ci.low, abs=1e-12)
    assert out["r_ci_high"] == pytest.approx(ci.high, abs=1e-12)
    assert out["spearman_rho"] == pytest.approx(stats.spearmanr(x, e).statistic, abs=1e-12)
    # slope: least squares of the error on the variable in SD units
    z = (x - x.mean()) / x.std(ddof=1)
    assert out["slope"] == pytest.approx(np.polyfit(z, e, 1)[0], abs=1e-12)


def test_correlation_of_a_constant_error_or_variable_is_undefined_not_a_crash():
    x = np.arange(10.0)
    zero = error_correlation(np.zeros(10), x)
    assert np.isnan(zero["pearson_r"]) and np.isnan(zero["r_ci_low"])
    assert zero["slope"] == 0.0
    flat = error_correlation(np.arange(10.0) % 3, np.full(10, 7.0))
    assert all(np.isnan(v) for v in flat.values())
    # a perfect correlation: p = 0 and a degenerate interval, no warning
    perfect = error_correlation(2 * x, x)
    assert perfect["pearson_r"] == pytest.approx(1.0)
    assert perfect["p_value"] < 1e-50 and perfect["r_ci_low"] > 0.999


def test_hc3_regression_matches_leave_one_out_refits():
    """HC3 is the sum of the squared coefficient changes when each essay is left out."""
    rng = np.random.default_rng(7)
    n = 40
    X = rng.normal(size=(n, 3))
    e = 0.5 - 0.8 * X[:, 0] + 0.2 * X[:, 2] + rng.normal(size=n) * (1 + np.abs(X[:, 1]))
    fit = hc3_regression(e, X, 0.9)
    design = np.column_stack([np.ones(n), X])
    beta = np.linalg.lstsq(design, e, rcond=None)[0]
    changes = np.array(
        [
            np.linalg.lstsq(np.delete(design, i, 0), np.delete(e, i), rcond=None)[0] - beta
            for i in range(n)
        ]
    )
    se = np.sqrt((changes**2).sum(axis=0))
    np.testing.assert_allclose(fit["coefficient"], beta, atol=1e-12)
    np.testing.assert_allclose(fit["se_hc3"], se, rtol=1e-9)
    t = stats.t.ppf(0.95, n - 4)
    np.testing.assert_allclose(fit["ci_low"], beta - t * se, rtol=1e-9)
    np.testing.assert_allclose(fit["p_value"], 2 * stats.t.sf(np.abs(beta / se), n - 4))
    resid = e - design @ beta
    assert fit["r_squared"] == pytest.approx(
        1 - resid @ resid / ((e - e.mean()) ** 2).sum()
    )


def test_hc3_regression_refuses_a_design_without_degrees_of_freedom():
    X = np.array([[1.0], [2.0]])
    assert hc3_regression(np.array([0.0, 1.0]), X) is None
    duplicate = np.column_stack([np.arange(6.0), np.arange(6.0)])
    assert hc3_regression(np.arange(6.0) % 2, duplicate) is None


@pytest.mark.parametrize("tied", [False, True])
def test_bins_match_pandas_qcut(tied):
    rng = np.random.default_rng(11)
    x = rng.integers(0, 3, size=50).astype(float) if tied else rng.normal(size=50)
    e = rng.normal(size=50) + (x < np.median(x))
    got = pd.DataFrame(error_bins(e, x, 5, 0.95))
    codes = pd.qcut(x, 5, labels=False, duplicates="drop")
    ref = pd.Series(e).groupby(codes).agg(["mean", "count", "sem"])
    assert len(got) == len(ref) and (len(got) < 5) == tied
    np.testing.assert_allclose(got["mean_error"], ref["mean"])
    np.testing.assert_array_equal(got["n"], ref["count"])
    low, high = stats.t.interval(0.95, ref["count"] - 1, loc=ref["mean"], scale=ref["sem"])
    np.testing.assert_allclose(got["mean_error_ci_low"], low)
    np.testing.assert_allclose(got["mean_error_ci_high"], high)


def test_a_tiny_study_is_absent_with_a_reason():
    human = np.array([1.0, 2, 3])
    study = Study(prompt="all", prompt_text=None, essays=["a", "b", "c"], ids=np.arange(3),
                  rows=np.arange(1, 4), human=human, score_range=(0, 4),
                  score_range_source="declared", settings=Settings())  # fmt: skip
    study.systems["engine"] = System("engine", "given", {None: human + 1})
    study.covariates["words"] = np.array([10.0, 20, 30])
    assert "at least 4" in ANALYSIS.absent(study)


# -- the section in an audit -------------------------------------------------------


@pytest.fixture(scope="module")
def flawed_audit():
    """Two prompts of demo essays; an engine that adds 3 points to short essays."""
    df = sf.load_demo_essays().iloc[:48].copy()
    df["prompt"] = np.repeat(["a", "b"], 24)
    df["words"] = df["essay"].str.split().str.len()
    df["constant"] = 1.0
    short = df.groupby("prompt")["words"].transform("median") > df["words"]
    df["flawed"] = np.clip(df["score"] + 3 * short, 0, 12)
    df["same"] = df["score"]
    result = sf.audit(
        df, text_col="essay", score_col="score", prompt_col="prompt",
        systems=["flawed", "same"], covariate_cols="words,constant", score_range=(0, 12),
        representations=["tfidf"], paraphrases="paraphrase", n_bootstrap=0,
        sections=["overview", "errors"], cache=False,
    )  # fmt: skip
    return df, result


def test_correlates_per_prompt_match_scipy(flawed_audit):
    df, result = flawed_audit
    corr = result.tables["error_correlates"]
    assert set(corr["prompt"]) == {"a", "b"}  # one set of rows per prompt, no pooling
    for p in ("a", "b"):
        d = df[df["prompt"] == p]
        row = corr[(corr["prompt"] == p) & (corr["system"] == "flawed")
                   & (corr["variable"] == "words")].iloc[0]  # fmt: skip
        ref = stats.pearsonr(d["words"], d["flawed"] - d["score"])
        assert row["source"] == "covariate" and row["n"] == 24
        assert row["pearson_r"] == pytest.approx(ref.statistic)
        assert row["r_ci_low"] == pytest.approx(ref.confidence_interval().low)
        # ranked by |r|: the covariate of the flaw comes before the unrelated ones
        mine = corr[(corr["prompt"] == p) & (corr["system"] == "flawed")]
        assert list(mine["pearson_r"].abs().dropna()) == sorted(
            mine["pearson_r"].abs().dropna(), reverse=True
        )
        assert mine["pearson_r"].isna().to_numpy()[-1]  # the constant covariate last


def test_identical_system_and_constant_covariate_say_so(flawed_audit):
    _, result = flawed_audit
    corr = result.tables["error_correlates"]
    same = corr[corr["system"] == "same"]
    assert same["pearson_r"].isna().all()
    # the error does not move with any variable; a constant variable has no SD
    assert (same["slope"] == 0).sum() == len(same) - 2
    assert same.loc[same["variable"] == "constant", "slope"].isna().all()
    reg = result.tables["error_regression"]
    assert "same" not in set(reg["system"]) and "constant" not in set(reg["term"])
    bins = result.tables["error_bins"]
    assert (bins.loc[bins["system"] == "same", "mean_error"] == 0).all()
    html = result.to_html()
    assert "Where the errors come from" in html
    assert "same gives every essay its human score: its error is 0 throughout." in html
    assert re.search(r"flawed: the error falls by [\d.]+ points per SD of ", html)
    assert any("constant took one value for every essay" in n for n in result.meta["notes"])


def test_regression_in_the_audit_matches_a_hand_fit(flawed_audit):
    df, result = flawed_audit
    reg = result.tables["error_regression"]
    rows = reg[(reg["prompt"] == "a") & (reg["system"] == "flawed")]
    assert rows["term"].iloc[0] == "intercept"
    d = df[df["prompt"] == "a"]
    e = (d["flawed"] - d["score"]).to_numpy()
    assert rows["coefficient"].iloc[0] == pytest.approx(e.mean())  # standardised terms
    r2 = rows["r_squared"].iloc[0]
    assert 0 < r2 <= 1 and (rows["r_squared"] == r2).all()


# -- bad covariates: refused before any work -------------------------------------


@pytest.fixture
def no_work(monkeypatch):
    import sklearn_fairaes.report._build as build

    def forbidden(*args, **kwargs):
        raise AssertionError("the audit started working although a covariate was bad")

    monkeypatch.setattr(build, "fit_representations", forbidden)


def _demo():
    df = sf.load_demo_essays().iloc[:20].copy()
    df["words"] = df["essay"].str.split().str.len().astype(object)
    return df


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        (lambda d: d.assign(**{"words": d["words"].where(d.index != 4, "many")}),
         ["covariate column 'words' holds text", "data row 5: 'many'"]),
        (lambda d: d.assign(**{"words": d["words"].where(d.index != 2, np.nan)}),
         ["covariate column 'words' is empty", "data row 3"]),
        (lambda d: d.drop(columns="words"), ["covariate column 'words' not found"]),
    ],
)  # fmt: skip
def test_bad_covariate_is_refused_naming_column_and_row(no_work, change, fragments):
    with pytest.raises(AuditInputError, match="covariate column 'words'") as info:
        sf.audit(change(_demo()), text_col="essay", score_col="score",
                 systems={"engine": _demo()["score"].to_numpy()}, covariate_cols=["words"],
                 representations=["tfidf"], cache=False)  # fmt: skip
    for fragment in fragments:
        assert fragment in str(info.value)


def test_the_command_exits_2_on_a_text_covariate(tmp_path, capsys):
    df = _demo()
    df.loc[[3, 7], "words"] = ["ten", "n/a"]
    path = tmp_path / "essays.csv"
    df[["essay", "score", "words"]].to_csv(path, index=False)
    code = main(["audit", str(path), "--text-col", "essay", "--score-col", "score",
                 "--covariate-cols", "words", "--out", str(tmp_path / "out"), "--quiet"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert "covariate column 'words' holds text in 2 row(s)" in err
    assert "data row 4: 'ten'; data row 8: 'n/a'" in err
