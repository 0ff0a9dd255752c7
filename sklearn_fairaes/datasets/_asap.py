"""Reader of the ASAP-AES essays (Kaggle "Automated Student Assessment Prize", 2012).

The data cannot be shipped with the package; :func:`load_asap` reads a copy you
have: Kaggle's ``training_set_rel3.tsv`` (cp1252), a fold file of the Taghipour &
Ng (2016) split (``fold_K/test.tsv``, UTF-8), or a per-prompt extract of either.
All are tab-separated with CSV quoting (``"`` doubled inside quoted fields, which
may span lines). Parsing uses the standard library only; pandas is needed just for
``as_frame=True``.
"""

from __future__ import annotations

import codecs
import csv
import io
import numbers
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import Bunch

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_asap"]

#: Columns every ASAP file has and that the loader needs.
REQUIRED_COLUMNS = (
    "essay_id",
    "essay_set",
    "essay",
    "rater1_domain1",
    "rater2_domain1",
    "domain1_score",
)
_NUMERIC_COLUMN = re.compile(
    r"^(essay_id|essay_set|nea_fold|domain\d+_score|rater\d+_domain\d+|rater\d+_trait\d+)$"
)
_RATER_COLUMN = re.compile(r"^rater\d+_domain1$")
_TRAIT_COLUMN = re.compile(r"^rater\d+_trait\d+$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
# The five bytes that cp1252 leaves undefined; Kaggle's file holds a few of them.
_CP1252_UNDEFINED = frozenset(b"\x81\x8d\x8f\x90\x9d")


def _decode(raw: bytes, encoding: str | None) -> tuple[str, str, int]:
    """Decode the file's bytes; return ``(text, encoding name, n replaced bytes)``.

    Detection order: UTF-8 (with or without a byte-order mark), then cp1252 (the
    encoding of Kaggle's release), then latin-1. Kaggle's file contains a few bytes
    that cp1252 leaves undefined (e.g. 0x9D); they become U+FFFD, as in the
    UTF-8 fold files derived from it, rather than demoting the whole file to
    latin-1, which would turn every curly quote into a control character. Latin-1
    is used when most of the bytes 0x80-0x9F are ones cp1252 leaves undefined, so
    that the file cannot be cp1252 text.
    """
    if encoding is not None:
        return raw.decode(encoding), encoding, 0
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    else:
        return text, "utf-8-sig" if raw.startswith(codecs.BOM_UTF8) else "utf-8", 0
    try:
        return raw.decode("cp1252"), "cp1252", 0
    except UnicodeDecodeError:
        pass
    c1_bytes = sum(raw.count(bytes([b])) for b in range(0x80, 0xA0))
    undefined = sum(raw.count(bytes([b])) for b in _CP1252_UNDEFINED)
    if 2 * undefined < c1_bytes:
        return raw.decode("cp1252", errors="replace"), "cp1252", undefined
    return raw.decode("latin-1"), "latin-1", 0


def _read_table(path: Path, text: str) -> tuple[list[str], list[list[str]], list[int]]:
    """Split the text into a header and rows; rows keep their first line number."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t")
    header: list[str] | None = None
    rows: list[list[str]] = []
    lines: list[int] = []
    start = 1
    try:
        for record in reader:
            line, start = start, reader.line_num + 1
            if not record or (len(record) == 1 and not record[0].strip()):
                continue  # blank line (e.g. at the end of the file)
            if header is None:
                header = [name.strip() for name in record]
                continue
            if len(record) != len(header):
                raise ValueError(
                    f"{path}: data row {len(rows) + 1} (line {line}) has {len(record)} "
                    f"tab-separated fields but the header has {len(header)}; check that "
                    f"the file is the tab-separated ASAP file and that no essay holds an "
                    f"unquoted tab"
                )
            rows.append(record)
            lines.append(line)
    except csv.Error as exc:
        raise ValueError(
            f"{path}: cannot parse line {reader.line_num} as tab-separated values "
            f"({exc}); load_asap reads ASAP's training_set_rel3.tsv or its fold files"
        ) from exc
    if header is None:
        raise ValueError(
            f"{path}: the file is empty; expected ASAP's header line and essays"
        )
    return header, rows, lines


def _parse_numbers(
    path: Path,
    column: str,
    values: Sequence[str],
    where: Sequence[str],
    *,
    required: bool,
) -> NDArray[np.int64] | NDArray[np.float64]:
    """Convert one column to int64 (complete, integral) or float64 (NaN for empty).

    ``where[i]`` locates value ``i`` in the file, for the error message.
    """
    out = np.full(len(values), np.nan)
    for i, value in enumerate(values):
        value = value.strip()
        if not value:
            if required:
                raise ValueError(
                    f"{path}: column {column!r} is empty in {where[i]}; every essay "
                    f"needs a {column}"
                )
            continue
        if not _NUMBER.match(value):
            raise ValueError(
                f"{path}: column {column!r} in {where[i]} holds {value!r}; expected a "
                f"number. Is the file an ASAP file with its original columns?"
            )
        out[i] = float(value)
    if not np.isnan(out).any() and np.array_equal(out, np.round(out)):
        return out.astype(np.int64)
    return out


@overload
def load_asap(
    path: str | os.PathLike[str],
    *,
    prompt: int | None = ...,
    as_frame: Literal[True] = ...,
    encoding: str | None = ...,
) -> pd.DataFrame: ...


@overload
def load_asap(
    path: str | os.PathLike[str],
    *,
    prompt: int | None = ...,
    as_frame: Literal[False],
    encoding: str | None = ...,
) -> Bunch: ...


@overload
def load_asap(
    path: str | os.PathLike[str],
    *,
    prompt: int | None = ...,
    as_frame: bool = ...,
    encoding: str | None = ...,
) -> pd.DataFrame | Bunch: ...


def load_asap(
    path: str | os.PathLike[str],
    *,
    prompt: int | None = 7,
    as_frame: bool = True,
    encoding: str | None = None,
) -> pd.DataFrame | Bunch:
    """Load the ASAP-AES essays of one prompt with their rater and trait scores.

    Reads Kaggle's ``training_set_rel3.tsv``, the fold files of the Taghipour &
    Ng (2016) split (``fold_K/test.tsv``) or a per-prompt extract of them. The
    data is not shipped with the package; get it from
    https://www.kaggle.com/c/asap-aes (research use under Kaggle's terms).

    Parameters
    ----------
    path : str or path-like
        The tab-separated ASAP file.
    prompt : int or None, default=7
        The prompt (``essay_set``, 1 to 8) to keep; None keeps every essay.
        Columns that are empty for every kept essay (e.g. the traits 5 and 6 of
        prompt 7) are dropped.
    as_frame : bool, default=True
        If True, return a pandas DataFrame (needs pandas, the ``report`` extra);
        else a :class:`~sklearn.utils.Bunch`.
    encoding : str, default=None
        The file's text encoding. None detects it: UTF-8 (the fold files), else
        cp1252 (Kaggle's file; the few bytes cp1252 leaves undefined become
        U+FFFD, counted in ``replaced_bytes``), else latin-1.

    Returns
    -------
    data : pandas.DataFrame or sklearn.utils.Bunch
        With ``as_frame=True``, a DataFrame with the file's columns in their
        order: ``essay`` as str, the score columns (``essay_id``, ``essay_set``,
        ``rater*_domain*``, ``domain*_score``, ``rater*_trait*``, ``nea_fold``)
        as int64, or float64 with NaN where some essays have no value (e.g.
        ``rater3_domain1``). Its ``attrs`` hold ``"source"`` (the path),
        ``"encoding"``, ``"replaced_bytes"``, ``"prompt"`` and
        ``"dropped_columns"``.

        With ``as_frame=False``, a Bunch with

        data : list of str
            The essays.
        target : ndarray of shape (n_essays,)
            The resolved score ``domain1_score``.
        essay_ids, prompts : ndarray of shape (n_essays,), dtype int
            The essay ids and prompt numbers.
        raters : ndarray of shape (n_essays, n_raters)
            The ``rater*_domain1`` scores (float with NaN when a rater is
            missing for some essays).
        rater_names, trait_names : list of str
            The column names of ``raters`` and ``traits``, in order.
        traits : ndarray of shape (n_essays, n_traits)
            The ``rater*_trait*`` scores kept for the prompt.
        columns : dict of str to ndarray
            Every kept column, by name.
        source, encoding, replaced_bytes, prompt, DESCR
            As in ``attrs`` above; ``DESCR`` is a one-paragraph summary.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If a required column is missing, a score is not a number (the message
        names the row, line and column), an ``essay_id`` repeats, or ``prompt``
        is not in the file (the message lists the prompts it has).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn_fairaes.datasets import load_asap
    >>> header = ("essay_id\\tessay_set\\tessay\\trater1_domain1\\trater2_domain1"
    ...           "\\tdomain1_score\\n")
    >>> body = "1\\t7\\tI waited.\\t2\\t3\\t5\\n2\\t7\\t\\"We waited\\"\\t4\\t4\\t8\\n"
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "toy.tsv"
    ...     _ = path.write_text(header + body, encoding="utf-8")
    ...     asap = load_asap(path, prompt=7, as_frame=False)
    >>> asap.data, asap.target.tolist(), asap.raters.tolist(), asap.encoding
    (['I waited.', 'We waited'], [5, 8], [[2, 3], [4, 4]], 'utf-8')
    """
    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError(
            f"ASAP file not found: {path}; download training_set_rel3.tsv from "
            f"https://www.kaggle.com/c/asap-aes and pass its path"
        )
    if path.is_dir():
        raise ValueError(
            f"{path} is a folder; pass the ASAP file itself, e.g. "
            f"{path / 'training_set_rel3.tsv'}"
        )
    if prompt is not None and (
        isinstance(prompt, bool) or not isinstance(prompt, numbers.Integral)
    ):
        raise TypeError(
            f"prompt must be an int (the ASAP essay_set, 1 to 8) or None for all "
            f"prompts, got {prompt!r} of type {type(prompt).__name__}"
        )

    text, used_encoding, replaced = _decode(path.read_bytes(), encoding)
    header, rows, lines = _read_table(path, text)
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise ValueError(
            f"{path}: required column(s) {missing} not found; the header has "
            f"{header[:12]}{' ...' if len(header) > 12 else ''}. load_asap reads ASAP's "
            f"tab-separated training_set_rel3.tsv (or a fold/prompt extract of it) "
            f"with its original column names"
        )
    index = {name: j for j, name in enumerate(header)}
    where = []
    for k, (row, line) in enumerate(zip(rows, lines)):
        essay_id = row[index["essay_id"]].strip()
        where.append(
            f"data row {k + 1} (line {line}{f', essay_id {essay_id}' if essay_id else ''})"
        )
    set_values = [row[index["essay_set"]] for row in rows]
    sets = _parse_numbers(path, "essay_set", set_values, where, required=True)
    available = sorted({int(s) for s in sets})
    if prompt is not None and int(prompt) not in available:
        raise ValueError(
            f"prompt {prompt} is not in {path}; the file has essays of prompt(s) "
            f"{', '.join(map(str, available)) or 'none'}; pass one of them, or "
            f"prompt=None for all"
        )
    keep = np.arange(len(rows)) if prompt is None else np.flatnonzero(sets == int(prompt))
    rows = [rows[i] for i in keep]
    where = [where[i] for i in keep]

    columns: dict[str, Any] = {}
    dropped: list[str] = []
    for name, j in index.items():
        values = [row[j] for row in rows]
        required = name in REQUIRED_COLUMNS
        if not required and not any(v.strip() for v in values):
            dropped.append(name)
            continue
        if name == "essay":
            columns[name] = values
        elif _NUMERIC_COLUMN.match(name):
            columns[name] = _parse_numbers(path, name, values, where, required=required)
        else:
            columns[name] = values

    unique, counts = np.unique(columns["essay_id"], return_counts=True)
    if (counts > 1).any():
        repeated = unique[counts > 1][:5].tolist()
        raise ValueError(
            f"{path}: essay_id {repeated} appear(s) more than once; each essay must have "
            f"one row (did you concatenate overlapping files?)"
        )

    attrs = {
        "source": str(path),
        "encoding": used_encoding,
        "replaced_bytes": replaced,
        "prompt": None if prompt is None else int(prompt),
        "dropped_columns": dropped,
    }
    if as_frame:
        from ..resources import require

        pd = require("pandas", purpose="load_asap(as_frame=True)")
        frame = pd.DataFrame(columns)
        frame.attrs.update(attrs)
        return frame

    rater_names = [c for c in columns if _RATER_COLUMN.match(c)]
    trait_names = [c for c in columns if _TRAIT_COLUMN.match(c)]
    n = len(rows)

    def stack(names: list[str]) -> NDArray[Any]:
        if not names:
            return np.empty((n, 0))
        return np.column_stack([columns[c] for c in names])

    which = "all prompts" if prompt is None else f"prompt {prompt}"
    descr = (
        f"ASAP-AES essays (Hewlett Foundation / Kaggle, 2012), {which}: {n} essays "
        f"read from {path} ({used_encoding}). target is domain1_score, the resolved "
        f"score; raters holds {', '.join(rater_names)}."
    )
    return Bunch(
        data=list(columns["essay"]),
        target=columns["domain1_score"],
        essay_ids=columns["essay_id"],
        prompts=columns["essay_set"],
        raters=stack(rater_names),
        rater_names=rater_names,
        traits=stack(trait_names),
        trait_names=trait_names,
        columns=columns,
        DESCR=descr,
        **attrs,
    )
