"""Helpers shared by the pair analyses (Lipschitz, extreme pairs, paraphrases).

The pair metrics warn when a quantity is undefined or degenerate (all pair
distances equal, a constant score series). In an audit these are facts
about one study's data, which the report states once with the places they
arose, rather than a warning per representation and system: the analyses
call the metrics through :func:`noting` and turn what it collected into
notes with :func:`pair_notes`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from .._study import Study

_Result = TypeVar("_Result")

# A representation whose pair distances are mostly one value (all essays empty
# vectors, or all identical) cannot tell essays apart: flagged in the report.
DEGENERATE_SHARE = 0.5


#: Columns of the ``system_differences`` table: paired bootstrap differences of
#: a figure between two scorings of the same essays (same replicates for
#: both). The agreement section adds its rows (figures ``qwk``, ``abs_smd``),
#: the lipschitz section its own (``lipschitz_minmax``, ``lipschitz_max``).
DIFFERENCE_COLUMNS = [
    "representation", "figure", "system_a", "system_b", "difference", "ci_low",
    "ci_high", "p_value",
]  # fmt: skip


def noting(
    collected: dict[str, list[str]],
    where: str,
    func: Callable[..., _Result],
    *args: Any,
    keep: type[Warning] = UserWarning,
    **kwargs: Any,
) -> _Result:
    """Call ``func(*args, **kwargs)``, keeping its ``keep`` warnings in ``collected``.

    ``collected`` maps a warning's message to the places (``where``) it
    arose, each place once; warnings of other categories pass through
    unchanged.

    Parameters
    ----------
    collected : dict of str to list of str
        Updated in place.
    where : str
        Where the call is, for the note (e.g. ``"tfidf + ridge"``).
    func : callable
        The metric to call.
    *args : object
        Its positional arguments.
    keep : type of Warning, default=UserWarning
        The category (and its subclasses) kept as notes.
    **kwargs : object
        Its keyword arguments.

    Returns
    -------
    result : object
        What ``func`` returned.

    Examples
    --------
    >>> import warnings
    >>> def metric(x):
    ...     warnings.warn("all distances are equal", UserWarning)
    ...     return x + 1
    >>> seen = {}
    >>> noting(seen, "tfidf + ridge", metric, 1)
    2
    >>> seen
    {'all distances are equal': ['tfidf + ridge']}
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    for w in caught:
        if issubclass(w.category, keep):
            places = collected.setdefault(str(w.message), [])
            if where not in places:
                places.append(where)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


def pair_notes(collected: dict[str, list[str]], label: str = "Pair metrics") -> list[str]:
    """One report note per collected warning message, naming where it arose.

    Parameters
    ----------
    collected : dict of str to list of str
        As filled by :func:`noting`.
    label : str, default="Pair metrics"
        What the note is about, put in front.

    Returns
    -------
    notes : list of str
        ``"<label>: <message> (<place>; <place>)."`` per message, in the order
        the messages first arose.

    Examples
    --------
    >>> pair_notes({"all distances are equal": ["bow + ridge", "bow, human scores"]})
    ['Pair metrics: all distances are equal (bow + ridge; bow, human scores).']
    """
    return [
        f"{label}: {message} ({'; '.join(places)})."
        for message, places in collected.items()
    ]


def where(representation: str, system: str) -> str:
    """Name the place of a pair metric call in a note.

    Parameters
    ----------
    representation : str
        The representation's name.
    system : str
        The system's name, or ``"human"`` for the human scores.

    Returns
    -------
    place : str
        ``"tfidf + ridge"``, or ``"tfidf, human scores"``.

    Examples
    --------
    >>> where("tfidf", "ridge"), where("tfidf", "human")
    ('tfidf + ridge', 'tfidf, human scores')
    """
    return (
        f"{representation}, human scores"
        if system == "human"
        else f"{representation} + {system}"
    )


def dense(X: Any) -> NDArray[Any]:
    """Return ``X`` as a dense array (sparse matrices densified).

    Parameters
    ----------
    X : {array-like, sparse matrix}
        Essay vectors.

    Returns
    -------
    X_dense : ndarray
        The same values, dense.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> dense(sp.csr_matrix([[0.0, 1.0]])).tolist()
    [[0.0, 1.0]]
    """
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X)


def degenerate_distances(representation: str, d: Any) -> str | None:
    """A warning when most pair distances are 0 or one same value, else None.

    Parameters
    ----------
    representation : str
        Its name, for the message.
    d : array-like
        The pair distances (all of them, or a sample).

    Returns
    -------
    message : str or None
        The warning for the report (naming the representation and the share
        of pairs), or None when the distances tell the essays apart.

    Examples
    --------
    >>> degenerate_distances("bow", [0.0, 0.0, 0.0, 0.4]).split(",")[0]
    'bow: 75% of the essay pairs are at distance 0'
    >>> degenerate_distances("bow", [0.1, 0.2, 0.3]) is None
    True
    """
    d = np.asarray(d, dtype=float)
    if not d.size:
        return None
    share_zero = float(np.mean(d <= 1e-12))
    _, counts = np.unique(np.round(d, 12), return_counts=True)
    share_same = float(counts.max()) / d.size
    if max(share_zero, share_same) <= DEGENERATE_SHARE:
        return None
    what = (
        f"{share_zero:.0%} of the essay pairs are at distance 0"
        if share_zero >= share_same
        else f"{share_same:.0%} of the essay pairs are at one same distance"
    )
    return (
        f"{representation}: {what}, so this representation hardly tells the essays apart; "
        f"its Lipschitz fractions, score-difference curves and extreme pairs say little "
        f"about fairness. Check the essays' text (language, script, empty essays) or "
        f"use another representation."
    )


def no_spaces_reason() -> str:
    """Say why a pair analysis cannot run on a study without representations.

    Returns
    -------
    reason : str
        A sentence for the report's list of absent sections.

    Examples
    --------
    >>> no_spaces_reason().startswith("no text representation")
    True
    """
    return (
        "no text representation was fitted for these essays, so there are no essay "
        "pairs to compare (give at least one representation, e.g. tfidf)"
    )


class PairAnalysis:
    """Base of the analyses that need only the study's pair spaces to run.

    Their ``absent`` is the same: they run whenever a representation was
    fitted, and say :func:`no_spaces_reason` otherwise.
    """

    def absent(self, study: Study) -> str | None:
        """Say why the analysis cannot run on ``study`` (no representation), else None.

        Parameters
        ----------
        study : Study
            One prompt's essays, systems and pair spaces.

        Returns
        -------
        reason : str or None
            A sentence for the report, or None when the analysis can run.
        """
        return None if study.spaces else no_spaces_reason()
