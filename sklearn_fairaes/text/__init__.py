"""Essay representations: BOW, TF-IDF, Sentence-BERT, LASER, and the embedding cache."""

from ._cache import EmbeddingCache, get_cache
from ._laser import LaserEncoder, load_laser, split_sentences
from ._sbert import SentenceBertEncoder, load_sentence_transformer
from ._vectorizers import BowVectorizer, TfidfEssayVectorizer

__all__ = [
    "BowVectorizer",
    "EmbeddingCache",
    "LaserEncoder",
    "SentenceBertEncoder",
    "TfidfEssayVectorizer",
    "get_cache",
    "load_laser",
    "load_sentence_transformer",
    "split_sentences",
]
