"""
Essays to review on ASAP prompt 7: near-identical essays the raters scored far apart
====================================================================================

Rater monitoring with the functions behind the audit's "Essays to review"
section (issue 17): TF-IDF vectors of the 1,569 essays of ASAP prompt 7 (the
representation the audit fits), the resolved human score ``domain1_score``
(rater 1 + rater 2, 0-24), and

* :func:`~sklearn_fairaes.essay_consistency`: each essay's 5 nearest other
  essays, and the essays scored farthest from their neighbours' mean;
* :func:`~sklearn_fairaes.lipschitz_violations`: the pairs whose score
  difference exceeds their distance the most;
* :func:`~sklearn_fairaes.lipschitz_profile`: the empirical Lipschitz
  constants at 90/95/99% of the pairs.

It prints essay ids, distances and scores only, never essay text (the ASAP
licence; read the essays in your own copy of the data)::

    python examples/review_list_asap7.py [--data PATH] [--n-review 10]
        [--n-neighbors 5] [--near 0.2] [--figure profile.png]

The recorded output is in ``docs/review_list.md``.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd

import sklearn_fairaes as sf

DATA = Path("/work/shared/data/asap-aes/asap_aes_prompt7.tsv")


def main(argv: list[str] | None = None) -> None:
    """Print the review list, the worst pairs and the constants of prompt 7."""
    parser = argparse.ArgumentParser(
        description="The review list of ASAP prompt 7's human scores under TF-IDF."
    )
    parser.add_argument("--data", type=Path, default=DATA, help="ASAP prompt 7 TSV")
    parser.add_argument("--n-review", type=int, default=10, help="essays and pairs listed")
    parser.add_argument("--n-neighbors", type=int, default=5, help="neighbours per essay")
    parser.add_argument(
        "--near",
        type=float,
        default=0.55,
        help="cosine distance under which two essays count as near-duplicates",
    )
    parser.add_argument(
        "--figure", type=Path, help="write the Lipschitz profile here (PNG)"
    )
    args = parser.parse_args(argv)

    data = sf.load_asap(args.data, prompt=7)
    ids = data["essay_id"].to_numpy()
    y = data["domain1_score"].to_numpy(float)
    essays = data["essay"].tolist()
    words = [len(e.split()) for e in essays]
    tokens = [len(re.findall(r"@[A-Z]+[0-9]+", e)) for e in essays]
    r1, r2 = data["rater1_domain1"].to_numpy(float), data["rater2_domain1"].to_numpy(float)
    started = time.perf_counter()
    X = sf.TfidfEssayVectorizer().fit_transform(essays)
    ec = sf.essay_consistency(X, y, n_neighbors=args.n_neighbors)
    lv = sf.lipschitz_violations(X, y, top=args.n_review)
    lp = sf.lipschitz_profile(X, y)
    seconds = time.perf_counter() - started
    print(
        f"{args.data.name}: {len(y):,} essays, {lv.n_pairs:,} pairs, TF-IDF, domain1_score"
    )
    print(f"vectors + three review functions: {seconds:.1f} s")
    print(
        f"consistency (k={args.n_neighbors}): {ec.consistency:.3f} "
        f"(mean |gap| {np.mean(np.abs(ec.gap)):.3f} points)"
    )

    print(f"\nEssays to review (first {args.n_review}, largest |gap| first):")
    rows = []
    for rank, i in enumerate(ec.review_order[: args.n_review], start=1):
        j = ec.neighbors[i]
        rows.append(
            {
                "rank": rank,
                "essay_id": ids[i],
                "score": y[i],
                "neighbor_mean": ec.neighbor_mean[i],
                "gap": ec.gap[i],
                "nearest_id": ids[j[0]],
                "nearest_distance": ec.distances[i][0],
                "nearest_score": y[j[0]],
                "farthest_neighbor_distance": ec.distances[i][-1],
            }
        )
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3f}"))

    print(f"\nWorst Lipschitz pairs (min-max normalisation, L = 1), first {args.n_review}:")
    frame = lv.to_frame()
    frame.insert(0, "id_b", ids[frame.pop("j").to_numpy()])
    frame.insert(0, "id_a", ids[frame.pop("i").to_numpy()])
    print(frame.to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"violating pairs: {lv.n_violations:,} of {lv.n_pairs:,}")
    # an essay in many of the worst pairs is scored unlike a whole cluster
    position = np.argsort(ec.review_order)  # essay -> its place in the review list
    ends, counts = np.unique(np.concatenate([lv.i, lv.j]), return_counts=True)
    for n, (e, c) in enumerate(sorted(zip(ends, counts), key=lambda t: -t[1])[:3]):
        print(
            f"essay {ids[e]} (score {y[e]:g} = rater 1 {r1[e]:g} + rater 2 {r2[e]:g}) "
            f"is in {c} of the {len(lv.i)} worst pairs; "
            f"its {args.n_neighbors} nearest neighbours (distances "
            f"{ec.distances[e][0]:.3f}-{ec.distances[e][-1]:.3f}) are scored "
            f"{', '.join(f'{s:g}' for s in y[ec.neighbors[e]])}; "
            f"review-list rank {position[e] + 1} (gap {ec.gap[e]:+.1f})"
        )
        # ASAP's anonymisation tokens (@CAPS1, @PERSON2, ...) are words to TF-IDF
        for k in [e, *ec.neighbors[e]] if n == 0 else []:
            print(
                f"    essay {ids[k]}: {words[k]} words, {tokens[k]} of them anonymisation "
                f"placeholders (@CAPS1, @PERSON2, ...)"
            )
    share = np.array(tokens) / np.maximum(np.array(words), 1)
    print(f"placeholders per word over all essays: median {np.median(share):.3f}")
    q = np.quantile(ec.distances[:, 0], [0.0, 0.01, 0.05, 0.5])
    print(
        "distance to the nearest other essay: min {:.3f}, 1% {:.3f}, 5% {:.3f}, "
        "median {:.3f}".format(*q)
    )

    # near-duplicates: the listed neighbour pairs closer than --near, each once
    # (a pair is listed from both ends when each is among the other's nearest)
    a = np.repeat(np.arange(len(y)), ec.neighbors.shape[1])
    b = ec.neighbors.ravel()
    pairs = pd.DataFrame(
        {"a": np.minimum(a, b), "b": np.maximum(a, b), "distance": ec.distances.ravel()}
    ).drop_duplicates(["a", "b"])
    pairs["abs_diff"] = np.abs(y[pairs["a"]] - y[pairs["b"]])
    near = pairs[pairs["distance"] < args.near]
    print(
        f"\nNeighbour pairs closer than {args.near:g}: {len(near):,}; scored 4 or more "
        f"points apart: {int((near['abs_diff'] >= 4).sum()):,}; 6 or more: "
        f"{int((near['abs_diff'] >= 6).sum()):,}"
    )
    worst = near.sort_values(["abs_diff", "distance"], ascending=[False, True]).head(
        args.n_review
    )
    print(
        pd.DataFrame(
            {
                "id_a": ids[worst["a"]],
                "id_b": ids[worst["b"]],
                "distance": worst["distance"].to_numpy(),
                "score_a": y[worst["a"]],
                "score_b": y[worst["b"]],
            }
        ).to_string(index=False, float_format=lambda v: f"{v:.3f}")
    )

    print("\nEmpirical Lipschitz constants (smallest L satisfying the share of pairs):")
    print(lp.to_frame("quantiles").to_string(float_format=lambda v: f"{v:.3f}"))
    print(
        f"pairs with no score difference: {lp.n_always:,}; at distance 0 with "
        f"different scores: {lp.n_never:,}"
    )
    if args.figure is not None:
        from sklearn_fairaes.report.analyses._review import plot_lipschitz_profile

        curve = lp.to_frame("curve").reset_index()
        curve.insert(0, "system", "human")
        curve.insert(0, "representation", "tfidf")
        plot_lipschitz_profile(curve).savefig(args.figure, dpi=100)
        print(f"figure: {args.figure}")


if __name__ == "__main__":
    main()
