"""The audit's per-essay stage (issue 35): every prompt's tagging, features and
paraphrases in chunks over worker processes, handed to the studies through the
result cache, with the tables of computing them in the studies.

The reference is the same audit with ``cache=False``: no folder to hand the
results over with, so the studies compute everything themselves (the path
before this stage). The parent's tagger is counted, so that a stage that did
nothing (or a study that did the work again) fails the test.
"""

from __future__ import annotations

import pytest

from sklearn_fairaes.features import _persist, _pos


@pytest.fixture
def fresh(monkeypatch):
    """This process as a new one: empty tag memo, no open stores."""
    monkeypatch.setattr(_pos, "_TAG_MEMO", _pos._TagMemo(_pos._TAG_MEMO_MAX_TOKENS))
    monkeypatch.setattr(_pos, "_STORES", {})
    monkeypatch.setattr(_persist, "_SIBLINGS", {})


@pytest.fixture
def tagged(monkeypatch):
    """How many essays this process's tagger is asked to tag."""
    seen = [0]
    real = _pos._run_tagger

    def counting(batch, label):
        seen[0] += len(batch)
        return real(batch, label)

    monkeypatch.setattr(_pos, "_run_tagger", counting)
    return seen


@pytest.fixture
def two_prompts(asap7):
    """60 essays of ASAP prompt 7 as two prompts of 30, the second rater as a system."""
    data = asap7.iloc[:60].copy()
    data["task"] = ["a"] * 30 + ["b"] * 30
    return data


KW = {
    "text_col": "essay",
    "score_col": "rater1_domain1",
    "systems": {"rater2": "rater2_domain1"},
    "prompt_col": "task",
    "score_range": (0, 12),
    "representations": ["tfidf"],
    "n_jobs": 2,
}


def test_workers_compute_what_the_studies_read(
    spacy_label, two_prompts, tmp_path, fresh, tagged, monkeypatch
):
    from pandas.testing import assert_frame_equal

    from sklearn_fairaes import audit
    from sklearn_fairaes.report import _per_essay

    monkeypatch.setattr(_per_essay, "CHUNK", 16)  # several chunks per prompt
    spread = audit(two_prompts, cache=tmp_path / "cache", **KW)
    info = spread.meta["per_essay"]
    assert info["essays"] == 60
    assert info["chunks"] == 4  # 30 essays in chunks of at most 16: two per prompt
    assert info["paraphrases"] is True and "good_pos_ngrams" in info["features"]
    workers = info["workers_result_cache"]
    assert workers["paraphrases"]["computed"] == 60
    assert workers["essay_features"]["computed"] == 60
    # the parent tagged nothing: the studies read every paraphrase and feature row
    assert tagged[0] == 0
    counts = spread.meta["result_cache"]
    assert counts["paraphrases"] == {"read": 60, "computed": 60, "refused": 0}
    assert counts["essay_features"]["read"] == 60

    tagged[0] = 0
    # in this process (with n_jobs=2 each study would be a task in a worker)
    alone = audit(two_prompts, cache=False, **{**KW, "n_jobs": None})
    assert "per_essay" not in alone.meta
    assert tagged[0] == 60  # the reference did tag, in this process
    assert set(spread.tables) == set(alone.tables)
    for name, table in alone.tables.items():
        assert_frame_equal(spread.tables[name], table, check_exact=True, obj=name)


def test_chunks_cover_every_essay_once_and_never_one_alone():
    from types import SimpleNamespace

    import numpy as np

    from sklearn_fairaes.report._per_essay import plan_chunks

    essays = [f"essay {i}" for i in range(37)]
    labels = np.array(["x"] * 17 + ["y"] * 20)
    plan = SimpleNamespace(
        prompts=["x", "y"],
        essays=essays,
        prompt_texts={"x": "task x", "y": None},
        rows_of=lambda p: np.flatnonzero(labels == p),
    )
    chunks = plan_chunks(plan, size=8)
    assert [len(c) for c, _ in chunks] == [6, 6, 5, 7, 7, 6]
    assert [e for c, _ in chunks for e in c] == essays
    assert [t for _, t in chunks] == ["task x"] * 3 + [None] * 3


def _slow(i):
    import time

    time.sleep(0.2)
    return i


def test_a_stop_starts_no_further_chunk():
    import threading

    from sklearn_fairaes.report._cluster import Stopped, local_mapper

    mapper = local_mapper(2)
    assert local_mapper(1) is None and local_mapper(None) is None
    stop = threading.Event()
    assert mapper(_slow, [(i,) for i in range(4)], stop) == [0, 1, 2, 3]
    stop.set()
    with pytest.raises(Stopped):
        mapper(_slow, [(i,) for i in range(40)], stop)


# -- each prompt's study a task on the local processes (issue 35) -------------------


def _refuse_here(*args, **kwargs):
    raise AssertionError("a study was built in the parent process")


def test_n_jobs_builds_and_analyses_each_prompt_in_a_process(asap7, monkeypatch):
    import os

    import numpy as np
    from pandas.testing import assert_frame_equal

    from sklearn_fairaes import audit
    from sklearn_fairaes.report import _build, _study_tasks

    data = asap7.iloc[:90].copy()
    data["task"] = ["a"] * 30 + ["b"] * 30 + ["c"] * 30
    kw = {**KW, "features": False, "paraphrases": False, "cache": False}
    one = audit(data, **{**kw, "n_jobs": None})
    assert "study_tasks" not in one.meta
    monkeypatch.setattr(_study_tasks, "_study", _refuse_here)
    monkeypatch.setattr(_build, "_study", _refuse_here)
    spread = audit(data, **kw)
    tasks = spread.meta["study_tasks"]
    assert tasks["on_workers"] is True and set(tasks["places"]) == {"a", "b", "c"}
    assert all(place["pid"] != os.getpid() for place in tasks["places"].values())
    assert set(spread.tables) == set(one.tables)
    for name, table in one.tables.items():
        assert_frame_equal(spread.tables[name], table, check_exact=True, obj=name)
    assert list(spread.replicates) == list(one.replicates)
    for key, values in one.replicates.items():
        assert np.array_equal(spread.replicates[key], values, equal_nan=True), key
    assert spread.meta["notes"] == one.meta["notes"]


def test_n_jobs_with_one_prompt_keeps_the_study_in_this_process(asap7):
    from sklearn_fairaes import audit

    data = asap7.iloc[:30].copy()
    data["task"] = "a"
    kw = {**KW, "features": False, "paraphrases": False, "cache": False}
    tasks = audit(data, **kw).meta["study_tasks"]
    assert tasks == {"on_workers": False, "reason": tasks["reason"]}
    assert tasks["reason"].startswith("one prompt")
