"""The scorers as scikit-learn citizens: DataFrame input, keywords checked at
creation, continuous targets, sample_weight through metadata routing, seeding.

References are independent: scikit-learn's ``cohen_kappa_score`` and
``TfidfVectorizer``, numpy, and the package's plain metrics called by hand.
"""

import numpy as np
import pytest
import sklearn
from conftest import require_module
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.metrics import cohen_kappa_score
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline

import sklearn_fairaes as sf

WORDS = (
    "patience waiting friend school mother store line bus rain game teacher test "
    "calm angry quiet long time story day week happy sad"
).split()


def _essay_frame(n=60, seed=0):
    pd = require_module("pandas", "report")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, 80, size=n)
    essays = [" ".join(rng.choice(WORDS, size=k)) for k in lengths]
    y = np.clip(np.rint(lengths / 10 + rng.normal(0, 0.7, size=n)), 0, 9)
    frame = pd.DataFrame({"essay": essays, "n_words": lengths.astype(float)})
    return frame, y


def _column_model(alpha=1.0):
    features = ColumnTransformer(
        [("text", TfidfVectorizer(), "essay"), ("num", "passthrough", ["n_words"])]
    )
    return make_pipeline(features, Ridge(alpha=alpha))


@pytest.mark.parametrize("text_column", ["essay", lambda X: X["essay"]])
def test_fairness_scorer_reads_the_essay_column_of_a_dataframe(text_column):
    frame, y = _essay_frame()
    model = _column_model().fit(frame, y)
    scorer = sf.make_fairness_scorer(
        "lipschitz_fraction", representation=TfidfVectorizer(), text_column=text_column
    )
    expected = sf.lipschitz_fraction(
        TfidfVectorizer().fit_transform(frame["essay"]), model.predict(frame)
    )
    assert scorer(model, frame, y) == expected


def test_dataframe_without_text_column_says_how_to_fix():
    frame, y = _essay_frame(20)
    model = _column_model().fit(frame, y)
    scorer = sf.make_fairness_scorer("lipschitz_fraction", representation=TfidfVectorizer())
    with pytest.raises(ValueError, match=r"DataFrame with 2 columns; pass text_column="):
        scorer(model, frame, y)
    bad = sf.make_fairness_scorer(
        "lipschitz_fraction", representation=TfidfVectorizer(), text_column="text"
    )
    with pytest.raises(ValueError, match=r"text_column='text' is not a column of X"):
        bad(model, frame, y)


def test_grid_search_over_a_column_transformer_pipeline():
    frame, y = _essay_frame(90)
    scoring = {
        "qwk": sf.make_fairness_scorer("qwk"),
        "lf": sf.make_fairness_scorer(
            "lipschitz_fraction", representation=TfidfVectorizer(), text_column="essay"
        ),
    }
    search = GridSearchCV(
        _column_model(),
        {"ridge__alpha": [0.1, 10.0, 1000.0]},
        scoring=scoring,
        refit=sf.fair_refit(agreement="qwk", constraints={"lf": 0.3}),
        cv=KFold(3),
    ).fit(frame, y)
    res = search.cv_results_
    for name in ("qwk", "lf"):
        assert np.isfinite(res[f"split0_test_{name}"]).all()
        assert np.isfinite(res[f"mean_test_{name}"]).all()
    feasible = res["mean_test_lf"] >= 0.3
    assert feasible.any()
    assert feasible[search.best_index_]


def test_unknown_keyword_is_refused_at_creation_with_the_valid_ones_sorted():
    import inspect

    valid = sorted(
        n
        for n in list(inspect.signature(sf.lipschitz_fraction).parameters)[2:]
        if n != "return_counts"
    )
    with pytest.raises(TypeError, match=r"unexpected keyword\(s\) \['normalise'\]") as info:
        sf.make_fairness_scorer("lipschitz_fraction", normalise="max")
    assert str(valid) in str(info.value)
    with pytest.raises(TypeError, match=r"unexpected keyword\(s\) \['labelz'\]"):
        sf.make_fairness_scorer("qwk", labelz=[0, 1])

    def my_metric(y_true, y_pred, *, power=2):
        return 0.0

    with pytest.raises(TypeError, match=r"the metric's keywords are \['power'\]"):
        sf.make_fairness_scorer(my_metric, pwr=3)
    # valid keywords still work
    assert "normalize='max'" in repr(
        sf.make_fairness_scorer("lipschitz_fraction", normalize="max")
    )


def test_qwk_scorer_takes_a_continuous_target():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = np.clip(X @ [1.0, 0.6, 0.2] + 3 + rng.normal(0, 0.4, size=80), 0.0, 6.0)
    assert (y != np.rint(y)).any()  # continuous, as a regression target
    model = LinearRegression().fit(X, y)
    got = sf.make_fairness_scorer("qwk")(model, X, y)
    # reference: both rounded to score points, predictions clipped to the scale
    yt = np.rint(y)
    yp = np.clip(np.rint(model.predict(X)), yt.min(), yt.max())
    labels = np.arange(yt.min(), yt.max() + 1)
    expected = cohen_kappa_score(yt, yp, labels=labels, weights="quadratic")
    assert got == pytest.approx(expected, abs=1e-12)
    # in a search: no NaN
    search = GridSearchCV(
        Ridge(), {"alpha": [0.1, 10.0]}, scoring=sf.make_fairness_scorer("qwk"), cv=3
    ).fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    # the continuous QWK on request
    continuous = sf.make_fairness_scorer("qwk", rounding=None)(model, X, y)
    assert continuous == pytest.approx(sf.qwk(y, model.predict(X), rounding=None))


def test_sample_weight_through_metadata_routing():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    y = np.clip(np.rint(X @ [1.0, 0.5, 0.0] + 3), 0, 6)
    w = rng.uniform(0.2, 3.0, size=60)
    cv = KFold(3)
    with sklearn.config_context(enable_metadata_routing=True):
        qwk_scorer = sf.make_fairness_scorer("qwk").set_score_request(sample_weight=True)
        smd_scorer = sf.make_fairness_scorer("neg_abs_smd").set_score_request(
            sample_weight=True
        )
        model = Ridge().set_fit_request(sample_weight=False)
        out = cross_validate(
            model,
            X,
            y,
            cv=cv,
            scoring={"qwk": qwk_scorer, "smd": smd_scorer},
            params={"sample_weight": w},
            return_estimator=True,
        )
    for fold, (_, test) in enumerate(cv.split(X)):
        pred = out["estimator"][fold].predict(X[test])
        yt = y[test]
        labels = np.arange(yt.min(), yt.max() + 1)
        rounded = np.clip(np.rint(pred), yt.min(), yt.max())
        expected = cohen_kappa_score(
            yt, rounded, labels=labels, weights="quadratic", sample_weight=w[test]
        )
        assert out["test_qwk"][fold] == pytest.approx(expected, abs=1e-12)
        # weighted SMD (pooled, ddof=1, frequency weights) by numpy
        wt = w[test]
        diff = np.average(pred, weights=wt) - np.average(yt, weights=wt)

        def var(v, wt=wt):
            return np.sum(wt * (v - np.average(v, weights=wt)) ** 2) / (wt.sum() - 1)

        assert out["test_smd"][fold] == pytest.approx(
            -abs(diff / np.sqrt((var(yt) + var(pred)) / 2)), abs=1e-12
        )
    # the weights matter: unweighted differs
    unweighted = cross_validate(Ridge(), X, y, cv=cv, scoring=sf.get_scorer("qwk"))
    assert not np.allclose(unweighted["test_score"], out["test_qwk"])


def test_pair_scorer_refuses_sample_weight():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([1.0, 2.0, 3.0, 4.0])
    model = LinearRegression().fit(X, y)
    with pytest.raises(TypeError, match=r"has no weighted form"):
        sf.get_scorer("lipschitz_fraction")(model, X, y, sample_weight=np.ones(4))


def test_paraphrase_scorer_is_seeded():
    frame, y = _essay_frame(60, seed=3)
    essays = list(frame["essay"])
    rng = np.random.default_rng(4)
    paraphrases = [" ".join(rng.permutation(e.split())[::-1][:-2]) for e in essays]
    model = make_pipeline(TfidfVectorizer(), Ridge()).fit(essays, y)
    scorer = sf.make_fairness_scorer("paraphrase_ndcg", n_samples=10)
    assert "random_state=0" in repr(scorer)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = scorer.set_score_request(paraphrases=True)
        first = scorer(model, essays, y, paraphrases=paraphrases)
        second = scorer(model, essays, y, paraphrases=paraphrases)
        other = sf.make_fairness_scorer("paraphrase_ndcg", n_samples=10, random_state=5)
        other = other.set_score_request(paraphrases=True)
        third = other(model, essays, y, paraphrases=paraphrases)
    assert first == second
    # the seed is what is fixed: another seed samples other essays
    assert third != first


def _backend_scorer():
    # a scorer whose value says which pair backend the worker runs under:
    # 1.0 for torch, 0.0 for numpy (a local function: cloudpickle sends it by
    # value, so loky workers need not import this module)
    def backend_is_torch(y_true, y_pred):
        return float(sf.get_config()["pair_backend"] == "torch")

    return sf.metrics.FairnessScorer(
        backend_is_torch, 1, {}, kind="fairness", needs="scores"
    )


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_settings_reach_the_scorer_in_cross_validate_workers(backend):
    # sklearn's delayed carries sklearn's config only; a worker starts from our
    # defaults, so without the scorer carrying them it would see "numpy"
    import joblib

    X = np.arange(20.0).reshape(10, 2)
    y = np.arange(10.0)
    with sf.config_context(pair_backend="torch"), joblib.parallel_backend(backend):
        scorer = _backend_scorer()
        result = cross_validate(LinearRegression(), X, y, cv=2, n_jobs=2, scoring=scorer)
    np.testing.assert_array_equal(result["test_score"], [1.0, 1.0])
    # made under the defaults, it scores under the defaults in the workers
    with joblib.parallel_backend(backend):
        result = cross_validate(
            LinearRegression(), X, y, cv=2, n_jobs=2, scoring=_backend_scorer()
        )
    np.testing.assert_array_equal(result["test_score"], [0.0, 0.0])


def test_a_thread_that_sets_its_own_settings_scores_under_them():
    X = np.arange(20.0).reshape(10, 2)
    y = np.arange(10.0)
    model = LinearRegression().fit(X, y)
    with sf.config_context(pair_backend="torch"):
        scorer = _backend_scorer()
    assert scorer(model, X, y) == 1.0  # no settings of its own: the captured ones
    with sf.config_context(pair_backend="numpy"):
        assert scorer(model, X, y) == 0.0
    assert sf.get_config()["pair_backend"] == "numpy"
