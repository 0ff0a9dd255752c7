"""``audit(client=)`` (issue 35): the Sentence-BERT encoding on the Dask workers.

A process ``LocalCluster`` of two single-threaded workers, started here, and
the packaged MiniLM model as the only representation: the workers encode the
essays and the given paraphrases in chunks into the cache folder, each
worker loading the model once; this process loads no model and encodes no
text, and reads every vector back. The tables equal those of the local run,
and the vectors are bit for bit those the local run encoded (the same calls
of the model).
"""

from __future__ import annotations

import numpy as np
import pytest

from sklearn_fairaes.text import _sbert

KW = {
    "text_col": "essay",
    "score_col": "rater1_domain1",
    "systems": {"rater2": "rater2_domain1"},
    "prompt_col": "task",
    "score_range": (0, 12),
    "representations": ["sbert"],
    "features": False,
}


@pytest.fixture
def two_prompts(asap7):
    """48 essays of ASAP prompt 7 as two prompts of 24, each with a paraphrase."""
    data = asap7.iloc[:48].copy()
    data["task"] = ["a"] * 24 + ["b"] * 24
    # a stand-in paraphrase: the essay without its first sentence's first word
    data["para"] = [" ".join(e.split()[1:]) for e in data["essay"]]
    return data


@pytest.fixture
def client_route(monkeypatch):
    """Keep the studies in this process, as one prompt or a fallback does.

    With two prompts and a client each study is a task on the workers
    (report._study_tasks), which encodes there anyway; the encoding stage is
    what spreads the encoding of a study kept here. The last test checks the
    two together.
    """
    from sklearn_fairaes.report import _study_tasks

    monkeypatch.setattr(
        _study_tasks, "refusal", lambda plan, chosen: "kept here by the test"
    )


# Model calls (chunks) run in this process: filled in the workers.
_CALLS: list[int] = []


def _count_calls_here():
    """Count the encoder's calls of the model in this process (the chunks' texts)."""
    from sklearn_fairaes.text import SentenceBertEncoder

    real = SentenceBertEncoder.__dict__["_encode_call"]
    if getattr(real, "counted", False):
        return
    _CALLS.clear()

    def counted(self, st_model, texts, offsets, window, _real=real):
        _CALLS.append(len(texts))
        return _real(self, st_model, texts, offsets, window)

    counted.counted = True
    SentenceBertEncoder._encode_call = counted


def _calls_and_models_here():
    from sklearn_fairaes.text import _sbert

    return list(_CALLS), len(_sbert._MODELS)


def _cached_vectors(folder, texts, minilm):
    """The vectors a fresh cache object reads from ``folder``; none may be missing."""
    from sklearn_fairaes import SentenceBertEncoder
    from sklearn_fairaes.text import EmbeddingCache

    identity = SentenceBertEncoder(minilm).fit([""])._identity()

    def missing(texts):
        raise AssertionError(f"{len(texts)} texts are not in {folder}")

    return EmbeddingCache(folder).get_or_compute(identity, texts, missing)


# the local run's paraphrase section says that some paraphrases were truncated
# (as any run that encodes them); a run that reads them from the cache does not
@pytest.mark.filterwarnings("ignore::sklearn_fairaes.exceptions.LongTextWarning")
def test_the_workers_encode_the_local_runs_vectors(
    client, two_prompts, minilm, tmp_path, monkeypatch, client_route
):
    from pandas.testing import assert_frame_equal

    from sklearn_fairaes import audit

    # three calls of the model per prompt (24 essays), three per prompt's
    # paraphrases: 12 chunks over the 2 workers
    monkeypatch.setattr(_sbert, "ENCODE_CHUNK", 8)
    assert client.run(_calls_and_models_here) == dict.fromkeys(
        client.scheduler_info()["workers"], ([], 0)
    )
    client.run(_count_calls_here)
    monkeypatch.setattr(_sbert, "_MODELS", {})  # this process loads none
    on_dask = audit(
        two_prompts, cache=tmp_path / "dask", client=client, paraphrases="para", **KW
    )
    assert _sbert._MODELS == {}
    assert on_dask.meta["embedding_cache"]["encoded"] == 0
    # every essay and paraphrase read back (some more than once)
    assert on_dask.meta["embedding_cache"]["served"] >= 96
    ran = client.run(_calls_and_models_here)
    info = on_dask.meta["encoding"]
    assert info["chunks"] == 12 and info["texts"] == 96, info
    assert info["encoded_on_workers"] == 96
    assert sorted(n for calls, _ in ran.values() for n in calls) == [8] * 12
    assert len(ran) == 2 and all(calls for calls, _ in ran.values())  # both workers
    # one model per worker process, loaded by its first chunk only
    assert [models for _, models in ran.values()] == [1, 1]
    assert info["model_loads"] == 2
    assert sum(info["chunks_per_worker"].values()) == 12
    assert info["cluster"]["scheduler"] == client.scheduler.address

    local = audit(two_prompts, cache=tmp_path / "local", paraphrases="para", **KW)
    assert local.meta["embedding_cache"]["encoded"] == 96
    assert "encoding" not in local.meta
    assert set(on_dask.tables) == set(local.tables)
    for name, table in local.tables.items():
        assert_frame_equal(on_dask.tables[name], table, check_exact=True, obj=name)
    texts = list(two_prompts["essay"]) + list(two_prompts["para"])
    assert np.array_equal(
        _cached_vectors(tmp_path / "dask", texts, minilm),
        _cached_vectors(tmp_path / "local", texts, minilm),
    )


def test_without_a_cache_folder_the_encoding_stays_here_and_says_so(
    client, two_prompts, minilm, client_route
):
    from sklearn_fairaes import audit

    data = two_prompts.iloc[[*range(6), *range(24, 30)]]
    result = audit(data, cache=False, client=client, paraphrases=False, **KW)
    assert "no cache folder" in result.meta["encoding"]["skipped"]
    assert result.meta["embedding_cache"]["encoded"] == 12


def test_the_planned_calls_are_the_studies_calls(minilm, tmp_path, monkeypatch):
    """The chunks are the calls the studies' encoders would make, in their order.

    Each prompt's essays not cached nor planned before (a duplicate across
    prompts once), longest first, ENCODE_CHUNK per call; then each prompt's
    text for the prompt-similarity feature, alone; then the given paraphrases
    when the paraphrase section runs. No model is loaded to plan them.
    """
    from types import SimpleNamespace

    from sklearn_fairaes import SentenceBertEncoder
    from sklearn_fairaes.report._encoding import encoding_calls
    from sklearn_fairaes.text import get_cache

    monkeypatch.setattr(_sbert, "ENCODE_CHUNK", 2)
    monkeypatch.setattr(_sbert, "_MODELS", {})
    cache = get_cache(tmp_path)
    essays = ["aaaa", "b", "cc", "dddddd", "cc", "eee", "aaaa", "ffff"]
    prompt_ids = np.array(["p"] * 4 + ["q"] * 4)
    identity = SentenceBertEncoder(minilm).fit([""])._identity()
    # "eee" is in the cache already: no call encodes it
    cache.get_or_compute(identity, ["eee"], lambda t: np.ones((len(t), 384)))
    settings = SimpleNamespace(
        features=True,
        sbert_model=minilm,
        sbert_backend="torch",
        device=None,
        sections=None,
    )
    plan = SimpleNamespace(
        representations={"sbert": SentenceBertEncoder(minilm, cache=cache)},
        settings=settings,
        features=["prompt_similarity_sbert"],
        prompts=["p", "q"],
        essays=essays,
        rows_of=lambda p: np.flatnonzero(prompt_ids == p),
        prompt_texts={"p": "Write about patience.", "q": None},
        paraphrases=[e + "!" for e in essays],
    )
    calls = encoding_calls(plan, cache)
    assert [(c.prompt, c.stage, list(c.texts)) for c in calls] == [
        ("p", "essays", ["dddddd", "aaaa"]),
        ("p", "essays", ["cc", "b"]),
        ("q", "essays", ["ffff"]),  # "cc" and "aaaa" planned, "eee" cached
        ("p", "prompt", ["Write about patience."]),
        ("p", "paraphrases", ["dddddd!", "aaaa!"]),
        ("p", "paraphrases", ["cc!", "b!"]),
        ("q", "paraphrases", ["ffff!", "eee!"]),  # "eee!" is not "eee"
    ]
    assert {c.folder for c in calls} == {str(tmp_path)}
    assert _sbert._MODELS == {}
    settings.sections = ["lipschitz"]  # no paraphrase section: no paraphrase
    assert {c.stage for c in encoding_calls(plan, cache)} == {"essays", "prompt"}


def _break_encoding_here(broken=True):
    """Make this process's encoder fail (a worker without a usable model), or mend it."""
    from sklearn_fairaes.text import SentenceBertEncoder

    if broken:
        SentenceBertEncoder._mended = SentenceBertEncoder.__dict__["_encode_call"]

        def failing(self, *args):
            raise RuntimeError("no model on this worker")

        SentenceBertEncoder._encode_call = failing
    else:
        SentenceBertEncoder._encode_call = SentenceBertEncoder.__dict__["_mended"]


def test_a_failed_chunk_is_encoded_here_and_said(
    client, two_prompts, minilm, tmp_path, client_route
):
    from pandas.testing import assert_frame_equal

    from sklearn_fairaes import audit

    data = two_prompts.iloc[[*range(6), *range(24, 30)]]
    client.run(_break_encoding_here)
    try:
        on_dask = audit(
            data, cache=tmp_path / "dask", client=client, paraphrases=False, **KW
        )
    finally:
        client.run(_break_encoding_here, False)
    info = on_dask.meta["encoding"]
    assert "2 chunk(s) failed, encoded here: RuntimeError: no model" in info["error"]
    assert info["encoded_on_workers"] == 0
    assert on_dask.meta["embedding_cache"]["encoded"] == 12
    local = audit(data, cache=False, paraphrases=False, **KW)
    for name, table in local.tables.items():
        assert_frame_equal(on_dask.tables[name], table, check_exact=True, obj=name)


@pytest.mark.filterwarnings("ignore::sklearn_fairaes.exceptions.LongTextWarning")
def test_the_paraphrases_the_audit_makes_are_encoded_there_too(
    client, two_prompts, minilm, tmp_path, client_route
):
    """WordNet paraphrases, made on the workers by the per-essay stage, encoded there."""
    from pandas.testing import assert_frame_equal

    from sklearn_fairaes import audit

    data = two_prompts.iloc[[*range(6), *range(24, 30)]]
    on_dask = audit(data, cache=tmp_path / "dask", client=client, **KW)
    assert on_dask.meta["per_essay"]["paraphrases"]  # made on the workers
    assert on_dask.meta["embedding_cache"]["encoded"] == 0
    info = on_dask.meta["encoding"]
    # each prompt's 6 essays, then its 6 paraphrases (one call each)
    assert info["chunks"] == 4 and info["texts"] == 24, info
    local = audit(data, cache=tmp_path / "local", **KW)
    assert local.meta["embedding_cache"]["encoded"] == 24
    for name, table in local.tables.items():
        assert_frame_equal(on_dask.tables[name], table, check_exact=True, obj=name)


@pytest.mark.filterwarnings("ignore::sklearn_fairaes.exceptions.LongTextWarning")
def test_study_tasks_read_the_vectors_the_chunks_encoded(
    client, two_prompts, minilm, tmp_path, monkeypatch
):
    """Each prompt's study a task: the chunks encode first, the tasks encode nothing."""
    from pandas.testing import assert_frame_equal

    from sklearn_fairaes import audit

    monkeypatch.setattr(_sbert, "ENCODE_CHUNK", 8)
    monkeypatch.setattr(_sbert, "_MODELS", {})  # this process loads none
    on_dask = audit(
        two_prompts, cache=tmp_path / "dask", client=client, paraphrases="para", **KW
    )
    assert on_dask.meta["study_tasks"]["on_workers"], on_dask.meta["study_tasks"]
    info = on_dask.meta["encoding"]
    assert info["chunks"] == 12 and info["encoded_on_workers"] == 96, info
    # the tasks read every vector back: none encoded in a task or here
    assert on_dask.meta["study_tasks"]["embedding_cache"]["encoded"] == 0
    assert on_dask.meta["study_tasks"]["embedding_cache"]["served"] >= 96
    assert on_dask.meta["embedding_cache"]["encoded"] == 0
    assert _sbert._MODELS == {}
    local = audit(two_prompts, cache=tmp_path / "local", paraphrases="para", **KW)
    for name, table in local.tables.items():
        assert_frame_equal(on_dask.tables[name], table, check_exact=True, obj=name)
