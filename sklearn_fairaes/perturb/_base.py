"""What every perturbation shares: edit records, seeding and the transformer API.

A perturbation is a scikit-learn transformer that takes a list of essays and
returns a list of edited essays of the same length and order. Besides the text
it says what it changed: :meth:`BasePerturbation.transform_with_records`
returns one :class:`PerturbationRecord` per essay, whose :class:`Edit` items
are character-level replacements of the original essay. Applying them with
:func:`apply_edits` gives the edited essay back exactly; this is the contract
every perturbation is tested against.

**Edit format.** ``Edit(start, end, before, after, kind)``: the original
characters ``essay[start:end]`` (which equal ``before``) are replaced by
``after``. An insertion has ``start == end`` and ``before == ""``; a deletion
has ``after == ""``. ``kind`` names the operation (``"typo:swap"``,
``"move"``, ``"negate:copula"``, ...; each class lists its kinds). The edits
of one essay are sorted by ``start`` and do not overlap.

**Empty essays.** An empty or whitespace-only essay is returned unchanged by
every perturbation, with no edit and the note ``"empty essay"``. Each class
documents what it does with essays too short for it (one sentence, one word).

**Randomness.** Each essay gets its own random stream, seeded by
``random_state`` and a hash (BLAKE2b) of the essay's text, as in
:class:`~sklearn_fairaes.paraphrase.WordNetParaphraser`: an essay's edit does
not depend on the other essays in the batch or on its position, and two
identical essays get the same edit. An int ``random_state`` gives the same
output on every call; None or a ``RandomState`` draws a new base seed per call
(scikit-learn's convention).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state

from .._param_validation import check_params
from .._validation import check_essays

if TYPE_CHECKING:
    from ._text import EssayText

__all__ = [
    "EXPECTED_DIRECTIONS",
    "BasePerturbation",
    "Edit",
    "PerturbationRecord",
    "apply_edits",
]

#: What a fair score does under a perturbation: ``"stay"`` within the
#: tolerance (meaning-preserving edits), ``"drop"`` by more than the
#: tolerance (edits that make the essay worse), or ``"change"`` by more than
#: the tolerance in either direction (edits that change what the essay says).
EXPECTED_DIRECTIONS = ("change", "drop", "stay")

#: What ``random_state`` accepts (scikit-learn's convention).
RandomStateLike = int | np.random.RandomState | None


class Edit(NamedTuple):
    """One character-level change of an essay.

    The fields are also the attributes of the same names.

    Parameters
    ----------
    start : int
        Offset of the first replaced character of the original essay.
    end : int
        Offset just after the last replaced character: the replaced
        characters are ``essay[start:end]``; ``start == end`` for an
        insertion.
    before : str
        The original characters, ``essay[start:end]``.
    after : str
        What replaces them (``""`` for a deletion).
    kind : str
        The operation, e.g. ``"typo:swap"``, ``"move"``, ``"negate:copula"``.

    See Also
    --------
    apply_edits : Apply edits to the original text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import Edit, apply_edits
    >>> edit = Edit(2, 5, "was", "was not", "negate:copula")
    >>> edit.before, edit.after
    ('was', 'was not')
    >>> apply_edits("I was late.", [edit])
    'I was not late.'
    """

    start: int
    end: int
    before: str
    after: str
    kind: str


class PerturbationRecord(NamedTuple):
    """What a perturbation did to one essay.

    The fields are also the attributes of the same names.

    Parameters
    ----------
    edits : tuple of Edit
        Sorted by ``start``, non-overlapping; :func:`apply_edits` turns the
        original essay into the edited one. Empty when nothing changed.
    note : str
        Why an essay was left unchanged or changed less than asked
        (``"empty essay"``, ``"one sentence: nothing to shuffle"``), or a
        count of what was done (``"2 of 5 sentences negated"``); ``""`` when
        there is nothing to say.
    n_skipped : int
        Units (sentences, words) the perturbation could not handle, e.g. the
        sentences of :class:`~sklearn_fairaes.perturb.Negation` without a
        verb it knows how to negate; 0 where it does not apply.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import SentenceShuffle
    >>> texts, records = SentenceShuffle(random_state=0).transform_with_records(
    ...     ["I waited. The bus was late.", "One sentence only."])
    >>> [len(r.edits) for r in records]
    [2, 0]
    >>> records[1].note
    'fewer than two different sentences'
    """

    edits: tuple[Edit, ...]
    note: str = ""
    n_skipped: int = 0


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply edits to the original text.

    Parameters
    ----------
    text : str
        The original essay.
    edits : iterable of Edit
        Non-overlapping edits of ``text`` (any order).

    Returns
    -------
    edited : str
        ``text`` with every edit's ``before`` replaced by its ``after``; the
        characters outside the edits are kept as they are.

    Raises
    ------
    ValueError
        If an edit's ``before`` differs from ``text[start:end]`` or two edits
        overlap.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import Edit, apply_edits
    >>> apply_edits("I was late.", [Edit(2, 5, "was", "was not", "negate:copula")])
    'I was not late.'
    """
    pieces: list[str] = []
    cursor = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        start, end, before, after = edit.start, edit.end, edit.before, edit.after
        if start < cursor:
            raise ValueError(
                f"edits overlap: an edit starts at character {start}, before the end "
                f"({cursor}) of the previous one"
            )
        if text[start:end] != before:
            raise ValueError(
                f"edit {edit!r} does not match the text, which has "
                f"{text[start:end]!r} at [{start}, {end})"
            )
        pieces.append(text[cursor:start])
        pieces.append(after)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


#: What ``_perturb_one`` returns: the edits of one essay, a note and the
#: number of units skipped (see :class:`PerturbationRecord`).
PerturbOutcome = tuple[list[Edit], str, int]


def _essay_rng(base_seed: int, text: str) -> np.random.Generator:
    from ..paraphrase._wordnet import _essay_seed

    return np.random.default_rng(_essay_seed(base_seed, text))


class BasePerturbation(TransformerMixin, BaseEstimator):
    """Base class of the perturbations: essays in, edited essays out.

    Subclasses set the class attributes ``name`` (the registry name),
    ``expected`` (one of :data:`EXPECTED_DIRECTIONS`) and implement
    ``_perturb_one(text, essay, rng) -> (edits, note, n_skipped)`` (or
    ``_perturb_batch`` for work done on all essays at once). :meth:`fit`
    learns nothing; :meth:`transform` works without it.

    The input is never modified.

    Examples
    --------
    A perturbation that writes every essay in capitals:

    >>> from sklearn_fairaes.perturb import BasePerturbation, Edit
    >>> class Shout(BasePerturbation):
    ...     name = "shout"
    ...     def __init__(self, *, random_state=None):
    ...         self.random_state = random_state
    ...     def _perturb_one(self, text, essay, rng):
    ...         return [Edit(0, len(text), text, text.upper(), "shout")], "", 0
    >>> Shout().transform(["I waited.", ""])
    ['I WAITED.', '']
    >>> Shout().family
    'preserving'
    """

    #: Registry name of the perturbation.
    name: ClassVar[str | None] = None
    #: What a fair score does under this perturbation (see
    #: :data:`EXPECTED_DIRECTIONS`).
    expected: ClassVar[Literal["change", "drop", "stay"]] = "stay"

    # the parameters' constraints, checked by fit and transform
    # (sklearn_fairaes._param_validation.check_params)
    _param_rules: ClassVar[dict[str, list[Any]]] = {"random_state": ["random_state"]}

    # set by each subclass's __init__
    random_state: RandomStateLike

    @property
    def family(self) -> str:
        """``"preserving"`` (meaning-preserving) or ``"changing"`` (quality or meaning)."""
        return "preserving" if self.expected == "stay" else "changing"

    def _check_params(self) -> None:
        """Checks beyond ``_param_rules`` (overridden where needed)."""

    def fit(self, X: ArrayLike | None = None, y: object = None) -> BasePerturbation:
        """Check the parameters; nothing is learned.

        Parameters
        ----------
        X : list, array or pandas Series of str, default=None
            The essays (validated when given, otherwise unused); when given, at
            least one, as sklearn's estimators require.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The perturbation itself (nothing is learned).
        """
        if X is not None:
            check_essays(X, min_essays=1)
        check_params(self, self._param_rules)
        self._check_params()
        return self

    def transform(self, X: ArrayLike) -> list[str]:
        """Perturb each essay.

        Parameters
        ----------
        X : list, tuple, 1-D array or pandas Series of str
            The essays; empty strings are allowed (returned unchanged).

        Returns
        -------
        perturbed : list of str
            Same length and order as ``X``.
        """
        return self.transform_with_records(X)[0]

    def transform_with_records(
        self, X: ArrayLike
    ) -> tuple[list[str], list[PerturbationRecord]]:
        """Perturb each essay and say what changed.

        Parameters
        ----------
        X : list, tuple, 1-D array or pandas Series of str
            The essays; empty strings are allowed (returned unchanged).

        Returns
        -------
        perturbed : list of str
            Same length and order as ``X``.
        records : list of PerturbationRecord
            One per essay: its edits (``apply_edits(X[i], records[i].edits) ==
            perturbed[i]``), a note and the number of units skipped.
        """
        essays = check_essays(X)
        check_params(self, self._param_rules)
        self._check_params()
        records = self._perturb_batch(essays, self._base_seed())
        out = [apply_edits(text, rec.edits) for text, rec in zip(essays, records)]
        return out, records

    # ------------------------------------------------------------- work
    def _base_seed(self) -> int:
        if isinstance(self.random_state, numbers.Integral):
            return int(self.random_state)
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _perturb_batch(
        self, essays: Sequence[str], base_seed: int
    ) -> list[PerturbationRecord]:
        from ._text import analyse

        records: list[PerturbationRecord] = []
        for text in essays:
            if not text.strip():
                records.append(PerturbationRecord((), "empty essay"))
                continue
            edits, note, skipped = self._perturb_one(
                text, analyse(text), _essay_rng(base_seed, text)
            )
            records.append(
                PerturbationRecord(
                    tuple(sorted(edits, key=lambda e: (e.start, e.end))), note, int(skipped)
                )
            )
        return records

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:  # pragma: no cover - abstract
        raise NotImplementedError

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = False
        return tags
