import os
import warnings

import numpy as np
import pytest
from joblib import Parallel, delayed

from sklearn_fairaes.exceptions import CacheCorruptionWarning
from sklearn_fairaes.text import EmbeddingCache, get_cache

IDENT = {"encoder": "toy", "v": 1}


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
    files = list(tmp_path.rglob("*.npy"))
    assert len(files) == 2
    # plain .npy, loadable without pickle
    assert np.load(files[0], allow_pickle=False).shape == (3,)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip"])
def test_corrupt_entry_is_warned_and_recomputed(tmp_path, damage):
    EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)
    (file,) = list(tmp_path.rglob("*.npy"))
    raw = file.read_bytes()
    if damage == "truncate":
        file.write_bytes(raw[: len(raw) - 5])
    elif damage == "garbage":
        file.write_bytes(b"not a numpy file")
    else:  # same size, one data byte changed: only the checksum notices
        file.write_bytes(raw[:-1] + bytes([raw[-1] ^ 0xFF]))
    enc = Counter()
    with pytest.warns(CacheCorruptionWarning, match="corrupt or truncated"):
        out = EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], enc)
    np.testing.assert_array_equal(out, toy_encode(["hello"]))
    assert enc.calls == [["hello"]]
    # the bad file was replaced by a good one
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)


def test_wrong_dimension_entry_is_rejected(tmp_path):
    EmbeddingCache(tmp_path).get_or_compute(IDENT, ["hello"], toy_encode)
    with pytest.warns(CacheCorruptionWarning):
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
