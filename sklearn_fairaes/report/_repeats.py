"""The repeats of the test-retest section: each essay scored K times (``repeats=K``).

Only the scorers you call (:class:`~sklearn_fairaes.scorers._base.CallScorer`:
a Python function or a service) are repeated: repeat ``r`` is a call of its
own, kept in the response cache under repeat index ``r``, so a stochastic
grader may answer it differently, a re-run sends nothing and raising K sends
only the new repeats. Repeat 0 is the audit's own score of the essay (the
fitted systems' scoring), never asked again. Given scores, trained baselines
and fitted estimators are scored once: an estimator is deterministic by
assumption, and repeating it would only show agreement made by construction.

Kept apart from ``_build`` so that the study building knows the repeats only
as one call before the long work and one array per study.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._config import AuditInputError

__all__ = ["attach_repeats", "check_repeats", "repeated_systems", "score_repeats"]


def repeated_systems(fitted: Mapping[str, Any]) -> list[str]:
    """The names of the systems that ``repeats`` scores again: the scorers you call.

    A scored file (``scored_edits``) is one: its ``repeat`` column holds the
    repeated scorings made offline.
    """
    # both say so with ``_repeatable`` (their ``_scores(X, repeat=)``): a
    # class check here would import the scored files' module, which imports
    # the study building that imports this one
    return [name for name, est in fitted.items() if getattr(est, "_repeatable", False)]


def check_repeats(plan: Any) -> None:
    """Refuse ``repeats >= 2`` when no scorer you call is audited (before any work)."""
    k = int(plan.settings.repeats)
    if k < 2 or repeated_systems(plan.fitted):
        return
    others = [*plan.given, *plan.trained, *plan.fitted]
    audited = f" (audited: {', '.join(map(repr, others))})" if others else ""
    raise AuditInputError(
        f"repeats={k} (--repeats) scores each essay again with the scorers you call, "
        f"and none is given{audited}: given scores, trained baselines and fitted "
        f"estimators are scored once. Add a scorer (scorers= / --scorer NAME=SPEC), "
        f"or leave repeats at 1"
    )


def score_repeats(
    plan: Any, first: Mapping[str, NDArray[np.float64]]
) -> dict[str, NDArray[np.float64]]:
    """Each scorer you call's scores of every essay, ``(n_essays, K)``; empty when K is 1.

    ``first`` holds the fitted systems' scores (repeat 0). A scorer that
    fails on a repeat stops the audit as on the first scoring, naming it and
    the essay (its answers so far stay in the cache).
    """
    from ._inputs import _Where
    from ._scoring import predict_scores

    k = int(plan.settings.repeats)
    if k < 2:
        return {}
    where = _Where(plan.prompt_ids, plan.prompt_col is not None)
    out = {}
    for name in repeated_systems(plan.fitted):
        est = plan.fitted[name]
        columns = [np.asarray(first[name], dtype=float)]
        for r in range(1, k):
            columns.append(
                predict_scores(
                    name,
                    _repeat_of(est, r),
                    plan.essays,
                    what=f"essays (repeat {r + 1} of {k})",
                    where=where.row,
                )
            )
        out[name] = np.stack(columns, axis=1)
    return out


def _repeat_of(scorer: Any, repeat: int) -> _Repeat:
    # a subclass named as the scorer's class: messages name the scorer's kind
    kind = type(type(scorer).__name__, (_Repeat,), {})
    return kind(scorer, repeat)


class _Repeat:
    """One repeat of a scorer you call, as the one validator of scores sees a model."""

    def __init__(self, scorer: Any, repeat: int) -> None:
        self.scorer = scorer
        self.repeat = repeat

    def predict(self, X: Sequence[str]) -> NDArray[np.float64]:
        return self.scorer._scores(X, repeat=self.repeat)


def attach_repeats(
    plan: Any, studies: Sequence[Any], repeated: Mapping[str, NDArray[np.float64]]
) -> None:
    """Give each study its essays' rows of the repeats (scaled as its scores are)."""
    for study in studies:
        rows = plan.rows_of(study.prompt)
        lo, hi = study.score_range
        for name, scores in repeated.items():
            mine = scores[rows]
            study.repeats[name] = (mine - lo) / (hi - lo) if plan.short_answer else mine
