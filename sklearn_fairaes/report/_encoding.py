"""The audit's Sentence-BERT encoding on a Dask cluster's workers, in chunks.

With ``audit(client=)``, the texts the studies will hand a Sentence-BERT
encoder (each prompt's essays for every ``SentenceBertEncoder``
representation, the prompts' texts for the ``prompt_similarity_sbert``
feature, the paraphrases for the paraphrase section: given ones from the
start, the WordNet ones once made) are encoded on the workers before the
studies need them. The workers put the vectors in the
audit's embedding cache folder under the key the studies' own encoders read
(the encoder's identity and the text), so that the studies read every vector
back and this process encodes none (``meta["embedding_cache"]["encoded"]``).

Each chunk is one call of the model as the calling process would make it:
the texts the study's ``transform`` would find missing from the cache,
prompt after prompt, cut by :func:`~sklearn_fairaes.text._sbert.encode_chunks`
(the cut every encoder makes). A vector can differ in its last bits with the
batch it was padded in; with the same calls the vectors are those of the
local run, bit for bit. Each worker process loads the model once (the
package's per-process model memo), not once per chunk.

Without a cache folder (``cache=False``) there is nothing to hand the
vectors over with: the studies encode in this process, as without a
client, and ``meta["encoding"]`` says so.
"""

from __future__ import annotations

import os
import socket
import time
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..text import EmbeddingCache
    from ._build import Plan

__all__ = ["EncodingRun", "encode_chunk", "encoding_calls", "start_encoding"]

#: Why the studies encode in this process although a client was given.
NO_FOLDER = (
    "no cache folder (cache=False): the workers' vectors have no way to this "
    "process, so the Sentence-BERT encoding ran here; give a cache folder on a file "
    "system the workers share to encode on them"
)
READ_ONLY = (
    "the cache folder cannot be written: the workers could not leave their vectors "
    "there, so the Sentence-BERT encoding ran here"
)


@dataclass(frozen=True)
class EncodeCall:
    """One call of the model on a worker: an encoder's parameters and its texts.

    ``stage`` is what the texts are (``"essays"``, ``"prompt"``,
    ``"paraphrases"``); ``prompt`` whose they are; ``key`` the encoder's
    cache key as this process computes it, which the worker's must equal.
    """

    prompt: str
    stage: str
    params: tuple[tuple[str, Any], ...]
    folder: str
    key: str
    texts: tuple[str, ...]


def encode_chunk(call: EncodeCall) -> dict[str, Any]:
    """Encode one call's texts into the cache folder; say what was done, where.

    Runs in a worker. The encoder is the study's, with the cache folder as
    its ``cache``, so each vector goes under the key the study reads. A call
    holds only texts missing from the cache when it was planned, in the order
    the study's encoder would encode them, so the encoder makes one call of
    the model on exactly these texts.
    """
    from ..resources import resolve_sbert_model
    from ..text import SentenceBertEncoder, get_cache
    from ..text._cache import encoder_key
    from ..text._sbert import _loaded_model

    params = dict(call.params)
    spec = resolve_sbert_model(params["model"])
    loaded_before = _loaded_model(spec, params.get("device")) is not None
    cache = get_cache(call.folder)
    misses = 0 if cache is None else cache.misses
    enc = SentenceBertEncoder(**params, cache=call.folder)
    with warnings.catch_warnings():
        # the truncation note: the study's own call says it, or not, as locally
        warnings.simplefilter("ignore", UserWarning)
        enc.fit(list(call.texts[:1])).transform(list(call.texts))
    return {
        "texts": len(call.texts),
        "encoded": 0 if cache is None else cache.misses - misses,
        "loaded": int(
            not loaded_before and _loaded_model(spec, params.get("device")) is not None
        ),
        "key_matches": encoder_key(enc._identity()) == call.key,
        "worker": f"{socket.gethostname()}:{os.getpid()}",
    }


def _missing(cache: EmbeddingCache, ident_hex: str, texts: Sequence[str]) -> list[str]:
    """The distinct texts of ``texts`` that ``cache`` holds no vector of, in order.

    What the cache's ``get_or_compute`` would hand the encoder (a disk entry
    that exists but fails its checks is recomputed there: rare, and then
    encoded in this process).
    """
    from ..text._cache import text_key

    out, seen = [], set()
    for t in texts:
        tkey = text_key(t)
        if tkey in seen:
            continue
        seen.add(tkey)
        if (ident_hex, tkey) in cache._memory:
            continue
        if cache.path is not None and cache._entry_path(ident_hex[:24], tkey).is_file():
            continue
        out.append(t)
    return out


def encoding_calls(plan: Plan, cache: EmbeddingCache) -> list[EncodeCall]:
    """The model calls the studies would make, in their order, as worker tasks.

    Every ``SentenceBertEncoder`` representation (each prompt's essays, and
    the given paraphrases when the paraphrase section runs) and the
    ``prompt_similarity_sbert`` feature's encoder (each prompt's text; its
    essays are those of the ``"sbert"`` representation, which shares its
    identity). A text already cached, or planned by an earlier call of the
    same encoder identity, is not planned again: the study finds it cached.
    """
    return _Planner(plan, cache).upfront()


class _Planner:
    """Plans the studies' calls of the model, remembering what it planned."""

    def __init__(self, plan: Plan, cache: EmbeddingCache) -> None:
        self.plan, self.cache = plan, cache
        self.encoders = _encoders(plan, cache)
        # encoder identity -> texts planned; id of an encoder -> (identity, params)
        self.planned: dict[str, set[str]] = {}
        self.identities: dict[int, tuple[str, tuple[tuple[str, Any], ...]]] = {}

    def _identity_of(self, rep: Any) -> tuple[str, tuple[tuple[str, Any], ...]]:
        from sklearn.base import clone

        from ..text._cache import identity_digest

        if id(rep) not in self.identities:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                # fit reads the window and size from the model's files: no torch here
                fitted = clone(rep).set_params(cache=None).fit([""])
            params = tuple(
                sorted((k, v) for k, v in fitted.get_params().items() if k != "cache")
            )
            self.identities[id(rep)] = (identity_digest(fitted._identity()), params)
        return self.identities[id(rep)]

    def add(
        self, prompt: str, stage: str, rep: Any, texts: Sequence[str]
    ) -> list[EncodeCall]:
        """The calls that encode what ``rep.transform(texts)`` would, after those planned."""
        from ..text._sbert import encode_chunks

        ident_hex, params = self._identity_of(rep)
        done = self.planned.setdefault(ident_hex, set())
        missing = [t for t in _missing(self.cache, ident_hex, texts) if t not in done]
        done.update(missing)
        folder = os.fspath(self.cache.path)  # type: ignore[arg-type]
        return [
            EncodeCall(
                prompt,
                stage,
                params,
                folder,
                ident_hex[:24],
                tuple(missing[i] for i in idx),
            )
            for idx in encode_chunks(missing)
        ]

    def _paraphrase_section(self) -> bool:
        from .analyses import selected

        return "paraphrase" in {s.id for s in selected(self.plan.settings.sections)}

    def upfront(self) -> list[EncodeCall]:
        """Every call whose texts are known before any work (see :func:`encoding_calls`)."""
        from ..text import SentenceBertEncoder

        plan, settings = self.plan, self.plan.settings
        calls: list[EncodeCall] = []
        # the order of the studies: every prompt's representations, then each
        # prompt's features, then the sections
        for p in plan.prompts:
            essays = [plan.essays[i] for i in plan.rows_of(p)]
            for _, rep in self.encoders:
                calls += self.add(p, "essays", rep, essays)
        if settings.features and "prompt_similarity_sbert" in plan.features:
            feature = SentenceBertEncoder(
                settings.sbert_model, backend=settings.sbert_backend, device=settings.device
            )
            for p in plan.prompts:
                if plan.prompt_texts.get(p):
                    calls += self.add(p, "prompt", feature, [str(plan.prompt_texts[p])])
        if plan.paraphrases is not None and self._paraphrase_section():
            for p in plan.prompts:
                para = [plan.paraphrases[i] for i in plan.rows_of(p)]
                for _, rep in self.encoders:
                    calls += self.add(p, "paraphrases", rep, para)
        return calls

    def made_paraphrases(
        self, made: Mapping[str, Future[list[str]]] | None
    ) -> list[EncodeCall]:
        """The calls for the WordNet paraphrases the audit made, prompt by prompt.

        ``made`` holds the studies' own futures of them (read back from the
        result cache where the per-essay stage made them on the workers):
        known only now, they are planned after every call planned up front.
        A prompt whose paraphrases failed (no WordNet) ends the planning:
        its study says why in its notes.
        """
        plan = self.plan
        if not made or plan.paraphrases is not None or not self.encoders:
            return []
        if not self._paraphrase_section():
            return []
        calls: list[EncodeCall] = []
        for p in plan.prompts:
            if p not in made:
                break
            try:
                para = made[p].result()
            except (ImportError, LookupError):
                break
            for _, rep in self.encoders:
                calls += self.add(p, "paraphrases", rep, para)
        return calls


def _encoders(plan: Plan, cache: EmbeddingCache | None) -> list[tuple[str, Any]]:
    """The Sentence-BERT representations whose vectors go through ``cache``.

    One of your own with another cache (or none) reads nothing the workers
    write: it encodes in this process, as without a client.
    """
    from ..text import SentenceBertEncoder, get_cache

    return [
        (name, rep)
        for name, rep in plan.representations.items()
        if isinstance(rep, SentenceBertEncoder)
        and cache is not None
        and get_cache(rep.cache) is cache
    ]


@dataclass
class EncodingRun:
    """The encoding in flight on the cluster (or the reason it is not there).

    :meth:`wait` before a prompt's representations are fitted, :meth:`finish`
    once the studies are built (its entries go to the audit's meta),
    :meth:`cancel` on an error or an interrupt. A run with nothing to do
    (no client, no Sentence-BERT encoder) does nothing at each. ``finish``
    first sends the WordNet paraphrases that the per-essay stage made on the
    workers (known only now) to be encoded there too.
    """

    futures: list[Any] = field(default_factory=list)
    calls: list[EncodeCall] = field(default_factory=list)
    planner: _Planner | None = None
    client: Any = None
    skipped: str | None = None
    cluster: dict[str, Any] | None = None
    started: float = field(default_factory=time.perf_counter)

    def wait(self, prompt: str) -> None:
        """Wait for ``prompt``'s essays to be encoded (a failed chunk: encoded here)."""
        if not self.futures:
            return
        from distributed import wait

        mine = [
            f
            for f, c in zip(self.futures, self.calls)
            if c.prompt == prompt and c.stage == "essays"
        ]
        wait(mine)

    def cancel(self) -> None:
        """Cancel the chunks not yet run (idempotent)."""
        if self.futures:
            self.client.cancel(self.futures)

    def finish(
        self, paraphrases: Mapping[str, Future[list[str]]] | None = None
    ) -> dict[str, Any]:
        """Wait for every chunk; ``{"encoding": what was done}`` for the meta, or {}.

        ``paraphrases``: the studies' futures of the WordNet paraphrases the
        audit makes, by prompt; they are encoded on the workers too. A chunk
        that failed (a worker without the model, a lost worker) fails no
        audit: its texts are then missing from the cache, and the study
        encodes them in this process; the entry keeps the first error.
        """
        if self.skipped is not None:
            return {"encoding": {"skipped": self.skipped}}
        made = [] if self.planner is None else self.planner.made_paraphrases(paraphrases)
        if made:
            self.futures += self.client.map(encode_chunk, made, pure=False, priority=1)
            self.calls += made
        if not self.futures:
            return {}
        from distributed import wait

        wait(self.futures)
        results, errors = [], []
        for f in self.futures:
            if f.status == "finished":
                results.append(f.result())
            else:
                exc = f.exception() if f.status == "error" else None
                errors.append(f"{type(exc).__name__}: {exc}" if exc else f.status)
        workers: dict[str, int] = {}
        for r in results:
            workers[r["worker"]] = workers.get(r["worker"], 0) + 1
        info: dict[str, Any] = {
            "texts": sum(len(c.texts) for c in self.calls),
            "chunks": len(self.calls),
            "encoded_on_workers": sum(r["encoded"] for r in results),
            "model_loads": sum(r["loaded"] for r in results),
            "chunks_per_worker": dict(sorted(workers.items())),
            "seconds": round(time.perf_counter() - self.started, 1),
            **({} if self.cluster is None else {"cluster": self.cluster}),
        }
        if not all(r["key_matches"] for r in results):
            info["note"] = (
                "a worker's Sentence-BERT model differs from this process's (another "
                "version of its files): its vectors were not used, the essays were "
                "encoded here; give the workers the same model"
            )
        if errors:
            info["error"] = f"{len(errors)} chunk(s) failed, encoded here: {errors[0]}"
        return {"encoding": info}


def start_encoding(plan: Plan) -> EncodingRun:
    """Submit the Sentence-BERT chunks to the audit's client; a no-op run without one.

    The chunks go ahead of the per-essay work (a higher priority): the
    studies wait for the vectors first.
    """
    from ..text import SentenceBertEncoder
    from ._cluster import describe_client

    client = getattr(plan.settings, "client", None)
    if client is None:
        return EncodingRun()
    needs = any(isinstance(r, SentenceBertEncoder) for r in plan.representations.values())
    if not needs and not (
        plan.settings.features and "prompt_similarity_sbert" in plan.features
    ):
        return EncodingRun()
    cache = plan.settings.cache
    if cache is None or cache.path is None:
        return EncodingRun(skipped=NO_FOLDER)
    if getattr(cache, "_read_only", False):
        return EncodingRun(skipped=READ_ONLY)
    planner = _Planner(plan, cache)
    calls = planner.upfront()
    # pure=False: a chunk writes to the cache folder, not a value to dedupe
    futures = client.map(encode_chunk, calls, pure=False, priority=1) if calls else []
    return EncodingRun(futures, calls, planner, client, cluster=describe_client(client))
