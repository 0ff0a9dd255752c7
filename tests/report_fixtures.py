"""Synthetic audit results for the report renderers' tests.

:func:`make_audit_tables` builds a ``tables`` dict and a ``meta`` dict laid
out exactly as in the audit's data contract of issue 16 (``AuditResult.tables``
and ``AuditResult.meta``: every table has ``prompt`` first, ``system`` in
place of ``model``, pooled rows with several prompts), built by hand from
seeded random numbers with plausible magnitudes (QWK around 0.7, Lipschitz
fractions between 0.5 and 1, score differences growing with distance).
Nothing here is computed by the package: the renderers must only arrange
numbers, so made-up but well-formed numbers are what their tests need.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sklearn_fairaes.features import FEATURE_NAMES
from sklearn_fairaes.features._interpretable import PROMPT_FEATURES
from sklearn_fairaes.report.analyses import SECTIONS

# the package's own feature list: the fixture follows it when it changes
FEATURES = FEATURE_NAMES

#: Columns of every table of the contract, in order: the sections' own schema
#: ("features" and "predictions" depend on the run and are checked separately;
#: the essays to review are not in these synthetic audits).
_CONTRACT = {
    name: list(columns)
    for section in SECTIONS
    if section.id != "review"
    for name, columns in section.schema.items()
}
CONTRACT_COLUMNS = {name: ["prompt", *columns] for name, columns in _CONTRACT.items()}

#: The tables of a short-answer audit only.
SHORT_ANSWER_TABLES = ("grading", "reference_coverage")

#: The tables of an audit with repeats only (tests/test_repeats.py renders them).
RETEST_TABLES = ("retest", "retest_essays")

#: Why the counterfactual audit is absent with given scores only.
SCORES_ONLY = (
    "scores only: no model to re-score the edited essays; give --model-file or train "
    "a baseline with --models"
)

#: The tables that exist only with a group column.
GROUP_TABLES = (
    "group_agreement", "group_fairness", "group_fairness_coefficients", "group_lipschitz",
)  # fmt: skip

META_KEYS = (
    "title", "n_essays", "score_min", "score_max", "text_col", "score_col", "rater_cols",
    "group_col", "prompt_given", "representations", "models", "cv", "random_state",
    "features", "omitted_features", "paraphrase_source", "sbert_model", "versions",
    "started", "seconds", "notes", "prompts", "prompt_col", "systems", "score_ranges",
    "score_range", "score_range_source", "absent_sections", "short_answer", "warnings",
)  # fmt: skip

HOSTILE_TEXT = (
    'My essay <script>alert(1)</script> says "patience" & <b>waiting</b> '
    "matters; it's <img src=x onerror=alert(2)> fine."
)

_WORDS = (
    "patience waiting mother store line hour friend brother doctor office game "
    "time calm quiet bus school teacher test long day finally happy angry ball "
    "dog park rain storm car trip grandma summer fish lake"
).split()


def _essay(rng, n_words):
    words = rng.choice(_WORDS, size=n_words)
    sentences = [
        " ".join(words[i : i + 9]).capitalize() + "." for i in range(0, n_words, 9)
    ]
    return " ".join(sentences)


def make_audit_tables(
    representations=("bow", "tfidf", "sbert"),
    models=("ridge", "random_forest", "gradient_boosting"),
    *,
    given=(),
    prompts=None,
    n_essays=40,
    k=3,
    raters=True,
    groups=("female", "male"),
    prompt_given=False,
    language_tool=False,
    paraphrase=True,
    perturbations=("typos", "sentence_shuffle", "word_salad"),
    short_answer=False,
    score_range=(2, 24),
    declared=False,
    hostile_text=HOSTILE_TEXT,
    seed=0,
):
    """A realistic synthetic ``(tables, meta)`` pair following the audit contract.

    Parameters
    ----------
    representations, models : tuple of str
        What the fake audit "ran": ``models`` are trained baselines.
    given : tuple of str
        Systems whose scores were given (audited under every representation;
        their agreement rows have representation ``""``).
    prompts : tuple of str or None
        Prompt ids; None is one prompt (``"all"``, no prompt column in the
        data). With several, each prompt gets its own rows and the agreement
        and lipschitz tables get ``"pooled"`` rows.
    n_essays : int
        Essays per prompt (pairs: ``n_essays * (n_essays - 1) / 2``).
    k : int
        Extreme pairs per end and representation.
    raters : bool
        With two rater columns (``human_agreement`` table, degradation values).
    groups : tuple of str or None
        Student groups (the four group tables, :data:`GROUP_TABLES`); None
        leaves them out.
    prompt_given, language_tool : bool
        Without them, the prompt features / ``language_errors`` are omitted
        and ``meta["omitted_features"]`` says why.
    paraphrase : bool
        With a ``paraphrase`` table.
    perturbations : tuple of str or None
        Edits of the counterfactual audit (``perturbation`` and
        ``perturbation_examples`` tables, trained models only); None leaves
        them out. With given systems only, the audit is absent and
        ``meta["absent_sections"]`` says :data:`SCORES_ONLY`.
    short_answer : bool
        With the :data:`SHORT_ANSWER_TABLES`.
    score_range : (int, int)
        The score scale of every prompt; ``declared`` says whether it was
        declared or inferred.
    hostile_text : str or None
        Text of essay 0, which is essay A of every representation's nearest
        pair; None keeps a generated text.
    seed : int
        Seed of all random numbers.
    """
    rng = np.random.default_rng(seed)
    reps, mods, given = list(representations), list(models), list(given)
    ids_prompts = [str(p) for p in prompts] if prompts else ["all"]
    multi = len(ids_prompts) > 1

    omitted = []
    features = list(FEATURES)
    if not prompt_given:
        omitted += [
            {"feature": f, "reason": "no prompt given: prompt-based features omitted"}
            for f in PROMPT_FEATURES
        ]
    if not language_tool:
        omitted.append(
            {
                "feature": "language_errors",
                "reason": "no LanguageTool: language_errors omitted",
            }
        )
    dropped = {o["feature"] for o in omitted}
    features = [f for f in features if f not in dropped]
    with_edits = bool(perturbations) and bool(mods)

    parts = []
    for index, prompt in enumerate(ids_prompts):
        prefix = f"P{index + 1}-" if multi else ""
        parts.append(
            (
                prompt,
                _prompt_tables(
                    rng,
                    reps,
                    mods,
                    given,
                    features,
                    n_essays=n_essays,
                    k=k,
                    raters=raters,
                    groups=groups,
                    paraphrase=paraphrase,
                    perturbations=perturbations if with_edits else None,
                    short_answer=short_answer,
                    score_range=score_range,
                    hostile_text=hostile_text,
                    id_prefix=prefix,
                    row_offset=index * n_essays,
                ),
            )
        )
    tables = {}
    for name in parts[0][1]:
        tables[name] = pd.concat(
            [t[name].assign(prompt=p) for p, t in parts], ignore_index=True
        )
        columns = ["prompt", *[c for c in tables[name].columns if c != "prompt"]]
        tables[name] = tables[name][columns]
    if multi:
        _add_pooled(tables)

    notes = []
    if not prompt_given:
        notes.append(
            "No prompt was given, so the four prompt-based features were left out."
        )
    if not language_tool:
        notes.append("LanguageTool was not reachable: language_errors was left out.")
    absent = {}
    if not groups:
        absent["groups"] = "no group column was given"
    if perturbations and not mods:
        absent["counterfactual"] = SCORES_ONLY
    elif not perturbations:
        absent["counterfactual"] = "no perturbations were requested"
    if not paraphrase:
        absent["paraphrase"] = "no paraphrases were given or generated"
    source = "declared" if declared else "inferred"
    systems = {name: {"kind": "given", "description": f"column {name}"} for name in given}
    systems.update({m: {"kind": "trained", "description": ""} for m in mods})
    meta = {
        "title": "Individual-fairness audit of synthetic essays",
        "n_essays": n_essays * len(ids_prompts),
        "score_min": score_range[0],
        "score_max": score_range[1],
        "text_col": "essay",
        "score_col": "domain1_score",
        "rater_cols": ["rater1_domain1", "rater2_domain1"] if raters else None,
        "group_col": "gender" if groups else None,
        "prompt_given": bool(prompt_given),
        "representations": reps,
        "models": mods,
        "cv": 5,
        "random_state": 0,
        "features": features,
        "omitted_features": omitted,
        "paraphrase_source": "WordNetParaphraser" if paraphrase else None,
        "sbert_model": "all-MiniLM-L6-v2" if "sbert" in reps else None,
        "versions": {
            "sklearn_fairaes": "0.1.0",
            "scikit-learn": "1.9.1",
            "numpy": "2.4.0",
            "python": "3.11.2",
        },
        "started": "2025-01-01T12:00:00+00:00",
        "seconds": 123.4,
        "notes": notes,
        "prompts": ids_prompts,
        "prompt_col": "essay_set" if prompts else None,
        "systems": systems,
        "score_ranges": {p: [*score_range, source] for p in ids_prompts},
        "score_range": list(score_range),
        "score_range_source": source,
        "absent_sections": absent,
        "short_answer": bool(short_answer),
        "warnings": [],
    }
    return tables, meta


def _fisher_mean(values):
    """Mean of correlations on Fisher's z scale (as ``mean_qwk``), by hand."""
    z = np.arctanh(np.clip(np.asarray(values, dtype=float), -0.999999, 0.999999))
    return float(np.tanh(z.mean()))


def _add_pooled(tables):
    """The pooled rows of an audit of several prompts (prompt ``"pooled"``)."""
    agreement = tables["agreement"]
    pooled = []
    for (r, m), part in agreement.groupby(["representation", "system"], sort=False):
        row = {c: np.nan for c in agreement.columns}
        qwk = _fisher_mean(part["qwk"])
        row.update(
            prompt="pooled",
            representation=r,
            system=m,
            kind=part["kind"].iloc[0],
            n=int(part["n"].sum()),
            n_outside_scale=int(part["n_outside_scale"].sum()),
            qwk=qwk,
            qwk_ok=qwk >= 0.70,
        )
        pooled.append(row)
    tables["agreement"] = pd.concat([agreement, pd.DataFrame(pooled)], ignore_index=True)
    lipschitz = tables["lipschitz"]
    pooled = []
    for (r, m), part in lipschitz.groupby(["representation", "system"], sort=False):
        pairs = int(part["n_pairs"].sum())
        sat_minmax = int(part["n_satisfied_minmax"].sum())
        sat_max = int(part["n_satisfied_max"].sum())
        pooled.append(
            {
                "prompt": "pooled",
                "representation": r,
                "system": m,
                "lipschitz_minmax": sat_minmax / pairs,
                "lipschitz_max": sat_max / pairs,
                "n_pairs": pairs,
                "n_satisfied_minmax": sat_minmax,
                "n_satisfied_max": sat_max,
                "n_satisfied_matched": int(part["n_satisfied_matched"].sum()),
                "lipschitz_matched": part["n_satisfied_matched"].sum() / pairs,
            }
        )
    tables["lipschitz"] = pd.concat([lipschitz, pd.DataFrame(pooled)], ignore_index=True)
    if "grading" in tables:
        grading = tables["grading"]
        pooled = [
            {
                "prompt": "pooled",
                "representation": r,
                "system": m,
                "n": int(part["n"].sum()),
                "rmse": float(part["rmse"].mean()),
                "wrmse": float(part["wrmse"].mean()) * 1.1,
            }
            for (r, m), part in grading.groupby(["representation", "system"], sort=False)
        ]
        tables["grading"] = pd.concat([grading, pd.DataFrame(pooled)], ignore_index=True)


def _prompt_tables(
    rng,
    reps,
    mods,
    given,
    features,
    *,
    n_essays,
    k,
    raters,
    groups,
    paraphrase,
    perturbations,
    short_answer,
    score_range,
    hostile_text,
    id_prefix,
    row_offset,
):
    """One prompt's tables, without the prompt column."""
    ids = [f"{id_prefix}E{i:04d}" for i in range(n_essays)]
    texts = [_essay(rng, int(rng.integers(40, 160))) for _ in range(n_essays)]
    if hostile_text is not None:
        texts[0] = hostile_text
    score_min, score_max = score_range
    scores = rng.integers(score_min, score_max + 1, size=n_essays)
    n_pairs = n_essays * (n_essays - 1) // 2
    systems = [*given, *mods]

    tables = {}
    raw = rng.gamma(2.0, 20.0, size=(n_essays, len(features)))
    tables["features"] = pd.DataFrame({"id": ids, **dict(zip(features, raw.T))})
    preds = {"id": ids, "score": scores}
    for g in given:
        preds[g] = np.clip(scores + rng.integers(-2, 3, n_essays), score_min, score_max)
    for r in reps:
        for m in mods:
            preds[f"{r}+{m}"] = np.round(scores + rng.normal(0, 2.0, n_essays), 3)
    tables["predictions"] = pd.DataFrame(preds)

    rows = []
    agreement_rows = [("", g, "given") for g in given]
    agreement_rows += [(r, m, "trained") for r in reps for m in mods]
    for r, m, kind in agreement_rows:
        qwk = float(rng.uniform(0.55, 0.80))
        hh = 0.72148 if raters else np.nan
        degradation = hh - qwk
        smd = float(rng.normal(0, 0.08))
        rows.append(
            {
                "representation": r,
                "system": m,
                "kind": kind,
                "n": n_essays,
                "n_outside_scale": 0,
                "qwk": qwk,
                "qwk_truncated": qwk - float(rng.uniform(0, 0.02)),
                "human_human_qwk": hh,
                "degradation": degradation,
                "smd": smd,
                "abs_smd_paper": abs(smd) * 1.01,
                "exact_agreement": float(rng.uniform(0.2, 0.4)),
                "adjacent_agreement": float(rng.uniform(0.5, 0.8)),
                "pearson_r": float(rng.uniform(0.6, 0.85)),
                "prmse": float(rng.uniform(0.6, 0.8)) if raters else np.nan,
                "prmse_ci_low": np.nan,
                "prmse_ci_high": np.nan,
                "qwk_ok": qwk >= 0.70,
                "degradation_ok": bool(raters and degradation <= 0.10),
                "smd_ok": abs(smd) <= 0.15,
                # bootstrap intervals around the headline figures
                "qwk_ci_low": qwk - 0.03,
                "qwk_ci_high": qwk + 0.03,
                "degradation_ci_low": degradation - 0.03,
                "degradation_ci_high": degradation + 0.03,
                "smd_ci_low": smd - 0.05,
                "smd_ci_high": smd + 0.05,
            }
        )
        rows[-1]["acceptable"] = bool(
            rows[-1]["qwk_ok"] and rows[-1]["degradation_ok"] and rows[-1]["smd_ok"]
        )
    tables["agreement"] = pd.DataFrame(rows)[_CONTRACT["agreement"]]
    first = rows[0]
    differences = [
        (first["representation"], figure, first["system"], other["system"], 0.01,
         -0.02, 0.04, 0.48)
        for other in rows[1:3]
        for figure in ("qwk", "abs_smd")
    ]  # fmt: skip
    tables["confusion"] = pd.DataFrame(
        [(r, m, float(h), float(h + d), 3) for r, m, _ in agreement_rows
         for h in range(2, 5) for d in (-1, 0, 1)],
        columns=["representation", "system", "human_score", "system_score", "count"],
    )  # fmt: skip
    if raters:
        tables["human_agreement"] = pd.DataFrame(
            [
                {
                    "rater1": "rater1_domain1",
                    "rater2": "rater2_domain1",
                    "qwk": 0.72148,
                    "exact_agreement": 0.31,
                    "adjacent_agreement": 0.74,
                    "n": n_essays,
                }
            ]
        )

    outcome_series = [*systems, "human"]
    rows = []
    for r in reps:
        for m in outcome_series:
            minmax = float(rng.uniform(0.5, 0.99))
            share_max = min(1.0, minmax + float(rng.uniform(0, 0.05)))
            rows.append(
                {
                    "representation": r,
                    "system": m,
                    "lipschitz_minmax": round(minmax * n_pairs) / n_pairs,
                    "lipschitz_minmax_ci_low": max(0.0, minmax - 0.02),
                    "lipschitz_minmax_ci_high": min(1.0, minmax + 0.02),
                    "lipschitz_max": round(share_max * n_pairs) / n_pairs,
                    "lipschitz_max_ci_low": max(0.0, share_max - 0.02),
                    "lipschitz_max_ci_high": min(1.0, share_max + 0.02),
                    "n_pairs": n_pairs,
                    "n_satisfied_minmax": round(minmax * n_pairs),
                    "n_satisfied_max": round(share_max * n_pairs),
                }
            )
    # the spread-aware columns from a generator of their own, so that the other
    # tables' values do not change with them
    spread = np.random.default_rng(33)
    rel_rows, err_rows = [], []
    for row in rows:
        matched = float(spread.uniform(0.5, 0.99))
        sd = 4.6 if row["system"] == "human" else float(spread.uniform(3.0, 5.0))
        row.update(
            lipschitz_matched=round(matched * n_pairs) / n_pairs,
            lipschitz_matched_ci_low=max(0.0, matched - 0.02),
            lipschitz_matched_ci_high=min(1.0, matched + 0.02),
            score_sd=sd,
            score_sd_ci_low=sd - 0.2,
            score_sd_ci_high=sd + 0.2,
            human_sd=4.6,
            n_satisfied_matched=round(matched * n_pairs),
        )
        if row["system"] == "human":
            continue
        ratio, incons = float(spread.uniform(0.8, 1.3)), float(spread.uniform(0.3, 0.8))
        rel_rows.append(
            {
                "representation": row["representation"],
                "system": row["system"],
                "n": n_essays,
                "n_neighbors": 10,
                "score_sd": sd,
                "human_sd": 4.6,
                "neighbor_spread": 0.8 * ratio,
                "human_neighbor_spread": 0.8,
                "neighbor_spread_ratio": ratio,
                "neighbor_spread_ratio_ci_low": ratio - 0.05,
                "neighbor_spread_ratio_ci_high": ratio + 0.05,
                "error_inconsistency": incons,
                "error_inconsistency_ci_low": incons - 0.04,
                "error_inconsistency_ci_high": incons + 0.04,
            }
        )
        for rank in range(1, 8):
            error = float(spread.integers(-4, 5))
            neighbours = float(spread.uniform(-1, 1))
            err_rows.append(
                {
                    "representation": row["representation"],
                    "system": row["system"],
                    "rank": rank,
                    "id": 1000 + rank,
                    "row": rank,
                    "score": 10.0 + error,
                    "human": 10.0,
                    "error": error,
                    "neighbor_mean_error": neighbours,
                    "error_gap": error - neighbours,
                }
            )
    tables["lipschitz"] = pd.DataFrame(rows, columns=list(_CONTRACT["lipschitz"]))
    tables["relative_fairness"] = pd.DataFrame(
        rel_rows, columns=list(_CONTRACT["relative_fairness"])
    )
    tables["error_review"] = pd.DataFrame(err_rows, columns=list(_CONTRACT["error_review"]))
    differences += [
        (r, figure, systems[0], "human", 0.02, 0.01, 0.03, 0.002)
        for r in reps
        for figure in ("lipschitz_minmax", "lipschitz_max", "lipschitz_matched")
    ]
    tables["system_differences"] = pd.DataFrame(
        differences, columns=_CONTRACT["system_differences"]
    )

    rows, trend = [], []
    for r in reps:
        for m in outcome_series:
            for n_bins in (5, 100):
                edges = np.linspace(0, 1, n_bins + 1)
                base = rng.uniform(1.5, 3.0)
                slope = rng.uniform(0.5, 3.5)
                mean = base + slope * edges[1:] + rng.normal(0, 0.1, n_bins)
                for b in range(n_bins):
                    rows.append(
                        {
                            "representation": r,
                            "system": m,
                            "n_bins": n_bins,
                            "bin": b + 1,
                            "n_pairs": n_pairs // n_bins,
                            "distance_min": edges[b],
                            "distance_max": edges[b + 1],
                            "mean_abs_diff": float(mean[b]),
                            "se": float(rng.uniform(0.02, 0.2)),
                        }
                    )
                trend.append(
                    {
                        "representation": r,
                        "system": m,
                        "n_bins": n_bins,
                        "spearman_rho": float(rng.uniform(0.3, 1.0)),
                        "spearman_pvalue": float(rng.uniform(0, 0.05)) ** 2,
                    }
                )
    tables["score_distance"] = pd.DataFrame(rows)
    tables["trend"] = pd.DataFrame(trend)

    rows = []
    edges = np.linspace(0, 1, 51)
    for r in reps:
        for s, (a, b) in [("distance", (5, 2))] + [(m, (2, 5)) for m in outcome_series]:
            density, _ = np.histogram(rng.beta(a, b, 2000), bins=edges, density=True)
            rows += [
                {
                    "representation": r,
                    "series": s,
                    "bin_left": edges[i],
                    "bin_right": edges[i + 1],
                    "density": float(density[i]),
                }
                for i in range(50)
            ]
    tables["distance_distribution"] = pd.DataFrame(rows)

    rows, feats = [], []
    for r in reps:
        for which in ("nearest", "farthest"):
            for rank in range(1, k + 1):
                a, b = (
                    (0, 1 + rank)
                    if which == "nearest"
                    else rng.choice(n_essays, 2, replace=False)
                )
                a, b = int(a), int(b)
                rows.append(
                    {
                        "representation": r,
                        "which": which,
                        "rank": rank,
                        "row_a": a,
                        "row_b": b,
                        # the user's data rows (from 1): this prompt's rows come
                        # after the earlier prompts' and the header
                        "data_row_a": row_offset + a + 1,
                        "data_row_b": row_offset + b + 1,
                        "id_a": ids[a],
                        "id_b": ids[b],
                        "distance": float(
                            0.05 * rank if which == "nearest" else 1.0 - 0.01 * rank
                        ),
                        "text_a": texts[a],
                        "text_b": texts[b],
                        "score_a": int(scores[a]),
                        "score_b": int(scores[b]),
                    }
                )
            for f in features:
                va = float(rng.uniform(0, 1))
                spread = 0.05 if which == "nearest" else 0.6
                feats.append(
                    {
                        "representation": r,
                        "which": which,
                        "feature": f,
                        "value_a": va,
                        "value_b": float(np.clip(va + rng.normal(0, spread), 0, 1)),
                    }
                )
    tables["extreme_pairs"] = pd.DataFrame(rows)
    tables["extreme_pair_features"] = pd.DataFrame(feats)

    tables["feature_profile"] = pd.DataFrame(
        [
            {
                "representation": r,
                "group": g,
                "feature": f,
                "mean_abs_diff": float(level * rng.uniform(0.05, 0.25)),
            }
            for r in reps
            for f in features
            for g, level in (("nearest", 0.6), ("medium", 1.0), ("farthest", 1.5))
        ]
    )

    if paraphrase:
        tables["paraphrase"] = pd.DataFrame(
            [
                {
                    "representation": r,
                    "ndcg": float(rng.uniform(0.95, 0.995)),
                    "ndcg_std": float(rng.uniform(0.002, 0.02)),
                    "ndcg_at_10": float(rng.uniform(0.4, 0.9)),
                    "ndcg_at_10_std": float(rng.uniform(0.05, 0.2)),
                    "spearman": float(rng.uniform(0.5, 0.95)),
                    "spearman_std": float(rng.uniform(0.02, 0.1)),
                    "n_samples": 20,
                    "source": "WordNetParaphraser",
                }
                for r in reps
            ]
        )
        # the systems' score change under paraphrase; a stream of its own, so
        # that the other tables keep their numbers
        prng = np.random.default_rng(7)
        changes = {
            (r, m): np.round(prng.normal(0, 0.6, min(n_essays, 10)), 3)
            for r in reps
            for m in mods
        }
        tables["paraphrase_scores"] = pd.DataFrame(
            [
                {
                    "representation": r,
                    "system": m,
                    "n_essays": len(c),
                    "n_paraphrased": len(c),
                    "mean_abs_change": float(np.mean(np.abs(c))),
                    "mean_abs_change_ci_low": float(np.mean(np.abs(c))) * 0.8,
                    "mean_abs_change_ci_high": float(np.mean(np.abs(c))) * 1.2,
                    "mean_change": float(np.mean(c)),
                    "share_changed": float(np.mean(np.abs(c) > 0.5)),
                    "max_abs_change": float(np.max(np.abs(c))),
                    "tolerance": 0.5,
                }
                for (r, m), c in changes.items()
            ],
            columns=[
                "representation", "system", "n_essays", "n_paraphrased",
                "mean_abs_change", "mean_abs_change_ci_low", "mean_abs_change_ci_high",
                "mean_change", "share_changed", "max_abs_change", "tolerance",
            ],
        )  # fmt: skip
        tables["paraphrase_essays"] = pd.DataFrame(
            [
                {
                    "representation": r,
                    "system": m,
                    "id": ids[i],
                    "paraphrased": True,
                    "score_original": float(scores[i]),
                    "score_paraphrase": float(scores[i] + c[i]),
                    "change": float(c[i]),
                }
                for (r, m), c in changes.items()
                for i in range(len(c))
            ],
            columns=[
                "representation", "system", "id", "paraphrased", "score_original",
                "score_paraphrase", "change",
            ],
        )  # fmt: skip

    if groups:
        tables.update(_group_tables(rng, reps, systems, list(groups), n_essays))

    if perturbations:
        from sklearn_fairaes.perturb import get_perturbation

        rows, examples = [], []
        for r in reps:
            for m in mods:
                for name in perturbations:
                    kind = get_perturbation(name)
                    down, up = rng.uniform(0, 0.4), rng.uniform(0, 0.3)
                    expected = kind.expected
                    share = {"stay": 1 - down - up, "drop": down, "change": down + up}
                    rows.append(
                        {
                            "representation": r,
                            "system": m,
                            "perturbation": name,
                            "family": "preserving" if expected == "stay" else "changing",
                            "expected": expected,
                            "n_essays": 20,
                            "n_changed": 18,
                            "mean_abs_change": float(rng.uniform(0, 1.5)),
                            "mean_change": float(rng.normal(0, 0.6)),
                            "max_abs_change": float(rng.uniform(1.5, 3)),
                            "share_beyond_tolerance": down + up,
                            "share_down": down,
                            "share_within": 1 - down - up,
                            "share_up": up,
                            "share_expected": share[expected],
                            "mean_distance": float(rng.uniform(0, 0.8)),
                            "share_zero_distance": float(rng.uniform(0, 0.2)),
                            "lipschitz_minmax": float(rng.uniform(0.5, 1)),
                            "lipschitz_max": float(rng.uniform(0.5, 1)),
                            "tolerance": 0.5,
                        }
                    )
        for name in perturbations:
            examples.append(
                {
                    "representation": reps[0],
                    "perturbation": name,
                    "id": ids[0],
                    "edit_preview": f"'{hostile_text or 'a'}' -> 'b'",
                    "note": "",
                }
            )
        tables["perturbation"] = pd.DataFrame(rows)
        tables["perturbation_examples"] = pd.DataFrame(examples)

    if short_answer:
        tables["grading"] = pd.DataFrame(
            [
                {
                    "representation": r,
                    "system": m,
                    "n": n_essays,
                    "rmse": float(rng.uniform(0.15, 0.35)),
                    "wrmse": float(rng.uniform(0.2, 0.45)),
                }
                for r, m, _ in agreement_rows
            ]
        )
        tables["reference_coverage"] = pd.DataFrame(
            [
                {
                    "representation": reps[0],
                    "n_references": m,
                    "mean_score": 0.6 + 0.05 * i,
                    "ci_low": 0.55 + 0.05 * i,
                    "ci_high": 0.65 + 0.05 * i,
                    "share_below_threshold": 0.3 - 0.05 * i,
                    "n_questions": 5,
                    "n_held_out": 40,
                }
                for i, m in enumerate((1, 2, 4))
            ]
        )
    tables.update(_error_tables(agreement_rows, preds, features, raw))
    return tables


def _error_tables(agreement_rows, preds, features, raw):
    """The error section's tables, computed by its own functions on the fake scores."""
    from sklearn_fairaes.report.analyses._errors import (
        BIN_COLUMNS,
        CORRELATE_COLUMNS,
        REGRESSION_COLUMNS,
        error_bins,
        error_correlation,
        hc3_regression,
    )

    corr, reg, bins = [], [], []
    Z = (raw - raw.mean(axis=0)) / raw.std(axis=0, ddof=1)
    for r, m, _ in agreement_rows:
        error = np.asarray(preds[m if r == "" else f"{r}+{m}"], float) - preds["score"]
        key = {"system": m, "representation": r, "source": "feature"}
        for j, f in enumerate(features):
            corr.append({**key, "variable": f, "n": len(error),
                         **error_correlation(error, raw[:, j])})  # fmt: skip
            bins += [{**key, "variable": f, **b} for b in error_bins(error, raw[:, j])]
        fit = hc3_regression(error, Z)
        if fit is None:  # fewer essays than the regression needs
            continue
        for k, term in enumerate(["intercept", *features]):
            reg.append({**key, "term": term, "source": "" if k == 0 else "feature",
                        "n": len(error), "coefficient": fit["coefficient"][k],
                        "se_hc3": fit["se_hc3"][k], "coefficient_ci_low": fit["ci_low"][k],
                        "coefficient_ci_high": fit["ci_high"][k],
                        "p_value": fit["p_value"][k], "r_squared": fit["r_squared"]})  # fmt: skip
    return {
        "error_correlates": pd.DataFrame(corr, columns=list(CORRELATE_COLUMNS)),
        "error_regression": pd.DataFrame(reg, columns=list(REGRESSION_COLUMNS)),
        "error_bins": pd.DataFrame(bins, columns=list(BIN_COLUMNS)),
    }


def _group_tables(rng, reps, mods, groups, n_essays):
    """The group view's tables for fake groups of about equal size."""
    sizes = np.full(len(groups), n_essays // len(groups))
    sizes[0] += n_essays - sizes.sum()
    agreement, summary, coefficients, lipschitz = [], [], [], []
    names = {
        "osa": "Overall score accuracy",
        "osd": "Overall score difference",
        "csd": "Conditional score difference",
    }
    for r in reps:
        for m in mods:
            for g, size in [*zip(groups, sizes), ("all", n_essays)]:
                qwk = float(rng.uniform(0.5, 0.8))
                smd = float(rng.normal(0, 0.12))
                dsm = 0.0 if g == "all" else float(rng.normal(0, 0.1))
                agreement.append(
                    {
                        "representation": r,
                        "system": m,
                        "group": g,
                        "n": int(size),
                        "human_mean": float(rng.uniform(12, 18)),
                        "human_sd": float(rng.uniform(2, 5)),
                        "machine_mean": float(rng.uniform(12, 18)),
                        "machine_sd": float(rng.uniform(1.5, 4)),
                        "qwk": qwk,
                        "smd": smd,
                        "dsm": dsm,
                        "qwk_ok": qwk >= 0.70,
                        "smd_ok": abs(smd) <= 0.15,
                        "dsm_ok": abs(dsm) <= 0.10,
                    }
                )
            for metric, name in names.items():
                r2 = float(rng.uniform(0, 0.05))
                summary.append(
                    {
                        "representation": r,
                        "system": m,
                        "metric": metric,
                        "name": name,
                        "r2": r2,
                        "r2_adjusted": r2 - 0.01,
                        "f_statistic": float(rng.uniform(0.2, 5)),
                        "df_num": len(groups) - 1,
                        "df_denom": n_essays - len(groups),
                        "p_value": float(rng.uniform(0, 1)) ** 2,
                        "base_group": groups[0],
                    }
                )
                for k, g in enumerate(groups):
                    estimate = float(rng.normal(0, 0.3))
                    se = float(rng.uniform(0.05, 0.2))
                    coefficients.append(
                        {
                            "representation": r,
                            "system": m,
                            "metric": metric,
                            "group": g,
                            "term": "intercept" if k == 0 else "difference",
                            "estimate": estimate,
                            "std_error": se,
                            "t_statistic": estimate / se,
                            "p_value": float(rng.uniform(0, 1)),
                            "ci_low": estimate - 2 * se,
                            "ci_high": estimate + 2 * se,
                        }
                    )
        for m in [*mods, "human"]:
            within_pairs = int(sum(s * (s - 1) // 2 for s in sizes))
            total = n_essays * (n_essays - 1) // 2
            parts = [
                ("overall", "", n_essays, total),
                ("within", "", n_essays, within_pairs),
                ("cross", "", n_essays, total - within_pairs),
            ] + [("group", g, int(s), int(s * (s - 1) // 2)) for g, s in zip(groups, sizes)]
            for scope, g, n, pairs in parts:
                fraction = float(rng.uniform(0.9, 1.0))
                lipschitz.append(
                    {
                        "representation": r,
                        "system": m,
                        "scope": scope,
                        "group": g,
                        "n_essays": n,
                        "n_pairs": pairs,
                        "n_satisfied": int(round(fraction * pairs)),
                        "fraction": fraction,
                    }
                )
    frames = {
        "group_agreement": pd.DataFrame(agreement),
        "group_fairness": pd.DataFrame(summary),
        "group_fairness_coefficients": pd.DataFrame(coefficients),
        "group_lipschitz": pd.DataFrame(lipschitz),
    }
    # one grouping, the group column; every group large enough to be tested and
    # no bootstrap (the interval columns empty)
    for frame in frames.values():
        frame.insert(frame.columns.get_loc("system") + 1, "grouping", "group")
    frames["group_agreement"]["tested"] = True
    return {name: frame.reindex(columns=_CONTRACT[name]) for name, frame in frames.items()}
