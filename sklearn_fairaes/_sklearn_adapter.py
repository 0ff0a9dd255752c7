"""The one module of the package that uses scikit-learn's private API.

scikit-learn has no public base class for a scorer, and
:func:`sklearn.metrics.make_scorer` only makes scorers of
``score_func(y_true, y_pred)``: the package's fairness scorers also need the
essays ``X`` (their task representation), so they cannot be made with it.
Two behaviours that users of a scorer rely on are open only to subclasses of
sklearn's private ``sklearn.metrics._scorer._BaseScorer``:

1. a multi-metric search (a dict ``scoring``) or ``cross_validate`` calls
   ``predict`` once per fold and shares it among the scorers, but only among
   ``_BaseScorer`` instances (through their ``_score(method_caller, ...)``);
   any other callable predicts again, which is slow for a model that encodes
   essays with a neural network;
2. with metadata routing off (sklearn's default), a search fitted with
   ``sample_weight`` asks every scorer ``_accept_sample_weight()`` (and calls
   it on each scorer of a dict without checking it exists) to decide whether
   the scorer gets the weights.

:class:`ScorerAdapter` is that subclass, and the only use of sklearn's private
API in the package (``tests/test_sklearn_range.py`` checks that no other
module imports any): it translates sklearn's protocol into two hooks of ours,
:meth:`ScorerAdapter._evaluate` and :meth:`ScorerAdapter._takes_sample_weight`.
Metadata routing (``set_score_request``, ``get_metadata_routing``) is
inherited unchanged. The protocol is the same from scikit-learn 1.7.1 (the
floor in ``pyproject.toml``, run by ``make test-floor``) to 1.9;
``tests/test_sklearn_range.py`` and ``tests/test_scorer_sklearn.py`` exercise
it on both ends of that range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sklearn.metrics._scorer import _BaseScorer

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["ScorerAdapter"]


class ScorerAdapter(_BaseScorer):
    """sklearn's private scorer protocol, seen through two hooks of ours.

    Subclasses implement :meth:`_evaluate` and :meth:`_takes_sample_weight`;
    sklearn's ``__call__`` (argument checks, ``sample_weight``, routed
    metadata), ``set_score_request`` and ``get_metadata_routing`` are
    inherited.

    Parameters
    ----------
    score_func : callable
        The metric; kept as sklearn's scorers keep it (its signature is what
        sklearn inspects for the default metadata requests).
    sign : {1, -1}
        Multiplies the metric's value: -1 turns a lower-is-better metric into
        a score.
    kwargs : dict
        Options passed to ``score_func`` on every call.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn_fairaes._sklearn_adapter import ScorerAdapter
    >>> class MeanPrediction(ScorerAdapter):
    ...     def _takes_sample_weight(self):
    ...         return False
    ...     def _evaluate(self, predict, estimator, X, y_true, **metadata):
    ...         return self._sign * float(np.mean(predict(estimator, X)))
    >>> X, y = np.array([[0.0], [1.0]]), np.array([1.0, 3.0])
    >>> MeanPrediction(None, 1, {})(LinearRegression().fit(X, y), X, y)
    2.0
    """

    def __init__(
        self, score_func: Callable[..., Any], sign: int, kwargs: dict[str, Any]
    ) -> None:
        super().__init__(score_func, sign, kwargs, response_method="predict")

    # -- our hooks ---------------------------------------------------------
    def _evaluate(
        self,
        predict: Callable[[Any, Any], Any],
        estimator: Any,
        X: Any,
        y_true: Any,
        **metadata: Any,
    ) -> float:
        """The score of ``estimator`` on ``X``; ``predict(estimator, X)`` predicts.

        ``predict`` returns the predictions that sklearn shares among the
        scorers of a multi-metric search (computed once per fold);
        ``metadata`` holds ``sample_weight`` and the routed metadata.
        """
        raise NotImplementedError

    def _takes_sample_weight(self) -> bool:
        """Whether the scorer weights its metric by ``sample_weight``."""
        raise NotImplementedError

    # -- sklearn's private protocol (the same from 1.7.1 to 1.9) -----------
    def _score(
        self,
        method_caller: Callable[..., Any],
        estimator: Any,
        X: Any,
        y_true: Any,
        **kwargs: Any,
    ) -> float:
        def predict(est: Any, X_: Any) -> Any:
            return method_caller(est, "predict", X_)

        return self._evaluate(predict, estimator, X, y_true, **kwargs)

    def _accept_sample_weight(self) -> bool:
        # sklearn's default answers for score_func's signature, which is not
        # the metric's for our wrapped metrics (see the module docstring, 2.)
        return self._takes_sample_weight()
