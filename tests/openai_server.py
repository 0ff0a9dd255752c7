"""A loopback OpenAI-compatible grader for the tests of OpenAIScorer.

It answers ``POST /v1/chat/completions`` in the OpenAI response shape
(``{"choices": [{"message": {"role": "assistant", "content": ...}}], ...}``)
from a ``ThreadingHTTPServer`` bound to 127.0.0.1 on a free port. Every
request is counted and kept (``bodies``: the decoded JSON; ``headers``).

The grader is noisy on purpose, as LLM graders are: the score of an essay
of *w* words is ``round(a + b * log(w) + noise)`` clipped to ``scale``, the
noise ``normal(0, noise)`` drawn from a generator seeded by the request's
``seed`` and the essay (a server honouring ``seed`` repeats itself) or, with
no seed, by the server's ``rng_seed`` and the request's number (the same
essay asked twice can get two scores). ``grade(essay, seed)`` is that
function, for tests to compute the expected score independently of the
client. The essay is what stands between ``<essay>`` and ``</essay>`` in the
last user message (the whole message when there are no such tags).

Failures on demand (as in ``scoring_server``): ``plan`` (the next requests,
one each), ``always`` (every request) and ``fail_on`` (essay -> failure, for
the requests of that essay), each one of ``"429"`` (with ``Retry-After:
<retry_after>``), ``"500"``, ``"garbage"`` (200, not JSON), ``"nochoices"``
(200, JSON without ``choices``), ``"noscore"`` (a reply with no number),
``"offscale"`` (``Score: high + 3``), ``"late"`` (answer after ``late_s``
seconds). ``reply`` formats the content (``{score}`` is replaced);
``token`` is a bearer token the requests must carry (else 401).
"""

from __future__ import annotations

import json
import math
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

__all__ = ["OpenAIServer"]


class OpenAIServer:
    """See the module docstring; use as a context manager."""

    def __init__(
        self,
        *,
        a: float = -6.0,
        b: float = 4.0,
        noise: float = 1.0,
        scale: tuple[int, int] = (0, 24),
        rng_seed: int = 0,
        token: str | None = None,
    ) -> None:
        self.a, self.b, self.noise, self.scale = a, b, noise, scale
        self.rng_seed = rng_seed
        self.token = token
        self.reply = "The essay tells its story clearly.\nScore: {score}"
        self.plan: list[str] = []
        self.always: str | None = None
        self.fail_on: dict[str, str] = {}
        self.retry_after = "0"
        self.late_s = 1.0
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def n_requests(self) -> int:
        with self._lock:
            return len(self.bodies)

    def essays_asked(self) -> list[str]:
        """The essay of each request, in order of arrival."""
        with self._lock:
            return [self.essay_of(b) for b in self.bodies]

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @staticmethod
    def essay_of(body: dict[str, Any]) -> str:
        text = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        start, end = text.find("<essay>"), text.find("</essay>")
        if start < 0 or end < start:
            return text
        return text[start + len("<essay>") : end].strip()

    def grade(self, essay: str, seed: int | None = None, request: int = 0) -> int:
        """The score this server gives ``essay`` (for ``request``-th request without seed)."""
        words = max(1, len(essay.split()))
        if seed is None:
            rng = np.random.default_rng([self.rng_seed, request])
        else:
            rng = np.random.default_rng([int(seed) % 2**32, zlib.crc32(essay.encode())])
        raw = self.a + self.b * math.log(words) + rng.normal(0.0, self.noise)
        return int(min(max(round(raw), self.scale[0]), self.scale[1]))

    def _failure(self, essay: str) -> str | None:
        with self._lock:
            if self.plan:
                return self.plan.pop(0)
            return self.fail_on.get(essay, self.always)

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
                body = json.loads(self.rfile.read(length))
                with outer._lock:
                    number = len(outer.bodies)
                    outer.bodies.append(body)
                    outer.headers.append(dict(self.headers.items()))
                if self.path != "/v1/chat/completions":
                    self._send(404, b'{"error": "no such route"}')
                    return
                if outer.token is not None and (
                    self.headers.get("Authorization") != f"Bearer {outer.token}"
                ):
                    self._send(401, b'{"error": "bad token"}')
                    return
                essay = outer.essay_of(body)
                failure = outer._failure(essay)
                if failure == "429":
                    self._send(429, b"{}", {"Retry-After": outer.retry_after})
                    return
                if failure == "500":
                    self._send(500, b"<html>internal error</html>")
                    return
                if failure == "garbage":
                    self._send(200, b"<html>not json</html>")
                    return
                if failure == "nochoices":
                    self._send(200, b'{"object": "chat.completion", "choices": []}')
                    return
                if failure == "late":
                    time.sleep(outer.late_s)
                score = outer.grade(essay, body.get("seed"), number)
                content = outer.reply.format(score=score)
                if failure == "noscore":
                    content = "I am unable to grade this essay."
                elif failure == "offscale":
                    content = f"Score: {outer.scale[1] + 3}"
                answer = {
                    "id": f"chatcmpl-{number}",
                    "object": "chat.completion",
                    "created": 1_700_000_000,
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": 1,
                        "completion_tokens": 1,
                        "total_tokens": 2,
                    },
                }
                self._send(200, json.dumps(answer).encode())

        return Handler
