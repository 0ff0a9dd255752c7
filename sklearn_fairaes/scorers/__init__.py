"""Scorers you call: a Python function, an HTTP service or an LLM grader, as regressors.

Each takes a list of essay texts and returns one score per text
(``predict``); ``fit`` learns nothing (the scorer is used as it is, like a
fitted model given with ``refit=False``), so they work in
:func:`~sklearn_fairaes.perturbation_audit`, Pipelines, ``cross_validate``
and the audit (``audit(scorers=...)``, ``fairaes audit --scorer``). Calls are
cached, batched, run on a few threads, retried and budgeted; see
:class:`HTTPScorer` for the HTTP protocol and :class:`OpenAIScorer` for an
OpenAI-compatible chat-completions grader and the rule that parses its reply.
"""

from __future__ import annotations

import re
from typing import Any

from ._base import CallScorer, ScorerError
from ._function import FunctionScorer
from ._http import HTTPScorer
from ._openai import OpenAIScorer

__all__ = [
    "FunctionScorer",
    "HTTPScorer",
    "OpenAIScorer",
    "ScorerError",
    "make_scorer_from_spec",
]

#: The spec forms, as messages list them.
SPEC_FORMS = (
    "'python:package.module:function', 'http://...', 'https://...' or "
    "'openai:MODEL@BASE_URL'"
)

#: ``openai:MODEL@BASE_URL``: the last ``@`` before the URL splits them (a
#: model's name may hold ``@`` or ``:``; the URL holds no ``@``).
_OPENAI = re.compile(r"^openai:(?P<model>.+)@(?P<url>https?://[^@]+)$")


def make_scorer_from_spec(spec: str, **params: Any) -> CallScorer:
    """The scorer a spec string names.

    Parameters
    ----------
    spec : str
        ``"python:package.module:function"`` (a :class:`FunctionScorer`),
        ``"http://..."`` or ``"https://..."`` (an :class:`HTTPScorer`),
        ``"openai:MODEL@BASE_URL"`` (an :class:`OpenAIScorer`, which needs
        ``prompt=`` among ``params``).
    **params
        Further parameters of that scorer (``cache``, ``concurrency``,
        ``max_calls``, ``token_env``, ``score_range``, ``prompt``, ...).

    Returns
    -------
    scorer : FunctionScorer, HTTPScorer or OpenAIScorer
        Unfitted; its parameters are checked at ``fit`` or ``predict``.

    Examples
    --------
    >>> from sklearn_fairaes.scorers import make_scorer_from_spec
    >>> make_scorer_from_spec("python:sklearn_fairaes.scorers._examples:n_words")
    FunctionScorer(function='sklearn_fairaes.scorers._examples:n_words')
    >>> make_scorer_from_spec("https://scoring.example.org/v1/score", concurrency=8)
    HTTPScorer(concurrency=8, url='https://scoring.example.org/v1/score')
    >>> make_scorer_from_spec("openai:llama3.1:8b@http://127.0.0.1:11434/v1",
    ...                       prompt="Score from 1 to 6: {essay}").model
    'llama3.1:8b'
    """
    if not isinstance(spec, str):
        raise ValueError(
            f"a scorer spec is a string ({SPEC_FORMS}), got {type(spec).__name__}"
        )
    text = spec.strip()
    if text.startswith("python:"):
        params.pop("timeout", None)  # a local function has none
        params.pop("token_env", None)
        return FunctionScorer(text[len("python:") :], **params)
    if text.startswith(("http://", "https://")):
        return HTTPScorer(text, **params)
    if text.startswith("openai:"):
        match = _OPENAI.match(text)
        if match is None:
            raise ValueError(
                f"scorer spec {spec!r}: an OpenAI-compatible grader is "
                f"'openai:MODEL@BASE_URL', e.g. 'openai:llama3.1:8b@http://127.0.0.1:11434/v1'"
            )
        if params.get("prompt") is None:
            raise ValueError(
                f"scorer spec {spec!r} needs a prompt template holding {{essay}} "
                f"(prompt=..., --scorer-prompt FILE)"
            )
        params.pop("batch_size", None)  # one essay per request
        return OpenAIScorer(match["model"], match["url"], **params)
    raise ValueError(f"scorer spec {spec!r} is not one of {SPEC_FORMS}")
