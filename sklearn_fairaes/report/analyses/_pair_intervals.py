"""The lipschitz table's rows with their essay-level bootstrap intervals.

For one representation of one study: every scoring's Lipschitz fractions
(min-max, max and spread-matched) with the percentile intervals of their
replicates, all from one pass over the pairs
(:func:`~sklearn_fairaes.metrics._pairs._bootstrap_pairs.replicate_lipschitz_fractions`),
and the paired differences between every two scorings for the
``system_differences`` table. The replicates recount the pairs under the
full sample's normalisation (and, for the spread-matched fraction, its
``sd_h / sd_y``): the scale the audit reports is fixed, the pairs resampled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from .._study import PairSpace, Study
    from ._base import AnalysisOutput

#: The paper's two fractions, each with its normalisation.
_FIGURES = ("lipschitz_minmax", "lipschitz_max")


class Spread(NamedTuple):
    """One scoring's spread-aware figures, beside its Lipschitz counts."""

    matched: float
    n_matched: int
    score_sd: float
    score_sd_ci: tuple[float, float]
    human_sd: float


#: A scoring of one representation: name, scores, the two counts, its spread figures.
Scored = tuple[str, NDArray[np.float64], Mapping[str, Mapping[str, Any]], Spread]

#: The figures with replicates from the one pass over the pairs.
_PASS_FIGURES = (*_FIGURES, "lipschitz_matched")


def _lipschitz_rows(
    study: Study,
    rname: str,
    space: PairSpace,
    scored: list[Scored],
    out: AnalysisOutput,
    rows_diff: list[tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    """The lipschitz rows of one representation, with bootstrap intervals when on.

    All replicates (every scoring; min-max, max and spread-matched) come from
    one pass; their replicates go to ``out.replicates`` and the paired
    differences of every two scorings to ``rows_diff``.
    """
    from ...metrics._bootstrap import bootstrap_interval, paired_difference

    weights = study.bootstrap_weights()
    level = float(getattr(study.settings, "confidence_level", 0.95))
    reps: dict[tuple[str, str], NDArray[np.float64]] = {}
    if weights is not None and scored:
        reps = _replicates(study, space, weights, scored)
    estimates: dict[tuple[str, str], float] = {}
    rows = []
    for sname, _, counts, spread in scored:
        values = {
            "lipschitz_minmax": float(counts["minmax"]["fraction"]),
            "lipschitz_max": float(counts["max"]["fraction"]),
            "lipschitz_matched": spread.matched,
        }
        cells: list[Any] = [rname, sname]
        for figure in _PASS_FIGURES:
            estimates[(sname, figure)] = values[figure]
            r = reps.get((sname, figure))
            low, high = (math.nan, math.nan) if r is None else bootstrap_interval(r, level)
            if r is not None:
                out.replicates[("lipschitz", rname, sname, figure)] = r
            cells += [values[figure], low, high]
        cells += [
            spread.score_sd,
            *spread.score_sd_ci,
            spread.human_sd,
            int(counts["minmax"]["n_pairs"]),
            int(counts["minmax"]["n_satisfied"]),
            int(counts["max"]["n_satisfied"]),
            spread.n_matched,
        ]
        rows.append(tuple(cells))
    if reps:
        names = [name for name, _, _, _ in scored]
        # every two scorings once; "human" is last in study.scored, so it is system_b
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                for figure in _PASS_FIGURES:
                    key_a, key_b = (names[a], figure), (names[b], figure)
                    if key_a not in reps or key_b not in reps:
                        continue
                    diff = paired_difference(
                        estimates[key_a], estimates[key_b], reps[key_a], reps[key_b], level
                    )
                    rows_diff.append(
                        (rname, figure, names[a], names[b], diff.difference,
                         diff.ci_low, diff.ci_high, diff.p_value)
                    )  # fmt: skip
    return rows


def _replicates(
    study: Study,
    space: PairSpace,
    weights: NDArray[np.float64],
    scored: list[Scored],
) -> dict[tuple[str, str], NDArray[np.float64]]:
    """``{(scoring, figure): replicates}`` of one representation, from one pass.

    The normalisations are the full sample's, and so is the spread-matched
    figure's rescaling ``sd_h / sd_y``: a replicate recounts the pairs under
    the scale the audit reports, it does not re-estimate the scale.
    """
    import warnings

    from ...metrics._pairs._bootstrap_pairs import (
        LipschitzCondition,
        replicate_lipschitz_fractions,
    )
    from ...metrics._pairs._engine import as_engine
    from ...metrics._pairs._scaling import _outcome_range, _scaling

    engine = as_engine(
        space.pairs, metric=space.metric, block_size=None, n_jobs=study.settings.n_jobs
    )
    human = np.asarray(study.human, dtype=float)
    conditions, keys = [], []
    with warnings.catch_warnings():
        # the full sample's scalings: the metric already warned about them
        warnings.simplefilter("ignore")
        for sname, s, counts, spread in scored:
            for figure, normalize in zip(_FIGURES, ("minmax", "max")):
                c = counts[normalize]
                d_lo, d_hi = c["distance_range"] or (0.0, 0.0)
                o_lo, o_hi = c["outcome_range"]
                d_scaling = _scaling(float(d_lo), float(d_hi), normalize, "distance")
                o_scaling = _scaling(
                    float(o_lo), float(o_hi), normalize, "score difference"
                )
                conditions.append(LipschitzCondition(s, d_scaling, o_scaling, 1.0))
                keys.append((sname, figure))
            sd_y = float(np.std(s, ddof=1))
            if not (math.isfinite(spread.matched) and sd_y > 0):
                continue
            # the spread-matched condition (_spread.matched_lipschitz): scores
            # rescaled to the human SD, the humans' score-difference range
            d_lo, d_hi = counts["minmax"]["distance_range"] or (0.0, 0.0)
            conditions.append(
                LipschitzCondition(
                    s * (spread.human_sd / sd_y),
                    _scaling(float(d_lo), float(d_hi), "minmax", "distance"),
                    _scaling(*_outcome_range(human), "minmax", "score difference"),
                    1.0,
                )
            )
            keys.append((sname, "lipschitz_matched"))
    fractions = replicate_lipschitz_fractions(engine, weights, conditions)
    return dict(zip(keys, fractions))
