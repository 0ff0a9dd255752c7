"""ReferenceSimilarityGrader and the low-coverage-bias audit.

Hand-worked cosines with a lookup representation (each text -> a vector we
choose), calibration against sklearn's own isotonic and linear regressions, the
estimator contract (DataFrame input, so sklearn's common checks do not apply),
the coverage curve against a naive loop and an exact enumeration, and real
data from ../shared/data (skipped, naming the file, when absent).
"""

from __future__ import annotations

import importlib.util
import itertools
import pickle
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA_DIR, require_file, require_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_predict
from sklearn.pipeline import Pipeline
from sklearn.utils import check_random_state

from sklearn_fairaes.short_answers import (
    ReferenceSimilarityGrader,
    plot_reference_coverage,
    reference_coverage_curve,
)
from sklearn_fairaes.text import TfidfEssayVectorizer

pd = require_module("pandas", "report")

#: Texts passed to LookupVectors.transform, in order (module-level: clones share it).
CALLS = []
FITS = []


class LookupVectors(TransformerMixin, BaseEstimator):
    """A representation that maps each text to a vector given in ``vectors``."""

    def __init__(self, vectors=None):
        self.vectors = vectors

    def fit(self, X, y=None):
        FITS.append(list(X))
        self.dim_ = len(next(iter(self.vectors.values())))
        return self

    def transform(self, X):
        X = list(X)
        CALLS.append(X)
        return np.array([self.vectors[t] for t in X], dtype=float)


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


@pytest.fixture(autouse=True)
def _clear_calls():
    CALLS.clear()
    FITS.clear()


def _frame(answers, references, questions=None):
    data = {"answer": answers, "reference": references}
    if questions is not None:
        data["question"] = questions
    return pd.DataFrame(data)


def _tf():
    # plain term frequencies: cosines are easy to work out by hand
    return TfidfEssayVectorizer(
        min_df=1, ngram_range=(1, 1), lemmatize=False, use_idf=False
    )


# --------------------------------------------------------------------------- grader


def test_identical_answer_and_reference_gets_one():
    X = _frame(["Plants need light.", "Plants need light!"], ["Plants need light."] * 2)
    pred = ReferenceSimilarityGrader(_tf()).fit(X).predict(X)
    # The first is the reference itself; the second differs only in punctuation,
    # which the TF representation ignores.
    assert pred[0] == 1.0
    assert pred[1] == pytest.approx(1.0, abs=1e-12)


def test_max_over_a_list_of_references_hand_worked():
    vectors = {"a": [1, 0], "r1": [0, 1], "r2": [1, 1], "r3": [-1, 0.2]}
    X = _frame(["a", "a", "a"], [["r1"], ["r1", "r2"], ["r3"]])
    grader = ReferenceSimilarityGrader(LookupVectors(vectors)).fit(X)
    # cos(a, r1) = 0, cos(a, r2) = 1/sqrt(2), cos(a, r3) = -1/sqrt(1.04)
    np.testing.assert_allclose(
        grader.similarity(X), [0.0, 2**-0.5, -1 / np.sqrt(1.04)], rtol=1e-12
    )
    np.testing.assert_allclose(grader.predict(X), [0.0, 2**-0.5, 0.0], rtol=1e-12)


def test_reference_cell_as_str_or_list_is_the_same():
    vectors = {"a": [1, 2], "r": [2, 1]}
    str_cells = _frame(["a"], ["r"])
    list_cells = _frame(["a"], [["r", ""]])
    g = ReferenceSimilarityGrader(LookupVectors(vectors))
    assert g.fit(str_cells).predict(str_cells)[0] == pytest.approx(0.8, rel=1e-12)
    assert g.fit(list_cells).predict(list_cells)[0] == pytest.approx(0.8, rel=1e-12)


def test_empty_answer_gets_zero_and_is_not_encoded():
    vectors = {"r": [1.0, 0.0], "x": [1.0, 0.1]}
    X = _frame(["", "   ", "x"], ["r", "r", "r"])
    pred = ReferenceSimilarityGrader(LookupVectors(vectors)).fit(X).predict(X)
    assert pred[:2].tolist() == [0.0, 0.0]
    assert pred[2] > 0.99
    assert all("" not in call and "   " not in call for call in CALLS)


def test_each_distinct_text_is_encoded_once_per_call():
    vectors = {t: _unit([i + 1, 1]) for i, t in enumerate(["a", "b", "r", "s"])}
    X = _frame(["a", "b", "a", "b", "a"], [["r", "s"], ["r", "s"], ["r"], ["s", "r"], "r"])
    grader = ReferenceSimilarityGrader(LookupVectors(vectors)).fit(X)
    CALLS.clear()
    grader.predict(X)
    assert len(CALLS) == 1
    assert sorted(CALLS[0]) == ["a", "b", "r", "s"]
    # fit saw each distinct text once too
    assert sorted(FITS[-1]) == ["a", "b", "r", "s"]


def test_zero_shot_needs_no_grades_and_matches_a_naive_cosine():
    rng = np.random.default_rng(0)
    texts = [f"t{i}" for i in range(12)]
    vectors = {t: rng.normal(size=4) for t in texts}
    answers = texts[:8]
    refs = [texts[8:10], texts[10:12]] * 4
    X = _frame(answers, refs)
    pred = ReferenceSimilarityGrader(LookupVectors(vectors)).fit(X).predict(X)
    expected = []
    for a, rs in zip(answers, refs):
        cos = [_unit(vectors[a]) @ _unit(vectors[r]) for r in rs]
        expected.append(min(1.0, max(0.0, max(cos))))
    np.testing.assert_allclose(pred, expected, rtol=1e-12, atol=1e-15)


def _calibration_data(seed=0, n=40):
    rng = np.random.default_rng(seed)
    texts = [f"a{i}" for i in range(n)]
    vectors = {t: _unit([1.0, rng.uniform(0, 3)]) for t in texts}
    vectors["ref"] = [1.0, 0.0]
    X = _frame(texts, ["ref"] * n, ["q1"] * (n // 2) + ["q2"] * (n - n // 2))
    sims = np.array([vectors[t] @ np.array([1.0, 0.0]) for t in texts])
    y = np.clip(sims**2 + rng.normal(0, 0.1, n), 0, 1)
    return X, y, sims, vectors


def test_isotonic_calibration_equals_sklearn_isotonic_and_is_monotone():
    X, y, sims, vectors = _calibration_data()
    grader = ReferenceSimilarityGrader(LookupVectors(vectors), calibration="isotonic")
    pred = grader.fit(X, y).predict(X)
    iso = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(sims, y)
    np.testing.assert_allclose(pred, iso.predict(sims), rtol=1e-10)
    order = np.argsort(sims)
    assert np.all(np.diff(pred[order]) >= -1e-12)
    assert pred.min() >= 0 and pred.max() <= 1


def test_linear_calibration_equals_nonnegative_least_squares_clipped():
    X, y, sims, vectors = _calibration_data(seed=1)
    pred = (
        ReferenceSimilarityGrader(LookupVectors(vectors), calibration="linear")
        .fit(X, y)
        .predict(X)
    )
    lin = LinearRegression().fit(sims[:, None], y)
    assert lin.coef_[0] > 0  # so the sign constraint is not active
    np.testing.assert_allclose(pred, np.clip(lin.predict(sims[:, None]), 0, 1), rtol=1e-8)


def test_linear_calibration_never_decreases_with_similarity():
    X, y, sims, vectors = _calibration_data(seed=2)
    # grades that fall as similarity rises: the best non-decreasing line is flat
    pred = (
        ReferenceSimilarityGrader(LookupVectors(vectors), calibration="linear")
        .fit(X, 1 - y)
        .predict(X)
    )
    np.testing.assert_allclose(pred, np.full(len(y), np.mean(1 - y)), rtol=1e-8)


def _naive_range_weights(y, n_ranges=10):
    """ASAG2024's weights by loops: equal total weight per non-empty 0.1 range."""
    ranges = [min(int(v * n_ranges + 1e-9), n_ranges - 1) for v in y]
    filled = set(ranges)
    return np.array([1 / len(filled) / ranges.count(r) for r in ranges])


@pytest.mark.parametrize("calibration", ["isotonic", "linear"])
def test_balanced_grade_weight_and_sample_weight(calibration):
    X, y, sims, vectors = _calibration_data(seed=5)
    y = np.round(y, 1)  # many answers share a range: unequal weights
    sw = np.linspace(0.5, 2.0, len(y))
    reference = (
        IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")
        if calibration == "isotonic"
        else LinearRegression(positive=True)
    )
    feature = sims if calibration == "isotonic" else sims[:, None]
    balanced = _naive_range_weights(y)
    # (grade_weight, sample_weight passed to fit, the weights that should result)
    for grade_weight, passed, weight in (
        (None, sw, sw),
        ("balanced", None, balanced),
        ("balanced", sw, balanced * sw),
    ):
        g = ReferenceSimilarityGrader(
            LookupVectors(vectors), calibration=calibration, grade_weight=grade_weight
        )
        pred = g.fit(X, y, sample_weight=passed).predict(X)
        model = clone(reference).fit(feature, y, sample_weight=weight)
        np.testing.assert_allclose(
            pred, np.clip(model.predict(feature), 0, 1), rtol=1e-8, atol=1e-12
        )
    unweighted = ReferenceSimilarityGrader(LookupVectors(vectors), calibration=calibration)
    assert not np.allclose(
        unweighted.fit(X, y).predict(X),
        ReferenceSimilarityGrader(
            LookupVectors(vectors), calibration=calibration, grade_weight="balanced"
        )
        .fit(X, y)
        .predict(X),
    )


def test_sample_weight_is_ignored_without_calibration():
    X, y, vectors = _toy()
    g = ReferenceSimilarityGrader(LookupVectors(vectors))
    np.testing.assert_array_equal(
        g.fit(X, y, sample_weight=np.arange(8)).predict(X), g.fit(X).predict(X)
    )


def test_per_question_calibration_fits_each_question_and_falls_back_to_pooled():
    X, y, sims, vectors = _calibration_data(seed=3)
    y = y.copy()
    q2 = (X["question"] == "q2").to_numpy()
    y[q2] = y[q2] / 2  # q2 is graded more harshly
    per_q = ReferenceSimilarityGrader(
        LookupVectors(vectors), calibration="isotonic", calibrate_by="question"
    ).fit(X, y)
    pooled = ReferenceSimilarityGrader(LookupVectors(vectors), calibration="isotonic").fit(
        X, y
    )
    for q in ("q1", "q2"):
        rows = (X["question"] == q).to_numpy()
        iso = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(
            sims[rows], y[rows]
        )
        np.testing.assert_allclose(per_q.predict(X)[rows], iso.predict(sims[rows]))
    assert set(per_q.question_calibrators_) == {"q1", "q2"}
    assert not np.allclose(per_q.predict(X), pooled.predict(X))
    # an unseen question is graded by the pooled calibration
    unseen = X.assign(question="q9")
    np.testing.assert_allclose(per_q.predict(unseen), pooled.predict(unseen))


def test_question_below_min_answers_uses_pooled():
    X, y, _, vectors = _calibration_data(seed=4, n=24)
    questions = ["big"] * 20 + ["small"] * 4
    X = X.assign(question=questions)
    g = ReferenceSimilarityGrader(
        LookupVectors(vectors), calibration="isotonic", calibrate_by="question"
    ).fit(X, y)
    assert set(g.question_calibrators_) == {"big"}
    g5 = clone(g).set_params(min_question_answers=4).fit(X, y)
    assert set(g5.question_calibrators_) == {"big", "small"}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    calibration=st.sampled_from([None, "isotonic", "linear"]),
    scope=st.sampled_from(["pooled", "question"]),
)
def test_predictions_always_in_unit_interval(seed, calibration, scope):
    rng = np.random.default_rng(seed)
    n = 15
    texts = [f"a{i}" for i in range(n)] + ["r1", "r2"]
    vectors = {t: rng.normal(size=3) for t in texts}
    X = _frame(texts[:n], [["r1", "r2"]] * n, rng.integers(0, 2, n).tolist())
    y = rng.uniform(0, 1, n)
    g = ReferenceSimilarityGrader(
        LookupVectors(vectors), calibration=calibration, calibrate_by=scope,
        min_question_answers=2,
    )  # fmt: skip
    pred = g.fit(X, y).predict(X)
    assert pred.shape == (n,)
    assert np.all((pred >= 0) & (pred <= 1))


# --------------------------------------------------------------------------- contract


def _toy():
    vectors = {t: _unit([1, i]) for i, t in enumerate("abcdefgh")}
    vectors["r"] = [1.0, 0.5]
    X = _frame(list("abcdefgh"), ["r"] * 8, ["q1"] * 4 + ["q2"] * 4)
    y = np.array([1, 1, 0.5, 0.5, 0.5, 0, 0, 0], dtype=float)
    return X, y, vectors


def test_params_stored_untouched_and_clone():
    rep = LookupVectors({"a": [1]})
    g = ReferenceSimilarityGrader(rep, calibration="linear", calibrate_by="question")
    params = g.get_params(deep=False)
    assert params["representation"] is rep
    assert params["calibration"] == "linear"
    # invalid values are accepted by __init__ and set_params, rejected by fit
    bad = ReferenceSimilarityGrader(calibration="spline")
    assert bad.calibration == "spline"
    c = clone(g)
    assert c.get_params(deep=False)["calibration"] == "linear"
    assert c.representation is not rep
    assert g.set_params(calibration=None) is g and g.calibration is None
    assert g.get_params(deep=True)["representation__vectors"] == {"a": [1]}


def test_representation_is_cloned_not_mutated():
    X, y, vectors = _toy()
    rep = LookupVectors(vectors)
    g = ReferenceSimilarityGrader(rep).fit(X)
    assert g.representation_ is not rep
    assert not hasattr(rep, "dim_")


def test_not_fitted_error():
    X, _, vectors = _toy()
    g = ReferenceSimilarityGrader(LookupVectors(vectors))
    with pytest.raises(NotFittedError, match="not fitted"):
        g.predict(X)
    with pytest.raises(NotFittedError, match="not fitted"):
        g.similarity(X)


def test_pickle_round_trip():
    X, y, vectors = _toy()
    g = ReferenceSimilarityGrader(
        LookupVectors(vectors), calibration="isotonic", calibrate_by="question",
        min_question_answers=2,
    ).fit(X, y)  # fmt: skip
    g2 = pickle.loads(pickle.dumps(g))
    np.testing.assert_array_equal(g.predict(X), g2.predict(X))


def test_pickle_round_trip_with_tfidf():
    X = _frame(
        ["plants need light", "rocks are hard", "plants need water"],
        ["plants need light"] * 3,
    )
    g = ReferenceSimilarityGrader(_tf()).fit(X)
    np.testing.assert_array_equal(g.predict(X), pickle.loads(pickle.dumps(g)).predict(X))


def test_does_not_mutate_input():
    X, y, vectors = _toy()
    X_before = X.copy(deep=True)
    ReferenceSimilarityGrader(LookupVectors(vectors), calibration="isotonic").fit(
        X, y
    ).predict(X)
    pd.testing.assert_frame_equal(X, X_before)


def test_cross_val_predict_grid_search_and_pipeline():
    X, y, vectors = _toy()
    g = ReferenceSimilarityGrader(LookupVectors(vectors), calibration="isotonic")
    groups = X["question"].to_numpy()
    pred = cross_val_predict(g, X, y, groups=groups, cv=GroupKFold(n_splits=2))
    assert pred.shape == (8,) and np.all((pred >= 0) & (pred <= 1))
    # each fold's predictions equal a grader fitted on the other question
    for q in ("q1", "q2"):
        test = groups == q
        ref = clone(g).fit(X[~test], y[~test]).predict(X[test])
        np.testing.assert_allclose(pred[test], ref)
    search = GridSearchCV(
        g,
        {"calibration": [None, "isotonic", "linear"]},
        cv=GroupKFold(n_splits=2),
        scoring="neg_mean_squared_error",
    ).fit(X, y, groups=groups)
    assert search.best_params_["calibration"] in (None, "isotonic", "linear")
    pipe = Pipeline([("grade", g)]).fit(X, y)
    np.testing.assert_allclose(pipe.predict(X), clone(g).fit(X, y).predict(X))


def test_score_is_r2():
    X, y, vectors = _toy()
    g = ReferenceSimilarityGrader(LookupVectors(vectors), calibration="isotonic").fit(X, y)
    from sklearn.metrics import r2_score

    assert g.score(X, y) == pytest.approx(r2_score(y, g.predict(X)))


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "params, exc, match",
    [
        (
            {"calibration": "spline"},
            ValueError,
            r"'calibration' parameter of ReferenceSimilarityGrader must be None or a str among \['isotonic', 'linear'\]",
        ),
        (
            {"calibrate_by": "student"},
            ValueError,
            r"'calibrate_by' parameter .* must be a str among \['pooled', 'question'\]",
        ),
        (
            {"min_question_answers": 1},
            ValueError,
            r"'min_question_answers' parameter .* must be an int in the range \[2, inf\)",
        ),
        ({"representation": "sbert"}, TypeError, "must be a transformer of texts"),
        (
            {"grade_weight": "inverse"},
            ValueError,
            r"'grade_weight' parameter .* must be None or a str among \['balanced'\]",
        ),
    ],
)
def test_bad_parameters_raise_in_fit(params, exc, match):
    X, y, vectors = _toy()
    kwargs = {"representation": LookupVectors(vectors), "calibration": "isotonic"}
    kwargs.update(params)
    g = ReferenceSimilarityGrader(**kwargs)
    with pytest.raises(exc, match=match):
        g.fit(X, y)


def test_bad_input_data():
    X, y, vectors = _toy()
    g = ReferenceSimilarityGrader(LookupVectors(vectors))
    with pytest.raises(TypeError, match="must be a pandas DataFrame"):
        g.fit(X["answer"].tolist())
    with pytest.raises(ValueError, match="has no column 'reference'"):
        g.fit(X.drop(columns="reference"))
    with pytest.raises(ValueError, match="has no column 'text'"):
        ReferenceSimilarityGrader(LookupVectors(vectors), answer_col="text").fit(X)
    no_ref = X.copy()
    no_ref.loc[3, "reference"] = ""
    with pytest.raises(ValueError, match=r"position 3 has no reference answer"):
        g.fit(no_ref)
    empty_list = X.copy()
    empty_list["reference"] = [["r"]] * 7 + [[]]
    with pytest.raises(ValueError, match=r"position 7 has no reference answer"):
        g.fit(empty_list)
    none_answer = X.copy()
    none_answer.loc[2, "answer"] = None
    with pytest.raises(ValueError, match=r"position 2 of X\['answer'\] is NaN"):
        g.fit(none_answer)
    with pytest.raises(ValueError, match="X has no rows"):
        g.fit(X.iloc[:0])
    fitted = g.fit(X)
    with pytest.raises(ValueError, match="has no reference answer"):
        fitted.predict(no_ref)


def test_bad_grades():
    X, y, vectors = _toy()
    g = ReferenceSimilarityGrader(LookupVectors(vectors), calibration="linear")
    with pytest.raises(ValueError, match="learns from grades: pass y"):
        g.fit(X)
    with pytest.raises(
        ValueError, match=r"grades in \[0, 1\]; the value at position 0 is 3.0"
    ):
        g.fit(X, y * 3)
    with pytest.raises(ValueError, match="8 were expected"):
        g.fit(X, y[:5])
    with pytest.raises(ValueError, match="NaN"):
        g.fit(X, np.where(np.arange(8) == 1, np.nan, y))
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        g.fit(X, y, sample_weight=-np.ones(8))
    with pytest.raises(ValueError, match="sample_weight has 3 samples but 8"):
        g.fit(X, y, sample_weight=np.ones(3))
    per_q = ReferenceSimilarityGrader(
        LookupVectors(vectors), calibration="linear", calibrate_by="question"
    )
    with pytest.raises(ValueError, match="has no column 'question'"):
        per_q.fit(X.drop(columns="question"), y)
    missing_q = X.copy()
    missing_q.loc[4, "question"] = None
    with pytest.raises(ValueError, match="missing at row 4"):
        per_q.fit(missing_q, y)


# --------------------------------------------------------------------------- coverage


def _naive_curve(texts, grades, questions, vectors, sizes, n_bootstrap, seed, threshold):
    """The documented procedure, written as plain loops."""
    rng = check_random_state(seed)
    groups = {}
    for t, g, q in zip(texts, grades, questions):
        if g >= 1 - 1e-9 and t.strip():
            groups.setdefault(q, []).append(t)
    groups = {q: ts for q, ts in groups.items() if len(ts) > max(sizes)}

    def score(a, r):
        if a == r:
            return 1.0
        return min(1.0, max(0.0, float(_unit(vectors[a]) @ _unit(vectors[r]))))

    means = np.zeros((n_bootstrap, len(sizes)))
    below = np.zeros((n_bootstrap, len(sizes)))
    for b in range(n_bootstrap):
        per_q_mean = [[] for _ in sizes]
        per_q_below = [[] for _ in sizes]
        for ts in groups.values():
            perm = rng.permutation(len(ts))
            held = [ts[i] for i in perm[max(sizes) :]]
            for k, m in enumerate(sizes):
                refs = [ts[i] for i in perm[:m]]
                s = [max(score(a, r) for r in refs) for a in held]
                per_q_mean[k].append(np.mean(s))
                per_q_below[k].append(np.mean([v < threshold for v in s]))
        means[b] = [np.mean(v) for v in per_q_mean]
        below[b] = [np.mean(v) for v in per_q_below]
    return means, below


def _coverage_toy(seed=0):
    rng = np.random.default_rng(seed)
    texts, grades, questions = [], [], []
    for q, n in (("q1", 7), ("q2", 9), ("q3", 3)):
        for i in range(n):
            texts.append(f"{q}-{i}")
            grades.append(1.0 if i % 4 != 3 else 0.5)
            questions.append(q)
    texts += ["q1-0", "q2-dup"]  # a repeated valid text, and another valid one
    grades += [1.0, 1.0]
    questions += ["q1", "q2"]
    vectors = {t: rng.normal(size=3) + 1 for t in texts}
    return texts, np.array(grades), questions, vectors


def test_coverage_curve_equals_naive_loop():
    texts, grades, questions, vectors = _coverage_toy()
    sizes = [1, 2, 4]
    curve = reference_coverage_curve(
        texts, grades, question=questions, representation=LookupVectors(vectors),
        n_references=sizes, n_bootstrap=30, random_state=7, pass_threshold=0.8,
    )  # fmt: skip
    means, below = _naive_curve(texts, grades, questions, vectors, sizes, 30, 7, 0.8)
    np.testing.assert_allclose(curve["mean_score"], means.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(
        curve["share_below_threshold"], below.mean(axis=0), rtol=1e-12
    )
    np.testing.assert_allclose(
        curve["ci_low"], np.quantile(means, 0.025, axis=0), rtol=1e-12
    )
    np.testing.assert_allclose(
        curve["ci_high"], np.quantile(means, 0.975, axis=0), rtol=1e-12
    )
    # q3 has 3 texts, 2 of them valid: too few for M = 4 plus a held-out answer
    assert curve["n_questions"].tolist() == [2, 2, 2]
    # q1: 7 valid answers (6 + the repeat), q2: 8 (7 + q2-dup); 4 references each
    assert curve["n_held_out"].tolist() == [3 + 4] * 3


def test_coverage_curve_matches_exact_enumeration():
    # One question, four valid answers at known cosines; M = 1 and 2 with two
    # held-out answers: the expectation over all 24 shuffles, worked exactly.
    vectors = {"a": [1, 0], "b": [1, 1], "c": [0, 1], "d": [1, 3]}
    texts = list(vectors)
    S = np.array(
        [[max(0.0, _unit(vectors[x]) @ _unit(vectors[y])) for y in texts] for x in texts]
    )
    np.fill_diagonal(S, 1.0)
    exact = np.zeros(2)
    for perm in itertools.permutations(range(4)):
        held, refs = perm[2:], perm[:2]
        for k, m in enumerate((1, 2)):
            exact[k] += np.mean([max(S[h, r] for r in refs[:m]) for h in held]) / 24
    curve = reference_coverage_curve(
        texts, [1, 1, 1, 1], question=["q"] * 4, representation=LookupVectors(vectors),
        n_references=(1, 2), n_bootstrap=4000, random_state=0,
    )  # fmt: skip
    # standard error of the mean of 4000 replicates is below 0.004 here
    np.testing.assert_allclose(curve["mean_score"], exact, atol=0.012)


def test_coverage_identical_and_orthogonal_answers():
    same = reference_coverage_curve(
        ["x"] * 6, np.ones(6), question=["q"] * 6,
        representation=LookupVectors({"x": [1.0, 2.0]}), n_references=(1, 2),
        n_bootstrap=5, random_state=0,
    )  # fmt: skip
    assert same["mean_score"].tolist() == [1.0, 1.0]
    assert same["share_below_threshold"].tolist() == [0.0, 0.0]
    basis = {f"e{i}": np.eye(6)[i] for i in range(6)}
    ortho = reference_coverage_curve(
        list(basis), np.ones(6), question=["q"] * 6, representation=LookupVectors(basis),
        n_references=(1, 2, 4), n_bootstrap=5, random_state=0,
    )  # fmt: skip
    assert ortho["mean_score"].tolist() == [0.0, 0.0, 0.0]
    assert ortho["share_below_threshold"].tolist() == [1.0, 1.0, 1.0]
    assert ortho["ci_low"].tolist() == [0.0, 0.0, 0.0]


def test_coverage_ignores_partial_credit_and_empty_answers():
    vectors = {"a": [1, 0], "b": [0.9, 0.1], "c": [0.8, 0.3], "z": [0, 1]}
    base = dict(question=["q"] * 4, representation=LookupVectors(vectors),
                n_references=(1,), n_bootstrap=20, random_state=0)  # fmt: skip
    ref = reference_coverage_curve(["a", "b", "c", "z"], [1, 1, 1, 0.5], **base)
    extra = reference_coverage_curve(
        ["a", "b", "c", "z", ""], [1, 1, 1, 0.5, 1], **{**base, "question": ["q"] * 5}
    )
    pd.testing.assert_frame_equal(ref, extra)
    assert ref["n_held_out"].tolist() == [2]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), sizes=st.sets(st.integers(1, 6), min_size=1, max_size=4))
def test_coverage_curve_shape_and_monotone_in_m(seed, sizes):
    rng = np.random.default_rng(seed)
    n = 9
    texts = [f"t{i}" for i in range(n)]
    vectors = {t: rng.normal(size=4) for t in texts}
    curve = reference_coverage_curve(
        texts, np.ones(n), question=["q"] * n, representation=LookupVectors(vectors),
        n_references=list(sizes)[::-1] + [min(sizes)], n_bootstrap=10, random_state=seed,
    )  # fmt: skip
    assert list(curve.columns) == [
        "n_references", "mean_score", "ci_low", "ci_high",
        "share_below_threshold", "n_questions", "n_held_out",
    ]  # fmt: skip
    assert curve["n_references"].tolist() == sorted(sizes)
    assert np.all(np.diff(curve["mean_score"]) >= -1e-12)
    assert np.all(np.diff(curve["share_below_threshold"]) <= 1e-12)
    assert np.all(curve["ci_low"] <= curve["mean_score"] + 1e-12)
    assert np.all(curve["mean_score"] <= curve["ci_high"] + 1e-12)
    assert np.all((curve[["mean_score", "ci_low", "ci_high"]] >= 0).to_numpy())
    assert np.all((curve[["mean_score", "ci_low", "ci_high"]] <= 1).to_numpy())


def test_coverage_reuses_a_fitted_representation_and_fits_an_unfitted_one():
    vectors = {t: _unit([1, i]) for i, t in enumerate("abcd")}
    fitted = LookupVectors(vectors).fit(["whatever"])
    FITS.clear()
    kwargs = dict(question=["q"] * 4, n_references=(1,), n_bootstrap=3, random_state=0)
    reference_coverage_curve(list("abcd"), np.ones(4), representation=fitted, **kwargs)
    assert FITS == []
    reference_coverage_curve(
        list("abcd"), np.ones(4), representation=LookupVectors(vectors), **kwargs
    )
    assert FITS == [list("abcd")]


def test_coverage_is_reproducible_with_random_state():
    texts, grades, questions, vectors = _coverage_toy(seed=1)
    kwargs = dict(question=questions, representation=LookupVectors(vectors),
                  n_references=(1, 2), n_bootstrap=20)  # fmt: skip
    a = reference_coverage_curve(texts, grades, random_state=3, **kwargs)
    b = reference_coverage_curve(texts, grades, random_state=3, **kwargs)
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"n_references": [0, 2]}, ValueError, "n_references must hold positive ints"),
        ({"n_references": []}, ValueError, "n_references is empty"),
        ({"n_references": "12"}, ValueError, "n_references must hold positive ints"),
        ({"n_bootstrap": 0}, ValueError, "n_bootstrap must be an int >= 1"),
        (
            {"pass_threshold": 1.5},
            ValueError,
            r"pass_threshold must be a number in \[0, 1\]",
        ),
        (
            {"confidence_level": 1.0},
            ValueError,
            r"confidence_level must be a number in \(0, 1\)",
        ),
        ({"full_credit": 0}, ValueError, r"full_credit must be a number in \(0, 1\]"),
        ({"representation": object()}, TypeError, "must be a transformer of texts"),
        (
            {"n_references": (8,)},
            ValueError,
            "no question has more than max.n_references.=8",
        ),
        ({"question": "q"}, TypeError, "got a single string"),
        ({"question": ["q"] * 3}, ValueError, "different numbers of essays"),
        (
            {"question": ["q", None, "q", "q", "q"]},
            ValueError,
            "question is missing at position 1",
        ),
    ],
)
def test_coverage_bad_input(kwargs, exc, match):
    vectors = {t: _unit([1, i]) for i, t in enumerate("abcde")}
    args = dict(question=["q"] * 5, representation=LookupVectors(vectors),
                n_references=(1, 2), n_bootstrap=3, random_state=0)  # fmt: skip
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        reference_coverage_curve(list("abcde"), np.ones(5), **args)


def test_coverage_bad_grades():
    vectors = {t: _unit([1, i]) for i, t in enumerate("abc")}
    with pytest.raises(
        ValueError, match=r"grades in \[0, 1\]; the value at position 2 is 2.0"
    ):
        reference_coverage_curve(
            list("abc"),
            [1, 1, 2],
            question=["q"] * 3,
            representation=LookupVectors(vectors),
        )


# --------------------------------------------------------------------------- figure


def test_plot_reference_coverage():
    require_module("matplotlib", "report")
    curve = pd.DataFrame(
        {"n_references": [1, 2, 4], "mean_score": [0.5, 0.6, 0.66],
         "ci_low": [0.45, 0.57, 0.64], "ci_high": [0.55, 0.63, 0.68],
         "share_below_threshold": [0.4, 0.25, 0.2]}
    )  # fmt: skip
    fig = plot_reference_coverage({"SAF $": curve, "Beetle": curve.assign(mean_score=0.7)})
    left, right = fig.axes
    assert [t.get_text() for t in left.get_legend().get_texts()] == [r"SAF \$", "Beetle"]
    np.testing.assert_allclose(left.lines[0].get_ydata(), [0.5, 0.6, 0.66])
    np.testing.assert_allclose(right.lines[1].get_ydata(), [0.4, 0.25, 0.2])
    single = plot_reference_coverage(curve, pass_threshold=0.5)
    assert single.axes[0].get_legend() is None
    assert len(single.axes[0].lines) == 2  # the curve and the pass mark
    with pytest.raises(ValueError, match="lacks the column.s. 'ci_low'"):
        plot_reference_coverage(curve.drop(columns="ci_low"))
    with pytest.raises(TypeError, match="curves must be a DataFrame"):
        plot_reference_coverage([curve])


# --------------------------------------------------------------------------- real data


def _bench():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_asag.py"
    spec = importlib.util.spec_from_file_location("bench_asag", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _real(name):
    bench = _bench()
    require_file(DATA_DIR / bench.SETS[name]["file"])
    return bench.load_set(name, DATA_DIR)


def test_zero_shot_tfidf_similarity_tracks_mohler_grades():
    from scipy.stats import spearmanr

    data = _real("mohler")
    tfidf = TfidfEssayVectorizer(min_df=1, lemmatize=False)
    sims = ReferenceSimilarityGrader(tfidf).fit(data).similarity(data)
    rho = spearmanr(sims, data["grade"]).statistic
    assert rho > 0.3, rho


def test_coverage_on_beetle_with_tfidf_shows_low_coverage_bias():
    data = _real("beetle")
    curve = reference_coverage_curve(
        data["answer"], data["grade"], question=data["question"],
        representation=TfidfEssayVectorizer(min_df=1, lemmatize=False),
        n_references=(1, 4, 16),
        n_bootstrap=20, random_state=0,
    )  # fmt: skip
    assert curve["n_questions"].iloc[0] == 45  # questions with >= 17 correct answers
    # one reference leaves a valid answer well short of full marks; more help,
    # but do not close the gap
    assert curve["mean_score"].iloc[0] < 0.8
    assert curve["mean_score"].is_monotonic_increasing
    assert curve["mean_score"].iloc[-1] < 1.0
    assert curve["share_below_threshold"].iloc[0] > curve["share_below_threshold"].iloc[-1]


def test_sbert_grader_on_real_answers(minilm):
    data = _real("cu-nlp").iloc[:6]
    g = ReferenceSimilarityGrader().fit(data)
    pred = g.predict(data)
    assert np.all((pred >= 0) & (pred <= 1))
    same = data.assign(answer=[refs[0] for refs in data["reference"]])
    np.testing.assert_array_equal(g.predict(same), np.ones(len(same)))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(g)).predict(data), pred)
