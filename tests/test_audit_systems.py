"""Auditing the user's own scoring systems: given scores and fitted models (issue 16).

Every number is checked against the metric functions (or scikit-learn)
called directly on the same columns; every bad input is refused before the
first representation is fitted.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import pdist
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge
from sklearn.metrics import cohen_kappa_score
from sklearn.model_selection import KFold, cross_val_predict
from sklearn.pipeline import Pipeline, make_pipeline

import sklearn_fairaes as sf
from sklearn_fairaes import text
from sklearn_fairaes.features import InterpretableFeatures
from sklearn_fairaes.report import AuditInputError

RUN = {"representations": ["tfidf", "bow"], "paraphrases": "paraphrase", "random_state": 0}


@pytest.fixture(scope="module")
def demo():
    df = sf.load_demo_essays().iloc[:48].reset_index(drop=True)
    rng = np.random.default_rng(1)
    # an engine that is off by a point now and then, on the rubric's 0-12 scale
    engine = np.clip(df["score"].to_numpy() + rng.integers(-1, 2, len(df)), 0, 12)
    return df.assign(engine=engine, engine_v2=np.clip(engine + 1, 0, 12))


@pytest.fixture(scope="module")
def given_result(demo):
    return sf.audit(
        demo,
        text_col="essay",
        score_col="score",
        systems={"engine": "engine", "v2": "engine_v2"},
        score_range=(0, 12),
        **RUN,
    )


class NoRefit(Pipeline):
    """A fitted pipeline that fails loudly when anything tries to fit it again."""

    def fit(self, X, y=None, **params):
        raise AssertionError("the audit refitted a fitted model")


def fitted_pipeline(essays, y):
    pipe = NoRefit([("tfidf", sf.TfidfEssayVectorizer()), ("ridge", Ridge())])
    Pipeline.fit(pipe, essays, y)
    return pipe


def test_given_scores_audit_equals_the_metric_functions(demo, given_result):
    t = given_result.tables
    y, engine = demo["score"].to_numpy(float), demo["engine"].to_numpy(float)
    # no baseline is trained when systems are given and models is not
    assert given_result.meta["models"] == []
    assert set(t["agreement"]["kind"]) == {"given"}
    assert t["agreement"]["representation"].tolist() == ["", ""]
    row = t["agreement"].set_index("system").loc["engine"]
    scale = np.arange(0, 13)
    assert row["qwk"] == pytest.approx(
        cohen_kappa_score(
            y.astype(int), engine.astype(int), labels=scale, weights="quadratic"
        )
    )
    assert row["qwk"] == pytest.approx(sf.qwk(y, engine, labels=scale))
    assert row["n_outside_scale"] == 0
    # the audit's SMD is RSMTool rsmeval's default (smd_method="unpooled": the human SD)
    assert row["smd"] == pytest.approx(
        sf.standardized_mean_difference(y, engine, method="unpooled")
    )
    assert row["exact_agreement"] == pytest.approx(np.mean(y == engine))
    assert row["adjacent_agreement"] == pytest.approx(np.mean(np.abs(y - engine) <= 1))
    # the predictions table holds the given columns as they are
    np.testing.assert_array_equal(t["predictions"]["engine"], engine)
    np.testing.assert_array_equal(t["predictions"]["v2"], demo["engine_v2"])
    essays = list(demo["essay"])
    lip = t["lipschitz"].set_index(["representation", "system"])
    for rname, rep in (("tfidf", sf.TfidfEssayVectorizer()), ("bow", sf.BowVectorizer())):
        X = rep.fit_transform(essays)
        for sname, scores in (("engine", engine), ("human", y)):
            got = lip.loc[(rname, sname)]
            counts = sf.lipschitz_fraction(X, scores, return_counts=True)
            assert got["lipschitz_minmax"] == counts["fraction"]
            assert got["n_satisfied_minmax"] == counts["n_satisfied"]
            assert got["lipschitz_max"] == sf.lipschitz_fraction(X, scores, normalize="max")
            assert got["n_pairs"] == len(pdist(X.toarray(), "cosine"))
    assert given_result.meta["systems"]["engine"]["kind"] == "given"
    assert given_result.meta["score_range"] == [0.0, 12.0]
    assert given_result.meta["score_range_source"] == "declared"


def test_given_scores_under_every_representation(given_result):
    t = given_result.tables
    for name in ("lipschitz", "trend"):
        pairs = set(zip(t[name]["representation"], t[name]["system"]))
        assert pairs == {
            (r, s) for r in ("tfidf", "bow") for s in ("engine", "v2", "human")
        }


def test_counterfactual_is_absent_with_scores_only(demo):
    res = sf.audit(
        demo,
        text_col="essay",
        score_col="score",
        systems=["engine"],
        score_range=(0, 12),
        representations=["tfidf"],
        paraphrases="paraphrase",
        perturbations=["typos"],
        n_perturbation_essays=8,
    )
    assert "perturbation" not in res.tables
    assert "scores only" in res.meta["absent_sections"]["counterfactual"]


def test_declared_scale_is_not_the_observed_range():
    """The issue's example: predictions of 0 and 6 on a 0-6 scale where humans used 2-4."""
    human = np.array([2, 3, 4] * 4, dtype=float)
    engine = np.array([0, 3, 6] * 4, dtype=float)
    words = (
        "apples pears plums figs dates limes kiwis melons grapes lemons cherries".split()
    )
    essays = [
        " ".join(words[i % 11 :] + words[: i % 11]) + f" essay {i}." for i in range(12)
    ]
    data = pd.DataFrame({"essay": essays, "score": human, "engine": engine})
    res = sf.audit(
        data,
        text_col="essay",
        score_col="score",
        systems=["engine"],
        score_range=(0, 6),
        representations=["bow"],
        paraphrases=essays,
    )
    row = res.tables["agreement"].iloc[0]
    expected = cohen_kappa_score(
        human.astype(int), engine.astype(int), labels=np.arange(0, 7), weights="quadratic"
    )
    assert row["qwk"] == pytest.approx(expected)
    assert row["qwk"] < 0.9
    # what the observed range 2-4 would have said: perfect agreement
    assert sf.qwk(human, engine) == 1.0


def test_fitted_model_is_used_as_it_is_and_trimmed(demo):
    essays, y = list(demo["essay"]), demo["score"].to_numpy(float)
    pipe = fitted_pipeline(essays[:30], y[:30])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        raw = pipe.predict(essays)
    # shifted by 4 points, some predictions leave the 0-12 scale
    shifted = ShiftedModel(pipe, shift=4.0)
    res = sf.audit(
        demo,
        text_col="essay",
        score_col="score",
        models={"mine": shifted},
        refit=False,
        score_range=(0, 12),
        representations=["tfidf"],
        paraphrases="paraphrase",
        perturbations=["typos"],
        n_perturbation_essays=8,
    )
    t = res.tables
    scores = raw + 4.0
    np.testing.assert_allclose(t["predictions"]["mine"], scores)
    row = t["agreement"].iloc[0]
    assert (row["system"], row["kind"], row["representation"]) == ("mine", "fitted", "")
    assert row["n_outside_scale"] == int(np.sum((scores < 0) | (scores > 12)))
    assert row["n_outside_scale"] > 0
    trimmed = np.rint(np.clip(scores, -0.4998, 12.4998)).astype(int)
    assert row["qwk"] == pytest.approx(
        cohen_kappa_score(
            y.astype(int), trimmed, labels=np.arange(0, 13), weights="quadratic"
        )
    )
    # the fitted model re-scores the edited essays (it was never refitted: NoRefit)
    assert set(t["perturbation"]["system"]) == {"mine"}
    assert res.meta["systems"]["mine"]["kind"] == "fitted"
    assert "counterfactual" not in res.meta["absent_sections"]


class ShiftedModel(BaseEstimator, RegressorMixin):
    """A fitted model's scores plus a constant; refuses to be fitted."""

    def __init__(self, model=None, shift=0.0):
        self.model = model
        self.shift = shift

    def fit(self, X, y=None):
        raise AssertionError("the audit refitted a fitted model")

    def predict(self, X):
        return self.model.predict(X) + self.shift

    def __sklearn_is_fitted__(self):
        return True


def test_refit_collection_trains_only_the_names_it_lists(demo):
    essays, y = list(demo["essay"]), demo["score"].to_numpy(float)
    pipe = fitted_pipeline(essays, y)
    res = sf.audit(
        demo,
        text_col="essay",
        score_col="score",
        systems=["engine"],
        models={"mine": pipe, "ridge": Ridge()},
        refit=["ridge"],
        cv=3,
        **RUN,
    )
    agreement = res.tables["agreement"]
    kinds = dict(zip(agreement["system"], agreement["kind"]))
    assert kinds == {"engine": "given", "mine": "fitted", "ridge": "trained"}
    # a trained baseline has one row per representation, under its own only
    rows = agreement[agreement["system"] == "ridge"]["representation"].tolist()
    assert rows == ["tfidf", "bow"]
    lip = res.tables["lipschitz"]
    ridge = lip[lip["system"] == "ridge"]["representation"].tolist()
    assert ridge == ["tfidf", "bow"]
    assert set(lip[lip["system"] == "mine"]["representation"]) == {"tfidf", "bow"}
    assert res.meta["models"] == ["ridge"]
    assert {"tfidf+ridge", "bow+ridge", "mine", "engine"} <= set(res.tables["predictions"])


def test_models_add_baselines_beside_given_systems(demo):
    res = sf.audit(
        demo,
        text_col="essay",
        score_col="score",
        systems=["engine"],
        models=["ridge"],
        representations=["tfidf"],
        paraphrases="paraphrase",
        cv=3,
    )
    agreement = res.tables["agreement"]
    assert list(zip(agreement["representation"], agreement["system"])) == [
        ("", "engine"),
        ("tfidf", "ridge"),
    ]


# -- bad input: refused before any work ------------------------------------------


@pytest.fixture
def no_work(monkeypatch):
    """Fail loudly if the audit fits a representation or computes a feature."""

    def computed(*args, **kwargs):
        raise AssertionError("the audit started computing before refusing the input")

    for cls in (text.TfidfEssayVectorizer, text.BowVectorizer):
        monkeypatch.setattr(cls, "fit", computed)
        monkeypatch.setattr(cls, "fit_transform", computed)
    monkeypatch.setattr(InterpretableFeatures, "fit_transform", computed)


class Predicts(BaseEstimator, RegressorMixin):
    """A 'fitted' model returning fixed predictions."""

    def __init__(self, values=None):
        self.values = values

    def fit(self, X, y=None):
        raise AssertionError("refitted")

    def predict(self, X):
        return self.values


def frame(demo, **columns):
    return demo.iloc[:12].reset_index(drop=True).assign(**columns)


@pytest.mark.parametrize(
    ("systems", "column", "match"),
    [
        ({"engine": "e"}, ["3"] * 4 + [""] + ["3"] * 7, r"system column 'e' is blank in data row 5"),
        (["e"], ["3"] * 6 + ["four"] + ["3"] * 5, r"system column 'e' must hold numbers; data row 7"),
        (["e"], [3] * 2 + [np.inf] + [3] * 9, r"system column 'e' holds a non-finite score in data row 3"),
        (["e"], [3] * 8 + [13] + [3] * 3, r"system column 'e' holds 13 in data row 9, outside the declared score scale 0 to 12"),
        (["e"], [3] * 11 + [-1], r"holds -1 in data row 12, outside the declared"),
    ],
)  # fmt: skip
def test_bad_system_column_is_refused(demo, no_work, systems, column, match):
    with pytest.raises(AuditInputError, match=match):
        sf.audit(
            frame(demo, e=column),
            text_col="essay",
            score_col="score",
            systems=systems,
            score_range=(0, 12),
            representations=["tfidf", "bow"],
        )


def test_given_score_outside_the_inferred_scale_is_refused(demo, no_work):
    data = frame(demo)
    lo = int(data["score"].min())
    data = data.assign(e=data["score"].astype(float))
    data.loc[4, "e"] = lo - 1
    with pytest.raises(
        AuditInputError,
        match=rf"holds {lo - 1} in data row 5, outside the score scale {lo} to .* inferred "
        r"from the human scores .*declare the rubric's scale",
    ):
        sf.audit(data, text_col="essay", score_col="score", systems=["e"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"systems": {"engine": np.arange(5)}}, r"system 'engine' has 5 scores for 12 essays"),
        ({"systems": {"human": "score"}}, r"system name 'human' is reserved"),
        ({"systems": {"pooled": "score"}}, r"system name 'pooled' is reserved"),
        ({"systems": {"score": "score"}}, r"system name 'score' is reserved for the predictions table's columns"),
        ({"models": {"all": Ridge()}}, r"model name 'all' is reserved for the tables' own rows"),
        ({"k_extreme": 0}, r"k_extreme \(--k-extreme\) must be an int in the range \[1, inf\), got 0"),
        ({"systems": {"ridge": "score"}, "models": ["ridge"]}, r"system name 'ridge' is reserved for a trained baseline"),
        ({"systems": ["nope"]}, r"system 'nope' column 'nope' not found"),
        ({"systems": []}, r"systems is empty"),
        ({"models": {"m": Ridge()}, "refit": False}, r"model 'm' \(Ridge\) is not fitted"),
        ({"models": {"m": object()}, "refit": False}, r"model 'm' \(object\) has no predict method"),
        ({"models": {"m": Predicts(np.zeros(3))}, "refit": False}, r"model 'm' \(Predicts\) predicted 3 score\(s\) .* for 12 essays"),
        ({"models": {"m": Predicts(np.r_[np.zeros(6), np.nan, np.zeros(5)])}, "refit": False}, r"model 'm' predicted a non-finite score \(nan\) for data row 7"),
        ({"models": ["ridge"], "refit": False}, r"refit=False uses every entry of models as a fitted model"),
        ({"models": {"ridge": Ridge()}, "refit": ["lasso"]}, r"refit names \['lasso'\], which models does not have"),
        ({"models": ["ridge", "gradient_boosting"], "refit": ["ridge"]}, r"models \['gradient_boosting'\] are names, not fitted estimators"),
        ({"models": {"human": Ridge()}}, r"model name 'human' is reserved"),
        ({"models": ["reference_similarity"]}, r"'reference_similarity' grades answers .* give reference_col"),
        ({"models": []}, r"models is empty"),
        ({"refit": False}, r"refit=False says which models are fitted estimators, but models= is not given"),
    ],
)  # fmt: skip
def test_bad_systems_and_models_are_refused_before_any_work(demo, no_work, kwargs, match):
    with pytest.raises(AuditInputError, match=match):
        sf.audit(
            frame(demo),
            text_col="essay",
            score_col="score",
            representations=["tfidf", "bow"],
            cv=2,
            **kwargs,
        )


def test_a_model_that_cannot_score_texts_is_refused(demo, no_work):
    # fitted on numbers, handed essays: its own error, reworded
    model = make_pipeline(Ridge()).fit(np.arange(12.0)[:, None], np.arange(12.0))
    with pytest.raises(
        AuditInputError, match=r"model 'm' \(Pipeline\) could not score the essays"
    ):
        sf.audit(
            frame(demo),
            text_col="essay",
            score_col="score",
            models={"m": model},
            refit=False,
            representations=["tfidf"],
        )


def test_dict_values_may_be_names(demo):
    res = sf.audit(
        demo,
        text_col="essay",
        score_col="score",
        representations={"words": "bow"},
        models={"mine": "ridge"},
        cv=3,
        paraphrases="paraphrase",
    )
    essays, y = list(demo["essay"]), demo["score"].to_numpy(float)
    X = sf.BowVectorizer().fit_transform(essays)
    expected = cross_val_predict(Ridge(), X, y, cv=KFold(3, shuffle=True, random_state=0))
    np.testing.assert_allclose(res.tables["predictions"]["words+mine"], expected)
    assert res.meta["model_settings"] == {"mine": "Ridge()"}


def test_a_model_failing_on_edits_past_the_probe_is_named(demo, monkeypatch):
    """Edits the early probe did not see: the counterfactual audit names the model too."""
    from hostile_models import KnownTextsOnly

    import sklearn_fairaes.report._build as build

    data = frame(demo)
    model = KnownTextsOnly(unseen="nan").fit(list(data["essay"]))
    # as if the probed edits had passed: the failure comes from the analysis itself
    monkeypatch.setattr(build, "probe_edited_essays", lambda plan: None)
    with pytest.raises(
        AuditInputError,
        match=r"model 'm' predicted a non-finite score \(nan\) for edited essay \d+ of \d+",
    ):
        sf.audit(
            data,
            text_col="essay",
            score_col="score",
            models={"m": model},
            refit=False,
            representations=["tfidf"],
            # the paraphrase section, which comes first, would meet the unseen
            # texts first (tests/test_scored_edits.py names that failure)
            paraphrases=False,
            perturbations=["typos"],
            n_perturbation_essays=4,
        )
