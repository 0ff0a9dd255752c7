"""An LLM grader behind an OpenAI-compatible chat-completions API.

vLLM, Ollama, llama.cpp's server and the hosted APIs all answer ``POST
{base_url}/chat/completions`` in the same shape. One essay per request: the
rubric template with the essay in it, the grader's reply parsed for one score
by the rule of :func:`parse_reply` (stated in :class:`OpenAIScorer`'s
docstring and the user guide's "Auditing an LLM grader").
"""

from __future__ import annotations

import hashlib
import json
import numbers
import re
from typing import Any

from .._param_validation import Interval
from ._base import BadAnswerError, CallScorer
from ._http import check_url, post_json, read_token

__all__ = ["ESSAY", "OpenAIScorer", "parse_reply"]

#: The placeholder of the prompt template that the essay replaces.
ESSAY = "{essay}"

#: Characters of a reply that a refusal quotes.
QUOTED = 80

_NUMBER = r"-?\d+(?:\.\d+)?"
# a number standing alone (not inside "v1.2", "4th", "essay2"), with an
# optional "/ y" or "out of y" after it
_VALUE = rf"(?<![\w.])({_NUMBER})(?:\s*(?:/|\bout\s+of\b)\s*({_NUMBER}))?(?![\w])(?!\.\d)"
_SCORE_LINE = re.compile(rf"\bscore\b[*_\s]*[:=][*_\s]*{_VALUE}", re.IGNORECASE)
_ANY_VALUE = re.compile(_VALUE, re.IGNORECASE)
_THINKING = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)


def parse_reply(reply: str, maximum: float | None = None) -> float:
    """The score in a grader's reply, by the rule of :class:`OpenAIScorer`.

    ``maximum`` is the declared scale's high end: a fraction ``x/y`` counts
    as ``x`` only when ``y`` equals it. A reply without one score raises
    BadAnswerError quoting its first 80 characters.
    """
    text = _THINKING.sub(" ", reply)
    quoted = repr(reply.strip()[:QUOTED])
    verdicts = list(_SCORE_LINE.finditer(text))
    if verdicts:
        match = verdicts[-1]
    else:
        values = list(_ANY_VALUE.finditer(text))
        if len(values) != 1:
            why = (
                "no number"
                if not values
                else f"{len(values)} numbers and no 'Score: <number>'"
            )
            raise BadAnswerError(f"no score in the reply: {quoted} ({why})")
        match = values[0]
    value, out_of = float(match.group(1)), match.group(2)
    if out_of is None:
        return value
    denominator = float(out_of)
    if maximum is None:
        raise BadAnswerError(
            f"the reply gives a fraction ({match.group(1)}/{out_of}) and no score_range "
            f"says the scale's maximum: {quoted}"
        )
    if denominator != maximum:
        raise BadAnswerError(
            f"the reply gives {match.group(1)}/{out_of}, out of {out_of} where the "
            f"declared scale's maximum is {maximum:g}: {quoted}"
        )
    return value


class OpenAIScorer(CallScorer):
    """An LLM grader behind an OpenAI-compatible API, as a scikit-learn regressor.

    Each essay is one ``POST {base_url}/chat/completions`` (vLLM, Ollama,
    llama.cpp's server, a hosted API) with the body ``{"model": model,
    "messages": [...], "temperature": temperature}`` (and ``"seed"``,
    ``"max_tokens"`` when given): an optional system message
    ``system_prompt``, then a user message, ``prompt`` with the essay in
    place of ``{essay}``. Only that literal token is replaced, so the other
    braces of a rubric (a JSON example, say) stay as written. The reply is
    ``choices[0].message.content``; ``concurrency`` requests run at once.

    **The parse rule.** A ``<think>...</think>`` block is set aside; then

    1. when the reply holds ``Score: <value>`` (``score`` as a word, any
       case, then ``:`` or ``=``; Markdown ``**`` around either side is
       allowed; ``Final score: 4`` counts), the *last* such value is the
       score, so that a grader's corrected verdict wins over its first;
    2. otherwise, when the reply holds exactly one number, that number;
    3. otherwise (no number, or several and no ``Score:``) the reply holds no
       score: a bad answer.

    A number stands alone: ``-1``, ``4`` and ``3.5`` count, the digits of
    ``4th``, ``v1.2`` or ``essay2`` do not. A *fraction* ``x/y`` or ``x out
    of y`` (``I give it 4/6``, ``Score: 4 out of 6``) is one value: it counts
    as ``x`` only when ``y`` is the declared maximum (``score_range[1]``);
    any other ``y``, or no ``score_range``, makes it a bad answer, because a
    score on another scale cannot be mapped onto the declared one without a
    rescaling choice that the grader did not make.

    **Bad answers.** A reply with no score, a ``200`` whose body is not JSON
    or has no ``choices[0].message.content``, and a score outside
    ``score_range`` (both ends included) are retried like a failed call
    (the grader may answer otherwise the next time), then refused: the essay
    gets no score, the others go on, and a :class:`ScorerError` counts and
    lists the refused essays with their values. 429, 5xx, timeouts and
    connection errors are retried after ``backoff * 2**k`` seconds or the
    server's ``Retry-After``; another 4xx (a wrong model name, a wrong
    token) is refused at once.

    **The cache.** The answers are kept in ``cache`` under the spec
    ``openai:MODEL@BASE_URL`` and a SHA-256 of everything else that changes
    them (``prompt``, ``system_prompt``, ``temperature``, ``seed``,
    ``max_tokens``), never the token: editing the rubric asks again, a
    re-run of the same one sends nothing.

    Parameters
    ----------
    model : str
        The model's name on the server (``"llama3.1:8b"`` for Ollama,
        ``"Qwen/Qwen2.5-7B-Instruct"`` for vLLM).
    base_url : str
        The API's address up to ``/chat/completions``, e.g.
        ``"http://127.0.0.1:8000/v1"`` (no ``user:password@``).
    prompt : str
        The rubric template; it must hold ``{essay}``.
    system_prompt : str or None, default=None
        A system message sent before the prompt; None: none.
    temperature : float, default=0.0
        Sampling temperature, in [0, 2]; 0 asks for the likeliest reply
        (servers may still differ between calls).
    seed : int or None, default=None
        Sampling seed, sent when given (servers that honour it repeat a
        sampled reply); None: not sent.
    max_tokens : int or None, default=None
        Most tokens of the reply; None: not sent (the server's default).
    score_range : tuple of two float or None, default=None
        The declared scale ``(low, high)``, both ends included: a score
        outside it is a bad answer, and a fraction counts only out of
        ``high``. None: no scale is checked (the audit gives the scorers it
        makes from a spec the data's declared scale).
    token_env : str or None, default=None
        The name of an environment variable holding the API key, read at
        each call (``Authorization: Bearer``); the key is never stored.
    concurrency : int, default=4
        Requests in flight at once (threads).
    timeout : float, default=120.0
        Seconds to wait for one reply before retrying.
    max_retries : int, default=4
        Further tries of a request that failed or answered unusably.
    backoff : float, default=1.0
        Seconds before the first retry, doubled each time.
    max_calls : int or None, default=None
        Most requests (essays; retries not counted) this scorer may send;
        ``predict`` refuses, before any request, essays whose uncached
        answers would pass it. None: no limit.
    cache : str, path or None, default=None
        The SQLite file of answers (see :class:`HTTPScorer`); None: none kept.

    Attributes
    ----------
    spec_ : str
        ``"openai:" + model + "@" + base_url``, the scorer's name in messages.

    See Also
    --------
    HTTPScorer : A scoring service with its own protocol.
    make_scorer_from_spec : A scorer from ``"openai:MODEL@BASE_URL"``.

    Examples
    --------
    >>> from sklearn_fairaes.scorers import OpenAIScorer
    >>> rubric = "Score this essay from 0 to 6. End with 'Score: <n>'.\\n\\n{essay}"
    >>> grader = OpenAIScorer("llama3.1:8b", "http://127.0.0.1:11434/v1", rubric,
    ...                       score_range=(0, 6), seed=7)
    >>> grader.fit().spec_
    'openai:llama3.1:8b@http://127.0.0.1:11434/v1'
    >>> grader.n_calls_needed(["essay one", "essay two", "essay one"])
    2
    >>> from sklearn_fairaes.scorers._openai import parse_reply
    >>> parse_reply("Clear and well argued.\\n**Score:** 5", maximum=6)
    5.0
    >>> parse_reply("I give it 4/6.", maximum=6)
    4.0
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **CallScorer._parameter_constraints,
        "model": [str],
        "base_url": [str],
        "prompt": [str],
        "system_prompt": [str, None],
        "temperature": [Interval(numbers.Real, 0, 2)],
        "seed": [Interval(numbers.Integral, None, None), None],
        "max_tokens": [Interval(numbers.Integral, 1, None), None],
        "token_env": [str, None],
        # above 0: checked in _check_params (the interval includes its bounds)
        "timeout": [Interval(numbers.Real, 0, None)],
    }

    #: One essay per request: a chat completion grades one text.
    batch_size = 1

    def __init__(
        self,
        model: str,
        base_url: str,
        prompt: str,
        *,
        system_prompt: str | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
        score_range: tuple[float, float] | None = None,
        token_env: str | None = None,
        concurrency: int = 4,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_calls: int | None = None,
        cache: Any = None,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.prompt = prompt
        self.system_prompt = system_prompt
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.score_range = score_range
        self.token_env = token_env
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_calls = max_calls
        self.cache = cache

    def _url(self) -> str:
        return self.base_url.strip().rstrip("/")

    def _spec(self) -> str:
        return f"openai:{self.model}@{self._url()}"

    def _cache_spec(self) -> str:
        # everything that changes the reply, as one digest: a new rubric is
        # asked again; the token is not in it
        asked = json.dumps(
            {
                "prompt": self.prompt,
                "system_prompt": self.system_prompt,
                "temperature": float(self.temperature),
                "seed": None if self.seed is None else int(self.seed),
                "max_tokens": None if self.max_tokens is None else int(self.max_tokens),
            },
            sort_keys=True,
        )
        return f"{self._spec()}#{hashlib.sha256(asked.encode('utf-8')).hexdigest()}"

    def _check_params(self) -> None:
        if not self.model.strip():
            raise ValueError(
                "OpenAIScorer's model is empty; give the model's name on the server"
            )
        if ESSAY not in self.prompt:
            raise ValueError(
                f"OpenAIScorer's prompt template holds no {ESSAY} placeholder, so the "
                f"grader would never see the essay; put {ESSAY} where the essay goes "
                f"(e.g. 'Score this essay from 1 to 6 ... Essay: {ESSAY} ... Answer "
                f"with Score: <number>'); it begins {self.prompt.strip()[:60]!r}"
            )
        if self.timeout == 0:
            raise ValueError(
                "OpenAIScorer's timeout must be above 0 seconds, got 0; pass e.g. "
                "timeout=120"
            )
        check_url(self._url(), "OpenAIScorer", "base_url")

    def _before_calls(self) -> None:
        read_token(self.token_env, self._spec())

    def _messages(self, essay: str) -> list[dict[str, str]]:
        messages = []
        if self.system_prompt is not None:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": self.prompt.replace(ESSAY, essay)})
        return messages

    def _call(self, texts: list[str]) -> Any:
        (essay,) = texts  # batch_size is 1
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self._messages(essay),
            "temperature": float(self.temperature),
        }
        if self.seed is not None:
            body["seed"] = int(self.seed)
        if self.max_tokens is not None:
            body["max_tokens"] = int(self.max_tokens)
        answer = post_json(
            f"{self._url()}/chat/completions",
            body,
            token=read_token(self.token_env, self._spec()),
            timeout=self.timeout,
            token_env=self.token_env,
            spec=self._spec(),
            protocol="POST {base_url}/chat/completions; is the model served there?",
        )
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise BadAnswerError(
                "the answer has no choices[0].message.content (it begins "
                f"{json.dumps(answer)[:60]!r})",
                offset=0,
            ) from None
        if not isinstance(content, str) or not content.strip():
            raise BadAnswerError(f"the reply is empty ({content!r})", offset=0)
        scale = self._scale()
        try:
            return [parse_reply(content, None if scale is None else scale[1])]
        except BadAnswerError as exc:
            raise BadAnswerError(str(exc), offset=0) from None
