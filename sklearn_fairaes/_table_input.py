"""The ``fairaes`` command's reading of its data file: :func:`read_table`.

A tsv/csv/xlsx file of essays is read as strings, and its record count is
checked against what a plain CSV reader counts, so that a quote left open
(which would swallow the rows after it into one essay) is refused, naming
its row, before any computation. :class:`BadInput` is the command's refusal
(exit code 2). :func:`parse_embeddings` reads the ``--embeddings`` entries
(the files themselves are the audit's to read). All are imported by
``sklearn_fairaes.cli``, which is where the docs and scripts find them.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BadInput", "read_table"]


class BadInput(Exception):
    """Bad input detected by the command line itself (exit code 2)."""


def read_table(
    path: str | os.PathLike[str], *, encoding: str | None = None
) -> pd.DataFrame:
    r"""Read a tsv/csv/xlsx file of essays as strings, with precise errors.

    Parameters
    ----------
    path : str or path-like
        A ``.tsv``/``.tab``/``.txt`` (tab-separated), ``.csv`` or
        ``.xlsx``/``.xlsm`` file with a header row.
    encoding : str, default=None
        Text encoding of tsv/csv files; None means UTF-8 (with or without BOM).

    Returns
    -------
    frame : pandas.DataFrame
        All columns as strings; empty cells are empty strings.

    Raises
    ------
    BadInput
        If the file is missing, empty, of an unknown type, or cannot be decoded
        or parsed, or if its records do not add up (see Notes); the message
        names the file and the line or data row.

    Notes
    -----
    Quotes in tsv and csv files follow the rule spreadsheets and pandas write
    them by (and ASAP's tsv files use): a field that *begins* with ``"`` is
    quoted; it ends at the ``"`` followed by the separator or the line end,
    may span lines, and ``""`` inside stands for one ``"``. A ``"`` anywhere
    else in a field is an ordinary character. So an unquoted essay that
    begins with ``"`` swallows the rows up to the next quote. The number of
    records read is therefore checked against an independent, quoting-free
    count (one record per non-blank line): where they differ, every record
    spanning lines must be a quoted field with line breaks, and in a tsv file
    none of the lines inside it may be a complete row on its own (as many
    tab-separated fields as the header), nor may its first and last line both
    be; otherwise the file is refused, naming the first suspect data row and
    its lines. (A quoted tsv field holding both line breaks and tabs can be
    read either way, and may be refused.) Quote such a field whole (doubling the ``"`` inside),
    or remove the leading ``"``. A csv file's quoted fields may hold the
    separator and line breaks, so there only the two parsers (pandas and
    Python's ``csv``) are checked against each other.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from sklearn_fairaes.cli import read_table
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "essays.tsv").write_text('essay\tscore\n"Quoted\tone"\t2\nPlain\t3\n')
    >>> read_table(folder / "essays.tsv")["essay"].tolist()
    ['Quoted\tone', 'Plain']
    """
    from .resources import require

    pd = require("pandas", purpose="reading data files")
    path = Path(path)
    if not path.is_file():
        raise BadInput(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix in (".xlsx", ".xlsm"):
        require("openpyxl", extra="report", purpose="reading .xlsx files")
        try:
            frame = pd.read_excel(path, dtype=str, keep_default_na=False)
        except Exception as exc:
            raise BadInput(f"{path}: not a readable Excel file ({exc})") from None
    elif suffix in (".tsv", ".tab", ".txt", ".csv"):
        raw = path.read_bytes()
        if not raw.strip():
            raise BadInput(f"{path}: the file is empty")
        enc = encoding or "utf-8-sig"
        try:
            text = raw.decode(enc)
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise BadInput(
                f"{path}: cannot decode byte 0x{raw[exc.start]:02x} at line {line} as "
                f"{enc}; re-save the file as UTF-8, or pass --encoding (e.g. cp1252)"
            ) from None
        except LookupError:
            raise BadInput(f"unknown encoding {enc!r}") from None
        import io

        sep = "," if suffix == ".csv" else "\t"
        try:
            frame = pd.read_csv(
                io.StringIO(text), sep=sep, dtype=str, keep_default_na=False
            )
        except Exception as exc:
            raise BadInput(
                f"{path}: cannot parse as {'CSV' if sep == ',' else 'TSV'} ({exc})"
            ) from None
        _check_records(frame, text, sep, path)
    else:
        raise BadInput(f"{path}: unknown file type {suffix!r}; use .tsv, .csv or .xlsx")
    if frame.shape[0] == 0:
        raise BadInput(f"{path}: the file has a header but no rows")
    return frame


def _check_records(frame: pd.DataFrame, text: str, sep: str, path: Path) -> None:
    """Check the number of records pandas read against an independent count.

    The independent count is quoting-free: one record per non-blank line
    (``csv`` with ``QUOTE_NONE``). When it differs from pandas' count, the
    difference must come from quoted fields spanning lines, which ``csv``'s
    quoting-aware reader locates (the lines each record spans). In a tsv file
    a multi-line record of which one line is a complete row on its own (as
    many fields as the header) is rows merged by an unbalanced quote; see the
    Notes of :func:`read_table`.
    """
    kind = "CSV" if sep == "," else "TSV"
    fix = (
        'quote the whole field and double each " inside it (as spreadsheets save '
        f"{kind} files), or remove the leading quote"
    )
    with _csv_fields_up_to(len(text)):
        _compare_records(frame, text, sep, path, kind, fix)


@contextlib.contextmanager
def _csv_fields_up_to(n_chars: int) -> Iterator[None]:
    """Let Python's ``csv`` read fields of up to ``n_chars`` characters, then restore.

    Its default limit (131,072 characters) is far below a long essay, which
    pandas reads; the limit is process-wide, so it is put back afterwards.
    """

    # no field is longer than the text; the limit is a C long (32 bits on Windows)
    previous = csv.field_size_limit(min(n_chars + 1, 2**31 - 1))
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _compare_records(
    frame: pd.DataFrame, text: str, sep: str, path: Path, kind: str, fix: str
) -> None:
    """The body of :func:`_check_records`, under a ``csv`` field limit that fits."""
    import re

    plain = [
        r
        for r in csv.reader(
            io.StringIO(text, newline=""), delimiter=sep, quoting=csv.QUOTE_NONE
        )
        if r
    ]
    n_lines, n_read = len(plain) - 1, len(frame)
    if n_lines == n_read:
        return
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    records: list[tuple[int, int, list[str]]] = []  # (first line, last line, fields)
    last = 0
    try:
        for fields in reader:
            first, last = last + 1, reader.line_num
            if fields:
                records.append((first, last, fields))
    except csv.Error as exc:
        raise BadInput(
            f"{path}: cannot parse as {kind} at line {reader.line_num} ({exc})"
        ) from None
    counts = (
        f"the file has {n_lines} data line(s) but {n_read} record(s) once quotes are read"
    )
    header, data = records[0][2], records[1:]
    values = frame.astype(str).to_numpy().tolist()
    lines = re.split(r"\r\n|\r|\n", text)  # the line ends csv counts by
    for k, (first, end, fields) in enumerate(data, start=1):
        where = f"data row {k} (line {first}{f'-{end}' if end > first else ''})"
        if k > len(values) or fields != values[k - 1]:
            raise BadInput(
                f"{path}: {counts}, and two parsers read {where} differently; check the "
                f'quotes of that row (an unbalanced " merges rows: {fix})'
            )
        if end > first and sep == "\t":
            whole = [
                n
                for n in range(first, end + 1)
                if n <= len(lines) and len(lines[n - 1].split(sep)) == len(header)
            ]
            # a line inside the quoted field that is a row on its own, or first and
            # last line both rows on their own (two rows merged), is a merge; a
            # quoted field's first and last lines hold only part of a row
            inner = [n for n in whole if first < n < end]
            if not inner and first in whole and end in whole:
                inner = [end]
            if inner:
                raise BadInput(
                    f"{path}: {counts}: {where} is read as one record although line "
                    f"{inner[0]} is a complete row of its own: a field beginning with "
                    f'" (line {first}) made the rows up to the next quote one essay. '
                    f"{fix[0].upper()}{fix[1:]}"
                )
    if len(data) != n_read:
        raise BadInput(
            f"{path}: {counts}, and two parsers disagree ({len(data)} records with "
            f"Python's csv, {n_read} with pandas); check the quotes of the file ({fix})"
        )


def parse_embeddings(values: Sequence[str] | None) -> dict[str, str] | None:
    """Read ``--embeddings``: ``NAME=FILE`` entries, one per flag.

    The files themselves are read and checked by the audit (before any work).

    Parameters
    ----------
    values : list of str or None
        The flag's values (one per ``--embeddings``).

    Returns
    -------
    embeddings : dict of str to str or None
        Name -> file, in the order given; None without the flag.

    Examples
    --------
    >>> from sklearn_fairaes.cli import parse_embeddings
    >>> parse_embeddings(["engine=vectors.npy"])
    {'engine': 'vectors.npy'}
    """
    if not values:
        return None
    out: dict[str, str] = {}
    for entry in values:
        name, sep, path = (part.strip() for part in entry.partition("="))
        if not sep or not name or not path:
            raise BadInput(
                f"--embeddings {entry!r}: expected NAME=FILE (e.g. engine=vectors.npy)"
            )
        if name in out:
            raise BadInput(
                f"--embeddings names {name!r} twice; give each set of vectors its own name"
            )
        out[name] = path
    return out


def parse_bin_cols(values: Sequence[str] | None) -> dict[str, int] | None:
    """Read ``--bin-col``: ``COL:K`` entries, comma-separated or repeated.

    Parameters
    ----------
    values : list of str or None
        The flag's values (one per ``--bin-col``).

    Returns
    -------
    bin_cols : dict of str to int, or None
        The audit's ``bin_cols``; None without the flag.

    Examples
    --------
    >>> from sklearn_fairaes.cli import parse_bin_cols
    >>> parse_bin_cols(["word_count:4,age:3", "pages:2"])
    {'word_count': 4, 'age': 3, 'pages': 2}
    """
    if not values:
        return None
    out: dict[str, int] = {}
    for entry in (e.strip() for v in values for e in v.split(",") if e.strip()):
        name, sep, k = entry.rpartition(":")
        try:
            n_bins = int(k)
        except ValueError:
            n_bins = None
        if not sep or not name or n_bins is None:
            raise BadInput(
                f"--bin-col {entry}: expected COLUMN:BINS, a numeric column and a "
                f"number of quantile bins, e.g. --bin-col word_count:4"
            )
        if name in out:
            raise BadInput(f"--bin-col names column {name!r} twice; give it once")
        out[name] = n_bins
    return out
