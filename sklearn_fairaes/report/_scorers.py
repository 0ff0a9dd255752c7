"""The scorers you call in the audit (``audit(scorers=...)``, ``--scorer``).

Each becomes a system of kind "fitted", like a model given with
``refit=False``: it scores the essays and re-scores the edited essays of the
counterfactual section, through the one validator of model calls
(``_scoring.predict_scores``). Kept apart from ``_build`` so that the study
building knows scorers only as fitted models with a probe.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

from ._config import AuditInputError
from ._inputs import short

__all__ = ["CACHE_FILE", "merge_scorers", "probe_scorers", "scorer_cache_path"]

#: The answers' file in the audit's cache folder (beside the embeddings).
CACHE_FILE = "scorer_responses.sqlite"

#: Essays each scorer scores first, before any other work (a probe).
PROBED = 3


def scorer_cache_path(folder: str | os.PathLike[str] | None) -> str | None:
    """The answers' file of the scorers made from specs, in the cache ``folder``."""
    return None if folder is None else os.path.join(os.fspath(folder), CACHE_FILE)


def build_scorer(name: str, value: Any, cache: str | None, **params: Any) -> Any:
    """``value`` (a spec or an estimator) as the scorer of system ``name``."""
    from ..scorers import make_scorer_from_spec

    if isinstance(value, str):
        try:
            scorer = make_scorer_from_spec(value, cache=cache, **params)
            scorer._validate()
        except ValueError as exc:  # sklearn's InvalidParameterError is one too
            raise AuditInputError(f"scorers[{name!r}]: {exc}") from None
        return scorer
    if not hasattr(value, "predict"):
        raise AuditInputError(
            f"scorers[{name!r}] is {short(value)}; give a spec ('python:pkg.mod:fn', "
            f"'http://...', 'https://...') or a scorer with predict (texts -> scores)"
        )
    return value


def merge_scorers(
    models: Any,
    refit: bool | Collection[str],
    scorers: Mapping[str, Any] | None,
    cache: str | None,
) -> tuple[Any, bool | Collection[str]]:
    """``models`` and ``refit`` with the scorers added as fitted models.

    Without ``models``, the scorers are the models (no baseline is trained
    by default, as with ``systems``); baselines named in ``models`` are still
    trained.
    """
    if scorers is None:
        return models, refit
    if not isinstance(scorers, Mapping) or not scorers:
        raise AuditInputError(
            f"scorers must be a non-empty dict name -> spec or scorer, got {short(scorers)}; "
            f"e.g. scorers={{'engine': 'http://127.0.0.1:8000/score'}}"
        )
    built: dict[str, Any] = {}
    for name, value in scorers.items():
        if not isinstance(name, str) or not name.strip():
            raise AuditInputError(
                f"scorers has the name {name!r}; name each scorer with a non-empty string"
            )
        built[name] = build_scorer(name, value, cache)
    if models is None or (refit is True and not isinstance(models, Mapping) and not models):
        if refit not in (True, False):
            raise AuditInputError(
                f"refit={short(refit)} names models to train, but models= is not given; "
                f"give models= as well, or leave refit out with scorers="
            )
        return built, False
    if refit is True:
        spec = dict(models) if isinstance(models, Mapping) else {n: n for n in models}
        trained: bool | Collection[str] = list(spec)
    elif refit is False:
        if not isinstance(models, Mapping):
            return models, refit  # the audit's own message for this mistake
        spec, trained = dict(models), False
    else:
        spec = dict(models) if isinstance(models, Mapping) else {n: n for n in models}
        trained = refit
    clash = sorted(n for n in built if n in spec)
    if clash:
        raise AuditInputError(
            f"scorers and models both name {clash}; give each system its own name"
        )
    return {**spec, **built}, trained


def probe_scorers(plan: Any) -> None:
    """Score the first essays with each scorer you call, before any other work.

    A scorer that cannot be reached, or answers unusably, stops the audit
    after a few calls, naming it, instead of after the whole scoring (the
    answers are cached: the full scoring does not ask for them again).
    """
    from ..scorers._base import CallScorer
    from ._inputs import _Where
    from ._scoring import predict_scores

    where = _Where(plan.prompt_ids, plan.prompt_col is not None)
    sample = plan.essays[:PROBED]
    for name, est in plan.fitted.items():
        if isinstance(est, CallScorer):
            predict_scores(name, est, sample, where=where.row)
