"""The one embedding cache of the package.

Encoding is the slowest step of every experiment (about 30 essays/s with
MiniLM on 2 cores). A grid search clones its pipeline for every fold and
candidate; without a cache each clone would re-encode the same essays. This
cache is content-addressed -- key = encoder identity + hash of the text -- so
every distinct essay is encoded once per encoder, whichever clone asks.

The encoder identity holds everything that changes the vectors: the backend,
a fingerprint of the model (the SHA-256 of its weight and configuration
files, see :func:`file_sha256`) and the options (normalisation, long-text
handling, window). It holds nothing that only changes rounding (batch size,
device), so that the cache can serve one vector per essay.

Entries live in memory (per process) and, optionally, on disk as plain
``.npy`` files (never pickle), one file per key, named after the key only
(see :class:`EmbeddingCache` for the format and for why results are
deterministic).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import threading
import uuid
import warnings
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..exceptions import CacheCorruptionWarning, CacheWriteWarning

__all__ = ["EmbeddingCache", "get_cache"]

#: Version of the on-disk layout, part of every encoder key: entries written
#: in another layout live in other folders and are never read as this one.
_FORMAT = 2

# (absolute path, size, mtime in ns) -> SHA-256 hex digest of the file
_DIGESTS: dict[tuple[str, int, int], str] = {}
_DIGESTS_LOCK = threading.Lock()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's content, computed once per process and file version.

    A model's weights (90 MB for MiniLM, 420 MB for mpnet, 200 MB for LASER)
    are hashed once; later calls cost one ``stat``: the digest is kept per
    (path, size, modification time), which changes whenever the file is
    rewritten.
    """
    st = os.stat(path)
    sig = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    with _DIGESTS_LOCK:
        digest = _DIGESTS.get(sig)
    if digest is None:
        # hashlib.file_digest is Python >= 3.11; this reads the same bytes
        sha = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                sha.update(block)
        digest = sha.hexdigest()
        with _DIGESTS_LOCK:
            _DIGESTS[sig] = digest
    return digest


def text_key(text: str) -> str:
    """SHA-256 hex digest of an essay's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def identity_digest(identity: Mapping[str, Any]) -> str:
    """Full SHA-256 of an encoder identity (a JSON-able dict) and the cache format."""
    blob = json.dumps(
        {"identity": identity, "cache_format": _FORMAT}, sort_keys=True, default=str
    ).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def encoder_key(identity: Mapping[str, Any]) -> str:
    """Short, stable folder name for an encoder identity (a JSON-able dict)."""
    return identity_digest(identity)[:24]


def entry_key(identity_hex: str, tkey: str) -> str:
    """The key of one entry: SHA-256 of the full identity digest and the text's."""
    return hashlib.sha256(f"{identity_hex}:{tkey}".encode("ascii")).hexdigest()


def _record_dtype(dim: int) -> np.dtype[Any]:
    # one disk entry: its own key (checked on read, so a file copied or renamed
    # onto another essay's name is detected), the text's hash (for the message),
    # a checksum of the vector's bytes, and the vector itself, little-endian
    # float32 whatever the machine
    return np.dtype(
        [
            ("key", "S64"),
            ("text_sha256", "S64"),
            ("crc32", "<u4"),
            ("vector", "<f4", (dim,)),
        ]
    )


def _entry_problem(rec: NDArray[Any], key: str, tkey: str, dim: int | None) -> str | None:
    """Why a loaded disk entry cannot be served, or None when it can."""
    names = rec.dtype.names
    if rec.shape != () or names != ("key", "text_sha256", "crc32", "vector"):
        return "not an entry of this cache format"
    vdtype = rec.dtype["vector"]
    if vdtype.base != np.dtype("<f4"):
        return f"its vector has dtype {vdtype.base.name}, not float32"
    if len(vdtype.shape) != 1 or (dim is not None and vdtype.shape != (dim,)):
        want = "(dim,)" if dim is None else f"({dim},)"
        return f"its vector has shape {vdtype.shape}, not {want}"
    if rec.dtype != _record_dtype(vdtype.shape[0]):
        return "not an entry of this cache format"
    if rec["text_sha256"].item().decode("ascii", "replace") != tkey:
        return "it holds another text's vector"
    if rec["key"].item().decode("ascii", "replace") != key:
        return "it was written for another key"
    vec = rec["vector"]
    if zlib.crc32(vec.tobytes()) != int(rec["crc32"]):
        return "its bytes do not match their checksum"
    if not np.isfinite(vec).all():
        return "its vector holds NaN or infinite values"
    return None


class EmbeddingCache:
    """Content-addressed store of essay embeddings, in memory and optionally on disk.

    The key of an embedding is the encoder's identity (backend, model
    fingerprint, options) plus the SHA-256 of the text. Vectors are stored and
    returned as float32, the encoders' own output type, so that a vector read
    back from disk is bit-identical to the one first returned.

    On disk, entry ``<folder>/<encoder key>/<xx>/<text sha256>.npy`` is a
    plain ``.npy`` file (loadable with ``allow_pickle=False``) holding one
    record: the entry's full key, the text's SHA-256, the CRC-32 of the
    vector's bytes and the float32 vector. An entry is served only if it
    loads, has that layout, holds the key it is read for (a file renamed or
    copied onto another essay's name is refused), the expected dimension, a
    matching checksum and finite values; otherwise a
    :class:`~sklearn_fairaes.exceptions.CacheCorruptionWarning` is emitted,
    the entry counted in ``corrupt``, removed and recomputed.

    **Deterministic results.** Each key has exactly one file name, and the
    first writer wins: an entry is written to a temporary file, flushed to
    disk and then published with ``os.link``, which fails if the name already
    exists, so a published entry is never replaced (readers never see a
    half-written file either). A writer that loses the race, from another
    process or another clone, serves the winner's vector, not its own. So
    every later run reads the same vector, whatever order the folder lists,
    and whatever batch size the encoders used: a Sentence-BERT vector
    computed in batches of 8 can differ by about 1e-7 from the one computed
    in batches of 32, and the cache serves the first one written, every time.
    (On a file system without hard links the entry is published with
    ``os.replace`` when its name is still free, which keeps one file per key
    but lets two simultaneous first writers both succeed, the later one's
    vector staying.)

    A folder that cannot be written (read-only, full disk, no permission)
    still serves the entries it holds; new vectors are then kept in memory
    only, with one :class:`~sklearn_fairaes.exceptions.CacheWriteWarning`
    per cache object.

    Parameters
    ----------
    path : str or path-like, default=None
        Folder for the on-disk store; ``None`` keeps entries in memory only.

    Attributes
    ----------
    hits : int
        Number of embeddings served from the cache.
    misses : int
        Number of embeddings that had to be computed.
    corrupt : int
        Number of disk entries refused on read (and recomputed).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.text import EmbeddingCache
    >>> cache = EmbeddingCache()
    >>> calls = []
    >>> def encode(texts):
    ...     calls.append(list(texts))
    ...     return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)
    >>> ident = {"encoder": "length"}
    >>> cache.get_or_compute(ident, ["ab", "abc", "ab"], encode).tolist()
    [[2.0, 1.0], [3.0, 1.0], [2.0, 1.0]]
    >>> cache.get_or_compute(ident, ["abc"], encode).tolist()
    [[3.0, 1.0]]
    >>> calls
    [['ab', 'abc']]
    >>> cache.stats()
    {'hits': 2, 'misses': 2, 'entries': 2}
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = None if path is None else Path(path)
        self._memory: dict[tuple[str, str], NDArray[np.float32]] = {}
        self._lock = threading.Lock()
        self._write_warned = False
        self.hits = 0
        self.misses = 0
        self.corrupt = 0

    def __repr__(self) -> str:
        where = "memory" if self.path is None else str(self.path)
        return f"EmbeddingCache({where}, entries={len(self._memory)})"

    # sklearn's clone deep-copies parameters; a cache is a shared handle (like
    # a path), so every clone of an estimator must keep using the same one.
    def __copy__(self) -> EmbeddingCache:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> EmbeddingCache:
        return self

    # pickling (joblib workers): ship the location, not the in-memory entries
    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["path"])

    def stats(self) -> dict[str, int]:
        """Return the hit and miss counts and the number of in-memory entries.

        Returns
        -------
        stats : dict
            ``{"hits": int, "misses": int, "entries": int}``; the counts cover
            every call since the cache was made or :meth:`reset_stats` was
            last called. Refused disk entries are counted in ``corrupt``.
        """
        return {"hits": self.hits, "misses": self.misses, "entries": len(self._memory)}

    def reset_stats(self) -> None:
        """Set the hit, miss and corrupt counts back to zero."""
        self.hits = 0
        self.misses = 0
        self.corrupt = 0

    def clear(self) -> None:
        """Forget the in-memory entries (the disk store is left alone)."""
        with self._lock:
            self._memory.clear()

    # -- disk -------------------------------------------------------------
    def _entry_path(self, ekey: str, tkey: str) -> Path:
        # only called when the cache has a disk store (self.path is set)
        return cast(Path, self.path) / ekey / tkey[:2] / f"{tkey}.npy"

    def _read_disk(
        self, ekey: str, key: str, tkey: str, dim: int | None
    ) -> NDArray[np.float32] | None:
        file = self._entry_path(ekey, tkey)
        try:
            fh = open(file, "rb")
        except FileNotFoundError:
            return None
        except OSError:  # unreadable (permissions): as if absent, recomputed
            return None
        with fh:
            inode = os.fstat(fh.fileno()).st_ino
            try:
                rec = np.load(fh, allow_pickle=False)
                problem = _entry_problem(rec, key, tkey, dim)
            except Exception:  # truncated, garbage or a foreign file
                problem = "it is truncated or not a .npy file"
        if problem is None:
            return np.array(rec["vector"], dtype=np.float32)
        self.corrupt += 1
        warnings.warn(
            f"cached embedding {file} is corrupt ({problem}); it is removed and recomputed",
            CacheCorruptionWarning,
            stacklevel=4,
        )
        try:
            # remove only the file that was judged: another process may have
            # replaced it by a good entry meanwhile
            if os.stat(file).st_ino == inode:
                file.unlink()
        except OSError:
            pass
        return None

    def _warn_write(self, exc: OSError) -> None:
        if self._write_warned:
            return
        self._write_warned = True
        reason = exc.strerror or type(exc).__name__
        warnings.warn(
            f"the embedding cache folder {self.path} cannot be written ({reason}); "
            f"cached entries are still read from it, new embeddings are kept in "
            f"memory only. Pass a writable folder as cache= to keep them",
            CacheWriteWarning,
            stacklevel=5,
        )

    def _write_meta(self, ekey: str, identity: Mapping[str, Any]) -> None:
        # encoder.json says, for a person browsing the folder, which encoder
        # and options the entries belong to; the cache never reads it
        folder = cast(Path, self.path) / ekey
        meta = folder / "encoder.json"
        if meta.exists():
            return
        tmp = folder / f".encoder.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        try:
            tmp.write_text(json.dumps(identity, sort_keys=True, default=str, indent=1))
            os.replace(tmp, meta)
        finally:
            if tmp.exists():
                tmp.unlink()

    def _publish(self, file: Path, rec: NDArray[Any]) -> bool:
        """Write one entry under its name unless it exists; True if this one won."""
        tmp = file.parent / f".{file.stem}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, rec, allow_pickle=False)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, file)
                return True
            except FileExistsError:
                return False
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                    raise
                # no hard links on this file system: publish by rename if free
                if file.exists():
                    return False
                os.replace(tmp, file)
                return True
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass

    def _store(
        self,
        ekey: str,
        key: str,
        tkey: str,
        vec: NDArray[np.float32],
        identity: Mapping[str, Any],
    ) -> NDArray[np.float32]:
        """Publish ``vec`` on disk; return the vector the cache now serves for it."""
        file = self._entry_path(ekey, tkey)
        rec = np.zeros((), dtype=_record_dtype(vec.shape[0]))
        rec["key"] = key.encode("ascii")
        rec["text_sha256"] = tkey.encode("ascii")
        rec["vector"] = vec
        rec["crc32"] = zlib.crc32(rec["vector"].tobytes())
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            self._write_meta(ekey, identity)
            # two tries: a loser whose winner turns out corrupt has it removed
            # by _read_disk and publishes its own vector instead
            for _ in range(2):
                if self._publish(file, rec):
                    return vec
                winner = self._read_disk(ekey, key, tkey, vec.shape[0])
                if winner is not None:
                    return winner
        except OSError as exc:  # read-only folder, disk full, no permission
            self._warn_write(exc)
        return vec

    # -- main entry point -------------------------------------------------
    def get_or_compute(
        self,
        identity: Mapping[str, Any],
        texts: Sequence[str],
        compute: Callable[[list[str]], ArrayLike],
        *,
        dim: int | None = None,
    ) -> NDArray[np.float32]:
        """Return the embeddings of ``texts``, computing only those not cached.

        Parameters
        ----------
        identity : dict
            Everything that changes the encoder's output (backend, model
            fingerprint, options), JSON-able.
        texts : list of str
            The texts to embed, in order; repeats are allowed.
        compute : callable
            ``compute(list_of_distinct_texts) -> ndarray (n, dim)``; called at
            most once, with each missing text once.
        dim : int, default=None
            Expected embedding size, when known, to reject mismatched entries.

        Returns
        -------
        embeddings : ndarray of shape (len(texts), dim), float32
            One row per text, in the order of ``texts``.

        Raises
        ------
        RuntimeError
            If ``compute`` returns the wrong number of rows, or NaN or infinite
            values (nothing is cached then).
        """
        ident_hex = identity_digest(identity)
        ekey = ident_hex[:24]
        keys = [text_key(t) for t in texts]
        found: dict[str, NDArray[np.float32]] = {}
        missing: dict[str, str] = {}
        for text, tkey in zip(texts, keys):
            if tkey in found or tkey in missing:
                continue
            vec = self._memory.get((ident_hex, tkey))
            if vec is None and self.path is not None:
                vec = self._read_disk(ekey, entry_key(ident_hex, tkey), tkey, dim)
                if vec is not None:
                    self._memory[(ident_hex, tkey)] = vec
            if vec is None:
                missing[tkey] = text
            else:
                found[tkey] = vec
        if missing:
            raw = np.asarray(compute(list(missing.values())))
            if raw.ndim != 2 or raw.shape[0] != len(missing):
                raise RuntimeError(
                    f"encoder returned shape {raw.shape} for {len(missing)} texts"
                )
            with np.errstate(over="ignore"):  # overflow is caught just below
                new = raw.astype(np.float32)
            bad = ~np.isfinite(new).all(axis=1)
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                raise RuntimeError(
                    f"the encoder returned NaN or infinite values (or values beyond "
                    f"float32's range) for {int(bad.sum())} of {len(missing)} texts "
                    f"(the first: text {first} of those encoded); nothing was cached"
                )
            with self._lock:
                for tkey, vec in zip(missing, new):
                    vec = np.array(vec, copy=True)
                    if self.path is not None:
                        vec = self._store(
                            ekey, entry_key(ident_hex, tkey), tkey, vec, identity
                        )
                    self._memory[(ident_hex, tkey)] = vec
                    found[tkey] = vec
        # a text repeated within one call is computed once and served again: a hit
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        if not keys:
            return np.empty((0, dim or 0), dtype=np.float32)
        return np.stack([found[k] for k in keys])


_REGISTRY: dict[str | None, EmbeddingCache] = {}
_REGISTRY_LOCK = threading.Lock()


def get_cache(
    cache: bool | str | os.PathLike[str] | EmbeddingCache | None,
) -> EmbeddingCache | None:
    """Map an estimator's ``cache`` parameter to a shared :class:`EmbeddingCache`.

    Clones of an estimator therefore share one cache, which is what makes a
    grid search encode each essay once.

    Parameters
    ----------
    cache : bool, str, path-like, EmbeddingCache or None
        ``None`` or ``False``: no cache; ``True``: the process-wide in-memory
        cache; a path: the (process-wide) cache stored in that folder; an
        :class:`EmbeddingCache`: itself.

    Returns
    -------
    cache : EmbeddingCache or None
        The shared cache, or None when ``cache`` asks for none.

    Raises
    ------
    TypeError
        If ``cache`` is of any other type.

    Examples
    --------
    >>> from sklearn_fairaes.text import get_cache
    >>> get_cache(True) is get_cache(True)
    True
    >>> get_cache(None) is None
    True
    """
    if cache is None or cache is False:
        return None
    if isinstance(cache, EmbeddingCache):
        return cache
    key: str | None
    if cache is True:
        key = None
    elif isinstance(cache, (str, os.PathLike)):
        key = str(Path(cache).expanduser().resolve())
    else:
        raise TypeError(
            f"cache must be None, True, a folder path or an EmbeddingCache, got "
            f"{type(cache).__name__}"
        )
    with _REGISTRY_LOCK:
        if key not in _REGISTRY:
            _REGISTRY[key] = EmbeddingCache(key)
        return _REGISTRY[key]
