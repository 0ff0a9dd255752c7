"""Several group columns, their intersections, quantile bins and the smallest
group tested (issue 33, item 6): hand-worked tables, pandas.qcut and groupby
as independent references, bad input refused before any work (exit 2), and a
run on real ELLIPSE essays with their demographics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.metrics import group_agreement_report
from sklearn_fairaes.metrics._bootstrap import bootstrap_interval
from sklearn_fairaes.metrics._group_bootstrap import group_agreement_replicates
from sklearn_fairaes.report import AuditInputError
from sklearn_fairaes.report._groupings import bin_labels, plan_groupings
from sklearn_fairaes.report._inputs import _Where
from sklearn_fairaes.report._study import Settings, Study, System
from sklearn_fairaes.report.analyses._groups import ANALYSIS, SCHEMA, view

ELLIPSE = "/work/shared/data/ellipse/ELLIPSE_Final_github_test.csv.gz"

# 8 essays: race a/b, gender F/M; the engine scores race a one point high
HUMAN = np.array([1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0])
ENGINE = np.array([2.0, 3.0, 4.0, 5.0, 1.0, 2.0, 4.0, 3.0])
RACE = np.array(list("aaaabbbb"), dtype=object)
GENDER = np.array(list("FMFMFMFM"), dtype=object)


def _hand_study(min_group_size=2, n_bootstrap=0, groupings=None):
    return Study(
        prompt="all", prompt_text=None, essays=[f"e{i}" for i in range(8)],
        ids=np.arange(1, 9), rows=np.arange(1, 9), human=HUMAN, score_range=(1, 5),
        score_range_source="declared",
        settings=Settings(min_group_size=min_group_size, n_bootstrap=n_bootstrap),
        groupings=groupings or {
            "race": RACE, "gender": GENDER,
            "race & gender": np.array([f"race={r} & gender={g}" for r, g in zip(RACE, GENDER)],
                                      dtype=object),
        },
        systems={"engine": System("engine", "given", {None: ENGINE})},
    )  # fmt: skip


def test_two_columns_and_their_intersection_by_hand():
    table = ANALYSIS.run(_hand_study()).tables["group_agreement"]
    assert list(table.columns) == list(SCHEMA["group_agreement"])
    assert list(dict.fromkeys(table["grouping"])) == ["race", "gender", "race & gender"]
    row = table.set_index(["grouping", "group"])
    # race a: machine = human + 1, both SDs sqrt(5/3): SMD = 1 / sqrt(5/3)
    assert row.loc[("race", "a"), "smd"] == pytest.approx(1 / np.sqrt(5 / 3))
    assert row.loc[("race", "a"), "machine_mean"] == pytest.approx(3.5)
    # race b: equal means, SMD 0
    assert row.loc[("race", "b"), "smd"] == pytest.approx(0.0)
    # gender F: human 1, 3, 1, 3 (mean 2), machine 2, 4, 1, 4 (mean 2.75); the
    # audit's default SMD divides by the human SD (RSMTool's unpooled)
    sd_h = np.std([1, 3, 1, 3], ddof=1)
    assert row.loc[("gender", "F"), "smd"] == pytest.approx(0.75 / sd_h)
    # intersection: race=a & gender=F is essays 0 and 2: human 1, 3; machine 2, 4
    cell = row.loc[("race & gender", "race=a & gender=F")]
    assert cell["n"] == 2 and cell["human_mean"] == 2 and cell["machine_mean"] == 3
    assert cell["smd"] == pytest.approx(1 / np.sqrt(2))
    # DSM of race a against all essays, standardised with the SDs of all 8
    mu_h, sd_all_h = HUMAN.mean(), HUMAN.std(ddof=1)
    mu_m, sd_all_m = ENGINE.mean(), ENGINE.std(ddof=1)
    assert row.loc[("race", "a"), "dsm"] == pytest.approx(
        (3.5 - mu_m) / sd_all_m - (2.5 - mu_h) / sd_all_h
    )
    assert table["tested"].all()


def test_small_groups_are_reported_not_tested():
    out = ANALYSIS.run(_hand_study(min_group_size=3))
    table = out.tables["group_agreement"].set_index(["grouping", "group"])
    cells = table.loc["race & gender"].drop(index="all")
    assert (cells["n"] == 2).all() and not cells["tested"].any()
    assert cells["smd_ok"].isna().all() and cells["qwk_ok"].isna().all()
    assert cells["human_mean"].notna().all()  # reported, never dropped
    assert set(out.tables["group_fairness"]["grouping"]) == {"race", "gender"}
    assert any("'race & gender'" in n and "no fairness regression" in n for n in out.notes)
    v = view(out.tables, {}, "all")
    assert [b["grouping"] for b in v["blocks"]] == ["race", "gender", "race & gender"]
    texts = [c.text for row in v["blocks"][2]["agreement"]["body"] for c, _ in row["cells"]]
    assert "too small to test" in texts


def test_bootstrap_intervals_of_group_smd_and_dsm():
    study = _hand_study(min_group_size=3, n_bootstrap=200)
    out = ANALYSIS.run(study)
    table = out.tables["group_agreement"].set_index(["grouping", "group"])
    W = study.bootstrap_weights()
    # replicate 0 recomputed independently: the report on the resampled essays
    rep = np.repeat(np.arange(8), W[0].astype(int))
    direct = group_agreement_report(HUMAN[rep], ENGINE[rep], groups=RACE[rep],
                                    rounding=None)  # fmt: skip
    key = ("group_agreement", "", "engine", "smd[race=a]")
    if (RACE[rep] == "a").sum() >= 2 and "a" in direct.index:
        assert out.replicates[key][0] == pytest.approx(direct.loc["a", "smd"])
    low, high = bootstrap_interval(out.replicates[key], 0.95)
    assert (table.loc[("race", "a"), "smd_ci_low"], table.loc[("race", "a"), "smd_ci_high"]) == (
        pytest.approx(low), pytest.approx(high))  # fmt: skip
    assert table.loc["race & gender"].drop(index="all")["smd_ci_low"].isna().all()


def test_replicates_equal_the_report_on_resampled_essays():
    rng = np.random.default_rng(1)
    h = rng.integers(1, 6, 60).astype(float)
    m = h + rng.normal(0, 0.8, 60)
    g = rng.choice(["x", "y", "z"], 60)
    names, codes = np.unique(g, return_inverse=True)
    W = rng.multinomial(60, np.ones(60) / 60, size=5).astype(float)
    for method in ("pooled", "unpooled", "johnson", "williamson"):
        got = group_agreement_replicates(h, m, codes, 3, W, smd_method=method)
        for b in range(5):
            rep = np.repeat(np.arange(60), W[b].astype(int))
            want = group_agreement_report(h[rep], m[rep], groups=g[rep], rounding=None,
                                          smd_method=method).loc[list(names)]  # fmt: skip
            np.testing.assert_allclose(got["smd"][b], want["smd"], rtol=1e-10)
            np.testing.assert_allclose(got["dsm"][b], want["dsm"], rtol=1e-10)
    # a group absent from a replicate: NaN
    W = np.ones((1, 60))
    W[0, codes == 0] = 0
    W[0, np.flatnonzero(codes == 1)[0]] += (codes == 0).sum()
    assert np.isnan(group_agreement_replicates(h, m, codes, 3, W)["smd"][0, 0])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_bins_match_pandas_qcut(seed, k):
    values = np.random.default_rng(seed).gamma(2.0, 100.0, 57).round()
    labels, made = bin_labels(values, "wc", k)
    codes = pd.qcut(values, k, labels=False, duplicates="drop")
    assert made == codes.max() + 1
    for b in range(made):
        inside = values[codes == b]
        expected = f"wc Q{b + 1} [{inside.min():.6g}, {inside.max():.6g}]"
        assert set(labels[codes == b]) == {expected}


def _plan(df, **kw):
    ids = np.array(["all"] * len(df))
    args = {"intersections": False, "min_group_size": 30, "n_bootstrap": 0, **kw}
    return plan_groupings(df, kw.pop("group_col", None), kw.pop("bin_cols", None),
                          **{k: v for k, v in args.items() if k in
                             ("intersections", "min_group_size", "n_bootstrap")},
                          prompt_ids=ids, where=_Where(ids, False))  # fmt: skip


def test_ties_merge_bins_with_a_note():
    df = pd.DataFrame({"wc": [1, 1, 1, 1, 1, 1, 2, 3]})
    out = _plan(df, bin_cols={"wc": 4})
    assert set(out.labels["wc"]) == {"wc Q1 [1, 1]", "wc Q2 [2, 3]"}
    assert out.notes == [("all", "Bin column 'wc': ties merged the 4 quantile bins asked "
                                 "for into 2.")]  # fmt: skip


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"bin_cols": {"wc": 4, "name": 2}}, r"bin column 'name' has text in data row 1 "
         r"\('x0'; 8 row"),
        ({"bin_cols": {"nope": 2}}, "bin column 'nope' not found"),
        ({"bin_cols": {"wc": 1}}, r"bin column 'wc' asks for 1 bins.*at least 2"),
        ({"bin_cols": {"gap": 2}}, r"bin column 'gap' is empty.*data row 3.*data rows 3, 5"),
        ({"bin_cols": {"const": 2}}, "one value"),
        ({"group_col": ["g", "g"]}, "more than once"),
        ({"group_col": "g", "bin_cols": {"g": 2}}, "both as group column and as bin"),
        ({"group_col": "g", "intersections": True}, "needs at least two groupings"),
        ({"group_col": "g", "min_group_size": 1, "n_bootstrap": 10},
         "group 'c' has 1 essay, too few for a bootstrap"),
    ],
)  # fmt: skip
def test_bad_groupings_are_refused(kw, match):
    df = pd.DataFrame({
        "wc": np.arange(8.0), "name": [f"x{i}" for i in range(8)],
        "gap": [1.0, 2.0, np.nan, 4.0, np.nan, 6.0, 7.0, 8.0], "const": [5.0] * 8,
        "g": list("aaabbbbc"),
    })  # fmt: skip
    with pytest.raises(AuditInputError, match=match):
        _plan(df, **kw)


def test_cli_refuses_a_text_bin_column_with_exit_2(tmp_path, capsys):
    df = sf.load_demo_essays().iloc[:20].copy()
    df["words"] = ["many"] * 20
    path = tmp_path / "essays.csv"
    df.to_csv(path, index=False)
    code = main(["audit", str(path), "--text-col", "essay", "--score-col", "score",
                 "--group-col", "group", "--bin-col", "words:3", "--out",
                 str(tmp_path / "out")])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "bin column 'words' has text in data row 1" in err
    assert not (tmp_path / "out").exists()
    code = main(["audit", str(path), "--text-col", "essay", "--score-col", "score",
                 "--bin-col", "words", "--out", str(tmp_path / "out")])  # fmt: skip
    assert code == 2 and "expected COLUMN:BINS" in capsys.readouterr().err


def test_ellipse_two_group_columns_intersections_and_bins():
    df = pd.read_csv(ELLIPSE, dtype={"text_id_kaggle": str})
    df = df.sample(240, random_state=0).reset_index(drop=True)
    # half-point averages doubled onto an integer scale; Cohesion plays the engine
    df["score"] = (df["Overall"] * 2).astype(int)
    df["engine"] = (df["Cohesion"] * 2).astype(int)
    res = sf.audit(
        df, text_col="full_text", score_col="score", id_col="text_id_kaggle",
        systems=["engine"], representations=["bow"], score_range=(2, 10),
        group_col=["gender", "race_ethnicity"], bin_cols={"num_words": 4},
        intersections=True, n_bootstrap=50, sections=["groups"], cache=False,
    )  # fmt: skip
    assert res.meta["groupings"] == [
        "gender", "race_ethnicity", "num_words", "gender & race_ethnicity",
        "gender & num_words", "race_ethnicity & num_words",
        "gender & race_ethnicity & num_words",
    ]  # fmt: skip
    ga = res.tables["group_agreement"]
    assert list(ga.columns) == ["prompt", *SCHEMA["group_agreement"]]
    # every essay in exactly one group of every grouping
    for _, part in ga[ga["group"] != "all"].groupby("grouping"):
        assert part["n"].sum() == 240
    # pandas groupby as the independent reference of n, means and tested
    inter = ga[ga["grouping"] == "gender & race_ethnicity"].set_index("group")
    for (g, r), part in df.groupby(["gender", "race_ethnicity"]):
        row = inter.loc[f"gender={g} & race_ethnicity={r}"]
        assert row["n"] == len(part)
        assert row["human_mean"] == pytest.approx(part["score"].mean())
        assert row["machine_mean"] == pytest.approx(part["engine"].mean())
        assert bool(row["tested"]) == (len(part) >= 30)
        if len(part) < 30:
            assert pd.isna(row["smd_ok"]) and np.isnan(row["smd_ci_low"])
        else:
            assert row["smd_ci_low"] <= row["smd"] <= row["smd_ci_high"]
    bins = ga[(ga["grouping"] == "num_words") & (ga["group"] != "all")]
    codes = pd.qcut(df["num_words"], 4, labels=False)
    assert sorted(bins["n"]) == sorted(codes.value_counts())
    assert bins["group"].str.match(r"num_words Q[1-4] \[\d+, \d+\]$").all()
    glip = res.tables["group_lipschitz"]
    assert set(glip["grouping"]) == set(res.meta["groupings"])
