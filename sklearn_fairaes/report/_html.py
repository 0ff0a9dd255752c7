"""The audit report as one self-contained HTML file, and as JSON-able data.

:func:`render_html` lays out the audit's tables and figures in the order of
the paper's methodology (Section 3) and results (Section 5): agreement with
human raters, the essay-similarity checks (extreme pairs, aggregate feature
differences, paraphrases), then individual fairness (the Lipschitz condition
and score difference vs. distance), the group view, the counterfactual edits
and, for short answers, grading and reference coverage. Each section opens
with a short reading guide for assessment researchers. An audit of several
prompts gets a summary across prompts, then one part per prompt.

The page comes from Jinja2 templates (``report/templates``: a layout and one
template per analysis, ``sections/<name>.html.j2``). This module only turns
the tables into plain values for them (formatted numbers, rows, headers);
it never writes markup, and the templates are rendered with autoescaping on
and undefined names refused, so every piece of text that comes from the
data (essay texts, ids, system and group names, prompt ids, table values,
metadata) is HTML-escaped. The file has no external assets and no scripts:
CSS is inline, figures are PNG data URIs, and a Content-Security-Policy
forbids scripts as a second line of defence.

Nothing is computed here: the renderer only formats and arranges numbers.
"""

from __future__ import annotations

import base64
import datetime
import io
import math
import numbers
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, NamedTuple, SupportsInt, cast

import numpy as np

from ..metrics._agreement import TRIM_TOLERANCE, WILLIAMSON_THRESHOLDS
from ..metrics._group import GROUP_THRESHOLDS
from ._config import setting_label
from ._plots import (
    POOLED,
    _check_table,
    _short,
    audit_prompts,
    feature_label,
    feature_number,
    figure_key,
    model_label,
    prompt_tables,
    representation_label,
)

if TYPE_CHECKING:
    import jinja2
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["SECTION_TITLES", "render_html", "to_json_dict"]

#: Section headings of the report, in order. The group view appears only with
#: a group table, the counterfactual edits only with the perturbation table,
#: the short answers only with the grading or reference-coverage table.
SECTION_TITLES = (
    "Overview",
    "Agreement with human raters",
    "Essay similarity: extreme pairs",
    "Aggregate feature differences",
    "Paraphrase robustness",
    "Individual fairness: Lipschitz fraction",
    "Score difference vs. distance",
    "Group view",
    "Counterfactual edits",
    "Short answers: grading and reference coverage",
)

#: Title of the section of the essays to review (issue 17), after "Score
#: difference vs. distance". It shows only when the audit gave its tables
#: (audits before it did not), so it is not in SECTION_TITLES.
REVIEW_TITLE = "Essays to review"

#: Essays shown with their texts per representation and system in the
#: report (the tables hold all of them), and rows of the listings.
REVIEW_ESSAYS_SHOWN = 3
REVIEW_ROWS_SHOWN = 10

#: Title of the section that opens an audit of several prompts.
SUMMARY_TITLE = "Summary across prompts"

# Each analysis (report/analyses, contract of issue 16) and the sections its
# template renders, with the tables any one of which makes a section show.
_ANALYSIS_SECTIONS = (
    ("agreement", (("Agreement with human raters", ("agreement",)),)),
    (
        "extremes",
        (
            ("Essay similarity: extreme pairs", ("extreme_pairs", "extreme_pair_features")),
            ("Aggregate feature differences", ("feature_profile",)),
        ),
    ),
    ("paraphrase", (("Paraphrase robustness", ("paraphrase",)),)),
    (
        "lipschitz",
        (
            (
                "Individual fairness: Lipschitz fraction",
                ("lipschitz", "distance_distribution"),
            ),
            ("Score difference vs. distance", ("score_distance", "trend")),
        ),
    ),
    (
        "review",
        (
            (
                REVIEW_TITLE,
                (
                    "review_list",
                    "lipschitz_violations",
                    "lipschitz_constants",
                    "lipschitz_profile",
                ),
            ),
        ),
    ),
    (
        "groups",
        (
            (
                "Group view",
                (
                    "group_agreement",
                    "group_fairness",
                    "group_fairness_coefficients",
                    "group_lipschitz",
                ),
            ),
        ),
    ),
    ("counterfactual", (("Counterfactual edits", ("perturbation",)),)),
    (
        "short_answers",
        (
            (
                "Short answers: grading and reference coverage",
                ("grading", "reference_coverage"),
            ),
        ),
    ),
)

# Analyses shown only when one of their tables exists; the others always have
# their sections, which then say why they are empty.
_OPTIONAL = {"groups", "counterfactual", "short_answers", "review"}

# Why a section is empty when the audit's metadata gives no reason.
_DEFAULT_REASONS = {
    "groups": "no group column was given, so it is left out",
    "counterfactual": (
        "no perturbations were requested (perturbations=..., or --perturbations "
        "default on the command line)"
    ),
    "short_answers": "not a short-answer audit (no reference column was given)",
    "review": "the audit gave no review tables (review_list, lipschitz_violations, "
    "lipschitz_constants)",
}
_MISSING_TABLE = "not available in this run (its table is missing)"

_KIND_LABELS = {
    "given": "given scores",
    "fitted": "fitted model, used as it is",
    "trained": "trained baseline, out-of-fold",
}

_THRESHOLDS = {
    "qwk": f"{WILLIAMSON_THRESHOLDS['qwk']:.2f}",
    "degradation": f"{WILLIAMSON_THRESHOLDS['degradation']:.2f}",
    "smd": f"{WILLIAMSON_THRESHOLDS['abs_smd']:.2f}",
    "dsm": f"{GROUP_THRESHOLDS['abs_dsm']:.2f}",
    "dsm_short": f"{GROUP_THRESHOLDS['abs_dsm']:.1f}",
    "trim": f"{TRIM_TOLERANCE:g}",
}

# Scripts, frames, fonts and remote images are all refused: the report needs none.
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


# --------------------------------------------------------------------------- templates


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    """The templates of the package: autoescaped, strict about undefined names."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("sklearn_fairaes.report", "templates"),
        # every template, whatever its extension: data never reaches the page unescaped
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


# --------------------------------------------------------------------------- cells


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


# --------------------------------------------------------------------------- figures


class _Figures:
    """Embeds figures as PNG data URIs and numbers them in document order.

    The templates call it (through :meth:`bind`) where a figure goes, so the
    numbers follow the page whatever the order of the sections.
    """

    def __init__(self, figures: Mapping[str, Figure] | None, dpi: int) -> None:
        self.figures = dict(figures or {})
        self.dpi = dpi
        self.used: list[str] = []
        self.number = 0

    def embed(self, key: str, element_id: str) -> dict[str, Any] | None:
        fig = self.figures.get(key)
        if fig is None or key in self.used:
            return None
        self.used.append(key)
        self.number += 1
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=self.dpi)
        png = buffer.getvalue()
        return {
            "src": "data:image/png;base64," + base64.b64encode(png).decode("ascii"),
            "width": int.from_bytes(png[16:20], "big"),
            "height": int.from_bytes(png[20:24], "big"),
            "id": element_id,
            "number": self.number,
        }

    def bind(self, prompt: str | None, suffix: str) -> Callable[[str], Any]:
        """``fig(name)`` for one prompt's part (``prompt`` None: one prompt only)."""

        def fig(name: str) -> dict[str, Any] | None:
            return self.embed(figure_key(name, prompt), f"figure-{name}{suffix}")

        return fig

    def leftovers(self) -> list[dict[str, Any]]:
        out = []
        for k, key in enumerate([k for k in self.figures if k not in self.used]):
            embedded = self.embed(key, f"figure-extra-{k + 1}")
            if embedded is not None:
                out.append(dict(embedded, name=key))
        return out


# --------------------------------------------------------------------------- metadata


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


# --------------------------------------------------------------------------- overview


_LETTERS_LABELS = {
    "ascii": 'A-Z only, as in the paper (letters="ascii")',
    "unicode": 'the letters of every script (letters="unicode")',
}


def _settings_lines(settings: Mapping[str, Any] | None) -> list[str]:
    rows = []
    for model, value in (settings or {}).items():
        if isinstance(value, dict):
            rows += [
                f"{model_label(model)} on {representation_label(r)}: {v}"
                for r, v in value.items()
            ]
        else:
            rows.append(f"{model_label(model)}: {value}")
    return rows


def _overview(
    meta: Mapping[str, Any], prompts: Sequence[str], left_out: list[dict[str, Any]]
) -> dict[str, Any]:
    reps = list(meta.get("representations") or [])
    systems = _systems(meta)
    multi = len(prompts) > 1
    lo, hi = meta.get("score_min"), meta.get("score_max")

    def listing(values: Iterable[object] | None) -> Cell:
        values = list(values or [])
        return Cell(", ".join(str(v) for v in values)) if values else _NA

    items: list[tuple[str, Cell | list[str]]] = [
        ("Essays", _num(meta.get("n_essays"))),
    ]
    if multi:
        items.append(("Prompts", Cell(f"{len(prompts)}: " + ", ".join(prompts))))
        items.append(("Prompt column", _cell(meta.get("prompt_col"))))
    items += [
        (
            "Score range",
            Cell(f"{_text(_score(lo))} to {_text(_score(hi))}")
            if not (_missing(lo) or _missing(hi))
            else _NA,
        ),
    ]
    if multi:
        items.append(("Score scale", Cell("per prompt, in the summary below")))
    else:
        items.append(("Score scale", _cell(_scale_text(meta, prompts[0]))))
    items += [
        ("Essay text column", _cell(meta.get("text_col") or None)),
        ("Human score column", _cell(meta.get("score_col") or None)),
        (
            "Rater columns",
            listing(meta.get("rater_cols"))
            if meta.get("rater_cols")
            else Cell("none given"),
        ),
        ("Group column", Cell(str(meta.get("group_col") or "none given"))),
        ("Prompt given", Cell("yes" if meta.get("prompt_given") else "no")),
        (
            setting_label("representations"),
            listing([representation_label(r) for r in reps]),
        ),
        (
            setting_label("letters"),
            Cell(_LETTERS_LABELS.get(str(meta["letters"]), str(meta["letters"])))
            if meta.get("letters") and {"bow", "tfidf"} & set(reps)
            else Cell("not used"),
        ),
        ("Scoring systems", listing([model_label(m) for m in systems])),
        ("Model settings", _settings_lines(meta.get("model_settings")) or _NA),
        (setting_label("cv"), _num(meta.get("cv"))),
        (setting_label("random_state"), Cell(str(meta.get("random_state")))),
        ("Paraphrases", Cell(str(meta.get("paraphrase_source") or "none"))),
        (setting_label("sbert_model"), Cell(str(meta.get("sbert_model") or "not used"))),
    ]
    trained = [m for m, info in systems.items() if info["kind"] == "trained"]
    combos = None
    if reps and trained:
        n = len(reps) * len(trained)
        combos = (
            f"{n} combination{'s' if n != 1 else ''} of representation and trained "
            f"model {'were' if n != 1 else 'was'} evaluated ({len(reps)} × "
            f"{len(trained)}); the predictions are out-of-fold."
        )
    others = [m for m, info in systems.items() if info["kind"] != "trained"]
    if others and reps:
        which = "system's scores were" if len(others) == 1 else "systems' scores were"
        combos = (combos + " " if combos else "") + (
            f"{len(others)} given or fitted {which} audited under every representation "
            f"({len(reps)})."
        )
    system_table = None
    if systems:
        system_table = _table(
            ["System", "Kind", "Description"],
            [
                [
                    _mod(name),
                    _KIND_LABELS.get(info["kind"], info["kind"] or "—"),
                    info["description"] or _NA,
                ]
                for name, info in systems.items()
            ],
            caption="Scoring systems audited",
        )
    features = list(meta.get("features") or [])
    feature_text = None
    if features:
        ordered = sorted(features, key=lambda f: feature_number(f, features))
        feature_text = "; ".join(
            f"{feature_number(f, features)}. {feature_label(f)} ({f})" for f in ordered
        )
    omitted = []
    for item in meta.get("omitted_features") or []:
        if isinstance(item, Mapping):
            omitted.append(
                {
                    "name": str(item.get("feature", "?")),
                    "reason": str(item.get("reason", "no reason recorded")),
                    "code": True,
                }
            )
        else:
            omitted.append(
                {"name": str(item), "reason": "no reason recorded", "code": True}
            )
    return {
        "items": [
            {
                "label": k,
                "cell": v if isinstance(v, Cell) else None,
                "lines": v if isinstance(v, list) else [],
            }
            for k, v in items
        ],  # fmt: skip
        "combos": combos,
        "systems": system_table,
        "features": feature_text,
        "left_out": omitted + left_out,
        "warnings": _warnings(meta, None, multi=multi),
        "notes": [str(n) for n in meta.get("notes") or []],
    }


# --------------------------------------------------------------------------- summary


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


def _summary(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompts: Sequence[str]
) -> dict[str, Any]:
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


# --------------------------------------------------------------------------- sections


def _agreement(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    out: dict[str, Any] = {"scale": _scale_text(meta, prompt), "main": None}
    if not _present(tables, "agreement"):
        return out
    table = tables["agreement"]
    _check_table(
        table,
        "agreement",
        [
            "representation", "system", "n", "qwk", "qwk_truncated", "human_human_qwk",
            "degradation", "smd", "abs_smd_paper", "exact_agreement", "adjacent_agreement",
            "pearson_r", "qwk_ok", "degradation_ok", "smd_ok", "acceptable",
        ],
    )  # fmt: skip
    records = table.to_dict("records")
    systems = _systems(meta)
    with_raters = not all(_missing(r["human_human_qwk"]) for r in records)
    outside = [
        float(r["n_outside_scale"])
        for r in records
        if not _missing(r.get("n_outside_scale"))
    ]
    with_outside = any(v > 0 for v in outside)
    th = _THRESHOLDS
    headers = ["Representation", "System", "Kind", "n"]
    if with_outside:
        headers.append("Outside the scale")
    headers += ["QWK", f"QWK ≥ {th['qwk']}"]
    flags = {len(headers) - 1}
    if with_raters:
        headers += ["Human–human QWK", "Degradation", f"Degradation ≤ {th['degradation']}"]
        flags.add(len(headers) - 1)
    headers += ["SMD (machine − human)", f"|SMD| ≤ {th['smd']}", "Acceptable"]
    flags |= {len(headers) - 2, len(headers) - 1}
    rows = []
    for r in records:
        kind = r.get("kind")
        if _missing(kind):
            kind = systems.get(str(r["system"]), {}).get("kind")
        row = [
            _rep(r["representation"]),
            _mod(r["system"]),
            _KIND_LABELS.get(str(kind), kind).split(",")[0] if kind else _NA,
            _num(r["n"]),
        ]
        if with_outside:
            row.append(_num(r.get("n_outside_scale")))
        row += [_num(r["qwk"]), _flag(r["qwk_ok"])]
        if with_raters:
            row += [_num(r["human_human_qwk"]), _num(r["degradation"])]
            row.append(_flag(r["degradation_ok"]))
        row += [_num(r["smd"]), _flag(r["smd_ok"]), _flag(r["acceptable"])]
        rows.append(row)
    out["main"] = _table(
        headers,
        rows,
        caption="Agreement with the human score (cf. the paper's Table 2)",
        flags=flags,
    )
    out["with_raters"] = with_raters
    out["n_outside"] = int(sum(outside)) if with_outside else 0
    out["further"] = _table(
        [
            "Representation",
            "System",
            "QWK, truncated predictions (paper's code)",
            "|SMD|, paper's formula",
            "Exact agreement",
            "Adjacent agreement (±1)",
            "Pearson r",
        ],
        [
            [
                _rep(r["representation"]),
                _mod(r["system"]),
                _num(r["qwk_truncated"]),
                _num(r["abs_smd_paper"]),
                _num(r["exact_agreement"]),
                _num(r["adjacent_agreement"]),
                _num(r["pearson_r"]),
            ]
            for r in records
        ],
        caption="Further agreement statistics",
    )
    out["human"] = None
    if _present(tables, "human_agreement"):
        human = tables["human_agreement"]
        _check_table(
            human,
            "human_agreement",
            ["rater1", "rater2", "qwk", "exact_agreement", "adjacent_agreement", "n"],
        )
        out["human"] = _table(
            [
                "Rater 1",
                "Rater 2",
                "n",
                "QWK",
                "Exact agreement",
                "Adjacent agreement (±1)",
            ],
            [
                [
                    h["rater1"],
                    h["rater2"],
                    _num(h["n"]),
                    _num(h["qwk"]),
                    _num(h["exact_agreement"]),
                    _num(h["adjacent_agreement"]),
                ]
                for h in human.to_dict("records")
            ],
            caption="Agreement between the two human raters",
        )
    return out


def _essay(
    label: str, essay_id: object, row: object, score: object, text: object
) -> dict[str, str]:
    """One essay of a pair; ``row`` is its row in the user's data (from 1)."""
    details = [f"id {essay_id}"]
    if not _missing(row):
        details.append(f"data row {_text(_num(row))}")
    if not _missing(score):
        details.append(f"human score {_text(_score(score))}")
    return {"label": label, "details": " · ".join([""] + details), "text": str(text)}


def _data_row(pair: Mapping[str, Any], end: str) -> object:
    """The user's data row (from 1) of essay ``end`` ("a"/"b") of a pair.

    ``data_row_a``/``data_row_b`` when the audit gives them (the row in the
    user's table, whatever the prompt), else the essay's position + 1.
    """
    row = pair.get(f"data_row_{end}")
    if not _missing(row):
        return row
    position = pair.get(f"row_{end}")
    return None if _missing(position) else int(cast(SupportsInt, position)) + 1


def _extremes(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    out: dict[str, Any] = {"reps": [], "profile": _present(tables, "feature_profile")}
    if not _present(tables, "extreme_pairs"):
        return out
    pairs = tables["extreme_pairs"]
    _check_table(
        pairs,
        "extreme_pairs",
        [
            "representation", "which", "rank", "row_a", "row_b", "id_a", "id_b", "distance",
            "text_a", "text_b", "score_a", "score_b",
        ],
    )  # fmt: skip
    for rep in _ordered(pairs["representation"], meta.get("representations") or ()):
        sub = pairs[pairs["representation"].astype(str) == rep]
        ends = []
        for which in ("nearest", "farthest"):
            part = sub[sub["which"].astype(str) == which].sort_values("rank")
            if part.empty:
                continue
            top = part.to_dict("records")[0]
            ends.append(
                {
                    "heading": f"{which.capitalize()} pair: essays {top['id_a']} and "
                    f"{top['id_b']} (cosine distance {_text(_num(top['distance']))})",
                    "a": _essay(
                        "Essay A",
                        top["id_a"],
                        _data_row(top, "a"),
                        top["score_a"],
                        top["text_a"],
                    ),
                    "b": _essay(
                        "Essay B",
                        top["id_b"],
                        _data_row(top, "b"),
                        top["score_b"],
                        top["text_b"],
                    ),
                }
            )
        listing = None
        if len(sub) > 2:
            ordered = sub.sort_values(["which", "rank"], ascending=[False, True])
            listing = _table(
                ["End", "Rank", "Essay A", "Essay B", "Distance", "Score A", "Score B"],
                [
                    [
                        p["which"],
                        _num(p["rank"]),
                        p["id_a"],
                        p["id_b"],
                        _num(p["distance"]),
                        _score(p["score_a"]),
                        _score(p["score_b"]),
                    ]
                    for p in ordered.to_dict("records")
                ],
                caption=f"All extreme pairs found for {representation_label(rep)}",
            )
        out["reps"].append(
            {"label": representation_label(rep), "ends": ends, "listing": listing}
        )
    return out


def _paraphrase(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    if not _present(tables, "paraphrase"):
        return {"table": None, "source": meta.get("paraphrase_source")}
    table = tables["paraphrase"]
    _check_table(
        table,
        "paraphrase",
        [
            "representation", "ndcg", "ndcg_std", "ndcg_at_10", "ndcg_at_10_std", "spearman",
            "spearman_std", "n_samples", "source",
        ],
    )  # fmt: skip
    rows = [
        [
            _rep(p["representation"]),
            _mean_sd(p["ndcg_at_10"], p["ndcg_at_10_std"]),
            _mean_sd(p["spearman"], p["spearman_std"]),
            _mean_sd(p["ndcg"], p["ndcg_std"]),
            _num(p["n_samples"]),
            p["source"],
        ]
        for p in table.to_dict("records")
    ]
    return {
        "table": _table(
            [
                "Representation",
                "NDCG@10 (mean ± SD)",
                "Spearman's rho (mean ± SD)",
                "NDCG, full list (mean ± SD)",
                "Essays sampled",
                "Paraphrases from",
            ],
            rows,
            caption="Similarity ranking of originals vs. paraphrases",
        ),
        "source": meta.get("paraphrase_source"),
    }


def _lipschitz(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    reps_pref = meta.get("representations") or ()
    systems = _system_order(meta)
    out: dict[str, Any] = {
        "warnings": _warnings(meta, prompt),
        "table": None,
        "bins": None,
        "trend": None,
        "curves": _present(tables, "score_distance") or _present(tables, "trend"),
    }
    if _present(tables, "lipschitz"):
        table = tables["lipschitz"]
        _check_table(
            table,
            "lipschitz",
            ["representation", "system", "lipschitz_minmax", "lipschitz_max", "n_pairs"],
        )
        reps = _ordered(table["representation"], reps_pref)
        mods = _ordered(table["system"], systems, last=("human",))
        cells = {
            (str(t["representation"]), str(t["system"])): t
            for t in table.to_dict("records")
        }
        top = [_th("Representation", rowspan=2), _th("Pairs", rowspan=2, cls="num")]
        top += [_th(model_label(m), colspan=2, scope="colgroup") for m in mods]
        second = []
        for _ in mods:
            second += [
                _th("min–max", cls="num", scope=None),
                _th("max", cls="num", scope=None),
            ]
        rows = []
        for r in reps:
            pairs = next((cells[(r, m)]["n_pairs"] for m in mods if (r, m) in cells), None)
            row: list[object] = [_rep(r), _num(pairs)]
            for m in mods:
                t = cells.get((r, m))
                row += (
                    [_pct(t["lipschitz_minmax"]), _pct(t["lipschitz_max"])]
                    if t
                    else [_NA, _NA]
                )
            rows.append(row)
        out["table"] = _table(
            None,
            rows,
            header_rows=[top, second],
            caption="Essay pairs satisfying the Lipschitz condition, % of all pairs "
            "(min–max / max normalisation; cf. the paper's Table 3)",
        )
    if _present(tables, "score_distance"):
        table = tables["score_distance"]
        _check_table(
            table,
            "score_distance",
            ["representation", "system", "n_bins", "bin", "n_pairs", "mean_abs_diff", "se"],
        )
        five = table[table["n_bins"].astype(int) == 5]
        if len(five):
            bin_rows: list[list[Cell]] = []
            for r in _ordered(five["representation"], reps_pref):
                sub = five[five["representation"].astype(str) == r]
                for m in _ordered(sub["system"], systems, last=("human",)):
                    part = sub[sub["system"].astype(str) == m].sort_values("bin")
                    bin_rows.append(
                        [_rep(r), _mod(m)]
                        + [
                            _mean_sd(v, s)
                            for v, s in zip(part["mean_abs_diff"], part["se"])
                        ]
                    )
            width = max(len(row) for row in bin_rows) - 2
            headers = ["Representation", "System"] + [
                f"Bin {b}"
                + (" (nearest)" if b == 1 else " (farthest)" if b == width else "")
                for b in range(1, width + 1)
            ]
            out["bins"] = _table(
                headers,
                bin_rows,
                caption="Mean |Δscore| per distance bin (± standard error), 5 bins",
            )
    if _present(tables, "trend"):
        trend = tables["trend"]
        _check_table(
            trend,
            "trend",
            ["representation", "system", "n_bins", "spearman_rho", "spearman_pvalue"],
        )
        bins = sorted(set(int(b) for b in trend["n_bins"]))
        trends = {
            (str(t["representation"]), str(t["system"]), int(t["n_bins"])): t
            for t in trend.to_dict("records")
        }
        headers = ["Representation", "System"]
        for b in bins:
            headers += [f"Spearman's rho, {b} bins", f"p-value, {b} bins"]
        rows = []
        for r in _ordered(trend["representation"], reps_pref):
            sub = trend[trend["representation"].astype(str) == r]
            for m in _ordered(sub["system"], systems, last=("human",)):
                row = [_rep(r), _mod(m)]
                for b in bins:
                    t = trends.get((r, m, b))
                    row += (
                        [_num(t["spearman_rho"]), _pvalue(t["spearman_pvalue"])]
                        if t
                        else [_NA, _NA]
                    )
                rows.append(row)
        out["trend"] = _table(
            headers,
            rows,
            caption="Trend: rank correlation between distance bin and mean |Δscore|",
        )
    return out


def _review_essay(
    label: str,
    essay_id: object,
    row: object,
    score: object,
    human: object,
    text: object,
    *,
    system: str,
) -> dict[str, str]:
    """One essay of the review list: the system's score and the human score."""
    details = [f"id {essay_id}"]
    if not _missing(row):
        details.append(f"data row {_text(_num(row))}")
    if system != "human":
        details.append(f"{model_label(system)} {_text(_score(score))}")
    details.append(f"human score {_text(_score(human))}")
    return {"label": label, "details": " · ".join([""] + details), "text": str(text)}


def _review(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The essays to review per representation and system, the worst pairs and the constants."""
    reps_pref = meta.get("representations") or ()
    systems = _system_order(meta)
    out: dict[str, Any] = {
        "reps": [],
        "constants": None,
        "shown": REVIEW_ESSAYS_SHOWN,
        "rows_shown": REVIEW_ROWS_SHOWN,
    }
    review = tables.get("review_list")
    neighbors = tables.get("review_neighbors")
    violations = tables.get("lipschitz_violations")
    if review is not None:
        _check_table(
            review,
            "review_list",
            [
                "representation", "system", "rank", "id", "data_row", "score", "human_score",
                "neighbor_mean", "gap", "reason", "text",
            ],
        )  # fmt: skip
    if neighbors is not None:
        _check_table(
            neighbors,
            "review_neighbors",
            [
                "representation", "system", "rank", "neighbor_rank", "neighbor_id",
                "neighbor_data_row", "distance", "neighbor_score", "neighbor_human_score",
                "neighbor_text",
            ],
        )  # fmt: skip
    if violations is not None:
        _check_table(
            violations,
            "lipschitz_violations",
            [
                "representation", "system", "rank", "id_a", "id_b", "distance", "score_a",
                "score_b", "human_score_a", "human_score_b", "violation",
            ],
        )  # fmt: skip
    present = [t for t in (review, violations) if t is not None and len(t)]
    keys = [
        (str(r), str(s)) for t in present for r, s in zip(t["representation"], t["system"])
    ]
    reps = _ordered([r for r, _ in keys], reps_pref)
    for r in reps:
        entries = []
        for m in _ordered([s for rr, s in keys if rr == r], systems, last=("human",)):
            entries.append(_review_system(review, neighbors, violations, r, m))
        out["reps"].append({"label": representation_label(r), "systems": entries})
    if _present(tables, "lipschitz_constants"):
        constants = tables["lipschitz_constants"]
        _check_table(
            constants,
            "lipschitz_constants",
            ["representation", "system", "quantile", "lipschitz_constant"],
        )
        quantiles = sorted(set(float(q) for q in constants["quantile"]))
        cells = {
            (str(c["representation"]), str(c["system"]), float(c["quantile"])): c[
                "lipschitz_constant"
            ]
            for c in constants.to_dict("records")
        }
        rows = []
        for r in _ordered(constants["representation"], reps_pref):
            sub = constants[constants["representation"].astype(str) == r]
            for m in _ordered(sub["system"], systems, last=("human",)):
                rows.append(
                    [_rep(r), _mod(m)] + [_num(cells.get((r, m, q))) for q in quantiles]
                )
        out["constants"] = _table(
            ["Representation", "System"]
            + [f"L at {100 * q:g}% of pairs" for q in quantiles],
            rows,
            caption="Empirical Lipschitz constants: the smallest L at which the share "
            "of pairs satisfying the condition reaches 90, 95 and 99% (min–max "
            "normalisation; ∞: near-identical essays with different scores)",
        )
    return out


def _rows_of(table: pd.DataFrame | None, rep: str, system: str) -> pd.DataFrame | None:
    if table is None or not len(table):
        return None
    sub = table[
        (table["representation"].astype(str) == rep)
        & (table["system"].astype(str) == system)
    ]
    return sub.sort_values("rank") if len(sub) else None


def _review_system(
    review: pd.DataFrame | None,
    neighbors: pd.DataFrame | None,
    violations: pd.DataFrame | None,
    rep: str,
    system: str,
) -> dict[str, Any]:
    """One (representation, system) of the essays to review."""
    listed = _rows_of(review, rep, system)
    near = _rows_of(neighbors, rep, system)
    pairs = _rows_of(violations, rep, system)
    label = "Human scores (rater monitoring)" if system == "human" else model_label(system)
    entry: dict[str, Any] = {
        "label": label,
        "essays": [],
        "listing": None,
        "n_listed": 0 if listed is None else len(listed),
        "pairs": None,
        "n_pairs": 0 if pairs is None else len(pairs),
    }
    if listed is not None:
        records = listed.to_dict("records")
        for e in records[:REVIEW_ESSAYS_SHOWN]:
            mine = (
                []
                if near is None
                else near[near["rank"] == e["rank"]]
                .sort_values("neighbor_rank")
                .to_dict("records")
            )
            flagged = _review_essay(
                "Listed essay",
                e["id"],
                e["data_row"],
                e["score"],
                e["human_score"],
                e["text"],
                system=system,
            )
            nearest = (
                _review_essay(
                    f"Nearest neighbour (distance {_text(_num(mine[0]['distance']))})",
                    mine[0]["neighbor_id"],
                    mine[0]["neighbor_data_row"],
                    mine[0]["neighbor_score"],
                    mine[0]["neighbor_human_score"],
                    mine[0]["neighbor_text"],
                    system=system,
                )
                if mine
                else None
            )
            table = (
                _table(
                    ["Neighbour", "Essay", "Data row", "Distance", "Score", "Human score"],
                    [
                        [
                            _num(n["neighbor_rank"]),
                            n["neighbor_id"],
                            _num(n["neighbor_data_row"]),
                            _num(n["distance"]),
                            _score(n["neighbor_score"]),
                            _score(n["neighbor_human_score"]),
                        ]
                        for n in mine
                    ],
                    caption=f"Nearest neighbours of essay {e['id']}",
                )
                if mine
                else None
            )
            entry["essays"].append(
                {
                    "heading": f"{_text(_num(e['rank']))}. Essay {e['id']}: {e['reason']}",
                    "essay": flagged,
                    "nearest": nearest,
                    "neighbors": table,
                }
            )
        entry["listing"] = _table(
            ["Rank", "Essay", "Data row", "Score", "Human score", "Neighbour mean", "Gap",
             "Why listed"],
            [
                [
                    _num(e["rank"]),
                    e["id"],
                    _num(e["data_row"]),
                    _score(e["score"]),
                    _score(e["human_score"]),
                    _num(e["neighbor_mean"]),
                    _num(e["gap"]),
                    e["reason"],
                ]
                for e in records[:REVIEW_ROWS_SHOWN]
            ],
            caption=f"Essays to review, {representation_label(rep)}, {label}: the first "
            f"{min(len(records), REVIEW_ROWS_SHOWN)} of {len(records)} "
            "(all in tables/review_list.csv)",
        )  # fmt: skip
    if pairs is not None:
        entry["pairs"] = _table(
            ["Rank", "Essay A", "Essay B", "Distance", "Score A", "Score B",
             "Human A", "Human B", "Violation"],
            [
                [
                    _num(v["rank"]),
                    v["id_a"],
                    v["id_b"],
                    _num(v["distance"]),
                    _score(v["score_a"]),
                    _score(v["score_b"]),
                    _score(v["human_score_a"]),
                    _score(v["human_score_b"]),
                    _num(v["violation"]),
                ]
                for v in pairs.to_dict("records")[:REVIEW_ROWS_SHOWN]
            ],
            caption=f"Worst pairs, {representation_label(rep)}, {label}: the first "
            f"{min(len(pairs), REVIEW_ROWS_SHOWN)} of {len(pairs)} "
            "(all in tables/lipschitz_violations.csv)",
        )  # fmt: skip
    return entry


_FAIRNESS_ANALYSES = (("osa", "OSA"), ("osd", "OSD"), ("csd", "CSD"))


def _group_name(label: object) -> Cell:
    return Cell("All essays", "em") if str(label) == "all" else Cell(str(label))


def _by_system(
    table: pd.DataFrame, meta: Mapping[str, Any], *, human: bool = False
) -> list[tuple[str, str, pd.DataFrame]]:
    """(representation, system, rows) in the report's order."""
    out = []
    for r in _ordered(table["representation"], meta.get("representations") or ()):
        sub = table[table["representation"].astype(str) == r]
        last = ("human",) if human else ()
        for m in _ordered(sub["system"], _system_order(meta), last=last):
            out.append((r, m, sub[sub["system"].astype(str) == m]))
    return out


def _groups(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "agreement": None,
        "fairness": None,
        "coefficients": None,
        "lipschitz": None,
    }
    th = _THRESHOLDS
    if _present(tables, "group_agreement"):
        table = tables["group_agreement"]
        _check_table(
            table,
            "group_agreement",
            [
                "representation", "system", "group", "n", "human_mean", "human_sd",
                "machine_mean", "machine_sd", "qwk", "smd", "dsm", "qwk_ok", "smd_ok",
                "dsm_ok",
            ],
        )  # fmt: skip
        rows: list[list[object]] = []
        for r, m, part in _by_system(table, meta):
            part = part.assign(_all=part["group"].astype(str) == "all").sort_values(
                "_all", kind="stable"
            )
            for g in part.to_dict("records"):
                rows.append(
                    [
                        _rep(r),
                        _mod(m),
                        _group_name(g["group"]),
                        _num(g["n"]),
                        _mean_sd(g["human_mean"], g["human_sd"]),
                        _mean_sd(g["machine_mean"], g["machine_sd"]),
                        _num(g["qwk"]),
                        _flag(g["qwk_ok"]),
                        _num(g["smd"]),
                        _flag(g["smd_ok"]),
                        _num(g["dsm"]),
                        _flag(g["dsm_ok"]),
                    ]
                )
        column = f" (column {meta['group_col']})" if meta.get("group_col") else ""
        out["agreement"] = _table(
            [
                "Representation", "System", "Group", "n", "Human score (mean ± SD)",
                "Machine score (mean ± SD)", "QWK", f"QWK ≥ {th['qwk']}",
                "SMD (machine − human)", f"|SMD| ≤ {th['smd']}", "DSM",
                f"|DSM| ≤ {th['dsm']}",
            ],
            rows,
            caption=f"Agreement with the human score by group{column}; DSM against all "
            "essays, as in RSMTool's report",
            flags={7, 9, 11},
        )  # fmt: skip
    if _present(tables, "group_fairness"):
        table = tables["group_fairness"]
        _check_table(
            table,
            "group_fairness",
            ["representation", "system", "metric", "r2_adjusted", "p_value", "base_group"],
        )
        top = [_th("Representation", rowspan=2), _th("System", rowspan=2)]
        top += [_th("Reference group", rowspan=2)]
        top += [_th(label, colspan=2, scope="colgroup") for _, label in _FAIRNESS_ANALYSES]
        second = []
        for _ in _FAIRNESS_ANALYSES:
            second += [
                _th("adj. R²", cls="num", scope=None),
                _th("p", cls="num", scope=None),
            ]
        rows = []
        for r, m, part in _by_system(table, meta):
            cells = {str(t["metric"]): t for t in part.to_dict("records")}
            base = next(iter(cells.values()))["base_group"] if cells else None
            row: list[object] = [_rep(r), _mod(m), _cell(base)]
            for key, _ in _FAIRNESS_ANALYSES:
                t = cells.get(key)
                row += [_num(t["r2_adjusted"]), _pvalue(t["p_value"])] if t else [_NA, _NA]
            rows.append(row)
        out["fairness"] = _table(
            None,
            rows,
            header_rows=[top, second],
            caption="Fairness analyses (Loukina, Madnani and Zechner 2019; as RSMTool): "
            "share of the machine's error explained by group membership (adjusted R²) "
            "and the p-value of its F test. For CSD, the increase over the human score "
            "alone.",
        )
    if _present(tables, "group_fairness_coefficients"):
        table = tables["group_fairness_coefficients"]
        _check_table(
            table,
            "group_fairness_coefficients",
            ["representation", "system", "metric", "group", "term", "estimate", "p_value"],
        )
        headers = ["Representation", "System", "Group"]
        for _, label in _FAIRNESS_ANALYSES:
            headers += [f"{label} estimate", f"{label} p"]
        rows = []
        for r, m, part in _by_system(table, meta):
            records = part.to_dict("records")
            estimates = {(str(t["metric"]), str(t["group"])): t for t in records}
            terms = {str(t["group"]): str(t["term"]) for t in records}
            for g in dict.fromkeys(str(v) for v in part["group"]):
                label = f"{g} (reference)" if terms[g] == "intercept" else g
                row = [_rep(r), _mod(m), label]
                for key, _ in _FAIRNESS_ANALYSES:
                    t = estimates.get((key, g))
                    row += [_num(t["estimate"]), _pvalue(t["p_value"])] if t else [_NA, _NA]
                rows.append(row)
        out["coefficients"] = _table(
            headers,
            rows,
            caption="Coefficients of the fairness analyses: for the reference group its "
            "mean squared error (OSA) or mean signed error (OSD; CSD at the most frequent "
            "human score); for every other group its difference from the reference group",
        )
    if _present(tables, "group_lipschitz"):
        out["lipschitz"] = _group_lipschitz(tables["group_lipschitz"], meta)
    return out


def _group_lipschitz(table: pd.DataFrame, meta: Mapping[str, Any]) -> dict[str, Any]:
    _check_table(
        table,
        "group_lipschitz",
        ["representation", "system", "scope", "group", "n_essays", "n_pairs", "fraction"],
    )
    per_group = table[table["scope"].astype(str) == "group"]
    groups = list(dict.fromkeys(str(g) for g in per_group["group"]))
    sizes = dict(zip(per_group["group"].astype(str), per_group["n_essays"]))
    headers = ["Representation", "System", "All pairs", "Within a group", "Across groups"]
    headers += [f"Within {g} (n = {_text(_num(sizes[g]))})" for g in groups]
    rows = []
    for r, m, part in _by_system(table, meta, human=True):
        scopes = {
            (str(t["scope"]), str(t["group"]) if str(t["scope"]) == "group" else ""): t[
                "fraction"
            ]
            for t in part.to_dict("records")
        }
        row = [_rep(r), _mod(m)]
        row += [_pct(scopes.get((s, ""))) for s in ("overall", "within", "cross")]
        row += [_pct(scopes.get(("group", g))) for g in groups]
        rows.append(row)
    counts = {
        str(t["scope"]): t["n_pairs"]
        for t in table.to_dict("records")
        if str(t["scope"]) in ("within", "cross")
    }
    return {
        "table": _table(headers, rows),
        "within": _text(_num(counts.get("within"))) if counts else None,
        "cross": _text(_num(counts.get("cross"))) if counts else None,
    }


def _counterfactual(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    out: dict[str, Any] = {"table": None, "examples": None, "tolerance": None}
    if not _present(tables, "perturbation"):
        return out
    table = tables["perturbation"]
    _check_table(
        table,
        "perturbation",
        [
            "representation", "system", "perturbation", "family", "expected", "n_changed",
            "share_expected", "mean_change", "share_beyond_tolerance", "mean_distance",
            "share_zero_distance", "lipschitz_max", "tolerance",
        ],
    )  # fmt: skip
    expected = {"stay": "stay", "drop": "drop", "change": "move"}
    tol = table["tolerance"].dropna()
    tol_text = f"{float(tol.iloc[0]):g} score points" if len(tol) else "the tolerance"
    out["table"] = _table(
        [
            "Representation",
            "System",
            "Edit",
            "Expected",
            "Essays edited",
            "% as expected",
            "Mean change",
            f"% beyond ±{tol_text}",
            "Mean distance",
            "% at distance 0",
            "% Lipschitz (max)",
        ],
        [
            [
                _rep(r["representation"]),
                _mod(r["system"]),
                r["perturbation"],
                expected.get(str(r["expected"]), str(r["expected"])),
                _num(r["n_changed"]),
                _pct(r["share_expected"]),
                _num(r["mean_change"]),
                _pct(r["share_beyond_tolerance"]),
                _num(r["mean_distance"]),
                _pct(r["share_zero_distance"]),
                _pct(r["lipschitz_max"]),
            ]
            for r in table.to_dict("records")
        ],
        caption="Score changes under controlled edits (changed essays only)",
    )
    if _present(tables, "perturbation_examples"):
        ex = tables["perturbation_examples"]
        _check_table(
            ex,
            "perturbation_examples",
            ["representation", "perturbation", "id", "edit_preview"],
        )
        first = ex.drop_duplicates("perturbation")
        out["examples"] = _table(
            ["Edit", "Essay id", "What changed (first edits)"],
            [
                [r["perturbation"], r["id"], _short(r["edit_preview"], 160)]
                for r in first.to_dict("records")
            ],
            caption="One example of each edit",
        )
    return out


_COVERAGE_COLUMNS = {
    "n_references": ("References (M)", _num),
    "mean_score": ("Mean score of a valid answer", _num),
    "ci_low": ("95 % interval, low", _num),
    "ci_high": ("95 % interval, high", _num),
    "share_below_threshold": ("% scored below the pass mark", _pct),
    "n_questions": ("Questions", _num),
    "n_held_out": ("Held-out answers", _num),
}


def _short_answers(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
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


_VIEWS: dict[str, Callable[..., dict[str, Any]]] = {
    "agreement": _agreement,
    "extremes": _extremes,
    "paraphrase": _paraphrase,
    "lipschitz": _lipschitz,
    "review": _review,
    "groups": _groups,
    "counterfactual": _counterfactual,
    "short_answers": _short_answers,
}


# --------------------------------------------------------------------------- page


def _check_inputs(tables: object, meta: object, figures: object) -> None:
    if not isinstance(tables, Mapping):
        raise TypeError(
            f"tables must be a dict of table name -> pandas.DataFrame (AuditResult.tables); "
            f"got {type(tables).__name__}"
        )
    for name, table in tables.items():
        if table is not None and not hasattr(table, "columns"):
            raise TypeError(
                f"tables[{name!r}] must be a pandas.DataFrame; got {type(table).__name__}"
            )
    if meta is not None and not isinstance(meta, Mapping):
        raise TypeError(
            f"meta must be a dict (AuditResult.meta) or None; got {type(meta).__name__}"
        )
    if figures is not None and not isinstance(figures, Mapping):
        raise TypeError(
            "figures must be a dict of figure name -> matplotlib Figure "
            f"(AuditResult.figures) or None; got {type(figures).__name__}"
        )
    for name, fig in (figures or {}).items():
        if not hasattr(fig, "savefig"):
            raise TypeError(
                f"figures[{name!r}] must be a matplotlib Figure; got {type(fig).__name__}"
            )


def _plan(
    frames: Mapping[str, pd.DataFrame],
    meta: Mapping[str, Any],
    prompts: Sequence[str],
) -> tuple[list[tuple[str, list[tuple[str, tuple[str, ...]]]]], list[dict[str, Any]]]:
    """The analyses whose sections the page shows, and what is left out and why.

    A section missing for every prompt is listed with its reason; one missing
    for some prompts only, with those prompts. Optional analyses (group
    view, counterfactual edits, short answers) show only with their tables.
    """
    by_prompt = {p: prompt_tables(frames, p) for p in prompts}
    shown, left_out = [], []
    for analysis, sections in _ANALYSIS_SECTIONS:
        has = {
            title: [p for p in prompts if any(_present(by_prompt[p], n) for n in names)]
            for title, names in sections
        }
        visible = analysis not in _OPTIONAL or any(has.values())
        if visible:
            shown.append((analysis, list(sections)))
        for title, _ in sections:
            lacking = [p for p in prompts if p not in has[title]]
            if not lacking or (
                analysis == "short_answers" and not visible and not meta.get("short_answer")
            ):
                continue  # an essay audit: no short-answer section to explain
            reasons: dict[str, list[str]] = {}
            for p in lacking:
                reason = _absent_reason(meta, analysis, p) or (
                    _DEFAULT_REASONS.get(analysis, _MISSING_TABLE)
                    if not visible
                    else _MISSING_TABLE
                )
                reasons.setdefault(reason, []).append(p)
            for reason, where in reasons.items():
                scope = (
                    None
                    if len(prompts) == 1 or len(where) == len(prompts)
                    else "prompt" + ("s " if len(where) > 1 else " ") + ", ".join(where)
                )
                left_out.append(
                    {"name": title, "reason": reason, "code": False, "scope": scope}
                )
    return shown, left_out


def render_html(
    tables: Mapping[str, pd.DataFrame | None],
    meta: Mapping[str, Any] | None,
    figures: Mapping[str, Figure] | None,
    *,
    dpi: int = 100,
) -> str:
    """Render an audit as one self-contained HTML page.

    Sections follow the paper's methodology (Section 3) and results (Section
    5): 1 Overview, 2 Agreement with human raters, 3 Essay similarity:
    extreme pairs, 4 Aggregate feature differences, 5 Paraphrase robustness,
    6 Individual fairness: Lipschitz fraction, 7 Score difference vs.
    distance, then the group view (with a group table), the counterfactual
    edits (with the perturbation table) and the short answers' grading and
    reference coverage (with the grading or reference-coverage table). Each
    opens with a plain-language reading guide. A section whose tables are
    missing says so, and the overview lists it, with the reason the audit
    gave (``meta["absent_sections"]``) and the omitted features.

    With several prompts (``meta["prompts"]``, or the tables' ``prompt``
    column), the overview is followed by a summary across prompts (each
    prompt's score scale, QWK and Lipschitz fraction, and the pooled rows),
    then one part per prompt with the sections above, from that prompt's
    rows of the tables and its figures (keys of
    :func:`~sklearn_fairaes.report._plots.figure_key`).

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        The audit's tables (see :class:`~sklearn_fairaes.report.AuditResult`).
        Tables without a ``prompt`` column are read as one prompt.
    meta : dict or None
        The audit's metadata (title, data, systems, what was run and left
        out, score scales, notes, versions, run time). Missing keys are shown
        as not available.
    figures : dict of str to matplotlib.figure.Figure, or None
        Usually ``make_figures`` (``sklearn_fairaes.report._plots``) of the
        same tables; each is embedded once as a PNG data URI. Figures with
        other names go to a last section of additional figures.
    dpi : int, default=100
        Resolution of the embedded PNGs.

    Returns
    -------
    html : str
        A complete HTML document: inline CSS, no scripts, no external
        resources. All text from the data is HTML-escaped.

    Raises
    ------
    TypeError
        When ``tables``, ``meta`` or ``figures`` are not dicts of the
        expected objects.
    ValueError
        When a table lacks a column of the audit's data contract.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._html import render_html
    >>> pairs = pd.DataFrame({
    ...     "prompt": ["all"], "representation": ["bow"], "which": ["nearest"],
    ...     "rank": [1], "row_a": [0], "row_b": [1], "id_a": ["a"], "id_b": ["b"],
    ...     "distance": [0.1], "text_a": ["I <3 waiting & reading"],
    ...     "text_b": ["Patience"], "score_a": [3], "score_b": [4]})
    >>> page = render_html({"extreme_pairs": pairs}, {"title": "Demo"}, {})
    >>> page.startswith("<!DOCTYPE html>")
    True
    >>> "I &lt;3 waiting &amp; reading" in page
    True
    """
    _check_inputs(tables, meta, figures)
    frames = {k: v for k, v in tables.items() if v is not None}
    meta = dict(meta or {})
    prompts = audit_prompts(frames, meta)
    multi = len(prompts) > 1
    shown, left_out = _plan(frames, meta, prompts)
    embed = _Figures(figures, dpi)

    def numbered(prefix: str, start: int) -> list[dict[str, Any]]:
        """The analyses of one part, their sections numbered from ``start``."""
        out, number = [], start
        for analysis, sections in shown:
            heads = []
            for title, _ in sections:
                heads.append(
                    {
                        "number": f"{prefix}{number}",
                        "title": title,
                        "anchor": f"{'p' + prefix.replace('.', '-') if multi else ''}"
                        f"section-{number}",
                    }
                )
                number += 1
            out.append({"analysis": analysis, "headings": heads})
        return out

    def references(analyses: list[dict[str, Any]]) -> dict[str, str]:
        return {h["title"]: h["number"] for a in analyses for h in a["headings"]}

    toc: list[dict[str, str]] = [{"anchor": "section-1", "title": SECTION_TITLES[0]}]
    parts: list[dict[str, Any]] = []
    if not multi:
        analyses = numbered("", 2)
        toc += [
            {"anchor": h["anchor"], "title": h["title"]}
            for a in analyses
            for h in a["headings"]
        ]
        parts.append(
            {
                "heading": None,
                "analyses": analyses,
                "fig": embed.bind(None, ""),
                "ref": references(analyses),
                "prompt": prompts[0],
                "tables": prompt_tables(frames, prompts[0]),
            }
        )
    else:
        toc.append({"anchor": "section-2", "title": SUMMARY_TITLE})
        sizes = _prompt_sizes(frames, meta, prompts)
        for k, p in enumerate(prompts, start=1):
            number = k + 2
            analyses = numbered(f"{number}.", 1)
            anchor = f"part-{number}"
            toc.append({"anchor": anchor, "title": f"Prompt {p}"})
            ptables = prompt_tables(frames, p)
            n = sizes.get(p)
            parts.append(
                {
                    "heading": {
                        "number": str(number),
                        "prompt": p,
                        "anchor": anchor,
                        "n": _text(_num(n)),
                        "scale": _scale_text(meta, p),
                        "toc": [
                            {"anchor": h["anchor"], "title": f"{h['number']} {h['title']}"}
                            for a in analyses
                            for h in a["headings"]
                        ],
                    },
                    "analyses": analyses,
                    "fig": embed.bind(p, f"-p{k}"),
                    "ref": references(analyses),
                    "prompt": p,
                    "tables": ptables,
                }
            )
    for part in parts:
        for a in part["analyses"]:
            a["view"] = _VIEWS[a["analysis"]](part["tables"], meta, part["prompt"])
            a["reason"] = _absent_reason(meta, a["analysis"], part["prompt"])
        del part["tables"]

    versions = meta.get("versions") or {}
    title = str(meta.get("title") or "Individual-fairness audit")
    page = _environment().get_template("layout.html.j2")
    context = {
        "title": title,
        "started": meta.get("started") or None,
        "seconds": _text(_num(meta["seconds"], 1))
        if not _missing(meta.get("seconds"))
        else None,
        "package_version": versions.get("sklearn_fairaes")
        or versions.get("sklearn-fairaes"),
        "versions": [f"{k} {v}" for k, v in versions.items()],
        "csp": _CSP,
        "toc": toc,
        "multi": multi,
        "overview": _overview(meta, prompts, left_out),
        "summary": _summary(frames, meta, prompts) if multi else None,
        "parts": parts,
        "leftovers": embed.leftovers,
        "th": _THRESHOLDS,
        "meta_group_col": meta.get("group_col"),
    }
    return page.render(context)


# --------------------------------------------------------------------------- JSON


def _jsonable(value: object, where: str) -> Any:
    """``value`` as plain JSON types: NaN/NA -> None, numpy scalars -> Python."""
    if value is None or isinstance(value, str):
        return value if value is None else str(value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [_jsonable(v, f"{where}[{i}]") for i, v in enumerate(value.tolist())]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [_jsonable(v, f"{where}[{i}]") for i, v in enumerate(items)]
    if _missing(value):
        return None
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, np.datetime64):
        return str(value)
    if isinstance(value, np.timedelta64):
        return float(value / np.timedelta64(1, "s"))
    if isinstance(value, PurePath):
        return str(value)
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    raise TypeError(
        f"{where} holds {article} {kind} ({value!r}), which has no JSON form; "
        "store numbers, strings, booleans, dates, lists or dicts in the audit's tables and meta"
    )


def to_json_dict(
    tables: Mapping[str, pd.DataFrame | None], meta: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The audit's tables and metadata as plain, JSON-able Python data.

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        The audit's tables.
    meta : dict or None
        The audit's metadata.

    Returns
    -------
    data : dict
        ``{"meta": {...}, "tables": {name: [record, ...]}}``: each table a
        list of ``{column: value}`` records in row order; NaN, infinities
        and missing values become None (JSON ``null``), numpy scalars
        become Python numbers, dates ISO 8601 strings. ``json.dumps(data,
        allow_nan=False)`` always succeeds.

    Raises
    ------
    TypeError
        When a value has no JSON form; the message says where it is.

    Examples
    --------
    >>> import json
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._html import to_json_dict
    >>> table = pd.DataFrame({"system": ["ridge"], "qwk": [np.nan], "n": [np.int64(3)]})
    >>> json.dumps(to_json_dict({"agreement": table}, {"cv": 5}), allow_nan=False)
    '{"meta": {"cv": 5}, "tables": {"agreement": [{"system": "ridge", "qwk": null, "n": 3}]}}'
    """
    _check_inputs(tables, meta, None)
    out = {"meta": _jsonable(dict(meta or {}), "meta"), "tables": {}}
    for name, table in tables.items():
        if table is None:
            continue
        columns = [str(c) for c in table.columns]
        out["tables"][str(name)] = [
            {
                c: _jsonable(v, f"tables[{name!r}] row {i} column {c!r}")
                for c, v in zip(columns, row)
            }
            for i, row in enumerate(table.itertuples(index=False, name=None))
        ]
    return out
