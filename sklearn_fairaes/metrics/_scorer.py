"""Scorers: the package's metrics as objects for ``cross_validate`` and searches.

Agreement scorers (``"qwk"``, ``"neg_abs_smd"``) compare predictions with the
human scores, like any sklearn scorer. Give the QWK scorer the rubric's scale,
``make_fairness_scorer("qwk", score_range=(0, 6))``: without it each test fold
takes its own observed range of human scores as the scale and clips the
predictions into it, so folds are judged on different scales, and a model
predicting a score the fold's humans never gave is not penalised for it.
(Keywords pass through: ``sklearn.metrics.make_scorer(qwk, score_range=(0, 6))``
gives the same value; ``labels=`` works with both as well.) Fairness scorers
(``"lipschitz_fraction"``, ``"score_distance_trend"``, ``"consistency"``,
``"neg_lipschitz_constant_95"``) need the essays'
*task* representation as well: the similarity metric is a property of the
task, not of the model, so a TF-IDF model may be judged under Sentence-BERT
distances. The representation comes, in this order of preference, from

1. per-sample embeddings routed as metadata (``embeddings=``) after
   ``scorer.set_score_request(embeddings=True)`` (sklearn's metadata routing);
2. ``representation=``: an essay transformer. A fitted one is used as it is; an
   unfitted one is cloned and fitted on the essays being scored (the test fold),
   so pass a representation fitted on the whole corpus to keep one vocabulary
   for every fold. Neural encoders go through the embedding cache, so each
   essay is encoded once for a whole search;
3. ``X`` itself, when the model's input is already a numeric matrix.

``"paraphrase_ndcg"`` scores a model's own representation (the transform steps
of a Pipeline) or ``representation=``, against paraphrases routed as metadata
(``paraphrases=``).

All scorers derive from scikit-learn's scorer base class (through
``sklearn_fairaes._sklearn_adapter``, the package's one use of sklearn's
private API), so a multi-metric search calls ``predict`` once per fold for all
of them.

Weights: ``"qwk"`` and ``"neg_abs_smd"`` (and functions with a
``sample_weight`` parameter) are weighted wherever sklearn's own scorers are.
With metadata routing off (sklearn's default), a search or
``cross_validate`` fitted with ``sample_weight`` scores them with the test
fold's weights, as it does ``sklearn.metrics.make_scorer(sf.qwk)``; with
routing on, after ``scorer.set_score_request(sample_weight=True)``. The
fairness scorers have no weighted form (sklearn warns that they do not support
``sample_weight``).

Direction: every scorer is greater-is-better, as sklearn's are. A metric that
is better when smaller is negated and its name starts with ``neg_``:
``"neg_abs_smd"`` (``-|SMD|``) and ``"neg_lipschitz_constant_95"`` (minus the
smallest Lipschitz constant at which 95% of the pairs of a fold satisfy the
condition, :func:`~sklearn_fairaes.metrics.lipschitz_profile`: a smaller
constant means near essays get nearer scores). ``"consistency"`` is AIF360's
consistency of :func:`~sklearn_fairaes.metrics.essay_consistency` (in score
units; 1 is perfectly consistent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from .._config import _settings_for, config_context, get_config
from .._sklearn_adapter import ScorerAdapter
from .._validation import check_embeddings, check_essays, check_scores
from ._agreement import qwk, standardized_mean_difference
from ._individual import lipschitz_fraction, score_distance_curve
from ._ranking import paraphrase_ndcg
from ._review import essay_consistency, lipschitz_profile

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import ArrayLike, NDArray

__all__ = ["make_fairness_scorer", "get_scorer", "get_scorer_names", "FairnessScorer"]


# The agreement wrappers name ``sample_weight``, as their metrics do: sklearn
# reads a scorer's default metadata request from its function's signature.
def _qwk(
    y_true: ArrayLike, y_pred: ArrayLike, *, sample_weight: Any = None, **kwargs: Any
) -> float:
    # A search over a continuous target (averaged raters, a regression over a
    # rescaled scale) gives real-valued human scores, which qwk's default
    # rounding="round" refuses. The scorer rounds them to integer score points
    # (halves to even) as it does the predictions, like SKLL's kappa, which
    # RSMTool uses; pass rounding=None for the continuous QWK instead.
    if kwargs.get("rounding", "round") == "round":
        y_true = np.rint(check_scores(y_true, name="y_true"))
    return cast(float, qwk(y_true, y_pred, sample_weight=sample_weight, **kwargs))


def _abs_smd(
    y_true: ArrayLike, y_pred: ArrayLike, *, sample_weight: Any = None, **kwargs: Any
) -> float:
    smd = standardized_mean_difference(
        y_true, y_pred, sample_weight=sample_weight, **kwargs
    )
    return abs(cast(float, smd))


def _trend(X: Any, y_pred: ArrayLike, **kwargs: Any) -> float:
    return float(score_distance_curve(X, y_pred, **kwargs).spearman_rho)


def _paraphrase_ndcg(X: Any, X_para: Any, **kwargs: Any) -> float:
    return paraphrase_ndcg(X, X_para, **kwargs)


def _consistency(X: Any, y_pred: ArrayLike, **kwargs: Any) -> float:
    return float(essay_consistency(X, y_pred, **kwargs).consistency)


def _lipschitz_constant_95(
    X: Any,
    y_pred: ArrayLike,
    *,
    normalize: str | None = "minmax",
    metric: Any = "cosine",
    n_jobs: int | None = None,
    block_size: int | None = None,
) -> float:
    # The keywords of lipschitz_profile but the quantile, which the name fixes.
    # One constant is counted as well (the profile needs one); it is cheap.
    profile = lipschitz_profile(
        X,
        y_pred,
        constants=(1.0,),
        quantiles=(0.95,),
        normalize=normalize,  # type: ignore[arg-type]
        metric=metric,
        n_jobs=n_jobs,
        block_size=block_size,
    )
    return float(profile.quantile_constants[0])


# name -> (function, kind, greater_is_better, needs, the public metric whose
# keywords the scorer takes)
_REGISTRY: dict[str, tuple[Callable[..., Any], str, bool, str, Callable[..., Any]]] = {
    "qwk": (_qwk, "agreement", True, "scores", qwk),
    "neg_abs_smd": (_abs_smd, "agreement", False, "scores", standardized_mean_difference),
    "lipschitz_fraction": (
        lipschitz_fraction,
        "fairness",
        True,
        "pairs",
        lipschitz_fraction,
    ),
    "score_distance_trend": (_trend, "fairness", True, "pairs", score_distance_curve),
    "consistency": (_consistency, "fairness", True, "pairs", essay_consistency),
    "neg_lipschitz_constant_95": (
        _lipschitz_constant_95,
        "fairness",
        False,
        "pairs",
        _lipschitz_constant_95,
    ),
    "paraphrase_ndcg": (
        _paraphrase_ndcg,
        "fairness",
        True,
        "paraphrases",
        paraphrase_ndcg,
    ),
}
# arguments the scorer itself supplies: never fixed keywords
_SUPPLIED = {"sample_weight", "return_counts", "return_details"}
# a scorer returns one number: the bootstrap options (which make a metric
# return a Bunch) are not its keywords, nor the seed of an agreement metric,
# which seeds only the bootstrap
_BOOTSTRAP = {"n_bootstrap", "confidence_level"}
# the paraphrase scorer samples essays: seeded by default, so that two
# identical calls give the same value
_DEFAULT_SEED = 0


def _keywords(func: Callable[..., Any]) -> list[str] | None:
    """The keyword options of a metric (None when it takes any: ``**kwargs``)."""
    import inspect

    params = list(inspect.signature(func).parameters.values())
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    left_out = set(_SUPPLIED)
    if any(p.name == "n_bootstrap" for p in params):
        left_out |= _BOOTSTRAP | ({"random_state"} if params[0].name == "y_true" else set())
    # the first two parameters are the data (y_true/X and y_pred/X_paraphrased)
    return sorted(
        p.name
        for p in params[2:]
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in left_out
    )


def _accepts_sample_weight(func: Callable[..., Any]) -> bool:
    import inspect

    params = inspect.signature(func).parameters.values()
    return any(p.name == "sample_weight" or p.kind is p.VAR_KEYWORD for p in params)


def get_scorer_names() -> list[str]:
    """Return the names accepted by :func:`get_scorer` and :func:`make_fairness_scorer`.

    Returns
    -------
    names : list of str
        Sorted.

    Examples
    --------
    >>> from sklearn_fairaes import get_scorer_names
    >>> get_scorer_names()
    ['consistency', 'lipschitz_fraction', 'neg_abs_smd', 'neg_lipschitz_constant_95',
     'paraphrase_ndcg', 'qwk', 'score_distance_trend']
    """
    return sorted(_REGISTRY)


def _is_text(X: object) -> bool:
    if isinstance(X, (list, tuple)):
        return bool(X) and isinstance(X[0], str)
    dtype = getattr(X, "dtype", None)
    if dtype is not None and getattr(X, "ndim", 1) == 1:
        return dtype.kind in "OUS" or str(dtype) in ("string", "str")
    return False


def _fitted(representation: Any, essays: Sequence[str]) -> Any:
    """The representation itself when fitted, else a clone fitted on ``essays``."""
    try:
        check_is_fitted(representation)
        return representation
    except NotFittedError:
        return clone(representation).fit(essays)


def _represent(representation: Any, essays: Sequence[str]) -> Any:
    out = _fitted(representation, essays).transform(essays)
    return out.to_numpy() if hasattr(out, "to_numpy") else out


class FairnessScorer(ScorerAdapter):
    """A scorer that compares predictions with pairwise distances of the essays.

    Built by :func:`make_fairness_scorer`; see the module docstring for where
    the task representation comes from. Use it wherever sklearn takes a
    scorer. ``kind`` tells :class:`~sklearn_fairaes.FairGridSearchCV` whether
    it measures agreement or fairness.

    The scorer keeps the package's settings (:func:`~sklearn_fairaes.set_config`)
    in force when it is made, and scores under them wherever the calling thread
    has set none: scikit-learn's joblib workers (``cross_validate(n_jobs=2)``,
    ``GridSearchCV``) start from the defaults, so a scorer made inside
    ``config_context(pair_backend="torch")`` counts with torch there too. A
    thread that sets its own settings (``set_config`` or ``config_context``
    around the call) scores under those.

    Parameters
    ----------
    score_func : callable
        The metric: ``score_func(y_true, y_pred, **kwargs)`` when ``needs`` is
        ``"scores"``, ``score_func(X, y_pred, **kwargs)`` when it is
        ``"pairs"``, ``score_func(Z, Z_paraphrased, **kwargs)`` when it is
        ``"paraphrases"``.
    sign : {1, -1}
        Multiplies the metric's value: -1 turns a lower-is-better metric into a
        score.
    kwargs : dict
        Options passed to ``score_func`` on every call.
    kind : {"agreement", "fairness"}
        Whether the scorer measures agreement with the human scores or fairness.
    needs : {"scores", "pairs", "paraphrases"}
        What the predictions are compared with: the human scores, the distances
        of the essays under the task representation, or the essays'
        paraphrases.
    representation : transformer, default=None
        The task representation of the essays; an unfitted one is fitted on the
        essays being scored.
    name : str, default=None
        Name of the metric, shown in messages and in the repr.
    text_column : str, int or callable, default=None
        Where the essays are in ``X`` when ``X`` is a DataFrame or a 2-D
        array (the input of a ColumnTransformer): a column name, a column
        position, or a function ``X -> essays``. None: ``X`` is the essays.
    weighted : bool, default=False
        Whether the metric takes ``sample_weight``: a search fitted with
        ``sample_weight`` gives it to the scorer (with metadata routing off,
        sklearn's default; with routing on, after
        ``set_score_request(sample_weight=True)``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn_fairaes import make_fairness_scorer
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> y = np.array([1.0, 1.0, 3.0, 3.0])
    >>> scorer = make_fairness_scorer("lipschitz_fraction")
    >>> round(scorer(LinearRegression().fit(X, y), X, y), 3)  # 5 of the 6 pairs
    0.833
    """

    def __init__(
        self,
        score_func: Callable[..., Any],
        sign: int,
        kwargs: dict[str, Any],
        *,
        kind: str,
        needs: str,
        representation: Any = None,
        name: str | None = None,
        text_column: str | int | Callable[[Any], Any] | None = None,
        weighted: bool = False,
    ) -> None:
        super().__init__(score_func, sign, kwargs)
        self.kind = kind
        self._needs = needs
        self._representation = representation
        self._name = name
        self._text_column = text_column
        self._weighted = weighted
        # sklearn's joblib workers (cross_validate, GridSearchCV) start from
        # our defaults: sklearn's delayed carries only sklearn's settings. The
        # scorer is made in the caller's thread, so it carries ours.
        self._config = get_config()

    def __repr__(self) -> str:
        rep = (
            ""
            if self._representation is None
            else f", representation={self._representation!r}"
        )
        if self._text_column is not None:
            rep += f", text_column={self._text_column!r}"
        kw = "".join(f", {k}={v!r}" for k, v in self._kwargs.items())
        return f"make_fairness_scorer({self._name!r}{rep}{kw})"

    def _essays(self, X: Any) -> list[str]:
        """The essays of ``X``: ``X`` itself, or its ``text_column``."""
        column = self._text_column
        if column is None:
            if hasattr(X, "columns") and getattr(X, "shape", (0, 1))[1] != 1:
                raise ValueError(
                    f"scorer {self._name!r} received a DataFrame with {X.shape[1]} "
                    f"columns; pass text_column='<name of the essay column>' to "
                    f"make_fairness_scorer so that it can find the essays"
                )
            return check_essays(X)
        if callable(column):
            return check_essays(column(X), name=f"text_column({type(X).__name__})")
        if hasattr(X, "columns"):
            if column not in X.columns:
                known = sorted(map(str, X.columns))
                shown = known if len(known) <= 10 else [*known[:10], "..."]
                raise ValueError(
                    f"text_column={column!r} is not a column of X (columns: {shown}); "
                    f"pass the name of the column that holds the essays"
                )
            return check_essays(X[column], name=f"X[{column!r}]")
        array = np.asarray(X, dtype=object)
        if array.ndim != 2 or not isinstance(column, int):
            raise ValueError(
                f"text_column={column!r} needs X to be a DataFrame (a column name) or a "
                f"2-D array (a column position); got {type(X).__name__} of "
                f"{array.ndim} dimension(s)"
            )
        if not -array.shape[1] <= column < array.shape[1]:
            raise ValueError(
                f"text_column={column} is out of range for X with {array.shape[1]} columns"
            )
        return check_essays(array[:, column], name=f"X[:, {column}]")

    def _task_matrix(self, X: Any, embeddings: Any, estimator: Any = None) -> Any:
        if embeddings is not None:
            return check_embeddings(embeddings, name="embeddings")
        if self._representation is not None:
            return _represent(self._representation, self._essays(X))
        if estimator is not None and self._needs == "paraphrases":
            return None
        if self._text_column is not None or _is_text(X):
            raise ValueError(
                f"scorer {self._name!r} received raw essays but has no task "
                f"representation; pass representation= (e.g. "
                f"sf.TfidfEssayVectorizer()) to make_fairness_scorer, or route "
                f"precomputed embeddings with set_score_request(embeddings=True)"
            )
        return X

    def _model_representation(self, estimator: Any, essays: Sequence[str]) -> Any:
        if self._text_column is not None:
            raise ValueError(
                "paraphrase_ndcg with text_column= cannot run the model's own "
                "representation on paraphrases (its input has other columns); pass "
                "representation= to make_fairness_scorer"
            )
        if not isinstance(estimator, Pipeline) or len(estimator.steps) < 2:
            raise ValueError(
                "paraphrase_ndcg scores a representation: pass representation= to "
                "make_fairness_scorer, or score a Pipeline whose first steps "
                "transform the essays"
            )
        out = estimator[:-1].transform(essays)
        return out.to_numpy() if hasattr(out, "to_numpy") else out

    def _takes_sample_weight(self) -> bool:
        # with metadata routing off, a search fitted with sample_weight gives
        # it to the scorers that say they take it: the weighted metrics
        return self._weighted

    def _evaluate(
        self,
        predict: Callable[[Any, Any], Any],
        estimator: Any,
        X: Any,
        y_true: Any,
        **kwargs: Any,
    ) -> float:
        # the settings it was made under, unless this thread set its own
        # (getattr: a scorer pickled by an older version has none)
        config = _settings_for(getattr(self, "_config", get_config()))
        with config_context(**config):
            return self._score_configured(predict, estimator, X, y_true, **kwargs)

    def _score_configured(
        self,
        predict: Callable[[Any, Any], Any],
        estimator: Any,
        X: Any,
        y_true: Any,
        **kwargs: Any,
    ) -> float:
        embeddings = kwargs.pop("embeddings", None)
        paraphrases = kwargs.pop("paraphrases", None)
        if kwargs.get("sample_weight") is not None and not self._weighted:
            raise TypeError(
                f"scorer {self._name!r} has no weighted form and takes no "
                f"sample_weight; call set_score_request(sample_weight=False) on it "
                f"(the weighted scorers are 'qwk' and 'neg_abs_smd')"
            )
        if not self._weighted:
            kwargs.pop("sample_weight", None)
        scoring_kwargs = {**self._kwargs, **kwargs}
        if self._needs == "paraphrases":
            if paraphrases is None:
                raise ValueError(
                    "paraphrase_ndcg needs the paraphrase of every essay: call "
                    "scorer.set_score_request(paraphrases=True) and pass "
                    "paraphrases=... to fit/cross_validate (metadata routing)"
                )
            essays = self._essays(X)
            para = check_essays(paraphrases, name="paraphrases")
            if self._representation is not None:
                fitted = _fitted(self._representation, essays)
                Z, Zp = (np.asarray(_densify(fitted.transform(t))) for t in (essays, para))
            else:
                Z = _densify(self._model_representation(estimator, essays))
                Zp = _densify(self._model_representation(estimator, para))
            scoring_kwargs.setdefault("n_samples", min(100, len(essays)))
            return self._sign * self._score_func(Z, Zp, **scoring_kwargs)
        y_pred = predict(estimator, X)
        if self._needs == "scores":
            return self._sign * self._score_func(y_true, y_pred, **scoring_kwargs)
        Z = self._task_matrix(X, embeddings)
        return self._sign * self._score_func(Z, y_pred, **scoring_kwargs)


def _densify(Z: Any) -> NDArray[Any]:
    return Z.toarray() if hasattr(Z, "toarray") else np.asarray(Z)


def make_fairness_scorer(
    metric: str | Callable[..., float],
    *,
    representation: Any = None,
    text_column: str | int | Callable[[Any], Any] | None = None,
    greater_is_better: bool | None = None,
    **kwargs: Any,
) -> FairnessScorer:
    """Make a scorer from a metric of this package, by name or as a function.

    Parameters
    ----------
    metric : str or callable
        A name from :func:`get_scorer_names`, or a function. A function is
        taken as an agreement metric ``f(y_true, y_pred, **kwargs)`` unless its
        first parameter is called ``X`` (then it is a pair metric
        ``f(X, y_pred, **kwargs)``, like :func:`lipschitz_fraction`).
    representation : transformer, default=None
        The task representation for pair metrics (see the module docs). An
        unfitted one is fitted on the essays being scored.
    text_column : str, int or callable, default=None
        Where ``representation`` finds the essays when the model's input
        ``X`` is a DataFrame (e.g. for a ColumnTransformer over an essay
        column and numeric columns): a column name, a column position (2-D
        array), or a function ``X -> essays``. None: ``X`` is the essays.
    greater_is_better : bool, default=None
        Only for functions; names know their direction. ``False`` negates.
    **kwargs
        Passed to the metric on every call (e.g. ``normalize="max"``); checked
        against the metric's keywords here, so a typo fails at once.
        ``"paraphrase_ndcg"`` samples essays with ``random_state=0`` unless
        given another. The ``"qwk"`` scorer rounds real-valued human scores
        to integer score points (halves to even) as it rounds the
        predictions, as SKLL's kappa (used by RSMTool) does; pass
        ``rounding=None`` for the continuous QWK, and
        ``score_range=(low, high)`` (the rubric's scale: the predictions are
        trimmed to it as RSMTool does, see :func:`~sklearn_fairaes.metrics.qwk`)
        so that every fold is scored on the same scale.

    Returns
    -------
    scorer : FairnessScorer
        Callable as ``scorer(estimator, X, y)``; ``scorer.kind`` is
        ``"agreement"`` or ``"fairness"``. To use precomputed task embeddings,
        enable metadata routing and call ``scorer.set_score_request(embeddings=True)``.
        The agreement scorers (and functions with a ``sample_weight``
        parameter) are weighted by a search's ``sample_weight``: with routing
        off as sklearn's scorers are, with routing on after
        ``set_score_request(sample_weight=True)``.

    Raises
    ------
    TypeError
        On a keyword the metric does not take (the message lists the valid
        ones), or a representation without ``transform``.
    ValueError
        On an unknown metric name.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn_fairaes import make_fairness_scorer
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> y = np.array([1, 2, 3, 4])
    >>> model = LinearRegression().fit(X, y)
    >>> make_fairness_scorer("qwk")(model, X, y)
    1.0
    >>> make_fairness_scorer("qwk").kind
    'agreement'

    The rubric's scale: the same value as scikit-learn's kappa with
    ``labels`` (the predictions 1 to 4 are already on it, so nothing is trimmed):

    >>> from sklearn.metrics import cohen_kappa_score
    >>> scorer = make_fairness_scorer("qwk", score_range=(0, 6))
    >>> value = cohen_kappa_score(y, model.predict(X).round(), labels=range(7),
    ...                           weights="quadratic")
    >>> bool(abs(scorer(model, X, y) - value) < 1e-12)
    True
    """
    if isinstance(metric, str):
        if metric not in _REGISTRY and f"neg_{metric}" in _REGISTRY:
            raise ValueError(
                f"unknown metric {metric!r}: smaller is better for it, so its scorer "
                f"is negated, as sklearn's are; use 'neg_{metric}'"
            )
        if metric not in _REGISTRY:
            raise ValueError(
                f"unknown metric {metric!r}; choose one of {get_scorer_names()} or pass "
                f"a function"
            )
        if greater_is_better is not None:
            raise ValueError(
                f"greater_is_better is fixed for named metrics ({metric!r}); pass it only "
                f"with a function"
            )
        func, kind, gib, needs, public = _REGISTRY[metric]
        name = metric
        if needs == "paraphrases":
            kwargs.setdefault("random_state", _DEFAULT_SEED)
    elif callable(metric):
        import inspect

        params = list(inspect.signature(metric).parameters)
        needs = "pairs" if params and params[0] == "X" else "scores"
        kind = "fairness" if needs == "pairs" else "agreement"
        func, gib = metric, True if greater_is_better is None else bool(greater_is_better)
        name = getattr(metric, "__name__", repr(metric))
        public = metric
    else:
        raise TypeError(f"metric must be a name or a function, got {type(metric).__name__}")
    valid = _keywords(public)
    if valid is not None:
        unknown = sorted(set(kwargs) - set(valid))
        if unknown:
            raise TypeError(
                f"make_fairness_scorer({name!r}) got unexpected keyword(s) {unknown}; "
                f"the metric's keywords are {valid}"
            )
    if text_column is not None:
        if needs == "scores":
            raise ValueError(
                f"{name!r} compares predictions with human scores and reads no essays; "
                f"drop text_column"
            )
        if not (callable(text_column) or isinstance(text_column, (str, int))) or (
            isinstance(text_column, bool)
        ):
            raise TypeError(
                f"text_column must be a column name (str), a column position (int) or "
                f"a function X -> essays, got {type(text_column).__name__}"
            )
    if representation is not None and not hasattr(representation, "transform"):
        raise TypeError(
            f"representation must be a transformer with fit/transform (e.g. "
            f"sf.TfidfEssayVectorizer()), got {type(representation).__name__}"
        )
    if needs == "scores" and representation is not None:
        raise ValueError(
            f"{name!r} compares predictions with human scores and takes no representation"
        )
    return FairnessScorer(
        func,
        1 if gib else -1,
        kwargs,
        kind=kind,
        needs=needs,
        representation=representation,
        name=name,
        text_column=text_column,
        weighted=_accepts_sample_weight(public),
    )


def get_scorer(name: str) -> FairnessScorer:
    """Return the scorer of a metric name, with default options.

    Parameters
    ----------
    name : str
        One of :func:`get_scorer_names`; fairness scorers made this way use
        ``X`` as the task representation (see :func:`make_fairness_scorer`).

    Returns
    -------
    scorer : FairnessScorer
        The scorer of ``name``, as :func:`make_fairness_scorer` makes it
        without options.

    Examples
    --------
    >>> from sklearn_fairaes import get_scorer
    >>> get_scorer("lipschitz_fraction").kind
    'fairness'
    """
    return make_fairness_scorer(name)
