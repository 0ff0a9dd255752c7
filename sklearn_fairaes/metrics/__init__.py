"""Metrics: agreement, group and individual fairness, ranking, grading, and scorers.

Every metric has scikit-learn's form: ``metric(y_true, y_pred, *, ...)`` for
agreement and grading, ``metric(X, y_pred, *, ...)`` for pair metrics (``X``
is the essays' representation, one row per essay), keyword-only options, and a
Python ``float`` result (a fraction, never a percentage); group metrics take
the writers' group labels as ``groups=`` and return tables. ``*_score`` and plain
names are higher-is-better; ``*_error``/``*_difference`` are signed or
lower-is-better as documented. All pair metrics share one pairwise engine that
walks the upper triangle of pairs in blocks, never holding N x N (the private
package ``_pairs``); an engine built once can be passed as ``X`` to several
metrics, which then share its work (see :func:`lipschitz_fraction`).
"""

from ._agreement import (
    agreement_rate,
    agreement_report,
    difference_of_standardized_means,
    mean_qwk,
    qwk,
    qwk_degradation,
    standardized_mean_difference,
)
from ._grading import weighted_rmse
from ._group import fairness_analyses, group_agreement_report, group_lipschitz_fraction
from ._individual import (
    extreme_pairs,
    feature_difference_profile,
    lipschitz_fraction,
    score_distance_curve,
)
from ._pairs._engine import condensed_distances
from ._prmse import prmse
from ._ranking import paraphrase_ndcg
from ._review import essay_consistency, lipschitz_profile, lipschitz_violations
from ._scorer import FairnessScorer, get_scorer, get_scorer_names, make_fairness_scorer

__all__ = [
    "FairnessScorer",
    "agreement_rate",
    "agreement_report",
    "condensed_distances",
    "difference_of_standardized_means",
    "essay_consistency",
    "extreme_pairs",
    "fairness_analyses",
    "feature_difference_profile",
    "get_scorer",
    "get_scorer_names",
    "group_agreement_report",
    "group_lipschitz_fraction",
    "lipschitz_fraction",
    "lipschitz_profile",
    "lipschitz_violations",
    "make_fairness_scorer",
    "mean_qwk",
    "paraphrase_ndcg",
    "prmse",
    "qwk",
    "qwk_degradation",
    "score_distance_curve",
    "standardized_mean_difference",
    "weighted_rmse",
]
