"""The audit report as one self-contained HTML file, and as JSON-able data.

:func:`render_html` lays out the audit's tables and figures in the order of
the paper's methodology (Section 3) and results (Section 5): agreement with
human raters, the essay-similarity checks (extreme pairs, aggregate feature
differences, paraphrases), then individual fairness (the Lipschitz condition
and score difference vs. distance), the group view, the counterfactual edits
and, for short answers, grading and reference coverage. Each section opens
with a short reading guide for assessment researchers. An audit of several
prompts gets a summary across prompts, then one part per prompt.

The page comes from Jinja2 templates (``report/templates``: a layout, shared
macros and one template per section, ``sections/<id>.html.j2``). This
module only renders the page: it plans which sections show (in the order of
``analyses.SECTIONS``) and what is left out, numbers their headings, asks
each section's view for the plain values its template reads (formatted
numbers, rows, headers; ``report/analyses``) and embeds the figures. It
never writes markup, and the templates are rendered with autoescaping on
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
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import numpy as np

from ._cells import (
    _THRESHOLDS,
    _absent_reason,
    _missing,
    _num,
    _present,
    _scale_text,
    _text,
)
from ._plots import audit_prompts, figure_key, prompt_tables
from .analyses import REVIEW, SECTIONS, SUMMARY, Section
from .analyses._summary import _prompt_sizes

if TYPE_CHECKING:
    import jinja2
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["SECTION_TITLES", "render_html", "to_json_dict"]

#: Headings of the built-in sections of an audit of one prompt, in order
#: (the essays to review show only with their tables, so they are left out).
#: The group view appears only with a group table, the counterfactual edits
#: only with the perturbation table, the short answers only with the grading
#: or reference-coverage table, the test-retest section only with repeats.
SECTION_TITLES = tuple(
    h.title for s in SECTIONS if s.id not in ("summary", "review") for h in s.headings
)

#: Title of the section of the essays to review (issue 17).
REVIEW_TITLE = REVIEW.title

#: Title of the section that opens an audit of several prompts.
SUMMARY_TITLE = SUMMARY.title

_MISSING_TABLE = "not available in this run (its table is missing)"

# Scripts, frames, fonts and remote images are all refused: the report needs none.
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


# --------------------------------------------------------------------------- templates


@lru_cache(maxsize=8)
def _environment(folders: tuple[str, ...] = ()) -> jinja2.Environment:
    """The templates of the package, then of ``folders`` (sections registered from
    outside it): autoescaped, strict about undefined names."""
    import jinja2

    package = jinja2.PackageLoader("sklearn_fairaes.report", "templates")
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader([package, jinja2.FileSystemLoader(list(folders))])
        if folders
        else package,
        # every template, whatever its extension: data never reaches the page unescaped
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


# --------------------------------------------------------------------------- figures


class _Figures:
    """Embeds figures as PNG data URIs and numbers them in document order.

    The templates call it (through :meth:`bind`) where a figure goes, so the
    numbers follow the page whatever the order of the sections.
    """

    def __init__(self, figures: Mapping[str, Figure | bytes] | None, dpi: int) -> None:
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
        if isinstance(fig, bytes):  # drawn already (the report's figure cache)
            png = fig
        else:
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
        png = (
            isinstance(fig, bytes)
            and fig.startswith(b"\x89PNG\r\n\x1a\n")
            and len(fig) > 24
        )
        if not hasattr(fig, "savefig") and not png:
            raise TypeError(
                f"figures[{name!r}] must be a matplotlib Figure (or a PNG image's "
                f"bytes); got {type(fig).__name__}"
                + (" that are not a PNG image" if isinstance(fig, bytes) else "")
            )


class _Refs(dict[str, str]):
    """Heading id -> its number on the page; a section not shown reads as "—"."""

    def __missing__(self, key: str) -> str:
        return "—"


def _plan(
    frames: Mapping[str, pd.DataFrame],
    meta: Mapping[str, Any],
    prompts: Sequence[str],
) -> tuple[list[Section], list[dict[str, Any]]]:
    """The per-prompt sections the page shows, and what is left out and why.

    A section missing for every prompt is listed with its reason; one missing
    for some prompts only, with those prompts. Optional sections (group
    view, counterfactual edits, short answers) show only with their tables;
    a section the audit was told to leave out (``meta["sections"]``) never.
    """
    by_prompt = {p: prompt_tables(frames, p) for p in prompts}
    chosen = meta.get("sections")
    shown, left_out = [], []
    for section in SECTIONS:
        if not section.per_prompt:
            continue
        if chosen is not None and section.id not in chosen:
            left_out += [
                {
                    "name": h.title,
                    "reason": "not selected (sections=..., --sections)",
                    "code": False,
                    "scope": None,
                }
                for h in section.headings
            ]
            continue
        has = {
            h.id: [p for p in prompts if any(_present(by_prompt[p], n) for n in h.tables)]
            for h in section.headings
        }
        visible = not section.optional or any(has.values())
        if visible:
            shown.append(section)
        for heading in section.headings:
            lacking = [p for p in prompts if p not in has[heading.id]]
            if not lacking or (
                not visible and section.applies is not None and not section.applies(meta)
            ):
                continue  # e.g. an essay audit: no short-answer section to explain
            reasons: dict[str, list[str]] = {}
            for p in lacking:
                reason = _absent_reason(meta, section.id, p) or (
                    (section.default_reason or _MISSING_TABLE)
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
                    {"name": heading.title, "reason": reason, "code": False, "scope": scope}
                )
    return shown, left_out


def render_html(
    tables: Mapping[str, pd.DataFrame | None],
    meta: Mapping[str, Any] | None,
    figures: Mapping[str, Figure | bytes] | None,
    *,
    dpi: int = 100,
) -> str:
    """Render an audit as one self-contained HTML page.

    Sections come in the order of ``analyses.SECTIONS`` (only those of
    ``meta["sections"]`` when the audit was told which to run), which
    follows the paper's methodology (Section 3) and results (Section 5):
    1 Overview, 2 Agreement with human raters, 3 Essay similarity:
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
        Usually ``make_figures`` (``sklearn_fairaes.report.analyses``) of the
        same tables; each is embedded once as a PNG data URI (a value that
        is bytes is taken as the PNG itself, drawn at ``dpi``). Figures with
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
    chosen = meta.get("sections")
    # the sections that open the report (overview, summary), numbered 1, 2, ...
    opening: list[dict[str, Any]] = []
    for section in SECTIONS:
        if section.per_prompt or section.view is None:
            continue
        if chosen is not None and section.id not in chosen:
            continue
        view = section.view(frames, meta, prompts, left_out)
        if view is None:  # nothing to show for this audit (one prompt: no summary)
            continue
        at = str(len(opening) + 1)
        opening.append(
            {
                "section": section,
                "view": view,
                "headings": [
                    {
                        "number": at,
                        "title": section.title,
                        "anchor": f"section-{at}",
                    }
                ],
            }
        )
    first = len(opening) + 1

    def numbered(prefix: str, start: int) -> list[dict[str, Any]]:
        """The sections of one part, their headings numbered from ``start``."""
        out, number = [], start
        for section in shown:
            heads = []
            for heading in section.headings:
                heads.append(
                    {
                        "number": f"{prefix}{number}",
                        "title": heading.title,
                        "anchor": f"{'p' + prefix.replace('.', '-') if multi else ''}"
                        f"section-{number}",
                    }
                )
                number += 1
            out.append({"section": section, "headings": heads})
        return out

    def references(analyses: list[dict[str, Any]]) -> _Refs:
        return _Refs(
            (heading.id, h["number"])
            for a in analyses
            for heading, h in zip(a["section"].headings, a["headings"])
        )

    toc: list[dict[str, str]] = [
        {"anchor": h["anchor"], "title": h["title"]} for o in opening for h in o["headings"]
    ]
    parts: list[dict[str, Any]] = []
    if not multi:
        analyses = numbered("", first)
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
            }
        )
    else:
        sizes = _prompt_sizes(frames, meta, prompts)
        for k, p in enumerate(prompts, start=1):
            number = k + first - 1
            analyses = numbered(f"{number}.", 1)
            anchor = f"part-{number}"
            toc.append({"anchor": anchor, "title": f"Prompt {p}"})
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
                }
            )
    for part in parts:
        ptables = prompt_tables(frames, part["prompt"])
        for a in part["analyses"]:
            section = a.pop("section")
            a["template"] = section.template
            a["view"] = section.view(ptables, meta, part["prompt"]) if section.view else {}
            a["reason"] = _absent_reason(meta, section.id, part["prompt"])
    for o in opening:
        o["template"] = o.pop("section").template

    versions = meta.get("versions") or {}
    title = str(meta.get("title") or "Individual-fairness audit")
    folders = tuple(dict.fromkeys(s.template_dir for s in SECTIONS if s.template_dir))
    page = _environment(folders).get_template("layout.html.j2")
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
        "opening": opening,
        # the overview points to the sections of an audit of one prompt
        "ref": parts[0]["ref"] if not multi else _Refs(),
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
