"""``audit(client=)`` (issue 35): the per-essay work and the studies on a Dask cluster.

A process ``LocalCluster`` of two single-threaded workers, started by the test:
the audit's tables equal those of the local run (every table, exactly), and the
chunks ran on the workers: their own result-cache counts (asked of each worker)
add up to every essay, and this process tagged none. With one prompt the
study's pair passes ran there: each worker counts the engine's tasks it ran,
by reducer. With several prompts each prompt's study is one task on a worker
(this process's study builder refuses to run), and what cannot go falls back.
"""

from __future__ import annotations

import pytest

from sklearn_fairaes.features import _persist, _pos
from sklearn_fairaes.metrics._pairs import _engine, _types
from sklearn_fairaes.report import _build

KW = {
    "text_col": "essay",
    "score_col": "rater1_domain1",
    "systems": {"rater2": "rater2_domain1"},
    "prompt_col": "task",
    "score_range": (0, 12),
    "representations": ["tfidf"],
}


@pytest.fixture
def two_prompts(asap7):
    """60 essays of ASAP prompt 7 as two prompts of 30, the second rater as a system."""
    data = asap7.iloc[:60].copy()
    data["task"] = ["a"] * 30 + ["b"] * 30
    return data


@pytest.fixture
def one_prompt(asap7):
    """60 essays of ASAP prompt 7 as one prompt, the second rater as a system."""
    data = asap7.iloc[:60].copy()
    data["task"] = "a"
    return data


@pytest.fixture
def three_prompts(asap7):
    """120 essays of ASAP prompt 7 as three prompts of 40."""
    data = asap7.iloc[:120].copy()
    data["task"] = ["a"] * 40 + ["b"] * 40 + ["c"] * 40
    return data


def _worker_counts():
    from sklearn_fairaes.features._persist import result_counts

    return result_counts()


# The pairwise engine's tasks run in this process, by reducer class: filled in
# the Dask workers (see _count_pair_tasks_here); the client's stays empty.
_PAIR_TASKS: dict[str, int] = {}


def _count_pair_tasks_here(patch=setattr):
    """Count the chunks of the engine's joblib tasks run in this process, by reducer."""
    from sklearn_fairaes.metrics._pairs import _blocks

    real = _blocks.__dict__["_run_chunk"]

    def counted(engine, reducer, specs, _real=real):
        name = type(reducer).__name__
        _PAIR_TASKS[name] = _PAIR_TASKS.get(name, 0) + 1
        return _real(engine, reducer, specs)

    # _run_task (pickled by reference) calls its module's _run_chunk; the
    # engine's in-process passes call their own import of it, not this
    patch(_blocks, "_run_chunk", counted)
    _PAIR_TASKS.clear()


def _pair_tasks_here():
    return dict(_PAIR_TASKS)


def test_tables_equal_the_local_run_and_the_workers_did_the_chunks(
    client, one_prompt, tmp_path, monkeypatch
):
    from pandas.testing import assert_frame_equal

    from sklearn_fairaes import audit
    from sklearn_fairaes.report import _per_essay

    monkeypatch.setattr(_pos, "_TAG_MEMO", _pos._TagMemo(_pos._TAG_MEMO_MAX_TOKENS))
    monkeypatch.setattr(_pos, "_STORES", {})
    monkeypatch.setattr(_persist, "_SIBLINGS", {})
    tagged = [0]
    real = _pos._run_tagger

    def counting(batch, label):
        tagged[0] += len(batch)
        return real(batch, label)

    monkeypatch.setattr(_pos, "_run_tagger", counting)
    monkeypatch.setattr(_per_essay, "CHUNK", 8)  # 8 chunks over the 2 workers
    # Both runs as a large study's: the engine walks the vectors (no condensed
    # matrix, no blocks kept in this process) in blocks of 8 essays. At this
    # size a study is one block held here, whose passes stay here.
    monkeypatch.setattr(_build, "MAX_CONDENSED", 0)
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_types, "_MIN_BLOCK_SIZE", 8)
    client.run(_count_pair_tasks_here)
    _count_pair_tasks_here(monkeypatch.setattr)  # the client must run none
    before = client.run(_worker_counts)
    on_dask = audit(one_prompt, cache=tmp_path / "cache", client=client, **KW)
    after = client.run(_worker_counts)
    pair_tasks = client.run(_pair_tasks_here)
    done = {
        w: after[w].get("paraphrases", {}).get("computed", 0)
        - before[w].get("paraphrases", {}).get("computed", 0)
        for w in after
    }
    assert sum(done.values()) == 60 and len(done) == 2
    assert tagged[0] == 0  # the studies read every essay's results
    info = on_dask.meta["per_essay"]
    assert info["chunks"] == 8 and info["essays"] == 60
    assert info["cluster"]["workers"] == 2
    assert info["cluster"]["scheduler"] == client.scheduler.address
    assert on_dask.meta["cluster"] == info["cluster"]
    # the pair passes: chunks on the workers, none in this process
    assert _pair_tasks_here() == {}
    ran = {}
    for counts in pair_tasks.values():
        for name, n in counts.items():
            ran[name] = ran.get(name, 0) + n
    # the Lipschitz counts, and the review's pass (a MultiReducer of its
    # neighbours, top pairs and key histograms)
    assert ran.get("_LipschitzCounter", 0) > 0 and ran.get("MultiReducer", 0) > 0, ran
    assert len(pair_tasks) == 2 and all(pair_tasks.values()), pair_tasks  # both workers

    # the report names the cluster
    assert f"Dask cluster {client.scheduler.address} (2 workers" in on_dask.to_html()

    # one prompt: its study was built here, its passes went to the workers
    assert on_dask.meta["study_tasks"]["on_workers"] is False
    assert on_dask.meta["study_tasks"]["reason"].startswith("one prompt")
    local = audit(one_prompt, cache=False, **KW)
    assert "local (1 process)" in local.to_html()
    assert "study_tasks" not in local.meta
    assert "per_essay" not in local.meta
    assert set(on_dask.tables) == set(local.tables)
    for name, table in local.tables.items():
        assert_frame_equal(on_dask.tables[name], table, check_exact=True, obj=name)


def test_a_client_that_is_not_one_is_refused(two_prompts):
    from sklearn_fairaes import audit

    with pytest.raises(TypeError, match=r"client must be a distributed\.Client"):
        audit(two_prompts, client="tcp://127.0.0.1:8786", **KW)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("bogus", "expected tcp://HOST:PORT"),
        ("local:0", "expected tcp://HOST:PORT"),
        ("tcp://127.0.0.1", "expected tcp://HOST:PORT"),
        ("tcp://127.0.0.1:1", "no Dask scheduler answered"),
    ],
)
def test_the_command_refuses_a_bad_scheduler_before_work(
    value, fragment, tmp_path, capsys, monkeypatch
):
    from sklearn_fairaes import _cli_cluster
    from sklearn_fairaes.cli import main
    from sklearn_fairaes.datasets import load_demo_essays

    monkeypatch.setattr(_cli_cluster, "CONNECT_TIMEOUT", 1)
    data = tmp_path / "essays.csv"
    load_demo_essays().iloc[:20].to_csv(data, index=False)
    out = tmp_path / "report"
    argv = ["audit", str(data), "--text-col", "essay", "--score-col", "score"]
    assert main([*argv, "--out", str(out), "--scheduler", value]) == 2
    err = capsys.readouterr().err
    assert f"--scheduler {value}" in err.replace("'", "") and fragment in err
    assert not out.exists()


def _slow(i):
    import time

    time.sleep(0.3)
    return i


def test_a_stop_cancels_the_chunks_on_the_cluster(client):
    import threading

    from sklearn_fairaes.report._cluster import Stopped, dask_mapper

    mapper = dask_mapper(client)
    stop = threading.Event()
    assert mapper(_slow, [(i,) for i in range(4)], stop) == [0, 1, 2, 3]
    stop.set()
    with pytest.raises(Stopped):
        mapper(_slow, [(i,) for i in range(100)], stop)  # 15 s of work, stopped in 0.5


# -- each prompt's study a task on the workers ----------------------------------------

FAST = {"features": False, "paraphrases": False}


def _refuse_here(*args, **kwargs):
    raise AssertionError("a study was built in the client process")


def _assert_same_audit(on_dask, local):
    """Every table exactly, every replicate bit for bit, the same notes and warnings."""
    import numpy as np
    from pandas.testing import assert_frame_equal

    assert set(on_dask.tables) == set(local.tables)
    for name, table in local.tables.items():
        assert_frame_equal(on_dask.tables[name], table, check_exact=True, obj=name)
    assert list(on_dask.replicates) == list(local.replicates)
    for key, values in local.replicates.items():
        assert np.array_equal(on_dask.replicates[key], values, equal_nan=True), key
    for entry in ("notes", "warnings", "absent_sections", "systems", "features"):
        assert on_dask.meta[entry] == local.meta[entry], entry


def _places_are_the_workers(client, meta, prompts):
    import os

    tasks = meta["study_tasks"]
    assert tasks["on_workers"] is True and tasks["reason"] is None
    assert set(tasks["places"]) == set(prompts)
    from sklearn_fairaes.report._study_tasks import _threads

    workers = set(client.scheduler_info()["workers"])
    for place in tasks["places"].values():
        assert place["worker"] in workers and place["pid"] != os.getpid()
        # the workers start with one BLAS thread; the studies ran with this process's
        assert place["threads"] == _threads()


def test_each_prompt_s_study_is_a_task_on_the_workers(
    client, three_prompts, tmp_path, monkeypatch
):
    from sklearn_fairaes import audit
    from sklearn_fairaes.report import _study_tasks

    local = audit(three_prompts, cache=False, **FAST, **KW)
    # the client builds no study: a study built here fails the audit
    monkeypatch.setattr(_study_tasks, "_study", _refuse_here)
    monkeypatch.setattr(_build, "_study", _refuse_here)
    on_dask = audit(three_prompts, cache=tmp_path / "cache", client=client, **FAST, **KW)
    _places_are_the_workers(client, on_dask.meta, ["a", "b", "c"])
    _assert_same_audit(on_dask, local)
    assert "the studies as tasks on the workers, one per prompt" in on_dask.to_html()
    # the workers' analysis caches stored every output; a re-run reads them back
    first = on_dask.meta["analysis_cache"]
    assert first["computed"] > 0 and first["read"] == 0
    assert len(list((tmp_path / "cache").iterdir())) > 1  # entries beside the marker
    again = audit(three_prompts, cache=tmp_path / "cache", client=client, **FAST, **KW)
    assert again.meta["analysis_cache"]["read"] == first["computed"] - first["not_stored"]
    _assert_same_audit(again, local)


def test_the_studies_as_tasks_with_the_features_and_paraphrases(
    client, two_prompts, tmp_path, monkeypatch
):
    from sklearn_fairaes import audit
    from sklearn_fairaes.report import _study_tasks

    local = audit(two_prompts, cache=False, **KW)
    monkeypatch.setattr(_study_tasks, "_study", _refuse_here)
    on_dask = audit(two_prompts, cache=tmp_path / "cache", client=client, **KW)
    _places_are_the_workers(client, on_dask.meta, ["a", "b"])
    assert on_dask.meta["per_essay"]["essays"] == 60  # the chunks went first
    assert "features" in on_dask.tables
    _assert_same_audit(on_dask, local)


def _hide_cache_marker(hide=True):
    from sklearn_fairaes.text import _cache

    _cache.MARKER = "NOT-HERE.TAG" if hide else "CACHEDIR.TAG"


def test_a_worker_that_cannot_reach_the_cache_folder_computes_in_memory(
    client, three_prompts, tmp_path
):
    from sklearn_fairaes import audit

    folder = tmp_path / "cache"
    local = audit(three_prompts, cache=False, **FAST, **KW)
    client.run(_hide_cache_marker)  # the workers find no cache folder there
    try:
        on_dask = audit(three_prompts, cache=folder, client=client, **FAST, **KW)
    finally:
        client.run(_hide_cache_marker, False)
    unreachable = on_dask.meta["study_tasks"]["cache_unreachable"]
    assert set(unreachable) == {"a", "b", "c"}
    assert all(f"{folder} is not reachable" in v for v in unreachable.values())
    # nothing written there by the workers, nothing read: computed in memory
    assert [p.name for p in folder.iterdir()] == ["CACHEDIR.TAG"]  # the client's marker
    assert on_dask.meta["analysis_cache"]["read"] == 0
    _assert_same_audit(on_dask, local)


class _LockedModel:
    """A fitted model holding a lock: it scores essays by length, and does not pickle."""

    def __init__(self):
        import threading

        self.lock = threading.Lock()

    def predict(self, texts):
        return [min(12, len(t) // 100) for t in texts]


def test_a_plan_that_does_not_pickle_stays_in_the_client(client, three_prompts):
    from sklearn_fairaes import audit

    kw = {**FAST, **KW, "models": {"length": _LockedModel()}, "refit": False}
    local = audit(three_prompts, cache=False, **kw)
    on_dask = audit(three_prompts, cache=False, client=client, **kw)
    tasks = on_dask.meta["study_tasks"]
    assert tasks["on_workers"] is False
    assert tasks["reason"].startswith("the plan does not pickle (TypeError")
    assert "lock" in tasks["reason"]
    _assert_same_audit(on_dask, local)


def test_what_keeps_the_studies_in_the_client():
    from dataclasses import replace
    from types import SimpleNamespace

    from sklearn_fairaes.report._study_tasks import refusal
    from sklearn_fairaes.report.analyses import SECTIONS, register_section

    lipschitz = next(s for s in SECTIONS if s.id == "lipschitz")

    class Scorer:
        _repeatable = True  # what the scorers you call say

    def plan(prompts=("a", "b"), fitted=None, grammar=None):
        settings = SimpleNamespace(grammar=grammar)
        return SimpleNamespace(
            prompts=list(prompts), fitted=fitted or {}, settings=settings
        )

    assert refusal(plan(), [lipschitz]) is None
    assert refusal(plan(["a"]), [lipschitz]).startswith("one prompt")
    assert "'engine' call a scorer" in refusal(
        plan(fitted={"engine": Scorer()}), [lipschitz]
    )
    assert refusal(plan(grammar="http://127.0.0.1:8081"), [lipschitz]).startswith(
        "grammar="
    )
    # the package's analysis registered under another id: the workers do not know it
    mine = register_section(replace(lipschitz, id="my_lipschitz"))
    try:
        reason = refusal(plan(), [lipschitz, mine])
    finally:
        SECTIONS.remove(mine)
    assert reason.startswith("section(s) 'my_lipschitz' are not the package's own")
