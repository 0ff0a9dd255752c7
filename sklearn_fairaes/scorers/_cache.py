"""The persistent response cache of the scorers you call (one SQLite file).

One row per scored text: the key is a SHA-256 of the scorer's spec (never its
credentials), the text's own SHA-256 and the repeat index, so that an audit
that scores each essay K times (``repeat`` 0..K-1) keeps K answers, and a
re-run, or a run resumed after an interruption, sends only what is missing.
Only the thread that called ``predict`` reads and writes it: the worker
threads return their answers, which are written (and committed) batch by
batch, so an interrupted run keeps every batch answered before it stopped.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable, Mapping

__all__ = ["ResponseCache", "entry_key"]


def entry_key(spec: str, text: str, repeat: int) -> str:
    """The cache key of one text scored by ``spec`` for the ``repeat``-th time."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return hashlib.sha256(f"{spec}\0{digest}\0{int(repeat)}".encode()).hexdigest()


class ResponseCache:
    """A key -> score table in one SQLite file (created with its folder)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        # a timeout: two audits sharing one cache folder wait for each other's
        # writes instead of failing with "database is locked"
        self._db = sqlite3.connect(self.path, timeout=30.0)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, score REAL NOT NULL)"
        )
        self._db.commit()

    def get_many(self, keys: Iterable[str]) -> dict[str, float]:
        """The cached score of each of ``keys`` that has one."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, float] = {}
        for start in range(0, len(keys), 500):  # SQLite's parameter limit
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, score FROM scores WHERE key IN ({marks})", chunk
            )
            found.update((k, float(v)) for k, v in rows)
        return found

    def put_many(self, entries: Mapping[str, float]) -> None:
        """Keep ``entries`` (committed at once: an interruption keeps them)."""
        self._db.executemany(
            "INSERT OR REPLACE INTO scores (key, score) VALUES (?, ?)",
            [(k, float(v)) for k, v in entries.items()],
        )
        self._db.commit()

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM scores").fetchone()[0])

    def close(self) -> None:
        """Close the file."""
        self._db.close()
