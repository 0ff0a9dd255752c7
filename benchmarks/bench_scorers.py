"""Issue 34: throughput of HTTPScorer against a service that answers in 200 ms.

A loopback HTTP service (``ThreadingHTTPServer`` on 127.0.0.1, the protocol of
:class:`~sklearn_fairaes.scorers.HTTPScorer`) waits ``--latency`` seconds per
request, then scores each text by its word count (the model is not what is
timed). The same texts are scored at each concurrency (threads), with a fresh
answer cache each time, then once more on a filled cache (no request). The
script prints texts/s and requests/s per concurrency, the requests counted at
the server, and the speed-up over concurrency 1, and checks that every run
returned the same scores.

Usage::

    python benchmarks/bench_scorers.py [--n-texts 96] [--batch-size 2] [--latency 0.2]

Defaults: 96 texts in batches of 2 (48 requests per run): about 10 s at
concurrency 1, well under a minute in all.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from sklearn_fairaes.scorers import HTTPScorer


def serve(latency: float) -> tuple[ThreadingHTTPServer, list[int]]:
    counted: list[int] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))[
                "texts"
            ]
            with lock:
                counted.append(len(texts))
            time.sleep(latency)
            body = json.dumps({"scores": [len(t.split()) for t in texts]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-texts", type=int, default=96)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", default="1,4,16")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    texts = [f"essay {k} " + "word " * (k % 37) for k in range(args.n_texts)]
    server, counted = serve(args.latency)
    url = f"http://127.0.0.1:{server.server_address[1]}/score"
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(
        f"{args.n_texts} texts, batches of {args.batch_size}, "
        f"{args.latency * 1000:.0f} ms per request"
    )
    print("concurrency | requests | seconds | texts/s | requests/s | speed-up")
    reference = None
    base = None
    with tempfile.TemporaryDirectory() as folder:
        for c in levels:
            cache = os.path.join(folder, f"c{c}.sqlite")
            scorer = HTTPScorer(url, batch_size=args.batch_size, concurrency=c, cache=cache)
            before = len(counted)
            started = time.perf_counter()
            scores = scorer.predict(texts)
            took = time.perf_counter() - started
            sent = len(counted) - before
            if reference is None:
                reference = scores
            assert np.array_equal(scores, reference), "scores differ between runs"
            base = base or took
            print(
                f"{c:>11} | {sent:>8} | {took:7.2f} | {args.n_texts / took:7.1f} | "
                f"{sent / took:10.1f} | {base / took:7.2f}x"
            )
        before = len(counted)
        started = time.perf_counter()
        scorer.predict(texts)
        took = time.perf_counter() - started
        print(
            f"re-run on the filled cache (concurrency {levels[-1]}): "
            f"{len(counted) - before} requests, {took:.3f} s"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    server.shutdown()


if __name__ == "__main__":
    main()
