"""Fitted models that fail the way users' models do, for the ``--model-file`` tests.

They live in a module of their own so that a model pickled with joblib by a
test can be loaded again by the command (unpickling imports the class).
"""

from __future__ import annotations

import sys

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

__all__ = ["Fails", "KnownTextsOnly"]


class Fails(BaseEstimator, RegressorMixin):
    """``predict`` raises a RuntimeError (``how="raise"``) or calls ``sys.exit(0)``."""

    def __init__(self, how="raise"):
        self.how = how

    def fit(self, X, y=None):
        self.fitted_ = True
        return self

    def predict(self, X):
        if self.how == "exit":
            sys.exit(0)
        raise RuntimeError("CUDA out of memory (simulated)")


class KnownTextsOnly(BaseEstimator, RegressorMixin):
    """Scores the texts it was fitted on (by length); an edited text is ``unseen``.

    ``unseen="nan"`` predicts NaN for it, ``"raise"`` raises a ValueError (a
    model with a length limit, say), ``"exit"`` calls ``sys.exit(0)``, and
    ``"short"`` returns one score too few for a call with an unseen text.
    """

    def __init__(self, unseen="nan"):
        self.unseen = unseen

    def fit(self, X, y=None):
        self.seen_ = frozenset(X)
        return self

    def predict(self, X):
        known = [x in self.seen_ for x in X]
        if not all(known):
            if self.unseen == "raise":
                raise ValueError("input exceeds the model's maximum length")
            if self.unseen == "exit":
                sys.exit(0)
        scores = np.array(
            [min(12.0, len(x) / 100) if k else np.nan for x, k in zip(X, known)]
        )
        return scores[:-1] if self.unseen == "short" and not all(known) else scores
