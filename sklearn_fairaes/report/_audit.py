"""The audit: the paper's whole individual-fairness methodology on a user's data.

``audit()`` computes plain data -- tables (pandas) and figures made from them --
and ``AuditResult`` hands them to the renderers (HTML, JSON, CSV). Nothing is
computed in the report layer.

The steps follow the paper: representations of the essays (§4.2), out-of-fold
predictions of several models and their agreement with the human scores
(§4.3, Table 2), interpretable features (§5.1.1), extreme pairs (§5.1.2,
Figure 1), aggregate feature differences (§5.1.3, Figure 2), paraphrase
robustness (§5.2), the Lipschitz fraction (§5.3.2, Table 3, Figure 4) and the
score difference by distance bin (§5.3.3, Figures 5 and 6).
"""

from __future__ import annotations

import json
import os
import platform
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from .._validation import (
    MAX_SCORE_POINTS,
    check_essays,
    check_groups,
    check_score_range,
)
from .._version import __version__
from ..resources import require

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure

    # pandas is imported at run time through require(); functions bind it to a
    # local ``pd``, so annotations name the classes themselves
    from pandas import DataFrame, Series

__all__ = ["audit", "AuditResult", "AuditInputError", "MODEL_NAMES", "REPRESENTATION_NAMES"]

REPRESENTATION_NAMES = ("bow", "tfidf", "sbert", "laser")
MODEL_NAMES = ("ridge", "random_forest", "gradient_boosting")
# Above this many essays the pair distances are not held in memory: every pair
# metric walks the pairs in blocks, and the distribution plots use a sample.
_MAX_CONDENSED = 6000
# The smallest corpus every analysis is defined on: 4 essays give 6 pairs, so
# the score-difference curve gets two distance bins of (at least) two pairs.
_MIN_ESSAYS = 4
# A representation whose pair distances are mostly one value (all essays empty
# vectors, or all identical) cannot tell essays apart: flagged in the report.
_DEGENERATE_SHARE = 0.5
_DIST_SAMPLE = 1_000_000
_HIST_BINS = 50

_Result = TypeVar("_Result")


class AuditInputError(ValueError):
    """The data given to the audit is unusable; the message says where and how to fix it.

    :func:`audit` raises it before any computation; it is a
    :class:`ValueError`, so ``except ValueError`` catches it too.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report import AuditInputError, audit
    >>> data = pd.DataFrame({"essay": ["One.", "Two.", "Three.", "Four."],
    ...                      "score": [1, 2, 3, 4]})
    >>> try:
    ...     audit(data, text_col="text", score_col="score")
    ... except AuditInputError as exc:
    ...     print(exc)
    text column 'text' not found; the columns are: 'essay', 'score'
    """


def _make_representation(name: str, *, sbert_model: str) -> Any:
    from .. import text

    if name == "bow":
        return text.BowVectorizer()
    if name == "tfidf":
        return text.TfidfEssayVectorizer()
    if name == "sbert":
        return text.SentenceBertEncoder(sbert_model)
    if name == "laser":
        return text.LaserEncoder()
    raise AuditInputError(
        f"unknown representation {name!r}; choose from {sorted(REPRESENTATION_NAMES)} or "
        f"pass a dict name -> transformer"
    )


def _make_model(name: str, *, random_state: int | None, n_jobs: int | None) -> Any:
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import Ridge

    if name == "ridge":
        return Ridge(alpha=1.0)
    if name == "random_forest":
        # sqrt features per split: the paper's default (all features) takes
        # minutes per fit on 15,000 n-gram columns; replicate_asap7.py uses it.
        return RandomForestRegressor(
            n_estimators=100, max_features="sqrt", random_state=random_state, n_jobs=n_jobs
        )
    if name == "gradient_boosting":
        # sklearn's exact-split boosting: no OpenMP (the histogram variant spins
        # its threads against joblib's on small machines) and sparse input as is;
        # sqrt features per split and row subsampling, like the paper's XGBoost
        # column/row sampling, keep it fast on 15,000 n-gram columns.
        return GradientBoostingRegressor(
            n_estimators=200,
            learning_rate=0.05,
            max_depth=3,
            subsample=0.8,
            max_features="sqrt",
            random_state=random_state,
        )
    raise AuditInputError(
        f"unknown model {name!r}; choose from {sorted(MODEL_NAMES)} or pass a dict "
        f"name -> regressor"
    )


def _named(
    objs: Mapping[str, Any] | str | Iterable[str],
    factory: Callable[..., Any],
    kind: str,
    **kw: Any,
) -> dict[str, Any]:
    if isinstance(objs, dict):
        if not objs:
            raise AuditInputError(f"{kind} is empty; give at least one")
        return dict(objs)
    if isinstance(objs, str):
        objs = [s.strip() for s in objs.split(",") if s.strip()]
    names = list(objs)
    if not names:
        raise AuditInputError(f"{kind} is empty; give at least one")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise AuditInputError(f"{kind} lists {dupes} more than once")
    return {n: factory(n, **kw) for n in names}


def _check_per_representation(mods: Mapping[str, Any], reps: Mapping[str, Any]) -> None:
    """A model may be one regressor or a dict representation -> regressor.

    The paper tunes each model per representation (e.g. XGBoost's learning rate,
    Ridge's alpha for BOW); a dict value keeps those settings under one model name.
    """
    for mname, model in mods.items():
        if not isinstance(model, dict):
            continue
        missing = [r for r in reps if r not in model]
        extra = sorted(str(r) for r in model if r not in reps)
        if missing or extra:
            raise AuditInputError(
                f"models[{mname!r}] is a dict of per-representation regressors but "
                + (f"has none for {missing}" if missing else f"names unknown {extra}")
                + f"; give one regressor for each of {list(reps)}"
            )


def describe_model(model: Any) -> str:
    """``Name(param=value, ...)`` with only the parameters changed from the defaults.

    sklearn's repr does this already; other libraries' (XGBoost's) list every
    parameter, which drowns the settings that matter in a report.
    """
    params = model.get_params(deep=False) if hasattr(model, "get_params") else {}
    try:
        defaults = type(model)().get_params(deep=False)
    except Exception:  # a class that needs arguments: show every set parameter
        defaults = {}
    changed = []
    for key in sorted(params):
        value = params[key]
        if key in defaults and _same(defaults[key], value):
            continue
        if value is None and key not in defaults:
            continue
        changed.append(f"{key}={value!r}")
    return f"{type(model).__name__}({', '.join(changed)})"


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN defaults (XGBoost's missing=nan)
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # arrays and other values without a truth value
        return a is b


def _column(frame: DataFrame, name: str, what: str) -> Series:
    if name not in frame.columns:
        cols = ", ".join(repr(c) for c in sorted(map(str, frame.columns)))
        raise AuditInputError(f"{what} column {name!r} not found; the columns are: {cols}")
    return frame[name]


def _prepare(
    data: object,
    text_col: str,
    score_col: str,
    rater_cols: str | Sequence[str] | None,
    group_col: str | None,
    id_col: str | None,
    paraphrases: str | Sequence[str] | Series | None,
) -> tuple[
    list[str],
    NDArray[np.float64],
    list[NDArray[np.float64]] | None,
    NDArray[Any] | None,
    NDArray[Any],
    list[str] | None,
]:
    pd = require("pandas", purpose="the audit")
    if not isinstance(data, pd.DataFrame):
        raise AuditInputError(
            f"data must be a pandas DataFrame, got {type(data).__name__}; read the file "
            f"first (or use the fairaes command, which reads tsv/csv/xlsx)"
        )
    if len(data) < _MIN_ESSAYS:
        raise AuditInputError(
            f"data has {len(data)} row(s); the audit needs at least {_MIN_ESSAYS} essays "
            f"(the score-difference curves need two distance bins of two pairs each)"
        )
    text_column = _column(data, text_col, "text")
    _check_text_not_numeric(text_column, text_col)
    try:
        essays = check_essays(
            text_column.reset_index(drop=True),
            name=f"column {text_col!r}",
            allow_empty=False,
        )
    except (TypeError, ValueError) as exc:
        raise AuditInputError(_row_hint(str(exc))) from None
    y = _numeric_column(data, score_col, "score")
    _check_integer_scale(y, f"score column {score_col!r}")
    raters = None
    if rater_cols:
        if isinstance(rater_cols, str):
            rater_cols = [c.strip() for c in rater_cols.split(",") if c.strip()]
        if len(rater_cols) != 2:
            raise AuditInputError(
                f"rater_cols must name exactly two columns (rater 1 and rater 2), got "
                f"{list(rater_cols)}"
            )
        if rater_cols[0] == rater_cols[1]:
            raise AuditInputError(
                f"rater_cols names column {rater_cols[0]!r} twice; give the columns of "
                f"the two raters who scored each essay independently"
            )
        raters = []
        for col in rater_cols:
            raters.append(_numeric_column(data, col, "rater"))
            _check_integer_scale(raters[-1], f"rater column {col!r}")
        if np.array_equal(raters[0], raters[1]):
            raise AuditInputError(
                f"rater columns {rater_cols[0]!r} and {rater_cols[1]!r} are identical in "
                f"every row, which would make the human-human agreement 1; give the "
                f"columns of the two raters who scored each essay independently"
            )
    groups = None
    if group_col is not None:
        groups = _check_group_column(_column(data, group_col, "group"), group_col)
    if id_col is not None:
        ids = _column(data, id_col, "id").astype(str).to_numpy()
        dup = pd.Series(ids).duplicated(keep=False).to_numpy()
        if dup.any():
            rows = (np.flatnonzero(dup)[:5] + 1).tolist()
            raise AuditInputError(
                f"id column {id_col!r} has duplicate ids (data rows {rows}, id "
                f"{_short(ids[dup][0])}); ids must be unique"
            )
    else:
        ids = np.array([str(i + 1) for i in range(len(essays))])
    if paraphrases is not None:
        if isinstance(paraphrases, str):
            paraphrases = _column(data, paraphrases, "paraphrase")
        try:
            paraphrases = check_essays(
                paraphrases.reset_index(drop=True)
                if hasattr(paraphrases, "reset_index")
                else paraphrases,
                name="paraphrases",
            )
        except (TypeError, ValueError) as exc:
            raise AuditInputError(str(exc)) from None
        if len(paraphrases) != len(essays):
            raise AuditInputError(
                f"paraphrases has {len(paraphrases)} entries for {len(essays)} essays; "
                f"give one paraphrase per essay, in the same order"
            )
    return essays, y, raters, groups, ids, paraphrases


def _check_perturbations(
    perturbations: str | Sequence[str] | None, prompt: str | None, n_essays: int
) -> list[str] | None:
    """The perturbation names to run (None: none), checked before any work."""
    if perturbations is None:
        return None
    from ..perturb import DEFAULT_PERTURBATIONS, PERTURBATION_NAMES

    if isinstance(n_essays, bool) or not isinstance(n_essays, int) or n_essays < 2:
        raise AuditInputError(
            f"n_perturbation_essays must be an int >= 2, got {n_essays!r}"
        )
    if isinstance(perturbations, str):
        if perturbations == "default":
            names = [
                p
                for p in DEFAULT_PERTURBATIONS
                if prompt is not None or p != "prompt_stuffing"
            ]
        elif perturbations == "all":
            names = list(PERTURBATION_NAMES)
        else:
            names = [p.strip() for p in perturbations.split(",") if p.strip()]
    else:
        names = list(perturbations)
    unknown = [p for p in names if p not in PERTURBATION_NAMES]
    if unknown or not names:
        raise AuditInputError(
            f"unknown perturbation(s) {unknown}; choose from {list(PERTURBATION_NAMES)}, "
            f"'default' or 'all'"
            if unknown
            else "perturbations is empty; give at least one name, 'default' or 'all'"
        )
    if "prompt_stuffing" in names and prompt is None:
        raise AuditInputError(
            "perturbation 'prompt_stuffing' needs the task statement: pass prompt= "
            "(or --prompt-file), or leave it out"
        )
    return names


def _perturbation_tables(
    names: Sequence[str],
    essays: Sequence[str],
    y: NDArray[np.float64],
    ids: NDArray[Any],
    reps: Mapping[str, Any],
    mods: Mapping[str, Any],
    fitted_reps: Mapping[str, Any],
    *,
    prompt: str | None,
    n_sample: int,
    random_state: int | None,
    notes: list[str],
) -> dict[str, DataFrame]:
    """Counterfactual audit of every representation x model on held-out essays."""
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    from ..perturb import perturbation_audit

    pd = require("pandas", purpose="the audit")
    n = len(essays)
    k = int(min(n_sample, max(2, n // 5)))
    rng = np.random.default_rng(random_state)
    held = np.sort(rng.choice(n, size=k, replace=False))
    train = np.setdiff1d(np.arange(n), held)
    train_essays = [essays[i] for i in train]
    sample = [essays[i] for i in held]
    summaries: list[DataFrame] = []
    examples: list[dict[str, str]] = []
    for rname, rep in reps.items():
        # the representation is fitted once and shared by the models' pipelines
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            train_rep = clone(rep)
            X_train = train_rep.fit_transform(train_essays)
        pipes = {}
        for mname, model in mods.items():
            model = model[rname] if isinstance(model, dict) else model
            pipes[mname] = Pipeline(
                [
                    ("representation", train_rep),
                    ("model", clone(model).fit(X_train, y[train])),
                ]
            )
        with warnings.catch_warnings():
            # long-text truncation notes repeat on every predict call
            warnings.simplefilter("ignore", category=UserWarning)
            res = perturbation_audit(
                pipes,
                sample,
                perturbations=names,
                representation=fitted_reps[rname],
                score_scale=y,
                prompt=prompt,
                random_state=random_state,
                return_details=True,
            )
        summaries.append(res.summary.assign(representation=rname))
        det = res.details
        if "model" in det.columns:
            det = det[det["model"] == next(iter(pipes))]
        for pname in names:
            rows = det[(det["perturbation"] == pname) & det["changed"]]
            if len(rows):
                row = rows.iloc[0]
                examples.append(
                    {
                        "representation": rname,
                        "perturbation": pname,
                        "id": ids[held[int(row["essay"])]],
                        "edit_preview": str(row["edit_preview"]),
                        "note": str(row["note"]),
                    }
                )
    summary = pd.concat(summaries, ignore_index=True)
    if "model" not in summary.columns:  # one model: perturbation_audit omits the column
        summary.insert(0, "model", next(iter(mods)))
    rest = [c for c in summary.columns if c not in ("representation", "model")]
    notes.append(
        f"Counterfactual edits: {k} essays held out at random, models refitted on the "
        f"other {n - k}."
    )
    return {
        "perturbation": summary[["representation", "model", *rest]],
        "perturbation_examples": pd.DataFrame(
            examples,
            columns=["representation", "perturbation", "id", "edit_preview", "note"],
        ),
    }


def _check_integer_scale(values: NDArray[np.float64], what: str) -> None:
    """Refuse non-integer scores before any work: QWK needs integer score points.

    Half-point scales (e.g. ELLIPSE's 1.0-5.0 in steps of 0.5) are common; the
    message names the factor that makes them integers.
    """
    frac = np.abs(values - np.round(values)) > 1e-9
    if not frac.any():
        return
    i = int(np.flatnonzero(frac)[0])
    factor = next(
        (k for k in (2, 3, 4, 5, 10, 100) if np.allclose(values * k, np.round(values * k))),
        None,
    )
    fix = (
        f"multiply the scores by {factor} (and divide the report's score units by "
        f"{factor} when reading it)"
        if factor is not None
        else "round them to the reported score points"
    )
    raise AuditInputError(
        f"{what} holds non-integer scores (data row {i + 1}: {_value(values[i])}; "
        f"{int(frac.sum())} such row(s)); agreement (QWK) is defined on integer score "
        f"points: {fix}"
    )


def _short(value: object, limit: int = 40) -> str:
    """``repr`` of a cell, cut to ``limit`` characters: a message stays one line."""
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _value(x: float) -> str:
    """A score as people write it (no numpy repr, at most 6 significant digits)."""
    return f"{float(x):.6g}"


def _check_text_not_numeric(column: Series, text_col: str) -> None:
    """Refuse a text column that holds numbers: it is the wrong column.

    Such "essays" have no words, so the vocabulary representations would be
    empty and every distance 0; the audit says so before any work.
    """
    pd = require("pandas", purpose="the audit")
    values = column.reset_index(drop=True)
    numeric = pd.to_numeric(values, errors="coerce")
    if len(values) and numeric.notna().all():
        raise AuditInputError(
            f"text column {text_col!r} holds numbers in every row (data row 1: "
            f"{_short(values.iloc[0])}), not essays; pass the column with the essay "
            f"text (--text-col / text_col)"
        )


def _numeric_column(data: DataFrame, col: str, what: str) -> NDArray[np.float64]:
    """A score column as finite floats; refuse text and non-finite cells by data row."""
    pd = require("pandas", purpose="the audit")
    raw = _column(data, col, what).reset_index(drop=True)
    numeric = pd.to_numeric(raw, errors="coerce")
    bad = numeric.isna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AuditInputError(
            f"{what} column {col!r} must hold numbers; data row {i + 1} holds "
            f"{_short(raw.iloc[i])} ({int(bad.sum())} such row(s)). Fix or drop them."
        )
    values = numeric.to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AuditInputError(
            f"{what} column {col!r} holds a non-finite score in data row {i + 1} "
            f"({_short(raw.iloc[i])}; {int(bad.sum())} such row(s)); give the score "
            f"point, or drop the row"
        )
    return values


def _check_score_scale(
    y: NDArray[np.float64],
    raters: Sequence[NDArray[np.float64]] | None,
    score_col: str,
    rater_cols: Sequence[str] | None,
    score_range: object,
) -> tuple[tuple[float, float], str]:
    """The human score scale, declared or inferred, and whether it was declared.

    Every score must lie on the scale: one mistyped value (1e12, -1e308)
    would otherwise dominate the min-max normalisation of the Lipschitz
    fraction, overflow the models or make the agreement arrays too large for
    memory. Rater columns keep a scale of their own (a resolved score is
    often the raters' sum: ASAP's 2-24 from two 0-12 raters), inferred from
    their values and held to the same limit of ``MAX_SCORE_POINTS`` points.
    """
    if score_range is not None:
        try:
            lo, hi = check_score_range(score_range)
        except (TypeError, ValueError) as exc:
            raise AuditInputError(
                f"{exc}; it declares the scale of {score_col!r}"
            ) from None
        source = "declared"
        outside = (y < lo) | (y > hi)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise AuditInputError(
                f"score column {score_col!r} holds {_value(y[i])} in data row {i + 1}, "
                f"outside the declared score scale {lo:g} to {hi:g} ({int(outside.sum())} "
                f"such row(s)); fix those rows, or declare the scale the scores use"
            )
    else:
        lo, hi = float(y.min()), float(y.max())
        source = "inferred"
        _check_span(y, f"score column {score_col!r}")
    if lo == hi or np.all(y == y[0]):
        raise AuditInputError(
            f"score column {score_col!r} holds the same score ({_value(y[0])}) in every "
            f"row; agreement, the Lipschitz fraction and the feature profiles compare "
            f"different scores and are undefined. Audit essays with different scores"
        )
    if raters is not None and rater_cols is not None:
        for col, values in zip(rater_cols, raters):
            _check_span(values, f"rater column {col!r}", declare=False)
    return (lo, hi), source


def _check_span(values: NDArray[np.float64], what: str, *, declare: bool = True) -> None:
    """Refuse an inferred scale of more than ``MAX_SCORE_POINTS`` points."""
    lo, hi = float(values.min()), float(values.max())
    if hi - lo + 1 <= MAX_SCORE_POINTS:
        return
    # the value farther from the median is the likely typo
    med = float(np.median(values))
    i = int(np.argmax(values) if hi - med >= med - lo else np.argmin(values))
    fix = (
        "; or declare the scale with score_range=(low, high) (--score-range low,high)"
        if declare
        else ""
    )
    raise AuditInputError(
        f"{what} spans {_value(lo)} to {_value(hi)}, more than {MAX_SCORE_POINTS} score "
        f"points: data row {i + 1} holds {_value(values[i])}, far outside the other "
        f"scores (median {_value(med)}); fix that row{fix}"
    )


def _check_grammar(grammar: str | None) -> None:
    """Probe the LanguageTool asked for now, not after the other features are computed."""
    if grammar is None:
        return
    from ..features._grammar import resolve_grammar

    try:
        resolve_grammar(grammar)
    except (OSError, ImportError, LookupError, TypeError) as exc:
        # ConnectionError (no server) is an OSError; ResourceNotFoundError
        # (no local LanguageTool or Java) a LookupError or ImportError
        raise AuditInputError(f"grammar={_short(grammar, 80)}: {exc}") from None


def _fit_representations(
    reps: Mapping[str, Any], essays: Sequence[str], text_col: str
) -> dict[str, tuple[Any, Any]]:
    """Fit every representation on all essays: (fitted transformer, vectors) by name.

    They are fitted before anything else, vocabulary-based ones first (they
    are fast), so that a representation that finds no word in any essay
    stops the audit with a message before the features and models run.
    """
    from sklearn.base import clone
    from sklearn.feature_extraction.text import CountVectorizer

    order = sorted(reps, key=lambda r: not isinstance(reps[r], CountVectorizer))
    fitted: dict[str, tuple[Any, Any]] = {}
    for rname in order:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)  # truncation notes
            rep = clone(reps[rname])
            try:
                X = rep.fit_transform(essays)
            except ValueError as exc:
                # sklearn's words for "no term in any essay" (before and after
                # the min_df/max_df pruning)
                if not any(m in str(exc) for m in ("empty vocabulary", "no terms remain")):
                    raise
                raise AuditInputError(
                    f"representation {rname!r} keeps no word of the essays in column "
                    f"{text_col!r} (essays of digits or symbols only, words too rare "
                    f"for its min_df, or a script it does not keep); check that the "
                    f"column holds the essays, or use another representation (e.g. "
                    f"sbert)"
                ) from None
        fitted[rname] = (rep, X.to_numpy() if hasattr(X, "to_numpy") else X)
    return {r: fitted[r] for r in reps}


def _empty_vector_note(rname: str, X: Any, ids: NDArray[Any]) -> tuple[int, str | None]:
    """How many essays are all-zero vectors under ``rname``, and the note saying so."""
    if hasattr(X, "getnnz"):
        empty = np.asarray(X.getnnz(axis=1)) == 0
    else:
        empty = ~np.any(np.asarray(X) != 0, axis=1)
    k = int(empty.sum())
    if not k:
        return 0, None
    shown = ", ".join(_short(str(i), 20) for i in ids[empty][:10])
    return k, (
        f"{rname}: {k} essay(s) became empty (all-zero) vectors, with no word the "
        f"representation keeps (ids {shown}{', ...' if k > 10 else ''}); they are at "
        f"distance 0 from each other whatever they say, so their pairs are not "
        f"evidence of fair or unfair scoring."
    )


def _degenerate_distances(rname: str, d: NDArray[Any]) -> str | None:
    """A warning when most pair distances are 0 or one same value, else None."""
    d = np.asarray(d, dtype=float)
    if not d.size:
        return None
    share_zero = float(np.mean(d <= 1e-12))
    _, counts = np.unique(np.round(d, 12), return_counts=True)
    share_same = float(counts.max()) / d.size
    if max(share_zero, share_same) <= _DEGENERATE_SHARE:
        return None
    what = (
        f"{share_zero:.0%} of the essay pairs are at distance 0"
        if share_zero >= share_same
        else f"{share_same:.0%} of the essay pairs are at one same distance"
    )
    return (
        f"{rname}: {what}, so this representation hardly tells the essays apart; its "
        f"Lipschitz fractions, score-difference curves and extreme pairs say little "
        f"about fairness. Check the essays' text (language, script, empty essays) or "
        f"use another representation."
    )


def _check_group_column(column: Series, group_col: str) -> NDArray[Any]:
    """The group labels as str, one per essay; refuse what the group view cannot use.

    An empty cell (NaN, None, or blank text: the command line reads empty cells
    as ``""``) would silently become a group of its own, and one group leaves
    nothing to compare, so both stop the audit before any work.
    """
    values = column.reset_index(drop=True)
    text = values.astype(str)
    blank = (values.isna() | text.str.strip().eq("")).to_numpy()
    if blank.any():
        i = int(np.flatnonzero(blank)[0])
        raise AuditInputError(
            f"group column {group_col!r} is empty in data row {i + 1} "
            f"({_short(values.iloc[i])}; "
            f"{int(blank.sum())} row(s) in all); fill those cells (e.g. 'unknown') or "
            f"drop the rows"
        )
    labels = text.to_numpy()
    if "all" in set(labels):
        raise AuditInputError(
            f"group column {group_col!r} has a group named 'all', which the group "
            f"tables use for the row of all essays; rename that group"
        )
    try:
        return check_groups(labels, name=f"group column {group_col!r}", min_groups=2)
    except (TypeError, ValueError) as exc:
        raise AuditInputError(
            f"{exc}; pick another column or leave group_col out"
        ) from None


def _row_hint(message: str) -> str:
    # positions are 0-based inside the validator; people count rows from 1
    import re

    m = re.search(r"position (\d+)", message)
    if m:
        row = int(m.group(1)) + 1
        message = message.replace(m.group(0), f"data row {row}", 1)
    return message


def _dense(X: Any) -> NDArray[Any]:
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X)


def _progress(enabled: bool, total: int, desc: str) -> Any:
    if not enabled:
        return None
    try:
        tqdm = require("tqdm", purpose="progress bars").tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="step", leave=False)


def _sample_distances(
    X: Any,
    i: NDArray[np.integer[Any]],
    j: NDArray[np.integer[Any]],
    chunk: int = 50_000,
) -> NDArray[np.float64]:
    """Cosine distances of the pairs (i[k], j[k]), a chunk at a time."""
    out = np.empty(len(i))
    for start in range(0, len(i), chunk):
        a = _dense(X[i[start : start + chunk]])
        b = _dense(X[j[start : start + chunk]])
        na = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        sim = np.einsum("ij,ij->i", a, b) / np.where(na > 0, na, 1)
        out[start : start + chunk] = np.clip(1.0 - sim, 0.0, 2.0)
    return out


def _normalised_histogram(
    values: NDArray[Any], bins: int = _HIST_BINS
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    lo, hi = float(values.min()), float(values.max())
    scaled = (values - lo) / (hi - lo) if hi > lo else np.zeros_like(values)
    density, edges = np.histogram(scaled, bins=bins, range=(0.0, 1.0), density=True)
    return edges, density


# Columns of the "group_lipschitz" table (see the Notes of audit()).
_GROUP_LIPSCHITZ_COLUMNS = [
    "representation", "model", "scope", "group", "n_essays", "n_pairs", "n_satisfied",
    "fraction",
]  # fmt: skip


def _noting(
    collected: dict[str, list[str]],
    where: str,
    func: Callable[..., _Result],
    *args: Any,
    keep: type[Warning] | None = None,
    **kwargs: Any,
) -> _Result:
    """Call ``func``; keep its UndefinedMetricWarnings (or ``keep``) as report notes.

    A group of one essay or a fit without residual degrees of freedom is a fact
    about the data that the report should state once, not a warning per
    representation and model. Other warnings pass through unchanged.
    """
    from ..exceptions import UndefinedMetricWarning

    category = UndefinedMetricWarning if keep is None else keep
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    for w in caught:
        if issubclass(w.category, category):
            places = collected.setdefault(str(w.message), [])
            if where not in places:
                places.append(where)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


def _group_lipschitz_rows(
    rname: str, sname: str, result: Mapping[str, Any], n: int
) -> list[tuple[Any, ...]]:
    """Rows of the "group_lipschitz" table for one representation and score series."""
    rows = [
        (rname, sname, scope, "", n, int(result[pairs]), int(result[hits]),
         float(result[scope]))
        for scope, pairs, hits in (
            ("overall", "n_pairs", "n_satisfied"),
            ("within", "n_pairs_within", "n_satisfied_within"),
            ("cross", "n_pairs_cross", "n_satisfied_cross"),
        )
    ]  # fmt: skip
    for k, label in enumerate(result["group"]):
        rows.append(
            (
                rname,
                sname,
                "group",
                str(label),
                int(result["group_n_essays"][k]),
                int(result["group_n_pairs"][k]),
                int(result["group_n_satisfied"][k]),
                float(result["group_fraction"][k]),
            )
        )
    return rows


def _group_tables(
    predictions: Mapping[tuple[str, str], NDArray[Any]],
    y: NDArray[np.float64],
    groups: NDArray[Any],
    rows_glip: Sequence[tuple[Any, ...]],
    collected: dict[str, list[str]],
) -> dict[str, DataFrame]:
    """The group view's tables: agreement, fairness analyses and Lipschitz fractions.

    Each comes from one metric function of :mod:`sklearn_fairaes.metrics` on
    the out-of-fold predictions, so the report shows exactly what a direct
    call gives.
    """
    from ..metrics import fairness_analyses, group_agreement_report

    pd = require("pandas", purpose="the audit")
    agreement: list[DataFrame] = []
    summary: list[DataFrame] = []
    coefficients: list[DataFrame] = []
    for (rname, mname), p in predictions.items():
        where = f"{rname} + {mname}"
        report = _noting(
            collected, where, group_agreement_report, y, p, groups=groups
        ).reset_index()
        fair = _noting(collected, where, fairness_analyses, y, p, groups=groups)
        for frame, out in (
            (report, agreement),
            (fair.summary.reset_index(), summary),
            (fair.coefficients, coefficients),
        ):
            out.append(frame.assign(representation=rname, model=mname))

    def stacked(frames: list[DataFrame]) -> DataFrame:
        frame = pd.concat(frames, ignore_index=True)
        rest = [c for c in frame.columns if c not in ("representation", "model")]
        return frame[["representation", "model", *rest]]

    return {
        "group_agreement": stacked(agreement),
        "group_fairness": stacked(summary),
        "group_fairness_coefficients": stacked(coefficients),
        "group_lipschitz": pd.DataFrame(rows_glip, columns=_GROUP_LIPSCHITZ_COLUMNS),
    }


def audit(
    data: DataFrame,
    *,
    text_col: str,
    score_col: str,
    rater_cols: str | Sequence[str] | None = None,
    score_range: tuple[float, float] | None = None,
    prompt: str | None = None,
    group_col: str | None = None,
    id_col: str | None = None,
    representations: Sequence[str] | Mapping[str, Any] = ("bow", "tfidf", "sbert"),
    models: Sequence[str] | Mapping[str, Any] = (
        "ridge",
        "random_forest",
        "gradient_boosting",
    ),
    cv: int = 5,
    paraphrases: str | Sequence[str] | None = None,
    random_state: int = 0,
    n_jobs: int | None = None,
    grammar: str | None = None,
    sbert_model: str = "all-MiniLM-L6-v2",
    k_extreme: int = 1,
    n_profile_pairs: int = 10_000,
    n_paraphrase_samples: int = 100,
    perturbations: str | Sequence[str] | None = None,
    n_perturbation_essays: int = 200,
    progress: bool = False,
    title: str | None = None,
) -> AuditResult:
    """Run the paper's individual-fairness methodology on essays with human scores.

    For every representation x model it computes out-of-fold predictions
    (``KFold(cv, shuffle=True, random_state)``), agreement with the human scores
    (QWK, SMD, degradation from the human-human QWK, the Williamson et al.
    acceptance flags), the Lipschitz fraction (min-max and max normalisation),
    the 5- and 100-bin score-difference curves and the distributions of
    distances and score differences; the same pair metrics for the human
    scores; and, per representation, the extreme pairs with their twelve
    interpretable features, the nearest/medium/farthest feature-difference
    profile and paraphrase robustness (NDCG, NDCG@10, Spearman).

    Representations are fitted on all essays and models are cross-validated on
    those vectors, as in the paper. Each representation is also the similarity
    metric of its own rows of the tables.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per essay.
    text_col, score_col : str
        Columns with the essay text and the (resolved) human score.
    rater_cols : list of two str or str, default=None
        The two raters' columns (a list, or one comma-separated string);
        enables the degradation from human-human QWK. The two columns must
        differ. They keep a score scale of their own (a resolved score is
        often the raters' sum), inferred from their values.
    score_range : tuple of two int, default=None
        The declared scale ``(low, high)`` of ``score_col``, both ends
        included (e.g. ``(0, 12)``). A score outside it is refused, naming its
        row. None infers the scale from the human scores (their minimum to
        maximum; ``meta["score_range_source"]`` and the report say it was
        inferred); an inferred scale of more than 1,000 score points is
        refused as a typo (one score of 1e12 among 0-12), and so is every
        rater column spanning more.
    prompt : str, default=None
        The task statement. Without it the prompt-based features (overlap and
        prompt similarity) are left out, and the report says so.
    group_col : str, default=None
        A group column (e.g. a demographic); adds the group view (see *Group
        tables* below). Every row needs a label (an empty cell is refused,
        naming its row), there must be at least two groups, and no group may
        be called ``"all"`` (the label of the all-essays row). Labels are
        compared as text.
    id_col : str, default=None
        Unique essay ids (default: row numbers from 1).
    representations : sequence of str or dict, default=("bow", "tfidf", "sbert")
        Names from ``REPRESENTATION_NAMES`` or a dict name -> transformer.
    models : sequence of str or dict, default=("ridge", "random_forest", "gradient_boosting")
        Names from ``MODEL_NAMES`` or a dict name -> regressor, where a regressor
        may also be a dict representation name -> regressor (settings tuned per
        representation, as in the paper). The named
        models are Ridge(alpha=1), a 100-tree random forest and gradient boosting
        (200 trees of depth 3, rate 0.05, 80% row subsampling), both with sqrt
        features per split.
    cv : int, default=5
        Number of folds of the shuffled ``KFold`` that gives the out-of-fold
        predictions, between 2 and the number of essays (at least 4).
    paraphrases : str, sequence of str or None, default=None
        A column name or one paraphrase per essay; when None, paraphrases are
        made with :class:`~sklearn_fairaes.paraphrase.WordNetParaphraser`.
    random_state : int, default=0
        Seed of the folds, the models, the sampled pairs and essays and the
        generated paraphrases, so that a run can be repeated exactly.
    n_jobs : int, default=None
        Number of jobs to run in parallel (joblib); ``None`` means 1 unless in
        a :obj:`joblib.parallel_config` context, ``-1`` means all processors.
    grammar : str, default=None
        A LanguageTool server URL (or ``"local"``); without it ``language_errors``
        is left out and the report says so.
    sbert_model : str, default="all-MiniLM-L6-v2"
        The Sentence-BERT model of the ``"sbert"`` representation and of the
        prompt-similarity feature (a name or a folder, see
        :func:`~sklearn_fairaes.resources.resolve_sbert_model`).
    k_extreme : int, default=1
        Number of nearest and farthest pairs shown per representation.
    n_profile_pairs : int, default=10000
        Pairs per group of the feature-difference profile (capped at a tenth of
        all pairs).
    n_paraphrase_samples : int, default=100
        Essays sampled for the paraphrase-robustness ranking (at most all of
        them).
    perturbations : None, "default", "all", str or list of str, default=None
        Adds the counterfactual audit (see *Perturbation tables* below): names
        from :data:`~sklearn_fairaes.perturb.PERTURBATION_NAMES`, ``"default"``
        (every default perturbation; ``prompt_stuffing`` only with ``prompt``)
        or ``"all"``. None leaves it out.
    n_perturbation_essays : int, default=200
        Essays edited by the counterfactual audit: a random sample held out
        from the models it audits (at most a fifth of the essays).
    progress : bool, default=False
        Show a tqdm progress bar.
    title : str, default=None
        Title of the report; None gives "Individual-fairness audit".

    Returns
    -------
    result : AuditResult
        The tables, figures and metadata of the run, ready to render with
        :meth:`AuditResult.save`, :meth:`AuditResult.to_html` or
        :meth:`AuditResult.to_json`.

    Raises
    ------
    AuditInputError
        For unusable data (missing column, non-numeric or non-finite score, a
        score off the scale, all scores equal, identical rater columns, a
        text column of numbers, empty essay, duplicate id, empty group label,
        a single group, a representation that finds no words, an unreachable
        ``grammar`` server, too many folds, ...), before any computation.
        Rows are data rows counted from 1 (the file's header is not counted).

    Notes
    -----
    **Group tables.** With ``group_col``, four tidy tables put group fairness
    (the related work of the paper's §1) beside its individual fairness
    (§5.3.2, whose link to group fairness its §6 leaves open). Each is a
    direct call of a metric function on the out-of-fold predictions:

    * ``"group_agreement"``: ``representation``, ``model``, ``group``, then
      the columns of :func:`~sklearn_fairaes.metrics.group_agreement_report`
      with its defaults (``n``, ``human_mean``, ``human_sd``,
      ``machine_mean``, ``machine_sd``, ``qwk``, ``smd`` pooled with ddof=1,
      ``dsm`` against all essays, ``qwk_ok``, ``smd_ok``, ``dsm_ok`` with
      RSMTool's limit of 0.1 on the absolute DSM), one row per group and a
      last row ``group="all"`` for all essays.
    * ``"group_fairness"``: ``representation``, ``model``, ``metric``
      (``"osa"``, ``"osd"``, ``"csd"``), then the summary columns of
      :func:`~sklearn_fairaes.metrics.fairness_analyses` (``name``, ``r2``,
      ``r2_adjusted``, ``f_statistic``, ``df_num``, ``df_denom``,
      ``p_value``, ``base_group``).
    * ``"group_fairness_coefficients"``: ``representation``, ``model``, then
      its coefficient columns (``metric``, ``group``, ``term``,
      ``estimate``, ``std_error``, ``t_statistic``, ``p_value``, ``ci_low``,
      ``ci_high``).
    * ``"group_lipschitz"``: ``representation``, ``model`` (model names and
      ``"human"``), ``scope`` (``"overall"``, ``"within"``, ``"cross"``, or
      ``"group"`` for one row per group), ``group`` (the label on group rows,
      ``""`` otherwise), ``n_essays``, ``n_pairs``, ``n_satisfied`` and
      ``fraction``, from
      :func:`~sklearn_fairaes.metrics.group_lipschitz_fraction` with the
      min-max normalisation of the ``"lipschitz"`` table: its ``overall``
      row equals that table's ``lipschitz_minmax``.

    **Notes and warnings.** ``meta["notes"]`` records what the reader should
    know about the numbers: essays that became all-zero vectors under a
    representation (no word it keeps; their distances to each other are 0),
    the UserWarnings of the pair metrics (where they arose), and an inferred
    score scale. ``meta["warnings"]`` lists, per representation, a
    representation under which most pair distances are 0 or one same value:
    its Lipschitz fractions, curves and extreme pairs cannot tell essays
    apart, and the report shows the warning next to them.

    Undefined values (a group of one essay, a fit with no residual degrees of
    freedom) are NaN, and ``meta["notes"]`` says which and where.

    **Perturbation tables.** With ``perturbations``, every representation x
    model is refitted as one pipeline on all essays but a random sample of
    ``n_perturbation_essays`` (held out), and
    :func:`~sklearn_fairaes.perturb.perturbation_audit` edits the sample and
    scores the edits (tolerance: half a score point; distances in the
    model's own representation, fitted on all essays, as everywhere in the
    audit). ``"perturbation"`` holds its summary with ``representation`` and
    ``model`` columns in front; ``"perturbation_examples"`` one edited essay
    per perturbation (``representation``, ``perturbation``, ``id``,
    ``edit_preview``, ``note``).

    Examples
    --------
    >>> import sklearn_fairaes as sf
    >>> df = sf.load_demo_essays().iloc[:40]
    >>> res = sf.audit(df, text_col="essay", score_col="score", cv=3,
    ...                representations=["tfidf"], models=["ridge"],
    ...                paraphrases="paraphrase")
    >>> sorted(res.tables)[:3]
    ['agreement', 'distance_distribution', 'extreme_pair_features']
    >>> res.tables["lipschitz"]["model"].tolist()
    ['ridge', 'human']
    """
    from sklearn.base import clone
    from sklearn.model_selection import KFold, cross_val_predict

    from ..features import FEATURE_NAMES, InterpretableFeatures
    from ..features._interpretable import PROMPT_FEATURES
    from ..metrics import (
        agreement_report,
        condensed_distances,
        extreme_pairs,
        feature_difference_profile,
        group_lipschitz_fraction,
        lipschitz_fraction,
        paraphrase_ndcg,
        qwk,
        score_distance_curve,
        standardized_mean_difference,
    )

    pd = require("pandas", purpose="the audit")
    started = time.time()
    if isinstance(rater_cols, str):  # "r1,r2", as on the command line
        rater_cols = [c.strip() for c in rater_cols.split(",") if c.strip()]
    essays, y, raters, groups, ids, paraphrases = _prepare(
        data, text_col, score_col, rater_cols, group_col, id_col, paraphrases
    )
    (score_lo, score_hi), scale_source = _check_score_scale(
        y, raters, score_col, rater_cols, score_range
    )
    if not isinstance(cv, int) or isinstance(cv, bool) or not 2 <= cv <= len(essays):
        raise AuditInputError(
            f"cv must be an int between 2 and the number of essays ({len(essays)}), "
            f"got {cv!r}"
        )
    _check_grammar(grammar)
    reps = _named(
        representations, _make_representation, "representations", sbert_model=sbert_model
    )
    mods = _named(models, _make_model, "models", random_state=random_state, n_jobs=n_jobs)
    _check_per_representation(mods, reps)
    perturbation_list = _check_perturbations(perturbations, prompt, n_perturbation_essays)
    n = len(essays)
    notes: list[str] = []
    omitted: list[dict[str, str]] = []
    tables: dict[str, DataFrame] = {}
    steps = len(reps) * (len(mods) + 3) + 2
    bar = _progress(progress, steps, "audit")

    def tick(label: str) -> None:
        if bar is not None:
            bar.set_postfix_str(label)
            bar.update(1)

    # -- representations (paper §4.2), first: see _fit_representations
    represented = _fit_representations(reps, essays, text_col)
    empty_vectors: dict[str, int] = {}
    for rname, (_, X) in represented.items():
        empty_vectors[rname], note = _empty_vector_note(rname, X, ids)
        if note is not None:
            notes.append(note)
    representation_warnings: list[dict[str, str]] = []
    pair_warnings: dict[str, list[str]] = {}

    # -- interpretable features (paper §5.1.1)
    chosen = [f for f in FEATURE_NAMES]
    if prompt is None:
        chosen = [f for f in chosen if f not in PROMPT_FEATURES]
        for f in PROMPT_FEATURES:
            omitted.append({"feature": f, "reason": "no prompt was given"})
    if grammar is None:
        chosen.remove("language_errors")
        omitted.append(
            {
                "feature": "language_errors",
                "reason": "no LanguageTool server was given (grammar=URL)",
            }
        )
    feat = InterpretableFeatures(
        prompt=prompt,
        features=chosen,
        grammar=grammar,
        sbert_model=sbert_model,
        n_jobs=n_jobs,
        progress=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # long-text truncation notes
        F = np.asarray(feat.fit_transform(essays, y), dtype=float)
    feature_names = [str(f) for f in feat.get_feature_names_out()]
    tables["features"] = pd.DataFrame(F, columns=feature_names).assign(id=ids)[
        ["id", *feature_names]
    ]
    span = F.max(axis=0) - F.min(axis=0)
    F_norm = np.where(span > 0, (F - F.min(axis=0)) / np.where(span > 0, span, 1), 0.0)
    tick("features")

    # -- paraphrases (paper §5.2)
    paraphrase_source = "given" if paraphrases is not None else None
    if paraphrases is None:
        try:
            from ..paraphrase import WordNetParaphraser

            paraphrases = WordNetParaphraser(random_state=random_state).fit_transform(
                essays
            )
            paraphrase_source = "WordNetParaphraser"
        except (ImportError, LookupError) as exc:
            notes.append(f"Paraphrase robustness skipped: no offline paraphraser ({exc}).")
    tick("paraphrases")

    folds = KFold(cv, shuffle=True, random_state=random_state)
    predictions: dict[tuple[str, str], NDArray[Any]] = {}
    # one tuple per row of a table, in the column order given at the end
    rows_lip: list[tuple[Any, ...]] = []
    rows_curve: list[tuple[Any, ...]] = []
    rows_trend: list[tuple[Any, ...]] = []
    rows_dist: list[tuple[Any, ...]] = []
    rows_ext: list[tuple[Any, ...]] = []
    rows_ext_feat: list[tuple[Any, ...]] = []
    rows_prof: list[tuple[Any, ...]] = []
    rows_para: list[tuple[Any, ...]] = []
    rows_glip: list[tuple[Any, ...]] = []
    group_warnings: dict[str, list[str]] = {}
    fitted_reps: dict[str, Any] = {}
    for rname, (rep, X) in represented.items():
        fitted_reps[rname] = rep
        tick(f"{rname}: representation")
        for mname, model in mods.items():
            if isinstance(model, dict):
                model = model[rname]
            pred = cross_val_predict(clone(model), X, y, cv=folds, n_jobs=n_jobs)
            predictions[(rname, mname)] = pred
            tick(f"{rname} + {mname}")
        # pair metrics share one set of distances when they fit in memory
        if n <= _MAX_CONDENSED:
            D = condensed_distances(X, n_jobs=n_jobs)
            Xpair, metric = D, "precomputed"
            d_sample = D
        else:
            Xpair, metric = X, "cosine"
            rng = np.random.default_rng(random_state)
            i = rng.integers(0, n, _DIST_SAMPLE)
            j = rng.integers(0, n, _DIST_SAMPLE)
            keep = i != j
            i, j = i[keep], j[keep]
            d_sample = _sample_distances(X, i, j)
            notes.append(
                f"{rname}: distance distributions are drawn from {len(i):,} random pairs "
                f"({n:,} essays are too many to hold all pairs); every other pair metric "
                f"uses all pairs."
            )
        degenerate = _degenerate_distances(rname, d_sample)
        if degenerate is not None:
            representation_warnings.append({"representation": rname, "message": degenerate})
        edges, dens = _normalised_histogram(np.asarray(d_sample))
        rows_dist += [
            (rname, "distance", edges[k], edges[k + 1], dens[k]) for k in range(len(dens))
        ]
        series = {m: predictions[(rname, m)] for m in mods}
        series["human"] = y
        for sname, s in series.items():
            where = f"{rname}, human scores" if sname == "human" else f"{rname} + {sname}"
            # the pair metrics' UserWarnings (e.g. all distances equal) are facts
            # about this representation and these scores: kept as report notes
            lf_mm = _noting(
                pair_warnings,
                where,
                lipschitz_fraction,
                Xpair,
                s,
                metric=metric,
                normalize="minmax",
                return_counts=True,
                n_jobs=n_jobs,
                keep=UserWarning,
            )
            lf_max = _noting(
                pair_warnings,
                where,
                lipschitz_fraction,
                Xpair,
                s,
                metric=metric,
                normalize="max",
                n_jobs=n_jobs,
                keep=UserWarning,
            )
            # return_counts=True: the fraction with its pair counts
            counts = cast(Mapping[str, Any], lf_mm)
            rows_lip.append((rname, sname, counts["fraction"], lf_max, counts["n_pairs"]))
            if groups is not None:
                # the same pairs and min-max scaling as lf_mm, split by group
                glf = _noting(
                    group_warnings,
                    where,
                    group_lipschitz_fraction,
                    Xpair,
                    s,
                    groups=groups,
                    metric=metric,
                    normalize="minmax",
                    n_jobs=n_jobs,
                )
                rows_glip += _group_lipschitz_rows(rname, sname, glf, n)
            # every bin needs two pairs: tiny corpora get fewer than 100 bins
            for n_bins in sorted({min(5, n * (n - 1) // 4), min(100, n * (n - 1) // 4)}):
                curve = _noting(
                    pair_warnings,
                    where,
                    score_distance_curve,
                    Xpair,
                    s,
                    n_bins=n_bins,
                    metric=metric,
                    n_jobs=n_jobs,
                    keep=UserWarning,
                )
                for b in range(len(curve["bin"])):
                    rows_curve.append(
                        (
                            rname,
                            sname,
                            n_bins,
                            int(curve["bin"][b]),
                            int(curve["n_pairs"][b]),
                            float(curve["distance_min"][b]),
                            float(curve["distance_max"][b]),
                            float(curve["mean_abs_diff"][b]),
                            float(curve["sem"][b]),
                        )
                    )
                rows_trend.append(
                    (
                        rname,
                        sname,
                        n_bins,
                        float(curve["spearman_rho"]),
                        float(curve["spearman_pvalue"]),
                    )
                )
            if n <= _MAX_CONDENSED:
                from scipy.spatial.distance import pdist

                o = pdist(s[:, None], "cityblock")
            else:
                o = np.abs(s[i] - s[j])
            edges, dens = _normalised_histogram(o)
            rows_dist += [
                (rname, sname, edges[k], edges[k + 1], dens[k]) for k in range(len(dens))
            ]
        tick(f"{rname}: pair metrics")

        # extreme pairs and the feature profile (paper §5.1.2-5.1.3)
        ext = extreme_pairs(Xpair, k=k_extreme, metric=metric, n_jobs=n_jobs)
        for which in ("nearest", "farthest"):
            part = ext[which]
            for rank in range(len(part["i"])):
                a, b = int(part["i"][rank]), int(part["j"][rank])
                rows_ext.append(
                    (
                        rname,
                        which,
                        rank + 1,
                        a,
                        b,
                        ids[a],
                        ids[b],
                        float(part["distance"][rank]),
                        essays[a],
                        essays[b],
                        float(y[a]),
                        float(y[b]),
                    )
                )
                if rank == 0:
                    rows_ext_feat += [
                        (rname, which, f, float(F_norm[a, k]), float(F_norm[b, k]))
                        for k, f in enumerate(feature_names)
                    ]
        n_pairs_total = n * (n - 1) // 2
        n_prof = int(max(1, min(n_profile_pairs, n_pairs_total // 10)))
        prof = feature_difference_profile(
            Xpair,
            F,
            n_pairs=n_prof,
            metric=metric,
            feature_names=feature_names,
            n_jobs=n_jobs,
        )
        for g, group in enumerate(prof["group"]):
            label = {"median": "medium"}.get(str(group), str(group))
            rows_prof += [
                (rname, label, f, float(prof["mean_abs_diff"][g][k]))
                for k, f in enumerate(feature_names)
            ]
        tick(f"{rname}: pairs")

        if paraphrases is not None:
            Xp = rep.transform(paraphrases)
            Xp = Xp.to_numpy() if hasattr(Xp, "to_numpy") else Xp
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", category=UserWarning)
                # return_details=True: the scores with their spread and sample
                det = cast(
                    Mapping[str, Any],
                    paraphrase_ndcg(
                        _dense(X),
                        _dense(Xp),
                        n_samples=min(n_paraphrase_samples, n),
                        return_details=True,
                        random_state=random_state,
                    ),
                )
            rows_para.append(
                (
                    rname,
                    det["ndcg"],
                    det["ndcg_std"],
                    det["ndcg_at_10"],
                    det["ndcg_at_10_std"],
                    det["spearman"],
                    det["spearman_std"],
                    len(det["sample_indices"]),
                    paraphrase_source,
                )
            )

    # -- agreement (paper §4.3, Table 2)
    preds = {f"{r}+{m}": p for (r, m), p in predictions.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        rep_table = agreement_report(
            y,
            preds,
            rater1=None if raters is None else raters[0],
            rater2=None if raters is None else raters[1],
        ).reset_index()
        trunc = [qwk(y, p, rounding="truncate") for p in preds.values()]
        paper_smd = [
            abs(standardized_mean_difference(y, p, ddof=0)) for p in preds.values()
        ]
    split = rep_table["model"].str.split("+", n=1, expand=True)
    rep_table.insert(0, "representation", split[0])
    rep_table["model"] = split[1]
    rep_table.insert(rep_table.columns.get_loc("qwk") + 1, "qwk_truncated", trunc)
    rep_table.insert(rep_table.columns.get_loc("smd") + 1, "abs_smd_paper", paper_smd)
    if "degradation" not in rep_table.columns:  # no raters: the contract keeps the columns
        at = rep_table.columns.get_loc("abs_smd_paper")
        rep_table.insert(at - 1, "human_human_qwk", np.nan)
        rep_table.insert(at, "degradation", np.nan)
        rep_table.insert(rep_table.columns.get_loc("qwk_ok") + 1, "degradation_ok", False)
    tables["agreement"] = rep_table
    if raters is not None and rater_cols is not None:
        from ..metrics import agreement_rate

        r1, r2 = raters
        scale = np.arange(min(r1.min(), r2.min()), max(r1.max(), r2.max()) + 1)
        tables["human_agreement"] = pd.DataFrame(
            [
                {
                    "rater1": rater_cols[0],
                    "rater2": rater_cols[1],
                    "n": n,
                    "qwk": qwk(
                        r1,
                        r2,
                        labels=scale,
                    ),
                    "exact_agreement": agreement_rate(
                        r1,
                        r2,
                        labels=scale,
                    ),
                    "adjacent_agreement": agreement_rate(
                        r1,
                        r2,
                        tolerance=1,
                        labels=scale,
                    ),
                }
            ]
        )
    tables["lipschitz"] = pd.DataFrame(
        rows_lip,
        columns=["representation", "model", "lipschitz_minmax", "lipschitz_max", "n_pairs"],
    )
    tables["score_distance"] = pd.DataFrame(
        rows_curve,
        columns=[
            "representation",
            "model",
            "n_bins",
            "bin",
            "n_pairs",
            "distance_min",
            "distance_max",
            "mean_abs_diff",
            "se",
        ],
    )
    tables["trend"] = pd.DataFrame(
        rows_trend,
        columns=["representation", "model", "n_bins", "spearman_rho", "spearman_pvalue"],
    )
    tables["distance_distribution"] = pd.DataFrame(
        rows_dist, columns=["representation", "series", "bin_left", "bin_right", "density"]
    )
    tables["extreme_pairs"] = pd.DataFrame(
        rows_ext,
        columns=[
            "representation",
            "which",
            "rank",
            "row_a",
            "row_b",
            "id_a",
            "id_b",
            "distance",
            "text_a",
            "text_b",
            "score_a",
            "score_b",
        ],
    )
    tables["extreme_pair_features"] = pd.DataFrame(
        rows_ext_feat, columns=["representation", "which", "feature", "value_a", "value_b"]
    )
    tables["feature_profile"] = pd.DataFrame(
        rows_prof, columns=["representation", "group", "feature", "mean_abs_diff"]
    )
    if rows_para:
        tables["paraphrase"] = pd.DataFrame(
            rows_para,
            columns=[
                "representation",
                "ndcg",
                "ndcg_std",
                "ndcg_at_10",
                "ndcg_at_10_std",
                "spearman",
                "spearman_std",
                "n_samples",
                "source",
            ],
        )
    pred_frame = pd.DataFrame({"id": ids, "score": y})
    for key, p in preds.items():
        pred_frame[key] = p
    tables["predictions"] = pred_frame
    if groups is not None:
        tables.update(_group_tables(predictions, y, groups, rows_glip, group_warnings))
        for message, places in group_warnings.items():
            notes.append(f"Group view: {message} ({'; '.join(places)}).")
    if perturbation_list is not None:
        tables.update(
            _perturbation_tables(
                perturbation_list,
                essays,
                y,
                ids,
                reps,
                mods,
                fitted_reps,
                prompt=prompt,
                n_sample=n_perturbation_essays,
                random_state=random_state,
                notes=notes,
            )
        )
    tick("tables")
    if bar is not None:
        bar.close()
    for message, places in pair_warnings.items():
        notes.append(f"Pair metrics: {message} ({'; '.join(places)}).")
    if scale_source == "inferred":
        notes.append(
            f"Score scale {score_lo:g} to {score_hi:g} inferred from the human scores "
            f"(their lowest and highest); declare it with score_range=(low, high) "
            f"(--score-range low,high) when the rubric's scale is wider."
        )

    meta = {
        "title": title or "Individual-fairness audit",
        "n_essays": n,
        "score_min": float(y.min()),
        "score_max": float(y.max()),
        "score_range": [score_lo, score_hi],
        "score_range_source": scale_source,
        "text_col": text_col,
        "score_col": score_col,
        "rater_cols": (
            list(rater_cols) if raters is not None and rater_cols is not None else None
        ),
        "group_col": group_col,
        "prompt_given": prompt is not None,
        "representations": list(reps),
        "models": list(mods),
        "model_settings": {
            m: {r: describe_model(v[r]) for r in reps}
            if isinstance(v, dict)
            else describe_model(v)
            for m, v in mods.items()
        },
        "cv": cv,
        "random_state": random_state,
        "features": feature_names,
        "omitted_features": omitted,
        "paraphrase_source": paraphrase_source,
        "perturbations": None if perturbation_list is None else list(perturbation_list),
        "sbert_model": sbert_model if "sbert" in reps else None,
        "versions": _versions(),
        "started": datetime.fromtimestamp(started, timezone.utc).isoformat(
            timespec="seconds"
        ),
        "seconds": round(time.time() - started, 1),
        "notes": notes,
        "warnings": representation_warnings,
        "empty_vectors": empty_vectors,
    }
    return AuditResult(tables, meta)


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"sklearn_fairaes": __version__, "python": platform.python_version()}
    for pkg in (
        "scikit-learn",
        "numpy",
        "scipy",
        "pandas",
        "sentence-transformers",
        "torch",
    ):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


class AuditResult:
    """What :func:`audit` found: tables, figures and metadata, ready to render.

    The result is plain data: :func:`audit` computes the tables, and the
    methods here only format them (text, JSON, HTML, CSV files).

    Parameters
    ----------
    tables : dict of str -> pandas.DataFrame
        The tables of the run, by name (see :func:`audit` for their columns).
    meta : dict
        What was run, what was left out and why, versions and timing.

    Attributes
    ----------
    tables : dict of str -> pandas.DataFrame
        The tables, as given.
    figures : dict of str -> matplotlib.figure.Figure
        Made from the tables on first access (needs the ``report`` extra).
    meta : dict
        The metadata, as given.

    See Also
    --------
    audit : Run the audit and get its result.

    Examples
    --------
    A result is usually returned by :func:`audit`; this one is built by hand
    from the two tables its summary reads:

    >>> import pandas as pd
    >>> from sklearn_fairaes.report import AuditResult
    >>> agreement = pd.DataFrame({"representation": ["tfidf"], "model": ["ridge"],
    ...                           "qwk": [0.712], "smd": [-0.031],
    ...                           "acceptable": [True]})
    >>> lipschitz = pd.DataFrame({"representation": ["tfidf", "tfidf"],
    ...                           "model": ["ridge", "human"],
    ...                           "lipschitz_minmax": [0.9931, 0.9712],
    ...                           "lipschitz_max": [0.9975, 0.9803],
    ...                           "n_pairs": [780, 780]})
    >>> meta = {"title": "Demo audit", "n_essays": 40, "score_min": 2.0,
    ...         "score_max": 12.0, "cv": 3, "representations": ["tfidf"],
    ...         "models": ["ridge"], "omitted_features": [], "notes": []}
    >>> result = AuditResult({"agreement": agreement, "lipschitz": lipschitz}, meta)
    >>> result
    AuditResult(40 essays, representations=['tfidf'], models=['ridge'])
    >>> print(result.summary())  # doctest: +NORMALIZE_WHITESPACE
    Demo audit: 40 essays, scores 2-12, 3-fold CV
    representation model                   QWK  |SMD|  LF min-max   LF max  accepted
    tfidf          ridge                 0.712  0.031      0.9931   0.9975  yes
    tfidf          human scores                            0.9712   0.9803
    >>> result.to_json_dict()["tables"]["agreement"][0]["qwk"]
    0.712
    """

    def __init__(self, tables: dict[str, DataFrame], meta: dict[str, Any]) -> None:
        self.tables = tables
        self.meta = meta
        self._figures: dict[str, Figure] | None = None

    def __repr__(self) -> str:
        return (
            f"AuditResult({self.meta['n_essays']} essays, representations="
            f"{self.meta['representations']}, models={self.meta['models']})"
        )

    @property
    def figures(self) -> dict[str, Figure]:
        """The report's figures, made from the tables on first access.

        Returns
        -------
        figures : dict of str -> matplotlib.figure.Figure
            One figure per analysis whose table is present (see
            ``make_figures`` of ``sklearn_fairaes.report._plots``).
        """
        if self._figures is None:
            from ._plots import make_figures

            self._figures = make_figures(self.tables, self.meta)
        return self._figures

    def summary(self) -> str:
        """Return a plain-text summary: agreement and Lipschitz fraction per combination.

        Returns
        -------
        text : str
            One line per representation and model (QWK, absolute SMD, both
            Lipschitz fractions and whether it is acceptable), one per
            representation for the human scores, then the notes.
        """
        agree = self.tables["agreement"].set_index(["representation", "model"])
        lip = self.tables["lipschitz"].set_index(["representation", "model"])
        lines = [
            f"{self.meta['title']}: {self.meta['n_essays']} essays, scores "
            f"{self.meta['score_min']:g}-{self.meta['score_max']:g}, {self.meta['cv']}-fold CV",
            f"{'representation':<15}{'model':<20}{'QWK':>7}{'|SMD|':>7}{'LF min-max':>12}"
            f"{'LF max':>9}  accepted",
        ]
        for (r, m), row in agree.iterrows():
            lrow = lip.loc[(r, m)]
            lines.append(
                f"{r:<15}{m:<20}{row['qwk']:>7.3f}{abs(row['smd']):>7.3f}"
                f"{lrow['lipschitz_minmax']:>12.4f}{lrow['lipschitz_max']:>9.4f}  "
                f"{'yes' if row['acceptable'] else 'no'}"
            )
        for r in self.meta["representations"]:
            if (r, "human") in lip.index:
                lrow = lip.loc[(r, "human")]
                lines.append(
                    f"{r:<15}{'human scores':<20}{'':>7}{'':>7}"
                    f"{lrow['lipschitz_minmax']:>12.4f}{lrow['lipschitz_max']:>9.4f}"
                )
        for item in self.meta["omitted_features"]:
            lines.append(f"note: {item['feature']} left out: {item['reason']}")
        lines += [f"note: {t}" for t in self.meta["notes"]]
        lines += [f"warning: {w['message']}" for w in self.meta.get("warnings") or []]
        return "\n".join(lines)

    def to_json_dict(self) -> dict[str, Any]:
        """Return the tables (as records) and metadata as JSON-able Python objects.

        Returns
        -------
        data : dict
            ``{"meta": {...}, "tables": {name: [record, ...]}}``, with NaN and
            missing values as None (see
            ``to_json_dict`` of ``sklearn_fairaes.report._html``).
        """
        from ._html import to_json_dict

        return to_json_dict(self.tables, self.meta)

    def to_json(self, path: str | os.PathLike[str]) -> None:
        """Write ``results.json``-style output to ``path``.

        Parameters
        ----------
        path : str or path-like
            The file to write (UTF-8 JSON, indented; replaced if it exists).
        """
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_json_dict(), fh, indent=1, allow_nan=False)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """Render the self-contained HTML report; write it to ``path`` when given.

        Parameters
        ----------
        path : str or path-like, default=None
            The file to write (UTF-8; replaced if it exists); None writes nothing.

        Returns
        -------
        html : str
            The complete HTML document, with the figures embedded.
        """
        from ._html import render_html

        page = render_html(self.tables, self.meta, self.figures)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(page)
        return page

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write ``report.html``, ``results.json`` and ``tables/*.csv`` into ``folder``.

        The report is written into a sibling ``.FOLDER.partial-*`` and renamed to
        ``folder`` when complete, with a marker file ``.fairaes-report`` listing
        what was written; an earlier report of ours at ``folder`` is replaced
        (renamed aside, then deleted), so ``folder`` holds either the old or the
        new complete report. A process killed between the two renames leaves the
        old report in ``.FOLDER.old-*``; the next save or ``fairaes`` run on
        ``folder`` puts it back (see ``sklearn_fairaes.report._output``). The
        folder and files get the user's umask. CSV cells that begin with ``=``,
        ``+``, ``-``, ``@``, a tab or a carriage return get a leading ``'`` so that
        spreadsheets show them as text; ``results.json`` keeps the raw text.

        Parameters
        ----------
        folder : str or path-like
            A missing or empty folder, or an earlier report of ours holding
            only the files it wrote. Anything else is refused: files of other
            programs are never deleted.

        Raises
        ------
        ValueError
            If ``folder`` is a file, a folder that is not a report of ours or
            holds other files, the current or home folder, or is being written
            by another run.
        OSError
            If a file cannot be written (e.g. the disk is full); ``folder`` is
            then unchanged.
        """
        from ._output import claim_folder

        claim = claim_folder(folder, force=True, option="folder")
        try:
            claim.commit(self._write_files)
        finally:
            claim.release()

    def _write_files(self, folder: Path) -> list[str]:
        """Write the report's files into the new folder ``folder``; return their names."""
        from ._output import neutralise_formulas, pause

        written = []
        (folder / "tables").mkdir()
        for name, frame in self.tables.items():
            # a spreadsheet would run "=cmd|..." in an essay or id as a formula;
            # CRLF rows (RFC 4180) make the writer quote a cell holding a lone CR,
            # which a "\n" terminator leaves bare, splitting the row in two
            path = folder / "tables" / f"{name}.csv"
            neutralise_formulas(frame).to_csv(path, index=False, lineterminator="\r\n")
            written.append(f"tables/{name}.csv")
            pause("between-files")
        self.to_json(folder / "results.json")
        written.append("results.json")
        pause("between-files")
        self.to_html(folder / "report.html")
        written.append("report.html")
        return written
