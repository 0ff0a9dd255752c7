"""LaserEncoder on a tiny random LASER model, through laserembeddings' real code path."""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np
import pytest
from conftest import require_module
from hypothesis import given, settings
from hypothesis import strategies as st
from laser_tiny import write_tiny_laser
from sklearn.base import clone

from sklearn_fairaes.resources import LASER_FILES, ResourceNotFoundError
from sklearn_fairaes.text import (
    EmbeddingCache,
    LaserEncoder,
    get_cache,
    load_laser,
    split_sentences,
)

require_module("laserembeddings", "laser")

ESSAYS = [
    "The cat and the dog played in the garden. Then they slept!",
    "I think computers are good for the community, because they help us learn.",
    "",
    "Dr. Smith said it was 3.5 degrees. Was he right? I do not know...",
    "Zebras wander. Über-strange input with ünïcode and numbers 12345.",
]


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("laser_tiny")
    write_tiny_laser(folder, seed=0)
    return folder


@pytest.fixture(scope="session")
def direct(tiny_dir):
    """laserembeddings' own Laser object on the tiny files, loaded independently."""
    from laserembeddings import Laser

    return Laser(
        bpe_codes=str(tiny_dir / LASER_FILES["bpe_codes"]),
        bpe_vocab=str(tiny_dir / LASER_FILES["bpe_vocab"]),
        encoder=str(tiny_dir / LASER_FILES["encoder"]),
        embedding_options={"cpu": True},
    )


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    # the tiny model's matrices are so small that a second OpenMP thread only
    # adds synchronisation, which on a loaded 2-core machine costs seconds per call
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _no_laser_env(monkeypatch):
    monkeypatch.delenv("LASER_MODELS_DIR", raising=False)
    monkeypatch.delenv("FAIRAES_LASER_DIR", raising=False)


def _direct_embed(laser, texts):
    return np.asarray(laser.embed_sentences(list(texts), lang="en"))


# ---------------------------------------------------------------------------
# agreement with laserembeddings
# ---------------------------------------------------------------------------
def test_matches_laserembeddings(tiny_dir, direct):
    enc = LaserEncoder(model_dir=tiny_dir, cache=None).fit(ESSAYS)
    out = enc.transform(ESSAYS)
    ref = _direct_embed(direct, ESSAYS)
    assert out.shape == (len(ESSAYS), 12) == ref.shape
    assert enc.embedding_dim_ == 12
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5)
    # random weights give distinct vectors: the comparison is not vacuous
    assert np.abs(out[0] - out[1]).max() > 1e-3
    assert enc.model_files_ == {k: str(tiny_dir / v) for k, v in LASER_FILES.items()}


def test_each_essay_alone_equals_batch(tiny_dir, direct):
    enc = LaserEncoder(model_dir=tiny_dir, cache=None).fit(ESSAYS)
    batch = enc.transform(ESSAYS)
    for i, essay in enumerate(ESSAYS):
        np.testing.assert_allclose(
            batch[i], _direct_embed(direct, [essay])[0], rtol=0, atol=1e-5
        )


def test_model_loaded_once_per_process(tiny_dir):
    enc = LaserEncoder(model_dir=tiny_dir).fit(["x"])
    shared = load_laser(tiny_dir)
    assert clone(enc).fit(["y"])._laser() is enc._laser() is shared
    assert load_laser(tiny_dir, max_tokens=50) is not shared


def test_deterministic_and_max_tokens_only_batches(tiny_dir):
    a = LaserEncoder(model_dir=tiny_dir, cache=None).fit(ESSAYS).transform(ESSAYS)
    b = LaserEncoder(model_dir=tiny_dir, cache=None).fit(ESSAYS).transform(ESSAYS)
    np.testing.assert_array_equal(a, b)
    # one BiLSTM batch per essay: same vectors up to rounding
    small = LaserEncoder(model_dir=tiny_dir, max_tokens=1, cache=None).fit(ESSAYS)
    np.testing.assert_allclose(small.transform(ESSAYS), a, rtol=0, atol=1e-5)


def test_long_essay_is_not_truncated(tiny_dir, direct):
    head = "the cat sat on the mat. "
    long_essay = head * 200 + "finally the dog barked loudly!"
    enc = LaserEncoder(model_dir=tiny_dir, cache=None).fit([long_essay])
    out = enc.transform([long_essay, head * 200])
    np.testing.assert_allclose(
        out, _direct_embed(direct, [long_essay, head * 200]), rtol=0, atol=1e-5
    )
    # the ending after the first 200 sentences changes the vector
    assert np.abs(out[0] - out[1]).max() > 1e-4


def test_empty_and_blank_essays(tiny_dir, direct):
    empty = _direct_embed(direct, [""])[0]
    for pooling in ("essay", "sentence_mean"):
        enc = LaserEncoder(model_dir=tiny_dir, pooling=pooling, cache=None).fit([""])
        out = enc.transform(["", "   \n\n  "])
        np.testing.assert_allclose(out, np.vstack([empty, empty]), rtol=0, atol=1e-6)
    assert enc.transform([]).shape == (0, 12)


# ---------------------------------------------------------------------------
# sentence_mean pooling and the splitter
# ---------------------------------------------------------------------------
def test_sentence_mean_is_mean_of_sentence_vectors(tiny_dir, direct):
    enc = LaserEncoder(model_dir=tiny_dir, pooling="sentence_mean", cache=None).fit(ESSAYS)
    out = enc.transform(ESSAYS)
    for i, essay in enumerate(ESSAYS):
        sentences = split_sentences(essay)
        ref = np.mean([_direct_embed(direct, [s])[0] for s in sentences], axis=0)
        np.testing.assert_allclose(out[i], ref, rtol=0, atol=1e-5)
    assert len(split_sentences(ESSAYS[0])) == 2
    # two sentences averaged differ from the essay read as one input
    whole = LaserEncoder(model_dir=tiny_dir, cache=None).fit(ESSAYS).transform(ESSAYS[:1])
    assert np.abs(whole[0] - out[0]).max() > 1e-4


@pytest.mark.parametrize(
    "text, expected",
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        (
            "Dr. Smith met Mrs. Jones. They talked.",
            ["Dr. Smith met Mrs. Jones.", "They talked."],
        ),
        ("J. K. Rowling wrote it. i liked it.", ["J. K. Rowling wrote it.", "i liked it."]),
        ("My friend and I. Then we left.", ["My friend and I.", "Then we left."]),
        ("It was 3.5 km. Far!", ["It was 3.5 km.", "Far!"]),
        ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
        ("Use tools, e.g. hammers. Fine", ["Use tools, e.g. hammers.", "Fine"]),
        ("What?! Really... yes", ["What?!", "Really...", "yes"]),
        (
            "First line\nsame sentence\n\nNew paragraph",
            ["First line\nsame sentence", "New paragraph"],
        ),
        ("no final punctuation", ["no final punctuation"]),
        ("", [""]),
        (" \n\t ", [""]),
    ],
)
def test_split_sentences_examples(text, expected):
    assert split_sentences(text) == expected


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab .!?\n\"'DrJ", max_size=60))
def test_split_sentences_keeps_every_character(text):
    sentences = split_sentences(text)
    assert sentences
    assert all(s == s.strip() for s in sentences)
    assert "".join("".join(sentences).split()) == "".join(text.split())


def test_split_sentences_rejects_non_str():
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        split_sentences(b"bytes")


# ---------------------------------------------------------------------------
# cache
# ---------------------------------------------------------------------------
def test_memory_cache_hits_shared_by_clones(tiny_dir):
    # the process-wide cache (cache=True) is shared with other tests: count deltas
    essays = [f"{essay} (memory cache test)" for essay in ESSAYS]
    shared = get_cache(True)
    hits, misses = shared.hits, shared.misses
    enc = LaserEncoder(model_dir=tiny_dir, cache=True).fit(essays)
    first = enc.transform(essays)
    assert (shared.hits - hits, shared.misses - misses) == (0, len(essays))
    second = clone(enc).fit(essays).transform(essays[::-1] + essays[:1])
    assert (shared.hits - hits, shared.misses - misses) == (len(essays) + 1, len(essays))
    np.testing.assert_array_equal(second, np.vstack([first[::-1], first[:1]]))


def test_default_keeps_nothing_in_process_wide_state(tiny_dir):
    # sklearn estimators keep no state outside themselves: caching is opt-in
    shared = get_cache(True)
    before = shared.stats()
    essays = [f"{essay} (default cache test)" for essay in ESSAYS]
    enc = LaserEncoder(model_dir=tiny_dir).fit(essays)
    enc.transform(essays)
    assert shared.stats() == before


def test_explicit_cache_object(tiny_dir, direct):
    cache = EmbeddingCache()
    enc = LaserEncoder(model_dir=tiny_dir, cache=cache).fit(ESSAYS)
    out = enc.transform(ESSAYS + ESSAYS[:2])
    assert cache.stats() == {"hits": 2, "misses": len(ESSAYS), "entries": len(ESSAYS)}
    enc.transform(ESSAYS[:3])
    assert cache.stats()["hits"] == 5
    np.testing.assert_allclose(
        out[: len(ESSAYS)], _direct_embed(direct, ESSAYS), rtol=0, atol=1e-5
    )


def test_disk_cache_shared_by_clone_and_new_process(tiny_dir, tmp_path, monkeypatch):
    enc = LaserEncoder(model_dir=tiny_dir, cache=tmp_path).fit(ESSAYS)
    first = enc.transform(ESSAYS)
    shared = get_cache(tmp_path)
    assert shared.stats()["misses"] == len(ESSAYS)
    assert len(list(tmp_path.glob("*/*/*.npy"))) == len(ESSAYS)
    np.testing.assert_array_equal(clone(enc).fit(ESSAYS).transform(ESSAYS), first)
    assert shared.stats()["hits"] == len(ESSAYS)

    # a fresh cache object on the same folder (another process) reads the files
    fresh = EmbeddingCache(tmp_path)
    other = LaserEncoder(model_dir=tiny_dir, cache=fresh).fit(ESSAYS)

    def fail(texts):
        raise AssertionError(f"re-encoded {len(texts)} texts despite the disk cache")

    monkeypatch.setattr(other, "_encode", fail)
    np.testing.assert_array_equal(other.transform(ESSAYS), first)
    assert fresh.stats()["hits"] == len(ESSAYS)


def test_identity_follows_file_content(tiny_dir, tmp_path):
    base = LaserEncoder(model_dir=tiny_dir).fit(["x"])
    write_tiny_laser(tmp_path / "copy", seed=0)
    same = LaserEncoder(model_dir=tmp_path / "copy").fit(["x"])
    other_dir = tmp_path / "other"
    write_tiny_laser(other_dir, seed=1)
    other = LaserEncoder(model_dir=other_dir).fit(["x"])
    # identical files in another folder: same key, so a disk cache moves between machines
    assert same._identity() == base._identity()
    assert other._identity() != base._identity()
    assert (
        LaserEncoder(model_dir=tiny_dir, lang="fr").fit(["x"])._identity()
        != base._identity()
    )
    assert (
        LaserEncoder(model_dir=tiny_dir, pooling="sentence_mean").fit(["x"])._identity()
        != base._identity()
    )
    assert base._identity()["files"]["encoder"]["size"] > 0


def test_rewritten_weights_are_not_served_from_cache(tmp_path):
    folder = tmp_path / "model"
    files = write_tiny_laser(folder, seed=0)
    cache = EmbeddingCache()
    enc = LaserEncoder(model_dir=folder, cache=cache).fit(ESSAYS)
    before = enc.transform(ESSAYS)
    old = os.stat(files["encoder"])
    write_tiny_laser(folder, seed=7)
    # file timestamps are coarse (a few ms): make sure the rewrite is visible
    os.utime(files["encoder"], ns=(old.st_atime_ns, old.st_mtime_ns + 10**9))
    after = enc.transform(ESSAYS)
    assert cache.stats()["hits"] == 0
    assert np.abs(after - before).max() > 1e-3
    fresh = LaserEncoder(model_dir=folder, cache=None).fit(ESSAYS).transform(ESSAYS)
    np.testing.assert_allclose(after, fresh, rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------
# resources and parameters
# ---------------------------------------------------------------------------
def test_model_dir_from_environment(tiny_dir, monkeypatch, direct):
    monkeypatch.setenv("LASER_MODELS_DIR", str(tiny_dir))
    enc = LaserEncoder(cache=None).fit(ESSAYS)
    assert enc.model_files_["encoder"] == str(tiny_dir / LASER_FILES["encoder"])
    np.testing.assert_allclose(
        enc.transform(ESSAYS), _direct_embed(direct, ESSAYS), rtol=0, atol=1e-5
    )


@pytest.mark.skipif(
    os.path.isfile(
        os.path.join(
            os.path.dirname(__import__("laserembeddings").__file__),
            "data",
            LASER_FILES["encoder"],
        )
    ),
    reason="real LASER weights are installed in laserembeddings' data folder",
)
def test_missing_files_raise_with_download_command(tmp_path, tiny_dir):
    with pytest.raises(ResourceNotFoundError, match="download-models"):
        LaserEncoder(model_dir=tmp_path).fit(["x"])
    (tmp_path / LASER_FILES["bpe_codes"]).write_bytes(
        (tiny_dir / LASER_FILES["bpe_codes"]).read_bytes()
    )
    with pytest.raises(ResourceNotFoundError, match=r"bilstm\.93langs.*download-models"):
        LaserEncoder(model_dir=tmp_path).fit(["x"])


def test_file_removed_after_fit(tmp_path):
    write_tiny_laser(tmp_path, seed=3)
    enc = LaserEncoder(model_dir=tmp_path, cache=None).fit(["x"])
    os.remove(tmp_path / LASER_FILES["bpe_vocab"])
    with pytest.raises(ResourceNotFoundError, match="93langs.fvocab.*call fit again"):
        enc.transform(["x"])


def test_missing_package_names_extra(tiny_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "laserembeddings", None)
    with pytest.raises(ImportError, match=r"sklearn-fairaes\[laser\]"):
        LaserEncoder(model_dir=tiny_dir).fit(["x"])


@pytest.mark.parametrize(
    "params, error, match",
    [
        (
            {"pooling": "max"},
            ValueError,
            r"'pooling' parameter of LaserEncoder must be a str among \['essay', "
            r"'sentence_mean'\]. Got 'max'",
        ),
        ({"lang": ""}, ValueError, "lang must be a language code"),
        ({"lang": None}, ValueError, "lang must be a language code"),
        ({"max_tokens": 0}, ValueError, r"'max_tokens' parameter .* range \[1, inf\)"),
        ({"max_tokens": True}, ValueError, r"'max_tokens' parameter .* range \[1, inf\)"),
        ({"model_dir": 3}, TypeError, "model_dir must be None or a folder path"),
        ({"cache": 3.5}, TypeError, "cache must be None, True"),
    ],
)
def test_invalid_params_raise_at_fit(tiny_dir, params, error, match):
    enc = LaserEncoder(**{"model_dir": tiny_dir, **params})
    assert enc.get_params()[next(iter(params))] == next(iter(params.values()))
    with pytest.raises(error, match=match):
        enc.fit(["x"])


@pytest.mark.parametrize(
    "bad, error, match",
    [
        (None, ValueError, "position 1 of X is None"),
        (b"bytes", TypeError, "position 1 of X is bytes"),
        (7, TypeError, "position 1 of X is a int"),
    ],
)
def test_bad_entries_name_the_position(tiny_dir, bad, error, match):
    enc = LaserEncoder(model_dir=tiny_dir, cache=None)
    with pytest.raises(error, match=match):
        enc.fit(["ok", bad])
    enc.fit(["ok"])
    with pytest.raises(error, match=match):
        enc.transform(["ok", bad])


def test_transform_before_fit():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="LaserEncoder"):
        LaserEncoder().transform(["x"])


# ---------------------------------------------------------------------------
# sklearn contract
# ---------------------------------------------------------------------------
def test_clone_and_pickle_round_trip(tiny_dir):
    enc = LaserEncoder("en", tiny_dir, pooling="sentence_mean", max_tokens=500, cache=None)
    assert clone(enc).get_params() == enc.get_params()
    enc.fit(ESSAYS)
    out = enc.transform(ESSAYS)
    blob = pickle.dumps(enc)
    assert b"torch" not in blob and len(blob) < 4000
    back = pickle.loads(blob)
    assert back.get_params() == enc.get_params()
    assert back.embedding_dim_ == enc.embedding_dim_
    np.testing.assert_array_equal(back.transform(ESSAYS), out)
    # the fitted clone has only the parameters
    assert not hasattr(clone(enc), "embedding_dim_")


def test_set_output_pandas(tiny_dir):
    pd = require_module("pandas", "report")
    enc = LaserEncoder(model_dir=tiny_dir, cache=None).set_output(transform="pandas")
    frame = enc.fit(ESSAYS).transform(pd.Series(ESSAYS, index=range(10, 15)))
    assert isinstance(frame, pd.DataFrame)
    names = enc.get_feature_names_out()
    assert list(frame.columns) == list(names)
    assert len(names) == 12 and names[0] == "laserencoder0"
    plain = LaserEncoder(model_dir=tiny_dir, cache=None).fit(ESSAYS).transform(ESSAYS)
    np.testing.assert_array_equal(frame.to_numpy(), plain)


def test_fit_transform_does_not_mutate_input(tiny_dir):
    essays = list(ESSAYS)
    LaserEncoder(model_dir=tiny_dir, cache=None).fit_transform(essays)
    assert essays == ESSAYS


# ---------------------------------------------------------------------------
# device
# ---------------------------------------------------------------------------


@pytest.fixture
def no_cuda(monkeypatch):
    """A machine without CUDA, also where there is one (the tests run everywhere)."""
    torch = require_module("torch", "laser")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    return torch


def test_cuda_without_cuda_refused_before_loading(tiny_dir, no_cuda, monkeypatch):
    import sklearn_fairaes.text._laser as laser_mod

    def fail(*args, **kwargs):
        raise AssertionError("the LASER model was loaded although the device is bad")

    monkeypatch.setattr(laser_mod, "_load_files", fail)
    # laserembeddings alone would quietly run on the CPU instead
    with pytest.raises(ValueError, match="'cuda' was asked for LASER embeddings, but CUDA"):
        LaserEncoder(model_dir=tiny_dir, device="cuda").fit(["x"])
    with pytest.raises(ValueError, match="LASER runs on 'cpu' or 'cuda'"):
        LaserEncoder(model_dir=tiny_dir, device="meta").fit(["x"])


def test_device_cpu_same_vectors_and_cache_key(tiny_dir, direct):
    enc = LaserEncoder(model_dir=tiny_dir, device="cpu", cache=None).fit(["x"])
    np.testing.assert_allclose(
        enc.transform(ESSAYS), _direct_embed(direct, ESSAYS), rtol=0, atol=1e-6
    )
    default = LaserEncoder(model_dir=tiny_dir).fit(["x"])
    # the device changes only the rounding: one cache entry per essay
    assert enc._identity() == default._identity()


def test_cuda_device_reaches_laserembeddings(tiny_dir, no_cuda, monkeypatch):
    import sklearn_fairaes.text._laser as laser_mod

    monkeypatch.setattr(no_cuda.cuda, "is_available", lambda: True)
    # the fake models must not stay in (or be served from) the process's models
    monkeypatch.setattr(laser_mod, "_LASERS", {})
    options = []

    class FakeModule:
        @staticmethod
        def Laser(**kwargs):
            options.append(kwargs["embedding_options"])
            return object()

    files = {k: str(tiny_dir / v) for k, v in LASER_FILES.items()}
    laser_mod._load_files(FakeModule, files, 12000, "cuda")
    laser_mod._load_files(FakeModule, files, 12000, None)
    assert options == [
        {"cpu": False, "max_tokens": 12000},
        {"cpu": True, "max_tokens": 12000},
    ]
