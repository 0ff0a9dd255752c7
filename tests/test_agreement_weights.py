"""sample_weight in the agreement metrics, against independent references.

References: scikit-learn's ``cohen_kappa_score(sample_weight=)`` for QWK, and
integer weights against the same data with each row repeated that many times
(numpy) for QWK, the agreement rates and the SMD.
"""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

import sklearn_fairaes as sf


def _data(seed=0, n=40):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 7, size=n).astype(float)
    pred = np.clip(y + rng.normal(0, 1.2, size=n), -1, 8)
    return y, pred


def test_weighted_qwk_equals_cohen_kappa_with_sample_weight():
    y, pred = _data()
    w = np.random.default_rng(1).uniform(0.1, 3.0, size=y.size)
    labels = np.arange(0, 7)
    rounded = np.clip(np.rint(pred), 0, 6)
    expected = cohen_kappa_score(
        y, rounded, labels=labels, weights="quadratic", sample_weight=w
    )
    assert sf.qwk(y, pred, labels=labels, sample_weight=w) == pytest.approx(
        expected, abs=1e-12
    )
    # unit weights change nothing
    assert sf.qwk(y, pred, sample_weight=np.ones(y.size)) == pytest.approx(
        sf.qwk(y, pred), abs=1e-12
    )


@pytest.mark.parametrize("rounding", ["round", None])
def test_integer_weights_equal_repeated_rows(rounding):
    y, pred = _data(2)
    w = np.random.default_rng(3).integers(0, 4, size=y.size)
    w[0] = 2
    ry, rp = np.repeat(y, w), np.repeat(pred, w)
    labels = np.arange(0, 7) if rounding else None
    assert sf.qwk(
        y, pred, labels=labels, rounding=rounding, sample_weight=w
    ) == pytest.approx(sf.qwk(ry, rp, labels=labels, rounding=rounding), abs=1e-12)
    for tolerance in (0, 1):
        assert sf.agreement_rate(
            y, pred, tolerance=tolerance, labels=labels, rounding=rounding, sample_weight=w
        ) == pytest.approx(
            sf.agreement_rate(
                ry, rp, tolerance=tolerance, labels=labels, rounding=rounding
            ),
            abs=1e-12,
        )
    for method in ("pooled", "unpooled"):
        for ddof in (0, 1):
            assert sf.standardized_mean_difference(
                y, pred, method=method, ddof=ddof, sample_weight=w
            ) == pytest.approx(
                sf.standardized_mean_difference(ry, rp, method=method, ddof=ddof),
                abs=1e-12,
            )


def test_weighted_smd_hand_worked():
    # y = [1, 2, 3], pred = [2, 2, 5], w = [1, 1, 2]
    # weighted means: y 9/4, pred 14/4, difference 5/4
    # frequency-weighted variances (ddof=1, divisor 4 - 1 = 3):
    #   y: (1.5625 + 0.0625 + 2 * 0.5625) / 3 = 2.75 / 3
    #   pred: (2.25 + 2.25 + 2 * 2.25) / 3 = 9 / 3
    # pooled SD = sqrt((2.75 / 3 + 3) / 2)
    expected = 1.25 / np.sqrt((2.75 / 3 + 3.0) / 2)
    got = sf.standardized_mean_difference([1, 2, 3], [2, 2, 5], sample_weight=[1, 1, 2])
    assert got == pytest.approx(expected, abs=1e-12)
    johnson = sf.standardized_mean_difference(
        [1, 2, 3],
        [2, 2, 5],
        method="johnson",
        population_y_true_observed_sd=2.0,
        sample_weight=[1, 1, 2],
    )
    assert johnson == pytest.approx(1.25 / 2.0, abs=1e-12)
    # agreement rate on the scores as given: only essay 2 agrees, weight 1 of 4;
    # on the scale [1, 3] the 5 is clipped to 3 and essay 3 agrees too: 3 of 4
    rate = sf.agreement_rate
    assert rate([1, 2, 3], [2, 2, 5], rounding=None, sample_weight=[1, 1, 2]) == 0.25
    assert rate([1, 2, 3], [2, 2, 5], sample_weight=[1, 1, 2]) == 0.75


@pytest.mark.parametrize(
    ("weights", "error", "match"),
    [
        ([1, -1, 1], ValueError, r"non-negative; the weight at position 1 is -1.0"),
        ([0, 0, 0], ValueError, r"sample_weight is all zeros"),
        ([1, 1], ValueError, r"sample_weight"),
        ([1, np.nan, 1], ValueError, r"sample_weight"),
    ],
)
def test_bad_sample_weight_refused(weights, error, match):
    for metric in (sf.qwk, sf.agreement_rate, sf.standardized_mean_difference):
        with pytest.raises(error, match=match):
            metric([1, 2, 3], [1, 2, 2], sample_weight=weights)
