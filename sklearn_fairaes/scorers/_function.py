"""A Python function (texts -> scores) as a scikit-learn regressor."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ._base import CallScorer

__all__ = ["FunctionScorer"]


class FunctionScorer(CallScorer):
    """A Python function that scores a list of texts, as a scikit-learn regressor.

    The function is named, not held (``"package.module:function"``), so
    that the scorer is clone-able and picklable, and its name is the spec of
    the cache key. It takes a list of texts and returns one number per text;
    it is called in batches of ``batch_size`` on ``concurrency`` threads.
    ``fit`` learns nothing: the function is used as it is.

    Parameters
    ----------
    function : str
        ``"package.module:function"`` (or ``"package.module:Class.method"``),
        importable in this process.
    batch_size : int, default=64
        Texts per call.
    concurrency : int, default=1
        Calls in flight at once (threads).
    max_retries : int, default=0
        Further tries of a call that raised a retryable error or answered
        unusably (a local function rarely fails transiently).
    backoff : float, default=0.5
        Seconds before the first retry, doubled each time.
    max_calls : int or None, default=None
        Most calls this scorer may send; ``predict`` refuses, before any
        call, texts whose uncached batches would pass it. None: no limit.
    cache : str, path or None, default=None
        A SQLite file of answers (see :class:`HTTPScorer`); None: none kept.
    score_range : tuple of two float or None, default=None
        The declared scale ``(low, high)``: a score outside it is a bad
        answer, retried and then refused (see :class:`HTTPScorer`).

    Attributes
    ----------
    spec_ : str
        ``"python:" + function``, the scorer's name in the cache and messages.

    See Also
    --------
    HTTPScorer : A scoring service called over HTTP.
    make_scorer_from_spec : Either one from a spec string.

    Examples
    --------
    >>> from sklearn_fairaes.scorers import FunctionScorer
    >>> scorer = FunctionScorer("sklearn_fairaes.scorers._examples:n_words")
    >>> scorer.fit(["one two", "three"]).spec_
    'python:sklearn_fairaes.scorers._examples:n_words'
    >>> scorer.predict(["one two", "three four five"]).tolist()
    [2.0, 3.0]
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **CallScorer._parameter_constraints,
        "function": [str],
    }

    def __init__(
        self,
        function: str,
        *,
        batch_size: int = 64,
        concurrency: int = 1,
        max_retries: int = 0,
        backoff: float = 0.5,
        max_calls: int | None = None,
        cache: Any = None,
        score_range: tuple[float, float] | None = None,
    ) -> None:
        self.function = function
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_calls = max_calls
        self.cache = cache
        self.score_range = score_range

    def _spec(self) -> str:
        return f"python:{self.function}"

    def _check_params(self) -> None:
        module, sep, attr = self.function.partition(":")
        if not sep or not module or not attr:
            raise ValueError(
                f"FunctionScorer's function must be 'package.module:function', got "
                f"{self.function!r}"
            )

    def _resolve(self) -> Callable[[list[str]], Any]:
        module_name, _, attr = self.function.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(
                f"FunctionScorer {self.function!r}: cannot import module "
                f"{module_name!r} ({exc}); install it or put it on PYTHONPATH"
            ) from None
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise ValueError(
                    f"FunctionScorer {self.function!r}: module {module_name!r} has no "
                    f"{attr!r}; check the name after the colon"
                )
            obj = getattr(obj, part)
        if not callable(obj):
            raise ValueError(f"FunctionScorer {self.function!r} is not callable")
        return obj

    def _before_calls(self) -> None:
        self._resolve()  # an import error before any thread starts

    def _call(self, texts: list[str]) -> Any:
        return self._resolve()(list(texts))
