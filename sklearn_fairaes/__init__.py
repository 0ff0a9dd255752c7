"""sklearn_fairaes: are similar essays scored similarly?

Individual-fairness evaluation for automated essay and short-answer scoring,
as a scikit-learn extension. Importing the package is light: torch,
sentence-transformers, spaCy and matplotlib load only when a feature that
needs them is used.
"""

from ._version import __version__
from .metrics import (
    FairnessScorer,
    agreement_rate,
    agreement_report,
    difference_of_standardized_means,
    extreme_pairs,
    feature_difference_profile,
    get_scorer,
    get_scorer_names,
    lipschitz_fraction,
    make_fairness_scorer,
    mean_qwk,
    paraphrase_ndcg,
    qwk,
    qwk_degradation,
    score_distance_curve,
    standardized_mean_difference,
    weighted_rmse,
)
from .text import (
    BowVectorizer,
    EmbeddingCache,
    LaserEncoder,
    SentenceBertEncoder,
    TfidfEssayVectorizer,
)

__all__ = [
    "__version__",
    # representations
    "BowVectorizer",
    "EmbeddingCache",
    "LaserEncoder",
    "SentenceBertEncoder",
    "TfidfEssayVectorizer",
    # metrics
    "FairnessScorer",
    "agreement_rate",
    "agreement_report",
    "difference_of_standardized_means",
    "extreme_pairs",
    "feature_difference_profile",
    "get_scorer",
    "get_scorer_names",
    "lipschitz_fraction",
    "make_fairness_scorer",
    "mean_qwk",
    "paraphrase_ndcg",
    "qwk",
    "qwk_degradation",
    "score_distance_curve",
    "standardized_mean_difference",
    "weighted_rmse",
]
