"""The fairness selection rule as a public refit rule for sklearn's searches,
and FairGridSearchCV as a thin convenience over it (issue 21).

Each test starts from a reproducer of the issue; references are sklearn's own
searches (GridSearchCV / RandomizedSearchCV with the rule as ``refit``) and
the package's metrics called by hand.
"""

import pickle
import threading

import numpy as np
import pytest
import sklearn
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold, RandomizedSearchCV

import sklearn_fairaes as sf
from sklearn_fairaes.model_selection import FairnessConstraintWarning, FairRefit


def _data(seed=0, n=90):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = np.clip(np.rint(X @ [1.5, 1.0, 0.5, 0, 0, 0] + 6), 0, 12)
    return X, y


GRID = {"alpha": [0.01, 1.0, 100.0, 1e4]}


def _scoring():
    return {
        "qwk": sf.make_fairness_scorer("qwk"),
        "lf": sf.make_fairness_scorer("lipschitz_fraction"),
    }


def _strip(res):
    return {k: v for k, v in res.items() if "time" not in k}


def _assert_same(a, b):
    a, b = _strip(a), _strip(b)
    for k in b:
        if k == "params":
            assert a[k] == b[k]
        else:
            np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)


@pytest.mark.parametrize("selection", ["pareto", "weighted", "constrained"])
def test_score_works_with_the_default_refit(selection):
    # issue 21: refit=True with selection="pareto" made score() raise KeyError: True
    X, y = _data()
    constraints = {"lf": 0.6} if selection == "constrained" else None
    search = sf.FairGridSearchCV(
        Ridge(),
        GRID,
        scoring=_scoring(),
        selection=selection,
        fairness_constraints=constraints,
        cv=3,
    ).fit(X, y)
    assert search.get_params()["refit"] is True
    assert search.score(X, y) == sf.qwk(y, search.best_estimator_.predict(X))
    assert search.best_score_ == search.cv_results_["mean_test_qwk"][search.best_index_]


def test_refit_false_behaves_as_in_sklearn():
    X, y = _data()
    search = sf.FairGridSearchCV(
        Ridge(), GRID, scoring=_scoring(), selection="pareto", refit=False, cv=3
    ).fit(X, y)
    plain = GridSearchCV(Ridge(), GRID, scoring=_scoring(), refit=False, cv=3).fit(X, y)
    for attr in ("best_estimator_", "best_index_", "best_params_", "best_score_"):
        assert hasattr(search, attr) == hasattr(plain, attr) == False  # noqa: E712
    _assert_same(search.cv_results_, plain.cv_results_)
    # the fairness view is still there
    assert (
        search.pareto_front_.tolist()
        == np.flatnonzero(search.cv_results_["pareto_optimal"]).tolist()
    )
    with pytest.raises(AttributeError, match=r"initialized with refit=False"):
        search.score(X, y)
    with pytest.raises(AttributeError, match=r"has no attribute 'predict'"):
        search.predict(X)  # as plain.predict(X)


def test_user_callable_refit_is_respected():
    X, y = _data()
    search = sf.FairGridSearchCV(
        Ridge(), GRID, scoring=_scoring(), selection="pareto", refit=lambda r: 3, cv=3
    ).fit(X, y)
    assert search.best_index_ == 3
    assert search.best_params_ == {"alpha": 1e4}
    assert search.score(X, y) == sf.qwk(y, search.best_estimator_.predict(X))


@pytest.mark.parametrize(
    ("kwargs", "rule"),
    [
        ({"fairness_constraints": {"lf": 0.6}}, {"constraints": {"lf": 0.6}}),
        ({"selection": "pareto"}, {"selection": "pareto"}),
        (
            {"selection": "weighted", "selection_weights": {"qwk": 0.3, "lf": 0.7}},
            {"selection": "weighted", "weights": {"qwk": 0.3, "lf": 0.7}},
        ),
    ],
)
def test_fair_search_equals_plain_search_with_fair_refit(kwargs, rule):
    X, y = _data(1)
    fair = sf.FairGridSearchCV(Ridge(), GRID, scoring=_scoring(), cv=3, **kwargs).fit(X, y)
    plain = GridSearchCV(
        Ridge(),
        GRID,
        scoring=_scoring(),
        cv=3,
        refit=sf.fair_refit(agreement="qwk", **rule),
    ).fit(X, y)
    _assert_same(fair.cv_results_, plain.cv_results_)
    assert fair.best_index_ == plain.best_index_
    np.testing.assert_array_equal(fair.predict(X), plain.predict(X))


def test_fair_refit_in_randomized_search():
    from scipy.stats import loguniform

    X, y = _data(2)
    rule = sf.fair_refit(agreement="qwk", constraints={"lf": 0.6})
    dist = {"alpha": loguniform(1e-2, 1e4)}
    plain = RandomizedSearchCV(
        Ridge(), dist, n_iter=5, random_state=0, scoring=_scoring(), refit=rule, cv=3
    ).fit(X, y)
    fair = sf.FairRandomizedSearchCV(
        Ridge(),
        dist,
        n_iter=5,
        random_state=0,
        scoring=_scoring(),
        fairness_constraints={"lf": 0.6},
        cv=3,
    ).fit(X, y)
    assert fair.best_index_ == plain.best_index_
    res = plain.cv_results_
    feasible = np.flatnonzero(res["mean_test_lf"] >= 0.6)
    assert plain.best_index_ == feasible[np.argmax(res["mean_test_qwk"][feasible])]


def test_halving_search_takes_no_dict_scoring():
    # why the docs send halving users to a full search: sklearn's halving
    # searches accept a single metric only, so a fairness rule has no
    # fairness scores to read
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingGridSearchCV

    X, y = _data()
    halving = HalvingGridSearchCV(
        Ridge(),
        GRID,
        scoring=_scoring(),
        refit=sf.fair_refit(agreement="qwk", selection="pareto"),
    )
    with pytest.raises(ValueError, match=r"scoring"):
        halving.fit(X, y)


def test_rule_pickles_and_has_a_clear_repr():
    rule = sf.fair_refit(constraints={"lf": 0.9}, agreement="qwk")
    assert repr(rule) == "fair_refit(agreement='qwk', constraints={'lf': 0.9})"
    assert repr(sf.fair_refit(selection="pareto")) == "fair_refit(selection='pareto')"
    again = pickle.loads(pickle.dumps(rule))
    assert isinstance(again, FairRefit)
    res = {
        "mean_test_qwk": np.array([0.80, 0.75, 0.70]),
        "mean_test_lf": np.array([0.85, 0.95, 0.99]),
    }
    assert again(res) == rule(res) == 1
    # a fitted search with a rule pickles too
    X, y = _data()
    rule = sf.fair_refit(constraints={"lf": 0.6}, agreement="qwk")
    search = GridSearchCV(Ridge(), GRID, scoring=_scoring(), refit=rule, cv=3).fit(X, y)
    assert pickle.loads(pickle.dumps(search)).best_index_ == search.best_index_


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"selection": "best"},
            ValueError,
            r"one of \['constrained', 'pareto', 'weighted'\]",
        ),
        ({}, ValueError, r"selection='constrained' needs constraints"),
        ({"constraints": {"lf": 1.5}}, ValueError, r"'lf' must be a number in \[0, 1\]"),
        (
            {"selection": "pareto", "weights": {"lf": 1}},
            ValueError,
            r"weights are used only by selection='weighted'",
        ),
        ({"selection": "pareto", "agreement": 3}, TypeError, r"agreement must be the name"),
    ],
)
def test_rule_is_validated_at_creation(kwargs, error, match):
    with pytest.raises(error, match=match):
        sf.fair_refit(**kwargs)


def test_rule_checks_names_against_the_search():
    res = {"mean_test_qwk": np.array([0.8]), "mean_test_lf": np.array([0.9])}
    with pytest.raises(ValueError, match=r"names 'lipschitz', which is not a scorer"):
        sf.fair_refit(constraints={"lipschitz": 0.5})(res)
    with pytest.raises(ValueError, match=r"cannot tell which scorer measures agreement"):
        sf.fair_refit(selection="pareto")(res)
    with pytest.raises(ValueError, match=r"needs a search with a dict scoring"):
        sf.fair_refit(selection="pareto")({"mean_test_score": np.array([0.8])})


def test_constrained_rule_warns_inside_a_plain_search():
    X, y = _data()
    search = GridSearchCV(
        Ridge(),
        GRID,
        scoring=_scoring(),
        refit=sf.fair_refit(agreement="qwk", constraints={"lf": 1.0}),
        cv=3,
    )
    with pytest.warns(FairnessConstraintWarning, match=r"no candidate meets"):
        search.fit(X, y)


class _Watched(sf.FairGridSearchCV):
    """Fails on any assignment to a public parameter once watching starts."""

    def __setattr__(self, name, value):
        if self.__dict__.get("_watching") and name in self._get_param_names():
            raise AssertionError(f"fit assigned the parameter {name!r}")
        super().__setattr__(name, value)


def test_fit_never_assigns_its_own_parameters():
    # the root cause of issue 21: fit swapped its rule into self.refit
    X, y = _data()
    search = _Watched(Ridge(), GRID, scoring=_scoring(), selection="pareto", cv=3)
    search.__dict__["_watching"] = True
    search.fit(X, y)
    assert search.refit is True


def test_one_search_object_fitted_from_two_threads():
    X, y = _data()
    search = sf.FairGridSearchCV(
        Ridge(), GRID, scoring=_scoring(), selection="pareto", cv=3
    )
    seen = []

    def run():
        search.fit(X, y)
        seen.append(search.get_params()["refit"])

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [True, True]
    assert search.score(X, y) == sf.qwk(y, search.predict(X))


def test_metadata_routing_through_the_fair_search():
    X, y = _data(3)
    w = np.random.default_rng(5).uniform(0.2, 3.0, size=y.size)
    with sklearn.config_context(enable_metadata_routing=True):
        scoring = {
            "qwk": sf.make_fairness_scorer("qwk").set_score_request(sample_weight=True),
            "lf": sf.make_fairness_scorer("lipschitz_fraction"),
        }
        model = Ridge().set_fit_request(sample_weight=False)
        fair = sf.FairGridSearchCV(
            model, GRID, scoring=scoring, selection="pareto", cv=KFold(3)
        )
        fair.get_metadata_routing()  # raised for refit=True before
        fair.fit(X, y, sample_weight=w)
        plain = GridSearchCV(
            model,
            GRID,
            scoring=scoring,
            cv=KFold(3),
            refit=sf.fair_refit(agreement="qwk", selection="pareto"),
        ).fit(X, y, sample_weight=w)
        weighted_score = fair.score(X, y, sample_weight=w)
    _assert_same(fair.cv_results_, plain.cv_results_)
    assert weighted_score == pytest.approx(
        sf.qwk(y, fair.predict(X), sample_weight=w), abs=1e-12
    )
    unweighted = sf.FairGridSearchCV(
        Ridge(), GRID, scoring=_scoring(), selection="pareto", cv=KFold(3)
    ).fit(X, y)
    assert not np.allclose(
        unweighted.cv_results_["mean_test_qwk"], fair.cv_results_["mean_test_qwk"]
    )
