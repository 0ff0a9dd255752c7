"""What each representation calls alike: extreme pairs and the feature-difference profile.

The paper's §5.1.2 (Figure 1) and §5.1.3 (Figure 2), on one study (one
prompt), per representation:

* ``"extreme_pairs"``: the ``k_extreme`` nearest and farthest pairs of
  essays, with their ids, texts and human scores (``row_a``/``row_b`` are
  the essays' positions in the study, from 0, as the pair metrics'
  ``i``/``j``; ``data_row_a``/``data_row_b`` their rows in the user's
  table, from 1, header not counted);
* ``"extreme_pair_features"``: the interpretable features of the nearest and
  of the farthest pair's two essays, min-max scaled over the study's
  essays;
* ``"feature_profile"``: the mean absolute feature difference of the
  nearest, medium and farthest pairs (``n_profile_pairs`` each, at most a
  tenth of all pairs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, SupportsFloat, SupportsInt, cast

import numpy as np
from numpy.typing import NDArray

from ...resources import require
from .._cells import _missing, _num, _ordered, _present, _score, _table, _text
from .._plots import (
    _DISTANCE_GROUP_COLORS,
    _GROUP_PALETTE,
    _PAIR_COLORS,
    _PANEL_W,
    _check_table,
    _figure,
    _legend,
    _panel_axes,
    _short,
    feature_label,
    feature_number,
    representation_label,
)
from .._plots import _ordered as _pordered
from .._plots import _text as _ptext
from ._base import AnalysisOutput, FigureContext, Heading, Section
from ._common import PairAnalysis

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from .._study import Study

__all__ = ["ANALYSIS", "ExtremesAnalysis"]

EXTREME_PAIR_COLUMNS = [
    "representation", "which", "rank", "row_a", "row_b", "data_row_a", "data_row_b", "id_a",
    "id_b", "distance", "text_a", "text_b", "score_a", "score_b",
]  # fmt: skip
EXTREME_FEATURE_COLUMNS = ["representation", "which", "feature", "value_a", "value_b"]
PROFILE_COLUMNS = ["representation", "group", "feature", "mean_abs_diff"]


def minmax_columns(F: NDArray[Any]) -> NDArray[np.float64]:
    """Min-max scale each column of ``F`` to [0, 1]; a constant column becomes 0.

    Parameters
    ----------
    F : array-like of shape (n_essays, n_features)
        Interpretable features.

    Returns
    -------
    F_scaled : ndarray of shape (n_essays, n_features)
        The scaled features.

    Examples
    --------
    >>> import numpy as np
    >>> minmax_columns(np.array([[1.0, 5.0], [3.0, 5.0]])).tolist()
    [[0.0, 0.0], [1.0, 0.0]]
    """
    F = np.asarray(F, dtype=float)
    lo = F.min(axis=0)
    span = F.max(axis=0) - lo
    return np.where(span > 0, (F - lo) / np.where(span > 0, span, 1), 0.0)


def profile_pairs(n: int, n_profile_pairs: int) -> int:
    """Give the pairs per group of the feature profile: at most a tenth of all pairs.

    Parameters
    ----------
    n : int
        Number of essays.
    n_profile_pairs : int
        The requested pairs per group.

    Returns
    -------
    n_pairs : int
        ``n_profile_pairs`` capped at a tenth of the ``n * (n - 1) / 2`` pairs,
        and at least 1.

    Examples
    --------
    >>> profile_pairs(1000, 10_000), profile_pairs(40, 10_000), profile_pairs(4, 10)
    (10000, 78, 1)
    """
    return int(max(1, min(n_profile_pairs, n * (n - 1) // 2 // 10)))


class ExtremesAnalysis(PairAnalysis):
    """Extreme pairs per representation, their features and the feature profile.

    See the module docstring for the tables. Without interpretable features
    in the study only ``"extreme_pairs"`` is computed, and a note says so.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.spatial.distance import pdist
    >>> from sklearn_fairaes.report._study import PairSpace, Settings, Study
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.5, 0.5]])
    >>> D = pdist(X, "cosine")
    >>> study = Study(
    ...     prompt="all", prompt_text=None, essays=["a", "b", "c", "d"],
    ...     ids=np.array(["e1", "e2", "e3", "e4"]), rows=np.arange(1, 5),
    ...     human=np.array([1.0, 1, 3, 2]), score_range=(1.0, 3.0),
    ...     score_range_source="inferred", settings=Settings(),
    ...     spaces={"bow": PairSpace("bow", None, X, D, "precomputed", D)},
    ...     features=np.array([[10.0], [12.0], [30.0], [20.0]]), feature_names=["n_words"],
    ... )
    >>> out = ANALYSIS.run(study)
    >>> pairs = out.tables["extreme_pairs"]
    >>> [(p.which, str(p.id_a), str(p.id_b)) for p in pairs.itertuples()]
    [('nearest', 'e1', 'e2'), ('farthest', 'e1', 'e3')]
    """

    name = "extremes"

    def run(self, study: Study) -> AnalysisOutput:
        """Compute the three tables of the module docstring on one study.

        Parameters
        ----------
        study : Study
            One prompt's essays, systems and pair spaces.

        Returns
        -------
        output : AnalysisOutput
            The tables (no ``prompt`` column), notes and warnings.
        """
        from ...metrics import extreme_pairs, feature_difference_profile

        pd = require("pandas", purpose="the audit")
        settings = study.settings
        names = list(study.feature_names)
        F = None if study.features is None else np.asarray(study.features, dtype=float)
        if F is not None and F.shape != (study.n, len(names)):
            raise ValueError(
                f"prompt {study.prompt!r}: the study's features have shape {F.shape}, "
                f"expected ({study.n}, {len(names)}) (essays, feature_names)"
            )
        if F is not None and not names:
            F = None
        F_norm = None if F is None else minmax_columns(F)
        out = AnalysisOutput()
        if F is None:
            skipped = study.skipped.get("features")
            out.notes.append(
                (
                    "Extreme pairs: the study has no interpretable features"
                    if skipped is None
                    else f"Extreme pairs: the interpretable features were {skipped}"
                )
                + ", so the features of the extreme pairs and the feature-difference "
                "profile are left out."
            )
        rows_ext: list[tuple[Any, ...]] = []
        rows_feat: list[tuple[Any, ...]] = []
        rows_prof: list[tuple[Any, ...]] = []
        # a small prompt of a many-prompt audit may have fewer pairs than the
        # k_extreme asked for every prompt: show all of its pairs
        n_pairs = study.n * (study.n - 1) // 2
        k = min(settings.k_extreme, n_pairs)
        if k < settings.k_extreme:
            out.notes.append(
                f"Extreme pairs: {study.n} essays have {n_pairs} pairs, fewer than "
                f"k_extreme={settings.k_extreme}; each end shows all {n_pairs}."
            )
        for rname, space in study.spaces.items():
            ext = extreme_pairs(
                space.pairs,
                k=k,
                metric=space.metric,
                n_jobs=settings.n_jobs,
            )
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
                            int(study.rows[a]),
                            int(study.rows[b]),
                            study.ids[a],
                            study.ids[b],
                            float(part["distance"][rank]),
                            study.essays[a],
                            study.essays[b],
                            float(study.human[a]),
                            float(study.human[b]),
                        )
                    )
                    if rank == 0 and F_norm is not None:
                        rows_feat += [
                            (rname, which, f, float(F_norm[a, k]), float(F_norm[b, k]))
                            for k, f in enumerate(names)
                        ]
            if F is None:
                continue
            prof = feature_difference_profile(
                space.pairs,
                F,
                n_pairs=profile_pairs(study.n, settings.n_profile_pairs),
                metric=space.metric,
                feature_names=names,
                n_jobs=settings.n_jobs,
            )
            for g, group in enumerate(prof["group"]):
                # the report's word for the pairs around the median distance
                label = {"median": "medium"}.get(str(group), str(group))
                rows_prof += [
                    (rname, label, f, float(prof["mean_abs_diff"][g][k]))
                    for k, f in enumerate(names)
                ]
        out.tables["extreme_pairs"] = pd.DataFrame(rows_ext, columns=EXTREME_PAIR_COLUMNS)
        if F is not None:
            out.tables["extreme_pair_features"] = pd.DataFrame(
                rows_feat, columns=EXTREME_FEATURE_COLUMNS
            )
            out.tables["feature_profile"] = pd.DataFrame(rows_prof, columns=PROFILE_COLUMNS)
        return out


ANALYSIS = ExtremesAnalysis()


# --------------------------------------------------------------------------- view


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


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The extreme pairs (with their essays) and the aggregate feature differences."""
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


# --------------------------------------------------------------------------- figures


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
    >>> from sklearn_fairaes.report.analyses._extremes import plot_extreme_pairs
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
    reps = _pordered(table["representation"], representations)
    features = sorted(
        _pordered(table["feature"]), key=lambda f: feature_number(f, table["feature"])
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
                _ptext(
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
        _ptext(f"{feature_number(f, table['feature'])}. {feature_label(f)}")
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
    >>> from sklearn_fairaes.report.analyses._extremes import plot_feature_profile
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
    reps = _pordered(table["representation"], representations)
    features = sorted(
        _pordered(table["feature"]), key=lambda f: feature_number(f, table["feature"])
    )
    groups = _pordered(table["group"], ("nearest", "medium", "farthest"))
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
        _ptext(f"{feature_number(f, table['feature'])}. {feature_label(f)}")
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
        ax.set_title(_ptext(representation_label(r)))
        ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    for i in range(0, len(axes), ncols):
        axes[i].set_ylabel("Mean |Δ feature| (normalised)")
    fig.suptitle("Aggregate feature differences of nearest, medium and farthest pairs")
    handles = [axes[0].patches[j * len(features)] for j in range(len(groups))]
    _legend(fig, handles, [_ptext(f"{g} pairs") for g in groups])
    return fig


def figures(tables: Mapping[str, pd.DataFrame], ctx: FigureContext) -> dict[str, Figure]:
    """The extreme pairs' features and the aggregate feature differences."""
    out: dict[str, Figure] = {}
    if _present(tables, "extreme_pair_features"):
        out["extreme_pairs"] = plot_extreme_pairs(
            tables["extreme_pair_features"],
            tables.get("extreme_pairs"),
            representations=ctx.representations,
        )
    if _present(tables, "feature_profile"):
        out["feature_profile"] = plot_feature_profile(
            tables["feature_profile"], representations=ctx.representations
        )
    return out


SECTION = Section(
    "extremes",
    (
        Heading(
            "extremes",
            "Essay similarity: extreme pairs",
            ("extreme_pairs", "extreme_pair_features"),
        ),
        Heading("feature_profile", "Aggregate feature differences", ("feature_profile",)),
    ),
    analysis=ANALYSIS,
    view=view,
    schema={
        "extreme_pairs": tuple(EXTREME_PAIR_COLUMNS),
        "extreme_pair_features": tuple(EXTREME_FEATURE_COLUMNS),
        "feature_profile": tuple(PROFILE_COLUMNS),
    },
    figures=figures,
    figure_names=("extreme_pairs", "feature_profile"),
)
