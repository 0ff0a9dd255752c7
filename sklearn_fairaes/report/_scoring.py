"""The one check of a user's fitted model's predictions (on essays and on edits).

Kept apart from the study building (``_build``) because the counterfactual
section re-scores edited essays through it too.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._config import AuditInputError
from ._inputs import short, value_text

__all__ = ["ModelScoringError", "predict_scores"]

#: Refused essays a message lists.
LISTED = 10


class ModelScoringError(AuditInputError):
    """A user's fitted model failed, or predicted unusable scores.

    ``model`` is the model's name (a key of ``models``), so that the command
    line can name the file it was loaded from.
    """

    def __init__(self, message: str, model: str) -> None:
        super().__init__(message)
        self.model = model


def predict_scores(
    name: str,
    est: Any,
    texts: Sequence[str],
    *,
    what: str = "essays",
    where: Callable[[int], str] | None = None,
) -> NDArray[np.float64]:
    """``est.predict(texts)`` as one finite number per text, or a ModelScoringError.

    The one check of a fitted model's predictions, on the essays and on
    their edits. ``what`` names the texts in messages (``"essays"``,
    ``"edited essays"``), ``where(i)`` the i-th one (default: its position).
    Anything the model's own code raises is the model's failure, not the
    audit's, ``SystemExit`` included (a ``sys.exit()`` in ``predict`` is no
    success); ``KeyboardInterrupt`` passes through.
    """
    from sklearn.exceptions import NotFittedError

    from ..scorers._base import ScorerError

    kind = type(est).__name__
    n = len(texts)
    where = where or (lambda i: f"{what[:-1]} {i + 1} of {n}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)  # truncation notes
            raw = est.predict(list(texts))
    except ScorerError as exc:
        if exc.refused:
            raise ModelScoringError(
                _refused(name, exc.refused, what, n, where), name
            ) from None
        # a scorer you call (sklearn_fairaes.scorers): its message names the
        # scorer and the cause in full, the audit adds the essay
        at = "" if exc.position is None else f" (at {where(exc.position)})"
        raise ModelScoringError(
            f"scorer {name!r} could not score the {what}{at}: {exc}", name
        ) from None
    except NotFittedError:
        raise ModelScoringError(
            f"model {name!r} ({kind}) is not fitted; fit it on essay texts first, or "
            f"name it in refit to have the audit train it",
            name,
        ) from None
    except (Exception, SystemExit) as exc:
        detail = (
            f"it called sys.exit({exc.code!r})"
            if isinstance(exc, SystemExit)
            else f"{type(exc).__name__}: {short(str(exc), 200)}"
        )
        raise ModelScoringError(
            f"model {name!r} ({kind}) could not score the {what} ({detail}); a fitted "
            f"model must take a list of essay texts and return one score per essay",
            name,
        ) from None
    try:
        arr = np.asarray(raw)
    except Exception:  # a ragged or odd object: not one score per text
        arr = np.asarray(raw, dtype=object)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.shape != (n,):
        raise ModelScoringError(
            f"model {name!r} ({kind}) predicted {arr.size} score(s) of shape "
            f"{arr.shape} for {n} {what}; it must return one score per essay",
            name,
        )
    try:
        values = arr.astype(float)
    except (TypeError, ValueError):
        raise ModelScoringError(
            f"model {name!r} predicted scores that are not numbers for the {what} (e.g. "
            f"{short(arr[0])}); it must return one number per essay",
            name,
        ) from None
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ModelScoringError(
            f"model {name!r} predicted a non-finite score ({value_text(values[i])}) "
            f"for {where(i)} ({int(bad.sum())} such {what[:-1]}(s) of {n}); a score "
            f"must be a finite number",
            name,
        )
    return values


def _refused(
    name: str, refused: dict[int, str], what: str, n: int, where: Callable[[int], str]
) -> str:
    """The essays a scorer you call answered unusably, each with its answer."""
    order = sorted(refused)
    listed = "; ".join(f"{where(i)}: {refused[i]}" for i in order[:LISTED])
    more = f"; and {len(order) - LISTED} more" if len(order) > LISTED else ""
    return (
        f"scorer {name!r} answered unusably, after its retries, for {len(order)} of "
        f"the {n} {what}: {listed}{more}. The answers of every call without a refused "
        f"essay are kept in the cache, so a re-run asks only for the rest; fix the "
        f"scorer (its prompt, its scale) or the score range"
    )
