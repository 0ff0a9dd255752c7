"""The paper's bag-of-words and TF-IDF essay representations (its §4.2.1-4.2.2).

Both extend scikit-learn's ``CountVectorizer`` / ``TfidfVectorizer`` and only
change their text preparation: keep letters only, lower-case, lemmatize each
token with NLTK's WordNet lemmatizer, keep stop words, unigrams + bigrams, and
drop terms found in fewer than three essays. On ASAP prompt 7 this gives a
vocabulary close to the paper's 14,974 terms (see ``tests/test_vectorizers.py``).

"Letters" are the paper's ASCII letters by default (``letters="ascii"``), which
turns Chinese, Russian or Arabic essays into zero vectors and "café" into
"caf". ``letters="unicode"`` keeps every Unicode letter instead: the text is
repaired (mis-decoded punctuation, curly apostrophes, as for the interpretable
features) and NFC-normalised, every character that is neither a letter nor a
combining mark becomes a space, and a token is a run of letters and marks with
at least two letters. Digits are not letters in either mode.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.utils.validation import check_is_fitted

from .._param_validation import Options, check_params
from .._validation import check_essays

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

    # sklearn has no type information, so CountVectorizer is Any to mypy: as a
    # base it lets the mixin call the vectorizer methods it extends via super().
    from sklearn.feature_extraction.text import CountVectorizer as _VectorizerBase
else:
    _VectorizerBase = object

__all__ = ["BowVectorizer", "TfidfEssayVectorizer"]

_NON_LETTERS = re.compile(r"[^A-Za-z]+")


@functools.lru_cache(maxsize=1)
def _lemmatizer() -> Callable[[str], str]:
    from ..resources import wordnet_reader

    # WordNet read where it lies, without downloading, writing or touching
    # nltk.data.path (fit has no side effects; `fairaes setup` installs);
    # missing, a ResourceNotFoundError (a LookupError) says how to get it
    morphy = wordnet_reader()._morphy

    def lemmatize(word: str) -> str:
        # NLTK's WordNetLemmatizer.lemmatize(word), on this reader
        lemmas = morphy(word, "n")
        return min(lemmas, key=len) if lemmas else word

    # Essays repeat words endlessly; memoising the lookup makes lemmatization
    # ~50x cheaper than calling WordNet per token.
    return functools.lru_cache(maxsize=500_000)(lemmatize)


def _letters_only(doc: str) -> str:
    return _NON_LETTERS.sub(" ", doc)


class _UnicodeLetterTable(dict[int, int | str]):
    """``str.translate`` table: letters and combining marks kept, all else a space.

    Filled on first sight of each character (``__missing__``), so that a corpus
    costs one category lookup per distinct character. Combining marks stay so
    that Arabic vowel signs, Devanagari viramas or a decomposed accent do not
    cut a word in two.
    """

    def __missing__(self, code: int) -> int | str:
        keep = unicodedata.category(chr(code))[0] in "LM"
        value: int | str = code if keep else " "
        self[code] = value
        return value


_UNICODE_LETTERS = _UnicodeLetterTable()


def _unicode_letters_only(doc: str) -> str:
    return unicodedata.normalize("NFC", doc).translate(_UNICODE_LETTERS)


def _nfc(doc: str) -> str:
    return unicodedata.normalize("NFC", doc)


def _repair(doc: str) -> str:
    # imported here: the features package imports this module
    from ..features._tokenize import normalize_text

    return normalize_text(doc)


def _unicode_words(doc: str) -> list[str]:
    """Runs of letters and marks with at least two letters (the text is prepared).

    The counterpart of sklearn's default ``\\b\\w\\w+\\b``, whose ``\\w``
    does not match combining marks.
    """
    return [
        tok
        for tok in doc.split()
        if (len(tok) >= 2 if tok.isalpha() else sum(ch.isalpha() for ch in tok) >= 2)
    ]


class _LemmatizingTokenizer:
    """Picklable tokenizer: the base token pattern, then WordNet lemmas."""

    def __init__(self, base: Callable[[str], list[str]]) -> None:
        self.base = base

    def __call__(self, doc: str) -> list[str]:
        lemma = _lemmatizer()
        return [lemma(tok) for tok in self.base(doc)]


class _Compose:
    def __init__(self, first: Callable[[str], str], second: Callable[[str], str]) -> None:
        self.first, self.second = first, second

    def __call__(self, doc: str) -> str:
        return self.second(self.first(doc))


#: sklearn's default token pattern, which ``letters="unicode"`` replaces.
_DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"


_Vectorizer = TypeVar("_Vectorizer", bound="_EssayTextMixin")


class _EssayTextMixin(_VectorizerBase):
    """Text preparation and validation shared by both vectorizers."""

    # parameters, set by each vectorizer's __init__
    letters_only: bool
    letters: str
    lemmatize: bool

    def build_preprocessor(self) -> Callable[[str], str]:
        """Lower-case/strip accents as sklearn does, then keep letters only.

        With ``letters="unicode"`` the text is repaired first and NFC-normalised
        (after lower-casing, which may decompose: "İ" -> "i" + dot above).
        """
        base = super().build_preprocessor()
        if self.letters == "unicode":
            base = _Compose(_repair, base)
            return _Compose(base, _unicode_letters_only if self.letters_only else _nfc)
        if not self.letters_only:
            return base
        return _Compose(base, _letters_only)

    def build_tokenizer(self) -> Callable[[str], list[str]]:
        """sklearn's token pattern, then WordNet lemmatization when asked."""
        base = super().build_tokenizer()
        if (
            self.letters == "unicode"
            and self.letters_only
            and self.tokenizer is None
            and self.token_pattern == _DEFAULT_TOKEN_PATTERN
        ):
            base = _unicode_words
        if not self.lemmatize:
            return base
        return _LemmatizingTokenizer(base)

    # sklearn's parameter name ``raw_documents`` is kept: its metadata-routing
    # declarations refer to it.
    def fit(self: _Vectorizer, raw_documents: ArrayLike, y: object = None) -> _Vectorizer:
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
            The fitted vectorizer.
        """
        self.fit_transform(raw_documents, y)
        return self

    def fit_transform(self, raw_documents: ArrayLike, y: object = None) -> csr_matrix:
        """Learn the vocabulary and return the essay-term matrix.

        Parameters
        ----------
        raw_documents : list, array or pandas Series of str
            The essays. Empty strings are allowed.
        y : None
            Ignored.

        Returns
        -------
        X_new : sparse matrix of shape (n_essays, n_terms)
            One row per essay, one column per term.
        """
        # sklearn checks its own parameters (_parameter_constraints) in
        # super().fit_transform; ours whose values sklearn cannot express
        # without its private constraint classes are checked here
        check_params(self, {"letters": [Options(("ascii", "unicode"))]})
        essays = check_essays(raw_documents)
        out = super().fit_transform(essays)
        return out

    def transform(self, raw_documents: ArrayLike) -> csr_matrix:
        """Represent essays with the learned vocabulary.

        Parameters
        ----------
        raw_documents : list, array or pandas Series of str
            The essays. Empty strings are allowed.

        Returns
        -------
        X_new : sparse matrix of shape (n_essays, n_terms)
            An essay with no known term is a row of zeros.
        """
        check_is_fitted(self, "vocabulary_")
        essays = check_essays(raw_documents)
        return super().transform(essays)

    def set_output(self: _Vectorizer, *, transform: str | None = None) -> _Vectorizer:
        """Accept only the default (sparse) output container, as sklearn does.

        sklearn's own :class:`~sklearn.feature_extraction.text.CountVectorizer`
        has no pandas output, and sklearn's ``set_output`` refuses sparse data
        (``OneHotEncoder(sparse_output=True)`` raises); a frame of thousands of
        dense or sparse columns is no substitute for the matrix. This method exists so that
        ``Pipeline.set_output(transform="default")`` works; ``"pandas"`` and
        ``"polars"`` raise. Under ``sklearn.set_config(transform_output="pandas")``
        the output stays sparse, as for ``CountVectorizer``.

        Parameters
        ----------
        transform : {"default"}, default=None
            ``"default"`` (a scipy sparse matrix) or None (unchanged).

        Returns
        -------
        self : object
            The vectorizer.

        Raises
        ------
        ValueError
            For any other container.

        Examples
        --------
        >>> from sklearn_fairaes import BowVectorizer
        >>> BowVectorizer().set_output(transform="default")
        BowVectorizer()
        """
        if transform is None or transform == "default":
            return self
        name = type(self).__name__
        raise ValueError(
            f"{name} outputs a sparse matrix, so set_output(transform={transform!r}) "
            f"is not supported (nor is it for sklearn's CountVectorizer); keep "
            f"transform='default', or build a frame yourself: pandas.DataFrame."
            f"sparse.from_spmatrix(X, columns=vec.get_feature_names_out())"
        )


_COMMON_DOC = """
    Parameters
    ----------
    letters_only : bool, default=True
        Replace every character that is not a letter (see ``letters``) by a
        space before tokenizing (the paper removed all non-letter characters).
    letters : {"ascii", "unicode"}, default="ascii"
        What counts as a letter. "ascii" is the paper's ``A-Z a-z`` (its
        numbers): essays in other scripts become zero vectors and "café"
        becomes "caf". "unicode" keeps any Unicode letter (Chinese, Russian,
        Arabic, accented Latin): the text is repaired (mis-decoded
        punctuation, curly apostrophes) and NFC-normalised, characters that are
        neither letters nor combining marks become spaces, and, with the
        default ``token_pattern``, a token is a run of letters and marks with
        at least two letters (so "café" and "cafe" + U+0301 are one term).
        Scripts written without spaces (Chinese, Japanese, Thai) give one
        token per run between punctuation: segment their words beforehand
        (insert spaces) if word terms are wanted. Digits are never letters:
        an essay of digits only is a zero vector in both modes. With
        ``letters_only=False``, "unicode" only repairs and NFC-normalises.
    lemmatize : bool, default=True
        Replace each token by its WordNet lemma (NLTK's ``WordNetLemmatizer``,
        noun reading). WordNet is read where it is installed
        (:func:`~sklearn_fairaes.resources.find_wordnet`); ``fit`` never
        downloads or writes it: run ``fairaes setup`` once (or install
        Debian's ``wordnet-base``), else ``fit`` raises a
        :class:`~sklearn_fairaes.resources.ResourceNotFoundError` (a
        ``LookupError``) saying so.
    lowercase : bool, default=True
        Convert all characters to lowercase before tokenizing.
    strip_accents : {"ascii", "unicode"}, callable or None, default=None
        Remove accents and perform other character normalization during the
        preprocessing step. "ascii" is a fast method that only works on
        characters that have a direct ASCII mapping; "unicode" is slower and
        works on any character. None means no character normalization.
    stop_words : {"english"}, list or None, default=None
        Stop words to remove from the tokens: "english" for scikit-learn's
        built-in list, or a list of words. None keeps stop words, as the paper
        did.
    token_pattern : str, default=r"(?u)\\b\\w\\w+\\b"
        Regular expression denoting what constitutes a "token" (scikit-learn's
        default): tokens of one character are dropped.
    ngram_range : tuple (min_n, max_n), default=(1, 2)
        The lower and upper boundary of the range of n-values for the word
        n-grams to be extracted; the default, unigrams and bigrams, is the
        paper's.
    max_df : float or int, default=1.0
        When building the vocabulary ignore terms that have a document
        frequency strictly higher than the given threshold. A float in
        [0.0, 1.0] is a proportion of essays, an integer an absolute count.
        Ignored if ``vocabulary`` is not None.
    min_df : float or int, default=3
        When building the vocabulary ignore terms that have a document
        frequency strictly lower than the given threshold; the default drops
        terms found in fewer than three essays, as the paper did. A float in
        [0.0, 1.0] is a proportion of essays, an integer an absolute count.
        Ignored if ``vocabulary`` is not None.
    max_features : int, default=None
        If not None, build a vocabulary that only considers the top
        ``max_features`` terms ordered by term frequency across the essays.
        Ignored if ``vocabulary`` is not None.
    vocabulary : mapping or iterable, default=None
        Either a mapping (e.g., a dict) where keys are terms and values are
        column indices, or an iterable over terms. If not given, the
        vocabulary is learned from the essays.
    binary : bool, default=False
        If True, all non-zero term counts are set to 1.
    dtype : dtype, default={dtype}
        Type of the matrix returned by ``fit_transform`` or ``transform``.
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

    The paper's ASCII letters cut other scripts and accents away;
    ``letters="unicode"`` keeps them:

    >>> essay = ["Un café très bon, привет"]
    >>> BowVectorizer(min_df=1, ngram_range=(1, 1)).fit(essay).get_feature_names_out().tolist()
    ['bon', 'caf', 'tr', 'un']
    >>> uni = BowVectorizer(letters="unicode", min_df=1, ngram_range=(1, 1)).fit(essay)
    >>> uni.get_feature_names_out().tolist()
    ['bon', 'café', 'très', 'un', 'привет']
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
        letters_only: bool = True,
        letters: str = "ascii",
        lemmatize: bool = True,
        lowercase: bool = True,
        strip_accents: str | Callable[[str], str] | None = None,
        stop_words: str | list[str] | None = None,
        token_pattern: str = r"(?u)\b\w\w+\b",
        ngram_range: tuple[int, int] = (1, 2),
        max_df: float = 1.0,
        min_df: float = 3,
        max_features: int | None = None,
        vocabulary: Mapping[str, int] | Iterable[str] | None = None,
        binary: bool = False,
        dtype: DTypeLike = np.int64,
    ) -> None:
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
        self.letters = letters
        self.lemmatize = lemmatize


class TfidfEssayVectorizer(_EssayTextMixin, TfidfVectorizer):
    __doc__ = (
        """TF-IDF essay vectors, the paper's TF-IDF (its §4.2.2).

    A ``TfidfVectorizer`` with the same text preparation as
    :class:`BowVectorizer`: smoothed IDF, rows scaled to unit Euclidean norm.
"""
        + _COMMON_DOC.replace("{dtype}", "numpy.float64")
        + """    norm : {"l1", "l2"} or None, default="l2"
        Each output row will have unit norm: "l2" (sum of squares of the
        elements is 1, so the cosine similarity of two rows is their dot
        product), "l1" (sum of absolute values is 1), or None (no
        normalization).
    use_idf : bool, default=True
        Enable inverse-document-frequency reweighting. If False, idf(t) = 1.
    smooth_idf : bool, default=True
        Smooth idf weights by adding one to document frequencies, as if an
        extra essay was seen containing every term exactly once. Prevents
        zero divisions.
    sublinear_tf : bool, default=False
        Apply sublinear tf scaling, i.e. replace tf with 1 + log(tf).

    Attributes
    ----------
    vocabulary_ : dict
        Term -> column index.
    idf_ : ndarray of shape (n_terms,)
        Inverse document frequency of each term.

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
        letters_only: bool = True,
        letters: str = "ascii",
        lemmatize: bool = True,
        lowercase: bool = True,
        strip_accents: str | Callable[[str], str] | None = None,
        stop_words: str | list[str] | None = None,
        token_pattern: str = r"(?u)\b\w\w+\b",
        ngram_range: tuple[int, int] = (1, 2),
        max_df: float = 1.0,
        min_df: float = 3,
        max_features: int | None = None,
        vocabulary: Mapping[str, int] | Iterable[str] | None = None,
        binary: bool = False,
        dtype: DTypeLike = np.float64,
        norm: str | None = "l2",
        use_idf: bool = True,
        smooth_idf: bool = True,
        sublinear_tf: bool = False,
    ) -> None:
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
        self.letters = letters
        self.lemmatize = lemmatize
