"""Test-retest consistency: ``repeats=K``, ``--repeats K`` and "Same essay, different score".

The grader is a real loopback service (tests/scoring_server.py) wrapping
TF-IDF + Ridge trained on 300 ASAP prompt 7 essays, noisy on purpose: each
score of each request moves a point with probability 0.4 (seeded), as an LLM
grader answers a repeated request anew. Requests are counted at the server.
The figures are checked on a hand-worked case against scikit-learn's
``cohen_kappa_score``.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scoring_server import ScoringServer
from sklearn.metrics import cohen_kappa_score
from sklearn.pipeline import make_pipeline

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.report import AuditInputError
from sklearn_fairaes.report.analyses._lipschitz import LIPSCHITZ_COLUMNS
from sklearn_fairaes.report.analyses._retest import retest_statistics
from sklearn_fairaes.scorers import FunctionScorer, HTTPScorer

N_TRAIN, N_AUDIT = 300, 60
BATCH = 16  # HTTPScorer's default batch size: ceil(60 / 16) = 4 calls per repeat

AUDIT = dict(
    text_col="essay",
    score_col="score",
    id_col="essay_id",
    score_range=(0, 24),
    paraphrases="paraphrase",
    representations=["tfidf"],
    features=False,
    n_bootstrap=50,
)

#: Calls of a stochastic Python function, so that a repeated call differs.
CALLS = itertools.count()


def wobbly_words(texts):
    """Word counts, plus the call's number modulo 2 (a stochastic grader)."""
    shift = next(CALLS) % 2
    return [len(t.split()) + shift for t in texts]


@pytest.fixture(scope="module")
def engine(asap7):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import Ridge

    train = asap7.iloc[:N_TRAIN]
    model = make_pipeline(TfidfVectorizer(min_df=2), Ridge(alpha=1.0))
    return model.fit(list(train["essay"]), train["domain1_score"].astype(float))


@pytest.fixture(scope="module")
def essays(asap7):
    frame = asap7.iloc[N_TRAIN : N_TRAIN + N_AUDIT][["essay_id", "essay", "domain1_score"]]
    frame = frame.reset_index(drop=True).copy()
    frame["score"] = frame["domain1_score"].astype(float)
    frame["paraphrase"] = frame["essay"].str.replace(" the ", " that ", regex=False)
    return frame


@pytest.fixture
def noisy(engine):
    with ScoringServer(engine, noise=0.4, noise_seed=7) as srv:
        yield srv


# -- the figures, by hand -------------------------------------------------------------


def test_hand_worked_figures_equal_independent_computations():
    # 4 essays, 3 scorings each, on a 0-4 scale
    scores = np.array([[2.0, 2, 2], [3, 4, 3], [1, 1, 3], [4, 4, 4]])
    out = retest_statistics(scores, score_range=(0, 4))
    assert out["share_differ"] == 0.5  # essays 2 and 3
    assert out["spread"].tolist() == [0, 1, 2, 0]
    assert out["mean_spread"] == 0.75 and out["max_spread"] == 2.0
    # SDs (ddof=1): 0, sqrt(1/3), sqrt(4/3), 0
    want_sd = (math.sqrt(1 / 3) + math.sqrt(4 / 3)) / 4
    assert out["mean_sd"] == pytest.approx(want_sd, abs=1e-12)
    labels = [0, 1, 2, 3, 4]
    kappas = [
        cohen_kappa_score(scores[:, i], scores[:, j], weights="quadratic", labels=labels)
        for i, j in ((0, 1), (0, 2), (1, 2))
    ]
    assert out["qwk_retest"] == pytest.approx(kappas[0], abs=1e-12)
    assert out["qwk_retest_mean"] == pytest.approx(np.mean(kappas), abs=1e-12)
    # repeat pairs: essay 2 differs in 2 of 3, essay 3 in 2 of 3
    assert (out["n_repeat_pairs"], out["n_pairs_differ"]) == (12, 4)
    assert out["retest_violation_share"] == pytest.approx(4 / 12)


def test_half_points_keep_their_categories():
    # a 1-3 scale in half points: 2.0 vs 2.5 is one category apart, not rounded away
    scores = np.array([[1.0, 1.5], [2.0, 2.5], [3.0, 3.0], [1.5, 1.5]])
    out = retest_statistics(scores, score_range=(1, 3), score_step=0.5)
    pos = (scores - 1) / 0.5
    want = cohen_kappa_score(pos[:, 0], pos[:, 1], weights="quadratic", labels=range(5))
    assert out["qwk_retest"] == pytest.approx(want, abs=1e-12) and out["qwk_retest"] < 1
    whole = retest_statistics(scores, score_range=(1, 3))  # integer points: 2.5 -> 2
    assert whole["qwk_retest"] != pytest.approx(out["qwk_retest"])


def test_bootstrap_replicates_reweight_the_essays():
    scores = np.array([[2.0, 2, 2], [3, 4, 3], [1, 1, 3], [4, 4, 4]])
    w = np.array([[1.0, 1, 1, 1], [2.0, 0, 0, 2], [0.0, 2, 2, 0]])
    reps = retest_statistics(scores, score_range=(0, 4), weights=w)["replicates"]
    assert reps["share_differ"].tolist() == [0.5, 0.0, 1.0]
    assert reps["mean_spread"].tolist() == [0.75, 0.0, 1.5]
    q = retest_statistics(scores[[1, 1, 2, 2]], score_range=(0, 4))["qwk_retest"]
    assert reps["qwk_retest"][2] == pytest.approx(q)


# -- the scorers ----------------------------------------------------------------------


@pytest.mark.network
def test_predict_repeats_calls_only_the_repeats_not_cached(noisy, essays, tmp_path):
    texts = list(essays["essay"])
    scorer = HTTPScorer(noisy.url, cache=tmp_path / "a.sqlite", concurrency=1)
    first = scorer.predict(texts)
    assert noisy.n_requests == 4
    two = scorer.predict_repeats(texts, 2)
    assert two.shape == (60, 2) and noisy.n_requests == 8  # repeat 2 only
    assert np.array_equal(two[:, 0], first)
    assert (two[:, 0] != two[:, 1]).any()  # the noisy grader answered anew
    three = scorer.predict_repeats(texts, 3)
    assert noisy.n_requests == 12 and np.array_equal(three[:, :2], two)
    scorer.predict_repeats(texts, 3)
    assert noisy.n_requests == 12
    with pytest.raises(ValueError, match="n_repeats must be a whole number >= 1"):
        scorer.predict_repeats(texts, 0)


def test_a_function_scorer_is_called_again_for_each_repeat():
    scorer = FunctionScorer("test_repeats:wobbly_words")
    got = scorer.predict_repeats(["one two", "three"], 2)
    assert abs(got[0, 0] - got[0, 1]) == 1 and abs(got[1, 0] - got[1, 1]) == 1


# -- the audit ------------------------------------------------------------------------


@pytest.mark.network
def test_audit_with_repeats_measures_a_noisy_grader(noisy, essays, tmp_path):
    cache = tmp_path / "cache"
    res = sf.audit(essays, scorers={"llm": noisy.url}, repeats=3, cache=cache, **AUDIT)
    sent = noisy.n_requests
    # the probe (3 essays), 4 batches per repeat, and the 54 paraphrases the
    # paraphrase section re-scores (4 batches, once: paraphrases are not repeated)
    assert sent == 1 + 3 * 4 + 4
    retest = res.tables["retest"]
    row = retest.iloc[0]
    assert row["system"] == "llm" and row["n_repeats"] == 3 and row["n_essays"] == 60
    # the audit's figures are those of the three scorings the server gave
    scorer = HTTPScorer(noisy.url, cache=cache / "scorer_responses.sqlite")
    scores = scorer.predict_repeats(list(essays["essay"]), 3)
    assert noisy.n_requests == sent  # all cached
    want = retest_statistics(scores, score_range=(0, 24))
    for column in ("share_differ", "mean_spread", "max_spread", "mean_sd", "qwk_retest"):
        assert row[column] == pytest.approx(want[column]), column
    assert 0 < row["share_differ"] <= 1 and row["qwk_retest"] < 1
    assert row["share_differ_ci_low"] <= row["share_differ"] <= row["share_differ_ci_high"]
    assert np.array_equal(res.tables["predictions"]["llm"], scores[:, 0])
    # the essays to review: largest spread first, their three scores and human score
    worst = res.tables["retest_essays"]
    assert worst["spread"].is_monotonic_decreasing and (worst["spread"] > 0).all()
    top = worst.iloc[0]
    i = int(np.flatnonzero(essays["essay_id"].astype(str) == str(top["id"]))[0])
    assert top["scores"] == ", ".join(f"{v:.4f}".rstrip("0").rstrip(".") for v in scores[i])
    assert top["spread"] == pytest.approx(np.ptp(scores[i]))
    assert top["spread"] == pytest.approx(want["spread"].max())
    assert top["human"] == essays["score"].iloc[i] and top["row"] == i + 1
    # the Lipschitz table: the retest share beside the fractions, for llm only
    lip = res.tables["lipschitz"].set_index("system")
    assert lip.loc["llm", "retest_violation_share"] == pytest.approx(
        want["retest_violation_share"]
    )
    assert math.isnan(lip.loc["human", "retest_violation_share"])
    # a second audit with the same K sends nothing; K = 4 sends only the fourth
    again = sf.audit(essays, scorers={"llm": noisy.url}, repeats=3, cache=cache, **AUDIT)
    assert noisy.n_requests == sent
    assert again.tables["retest"].equals(retest)
    sf.audit(essays, scorers={"llm": noisy.url}, repeats=4, cache=cache, **AUDIT)
    assert noisy.n_requests == sent + 4
    # the page, the files, and the round trip through a report folder
    html = res.to_html()
    assert "Same essay, different score" in html
    assert "llm gave" in html and "distance 0" in html
    assert "same essay rescored: differing %" in html
    out = tmp_path / "report"
    res.save(out)
    assert (out / "tables" / "retest.csv").is_file()
    assert (out / "tables" / "retest_essays.csv").is_file()
    saved = json.loads((out / "results.json").read_text())
    assert saved["tables"]["retest"][0]["system"] == "llm"
    assert saved["meta"]["repeats"] == 3
    loaded = sf.AuditResult.load(out)
    pd.testing.assert_frame_equal(
        loaded.tables["retest"], retest, check_dtype=False, check_exact=False
    )
    assert "retest_violation_share" in loaded.tables["lipschitz"].columns


@pytest.mark.network
def test_a_deterministic_grader_scores_alike_and_no_repeat_changes_the_rest(
    engine, essays, tmp_path
):
    with ScoringServer(engine) as srv:
        cache = tmp_path / "cache"
        res = sf.audit(essays, scorers={"engine": srv.url}, repeats=2, cache=cache, **AUDIT)
        once = sf.audit(essays, scorers={"engine": srv.url}, cache=cache, **AUDIT)
    row = res.tables["retest"].iloc[0]
    assert row["share_differ"] == 0 and row["max_spread"] == 0
    assert row["qwk_retest"] == 1 and row["retest_violation_share"] == 0
    assert res.tables["retest_essays"].empty
    assert "engine gave each of the 60 essays the same score" in res.to_html()
    # without repeats: no retest tables, the Lipschitz table as before
    assert "retest" not in once.tables and "repeats" not in once.meta
    assert list(once.tables["lipschitz"].columns) == ["prompt", *LIPSCHITZ_COLUMNS]
    assert "each essay was scored once" in json.dumps(once.meta["absent_sections"])
    assert "same essay rescored" not in once.to_html()
    lip = res.tables["lipschitz"][once.tables["lipschitz"].columns]
    pd.testing.assert_frame_equal(lip, once.tables["lipschitz"])


def test_bad_repeats_are_refused_before_any_work(essays):
    scores = essays.assign(engine=essays["score"])
    for bad, message in (
        (0, r"repeats \(--repeats\) must be an int in the range \[1, inf\), got 0"),
        ("x", r"repeats \(--repeats\) must be an int"),
        (2.5, r"repeats \(--repeats\) must be an int"),
    ):
        with pytest.raises(AuditInputError, match=message):
            sf.audit(scores, systems=["engine"], repeats=bad, **AUDIT)
    with pytest.raises(
        AuditInputError, match=r"repeats=3 .* none is given \(audited: 'engine'\)"
    ):
        sf.audit(scores, systems=["engine"], repeats=3, **AUDIT)


def _write(essays, tmp_path):
    path = tmp_path / "essays.csv"
    essays[["essay_id", "essay", "score", "paraphrase"]].to_csv(path, index=False)
    return path


def _cli(data, tmp_path, *extra):
    return [
        "audit", str(data), "--text-col", "essay", "--score-col", "score",
        "--score-range", "0,24", "--paraphrase-col", "paraphrase",
        "--representations", "tfidf", "--no-features", "--bootstrap", "20", "--quiet",
        "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), *extra,
    ]  # fmt: skip


@pytest.mark.network
def test_cli_repeats_dry_run_and_bad_input(noisy, essays, tmp_path, capsys):
    data = _write(essays, tmp_path)
    scorer = ["--scorer", f"llm={noisy.url}"]
    for bad in ("0", "-2"):
        assert main(_cli(data, tmp_path, *scorer, "--repeats", bad)) == 2
        assert "repeats (--repeats) must be an int" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # argparse's own refusal
        main(_cli(data, tmp_path, *scorer, "--repeats", "x"))
    assert exc.value.code == 2
    assert "--repeats: invalid int value: 'x'" in capsys.readouterr().err
    assert main(_cli(data, tmp_path, "--repeats", "3")) == 2
    assert "no --scorer NAME=SPEC is given" in capsys.readouterr().err
    assert noisy.n_requests == 0 and not (tmp_path / "out").exists()
    dry = _cli(data, tmp_path, *scorer, "--repeats", "3", "--dry-run")
    assert main(dry) == 0
    assert (
        "16 call(s) for the 234 texts the audit would send (60 essays x 3 repeats, 0 edited, 54 paraphrased)"
        in capsys.readouterr().out
    )
    assert main(dry[:-1]) == 0  # the audit itself
    table = pd.read_csv(tmp_path / "out" / "tables" / "retest.csv")
    assert table["system"].tolist() == ["llm"] and table["n_repeats"].iloc[0] == 3
    assert main(dry) == 0
    assert (
        "0 call(s) for the 234 texts the audit would send (60 essays x 3 repeats"
        in capsys.readouterr().out
    )


@pytest.mark.network
def test_prompts_are_pooled_by_essays_and_repeat_pairs(noisy, essays, tmp_path):
    two = essays.assign(prompt=["a"] * 30 + ["b"] * 30)
    res = sf.audit(
        two, scorers={"llm": noisy.url}, repeats=3, prompt_col="prompt",
        cache=tmp_path / "cache", **AUDIT,
    )  # fmt: skip
    retest = res.tables["retest"].set_index("prompt")
    assert list(retest.index) == ["a", "b", "pooled"]
    parts = retest.loc[["a", "b"]]
    pooled = retest.loc["pooled"]
    assert pooled["n_essays"] == 60 and pooled["n_repeat_pairs"] == 180
    assert pooled["share_differ"] == pytest.approx(parts["share_differ"].mean())
    assert pooled["max_spread"] == parts["max_spread"].max()
    assert math.isnan(pooled["qwk_retest"])  # each prompt has its own scale
    share = pooled["n_pairs_differ"] / 180
    assert pooled["retest_violation_share"] == pytest.approx(share)
    lip = res.tables["lipschitz"]
    row = lip[(lip["prompt"] == "pooled") & (lip["system"] == "llm")]
    assert row["retest_violation_share"].iloc[0] == pytest.approx(share)
    html = res.to_html()
    assert html.count("Same essay, different score") >= 2  # one per prompt


@pytest.mark.network
def test_a_failure_on_a_repeat_names_the_scorer_and_a_rerun_resumes(
    noisy, essays, tmp_path
):
    cache = tmp_path / "answers.sqlite"
    scorer = HTTPScorer(noisy.url, cache=cache, max_retries=0, concurrency=1)
    noisy.fail_from = 1 + 4 + 2  # the probe, repeat 1, then half of repeat 2
    with pytest.raises(AuditInputError, match=r"scorer 'llm' could not score the essays "
                       r"\(repeat 2 of 3\).*could not be reached"):  # fmt: skip
        sf.audit(essays, scorers={"llm": scorer}, repeats=3, **AUDIT)
    sent = noisy.n_requests
    noisy.fail_from = None
    sf.audit(essays, scorers={"llm": scorer}, repeats=3, **AUDIT)
    # only what the cache lacks: repeat 2's last 2 batches, repeat 3's 4, and the
    # 4 batches of paraphrases (the first run stopped before that section)
    assert noisy.n_requests - sent == 2 + 4 + 4
