"""Agreement metrics: against RSMTool's recorded values, scikit-learn, naive
implementations, hand-worked numbers and the paper's human-human QWK."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import require_file, require_module
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import pearsonr
from sklearn.metrics import cohen_kappa_score

from sklearn_fairaes.exceptions import UndefinedMetricWarning
from sklearn_fairaes.metrics import (
    agreement_rate,
    agreement_report,
    difference_of_standardized_means,
    mean_qwk,
    prmse,
    qwk,
    qwk_degradation,
    standardized_mean_difference,
)

REFERENCE = Path(__file__).resolve().parent / "rsmtool_reference" / "rsmtool_values.json"
ASAP7 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "asap-aes"
ASAP7 = ASAP7 / "asap_aes_prompt7.tsv"
RTOL, ATOL = 1e-10, 1e-12


def _load_cases():
    return json.loads(REFERENCE.read_text(encoding="utf-8"))["cases"]


CASES = _load_cases()


def _scale(case):
    low, high = case["scale"]
    return np.arange(low, high + 1)


def _close(ours, theirs):
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------ naive references


def kaggle_qwk(rater_a, rater_b):
    """The ASAP/Kaggle function, written out as its description says: cast both
    raters to int, rating range from both, confusion matrix, loops."""
    a = [int(x) for x in rater_a]
    b = [int(x) for x in rater_b]
    low, high = min(a + b), max(a + b)
    k = high - low + 1
    n = len(a)
    observed = [[0] * k for _ in range(k)]
    for x, y in zip(a, b):
        observed[x - low][y - low] += 1
    hist_a = [sum(row) for row in observed]
    hist_b = [sum(observed[i][j] for i in range(k)) for j in range(k)]
    num = den = 0.0
    for i in range(k):
        for j in range(k):
            d = (i - j) ** 2 / (k - 1) ** 2
            num += d * observed[i][j] / n
            den += d * hist_a[i] * hist_b[j] / n / n
    return 1.0 - num / den


def naive_mean_qwk(kappas, weights=None):
    kappas = [min(max(k, -0.999), 0.999) for k in kappas]
    weights = [1.0] * len(kappas) if weights is None else list(weights)
    z = [0.5 * np.log((1 + k) / (1 - k)) for k in kappas]
    mean_z = sum(w * v for w, v in zip(weights, z)) / sum(weights)
    return (np.exp(2 * mean_z) - 1) / (np.exp(2 * mean_z) + 1)


# --------------------------------------------------------------------------- RSMTool


def test_reference_file_records_rsmtool_version():
    provenance = json.loads(REFERENCE.read_text(encoding="utf-8"))["provenance"]
    assert provenance["packages"]["rsmtool"] == "12.0.0"
    assert len(CASES) == 8


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_qwk_matches_rsmtool(case):
    ref = case["rsmtool"]
    y_true, y_pred = case["y_true"], case["y_pred"]
    _close(qwk(y_true, y_pred, rounding=None), ref["qwk_continuous"])
    if case["scale"] is None:
        return
    _close(qwk(y_true, y_pred, labels=_scale(case)), ref["qwk_trim_round"])
    if tuple(case["scale"]) == (min(y_true), max(y_true)):
        _close(qwk(y_true, y_pred), ref["qwk_trim_round"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_smd_matches_rsmtool_for_every_method(case):
    ref, pop = case["rsmtool"], case["population"]
    y_true, y_pred = case["y_true"], case["y_pred"]
    for ddof in (0, 1):
        for method in ("pooled", "unpooled"):
            ours = standardized_mean_difference(y_true, y_pred, method=method, ddof=ddof)
            _close(ours, ref[f"smd_{method}_ddof{ddof}"])
    johnson = standardized_mean_difference(
        y_true, y_pred, method="johnson", population_y_true_observed_sd=pop["y_true_sd"]
    )
    _close(johnson, ref["smd_johnson"])
    williamson = standardized_mean_difference(
        y_true,
        y_pred,
        method="williamson",
        population_y_true_observed_sd=pop["y_true_sd"],
        population_y_pred_sd=pop["y_pred_sd"],
    )
    _close(williamson, ref["smd_williamson"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_dsm_matches_rsmtool(case):
    ref, pop = case["rsmtool"], case["population"]
    y_true, y_pred = case["y_true"], case["y_pred"]
    both = difference_of_standardized_means(
        y_true,
        y_pred,
        population_y_true_observed_mn=pop["y_true_mn"],
        population_y_true_observed_sd=pop["y_true_sd"],
        population_y_pred_mn=pop["y_pred_mn"],
        population_y_pred_sd=pop["y_pred_sd"],
    )
    _close(both, ref["dsm_population"])
    true_only = difference_of_standardized_means(
        y_true,
        y_pred,
        population_y_true_observed_mn=pop["y_true_mn"],
        population_y_true_observed_sd=pop["y_true_sd"],
    )
    _close(true_only, ref["dsm_true_population_only"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_agreement_rates_match_rsmtool(case):
    ref = case["rsmtool"]
    y_true, y_pred = case["y_true"], case["y_pred"]
    _close(
        agreement_rate(y_true, y_pred, rounding=None), ref["exact_agr_raw_percent"] / 100
    )
    _close(
        agreement_rate(y_true, y_pred, tolerance=1, rounding=None),
        ref["adj_agr_raw_percent"] / 100,
    )
    if case["scale"] is None:
        return
    labels = _scale(case)
    _close(
        agreement_rate(y_true, y_pred, labels=labels),
        ref["exact_agr_trim_round_percent"] / 100,
    )
    _close(
        agreement_rate(y_true, y_pred, tolerance=1, labels=labels),
        ref["adj_agr_trim_round_percent"] / 100,
    )


@pytest.mark.parametrize(
    "case", [c for c in CASES if c["scale"]], ids=[c["name"] for c in CASES if c["scale"]]
)
def test_report_row_matches_rsmtool_metrics_helper(case):
    raw, rounded = case["rsmtool"]["raw"], case["rsmtool"]["trim_round"]
    report = agreement_report(case["y_true"], case["y_pred"], labels=_scale(case))
    row = report.loc["y_pred"]
    assert row["n"] == raw["N"]
    _close(row["qwk"], rounded["wtkappa"])
    _close(row["exact_agreement"], rounded["exact_agr"] / 100)
    _close(row["adjacent_agreement"], rounded["adj_agr"] / 100)
    # SMD and r are computed on the predictions as given (RSMTool's "raw" row).
    _close(row["smd"], raw["SMD"])
    _close(row["pearson_r"], raw["corr"])


def test_degradation_matches_rsmtool_with_opposite_sign():
    (case,) = [c for c in CASES if "rater1" in c]
    ref = case["rsmtool"]
    r1, r2 = case["rater1"], case["rater2"]
    low, high = ref["rater_scale"]
    pred = ref["y_pred_rater_scale"]
    rounded = qwk_degradation(
        r1, pred, rater1=r1, rater2=r2, labels=np.arange(low, high + 1)
    )
    _close(rounded, -ref["wtkappa_degradation"]["raw_trim_round"])
    continuous = qwk_degradation(r1, pred, rater1=r1, rater2=r2, rounding=None)
    _close(continuous, -ref["wtkappa_degradation"]["raw"])


# --------------------------------------------------------------------------- QWK


score_points = st.integers(-3, 3).flatmap(
    lambda low: st.integers(1, 8).flatmap(
        lambda width: st.integers(2, 40).flatmap(
            lambda n: st.tuples(
                st.just(np.arange(low, low + width + 1)),
                st.lists(st.integers(low, low + width), min_size=n, max_size=n),
                st.lists(st.integers(low, low + width), min_size=n, max_size=n),
            )
        )
    )
)


def _defined(a, b):
    return not (len(set(a)) == 1 and set(a) == set(b))


@settings(max_examples=150, deadline=None)
@given(score_points)
def test_qwk_equals_sklearn_on_integer_scores(data):
    labels, a, b = data
    assume(_defined(a, b))
    expected = cohen_kappa_score(a, b, labels=labels, weights="quadratic")
    np.testing.assert_allclose(qwk(a, b, labels=labels), expected, rtol=1e-9, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(score_points)
def test_qwk_is_symmetric_and_bounded_on_integer_scores(data):
    labels, a, b = data
    assume(_defined(a, b))
    forward, backward = qwk(a, b, labels=labels), qwk(b, a, labels=labels)
    np.testing.assert_allclose(forward, backward, rtol=1e-12, atol=1e-15)
    assert -1 - 1e-12 <= forward <= 1 + 1e-12
    # On integer scores, continuous and discrete QWK agree (Haberman 2019).
    np.testing.assert_allclose(qwk(a, b, rounding=None), forward, rtol=1e-9, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-50, 50, allow_nan=False), st.floats(-50, 50, allow_nan=False)),
        min_size=2,
        max_size=30,
    )
)
def test_continuous_qwk_is_bounded(pairs):
    a, b = (np.array(v) for v in zip(*pairs))
    assume(not (np.ptp(a) == 0 and np.ptp(b) == 0 and a[0] == b[0]))
    value = qwk(a, b, rounding=None)
    assert -1 - 1e-9 <= value <= 1 + 1e-9


def test_scale_keeps_unused_score_points_unlike_sklearn_without_labels():
    y_true = [0, 1, 3, 3, 1, 0, 3]
    y_pred = [0, 1, 3, 1, 3, 0, 0]
    ours = qwk(y_true, y_pred)
    with_scale = cohen_kappa_score(y_true, y_pred, labels=[0, 1, 2, 3], weights="quadratic")
    without = cohen_kappa_score(y_true, y_pred, weights="quadratic")
    np.testing.assert_allclose(ours, with_scale, rtol=1e-12)
    assert abs(ours - without) > 0.01


def test_round_is_half_to_even_then_clipped():
    y_true = [0, 1, 2, 3, 4, 4, 0]
    y_pred = [0.5, 1.5, 2.5, 3.5, 7.2, 4.0, -3.0]
    expected_points = [0, 2, 2, 4, 4, 4, 0]  # numpy.rint, then clip to 0-4
    expected = cohen_kappa_score(
        y_true, expected_points, labels=range(5), weights="quadratic"
    )
    np.testing.assert_allclose(qwk(y_true, y_pred), expected, rtol=1e-12)
    assert agreement_rate(y_true, y_pred) == pytest.approx(5 / 7)


@pytest.mark.parametrize("seed", range(6))
def test_truncate_reproduces_the_kaggle_function(seed):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(2, 25, size=80).astype(float)
    # Out-of-range and negative predictions: Kaggle neither clips nor floors.
    y_pred = np.round(y_true + rng.normal(0, 4, size=80), 3)
    y_pred[:3] = [-0.7, 27.9, 1.2]
    np.testing.assert_allclose(
        qwk(y_true, y_pred, rounding="truncate"), kaggle_qwk(y_true, y_pred), rtol=1e-12
    )


def test_truncate_differs_from_round():
    y_true = [1, 2, 3, 4]
    y_pred = [1.1, 2.2, 2.9, 3.8]  # rounded: 1, 2, 3, 4; truncated: 1, 2, 2, 3
    assert qwk(y_true, y_pred, rounding="truncate") == pytest.approx(
        kaggle_qwk(y_true, y_pred)
    )
    assert qwk(y_true, y_pred) == pytest.approx(1.0)
    assert qwk(y_true, y_pred, rounding="truncate") < 0.9


def test_truncate_with_labels_clips_to_them():
    y_true = [0, 1, 2, 2]
    y_pred = [-1.5, 1.2, 2.7, 9.9]  # truncated: -1, 1, 2, 9 -> clipped: 0, 1, 2, 2
    assert qwk(y_true, y_pred, labels=[0, 1, 2], rounding="truncate") == pytest.approx(1.0)


def test_asap7_human_human_qwk_matches_the_paper():
    require_file(ASAP7)
    pd = require_module("pandas", "report")
    data = pd.read_csv(ASAP7, sep="\t", encoding="utf-8-sig")
    r1, r2 = data["rater1_domain1"], data["rater2_domain1"]
    for rounding in ("round", "truncate", None):
        assert qwk(r1, r2, rounding=rounding) == pytest.approx(0.72148, abs=5e-6)
    np.testing.assert_allclose(
        qwk(r1, r2), kaggle_qwk(r1.to_numpy(), r2.to_numpy()), rtol=1e-12
    )


@pytest.mark.parametrize(
    ("y_true", "y_pred", "kwargs"),
    [
        ([2, 2, 2], [2.2, 1.9, 2.4], {}),
        ([2, 2, 2], [1, 3, 3], {}),  # a one-point scale clips every prediction to it
        ([3, 3], [3, 3], {"labels": [1, 2, 3]}),
        ([0.5, 0.5], [0.5, 0.5], {"rounding": None}),
    ],
)
def test_undefined_qwk_warns_and_returns_replacement(y_true, y_pred, kwargs):
    with pytest.warns(UndefinedMetricWarning, match="QWK is undefined"):
        assert np.isnan(qwk(y_true, y_pred, **kwargs))
    with pytest.warns(UndefinedMetricWarning, match="replace_undefined_by=0.0"):
        assert qwk(y_true, y_pred, replace_undefined_by=0.0, **kwargs) == 0.0


def test_constant_but_different_scores_give_zero_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert qwk([1, 1, 1], [2, 2, 2], labels=[1, 2]) == 0.0
    assert (
        cohen_kappa_score([1, 1, 1], [2, 2, 2], labels=[1, 2], weights="quadratic") == 0.0
    )


def test_qwk_accepts_pandas_and_column_vectors():
    pd = require_module("pandas", "report")
    a, b = [1, 2, 3, 4, 2], [1, 3, 3, 4, 2]
    expected = qwk(a, b)
    assert qwk(pd.Series(a, index=list("abcde")), pd.Series(b)) == expected
    assert qwk(np.array(a)[:, None], np.array(b)[:, None]) == expected
    assert isinstance(expected, float)


@pytest.mark.parametrize(
    ("y_true", "y_pred", "kwargs", "exc", "match"),
    [
        ([1, 2, 3], [1, 2], {}, ValueError, r"y_true has 3, y_pred has 2"),
        ([1, np.nan], [1, 2], {}, ValueError, r"y_true is NaN at position 1"),
        ([1, 2], [np.inf, 2], {}, ValueError, r"y_pred is infinite at position 0"),
        (["a", "b"], [1, 2], {}, TypeError, r"y_true must hold numbers"),
        ([], [], {}, ValueError, r"y_true has 0 sample\(s\); at least 2"),
        ([1], [1], {}, ValueError, r"y_true has 1 sample\(s\); at least 2"),
        (
            [1, 2.5],
            [1, 2],
            {},
            ValueError,
            r"y_true holds non-integer scores \(2.5 at position 1\)",
        ),
        (
            [1, 7],
            [1, 2],
            {"labels": [1, 2, 3]},
            ValueError,
            r"y_true has the score 7 at position 1",
        ),
        (
            [0, 4],
            [1.2, 4],
            {"labels": [0, 2, 4]},
            ValueError,
            r"y_pred \(after rounding and clipping\) has the score 1 at position 0",
        ),
        (
            [1, 2],
            [1, 2],
            {"labels": [1, 2], "rounding": None},
            ValueError,
            r"labels is only used",
        ),
        ([1, 2], [1, 2], {"labels": [1, 1.5, 2]}, ValueError, r"labels holds non-integer"),
        ([1, 2], [1, 2], {"rounding": "floor"}, ValueError, r"rounding must be one of"),
        (
            [1, 2],
            [1, 2],
            {"replace_undefined_by": 2},
            ValueError,
            r"replace_undefined_by must",
        ),
        ("12", [1, 2], {}, TypeError, r"y_true must be an array of numbers"),
    ],
)
def test_qwk_bad_input(y_true, y_pred, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        qwk(y_true, y_pred, **kwargs)


# --------------------------------------------------------------------------- mean QWK


@pytest.mark.parametrize(
    ("kappas", "weights"),
    [
        ([0.7, 0.8, 0.65], None),
        ([0.7, 0.8, 0.65], [1, 0.5, 0.5]),
        ([1.0, -1.0, 0.2], [2, 1, 3]),
        ([0.5], None),
    ],
)
def test_mean_qwk_matches_naive_fisher_z(kappas, weights):
    np.testing.assert_allclose(
        mean_qwk(kappas, weights), naive_mean_qwk(kappas, weights), rtol=1e-12
    )


def test_mean_qwk_clips_perfect_kappa():
    assert mean_qwk([1.0]) == pytest.approx(0.999)
    assert mean_qwk([1.0, 1.0]) == pytest.approx(0.999)


@pytest.mark.parametrize(
    ("kappas", "weights", "match"),
    [
        ([0.5, 1.2], None, r"kappas must lie in \[-1, 1\]; the value at position 1 is 1.2"),
        ([0.5, np.nan], None, r"kappas is NaN at position 1"),
        ([0.5, 0.6], [1, -1], r"weights must be non-negative; the value at position 1"),
        ([0.5, 0.6], [0, 0], r"weights are all zero"),
        ([0.5, 0.6], [1], r"weights has 1 samples but 2 were expected"),
        ([], None, r"kappas has 0 sample\(s\)"),
    ],
)
def test_mean_qwk_bad_input(kappas, weights, match):
    with pytest.raises(ValueError, match=match):
        mean_qwk(kappas, weights)


# --------------------------------------------------------------------------- SMD and DSM


def test_smd_methods_by_hand():
    y = np.array([1.0, 2, 3, 4, 5])
    p = np.array([1.5, 2.0, 3.5, 4.0, 6.0])
    diff = p.mean() - y.mean()
    pooled = diff / np.sqrt((y.var(ddof=1) + p.var(ddof=1)) / 2)
    assert standardized_mean_difference(y, p) == pytest.approx(pooled, rel=1e-12)
    unpooled = diff / y.std(ddof=1)
    assert standardized_mean_difference(y, p, method="unpooled") == pytest.approx(unpooled)
    assert standardized_mean_difference(
        y, p, method="johnson", population_y_true_observed_sd=2.0
    ) == pytest.approx(diff / 2.0)
    assert standardized_mean_difference(
        y,
        p,
        method="williamson",
        population_y_true_observed_sd=2.0,
        population_y_pred_sd=1.0,
    ) == pytest.approx(diff / np.sqrt(2.5))


def test_paper_smd_is_absolute_pooled_with_ddof0():
    rng = np.random.default_rng(7)
    y = rng.integers(2, 25, size=300).astype(float)
    p = y + rng.normal(-0.4, 3, size=300)
    paper = abs(p.mean() - y.mean()) / np.sqrt((np.var(p) + np.var(y)) / 2)
    ours = standardized_mean_difference(y, p, method="pooled", ddof=0)
    assert ours < 0
    assert abs(ours) == pytest.approx(paper, rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-100, 100), st.floats(-100, 100)), min_size=3, max_size=30
    ),
    st.sampled_from([0, 1]),
)
def test_pooled_smd_flips_sign_when_arguments_swap(pairs, ddof):
    a, b = (np.array(v) for v in zip(*pairs))
    assume(np.ptp(a) > 1e-3 or np.ptp(b) > 1e-3)
    forward = standardized_mean_difference(a, b, ddof=ddof)
    backward = standardized_mean_difference(b, a, ddof=ddof)
    np.testing.assert_allclose(forward, -backward, rtol=1e-9, atol=1e-12)
    williamson = {"population_y_true_observed_sd": 2.0, "population_y_pred_sd": 3.0}
    swapped = {"population_y_true_observed_sd": 3.0, "population_y_pred_sd": 2.0}
    np.testing.assert_allclose(
        standardized_mean_difference(a, b, method="williamson", **williamson),
        -standardized_mean_difference(b, a, method="williamson", **swapped),
        rtol=1e-9,
        atol=1e-12,
    )


@pytest.mark.parametrize(
    ("y_true", "y_pred", "kwargs", "match"),
    [
        ([2, 2, 2], [1, 2, 3], {"method": "unpooled"}, r"unpooled\) is undefined: y_true"),
        ([2, 2, 2], [3, 3, 3], {}, r"pooled\) is undefined: y_true and y_pred are both"),
        (
            [1, 2, 3],
            [1, 2, 4],
            {"method": "johnson", "population_y_true_observed_sd": 0.0},
            r"johnson\) is undefined",
        ),
        (
            [1, 2, 3],
            [1, 2, 4],
            {
                "method": "williamson",
                "population_y_true_observed_sd": 0,
                "population_y_pred_sd": 0,
            },
            r"williamson\) is undefined",
        ),
    ],
)
def test_undefined_smd_warns_and_returns_nan(y_true, y_pred, kwargs, match):
    with pytest.warns(UndefinedMetricWarning, match=match):
        assert np.isnan(standardized_mean_difference(y_true, y_pred, **kwargs))


def test_pooled_smd_with_one_constant_vector_is_defined():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = standardized_mean_difference([2, 2, 2], [1, 2, 3])
    assert value == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "cohen"}, r"method must be one of 'johnson', 'pooled', 'unpooled', "),
        ({"method": "johnson"}, r"method='johnson' needs population_y_true_observed_sd"),
        (
            {"method": "williamson", "population_y_true_observed_sd": 1.0},
            r"method='williamson' needs population_y_pred_sd",
        ),
        (
            {"method": "pooled", "population_y_pred_sd": 1.0},
            r"population_y_pred_sd is not used by method='pooled'",
        ),
        (
            {"method": "johnson", "population_y_true_observed_sd": -1.0},
            r"population_y_true_observed_sd must be a finite number >= 0, got -1.0",
        ),
        ({"ddof": 3}, r"ddof=3 needs more than 3 essays"),
        ({"ddof": -1}, r"ddof must be a non-negative integer"),
    ],
)
def test_smd_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        standardized_mean_difference([1, 2, 3], [1, 2, 4], **kwargs)


def test_smd_bad_scores():
    with pytest.raises(ValueError, match=r"y_true has 1 sample\(s\); at least 2"):
        standardized_mean_difference([1], [2])
    with pytest.raises(ValueError, match=r"y_pred is NaN at position 2"):
        standardized_mean_difference([1, 2, 3], [1, 2, np.nan])


def test_dsm_by_hand():
    y, p = np.array([3.0, 4, 5, 6]), np.array([4.0, 4, 6, 5])
    expected = np.mean((p - 3.5) / 1.5 - (y - 3.0) / 1.0)
    ours = difference_of_standardized_means(
        y,
        p,
        population_y_true_observed_mn=3.0,
        population_y_true_observed_sd=1.0,
        population_y_pred_mn=3.5,
        population_y_pred_sd=1.5,
    )
    assert ours == pytest.approx(expected, rel=1e-12)


def test_dsm_without_population_values_is_zero_and_warns():
    with pytest.warns(UndefinedMetricWarning, match="0 by construction"):
        value = difference_of_standardized_means([1, 2, 3, 5], [2, 2, 4, 5])
    assert value == pytest.approx(0.0, abs=1e-12)


def test_dsm_zero_sd_warns():
    with pytest.warns(UndefinedMetricWarning, match="DSM is undefined"):
        value = difference_of_standardized_means(
            [1, 2, 3],
            [2, 2, 2],
            population_y_true_observed_mn=2.0,
            population_y_true_observed_sd=1.0,
        )
    assert np.isnan(value)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"population_y_true_observed_mn": 1.0},
            r"pass both population_y_true_observed_mn and population_y_true_observed_sd",
        ),
        ({"population_y_pred_sd": 1.0}, r"pass both population_y_pred_mn and"),
        ({"population_y_pred_mn": "1", "population_y_pred_sd": 1.0}, r"must be a number"),
    ],
)
def test_dsm_bad_arguments(kwargs, match):
    exc = TypeError if "number" in match else ValueError
    with pytest.raises(exc, match=match):
        difference_of_standardized_means([1, 2, 3], [1, 2, 4], **kwargs)


# --------------------------------------------------------------------------- agreement rate


def test_agreement_rate_by_hand():
    y_true = [1, 2, 3, 4, 5]
    y_pred = [1.4, 2.6, 1.0, 4.0, 7.0]  # rounded and clipped: 1, 3, 1, 4, 5
    assert agreement_rate(y_true, y_pred) == pytest.approx(3 / 5)
    assert agreement_rate(y_true, y_pred, tolerance=1) == pytest.approx(4 / 5)
    assert agreement_rate(y_true, y_pred, rounding=None) == pytest.approx(1 / 5)
    assert agreement_rate(y_true, y_pred, rounding=None, tolerance=0.5) == pytest.approx(
        2 / 5
    )


@pytest.mark.parametrize(
    ("tolerance", "exc", "match"),
    [(-1, ValueError, r"tolerance must be >= 0"), ("1", TypeError, r"tolerance must be a")],
)
def test_agreement_rate_bad_tolerance(tolerance, exc, match):
    with pytest.raises(exc, match=match):
        agreement_rate([1, 2], [1, 2], tolerance=tolerance)


# --------------------------------------------------------------------------- degradation


def test_degradation_is_human_human_minus_machine_human():
    rng = np.random.default_rng(3)
    r1 = rng.integers(0, 7, size=60)
    r2 = np.clip(r1 + rng.integers(-1, 2, size=60), 0, 6)
    resolved = r1 + r2
    pred = resolved + rng.normal(0, 1.5, size=60)
    human_human = cohen_kappa_score(r1, r2, labels=range(7), weights="quadratic")
    low, high = resolved.min(), resolved.max()
    machine = cohen_kappa_score(
        resolved,
        np.clip(np.rint(pred), low, high),
        labels=range(low, high + 1),
        weights="quadratic",
    )
    ours = qwk_degradation(resolved, pred, rater1=r1, rater2=r2, rater_labels=range(7))
    assert ours == pytest.approx(human_human - machine, rel=1e-12)
    # Without rater_labels the scale spans both raters' scores.
    assert qwk_degradation(resolved, pred, rater1=r1, rater2=r2) == pytest.approx(
        cohen_kappa_score(
            r1,
            r2,
            labels=range(min(r1.min(), r2.min()), max(r1.max(), r2.max()) + 1),
            weights="quadratic",
        )
        - machine,
        rel=1e-12,
    )


def test_degradation_does_not_clip_the_second_rater():
    r1 = [1, 2, 3, 3]
    r2 = [1, 2, 3, 5]  # rater 2 uses a score rater 1 never gave
    y_true, y_pred = [2, 4, 6, 8], [2, 4, 6, 8]
    expected = cohen_kappa_score(r1, r2, labels=range(1, 6), weights="quadratic") - 1.0
    assert qwk_degradation(y_true, y_pred, rater1=r1, rater2=r2) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("rater1", "rater2", "match"),
    [
        ([1, 2, 3], [1, 2, 3, 4], r"rater1 has 3, rater2 has 4"),
        ([1, 2, 3], [1, 2, 3], r"y_true has 4, rater1 has 3"),
        (
            [1, 2, 3, 4],
            [1, 2, 3.5, 4],
            r"rater2 holds non-integer scores \(3.5 at position 2\)",
        ),
    ],
)
def test_degradation_bad_input(rater1, rater2, match):
    with pytest.raises(ValueError, match=match):
        qwk_degradation([1, 2, 3, 4], [1, 2, 3, 4], rater1=rater1, rater2=rater2)


# --------------------------------------------------------------------------- report


def _report_data():
    rng = np.random.default_rng(11)
    r1 = rng.integers(0, 7, size=200)
    r2 = np.clip(r1 + rng.integers(-1, 2, size=200), 0, 6)
    y = r1 + r2
    models = {
        "good": np.round(y + rng.normal(0, 1.0, size=200), 3),
        "biased": np.round(y + rng.normal(1.5, 1.0, size=200), 3),
        "noisy": np.round(y + rng.normal(0, 6.0, size=200), 3),
    }
    return y, models, r1, r2


def test_report_rows_equal_the_single_metrics():
    require_module("pandas", "report")
    y, models, r1, r2 = _report_data()
    report = agreement_report(y, models, rater1=r1, rater2=r2)
    assert list(report.index) == ["good", "biased", "noisy"]
    assert report.index.name == "model"
    assert list(report.columns) == [
        "n", "qwk", "human_human_qwk", "degradation", "smd", "exact_agreement",
        "adjacent_agreement", "pearson_r", "qwk_ok", "degradation_ok", "smd_ok",
        "acceptable",
    ]  # fmt: skip
    assert report["n"].dtype == np.int64 and report["acceptable"].dtype == bool
    for name, pred in models.items():
        row = report.loc[name]
        assert row["qwk"] == qwk(y, pred)
        assert row["human_human_qwk"] == qwk(r1, r2)
        assert row["degradation"] == pytest.approx(
            qwk_degradation(y, pred, rater1=r1, rater2=r2)
        )
        assert row["smd"] == standardized_mean_difference(y, pred)
        assert row["exact_agreement"] == agreement_rate(y, pred)
        assert row["adjacent_agreement"] == agreement_rate(y, pred, tolerance=1)
        assert row["pearson_r"] == pytest.approx(pearsonr(y, pred)[0], rel=1e-12)
        assert row["qwk_ok"] == (row["qwk"] >= 0.70)
        assert row["degradation_ok"] == (row["degradation"] <= 0.10)
        assert row["smd_ok"] == (abs(row["smd"]) <= 0.15)
        assert row["acceptable"] == (
            row["qwk_ok"] and row["degradation_ok"] and row["smd_ok"]
        )
    assert report.loc["good", "acceptable"]
    assert not report.loc["biased", "smd_ok"]
    assert not report.loc["noisy", "qwk_ok"]


def test_report_without_raters_single_vector_and_dataframe():
    pd = require_module("pandas", "report")
    y, models, _, _ = _report_data()
    single = agreement_report(y, models["good"])
    assert list(single.index) == ["y_pred"]
    assert "degradation" not in single.columns and "degradation_ok" not in single.columns
    frame = agreement_report(y, pd.DataFrame(models), smd_method="unpooled", smd_ddof=0)
    assert list(frame.index) == list(models)
    assert frame.loc["good", "smd"] == standardized_mean_difference(
        y, models["good"], method="unpooled", ddof=0
    )


def test_report_truncate_reproduces_the_kaggle_function():
    require_module("pandas", "report")
    y, models, _, _ = _report_data()
    report = agreement_report(y, models, rounding="truncate")
    for name, pred in models.items():
        assert report.loc[name, "qwk"] == pytest.approx(kaggle_qwk(y, pred), rel=1e-12)


def test_report_thresholds_can_be_overridden():
    require_module("pandas", "report")
    y, models, _, _ = _report_data()
    strict = agreement_report(y, models, thresholds={"qwk": 0.999})
    assert not strict["qwk_ok"].any()
    lenient = agreement_report(y, models, thresholds={"abs_smd": 10})
    assert lenient["smd_ok"].all()


def test_report_constant_predictions_warn_and_fail_the_flags():
    require_module("pandas", "report")
    y = [1, 2, 3, 4]
    with pytest.warns(
        UndefinedMetricWarning, match="Pearson's r is undefined for model 'flat'"
    ):
        report = agreement_report(y, {"flat": [2.5, 2.5, 2.5, 2.5]})
    assert np.isnan(report.loc["flat", "pearson_r"])
    assert not report.loc["flat", "acceptable"]


@pytest.mark.parametrize(
    ("y_pred", "kwargs", "exc", "match"),
    [
        (
            {"a": [1, 2, 3, 4], "b": [1, 2, 3]},
            {},
            ValueError,
            r"y_true has 4, y_pred\['b'\] has 3",
        ),
        ({"a": [1, 2, 3, np.nan]}, {}, ValueError, r"y_pred\['a'\] is NaN at position 3"),
        ({}, {}, ValueError, r"y_pred holds no models"),
        ([1, 2, 3, 4], {"rater1": [1, 2, 3, 4]}, ValueError, r"only rater1 was given"),
        ([1, 2, 3, 4], {"rater2": [1, 2, 3, 4]}, ValueError, r"only rater2 was given"),
        (
            [1, 2, 3, 4],
            {"thresholds": {"kappa": 0.7}},
            ValueError,
            r"unknown threshold\(s\)",
        ),
        (
            [1, 2, 3, 4],
            {"thresholds": {"qwk": "high"}},
            TypeError,
            r"threshold 'qwk' must be",
        ),
        ([1, 2, 3, 4], {"rounding": "ceil"}, ValueError, r"rounding must be one of"),
        ([1, 2, 3, 4], {"smd_method": "x"}, ValueError, r"method must be one of"),
    ],
)
def test_report_bad_input(y_pred, kwargs, exc, match):
    require_module("pandas", "report")
    with pytest.raises(exc, match=match):
        agreement_report([1, 2, 3, 4], y_pred, **kwargs)


# --------------------------------------------------------------------------- declared scale


def _rsmtool_trim_round(pred, low, high):
    # RSMTool's raw_trim_round, written out independently: clip to the scale
    # +- 0.4998, then round half to even
    return np.rint(np.clip(np.asarray(pred, dtype=float), low - 0.4998, high + 0.4998))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 3).flatmap(
        lambda low: st.tuples(
            st.just(low),
            st.integers(low + 1, low + 8),
            st.integers(2, 30),
            st.integers(0, 10_000),
        )
    )
)
def test_score_range_equals_sklearn_with_the_scale_as_labels(spec):
    low, high, n, seed = spec
    rng = np.random.default_rng(seed)
    y = rng.integers(low, high + 1, n)
    # continuous predictions reaching well outside the scale on both sides
    pred = rng.uniform(low - 3, high + 3, n)
    expected_pred = _rsmtool_trim_round(pred, low, high)
    assume(np.ptp(y) > 0 or np.ptp(expected_pred) > 0 or y[0] != expected_pred[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # sklearn's 0/0 on one point
        expected = cohen_kappa_score(
            y, expected_pred, labels=np.arange(low, high + 1), weights="quadratic"
        )
    assume(np.isfinite(expected))
    got = qwk(y, pred, score_range=(low, high))
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
    # on rounded scores the trimming changes nothing: score_range == labels
    np.testing.assert_allclose(
        got, qwk(y, pred, labels=np.arange(low, high + 1)), rtol=RTOL, atol=ATOL
    )


def test_declared_scale_is_not_clipped_to_the_observed_range():
    # the example: humans used 2-4 of a 0-6 scale, the model says 0 and 6
    y = np.array([2, 3, 4, 3, 2, 4])
    pred = np.array([0, 3, 6, 3, 0, 6])
    assert qwk(y, pred) == 1.0  # clipped to the observed 2-4: looks perfect
    declared = qwk(y, pred, score_range=(0, 6))
    expected = cohen_kappa_score(y, pred, labels=np.arange(7), weights="quadratic")
    assert declared == pytest.approx(expected, abs=1e-12)
    assert declared < 0.8


def test_score_range_with_continuous_qwk_trims_first():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    pred = np.array([-2.0, 1.2, 2.2, 9.0])
    trimmed = np.array([-0.4998, 1.2, 2.2, 3.4998])
    # Haberman's formula with population moments, written out
    cov = np.mean((y - y.mean()) * (trimmed - trimmed.mean()))
    expected = 2 * cov / (y.var() + trimmed.var() + (y.mean() - trimmed.mean()) ** 2)
    got = qwk(y, pred, score_range=(0, 3), rounding=None)
    assert got == pytest.approx(expected, abs=1e-12)
    assert got != pytest.approx(qwk(y, pred, rounding=None), abs=1e-3)


def test_agreement_rate_with_score_range_trims_and_rounds():
    y = [0, 1, 2, 3]
    pred = [-3.0, 1.6, 2.4, 7.0]  # -> 0, 2, 2, 3 on the 0-3 scale
    assert agreement_rate(y, pred, score_range=(0, 3)) == 0.75
    assert agreement_rate(y, pred, tolerance=1, score_range=(0, 3)) == 1.0
    # on a 0-5 scale 7.0 is trimmed to 5.4998 and rounds to 5, two points from 3
    assert agreement_rate(y, pred, tolerance=1, score_range=(0, 5)) == 0.75


def test_report_with_score_range_counts_and_trims_like_rsmtool():
    y = np.array([1, 2, 3, 4, 2, 3, 1, 4])
    pred = {
        "inside": np.array([1.2, 2.1, 3.4, 3.8, 2.2, 2.6, 1.0, 4.0]),
        "outside": np.array([-0.5, 2.1, 3.4, 6.0, 2.2, 2.6, 0.9, 4.49]),
    }
    report = agreement_report(y, pred, score_range=(1, 4))
    assert list(report.columns[:3]) == ["n", "n_outside_scale", "qwk"]
    # -0.5, 6.0, 0.9 and 4.49 lie outside [1, 4] before trimming
    assert report.loc["inside", "n_outside_scale"] == 0
    assert report.loc["outside", "n_outside_scale"] == 4
    for name, p in pred.items():
        trimmed = np.clip(p, 1 - 0.4998, 4 + 0.4998)
        rounded = np.rint(trimmed)
        row = report.loc[name]
        assert row["qwk"] == pytest.approx(
            cohen_kappa_score(y, rounded, labels=np.arange(1, 5), weights="quadratic"),
            abs=1e-12,
        )
        assert row["exact_agreement"] == pytest.approx(np.mean(rounded == y))
        assert row["adjacent_agreement"] == pytest.approx(np.mean(abs(rounded - y) <= 1))
        # SMD and Pearson's r on RSMTool's raw_trim scores
        sd = np.sqrt((y.var(ddof=1) + trimmed.var(ddof=1)) / 2)
        assert row["smd"] == pytest.approx((trimmed.mean() - y.mean()) / sd, abs=1e-12)
        assert row["pearson_r"] == pytest.approx(pearsonr(y, trimmed)[0], abs=1e-12)
    # without score_range the columns are as before
    assert "n_outside_scale" not in agreement_report(y, pred).columns


def test_degradation_with_score_range_uses_the_declared_scale():
    r1, r2 = [1, 2, 3, 2, 1, 3], [1, 3, 3, 2, 2, 3]
    resolved = [2, 5, 6, 4, 3, 6]
    pred = [0, 5, 6, 4, 3, 9]
    human_human = qwk(r1, r2, labels=np.arange(1, 4))
    expected = human_human - cohen_kappa_score(
        resolved, np.clip(pred, 0, 6), labels=np.arange(0, 7), weights="quadratic"
    )
    got = qwk_degradation(resolved, pred, rater1=r1, rater2=r2, score_range=(0, 6))
    assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (
            {"score_range": (2, 4)},
            ValueError,
            r"y_true has the score 1 at position 0, outside score_range=\(2, 4\) "
            r"\(1 such score\(s\)\)",
        ),
        (
            {"score_range": (0, 4), "labels": [0, 1, 2, 3, 4]},
            ValueError,
            r"pass labels or score_range, not both",
        ),
        ({"score_range": (4, 0)}, ValueError, r"low < high, got \(4, 0\)"),
        ({"score_range": (0, 2.5)}, ValueError, r"two finite integer score points"),
        ({"score_range": "0,6"}, TypeError, r"pair \(low, high\) of integer score points"),
    ],
)
def test_score_range_bad_input(kwargs, exc, match):
    for func in (qwk, agreement_rate):
        with pytest.raises(exc, match=match):
            func([1, 2, 3], [1, 2, 3], **kwargs)
    with pytest.raises(exc, match=match):
        agreement_report([1, 2, 3], {"m": [1, 2, 3]}, **kwargs)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_unpooled_smd_is_rsmtools_default(case):
    # RSMTool's standardized_mean_difference without a method (rsmeval's default)
    ours = standardized_mean_difference(case["y_true"], case["y_pred"], method="unpooled")
    _close(ours, case["rsmtool"]["smd_default"])


def test_prmse_matches_rsmtool():
    (case,) = [c for c in CASES if "rater1" in c]
    ref = case["rsmtool"]
    ratings = np.column_stack([case["rater1"], case["rater2"]])
    y_pred = np.asarray(case["y_pred"])
    _close(prmse(2 * ratings, y_pred), ref["prmse_resolved"])
    _close(prmse(ratings, y_pred / 2), ref["prmse_rater_scale"])
    missing = ratings.copy()
    missing[::5, 1] = np.nan
    _close(prmse(missing, y_pred / 2), ref["prmse_missing"])
    # the rater error variance given instead of estimated gives the same value
    _close(
        prmse(ratings, y_pred / 2, rater_error_variance=ref["variance_of_errors"]),
        ref["prmse_rater_scale"],
    )


def test_prmse_of_two_full_raters_by_hand():
    # two ratings per essay: V_e = mean((r1 - r2) ** 2) / 2, the true-score variance
    # is the variance of the rating means less V_e / 2, MSE_true the mean squared
    # error to the rating mean less V_e / 2 (Loukina et al. 2020, eq. 3-6)
    r1 = np.array([1.0, 2, 3, 4, 5, 2, 3, 1])
    r2 = np.array([2.0, 2, 4, 4, 4, 3, 2, 1])
    pred = np.array([2.0, 2.5, 3.0, 3.6, 4.0, 2.8, 3.1, 1.9])
    n = len(r1)
    v_e = np.mean((r1 - r2) ** 2) / 2
    h = (r1 + r2) / 2
    v_true = (2 * np.sum((h - h.mean()) ** 2) - (n - 1) * v_e) / (2 * n - 2)
    mse = (2 * np.sum((h - pred) ** 2) - n * v_e) / (2 * n)
    assert prmse(np.column_stack([r1, r2]), pred) == pytest.approx(1 - mse / v_true)


def test_prmse_weights_are_repeated_essays():
    rng = np.random.default_rng(3)
    ratings = rng.integers(1, 6, size=(30, 2)).astype(float)
    ratings[::7, 1] = np.nan
    pred = ratings[:, 0] + rng.normal(0, 0.5, 30)
    w = rng.integers(0, 4, 30)
    expected = prmse(np.repeat(ratings, w, axis=0), np.repeat(pred, w))
    assert prmse(ratings, pred, sample_weight=w) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("y_true", "y_pred", "kwargs", "match"),
    [
        ([1.0, 2, 3], [1.0, 2, 3], {}, r"rater matrix of shape \(n_samples, n_raters\)"),
        ([[1.0], [2], [3]], [1.0, 2, 3], {}, "give at least some essays two ratings"),
        (
            [[1.0, 2], [np.nan, np.nan], [3, 3]],
            [1.0, 2, 3],
            {},
            "no rating at all in row 1",
        ),
        ([[1.0, 2], [2, 2]], [1.0, 2, 3], {}, "y_true has 2 rows but y_pred 3 scores"),
        ([[1.0, 2], [2, 2]], [1.0, 2], {"rater_error_variance": -1}, "finite number >= 0"),
    ],
)
def test_prmse_bad_input(y_true, y_pred, kwargs, match):
    with pytest.raises(ValueError, match=match):
        prmse(y_true, y_pred, **kwargs)
