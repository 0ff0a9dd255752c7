"""Each study's fitted representations and features kept across runs (issue 35).

With every analysis output cached (``_analysis_cache``), most of a warm re-run
of the eight ASAP prompts was building the studies again: fitting TF-IDF on
each prompt (loading WordNet's lemmatizer for it) and fitting the
interpretable features (learning the good POS n-grams from the human
scores). Both are deterministic functions of their inputs, so their outputs
are kept in the audit's cache folder, as entries of the embedding cache
through :class:`~sklearn_fairaes.features._persist.ResultStore` (the one
cache mechanism: atomic first-writer-wins publishing, the key, text digest
and CRC-32 checked on every read, a damaged entry refused with a
:class:`~sklearn_fairaes.exceptions.CacheCorruptionWarning` and recomputed;
``fairaes cache info|clear`` count and clear them).

**What is kept.**

* A built-in vocabulary representation's vectors of a prompt's essays
  (:func:`fit_representation`): ``BowVectorizer`` and
  ``TfidfEssayVectorizer`` whose parameters are plain values. Later analyses
  need the fitted transformer itself (the paraphrase section transforms the
  paraphrases, the counterfactual one the edited essays), so the study holds
  a :class:`KeptFit`: its ``transform`` reads back the vectors of texts it
  transformed on an earlier run, and fits the representation on the
  prompt's essays (the same fit, deterministic) only for texts it has not
  seen. A fully warm run never fits, so never loads WordNet. Encoders
  (Sentence-BERT, LASER) have their own embedding cache; a user's
  transformer has code no digest covers: neither is kept here.
* The interpretable features' matrix and names of a study
  (:func:`fit_features`), when every chosen feature is one whose per-essay
  values are stored already (no prompt similarity, no grammar server, the
  built-in spell checker and tagger) and no ``reference`` is given.

**Keys.** An entry's identity holds the kind, the SHA-256 of every source
file of this package, the versions of the numeric and text libraries, the
package's and scikit-learn's settings, and the backends' files: WordNet's
(SHA-256 of each file) for a lemmatizing vectorizer, the spell checker's
word list and the tagger's weights for the features. Its text is the SHA-256
of the transformer's class and parameters (their ``repr``), the essays in
order, and for the features the human scores (``good_pos_ngrams`` learns
from them) and the prompt; a transform's entry adds the texts transformed.
A value with no deterministic ``repr`` (a callable, an object) leaves the
transformer unkept: a wrong hit would be a wrong report, a miss is only
slow.

**Format.** One ``.npz`` archive (read with ``allow_pickle=False``) packed
into the cache's float32 words: a sparse matrix as its CSR arrays (data,
indices, indptr as stored, and the shape), a dense one as itself; entries
over the packing's 16 MB are not kept (counted as ``not_stored``).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..features._persist import (
    _LIMIT,
    ResultStore,
    pack_bytes,
    persistent_cache,
    unpack_bytes,
)

#: Version of the archive layout below, part of every identity
_FORMAT = 1
#: The result kinds of this module (``meta["result_cache"]`` counts them)
KINDS = ("study:vectors", "study:transform", "study:features")
#: What the audit's meta counts: outputs read back, computed, too big to keep,
#: and transformers not kept (why, by representation)
_COUNTS: dict[str, Any] = {"read": 0, "computed": 0, "not_stored": 0}


def _count(field: str) -> None:
    _COUNTS[field] += 1


def counts() -> dict[str, int]:
    """The process-wide counts of this module: ``read``, ``computed``, ``not_stored``.

    Examples
    --------
    >>> from sklearn_fairaes.report._study_cache import counts
    >>> sorted(counts())
    ['computed', 'not_stored', 'read']
    """
    return dict(_COUNTS)


def add_counts(done: dict[str, int]) -> None:
    """Add the counts of a study built in another process (a task on a worker).

    Examples
    --------
    >>> from sklearn_fairaes.report._study_cache import add_counts, counts
    >>> before = counts()["read"]
    >>> add_counts({"read": 2})
    >>> counts()["read"] - before
    2
    """
    for name, n in done.items():
        _COUNTS[name] = _COUNTS.get(name, 0) + n


# -- archives ------------------------------------------------------------------


def _encode_matrix(X: Any, extra: dict[str, Any] | None = None) -> bytes:
    import scipy.sparse as sp

    arrays: dict[str, np.ndarray] = {}
    if sp.issparse(X):
        m: Any = X
        meta: dict[str, Any] = {"layout": "csr" if m.format == "csr" else "other"}
        if meta["layout"] != "csr":
            raise TypeError("only CSR matrices are kept")
        arrays.update(data=m.data, indices=m.indices, indptr=m.indptr)
        meta["shape"] = list(m.shape)
    else:
        arr = np.asarray(X)
        if arr.dtype.kind not in "biuf":
            raise TypeError("only numeric matrices are kept")
        meta = {"layout": "dense"}
        arrays["X"] = arr
    meta.update({"format": _FORMAT, **(extra or {})})
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub: **kwds are arrays
    return buf.getvalue()


def _decode_matrix(blob: bytes) -> tuple[Any, dict[str, Any]]:
    import scipy.sparse as sp

    with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
    if meta.get("format") != _FORMAT:
        raise ValueError("another archive format")
    if meta["layout"] == "csr":
        shape = (int(meta["shape"][0]), int(meta["shape"][1]))
        X: Any = sp.csr_matrix(
            (arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape
        )
        # scipy may copy or convert; the vectors must be those stored
        if not (
            X.data.dtype == arrays["data"].dtype
            and X.indices.dtype == arrays["indices"].dtype
            and np.array_equal(X.indptr, arrays["indptr"])
        ):
            raise ValueError("the CSR arrays do not read back as stored")
        return X, meta
    return arrays["X"], meta


def _same(a: Any, b: Any) -> bool:
    """Whether two matrices are the same, layout, dtype and bytes."""
    import scipy.sparse as sp

    if sp.issparse(a) != sp.issparse(b) or a.shape != b.shape:
        return False
    if sp.issparse(a):
        m: Any = a
        o: Any = b
        return all(
            x.dtype == y.dtype and np.array_equal(x, y)
            for x, y in ((m.data, o.data), (m.indices, o.indices), (m.indptr, o.indptr))
        )
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def _from_vector(vec: np.ndarray) -> tuple[Any, dict[str, Any]]:
    try:
        return _decode_matrix(unpack_bytes(vec))
    except Exception as exc:  # a bad zip, JSON or layout: all mean "recompute"
        raise ValueError(f"not a stored matrix ({exc})") from None


class _Matrices(ResultStore):
    """Matrices as ``.npz`` bytes in the cache (see the module docstring)."""

    encode = staticmethod(pack_bytes)
    decode = staticmethod(_from_vector)


# -- keys ----------------------------------------------------------------------


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    from ._analysis_cache import _versions as numeric

    out = numeric()
    for pkg in ("nltk", "spacy", "thinc", "pyspellchecker"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "absent"
    return out


_IDENTITY: dict[str, Any] = {}


def _identity(kind: str) -> dict[str, Any]:
    """What every entry of ``kind`` depends on beyond its text (once per process and kind)."""
    if "base" not in _IDENTITY:
        from ._analysis_cache import _package_digest

        _IDENTITY["base"] = {
            "package_source": _package_digest(),
            "versions": _versions(),
            "archive_format": _FORMAT,
        }
    import sklearn

    from .._config import get_config

    # settings can change within a process: read on each call
    return {
        "kind": kind,
        **_IDENTITY["base"],
        "config": {k: str(v) for k, v in sorted(get_config().items())},
        "sklearn_config": {k: str(v) for k, v in sorted(sklearn.get_config().items())},
    }


def _plain(value: Any) -> bool:
    """Whether ``repr(value)`` says all there is to it, the same in every process."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (tuple, list, frozenset)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    if isinstance(value, type):  # a dtype such as np.float64
        return value.__module__ in ("numpy", "builtins")
    return False


def _texts_digest(h: Any, texts: Sequence[str]) -> None:
    h.update(f"texts{len(texts)}\0".encode())
    for text in texts:
        b = text.encode("utf-8", "surrogatepass")
        h.update(f"{len(b)}\0".encode())
        h.update(b)


def _params_key(est: Any) -> str | None:
    """The transformer's class and parameters as a stable text, or None (not plain)."""
    params = est.get_params(deep=False)
    if not all(_plain(v) for v in params.values()):
        return None
    cls = type(est)
    return repr((f"{cls.__module__}.{cls.__qualname__}", sorted(params.items())))


# -- representations -----------------------------------------------------------


def _vectorizer_store(rep: Any, cache: Any, kind: str) -> ResultStore | None:
    """The store of a kept representation's matrices, or None when not kept."""
    from ..text import BowVectorizer, TfidfEssayVectorizer

    if type(rep) not in (BowVectorizer, TfidfEssayVectorizer):
        return None
    disk = persistent_cache(cache)
    if disk is None:
        return None
    identity = _identity(kind)
    if getattr(rep, "lemmatize", True):
        from ..paraphrase._wordnet import _wordnet_identity

        wordnet = _wordnet_identity()
        if wordnet is None:  # which WordNet it would read is not known
            return None
        identity["wordnet"] = wordnet
    return _Matrices(
        disk,
        kind,
        identity,
        {"encoder": type(rep).__name__, "model": "a study's vectors"},
        lambda text, value: True,
    )


class KeptFit:
    """A representation fitted on a study's essays, whose outputs are kept.

    Stands for the fitted transformer in the study (``PairSpace.transformer``):
    ``transform`` reads back what it gave for the same texts on an earlier
    run, and fits a clone of ``unfitted`` on ``essays`` (once) for texts it
    has not seen. Its parameters (and ``build_*`` methods, which read only
    them) are the unfitted transformer's; any other attribute is the fitted
    one's. ``clone`` gives the unfitted transformer.

    Parameters
    ----------
    unfitted : transformer
        The representation, unfitted.
    essays : list of str
        The essays it is fitted on.
    key : str
        The digest of the representation and the essays (the fit's key).
    cache : EmbeddingCache
        The audit's on-disk cache.
    fitted : transformer, default=None
        The fitted transformer, when this run fitted it.

    Examples
    --------
    >>> import tempfile
    >>> from sklearn.base import clone
    >>> from sklearn_fairaes.text import BowVectorizer, EmbeddingCache
    >>> from sklearn_fairaes.report._study_cache import fit_representation
    >>> cache = EmbeddingCache(tempfile.mkdtemp())
    >>> essays = ["the cat sat", "the dog sat", "a cat ran"]
    >>> rep, X = fit_representation(BowVectorizer(min_df=1, lemmatize=False), essays, cache)
    >>> rep.transform(["the cat"]).toarray().tolist() == BowVectorizer(
    ...     min_df=1, lemmatize=False).fit(essays).transform(["the cat"]).toarray().tolist()
    True
    >>> type(clone(rep)).__name__
    'BowVectorizer'
    """

    def __init__(
        self,
        unfitted: Any,
        essays: Sequence[str],
        key: str,
        cache: Any,
        fitted: Any = None,
    ) -> None:
        self.unfitted = unfitted
        self.essays = list(essays)
        self.key = key
        self.cache = cache
        self._fitted = fitted

    # sklearn's protocol: a fitted estimator that clones as the unfitted one
    def __sklearn_is_fitted__(self) -> bool:
        return True

    def __sklearn_clone__(self) -> Any:
        from sklearn.base import clone

        return clone(self.unfitted)

    def __sklearn_tags__(self) -> Any:
        # the representation's own tags (check_is_fitted and the scorers ask)
        from sklearn.utils import get_tags

        return get_tags(self.unfitted)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The representation's parameters."""
        return dict(self.unfitted.get_params(deep=deep))

    def fit(self, X: Any, y: Any = None) -> KeptFit:
        """Refuse: a kept fit is the study's, on its essays."""
        raise TypeError(
            "a representation kept from a study's fit cannot be refitted; clone it "
            "(sklearn.base.clone) for an unfitted copy"
        )

    def fitted(self) -> Any:
        """The fitted transformer (fitted on the essays now if this run did not)."""
        if self._fitted is None:
            import warnings

            from sklearn.base import clone

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", category=UserWarning)
                self._fitted = clone(self.unfitted).fit(self.essays)
        return self._fitted

    def __getattr__(self, name: str) -> Any:
        # only reached for names this class does not define
        if name.startswith("__") or name in ("unfitted", "_fitted", "essays"):
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}"
            )
        if name.startswith("build_") or name in self.unfitted.get_params(deep=False):
            return getattr(self.unfitted, name)
        return getattr(self.fitted(), name)

    def transform(self, X: Any) -> Any:
        """The vectors of ``X``: read back when kept, else transformed (and kept)."""
        texts = list(X)
        if not all(isinstance(t, str) for t in texts):
            return self.fitted().transform(X)  # which says what is wrong
        h = hashlib.sha256(self.key.encode("ascii"))
        _texts_digest(h, texts)
        key = h.hexdigest()
        store = _vectorizer_store(self.unfitted, self.cache, "study:transform")
        if store is not None:
            got = store.get(key)
            if got is not None and got[0].shape[0] == len(texts):
                _count("read")
                return got[0]
        out = self.fitted().transform(texts)
        if store is not None:
            _put(store, key, out)
        return out

    def __repr__(self) -> str:
        # the fitted transformer's repr (its parameters): reports show it
        return repr(self.unfitted)


def _put(store: ResultStore, key: str, X: Any, extra: dict[str, Any] | None = None) -> None:
    """Keep ``X`` under ``key`` when it reads back the same and fits the packing."""
    _count("computed")
    try:
        blob = _encode_matrix(X, extra)
        back, meta = _decode_matrix(blob)
        kept = (
            len(blob) < _LIMIT
            and _same(X, back)
            and meta.get("names") == (None if extra is None else extra.get("names"))
        )
    except (TypeError, ValueError, OverflowError):
        kept = False
    if kept:
        store.put(key, blob)
    else:
        _count("not_stored")


def fit_representation(rep: Any, essays: Sequence[str], cache: Any) -> tuple[Any, Any]:
    """``rep`` fitted on ``essays`` and their vectors: read back when kept.

    Returns ``(transformer, X)``: a :class:`KeptFit` when ``rep`` is kept
    (its vectors read back, or computed and kept), else a fitted clone of
    ``rep`` (``fit_transform`` as the audit always did). Errors of the fit
    (an empty vocabulary) propagate as they are.
    """
    from sklearn.base import clone

    params = _params_key(rep)
    store = None if params is None else _vectorizer_store(rep, cache, "study:vectors")
    if store is None:
        fitted = clone(rep)
        return fitted, fitted.fit_transform(essays)
    h = hashlib.sha256(params.encode("utf-8"))  # type: ignore[union-attr]  # not None here
    _texts_digest(h, essays)
    key = h.hexdigest()
    got = store.get(key)
    if got is not None and got[0].shape[0] == len(essays):
        _count("read")
        return KeptFit(clone(rep), essays, key, cache), got[0]
    fitted = clone(rep)
    X = fitted.fit_transform(essays)
    _put(store, key, X)
    return KeptFit(clone(rep), essays, key, cache, fitted=fitted), X


# -- features ------------------------------------------------------------------


def _features_identity(feat: Any) -> dict[str, Any] | None:
    """What a features fit depends on beyond its inputs, or None when not kept."""
    from ..features._interpretable import _STORABLE
    from ..features._pos import resolve_pos_tagger, tagger_identity
    from ..features._spelling import spell_checker_identity

    if feat.reference is not None:
        return None
    try:
        feat._check_simple_params()
        chosen = feat._selected_features()
    except Exception:  # the fit says what is wrong
        return None
    if not set(chosen) <= _STORABLE:
        return None
    identity = _identity("study:features")
    identity["features"] = list(chosen)
    if "spelling_errors" in chosen:
        identity["spelling"] = spell_checker_identity(feat.spelling)
        if identity["spelling"] is None:
            return None
    if "good_pos_ngrams" in chosen:
        try:
            label = resolve_pos_tagger(feat.pos_tagger)
        except Exception:
            return None
        identity["tagger"] = tagger_identity(label)
        if identity["tagger"] is None:
            return None
    if "prompt_overlap_synonyms" in chosen:
        from ..paraphrase._wordnet import _wordnet_identity

        identity["wordnet"] = _wordnet_identity()
        if identity["wordnet"] is None:
            return None
    return identity


def audit_features(plan: Any, prompt_text: str | None) -> Any:
    """The interpretable features' estimator of a study of ``plan`` (unfitted)."""
    from ..features import InterpretableFeatures

    settings = plan.settings
    feat = InterpretableFeatures(
        prompt=prompt_text,
        features=plan.features,
        grammar=settings.grammar,
        sbert_model=settings.sbert_model,
        n_jobs=settings.n_jobs,
        progress=False,
    )
    if settings.cache is not None and "cache" in feat.get_params():
        # the prompt-similarity feature's Sentence-BERT encoder: the audit's cache
        feat.set_params(cache=settings.cache)
    if "sbert_backend" in feat.get_params():
        # and the audit's backend and device: the same identity as the "sbert"
        # representation, so an essay is encoded once for both
        feat.set_params(sbert_backend=settings.sbert_backend, sbert_device=settings.device)
    return feat


def _features_entry(
    feat: Any, essays: Sequence[str], human: Any
) -> tuple[_Matrices, str] | None:
    """The store and key of a features fit, or None when it is not kept."""
    disk = persistent_cache(feat.cache)
    identity = None if disk is None else _features_identity(feat)
    params = {
        k: v
        for k, v in feat.get_params(deep=False).items()
        if k not in ("cache", "n_jobs", "progress")
    }
    if disk is None or identity is None or not all(_plain(v) for v in params.values()):
        return None
    h = hashlib.sha256(repr(sorted(params.items())).encode("utf-8"))
    _texts_digest(h, essays)
    y = np.ascontiguousarray(np.asarray(human, dtype=np.float64))
    h.update(f"human{y.shape}\0".encode())
    h.update(y.tobytes())
    store = _Matrices(
        disk,
        "study:features",
        identity,
        {"encoder": "InterpretableFeatures", "model": "a study's features"},
        lambda text, value: True,
    )
    return store, h.hexdigest()


def features_stored(feat: Any, essays: Sequence[str], human: Any) -> bool:
    """Whether :func:`fit_features` would find its output stored (not read nor checked)."""
    entry = _features_entry(feat, essays, human)
    return entry is not None and entry[0].stored(entry[1])


def fit_features(feat: Any, essays: Sequence[str], human: Any) -> tuple[Any, list[str]]:
    """``feat.fit_transform(essays, human)`` and its feature names: read back when kept.

    ``feat`` is the audit's :class:`~sklearn_fairaes.features.InterpretableFeatures`
    (:func:`audit_features`); its ``cache`` is the audit's. The key holds its
    parameters but the runtime ones (``cache``, ``n_jobs``, ``progress``),
    the essays in order, the human scores' bytes and the identity of
    :func:`_features_identity`.
    """
    entry = _features_entry(feat, essays, human)
    if entry is None:
        X = np.asarray(feat.fit_transform(essays, human), dtype=float)
        return X, [str(f) for f in feat.get_feature_names_out()]
    store, key = entry
    got = store.get(key)
    if got is not None:
        X, meta = got
        names = meta.get("names")
        if (
            X.ndim == 2
            and X.shape[0] == len(essays)
            and isinstance(names, list)
            and len(names) == X.shape[1]
        ):
            _count("read")
            return X, [str(n) for n in names]
    X = np.asarray(feat.fit_transform(essays, human), dtype=float)
    names = [str(f) for f in feat.get_feature_names_out()]
    _put(store, key, X, {"names": names})
    return X, names
