"""Figures of the audit report: the helpers the sections share.

Each section draws its own figures (``Section.figures`` in
``report/analyses``) with the helpers here (labels, colours, panels,
legends); ``report.analyses.make_figures`` asks every section in report order. Every
figure function takes tables (tidy :class:`pandas.DataFrame` objects laid
out as in the audit's data contract) and returns a new
:class:`matplotlib.figure.Figure`. The figures are independent objects: no
pyplot state is touched, no global ``rcParams`` is changed and nothing is
shown, so building a report never opens a window and never interferes with a
user's own plots. Nothing is computed here beyond arranging the numbers the
audit produced.

Names of representations, models, groups and features come from the data;
they are drawn as literal text (a ``$`` never starts math mode).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..features._interpretable import FEATURE_NAMES
from ..resources import require

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

__all__ = [
    "POOLED",
    "audit_prompts",
    "figure_key",
    "model_colors",
    "prompt_tables",
]

REPRESENTATION_LABELS = {
    "bow": "BOW",
    "tfidf": "TF-IDF",
    "sbert": "Sentence-BERT",
    "laser": "LASER",
}
MODEL_LABELS = {
    "ridge": "Ridge",
    "random_forest": "Random Forest",
    "gradient_boosting": "Gradient Boosting",
    "xgboost": "XGBoost",
    "human": "Human scores",
}
FEATURE_LABELS = {
    "answer_length": "Answer length",
    "word_count": "Word count",
    "avg_word_length": "Avg. word length",
    "good_pos_ngrams": "Good POS n-grams",
    "prompt_overlap": "Prompt overlap",
    "prompt_overlap_synonyms": "Prompt overlap (synonyms)",
    "punctuation_count": "Punctuation",
    "spelling_errors": "Spelling errors",
    "unique_words": "Unique words",
    "prompt_similarity_sbert": "Prompt similarity (SBERT)",
    "prompt_similarity_bow": "Prompt similarity (BOW)",
    "language_errors": "Language errors",
}

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
_KNOWN_MODEL_COLORS = {
    "ridge": "#0072B2",
    "random_forest": "#E69F00",
    "gradient_boosting": "#009E73",
    "human": "#4D4D4D",
}
_SPARE_COLORS = ("#CC79A7", "#56B4E9", "#D55E00", "#882255", "#999933", "#332288")
_PAIR_COLORS = {"a": "#332288", "b": "#DDCC77"}
_DISTANCE_GROUP_COLORS = {"nearest": "#56B4E9", "medium": "#999999", "farthest": "#D55E00"}
_GROUP_PALETTE = (
    "#4477AA",
    "#EE6677",
    "#228833",
    "#CCBB44",
    "#66CCEE",
    "#AA3377",
    "#BBBBBB",
)
_DISTANCE_COLOR = "#B0B0B0"
_ALL_ESSAYS_COLOR = "#DDDDDD"

_PANEL_W, _PANEL_H = 5.2, 3.6


# --------------------------------------------------------------------------- helpers


def _mpl() -> tuple[type[Figure], type[Line2D]]:
    """The two matplotlib pieces we use, imported on first use."""
    figure = require(
        "matplotlib.figure", extra="report", purpose="the audit report's figures"
    )
    lines = require(
        "matplotlib.lines", extra="report", purpose="the audit report's figures"
    )
    return figure.Figure, lines.Line2D


def _text(value: object) -> str:
    """Data as literal matplotlib text: an unescaped ``$`` would start math mode."""
    return str(value).replace("$", r"\$")


def _short(value: object, width: int = 16) -> str:
    """Data shortened for a title (ids can be long)."""
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def representation_label(name: object) -> str:
    """Display name of a representation (``"sbert"`` -> ``"Sentence-BERT"``)."""
    return REPRESENTATION_LABELS.get(str(name), str(name))


def model_label(name: object) -> str:
    """Display name of a model (``"random_forest"`` -> ``"Random Forest"``)."""
    return MODEL_LABELS.get(str(name), str(name))


def feature_number(name: str, extra: Iterable[str] = ()) -> int:
    """Number of a feature in the paper's Table 1 (1-12), so that numbers keep
    their meaning when some features were left out; unknown features are
    numbered after them, in the order of ``extra``."""
    if name in FEATURE_NAMES:
        return FEATURE_NAMES.index(name) + 1
    unknown = [f for f in extra if f not in FEATURE_NAMES]
    return (
        len(FEATURE_NAMES) + 1 + (unknown.index(name) if name in unknown else len(unknown))
    )


def feature_label(name: object) -> str:
    """Display name of an interpretable feature."""
    return FEATURE_LABELS.get(str(name), str(name).replace("_", " "))


def _ordered(
    values: Iterable[object],
    preferred: Iterable[str] | None = None,
    last: Sequence[str] = (),
) -> list[str]:
    """Unique values in the order of ``preferred`` then of appearance; ``last`` at the end."""
    seen = list(dict.fromkeys(str(v) for v in values))
    head = [p for p in (preferred or ()) if p in seen and p not in last]
    rest = [v for v in seen if v not in head and v not in last]
    tail = [v for v in last if v in seen]
    return head + rest + tail


def _check_table(table: pd.DataFrame, name: str, columns: Iterable[str]) -> None:
    """Raise a ValueError naming the table and its missing columns."""
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(
            f"table {name!r} lacks the column(s) {', '.join(missing)}; it has "
            f"{', '.join(map(str, table.columns)) or 'no columns'}. Build it with "
            "sklearn_fairaes.report.audit(), which follows the report's data contract."
        )


def model_colors(models: Iterable[str]) -> dict[str, str]:
    """One colour per model, the same in every figure of a report.

    Parameters
    ----------
    models : iterable of str
        Model names, ``"human"`` included where human scores are plotted.
        Known names (``"ridge"``, ``"random_forest"``, ``"gradient_boosting"``,
        ``"human"``) always get the same colour; others get the spare colours
        in the order given.

    Returns
    -------
    colors : dict
        Model name -> hex colour.

    Examples
    --------
    >>> from sklearn_fairaes.report._plots import model_colors
    >>> model_colors(["ridge", "svr", "human"])
    {'ridge': '#0072B2', 'svr': '#CC79A7', 'human': '#4D4D4D'}
    """
    colors: dict[str, str] = {}
    spare = itertools.cycle(_SPARE_COLORS)
    for name in dict.fromkeys(str(m) for m in models):
        colors[name] = _KNOWN_MODEL_COLORS.get(name) or next(spare)
    return colors


def _panel_axes(
    fig: Figure,
    n_panels: int,
    *,
    max_cols: int = 2,
    sharex: bool = False,
    sharey: bool = False,
) -> tuple[list[Axes], int, int]:
    """A grid of ``n_panels`` axes (unused cells removed), row-major."""
    ncols = min(n_panels, max_cols)
    nrows = math.ceil(n_panels / ncols)
    axes = fig.subplots(nrows, ncols, sharex=sharex, sharey=sharey, squeeze=False).ravel()
    for ax in axes[n_panels:]:
        fig.delaxes(ax)
    if sharex:
        # With a removed cell the panel above it is the lowest of its column:
        # it needs its own tick labels.
        for i, ax in enumerate(axes[:n_panels]):
            if i + ncols >= n_panels:
                ax.tick_params(labelbottom=True)
    return list(axes[:n_panels]), nrows, ncols


#: The narrowest figure, in inches: wide enough for the longest title on one panel.
_MIN_WIDTH = 7.0


def _figure(width: float, height: float) -> Figure:
    Figure, _ = _mpl()
    return Figure(figsize=(max(width, _MIN_WIDTH), height), layout="constrained")


def _legend(
    fig: Figure,
    handles: Sequence[Artist],
    labels: Sequence[str],
    *,
    ncols: int | None = None,
) -> None:
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=ncols or min(len(labels), 5),
        frameon=False,
        fontsize=9,
    )


def _line_handles(colors: Mapping[str, str], names: Iterable[str]) -> list[Line2D]:
    _, Line2D = _mpl()
    return [Line2D([], [], color=colors[n], marker="o", lw=2) for n in names]


# --------------------------------------------------------------------------- figures


# --------------------------------------------------------------------------- all

#: The ``prompt`` value of the rows pooled over prompts (never drawn per prompt).
POOLED = "pooled"


def _present(tables: Mapping[str, pd.DataFrame], name: str) -> bool:
    table = tables.get(name)
    return table is not None and len(table) > 0


def figure_key(name: str, prompt: str | None = None) -> str:
    """The key of a figure in ``report.analyses.make_figures``'s result.

    With one prompt the key is the figure's name (``"lipschitz"``); with
    several each prompt has its own figures, keyed ``"<name>:<prompt>"``
    (the names hold no colon, so the key splits back unambiguously).

    Parameters
    ----------
    name : str
        A figure name (``Section.figure_names``).
    prompt : str or None, default=None
        The prompt id, or None for an audit of one prompt.

    Returns
    -------
    key : str
        The figure's key.

    Examples
    --------
    >>> from sklearn_fairaes.report._plots import figure_key
    >>> figure_key("lipschitz"), figure_key("lipschitz", "7")
    ('lipschitz', 'lipschitz:7')
    """
    return name if prompt is None else f"{name}:{prompt}"


def audit_prompts(
    tables: Mapping[str, pd.DataFrame | None], meta: Mapping[str, Any] | None
) -> list[str]:
    """The prompt ids of an audit, in report order (pooled rows excluded).

    ``meta["prompts"]`` when given, else the ``prompt`` values of the tables
    in order of appearance; ``["all"]`` for tables without a ``prompt``
    column (an audit of one prompt, or tables built by hand).

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        The audit's tables.
    meta : dict or None
        The audit's metadata.

    Returns
    -------
    prompts : list of str
        The prompt ids, never ``"pooled"``.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import audit_prompts
    >>> table = pd.DataFrame({"prompt": ["1", "2", "pooled"], "qwk": [0.7, 0.8, 0.75]})
    >>> audit_prompts({"agreement": table}, {})
    ['1', '2']
    """
    listed = (meta or {}).get("prompts")
    if listed:
        return [str(p) for p in listed]
    seen: list[str] = []
    for table in tables.values():
        if table is not None and "prompt" in table.columns:
            seen += [str(p) for p in table["prompt"]]
    found = [p for p in dict.fromkeys(seen) if p != POOLED]
    return found or ["all"]


def prompt_tables(
    tables: Mapping[str, pd.DataFrame | None], prompt: str
) -> dict[str, pd.DataFrame]:
    """One prompt's rows of every table (tables without a ``prompt`` column whole).

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        The audit's tables; None values are left out.
    prompt : str
        The prompt id.

    Returns
    -------
    tables : dict of str to pandas.DataFrame
        The same names, each with the rows whose ``prompt`` is ``prompt``.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import prompt_tables
    >>> table = pd.DataFrame({"prompt": ["1", "2"], "qwk": [0.7, 0.8]})
    >>> prompt_tables({"agreement": table}, "2")["agreement"]["qwk"].tolist()
    [0.8]
    """
    out = {}
    for name, table in tables.items():
        if table is None:
            continue
        if "prompt" in table.columns:
            table = table[table["prompt"].astype(str) == str(prompt)]
        out[name] = table
    return out


def _scale_of(meta: Mapping[str, Any], prompt: str) -> tuple[float, float] | None:
    """The prompt's score scale ``(lo, hi)`` from the audit's metadata, if recorded."""
    ranges = meta.get("score_ranges")
    # prompt ids are text in the tables; the metadata's keys may be the data's own
    scale = (
        {str(k): v for k, v in ranges.items()}.get(prompt)
        if isinstance(ranges, Mapping)
        else None
    )
    if scale is None:
        scale = meta.get("score_range")
    if isinstance(scale, Sequence) and not isinstance(scale, str) and len(scale) >= 2:
        try:
            return float(scale[0]), float(scale[1])
        except (TypeError, ValueError):
            return None
    return None
