"""Essays to review: who was scored unlike their near-duplicates (issue 17).

On one study (one prompt), for every representation and every scoring system
audited under it (given and fitted systems under every representation,
trained baselines under their own), and for the human scores (``"human"``:
rater monitoring, near-identical essays the raters scored far apart),

* ``"review_list"``: the essays with the largest gap between their score and
  the mean score of their ``n_neighbors`` nearest other essays
  (:func:`~sklearn_fairaes.metrics.essay_consistency`), at most ``n_review``
  per representation and system, largest ``|gap|`` first, with the human
  score, the essay's text and a sentence saying why it is listed. Essays
  scored exactly like their neighbours' mean are never listed;
* ``"review_neighbors"``: the nearest neighbours of each listed essay, one
  row per (listed essay, neighbour), nearest first, with their distances,
  scores, human scores and texts;
* ``"lipschitz_violations"``: the pairs whose normalised score difference
  exceeds their normalised distance the most
  (:func:`~sklearn_fairaes.metrics.lipschitz_violations`, min-max
  normalisation, ``L = 1``), at most ``n_review``, worst first;
* ``"essay_consistency"``: per representation and system, the consistency
  (``1 - mean |gap|``), the mean ``|gap|``, the number of essays listed,
  and the number of violating pairs among all pairs;
* ``"lipschitz_constants"``: the empirical Lipschitz constants, the smallest
  ``L`` at which 90, 95 and 99% of the pairs satisfy the condition
  (:func:`~sklearn_fairaes.metrics.lipschitz_profile`); comparable across
  representations, unlike the fraction at ``L = 1``;
* ``"lipschitz_profile"``: the whole curve (fraction of pairs satisfied vs.
  ``L``) that the report draws.

With the bootstrap on (``study.bootstrap_weights()``), the consistency and
each empirical constant get percentile intervals (``*_ci_low``,
``*_ci_high``; NaN when off). The consistency's replicates reweight the
gaps of each essay to its neighbours found once on the full sample (a
conditional approximation: re-searching neighbours in a resample would pair
an essay's copies at distance 0); the constants' replicates are the exact
weighted quantiles of the pairs' critical constants, each pair weighted
``w_i * w_j``, from one pass gathering the upper tail (private
``_pairs._bootstrap_quantiles``), with the full sample's normalisation.

Every pair is within the study: essays on different prompts are never paired.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ...resources import require
from .._cells import (
    Cell,
    _cell,
    _missing,
    _mod,
    _num,
    _num_ci,
    _ordered,
    _present,
    _rep,
    _score,
    _system_order,
    _table,
    _text,
)
from .._plots import (
    _PANEL_H,
    _PANEL_W,
    _check_table,
    _figure,
    _legend,
    _line_handles,
    _panel_axes,
    model_colors,
    model_label,
    representation_label,
)
from .._plots import _ordered as _pordered
from .._plots import _text as _ptext
from ._base import AnalysisOutput, FigureContext, Heading, Section
from ._common import PairAnalysis, noting, pair_notes, where

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from .._study import Study

__all__ = ["ANALYSIS", "ReviewAnalysis", "review_reason"]

#: The quantiles of the empirical Lipschitz constants.
QUANTILES = (0.9, 0.95, 0.99)

REVIEW_COLUMNS = [
    "representation", "system", "rank", "id", "data_row", "score", "human_score",
    "neighbor_mean", "gap", "mean_abs_diff", "max_abs_diff", "n_neighbors",
    "nearest_id", "nearest_distance", "farthest_neighbor_distance", "reason", "text",
]  # fmt: skip
NEIGHBOR_COLUMNS = [
    "representation", "system", "rank", "id", "neighbor_rank", "neighbor_id",
    "neighbor_data_row", "distance", "neighbor_score", "neighbor_human_score",
    "abs_diff", "neighbor_text",
]  # fmt: skip
VIOLATION_COLUMNS = [
    "representation", "system", "rank", "id_a", "id_b", "data_row_a", "data_row_b",
    "distance", "normalized_distance", "score_a", "score_b", "human_score_a",
    "human_score_b", "abs_diff", "normalized_diff", "violation", "text_a", "text_b",
]  # fmt: skip
CONSISTENCY_COLUMNS = [
    "representation", "system", "n", "n_neighbors", "consistency", "consistency_ci_low",
    "consistency_ci_high", "mean_abs_gap", "score_sd", "human_sd", "n_listed", "n_pairs",
    "n_violations",
]  # fmt: skip
CONSTANT_COLUMNS = [
    "representation", "system", "quantile", "lipschitz_constant",
    "lipschitz_constant_ci_low", "lipschitz_constant_ci_high",
]  # fmt: skip
PROFILE_COLUMNS = ["representation", "system", "lipschitz_constant", "fraction"]

# A gap this small is rounding, not a score unlike the neighbours'.
_GAP_TOLERANCE = 1e-9


def _number(value: float) -> str:
    """A score difference or distance for a sentence: at most 3 significant digits."""
    return f"{value:.3g}"


def review_reason(gap: float, n_neighbors: int, farthest: float) -> str:
    """Say why an essay is on the review list.

    Parameters
    ----------
    gap : float
        The essay's score minus the mean score of its nearest neighbours.
    n_neighbors : int
        How many neighbours the mean is over.
    farthest : float
        The distance of the farthest of those neighbours.

    Returns
    -------
    reason : str
        A sentence for the review list.

    Examples
    --------
    >>> review_reason(-3.2, 5, 0.1234)
    'scored 3.2 below the mean of its 5 nearest neighbours (distance <= 0.123)'
    >>> review_reason(1.0, 1, 0.05)
    'scored 1 above its nearest neighbour (distance 0.05)'
    """
    side = "below" if gap < 0 else "above"
    if n_neighbors == 1:
        return f"scored {_number(abs(gap))} {side} its nearest neighbour (distance {_number(farthest)})"
    return (
        f"scored {_number(abs(gap))} {side} the mean of its {n_neighbors} nearest "
        f"neighbours (distance <= {_number(farthest)})"
    )


class ReviewAnalysis(PairAnalysis):
    """Essays to review, worst pairs and empirical Lipschitz constants.

    See the module docstring for the tables. ``n_neighbors`` and ``n_review``
    come from the study's settings; a study with ``n_neighbors`` or fewer
    essays uses every other essay as neighbours, with a note. Notes also
    carry the pair metrics' UserWarnings (e.g. all distances equal) with the
    places they arose.

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
    ...     score_range_source="inferred", settings=Settings(n_neighbors=2, n_review=3),
    ...     systems={"engine": System("engine", "given", {None: human[::-1].copy()})},
    ...     spaces={"tfidf": PairSpace("tfidf", None, X, D, "precomputed", D)},
    ... )
    >>> out = ANALYSIS.run(study)
    >>> review = out.tables["review_list"]
    >>> sorted(set(review["system"])), int(review["rank"].max())
    (['engine', 'human'], 3)
    >>> out.tables["lipschitz_constants"]["quantile"].tolist()[:3]
    [0.9, 0.95, 0.99]
    """

    name = "review"

    def run(self, study: Study) -> AnalysisOutput:
        """Compute the tables of the module docstring on one study.

        Parameters
        ----------
        study : Study
            One prompt's essays, systems and pair spaces.

        Returns
        -------
        output : AnalysisOutput
            The tables (no ``prompt`` column), notes and warnings.
        """
        from ...metrics._review import _review_results

        pd = require("pandas", purpose="the audit")
        settings = study.settings
        n_jobs = settings.n_jobs
        n_review = int(settings.n_review)
        k = min(int(settings.n_neighbors), study.n - 1)
        out = AnalysisOutput()
        if k < settings.n_neighbors:
            out.notes.append(
                f"Essays to review: {study.n} essays, so each is compared with its {k} "
                f"other essays instead of the {settings.n_neighbors} nearest neighbours "
                f"asked for (n_neighbors)."
            )
        collected: dict[str, list[str]] = {}
        human = np.asarray(study.human, dtype=float)
        # numpy scalars (np.str_) as plain Python values in the tables
        ids, rows, texts = study.ids.tolist(), study.rows, study.essays
        rows_review: list[tuple[Any, ...]] = []
        rows_neighbors: list[tuple[Any, ...]] = []
        rows_violations: list[tuple[Any, ...]] = []
        rows_consistency: list[tuple[Any, ...]] = []
        rows_constants: list[tuple[Any, ...]] = []
        rows_profile: list[tuple[Any, ...]] = []
        for rname, space in study.spaces.items():
            pairs, metric = space.pairs, space.metric
            for sname, s in study.scored(rname).items():
                s = np.asarray(s, dtype=float)
                place = where(rname, sname)
                # the three metrics from one shared pass over the pairs (the
                # values of essay_consistency, lipschitz_violations and
                # lipschitz_profile called one by one)
                ec, lv, lp = noting(
                    collected,
                    place,
                    _review_results,
                    pairs,
                    s,
                    n_neighbors=k,
                    top=n_review,
                    quantiles=QUANTILES,
                    metric=metric,
                    n_jobs=n_jobs,
                )
                cons_ci, const_ci = _bootstrap_review(study, rname, sname, s, ec, lp, out)
                flagged = _flagged(ec, n_review)
                for rank, i in enumerate(flagged, start=1):
                    neighbors = np.asarray(ec.neighbors[i])
                    distances = np.asarray(ec.distances[i], dtype=float)
                    rows_review.append(
                        (
                            rname,
                            sname,
                            rank,
                            ids[i],
                            int(rows[i]),
                            float(s[i]),
                            float(human[i]),
                            float(ec.neighbor_mean[i]),
                            float(ec.gap[i]),
                            float(ec.mean_abs_diff[i]),
                            float(ec.max_abs_diff[i]),
                            k,
                            ids[neighbors[0]],
                            float(distances[0]),
                            float(distances[-1]),
                            review_reason(float(ec.gap[i]), k, float(distances[-1])),
                            texts[i],
                        )
                    )
                    rows_neighbors += [
                        (
                            rname,
                            sname,
                            rank,
                            ids[i],
                            r,
                            ids[j],
                            int(rows[j]),
                            float(distances[r - 1]),
                            float(s[j]),
                            float(human[j]),
                            float(abs(s[i] - s[j])),
                            texts[j],
                        )
                        for r, j in enumerate(neighbors.tolist(), start=1)
                    ]
                rows_violations += [
                    (
                        rname,
                        sname,
                        int(lv.rank[t]),
                        ids[a],
                        ids[b],
                        int(rows[a]),
                        int(rows[b]),
                        float(lv.distance[t]),
                        float(lv.normalized_distance[t]),
                        float(lv.score_i[t]),
                        float(lv.score_j[t]),
                        float(human[a]),
                        float(human[b]),
                        float(lv.abs_diff[t]),
                        float(lv.normalized_diff[t]),
                        float(lv.violation[t]),
                        texts[a],
                        texts[b],
                    )
                    for t, (a, b) in enumerate(
                        zip(np.asarray(lv.i).tolist(), np.asarray(lv.j).tolist())
                    )
                ]
                rows_consistency.append(
                    (
                        rname,
                        sname,
                        study.n,
                        k,
                        float(ec.consistency),
                        *cons_ci,
                        float(np.mean(np.abs(ec.gap))),
                        # the constants and the gaps are in score units: a
                        # compressed scale shrinks them without any fairer score
                        float(np.std(s, ddof=1)),
                        float(np.std(human, ddof=1)),
                        len(flagged),
                        int(lv.n_pairs),
                        int(lv.n_violations),
                    )
                )
                rows_constants += [
                    (rname, sname, float(q), float(c), *ci)
                    for q, c, ci in zip(lp.quantiles, lp.quantile_constants, const_ci)
                ]
                rows_profile += [
                    (rname, sname, float(c), float(f))
                    for c, f in zip(lp.curve_constant, lp.curve_fraction)
                ]
        out.notes += pair_notes(collected, label="Essays to review")
        out.tables = {
            "review_list": pd.DataFrame(rows_review, columns=REVIEW_COLUMNS),
            "review_neighbors": pd.DataFrame(rows_neighbors, columns=NEIGHBOR_COLUMNS),
            "lipschitz_violations": pd.DataFrame(
                rows_violations, columns=VIOLATION_COLUMNS
            ),
            "essay_consistency": pd.DataFrame(
                rows_consistency, columns=CONSISTENCY_COLUMNS
            ),
            "lipschitz_constants": pd.DataFrame(rows_constants, columns=CONSTANT_COLUMNS),
            "lipschitz_profile": pd.DataFrame(rows_profile, columns=PROFILE_COLUMNS),
        }
        return out


def _constant_column(q: float) -> str:
    """The replicates' column name of the constant at share ``q`` (one row per share)."""
    return f"lipschitz_constant[q={q:g}]"


def _bootstrap_review(
    study: Study,
    rname: str,
    sname: str,
    s: NDArray[np.float64],
    ec: Any,
    lp: Any,
    out: AnalysisOutput,
) -> tuple[tuple[float, float], list[tuple[float, float]]]:
    """Intervals of the consistency and of each empirical constant (NaN when off).

    The consistency's replicates weight the gaps found once on the full
    sample (:func:`~sklearn_fairaes.metrics._review.consistency_replicates`:
    the neighbours are not searched again in each replicate, where an
    essay's copies would be each other's neighbours). The constants'
    replicates are the weighted quantiles of the pairs' critical constants,
    exact, from one gathering pass over the upper tail
    (``_pairs._bootstrap_quantiles``), with the full sample's normalisation.
    Replicates go to ``out.replicates`` under ``("essay_consistency", ...,
    "consistency")`` and ``("lipschitz_constants", ...,
    "lipschitz_constant[q=0.95]")`` (one per share).
    """
    import warnings

    from ...metrics._bootstrap import bootstrap_interval
    from ...metrics._pairs._bootstrap_quantiles import replicate_quantile_constants
    from ...metrics._pairs._engine import as_engine
    from ...metrics._pairs._scaling import _scaling
    from ...metrics._review import consistency_replicates

    nan = (math.nan, math.nan)
    weights = study.bootstrap_weights()
    quantiles = [float(q) for q in lp.quantiles]
    if weights is None:
        return nan, [nan] * len(quantiles)
    level = float(getattr(study.settings, "confidence_level", 0.95))
    cons = consistency_replicates(np.asarray(ec.gap, dtype=float), weights)
    out.replicates[("essay_consistency", rname, sname, "consistency")] = cons
    space = study.spaces[rname]
    engine = as_engine(
        space.pairs, metric=space.metric, block_size=None, n_jobs=study.settings.n_jobs
    )
    (d_lo, d_hi), (o_lo, o_hi) = lp.distance_range, lp.outcome_range
    with warnings.catch_warnings():  # the profile already warned about them
        warnings.simplefilter("ignore")
        d_scaling = _scaling(float(d_lo), float(d_hi), "minmax", "distance")
        o_scaling = _scaling(float(o_lo), float(o_hi), "minmax", "score difference")
    full = np.asarray(lp.quantile_constants, dtype=float)
    positive = full[(full > 0) & np.isfinite(full)]
    # start below the full sample's smallest constant: most replicates' lie above
    start = 0.75 * float(positive.min()) if positive.size else 0.0
    reps = replicate_quantile_constants(
        engine, np.asarray(s, dtype=float), weights, quantiles, d_scaling, o_scaling, start
    )
    if reps is None:
        out.notes.append(
            f"Essays to review, {where(rname, sname)}: the upper tail of the pairs' "
            f"critical constants is too large to bootstrap the empirical Lipschitz "
            f"constants; their intervals are left empty."
        )
        return bootstrap_interval(cons, level), [nan] * len(quantiles)
    for q, r in zip(quantiles, reps):
        out.replicates[("lipschitz_constants", rname, sname, _constant_column(q))] = r
    return bootstrap_interval(cons, level), [bootstrap_interval(r, level) for r in reps]


def _flagged(ec: Any, n_review: int) -> list[int]:
    """The positions of the essays to review: largest ``|gap|`` first, gap not 0."""
    order = np.asarray(ec.review_order)[:n_review]
    gap = np.abs(np.asarray(ec.gap, dtype=float))
    keep: NDArray[np.intp] = order[gap[order] > _GAP_TOLERANCE]
    return [int(i) for i in keep]


ANALYSIS = ReviewAnalysis()


# --------------------------------------------------------------------------- view


#: Essays shown with their texts per representation and system in the
#: report (the tables hold all of them), and rows of the listings.
REVIEW_ESSAYS_SHOWN = 3


REVIEW_ROWS_SHOWN = 10


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


def view(
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
            (str(c["representation"]), str(c["system"]), float(c["quantile"])): _num_ci(
                c["lipschitz_constant"],
                c.get("lipschitz_constant_ci_low"),
                c.get("lipschitz_constant_ci_high"),
            )
            for c in constants.to_dict("records")
        }
        consistency = _consistency_cells(tables.get("essay_consistency"))
        spread = _spread_cells(tables.get("essay_consistency"))
        rows = []
        for r in _ordered(constants["representation"], reps_pref):
            sub = constants[constants["representation"].astype(str) == r]
            for m in _ordered(sub["system"], systems, last=("human",)):
                row = [_rep(r), _mod(m)] + [_cell(cells.get((r, m, q))) for q in quantiles]
                if consistency:
                    row.append(_cell(consistency.get((r, m))))
                if spread:
                    row.append(_cell(spread.get((r, m))))
                rows.append(row)
        with_ci = "lipschitz_constant_ci_low" in constants and bool(
            constants["lipschitz_constant_ci_low"].notna().any()
        )
        out["constants"] = _table(
            ["Representation", "System"]
            + [f"L at {100 * q:g}% of pairs" for q in quantiles]
            + (["Consistency (1 − mean |gap|)"] if consistency else [])
            + (["Score SD (human SD)"] if spread else []),
            rows,
            caption="Empirical Lipschitz constants: the smallest L at which the share "
            "of pairs satisfying the condition reaches 90, 95 and 99% (min–max "
            "normalisation; ∞: near-identical essays with different scores); the "
            "score SD beside them, since a system that compresses its scores gets "
            "smaller constants and gaps without scoring similar essays more alike (the "
            "Lipschitz section's spread-matched figures compare systems)"
            + (
                "; essay-level bootstrap intervals in brackets (the consistency's "
                "with each essay's neighbours found once, on all essays)"
                if with_ci
                else ""
            ),
        )
    return out


def _consistency_cells(table: pd.DataFrame | None) -> dict[tuple[str, str], Any]:
    """``(representation, system)`` -> the consistency with its interval, if any."""
    if table is None or not len(table) or "consistency" not in table:
        return {}
    return {
        (str(c["representation"]), str(c["system"])): _num_ci(
            c["consistency"], c.get("consistency_ci_low"), c.get("consistency_ci_high")
        )
        for c in table.to_dict("records")
    }


def _spread_cells(table: pd.DataFrame | None) -> dict[tuple[str, str], Any]:
    """``(representation, system)`` -> "score SD (human SD)", if the table has them."""
    if table is None or not len(table) or "score_sd" not in table:
        return {}
    return {
        (str(c["representation"]), str(c["system"])): Cell(
            f"{float(c['score_sd']):.3f} ({float(c['human_sd']):.3f})", numeric=True
        )
        for c in table.to_dict("records")
        if not (_missing(c["score_sd"]) or _missing(c["human_sd"]))
    }


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


# --------------------------------------------------------------------------- figures


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
    >>> from sklearn_fairaes.report.analyses._review import plot_lipschitz_profile
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
    reps = _pordered(profile["representation"], representations)
    mods = _pordered(profile["system"], models, last=("human",))
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
        ax.set_title(_ptext(representation_label(r)))
        if i + ncols >= len(reps):
            ax.set_xlabel("Lipschitz constant L (log scale; dashed: L = 1)")
        if i % ncols == 0:
            ax.set_ylabel("Pairs satisfying the condition (%)")
        ax.grid(alpha=0.3, which="both")
    fig.suptitle("Lipschitz profile: share of pairs satisfied vs. L (dotted: 90/95/99%)")
    _legend(fig, _line_handles(colors, mods), [_ptext(model_label(m)) for m in mods])
    return fig


def figures(tables: Mapping[str, pd.DataFrame], ctx: FigureContext) -> dict[str, Figure]:
    """The Lipschitz profile: the share of pairs each constant would make fair."""
    if not _present(tables, "lipschitz_profile"):
        return {}
    return {
        "lipschitz_profile": plot_lipschitz_profile(
            tables["lipschitz_profile"],
            models=ctx.systems,
            colors=ctx.colors,
            representations=ctx.representations,
        )
    }


SECTION = Section(
    "review",
    (
        Heading(
            "review",
            "Essays to review",
            (
                "review_list",
                "lipschitz_violations",
                "lipschitz_constants",
                "lipschitz_profile",
            ),
        ),
    ),
    analysis=ANALYSIS,
    view=view,
    schema={
        "review_list": tuple(REVIEW_COLUMNS),
        "review_neighbors": tuple(NEIGHBOR_COLUMNS),
        "lipschitz_violations": tuple(VIOLATION_COLUMNS),
        "essay_consistency": tuple(CONSISTENCY_COLUMNS),
        "lipschitz_constants": tuple(CONSTANT_COLUMNS),
        "lipschitz_profile": tuple(PROFILE_COLUMNS),
    },
    figures=figures,
    figure_names=("lipschitz_profile",),
    color_keys=(("lipschitz_profile", "system"),),
    optional=True,
    # audits before issue 17 gave no review tables
    default_reason="the audit gave no review tables (review_list, lipschitz_violations, "
    "lipschitz_constants)",
)
