"""Tag and paraphrase once across runs (issue 18): POS tags, the interpretable
features' per-essay counts and WordNet paraphrase edits kept in the on-disk
embedding cache's folder.

A second process reading a filled folder tags no essay and paraphrases none
(counted at ``_pos._run_tagger`` and ``WordNetParaphraser._compute``, the one
place each is done), with results equal to a run without any cache (the
independent reference); a truncated or garbled entry is refused and
recomputed; a folder that cannot be written warns once and the results stay
right; the keys change with the tagger's files, the options and the seed;
``fairaes cache info|clear`` see and remove the entries.
"""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import missing_resource

from sklearn_fairaes.cli import main
from sklearn_fairaes.exceptions import CacheCorruptionWarning, CacheWriteWarning
from sklearn_fairaes.features import InterpretableFeatures, _persist, _pos
from sklearn_fairaes.features._persist import pack, result_counts, unpack
from sklearn_fairaes.features._tokenize import tokenize_essay
from sklearn_fairaes.paraphrase import WordNetParaphraser
from sklearn_fairaes.paraphrase import _wordnet as wordnet_module
from sklearn_fairaes.resources import ResourceNotFoundError
from sklearn_fairaes.text import EmbeddingCache

N = 12


@pytest.fixture(scope="module")
def wordnet():
    try:
        from sklearn_fairaes.resources import ensure_wordnet

        ensure_wordnet()
    except ResourceNotFoundError as exc:
        missing_resource(f"WordNet ({exc})")


@pytest.fixture(scope="module")
def essays():
    from sklearn_fairaes.datasets import load_demo_essays

    demo = load_demo_essays().iloc[:N]
    assert demo["essay"].nunique() == N  # the counts below are per distinct essay
    return demo["essay"].tolist(), demo["score"].to_numpy(dtype=float)


def _as_new_process(monkeypatch):
    """Empty tag memo, no open stores or sibling caches (nothing held in memory)."""
    monkeypatch.setattr(_pos, "_TAG_MEMO", _pos._TagMemo(_pos._TAG_MEMO_MAX_TOKENS))
    monkeypatch.setattr(_pos, "_STORES", {})
    monkeypatch.setattr(_persist, "_SIBLINGS", {})


@pytest.fixture
def fresh(monkeypatch):
    """This process as a new one, for this test only."""
    _as_new_process(monkeypatch)


@pytest.fixture
def tagged(monkeypatch):
    """How many essays the backend is asked to tag."""
    seen = [0]
    real = _pos._run_tagger

    def counting(batch, label):
        seen[0] += len(batch)
        return real(batch, label)

    monkeypatch.setattr(_pos, "_run_tagger", counting)
    return seen


@pytest.fixture
def paraphrased(monkeypatch):
    """How many essays the paraphraser computes edits for."""
    seen = [0]
    real = WordNetParaphraser._compute

    def counting(self, batch, base, stop):
        seen[0] += len(batch)
        return real(self, batch, base, stop)

    monkeypatch.setattr(WordNetParaphraser, "_compute", counting)
    return seen


def unknown_teh(words):
    """A custom spell checker: the per-essay counts are then not stored, the tags are."""
    return [w for w in words if w.lower() == "teh"]


def _features(folder, essays, label, spelling="pyspellchecker"):
    texts, y = essays
    feats = InterpretableFeatures(
        features=["word_count", "spelling_errors", "good_pos_ngrams"],
        pos_tagger=label,
        spelling=spelling,
        cache=folder,
    )
    return feats.fit_transform(texts, y)


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*/*/*.npy"))


# -- the packing ------------------------------------------------------------------


def test_pack_is_three_bytes_per_float_after_the_length():
    # hand-worked: "ab" as JSON is the 4 bytes '"ab"' = 34 97 98 34
    vec = pack("ab")
    assert vec.dtype == np.float32
    assert vec.tolist() == [4.0, 34 + 97 * 256 + 98 * 65536, 34.0]
    for value in (
        [],
        ["NN", "VBD", "."],
        [[3, "car", "auto"]],
        "é ✓ 𝄞",
        {"a": [1.5, None]},
    ):
        assert unpack(pack(value)) == value


@pytest.mark.parametrize(
    "vec, why",
    [
        ([4.0, 34 + 97 * 256 + 98 * 65536], "length"),  # a word missing
        ([4.0, 34 + 97 * 256 + 98 * 65536, 34.0, 0.0], "length"),  # one too many
        ([4.0, 34 + 97 * 256 + 98 * 65536, 34.5], "not a packed"),  # not an integer
        ([4.0, 34 + 97 * 256 + 98 * 65536, 34.0 + 65536], "padding"),
        ([-1.0], "not a packed"),
        ([], "not a packed"),
    ],
)
def test_unpack_refuses_what_pack_cannot_make(vec, why):
    with pytest.raises(ValueError, match=why):
        unpack(np.asarray(vec, dtype=np.float32))


# -- across processes ---------------------------------------------------------------

SCRIPT = """
import json, sys
from sklearn_fairaes.datasets import load_demo_essays
from sklearn_fairaes.features import InterpretableFeatures, _pos
from sklearn_fairaes.features._persist import result_counts
from sklearn_fairaes.paraphrase import WordNetParaphraser

from sklearn_fairaes.features import _interpretable

folder, spelling = sys.argv[1], sys.argv[2]
def unknown_teh(words):
    return [w for w in words if w.lower() == "teh"]
demo = load_demo_essays().iloc[:{n}]
texts, y = demo["essay"].tolist(), demo["score"].to_numpy(dtype=float)
seen = [0, 0, 0]
real_tag, real_para = _pos._run_tagger, WordNetParaphraser._compute
real_tok = _interpretable.tokenize_essay
def tag(batch, label):
    seen[0] += len(batch)
    return real_tag(batch, label)
def para(self, batch, base, stop):
    seen[1] += len(batch)
    return real_para(self, batch, base, stop)
def tok(text):
    seen[2] += 1
    return real_tok(text)
_pos._run_tagger, WordNetParaphraser._compute = tag, para
_interpretable.tokenize_essay = tok
feats = InterpretableFeatures(features=["word_count", "spelling_errors", "good_pos_ngrams"],
                              pos_tagger="{label}", cache=folder,
                              spelling=unknown_teh if spelling == "custom" else spelling)
X = feats.fit_transform(texts, y)
texts_out, edits = WordNetParaphraser(random_state=0, pos_tagger="{label}",
                                      cache=folder).fit(texts).paraphrase_with_edits(texts)
json.dump({{"tagged": seen[0], "paraphrased": seen[1], "tokenized": seen[2],
           "counts": result_counts(),
           "X": X.tolist(), "good": feats.good_pos_ngrams_, "paraphrases": texts_out,
           "edits": [[list(e) for e in es] for es in edits]}}, sys.stdout)
"""


def _run(folder: Path, label: str, spelling: str = "pyspellchecker") -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(n=N, label=label), str(folder), spelling],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    "spelling, kept",
    [
        # every feature storable: the per-essay counts and tags in one entry
        ("pyspellchecker", "essay_features"),
        # a custom checker may change between runs: only the tags are kept
        ("custom", "pos_tags"),
    ],
)
def test_a_second_process_tags_and_paraphrases_nothing(
    spacy_label, wordnet, essays, tmp_path, fresh, spelling, kept
):
    folder = tmp_path / "cache"
    first = _run(folder, spacy_label, spelling)
    assert first["tagged"] == N and first["paraphrased"] == N and first["tokenized"] == N
    assert set(first["counts"]) == {kept, "paraphrases"}
    assert first["counts"][kept] == {"read": 0, "computed": N, "refused": 0}
    assert first["counts"]["paraphrases"] == {"read": 0, "computed": N, "refused": 0}
    assert len(_entries(folder)) == 2 * N

    second = _run(folder, spacy_label, spelling)
    assert second["tagged"] == 0 and second["paraphrased"] == 0
    # the stored counts need no tokens; the stored tags are found by them
    assert second["tokenized"] == (0 if kept == "essay_features" else N)
    assert second["counts"][kept] == {"read": N, "computed": 0, "refused": 0}
    assert second["counts"]["paraphrases"] == {"read": N, "computed": 0, "refused": 0}
    assert len(_entries(folder)) == 2 * N

    # the reference: this process, no cache at all, every essay tagged afresh
    texts, y = essays
    with _pos.tag_memo_disabled():
        feats = InterpretableFeatures(
            features=["word_count", "spelling_errors", "good_pos_ngrams"],
            pos_tagger=spacy_label,
            spelling=unknown_teh if spelling == "custom" else spelling,
            cache=None,
        )
        X = feats.fit_transform(texts, y)
        para = WordNetParaphraser(random_state=0, pos_tagger=spacy_label)
        ref_texts, ref_edits = para.fit(texts).paraphrase_with_edits(texts)
    for run in (first, second):
        np.testing.assert_array_equal(np.asarray(run["X"]), X)
        assert run["good"] == feats.good_pos_ngrams_
        assert run["paraphrases"] == ref_texts
        assert run["edits"] == [[list(e) for e in es] for es in ref_edits]
    assert any(ref_edits)  # the check compared real edits, not empty lists


def test_joblib_workers_read_and_fill_the_same_folder(
    spacy_label, essays, tmp_path, fresh, tagged
):
    folder = tmp_path / "cache"
    texts, y = essays
    many = texts * 6  # 72 essays: two chunks of 64 and 8, in two workers
    ys = np.tile(y, 6)
    feats = InterpretableFeatures(
        features=["good_pos_ngrams"], pos_tagger=spacy_label, cache=folder, n_jobs=2
    )
    X = feats.fit_transform(many, ys)
    assert len(_entries(folder)) == len(set(texts))  # written by the workers
    assert tagged[0] == 0  # in this process: the workers did the tagging
    _pos._TAG_MEMO.clear()
    serial = InterpretableFeatures(
        features=["good_pos_ngrams"], pos_tagger=spacy_label, cache=folder
    )
    np.testing.assert_array_equal(serial.fit_transform(many, ys), X)
    assert tagged[0] == 0  # read back from the folder


# -- bad entries ----------------------------------------------------------------------


def test_a_truncated_entry_is_refused_and_recomputed(
    spacy_label, essays, tmp_path, fresh, monkeypatch, tagged
):
    folder = tmp_path / "cache"
    X = _features(folder, essays, spacy_label)
    assert tagged[0] == N
    victim = _entries(folder)[3]
    victim.write_bytes(victim.read_bytes()[:-7])
    _as_new_process(monkeypatch)
    with pytest.warns(CacheCorruptionWarning, match="truncated"):
        again = _features(folder, essays, spacy_label)
    np.testing.assert_array_equal(again, X)
    assert tagged[0] == N + 1  # that essay alone, tagged again
    assert len(_entries(folder)) == N  # and stored again
    _as_new_process(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _features(folder, essays, spacy_label)
    assert tagged[0] == N + 1


def test_a_well_formed_entry_with_the_wrong_content_is_not_trusted(
    spacy_label, essays, tmp_path, fresh, monkeypatch, tagged
):
    # an entry that passes the cache's own checks (key, CRC) but holds tags
    # that cannot be this essay's: one tag too few
    folder = tmp_path / "cache"
    texts, _ = essays
    doc = tokenize_essay(texts[0])
    key = _pos.memo_keys([doc], spacy_label)[0]
    store = _pos._tag_store(EmbeddingCache(folder), spacy_label)
    assert store is not None
    store.put(key[1].hex(), ["NN"] * (len(doc.tokens) - 1))
    _as_new_process(monkeypatch)
    before = result_counts().get("pos_tags", {}).get("refused", 0)
    with pytest.warns(CacheCorruptionWarning, match="not a usable result"):
        tags = _pos.tag_essays([doc], spacy_label, store=EmbeddingCache(folder))
    with _pos.tag_memo_disabled():
        assert tags == _pos.tag_essays([doc], spacy_label)
    assert result_counts()["pos_tags"]["refused"] == before + 1


def test_stored_edits_that_do_not_fit_the_essay_are_recomputed(
    spacy_label, wordnet, essays, tmp_path, fresh, paraphrased
):
    folder = tmp_path / "cache"
    texts, _ = essays
    para = WordNetParaphraser(random_state=0, pos_tagger=spacy_label, cache=folder)
    para.fit(texts)
    store = para._store(para._base_seed(), para._stop_word_set())
    assert store is not None
    # a word that is not at that offset, and edits out of order
    store.put(texts[0], [[0, "zebra", "horse"]])
    start = texts[1].index(" ") + 1
    word = texts[1][start:].split()[0]
    store.put(texts[1], [[start, word, "x"], [0, texts[1].split()[0], "y"]])
    with pytest.warns(CacheCorruptionWarning, match="not a usable result"):
        got = para.transform(texts[:2])
    assert paraphrased[0] == 2
    assert got == WordNetParaphraser(random_state=0, pos_tagger=spacy_label).fit(
        texts
    ).transform(texts[:2])


# -- folders that cannot be written ------------------------------------------------------


def test_a_folder_refusing_writes_warns_once_and_the_results_stay_right(
    spacy_label, wordnet, essays, tmp_path, fresh, monkeypatch, tagged, paraphrased
):
    folder = tmp_path / "full"
    assert EmbeddingCache(folder).writable() is None

    def disk_full(self, file, rec):
        raise OSError(errno.ENOSPC, "No space left on device", str(file))

    monkeypatch.setattr(EmbeddingCache, "_publish", disk_full)
    texts, _ = essays
    with pytest.warns(CacheWriteWarning, match="No space left on device") as record:
        X = _features(folder, essays, spacy_label)
        P = WordNetParaphraser(random_state=0, pos_tagger=spacy_label, cache=folder)
        out = P.fit(texts).transform(texts)
    assert len([w for w in record if w.category is CacheWriteWarning]) == 1
    assert _entries(folder) == []
    monkeypatch.undo()
    with _pos.tag_memo_disabled():
        ref = _features(None, essays, spacy_label)
        ref_out = (
            WordNetParaphraser(random_state=0, pos_tagger=spacy_label)
            .fit(texts)
            .transform(texts)
        )
    np.testing.assert_array_equal(X, ref)
    assert out == ref_out


def test_a_read_only_audit_cache_is_read_and_never_written(
    spacy_label, essays, tmp_path, fresh, tagged, monkeypatch
):
    from sklearn_fairaes.text._cache import open_cache

    folder = tmp_path / "ro"
    texts, y = essays
    InterpretableFeatures(
        features=["good_pos_ngrams"], pos_tagger=spacy_label, cache=folder
    ).fit(texts[:6], y[:6])
    assert len(_entries(folder)) == 6 and tagged[0] == 6
    # the audit's fallback for a folder it found read-only
    monkeypatch.setattr(EmbeddingCache, "writable", lambda self: "Read-only file system")
    with pytest.warns(CacheWriteWarning, match="Read-only"):
        ro = open_cache(folder)
    _as_new_process(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        InterpretableFeatures(
            features=["good_pos_ngrams"], pos_tagger=spacy_label, cache=ro
        ).fit(texts, y)
    assert tagged[0] == 6 + (N - 6)  # the six stored ones were read
    assert len(_entries(folder)) == 6  # nothing written


# -- keys ------------------------------------------------------------------------------


def test_the_tag_key_follows_the_pipelines_files(spacy_label, tmp_path, fresh):
    data = _pos._spacy_data_dir(spacy_label[len("spacy:") :])
    assert data is not None and (data / "tagger" / "model").is_file()
    copy = tmp_path / "pipeline"
    shutil.copytree(data, copy)
    same = _pos.tagger_identity(f"spacy:{copy}")
    assert same is not None
    assert same["files"] == _pos.tagger_identity(spacy_label)["files"]
    # retrained weights under the same name and version: another key
    retrained = tmp_path / "retrained"
    shutil.copytree(data, retrained)
    with open(retrained / "tagger" / "model", "ab") as fh:
        fh.write(b"\0")
    other = _pos.tagger_identity(f"spacy:{retrained}")
    assert other is not None and other["version"] == same["version"]
    assert other["files"] != same["files"]
    # a pipeline whose files cannot be identified is never stored
    assert _pos.tagger_identity("spacy:no_such_pipeline_xyz") is None
    assert (
        _pos._tag_store(EmbeddingCache(tmp_path / "c"), "spacy:no_such_pipeline_xyz")
        is None
    )
    assert (
        _pos._tag_store(EmbeddingCache(tmp_path / "c"), lambda t: ["NN"] * len(t)) is None
    )


def test_the_paraphrase_key_follows_the_options_and_the_seed(
    spacy_label, wordnet, essays, tmp_path, fresh, paraphrased
):
    folder = tmp_path / "cache"
    texts, _ = essays
    n = N

    def run(**kw):
        kw = {"random_state": 0, "pos_tagger": spacy_label, "cache": folder, **kw}
        return WordNetParaphraser(**kw).fit(texts).transform(texts)

    base = run()
    assert paraphrased[0] == n
    assert run() == base and paraphrased[0] == n  # same key: read back
    for kw in (
        {"random_state": 1},
        {"rate": 0.5},
        {"max_senses": 1},
        {"min_count": 0},
        {"min_word_length": 4},
        {"stop_words": ["the"]},
        {"keep_placeholders": False},
    ):
        before = paraphrased[0]
        got = run(**kw)
        assert paraphrased[0] == before + n, kw  # another key: computed
        assert run(**kw) == got and paraphrased[0] == before + n, kw  # then read
        uncached = (
            WordNetParaphraser(**{"random_state": 0, "pos_tagger": spacy_label, **kw})
            .fit(texts)
            .transform(texts)
        )
        assert got == uncached, kw
    # not cached: a seed drawn per call, or a callable tagger
    before = len(_entries(folder))
    WordNetParaphraser(random_state=None, pos_tagger=spacy_label, cache=folder).fit(
        texts
    ).transform(texts)
    WordNetParaphraser(
        random_state=0, pos_tagger=lambda t: ["NN"] * len(t), cache=folder
    ).fit(texts).transform(texts)
    assert len(_entries(folder)) == before


def test_the_wordnet_identity_is_its_files(wordnet, monkeypatch, tmp_path):
    real = wordnet_module._wordnet_folder()
    assert real is not None
    ident = wordnet_module._wordnet_identity()
    assert ident is not None and "data.noun" in ident["files"]
    import hashlib

    with open(Path(real) / "index.noun", "rb") as fh:
        assert ident["files"]["index.noun"] == hashlib.sha256(fh.read()).hexdigest()
    copy = tmp_path / "wordnet"
    shutil.copytree(real, copy)
    with open(copy / "data.noun", "ab") as fh:
        fh.write(b"  \n")
    monkeypatch.setattr(wordnet_module, "_wordnet_folder", lambda: str(copy))
    wordnet_module._wordnet_identity.cache_clear()
    try:
        changed = wordnet_module._wordnet_identity()
        assert (
            changed is not None
            and changed["files"]["data.noun"] != ident["files"]["data.noun"]
        )
    finally:
        wordnet_module._wordnet_identity.cache_clear()


# -- fairaes cache info | clear -------------------------------------------------------------


def test_cache_info_and_clear_count_and_remove_the_entries(
    spacy_label, wordnet, essays, tmp_path, fresh, capsys, monkeypatch
):
    folder = tmp_path / "cache"
    texts, _ = essays
    _features(folder, essays, spacy_label)
    WordNetParaphraser(random_state=0, pos_tagger=spacy_label, cache=folder).fit(
        texts
    ).transform(texts)
    (folder / "notes.txt").write_text("mine")
    info = EmbeddingCache(folder).info()
    kinds = {e["encoder"]: e["entries"] for e in info["encoders"]}
    assert kinds == {"InterpretableFeatures": N, "WordNetParaphraser": N}
    _as_new_process(monkeypatch)
    _features(folder, essays, spacy_label, spelling=unknown_teh)  # the tags alone
    info = EmbeddingCache(folder).info()
    assert {e["encoder"]: e["entries"] for e in info["encoders"]} == {
        **kinds,
        "POS tags": N,
    }
    assert main(["cache", "info", "--cache", str(folder)]) == 0
    shown = capsys.readouterr().out
    assert f"{3 * N} entries" in shown and "POS tags" in shown
    assert main(["cache", "clear", "--cache", str(folder)]) == 0
    assert _entries(folder) == []
    assert sorted(p.name for p in folder.iterdir()) == ["CACHEDIR.TAG", "notes.txt"]


# -- through the audit --------------------------------------------------------------------


def test_a_rerun_of_the_audit_tags_and_paraphrases_nothing(
    spacy_label, wordnet, tmp_path, fresh, monkeypatch, tagged, paraphrased
):
    from pandas.testing import assert_frame_equal

    from sklearn_fairaes import audit
    from sklearn_fairaes.datasets import load_demo_essays

    data = load_demo_essays().iloc[:30]
    kw = {
        "text_col": "essay",
        "score_col": "score",
        "score_range": (0, 12),
        "representations": ["tfidf"],
        "models": ["ridge"],
        "cv": 3,
    }
    folder = tmp_path / "cache"
    first = audit(data, cache=folder, **kw)
    n = data["essay"].nunique()
    assert first.meta["result_cache"]["essay_features"]["computed"] == n
    assert first.meta["result_cache"]["paraphrases"]["computed"] == n
    assert tagged[0] == n and paraphrased[0] == n
    _as_new_process(monkeypatch)
    second = audit(data, cache=folder, **kw)
    assert second.meta["result_cache"]["paraphrases"] == {
        "read": n,
        "computed": 0,
        "refused": 0,
    }
    # the features' whole fit is read back (_study_cache): no essay's counts needed
    assert second.meta["result_cache"]["study:features"]["read"] == 1
    assert second.meta["result_cache"]["essay_features"]["computed"] == 0
    assert tagged[0] == n and paraphrased[0] == n  # nothing more
    _as_new_process(monkeypatch)
    without = audit(data, cache=False, **kw)  # the reference: nothing stored or read
    assert all(c["read"] == 0 for c in without.meta["result_cache"].values())
    assert set(first.tables) == set(second.tables) == set(without.tables)
    for name, table in without.tables.items():
        assert_frame_equal(first.tables[name], table, check_exact=True, obj=name)
        assert_frame_equal(second.tables[name], table, check_exact=True, obj=name)


def test_the_counts_key_follows_the_prompt_and_the_features(
    essays, tmp_path, fresh, monkeypatch
):
    from sklearn_fairaes.features import _interpretable

    seen = [0]
    real = _interpretable.tokenize_essay

    def counting(text):
        seen[0] += 1
        return real(text)

    monkeypatch.setattr(_interpretable, "tokenize_essay", counting)
    folder = tmp_path / "cache"
    texts, y = essays

    def run(prompt, features, cache=folder):
        feats = InterpretableFeatures(prompt=prompt, features=features, cache=cache)
        return feats.fit_transform(texts, y)

    plain = ["word_count", "unique_words", "prompt_overlap"]
    first = run("Write about patience and waiting.", plain)
    assert seen[0] == N
    np.testing.assert_array_equal(run("Write about patience and waiting.", plain), first)
    assert seen[0] == N  # read back, not tokenized
    # another prompt, other features: other keys, computed, equal to no cache
    for i, (prompt, features) in enumerate(
        [
            ("Write about a car.", plain),
            ("Write about patience and waiting.", ["word_count", "punctuation_count"]),
        ],
        start=2,
    ):
        got = run(prompt, features)
        assert seen[0] == i * N
        np.testing.assert_array_equal(got, run(prompt, features, cache=None))
        seen[0] -= N  # the uncached reference tokenized them too
    # prompt_similarity_bow depends on its analyzer: never stored
    before = len(_entries(folder))
    bow = ["word_count", "prompt_similarity_bow"]
    run("Write about patience.", bow)
    run("Write about patience.", bow)
    assert len(_entries(folder)) == before
    assert seen[0] == 3 * N + 2 * N
