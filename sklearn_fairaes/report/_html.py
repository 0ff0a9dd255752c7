"""The audit report as one self-contained HTML file, and as JSON-able data.

:func:`render_html` lays out the audit's tables and figures in the order of
the paper's methodology (Section 3) and results (Section 5): agreement with
human raters, the essay-similarity checks (extreme pairs, aggregate feature
differences, paraphrases), then individual fairness (the Lipschitz condition
and score difference vs. distance). Each section opens with a short reading
guide for assessment researchers.

The file has no external assets and no scripts: CSS is inline and figures
are PNG data URIs, so it can be mailed, archived or opened offline. Essays
are untrusted input, so every piece of text that comes from the data (essay
texts, ids, group names, table values, metadata) is HTML-escaped, and a
Content-Security-Policy forbids scripts as a second line of defence.

Nothing is computed here: the renderer only formats and arranges numbers.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import math
import numbers
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, SupportsInt, cast

import numpy as np

from ..metrics._agreement import WILLIAMSON_THRESHOLDS
from ..metrics._group import GROUP_THRESHOLDS
from ._plots import (
    _check_table,
    _short,
    feature_label,
    feature_number,
    model_label,
    representation_label,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["SECTION_TITLES", "render_html", "to_json_dict"]

#: Section headings of the report, in order (the group view only with groups).
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
)

_QWK_MIN = WILLIAMSON_THRESHOLDS["qwk"]
_DEGRADATION_MAX = WILLIAMSON_THRESHOLDS["degradation"]
_SMD_MAX = WILLIAMSON_THRESHOLDS["abs_smd"]
_DSM_MAX = GROUP_THRESHOLDS["abs_dsm"]

_GUIDES = {
    "Overview": (
        "This report asks whether automated scoring models treat similar essays alike "
        "(individual fairness), following the methodology of Doewes, Saxena, Pei and "
        "Pechenizkiy (EDM 2022). It first checks that the models agree with the human "
        "raters (section 2), then whether each text representation's idea of "
        "“similar essays” makes sense to a human reader (sections 3–5), and only then "
        "whether the models give similar essays similar scores (sections 6–7). Start here: "
        "check that the number of essays and the score range are what you expect, and read "
        "what was left out — an omitted feature or a skipped analysis limits what the later "
        "sections can tell you."
    ),
    "Agreement with human raters": (
        "Each row is one scoring model trained on one text representation; every essay was "
        "scored by a model that did not see it in training (cross-validation). Good looks "
        f"like the acceptance criteria of Williamson, Xi and Breyer (2012): a quadratic "
        f"weighted kappa (QWK) with the human score of at least {_QWK_MIN:.2f}, a QWK no more "
        f"than {_DEGRADATION_MAX:.2f} below the agreement of two human raters "
        f"(degradation), and a standardized mean difference (SMD) between machine and human "
        f"scores within ±{_SMD_MAX:.2f}. Agreement is a precondition, not evidence of "
        "fairness: a model can agree well with humans on average and still score two "
        "nearly identical essays very differently."
    ),
    "Essay similarity: extreme pairs": (
        "Every fairness number below rests on a distance between essays (the cosine "
        "distance between their vector representations). This section shows, for each "
        "representation, the two essays it finds most alike (nearest pair) and the two it "
        "finds most different (farthest pair), described by interpretable features scaled to "
        "0–1 over all essays (0 = the smallest value in the data, 1 = the largest). Good "
        "looks like: nearly equal bars for the nearest pair and clearly different bars for "
        "the farthest pair — and, reading the texts, a nearest pair that you too would call "
        "similar. If it is not, the representation's notion of similarity is not yours, and "
        "its fairness results answer a different question. One pair per end is a quick "
        "sanity check, not proof."
    ),
    "Aggregate feature differences": (
        "The extreme pairs are two pairs among many; here the pairs are grouped by distance "
        "into the nearest, a middle band around the median, and the farthest, and each bar is "
        "the mean absolute difference of one interpretable feature between the two essays of "
        "a pair (features scaled to 0–1). Features are numbered as in the paper's Table 1. "
        "Good looks like: for every feature, nearest < medium < farthest — essays the "
        "representation calls close also differ less in length, vocabulary, errors and "
        "relevance to the prompt. A feature where the order is reversed is an aspect of "
        "writing that this representation ignores."
    ),
    "Paraphrase robustness": (
        "An essay and a paraphrase of it (the same content in other words) should be treated "
        "alike. For a sample of essays, all other essays are ranked by similarity to the "
        "original and, separately, to its paraphrase; the two rankings are compared. Good "
        "looks like: NDCG@10 and Spearman's rank correlation close to 1 — the paraphrase "
        "keeps the same nearest neighbours and the same overall order. A random ranking "
        "scores about 0.5 on NDCG@10 and 0 on Spearman's rho. Automatic paraphrases are "
        "imperfect, so a low value can also mean a poor paraphrase."
    ),
    "Individual fairness: Lipschitz fraction": (
        "Individual fairness in the sense of Dwork et al. (2012): the difference between two "
        "essays' scores should be no larger than the distance between the essays. Distances "
        "and score differences are rescaled to 0–1 over all pairs (min–max; the “max” "
        "variant divides by the largest value only), and the table gives the percentage of "
        "all essay pairs that meet the condition. The human scores go through the same test "
        "as a reference point. Good looks like: a high percentage, at least that of the "
        "human scores. Compare models within a representation (read the table row by row): "
        "each representation has its own spread of distances, shown in the last figure of "
        "this section, so percentages of different representations are not comparable."
    ),
    "Score difference vs. distance": (
        "All essay pairs are sorted by distance and cut into 5 (then 100) groups of equal "
        "size; each point is the mean absolute score difference within a group. Good looks "
        "like: a line that rises steadily from the most similar pairs (left) to the most "
        "different (right) — similar essays get similar scores, while different essays may "
        "get different ones. A flat line means the scores ignore how alike the essays are; "
        "a drop at the right end means very different essays receive similar scores. Error "
        "bars are ±1 standard error. The trend table gives Spearman's rank correlation "
        "between bin and mean score difference: close to +1 is the expected rise."
    ),
    "Group view": (
        "The sections above ask whether similar essays get similar scores (individual "
        "fairness); this one asks whether groups of writers (the group column) are scored "
        "alike (group fairness), and repeats the Lipschitz test split by group. The two "
        "views can disagree. Group statistics can look fine while similar essays from "
        "different groups get different scores: errors for and against a group cancel in "
        "its mean. And every pair of similar essays can be scored alike while one group is "
        "scored too high on average, when its essays differ from the others in a way the "
        "representation sees but the human raters do not reward. Good looks like: every "
        "flag met in every group, the fairness analyses' R² near 0, and as many pairs "
        "meeting the Lipschitz condition across groups as within them. Small groups give "
        "noisy values (check n); a group of one essay has no SD, QWK or pairs."
    ),
}

_GUIDES["Counterfactual edits"] = (
    "Each essay of a held-out sample is edited in a controlled way and scored again by "
    "every model (refitted without the sample). Edits of the first kind keep the meaning "
    "(synonyms, typos, case and spacing, contractions, renamed placeholders): a fair "
    "score stays within half a score point. Moving more is oversensitivity: two essays "
    "that say the same thing get different scores. Edits of the second kind damage the "
    "essay (shuffled, deleted or repeated sentences, an off-topic paragraph, stuffed "
    "prompt words, word salad, scrambled words) or change what it says (negation): a "
    "score that stays is overstability: the model rewards surface features it can "
    "count (length, vocabulary) rather than what the essay says. Good looks like: a high "
    "share moving the expected way in every row. The distance column says whether the "
    "representation that defines 'similar essays' sees the edit at all: an edit at "
    "distance 0 is invisible to the Lipschitz test of section 6, so only this section "
    "can catch it (a bag-of-words model cannot see a sentence shuffle by construction)."
)

_NDCG_WARNING = (
    "Full-list NDCG is close to 1 even for a random ranking (around 0.9 for typical "
    "data), because every essay contributes and far-down ranks are heavily discounted; "
    "a value such as 0.97 is therefore not evidence of a kept ranking. Read NDCG@10 and "
    "Spearman's rho instead. (The paper's NDCG of 1.0 for every representation came from "
    "its code ranking index arrays rather than similarities.)"
)

_CSS = """
:root { --ink: #1f2328; --muted: #57606a; --line: #d0d7de; --soft: #f6f8fa;
        --ok: #1a7f37; --bad: #cf222e; --warn-bg: #fff8c5; --warn-line: #d4a72c; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.5;
       font: 15px/1.5 -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans", Arial, sans-serif; }
header, main, footer { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 24px; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.7em; margin: 0 0 4px; }
h2 { font-size: 1.35em; margin: 40px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.1em; margin: 24px 0 8px; }
h4 { font-size: 1em; margin: 16px 0 6px; }
.subtitle { color: var(--muted); margin: 0 0 12px; }
nav ol { columns: 2; margin: 8px 0 16px; padding-left: 20px; }
nav a { color: #0969da; text-decoration: none; }
.guide { background: var(--soft); border-left: 4px solid #0969da; padding: 10px 14px; margin: 8px 0 16px; }
.guide b { display: block; margin-bottom: 2px; }
.warning { background: var(--warn-bg); border-left: 4px solid var(--warn-line); padding: 10px 14px; margin: 12px 0; }
.note { color: var(--muted); font-size: 0.93em; }
.scroll { overflow-x: auto; margin: 8px 0 16px; }
table { border-collapse: collapse; font-size: 0.9em; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; vertical-align: top; }
th { background: var(--soft); text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th.num { text-align: right; }
th[colspan] { text-align: center; }
td.flag, th.flag { text-align: center; }
.ok { color: var(--ok); font-weight: 700; }
.bad { color: var(--bad); font-weight: 700; }
.na { color: var(--muted); }
figure { margin: 16px 0 24px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 0.92em; margin-top: 4px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0 16px; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; margin-bottom: 12px; }
.essay { border: 1px solid var(--line); border-radius: 6px; overflow: hidden; }
.essay .head { background: var(--soft); padding: 4px 10px; font-size: 0.9em; border-bottom: 1px solid var(--line); }
.essay .text { padding: 8px 10px; white-space: pre-wrap; overflow-wrap: anywhere;
               max-height: 22em; overflow-y: auto; font-size: 0.92em; }
footer { margin-top: 48px; padding: 16px 24px 32px; border-top: 1px solid var(--line);
         color: var(--muted); font-size: 0.88em; }
@media (max-width: 800px) { .pair { grid-template-columns: 1fr; } nav ol { columns: 1; } }
@media print { .essay .text { max-height: none; } h2 { break-after: avoid; } figure { break-inside: avoid; } }
"""

# Scripts, frames, fonts and remote images are all refused: the report needs none.
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


# --------------------------------------------------------------------------- escaping


class _Markup(str):
    """Text that is already HTML (built here from escaped pieces).

    Adding plain text to it escapes that text, so markup can be concatenated
    without letting data through unescaped.
    """

    def __add__(self, other: object) -> _Markup:
        return _Markup(str.__add__(self, _esc(other)))

    def __radd__(self, other: object) -> _Markup:
        return _Markup(str.__add__(_esc(other), self))


def _esc(value: object) -> _Markup:
    """HTML-escape data; markup built by this module passes through unchanged."""
    if isinstance(value, _Markup):
        return value
    return _Markup(html.escape(str(value), quote=True))


def _join(parts: Iterable[object], sep: str = "") -> _Markup:
    return _Markup(sep.join(_esc(p) for p in parts))


def _tag(name: str, content: object = "", **attrs: object) -> _Markup:
    """``<name attr="...">content</name>`` with escaped attribute values and content."""
    rendered = "".join(
        f' {k.rstrip("_").replace("_", "-")}="{_esc(v)}"'
        for k, v in attrs.items()
        if v is not None
    )
    return _Markup(f"<{name}{rendered}>{_esc(content)}</{name}>")


# --------------------------------------------------------------------------- formatting

_MISSING = _Markup('<span class="na" title="not available">—</span>')


def _missing(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return False
    try:
        return bool(value != value)  # NaN and NaT are unequal to themselves
    except (TypeError, ValueError):
        return True  # pandas.NA refuses to be a bool


def _num(value: object, digits: int = 3) -> str:
    """A number for a table cell: 3 decimals, integers with thousands separators."""
    if _missing(value):
        return _MISSING
    if isinstance(value, (bool, np.bool_)):
        return _flag(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        if value.is_integer() and abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return str(value)


def _score(value: object) -> str:
    """A score: whole numbers without decimals (scores are often stored as floats)."""
    if _missing(value) or isinstance(value, (bool, np.bool_)):
        return _num(value)
    if isinstance(value, numbers.Real) and float(value).is_integer():
        # every concrete real type has __int__; the numbers.Real ABC omits it
        return f"{int(cast(SupportsInt, value)):,}"
    return _num(value)


def _pct(value: Any) -> str:
    """A fraction as a percentage with 3 decimals (``0.99994`` -> ``99.994``)."""
    if _missing(value):
        return _MISSING
    return f"{100.0 * float(value):.3f}"


def _pvalue(value: Any) -> str:
    if _missing(value):
        return _MISSING
    return "< 0.001" if float(value) < 0.001 else f"{float(value):.3f}"


def _mean_sd(mean: Any, sd: Any) -> str:
    if _missing(mean):
        return _MISSING
    if _missing(sd):
        return _num(mean)
    return f"{float(mean):.3f} ± {float(sd):.3f}"


def _flag(value: object) -> str:
    if _missing(value):
        return _MISSING
    if bool(value):
        return _Markup('<span class="ok" title="meets the threshold">✓</span>')
    return _Markup('<span class="bad" title="fails the threshold">✗</span>')


def _is_numeric_cell(value: object) -> bool:
    return isinstance(value, numbers.Number) or (
        isinstance(value, str)
        and not isinstance(value, _Markup)
        and value[:1] in "0123456789-−<∞"
        and any(ch.isdigit() for ch in value)
    )


def _table(
    headers: Sequence[object] | None,
    rows: Sequence[Sequence[object]],
    *,
    caption: str | None = None,
    header_rows: Sequence[str] | None = None,
    flags: Collection[int] = (),
) -> _Markup:
    """An HTML table; every cell escaped unless it is markup built here.

    ``headers`` is one header row (text); ``header_rows`` replaces it with
    pre-built ``<tr>`` markup (for grouped headers). ``flags`` are the indices
    of centred ✓/✗ columns.
    """
    width = max([len(headers or ())] + [len(row) for row in rows])
    classes: list[str | None] = []
    for i in range(width):
        column = [row[i] for row in rows if i < len(row) and row[i] is not _MISSING]
        if i in flags:
            classes.append("flag")
        elif column and all(_is_numeric_cell(v) for v in column):
            classes.append("num")
        else:
            classes.append(None)
    head = header_rows or [
        _tag(
            "tr",
            _join(
                _tag("th", h, scope="col", class_=classes[i])
                for i, h in enumerate(headers or ())
            ),
        )
    ]
    body = [
        _tag("tr", _join(_tag("td", v, class_=classes[i]) for i, v in enumerate(row)))
        for row in rows
    ]
    parts = [_tag("caption", caption)] if caption else []
    parts += [_tag("thead", _join(head)), _tag("tbody", _join(body))]
    return _tag("div", _tag("table", _join(parts)), class_="scroll")


def _rep(name: object) -> str:
    return representation_label(name)


def _mod(name: object) -> str:
    return model_label(name)


def _present(tables: Mapping[str, pd.DataFrame | None], name: str) -> bool:
    table = tables.get(name)
    return table is not None and len(table) > 0


def _ordered(
    values: Iterable[object], preferred: Iterable[str] = (), last: Sequence[str] = ()
) -> list[str]:
    seen = list(dict.fromkeys(str(v) for v in values))
    head = [p for p in preferred if p in seen and p not in last]
    return (
        head
        + [v for v in seen if v not in head and v not in last]
        + [v for v in last if v in seen]
    )


# --------------------------------------------------------------------------- figures


class _FigureCounter:
    """Embeds figures as PNG data URIs and numbers them in document order."""

    def __init__(self, figures: Mapping[str, Figure] | None, dpi: int) -> None:
        self.figures = dict(figures or {})
        self.dpi = dpi
        self.used: list[str] = []
        self.number = 0

    def __call__(self, name: str, caption: str, alt: str) -> _Markup:
        fig = self.figures.get(name)
        if fig is None:
            return _Markup("")
        self.used.append(name)
        self.number += 1
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=self.dpi)
        png = buffer.getvalue()
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        img = _Markup(
            f'<img src="{src}" alt="{_esc(alt)}" width="{width}" height="{height}" '
            f'id="figure-{_esc(name)}">'
        )
        return _tag(
            "figure", _join([img, _tag("figcaption", f"Figure {self.number}. {caption}")])
        )

    def leftovers(self) -> list[str]:
        return [name for name in self.figures if name not in self.used]


# --------------------------------------------------------------------------- sections


def _settings(settings: Mapping[str, Any] | None) -> str:
    if not settings:
        return _MISSING
    rows = []
    for model, value in settings.items():
        if isinstance(value, dict):
            rows += [f"{_mod(model)} on {_rep(r)}: {v}" for r, v in value.items()]
        else:
            rows.append(f"{_mod(model)}: {value}")
    return _join(_tag("div", _tag("code", row)) for row in rows)


def _scale(meta: Mapping[str, Any]) -> str:
    scale = meta.get("score_range")
    if not isinstance(scale, Sequence) or len(scale) != 2:
        return _MISSING
    how = {
        "declared": "declared",
        "inferred": "inferred from the human scores (none was declared)",
    }.get(str(meta.get("score_range_source")), "")
    return f"{_score(scale[0])} to {_score(scale[1])}" + (f", {how}" if how else "")


def _section_overview(
    tables: Mapping[str, pd.DataFrame],
    meta: Mapping[str, Any],
    unavailable: Sequence[tuple[str, str]],
) -> _Markup:
    reps = meta.get("representations") or []
    mods = meta.get("models") or []
    n = meta.get("n_essays")
    lo, hi = meta.get("score_min"), meta.get("score_max")

    def listing(values: Iterable[object] | None) -> str:
        if not values:
            return _MISSING
        return ", ".join(str(v) for v in values)

    items = [
        ("Essays", _num(n) if n is not None else _MISSING),
        (
            "Score range",
            f"{_score(lo)} to {_score(hi)}"
            if not (_missing(lo) or _missing(hi))
            else _MISSING,
        ),
        ("Score scale", _scale(meta)),
        ("Essay text column", meta.get("text_col") or _MISSING),
        ("Human score column", meta.get("score_col") or _MISSING),
        (
            "Rater columns",
            listing(meta.get("rater_cols")) if meta.get("rater_cols") else "none given",
        ),
        ("Group column", meta.get("group_col") or "none given"),
        ("Prompt given", "yes" if meta.get("prompt_given") else "no"),
        ("Text representations", listing([_rep(r) for r in reps])),
        ("Scoring models", listing([_mod(m) for m in mods])),
        ("Model settings", _settings(meta.get("model_settings"))),
        (
            "Cross-validation folds",
            _num(meta.get("cv")) if meta.get("cv") is not None else _MISSING,
        ),
        ("Random state", str(meta.get("random_state"))),
        ("Paraphrases", meta.get("paraphrase_source") or "none"),
        ("Sentence-BERT model", meta.get("sbert_model") or "not used"),
    ]
    dl = _tag(
        "dl", _join(_join([_tag("dt", k), _tag("dd", v)]) for k, v in items), class_="meta"
    )

    out = [_tag("h3", "Data and what was run"), dl]
    if reps and mods:
        out.append(
            _tag(
                "p",
                f"{len(reps) * len(mods)} combinations of representation and model were "
                f"evaluated ({len(reps)} × {len(mods)}); predictions are out-of-fold.",
            )
        )

    features = list(meta.get("features") or [])
    if features:
        ordered = sorted(features, key=lambda f: feature_number(f, features))
        out.append(_tag("h3", "Interpretable features used"))
        out.append(
            _tag(
                "p",
                _join(
                    [
                        "Numbered as in the paper's Table 1: ",
                        "; ".join(
                            f"{feature_number(f, features)}. {feature_label(f)} ({f})"
                            for f in ordered
                        ),
                        ".",
                    ]
                ),
            )
        )

    left_out = []
    for item in meta.get("omitted_features") or []:
        if isinstance(item, Mapping):
            feature, reason = (
                item.get("feature", "?"),
                item.get("reason", "no reason recorded"),
            )
        else:
            feature, reason = item, "no reason recorded"
        left_out.append(_tag("li", _join([_tag("code", feature), " — ", str(reason)])))
    for title, why in unavailable:
        left_out.append(_tag("li", _join([_tag("b", title), " — ", why])))
    out.append(_tag("h3", "What was left out, and why"))
    if left_out:
        out.append(_tag("ul", _join(left_out), class_="omitted"))
    else:
        out.append(_tag("p", "Nothing: every feature and every analysis was run."))

    out += _representation_warnings(meta)
    notes = [str(n) for n in meta.get("notes") or []]
    if notes:
        out.append(_tag("h3", "Notes"))
        out.append(_tag("ul", _join(_tag("li", n) for n in notes), class_="notes"))
    out.append(
        _tag(
            "p",
            "Per-essay features and out-of-fold predictions are not shown here; they are in "
            "the results' JSON and CSV tables.",
            class_="note",
        )
    )
    return _join(out)


def _section_agreement(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], figure: _FigureCounter
) -> _Markup:
    out = [
        _tag(
            "p",
            f"Acceptance thresholds (Williamson, Xi and Breyer, 2012): QWK ≥ {_QWK_MIN:.2f}; "
            f"degradation from human–human QWK ≤ {_DEGRADATION_MAX:.2f}; |SMD| ≤ {_SMD_MAX:.2f}. "
            "✓ meets, ✗ fails.",
        )
    ]
    if not _present(tables, "agreement"):
        return _join([*out, _tag("p", "Not available in this run (see the overview).")])
    table = tables["agreement"]
    _check_table(
        table,
        "agreement",
        [
            "representation", "model", "n", "qwk", "qwk_truncated", "human_human_qwk",
            "degradation", "smd", "abs_smd_paper", "exact_agreement", "adjacent_agreement",
            "pearson_r", "qwk_ok", "degradation_ok", "smd_ok", "acceptable",
        ],
    )  # fmt: skip
    with_raters = not all(_missing(v) for v in table["human_human_qwk"])
    headers = ["Representation", "Model", "n", "QWK", f"QWK ≥ {_QWK_MIN:.2f}"]
    if with_raters:
        headers += [
            "Human–human QWK",
            "Degradation",
            f"Degradation ≤ {_DEGRADATION_MAX:.2f}",
        ]
    headers += ["SMD (machine − human)", f"|SMD| ≤ {_SMD_MAX:.2f}", "Acceptable"]
    rows, flags = [], {4}
    for r in table.itertuples(index=False):
        row = [
            _rep(r.representation),
            _mod(r.model),
            _num(r.n),
            _num(r.qwk),
            _flag(r.qwk_ok),
        ]
        if with_raters:
            row += [_num(r.human_human_qwk), _num(r.degradation), _flag(r.degradation_ok)]
        row += [_num(r.smd), _flag(r.smd_ok), _flag(r.acceptable)]
        rows.append(row)
    flags = {4, len(headers) - 2, len(headers) - 1} | ({7} if with_raters else set())
    out.append(
        _table(
            headers,
            rows,
            caption="Agreement with the human score (cf. the paper's Table 2)",
            flags=flags,
        )
    )
    if not with_raters:
        out.append(
            _tag(
                "p",
                "No rater columns were given, so the agreement of two human raters and the "
                "degradation from it could not be computed.",
                class_="note",
            )
        )
    further = [
        [
            _rep(r.representation),
            _mod(r.model),
            _num(r.qwk_truncated),
            _num(r.abs_smd_paper),
            _num(r.exact_agreement),
            _num(r.adjacent_agreement),
            _num(r.pearson_r),
        ]
        for r in table.itertuples(index=False)
    ]
    out.append(
        _table(
            [
                "Representation",
                "Model",
                "QWK, truncated predictions (paper's code)",
                "|SMD|, paper's formula",
                "Exact agreement",
                "Adjacent agreement (±1)",
                "Pearson r",
            ],
            further,
            caption="Further agreement statistics",
        )
    )
    if _present(tables, "human_agreement"):
        human = tables["human_agreement"]
        _check_table(
            human,
            "human_agreement",
            ["rater1", "rater2", "qwk", "exact_agreement", "adjacent_agreement", "n"],
        )
        out.append(
            _table(
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
                        h.rater1,
                        h.rater2,
                        _num(h.n),
                        _num(h.qwk),
                        _num(h.exact_agreement),
                        _num(h.adjacent_agreement),
                    ]
                    for h in human.itertuples(index=False)
                ],
                caption="Agreement between the two human raters",
            )
        )
    return _join(out)


def _essay_box(
    label: str, essay_id: object, row: object, score: object, text: object
) -> _Markup:
    head = _join(
        [
            _tag("b", label),
            f" · id {essay_id}",
            f" · row {_num(row)}" if not _missing(row) else "",
            f" · human score {_score(score)}" if not _missing(score) else "",
        ]
    )
    return _tag(
        "div",
        _join([_tag("div", head, class_="head"), _tag("div", str(text), class_="text")]),
        class_="essay",
    )


def _section_extreme(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], figure: _FigureCounter
) -> _Markup:
    out = [
        figure(
            "extreme_pairs",
            "Nearest and farthest essay pair per representation: normalised interpretable "
            "features of essay A and essay B (cf. the paper's Figure 1).",
            "Bar charts, one row per text representation: for the nearest and the farthest "
            "essay pair, each interpretable feature of essay A beside essay B.",
        )
    ]
    if not _present(tables, "extreme_pairs"):
        out.append(_tag("p", "No extreme pairs are available in this run."))
        return _join(out)
    pairs = tables["extreme_pairs"]
    _check_table(
        pairs,
        "extreme_pairs",
        [
            "representation", "which", "rank", "row_a", "row_b", "id_a", "id_b", "distance",
            "text_a", "text_b", "score_a", "score_b",
        ],
    )  # fmt: skip
    reps = _ordered(pairs["representation"], meta.get("representations") or ())
    for rep in reps:
        sub = pairs[pairs["representation"].astype(str) == rep]
        out.append(_tag("h3", _rep(rep)))
        for which in ("nearest", "farthest"):
            part = sub[sub["which"].astype(str) == which].sort_values("rank")
            if part.empty:
                continue
            top = next(part.itertuples(index=False))
            out.append(
                _tag(
                    "h4",
                    f"{which.capitalize()} pair: essays {top.id_a} and {top.id_b} "
                    f"(cosine distance {_num(top.distance)})",
                )
            )
            out.append(
                _tag(
                    "div",
                    _join(
                        [
                            _essay_box(
                                "Essay A", top.id_a, top.row_a, top.score_a, top.text_a
                            ),
                            _essay_box(
                                "Essay B", top.id_b, top.row_b, top.score_b, top.text_b
                            ),
                        ]
                    ),
                    class_="pair",
                )
            )
        if len(sub) > 2:
            out.append(
                _table(
                    ["End", "Rank", "Essay A", "Essay B", "Distance", "Score A", "Score B"],
                    [
                        [
                            p.which,
                            _num(p.rank),
                            p.id_a,
                            p.id_b,
                            _num(p.distance),
                            _score(p.score_a),
                            _score(p.score_b),
                        ]
                        for p in sub.sort_values(
                            ["which", "rank"], ascending=[False, True]
                        ).itertuples(index=False)
                    ],
                    caption=f"All extreme pairs found for {_rep(rep)}",
                )
            )
    return _join(out)


def _section_profile(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], figure: _FigureCounter
) -> _Markup:
    out = [
        figure(
            "feature_profile",
            "Mean absolute difference of each normalised interpretable feature within "
            "the nearest, medium and farthest pairs, per representation (cf. the paper's "
            "Figure 2).",
            "Grouped bar charts, one per text representation: for each interpretable "
            "feature, the mean feature difference of nearest, medium and farthest pairs.",
        )
    ]
    if not _present(tables, "feature_profile"):
        out.append(_tag("p", "Not available in this run (see the overview)."))
    return _join(out)


def _section_paraphrase(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], figure: _FigureCounter
) -> _Markup:
    if not _present(tables, "paraphrase"):
        source = meta.get("paraphrase_source")
        why = (
            "no paraphrases were given or generated"
            if not source
            else "the paraphrase check did not produce results"
        )
        return _tag("p", f"Not run: {why}.")
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
            _rep(p.representation),
            _mean_sd(p.ndcg_at_10, p.ndcg_at_10_std),
            _mean_sd(p.spearman, p.spearman_std),
            _mean_sd(p.ndcg, p.ndcg_std),
            _num(p.n_samples),
            p.source,
        ]
        for p in table.itertuples(index=False)
    ]
    return _join(
        [
            _table(
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
            _tag("div", _join([_tag("b", "Caution. "), _NDCG_WARNING]), class_="warning"),
        ]
    )


def _representation_warnings(meta: Mapping[str, Any]) -> list[_Markup]:
    """One visible warning per representation whose distances are mostly one value."""
    return [
        _tag(
            "div",
            _join([_tag("b", "Warning. "), str(w.get("message", ""))]),
            class_="warning",
        )
        for w in meta.get("warnings") or []
        if isinstance(w, Mapping)
    ]


def _section_lipschitz(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], figure: _FigureCounter
) -> _Markup:
    # the numbers below are only as meaningful as the distances they rest on
    out = _representation_warnings(meta)
    if _present(tables, "lipschitz"):
        table = tables["lipschitz"]
        _check_table(
            table,
            "lipschitz",
            ["representation", "model", "lipschitz_minmax", "lipschitz_max", "n_pairs"],
        )
        reps = _ordered(table["representation"], meta.get("representations") or ())
        mods = _ordered(table["model"], meta.get("models") or (), last=("human",))
        cells = {
            (str(t.representation), str(t.model)): t for t in table.itertuples(index=False)
        }
        top = _join(
            [
                _tag("th", "Representation", rowspan=2, scope="col"),
                _tag("th", "Pairs", rowspan=2, scope="col", class_="num"),
            ]
            + [_tag("th", _mod(m), colspan=2, scope="colgroup") for m in mods]
        )
        second = _join(
            _join([_tag("th", "min–max", class_="num"), _tag("th", "max", class_="num")])
            for _ in mods
        )
        rows = []
        for r in reps:
            pairs = next(
                (cells[(r, m)].n_pairs for m in mods if (r, m) in cells), float("nan")
            )
            row = [_rep(r), _num(pairs)]
            for m in mods:
                t = cells.get((r, m))
                row += (
                    [_pct(t.lipschitz_minmax), _pct(t.lipschitz_max)]
                    if t
                    else [_MISSING] * 2
                )
            rows.append(row)
        out.append(
            _table(
                None,
                rows,
                header_rows=[_tag("tr", top), _tag("tr", second)],
                caption="Essay pairs satisfying the Lipschitz condition, % of all pairs "
                "(min–max / max normalisation; cf. the paper's Table 3)",
            )
        )
    else:
        out.append(_tag("p", "Not available in this run (see the overview)."))
    out.append(
        figure(
            "lipschitz",
            "Share of essay pairs whose score difference is at most their distance, per "
            "representation and model, human scores included.",
            "Grouped bar charts of the percentage of essay pairs meeting the Lipschitz "
            "condition, one bar per model, for min-max and for max normalisation.",
        )
    )
    out.append(
        figure(
            "distance_distribution",
            "Distribution of normalised essay distances (grey) and of normalised score "
            "differences per model (lines), per representation (cf. the paper's Figure 4). "
            "The more a model's curve lies to the left of the grey area, the more pairs meet "
            "the condition.",
            "Density plots per text representation: essay distances as a grey area and "
            "each model's score differences as a line.",
        )
    )
    return _join(out)


def _section_score_distance(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], figure: _FigureCounter
) -> _Markup:
    out = [
        figure(
            "score_distance_5",
            "Mean absolute score difference of essay pairs in 5 equal-size distance bins, "
            "±1 standard error (cf. the paper's Figure 5).",
            "Line charts per text representation: mean score difference for 5 distance "
            "bins from nearest to farthest pairs, one line per model and for human scores.",
        ),
        figure(
            "score_distance_100",
            "The same with 100 distance bins (cf. the paper's Figure 6).",
            "Line charts per text representation: mean score difference for 100 distance "
            "bins, one line per model and for human scores.",
        ),
    ]
    reps_pref = meta.get("representations") or ()
    mods_pref = meta.get("models") or ()
    if _present(tables, "score_distance"):
        table = tables["score_distance"]
        _check_table(
            table,
            "score_distance",
            ["representation", "model", "n_bins", "bin", "n_pairs", "mean_abs_diff", "se"],
        )
        five = table[table["n_bins"].astype(int) == 5]
        if len(five):
            rows = []
            for r in _ordered(five["representation"], reps_pref):
                sub = five[five["representation"].astype(str) == r]
                for m in _ordered(sub["model"], mods_pref, last=("human",)):
                    part = sub[sub["model"].astype(str) == m].sort_values("bin")
                    rows.append(
                        [_rep(r), _mod(m)]
                        + [
                            _mean_sd(v, s)
                            for v, s in zip(part["mean_abs_diff"], part["se"])
                        ]
                    )
            width = max(len(row) for row in rows) - 2
            headers = ["Representation", "Model"] + [
                f"Bin {b}"
                + (" (nearest)" if b == 1 else " (farthest)" if b == width else "")
                for b in range(1, width + 1)
            ]
            out.append(
                _table(
                    headers,
                    rows,
                    caption="Mean |Δscore| per distance bin (± standard error), 5 bins",
                )
            )
    if _present(tables, "trend"):
        trend = tables["trend"]
        _check_table(
            trend,
            "trend",
            ["representation", "model", "n_bins", "spearman_rho", "spearman_pvalue"],
        )
        bins = sorted(set(int(b) for b in trend["n_bins"]))
        cells = {
            # pandas-stubs types a row's fields as any scalar; n_bins holds ints
            (str(t.representation), str(t.model), int(cast(SupportsInt, t.n_bins))): t
            for t in trend.itertuples(index=False)
        }
        headers = ["Representation", "Model"]
        for b in bins:
            headers += [f"Spearman's rho, {b} bins", f"p-value, {b} bins"]
        rows = []
        for r in _ordered(trend["representation"], reps_pref):
            sub = trend[trend["representation"].astype(str) == r]
            for m in _ordered(sub["model"], mods_pref, last=("human",)):
                row = [_rep(r), _mod(m)]
                for b in bins:
                    t = cells.get((r, m, b))
                    row += (
                        [_num(t.spearman_rho), _pvalue(t.spearman_pvalue)]
                        if t
                        else [_MISSING, _MISSING]
                    )
                rows.append(row)
        out.append(
            _table(
                headers,
                rows,
                caption="Trend: rank correlation between distance bin and mean |Δscore|",
            )
        )
    if not (_present(tables, "score_distance") or _present(tables, "trend")):
        out.append(_tag("p", "Not available in this run (see the overview)."))
    return _join(out)


#: The group view's tables; the section appears when any of them is present.
_GROUP_TABLES = (
    "group_agreement",
    "group_fairness",
    "group_fairness_coefficients",
    "group_lipschitz",
)
_ANALYSES = (("osa", "OSA"), ("osd", "OSD"), ("csd", "CSD"))


def _group(label: object) -> str:
    return _tag("i", "All essays") if str(label) == "all" else str(label)


def _by_model(
    table: pd.DataFrame, meta: Mapping[str, Any], *, human: bool = False
) -> list[tuple[str, str, pd.DataFrame]]:
    """(representation, model, rows) in the report's order."""
    reps = _ordered(table["representation"], meta.get("representations") or ())
    out = []
    for r in reps:
        sub = table[table["representation"].astype(str) == r]
        last = ("human",) if human else ()
        for m in _ordered(sub["model"], meta.get("models") or (), last=last):
            out.append((r, m, sub[sub["model"].astype(str) == m]))
    return out


def _group_agreement_table(
    table: pd.DataFrame, meta: Mapping[str, Any], caption: str
) -> _Markup:
    _check_table(
        table,
        "group_agreement",
        [
            "representation", "model", "group", "n", "human_mean", "human_sd",
            "machine_mean", "machine_sd", "qwk", "smd", "dsm", "qwk_ok", "smd_ok",
            "dsm_ok",
        ],
    )  # fmt: skip
    headers = [
        "Representation", "Model", "Group", "n", "Human score (mean ± SD)",
        "Machine score (mean ± SD)", "QWK", f"QWK ≥ {_QWK_MIN:.2f}",
        "SMD (machine − human)", f"|SMD| ≤ {_SMD_MAX:.2f}", "DSM",
        f"|DSM| ≤ {_DSM_MAX:.2f}",
    ]  # fmt: skip
    rows = []
    for r, m, part in _by_model(table, meta):
        part = part.assign(_all=part["group"].astype(str) == "all").sort_values(
            "_all", kind="stable"
        )
        for g in part.itertuples(index=False):
            rows.append(
                [
                    _rep(r),
                    _mod(m),
                    _group(g.group),
                    _num(g.n),
                    _mean_sd(g.human_mean, g.human_sd),
                    _mean_sd(g.machine_mean, g.machine_sd),
                    _num(g.qwk),
                    _flag(g.qwk_ok),
                    _num(g.smd),
                    _flag(g.smd_ok),
                    _num(g.dsm),
                    _flag(g.dsm_ok),
                ]
            )
    return _table(headers, rows, caption=caption, flags={7, 9, 11})


def _group_fairness_table(table: pd.DataFrame, meta: Mapping[str, Any]) -> _Markup:
    _check_table(
        table,
        "group_fairness",
        ["representation", "model", "metric", "r2_adjusted", "p_value", "base_group"],
    )
    top = _join(
        [
            _tag("th", "Representation", rowspan=2, scope="col"),
            _tag("th", "Model", rowspan=2, scope="col"),
            _tag("th", "Reference group", rowspan=2, scope="col"),
        ]
        + [_tag("th", label, colspan=2, scope="colgroup") for _, label in _ANALYSES]
    )
    second = _join(
        _join([_tag("th", "adj. R²", class_="num"), _tag("th", "p", class_="num")])
        for _ in _ANALYSES
    )
    rows = []
    for r, m, part in _by_model(table, meta):
        cells = {str(t.metric): t for t in part.itertuples(index=False)}
        base = next(iter(cells.values())).base_group if cells else _MISSING
        row = [_rep(r), _mod(m), base]
        for key, _ in _ANALYSES:
            t = cells.get(key)
            row += [_num(t.r2_adjusted), _pvalue(t.p_value)] if t else [_MISSING] * 2
        rows.append(row)
    return _table(
        None,
        rows,
        header_rows=[_tag("tr", top), _tag("tr", second)],
        caption="Fairness analyses (Loukina, Madnani and Zechner 2019; as RSMTool): share "
        "of the machine's error explained by group membership (adjusted R²) and the "
        "p-value of its F test. For CSD, the increase over the human score alone.",
    )


def _group_coefficients_table(table: pd.DataFrame, meta: Mapping[str, Any]) -> _Markup:
    _check_table(
        table,
        "group_fairness_coefficients",
        ["representation", "model", "metric", "group", "term", "estimate", "p_value"],
    )
    headers = ["Representation", "Model", "Group"]
    for _, label in _ANALYSES:
        headers += [f"{label} estimate", f"{label} p"]
    rows = []
    for r, m, part in _by_model(table, meta):
        cells = {(str(t.metric), str(t.group)): t for t in part.itertuples(index=False)}
        terms = {str(t.group): str(t.term) for t in part.itertuples(index=False)}
        for g in dict.fromkeys(str(v) for v in part["group"]):
            label = f"{g} (reference)" if terms[g] == "intercept" else g
            row = [_rep(r), _mod(m), label]
            for key, _ in _ANALYSES:
                t = cells.get((key, g))
                row += [_num(t.estimate), _pvalue(t.p_value)] if t else [_MISSING] * 2
            rows.append(row)
    return _table(
        headers,
        rows,
        caption="Coefficients of the fairness analyses: for the reference group its mean "
        "squared error (OSA) or mean signed error (OSD; CSD at the most frequent human "
        "score); for every other group its difference from the reference group",
    )


def _group_lipschitz_table(table: pd.DataFrame, meta: Mapping[str, Any]) -> _Markup:
    _check_table(
        table,
        "group_lipschitz",
        ["representation", "model", "scope", "group", "n_essays", "n_pairs", "fraction"],
    )
    per_group = table[table["scope"].astype(str) == "group"]
    groups = list(dict.fromkeys(str(g) for g in per_group["group"]))
    sizes = dict(zip(per_group["group"].astype(str), per_group["n_essays"]))
    headers = [
        "Representation", "Model", "All pairs", "Within a group", "Across groups",
    ] + [f"Within {g} (n = {_num(sizes[g])})" for g in groups]  # fmt: skip
    rows = []
    for r, m, part in _by_model(table, meta, human=True):
        scopes = {
            (str(t.scope), str(t.group) if str(t.scope) == "group" else ""): t.fraction
            for t in part.itertuples(index=False)
        }
        row = [_rep(r), _mod(m)]
        row += [_pct(scopes.get((s, ""))) for s in ("overall", "within", "cross")]
        row += [_pct(scopes.get(("group", g))) for g in groups]
        rows.append(row)
    counts = {
        str(t.scope): t.n_pairs
        for t in table.itertuples(index=False)
        if str(t.scope) in ("within", "cross")
    }
    caption = "Essay pairs satisfying the Lipschitz condition (min–max normalisation, as "
    caption += "in section 6), % of the pairs within a group, across groups and within "
    caption += "each group"
    if counts:
        caption += (
            f" ({_num(counts.get('within'))} pairs within a group, "
            f"{_num(counts.get('cross'))} across groups)"
        )
    return _table(headers, rows, caption=caption)


def _section_groups(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], figure: _FigureCounter
) -> _Markup:
    group_col = meta.get("group_col")
    column = f" (column {group_col})" if group_col else ""
    out = [
        _tag("h3", "Agreement by group"),
        _tag(
            "p",
            f"QWK (≥ {_QWK_MIN:.2f}) and SMD (machine − human on the group's own essays, "
            f"in units of the group's own spread; within ±{_SMD_MAX:.2f}) ask whether the "
            "model works as well for this group as for others. DSM, the difference of "
            "standardized means (RSMTool), puts every group on one scale: both scores are "
            "standardized with their mean and SD over all essays, and DSM is the group's "
            "mean machine z-score minus its mean human z-score. A positive DSM means the "
            "machine scores the group higher, relative to the humans, than it scores "
            f"essays on the whole; RSMTool flags |DSM| > {_DSM_MAX:.1f}. The all-essays "
            "row has DSM 0.",
            class_="note",
        ),
    ]
    if _present(tables, "group_agreement"):
        out.append(
            _group_agreement_table(
                tables["group_agreement"],
                meta,
                f"Agreement with the human score by group{column}; DSM against all "
                "essays, as in RSMTool's report",
            )
        )
    else:
        out.append(_tag("p", "Not available in this run."))
    out.append(
        figure(
            "group_agreement",
            "QWK, SMD and DSM per group of students, per representation and model; "
            f"dashed lines: QWK {_QWK_MIN:.2f}, SMD ±{_SMD_MAX:.2f} and DSM "
            f"±{_DSM_MAX:.2f}.",
            "Bar charts of QWK, SMD and DSM per student group, one column of panels per "
            "text representation.",
        )
    )
    out.append(_tag("h3", "Fairness analyses: OSA, OSD and CSD"))
    out.append(
        _tag(
            "p",
            "Each is a regression of the machine's error on group membership (Loukina, "
            "Madnani and Zechner 2019), reported as the share of the error's variance that "
            "the groups explain (adjusted R²). OSA, overall score accuracy, uses the "
            "squared error: are some groups scored less accurately? OSD, overall score "
            "difference, uses the signed error (machine − human): does the machine score "
            "some groups higher or lower than the humans do? CSD, conditional score "
            "difference, asks the OSD question among essays with the same human score: it "
            "conditions on the human score. A group with lower human scores gets positive "
            "errors from regression to the mean alone, which OSD counts and CSD does not. "
            "With many essays a tiny R² can have p < 0.05: read the size first.",
            class_="note",
        )
    )
    if _present(tables, "group_fairness"):
        out.append(_group_fairness_table(tables["group_fairness"], meta))
    else:
        out.append(_tag("p", "Not available in this run."))
    if _present(tables, "group_fairness_coefficients"):
        out.append(_group_coefficients_table(tables["group_fairness_coefficients"], meta))
    out.append(_tag("h3", "Individual fairness within and across groups"))
    out.append(
        _tag(
            "p",
            "The Lipschitz fraction of section 6, with the same distances and the same "
            "min–max scaling over all pairs, counted among pairs of essays from one group "
            "(within), from different groups (across) and within each group. A lower "
            "fraction across groups than within means that similar essays from different "
            "groups get more different scores than similar essays from one group. Compare "
            "with the human scores: a gap that the humans show too is in the data the "
            "model learned from. Pairs from different groups may also simply be farther "
            "apart, which makes the condition easier to meet, and the within-group "
            "fraction is dominated by the largest group, which has the most pairs.",
            class_="note",
        )
    )
    if _present(tables, "group_lipschitz"):
        out.append(_group_lipschitz_table(tables["group_lipschitz"], meta))
    else:
        out.append(_tag("p", "Not available in this run."))
    out.append(
        figure(
            "group_lipschitz",
            "Share of essay pairs meeting the Lipschitz condition among pairs of one "
            "group (circles) and of different groups (triangles), per representation and "
            "model, human scores included; the dash is the share over all pairs.",
            "Dot plots per text representation: for each model and the human scores, the "
            "Lipschitz fraction within groups and across groups.",
        )
    )
    return _join(out)


def _section_perturbations(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], figure: _FigureCounter
) -> _Markup:
    table = tables["perturbation"]
    _check_table(
        table,
        "perturbation",
        [
            "representation",
            "model",
            "perturbation",
            "family",
            "expected",
            "n_changed",
            "share_expected",
            "mean_change",
            "share_beyond_tolerance",
            "mean_distance",
            "share_zero_distance",
            "lipschitz_max",
            "tolerance",
        ],
    )
    expected = {"stay": "stay", "drop": "drop", "change": "move"}
    rows = [
        [
            _rep(r.representation),
            _mod(r.model),
            r.perturbation,
            expected.get(str(r.expected), str(r.expected)),
            _num(r.n_changed),
            _pct(r.share_expected),
            _num(r.mean_change),
            _pct(r.share_beyond_tolerance),
            _num(r.mean_distance),
            _pct(r.share_zero_distance),
            _pct(r.lipschitz_max),
        ]
        for r in table.itertuples(index=False)
    ]
    tol = table["tolerance"].dropna()
    tol_text = f"{float(tol.iloc[0]):g} score points" if len(tol) else "the tolerance"
    out = [
        _table(
            [
                "Representation",
                "Model",
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
            rows,
            caption="Score changes under controlled edits (changed essays only)",
        ),
        figure(
            "perturbation",
            "Where scores moved under each edit (down / within the tolerance / up), the "
            "mean change, and the distance between essay and edit in the representation.",
            "Bar charts of the share of essays whose score went down, stayed or went up "
            "under each edit, per representation and model.",
        ),
    ]
    if _present(tables, "perturbation_examples"):
        ex = tables["perturbation_examples"]
        _check_table(
            ex,
            "perturbation_examples",
            ["representation", "perturbation", "id", "edit_preview"],
        )
        first = ex.drop_duplicates("perturbation")
        out.append(
            _table(
                ["Edit", "Essay id", "What changed (first edits)"],
                [
                    [r.perturbation, r.id, _short(r.edit_preview, 160)]
                    for r in first.itertuples()
                ],
                caption="One example of each edit",
            )
        )
    return _join(out)


_SECTION_TABLES = {
    "Agreement with human raters": ("agreement",),
    "Essay similarity: extreme pairs": ("extreme_pairs", "extreme_pair_features"),
    "Aggregate feature differences": ("feature_profile",),
    "Paraphrase robustness": ("paraphrase",),
    "Individual fairness: Lipschitz fraction": ("lipschitz", "distance_distribution"),
    "Score difference vs. distance": ("score_distance", "trend"),
}


# --------------------------------------------------------------------------- public


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
    distance, and 8 Group view (only with one of the group tables). Each
    opens with a plain-language reading guide. A section whose tables are
    missing says so, and the overview lists it with the omitted features.

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        The audit's tables (see :class:`~sklearn_fairaes.report.AuditResult`).
    meta : dict or None
        The audit's metadata (title, data, what was run and left out, notes,
        versions, run time). Missing keys are shown as not available.
    figures : dict of str to matplotlib.figure.Figure, or None
        Usually ``make_figures`` (``sklearn_fairaes.report._plots``) of the
        same tables; each is embedded once as a PNG data URI. Figures with
        other names go to the end of the last section.
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
    ...     "representation": ["bow"], "which": ["nearest"], "rank": [1],
    ...     "row_a": [0], "row_b": [1], "id_a": ["a"], "id_b": ["b"],
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
    figure = _FigureCounter(figures, dpi)
    with_groups = any(_present(frames, name) for name in _GROUP_TABLES)
    with_edits = _present(frames, "perturbation")
    titles = [
        t
        for t in SECTION_TITLES
        if (with_groups or t != "Group view")
        and (with_edits or t != "Counterfactual edits")
    ]

    unavailable = [
        (title, "not available in this run (its table is missing)")
        for title, names in _SECTION_TABLES.items()
        if not any(_present(frames, n) for n in names)
    ]
    if not with_groups:
        unavailable.append(("Group view", "no group column was given, so it is left out"))
    if not with_edits:
        unavailable.append(
            (
                "Counterfactual edits",
                "no perturbations were requested (perturbations=..., or --perturbations "
                "default on the command line)",
            )
        )
    builders = {
        "Overview": lambda: _section_overview(frames, meta, unavailable),
        "Agreement with human raters": lambda: _section_agreement(frames, meta, figure),
        "Essay similarity: extreme pairs": lambda: _section_extreme(frames, meta, figure),
        "Aggregate feature differences": lambda: _section_profile(frames, meta, figure),
        "Paraphrase robustness": lambda: _section_paraphrase(frames, meta, figure),
        "Individual fairness: Lipschitz fraction": lambda: _section_lipschitz(
            frames, meta, figure
        ),
        "Score difference vs. distance": lambda: _section_score_distance(
            frames, meta, figure
        ),
        "Group view": lambda: _section_groups(frames, meta, figure),
        "Counterfactual edits": lambda: _section_perturbations(frames, meta, figure),
    }

    sections, toc = [], []
    for number, title in enumerate(titles, start=1):
        anchor = f"section-{number}"
        body = builders[title]()
        if number == len(titles):
            extra = figure.leftovers()
            body = _join(
                [body]
                + [
                    figure(name, f"Additional figure “{name}”.", f"Figure {name}")
                    for name in extra
                ]
            )
        sections.append(
            _tag(
                "section",
                _join(
                    [
                        _tag("h2", f"{number} {title}"),
                        _tag(
                            "div",
                            _join([_tag("b", "How to read this section"), _GUIDES[title]]),
                            class_="guide",
                        ),
                        body,
                    ]
                ),
                id=anchor,
            )
        )
        toc.append(_tag("li", _tag("a", title, href=f"#{anchor}")))

    title = str(meta.get("title") or "Individual-fairness audit")
    versions = meta.get("versions") or {}
    package_version = versions.get("sklearn_fairaes") or versions.get("sklearn-fairaes")
    subtitle = "Individual-fairness audit of automated essay scoring"
    if meta.get("started"):
        subtitle += f" · run started {meta['started']}"
    header = _tag(
        "header",
        _join(
            [
                _tag("h1", title),
                _tag("p", subtitle, class_="subtitle"),
                _tag("nav", _tag("ol", _join(toc)), aria_label="Contents"),
            ]
        ),
    )
    footer_parts = [
        "Generated by sklearn-fairaes",
        f" {package_version}" if package_version else "",
        f". Run started {meta['started']}" if meta.get("started") else "",
        f"; run time {_num(meta['seconds'], 1)} s"
        if not _missing(meta.get("seconds"))
        else "",
        ". ",
    ]
    if versions:
        footer_parts.append(
            "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + "."
        )
    footer = _tag("footer", _tag("p", _join(footer_parts)))
    head = _join(
        [
            _Markup('<meta charset="utf-8">'),
            _Markup('<meta name="viewport" content="width=device-width, initial-scale=1">'),
            _Markup(f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'),
            _Markup('<meta name="generator" content="sklearn-fairaes">'),
            _tag("title", title),
            _Markup(f"<style>{_CSS}</style>"),
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        + f'<html lang="en">\n<head>\n{head}\n</head>\n<body>\n{header}\n'
        + f"<main>\n{_join(sections, chr(10))}\n</main>\n{footer}\n</body>\n</html>\n"
    )


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
    >>> table = pd.DataFrame({"model": ["ridge"], "qwk": [np.nan], "n": [np.int64(3)]})
    >>> json.dumps(to_json_dict({"agreement": table}, {"cv": 5}), allow_nan=False)
    '{"meta": {"cv": 5}, "tables": {"agreement": [{"model": "ridge", "qwk": null, "n": 3}]}}'
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
