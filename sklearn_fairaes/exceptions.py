"""Warnings and errors raised by sklearn_fairaes.

Each undefined or degraded result has its own warning class, so users can
filter exactly the one they expect (``warnings.filterwarnings("ignore",
category=UndefinedMetricWarning)``) without hiding the others.
"""

from sklearn.exceptions import UndefinedMetricWarning

from .resources import ResourceNotFoundError

__all__ = [
    "CacheCorruptionWarning",
    "LongTextWarning",
    "ResourceNotFoundError",
    "UndefinedMetricWarning",
]


class LongTextWarning(UserWarning):
    """Some essays are longer than the encoder's window and were truncated."""


class CacheCorruptionWarning(UserWarning):
    """A cached embedding on disk was unreadable or corrupt and is recomputed."""
