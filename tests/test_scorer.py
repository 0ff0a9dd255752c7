import numpy as np
import pytest
import sklearn
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline

import sklearn_fairaes as sf


@pytest.fixture(scope="module")
def small(asap7):
    df = asap7.iloc[:60]
    return list(df["essay"]), df["domain1_score"].astype(float).to_numpy()


def test_names_and_kinds():
    assert sf.get_scorer("qwk").kind == "agreement"
    assert sf.get_scorer("neg_abs_smd").kind == "agreement"
    for name in ("lipschitz_fraction", "score_distance_trend", "paraphrase_ndcg"):
        assert sf.get_scorer(name).kind == "fairness"
    with pytest.raises(ValueError, match=r"unknown metric 'kappa'; choose one of \["):
        sf.make_fairness_scorer("kappa")
    with pytest.raises(ValueError, match="greater_is_better is fixed for named metrics"):
        sf.make_fairness_scorer("qwk", greater_is_better=False)
    with pytest.raises(ValueError, match="takes no representation"):
        sf.make_fairness_scorer("qwk", representation=sf.BowVectorizer())
    with pytest.raises(TypeError, match="representation must be a transformer"):
        sf.make_fairness_scorer("lipschitz_fraction", representation="tfidf")
    with pytest.raises(TypeError, match="metric must be a name or a function"):
        sf.make_fairness_scorer(3)


def test_agreement_scorers_equal_the_metrics(small):
    essays, y = small
    model = make_pipeline(sf.TfidfEssayVectorizer(), Ridge()).fit(essays, y)
    pred = model.predict(essays)
    assert sf.get_scorer("qwk")(model, essays, y) == sf.qwk(y, pred)
    assert sf.get_scorer("neg_abs_smd")(model, essays, y) == -abs(
        sf.standardized_mean_difference(y, pred)
    )


def test_unfitted_representation_is_fitted_on_the_scored_essays(small):
    essays, y = small
    model = make_pipeline(sf.BowVectorizer(), Ridge(alpha=50)).fit(essays[:40], y[:40])
    test = essays[40:]
    scorer = sf.make_fairness_scorer(
        "lipschitz_fraction", representation=sf.TfidfEssayVectorizer()
    )
    expected = sf.lipschitz_fraction(
        sf.TfidfEssayVectorizer().fit_transform(test), model.predict(test)
    )
    assert scorer(model, test, y[40:]) == expected
    fitted = sf.TfidfEssayVectorizer().fit(essays)
    scorer2 = sf.make_fairness_scorer(
        "lipschitz_fraction", representation=fitted, normalize="max"
    )
    assert scorer2(model, test, y[40:]) == sf.lipschitz_fraction(
        fitted.transform(test), model.predict(test), normalize="max"
    )


def test_raw_essays_without_representation_is_an_error(small):
    essays, y = small
    model = make_pipeline(sf.TfidfEssayVectorizer(), Ridge()).fit(essays, y)
    with pytest.raises(
        ValueError, match="received raw essays but has no task representation"
    ):
        sf.get_scorer("lipschitz_fraction")(model, essays, y)


def test_numeric_X_is_its_own_representation(rng):
    X = rng.normal(size=(30, 5))
    y = X @ rng.normal(size=5)
    model = Ridge().fit(X, y)
    assert sf.get_scorer("lipschitz_fraction")(model, X, y) == sf.lipschitz_fraction(
        X, model.predict(X)
    )
    trend = sf.get_scorer("score_distance_trend")(model, X, y)
    assert trend == sf.score_distance_curve(X, model.predict(X)).spearman_rho


def test_embeddings_routed_as_metadata(small, rng):
    essays, y = small
    E = rng.normal(size=(len(essays), 8))
    cv = KFold(3, shuffle=True, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = sf.make_fairness_scorer("lipschitz_fraction").set_score_request(
            embeddings=True
        )
        res = cross_validate(
            make_pipeline(sf.TfidfEssayVectorizer(), Ridge()),
            essays,
            y,
            cv=cv,
            scoring={"qwk": sf.get_scorer("qwk"), "lf": scorer},
            params={"embeddings": E},
            return_estimator=True,
        )
    for k, (_, test) in enumerate(cv.split(essays)):
        pred = res["estimator"][k].predict([essays[i] for i in test])
        assert res["test_lf"][k] == sf.lipschitz_fraction(E[test], pred)
        assert res["test_qwk"][k] == sf.qwk(y[test], pred)


def test_grid_search_with_dict_scoring(small):
    essays, y = small
    search = GridSearchCV(
        make_pipeline(sf.TfidfEssayVectorizer(), Ridge()),
        {"ridge__alpha": [0.1, 10.0]},
        scoring={
            "qwk": sf.get_scorer("qwk"),
            "lipschitz_fraction": sf.make_fairness_scorer(
                "lipschitz_fraction", representation=sf.BowVectorizer()
            ),
        },
        refit="qwk",
        cv=3,
    ).fit(essays, y)
    lf = search.cv_results_["mean_test_lipschitz_fraction"]
    assert np.all((lf >= 0) & (lf <= 1))


def test_paraphrase_ndcg_scorer(small):
    essays, y = small
    paraphrases = [
        e.replace("patient", "tolerant").replace("I ", "I really ") for e in essays
    ]
    model = make_pipeline(sf.TfidfEssayVectorizer(), Ridge()).fit(essays, y)
    scorer = sf.get_scorer("paraphrase_ndcg")
    with pytest.raises(ValueError, match="needs the paraphrase of every essay"):
        scorer(model, essays, y)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = sf.get_scorer("paraphrase_ndcg").set_score_request(paraphrases=True)
        got = scorer(model, essays, y, paraphrases=paraphrases)
    Z = model[:-1].transform(essays).toarray()
    Zp = model[:-1].transform(paraphrases).toarray()
    assert got == sf.paraphrase_ndcg(Z, Zp, n_samples=len(essays))
    assert 0.9 < got <= 1.0


def test_custom_functions():
    def mae(y_true, y_pred):
        return float(np.mean(np.abs(y_true - y_pred)))

    X = np.arange(10.0)[:, None]
    y = np.arange(10.0) * 2
    model = Ridge(alpha=1.0).fit(X, y)
    s = sf.make_fairness_scorer(mae, greater_is_better=False)
    assert s.kind == "agreement"
    assert s(model, X, y) == -mae(y, model.predict(X))

    def pair_metric(X, y_pred):
        return 0.25

    assert sf.make_fairness_scorer(pair_metric).kind == "fairness"


def test_qwk_scorer_with_the_scale_equals_sklearn_kappa_with_labels():
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import cohen_kappa_score, make_scorer

    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    # the humans use 2-4 of a 0-6 rubric, in the order of the model's scores
    y = np.clip(np.rint(3 + X[:, 0]), 2, 4)
    # a model whose predictions spread beyond the humans' range and the scale
    model = LinearRegression().fit(X, 3 + 4 * X[:, 0])
    pred = model.predict(X)
    assert pred.min() < -0.5 and pred.max() > 6.5
    # RSMTool's trim to the scale +- 0.4998, then round half to even
    rounded = np.rint(np.clip(pred, -0.4998, 6.4998))
    expected = cohen_kappa_score(y, rounded, labels=np.arange(7), weights="quadratic")
    ours = sf.make_fairness_scorer("qwk", score_range=(0, 6))
    assert ours(model, X, y) == pytest.approx(expected, abs=1e-12)
    # sklearn's make_scorer passes the keyword through: the same number
    assert make_scorer(sf.qwk, score_range=(0, 6))(model, X, y) == pytest.approx(
        expected, abs=1e-12
    )
    # labels= gives it too (on rounded predictions trimming changes nothing)
    assert sf.make_fairness_scorer("qwk", labels=range(7))(model, X, y) == (
        pytest.approx(expected, abs=1e-12)
    )
    # the default scorer clips to the observed 2-4 and is far more lenient
    assert sf.get_scorer("qwk")(model, X, y) > expected + 0.05
    assert "score_range=(0, 6)" in repr(ours)


def test_qwk_scorer_scale_in_a_cross_validation_is_the_same_in_every_fold():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 2))
    y = np.clip(np.rint(3 + 1.5 * X[:, 0] + rng.normal(0, 0.5, 60)), 0, 6)
    scorer = sf.make_fairness_scorer("qwk", score_range=(0, 6))
    folds = KFold(3, shuffle=True, random_state=0)
    scores = cross_validate(Ridge(), X, y, cv=folds, scoring={"qwk": scorer})
    expected = []
    for train, test in folds.split(X):
        pred = Ridge().fit(X[train], y[train]).predict(X[test])
        expected.append(
            cohen_kappa_score(
                y[test],
                np.rint(np.clip(pred, -0.4998, 6.4998)),
                labels=np.arange(7),
                weights="quadratic",
            )
        )
    np.testing.assert_allclose(scores["test_qwk"], expected, atol=1e-12)


def test_qwk_scorer_refuses_a_bad_scale_at_scoring_time_with_the_reason():
    from sklearn.dummy import DummyRegressor

    X, y = np.zeros((4, 1)), np.array([1, 2, 3, 9])
    model = DummyRegressor().fit(X, y)
    with pytest.raises(ValueError, match=r"y_true has the score 9 at position 3, outside"):
        sf.make_fairness_scorer("qwk", score_range=(0, 6))(model, X, y)
    with pytest.raises(TypeError, match=r"keywords are \['labels', 'replace_undefined"):
        sf.make_fairness_scorer("qwk", scale=(0, 6))
