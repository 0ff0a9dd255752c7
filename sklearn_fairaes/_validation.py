"""The one input validator of the package.

Every public function and estimator validates its inputs here, so that a user
sees the same wording whatever they called: what was wrong, where (argument,
position, column), what was expected, and how to fix it.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_essays",
    "check_scores",
    "check_embeddings",
    "check_same_length",
]


def _position_label(obj, i):
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


def check_essays(X, *, name="X", allow_empty=True):
    """Validate a collection of essays and return it as a list of ``str``.

    Parameters
    ----------
    X : list, tuple, 1-D numpy array, pandas Series or one-column DataFrame of str
        The essays.
    name : str, default="X"
        Name of the argument, used in error messages.
    allow_empty : bool, default=True
        Whether the empty string is a valid essay.

    Returns
    -------
    essays : list of str

    Raises
    ------
    TypeError
        If ``X`` is a single string, or an element is not a string (bytes,
        numbers, ...). The message names the first bad position.
    ValueError
        If an element is ``None`` or NaN, or (with ``allow_empty=False``) empty.

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


def check_scores(y, *, name="y", n_samples=None, min_samples=1, allow_nan=False):
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
        y = y.toarray()
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


def check_embeddings(X, *, name="X", min_samples=2, accept_sparse=True):
    """Validate a matrix of essay vectors (one row per essay).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    name : str, default="X"
    min_samples : int, default=2
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
    if sp.issparse(X):
        if not accept_sparse:
            raise TypeError(
                f"{name} is a sparse matrix, which this function does not accept; "
                f"call {name}.toarray() first"
            )
        X = sp.csr_matrix(X, dtype=np.float64)
        data = X.data
    else:
        if hasattr(X, "to_numpy") and hasattr(X, "columns"):
            X = X.to_numpy()
        X = np.asarray(X)
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
        X = np.ascontiguousarray(X, dtype=np.float64)
        data = X
    if X.shape[0] < min_samples:
        raise ValueError(
            f"{name} has {X.shape[0]} row(s); at least {min_samples} essays are needed"
        )
    if X.shape[1] == 0:
        raise ValueError(f"{name} has no columns (shape {X.shape})")
    if not np.isfinite(data).all():
        if sp.issparse(X):
            bad_row = int(
                np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(data))[0], "right")
                - 1
            )
        else:
            bad_row = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        raise ValueError(
            f"{name} contains NaN or infinity (first in row {bad_row}); check the "
            f"representation that produced it"
        )
    return X


def check_same_length(**arrays):
    """Raise if the named inputs do not all have the same number of samples.

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
