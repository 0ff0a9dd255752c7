import pickle

import numpy as np
import pytest
from conftest import require_module
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sklearn_fairaes import SentenceBertEncoder
from sklearn_fairaes.exceptions import LongTextWarning
from sklearn_fairaes.text import EmbeddingCache, load_sentence_transformer

ORIGINAL = (
    "One sunny day I was stuck in a doctor's office with no air conditioning. I tried "
    "to be patient while we waited for more than an hour."
)
PARAPHRASE = (
    "On a bright day I was trapped in a physician's office without air conditioning. "
    "I attempted to stay patient as we waited over an hour."
)
UNRELATED = "Photosynthesis converts light energy into chemical energy stored in glucose."


@pytest.fixture(scope="module")
def st_model(minilm):
    return load_sentence_transformer(minilm)


def test_identical_to_sentence_transformers(minilm, st_model, asap7):
    texts = list(asap7["essay"].iloc[:12]) + ["", "short"]
    enc = SentenceBertEncoder(minilm, cache=None).fit(texts)
    with pytest.warns(LongTextWarning):
        ours = enc.transform(texts)
    direct = st_model.encode(texts, batch_size=32, convert_to_numpy=True)
    assert ours.shape == (14, 384)
    assert np.abs(ours - direct).max() < 1e-5
    normed = SentenceBertEncoder(minilm, normalize_embeddings=True, cache=None).fit(texts)
    with pytest.warns(LongTextWarning):
        got = normed.transform(texts)
    ref = st_model.encode(texts, convert_to_numpy=True, normalize_embeddings=True)
    assert np.abs(got - ref).max() < 1e-5


def test_paraphrase_nearer_than_unrelated(minilm):
    E = (
        SentenceBertEncoder(minilm, normalize_embeddings=True)
        .fit([""])
        .transform([ORIGINAL, PARAPHRASE, UNRELATED])
    )
    assert E[0] @ E[1] > E[0] @ E[2] + 0.3


def test_truncation_warning_counts_long_essays(minilm):
    long = " ".join(["patience"] * 600)
    enc = SentenceBertEncoder(minilm, cache=None).fit([""])
    with pytest.warns(
        LongTextWarning, match=r"2 of 3 essays are longer than the model's window"
    ):
        enc.transform([long, "short text", long + " again"])


def test_chunk_mean_is_mean_of_windows(minilm, st_model):
    words = [f"word{i % 50}" for i in range(700)]
    long = " ".join(words)
    enc = SentenceBertEncoder(minilm, long_text="chunk_mean", cache=None).fit([""])
    got = enc.transform([long, "a short one"])
    tok = st_model.tokenizer(long, add_special_tokens=False, return_offsets_mapping=True)
    offs = tok["offset_mapping"]
    window = st_model.max_seq_length - 2
    pieces = [
        long[offs[s][0] : offs[min(s + window, len(offs)) - 1][1]]
        for s in range(0, len(offs), window)
    ]
    assert len(pieces) >= 3
    ref = st_model.encode(pieces, convert_to_numpy=True).mean(axis=0)
    assert np.abs(got[0] - ref).max() < 1e-5
    assert np.abs(got[1] - st_model.encode(["a short one"])[0]).max() < 1e-5


def test_empty_essay_gets_model_embedding_of_empty_string(minilm, st_model):
    got = SentenceBertEncoder(minilm, cache=None).fit([""]).transform([""])
    assert np.abs(got[0] - st_model.encode([""])[0]).max() < 1e-5


def test_bad_input_and_params(minilm):
    enc = SentenceBertEncoder(minilm).fit(["a"])
    with pytest.raises(ValueError, match="position 1 of X is None"):
        enc.transform(["ok", None])
    with pytest.raises(TypeError, match="position 0 of X is a float"):
        enc.transform([1.5])
    with pytest.raises(
        ValueError,
        match=r"'long_text' parameter of SentenceBertEncoder must be a str among "
        r"\['chunk_mean', 'truncate'\]",
    ):
        SentenceBertEncoder(minilm, long_text="split").fit(["a"])
    with pytest.raises(TypeError, match="cache must be None, True, a folder path"):
        SentenceBertEncoder(minilm, cache=3.5).fit(["a"])


def test_clone_pickle_feature_names_pandas(minilm):
    pd = require_module("pandas", "report")
    enc = SentenceBertEncoder(minilm, batch_size=8)
    assert clone(enc).get_params() == enc.get_params()
    enc.fit(["x"])
    again = pickle.loads(pickle.dumps(enc))
    texts = pd.Series(["first essay", "second"], index=[7, 9])
    np.testing.assert_array_equal(again.transform(texts), enc.transform(texts))
    names = enc.get_feature_names_out()
    assert names[0] == "sentencebertencoder0" and len(names) == 384
    out = clone(enc).set_output(transform="pandas").fit(texts).transform(texts)
    assert list(out.index) == [7, 9] and list(out.columns) == list(names)


def _essays(asap7, n):
    # short essays keep the test fast; all distinct
    short = asap7.loc[asap7["essay"].str.len() < 500]
    return list(short["essay"].iloc[:n]), short["domain1_score"].astype(float).iloc[
        :n
    ].to_numpy()


def test_grid_search_encodes_each_essay_once(minilm, asap7, monkeypatch):
    essays, y = _essays(asap7, 24)
    encoded = []
    real = SentenceBertEncoder._encode

    def counting(self, texts):
        encoded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(SentenceBertEncoder, "_encode", counting)
    cache = EmbeddingCache()
    search = GridSearchCV(
        make_pipeline(SentenceBertEncoder(minilm, cache=cache), Ridge()),
        {"ridge__alpha": [0.1, 1.0, 10.0]},
        cv=4,
    )
    search.fit(essays, y)
    assert sorted(encoded) == sorted(essays)  # 4 folds x 3 candidates + refit: once each
    assert cache.misses == len(essays)
    assert cache.hits == (4 * 3 + 1) * len(essays) - len(essays)

    encoded.clear()
    without = GridSearchCV(
        make_pipeline(SentenceBertEncoder(minilm, cache=None), Ridge()),
        {"ridge__alpha": [0.1, 1.0]},
        cv=4,
    ).fit(essays, y)
    assert len(encoded) == (2 * 4 + 1) * len(essays)
    np.testing.assert_allclose(
        without.cv_results_["mean_test_score"],
        search.cv_results_["mean_test_score"][:2],
        rtol=1e-5,
    )


def test_disk_cache_shared_by_worker_processes(minilm, asap7, tmp_path):
    essays, y = _essays(asap7, 20)
    SentenceBertEncoder(minilm, cache=tmp_path).fit([""]).transform(essays)  # warm once
    search = GridSearchCV(
        make_pipeline(SentenceBertEncoder(minilm, cache=str(tmp_path)), Ridge()),
        {"ridge__alpha": [0.1, 1.0]},
        cv=2,
        n_jobs=2,
    ).fit(essays, y)
    assert len(list(tmp_path.rglob("*.npy"))) == len(essays)
    assert np.isfinite(search.best_score_)
