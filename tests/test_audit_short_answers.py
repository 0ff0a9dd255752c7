"""The short-answer analysis on hand-built studies of Stita's questions (one study
per question, grades in [0, 1]): the grading table against numpy's RMSE and
weighted_rmse, the pooled wRMSE over all answers (not a mean of the questions'),
the coverage table against reference_coverage_curve, and the
reference-similarity baseline against a direct cross-validation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import DATA_DIR, require_file
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_predict

from sklearn_fairaes import TfidfEssayVectorizer
from sklearn_fairaes.metrics import weighted_rmse
from sklearn_fairaes.report._study import PairSpace, Settings, Study, System
from sklearn_fairaes.report.analyses._short_answers import (
    ANALYSIS,
    GRADING_COLUMNS,
    REFERENCE_BASELINE,
    SECTION,
    make_reference_baseline,
    pool_grading,
)
from sklearn_fairaes.short_answers import (
    reference_coverage_curve,
)
from sklearn_fairaes.short_answers._coverage import COVERAGE_COLUMNS

STITA = DATA_DIR / "stita" / "stita_gradeaid.tsv"


@pytest.fixture(scope="module")
def stita():
    return pd.read_csv(require_file(STITA), sep="\t")


def _question(stita, q, *, cv=3):
    part = stita[stita["question_id"] == q].reset_index(drop=True)
    answers = [str(a) for a in part["answer"]]
    human = part["score"].to_numpy(float)  # already grades in [0, 1]
    tfidf = TfidfEssayVectorizer().fit(answers)
    X = tfidf.transform(answers)
    folds = KFold(cv, shuffle=True, random_state=0)
    ridge = cross_val_predict(Ridge(), X, human, cv=folds)
    # a given system: the human grade moved a quarter up or down, kept on the scale
    shift = np.where(np.arange(len(human)) % 2 == 0, 0.25, -0.25)
    given = np.clip(human + shift, 0, 1)
    return Study(
        prompt=str(q),
        prompt_text=None,
        essays=answers,
        ids=part["id"].to_numpy(),
        rows=np.flatnonzero(stita["question_id"].to_numpy() == q) + 1,
        human=human,
        score_range=(0, 1),
        score_range_source="declared",
        settings=Settings(cv=cv),
        references=[[str(r)] for r in part["real_answer"]],
        short_answer=True,
        systems={
            "engine": System("engine", "given", {None: given}),
            "ridge": System("ridge", "trained", {"tfidf": ridge}, Ridge()),
            # a fitted model whose grades leave [0, 1] at both ends
            "stretch": System("stretch", "fitted", {None: human * 1.4 - 0.2}),
        },
        spaces={"tfidf": PairSpace("tfidf", tfidf, X, X, "cosine", np.zeros(0))},
    )


@pytest.fixture(scope="module")
def q4(stita):
    return _question(stita, 4)


def test_protocol_and_absent(q4):
    assert (ANALYSIS.name, SECTION.title) == (
        "short_answers",
        "Short answers: grading and reference coverage",
    )
    assert ANALYSIS.absent(q4) is None
    essays = Study(**{**q4.__dict__, "short_answer": False})
    assert "--reference-col" in ANALYSIS.absent(essays)


def test_grading_table_equals_numpy_and_weighted_rmse(q4):
    out = ANALYSIS.run(q4)
    grading = out.tables["grading"]
    assert list(grading.columns) == list(GRADING_COLUMNS)
    assert list(zip(grading["representation"], grading["system"])) == [
        ("", "engine"),
        ("tfidf", "ridge"),
        ("", "stretch"),
    ]
    stretch = q4.systems["stretch"].scores[None]
    outside = int(((stretch < 0) | (stretch > 1)).sum())
    assert outside > 0
    for row, pred in zip(
        grading.itertuples(index=False),
        (
            q4.systems["engine"].scores[None],
            q4.systems["ridge"].scores["tfidf"],
            np.clip(stretch, 0, 1),
        ),
    ):
        assert row.n == 54
        assert row.rmse == pytest.approx(math.sqrt(np.mean((q4.human - pred) ** 2)))
        assert row.wrmse == pytest.approx(weighted_rmse(q4.human, pred))
    assert [n for n in out.notes if n.startswith("Grading")] == [
        f"Grading: predicted grades outside [0, 1] were clipped onto the scale before "
        f"the RMSE and wRMSE (stretch: {outside})."
    ]


def test_wrmse_by_hand_on_one_question():
    """ASAG2024's weights worked by hand: ranges [0, .1), ..., [.9, 1]."""
    human = np.array([0.0, 0.05, 1.0, 1.0, 1.0, 0.5])
    pred = np.array([0.2, 0.05, 0.8, 1.0, 1.0, 0.5])
    study = Study(
        prompt="q",
        prompt_text=None,
        essays=["a b", "b c", "c d", "d e", "e f", "f g"],
        ids=np.arange(6),
        rows=np.arange(1, 7),
        human=human,
        score_range=(0, 20),
        score_range_source="declared",
        settings=Settings(),
        short_answer=True,
        systems={"engine": System("engine", "given", {None: pred})},
    )
    row = ANALYSIS.run(study).tables["grading"].iloc[0]
    # three non-empty ranges (0, 5, 9), each a third of the weight, split
    # among its answers: 2, 1 and 3 of them
    by_hand = math.sqrt((1 / 3) * (0.2**2 / 2 + 0) + 0 + (1 / 3) * (0.2**2 / 3))
    assert row["wrmse"] == pytest.approx(by_hand)
    assert row["rmse"] == pytest.approx(math.sqrt((0.04 + 0.04) / 6))


def test_pooled_wrmse_is_over_all_answers_not_a_mean(stita):
    studies = [_question(stita, q) for q in (1, 4, 6)]
    pooled = pool_grading(studies)
    assert list(pooled.columns) == list(GRADING_COLUMNS)
    assert list(pooled["system"]) == ["engine", "ridge", "stretch"]
    human = np.concatenate([s.human for s in studies])
    for row, name, rep in zip(
        pooled.itertuples(index=False),
        ("engine", "ridge", "stretch"),
        (None, "tfidf", None),
    ):
        pred = np.concatenate([np.clip(s.systems[name].scores[rep], 0, 1) for s in studies])
        assert row.n == len(human) == 57 + 54 + 54
        assert row.wrmse == pytest.approx(weighted_rmse(human, pred))
        assert row.rmse == pytest.approx(math.sqrt(np.mean((human - pred) ** 2)))
        per_question = [
            weighted_rmse(s.human, np.clip(s.systems[name].scores[rep], 0, 1))
            for s in studies
        ]
        assert row.wrmse != pytest.approx(np.mean(per_question))


def test_reference_coverage_equals_a_direct_call(stita, q4):
    out = ANALYSIS.run(q4)
    coverage = out.tables["reference_coverage"]
    assert list(coverage.columns) == ["representation", *COVERAGE_COLUMNS]
    direct = reference_coverage_curve(
        q4.essays,
        q4.human,
        question=["4"] * q4.n,
        representation=q4.spaces["tfidf"].transformer,
        n_references=(1, 2, 4, 8, 16),
        n_bootstrap=200,
        random_state=0,
    )
    pd.testing.assert_frame_equal(coverage.drop(columns="representation"), direct)
    assert (coverage["n_questions"] == 1).all()
    assert (coverage["n_held_out"] == 30 - 16).all()  # 30 full-credit answers


def test_reference_coverage_with_few_or_no_full_credit_answers(stita):
    few = ANALYSIS.run(_question(stita, 1))  # 4 full-credit answers
    assert list(few.tables["reference_coverage"]["n_references"]) == [1, 2]
    assert any("at most 2 reference(s)" in n for n in few.notes)
    none = ANALYSIS.run(_question(stita, 3))  # not one
    assert none.tables["reference_coverage"].empty
    empty = none.tables["reference_coverage"]
    assert list(empty.columns) == ["representation", *COVERAGE_COLUMNS]
    # typed like a full table, so that stacking the questions keeps numbers
    full = few.tables["reference_coverage"]
    assert list(empty.dtypes) == list(full.dtypes)
    stacked = pd.concat([empty, full], ignore_index=True)
    assert stacked["mean_score"].dtype == np.float64
    assert any("Reference coverage: 0 answer(s) with full credit" in n for n in none.notes)


def _isotonic_by_hand(study, folds):
    """Out-of-fold grades of the calibrated grader, from sklearn's parts: the
    largest cosine to a reference in the study's fitted representation (never
    refitted), then an isotonic regression of the grades on it per fold."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.metrics.pairwise import cosine_similarity

    rep = study.spaces["tfidf"].transformer
    A = rep.transform(study.essays)
    sims = np.array(
        [
            1.0
            if answer in refs
            else max(0.0, cosine_similarity(A[i], rep.transform(refs)).max())
            for i, (answer, refs) in enumerate(zip(study.essays, study.references))
        ]
    )
    out = np.empty(study.n)
    for train, test in folds.split(sims):
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
        out[test] = iso.fit(sims[train], study.human[train]).predict(sims[test])
    return out


def test_reference_baseline_equals_a_direct_cross_validation(q4):
    system = make_reference_baseline(q4)
    assert (system.name, system.kind) == (REFERENCE_BASELINE, "trained")
    assert list(system.scores) == ["tfidf"]
    folds = KFold(3, shuffle=True, random_state=0)
    by_hand = _isotonic_by_hand(q4, folds)
    np.testing.assert_allclose(system.scores["tfidf"], by_hand, atol=1e-9)
    assert ((by_hand >= 0) & (by_hand <= 1)).all()
    # out-of-fold: not the grader fitted on every answer
    X = pd.DataFrame({"answer": q4.essays, "reference": q4.references})
    full = system.estimator["tfidf"].fit(X, q4.human).predict(X)
    assert not np.allclose(full, by_hand)
    # the study's representation is used as it is, never refitted
    vocabulary = dict(q4.spaces["tfidf"].transformer.vocabulary_)
    assert system.estimator["tfidf"].representation_.transformer is (
        q4.spaces["tfidf"].transformer
    )
    assert q4.spaces["tfidf"].transformer.vocabulary_ == vocabulary
    # registered beside the others, it is graded like them
    study = Study(**{**q4.__dict__, "systems": {**q4.systems, system.name: system}})
    grading = ANALYSIS.run(study).tables["grading"].set_index("system")
    assert grading.loc[REFERENCE_BASELINE, "wrmse"] == pytest.approx(
        weighted_rmse(q4.human, by_hand)
    )
    with pytest.raises(ValueError, match="prompt '4' has no reference answers"):
        make_reference_baseline(Study(**{**q4.__dict__, "references": None}))
