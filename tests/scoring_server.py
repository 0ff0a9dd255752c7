"""A loopback HTTP scoring service for the tests of sklearn_fairaes.scorers.

It speaks HTTPScorer's protocol (``POST {"texts": [...]}`` -> ``{"scores":
[...]}``) and scores with a real fitted model given to it (``predict`` on
the texts), in a ``ThreadingHTTPServer`` bound to 127.0.0.1 on a free port.
Every request is counted at the server (``requests``: the texts of each, in
order of arrival), so that tests can tell what the client really sent.

Failures on demand:

* ``plan``: a list of failures for the next requests, one each, consumed in
  order: ``"429"`` (with ``Retry-After: <retry_after>``), ``"500"``,
  ``"garbage"`` (200, not JSON), ``"count"`` (200, one score too few),
  ``"string"`` (the score of the text at ``bad_at`` as a string), ``"nan"``
  (that score NaN), ``"late"`` (answer after ``late_s`` seconds);
* ``always``: one of these for every request (until set back to None);
* ``fail_from=k``: every request after the first k answers 500;
* ``token``: a bearer token the requests must carry (else 401);
* ``latency``: seconds each answer waits (a slow service);
* ``noise=p``: a grader that is noisy on purpose, as LLM graders are: each
  score of each request moves one point up or down with probability ``p``
  (a seeded RNG, ``noise_seed``), so the same request sent again can get
  another score (the test-retest tests).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScoringServer"]


class ScoringServer:
    """See the module docstring; use as a context manager."""

    def __init__(
        self,
        model: Any,
        *,
        latency: float = 0.0,
        token: str | None = None,
        noise: float = 0.0,
        noise_seed: int = 0,
    ):
        import numpy as np

        self.model = model
        self.noise = noise
        self._rng = np.random.default_rng(noise_seed)
        self.latency = latency
        self.token = token
        self.plan: list[str] = []
        self.always: str | None = None
        self.fail_from: int | None = None
        self.retry_after = "0"
        self.late_s = 1.0
        self.bad_at = 0
        self.requests: list[list[str]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/score"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def n_requests(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> ScoringServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _failure(self) -> str | None:
        with self._lock:
            k = len(self.requests)
            if self.fail_from is not None and k > self.fail_from:
                return "500"
            if self.plan:
                return self.plan.pop(0)
            return self.always

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet tests
                pass

            def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                texts = json.loads(self.rfile.read(length))["texts"]
                with outer._lock:
                    outer.requests.append(list(texts))
                    outer.headers.append(dict(self.headers.items()))
                if outer.token is not None and (
                    self.headers.get("Authorization") != f"Bearer {outer.token}"
                ):
                    self._send(401, b'{"error": "bad token"}')
                    return
                failure = outer._failure()
                if outer.latency:
                    time.sleep(outer.latency)
                if failure == "429":
                    self._send(429, b"{}", {"Retry-After": outer.retry_after})
                    return
                if failure == "500":
                    self._send(500, b"<html>internal error</html>")
                    return
                if failure == "garbage":
                    self._send(200, b"<html>not json</html>")
                    return
                if failure == "late":
                    time.sleep(outer.late_s)
                scores: list[Any] = [float(v) for v in outer.model.predict(texts)]
                if outer.noise:
                    with outer._lock:  # one RNG for every thread
                        moved = outer._rng.random(len(scores)) < outer.noise
                        sign = outer._rng.choice([-1.0, 1.0], size=len(scores))
                    scores = [v + float(d) * m for v, d, m in zip(scores, sign, moved)]
                if failure == "count":
                    scores = scores[:-1]
                elif failure == "string" and outer.bad_at < len(scores):
                    scores[outer.bad_at] = str(scores[outer.bad_at])
                elif failure == "nan" and outer.bad_at < len(scores):
                    scores[outer.bad_at] = float("nan")
                self._send(200, json.dumps({"scores": scores}).encode())

        return Handler
