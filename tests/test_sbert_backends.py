"""SentenceBertEncoder's torch backends, its lazy model loading and its device checks.

``backend="torch-bf16"`` runs sentence-transformers' own encode on a bfloat16
copy of the model. Tolerance: on the 180 demo essays every vector has cosine
>= 0.999 to the float32 vector of the same essay (the issue asks 0.99;
measured on 300 prompt-7 essays: 0.99992 minimum, 0.99995 mean), and the
vectors are not the float32 ones (a maximum absolute difference above 1e-4,
where float32 runs differ by 1e-7).

The model is loaded at the first essay not in the embedding cache, never at
``fit``: tests patch the loader to fail and check that a fully cached run
still encodes, and that a run with one new essay does call it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import require_module

from sklearn_fairaes import SentenceBertEncoder
from sklearn_fairaes._param_validation import check_device
from sklearn_fairaes.datasets import load_demo_essays
from sklearn_fairaes.exceptions import LongTextWarning
from sklearn_fairaes.resources import resolve_sbert_model
from sklearn_fairaes.text import EmbeddingCache, _sbert, load_sentence_transformer
from sklearn_fairaes.text._cache import identity_digest


@pytest.fixture(scope="module")
def essays():
    return load_demo_essays()["essay"].tolist()


@pytest.fixture(scope="module")
def torch_vectors(minilm, essays):
    # independent reference: sentence-transformers' own encode, float32
    st = load_sentence_transformer(minilm)
    return st.encode(essays, batch_size=32, convert_to_numpy=True)


def _cosines(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# -- torch-bf16 -----------------------------------------------------------------


def test_bf16_close_to_float32_but_not_identical(minilm, essays, torch_vectors):
    enc = SentenceBertEncoder(minilm, backend="torch-bf16", cache=None).fit(essays)
    with pytest.warns(LongTextWarning):  # two demo essays exceed 256 tokens
        vec = enc.transform(essays)
    assert vec.shape == torch_vectors.shape == (180, 384)
    assert vec.dtype == np.float32
    cos = _cosines(vec, torch_vectors)
    assert cos.min() >= 0.999
    assert cos.mean() >= 0.9995
    # bfloat16 for real: float32 runs differ by about 1e-7
    assert np.abs(vec - torch_vectors).max() > 1e-4
    # the shared float32 model is untouched: torch still gives its exact vectors
    again = SentenceBertEncoder(minilm, cache=None).fit(essays[:3])
    exact = again.transform(essays[:3])
    assert np.abs(exact - torch_vectors[:3]).max() < 1e-5


def test_bf16_normalize_and_chunk_mean(minilm, essays):
    kw = {"normalize_embeddings": True, "long_text": "chunk_mean", "cache": None}
    ref = SentenceBertEncoder(minilm, **kw).fit(essays).transform(essays[:40])
    vec = SentenceBertEncoder(minilm, backend="torch-bf16", **kw).fit(essays)
    vec = vec.transform(essays[:40])
    np.testing.assert_allclose(np.linalg.norm(vec, axis=1), 1.0, atol=1e-2)
    assert _cosines(vec, ref).min() >= 0.999


def test_cache_keys_distinct_per_backend_and_torch_key_unchanged(minilm, essays):
    digests = {
        b: identity_digest(SentenceBertEncoder(minilm, backend=b).fit(["x"])._identity())
        for b in ("torch", "torch-bf16")
    }
    assert digests["torch"] != digests["torch-bf16"]
    # float32 torch's key is the one written before the other backends existed
    # (caches filled then stay valid): built here by hand from the files
    folder = Path(resolve_sbert_model(minilm))
    files = {
        "model.safetensors",
        "config.json",
        "config_sentence_transformers.json",
        "modules.json",
        "sentence_bert_config.json",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
        "1_Pooling/config.json",
    }
    by_hand = {
        "encoder": "sentence-transformers",
        "backend": "torch",
        "model_files": {
            f: hashlib.sha256((folder / f).read_bytes()).hexdigest() for f in sorted(files)
        },
        "normalize": False,
        "long_text": "truncate",
        "max_seq_length": 256,
    }
    assert digests["torch"] == identity_digest(by_hand)
    # one shared cache: the bf16 encoder is not served float32 vectors
    cache = EmbeddingCache()
    first = SentenceBertEncoder(minilm, cache=cache).fit(["x"]).transform(essays[:4])
    bf16 = SentenceBertEncoder(minilm, backend="torch-bf16", cache=cache).fit(["x"])
    vec = bf16.transform(essays[:4])
    assert np.abs(vec - first).max() > 1e-4
    assert cache.stats()["misses"] == 8


@pytest.mark.parametrize("bad", ["TORCH", "bf16", "torch_bf16", "onnx_int8", "", None, 1])
def test_bad_backend_refused_listing_the_valid_ones(bad):
    with pytest.raises(
        ValueError, match="'backend' parameter of SentenceBertEncoder must be"
    ) as info:
        SentenceBertEncoder(backend=bad).fit(["an essay"])
    for name in ("'torch'", "'torch-bf16'", "'onnx'", "'onnx-int8'"):
        assert name in str(info.value)


def test_missing_sentence_transformers_names_the_extra(monkeypatch):
    # None in sys.modules makes the import (and find_spec) fail
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    for backend in ("torch", "torch-bf16"):
        with pytest.raises(ImportError, match=r'pip install "sklearn-fairaes\[sbert\]"'):
            SentenceBertEncoder(backend=backend).fit(["an essay"])


# -- lazy loading ---------------------------------------------------------------


def _shape_of_loaded(model):
    st = load_sentence_transformer(model)
    return (_sbert._embedding_dim(st), int(st.max_seq_length))


def test_saved_shape_matches_the_loaded_model(minilm):
    spec = resolve_sbert_model(minilm)
    assert _sbert._saved_shape(spec) == _shape_of_loaded(minilm) == (384, 256)
    mpnet = resolve_sbert_model("all-mpnet-base-v2")
    if os.path.isdir(mpnet):  # an optional second model; MiniLM is checked above
        assert _sbert._saved_shape(mpnet) == _shape_of_loaded(mpnet) == (768, 384)


def _copy_config(src, dst, *, modules=None, pooling=None):
    dst.mkdir()
    (dst / "1_Pooling").mkdir()
    for name in ("modules.json", "sentence_bert_config.json"):
        (dst / name).write_bytes((src / name).read_bytes())
    (dst / "1_Pooling" / "config.json").write_bytes(
        (src / "1_Pooling" / "config.json").read_bytes()
    )
    if modules is not None:
        (dst / "modules.json").write_text(json.dumps(modules))
    if pooling is not None:
        (dst / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return str(dst)


def test_saved_shape_reads_only_what_it_understands(minilm, tmp_path):
    src = Path(resolve_sbert_model(minilm))
    mods = json.loads((src / "modules.json").read_text())
    # sentence-transformers 6's own format: one pooling_mode (or a list of them)
    new = {"embedding_dimension": 384, "pooling_mode": ["mean", "max"]}
    assert _sbert._saved_shape(_copy_config(src, tmp_path / "a", pooling=new)) == (768, 256)
    legacy = {
        "word_embedding_dimension": 384,
        "pooling_mode_cls_token": True,
        "pooling_mode_mean_tokens": True,
    }
    assert _sbert._saved_shape(_copy_config(src, tmp_path / "b", pooling=legacy)) == (
        768,
        256,
    )
    # a Dense layer changes the size: not read from the files, the model is loaded
    dense = [*mods, {"idx": 3, "name": "3", "path": "3_Dense", "type": "x.models.Dense"}]
    assert _sbert._saved_shape(_copy_config(src, tmp_path / "c", modules=dense)) is None
    odd = {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": "yes"}
    assert _sbert._saved_shape(_copy_config(src, tmp_path / "d", pooling=odd)) is None
    assert _sbert._saved_shape("all-MiniLM-L6-v2-not-a-folder") is None


def _failing_loader(*args, **kwargs):
    raise AssertionError(
        "the Sentence-BERT model was loaded although every essay was cached"
    )


def test_all_cached_never_loads_the_model(minilm, essays, monkeypatch):
    cache = EmbeddingCache()
    texts = essays[:6]
    ref = SentenceBertEncoder(minilm, cache=cache).fit(texts).transform(texts)
    for backend in ("torch", "torch-bf16"):
        SentenceBertEncoder(minilm, backend=backend, cache=cache).fit(texts).transform(
            texts
        )
    with monkeypatch.context() as mp:
        mp.setattr(_sbert, "load_sentence_transformer", _failing_loader)
        # not even the one already in memory: a fresh process has none
        mp.setattr(_sbert, "_MODELS", {})
        enc = SentenceBertEncoder(minilm, cache=cache).fit(texts)
        assert (enc.embedding_dim_, enc.max_seq_length_) == (384, 256)
        np.testing.assert_array_equal(enc.transform(texts), ref)
        bf16 = SentenceBertEncoder(minilm, backend="torch-bf16", cache=cache).fit(texts)
        assert bf16.transform(texts).shape == (6, 384)
        # the patch is effective: one essay not in the cache loads the model
        with pytest.raises(AssertionError, match="was loaded although"):
            enc.transform([*texts, "an essay never seen before"])


def test_all_cached_rerun_does_not_import_torch(minilm, essays, tmp_path):
    texts = essays[:5]
    SentenceBertEncoder(minilm, cache=tmp_path).fit(texts).transform(texts)
    code = textwrap.dedent(
        f"""
        import sys
        from sklearn_fairaes import SentenceBertEncoder
        texts = {texts!r}
        enc = SentenceBertEncoder({minilm!r}, cache={str(tmp_path)!r}).fit(texts)
        X = enc.transform(texts)
        print(X.shape, "torch" in sys.modules, "sentence_transformers" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split("\n")[-2] == "(5, 384) False False"


# -- devices --------------------------------------------------------------------


@pytest.fixture
def no_cuda(monkeypatch):
    """A machine without CUDA, also where there is one (the tests run everywhere)."""
    torch = require_module("torch", "sbert")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    return torch


def test_cuda_without_cuda_refused_before_loading(minilm, no_cuda, monkeypatch):
    monkeypatch.setattr(_sbert, "load_sentence_transformer", _failing_loader)
    for backend in ("torch", "torch-bf16"):
        with pytest.raises(ValueError, match="CUDA is not available here"):
            SentenceBertEncoder(minilm, device="cuda", backend=backend).fit(["an essay"])


def test_check_device(no_cuda, monkeypatch):
    check_device(None, purpose="x")
    check_device("cpu", purpose="x")
    with pytest.raises(
        ValueError, match="'cuda:1' was asked for LASER embeddings, but CUDA"
    ):
        check_device("cuda:1", purpose="LASER embeddings")
    with pytest.raises(ValueError, match="'gpu' is not a torch device"):
        check_device("gpu", purpose="x")
    with pytest.raises(TypeError, match="device must be None or a torch device name"):
        check_device(0, purpose="x")
    # a machine with one GPU: cuda:0 is fine, cuda:1 is not
    monkeypatch.setattr(no_cuda.cuda, "is_available", lambda: True)
    monkeypatch.setattr(no_cuda.cuda, "device_count", lambda: 1)
    check_device("cuda:0", purpose="x")
    with pytest.raises(ValueError, match=r"has 1 CUDA device\(s\) \(cuda:0 to cuda:0\)"):
        check_device("cuda:1", purpose="x")
