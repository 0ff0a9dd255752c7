"""Fairness-aware model selection: sklearn's searches with a fairness selection rule."""

from ._search import (
    FairGridSearchCV,
    FairnessConstraintWarning,
    FairRandomizedSearchCV,
    FairRefit,
    fair_refit,
    pareto_front,
)

__all__ = [
    "FairGridSearchCV",
    "FairRandomizedSearchCV",
    "FairRefit",
    "FairnessConstraintWarning",
    "fair_refit",
    "pareto_front",
]
