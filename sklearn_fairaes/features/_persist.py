"""Per-essay results kept across runs in the embedding cache's folder.

POS tags and WordNet paraphrases are deterministic functions of the essay
and of a few known inputs (the tagger's weights, WordNet, the options, the
seed), yet each run of an audit used to compute them again: on ASAP prompt 7
that is most of what a re-run with every embedding cached still spends
outside model fitting. This module keeps them where the embeddings are kept,
as entries of :class:`~sklearn_fairaes.text.EmbeddingCache`, so that:

* there is one cache root (``--cache DIR``, ``$SKLEARN_FAIRAES_CACHE``,
  ``--no-cache``; ``audit(cache=)``), and ``fairaes cache info|clear`` count
  and clear these entries with the embeddings (each kind of result is one
  "encoder" folder there, named in ``encoder.json``);
* an entry is published atomically, first writer wins, and is served only
  after the cache's own checks (its key, the text's SHA-256, a CRC-32 of its
  bytes); a truncated or garbled entry is refused with a
  :class:`~sklearn_fairaes.exceptions.CacheCorruptionWarning`, removed and
  recomputed, and a folder that cannot be written keeps new results in memory
  with one :class:`~sklearn_fairaes.exceptions.CacheWriteWarning`.

**Format.** A result is JSON (UTF-8, compact), packed into the cache's
float32 vectors: element 0 is the byte length, then three bytes per element
(``b0 + 256 b1 + 65536 b2``, below 2**24, so exact in float32). A decoded
result is also checked by its consumer (e.g. one tag per token) before it is
used; one that fails is recomputed.

**Keys.** A kind's identity holds everything its result depends on: the
backend's files (SHA-256 of the weights, as the embedding cache does for
models), library versions, the options, and the SHA-256 of the source files
of this package that compute it, so a code change never serves an old
result. Within a kind, an entry is keyed by a text (the essay, or the digest
of its tokens).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from ..text import EmbeddingCache

__all__ = [
    "ResultStore",
    "persistent_cache",
    "result_counts",
    "source_digest",
]

#: Version of the packing below, part of every identity.
_FORMAT = 1
# element values are 24-bit words: exact in float32 (24-bit significand)
_LIMIT = 1 << 24

# (kind) -> [read, computed, refused]: what the stores did in this process
_COUNTS: dict[str, list[int]] = {}
_COUNTS_LOCK = threading.Lock()

# resolved path -> the EmbeddingCache object all stores of that folder share
_SIBLINGS: dict[str, EmbeddingCache] = {}
_SIBLINGS_LOCK = threading.Lock()


class _Absent(Exception):
    """Raised by the probe's compute: the entry is not in the cache."""


def _absent(texts: list[str]) -> NDArray[np.float32]:
    raise _Absent


def pack(value: Any) -> NDArray[np.float32] | None:
    """A JSON-able value as a float32 vector (see the module docstring); None if too big.

    Examples
    --------
    >>> from sklearn_fairaes.features._persist import pack, unpack
    >>> unpack(pack(["NN", "VBD", "."]))
    ['NN', 'VBD', '.']
    """
    blob = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return pack_bytes(blob)


def unpack(vec: NDArray[Any]) -> Any:
    """The value :func:`pack` packed; raises ValueError for anything else."""
    return json.loads(unpack_bytes(vec).decode("utf-8"))


def pack_bytes(blob: bytes) -> NDArray[np.float32] | None:
    """Bytes as a float32 vector (the packing of the module docstring); None if too big.

    Examples
    --------
    >>> from sklearn_fairaes.features._persist import pack_bytes, unpack_bytes
    >>> list(unpack_bytes(pack_bytes(bytes([0, 255, 97]))))
    [0, 255, 97]
    """
    if len(blob) >= _LIMIT:
        return None
    padded = np.frombuffer(blob + b"\0" * (-len(blob) % 3), dtype=np.uint8)
    words = padded.reshape(-1, 3).astype(np.uint32)
    packed = words[:, 0] | (words[:, 1] << 8) | (words[:, 2] << 16)
    return np.concatenate([[len(blob)], packed]).astype(np.float32)


def unpack_bytes(vec: NDArray[Any]) -> bytes:
    """The bytes :func:`pack_bytes` packed; raises ValueError for anything else."""
    v = np.asarray(vec, dtype=np.float64)
    if (
        v.ndim != 1
        or v.size == 0
        or not np.all((v >= 0) & (v < _LIMIT) & (v == np.floor(v)))
    ):
        raise ValueError("not a packed result")
    n = int(v[0])
    words = v[1:].astype("<u4")
    if words.size != -(-n // 3):
        raise ValueError("its length does not match its byte count")
    # each word's three low bytes, in order (little-endian: bytes 0, 1, 2)
    blob = words.view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    if any(blob[n:]):
        raise ValueError("its padding is not zero")
    return blob[:n]


def source_digest(*modules: str) -> str:
    """SHA-256 of the source files of the named modules of this package, in order.

    Part of a result kind's identity: a result computed by other code is never
    served. ``modules`` are dotted names relative to the package
    (``"features._pos"``).
    """
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for name in modules:
        path = root.joinpath(*name.split(".")).with_suffix(".py")
        h.update(name.encode("utf-8") + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def persistent_cache(cache: Any) -> EmbeddingCache | None:
    """The on-disk embedding cache ``cache`` names, or None for none or memory only.

    ``cache`` takes an estimator's ``cache`` values (see
    :func:`~sklearn_fairaes.text.get_cache`): a folder, an
    :class:`~sklearn_fairaes.text.EmbeddingCache`, True (the in-memory cache:
    None here, the per-process tag memo already does its job), False or None.
    """
    from ..text import get_cache

    resolved = get_cache(cache)
    if resolved is None or resolved.path is None:
        return None
    return resolved


def _sibling(cache: EmbeddingCache) -> EmbeddingCache:
    """An EmbeddingCache on ``cache``'s folder with counters of its own.

    The audit reports how many embeddings its cache served and computed; the
    stores here must not add their entries to those counts, so they read and
    write the same folder through another object (one per folder and process,
    so its write warning comes once). A folder the audit found read-only
    (``open_cache``'s fallback) stays read-only here, without a second warning.
    """
    from ..text import EmbeddingCache

    key = str(cast(Path, cache.path).expanduser().resolve())
    read_only = bool(getattr(cache, "_read_only", False))
    with _SIBLINGS_LOCK:
        sib = _SIBLINGS.get(key)
        if sib is None or bool(getattr(sib, "_read_only", False)) != read_only:
            sib = EmbeddingCache(key)
            sib._read_only = read_only
            _SIBLINGS[key] = sib
        return sib


def _count(kind: str, field: int, n: int = 1) -> None:
    with _COUNTS_LOCK:
        _COUNTS.setdefault(kind, [0, 0, 0])[field] += n


def result_counts() -> dict[str, dict[str, int]]:
    """What the result stores did in this process so far, per kind.

    Returns
    -------
    counts : dict
        kind -> ``{"read": int, "computed": int, "refused": int}``: results
        served from disk, results computed and stored (or kept in memory when
        the folder cannot be written), entries refused on read (recomputed).

    Examples
    --------
    >>> from sklearn_fairaes.features._persist import result_counts
    >>> isinstance(result_counts(), dict)
    True
    """
    with _COUNTS_LOCK:
        return {
            kind: {"read": c[0], "computed": c[1], "refused": c[2]}
            for kind, c in sorted(_COUNTS.items())
        }


class ResultStore:
    """One kind of per-text result, stored in an embedding cache's folder.

    Parameters
    ----------
    cache : EmbeddingCache
        An on-disk cache (its ``path`` is set); the entries go to its folder.
    kind : str
        Short name of the result (``"pos_tags"``); counts are kept per kind.
    identity : dict
        Everything the result depends on besides the text (JSON-able).
    about : dict
        What ``fairaes cache info`` shows: ``encoder`` and ``model``.
    check : callable
        ``check(key_text, value) -> bool``: whether a decoded value can be
        used for that text; a value that fails is recomputed.

    Examples
    --------
    >>> import tempfile
    >>> from sklearn_fairaes.text import EmbeddingCache
    >>> from sklearn_fairaes.features._persist import ResultStore
    >>> store = ResultStore(EmbeddingCache(tempfile.mkdtemp()), "lengths",
    ...                     {"what": "len"}, {"encoder": "Lengths", "model": "-"},
    ...                     lambda text, value: isinstance(value, int))
    >>> store.get("abc") is None
    True
    >>> store.put("abc", 3)
    >>> ResultStore(EmbeddingCache(store.path), "lengths", {"what": "len"},
    ...             {"encoder": "Lengths", "model": "-"},
    ...             lambda text, value: isinstance(value, int)).get("abc")
    3
    """

    #: How a value becomes a packed vector and back (a subclass may store bytes)
    encode: Callable[[Any], NDArray[np.float32] | None] = staticmethod(pack)
    decode: Callable[[NDArray[Any]], Any] = staticmethod(unpack)

    def __init__(
        self,
        cache: EmbeddingCache,
        kind: str,
        identity: Mapping[str, Any],
        about: Mapping[str, Any],
        check: Callable[[str, Any], bool],
    ) -> None:
        if cache.path is None:
            raise ValueError(
                "a ResultStore needs an on-disk EmbeddingCache (one made with a "
                "folder); pass persistent_cache(...)'s result, which is None for none"
            )
        self._cache = _sibling(cache)
        self.path = cache.path
        self.kind = kind
        self.identity = {
            "result": kind,
            "result_format": _FORMAT,
            "backend": "packed-json",
            **identity,
        }
        self.about = dict(about)
        self.check = check

    def get(self, text: str, check: Callable[[str, Any], bool] | None = None) -> Any | None:
        """The stored result for ``text``, or None (absent, corrupt or unusable).

        ``check`` replaces the store's own check for this call (a check that
        needs more than the text, such as the essay's token count).
        """
        try:
            vec = self._cache.get_or_compute(self.identity, [text], _absent)[0]
        except _Absent:
            return None
        try:
            value = self.decode(vec)
            usable = (check or self.check)(text, value)
        except (ValueError, TypeError, UnicodeDecodeError, KeyError, IndexError, OSError):
            usable = False
        if not usable:
            from ..exceptions import CacheCorruptionWarning

            _count(self.kind, 2)
            warnings.warn(
                f"a stored {self.kind} result in {self.path} passed the cache's checks "
                f"but is not a usable result for its text; it is recomputed",
                CacheCorruptionWarning,
                stacklevel=2,
            )
            return None
        _count(self.kind, 0)
        return value

    def stored(self, text: str) -> bool:
        """Whether a result for ``text`` is stored (not read: :meth:`get` checks it)."""
        return self._cache.has(self.identity, text)

    def put(self, text: str, value: Any) -> None:
        """Store ``value`` as ``text``'s result (kept if one is stored already).

        The caller uses its own ``value`` either way: results are deterministic,
        so a concurrent writer that got there first stored the same one.
        """
        _count(self.kind, 1)
        vec = self.encode(value)
        if vec is None:  # beyond the format's 16 MB: not kept, still correct
            return
        self._cache.get_or_compute(
            self.identity, [text], lambda _: vec[None, :], about=self.about
        )


def file_digests(folder: str | os.PathLike[str], names: Iterable[str]) -> dict[str, str]:
    """SHA-256 of each named file (or every file of each named subfolder) under ``folder``.

    Missing names are recorded as ``"missing"`` (still part of the identity).
    """
    from ..text._cache import file_sha256

    base = Path(folder)
    out: dict[str, str] = {}
    for name in names:
        path = base / name
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                out[file.relative_to(base).as_posix()] = file_sha256(file)
        elif path.is_file():
            out[name] = file_sha256(path)
        else:
            out[name] = "missing"
    return out
