"""Individual fairness of every system: the Lipschitz fraction and the score-distance curves.

The paper's §5.3.2 (Table 3, Figure 4) and §5.3.3 (Figures 5 and 6), on one
study (one prompt): for every representation and every scoring system
audited under it (given and fitted systems under every representation,
trained baselines under their own), and for the human scores,

* ``"lipschitz"``: the Lipschitz fraction with min-max and with max
  normalisation, with its pair counts (so that the audit can pool prompts
  weighted by pairs);
* ``"score_distance"``: the mean absolute score difference per distance bin,
  5 and 100 bins (fewer on tiny corpora: every bin holds two pairs);
* ``"trend"``: Spearman's rho of those curves (do far essays differ more?);
* ``"distance_distribution"``: normalised histograms of the pair distances
  (series ``"distance"``) and of each system's pair score differences;
* ``"system_differences"``: with the bootstrap on, the paired bootstrap
  difference of each Lipschitz fraction between every two scorings of the
  representation (systems, and each system against the human scores), with
  its interval and two-sided p-value (the agreement section adds its rows
  for QWK and the absolute SMD to the same table; columns
  ``_common.DIFFERENCE_COLUMNS``).

With the bootstrap on (``study.bootstrap_weights()``), each fraction has a
percentile interval (``*_ci_low``, ``*_ci_high``) from essay-level
replicates: all systems, the human scores and both normalisations of one
representation come from ONE extra pass over its pairs (private
``_pairs._bootstrap_pairs``), with the normalisation ranges of the full
sample. Without it, and in the pooled rows across prompts, the interval
columns are NaN (a pooled interval would need the prompts' replicates
combined pair-weighted; not computed).

Every pair is within the study: essays on different prompts are never paired.
With ``repeats=K >= 2`` the ``"lipschitz"`` table gains ``retest_violation_share``
(NaN for systems scored once): pairs at distance 0 of an essay's own scorings
that differ, beside the fractions, which stay those of distinct essays
(``_retest.violation_shares``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray

from ...resources import require
from .._cells import (
    _NA,
    Cell,
    _cell,
    _mean_sd,
    _missing,
    _mod,
    _num,
    _ordered,
    _pct_ci,
    _present,
    _pvalue,
    _rep,
    _system_order,
    _table,
    _warnings,
)
from .._plots import (
    _DISTANCE_COLOR,
    _PANEL_H,
    _PANEL_W,
    _check_table,
    _figure,
    _legend,
    _line_handles,
    _mpl,
    _panel_axes,
    model_colors,
    model_label,
    representation_label,
)
from .._plots import _ordered as _pordered
from .._plots import _text as _ptext
from ._base import AnalysisOutput, FigureContext, Heading, Section
from ._common import (
    DIFFERENCE_COLUMNS,
    PairAnalysis,
    degenerate_distances,
    noting,
    pair_notes,
    where,
)
from ._pair_intervals import _PASS_FIGURES, Scored, Spread, _lipschitz_rows
from ._retest import violation_shares
from ._spread import matched_lipschitz, relative_fairness

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure
    from pandas import DataFrame

    from .._study import PairSpace, Study

__all__ = ["ANALYSIS", "LipschitzAnalysis"]

_HIST_BINS = 50

LIPSCHITZ_COLUMNS = [
    "representation", "system",
    "lipschitz_minmax", "lipschitz_minmax_ci_low", "lipschitz_minmax_ci_high",
    "lipschitz_max", "lipschitz_max_ci_low", "lipschitz_max_ci_high",
    "lipschitz_matched", "lipschitz_matched_ci_low", "lipschitz_matched_ci_high",
    "score_sd", "score_sd_ci_low", "score_sd_ci_high", "human_sd", "n_pairs",
    "n_satisfied_minmax", "n_satisfied_max", "n_satisfied_matched",
]  # fmt: skip
RELATIVE_COLUMNS = [
    "representation", "system", "n", "n_neighbors", "score_sd", "human_sd",
    "neighbor_spread", "human_neighbor_spread", "neighbor_spread_ratio",
    "neighbor_spread_ratio_ci_low", "neighbor_spread_ratio_ci_high", "error_inconsistency",
    "error_inconsistency_ci_low", "error_inconsistency_ci_high",
]  # fmt: skip
ERROR_REVIEW_COLUMNS = [
    "representation", "system", "rank", "id", "row", "score", "human", "error",
    "neighbor_mean_error", "error_gap",
]  # fmt: skip
SCORE_DISTANCE_COLUMNS = [
    "representation", "system", "n_bins", "bin", "n_pairs", "distance_min", "distance_max",
    "mean_abs_diff", "se",
]  # fmt: skip
TREND_COLUMNS = ["representation", "system", "n_bins", "spearman_rho", "spearman_pvalue"]
DISTRIBUTION_COLUMNS = ["representation", "series", "bin_left", "bin_right", "density"]


def curve_bins(n: int) -> list[int]:
    """Give the bin counts of the score-distance curves for ``n`` essays: 5 and 100.

    Every bin needs two pairs, so tiny corpora get fewer bins (and one curve
    when 5 and 100 coincide).

    Parameters
    ----------
    n : int
        Number of essays.

    Returns
    -------
    n_bins : list of int
        The distinct bin counts, smallest first.

    Examples
    --------
    >>> curve_bins(40), curve_bins(5), curve_bins(4)
    ([5, 100], [5], [3])
    """
    most = n * (n - 1) // 4
    return sorted({min(5, most), min(100, most)})


def normalised_histogram(
    values: NDArray[Any], bins: int = _HIST_BINS
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Histogram ``values`` min-max scaled to [0, 1].

    Distances and score differences have different units; scaled, their
    distributions can be drawn on one axis (the paper's Figure 4). All-equal
    values are all put at 0.

    Parameters
    ----------
    values : ndarray of shape (n_values,)
        Pair distances or score differences.
    bins : int, default=50
        Number of equal-width bins over [0, 1].

    Returns
    -------
    edges : ndarray of shape (bins + 1,)
        Bin edges.
    density : ndarray of shape (bins,)
        Density per bin (integrates to 1 over [0, 1]).

    Examples
    --------
    >>> import numpy as np
    >>> edges, density = normalised_histogram(np.array([0.0, 1.0, 2.0, 2.0]), bins=2)
    >>> edges.tolist(), density.tolist()
    ([0.0, 0.5, 1.0], [0.5, 1.5])
    """
    lo, hi = float(values.min()), float(values.max())
    scaled = (values - lo) / (hi - lo) if hi > lo else np.zeros_like(values)
    density, edges = np.histogram(scaled, bins=bins, range=(0.0, 1.0), density=True)
    return edges, density


def _score_differences(space: PairSpace, s: NDArray[np.float64]) -> NDArray[np.float64]:
    """The absolute score differences of the pairs whose distances ``distance_sample`` holds."""
    if space.sample_pairs is None:
        from scipy.spatial.distance import pdist

        # distance_sample holds every pair, in pdist's condensed order
        return cast("NDArray[np.float64]", pdist(s[:, None], "cityblock"))
    i, j = space.sample_pairs
    return np.abs(s[i] - s[j])


class LipschitzAnalysis(PairAnalysis):
    """Lipschitz fractions, score-distance curves, their trend and the distributions.

    See the module docstring for the tables. Notes: the pair metrics'
    UserWarnings with the places they arose, and, for a representation
    whose distances are sampled (too many essays to hold all pairs), that
    its distribution is drawn from a sample. Warnings: a representation
    under which most pair distances are 0 or one same value.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.spatial.distance import pdist
    >>> from sklearn_fairaes.report._study import PairSpace, Settings, Study, System
    >>> X = np.random.default_rng(0).random((6, 3))
    >>> D = pdist(X, "cosine")
    >>> human = np.array([1.0, 2, 3, 1, 2, 3])
    >>> study = Study(
    ...     prompt="all", prompt_text=None, essays=["essay"] * 6, ids=np.arange(1, 7),
    ...     rows=np.arange(1, 7), human=human, score_range=(1.0, 3.0),
    ...     score_range_source="inferred", settings=Settings(),
    ...     systems={"engine": System("engine", "given", {None: human[::-1].copy()})},
    ...     spaces={"tfidf": PairSpace("tfidf", None, X, D, "precomputed", D)},
    ... )
    >>> out = ANALYSIS.run(study)
    >>> out.tables["lipschitz"]["system"].tolist()
    ['engine', 'human']
    >>> int(out.tables["lipschitz"]["n_pairs"].iloc[0])
    15
    """

    name = "lipschitz"

    def run(self, study: Study) -> AnalysisOutput:
        """Compute the four tables of the module docstring on one study.

        Parameters
        ----------
        study : Study
            One prompt's essays, systems and pair spaces.

        Returns
        -------
        output : AnalysisOutput
            The tables (no ``prompt`` column), notes and warnings.
        """
        from ...metrics import essay_consistency, lipschitz_fraction, score_distance_curve

        pd = require("pandas", purpose="the audit")
        settings = study.settings
        n_jobs = settings.n_jobs
        level = float(settings.confidence_level)
        weights = study.bootstrap_weights()
        human = np.asarray(study.human, dtype=float)
        human_sd = float(np.std(human, ddof=1))
        k = min(int(settings.n_neighbors), study.n - 1)
        n_review = int(settings.n_review)
        out = AnalysisOutput()
        collected: dict[str, list[str]] = {}
        rows_lip: list[tuple[Any, ...]] = []
        rows_rel: list[tuple[Any, ...]] = []
        rows_err: list[tuple[Any, ...]] = []
        ids = study.ids.tolist()
        rows_curve: list[tuple[Any, ...]] = []
        rows_trend: list[tuple[Any, ...]] = []
        rows_dist: list[tuple[Any, ...]] = []
        rows_diff: list[tuple[Any, ...]] = []
        for rname, space in study.spaces.items():
            pairs, metric = space.pairs, space.metric
            d_sample = np.asarray(space.distance_sample, dtype=float)
            if space.sample_pairs is not None:
                out.notes.append(
                    f"{rname}: distance distributions are drawn from {len(d_sample):,} "
                    f"random pairs ({study.n:,} essays are too many to hold all pairs); "
                    f"every other pair metric uses all pairs."
                )
            degenerate = degenerate_distances(rname, d_sample)
            if degenerate is not None:
                out.warnings.append({"representation": rname, "message": degenerate})
            edges, dens = normalised_histogram(d_sample)
            rows_dist += [
                (rname, "distance", edges[k], edges[k + 1], dens[k])
                for k in range(len(dens))
            ]
            # the neighbours depend on the representation only: found once, and
            # every system is compared with the humans on the same essay pairs
            neighbors = np.asarray(
                noting(
                    collected,
                    rname,
                    essay_consistency,
                    pairs,
                    human,
                    n_neighbors=k,
                    metric=metric,
                    n_jobs=n_jobs,
                ).neighbors
            )
            scored_counts: list[Scored] = []
            for sname, s in study.scored(rname).items():
                s = np.asarray(s, dtype=float)
                place = where(rname, sname)
                rel = relative_fairness(neighbors, s, human)
                reps = None if weights is None else rel.replicates(weights)
                sd_ci = _interval(reps, "score_sd", level)
                if reps is not None:
                    out.replicates[("lipschitz", rname, sname, "score_sd")] = reps[
                        "score_sd"
                    ]
                matched, n_matched, _ = noting(
                    collected, place, matched_lipschitz, space, s, human
                )
                if sname != "human":
                    rows_rel.append(
                        (
                            rname,
                            sname,
                            study.n,
                            k,
                            rel.score_sd,
                            rel.human_sd,
                            rel.neighbor_spread,
                            rel.human_neighbor_spread,
                            rel.neighbor_spread_ratio,
                            *_interval(reps, "neighbor_spread_ratio", level),
                            rel.error_inconsistency,
                            *_interval(reps, "error_inconsistency", level),
                        )
                    )
                    for column in ("neighbor_spread_ratio", "error_inconsistency"):
                        if reps is not None:
                            key = ("relative_fairness", rname, sname, column)
                            out.replicates[key] = reps[column]
                    worst = np.lexsort((np.arange(study.n), -np.abs(rel.error_gap)))
                    rows_err += [
                        (
                            rname,
                            sname,
                            rank,
                            ids[i],
                            int(study.rows[i]),
                            float(s[i]),
                            float(human[i]),
                            float(rel.error[i]),
                            float(rel.neighbor_error[i]),
                            float(rel.error_gap[i]),
                        )
                        for rank, i in enumerate(worst[:n_review], start=1)
                    ]
                # the pair metrics' UserWarnings (e.g. all distances equal) are
                # facts about this representation and these scores: report notes
                counts = {
                    normalize: cast(
                        Mapping[str, Any],
                        noting(
                            collected,
                            place,
                            lipschitz_fraction,
                            pairs,
                            s,
                            metric=metric,
                            normalize=normalize,
                            return_counts=True,
                            n_jobs=n_jobs,
                        ),
                    )
                    for normalize in ("minmax", "max")
                }
                spread = Spread(matched, n_matched, rel.score_sd, sd_ci, human_sd)
                scored_counts.append((sname, s, counts, spread))
                for n_bins in curve_bins(study.n):
                    curve = noting(
                        collected,
                        place,
                        score_distance_curve,
                        pairs,
                        s,
                        n_bins=n_bins,
                        metric=metric,
                        n_jobs=n_jobs,
                    )
                    rows_curve += [
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
                        for b in range(len(curve["bin"]))
                    ]
                    rows_trend.append(
                        (
                            rname,
                            sname,
                            n_bins,
                            float(curve["spearman_rho"]),
                            float(curve["spearman_pvalue"]),
                        )
                    )
                edges, dens = normalised_histogram(_score_differences(space, s))
                rows_dist += [
                    (rname, sname, edges[k], edges[k + 1], dens[k])
                    for k in range(len(dens))
                ]
            rows_lip += _lipschitz_rows(study, rname, space, scored_counts, out, rows_diff)
        out.notes += pair_notes(collected)
        lip = pd.DataFrame(rows_lip, columns=LIPSCHITZ_COLUMNS)
        if study.repeats:
            lip["retest_violation_share"] = violation_shares(study, lip["system"])
        out.tables = {
            "lipschitz": lip,
            "relative_fairness": pd.DataFrame(rows_rel, columns=RELATIVE_COLUMNS),
            "error_review": pd.DataFrame(rows_err, columns=ERROR_REVIEW_COLUMNS),
            "system_differences": pd.DataFrame(rows_diff, columns=DIFFERENCE_COLUMNS),
            "score_distance": pd.DataFrame(rows_curve, columns=SCORE_DISTANCE_COLUMNS),
            "trend": pd.DataFrame(rows_trend, columns=TREND_COLUMNS),
            "distance_distribution": pd.DataFrame(rows_dist, columns=DISTRIBUTION_COLUMNS),
        }
        return out


def _interval(
    replicates: Mapping[str, NDArray[np.float64]] | None, column: str, level: float
) -> tuple[float, float]:
    """The percentile interval of one figure's replicates; NaN without a bootstrap."""
    from ...metrics._bootstrap import bootstrap_interval

    if replicates is None:
        return math.nan, math.nan
    return bootstrap_interval(replicates[column], level)


ANALYSIS = LipschitzAnalysis()


# --------------------------------------------------------------------------- view

# rows of the per-essay error table shown on the page per representation and system
_ERRORS_SHOWN = 5


def _with_ci(row: Mapping[Any, Any], column: str) -> Cell:
    """``row[column]`` with its bootstrap interval in brackets when the row has one."""
    value: Any = row.get(column)
    if _missing(value):
        return _NA
    low: Any = row.get(f"{column}_ci_low")
    high: Any = row.get(f"{column}_ci_high")
    if _missing(low) or _missing(high):
        return _num(value)
    return Cell(f"{float(value):.3f} [{float(low):.3f}, {float(high):.3f}]", numeric=True)


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The Lipschitz fractions, the score-distance bins and the trend per system."""
    reps_pref = meta.get("representations") or ()
    systems = _system_order(meta)
    out: dict[str, Any] = {
        "warnings": _warnings(meta, prompt),
        "table": None,
        "relative": None,
        "errors": None,
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
        cells = {
            (str(t["representation"]), str(t["system"])): t
            for t in table.to_dict("records")
        }
        lip_rows: list[list[object]] = []
        retest = "retest_violation_share" in table.columns  # with repeats only
        for r in _ordered(table["representation"], reps_pref):
            sub = table[table["representation"].astype(str) == r]
            for m in _ordered(sub["system"], systems, last=("human",)):
                rec = cells[(r, m)]
                lip_rows.append(
                    [
                        _rep(r),
                        _mod(m),
                        _num(rec["n_pairs"]),
                        *[
                            _pct_ci(
                                rec.get(f), rec.get(f"{f}_ci_low"), rec.get(f"{f}_ci_high")
                            )
                            for f in _PASS_FIGURES
                        ],
                        _with_ci(rec, "score_sd"),
                        _num(rec.get("human_sd")),
                        *([_pct_ci(rec["retest_violation_share"])] if retest else []),
                    ]
                )
        out["table"] = _table(
            [
                "Representation",
                "System",
                "Pairs",
                "min–max %",
                "max %",
                "spread-matched %",
                "score SD",
                "human SD",
                *(["same essay rescored: differing %"] if retest else []),
            ],
            lip_rows,
            caption="Essay pairs satisfying the Lipschitz condition, % of all pairs: "
            "min–max and max normalisation as in the paper's Table 3 (each system's "
            "own score range; a narrower spread passes more pairs), and spread-matched "
            "(score differences rescaled to the human SD, over the human range: "
            "comparable across systems); essay-level bootstrap intervals in brackets when "
            "the bootstrap is on",
        )
    if _present(tables, "relative_fairness"):
        rel = tables["relative_fairness"]
        _check_table(
            rel,
            "relative_fairness",
            ["representation", "system", "neighbor_spread_ratio", "error_inconsistency"],
        )
        rel_rows: list[list[object]] = []
        for r in _ordered(rel["representation"], reps_pref):
            sub = rel[rel["representation"].astype(str) == r]
            by_system = {str(t["system"]): t for t in sub.to_dict("records")}
            for m in _ordered(sub["system"], systems, last=("human",)):
                t = by_system[m]
                rel_rows.append(
                    [
                        _rep(r),
                        _mod(m),
                        _num(t.get("n_neighbors")),
                        _num(t.get("score_sd")),
                        _num(t.get("human_sd")),
                        _num(t.get("neighbor_spread")),
                        _num(t.get("human_neighbor_spread")),
                        _with_ci(t, "neighbor_spread_ratio"),
                        _with_ci(t, "error_inconsistency"),
                    ]
                )
        out["relative"] = _table(
            [
                "Representation",
                "System",
                "Neighbours",
                "score SD",
                "human SD",
                "neighbour |Δscore| / SD",
                "humans' neighbour |Δscore| / SD",
                "spread ratio (1 = as the humans)",
                "error inconsistency (/ human SD)",
            ],
            rel_rows,
            caption="Individual fairness relative to the human scores, on each essay's "
            "nearest neighbours (bootstrap intervals in brackets, neighbours fixed)",
        )
    if _present(tables, "error_review"):
        err = tables["error_review"]
        _check_table(
            err,
            "error_review",
            ["representation", "system", "rank", "id", "error", "error_gap"],
        )
        shown = err[err["rank"].astype(int) <= _ERRORS_SHOWN]
        out["errors"] = _table(
            [
                "Representation",
                "System",
                "Rank",
                "Essay id",
                "Row",
                "Score",
                "Human",
                "Error",
                "Neighbours' mean error",
                "Error gap",
            ],
            [
                [
                    _rep(t["representation"]),
                    _mod(t["system"]),
                    _num(t["rank"]),
                    Cell(str(t["id"])),
                    _num(t["row"]),
                    _num(t["score"]),
                    _num(t["human"]),
                    _num(t["error"]),
                    _num(t["neighbor_mean_error"]),
                    _num(t["error_gap"]),
                ]
                for t in shown.to_dict("records")
            ],
            caption=f"Essays whose error (system minus human) differs most from their "
            f"nearest neighbours' errors, first {_ERRORS_SHOWN} per representation and "
            f"system (all listed ones in tables/error_review.csv)",
        )
        out["errors_shown"] = _ERRORS_SHOWN
    out["differences"] = None
    diffs = tables.get("system_differences")
    if diffs is not None:
        # the agreement section's rows (qwk, abs_smd) are shown there
        diffs = diffs[diffs["figure"].astype(str).str.startswith("lipschitz_")]
    if diffs is not None and len(diffs):
        out["differences"] = _table(
            ["Representation", "Figure", "System A", "System B", "A − B (pct. points)",
             "Interval", "p"],
            [
                [_rep(d["representation"]), d["figure"].replace("lipschitz_", ""),
                 model_label(d["system_a"]), model_label(d["system_b"]),
                 _num(100.0 * float(d["difference"]), 3),
                 _cell(f"[{100.0 * d['ci_low']:.2f}, {100.0 * d['ci_high']:.2f}]"),
                 _pvalue(d["p_value"])]
                for d in diffs.to_dict("records")
            ],
            caption="Paired bootstrap differences of the Lipschitz fractions between "
            "two scorings of the same essays (same replicates for both)",
        )  # fmt: skip
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
    >>> from sklearn_fairaes.report.analyses._lipschitz import plot_lipschitz
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
    reps = _pordered(lipschitz["representation"], representations)
    mods = _pordered(lipschitz["system"], models, last=("human",))
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
            bars = ax.bar(
                pos, heights, width=width * 0.92, color=colors[m], label=_ptext(m)
            )
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
        ax.set_xticks(x, [_ptext(representation_label(r)) for r in reps])
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
        [_ptext(model_label(m)) for m in mods],
    )
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
    >>> from sklearn_fairaes.report.analyses._lipschitz import plot_distance_distribution
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
    reps = _pordered(table["representation"], representations)
    series = [
        s for s in _pordered(table["series"], models, last=("human",)) if s != "distance"
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
        ax.set_title(_ptext(representation_label(r)))
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
    labels = ["Essay distance"] + [_ptext(f"|Δscore|: {model_label(s)}") for s in series]
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
    >>> from sklearn_fairaes.report.analyses._lipschitz import plot_score_distance
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
    reps = _pordered(table["representation"], representations)
    mods = _pordered(table["system"], models, last=("human",))
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
        ax.set_title(_ptext(representation_label(r)))
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
    _legend(fig, _line_handles(colors, mods), [_ptext(model_label(m)) for m in mods])
    return fig


# --------------------------------------------------------------------------- pooling


def _pooled(table: DataFrame) -> DataFrame:
    """Append one ``prompt="pooled"`` row per (representation, system): pair-weighted.

    Each fraction is the satisfied pairs of every prompt over all their pairs
    (pairs within a prompt only: no pair across prompts is ever formed). The
    SDs are left empty: each prompt's is on its own scale (the matched
    fraction matches each prompt's systems to that prompt's humans).
    """
    pd = require("pandas", purpose="the audit")
    rows = []
    for (rname, sname), part in table.groupby(["representation", "system"], sort=False):
        n_pairs = int(part["n_pairs"].sum())
        mm = int(part["n_satisfied_minmax"].sum())
        mx = int(part["n_satisfied_max"].sum())
        # a prompt with an undefined matched fraction (a constant series) has no
        # matched count: the pooled fraction is then undefined too
        undefined = part["lipschitz_matched"].isna().any()
        mt = int(part["n_satisfied_matched"].sum())
        rows.append(
            {
                "prompt": "pooled",
                "representation": rname,
                "system": sname,
                "lipschitz_minmax": mm / n_pairs,
                "lipschitz_max": mx / n_pairs,
                "lipschitz_matched": math.nan if undefined else mt / n_pairs,
                "n_pairs": n_pairs,
                "n_satisfied_minmax": mm,
                "n_satisfied_max": mx,
                "n_satisfied_matched": mt,
            }
        )
    return pd.concat([table, pd.DataFrame(rows, columns=table.columns)], ignore_index=True)


def pool(tables: dict[str, DataFrame], studies: Sequence[Study]) -> dict[str, DataFrame]:
    """The lipschitz table with its rows pooled across prompts."""
    if "lipschitz" in tables:
        tables["lipschitz"] = _pooled(tables["lipschitz"])
    return tables


def figures(tables: Mapping[str, pd.DataFrame], ctx: FigureContext) -> dict[str, Figure]:
    """The Lipschitz bars, the distance distributions and the score-distance curves."""
    reps, mods, colors = ctx.representations, ctx.systems, ctx.colors
    out: dict[str, Figure] = {}
    if _present(tables, "lipschitz"):
        out["lipschitz"] = plot_lipschitz(
            tables["lipschitz"], models=mods, colors=colors, representations=reps
        )
    if _present(tables, "distance_distribution"):
        out["distance_distribution"] = plot_distance_distribution(
            tables["distance_distribution"],
            models=mods,
            colors=colors,
            representations=reps,
        )
    if _present(tables, "score_distance"):
        have = set(tables["score_distance"]["n_bins"].astype(int))
        for n_bins in (5, 100):
            if n_bins in have:
                out[f"score_distance_{n_bins}"] = plot_score_distance(
                    tables["score_distance"],
                    n_bins=n_bins,
                    models=mods,
                    colors=colors,
                    representations=reps,
                    score_range=ctx.scale,
                )
    return out


SECTION = Section(
    "lipschitz",
    (
        Heading(
            "lipschitz",
            "Individual fairness: Lipschitz fraction",
            ("lipschitz", "distance_distribution", "relative_fairness", "error_review"),
        ),
        Heading(
            "score_distance", "Score difference vs. distance", ("score_distance", "trend")
        ),
    ),
    analysis=ANALYSIS,
    view=view,
    schema={
        "lipschitz": tuple(LIPSCHITZ_COLUMNS),
        "relative_fairness": tuple(RELATIVE_COLUMNS),
        "error_review": tuple(ERROR_REVIEW_COLUMNS),
        "score_distance": tuple(SCORE_DISTANCE_COLUMNS),
        "trend": tuple(TREND_COLUMNS),
        "distance_distribution": tuple(DISTRIBUTION_COLUMNS),
        "system_differences": tuple(DIFFERENCE_COLUMNS),
    },
    pool=pool,
    figures=figures,
    figure_names=(
        "lipschitz",
        "distance_distribution",
        "score_distance_5",
        "score_distance_100",
    ),  # fmt: skip
    color_keys=(
        ("lipschitz", "system"),
        ("score_distance", "system"),
        ("distance_distribution", "series"),
    ),
)
