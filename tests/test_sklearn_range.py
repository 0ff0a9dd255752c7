"""The supported scikit-learn range (pyproject.toml) is what the code needs.

``make test-floor`` runs these, with the other fast tests of sklearn's
machinery, on the lowest declared scikit-learn; ``make test`` on the newest.
Below 1.6 sklearn has no ``__sklearn_tags__``: the text estimators' tags are
invisible, ``check_estimator`` runs numeric checks on them, and
``sklearn.utils.get_tags`` does not exist (these tests fail there, as measured
on 1.5.2). Below 1.7.1, ``set_output(transform="pandas")`` drops the index of
a pandas Series input (scikit-learn PR #31079), which the text estimators'
contract tests in test_contract.py check (they fail on 1.6.0).
"""

import re

import numpy as np
import sklearn
from conftest import REPO
from packaging.version import Version
from sklearn.linear_model import LinearRegression

import sklearn_fairaes as sf


def _declared_floor():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    found = re.findall(r'"scikit-learn>=([0-9.]+)"', text)
    assert len(found) == 1, found
    return Version(found[0])


def test_installed_scikit_learn_is_in_the_declared_range():
    assert Version(sklearn.__version__) >= _declared_floor()


def test_text_estimator_tags_are_visible_to_scikit_learn():
    from sklearn.utils import get_tags  # 1.6+

    for estimator in (sf.BowVectorizer(), sf.TfidfEssayVectorizer()):
        tags = get_tags(estimator)
        assert tags.input_tags.string
        assert not tags.input_tags.two_d_array
        assert tags.requires_fit


def test_scorer_on_scikit_learn_s_private_base_class():
    # FairnessScorer subclasses sklearn.metrics._scorer._BaseScorer, whose
    # constructor and call protocol are private: checked on every version run
    from sklearn.metrics._scorer import _BaseScorer

    scorer = sf.make_fairness_scorer("lipschitz_fraction")
    assert isinstance(scorer, _BaseScorer)
    X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    y = np.array([1.0, 1.0, 3.0, 3.0])
    model = LinearRegression().fit(X, y)
    assert scorer(model, X, y) == sf.lipschitz_fraction(X, model.predict(X))
    assert sf.get_scorer("qwk")(model, X, y) == sf.qwk(y, model.predict(X))
    with sklearn.config_context(enable_metadata_routing=True):
        assert scorer.set_score_request(embeddings=True) is scorer
