"""Tiny scoring functions for the examples and tests of FunctionScorer."""

from __future__ import annotations

__all__ = ["length_points", "n_words"]


def n_words(texts: list[str]) -> list[int]:
    """The number of words of each text (a stand-in for a real scorer)."""
    return [len(t.split()) for t in texts]


def length_points(texts: list[str]) -> list[int]:
    """A point per 25 words, at most 12: a stand-in scorer on a 0-12 scale."""
    return [min(12, len(t.split()) // 25) for t in texts]
