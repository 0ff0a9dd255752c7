"""What every neural essay encoder shares: validation, caching, feature names.

A subclass implements ``_load()`` (set fitted attributes, including
``embedding_dim_``), ``_identity()`` (everything that changes its output) and
``_encode(texts)`` (the real work, on texts not in the cache).
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import check_essays
from ._cache import EmbeddingCache, get_cache

_Encoder = TypeVar("_Encoder", bound="_BaseEssayEncoder")


class _BaseEssayEncoder(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    # set by each subclass's __init__ (a parameter) and by _load (fitted)
    cache: bool | str | os.PathLike[str] | EmbeddingCache | None
    embedding_dim_: int

    def fit(self: _Encoder, X: ArrayLike, y: object = None) -> _Encoder:
        """Load the model and record its output size; no learning happens.

        Parameters
        ----------
        X : list, array or pandas Series of str
            The essays (validated, otherwise unused); at least one, as
            sklearn's estimators require.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted encoder.
        """
        check_essays(X, min_essays=1)
        self._validate_encoder_params()
        self._load()
        return self

    def transform(self, X: ArrayLike) -> NDArray[Any]:
        """Embed the essays.

        Parameters
        ----------
        X : list, array or pandas Series of str
            Empty strings are allowed: they get the model's embedding of "".

        Returns
        -------
        embeddings : ndarray of shape (n_essays, embedding_dim_), or DataFrame
            One row per essay; a DataFrame with ``set_output(transform="pandas")``.
        """
        check_is_fitted(self, "embedding_dim_")
        essays = check_essays(X)
        return self._transform(essays)

    def _transform(self, essays: list[str]) -> NDArray[Any]:
        if not essays:
            return np.empty((0, self.embedding_dim_), dtype=np.float32)
        cache = get_cache(self.cache)
        if cache is None:
            return np.asarray(self._encode(essays))
        return cache.get_or_compute(
            self._identity(),
            essays,
            self._encode,
            dim=self.embedding_dim_,
            about=self._about(),
        )

    def _about(self) -> dict[str, Any]:
        # for people reading a disk cache (`fairaes cache info`), not part of
        # the key: the class, what was loaded and the parameters as text
        params = {k: str(v) for k, v in self.get_params().items() if k != "cache"}
        # an encoder without a model parameter (LASER) is told apart by its options
        model = (
            getattr(self, "model_path_", None)
            or params.get("model")
            or ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
        )
        return {
            "encoder": type(self).__name__,
            "model": str(model),
            "dim": self.embedding_dim_,
            "params": params,
        }

    def _load(self) -> None:
        raise NotImplementedError

    def _identity(self) -> dict[str, Any]:
        raise NotImplementedError

    def _encode(self, texts: list[str]) -> NDArray[Any]:
        raise NotImplementedError

    @property
    def _n_features_out(self) -> int:
        return self.embedding_dim_

    def _validate_encoder_params(self) -> None:
        cache = self.cache
        # the types transform's get_cache accepts, checked here so that fit fails
        # rather than a later transform (an object that merely looks like a cache
        # is refused by both)
        if not (
            cache is None or isinstance(cache, (bool, str, os.PathLike, EmbeddingCache))
        ):
            get_cache(cache)  # raises the TypeError naming the accepted types

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = True
        return tags
