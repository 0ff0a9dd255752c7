"""OpenAIScorer against a real loopback OpenAI-compatible grader.

The grader (tests/openai_server.py) is noisy on purpose: without a seed the
same essay asked twice can get two scores; with a seed it repeats itself.
Its ``grade(essay, seed)`` gives the expected score of each essay, so the
client's scores are checked against the server's own function, and every
request is counted and kept at the server.
"""

from __future__ import annotations

import json
import pickle
import re
import time

import numpy as np
import pytest
from openai_server import OpenAIServer
from sklearn.base import clone
from sklearn.model_selection import cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.scorers import OpenAIScorer, ScorerError, make_scorer_from_spec
from sklearn_fairaes.scorers._base import MAX_REFUSED
from sklearn_fairaes.scorers._openai import parse_reply

TOKEN = "sk-test-5e1f0a77b2"  # the API key no output may hold
RUBRIC = (
    "You grade essays on patience from 0 to 24 {like: this}.\n<essay>\n{essay}\n"
    "</essay>\nEnd with 'Score: <number>'."
)
SEED = 11


@pytest.fixture(scope="module")
def essays(asap7):
    """40 ASAP prompt 7 essays with their human scores."""
    frame = asap7.iloc[:40][["essay_id", "essay", "domain1_score"]].reset_index(drop=True)
    frame = frame.copy()
    frame["score"] = frame["domain1_score"].astype(float)
    return frame


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def _grader(server, tmp_path, **kw):
    params = dict(
        model="grader-7b",
        base_url=server.base_url,
        prompt=RUBRIC,
        cache=tmp_path / "answers.sqlite",
        backoff=0.01,
        concurrency=1,
        seed=SEED,
        score_range=(0, 24),
    )
    return OpenAIScorer(**{**params, **kw})


# -- the parse rule --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Well organised, a few slips.\nScore: 4", 4.0),  # rule 1
        ("score = 3 at first; on reflection\nFinal score: 5", 5.0),  # the last one
        ("**Score:** 5\n\nThe essay uses 3 examples.", 5.0),  # Markdown, other numbers
        ("SCORE:4.5", 4.5),
        ("5", 5.0),  # rule 2: the only number
        ("It deserves a 3, in my view.", 3.0),
        ("The 4th paragraph is weak; overall 2.", 2.0),  # "4th" is no number
        ("<think>maybe 3, maybe 4</think>I settle on 4.", 4.0),  # thinking set aside
        ("I give it 4/6", 4.0),  # a fraction out of the declared maximum
        ("Score: 2 out of 6", 2.0),
        ("Score: -1", -1.0),  # parsed; the scale check refuses it later
    ],
)
def test_parse_rule_reads_the_score(reply, expected):
    assert parse_reply(reply, maximum=6) == expected


@pytest.mark.parametrize(
    ("reply", "maximum", "message"),
    [
        ("I cannot grade this.", 6, r"no score in the reply: 'I cannot grade this.' \(no number\)"),
        ("Between 3 and 4.", 6, r"2 numbers and no 'Score: <number>'"),
        ("Score (0-6): 4", 6, r"3 numbers and no 'Score: <number>'"),
        ("I give it 4/5", 6, r"gives 4/5, out of 5 where the declared scale's maximum is 6"),
        ("Score: 8/10", 6, r"gives 8/10, out of 10"),
        ("I give it 4/6", None, r"a fraction \(4/6\) and no score_range"),
        ("x" * 200, 6, r"no score in the reply: 'x{80}' \(no number\)"),
    ],
)  # fmt: skip
def test_parse_rule_refuses_replies_without_one_score(reply, maximum, message):
    from sklearn_fairaes.scorers._base import BadAnswerError

    with pytest.raises(BadAnswerError, match=message):
        parse_reply(reply, maximum=maximum)


# -- the requests ------------------------------------------------------------------------


@pytest.mark.network
def test_requests_carry_the_rubric_settings_and_token_and_a_rerun_sends_nothing(
    essays, tmp_path, monkeypatch
):
    texts = list(essays["essay"][:8])
    monkeypatch.setenv("LLM_KEY", TOKEN)
    with OpenAIServer(token=TOKEN) as srv:
        grader = _grader(
            srv,
            tmp_path,
            token_env="LLM_KEY",
            temperature=0.3,
            system_prompt="You are a strict grader.",
            max_tokens=64,
            concurrency=3,
        )
        assert grader.n_calls_needed(texts + texts[:2]) == 8
        got = grader.predict(texts)
        assert srv.n_requests == 8
        assert sorted(srv.essays_asked()) == sorted(texts)
        for body, headers in zip(srv.bodies, srv.headers):
            essay = srv.essay_of(body)
            assert body["model"] == "grader-7b"
            assert body["messages"] == [
                {"role": "system", "content": "You are a strict grader."},
                {"role": "user", "content": RUBRIC.replace("{essay}", essay)},
            ]
            assert "{like: this}" in body["messages"][1]["content"]  # other braces kept
            assert body["temperature"] == 0.3 and body["seed"] == SEED
            assert body["max_tokens"] == 64
            assert headers["Authorization"] == f"Bearer {TOKEN}"
        np.testing.assert_array_equal(got, [srv.grade(t, SEED) for t in texts])
        # a new object on the same cache file: nothing sent
        again = _grader(srv, tmp_path, token_env="LLM_KEY", temperature=0.3,
                        system_prompt="You are a strict grader.", max_tokens=64)  # fmt: skip
        np.testing.assert_array_equal(again.predict(texts), got)
        assert srv.n_requests == 8
    for shown in (repr(grader), pickle.dumps(grader), str(grader.get_params())):
        assert TOKEN not in str(shown)
    assert TOKEN.encode() not in (tmp_path / "answers.sqlite").read_bytes()
    assert TOKEN not in grader._cache_spec()


@pytest.mark.network
def test_seed_and_temperature_defaults_are_sent_as_documented(server, essays, tmp_path):
    OpenAIScorer("m", server.base_url + "/", RUBRIC).predict(list(essays["essay"][:1]))
    (body,) = server.bodies
    assert body["temperature"] == 0.0 and "seed" not in body and "max_tokens" not in body
    assert [m["role"] for m in body["messages"]] == ["user"]


@pytest.mark.network
def test_the_noisy_grader_differs_between_calls_unless_seeded(server, essays):
    texts = list(essays["essay"][:20])
    unseeded = OpenAIScorer("m", server.base_url, RUBRIC, concurrency=1)
    first, second = unseeded.predict(texts), unseeded.predict(texts)
    assert server.n_requests == 40  # no cache: every essay asked twice
    assert (first != second).any()
    seeded = OpenAIScorer("m", server.base_url, RUBRIC, seed=3)
    np.testing.assert_array_equal(seeded.predict(texts), seeded.predict(texts))


@pytest.mark.parametrize(
    "change",
    [
        {"prompt": RUBRIC + " Be fair."},
        {"system_prompt": "Be strict."},
        {"temperature": 0.7},
        {"seed": SEED + 1},
        {"max_tokens": 10},
        {"model": "grader-70b"},
    ],
)
@pytest.mark.network
def test_what_changes_the_answers_changes_the_cache_key(server, essays, tmp_path, change):
    texts = list(essays["essay"][:3])
    _grader(server, tmp_path).predict(texts)
    assert _grader(server, tmp_path, **change).n_calls_needed(texts) == 3
    # what does not change the answers keeps them
    same = _grader(server, tmp_path, concurrency=4, timeout=5.0, token_env="UNSET_VAR")
    assert same.n_calls_needed(texts) == 0


# -- failures ------------------------------------------------------------------------------


@pytest.mark.network
def test_429_500_and_late_replies_are_retried(server, essays, tmp_path):
    texts = list(essays["essay"][:3])
    server.plan, server.retry_after, server.late_s = ["429", "500", "late"], "1", 1.5
    started = time.perf_counter()
    got = _grader(server, tmp_path, timeout=0.4).predict(texts)
    assert time.perf_counter() - started >= 1.0  # the 429's Retry-After was waited
    assert server.n_requests == 3 + 3
    np.testing.assert_array_equal(got, [server.grade(t, SEED) for t in texts])


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        ("garbage", r"the answer is not JSON \(it begins b'<html>not json"),
        ("nochoices", r"no choices\[0\]\.message\.content"),
        ("noscore", r"no score in the reply: 'I am unable to grade this essay\.'"),
        ("offscale", r"score 27 is off the scale \[0, 24\]"),
    ],
)
@pytest.mark.network
def test_bad_replies_are_retried_counted_listed_and_refused(
    server, essays, tmp_path, failure, reason
):
    texts = list(essays["essay"][:6])
    server.fail_on = {texts[2]: failure, texts[4]: failure}
    grader = _grader(server, tmp_path, max_retries=2)
    with pytest.raises(ScorerError, match=r"answered unusably for 2 text\(s\)") as info:
        grader.predict(texts)
    err = info.value
    assert sorted(err.refused) == [2, 4] and err.position == 2
    assert all(re.search(reason, why) for why in err.refused.values())
    assert "position 2: " in str(err) and "position 4: " in str(err)
    assert "within its scale [0, 24]" in str(err)
    # 4 good essays answered once, the 2 bad ones 3 times each
    assert server.n_requests == 4 + 2 * 3
    # the good answers are kept: a re-run after the fix asks only for the two
    server.fail_on = {}
    got = _grader(server, tmp_path).predict(texts)
    assert server.essays_asked()[10:] in ([texts[2], texts[4]], [texts[4], texts[2]])
    np.testing.assert_array_equal(got, [server.grade(t, SEED) for t in texts])


@pytest.mark.network
def test_a_broken_grader_is_stopped_after_max_refused(server, essays, tmp_path):
    texts = list(essays["essay"][:30])
    server.always = "noscore"
    with pytest.raises(ScorerError, match=r"no further call was sent \(20 text\(s\)"):
        _grader(server, tmp_path, max_retries=0).predict(texts)
    assert server.n_requests == MAX_REFUSED == 10


@pytest.mark.network
def test_a_cached_answer_off_a_narrower_scale_is_asked_again(server, essays, tmp_path):
    texts = list(essays["essay"][:5])
    wide = _grader(server, tmp_path).predict(texts)
    narrow = (0, int(wide.min()))  # every other essay's cached score is off it
    off = int((wide > narrow[1]).sum())
    assert _grader(server, tmp_path, score_range=narrow).n_calls_needed(texts) == off > 0


@pytest.mark.network
def test_the_token_is_read_at_call_time_and_401_is_not_retried(
    essays, tmp_path, monkeypatch
):
    texts = list(essays["essay"][:2])
    with OpenAIServer(token=TOKEN) as srv:
        grader = _grader(srv, tmp_path, token_env="LLM_KEY")
        with pytest.raises(ScorerError, match=r"'LLM_KEY' \(token_env\) is not set"):
            grader.predict(texts)
        assert srv.n_requests == 0
        monkeypatch.setenv("LLM_KEY", "wrong")
        with pytest.raises(ScorerError, match=r"HTTP 401.*check the token in \$LLM_KEY"):
            grader.predict(texts)
        assert srv.n_requests == 1
        wrong_model = _grader(srv, tmp_path, token_env="LLM_KEY")
        wrong_model.set_params(base_url=srv.base_url.replace("/v1", "/v2"))
        monkeypatch.setenv("LLM_KEY", TOKEN)
        with pytest.raises(ScorerError, match=r"HTTP 404.*chat/completions"):
            wrong_model.predict(texts)


def test_bad_parameters_and_specs_are_refused():
    with pytest.raises(
        ValueError, match=r"holds no \{essay\} placeholder.*begins 'Grade it"
    ):
        OpenAIScorer("m", "http://127.0.0.1:9/v1", "Grade it from 1 to 6.").fit()
    with pytest.raises(ValueError, match=r"base_url holds credentials"):
        OpenAIScorer("m", f"http://u:{TOKEN}@127.0.0.1:9/v1", RUBRIC).fit()
    with pytest.raises(ValueError, match=r"'temperature' parameter of OpenAIScorer"):
        OpenAIScorer("m", "http://127.0.0.1:9/v1", RUBRIC, temperature=3).fit()
    with pytest.raises(ValueError, match=r"score_range must be finite with low < high"):
        OpenAIScorer("m", "http://127.0.0.1:9/v1", RUBRIC, score_range=(6, 1)).fit()
    with pytest.raises(ValueError, match=r"score_range must be \(low, high\)"):
        OpenAIScorer("m", "http://127.0.0.1:9/v1", RUBRIC, score_range=(1, "6")).fit()
    spec = "openai:@cf/meta/llama-3:8b@https://api.example.org/v1"
    grader = make_scorer_from_spec(spec, prompt=RUBRIC)
    assert (grader.model, grader.base_url) == (
        "@cf/meta/llama-3:8b",
        "https://api.example.org/v1",
    )
    assert grader.fit().spec_ == spec
    with pytest.raises(ValueError, match=r"needs a prompt template holding \{essay\}"):
        make_scorer_from_spec("openai:m@http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match=r"is 'openai:MODEL@BASE_URL'"):
        make_scorer_from_spec("openai:m", prompt=RUBRIC)
    with pytest.raises(ValueError, match=r"Invalid parameter 'batch_size'"):
        OpenAIScorer("m", "http://127.0.0.1:9/v1", RUBRIC).set_params(batch_size=2)


# -- scikit-learn --------------------------------------------------------------------------


@pytest.mark.network
def test_the_grader_is_clonable_picklable_and_works_in_sklearn(server, essays, tmp_path):
    texts = list(essays["essay"][:30])
    y = essays["score"][:30].to_numpy()
    grader = _grader(server, tmp_path, concurrency=4)
    expected = np.array([server.grade(t, SEED) for t in texts], dtype=float)
    assert clone(grader).get_params() == grader.get_params()
    restored = pickle.loads(pickle.dumps(grader))
    np.testing.assert_array_equal(restored.predict(texts), expected)
    cv = cross_validate(grader, texts, y, cv=3, scoring="neg_mean_absolute_error")
    want = [-np.mean(np.abs(expected[k * 10 : k * 10 + 10] - y[k * 10 : k * 10 + 10]))
            for k in range(3)]  # fmt: skip
    np.testing.assert_allclose(cv["test_score"], want, atol=1e-12)
    lower = FunctionTransformer(lambda X: [t.lower() for t in X])
    pipe = make_pipeline(lower, clone(grader)).fit(texts, y)
    lowered = [t.lower() for t in texts]
    np.testing.assert_array_equal(
        pipe.predict(texts), [server.grade(t, SEED) for t in lowered]
    )
    table = sf.perturbation_audit(grader, texts[:5], perturbations="typos")
    assert len(table) == 1 and np.isfinite(table["mean_abs_change"]).all()
    err = ScorerError("m", "openai:m@http://x/v1", position=2, refused={2: "score 9"})
    back = pickle.loads(pickle.dumps(err))
    assert (back.scorer, back.position, back.refused) == (err.scorer, 2, {2: "score 9"})


@pytest.mark.network
def test_grader_contract(server, essays, tmp_path):
    """The text-estimator contract (tests/test_contract.py) for the LLM grader."""
    import pandas as pd
    from sklearn.utils import get_tags

    est = _grader(server, tmp_path, concurrency=2)
    tags = get_tags(est)
    assert tags.input_tags.string and not tags.input_tags.two_d_array
    assert not tags.requires_fit  # used as it is: predict needs no fit
    before = est.get_params(deep=False)
    texts = list(essays["essay"][:5])
    kept = list(texts)
    out = est.predict(texts)  # before any fit
    assert out.tolist() == [server.grade(t, SEED) for t in texts]
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
    assert server.n_requests == 5  # everything after the first predict was cached


# -- the audit ------------------------------------------------------------------------------

AUDIT = dict(
    text_col="essay",
    score_col="score",
    score_range=(0, 24),
    representations=["tfidf"],
    features=False,
    paraphrases=False,
    n_bootstrap=50,
)


@pytest.mark.network
def test_audit_takes_a_grader_object(server, essays, tmp_path):
    grader = _grader(server, tmp_path)
    result = sf.audit(essays, scorers={"llm": grader}, cache=tmp_path / "c", **AUDIT)
    assert server.n_requests == 40
    expected = [server.grade(t, SEED) for t in essays["essay"]]
    assert list(result.tables["predictions"]["llm"]) == expected
    agreement = result.tables["agreement"]
    assert set(agreement.loc[agreement["system"] == "llm", "kind"]) == {"fitted"}
    # an object the user made keeps its own (here: no) scale
    grader = _grader(server, tmp_path, score_range=None, cache=None)
    sf.audit(essays, scorers={"llm": grader}, cache=tmp_path / "c", **AUDIT)
    assert grader.score_range is None


def _write(essays, tmp_path):
    path = tmp_path / "essays.csv"
    essays[["essay_id", "essay", "score"]].to_csv(path, index=False)
    rubric = tmp_path / "rubric.txt"
    rubric.write_text(RUBRIC, encoding="utf-8")
    return path, rubric


def _cli(data, tmp_path, server, rubric, *extra):
    return [
        "audit", str(data), "--text-col", "essay", "--score-col", "score",
        "--score-range", "0,24", "--representations", "tfidf",
        "--no-features", "--no-paraphrases", "--bootstrap", "50", "--quiet",
        "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "out"),
        "--scorer", f"llm=openai:grader-7b@{server.base_url}",
        "--scorer-prompt", str(rubric), *extra,
    ]  # fmt: skip


@pytest.mark.network
def test_cli_audit_of_an_llm_grader_end_to_end(essays, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLM_KEY", TOKEN)
    data, rubric = _write(essays, tmp_path)
    with OpenAIServer(token=TOKEN) as srv:
        args = _cli(data, tmp_path, srv, rubric, "--scorer-seed", "5",
                    "--scorer-temperature", "0.2", "--scorer-token-env", "LLM_KEY")  # fmt: skip
        assert main([*args, "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert (
            f"scorer llm (openai:grader-7b@{srv.base_url}): 40 call(s) for the 40 texts "
            f"the audit would send (40 essays" in out
        )
        assert "one text per call" in out and srv.n_requests == 0
        assert main(args) == 0, capsys.readouterr().err
        assert srv.n_requests == 40
        assert {b["seed"] for b in srv.bodies} == {5}
        assert {b["temperature"] for b in srv.bodies} == {0.2}
        assert sorted(srv.essays_asked()) == sorted(essays["essay"])
        results = json.loads((tmp_path / "out" / "results.json").read_text())
        agreement = results["tables"]["agreement"]
        assert any(row["system"] == "llm" for row in agreement)
        for path in (tmp_path / "out").rglob("*"):
            if path.is_file():
                assert TOKEN.encode() not in path.read_bytes(), path
        assert (
            TOKEN.encode()
            not in (tmp_path / "cache" / "scorer_responses.sqlite").read_bytes()
        )
        # a second run: every answer is cached
        (tmp_path / "out2").mkdir()
        args2 = [
            a if a != str(tmp_path / "out") else str(tmp_path / "out2" / "r") for a in args
        ]
        assert main(args2) == 0
        assert srv.n_requests == 40


@pytest.mark.network
def test_cli_off_scale_exits_2_naming_the_essay_and_resumes(
    server, essays, tmp_path, capsys
):
    data, rubric = _write(essays, tmp_path)
    texts = list(essays["essay"])
    server.fail_on = {texts[7]: "offscale", texts[20]: "noscore", texts[30]: "garbage"}
    code = main(_cli(data, tmp_path, server, rubric, "--scorer-seed", "5"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--scorer llm=openai:grader-7b@{server.base_url}" in err
    assert "for 3 of the 40 essays" in err
    assert "data row 8: score 27 is off the scale [0, 24]" in err
    assert "data row 21: no score in the reply: 'I am unable to grade" in err
    assert "data row 31: the answer is not JSON" in err
    assert not (tmp_path / "out").exists()
    # the 37 good answers are kept: the re-run asks for the three only
    server.fail_on = {}
    before = server.n_requests
    assert main(_cli(data, tmp_path, server, rubric, "--scorer-seed", "5")) == 0
    assert sorted(server.essays_asked()[before:]) == sorted(
        [texts[7], texts[20], texts[30]]
    )


@pytest.mark.network
def test_cli_bad_grader_options_exit_2_before_any_call(server, essays, tmp_path, capsys):
    data, rubric = _write(essays, tmp_path)
    args = _cli(data, tmp_path, server, rubric)
    missing = [a if a != str(rubric) else str(tmp_path / "nope.txt") for a in args]
    assert main(missing) == 2
    assert "--scorer-prompt" in capsys.readouterr().err
    no_slot = tmp_path / "no_slot.txt"
    no_slot.write_text("Grade this essay from 0 to 24.", encoding="utf-8")
    assert main([a if a != str(rubric) else str(no_slot) for a in args]) == 2
    assert "holds no {essay} placeholder" in capsys.readouterr().err
    without = args[: args.index("--scorer-prompt")]
    assert main(without) == 2
    assert "needs a prompt template holding {essay}" in capsys.readouterr().err
    http_only = [*without[:-1], f"llm={server.base_url}", "--scorer-seed", "1"]
    assert main(http_only) == 2
    assert "--scorer-seed set(s) the grader of an openai:MODEL@BASE_URL" in (
        capsys.readouterr().err
    )
    assert main([*args, "--scorer-temperature", "5"]) == 2
    assert "'temperature' parameter of OpenAIScorer" in capsys.readouterr().err
    assert server.n_requests == 0 and not (tmp_path / "out").exists()
    # the report folder is replaced on writing: a rubric in it would be lost
    (tmp_path / "report").mkdir()
    kept = tmp_path / "report" / "rubric.txt"
    kept.write_text(RUBRIC, encoding="utf-8")
    inside = [a if a != str(rubric) else str(kept) for a in args]
    inside[inside.index(str(tmp_path / "out"))] = str(tmp_path / "report")
    assert main(inside) == 2
    assert "rubric.txt" in capsys.readouterr().err and kept.read_text() == RUBRIC
    from sklearn_fairaes.report import AuditInputError

    with pytest.raises(AuditInputError, match=r"\['llm'\]: .*needs a prompt template"):
        sf.audit(essays, scorers={"llm": f"openai:m@{server.base_url}"}, **AUDIT)
    assert server.n_requests == 0


# -- the off-scale rule, for every scorer you call ------------------------------------------

WORDS = "python:sklearn_fairaes.scorers._examples:n_words"


def test_the_audit_gives_spec_scorers_the_declared_scale(essays, tmp_path):
    from sklearn_fairaes.report import AuditInputError
    from sklearn_fairaes.report._scorers import declared_scale

    assert declared_scale((0, 24)) == (0.0, 24.0)
    assert declared_scale({"7": (0, 24), "8": [0, 24]}) == (0.0, 24.0)
    assert declared_scale({"7": (0, 24), "8": (0, 60)}) is None  # no one scale
    assert declared_scale((0, "24")) is None and declared_scale(None) is None
    # a word count is no score on 0..24: the probe's essays are refused, named
    lengths = [len(t.split()) for t in essays["essay"][:3]]
    with pytest.raises(AuditInputError, match=r"for 3 of the 3 essays") as info:
        sf.audit(essays, scorers={"words": WORDS}, cache=tmp_path / "c", **AUDIT)
    for row, n in enumerate(lengths, start=1):
        assert f"data row {row}: score {n} is off the scale [0, 24]" in str(info.value)
    # on a scale that holds them, the same scorer passes
    wide = {**AUDIT, "score_range": (0, 900)}
    result = sf.audit(essays, scorers={"words": WORDS}, cache=tmp_path / "c", **wide)
    assert list(result.tables["predictions"]["words"]) == [
        len(t.split()) for t in essays["essay"]
    ]


def test_a_function_scorer_with_a_scale_refuses_and_lists_off_scale_scores():
    from sklearn_fairaes.scorers import FunctionScorer

    texts = ["a b", "c", "d e f g h i j", "k l m n o p q r", "s"]
    scorer = FunctionScorer(WORDS[len("python:") :], batch_size=1, score_range=(1, 6))
    with pytest.raises(
        ScorerError, match=r"for 2 text\(s\) after 1 attempt\(s\) each"
    ) as info:
        scorer.predict(texts)
    assert info.value.refused == {
        2: "score 7 is off the scale [1, 6]",
        3: "score 8 is off the scale [1, 6]",
    }
    assert scorer.set_params(score_range=(1, 8)).predict(texts).tolist() == [2, 1, 7, 8, 1]


@pytest.mark.network
def test_cli_repeats_of_an_unseeded_grader_measure_its_own_answers(
    server, essays, tmp_path, capsys
):
    # No seed: the grader's noise is drawn per request, as a sampling LLM's
    # is, so an essay scored three times can get three scores.
    from sklearn.metrics import cohen_kappa_score

    data, rubric = _write(essays, tmp_path)
    assert main(_cli(data, tmp_path, server, rubric, "--repeats", "3")) == 0, (
        capsys.readouterr().err
    )
    assert server.n_requests == 3 * 40
    # each essay's answers, in the order the server gave them (repeat 0, 1, 2)
    given: dict[str, list[int]] = {}
    for number, body in enumerate(list(server.bodies)):
        essay = server.essay_of(body)
        given.setdefault(essay, []).append(server.grade(essay, None, number))
    scores = np.array([given[t] for t in essays["essay"]], dtype=float)
    assert scores.shape == (40, 3)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    row = next(r for r in results["tables"]["retest"] if r["system"] == "llm")
    differ = np.ptp(scores, axis=1) > 0
    assert 0 < differ.mean() < 1
    assert row["share_differ"] == pytest.approx(differ.mean())
    assert row["max_spread"] == pytest.approx(np.ptp(scores, axis=1).max())
    assert row["qwk_retest"] == pytest.approx(
        cohen_kappa_score(
            scores[:, 0].astype(int),
            scores[:, 1].astype(int),
            labels=list(range(25)),
            weights="quadratic",
        )
    )
    # the distance-0 pairs are in the Lipschitz table: 3 pairs per essay
    pairs = [(0, 1), (0, 2), (1, 2)]
    violated = np.mean([scores[i, a] != scores[i, b] for i in range(40) for a, b in pairs])
    lip = [r for r in results["tables"]["lipschitz"] if r["system"] == "llm"]
    assert lip and all(r["retest_violation_share"] == pytest.approx(violated) for r in lip)
    # a re-run is answered from the cache
    (tmp_path / "again").mkdir()
    args = _cli(data, tmp_path, server, rubric, "--repeats", "3")
    args[args.index("--out") + 1] = str(tmp_path / "again" / "r")
    assert main(args) == 0
    assert server.n_requests == 3 * 40
