"""Quality- or meaning-changing perturbations: a fair score should not stay put.

Shuffling, deleting or repeating sentences, appending an off-topic paragraph,
stuffing the prompt's words into the essay, replacing it by word salad or
scrambling its words make an essay worse; a fair score drops. Negating its
sentences changes what it says; a fair score changes. Published AES studies
(Kumar et al., 2023, *Automatic Essay Scoring Systems Are Both Overstable and
Oversensitive*; Ding et al., 2020, on scoring gibberish) found popular
scorers that barely react to such edits, or reward the added length.

Sentences are those of :mod:`sklearn_fairaes.perturb._text` (the features'
tokenizer; abbreviations such as ``Mr.`` do not end a sentence; see there for
the limits).
"""

from __future__ import annotations

import functools
import numbers
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._param_validation import Interval
from ..resources import require
from ._base import BasePerturbation, Edit, PerturbOutcome, RandomStateLike
from ._meaning import _IRREGULAR_PARTICIPLES
from ._text import LETTERS, inside_word, restore_case, stochastic_count

if TYPE_CHECKING:
    from ._text import EssayText

__all__ = [
    "OFF_TOPIC_PARAGRAPHS",
    "Negation",
    "OffTopicParagraph",
    "PromptStuffing",
    "SentenceDeletion",
    "SentenceRepetition",
    "SentenceShuffle",
    "WordSalad",
    "WordScramble",
]

_RATE: list[Any] = [Interval(numbers.Real, 0, 1)]


def _sentence_texts(text: str, essay: EssayText) -> list[str]:
    return [text[a:b] for a, b in essay.sentences]


def _joins(left: str, right: str) -> bool:
    """Whether ``left + right`` would glue two words (or a word and a placeholder)."""
    return (
        bool(left)
        and bool(right)
        and left[-1].isalnum()
        and (right[0].isalnum() or right[0] == "@")
    )


# --------------------------------------------------------------- shuffle
class SentenceShuffle(BasePerturbation):
    """Put the essay's sentences in a random order (expected: drop).

    The sentences are permuted at random; the whitespace between them stays
    between the same sentence positions (a line break after the second
    sentence is still after the second sentence), so the edited essay holds
    exactly the same sentences, in another order. The
    order always differs from the original when the essay has two different
    sentences: a draw that gives the original order back is rotated by one.
    When two sentences were written without a space between them (``"He
    waited.Then he left."``) and the moved sentence ends with a letter or
    digit, a space is added after it so that two words are not glued
    together. A sentence with no end mark that moves into the middle reads on
    into the next one.

    A bag-of-words model with unigrams only is blind to this edit by
    construction: its scores cannot change (a built-in check of the audit).

    Edit kinds: ``"move"`` (one per sentence slot whose sentence changed).
    An essay with one sentence, or only identical sentences, is returned
    unchanged with the note ``"fewer than two different sentences"``.

    Parameters
    ----------
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import SentenceShuffle
    >>> shuffle = SentenceShuffle(random_state=0)
    >>> shuffle.transform(["Mr. Lee waited. The bus was late. We sang songs."])
    ['We sang songs. Mr. Lee waited. The bus was late.']
    """

    name = "sentence_shuffle"
    expected = "drop"

    def __init__(self, *, random_state: RandomStateLike = None) -> None:
        self.random_state = random_state

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        spans = essay.sentences
        texts = _sentence_texts(text, essay)
        n = len(texts)
        if n < 2 or len(set(texts)) < 2:
            return [], "fewer than two different sentences", 0
        perm = rng.permutation(n)
        if [texts[p] for p in perm] == texts:
            # a non-constant sequence never equals its rotation by one
            perm = np.roll(perm, 1)
        placed = [texts[p] for p in perm]
        edits: list[Edit] = []
        for k, (a, b) in enumerate(spans):
            new = placed[k]
            if k + 1 < n and spans[k + 1][0] == b and _joins(new, placed[k + 1]):
                new += " "
            if new != texts[k]:
                edits.append(Edit(a, b, texts[k], new, "move"))
        return edits, "", 0


# -------------------------------------------------------------- deletion
class SentenceDeletion(BasePerturbation):
    """Delete some of the essay's sentences (expected: drop).

    ``max(1, round(rate * n))`` of the ``n`` sentences (stochastic rounding),
    but never all of them, are chosen at random and deleted with the
    whitespace that follows them (the whitespace before them for the last
    sentence), so the rest of the text keeps its spacing.

    Edit kinds: ``"delete"`` (one per deleted sentence). An essay with one
    sentence is returned unchanged with the note ``"one sentence: nothing
    deleted"``.

    Parameters
    ----------
    rate : float, default=0.2
        Share of the sentences deleted, in [0, 1]; at least one and at most
        all but one are.
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import SentenceDeletion
    >>> delete = SentenceDeletion(rate=0.3, random_state=0)
    >>> delete.transform(["I waited. The bus was late. We sang songs."])
    ['The bus was late. We sang songs.']
    """

    name = "sentence_deletion"
    expected = "drop"
    _param_rules = {**BasePerturbation._param_rules, "rate": _RATE}

    def __init__(self, rate: float = 0.2, *, random_state: RandomStateLike = None) -> None:
        self.rate = rate
        self.random_state = random_state

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        spans = essay.sentences
        n = len(spans)
        if n < 2:
            return [], "one sentence: nothing deleted", 0
        k = min(n - 1, max(1, stochastic_count(self.rate, n, rng)))
        chosen = set(rng.choice(n, size=k, replace=False).tolist())
        # the deleted sentences at the very end take the whitespace before them
        tail = n
        while tail - 1 in chosen:
            tail -= 1
        edits: list[Edit] = []
        for j in sorted(chosen):
            if j < tail:
                a, b = spans[j][0], spans[j + 1][0]
            else:
                a, b = spans[j - 1][1], spans[j][1]
            edits.append(Edit(a, b, text[a:b], "", "delete"))
        return edits, "", 0


# ------------------------------------------------------------ repetition
class SentenceRepetition(BasePerturbation):
    """Pad the essay by repeating some of its sentences (expected: drop).

    ``max(1, round(rate * n))`` of the ``n`` sentences (stochastic rounding)
    are chosen at random; each is written a second time right after itself,
    after one space. The essay grows longer with nothing new in it: a scorer
    that rewards length rewards this. A one-sentence essay gets that sentence
    repeated.

    Edit kinds: ``"repeat"`` (an insertion after each chosen sentence).

    Parameters
    ----------
    rate : float, default=0.5
        Share of the sentences repeated, in [0, 1]; at least one is.
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import SentenceRepetition
    >>> repeat = SentenceRepetition(rate=0.3, random_state=0)
    >>> repeat.transform(["I waited. The bus was late. We sang songs."])
    ['I waited. I waited. The bus was late. We sang songs.']
    """

    name = "sentence_repetition"
    expected = "drop"
    _param_rules = {**BasePerturbation._param_rules, "rate": _RATE}

    def __init__(self, rate: float = 0.5, *, random_state: RandomStateLike = None) -> None:
        self.rate = rate
        self.random_state = random_state

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        spans = essay.sentences
        n = len(spans)
        k = min(n, max(1, stochastic_count(self.rate, n, rng)))
        edits: list[Edit] = []
        for j in sorted(rng.choice(n, size=k, replace=False).tolist()):
            a, b = spans[j]
            edits.append(Edit(b, b, "", " " + text[a:b], "repeat"))
        return edits, "", 0


# -------------------------------------------------------------- off-topic
#: The off-topic paragraphs appended by :class:`OffTopicParagraph`: written
#: for this package (no third-party text), well-formed, and about nothing an
#: essay prompt of ASAP asks for.
OFF_TOPIC_PARAGRAPHS = (
    "Volcanoes form where molten rock from deep inside the planet finds a path to "
    "the surface. Some build gentle slopes from thin lava that flows for many "
    "kilometres, while others grow steep and explode, because their thick magma "
    "traps gas until the pressure breaks the rock above it. Geologists watch small "
    "earthquakes, swelling ground and changes in the gases to warn nearby towns "
    "before an eruption.",
    "To bake a simple loaf of bread, mix flour, water, salt and a little yeast until "
    "the dough is smooth and springy. Leave it covered in a warm place for about an "
    "hour, until it has doubled in size. Shape it gently, let it rise once more, and "
    "bake it in a hot oven until the crust is brown and the loaf sounds hollow when "
    "it is tapped underneath.",
    "In chess, each player starts with sixteen pieces: a king, a queen, two rooks, "
    "two bishops, two knights and eight pawns. The knight is the only piece that can "
    "jump over the others, and it moves in the shape of the letter L. A game is won "
    "by checkmate, when the king is attacked and has no safe square left, and it is "
    "drawn when neither side can force a win.",
    "Honeybees live in colonies of many thousands of workers, a few hundred drones "
    "and a single queen. Workers collect nectar and pollen from flowers and tell "
    "each other where to find them with a dance whose angle and length point the "
    "way. The nectar is stored in wax cells and slowly thickened into honey, which "
    "feeds the colony through the winter.",
)


class OffTopicParagraph(BasePerturbation):
    """Append a paragraph that has nothing to do with the prompt (expected: drop).

    One of the fixed paragraphs of :data:`OFF_TOPIC_PARAGRAPHS` (on
    volcanoes, baking bread, chess and honeybees, about 60-70 words each,
    written for this package) is appended after a blank line, after the
    essay's last non-whitespace character (trailing whitespace stays at the
    end). The paragraph is drawn at random per essay, or fixed with
    ``variant``. The essay grows longer and better-formed without saying more
    about the task; a fair score does not reward it.

    Edit kind: ``"append"``.

    Parameters
    ----------
    variant : int or None, default=None
        Index of the paragraph in :data:`OFF_TOPIC_PARAGRAPHS` (0 to 3), or
        None to draw one per essay.
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import OffTopicParagraph
    >>> out = OffTopicParagraph(variant=2).transform(["I waited for the bus."])
    >>> out[0][:60]
    'I waited for the bus.\\n\\nIn chess, each player starts with six'
    """

    name = "off_topic"
    expected = "drop"
    _param_rules = {
        **BasePerturbation._param_rules,
        "variant": [
            Interval(numbers.Integral, 0, len(OFF_TOPIC_PARAGRAPHS) - 1),
            None,
        ],
    }

    def __init__(
        self, variant: int | None = None, *, random_state: RandomStateLike = None
    ) -> None:
        self.variant = variant
        self.random_state = random_state

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        k = (
            int(rng.integers(len(OFF_TOPIC_PARAGRAPHS)))
            if self.variant is None
            else int(self.variant)
        )
        end = len(text.rstrip())
        return [Edit(end, end, "", "\n\n" + OFF_TOPIC_PARAGRAPHS[k], "append")], "", 0


# --------------------------------------------------------- prompt stuffing
def _prompt_words(prompt: str) -> list[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from ._text import analyse

    out: list[str] = []
    for word in analyse(prompt).words:
        low = word.lower()
        if LETTERS.fullmatch(low) and len(low) >= 3 and low not in ENGLISH_STOP_WORDS:
            if low not in out:
                out.append(low)
    return out


class PromptStuffing(BasePerturbation):
    """Insert the prompt's content words at random places (expected: drop).

    The prompt's content words are its words of three letters or more that are
    not English stop words (scikit-learn's list), lower-cased, each counted
    once. About ``rate`` times the essay's number of words (stochastic
    rounding, at least one) are drawn from them with replacement and inserted,
    each followed by a space, before randomly chosen words of the essay (never
    inside a word or a placeholder). The essay says nothing more; a scorer
    that counts prompt overlap is fooled by it.

    Edit kind: ``"insert"`` (one per insertion point; several words may share
    one). An essay with no word is returned unchanged with the note ``"no
    word to insert before"``.

    Parameters
    ----------
    prompt : str
        The task statement the essays answer. Required: there is no default.
    rate : float, default=0.1
        Words inserted per word of the essay, in [0, 1].
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text.

    Raises
    ------
    ValueError
        At ``fit`` or ``transform`` when ``prompt`` is None or has no
        content word.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import PromptStuffing
    >>> stuff = PromptStuffing(prompt="Write about patience.", rate=0.3,
    ...                        random_state=0)
    >>> stuff.transform(["I waited for the bus in the rain."])
    ['I waited for the patience write bus in the rain.']
    """

    name = "prompt_stuffing"
    expected = "drop"
    _param_rules = {
        **BasePerturbation._param_rules,
        "prompt": [str, None],
        "rate": _RATE,
    }

    def __init__(
        self,
        prompt: str | None = None,
        *,
        rate: float = 0.1,
        random_state: RandomStateLike = None,
    ) -> None:
        self.prompt = prompt
        self.rate = rate
        self.random_state = random_state

    def _check_params(self) -> None:
        if self.prompt is None:
            raise ValueError(
                "PromptStuffing needs the prompt the essays answer; pass it as "
                "PromptStuffing(prompt='Write about patience. ...') (perturbation_audit: "
                "prompt=...)"
            )
        if not _prompt_words(self.prompt):
            raise ValueError(
                f"the prompt has no content word (a word of 3+ letters that is not a "
                f"stop word) to stuff into the essays; got prompt={self.prompt!r:.80}"
            )

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        # _check_params has made sure there is a prompt
        words = _prompt_words(cast(str, self.prompt))
        starts = [
            span[0]
            for tok, span in zip(essay.tokens, essay.spans)
            if span is not None
            and any(ch.isalnum() for ch in tok)
            and not (span[0] > 0 and text[span[0] - 1].isalnum())
        ]
        if not starts:
            return [], "no word to insert before", 0
        k = max(1, stochastic_count(self.rate, len(essay.words), rng))
        at = rng.choice(len(starts), size=k, replace=True)
        picks = rng.choice(len(words), size=k, replace=True)
        inserted: dict[int, list[str]] = {}
        for j, w in zip(at.tolist(), picks.tolist()):
            inserted.setdefault(starts[j], []).append(words[w])
        edits = [
            Edit(p, p, "", " ".join(ws) + " ", "insert")
            for p, ws in sorted(inserted.items())
        ]
        return edits, "", 0


# ---------------------------------------------------------------- negation
_BE = frozenset({"am", "is", "are", "was", "were"})
_MODALS = frozenset(
    {"can", "could", "will", "would", "shall", "should", "may", "might", "must"}
)
_HAVE = frozenset({"has", "have", "had"})
_DO = frozenset({"do", "does", "did"})
_CONTRACTED = frozenset({"'m", "'re", "'s", "'ll", "'d", "'ve"})
_AUX = _BE | _MODALS | _HAVE | _DO
# what a "not" or "n't" after which is undone ("needn't" -> "need")
_UNNEGATABLE = _AUX | {"need"}
# tokens of "can't", "won't", "shan't" before "n't"
_POSITIVE = {"ca": "can", "wo": "will", "sha": "shall"}
_NEGATIVE_WORDS = frozenset(
    {"never", "no", "nobody", "nothing", "nowhere", "neither", "nor", "none", "noone"}
)
_SUBJECTS = frozenset({"i", "you", "we", "they", "he", "she", "it"})
_THIRD_PERSON = frozenset({"he", "she", "it"})
# before "'s", which then reads as "is" (elsewhere it is a possessive)
_S_IS_SUBJECTS = frozenset(
    {"it", "he", "she", "that", "there", "what", "who", "where", "here", "how"}
)
# before "can", "will", "may", "must", "might": then they are nouns ("a can")
_DETERMINERS = frozenset(
    {"a", "an", "the", "this", "that", "his", "her", "my", "your", "our", "their", "its",
     "free", "own"}
)  # fmt: skip
_NOUN_LIKE = frozenset({"can", "will", "may", "must", "might"})
_ADVERBS = frozenset(
    {"always", "also", "just", "really", "finally", "still", "often", "usually",
     "sometimes", "actually", "then", "soon", "eventually", "even", "already", "ever",
     "only", "once", "probably", "all", "both"}
)  # fmt: skip
_QUESTION_NEGATIVE = {
    "is": "isn't", "are": "aren't", "was": "wasn't", "were": "weren't",
    "can": "can't", "could": "couldn't", "will": "won't", "would": "wouldn't",
    "should": "shouldn't", "must": "mustn't", "do": "don't", "does": "doesn't",
    "did": "didn't", "has": "hasn't", "have": "haven't", "had": "hadn't",
}  # fmt: skip
_DO_SUPPORT_HAVE = {"has": "does not have", "have": "do not have", "had": "did not have"}


def _is_adverb(word: str) -> bool:
    return word in _ADVERBS or (len(word) > 4 and word.endswith("ly"))


def _verb_form(word: str) -> tuple[str, str] | None:
    """``(base, form)`` of a lower-case verb form, form in past/3sg/base, or None."""
    from ..paraphrase._wordnet import _wordnet

    wn = _wordnet()[0]
    irregular = wn._exception_map["v"].get(word)
    if irregular and not word.endswith(("ing", "s")):
        base = irregular[0]
        return (base, "past") if wn.synsets(base, "v") else None
    bases = [b for b in wn._morphy(word, "v") if b != word]
    if word.endswith("ed") and bases:
        return bases[0], "past"
    if word.endswith("s") and not word.endswith("ss") and bases:
        return bases[0], "3sg"
    if not bases and word in wn._morphy(word, "v") and wn.synsets(word, "v"):
        return word, "base"
    return None


class Negation(BasePerturbation):
    """Negate the essay's sentences with a few rules (expected: change).

    In each sentence the first verb the rules know how to handle, scanning
    from the left, is negated; a sentence that is already negated at that
    verb is made positive. That verb may be in a subordinate clause (``When I
    was young, ...`` becomes ``When I was not young, ...``). Of the sentences
    with a handled verb, about ``rate`` are changed (all with the default).

    **Handled** (edit kind in brackets):

    * ``am/is/are/was/were`` and ``'m/'re``, and ``'s`` after
      it/he/she/that/there/what/who/where/here/how -> ``... not``
      (``negate:copula``);
    * modals: ``can`` -> ``cannot``; ``could/will/would/shall/should/may/
      might/must`` and ``'d`` -> ``... not``; ``'ll`` -> `` will not``
      (``negate:modal``); ``can/will/may/must/might`` after a determiner or
      possessive (``a can``, ``his will``) or capitalised mid-sentence
      (``May``) are nouns or names and are skipped;
    * ``has/have/had`` and ``'ve``: as auxiliaries (the next word, after at
      most one adverb, is ``been``, ends in ``-ed`` or is a listed irregular
      participle such as ``gone``) -> ``... not`` (``negate:aux``); as main
      verbs -> ``does/do/did not have`` (``negate:do-support``); not after
      ``to``;
    * ``do/does/did`` as main verbs -> ``do/does/did not do`` (``I did my
      homework`` -> ``I did not do my homework``; an emphatic ``I did wait``
      is mis-read as a main verb), or ``... not`` at the end of a clause
      (``I did.``); not after ``to``;
    * do-support for a simple present or past verb right after a subject
      pronoun (I/you/we/they/he/she/it, with at most one adverb between):
      ``I like`` -> ``I do not like``, ``she waits`` -> ``she does not
      wait``, ``we waited``/``they went`` -> ``did not wait``/``did not go``
      (``negate:do-support``). The verb must be lower-case letters that
      WordNet reads as a verb form: ``-ed``, an irregular past from WordNet's
      exception list, a third-person ``-s`` after he/she/it, or a base form
      after I/you/we/they. A verb whose past equals its base (``they put``)
      is read as present;
    * questions (the sentence has ``?``): the auxiliary takes its contracted
      negative (``Can you`` -> ``Can't you``, ``What did you`` -> ``What
      didn't you``) (``negate:question``); ``am/may/might/shall`` questions
      are skipped;
    * un-negation: ``n't`` after an auxiliary is removed (``didn't`` ->
      ``did``, ``can't`` -> ``can``, ``won't`` -> ``will``), and so is a
      ``not`` after an auxiliary (``did not wait`` -> ``did wait``,
      ``cannot`` -> ``can``) (``unnegate``).

    **Not handled**: sentences holding another negative word (never, no,
    nobody, nothing, nowhere, neither, nor, none), which would give double
    negatives; verbs after a noun or a name subject (``The bus came``,
    ``@PERSON1 waited``) unless an auxiliary or copula comes first;
    imperatives; a sentence-initial auxiliary in a sentence without ``?``;
    ``ain't``. These sentences are left as they are and counted in the
    record's ``n_skipped``. The result is not always grammatical and never
    checked for sense; it is a controlled perturbation, not a rewrite.

    Needs WordNet (:func:`sklearn_fairaes.resources.ensure_wordnet`) for the
    do-support rule.

    Parameters
    ----------
    rate : float, default=1.0
        Share of the sentences with a handled verb that are negated, in
        [0, 1].
    random_state : int, RandomState instance or None, default=None
        Base seed (used when ``rate < 1``); each essay's draw also depends on
        its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import Negation
    >>> neg = Negation(random_state=0)
    >>> texts, records = neg.transform_with_records(
    ...     ["I was patient. She can wait. We waited an hour. The bus came. "
    ...      "I didn't cry."])
    >>> texts[0]
    'I was not patient. She cannot wait. We did not wait an hour. The bus came. I did cry.'
    >>> records[0].note, records[0].n_skipped
    ('4 of 5 sentences negated; 1 without a handled verb', 1)
    """

    name = "negation"
    expected = "change"
    _param_rules = {**BasePerturbation._param_rules, "rate": _RATE}

    def __init__(self, rate: float = 1.0, *, random_state: RandomStateLike = None) -> None:
        self.rate = rate
        self.random_state = random_state

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        sites: list[Edit] = []
        n = len(essay.sentence_tokens)
        apostrophe = "\u2019" if "\u2019" in text and "'" not in text else "'"
        for t0, t1 in essay.sentence_tokens:
            site = _negation_site(text, essay, t0, t1, apostrophe)
            if site is not None:
                sites.append(site)
        skipped = n - len(sites)
        if not sites:
            return [], "no sentence with a handled verb", skipped
        k = stochastic_count(self.rate, len(sites), rng)
        chosen = sorted(rng.choice(len(sites), size=k, replace=False).tolist())
        note = f"{k} of {n} sentences negated; {skipped} without a handled verb"
        return [sites[j] for j in chosen], note, skipped


def _negation_site(
    text: str, essay: EssayText, t0: int, t1: int, apostrophe: str
) -> Edit | None:
    """The edit negating one sentence (tokens ``t0:t1``), or None."""
    toks = essay.tokens
    # only the placed tokens (those in idx) are looked up
    spans = cast("tuple[tuple[int, int], ...]", essay.spans)
    idx = [k for k in range(t0, t1) if essay.spans[k] is not None]
    low = {k: toks[k].lower() for k in idx}
    if any(low[k] in _NEGATIVE_WORDS for k in idx):
        return None
    question = any("?" in toks[k] for k in idx)
    words = [k for k in idx if any(ch.isalnum() for ch in toks[k])]
    for pos, k in enumerate(words):
        w = low[k]
        a, b = spans[k]
        orig = text[a:b]
        prev = low[words[pos - 1]] if pos else None
        nxt = low[words[pos + 1]] if pos + 1 < len(words) else None

        # un-negation: "didn't" -> "did", "cannot"/"did not" -> "can"/"did"
        if w == "n't" and prev is not None:
            pa, pb = spans[words[pos - 1]]
            positive = _POSITIVE.get(prev, prev if prev in _UNNEGATABLE else None)
            if positive is None or pb != a:
                continue
            return Edit(pa, b, text[pa:b], restore_case(text[pa:pb], positive), "unnegate")
        if w == "not" and (prev in _UNNEGATABLE or prev in _CONTRACTED):
            pa, pb = spans[words[pos - 1]]
            if pb == a:  # "cannot"
                return Edit(pa, b, text[pa:b], text[pa:pb], "unnegate")
            return Edit(pb, b, text[pb:b], "", "unnegate")
        if nxt in ("not", "n't"):
            continue  # negated already: undone at the next word

        if w in _AUX or w in _CONTRACTED:
            if question:
                negative = _QUESTION_NEGATIVE.get(w)
                if negative is None:
                    continue
                after = restore_case(orig, negative.replace("'", apostrophe))
                return Edit(a, b, orig, after, "negate:question")
            if pos == 0 or prev == "to":
                continue
            if w in _NOUN_LIKE and (prev in _DETERMINERS or orig[0].isupper()):
                continue
            if w == "'s" and prev not in _S_IS_SUBJECTS:
                continue
            if w in _BE or w in ("'m", "'re", "'s"):
                return Edit(a, b, orig, orig + " not", "negate:copula")
            if w == "can":
                return Edit(a, b, orig, restore_case(orig, "cannot"), "negate:modal")
            if w == "'ll":
                return Edit(a, b, orig, " will not", "negate:modal")
            if w in _MODALS or w == "'d":
                return Edit(a, b, orig, orig + " not", "negate:modal")
            if w in _HAVE or w == "'ve":
                j = pos + 1
                if j < len(words) and _is_adverb(low[words[j]]):
                    j += 1
                follow = low[words[j]] if j < len(words) else None
                if w == "'ve" or (
                    follow is not None
                    and (follow.endswith("ed") or follow in _IRREGULAR_PARTICIPLES)
                ):
                    return Edit(a, b, orig, orig + " not", "negate:aux")
                return Edit(
                    a, b, orig, restore_case(orig, _DO_SUPPORT_HAVE[w]), "negate:do-support"
                )
            if w in _DO:
                if nxt is None:
                    return Edit(a, b, orig, orig + " not", "negate:aux")
                return Edit(a, b, orig, orig + " not do", "negate:do-support")

        if w in _SUBJECTS and orig in (w, w.capitalize(), "I"):
            j = pos + 1
            if j < len(words) and _is_adverb(low[words[j]]):
                j += 1
            if j >= len(words):
                continue
            vk = words[j]
            v = low[vk]
            va, vb = spans[vk]
            verb = text[va:vb]
            if v in _AUX or v in _CONTRACTED or v in ("not", "n't"):
                continue  # its own rule applies when the scan reaches it
            if not (LETTERS.fullmatch(verb) and verb.islower()) or inside_word(
                text, va, vb
            ):
                continue
            form = _verb_form(v)
            if form is None:
                continue
            base, kind = form
            if kind == "base" and w in ("i", "you", "we", "they"):
                after = "do not " + verb
            elif kind == "3sg" and w in _THIRD_PERSON:
                after = "does not " + base
            elif kind == "past":
                after = "did not " + base
            else:
                continue
            return Edit(va, vb, verb, after, "negate:do-support")
    return None


# ------------------------------------------------------------- word salad
@functools.lru_cache(maxsize=4)
def general_english_words(size: int) -> tuple[str, ...]:
    """The ``size`` most frequent letter-only words of pyspellchecker's English list.

    Ordered by decreasing frequency (ties alphabetically), lower case.

    Examples
    --------
    >>> from sklearn_fairaes.perturb._quality import general_english_words
    >>> general_english_words(5)
    ('the', 'you', 'i', 'to', 'a')
    """
    spellchecker = require(
        "spellchecker",
        extra="spelling",
        purpose="the word_salad perturbation (pyspellchecker's English word list)",
    )
    freq = spellchecker.SpellChecker(language="en").word_frequency.dictionary
    words = [w for w in freq if LETTERS.fullmatch(w) and w.islower()]
    words.sort(key=lambda w: (-freq[w], w))
    return tuple(words[:size])


class WordSalad(BasePerturbation):
    """Replace the essay by random English words, as many as it had (expected: drop).

    The edited essay is as many words as the essay had (its orthographic words,
    placeholders included) drawn uniformly with replacement from the
    ``vocabulary_size`` most frequent letter-only words of pyspellchecker's
    English word list (the ``spelling`` extra), joined by single spaces: the
    length of the essay with none of its content or syntax. It tests whether a
    scorer looks at more than length (Ding et al., 2020, fooled scorers with
    gibberish).

    Edit kind: ``"replace"`` (one edit, the whole essay). An essay with no
    word is returned unchanged with the note ``"no word"``.

    Parameters
    ----------
    vocabulary_size : int, default=20000
        How many of the most frequent words of the list are drawn from.
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import WordSalad
    >>> salad = WordSalad(vocabulary_size=1000, random_state=0)
    >>> out = salad.transform(["I waited for @PERSON1 at the station."])
    >>> len(out[0].split())
    7
    """

    name = "word_salad"
    expected = "drop"
    _param_rules = {
        **BasePerturbation._param_rules,
        "vocabulary_size": [Interval(numbers.Integral, 1, None)],
    }

    def __init__(
        self, vocabulary_size: int = 20000, *, random_state: RandomStateLike = None
    ) -> None:
        self.vocabulary_size = vocabulary_size
        self.random_state = random_state

    def _check_params(self) -> None:
        general_english_words(int(self.vocabulary_size))

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        n = len(essay.words)
        if not n:
            return [], "no word", 0
        vocabulary = general_english_words(int(self.vocabulary_size))
        picks = rng.integers(len(vocabulary), size=n)
        salad = " ".join(vocabulary[j] for j in picks.tolist())
        return [Edit(0, len(text), text, salad, "replace")], "", 0


# ----------------------------------------------------------- word scramble
class WordScramble(BasePerturbation):
    """Put the essay's own words in a random order (expected: drop).

    The essay's orthographic words (``didn't`` is one word; placeholders are
    words; punctuation is dropped) are permuted at random and joined by single
    spaces: the same bag of words without any syntax. The order always differs
    from the original when the essay has two different words (a draw that
    gives it back is rotated by one).

    Edit kind: ``"replace"`` (one edit, the whole essay). An essay with fewer
    than two different words is returned unchanged with the note ``"fewer than
    two different words"``.

    Parameters
    ----------
    random_state : int, RandomState instance or None, default=None
        Base seed; each essay's draw also depends on its text.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import WordScramble
    >>> WordScramble(random_state=0).transform(["I didn't wait for @PERSON1."])
    ["I @PERSON1 for didn't wait"]
    """

    name = "word_scramble"
    expected = "drop"

    def __init__(self, *, random_state: RandomStateLike = None) -> None:
        self.random_state = random_state

    def _perturb_one(
        self, text: str, essay: EssayText, rng: np.random.Generator
    ) -> PerturbOutcome:
        words = list(essay.words)
        if len(set(words)) < 2:
            return [], "fewer than two different words", 0
        perm = rng.permutation(len(words))
        if [words[p] for p in perm] == words:
            perm = np.roll(perm, 1)
        scrambled = " ".join(words[p] for p in perm)
        return [Edit(0, len(text), text, scrambled, "replace")], "", 0
