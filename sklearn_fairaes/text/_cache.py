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
import re
import sys
import threading
import time
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

#: Default bound on the bytes of vectors an :class:`EmbeddingCache` keeps in
#: memory (256 MiB), so that a long-lived process that opted into a cache does
#: not grow without limit; the least recently used entries go first.
DEFAULT_MAX_BYTES = 256 * 2**20

#: Written at the root of every folder the cache stores entries in. Its first
#: line is the Cache Directory Tagging signature (https://bford.info/cachedir/),
#: so backup tools skip the folder; ``fairaes cache clear`` removes only what
#: lies under a folder holding it, in this cache's layout.
MARKER = "CACHEDIR.TAG"
_MARKER_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by sklearn-fairaes (embedding cache).\n"
    "# Remove the entries with `fairaes cache clear --cache <this folder>`.\n"
)
_ENCODER_DIR = re.compile(r"^[0-9a-f]{24}$")
_SHARD_DIR = re.compile(r"^[0-9a-f]{2}$")
_ENTRY_FILE = re.compile(r"^[0-9a-f]{64}\.npy$")
_TMP_FILE = re.compile(r"^\.(?:[0-9a-f]{64}|encoder)\.\d+\.[0-9a-f]{32}\.tmp$")
# a temporary file this old is a leftover of a killed writer, not one in flight
_STALE_TMP_S = 3600.0


def default_cache_dir() -> Path:
    """The per-user folder of the persistent embedding cache (not created here).

    ``$SKLEARN_FAIRAES_CACHE`` when set; else, on Linux and other Unix systems,
    ``$XDG_CACHE_HOME/sklearn_fairaes/embeddings`` (default
    ``~/.cache/sklearn_fairaes/embeddings``, next to the language data of
    :func:`~sklearn_fairaes.resources.data_home`); on macOS
    ``~/Library/Caches/sklearn_fairaes/embeddings``; on Windows
    ``%LOCALAPPDATA%\\sklearn_fairaes\\Cache\\embeddings``. This is the folder
    :func:`~sklearn_fairaes.audit` and ``fairaes audit`` use by default.

    Returns
    -------
    path : pathlib.Path
        The folder (it may not exist yet).

    Examples
    --------
    >>> import os
    >>> from sklearn_fairaes.text._cache import default_cache_dir
    >>> os.environ["SKLEARN_FAIRAES_CACHE"] = "/tmp/my-embeddings"
    >>> str(default_cache_dir())
    '/tmp/my-embeddings'
    >>> del os.environ["SKLEARN_FAIRAES_CACHE"]
    >>> default_cache_dir().name
    'embeddings'
    """
    env = os.environ.get("SKLEARN_FAIRAES_CACHE")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
        return Path(base) / "sklearn_fairaes" / "Cache" / "embeddings"
    if sys.platform == "darwin":
        return Path("~/Library/Caches/sklearn_fairaes/embeddings").expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return Path(base) / "sklearn_fairaes" / "embeddings"


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


def _atomic_text(file: Path, text: str) -> None:
    """Write a small text file under its name at once (temporary file + rename)."""
    tmp = (
        file.parent
        / f".{'encoder' if file.name == 'encoder.json' else 'marker'}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    )
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, file)
    finally:
        if tmp.exists():
            tmp.unlink()


def _entry_header(file: Path) -> int | None:
    """The vector size of a file in this cache's entry format, else None.

    Reads only the ``.npy`` header (a few hundred bytes), never the data, and
    never unpickles: a file that is not one of our records is left alone by
    :meth:`EmbeddingCache.purge` and not counted by :meth:`EmbeddingCache.info`.
    """
    try:
        with open(file, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                return None
    except Exception:  # unreadable, not .npy, or a header numpy refuses
        return None
    if shape != () or dtype.names != ("key", "text_sha256", "crc32", "vector"):
        return None
    vshape = dtype["vector"].shape
    if len(vshape) != 1 or dtype != _record_dtype(vshape[0]):
        return None
    return int(vshape[0])


def _read_about(folder: Path) -> dict[str, Any]:
    """What ``encoder.json`` says of an encoder folder ({} when unreadable)."""
    try:
        blob = json.loads((folder / "encoder.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(blob, dict):
        return {}
    if "identity" not in blob:  # written before "about" existed: the identity itself
        blob = {"identity": blob, "about": {}}
    identity = blob.get("identity") if isinstance(blob.get("identity"), dict) else {}
    about = blob.get("about") if isinstance(blob.get("about"), dict) else {}
    return {"identity": identity, "about": about}


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
    first writer wins: an entry is written whole to a temporary file and then
    published with ``os.link``, which fails if the name already exists, so a
    published entry is never replaced (readers never see a half-written file
    either). Entries are not forced to the disk one by one (no ``fsync``: 3 ms
    each, 10 s of a prompt-7 audit); an entry that a power cut leaves empty
    or torn fails its checks and is recomputed, like any corrupt one. A
    writer that loses the race, from another process or another clone,
    serves the winner's vector, not its own. So
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
    max_bytes : int or None, default=256 * 2**20
        Bound on the bytes of the vectors kept in memory (256 MiB by default:
        about 170,000 MiniLM or 87,000 mpnet vectors). Beyond it the least
        recently used entries are dropped from memory: a disk store still
        serves them, an in-memory cache computes them again when next asked
        for. ``None``: no bound.

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

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
    ) -> None:
        if max_bytes is not None and (
            isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0
        ):
            raise ValueError(
                f"max_bytes must be None or an int >= 0 (bytes of vectors kept in "
                f"memory), got {max_bytes!r}"
            )
        self.path = None if path is None else Path(path)
        self.max_bytes = max_bytes
        # insertion order is recency order (a hit moves its entry to the end),
        # so the first entries are the least recently used, evicted first
        self._memory: dict[tuple[str, str], NDArray[np.float32]] = {}
        self._memory_bytes = 0
        self._lock = threading.Lock()
        self._write_warned = False
        # set by open_cache for a folder found not writable: entries are read
        # from it, new ones kept in memory without trying the disk each time
        self._read_only = False
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
        return {
            "path": self.path,
            "read_only": self._read_only,
            "max_bytes": self.max_bytes,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(
            self, state["path"], max_bytes=state.get("max_bytes", DEFAULT_MAX_BYTES)
        )
        self._read_only = bool(state.get("read_only", False))

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
            self._memory_bytes = 0

    def _remember(self, key: tuple[str, str], vec: NDArray[np.float32]) -> None:
        """Keep ``vec`` in memory as the most recent entry, within ``max_bytes``."""
        old = self._memory.pop(key, None)
        if old is not None:
            self._memory_bytes -= old.nbytes
        self._memory[key] = vec
        self._memory_bytes += vec.nbytes
        if self.max_bytes is None:
            return
        while self._memory_bytes > self.max_bytes and self._memory:
            oldest = next(iter(self._memory))
            self._memory_bytes -= self._memory.pop(oldest).nbytes

    # -- the disk store as a whole (``fairaes cache info|clear``) ------------
    def _encoder_dirs(self) -> list[Path]:
        # only a folder that holds our marker is read as a store: pointed at
        # some other folder, info reports nothing and purge removes nothing
        if self.path is None or not (self.path / MARKER).is_file():
            return []
        return sorted(
            d for d in self.path.iterdir() if d.is_dir() and _ENCODER_DIR.match(d.name)
        )

    @staticmethod
    def _entries(folder: Path) -> list[tuple[Path, int]]:
        """(file, vector size) of each file under ``folder`` in the entry format."""
        out = []
        for shard in sorted(folder.iterdir()):
            if not (shard.is_dir() and _SHARD_DIR.match(shard.name)):
                continue
            for file in sorted(shard.iterdir()):
                if (
                    _ENTRY_FILE.match(file.name)
                    and file.name.startswith(shard.name)
                    and file.is_file()
                ):
                    dim = _entry_header(file)
                    if dim is not None:
                        out.append((file, dim))
        return out

    def writable(self) -> str | None:
        """Check that the disk store can be written; the reason when it cannot.

        Creates the folder and its marker file if needed. An in-memory cache
        is always writable.

        Returns
        -------
        reason : str or None
            None when entries can be written, else why not (the OS message).

        Examples
        --------
        >>> import tempfile
        >>> from sklearn_fairaes.text import EmbeddingCache
        >>> EmbeddingCache(tempfile.mkdtemp()).writable() is None
        True
        """
        if self.path is None:
            return None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            _atomic_text(self.path / MARKER, _MARKER_TEXT)
            probe = self.path / f".probe.{os.getpid()}.{uuid.uuid4().hex}.tmp"
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            return exc.strerror or type(exc).__name__
        return None

    def info(self) -> dict[str, Any]:
        """Describe the disk store: folder, entries, bytes and one row per encoder.

        Only files in this cache's own layout are counted (under a folder
        holding its ``CACHEDIR.TAG`` marker, named by their key, with the
        entry record's ``.npy`` header); anything else in the folder is
        ignored.

        Returns
        -------
        info : dict
            ``folder`` (str or None), ``entries`` (int), ``bytes`` (int) and
            ``encoders``: a list of dicts with ``key`` (the encoder folder),
            ``encoder`` (class), ``model``, ``backend``, ``dim``, ``entries``
            and ``bytes``.

        Examples
        --------
        >>> import tempfile
        >>> import numpy as np
        >>> from sklearn_fairaes.text import EmbeddingCache
        >>> cache = EmbeddingCache(tempfile.mkdtemp())
        >>> _ = cache.get_or_compute({"encoder": "ones"}, ["a", "b"],
        ...                          lambda t: np.ones((len(t), 3)),
        ...                          about={"encoder": "Ones", "model": "none"})
        >>> info = cache.info()
        >>> info["entries"], [(e["encoder"], e["model"], e["dim"]) for e in info["encoders"]]
        (2, [('Ones', 'none', 3)])
        """
        encoders = []
        for folder in self._encoder_dirs():
            entries = self._entries(folder)
            meta = _read_about(folder)
            about, identity = meta.get("about", {}), meta.get("identity", {})
            size = 0
            for file, _ in entries:
                try:
                    size += file.stat().st_size
                except OSError:  # removed meanwhile by another process
                    pass
            encoders.append(
                {
                    "key": folder.name,
                    "encoder": str(about.get("encoder") or identity.get("encoder") or "?"),
                    "model": str(about.get("model") or "?"),
                    "backend": str(identity.get("backend") or "-"),
                    "dim": entries[0][1] if entries else about.get("dim"),
                    "entries": len(entries),
                    "bytes": size,
                }
            )
        return {
            "folder": None if self.path is None else str(self.path),
            "entries": sum(e["entries"] for e in encoders),
            "bytes": sum(e["bytes"] for e in encoders),
            "encoders": encoders,
        }

    def purge(self) -> dict[str, int]:
        """Remove every entry this cache wrote on disk, and its in-memory entries.

        Removes only files in the cache's own layout (see :meth:`info`), the
        ``encoder.json`` of an encoder folder left without entries, temporary files left by killed writers
        (older than an hour) and the folders this leaves empty; the marker
        goes last, once nothing else is left. Any other file in the folder,
        and the folders holding one, stay.

        Returns
        -------
        removed : dict
            ``{"entries": int, "bytes": int}``: what was removed.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> import numpy as np
        >>> from sklearn_fairaes.text import EmbeddingCache
        >>> folder = Path(tempfile.mkdtemp())
        >>> cache = EmbeddingCache(folder)
        >>> _ = cache.get_or_compute({"encoder": "ones"}, ["a"], lambda t: np.ones((1, 2)))
        >>> _ = (folder / "notes.txt").write_text("mine")
        >>> cache.purge()["entries"]
        1
        >>> sorted(p.name for p in folder.iterdir())  # the marker stays beside it
        ['CACHEDIR.TAG', 'notes.txt']
        """
        removed = {"entries": 0, "bytes": 0}
        now = time.time()

        def rm(file: Path) -> int:
            try:
                size = file.stat().st_size
                file.unlink()
            except OSError:  # gone already, or not ours to remove (permissions)
                return -1
            return size

        for folder in self._encoder_dirs():
            for file, _ in self._entries(folder):
                size = rm(file)
                if size >= 0:
                    removed["entries"] += 1
                    removed["bytes"] += size
            for sub in [folder, *(d for d in folder.iterdir() if d.is_dir())]:
                if sub is not folder and not _SHARD_DIR.match(sub.name):
                    continue
                for file in sub.iterdir():
                    try:
                        stale = now - file.stat().st_mtime > _STALE_TMP_S
                    except OSError:
                        continue
                    if _TMP_FILE.match(file.name) and stale:
                        rm(file)
                if sub is not folder:
                    try:
                        sub.rmdir()  # only when empty: a foreign file keeps it
                    except OSError:
                        pass
            if not self._entries(folder):  # none left (one may be written meanwhile)
                rm(folder / "encoder.json")
                try:
                    folder.rmdir()  # only when empty: a foreign file keeps it
                except OSError:
                    pass
        if self.path is not None and (self.path / MARKER).is_file():
            if [p.name for p in self.path.iterdir()] == [MARKER]:
                rm(self.path / MARKER)
        self.clear()
        return removed

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

    def _write_meta(
        self, ekey: str, identity: Mapping[str, Any], about: Mapping[str, Any] | None
    ) -> None:
        # encoder.json says which encoder and options the entries belong to, for
        # a person browsing the folder and for `fairaes cache info`; entries are
        # never served by it (their keys are checked instead)
        root = cast(Path, self.path)
        marker = root / MARKER
        if not marker.exists():
            _atomic_text(marker, _MARKER_TEXT)
        meta = root / ekey / "encoder.json"
        if meta.exists():
            return
        blob = {"cache_format": _FORMAT, "identity": identity, "about": dict(about or {})}
        _atomic_text(meta, json.dumps(blob, sort_keys=True, default=str, indent=1))

    def _publish(self, file: Path, rec: NDArray[Any]) -> bool:
        """Write one entry under its name unless it exists; True if this one won."""
        tmp = file.parent / f".{file.stem}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, rec, allow_pickle=False)
                # written whole before the link makes it visible; no fsync: other
                # processes read it through the page cache, and only a power cut
                # could lose it -- leaving an entry that fails its checks and is
                # recomputed (3 ms per entry, 10 s of a cold prompt-7 audit)
                fh.flush()
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
        about: Mapping[str, Any] | None = None,
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
            self._write_meta(ekey, identity, about)
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
    def has(self, identity: Mapping[str, Any], text: str) -> bool:
        """Whether an entry for ``text`` is held (in memory or on disk), unread.

        A quick look before deciding whether work is needed: the entry is
        not read nor checked, so :meth:`get_or_compute` may still refuse it
        (and recompute it).

        Parameters
        ----------
        identity : dict
            The encoder's identity, as given to :meth:`get_or_compute`.
        text : str
            The text.

        Returns
        -------
        held : bool
            True when the entry is in memory or its file exists.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_fairaes.text import EmbeddingCache
        >>> cache = EmbeddingCache()
        >>> cache.has({"encoder": "demo"}, "an essay")
        False
        >>> _ = cache.get_or_compute({"encoder": "demo"}, ["an essay"],
        ...                          lambda texts: np.ones((len(texts), 2)))
        >>> cache.has({"encoder": "demo"}, "an essay")
        True
        """
        ident_hex = identity_digest(identity)
        tkey = text_key(text)
        with self._lock:
            if (ident_hex, tkey) in self._memory:
                return True
        return self.path is not None and self._entry_path(ident_hex[:24], tkey).is_file()

    def get_or_compute(
        self,
        identity: Mapping[str, Any],
        texts: Sequence[str],
        compute: Callable[[list[str]], ArrayLike],
        *,
        dim: int | None = None,
        about: Mapping[str, Any] | None = None,
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
        about : dict, default=None
            A description of the encoder for people (class, model name),
            written to the disk store's ``encoder.json`` and shown by
            ``fairaes cache info``; not part of the key.

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
            with self._lock:
                vec = self._memory.pop((ident_hex, tkey), None)
                if vec is not None:  # a hit becomes the most recent entry
                    self._memory[(ident_hex, tkey)] = vec
            if vec is None and self.path is not None:
                vec = self._read_disk(ekey, entry_key(ident_hex, tkey), tkey, dim)
                if vec is not None:
                    with self._lock:
                        self._remember((ident_hex, tkey), vec)
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
                    if self.path is not None and not self._read_only:
                        vec = self._store(
                            ekey, entry_key(ident_hex, tkey), tkey, vec, identity, about
                        )
                    self._remember((ident_hex, tkey), vec)
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


def open_cache(
    cache: bool | str | os.PathLike[str] | EmbeddingCache | None,
) -> EmbeddingCache:
    """The embedding cache of an audit (``audit(cache=)``, ``fairaes audit --cache``).

    Unlike an encoder's ``cache=True`` (the in-memory cache), ``True`` here
    means the persistent per-user folder, so that re-running an audit encodes
    nothing. The folder is checked before any work: one that cannot be written
    gives a :class:`~sklearn_fairaes.exceptions.CacheWriteWarning` now, not a
    crash after minutes of encoding; its entries are still read, new vectors
    are kept in memory.

    Parameters
    ----------
    cache : bool, str, path-like, EmbeddingCache or None
        ``True``: :func:`default_cache_dir`; a folder: that one; ``False`` or
        ``None``: the process-wide in-memory cache only; an
        :class:`EmbeddingCache`: itself.

    Returns
    -------
    cache : EmbeddingCache
        Shared with every encoder given the same folder in this process.

    Examples
    --------
    >>> import tempfile
    >>> from sklearn_fairaes.text._cache import open_cache
    >>> folder = tempfile.mkdtemp()
    >>> open_cache(folder) is open_cache(folder)
    True
    >>> open_cache(False).path is None
    True
    """
    if cache is None or cache is False:
        return cast(EmbeddingCache, get_cache(True))
    resolved = cast(
        EmbeddingCache, get_cache(default_cache_dir() if cache is True else cache)
    )
    reason = resolved.writable()
    if reason is None:
        return resolved
    path = cast(Path, resolved.path)
    readable = path.is_dir() and os.access(path, os.R_OK | os.X_OK)
    warnings.warn(
        f"the embedding cache folder {path} cannot be written ({reason}); "
        + (
            "its entries are read, new embeddings are kept in memory only"
            if readable
            else "embeddings are kept in memory only"
        )
        + ". Pass a writable folder (--cache DIR, cache=, or $SKLEARN_FAIRAES_CACHE) "
        "to keep them, or --no-cache / cache=False to silence this",
        CacheWriteWarning,
        stacklevel=2,
    )
    if not readable:
        return cast(EmbeddingCache, get_cache(True))
    fallback = EmbeddingCache(path)
    fallback._read_only = True
    return fallback
