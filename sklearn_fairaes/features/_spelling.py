"""Spelling errors: how many of an essay's words a spell checker does not know.

The default checker is ``pyspellchecker`` with its English word list (shipped
inside the package, so it works offline). Any other checker plugs in: an object
with an ``unknown(words)`` method (pyspellchecker's interface) or a callable
``f(words) -> unknown words``; it must be picklable to run in joblib workers.

What is checked: the essay's orthographic words (see
:mod:`sklearn_fairaes.features._tokenize`) except ASAP placeholders (and words
that contain one, as ``@CAPS1's``), words with a digit (``5pm``, ``3rd``), and
words with no letter. A word is split at every character that is neither a
letter nor an inner apostrophe (``well-known`` -> ``well`` + ``known``,
``and/or`` -> ``and`` + ``or``) and counts as **one** error when any part is
unknown; a part is unknown when the checker returns it or its lower-case form.
Every occurrence counts: ``"teh teh"`` has two spelling errors.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..resources import require
from ._tokenize import PLACEHOLDER_PATTERN

__all__ = [
    "count_spelling_errors",
    "describe_spell_checker",
    "spell_checker_identity",
    "spelling_parts",
]

_PART = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")
_DIGIT = re.compile(r"\d")

# name -> spellchecker.SpellChecker
_CHECKERS: dict[str, Any] = {}
_CHECKERS_LOCK = threading.Lock()


def describe_spell_checker(spelling: object) -> str | None:
    """Validate the ``spelling`` parameter and return a label for it.

    Parameters
    ----------
    spelling : "pyspellchecker", object with ``unknown``, callable or None
        The checker: pyspellchecker's English word list, an object with an
        ``unknown(words)`` method, or a callable ``words -> unknown words``.

    Returns
    -------
    label : str or None
        ``"pyspellchecker"``, ``"custom:<type>"`` for an object, or
        ``"callable:<name>"``; None when spelling is None.

    Examples
    --------
    >>> from sklearn_fairaes.features._spelling import describe_spell_checker
    >>> describe_spell_checker("pyspellchecker")
    'pyspellchecker'
    >>> describe_spell_checker(lambda words: [w for w in words if w == "teh"])
    'callable:<lambda>'
    """
    if spelling is None:
        return None
    if isinstance(spelling, str):
        if spelling != "pyspellchecker":
            raise ValueError(
                f"spelling must be 'pyspellchecker', an object with an unknown(words) "
                f"method, a callable words -> unknown words, or None; got {spelling!r}"
            )
        require("spellchecker", purpose="the spelling_errors feature (pyspellchecker)")
        return "pyspellchecker"
    if callable(getattr(spelling, "unknown", None)):
        return f"custom:{type(spelling).__name__}"
    if callable(spelling):
        return f"callable:{getattr(spelling, '__name__', type(spelling).__name__)}"
    raise TypeError(
        f"spelling must be 'pyspellchecker', an object with an unknown(words) method, "
        f"a callable words -> unknown words, or None; got a {type(spelling).__name__}"
    )


def spell_checker_identity(spelling: object) -> dict[str, Any] | None:
    """What pyspellchecker's verdicts depend on: its version and English word list (SHA-256).

    For keys of results kept across runs; None for another checker (an object
    or a callable may change between runs), or when the files cannot be read.

    Examples
    --------
    >>> from sklearn_fairaes.features._spelling import spell_checker_identity
    >>> spell_checker_identity(lambda words: []) is None
    True
    """
    if spelling != "pyspellchecker":
        return None
    import importlib.metadata
    import importlib.util
    from pathlib import Path

    from ._persist import file_digests

    try:
        spec = importlib.util.find_spec("spellchecker")
        if spec is None or spec.origin is None:
            return None
        return {
            "checker": "pyspellchecker",
            "version": importlib.metadata.version("pyspellchecker"),
            "files": file_digests(Path(spec.origin).parent / "resources", ["en.json.gz"]),
        }
    except (OSError, ValueError, importlib.metadata.PackageNotFoundError):
        return None


def _pyspellchecker() -> Any:
    with _CHECKERS_LOCK:
        if "pyspellchecker" not in _CHECKERS:
            spellchecker = require(
                "spellchecker", purpose="the spelling_errors feature (pyspellchecker)"
            )
            _CHECKERS["pyspellchecker"] = spellchecker.SpellChecker(language="en")
        return _CHECKERS["pyspellchecker"]


def _unknown_function(spelling: Any) -> Callable[[list[str]], Iterable[str]]:
    if isinstance(spelling, str):
        return _pyspellchecker().unknown
    if callable(getattr(spelling, "unknown", None)):
        return spelling.unknown
    return spelling


def spelling_parts(word: str) -> tuple[str, ...]:
    """The parts of a word that are spell-checked, or () when it is skipped.

    Examples
    --------
    >>> from sklearn_fairaes.features._spelling import spelling_parts
    >>> spelling_parts("well-known"), spelling_parts("didn't"), spelling_parts("@CAPS1's")
    (('well', 'known'), ("didn't",), ())
    >>> spelling_parts("5pm"), spelling_parts("...")
    ((), ())
    """
    if "@" in word and PLACEHOLDER_PATTERN.search(word):
        return ()
    if _DIGIT.search(word):
        return ()
    return tuple(_PART.findall(word))


def count_spelling_errors(word_lists: Sequence[Iterable[str]], spelling: Any) -> list[int]:
    """Count the misspelled words of each essay.

    Parameters
    ----------
    word_lists : list of list of str
        Orthographic words of each essay.
    spelling : "pyspellchecker", object with ``unknown``, or callable
        The checker; called once for the distinct parts of all the essays.

    Returns
    -------
    counts : list of int
        Misspelled words of each essay, every occurrence counted.

    Examples
    --------
    >>> from sklearn_fairaes.features._spelling import count_spelling_errors
    >>> count_spelling_errors([["Teh", "cat", "teh"], ["well-knwon"]], "pyspellchecker")
    [2, 1]
    """
    parts_per_essay = [[spelling_parts(w) for w in words] for words in word_lists]
    distinct = sorted({p for essay in parts_per_essay for parts in essay for p in parts})
    if not distinct:
        return [0] * len(word_lists)
    unknown = _unknown_function(spelling)(distinct)
    try:
        unknown = set(unknown)
    except TypeError:
        raise TypeError(
            f"the spell checker must return a collection of the unknown words, got "
            f"{type(unknown).__name__}"
        ) from None
    bad = {p for p in distinct if p in unknown or p.lower() in unknown}
    return [
        sum(1 for parts in essay if any(p in bad for p in parts))
        for essay in parts_per_essay
    ]
