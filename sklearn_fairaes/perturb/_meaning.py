"""Meaning-preserving perturbations: a fair score should stay where it was.

Each edit keeps what the essay says and how well it says it, up to noise that
a human rater would ignore or barely notice: synonyms, a few typos, case and
spacing, contractions, and the numbering of ASAP's anonymisation
placeholders. ASAP placeholders (``@PERSON1``, ``@CAPS2``, ``@NUM1``, ...)
are never broken: typos, case changes, synonyms and contraction swaps leave
them exactly as written, and :class:`PlaceholderRenaming` only renumbers
them.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._param_validation import Interval, Options
from ._base import (
    BasePerturbation,
    Edit,
    PerturbationRecord,
    PerturbOutcome,
    RandomStateLike,
)
from ._text import letter_words, restore_case, stochastic_count

if TYPE_CHECKING:
    import numpy as np

    from ..paraphrase import WordNetParaphraser
    from ._text import EssayText

__all__ = [
    "CaseWhitespaceNoise",
    "ContractionSwap",
    "PlaceholderRenaming",
    "SynonymParaphrase",
    "TypoInjection",
]

_RATE: list[Any] = [Interval(numbers.Real, 0, 1)]


# --------------------------------------------------------------- synonyms
class SynonymParaphrase(BasePerturbation):
    """Swap some content words for WordNet synonyms (a paraphrase; expected: stay).

    A thin wrapper around :class:`~sklearn_fairaes.paraphrase.WordNetParaphraser`
    (the offline stand-in for the paper's §5.2 paraphrases) that gives its
    word edits in the perturbations' record format. Everything but the replaced
    words, placeholders included, is kept as written. See
    :class:`~sklearn_fairaes.paraphrase.WordNetParaphraser` for which words are
    eligible and its limits (senses are not disambiguated, so a synonym can be
    wrong in context).

    Needs WordNet (:func:`sklearn_fairaes.resources.ensure_wordnet`) and a POS
    tagger (NLTK's tagger data or spaCy with ``en_core_web_sm``; the ``pos``
    extra).

    Edit kinds: ``"synonym"``. An essay with no eligible word is returned
    unchanged with the note ``"no word with a usable synonym"``.

    Parameters
    ----------
    rate : float, default=0.3
        Share of the eligible words replaced, in [0, 1].
    pos_tagger : {"auto", "nltk", "spacy"}, "spacy:<model>" or callable, default="auto"
        POS backend, as in :class:`~sklearn_fairaes.paraphrase.WordNetParaphraser`.
    min_count : int, default=2
        Smallest WordNet sense-tagged count of a sense and a synonym, as in
        :class:`~sklearn_fairaes.paraphrase.WordNetParaphraser`.
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text (see
        :mod:`sklearn_fairaes.perturb`).

    Examples
    --------
    >>> from sklearn_fairaes.perturb import SynonymParaphrase
    >>> para = SynonymParaphrase(rate=1.0, random_state=0)
    >>> texts, records = para.transform_with_records(
    ...     ["@PERSON1 waited while the old car was repaired."])
    >>> texts[0]
    '@PERSON1 waited while the old automobile was fixed.'
    >>> [(e.before, e.after) for e in records[0].edits]
    [('car', 'automobile'), ('repaired', 'fixed')]
    """

    name = "synonym"
    expected = "stay"
    _param_rules = {
        **BasePerturbation._param_rules,
        "rate": _RATE,
        "pos_tagger": [str, callable],
        "min_count": [Interval(numbers.Integral, 0, None)],
    }

    def __init__(
        self,
        rate: float = 0.3,
        *,
        pos_tagger: str | Callable[[list[str]], Sequence[str]] = "auto",
        min_count: int = 2,
        random_state: RandomStateLike = None,
    ) -> None:
        self.rate = rate
        self.pos_tagger = pos_tagger
        self.min_count = min_count
        self.random_state = random_state

    def _paraphraser(self, base_seed: int) -> WordNetParaphraser:
        from ..paraphrase import WordNetParaphraser

        return WordNetParaphraser(
            rate=self.rate,
            random_state=base_seed,
            pos_tagger=self.pos_tagger,
            min_count=self.min_count,
        ).fit([""])  # fit learns nothing from essays; it needs one to accept

    def _check_params(self) -> None:
        # finds the POS tagger and WordNet now, so that a missing one fails at fit
        self._paraphraser(0)

    def _perturb_batch(
        self, essays: Sequence[str], base_seed: int
    ) -> list[PerturbationRecord]:
        _, word_edits = self._paraphraser(base_seed).paraphrase_with_edits(essays)
        records: list[PerturbationRecord] = []
        for text, edits in zip(essays, word_edits):
            if not text.strip():
                records.append(PerturbationRecord((), "empty essay"))
                continue
            out = tuple(
                Edit(
                    e.start, e.start + len(e.original), e.original, e.replacement, "synonym"
                )
                for e in edits
            )
            records.append(
                PerturbationRecord(out, "" if out else "no word with a usable synonym")
            )
        return records


# ------------------------------------------------------------------ typos
# neighbours of each letter on a QWERTY keyboard (same row and the rows above
# and below), the usual source of substitution typos
_QWERTY = {
    "q": "wa", "w": "qeas", "e": "wrsd", "r": "etdf", "t": "ryfg", "y": "tugh",
    "u": "yihj", "i": "uojk", "o": "ipkl", "p": "ol", "a": "qwsz", "s": "awedxz",
    "d": "serfcx", "f": "drtgvc", "g": "ftyhbv", "h": "gyujnb", "j": "huikmn",
    "k": "jiolm", "l": "kop", "z": "asx", "x": "zsdc", "c": "xdfv", "v": "cfgb",
    "b": "vghn", "n": "bhjm", "m": "njk",
}  # fmt: skip
_TYPO_KINDS = ("swap", "delete", "double", "keyboard")


def _typo(word: str, rng: np.random.Generator) -> tuple[str, str]:
    """One typo of ``word`` (letters only, >= 2 letters): (new word, kind)."""
    kind = _TYPO_KINDS[int(rng.integers(len(_TYPO_KINDS)))]
    n = len(word)
    if kind == "swap":
        spots = [k for k in range(n - 1) if word[k].lower() != word[k + 1].lower()]
        if spots:
            k = spots[int(rng.integers(len(spots)))]
            return word[:k] + word[k + 1] + word[k] + word[k + 2 :], "swap"
        kind = "delete"  # "aaa": no swap changes it
    k = int(rng.integers(n))
    if kind == "delete":
        return word[:k] + word[k + 1 :], "delete"
    if kind == "double":
        return word[: k + 1] + word[k] + word[k + 1 :], "double"
    options = _QWERTY[word[k].lower()]
    new = options[int(rng.integers(len(options)))]
    new = new.upper() if word[k].isupper() else new
    return word[:k] + new + word[k + 1 :], "keyboard"


class TypoInjection(BasePerturbation):
    """Put one typo into some words (noised text; expected: stay).

    About ``rate`` of an essay's eligible words (stochastic rounding, as in
    :class:`~sklearn_fairaes.paraphrase.WordNetParaphraser`) get one typo each,
    drawn uniformly among four kinds:

    * ``"typo:swap"`` -- two adjacent, different letters swapped (``from`` ->
      ``form``);
    * ``"typo:delete"`` -- one letter dropped;
    * ``"typo:double"`` -- one letter doubled;
    * ``"typo:keyboard"`` -- one letter replaced by a neighbouring key of a
      QWERTY keyboard, in the same case.

    A word is eligible when it is a whole word of letters only (no digits,
    apostrophes or hyphens), at least ``min_word_length`` long. Placeholders
    (``@CAPS1``), numbers and contractions are never touched; nor is anything
    but the chosen letters. A typo may produce another real word (``form``),
    as real typos do. An essay with no eligible word is returned unchanged
    with the note ``"no eligible word"``.

    Parameters
    ----------
    rate : float, default=0.05
        Share of the eligible words that get a typo, in [0, 1].
    min_word_length : int, default=3
        Shorter words are never changed.
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import TypoInjection
    >>> typos = TypoInjection(rate=0.3, random_state=2)
    >>> texts, records = typos.transform_with_records(
    ...     ["@CAPS1 waited patiently for the bus."])
    >>> texts[0]
    '@CAPS1 watied patiently for the buss.'
    >>> [(e.before, e.after, e.kind) for e in records[0].edits]
    [('waited', 'watied', 'typo:swap'), ('bus', 'buss', 'typo:double')]
    """

    name = "typos"
    expected = "stay"
    _param_rules = {
        **BasePerturbation._param_rules,
        "rate": _RATE,
        "min_word_length": [Interval(numbers.Integral, 2, None)],
    }

    def __init__(
        self,
        rate: float = 0.05,
        *,
        min_word_length: int = 3,
        random_state: RandomStateLike = None,
    ) -> None:
        self.rate = rate
        self.min_word_length = min_word_length
        self.random_state = random_state

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        words = [
            (a, b) for a, b in letter_words(text, essay) if b - a >= self.min_word_length
        ]
        if not words:
            return [], "no eligible word", 0
        k = stochastic_count(self.rate, len(words), rng)
        edits: list[Edit] = []
        for j in sorted(rng.choice(len(words), size=k, replace=False).tolist()):
            a, b = words[j]
            new, kind = _typo(text[a:b], rng)
            edits.append(Edit(a, b, text[a:b], new, f"typo:{kind}"))
        return edits, "", 0


# ------------------------------------------------------ case and spacing
class CaseWhitespaceNoise(BasePerturbation):
    """Flip the case of some words and double some spaces (expected: stay).

    About ``rate`` of the essay's whole letter-only words change case
    (``"case"`` edits: a lower-case word gets a capital initial, any other
    word becomes lower-case; ``I`` becomes ``i``), and about ``rate`` of its
    single spaces become two (``"space"`` edits). Placeholders, digits,
    punctuation and line breaks are never touched, so sentence boundaries stay
    where they were. Most representations lower-case their input and ignore
    runs of spaces, so they see no change at all; the perturbation checks
    that the model does the same. An essay with neither a word nor a space is
    returned unchanged with the note ``"nothing to change"``.

    Parameters
    ----------
    rate : float, default=0.1
        Share of the words whose case flips, and of the spaces doubled, in
        [0, 1].
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import CaseWhitespaceNoise
    >>> noise = CaseWhitespaceNoise(rate=0.5, random_state=1)
    >>> noise.transform(["I met @PERSON1 at the station."])
    ['I  met @PERSON1  At the Station.']
    """

    name = "case_whitespace"
    expected = "stay"
    _param_rules = {**BasePerturbation._param_rules, "rate": _RATE}

    def __init__(self, rate: float = 0.1, *, random_state: RandomStateLike = None) -> None:
        self.rate = rate
        self.random_state = random_state

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        words = letter_words(text, essay)
        spaces = [m.start() for m in re.finditer(r"(?<! ) (?! )", text)]
        if not words and not spaces:
            return [], "nothing to change", 0
        edits: list[Edit] = []
        k = stochastic_count(self.rate, len(words), rng)
        for j in rng.choice(len(words), size=k, replace=False).tolist():
            a, b = words[j]
            word = text[a:b]
            new = word[0].upper() + word[1:] if word.islower() else word.lower()
            edits.append(Edit(a, b, word, new, "case"))
        k = stochastic_count(self.rate, len(spaces), rng)
        for j in rng.choice(len(spaces), size=k, replace=False).tolist():
            edits.append(Edit(spaces[j], spaces[j] + 1, " ", "  ", "space"))
        return edits, "", 0


# ------------------------------------------------------------ contractions
# contracted form (lower case, straight apostrophe) -> expansion
_EXPAND = {
    "can't": "cannot", "won't": "will not", "shan't": "shall not",
    "let's": "let us", "i'm": "i am",
}  # fmt: skip
for _aux in ("do", "does", "did", "is", "are", "was", "were", "has", "have", "had",
             "could", "would", "should", "must", "need", "might"):  # fmt: skip
    _EXPAND[f"{_aux}n't"] = f"{_aux} not"
for _p in ("you", "we", "they"):
    _EXPAND[f"{_p}'re"] = f"{_p} are"
for _p in ("i", "you", "we", "they"):
    _EXPAND[f"{_p}'ve"] = f"{_p} have"
for _p in ("i", "you", "he", "she", "it", "we", "they", "that", "there", "who", "what"):
    _EXPAND[f"{_p}'ll"] = f"{_p} will"
    _EXPAND[f"{_p}'d"] = f"{_p} would"  # "had" before a participle, see below
for _p in ("he", "she", "it", "that", "there", "what", "who", "where", "here", "how"):
    _EXPAND[f"{_p}'s"] = f"{_p} is"  # "has" before been/got, see below

# (first word, second word) -> contraction, for the contracting direction
_CONTRACT = {("can", "not"): "can't", ("will", "not"): "won't", ("i", "am"): "i'm"}
for _aux in ("do", "does", "did", "is", "are", "was", "were", "has", "have", "had",
             "could", "would", "should", "must"):  # fmt: skip
    _CONTRACT[(_aux, "not")] = f"{_aux}n't"
for _p in ("you", "we", "they"):
    _CONTRACT[(_p, "are")] = f"{_p}'re"
for _p in ("i", "you", "he", "she", "it", "we", "they"):
    _CONTRACT[(_p, "will")] = f"{_p}'ll"
for _p in ("i", "you", "he", "she", "we", "they"):
    _CONTRACT[(_p, "would")] = f"{_p}'d"
for _p in ("he", "she", "it", "that", "there", "what"):
    _CONTRACT[(_p, "is")] = f"{_p}'s"
del _aux, _p

# past participles that make "'d" read as "had" and "'s" as "has"
_IRREGULAR_PARTICIPLES = frozenset(
    {
        "been", "done", "gone", "seen", "had", "made", "got", "gotten", "taken",
        "given", "come", "become", "begun", "known", "grown", "thrown", "written",
        "eaten", "found", "left", "told", "heard", "felt", "kept", "lost", "met",
        "paid", "said", "sent", "sold", "spent", "stood", "taught", "thought",
        "understood", "won", "brought", "bought", "caught", "fought", "held", "led",
        "slept", "put", "run", "forgotten", "chosen", "driven", "fallen", "broken",
        "spoken", "stolen", "hidden", "ridden", "woken", "worn", "torn", "shown",
        "better", "already",
    }
)  # fmt: skip
_HAS_AFTER = frozenset({"been", "got", "gotten", "had"})
_WORD_WITH_APOSTROPHE = re.compile(r"[A-Za-z]+['\u2019][A-Za-z]+")
_PLAIN_WORD = re.compile(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)?")


def _next_word(text: str, end: int) -> str | None:
    """The word after ``text[end:]`` when only spaces or tabs come between."""
    m = re.match(r"[ \t]+([A-Za-z]+)", text[end:])
    return m.group(1).lower() if m else None


def _expansion(key: str, following: str | None) -> str | None:
    out = _EXPAND.get(key)
    if out is None:
        return None
    if (
        key.endswith("'d")
        and following
        and (following.endswith("ed") or following in _IRREGULAR_PARTICIPLES)
    ):
        out = out[: -len("would")] + "had"
    elif key.endswith("'s") and following in _HAS_AFTER:
        out = out[: -len("is")] + "has"
    return out


class ContractionSwap(BasePerturbation):
    """Expand contractions or contract expanded forms (expected: stay).

    ``mode="expand"`` rewrites contractions in full, ``mode="contract"``
    contracts the forms that have a contraction, and ``mode="toggle"`` does
    both, each site flipping to the other form. Of the sites found, about
    ``rate`` are changed (all with the default ``rate=1.0``). Case follows the
    original first letter (``Don't`` <-> ``Do not``, ``I'm`` <-> ``I am``).
    Edit kinds: ``"expand"`` and ``"contract"``.

    **Expanded**: ``n't`` after do/does/did, be, have/has/had and the
    modals could/would/should/must/need/might (``didn't`` -> ``did not``),
    ``can't`` -> ``cannot``, ``won't`` -> ``will not``, ``shan't``,
    ``let's`` -> ``let us``, and after the personal pronouns (and
    that/there/who/what...) ``'m``, ``'re``, ``'ve``, ``'ll``, ``'d``, ``'s``.
    ``'d`` is ``would`` unless the next word is a past participle (``-ed``
    or a listed irregular form such as ``gone``: then ``had``); ``'s`` is
    ``is`` unless the next word is ``been``, ``got``, ``gotten`` or ``had``
    (then ``has``). ``'s`` after a noun or a name is a possessive and is never
    touched; nor is ``ain't``.

    **Contracted**: ``do/does/did/is/are/was/were/has/have/had/could/would/
    should/must not`` -> ``...n't``, ``cannot`` and ``can not`` -> ``can't``,
    ``will not`` -> ``won't``, ``I am`` -> ``I'm``, ``you/we/they are``,
    ``he/she/it/that/there/what is``, pronoun + ``will``, and pronoun +
    ``would`` (not ``it would``). A pronoun + verb pair is contracted only
    when another word follows on the same line (``I know what it is.`` keeps
    its final ``is``) and that word is not ``not`` (``it is not`` becomes
    ``it isn't``), and pronoun + ``have`` never is (``I have a dog`` ->
    ``I've a dog`` is not standard usage). The apostrophe used is the essay's
    own (``’`` when it has curly apostrophes and no straight ones).

    Limits: ``is not only ... but`` becomes ``isn't only``; mis-encoded
    apostrophes (``â€™``) are not recognised. Placeholders are never touched.
    An essay without a site is returned unchanged with the note
    ``"no contraction site"``.

    Parameters
    ----------
    mode : {"toggle", "expand", "contract"}, default="toggle"
        Which direction(s) to apply.
    rate : float, default=1.0
        Share of the sites found that are changed, in [0, 1].
    random_state : int, RandomState instance or None, default=None
        Base seed (used when ``rate < 1``); each essay's draw also depends on
        its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import ContractionSwap
    >>> swap = ContractionSwap(random_state=0)
    >>> swap.transform(["I'm sure @PERSON1 did not know. Don't worry, it is fine."])
    ["I am sure @PERSON1 didn't know. Do not worry, it's fine."]
    """

    name = "contractions"
    expected = "stay"
    _param_rules = {
        **BasePerturbation._param_rules,
        "mode": [Options(("contract", "expand", "toggle"))],
        "rate": _RATE,
    }

    def __init__(
        self,
        mode: str = "toggle",
        *,
        rate: float = 1.0,
        random_state: RandomStateLike = None,
    ) -> None:
        self.mode = mode
        self.rate = rate
        self.random_state = random_state

    def _sites(self, text: str) -> list[Edit]:
        apostrophe = "\u2019" if "\u2019" in text and "'" not in text else "'"
        words = [
            m
            for m in _PLAIN_WORD.finditer(text)
            if not (m.start() and text[m.start() - 1] in "@")
        ]
        sites: list[Edit] = []
        if self.mode in ("expand", "toggle"):
            for m in words:
                if not _WORD_WITH_APOSTROPHE.fullmatch(m.group()):
                    continue
                key = m.group().lower().replace("\u2019", "'")
                out = _expansion(key, _next_word(text, m.end()))
                if out is not None:
                    sites.append(Edit(m.start(), m.end(), m.group(), out, "expand"))
        if self.mode in ("contract", "toggle"):
            for k, m in enumerate(words):
                word = m.group().lower()
                if word == "cannot":
                    sites.append(
                        Edit(m.start(), m.end(), m.group(), f"can{apostrophe}t", "contract")
                    )
                    continue
                if k + 1 == len(words):
                    continue
                nxt = words[k + 1]
                gap = text[m.end() : nxt.start()]
                if not gap or gap.strip(" \t"):
                    continue
                out = _CONTRACT.get((word, nxt.group().lower()))
                if out is None:
                    continue
                if nxt.group().lower() != "not":
                    following = _next_word(text, nxt.end())
                    # no word after ("what it is."), or a "not" that goes with
                    # the auxiliary ("it is not" -> "it isn't")
                    if following is None or following == "not":
                        continue
                before = text[m.start() : nxt.end()]
                sites.append(
                    Edit(
                        m.start(),
                        nxt.end(),
                        before,
                        out.replace("'", apostrophe),
                        "contract",
                    )
                )
        # overlapping sites ("it is not"): the first one wins
        sites.sort(key=lambda e: (e.start, e.end))
        kept: list[Edit] = []
        cursor = -1
        for site in sites:
            if site.start >= cursor:
                kept.append(site)
                cursor = site.end
        return kept

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        sites = self._sites(text)
        if not sites:
            return [], "no contraction site", 0
        k = stochastic_count(self.rate, len(sites), rng)
        chosen = sorted(rng.choice(len(sites), size=k, replace=False).tolist())
        edits: list[Edit] = []
        for j in chosen:
            site = sites[j]
            edits.append(site._replace(after=restore_case(site.before, site.after)))
        return edits, "", 0


# ------------------------------------------------------------ placeholders
_NUMBERED_PLACEHOLDER = re.compile(r"@([A-Z]+)([0-9]+)")


class PlaceholderRenaming(BasePerturbation):
    """Renumber ASAP placeholders, consistently within an essay (expected: stay).

    ASAP replaced names, places, dates, numbers and other capitalised words by
    placeholders such as ``@PERSON1`` or ``@CAPS2``; their numbers only tell
    different entities of one essay apart. For each kind present in an essay
    (``PERSON``, ``CAPS``, ``NUM``, ...) a shift is drawn uniformly from 1 to
    ``max_shift`` and every placeholder of that kind gets its number plus the
    shift (``@PERSON1`` -> ``@PERSON3``, ``@PERSON2`` -> ``@PERSON4``): the
    same entity keeps the same new name and different entities stay
    different. Unnumbered placeholders (``@CAPS``) are kept. Edit kind:
    ``"rename"``. An essay without a numbered placeholder is returned
    unchanged with the note ``"no numbered placeholder"``.

    Parameters
    ----------
    max_shift : int, default=5
        Largest shift of a placeholder's number (>= 1).
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import PlaceholderRenaming
    >>> rename = PlaceholderRenaming(random_state=0)
    >>> rename.transform(["@PERSON1 called @PERSON2; @PERSON1 waited at @LOCATION1."])
    ['@PERSON4 called @PERSON5; @PERSON4 waited at @LOCATION5.']
    """

    name = "placeholders"
    expected = "stay"
    _param_rules = {
        **BasePerturbation._param_rules,
        "max_shift": [Interval(numbers.Integral, 1, None)],
    }

    def __init__(self, max_shift: int = 5, *, random_state: RandomStateLike = None) -> None:
        self.max_shift = max_shift
        self.random_state = random_state

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        found = list(_NUMBERED_PLACEHOLDER.finditer(text))
        if not found:
            return [], "no numbered placeholder", 0
        kinds = sorted({m.group(1) for m in found})
        shift = {kind: int(rng.integers(1, int(self.max_shift) + 1)) for kind in kinds}
        edits = [
            Edit(
                m.start(),
                m.end(),
                m.group(),
                f"@{m.group(1)}{int(m.group(2)) + shift[m.group(1)]}",
                "rename",
            )
            for m in found
        ]
        return edits, "", 0
