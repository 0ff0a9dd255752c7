"""POS tagging with the tok2vec's products through NumPy's BLAS, against blis.

Issue 35, item 2 (a first run in minutes). Tagging is most of a first audit's
per-essay work, and most of tagging is the spaCy tok2vec's matrix products,
which thinc's ``NumpyOps`` computes with blis. The package's tagger
(``features._pos._load``) hands them to NumPy's BLAS instead. This script tags
the same essays, in the same batches, with

1. spaCy's pipeline as ``spacy.load`` gives it (blis), and
2. the package's pipeline (NumPy's BLAS),

each with one BLAS thread (as in an audit's worker process), and prints the
CPU seconds of each, their ratio, the tokens per CPU-second, and how many of
the tags differ (the claim is: none). The essays are every ``--every``-th
essay of the eight ASAP prompts (the five NEA test folds), read line by line
as ``bench_audit_prompts.py`` does.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_tagger.py --n 2500
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_audit_prompts import FOLDS, read_fold  # noqa: E402


def essays(n: int) -> list[str]:
    texts: list[str] = []
    for k in range(5):
        texts.extend(read_fold(FOLDS / f"fold_{k}_test.tsv")["essay"])
    step = max(1, len(texts) // n)
    return texts[::step][:n]


def tag_all(nlp, tokenized) -> tuple[list[list[str]], float]:
    """The tags of every essay (the package's own batching) and the CPU seconds."""
    from sklearn_fairaes.features import _pos

    saved = _pos._TAGGERS.copy()
    label = "spacy:bench"
    _pos._TAGGERS[label] = nlp
    try:
        _pos._run_tagger(tokenized[:8], label)  # warm up: first-call allocations
        t0 = time.process_time()
        tags = _pos._run_tagger(tokenized, label)
        return tags, time.process_time() - t0
    finally:
        _pos._TAGGERS.clear()
        _pos._TAGGERS.update(saved)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2500, help="essays to tag")
    args = parser.parse_args()
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        print("note: OPENBLAS_NUM_THREADS is not 1: CPU seconds include BLAS threads")

    import spacy

    from sklearn_fairaes.features import _pos
    from sklearn_fairaes.features._tokenize import tokenize_essay

    label = _pos.resolve_pos_tagger("spacy")
    model = label[len("spacy:") :]
    texts = essays(args.n)
    tokenized = [tokenize_essay(t) for t in texts]
    exclude = ["parser", "ner", "lemmatizer", "attribute_ruler", "senter"]
    stock = spacy.load(model, exclude=exclude)
    ours = _pos._load(label)
    print(f"load average {os.getloadavg()[0]:.2f}; {len(texts):,} essays, model {model}")
    stock_tags, stock_s = tag_all(stock, tokenized)
    our_tags, our_s = tag_all(ours, tokenized)
    n_tokens = sum(len(t) for t in stock_tags)
    differ = sum(a != b for x, y in zip(stock_tags, our_tags) for a, b in zip(x, y))
    lengths = sum(len(x) != len(y) for x, y in zip(stock_tags, our_tags))
    print(f"tokens {n_tokens:,}")
    print(
        f"blis (spacy.load):      {stock_s:7.2f} CPU-s, {n_tokens / stock_s:9,.0f} tokens/CPU-s"
    )
    print(
        f"NumPy's BLAS (package): {our_s:7.2f} CPU-s, {n_tokens / our_s:9,.0f} tokens/CPU-s"
    )
    print(f"ratio {stock_s / our_s:.2f}x; tags differing: {differ} of {n_tokens:,}")
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 1 if differ or lengths else 0


if __name__ == "__main__":
    sys.exit(main())
