"""Contract tests for every public estimator.

sklearn's ``check_estimator`` skips almost everything for estimators that take raw
strings, so text transformers get these checks instead: clone, pickle, feature
names, pandas output, no input mutation, determinism. A meta-test makes sure no
public estimator is left unclassified.
"""

import copy
import inspect
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import require_module
from sklearn.base import BaseEstimator, clone

import sklearn_fairaes

ESSAYS = [
    "I waited for the bus in the rain for an hour.",
    "My brother was patient when he learned to ride a bike.",
    "Patience is a virtue, my grandmother always said to @PERSON1.",
    "",
    "We waited and waited at the doctor's office.",
    "The bus finally came and everyone cheered.",
]
SCORES = np.array([3.0, 4.0, 5.0, 0.0, 3.0, 2.0])


def _bow():
    return sklearn_fairaes.BowVectorizer(min_df=1)


def _tfidf():
    return sklearn_fairaes.TfidfEssayVectorizer(min_df=1)


def _sbert():
    require_module("sentence_transformers", "sbert")
    return sklearn_fairaes.SentenceBertEncoder(cache=None)


# name -> factory; estimators needing special resources have their own contract
# tests in their modules (listed in ELSEWHERE with the test that covers them).
TEXT_TRANSFORMERS = {
    "BowVectorizer": _bow,
    "TfidfEssayVectorizer": _tfidf,
    "SentenceBertEncoder": _sbert,
}
ELSEWHERE = {
    "LaserEncoder": "tests/test_laser.py (needs the tiny LASER model fixture)",
    "InterpretableFeatures": "tests/test_features.py (needs a prompt and scores)",
    "WordNetParaphraser": "tests/test_paraphrase.py (text in, text out)",
    "FairGridSearchCV": "tests/test_model_selection.py (a meta-estimator)",
    "FairRandomizedSearchCV": "tests/test_model_selection.py (a meta-estimator)",
    "ReferenceSimilarityGrader": "tests/test_short_answers.py (DataFrame input)",
}


def _public_estimators():
    out = {}
    for name in sklearn_fairaes.__all__:
        obj = getattr(sklearn_fairaes, name)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
            out[name] = obj
    return out


def test_every_public_estimator_is_classified():
    known = set(TEXT_TRANSFORMERS) | set(ELSEWHERE) | set(OTHER_ESTIMATORS)
    missing = set(_public_estimators()) - known
    assert not missing, f"add contract tests for {sorted(missing)}"


OTHER_ESTIMATORS = {}


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


@pytest.mark.parametrize("name", sorted(TEXT_TRANSFORMERS))
def test_text_transformer_contract(name):
    est = TEXT_TRANSFORMERS[name]()
    params = copy.deepcopy(est.get_params())
    # __init__ stores params untouched; clone reproduces them
    assert clone(est).get_params().keys() == params.keys()
    essays = list(ESSAYS)
    fitted = est.fit(essays, SCORES)
    assert fitted is est
    assert essays == ESSAYS  # input not mutated
    out1 = _dense(est.transform(essays))
    out2 = _dense(est.transform(essays))
    np.testing.assert_array_equal(out1, out2)  # deterministic
    assert out1.shape[0] == len(ESSAYS)
    names = est.get_feature_names_out()
    assert len(names) == out1.shape[1] and len(set(names)) == len(names)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_allclose(_dense(again.transform(essays)), out1, atol=1e-6)
    refit = clone(est).fit(essays)
    np.testing.assert_allclose(_dense(refit.transform(essays)), out1, atol=1e-6)
    pd = require_module("pandas", "report")
    frame = (
        clone(est).set_output(transform="pandas").fit(essays).transform(pd.Series(essays))
    )
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == list(names)
    with pytest.raises(ValueError, match="position 2 of X is None"):
        est.transform(["a", "b", None])
