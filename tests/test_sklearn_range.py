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

import ast
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
    # FairnessScorer subclasses sklearn.metrics._scorer._BaseScorer through
    # the one adapter module, whose constructor and call protocol are private:
    # checked on every version run
    from sklearn.metrics._scorer import _BaseScorer

    from sklearn_fairaes._sklearn_adapter import ScorerAdapter

    scorer = sf.make_fairness_scorer("lipschitz_fraction")
    assert isinstance(scorer, ScorerAdapter)
    assert isinstance(scorer, _BaseScorer)
    X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    y = np.array([1.0, 1.0, 3.0, 3.0])
    model = LinearRegression().fit(X, y)
    assert scorer(model, X, y) == sf.lipschitz_fraction(X, model.predict(X))
    assert sf.get_scorer("qwk")(model, X, y) == sf.qwk(y, model.predict(X))
    # what sklearn asks before giving sample_weight to a scorer (routing off)
    assert sf.get_scorer("qwk")._accept_sample_weight() is True
    assert scorer._accept_sample_weight() is False
    with sklearn.config_context(enable_metadata_routing=True):
        assert scorer.set_score_request(embeddings=True) is scorer


class _CountingRegression(LinearRegression):
    # how many times a multi-metric scoring calls predict
    calls = 0

    def predict(self, X):
        type(self).calls += 1
        return super().predict(X)


def test_multi_metric_scoring_predicts_once_per_fold():
    # sklearn shares one predict among the scorers of a dict scoring only for
    # subclasses of its private scorer base: the reason for the adapter
    from sklearn.model_selection import cross_validate

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.rint(X @ [1.0, 0.5] + 3)
    scoring = {n: sf.get_scorer(n) for n in ("qwk", "neg_abs_smd", "lipschitz_fraction")}
    _CountingRegression.calls = 0
    out = cross_validate(_CountingRegression(), X, y, cv=3, scoring=scoring)
    assert _CountingRegression.calls == 3
    assert set(out) >= {f"test_{n}" for n in scoring}


# The one module allowed to import scikit-learn's private API.
_ADAPTER = "sklearn_fairaes/_sklearn_adapter.py"


def _private_sklearn_imports(source):
    """(line, module) of each import of a private sklearn module or name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [(node.module, [a.name for a in node.names])]
        else:
            continue
        for module, names in modules:
            parts = module.split(".")
            if parts[0] != "sklearn":
                continue
            if any(p.startswith("_") for p in parts[1:]) or any(
                n.startswith("_") for n in names
            ):
                found.append((node.lineno, module))
    return found


def test_private_import_scanner_finds_each_form():
    source = (
        "import sklearn.utils._param_validation\n"
        "from sklearn.metrics._scorer import _BaseScorer\n"
        "from sklearn.utils import _safe_indexing\n"
        "from sklearn.metrics import make_scorer\n"
        "import numpy._core\n"
        "from .._validation import check_params\n"
    )
    assert [line for line, _ in _private_sklearn_imports(source)] == [1, 2, 3]


def test_private_scikit_learn_api_only_in_the_adapter():
    found = {}
    for path in sorted((REPO / "sklearn_fairaes").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        hits = _private_sklearn_imports(path.read_text(encoding="utf-8"))
        if hits and rel != _ADAPTER:
            found[rel] = hits
    assert not found, (
        f"private scikit-learn imports outside {_ADAPTER}: {found}; use the public "
        f"API, sklearn_fairaes._param_validation.check_params, or the adapter"
    )
    # the adapter exists and holds the private import it is for
    adapter = (REPO / _ADAPTER).read_text(encoding="utf-8")
    assert [m for _, m in _private_sklearn_imports(adapter)] == ["sklearn.metrics._scorer"]


def test_no_estimator_redefines_sklearn_s_validate_params():
    # BaseEstimator._validate_params checks _parameter_constraints (sklearn's
    # fit calls it); a method of that name with another meaning shadows it
    clashes = []
    for path in sorted((REPO / "sklearn_fairaes").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "_validate_params":
                clashes.append(f"{path.relative_to(REPO).as_posix()}:{node.lineno}")
    assert not clashes, clashes
