"""sklearn_fairaes: are similar essays scored similarly?

Individual-fairness evaluation for automated essay and short-answer scoring,
as a scikit-learn extension. Importing the package is light: torch,
sentence-transformers, spaCy and matplotlib load only when a feature that
needs them is used.
"""

from ._version import __version__
from .text import (
    BowVectorizer,
    EmbeddingCache,
    LaserEncoder,
    SentenceBertEncoder,
    TfidfEssayVectorizer,
)

__all__ = [
    "__version__",
    "BowVectorizer",
    "EmbeddingCache",
    "LaserEncoder",
    "SentenceBertEncoder",
    "TfidfEssayVectorizer",
]
