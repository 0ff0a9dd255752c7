"""Short answers: grading error per question and the low-coverage bias of references.

With reference answers (``reference_col``), each study is one question and
its grades are scaled to [0, 1] by the question's scale. Two tables:

* ``grading``: ``representation``, ``system``, ``n``, ``rmse``, ``wrmse``,
  one row per agreement row of a system (a trained baseline under its own
  representation, a given or fitted system once with ``representation=""``).
  ``wrmse`` is ASAG2024's weighted RMSE
  (:func:`~sklearn_fairaes.metrics.weighted_rmse`) over the question's
  answers. Continuous predictions of trained and fitted systems are clipped to
  [0, 1] first (a grade cannot leave the scale; given grades are checked to
  lie on it before the audit starts). :func:`pool_grading` gives the rows
  over all questions together, where the wRMSE is recomputed on all answers
  (ASAG2024's number for a data set), not averaged over questions.
* ``reference_coverage``: ``representation``, then the columns of
  :func:`~sklearn_fairaes.short_answers.reference_coverage_curve` on the
  question's full-credit answers, in each representation of the study: how
  much a reference-similarity grader under-scores fully correct answers that
  the few references do not cover (Choshen & Abend 2018).

:func:`make_reference_baseline` gives the optional trained baseline
``"reference_similarity"``: out-of-fold grades of a calibrated
:class:`~sklearn_fairaes.short_answers.ReferenceSimilarityGrader`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...resources import require
from .._cells import _mod, _num, _pct, _present, _rep, _table
from .._plots import _check_table
from .._study import System
from ._base import AnalysisOutput, Heading, Section

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray
    from pandas import DataFrame

    from .._study import Study

__all__ = [
    "ANALYSIS",
    "GRADING_COLUMNS",
    "REFERENCE_BASELINE",
    "make_reference_baseline",
    "pool_grading",
]

#: Columns of the ``grading`` table, in order.
GRADING_COLUMNS = ("representation", "system", "n", "rmse", "wrmse")

#: The name of the reference-similarity baseline among the trained models.
REFERENCE_BASELINE = "reference_similarity"

# The numbers of references of the coverage curve: Choshen & Abend's doubling,
# cut to what a question's full-credit answers allow (one must be held out).
_COVERAGE_SIZES = (1, 2, 4, 8, 16)
_COVERAGE_BOOTSTRAP = 200
_GRADING_DTYPES = {
    "representation": str, "system": str, "n": "int64", "rmse": "float64",
    "wrmse": "float64",
}  # fmt: skip
_COVERAGE_DTYPES = {
    "representation": str, "n_references": "int64", "mean_score": "float64",
    "ci_low": "float64", "ci_high": "float64", "share_below_threshold": "float64",
    "n_questions": "int64", "n_held_out": "int64",
}  # fmt: skip


def _grades(scores: NDArray[np.float64]) -> tuple[NDArray[np.float64], int]:
    """The system's grades on the [0, 1] scale, and how many were clipped onto it."""
    outside = int(np.count_nonzero((scores < 0) | (scores > 1)))
    return np.clip(scores, 0.0, 1.0), outside


def _grading_row(
    representation: str, name: str, human: NDArray[np.float64], grades: NDArray[np.float64]
) -> dict[str, Any]:
    from ...metrics import weighted_rmse

    return {
        "representation": representation,
        "system": name,
        "n": int(human.size),
        "rmse": math.sqrt(float(np.mean((human - grades) ** 2))),
        # without source=, weighted_rmse returns one float
        "wrmse": float(cast(float, weighted_rmse(human, grades))),
    }


def _clip_note(clipped: dict[str, int]) -> list[str]:
    # notes are per study: the audit names the prompt when there are several
    if not clipped:
        return []
    places = "; ".join(f"{k}: {v}" for k, v in clipped.items())
    return [
        f"Grading: predicted grades outside [0, 1] were clipped onto the scale before "
        f"the RMSE and wRMSE ({places})."
    ]


def pool_grading(studies: Sequence[Study]) -> DataFrame:
    """The ``grading`` rows over all questions together (the audit's pooled rows).

    For each (representation, system) the answers of every question that has
    it are put together and the RMSE and wRMSE computed on them once:
    ASAG2024 reports a data set's wRMSE over all its answers, and a wRMSE is
    not the mean of the questions' wRMSEs (its weights depend on how the
    grades of all answers spread over the ten grade ranges).

    Parameters
    ----------
    studies : sequence of Study
        The short-answer studies of the audit, one per question.

    Returns
    -------
    table : pandas.DataFrame
        Columns :data:`GRADING_COLUMNS` (no ``prompt``: the audit adds
        ``prompt="pooled"``), in the order the rows first appear.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import weighted_rmse
    >>> from sklearn_fairaes.report._study import Settings, Study, System
    >>> from sklearn_fairaes.report.analyses._short_answers import pool_grading
    >>> def study(q, human, engine):
    ...     return Study(prompt=q, prompt_text=None, essays=["a"] * len(human),
    ...                  ids=np.arange(len(human)), rows=np.arange(len(human)),
    ...                  human=np.array(human), score_range=(0, 1),
    ...                  score_range_source="declared", settings=Settings(),
    ...                  short_answer=True,
    ...                  systems={"engine": System("engine", "given",
    ...                                            {None: np.array(engine)})})
    >>> a, b = study("q1", [0, 1, 1], [0.5, 1, 1]), study("q2", [1, 1], [0.5, 1])
    >>> pooled = pool_grading([a, b])
    >>> pooled[["system", "n"]].values.tolist()
    [['engine', 5]]
    >>> bool(pooled["wrmse"].iloc[0] == weighted_rmse([0, 1, 1, 1, 1], [0.5, 1, 1, 0.5, 1]))
    True
    """
    pd = require("pandas", purpose="the audit")
    human: dict[tuple[str, str], list[NDArray[np.float64]]] = {}
    graded: dict[tuple[str, str], list[NDArray[np.float64]]] = {}
    for study in studies:
        for name, system in study.systems.items():
            for representation, scores in system.agreement_rows():
                key = (representation, name)
                human.setdefault(key, []).append(study.human)
                graded.setdefault(key, []).append(_grades(scores)[0])
    rows = [
        _grading_row(
            r, name, np.concatenate(human[r, name]), np.concatenate(graded[r, name])
        )
        for r, name in human
    ]
    return pd.DataFrame(rows, columns=list(GRADING_COLUMNS))


class _AsFitted:
    """A fitted text representation that fit leaves as it is (and clone too).

    The reference-similarity grader refits its representation in every fit;
    the audit's baselines all read the representation fitted on the study's
    essays (the paper's design), so the grader gets it frozen.
    """

    def __init__(self, transformer: Any) -> None:
        self.transformer = transformer

    def __sklearn_clone__(self) -> _AsFitted:
        return self

    def __repr__(self) -> str:
        # shown in the report's model settings, inside the grader's repr
        return repr(self.transformer)

    def __sklearn_is_fitted__(self) -> bool:
        return True

    def fit(self, X: Any, y: Any = None) -> _AsFitted:
        return self

    def transform(self, X: Any) -> Any:
        return self.transformer.transform(X)


def make_reference_baseline(study: Study, *, calibration: str = "isotonic") -> System:
    """The ``"reference_similarity"`` baseline: out-of-fold grades in each representation.

    A :class:`~sklearn_fairaes.short_answers.ReferenceSimilarityGrader` with
    a calibration (so it learns from the human grades, like the other
    trained baselines) is cross-validated with the study's folds
    (``KFold(cv, shuffle=True, random_state)``) in each representation of the
    study. As for the other baselines, the representation is the one fitted
    on all the question's answers (the paper's design) and only the
    calibration is learned on each training fold.

    Parameters
    ----------
    study : Study
        A short-answer study with ``references`` (one list per answer) and
        its pair spaces built.
    calibration : {"isotonic", "linear"}, default="isotonic"
        The grader's map from similarity to grade.

    Returns
    -------
    system : System
        ``kind="trained"``, ``scores`` by representation, ``estimator`` the
        unfitted grader of each representation (a dict).

    Raises
    ------
    ValueError
        When the study has no references or no representation.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.text import TfidfEssayVectorizer
    >>> from sklearn_fairaes.report._study import PairSpace, Settings, Study
    >>> from sklearn_fairaes.report.analyses._short_answers import make_reference_baseline
    >>> answers = ["light makes plants grow", "plants grow with light", "rocks",
    ...            "plants need the sun", "no idea", "the sun feeds plants"]
    >>> tfidf = TfidfEssayVectorizer(min_df=1, lemmatize=False).fit(answers)
    >>> study = Study(prompt="q1", prompt_text=None, essays=answers,
    ...               ids=np.arange(6), rows=np.arange(1, 7),
    ...               human=np.array([1, 1, 0, 0.5, 0, 1.0]), score_range=(0, 2),
    ...               score_range_source="declared", settings=Settings(cv=2),
    ...               short_answer=True, references=[["plants grow in light"]] * 6,
    ...               spaces={"tfidf": PairSpace("tfidf", tfidf, None, None, "cosine",
    ...                                          np.zeros(0))})
    >>> system = make_reference_baseline(study)
    >>> system.kind, list(system.scores), system.scores["tfidf"].shape
    ('trained', ['tfidf'], (6,))
    """
    from sklearn.base import clone
    from sklearn.model_selection import KFold, cross_val_predict

    from ...short_answers import ReferenceSimilarityGrader

    pd = require("pandas", purpose="the audit")
    if study.references is None:
        raise ValueError(
            f"prompt {study.prompt!r} has no reference answers; the "
            f"{REFERENCE_BASELINE!r} baseline needs reference_col (--reference-col)"
        )
    if not study.spaces:
        raise ValueError(
            f"prompt {study.prompt!r} has no representation for the "
            f"{REFERENCE_BASELINE!r} baseline to compare answers with"
        )
    X = pd.DataFrame(
        {"answer": list(study.essays), "reference": [list(r) for r in study.references]}
    )
    folds = KFold(study.settings.cv, shuffle=True, random_state=study.settings.random_state)
    scores: dict[str | None, NDArray[np.float64]] = {}
    graders: dict[str, Any] = {}
    for rname, space in study.spaces.items():
        graders[rname] = ReferenceSimilarityGrader(
            _AsFitted(space.transformer), calibration=calibration
        )
        scores[rname] = np.asarray(
            cross_val_predict(
                clone(graders[rname]),
                X,
                study.human,
                cv=folds,
                n_jobs=study.settings.n_jobs,
            ),
            dtype=np.float64,
        )
    return System(
        name=REFERENCE_BASELINE,
        kind="trained",
        scores=scores,
        estimator=graders,
        description=(
            f"ReferenceSimilarityGrader(calibration={calibration!r}): the largest cosine "
            f"similarity to a reference answer, calibrated on the training folds"
        ),
    )


class _ShortAnswers:
    """The ``short_answers`` analysis; see the module docstring."""

    name = "short_answers"

    def absent(self, study: Study) -> str | None:
        """Why the short-answer section cannot run on ``study``, or None when it can."""
        if not study.short_answer:
            return (
                "not a short-answer audit: give the reference answers' column "
                "(reference_col= / --reference-col)"
            )
        return None

    def run(self, study: Study) -> AnalysisOutput:
        """The ``grading`` and ``reference_coverage`` tables of one question.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_fairaes.report._study import Settings, Study, System
        >>> from sklearn_fairaes.report.analyses._short_answers import ANALYSIS
        >>> study = Study(
        ...     prompt="q1", prompt_text=None, essays=["a", "b", "c", "d"],
        ...     ids=np.arange(4), rows=np.arange(1, 5),
        ...     human=np.array([0.0, 1.0, 1.0, 1.0]), score_range=(0, 2),
        ...     score_range_source="declared", settings=Settings(), short_answer=True,
        ...     systems={"engine": System("engine", "given",
        ...                               {None: np.array([0.5, 1.0, 1.0, 1.0])})})
        >>> out = ANALYSIS.run(study)
        >>> out.tables["grading"].round(4).values.tolist()
        [['', 'engine', 4, 0.25, 0.3536]]
        """
        from ...short_answers._coverage import COVERAGE_COLUMNS

        pd = require("pandas", purpose="the audit")
        rows = []
        clipped: dict[str, int] = {}
        for name, system in study.systems.items():
            for representation, scores in system.agreement_rows():
                grades, outside = _grades(scores)
                if outside:
                    clipped[f"{representation} + {name}" if representation else name] = (
                        outside
                    )
                rows.append(_grading_row(representation, name, study.human, grades))
        notes = _clip_note(clipped)
        coverage, coverage_notes = self._coverage(study)
        notes += coverage_notes
        columns = ["representation", *COVERAGE_COLUMNS]
        return AnalysisOutput(
            tables={
                "grading": pd.DataFrame(rows, columns=list(GRADING_COLUMNS)).astype(
                    _GRADING_DTYPES
                ),
                # typed when empty too, so that the audit's stacking of the
                # questions keeps numeric columns
                "reference_coverage": (
                    pd.concat(coverage, ignore_index=True)[columns]
                    if coverage
                    else pd.DataFrame(columns=columns).astype(_COVERAGE_DTYPES)
                ),
            },
            notes=notes,
        )

    @staticmethod
    def _coverage(study: Study) -> tuple[list[DataFrame], list[str]]:
        """The coverage curve in each representation, or a note why there is none."""
        from ...short_answers import reference_coverage_curve
        from ...short_answers._coverage import _CREDIT_TOLERANCE

        valid = int(
            sum(
                1
                for text, grade in zip(study.essays, study.human)
                if grade >= 1.0 - _CREDIT_TOLERANCE and text.strip()
            )
        )
        sizes = [m for m in _COVERAGE_SIZES if m < valid]
        if not sizes:
            return [], [
                f"Reference coverage: {valid} answer(s) with full credit; the curve "
                f"needs at least 2 (references drawn from them, one held out)."
            ]
        notes = []
        if sizes[-1] < _COVERAGE_SIZES[-1]:
            notes.append(
                f"Reference coverage: {valid} answers with full credit, so at most "
                f"{sizes[-1]} reference(s) per draw."
            )
        frames = [
            reference_coverage_curve(
                study.essays,
                study.human,
                question=[study.prompt] * study.n,
                representation=space.transformer,
                n_references=sizes,
                n_bootstrap=_COVERAGE_BOOTSTRAP,
                random_state=study.settings.random_state,
            ).assign(representation=rname)
            for rname, space in study.spaces.items()
        ]
        return frames, notes


#: The short-answer section, as the audit runs it.
ANALYSIS = _ShortAnswers()


# --------------------------------------------------------------------------- view


_COVERAGE_COLUMNS = {
    "n_references": ("References (M)", _num),
    "mean_score": ("Mean score of a valid answer", _num),
    "ci_low": ("95 % interval, low", _num),
    "ci_high": ("95 % interval, high", _num),
    "share_below_threshold": ("% scored below the pass mark", _pct),
    "n_questions": ("Questions", _num),
    "n_held_out": ("Held-out answers", _num),
}


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The grading error and the reference coverage as the template shows them."""
    out: dict[str, Any] = {"grading": None, "coverage": None}
    if _present(tables, "grading"):
        table = tables["grading"]
        _check_table(table, "grading", ["representation", "system", "n", "rmse", "wrmse"])
        out["grading"] = _table(
            ["Representation", "System", "n", "RMSE", "Weighted RMSE"],
            [
                [
                    _rep(r["representation"]),
                    _mod(r["system"]),
                    _num(r["n"]),
                    _num(r["rmse"]),
                    _num(r["wrmse"]),
                ]
                for r in table.to_dict("records")
            ],
            caption="Grading error on grades scaled to 0–1 (lower is better)",
        )
    if _present(tables, "reference_coverage"):
        table = tables["reference_coverage"]
        _check_table(table, "reference_coverage", ["n_references", "mean_score"])
        columns = [c for c in _COVERAGE_COLUMNS if c in table.columns]
        with_rep = "representation" in table.columns
        out["coverage"] = _table(
            ["Representation"] * with_rep + [_COVERAGE_COLUMNS[c][0] for c in columns],
            [
                [_rep(r["representation"])] * with_rep
                + [_COVERAGE_COLUMNS[c][1](r[c]) for c in columns]
                for r in table.to_dict("records")
            ],
            caption="Reference coverage: how a zero-shot similarity grader scores fully "
            "correct answers held out, with M reference answers per question",
        )
    return out


# --------------------------------------------------------------------------- pooling


def pool(tables: dict[str, DataFrame], studies: Sequence[Study]) -> dict[str, DataFrame]:
    """The grading table with a row over all questions' answers together."""
    if "grading" in tables:
        pd = require("pandas", purpose="the audit")
        pooled = pool_grading(list(studies))
        pooled.insert(0, "prompt", "pooled")
        tables["grading"] = pd.concat([tables["grading"], pooled], ignore_index=True)
    return tables


SECTION = Section(
    "short_answers",
    (
        Heading(
            "short_answers",
            "Short answers: grading and reference coverage",
            ("grading", "reference_coverage"),
        ),
    ),
    analysis=ANALYSIS,
    view=view,
    schema={
        "grading": GRADING_COLUMNS,
        "reference_coverage": (
            "representation",
            "n_references",
            "mean_score",
            "ci_low",
            "ci_high",
            "share_below_threshold",
            "n_questions",
            "n_held_out",
        ),
    },  # fmt: skip
    pool=pool,
    optional=True,
    default_reason="not a short-answer audit (no reference column was given)",
    # an essay audit has no short-answer section to explain
    applies=lambda meta: bool(meta.get("short_answer")),
)
