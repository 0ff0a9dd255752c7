"""The audit report in a real browser: headless Chromium.

The report is opened from a file, as a user would, and watched through the
Chrome DevTools Protocol: every console message, uncaught exception, browser
log entry (failed loads, refused content) and network request is recorded,
and after loading the page checks that every image decoded. A full-page
screenshot goes to ``artifacts/`` for a person to look at.

The protocol runs over ``--remote-debugging-pipe`` (NUL-separated JSON on
file descriptors 3 and 4), so no port, no websocket library and no extra
Python package is needed. The tests skip, naming the missing program, when
Chromium is not installed (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import missing_resource, require_module

require_module("pandas", "report")
require_module("matplotlib", "report")

from report_fixtures import make_audit_tables  # noqa: E402

from sklearn_fairaes.report._html import render_html  # noqa: E402
from sklearn_fairaes.report.analyses import make_figures  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "artifacts"
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A 1x1 transparent PNG: a known-good image for the negative-control pages.
TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

# Runs in the page after load: every image must have finished loading, have a
# size and decode (img.decode() rejects for broken data).
IMAGE_CHECK = """
(async () => {
  const images = Array.from(document.images);
  const results = [];
  for (const img of images) {
    let decoded = true;
    try { await img.decode(); } catch (e) { decoded = false; }
    results.push({alt: img.alt, complete: img.complete, width: img.naturalWidth,
                  height: img.naturalHeight, decoded: decoded});
  }
  return JSON.stringify(results);
})()
"""


_TRAMPOLINE = """
import fcntl, os, sys
ends = [fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3]]
for fd in sys.argv[1:3]:
    os.close(int(fd))
for target, fd in zip((3, 4), ends):
    os.dup2(fd, target)
    os.close(fd)
os.execv(sys.argv[3], sys.argv[3:])
"""


def _find_chromium():
    for name in CHROMIUM_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class CDPError(RuntimeError):
    """The browser answered a DevTools command with an error, or went away."""


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe."""

    def __init__(self, executable, profile_dir, *, timeout=30.0):
        self.timeout = timeout
        self._next_id = 0
        self._buffer = b""
        self.events = []
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        self._stderr_path = Path(profile_dir) / "chromium-stderr.log"
        args = [
            executable,
            "--headless",
            "--no-sandbox",  # CI containers run as root, where the sandbox refuses to start
            "--disable-gpu",
            "--disable-dev-shm-usage",  # small /dev/shm in containers
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            "--mute-audio",
            f"--user-data-dir={profile_dir}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        # Chromium reads commands from fd 3 and writes replies to fd 4. subprocess
        # cannot choose fd numbers, so a tiny Python trampoline moves our pipe ends
        # there (via fds >= 10, so that neither end is overwritten by the other).
        with open(self._stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _TRAMPOLINE,
                    str(to_browser_r),
                    str(from_browser_w),
                    *args,
                ],
                pass_fds=(to_browser_r, from_browser_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        os.close(to_browser_r)
        os.close(from_browser_w)

    # -- protocol --------------------------------------------------------------

    def _stderr_tail(self):
        try:
            return self._stderr_path.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError(
                    f"no answer from Chromium within {self.timeout} s; its stderr:\n"
                    + self._stderr_tail()
                )
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise CDPError(
                    f"Chromium closed the DevTools pipe (exit code {self.process.poll()}); "
                    f"its stderr:\n{self._stderr_tail()}"
                )
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, *, session=None):
        """Send one command and return its result; events meanwhile are recorded."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CDPError(f"{method} failed: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method, *, session=None):
        """Wait for an event (or take it from those already recorded)."""
        deadline = time.monotonic() + self.timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            seen = len(self.events)
            self.events.append(self._read_message(deadline))

    def close(self):
        try:
            if self.process.poll() is None:
                self.send("Browser.close")
        except (CDPError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()  # only the browser we started
            self.process.wait(timeout=10)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass

    # -- pages -------------------------------------------------------------------

    def open(self, path, *, screenshot=None):
        """Load a local HTML file and report what happened.

        Returns a dict: ``errors`` (console errors, uncaught exceptions and
        error-level browser log entries, as text), ``requests`` (URLs other
        than ``file:`` and ``data:`` that the page asked for), ``images``
        (per image: alt, complete, width, height, decoded) and ``text`` (the
        page's visible text).
        """
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        start = len(self.events)
        try:
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.send(f"{domain}.enable", session=session)
            self.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            self.send(
                "Page.navigate", {"url": Path(path).resolve().as_uri()}, session=session
            )
            self.wait_for("Page.loadEventFired", session=session)
            images = json.loads(
                self.send(
                    "Runtime.evaluate",
                    {
                        "expression": IMAGE_CHECK,
                        "awaitPromise": True,
                        "returnByValue": True,
                    },
                    session=session,
                )["result"]["value"]
            )
            text = self.send(
                "Runtime.evaluate",
                {"expression": "document.body.innerText", "returnByValue": True},
                session=session,
            )["result"]["value"]
            if screenshot is not None:
                shot = self.send(
                    "Page.captureScreenshot",
                    {"format": "png", "captureBeyondViewport": True, "fromSurface": True},
                    session=session,
                )
                Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
            # A round trip after the checks lets messages logged during load arrive.
            self.send("Runtime.evaluate", {"expression": "1"}, session=session)
        finally:
            self.send("Target.closeTarget", {"targetId": target})
        return {**_problems(self.events[start:], session), "images": images, "text": text}


def _problems(events, session):
    errors, requests = [], []
    for event in events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in (
            "error",
            "assert",
        ):
            args = " ".join(
                str(a.get("value", a.get("description", "")))
                for a in params.get("args", [])
            )
            errors.append(f"console.{params['type']}: {args}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            description = details.get("exception", {}).get("description") or details.get(
                "text"
            )
            errors.append(f"uncaught exception: {description}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            errors.append(
                f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}"
            )
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith(("data:", "file:")):
                requests.append(url)
    return {"errors": errors, "requests": requests}


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    executable = _find_chromium()
    if executable is None:
        missing_resource(
            "Chromium (none of "
            + ", ".join(CHROMIUM_CANDIDATES)
            + " found; on Debian: apt-get install chromium)"
        )
    chromium = Chromium(executable, tmp_path_factory.mktemp("chromium-profile"))
    try:
        chromium.send("Browser.getVersion")
        yield chromium
    finally:
        chromium.close()


def _write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>t</title></head>'
        f"<body>{body}</body></html>",
        encoding="utf-8",
    )
    return path


# --------------------------------------------------------------------------- report


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    injected = (
        '<script>console.error("injected script ran")</script> & "quoted" '
        "<img src=x onerror=\"console.error('injected handler ran')\">"
    )
    tables, meta = make_audit_tables(
        representations=("bow", "sbert"),
        models=("ridge", "gradient_boosting"),
        hostile_text=injected,
        n_essays=24,
    )
    figures = make_figures(tables, meta)
    page = render_html(tables, meta, figures)
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "report_browser_test.html"
    path.write_text(page, encoding="utf-8")
    return path, len(figures), injected


def test_report_loads_cleanly_in_chromium(browser, report_page):
    path, n_figures, injected = report_page
    screenshot = ARTIFACTS / "report_browser_test.png"
    result = browser.open(path, screenshot=screenshot)

    assert result["errors"] == []
    assert result["requests"] == []
    assert len(result["images"]) == n_figures > 0
    broken = [
        i
        for i in result["images"]
        if not (i["complete"] and i["decoded"] and i["width"] > 0)
    ]
    assert broken == []
    # The hostile essay is shown as text, its markup inert.
    assert injected in result["text"]
    assert "1 Overview" in result["text"]

    shot = screenshot.read_bytes()
    assert shot.startswith(PNG_SIGNATURE)
    height = int.from_bytes(shot[20:24], "big")
    assert height > 2000, "the screenshot should cover the whole report, not one screen"


def test_multi_prompt_report_loads_cleanly_in_chromium(browser, tmp_path):
    # Two prompts, a given system and a trained one; a system name and a prompt
    # id that are markup must show as text, and every link must lead somewhere.
    system = "<script>console.error('system name ran')</script>"
    prompt = "<img src=x onerror=\"console.error('prompt id ran')\">"
    tables, meta = make_audit_tables(
        representations=("tfidf",),
        models=("ridge",),
        given=(system,),
        prompts=(prompt, "8"),
        n_essays=12,
        k=1,
    )
    figures = make_figures(tables, meta)
    path = ARTIFACTS / "report_browser_test_prompts.html"
    ARTIFACTS.mkdir(exist_ok=True)
    path.write_text(render_html(tables, meta, figures), encoding="utf-8")
    screenshot = ARTIFACTS / "report_browser_test_prompts.png"
    result = browser.open(path, screenshot=screenshot)

    assert result["errors"] == []
    assert result["requests"] == []
    assert len(result["images"]) == len(figures) == 2 * 9
    assert all(i["complete"] and i["decoded"] and i["width"] > 0 for i in result["images"])
    text = result["text"]
    assert system in text and f"Prompt {prompt}" in text
    for heading in ("2 Summary across prompts", "3 Prompt", "4 Prompt 8", "4.6 Score"):
        assert heading in text, heading
    assert "Pooled (Fisher-z mean)" in text and "Pooled (pair-weighted)" in text


# --------------------------------------------------------------------------- controls


def test_detects_a_broken_image(browser, tmp_path):
    path = _write(
        tmp_path,
        "broken.html",
        f'<img alt="good" src="data:image/png;base64,{TINY_PNG}">'
        '<img alt="corrupt" src="data:image/png;base64,iVBORw0KGgoAAAAN">',
    )
    result = browser.open(path)
    by_alt = {i["alt"]: i for i in result["images"]}
    assert by_alt["good"]["decoded"] and by_alt["good"]["width"] == 1
    assert not by_alt["corrupt"]["decoded"]
    assert by_alt["corrupt"]["width"] == 0


def test_detects_a_missing_image_file(browser, tmp_path):
    path = _write(tmp_path, "missing.html", '<img alt="gone" src="no-such-figure.png">')
    result = browser.open(path)
    assert not result["images"][0]["decoded"]
    assert any(
        "no-such-figure.png" in e or "ERR_FILE_NOT_FOUND" in e for e in result["errors"]
    )


def test_detects_console_errors_and_exceptions(browser, tmp_path):
    path = _write(
        tmp_path,
        "errors.html",
        '<p>page</p><script>console.log("fine"); console.error("boom-42");</script>'
        '<script>throw new Error("kaboom-7")</script>',
    )
    result = browser.open(path)
    assert any("console.error: boom-42" in e for e in result["errors"])
    assert any("kaboom-7" in e for e in result["errors"])
    assert not any("fine" in e for e in result["errors"])


def test_detects_external_requests(browser, tmp_path):
    # Port 9 on loopback refuses at once: the request is recorded, nothing leaves the machine.
    path = _write(
        tmp_path, "external.html", '<img alt="remote" src="http://127.0.0.1:9/x.png">'
    )
    result = browser.open(path)
    assert result["requests"] == ["http://127.0.0.1:9/x.png"]


def test_a_clean_page_reports_nothing(browser, tmp_path):
    path = _write(
        tmp_path, "clean.html", f'<img alt="ok" src="data:image/png;base64,{TINY_PNG}">'
    )
    result = browser.open(path)
    assert result["errors"] == []
    assert result["requests"] == []
    assert result["images"] == [
        {"alt": "ok", "complete": True, "width": 1, "height": 1, "decoded": True}
    ]


def test_report_policy_blocks_scripts_that_slip_into_the_page(browser, tmp_path):
    # Defence in depth: were an essay ever rendered unescaped, the page's
    # Content-Security-Policy would refuse to run it, and the refusal is an error.
    page = render_html({}, {"title": "t"}, {})
    injected = page.replace(
        "<main>", "<main><script>console.error('script ran')</script>", 1
    )
    path = tmp_path / "injected.html"
    path.write_text(injected, encoding="utf-8")
    result = browser.open(path)
    assert not any("script ran" in e for e in result["errors"])
    assert any("Content Security Policy" in e for e in result["errors"])
