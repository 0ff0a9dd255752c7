"""The report's figures kept across runs as the PNGs they become (issue 35).

Drawing the report's figures was most of writing it: 10.8 s of a warm
re-run of the eight ASAP prompts (56 figures), after every number had been
read back from the cache. A figure is a deterministic function of what it
draws -- one prompt's tables, the shared order, colours and scale
(:class:`~sklearn_fairaes.report.analyses.FigureContext`) -- of the drawing
code, of matplotlib (its version, FreeType's, the ``rcParams`` in force) and
of the resolution. So the PNGs of each built-in section's figures of each
prompt are kept in the audit's cache folder, as entries of the embedding
cache through :class:`~sklearn_fairaes.features._persist.ResultStore` (one
cache mechanism: atomic publishing, every read checked, a damaged entry
refused with a :class:`~sklearn_fairaes.exceptions.CacheCorruptionWarning`
and drawn again), and a re-run embeds the stored bytes: the page is the
same, byte for byte, as when they were drawn.

**The key.** The entry's identity holds the SHA-256 of every source file of
this package, the library versions (matplotlib and FreeType among them), a
digest of matplotlib's ``rcParams`` (but the backend, which does not change
a PNG drawn by a :class:`~matplotlib.figure.Figure`'s own canvas) and the
resolution. Its text is the SHA-256 of the section's id, the context's
``repr`` and every table of the prompt (names, columns, dtypes, index and
values, each value with its type, as
:func:`~sklearn_fairaes.report._analysis_cache.study_key` digests them). A
section registered from outside the package (code no digest here covers) is
drawn every time, as is every figure without a cache folder.

**Format.** One ``.npz`` archive (``allow_pickle=False``) per section and
prompt: the figures' names in order and each PNG as bytes; an entry whose
PNGs do not begin with the PNG signature is refused.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..features._persist import ResultStore, pack_bytes, persistent_cache, unpack_bytes

if TYPE_CHECKING:
    import pandas as pd

#: Version of the archive layout below, part of every identity
_FORMAT = 1
_PNG = b"\x89PNG\r\n\x1a\n"
# read back, drawn (and stored): what this process did, for tests
_COUNTS = {"read": 0, "drawn": 0}


def counts() -> dict[str, int]:
    """Figures' sections read back and drawn in this process (per section and prompt).

    Examples
    --------
    >>> from sklearn_fairaes.report._figure_cache import counts
    >>> sorted(counts())
    ['drawn', 'read']
    """
    return dict(_COUNTS)


def _encode(pngs: Mapping[str, bytes]) -> bytes:
    arrays = {
        f"p{i}": np.frombuffer(png, dtype=np.uint8) for i, png in enumerate(pngs.values())
    }
    meta = {"format": _FORMAT, "names": list(pngs)}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub: **kwds are arrays
    return buf.getvalue()


def _decode(vec: np.ndarray) -> dict[str, bytes]:
    try:
        with np.load(io.BytesIO(unpack_bytes(vec)), allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
        meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
        if meta.get("format") != _FORMAT:
            raise ValueError("another archive format")
        out = {str(n): arrays[f"p{i}"].tobytes() for i, n in enumerate(meta["names"])}
    except Exception as exc:  # a bad zip, JSON or layout: all mean "draw again"
        raise ValueError(f"not stored figures ({exc})") from None
    if not all(png.startswith(_PNG) and len(png) > 24 for png in out.values()):
        raise ValueError("not PNG images")
    return out


class _Pngs(ResultStore):
    """One section's figures of one prompt: PNG bytes in an ``.npz`` archive."""

    encode = staticmethod(lambda pngs: pack_bytes(_encode(pngs)))
    decode = staticmethod(_decode)


def _identity(dpi: int) -> dict[str, Any]:
    import matplotlib
    from matplotlib import ft2font

    from ._analysis_cache import _package_digest
    from ._study_cache import _versions

    # the raw values: reading rcParams["backend"] may resolve (and import) one
    params = sorted(
        (k, repr(v))
        for k, v in dict.items(matplotlib.rcParams)
        if not k.startswith("backend")
    )
    return {
        "package_source": _package_digest(),
        "versions": {
            **_versions(),
            "matplotlib": matplotlib.__version__,
            "freetype": str(ft2font.__freetype_version__),
        },
        "rcparams": hashlib.sha256(repr(params).encode("utf-8")).hexdigest(),
        "dpi": int(dpi),
        "archive_format": _FORMAT,
    }


def _tables_digest(tables: Mapping[str, pd.DataFrame]) -> str:
    """SHA-256 of every table: names, columns, dtypes, index and values (with types)."""
    from ._analysis_cache import _feed

    h = hashlib.sha256()
    for name, frame in tables.items():
        _feed(h, ["table", name, [repr(c) for c in frame.columns]])
        _feed(h, [str(d) for d in frame.dtypes])
        _feed(h, np.asarray(frame.index))
        for c in range(frame.shape[1]):
            _feed(h, frame.iloc[:, c].to_numpy())
    return h.hexdigest()


def _png(fig: Any, dpi: int) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def figure_pngs(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any] | None, cache: Any, dpi: int
) -> dict[str, bytes] | None:
    """Every figure of the report as PNG bytes, read back where kept; None without a folder.

    The keys and their order are those of
    :func:`~sklearn_fairaes.report.analyses.make_figures`; each PNG is what
    embedding that figure at ``dpi`` gives.
    """
    from ._analysis_cache import Uncacheable
    from .analyses import SECTIONS, figure_units

    disk = persistent_cache(cache)
    if disk is None:
        return None
    frames = {k: v for k, v in tables.items() if v is not None}
    store: _Pngs | None = None
    # one prompt's tables are one dict, shared by its sections: digested once
    last: tuple[Any, str | None] = (None, None)
    out: dict[str, bytes] = {}
    for key_of, section, ptables, context in figure_units(frames, meta):
        assert section.figures is not None  # for mypy: only sections that draw
        builtin = any(s is section for s in SECTIONS) and section.template_dir is None
        key = None
        if builtin:
            if last[0] is not ptables:
                try:
                    last = (ptables, _tables_digest(ptables))
                except Uncacheable:
                    last = (ptables, None)
            digest = last[1]
            if digest is not None:
                h = hashlib.sha256(f"{section.id}\0{context!r}\0{digest}".encode())
                key = h.hexdigest()
        if key is not None:
            if store is None:
                store = _Pngs(
                    disk,
                    "report:figures",
                    _identity(dpi),
                    {"encoder": "report figures", "model": "PNG"},
                    lambda text, value: True,
                )
            got = store.get(key)
            if got is not None:
                _COUNTS["read"] += 1
                out.update((key_of(name), png) for name, png in got.items())
                continue
        pngs = {
            name: _png(fig, dpi) for name, fig in section.figures(ptables, context).items()
        }
        _COUNTS["drawn"] += 1
        if key is not None and store is not None:
            store.put(key, pngs)
        out.update((key_of(name), png) for name, png in pngs.items())
    return out
