"""Low-coverage-bias audit of reference-based grading.

Choshen & Abend (ACL 2018) showed that a reference-based measure under-scores
valid output whenever the few references cover only part of the many valid
outputs, and that adding references helps only slowly. They measured it by
bootstrapping the score of a *perfect system*, one whose every output is
valid. :func:`reference_coverage_curve` transfers that audit to short answers:
the answers that human graders gave full credit are valid answers; some of
them serve as references, the others are scored against them by the
similarity grader of this package, and a valid answer should get full marks.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_random_state

from .._validation import _position_label, check_essays, check_grades, check_same_length
from ..resources import require
from ._grader import (
    check_representation,
    cosine_block,
    fit_representation,
    unit_vectors,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["plot_reference_coverage", "reference_coverage_curve"]

#: Columns of the table :func:`reference_coverage_curve` returns, in order.
COVERAGE_COLUMNS = (
    "n_references",
    "mean_score",
    "ci_low",
    "ci_high",
    "share_below_threshold",
    "n_questions",
    "n_held_out",
)

# A grade computed as points / max may miss 1.0 by a rounding error.
_CREDIT_TOLERANCE = 1e-9


def _check_real(
    value: Any,
    name: str,
    *,
    low: float,
    high: float,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        value = float(value)
        ok = (value > low if low_open else value >= low) and (
            value < high if high_open else value <= high
        )
    if not ok:
        lo, hi = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(
            f"{name} must be a number in {lo}{low:g}, {high:g}{hi}, got {value!r}"
        )
    return value


def _check_sizes(n_references: Any) -> list[int]:
    if isinstance(n_references, numbers.Integral) and not isinstance(n_references, bool):
        n_references = (n_references,)
    try:
        sizes = list(n_references)
    except TypeError:
        raise TypeError(
            f"n_references must be an int or a list of ints, got "
            f"{type(n_references).__name__}"
        ) from None
    if not sizes:
        raise ValueError("n_references is empty; give at least one number of references")
    for m in sizes:
        if not isinstance(m, numbers.Integral) or isinstance(m, bool) or m < 1:
            raise ValueError(
                f"n_references must hold positive ints (numbers of references), got {m!r}"
            )
    return sorted({int(m) for m in sizes})


def _questions(question: Any, n: int) -> list[Hashable]:
    if isinstance(question, (str, bytes)):
        raise TypeError(
            "question must hold one question label per answer (a list, array or pandas "
            "Series), got a single string"
        )
    labels = question.tolist() if hasattr(question, "tolist") else list(question)
    check_same_length(answers=range(n), question=labels)
    for i, label in enumerate(labels):
        if label is None or (isinstance(label, float) and np.isnan(label)):
            raise ValueError(
                f"question is missing at {_position_label(question, i)}; give every "
                f"answer the question it responds to"
            )
    return labels


def reference_coverage_curve(
    answers: ArrayLike,
    grades: ArrayLike,
    *,
    question: ArrayLike,
    representation: Any = None,
    n_references: int | Iterable[int] = (1, 2, 4, 8, 16),
    n_bootstrap: int = 200,
    full_credit: float = 1.0,
    pass_threshold: float = 0.5,
    confidence_level: float = 0.95,
    random_state: int | np.random.RandomState | None = None,
) -> pd.DataFrame:
    """Measure how much a reference-based grader under-scores fully correct answers.

    For every question, the answers with full human credit are taken as
    valid answers. In each bootstrap replicate and for each question, the
    valid answers are shuffled; the first ``M`` serve as reference answers
    and the valid answers after the first ``max(n_references)`` are held out
    and scored against them with the zero-shot similarity grader (the largest
    cosine similarity to a reference, clipped to [0, 1], as
    :class:`ReferenceSimilarityGrader` with ``calibration=None``). A perfect
    grader would give every held-out answer 1. This is the "perfect system"
    bootstrap of Choshen & Abend (2018, Section 2 and Figure 1a), with valid
    short answers in place of valid corrections.

    Parameters
    ----------
    answers : list, array or pandas Series of str
        All answers (only those with full credit are used).
    grades : array-like of shape (n_answers,)
        Human grades in [0, 1].
    question : array-like of shape (n_answers,)
        The question each answer responds to.
    representation : transformer or None, default=None
        Text representation of the similarity; None uses Sentence-BERT
        (all-MiniLM-L6-v2, through the embedding cache). A fitted
        representation is used as it is; an unfitted one is cloned and
        fitted on the distinct non-empty ``answers``.
    n_references : int or sequence of int, default=(1, 2, 4, 8, 16)
        Numbers of references ``M`` to evaluate (sorted, repeats ignored).
    n_bootstrap : int, default=200
        Number of replicates (random reference sets per question).
    full_credit : float, default=1.0
        The grade from which an answer counts as valid (within 1e-9).
    pass_threshold : float, default=0.5
        A held-out valid answer scored below this counts in
        ``share_below_threshold``.
    confidence_level : float, default=0.95
        Level of the percentile interval ``[ci_low, ci_high]``.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffles.

    Returns
    -------
    curve : pandas.DataFrame
        One row per ``M``, columns ``n_references``; ``mean_score`` (mean
        score of a held-out valid answer, averaged within each question, then
        over questions, then over replicates); ``ci_low`` and ``ci_high``
        (percentile interval of the replicates' mean score);
        ``share_below_threshold`` (share of held-out valid answers scored
        below ``pass_threshold``, averaged the same way); ``n_questions`` and
        ``n_held_out`` (questions used, held-out answers per replicate).

    Raises
    ------
    ValueError
        On bad parameters, grades outside [0, 1], inputs of different
        lengths, or when no question has more than ``max(n_references)``
        valid answers (the message gives the largest count).

    Notes
    -----
    Only questions with at least ``max(n_references) + 1`` non-empty valid
    answers are used, the same questions for every ``M``; empty answers are
    never valid answers. Within a replicate the reference sets are nested
    (the ``M`` references are the first ``M`` of one shuffle) and the
    held-out answers are the same for every ``M``, so each held-out answer's
    score can only rise with ``M``, and the differences between rows measure
    what the extra references bring. Duplicate answers are kept: a frequent
    phrasing is more likely both to be drawn as a reference and to be held
    out, as in the paper's sampling from the distribution of valid outputs.

    The interval describes the variation over random reference sets for
    these questions and answers; it does not include the sampling of
    questions or students. The similarity of every pair of valid answers of a
    question is computed once (each distinct text encoded once), and the
    replicates only index into it. Shuffles are drawn with
    ``check_random_state(random_state).permutation(n_valid)``, replicate by
    replicate, question by question in order of first appearance.

    References
    ----------
    L. Choshen and O. Abend, "Inherent biases in reference-based evaluation
    for grammatical error correction", ACL 2018, Section 2.

    Examples
    --------
    >>> from sklearn_fairaes.short_answers import reference_coverage_curve
    >>> from sklearn_fairaes.text import TfidfEssayVectorizer
    >>> answers = ["light makes plants grow", "plants grow with light",
    ...            "sunlight feeds plants", "plants need the sun", "no idea"]
    >>> tfidf = TfidfEssayVectorizer(min_df=1, ngram_range=(1, 1), lemmatize=False)
    >>> curve = reference_coverage_curve(
    ...     answers, [1, 1, 1, 1, 0], question=["q"] * 5, representation=tfidf,
    ...     n_references=(1, 2), n_bootstrap=50, random_state=0)
    >>> curve[["n_references", "n_questions", "n_held_out"]].to_numpy().tolist()
    [[1, 1, 2], [2, 1, 2]]
    >>> bool(curve["mean_score"].is_monotonic_increasing)
    True
    """
    pd = require("pandas", purpose="the coverage table")
    texts = check_essays(answers, name="answers")
    y = check_grades(
        grades,
        name="grades",
        n_samples=len(texts),
        hint="Scale grades to [0, 1] first, e.g. with load_short_answers",
    )
    labels = _questions(question, len(texts))
    check_representation(representation)
    sizes = _check_sizes(n_references)
    if (
        not isinstance(n_bootstrap, numbers.Integral)
        or isinstance(n_bootstrap, bool)
        or n_bootstrap < 1
    ):
        raise ValueError(f"n_bootstrap must be an int >= 1, got {n_bootstrap!r}")
    full_credit = _check_real(full_credit, "full_credit", low=0, high=1, low_open=True)
    pass_threshold = _check_real(pass_threshold, "pass_threshold", low=0, high=1)
    confidence_level = _check_real(
        confidence_level, "confidence_level", low=0, high=1, low_open=True, high_open=True
    )
    rng = check_random_state(random_state)

    m_max = sizes[-1]
    valid: dict[Hashable, list[int]] = {}
    for i, (text, grade, q) in enumerate(zip(texts, y, labels)):
        if grade >= full_credit - _CREDIT_TOLERANCE and text.strip():
            valid.setdefault(q, []).append(i)
    kept = {q: rows for q, rows in valid.items() if len(rows) > m_max}
    if not kept:
        most = max((len(r) for r in valid.values()), default=0)
        raise ValueError(
            f"no question has more than max(n_references)={m_max} valid (full-credit, "
            f"non-empty) answers; the most any question has is {most}. Use smaller "
            f"n_references or more answers per question"
        )

    fit_texts = list(dict.fromkeys(t for t in texts if t.strip()))
    fitted = fit_representation(representation, fit_texts, reuse_fitted=True)
    used = [texts[i] for rows in kept.values() for i in rows]
    Z, index = unit_vectors(fitted, used)
    sims: dict[Hashable, NDArray[np.float64]] = {}
    for q, rows in kept.items():
        ids = [index[texts[i]] for i in rows]
        S = cosine_block(Z, ids, ids)
        same = np.equal.outer(np.asarray(ids), np.asarray(ids))
        S[same] = 1.0  # identical texts match exactly
        sims[q] = np.clip(S, 0.0, 1.0)

    n_q = len(kept)
    mean_rep = np.empty((n_bootstrap, len(sizes)))
    below_rep = np.empty((n_bootstrap, len(sizes)))
    for b in range(n_bootstrap):
        q_mean = np.empty((n_q, len(sizes)))
        q_below = np.empty((n_q, len(sizes)))
        for k, S in enumerate(sims.values()):
            perm = rng.permutation(S.shape[0])
            held = S[perm[m_max:]]
            # running maximum over the shuffled references: the score with the
            # first M references is column M - 1
            best = np.maximum.accumulate(held[:, perm[:m_max]], axis=1)
            scores = best[:, [m - 1 for m in sizes]]
            q_mean[k] = scores.mean(axis=0)
            q_below[k] = (scores < pass_threshold).mean(axis=0)
        mean_rep[b] = q_mean.mean(axis=0)
        below_rep[b] = q_below.mean(axis=0)

    alpha = (1.0 - confidence_level) / 2.0
    return pd.DataFrame(
        {
            "n_references": np.asarray(sizes, dtype=np.int64),
            "mean_score": mean_rep.mean(axis=0),
            "ci_low": np.quantile(mean_rep, alpha, axis=0),
            "ci_high": np.quantile(mean_rep, 1.0 - alpha, axis=0),
            "share_below_threshold": below_rep.mean(axis=0),
            "n_questions": np.full(len(sizes), n_q, dtype=np.int64),
            "n_held_out": np.full(
                len(sizes), sum(len(r) - m_max for r in kept.values()), dtype=np.int64
            ),
        },
        columns=list(COVERAGE_COLUMNS),
    )


# --------------------------------------------------------------------------- figure

# Okabe-Ito colours, as in the audit report's figures.
_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999")


def plot_reference_coverage(
    curves: pd.DataFrame | Mapping[str, pd.DataFrame],
    *,
    pass_threshold: float | None = None,
) -> Figure:
    """Plot coverage curves: mean score and share below the pass mark against ``M``.

    Parameters
    ----------
    curves : pandas.DataFrame or dict of str to DataFrame
        Output of :func:`reference_coverage_curve`, or several of them by
        label (e.g. one per dataset), drawn in the order given.
    pass_threshold : float, default=None
        Drawn as a dashed line on the left panel when given.

    Returns
    -------
    fig : matplotlib.figure.Figure
        Two panels: the mean score of a fully correct held-out answer with its
        interval, and the share of them below the pass threshold; the x-axis
        is the number of references (log scale). No pyplot state is touched.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.short_answers import plot_reference_coverage
    >>> curve = pd.DataFrame({"n_references": [1, 2, 4], "mean_score": [0.5, 0.6, 0.66],
    ...                       "ci_low": [0.45, 0.57, 0.64], "ci_high": [0.55, 0.63, 0.68],
    ...                       "share_below_threshold": [0.4, 0.25, 0.2]})
    >>> fig = plot_reference_coverage({"SAF": curve}, pass_threshold=0.5)
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['Mean score of a fully correct answer', 'Share scored below the pass mark']
    """
    figure = require("matplotlib.figure", extra="report", purpose="the coverage figure")
    if hasattr(curves, "columns"):
        curves = {"": cast("pd.DataFrame", curves)}
    if not isinstance(curves, dict) or not curves:
        raise TypeError(
            "curves must be a DataFrame from reference_coverage_curve or a non-empty "
            "dict of label -> DataFrame"
        )
    needed = ("n_references", "mean_score", "ci_low", "ci_high", "share_below_threshold")
    for label, curve in curves.items():
        missing = [c for c in needed if c not in getattr(curve, "columns", ())]
        if missing:
            raise ValueError(
                f"curve {label!r} lacks the column(s) {', '.join(map(repr, missing))}; "
                f"pass the table reference_coverage_curve returns"
            )
    fig = figure.Figure(figsize=(10.0, 3.8), layout="constrained")
    left, right = fig.subplots(1, 2)
    ticks = sorted({int(m) for c in curves.values() for m in c["n_references"]})
    for k, (label, curve) in enumerate(curves.items()):
        color = _COLORS[k % len(_COLORS)]
        name = str(label).replace("$", r"\$") or None
        m = curve["n_references"].to_numpy(dtype=float)
        left.plot(m, curve["mean_score"], marker="o", color=color, label=name)
        left.fill_between(m, curve["ci_low"], curve["ci_high"], color=color, alpha=0.2)
        right.plot(m, curve["share_below_threshold"], marker="o", color=color, label=name)
    if pass_threshold is not None:
        left.axhline(pass_threshold, color="#4D4D4D", linestyle="--", linewidth=1)
    for ax, ylabel in (
        (left, "Mean score of a fully correct answer"),
        (right, "Share scored below the pass mark"),
    ):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("Reference answers per question (M)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    if any(str(label) for label in curves):
        left.legend(frameon=False)
    fig.suptitle("Low-coverage bias: full-credit answers scored against M others")
    return fig
