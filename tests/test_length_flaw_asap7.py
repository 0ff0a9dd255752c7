"""Issue 33's deliberate flaw on real essays: the audit must not reward it, and must name it.

ASAP prompt 7: a "fixed" engine (out-of-fold ridge on TF-IDF, rounded) and a
"flawed" one that gives essays under 150 words 3 more points. The flaw
narrows the score spread, which alone makes the paper's min-max Lipschitz
fraction rank the flawed engine fairer; the spread-aware figures must rank
the fixed engine fairer, and the error section must point at length with no
hypothesis given (no covariate named). One audit serves both checks.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from conftest import ASAP7, require_file

import sklearn_fairaes as sf

pytestmark = pytest.mark.slow

LENGTH_FEATURES = {"word_count", "answer_length", "unique_words"}


@pytest.fixture(scope="module")
def flaw():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import KFold, cross_val_predict

    d = pd.read_csv(require_file(ASAP7), sep="\t", encoding="utf-8-sig", dtype=str,
                    keep_default_na=False)  # fmt: skip
    human = d["domain1_score"].astype(float).to_numpy()
    X = TfidfVectorizer().fit_transform(d["essay"])
    folds = KFold(5, shuffle=True, random_state=0)
    fixed = np.clip(np.rint(cross_val_predict(Ridge(), X, human, cv=folds)), 0, 24)
    short = d["essay"].str.split().str.len().to_numpy() < 150
    d["fixed"], d["flawed"] = fixed, np.clip(fixed + 3 * short, 0, 24)
    result = sf.audit(
        d, text_col="essay", score_col="domain1_score", id_col="essay_id",
        systems=["fixed", "flawed"], score_range=(0, 24), representations=["tfidf"],
        # the essays as their own paraphrases: no WordNet run, which neither check reads
        paraphrases="essay", sections=["lipschitz", "errors"], n_bootstrap=200,
    )  # fmt: skip
    return result, short


def test_spread_aware_figures_rank_the_fixed_engine_fairer(flaw):
    result, short = flaw
    lip = result.tables["lipschitz"].set_index("system")
    rel = result.tables["relative_fairness"].set_index("system")
    # the flaw narrows the spread ...
    assert lip.loc["flawed", "score_sd"] < lip.loc["fixed", "score_sd"]
    # ... which alone makes the paper's fraction rank the flawed engine fairer
    assert lip.loc["flawed", "lipschitz_minmax"] > lip.loc["fixed", "lipschitz_minmax"]
    # the spread-aware figures rank the fixed engine fairer
    assert lip.loc["fixed", "lipschitz_matched"] > lip.loc["flawed", "lipschitz_matched"]
    assert (
        rel.loc["fixed", "neighbor_spread_ratio"]
        < rel.loc["flawed", "neighbor_spread_ratio"]
    )
    assert (
        rel.loc["fixed", "error_inconsistency"] < rel.loc["flawed", "error_inconsistency"]
    )
    # and the difference is beyond the bootstrap's reach: the paired difference
    # of the spread-matched fractions excludes 0, as does the error gap's interval
    diffs = result.tables["system_differences"]
    matched = diffs[(diffs["figure"] == "lipschitz_matched") & (diffs["system_a"] == "fixed")
                    & (diffs["system_b"] == "flawed")].iloc[0]  # fmt: skip
    assert matched["ci_low"] > 0 and matched["p_value"] < 0.05
    assert (
        rel.loc["flawed", "error_inconsistency"]
        > rel.loc["fixed", "error_inconsistency_ci_high"]
    )
    # the essays a committee reads first are mostly the lifted short ones
    listed = result.tables["error_review"]
    flawed = listed[listed["system"] == "flawed"]
    assert short[flawed["row"].to_numpy() - 1].mean() > 0.5


def test_error_section_names_length_without_a_hypothesis(flaw):
    result, _ = flaw
    corr = result.tables["error_correlates"]
    top = corr[corr["system"] == "flawed"].iloc[0]
    assert top["variable"] in LENGTH_FEATURES and top["pearson_r"] < 0
    # the flaw, not the engine's shrinkage alone: much stronger than the fixed engine's
    r = corr.set_index(["system", "variable"])["pearson_r"]
    assert r["flawed", "word_count"] < r["fixed", "word_count"] - 0.15
    bins = result.tables["error_bins"].set_index(["system", "variable", "bin"])
    jump = bins.loc[("flawed", "word_count", 1), "mean_error"] - bins.loc[
        ("fixed", "word_count", 1), "mean_error"]  # fmt: skip
    assert jump > 2.5  # the shortest fifth: all under 150 words
    sentence = re.search(r"flawed: the error falls by [\d.]+ points per SD of ([a-z ]+) \(r",
                         result.to_html())  # fmt: skip
    assert sentence and sentence.group(1).replace(" ", "_") in LENGTH_FEATURES
