"""Each prompt's study as one task on a Dask cluster's workers or local processes (issue 35).

With a ``client`` and two prompts or more, :func:`build_and_run` sends each
prompt's whole study to the workers as one task (:func:`study_task`); without
a client, with ``n_jobs >= 2``, to as many local processes (joblib), once the
per-essay chunks that ran in those processes are done (the two stages never
share the cores). A task computes the
representations fitted on its essays, the trained baselines' out-of-fold
predictions, the pair spaces, then every chosen section's analysis, through
the analysis cache when the audit has a cache folder. A task returns what the
audit reads of a study once its analyses have run: the section outputs and a
slim study (ids, scores, features, notes; no vectors, no pair engine, no
estimator). Inside a task every pass runs in the task's own process
(``n_jobs=1``): the cluster's parallelism is the prompts, and no task asks
the cluster for more work. The plan (essays, given vectors, models) and the
fitted systems' scores go to the cluster once (``client.scatter``), not with
each task. The tables are those of the local run: a study is the same
function of the same inputs wherever it runs.

The client keeps the progress bar (ticked as each study's task completes),
the interrupt (Ctrl-C cancels the tasks), and the studies that should not
move: with one prompt (the study builds here and its pair passes go to the
workers through the engine's Dask path, :func:`._cluster.pair_passes`), or
when a system calls a scorer (a service or a function you gave: its
connection, its answer cache and its repeats stay in this process), the
grammar server is used (a server the workers may not reach), a chosen
section is not one of the package's own (its code may not be on the
workers), or a piece of the plan does not pickle. ``meta["study_tasks"]``
says which route ran and why, and where each study ran.

The cache folder must be reachable from the workers (the same machine, or a
shared file system at the same path). A worker that does not find it (the
folder and its ``CACHEDIR.TAG`` marker) computes the study with an in-memory
cache instead: nothing is written to a folder of the same name on the
worker's disk, and the meta says so.
"""

from __future__ import annotations

import copy
import os
import pickle
import sys
import warnings
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ._build import (
    Plan,
    Progress,
    _study,
    before_studies,
    build_studies,
    fit_representations,
    note_vectors,
)
from ._cluster import pair_passes
from ._config import AuditConfig
from ._output import pause
from ._study import Study

if TYPE_CHECKING:
    from ._analysis_cache import AnalysisCache
    from .analyses import AnalysisOutput, Section

__all__ = ["StudyResult", "build_and_run", "refusal", "study_task"]

Runs = dict[str, list["AnalysisOutput | str"]]


@dataclass
class StudyResult:
    """What one study's task hands back: the slim study, its outputs and its counts.

    ``outputs`` holds, per chosen section id, the section's output or the
    reason it is absent; ``vectors`` the study's ``_vector_notes`` counts;
    ``analysis_cache``, ``result_cache``, ``embeddings`` (encoded,
    served) and ``study_cache`` (the fits read back) what the task's caches did;
    ``place`` where it ran (worker address, pid) and ``cache_note`` why the
    task did without the cache folder (None when it used it, or had none).
    """

    study: Study
    outputs: dict[str, AnalysisOutput | str]
    vectors: dict[str, dict[str, int]]
    analysis_cache: dict[str, Any]
    result_cache: dict[str, dict[str, int]]
    embeddings: dict[str, int] = field(default_factory=dict)
    place: dict[str, Any] = field(default_factory=dict)
    cache_note: str | None = None
    study_cache: dict[str, int] = field(default_factory=dict)


@dataclass
class _Shared:
    """What every task reads, sent once: the plan, the fitted scores, the BLAS threads.

    ``threads`` maps each thread-pool API of this process (``"blas"``,
    ``"openmp"``) to its thread count: a task computes with as many (see
    :func:`_threads`).
    """

    plan: Plan
    fitted_scores: Mapping[str, Any]
    threads: dict[str, int] = field(default_factory=dict)


def _threads() -> dict[str, int]:
    """This process's BLAS and OpenMP thread counts, by API.

    A float32 product of the pair engine (its screening of the pairs) can
    round differently with another number of BLAS threads, and a tie it
    leaves then falls the other way (measured: one Lipschitz violation of
    ASAP prompt 3 at 300 essays, 2 threads against 1). Workers start with
    one thread each (Dask's ``threads_per_worker=1``, loky's limits), so a
    task computes with the calling process's counts: the tables are then
    those of the local run on the same machine (and BLAS).
    """
    from threadpoolctl import threadpool_info

    out: dict[str, int] = {}
    for pool in threadpool_info():
        api = str(pool["user_api"])
        out[api] = max(out.get(api, 0), int(pool["num_threads"]))
    return out


def _stripped(plan: Plan) -> Plan:
    """``plan`` with settings of its own, without the client (never shipped)."""
    settings = copy.copy(plan.settings)
    object.__setattr__(settings, "values", dict(plan.settings.values))
    settings.client = None
    settings.tune_interpreter = False  # the interpreter-wide switches are the client's
    return replace(plan, settings=settings)


def refusal(plan: Plan, chosen: Sequence[Section]) -> str | None:
    """Why the studies stay in this process; None when each can be a task on the workers."""
    from ._repeats import repeated_systems

    if len(plan.prompts) < 2:
        return (
            "one prompt: its study is built in this process (its pair passes go to "
            "the workers with a client)"
        )
    calling = repeated_systems(plan.fitted)
    if calling:
        return (
            f"system(s) {', '.join(map(repr, calling))} call a scorer: its calls, "
            f"answer cache and repeats stay in this process"
        )
    if plan.settings.grammar is not None:
        return "grammar= names a server that the workers may not reach"
    own = [s.id for s in chosen if not _package_section(s)]
    if own:
        return (
            f"section(s) {', '.join(map(repr, own))} are not the package's own: "
            f"their code may not be on the workers"
        )
    return None


def _package_section(section: Section) -> bool:
    """Whether ``section`` is one of the package's own (the ``SECTION`` of its analysis's module).

    A worker finds those by id; a registered one (even with a package analysis
    under another id) exists only in the process that registered it.
    """
    module = sys.modules.get(type(section.analysis).__module__)
    return (
        section.template_dir is None
        and module is not None
        and module.__name__.startswith(f"{__package__}.analyses.")
        and getattr(module, "SECTION", None) is section
    )


def _unpicklable(plan: Plan) -> str | None:
    """Why ``plan`` cannot be sent to the workers; None when it pickles."""
    # what Dask and loky pickle with, and without it loky's own fallback
    try:
        import cloudpickle as dumper  # type: ignore[import-untyped]
    except ImportError:
        dumper = pickle
    try:
        dumper.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - any failure means "keep it here"
        return f"the plan does not pickle ({type(exc).__name__}: {exc})"
    return None


def _cache_reachable(settings: Any) -> str | None:
    """Why this process cannot use the audit's cache folder; None when it can (or has none)."""
    from ..text._cache import MARKER

    path = getattr(settings.cache, "path", None)
    if path is None:
        return None
    if not (os.path.isdir(path) and os.path.isfile(os.path.join(path, MARKER))):
        return f"the cache folder {path} is not reachable from this worker"
    return None


def _memory_only(plan: Plan) -> Plan:
    """``plan`` with the in-memory cache in its settings and in its encoders."""
    from sklearn.base import clone

    from ..text._cache import open_cache

    memory = open_cache(False)
    plan.settings.cache = memory
    reps = {}
    for name, rep in plan.representations.items():
        params = rep.get_params() if hasattr(rep, "get_params") else {}
        if getattr(params.get("cache"), "path", None) is not None:
            rep = clone(rep).set_params(cache=memory)
        reps[name] = rep
    return replace(plan, representations=reps)


def _place() -> dict[str, Any]:
    """The worker's address (when a Dask worker) and process id."""
    place: dict[str, Any] = {"pid": os.getpid()}
    try:
        from distributed import get_worker

        place["worker"] = get_worker().address
    except (ImportError, ValueError):
        pass
    return place


def study_task(shared: _Shared, prompt: str, section_ids: Sequence[str]) -> StudyResult:
    """Build ``prompt``'s study and run the chosen sections on it, in this process.

    Runs on a worker: every pass with ``n_jobs=1`` and the calling process's
    BLAS threads (:func:`_threads`), the analysis cache of the audit's folder
    when this process reaches it (else in memory).
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=shared.threads or None):
        result = _study_task(shared, prompt, section_ids)
        result.place["threads"] = _threads()
    return result


def _study_task(shared: _Shared, prompt: str, section_ids: Sequence[str]) -> StudyResult:
    from ..features._persist import result_counts
    from ._analysis_cache import AnalysisCache
    from ._study_cache import counts as study_counts
    from .analyses import selected

    before = result_counts()
    fits_before = study_counts()
    plan = _stripped(shared.plan)  # the shared plan is the worker's: never changed
    plan.settings.n_jobs = 1
    cache_note = _cache_reachable(plan.settings)
    if cache_note is not None:
        plan = _memory_only(plan)
    encoder_cache = plan.settings.cache  # the encoders' too (one object in the pickle)
    hits, misses = encoder_cache.hits, encoder_cache.misses
    rows = plan.rows_of(prompt)
    represented = fit_representations(
        plan.representations,
        [plan.essays[i] for i in rows],
        plan.text_col,
        f" of prompt {prompt!r}",
        rows=rows,
    )
    counts: dict[str, Any] = {
        kind: dict.fromkeys(plan.representations, 0)
        for kind in ("empty_vectors", "letters_dropped")
    }
    quiet = Progress(False, 0)
    study = note_vectors(
        _study(plan, prompt, shared.fitted_scores, represented, quiet), counts
    )
    kept = AnalysisCache(plan.settings.cache)
    outputs: dict[str, AnalysisOutput | str] = {}
    for section in selected(section_ids):
        analysis = section.analysis
        if analysis is None:
            continue
        reason = analysis.absent(study)
        outputs[section.id] = kept.run(section, study) if reason is None else reason
    after = result_counts()
    slim = replace(
        study,
        settings=AuditConfig(),
        spaces={},
        representations={},
        systems={n: replace(s, estimator=None) for n, s in study.systems.items()},
        _weights=None,
    )
    return StudyResult(
        study=slim,
        outputs=outputs,
        vectors=counts,
        analysis_cache=kept.counts(),
        result_cache={
            kind: {f: n - before.get(kind, {}).get(f, 0) for f, n in fields.items()}
            for kind, fields in after.items()
        },
        embeddings={
            "encoded": encoder_cache.misses - misses,
            "served": encoder_cache.hits - hits,
        },
        place=_place(),
        cache_note=cache_note,
        study_cache={k: n - fits_before[k] for k, n in study_counts().items()},
    )


def _run(
    section: Section, studies: Sequence[Study], bar: Progress, kept: AnalysisCache
) -> list[AnalysisOutput | str]:
    """The section's analysis output on each study, or the reason it is absent there."""
    analysis = section.analysis
    assert analysis is not None  # for mypy: only sections with an analysis run
    out: list[AnalysisOutput | str] = []
    for study in studies:
        reason = analysis.absent(study)
        out.append(kept.run(section, study) if reason is None else reason)
        bar.tick(f"{study.prompt}: {analysis.name}")
    return out


def build_and_run(
    plan: Plan, chosen: Sequence[Section], bar: Progress, kept: AnalysisCache
) -> tuple[list[Study], dict[str, Any], Runs]:
    """Every study and every chosen section's output on it: here, or one task per prompt.

    The tasks run on the client's workers, or without a client on
    ``n_jobs >= 2`` local processes (joblib). Returns the studies (slim when
    they ran as tasks), the meta entries of their building
    (``build_studies``'s counts, and ``study_tasks`` when tasks were an
    option) and the outputs by section id, one per study.
    """
    from ._cluster import local_mapper

    client = plan.settings.client
    spread = client is not None or local_mapper(plan.settings.n_jobs) is not None
    reason = refusal(plan, chosen) if spread else None
    if spread and reason is None:
        stripped = _stripped(plan)
        reason = _unpicklable(stripped)
        if reason is None:
            return _as_tasks(plan, stripped, chosen, bar, kept)
    studies, counts = build_studies(plan, bar)
    pause("computing")  # test-only hook: an interrupt test's instant mid-audit
    with pair_passes(client):  # the engine's joblib passes
        runs = {s.id: _run(s, studies, bar, kept) for s in chosen}
    if spread:
        counts["study_tasks"] = {"on_workers": False, "reason": reason}
    return studies, counts, runs


def _dask_results(
    client: Any, shared: _Shared, prompts: Sequence[str], ids: list[str]
) -> Generator[StudyResult, None, None]:
    """The studies' results as their tasks complete on the client's workers."""
    from distributed import as_completed

    [data] = client.scatter([shared], hash=False)  # once, not with each task
    futures = [
        client.submit(study_task, data, p, ids, pure=False, key=f"fairaes-study-{i}-{p}")
        for i, p in enumerate(prompts)
    ]
    finished = False
    try:
        for future in as_completed(futures):
            yield future.result()
        finished = True
    finally:
        if not finished:  # an error, or Ctrl-C: nothing left running on the workers
            client.cancel([*futures, data])


def _local_results(
    n_jobs: int | None, shared: _Shared, prompts: Sequence[str], ids: list[str]
) -> Generator[StudyResult, None, None]:
    """The studies' results as their tasks complete on ``n_jobs`` local processes."""
    from joblib import Parallel, delayed, effective_n_jobs

    # loky's reusable executor: the processes that ran the per-essay chunks,
    # which are done by now (no two stages share the cores)
    workers = min(effective_n_jobs(n_jobs), len(prompts))
    results = Parallel(n_jobs=workers, return_as="generator_unordered")(
        delayed(study_task)(shared, p, ids) for p in prompts
    )
    finished = False
    try:
        yield from results
        finished = True
    finally:
        if not finished:
            with warnings.catch_warnings():
                # joblib's note that it threw running calls away: what a stop asks for
                warnings.simplefilter("ignore", UserWarning)
                results.close()


def _as_tasks(
    plan: Plan,
    stripped: Plan,
    chosen: Sequence[Section],
    bar: Progress,
    kept: AnalysisCache,
) -> tuple[list[Study], dict[str, Any], Runs]:
    """The studies as tasks on the client's workers or local processes (module docstring)."""
    from ..features._persist import _count
    from ._encoding import start_encoding
    from ._per_essay import wait_per_essay
    from ._study_cache import add_counts as add_study_counts

    client = plan.settings.client
    counts: dict[str, Any] = {
        kind: dict.fromkeys(plan.representations, 0)
        for kind in ("empty_vectors", "letters_dropped")
    }
    fitted_scores, repeated, prepared = before_studies(plan)
    assert not repeated  # only scorers you call repeat, and those stay here (refusal)
    # the Sentence-BERT chunks spread each prompt's encoding over all the
    # workers (a study task alone would encode its prompt on one)
    encoding = start_encoding(plan)
    try:
        # the studies read every essay's features, paraphrases and vectors
        # from what the chunks stored
        if prepared is not None:
            counts["per_essay"] = wait_per_essay(prepared)
        counts.update(encoding.finish())
    except BaseException:
        encoding.cancel()
        raise
    pause("computing")
    ids = [s.id for s in chosen]
    per_study = Progress.steps(plan, len(chosen)) // len(plan.prompts)
    shared = _Shared(stripped, fitted_scores, _threads())
    completed = (
        _dask_results(client, shared, plan.prompts, ids)
        if client is not None
        else _local_results(plan.settings.n_jobs, shared, plan.prompts, ids)
    )
    results: dict[str, StudyResult] = {}
    try:
        for result in completed:
            results[result.study.prompt] = result
            for _ in range(per_study):
                bar.tick(f"{result.study.prompt}: done")
    finally:
        completed.close()  # an error or Ctrl-C here too: the tasks not done are cancelled
    fields = {"read": 0, "computed": 1, "refused": 2}
    places: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {}
    embedded: dict[str, int] = {}
    studies = []
    for p in plan.prompts:
        result = results[p]
        result.study.settings = plan.settings
        studies.append(result.study)
        for kind, by_rep in result.vectors.items():
            for rname, k in by_rep.items():
                counts[kind][rname] += k
        kept.add(result.analysis_cache)
        for name, n in result.embeddings.items():
            embedded[name] = embedded.get(name, 0) + n
        # the process-wide counters (the audit's meta): a task that ran in this
        # process (a threaded cluster) has counted itself there already
        if result.place.get("pid") != os.getpid():
            for kind, done in result.result_cache.items():
                for name, n in done.items():
                    if n and name in fields:
                        _count(kind, fields[name], n)
            add_study_counts(result.study_cache)
        places[p] = result.place
        if result.cache_note is not None:
            notes[p] = result.cache_note
    runs: Runs = {s.id: [results[p].outputs[s.id] for p in plan.prompts] for s in chosen}
    counts["study_tasks"] = {
        "on_workers": True,
        "reason": None,
        "places": places,
        # what the tasks encoded and read back (meta["embedding_cache"]: this process)
        "embedding_cache": embedded,
        **({"cache_unreachable": notes} if notes else {}),
    }
    return studies, counts, runs
