"""Half-point and continuous human scores (score_step), the SMD option and the confusion table.

On real data: ELLIPSE's Overall score runs from 1.0 to 5.0 in half points
(averages of two ratings); no x2 workaround. Every figure is compared with an
independent computation (scikit-learn's kappa on the doubled scores, pandas'
crosstab, the continuous-QWK formula).
"""

import numpy as np
import pandas as pd
import pytest
from conftest import DATA_DIR, require_file
from sklearn.metrics import cohen_kappa_score

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.metrics._bootstrap import replicate_weights
from sklearn_fairaes.report import AuditInputError

ELLIPSE = DATA_DIR / "ellipse" / "ELLIPSE_Final_github_test.csv.gz"
RUN = {"representations": ["tfidf"], "cache": False, "sections": ["agreement"]}


@pytest.fixture(scope="module")
def ellipse():
    df = pd.read_csv(require_file(ELLIPSE), dtype={"text_id_kaggle": str})
    df = df.sample(150, random_state=1).reset_index(drop=True)
    rng = np.random.default_rng(7)
    # an engine with real-valued scores (given scores must lie on the scale)
    df["engine"] = np.clip(df["Overall"] + rng.normal(0.1, 0.45, len(df)), 1, 5)
    return df


@pytest.fixture(scope="module")
def demo():
    return sf.load_demo_essays()


def _audit(df, **kwargs):
    return sf.audit(df, text_col="full_text", score_col="Overall", systems=["engine"],
                    score_range=(1, 5), **{"n_bootstrap": 0, **RUN, **kwargs})  # fmt: skip


def test_half_points_are_score_points_on_real_ellipse_scores(ellipse):
    result = _audit(ellipse, score_step=0.5)
    row = result.tables["agreement"].iloc[0]
    human = ellipse["Overall"].to_numpy()
    engine = ellipse["engine"].to_numpy()
    # independent: the 9 points 1.0..5.0 as integers 2..10, the engine trimmed to
    # +-0.4998 of a half point past the ends and rounded to the nearest half point
    h2 = np.rint(human * 2).astype(int)
    e2 = np.rint(np.clip(engine * 2, 2 - 0.4998, 10 + 0.4998)).astype(int)
    labels = np.arange(2, 11)
    assert row["qwk"] == pytest.approx(
        cohen_kappa_score(h2, e2, labels=labels, weights="quadratic"), abs=1e-12
    )
    assert row["exact_agreement"] == pytest.approx(np.mean(h2 == e2))
    assert row["adjacent_agreement"] == pytest.approx(np.mean(np.abs(h2 - e2) <= 1))
    assert row["n_outside_scale"] == int(((engine < 1) | (engine > 5)).sum())
    trimmed = np.clip(engine, 1 - 0.4998 / 2, 5 + 0.4998 / 2)
    smd = (trimmed.mean() - human.mean()) / human.std(ddof=1)
    assert row["smd"] == pytest.approx(smd, abs=1e-12)  # scale-free: same on points
    # the confusion table is the crosstab of the two, in score units
    conf = result.tables["confusion"]
    expected = pd.crosstab(h2 / 2, e2 / 2).stack()
    expected = expected[expected > 0]
    got = conf.set_index(["human_score", "system_score"])["count"]
    assert got.to_dict() == {k: int(v) for k, v in expected.items()}
    assert conf["count"].sum() == len(ellipse)
    html = result.to_html()
    assert "QWK with every step of 0.5 as one score point" in html
    assert "<details><summary>Confusion matrices" in html
    assert result.meta["score_step"] == 0.5


def test_continuous_scores_use_rsmtools_continuous_qwk(ellipse):
    result = _audit(ellipse, score_step="continuous")
    row = result.tables["agreement"].iloc[0]
    h = ellipse["Overall"].to_numpy()
    m = np.clip(ellipse["engine"].to_numpy(), 1 - 0.4998, 5 + 0.4998)
    # Haberman's formula with population moments, as RSMTool's quadratic_weighted_kappa
    kappa = (
        2 * np.cov(h, m, ddof=0)[0, 1] / (h.var() + m.var() + (h.mean() - m.mean()) ** 2)
    )
    assert row["qwk"] == pytest.approx(kappa, abs=1e-12)
    assert np.isnan(row["exact_agreement"]) and np.isnan(row["qwk_truncated"])
    assert result.tables["confusion"].empty
    assert "continuous QWK (RSMTool" in result.to_html()


def test_hand_worked_half_point_qwk():
    # six essays on 1-3 in half points (5 points); engine 1.74 -> 1.5, 2.9 -> 3.0
    words = [f"the cat sat on the mat and the dog {w}" for w in "abcdef"]
    df = pd.DataFrame({"essay": words, "score": [1.0, 1.5, 2.0, 2.5, 3.0, 3.0],
                       "engine": [1.0, 1.74, 2.0, 2.0, 2.9, 2.6]})  # fmt: skip
    result = sf.audit(df, text_col="essay", score_col="score", systems=["engine"],
                      score_range=(1, 3), score_step=0.5, n_bootstrap=0, **RUN)  # fmt: skip
    # positions: human 0 1 2 3 4 4, engine 0 1 2 2 4 3 (2.6 -> 2.5)
    # kappa = 2 cov / (var h + var m + diff^2) on positions, population moments:
    # mean h = 14/6, mean m = 12/6; by hand 1 - sum (h-m)^2 / sum_ij (h_i-m_j)^2 / n
    h = np.array([0, 1, 2, 3, 4, 4.0])
    m = np.array([0, 1, 2, 2, 4, 3.0])
    observed = np.sum((h - m) ** 2) / 6  # 2/6
    expected = np.mean((h[:, None] - m[None, :]) ** 2)
    assert result.tables["agreement"].iloc[0]["qwk"] == pytest.approx(
        1 - observed / expected
    )
    assert observed == pytest.approx(2 / 6)


def test_smd_method_option_and_the_report_says_which(ellipse):
    unpooled = _audit(ellipse, score_step=0.5).tables["agreement"].iloc[0]
    pooled_result = _audit(
        ellipse, score_step=0.5, smd_method="pooled", sections=["overview", "agreement"]
    )
    pooled = pooled_result.tables["agreement"].iloc[0]
    h = ellipse["Overall"].to_numpy()
    m = np.clip(ellipse["engine"].to_numpy(), 1 - 0.4998 / 2, 5 + 0.4998 / 2)
    diff = m.mean() - h.mean()
    assert unpooled["smd"] == pytest.approx(diff / h.std(ddof=1), abs=1e-12)
    assert pooled["smd"] == pytest.approx(
        diff / np.sqrt((h.var(ddof=1) + m.var(ddof=1)) / 2), abs=1e-12
    )
    html = pooled_result.to_html()
    assert "smd_method=&#39;pooled&#39;" in html or "smd_method='pooled'" in html
    assert "<dt>SMD denominator</dt>" in html
    assert pooled_result.meta["smd_method"] == "pooled"


def test_prmse_column_with_two_raters_on_the_resolved_scale(demo):
    # the demo's score is the two raters' sum: each rating counts double
    df = demo.iloc[:60].reset_index(drop=True)
    rng = np.random.default_rng(2)
    df = df.assign(engine=np.clip(df["score"] + rng.normal(0, 1.0, len(df)), 0, 12))
    result = sf.audit(df, text_col="essay", score_col="score", systems=["engine"],
                      rater_cols=["rater1", "rater2"], score_range=(0, 12),
                      n_bootstrap=40, **RUN)  # fmt: skip
    row = result.tables["agreement"].iloc[0]
    ratings = 2 * df[["rater1", "rater2"]].to_numpy(float)
    if not np.allclose(df["score"], df["rater1"] + df["rater2"]):
        ratings = ratings / 2
    engine = np.clip(df["engine"].to_numpy(), -0.4998, 12.4998)
    assert row["prmse"] == pytest.approx(sf.prmse(ratings, engine), abs=1e-12)
    assert row["prmse_ci_low"] <= row["prmse"] <= row["prmse_ci_high"]
    reps = result.replicates[("all", "agreement", "", "engine", "prmse")]
    assert reps.shape == (40,)
    cols = list(result.tables["agreement"].columns)
    assert cols[cols.index("prmse") + 1 : cols.index("prmse") + 3] == [
        "prmse_ci_low", "prmse_ci_high"]  # fmt: skip
    assert "PRMSE (Loukina et al. 2020" in result.to_html()


@pytest.mark.parametrize(
    ("change", "kwargs", "match"),
    [
        (None, {"score_step": 0.3},
         r"score_step=0.3 does not divide the score scale \(1 to 5, declared\)"),
        (lambda d: d.assign(Overall=[1.25] + list(d["Overall"].iloc[1:])),
         {"score_step": 0.5},
         r"score column 'Overall' holds a score off the grid of score_step=0.5 "
         r"\(data row 1: 1.25; 1 such row\(s\)\)"),
        (None, {"score_step": "half"}, r"score_step \(--score-step\) must be a positive"),
        (None, {"score_step": -0.5}, r"score_step \(--score-step\) must be a positive"),
        (None, {}, r"score column 'Overall' holds non-integer scores .*score_step=0.5"),
    ],
)  # fmt: skip
def test_bad_score_step_is_refused_before_any_work(
    ellipse, monkeypatch, change, kwargs, match
):
    from sklearn_fairaes.report import _study_tasks as audit_module

    def no_work(*args, **kw):
        raise AssertionError("the studies were built before the input was checked")

    monkeypatch.setattr(audit_module, "build_studies", no_work)
    df = ellipse if change is None else change(ellipse)
    with pytest.raises(AuditInputError, match=match):
        _audit(df, **kwargs)


def test_cli_score_step_exit_codes(ellipse, tmp_path, capsys):
    path = tmp_path / "ellipse.csv"
    ellipse.iloc[:30][["full_text", "Overall", "engine"]].to_csv(path, index=False)
    args = ["audit", str(path), "--text-col", "full_text", "--score-col", "Overall",
            "--system-cols", "engine", "--score-range", "1,5", "--representations",
            "tfidf", "--no-cache", "--quiet", "--bootstrap", "0",
            "--sections", "agreement"]  # fmt: skip
    code = main([*args, "--score-step", "0.75", "--out", str(tmp_path / "bad")])
    assert code == 2
    assert "score_step=0.75 does not divide the score scale" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    code = main([*args, "--score-step", "0.5", "--out", str(tmp_path / "ok")])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "ok" / "report.html").exists()


def test_half_points_reach_the_group_view(ellipse):
    """The group view's QWK counts half points as score points, as the agreement table."""
    result = _audit(ellipse, score_step=0.5, group_col="gender", sections=["groups"])
    table = result.tables["group_agreement"]
    human = ellipse["Overall"].to_numpy()
    e2 = np.rint(np.clip(ellipse["engine"].to_numpy() * 2, 2 - 0.4998, 10 + 0.4998))
    for gender in ("Female", "Male"):
        mask = (ellipse["gender"] == gender).to_numpy()
        row = table[table["group"] == gender].iloc[0]
        expected = cohen_kappa_score(
            np.rint(human[mask] * 2).astype(int), e2[mask].astype(int),
            labels=np.arange(2, 11), weights="quadratic",
        )  # fmt: skip
        assert row["qwk"] == pytest.approx(expected, abs=1e-12)
        # the audit's SMD (the human SD) on the half-point grid
        smd = (e2[mask].mean() / 2 - human[mask].mean()) / human[mask].std(ddof=1)
        assert row["smd"] == pytest.approx(smd, abs=1e-12)


def test_half_point_intervals_resample_the_essays(ellipse):
    """A QWK replicate is the kappa of the doubled scores of the resampled essays."""
    result = _audit(ellipse, score_step=0.5, n_bootstrap=20)
    row = result.tables["agreement"].iloc[0]
    reps = result.replicates[("all", "agreement", "", "engine", "qwk")]
    assert reps.shape == (20,)
    h2 = np.rint(ellipse["Overall"].to_numpy() * 2).astype(int)
    e2 = np.rint(np.clip(ellipse["engine"].to_numpy() * 2, 2 - 0.4998, 10 + 0.4998))
    w = replicate_weights(
        result.tables["predictions"]["id"].to_numpy(), 20, 0, stream="all"
    )
    for b in (0, 7):
        take = np.repeat(np.arange(len(h2)), w[b].astype(int))
        expected = cohen_kappa_score(
            h2[take], e2[take].astype(int), labels=np.arange(2, 11), weights="quadratic"
        )
        assert reps[b] == pytest.approx(expected, abs=1e-12)
    low, high = np.quantile(reps, [0.025, 0.975])
    assert (row["qwk_ci_low"], row["qwk_ci_high"]) == pytest.approx((low, high))
