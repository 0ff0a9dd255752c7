"""Contract tests for every public estimator.

sklearn's ``check_estimator`` skips its data checks for estimators that take raw
strings, so the text estimators get a text-input version of them here, in one
parametrised test over every public estimator (and every perturbation):
not-fitted error, fit returns self, idempotent fit, parameters untouched (and
``clone`` equal), pickling, empty input refused, list/array/Series/tuple input,
``get_feature_names_out``, ``set_output`` per sklearn's rules, and no input
mutation. The searches, which take numeric input, go through sklearn's own
``parametrize_with_checks``. A meta-test makes sure no public estimator is left
unclassified.
"""

import inspect
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import PROMPT7, missing_resource, require_module
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks

import sklearn_fairaes
from sklearn_fairaes._validation import check_embeddings
from sklearn_fairaes.perturb import PERTURBATIONS, get_perturbation
from sklearn_fairaes.resources import ResourceNotFoundError

# 5 tiny texts: the real-model encoders (MiniLM, the tiny LASER) stay fast
ESSAYS = [
    "I waited for the bus in the rain for an hour.",
    "My brother was patient when he learned to ride a bike.",
    "Patience is a virtue, my grandmother always said to @PERSON1.",
    "",
    "We waited and waited at the doctor's office. The bus finally came!",
]
SCORES = np.array([3.0, 4.0, 5.0, 0.0, 3.0])
CHEAP_FEATURES = ["answer_length", "word_count", "avg_word_length", "unique_words"]


def _wordnet():
    from sklearn_fairaes.resources import ensure_wordnet

    try:
        ensure_wordnet()
    except ResourceNotFoundError as exc:
        missing_resource(f"WordNet ({exc})")


def _sbert(request):
    model = request.getfixturevalue("minilm")
    return sklearn_fairaes.SentenceBertEncoder(model, cache=None)


def _laser(request):
    require_module("laserembeddings", "laser")
    from laser_tiny import write_tiny_laser

    folder = request.getfixturevalue("tmp_path_factory").mktemp("laser_tiny")
    write_tiny_laser(folder, seed=0)
    return sklearn_fairaes.LaserEncoder(model_dir=folder, cache=None)


def _paraphraser(request):
    _wordnet()
    try:
        return sklearn_fairaes.WordNetParaphraser(random_state=0).fit(["Fit me."])
    except ResourceNotFoundError as exc:
        missing_resource(f"POS tagger ({exc})")


def _features(request):
    return sklearn_fairaes.InterpretableFeatures(prompt=PROMPT7, features=CHEAP_FEATURES)


def _perturbation(name):
    def make(request):
        if name in ("synonym", "negation"):
            _wordnet()
        if name == "word_salad":
            require_module("spellchecker", "spelling")
        return get_perturbation(name, random_state=0, prompt=PROMPT7)

    return make


# name -> (factory(request) -> unfitted estimator, kind of output)
TEXT_ESTIMATORS = {
    "BowVectorizer": (lambda r: sklearn_fairaes.BowVectorizer(min_df=1), "sparse"),
    "TfidfEssayVectorizer": (
        lambda r: sklearn_fairaes.TfidfEssayVectorizer(min_df=1),
        "sparse",
    ),
    "SentenceBertEncoder": (_sbert, "dense"),
    "LaserEncoder": (_laser, "dense"),
    "InterpretableFeatures": (_features, "dense"),
    "WordNetParaphraser": (_paraphraser, "text"),
    **{f"perturbation:{n}": (_perturbation(n), "text") for n in sorted(PERTURBATIONS)},
}
# estimators checked elsewhere, with the test that covers them
ELSEWHERE = {
    "FairGridSearchCV": "test_searches_pass_sklearn_checks (sklearn's own checks)",
    "FairRandomizedSearchCV": "test_searches_pass_sklearn_checks (sklearn's own checks)",
    "ReferenceSimilarityGrader": "test_grader_contract (DataFrame input)",
    # regressors that call a function or a service: predict, not transform
    "FunctionScorer": "test_scorers.py::test_scorer_contract",
    "HTTPScorer": "test_scorers.py::test_scorer_contract (a loopback service)",
    "OpenAIScorer": "test_scorers_openai.py::test_grader_contract (a loopback grader)",
}


def _public_estimators():
    out = {}
    for name in sklearn_fairaes.__all__:
        obj = getattr(sklearn_fairaes, name)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
            out[name] = obj
    return out


def test_every_public_estimator_is_classified():
    known = set(TEXT_ESTIMATORS) | set(ELSEWHERE)
    missing = set(_public_estimators()) - known
    assert not missing, f"add contract tests for {sorted(missing)}"
    classes = {type(get_perturbation(n)) for n in PERTURBATIONS}
    assert classes == set(PERTURBATIONS.values())  # every perturbation class


def _out(X):
    """Output as a plain array: sparse densified, texts as an object array."""
    if sp.issparse(X):
        return X.toarray()
    if hasattr(X, "to_numpy"):
        return X.to_numpy()
    if isinstance(X, list):
        return np.array(X, dtype=object)
    return np.asarray(X)


def _same(a, b):
    a, b = _out(a), _out(b)
    assert a.shape == b.shape
    if a.dtype == object:
        assert a.tolist() == b.tolist()
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def _params_equal(a, b):
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        assert x is y or type(x) is type(y) and repr(x) == repr(y), key


@pytest.mark.parametrize("name", sorted(TEXT_ESTIMATORS))
def test_text_estimator_contract(name, request):
    factory, kind = TEXT_ESTIMATORS[name]
    est = factory(request)
    est = clone(est)  # unfitted, whatever the factory did
    tags = get_tags(est)
    assert tags.input_tags.string and not tags.input_tags.two_d_array
    before = est.get_params(deep=False)
    _params_equal(clone(est).get_params(deep=False), before)

    # not fitted: transform refuses, unless the estimator needs no fit
    if tags.requires_fit:
        with pytest.raises(NotFittedError, match="not fitted"):
            est.transform(ESSAYS)

    # empty input refused, with a message
    with pytest.raises(ValueError, match=r"holds 0 essays|empty vocabulary"):
        clone(est).fit([], SCORES[:0])

    essays = list(ESSAYS)
    y = SCORES if tags.target_tags.required else None
    assert est.fit(essays, y) is est
    assert essays == ESSAYS  # input not mutated
    _params_equal(est.get_params(deep=False), before)  # fit leaves params alone
    out = est.transform(essays)
    assert len(_out(out)) == len(ESSAYS)
    _same(est.transform(essays), out)  # deterministic
    _same(est.fit(essays, y).transform(essays), out)  # idempotent fit
    _same(clone(est).fit(essays, y).transform(essays), out)  # clone refits alike
    again = pickle.loads(pickle.dumps(est))
    _same(again.transform(essays), out)

    # every container of essays gives the same output, in fit and in transform
    # (one fit per container would load the real models many times over)
    pd = require_module("pandas", "report")
    containers = (tuple(ESSAYS), np.array(ESSAYS, dtype=object), np.array(ESSAYS),
                  pd.Series(ESSAYS, index=range(7, 12)))  # fmt: skip
    for container in containers:
        _same(est.transform(container), out)
    fitted_on_tuple = clone(est).fit(containers[0], y)
    for container in containers:
        _same(fitted_on_tuple.transform(container), out)
    with pytest.raises(ValueError, match="position 2 of X is None"):
        est.transform(["a", "b", None])

    if kind == "text":
        assert isinstance(out, list) and all(isinstance(t, str) for t in out)
        return
    names = est.get_feature_names_out()
    assert len(names) == _out(out).shape[1] and len(set(names)) == len(names)
    assert all(isinstance(n, str) for n in names)
    if kind == "sparse":
        assert sp.issparse(out)
        with pytest.raises(ValueError, match="outputs a sparse matrix"):
            clone(est).set_output(transform="pandas")
        return
    frame = clone(est).set_output(transform="pandas").fit(essays, y)
    frame = frame.transform(pd.Series(essays, index=range(7, 12)))
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == list(names)
    assert list(frame.index) == list(range(7, 12))
    np.testing.assert_allclose(frame.to_numpy(), _out(out), rtol=1e-6, atol=1e-6)


def test_interpretable_features_tag_says_when_y_is_needed():
    # the default learns the good POS n-grams from the scores
    default = sklearn_fairaes.InterpretableFeatures(prompt=PROMPT7)
    assert get_tags(default).target_tags.required
    cheap = sklearn_fairaes.InterpretableFeatures(features=CHEAP_FEATURES)
    assert not get_tags(cheap).target_tags.required
    with_ref = sklearn_fairaes.InterpretableFeatures(reference=(ESSAYS, SCORES))
    assert not get_tags(with_ref).target_tags.required
    # tags never raise, even on parameters fit refuses
    assert not get_tags(
        sklearn_fairaes.InterpretableFeatures(features=3)
    ).target_tags.required


def test_grader_contract():
    pd = require_module("pandas", "report")
    X = pd.DataFrame(
        {"answer": ["Plants need light.", "Roots drink water.", "Leaves are green."],
         "reference": ["Plants need light and water."] * 3}
    )  # fmt: skip
    est = sklearn_fairaes.ReferenceSimilarityGrader(
        sklearn_fairaes.TfidfEssayVectorizer(min_df=1)
    )
    before = est.get_params(deep=False)
    with pytest.raises(NotFittedError, match="not fitted"):
        est.predict(X)
    with pytest.raises(ValueError, match="holds 0 essays|empty vocabulary|no rows"):
        clone(est).fit(X.iloc[:0])
    assert est.fit(X) is est
    _params_equal(est.get_params(deep=False), before)
    pred = est.predict(X)
    np.testing.assert_array_equal(est.fit(X).predict(X), pred)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict(X), pred)
    np.testing.assert_array_equal(clone(est).fit(X).predict(X), pred)


def _search_instances():
    # r2 for agreement: the checks fit on random data whose rounded predictions
    # are often one score, where QWK is undefined (NaN, with a warning)
    scoring = {
        "r2": "r2",
        "lipschitz_fraction": sklearn_fairaes.make_fairness_scorer("lipschitz_fraction"),
    }
    constraints = {"lipschitz_fraction": 0.0}
    # error_score="raise": a fit refusing bad data raises its ValueError, as the
    # checks expect, instead of a FitFailedWarning (an error under this suite's
    # filterwarnings = error)
    grid = sklearn_fairaes.FairGridSearchCV(
        Ridge(), {"alpha": [0.1, 1.0]}, scoring=scoring,
        fairness_constraints=constraints, refit="r2", cv=2, error_score="raise",
    )  # fmt: skip
    rand = sklearn_fairaes.FairRandomizedSearchCV(
        Ridge(), {"alpha": [0.1, 1.0]}, scoring=scoring, n_iter=2,
        fairness_constraints=constraints, refit="r2", cv=2, random_state=0,
        error_score="raise",
    )  # fmt: skip
    return [grid, rand]


def _check_name(check):
    return getattr(check, "func", check).__name__


def _search_checks():
    # sklearn's own GridSearchCV(Ridge()) fails check_supervised_y_2d the same
    # way (Ridge is multi-output, the search's tags do not say so)
    same_as_sklearn = {
        "check_supervised_y_2d": "sklearn's GridSearchCV(Ridge()) fails it too (1.9.1)"
    }
    mark = parametrize_with_checks(
        _search_instances(), expected_failed_checks=lambda est: same_as_sklearn
    )
    argnames, params = mark.args
    kept = []
    for param in params:
        values = param.values if hasattr(param, "values") else param
        # the array API checks need optional array libraries (array_api_strict,
        # cupy, dpnp) and SCIPY_ARRAY_API=1; they would only ever skip here
        if not _check_name(values[1]).startswith("check_array_api"):
            kept.append(param)
    assert len(kept) > 50  # the data checks are all there
    return pytest.mark.parametrize(argnames, kept, **mark.kwargs)


@_search_checks()
def test_searches_pass_sklearn_checks(estimator, check):
    check(estimator)


def test_object_arrays_of_numbers_are_embeddings():
    # sklearn's check_dtype_object: the fairness scorer refused them
    X = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(check_embeddings(X.astype(object)), X)
    bad = X.astype(object)
    bad[1, 2] = {"foo": "bar"}
    with pytest.raises(TypeError, match=r"X must hold numbers.*argument must be a str"):
        check_embeddings(bad)
    with pytest.raises(TypeError, match="embed the essays first"):
        check_embeddings(np.array([["an essay", 1.0]], dtype=object))
