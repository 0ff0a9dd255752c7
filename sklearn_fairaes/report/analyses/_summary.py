"""2 Summary across prompts (audits of several prompts only).

Not an analysis: its view puts each prompt's score scale, QWK, Lipschitz
fraction and grading error side by side with the rows the sections pooled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._cells import (
    _NA,
    Cell,
    _absent_reason,
    _num,
    _ordered,
    _pct,
    _present,
    _rep,
    _scale,
    _score,
    _system_order,
    _table,
    _text,
    _th,
)
from .._plots import POOLED, _check_table, model_label
from ._base import Heading, Section

if TYPE_CHECKING:
    import pandas as pd


# --------------------------------------------------------------------------- view


def _wide(
    table: pd.DataFrame,
    value: str,
    fmt: Callable[[Any], Cell],
    prompts: Sequence[str],
    meta: Mapping[str, Any],
    *,
    pooled_label: str,
    caption: str,
    series: str = "system",
    extra: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Prompts as rows (then the pooled row), (representation, system) as columns."""
    reps = _ordered(
        table["representation"].astype(str), ["", *(meta.get("representations") or [])]
    )
    systems = _system_order(meta)
    columns = []
    for r in reps:
        sub = table[table["representation"].astype(str) == r]
        columns += [(r, s) for s in _ordered(sub[series], systems, last=("human",))]
    cells = {
        (str(t["prompt"]), str(t["representation"]), str(t[series])): t
        for t in table.to_dict("records")
    }
    top = [_th("Prompt", rowspan=2)]
    if extra:
        top.append(_th(extra[1], rowspan=2, cls="num"))
    for r in reps:
        span = sum(1 for c in columns if c[0] == r)
        top.append(_th(_text(_rep(r)), colspan=span, scope="colgroup"))
    second = [_th(model_label(s), cls="num") for _, s in columns]
    rows, classes = [], []
    for p in [*prompts, POOLED]:
        found = [cells.get((p, r, s)) for r, s in columns]
        if p == POOLED and not any(found):
            continue
        row: list[object] = [Cell(pooled_label, "em") if p == POOLED else p]
        if extra:
            counts = [cells[k][extra[0]] for k in cells if k[0] == p]
            row.append(_num(counts[0]) if counts else _NA)
        row += [fmt(t[value]) if t else _NA for t in found]
        rows.append(row)
        classes.append("pooled" if p == POOLED else None)
    return _table(
        None,
        rows,
        header_rows=[top, second],
        caption=caption,
        row_classes=classes,
    )


def _prompt_sizes(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompts: Sequence[str]
) -> dict[str, Any]:
    """Essays per prompt: ``meta["n_essays_by_prompt"]``, else the rows of the
    per-essay tables, else the largest ``n`` of the agreement or grading rows."""
    by_prompt = meta.get("n_essays_by_prompt")
    if isinstance(by_prompt, Mapping):
        return {str(k): v for k, v in by_prompt.items()}
    for name, column in (
        ("predictions", None),
        ("features", None),
        ("agreement", "n"),
        ("grading", "n"),
    ):
        table = tables.get(name)
        if table is None or not len(table) or "prompt" not in table.columns:
            continue
        if column is not None and column not in table.columns:
            continue
        prompt = table["prompt"].astype(str)
        return {
            p: (
                int((prompt == p).sum())
                if column is None
                else table.loc[prompt == p, column].max()
            )
            for p in prompts
        }
    return {}


def view(
    tables: Mapping[str, pd.DataFrame],
    meta: Mapping[str, Any],
    prompts: Sequence[str],
    left_out: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any] | None:
    """The prompts side by side with their pooled rows; None with one prompt.

    ``left_out`` is not read: the overview lists what was left out.
    """
    if len(prompts) < 2:
        return None
    sizes = _prompt_sizes(tables, meta, prompts)
    scales = []
    for p in prompts:
        scale = _scale(meta, p)
        lo, hi, source = scale if scale else (None, None, "")
        how = {"declared": "declared", "inferred": "inferred from the human scores"}
        scales.append(
            [p, _num(sizes.get(p)), _score(lo), _score(hi), how.get(source, source or None)]
        )
    out: dict[str, Any] = {
        "scales": _table(
            ["Prompt", "Essays", "Lowest score", "Highest score", "Scale"],
            scales,
            caption="Prompts and their score scales",
        ),
        "agreement": None,
        "lipschitz": None,
        "grading": None,
        # why a table is missing, when the audit said so (the same for every prompt)
        "reasons": {
            name: _absent_reason(meta, name, prompts[0])
            for name in ("agreement", "lipschitz")
        },
    }
    if _present(tables, "agreement"):
        agreement = tables["agreement"]
        _check_table(agreement, "agreement", ["prompt", "representation", "system", "qwk"])
        out["agreement"] = _wide(
            agreement,
            "qwk",
            _num,
            prompts,
            meta,
            pooled_label="Pooled (Fisher-z mean)",
            caption="QWK with the human score per prompt, on each prompt's scale; pooled: "
            "the mean over prompts on Fisher's z scale, each prompt weighted equally",
        )
    if _present(tables, "lipschitz"):
        lipschitz = tables["lipschitz"]
        _check_table(
            lipschitz,
            "lipschitz",
            ["prompt", "representation", "system", "lipschitz_minmax", "n_pairs"],
        )
        out["lipschitz"] = _wide(
            lipschitz,
            "lipschitz_minmax",
            _pct,
            prompts,
            meta,
            pooled_label="Pooled (pair-weighted)",
            caption="Essay pairs satisfying the Lipschitz condition (min–max "
            "normalisation), % of the pairs within each prompt; pooled: all prompts' "
            "satisfied pairs over all their pairs. Pairs never cross prompts.",
            extra=("n_pairs", "Pairs"),
        )
    if _present(tables, "grading"):
        grading = tables["grading"]
        _check_table(grading, "grading", ["prompt", "representation", "system", "wrmse"])
        out["grading"] = _wide(
            grading,
            "wrmse",
            _num,
            prompts,
            meta,
            pooled_label="All questions",
            caption="Weighted RMSE of the grades (scaled to 0–1) per question set, "
            "and over all questions' answers together (not a mean of the questions' "
            "values); lower is better",
        )
    return out


SECTION = Section(
    "summary", (Heading("summary", "Summary across prompts"),), view=view, per_prompt=False
)
