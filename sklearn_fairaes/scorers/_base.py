"""What every scorer you call shares: the cache, batches, threads, retries, budget.

A subclass says how to send one batch of texts (``_call``) and how it is
named in messages (``_spec``) and in the cache (``_cache_spec``: the spec,
plus whatever else changes the answers, such as a grader's prompt; never
credentials); everything else is here, so that another client is one
method more.

**Bad answers.** An answer that holds no finite number per text, or (when
the scorer declares ``score_range``) a score off that scale, is retried like
a failed call; a text still answered badly after the retries is *refused*.
The other texts go on being scored (their answers cached), up to
``MAX_REFUSED`` refused texts, after which no new call starts; then one
:class:`ScorerError` counts and lists every refused text (position and
reason, in ``refused``). A refused text is never given a score: no NaN, no
clipped value. The repeat index of the cache key is there
for scoring each essay several times (test-retest consistency): ``predict``
is repeat 0.
"""

from __future__ import annotations

import math
import numbers
import os
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, RegressorMixin

from .._param_validation import Interval, check_params
from ._cache import ResponseCache, entry_key

__all__ = ["ScorerError", "CallScorer", "RetryableError", "BadAnswerError"]


class ScorerError(ValueError):
    """A scorer you call could not score some texts, or answered unusably.

    Raised after the retries, naming the scorer (its spec, without
    credentials) and, where one essay is at fault, its position.

    Parameters
    ----------
    message : str
        What went wrong and how to fix it.
    scorer : str
        The scorer's spec (``"python:pkg.mod:fn"`` or its URL).
    position : int or None, default=None
        The 0-based position, in the texts given to ``predict``, of the first
        text at fault; None when no one text is (an unreachable server).
    refused : dict of int to str, default=None
        Every text refused after its retries: position -> why (``"score 9
        is off the scale [0, 6]"``); empty when the scorer failed as a whole.

    Examples
    --------
    >>> from sklearn_fairaes.scorers import ScorerError
    >>> err = ScorerError("answered 'n/a'", "http://127.0.0.1:8000/score", position=2)
    >>> err.scorer, err.position, err.refused
    ('http://127.0.0.1:8000/score', 2, {})
    """

    def __init__(
        self,
        message: str,
        scorer: str,
        position: int | None = None,
        refused: dict[int, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.scorer = scorer
        self.position = position
        self.refused = dict(refused or {})

    def __reduce__(self) -> Any:
        # the keyword arguments survive pickling (a joblib worker's error)
        return (type(self), (str(self), self.scorer, self.position, self.refused))


class RetryableError(Exception):
    """A failure worth another try (429, 5xx, a timeout, a refused connection)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BadAnswerError(Exception):
    """An answer without one finite number per text: retried, then a ScorerError."""

    def __init__(
        self, message: str, offset: int | None = None, offsets: dict[int, str] | None = None
    ) -> None:
        super().__init__(message)
        self.offset = offset  # within the batch
        # every text of the batch at fault (offset -> why), when more than one is
        self.offsets = offsets or ({} if offset is None else {offset: message})


#: Longest wait for one retry, whatever Retry-After asks (a server asking for
#: an hour is better refused with its message than waited for in silence).
MAX_WAIT_S = 60.0

#: Refused texts after which no new call starts: a grader that answers every
#: essay unusably is stopped before it is paid for every essay.
MAX_REFUSED = 10

#: Refused texts a ScorerError's message lists (``refused`` holds them all).
LISTED = 10


class CallScorer(RegressorMixin, BaseEstimator):
    """Base of the scorers you call (texts -> one score each); see the module docstring."""

    _parameter_constraints: dict[str, list[Any]] = {
        "batch_size": [Interval(numbers.Integral, 1, None)],
        "concurrency": [Interval(numbers.Integral, 1, None)],
        "max_retries": [Interval(numbers.Integral, 0, None)],
        "backoff": [Interval(numbers.Real, 0, None)],
        "max_calls": [Interval(numbers.Integral, 0, None), None],
        "cache": [str, os.PathLike, None],
        "score_range": [tuple, list, None],
    }

    #: Scored again under a repeat index (``_scores(X, repeat=)``, ``repeats``).
    _repeatable = True

    #: The declared scale of the scores, (low, high), both ends included;
    #: a subclass takes it as a parameter (None: no scale is checked).
    score_range: Any = None

    # -- what a subclass gives -------------------------------------------------

    def _spec(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _cache_spec(self) -> str:
        """The scorer's name in the cache: its spec, plus what else changes answers."""
        return self._spec()

    def _call(self, texts: list[str]) -> Any:  # pragma: no cover - abstract
        """One request: the raw list of scores, or RetryableError / BadAnswerError."""
        raise NotImplementedError

    def _check_params(self) -> None:
        """The subclass's own checks, after the declared constraints."""

    # -- scikit-learn ------------------------------------------------------------

    def fit(self, X: Any = None, y: Any = None) -> CallScorer:
        """Check the parameters; nothing is learned (the scorer is called as it is).

        Parameters
        ----------
        X : list of str, default=None
            Ignored (the texts of a Pipeline or cross-validation fold).
        y : array-like, default=None
            Ignored.

        Returns
        -------
        self : object
            The scorer, with ``spec_`` (its name in the cache and in messages).
        """
        self._validate()
        self.spec_ = self._spec()
        return self

    def __sklearn_is_fitted__(self) -> bool:
        # called as it is, like refit=False: predict needs no fit
        return True

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = False
        tags.non_deterministic = True  # a remote grader may answer differently
        return tags

    def predict(self, X: Sequence[str]) -> NDArray[np.float64]:
        """Score each text: cached answers first, the rest called in batches.

        Parameters
        ----------
        X : list of str
            The texts (essays), one score each.

        Returns
        -------
        scores : ndarray of shape (n_texts,)
            One finite float per text, in the order of ``X``.
        """
        return self._scores(X, repeat=0)

    def predict_repeats(self, X: Sequence[str], n_repeats: int) -> NDArray[np.float64]:
        """Score each text ``n_repeats`` times: the test-retest scores.

        Repeat ``r`` is a call of its own (cache repeat index ``r``), so a
        stochastic grader may answer it differently; repeat 0 is ``predict``'s
        answer, so with a cache the first column costs nothing after
        ``predict``, and raising ``n_repeats`` later calls only the new
        repeats. A :class:`FunctionScorer` calls the function again; an
        :class:`HTTPScorer` sends the same request again. Without a cache
        every repeat is called.

        Parameters
        ----------
        X : list of str
            The texts (essays).
        n_repeats : int
            Scores per text, at least 1.

        Returns
        -------
        scores : ndarray of shape (n_texts, n_repeats)
            Column ``r`` holds repeat ``r`` (column 0 equals ``predict(X)``
            when the answers are cached).

        Examples
        --------
        >>> from sklearn_fairaes.scorers import FunctionScorer
        >>> scorer = FunctionScorer("sklearn_fairaes.scorers._examples:n_words")
        >>> scorer.predict_repeats(["one two", "three"], 3).tolist()
        [[2.0, 2.0, 2.0], [1.0, 1.0, 1.0]]
        """
        if (
            isinstance(n_repeats, bool)
            or not isinstance(n_repeats, numbers.Integral)
            or n_repeats < 1
        ):
            raise ValueError(
                f"n_repeats must be a whole number >= 1, got {n_repeats!r}; e.g. 3 "
                f"scores each text three times"
            )
        columns = [self._scores(X, repeat=r) for r in range(int(n_repeats))]
        return np.stack(columns, axis=1)

    def n_calls_needed(self, X: Sequence[str], *, repeat: int = 0) -> int:
        """How many calls ``predict(X)`` would send now (the dry run: none is sent).

        Parameters
        ----------
        X : list of str
            The texts to score.
        repeat : int, default=0
            The repeat index whose cached answers count (0 is ``predict``'s).

        Returns
        -------
        n_calls : int
            Batches of the distinct texts without a cached answer (retries
            come on top).
        """
        self._validate()
        texts = _texts(X, self._spec())
        keys = self._keys(texts, repeat)
        missing = self._missing(keys)
        return math.ceil(len(missing) / self.batch_size)

    # -- the work ----------------------------------------------------------------

    def _validate(self) -> None:
        check_params(self, self._parameter_constraints)
        self._scale()
        self._check_params()

    def _scale(self) -> tuple[float, float] | None:
        """``score_range`` as (low, high) floats, or None; a ValueError if malformed."""
        scale = self.score_range
        if scale is None:
            return None
        name = type(self).__name__
        if len(scale) != 2 or not all(
            isinstance(v, (numbers.Real, np.number)) and not isinstance(v, bool)
            for v in scale
        ):
            raise ValueError(
                f"{name}'s score_range must be (low, high), two numbers, got {scale!r}; "
                f"e.g. score_range=(1, 6)"
            )
        low, high = float(scale[0]), float(scale[1])
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(
                f"{name}'s score_range must be finite with low < high, got {scale!r}"
            )
        return low, high

    def _keys(self, texts: list[str], repeat: int) -> list[str]:
        spec = self._cache_spec()
        return [entry_key(spec, t, repeat) for t in texts]

    def _cached(self, store: ResponseCache, keys: list[str]) -> dict[str, float]:
        """The cached answers of ``keys`` that are on the scale declared now.

        An answer kept under a wider scale than today's is asked again (and
        judged then) rather than used off the scale.
        """
        found = store.get_many(keys)
        scale = self._scale()
        if scale is None:
            return found
        return {k: v for k, v in found.items() if scale[0] <= v <= scale[1]}

    def _missing(self, keys: list[str]) -> list[str]:
        distinct = list(dict.fromkeys(keys))
        if self.cache is None:
            return distinct
        store = ResponseCache(self.cache)
        try:
            found = self._cached(store, distinct)
        finally:
            store.close()
        return [k for k in distinct if k not in found]

    def _scores(self, X: Sequence[str], *, repeat: int) -> NDArray[np.float64]:
        self._validate()
        spec = self._spec()
        texts = _texts(X, spec)
        keys = self._keys(texts, repeat)
        store = None if self.cache is None else ResponseCache(self.cache)
        try:
            known = {} if store is None else self._cached(store, keys)
            first_at: dict[str, int] = {}
            for i, k in enumerate(keys):
                if k not in known:
                    first_at.setdefault(k, i)
            todo = list(first_at.items())
            batches = [
                todo[s : s + self.batch_size] for s in range(0, len(todo), self.batch_size)
            ]
            sent = getattr(self, "_n_calls_sent", 0)
            if self.max_calls is not None and sent + len(batches) > self.max_calls:
                raise ScorerError(
                    f"scorer {spec!r} needs {len(batches)} call(s) for {len(todo)} text(s) "
                    f"without a cached answer, over the budget max_calls={self.max_calls} "
                    f"({self.max_calls - sent} left after {sent} sent); nothing was sent. "
                    f"Raise max_calls (--max-calls), or score fewer essays",
                    spec,
                )
            self._before_calls()
            known.update(self._run(batches, texts, store, spec))
        finally:
            if store is not None:
                store.close()
        return np.array([known[k] for k in keys], dtype=np.float64)

    def _before_calls(self) -> None:
        """A subclass's check before the first call (a token that is not set)."""

    def _run(
        self,
        batches: list[list[tuple[str, int]]],
        texts: list[str],
        store: ResponseCache | None,
        spec: str,
    ) -> dict[str, float]:
        """Send the batches on ``concurrency`` threads; keep each answer as it comes."""
        got: dict[str, float] = {}
        if not batches:
            return got
        # a window of `concurrency` batches in flight, the next one submitted as
        # one ends: after a failure nothing new starts (the answers of those
        # already in flight are still kept), where submitting every batch at
        # once would let the workers drain the queue before the error is seen
        queue = iter(batches)
        pending: dict[Any, list[tuple[str, int]]] = {}
        failure: BaseException | None = None
        # texts answered badly after their retries: the others go on, up to
        # MAX_REFUSED, so that one error lists them all (see the module docstring)
        refusals: list[ScorerError] = []
        refused: dict[int, str] = {}
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches)))

        def submit() -> None:
            batch = next(queue, None)
            if batch is not None:
                texts_of = [texts[i] for _, i in batch]
                future = pool.submit(self._one_batch, texts_of, [i for _, i in batch], spec)
                pending[future] = batch
                # the budget counts what was sent (main thread only): a run
                # stopped early leaves the rest of the budget to the re-run
                self._n_calls_sent = getattr(self, "_n_calls_sent", 0) + 1

        try:
            for _ in range(self.concurrency):
                submit()
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = pending.pop(future)
                    try:
                        values = future.result()
                    except ScorerError as exc:
                        if not exc.refused:
                            failure = failure or exc
                            continue
                        refusals.append(exc)
                        refused.update(exc.refused)
                        if failure is None and len(refused) < MAX_REFUSED:
                            submit()
                        continue
                    except Exception as exc:  # the function's own
                        failure = failure or exc
                        continue
                    entries = {k: v for (k, _), v in zip(batch, values)}
                    got.update(entries)
                    if store is not None:
                        store.put_many(entries)  # kept at once: a re-run resumes
                    if failure is None and len(refused) < MAX_REFUSED:
                        submit()
        finally:
            # Ctrl-C: what has not started is not sent
            pool.shutdown(wait=True, cancel_futures=True)
        if failure is not None:
            raise failure
        if len(refusals) == 1 and next(queue, None) is None:
            raise refusals[0]
        if refusals:
            n_todo = sum(len(b) for b in batches)
            raise self._refused_error(refused, spec, n_todo - len(got) - len(refused))
        return got

    def _refused_error(
        self, refused: dict[int, str], spec: str, unscored: int
    ) -> ScorerError:
        """One ScorerError counting and listing every refused text."""
        order = sorted(refused)
        listed = "; ".join(f"position {i}: {refused[i]}" for i in order[:LISTED])
        more = f"; and {len(order) - LISTED} more" if len(order) > LISTED else ""
        stopped = (
            f" After {len(order)} refused texts no further call was sent "
            f"({unscored} text(s) left unscored)."
            if len(order) >= MAX_REFUSED
            else ""
        )
        return ScorerError(
            f"scorer {spec!r} answered unusably for {len(order)} text(s) after "
            f"{self.max_retries + 1} attempt(s) each: {listed}{more}.{stopped} "
            f"{self._answer_rule()}; the answers of every call without a refused "
            f"text are kept in the cache, so a re-run asks only for the rest",
            spec,
            position=order[0],
            refused=refused,
        )

    def _answer_rule(self) -> str:
        scale = self._scale()
        rule = "it must answer one finite number per text"
        if scale is not None:
            rule += f" within its scale [{scale[0]:g}, {scale[1]:g}] (score_range)"
        return rule

    def _one_batch(self, texts: list[str], positions: list[int], spec: str) -> list[float]:
        """One batch with its retries: the scores, or a ScorerError."""
        last: Exception | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                asked = getattr(last, "retry_after", None)
                delay = asked if asked is not None else self.backoff * 2 ** (attempt - 1)
                time.sleep(min(float(delay), MAX_WAIT_S))
            try:
                return self._on_scale(_numbers(self._call(texts), len(texts)))
            except (RetryableError, BadAnswerError) as exc:
                last = exc
        tries = f"{self.max_retries + 1} attempt(s)"
        if isinstance(last, BadAnswerError):
            offset = last.offset
            at = None if offset is None else positions[offset]
            which = (
                f"texts at positions {positions[0]}..{positions[-1]}"
                if at is None
                else f"the text at position {at}"
            )
            raise ScorerError(
                f"scorer {spec!r} answered unusably for {which} after {tries}: {last}; "
                f"{self._answer_rule()}",
                spec,
                position=positions[0] if at is None else at,
                refused=(
                    {i: str(last) for i in positions}
                    if at is None
                    else {positions[j]: why for j, why in last.offsets.items()}
                ),
            )
        raise ScorerError(
            f"scorer {spec!r} could not be reached after {tries}: {last}; check that it "
            f"runs and answers, or raise max_retries / timeout",
            spec,
        )

    def _on_scale(self, values: list[float]) -> list[float]:
        """``values``, or a BadAnswerError for the first off the declared scale."""
        scale = self._scale()
        if scale is None:
            return values
        off = {
            j: f"score {value:g} is off the scale [{scale[0]:g}, {scale[1]:g}]"
            for j, value in enumerate(values)
            if not scale[0] <= value <= scale[1]
        }
        if off:
            first = min(off)
            more = f" (and {len(off) - 1} more in the call)" if len(off) > 1 else ""
            raise BadAnswerError(off[first] + more, offset=first, offsets=off)
        return values


def _texts(X: Any, spec: str) -> list[str]:
    if isinstance(X, str) or not hasattr(X, "__len__"):
        raise ValueError(
            f"scorer {spec!r} scores a list of texts, got {type(X).__name__}; pass a "
            f"list of essay strings (e.g. [text] for one)"
        )
    texts = list(X.tolist() if hasattr(X, "tolist") else X)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(
                f"scorer {spec!r}: the text at position {i} is {type(t).__name__}, not a "
                f"string; pass essay texts (use '' for an empty essay)"
            )
    return texts


def _numbers(raw: Any, n: int) -> list[float]:
    """``raw`` as n finite floats, or a BadAnswerError naming the first bad one."""
    if isinstance(raw, np.ndarray):
        raw = raw.ravel().tolist()
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise BadAnswerError(f"the answer is {type(raw).__name__}, not a list of scores")
    if len(raw) != n:
        raise BadAnswerError(f"{len(raw)} score(s) for {n} text(s)")
    out = []
    for j, v in enumerate(raw):
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.number)):
            raise BadAnswerError(f"score {v!r} is not a number", offset=j)
        value = float(v)
        if not math.isfinite(value):
            raise BadAnswerError(f"score {value!r} is not finite", offset=j)
        out.append(value)
    return out
