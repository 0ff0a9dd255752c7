"""Tokens, words and sentences of an essay with their character offsets.

The perturbations edit the original text in place (every character they do not
edit is kept), so they need to know where each token and sentence lies in it.
The tokens and sentences are those of
:func:`sklearn_fairaes.features._tokenize.tokenize_essay`, the tokenizer of the
interpretable features; this module only places them in the original text.

**Sentences.** A sentence ends after ``.``, ``!``, ``?`` or ``…`` (with any
closing quotes or brackets touching it) and at every line break. A period
does not end a sentence after ``Mr. Mrs. Ms. Dr. St. Jr. Sr. vs. etc. Prof.
Mt.`` or a token with another period inside (``U.S.``, ``e.g.``, ``p.m.``).
Known limits: other abbreviations (``Jan.``, ``Gen.``, ``approx.``) end a
sentence; a sentence with no end mark runs on to the next end mark or line
break; a decimal point or an ellipsis inside a sentence may end it.

Each sentence's span runs from its first to its last character; anything
between two sentences that is not whitespace (a stray quote the tokenizer
could not place) is attached to the sentence before it, so the gaps between
sentences (the **separators**) are whitespace only, possibly empty (``"He
waited.Then"``).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np


__all__ = ["EssayText", "analyse", "stochastic_count"]

# letters only: the words a typo, a case change or a synonym may touch
LETTERS = re.compile(r"[A-Za-z]+")


class EssayText(NamedTuple):
    """One essay, tokenized, with offsets into the original text.

    Attributes
    ----------
    tokens : tuple of str
        Penn Treebank tokens (placeholders are single tokens).
    spans : tuple of (int, int) or None
        Character span of each token in the original text, or None for a
        token that could not be placed (never edited).
    sentences : tuple of (int, int)
        Character spans of the sentences (see the module docstring).
    sentence_tokens : tuple of (int, int)
        ``[start, stop)`` token ranges of the same sentences.
    words : tuple of str
        Orthographic words of the essay (``didn't`` is one word), as the
        features count them.
    """

    tokens: tuple[str, ...]
    spans: tuple[tuple[int, int] | None, ...]
    sentences: tuple[tuple[int, int], ...]
    sentence_tokens: tuple[tuple[int, int], ...]
    words: tuple[str, ...]


@functools.lru_cache(maxsize=2048)
def analyse(text: str) -> EssayText:
    """Tokens, words and sentences of ``text`` with their offsets (cached).

    The audit runs several perturbations on the same essays; the cache keeps
    each essay from being tokenized once per perturbation.

    Parameters
    ----------
    text : str
        The essay.

    Returns
    -------
    essay : EssayText
        Its tokens, words and sentences with their character offsets.

    Examples
    --------
    >>> from sklearn_fairaes.perturb._text import analyse
    >>> essay = analyse("Mr. Lee waited. Then  he left!")
    >>> essay.sentences
    ((0, 15), (16, 30))
    >>> essay.words
    ('Mr.', 'Lee', 'waited', 'Then', 'he', 'left')
    """
    from ..paraphrase._wordnet import _word_slots  # the paraphraser's token spans

    tokenized, spans = _word_slots(text)
    sentences: list[list[int]] = []
    ranges: list[tuple[int, int]] = []
    for t0, t1 in tokenized.sentences:
        placed = [span for span in (spans[k] for k in range(t0, t1)) if span is not None]
        if not placed:
            if ranges:  # nothing to place: part of the sentence before
                ranges[-1] = (ranges[-1][0], t1)
            continue
        sentences.append([placed[0][0], placed[-1][1]])
        ranges.append((t0, t1))
    if sentences:
        # Whatever is not whitespace outside the sentences joins its neighbour,
        # so that separators are whitespace only.
        lead = len(text) - len(text.lstrip())
        sentences[0][0] = min(sentences[0][0], lead)
        for k in range(len(sentences)):
            stop = sentences[k + 1][0] if k + 1 < len(sentences) else len(text)
            gap = text[sentences[k][1] : stop]
            sentences[k][1] += len(gap.rstrip())
    return EssayText(
        tuple(tokenized.tokens),
        tuple(spans),
        tuple((a, b) for a, b in sentences),
        tuple(ranges),
        tuple(tokenized.words),
    )


def stochastic_count(rate: float, n: int, rng: np.random.Generator) -> int:
    """``floor(rate * n)`` or ``ceil(rate * n)``, ``rate * n`` on average.

    The rounding rule of :class:`~sklearn_fairaes.paraphrase.WordNetParaphraser`,
    so that a small rate still edits short essays now and then.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.perturb._text import stochastic_count
    >>> rng = np.random.default_rng(0)
    >>> sorted({stochastic_count(0.25, 10, rng) for _ in range(50)})
    [2, 3]
    """
    import math

    return min(n, int(math.floor(float(rate) * n + rng.random())))


def inside_word(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` touches a letter or digit (part of a longer word)."""
    return (start > 0 and text[start - 1].isalnum()) or (
        end < len(text) and text[end].isalnum()
    )


def letter_words(text: str, essay: EssayText) -> list[tuple[int, int]]:
    """``(start, end)`` of the letters-only tokens that are whole words.

    Placeholders (``@CAPS1``), numbers, contractions (``n't``) and pieces of
    longer words are left out.
    """
    out: list[tuple[int, int]] = []
    for tok, span in zip(essay.tokens, essay.spans):
        if span is None or not LETTERS.fullmatch(tok):
            continue
        a, b = span
        if text[a:b] != tok or inside_word(text, a, b):
            continue
        out.append((a, b))
    return out


def restore_case(original: str, replacement: str) -> str:
    """``replacement`` in the case pattern of ``original`` (lower, Title, UPPER)."""
    if not original or not replacement:
        return replacement
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[0].isupper():
        return replacement[0].upper() + replacement[1:]
    return replacement
