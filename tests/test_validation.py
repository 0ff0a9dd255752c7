import numpy as np
import pytest
import scipy.sparse as sp
from conftest import require_module

from sklearn_fairaes._validation import (
    check_embeddings,
    check_essays,
    check_same_length,
    check_scores,
)


def test_essays_accepts_list_array_series_and_one_column_frame():
    pd = require_module("pandas", "report")
    texts = ["a", "", "b c"]
    assert check_essays(texts) == texts
    assert check_essays(tuple(texts)) == texts
    assert check_essays(np.array(texts, dtype=object)) == texts
    assert check_essays(pd.Series(texts)) == texts
    assert check_essays(pd.DataFrame({"essay": texts})) == texts
    assert check_essays(np.array(texts)[:, None]) == texts


@pytest.mark.parametrize(
    ("bad", "exc", "match"),
    [
        (["ok", None], ValueError, r"position 1 of X is None; pass a string"),
        (["ok", "ok", float("nan")], ValueError, r"position 2 of X is NaN"),
        ([b"bytes"], TypeError, r"position 0 of X is bytes.*decode"),
        (["ok", 3], TypeError, r"position 1 of X is a int"),
        ("one essay", TypeError, r"single str; wrap it in a list"),
        (np.array([["a", "b"], ["c", "d"]]), ValueError, r"one-dimensional"),
    ],
)
def test_essays_bad_input_names_position(bad, exc, match):
    with pytest.raises(exc, match=match):
        check_essays(bad)


def test_essays_series_reports_index_label():
    pd = require_module("pandas", "report")
    s = pd.Series(["a", None], index=[10, 11])
    with pytest.raises(
        ValueError, match=r"position 1 \(index label 11\) of X is (None|NaN)"
    ):
        check_essays(s)


def test_essays_empty_not_allowed_when_asked():
    with pytest.raises(ValueError, match="position 1 of essays is empty"):
        check_essays(["x", "  "], name="essays", allow_empty=False)


def test_multi_column_frame_is_refused():
    pd = require_module("pandas", "report")
    with pytest.raises(ValueError, match="DataFrame with 2 columns"):
        check_essays(pd.DataFrame({"a": ["x"], "b": ["y"]}))


def test_scores_conversions_and_errors():
    assert check_scores([1, 2]).dtype == np.float64
    np.testing.assert_array_equal(check_scores(np.array([[1.0], [2.0]])), [1.0, 2.0])
    np.testing.assert_array_equal(check_scores(np.array([1, 2], dtype=object)), [1, 2])
    with pytest.raises(
        TypeError, match=r"y_pred must hold numbers; the value at position 1"
    ):
        check_scores(np.array([1, "x"], dtype=object), name="y_pred")
    with pytest.raises(ValueError, match=r"y is NaN at position 1 \(1 such"):
        check_scores([1.0, np.nan])
    with pytest.raises(ValueError, match=r"y is infinite at position 0"):
        check_scores([np.inf, 1.0])
    with pytest.raises(ValueError, match=r"has 3 samples but 2 were expected"):
        check_scores([1, 2, 3], n_samples=2)
    with pytest.raises(ValueError, match=r"at least 2 are needed"):
        check_scores([1], min_samples=2)
    with pytest.raises(ValueError, match=r"1-D array of scores, got shape \(2, 2\)"):
        check_scores(np.ones((2, 2)))
    with pytest.raises(ValueError, match="got a scalar"):
        check_scores(3.0)
    assert np.isnan(check_scores([1.0, np.nan], allow_nan=True)[1])


def test_embeddings_checks():
    assert check_embeddings([[1, 2], [3, 4]]).dtype == np.float64
    assert sp.issparse(check_embeddings(sp.eye(3, format="csr")))
    with pytest.raises(ValueError, match=r"must be 2-D .*X\.reshape\(-1, 1\)"):
        check_embeddings([1.0, 2.0])
    with pytest.raises(ValueError, match="at least 2 essays"):
        check_embeddings([[1.0, 2.0]])
    with pytest.raises(ValueError, match="NaN or infinity \\(first in row 1\\)"):
        check_embeddings([[1.0, 2.0], [np.nan, 1.0]])
    with pytest.raises(ValueError, match="NaN or infinity \\(first in row 2\\)"):
        check_embeddings(sp.csr_matrix(np.array([[1.0, 0], [0, 1], [np.inf, 0]])))
    with pytest.raises(TypeError, match="must be a numeric matrix"):
        check_embeddings(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(
        TypeError, match="sparse matrix, which this function does not accept"
    ):
        check_embeddings(sp.eye(3, format="csr"), accept_sparse=False)


def test_same_length():
    check_same_length(a=[1, 2], b=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="X has 2, y_pred has 3"):
        check_same_length(X=[1, 2], y_pred=[1, 2, 3])
