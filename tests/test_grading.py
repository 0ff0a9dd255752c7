"""wRMSE (ASAG2024): hand-worked values, a naive implementation, invariants and the
mean-predictor baselines of ASAG2024's Table 2 on the shared datasets."""

from pathlib import Path

import numpy as np
import pytest
from conftest import require_file, require_module
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_fairaes.metrics import weighted_rmse

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def naive_wrmse(y_true, y_pred, n_bins=10):
    """Loop version of the ASAG2024 definition: ranges [k/n, (k+1)/n), 1.0 in the last."""
    ranges = []
    for y in y_true:
        for k in range(n_bins):
            last = k == n_bins - 1
            if k / n_bins <= y < (k + 1) / n_bins or (last and y == 1.0):
                ranges.append(k)
                break
    filled = sorted(set(ranges))
    total = 0.0
    for y, p, k in zip(y_true, y_pred, ranges):
        weight = (1 / len(filled)) / ranges.count(k)
        total += weight * (y - p) ** 2
    return total**0.5


def test_hand_worked_example():
    y_true = [0.05, 0.05, 0.15, 0.95, 1.0]
    y_pred = [0.25, 0.05, 0.45, 0.95, 0.6]
    # Ranges: 0 (two answers), 1 (one), 9 (0.95 and 1.0). Three filled ranges:
    # weights 1/6, 1/6, 1/3, 1/6, 1/6; squared errors 0.04, 0, 0.09, 0, 0.16.
    expected = np.sqrt(0.04 / 6 + 0.09 / 3 + 0.16 / 6)
    assert weighted_rmse(y_true, y_pred) == pytest.approx(expected, rel=1e-12)


def test_one_point_zero_belongs_to_the_last_range():
    # With 1.0 in range 9, two ranges are filled and the two top answers get 1/4
    # each; were 1.0 an eleventh range, it would get 1/3 and give sqrt(1/3).
    value = weighted_rmse([0.95, 1.0, 0.5], [0.95, 0.0, 0.5])
    assert value == pytest.approx(0.5, rel=1e-12)


def test_grade_just_below_an_edge_from_scaling_counts_in_the_upper_range():
    # 0.3 - 1e-12 stands for a grade of 0.3 computed with rounding error.
    a = weighted_rmse([0.3 - 1e-12, 0.35, 0.8], [0.3, 0.35, 0.0])
    assert a == pytest.approx(np.sqrt(0.5 * 0.64), rel=1e-9)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n_bins", [1, 4, 10])
def test_matches_naive_implementation(seed, n_bins):
    rng = np.random.default_rng(seed)
    # Skewed grades (many high, few low) on a grid and continuous, with 0 and 1.
    y_true = np.concatenate(
        [rng.beta(5, 1.5, size=60), rng.integers(0, 5, size=30) / 4, [0.0, 1.0]]
    )
    y_pred = np.clip(y_true + rng.normal(0, 0.2, size=y_true.size), 0, 1)
    np.testing.assert_allclose(
        weighted_rmse(y_true, y_pred, n_bins=n_bins),
        naive_wrmse(y_true.tolist(), y_pred.tolist(), n_bins),
        rtol=1e-12,
    )


def test_equals_plain_rmse_when_ranges_hold_equal_counts():
    y_true = np.repeat(np.arange(10) / 10 + 0.05, 3)
    y_pred = np.clip(y_true + np.tile([0.1, -0.2, 0.05], 10), 0, 1)
    plain = np.sqrt(np.mean((y_true - y_pred) ** 2))
    assert weighted_rmse(y_true, y_pred) == pytest.approx(plain, rel=1e-12)


grades = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(grades)
def test_non_negative_and_zero_iff_equal(pairs):
    y_true, y_pred = (np.array(v) for v in zip(*pairs))
    value = weighted_rmse(y_true, y_pred)
    assert value >= 0
    assert (value == 0) == bool(np.all(y_true == y_pred))
    assert weighted_rmse(y_true, y_true) == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.2, 0.8), min_size=1, max_size=40), st.floats(-0.2, 0.2))
def test_constant_error_gives_that_error(y_true, shift):
    # The weights sum to 1, whatever the ranges hold.
    y_true = np.array(y_true)
    value = weighted_rmse(y_true, y_true + shift)
    assert value == pytest.approx(abs(shift), rel=1e-9, abs=1e-12)


def test_per_source_values_and_mean():
    rng = np.random.default_rng(5)
    y_true = rng.uniform(0, 1, size=90)
    y_pred = np.clip(y_true + rng.normal(0, 0.15, size=90), 0, 1)
    source = np.array(["beetle", "saf", "mohler"])[rng.integers(0, 3, size=90)]
    mean, per_source = weighted_rmse(y_true, y_pred, source=source, return_per_source=True)
    assert list(per_source) == list(dict.fromkeys(source.tolist()))
    for name, value in per_source.items():
        rows = source == name
        assert value == weighted_rmse(y_true[rows], y_pred[rows])
    assert mean == pytest.approx(np.mean(list(per_source.values())), rel=1e-12)
    assert weighted_rmse(y_true, y_pred, source=list(source)) == mean
    assert isinstance(mean, float)


def test_accepts_pandas():
    pd = require_module("pandas", "report")
    y = pd.Series([0.1, 0.5, 1.0], index=[7, 8, 9])
    assert weighted_rmse(y, pd.Series([0.1, 0.5, 1.0])) == 0.0


@pytest.mark.parametrize(
    ("y_true", "y_pred", "kwargs", "exc", "match"),
    [
        (
            [0.2, 1.5],
            [0.2, 0.4],
            {},
            ValueError,
            r"y_true must hold grades in \[0, 1\]; the value at position 1 is 1.5",
        ),
        (
            [0.2, 0.5],
            [0.2, -0.1],
            {},
            ValueError,
            r"y_pred must hold grades .* position 1 is -0.1.*np.clip\(y_pred, 0, 1\)",
        ),
        ([0.2, np.nan], [0.2, 0.4], {}, ValueError, r"y_true is NaN at position 1"),
        ([0.2, 0.3], [0.2], {}, ValueError, r"y_true has 2, y_pred has 1"),
        ([], [], {}, ValueError, r"y_true has 0 sample\(s\)"),
        (["a"], [0.1], {}, TypeError, r"y_true must hold numbers"),
        ([0.2], [0.2], {"n_bins": 0}, ValueError, r"n_bins must be a positive integer"),
        ([0.2], [0.2], {"n_bins": 2.5}, ValueError, r"n_bins must be a positive integer"),
        (
            [0.2],
            [0.2],
            {"return_per_source": True},
            ValueError,
            r"return_per_source=True needs source",
        ),
        (
            [0.2, 0.3],
            [0.2, 0.3],
            {"source": ["a"]},
            ValueError,
            r"y_true has 2, source has 1",
        ),
        (
            [0.2, 0.3],
            [0.2, 0.3],
            {"source": ["a", None]},
            ValueError,
            r"source is missing at position 1",
        ),
        ([0.2, 0.3], [0.2, 0.3], {"source": "ab"}, TypeError, r"got a single string"),
        ([0.2, 0.3], [0.2, 0.3], {"source": 3}, TypeError, r"source must be a list"),
    ],
)
def test_bad_input(y_true, y_pred, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        weighted_rmse(y_true, y_pred, **kwargs)


def _table2_datasets():
    """Grades in [0, 1] of four ASAG2024 datasets, scaled as ASAG2024 does."""
    pd = require_module("pandas", "report")
    files = {
        "Stita": DATA / "stita" / "stita_gradeaid.tsv",
        "CU-NLP": DATA / "cu-nlp" / "cunlp_gradeaid.tsv",
        "DigiKlausur": DATA / "digiklausur" / "digiklausur_answers.tsv",
        "SAF": DATA / "saf" / "saf_communication_networks_english_v2.tsv",
    }
    for path in files.values():
        require_file(path)
    read = {name: pd.read_csv(path, sep="\t") for name, path in files.items()}
    saf = read["SAF"]
    return {
        "Stita": read["Stita"]["score"].to_numpy(float),
        "CU-NLP": read["CU-NLP"]["score"].to_numpy(float) / 100,
        "DigiKlausur": read["DigiKlausur"]["grade"].to_numpy(float) / 2,
        # ASAG2024's loader keeps SAF answers scored at most 1 point.
        "SAF": saf.loc[saf["score"] <= 1, "score"].to_numpy(float),
    }


def test_mean_predictor_reproduces_asag2024_table2_baselines():
    table2 = {"Stita": 0.34, "CU-NLP": 0.40, "DigiKlausur": 0.45, "SAF": 0.41}
    data = _table2_datasets()
    y_true = np.concatenate(list(data.values()))
    y_pred = np.concatenate([np.full(y.shape, y.mean()) for y in data.values()])
    source = np.repeat(list(data), [y.size for y in data.values()])
    mean, per_source = weighted_rmse(y_true, y_pred, source=source, return_per_source=True)
    for name, expected in table2.items():
        assert round(per_source[name], 2) == expected, name
    assert mean == pytest.approx(np.mean(list(per_source.values())))


@pytest.mark.parametrize("dtype, low", [(np.float32, 0.6), (np.float16, 0.7)])
@pytest.mark.parametrize("cast_back", [False, True])
def test_low_precision_grades_land_in_the_range_they_denote(dtype, low, cast_back):
    # 0.7 as float32 is 0.699999988 (0.8 as float16 is 0.7998): binned at face
    # value it joined the grade below in its range and the wRMSE was
    # sqrt(0.25 / 2) = 0.354. Hand-worked: three ranges of one answer each,
    # weight 1/3 each, one error of 0.5 -> sqrt(0.25 / 3) = 0.289.
    high = round(low + 0.1, 1)
    y_true = np.array([low, high, 1.0], dtype=dtype)
    y_pred = np.array([low, high, 0.5], dtype=dtype)
    if cast_back and dtype == np.float32:  # float32 values held as float64
        y_true, y_pred = y_true.astype(np.float64), y_pred.astype(np.float64)
    expected = np.sqrt(float(y_pred[2] - y_true[2]) ** 2 / 3)
    assert weighted_rmse(y_true, y_pred) == pytest.approx(expected, rel=1e-12)
    assert weighted_rmse(list(y_true), list(y_pred)) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.2887, abs=1e-4)
