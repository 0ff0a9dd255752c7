"""paraphrase_ndcg against a naive loop over sklearn's ndcg_score and scipy's spearmanr."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import spearmanr
from sklearn.metrics import ndcg_score
from sklearn.metrics.pairwise import cosine_similarity

from sklearn_fairaes.exceptions import UndefinedMetricWarning
from sklearn_fairaes.metrics import paraphrase_ndcg


def naive(X, Xp, queries, k=None):
    """One query at a time, with sklearn's cosine similarity."""
    S, Sp = cosine_similarity(X), cosine_similarity(Xp)
    full, at10, rho = [], [], []
    for i in queries:
        others = np.delete(np.arange(S.shape[0]), i)
        rel = S[i, others] - S[i, others].min()
        score = Sp[i, others]
        full.append(ndcg_score([rel], [score], k=k))
        at10.append(ndcg_score([rel], [score], k=10))
        rho.append(spearmanr(S[i, others], score)[0])
    return np.array(full), np.array(at10), np.array(rho)


@pytest.mark.parametrize("k", [None, 5])
@pytest.mark.parametrize("sparse", [False, True])
def test_matches_naive_loop(rng, k, sparse):
    X = rng.normal(size=(80, 12))
    Xp = X + 0.8 * rng.normal(size=X.shape)
    if sparse:
        X, Xp = sp.csr_matrix(np.abs(X)), sp.csr_matrix(np.abs(Xp))
    det = paraphrase_ndcg(X, Xp, n_samples=30, k=k, random_state=3, return_details=True)
    full, at10, rho = naive(X, Xp, det.sample_indices, k=k)
    np.testing.assert_allclose(det.ndcg_per_essay, full, rtol=1e-10)
    np.testing.assert_allclose(det.ndcg_at_10_per_essay, at10, rtol=1e-10)
    np.testing.assert_allclose(det.spearman_per_essay, rho, rtol=1e-10, atol=1e-12)
    assert det.ndcg == pytest.approx(full.mean(), rel=1e-12)
    assert det.ndcg_std == pytest.approx(full.std(), rel=1e-9, abs=1e-12)
    assert det.spearman == pytest.approx(rho.mean(), rel=1e-10)
    assert det.k == k and det.n_undefined == 0
    assert det.sample_indices.size == 30 and np.unique(det.sample_indices).size == 30
    assert paraphrase_ndcg(X, Xp, n_samples=30, k=k, random_state=3) == det.ndcg


def test_identical_representations_score_one(rng):
    X = rng.normal(size=(60, 8))
    det = paraphrase_ndcg(X, X.copy(), return_details=True)
    assert det.ndcg == 1.0
    assert det.ndcg_at_10 == 1.0
    assert det.spearman == pytest.approx(1.0)
    assert det.sample_indices.size == 60  # corpus smaller than n_samples: all essays


def _expected_random_ndcg(X, queries, k):
    """Exact expectation of NDCG@k when the paraphrase ranking is a random order.

    For a uniformly random order every position holds a uniformly random essay,
    so E[DCG@k] = mean(relevance) * sum of the first k discounts.
    """
    S = cosine_similarity(X)
    out = []
    for i in queries:
        rel = np.delete(S[i], i)
        rel = rel - rel.min()
        m = rel.size if k is None else min(k, rel.size)
        disc = 1 / np.log2(np.arange(2, m + 2))
        ideal = np.sort(rel)[::-1][:m] @ disc
        out.append(rel.mean() * disc.sum() / ideal)
    return np.array(out)


def test_random_paraphrases_score_like_a_random_ranking():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(600, 64))
    Xp = rng.normal(size=(600, 64))  # unrelated to X: a random ranking
    det = paraphrase_ndcg(X, Xp, return_details=True, random_state=0)
    q = det.sample_indices
    exp10 = _expected_random_ndcg(X, q, 10).mean()
    exp_full = _expected_random_ndcg(X, q, None).mean()
    se10 = det.ndcg_at_10_std / np.sqrt(q.size)
    se_full = det.ndcg_std / np.sqrt(q.size)
    assert abs(det.ndcg_at_10 - exp10) < 4 * se10
    assert abs(det.ndcg - exp_full) < 4 * se_full
    assert 0.4 < det.ndcg_at_10 < 0.65  # about one half
    assert 0.88 < det.ndcg < 0.95  # whole-ranking NDCG stays high even here
    assert abs(det.spearman) < 4 / np.sqrt(599) / np.sqrt(q.size) + 0.01


def test_noise_lowers_the_ranking_quality(rng):
    X = rng.normal(size=(200, 32))
    scores = [
        paraphrase_ndcg(X, X + s * rng.normal(size=X.shape), return_details=True,
                        random_state=0).spearman
        for s in (0.1, 0.5, 2.0)
    ]  # fmt: skip
    assert scores[0] > scores[1] > scores[2]


def test_degenerate_original_distances_warn():
    X = np.eye(8)  # every essay is equally far from every other
    Xp = np.random.default_rng(0).normal(size=(8, 8))
    with pytest.warns(UndefinedMetricWarning, match="8 of 8 query essays"):
        det = paraphrase_ndcg(X, Xp, return_details=True)
    assert det.ndcg == 1.0 and det.ndcg_at_10 == 1.0
    assert det.spearman == 0.0 and det.n_undefined == 8


def test_precomputed_and_other_metrics(rng):
    from sklearn.metrics import pairwise_distances

    X = rng.normal(size=(40, 5))
    Xp = X + 0.3 * rng.normal(size=X.shape)
    by_name = paraphrase_ndcg(X, Xp, metric="euclidean", return_details=True)
    pre = paraphrase_ndcg(
        pairwise_distances(X), pairwise_distances(Xp), metric="precomputed",
        return_details=True,
    )  # fmt: skip
    np.testing.assert_allclose(pre.ndcg_per_essay, by_name.ndcg_per_essay, rtol=1e-9)
    np.testing.assert_allclose(
        pre.spearman_per_essay, by_name.spearman_per_essay, rtol=1e-9
    )


def test_bad_input(rng):
    X = rng.normal(size=(10, 4))
    with pytest.raises(ValueError, match="X_original has 10, X_paraphrased has 9"):
        paraphrase_ndcg(X, X[:9])
    with pytest.raises(ValueError, match="X_paraphrased contains NaN"):
        paraphrase_ndcg(X, np.full_like(X, np.nan))
    with pytest.raises(ValueError, match="X_original must be 2-D"):
        paraphrase_ndcg(X[:, 0], X)
    with pytest.raises(ValueError, match="at least 2 essays"):
        paraphrase_ndcg(X[:1], X[:1])
    with pytest.raises(ValueError, match="at least 3 essays"):
        paraphrase_ndcg(X[:2], X[:2])
    with pytest.raises(ValueError, match="n_samples must be at least 1"):
        paraphrase_ndcg(X, X, n_samples=0)
    with pytest.raises(ValueError, match="k must be at least 1"):
        paraphrase_ndcg(X, X, k=0)
    with pytest.raises(TypeError, match="numeric matrix"):
        paraphrase_ndcg(X.astype(str), X)


corpora = st.integers(4, 10).flatmap(
    lambda n: st.tuples(
        arrays(np.float64, (n, 3), elements=st.floats(-5, 5, allow_subnormal=False)),
        arrays(np.float64, (n, 3), elements=st.floats(-5, 5, allow_subnormal=False)),
        st.permutations(range(n)),
        arrays(np.float64, n, elements=st.floats(0.5, 20)),
    )
)


@settings(max_examples=50, deadline=None)
@given(corpora)
def test_properties(case):
    X, Xp, perm, scale = case
    perm = np.asarray(perm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        det = paraphrase_ndcg(X, Xp, return_details=True)
        permuted = paraphrase_ndcg(X[perm], Xp[perm], return_details=True)
        scaled = paraphrase_ndcg(X * scale[:, None], Xp, return_details=True)
    assert 0.0 <= det.ndcg <= 1.0 + 1e-12 and 0.0 <= det.ndcg_at_10 <= 1.0 + 1e-12
    assert -1.0 - 1e-12 <= det.spearman <= 1.0 + 1e-12
    # all essays are queries here, so permuting them only reorders the queries;
    # near-ties in distance may reorder under rounding, hence the tolerance
    assert permuted.ndcg == pytest.approx(det.ndcg, abs=1e-6)
    assert scaled.ndcg == pytest.approx(det.ndcg, abs=1e-6)
