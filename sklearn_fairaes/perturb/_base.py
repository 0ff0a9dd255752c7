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
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state

from .._validation import check_essays

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


class Edit(NamedTuple):
    """One character-level change of an essay.

    Attributes
    ----------
    start, end : int
        The replaced characters are ``essay[start:end]`` of the original
        essay; ``start == end`` for an insertion.
    before : str
        The original characters, ``essay[start:end]``.
    after : str
        What replaces them (``""`` for a deletion).
    kind : str
        The operation, e.g. ``"typo:swap"``, ``"move"``, ``"negate:copula"``.
    """

    start: int
    end: int
    before: str
    after: str
    kind: str


class PerturbationRecord(NamedTuple):
    """What a perturbation did to one essay.

    Attributes
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
    """

    edits: tuple
    note: str = ""
    n_skipped: int = 0


def apply_edits(text, edits):
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
    pieces, cursor = [], 0
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


def _essay_rng(base_seed, text):
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
    """

    #: Registry name of the perturbation.
    name = None
    #: What a fair score does under this perturbation (see
    #: :data:`EXPECTED_DIRECTIONS`).
    expected = "stay"

    _parameter_constraints = {"random_state": ["random_state"]}

    @property
    def family(self):
        """``"preserving"`` (meaning-preserving) or ``"changing"`` (quality or meaning)."""
        return "preserving" if self.expected == "stay" else "changing"

    def _check_params(self):
        """Checks beyond ``_parameter_constraints`` (overridden where needed)."""

    def fit(self, X=None, y=None):
        """Check the parameters; nothing is learned.

        Parameters
        ----------
        X : list, array or pandas Series of str, default=None
            The essays (validated when given, otherwise unused).
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        if X is not None:
            check_essays(X)
        self._validate_params()
        self._check_params()
        return self

    def transform(self, X):
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

    def transform_with_records(self, X):
        """Perturb each essay and say what changed.

        Parameters
        ----------
        X : list, tuple, 1-D array or pandas Series of str

        Returns
        -------
        perturbed : list of str
            Same length and order as ``X``.
        records : list of PerturbationRecord
            One per essay: its edits (``apply_edits(X[i], records[i].edits) ==
            perturbed[i]``), a note and the number of units skipped.
        """
        essays = check_essays(X)
        self._validate_params()
        self._check_params()
        records = self._perturb_batch(essays, self._base_seed())
        out = [apply_edits(text, rec.edits) for text, rec in zip(essays, records)]
        return out, records

    # ------------------------------------------------------------- work
    def _base_seed(self):
        if isinstance(self.random_state, numbers.Integral):
            return int(self.random_state)
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _perturb_batch(self, essays, base_seed):
        from ._text import analyse

        records = []
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

    def _perturb_one(self, text, essay, rng):  # pragma: no cover - abstract
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = False
        return tags
