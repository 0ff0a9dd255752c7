"""Scorers you call: a Python function or an HTTP service, as scikit-learn regressors.

Each takes a list of essay texts and returns one score per text
(``predict``); ``fit`` learns nothing (the scorer is used as it is, like a
fitted model given with ``refit=False``), so they work in
:func:`~sklearn_fairaes.perturbation_audit`, Pipelines, ``cross_validate``
and the audit (``audit(scorers=...)``, ``fairaes audit --scorer``). Calls are
cached, batched, run on a few threads, retried and budgeted; see
:class:`HTTPScorer` for the HTTP protocol.
"""

from __future__ import annotations

from typing import Any

from ._base import CallScorer, ScorerError
from ._function import FunctionScorer
from ._http import HTTPScorer

__all__ = ["FunctionScorer", "HTTPScorer", "ScorerError", "make_scorer_from_spec"]

#: The spec forms, as messages list them.
SPEC_FORMS = "'python:package.module:function', 'http://...' or 'https://...'"


def make_scorer_from_spec(spec: str, **params: Any) -> CallScorer:
    """The scorer a spec string names.

    Parameters
    ----------
    spec : str
        ``"python:package.module:function"`` (a :class:`FunctionScorer`),
        ``"http://..."`` or ``"https://..."`` (an :class:`HTTPScorer`).
    **params
        Further parameters of that scorer (``cache``, ``concurrency``,
        ``max_calls``, ``token_env``, ...).

    Returns
    -------
    scorer : FunctionScorer or HTTPScorer
        Unfitted; its parameters are checked at ``fit`` or ``predict``.

    Examples
    --------
    >>> from sklearn_fairaes.scorers import make_scorer_from_spec
    >>> make_scorer_from_spec("python:sklearn_fairaes.scorers._examples:n_words")
    FunctionScorer(function='sklearn_fairaes.scorers._examples:n_words')
    >>> make_scorer_from_spec("https://scoring.example.org/v1/score", concurrency=8)
    HTTPScorer(concurrency=8, url='https://scoring.example.org/v1/score')
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
    raise ValueError(f"scorer spec {spec!r} is not one of {SPEC_FORMS}")
