"""Scorers you call (sklearn_fairaes.scorers), against a real loopback service.

The service (tests/scoring_server.py) wraps a real model: TF-IDF + Ridge
fitted on 300 ASAP prompt 7 essays at fixture time; the audited essays are
others of that prompt. Every request is counted at the server, so "a re-run
sends nothing" and "a resumed run sends only what is missing" are checked
where the calls arrive, not from the client's own counters.
"""

from __future__ import annotations

import json
import math
import pickle
import re
import time

import numpy as np
import pytest
from scoring_server import ScoringServer
from sklearn.base import clone
from sklearn.model_selection import cross_validate
from sklearn.pipeline import make_pipeline

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.scorers import (
    FunctionScorer,
    HTTPScorer,
    ScorerError,
    make_scorer_from_spec,
)

TOKEN = "s3cret-token-0c1d9a"  # the bearer token no output may hold
N_TRAIN, N_AUDIT = 300, 60


@pytest.fixture(scope="module")
def engine(asap7):
    """A real scoring model trained on ASAP prompt 7 (rows 0..299)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import Ridge

    train = asap7.iloc[:N_TRAIN]
    model = make_pipeline(TfidfVectorizer(min_df=2), Ridge(alpha=1.0))
    return model.fit(list(train["essay"]), train["domain1_score"].astype(float))


@pytest.fixture(scope="module")
def essays(asap7):
    """Essays the engine was not trained on, with their human scores."""
    frame = asap7.iloc[N_TRAIN : N_TRAIN + N_AUDIT][["essay_id", "essay", "domain1_score"]]
    frame = frame.reset_index(drop=True).copy()
    frame["score"] = frame["domain1_score"].astype(float)
    # given paraphrases: the WordNet ones are not under test here
    frame["paraphrase"] = frame["essay"].str.replace(" the ", " that ", regex=False)
    return frame


@pytest.fixture
def server(engine):
    with ScoringServer(engine) as srv:
        yield srv


def _scorer(server, tmp_path, **kw):
    params = dict(cache=tmp_path / "answers.sqlite", backoff=0.01, concurrency=1)
    return HTTPScorer(server.url, **{**params, **kw})


# -- the client: answers, cache, resume, budget ---------------------------------------


@pytest.mark.network
def test_http_scores_equal_the_model_and_a_rerun_sends_nothing(
    server, engine, essays, tmp_path
):
    texts = list(essays["essay"])
    scorer = _scorer(server, tmp_path, batch_size=8, concurrency=4)
    assert (
        scorer.n_calls_needed(texts) == math.ceil(len(texts) / 8) == server.n_requests + 8
    )
    got = scorer.predict(texts)
    np.testing.assert_allclose(got, engine.predict(texts), rtol=0, atol=1e-12)
    assert server.n_requests == 8
    assert sorted(t for r in server.requests for t in r) == sorted(texts)
    # the cache file keeps the answers: a new scorer object sends nothing
    again = _scorer(server, tmp_path, batch_size=8).predict(texts)
    np.testing.assert_array_equal(again, got)
    assert server.n_requests == 8
    assert _scorer(server, tmp_path).n_calls_needed(texts) == 0


@pytest.mark.network
def test_duplicate_texts_are_sent_once(server, essays, tmp_path):
    texts = list(essays["essay"][:3])
    got = _scorer(server, tmp_path, batch_size=10).predict(texts + texts[::-1])
    assert server.requests == [texts]
    np.testing.assert_array_equal(got[:3], got[3:][::-1])


@pytest.mark.network
def test_an_interrupted_run_resumes_sending_only_the_missing(
    server, engine, essays, tmp_path
):
    texts = list(essays["essay"][:40])  # 8 batches of 5
    server.fail_from = 3  # 3 batches answered, then the service breaks
    scorer = _scorer(server, tmp_path, batch_size=5, max_retries=0)
    with pytest.raises(
        ScorerError, match=r"could not be reached after 1 attempt\(s\): HTTP 500"
    ):
        scorer.predict(texts)
    assert server.n_requests == 4  # 3 answered, the 4th failed; nothing after it
    server.fail_from = None
    before = server.n_requests
    got = _scorer(server, tmp_path, batch_size=5).predict(texts)
    resent = [t for r in server.requests[before:] for t in r]
    assert len(server.requests) - before == 5 and sorted(resent) == sorted(texts[15:])
    np.testing.assert_allclose(got, engine.predict(texts), atol=1e-12)


@pytest.mark.network
def test_a_killed_run_resumes_sending_only_the_missing(server, engine, essays, tmp_path):
    """A process killed (SIGKILL) mid-run: the re-run sends only what it lacks."""
    import os
    import subprocess
    import sys

    from sklearn_fairaes.scorers._cache import ResponseCache

    texts = list(essays["essay"][:20])  # 10 batches of 2
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    cache = tmp_path / "answers.sqlite"
    code = (
        "import json, sys; from sklearn_fairaes.scorers import HTTPScorer; "
        "HTTPScorer(sys.argv[1], batch_size=2, concurrency=1, cache=sys.argv[2])"
        ".predict(json.load(open(sys.argv[3])))"
    )
    server.latency = 0.1
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", code, server.url, str(cache), str(tmp_path / "texts.json")],
        env=env,
    )
    deadline = time.monotonic() + 60
    while server.n_requests < 4 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    child.kill()
    child.wait()
    store = ResponseCache(cache)
    kept = len(store)
    store.close()
    assert 6 <= kept < 20  # 3 batches answered at least, not all
    before = server.n_requests
    got = _scorer(server, tmp_path, batch_size=2).predict(texts)
    resent = [t for r in server.requests[before:] for t in r]
    assert len(resent) == 20 - kept and set(resent) <= set(texts)
    assert len(server.requests) - before == (20 - kept) // 2
    np.testing.assert_allclose(got, engine.predict(texts), atol=1e-12)


@pytest.mark.network
def test_max_calls_refused_before_any_call(server, essays, tmp_path):
    texts = list(essays["essay"][:20])
    scorer = _scorer(server, tmp_path, batch_size=4, max_calls=4)
    with pytest.raises(
        ScorerError, match=r"needs 5 call\(s\) for 20 text\(s\).*max_calls=4"
    ):
        scorer.predict(texts)
    assert server.n_requests == 0
    scorer.predict(texts[:8])  # 2 calls of the budget
    with pytest.raises(ScorerError, match=r"\(2 left after 2 sent\); nothing was sent"):
        scorer.predict(texts[8:])
    assert server.n_requests == 2


@pytest.mark.network
def test_retries_recover_from_429_and_500_and_honour_retry_after(
    server, engine, essays, tmp_path
):
    texts = list(essays["essay"][:4])
    server.plan = ["429", "500"]
    server.retry_after = "1"
    started = time.perf_counter()
    got = _scorer(server, tmp_path, batch_size=4, backoff=0.01).predict(texts)
    # the 429's Retry-After (1 s) was waited, the 500's backoff (0.02 s) too
    assert time.perf_counter() - started >= 1.0
    assert server.n_requests == 3
    np.testing.assert_allclose(got, engine.predict(texts), atol=1e-12)


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        ("garbage", r"the answer is not JSON \(it begins b'<html>not json"),
        (
            "count",
            r"answered unusably for texts at positions 0\.\.3 .*3 score\(s\) for 4 text",
        ),
        ("string", r"the text at position 2 .*score '.*' is not a number"),
        ("nan", r"the text at position 2 .*score nan is not finite"),
    ],
)
@pytest.mark.network
def test_a_bad_answer_is_retried_then_refused_naming_scorer_and_position(
    server, essays, tmp_path, failure, message
):
    texts = list(essays["essay"][:4])
    server.always, server.bad_at = failure, 2
    with pytest.raises(ScorerError, match=message) as info:
        _scorer(server, tmp_path, batch_size=4, max_retries=2).predict(texts)
    assert server.n_requests == 3  # two retries
    assert server.url in str(info.value) and info.value.scorer == server.url
    assert info.value.position == (0 if failure in ("garbage", "count") else 2)
    # nothing of the bad answers was kept
    assert _scorer(server, tmp_path).n_calls_needed(texts) == 1


@pytest.mark.network
def test_a_late_answer_times_out_and_is_retried(server, engine, essays, tmp_path):
    texts = list(essays["essay"][:2])
    server.plan, server.late_s = ["late"], 1.5
    got = _scorer(server, tmp_path, timeout=0.3).predict(texts)
    assert server.n_requests == 2
    np.testing.assert_allclose(got, engine.predict(texts), atol=1e-12)
    server.always = "late"
    with pytest.raises(
        ScorerError, match=r"could not be reached after 2 attempt\(s\).*timed out"
    ):
        _scorer(server, tmp_path, timeout=0.3, max_retries=1).predict(texts[::-1] + ["x"])


@pytest.mark.network
def test_an_unreachable_service_is_named(tmp_path):
    with ScoringServer(None) as srv:
        url = srv.url
    scorer = HTTPScorer(url, max_retries=1, backoff=0.01, timeout=2)
    with pytest.raises(
        ScorerError, match=r"could not be reached after 2 attempt\(s\).*URLError"
    ):
        scorer.predict(["an essay"])


@pytest.mark.network
def test_the_token_comes_from_the_environment_and_is_never_kept(
    engine, essays, tmp_path, monkeypatch
):
    texts = list(essays["essay"][:3])
    with ScoringServer(engine, token=TOKEN) as srv:
        scorer = _scorer(srv, tmp_path, token_env="ENGINE_TOKEN")
        with pytest.raises(ScorerError, match=r"'ENGINE_TOKEN' \(token_env\) is not set"):
            scorer.predict(texts)
        assert srv.n_requests == 0
        monkeypatch.setenv("ENGINE_TOKEN", "wrong")
        with pytest.raises(
            ScorerError, match=r"HTTP 401.*check the token in \$ENGINE_TOKEN"
        ):
            scorer.predict(texts)
        assert srv.n_requests == 1  # a 401 is not retried
        monkeypatch.setenv("ENGINE_TOKEN", TOKEN)
        scorer.predict(texts)
        assert srv.headers[-1]["Authorization"] == f"Bearer {TOKEN}"
    for shown in (repr(scorer), pickle.dumps(scorer), str(scorer.get_params())):
        assert TOKEN not in str(shown)
    assert TOKEN.encode() not in (tmp_path / "answers.sqlite").read_bytes()
    with pytest.raises(ValueError, match=r"holds credentials.*token_env"):
        HTTPScorer(f"http://user:{TOKEN}@127.0.0.1:1/score").fit()


# -- scikit-learn ----------------------------------------------------------------------


@pytest.mark.network
def test_scorers_are_clonable_picklable_and_work_in_sklearn(
    server, engine, essays, tmp_path
):
    texts = list(essays["essay"][:30])
    y = essays["score"][:30].to_numpy()
    scorer = _scorer(server, tmp_path, batch_size=10)
    assert clone(scorer).get_params() == scorer.get_params()
    restored = pickle.loads(pickle.dumps(scorer))
    np.testing.assert_allclose(restored.predict(texts), engine.predict(texts), atol=1e-12)
    # cross_validate clones and "fits" it on each fold: the scores are the engine's
    cv = cross_validate(scorer, texts, y, cv=3, scoring="neg_mean_absolute_error")
    pred = engine.predict(texts)
    expected = [-np.mean(np.abs(pred[k * 10 : k * 10 + 10] - y[k * 10 : k * 10 + 10]))
                for k in range(3)]  # fmt: skip
    np.testing.assert_allclose(cv["test_score"], expected, atol=1e-9)
    # the last step of a Pipeline: fit passes through, predict calls the service
    from sklearn.preprocessing import FunctionTransformer

    lower = FunctionTransformer(lambda X: [t.lower() for t in X])
    pipe = make_pipeline(lower, clone(scorer)).fit(texts, y)
    lowered = [t.lower() for t in texts]
    np.testing.assert_allclose(pipe.predict(texts), engine.predict(lowered), atol=1e-12)
    # the counterfactual audit of one estimator
    table = sf.perturbation_audit(scorer, texts[:10], perturbations="typos")
    direct = sf.perturbation_audit(engine, texts[:10], perturbations="typos")
    np.testing.assert_allclose(
        table["mean_abs_change"], direct["mean_abs_change"], atol=1e-12
    )


@pytest.mark.network
@pytest.mark.parametrize("kind", ["function", "http"])
def test_scorer_contract(kind, server, essays, tmp_path):
    """The text-estimator contract (tests/test_contract.py) for a regressor."""
    import pandas as pd
    from sklearn.utils import get_tags

    if kind == "function":
        est = FunctionScorer("sklearn_fairaes.scorers._examples:n_words", batch_size=2)
    else:
        est = _scorer(server, tmp_path, batch_size=2)
    tags = get_tags(est)
    assert tags.input_tags.string and not tags.input_tags.two_d_array
    assert not tags.requires_fit  # used as it is: predict needs no fit
    before = est.get_params(deep=False)
    texts = list(essays["essay"][:5])
    kept = list(texts)
    out = est.predict(texts)  # before any fit
    assert est.fit(texts, np.arange(5.0)) is est and texts == kept
    assert est.get_params(deep=False) == before == clone(est).get_params(deep=False)
    np.testing.assert_array_equal(est.predict(texts), out)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict(texts), out)
    containers = (tuple(texts), np.array(texts, dtype=object), np.array(texts),
                  pd.Series(texts, index=range(7, 12)))  # fmt: skip
    for container in containers:
        np.testing.assert_array_equal(est.predict(container), out)
    assert est.predict([]).shape == (0,)
    with pytest.raises(ValueError, match=r"the text at position 2 is NoneType"):
        est.predict(["a", "b", None])
    with pytest.raises(ValueError, match=r"scores a list of texts, got str"):
        est.predict("one essay")


def test_function_scorer_and_specs():
    fn = "sklearn_fairaes.scorers._examples:n_words"
    scorer = make_scorer_from_spec(f"python:{fn}", batch_size=2, concurrency=3)
    assert isinstance(scorer, FunctionScorer) and scorer.function == fn
    texts = ["a b", "c", "d e f", "g h i j", ""]
    assert scorer.predict(texts).tolist() == [2.0, 1.0, 3.0, 4.0, 0.0]
    assert make_scorer_from_spec(" https://x.example/s ").url == "https://x.example/s"
    with pytest.raises(ValueError, match=r"is not one of 'python:package.module:function'"):
        make_scorer_from_spec("ftp://x")
    with pytest.raises(ValueError, match=r"cannot import module 'no_such_mod_xyz'"):
        FunctionScorer("no_such_mod_xyz:f").predict(["a"])
    with pytest.raises(ValueError, match=r"has no 'nope'; check the name after the colon"):
        FunctionScorer("sklearn_fairaes.scorers._examples:nope").predict(["a"])
    with pytest.raises(
        ValueError, match=r"must be 'package.module:function', got 'n_words'"
    ):
        FunctionScorer("n_words").fit()
    with pytest.raises(ValueError, match=r"the text at position 1 is int, not a string"):
        scorer.predict(["a", 3])


# -- the audit -------------------------------------------------------------------------

AUDIT = dict(
    text_col="essay",
    score_col="score",
    score_range=(0, 24),
    paraphrases="paraphrase",
    representations=["tfidf"],
    perturbations="typos",
    n_perturbation_essays=20,
    n_bootstrap=50,
)


@pytest.mark.network
def test_audit_with_a_scorer_equals_the_same_model_given_as_fitted(
    server, engine, essays, tmp_path, monkeypatch
):
    monkeypatch.setenv("ENGINE_TOKEN", TOKEN)
    server.token = TOKEN
    cache = tmp_path / "cache"
    scorer = HTTPScorer(server.url, token_env="ENGINE_TOKEN", cache=cache / "a.sqlite")
    by_call = sf.audit(essays, scorers={"engine": scorer}, cache=cache, **AUDIT)
    by_model = sf.audit(
        essays, models={"engine": engine}, refit=False, cache=cache, **AUDIT
    )
    got, want = by_call.tables["perturbation"], by_model.tables["perturbation"]
    assert len(got) == 1 and got["n_essays"].iloc[0] == 20
    assert got.equals(want)
    assert by_call.tables["predictions"].equals(by_model.tables["predictions"])
    agreement = by_call.tables["agreement"]
    assert set(agreement.loc[agreement["system"] == "engine", "kind"]) == {"fitted"}
    sent = server.n_requests
    assert sent > 0
    # a second audit: every answer is in the cache
    again = sf.audit(essays, scorers={"engine": scorer}, cache=cache, **AUDIT)
    assert server.n_requests == sent
    assert again.tables["perturbation"].equals(got)
    # the token is in no output
    out = tmp_path / "report"
    by_call.save(out)
    for path in out.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    assert "ENGINE_TOKEN" in json.dumps(by_call.meta, default=str)  # its name is shown


@pytest.mark.network
def test_audit_spec_scorers_keep_answers_in_the_cache_folder(server, essays, tmp_path):
    cache = tmp_path / "cache"
    sf.audit(essays, scorers={"engine": server.url}, cache=cache, **AUDIT)
    assert (cache / "scorer_responses.sqlite").is_file()
    sent = server.n_requests
    sf.audit(essays, scorers={"engine": server.url}, cache=cache, **AUDIT)
    assert server.n_requests == sent


def _write(essays, tmp_path):
    path = tmp_path / "essays.csv"
    essays[["essay_id", "essay", "score", "paraphrase"]].to_csv(path, index=False)
    return path


def _cli(data, tmp_path, *extra):
    return [
        "audit", str(data), "--text-col", "essay", "--score-col", "score",
        "--score-range", "0,24", "--paraphrase-col", "paraphrase",
        "--representations", "tfidf", "--perturbations", "typos",
        "--n-perturbation-essays", "20", "--bootstrap", "50", "--quiet",
        "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), *extra,
    ]  # fmt: skip


@pytest.mark.network
def test_cli_garbage_is_exit_2_naming_the_scorer_before_the_long_work(
    server, essays, tmp_path, capsys
):
    data = _write(essays, tmp_path)
    server.always = "garbage"
    code = main(
        _cli(data, tmp_path, "--scorer", f"engine={server.url}", "--max-calls", "50")
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--scorer engine={server.url}" in err and "not JSON" in err
    assert "data row 1" in err  # the probe's first essay
    assert server.n_requests == 5  # the probe's one batch, and its 4 retries
    assert not (tmp_path / "out").exists()


@pytest.mark.network
def test_cli_dry_run_counts_and_sends_nothing(server, essays, tmp_path, capsys):
    data = _write(essays, tmp_path)
    args = _cli(data, tmp_path, "--scorer", f"engine={server.url}", "--dry-run")
    assert main(args) == 0
    out = capsys.readouterr().out
    # the essays, the typos edits of the 20 drawn (and the 2 probed), the paraphrases differing
    # from their essay, in batches of 16
    n_para = int((essays["paraphrase"] != essays["essay"]).sum())
    found = re.search(
        rf"scorer engine \({re.escape(server.url)}\): (\d+) call\(s\) for the (\d+) "
        rf"texts the audit would send \(60 essays, (\d+) edited, {n_para} paraphrased\)",
        out,
    )
    assert found, out
    calls, n_texts, n_edited = map(int, found.groups())
    assert 0 < n_edited <= 22 and n_texts == 60 + n_edited + n_para
    assert calls == math.ceil(n_texts / 16)
    assert server.n_requests == 0 and not (tmp_path / "out").exists()
    # the real run sends them all; then the dry run again: nothing left to send
    assert main(args[:-1]) == 0
    assert len({t for batch in server.requests for t in batch}) == n_texts
    assert main(args) == 0
    assert f"0 call(s) for the {n_texts} texts" in capsys.readouterr().out


@pytest.mark.network
def test_cli_scorer_equals_model_file(server, engine, essays, tmp_path):
    import joblib

    data = _write(essays, tmp_path)
    model = tmp_path / "engine.joblib"
    joblib.dump(engine, model)
    runs = {}
    for how, extra in (("scorer", ["--scorer", f"engine={server.url}"]),
                       ("model", ["--model-file", f"engine={model}"])):  # fmt: skip
        folder = tmp_path / how
        folder.mkdir()
        assert main(_cli(data, folder, *extra)) == 0
        runs[how] = json.loads((folder / "out" / "results.json").read_text())
    got = runs["scorer"]["tables"]["perturbation"]
    assert got == runs["model"]["tables"]["perturbation"] and got


@pytest.mark.network
def test_bad_scorers_are_refused_before_any_work(server, essays, tmp_path, capsys):
    from sklearn_fairaes.report import AuditInputError

    with pytest.raises(AuditInputError, match=r"scorers must be a non-empty dict"):
        sf.audit(essays, scorers={}, **AUDIT)
    with pytest.raises(
        AuditInputError, match=r"scorers\['engine'\]: scorer spec 'ftp://x'"
    ):
        sf.audit(essays, scorers={"engine": "ftp://x"}, **AUDIT)
    with pytest.raises(AuditInputError, match=r"scorers and models both name \['engine'\]"):
        sf.audit(essays, scorers={"engine": server.url}, models={"engine": object()},
                 refit=False, **AUDIT)  # fmt: skip
    data = _write(essays, tmp_path)
    assert main(_cli(data, tmp_path, "--scorer", "engine")) == 2
    assert "--scorer takes NAME=SPEC" in capsys.readouterr().err
    assert main(_cli(data, tmp_path, "--scorer", "e=http://u:p@127.0.0.1:1/s")) == 2
    assert "holds credentials" in capsys.readouterr().err
    assert main(_cli(data, tmp_path, "--dry-run")) == 2
    assert "--dry-run counts the calls of --scorer" in capsys.readouterr().err
    assert server.n_requests == 0 and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "params, message",
    [
        ({"timeout": 0}, "timeout must be above 0"),
        ({"timeout": -1}, "'timeout' parameter of HTTPScorer must be a float in the range"),
        ({"concurrency": 0}, "'concurrency' parameter of HTTPScorer must be an int"),
        ({"batch_size": True}, "'batch_size' parameter of HTTPScorer must be an int"),
    ],
)
def test_bad_parameters_are_refused_at_fit(params, message):
    with pytest.raises(ValueError, match=message):
        sf.HTTPScorer("http://127.0.0.1:9", **params).fit()
