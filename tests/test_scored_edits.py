"""Scoring offline (fairaes export-edits, --scored-edits) and the score change under paraphrase.

The round trip is checked against the live run: a real model (TF-IDF +
Ridge trained on 300 ASAP prompt 7 essays) behind a loopback HTTP service is
audited as a --scorer; the same model scores the exported file in Python,
and the audit with --scored-edits must give the same tables. The refusals
use the package's demo essays (fast) and a word-count scorer.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scoring_server import ScoringServer
from sklearn.pipeline import make_pipeline

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.metrics._bootstrap import bootstrap_interval, replicate_weights
from sklearn_fairaes.report import AuditInputError
from sklearn_fairaes.report._edits import EXPORT_COLUMNS, text_sha256
from sklearn_fairaes.report._export import export_texts
from sklearn_fairaes.scorers._examples import length_points, n_words

N_TRAIN, N_AUDIT = 300, 50


@pytest.fixture(scope="module")
def engine(asap7):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import Ridge

    train = asap7.iloc[:N_TRAIN]
    model = make_pipeline(TfidfVectorizer(min_df=2), Ridge(alpha=1.0))
    return model.fit(list(train["essay"]), train["domain1_score"].astype(float))


@pytest.fixture(scope="module")
def asap_file(asap7, tmp_path_factory):
    frame = asap7.iloc[N_TRAIN : N_TRAIN + N_AUDIT][["essay_id", "essay", "domain1_score"]]
    frame = frame.rename(columns={"domain1_score": "score"}).reset_index(drop=True)
    frame["paraphrase"] = frame["essay"].str.replace(" the ", " that ", regex=False)
    path = tmp_path_factory.mktemp("asap") / "essays.csv"
    frame.to_csv(path, index=False)
    return path


def _options(data, cache, *extra):
    return [
        str(data), "--text-col", "essay", "--score-col", "score", "--id-col", "essay_id",
        "--score-range", "0,24", "--paraphrase-col", "paraphrase",
        "--representations", "tfidf,bow", "--perturbations", "typos,sentence_shuffle",
        "--n-perturbation-essays", "20", "--n-paraphrase-samples", "30",
        "--bootstrap", "50", "--no-features", "--quiet", "--cache", str(cache), *extra,
    ]  # fmt: skip


def _score_file(path, predict):
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame["score"] = predict(list(frame["text"]))
    out = path.with_name("scored.csv")
    frame.to_csv(out, index=False)
    return out


@pytest.mark.network
def test_offline_round_trip_equals_the_live_scorer(engine, asap_file, tmp_path):
    live, offline = tmp_path / "live", tmp_path / "offline"
    with ScoringServer(engine) as server:
        args = _options(asap_file, tmp_path / "c1", "--scorer", f"engine={server.url}")
        assert main(["audit", *args, "--out", str(live)]) == 0
        assert server.n_requests > 0
        sent = {t for batch in server.requests for t in batch}
    export = tmp_path / "texts.csv"
    assert (
        main(["export-edits", *_options(asap_file, tmp_path / "c2"), "--out", str(export)])
        == 0
    )
    texts = pd.read_csv(export, dtype=str, keep_default_na=False)
    assert tuple(texts.columns) == EXPORT_COLUMNS
    assert set(texts["kind"]) == {"original", "edit", "paraphrase"}
    assert (texts["score"] == "").all() and (texts["repeat"] == "0").all()
    # exactly the texts the live scorer was asked for
    assert set(texts["text"]) == sent
    # scored in Python by the same model, read back: the same tables
    scored = _score_file(export, engine.predict)
    args = _options(asap_file, tmp_path / "c3", "--scored-edits", f"engine={scored}")
    assert main(["audit", *args, "--out", str(offline)]) == 0
    a = json.loads((live / "results.json").read_text())["tables"]
    b = json.loads((offline / "results.json").read_text())["tables"]
    for name in (
        "perturbation", "perturbation_examples", "paraphrase", "paraphrase_scores",
        "paraphrase_essays", "predictions", "agreement",
    ):  # fmt: skip
        assert a[name] == b[name] and a[name], name
    # the live scorer is fitted: one paraphrase row, re-scored on 30 essays
    (row,) = a["paraphrase_scores"]
    assert row["system"] == "engine" and row["n_essays"] == 30


def test_export_ids_are_stable_and_name_the_text(tmp_path):
    df = sf.load_demo_essays().iloc[:40]
    kw = dict(
        text_col="essay", score_col="score", id_col="essay_id", score_range=(0, 12),
        paraphrases="paraphrase", representations=["tfidf"], perturbations="typos",
        n_perturbation_essays=10, features=False, cache=False,
    )  # fmt: skip
    first = export_texts(df, **kw)
    # the same data and options: the same rows, in the same order
    assert export_texts(df, **kw).equals(first)
    # an essay's id does not depend on its position (the essays drawn do)
    again = export_texts(df.iloc[::-1].reset_index(drop=True), **kw)
    kept = again["kind"] == "original"
    assert set(again.loc[kept, "text_id"]) == set(
        first.loc[first["kind"] == "original", "text_id"]
    )
    assert first["text_id"].is_unique
    for row in first.head(60).to_dict("records"):
        essay, kind, edit, k, rep, digest = row["text_id"].rsplit(":", 5)
        assert (essay, kind, edit, k, rep) == (
            row["essay_id"], row["kind"], row["edit"], "0", "r0",
        )  # fmt: skip
        assert digest == text_sha256(row["text"])[:12]
    originals = first[first["kind"] == "original"]
    assert list(originals["text"]) == list(df["essay"])
    # another seed edits other essays
    other = export_texts(df, **{**kw, "random_state": 1})
    assert set(other["text_id"]) != set(first["text_id"])


# -- refusals -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    df = sf.load_demo_essays().iloc[:40]
    data = folder / "d.csv"
    df.to_csv(data, index=False)
    opts = [
        str(data), "--text-col", "essay", "--score-col", "score", "--id-col", "essay_id",
        "--score-range", "0,12", "--paraphrase-col", "paraphrase", "--representations",
        "tfidf", "--perturbations", "typos", "--n-perturbation-essays", "10",
        "--no-features", "--bootstrap", "0", "--quiet", "--no-cache",
    ]  # fmt: skip
    export = folder / "texts.csv"
    assert main(["export-edits", *opts, "--out", str(export)]) == 0
    scored = _score_file(export, length_points)
    return {"data": data, "opts": opts, "export": export, "scored": scored, "df": df}


def _audit_with(demo, frame, tmp_path, capsys):
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    code = main(["audit", *demo["opts"], "--scored-edits", f"wc={path}", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not out.exists()
    return err


def _scored(demo):
    return pd.read_csv(demo["scored"], dtype=str, keep_default_na=False)


def test_a_scored_file_audits_like_the_function_scorer(demo, tmp_path):
    args = ["audit", *demo["opts"], "--out"]
    assert main([*args, str(tmp_path / "a"), "--scored-edits", f"wc={demo['scored']}"]) == 0
    spec = "wc=python:sklearn_fairaes.scorers._examples:length_points"
    assert main([*args, str(tmp_path / "b"), "--scorer", spec]) == 0
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    a = results["tables"]
    b = json.loads((tmp_path / "b" / "results.json").read_text())["tables"]
    for name in ("perturbation", "paraphrase_scores", "paraphrase_essays", "predictions"):
        assert a[name] == b[name] and a[name], name
    # the report names the file, not its rows
    assert results["meta"]["systems"]["wc"]["description"] == (
        f"fitted model, used as it is: scores read from {demo['scored']} (scored offline)"
    )


def test_an_empty_score_is_refused_naming_the_text_and_line(demo, tmp_path, capsys):
    frame = _scored(demo)
    frame.loc[[3, 7], "score"] = ""
    err = _audit_with(demo, frame, tmp_path, capsys)
    assert "2 text(s) have no score" in err and "line(s) 5, 9" in err
    assert repr(frame.loc[3, "text_id"]) in err


@pytest.mark.parametrize(
    ("value", "message"),
    [("seven", "is 'seven', not a number"), ("nan", "not finite"), ("inf", "not finite")],
)
def test_a_bad_score_is_refused(demo, tmp_path, capsys, value, message):
    frame = _scored(demo)
    frame.loc[2, "score"] = value
    err = _audit_with(demo, frame, tmp_path, capsys)
    assert message in err and repr(frame.loc[2, "text_id"]) in err


def test_a_changed_text_is_refused(demo, tmp_path, capsys):
    frame = _scored(demo)
    frame.loc[5, "text"] = frame.loc[5, "text"].strip() + " "
    err = _audit_with(demo, frame, tmp_path, capsys)
    assert "no longer match their text id" in err and "line(s) 7" in err


def test_duplicate_ids_are_refused(demo, tmp_path, capsys):
    frame = _scored(demo)
    frame = pd.concat([frame, frame.iloc[[4]]], ignore_index=True)
    err = _audit_with(demo, frame, tmp_path, capsys)
    assert "text ids appear more than once" in err and repr(frame.loc[4, "text_id"]) in err


def test_missing_texts_are_refused_before_any_work(demo, tmp_path, capsys):
    frame = _scored(demo)
    edits = frame.index[frame["kind"] == "edit"][:3]
    err = _audit_with(demo, frame.drop(index=edits), tmp_path, capsys)
    assert "3 of the" in err and "texts the audit needs are not in the file (edit" in err
    assert repr(frame.loc[edits[0], "text_id"]) in err
    # exported with other options: the audit draws other essays
    out = tmp_path / "out2"
    opts = [*demo["opts"]]
    opts[opts.index("--n-perturbation-essays") + 1] = "12"
    code = main(
        ["audit", *opts, "--scored-edits", f"wc={demo['scored']}", "--out", str(out)]
    )
    err = capsys.readouterr().err
    assert code == 2 and "same options as this audit" in err and not out.exists()


def test_a_file_of_another_data_set_is_refused(demo, tmp_path, capsys):
    other = sf.load_demo_essays().iloc[100:140]
    frame = export_texts(
        other, text_col="essay", score_col="score", id_col="essay_id",
        score_range=(0, 12), paraphrases="paraphrase", representations=["tfidf"],
        perturbations="typos", n_perturbation_essays=10, features=False, cache=False,
    )  # fmt: skip
    frame["score"] = n_words(list(frame["text"]))
    err = _audit_with(demo, frame, tmp_path, capsys)
    assert "exported from another data set" in err


def test_a_text_missing_from_the_file_in_python_names_the_system(demo):
    frame = _scored(demo)
    frame = frame[frame["kind"] != "paraphrase"]
    with pytest.raises(AuditInputError, match=r"scored_edits 'wc' \(a DataFrame\): \d+ of"):
        sf.audit(
            demo["df"], text_col="essay", score_col="score", id_col="essay_id",
            score_range=(0, 12), paraphrases="paraphrase", representations=["tfidf"],
            perturbations="typos", n_perturbation_essays=10, features=False,
            n_bootstrap=0, cache=False, scored_edits={"wc": frame},
        )  # fmt: skip


# -- the export file ----------------------------------------------------------------


def test_the_export_never_overwrites_a_file_we_did_not_write(demo, tmp_path, capsys):
    args = ["export-edits", *demo["opts"], "--out"]
    mine = tmp_path / "mine.csv"
    mine.write_text("precious\n")
    assert main([*args, str(mine)]) == 2
    assert main([*args, str(mine), "--force"]) == 2
    assert mine.read_text() == "precious\n"
    assert "not an unscored export" in capsys.readouterr().err
    # a scored export is the user's work: refused even with --force
    scored = tmp_path / "scored.csv"
    scored.write_bytes(demo["scored"].read_bytes())
    assert main([*args, str(scored), "--force"]) == 2
    assert scored.read_bytes() == demo["scored"].read_bytes()
    # an unscored export of ours is replaced with --force, byte for byte the same
    again = tmp_path / "again.csv"
    again.write_bytes(demo["export"].read_bytes())
    assert main([*args, str(again)]) == 2
    assert main([*args, str(again), "--force"]) == 0
    assert again.read_bytes() == demo["export"].read_bytes()
    assert main([*args, str(tmp_path / "texts.txt")]) == 2
    assert "give a .csv file name" in capsys.readouterr().err
    assert main([*args, str(tmp_path / "new.csv"), "--dry-run"]) == 2
    assert "export-edits sends no call" in capsys.readouterr().err
    assert not (tmp_path / "new.csv").exists()


def test_dry_run_counts_the_edited_and_paraphrased_texts(demo, capsys):
    spec = "wc=python:sklearn_fairaes.scorers._examples:length_points"
    export = pd.read_csv(demo["export"], dtype=str, keep_default_na=False)
    code = main(["audit", *demo["opts"], "--scorer", spec, "--dry-run", "--out", "x"])
    out = capsys.readouterr().out
    assert code == 0
    kinds = export["kind"].value_counts()
    n = export["text"].nunique()
    calls = -(-n // sf.scorers.FunctionScorer("m:f").batch_size)
    assert (
        f"{calls} call(s) for the {len(export)} texts the audit would send "
        f"({kinds['original']} essays, {kinds['edit']} edited, "
        f"{kinds['paraphrase']} paraphrased)"
    ) in out
    code = main(["audit", *demo["opts"], "--scored-edits", f"wc={demo['scored']}",
                 "--dry-run", "--out", "x"])  # fmt: skip
    assert code == 0 and f"0 of the {len(export)} texts" in capsys.readouterr().out


# -- the score change under paraphrase ---------------------------------------------------


def test_paraphrase_score_change_equals_a_hand_computation(engine, asap7):
    frame = asap7.iloc[N_TRAIN : N_TRAIN + N_AUDIT].reset_index(drop=True)
    frame = frame.assign(
        score=frame["domain1_score"].astype(float),
        paraphrase=frame["essay"].str.replace(" the ", " that ", regex=False),
        given=frame["domain1_score"].astype(float),
    )
    res = sf.audit(
        frame, text_col="essay", score_col="score", score_range=(0, 24),
        paraphrases="paraphrase", representations=["tfidf"], systems={"given": "given"},
        models={"engine": engine}, refit=False, features=False, n_paraphrase_samples=25,
        n_bootstrap=200, cache=False,
    )  # fmt: skip
    essays = res.tables["paraphrase_essays"]
    assert set(essays["system"]) == {"engine"}  # the given scores cannot be re-scored
    assert any("'given' is left out" in n for n in res.meta["notes"])
    rng = np.random.default_rng(0)
    held = np.sort(rng.choice(N_AUDIT, size=25, replace=False))
    ids = res.tables["predictions"]["id"].to_numpy()  # the row numbers, from 1
    assert list(essays["id"]) == [str(i + 1) for i in held] == list(ids[held])
    original = frame["essay"].to_numpy()[held]
    para = frame["paraphrase"].to_numpy()[held]
    differs = original != para
    want = engine.predict(list(para)) - engine.predict(list(original))
    np.testing.assert_allclose(essays["change"], np.where(differs, want, 0.0), atol=1e-12)
    (row,) = res.tables["paraphrase_scores"].to_dict("records")
    c = want[differs]
    assert row["n_paraphrased"] == differs.sum() > 10
    assert row["mean_abs_change"] == pytest.approx(np.mean(np.abs(c)))
    assert row["max_abs_change"] == pytest.approx(np.max(np.abs(c)))
    assert row["share_changed"] == pytest.approx(np.mean(np.abs(c) > 0.5))
    w = replicate_weights(ids, 200, 0, stream="all")[:, held][:, differs]
    low, high = bootstrap_interval((w @ np.abs(c)) / w.sum(axis=1), 0.95)
    assert (row["mean_abs_change_ci_low"], row["mean_abs_change_ci_high"]) == pytest.approx(
        (low, high)
    )
    assert low < row["mean_abs_change"] < high


def test_a_trained_baseline_is_refitted_and_rescored_per_representation():
    df = sf.load_demo_essays().iloc[:60]
    res = sf.audit(
        df, text_col="essay", score_col="score", score_range=(0, 12),
        paraphrases="paraphrase", representations=["tfidf", "bow"], models=["ridge"],
        features=False, n_bootstrap=0, cache=False,
    )  # fmt: skip
    table = res.tables["paraphrase_scores"]
    assert sorted(table["representation"]) == ["bow", "tfidf"]
    # with a baseline, a fifth of the essays is held out (12 of 60)
    assert set(table["n_essays"]) == {12}
    assert table["mean_abs_change_ci_low"].isna().all()  # no bootstrap asked for
    # by hand: TF-IDF + Ridge refitted on the 48 essays not drawn, scoring the
    # drawn essays and their paraphrases
    from sklearn.linear_model import Ridge

    assert res.meta["model_settings"]["ridge"] == "Ridge()"
    held = np.sort(np.random.default_rng(0).choice(60, size=12, replace=False))
    train = np.setdiff1d(np.arange(60), held)
    essays, paras = df["essay"].to_numpy(), df["paraphrase"].to_numpy()
    pipe = make_pipeline(sf.TfidfEssayVectorizer(), Ridge()).fit(
        list(essays[train]), df["score"].to_numpy(float)[train]
    )
    want = pipe.predict(list(paras[held])) - pipe.predict(list(essays[held]))
    got = res.tables["paraphrase_essays"]
    got = got[got["representation"] == "tfidf"]
    np.testing.assert_allclose(
        got["change"], np.where(paras[held] != essays[held], want, 0)
    )
    html = res.to_html()
    assert "Score change when an essay is paraphrased" in html
    assert "Essays to review: the largest score changes under paraphrase" in html


def test_the_lookup_scorer_is_a_regressor_that_clones_and_pickles(demo):
    import pickle

    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    from sklearn_fairaes.report._edits import ScoredTexts
    from sklearn_fairaes.scorers import ScorerError

    est = ScoredTexts(str(demo["scored"]), name="s.csv").fit()
    texts = list(_scored(demo)["text"][:5])
    np.testing.assert_allclose(est.predict(texts), length_points(texts))
    np.testing.assert_allclose(
        pickle.loads(pickle.dumps(est)).predict(texts), length_points(texts)
    )
    with pytest.raises(NotFittedError, match="not fitted"):
        clone(est).predict(texts)
    with pytest.raises(ScorerError, match=r"1 of the 2 texts are not in s.csv") as info:
        est.predict([texts[0], "a text nobody exported"])
    assert info.value.position == 1
    assert est._description() == "scores read from s.csv (scored offline)"


def test_a_model_failing_on_a_paraphrase_is_named_with_the_essay():
    from hostile_models import KnownTextsOnly

    demo = sf.load_demo_essays().iloc[:12].reset_index(drop=True)
    model = KnownTextsOnly(unseen="nan").fit(list(demo["essay"]))
    with pytest.raises(
        AuditInputError,
        match=r"model 'm' predicted a non-finite score \(nan\) for the paraphrase of "
        r"essay '\d+' \(\d+ such paraphrased essay\(s\) of \d+\)",
    ):
        sf.audit(
            demo, text_col="essay", score_col="score", models={"m": model}, refit=False,
            representations=["tfidf"], paraphrases="paraphrase", features=False,
            n_bootstrap=0, cache=False,
        )  # fmt: skip


def test_given_scores_are_named_as_not_rescored_in_the_report():
    df = sf.load_demo_essays().iloc[:30]
    res = sf.audit(
        df, text_col="essay", score_col="score", systems={"engine": "rater1"},
        score_range=(0, 12), paraphrases="paraphrase", representations=["tfidf"],
        features=False, n_bootstrap=0, cache=False,
    )  # fmt: skip
    assert res.tables["paraphrase_scores"].empty
    assert (
        "Not re-scored under paraphrase: engine (scores given as columns" in res.to_html()
    )
    assert any("'engine' is left out" in n for n in res.meta["notes"])


def test_repeats_round_trip_offline(demo, tmp_path, capsys):
    # --repeats 3: the export lists each essay three times (repeat 0, 1, 2),
    # a scorer run offline fills them in, and the audit's retest figures are
    # those of the file's three scorings.
    from sklearn.metrics import cohen_kappa_score

    export = tmp_path / "texts.csv"
    opts = [*demo["opts"], "--repeats", "3"]
    assert main(["export-edits", *opts, "--out", str(export)]) == 0
    frame = pd.read_csv(export, dtype=str, keep_default_na=False)
    originals = frame[frame["kind"] == "original"]
    assert originals.groupby("repeat").size().to_dict() == {"0": 40, "1": 40, "2": 40}
    assert frame["text_id"].is_unique
    once = pd.read_csv(demo["export"], dtype=str, keep_default_na=False)
    assert set(once["text_id"]) < set(frame["text_id"])  # repeat 0 keeps its ids
    # an offline "grader" whose repeats differ: a point per 20 words (at most
    # 11), plus one on the second scoring of every third essay
    words = np.minimum(np.array([n_words([t])[0] for t in frame["text"]]) // 20, 11)
    rank = frame.groupby("repeat").cumcount().to_numpy()
    bump = (frame["repeat"] == "1").to_numpy() & (rank % 3 == 0)
    frame["score"] = words + bump
    scored = tmp_path / "scored.csv"
    frame.to_csv(scored, index=False)
    out = tmp_path / "out"
    code = main(["audit", *opts, "--scored-edits", f"wc={scored}", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    tables = json.loads((out / "results.json").read_text())["tables"]
    row = next(r for r in tables["retest"] if r["system"] == "wc")
    k = np.stack(
        [
            frame.loc[(frame["kind"] == "original") & (frame["repeat"] == str(r)), "score"]
            .astype(float)
            .to_numpy()
            for r in range(3)
        ],
        axis=1,
    )
    assert row["n_repeats"] == 3
    assert row["share_differ"] == pytest.approx(np.mean(np.ptp(k, axis=1) > 0))
    assert 0 < row["share_differ"] < 1
    assert row["max_spread"] == 1
    assert row["qwk_retest"] == pytest.approx(
        cohen_kappa_score(
            k[:, 0].astype(int),
            k[:, 1].astype(int),
            labels=list(range(13)),
            weights="quadratic",
        )
    )
    # the file without its repeats is refused before any work, naming them
    short = frame[frame["repeat"] == "0"]
    short.to_csv(tmp_path / "short.csv", index=False)
    out2 = tmp_path / "out2"
    code = main(["audit", *opts, "--scored-edits", f"wc={tmp_path / 'short.csv'}",
                 "--out", str(out2)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "80 of the" in err and ":r1:" in err and not out2.exists()


def test_a_score_off_the_declared_scale_is_refused(demo, tmp_path, capsys):
    # the rule of the scorers you call holds for a file scored offline too
    frame = _scored(demo)
    frame.loc[3, "score"] = "13"
    err = _audit_with(demo, frame, tmp_path, capsys)
    assert "1 of the" in err and "off the declared scale" in err
    assert f"{frame.loc[3, 'text_id']} (13 off [0, 12])" in err
