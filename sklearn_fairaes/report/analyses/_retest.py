"""Same essay, different score: test-retest consistency of the scorers you call (issue 34).

With ``repeats=K >= 2`` each scorer you call scores every essay K times
(``report._repeats``). An essay scored twice is a pair at distance 0 under
every representation: any difference between its scores breaks the
Lipschitz condition for every constant L, the most basic individual-fairness
violation. Per scorer (and prompt), the table ``"retest"`` gives

* ``share_differ``: the share of essays whose K scores are not all equal
  (compared exactly: one answer parsed twice is one number);
* ``mean_spread`` and ``max_spread``: the mean and largest spread
  (largest minus smallest of an essay's K scores), in score points;
* ``mean_sd``: the mean within-essay SD of the K scores (sample SD,
  ``ddof=1``);
* ``qwk_retest``: the QWK of repeat 1 against repeat 2, and
  ``qwk_retest_mean`` the mean QWK over all K(K-1)/2 pairs of repeats, with
  the audit's score points (``score_step``: a half-point scale keeps its half
  points; trimmed and rounded as the agreement table's QWK; the continuous
  QWK with ``score_step="continuous"``);
* ``n_repeat_pairs``, ``n_pairs_differ`` and ``retest_violation_share``:
  the K(K-1)/2 pairs of each essay's own repeats, those whose scores differ,
  and their share, which the ``"lipschitz"`` table repeats as its column
  ``retest_violation_share`` (beside, not mixed into, its fractions).

With the bootstrap on, the shares, the mean spread, the mean SD and both
QWKs have percentile intervals from the study's essay-level replicate
weights (an essay drawn twice counts twice; its K scores stay together).
The table ``"retest_essays"`` lists the ``n_review`` essays with the largest
spread (then SD), with their K scores and the human score: essays to review.
Essays whose scores all agree are never listed.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...resources import require
from .._cells import _mod, _num, _num_ci, _pct, _pct_ci, _present, _score, _table
from .._plots import _check_table
from ._base import AnalysisOutput, Heading, Section

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

    from .._study import Study

__all__ = ["ANALYSIS", "SECTION", "retest_statistics"]

RETEST_COLUMNS = (
    "system", "n_essays", "n_repeats",
    "share_differ", "share_differ_ci_low", "share_differ_ci_high",
    "mean_spread", "mean_spread_ci_low", "mean_spread_ci_high", "max_spread",
    "mean_sd", "mean_sd_ci_low", "mean_sd_ci_high",
    "qwk_retest", "qwk_retest_ci_low", "qwk_retest_ci_high",
    "qwk_retest_mean", "qwk_retest_mean_ci_low", "qwk_retest_mean_ci_high",
    "n_repeat_pairs", "n_pairs_differ", "retest_violation_share",
)  # fmt: skip
ESSAY_COLUMNS = ("system", "rank", "id", "row", "scores", "spread", "sd", "human")

#: Why the section is absent without repeats.
NO_REPEATS = (
    "each essay was scored once: give repeats=K (--repeats K, K >= 2) with a scorer "
    "you call (scorers= / --scorer) to score each essay K times"
)

_CI_FIGURES = ("share_differ", "mean_spread", "mean_sd", "qwk_retest", "qwk_retest_mean")


def _points(
    scores: NDArray[np.float64],
    score_range: tuple[float, float],
    score_step: float | str | None,
) -> tuple[NDArray[np.float64], tuple[int, int] | None]:
    """Scores as the agreement table's QWK sees them, and the QWK's ``score_range``.

    Trimmed to the scale (RSMTool's tolerance), then on the score points'
    positions (0 = the scale's low end, one per step) and rounded half to
    even; with ``"continuous"`` the trimmed scores and no points (None).
    """
    from ...metrics._agreement import TRIM_TOLERANCE

    lo, hi = (float(v) for v in score_range)
    unit = score_step if isinstance(score_step, float) else 1.0
    trimmed = np.clip(scores, lo - TRIM_TOLERANCE * unit, hi + TRIM_TOLERANCE * unit)
    if score_step == "continuous":
        return trimmed, None
    return np.rint((trimmed - lo) / unit), (0, round((hi - lo) / unit))


def _kappa(a: NDArray[np.float64], b: NDArray[np.float64], top: Any) -> float:
    from ...exceptions import UndefinedMetricWarning
    from ...metrics import qwk

    with warnings.catch_warnings():
        # every essay one same score in both repeats: undefined, NaN (a note says so)
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        if top is None:
            return float(qwk(a, b, rounding=None))
        return float(qwk(a, b, score_range=top))


def retest_statistics(
    scores: NDArray[np.float64],
    *,
    score_range: tuple[float, float],
    score_step: float | str | None = None,
    weights: NDArray[np.float64] | None = None,
) -> dict[str, Any]:
    """The test-retest figures of one scorer's ``(n_essays, K)`` scores.

    Parameters
    ----------
    scores : ndarray of shape (n_essays, n_repeats)
        Each essay's K scores (K >= 2).
    score_range : tuple of two float
        The score scale, for the QWKs.
    score_step : float, "continuous" or None, default=None
        As audit()'s: integer points (None), points ``low + k * step``, or
        the continuous QWK.
    weights : ndarray of shape (n_bootstrap, n_essays) or None, default=None
        Essay multiplicities of the bootstrap replicates.

    Returns
    -------
    figures : dict
        ``share_differ``, ``mean_spread``, ``max_spread``, ``mean_sd``,
        ``qwk_retest``, ``qwk_retest_mean``, ``n_repeat_pairs``,
        ``n_pairs_differ``, ``retest_violation_share``, per essay
        ``spread`` and ``sd``, and with ``weights`` ``replicates``: the
        replicates of the figures that have intervals.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report.analyses._retest import retest_statistics
    >>> scores = np.array([[2.0, 2, 2], [3, 4, 3], [1, 1, 2], [4, 4, 4]])
    >>> out = retest_statistics(scores, score_range=(0, 4))
    >>> out["share_differ"], out["max_spread"], out["n_pairs_differ"]
    (0.5, 1.0, 4)
    """
    from ...metrics._bootstrap import kappa_replicates

    s = np.asarray(scores, dtype=np.float64)
    n, k = s.shape
    # rounded past float noise (16.6147 - 14.6147 is not exactly 2), so that
    # equal spreads show and tie as equal
    spread = np.round(s.max(axis=1) - s.min(axis=1), 9)
    sd = s.std(axis=1, ddof=1)
    differ = (spread > 0).astype(np.float64)
    pairs = list(combinations(range(k), 2))
    pair_differ = np.stack([s[:, i] != s[:, j] for i, j in pairs], axis=1)
    points, top = _points(s, score_range, score_step)
    kappas = [_kappa(points[:, i], points[:, j], top) for i, j in pairs]
    defined = [x for x in kappas if not math.isnan(x)]
    out: dict[str, Any] = {
        "share_differ": float(differ.mean()),
        "mean_spread": float(spread.mean()),
        "max_spread": float(spread.max()),
        "mean_sd": float(sd.mean()),
        "qwk_retest": kappas[0],
        "qwk_retest_mean": float(np.mean(defined)) if defined else math.nan,
        "n_repeat_pairs": n * len(pairs),
        "n_pairs_differ": int(pair_differ.sum()),
        "retest_violation_share": float(pair_differ.mean()),
        "spread": spread,
        "sd": sd,
    }
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        total = w.sum(axis=1)
        reps = [kappa_replicates(points[:, i], points[:, j], w) for i, j in pairs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a replicate all undefined
            mean_reps = np.nanmean(np.stack(reps), axis=0)
        out["replicates"] = {
            "share_differ": (w @ differ) / total,
            "mean_spread": (w @ spread) / total,
            "mean_sd": (w @ sd) / total,
            "qwk_retest": reps[0],
            "qwk_retest_mean": mean_reps,
        }
    return out


def scores_text(scores: NDArray[np.float64]) -> str:
    """One essay's K scores as the ``scores`` cell: 4 decimals at most, in order.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report.analyses._retest import scores_text
    >>> scores_text(np.array([3.0, 9.49032, 10.5]))
    '3, 9.4903, 10.5'
    """
    return ", ".join(f"{v:.4f}".rstrip("0").rstrip(".") for v in scores)


class _Retest:
    """The ``retest`` and ``retest_essays`` tables of one study; see the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report._study import Settings, Study
    >>> from sklearn_fairaes.report.analyses._retest import ANALYSIS
    >>> study = Study(prompt="all", prompt_text=None, essays=["e"] * 4, ids=np.arange(4),
    ...               rows=np.arange(1, 5), human=np.array([2.0, 3, 1, 4]),
    ...               score_range=(0, 4), score_range_source="declared",
    ...               settings=Settings(n_bootstrap=0, repeats=3))
    >>> ANALYSIS.absent(study) is None
    False
    >>> study.repeats["llm"] = np.array([[2.0, 2, 2], [3, 4, 3], [1, 1, 2], [4, 4, 4]])
    >>> out = ANALYSIS.run(study)
    >>> out.tables["retest"][["system", "share_differ", "max_spread"]].values.tolist()
    [['llm', 0.5, 1.0]]
    >>> out.tables["retest_essays"]["id"].tolist()
    [1, 2]
    """

    name = "retest"

    def absent(self, study: Study) -> str | None:
        """Why the section cannot run: no repeats."""
        return None if study.repeats else NO_REPEATS

    def run(self, study: Study) -> AnalysisOutput:
        """Compute the two tables of the module docstring on one study."""
        from ...metrics._bootstrap import bootstrap_interval

        pd = require("pandas", purpose="the audit")
        level = float(study.settings.confidence_level)
        weights = study.bootstrap_weights()
        n_review = int(study.settings.n_review)
        ids = study.ids.tolist()
        out = AnalysisOutput()
        rows: list[tuple[Any, ...]] = []
        essays: list[tuple[Any, ...]] = []
        for sname, scores in study.repeats.items():
            # short answers: grades scaled to [0, 1], compared as continuous values
            short = study.short_answer
            fig = retest_statistics(
                scores,
                score_range=(0.0, 1.0) if short else study.score_range,
                score_step="continuous" if short else study.score_step,
                weights=weights,
            )
            reps = fig.get("replicates", {})
            ci: dict[str, tuple[float, float]] = {}
            for column in _CI_FIGURES:
                if column in reps:
                    ci[column] = bootstrap_interval(reps[column], level)
                    out.replicates[("retest", "", sname, column)] = reps[column]
                else:
                    ci[column] = (math.nan, math.nan)
            if math.isnan(fig["qwk_retest"]):
                out.notes.append(
                    f"{sname}: the test-retest QWK is undefined (every essay got one "
                    f"same score in both repeats)."
                )
            rows.append(
                (
                    sname,
                    study.n,
                    scores.shape[1],
                    fig["share_differ"],
                    *ci["share_differ"],
                    fig["mean_spread"],
                    *ci["mean_spread"],
                    fig["max_spread"],
                    fig["mean_sd"],
                    *ci["mean_sd"],
                    fig["qwk_retest"],
                    *ci["qwk_retest"],
                    fig["qwk_retest_mean"],
                    *ci["qwk_retest_mean"],
                    fig["n_repeat_pairs"],
                    fig["n_pairs_differ"],
                    fig["retest_violation_share"],
                )
            )
            spread, sd = fig["spread"], fig["sd"]
            order = np.lexsort((np.arange(study.n), -np.round(sd, 9), -spread))
            listed = [i for i in order if spread[i] > 0][:n_review]
            essays += [
                (
                    sname,
                    rank,
                    ids[i],
                    int(study.rows[i]),
                    scores_text(scores[i]),
                    float(spread[i]),
                    float(sd[i]),
                    float(study.human[i]),
                )
                for rank, i in enumerate(listed, start=1)
            ]
        out.tables = {
            "retest": pd.DataFrame(rows, columns=list(RETEST_COLUMNS)),
            "retest_essays": pd.DataFrame(essays, columns=list(ESSAY_COLUMNS)),
        }
        return out


ANALYSIS = _Retest()


def violation_shares(study: Study, systems: Sequence[Any]) -> list[float]:
    """The ``retest_violation_share`` of each of ``systems`` (NaN for one not repeated).

    The column the Lipschitz table gains with repeats: the share of each
    essay's pairs of repeats (distance 0) whose scores differ.
    """
    shares = {}
    for name, s in study.repeats.items():
        k = s.shape[1]
        differ = [s[:, i] != s[:, j] for i, j in combinations(range(k), 2)]
        shares[name] = float(np.mean(differ))
    return [shares.get(str(name), math.nan) for name in systems]


def pool(
    tables: dict[str, pd.DataFrame], studies: Sequence[Study]
) -> dict[str, pd.DataFrame]:
    """Pooled rows of the ``retest`` table, and of the Lipschitz table's retest column.

    Shares and means are weighted by essays (pairs of repeats, for the
    violation share); QWKs, the largest spread and the intervals are left
    empty (each prompt has its own scale).
    """
    pd = require("pandas", purpose="the audit")
    if not _present(tables, "retest"):
        return tables
    table = tables["retest"]
    pooled = []
    for sname, part in table.groupby("system", sort=False):
        n = part["n_essays"].astype(float)
        pairs = int(part["n_repeat_pairs"].sum())
        differ = int(part["n_pairs_differ"].sum())
        pooled.append(
            {
                "prompt": "pooled",
                "system": sname,
                "n_essays": int(n.sum()),
                "n_repeats": int(part["n_repeats"].iloc[0]),
                "share_differ": float(np.average(part["share_differ"], weights=n)),
                "mean_spread": float(np.average(part["mean_spread"], weights=n)),
                "max_spread": float(part["max_spread"].max()),
                "mean_sd": float(np.average(part["mean_sd"], weights=n)),
                "n_repeat_pairs": pairs,
                "n_pairs_differ": differ,
                "retest_violation_share": differ / pairs,
            }
        )
    tables["retest"] = pd.concat(
        [table, pd.DataFrame(pooled, columns=table.columns)], ignore_index=True
    )
    lip = tables.get("lipschitz")
    if lip is not None and "retest_violation_share" in lip.columns:
        share = {str(r["system"]): r["retest_violation_share"] for r in pooled}
        at = lip["prompt"] == "pooled"
        lip.loc[at, "retest_violation_share"] = [
            share.get(str(s), math.nan) for s in lip.loc[at, "system"]
        ]
    return tables


# --------------------------------------------------------------------------- view


def finding(row: Mapping[str, Any]) -> str:
    """The plain sentence on one scorer's repeats.

    Examples
    --------
    >>> from sklearn_fairaes.report.analyses._retest import finding
    >>> finding({"system": "llm", "n_essays": 200, "n_repeats": 3, "share_differ": 0.31,
    ...          "max_spread": 2.0, "qwk_retest": 0.91})
    'llm gave 31% of the 200 essays different scores in 3 scorings (largest spread 2 points; test-retest QWK 0.910).'
    """  # noqa: E501
    who, n, k = row["system"], int(row["n_essays"]), int(row["n_repeats"])
    if row["share_differ"] == 0:
        return f"{who} gave each of the {n} essays the same score in all {k} scorings."
    q = row["qwk_retest"]
    qwk_text = "undefined" if q != q else f"{q:.3f}"
    return (
        f"{who} gave {100 * row['share_differ']:.0f}% of the {n} essays different "
        f"scores in {k} scorings (largest spread {row['max_spread']:g} points; "
        f"test-retest QWK {qwk_text})."
    )


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The finding sentences, the figures per scorer and the essays to review."""
    out: dict[str, Any] = {"findings": [], "table": None, "essays": None}
    if not _present(tables, "retest"):
        return out
    table = tables["retest"]
    _check_table(table, "retest", ["system", "share_differ", "qwk_retest"])
    records = cast("list[dict[str, Any]]", table.to_dict("records"))
    out["findings"] = [finding(r) for r in records]

    def ci(r: Mapping[str, Any], f: str, pct: bool = False) -> Any:
        cell = _pct_ci if pct else _num_ci
        return cell(r.get(f), r.get(f"{f}_ci_low"), r.get(f"{f}_ci_high"))

    level = float(meta.get("confidence_level") or 0.95)
    out["table"] = _table(
        [
            "System",
            "Essays",
            "Scorings",
            "essays scored differently %",
            "mean spread",
            "largest spread",
            "mean SD",
            "QWK repeat 1 vs 2",
            "mean QWK over pairs",
            "repeat pairs differing %",
        ],
        [
            [
                _mod(r["system"]),
                _num(int(r["n_essays"])),
                _num(int(r["n_repeats"])),
                ci(r, "share_differ", pct=True),
                ci(r, "mean_spread"),
                _num(r["max_spread"]),
                ci(r, "mean_sd"),
                ci(r, "qwk_retest"),
                ci(r, "qwk_retest_mean"),
                _pct(r["retest_violation_share"]),
            ]
            for r in records
        ],
        caption="Each essay scored several times by each scorer you call (spread: "
        f"largest minus smallest score of an essay; {100 * level:g}% bootstrap "
        "intervals in brackets when the bootstrap is on)",
    )
    if _present(tables, "retest_essays"):
        essays = tables["retest_essays"]
        out["essays"] = _table(
            ["System", "Rank", "Essay id", "Data row", "Scores", "Spread", "SD", "Human"],
            [
                [
                    _mod(r["system"]),
                    _num(int(r["rank"])),
                    str(r["id"]),
                    _num(int(r["row"])),
                    str(r["scores"]),
                    _score(r["spread"]),
                    _num(r["sd"]),
                    _score(r["human"]),
                ]
                for r in cast("list[dict[str, Any]]", essays.to_dict("records"))
            ],
            caption="Essays to review: the largest spread between an essay's own scores",
        )
    return out


SECTION = Section(
    "retest",
    (Heading("retest", "Same essay, different score", ("retest", "retest_essays")),),
    analysis=ANALYSIS,
    view=view,
    schema={"retest": RETEST_COLUMNS, "retest_essays": ESSAY_COLUMNS},
    pool=pool,
    optional=True,
    default_reason=NO_REPEATS,
)
