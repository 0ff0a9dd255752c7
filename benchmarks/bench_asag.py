"""ASAG2024 benchmark: short-answer grading against reference answers, on our copies.

Measured in one run, per dataset of ../shared/data (see docs/short_answers.md):

1. Composition: rows and mean scaled grade of our copy next to ASAG2024's Table 1.
2. wRMSE (ASAG2024, Section 3) of the mean-grade baseline (in-sample, as ASAG2024
   computed it), the zero-shot similarity grader (Sentence-BERT MiniLM, no
   learning) and the calibrated graders (isotonic and linear, pooled, unweighted
   and with ``grade_weight="balanced"``; predictions cross-validated with
   GroupKFold on the question, so every answer is graded by a calibration fitted
   on other questions), next to ASAG2024's Table 2 baseline and embedding
   (Nomic-embed-text) figures. A per-question balanced isotonic calibration
   cross-validated over answers (KFold, the easier "unseen answers" setting) is
   shown as an extra column.
3. Individual fairness within questions: the Lipschitz fraction (min-max
   normalised, L = 1, Sentence-BERT cosine distances) of each grader's grades
   among the answers to one question, pooled over the pairs of all questions.
4. The low-coverage-bias curve (Choshen & Abend 2018): the mean score a fully
   correct answer gets from the zero-shot grader with M = 1, 2, 4, 8, 16 other
   fully correct answers as references.

Usage::

    python benchmarks/bench_asag.py [--datasets beetle,saf] [--max-answers 300]
        [--coverage beetle,saf,asap-sas] [--n-bootstrap 200] [--cache-dir DIR]

Embeddings go to an on-disk cache (``--cache-dir``, default
``<data_home>/bench-asag-cache``), so a second run skips the encoding.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

#: ASAG2024 (Meyer, Breuer & Fürst 2024) Table 1: entries and mean scaled grade.
ASAG2024_TABLE1 = {
    "beetle": (3941, 0.67),
    "cu-nlp": (171, 0.28),
    "digiklausur": (646, 0.68),
    "mohler": (630, 0.81),
    "saf": (2463, 0.76),
    "scientsbank": (10804, 0.60),
    "stita": (333, 0.68),
}
#: ASAG2024 Table 2, wRMSE: (mean baseline, Nomic-embed-text cosine similarity).
ASAG2024_TABLE2 = {
    "beetle": (0.41, 0.32),
    "cu-nlp": (0.40, 0.28),
    "digiklausur": (0.45, 0.39),
    "mohler": (0.43, 0.24),
    "saf": (0.41, 0.41),
    "scientsbank": (0.39, 0.37),
    "stita": (0.34, 0.40),
}

# Beetle's 5-way labels on ASAG2024's 4-point scale (its accuracy_conversion.py).
_BEETLE_POINTS = {
    "correct": 3,
    "partially_correct_incomplete": 2,
    "contradictory": 1,
    "irrelevant": 0,
    "non_domain": 0,
}


def _beetle(df):
    df = df[df["split"] == "train"].copy()  # ASAG2024 reads beetle/train/Core only
    df["points"] = df["label_5way"].map(_BEETLE_POINTS)
    return df


def _mohler(df):
    # ASAG2024 reads Mohler v1.0 (assignments 1-3); v2.0 holds the same 630 answers
    # there. Like ASAG2024's loader, drop the HTML line breaks.
    df = df[df["assignment"].astype(int) <= 3].copy()
    df["student_answer"] = df["student_answer"].str.replace(r"<br\s*/?>", " ", regex=True)
    return df


def _digiklausur(df):
    # 35 of the 39 answers flagged empty hold nbgrader's placeholder text
    df = df.copy()
    df.loc[df["is_empty_answer"] == "True", "student_answer"] = ""
    return df


def _saf_asag(df):
    # ASAG2024 keeps the answers scored at most 1 point and does not rescale them.
    return df[df["score"].astype(float) <= 1].copy()


def _scientsbank_refs(df):
    # Only the 4 questions of the XML subset have a reference answer here.
    return df[df["reference_answer"].str.strip() != ""].copy()


def _asap_sas(df):
    df = df.copy()
    df["max_points"] = np.where(df["EssaySet"].isin(["1", "2", "5", "6"]), 3, 2)
    return df


#: How each shared dataset becomes load_short_answers input: file, a preparation
#: of the raw frame, the keyword arguments of load_short_answers, and what it is
#: used for ("grade": the wRMSE table, "baseline": mean baseline only,
#: "coverage": the coverage curve).
SETS = {
    "beetle": {
        "file": "beetle/beetle_semeval2013_5way.tsv",
        "prepare": _beetle,
        "load": dict(
            question_col="question_id",
            reference_col="reference_answers",
            reference_sep=" ||| ",
            answer_col="student_answer",
            grade_col="points",
            max_grade=3,
        ),
        "use": ("grade", "coverage"),
    },
    "cu-nlp": {
        "file": "cu-nlp/cunlp_gradeaid.tsv",
        "prepare": None,
        "load": dict(
            question_col="derived_reference_group",
            reference_col="real_answer",
            answer_col="answer",
            grade_col="score",
            max_grade=100,
        ),
        "use": ("grade",),
    },
    "digiklausur": {
        "file": "digiklausur/digiklausur_answers.tsv",
        "prepare": _digiklausur,
        "load": dict(
            question_col="question_id",
            reference_col=None,  # not in our copy (see its SOURCE.md)
            answer_col="student_answer",
            grade_col="grade",
            max_grade=2,
        ),
        "use": ("baseline", "coverage"),
    },
    "mohler": {
        "file": "mohler/mohler_v2_answers.tsv",
        "prepare": _mohler,
        "load": dict(
            question_col="question_id",
            reference_col="reference_answer",
            answer_col="student_answer",
            grade_col="score_avg",
            max_grade=5,
        ),
        "use": ("grade", "coverage"),
    },
    "saf": {
        "file": "saf/saf_communication_networks_english_v2.tsv",
        "prepare": _saf_asag,
        "load": dict(
            question_col="question_id",
            reference_col="reference_answer",
            reference_sep="\n---\n",
            answer_col="student_answer",
            grade_col="score",
            max_grade=1,
        ),
        "use": ("grade",),
    },
    # For the coverage curve, full credit must be full credit on each question's
    # own point scale: all answers, scaled by the question's largest score.
    "saf-by-question": {
        "file": "saf/saf_communication_networks_english_v2.tsv",
        "prepare": None,
        "load": dict(
            question_col="question_id",
            reference_col="reference_answer",
            reference_sep="\n---\n",
            answer_col="student_answer",
            grade_col="score",
            max_grade="question_max_observed_score",
        ),
        "use": ("coverage",),
    },
    "scientsbank": {
        "file": "scientsbank/scientsbank_sra_numeric_3level.tsv",
        "prepare": None,
        "load": dict(
            question_col="question_id",
            reference_col=None,
            answer_col="student_answer",
            grade_col="score_3level",
            max_grade=2,
        ),
        "use": ("baseline",),
    },
    "scientsbank-4q": {
        "file": "scientsbank/scientsbank_sra_numeric_3level.tsv",
        "prepare": _scientsbank_refs,
        "load": dict(
            question_col="question_id",
            reference_col="reference_answer",
            answer_col="student_answer",
            grade_col="score_3level",
            max_grade=2,
        ),
        "use": ("grade",),
    },
    "stita": {
        "file": "stita/stita_gradeaid.tsv",
        "prepare": None,
        "load": dict(
            question_col="question_id",
            reference_col="real_answer",
            answer_col="answer",
            grade_col="score",
            max_grade=1,
        ),
        "use": ("grade",),
    },
    "asap-sas": {
        "file": "asap-sas/asap_sas_train_rel2.tsv",
        "prepare": _asap_sas,
        "load": dict(
            question_col="EssaySet",
            reference_col=None,  # Kaggle's reference documents are not in our copy
            answer_col="EssayText",
            grade_col="Score1",
            max_grade="max_points",
        ),
        "use": ("coverage",),
    },
}


def load_set(name, data_dir=DATA):
    """The dataset ``name`` of ``SETS`` in load_short_answers form."""
    import pandas as pd

    from sklearn_fairaes.datasets import load_short_answers

    spec = SETS[name]
    path = Path(data_dir) / spec["file"]
    raw = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if spec["prepare"] is not None:
        raw = spec["prepare"](raw)
    return load_short_answers(raw.reset_index(drop=True), **spec["load"])


def _subsample(data, max_answers, seed=0):
    if max_answers is None or len(data) <= max_answers:
        return data
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(len(data), size=max_answers, replace=False))
    return data.iloc[keep]


def _group_cv(data, y, grader, n_splits=5):
    from sklearn.model_selection import GroupKFold, cross_val_predict

    groups = data["question"].to_numpy()
    k = min(n_splits, len(np.unique(groups)))
    return cross_val_predict(grader, data, y, groups=groups, cv=GroupKFold(n_splits=k))


def _answer_cv(data, y, grader, n_splits=5):
    from sklearn.model_selection import KFold, cross_val_predict

    cv = KFold(n_splits=n_splits, shuffle=True, random_state=0)
    return cross_val_predict(grader, data, y, cv=cv)


def _lipschitz_within_questions(E, questions, y_pred):
    """Pairs satisfying the Lipschitz condition, pooled over the questions."""
    from sklearn_fairaes.exceptions import UndefinedMetricWarning
    from sklearn_fairaes.metrics import lipschitz_fraction

    satisfied = pairs = 0
    for q in dict.fromkeys(questions):
        rows = np.flatnonzero(questions == q)
        if rows.size < 2:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            counts = lipschitz_fraction(E[rows], y_pred[rows], return_counts=True)
        satisfied += int(counts.n_satisfied)
        pairs += int(counts.n_pairs)
    return satisfied / pairs, pairs


def _md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _fmt(x, digits=3):
    return "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    grading = [n for n, s in SETS.items() if "grade" in s["use"] or "baseline" in s["use"]]
    coverage = [n for n, s in SETS.items() if "coverage" in s["use"]]
    parser.add_argument("--datasets", default=",".join(grading))
    parser.add_argument(
        "--max-answers",
        type=int,
        default=None,
        help="grade at most this many answers per dataset (a seeded random subset)",
    )
    parser.add_argument("--coverage", default=",".join(coverage))
    parser.add_argument("--n-bootstrap", type=int, default=200)
    parser.add_argument(
        "--coverage-max-valid",
        type=int,
        default=60,
        help="full-credit answers kept per question for the coverage curve",
    )
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--figure", default=None, help="save the coverage figure here")
    args = parser.parse_args(argv)

    from sklearn.base import clone

    from sklearn_fairaes.exceptions import LongTextWarning
    from sklearn_fairaes.metrics import weighted_rmse
    from sklearn_fairaes.resources import data_home
    from sklearn_fairaes.short_answers import (
        ReferenceSimilarityGrader,
        plot_reference_coverage,
        reference_coverage_curve,
    )
    from sklearn_fairaes.text import SentenceBertEncoder, get_cache

    # Long answers (Stita) are truncated to MiniLM's 256 tokens, as
    # sentence-transformers does; the count is printed below.
    warnings.simplefilter("ignore", LongTextWarning)
    cache_dir = Path(args.cache_dir or Path(data_home()) / "bench-asag-cache")
    sbert = SentenceBertEncoder(cache=str(cache_dir))
    encoder = clone(sbert).fit(["x"])
    t_start = time.perf_counter()
    print(f"load average {os.getloadavg()[0]:.2f}; embedding cache {cache_dir}")

    # (label, grader parameters, cross-validation); None: nothing is learned
    variants = [
        ("zero-shot", {}, None),
        ("isotonic", {"calibration": "isotonic"}, "question"),
        ("linear", {"calibration": "linear"}, "question"),
        ("isotonic bal.", {"calibration": "isotonic", "grade_weight": "balanced"}, "question"),
        ("linear bal.", {"calibration": "linear", "grade_weight": "balanced"}, "question"),
        ("per-question isotonic bal. (KFold)",
         {"calibration": "isotonic", "grade_weight": "balanced", "calibrate_by": "question"},
         "answer"),
    ]  # fmt: skip
    lip_variants = ("zero-shot", "isotonic", "isotonic bal.", "linear bal.")
    comp_rows, wrmse_rows, lip_rows = [], [], []
    ours = {label: {} for label, _, _ in variants}
    ours["baseline"] = {}
    for name in [n for n in args.datasets.split(",") if n]:
        spec = SETS[name]
        if not (DATA / spec["file"]).exists():
            print(f"skip {name}: missing {DATA / spec['file']}")
            continue
        t0 = time.perf_counter()
        full = load_set(name)
        table1 = ASAG2024_TABLE1.get(name, (None, None))
        comp_rows.append(
            [
                name,
                f"{len(full):,}",
                f"{table1[0]:,}" if table1[0] else "–",
                f"{full['grade'].mean():.4f}",
                _fmt(table1[1], 2),
                full["question"].nunique(),
            ]
        )
        paper = ASAG2024_TABLE2.get(name, (None, None))
        data = _subsample(full, args.max_answers)
        y = data["grade"].to_numpy()
        # ASAG2024's baseline: every answer gets the mean grade of its dataset
        ours["baseline"][name] = weighted_rmse(y, np.full(y.shape, y.mean()))
        row = [name, f"{len(data):,}", _fmt(ours["baseline"][name]), _fmt(paper[0], 2)]
        if "grade" not in spec["use"]:
            wrmse_rows.append(row + ["–"] * len(variants) + [_fmt(paper[1], 2)])
            print(f"{name}: baseline only ({time.perf_counter() - t0:.1f} s)")
            continue
        questions = data["question"].to_numpy()
        preds = {}
        for label, params, cv in variants:
            grader = ReferenceSimilarityGrader(sbert, **params)
            if cv is None:
                preds[label] = grader.fit(data).predict(data)
            elif cv == "question":
                preds[label] = _group_cv(data, y, grader)
            else:
                preds[label] = _answer_cv(data, y, grader)
            ours[label][name] = weighted_rmse(y, preds[label])
        wrmse_rows.append(
            row
            + [_fmt(ours[label][name]) for label, _, _ in variants]
            + [_fmt(paper[1], 2)]
        )
        E = encoder.transform(data["answer"].tolist())
        lip = {}
        for label in ("human",) + lip_variants:
            pred = y if label == "human" else preds[label]
            lip[label], n_pairs = _lipschitz_within_questions(E, questions, pred)
        lip_rows.append(
            [name, f"{n_pairs:,}"] + [_fmt(lip[k], 4) for k in ("human",) + lip_variants]
        )
        print(f"{name}: {len(data)} answers graded ({time.perf_counter() - t0:.1f} s)")

    print("\n## Composition (ours vs ASAG2024 Table 1)\n")
    print(
        _md_table(
            [
                "dataset",
                "rows",
                "ASAG2024 rows",
                "mean grade",
                "ASAG2024 mean",
                "questions",
            ],
            comp_rows,
        )
    )
    print("\n## wRMSE (ours vs ASAG2024 Table 2)\n")
    print(
        _md_table(
            ["dataset", "answers", "mean baseline", "ASAG2024 baseline"]
            + [label for label, _, _ in variants]
            + ["ASAG2024 Nomic"],
            wrmse_rows,
        )
    )
    common = [n for n in ours["zero-shot"] if n in ASAG2024_TABLE2]
    if common:
        print(f"\nMeans over {', '.join(common)} (graded here and in ASAG2024):")
        for k in ["baseline"] + [label for label, _, _ in variants]:
            print(f"  ours {k}: {np.mean([ours[k][n] for n in common]):.3f}")
        for j, k in enumerate(("baseline", "Nomic-embed-text")):
            print(f"  ASAG2024 {k}: {np.mean([ASAG2024_TABLE2[n][j] for n in common]):.3f}")
    print("\n## Lipschitz fraction within questions (pairs pooled over questions)\n")
    print(
        _md_table(
            ["dataset", "pairs", "human grades", *lip_variants],
            lip_rows,
        )
    )

    curves = {}
    for name in [n for n in args.coverage.split(",") if n]:
        spec = SETS[name]
        if not (DATA / spec["file"]).exists():
            print(f"skip coverage {name}: missing {DATA / spec['file']}")
            continue
        t0 = time.perf_counter()
        data = load_set(name)
        # Cap the full-credit answers per question (a seeded random subset) to
        # bound the encoding; the other answers are not used by the curve.
        rng = np.random.default_rng(0)
        valid = data["grade"].to_numpy() >= 1 - 1e-9
        keep = []
        for q in dict.fromkeys(data["question"]):
            rows = np.flatnonzero(valid & (data["question"].to_numpy() == q))
            if rows.size > args.coverage_max_valid:
                rows = np.sort(rng.choice(rows, args.coverage_max_valid, replace=False))
            keep.extend(rows.tolist())
        subset = data.iloc[np.sort(keep)]
        try:
            curve = reference_coverage_curve(
                subset["answer"],
                subset["grade"],
                question=subset["question"],
                representation=sbert,
                n_bootstrap=args.n_bootstrap,
                random_state=0,
            )
        except ValueError as exc:
            print(f"coverage {name}: {exc}")
            continue
        curves[name] = curve
        print(f"\n### Coverage curve: {name} ({time.perf_counter() - t0:.1f} s)\n")
        print(
            _md_table(
                list(curve.columns),
                [
                    [_fmt(v) if isinstance(v, float) else v for v in row]
                    for row in curve.itertuples(index=False)
                ],
            )
        )
    if curves and args.figure:
        fig = plot_reference_coverage(curves, pass_threshold=0.5)
        fig.savefig(args.figure, dpi=120)
        print(f"\nfigure saved to {args.figure}")
    print(f"\nembedding cache: {get_cache(str(cache_dir)).stats()}")
    print(f"total {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
