"""Tiny scoring functions for the examples and tests of FunctionScorer."""

from __future__ import annotations

__all__ = ["n_words"]


def n_words(texts: list[str]) -> list[int]:
    """The number of words of each text (a stand-in for a real scorer)."""
    return [len(t.split()) for t in texts]
