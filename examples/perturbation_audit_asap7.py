"""
Counterfactual audit of two scoring models on ASAP prompt 7
===========================================================

Fits TF-IDF + Ridge and Sentence-BERT (all-MiniLM-L6-v2) + Ridge on one half of
prompt 7, edits the essays of the other half with every perturbation of
``sklearn_fairaes.perturb`` and reports, per model and perturbation, how the
scores moved (see ``docs/perturbations.md`` for how to read the table)::

    python examples/perturbation_audit_asap7.py [--data PATH] [--n-essays 400]
        [--models tfidf sbert] [--out perturbation_audit_asap7.png]

``--n-essays`` caps the number of held-out essays audited (all 785 by
default). The edits are made once and scored by every model; Sentence-BERT
encodes every edited essay, about 13 times the number of audited essays, at
~20 essays/s on two idle CPU cores (``--n-essays 400`` took 12 minutes on a
busy two-core machine; see docs/perturbations.md for the recorded tables).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import pandas as pd
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

import sklearn_fairaes as sf
from sklearn_fairaes.exceptions import LongTextWarning
from sklearn_fairaes.perturb import perturbation_audit, plot_perturbation_audit

ASAP7 = Path(__file__).resolve().parents[2] / "shared/data/asap-aes/asap_aes_prompt7.tsv"
PROMPT7 = (
    "Write about patience. Being patient means that you are understanding and "
    "tolerant. A patient person experience difficulties without complaining. Do only "
    "one of the following: write a story about a time when you were patient OR write "
    "a story about a time when someone you know was patient OR write a story in your "
    "own way about patience."
)
COLUMNS = [
    "perturbation",
    "expected",
    "n_changed",
    "mean_abs_change",
    "mean_change",
    "share_down",
    "share_within",
    "share_up",
    "share_expected",
    "mean_distance",
    "share_zero_distance",
    "lipschitz_minmax",
    "lipschitz_max",
]


def build(name):
    if name == "tfidf":
        return make_pipeline(sf.TfidfEssayVectorizer(), Ridge(alpha=1.0))
    if name == "sbert":
        return make_pipeline(sf.SentenceBertEncoder("all-MiniLM-L6-v2"), Ridge(alpha=1.0))
    raise ValueError(f"unknown model {name!r}; use tfidf or sbert")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data", default=str(ASAP7))
    parser.add_argument("--n-essays", type=int, default=None)
    parser.add_argument("--models", nargs="+", default=["tfidf", "sbert"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="perturbation_audit_asap7.png")
    args = parser.parse_args(argv)

    data = sf.load_asap(args.data, prompt=7)
    essays = list(data["essay"])
    y = data["domain1_score"].to_numpy(float)
    train, test, y_train, _ = train_test_split(
        essays, y, test_size=0.5, random_state=args.seed
    )
    audited = test[: args.n_essays]
    print(
        f"ASAP prompt 7: {len(train)} essays to fit, {len(audited)} held-out essays audited"
    )
    # one task representation for every model, fitted on the audited essays
    representation = sf.TfidfEssayVectorizer().fit(audited)

    start = time.perf_counter()
    models = {name: build(name).fit(train, y_train) for name in args.models}
    fitted = time.perf_counter()
    with warnings.catch_warnings():
        # MiniLM reads the first 256 tokens of an essay; the encoder says so for
        # every batch of edited essays. Edits beyond that window are invisible to it.
        warnings.simplefilter("ignore", LongTextWarning)
        summary = perturbation_audit(
            models,
            audited,
            perturbations="all",
            prompt=PROMPT7,
            representation=representation,
            score_scale=y_train,
            random_state=args.seed,
        )
    done = time.perf_counter()
    print(
        f"fit {fitted - start:.0f} s, audit {done - fitted:.0f} s; tolerance "
        f"{summary.attrs['tolerance'][args.models[0]]:g} "
        f"({summary.attrs['tolerance_rule'][args.models[0]]})"
    )
    for name in args.models:
        table = summary[summary["model"] == name]
        print(f"\n== {name} + Ridge")
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(table[COLUMNS].round(3).to_string(index=False))

    fig = plot_perturbation_audit(
        summary,
        title=f"Counterfactual audit, ASAP prompt 7 ({len(audited)} held-out essays)",
    )
    fig.savefig(args.out, dpi=120)
    print(f"\nfigure: {args.out}")
    return summary


if __name__ == "__main__":
    main()
