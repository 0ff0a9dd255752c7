"""The audit API and the fairaes command: numbers, files and exit codes."""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.report import AuditInputError


@pytest.fixture(scope="module")
def demo():
    return sf.load_demo_essays()


@pytest.fixture(scope="module")
def small_result(demo):
    df = demo.iloc[:60]
    return sf.audit(
        df,
        text_col="essay",
        score_col="score",
        rater_cols=["rater1", "rater2"],
        group_col="group",
        id_col="essay_id",
        representations=["tfidf", "bow"],
        models=["ridge", "gradient_boosting"],
        cv=3,
        paraphrases="paraphrase",
        prompt=sf.load_demo_prompt(),
        random_state=0,
        # the demo's groups have about 20 essays: tested, so that the group
        # tables equal the metric functions' (test_group_columns checks the
        # default, under which they would be reported but not tested)
        min_group_size=10,
    )


def test_tables_follow_the_contract(small_result):
    t = small_result.tables
    assert {
        "agreement",
        "human_agreement",
        "lipschitz",
        "score_distance",
        "trend",
        "distance_distribution",
        "extreme_pairs",
        "extreme_pair_features",
        "feature_profile",
        "paraphrase",
        "features",
        "predictions",
        "group_agreement",
    } <= set(t)
    assert len(t["agreement"]) == 4
    assert set(t["lipschitz"]["system"]) == {"ridge", "gradient_boosting", "human"}
    assert set(t["agreement"]["kind"]) == {"trained"}
    assert all(set(frame["prompt"]) == {"all"} for frame in t.values())
    sd = t["score_distance"]
    assert set(sd["n_bins"]) == {5, 100}
    assert sd.groupby(["representation", "system", "n_bins"]).size().to_dict() == {
        k: k[2] for k in sd.groupby(["representation", "system", "n_bins"]).groups
    }
    assert set(t["feature_profile"]["group"]) == {"nearest", "medium", "farthest"}
    assert len(t["features"]) == 60 and "prompt_overlap" in t["features"].columns
    meta = small_result.meta
    assert meta["prompt_given"] and meta["paraphrase_source"] == "given"
    assert [o["feature"] for o in meta["omitted_features"]] == ["language_errors"]


def test_numbers_match_the_metric_functions(demo, small_result):
    t = small_result.tables
    df = demo.iloc[:60]
    y = df["score"].to_numpy(float)
    preds = t["predictions"]
    np.testing.assert_array_equal(preds["score"], y)
    row = t["agreement"].query("representation == 'tfidf' and system == 'ridge'").iloc[0]
    p = preds["tfidf+ridge"].to_numpy()
    assert row["qwk"] == sf.qwk(y, p)
    assert row["qwk_truncated"] == sf.qwk(y, p, rounding="truncate")
    assert row["abs_smd_paper"] == abs(sf.standardized_mean_difference(y, p, ddof=0))
    X = sf.TfidfEssayVectorizer().fit_transform(list(df["essay"]))
    lip = t["lipschitz"].query("representation == 'tfidf'").set_index("system")
    assert lip.loc["ridge", "lipschitz_minmax"] == sf.lipschitz_fraction(X, p)
    assert lip.loc["human", "lipschitz_max"] == sf.lipschitz_fraction(X, y, normalize="max")
    ext = sf.extreme_pairs(X)
    near = (
        t["extreme_pairs"].query("representation == 'tfidf' and which == 'nearest'").iloc[0]
    )
    assert (near["row_a"], near["row_b"]) == (
        ext["nearest"]["i"][0],
        ext["nearest"]["j"][0],
    )
    assert near["text_a"] == df["essay"].iloc[near["row_a"]]
    h = t["human_agreement"].iloc[0]
    assert h["qwk"] == pytest.approx(
        sf.qwk(df["rater1"], df["rater2"], labels=np.arange(0, 7))
    )


def test_summary_and_json(small_result, tmp_path):
    text = small_result.summary()
    assert "tfidf" in text and "human scores" in text and "language_errors left out" in text
    small_result.to_json(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["meta"]["n_essays"] == 60


def test_without_prompt_the_prompt_features_are_left_out(demo):
    res = sf.audit(
        demo.iloc[:30],
        text_col="essay",
        score_col="score",
        representations=["tfidf"],
        models=["ridge"],
        cv=3,
        paraphrases="paraphrase",
    )
    omitted = {o["feature"] for o in res.meta["omitted_features"]}
    assert {"prompt_overlap", "prompt_similarity_sbert", "language_errors"} <= omitted
    assert "prompt_overlap" not in res.tables["features"].columns
    assert res.tables["agreement"]["degradation"].isna().all()  # no raters given
    assert "human_agreement" not in res.tables


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda d: d.drop(columns="score"),
            r"score column 'score' not found; the columns are",
        ),
        (
            lambda d: d.assign(score=["x"] + list(d["score"].iloc[1:])),
            r"score column 'score' must hold numbers; data row 1 holds 'x'",
        ),
        (
            lambda d: d.assign(
                essay=list(d["essay"].iloc[:2]) + [""] + list(d["essay"].iloc[3:])
            ),
            r"row 3 of column 'essay' is empty",
        ),
        (
            lambda d: d.assign(essay_id=[1, 1] + list(d["essay_id"].iloc[2:])),
            r"id column 'essay_id' has duplicate ids \(data rows \[1, 2\]",
        ),
        (
            # a half-point scale without a step: refused up front, naming the step
            lambda d: d.assign(
                score=[d["score"].iloc[0] + 0.5] + list(d["score"].iloc[1:])
            ),
            r"score column 'score' holds non-integer scores \(data row 1: .*"
            r"score_step=0.5 \(--score-step 0.5\)",
        ),
        (
            lambda d: d.assign(rater1=d["rater1"] / 3.0),
            r"rater column 'rater1' holds non-integer scores .*score_step=0.333333",
        ),
    ],
)
def test_bad_data_raises_before_any_work(demo, change, match):
    df = change(demo.iloc[:20].reset_index(drop=True))
    with pytest.raises(AuditInputError, match=match):
        sf.audit(
            df,
            text_col="essay",
            score_col="score",
            rater_cols=["rater1", "rater2"],
            id_col="essay_id",
            representations=["tfidf"],
            models=["ridge"],
            cv=3,
        )


def test_unknown_names(demo):
    with pytest.raises(AuditInputError, match=r"unknown representation 'glove'"):
        sf.audit(
            demo.iloc[:20],
            text_col="essay",
            score_col="score",
            representations=["glove"],
            models=["ridge"],
        )
    with pytest.raises(AuditInputError, match=r"unknown model 'svm'"):
        sf.audit(
            demo.iloc[:20],
            text_col="essay",
            score_col="score",
            representations=["tfidf"],
            models=["svm"],
        )


def test_per_representation_models(demo):
    """A dict value gives each representation its own regressor (the paper's tuning)."""
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import KFold, cross_val_predict

    df = demo.iloc[:40]
    res = sf.audit(
        df,
        text_col="essay",
        score_col="score",
        representations=["tfidf", "bow"],
        models={"ridge": {"tfidf": Ridge(alpha=0.1), "bow": Ridge(alpha=50.0)}},
        cv=3,
        paraphrases="paraphrase",
        random_state=0,
    )
    y = df["score"].to_numpy(float)
    folds = KFold(3, shuffle=True, random_state=0)
    preds = res.tables["predictions"]
    for rep, alpha, vec in (
        ("tfidf", 0.1, sf.TfidfEssayVectorizer()),
        ("bow", 50.0, sf.BowVectorizer()),
    ):
        X = vec.fit_transform(list(df["essay"]))
        expected = cross_val_predict(Ridge(alpha=alpha), X, y, cv=folds)
        got = preds[[c for c in preds.columns if rep in c and "ridge" in c][0]]
        np.testing.assert_allclose(got.to_numpy(float), expected, rtol=1e-10)
    assert res.meta["model_settings"] == {
        "ridge": {"tfidf": "Ridge(alpha=0.1)", "bow": "Ridge(alpha=50.0)"}
    }
    assert "Ridge(alpha=50.0)" in res.to_html()


def test_per_representation_models_must_cover_every_representation(demo):
    from sklearn.linear_model import Ridge

    with pytest.raises(AuditInputError, match=r"models\['ridge'\].*none for \['bow'\]"):
        sf.audit(
            demo.iloc[:20],
            text_col="essay",
            score_col="score",
            representations=["tfidf", "bow"],
            models={"ridge": {"tfidf": Ridge()}},
        )
    with pytest.raises(AuditInputError, match=r"names unknown \['sbert'\]"):
        sf.audit(
            demo.iloc[:20],
            text_col="essay",
            score_col="score",
            representations=["tfidf"],
            models={"ridge": {"tfidf": Ridge(), "sbert": Ridge()}},
        )


# -- the group view ----------------------------------------------------------

GROUP_TABLES = (
    "group_agreement", "group_fairness", "group_fairness_coefficients", "group_lipschitz",
)  # fmt: skip


def _combinations(result):
    preds = result.tables["predictions"]
    for column in preds.columns[3:]:  # after prompt, id, score
        rep, model = column.split("+", 1)
        yield rep, model, preds[column].to_numpy(float)


def _rows(table, rep, model):
    part = table[(table["representation"] == rep) & (table["system"] == model)]
    # what the group view adds to the metric functions' tables
    added = ["prompt", "representation", "system", "grouping", "tested", "smd_ci_low",
             "smd_ci_high", "dsm_ci_low", "dsm_ci_high"]  # fmt: skip
    return part.drop(columns=[c for c in added if c in part]).reset_index(drop=True)


def test_group_tables_are_the_metric_functions_on_the_predictions(demo, small_result):
    t = small_result.tables
    df = demo.iloc[:60]
    y, groups = df["score"].to_numpy(float), df["group"].to_numpy()
    combos = list(_combinations(small_result))
    assert len(combos) == 4
    # the inferred scale, with the predictions trimmed to it as in the agreement table
    lo, hi = y.min(), y.max()
    for rep, model, p in combos:
        trimmed = np.clip(p, lo - 0.4998, hi + 0.4998)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sf.exceptions.UndefinedMetricWarning)
            expected = sf.group_agreement_report(
                y,
                trimmed,
                groups=groups,
                labels=np.arange(lo, hi + 1),
                smd_method="unpooled",  # the audit's default, RSMTool's
            ).reset_index()
            fair = sf.fairness_analyses(y, trimmed, groups=groups)
        pd.testing.assert_frame_equal(_rows(t["group_agreement"], rep, model), expected)
        pd.testing.assert_frame_equal(
            _rows(t["group_fairness"], rep, model), fair.summary.reset_index()
        )
        pd.testing.assert_frame_equal(
            _rows(t["group_fairness_coefficients"], rep, model), fair.coefficients
        )
    assert list(t["group_agreement"]["group"].iloc[:4]) == ["A", "B", "C", "all"]


def test_group_lipschitz_is_the_metric_function_and_splits_the_lipschitz_table(
    demo, small_result
):
    t = small_result.tables
    df = demo.iloc[:60]
    groups = df["group"].to_numpy()
    glip = t["group_lipschitz"]
    lip = t["lipschitz"].set_index(["representation", "system"])
    # every series of the "lipschitz" table, human scores included, is split
    assert set(zip(glip["representation"], glip["system"])) == set(lip.index)
    for (rep, model), row in lip.iterrows():
        part = _rows(glip, rep, model).set_index(["scope", "group"])
        overall = part.loc[("overall", "")]
        assert overall["fraction"] == row["lipschitz_minmax"]
        assert overall["n_pairs"] == row["n_pairs"] == 60 * 59 // 2
        within, cross = part.loc[("within", "")], part.loc[("cross", "")]
        assert within["n_pairs"] + cross["n_pairs"] == overall["n_pairs"]
        assert within["n_satisfied"] + cross["n_satisfied"] == overall["n_satisfied"]
        per_group = part.loc["group"]
        assert list(per_group.index) == ["A", "B", "C"]
        assert per_group["n_satisfied"].sum() == within["n_satisfied"]
        assert per_group["n_essays"].sum() == 60
    X = sf.TfidfEssayVectorizer().fit_transform(list(df["essay"]))
    for model, scores in (
        ("ridge", t["predictions"]["tfidf+ridge"].to_numpy(float)),
        ("human", df["score"].to_numpy(float)),
    ):
        direct = sf.group_lipschitz_fraction(X, scores, groups=groups)
        part = _rows(glip, "tfidf", model).set_index(["scope", "group"])
        for scope in ("overall", "within", "cross"):
            assert part.loc[(scope, ""), "fraction"] == direct[scope]
        frame = direct.to_frame()
        for label, row in frame.iterrows():
            got = part.loc[("group", label)]
            assert (got["n_essays"], got["n_pairs"], got["n_satisfied"]) == (
                row["n_essays"],
                row["n_pairs"],
                row["n_satisfied"],
            )
            assert got["fraction"] == row["fraction"]


def test_group_view_in_the_report(small_result):
    page = small_result.to_html()
    # numbered after the sections before it (the review section moved it to 9)
    (section,) = re.split(r"<h2>\d+ Group view</h2>", page)[1:]
    assert 'id="figure-group_agreement"' in section
    assert 'id="figure-group_lipschitz"' in section
    assert "Fairness analyses: OSA, OSD and CSD" in section
    assert "(column group)" in section
    assert {"group_agreement", "group_lipschitz"} <= set(small_result.figures)


def test_without_group_col_there_is_no_group_view(demo):
    res = sf.audit(
        demo.iloc[:20],
        text_col="essay",
        score_col="score",
        representations=["tfidf"],
        models=["ridge"],
        cv=3,
        paraphrases="paraphrase",
    )
    assert not set(GROUP_TABLES) & set(res.tables)
    assert res.meta["group_col"] is None


def test_a_group_of_one_essay_gives_nan_and_a_note(demo):
    df = demo.iloc[:30].reset_index(drop=True)
    df.loc[7, "group"] = "Z"
    res = sf.audit(
        df,
        text_col="essay",
        score_col="score",
        group_col="group",
        representations=["tfidf"],
        models=["ridge"],
        cv=3,
        paraphrases="paraphrase",
    )
    agreement = res.tables["group_agreement"].set_index("group")
    assert agreement.loc["Z", "n"] == 1
    assert np.isnan(
        agreement.loc["Z", ["qwk", "smd", "dsm", "human_sd"]].astype(float)
    ).all()
    glip = (
        res.tables["group_lipschitz"]
        .query("scope == 'group'")
        .set_index(["system", "group"])
    )
    assert np.isnan(glip.loc[("ridge", "Z"), "fraction"])
    assert glip.loc[("human", "Z"), "n_pairs"] == 0
    notes = [n for n in res.meta["notes"] if n.startswith("Group view:")]
    assert any(
        "'Z'" in n and "fewer than 2 essays" in n and "tfidf + ridge" in n for n in notes
    )
    assert any("tfidf, human scores" in n for n in notes)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda d: d.assign(group=d["group"].where(d.index != 4)),
            r"group column 'group' is empty in data row 5 \(nan; 1 row\(s\) in all\)",
        ),
        (
            lambda d: d.assign(group=d["group"].where(d.index % 5 != 2, "  ")),
            r"group column 'group' is empty in data row 3 \('  '; 4 row\(s\) in all\)",
        ),
        (
            lambda d: d.assign(group="A"),
            r"group column 'group' holds 1 distinct group\(s\) \('A'\); at least 2",
        ),
        (
            lambda d: d.assign(group=["all"] + list(d["group"].iloc[1:])),
            r"group column 'group' has a group named 'all'",
        ),
        (lambda d: d.drop(columns="group"), r"group column 'group' not found"),
    ],
)
def test_bad_group_column_raises_before_any_work(demo, change, match):
    df = change(demo.iloc[:20].reset_index(drop=True))
    with pytest.raises(AuditInputError, match=match):
        # an unknown representation would fail later: the group column is checked first
        sf.audit(
            df,
            text_col="essay",
            score_col="score",
            group_col="group",
            representations=["glove"],
            models=["ridge"],
            cv=3,
        )


@pytest.mark.parametrize(
    ("groups", "match"),
    [
        (
            lambda g: g.where(g.index != 3, ""),
            "group column 'group' is empty in data row 4",
        ),
        (lambda g: g.map(lambda _: "B"), "holds 1 distinct group(s) ('B')"),
    ],
)
def test_cli_bad_group_column_exit_code_2(demo, tmp_path, capsys, groups, match):
    df = demo.iloc[:20][["essay", "score", "group"]].reset_index(drop=True)
    path = _write(tmp_path, df.assign(group=groups(df["group"])), "essays.csv")
    out = tmp_path / "out"
    code, cap = _cli(["audit", path, *BASE, "--group-col", "group", "--out", out], capsys)
    assert code == 2, cap.err
    assert match in cap.err and path.name in cap.err
    assert not out.exists()


# -- the command line -------------------------------------------------------


def _write(tmp_path, frame, name="essays.tsv"):
    path = tmp_path / name
    frame.to_csv(path, sep="\t" if name.endswith(".tsv") else ",", index=False)
    return path


def _cli(args, capsys):
    code = main([str(a) for a in args])
    return code, capsys.readouterr()


BASE = [
    "--text-col",
    "essay",
    "--score-col",
    "score",
    "--representations",
    "tfidf",
    "--models",
    "ridge",
    "--cv",
    "3",
    "--quiet",
]


@pytest.mark.parametrize(
    ("kind", "match"),
    [
        ("missing_column", "text column 'essay' not found"),
        ("non_numeric", "must hold numbers; data row 2 holds 'ten'"),
        ("empty_file", "the file is empty"),
        ("header_only", "has a header but no rows"),
        ("empty_essay", "row 4 of column 'essay' is empty"),
        ("encoding", "cannot decode byte 0x"),
        ("duplicate_ids", "duplicate ids"),
        ("unknown_type", "unknown file type '.json'"),
    ],
)
def test_cli_bad_input_exit_code_2_and_no_report(demo, tmp_path, capsys, kind, match):
    df = demo.iloc[:20][["essay_id", "essay", "score"]].reset_index(drop=True)
    extra = []
    if kind == "missing_column":
        path = _write(tmp_path, df.rename(columns={"essay": "text"}))
    elif kind == "non_numeric":
        df["score"] = df["score"].astype(object)
        df.loc[1, "score"] = "ten"
        path = _write(tmp_path, df)
    elif kind == "empty_file":
        path = tmp_path / "empty.csv"
        path.write_text("")
    elif kind == "header_only":
        path = _write(tmp_path, df.iloc[:0], "h.csv")
    elif kind == "empty_essay":
        df.loc[3, "essay"] = ""
        path = _write(tmp_path, df)
    elif kind == "encoding":
        path = tmp_path / "latin.tsv"
        path.write_bytes("essay\tscore\nCaf\u00e9 au lait\t3\n".encode("utf-16"))
    elif kind == "duplicate_ids":
        df.loc[5, "essay_id"] = df.loc[4, "essay_id"]
        path = _write(tmp_path, df)
        extra = ["--id-col", "essay_id"]
    else:
        path = tmp_path / "x.json"
        path.write_text("{}")
    out = tmp_path / "out"
    code, cap = _cli(["audit", path, *BASE, *extra, "--out", out], capsys)
    assert code == 2, cap.err
    assert match in cap.err
    assert str(path.name) in cap.err or kind in ("unknown_type",)
    assert not out.exists()
    assert not list(tmp_path.glob(".out.partial-*"))


def test_cli_cp1252_with_encoding_option(demo, tmp_path, capsys):
    df = demo.iloc[:15][["essay", "score"]]
    path = tmp_path / "win.tsv"
    df = df.assign(essay=df["essay"].str.replace("e", "\u00e9"))
    path.write_bytes(df.to_csv(sep="\t", index=False).encode("cp1252"))
    out = tmp_path / "out"
    code, cap = _cli(["audit", path, *BASE, "--out", out], capsys)
    assert code == 2 and "--encoding" in cap.err
    code, cap = _cli(["audit", path, *BASE, "--encoding", "cp1252", "--out", out], capsys)
    assert code == 0, cap.err
    assert (out / "report.html").exists()


def test_cli_writes_report_and_refuses_to_overwrite(demo, tmp_path, capsys):
    df = demo.iloc[:24][["essay_id", "essay", "score", "rater1", "rater2", "group"]]
    path = _write(tmp_path, df, "essays.csv")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(sf.load_demo_prompt())
    out = tmp_path / "report"
    args = [
        "audit",
        path,
        *BASE,
        "--rater-cols",
        "rater1,rater2",
        "--group-col",
        "group",
        "--id-col",
        "essay_id",
        "--prompt-file",
        prompt,
        "--out",
        out,
    ]
    code, cap = _cli(args, capsys)
    assert code == 0, cap.err
    assert (out / "report.html").exists() and (out / "results.json").exists()
    tables = {p.name for p in (out / "tables").iterdir()}
    assert {"agreement.csv", "lipschitz.csv", "group_agreement.csv"} <= tables
    stamp = (out / "results.json").read_text()
    code, cap = _cli(args, capsys)
    assert code == 2 and "already exists; pass --force" in cap.err
    assert (out / "results.json").read_text() == stamp
    code, cap = _cli([*args, "--force", "--random-state", "1"], capsys)
    assert code == 0
    assert (out / "results.json").read_text() != stamp
    assert not list(tmp_path.glob(".report.*"))


def test_cli_internal_error_exit_1_and_no_report(demo, tmp_path, capsys, monkeypatch):
    path = _write(tmp_path, demo.iloc[:15][["essay", "score"]])

    def broken(*a, **k):
        raise RuntimeError("simulated failure while writing")

    monkeypatch.setattr(sf.AuditResult, "to_html", broken)
    out = tmp_path / "out"
    code, cap = _cli(["audit", path, *BASE, "--out", out], capsys)
    assert code == 1 and "internal error" in cap.err
    assert not out.exists() and not list(tmp_path.glob(".out.partial-*"))


def test_cli_help_and_version(capsys):
    for cmd in (["--help"], ["audit", "--help"], ["demo", "--help"], ["setup", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(cmd)
        assert exc.value.code == 0
        assert "Example" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--version"])
    assert sf.__version__ in capsys.readouterr().out


@pytest.mark.parametrize(
    "option, match",
    [(["--models", "foo"], "foo"), (["--perturbations", "no_such_edit"], "no_such_edit")],
)
def test_cli_demo_bad_option_exit_code_2(tmp_path, capsys, option, match):
    out = tmp_path / "demo"
    code = main(["demo", "--out", str(out), "--quiet", *option])
    cap = capsys.readouterr()
    assert code == 2, cap.err
    assert "fairaes: error: demo:" in cap.err and match in cap.err
    assert "Traceback" not in cap.err
    assert not out.exists()


def test_fairaes_demo_end_to_end(tmp_path, capsys, minilm):
    out = tmp_path / "demo"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["demo", "--out", str(out), "--quiet"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    html = (out / "report.html").read_text()
    assert "<img" in html and "data:image/png;base64," in html
    data = json.loads((out / "results.json").read_text())
    reps = {r["representation"] for r in data["tables"]["agreement"]}
    assert reps == {"bow", "tfidf", "sbert"}


@pytest.mark.slow
def test_fairaes_audit_asap7(tmp_path, capsys, minilm):
    from conftest import ASAP7, PROMPT7, require_file

    path = require_file(ASAP7)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(PROMPT7)
    out = tmp_path / "asap7"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(
            [
                "audit",
                str(path),
                "--text-col",
                "essay",
                "--score-col",
                "domain1_score",
                "--rater-cols",
                "rater1_domain1,rater2_domain1",
                "--id-col",
                "essay_id",
                "--prompt-file",
                str(prompt),
                "--representations",
                "tfidf,sbert",
                "--models",
                "ridge,gradient_boosting",
                "--out",
                str(out),
                "--quiet",
            ]
        )
    assert code == 0, capsys.readouterr().err
    data = json.loads((out / "results.json").read_text())
    human = data["tables"]["human_agreement"][0]
    assert human["qwk"] == pytest.approx(0.72148, abs=5e-5)  # REFERENCE_NUMBERS.md
    lip = {(r["representation"], r["system"]): r for r in data["tables"]["lipschitz"]}
    # the paper's human-score Lipschitz fraction under TF-IDF: 99.92% (min-max)
    assert lip[("tfidf", "human")]["lipschitz_minmax"] == pytest.approx(0.9992, abs=5e-4)


# -- the counterfactual audit (perturbations) ----------------------------------


@pytest.fixture(scope="module")
def edited_result(demo):
    return sf.audit(
        demo.iloc[:60],
        text_col="essay",
        score_col="score",
        representations=["tfidf"],
        models=["ridge", "gradient_boosting"],
        cv=3,
        paraphrases="paraphrase",
        perturbations="typos,sentence_shuffle,word_salad",
        n_perturbation_essays=20,
        random_state=0,
    )


def test_perturbation_tables_equal_a_direct_call(demo, edited_result):
    """The audit's table is perturbation_audit on the held-out sample it says it used."""
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    from sklearn_fairaes.perturb import perturbation_audit
    from sklearn_fairaes.report._build import make_model

    df = demo.iloc[:60]
    essays = list(df["essay"])
    y = df["score"].to_numpy(float)
    held = np.sort(np.random.default_rng(0).choice(60, size=12, replace=False))
    train = np.setdiff1d(np.arange(60), held)
    rep = sf.TfidfEssayVectorizer().fit(essays)
    pipes = {
        m: Pipeline(
            [
                ("representation", sf.TfidfEssayVectorizer()),
                ("model", clone(make_model(m, random_state=0, n_jobs=None))),
            ]
        ).fit([essays[i] for i in train], y[train])
        for m in ("ridge", "gradient_boosting")
    }
    expected = perturbation_audit(
        pipes,
        [essays[i] for i in held],
        perturbations=["typos", "sentence_shuffle", "word_salad"],
        representation=rep,
        score_scale=y,
        random_state=0,
    )
    got = edited_result.tables["perturbation"]
    assert list(got.columns[:3]) == ["prompt", "representation", "system"]
    assert set(got["representation"]) == {"tfidf"}
    pd.testing.assert_frame_equal(
        got.drop(columns=["prompt", "representation"])
        .rename(columns={"system": "model"})
        .reset_index(drop=True),
        expected.reset_index(drop=True),
        check_dtype=False,
    )
    ex = edited_result.tables["perturbation_examples"]
    assert set(ex["perturbation"]) <= {"typos", "sentence_shuffle", "word_salad"}
    assert any("held out" in n for n in edited_result.meta["notes"])
    page = edited_result.to_html()
    assert "Counterfactual edits" in page and "overstability" in page
    assert "perturbation" in edited_result.figures


def test_without_perturbations_no_section(small_result):
    assert "perturbation" not in small_result.tables
    page = small_result.to_html()
    assert re.search(r"<h2>\d+ Counterfactual edits", page) is None
    assert "no perturbations were requested" in page  # the overview says why


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"perturbations": "typos,glitter"}, r"unknown perturbation\(s\) \['glitter'\]"),
        (
            {"perturbations": ["prompt_stuffing"]},
            r"'prompt_stuffing' needs the task statement",
        ),
        (
            {"perturbations": "default", "n_perturbation_essays": 1},
            r"n_perturbation_essays",
        ),
    ],
)
def test_bad_perturbation_options_raise_before_any_work(demo, kwargs, match):
    with pytest.raises(AuditInputError, match=match):
        sf.audit(
            demo.iloc[:20],
            text_col="essay",
            score_col="score",
            representations=["tfidf"],
            models=["ridge"],
            **kwargs,
        )


def test_cli_perturbations_option(demo, tmp_path, capsys):
    path = _write(tmp_path, demo.iloc[:40])
    code, _ = _cli(
        [
            "audit",
            path,
            *BASE,
            "--paraphrase-col",
            "paraphrase",
            "--perturbations",
            "typos,word_scramble",
            "--n-perturbation-essays",
            "8",
            "--out",
            tmp_path / "out",
        ],
        capsys,
    )
    assert code == 0
    table = (tmp_path / "out" / "tables" / "perturbation.csv").read_text()
    assert "typos" in table and "word_scramble" in table


def test_rater_cols_as_one_comma_separated_string(demo, small_result):
    result = sf.audit(
        demo.iloc[:60],
        text_col="essay",
        score_col="score",
        rater_cols="rater1, rater2",
        representations=["tfidf"],
        models=["ridge"],
        cv=3,
        paraphrases="paraphrase",
        random_state=0,
    )
    assert result.meta["rater_cols"] == ["rater1", "rater2"]
    row, expected = (
        result.tables["human_agreement"].iloc[0],
        small_result.tables["human_agreement"].iloc[0],
    )
    assert (row["rater1"], row["rater2"]) == ("rater1", "rater2")
    assert row["qwk"] == expected["qwk"]


def test_a_paraphraser_without_wordnet_skips_the_section_with_a_note(demo, monkeypatch):
    # the paraphrases run in a thread beside the encoders (report._build); an
    # error there must come back as the note, not as a crash or a hang
    from sklearn_fairaes.paraphrase import WordNetParaphraser

    def missing(self, essays):
        raise LookupError("WordNet not found (test)")

    monkeypatch.setattr(WordNetParaphraser, "fit_transform", missing)
    res = sf.audit(
        demo.iloc[:30],
        text_col="essay",
        score_col="score",
        representations=["tfidf"],
        models=["ridge"],
        cv=3,
    )
    notes = [n for n in res.meta["notes"] if "Paraphrase robustness skipped" in n]
    assert len(notes) == 1 and "WordNet not found (test)" in notes[0]
    assert "paraphrase" not in res.tables or res.tables["paraphrase"].empty


@pytest.mark.parametrize("tune", [True, False])
def test_the_paraphrase_thread_shortens_the_switch_interval_and_restores_it(
    demo, monkeypatch, tune
):
    # asked to (the fairaes command does), while the paraphrases run beside the
    # encoders the GIL changes hands every 0.2 ms (report._build); afterwards
    # the interpreter's own value is back. Not asked, the interval is the whole
    # process's and stays as it is.
    import sys

    from sklearn_fairaes.paraphrase import WordNetParaphraser
    from sklearn_fairaes.report import _build

    seen = []
    real = WordNetParaphraser.fit_transform

    def spy(self, essays):
        seen.append(sys.getswitchinterval())
        return real(self, essays)

    monkeypatch.setattr(WordNetParaphraser, "fit_transform", spy)
    before = sys.getswitchinterval()
    res = sf.audit(
        demo.iloc[:30],
        text_col="essay",
        score_col="score",
        representations=["tfidf"],
        models=["ridge"],
        cv=3,
        tune_interpreter=tune,
    )
    assert seen == [pytest.approx(_build._OVERLAP_SWITCH_INTERVAL if tune else before)]
    assert sys.getswitchinterval() == before
    assert not res.tables["paraphrase"].empty


def test_switch_interval_is_not_restored_over_another_setting():
    import sys

    from sklearn_fairaes.report._build import _SwitchInterval

    before = sys.getswitchinterval()
    try:
        switch = _SwitchInterval(0.0003)
        switch.set()
        assert sys.getswitchinterval() == pytest.approx(0.0003)
        switch.restore()
        assert sys.getswitchinterval() == before
        switch.set()
        sys.setswitchinterval(0.004)  # someone else's choice meanwhile
        switch.restore()
        assert sys.getswitchinterval() == pytest.approx(0.004)
        switch.restore()  # a second restore changes nothing
        assert sys.getswitchinterval() == pytest.approx(0.004)
    finally:
        sys.setswitchinterval(before)


def test_baseline_folds_in_threads_give_the_sequential_predictions():
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.model_selection import KFold, cross_val_predict

    from sklearn_fairaes.report._build import _out_of_fold, make_model

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 6))
    y = X[:, 0] * 3 + rng.normal(size=120)
    folds = KFold(4, shuffle=True, random_state=0)
    for name in ("gradient_boosting", "random_forest", "ridge"):
        model = make_model(name, random_state=0, n_jobs=None)
        ref = cross_val_predict(model, X, y, cv=folds)
        assert np.array_equal(_out_of_fold(model, X, y, folds, None), ref)
        assert np.array_equal(_out_of_fold(model, X, y, folds, 1), ref)

    threads = set()

    class Recording(RegressorMixin, BaseEstimator):
        # a user's estimator: fitted in the calling thread, fold after fold
        def fit(self, X, y):
            import threading

            threads.add(threading.get_ident())
            self.mean_ = float(np.mean(y))
            return self

        def predict(self, X):
            return np.full(len(X), self.mean_)

    _out_of_fold(Recording(), X, y, folds, None)
    import threading

    assert threads == {threading.get_ident()}


def _hand_result(prompts, system="engine"):
    """An AuditResult built by hand: one system, two prompts (or one), raters given."""
    from sklearn_fairaes.report import AuditResult

    agreement = pd.DataFrame(
        {
            "prompt": prompts,
            "representation": [""] * len(prompts),
            "system": [system] * len(prompts),
            "kind": ["given"] * len(prompts),
            "n": [120, 80][: len(prompts)],
            "qwk": [0.712, 0.655][: len(prompts)],
            "degradation": [0.021, np.nan][: len(prompts)],
            "smd": [-0.031, 0.2][: len(prompts)],
            "acceptable": [True, False][: len(prompts)],
        }
    )
    lipschitz = pd.DataFrame(
        {
            "prompt": prompts * 2,
            "representation": ["tfidf"] * (2 * len(prompts)),
            "system": [system] * len(prompts) + ["human"] * len(prompts),
            "lipschitz_minmax": [0.9931, 0.95][: len(prompts)]
            + [0.9712, 0.94][: len(prompts)],
            "lipschitz_max": [0.9975, 0.96][: len(prompts)]
            + [0.9803, 0.95][: len(prompts)],
            "n_pairs": [780] * (2 * len(prompts)),
        }
    )
    meta = {
        "title": "Hand audit",
        "n_essays": 200,
        "score_min": 0.0,
        "score_max": 6.0,
        "representations": ["tfidf"],
        "prompts": prompts,
        "systems": {system: {"kind": "given", "description": ""}},
        "models": [],
        "omitted_features": [],
        "notes": ["one <note> & more"],
    }
    return AuditResult({"agreement": agreement, "lipschitz": lipschitz}, meta)


def test_summary_lists_n_qwk_degradation_smd_and_acceptance():
    """Issue 33 item 7: the console summary's columns, each filled where the audit has it."""
    lines = _hand_result(["all"]).summary().splitlines()
    assert lines[1].split() == [
        "representation", "system", "n", "QWK", "degradation", "|SMD|",
        "LF", "min-max", "LF", "max", "accepted",
    ]  # fmt: skip
    assert lines[2].split() == [
        "tfidf", "engine", "120", "0.712", "0.021", "0.031", "0.9931", "0.9975", "yes",
    ]  # fmt: skip
    assert lines[3].split() == ["tfidf", "human", "scores", "0.9712", "0.9803"]


def test_summary_columns_hold_long_prompt_ids_and_names():
    """A prompt id or system name wider than its column used to run into the next one."""
    long_prompt, long_system = "2.1_DLL_v1.1_extended", "engine_version_2026_rc1"
    text = _hand_result([long_prompt, "b"], system=long_system).summary()
    rows = text.splitlines()[2:6]
    assert rows[0].split()[:4] == [long_prompt, "tfidf", long_system, "120"]
    # a missing degradation stays an empty cell; every row's columns line up
    assert rows[1].split()[:6] == ["b", "tfidf", long_system, "80", "0.655", "0.200"]
    header = text.splitlines()[1]
    assert all(row.index("tfidf") == header.index("representation") for row in rows)


def test_repr_html_escapes_the_users_names():
    html = _hand_result(["all"], system="<b>engine</b>")._repr_html_()
    assert "<b>engine</b>" not in html and "&lt;b&gt;engine&lt;/b&gt;" in html
    assert "one &lt;note&gt; &amp; more" in html
    assert "<th>degradation</th>" in html and "<td>0.021</td>" in html
