"""The one embedding cache of the package.

Encoding is the slowest step of every experiment (about 30 essays/s with
MiniLM on 2 cores). A grid search clones its pipeline for every fold and
candidate; without a cache each clone would re-encode the same essays. This
cache is content-addressed -- key = encoder identity + hash of the text -- so
every distinct essay is encoded once per encoder, whichever clone asks.

Entries live in memory (per process) and, optionally, on disk as plain
``.npy`` files (never pickle). A disk entry is named after the SHA-256 of the
text and the CRC-32 of the vector's bytes; it is written to a temporary file
and renamed into place, so several joblib workers may write at once and a
reader never sees a half-written file. An entry that fails to load, has the
wrong shape or dtype, or whose bytes do not match its CRC is warned about,
removed and recomputed.
"""

from __future__ import annotations

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

from ..exceptions import CacheCorruptionWarning

__all__ = ["EmbeddingCache", "get_cache"]


def text_key(text: str) -> str:
    """SHA-256 hex digest of an essay's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def encoder_key(identity: Mapping[str, Any]) -> str:
    """Short, stable folder name for an encoder identity (a JSON-able dict)."""
    blob = json.dumps(identity, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:24]


class EmbeddingCache:
    """Content-addressed store of essay embeddings, in memory and optionally on disk.

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

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.text import EmbeddingCache
    >>> cache = EmbeddingCache()
    >>> calls = []
    >>> def encode(texts):
    ...     calls.append(list(texts))
    ...     return np.array([[len(t), 1.0] for t in texts])
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
        self._memory: dict[tuple[str, str], NDArray[Any]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

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
            last called.
        """
        return {"hits": self.hits, "misses": self.misses, "entries": len(self._memory)}

    def reset_stats(self) -> None:
        """Set the hit and miss counts back to zero."""
        self.hits = 0
        self.misses = 0

    def clear(self) -> None:
        """Forget the in-memory entries (the disk store is left alone)."""
        with self._lock:
            self._memory.clear()

    # -- disk -------------------------------------------------------------
    def _folder(self, ekey: str) -> Path:
        # only called when the cache has a disk store (self.path is set)
        return cast(Path, self.path) / ekey

    def _read_disk(self, ekey: str, tkey: str, dim: int | None) -> NDArray[Any] | None:
        folder = self._folder(ekey) / tkey[:2]
        try:
            names = [n for n in os.listdir(folder) if n.startswith(tkey + ".")]
        except FileNotFoundError:
            return None
        for name in names:
            if name.endswith(".tmp"):
                continue
            file = folder / name
            try:
                crc = int(name.split(".")[1], 16)
                vec = np.load(file, allow_pickle=False)
                ok = (
                    vec.ndim == 1
                    and vec.dtype.kind == "f"
                    and (dim is None or vec.shape[0] == dim)
                    and zlib.crc32(vec.tobytes()) == crc
                )
            except Exception:  # truncated, garbage or a foreign file
                ok = False
            if ok:
                return vec
            warnings.warn(
                f"cached embedding {file} is corrupt or truncated; it is removed and "
                f"recomputed",
                CacheCorruptionWarning,
                stacklevel=4,
            )
            try:
                file.unlink()
            except OSError:
                pass
        return None

    def _write_disk(
        self, ekey: str, tkey: str, vec: NDArray[Any], identity: Mapping[str, Any]
    ) -> None:
        folder = self._folder(ekey)
        meta = folder / "encoder.json"
        shard = folder / tkey[:2]
        shard.mkdir(parents=True, exist_ok=True)
        if not meta.exists():
            tmp = folder / f".encoder.{uuid.uuid4().hex}.tmp"
            tmp.write_text(json.dumps(identity, sort_keys=True, default=str, indent=1))
            os.replace(tmp, meta)
        vec = np.ascontiguousarray(vec)
        final = shard / f"{tkey}.{zlib.crc32(vec.tobytes()):08x}.npy"
        if final.exists():
            return
        tmp = shard / f".{tkey}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as fh:
            np.save(fh, vec, allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)

    # -- main entry point -------------------------------------------------
    def get_or_compute(
        self,
        identity: Mapping[str, Any],
        texts: Sequence[str],
        compute: Callable[[list[str]], ArrayLike],
        *,
        dim: int | None = None,
    ) -> NDArray[Any]:
        """Return the embeddings of ``texts``, computing only those not cached.

        Parameters
        ----------
        identity : dict
            Everything that changes the encoder's output (model, options).
        texts : list of str
            The texts to embed, in order; repeats are allowed.
        compute : callable
            ``compute(list_of_distinct_texts) -> ndarray (n, dim)``; called at
            most once, with each missing text once.
        dim : int, default=None
            Expected embedding size, when known, to reject mismatched entries.

        Returns
        -------
        embeddings : ndarray of shape (len(texts), dim)
            One row per text, in the order of ``texts``.
        """
        ekey = encoder_key(identity)
        keys = [text_key(t) for t in texts]
        found: dict[str, NDArray[Any]] = {}
        missing: dict[str, str] = {}
        for text, tkey in zip(texts, keys):
            if tkey in found or tkey in missing:
                continue
            vec = self._memory.get((ekey, tkey))
            if vec is None and self.path is not None:
                vec = self._read_disk(ekey, tkey, dim)
                if vec is not None:
                    self._memory[(ekey, tkey)] = vec
            if vec is None:
                missing[tkey] = text
            else:
                found[tkey] = vec
        if missing:
            new = np.asarray(compute(list(missing.values())))
            if new.ndim != 2 or new.shape[0] != len(missing):
                raise RuntimeError(
                    f"encoder returned shape {new.shape} for {len(missing)} texts"
                )
            with self._lock:
                for tkey, vec in zip(missing, new):
                    vec = np.array(vec, copy=True)
                    self._memory[(ekey, tkey)] = vec
                    found[tkey] = vec
                    if self.path is not None:
                        self._write_disk(ekey, tkey, vec, identity)
        # a text repeated within one call is computed once and served again: a hit
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        if not keys:
            return np.empty((0, dim or 0))
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
