"""Counterfactual audit: do scores move when they should, and stay when they should?

The Lipschitz fraction (the paper's §5.3.2) asks whether similar essays get
similar scores, with similarity taken from a representation. Controlled edits
give pairs whose relation is known: an essay and its synonym paraphrase (the
paper's §5.2 test) or its noised copy should get the same score, while an
essay with shuffled, deleted or padded sentences, stuffed prompt words, word
salad or negated claims should not. :func:`perturbation_audit` edits each
essay with each perturbation of :mod:`sklearn_fairaes.perturb`, scores the
edited essay with the model, and reports per perturbation how scores moved,
whether they moved the expected way, whether the task representation sees
the edit, and whether each (original, edited) pair satisfies the Lipschitz
condition.

Reading guide. A model is **oversensitive** when meaning-preserving edits
move its scores (many essays beyond the tolerance for ``synonym``,
``typos``, ``case_whitespace``, ``contractions``, ``placeholders``); it is
**overstable** when edits that make an essay worse leave its score where it
was or raise it (``share_within`` or ``share_up`` high for
``sentence_shuffle``, ``word_scramble``, ``word_salad``, ...). Kumar et al.
(2023) found both in popular scorers; a length-driven model typically
*rewards* ``sentence_repetition`` and ``off_topic``.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import Bunch

from .._validation import check_essays, check_predictor, check_scores
from ..exceptions import UndefinedMetricWarning
from ..resources import require
from ._base import BasePerturbation, Edit, PerturbationRecord, RandomStateLike
from ._registry import resolve_perturbations

if TYPE_CHECKING:
    from types import ModuleType

    import pandas
    from matplotlib.figure import Figure

# A representation of the essays as a float64 matrix, one row per essay: CSR
# when sparse, else a dense array. Any, because scipy's stubs and numpy's share
# no type that covers the row indexing and stacking done on both here.
_Matrix = Any
# one perturbation's edits of the essays, shared by every model: label, the
# perturbation, the edited essays, their records, which essays changed, their
# positions and the distance of each essay to its edit
_EditResult = tuple[
    str,
    BasePerturbation,
    list[str],
    list[PerturbationRecord],
    NDArray[np.bool_],
    NDArray[np.intp],
    NDArray[np.float64],
]

__all__ = ["perturbation_audit", "plot_perturbation_audit"]

#: Columns of the summary table, in order.
SUMMARY_COLUMNS = (
    "perturbation",
    "family",
    "expected",
    "n_essays",
    "n_changed",
    "mean_abs_change",
    "mean_change",
    "max_abs_change",
    "share_beyond_tolerance",
    "share_down",
    "share_within",
    "share_up",
    "share_expected",
    "mean_distance",
    "share_zero_distance",
    "lipschitz_minmax",
    "lipschitz_max",
    "tolerance",
)

#: Columns of the per-essay table, in order.
DETAIL_COLUMNS = (
    "perturbation",
    "essay",
    "changed",
    "n_edits",
    "n_skipped",
    "note",
    "edit_preview",
    "score_original",
    "score_perturbed",
    "change",
    "movement",
    "moves_as_expected",
    "distance",
    "lipschitz_ok_minmax",
    "lipschitz_ok_max",
)

# most distinct non-integer levels a score scale may have for tolerance="auto"
_MAX_LEVELS = 50


def _resolve_tolerance(
    tolerance: float | str, score_scale: ArrayLike | None, estimator: Any
) -> tuple[float, str]:
    """The tolerance in score units, and a sentence saying where it came from."""
    if isinstance(tolerance, str):
        if tolerance != "auto":
            raise ValueError(
                f"tolerance must be 'auto' or a number >= 0 in score units; got "
                f"{tolerance!r}"
            )
        source = "score_scale"
        classes = np.asarray(getattr(estimator, "classes_", None))
        if score_scale is not None:
            levels = np.unique(check_scores(score_scale, name="score_scale"))
        elif classes.ndim == 1 and classes.size and classes.dtype.kind in "iuf":
            levels, source = np.unique(classes.astype(float)), "classes_"
        else:
            return 0.5, "half a point (no score_scale given: an integer scale is assumed)"
        if levels.size < 2:
            raise ValueError(
                f"{source} holds one distinct score ({levels[0]!r}), so it has no step; "
                f"pass the possible scores (e.g. score_scale=range(0, 31)) or tolerance "
                f"as a number in score units"
            )
        integral = bool(np.all(levels == np.round(levels)))
        if not integral and levels.size > _MAX_LEVELS:
            raise ValueError(
                f"{source} has {levels.size} distinct non-integer values, which looks "
                f"like a continuous scale with no step; pass tolerance as a number in "
                f"score units (e.g. tolerance=0.05 * (max - min))"
            )
        step = float(np.min(np.diff(levels)))
        return step / 2, f"half the smallest step ({step:g}) of the {source}"
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real):
        raise TypeError(
            f"tolerance must be 'auto' or a number >= 0 in score units; got "
            f"{tolerance!r} ({type(tolerance).__name__})"
        )
    value = float(tolerance)  # any numbers.Real (Fraction, Decimal, numpy scalar)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"tolerance must be a finite number >= 0; got {tolerance!r}")
    return value, "given"


def _matrix(Z: Any) -> _Matrix:
    if hasattr(Z, "to_numpy") and hasattr(Z, "columns"):
        Z = Z.to_numpy()
    # cast: scipy's stubs narrow issparse() to an abstract class without tocsr
    return cast(_Matrix, Z).tocsr() if sp.issparse(Z) else np.asarray(Z, dtype=np.float64)


def _paired_distances(
    R0: _Matrix, R1: _Matrix, metric: str | Callable[..., float]
) -> NDArray[np.float64]:
    """Distance of each original (row of ``R0``) to its edited copy (row of ``R1``)."""
    from ..metrics._pairs._engine import PairwiseEngine

    m = R0.shape[0]
    stacked = (
        sp.vstack([cast(_Matrix, R0), R1]).tocsr()
        if sp.issparse(R0)
        else np.vstack([R0, R1])
    )
    engine = PairwiseEngine(stacked, metric=metric, name="the representation")
    return engine.paired_distances(np.arange(m), np.arange(m) + m)


def _clip(text: str, width: int = 40) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def edit_preview(edits: Sequence[Edit], *, max_edits: int = 2, width: int = 40) -> str:
    """A one-line description of an essay's edits, for tables.

    Examples
    --------
    >>> from sklearn_fairaes.perturb import Edit
    >>> from sklearn_fairaes.perturb._audit import edit_preview
    >>> edit_preview([Edit(2, 5, "was", "was not", "negate:copula"),
    ...               Edit(9, 9, "", "patience ", "insert")])
    "'was' -> 'was not'; + 'patience '"
    """
    parts: list[str] = []
    for e in edits[:max_edits]:
        if not e.before:
            parts.append(f"+ {_clip(e.after, width)!r}")
        elif not e.after:
            parts.append(f"- {_clip(e.before, width)!r}")
        else:
            parts.append(f"{_clip(e.before, width)!r} -> {_clip(e.after, width)!r}")
    more = len(edits) - max_edits
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def _expected_mask(
    expected: str, change: NDArray[np.float64], tol: float
) -> NDArray[np.bool_]:
    if expected == "stay":
        return np.abs(change) <= tol
    if expected == "drop":
        return change < -tol
    return np.abs(change) > tol


def perturbation_audit(
    estimator: Any,
    essays: ArrayLike,
    *,
    perturbations: str
    | BasePerturbation
    | Iterable[str | BasePerturbation]
    | Mapping[str, str | BasePerturbation] = "default",
    representation: Any = None,
    tolerance: float | str = "auto",
    score_scale: ArrayLike | None = None,
    prompt: str | None = None,
    metric: str | Callable[..., float] = "cosine",
    lipschitz_constant: float = 1.0,
    random_state: RandomStateLike = 0,
    return_details: bool = False,
) -> pandas.DataFrame | Bunch:
    """Score controlled edits of the essays: do scores stay, drop or change as they should.

    Each perturbation edits every essay (see :mod:`sklearn_fairaes.perturb`);
    the model scores the edited essays that differ from their original, and
    each (original, edited) pair is compared. A fair model keeps its score
    within ``tolerance`` under meaning-preserving edits (``expected="stay"``),
    lowers it by more than ``tolerance`` under edits that make the essay worse
    (``"drop"``), and moves it by more than ``tolerance`` under edits that
    change what the essay says (``"change"``: negation). This is the paper's
    paraphrase test (§5.2) extended to noised text and negation, as its
    conclusion (§6) asks, and to the overstability tests of Kumar et al. (2023).

    Parameters
    ----------
    estimator : estimator or dict of str to estimator
        A fitted scikit-learn estimator or pipeline whose ``predict`` takes a
        list of essays, e.g. ``make_pipeline(TfidfEssayVectorizer(),
        Ridge()).fit(essays, scores)``. A dict of them, by model name, audits
        every model on the same edited essays (made once): the tables then
        start with a ``model`` column, one block of rows per model.
    essays : list, array or pandas Series of str
        The essays to edit (at least two). Their scores by ``estimator`` are
        the originals; a held-out set is the usual choice.
    perturbations : "default", "all", str, BasePerturbation, list or dict, default="default"
        ``"default"``: every perturbation of
        :data:`~sklearn_fairaes.perturb.DEFAULT_PERTURBATIONS`, except
        ``"prompt_stuffing"`` when ``prompt`` is None; ``"all"``: every one
        (needs ``prompt``). Or a name, a perturbation object, a list of them,
        or a dict mapping labels to them. Names are built with their default
        parameters, ``random_state`` and ``prompt``; objects are cloned and
        used as given.
    representation : transformer, default=None
        The task representation whose distance says how similar an edited
        essay is to its original (the paper's task-specific metric). A fitted
        transformer is used as it is; an unfitted one is cloned and fitted on
        ``essays``. None uses ``TfidfEssayVectorizer()`` (the paper's TF-IDF,
        §4.2.2) fitted on ``essays``; it needs enough essays for its
        ``min_df=3``.
    tolerance : float or "auto", default="auto"
        Largest score change, in score units, that counts as no change. A
        number is used as given. ``"auto"`` is half the smallest step between
        the distinct scores of ``score_scale`` (0.5 on an integer scale:
        a smaller change moves a rounded score by at most one point, and
        only when the score sits near a rounding boundary); without
        ``score_scale``, of the estimator's numeric ``classes_`` (a
        classifier); otherwise 0.5, which assumes integer scores: pass
        ``score_scale`` or a number when the scale is not in whole points.
    score_scale : array-like, default=None
        The possible scores, or any scores on the scale (e.g. the human scores
        the model was trained on), for ``tolerance="auto"``. A non-integer
        scale with more than 50 distinct values has no step: pass
        ``tolerance`` instead.
    prompt : str, default=None
        The task statement, for ``"prompt_stuffing"``.
    metric : str or callable, default="cosine"
        Distance between representations, as in
        :func:`~sklearn_fairaes.metrics.lipschitz_fraction`.
    lipschitz_constant : float, default=1.0
        The constant ``L`` of the Lipschitz condition.
    random_state : int, RandomState instance or None, default=0
        Seed of the perturbations built from names (each essay's draw also
        depends on its text, so results do not depend on the order of the
        essays).
    return_details : bool, default=False
        Also return the per-essay table, the edited essays and their records.

    Returns
    -------
    summary : pandas.DataFrame
        One row per perturbation, in the order given, with the columns

        - ``perturbation``, ``family`` (``"preserving"`` or ``"changing"``),
          ``expected`` (``"stay"``, ``"drop"`` or ``"change"``);
        - ``n_essays``; ``n_changed``, the essays whose text the perturbation
          changed. **Every statistic below is over these essays only**: an
          essay left as it was (too short, nothing to negate, no placeholder)
          says nothing about the model;
        - ``mean_abs_change``, ``mean_change`` (signed: edited minus
          original score), ``max_abs_change``, in score units;
        - ``share_beyond_tolerance`` (``|change| > tolerance``) and the split
          ``share_down`` (``change < -tolerance``), ``share_within``,
          ``share_up`` (``change > tolerance``), which sum to 1;
        - ``share_expected``: share moving the expected way (``share_within``
          for ``"stay"``, ``share_down`` for ``"drop"``,
          ``share_beyond_tolerance`` for ``"change"``);
        - ``mean_distance``: mean task-representation distance between an
          essay and its edit; ``share_zero_distance``: share of edits the
          representation does not see at all (distance 0);
        - ``lipschitz_minmax`` and ``lipschitz_max``: share of (original,
          edited) pairs satisfying the Lipschitz condition, with distances
          and score differences min-max normalised or divided by their
          maxima (the two normalisations of the paper's Table 3 and of
          :func:`~sklearn_fairaes.metrics.lipschitz_fraction`; see Notes);
        - ``tolerance``: the tolerance used.

        ``summary.attrs`` holds ``tolerance``, ``tolerance_rule`` (where the
        tolerance came from), ``distance_range`` and ``outcome_range`` (the
        normalisation constants: ``(min, max)`` over all pairs of original
        essays) and ``metric``. With a dict of models, ``tolerance``,
        ``tolerance_rule`` and ``outcome_range`` are dicts by model name.
    details : Bunch
        Only with ``return_details=True``: ``summary``; ``details``, a
        DataFrame with one row per (perturbation, essay) and the columns
        ``perturbation``, ``essay`` (position in ``essays``), ``changed``,
        ``n_edits``, ``n_skipped``, ``note``, ``edit_preview`` (the first
        edits, ``'before' -> 'after'``), ``score_original``,
        ``score_perturbed``, ``change``, ``movement`` (``"down"``,
        ``"within"``, ``"up"``), ``moves_as_expected``, ``distance``,
        ``lipschitz_ok_minmax``, ``lipschitz_ok_max`` (unchanged essays have
        change 0 and distance 0);
        ``perturbed`` and ``records``, dicts from perturbation to the edited
        essays and their :class:`~sklearn_fairaes.perturb.PerturbationRecord`;
        ``tolerance``, ``tolerance_rule``, ``distance_range``,
        ``outcome_range``.

    Raises
    ------
    TypeError
        If ``estimator`` has no ``predict`` or an essay is not a string.
    ValueError
        If a perturbation name is unknown (the message lists them), fewer
        than two essays are given, ``"prompt_stuffing"`` is asked for without
        a prompt, or the tolerance cannot be set.

    Warns
    -----
    UndefinedMetricWarning
        When a perturbation changed none of the essays; its statistics are
        then NaN (``n_changed`` is 0). Also when every pair of original
        essays is at the same non-zero distance, as in
        :func:`~sklearn_fairaes.metrics.lipschitz_fraction`.

    Notes
    -----
    **Lipschitz check of single pairs.** :func:`~sklearn_fairaes.metrics.lipschitz_fraction`
    normalises distances and score differences over all pairs of essays. For
    an (original, edited) pair the same constants are used, taken over all
    pairs of the *original* essays by the blocked pairwise engine (no ``N x
    N`` matrix; the score differences from the sorted predictions). With
    min-max normalisation the pair satisfies the condition when ``(|dy| -
    min|dy|) / (max|dy| - min|dy|) <= L * (d - min d) / (max d - min d)``,
    where ``dy`` is the score change and ``d`` the distance to the edited
    essay; with max normalisation when ``|dy| / max|dy| <= L * d / max d``.
    An edit is usually closer to its original than any two essays are to
    each other, and a score change can be smaller than the smallest
    difference between two essays' scores; the min-max values are then
    clipped at 0 (the bottom of the normalised scale), so an edit that the
    representation does not see and the model does not score differently
    satisfies the condition. On pairs of original essays both are exactly
    the normalisations of :func:`~sklearn_fairaes.metrics.lipschitz_fraction`.

    Min-max is strict for near-duplicates: an edit closer to its original
    than the two closest essays of the corpus has normalised distance 0, so
    it satisfies the condition only if its score moves by no more than the
    smallest score difference between two essays (nearly 0 for a regression
    model). Read ``lipschitz_minmax`` as "the model gives near-duplicates the
    same score" and ``lipschitz_max`` as "the score moves no more, relative
    to the largest score difference, than the essay moves relative to the
    largest distance".

    **Sanity check.** A unigram bag-of-words model
    (``TfidfEssayVectorizer(ngram_range=(1, 1))``) sees the same words in
    the same numbers after ``"sentence_shuffle"``, so its scores change by
    exactly 0; with bigrams, the pairs spanning sentence boundaries change.

    References
    ----------
    Kumar, Y. et al. (2023). Automatic essay scoring systems are both
    overstable and oversensitive: explaining why and proposing defenses.
    Dialogue & Discourse 14(1).

    Ding, Y. et al. (2020). Don't take "nswvtnvakgxpm" for an answer -- the
    surprising vulnerability of automatic content scoring systems to
    adversarial input. COLING.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_fairaes import TfidfEssayVectorizer
    >>> from sklearn_fairaes.perturb import perturbation_audit
    >>> essays = ["I waited for the bus. It was late. I was patient.",
    ...           "My sister waited. She read a book. Then the train came.",
    ...           "Patience is hard. I am not patient. I hate waiting.",
    ...           "We waited for hours at the doctor. Nobody complained."]
    >>> scores = [4, 5, 2, 3]
    >>> model = make_pipeline(TfidfEssayVectorizer(min_df=1, ngram_range=(1, 1)),
    ...                       Ridge(alpha=0.1)).fit(essays, scores)
    >>> table = perturbation_audit(
    ...     model, essays, perturbations=["sentence_shuffle", "word_salad"],
    ...     representation=TfidfEssayVectorizer(min_df=1))
    >>> table[["perturbation", "expected", "n_changed", "mean_abs_change"]]
           perturbation expected  n_changed  mean_abs_change
    0  sentence_shuffle     drop          4         0.000000
    1        word_salad     drop          4         0.900449
    """
    pd = require("pandas", extra="report", purpose="the perturbation audit's tables")
    from ..metrics._pairs._engine import PairwiseEngine
    from ..metrics._pairs._types import check_real
    from ..metrics._scorer import _fitted
    from ..text import TfidfEssayVectorizer

    several = isinstance(estimator, dict)
    models = dict(estimator) if several else {None: estimator}
    if several and not models:
        raise ValueError("estimator is an empty dict; give at least one model")
    for label, model in models.items():
        if several and not isinstance(label, str):
            raise TypeError(f"model names (the dict's keys) must be str; got {label!r}")
        check_predictor(model, name="estimator" if not several else f"estimator[{label!r}]")
    essays = check_essays(essays, name="essays")
    if len(essays) < 2:
        raise ValueError(
            f"essays has {len(essays)} essay(s); at least 2 are needed (the Lipschitz "
            f"check normalises by the ranges over pairs of essays)"
        )
    L = check_real(lipschitz_constant, "lipschitz_constant", positive=True)
    if not isinstance(return_details, (bool, np.bool_)):
        raise TypeError(f"return_details must be True or False; got {return_details!r}")
    items = resolve_perturbations(perturbations, prompt=prompt, random_state=random_state)
    tolerances = {
        label: _resolve_tolerance(tolerance, score_scale, model)
        for label, model in models.items()
    }
    for _, perturbation in items:
        perturbation.fit()  # parameter errors before any scoring

    # The edits and their distances do not depend on the model: made once.
    n = len(essays)
    if representation is None:
        try:
            rep = TfidfEssayVectorizer().fit(essays)
        except ValueError as exc:
            raise ValueError(
                f"the default task representation, TfidfEssayVectorizer() (min_df=3), "
                f"could not be fitted on the {n} essays ({exc}); pass one that fits them, "
                f"e.g. representation=TfidfEssayVectorizer(min_df=1)"
            ) from exc
    else:
        rep = _fitted(representation, essays)
    R0 = _matrix(rep.transform(essays))
    engine = PairwiseEngine(R0, metric=metric, name="the representation of essays")
    d_min, d_max = engine.distance_range()[:2]
    d_range = (float(d_min), float(d_max))
    edits: list[_EditResult] = []
    for label, perturbation in items:
        texts, records = perturbation.transform_with_records(essays)
        changed = np.array([t != e for t, e in zip(texts, essays)], dtype=bool)
        idx = np.flatnonzero(changed)
        distance = np.zeros(n)
        if idx.size:
            edited = [texts[i] for i in idx]
            distance[idx] = _paired_distances(
                R0[idx], _matrix(rep.transform(edited)), metric
            )
        edits.append((label, perturbation, texts, records, changed, idx, distance))

    summaries: list[pandas.DataFrame] = []
    details: list[pandas.DataFrame] = []
    outcome_ranges: dict[str | None, tuple[float, float]] = {}
    for model_label, model in models.items():
        tol = tolerances[model_label][0]
        summary, detail, outcome_ranges[model_label] = _score_edits(
            model, essays, edits, tol, d_range, L, pd
        )
        if several:
            summary.insert(0, "model", model_label)
            detail.insert(0, "model", model_label)
        summaries.append(summary)
        details.append(detail)

    summary = pd.concat(summaries, ignore_index=True) if several else summaries[0]

    def per_model(values: Mapping[str | None, Any]) -> Any:
        return dict(values) if several else values[None]

    tol_rules = {label: rule for label, (_, rule) in tolerances.items()}
    summary.attrs.update(
        tolerance=per_model({k: v[0] for k, v in tolerances.items()}),
        tolerance_rule=per_model(tol_rules),
        distance_range=d_range,
        outcome_range=per_model(outcome_ranges),
        metric=metric
        if isinstance(metric, str)
        else getattr(metric, "__name__", "callable"),
    )
    if not return_details:
        return summary
    return Bunch(
        summary=summary,
        details=pd.concat(details, ignore_index=True) if several else details[0],
        perturbed={label: texts for label, _, texts, *_ in edits},
        records={label: records for label, _, _, records, *_ in edits},
        tolerance=summary.attrs["tolerance"],
        tolerance_rule=summary.attrs["tolerance_rule"],
        distance_range=d_range,
        outcome_range=summary.attrs["outcome_range"],
    )


def _score_edits(
    estimator: Any,
    essays: Sequence[str],
    edits: Sequence[_EditResult],
    tol: float,
    d_range: tuple[float, float],
    L: float,
    pd: ModuleType,
) -> tuple[pandas.DataFrame, pandas.DataFrame, tuple[float, float]]:
    """Summary and detail tables of one model over the edited essays."""
    from ..metrics._pairs._scaling import _normalise, _outcome_range, _scaling

    n = len(essays)
    name = "the estimator's predictions"
    y0 = check_scores(estimator.predict(essays), name=name, n_samples=n)
    o_min, o_max = _outcome_range(y0)
    o_range = (o_min, o_max)
    scalings = {
        normalize: (
            _scaling(*d_range, normalize, "distance"),
            _scaling(o_min, o_max, normalize, "score difference"),
        )
        for normalize in ("minmax", "max")
    }

    rows: list[dict[str, Any]] = []
    frames: list[pandas.DataFrame] = []
    for label, perturbation, texts, records, changed, idx, distance in edits:
        y1 = y0.copy()
        if idx.size:
            y1[idx] = check_scores(
                estimator.predict([texts[i] for i in idx]), name=name, n_samples=idx.size
            )
        change = y1 - y0
        lipschitz_ok: dict[str, NDArray[np.bool_]] = {}
        for normalize, (d_scaling, o_scaling) in scalings.items():
            # values below the corpus minimum (an edit closer than any two
            # essays) are clipped to 0, the bottom of the normalised scale
            d_n = np.maximum(_normalise(distance, d_scaling), 0.0)
            o_n = np.maximum(_normalise(np.abs(change), o_scaling), 0.0)
            lipschitz_ok[normalize] = o_n <= L * d_n
        movement = np.where(change > tol, "up", np.where(change < -tol, "down", "within"))
        as_expected = _expected_mask(perturbation.expected, change, tol)
        frames.append(
            pd.DataFrame(
                {
                    "perturbation": label,
                    "essay": np.arange(n),
                    "changed": changed,
                    "n_edits": [len(r.edits) for r in records],
                    "n_skipped": [r.n_skipped for r in records],
                    "note": [r.note for r in records],
                    "edit_preview": [edit_preview(r.edits) for r in records],
                    "score_original": y0,
                    "score_perturbed": y1,
                    "change": change,
                    "movement": movement,
                    "moves_as_expected": as_expected,
                    "distance": distance,
                    "lipschitz_ok_minmax": lipschitz_ok["minmax"],
                    "lipschitz_ok_max": lipschitz_ok["max"],
                },
                columns=list(DETAIL_COLUMNS),
            )
        )
        row: dict[str, Any] = {
            "perturbation": label,
            "family": perturbation.family,
            "expected": perturbation.expected,
            "n_essays": n,
            "n_changed": int(idx.size),
            "tolerance": tol,
        }
        if idx.size:
            c = change[idx]
            row.update(
                mean_abs_change=float(np.mean(np.abs(c))),
                mean_change=float(np.mean(c)),
                max_abs_change=float(np.max(np.abs(c))),
                share_beyond_tolerance=float(np.mean(np.abs(c) > tol)),
                share_down=float(np.mean(c < -tol)),
                share_within=float(np.mean(np.abs(c) <= tol)),
                share_up=float(np.mean(c > tol)),
                share_expected=float(np.mean(as_expected[idx])),
                mean_distance=float(np.mean(distance[idx])),
                share_zero_distance=float(np.mean(distance[idx] == 0.0)),
                lipschitz_minmax=float(np.mean(lipschitz_ok["minmax"][idx])),
                lipschitz_max=float(np.mean(lipschitz_ok["max"][idx])),
            )
        else:
            warnings.warn(
                f"perturbation {label!r} changed none of the {n} essays (e.g. "
                f"{records[0].note or 'no edit'}), so its statistics are undefined; "
                f"they are NaN in its row",
                UndefinedMetricWarning,
                stacklevel=3,
            )
        rows.append(row)
    summary = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    return summary, pd.concat(frames, ignore_index=True), o_range


# ------------------------------------------------------------------ figure
# Okabe-Ito colours, as in the audit report's figures
_MOVEMENT_COLORS = {"down": "#D55E00", "within": "#BBBBBB", "up": "#0072B2"}
_FAMILY_COLORS = {"preserving": "#009E73", "changing": "#CC79A7"}
_FAMILY_LABELS = {
    "preserving": "meaning-preserving",
    "changing": "quality- or meaning-changing",
}
# the movements each expectation counts as right
_EXPECTED_MOVES = {"down": ("drop", "change"), "within": ("stay",), "up": ("change",)}


def _text(value: object) -> str:
    return str(value).replace("$", r"\$")


def plot_perturbation_audit(
    summary: pandas.DataFrame, *, title: str | None = None
) -> Figure:
    """Plot how scores moved under each perturbation, from the audit's summary table.

    Three panels share one row per perturbation (meaning-preserving first):

    1. **Where scores moved**: the shares of edited essays whose score went
       down, stayed within the tolerance, or went up; the expected share is
       outlined in black. Oversensitivity shows as colour on the
       meaning-preserving rows, overstability as grey (or blue) on the
       others.
    2. **Mean score change** (edited minus original), with the tolerance band
       shaded.
    3. **Representation distance**: the mean distance between an essay and
       its edit in the task representation (does the similarity metric see
       the edit?).

    With a ``model`` column holding several models, each model gets a row of
    panels.

    Parameters
    ----------
    summary : pandas.DataFrame
        The table returned by :func:`perturbation_audit` (optionally several
        of them concatenated with a ``model`` column).
    title : str, default=None
        Figure title; a default one when None.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure (no pyplot state is touched).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.perturb import plot_perturbation_audit
    >>> summary = pd.DataFrame({
    ...     "perturbation": ["typos", "word_salad"], "family": ["preserving", "changing"],
    ...     "expected": ["stay", "drop"], "n_changed": [10, 10],
    ...     "share_down": [0.1, 0.3], "share_within": [0.9, 0.6], "share_up": [0.0, 0.1],
    ...     "mean_change": [-0.1, -0.4], "mean_distance": [0.05, 0.8],
    ...     "tolerance": [0.5, 0.5]})
    >>> fig = plot_perturbation_audit(summary)
    >>> [ax.get_title() for ax in fig.axes]
    ['Where scores moved', 'Mean score change', 'Representation distance']
    """
    required = [
        "perturbation",
        "expected",
        "share_down",
        "share_within",
        "share_up",
        "mean_change",
        "mean_distance",
        "tolerance",
    ]
    missing = [c for c in required if c not in getattr(summary, "columns", ())]
    if missing:
        raise ValueError(
            f"summary lacks the column(s) {', '.join(missing)}; pass the table returned "
            f"by perturbation_audit()"
        )
    figure = require("matplotlib.figure", extra="report", purpose="the perturbation figure")
    patches = require(
        "matplotlib.patches", extra="report", purpose="the perturbation figure"
    )

    models: list[str | None]
    if "model" in summary.columns:
        models = list(dict.fromkeys(summary["model"].astype(str)))
        tables = [summary[summary["model"].astype(str) == m] for m in models]
    else:
        models, tables = [None], [summary]
    n_rows = max(len(t) for t in tables)
    fig = figure.Figure(
        figsize=(13.0, len(models) * (0.42 * n_rows + 1.6) + 0.8), layout="constrained"
    )
    axes = fig.subplots(len(models), 3, squeeze=False, sharey="row")
    for r, (model, table) in enumerate(zip(models, tables)):
        if "family" in table.columns:
            order = np.argsort((table["family"] != "preserving").to_numpy(), kind="stable")
            table = table.iloc[order]
        y = np.arange(len(table))[::-1]
        labels = [
            f"{_text(p)} ({e})" for p, e in zip(table["perturbation"], table["expected"])
        ]
        ax_share, ax_mean, ax_dist = axes[r]
        left = np.zeros(len(table))
        for move in ("down", "within", "up"):
            width = table[f"share_{move}"].to_numpy(dtype=float)
            expected = table["expected"].isin(_EXPECTED_MOVES[move]).to_numpy()
            ax_share.barh(
                y,
                np.nan_to_num(width),
                left=left,
                color=_MOVEMENT_COLORS[move],
                edgecolor=np.where(expected, "black", "none"),
                linewidth=1.2,
                label=move,
            )
            left += np.nan_to_num(width)
        ax_share.set_xlim(0, 1)
        ax_share.set_yticks(y, labels)
        ax_share.set_xlabel("Share of edited essays")
        ax_share.set_title("Where scores moved")

        mean = table["mean_change"].to_numpy(dtype=float)
        colors = [
            _FAMILY_COLORS.get(str(f), "#999999")
            for f in table.get("family", ["" for _ in y])
        ]
        ax_mean.barh(y, np.nan_to_num(mean), color=colors)
        tol = float(np.nanmax(table["tolerance"].to_numpy(dtype=float)))
        ax_mean.axvspan(-tol, tol, color="#BBBBBB", alpha=0.35, lw=0, zorder=0)
        ax_mean.axvline(0, color="black", lw=0.8)
        ax_mean.set_xlabel("Edited minus original score")
        ax_mean.set_title("Mean score change")

        ax_dist.barh(
            y, np.nan_to_num(table["mean_distance"].to_numpy(dtype=float)), color="#56B4E9"
        )
        ax_dist.set_xlabel("Mean distance to the original")
        ax_dist.set_title("Representation distance")
        for ax in (ax_share, ax_mean, ax_dist):
            ax.grid(axis="x", alpha=0.3)
            ax.set_axisbelow(True)
        if model is not None:
            ax_share.set_ylabel(_text(model))
    handles = [
        patches.Patch(color=c, label=f"score {m}") for m, c in _MOVEMENT_COLORS.items()
    ]
    handles.append(patches.Patch(facecolor="white", edgecolor="black", label="expected"))
    handles += [
        patches.Patch(color=c, label=_FAMILY_LABELS[f]) for f, c in _FAMILY_COLORS.items()
    ]
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=len(handles),
        frameon=False,
        fontsize=9,
    )
    fig.suptitle(
        _text(title)
        if title is not None
        else "Counterfactual audit: do scores stay under meaning-preserving edits and drop under harmful ones?"
    )
    return fig
