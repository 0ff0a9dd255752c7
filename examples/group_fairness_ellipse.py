"""
Group fairness and individual fairness by group on the ELLIPSE test split
=========================================================================

ELLIPSE (Crossley et al. 2023) holds essays of English language learners in
grades 8-12 with their writers' gender, race/ethnicity and economic status. For
each representation (BOW, TF-IDF, Sentence-BERT ``all-MiniLM-L6-v2``), a Ridge
regression with the paper's alpha for that representation (50 for BOW, 0.1
for TF-IDF and Sentence-BERT, as in ``replicate_asap7.py``) is
cross-validated on the Overall score (``KFold(5, shuffle=True,
random_state=42)``), and for each demographic column the script prints

* the agreement table by group (:func:`sklearn_fairaes.group_agreement_report`:
  n, means and SDs, QWK, SMD, and RSMTool's DSM against all essays),
* the fairness analyses OSA, OSD and CSD of Loukina et al. (2019)
  (:func:`sklearn_fairaes.fairness_analyses`), with OSD's and CSD's
  coefficients,
* the Lipschitz fraction over all pairs, within groups, across groups and
  within each group (:func:`sklearn_fairaes.group_lipschitz_fraction`, min-max
  normalisation, the cosine distance of the model's own representation), for
  the model and for the human scores,

then one summary line per representation and column::

    python examples/group_fairness_ellipse.py [--data PATH] [--n-essays N] \\
        [--representations bow,tfidf,sbert] [--groups gender,race_ethnicity,SES]

The Overall score runs from 1 to 5 in half points (the mean of two ratings).
QWK compares score points, so it is computed on the half-point scale (scores
times 2, nine points); means and SDs are printed on the original scale. SMD,
DSM, the fairness analyses' R² and the min-max Lipschitz fractions do not
depend on the unit. An essay without a label in a column (one essay has no
``SES``) is left out of that column's analyses. The data are licensed CC
BY-NC-SA 4.0 (see ``../shared/data/ellipse/SOURCE.md``); no row is copied here.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial.distance import squareform
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_predict

import sklearn_fairaes as sf
from sklearn_fairaes.exceptions import LongTextWarning, UndefinedMetricWarning

ELLIPSE = (
    Path(__file__).resolve().parents[2]
    / "shared/data/ellipse/ELLIPSE_Final_github_test.csv.gz"
)
TEXT_COL, SCORE_COL = "full_text", "Overall"
GROUP_COLS = ("gender", "race_ethnicity", "SES")
REPRESENTATIONS = ("bow", "tfidf", "sbert")
# The paper's Ridge settings per representation (Doewes et al. 2022's code).
RIDGE_ALPHA = {"bow": 50.0, "tfidf": 0.1, "sbert": 0.1}
LABELS = {"bow": "BOW", "tfidf": "TF-IDF", "sbert": "Sentence-BERT (all-MiniLM-L6-v2)"}


def load(path, n_essays, seed):
    """The essays, in file order; a seeded sample of ``n_essays`` when given."""
    if not Path(path).exists():
        raise SystemExit(
            f"{path} not found; pass --data with the path of "
            f"ELLIPSE_Final_github_test.csv.gz (see ../shared/data/ellipse/SOURCE.md)"
        )
    frame = pd.read_csv(path, dtype={"text_id_kaggle": str})
    if n_essays is not None and n_essays < len(frame):
        frame = frame.sample(n_essays, random_state=seed).sort_index()
    return frame.reset_index(drop=True)


def represent(name, essays):
    """Fit the representation on all essays (as the audit does) and transform them."""
    encoder = {
        "bow": sf.BowVectorizer,
        "tfidf": sf.TfidfEssayVectorizer,
        "sbert": lambda: sf.SentenceBertEncoder("all-MiniLM-L6-v2"),
    }[name]()
    with warnings.catch_warnings():
        # MiniLM reads the first 256 word pieces of an essay; the paper's setting
        warnings.simplefilter("ignore", LongTextWarning)
        return encoder.fit_transform(essays)


def group_report(y, pred, distances, groups):
    """The three group analyses of one model on the essays that have a label."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        agreement = sf.group_agreement_report(2 * y, 2 * pred, groups=groups)
        fairness = sf.fairness_analyses(y, pred, groups=groups)
        lipschitz = {
            series: sf.group_lipschitz_fraction(
                distances, scores, groups=groups, metric="precomputed"
            )
            for series, scores in (("Ridge", pred), ("human", y))
        }
    for column in ("human_mean", "human_sd", "machine_mean", "machine_sd"):
        agreement[column] = agreement[column] / 2  # back to the 1-5 scale
    notes = sorted({str(w.message) for w in caught})
    return agreement, fairness, lipschitz, notes


def lipschitz_frame(results):
    rows = {}
    for series, r in results.items():
        row = {"overall": r.overall, "within": r.within, "cross": r.cross}
        row["cross - within (points)"] = 100 * (r.cross - r.within)
        for label, fraction in zip(r.group, r.group_fraction):
            row[f"in {label}"] = fraction
        rows[series] = row
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "scores"
    return frame


def show(title, frame, digits=3):
    print(f"\n{title}")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(frame.round(digits).to_string())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data", default=str(ELLIPSE))
    parser.add_argument("--n-essays", type=int, default=None, help="a seeded sample")
    parser.add_argument("--representations", default=",".join(REPRESENTATIONS))
    parser.add_argument("--groups", default=",".join(GROUP_COLS))
    parser.add_argument(
        "--alpha",
        type=float,
        default=None,
        help="Ridge's alpha for every representation (default: the paper's, 50 for "
        "BOW and 0.1 for the others)",
    )
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="of the --n-essays sample")
    args = parser.parse_args(argv)
    reps = [r.strip() for r in args.representations.split(",") if r.strip()]
    unknown = sorted(set(reps) - set(REPRESENTATIONS))
    if unknown:
        parser.error(f"unknown representation(s) {unknown}; choose from {REPRESENTATIONS}")
    group_cols = [g.strip() for g in args.groups.split(",") if g.strip()]

    started = time.time()
    frame = load(args.data, args.n_essays, args.seed)
    missing = sorted(set(group_cols) - set(frame.columns))
    if missing:
        parser.error(f"no column(s) {missing} in {args.data}")
    essays = frame[TEXT_COL].tolist()
    y = frame[SCORE_COL].to_numpy(float)
    print(
        f"{len(frame):,} essays from {args.data}; target {SCORE_COL} "
        f"(mean {y.mean():.3f}, SD {y.std(ddof=1):.3f}); Ridge, KFold(5, shuffle=True, "
        f"random_state=42)"
    )
    folds = KFold(5, shuffle=True, random_state=42)
    summary = []
    for rep in reps:
        t0 = time.time()
        X = represent(rep, essays)
        alpha = RIDGE_ALPHA[rep] if args.alpha is None else args.alpha
        pred = cross_val_predict(Ridge(alpha=alpha), X, y, cv=folds, n_jobs=args.n_jobs)
        square = squareform(sf.condensed_distances(X, n_jobs=args.n_jobs))
        seconds = time.time() - t0
        print(f"\n{'=' * 78}")
        print(
            f"{LABELS[rep]} + Ridge(alpha={alpha:g}): {seconds:.0f} s to encode, fit, "
            "and measure distances"
        )
        print(
            f"all essays: QWK {sf.qwk(2 * y, 2 * pred):.3f} (half-point scale), "
            f"SMD {sf.standardized_mean_difference(y, pred):+.3f}, Pearson r "
            f"{np.corrcoef(y, pred)[0, 1]:.3f}"
        )
        for col in group_cols:
            keep = frame[col].notna().to_numpy()
            groups = frame.loc[keep, col].astype(str).to_numpy()
            dropped = int((~keep).sum())
            left_out = f" ({dropped} without a label left out)" if dropped else ""
            print(f"\n--- {col}: {keep.sum():,} essays{left_out}")
            agreement, fairness, lipschitz, notes = group_report(
                y[keep], pred[keep], square[np.ix_(keep, keep)], groups
            )
            show("Agreement by group (QWK on the half-point scale)", agreement)
            show(
                f"Fairness analyses (reference group: {fairness.base_group})",
                fairness.summary[
                    ["r2", "r2_adjusted", "f_statistic", "df_num", "df_denom", "p_value"]
                ],
                digits=4,
            )
            coefficients = fairness.coefficients.query("metric in ('osd', 'csd')")
            show(
                "OSD and CSD coefficients (intercept: the reference group's mean "
                "error; difference: another group's mean minus it; Overall points)",
                coefficients[
                    ["metric", "group", "term", "estimate", "ci_low", "ci_high", "p_value"]
                ].set_index(["metric", "group"]),
                digits=4,
            )
            lip = lipschitz_frame(lipschitz)
            show("Lipschitz fraction (min-max), share of pairs", lip, digits=4)
            for note in notes:
                print(f"note: {note}")
            dsm = agreement.drop(index="all")["dsm"]
            fs = fairness.summary
            summary.append(
                {
                    "representation": rep,
                    "column": col,
                    "qwk_min_group": agreement.drop(index="all")["qwk"].min(),
                    "max_abs_dsm": dsm.abs().max(),
                    "group_max_abs_dsm": dsm.abs().idxmax(),
                    "osa_r2_adj": fs.loc["osa", "r2_adjusted"],
                    "osd_r2_adj": fs.loc["osd", "r2_adjusted"],
                    "osd_p": fs.loc["osd", "p_value"],
                    "csd_r2_adj": fs.loc["csd", "r2_adjusted"],
                    "csd_p": fs.loc["csd", "p_value"],
                    "lip_within": lip.loc["Ridge", "within"],
                    "lip_cross": lip.loc["Ridge", "cross"],
                    "human_within": lip.loc["human", "within"],
                    "human_cross": lip.loc["human", "cross"],
                }
            )
    show(
        f"{'=' * 78}\nSummary (one row per representation and column; fractions of pairs)",
        pd.DataFrame(summary).set_index(["representation", "column"]),
        digits=4,
    )
    print(f"\ntotal run time {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
