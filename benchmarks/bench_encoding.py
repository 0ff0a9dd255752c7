"""Encoding benchmark: our SentenceBertEncoder against raw sentence-transformers.

Measured in one run, on the same ASAP prompt-7 essays:

1. ``SentenceBertEncoder.transform`` (cache off) vs ``SentenceTransformer.encode``
   on the same texts: throughput ratio (ours / raw; >= 0.9 expected: the wrapper
   adds validation and a tokenizer pass to count long essays).
2. A 5-fold x 4-candidate ``GridSearchCV`` over ``SentenceBertEncoder + Ridge``
   with the embedding cache and without it: wall-time ratio and encoder calls.

Usage::

    python benchmarks/bench_encoding.py [--n-essays 500] [--n-search 120]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "asap-aes"


def load_essays(n):
    import pandas as pd

    df = pd.read_csv(
        DATA / "asap_aes_prompt7.tsv",
        sep="\t",
        encoding="utf-8-sig",
        dtype=str,
        keep_default_na=False,
    )
    return list(df["essay"].iloc[:n]), df["domain1_score"].astype(float).iloc[:n].to_numpy()


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-essays", type=int, default=500)
    parser.add_argument(
        "--n-search", type=int, default=120, help="essays in the grid-search comparison"
    )
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)

    import warnings

    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    from sklearn_fairaes import SentenceBertEncoder
    from sklearn_fairaes.exceptions import LongTextWarning
    from sklearn_fairaes.text import EmbeddingCache, load_sentence_transformer

    warnings.simplefilter("ignore", LongTextWarning)
    essays, y = load_essays(args.n_essays)
    raw_model = load_sentence_transformer("all-MiniLM-L6-v2")
    enc = SentenceBertEncoder(cache=None).fit(essays)
    raw_model.encode(essays[:16])  # warm up threads and allocator

    t_raw, raw = best_of(lambda: raw_model.encode(essays, batch_size=32), args.repeat)
    t_ours, ours = best_of(lambda: enc.transform(essays), args.repeat)
    diff = float(np.abs(ours - raw).max())
    print(
        f"[1] {len(essays)} essays: raw sentence-transformers {t_raw:.2f} s "
        f"({len(essays) / t_raw:.1f} essays/s), SentenceBertEncoder {t_ours:.2f} s "
        f"({len(essays) / t_ours:.1f} essays/s)"
    )
    print(
        f"    throughput ratio ours/raw = {t_raw / t_ours:.3f} (>= 0.9 expected); "
        f"max |diff| = {diff:.2e}"
    )

    sub, ysub = essays[: args.n_search], y[: args.n_search]
    grid = {"ridge__alpha": [0.1, 1.0, 10.0, 100.0]}
    calls = {"n": 0}
    real = SentenceBertEncoder._encode

    def counting(self, texts):
        calls["n"] += len(texts)
        return real(self, texts)

    SentenceBertEncoder._encode = counting
    try:
        results = {}
        for label, cache in (("with cache", EmbeddingCache()), ("without cache", None)):
            calls["n"] = 0
            search = GridSearchCV(
                make_pipeline(SentenceBertEncoder(cache=cache), Ridge()), grid, cv=5
            )
            t = time.perf_counter()
            search.fit(sub, ysub)
            results[label] = (time.perf_counter() - t, calls["n"], search.best_params_)
    finally:
        SentenceBertEncoder._encode = real
    (tc, nc, pc), (tn, nn, pn) = results["with cache"], results["without cache"]
    print(
        f"[2] GridSearchCV 5 folds x 4 candidates on {len(sub)} essays: "
        f"with cache {tc:.1f} s ({nc} essays encoded), without {tn:.1f} s "
        f"({nn} encoded); speed-up {tn / tc:.1f}x; same best params: {pc == pn}"
    )


if __name__ == "__main__":
    main()
