"""A short-answer grader that compares each answer with its reference answers.

The grade is read off the cosine similarity between the answer and the closest
reference answer of its question, in any text representation of this package
(Sentence-BERT by default). Without calibration this is the zero-shot embedding
baseline of ASAG2024 (Meyer, Breuer & Fürst 2024, Section 3, "Nomic-embed-text",
which uses the cosine similarity of the student and the reference answer); with
calibration, a monotone map from similarity to grade is learned from graded
answers.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .._param_validation import Interval, Options, check_params
from .._validation import (
    check_columns,
    check_essays,
    check_grades,
    check_references,
    check_scores,
)
from ..metrics._grading import _bin_weights

if TYPE_CHECKING:
    import pandas as pd

    from ..text import SentenceBertEncoder

__all__ = ["ReferenceSimilarityGrader"]

#: Grade ranges of the "balanced" weights: ASAG2024's ten ranges of width 0.1.
_N_GRADE_RANGES = 10

# Unit-length text vectors, one row per text: CSR when the representation is
# sparse, else a dense array. Any, because scipy's stubs and numpy's share no
# type that covers the row indexing and products done on both here.
_Vectors = Any


# --------------------------------------------------------------------------- helpers
# Shared with the coverage audit, which scores answers against references drawn
# from other answers with the same similarity.


def default_representation() -> SentenceBertEncoder:
    """The default representation: Sentence-BERT MiniLM through the embedding cache.

    The grader's refits (cross-validation, grid search) re-encode the same
    answers, so its default opts into the process-wide in-memory cache,
    bounded to 256 MiB; pass ``SentenceBertEncoder()`` for none.
    """
    from ..text import SentenceBertEncoder

    return SentenceBertEncoder(cache=True)


def check_representation(representation: object, name: str = "representation") -> None:
    """Raise unless ``representation`` is None or has ``fit`` and ``transform``."""
    if representation is None:
        return
    if not (hasattr(representation, "fit") and hasattr(representation, "transform")):
        raise TypeError(
            f"{name} must be a transformer of texts with fit and transform (e.g. "
            f"SentenceBertEncoder() or TfidfEssayVectorizer()), or None for "
            f"Sentence-BERT; got {type(representation).__name__}"
        )


def fit_representation(
    representation: Any, texts: Sequence[str], *, reuse_fitted: bool = False
) -> Any:
    """A fitted copy of ``representation`` (the default when None).

    ``reuse_fitted`` returns an already fitted representation as it is, instead
    of a clone refitted on ``texts``.
    """
    if representation is None:
        return default_representation().fit(texts)
    if reuse_fitted:
        try:
            check_is_fitted(representation)
            return representation
        except NotFittedError:
            pass
    return clone(representation).fit(texts)


def unit_vectors(
    representation: Any, texts: Iterable[str]
) -> tuple[_Vectors, dict[str, int]]:
    """Rows of unit length (zero rows stay zero) for ``texts``, each encoded once.

    Returns ``(Z, index)``: ``Z`` a float64 matrix (dense, or CSR for sparse
    representations) and ``index`` mapping each distinct text to its row.
    """
    from sklearn import config_context
    from sklearn.preprocessing import normalize

    distinct = list(dict.fromkeys(texts))
    index = {t: k for k, t in enumerate(distinct)}
    if not distinct:
        return np.zeros((0, 1)), index
    with config_context(transform_output="default"):
        Z = representation.transform(distinct)
    if hasattr(Z, "sparse") and hasattr(Z, "columns"):  # a sparse DataFrame
        Z = Z.sparse.to_coo()
    elif hasattr(Z, "to_numpy"):
        Z = Z.to_numpy()
    if sp.issparse(Z):
        # cast: scipy's stubs narrow issparse() to an abstract class
        Z = sp.csr_matrix(cast(_Vectors, Z), dtype=np.float64)
    else:
        Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[0] != len(distinct):
        raise ValueError(
            f"the representation returned shape {Z.shape} for {len(distinct)} texts; it "
            f"must return one row per text"
        )
    return normalize(Z, norm="l2", copy=False), index


def cosine_block(
    Z: _Vectors, rows: Sequence[int], cols: Sequence[int]
) -> NDArray[np.float64]:
    """Dense matrix of the cosines between rows ``rows`` and ``cols`` of ``Z``."""
    block = Z[rows] @ Z[cols].T
    if sp.issparse(block):
        block = cast(_Vectors, block).toarray()
    return np.clip(np.asarray(block, dtype=np.float64), -1.0, 1.0)


def max_reference_similarity(
    Z: _Vectors,
    index: Mapping[str, int],
    answers: Sequence[str],
    references: Sequence[tuple[str, ...]],
) -> NDArray[np.float64]:
    """Per answer, the largest cosine with one of its references.

    An answer identical to one of its references gets exactly 1.0; an empty
    (whitespace-only) answer gets 0.0.
    """
    sims = np.zeros(len(answers), dtype=np.float64)
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, (answer, refs) in enumerate(zip(answers, references)):
        if answer.strip():
            groups.setdefault(refs, []).append(i)
    for refs, rows in groups.items():
        block = cosine_block(Z, [index[answers[i]] for i in rows], [index[r] for r in refs])
        best = block.max(axis=1)
        exact = np.array([answers[i] in refs for i in rows], dtype=bool)
        best[exact] = 1.0
        sims[rows] = best
    return sims


# --------------------------------------------------------------------------- estimator


class ReferenceSimilarityGrader(RegressorMixin, BaseEstimator):
    """Grade short answers by their similarity to the question's reference answers.

    For each answer, the cosine similarity to each reference answer of its
    question is computed in a text representation, and the largest is kept
    (an answer needs to match one reference, not all). The grade is

    * ``calibration=None``: that similarity clipped to [0, 1], the zero-shot
      embedding baseline of ASAG2024 (Section 3); nothing is learned from the
      grades;
    * ``calibration="isotonic"``: a non-decreasing step function of the
      similarity fitted to the human grades (isotonic regression);
    * ``calibration="linear"``: ``a + b * similarity`` with ``b >= 0`` fitted by
      least squares.

    Calibration is learned over all training answers (``calibrate_by="pooled"``)
    or for each question separately (``"question"``). Predictions are always
    in [0, 1].

    Parameters
    ----------
    representation : transformer or None, default=None
        How texts become vectors: any transformer of lists of str with ``fit``
        and ``transform`` (:class:`~sklearn_fairaes.text.SentenceBertEncoder`,
        :class:`~sklearn_fairaes.text.TfidfEssayVectorizer`, ...). None uses
        ``SentenceBertEncoder(cache=True)`` (all-MiniLM-L6-v2, through the
        process-wide in-memory embedding cache, bounded to 256 MiB). It is cloned and fitted in :meth:`fit` on the distinct answer
        and reference texts of the training data.
    calibration : {None, "isotonic", "linear"}, default=None
        Map from similarity to grade, see above. With None, ``y`` is not
        needed in :meth:`fit`.
    calibrate_by : {"pooled", "question"}, default="pooled"
        ``"question"`` fits one calibration per question that has at least
        ``min_question_answers`` training answers with two or more distinct
        similarities; other questions, and questions not seen in :meth:`fit`,
        use the pooled calibration. Needs ``question_col``.
    min_question_answers : int, default=5
        Fewest training answers of a question for its own calibration.
    grade_weight : {None, "balanced"}, default=None
        Weights of the training answers in the calibration's least squares.
        ``"balanced"`` gives each range of grades of width 0.1 that holds
        training answers the same total weight (the weights of ASAG2024's
        wRMSE), like ``class_weight="balanced"`` of sklearn's classifiers, so
        that the calibration minimises the training wRMSE instead of being
        pulled towards the most frequent grades. Multiplies ``sample_weight``
        when both are given; the ranges are counted over all training
        answers, also for per-question calibrations. Ignored without
        calibration.
    answer_col : str, default="answer"
        Column of ``X`` with the answers.
    reference_col : str, default="reference"
        Column of ``X`` with the reference answers: a str or a list of str per
        row (as :func:`~sklearn_fairaes.datasets.load_short_answers` returns).
    question_col : str, default="question"
        Column of ``X`` identifying the question; read only with
        ``calibrate_by="question"``.

    Attributes
    ----------
    representation_ : transformer
        The fitted representation.
    calibrator_ : IsotonicRegression, LinearRegression or None
        The pooled calibration (None without calibration).
    question_calibrators_ : dict
        Question -> its own calibration (empty unless
        ``calibrate_by="question"``).

    Notes
    -----
    Each distinct text (answer or reference) is encoded once per call, and
    Sentence-BERT embeddings go through the package's embedding cache, so
    refits in a cross-validation or grid search do not re-encode. An answer
    identical to one of its references gets similarity 1.0 exactly; an empty
    answer gets similarity 0.0 (it matches nothing). A row with no reference
    answer raises a ValueError.

    The similarity is the feature the calibration sees, so a calibrated grader
    can only rank answers as the similarity does. Answers that are correct
    but phrased unlike every reference get low similarity and low grades:
    see :func:`~sklearn_fairaes.short_answers.reference_coverage_curve`.

    References
    ----------
    G. Meyer, P. Breuer and J. Fürst, "ASAG2024: A combined benchmark for short
    answer grading", SIGCSE Virtual 2024, Section 3.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.short_answers import ReferenceSimilarityGrader
    >>> from sklearn_fairaes.text import TfidfEssayVectorizer
    >>> X = pd.DataFrame({
    ...     "answer": ["plants need light", "plants need water", "rocks are hard", ""],
    ...     "reference": [["plants need light"], ["plants need light"],
    ...                   ["plants need light", "light feeds plants"], "plants need light"],
    ... })
    >>> tf = TfidfEssayVectorizer(min_df=1, ngram_range=(1, 1), lemmatize=False,
    ...                           use_idf=False)
    >>> grader = ReferenceSimilarityGrader(tf).fit(X)

    The second answer shares two of its three words with the reference
    (cosine 2/3); the third shares none; the empty answer gets 0:

    >>> grader.predict(X).round(3).tolist()
    [1.0, 0.667, 0.0, 0.0]
    >>> calibrated = ReferenceSimilarityGrader(tf, calibration="isotonic")
    >>> calibrated.fit(X, [1.0, 0.5, 0.0, 0.0]).predict(X).round(3).tolist()
    [1.0, 0.5, 0.0, 0.0]
    """

    # set by fit
    representation_: Any
    calibrator_: Any
    question_calibrators_: dict[Hashable, Any]

    def __init__(
        self,
        representation: Any = None,
        *,
        calibration: str | None = None,
        calibrate_by: str = "pooled",
        min_question_answers: int = 5,
        grade_weight: str | None = None,
        answer_col: str = "answer",
        reference_col: str = "reference",
        question_col: str = "question",
    ) -> None:
        self.representation = representation
        self.calibration = calibration
        self.calibrate_by = calibrate_by
        self.min_question_answers = min_question_answers
        self.grade_weight = grade_weight
        self.answer_col = answer_col
        self.reference_col = reference_col
        self.question_col = question_col

    # -- validation ---------------------------------------------------------
    # the package's form of sklearn's _parameter_constraints, checked in fit
    # (sklearn_fairaes._param_validation.check_params)
    _param_rules: ClassVar[dict[str, list[Any]]] = {
        "calibration": [None, Options(("isotonic", "linear"))],
        "calibrate_by": [Options(("pooled", "question"))],
        "min_question_answers": [Interval(numbers.Integral, 2, None)],
        "grade_weight": [None, Options(("balanced",))],
    }

    def _check_params(self) -> None:
        check_representation(self.representation)
        check_params(self, self._param_rules)

    def _columns(self) -> list[str]:
        cols = [self.answer_col, self.reference_col]
        if self.calibration is not None and self.calibrate_by == "question":
            cols.append(self.question_col)
        return cols

    def _read(
        self, X: pd.DataFrame
    ) -> tuple[list[str], list[tuple[str, ...]], list[Hashable] | None]:
        check_columns(X, self._columns())
        answers = check_essays(X[self.answer_col], name=f"X[{self.answer_col!r}]")
        references = check_references(
            X[self.reference_col], name=f"X[{self.reference_col!r}]"
        )
        if not answers:
            raise ValueError("X has no rows; at least one answer is needed")
        questions: list[Hashable] | None = None
        if self.calibration is not None and self.calibrate_by == "question":
            column = X[self.question_col]
            missing = column.isna().to_numpy()
            if missing.any():
                i = int(np.flatnonzero(missing)[0])
                raise ValueError(
                    f"X[{self.question_col!r}] is missing at row {i}; per-question "
                    f"calibration needs the question of every answer"
                )
            questions = column.tolist()
        return answers, references, questions

    # -- public API ---------------------------------------------------------
    def fit(
        self,
        X: pd.DataFrame,
        y: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> ReferenceSimilarityGrader:
        """Fit the representation and, if asked, the calibration.

        Parameters
        ----------
        X : pandas.DataFrame
            One row per answer, with ``answer_col`` and ``reference_col`` (and
            ``question_col`` for per-question calibration).
        y : array-like of shape (n_answers,), default=None
            Human grades in [0, 1]; needed with a calibration, ignored without.
        sample_weight : array-like of shape (n_answers,), default=None
            Non-negative weights of the answers in the calibration's least
            squares (e.g. ASAG2024's wRMSE weights, so that the calibration
            minimises the error the benchmark reports); ignored without
            calibration.

        Returns
        -------
        self : object
            The fitted grader.
        """
        self._check_params()
        answers, references, questions = self._read(X)
        grades: NDArray[np.float64] | None = None
        # sample_weight, checked, times the "balanced" weights
        weights: NDArray[np.float64] | None = None
        if self.calibration is not None:
            if y is None:
                raise ValueError(
                    f"calibration={self.calibration!r} learns from grades: pass y, the "
                    f"human grades in [0, 1] (or use calibration=None)"
                )
            grades = check_grades(
                y,
                name="y",
                n_samples=len(answers),
                hint="Scale grades to [0, 1] first, e.g. with load_short_answers",
            )
            if sample_weight is not None:
                weights = check_scores(
                    sample_weight, name="sample_weight", n_samples=len(answers)
                )
                if (weights < 0).any() or not weights.any():
                    raise ValueError(
                        "sample_weight must be non-negative with at least one positive "
                        "weight"
                    )
            if self.grade_weight == "balanced":
                balanced = _bin_weights(grades, _N_GRADE_RANGES)
                weights = balanced if weights is None else balanced * weights
        texts = [a for a in answers if a.strip()]
        texts += [r for refs in references for r in refs]
        self.representation_ = fit_representation(
            self.representation, list(dict.fromkeys(texts))
        )
        self.calibrator_ = None
        self.question_calibrators_ = {}
        if self.calibration is None:
            return self
        # with a calibration, y has been checked above
        grades = cast("NDArray[np.float64]", grades)
        sims = self._similarity(answers, references)
        self.calibrator_ = self._fit_calibrator(sims, grades, weights)
        if self.calibrate_by == "question":
            # read by _read for a per-question calibration
            questions = cast("list[Hashable]", questions)
            rows: dict[Hashable, list[int]] = {}
            for i, q in enumerate(questions):
                rows.setdefault(q, []).append(i)
            for q, idx_list in rows.items():
                idx = np.asarray(idx_list)
                w = None if weights is None else weights[idx]
                if (
                    idx.size >= self.min_question_answers
                    and np.unique(sims[idx]).size > 1
                    and (w is None or w.any())
                ):
                    self.question_calibrators_[q] = self._fit_calibrator(
                        sims[idx], grades[idx], w
                    )
        return self

    def similarity(self, X: pd.DataFrame) -> NDArray[np.float64]:
        """Compute the largest cosine similarity of each answer to its references.

        Parameters
        ----------
        X : pandas.DataFrame
            With ``answer_col`` and ``reference_col``.

        Returns
        -------
        similarity : ndarray of shape (n_answers,)
            For each answer, its largest cosine similarity to one of its
            references, in [-1, 1] (1.0 for an exact match, 0.0 for an empty
            answer).
        """
        check_is_fitted(self, "representation_")
        check_columns(X, [self.answer_col, self.reference_col])
        answers = check_essays(X[self.answer_col], name=f"X[{self.answer_col!r}]")
        references = check_references(
            X[self.reference_col], name=f"X[{self.reference_col!r}]"
        )
        return self._similarity(answers, references)

    def predict(self, X: pd.DataFrame) -> NDArray[np.float64]:
        """Predict grades in [0, 1].

        Parameters
        ----------
        X : pandas.DataFrame
            With ``answer_col`` and ``reference_col`` (and ``question_col`` for
            per-question calibration).

        Returns
        -------
        grades : ndarray of shape (n_answers,)
            The predicted grade of each answer, in [0, 1].
        """
        check_is_fitted(self, "representation_")
        answers, references, questions = self._read(X)
        return self._predict(answers, references, questions)

    # -- work ---------------------------------------------------------------
    def _similarity(
        self, answers: Sequence[str], references: Sequence[tuple[str, ...]]
    ) -> NDArray[np.float64]:
        texts = [a for a in answers if a.strip()]
        texts += [r for refs in references for r in refs]
        Z, index = unit_vectors(self.representation_, texts)
        return max_reference_similarity(Z, index, answers, references)

    def _fit_calibrator(
        self,
        sims: NDArray[np.float64],
        grades: NDArray[np.float64],
        sample_weight: NDArray[np.float64] | None = None,
    ) -> Any:
        if self.calibration == "isotonic":
            from sklearn.isotonic import IsotonicRegression

            model = IsotonicRegression(
                y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip"
            )
            return model.fit(sims, grades, sample_weight=sample_weight)
        from sklearn.linear_model import LinearRegression

        model = LinearRegression(positive=True)
        return model.fit(sims[:, None], grades, sample_weight=sample_weight)

    @staticmethod
    def _apply(calibrator: Any, sims: NDArray[np.float64]) -> NDArray[np.float64]:
        if hasattr(calibrator, "coef_"):
            return calibrator.predict(sims[:, None])
        return calibrator.predict(sims)

    def _predict(
        self,
        answers: Sequence[str],
        references: Sequence[tuple[str, ...]],
        questions: Sequence[Hashable] | None,
    ) -> NDArray[np.float64]:
        sims = self._similarity(answers, references)
        if self.calibrator_ is None:
            out = sims
        elif not self.question_calibrators_ or questions is None:
            out = self._apply(self.calibrator_, sims)
        else:
            out = np.empty_like(sims)
            rows: dict[Hashable, list[int]] = {}
            for i, q in enumerate(questions):
                rows.setdefault(q, []).append(i)
            for q, idx in rows.items():
                model = self.question_calibrators_.get(q, self.calibrator_)
                out[idx] = self._apply(model, sims[idx])
        return np.clip(np.asarray(out, dtype=np.float64), 0.0, 1.0)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = self.calibration is not None
        tags.requires_fit = True
        return tags
