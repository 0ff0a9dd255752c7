"""Figures of the audit report, drawn from the audit's tables (paper, Section 5).

Every function here takes tables (tidy :class:`pandas.DataFrame` objects laid
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
from typing import TYPE_CHECKING, Any, SupportsFloat, SupportsInt, cast

import numpy as np

from ..features._interpretable import FEATURE_NAMES
from ..resources import require

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

__all__ = [
    "FIGURE_NAMES",
    "POOLED",
    "REVIEW_FIGURE_NAMES",
    "audit_prompts",
    "figure_key",
    "make_figures",
    "model_colors",
    "plot_distance_distribution",
    "plot_extreme_pairs",
    "plot_feature_profile",
    "plot_group_agreement",
    "plot_group_lipschitz",
    "plot_lipschitz",
    "plot_lipschitz_profile",
    "plot_score_distance",
    "prompt_tables",
]

#: Names of the figures :func:`make_figures` can build, in report order.
FIGURE_NAMES = (
    "extreme_pairs",
    "feature_profile",
    "lipschitz",
    "distance_distribution",
    "score_distance_5",
    "score_distance_100",
    "group_agreement",
    "group_lipschitz",
    "perturbation",
)

#: Figures of the essays to review (issue 17), built when the audit gave their
#: tables; they come after ``score_distance_100`` in :func:`make_figures`.
#: Kept apart from :data:`FIGURE_NAMES`, which lists the paper's figures.
REVIEW_FIGURE_NAMES = ("lipschitz_profile",)

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


def plot_lipschitz(
    lipschitz: pd.DataFrame,
    *,
    representations: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """Share of essay pairs satisfying the Lipschitz condition (paper Table 3).

    Two panels, one per normalisation of distances and score differences
    (min-max over all pairs, and division by the maximum); in each, one group
    of bars per representation and one bar per model, human scores included.

    Parameters
    ----------
    lipschitz : pandas.DataFrame
        The audit's ``"lipschitz"`` table: ``representation``, ``system``,
        ``lipschitz_minmax``, ``lipschitz_max`` (fractions).
    representations, models : list of str, default=None
        Order of the bar groups and bars; order of appearance when None.
        ``"human"`` always comes last.
    colors : dict, default=None
        Model -> colour; :func:`model_colors` when None.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure, not registered with pyplot.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import plot_lipschitz
    >>> table = pd.DataFrame({"representation": ["bow", "bow"],
    ...                       "system": ["ridge", "human"],
    ...                       "lipschitz_minmax": [0.99, 0.96],
    ...                       "lipschitz_max": [0.997, 0.98], "n_pairs": [45, 45]})
    >>> fig = plot_lipschitz(table)
    >>> [ax.get_title() for ax in fig.axes]
    ['Min-max normalisation', 'Max normalisation']
    """
    _check_table(
        lipschitz,
        "lipschitz",
        ["representation", "system", "lipschitz_minmax", "lipschitz_max"],
    )
    reps = _ordered(lipschitz["representation"], representations)
    mods = _ordered(lipschitz["system"], models, last=("human",))
    colors = colors or model_colors(mods)
    values = {
        (str(r), str(m)): (a, b)
        for r, m, a, b in zip(
            lipschitz["representation"],
            lipschitz["system"],
            lipschitz["lipschitz_minmax"],
            lipschitz["lipschitz_max"],
        )
    }
    fig = _figure(max(7.0, 0.6 * len(reps) * len(mods) + 0.8 * len(reps) + 1.5), 7.4)
    axes = fig.subplots(2, 1, sharex=True)
    width = 0.8 / len(mods)
    x = np.arange(len(reps))
    for k, (ax, title) in enumerate(
        zip(axes, ("Min-max normalisation", "Max normalisation"))
    ):
        for j, m in enumerate(mods):
            heights = [100.0 * values.get((r, m), (np.nan, np.nan))[k] for r in reps]
            pos = x - 0.4 + width * (j + 0.5)
            bars = ax.bar(pos, heights, width=width * 0.92, color=colors[m], label=_text(m))
            for bar, h in zip(bars, heights):
                if np.isfinite(h):
                    ax.text(
                        bar.get_x() + bar.get_width() / 2,
                        h + 1.0,
                        f"{h:.1f}",
                        ha="center",
                        va="bottom",
                        rotation=90,
                        fontsize=7,
                    )
        ax.set_xticks(x, [_text(representation_label(r)) for r in reps])
        ax.set_ylim(0, 118)
        ax.set_yticks(np.arange(0, 101, 20))
        ax.set_title(title)
        ax.set_ylabel("Pairs with |Δscore| ≤ distance (%)")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    fig.suptitle(
        "Individual fairness: share of essay pairs meeting the Lipschitz condition"
    )
    _legend(
        fig,
        [axes[0].patches[j * len(reps)] for j in range(len(mods))],
        [_text(model_label(m)) for m in mods],
    )
    return fig


def plot_extreme_pairs(
    extreme_pair_features: pd.DataFrame,
    extreme_pairs: pd.DataFrame | None = None,
    *,
    representations: Sequence[str] | None = None,
) -> Figure:
    """The nearest and the farthest essay pair per representation (paper Figure 1).

    One row of panels per representation: left the nearest pair, right the
    farthest pair; in each, the normalised interpretable features of essay A
    and essay B side by side.

    Parameters
    ----------
    extreme_pair_features : pandas.DataFrame
        The audit's ``"extreme_pair_features"`` table: ``representation``,
        ``which`` (``"nearest"`` or ``"farthest"``), ``feature``, ``value_a``,
        ``value_b`` (values min-max normalised over the corpus).
    extreme_pairs : pandas.DataFrame, default=None
        The ``"extreme_pairs"`` table; when given, the rank-1 pair's distance
        and essay ids go into the panel titles.
    representations : list of str, default=None
        Order of the rows; order of appearance when None.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure, not registered with pyplot.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import plot_extreme_pairs
    >>> table = pd.DataFrame({"representation": ["bow"] * 4,
    ...                       "which": ["nearest", "nearest", "farthest", "farthest"],
    ...                       "feature": ["word_count", "spelling_errors"] * 2,
    ...                       "value_a": [0.5, 0.1, 0.9, 0.0],
    ...                       "value_b": [0.5, 0.2, 0.1, 0.8]})
    >>> fig = plot_extreme_pairs(table)
    >>> [ax.get_title() for ax in fig.axes]
    ['BOW: nearest pair', 'BOW: farthest pair']
    """
    _check_table(
        extreme_pair_features,
        "extreme_pair_features",
        ["representation", "which", "feature", "value_a", "value_b"],
    )
    table = extreme_pair_features
    reps = _ordered(table["representation"], representations)
    features = sorted(
        _ordered(table["feature"]), key=lambda f: feature_number(f, table["feature"])
    )
    titles: dict[tuple[str, str], str] = {}
    if extreme_pairs is not None and len(extreme_pairs):
        _check_table(
            extreme_pairs, "extreme_pairs", ["representation", "which", "rank", "distance"]
        )
        # pandas-stubs types a row's fields as any scalar: rank is an int and
        # distance a float in the audit's data contract
        for row in extreme_pairs.itertuples(index=False):
            if int(cast(SupportsInt, row.rank)) == 1:
                ids = ""
                if hasattr(row, "id_a") and hasattr(row, "id_b"):
                    ids = f", essays {_short(row.id_a)} & {_short(row.id_b)}"
                titles[(str(row.representation), str(row.which))] = (
                    f" (distance {float(cast(SupportsFloat, row.distance)):.3f}{ids})"
                )
    fig = _figure(2 * max(5.5, 0.55 * len(features) + 1.5), 2.6 * len(reps) + 1.6)
    axes = fig.subplots(len(reps), 2, sharex=True, sharey=True, squeeze=False)
    x = np.arange(len(features))
    for i, r in enumerate(reps):
        for j, which in enumerate(("nearest", "farthest")):
            ax = axes[i, j]
            sub = table[
                (table["representation"].astype(str) == r) & (table["which"] == which)
            ]
            by_feature = {
                str(f): (a, b)
                for f, a, b in zip(sub["feature"], sub["value_a"], sub["value_b"])
            }
            a = [by_feature.get(f, (np.nan, np.nan))[0] for f in features]
            b = [by_feature.get(f, (np.nan, np.nan))[1] for f in features]
            ax.bar(x - 0.2, a, width=0.4, color=_PAIR_COLORS["a"])
            ax.bar(x + 0.2, b, width=0.4, color=_PAIR_COLORS["b"])
            ax.set_ylim(0, 1.05)
            ax.grid(axis="y", alpha=0.3)
            ax.set_axisbelow(True)
            ax.set_title(
                _text(
                    f"{representation_label(r)}: {which} pair{titles.get((r, which), '')}"
                ),
                fontsize=10,
            )
            if sub.empty:
                ax.text(
                    0.5, 0.5, "no pair", ha="center", va="center", transform=ax.transAxes
                )
        axes[i, 0].set_ylabel("Normalised value")
    labels = [
        _text(f"{feature_number(f, table['feature'])}. {feature_label(f)}")
        for f in features
    ]
    for ax in axes[-1]:
        ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
    fig.suptitle("Extreme cases: features of the nearest and the farthest essay pair")
    _legend(
        fig,
        [axes[0, 0].patches[0], axes[0, 0].patches[len(features)]],
        ["Essay A", "Essay B"],
    )
    return fig


def plot_feature_profile(
    feature_profile: pd.DataFrame, *, representations: Sequence[str] | None = None
) -> Figure:
    """Mean feature difference of near, medium and far pairs (paper Figure 2).

    One panel per representation; for each interpretable feature (numbered as
    in the paper's Table 1), the mean absolute difference of its normalised
    value between the two essays of a pair, for the nearest, medium and
    farthest pairs.

    Parameters
    ----------
    feature_profile : pandas.DataFrame
        The audit's ``"feature_profile"`` table: ``representation``, ``group``
        (``"nearest"``, ``"medium"``, ``"farthest"``), ``feature``,
        ``mean_abs_diff``.
    representations : list of str, default=None
        Order of the panels; order of appearance when None.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure, not registered with pyplot.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import plot_feature_profile
    >>> table = pd.DataFrame({"representation": ["sbert"] * 3,
    ...                       "group": ["nearest", "medium", "farthest"],
    ...                       "feature": ["word_count"] * 3,
    ...                       "mean_abs_diff": [0.05, 0.1, 0.2]})
    >>> fig = plot_feature_profile(table)
    >>> fig.axes[0].get_title()
    'Sentence-BERT'
    """
    _check_table(
        feature_profile,
        "feature_profile",
        ["representation", "group", "feature", "mean_abs_diff"],
    )
    table = feature_profile
    reps = _ordered(table["representation"], representations)
    features = sorted(
        _ordered(table["feature"]), key=lambda f: feature_number(f, table["feature"])
    )
    groups = _ordered(table["group"], ("nearest", "medium", "farthest"))
    colors = dict(_DISTANCE_GROUP_COLORS)
    spare = iter(_GROUP_PALETTE)
    for g in groups:
        colors.setdefault(g, next(spare, "#000000"))
    width_per_panel = max(_PANEL_W, 0.5 * len(features) + 1.0)
    ncols = min(len(reps), 2)
    fig = _figure(width_per_panel * ncols, 3.6 * math.ceil(len(reps) / ncols) + 1.6)
    axes, _, _ = _panel_axes(fig, len(reps), sharex=True, sharey=True)
    x = np.arange(len(features))
    width = 0.8 / len(groups)
    labels = [
        _text(f"{feature_number(f, table['feature'])}. {feature_label(f)}")
        for f in features
    ]
    for ax, r in zip(axes, reps):
        sub = table[table["representation"].astype(str) == r]
        for j, g in enumerate(groups):
            part = sub[sub["group"].astype(str) == g]
            value = dict(zip(part["feature"].astype(str), part["mean_abs_diff"]))
            ax.bar(
                x - 0.4 + width * (j + 0.5),
                [value.get(f, np.nan) for f in features],
                width=width * 0.92,
                color=colors[g],
            )
        ax.set_title(_text(representation_label(r)))
        ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    for i in range(0, len(axes), ncols):
        axes[i].set_ylabel("Mean |Δ feature| (normalised)")
    fig.suptitle("Aggregate feature differences of nearest, medium and farthest pairs")
    handles = [axes[0].patches[j * len(features)] for j in range(len(groups))]
    _legend(fig, handles, [_text(f"{g} pairs") for g in groups])
    return fig


def plot_distance_distribution(
    distance_distribution: pd.DataFrame,
    *,
    representations: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """Distribution of essay distances and of score differences (paper Figure 4).

    One panel per representation: the density of the normalised essay
    distances (grey area) and, per model and for the human scores, the
    density of the normalised score differences over the same pairs. Where a
    model's curve lies left of the distance area, most pairs satisfy the
    Lipschitz condition.

    Parameters
    ----------
    distance_distribution : pandas.DataFrame
        The audit's ``"distance_distribution"`` table: ``representation``,
        ``series`` (``"distance"``, a model name or ``"human"``),
        ``bin_left``, ``bin_right``, ``density``.
    representations, models : list of str, default=None
        Order of the panels and of the legend; order of appearance when None.
    colors : dict, default=None
        Model -> colour; :func:`model_colors` when None.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure, not registered with pyplot.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import plot_distance_distribution
    >>> table = pd.DataFrame({"representation": ["bow"] * 4,
    ...                       "series": ["distance", "distance", "ridge", "ridge"],
    ...                       "bin_left": [0.0, 0.5, 0.0, 0.5],
    ...                       "bin_right": [0.5, 1.0, 0.5, 1.0],
    ...                       "density": [0.4, 1.6, 1.8, 0.2]})
    >>> fig = plot_distance_distribution(table)
    >>> fig.axes[0].get_xlabel()
    'Normalised value (0 = smallest, 1 = largest over all pairs)'
    """
    _check_table(
        distance_distribution,
        "distance_distribution",
        ["representation", "series", "bin_left", "bin_right", "density"],
    )
    table = distance_distribution
    reps = _ordered(table["representation"], representations)
    series = [
        s for s in _ordered(table["series"], models, last=("human",)) if s != "distance"
    ]
    colors = colors or model_colors(series)
    fig = _figure(_PANEL_W * min(len(reps), 2), _PANEL_H * math.ceil(len(reps) / 2) + 0.9)
    axes, _, _ = _panel_axes(fig, len(reps), sharex=True)
    ncols = min(len(reps), 2)
    for i, (ax, r) in enumerate(zip(axes, reps)):
        sub = table[table["representation"].astype(str) == r]
        dist = sub[sub["series"].astype(str) == "distance"].sort_values("bin_left")
        if len(dist):
            edges = np.append(dist["bin_left"].to_numpy(float), dist["bin_right"].iloc[-1])
            ax.stairs(
                dist["density"].to_numpy(float),
                edges,
                fill=True,
                color=_DISTANCE_COLOR,
                alpha=0.6,
            )
        for s in series:
            part = sub[sub["series"].astype(str) == s].sort_values("bin_left")
            if part.empty:
                continue
            # Steps, not a line through bin centres: score differences are often
            # discrete, and a line would draw spikes between empty bins.
            edges = np.append(part["bin_left"].to_numpy(float), part["bin_right"].iloc[-1])
            ax.stairs(part["density"].to_numpy(float), edges, color=colors[s], lw=1.6)
        ax.set_title(_text(representation_label(r)))
        ax.set_xlim(0, 1)
        if i % ncols == 0:
            ax.set_ylabel("Density")
        if i + ncols >= len(reps):
            ax.set_xlabel("Normalised value (0 = smallest, 1 = largest over all pairs)")
        ax.grid(alpha=0.3)
    fig.suptitle("Essay distances (grey) vs. score differences per model")
    _, Line2D = _mpl()
    Patch = require("matplotlib.patches", extra="report").Patch
    handles = [Patch(color=_DISTANCE_COLOR, alpha=0.6)] + [
        Line2D([], [], color=colors[s], lw=2) for s in series
    ]
    labels = ["Essay distance"] + [_text(f"|Δscore|: {model_label(s)}") for s in series]
    _legend(fig, handles, labels, ncols=min(len(labels), 3))
    return fig


def plot_score_distance(
    score_distance: pd.DataFrame,
    *,
    n_bins: int = 5,
    representations: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
    score_range: Sequence[float] | None = None,
) -> Figure:
    """Mean score difference per distance bin (paper Figures 5 and 6).

    One panel per representation; all essay pairs sorted by distance and cut
    into ``n_bins`` equal-count bins; per model and for the human scores, the
    mean absolute score difference in each bin, with +-1 standard error bars
    when there are at most 10 bins.

    Parameters
    ----------
    score_distance : pandas.DataFrame
        The audit's ``"score_distance"`` table: ``representation``, ``system``,
        ``n_bins``, ``bin``, ``mean_abs_diff``, ``se``.
    n_bins : int, default=5
        Which binning to draw (the table holds rows for 5 and 100 bins).
    representations, models : list of str, default=None
        Order of the panels and of the legend; order of appearance when None.
    colors : dict, default=None
        System -> colour; :func:`model_colors` when None.
    score_range : (float, float), default=None
        The score scale ``(lo, hi)`` of the prompt (declared or inferred).
        When given, the y axis starts at 0, is labelled with the scale and
        ends at most at ``hi - lo``, the largest score difference the scale
        allows, so that prompts on different scales are read on their own.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure, not registered with pyplot.

    Raises
    ------
    ValueError
        When the table has no rows for ``n_bins``.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import plot_score_distance
    >>> table = pd.DataFrame({"representation": ["sbert"] * 2, "system": ["ridge"] * 2,
    ...                       "n_bins": [2, 2], "bin": [1, 2], "n_pairs": [10, 10],
    ...                       "distance_min": [0.0, 0.5], "distance_max": [0.5, 1.0],
    ...                       "mean_abs_diff": [1.2, 2.5], "se": [0.1, 0.2]})
    >>> fig = plot_score_distance(table, n_bins=2)
    >>> fig.axes[0].get_title()
    'Sentence-BERT'
    """
    _check_table(
        score_distance,
        "score_distance",
        ["representation", "system", "n_bins", "bin", "mean_abs_diff", "se"],
    )
    table = score_distance[score_distance["n_bins"].astype(int) == int(n_bins)]
    if table.empty:
        have = sorted(set(score_distance["n_bins"].astype(int)))
        raise ValueError(
            f"table 'score_distance' has no rows with n_bins={n_bins}; it has n_bins "
            f"{', '.join(map(str, have)) or 'none'}. Pass one of those."
        )
    reps = _ordered(table["representation"], representations)
    mods = _ordered(table["system"], models, last=("human",))
    colors = colors or model_colors(mods)
    with_errors = int(n_bins) <= 10
    ylabel, span = "Mean |Δscore| (score points)", None
    se = table["se"].to_numpy(float) if with_errors else 0.0
    se = np.nan_to_num(se)
    if score_range is not None:
        lo, hi = (float(v) for v in score_range[:2])
        span = hi - lo if hi > lo else None
        ylabel = f"Mean |Δscore| (points, scale {lo:g}–{hi:g})"
    fig = _figure(_PANEL_W * min(len(reps), 2), _PANEL_H * math.ceil(len(reps) / 2) + 0.9)
    axes, _, _ = _panel_axes(fig, len(reps), sharex=True)
    ncols = min(len(reps), 2)
    for i, (ax, r) in enumerate(zip(axes, reps)):
        bottom = i + ncols >= len(reps)
        sub = table[table["representation"].astype(str) == r]
        for j, m in enumerate(mods):
            part = sub[sub["system"].astype(str) == m].sort_values("bin")
            if part.empty:
                continue
            x = part["bin"].to_numpy(float)
            y = part["mean_abs_diff"].to_numpy(float)
            if with_errors:
                # Small horizontal offsets keep overlapping error bars apart.
                dx = (j - (len(mods) - 1) / 2) * 0.06
                ax.errorbar(
                    x + dx,
                    y,
                    yerr=part["se"].to_numpy(float),
                    color=colors[m],
                    marker="o",
                    ms=4,
                    lw=1.8,
                    capsize=3,
                )
            else:
                ax.plot(x, y, color=colors[m], lw=1.5)
        ax.set_title(_text(representation_label(r)))
        if with_errors:
            ticks = np.arange(1, int(n_bins) + 1)
            labels = [str(t) for t in ticks]
            labels[0] += "\nnearest"
            labels[-1] += "\nfarthest"
            ax.set_xticks(ticks, labels)
            xlabel = f"Distance bin ({100 / int(n_bins):g} % of pairs each)"
        else:
            ax.set_xlim(0.5, int(n_bins) + 0.5)
            xlabel = f"Distance bin, 1 = nearest … {int(n_bins)} = farthest"
        if bottom:
            ax.set_xlabel(xlabel)
        if i % ncols == 0:
            ax.set_ylabel(ylabel)
        if span is not None:
            top = np.nanmax(table["mean_abs_diff"].to_numpy(float) + se, initial=0.0)
            ax.set_ylim(0, min(span, max(1.15 * top, 0.05 * span)))
        ax.grid(alpha=0.3)
    suffix = " (error bars: ±1 SE)" if with_errors else ""
    fig.suptitle(f"Score difference vs. essay distance, {int(n_bins)} bins{suffix}")
    _legend(fig, _line_handles(colors, mods), [_text(model_label(m)) for m in mods])
    return fig


def plot_lipschitz_profile(
    profile: pd.DataFrame,
    *,
    representations: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """Share of essay pairs satisfying the Lipschitz condition as the constant ``L`` grows.

    One panel per representation, one step line per system and for the human
    scores, ``L`` on a log axis, with the 90/95/99% levels as dotted lines:
    where a line crosses a level is that system's empirical Lipschitz
    constant. A line to the left of the human scores' line scores near
    essays more alike than the raters did. Points at ``L = 0`` (pairs with
    no score difference) cannot be drawn on a log axis and are left out;
    the line then starts at its first positive constant.

    Parameters
    ----------
    profile : pandas.DataFrame
        The audit's ``"lipschitz_profile"`` table: ``representation``,
        ``system``, ``lipschitz_constant``, ``fraction``.
    representations, models : list of str, default=None
        Order of the panels and of the legend; order of appearance when None.
    colors : dict, default=None
        System -> colour; :func:`model_colors` when None.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure, not registered with pyplot.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import plot_lipschitz_profile
    >>> table = pd.DataFrame({"representation": ["tfidf"] * 3, "system": ["human"] * 3,
    ...                       "lipschitz_constant": [0.5, 1.0, 4.0],
    ...                       "fraction": [0.6, 0.9, 1.0]})
    >>> fig = plot_lipschitz_profile(table)
    >>> fig.axes[0].get_xscale(), fig.axes[0].get_title()
    ('log', 'TF-IDF')
    """
    _check_table(
        profile,
        "lipschitz_profile",
        ["representation", "system", "lipschitz_constant", "fraction"],
    )
    reps = _ordered(profile["representation"], representations)
    mods = _ordered(profile["system"], models, last=("human",))
    colors = colors or model_colors(mods)
    fig = _figure(_PANEL_W * min(len(reps), 2), _PANEL_H * math.ceil(len(reps) / 2) + 0.9)
    axes, _, _ = _panel_axes(fig, len(reps), sharey=True)
    ncols = min(len(reps), 2)
    for i, (ax, r) in enumerate(zip(axes, reps)):
        sub = profile[profile["representation"].astype(str) == r]
        for m in mods:
            part = sub[sub["system"].astype(str) == m].sort_values("lipschitz_constant")
            x = part["lipschitz_constant"].to_numpy(float)
            y = part["fraction"].to_numpy(float)
            drawn = (x > 0) & np.isfinite(x)
            if drawn.any():
                ax.step(x[drawn], 100 * y[drawn], where="post", color=colors[m], lw=1.8)
        for level in (90, 95, 99):
            ax.axhline(level, color="#999999", lw=0.8, ls=":")
        ax.axvline(1.0, color="#999999", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_title(_text(representation_label(r)))
        if i + ncols >= len(reps):
            ax.set_xlabel("Lipschitz constant L (log scale; dashed: L = 1)")
        if i % ncols == 0:
            ax.set_ylabel("Pairs satisfying the condition (%)")
        ax.grid(alpha=0.3, which="both")
    fig.suptitle("Lipschitz profile: share of pairs satisfied vs. L (dotted: 90/95/99%)")
    _legend(fig, _line_handles(colors, mods), [_text(model_label(m)) for m in mods])
    return fig


def plot_group_agreement(
    group_agreement: pd.DataFrame,
    *,
    representations: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
) -> Figure:
    """QWK, SMD and DSM per group of students, per representation and model.

    Three rows of panels (QWK; SMD, machine minus human within the group;
    DSM, the group's difference of standardized means against all essays)
    and one column per representation; in each panel one group of bars per
    model and one bar per student group, then a grey bar for all essays.
    Dashed lines mark the thresholds: QWK 0.70 and SMD +-0.15 (Williamson et
    al., 2012), DSM +-0.10 (RSMTool's group report).

    Parameters
    ----------
    group_agreement : pandas.DataFrame
        The audit's ``"group_agreement"`` table: ``representation``,
        ``system``, ``group`` (``"all"`` for the row of all essays), ``qwk``,
        ``smd``, ``dsm``.
    representations, models : list of str, default=None
        Order of the columns and of the bar groups; order of appearance when None.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure, not registered with pyplot.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import plot_group_agreement
    >>> table = pd.DataFrame({"representation": ["bow"] * 3, "system": ["ridge"] * 3,
    ...                       "group": ["A", "B", "all"], "qwk": [0.71, 0.64, 0.68],
    ...                       "smd": [-0.03, 0.12, 0.04], "dsm": [-0.06, 0.08, 0.0]})
    >>> fig = plot_group_agreement(table)
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['QWK', 'SMD (machine − human)', 'DSM (group vs. all essays)']
    """
    _check_table(
        group_agreement,
        "group_agreement",
        ["representation", "system", "group", "qwk", "smd", "dsm"],
    )
    table = group_agreement
    reps = _ordered(table["representation"], representations)
    mods = _ordered(table["system"], models)
    groups = _ordered(table["group"], last=("all",))
    colors = {g: _GROUP_PALETTE[i % len(_GROUP_PALETTE)] for i, g in enumerate(groups)}
    colors["all"] = _ALL_ESSAYS_COLOR
    # Wide enough for the bars, but not wider than a page can show at a glance.
    width = min(20.0, max(8.0, (1.2 + 0.45 * len(mods) * len(groups)) * len(reps)))
    fig = _figure(width, 8.6)
    axes = fig.subplots(3, len(reps), sharex="col", sharey="row", squeeze=False)
    x = np.arange(len(mods))
    width = 0.8 / len(groups)
    rows = (
        ("qwk", "QWK", (0.70,)),
        ("smd", "SMD (machine − human)", (-0.15, 0.0, 0.15)),
        ("dsm", "DSM (group vs. all essays)", (-0.10, 0.0, 0.10)),
    )
    for c, r in enumerate(reps):
        sub = table[table["representation"].astype(str) == r]
        for row, (col, ylabel, refs) in enumerate(rows):
            ax = axes[row, c]
            for j, g in enumerate(groups):
                part = sub[sub["group"].astype(str) == g]
                value = dict(zip(part["system"].astype(str), part[col]))
                ax.bar(
                    x - 0.4 + width * (j + 0.5),
                    [value.get(m, np.nan) for m in mods],
                    width=width * 0.92,
                    color=colors[g],
                    edgecolor="#4D4D4D" if g == "all" else None,
                    linewidth=0.6,
                )
            for ref in refs:
                ax.axhline(ref, color="black", lw=0.8, ls="-" if ref == 0 else "--")
            if col != "qwk" and c == 0:
                # The row shares its y axis: fit every panel's bars, and keep both
                # threshold lines in view even when every value is small.
                values = np.abs(table[col].to_numpy(dtype=float))
                top = np.nanmax(values, initial=0.0)
                limit = max(refs[-1] + 0.05, 1.1 * top)
                ax.set_ylim(-limit, limit)
            ax.set_xticks(x, [_text(model_label(m)) for m in mods], rotation=20, ha="right")
            ax.grid(axis="y", alpha=0.3)
            ax.set_axisbelow(True)
            if c == 0:
                ax.set_ylabel(ylabel)
            if row == 0:
                ax.set_title(_text(representation_label(r)))
    fig.suptitle("Agreement with the human scores by group (dashed lines: thresholds)")
    handles = [axes[0, 0].patches[j * len(mods)] for j in range(len(groups))]
    _legend(fig, handles, [_group_label(g) for g in groups])
    return fig


def _group_label(group: str) -> str:
    return "All essays" if group == "all" else _text(group)


def plot_group_lipschitz(
    group_lipschitz: pd.DataFrame,
    *,
    representations: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """Lipschitz fraction within groups and across groups, per representation.

    One panel per representation; for each model and for the human scores,
    the share of essay pairs meeting the Lipschitz condition among pairs of
    the same group (circle) and among pairs of different groups (triangle),
    joined by a line, with the share over all pairs as a short dash. Pairs
    of different groups satisfying the condition less often than pairs of
    one group means that similar essays are scored less alike across groups.

    Parameters
    ----------
    group_lipschitz : pandas.DataFrame
        The audit's ``"group_lipschitz"`` table: ``representation``,
        ``system``, ``scope`` (rows ``"overall"``, ``"within"`` and
        ``"cross"`` are drawn; ``"group"`` rows are not), ``fraction``.
    representations, models : list of str, default=None
        Order of the panels and of the models; order of appearance when None.
        ``"human"`` always comes last.
    colors : dict, default=None
        Model -> colour; :func:`model_colors` when None.

    Returns
    -------
    fig : matplotlib.figure.Figure
        A new figure, not registered with pyplot.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import plot_group_lipschitz
    >>> table = pd.DataFrame({"representation": ["bow"] * 6,
    ...                       "system": ["ridge"] * 3 + ["human"] * 3,
    ...                       "scope": ["overall", "within", "cross"] * 2,
    ...                       "fraction": [0.97, 0.98, 0.96, 0.95, 0.96, 0.94]})
    >>> fig = plot_group_lipschitz(table)
    >>> fig.axes[0].get_title()
    'BOW'
    """
    _check_table(
        group_lipschitz,
        "group_lipschitz",
        ["representation", "system", "scope", "fraction"],
    )
    table = group_lipschitz[group_lipschitz["scope"].astype(str) != "group"]
    reps = _ordered(table["representation"], representations)
    mods = _ordered(table["system"], models, last=("human",))
    colors = colors or model_colors(mods)
    values = {
        (str(r), str(m), str(s)): 100.0 * float(f)
        for r, m, s, f in zip(
            table["representation"], table["system"], table["scope"], table["fraction"]
        )
    }
    width = max(_PANEL_W, 0.9 * len(mods) + 1.5)
    ncols = min(len(reps), 2)
    fig = _figure(width * ncols, _PANEL_H * math.ceil(len(reps) / ncols) + 0.9)
    axes, _, _ = _panel_axes(fig, len(reps))
    x = np.arange(len(mods))
    for i, (ax, r) in enumerate(zip(axes, reps)):
        for j, m in enumerate(mods):
            within = values.get((r, m, "within"), np.nan)
            cross = values.get((r, m, "cross"), np.nan)
            overall = values.get((r, m, "overall"), np.nan)
            ax.plot([j - 0.12, j + 0.12], [within, cross], color=colors[m], lw=1.2)
            ax.plot(j - 0.12, within, marker="o", ms=7, color=colors[m], ls="none")
            ax.plot(j + 0.12, cross, marker="^", ms=7, color=colors[m], ls="none")
            ax.plot([j - 0.25, j + 0.25], [overall, overall], color="#4D4D4D", lw=0.8)
        ax.set_xticks(x, [_text(model_label(m)) for m in mods], rotation=20, ha="right")
        ax.set_xlim(-0.6, len(mods) - 0.4)
        low, high = ax.get_ylim()
        if high - low < 1.0:  # a hair's difference should not fill the panel
            middle = (high + low) / 2
            ax.set_ylim(middle - 0.5, middle + 0.5)
        ax.set_title(_text(representation_label(r)))
        if i % ncols == 0:
            ax.set_ylabel("Pairs with |Δscore| ≤ distance (%)")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    fig.suptitle("Individual fairness by group: pairs within a group vs. across groups")
    _, Line2D = _mpl()
    handles = [
        Line2D([], [], color="#4D4D4D", marker="o", ls="none"),
        Line2D([], [], color="#4D4D4D", marker="^", ls="none"),
        Line2D([], [], color="#4D4D4D", lw=0.8),
    ]
    _legend(
        fig,
        handles,
        ["Pairs within a group", "Pairs across groups", "All pairs"],
        ncols=3,
    )
    return fig


# --------------------------------------------------------------------------- all

#: The ``prompt`` value of the rows pooled over prompts (never drawn per prompt).
POOLED = "pooled"


def _present(tables: Mapping[str, pd.DataFrame], name: str) -> bool:
    table = tables.get(name)
    return table is not None and len(table) > 0


def figure_key(name: str, prompt: str | None = None) -> str:
    """The key of a figure in :func:`make_figures`'s result.

    With one prompt the key is the figure's name (``"lipschitz"``); with
    several each prompt has its own figures, keyed ``"<name>:<prompt>"``
    (the names hold no colon, so the key splits back unambiguously).

    Parameters
    ----------
    name : str
        One of :data:`FIGURE_NAMES`.
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


def _prompt_figures(
    tables: Mapping[str, pd.DataFrame],
    *,
    reps: Sequence[str] | None,
    mods: Sequence[str] | None,
    colors: Mapping[str, str],
    scale: tuple[float, float] | None,
) -> dict[str, Figure]:
    """The figures of one prompt's tables, keyed by figure name."""
    figures: dict[str, Figure] = {}
    if _present(tables, "extreme_pair_features"):
        figures["extreme_pairs"] = plot_extreme_pairs(
            tables["extreme_pair_features"],
            tables.get("extreme_pairs"),
            representations=reps,
        )
    if _present(tables, "feature_profile"):
        figures["feature_profile"] = plot_feature_profile(
            tables["feature_profile"], representations=reps
        )
    if _present(tables, "lipschitz"):
        figures["lipschitz"] = plot_lipschitz(
            tables["lipschitz"], models=mods, colors=colors, representations=reps
        )
    if _present(tables, "distance_distribution"):
        figures["distance_distribution"] = plot_distance_distribution(
            tables["distance_distribution"],
            models=mods,
            colors=colors,
            representations=reps,
        )
    if _present(tables, "score_distance"):
        have = set(tables["score_distance"]["n_bins"].astype(int))
        for n_bins in (5, 100):
            if n_bins in have:
                figures[f"score_distance_{n_bins}"] = plot_score_distance(
                    tables["score_distance"],
                    n_bins=n_bins,
                    models=mods,
                    colors=colors,
                    representations=reps,
                    score_range=scale,
                )
    if _present(tables, "lipschitz_profile"):
        figures["lipschitz_profile"] = plot_lipschitz_profile(
            tables["lipschitz_profile"], models=mods, colors=colors, representations=reps
        )
    if _present(tables, "group_agreement"):
        figures["group_agreement"] = plot_group_agreement(
            tables["group_agreement"], models=mods, representations=reps
        )
    if _present(tables, "group_lipschitz"):
        figures["group_lipschitz"] = plot_group_lipschitz(
            tables["group_lipschitz"], models=mods, colors=colors, representations=reps
        )
    if _present(tables, "perturbation"):
        from ..perturb import plot_perturbation_audit

        table = tables["perturbation"]
        # one row of panels per representation x system
        labelled = table.drop(
            columns=[c for c in ("prompt", "representation", "system") if c in table]
        ).assign(
            model=[
                f"{representation_label(r)} + {model_label(m)}"
                for r, m in zip(
                    table["representation"].astype(str), table["system"].astype(str)
                )
            ]
        )
        figures["perturbation"] = plot_perturbation_audit(
            labelled, title="Counterfactual edits: how scores moved"
        )
    return figures


def make_figures(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any] | None
) -> dict[str, Figure]:
    """Build every figure of the audit report that the tables allow.

    A figure whose table is missing (or empty) is left out; nothing is
    raised for it. Each prompt has its own figures, drawn from its rows of
    the tables (the rows pooled over prompts are never drawn). Colours per
    system and the order of representations and systems are the same in
    every figure (taken from ``meta["systems"]`` or ``meta["models"]`` and
    ``meta["representations"]`` when given). Score axes follow the prompt's
    scale (``meta["score_ranges"]``, else ``meta["score_range"]``).

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        The audit's tables (see :class:`~sklearn_fairaes.report.AuditResult`).
    meta : dict or None
        The audit's metadata; ``representations`` and ``systems`` (or
        ``models``) set the order, ``prompts`` the prompts.

    Returns
    -------
    figures : dict of str to matplotlib.figure.Figure
        With one prompt, keys among :data:`FIGURE_NAMES` and
        :data:`REVIEW_FIGURE_NAMES`, in report order;
        with several, :func:`figure_key` of each name and prompt, prompt by
        prompt.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._plots import make_figures
    >>> table = pd.DataFrame({"representation": ["bow"], "system": ["ridge"],
    ...                       "lipschitz_minmax": [0.99], "lipschitz_max": [0.997],
    ...                       "n_pairs": [45]})
    >>> list(make_figures({"lipschitz": table}, {}))
    ['lipschitz']
    >>> two = pd.concat([table.assign(prompt="1"), table.assign(prompt="2")])
    >>> list(make_figures({"lipschitz": two}, {}))
    ['lipschitz:1', 'lipschitz:2']
    """
    meta = meta or {}
    reps = list(meta.get("representations") or []) or None
    mods = [str(m) for m in (meta.get("systems") or meta.get("models") or [])]
    names = list(mods)
    for key, column in (
        ("lipschitz", "system"),
        ("group_lipschitz", "system"),
        ("score_distance", "system"),
        ("lipschitz_profile", "system"),
        ("distance_distribution", "series"),
    ):
        if _present(tables, key) and column in tables[key].columns:
            names += [s for s in tables[key][column].astype(str) if s != "distance"]
    colors = model_colors(_ordered(names, mods, last=("human",)))
    prompts = audit_prompts(tables, meta)
    figures: dict[str, Figure] = {}
    for prompt in prompts:
        drawn = _prompt_figures(
            prompt_tables(tables, prompt),
            reps=reps,
            mods=mods or None,
            colors=colors,
            scale=_scale_of(meta, prompt),
        )
        for name, fig in drawn.items():
            figures[figure_key(name, prompt if len(prompts) > 1 else None)] = fig
    return figures
