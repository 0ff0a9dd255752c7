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


# ----------------------------------------------------------- check_score_column


def test_score_column_reads_numbers_and_numeric_text():
    from sklearn_fairaes._validation import check_score_column

    pd = require_module("pandas", "report")
    got = check_score_column(pd.Series(["2", " 3 ", "4.5", "1e1"]), name="engine")
    np.testing.assert_array_equal(got, [2.0, 3.0, 4.5, 10.0])
    assert got.dtype == np.float64
    np.testing.assert_array_equal(
        check_score_column(np.array([0, 6]), name="s", score_range=(0, 6)), [0, 6]
    )
    np.testing.assert_array_equal(
        check_score_column(pd.DataFrame({"s": [1.0, 2.0]}), name="s"), [1, 2]
    )


@pytest.mark.parametrize(
    ("values", "kwargs", "match"),
    [
        (
            ["1", "", "  ", "3"],
            {},
            r"^score column 's' is blank in data row 2 \(2 such row\(s\)\); give every",
        ),
        ([1.0, None], {}, r"is blank in data row 2 \(1 such"),
        ([1.0, float("nan")], {}, r"is blank in data row 2 \(1 such"),
        (["1", "nan"], {}, r"is blank in data row 2 \('nan'; 1 such"),
        (
            ["1", "ten", "x"],
            {},
            r"^score column 's' must hold numbers; data row 2 holds 'ten' \(2 such row",
        ),
        ([True, 1], {}, r"must hold numbers; data row 1 holds True"),
        (["inf", "1"], {}, r"holds a non-finite score in data row 1 \('inf'; 1 such"),
        (
            [1, 9, 8],
            {"score_range": (1, 4)},
            r"holds 9 in data row 2, outside the declared score scale 1 to 4 "
            r"\(2 such row\(s\)\); fix those rows, or declare",
        ),
        (
            [1, 0.5],
            {"score_range": (1, 4), "range_source": "inferred"},
            r"holds 0.5 in data row 2, outside the score scale 1 to 4 inferred from the "
            r"human scores .*--score-range low,high",
        ),
        (
            ["2", ""],
            {"rows": [11, 15], "prompt": "7", "kind": "system"},
            r"^system column 's' is blank in data row 15 \(prompt '7'; 1 such row",
        ),
        ([1, 2], {"rows": [3]}, r"rows gives 1 row number\(s\) for the 2 cell\(s\)"),
        ("12", {}, r"must be a column of scores \(one cell per row\), got a single str"),
    ],
)
def test_score_column_refusals_name_column_row_and_prompt(values, kwargs, match):
    from sklearn_fairaes._validation import check_score_column

    with pytest.raises(ValueError, match=match):
        check_score_column(values, name="s", **kwargs)


def test_score_column_reports_the_first_bad_row_of_a_subset():
    from sklearn_fairaes._validation import check_score_column

    pd = require_module("pandas", "report")
    table = pd.DataFrame({"prompt": [1, 2, 1, 2, 2], "engine": ["1", "2", "3", "9", "x"]})
    mask = (table["prompt"] == 2).to_numpy()
    with pytest.raises(
        ValueError, match=r"data row 5 holds 'x' \(prompt 2; 1 such row\(s\)\)"
    ):
        check_score_column(
            table.loc[mask, "engine"],
            name="engine",
            rows=np.flatnonzero(mask) + 1,
            prompt=2,
            score_range=(0, 6),
        )


# -- check_params: sklearn's declarative parameter checks without its private
# constraint classes (sklearn.utils._param_validation)
class _Estimator:
    def __init__(self, **params):
        self.__dict__.update(params)


def test_check_params_accepts_each_kind_of_constraint():
    import numbers

    from sklearn_fairaes._param_validation import Interval, Options, check_params

    rules = {
        "rate": [Interval(numbers.Real, 0, 1)],
        "k": [Interval(numbers.Integral, 1, None), None],
        "mode": [Options(("a", "b"))],
        "tagger": [str, callable],
        "flag": ["boolean"],
        "random_state": ["random_state"],
    }
    for params in (
        {"rate": 0, "k": 1, "mode": "a", "tagger": len, "flag": True, "random_state": None},
        {"rate": 1.0, "k": None, "mode": "b", "tagger": "x", "flag": np.False_,
         "random_state": np.random.RandomState(0)},
        {"rate": np.float32(0.5), "k": np.int64(9), "mode": "a", "tagger": "x",
         "flag": False, "random_state": 2**32 - 1},
    ):  # fmt: skip
        check_params(_Estimator(**params), rules)


@pytest.mark.parametrize(
    "name, value, match",
    [
        ("rate", 1.5, r"'rate' parameter of _Estimator must be a float in the range \[0, 1\]\. Got 1\.5 instead"),
        ("rate", True, r"'rate' parameter .* Got True instead"),
        ("k", 0, r"'k' parameter of _Estimator must be an int in the range \[1, inf\) or None"),
        ("k", 2.0, r"'k' parameter .*Got 2\.0 instead"),
        ("mode", "c", r"'mode' parameter of _Estimator must be a str among \['a', 'b'\]"),
        ("flag", 1, r"'flag' parameter of _Estimator must be True or False"),
        ("random_state", -1, r"'random_state' parameter .*RandomState instance or None"),
        ("random_state", "0", r"'random_state' parameter"),
    ],
)  # fmt: skip
def test_check_params_says_what_the_parameter_must_be(name, value, match):
    import numbers

    from sklearn_fairaes._param_validation import (
        Interval,
        InvalidParameterError,
        Options,
        check_params,
    )

    rules = {
        "rate": [Interval(numbers.Real, 0, 1)],
        "k": [Interval(numbers.Integral, 1, None), None],
        "mode": [Options(("b", "a"))],
        "flag": ["boolean"],
        "random_state": ["random_state"],
    }
    good = {"rate": 0.5, "k": 1, "mode": "a", "flag": True, "random_state": 0}
    estimator = _Estimator(**{**good, name: value})
    with pytest.raises(InvalidParameterError, match=match) as info:
        check_params(estimator, rules)
    # a ValueError and a TypeError, as sklearn's InvalidParameterError is
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, TypeError)
