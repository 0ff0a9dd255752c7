"""The essay-level bootstrap of pair statistics (issue 33, item 3).

Each check compares with a computation made another way: the resampled
essays written out row by row and counted by brute force, the Hoeffding
variance of a U-statistic, a simulation with a known population value.
"""

import math

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from scipy.stats import binom

from sklearn_fairaes.metrics import (
    essay_consistency,
    lipschitz_fraction,
    qwk,
    standardized_mean_difference,
)
from sklearn_fairaes.metrics._bootstrap import (
    bootstrap_interval,
    paired_difference,
    replicate_weights,
)
from sklearn_fairaes.metrics._pairs._bootstrap_pairs import (
    LipschitzCondition,
    replicate_lipschitz_fractions,
    replicate_pair_totals,
)
from sklearn_fairaes.metrics._pairs._engine import PairwiseEngine


def _minmax(v, lo, hi):
    return (v - lo) / (hi - lo)


def _brute_force(X, y, w, d_range, o_range, L=1.0, groups=None, pairs="all"):
    """The fraction over the resampled set written out essay copy by copy."""
    idx = np.repeat(np.arange(len(y)), w.astype(int))
    count = total = 0
    for a in range(len(idx)):
        for b in range(a + 1, len(idx)):
            i, j = idx[a], idx[b]
            if i == j:
                continue  # two copies of one essay are not a pair of two essays
            if groups is not None:
                same = groups[i] == groups[j]
                if (pairs == "within") != same:
                    continue
            d = pdist(X[[i, j]], "cosine")[0]
            o = abs(y[i] - y[j])
            total += 1
            count += _minmax(o, *o_range) <= L * _minmax(d, *d_range)
    return count / total


@pytest.mark.parametrize("groups_pairs", [None, "within", "between"])
def test_replicate_counts_equal_brute_force_on_resampled_rows(groups_pairs):
    rng = np.random.default_rng(0)
    n = 13
    X = rng.normal(size=(n, 4))
    y = rng.integers(0, 5, size=n).astype(float)
    groups = rng.integers(0, 2, size=n) if groups_pairs else None
    d = pdist(X, "cosine")
    o = pdist(y[:, None])
    d_range, o_range = (d.min(), d.max()), (o.min(), o.max())
    engine = PairwiseEngine(X, block_size=4)  # several blocks, diagonal ones too
    if groups_pairs:
        engine = engine.filtered(groups, groups_pairs)
    w = replicate_weights(n, 6, random_state=1)
    assert (w > 1).any()  # duplicated rows are exercised
    conds = [
        LipschitzCondition(
            y,
            (d_range[0], d_range[1] - d_range[0]),
            (o_range[0], o_range[1] - o_range[0]),
            1.0,
        ),
        LipschitzCondition(
            y,
            (d_range[0], d_range[1] - d_range[0]),
            (o_range[0], o_range[1] - o_range[0]),
            1.7,
        ),
    ]
    got = replicate_lipschitz_fractions(engine, w, conds)
    for b in range(w.shape[0]):
        for c, L in enumerate((1.0, 1.7)):
            want = _brute_force(
                X, y, w[b], d_range, o_range, L, groups, groups_pairs or "all"
            )
            assert got[c, b] == pytest.approx(want, abs=1e-12)


def test_pair_totals_equal_counted_pairs():
    w = replicate_weights(9, 5, random_state=3)
    groups = np.array([0, 0, 1, 1, 1, 2, 0, 2, 1])
    for pairs in ("all", "within", "between"):
        want = []
        for row in w:
            idx = np.repeat(np.arange(9), row.astype(int))
            k = 0
            for a in range(len(idx)):
                for b in range(a + 1, len(idx)):
                    i, j = idx[a], idx[b]
                    if i != j and (
                        pairs == "all" or (groups[i] == groups[j]) == (pairs == "within")
                    ):
                        k += 1
            want.append(k)
        assert replicate_pair_totals(w, groups, pairs).tolist() == want


def test_unit_weights_give_the_exact_count_and_precomputed_form_agrees():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 6))
    y = rng.integers(1, 7, size=40).astype(float)
    exact = lipschitz_fraction(X, y, return_counts=True)
    d_lo, d_hi = exact.distance_range
    o_lo, o_hi = exact.outcome_range
    cond = LipschitzCondition(y, (d_lo, d_hi - d_lo), (o_lo, o_hi - o_lo), 1.0)
    ones = np.ones((1, 40))
    assert (
        replicate_lipschitz_fractions(PairwiseEngine(X), ones, [cond])[0, 0]
        == exact.fraction
    )
    condensed = PairwiseEngine(pdist(X, "cosine"), metric="precomputed", block_size=16)
    assert replicate_lipschitz_fractions(condensed, ones, [cond])[0, 0] == pytest.approx(
        exact.fraction, abs=1e-12
    )


def test_default_output_is_unchanged_and_bootstrap_adds_keys():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 5))
    y = rng.integers(1, 5, size=30)
    plain = lipschitz_fraction(X, y, return_counts=True)
    boot = lipschitz_fraction(X, y, return_counts=True, n_bootstrap=50, random_state=0)
    assert "replicates" not in plain and plain.ci_low == plain.fraction
    assert boot.fraction == plain.fraction and boot.replicates.shape == (50,)
    assert boot.ci_low <= boot.fraction <= boot.ci_high
    again = lipschitz_fraction(X, y, return_counts=True, n_bootstrap=50, random_state=0)
    np.testing.assert_array_equal(again.replicates, boot.replicates)
    assert lipschitz_fraction(X, y, n_bootstrap=50) == plain.fraction
    with pytest.raises(ValueError, match="max_pairs"):
        lipschitz_fraction(X, y, n_bootstrap=5, max_pairs=10, return_counts=True)


def _kernel_fraction(X, y):
    """The raw Lipschitz fraction (normalize=None) of a sample, and its h1 terms."""
    d = np.linalg.norm(X[:, None] - X[None], axis=-1)
    o = np.abs(y[:, None] - y[None])
    h = (o <= d).astype(float)
    np.fill_diagonal(h, np.nan)
    return h


def test_bootstrap_se_matches_hoeffding_u_statistic_se():
    # A U-statistic's variance is 4 var(h1) / n to first order, h1(x) = E[h(x, X')]
    rng = np.random.default_rng(5)
    n = 400
    X = rng.normal(size=(n, 1))
    y = X[:, 0] + rng.normal(scale=0.7, size=n)
    h = _kernel_fraction(X, y)
    h1 = np.nanmean(h, axis=1)
    analytic = math.sqrt(4 * h1.var(ddof=1) / n)
    boot = lipschitz_fraction(
        X, y, metric="euclidean", normalize=None, return_counts=True,
        n_bootstrap=400, random_state=0,
    )  # fmt: skip
    se = boot.replicates.std(ddof=1)
    assert se == pytest.approx(analytic, rel=0.2)


def _population_fraction():
    """P(|y - y'| <= |x - x'|) for x ~ N(0, 1), y = x + N(0, 0.7^2), by quadrature.

    With u = x - x' ~ N(0, 2) and v = e - e' ~ N(0, 0.98), the event is
    v (v + 2u) <= 0: for u > 0, v in [-2u, 0] (and symmetrically).
    """
    from scipy import integrate
    from scipy.stats import norm

    su, sv = math.sqrt(2.0), math.sqrt(0.98)
    inner = lambda u: norm.pdf(u, scale=su) * (0.5 - norm.cdf(-2 * u, scale=sv))  # noqa: E731
    return 2 * integrate.quad(inner, 0, np.inf, epsabs=1e-13)[0]


def test_coverage_by_simulation():
    # Known truth: the population fraction (quadrature, 0.39283); the earlier
    # reference, a sample of 3,000 essays, was 0.002 off, a tenth of a
    # half-width at n=60 and a third at n=400, enough to fake undercoverage.
    def draw(rng, n):
        x = rng.normal(size=(n, 1))
        return x, x[:, 0] + rng.normal(scale=0.7, size=n)

    truth = _population_fraction()
    big_x, big_y = draw(np.random.default_rng(10**6), 3000)
    # the quadrature agrees with a large sample (SE ~0.006)
    assert truth == pytest.approx(
        lipschitz_fraction(big_x, big_y, metric="euclidean", normalize=None), abs=0.01
    )
    seeds, covered = 200, 0
    for seed in range(seeds):
        x, y = draw(np.random.default_rng(seed), 150)
        r = lipschitz_fraction(
            x, y, metric="euclidean", normalize=None, return_counts=True,
            n_bootstrap=200, random_state=seed,
        )  # fmt: skip
        covered += r.ci_low <= truth <= r.ci_high
    # 95% nominal; measured 93.5% at n=150 over 400 seeds (lipschitz_fraction's
    # Notes), so the tolerance is the binomial's 0.1% tails below 0.93 and
    # above 0.96. Resampling pairs instead of essays covers far less.
    low = binom.ppf(0.001, seeds, 0.93)
    high = binom.ppf(0.999, seeds, 0.96)
    assert low <= covered <= high, (covered, low, high)


def test_mean_type_bootstrap_se_is_sd_over_root_n():
    rng = np.random.default_rng(7)
    x = rng.normal(size=500)
    w = replicate_weights(500, 2000, random_state=0)
    means = (w @ x) / w.sum(axis=1)
    assert means.std(ddof=1) == pytest.approx(x.std(ddof=0) / math.sqrt(500), rel=0.08)


def test_paired_difference_of_two_systems_on_the_same_replicates():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(80, 5))
    human = rng.integers(1, 7, size=80).astype(float)
    same = lipschitz_fraction(X, human, return_counts=True, n_bootstrap=100, random_state=1)
    again = lipschitz_fraction(
        X, human, return_counts=True, n_bootstrap=100, random_state=1
    )
    null = paired_difference(
        same.fraction, again.fraction, same.replicates, again.replicates
    )
    assert null.difference == 0 and null.p_value == 1.0
    # a system that scores every essay alike satisfies every pair: clearly different
    flat = lipschitz_fraction(
        X, np.full(80, 3.0), return_counts=True, n_bootstrap=100, random_state=1
    )
    diff = paired_difference(flat.fraction, same.fraction, flat.replicates, same.replicates)
    assert diff.ci_low > 0 and diff.p_value < 0.05


def _lipschitz_study(n_bootstrap, n=24):
    from sklearn_fairaes.report._study import PairSpace, Settings, Study, System

    rng = np.random.default_rng(11)
    X = rng.random((n, 4))
    D = pdist(X, "cosine")
    human = rng.integers(0, 5, n).astype(float)
    return Study(
        prompt="7", prompt_text=None, essays=["essay"] * n, ids=np.arange(n),
        rows=np.arange(n), human=human, score_range=(0.0, 4.0),
        score_range_source="declared", settings=Settings(n_bootstrap=n_bootstrap),
        systems={
            "flat": System("flat", "given", {None: np.full(n, 2.0)}),
            "noisy": System("noisy", "given", {None: rng.integers(0, 5, n).astype(float)}),
        },
        spaces={"tfidf": PairSpace("tfidf", None, X, D, "precomputed", D)},
    )  # fmt: skip


def test_report_lipschitz_table_has_intervals_replicates_and_differences():
    from sklearn_fairaes.report.analyses._lipschitz import ANALYSIS

    study = _lipschitz_study(50)
    out = ANALYSIS.run(study)
    lip = out.tables["lipschitz"]
    for fig in ("lipschitz_minmax", "lipschitz_max"):
        cols = list(lip.columns)
        assert cols[cols.index(fig) + 1 : cols.index(fig) + 3] == [
            f"{fig}_ci_low",
            f"{fig}_ci_high",
        ]
        inside = (lip[f"{fig}_ci_low"] <= lip[fig]) & (lip[fig] <= lip[f"{fig}_ci_high"])
        assert inside.mean() >= 0.6
    # the replicates are the fractions on the resampled essays (brute force, one replicate)
    w = study.bootstrap_weights()
    X, y = study.spaces["tfidf"].X, study.systems["noisy"].under("tfidf")
    d, o = pdist(X, "cosine"), pdist(y[:, None])
    rep = out.replicates[("lipschitz", "tfidf", "noisy", "lipschitz_minmax")]
    assert rep.shape == (50,)
    want = _brute_force(X, y, w[3], (d.min(), d.max()), (o.min(), o.max()))
    assert rep[3] == pytest.approx(want, abs=1e-12)
    # the flat system satisfies every pair: its fraction is 1 on every replicate
    flat = out.replicates[("lipschitz", "tfidf", "flat", "lipschitz_max")]
    assert (flat == 1.0).all()
    # the spread-matched fraction's replicate: scores rescaled to the human SD
    # (the full sample's), the humans' score-difference range
    human = study.human
    scaled = y * (human.std(ddof=1) / y.std(ddof=1))
    oh = pdist(human[:, None])
    rep = out.replicates[("lipschitz", "tfidf", "noisy", "lipschitz_matched")]
    want = _brute_force(X, scaled, w[3], (d.min(), d.max()), (oh.min(), oh.max()))
    assert rep[3] == pytest.approx(want, abs=1e-12)
    diffs = out.tables["system_differences"]
    # 3 scorings -> 3 pairs, 2 figures each; the flat system has no spread to
    # match, so the spread-matched difference is noisy's against the humans' only
    paper = diffs[diffs["figure"] != "lipschitz_matched"]
    assert len(paper) == 6
    assert set(zip(paper["system_a"], paper["system_b"])) == {
        ("flat", "noisy"), ("flat", "human"), ("noisy", "human"),
    }  # fmt: skip
    matched = diffs[diffs["figure"] == "lipschitz_matched"]
    assert list(zip(matched["system_a"], matched["system_b"])) == [("noisy", "human")]
    row = diffs[(diffs.system_a == "flat") & (diffs.system_b == "noisy")].iloc[0]
    assert row.difference > 0 and row.ci_low > 0 and row.p_value < 0.05


def test_report_without_bootstrap_leaves_intervals_empty():
    from sklearn_fairaes.report.analyses._lipschitz import ANALYSIS

    out = ANALYSIS.run(_lipschitz_study(0))
    lip = out.tables["lipschitz"]
    assert lip["lipschitz_minmax_ci_low"].isna().all() and not out.replicates
    assert out.tables["system_differences"].empty


def test_report_agreement_table_has_intervals_around_qwk_and_smd():
    from sklearn_fairaes.report.analyses._agreement import ANALYSIS

    study = _lipschitz_study(50, n=60)
    out = ANALYSIS.run(study)
    table = out.tables["agreement"]
    for fig in ("qwk", "smd", "degradation"):
        cols = list(table.columns)
        assert cols[cols.index(fig) + 1 : cols.index(fig) + 3] == [
            f"{fig}_ci_low",
            f"{fig}_ci_high",
        ]
    noisy = table[table.system == "noisy"].iloc[0]
    assert noisy.qwk_ci_low <= noisy.qwk <= noisy.qwk_ci_high
    assert noisy.smd_ci_low <= noisy.smd <= noisy.smd_ci_high
    rep = out.replicates[("agreement", "", "noisy", "smd")]
    assert rep.shape == (50,) and np.isfinite(rep).all()


# ---------------------------------------------------------------- qwk, smd, consistency


def _resampled(w_row):
    """Explicit resampled rows: essay i repeated w[i] times."""
    return np.repeat(np.arange(w_row.size), w_row.astype(int))


@pytest.mark.parametrize("rounding", ["round", None])
def test_qwk_replicates_equal_qwk_of_explicitly_resampled_essays(rounding):
    rng = np.random.default_rng(21)
    human = rng.integers(0, 7, 70).astype(float)
    machine = np.clip(human + rng.normal(0, 1.2, 70), -1, 8)
    r = qwk(
        human, machine, score_range=(0, 6), rounding=rounding, n_bootstrap=40,
        random_state=5,
    )  # fmt: skip
    assert r.qwk == qwk(human, machine, score_range=(0, 6), rounding=rounding)
    w = replicate_weights(70, 40, random_state=5)
    want = [
        qwk(human[i], machine[i], score_range=(0, 6), rounding=rounding)
        for i in map(_resampled, w)
    ]
    np.testing.assert_allclose(r.replicates, want, rtol=1e-12, atol=1e-14)
    assert (r.ci_low, r.ci_high) == bootstrap_interval(r.replicates, 0.95)


def test_qwk_replicate_of_one_repeated_essay_is_undefined():
    # an essay drawn n times is one score in both vectors: no expected disagreement
    w = np.zeros((1, 5))
    w[0, 2] = 5
    from sklearn_fairaes.metrics._bootstrap import kappa_replicates

    a = np.arange(5.0)
    assert np.isnan(kappa_replicates(a, a, w)[0])
    assert kappa_replicates(a, a, w, replace_undefined_by=1.0)[0] == 1.0


@pytest.mark.parametrize("method", ["pooled", "unpooled"])
def test_smd_replicates_equal_smd_of_explicitly_resampled_essays(method):
    rng = np.random.default_rng(22)
    human = rng.integers(1, 6, 50).astype(float)
    machine = human + rng.normal(0.3, 0.8, 50)
    r = standardized_mean_difference(
        human, machine, method=method, n_bootstrap=30, random_state=2
    )
    w = replicate_weights(50, 30, random_state=2)
    want = [
        standardized_mean_difference(human[i], machine[i], method=method)
        for i in map(_resampled, w)
    ]
    np.testing.assert_allclose(r.replicates, want, rtol=1e-12)
    assert r.smd == standardized_mean_difference(human, machine, method=method)
    # a mean-type figure: its bootstrap SE is near the delta-method SE, ~ sd/sqrt(n)
    many = standardized_mean_difference(human, machine, n_bootstrap=2000, random_state=0)
    d = machine - human
    pooled = math.sqrt((human.var(ddof=1) + machine.var(ddof=1)) / 2)
    assert many.replicates.std(ddof=1) == pytest.approx(
        d.std(ddof=1) / math.sqrt(50) / pooled, rel=0.15
    )


def test_default_returns_stay_floats():
    h, m = [1, 2, 3, 4, 2], [1, 2, 4, 4, 3]
    assert isinstance(qwk(h, m), float)
    assert isinstance(standardized_mean_difference(h, m), float)
    with pytest.raises(ValueError, match="n_bootstrap must be at least 1"):
        qwk(h, m, n_bootstrap=0)


def test_consistency_replicates_weight_the_full_sample_gaps():
    rng = np.random.default_rng(23)
    X = rng.normal(size=(40, 3))
    y = rng.integers(0, 5, 40).astype(float)
    plain = essay_consistency(X, y, n_neighbors=3)
    r = essay_consistency(X, y, n_neighbors=3, n_bootstrap=50, random_state=4)
    assert r.consistency == plain.consistency
    np.testing.assert_array_equal(r.neighbors, plain.neighbors)
    w = replicate_weights(40, 50, random_state=4)
    # resampled essays keep the neighbours (and gaps) of the full sample
    want = [1 - np.abs(plain.gap[i]).mean() for i in map(_resampled, w)]
    np.testing.assert_allclose(r.consistency_replicates, want, rtol=1e-12)
    lo, hi = bootstrap_interval(r.consistency_replicates, 0.95)
    assert (r.consistency_ci_low, r.consistency_ci_high) == (lo, hi)
    assert "consistency_ci_low" not in plain


def test_report_agreement_replicates_equal_weighted_metrics_and_differences_pair():
    from sklearn_fairaes.report.analyses._agreement import ANALYSIS, view

    study = _lipschitz_study(30, n=60)
    out = ANALYSIS.run(study)
    w = study.bootstrap_weights()
    noisy = study.systems["noisy"].under("tfidf")
    want_qwk = [qwk(study.human, noisy, score_range=(0, 4), sample_weight=x) for x in w]
    want_smd = [
        # the audit's SMD: the human SD (RSMTool's unpooled, smd_method's default)
        standardized_mean_difference(study.human, noisy, method="unpooled", sample_weight=x)
        for x in w
    ]
    got = out.replicates
    np.testing.assert_allclose(got[("agreement", "", "noisy", "qwk")], want_qwk, rtol=1e-12)
    np.testing.assert_allclose(got[("agreement", "", "noisy", "smd")], want_smd, rtol=1e-12)
    diffs = out.tables["system_differences"]
    assert list(diffs.columns) == [
        "representation", "figure", "system_a", "system_b", "difference", "ci_low",
        "ci_high", "p_value",
    ]  # fmt: skip
    assert set(diffs["figure"]) == {"qwk", "abs_smd"}
    row = diffs[diffs.figure == "qwk"].iloc[0]
    table = out.tables["agreement"].set_index("system")
    assert (row.system_a, row.system_b) == ("flat", "noisy")
    assert row.difference == pytest.approx(table.qwk["flat"] - table.qwk["noisy"])
    shown = view(out.tables, {}, "7")
    cell = shown["main"]["body"][1]["cells"][4][0]
    assert "[" in cell.text and cell.text.startswith(f"{table.qwk['noisy']:.3f}")
    assert shown["differences"] is not None
    # without the bootstrap nothing is paired and the cells are plain numbers
    plain = ANALYSIS.run(_lipschitz_study(0, n=60))
    assert plain.tables["system_differences"].empty
    assert "[" not in view(plain.tables, {}, "7")["main"]["body"][1]["cells"][4][0].text


# ---------------------------------------------------------------- empirical constants


def _brute_weighted_quantile(c, weight, q):
    """Smallest c with (weight of constants <= c) / total >= q, on explicit pairs."""
    order = np.argsort(c, kind="stable")
    cum = np.cumsum(weight[order])
    total = weight.sum()
    return c[order][np.flatnonzero(cum / total >= q)[0]]


@pytest.mark.parametrize("start", [0.9, 0.05, 0.0])
def test_replicate_quantile_constants_equal_brute_force(start):
    from sklearn_fairaes.metrics import lipschitz_profile
    from sklearn_fairaes.metrics._pairs._bootstrap_quantiles import (
        replicate_quantile_constants,
    )

    rng = np.random.default_rng(31)
    X = rng.random((30, 4))
    y = rng.integers(0, 6, 30).astype(float)
    # precomputed: the brute force below sees the engine's own distances
    D = pdist(X, "cosine")
    engine = PairwiseEngine(D, metric="precomputed")
    qs = [0.5, 0.9, 0.95, 0.99]
    full = lipschitz_profile(engine, y, quantiles=qs, metric="precomputed")
    (d_lo, d_hi), (o_lo, o_hi) = full.distance_range, full.outcome_range
    d_sc, o_sc = (d_lo, d_hi - d_lo), (o_lo, o_hi - o_lo)
    w = replicate_weights(30, 25, random_state=3)
    got = replicate_quantile_constants(engine, y, w, qs, d_sc, o_sc, start)
    # brute force: the constants of all pairs, each weighted w_i w_j
    d = (D - d_lo) / (d_hi - d_lo)
    o = (pdist(y[:, None]) - o_lo) / (o_hi - o_lo)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(o <= 0, 0.0, o / d)
    i, j = np.triu_indices(30, 1)
    for b in range(25):
        weight = w[b, i] * w[b, j]
        for k, q in enumerate(qs):
            # the exact constants are within an ulp of the quotients
            assert got[k, b] == pytest.approx(
                _brute_weighted_quantile(c, weight, q), rel=1e-12
            )
    # unit weights give the full sample's constants exactly
    ones = replicate_quantile_constants(engine, y, np.ones((1, 30)), qs, d_sc, o_sc, start)
    np.testing.assert_array_equal(ones[:, 0], full.quantile_constants)


def test_report_review_intervals_for_consistency_and_constants():
    from sklearn_fairaes.metrics import essay_consistency
    from sklearn_fairaes.report.analyses._review import ANALYSIS, view

    study = _lipschitz_study(40, n=40)
    out = ANALYSIS.run(study)
    cons = out.tables["essay_consistency"]
    cols = list(cons.columns)
    assert cols[cols.index("consistency") + 1 : cols.index("consistency") + 3] == [
        "consistency_ci_low",
        "consistency_ci_high",
    ]
    row = cons[cons.system == "noisy"].iloc[0]
    assert row.consistency_ci_low <= row.consistency <= row.consistency_ci_high
    # the replicates weight the full sample's gaps, as essay_consistency(n_bootstrap=)
    w = study.bootstrap_weights()
    y = study.systems["noisy"].under("tfidf")
    ec = essay_consistency(study.spaces["tfidf"].pairs, y, n_neighbors=int(row.n_neighbors),
                           metric="precomputed")  # fmt: skip
    want = 1 - (w @ np.abs(ec.gap)) / w.sum(axis=1)
    got = out.replicates[("essay_consistency", "tfidf", "noisy", "consistency")]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    consts = out.tables["lipschitz_constants"]
    assert consts["lipschitz_constant_ci_low"].notna().all()
    inside = (consts.lipschitz_constant_ci_low <= consts.lipschitz_constant) & (
        consts.lipschitz_constant <= consts.lipschitz_constant_ci_high
    )
    assert inside.mean() >= 0.6
    assert ("lipschitz_constants", "tfidf", "human", "lipschitz_constant[q=0.95]") in (
        out.replicates
    )
    shown = view(out.tables, {}, "7")["constants"]
    assert "[" in shown["body"][0]["cells"][2][0].text
    off = ANALYSIS.run(_lipschitz_study(0, n=40))
    assert off.tables["lipschitz_constants"]["lipschitz_constant_ci_low"].isna().all()
