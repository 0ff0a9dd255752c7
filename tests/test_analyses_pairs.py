"""The pair analyses (Lipschitz, curves, distributions, extreme pairs, profile, paraphrases).

Each analysis reads a hand-built ``Study``; every table is checked against an
independent reference: scipy's ``pdist`` with explicit loops and counts, and
``np.argsort`` for the extreme pairs and the profile groups. Given and fitted
systems are audited under every representation, trained ones under their own.
"""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import pdist, squareform
from scipy.stats import spearmanr
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import Ridge
from sklearn.metrics import ndcg_score
from sklearn.model_selection import KFold, cross_val_predict

import sklearn_fairaes as sf
from sklearn_fairaes.metrics import condensed_distances
from sklearn_fairaes.report._study import PairSpace, Settings, Study, System
from sklearn_fairaes.report.analyses import _extremes, _lipschitz, _paraphrase

LIPSCHITZ = _lipschitz.ANALYSIS
EXTREMES = _extremes.ANALYSIS
PARAPHRASE = _paraphrase.ANALYSIS
N = 14


def _space(name, X, transformer=None):
    D = pdist(X, "cosine")
    return PairSpace(name, transformer, X, D, "precomputed", D)


def _study(spaces, systems, human, **kwargs):
    n = len(human)
    base = dict(
        prompt="3",
        prompt_text=None,
        essays=[f"essay number {k}" for k in range(n)],
        ids=np.array([f"id{k}" for k in range(n)], dtype=object),
        # the essays' rows in the user's table: one prompt's rows are not 1..n
        rows=3 * np.arange(n) + 2,
        human=human,
        score_range=(0.0, 4.0),
        score_range_source="declared",
        settings=Settings(k_extreme=2, n_profile_pairs=5),
        systems=systems,
        spaces=spaces,
    )
    base.update(kwargs)
    return Study(**base)


@pytest.fixture
def toy(rng):
    """Two representations, a given, a fitted and a trained system, features."""
    human = rng.integers(0, 5, N).astype(float)
    systems = {
        "engine": System("engine", "given", {None: rng.integers(0, 5, N).astype(float)}),
        "mine": System("mine", "fitted", {None: rng.normal(2, 1, N)}),
        "ridge": System(
            "ridge", "trained", {"a": rng.normal(2, 1, N), "b": rng.normal(2, 1, N)}
        ),
        # a baseline trained on one representation only
        "forest": System("forest", "trained", {"b": rng.normal(2, 1, N)}),
    }
    spaces = {"a": _space("a", rng.random((N, 5))), "b": _space("b", rng.random((N, 3)))}
    features = rng.normal(size=(N, 3))
    features[:, 2] = 7.0  # a constant feature: difference 0 everywhere
    return _study(
        spaces, systems, human, features=features, feature_names=["f0", "f1", "f2"]
    )


def _pairs(n):
    """(i, j) of every pair in pdist's condensed order, by explicit loops."""
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def _naive_lipschitz(X, s, normalize):
    """Count the pairs with normalised |dy| <= normalised d, one pair at a time."""
    d = np.array([pdist(X[[i, j]], "cosine")[0] for i, j in _pairs(len(s))])
    o = np.array([abs(s[i] - s[j]) for i, j in _pairs(len(s))])
    if normalize == "minmax":
        d = (d - d.min()) / (d.max() - d.min())
        o = (o - o.min()) / (o.max() - o.min())
    else:
        d, o = d / d.max(), o / o.max()
    return int(np.sum(o <= d)), len(d)


def _expected_series(study, rname):
    """Every system audited under ``rname``, in the study's order, then the human scores."""
    return [n for n, system in study.systems.items() if system.under(rname) is not None] + [
        "human"
    ]


def _scores(study, rname, system):
    if system == "human":
        return study.human
    return study.systems[system].under(rname)


def test_lipschitz_rows_and_counts_match_explicit_counting(toy):
    assert LIPSCHITZ.absent(toy) is None
    out = LIPSCHITZ.run(toy)
    lip = out.tables["lipschitz"]
    assert list(lip.columns) == [
        "representation", "system",
        "lipschitz_minmax", "lipschitz_minmax_ci_low", "lipschitz_minmax_ci_high",
        "lipschitz_max", "lipschitz_max_ci_low", "lipschitz_max_ci_high",
        "lipschitz_matched", "lipschitz_matched_ci_low", "lipschitz_matched_ci_high",
        "score_sd", "score_sd_ci_low", "score_sd_ci_high", "human_sd", "n_pairs",
        "n_satisfied_minmax", "n_satisfied_max", "n_satisfied_matched",
    ]  # fmt: skip
    # given and fitted under every representation, the trained one under its own
    assert list(zip(lip["representation"], lip["system"])) == [
        ("a", "engine"), ("a", "mine"), ("a", "ridge"), ("a", "human"),
        ("b", "engine"), ("b", "mine"), ("b", "ridge"), ("b", "forest"), ("b", "human"),
    ]  # fmt: skip
    for row in lip.itertuples(index=False):
        X, s = (
            toy.spaces[row.representation].X,
            _scores(toy, row.representation, row.system),
        )
        hits_mm, total = _naive_lipschitz(X, s, "minmax")
        hits_max, _ = _naive_lipschitz(X, s, "max")
        assert (row.n_pairs, row.n_satisfied_minmax, row.n_satisfied_max) == (
            total,
            hits_mm,
            hits_max,
        )
        assert row.lipschitz_minmax == pytest.approx(hits_mm / total)
        assert row.lipschitz_max == pytest.approx(hits_max / total)
        # spread-matched: |dy| rescaled to the human SD, over the human range
        c = np.std(toy.human, ddof=1) / np.std(s, ddof=1)
        d = np.array([pdist(X[[i, j]], "cosine")[0] for i, j in _pairs(len(s))])
        o = np.array([abs(c * s[i] - c * s[j]) for i, j in _pairs(len(s))])
        h = np.array([abs(toy.human[i] - toy.human[j]) for i, j in _pairs(len(s))])
        d = (d - d.min()) / (d.max() - d.min())
        hits_matched = int(np.sum((o - h.min()) / (h.max() - h.min()) <= d))
        assert row.n_satisfied_matched == hits_matched
        assert row.lipschitz_matched == pytest.approx(hits_matched / total)
        assert row.score_sd == pytest.approx(np.std(s, ddof=1))
        assert row.human_sd == pytest.approx(np.std(toy.human, ddof=1))
    assert out.warnings == [] and out.notes == []


def test_trained_system_scores_differ_per_representation(toy):
    # the trained system's row under "b" uses its "b" predictions, not "a"'s
    lip = LIPSCHITZ.run(toy).tables["lipschitz"].set_index(["representation", "system"])
    X = toy.spaces["b"].X
    hits, _ = _naive_lipschitz(X, toy.systems["ridge"].scores["b"], "minmax")
    assert lip.loc[("b", "ridge"), "n_satisfied_minmax"] == hits
    other, _ = _naive_lipschitz(X, toy.systems["ridge"].scores["a"], "minmax")
    assert hits != other  # the check above can tell the two apart


def _permutation_pvalue(means):
    """Exact two-sided p-value of Spearman's rho over all orderings of the bins."""
    x = np.arange(len(means))
    rho = spearmanr(x, means).statistic
    null = [spearmanr(x, np.asarray(means)[list(p)]).statistic
            for p in itertools.permutations(range(len(means)))]  # fmt: skip
    return rho, float(np.mean(np.abs(null) >= abs(rho) - 1e-12))


def test_score_distance_curves_and_trend_match_sorted_pairs(toy):
    out = LIPSCHITZ.run(toy)
    curves, trend = out.tables["score_distance"], out.tables["trend"]
    n_pairs = N * (N - 1) // 2
    assert sorted(set(curves["n_bins"])) == [5, min(100, n_pairs // 2)]
    for (rname, system, n_bins), part in curves.groupby(
        ["representation", "system", "n_bins"], sort=False
    ):
        D = toy.spaces[rname].pairs
        s = _scores(toy, rname, system)
        o = np.array([abs(s[i] - s[j]) for i, j in _pairs(N)])
        order = np.argsort(D, kind="stable")
        chunks = np.array_split(order, n_bins)
        assert part["bin"].tolist() == list(range(1, n_bins + 1))
        assert part["n_pairs"].tolist() == [len(c) for c in chunks]
        means = [o[c].mean() for c in chunks]
        np.testing.assert_allclose(part["mean_abs_diff"], means, rtol=1e-12)
        np.testing.assert_allclose(
            part["se"], [o[c].std(ddof=1) / np.sqrt(len(c)) for c in chunks], rtol=1e-12
        )
        np.testing.assert_array_equal(part["distance_min"], [D[c].min() for c in chunks])
        np.testing.assert_array_equal(part["distance_max"], [D[c].max() for c in chunks])
        row = trend.query(
            "representation == @rname and system == @system and n_bins == @n_bins"
        )
        assert len(row) == 1
        if n_bins <= 8:  # exact permutation p-value
            rho, p = _permutation_pvalue(means)
        else:
            rho, p = spearmanr(np.arange(n_bins), means)
        assert row["spearman_rho"].iloc[0] == pytest.approx(rho)
        assert row["spearman_pvalue"].iloc[0] == pytest.approx(p)


def _histogram(values):
    v = (values - values.min()) / (values.max() - values.min())
    return np.histogram(v, bins=50, range=(0, 1), density=True)


def test_distance_distribution_holds_distances_then_each_series(toy):
    dist = LIPSCHITZ.run(toy).tables["distance_distribution"]
    assert list(dist.columns) == [
        "representation",
        "series",
        "bin_left",
        "bin_right",
        "density",
    ]
    for rname in ("a", "b"):
        part = dist[dist["representation"] == rname]
        assert list(dict.fromkeys(part["series"])) == [
            "distance",
            *_expected_series(toy, rname),
        ]
        density, edges = _histogram(pdist(toy.spaces[rname].X, "cosine"))
        got = part[part["series"] == "distance"]
        np.testing.assert_allclose(got["density"], density)
        np.testing.assert_allclose(got["bin_left"], edges[:-1])
        np.testing.assert_allclose(got["bin_right"], edges[1:])
        for system in _expected_series(toy, rname):
            s = _scores(toy, rname, system)
            o = np.array([abs(s[i] - s[j]) for i, j in _pairs(N)])
            got = part[part["series"] == system]
            np.testing.assert_allclose(got["density"], _histogram(o)[0])


def test_sampled_pairs_give_sampled_score_differences_and_exact_fractions(toy, rng):
    # too many essays to hold all pairs: vectors with metric="cosine", and the
    # distributions from the sampled pairs only
    exact = LIPSCHITZ.run(toy).tables["lipschitz"]
    i = rng.integers(0, N, 400)
    j = rng.integers(0, N, 400)
    keep = i != j
    i, j = i[keep], j[keep]
    for name, space in toy.spaces.items():
        X = space.X
        sample = np.array([pdist(X[[a, b]], "cosine")[0] for a, b in zip(i, j)])
        toy.spaces[name] = PairSpace(name, None, X, X, "cosine", sample, (i, j))
    out = LIPSCHITZ.run(toy)
    pd.testing.assert_frame_equal(out.tables["lipschitz"], exact)
    dist = out.tables["distance_distribution"]
    got = dist.query("representation == 'a' and series == 'engine'")["density"]
    s = toy.systems["engine"].scores[None]
    np.testing.assert_allclose(got, _histogram(np.abs(s[i] - s[j]))[0])
    got = dist.query("representation == 'b' and series == 'distance'")["density"]
    np.testing.assert_allclose(got, _histogram(toy.spaces["b"].distance_sample)[0])
    assert [n for n in out.notes if "random pairs" in n] == [
        f"{r}: distance distributions are drawn from {len(i):,} random pairs ({N:,} "
        f"essays are too many to hold all pairs); every other pair metric uses all pairs."
        for r in ("a", "b")
    ]


def test_degenerate_representation_warns_and_pair_warnings_become_notes(toy):
    # every essay the same vector: all distances 0, nothing tells them apart
    X = np.ones((N, 3))
    D = pdist(X, "cosine")
    toy.spaces = {"dup": PairSpace("dup", None, X, D, "precomputed", D)}
    # constant scores: the same mean difference in every bin, Spearman's rho
    # undefined (an UndefinedMetricWarning of both curves of both systems)
    for name in ("engine", "mine"):
        toy.systems[name].scores[None] = np.full(N, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing escapes as a warning
        out = LIPSCHITZ.run(toy)
    assert [w["representation"] for w in out.warnings] == ["dup"]
    assert out.warnings[0]["message"].startswith(
        "dup: 100% of the essay pairs are at distance 0"
    )
    assert len(out.notes) == 1
    # one note per message, naming each place once, in the order they arose
    assert out.notes[0].startswith("Pair metrics: the mean score difference is the same")
    assert out.notes[0].endswith("(dup + engine; dup + mine).")
    trend = out.tables["trend"]
    assert (trend.loc[trend["system"] == "engine", "spearman_rho"] == 0.0).all()


def test_absent_without_representations(toy):
    toy.spaces = {}
    toy.paraphrases = list(toy.essays)
    for analysis in (LIPSCHITZ, EXTREMES, PARAPHRASE):
        assert "no text representation" in analysis.absent(toy)


def _condensed_index_pairs(n):
    return np.array(_pairs(n))


def test_extreme_pairs_match_argsort(toy):
    assert EXTREMES.absent(toy) is None
    out = EXTREMES.run(toy)
    ext = out.tables["extreme_pairs"]
    assert list(ext.columns) == [
        "representation", "which", "rank", "row_a", "row_b", "data_row_a", "data_row_b",
        "id_a", "id_b", "distance", "text_a", "text_b", "score_a", "score_b",
    ]  # fmt: skip
    pairs = _condensed_index_pairs(N)
    for rname, space in toy.spaces.items():
        d = pdist(space.X, "cosine")
        order = np.argsort(d, kind="stable")
        for which, ranks in (("nearest", order[:2]), ("farthest", order[::-1][:2])):
            part = ext[(ext["representation"] == rname) & (ext["which"] == which)]
            assert part["rank"].tolist() == [1, 2]
            assert [tuple(p) for p in part[["row_a", "row_b"]].to_numpy()] == [
                tuple(pairs[r]) for r in ranks
            ]
            np.testing.assert_allclose(part["distance"], d[ranks])
            a, b = part["row_a"].to_numpy(), part["row_b"].to_numpy()
            assert part["data_row_a"].tolist() == [3 * k + 2 for k in a]
            assert part["data_row_b"].tolist() == [3 * k + 2 for k in b]
            assert part["id_a"].tolist() == [f"id{k}" for k in a]
            assert part["text_b"].tolist() == [f"essay number {k}" for k in b]
            np.testing.assert_array_equal(part["score_a"], toy.human[a])
            np.testing.assert_array_equal(part["score_b"], toy.human[b])


def test_extreme_pair_features_are_min_max_scaled_features(toy):
    out = EXTREMES.run(toy)
    ext, feats = out.tables["extreme_pairs"], out.tables["extreme_pair_features"]
    F = toy.features
    scaled = np.zeros_like(F)
    for k in range(2):  # the third feature is constant: 0
        scaled[:, k] = (F[:, k] - F[:, k].min()) / (F[:, k].max() - F[:, k].min())
    # one block of features per representation and end, for the top-ranked pair
    assert len(feats) == 2 * 2 * 3
    for (rname, which), part in feats.groupby(["representation", "which"]):
        top = ext[
            (ext["representation"] == rname) & (ext["which"] == which) & (ext["rank"] == 1)
        ].iloc[0]
        assert part["feature"].tolist() == ["f0", "f1", "f2"]
        np.testing.assert_allclose(part["value_a"], scaled[top["row_a"]])
        np.testing.assert_allclose(part["value_b"], scaled[top["row_b"]])


def test_feature_profile_matches_sorted_pair_groups(toy):
    prof = EXTREMES.run(toy).tables["feature_profile"]
    assert list(prof.columns) == ["representation", "group", "feature", "mean_abs_diff"]
    F = toy.features
    scaled = (F - F.min(axis=0)) / np.where(np.ptp(F, axis=0) > 0, np.ptp(F, axis=0), 1)
    pairs = _condensed_index_pairs(N)
    total = len(pairs)
    m = min(5, total // 10)  # n_profile_pairs, at most a tenth of all pairs
    for rname, space in toy.spaces.items():
        order = np.argsort(pdist(space.X, "cosine"), kind="stable")
        groups = {
            "nearest": order[:m],
            "medium": order[total // 2 - m // 2 : total // 2 - m // 2 + m],
            "farthest": order[total - m :],
        }
        part = prof[prof["representation"] == rname]
        assert list(dict.fromkeys(part["group"])) == ["nearest", "medium", "farthest"]
        for group, ranks in groups.items():
            i, j = pairs[ranks, 0], pairs[ranks, 1]
            expected = np.abs(scaled[i] - scaled[j]).mean(axis=0)
            got = part[part["group"] == group].set_index("feature")["mean_abs_diff"]
            np.testing.assert_allclose(got.loc[["f0", "f1", "f2"]], expected, atol=1e-12)


def test_extremes_without_features_gives_the_pairs_and_a_note(toy):
    toy.features, toy.feature_names = None, []
    out = EXTREMES.run(toy)
    assert set(out.tables) == {"extreme_pairs"}
    assert len(out.tables["extreme_pairs"]) == 2 * 2 * 2
    assert any("no interpretable features" in n for n in out.notes)


def test_k_extreme_beyond_the_pairs_shows_every_pair(toy, rng):
    # four essays: 6 pairs, fewer than the 10 asked for
    X = rng.random((4, 3))
    toy.spaces = {"a": _space("a", X)}
    toy.essays, toy.ids, toy.human = toy.essays[:4], toy.ids[:4], toy.human[:4]
    toy.features = toy.features[:4]
    toy.settings.k_extreme = 10
    out = EXTREMES.run(toy)
    ext = out.tables["extreme_pairs"]
    order = np.argsort(pdist(X, "cosine"), kind="stable")
    near = ext[ext["which"] == "nearest"]
    assert [tuple(p) for p in near[["row_a", "row_b"]].to_numpy()] == [
        tuple(_condensed_index_pairs(4)[r]) for r in order
    ]
    assert (ext["which"] == "farthest").sum() == 6
    assert out.notes == [
        "Extreme pairs: 4 essays have 6 pairs, fewer than k_extreme=10; each end shows all 6."
    ]


def test_extremes_refuses_features_that_do_not_fit(toy):
    toy.feature_names = ["f0", "f1"]
    with pytest.raises(
        ValueError, match=r"prompt '3'.*shape \(14, 3\), expected \(14, 2\)"
    ):
        EXTREMES.run(toy)


@pytest.fixture
def text_study(rng):
    essays = [
        "the cat sat on the mat", "a dog ran in the park", "the cat ran to the mat",
        "dogs sat in the sun", "birds sing in the morning", "the sun rose over the park",
        "a bird sat on the cat", "morning dogs ran far",
    ]  # fmt: skip
    rep = CountVectorizer().fit(essays)
    X = rep.transform(essays)
    D = condensed_distances(X)
    human = rng.integers(0, 3, len(essays)).astype(float)
    return _study(
        {"bow": PairSpace("bow", rep, X, D, "precomputed", D)},
        {},
        human,
        essays=essays,
        ids=np.arange(1, len(essays) + 1),
        paraphrases=[e.replace("the", "a") for e in essays],
        paraphrase_source="given",
    )


def _ndcg_rows(Xo, Xp, samples):
    """NDCG of each sampled essay's paraphrase ranking: pdist, then sklearn's ndcg_score.

    Relevance of essay j for query i is max_l d(i, l) - d(i, j) over the
    originals (the least similar essay gets 0); the paraphrases are ranked
    by the same shifted similarity; the query itself is left out.
    """
    Do, Dp = squareform(pdist(Xo, "cosine")), squareform(pdist(Xp, "cosine"))
    out = []
    for i in samples:
        others = [k for k in range(len(Do)) if k != i]
        rel = Do[i, others].max() - Do[i, others]
        score = Dp[i, others].max() - Dp[i, others]
        out.append(ndcg_score([rel], [score]))
    return out


def test_paraphrase_row_matches_a_hand_ndcg(text_study):
    assert PARAPHRASE.absent(text_study) is None
    table = PARAPHRASE.run(text_study).tables["paraphrase"]
    assert list(table.columns) == [
        "representation", "ndcg", "ndcg_std", "ndcg_at_10", "ndcg_at_10_std", "spearman",
        "spearman_std", "n_samples", "source",
    ]  # fmt: skip
    row = table.iloc[0]
    assert (row["representation"], row["n_samples"], row["source"]) == ("bow", 8, "given")
    rep = text_study.spaces["bow"].transformer
    Xo = rep.transform(text_study.essays).toarray()
    Xp = rep.transform(text_study.paraphrases).toarray()
    # all 8 essays are sampled (n_paraphrase_samples=100 > 8), in any order
    per_essay = _ndcg_rows(Xo, Xp, range(8))
    assert row["ndcg"] == pytest.approx(np.mean(per_essay))


def test_paraphrases_equal_to_the_essays_rank_perfectly(text_study):
    text_study.paraphrases = list(text_study.essays)
    row = PARAPHRASE.run(text_study).tables["paraphrase"].iloc[0]
    assert row["ndcg"] == pytest.approx(1.0)
    assert row["ndcg_at_10"] == pytest.approx(1.0)
    assert row["spearman"] == pytest.approx(1.0)


def test_paraphrase_absent_and_refused(text_study):
    text_study.paraphrases = None
    assert "no paraphrases" in PARAPHRASE.absent(text_study)
    with pytest.raises(ValueError, match="prompt '3'.*absent"):
        PARAPHRASE.run(text_study)
    text_study.paraphrases = ["one"]
    with pytest.raises(ValueError, match="1 paraphrases for 8 essays"):
        PARAPHRASE.run(text_study)


@pytest.fixture(scope="module")
def demo_study():
    """The demo essays as the audit builds them: bow and tfidf, a given and a trained system."""
    df = sf.load_demo_essays()
    essays = list(df["essay"])
    y = df["score"].to_numpy(float)
    folds = KFold(3, shuffle=True, random_state=0)
    spaces, ridge = {}, {}
    for name, rep in (
        ("bow", sf.text.BowVectorizer()),
        ("tfidf", sf.text.TfidfEssayVectorizer()),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            X = rep.fit_transform(essays)
        D = condensed_distances(X)
        spaces[name] = PairSpace(name, rep, X, D, "precomputed", D)
        ridge[name] = cross_val_predict(Ridge(), X, y, cv=folds)
    systems = {
        "rater_one": System("rater_one", "given", {None: df["rater1"].to_numpy(float)}),
        "ridge": System("ridge", "trained", ridge),
    }
    return _study(
        spaces,
        systems,
        y,
        essays=essays,
        ids=df["essay_id"].astype(str).to_numpy(),
        rows=np.arange(1, len(y) + 1),
        score_range=(0.0, 12.0),
        settings=Settings(k_extreme=1, n_profile_pairs=10_000),
        features=np.c_[[len(e.split()) for e in essays], [len(e) for e in essays]],
        feature_names=["n_words", "n_chars"],
        paraphrases=list(df["paraphrase"]),
        paraphrase_source="given",
    )


def test_demo_tables_equal_direct_metric_calls(demo_study):
    """What the audit reported before the reshape: each number is one metric call."""
    study = demo_study
    lip = LIPSCHITZ.run(study)
    ext = EXTREMES.run(study).tables
    par = PARAPHRASE.run(study).tables["paraphrase"].set_index("representation")
    table = lip.tables["lipschitz"].set_index(["representation", "system"])
    assert set(table.index) == {
        (r, s) for r in ("bow", "tfidf") for s in ("rater_one", "ridge", "human")
    }
    for rname, space in study.spaces.items():
        X = space.X
        for system, s in study.scored(rname).items():
            counts = sf.lipschitz_fraction(X, s, return_counts=True)
            row = table.loc[(rname, system)]
            assert row["lipschitz_minmax"] == counts["fraction"]
            assert row["n_satisfied_minmax"] == counts["n_satisfied"]
            assert row["lipschitz_max"] == sf.lipschitz_fraction(X, s, normalize="max")
            curve = sf.score_distance_curve(X, s, n_bins=100)
            got = lip.tables["score_distance"].query(
                "representation == @rname and system == @system and n_bins == 100"
            )
            np.testing.assert_allclose(got["mean_abs_diff"], curve["mean_abs_diff"])
        pairs = sf.extreme_pairs(X)
        near = ext["extreme_pairs"].query("representation == @rname and which == 'nearest'")
        assert (near["row_a"].iloc[0], near["row_b"].iloc[0]) == (
            pairs["nearest"]["i"][0],
            pairs["nearest"]["j"][0],
        )
        assert near["text_a"].iloc[0] == study.essays[near["row_a"].iloc[0]]
        profile = sf.feature_difference_profile(X, study.features, n_pairs=1611)
        got = ext["feature_profile"].query(
            "representation == @rname and group == 'farthest'"
        )
        np.testing.assert_allclose(got["mean_abs_diff"], profile["mean_abs_diff"][2])
        Xp = space.transformer.transform(study.paraphrases)
        expected = sf.paraphrase_ndcg(
            X.toarray(), Xp.toarray(), n_samples=100, random_state=0
        )
        assert par.loc[rname, "ndcg"] == expected
    assert lip.warnings == []
    assert not any("prompt" in t.columns for t in (*lip.tables.values(), *ext.values()))
