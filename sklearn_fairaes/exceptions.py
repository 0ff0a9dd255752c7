"""Warnings and errors raised by sklearn_fairaes.

Each undefined or degraded result has its own warning class, so users can
filter exactly the one they expect (``warnings.filterwarnings("ignore",
category=UndefinedMetricWarning)``) without hiding the others.
"""

from __future__ import annotations

from sklearn.exceptions import UndefinedMetricWarning

from .resources import ResourceNotFoundError

__all__ = [
    "CacheCorruptionWarning",
    "CacheWriteWarning",
    "LongTextWarning",
    "ResourceNotFoundError",
    "UndefinedMetricWarning",
]


class LongTextWarning(UserWarning):
    """Some essays are longer than the encoder's window and were truncated.

    Examples
    --------
    Silence it for one block of code, and no other warning:

    >>> import warnings
    >>> from sklearn_fairaes.exceptions import LongTextWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", category=LongTextWarning)
    ...     warnings.warn("essay 3 was truncated", LongTextWarning)
    >>> issubclass(LongTextWarning, UserWarning)
    True
    """


class CacheCorruptionWarning(UserWarning):
    """A cached embedding on disk was unreadable or corrupt and is recomputed.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_fairaes.exceptions import CacheCorruptionWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("cache entry unreadable; recomputed", CacheCorruptionWarning)
    >>> caught[0].category is CacheCorruptionWarning
    True
    """


class CacheWriteWarning(UserWarning):
    """A cache folder cannot be written; results are unchanged, only not kept.

    The embedding cache emits it once per cache object: entries already in
    the folder are still read, new ones stay in memory. The review metrics
    emit it once per process when numba (the ``fast`` extra) finds no writable
    folder for its cache: the review kernel is then compiled in every process
    (set ``NUMBA_CACHE_DIR``).

    Examples
    --------
    >>> import warnings
    >>> from sklearn_fairaes.exceptions import CacheWriteWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("cache folder is read-only", CacheWriteWarning)
    >>> caught[0].category is CacheWriteWarning
    True
    """
