"""load_short_answers: scaling, reference pooling, bad input, files, and our copies
of the ASAG2024 datasets (read through benchmarks/bench_asag.py's SETS mapping)
compared with ASAG2024's Table 1 and the mean-baseline column of its Table 2.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA_DIR, require_file, require_module
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_fairaes.datasets import load_short_answers
from sklearn_fairaes.metrics import weighted_rmse

pd = require_module("pandas", "report")

COLS = dict(question_col="q", reference_col="ref", answer_col="text", grade_col="pts")


def _raw():
    return pd.DataFrame(
        {
            "q": ["q1", "q1", "q2", "q2", "q1"],
            "ref": ["Light.", "", "Ice floats. ||| Ice is light.", "Ice floats.", "Sun."],
            "text": ["Sunlight.", "No idea", "It floats", "", "Light and water."],
            "pts": [2, 0, 1, 2, 1.5],
            "full": [2, 2, 4, 4, 2],
        },
        index=[10, 11, 12, 13, 14],
    )


def test_hand_worked_frame():
    raw = _raw()
    before = raw.copy(deep=True)
    out = load_short_answers(raw, **COLS, max_grade=2, reference_sep=" ||| ")
    assert list(out.columns) == ["question", "reference", "answer", "grade"]
    assert out.index.tolist() == [10, 11, 12, 13, 14]
    assert out["grade"].tolist() == [1.0, 0.0, 0.5, 1.0, 0.75]
    # references pooled per question, distinct, in order of first appearance
    assert out["reference"].tolist() == [
        ["Light.", "Sun."],
        ["Light.", "Sun."],
        ["Ice floats.", "Ice is light."],
        ["Ice floats.", "Ice is light."],
        ["Light.", "Sun."],
    ]
    assert out["answer"].tolist() == raw["text"].tolist()
    pd.testing.assert_frame_equal(raw, before)


def test_reference_cells_may_be_lists():
    raw = _raw().assign(ref=[["Light.", "Sun."], [], ["Ice floats."], None, "Sun."])
    out = load_short_answers(raw, **COLS, max_grade=2)
    assert out["reference"].tolist()[0] == ["Light.", "Sun."]
    assert out["reference"].tolist()[3] == ["Ice floats."]


def test_max_grade_none_column_and_min_grade():
    raw = _raw()
    observed = load_short_answers(raw, **COLS)
    np.testing.assert_allclose(observed["grade"], raw["pts"] / 2)
    per_row = load_short_answers(raw, **COLS, max_grade="full")
    np.testing.assert_allclose(per_row["grade"], [1, 0, 0.25, 0.5, 0.75])
    shifted = load_short_answers(
        raw.assign(pts=raw["pts"] + 1), **COLS, min_grade=1, max_grade=3
    )
    np.testing.assert_allclose(shifted["grade"], raw["pts"] / 2)


def test_grades_as_text_are_parsed():
    raw = _raw().astype({"pts": str})
    out = load_short_answers(raw, **COLS, max_grade=2)
    assert out["grade"].tolist() == [1.0, 0.0, 0.5, 1.0, 0.75]


def test_without_references():
    out = load_short_answers(_raw(), **{**COLS, "reference_col": None}, max_grade=2)
    assert out["reference"].tolist() == [[]] * 5


def test_empty_answers_keep_and_drop():
    raw = _raw()
    raw.loc[11, "text"] = None  # a missing answer counts as an empty one
    kept = load_short_answers(raw, **COLS, max_grade=2)
    assert kept.loc[11, "answer"] == "" and kept.loc[13, "answer"] == ""
    dropped = load_short_answers(raw, **COLS, max_grade=2, empty_answers="drop")
    assert dropped.index.tolist() == [10, 12, 14]
    pd.testing.assert_frame_equal(dropped, kept.loc[[10, 12, 14]])


@settings(max_examples=40, deadline=None)
@given(
    points=st.lists(st.integers(0, 10), min_size=1, max_size=20),
    top=st.integers(10, 20),
)
def test_scaled_grades_in_unit_interval(points, top):
    raw = pd.DataFrame(
        {"q": ["q"] * len(points), "ref": ["r"] * len(points), "text": ["a"] * len(points),
         "pts": points}
    )  # fmt: skip
    out = load_short_answers(raw, **COLS, max_grade=top)
    assert out["grade"].between(0, 1).all()
    np.testing.assert_allclose(out["grade"], np.asarray(points) / top)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "change, kwargs, exc, match",
    [
        ({"pts": [2, 0, 3, 1, 1]}, {"max_grade": 2}, ValueError,
         r"grade 3.0 at position 2 \(index label 12\) of column 'pts' is outside the "
         r"declared range \[0, 2\]"),
        ({"pts": [2, 0, -1, 1, 1]}, {"max_grade": 2}, ValueError, "outside the declared range"),
        ({"pts": [2, 0, np.nan, 1, 1]}, {"max_grade": 2}, ValueError,
         r"grade in column 'pts' is missing or not finite at position 2"),
        ({"pts": ["2", "0", "two", "1", "1"]}, {"max_grade": 2}, ValueError,
         r"column 'pts' at position 2 \(index label 12\) holds 'two', not a number"),
        ({}, {"max_grade": 0}, ValueError, "must be greater than min_grade"),
        ({}, {"max_grade": [2]}, TypeError, "max_grade must be a number, a column name"),
        ({}, {"max_grade": 2, "min_grade": "0"}, TypeError, "min_grade must be a number"),
        ({}, {"max_grade": 2, "question_col": "question"}, ValueError,
         r"question_col='question' is not a column of the data; its columns are 'full', "
         r"'pts', 'q', 'ref', 'text'"),
        ({}, {"max_grade": "points"}, ValueError, "max_grade='points' is not a column"),
        ({}, {"max_grade": 2, "empty_answers": "ignore"}, ValueError,
         "empty_answers must be one of 'drop', 'keep', 'raise'"),
        ({}, {"max_grade": 2, "empty_answers": "raise"}, ValueError,
         r"the answer at position 3 \(index label 13\) of column 'text' is empty"),
        ({}, {"max_grade": 2, "reference_sep": ""}, ValueError, "reference_sep must be"),
        ({"ref": ["Light.", "", "", " ", "Sun."]}, {"max_grade": 2}, ValueError,
         r"question 'q2' \(rows 12, 13\) has no reference answer in column 'ref'; drop"),
        ({"ref": ["Light.", 3, "", "x", "Sun."]}, {"max_grade": 2}, TypeError,
         "column 'ref' at position 1 .* is a int"),
        ({"text": ["a", "b", 5, "c", "d"]}, {"max_grade": 2}, TypeError,
         "column 'text' at position 2 .* holds a int"),
        ({"q": ["q1", None, "q2", "q2", "q1"]}, {"max_grade": 2}, ValueError,
         r"column 'q' is missing at position 1"),
    ],
)  # fmt: skip
def test_bad_input(change, kwargs, exc, match):
    raw = _raw()
    for column, values in change.items():
        raw[column] = pd.Series(values, index=raw.index, dtype=object)
    with pytest.raises(exc, match=match):
        load_short_answers(raw, **{**COLS, **kwargs})


def test_no_rows_and_bad_source(tmp_path):
    with pytest.raises(ValueError, match="the data has no rows"):
        load_short_answers(_raw().iloc[:0], **COLS, max_grade=2)
    with pytest.raises(TypeError, match="must be a pandas DataFrame or the path"):
        load_short_answers([1, 2], **COLS)
    with pytest.raises(FileNotFoundError, match="no file at"):
        load_short_answers(tmp_path / "absent.tsv", **COLS)
    odd = tmp_path / "answers.json"
    odd.write_text("{}")
    with pytest.raises(ValueError, match="cannot tell how to read 'answers.json'"):
        load_short_answers(odd, **COLS)


# --------------------------------------------------------------------------- files


@pytest.mark.parametrize("suffix", [".tsv", ".csv", ".xlsx"])
def test_reads_files_and_keeps_text_as_text(tmp_path, suffix):
    raw = _raw().drop(columns="full").reset_index(drop=True)
    raw.loc[1, "text"] = "NA"  # an answer, not a missing value
    path = tmp_path / f"answers{suffix}"
    if suffix == ".tsv":
        raw.to_csv(path, sep="\t", index=False)
    elif suffix == ".csv":
        raw.to_csv(path, index=False)
    else:
        require_module("openpyxl", "report")
        raw.to_excel(path, index=False)
    out = load_short_answers(path, **COLS, max_grade=2, reference_sep=" ||| ")
    expected = load_short_answers(raw, **COLS, max_grade=2, reference_sep=" ||| ")
    assert out["answer"].tolist()[1] == "NA"
    assert out["answer"].tolist() == [a if a else "" for a in expected["answer"]]
    np.testing.assert_allclose(out["grade"], expected["grade"])
    assert out["reference"].tolist() == expected["reference"].tolist()


# --------------------------------------------------------------------------- real data


def _bench():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_asag.py"
    spec = importlib.util.spec_from_file_location("bench_asag", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()

#: Mean scaled grade per dataset in ASAG2024's published combined file (its
#: examples/example_weights.ipynb prints them to six decimals), rows from Table 1.
ASAG2024_MEANS = {
    "beetle": (3941, 0.666667),
    "cu-nlp": (171, 0.279532),
    "mohler": (630, 0.811746),
    "saf": (2463, 0.761612),
    "stita": (333, 0.666075),
    "digiklausur": (646, 0.684985),
    "scientsbank": (10804, 0.605054),
}
MATCHING = ("beetle", "cu-nlp", "mohler", "saf", "stita")


def _load(name):
    require_file(DATA_DIR / BENCH.SETS[name]["file"])
    return BENCH.load_set(name, DATA_DIR)


@pytest.mark.parametrize("name", MATCHING)
def test_our_copy_matches_asag2024_rows_and_mean(name):
    data = _load(name)
    rows, mean = ASAG2024_MEANS[name]
    assert len(data) == rows
    assert round(data["grade"].mean(), 6) == mean
    assert data["grade"].between(0, 1).all()
    assert data["reference"].map(len).min() >= 1


@pytest.mark.parametrize(
    "name, rows",
    [("digiklausur", 663), ("scientsbank", 6242), ("scientsbank-4q", 140)],
)
def test_our_copies_that_differ_from_asag2024(name, rows):
    data = _load(name)
    assert len(data) == rows
    key = name.split("-")[0]
    assert round(data["grade"].mean(), 6) != ASAG2024_MEANS[key][1]


@pytest.mark.parametrize("name", MATCHING + ("digiklausur",))
def test_mean_baseline_reproduces_asag2024_table2(name):
    data = _load(name)
    y = data["grade"].to_numpy()
    value = weighted_rmse(y, np.full(y.shape, y.mean()))
    assert round(value, 2) == BENCH.ASAG2024_TABLE2[name][0]


def test_per_question_scaling_of_saf_gives_full_credit_on_every_scale():
    data = _load("saf-by-question")
    assert len(data) == 2981
    full = data.loc[data["grade"] == 1.0].groupby("question").size()
    assert full.index.nunique() == 31  # every question has full-credit answers


def test_digiklausur_keeps_its_empty_answers_and_has_no_references():
    data = _load("digiklausur")
    assert (data["answer"].str.strip() == "").sum() == 39  # placeholders included
    assert data.loc[data["answer"] == "", "grade"].max() == 0.0
    assert data["reference"].map(len).max() == 0
