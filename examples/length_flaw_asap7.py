"""
A flawed engine that the paper's Lipschitz fraction rates fairer, on ASAP prompt 7
==================================================================================

Issue 33's finding, reproduced: a "fixed" engine (out-of-fold ridge on TF-IDF,
rounded) and a "flawed" copy that gives every essay under 150 words 3 more
points, audited side by side on the 1,569 essays of ASAP prompt 7. The flaw
narrows the score spread, and a narrower spread alone passes more pairs of the
paper's min-max Lipschitz condition, so that figure ranks the flawed engine
first. The spread-matched fraction, the neighbour spread ratio and the error
inconsistency rank the fixed engine fairer, and the error section names
length without being told to look for it::

    python examples/length_flaw_asap7.py [--data PATH] [--bootstrap 1000]

It prints figures only, never essay text (the ASAP licence).
``tests/test_length_flaw_asap7.py`` checks the same rankings.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_predict

import sklearn_fairaes as sf

DATA = Path("/work/shared/data/asap-aes/asap_aes_prompt7.tsv")


def engines(data: pd.DataFrame) -> pd.DataFrame:
    """The fixed engine and its flawed copy (+3 points under 150 words), as columns."""
    human = data["domain1_score"].astype(float).to_numpy()
    X = TfidfVectorizer().fit_transform(data["essay"])
    folds = KFold(5, shuffle=True, random_state=0)
    fixed = np.clip(np.rint(cross_val_predict(Ridge(), X, human, cv=folds)), 0, 24)
    short = data["essay"].str.split().str.len().to_numpy() < 150
    return data.assign(fixed=fixed, flawed=np.clip(fixed + 3 * short, 0, 24))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    data = pd.read_csv(args.data, sep="\t", encoding="utf-8-sig", dtype=str,
                       keep_default_na=False)  # fmt: skip
    data = engines(data)
    start = time.perf_counter()
    result = sf.audit(
        data, text_col="essay", score_col="domain1_score", id_col="essay_id",
        systems=["fixed", "flawed"], score_range=(0, 24), representations=["tfidf"],
        paraphrases="essay", sections=["lipschitz", "errors"], n_bootstrap=args.bootstrap,
    )  # fmt: skip
    took = time.perf_counter() - start
    lip = result.tables["lipschitz"].set_index("system")
    rel = result.tables["relative_fairness"].set_index("system")

    def ci(frame: pd.DataFrame, system: str, column: str, scale: float = 1.0) -> str:
        row = frame.loc[system]
        return (
            f"{scale * row[column]:.3f} [{scale * row[column + '_ci_low']:.3f}, "
            f"{scale * row[column + '_ci_high']:.3f}]"
        )

    print(f"ASAP prompt 7, {len(data)} essays, TF-IDF, B={args.bootstrap} ({took:.0f} s)")
    print(f"{'':24}{'fixed':>28}{'flawed':>28}{'human':>28}")
    rows = [
        ("score SD", "score_sd", 1.0),
        ("paper's fraction %", "lipschitz_minmax", 100.0),
        ("spread-matched %", "lipschitz_matched", 100.0),
    ]
    for label, column, scale in rows:
        cells = [ci(lip, s, column, scale) for s in ("fixed", "flawed", "human")]
        print(f"{label:24}" + "".join(f"{c:>28}" for c in cells))
    for label, column in (
        ("neighbour spread ratio", "neighbor_spread_ratio"),
        ("error inconsistency", "error_inconsistency"),
    ):
        cells = [ci(rel, s, column) for s in ("fixed", "flawed")]
        print(f"{label:24}" + "".join(f"{c:>28}" for c in cells))
    diffs = result.tables["system_differences"]
    matched = diffs[(diffs["figure"] == "lipschitz_matched") & (diffs["system_a"] == "fixed")
                    & (diffs["system_b"] == "flawed")].iloc[0]  # fmt: skip
    print(
        f"spread-matched, fixed minus flawed: {100 * matched['difference']:.3f} points "
        f"[{100 * matched['ci_low']:.3f}, {100 * matched['ci_high']:.3f}], "
        f"p = {matched['p_value']:.4f}"
    )
    corr = result.tables["error_correlates"]
    for system in ("fixed", "flawed"):
        top = corr[corr["system"] == system].iloc[0]
        print(
            f"{system}: error most related to {top['variable']} "
            f"(r = {top['pearson_r']:.3f} [{top['r_ci_low']:.3f}, {top['r_ci_high']:.3f}])"
        )


if __name__ == "__main__":
    main()
