"""Sentence-BERT encoding beside a busy Python thread, by GIL switch interval.

Why the audit shortens the interpreter's switch interval while the WordNet
paraphrases (pure Python) run in a thread beside the encoder
(``sklearn_fairaes/report/_build.py``): between its torch operations the
encoder runs Python, and at each of them it waits for the other thread to
hand the GIL over, up to the switch interval (5 ms by default).

For each interval (5, 1 and 0.2 ms) and torch's 2 and 1 threads, the script
encodes the first ``--n-essays`` ASAP prompt-7 essays with MiniLM while a
thread runs a Python loop, and prints the encoder's essays/s and the loop's
iterations/s (both against the same encoder alone, first).

Usage::

    python benchmarks/bench_gil_overlap.py [--n-essays 400]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ASAP7 = Path(__file__).resolve().parents[2] / "shared/data/asap-aes/asap_aes_prompt7.tsv"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-essays", type=int, default=400)
    args = parser.parse_args(argv)
    import pandas as pd
    import torch

    from sklearn_fairaes.text import load_sentence_transformer

    if not ASAP7.exists():
        raise SystemExit(f"{ASAP7} not found: this benchmark needs ../shared/data")
    data = pd.read_csv(ASAP7, sep="\t", dtype=str, keep_default_na=False)
    essays = data["essay"].tolist()[: args.n_essays]
    model = load_sentence_transformer("all-MiniLM-L6-v2")
    model.encode(essays[:32])
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    loops = [0]

    def busy(stop: threading.Event) -> None:
        while not stop.is_set():
            x = 0
            for k in range(10_000):
                x += k * k
            loops[0] += 1

    t = time.perf_counter()
    model.encode(essays)
    print(f"encoder alone (torch {torch.get_num_threads()} threads): "
          f"{len(essays) / (time.perf_counter() - t):.1f} essays/s")  # fmt: skip
    stop = threading.Event()
    loops[0] = 0
    th = threading.Thread(target=busy, args=(stop,))
    t = time.perf_counter()
    th.start()
    time.sleep(5)
    stop.set()
    th.join()
    print(f"Python loop alone: {loops[0] / (time.perf_counter() - t):.0f} iterations/s")
    default_interval = sys.getswitchinterval()
    threads = torch.get_num_threads()
    try:
        for interval in (0.005, 0.001, 0.0002):
            sys.setswitchinterval(interval)
            for n_threads in (threads, 1):
                torch.set_num_threads(n_threads)
                loops[0] = 0
                stop = threading.Event()
                th = threading.Thread(target=busy, args=(stop,))
                th.start()
                t = time.perf_counter()
                model.encode(essays)
                took = time.perf_counter() - t
                stop.set()
                th.join()
                print(f"switch interval {interval * 1e3:4.1f} ms, torch {n_threads} "
                      f"thread(s), beside the loop: {len(essays) / took:5.1f} essays/s, "
                      f"loop {loops[0] / took:5.0f} iterations/s")  # fmt: skip
    finally:
        sys.setswitchinterval(default_interval)
        torch.set_num_threads(threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
