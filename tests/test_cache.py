import errno
import hashlib
import json
import os
import pickle
import shutil
import warnings
import zlib

import numpy as np
import pytest
from joblib import Parallel, delayed

from sklearn_fairaes.exceptions import CacheCorruptionWarning, CacheWriteWarning
from sklearn_fairaes.text import EmbeddingCache, get_cache

IDENT = {"encoder": "toy", "v": 1}


def _sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def toy_encode(texts):
    return np.array([[len(t), t.count("a"), 1.5] for t in texts], dtype=np.float32)


class Counter:
    def __init__(self):
        self.calls = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return toy_encode(texts)


def test_memory_cache_computes_each_distinct_text_once():
    cache = EmbeddingCache()
    enc = Counter()
    out = cache.get_or_compute(IDENT, ["a", "bb", "a", ""], enc)
    np.testing.assert_array_equal(out, toy_encode(["a", "bb", "a", ""]))
    cache.get_or_compute(IDENT, ["bb", ""], enc)
    assert enc.calls == [["a", "bb", ""]]
    assert cache.stats() == {"hits": 3, "misses": 3, "entries": 3}


def test_memory_is_bounded_in_bytes_least_recently_used_first():
    # one toy vector is 3 float32 = 12 bytes: room for two
    cache = EmbeddingCache(max_bytes=24)
    enc = Counter()
    cache.get_or_compute(IDENT, ["a", "bb"], enc)
    cache.get_or_compute(IDENT, ["a"], enc)  # "a" becomes the most recent
    out = cache.get_or_compute(IDENT, ["ccc"], enc)  # evicts "bb"
    np.testing.assert_array_equal(out, toy_encode(["ccc"]))
    assert cache.stats()["entries"] == 2
    cache.get_or_compute(IDENT, ["a", "bb"], enc)
    assert enc.calls == [["a", "bb"], ["ccc"], ["bb"]]
    assert pickle.loads(pickle.dumps(cache)).max_bytes == 24


def test_process_wide_cache_is_bounded_and_off_by_default():
    import inspect

    from sklearn_fairaes import InterpretableFeatures, LaserEncoder, SentenceBertEncoder

    assert get_cache(True).max_bytes == 256 * 2**20
    for est in (SentenceBertEncoder, LaserEncoder, InterpretableFeatures):
        assert inspect.signature(est).parameters["cache"].default is None, est


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1GB"])
def test_max_bytes_must_be_a_byte_count(bad):
    with pytest.raises(ValueError, match="max_bytes must be None or an int >= 0"):
        EmbeddingCache(max_bytes=bad)


def test_identity_separates_encoders():
    cache = EmbeddingCache()
    enc = Counter()
    cache.get_or_compute(IDENT, ["a"], enc)
    cache.get_or_compute({**IDENT, "v": 2}, ["a"], enc)
    assert len(enc.calls) == 2


def test_disk_cache_survives_new_process_object(tmp_path):
    enc = Counter()
    EmbeddingCache(tmp_path).get_or_compute(IDENT, ["abc", "x"], enc)
    fresh = EmbeddingCache(tmp_path)
    out = fresh.get_or_compute(IDENT, ["x", "abc"], enc)
    np.testing.assert_array_equal(out, toy_encode(["x", "abc"]))
    assert len(enc.calls) == 1 and fresh.hits == 2
    files = sorted(tmp_path.rglob("*.npy"))
    assert len(files) == 2
    # plain .npy, loadable without pickle: one record holding the text's hash
    # and a float32 vector, in a file named after the text's hash
    for file in files:
        rec = np.load(file, allow_pickle=False)
        text = {_sha(t): t for t in ("abc", "x")}[file.stem]
        assert rec["text_sha256"].item().decode() == file.stem
        assert rec["vector"].dtype == np.float32 and rec["vector"].shape == (3,)
        np.testing.assert_array_equal(rec["vector"], toy_encode([text])[0])


# "empty" and "zeros": what a power cut can leave of an entry the kernel had
# not written back yet (entries are published without fsync)
@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip", "empty", "zeros"])
def test_corrupt_entry_is_warned_and_recomputed(tmp_path, damage):
    EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)
    (file,) = list(tmp_path.rglob("*.npy"))
    raw = file.read_bytes()
    if damage == "truncate":
        file.write_bytes(raw[: len(raw) - 5])
    elif damage == "empty":
        file.write_bytes(b"")
    elif damage == "zeros":
        file.write_bytes(bytes(len(raw)))
    elif damage == "garbage":
        file.write_bytes(b"not a numpy file")
    else:  # same size, one data byte changed: only the checksum notices
        file.write_bytes(raw[:-1] + bytes([raw[-1] ^ 0xFF]))
    enc = Counter()
    fresh = EmbeddingCache(tmp_path)
    with pytest.warns(CacheCorruptionWarning, match=r"is corrupt \(.+\); it is removed"):
        out = fresh.get_or_compute(IDENT, ["hello"], enc)
    assert fresh.corrupt == 1
    np.testing.assert_array_equal(out, toy_encode(["hello"]))
    assert enc.calls == [["hello"]]
    # the bad file was replaced by a good one
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)


def test_wrong_dimension_entry_is_rejected(tmp_path):
    EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)
    with pytest.warns(CacheCorruptionWarning, match=r"has shape \(3,\), not \(4,\)"):
        out = EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode, dim=4)
    # recomputed by the encoder, which still says 3: the caller sees the encoder's truth
    assert out.shape == (1, 3)


def _write_many(path, texts):
    cache = EmbeddingCache(path)
    cache.get_or_compute(IDENT, texts, toy_encode)
    return os.getpid()


def test_concurrent_writers_processes(tmp_path):
    texts = [f"essay {i} " + "a" * (i % 7) for i in range(200)]
    Parallel(n_jobs=2, backend="loky")(
        delayed(_write_many)(tmp_path, texts[k::3] + texts[:50]) for k in range(6)
    )
    assert not list(tmp_path.rglob("*.tmp"))
    fresh = EmbeddingCache(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fresh.get_or_compute(IDENT, texts, lambda t: pytest.fail("recomputed"))
    np.testing.assert_array_equal(out, toy_encode(texts))


def test_get_cache_registry(tmp_path):
    assert get_cache(True) is get_cache(True)
    assert get_cache(str(tmp_path)) is get_cache(tmp_path)
    assert get_cache(None) is None and get_cache(False) is None
    own = EmbeddingCache()
    assert get_cache(own) is own
    with pytest.raises(TypeError, match="cache must be None, True, a folder path"):
        get_cache(3)


def test_encoder_refuses_a_cache_lookalike_in_fit():
    # transform's get_cache accepts only the documented types, so fit must too
    from sklearn_fairaes import SentenceBertEncoder

    class LooksLikeACache:
        def get_or_compute(self, identity, texts, encode, dim=None):
            return encode(texts)

    with pytest.raises(TypeError, match="cache must be None, True, a folder path"):
        SentenceBertEncoder(cache=LooksLikeACache()).fit(["an essay"])


def test_pickle_ships_location_not_entries(tmp_path):
    import pickle

    cache = EmbeddingCache(tmp_path)
    cache.get_or_compute(IDENT, ["a"], toy_encode)
    again = pickle.loads(pickle.dumps(cache))
    assert again.path == cache.path and again.stats()["entries"] == 0


def test_clone_shares_the_cache_object():
    from sklearn.base import clone

    from sklearn_fairaes import SentenceBertEncoder

    cache = EmbeddingCache()
    assert clone(SentenceBertEncoder(cache=cache)).cache is cache


# ---------------------------------------------------------------------------
# entry integrity: each entry carries its key; vectors are finite float32 (dim,)
# ---------------------------------------------------------------------------
def _entry(tmp_path, text):
    (file,) = [f for f in tmp_path.rglob("*.npy") if f.stem == _sha(text)]
    return file


def _rewrite(file, vector):
    """Replace an entry's vector by ``vector``, with a matching checksum."""
    rec = np.load(file, allow_pickle=False)
    vector = np.asarray(vector)
    dtype = np.dtype(
        [(n, rec.dtype[n]) for n in ("key", "text_sha256", "crc32")]
        + [("vector", vector.dtype, vector.shape)]
    )
    new = np.zeros((), dtype=dtype)
    for name in ("key", "text_sha256"):
        new[name] = rec[name]
    new["vector"] = vector
    new["crc32"] = zlib.crc32(vector.tobytes())
    with open(file, "wb") as fh:
        np.save(fh, new, allow_pickle=False)


def test_another_essays_entry_under_this_name_is_detected(tmp_path):
    EmbeddingCache(tmp_path).get_or_compute(IDENT, ["an essay", "another one"], toy_encode)
    # the first essay's complete, self-consistent entry copied onto the second's name
    shutil.copyfile(_entry(tmp_path, "an essay"), _entry(tmp_path, "another one"))
    enc = Counter()
    fresh = EmbeddingCache(tmp_path)
    with pytest.warns(CacheCorruptionWarning, match="holds another text's vector"):
        out = fresh.get_or_compute(IDENT, ["another one", "an essay"], enc)
    np.testing.assert_array_equal(out, toy_encode(["another one", "an essay"]))
    assert enc.calls == [["another one"]] and fresh.corrupt == 1
    assert fresh.stats() == {"hits": 1, "misses": 1, "entries": 2}


def test_entry_of_another_encoder_is_detected(tmp_path):
    EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)
    (folder,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    other = {**IDENT, "v": 2}
    EmbeddingCache(tmp_path).get_or_compute(other, ["hello"], lambda t: toy_encode(t) + 1)
    (other_folder,) = [d for d in tmp_path.iterdir() if d.is_dir() and d != folder]
    # the other encoder's entry for the same text, moved into this encoder's folder
    rel = _entry(tmp_path / other_folder.name, "hello").relative_to(other_folder)
    shutil.copyfile(other_folder / rel, folder / rel)
    with pytest.warns(CacheCorruptionWarning, match="written for another key"):
        out = EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)
    np.testing.assert_array_equal(out, toy_encode(["hello"]))


@pytest.mark.parametrize(
    ("vector", "problem"),
    [
        (np.full(3, np.nan, dtype="<f4"), "holds NaN or infinite values"),
        (np.array([5.0, 1.0, np.inf], dtype="<f4"), "holds NaN or infinite values"),
        (np.array([5.0, 1.0, 1.5], dtype="<f8"), "has dtype float64, not float32"),
        (np.array([5.0, 1.0, 1.5, 0.0], dtype="<f4"), r"has shape \(4,\), not \(3,\)"),
        (np.array([[5.0, 1.0, 1.5]], dtype="<f4"), r"has shape \(1, 3\), not \(3,\)"),
    ],
    ids=["nan", "inf", "float64", "length", "2d"],
)
def test_bad_vector_with_valid_checksum_is_refused(tmp_path, vector, problem):
    EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)
    _rewrite(_entry(tmp_path, "hello"), vector)
    fresh = EmbeddingCache(tmp_path)
    with pytest.warns(CacheCorruptionWarning, match=problem):
        out = fresh.get_or_compute(IDENT, ["hello"], toy_encode, dim=3)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, toy_encode(["hello"]))
    assert fresh.corrupt == 1
    # recomputed and rewritten: the next reader is served without a warning
    again = EmbeddingCache(tmp_path)
    np.testing.assert_array_equal(
        again.get_or_compute(IDENT, ["hello"], lambda t: pytest.fail("recomputed")),
        toy_encode(["hello"]),
    )


def test_plain_vector_file_of_the_old_layout_is_refused(tmp_path):
    EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)
    file = _entry(tmp_path, "hello")
    np.save(file, np.array([5.0, 1.0, 1.5]), allow_pickle=False)  # float64, no key
    with pytest.warns(CacheCorruptionWarning, match="not an entry of this cache format"):
        EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)


def test_encoder_returning_nan_is_refused_and_nothing_cached(tmp_path):
    def broken(texts):
        out = toy_encode(texts)
        out[1, 0] = np.nan
        return out

    cache = EmbeddingCache(tmp_path)
    with pytest.raises(RuntimeError, match="NaN or infinite values .* for 1 of 2 texts"):
        cache.get_or_compute(IDENT, ["a", "b"], broken)
    assert not list(tmp_path.rglob("*.npy")) and cache.stats()["entries"] == 0


def test_float64_encoder_output_is_stored_and_served_as_float32(tmp_path):
    def encode64(texts):
        return np.array([[1 / 3, len(t), 0.1] for t in texts], dtype=np.float64)

    first = EmbeddingCache(tmp_path).get_or_compute(IDENT, ["x"], encode64)
    again = EmbeddingCache(tmp_path).get_or_compute(IDENT, ["x"], encode64)
    assert first.dtype == again.dtype == np.float32
    np.testing.assert_array_equal(first, again)  # same bits from memory and disk
    np.testing.assert_array_equal(first, np.float32([[1 / 3, 1, 0.1]]))


# ---------------------------------------------------------------------------
# one canonical entry per key: the first writer wins, every reader reads it
# ---------------------------------------------------------------------------
def test_first_writer_wins_and_later_runs_serve_it(tmp_path):
    # two workers embed the same essay; their vectors differ by rounding (as
    # Sentence-BERT's do between batch sizes). Worker B looked in the cache before
    # worker A published, so B computes too, then loses the publication.
    a, b = EmbeddingCache(tmp_path), EmbeddingCache(tmp_path)
    vec_a = toy_encode(["essay"])
    vec_b = vec_a + np.float32(1e-6)

    def b_encode(texts):
        a.get_or_compute(IDENT, texts, lambda t: vec_a)  # A publishes meanwhile
        return vec_b

    out_b = b.get_or_compute(IDENT, ["essay"], b_encode)
    np.testing.assert_array_equal(out_b, vec_a)  # B serves the winner's vector
    assert len(list(tmp_path.rglob("*.npy"))) == 1
    assert not list(tmp_path.rglob("*.tmp"))
    for _ in range(3):  # and so does every later run, whatever it would compute
        later = EmbeddingCache(tmp_path).get_or_compute(IDENT, ["essay"], lambda t: vec_b)
        np.testing.assert_array_equal(later, vec_a)
    # in-process too: B's memory holds the winner's vector
    np.testing.assert_array_equal(b.get_or_compute(IDENT, ["essay"], b_encode), vec_a)


def test_published_entry_is_never_replaced(tmp_path):
    a = EmbeddingCache(tmp_path)
    a.get_or_compute(IDENT, ["essay"], toy_encode)
    file = _entry(tmp_path, "essay")
    before = (file.read_bytes(), os.stat(file).st_ino)
    # another cache object that has not seen the entry writes the same key
    b = EmbeddingCache(tmp_path)
    b._memory.clear()
    b._store(*_store_args(b, "essay", toy_encode(["essay"])[0] + 1))
    assert (file.read_bytes(), os.stat(file).st_ino) == before


def _store_args(cache, text, vec):
    from sklearn_fairaes.text._cache import entry_key, identity_digest

    ident_hex = identity_digest(IDENT)
    return ident_hex[:24], entry_key(ident_hex, _sha(text)), _sha(text), vec, IDENT


# ---------------------------------------------------------------------------
# read-only folders: reads work, writes warn once, memory keeps working
# ---------------------------------------------------------------------------
@pytest.fixture
def read_only_fs(monkeypatch):
    """Make every write under a folder fail as on a read-only mount (EROFS).

    Tests run as root, where chmod does not stop writes; this refuses them at
    the system calls the cache uses to create files and folders, while reads go
    through unchanged.
    """
    roots = []
    real_open, real_mkdir = os.open, os.mkdir

    def under(path):
        path = os.path.abspath(path)
        return any(path == r or path.startswith(r + os.sep) for r in roots)

    def fake_open(path, flags, *args, **kwargs):
        if under(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    def fake_mkdir(path, *args, **kwargs):
        if under(path):
            if os.path.isdir(path):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    return lambda folder: roots.append(os.path.abspath(folder))


def test_read_only_folder_reads_and_warns_once_for_writes(tmp_path, read_only_fs):
    EmbeddingCache(tmp_path).get_or_compute(IDENT, ["old one", "old two"], toy_encode)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    read_only_fs(tmp_path)
    enc = Counter()
    cache = EmbeddingCache(tmp_path)
    with pytest.warns(
        CacheWriteWarning, match="cannot be written .*Read-only file system"
    ) as rec:
        # "zz..." texts land in shard folders that do not exist (mkdir refused);
        # "new" may land in an existing one (file creation refused)
        out = cache.get_or_compute(IDENT, ["old one", "new", "zz new", "old two"], enc)
        cache.get_or_compute(IDENT, ["another new one"], enc)
    assert len(rec) == 1  # once per cache object
    np.testing.assert_array_equal(out, toy_encode(["old one", "new", "zz new", "old two"]))
    assert enc.calls == [["new", "zz new"], ["another new one"]]
    # the in-memory path keeps serving what could not be written
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = cache.get_or_compute(IDENT, ["new", "zz new", "old two"], enc)
    np.testing.assert_array_equal(again, toy_encode(["new", "zz new", "old two"]))
    assert len(enc.calls) == 2
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    # another cache object on the folder (another process) warns once too
    with pytest.warns(CacheWriteWarning, match="kept in memory only"):
        EmbeddingCache(tmp_path).get_or_compute(IDENT, ["yet another"], toy_encode)


def test_read_only_parent_of_a_new_cache_folder(tmp_path, read_only_fs):
    read_only_fs(tmp_path)
    cache = EmbeddingCache(tmp_path / "never-created")
    read_only_fs(tmp_path / "never-created")
    with pytest.warns(CacheWriteWarning, match="never-created cannot be written"):
        out = cache.get_or_compute(IDENT, ["a", "b"], toy_encode)
    np.testing.assert_array_equal(out, toy_encode(["a", "b"]))
    assert not (tmp_path / "never-created").exists()


# ---------------------------------------------------------------------------
# Sentence-BERT: the key follows the model folder's content
# ---------------------------------------------------------------------------
ESSAYS = [
    "I waited patiently for the bus in the rain.",
    "Patience is a virtue that my grandmother taught me.",
    "Plants need light to grow.",
]


@pytest.fixture
def minilm_copy(minilm, tmp_path):
    from sklearn_fairaes.resources import resolve_sbert_model

    folder = tmp_path / "model"
    shutil.copytree(resolve_sbert_model(minilm), folder)
    return folder


def _direct(folder, texts):
    """The reference: sentence-transformers itself, on a fresh load of the folder."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(
        texts, convert_to_numpy=True
    )


def test_edited_model_folder_is_not_served_old_vectors(minilm_copy, tmp_path):
    from sklearn_fairaes import SentenceBertEncoder

    cache = EmbeddingCache(tmp_path / "cache")
    before = SentenceBertEncoder(minilm_copy, cache=cache).fit(ESSAYS).transform(ESSAYS)
    np.testing.assert_allclose(before, _direct(minilm_copy, ESSAYS), atol=1e-5)
    pooling = minilm_copy / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    assert config["pooling_mode_mean_tokens"] is True
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    old = os.stat(pooling)
    pooling.write_text(json.dumps(config))
    # same size; a later modification time, as a real edit would have
    os.utime(pooling, ns=(old.st_atime_ns, old.st_mtime_ns + 10**9))

    after = SentenceBertEncoder(minilm_copy, cache=cache).fit(ESSAYS).transform(ESSAYS)
    cls_ref = _direct(minilm_copy, ESSAYS)
    assert np.abs(cls_ref - before).max() > 0.1  # the edit changes the vectors
    np.testing.assert_allclose(after, cls_ref, atol=1e-5)
    assert cache.hits == 0 and cache.misses == 2 * len(ESSAYS)


def test_same_model_in_another_folder_shares_the_key(minilm, minilm_copy, tmp_path):
    from sklearn_fairaes import SentenceBertEncoder

    cache = EmbeddingCache(tmp_path / "cache")
    first = SentenceBertEncoder(minilm, cache=cache).fit(ESSAYS).transform(ESSAYS)
    # batch size and device change only the rounding: not part of the key
    other = SentenceBertEncoder(minilm_copy, batch_size=1, device="cpu", cache=cache)
    np.testing.assert_array_equal(other.fit(ESSAYS).transform(ESSAYS), first)
    assert cache.hits == len(ESSAYS)
    normed = SentenceBertEncoder(minilm_copy, normalize_embeddings=True, cache=cache)
    normed.fit(ESSAYS).transform(ESSAYS)
    assert cache.misses == 2 * len(ESSAYS)


@pytest.fixture
def hub_cache(minilm, tmp_path, monkeypatch):
    """A Hugging Face cache holding a copy of MiniLM as hub model ``fairaes-test/minilm``.

    Laid out as ``huggingface_hub`` lays out a download (``refs/main`` naming a
    snapshot folder), read with the hub switched to offline mode.
    """
    import huggingface_hub.constants

    from sklearn_fairaes.resources import resolve_sbert_model

    repo = tmp_path / "hub" / "models--fairaes-test--minilm"
    snapshot = repo / "snapshots" / ("0" * 40)
    shutil.copytree(resolve_sbert_model(minilm), snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return snapshot


def test_hub_model_is_fingerprinted_from_its_snapshot(hub_cache):
    from sklearn_fairaes import SentenceBertEncoder

    enc = SentenceBertEncoder("fairaes-test/minilm", cache=EmbeddingCache())
    files = enc.fit(ESSAYS)._identity()["model_files"]
    for name in ("model.safetensors", "1_Pooling/config.json", "tokenizer.json"):
        assert files[name] == hashlib.sha256((hub_cache / name).read_bytes()).hexdigest()
    assert "README.md" not in files


def test_model_without_files_is_fingerprinted_from_memory(minilm_copy, monkeypatch):
    # a model whose folder cannot be found (say, a hub model the library stores
    # elsewhere) is keyed by what was loaded: its parameters and each module's
    # configuration, pooling included
    from sklearn_fairaes import SentenceBertEncoder
    from sklearn_fairaes.text import _sbert

    monkeypatch.setattr(_sbert, "_resolved_folder", lambda spec: None)
    same = minilm_copy.parent / "same"
    shutil.copytree(minilm_copy, same)
    cls = minilm_copy.parent / "cls"
    shutil.copytree(minilm_copy, cls)
    pooling = cls / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))
    keys = [
        SentenceBertEncoder(folder).fit(ESSAYS)._identity()["model_files"]
        for folder in (minilm_copy, same, cls)
    ]
    assert list(keys[0]) == ["loaded"]
    assert keys[0] == keys[1]  # the same model, loaded twice
    assert keys[0] != keys[2]  # another pooling
