"""The paper's bag-of-words and TF-IDF essay representations (its §4.2.1-4.2.2).

Both extend scikit-learn's ``CountVectorizer`` / ``TfidfVectorizer`` and only
change their text preparation: keep letters only, lower-case, lemmatize each
token with NLTK's WordNet lemmatizer, keep stop words, unigrams + bigrams, and
drop terms found in fewer than three essays. On ASAP prompt 7 this gives a
vocabulary close to the paper's 14,974 terms (see ``tests/test_vectorizers.py``).
"""

from __future__ import annotations

import functools
import re

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.utils.validation import check_is_fitted

from .._validation import check_essays

__all__ = ["BowVectorizer", "TfidfEssayVectorizer"]

_NON_LETTERS = re.compile(r"[^A-Za-z]+")


@functools.lru_cache(maxsize=1)
def _lemmatizer():
    from nltk.stem import WordNetLemmatizer

    from ..resources import ensure_wordnet

    ensure_wordnet()
    wnl = WordNetLemmatizer()
    # Essays repeat words endlessly; memoising the lookup makes lemmatization
    # ~50x cheaper than calling WordNet per token.
    return functools.lru_cache(maxsize=500_000)(wnl.lemmatize)


def _letters_only(doc):
    return _NON_LETTERS.sub(" ", doc)


class _LemmatizingTokenizer:
    """Picklable tokenizer: the base token pattern, then WordNet lemmas."""

    def __init__(self, base):
        self.base = base

    def __call__(self, doc):
        lemma = _lemmatizer()
        return [lemma(tok) for tok in self.base(doc)]


class _Compose:
    def __init__(self, first, second):
        self.first, self.second = first, second

    def __call__(self, doc):
        return self.second(self.first(doc))


class _EssayTextMixin:
    """Text preparation, validation and pandas output shared by both vectorizers."""

    def build_preprocessor(self):
        """Lower-case/strip accents as sklearn does, then keep letters only."""
        base = super().build_preprocessor()
        if not self.letters_only:
            return base
        return _Compose(base, _letters_only)

    def build_tokenizer(self):
        """sklearn's token pattern, then WordNet lemmatization when asked."""
        base = super().build_tokenizer()
        if not self.lemmatize:
            return base
        return _LemmatizingTokenizer(base)

    # sklearn's parameter name ``raw_documents`` is kept: its metadata-routing
    # declarations refer to it.
    def fit(self, raw_documents, y=None):
        """Learn the vocabulary (and IDF weights) from the essays.

        Parameters
        ----------
        raw_documents : list, array or pandas Series of str
            The essays. Empty strings are allowed.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        self.fit_transform(raw_documents, y)
        return self

    def fit_transform(self, raw_documents, y=None):
        """Learn the vocabulary and return the essay-term matrix.

        Parameters
        ----------
        raw_documents : list, array or pandas Series of str
        y : None
            Ignored.

        Returns
        -------
        X_new : sparse matrix of shape (n_essays, n_terms), or DataFrame
        """
        essays = check_essays(raw_documents)
        out = super().fit_transform(essays)
        return self._wrap(out, raw_documents)

    def transform(self, raw_documents):
        """Represent essays with the learned vocabulary.

        Parameters
        ----------
        raw_documents : list, array or pandas Series of str

        Returns
        -------
        X_new : sparse matrix of shape (n_essays, n_terms), or DataFrame
            An essay with no known term is a row of zeros.
        """
        check_is_fitted(self, "vocabulary_")
        essays = check_essays(raw_documents)
        return self._wrap(super().transform(essays), raw_documents)

    def set_output(self, *, transform=None):
        """Choose the output container of ``transform`` and ``fit_transform``.

        Parameters
        ----------
        transform : {"default", "pandas"}, default=None
            ``"pandas"`` returns a DataFrame with sparse columns named by
            :meth:`get_feature_names_out`; ``"default"`` a scipy sparse matrix;
            None leaves the choice unchanged.

        Returns
        -------
        self : object
        """
        if transform is None:
            return self
        if transform not in ("default", "pandas"):
            raise ValueError(
                f"transform must be 'default' or 'pandas' for {type(self).__name__} "
                f"(its output is sparse), got {transform!r}"
            )
        self._sklearn_output_config = {"transform": transform}
        return self

    def _wrap(self, out, original):
        config = getattr(self, "_sklearn_output_config", {}).get("transform")
        if config is None:
            import sklearn

            config = sklearn.get_config().get("transform_output", "default")
        if config != "pandas":
            return out
        from ..resources import require

        pd = require("pandas", purpose="pandas output")
        # a list has an ``index`` method: only a pandas index counts
        index = getattr(original, "index", None) if hasattr(original, "iloc") else None
        frame = pd.DataFrame.sparse.from_spmatrix(out, columns=self.get_feature_names_out())
        if index is not None and len(index) == frame.shape[0]:
            frame.index = index
        return frame


_COMMON_DOC = """
    Parameters
    ----------
    letters_only : bool, default=True
        Replace every character that is not an ASCII letter by a space before
        tokenizing (the paper removed all non-letter characters).
    lemmatize : bool, default=True
        Replace each token by its WordNet lemma (NLTK's ``WordNetLemmatizer``,
        noun reading). WordNet is found through :mod:`sklearn_fairaes.resources`.
    lowercase : bool, default=True
    strip_accents : {"ascii", "unicode"} or None, default=None
    stop_words : {"english"}, list or None, default=None
        None keeps stop words, as the paper did.
    token_pattern : str, default=r"(?u)\\b\\w\\w+\\b"
        sklearn's default; tokens of one letter are dropped.
    ngram_range : tuple (min_n, max_n), default=(1, 2)
    max_df : float or int, default=1.0
    min_df : float or int, default=3
        Ignore terms found in fewer than this many essays.
    max_features : int, default=None
    vocabulary : mapping or iterable, default=None
    binary : bool, default=False
    dtype : dtype, default={dtype}
"""


class BowVectorizer(_EssayTextMixin, CountVectorizer):
    __doc__ = (
        """Bag-of-words essay vectors (n-gram counts), the paper's BOW.

    A ``CountVectorizer`` whose defaults follow the paper's §4.2.1.
"""
        + _COMMON_DOC.replace("{dtype}", "numpy.int64")
        + """
    Attributes
    ----------
    vocabulary_ : dict
        Term -> column index.

    Examples
    --------
    >>> from sklearn_fairaes import BowVectorizer
    >>> essays = ["The cars were waiting.", "A car was waiting!", "Cars wait."]
    >>> bow = BowVectorizer(min_df=1, ngram_range=(1, 1)).fit(essays)
    >>> bow.get_feature_names_out().tolist()
    ['car', 'the', 'wa', 'wait', 'waiting', 'were']
    >>> bow.transform(["cars cars"]).toarray().tolist()
    [[2, 0, 0, 0, 0, 0]]
    """
    )

    _parameter_constraints = {
        **CountVectorizer._parameter_constraints,
        "letters_only": ["boolean"],
        "lemmatize": ["boolean"],
    }

    def __init__(
        self,
        *,
        letters_only=True,
        lemmatize=True,
        lowercase=True,
        strip_accents=None,
        stop_words=None,
        token_pattern=r"(?u)\b\w\w+\b",
        ngram_range=(1, 2),
        max_df=1.0,
        min_df=3,
        max_features=None,
        vocabulary=None,
        binary=False,
        dtype=np.int64,
    ):
        super().__init__(
            lowercase=lowercase,
            strip_accents=strip_accents,
            stop_words=stop_words,
            token_pattern=token_pattern,
            ngram_range=ngram_range,
            max_df=max_df,
            min_df=min_df,
            max_features=max_features,
            vocabulary=vocabulary,
            binary=binary,
            dtype=dtype,
        )
        self.letters_only = letters_only
        self.lemmatize = lemmatize


class TfidfEssayVectorizer(_EssayTextMixin, TfidfVectorizer):
    __doc__ = (
        """TF-IDF essay vectors, the paper's TF-IDF (its §4.2.2).

    A ``TfidfVectorizer`` with the same text preparation as
    :class:`BowVectorizer`: smoothed IDF, rows scaled to unit Euclidean norm.
"""
        + _COMMON_DOC.replace("{dtype}", "numpy.float64")
        + """    norm : {"l1", "l2"} or None, default="l2"
    use_idf : bool, default=True
    smooth_idf : bool, default=True
    sublinear_tf : bool, default=False

    Attributes
    ----------
    vocabulary_ : dict
    idf_ : ndarray of shape (n_terms,)

    Examples
    --------
    >>> from sklearn_fairaes import TfidfEssayVectorizer
    >>> essays = ["The cars were waiting.", "A car was waiting!", "Cars wait."]
    >>> X = TfidfEssayVectorizer(min_df=1).fit_transform(essays)
    >>> X.shape
    (3, 12)
    >>> round(float((X.multiply(X)).sum(axis=1)[0, 0]), 6)
    1.0
    """
    )

    _parameter_constraints = {
        **TfidfVectorizer._parameter_constraints,
        "letters_only": ["boolean"],
        "lemmatize": ["boolean"],
    }

    def __init__(
        self,
        *,
        letters_only=True,
        lemmatize=True,
        lowercase=True,
        strip_accents=None,
        stop_words=None,
        token_pattern=r"(?u)\b\w\w+\b",
        ngram_range=(1, 2),
        max_df=1.0,
        min_df=3,
        max_features=None,
        vocabulary=None,
        binary=False,
        dtype=np.float64,
        norm="l2",
        use_idf=True,
        smooth_idf=True,
        sublinear_tf=False,
    ):
        super().__init__(
            lowercase=lowercase,
            strip_accents=strip_accents,
            stop_words=stop_words,
            token_pattern=token_pattern,
            ngram_range=ngram_range,
            max_df=max_df,
            min_df=min_df,
            max_features=max_features,
            vocabulary=vocabulary,
            binary=binary,
            dtype=dtype,
            norm=norm,
            use_idf=use_idf,
            smooth_idf=smooth_idf,
            sublinear_tf=sublinear_tf,
        )
        self.letters_only = letters_only
        self.lemmatize = lemmatize
