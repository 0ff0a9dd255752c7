"""Short-answer grading data in one tidy form (question, references, answer, grade).

The package ships no short-answer data. :func:`load_short_answers` turns a table
you have (a DataFrame, or a ``.tsv``/``.csv``/``.xlsx`` file) into the form the
short-answer tools of this package read: one row per student answer with the
question it answers, the reference answers of that question as a list, the
answer text and the human grade scaled to [0, 1], as ASAG2024 does (Meyer,
Breuer & Fürst 2024, Section 2).
"""

from __future__ import annotations

import numbers
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from numpy.typing import NDArray

from .._validation import _position_label, check_references
from ..resources import require

if TYPE_CHECKING:
    import pandas as pd
    from pandas import DataFrame

__all__ = ["load_short_answers"]

#: Columns of the frame :func:`load_short_answers` returns, in order.
SHORT_ANSWER_COLUMNS = ("question", "reference", "answer", "grade")

_EMPTY_ANSWER_OPTIONS = ("drop", "keep", "raise")


def _read(
    frame_or_path: pd.DataFrame | str | os.PathLike[str], pd: ModuleType
) -> pd.DataFrame:
    if hasattr(frame_or_path, "columns") and hasattr(frame_or_path, "iloc"):
        # the parameter ``pd`` shadows the pandas alias here: name the class itself
        return cast("DataFrame", frame_or_path)
    if not isinstance(frame_or_path, (str, Path)) and not hasattr(
        frame_or_path, "__fspath__"
    ):
        raise TypeError(
            f"frame_or_path must be a pandas DataFrame or the path of a .tsv, .csv or "
            f".xlsx file, got {type(frame_or_path).__name__}"
        )
    path = Path(frame_or_path)
    if not path.exists():
        raise FileNotFoundError(f"no file at {path}; check the path")
    suffix = path.suffix.lower()
    # Text columns must stay text: an answer "NA" or "1" is an answer, not a
    # missing value or a number.
    options = {"dtype": str, "keep_default_na": False}
    if suffix in (".tsv", ".tab"):
        return pd.read_csv(path, sep="\t", encoding="utf-8-sig", **options)
    if suffix == ".csv":
        return pd.read_csv(path, encoding="utf-8-sig", **options)
    if suffix in (".xlsx", ".xlsm"):
        require("openpyxl", extra="report", purpose="reading .xlsx files")
        return pd.read_excel(path, **options)
    raise ValueError(
        f"cannot tell how to read {path.name!r}: the suffix must be .csv, .tab, .tsv or "
        f".xlsx (or read the file with pandas and pass the DataFrame)"
    )


def _numbers(column: pd.Series, name: str, pd: ModuleType) -> NDArray[np.float64]:
    """A column as float64; a cell that is not a number raises, naming its row."""
    if column.dtype.kind in "iuf":
        return column.to_numpy(dtype=np.float64)
    text = column.astype(object)
    out = np.empty(len(text), dtype=np.float64)
    for i, value in enumerate(text.tolist()):
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            out[i] = float(value)
            continue
        try:
            out[i] = float(str(value).strip()) if value is not None else np.nan
        except ValueError:
            raise ValueError(
                f"column {name!r} at {_position_label(column, i)} holds {value!r:.40}, "
                f"not a number; fix or drop that row"
            ) from None
    return out


def _answers(column: pd.Series, answer_col: str) -> list[str]:
    """Answer texts, with None/NaN read as the empty answer."""
    out: list[str] = []
    for i, value in enumerate(column.tolist()):
        if value is None or (isinstance(value, float) and np.isnan(value)):
            out.append("")
        elif isinstance(value, str):
            out.append(value)
        else:
            raise TypeError(
                f"column {answer_col!r} at {_position_label(column, i)} holds a "
                f"{type(value).__name__} ({value!r:.40}); answers must be strings"
            )
    return out


def _split_references(column: pd.Series, sep: str | None) -> pd.Series | list[Any]:
    cells = column.tolist()
    if sep is None:
        return column
    return [cell.split(sep) if isinstance(cell, str) else cell for cell in cells]


def load_short_answers(
    frame_or_path: pd.DataFrame | str | os.PathLike[str],
    *,
    question_col: str,
    reference_col: str | None,
    answer_col: str,
    grade_col: str,
    max_grade: float | str | None = None,
    min_grade: float = 0.0,
    reference_sep: str | None = None,
    empty_answers: Literal["keep", "drop", "raise"] = "keep",
) -> pd.DataFrame:
    """Read short answers into one tidy frame with grades scaled to [0, 1].

    Parameters
    ----------
    frame_or_path : pandas.DataFrame or path-like
        The data, one row per student answer: a DataFrame, or a ``.tsv``/``.tab``
        (tab-separated), ``.csv`` or ``.xlsx`` file (text is read as text: an
        answer ``"NA"`` stays ``"NA"``). The input is not modified.
    question_col : str
        Column that identifies the question an answer responds to (an id or the
        question text); answers with equal values belong to one question.
    reference_col : str or None
        Column of reference answers: a ``str`` or a list of ``str`` per row
        (see ``reference_sep`` for several references joined in one string).
        The references of a question are pooled over its rows (distinct,
        non-empty, in order of first appearance), so every answer of a
        question carries all of the question's references. None loads the
        data without references (every ``reference`` cell is an empty list),
        for the mean baseline and :func:`~sklearn_fairaes.short_answers.reference_coverage_curve`,
        which need none; a reference-based grader then refuses the data.
    answer_col : str
        Column of student answers. A missing value (None/NaN) counts as an
        empty answer.
    grade_col : str
        Column of human grades (numbers, or text that parses as numbers).
    max_grade : float, str or None, default=None
        The full-credit grade. A number applies to every row; a str names a
        column holding each row's full credit (for data whose questions use
        different point scales); None takes the largest grade observed.
    min_grade : float, default=0.0
        The lowest grade of the scale. Grades are scaled as
        ``(grade - min_grade) / (max_grade - min_grade)``. ASAG2024 min-max
        scales each dataset by its observed lowest and highest grade; the
        lowest grade is 0 in all of its seven datasets, so the defaults give
        its scaling.
    reference_sep : str, default=None
        Separator of several reference answers stored in one string cell
        (e.g. ``" ||| "``); None keeps a string cell as one reference.
    empty_answers : {"keep", "drop", "raise"}, default="keep"
        What to do with an empty or whitespace-only answer: ``"keep"`` it
        (ASAG2024 keeps DigiKlausur's empty answers, graded 0; the similarity
        grader gives an empty answer a similarity of 0), ``"drop"`` its row, or
        ``"raise"`` a ValueError naming it.

    Returns
    -------
    answers : pandas.DataFrame
        Columns ``question`` (the values of ``question_col``), ``reference``
        (a list of str per row), ``answer`` (str) and ``grade`` (float in
        [0, 1]); the index of the input is kept (row numbers 0, 1, ... for a
        file).

    Raises
    ------
    ValueError
        A missing column; a grade that is missing, not a number, or outside
        ``[min_grade, max_grade]``; ``max_grade <= min_grade``; a question
        with no reference answer in any of its rows (when ``reference_col``
        is given); an empty answer with ``empty_answers="raise"``. Messages
        name the row (its index label) and the value.
    TypeError
        A non-string answer or reference.

    References
    ----------
    G. Meyer, P. Breuer and J. Fürst, "ASAG2024: A combined benchmark for short
    answer grading", SIGCSE Virtual 2024, Section 2 and Table 1.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.datasets import load_short_answers
    >>> raw = pd.DataFrame({
    ...     "qid": ["q1", "q1", "q2"],
    ...     "ref": ["Plants need light.", "", "Ice is less dense than water."],
    ...     "text": ["They need sunlight.", "", "Ice floats."],
    ...     "points": [2, 0, 1],
    ... })
    >>> data = load_short_answers(raw, question_col="qid", reference_col="ref",
    ...                           answer_col="text", grade_col="points", max_grade=2)
    >>> data
      question                        reference               answer  grade
    0       q1             [Plants need light.]  They need sunlight.    1.0
    1       q1             [Plants need light.]                         0.0
    2       q2  [Ice is less dense than water.]           Ice floats.    0.5
    """
    pd = require("pandas", purpose="short-answer data")
    if empty_answers not in _EMPTY_ANSWER_OPTIONS:
        raise ValueError(
            f"empty_answers must be one of {', '.join(map(repr, _EMPTY_ANSWER_OPTIONS))}; "
            f"got {empty_answers!r}"
        )
    if reference_sep is not None and (
        not isinstance(reference_sep, str) or not reference_sep
    ):
        raise ValueError(
            f"reference_sep must be a non-empty str or None, got {reference_sep!r}"
        )
    frame = _read(frame_or_path, pd)
    needed = {
        "question_col": question_col,
        "answer_col": answer_col,
        "grade_col": grade_col,
    }
    if reference_col is not None:
        needed["reference_col"] = reference_col
    if isinstance(max_grade, str):
        needed["max_grade"] = max_grade
    for param, column in needed.items():
        if column not in frame.columns:
            raise ValueError(
                f"{param}={column!r} is not a column of the data; its columns are "
                f"{', '.join(map(repr, sorted(map(str, frame.columns))))}"
            )
    if len(frame) == 0:
        raise ValueError("the data has no rows")

    questions = frame[question_col]
    if questions.isna().any():
        i = int(np.flatnonzero(questions.isna().to_numpy())[0])
        raise ValueError(
            f"column {question_col!r} is missing at {_position_label(questions, i)}; "
            f"every answer needs the question it responds to"
        )

    grades = _numbers(frame[grade_col], grade_col, pd)
    if isinstance(max_grade, str):
        full = _numbers(frame[max_grade], max_grade, pd)
    elif max_grade is None:
        full = np.full(
            len(frame), np.nanmax(grades) if np.isfinite(grades).any() else np.nan
        )
    elif isinstance(max_grade, numbers.Real) and not isinstance(max_grade, bool):
        full = np.full(len(frame), float(max_grade))
    else:
        raise TypeError(
            f"max_grade must be a number, a column name or None, got "
            f"{type(max_grade).__name__}"
        )
    if not isinstance(min_grade, numbers.Real) or isinstance(min_grade, bool):
        raise TypeError(f"min_grade must be a number, got {type(min_grade).__name__}")
    low = float(min_grade)
    column = frame[grade_col]
    bad = ~np.isfinite(grades)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"grade in column {grade_col!r} is missing or not finite at "
            f"{_position_label(column, i)} ({int(bad.sum())} such row(s)); drop those "
            f"rows or fill them"
        )
    narrow = ~(full > low)
    if narrow.any():
        i = int(np.flatnonzero(narrow)[0])
        raise ValueError(
            f"max_grade ({float(full[i])!r} at {_position_label(column, i)}) must be greater "
            f"than min_grade ({low!r}); check the grade scale"
        )
    outside = (grades < low) | (grades > full)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise ValueError(
            f"grade {float(grades[i])!r} at {_position_label(column, i)} of column "
            f"{grade_col!r} is outside the declared range [{low:g}, {full[i]:g}] "
            f"({int(outside.sum())} such row(s)); fix max_grade/min_grade or the grades"
        )
    scaled = (grades - low) / (full - low)

    answers = _answers(frame[answer_col], answer_col)
    references: list[list[str]]
    if reference_col is None:
        references = [[] for _ in range(len(frame))]
    else:
        cells = check_references(
            _split_references(frame[reference_col], reference_sep),
            name=f"column {reference_col!r}",
            allow_missing=True,
        )
        pooled: dict[Any, list[str]] = {}
        for q, refs in zip(questions.tolist(), cells):
            kept = pooled.setdefault(q, [])
            kept.extend(r for r in refs if r not in kept)
        for q, refs in pooled.items():
            if not refs:
                rows = np.flatnonzero((questions == q).to_numpy())
                shown = ", ".join(str(frame.index[r]) for r in rows[:5])
                more = ", ..." if rows.size > 5 else ""
                raise ValueError(
                    f"question {q!r} (rows {shown}{more}) has no reference answer in "
                    f"column {reference_col!r}; drop its rows, fill in its reference, "
                    f"or pass reference_col=None to load the data without references "
                    f"(a reference-based grader then cannot be used)"
                )
        references = [list(pooled[q]) for q in questions.tolist()]

    empty = np.array([not a.strip() for a in answers], dtype=bool)
    if empty.any() and empty_answers == "raise":
        i = int(np.flatnonzero(empty)[0])
        raise ValueError(
            f"the answer at {_position_label(column, i)} of column {answer_col!r} is "
            f"empty ({int(empty.sum())} empty answer(s) in all); pass "
            f"empty_answers='keep' or 'drop'"
        )
    out = pd.DataFrame(
        {
            "question": questions.to_numpy(),
            "reference": pd.Series(references, dtype=object, index=frame.index),
            "answer": pd.Series(answers, dtype=object, index=frame.index),
            "grade": scaled,
        },
        index=frame.index,
    )
    if empty.any() and empty_answers == "drop":
        out = out.loc[~empty]
    return out
