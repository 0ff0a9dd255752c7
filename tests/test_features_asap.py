"""InterpretableFeatures on all 1,569 essays of ASAP prompt 7 (slow).

The Spearman correlations with ``domain1_score`` must have the expected sign and
a clear size (recorded in docs/features.md): longer essays with more distinct
words score higher, essays with more spelling errors per word lower.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PROMPT7
from lt_server import LoopbackLanguageTool
from scipy.stats import spearmanr

from sklearn_fairaes.features import InterpretableFeatures

pytestmark = pytest.mark.slow


def _scores(asap7):
    return asap7["domain1_score"].astype(float).to_numpy()


def test_spearman_signs_on_prompt7(asap7):
    feats = InterpretableFeatures(
        features=["answer_length", "word_count", "spelling_errors", "unique_words"],
        normalize={"spelling_errors": "per_word"},
    )
    X = feats.fit_transform(asap7["essay"])
    y = _scores(asap7)
    rho = {name: spearmanr(X[:, j], y).statistic for j, name in
           enumerate(feats.get_feature_names_out())}  # fmt: skip
    assert X.shape == (1569, 4)
    # measured: 0.695, 0.682, 0.718, -0.178 (docs/features.md)
    assert rho["answer_length"] > 0.5
    assert rho["word_count"] > 0.5
    assert rho["unique_words"] > 0.5
    assert rho["spelling_errors_per_word"] < -0.1


def test_good_pos_ngrams_generalise_to_held_out_essays(asap7):
    essays = list(asap7["essay"])
    y = _scores(asap7)
    train, test = slice(0, 1000), slice(1000, None)
    feats = InterpretableFeatures(features=["good_pos_ngrams"])
    feats.fit(essays[train], y[train])
    share = feats.transform(essays[test])[:, 0]
    assert len(feats.good_pos_ngrams_) > 50
    assert spearmanr(share, y[test]).statistic > 0.3


@pytest.mark.network
def test_n_jobs_gives_the_same_features(asap7):
    essays = list(asap7["essay"].iloc[:140])
    y = _scores(asap7)[:140]
    with LoopbackLanguageTool() as lt:
        common = dict(
            prompt=PROMPT7,
            features=["word_count", "good_pos_ngrams", "prompt_overlap_synonyms",
                      "spelling_errors", "prompt_similarity_bow", "language_errors"],
            grammar=lt.url,
        )  # fmt: skip
        one = InterpretableFeatures(**common).fit_transform(essays, y)
        two = InterpretableFeatures(**common, n_jobs=2).fit_transform(essays, y)
    np.testing.assert_array_equal(one, two)
