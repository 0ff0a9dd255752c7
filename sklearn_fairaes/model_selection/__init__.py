"""Fairness-aware model selection: sklearn's searches with a fairness selection rule."""

from ._search import (
    FairGridSearchCV,
    FairnessConstraintWarning,
    FairRandomizedSearchCV,
    pareto_front,
)

__all__ = [
    "FairGridSearchCV",
    "FairRandomizedSearchCV",
    "FairnessConstraintWarning",
    "pareto_front",
]
