import warnings

import numpy as np
import pytest
from conftest import require_module
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline

import sklearn_fairaes as sf
from sklearn_fairaes.model_selection import FairnessConstraintWarning, pareto_front


def _results(qwk, lf):
    return {"mean_test_qwk": np.array(qwk, float), "mean_test_lf": np.array(lf, float)}


def test_constrained_rule_picks_best_feasible():
    rule = sf.fair_refit(agreement="qwk", constraints={"lf": 0.9})
    res = _results([0.80, 0.75, 0.70, 0.74], [0.85, 0.95, 0.99, 0.95])
    assert rule(res) == 1
    assert rule.explain(res)["feasible"].tolist() == [False, True, True, True]


def test_constrained_rule_falls_back_to_least_violation():
    rule = sf.fair_refit(agreement="qwk", constraints={"lf": 0.99})
    res = _results([0.8, 0.7, 0.75], [0.90, 0.97, 0.97])
    with pytest.warns(FairnessConstraintWarning, match="violates them least"):
        assert rule(res) == 2  # tie: higher qwk


def test_pareto_and_weighted_rules():
    res = _results([0.80, 0.75, 0.70, 0.60], [0.85, 0.95, 0.99, 0.90])
    rule = sf.fair_refit(agreement="qwk", selection="pareto")
    assert rule(res) == 0
    assert rule.explain(res)["front"].tolist() == [0, 1, 2]
    w = sf.fair_refit(
        agreement="qwk", selection="weighted", weights={"qwk": 0.2, "lf": 0.8}
    )
    # 0.2*q + 0.8*f: 0.84, 0.91, 0.932, 0.84
    assert w(res) == 2


def test_pareto_front_reference():
    rng = np.random.default_rng(1)
    S = rng.random((40, 3))
    naive = [
        i
        for i in range(40)
        if not any((S[j] >= S[i]).all() and (S[j] > S[i]).any() for j in range(40))
    ]
    assert pareto_front(S).tolist() == naive


def _data(rng, n=90):
    X = rng.normal(size=(n, 6))
    y = np.clip(np.rint(X @ [1.5, 1.0, 0.5, 0, 0, 0] + 6), 0, 12)
    return X, y


def _search(**kw):
    defaults = dict(
        scoring={
            "qwk": sf.make_fairness_scorer("qwk"),
            "lf": sf.make_fairness_scorer("lipschitz_fraction"),
        },
        fairness_constraints={"lf": 0.6},
        refit="qwk",
        cv=3,
    )
    defaults.update(kw)
    return sf.FairGridSearchCV(Ridge(), {"alpha": [0.01, 1.0, 100.0, 1e4]}, **defaults)


def test_fit_exposes_sklearn_attributes_and_fairness_columns(rng):
    X, y = _data(rng)
    search = _search().fit(X, y)
    res = search.cv_results_
    for col in ("mean_test_qwk", "std_test_lf", "rank_test_qwk", "params", "mean_fit_time"):
        assert col in res
    assert res["meets_constraints"].dtype == bool
    assert search.best_params_ == res["params"][search.best_index_]
    assert search.best_score_ == res["mean_test_qwk"][search.best_index_]
    feasible = np.flatnonzero(res["meets_constraints"])
    assert search.best_index_ == feasible[np.argmax(res["mean_test_qwk"][feasible])]
    np.testing.assert_allclose(search.predict(X), search.best_estimator_.predict(X))
    assert search.score(X, y) == sf.qwk(y, search.predict(X))
    assert search.get_params()["refit"] == "qwk"  # the user's value survives fit
    frame = search.summary_frame()
    assert frame.iloc[0]["selected"] and frame["selected"].sum() == 1
    assert {"mean_qwk", "mean_lf", "meets_constraints", "pareto_optimal"} <= set(
        frame.columns
    )
    assert clone(search).get_params()["fairness_constraints"] == {"lf": 0.6}


def test_unmeetable_constraint_warns(rng):
    X, y = _data(rng)
    with pytest.warns(FairnessConstraintWarning, match="no candidate meets the fairness"):
        search = _search(fairness_constraints={"lf": 1.0}).fit(X, y)
    v = search.cv_results_["constraint_violation"]
    assert v[search.best_index_] == v.min()


class ExplodingRegressor(RegressorMixin, BaseEstimator):
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        raise AssertionError("fit must not run when the search is misconfigured")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"fairness_constraints": {"lipschitz": 0.9}},
            r"names 'lipschitz', which is not a scorer",
        ),
        ({"fairness_constraints": {"lf": 1.5}}, r"must be a number in \[0, 1\]"),
        ({"fairness_constraints": {"lf": -0.1}}, r"must be a number in \[0, 1\]"),
        (
            {
                "scoring": {
                    "lf": sf.get_scorer("lipschitz_fraction"),
                    "trend": sf.get_scorer("score_distance_trend"),
                },
                "refit": True,
            },
            r"cannot tell which scorer measures agreement \(found \[\]\)",
        ),
        ({"refit": "lf"}, r"names a fairness scorer"),
        ({"refit": "kappa"}, r"refit='kappa' must name the agreement scorer"),
        (
            {"scoring": {"qwk": sf.get_scorer("qwk")}},
            r"scoring must be a dict with at least",
        ),
        (
            {
                "scoring": {
                    "qwk": sf.get_scorer("qwk"),
                    "smd": sf.get_scorer("neg_abs_smd"),
                },
                "selection": "pareto",
                "fairness_constraints": None,
            },
            r"no fairness scorer in scoring",
        ),
        (
            {"selection": "best"},
            r"'selection' parameter of FairGridSearchCV must be a str among "
            r"\['constrained', 'pareto', 'weighted'\]",
        ),
        (
            {"fairness_constraints": None},
            r"selection='constrained' needs fairness_constraints",
        ),
        (
            {"selection": "weighted", "selection_weights": {"x": 1}},
            r"selection_weights names \['x'\]",
        ),
    ],
)
def test_bad_configuration_fails_before_any_work(rng, kwargs, match):
    X, y = _data(rng, 30)
    defaults = dict(
        scoring={"qwk": sf.get_scorer("qwk"), "lf": sf.get_scorer("lipschitz_fraction")},
        fairness_constraints={"lf": 0.6},
        refit="qwk",
        cv=3,
    )
    defaults.update(kwargs)
    search = sf.FairGridSearchCV(ExplodingRegressor(), {"alpha": [1, 2]}, **defaults)
    with pytest.raises(ValueError, match=match):
        search.fit(X, y)


def _strip_timing(res):
    return {k: v for k, v in res.items() if "time" not in k}


def _assert_same_results(a, b):
    a, b = _strip_timing(a), _strip_timing(b)
    assert a.keys() == b.keys()
    for k in a:
        if k == "params":
            assert a[k] == b[k]
        else:
            np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)


def test_n_jobs_gives_identical_results(rng):
    X, y = _data(rng)
    one = _search(n_jobs=1).fit(X, y)
    two = _search(n_jobs=2).fit(X, y)
    _assert_same_results(one.cv_results_, two.cv_results_)
    assert one.best_index_ == two.best_index_


def test_randomized_search(rng):
    from scipy.stats import loguniform

    X, y = _data(rng)
    search = sf.FairRandomizedSearchCV(
        Ridge(),
        {"alpha": loguniform(1e-2, 1e4)},
        n_iter=5,
        random_state=0,
        scoring={"qwk": sf.get_scorer("qwk"), "lf": sf.get_scorer("lipschitz_fraction")},
        selection="weighted",
        cv=3,
    ).fit(X, y)
    ws = search.cv_results_["weighted_score"]
    assert search.best_index_ == int(np.argmax(ws))
    assert search.agreement_scorer_ == "qwk" and search.fairness_scorers_ == ["lf"]


@pytest.fixture(scope="module")
def essays_small(asap7):
    short = asap7.loc[asap7["essay"].str.len() < 700].iloc[:80]
    return list(short["essay"]), short["domain1_score"].astype(float).to_numpy()


def test_intended_use_as_written(minilm, essays_small):
    """The example of the issue, verbatim apart from the data size."""
    essays, scores = essays_small
    rep = sf.TfidfEssayVectorizer()  # the task's similarity metric
    search = sf.FairGridSearchCV(
        make_pipeline(sf.SentenceBertEncoder(), Ridge()),
        {"ridge__alpha": [0.1, 1, 10]},
        scoring={
            "qwk": sf.make_fairness_scorer("qwk"),
            "lipschitz_fraction": sf.make_fairness_scorer(
                "lipschitz_fraction", representation=rep
            ),
        },
        fairness_constraints={"lipschitz_fraction": 0.95},
        refit="qwk",
        cv=5,
        n_jobs=2,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessConstraintWarning)
        search.fit(essays, scores)
    assert search.best_params_["ridge__alpha"] in (0.1, 1, 10)
    assert search.best_estimator_.predict(essays[:3]).shape == (3,)


def test_every_essay_encoded_once_for_the_whole_search(minilm, essays_small, monkeypatch):
    essays, scores = essays_small
    encoded = []
    real = sf.SentenceBertEncoder._encode

    def counting(self, texts):
        encoded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(sf.SentenceBertEncoder, "_encode", counting)
    cache = sf.EmbeddingCache()
    search = sf.FairGridSearchCV(
        make_pipeline(sf.SentenceBertEncoder(cache=cache), Ridge()),
        {"ridge__alpha": [0.1, 1.0, 10.0]},
        scoring={
            "qwk": sf.get_scorer("qwk"),
            # judged under the model's own SBERT space, sharing its cache
            "lf": sf.make_fairness_scorer(
                "lipschitz_fraction", representation=sf.SentenceBertEncoder(cache=cache)
            ),
        },
        selection="pareto",
        cv=4,
    ).fit(essays, scores)
    assert sorted(encoded) == sorted(essays)
    assert 0 <= search.cv_results_["mean_test_lf"].min() <= 1


def test_tfidf_model_judged_under_sbert_distances(minilm, essays_small):
    essays, scores = essays_small
    sbert_lf = sf.make_fairness_scorer(
        "lipschitz_fraction", representation=sf.SentenceBertEncoder()
    )
    tfidf_lf = sf.make_fairness_scorer(
        "lipschitz_fraction", representation=sf.TfidfEssayVectorizer()
    )
    search = sf.FairGridSearchCV(
        make_pipeline(sf.TfidfEssayVectorizer(), Ridge()),
        {"ridge__alpha": [1.0, 10.0]},
        scoring={"qwk": sf.get_scorer("qwk"), "lf_sbert": sbert_lf, "lf_tfidf": tfidf_lf},
        selection="pareto",
        refit="qwk",
        cv=3,
    ).fit(essays, scores)
    a = search.cv_results_["mean_test_lf_sbert"]
    b = search.cv_results_["mean_test_lf_tfidf"]
    assert not np.allclose(a, b)  # the task's metric changes the verdict
    assert set(search.fairness_scorers_) == {"lf_sbert", "lf_tfidf"}


def test_dask_cluster_gives_identical_results(rng):
    distributed = require_module("distributed", "dask")
    from joblib import parallel_config

    X, y = _data(rng)
    local = _search(n_jobs=1).fit(X, y)
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
        ) as cluster,
        distributed.Client(cluster),
        parallel_config(backend="dask"),
    ):
        remote = _search(n_jobs=-1).fit(X, y)
        # the pairwise engine spreads its blocks over the cluster too
        lf_remote = sf.lipschitz_fraction(X, y, n_jobs=-1, block_size=16)
    _assert_same_results(local.cv_results_, remote.cv_results_)
    assert lf_remote == sf.lipschitz_fraction(X, y)


@pytest.mark.slow
def test_asap7_search_meets_constraint_same_everywhere(minilm, asap7, tmp_path):
    """Issue check: SBERT(MiniLM) + {Ridge, gradient boosting} on all of prompt 7."""
    distributed = require_module("distributed", "dask")
    from joblib import parallel_config

    essays = list(asap7["essay"])
    y = asap7["domain1_score"].astype(float).to_numpy()
    cache_dir = tmp_path / "emb"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sf.exceptions.LongTextWarning)
        E = sf.SentenceBertEncoder(cache=cache_dir).fit(essays).transform(essays)
    assert E.shape == (1569, 384)
    model = make_pipeline(sf.SentenceBertEncoder(cache=str(cache_dir)), Ridge())
    grid = [
        {"ridge": [Ridge()], "ridge__alpha": [1.0, 10.0]},
        {
            # exact-split boosting: no OpenMP threads fighting joblib's workers
            "ridge": [
                GradientBoostingRegressor(
                    n_estimators=60, max_features="sqrt", random_state=0
                )
            ],
            "ridge__max_depth": [2, 3],
        },
    ]

    def run(n_jobs):
        return sf.FairGridSearchCV(
            model,
            grid,
            scoring={
                "qwk": sf.get_scorer("qwk"),
                "lipschitz_fraction": sf.make_fairness_scorer(
                    "lipschitz_fraction",
                    representation=sf.SentenceBertEncoder(cache=str(cache_dir)),
                ),
            },
            fairness_constraints={"lipschitz_fraction": 0.9},
            refit="qwk",
            cv=3,
            n_jobs=n_jobs,
        ).fit(essays, y)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sf.exceptions.LongTextWarning)
        one = run(1)
        two = run(2)
        with (
            distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                host="127.0.0.1",
            ) as cluster,
            distributed.Client(cluster),
            parallel_config(backend="dask"),
        ):
            dask = run(-1)
    assert one.cv_results_["meets_constraints"][one.best_index_]
    for other in (two, dask):
        assert other.best_index_ == one.best_index_
        np.testing.assert_allclose(
            other.cv_results_["mean_test_qwk"], one.cv_results_["mean_test_qwk"], rtol=1e-12
        )
        np.testing.assert_allclose(
            other.cv_results_["mean_test_lipschitz_fraction"],
            one.cv_results_["mean_test_lipschitz_fraction"],
            rtol=1e-12,
        )
