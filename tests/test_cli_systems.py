"""``fairaes audit`` with the user's own systems, scales, prompts and references.

Issue 16: each option maps onto one parameter of ``audit()``; every bad input
exits 2 before any work, naming the file, row, column or prompt, and leaves no
report folder. The option parsers are tested on their own, the mapping onto
``audit()`` with a recording stub, and each option once end to end on a few
demo essays (TF-IDF or BOW only, two folds).
"""

from __future__ import annotations

import json
import pickle
import re

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import Ridge
from sklearn.metrics import cohen_kappa_score
from sklearn.pipeline import make_pipeline

import sklearn_fairaes as sf
import sklearn_fairaes.report as report_pkg
from sklearn_fairaes.cli import (
    BadInput,
    load_model_file,
    main,
    parse_prompts,
    parse_score_range,
    parse_systems,
)

FAST = ["--representations", "bow", "--cv", "2", "--quiet"]


def _essays(n: int = 24, seed: int = 0) -> pd.DataFrame:
    """Demo essays with an engine's scores (human +- 1 on the 0-12 scale) and two prompts."""
    demo = sf.load_demo_essays().iloc[:n].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    frame = demo[["essay_id", "essay", "score"]].copy()
    frame["engine"] = np.clip(frame["score"] + rng.integers(-1, 2, n), 0, 12)
    frame["prompt"] = np.where(np.arange(n) % 2 == 0, "p1", "p2")
    return frame


def _write(frame: pd.DataFrame, path):
    frame.to_csv(path, index=False)
    return path


def _args(data, out, *extra):
    return [
        "audit",
        str(data),
        "--text-col",
        "essay",
        "--score-col",
        "score",
        "--out",
        str(out),
        *map(str, extra),
    ]


@pytest.fixture
def recorded(monkeypatch):
    """audit() records its keyword arguments and stops (the mapping is under test)."""
    calls: list[dict] = []

    class Stop(Exception):
        pass

    def fake(frame, **kwargs):
        calls.append(kwargs)
        raise Stop

    monkeypatch.setattr(report_pkg, "audit", fake)

    def run(tmp_path, *extra):
        data = _write(_essays(), tmp_path / "essays.csv")
        # the stub's exception is an internal error (exit 1) after the call
        code = main(_args(data, tmp_path / "out", *extra))
        assert code == 1 and len(calls) == 1
        return calls[0]

    return run


@pytest.fixture
def no_compute(monkeypatch):
    """Make any call of audit() fail the test: the CLI's own checks come first."""

    def forbidden(*args, **kwargs):
        raise AssertionError("audit() ran although an option was bad")

    monkeypatch.setattr(report_pkg, "audit", forbidden)


def _refused(capsys, tmp_path, args, fragment):
    """Exit 2, the message on stderr, no report folder."""
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert fragment in err, err
    assert not (tmp_path / "out").exists()
    return err


# -- the option parsers ---------------------------------------------------------


def test_parse_systems_columns_and_names():
    assert parse_systems(None) is None
    assert parse_systems("engine_v3,gpt4o") == {"engine_v3": "engine_v3", "gpt4o": "gpt4o"}
    assert parse_systems(" v3 = engine_v3 , gpt4o ,") == {
        "v3": "engine_v3",
        "gpt4o": "gpt4o",
    }


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (",", "--system-cols names no columns"),
        ("=engine", "entry '=engine' has an empty name"),
        ("engine=", "entry 'engine=' has an empty column"),
        ("a=x,a=y", "names the system 'a' twice"),
    ],
)
def test_parse_systems_refusals(value, match):
    with pytest.raises(BadInput, match=match):
        parse_systems(value)


def test_parse_score_range_pair_and_table(tmp_path):
    assert parse_score_range(None) is None
    assert parse_score_range("0,6") == (0.0, 6.0)
    assert parse_score_range(" 2 , 12 ") == (2.0, 12.0)
    table = tmp_path / "scales.csv"
    table.write_text("prompt,low,high\n1,2,12\n 7 ,0,24\n")
    assert parse_score_range(str(table)) == {"1": (2.0, 12.0), "7": (0.0, 24.0)}
    tsv = tmp_path / "scales.tsv"
    tsv.write_text("Prompt\tLow\tHigh\np1\t0\t3\n")
    assert parse_score_range(str(tsv)) == {"p1": (0.0, 3.0)}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (None, "--score-range must be two numbers low,high"),
        ("prompt,lo,hi\n1,0,6\n", "needs the columns prompt, low and high"),
        ("prompt,low,high\n1,0,6\n2,zero,6\n", "data row 2 (prompt '2') holds 'zero'"),
        ("prompt,low,high\n1,0,6\n1 ,0,6\n", "prompt '1' is in data rows 1 and 2"),
        ("prompt,low,high\n,0,6\n", "data row 1 has no prompt id"),
    ],
)
def test_parse_score_range_refusals(tmp_path, text, match):
    if text is None:
        for bad in ("0-6", "0,6,7", "low,high"):
            with pytest.raises(BadInput, match=match):
                parse_score_range(bad)
        with pytest.raises(BadInput, match=r"--score-range scales.csv: no such file"):
            parse_score_range("scales.csv")
        return
    table = tmp_path / "scales.csv"
    table.write_text(text)
    with pytest.raises(BadInput, match=match.replace("(", r"\(").replace(")", r"\)")):
        parse_score_range(str(table))


def test_parse_prompts_folder_and_table(tmp_path):
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "1.txt").write_text("Describe a hero.\n", encoding="utf-8")
    (folder / "2.txt").write_text("\ufeffArgue for longer holidays.", encoding="utf-8")
    (folder / "notes.md").write_text("not a prompt")
    assert parse_prompts(folder) == {
        "1": "Describe a hero.",
        "2": "Argue for longer holidays.",
    }
    table = tmp_path / "prompts.tsv"
    table.write_text("prompt\ttext\np1\tDescribe a hero.\np2\tArgue.\n")
    assert parse_prompts(table) == {"p1": "Describe a hero.", "p2": "Argue."}


def test_parse_prompts_refusals(tmp_path):
    with pytest.raises(BadInput, match=r"--prompts .*nowhere: no such file or folder"):
        parse_prompts(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BadInput, match=r"holds no \.txt files; give one <prompt id>\.txt"):
        parse_prompts(empty)
    (empty / "3.txt").write_text("  \n")
    with pytest.raises(BadInput, match=r"3\.txt: the prompt file is empty"):
        parse_prompts(empty)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,prompt_text\n1,x\n")
    with pytest.raises(BadInput, match=r"needs the columns prompt and text"):
        parse_prompts(bad)
    bad.write_text("prompt,text\n1,x\n2,\n")
    with pytest.raises(BadInput, match=r"data row 2 \(prompt '2'\) has no text"):
        parse_prompts(bad)
    bad.write_text("prompt,text\n1,x\n1,y\n")
    with pytest.raises(BadInput, match=r"prompt '1' is in data rows 1 and 2"):
        parse_prompts(bad)


def _fitted_pipeline():
    frame = _essays()
    return make_pipeline(sf.TfidfEssayVectorizer(), Ridge()).fit(
        frame["essay"].tolist(), frame["score"].to_numpy(dtype=float)
    )


def test_load_model_file_joblib_and_pickle(tmp_path):
    model = _fitted_pipeline()
    joblib.dump(model, tmp_path / "m.joblib")
    with open(tmp_path / "m.pkl", "wb") as fh:
        pickle.dump(model, fh)
    texts = _essays()["essay"].tolist()[:5]
    for file in ("m.joblib", "m.pkl"):
        name, loaded = load_model_file(f"mine={tmp_path / file}")
        assert name == "mine"
        np.testing.assert_array_equal(loaded.predict(texts), model.predict(texts))


def test_load_model_file_refusals(tmp_path):
    with pytest.raises(
        BadInput, match=r"--model-file takes NAME=PATH .*got 'model\.joblib'"
    ):
        load_model_file("model.joblib")
    with pytest.raises(BadInput, match=r"--model-file m=.*missing\.joblib: no such file"):
        load_model_file(f"m={tmp_path / 'missing.joblib'}")
    garbage = tmp_path / "garbage.joblib"
    garbage.write_bytes(b"this is not a pickle")
    with pytest.raises(
        BadInput, match=r"garbage\.joblib: cannot load the model of --model-file m \("
    ):
        load_model_file(f"m={garbage}")
    cases = {
        "dict.joblib": (
            {"weights": [1, 2]},
            r"is not a fitted estimator with predict: .*dict",
        ),
        "unfitted.joblib": (
            Ridge(),
            r"is not a fitted estimator with predict: .*not fitted",
        ),
        "class.joblib": (Ridge, r"is not a fitted estimator .*the class Ridge"),
    }
    for file, (obj, match) in cases.items():
        joblib.dump(obj, tmp_path / file)
        with pytest.raises(BadInput, match=re.escape(file) + rf": --model-file m {match}"):
            load_model_file(f"m={tmp_path / file}")


def test_help_says_loading_a_pickle_runs_code(capsys):
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Loading a pickle runs code from the file: give only files you trust" in text
    assert "--system-cols engine --score-range 0,6" in text


# -- options -> audit() parameters ------------------------------------------------


def test_defaults_leave_the_choice_of_models_to_audit(tmp_path, recorded):
    kw = recorded(tmp_path, *FAST)
    assert kw["models"] is None  # audit(): baselines unless systems are given
    assert "refit" not in kw
    for name in ("systems", "score_range", "prompt_col", "prompts", "reference_col"):
        assert kw[name] is None, name
    assert kw["reference_sep"] is None


def test_the_command_lets_the_audit_tune_its_own_interpreter(tmp_path, recorded):
    # the library leaves the interpreter alone by default; the command owns
    # its process and keeps the Ctrl-C guard and the shorter switch interval
    assert recorded(tmp_path, *FAST)["tune_interpreter"] is True


def test_systems_scale_prompts_and_references_map_onto_audit(tmp_path, recorded):
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "p1.txt").write_text("Prompt one.")
    (folder / "p2.txt").write_text("Prompt two.")
    # a text for a prompt the data does not have is passed on (and ignored there)
    (folder / "p3.txt").write_text("Prompt three.")
    kw = recorded(
        tmp_path,
        *FAST,
        "--system-cols",
        "engine,v2=score",
        "--score-range",
        "0,12",
        "--prompt-col",
        "prompt",
        "--prompts",
        folder,
        "--reference-col",
        "essay_id",
        "--reference-sep",
        "||",
        "--models",
        "ridge",
    )
    assert kw["systems"] == {"engine": "engine", "v2": "score"}
    assert kw["score_range"] == (0.0, 12.0)
    assert kw["prompt_col"] == "prompt"
    assert kw["prompts"] == {
        "p1": "Prompt one.",
        "p2": "Prompt two.",
        "p3": "Prompt three.",
    }
    assert (kw["reference_col"], kw["reference_sep"]) == ("essay_id", "||")
    assert kw["models"] == ["ridge"] and "refit" not in kw


def test_per_prompt_scale_file_maps_to_a_dict(tmp_path, recorded):
    scales = tmp_path / "scales.csv"
    scales.write_text("prompt,low,high\np1,0,12\n")
    kw = recorded(tmp_path, *FAST, "--prompt-col", "prompt", "--score-range", scales)
    assert kw["score_range"] == {"p1": (0.0, 12.0)}  # p2 is inferred by audit()


def test_model_files_are_fitted_and_named_baselines_trained(tmp_path, recorded):
    joblib.dump(_fitted_pipeline(), tmp_path / "m.joblib")
    kw = recorded(tmp_path, *FAST, "--model-file", f"mine={tmp_path / 'm.joblib'}")
    assert list(kw["models"]) == ["mine"] and kw["refit"] is False
    assert hasattr(kw["models"]["mine"], "predict")


def test_model_files_beside_trained_baselines(tmp_path, monkeypatch):
    calls = []

    def fake(frame, **kwargs):
        calls.append(kwargs)
        raise KeyError("stop")

    monkeypatch.setattr(report_pkg, "audit", fake)
    joblib.dump(_fitted_pipeline(), tmp_path / "m.joblib")
    joblib.dump(DummyRegressor().fit([[0]], [1]), tmp_path / "d.joblib")
    data = _write(_essays(), tmp_path / "essays.csv")
    args = _args(data, tmp_path / "out", *FAST, "--models", "ridge,random_forest")
    args += ["--model-file", f"mine={tmp_path / 'm.joblib'}"]
    args += ["--model-file", f"dummy={tmp_path / 'd.joblib'}"]
    assert main(args) == 1
    kw = calls[0]
    assert (
        kw["models"]["ridge"] == "ridge"
        and kw["models"]["random_forest"] == "random_forest"
    )
    assert set(kw["models"]) == {"ridge", "random_forest", "mine", "dummy"}
    assert kw["refit"] == ["ridge", "random_forest"]
    # --models "" with a model file: the model file only
    calls.clear()
    args = _args(data, tmp_path / "out", *FAST, "--models", "")
    args += ["--model-file", f"mine={tmp_path / 'm.joblib'}"]
    assert main(args) == 1
    assert list(calls[0]["models"]) == ["mine"] and calls[0]["refit"] is False


# -- refusals by the command line itself, before audit() --------------------------


def test_cli_refusals_come_before_the_audit(tmp_path, capsys, no_compute):
    data = _write(_essays(), tmp_path / "essays.csv")
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "p1.txt").write_text("Prompt one.")
    scales = tmp_path / "scales.csv"
    scales.write_text("prompt,low,high\np1,0,12\np9,0,6\n")
    joblib.dump(_fitted_pipeline(), tmp_path / "m.joblib")
    garbage = tmp_path / "bad.joblib"
    garbage.write_bytes(b"\x80\x04not really")
    cases = [
        (
            ["--prompts", folder],
            "--prompts " + str(folder) + " gives a value per prompt, "
            "which needs --prompt-col",
        ),
        (
            ["--prompt-col", "prompt", "--prompts", folder],
            "no prompt text for prompt 'p2' of column 'prompt'",
        ),
        (
            ["--prompt-col", "prompt", "--score-range", scales],
            "prompt 'p9' is not a prompt id of column 'prompt' (its ids: 'p1', 'p2')",
        ),
        (["--score-range", scales], "which needs --prompt-col"),
        (["--score-range", "0..6"], "--score-range must be two numbers low,high"),
        (["--reference-sep", "||"], "--reference-sep splits the cells of --reference-col"),
        (
            [
                "--prompt-file",
                folder / "p1.txt",
                "--prompt-col",
                "prompt",
                "--prompts",
                folder,
            ],
            "give either --prompt-file (one prompt for every essay) or --prompts",
        ),
        (
            ["--system-cols", "engine", "--model-file", f"engine={tmp_path / 'm.joblib'}"],
            "--model-file engine=... has the name of a system in --system-cols",
        ),
        (
            ["--models", "ridge", "--model-file", f"ridge={tmp_path / 'm.joblib'}"],
            "has the name of a system in --models",
        ),
        (
            [
                "--model-file",
                f"m={tmp_path / 'm.joblib'}",
                "--model-file",
                f"m={tmp_path / 'm.joblib'}",
            ],
            "--model-file names the system 'm' twice",
        ),
        (["--model-file", f"m={garbage}"], "bad.joblib: cannot load the model"),
        (["--system-cols", "a=x,a=y"], "names the system 'a' twice"),
    ]
    for extra, fragment in cases:
        _refused(capsys, tmp_path, _args(data, tmp_path / "out", *FAST, *extra), fragment)


def test_out_may_not_overwrite_a_model_or_scale_file(tmp_path, capsys, no_compute):
    data = _write(_essays(), tmp_path / "essays.csv")
    joblib.dump(_fitted_pipeline(), tmp_path / "m.joblib")
    code = main(
        [
            *_args(data, tmp_path / "m.joblib", *FAST, "--force"),
            "--model-file",
            f"m={tmp_path / 'm.joblib'}",
        ]
    )
    assert code == 2
    assert "m.joblib" in capsys.readouterr().err
    assert (tmp_path / "m.joblib").is_file()


# -- end to end on a few essays ----------------------------------------------------


def _tables(out):
    return {
        p.stem: pd.read_csv(p, dtype={"prompt": str})
        for p in (out / "tables").glob("*.csv")
    }


def test_given_scores_on_a_declared_scale_end_to_end(tmp_path, capsys):
    frame = _essays(30)
    data = _write(frame, tmp_path / "essays.csv")
    out = tmp_path / "out"
    code = main(_args(data, out, *FAST, "--system-cols", "engine", "--score-range", "0,12"))
    assert code == 0, capsys.readouterr().err
    agreement = _tables(out)["agreement"]
    # given scores only: no baseline was trained
    assert agreement["system"].tolist() == ["engine"]
    row = agreement.iloc[0]
    expected = cohen_kappa_score(
        frame["score"], frame["engine"], labels=np.arange(0, 13), weights="quadratic"
    )
    assert row["qwk"] == pytest.approx(expected, abs=1e-12)
    assert row["n_outside_scale"] == 0
    meta = json.loads((out / "results.json").read_text())["meta"]
    assert meta["score_range"] == [0, 12] and meta["score_range_source"] == "declared"
    assert meta["systems"]["engine"]["kind"] == "given"


def test_prompts_scales_and_a_model_file_end_to_end(tmp_path, capsys):
    frame = _essays(32)
    # p2's scale is inferred from its human scores: the engine's must lie on it
    p2 = frame["prompt"] == "p2"
    low, high = frame.loc[p2, "score"].min(), frame.loc[p2, "score"].max()
    frame.loc[p2, "engine"] = frame.loc[p2, "engine"].clip(low, high)
    data = _write(frame, tmp_path / "essays.csv")
    folder = tmp_path / "prompts"
    folder.mkdir()
    for p in ("p1", "p2"):
        (folder / f"{p}.txt").write_text(f"Write an essay for prompt {p}.")
    scales = tmp_path / "scales.tsv"
    scales.write_text("prompt\tlow\thigh\np1\t0\t12\n")
    model = _fitted_pipeline()
    joblib.dump(model, tmp_path / "model.joblib")
    out = tmp_path / "out"
    args = _args(data, out, *FAST, "--prompt-col", "prompt", "--prompts", folder)
    args += ["--score-range", str(scales), "--system-cols", "engine"]
    args += ["--model-file", f"mine={tmp_path / 'model.joblib'}", "--id-col", "essay_id"]
    code = main(args)
    assert code == 0, capsys.readouterr().err
    tables = _tables(out)
    agreement = tables["agreement"]
    assert set(agreement["prompt"]) == {"p1", "p2", "pooled"}
    assert set(agreement["system"]) == {"engine", "mine"}
    meta = json.loads((out / "results.json").read_text())["meta"]
    assert meta["score_ranges"]["p1"] == [0, 12, "declared"]
    assert meta["score_ranges"]["p2"][2] == "inferred"
    assert meta["systems"]["mine"]["kind"] == "fitted"
    # the fitted model is used as it is: its predictions, unchanged
    predictions = tables["predictions"]
    by_id = dict(zip(frame["essay_id"].astype(str), model.predict(frame["essay"].tolist())))
    got = dict(zip(predictions["id"].astype(str), predictions["mine"]))
    assert got.keys() == by_id.keys()
    np.testing.assert_allclose([got[k] for k in by_id], list(by_id.values()), rtol=1e-12)
    # each prompt's QWK on its own scale, from its own rows
    for p, labels in (("p1", np.arange(0, 13)), ("p2", None)):
        rows = frame[frame["prompt"] == p]
        if labels is None:
            labels = np.arange(rows["score"].min(), rows["score"].max() + 1)
        expected = cohen_kappa_score(
            rows["score"], rows["engine"], labels=labels, weights="quadratic"
        )
        got_qwk = agreement.loc[
            (agreement["prompt"] == p) & (agreement["system"] == "engine"), "qwk"
        ]
        assert got_qwk.item() == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("change", "extra", "fragment"),
    [
        (
            lambda f: f.assign(engine=f["engine"].astype(object).where(f.index != 4, "")),
            ["--system-cols", "engine"],
            "'engine'",
        ),
        (
            lambda f: f.assign(
                engine=f["engine"].astype(object).where(f.index != 4, "high")
            ),
            ["--system-cols", "engine"],
            "data row 5",
        ),
        (
            lambda f: f.assign(engine=f["engine"].where(f.index != 6, 13)),
            ["--system-cols", "engine", "--score-range", "0,12"],
            "data row 7",
        ),
        (
            lambda f: f.assign(prompt=np.where(f.index < 2, "tiny", f["prompt"])),
            ["--system-cols", "engine", "--prompt-col", "prompt"],
            "'tiny'",
        ),
        (lambda f: f, ["--system-cols", "nothere"], "'nothere'"),
    ],
    ids=["blank", "text", "outside-scale", "small-prompt", "missing-column"],
)
def test_bad_system_and_prompt_input_exits_2_before_work(
    tmp_path, capsys, change, extra, fragment
):
    data = _write(change(_essays()), tmp_path / "essays.csv")
    err = _refused(capsys, tmp_path, _args(data, tmp_path / "out", *FAST, *extra), fragment)
    assert "essays.csv" in err


class _ShortPredictor(DummyRegressor):
    """A fitted model that gives three scores whatever it is asked to score."""

    def predict(self, X):
        return np.zeros(3)


def test_model_file_predicting_the_wrong_number_of_scores_exits_2(tmp_path, capsys):
    joblib.dump(_ShortPredictor().fit([[0]], [1]), tmp_path / "short.joblib")
    data = _write(_essays(), tmp_path / "essays.csv")
    args = _args(
        data, tmp_path / "out", *FAST, "--model-file", f"short={tmp_path / 'short.joblib'}"
    )
    _refused(capsys, tmp_path, args, "'short'")


def _short_answers(seed: int = 0) -> pd.DataFrame:
    """Two questions with reference answers (two per cell, '||'), grades 0-2."""
    rng = np.random.default_rng(seed)
    questions = {
        "q1": (
            "Plants need light for photosynthesis.",
            "light sugar plants energy sun leaf",
        ),
        "q2": (
            "The heart pumps blood around the body.",
            "heart pumps blood body muscle beats",
        ),
    }
    rows = []
    for q, (reference, vocabulary) in questions.items():
        for _ in range(12):
            k = int(rng.integers(1, 7))
            grade = min(2, k // 2)
            rows.append(
                {
                    "question": q,
                    "answer": " ".join(rng.choice(vocabulary.split(), k)),
                    "reference": f"{reference}||{reference.split()[0]} matters.",
                    "score": grade,
                    "grader": int(np.clip(grade + rng.integers(-1, 2), 0, 2)),
                }
            )
    return pd.DataFrame(rows)


def test_short_answers_with_references_end_to_end(tmp_path, capsys):
    frame = _short_answers()
    data = _write(frame, tmp_path / "answers.csv")
    out = tmp_path / "out"
    args = [
        "audit",
        str(data),
        "--text-col",
        "answer",
        "--score-col",
        "score",
        "--prompt-col",
        "question",
        "--reference-col",
        "reference",
        "--reference-sep",
        "||",
        "--system-cols",
        "grader",
        "--score-range",
        "0,2",
        "--out",
        str(out),
        *FAST,
    ]
    assert main(args) == 0, capsys.readouterr().err
    grading = _tables(out)["grading"].set_index("prompt")
    # grades scaled to [0, 1] by the declared 0-2 scale, then the RMSE per question
    for q, rows in frame.groupby("question"):
        diff = (rows["grader"] - rows["score"]) / 2
        assert grading.loc[q, "rmse"] == pytest.approx(np.sqrt(np.mean(diff**2)), abs=1e-12)
    diff = (frame["grader"] - frame["score"]) / 2
    assert grading.loc["pooled", "rmse"] == pytest.approx(
        np.sqrt(np.mean(diff**2)), abs=1e-12
    )


def test_short_answer_question_without_a_reference_exits_2(tmp_path, capsys):
    frame = _short_answers()
    frame.loc[frame["question"] == "q2", "reference"] = ""
    data = _write(frame, tmp_path / "answers.csv")
    args = [
        "audit",
        str(data),
        "--text-col",
        "answer",
        "--score-col",
        "score",
        "--prompt-col",
        "question",
        "--reference-col",
        "reference",
        "--system-cols",
        "grader",
        "--out",
        str(tmp_path / "out"),
        *FAST,
    ]
    _refused(capsys, tmp_path, args, "reference column 'reference' is empty in data row 13")


# -- a --model-file model that fails is the user's model failing: exit 2 ----------


def _model_file(tmp_path, model, data):
    """Fit ``model`` on the essays of ``data`` and save it with joblib (issue 31)."""
    frame = pd.read_csv(data)
    path = tmp_path / f"{type(model).__name__}.joblib"
    joblib.dump(model.fit(list(frame["essay"]), frame["score"]), path)
    return path


@pytest.mark.parametrize(
    ("how", "error"),
    [
        ("raise", "RuntimeError: 'CUDA out of memory (simulated)'"),
        ("exit", "it called sys.exit(0)"),
    ],
)
def test_a_model_file_whose_predict_fails_exits_2_naming_it(tmp_path, capsys, how, error):
    from hostile_models import Fails

    data = _write(_essays(), tmp_path / "essays.csv")
    path = _model_file(tmp_path, Fails(how=how), data)
    args = _args(data, tmp_path / "out", *FAST, "--model-file", f"m={path}")
    # was exit 1 "internal error" (RuntimeError), or exit 0 with no report (sys.exit)
    _refused(
        capsys,
        tmp_path,
        args,
        f"--model-file m={path}: model 'm' (Fails) could not score the essays ({error})",
    )


@pytest.mark.parametrize(
    ("unseen", "fragment"),
    [
        ("nan", "model 'm' predicted a non-finite score (nan) for the "),
        ("raise", 'could not score the edited essays (ValueError: "input exceeds'),
        ("exit", "could not score the edited essays (it called sys.exit(0))"),
        ("short", "edited essays; it must return one score per essay"),
    ],
)
def test_a_model_file_failing_on_edited_essays_exits_2_before_the_long_work(
    tmp_path, capsys, monkeypatch, unseen, fragment
):
    from hostile_models import KnownTextsOnly

    from sklearn_fairaes import text

    def computed(*args, **kwargs):
        raise AssertionError("a representation was fitted before the model was probed")

    data = _write(_essays(), tmp_path / "essays.csv")
    path = _model_file(tmp_path, KnownTextsOnly(unseen=unseen), data)
    monkeypatch.setattr(text.BowVectorizer, "fit_transform", computed)
    monkeypatch.setattr(text.BowVectorizer, "fit", computed)
    args = _args(data, tmp_path / "out", *FAST, "--model-file", f"m={path}")
    err = _refused(
        capsys,
        tmp_path,
        [*args, "--perturbations", "typos", "--n-perturbation-essays", "4"],
        f"--model-file m={path}: ",
    )
    assert fragment in err, err
    assert "internal error" not in err
