"""The one input validator of the package.

Every public function and estimator validates its inputs here, so that a user
sees the same wording whatever they called: what was wrong, where (argument,
position, column), what was expected, and how to fix it.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, Literal, TypeVar, cast, overload

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

__all__ = [
    "check_essays",
    "check_scores",
    "check_embeddings",
    "check_same_length",
    "check_groups",
    "check_columns",
    "check_references",
    "check_grades",
    "check_predictor",
    "check_score_range",
    "check_score_column",
    "MAX_SCORE_POINTS",
]

#: Most integer score points a scale may have. Real rubrics have a few dozen;
#: a wider span is a typo or a sentinel value (1e12, 9999), and agreement
#: arrays over it would not fit in memory.
MAX_SCORE_POINTS = 1000

_Estimator = TypeVar("_Estimator")


def _position_label(obj: object, i: int) -> str:
    """Describe position ``i`` of ``obj``, with its index label when it has one."""
    index = getattr(obj, "index", None)
    if index is not None and not isinstance(index, type(range(0))):
        try:
            label = index[i]
        except Exception:  # pragma: no cover - exotic index types
            return f"position {i}"
        if hasattr(label, "item"):
            label = label.item()
        if label != i:
            return f"position {i} (index label {label!r})"
    return f"position {i}"


def check_essays(
    X: Any, *, name: str = "X", allow_empty: bool = True, min_essays: int = 0
) -> list[str]:
    """Validate a collection of essays and return it as a list of ``str``.

    Parameters
    ----------
    X : list, tuple, 1-D numpy array, pandas Series or one-column DataFrame of str
        The essays.
    name : str, default="X"
        Name of the argument, used in error messages.
    allow_empty : bool, default=True
        Whether the empty string is a valid essay.
    min_essays : int, default=0
        Fewest essays accepted (``fit`` methods pass 1: sklearn refuses to fit
        on no data).

    Returns
    -------
    essays : list of str

    Raises
    ------
    TypeError
        If ``X`` is a single string, or an element is not a string (bytes,
        numbers, ...). The message names the first bad position.
    ValueError
        If an element is ``None`` or NaN, or (with ``allow_empty=False``) empty;
        or if there are fewer than ``min_essays`` essays.

    Examples
    --------
    >>> from sklearn_fairaes._validation import check_essays
    >>> check_essays(["A first essay.", "A second one."])
    ['A first essay.', 'A second one.']
    """
    if isinstance(X, (str, bytes)):
        raise TypeError(
            f"{name} must be a collection of essays (a list, array or pandas Series "
            f"of str), got a single {type(X).__name__}; wrap it in a list: [{name}]"
        )
    if hasattr(X, "columns") and hasattr(X, "iloc"):  # a DataFrame
        if X.shape[1] != 1:
            raise ValueError(
                f"{name} is a DataFrame with {X.shape[1]} columns; pass the one column "
                f"that holds the essays, e.g. {name}['essay']"
            )
        X = X.iloc[:, 0]
    if sp.issparse(X):
        raise TypeError(f"{name} must hold essays as str, got a sparse matrix")
    if isinstance(X, np.ndarray):
        if X.ndim == 2 and X.shape[1] == 1:
            X = X[:, 0]
        elif X.ndim != 1:
            raise ValueError(
                f"{name} must be one-dimensional (one essay per entry), got an array "
                f"of shape {X.shape}"
            )
    try:
        values = list(X.tolist() if isinstance(X, np.ndarray) else X)
    except TypeError:
        raise TypeError(
            f"{name} must be a collection of essays (list, array or pandas Series of "
            f"str), got {type(X).__name__}"
        ) from None
    if len(values) < min_essays:
        raise ValueError(
            f"{name} holds {len(values)} essays; at least {min_essays} "
            f"{'is' if min_essays == 1 else 'are'} needed to fit"
        )
    for i, value in enumerate(values):
        if isinstance(value, str):
            if not allow_empty and not value.strip():
                raise ValueError(
                    f"essay at {_position_label(X, i)} of {name} is empty; remove it or "
                    f"give it text"
                )
            continue
        where = _position_label(X, i)
        if value is None:
            raise ValueError(
                f"essay at {where} of {name} is None; pass a string (use '' for an "
                f"empty essay)"
            )
        if isinstance(value, float) and np.isnan(value):
            raise ValueError(
                f"essay at {where} of {name} is NaN (a missing value); pass a string "
                f"(use '' for an empty essay) or drop the row"
            )
        if isinstance(value, (bytes, bytearray)):
            raise TypeError(
                f"essay at {where} of {name} is bytes, not str; decode it first, e.g. "
                f"value.decode('utf-8')"
            )
        raise TypeError(
            f"essay at {where} of {name} is a {type(value).__name__} ({value!r:.40}), "
            f"not a str; essays must be strings"
        )
    return values


def check_scores(
    y: Any,
    *,
    name: str = "y",
    n_samples: int | None = None,
    min_samples: int = 1,
    allow_nan: bool = False,
) -> NDArray[np.float64]:
    """Validate a vector of scores and return it as a 1-D float64 array.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Numeric scores. A column vector of shape (n_samples, 1) is accepted.
    name : str, default="y"
        Name of the argument, used in error messages.
    n_samples : int, default=None
        Expected length, when it must match another argument.
    min_samples : int, default=1
        Smallest accepted length.
    allow_nan : bool, default=False
        Whether NaN is accepted (infinity never is).

    Returns
    -------
    y : ndarray of shape (n_samples,), dtype float64

    Examples
    --------
    >>> from sklearn_fairaes._validation import check_scores
    >>> check_scores([1, 2, 3])
    array([1., 2., 3.])
    """
    if isinstance(y, (str, bytes)):
        raise TypeError(f"{name} must be an array of numbers, got a single string")
    if sp.issparse(y):
        # scipy-stubs types issparse() as narrowing to an abstract base
        # without methods; every sparse array and matrix has toarray().
        y = cast(Any, y).toarray()
    arr = np.asarray(y)
    if arr.ndim == 2 and 1 in arr.shape and arr.size:
        arr = arr.reshape(-1)
    if arr.ndim == 0:
        raise ValueError(
            f"{name} must be a 1-D array of scores, got a scalar ({arr.item()!r})"
        )
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of scores, got shape {arr.shape}")
    if arr.dtype == bool:
        arr = arr.astype(np.float64)
    if arr.dtype.kind not in "iuf":
        out = np.empty(arr.shape[0], dtype=np.float64)
        for i, value in enumerate(arr.tolist()):
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                out[i] = float(value)
            elif value is None:
                out[i] = np.nan
            else:
                raise TypeError(
                    f"{name} must hold numbers; the value at {_position_label(y, i)} is "
                    f"{value!r:.40} ({type(value).__name__}). Convert the column to "
                    f"numbers first, e.g. pandas.to_numeric(...)"
                )
        arr = out
    else:
        arr = arr.astype(np.float64, copy=False)
    if arr.shape[0] < min_samples:
        raise ValueError(
            f"{name} has {arr.shape[0]} sample(s); at least {min_samples} are needed"
        )
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {arr.shape[0]} samples but {n_samples} were expected; the "
            f"inputs must describe the same essays in the same order"
        )
    bad = ~np.isfinite(arr) if not allow_nan else np.isinf(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        kind = "NaN" if np.isnan(arr[i]) else "infinite"
        raise ValueError(
            f"{name} is {kind} at {_position_label(y, i)} ({int(bad.sum())} such "
            f"value(s) in all); drop those rows or fill them before calling"
        )
    return arr


@overload
def check_embeddings(
    X: Any, *, name: str = ..., min_samples: int = ..., accept_sparse: Literal[False]
) -> NDArray[np.float64]: ...


@overload
def check_embeddings(
    X: Any, *, name: str = ..., min_samples: int = ..., accept_sparse: bool = ...
) -> NDArray[np.float64] | sp.csr_matrix[np.float64]: ...


def check_embeddings(
    X: Any, *, name: str = "X", min_samples: int = 2, accept_sparse: bool = True
) -> NDArray[np.float64] | sp.csr_matrix[np.float64]:
    """Validate a matrix of essay vectors (one row per essay).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The essay vectors, one row per essay.
    name : str, default="X"
        Name of the argument, used in error messages.
    min_samples : int, default=2
        Smallest accepted number of rows.
    accept_sparse : bool, default=True
        Whether a scipy sparse matrix is kept sparse (CSR); otherwise it raises.

    Returns
    -------
    X : ndarray of float64, or CSR matrix of float64

    Examples
    --------
    >>> from sklearn_fairaes._validation import check_embeddings
    >>> check_embeddings([[1, 0], [0, 1]]).shape
    (2, 2)
    """
    out: NDArray[np.float64] | sp.csr_matrix[np.float64]
    if sp.issparse(X):
        if not accept_sparse:
            raise TypeError(
                f"{name} is a sparse matrix, which this function does not accept; "
                f"call {name}.toarray() first"
            )
        csr = sp.csr_matrix(cast(Any, X), dtype=np.float64)
        data = csr.data
        out = csr
    else:
        if hasattr(X, "to_numpy") and hasattr(X, "columns"):
            X = X.to_numpy()
        X = np.asarray(X)
        if X.dtype == object and not any(isinstance(v, (str, bytes)) for v in X.flat):
            # numbers held in an object array (as sklearn's estimators accept)
            try:
                X = X.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"{name} must hold numbers, one row per essay; an entry could not "
                    f"be read as one ({str(exc)[:120]})"
                ) from None
        if X.dtype.kind not in "iufb":
            raise TypeError(
                f"{name} must be a numeric matrix (one row of numbers per essay), got "
                f"dtype {X.dtype}; embed the essays first, e.g. with "
                f"TfidfEssayVectorizer().fit_transform(essays)"
            )
        if X.ndim == 1:
            raise ValueError(
                f"{name} must be 2-D (one row per essay), got a 1-D array of length "
                f"{X.shape[0]}; for one feature per essay use {name}.reshape(-1, 1)"
            )
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
        dense = np.ascontiguousarray(X, dtype=np.float64)
        data = dense
        out = dense
    if out.shape[0] < min_samples:
        raise ValueError(
            f"{name} has {out.shape[0]} row(s); at least {min_samples} essays are needed"
        )
    if out.shape[1] == 0:
        raise ValueError(f"{name} has no columns (shape {out.shape})")
    if not np.isfinite(data).all():
        if sp.issparse(out):
            bad_row = int(
                np.searchsorted(out.indptr, np.flatnonzero(~np.isfinite(data))[0], "right")
                - 1
            )
        else:
            bad_row = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
        raise ValueError(
            f"{name} contains NaN or infinity (first in row {bad_row}); check the "
            f"representation that produced it"
        )
    return out


def check_same_length(**arrays: Any) -> None:
    """Raise if the named inputs do not all have the same number of samples.

    Parameters
    ----------
    **arrays : array-like or sparse matrix
        The inputs, by argument name (used in the message).

    Raises
    ------
    ValueError
        If the lengths differ; the message gives each input's length.

    Examples
    --------
    >>> from sklearn_fairaes._validation import check_same_length
    >>> check_same_length(X=[1, 2], y_pred=[3, 4])
    """
    lengths = {
        k: (v.shape[0] if hasattr(v, "shape") else len(v)) for k, v in arrays.items()
    }
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise ValueError(
            f"inputs describe different numbers of essays: {desc}; they must describe "
            f"the same essays in the same order"
        )


def check_columns(X: Any, columns: Sequence[str], *, name: str = "X") -> None:
    """Raise unless ``X`` is a pandas DataFrame holding every column in ``columns``.

    Parameters
    ----------
    X : object
        The input that must be a DataFrame.
    columns : list of str
        Column names that must be present (checked in this order).
    name : str, default="X"
        Name of the argument, used in error messages.

    Raises
    ------
    TypeError
        If ``X`` is not a DataFrame.
    ValueError
        If a column is missing; the message lists the columns ``X`` has.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes._validation import check_columns
    >>> check_columns(pd.DataFrame({"answer": ["a"], "reference": ["b"]}),
    ...               ["answer", "reference"])
    """
    if not (hasattr(X, "columns") and hasattr(X, "iloc")):
        raise TypeError(
            f"{name} must be a pandas DataFrame with the columns "
            f"{', '.join(map(repr, columns))}, got {type(X).__name__}"
        )
    present = [str(c) for c in X.columns]
    for column in columns:
        if column not in X.columns:
            raise ValueError(
                f"{name} has no column {column!r}; its columns are "
                f"{', '.join(map(repr, sorted(present)))}. Rename the column or pass its "
                f"name to the matching *_col parameter"
            )


def check_references(
    values: Any, *, name: str = "reference", allow_missing: bool = False
) -> list[tuple[str, ...]]:
    """Validate reference answers: one cell per row, a str or a list of str.

    Empty and whitespace-only references are dropped, as are repeats within a
    cell (the first occurrence is kept, in order).

    Parameters
    ----------
    values : list, array or pandas Series
        One cell per row; each cell is a ``str`` or a list/tuple/array of ``str``.
    name : str, default="reference"
        Name of the argument or column, used in error messages.
    allow_missing : bool, default=False
        Whether a row may be left with no reference (a ``None``/NaN cell, an
        empty list, or only empty strings); it then gets an empty tuple.

    Returns
    -------
    references : list of tuple of str

    Raises
    ------
    TypeError
        If a cell, or an element of a list cell, is not a string.
    ValueError
        If a row has no non-empty reference and ``allow_missing`` is False.

    Examples
    --------
    >>> from sklearn_fairaes._validation import check_references
    >>> check_references(["Plants need light.", ["Light.", "", "Sun light."]])
    [('Plants need light.',), ('Light.', 'Sun light.')]
    """
    if isinstance(values, (str, bytes)):
        raise TypeError(
            f"{name} must hold one reference cell per row (a list or pandas Series), "
            f"got a single {type(values).__name__}"
        )
    cells = values.tolist() if hasattr(values, "tolist") else list(values)
    out: list[tuple[str, ...]] = []
    for i, cell in enumerate(cells):
        where = _position_label(values, i)
        items: list[Any]
        if cell is None or (isinstance(cell, float) and np.isnan(cell)):
            items = []
        elif isinstance(cell, str):
            items = [cell]
        elif isinstance(cell, (list, tuple, np.ndarray)):
            items = list(cell.tolist() if isinstance(cell, np.ndarray) else cell)
        else:
            raise TypeError(
                f"{name} at {where} is a {type(cell).__name__} ({cell!r:.40}); a "
                f"reference cell must be a str or a list of str"
            )
        kept: list[str] = []
        for item in items:
            if not isinstance(item, str):
                raise TypeError(
                    f"{name} at {where} holds a {type(item).__name__} ({item!r:.40}); "
                    f"reference answers must be strings"
                )
            if item.strip() and item not in kept:
                kept.append(item)
        if not kept and not allow_missing:
            raise ValueError(
                f"{name} at {where} has no reference answer (the cell is empty or "
                f"missing); give every answer at least one reference answer of its "
                f"question, or drop the row"
            )
        out.append(tuple(kept))
    return out


def check_grades(
    y: Any,
    *,
    name: str = "y",
    n_samples: int | None = None,
    low: float = 0.0,
    high: float = 1.0,
    hint: str = "",
) -> NDArray[np.float64]:
    """Validate grades that must lie in ``[low, high]``; return them as float64.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        The grades.
    name : str, default="y"
        Name of the argument, used in error messages.
    n_samples : int, default=None
        Expected length, when it must match another argument.
    low, high : float, default=0.0, 1.0
        The declared range, both ends included.
    hint : str, default=""
        How to fix an out-of-range grade, appended to the message.

    Returns
    -------
    y : ndarray of shape (n_samples,), dtype float64

    Raises
    ------
    ValueError
        On NaN or infinity, a wrong length, or a grade outside the range (the
        message names the position, the value and how many are outside).

    Examples
    --------
    >>> from sklearn_fairaes._validation import check_grades
    >>> check_grades([0, 0.5, 1])
    array([0. , 0.5, 1. ])
    """
    arr = check_scores(y, name=name, n_samples=n_samples)
    bad = (arr < low) | (arr > high)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must hold grades in [{low:g}, {high:g}]; the value at "
            f"{_position_label(y, i)} is {float(arr[i])!r} ({int(bad.sum())} such "
            f"value(s) in all). {hint}".rstrip()
        )
    return arr


def check_score_range(
    score_range: Any, *, name: str = "score_range", max_points: int = MAX_SCORE_POINTS
) -> tuple[float, float]:
    """Validate a declared score scale ``(low, high)`` of integer score points.

    Parameters
    ----------
    score_range : tuple of two numbers
        The lowest and highest score point of the rubric, both included.
    name : str, default="score_range"
        Name of the argument, used in error messages.
    max_points : int, default=MAX_SCORE_POINTS
        Most score points the scale may have.

    Returns
    -------
    low, high : tuple of two float
        The ends of the scale.

    Raises
    ------
    TypeError
        If ``score_range`` is not a pair of real numbers.
    ValueError
        If an end is not finite or not an integer, ``low >= high``, or the
        scale has more than ``max_points`` score points.

    Examples
    --------
    >>> from sklearn_fairaes._validation import check_score_range
    >>> check_score_range((0, 12))
    (0.0, 12.0)
    """
    if isinstance(score_range, (str, bytes)) or not isinstance(score_range, Sequence):
        raise TypeError(
            f"{name} must be a pair (low, high) of integer score points, e.g. (0, 12); "
            f"got {type(score_range).__name__}"
        )
    if len(score_range) != 2 or not all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) for v in score_range
    ):
        raise TypeError(
            f"{name} must be a pair (low, high) of integer score points, e.g. (0, 12); "
            f"got {len(score_range)} value(s)"
            if len(score_range) != 2
            else f"{name} must hold two numbers, e.g. (0, 12)"
        )
    low, high = (float(v) for v in score_range)
    for value in (low, high):
        if not np.isfinite(value) or value != round(value):
            raise ValueError(
                f"{name} must hold two finite integer score points, got {value:.6g}"
            )
    if low >= high:
        raise ValueError(
            f"{name} must be (low, high) with low < high, got ({low:g}, {high:g})"
        )
    if high - low + 1 > max_points:
        raise ValueError(
            f"{name} ({low:g}, {high:g}) has {high - low + 1:.6g} score points; at most "
            f"{max_points} are supported (a rubric has a few dozen)"
        )
    return low, high


def _missing_label(value: object) -> bool:
    """Whether a group label is a missing value (None, NaN, NaT, pandas.NA)."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(value))
    return type(value).__name__ in ("NAType", "NaTType")


def _cell(value: object, limit: int = 40) -> str:
    """``repr`` of a data cell, cut to ``limit`` characters (one-line messages)."""
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _blank(value: object) -> bool:
    """Whether a cell is empty: None, NaN, pandas.NA, or a blank string."""
    if isinstance(value, str):
        return not value.strip()
    return _missing_label(value)


def _as_number(value: object) -> float | None:
    """A cell as a float: a real number or a string that reads as one, else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def check_score_column(
    values: Any,
    *,
    name: str,
    rows: Sequence[int] | NDArray[np.integer[Any]] | None = None,
    prompt: object = None,
    score_range: tuple[float, float] | None = None,
    kind: str = "score",
    range_source: Literal["declared", "inferred", "raters"] = "declared",
) -> NDArray[np.float64]:
    """Validate one column of scores of a data table; return it as float64.

    The one check of a column of scores in a user's table (the human score,
    a rater, a scoring system's scores, a grade), so that the audit, the
    command line and the data loaders word a bad cell alike: which column,
    which data row, which prompt, what it holds and how to fix it.

    Parameters
    ----------
    values : array-like of shape (n_rows,)
        The column's cells: numbers, or strings that read as numbers (a file
        read as text, where every cell is a string). A pandas Series or a
        one-column DataFrame is accepted.
    name : str
        The column's name, as the user wrote it.
    rows : array-like of int of shape (n_rows,), default=None
        The data-row number of each cell, counted from 1 as in the file (the
        header is not a data row); None numbers the cells 1 to n_rows. Pass
        the rows of the whole table when ``values`` is a subset of it (one
        prompt's essays), so that a message names the row the user sees.
    prompt : object, default=None
        The prompt (or question) the rows belong to; named in messages.
    score_range : tuple of two numbers, default=None
        The score scale ``(low, high)``, both ends included; a score outside
        it is refused. None accepts any finite number.
    kind : str, default="score"
        What the column holds, for messages: ``"score"`` gives
        ``"score column 'x'"``, ``"system"`` gives ``"system column 'x'"``.
    range_source : {"declared", "inferred", "raters"}, default="declared"
        Whether ``score_range`` was declared by the user or inferred from the
        human scores; only the wording of the out-of-scale message depends on
        it. ``"raters"``: the column is one of two raters and ``score_range``
        the declared scale of the resolved score, which is often the raters'
        sum (ASAP prompt 1: 2-12 from two raters' 1-6), so a positive low end
        is halved; a score above the high end is off every such scale.

    Returns
    -------
    scores : ndarray of shape (n_rows,), dtype float64

    Raises
    ------
    ValueError
        If a cell is blank (empty, whitespace, None, NaN), is not a number
        (e.g. ``"ten"``), is infinite, or lies outside ``score_range``; or if
        ``rows`` does not give one row number per cell. The message names the
        column, the first such data row and its value, the prompt, and how
        many rows are affected.

    Examples
    --------
    >>> from sklearn_fairaes._validation import check_score_column
    >>> check_score_column(["2", "3", "4.5"], name="engine", kind="system")
    array([2. , 3. , 4.5])
    >>> check_score_column(["2", "", "4"], name="engine", kind="system",
    ...                    rows=[11, 12, 13], prompt="7")
    Traceback (most recent call last):
    ...
    ValueError: system column 'engine' is blank in data row 12 (prompt '7'; 1 such row(s)); give every essay a score, or drop the rows
    """
    if isinstance(values, (str, bytes)):
        raise ValueError(
            f"{kind} column {name!r} must be a column of scores (one cell per row), "
            f"got a single {type(values).__name__}"
        )
    if hasattr(values, "columns") and hasattr(values, "iloc"):  # a DataFrame
        if values.shape[1] != 1:
            raise ValueError(
                f"{kind} column {name!r} is a DataFrame with {values.shape[1]} columns; "
                f"pass the one column that holds the scores"
            )
        values = values.iloc[:, 0]
    cells = values.tolist() if hasattr(values, "tolist") else list(values)
    n = len(cells)
    numbers_of = np.arange(1, n + 1) if rows is None else np.asarray(rows).reshape(-1)
    if numbers_of.shape[0] != n:
        raise ValueError(
            f"rows gives {numbers_of.shape[0]} row number(s) for the {n} cell(s) of "
            f"{kind} column {name!r}; pass one data-row number per cell"
        )
    where = f"prompt {prompt!r}; " if prompt is not None else ""
    blank = np.fromiter((_blank(v) for v in cells), bool, n)
    parsed = [None if b else _as_number(v) for v, b in zip(cells, blank)]
    text = np.fromiter((p is None and not b for p, b in zip(parsed, blank)), bool, n)
    if blank.any():
        i = int(np.flatnonzero(blank)[0])
        raise ValueError(
            f"{kind} column {name!r} is blank in data row {int(numbers_of[i])} "
            f"({where}{int(blank.sum())} such row(s)); give every essay a score, or "
            f"drop the rows"
        )
    if text.any():
        i = int(np.flatnonzero(text)[0])
        raise ValueError(
            f"{kind} column {name!r} must hold numbers; data row {int(numbers_of[i])} "
            f"holds {_cell(cells[i])} ({where}{int(text.sum())} such row(s)). Fix or "
            f"drop them."
        )
    scores = np.array(parsed, dtype=np.float64)
    # a string "nan" reads as a number, but it is a missing score
    missing = np.isnan(scores)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"{kind} column {name!r} is blank in data row {int(numbers_of[i])} "
            f"({_cell(cells[i])}; {where}{int(missing.sum())} such row(s)); give every "
            f"essay a score, or drop the rows"
        )
    infinite = np.isinf(scores)
    if infinite.any():
        i = int(np.flatnonzero(infinite)[0])
        raise ValueError(
            f"{kind} column {name!r} holds a non-finite score in data row "
            f"{int(numbers_of[i])} ({_cell(cells[i])}; {where}{int(infinite.sum())} "
            f"such row(s)); give the score point, or drop the row"
        )
    if score_range is not None:
        low, high = (float(v) for v in score_range)
        declared_low = low
        if range_source == "raters" and low > 0:
            low = low / 2
        outside = (scores < low) | (scores > high)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            if range_source == "raters" and low != declared_low:
                scale = (
                    f"{low:g} to {high:g}, the declared score scale {declared_low:g} "
                    f"to {high:g} from half its low end (a score may be the raters' sum)"
                )
                fix = "fix those rows, or declare the scale the scores use"
            elif range_source in ("declared", "raters"):
                scale = f"the declared score scale {low:g} to {high:g}"
                fix = "fix those rows, or declare the scale the scores use"
            else:
                scale = (
                    f"the score scale {low:g} to {high:g} inferred from the human scores"
                )
                fix = (
                    "declare the rubric's scale with score_range=(low, high) "
                    "(--score-range low,high), or fix those rows"
                )
            raise ValueError(
                f"{kind} column {name!r} holds {scores[i]:.6g} in data row "
                f"{int(numbers_of[i])}, outside {scale} ({where}{int(outside.sum())} "
                f"such row(s)); {fix}"
            )
    return scores


def check_groups(
    groups: Any,
    *,
    name: str = "groups",
    n_samples: int | None = None,
    min_groups: int = 1,
) -> NDArray[Any]:
    """Validate group labels, one per essay, and return them as a 1-D array.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        One label per essay (str, int, float, bool or another sortable type),
        e.g. a column of a DataFrame. A one-column DataFrame or a column
        vector is accepted.
    name : str, default="groups"
        Name of the argument, used in error messages.
    n_samples : int, default=None
        Expected length, when it must match another argument.
    min_groups : int, default=1
        Smallest accepted number of distinct labels.

    Returns
    -------
    groups : ndarray of shape (n_samples,)
        The labels: str, int64 or float64 when every label is of that kind,
        else an object array.

    Raises
    ------
    TypeError
        If ``groups`` is None, a single string, or a sparse matrix, or if its
        labels cannot be compared with each other (e.g. ``1`` and ``"a"``);
        the message names a position of each kind.
    ValueError
        If a label is missing (None, NaN, NaT, ``pandas.NA``; the message
        names the first position and the count), the length differs from
        ``n_samples``, the shape is not 1-D, or there are fewer than
        ``min_groups`` distinct labels.

    Examples
    --------
    >>> from sklearn_fairaes._validation import check_groups
    >>> check_groups(["f", "m", "f"])
    array(['f', 'm', 'f'], dtype='<U1')
    >>> check_groups([1, 2, 2], min_groups=2)
    array([1, 2, 2])
    """
    if groups is None:
        raise TypeError(
            f"{name} is None; pass one group label per essay (e.g. a DataFrame column)"
        )
    if isinstance(groups, (str, bytes)):
        raise TypeError(
            f"{name} must hold one group label per essay, got a single "
            f"{type(groups).__name__} ({groups!r:.40})"
        )
    if sp.issparse(groups):
        raise TypeError(f"{name} must be a 1-D array of labels, got a sparse matrix")
    source = groups
    if hasattr(groups, "columns") and hasattr(groups, "iloc"):  # a DataFrame
        if groups.shape[1] != 1:
            raise ValueError(
                f"{name} is a DataFrame with {groups.shape[1]} columns; pass the one "
                f"column that holds the group labels, e.g. df['group']"
            )
        groups = source = groups.iloc[:, 0]
    if isinstance(groups, np.ndarray) or hasattr(groups, "to_numpy"):
        arr = groups.to_numpy() if hasattr(groups, "to_numpy") else groups
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim != 1:
            raise ValueError(
                f"{name} must be 1-D (one label per essay), got shape {arr.shape}"
            )
    else:
        try:
            values = list(groups)
        except TypeError:
            raise TypeError(
                f"{name} must be a 1-D array-like of labels (list, array or pandas "
                f"Series), got {type(groups).__name__}"
            ) from None
        # Built element by element: numpy would turn [1, "a"] into ["1", "a"], or
        # a list of tuples into a 2-D array.
        arr = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            arr[i] = value
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {arr.shape[0]} labels but there are {n_samples} essays; pass "
            f"one group label per essay, in the same order as the scores"
        )
    if arr.dtype.kind == "f":
        missing = np.isnan(arr)
    elif arr.dtype.kind in "mM":
        missing = np.isnat(arr)
    elif arr.dtype.kind == "O":
        missing = np.fromiter((_missing_label(v) for v in arr), bool, arr.shape[0])
    else:
        missing = np.zeros(arr.shape[0], dtype=bool)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"{name} is missing at {_position_label(source, i)} ({arr[i]!r}); "
            f"{int(missing.sum())} essay(s) have no group label. Drop those rows, or "
            f"give them a label of their own, e.g. {name}.fillna('unknown')"
        )
    if arr.dtype.kind == "O":
        kinds = {
            "str": all(isinstance(v, str) for v in arr),
            "int": all(
                isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
                for v in arr
            ),
        }
        kinds["real"] = all(
            isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in arr
        )
        if arr.shape[0] and kinds["str"]:
            arr = arr.astype(str)
        elif arr.shape[0] and kinds["int"]:
            try:
                arr = arr.astype(np.int64)
            except OverflowError:  # pragma: no cover - labels beyond int64
                pass
        elif arr.shape[0] and kinds["real"]:
            arr = arr.astype(np.float64)
    try:
        distinct = np.unique(arr)
    except TypeError:
        first = type(arr[0])
        j = next(k for k, v in enumerate(arr) if not isinstance(v, first))
        raise TypeError(
            f"{name} mixes labels that cannot be compared: {arr[0]!r} "
            f"({first.__name__}) at {_position_label(source, 0)} and {arr[j]!r} "
            f"({type(arr[j]).__name__}) at {_position_label(source, j)}; use one type "
            f"for every label, e.g. convert them all to str"
        ) from None
    if distinct.shape[0] < min_groups:
        shown = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in distinct)
        raise ValueError(
            f"{name} holds {distinct.shape[0]} distinct group(s) ({shown or 'none'}); at "
            f"least {min_groups} are needed to compare groups"
        )
    return arr


def check_predictor(
    estimator: _Estimator, *, name: str = "estimator", method: str = "predict"
) -> _Estimator:
    """Raise unless ``estimator`` has a callable ``method`` and, if fittable, is fitted.

    Parameters
    ----------
    estimator : object
        A fitted scikit-learn estimator or pipeline, or any object with the
        method (an object without ``fit`` is taken as ready to use).
    name : str, default="estimator"
        Name of the argument, used in error messages.
    method : str, default="predict"
        The method that will be called.

    Returns
    -------
    estimator : object
        The same object.

    Raises
    ------
    TypeError
        If the method is missing (the message names the type that was given).
    sklearn.exceptions.NotFittedError
        If the estimator has ``fit`` but is not fitted.

    Examples
    --------
    >>> from sklearn.dummy import DummyRegressor
    >>> from sklearn_fairaes._validation import check_predictor
    >>> check_predictor(DummyRegressor().fit([[0], [1]], [1, 2]))
    DummyRegressor()
    """
    from sklearn.utils.validation import check_is_fitted

    if isinstance(estimator, type):
        raise TypeError(
            f"{name} is the class {estimator.__name__}, not an instance; pass a fitted "
            f"instance, e.g. {estimator.__name__}().fit(...)"
        )
    if not callable(getattr(estimator, method, None)):
        raise TypeError(
            f"{name} must have a {method}() method (a fitted scikit-learn estimator or "
            f"pipeline that takes a list of essays, e.g. make_pipeline("
            f"TfidfEssayVectorizer(), Ridge()).fit(essays, scores)); got a "
            f"{type(estimator).__name__} without one"
        )
    if callable(getattr(estimator, "fit", None)):
        check_is_fitted(
            estimator,
            msg=(
                f"{name} ({type(estimator).__name__}) is not fitted; call "
                f"{name}.fit(essays, scores) first"
            ),
        )
    return estimator
