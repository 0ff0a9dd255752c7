"""The audit's per-essay costs (issue 35): CPU seconds per essay of each stage.

On a random sample of the eight ASAP prompts' essays (``--n``, 50 per prompt
by default, read as ``bench_audit_prompts.py`` reads the folds), in one fresh
process with no cache: the one-off loads (spaCy's tagger, WordNet), then per
essay the POS tagging, the WordNet paraphrases given the tags, the feature
counts given the tags, and the TF-IDF analyzer (lemmas) that a re-run still
pays. CPU time (``time.process_time``), so that a figure taken beside other
jobs still argues the quiet-machine wall time: essays x seconds / cores.

Usage::

    python benchmarks/bench_per_essay.py [--per-prompt 50]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-prompt", type=int, default=50)
    args = parser.parse_args(argv)
    import bench_audit_prompts as b

    data = b._sample(b.read_asap(b.FOLDS), "essay_set", args.per_prompt)
    essays = list(data["essay"])
    n = len(essays)
    load0 = os.getloadavg()[0]
    from sklearn_fairaes.features import InterpretableFeatures, _pos
    from sklearn_fairaes.features._tokenize import tokenize_essay
    from sklearn_fairaes.paraphrase import WordNetParaphraser
    from sklearn_fairaes.report._inputs import _chosen_features
    from sklearn_fairaes.resources import wordnet_reader
    from sklearn_fairaes.text import TfidfEssayVectorizer

    rows = []

    def timed(label: str, fn, per_essay: bool = True):  # type: ignore[no-untyped-def]
        t0 = time.process_time()
        out = fn()
        cpu = time.process_time() - t0
        rows.append((label, cpu, cpu / n if per_essay else None))
        return out

    label = _pos.resolve_pos_tagger("auto")
    timed("load spaCy tagger (once per process)", lambda: _pos._load(label), False)
    timed("load WordNet (once per process)", wordnet_reader, False)
    toks = timed("tokenize", lambda: [tokenize_essay(e) for e in essays])
    with _pos.tag_memo_disabled():
        timed("POS tagging (spaCy, batches of 64)", lambda: _pos._run_tagger(toks, label))
    # the tags in the memo, as the audit's one tagging pass leaves them
    _pos.tag_essays(toks, label)
    timed(
        "WordNet paraphrases (tags given)",
        lambda: WordNetParaphraser(random_state=0).fit_transform(essays),
    )
    chosen, _ = _chosen_features(False, None)
    y = data["rater1_domain1"].astype(float).to_numpy()
    timed(
        "feature counts + good n-grams (tags given)",
        lambda: InterpretableFeatures(
            features=chosen, n_jobs=1, progress=False
        ).fit_transform(essays, y),
    )
    timed("TF-IDF fit (lemmas)", lambda: TfidfEssayVectorizer().fit_transform(essays))
    print(
        f"{n} essays ({args.per_prompt} per ASAP prompt), mean {data['essay'].str.len().mean():.0f}"
        f" characters; load average {load0:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    print(f"{'stage':48} {'CPU s':>8} {'CPU ms/essay':>13}")
    for stage, cpu, per in rows:
        shown = "" if per is None else f"{1000 * per:13.2f}"
        print(f"{stage:48} {cpu:8.2f} {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
