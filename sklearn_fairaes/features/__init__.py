"""Interpretable essay features: the paper's twelve (its §5.1.1, Table 1).

:class:`InterpretableFeatures` computes them; its components (tokenizer, spell
checker, LanguageTool client, POS tagger) live in private modules and are
documented there and in ``docs/features.md``.
"""

from ._interpretable import FEATURE_NAMES, InterpretableFeatures

__all__ = ["FEATURE_NAMES", "InterpretableFeatures"]
