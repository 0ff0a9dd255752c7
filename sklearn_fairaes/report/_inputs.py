"""The audit's inputs read and checked: columns, scales, raters, groups, systems.

:func:`~sklearn_fairaes.report._build.plan_audit` reads every input of
:func:`~sklearn_fairaes.report.audit` through the functions here, for every
prompt, before any computation: a blank essay, a score off its prompt's scale,
a rater column spanning too much, a group with one label, a reserved system
name, a perturbation that needs a prompt text, an unreachable LanguageTool
server or a missing neural model is refused with :class:`AuditInputError`,
whose message names the column, data row (from 1, the header not counted)
and prompt, and says how to fix it. The options themselves (``cv``,
``n_neighbors``, ...) are checked by ``report._config``.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from .._validation import (
    MAX_SCORE_POINTS,
    check_essays,
    check_groups,
    check_score_column,
    check_score_range,
)
from ..resources import require
from ._config import AuditInputError
from ._study import Settings

if TYPE_CHECKING:
    # pandas is imported at run time through require()
    from pandas import DataFrame, Series

# Names the tables use for rows that are not a user's system.
RESERVED_NAMES = ("human", "pooled", "all")
# How the summary and the report label the human scores' rows.
HUMAN_LABEL = "human scores"
# The columns of the predictions table before the systems' columns.
PREDICTION_COLUMNS = ("prompt", "id", "score")
# The smallest corpus every analysis is defined on: 4 essays give 6 pairs, so
# the score-difference curve gets two distance bins of (at least) two pairs.
MIN_ESSAYS = 4


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN defaults (XGBoost's missing=nan)
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # arrays and other values without a truth value
        return a is b


def _names(objs: str | Iterable[str], kind: str) -> list[str]:
    if isinstance(objs, str):
        objs = [s.strip() for s in objs.split(",") if s.strip()]
    names = list(objs)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise AuditInputError(f"{kind} lists {dupes} more than once")
    return names


# -- messages ---------------------------------------------------------------------


def short(value: object, limit: int = 40) -> str:
    """``repr`` of a cell, cut to ``limit`` characters: a message stays one line."""
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def value_text(x: float) -> str:
    """A score as people write it (no numpy repr, at most 6 significant digits)."""
    return f"{float(x):.6g}"


def _row_hint(message: str) -> str:
    # positions are 0-based inside the validator; people count rows from 1
    m = re.search(r"position (\d+)", message)
    if m:
        row = int(m.group(1)) + 1
        message = message.replace(m.group(0), f"data row {row}", 1)
    return message


class _Where:
    """How a message names a data row: ``data row 5`` or ``data row 5 (prompt '3')``.

    ``prompt_ids`` is each row's prompt; ``several`` whether the data has a
    prompt column (without one, messages name no prompt).
    """

    def __init__(self, prompt_ids: NDArray[Any], several: bool) -> None:
        self.prompt_ids = prompt_ids
        self.several = several

    def row(self, i: int) -> str:
        if not self.several:
            return f"data row {i + 1}"
        return f"data row {i + 1} (prompt {self.prompt_ids[i]!r})"

    def of(self, prompt: str) -> str:
        """`` of prompt '3'`` with several prompts, else nothing."""
        return f" of prompt {prompt!r}" if self.several else ""

    def prompt(self, prompt: str) -> str | None:
        """The prompt to name in a message, or None without a prompt column."""
        return prompt if self.several else None


# -- columns --------------------------------------------------------------------


def column(frame: DataFrame, name: str, what: str) -> Series:
    """``frame[name]``, refused with the list of columns when it is not there."""
    if name not in frame.columns:
        cols = ", ".join(repr(c) for c in sorted(map(str, frame.columns)))
        raise AuditInputError(f"{what} column {name!r} not found; the columns are: {cols}")
    return frame[name].reset_index(drop=True)


def _numeric(
    raw: Series,
    name: str,
    kind: str,
    where: _Where,
    scales: Mapping[str, tuple[tuple[float, float], str]] | None = None,
) -> NDArray[np.float64]:
    """A column of scores as floats, checked prompt by prompt (and on its scale).

    :func:`~sklearn_fairaes._validation.check_score_column` refuses blank,
    text and non-finite cells, and with ``scales`` a score off its prompt's
    scale, naming the column, the data row and the prompt.
    """
    out = np.empty(len(raw))
    for p in _prompt_order(where.prompt_ids):
        rows = np.flatnonzero(where.prompt_ids == p)
        scale, source = (None, "declared") if scales is None else scales[p]
        try:
            out[rows] = check_score_column(
                raw.iloc[rows],
                name=name,
                kind=kind,
                rows=rows + 1,
                prompt=where.prompt(p),
                score_range=scale,
                range_source=source,  # type: ignore[arg-type]
            )
        except ValueError as exc:
            raise AuditInputError(str(exc)) from None
    return out


def _check_integer_scale(values: NDArray[np.float64], what: str, where: _Where) -> None:
    """Refuse non-integer scores before any work, unless a score step is declared.

    Half-point scales (e.g. ELLIPSE's 1.0-5.0 in steps of 0.5) are common; the
    message names the step that declares them.
    """
    frac = np.abs(values - np.round(values)) > 1e-9
    if not frac.any():
        return
    i = int(np.flatnonzero(frac)[0])
    step = next(
        (
            1 / k
            for k in (2, 3, 4, 5, 10, 100)
            if np.allclose(values * k, np.round(values * k))
        ),
        None,
    )
    fix = (
        f"declare the step between score points with score_step={step:g} "
        f"(--score-step {step:g}), or score_step='continuous' for averaged scores"
        if step is not None
        else "declare score_step='continuous' (--score-step continuous), or round them "
        "to the reported score points"
    )
    raise AuditInputError(
        f"{what} holds non-integer scores ({where.row(i)}: {value_text(values[i])}; "
        f"{int(frac.sum())} such row(s)); without a score step, agreement (QWK) is "
        f"defined on integer score points: {fix}"
    )


def check_score_step(score_step: object) -> float | str | None:
    """``score_step`` as the audit uses it: None, ``"continuous"`` or a positive float."""
    if score_step is None or score_step == "continuous":
        return score_step
    if isinstance(score_step, str):
        try:
            score_step = float(score_step.strip())
        except ValueError:
            raise AuditInputError(
                f"score_step (--score-step) must be a positive number such as 0.5, or "
                f"'continuous', got {short(score_step)}"
            ) from None
    if (
        not isinstance(score_step, numbers.Real)
        or isinstance(score_step, bool)
        or not np.isfinite(float(score_step))
        or float(score_step) <= 0
    ):
        raise AuditInputError(
            f"score_step (--score-step) must be a positive number such as 0.5, or "
            f"'continuous', got {short(score_step)}"
        )
    return float(score_step)


def _off_grid(values: NDArray[np.float64], low: float, step: float) -> NDArray[np.bool_]:
    k = (values - low) / step
    return np.abs(k - np.round(k)) > 1e-6


def check_step_scales(
    scales: Mapping[str, tuple[tuple[float, float], str]], step: float, where: _Where
) -> None:
    """Refuse a scale that the step does not divide into whole score points."""
    for p, ((lo, hi), source) in scales.items():
        n = (hi - lo) / step
        if abs(n - round(n)) > 1e-6:
            of = "" if where.prompt(p) is None else f" of prompt {p!r}"
            kind = "declared" if source == "declared" else "inferred from the human scores"
            raise AuditInputError(
                f"score_step={step:g} does not divide the score scale{of} "
                f"({value_text(lo)} to {value_text(hi)}, {kind}): (high - low) / step "
                f"= {n:g} is not a whole number of steps; pass a step that divides it "
                f"(e.g. 0.5 for a half-point scale) or correct score_range"
            )


def check_on_step(
    values: NDArray[np.float64],
    what: str,
    where: _Where,
    step: float,
    lows: Mapping[str, float] | None,
) -> None:
    """Refuse a score off its prompt's grid ``low + k * step`` (own minimum without lows)."""
    for p in _prompt_order(where.prompt_ids):
        rows = np.flatnonzero(where.prompt_ids == p)
        low = float(values[rows].min()) if lows is None else lows[p]
        bad = _off_grid(values[rows], low, step)
        if bad.any():
            i = int(rows[np.flatnonzero(bad)[0]])
            raise AuditInputError(
                f"{what} holds a score off the grid of score_step={step:g} "
                f"({where.row(i)}: {value_text(values[i])}; {int(bad.sum())} such "
                f"row(s)); scores must be {value_text(low)} + k * {step:g}. Correct "
                f"the score, pass the step the scores use, or score_step='continuous'"
            )


def _check_span(
    values: NDArray[np.float64],
    what: str,
    where: _Where,
    *,
    offset: NDArray[np.intp] | None = None,
    declare: bool = True,
) -> None:
    """Refuse an inferred scale of more than ``MAX_SCORE_POINTS`` points."""
    lo, hi = float(values.min()), float(values.max())
    if hi - lo + 1 <= MAX_SCORE_POINTS:
        return
    # the value farther from the median is the likely typo
    med = float(np.median(values))
    k = int(np.argmax(values) if hi - med >= med - lo else np.argmin(values))
    i = k if offset is None else int(offset[k])
    fix = (
        "; or declare the scale with score_range=(low, high) (--score-range low,high)"
        if declare
        else ""
    )
    raise AuditInputError(
        f"{what} spans {value_text(lo)} to {value_text(hi)}, more than "
        f"{MAX_SCORE_POINTS} score points: {where.row(i)} holds {value_text(values[k])}, "
        f"far outside the other scores (median {value_text(med)}); fix that row{fix}"
    )


def _check_text_not_numeric(values: Series, text_col: str) -> None:
    """Refuse a text column that holds numbers: it is the wrong column.

    Such "essays" have no words, so the vocabulary representations would be
    empty and every distance 0; the audit says so before any work.
    """
    pd = require("pandas", purpose="the audit")
    numeric = pd.to_numeric(values, errors="coerce")
    if len(values) and numeric.notna().all():
        raise AuditInputError(
            f"text column {text_col!r} holds numbers in every row (data row 1: "
            f"{short(values.iloc[0])}), not essays; pass the column with the essay "
            f"text (--text-col / text_col)"
        )


def _texts(values: Any, what: str, *, allow_empty: bool) -> list[str]:
    try:
        return check_essays(values, name=what, allow_empty=allow_empty)
    except (TypeError, ValueError) as exc:
        raise AuditInputError(_row_hint(str(exc))) from None


def _blank(values: Series) -> NDArray[np.bool_]:
    return (values.isna() | values.astype(str).str.strip().eq("")).to_numpy()


def prompt_id(value: object) -> str:
    """A prompt id as text: ``3``, ``3.0`` and ``"3"`` are all ``"3"``."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _prompt_order(ids: Iterable[str]) -> list[str]:
    """Prompt ids sorted as numbers when they all are (ASAP's 1..8), else as text."""
    unique = sorted(set(ids))
    try:
        return sorted(unique, key=float)
    except ValueError:
        return unique


def _check_paraphrases_given(para: list[str], source: object) -> None:
    """Refuse blank paraphrases, as blank essays are refused.

    The paraphrase figures compare each essay with its paraphrase; a blank one
    would be counted as a paraphrase that changed everything.
    """
    blank = [i for i, text in enumerate(para) if not text.strip()]
    if not blank:
        return
    what = f"paraphrase column {source!r}" if isinstance(source, str) else "paraphrases"
    rows = ", ".join(str(i + 1) for i in blank[:10]) + (", ..." if len(blank) > 10 else "")
    raise AuditInputError(
        f"{what} is blank in data row(s) {rows} ({len(blank)} row(s) in all); give "
        f"every essay its paraphrase, or leave paraphrases out (--paraphrase-col) to "
        f"have the audit make them with WordNet"
    )


def _prompts(
    data: DataFrame,
    prompt_col: str | None,
    prompts: Mapping[Any, str] | None,
    prompt: str | None,
) -> tuple[NDArray[Any], list[str], dict[str, str | None]]:
    """Each row's prompt id, the prompts in order, and each prompt's text (or None)."""
    n = len(data)
    if prompt_col is None:
        if prompts is not None:
            raise AuditInputError(
                "prompts= gives a text per prompt id, which needs prompt_col (the "
                "column of each essay's prompt id); for one prompt pass prompt= instead"
            )
        return np.full(n, "all", dtype=object), ["all"], {"all": prompt}
    if prompt is not None and prompts is not None:
        raise AuditInputError(
            "give either prompt= (one task statement for every essay) or prompts= (a "
            "text per prompt id), not both"
        )
    raw = column(data, prompt_col, "prompt")
    blank = _blank(raw)
    if blank.any():
        i = int(np.flatnonzero(blank)[0])
        raise AuditInputError(
            f"prompt column {prompt_col!r} is empty in data row {i + 1} "
            f"({short(raw.iloc[i])}; {int(blank.sum())} row(s) in all); give every "
            f"essay its prompt id, or drop those rows"
        )
    ids = np.array([prompt_id(v) for v in raw], dtype=object)
    order = _prompt_order(ids)
    clash = sorted(set(order) & set(RESERVED_NAMES))
    if clash:
        raise AuditInputError(
            f"prompt column {prompt_col!r} has a prompt named {clash[0]!r}, which the "
            f"tables use for rows across prompts; rename that prompt"
        )
    for p in order:
        k = int(np.sum(ids == p))
        if k < MIN_ESSAYS:
            raise AuditInputError(
                f"prompt {p!r} (column {prompt_col!r}) has {k} essay(s); each prompt "
                f"is audited on its own and needs at least {MIN_ESSAYS} essays (data "
                f"row(s) {(np.flatnonzero(ids == p)[:5] + 1).tolist()}): add essays, "
                f"or drop the prompt"
            )
    texts: dict[str, str | None] = {p: prompt for p in order}
    if prompts is not None:
        if not isinstance(prompts, Mapping):
            raise AuditInputError(
                f"prompts must be a dict prompt id -> task statement, got "
                f"{type(prompts).__name__}"
            )
        given = {prompt_id(k): v for k, v in prompts.items()}
        missing = [p for p in order if p not in given]
        if missing:
            raise AuditInputError(
                f"prompt {missing[0]!r} of column {prompt_col!r} has no prompt text in "
                f"prompts= ({len(missing)} prompt(s) without one: "
                f"{', '.join(map(repr, missing[:5]))}); give a text for every prompt id"
            )
        for p in order:
            t = given[p]
            if not isinstance(t, str) or not t.strip():
                raise AuditInputError(
                    f"the prompt text of prompt {p!r} is {short(t)}; give the task "
                    f"statement as non-empty text"
                )
            texts[p] = t
    return ids, order, texts


def _check_scale(score_range: Any, name: str, short_answer: bool) -> tuple[float, float]:
    if not short_answer:
        try:
            return check_score_range(score_range, name=name)
        except (TypeError, ValueError) as exc:
            raise AuditInputError(str(exc)) from None
    # short-answer points are often fractions (SAF's 0-0.5 and 0-2.5 questions)
    try:
        lo, hi = (float(v) for v in score_range)
    except (TypeError, ValueError):
        raise AuditInputError(
            f"{name} must be (low, high), two numbers, got {short(score_range)}"
        ) from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise AuditInputError(
            f"{name} must be (low, high), finite with low < high, got {short(score_range)}"
        )
    return lo, hi


def _declared(
    score_range: Any, order: list[str], short_answer: bool
) -> dict[str, tuple[float, float]]:
    """The declared scale of each prompt that has one."""
    if isinstance(score_range, Mapping):
        declared = {}
        for key, value in score_range.items():
            p = prompt_id(key)
            if p not in order:
                raise AuditInputError(
                    f"score_range names prompt {p!r}, which is not in the data's "
                    f"prompts ({', '.join(map(repr, order[:10]))}); check the prompt ids"
                )
            declared[p] = _check_scale(value, f"score_range[{p!r}]", short_answer)
        return declared
    if score_range is None:
        return {}
    return dict.fromkeys(order, _check_scale(score_range, "score_range", short_answer))


def _scales(
    y: NDArray[np.float64],
    order: list[str],
    declared: Mapping[str, tuple[float, float]],
    score_col: str,
    where: _Where,
    short_answer: bool,
) -> dict[str, tuple[tuple[float, float], Literal["declared", "inferred"]]]:
    """Each prompt's human score scale: declared (its scores checked on it) or inferred.

    Every score must lie on the scale: one mistyped value (1e12, -1e308)
    would otherwise dominate the min-max normalisation of the Lipschitz
    fraction, overflow the models or make the agreement arrays too large for
    memory; an inferred scale is held to ``MAX_SCORE_POINTS`` points.
    """
    out: dict[str, tuple[tuple[float, float], Literal["declared", "inferred"]]] = {}
    what = f"score column {score_col!r}"
    for p in order:
        rows = np.flatnonzero(where.prompt_ids == p)
        yp = y[rows]
        if p in declared:
            out[p] = (declared[p], "declared")
        else:
            if not short_answer:
                _check_span(yp, what + where.of(p), where, offset=rows)
            out[p] = ((float(yp.min()), float(yp.max())), "inferred")
        if np.all(yp == yp[0]):
            raise AuditInputError(
                f"{what} holds the same score ({value_text(yp[0])}) in every row"
                f"{where.of(p)}; agreement, the Lipschitz fraction and the feature "
                f"profiles compare different scores and are undefined. Audit essays "
                f"with different scores"
            )
    return out


def _raters(
    data: DataFrame,
    rater_cols: str | Sequence[str] | None,
    where: _Where,
    short_answer: bool,
    declared: Mapping[str, tuple[float, float]],
    score_step: float | str | None = None,
) -> tuple[tuple[NDArray[np.float64], NDArray[np.float64]] | None, tuple[str, str] | None]:
    """The two raters' scores, each on the declared scale of its prompt.

    Raters keep a scale of their own (the human-human QWK is computed on the
    span of their scores), but a rater's score cannot lie off the declared
    scale of the resolved score: above its high end, or below its low end
    (halved when positive: the resolved score may be the two raters' sum).
    Such a typo would widen the raters' scale, and so change the human-human
    QWK and the degradation flags, without a word.
    """
    if not rater_cols:
        return None, None
    if isinstance(rater_cols, str):  # "r1,r2", as on the command line
        rater_cols = [c.strip() for c in rater_cols.split(",") if c.strip()]
    cols = list(rater_cols)
    if len(cols) != 2:
        raise AuditInputError(
            f"rater_cols must name exactly two columns (rater 1 and rater 2), got {cols}"
        )
    if cols[0] == cols[1]:
        raise AuditInputError(
            f"rater_cols names column {cols[0]!r} twice; give the columns of the two "
            f"raters who scored each essay independently"
        )
    # a prompt without a declared scale gets None: no check of the scale
    scales = {p: (declared.get(p), "raters") for p in set(where.prompt_ids)}
    values = []
    for col in cols:
        v = _numeric(column(data, col, "rater"), col, "rater", where, scales)  # type: ignore[arg-type]
        if short_answer or score_step == "continuous":
            pass
        elif isinstance(score_step, float):
            # raters keep a scale of their own: the grid starts at their lowest score
            check_on_step(v, f"rater column {col!r}", where, score_step, None)
        else:
            _check_integer_scale(v, f"rater column {col!r}", where)
        # raters keep a scale of their own (a resolved score is often their
        # sum: ASAP's 2-24 from two 0-12 raters), held to the same limit
        _check_span(v, f"rater column {col!r}", where, declare=False)
        values.append(v)
    if np.array_equal(values[0], values[1]):
        raise AuditInputError(
            f"rater columns {cols[0]!r} and {cols[1]!r} are identical in every row, "
            f"which would make the human-human agreement 1; give the columns of the "
            f"two raters who scored each essay independently"
        )
    return (values[0], values[1]), (cols[0], cols[1])


def _check_groups(
    raw: Series, group_col: str, prompt_ids: NDArray[Any], where: _Where
) -> NDArray[Any]:
    """The group labels as str, one per essay; refuse what the group view cannot use.

    An empty cell (NaN, None, or blank text: the command line reads empty cells
    as ``""``) would silently become a group of its own, and one group leaves
    nothing to compare, so both stop the audit before any work.
    """
    blank = _blank(raw)
    if blank.any():
        i = int(np.flatnonzero(blank)[0])
        raise AuditInputError(
            f"group column {group_col!r} is empty in {where.row(i)} "
            f"({short(raw.iloc[i])}; {int(blank.sum())} row(s) in all); fill those "
            f"cells (e.g. 'unknown') or drop the rows"
        )
    labels = raw.astype(str).to_numpy()
    if "all" in set(labels):
        raise AuditInputError(
            f"group column {group_col!r} has a group named 'all', which the group "
            f"tables use for the row of all essays; rename that group"
        )
    for p in _prompt_order(prompt_ids):
        try:
            check_groups(
                labels[prompt_ids == p],
                name=f"group column {group_col!r}{where.of(p)}",
                min_groups=2,
            )
        except (TypeError, ValueError) as exc:
            raise AuditInputError(
                f"{exc}; pick another column or leave group_col out"
            ) from None
    return labels


def _covariates(
    data: DataFrame, covariate_cols: str | Sequence[str] | None, where: _Where
) -> dict[str, NDArray[np.float64]]:
    """The covariate columns as floats, by name; refuse a cell that is not a number.

    An unknown column, a blank or missing cell, text and infinities stop the
    audit before any work, naming the column and its first bad data rows with
    their values: the error section would otherwise drop or misread essays.
    """
    from .._validation import _as_number

    if covariate_cols is None:
        return {}
    if not isinstance(covariate_cols, str) and not (
        isinstance(covariate_cols, Sequence)
        and all(isinstance(c, str) for c in covariate_cols)
    ):
        raise AuditInputError(
            f"covariate_cols must be column names (a list, or one string of names "
            f"separated by commas), got {type(covariate_cols).__name__}"
        )
    out = {}
    for name in _names(covariate_cols, "covariate_cols"):
        raw = column(data, name, "covariate")
        cells = raw.tolist()
        # a True/False column (e.g. 'is an English learner') counts as 1/0
        parsed = [
            float(v) if isinstance(v, (bool, np.bool_)) else _as_number(v) for v in cells
        ]
        values = np.array([np.nan if v is None else v for v in parsed], dtype=float)
        blank = _blank(raw) | np.array([v is not None and v != v for v in parsed])
        text = np.array([v is None for v in parsed]) & ~blank
        for bad, what, fix in (
            (blank, "is empty", "fill those cells or drop the rows"),
            (text, "holds text", "give numbers (e.g. 152, not '152 words')"),
            (np.isinf(values), "holds an infinite value", "give finite numbers"),
        ):
            if bad.any():
                first = np.flatnonzero(bad)[:3]
                shown = "; ".join(f"{where.row(int(i))}: {short(cells[i])}" for i in first)
                raise AuditInputError(
                    f"covariate column {name!r} {what} in {int(bad.sum())} row(s) "
                    f"({shown}{'; ...' if bad.sum() > 3 else ''}); a covariate must be "
                    f"a number for every essay: {fix}, or leave the column out of "
                    f"covariate_cols (--covariate-cols)"
                )
        out[name] = values
    return out


def _ids(data: DataFrame, id_col: str | None, n: int) -> NDArray[Any]:
    pd = require("pandas", purpose="the audit")
    if id_col is None:
        return np.array([str(i + 1) for i in range(n)])
    ids = column(data, id_col, "id").astype(str).to_numpy()
    dup = pd.Series(ids).duplicated(keep=False).to_numpy()
    if dup.any():
        rows = (np.flatnonzero(dup)[:5] + 1).tolist()
        raise AuditInputError(
            f"id column {id_col!r} has duplicate ids (data rows {rows}, id "
            f"{short(ids[dup][0])}); ids must be unique"
        )
    return ids


def _references(
    data: DataFrame,
    reference_col: str,
    sep: str | None,
    prompt_ids: NDArray[Any],
    where: _Where,
) -> list[list[str]]:
    """Each answer's reference answers: its row's cell, split at ``sep``."""
    raw = column(data, reference_col, "reference")
    blank = _blank(raw)
    if blank.any():
        i = int(np.flatnonzero(blank)[0])
        raise AuditInputError(
            f"reference column {reference_col!r} is empty in {where.row(i)} "
            f"({int(blank.sum())} row(s) in all); every answer needs its question's "
            f"reference answer(s): fill those cells or drop the rows"
        )
    if sep is not None and not (isinstance(sep, str) and sep):
        raise AuditInputError(f"reference_sep must be non-empty text, got {short(sep)}")
    out = []
    for i, cell in enumerate(raw.astype(str)):
        refs = [r.strip() for r in cell.split(sep)] if sep else [cell.strip()]
        refs = [r for r in refs if r]
        if not refs:
            raise AuditInputError(
                f"reference column {reference_col!r} holds only separators "
                f"({short(sep)}) in {where.row(i)}; give at least one reference answer"
            )
        out.append(refs)
    return out


def _given(
    data: DataFrame,
    systems: Any,
    n: int,
    scales: Mapping[str, tuple[tuple[float, float], str]],
    where: _Where,
) -> tuple[dict[str, NDArray[np.float64]], dict[str, str | None]]:
    """The given systems' scores, numeric, finite and on every prompt's scale."""
    pd = require("pandas", purpose="the audit")
    if systems is None:
        return {}, {}
    if isinstance(systems, str) or (
        isinstance(systems, Sequence) and all(isinstance(s, str) for s in systems)
    ):
        spec: dict[str, Any] = {c: c for c in _names(systems, "systems")}
    elif isinstance(systems, Mapping):
        spec = dict(systems)
    else:
        raise AuditInputError(
            f"systems must be column names or a dict name -> column name or scores, got "
            f"{type(systems).__name__}"
        )
    if not spec:
        raise AuditInputError("systems is empty; give at least one column of scores")
    scores: dict[str, NDArray[np.float64]] = {}
    columns: dict[str, str | None] = {}
    for name, source in spec.items():
        if not isinstance(name, str) or not name.strip():
            raise AuditInputError(f"system names must be non-empty text, got {short(name)}")
        if isinstance(source, str):
            raw = column(data, source, f"system {name!r}")
            columns[name] = source
        else:
            arr = np.asarray(source, dtype=object).ravel()
            if len(arr) != n:
                raise AuditInputError(
                    f"system {name!r} has {len(arr)} scores for {n} essays; give one "
                    f"score per row of data, in the same order"
                )
            raw = pd.Series(arr)
            columns[name] = None
        # an array's messages name the system, a column's name the column
        values = _numeric(
            raw, source if isinstance(source, str) else name, "system", where, scales
        )
        scores[name] = values
    return scores, columns


def _name_key(name: object) -> str:
    """A name as a reader of the report tells names apart: case and spacing aside."""
    return " ".join(str(name).split()).casefold()


def _check_names(
    given: Mapping[str, Any], trained: Mapping[str, Any], fitted: Mapping[str, Any]
) -> None:
    """Reserved names and names used twice are refused: a table row names one system.

    ``RESERVED_NAMES`` label the tables' own rows (the human scores, pooled
    rows) and ``HUMAN_LABEL`` the human scores' row of the summary and the
    report; ``PREDICTION_COLUMNS`` are the columns of the ``predictions``
    table that a given or fitted system's column would overwrite. Names are
    compared as a reader sees them, ignoring case and runs of whitespace: a
    system named ``"Human  Scores"`` would show as a second human row.
    """
    rows = (*RESERVED_NAMES, HUMAN_LABEL)
    taken = {_name_key(n): "the tables' own rows" for n in rows}
    for name in trained:
        if _name_key(name) in taken:
            raise AuditInputError(
                f"model name {name!r} is reserved for {taken[_name_key(name)]} "
                f"({', '.join(map(repr, rows))}); rename it"
            )
    shown = [*rows, *PREDICTION_COLUMNS, *trained]
    taken.update(
        {_name_key(n): "the predictions table's columns" for n in PREDICTION_COLUMNS}
    )
    taken.update({_name_key(n): "a trained baseline" for n in trained})
    for kind, names in (("system", given), ("model", fitted)):
        for name in names:
            if _name_key(name) in taken:
                raise AuditInputError(
                    f"{kind} name {name!r} is reserved for {taken[_name_key(name)]} "
                    f"({', '.join(map(repr, shown))}); rename it"
                )
    both = sorted(set(given) & set(fitted))
    if both:
        raise AuditInputError(
            f"{both[0]!r} names both a given system and a fitted model; give them "
            f"different names"
        )
    seen: dict[str, str] = {}
    for kind, names in (("model", trained), ("system", given), ("model", fitted)):
        for name in names:
            key = _name_key(name)
            if key in seen:
                raise AuditInputError(
                    f"{seen[key]} and {kind} {name!r} have the same name but for case "
                    f"or spacing, and would show as two rows named alike; give them "
                    f"names that differ in letters"
                )
            seen[key] = f"{kind} {name!r}"


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
        raise AuditInputError(f"grammar={short(grammar, 80)}: {exc}") from None


def _check_neural_models(
    reps: Mapping[str, Any], features: Sequence[str], settings: Settings
) -> None:
    """Find every neural model the audit will load now, not minutes into the run.

    The Sentence-BERT model of the ``"sbert"`` representation (or of a
    :class:`~sklearn_fairaes.SentenceBertEncoder` passed as one) and of the
    prompt-similarity feature, and the LASER weights; a missing one (a
    misspelled name, a folder that is not there, weights never downloaded)
    would otherwise fail after the representations before it were fitted.
    """
    from ..resources import find_sbert_model, resolve_laser_files
    from ..text import LaserEncoder, SentenceBertEncoder

    sbert = {rep.model for rep in reps.values() if isinstance(rep, SentenceBertEncoder)}
    if "prompt_similarity_sbert" in features:
        sbert.add(settings.sbert_model)
    for model in sorted(sbert, key=str):
        try:
            require("sentence_transformers", purpose="Sentence-BERT embeddings")
            find_sbert_model(model)
        except (ImportError, LookupError, TypeError) as exc:
            raise AuditInputError(
                f"sbert_model={short(model, 80)} (--sbert-model): {exc}"
            ) from None
    for name, rep in reps.items():
        if isinstance(rep, LaserEncoder):
            try:
                require("laserembeddings", purpose="LASER embeddings")
                resolve_laser_files(rep.model_dir)
            except (ImportError, LookupError) as exc:
                raise AuditInputError(
                    f"representation {name!r} (LASER): {str(exc).rstrip('.')}. Or leave "
                    f"{name!r} out of representations (--representations)."
                ) from None


def _check_perturbations(
    perturbations: str | Sequence[str] | None, has_prompt: bool
) -> tuple[str, ...] | None:
    """The perturbation names to run (None: none), checked before any work."""
    if perturbations is None:
        return None
    from ..perturb import DEFAULT_PERTURBATIONS, PERTURBATION_NAMES

    if isinstance(perturbations, str):
        if perturbations == "default":
            names = [
                p for p in DEFAULT_PERTURBATIONS if has_prompt or p != "prompt_stuffing"
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
    if "prompt_stuffing" in names and not has_prompt:
        raise AuditInputError(
            "perturbation 'prompt_stuffing' needs the task statement: pass prompt= "
            "(or --prompt-file), or leave it out"
        )
    return tuple(names)


def _chosen_features(
    has_prompt: bool, grammar: str | None
) -> tuple[list[str], list[dict[str, str]]]:
    from ..features import FEATURE_NAMES
    from ..features._interpretable import PROMPT_FEATURES

    chosen = list(FEATURE_NAMES)
    omitted = []
    if not has_prompt:
        chosen = [f for f in chosen if f not in PROMPT_FEATURES]
        omitted += [
            {"feature": f, "reason": "no prompt was given"} for f in PROMPT_FEATURES
        ]
    if grammar is None:
        chosen.remove("language_errors")
        omitted.append(
            {
                "feature": "language_errors",
                "reason": "no LanguageTool server was given (grammar=URL)",
            }
        )
    return chosen, omitted
