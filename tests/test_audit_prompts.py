"""Many prompts in one audit: one study per prompt, pooled rows across them (issue 16).

Every pair statistic is computed within a prompt: the tests count the
pairs with scipy's ``pdist`` per prompt, refit each representation on its
prompt's essays alone, and pool by hand.
"""

import numpy as np
import pandas as pd
import pytest
from conftest import DATA_DIR, require_file
from scipy.spatial.distance import pdist
from sklearn.metrics import cohen_kappa_score

import sklearn_fairaes as sf
from sklearn_fairaes import text
from sklearn_fairaes.features import InterpretableFeatures
from sklearn_fairaes.report import AuditInputError


@pytest.fixture(scope="module")
def two_prompts():
    """The demo essays split into prompts 'a' (24 essays) and 'b' (16), an engine column."""
    df = sf.load_demo_essays().iloc[:40].reset_index(drop=True)
    rng = np.random.default_rng(3)
    engine = np.clip(df["score"].to_numpy() + rng.integers(-2, 3, 40), 0, 12)
    return df.assign(task=np.where(np.arange(40) % 5 < 3, "a", "b"), engine=engine)


@pytest.fixture(scope="module")
def fitted_on(two_prompts):
    """The audit's result, and the essays each TF-IDF vectorizer was fitted on."""
    seen = []
    original = text.TfidfEssayVectorizer.fit_transform

    def spy(self, X, y=None, **kw):
        seen.append(list(X))
        return original(self, X, y, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(text.TfidfEssayVectorizer, "fit_transform", spy)
    try:
        res = sf.audit(
            two_prompts,
            text_col="essay",
            score_col="score",
            prompt_col="task",
            systems=["engine"],
            score_range={"a": (0, 12)},  # 'b' is inferred
            rater_cols=["rater1", "rater2"],
            representations=["tfidf"],
            paraphrases="paraphrase",
        )
    finally:
        mp.undo()
    return res, seen


def part(df, p):
    return df[df["task"] == p].reset_index(drop=True)


def test_each_prompt_is_its_own_study(two_prompts, fitted_on):
    res, seen = fitted_on
    # each prompt's representation was fitted on that prompt's essays only
    assert seen == [
        list(part(two_prompts, "a")["essay"]),
        list(part(two_prompts, "b")["essay"]),
    ]
    assert res.meta["prompts"] == ["a", "b"]
    assert res.meta["prompt_col"] == "task"
    b = part(two_prompts, "b")["score"]
    assert res.meta["score_ranges"] == {
        "a": [0.0, 12.0, "declared"],
        "b": [float(b.min()), float(b.max()), "inferred"],
    }
    assert res.meta["score_range"] is None
    for name in (
        "agreement",
        "lipschitz",
        "score_distance",
        "extreme_pairs",
        "predictions",
    ):
        assert res.tables[name].columns[0] == "prompt"
    preds = res.tables["predictions"]
    assert preds.groupby("prompt").size().to_dict() == {"a": 24, "b": 16}


def test_cross_prompt_pairs_are_never_counted(two_prompts, fitted_on):
    res, _ = fitted_on
    lip = res.tables["lipschitz"].set_index(["prompt", "system"])
    total = 0
    for p in ("a", "b"):
        d = part(two_prompts, p)
        X = sf.TfidfEssayVectorizer().fit_transform(list(d["essay"]))
        n_pairs = len(pdist(X.toarray(), "cosine"))
        total += n_pairs
        for system, scores in (("engine", d["engine"]), ("human", d["score"])):
            got = lip.loc[(p, system)]
            assert got["n_pairs"] == n_pairs
            counts = sf.lipschitz_fraction(X, scores.to_numpy(float), return_counts=True)
            assert got["lipschitz_minmax"] == counts["fraction"]
            assert got["n_satisfied_minmax"] == counts["n_satisfied"]
            assert got["lipschitz_max"] == sf.lipschitz_fraction(
                X, scores.to_numpy(float), normalize="max"
            )
    # 24 * 23 / 2 + 16 * 15 / 2, not the 40 * 39 / 2 pairs of one pool
    assert total == 276 + 120
    for system in ("engine", "human"):
        pooled = lip.loc[("pooled", system)]
        assert pooled["n_pairs"] == total
        per = lip.loc[[("a", system), ("b", system)]]
        assert pooled["lipschitz_minmax"] == per["n_satisfied_minmax"].sum() / total
        assert pooled["lipschitz_max"] == per["n_satisfied_max"].sum() / total
    curves = res.tables["score_distance"]
    five = curves[(curves["n_bins"] == 5) & (curves["system"] == "human")]
    assert five.groupby("prompt")["n_pairs"].sum().to_dict() == {"a": 276, "b": 120}


def test_qwk_per_prompt_on_its_scale_and_pooled_with_fisher_z(two_prompts, fitted_on):
    res, _ = fitted_on
    agreement = res.tables["agreement"].set_index("prompt")
    kappas = []
    for p in ("a", "b"):
        d = part(two_prompts, p)
        lo, hi, _ = res.meta["score_ranges"][p]
        expected = cohen_kappa_score(
            d["score"], d["engine"], labels=np.arange(lo, hi + 1), weights="quadratic"
        )
        assert agreement.loc[p, "qwk"] == pytest.approx(expected)
        assert agreement.loc[p, "n"] == len(d)
        kappas.append(expected)
    pooled = agreement.loc["pooled"]
    assert pooled["qwk"] == pytest.approx(np.tanh(np.mean(np.arctanh(kappas))))
    assert pooled["n"] == 40 and pooled["system"] == "engine"
    human = res.tables["human_agreement"]
    assert human["prompt"].tolist() == ["a", "b"]
    d = part(two_prompts, "b")
    r1, r2 = d["rater1"], d["rater2"]
    scale = np.arange(min(r1.min(), r2.min()), max(r1.max(), r2.max()) + 1)
    assert human.iloc[1]["qwk"] == pytest.approx(
        cohen_kappa_score(r1, r2, labels=scale, weights="quadratic")
    )
    assert any("'b' (" in n and "inferred" in n for n in res.meta["notes"])


def test_summary_names_the_prompts_not_one_pooled_score_range(fitted_on):
    res, _ = fitted_on
    first, *rest = res.summary().splitlines()
    assert first.endswith("2 prompts, 40 essays, a scale per prompt")
    assert "scores" not in first
    # one line per (prompt, representation, system), prompt first
    assert any(line.split()[:3] == ["pooled", "tfidf", "engine"] for line in rest)


def test_prompt_texts_per_prompt(two_prompts):
    res = sf.audit(
        two_prompts,
        text_col="essay",
        score_col="score",
        prompt_col="task",
        prompts={"a": sf.load_demo_prompt(), "b": "Describe a time you were patient."},
        systems=["engine"],
        score_range=(0, 12),
        representations=["bow"],
        paraphrases="paraphrase",
    )
    feats = res.tables["features"]
    assert "prompt_overlap" in feats.columns
    assert res.meta["prompt_given"]
    # prompt overlap is computed against each prompt's own text
    b = feats[feats["prompt"] == "b"]
    direct = InterpretableFeatures(
        prompt="Describe a time you were patient.", features=["prompt_overlap"]
    ).fit_transform(list(part(two_prompts, "b")["essay"]))
    np.testing.assert_allclose(b["prompt_overlap"], np.asarray(direct, dtype=float)[:, 0])


@pytest.fixture
def no_work(monkeypatch):
    def computed(*args, **kwargs):
        raise AssertionError("the audit started computing before refusing the input")

    for cls in (text.TfidfEssayVectorizer, text.BowVectorizer):
        monkeypatch.setattr(cls, "fit", computed)
        monkeypatch.setattr(cls, "fit_transform", computed)
    monkeypatch.setattr(InterpretableFeatures, "fit_transform", computed)


def frame(two_prompts, **changes):
    df = two_prompts.copy()
    for column, (row, value) in changes.items():
        df[column] = df[column].astype(object)
        df.loc[row, column] = value
    return df


@pytest.mark.parametrize(
    ("change", "kwargs", "match"),
    [
        ({}, {"prompts": {"a": "Write."}}, r"prompt 'b' of column 'task' has no prompt text"),
        ({}, {"prompts": {"a": "Write.", "b": " "}}, r"the prompt text of prompt 'b' is ' '"),
        ({}, {"prompt": "Write.", "prompts": {"a": "x", "b": "y"}}, r"either prompt= .* or prompts="),
        ({"task": (7, "c")}, {}, r"prompt 'c' \(column 'task'\) has 1 essay\(s\); .*at least 4 .*data row\(s\) \[8\]"),
        ({"task": (3, "")}, {}, r"prompt column 'task' is empty in data row 4"),
        ({"task": (3, "pooled")}, {}, r"prompt named 'pooled'"),
        ({"engine": (9, "")}, {}, r"system column 'engine' is blank in data row 10 \(prompt 'b'"),
        ({"engine": (5, 14)}, {}, r"holds 14 in data row 6, outside the declared score scale 0 to 12 \(prompt 'a'"),
        ({"score": (5, 13)}, {}, r"score column 'score' holds 13 in data row 6, outside the declared score scale 0 to 12 \(prompt 'a'"),
        ({}, {"score_range": {"c": (0, 6)}}, r"score_range names prompt 'c', which is not in the data's prompts"),
        ({}, {"score_range": {"a": (0, 12), "b": (6, 1)}}, r"score_range\['b'\]"),
        ({}, {"models": ["ridge"], "cv": 20}, r"cv must be an int between 2 and the number of essays of prompt 'b' \(16\)"),
    ],
)  # fmt: skip
def test_bad_prompt_input_is_refused_before_any_work(
    two_prompts, no_work, change, kwargs, match
):
    options = {"score_range": (0, 12), **kwargs}
    with pytest.raises(AuditInputError, match=match):
        sf.audit(
            frame(two_prompts, **change),
            text_col="essay",
            score_col="score",
            prompt_col="task",
            systems=["engine"],
            representations=["tfidf", "bow"],
            **options,
        )


def test_prompts_without_prompt_col_is_refused(two_prompts, no_work):
    with pytest.raises(
        AuditInputError,
        match=r"prompts= gives a text per prompt id, which needs prompt_col",
    ):
        sf.audit(
            two_prompts,
            text_col="essay",
            score_col="score",
            systems=["engine"],
            prompts={"a": "x"},
        )


def test_numeric_prompt_ids_compare_as_text(two_prompts):
    df = two_prompts.assign(task=np.where(two_prompts["task"] == "a", 7, 8))
    res = sf.audit(
        df,
        text_col="essay",
        score_col="score",
        prompt_col="task",
        systems=["engine"],
        score_range={"7": (0, 12), 8: (0, 12)},
        representations=["bow"],
        paraphrases="paraphrase",
    )
    assert res.meta["prompts"] == ["7", "8"]
    assert set(res.tables["agreement"]["prompt"]) == {"7", "8", "pooled"}


@pytest.mark.slow
def test_two_asap_prompts(tmp_path):
    """ASAP prompts 7 and 8 (0-24 and 0-60): TF-IDF, the raters' sum as a given system."""
    frames = []
    for p in (7, 8):
        path = require_file(DATA_DIR / "asap-aes" / f"asap_aes_prompt{p}.tsv")
        d = pd.read_csv(path, sep="\t", quoting=3, encoding="utf-8")
        frames.append(d.sample(150, random_state=0))
    data = pd.concat(frames, ignore_index=True)
    data["raters"] = data["rater1_domain1"] + data["rater2_domain1"]
    res = sf.audit(
        data,
        text_col="essay",
        score_col="domain1_score",
        prompt_col="essay_set",
        id_col="essay_id",
        systems=["raters"],
        score_range={7: (0, 24), 8: (0, 60)},
        representations=["tfidf"],
        paraphrases="essay",  # paraphrases are not under test here
    )
    lip = res.tables["lipschitz"].set_index(["prompt", "system"])
    assert lip.loc[("7", "human"), "n_pairs"] == lip.loc[("8", "human"), "n_pairs"] == 11175
    assert lip.loc[("pooled", "human"), "n_pairs"] == 2 * 11175
    agreement = res.tables["agreement"].set_index("prompt")
    for p, hi in (("7", 24), ("8", 60)):
        d = data[data["essay_set"] == int(p)]
        assert agreement.loc[p, "qwk"] == pytest.approx(
            cohen_kappa_score(
                d["domain1_score"],
                d["raters"],
                labels=np.arange(0, hi + 1),
                weights="quadratic",
            )
        )
    res.save(tmp_path / "report")
    assert (tmp_path / "report" / "report.html").exists()


@pytest.mark.parametrize(
    ("reference", "sep", "match"),
    [
        ("", None, r"reference column 'ref' is empty in data row 3 \(prompt 'a'\)"),
        (
            " || ",
            "||",
            r"reference column 'ref' holds only separators \('\|\|'\) in data row 3",
        ),
    ],
)
def test_a_blank_reference_answer_is_refused_before_any_work(
    two_prompts, no_work, reference, sep, match
):
    df = two_prompts.assign(ref="Patience is waiting calmly.")
    df.loc[2, "ref"] = reference
    with pytest.raises(AuditInputError, match=match):
        sf.audit(
            df,
            text_col="essay",
            score_col="score",
            prompt_col="task",
            reference_col="ref",
            reference_sep=sep,
            systems=["engine"],
            score_range=(0, 12),
            representations=["tfidf"],
        )


def test_above_the_condensed_limit_the_pairs_are_walked_not_held(two_prompts, monkeypatch):
    """The same Lipschitz numbers from the vectors (cosine, in blocks) as from condensed distances."""
    from sklearn_fairaes.report import _build

    kwargs = {
        "text_col": "essay",
        "score_col": "score",
        "prompt_col": "task",
        "systems": ["engine"],
        "score_range": (0, 12),
        "representations": ["tfidf"],
        "paraphrases": "paraphrase",
    }
    held = sf.audit(two_prompts, **kwargs)
    monkeypatch.setattr(
        _build, "MAX_CONDENSED", 20
    )  # prompt 'a' (24) is walked, 'b' (16) held
    monkeypatch.setattr(_build, "DIST_SAMPLE", 500)
    walked = sf.audit(two_prompts, **kwargs)
    cols = ["prompt", "system", "n_pairs", "n_satisfied_minmax", "n_satisfied_max"]
    pd.testing.assert_frame_equal(
        walked.tables["lipschitz"][cols], held.tables["lipschitz"][cols]
    )
    np.testing.assert_allclose(
        walked.tables["lipschitz"]["lipschitz_minmax"],
        held.tables["lipschitz"]["lipschitz_minmax"],
    )
    notes = [n for n in walked.meta["notes"] if "random pairs" in n]
    assert len(notes) == 1 and notes[0].startswith(
        "Prompt 'a': tfidf: distance distributions"
    )
