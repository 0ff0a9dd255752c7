"""The audit's per-essay work for every prompt at once, in chunks over processes.

The interpretable features (spaCy POS tagging) and the WordNet paraphrases are
most of a first audit's time, and each is a function of one essay (and of
the prompt's text, the seed and the backends, never of the other essays:
the paraphraser seeds each essay from its text, and the features' per-essay
counts and tags are stored before anything is learned from them). The study
builder computes them prompt after prompt, in one thread beside the encoders
and the features' own workers, so that one core waits while a prompt's last
chunk is tagged, and each essay was tagged a second time in the features'
workers, whose tag memo is not the parent's.

:func:`start_per_essay` computes them before the studies need them: the
essays of all prompts, in chunks, mapped over ``n_jobs`` processes (joblib)
or a Dask cluster's workers (:mod:`._cluster`), each chunk tagged once for
both consumers. The workers put their results where a re-run finds them,
the audit's result cache (:mod:`sklearn_fairaes.features._persist`): the
studies then read every essay's paraphrase and features from it, and the
tables are those of computing them in the parent (the cache serves exactly
what was computed). Without a cache folder (``cache=False``) or with one
process there is nothing to hand the results over with or to spread them
over, and the studies compute them as before.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._build import Plan
    from ._cluster import Mapper

__all__ = [
    "CHUNK",
    "PerEssayRun",
    "PerEssaySpec",
    "chunk_work",
    "start_per_essay",
    "wait_per_essay",
]

#: Essays per task: a few seconds of tagging each, so that two workers end
#: within a chunk of each other and a progress or an interrupt is not far off.
CHUNK = 128

#: Features the chunks leave to the studies: the prompt's Sentence-BERT
#: similarity (an encoder per worker; the embedding cache keeps it) and the
#: LanguageTool server's counts (the user's server, called once per essay).
_LEFT_TO_STUDIES = frozenset({"prompt_similarity_sbert", "language_errors"})


@dataclass(frozen=True)
class PerEssaySpec:
    """What a chunk computes: the same estimators, with the same parameters, as a study.

    ``folder`` is the result cache's folder; ``features`` the features a
    chunk stores (none: no features); ``paraphrase`` whether it makes the
    WordNet paraphrases.
    """

    folder: str
    random_state: Any
    paraphrase: bool
    features: tuple[str, ...]


def chunk_work(
    texts: Sequence[str], prompt_text: str | None, spec: PerEssaySpec
) -> dict[str, dict[str, int]]:
    """Compute and store one chunk's paraphrases and features; return the store counts.

    Runs in a worker (any process with the package and the cache folder):
    the estimators are the studies' own, so every entry has the key a study
    reads. The paraphraser tags the chunk first; the features' counts then
    find the tags in this process's tag memo (one tagging per essay).
    """
    from ..features._persist import result_counts

    before = result_counts()
    if spec.paraphrase:
        from ..paraphrase import WordNetParaphraser

        WordNetParaphraser(random_state=spec.random_state, cache=spec.folder).fit_transform(
            list(texts)
        )
    if spec.features and len(texts) >= 2:
        _store_features(list(texts), prompt_text, spec)
    after = result_counts()
    return {
        kind: {field: n - before.get(kind, {}).get(field, 0) for field, n in counts.items()}
        for kind, counts in after.items()
    }


def _store_features(texts: list[str], prompt_text: str | None, spec: PerEssaySpec) -> None:
    import warnings

    import numpy as np

    from ..features import InterpretableFeatures

    feat = InterpretableFeatures(
        prompt=prompt_text,
        features=list(spec.features),
        n_jobs=1,
        progress=False,
        cache=spec.folder,
    )
    # fit's first pass is the per-essay one (counts and tags, stored per
    # essay before any n-gram is learned); the n-grams it then learns from
    # this chunk are thrown away with these stand-in scores (two classes,
    # so that the median split has both), as is the rest of the estimator
    dummy = np.arange(len(texts), dtype=float) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        feat._fit(texts, dummy, keep_analysis=True)


def _spec(plan: Plan) -> PerEssaySpec | None:
    """The chunks' work for ``plan``, or None when there is none to spread."""
    from ..features._persist import persistent_cache

    settings = plan.settings
    cache = persistent_cache(settings.cache)
    if cache is None or cache.path is None:
        return None
    paraphrase = plan.paraphrases is None and plan.make_paraphrases
    features: tuple[str, ...] = ()
    if settings.features and "good_pos_ngrams" in plan.features:
        # only the tagging is worth a worker; the other counts are fast
        features = tuple(f for f in plan.features if f not in _LEFT_TO_STUDIES)
    if not paraphrase and not features:
        return None
    return PerEssaySpec(
        folder=os.fspath(cache.path),
        random_state=settings.random_state,
        paraphrase=paraphrase,
        features=features,
    )


def _still_to_do(plan: Plan, spec: PerEssaySpec) -> PerEssaySpec | None:
    """``spec`` without the work a re-run finds done already; None for none.

    The chunks' features only feed the studies' features fits: when every
    study's fit is kept (``_study_cache``), they are not needed. Their
    paraphrases are skipped when every essay's is stored. Both are looks at
    the cache's files, nothing read: an entry that turns out damaged is
    recomputed by the study that reads it (correct, only slower). On a warm
    re-run of the eight ASAP prompts the chunks read 26,000 entries in two
    worker processes (31 s of the 53 s audit) that nobody needed.
    """
    import dataclasses
    import numbers

    features = spec.features
    if features and not plan.short_answer:  # a study's human scores are the plan's
        from ._study_cache import audit_features, features_stored

        if all(
            features_stored(
                audit_features(plan, plan.prompt_texts[p]),
                [plan.essays[i] for i in plan.rows_of(p)],
                plan.human[plan.rows_of(p)],
            )
            for p in plan.prompts
        ):
            features = ()
    paraphrase = spec.paraphrase
    if paraphrase and isinstance(spec.random_state, numbers.Integral):
        from ..paraphrase import WordNetParaphraser

        try:
            p = WordNetParaphraser(random_state=int(spec.random_state), cache=spec.folder)
            p.fit(["essay"])
            store = p._store(p._base_seed(), p._stop_word_set())
        except (ImportError, LookupError, ValueError, TypeError):
            store = None  # the studies paraphrase, and say what is wrong
        if store is not None and all(store.stored(t) for t in plan.essays if t.strip()):
            paraphrase = False
    if not paraphrase and not features:
        return None
    return dataclasses.replace(spec, paraphrase=paraphrase, features=features)


def plan_chunks(plan: Plan, size: int | None = None) -> list[tuple[list[str], str | None]]:
    """Every prompt's essays in chunks of at most ``size`` (CHUNK), with the prompt's text."""
    size = CHUNK if size is None else size
    out = []
    for p in plan.prompts:
        rows = plan.rows_of(p)
        essays = [plan.essays[i] for i in rows]
        # split evenly: no chunk of one essay (the features' chunk needs two)
        n_chunks = max(1, -(-len(essays) // size))
        step = -(-len(essays) // n_chunks)
        for start in range(0, len(essays), step):
            out.append((essays[start : start + step], plan.prompt_texts[p]))
    return out


@dataclass
class PerEssayRun:
    """The per-essay work in flight: its future and the flag that stops it.

    ``cancel()`` stops it after the chunks running now (an interrupt, or an
    error of the audit before the studies): no chunk is started after it, so
    the process does not wait minutes for work nobody will read.
    """

    future: Future[dict[str, Any]]
    stop: threading.Event

    def done(self) -> bool:
        """Whether the chunks are all done (or the work failed or stopped)."""
        return self.future.done()

    def cancel(self) -> None:
        """Start no further chunk (idempotent; nothing happens once done)."""
        self.stop.set()


def start_per_essay(plan: Plan, *, mapper: Mapper | None = None) -> PerEssayRun | None:
    """Start the per-essay work of every prompt in a thread; None when the studies do it.

    The thread maps :func:`chunk_work` over the chunks with ``mapper`` (from
    :mod:`._cluster`: joblib processes, or a Dask client's workers). Its
    result says what was done (for the report's meta): essays, chunks,
    workers, seconds and the store counts of the workers.
    """
    from ._cluster import dask_mapper, describe_client, local_mapper

    spec = _spec(plan)
    if spec is not None:
        spec = _still_to_do(plan, spec)
    if spec is None:
        return None
    client = getattr(plan.settings, "client", None)
    cluster = None
    if mapper is None and client is not None:
        mapper, cluster = dask_mapper(client), describe_client(client)
    if mapper is None:
        mapper = local_mapper(plan.settings.n_jobs)
        if mapper is None:
            return None
    chunks = plan_chunks(plan)
    calls = [(texts, prompt_text, spec) for texts, prompt_text in chunks]
    pool = ThreadPoolExecutor(1, thread_name_prefix="fairaes-per-essay")
    stop = threading.Event()
    map_chunks = mapper

    def run() -> dict[str, Any]:
        t0 = time.perf_counter()
        counts = map_chunks(chunk_work, calls, stop)
        total: dict[str, dict[str, int]] = {}
        for c in counts:
            for kind, fields in c.items():
                for name, n in fields.items():
                    slot = total.setdefault(kind, {})
                    slot[name] = slot.get(name, 0) + n
        return {
            "essays": sum(len(t) for t, _ in chunks),
            "chunks": len(chunks),
            "paraphrases": spec.paraphrase,
            "features": list(spec.features),
            "seconds": round(time.perf_counter() - t0, 1),
            "workers_result_cache": total,
            **({} if cluster is None else {"cluster": cluster}),
        }

    future = pool.submit(run)
    pool.shutdown(wait=False)
    return PerEssayRun(future, stop)


def wait_per_essay(run: PerEssayRun) -> dict[str, Any]:
    """Wait for the chunks; add the workers' store counts to this process's.

    A chunk that failed (a missing tagger or WordNet, a lost worker) fails
    no audit here: the studies then compute what is missing themselves, as
    without this stage, and say what is wrong where it matters (the
    paraphrases' note, the features' error). The meta entry keeps the error.
    """
    from ..features._persist import _count

    try:
        info = run.future.result()
    except Exception as exc:  # noqa: BLE001 - the studies redo it (see above)
        return {"error": f"{type(exc).__name__}: {exc}"}
    fields = {"read": 0, "computed": 1, "refused": 2}
    for kind, counts in info["workers_result_cache"].items():
        for name, n in counts.items():
            if n:
                _count(kind, fields[name], n)
    return info
