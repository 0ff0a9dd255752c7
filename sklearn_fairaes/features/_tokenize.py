"""Tokenisation for the interpretable features, with no downloaded data.

One pass of NLTK's ``NLTKWordTokenizer`` (the Penn Treebank rules that
``nltk.word_tokenize`` applies; no Punkt model needed) over the whole essay
gives three views of it:

* **tokens** -- Penn Treebank tokens, the ones a POS tagger expects
  (``"didn't"`` gives ``did`` + ``n't``);
* **words** -- orthographic words: word-like tokens that touch in the text are
  joined again (``did`` + ``n't`` -> ``didn't``, ``gon`` + ``na`` ->
  ``gonna``), and tokens with no letter or digit (punctuation) are dropped.
  Word counts, word lengths, unique words, spelling and prompt overlap use
  these;
* **sentences** -- the token ranges of each sentence.

The Treebank rules split a period off only at the end of the string they are
given (they expect one sentence). Without a sentence splitter the period of
every sentence but the last would stay glued to its word, so a period at the
end of a token is split off afterwards unless the token is an abbreviation
(it has another period inside, as ``U.S.``, or is one of ``Mr. Mrs. Ms. Dr.
St. Jr. Sr. vs. etc. Prof. Mt.``); a period glued to the next sentence
(``waiting .I``, ``waited.Then``) is split off too. A sentence ends after a
token made of ``.``, ``!``, ``?`` or ``…`` (and any closing quotes or
brackets touching it) and at every line break.

Curly apostrophes (``’``, ``‘``) are read as ``'`` so that ``didn’t`` is
split like ``didn't``, and the common mis-decodings of curly quotes, dashes and
ellipses (``â€™`` for ``’``, ``â€œ`` for ``“``, ...) are repaired first.

ASAP anonymisation placeholders (``@NUM1``, ``@PERSON2``, ``@CAPS``,
``@LOCATION1``, ``@ORGANIZATION1``, ...: an ``@`` followed by capitals and
optional digits) are always single tokens and single words; the tokenizer
never splits the ``@`` off.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

__all__ = [
    "PLACEHOLDER_PATTERN",
    "TokenizedEssay",
    "is_placeholder",
    "normalize_text",
    "placeholder_stand_in",
    "replace_placeholders",
    "tokenize_essay",
]

#: An ASAP anonymisation placeholder: ``@`` + capitals + optional digits.
PLACEHOLDER_PATTERN = re.compile(r"@[A-Z]+[0-9]*")
_FULL_PLACEHOLDER = re.compile(r"@[A-Z]+[0-9]*$")

# Placeholders for quantities stand in for a number; all others (people,
# places, organisations, capitalised words, months, dates, ...) for a first
# name. The stand-in depends on the placeholder's kind and number, so two
# different placeholders side by side ("@PERSON1 @PERSON2") do not read as a
# repeated word.
_NUMERIC_KINDS = ("NUM", "PERCENT", "MONEY", "TIME")
_NAMES = (
    "Alex", "Sam", "Robin", "Kim", "Jordan", "Taylor", "Casey", "Morgan", "Jamie",
    "Riley", "Avery", "Quinn", "Drew", "Jesse", "Logan", "Parker", "Reese", "Rowan",
    "Sage", "Skyler", "Blake", "Cameron", "Dana", "Emery", "Finley", "Harper", "Jules",
    "Kendall", "Lane", "Marley", "Noel",
)  # fmt: skip

_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "etc", "prof", "mt"}
)
_END_MARKS = frozenset(".!?\u2026")
_CLOSERS = frozenset({"''", '"', "'", ")", "]", "\u201d", "\u2019"})
# a period (or ellipsis) at the end of a longer token: "waited." -> "waited" + "."
_TRAILING_PERIOD = re.compile(r"^(.*[^.\u2026])([.\u2026]+)$")
# periods glued to the start of the next sentence: ".I" -> "." + "I"
_LEADING_PERIOD = re.compile(r"^([.\u2026]+)([A-Za-z].*)$")
# a sentence end with the space missing: "waited.Then" -> "waited" "." "Then"
_GLUED_SENTENCES = re.compile(r"^([A-Za-z]*[a-z])([.!?]+)([A-Z][A-Za-z]*)$")
# UTF-8 punctuation wrongly decoded as cp1252 (common in ASAP: "didnâ€™t").
_MOJIBAKE = (
    ("\u00e2\u20ac\u2122", "'"),
    ("\u00e2\u20ac\u02dc", "'"),
    ("\u00e2\u20ac\u0153", '"'),
    ("\u00e2\u20ac\u009d", '"'),
    ("\u00e2\u20ac\ufffd", '"'),
    ("\u00e2\u20ac\u00a6", "\u2026"),
    ("\u00e2\u20ac\u201d", "\u2014"),
    ("\u00e2\u20ac\u201c", "\u2013"),
)


@functools.lru_cache(maxsize=1)
def _word_tokenizer() -> Any:
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def is_placeholder(token: str) -> bool:
    """Whether ``token`` is exactly one ASAP placeholder such as ``@PERSON1``.

    Examples
    --------
    >>> from sklearn_fairaes.features._tokenize import is_placeholder
    >>> is_placeholder("@PERSON1"), is_placeholder("@CAPS"), is_placeholder("@home")
    (True, True, False)
    """
    return _FULL_PLACEHOLDER.match(token) is not None


def placeholder_stand_in(token: str) -> tuple[str, str]:
    """The word and Penn Treebank tag that stand in for a placeholder.

    Quantities (``@NUM``, ``@PERCENT``, ``@MONEY``, ``@TIME``) become a
    number tagged ``CD``; every other placeholder becomes a first name tagged
    ``NNP``. The word depends on the placeholder's kind and number only, so the
    same placeholder always gets the same word and different ones (almost
    always) different words.

    Examples
    --------
    >>> from sklearn_fairaes.features._tokenize import placeholder_stand_in
    >>> placeholder_stand_in("@NUM3"), placeholder_stand_in("@MONEY1")
    (('4', 'CD'), ('202', 'CD'))
    >>> placeholder_stand_in("@CAPS1")[1], placeholder_stand_in("@CAPS2")[1]
    ('NNP', 'NNP')
    >>> placeholder_stand_in("@CAPS1")[0] != placeholder_stand_in("@CAPS2")[0]
    True
    """
    body = token[1:]
    kind = body.rstrip("0123456789")
    digits = body[len(kind) :]
    number = int(digits) if digits else 0
    if kind in _NUMERIC_KINDS:
        return str(100 * _NUMERIC_KINDS.index(kind) + number + 1), "CD"
    return _NAMES[(sum(map(ord, kind)) + number) % len(_NAMES)], "NNP"


def replace_placeholders(text: str) -> str:
    """Replace every placeholder by its stand-in word (see :func:`placeholder_stand_in`).

    Used before grammar checking, so that an anonymised name is not reported
    as a language error the student did not make.

    Examples
    --------
    >>> from sklearn_fairaes.features._tokenize import replace_placeholders
    >>> replace_placeholders("@NUM2 minutes.")
    '3 minutes.'
    """
    return PLACEHOLDER_PATTERN.sub(lambda m: placeholder_stand_in(m.group())[0], text)


def normalize_text(text: str) -> str:
    """Repair mis-decoded punctuation and read curly apostrophes as ``'``.

    Examples
    --------
    >>> from sklearn_fairaes.features._tokenize import normalize_text
    >>> normalize_text("I didn\u00e2\u20ac\u2122t, I won\u2019t")
    "I didn't, I won't"
    """
    if "\u00e2\u20ac" in text:
        for bad, good in _MOJIBAKE:
            text = text.replace(bad, good)
    if "\u2019" in text or "\u2018" in text:
        text = text.replace("\u2019", "'").replace("\u2018", "'")
    return text


class TokenizedEssay:
    """The tokens, words and sentences of one essay.

    Attributes
    ----------
    tokens : list of str
        Penn Treebank tokens, in order; placeholders are single tokens.
    sentences : list of (int, int)
        ``[start, stop)`` ranges into ``tokens``, one per sentence.
    words : list of str
        Orthographic words (see the module docstring), in order.
    """

    __slots__ = ("tokens", "sentences", "words")

    def __init__(
        self, tokens: list[str], sentences: list[tuple[int, int]], words: list[str]
    ) -> None:
        self.tokens = tokens
        self.sentences = sentences
        self.words = words

    def __repr__(self) -> str:
        return (
            f"TokenizedEssay({len(self.tokens)} tokens, {len(self.words)} words, "
            f"{len(self.sentences)} sentences)"
        )


def _split_periods(tok: str, start: int, end: int) -> Iterator[tuple[str, int, int]]:
    """Split sentence-final periods off a token; yields (token, start, end)."""
    m = _GLUED_SENTENCES.match(tok)
    if m:
        a, b = len(m.group(1)), len(m.group(1)) + len(m.group(2))
        yield tok[:a], start, start + a
        yield tok[a:b], start + a, start + b
        yield tok[b:], start + b, end
        return
    m = _LEADING_PERIOD.match(tok)
    if m:
        k = len(m.group(1))
        yield tok[:k], start, start + k
        tok, start = tok[k:], start + k
    m = _TRAILING_PERIOD.match(tok)
    if m:
        stem = m.group(1)
        abbreviation = "." in stem or stem.lower() in _ABBREVIATIONS
        if not abbreviation:
            k = len(stem)
            yield stem, start, start + k
            yield tok[k:], start + k, end
            return
    yield tok, start, end


def _raw_spans(text: str) -> list[tuple[str, int, int]]:
    """Treebank tokens with their spans, placeholders protected from the tokenizer."""
    # "@" -> "Q" keeps lengths (so spans stay valid) and makes each placeholder
    # an alphanumeric run the tokenizer leaves whole.
    protected = PLACEHOLDER_PATTERN.sub(lambda m: "Q" + m.group()[1:], text)
    tokenizer = _word_tokenizer()
    try:
        return [(text[a:b], a, b) for a, b in tokenizer.span_tokenize(protected)]
    except ValueError:  # pragma: no cover - never seen on ASAP prompts 7 and 8
        # NLTK could not align a token it rewrote: place the tokens that can be
        # found; the others get an empty span, so they never join a word.
        out: list[tuple[str, int, int]] = []
        cursor = 0
        for tok in tokenizer.tokenize(protected):
            at = protected.find(tok, cursor)
            if at < 0:
                out.append((tok, cursor, cursor))
            else:
                out.append((text[at : at + len(tok)], at, at + len(tok)))
                cursor = at + len(tok)
        return out


def _cut_placeholders(
    spans: list[tuple[str, int, int]], holders: list[tuple[int, int]], text: str
) -> list[tuple[str, int, int]]:
    """Split any token that contains a placeholder at the placeholder's edges."""
    if not holders:
        return spans
    out: list[tuple[str, int, int]] = []
    h, n_holders = 0, len(holders)
    for tok, a, b in spans:
        # both lists are sorted by position: skip placeholders left behind
        while h < n_holders and holders[h][1] <= a:
            h += 1
        if a == b or h == n_holders or holders[h][0] >= b:
            out.append((tok, a, b))
            continue
        cursor, k = a, h
        while k < n_holders and holders[k][0] < b:
            s, e = holders[k]
            if s > cursor:
                out.append((text[cursor:s], cursor, s))
            out.append((text[s:e], s, e))
            cursor = e
            k += 1
        if b > cursor:
            out.append((text[cursor:b], cursor, b))
    return out


# The essays tokenized last, by text: the paraphraser and the features each
# tokenize every essay of a chunk (1.6 ms an essay, twice), one after the other
# in the same process; a chunk is 128 essays, so two chunks' worth suffices.
_RECENT: OrderedDict[str, TokenizedEssay] = OrderedDict()
_RECENT_MAX = 256
_RECENT_LOCK = threading.Lock()


def tokenize_essay(text: str) -> TokenizedEssay:
    """Split an essay into Treebank tokens, orthographic words and sentences.

    Parameters
    ----------
    text : str
        The essay.

    Returns
    -------
    essay : TokenizedEssay
        Its tokens, words and sentences.

    Examples
    --------
    >>> from sklearn_fairaes.features._tokenize import tokenize_essay
    >>> t = tokenize_essay("@CAPS1 didn't wait. Then he left!")
    >>> t.tokens
    ['@CAPS1', 'did', "n't", 'wait', '.', 'Then', 'he', 'left', '!']
    >>> t.words
    ['@CAPS1', "didn't", 'wait', 'Then', 'he', 'left']
    >>> t.sentences
    [(0, 5), (5, 9)]
    """
    with _RECENT_LOCK:
        made = _RECENT.get(text)
        if made is not None:
            _RECENT.move_to_end(text)
    if made is None:
        made = _tokenize(text)
        with _RECENT_LOCK:
            _RECENT[text] = made
            while len(_RECENT) > _RECENT_MAX:
                _RECENT.popitem(last=False)
    # fresh lists: a caller may change its copy, never the remembered one
    return TokenizedEssay(list(made.tokens), list(made.sentences), list(made.words))


def _tokenize(text: str) -> TokenizedEssay:
    text = normalize_text(text)
    holders = [m.span() for m in PLACEHOLDER_PATTERN.finditer(text)]
    spans: list[tuple[str, int, int]] = []
    for tok, a, b in _cut_placeholders(_raw_spans(text), holders, text):
        if ("." in tok or "\u2026" in tok) and a != b and not is_placeholder(tok):
            spans.extend(_split_periods(tok, a, b))
        else:
            spans.append((tok, a, b))

    tokens = [tok for tok, _, _ in spans]
    n = len(spans)
    cuts = {0, n}
    i = 0
    while i < n:
        tok = spans[i][0]
        if tok and all(ch in _END_MARKS for ch in tok):
            # closing quotes/brackets touching the end mark stay in this sentence
            j = i + 1
            while j < n and spans[j][0] in _CLOSERS and spans[j][1] == spans[j - 1][2]:
                j += 1
            cuts.add(j)
            i = j
            continue
        if i + 1 < n and "\n" in text[spans[i][2] : spans[i + 1][1]]:
            cuts.add(i + 1)
        i += 1
    edges = sorted(cuts)
    sentences = [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]

    words: list[str] = []
    prev_end, prev_wordlike = -1, False
    for tok, start, end in spans:
        wordlike = tok.isalnum() or any(ch.isalnum() for ch in tok)
        joins = prev_wordlike and start == prev_end and start != end
        if wordlike and joins and not is_placeholder(tok):
            words[-1] += tok
        elif wordlike:
            words.append(tok)
        prev_end, prev_wordlike = end, wordlike
    return TokenizedEssay(tokens, sentences, words)
