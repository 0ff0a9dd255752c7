"""The analyses' outputs kept across runs, keyed by everything they read (issue 35).

A re-run of an audit on the same inputs used to compute every analysis again:
on the eight ASAP prompts most of a warm re-run was the Lipschitz and review
sections' pair passes and bootstrap. An analysis is a deterministic function
of its study (the scores, the vectors, the options, the seed) and of this
package's code, so its output is kept in the audit's cache folder, as
entries of the embedding cache (through
:class:`~sklearn_fairaes.features._persist.ResultStore`: one cache root,
atomic first-writer-wins publishing, the key, text digest and CRC-32 checked
on every read, a truncated or garbled entry refused with a
:class:`~sklearn_fairaes.exceptions.CacheCorruptionWarning` and recomputed,
``fairaes cache info|clear`` count and clear them).

**What is cached.** The built-in analyses that read nothing but arrays of
the study (:data:`CACHED`): agreement, extreme pairs, Lipschitz, review,
errors, groups and retest; and the paraphrase section when no system can
re-score a text, keyed by the paraphrases' vectors as well
(:func:`paraphrase_inputs`: they are made again on a re-run, the ranking is
read back). The counterfactual and short-answer sections, and the
paraphrase section with a system that re-scores texts, call a scorer or a
model whose behaviour no digest of the inputs covers; they always run.

**The key.** The entry's identity holds the section id, the SHA-256 of
every source file of this package, the versions of the numeric libraries
and the package's settings (:func:`~sklearn_fairaes.get_config`: the pair
backend). Its text is the SHA-256 of the study: every field of
:class:`~sklearn_fairaes.report._study.Study` (texts, ids, rows, scores of
the humans, raters and every system, repeats, groupings, covariates,
features, paraphrases, references, the scale and step, notes the analyses
could read) and of each pair space (its metric, the vectors' bytes -- a
sparse matrix's data, indices and indptr -- the distances and sampled
pairs), then every audit option but the runtime switches of
:data:`RUNTIME_OPTIONS`. A value that cannot be digested deterministically
(an object whose pickle fails) leaves that study uncached, with the reason
in ``meta["analysis_cache"]``: never a wrong hit.

**Format.** An output is one ``.npz`` archive (read with
``allow_pickle=False``) packed into the cache's float32 words: numeric
columns and replicates as arrays, text and object columns as JSON, with
each column's dtype. An output is stored only when it reads back equal
(``assert_frame_equal(check_exact=True)``, the replicates bit for bit);
else it is recomputed on every run, and counted. Python warnings an
analysis gave when it ran are not given again on a hit; the notes and
warnings of its output are.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..features._persist import (
    _LIMIT,
    ResultStore,
    pack_bytes,
    persistent_cache,
    source_digest,
    unpack_bytes,
)

if TYPE_CHECKING:
    from ._study import Study
    from .analyses import AnalysisOutput, Section

#: Sections whose output is cached: those whose ``run`` reads only arrays of
#: the study (no transformer, no estimator, no scorer call)
CACHED = frozenset(
    {"agreement", "extremes", "lipschitz", "review", "errors", "groups", "retest"}
)
#: Sections cached only when they call no scorer, with their own inputs beyond
#: the study in the key (see :func:`paraphrase_inputs`)
CACHED_WITH_INPUTS = frozenset({"paraphrase"})
#: Audit options that change where or how fast it runs, never what it computes
RUNTIME_OPTIONS = frozenset({"n_jobs", "cache", "client", "tune_interpreter", "progress"})
#: Version of the archive layout below, part of every identity
_FORMAT = 1


class Uncacheable(Exception):
    """A value of the study or the options that has no deterministic digest."""


def _package_digest() -> str:
    """SHA-256 of every ``.py`` file of the package, by relative path."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    names = sorted(
        p.relative_to(root).with_suffix("").as_posix().replace("/", ".")
        for p in root.rglob("*.py")
    )
    return source_digest(*names)


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("numpy", "scipy", "pandas", "scikit-learn", "joblib", "torch"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "absent"
    return out


def _feed(h: Any, value: Any) -> None:
    """Add ``value`` to the hash ``h``, with its type and shape; Uncacheable if unknown."""
    import scipy.sparse as sp

    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        h.update(repr((type(value).__name__, value)).encode("utf-8") + b"\0")
    elif isinstance(value, np.generic):
        h.update(repr((type(value).__name__, value.item())).encode("utf-8") + b"\0")
    elif isinstance(value, np.ndarray):
        h.update(f"ndarray{value.dtype.str}{value.shape}".encode() + b"\0")
        if value.dtype.kind == "O":
            for item in value.ravel():
                _feed(h, item)
        else:
            h.update(np.ascontiguousarray(value).tobytes())
    elif sp.issparse(value):
        # as stored (indices unsorted give another digest: a miss, never a
        # wrong hit), and never sorted in place: the study is read only
        m: Any = cast(Any, value).tocsr()
        h.update(f"csr{m.shape}".encode() + b"\0")
        for part in (m.data, m.indices, m.indptr):
            _feed(h, np.asarray(part))
    elif isinstance(value, Mapping):
        h.update(f"map{len(value)}".encode() + b"\0")
        for key in sorted(value, key=repr):
            _feed(h, key)
            _feed(h, value[key])
    elif isinstance(value, (list, tuple, frozenset, set)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        h.update(f"{type(value).__name__}{len(value)}".encode() + b"\0")
        for item in items:
            _feed(h, item)
    else:
        # an estimator, a transformer, a pair engine: joblib's pickle-based
        # hash; one that cannot be pickled has no digest
        import joblib

        try:
            h.update(f"obj:{joblib.hash(value)}".encode() + b"\0")
        except Exception as exc:
            raise Uncacheable(
                f"a value of type {type(value).__name__} cannot be digested ({exc})"
            ) from None


def study_key(study: Study) -> str:
    """The SHA-256 of everything in ``study`` an analysis can read, options included.

    Raises :class:`Uncacheable` when a value has no deterministic digest.
    """
    from ._study import PairSpace, System

    h = hashlib.sha256()
    for f in fields(study):
        if f.name in ("settings", "_weights", "systems", "spaces", "representations"):
            continue
        _feed(h, f.name)
        _feed(h, getattr(study, f.name))
    for name, system in study.systems.items():
        _feed(h, ["system", name])
        for f in fields(System):
            if f.name != "estimator":  # scores stand for it in every cached section
                _feed(h, getattr(system, f.name))
        _feed(h, system.estimator is None)
    for name, space in study.spaces.items():
        _feed(h, ["space", name])
        for f in fields(PairSpace):
            if f.name in ("transformer", "pairs"):  # made from X, or unread
                continue
            _feed(h, getattr(space, f.name))
        _feed(h, type(space.pairs).__name__)
    _feed(h, sorted(study.representations))
    settings = study.settings
    for name in sorted(settings.options):
        if name not in RUNTIME_OPTIONS:
            _feed(h, name)
            _feed(h, getattr(settings, name))
    return h.hexdigest()


def paraphrase_inputs(study: Study) -> dict[str, Any] | None:
    """What the paraphrase section reads beyond the study, or None when it calls a scorer.

    Its ranking compares the essays' vectors with the paraphrases' vectors,
    which the fitted transformer makes: the key holds those vectors
    themselves (made here, as the section makes them), so that whatever the
    transformer is (a fitted TF-IDF, an encoder whose weights changed) a hit
    needs the same vectors. With a system that can re-score a text (an
    estimator), the section calls it on the paraphrases: not cached.
    """
    if study.paraphrases is None or any(
        system.estimator is not None for system in study.systems.values()
    ):
        return None
    out: dict[str, Any] = {}
    for rname, space in study.spaces.items():
        if space.transformer is not None:
            Xp = space.transformer.transform(study.paraphrases)
            out[rname] = Xp.to_numpy() if hasattr(Xp, "to_numpy") else Xp
    return out


def _column(values: Any) -> tuple[dict[str, Any], np.ndarray | None]:
    """A column's description for the archive, and its array when it is numeric."""
    dtype = values.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "biufcmM":
        return {"dtype": dtype.str, "store": "npy"}, np.asarray(values)
    return {"dtype": str(dtype), "store": "json", "values": values.tolist()}, None


def _restore(desc: Mapping[str, Any], array: np.ndarray | None) -> Any:
    pd = __import__("pandas")
    if desc["store"] == "npy":
        return array
    dtype = desc["dtype"]
    return pd.array(desc["values"], dtype=object if dtype == "object" else dtype)


def encode(output: AnalysisOutput) -> bytes:
    """``output`` as the bytes of one ``.npz`` archive (see the module docstring)."""
    pd = __import__("pandas")
    arrays: dict[str, np.ndarray] = {}
    tables = []
    for t, (name, frame) in enumerate(output.tables.items()):
        index = frame.index
        if isinstance(index, pd.RangeIndex):
            index_desc: Any = [index.start, index.stop, index.step]
        else:
            index_desc, arr = _column(index)
            if arr is not None:
                arrays[f"t{t}_index"] = arr
        columns = []
        for c, column in enumerate(frame.columns):
            desc, arr = _column(frame.iloc[:, c])
            if arr is not None:
                arrays[f"t{t}_c{c}"] = arr
            columns.append({"name": column, **desc})
        tables.append({"name": name, "index": index_desc, "columns": columns})
    keys = []
    for r, (key, values) in enumerate(output.replicates.items()):
        keys.append(list(key))
        arrays[f"r{r}"] = np.asarray(values)
    meta = {
        "format": _FORMAT,
        "tables": tables,
        "notes": output.notes,
        "warnings": output.warnings,
        "replicates": keys,
    }
    arrays["meta"] = np.frombuffer(
        json.dumps(meta, ensure_ascii=False).encode("utf-8"), dtype=np.uint8
    )
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub: **kwds are arrays
    return buf.getvalue()


def decode(blob: bytes) -> AnalysisOutput:
    """The output :func:`encode` wrote; ValueError (or KeyError) for anything else."""
    pd = __import__("pandas")
    from .analyses import AnalysisOutput

    with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
    if meta.get("format") != _FORMAT:
        raise ValueError("another archive format")
    out = AnalysisOutput(notes=list(meta["notes"]), warnings=list(meta["warnings"]))
    for t, table in enumerate(meta["tables"]):
        data = {
            c: _restore(col, arrays.get(f"t{t}_c{c}"))
            for c, col in enumerate(table["columns"])
        }
        if isinstance(table["index"], list):
            index = pd.RangeIndex(*table["index"])
        else:
            index = pd.Index(_restore(table["index"], arrays.get(f"t{t}_index")))
        frame = pd.DataFrame(data, index=index)
        frame.columns = pd.Index([col["name"] for col in table["columns"]])
        out.tables[table["name"]] = frame
    for r, key in enumerate(meta["replicates"]):
        out.replicates[(key[0], key[1], key[2], key[3])] = arrays[f"r{r}"]
    return out


def same(a: AnalysisOutput, b: AnalysisOutput) -> bool:
    """Whether two outputs are equal: every table exactly, every replicate bit for bit."""
    pd = __import__("pandas")
    if (a.notes, a.warnings) != (b.notes, b.warnings) or list(a.tables) != list(b.tables):
        return False
    if list(a.replicates) != list(b.replicates):
        return False
    for key, values in a.replicates.items():
        other = b.replicates[key]
        if values.dtype != other.dtype or not np.array_equal(values, other, equal_nan=True):
            return False
    for name, frame in a.tables.items():
        try:
            pd.testing.assert_frame_equal(frame, b.tables[name], check_exact=True)
        except AssertionError:
            return False
    return True


def _from_vector(vec: np.ndarray) -> AnalysisOutput:
    """An output read back from the cache; ValueError for anything unreadable."""
    try:
        return decode(unpack_bytes(vec))
    except Exception as exc:  # a bad zip, JSON or layout: all mean "recompute"
        raise ValueError(f"not a stored analysis output ({exc})") from None


class _Outputs(ResultStore):
    """One section's outputs: a ResultStore of ``.npz`` bytes instead of JSON."""

    encode = staticmethod(pack_bytes)
    decode = staticmethod(_from_vector)


class AnalysisCache:
    """The audit's store of analysis outputs in its cache folder (or none).

    Parameters
    ----------
    cache : EmbeddingCache
        The audit's embedding cache; without a folder nothing is read or written.

    Examples
    --------
    >>> from sklearn_fairaes.text._cache import open_cache
    >>> from sklearn_fairaes.report._analysis_cache import AnalysisCache
    >>> AnalysisCache(open_cache(False)).counts()
    {'read': 0, 'computed': 0, 'refused': 0, 'not_stored': 0, 'uncached': {}}
    """

    def __init__(self, cache: Any) -> None:
        self._cache = persistent_cache(cache)
        self._stores: dict[str, _Outputs] = {}
        self._keys: dict[int, str | None] = {}
        self._identity: dict[str, Any] | None = None
        self._counts = {"read": 0, "computed": 0, "refused": 0, "not_stored": 0}
        self._uncached: dict[str, str] = {}

    def _store(self, section_id: str) -> _Outputs:
        if section_id not in self._stores:
            if self._identity is None:
                from .._config import get_config

                self._identity = {
                    "package_source": _package_digest(),
                    "versions": _versions(),
                    "config": {k: str(v) for k, v in sorted(get_config().items())},
                    "archive_format": _FORMAT,
                }
            self._stores[section_id] = _Outputs(
                self._cache,  # type: ignore[arg-type]  # checked in run()
                f"analysis:{section_id}",
                {"section": section_id, **self._identity},
                {"encoder": f"analysis {section_id}", "model": "-"},
                lambda text, value: True,
            )
        return self._stores[section_id]

    def _key(self, study: Study) -> str | None:
        if id(study) not in self._keys:
            try:
                self._keys[id(study)] = study_key(study)
            except Uncacheable as exc:
                self._keys[id(study)] = None
                self._uncached[study.prompt] = str(exc)
        return self._keys[id(study)]

    def run(self, section: Section, study: Study) -> AnalysisOutput:
        """The section's output on ``study``: read back when stored, else computed (and stored)."""
        from .analyses import SECTIONS

        analysis = section.analysis
        assert analysis is not None  # for mypy: the audit runs sections with one
        builtin = any(s is section for s in SECTIONS) and section.template_dir is None
        cached = section.id in CACHED or section.id in CACHED_WITH_INPUTS
        if self._cache is None or not cached or not builtin:
            return analysis.run(study)
        key = self._key(study)
        if key is None:
            return analysis.run(study)
        if section.id in CACHED_WITH_INPUTS:
            inputs = paraphrase_inputs(study)
            if inputs is None:
                return analysis.run(study)
            h = hashlib.sha256(key.encode("ascii"))
            try:
                _feed(h, inputs)
            except Uncacheable:
                return analysis.run(study)
            key = h.hexdigest()
        store = self._store(section.id)
        before = store_counts(store.kind)
        output = store.get(key)
        if output is not None:
            self._counts["read"] += 1
            return output
        if store_counts(store.kind)["refused"] > before["refused"]:
            self._counts["refused"] += 1
        output = analysis.run(study)
        self._counts["computed"] += 1
        try:
            blob = encode(output)
            # read back equal, and within the packing's 16 MB
            kept = len(blob) < _LIMIT and same(output, decode(blob))
        except (TypeError, ValueError, OverflowError):
            kept = False
        if kept:
            store.put(key, blob)
        else:
            self._counts["not_stored"] += 1
        return output

    def add(self, counts: Mapping[str, Any]) -> None:
        """Count what another process's cache did for this audit (a study's task, issue 35)."""
        for name in self._counts:
            self._counts[name] += int(counts.get(name, 0))
        self._uncached.update(counts.get("uncached", {}))

    def counts(self) -> dict[str, Any]:
        """What this audit's analyses did, counted per (section, prompt).

        ``read``: outputs read back; ``computed``: outputs computed (stored
        unless counted in ``not_stored``, an output that does not read back
        equal or is over 16 MB); ``refused``: stored entries that passed the
        cache's checks but did not decode (an entry failing the checks is
        refused, with its warning, by the cache itself); ``uncached``: prompt
        -> why its study has no key.
        """
        return {**self._counts, "uncached": dict(self._uncached)}


def store_counts(kind: str) -> dict[str, int]:
    """The process-wide counts of one result kind (``features._persist.result_counts``)."""
    from ..features._persist import result_counts

    return result_counts().get(kind, {"read": 0, "computed": 0, "refused": 0})
