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
        # a scorer returns one number: no counts, no bootstrap Bunch
        if n not in ("return_counts", "n_bootstrap", "confidence_level")
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


# The weighted scorers and their metrics, each called with sample_weight= by
# hand as the reference. A scorer whose metric takes sample_weight and is
# missing here fails test_every_weighted_metric_has_a_weighted_scorer.
_WEIGHTED = {
    "qwk": lambda y, pred, w: sf.qwk(y, pred, score_range=(0, 12), sample_weight=w),
    "neg_abs_smd": lambda y, pred, w: (
        -abs(sf.standardized_mean_difference(y, pred, sample_weight=w))
    ),
}
_WEIGHTED_OPTIONS = {"qwk": {"score_range": (0, 12)}, "neg_abs_smd": {}}


def _weighted_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 5))
    y = np.clip(np.rint(X @ [2.0, 1.0, 0.5, 0, 0] + 6), 0, 12)
    w = rng.uniform(0.1, 5.0, 90)
    return X, y, w, KFold(3, shuffle=True, random_state=0)


def _manual_weighted(name, X, y, w, cv):
    # the weighted model and the weighted metric on each test fold, by hand
    return np.mean(
        [
            _WEIGHTED[name](
                y[te], Ridge().fit(X[tr], y[tr], sample_weight=w[tr]).predict(X[te]), w[te]
            )
            for tr, te in cv.split(X)
        ]
    )


def test_every_weighted_metric_has_a_weighted_scorer():
    import inspect

    from sklearn_fairaes.metrics._scorer import _REGISTRY

    takes = {
        name
        for name, (*_, public) in _REGISTRY.items()
        if "sample_weight" in inspect.signature(public).parameters
    }
    assert takes == set(_WEIGHTED)
    for name in sf.get_scorer_names():
        scorer = sf.make_fairness_scorer(name)
        # what sklearn asks a scorer before giving it the weights (routing off)
        assert scorer._accept_sample_weight() is (name in _WEIGHTED), name


@pytest.mark.parametrize("name", sorted(_WEIGHTED))
def test_weighted_scorer_in_a_search_without_metadata_routing(name):
    # sklearn's default (routing off): the search gives sample_weight to the
    # scorers that take it; the package's scorers were scored unweighted, with
    # sklearn's warning, while make_scorer(sf.qwk) was weighted
    X, y, w, cv = _weighted_data()
    expected = _manual_weighted(name, X, y, w, cv)
    scorer = sf.make_fairness_scorer(name, **_WEIGHTED_OPTIONS[name])
    search = GridSearchCV(Ridge(), {"alpha": [1.0]}, cv=cv, scoring=scorer)
    search.fit(X, y, sample_weight=w)
    assert search.cv_results_["mean_test_score"][0] == pytest.approx(expected, abs=1e-12)
    # a dict scoring (one predict per fold shared by the scorers) as well
    search = GridSearchCV(
        Ridge(), {"alpha": [1.0]}, cv=cv, scoring={name: scorer}, refit=name
    )
    search.fit(X, y, sample_weight=w)
    got = search.cv_results_[f"mean_test_{name}"][0]
    assert got == pytest.approx(expected, abs=1e-12)
    unweighted = GridSearchCV(Ridge(), {"alpha": [1.0]}, cv=cv, scoring=scorer).fit(X, y)
    assert unweighted.cv_results_["mean_test_score"][0] != pytest.approx(expected)


@pytest.mark.parametrize("name", sorted(_WEIGHTED))
def test_weighted_scorer_in_a_search_with_metadata_routing(name):
    X, y, w, cv = _weighted_data()
    expected = _manual_weighted(name, X, y, w, cv)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = sf.make_fairness_scorer(name, **_WEIGHTED_OPTIONS[name])
        scorer.set_score_request(sample_weight=True)
        model = Ridge().set_fit_request(sample_weight=True)
        search = GridSearchCV(model, {"alpha": [1.0]}, cv=cv, scoring=scorer)
        search.fit(X, y, sample_weight=w)
    assert search.cv_results_["mean_test_score"][0] == pytest.approx(expected, abs=1e-12)


def test_fair_search_weights_the_agreement_scorer_without_metadata_routing():
    X, y, w, cv = _weighted_data()
    expected = _manual_weighted("qwk", X, y, w, cv)
    search = sf.FairGridSearchCV(
        Ridge(),
        {"alpha": [1.0]},
        scoring={
            "qwk": sf.make_fairness_scorer("qwk", score_range=(0, 12)),
            "lipschitz_fraction": sf.make_fairness_scorer("lipschitz_fraction"),
        },
        fairness_constraints={"lipschitz_fraction": 0.5},
        cv=cv,
    )
    # sklearn's own warning names the scorer that has no weighted form
    with pytest.warns(
        UserWarning, match="lipschitz_fraction.*does not support sample_weight"
    ):
        search.fit(X, y, sample_weight=w)
    assert search.cv_results_["mean_test_qwk"][0] == pytest.approx(expected, abs=1e-12)


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
