"""A scoring service behind HTTP (POST ``{"texts": [...]}`` -> ``{"scores": [...]}``).

Standard library only (urllib): the package has no HTTP client dependency.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import numbers
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .._param_validation import Interval
from ._base import BadAnswerError, CallScorer, RetryableError, ScorerError

__all__ = ["HTTPScorer", "check_url", "post_json", "read_token"]

_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


class HTTPScorer(CallScorer):
    """A scoring service called over HTTP, as a scikit-learn regressor.

    **The protocol.** Each call is one ``POST`` to ``url`` with the body
    ``{"texts": ["essay one", "essay two", ...]}`` (JSON, UTF-8,
    ``Content-Type: application/json``, at most ``batch_size`` texts) and,
    with ``token_env``, the header ``Authorization: Bearer <token>``. The
    service answers ``200`` with ``{"scores": [4, 3.5, ...]}``: one finite
    JSON number per text, in the same order. Any other answer is handled so:

    * ``429`` and ``5xx``, a timeout, a refused or reset connection: retried
      after ``backoff * 2**k`` seconds, or after ``Retry-After`` (seconds or
      an HTTP date) when the service sends it;
    * a ``200`` that is not JSON, has no ``"scores"`` list, the wrong number
      of scores, a score that is not a number (``"4"``, ``null``,
      ``true``), not finite, or off ``score_range``: retried the same way;
    * another ``4xx`` (``401``: a wrong token): not retried.

    After ``max_retries`` retries a :class:`ScorerError` names the URL and,
    for a bad score, the position of the text. Answers are kept in ``cache``
    (a SQLite file) keyed by the URL, the text's SHA-256 and the repeat
    index, never the token, so a re-run sends nothing and an interrupted run
    resumes with what is missing.

    Parameters
    ----------
    url : str
        ``http://`` or ``https://`` address of the scoring endpoint. It may not
        hold credentials (``user:password@``): give a token through
        ``token_env``.
    token_env : str or None, default=None
        The name of an environment variable holding a bearer token, read at
        each call; the token itself is never stored on the scorer, in its
        repr, in the cache or in a report.
    batch_size : int, default=16
        Texts per call.
    concurrency : int, default=4
        Calls in flight at once (threads).
    timeout : float, default=60.0
        Seconds to wait for one answer before retrying.
    max_retries : int, default=4
        Further tries of a call that failed in a retryable way.
    backoff : float, default=0.5
        Seconds before the first retry, doubled each time (when the service
        sends no Retry-After).
    max_calls : int or None, default=None
        Most calls (batches, retries not counted) this scorer may send;
        ``predict`` refuses, before any call, texts whose uncached batches
        would pass it. None: no limit.
    cache : str, path or None, default=None
        The SQLite file of answers (created with its folder); None: none
        kept. The audit gives the scorers it makes from a spec the file
        ``scorer_responses.sqlite`` of its cache folder.
    score_range : tuple of two float or None, default=None
        The declared scale ``(low, high)`` of the scores, both ends included:
        a score outside it is a bad answer (retried, then refused, listed in
        the :class:`ScorerError`). None: no scale is checked. The audit gives
        the scorers it makes from a spec the data's declared scale.

    Attributes
    ----------
    spec_ : str
        The URL, the scorer's name in the cache and in messages.

    See Also
    --------
    FunctionScorer : A Python function called in this process.
    make_scorer_from_spec : Either one from a spec string.

    Examples
    --------
    >>> from sklearn_fairaes.scorers import HTTPScorer
    >>> scorer = HTTPScorer("http://127.0.0.1:8000/score", token_env="MY_TOKEN",
    ...                     batch_size=2)
    >>> scorer
    HTTPScorer(batch_size=2, token_env='MY_TOKEN',
               url='http://127.0.0.1:8000/score')
    >>> scorer.n_calls_needed(["essay one", "essay two", "essay three"])
    2
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **CallScorer._parameter_constraints,
        "url": [str],
        "token_env": [str, None],
        # above 0: checked in _check_params (the interval includes its bounds)
        "timeout": [Interval(numbers.Real, 0, None)],
    }

    def __init__(
        self,
        url: str,
        *,
        token_env: str | None = None,
        batch_size: int = 16,
        concurrency: int = 4,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_calls: int | None = None,
        cache: Any = None,
        score_range: tuple[float, float] | None = None,
    ) -> None:
        self.url = url
        self.token_env = token_env
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_calls = max_calls
        self.cache = cache
        self.score_range = score_range

    def _spec(self) -> str:
        return self.url

    def _check_params(self) -> None:
        if self.timeout == 0:
            raise ValueError(
                "HTTPScorer's timeout must be above 0 seconds, got 0; pass e.g. timeout=30"
            )
        check_url(self.url, "HTTPScorer")

    def _token(self) -> str | None:
        return read_token(self.token_env, self.url)

    def _before_calls(self) -> None:
        self._token()

    def _call(self, texts: list[str]) -> Any:
        answer = post_json(
            self.url,
            {"texts": texts},
            token=self._token(),
            timeout=self.timeout,
            token_env=self.token_env,
            spec=self.url,
            protocol='POST {"texts": [...]}',
        )
        if not isinstance(answer, dict) or not isinstance(answer.get("scores"), list):
            raise BadAnswerError('the answer has no "scores" list')
        return answer["scores"]


def check_url(url: str, owner: str, what: str = "url") -> None:
    """Refuse what is not an http(s) address with a host, or holds credentials."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{owner}'s {what} must be an http:// or https:// address with a host, "
            f"got {url!r}"
        )
    if parts.username is not None or parts.password is not None:
        # the URL is the cache key and is shown in reports: no secret in it
        raise ValueError(
            f"{owner}'s {what} holds credentials (user:password@); remove them and "
            f"put a bearer token in an environment variable named by token_env"
        )


def read_token(token_env: str | None, spec: str) -> str | None:
    """The bearer token in ``$token_env`` (None without one); refused when unset."""
    if token_env is None:
        return None
    token = os.environ.get(token_env, "")
    if not token:
        raise ScorerError(
            f"scorer {spec!r}: the environment variable {token_env!r} "
            f"(token_env) is not set or empty; export the service's token in it",
            spec,
        )
    return token


def post_json(
    url: str,
    payload: Any,
    *,
    token: str | None,
    timeout: float,
    token_env: str | None,
    spec: str,
    protocol: str,
) -> Any:
    """POST ``payload`` as JSON to ``url``; the decoded JSON answer.

    429, 5xx, timeouts and connection errors raise RetryableError (with the
    Retry-After), another 4xx a ScorerError naming ``spec`` (and ``$token_env``
    for 401/403, else ``protocol``), an answer that is not JSON a
    BadAnswerError. The one HTTP client of the scorers.
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps(payload).encode("utf-8")
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    host = urllib.parse.urlsplit(url).hostname
    # a loopback service is never reached through a proxy of the environment
    handlers = [urllib.request.ProxyHandler({})] if host in _LOOPBACK else []
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        code = exc.code
        detail = exc.read(300).decode("utf-8", "replace").strip()
        if code == 429 or code >= 500:
            raise RetryableError(
                f"HTTP {code} {exc.reason}",
                _retry_after(exc.headers.get("Retry-After")),
            ) from None
        raise ScorerError(
            f"scorer {spec!r} refused the call: HTTP {code} {exc.reason}"
            + (f" ({detail})" if detail else "")
            + (
                f"; check the token in ${token_env}"
                if code in (401, 403) and token_env
                else f"; check the URL and the protocol ({protocol})"
            ),
            spec,
        ) from None
    except (
        urllib.error.URLError,
        TimeoutError,
        ConnectionError,
        http.client.HTTPException,
    ) as exc:
        reason = getattr(exc, "reason", exc)
        raise RetryableError(f"{type(exc).__name__}: {reason}") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BadAnswerError(f"the answer is not JSON (it begins {raw[:60]!r})") from None


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (seconds, or an HTTP date); None if absent."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
