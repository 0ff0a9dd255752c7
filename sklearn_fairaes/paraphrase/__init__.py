"""Paraphrases of essays, for checking that representations survive them (§5.2)."""

from ._wordnet import EXTRA_STOP_WORDS, WordEdit, WordNetParaphraser

__all__ = ["EXTRA_STOP_WORDS", "WordEdit", "WordNetParaphraser"]
