"""The user's own embeddings as representations of the audit (``embeddings=``).

An engine's own vectors define "similar essays" the way the engine sees
them. :func:`read_embeddings` reads and checks them at plan time, before any
work: an array (or ``.npy`` file) aligned with the data's rows, or a table
(``.csv``, ``.parquet`` or a DataFrame) keyed by the essays' ids
(``id_col``), one numeric column per dimension. Each becomes a
:class:`GivenEmbeddings`, which the audit treats like a fitted
representation: its own pair space with cosine distances, named by its key
in every table. The vectors of texts the user did not embed (paraphrases,
edited essays) do not exist, so the sections that need them leave the
embeddings out and say so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..resources import require
from ._config import AuditInputError

#: How many rows or ids a message lists before "...".
_SHOWN = 10

#: File suffixes read, and what they hold.
SUFFIXES = (".csv", ".npy", ".parquet")


@dataclass(frozen=True)
class GivenEmbeddings:
    """Vectors the user computed, one row per data row, as a representation.

    Not a transformer: it cannot embed a text it was not given. The audit
    takes the rows of each prompt's essays (:meth:`rows`); the sections that
    would embed new texts (paraphrases, edited essays) check for it.

    Parameters
    ----------
    name : str
        The representation's name in the report.
    vectors : ndarray of shape (n_rows, n_dims)
        Float vectors aligned with the data's rows.
    source : str
        Where they came from, for the report (a file name or ``"array"``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report._embeddings import GivenEmbeddings
    >>> emb = GivenEmbeddings("engine", np.eye(3), "array")
    >>> emb.rows(np.array([0, 2])).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    >>> emb
    GivenEmbeddings(engine: 3 essays x 3 dims from array)
    """

    name: str
    vectors: NDArray[np.float64]
    source: str

    def rows(self, rows: NDArray[np.intp]) -> NDArray[np.float64]:
        """The vectors of the given data rows (0-based)."""
        return self.vectors[rows]

    def __repr__(self) -> str:
        n, d = self.vectors.shape
        return f"GivenEmbeddings({self.name}: {n} essays x {d} dims from {self.source})"


def read_embeddings(
    embeddings: Mapping[str, Any] | None,
    *,
    ids: NDArray[Any],
    id_col: str | None,
    taken: Sequence[str],
) -> dict[str, GivenEmbeddings]:
    """Read and check every entry of ``embeddings``; raise AuditInputError on bad input.

    Parameters
    ----------
    embeddings : dict name -> array, DataFrame or path, or None
        An array (or ``.npy`` path) has one row per data row, in order; a
        DataFrame (or ``.csv`` / ``.parquet`` path) has the column ``id_col``
        and one numeric column per dimension, one row per essay id (rows
        whose id the data lacks are ignored).
    ids : ndarray of str
        The data's essay ids, in row order.
    id_col : str or None
        The data's id column (needed for a table of vectors).
    taken : sequence of str
        Names already used: the built-in representation names and those of
        ``representations``.

    Returns
    -------
    embeddings : dict of str to GivenEmbeddings
        In the order given.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report._embeddings import read_embeddings
    >>> out = read_embeddings({"engine": np.ones((2, 3))}, ids=np.array(["1", "2"]),
    ...                       id_col=None, taken=["tfidf"])
    >>> out["engine"].vectors.shape
    (2, 3)
    """
    if embeddings is None:
        return {}
    if not isinstance(embeddings, Mapping):
        raise AuditInputError(
            f"embeddings must be a dict name -> array or file, got "
            f"{type(embeddings).__name__}; e.g. embeddings={{'engine': 'vectors.npy'}}"
        )
    out: dict[str, GivenEmbeddings] = {}
    for name, value in embeddings.items():
        if not isinstance(name, str) or not name.strip():
            raise AuditInputError(
                f"embeddings: the name {name!r} is not a non-empty string; name each "
                f"set of vectors (embeddings={{'engine': ...}}, --embeddings engine=FILE)"
            )
        if name in taken:
            raise AuditInputError(
                f"embeddings {name!r}: the name is already a representation of the "
                f"audit ({', '.join(sorted(taken))}); give your vectors another name "
                f"(e.g. {name}_own)"
            )
        out[name] = _read_one(name, value, ids, id_col)
    return out


def _read_one(
    name: str, value: Any, ids: NDArray[Any], id_col: str | None
) -> GivenEmbeddings:
    pd = require("pandas", purpose="the audit")
    where = f"embeddings {name!r}"
    source = "array"
    if isinstance(value, (str, os.PathLike)):
        path = Path(value)
        source = path.name
        where = f"embeddings {name!r} ({path})"
        suffix = path.suffix.lower()
        if suffix not in SUFFIXES:
            raise AuditInputError(
                f"{where}: unknown file type {path.suffix or '(none)'!r}; give a .npy "
                f"file (one row per data row) or a .csv or .parquet file keyed by the "
                f"id column"
            )
        if not path.is_file():
            raise AuditInputError(f"{where}: no such file; check the path")
        try:
            if suffix == ".npy":
                # allow_pickle=False: a .npy file is data, never code to run
                value = np.load(path, allow_pickle=False)
            elif suffix == ".csv":
                # ids as written ("007" stays "007", as the data's ids are read)
                value = pd.read_csv(path, dtype=None if id_col is None else {id_col: str})
            else:
                # pandas reads parquet through pyarrow, an optional dependency
                require("pyarrow", purpose="reading .parquet embeddings")
                value = pd.read_parquet(path)
        except ImportError as exc:
            raise AuditInputError(
                f"{where}: {exc}; or save the vectors as .csv or .npy"
            ) from None
        except (OSError, ValueError) as exc:
            raise AuditInputError(f"{where}: cannot read the file ({exc})") from None
    if isinstance(value, pd.DataFrame):
        X, label = _from_table(where, value, ids, id_col)
    else:
        X, label = _from_array(where, value, len(ids)), _data_row
    _check_values(where, X, ids, label)
    return GivenEmbeddings(name, X, source)


def _data_row(i: int, ids: NDArray[Any]) -> str:
    return f"data row {i + 1} (id {ids[i]})"


def _from_array(where: str, value: Any, n: int) -> NDArray[np.float64]:
    try:
        X = np.asarray(value)
    except Exception as exc:  # a ragged list, an object that is not an array
        raise AuditInputError(f"{where}: not an array of numbers ({exc})") from None
    if X.ndim != 2:
        raise AuditInputError(
            f"{where}: expected a 2-D array (one row per data row, one column per "
            f"dimension), got shape {X.shape}"
        )
    if X.shape[0] != n:
        raise AuditInputError(
            f"{where}: {X.shape[0]} rows for {n} data rows; an array (.npy) has one "
            f"vector per data row, in the data's order (or give a .csv/.parquet keyed "
            f"by the id column)"
        )
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise AuditInputError(
            f"{where}: the array holds {X.dtype} values; give real numbers (float)"
        )
    return X.astype(np.float64)


def _from_table(
    where: str, table: Any, ids: NDArray[Any], id_col: str | None
) -> tuple[NDArray[np.float64], Any]:
    pd = require("pandas", purpose="the audit")
    if id_col is None:
        raise AuditInputError(
            f"{where}: a table of vectors is keyed by essay id, but no id column is "
            f"given; pass id_col (--id-col), or give a .npy array aligned with the rows"
        )
    if id_col not in table.columns:
        raise AuditInputError(
            f"{where}: no column {id_col!r} (the id column); the columns are "
            f"{', '.join(map(repr, list(table.columns)[:_SHOWN]))}"
        )
    dims = [c for c in table.columns if c != id_col]
    if not dims:
        raise AuditInputError(f"{where}: no column besides {id_col!r}; add the vectors")
    for c in dims:
        if not pd.api.types.is_numeric_dtype(table[c]) or pd.api.types.is_bool_dtype(
            table[c]
        ):
            bad = pd.to_numeric(table[c], errors="coerce").isna() & table[c].notna()
            at = np.flatnonzero(bad.to_numpy())
            first = (
                f" (file row {at[0] + 2}: {str(table[c].iloc[at[0]])[:30]!r})"
                if len(at)
                else ""
            )
            raise AuditInputError(
                f"{where}: column {c!r} is not numeric{first}; every column besides "
                f"{id_col!r} is a dimension of the vectors and must hold numbers"
            )
    keys = table[id_col].astype(str).to_numpy()
    dup = pd.Series(keys).duplicated(keep=False).to_numpy()
    if dup.any():
        rows = (np.flatnonzero(dup)[:_SHOWN] + 2).tolist()
        raise AuditInputError(
            f"{where}: id {keys[dup][0]!r} appears more than once (file rows {rows}, "
            f"the header being row 1); give one vector per essay id"
        )
    index = {k: i for i, k in enumerate(keys)}
    missing = [str(i) for i in ids if str(i) not in index]
    if missing:
        shown = ", ".join(missing[:_SHOWN]) + (", ..." if len(missing) > _SHOWN else "")
        raise AuditInputError(
            f"{where}: {len(missing)} of the data's {len(ids)} essay ids have no vector "
            f"in column {id_col!r} (ids {shown}); give a vector for every essay"
        )
    order = np.array([index[str(i)] for i in ids], dtype=np.intp)
    X = table[dims].to_numpy(dtype=np.float64)[order]
    file_row = order + 2

    def label(i: int, ids: NDArray[Any]) -> str:
        return f"file row {file_row[i]} (id {ids[i]})"

    return X, label


def _check_values(
    where: str, X: NDArray[np.float64], ids: NDArray[Any], label: Any
) -> None:
    if X.shape[1] == 0:
        raise AuditInputError(f"{where}: the vectors have no dimension")
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        at = np.flatnonzero(bad)
        shown = "; ".join(label(int(i), ids) for i in at[:_SHOWN])
        raise AuditInputError(
            f"{where}: {len(at)} vector(s) hold NaN or infinite values: {shown}"
            f"{'; ...' if len(at) > _SHOWN else ''}; recompute or drop those essays"
        )
    zero = ~np.any(X != 0, axis=1)
    if zero.any():
        at = np.flatnonzero(zero)
        shown = "; ".join(label(int(i), ids) for i in at[:_SHOWN])
        raise AuditInputError(
            f"{where}: {len(at)} vector(s) are all zeros, whose cosine distance is "
            f"undefined: {shown}{'; ...' if len(at) > _SHOWN else ''}; recompute or "
            f"drop those essays"
        )
