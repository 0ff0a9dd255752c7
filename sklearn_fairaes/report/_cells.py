"""Table values as cells for the report's templates, and what the sections read from meta.

Every section's view (``report/analyses``) turns its tables into plain values
with these helpers: a :class:`Cell` is a formatted text and its kind (number,
missing, ok/bad flag), and :func:`_table` a header and rows the shared
``m.table`` macro lays out. Nothing here writes markup: the templates escape
everything.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, SupportsInt, cast

import numpy as np

from ..metrics._agreement import TRIM_TOLERANCE, WILLIAMSON_THRESHOLDS
from ..metrics._group import GROUP_THRESHOLDS
from ._plots import model_label, representation_label

if TYPE_CHECKING:
    import pandas as pd


# the acceptance thresholds as the templates print them
_THRESHOLDS = {
    "qwk": f"{WILLIAMSON_THRESHOLDS['qwk']:.2f}",
    "degradation": f"{WILLIAMSON_THRESHOLDS['degradation']:.2f}",
    "smd": f"{WILLIAMSON_THRESHOLDS['abs_smd']:.2f}",
    "dsm": f"{GROUP_THRESHOLDS['abs_dsm']:.2f}",
    "dsm_short": f"{GROUP_THRESHOLDS['abs_dsm']:.1f}",
    "trim": f"{TRIM_TOLERANCE:g}",
}


class Cell(NamedTuple):
    """One value for a template: text, and how to show it.

    ``kind`` is ``"text"``, ``"na"`` (not available: a dash), ``"ok"`` /
    ``"bad"`` (a threshold met / failed: a tick / a cross) or ``"em"``
    (italic text, for labels such as "All essays"). ``numeric`` cells are
    right-aligned when their whole column is numeric.
    """

    text: str = ""
    kind: str = "text"
    numeric: bool = False


_NA = Cell("", "na")


def _missing(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return False
    try:
        return bool(value != value)  # NaN and NaT are unequal to themselves
    except (TypeError, ValueError):
        return True  # pandas.NA refuses to be a bool


def _cell(value: object) -> Cell:
    """Any value as a cell: cells unchanged, missing values as a dash, the rest as text."""
    if isinstance(value, Cell):
        return value
    if _missing(value):
        return _NA
    return Cell(str(value))


def _num(value: object, digits: int = 3) -> Cell:
    """A number for a table cell: 3 decimals, integers with thousands separators."""
    if _missing(value):
        return _NA
    if isinstance(value, (bool, np.bool_)):
        return _flag(value)
    if isinstance(value, numbers.Integral):
        return Cell(f"{int(value):,}", numeric=True)
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isinf(value):
            return Cell("∞" if value > 0 else "−∞", numeric=True)
        if value.is_integer() and abs(value) >= 1000:
            return Cell(f"{value:,.0f}", numeric=True)
        return Cell(f"{value:.{digits}f}", numeric=True)
    return Cell(str(value))


def _score(value: object) -> Cell:
    """A score: no trailing zeros (scores are often whole numbers stored as floats,
    or halves: ``2.0`` -> ``2``, ``2.5`` -> ``2.5``), at most 3 decimals."""
    if _missing(value) or isinstance(value, (bool, np.bool_)):
        return _num(value)
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        if float(value).is_integer():
            # every concrete real type has __int__; the numbers.Real ABC omits it
            return Cell(f"{int(cast(SupportsInt, value)):,}", numeric=True)
        return Cell(f"{float(value):.3f}".rstrip("0"), numeric=True)
    return _num(value)


def _pct(value: Any) -> Cell:
    """A fraction as a percentage with 3 decimals (``0.99994`` -> ``99.994``)."""
    if _missing(value):
        return _NA
    return Cell(f"{100.0 * float(value):.3f}", numeric=True)


def _pct_ci(value: Any, low: Any = None, high: Any = None) -> Cell:
    """A percentage with its interval when there is one (``99.912 [99.86, 99.95]``)."""
    if _missing(value):
        return _NA
    if _missing(low) or _missing(high):
        return _pct(value)
    return Cell(
        f"{100.0 * float(value):.3f} [{100.0 * float(low):.2f}, {100.0 * float(high):.2f}]",
        numeric=True,
    )


def _num_ci(value: Any, low: Any = None, high: Any = None) -> Cell:
    """A number with 3 decimals and its interval when there is one (``0.712 [0.68, 0.74]``)."""
    if _missing(value):
        return _NA
    if _missing(low) or _missing(high):
        return _num(value)
    return Cell(f"{float(value):.3f} [{float(low):.2f}, {float(high):.2f}]", numeric=True)


def _pvalue(value: Any) -> Cell:
    if _missing(value):
        return _NA
    return Cell("< 0.001" if float(value) < 0.001 else f"{float(value):.3f}", numeric=True)


def _mean_sd(mean: Any, sd: Any) -> Cell:
    if _missing(mean):
        return _NA
    if _missing(sd):
        return _num(mean)
    return Cell(f"{float(mean):.3f} ± {float(sd):.3f}", numeric=True)


def _flag(value: object) -> Cell:
    if _missing(value):
        return _NA
    return Cell("✓", "ok") if bool(value) else Cell("✗", "bad")


def _text(value: object) -> str:
    """Plain text of a value for a sentence ("—" when missing)."""
    cell = _cell(value)
    return "—" if cell.kind == "na" else cell.text


def _rep(name: object) -> Cell:
    """A representation's label; ``""`` is the scores of a given or fitted system."""
    if str(name) == "":
        return Cell("own scores", "em")
    return Cell(representation_label(name))


def _mod(name: object) -> Cell:
    return Cell(model_label(name))


def _th(
    text: object,
    *,
    cls: str | None = None,
    colspan: int | None = None,
    rowspan: int | None = None,
    scope: str | None = "col",
) -> dict[str, Any]:
    """A header cell for the table macro."""
    return {
        "text": _text(text),
        "cls": cls,
        "colspan": colspan,
        "rowspan": rowspan,
        "scope": scope,
    }


def _table(
    headers: Sequence[object] | None,
    rows: Sequence[Sequence[object]],
    *,
    caption: str | None = None,
    header_rows: Sequence[Sequence[dict[str, Any]]] | None = None,
    flags: Collection[int] = (),
    row_classes: Sequence[str | None] | None = None,
) -> dict[str, Any]:
    """A table for the ``table`` macro: header rows, and body cells with their classes.

    ``headers`` is one header row (text); ``header_rows`` replaces it with
    header cells built by :func:`_th` (for grouped headers). ``flags`` are
    the indices of centred tick/cross columns; a column whose available
    cells are all numbers is right-aligned.
    """
    body = [[_cell(v) for v in row] for row in rows]
    width = max([len(headers or ())] + [len(row) for row in body])
    classes: list[str | None] = []
    for i in range(width):
        column = [row[i] for row in body if i < len(row) and row[i].kind != "na"]
        if i in flags:
            classes.append("flag")
        elif column and all(c.numeric for c in column):
            classes.append("num")
        else:
            classes.append(None)
    head = (
        [list(r) for r in header_rows]
        if header_rows
        else [[_th(h, cls=classes[i]) for i, h in enumerate(headers or ())]]
    )
    return {
        "caption": caption,
        "head": head,
        "body": [
            {
                "cls": (row_classes or [None] * len(body))[k],
                "cells": [(c, classes[i]) for i, c in enumerate(row)],
            }
            for k, row in enumerate(body)
        ],
    }


def _present(tables: Mapping[str, pd.DataFrame], name: str) -> bool:
    table = tables.get(name)
    return table is not None and len(table) > 0


def _ordered(
    values: Iterable[object], preferred: Iterable[object] = (), last: Sequence[str] = ()
) -> list[str]:
    seen = list(dict.fromkeys(str(v) for v in values))
    head = [str(p) for p in preferred if str(p) in seen and str(p) not in last]
    head = list(dict.fromkeys(head))
    return (
        head
        + [v for v in seen if v not in head and v not in last]
        + [v for v in last if v in seen]
    )


_KIND_LABELS = {
    "given": "given scores",
    "fitted": "fitted model, used as it is",
    "trained": "trained baseline, out-of-fold",
}


def _systems(meta: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """System name -> {"kind", "description"}; trained baselines when only models are known."""
    systems = meta.get("systems")
    if isinstance(systems, Mapping) and systems:
        out = {}
        for name, info in systems.items():
            info = info if isinstance(info, Mapping) else {}
            out[str(name)] = {
                "kind": str(info.get("kind") or ""),
                "description": str(info.get("description") or ""),
            }
        return out
    return {
        str(m): {"kind": "trained", "description": ""} for m in meta.get("models") or []
    }


def _system_order(meta: Mapping[str, Any]) -> list[str]:
    return list(_systems(meta))


def _scale(meta: Mapping[str, Any], prompt: str) -> tuple[Any, Any, str] | None:
    """``(lo, hi, source)`` of a prompt's score scale, from the metadata."""
    ranges = meta.get("score_ranges")
    # prompt ids are text in the tables; the metadata's keys may be the data's own
    scale = (
        {str(k): v for k, v in ranges.items()}.get(prompt)
        if isinstance(ranges, Mapping)
        else None
    )
    source = None
    if scale is None:
        scale, source = meta.get("score_range"), meta.get("score_range_source")
    if not isinstance(scale, Sequence) or isinstance(scale, str) or len(scale) < 2:
        return None
    if source is None and len(scale) > 2:
        source = scale[2]
    return scale[0], scale[1], str(source or "")


def _scale_text(meta: Mapping[str, Any], prompt: str) -> str | None:
    scale = _scale(meta, prompt)
    if scale is None:
        return None
    lo, hi, source = scale
    how = {
        "declared": "declared",
        "inferred": "inferred from the human scores (none was declared)",
    }.get(source, "")
    return f"{_text(_score(lo))} to {_text(_score(hi))}" + (f", {how}" if how else "")


def _absent_reason(meta: Mapping[str, Any], analysis: str, prompt: str) -> str | None:
    """The audit's reason why ``analysis`` did not run on ``prompt``, if it gave one."""
    absent = meta.get("absent_sections")
    if not isinstance(absent, Mapping) or analysis not in absent:
        return None
    reason = absent[analysis]
    if isinstance(reason, Mapping):
        reason = {str(k): v for k, v in reason.items()}.get(prompt)
    # the templates end the sentence
    return None if reason is None else str(reason).strip().rstrip(".")


def _warnings(
    meta: Mapping[str, Any], prompt: str | None, *, multi: bool = False
) -> list[str]:
    """Warnings on distances, for one prompt (None: all; with ``multi``, each
    prefixed with its prompt)."""
    out = []
    for w in meta.get("warnings") or []:
        if not isinstance(w, Mapping):
            continue
        where = w.get("prompt")
        message = str(w.get("message", ""))
        if prompt is None:
            named = multi and where is not None
            out.append(f"Prompt {where}: {message}" if named else message)
        elif where is None or str(where) == prompt:
            out.append(message)
    return out
