"""A loopback server that speaks LanguageTool's HTTP API, for tests.

No LanguageTool can be installed on the test machines, so the tests run the
real client code path (``language_tool_python.LanguageTool('en-US',
remote_server=URL)``) against this small server: stdlib ``http.server`` in a
daemon thread, bound to 127.0.0.1 on a free port.

Endpoints: ``GET /v2/languages``, ``POST /v2/check`` (form-encoded, as the
client sends it; ``GET`` with a query string works too) and
``GET /v2/healthcheck``. The JSON has LanguageTool's shape.

Its "grammar checking" is three deterministic rules, so tests can work out the
expected matches by hand:

* ``ENGLISH_WORD_REPEAT_RULE`` (category ``MISC``): a word repeated right after
  itself, case-insensitively (``"the the"``), one match per repetition;
* ``UPPERCASE_SENTENCE_START`` (category ``CASING``): a lower-case letter that
  starts the text or follows ``.``, ``!`` or ``?`` and white space;
* ``MORFOLOGIK_RULE_EN_US`` (category ``TYPOS``, issue type ``misspelling``):
  each occurrence of a word in :data:`MISSPELLED` (whole word, any case) --
  a spelling match, which the client must not count as a language error.

Rule-selection parameters (``disabledCategories``, ...) are recorded in
:attr:`LoopbackLanguageTool.requests` but not applied, so the client-side
filter is what a test exercises.

A server that passes the start-up check and fails later:
``LoopbackLanguageTool(fail_from=15)`` answers ``/v2/check`` request 16 and
every later one with ``failure`` -- ``"500"`` (HTTP 500, an HTML body) or
``"garbage"`` (HTTP 200, a body that is not JSON); ``fail_times=k`` fails k
requests only, then answers again (a server busy for a moment).

Usage::

    with LoopbackLanguageTool() as lt:
        InterpretableFeatures(grammar=lt.url, ...)
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["MISSPELLED", "LoopbackLanguageTool", "expected_matches"]

#: Words the TYPOS rule flags.
MISSPELLED = frozenset({"teh", "recieve", "wierd"})

_REPEAT = re.compile(r"\b(\w+)(\s+)(\1)\b", re.IGNORECASE)
_SENTENCE_START = re.compile(r"(?:^\s*|[.!?]\s+)([a-z])")
_WORD = re.compile(r"\b\w+\b")

_LANGUAGES = [
    {"name": "English", "code": "en", "longCode": "en"},
    {"name": "English (US)", "code": "en", "longCode": "en-US"},
    {"name": "English (GB)", "code": "en", "longCode": "en-GB"},
]
_CATEGORY_NAMES = {
    "MISC": "Miscellaneous",
    "CASING": "Capitalization",
    "TYPOS": "Possible Typo",
}


def _match(text, offset, length, rule_id, category, issue, message, replacement):
    start = max(0, offset - 20)
    context = text[start : offset + length + 20]
    return {
        "message": message,
        "shortMessage": "",
        "replacements": [{"value": replacement}] if replacement else [],
        "offset": offset,
        "length": length,
        "context": {"text": context, "offset": offset - start, "length": length},
        "sentence": text,
        "type": {"typeName": "Other"},
        "rule": {
            "id": rule_id,
            "description": message,
            "issueType": issue,
            "category": {"id": category, "name": _CATEGORY_NAMES[category]},
        },
        "ignoreForIncompleteSentence": False,
        "contextForSureMatch": 0,
    }


def expected_matches(text):
    """The matches this server returns for ``text``, as LanguageTool JSON dicts."""
    out = []
    pos = 0
    while True:
        m = _REPEAT.search(text, pos)
        if m is None:
            break
        out.append(
            _match(
                text, m.start(3), len(m.group(3)), "ENGLISH_WORD_REPEAT_RULE", "MISC",
                "duplication", "Possible typo: you repeated a word.", m.group(1),
            )
        )  # fmt: skip
        pos = m.start(3)  # "the the the" repeats twice
    for m in _SENTENCE_START.finditer(text):
        out.append(
            _match(
                text, m.start(1), 1, "UPPERCASE_SENTENCE_START", "CASING",
                "typographical", "This sentence does not start with an uppercase letter.",
                m.group(1).upper(),
            )
        )  # fmt: skip
    for m in _WORD.finditer(text):
        if m.group().lower() in MISSPELLED:
            out.append(
                _match(
                    text, m.start(), len(m.group()), "MORFOLOGIK_RULE_EN_US", "TYPOS",
                    "misspelling", "Possible spelling mistake found.", "",
                )
            )  # fmt: skip
    out.sort(key=lambda d: d["offset"])
    return out


class _Handler(BaseHTTPRequestHandler):
    server_version = "LoopbackLanguageTool/1.0"

    def log_message(self, format, *args):  # keep test output clean
        pass

    def _send_json(self, payload, status=200):
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _route(self, params):
        path = urllib.parse.urlparse(self.path).path.rstrip("/")
        if path == "/v2/languages":
            return self._send_json(_LANGUAGES)
        if path == "/v2/healthcheck":
            body = b"OK"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return None
        if path == "/v2/check":
            owner = self.server.owner
            with owner._lock:
                owner.requests.append(dict(params))
                k = len(owner.requests) - 1
            if owner.fails(k):
                return self._fail(owner.failure)
            text = params.get("text", "")
            language = params.get("language", "")
            if not text or not language:
                return self._send_json({"error": "missing text or language"}, status=400)
            return self._send_json(
                {
                    "software": {
                        "name": "LanguageTool",
                        "version": "loopback",
                        "apiVersion": 1,
                    },
                    "language": {"name": "English (US)", "code": language},
                    "matches": expected_matches(text),
                }
            )
        return self._send_json({"error": f"unknown path {path}"}, status=404)

    def _fail(self, failure):
        if failure == "500":
            body, status = b"<html><body>Internal Server Error</body></html>", 500
        else:
            body, status = b"this is not JSON", 200
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        query = urllib.parse.urlparse(self.path).query
        self._route(dict(urllib.parse.parse_qsl(query, keep_blank_values=True)))

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8")
        self._route(dict(urllib.parse.parse_qsl(raw, keep_blank_values=True)))


class LoopbackLanguageTool:
    """A LanguageTool-API server on 127.0.0.1 in a background thread.

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:<port>``, once started.
    requests : list of dict
        The form parameters of every ``/v2/check`` request received.

    Parameters
    ----------
    fail_from : int, default=None
        The first ``/v2/check`` request (from 0) answered with ``failure``;
        None: none.
    fail_times : int, default=None
        How many requests fail from ``fail_from`` on; None: all of them.
    failure : {"500", "garbage"}, default="500"
        An HTTP 500 with an HTML body, or an HTTP 200 whose body is not JSON.
    """

    def __init__(self, fail_from=None, fail_times=None, failure="500"):
        if failure not in ("500", "garbage"):
            raise ValueError(f"failure must be '500' or 'garbage', got {failure!r}")
        self.fail_from, self.fail_times, self.failure = fail_from, fail_times, failure
        self.requests = []
        self._lock = threading.Lock()
        self._server = None
        self._thread = None
        self.url = None

    def start(self):
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.owner = self
        port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="loopback-languagetool", daemon=True
        )
        self._thread.start()
        return self

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def fails(self, k):
        """Whether ``/v2/check`` request ``k`` (from 0) is answered with the failure."""
        if self.fail_from is None or k < self.fail_from:
            return False
        return self.fail_times is None or k < self.fail_from + self.fail_times

    def check_requests(self):
        """The ``/v2/check`` requests received so far (a copy)."""
        with self._lock:
            return list(self.requests)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
