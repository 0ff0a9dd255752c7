"""Each study's fitted representations and features kept across runs (issue 35).

A second audit on the same inputs with a cache folder reads the TF-IDF
vectors, the paraphrases' vectors and the interpretable features back: the
vectorizer's and the features' fits are counted (a refit fails the test) and
WordNet's lemmatizer is never loaded; its tables and its report page equal
the first audit's and those of an audit without any cache. One input changed
at a time (an essay's text, a human score, a representation option, the order
of the rows) misses what depends on it and gives the tables of an audit
without cache of the changed inputs; a damaged entry is refused and
recomputed. Small data: 60 essays of ASAP prompt 7, features on (spaCy or
NLTK's tagger, whichever is installed).
"""

from __future__ import annotations

import collections
import shutil
import warnings
from pathlib import Path

import pytest
from conftest import require_module

from sklearn_fairaes.exceptions import CacheCorruptionWarning
from sklearn_fairaes.features import InterpretableFeatures
from sklearn_fairaes.report import _study_cache
from sklearn_fairaes.report._study_cache import KeptFit, fit_representation
from sklearn_fairaes.text import (
    BowVectorizer,
    EmbeddingCache,
    TfidfEssayVectorizer,
    _vectorizers,
)

pd = require_module("pandas", "report")

N = 60
STARTED = "2026-01-01T00:00:00+00:00"


@pytest.fixture(scope="module")
def data(asap7):
    return asap7.iloc[:N].copy()


@pytest.fixture(scope="module")
def wordnet():
    from conftest import missing_resource

    from sklearn_fairaes.resources import ResourceNotFoundError, ensure_wordnet

    try:
        ensure_wordnet()
    except ResourceNotFoundError as exc:
        missing_resource(f"WordNet ({exc})")


def _kw(**changes):
    kw = {
        "text_col": "essay",
        "score_col": "rater1_domain1",
        "systems": {"r2": "rater2_domain1"},
        "id_col": "essay_id",
        "representations": {"tfidf": TfidfEssayVectorizer()},
        "features": True,
        "paraphrases": None,
        "n_paraphrase_samples": 20,
        "n_bootstrap": 0,
        "score_range": (0, 12),
    }
    kw.update(changes)
    return kw


def _counting(calls, cls, method):
    original = getattr(cls, method)

    def counted(self, *args, **kw):
        calls[cls.__name__] += 1
        return original(self, *args, **kw)

    return counted


@pytest.fixture
def fits(monkeypatch):
    """Calls of the vectorizers' and the features' fits, by class name."""
    calls: collections.Counter = collections.Counter()
    for cls in (TfidfEssayVectorizer, InterpretableFeatures):
        for method in ("fit", "fit_transform"):
            monkeypatch.setattr(cls, method, _counting(calls, cls, method))
    return calls


def _audit(data, cache, **kw):
    from sklearn_fairaes import audit

    return audit(data, cache=cache, **kw)


def _page(result) -> str:
    """The report page, with the run's start time and duration fixed (the cache counts
    of the meta are not on the page)."""
    result.meta.update(started=STARTED, seconds=1.0)
    return result.to_html()


def _assert_same(a, b):
    assert set(a.tables) == set(b.tables)
    for name, table in a.tables.items():
        pd.testing.assert_frame_equal(table, b.tables[name], check_exact=True)
    assert a.meta["notes"] == b.meta["notes"]
    assert a.meta["warnings"] == b.meta["warnings"]


@pytest.fixture(scope="module")
def filled(data, tmp_path_factory, wordnet):
    """A folder filled by the base audit, and that audit."""
    folder = tmp_path_factory.mktemp("filled") / "cache"
    return folder, _audit(data, folder, **_kw())


def test_second_audit_reads_the_fits_back(data, filled, tmp_path, fits):
    folder, first = filled
    copy = tmp_path / "cache"
    shutil.copytree(folder, copy)
    _vectorizers._lemmatizer.cache_clear()
    second = _audit(data, copy, **_kw())
    assert fits == {}  # neither the vectorizer nor the features were fitted
    assert _vectorizers._lemmatizer.cache_info().misses == 0  # WordNet not loaded
    # the essays' vectors, the features, the paraphrases' vectors
    assert second.meta["study_cache"] == {"read": 3, "computed": 0, "not_stored": 0}
    assert not second.tables["paraphrase"].empty
    assert second.tables["feature_profile"].shape[0] > 0
    without = _audit(data, False, **_kw())
    assert fits["TfidfEssayVectorizer"] >= 1 and fits["InterpretableFeatures"] >= 1
    assert "study_cache" not in without.meta or without.meta["study_cache"]["read"] == 0
    _assert_same(first, second)
    _assert_same(without, second)
    # the report page (its figures inline) is the same byte for byte
    assert _page(second) == _page(first) == _page(without)


def _bump(frame, row, column):
    value = int(frame[column].iloc[row])
    frame.loc[frame.index[row], column] = str(value - 1 if value > 0 else value + 1)


@pytest.mark.parametrize(
    ("what", "refit"),
    [
        ("essay text", {"TfidfEssayVectorizer", "InterpretableFeatures"}),
        ("human score", {"InterpretableFeatures"}),  # the n-grams learn from it
        ("representation option", {"TfidfEssayVectorizer"}),
        ("row order", {"TfidfEssayVectorizer", "InterpretableFeatures"}),
    ],
)
def test_one_change_is_never_a_stale_hit(data, filled, tmp_path, fits, what, refit):
    folder, base = filled
    copy = tmp_path / "cache"
    shutil.copytree(folder, copy)
    d, kw = data.copy(), _kw()
    if what == "essay text":
        d.loc[d.index[7], "essay"] = d["essay"].iloc[7] + " Dogs chase a ball."
    elif what == "human score":
        _bump(d, 3, "rater1_domain1")
    elif what == "representation option":
        kw["representations"] = {"tfidf": TfidfEssayVectorizer(sublinear_tf=True)}
    else:
        d = d.iloc[::-1].copy()
    cached = _audit(d, copy, **kw)
    assert {n for n, k in fits.items() if k} == refit
    reference = _audit(d, False, **kw)
    _assert_same(reference, cached)


def _entries(folder: Path) -> list[Path]:
    """The files of this module's entries in a cache folder."""
    out = []
    for meta in folder.glob("*/encoder.json"):
        if '"study:' in meta.read_text(encoding="utf-8"):
            out += sorted(meta.parent.glob("??/*.npy"))
    return out


@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_damaged_entry_is_recomputed(data, filled, tmp_path, fits, damage):
    folder, base = filled
    copy = tmp_path / "cache"
    shutil.copytree(folder, copy)
    files = _entries(copy)
    assert len(files) == 3
    for file in files:
        raw = bytearray(file.read_bytes())
        if damage == "truncate":
            file.write_bytes(bytes(raw[: len(raw) // 2]))
        else:
            mid = len(raw) - 40
            raw[mid : mid + 8] = bytes(b ^ 0x5A for b in raw[mid : mid + 8])
            file.write_bytes(bytes(raw))
    with pytest.warns(CacheCorruptionWarning, match="recomputed|refused|corrupt"):
        again = _audit(data, copy, **_kw())
    assert fits["TfidfEssayVectorizer"] >= 1 and fits["InterpretableFeatures"] >= 1
    _assert_same(base, again)
    fits.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheCorruptionWarning)
        third = _audit(data, copy, **_kw())  # rewritten: read back
    assert fits == {}
    _assert_same(base, third)


def test_kept_fit_stands_for_the_fitted_transformer(tmp_path):
    from sklearn.base import clone
    from sklearn.feature_extraction.text import TfidfVectorizer

    essays = ["the cat sat on the mat", "the dog sat", "a cat ran to the dog"]
    rep = BowVectorizer(min_df=1, lemmatize=False)
    cache = EmbeddingCache(tmp_path)
    kept, X = fit_representation(rep, essays, cache)
    assert isinstance(kept, KeptFit)
    fitted = clone(rep).fit(essays)
    assert (X != fitted.transform(essays)).nnz == 0
    # read back in a new object: fitted on demand for unseen texts only
    again, X2 = fit_representation(rep, essays, EmbeddingCache(tmp_path))
    assert again._fitted is None
    assert (X2 != X).nnz == 0
    new = ["the cat and the dog"]
    assert (again.transform(new) != fitted.transform(new)).nnz == 0
    assert again._fitted is not None
    # the transformer's face: parameters, repr, clone, fitted attributes
    assert repr(again) == repr(rep)
    assert again.min_df == 1 and again.get_params() == rep.get_params()
    assert type(clone(again)) is BowVectorizer and not hasattr(clone(again), "vocabulary_")
    assert again.vocabulary_ == fitted.vocabulary_
    with pytest.raises(TypeError, match="cannot be refitted"):
        again.fit(essays)
    # a transformer whose code is not ours, or without a folder: fitted as before
    other, _ = fit_representation(TfidfVectorizer(), essays, cache)
    assert type(other) is TfidfVectorizer and hasattr(other, "vocabulary_")
    plain, _ = fit_representation(rep, essays, None)
    assert type(plain) is BowVectorizer
    # a parameter without a plain repr (a callable): not kept
    odd, _ = fit_representation(
        BowVectorizer(min_df=1, lemmatize=False, strip_accents=str.lower), essays, cache
    )
    assert type(odd) is BowVectorizer


def test_without_folder_nothing_is_kept(data, tmp_path, fits):
    before = _study_cache.counts()
    _audit(data, False, **_kw(paraphrases=False))
    assert _study_cache.counts() == before


def test_rerun_skips_the_per_essay_workers(data, tmp_path):
    # with n_jobs=2 the per-essay work (tags, features' counts, paraphrases)
    # runs in worker processes first; a re-run that finds the studies' fits
    # and every paraphrase stored starts none, and the tables are the same
    folder = tmp_path / "cache"
    kw = _kw(n_jobs=2)
    first = _audit(data, folder, **kw)
    assert first.meta["per_essay"]["essays"] == N
    second = _audit(data, folder, **kw)
    assert "per_essay" not in second.meta
    _assert_same(first, second)
    # a changed human score: the features are fitted again, from the counts
    # and tags the first run stored, and the paraphrases are not redone
    d = data.copy()
    _bump(d, 3, "rater1_domain1")
    changed = _audit(d, folder, **kw)
    assert changed.meta["per_essay"]["paraphrases"] is False
    assert changed.meta["per_essay"]["features"]
    _assert_same(_audit(d, False, **_kw()), changed)


def test_study_tasks_count_the_fits_they_read(data, tmp_path):
    # with n_jobs=2 and two prompts each study is a task in a worker process;
    # the fits its task read back are in the audit's meta all the same
    d = data.copy()
    d["task"] = ["a", "b"] * (N // 2)
    kw = _kw(n_jobs=2, prompt_col="task")
    folder = tmp_path / "cache"
    first = _audit(d, folder, **kw)
    assert first.meta["study_tasks"]["on_workers"], first.meta["study_tasks"]
    # at least each prompt's essays' vectors, kept by the tasks
    assert first.meta["study_cache"]["computed"] >= 2, first.meta["study_cache"]
    second = _audit(d, folder, **kw)
    assert second.meta["study_cache"] == {
        "read": first.meta["study_cache"]["computed"],
        "computed": 0,
        "not_stored": 0,
    }
    _assert_same(first, second)
