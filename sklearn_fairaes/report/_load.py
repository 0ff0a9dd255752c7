"""Reading a saved report back: its tables, metadata and bootstrap replicates.

A report folder written by :meth:`AuditResult.save` holds ``results.json``
(``{"meta": ..., "tables": ...}``, the tables as records), ``tables/*.csv``,
``report.html``, the marker ``.fairaes-report`` listing those files, and, when
the audit drew bootstrap replicates, ``replicates.npz``: two arrays, ``keys``
(shape ``(K, 5)``, text: prompt, table, representation, system, column) and
``values`` (shape ``(K, B)``, float64). NumPy reads it with
``allow_pickle=False``: a report never runs code when it is read.

The tables are read from ``results.json`` (the CSV files neutralise cells that
a spreadsheet would run as formulas, so they do not hold the raw text); a table
without rows takes its columns from the CSV file's header.

``meta["report_format"]`` numbers the layout of ``results.json``: a report of a
newer format than :data:`REPORT_FORMAT` is refused (upgrade the package), and
one written before the key existed is read as format 1, which it is.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ._output import MARKER, read_marker

if TYPE_CHECKING:
    from pandas import DataFrame

#: The layout of ``results.json`` and ``replicates.npz`` this version writes and reads.
REPORT_FORMAT = 1

REPLICATES_FILE = "replicates.npz"

ReplicateKey = tuple[str, str, str, str, str]

# what every audit's meta holds, and the readers of a loaded report rely on
_REQUIRED_META = ("n_essays", "prompts", "representations", "systems")


def write_replicates(
    path: Path, replicates: Mapping[ReplicateKey, NDArray[np.float64]]
) -> None:
    """Write the replicates as ``keys`` (K, 5) text and ``values`` (K, B) float64."""
    keys = sorted(replicates)
    lengths = {len(replicates[k]) for k in keys}
    if len(lengths) > 1:
        raise ValueError(
            f"the replicates have different lengths {sorted(lengths)}; every figure of "
            "an audit is resampled with the same n_bootstrap replicates"
        )
    values = np.stack([np.asarray(replicates[k], dtype=np.float64) for k in keys])
    with open(path, "wb") as fh:
        np.savez(fh, keys=np.asarray(keys, dtype=str).reshape(len(keys), 5), values=values)


def _bad(folder: Path, why: str) -> ValueError:
    return ValueError(f"{folder} is not a readable fairaes report: {why}")


def _read_replicates(folder: Path) -> dict[ReplicateKey, NDArray[np.float64]]:
    path = folder / REPLICATES_FILE
    if not path.exists():
        return {}
    try:
        with np.load(path, allow_pickle=False) as data:
            keys, values = data["keys"], data["values"]
    except (OSError, ValueError, KeyError) as exc:
        raise _bad(folder, f"{REPLICATES_FILE} cannot be read ({exc})") from None
    if (
        keys.ndim != 2
        or keys.shape[1] != 5
        or values.ndim != 2
        or values.shape[0] != keys.shape[0]
        or keys.dtype.kind != "U"
    ):
        raise _bad(
            folder,
            f"{REPLICATES_FILE} holds keys of shape {keys.shape} and values of shape "
            f"{values.shape}; expected text keys (K, 5) and values (K, B)",
        )
    out: dict[ReplicateKey, NDArray[np.float64]] = {}
    for key, row in zip(keys.tolist(), values.astype(np.float64)):
        out[(key[0], key[1], key[2], key[3], key[4])] = row
    return out


def _csv_columns(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return next(csv.reader(fh), [])
    except OSError:
        return []


def read_report(
    folder: str | os.PathLike[str],
) -> tuple[dict[str, DataFrame], dict[str, Any], dict[ReplicateKey, NDArray[np.float64]]]:
    """Read the tables, meta and replicates of the report folder ``folder``.

    Raises
    ------
    ValueError
        If ``folder`` is not a report of ours, its ``results.json`` is missing,
        malformed or of a newer format, or ``replicates.npz`` is malformed.
    """
    import pandas as pd

    folder = Path(folder)
    if not folder.is_dir():
        raise _bad(folder, "no such folder; give the folder `fairaes audit --out` wrote")
    marker = read_marker(folder)
    if marker is None:
        raise _bad(
            folder,
            f"it has no {MARKER} marker, so it was not written by `fairaes audit` or "
            "AuditResult.save",
        )
    if "results.json" not in marker["files"]:
        raise _bad(
            folder,
            "it holds no results.json (a `fairaes compare` folder is not an audit "
            "report); give the folder `fairaes audit --out` wrote",
        )
    try:
        with open(folder / "results.json", encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise _bad(folder, f"results.json cannot be read ({exc})") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("meta"), dict)
        or not isinstance(data.get("tables"), dict)
    ):
        raise _bad(folder, 'results.json is not {"meta": {...}, "tables": {...}}')
    meta: dict[str, Any] = data["meta"]
    fmt = meta.get("report_format", 1)
    written_by = (meta.get("versions") or {}).get("sklearn_fairaes", "an unknown version")
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt > REPORT_FORMAT or fmt < 1:
        raise _bad(
            folder,
            f"its results.json has report format {fmt!r} (written by sklearn_fairaes "
            f"{written_by}); this version reads format {REPORT_FORMAT}: upgrade "
            "sklearn_fairaes or re-run the audit with this version",
        )
    missing = [k for k in _REQUIRED_META if k not in meta]
    if missing:
        raise _bad(folder, f"the meta of results.json lacks {missing}")
    tables: dict[str, DataFrame] = {}
    for name, records in data["tables"].items():
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise _bad(folder, f"table {name!r} of results.json is not a list of records")
        if records:
            columns = list(records[0])
            tables[name] = pd.DataFrame.from_records(records, columns=columns)
        else:
            columns = _csv_columns(folder / "tables" / f"{name}.csv")
            tables[name] = pd.DataFrame(columns=columns)
    return tables, meta, _read_replicates(folder)
