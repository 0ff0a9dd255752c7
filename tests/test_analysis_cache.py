"""The analyses' outputs kept across runs (issue 35, item 2's re-run).

A second audit on the same inputs with a cache folder reads every cached
section's tables and replicates back (the analyses' ``run`` is counted, so a
recomputation fails the test) and they equal both the first audit's and an
audit without any cache (the reference); one input changed at a time gives
the tables of an audit without cache of the changed inputs (no stale entry);
a truncated or garbled entry is refused and recomputed; two prompts are kept
apart. Small data: 60 essays of ASAP prompt 7, no features, no paraphrases.
"""

from __future__ import annotations

import collections
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import require_module

from sklearn_fairaes.exceptions import CacheCorruptionWarning
from sklearn_fairaes.report import _analysis_cache
from sklearn_fairaes.report._analysis_cache import CACHED, decode, encode, same
from sklearn_fairaes.report.analyses import SECTIONS, AnalysisOutput
from sklearn_fairaes.text import TfidfEssayVectorizer

pd = require_module("pandas", "report")

N = 60


@pytest.fixture(scope="module")
def data(asap7):
    d = asap7.iloc[:N].copy()
    d["group"] = np.where(np.arange(N) % 2, "a", "b")
    d["words"] = d["essay"].str.split().str.len().astype(float)
    return d


def _kw(**changes):
    kw = {
        "text_col": "essay",
        "score_col": "rater1_domain1",
        "systems": {"r2": "rater2_domain1"},
        "id_col": "essay_id",
        "representations": {"tfidf": TfidfEssayVectorizer()},
        "features": False,
        "paraphrases": False,
        "group_col": "group",
        "covariate_cols": "words",
        "n_bootstrap": 30,
        "score_range": (0, 12),
    }
    kw.update(changes)
    return kw


@pytest.fixture
def runs(monkeypatch):
    """Calls of each section's analysis ``run``, as ``(section id, prompt)``."""
    calls: collections.Counter = collections.Counter()
    for section in SECTIONS:
        analysis = section.analysis
        if analysis is None:
            continue

        def counted(study, _run=analysis.run, _id=section.id):
            calls[(_id, study.prompt)] += 1
            return _run(study)

        monkeypatch.setattr(analysis, "run", counted)
    return calls


def _audit(data, cache, **kw):
    from sklearn_fairaes import audit

    return audit(data, cache=cache, **kw)


def _assert_same(a, b):
    assert set(a.tables) == set(b.tables)
    for name, table in a.tables.items():
        pd.testing.assert_frame_equal(table, b.tables[name], check_exact=True)
    assert list(a.replicates) == list(b.replicates)
    for key, values in a.replicates.items():
        np.testing.assert_array_equal(values, b.replicates[key])
    assert a.meta["notes"] == b.meta["notes"]
    assert a.meta["warnings"] == b.meta["warnings"]


def _cached_calls(runs):
    return sum(n for (sid, _), n in runs.items() if sid in CACHED)


def test_second_audit_reads_every_output(data, tmp_path, runs):
    folder = tmp_path / "cache"
    first = _audit(data, folder, **_kw())
    ran = {sid for (sid, _) in runs if sid in CACHED}
    assert ran == {"agreement", "extremes", "lipschitz", "review", "errors", "groups"}
    assert first.meta["analysis_cache"]["computed"] == len(ran)
    assert first.meta["analysis_cache"]["read"] == 0
    runs.clear()
    second = _audit(data, folder, **_kw())
    assert _cached_calls(runs) == 0  # nothing recomputed
    assert second.meta["analysis_cache"] == {
        "read": len(ran),
        "computed": 0,
        "refused": 0,
        "not_stored": 0,
        "uncached": {},
    }
    assert second.meta["result_cache"]["analysis:lipschitz"]["read"] == 1
    without = _audit(data, False, **_kw())  # the reference
    assert _cached_calls(runs) == len(ran)
    assert "analysis_cache" not in without.meta
    _assert_same(first, second)
    _assert_same(without, second)
    assert first.replicates  # the bootstrap replicates were compared too


def _bump(frame, row, column):
    """One score of ``frame`` moved by one point, within the 0-12 scale."""
    value = int(frame[column].iloc[row])
    frame.loc[frame.index[row], column] = str(value - 1 if value > 0 else value + 1)


def _changed(data, what):
    d = data.copy()
    kw = _kw()
    if what == "human score":
        _bump(d, 3, "rater1_domain1")
    elif what == "system score":
        _bump(d, 5, "rater2_domain1")
    elif what == "essay text":
        d.loc[d.index[7], "essay"] = d["essay"].iloc[7] + " Dogs chase a ball."
    elif what == "n_bootstrap":
        kw["n_bootstrap"] = 31
    elif what == "random_state":
        kw["random_state"] = 1
    elif what == "representation option":
        kw["representations"] = {"tfidf": TfidfEssayVectorizer(sublinear_tf=True)}
    elif what == "score_range":
        kw["score_range"] = (0, 13)
    elif what == "group label":
        d.loc[d.index[2], "group"] = "a" if d["group"].iloc[2] == "b" else "b"
    return d, kw


@pytest.fixture(scope="module")
def filled(data, tmp_path_factory):
    """A folder holding the outputs of the base audit, and that audit."""
    folder = tmp_path_factory.mktemp("filled") / "cache"
    return folder, _audit(data, folder, **_kw())


@pytest.mark.parametrize(
    "what",
    [
        "human score",
        "system score",
        "essay text",
        "n_bootstrap",
        "random_state",
        "representation option",
        "score_range",
        "group label",
    ],
)
def test_one_change_is_never_a_stale_hit(data, filled, tmp_path, runs, what):
    folder, base = filled
    copy = tmp_path / "cache"
    shutil.copytree(folder, copy)
    d, kw = _changed(data, what)
    cached = _audit(d, copy, **kw)
    assert cached.meta["analysis_cache"]["read"] == 0
    assert _cached_calls(runs) > 0
    reference = _audit(d, False, **kw)
    _assert_same(reference, cached)
    if what == "score_range":
        return  # QWK is the same on 0-13 as on 0-12: the miss above is the check
    # the change shows in the tables, so a stale entry would have failed above
    assert (
        any(not t.equals(base.tables.get(name)) for name, t in reference.tables.items())
        or set(reference.replicates) != set(base.replicates)
        or any(
            not np.array_equal(v, base.replicates[k])
            for k, v in reference.replicates.items()
        )
    )


def _entries(folder: Path) -> list[Path]:
    """The files of the analysis outputs in a cache folder."""
    out = []
    for meta in folder.glob("*/encoder.json"):
        if '"analysis ' in meta.read_text(encoding="utf-8"):
            out += sorted(meta.parent.glob("??/*.npy"))
    return out


@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_damaged_entry_is_recomputed(data, filled, tmp_path, runs, damage):
    folder, base = filled
    copy = tmp_path / "cache"
    shutil.copytree(folder, copy)
    files = _entries(copy)
    assert len(files) == 6
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
    assert again.meta["analysis_cache"]["read"] == 0
    assert _cached_calls(runs) == 6
    _assert_same(base, again)
    runs.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheCorruptionWarning)
        third = _audit(data, copy, **_kw())  # rewritten whole: read back
    assert _cached_calls(runs) == 0
    _assert_same(base, third)


def test_two_prompts_read_and_write_apart(data, tmp_path, runs):
    two = data.assign(prompt=np.where(np.arange(N) < N // 2, "p1", "p2"))
    two["group"] = np.where(np.arange(N) % 2, "a", "b")
    kw = _kw(prompt_col="prompt")
    folder = tmp_path / "cache"
    _audit(two, folder, **kw)
    assert {p for (sid, p) in runs if sid in CACHED} == {"p1", "p2"}
    runs.clear()
    changed = two.copy()
    _bump(changed, 40, "rater2_domain1")  # an essay of p2
    cached = _audit(changed, folder, **kw)
    assert {p for (sid, p) in runs if sid in CACHED} == {"p2"}  # p1 read back
    assert cached.meta["analysis_cache"]["read"] == 6
    assert cached.meta["analysis_cache"]["computed"] == 6
    _assert_same(_audit(changed, False, **kw), cached)


def test_study_with_no_digest_is_not_cached(data, tmp_path, runs, monkeypatch):
    # a value the key cannot digest (here forced) means no caching, said in meta
    def refuse(study):
        raise _analysis_cache.Uncacheable("a value of type Opaque cannot be digested")

    monkeypatch.setattr(_analysis_cache, "study_key", refuse)
    folder = tmp_path / "cache"
    for _ in range(2):
        result = _audit(data, folder, **_kw())
        counts = result.meta["analysis_cache"]
        assert counts["read"] == counts["computed"] == 0
        assert counts["uncached"] == {"all": "a value of type Opaque cannot be digested"}
    assert _cached_calls(runs) == 12
    assert _entries(folder) == []


def test_archive_round_trip_keeps_dtypes():
    frame = pd.DataFrame(
        {
            "name": pd.array(["a", None, "c"], dtype="str"),
            "mixed": pd.array([1.5, "x", None], dtype=object),
            "n": np.array([1, 2, 3], dtype=np.int32),
            "ok": [True, False, True],
            "x": [0.1, np.nan, np.inf],
        },
        index=pd.Index([10, 20, 30]),
    )
    out = AnalysisOutput(
        tables={"t": frame, "empty": frame.iloc[:0]},
        notes=["n"],
        warnings=[{"representation": "tfidf", "message": "m"}],
        replicates={("t", "", "s", "x"): np.array([0.25, 0.5], dtype=np.float64)},
    )
    back = decode(encode(out))
    assert same(out, back)
    for name, table in out.tables.items():
        pd.testing.assert_frame_equal(table, back.tables[name], check_exact=True)
    # a table that does not read back equal is not stored (tuple column names)
    odd = AnalysisOutput(tables={"t": pd.DataFrame({("a", "b"): [1]})})
    assert not same(odd, decode(encode(odd)))


@pytest.fixture(scope="module")
def wordnet():
    from conftest import missing_resource

    from sklearn_fairaes.resources import ResourceNotFoundError, ensure_wordnet

    try:
        ensure_wordnet()
    except ResourceNotFoundError as exc:
        missing_resource(f"WordNet ({exc})")


def test_paraphrase_section_is_read_back_without_scorers(data, tmp_path, runs, wordnet):
    kw = _kw(paraphrases=None, n_paraphrase_samples=20)
    folder = tmp_path / "cache"
    first = _audit(data, folder, **kw)
    assert runs[("paraphrase", "all")] == 1
    assert not first.tables["paraphrase"].empty
    second = _audit(data, folder, **kw)
    assert runs[("paraphrase", "all")] == 1  # read back
    assert second.meta["analysis_cache"]["read"] == 7
    _assert_same(_audit(data, False, **kw), second)
    # other vectors for the paraphrases: another key
    other = _kw(
        paraphrases=None,
        n_paraphrase_samples=20,
        representations={"tfidf": TfidfEssayVectorizer(sublinear_tf=True)},
    )
    changed = _audit(data, folder, **other)
    assert runs[("paraphrase", "all")] == 3
    _assert_same(_audit(data, False, **other), changed)
    assert not changed.tables["paraphrase"].equals(first.tables["paraphrase"])


def test_paraphrase_section_with_a_scorer_always_runs(data, tmp_path, runs, wordnet):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(TfidfVectorizer(), Ridge()).fit(
        data["essay"].tolist(), data["rater1_domain1"].astype(float)
    )
    kw = _kw(
        paraphrases=None,
        n_paraphrase_samples=20,
        systems=None,
        models={"pipe": model},
        refit=False,
    )
    folder = tmp_path / "cache"
    first = _audit(data, folder, **kw)
    assert not first.tables["paraphrase_scores"].empty  # the model re-scored them
    second = _audit(data, folder, **kw)
    assert runs[("paraphrase", "all")] == 2  # never read back
    assert runs[("lipschitz", "all")] == 1  # the scores' sections are
    _assert_same(first, second)
