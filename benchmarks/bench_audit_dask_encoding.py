"""Sentence-BERT encoding of an audit: this process against a Dask ``LocalCluster`` (issue 35).

``--n`` essays of ASAP prompt 7 (default 600), the packaged MiniLM model as
the only representation, the second rater as a given system, no features
or paraphrases. Measures, in one run on the same machine:

1. the encoding cost per essay in this process (the model loaded first;
   ``SentenceBertEncoder.transform`` without a cache, as the study calls it);
2. the audit in this process, with a fresh cache folder (it encodes);
3. the audit with ``client=`` a process ``LocalCluster`` of ``--workers``
   single-threaded workers and another fresh cache folder: the encoding
   stage's wall time on the workers (each worker's model load included)
   from ``meta["encoding"]``, and the whole audit.

Prints the times, the machine's load, and checks that the tables are
identical and the two folders' vectors bit-identical.

Usage::

    python benchmarks/bench_audit_dask_encoding.py [--n 600] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

ASAP7 = Path(__file__).resolve().parents[2] / "shared/data/asap-aes/asap_aes_prompt7.tsv"

KW = {
    "text_col": "essay",
    "score_col": "rater1_domain1",
    "systems": {"rater2": "rater2_domain1"},
    "score_range": (0, 30),
    "representations": ["sbert"],
    "features": False,
    "paraphrases": False,
}


def _vectors(folder: Path, texts: list[str]):  # type: ignore[no-untyped-def]
    from sklearn_fairaes import SentenceBertEncoder
    from sklearn_fairaes.text import EmbeddingCache

    identity = SentenceBertEncoder().fit([""])._identity()

    def missing(texts):  # type: ignore[no-untyped-def]
        raise SystemExit(f"{len(texts)} essays are missing from {folder}")

    return EmbeddingCache(folder).get_or_compute(identity, texts, missing)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    if not ASAP7.exists():
        raise SystemExit(f"{ASAP7} not found: this benchmark needs ../shared/data")
    import distributed
    import numpy as np
    import pandas as pd
    from pandas.testing import assert_frame_equal

    import sklearn_fairaes as sf
    from sklearn_fairaes.text import load_sentence_transformer

    data = pd.read_csv(
        ASAP7, sep="\t", encoding="utf-8-sig", dtype=str, keep_default_na=False
    ).iloc[: args.n]
    essays = list(data["essay"])
    warnings.simplefilter("ignore")  # the truncation notes
    print(f"load average before: {os.getloadavg()}")
    t0 = time.perf_counter()
    load_sentence_transformer()
    t_load = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    sf.SentenceBertEncoder().fit(essays).transform(essays)
    t_encode, c_encode = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"this process: model load {t_load:.1f} s; encoding {args.n} essays "
        f"{t_encode:.1f} s wall ({1000 * t_encode / args.n:.1f} ms/essay), "
        f"{c_encode:.1f} CPU-s ({1000 * c_encode / args.n:.1f} CPU-ms/essay)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        local = sf.audit(data, cache=Path(tmp) / "local", **KW)
        t_local = time.perf_counter() - t0
        print(
            f"audit here: {t_local:.1f} s "
            f"(encoded {local.meta['embedding_cache']['encoded']} here)"
        )
        with (
            distributed.LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            t0 = time.perf_counter()
            on_dask = sf.audit(data, cache=Path(tmp) / "dask", client=client, **KW)
            t_dask = time.perf_counter() - t0
        info = on_dask.meta["encoding"]
        print(
            f"audit on {args.workers} worker processes: {t_dask:.1f} s; encoding stage "
            f"{info['seconds']} s ({info['chunks']} chunks, {info['model_loads']} model "
            f"loads, chunks per worker {list(info['chunks_per_worker'].values())}); "
            f"encoded here {on_dask.meta['embedding_cache']['encoded']}"
        )
        for name, table in local.tables.items():
            assert_frame_equal(on_dask.tables[name], table, check_exact=True, obj=name)
        same = np.array_equal(
            _vectors(Path(tmp) / "local", essays), _vectors(Path(tmp) / "dask", essays)
        )
        print(f"tables identical: True; vectors bit-identical: {same}")
    print(f"load average after: {os.getloadavg()}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
