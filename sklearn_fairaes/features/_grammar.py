"""Language errors from LanguageTool, through ``language_tool_python``.

Two ways to reach a LanguageTool:

* a server URL, ``grammar="http://host:8081"`` -- any server that speaks
  LanguageTool's HTTP API (``GET /v2/languages``, ``POST /v2/check``): one
  started with ``java -cp languagetool-server.jar
  org.languagetool.server.HTTPServer --port 8081``, a Docker image, or the
  public API ``https://api.languagetool.org`` (rate-limited; it receives the
  essays);
* ``grammar="local"`` -- a LanguageTool unpacked in language_tool_python's
  folder (``$LTP_PATH``, default ``~/.cache/language_tool_python``, holding a
  ``LanguageTool-<version>`` folder) and Java >= 17 on the ``PATH``;
  language_tool_python starts it as a subprocess.

Both are checked when the transformer is fitted, quickly: a URL must answer
``/v2/languages`` within a few seconds, and ``"local"`` must find the folder
and Java. language_tool_python would otherwise download LanguageTool (about
250 MB) when none is installed, or hang for minutes on an unreachable host;
here that is a clear error saying how to provide one instead.

What is counted: every match LanguageTool returns for the essay except
spelling matches, so that ``language_errors`` and ``spelling_errors`` do not
count the same mistake twice. A match is a spelling match when its rule
category is ``TYPOS``, its issue type is ``misspelling``, or its rule id
starts with ``MORFOLOGIK_RULE`` or ``HUNSPELL`` (LanguageTool's spell-checking
rules). Spelling categories are also disabled in the request
(``disabledCategories=TYPOS``), which makes a real LanguageTool faster; the
client-side filter is what guarantees the rule for any server. The language is
``en-US``. ASAP placeholders are replaced by a stand-in word first (a number
for quantities, a first name otherwise, different for different placeholders;
see ``placeholder_stand_in``), so an anonymised name is not reported as the
student's error. An empty essay has 0 errors and is not sent.

A server that fails on an essay later (an HTTP 500, a timeout, an answer that
is not LanguageTool's JSON) gets the essay again after ``RETRY_DELAYS`` (two
retries, 0.5 and 2 s later: a server busy for a moment recovers); if it still
fails, :class:`GrammarServerError` names the server and the essay's position.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..resources import ResourceNotFoundError, require
from ._tokenize import replace_placeholders

__all__ = [
    "LANGUAGE",
    "GrammarServerError",
    "count_language_errors",
    "is_spelling_match",
    "resolve_grammar",
]

#: Language sent to LanguageTool.
LANGUAGE = "en-US"
#: Rule categories and issue types of spelling matches (excluded from the count).
SPELLING_CATEGORIES = frozenset({"TYPOS"})
SPELLING_ISSUE_TYPES = frozenset({"misspelling"})
SPELLING_RULE_PREFIXES = ("MORFOLOGIK_RULE", "HUNSPELL")
#: Seconds a server gets to answer the reachability check in ``fit``.
PROBE_TIMEOUT = 10.0
#: Seconds to wait before each new try of an essay the server failed on.
RETRY_DELAYS = (0.5, 2.0)
_SERVER_CLASS = "org/languagetool/server/HTTPServer.class"

# label -> language_tool_python.LanguageTool
_TOOLS: dict[str, Any] = {}
_TOOLS_LOCK = threading.Lock()

_HOW_TO = (
    "To count language errors, either start a LanguageTool server (java -cp "
    "languagetool-server.jar org.languagetool.server.HTTPServer --port 8081, or the "
    "Docker image erikvl87/languagetool) and pass grammar='http://localhost:8081', or "
    "unpack LanguageTool into $LTP_PATH (default ~/.cache/language_tool_python) with "
    "Java >= 17 on the PATH and pass grammar='local'; or leave language_errors out with "
    "grammar=None."
)


class GrammarServerError(ConnectionError):
    """A LanguageTool server failed on an essay, also when asked again.

    Parameters
    ----------
    server : str
        The server's label (its base URL, or ``"local:<version>"``).
    position : int
        The essay's position among the essays checked (from 0).
    reason : str
        What went wrong on the last try.

    Examples
    --------
    >>> from sklearn_fairaes.features._grammar import GrammarServerError
    >>> exc = GrammarServerError("http://localhost:8081", 15, "HTTP 500")
    >>> print(exc)
    the LanguageTool server at http://localhost:8081 failed on the essay at position 15 (3 tries; last: HTTP 500)
    """

    def __init__(self, server: str, position: int, reason: str) -> None:
        self.server, self.position, self.reason = server, position, reason
        super().__init__(
            f"the LanguageTool server at {server} failed on the essay at position "
            f"{position} ({len(RETRY_DELAYS) + 1} tries; last: {reason})"
        )

    def __reduce__(self) -> Any:
        # rebuilt from its fields when it crosses a process boundary
        return (type(self), (self.server, self.position, self.reason))


def is_spelling_match(match: Any) -> bool:
    """Whether a LanguageTool match is a spelling match (excluded from the count).

    Parameters
    ----------
    match : language_tool_python.Match or dict
        A match object, or a match as LanguageTool's JSON gives it.

    Returns
    -------
    is_spelling : bool
        True for a spelling match.

    Examples
    --------
    >>> from sklearn_fairaes.features._grammar import is_spelling_match
    >>> is_spelling_match({"rule": {"id": "MORFOLOGIK_RULE_EN_US", "issueType":
    ...     "misspelling", "category": {"id": "TYPOS"}}})
    True
    >>> is_spelling_match({"rule": {"id": "UPPERCASE_SENTENCE_START", "issueType":
    ...     "typographical", "category": {"id": "CASING"}}})
    False
    """
    if isinstance(match, dict):
        rule = match.get("rule", {})
        rule_id = rule.get("id", "")
        category = rule.get("category", {}).get("id", "")
        issue = rule.get("issueType", "")
    else:
        rule_id = getattr(match, "rule_id", "") or ""
        category = getattr(match, "category", "") or ""
        issue = getattr(match, "rule_issue_type", "") or ""
    return (
        category in SPELLING_CATEGORIES
        or issue in SPELLING_ISSUE_TYPES
        or rule_id.startswith(SPELLING_RULE_PREFIXES)
    )


def _base_url(url: str) -> str:
    text = url.strip()
    if not re.match(r"^https?://", text):
        text = "http://" + text
    text = text.rstrip("/")
    if text.endswith("/v2"):
        text = text[: -len("/v2")]
    return text


def _probe(base: str) -> None:
    """GET <base>/v2/languages quickly; raise a how-to error if it fails."""
    url = f"{base}/v2/languages"
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT) as response:
            languages = json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConnectionError(
            f"no LanguageTool server answered at {url} ({exc}). {_HOW_TO}"
        ) from exc
    codes = {str(e.get("longCode", "")) for e in languages if isinstance(e, dict)}
    codes |= {str(e.get("code", "")) for e in languages if isinstance(e, dict)}
    if LANGUAGE not in codes and LANGUAGE.split("-")[0] not in codes:
        raise ConnectionError(
            f"the LanguageTool server at {base} does not offer {LANGUAGE} (it lists "
            f"{', '.join(sorted(c for c in codes if c)) or 'no language'})"
        )


def _server_jar_ok(folder: Path) -> bool:
    """Whether a LanguageTool folder holds a jar with the HTTP server class."""
    for name in ("languagetool-server.jar", "languagetool.jar"):
        jar = folder / name
        if jar.exists():
            # language_tool_python uses the first jar it finds; a broken one
            # would make it retry the start on hundreds of ports.
            try:
                with zipfile.ZipFile(jar) as zf:
                    return _SERVER_CLASS in set(zf.namelist())
            except (OSError, zipfile.BadZipFile):
                return False
    return False


def _local_installation() -> tuple[Path, str]:
    """(download folder, newest usable installed version) or a how-to error."""
    folder = Path(
        os.environ.get("LTP_PATH", str(Path.home() / ".cache" / "language_tool_python"))
    )
    candidates = sorted(folder.glob("LanguageTool-*")) if folder.is_dir() else []
    versions = [
        p.name[len("LanguageTool-") :]
        for p in candidates
        if p.is_dir() and _server_jar_ok(p)
    ]
    if not versions:
        found = (
            f" (found {', '.join(p.name for p in candidates)}, but none holds a "
            f"languagetool-server.jar with {_SERVER_CLASS})"
            if candidates
            else ""
        )
        raise ResourceNotFoundError(
            f"grammar='local' needs an unpacked LanguageTool (a LanguageTool-<version> "
            f"folder with languagetool-server.jar) in {folder}, the folder named by "
            f"$LTP_PATH{found}; it is not downloaded automatically. {_HOW_TO}"
        )
    if shutil.which("java") is None:
        raise ResourceNotFoundError(
            f"grammar='local' found LanguageTool in {folder} but no 'java' on the PATH; "
            f"install Java >= 17. {_HOW_TO}"
        )

    def key(v: str) -> list[int]:
        return [int(p) if p.isdigit() else 0 for p in re.split(r"[.\-]", v)]

    return folder, max(versions, key=key)


def resolve_grammar(grammar: str | None) -> str | None:
    """Check that the LanguageTool asked for can be used, quickly, and label it.

    Parameters
    ----------
    grammar : None, "local" or str
        A server URL (``"http://host:8081"``; the scheme may be left out).

    Returns
    -------
    label : str or None
        The server's base URL, or ``"local:<version>"``; None for None.

    Raises
    ------
    ConnectionError
        When no server answers at the URL.
    ResourceNotFoundError
        When ``"local"`` finds no LanguageTool or no Java.

    Examples
    --------
    >>> from sklearn_fairaes.features._grammar import resolve_grammar
    >>> resolve_grammar(None) is None
    True
    """
    if grammar is None:
        return None
    if not isinstance(grammar, str) or not grammar.strip():
        raise TypeError(
            f"grammar must be None, 'local' or a LanguageTool server URL such as "
            f"'http://localhost:8081'; got {grammar!r}"
        )
    require("language_tool_python", purpose="the language_errors feature (LanguageTool)")
    if grammar.strip() == "local":
        _, version = _local_installation()
        return f"local:{version}"
    base = _base_url(grammar)
    _probe(base)
    return base


def _tool(label: str) -> Any:
    with _TOOLS_LOCK:
        if label not in _TOOLS:
            ltp = require(
                "language_tool_python", purpose="the language_errors feature (LanguageTool)"
            )
            if label.startswith("local:"):
                # resolve_grammar() found this version installed, so
                # language_tool_python starts it and never downloads.
                version = label[len("local:") :]
                try:
                    tool = ltp.LanguageTool(
                        LANGUAGE, language_tool_download_version=version
                    )
                except Exception as exc:  # its PathError, JavaError, ServerError, ...
                    raise ConnectionError(
                        f"could not start the local LanguageTool {version}: {exc}. "
                        f"{_HOW_TO}"
                    ) from exc
            else:
                try:
                    tool = ltp.LanguageTool(LANGUAGE, remote_server=label + "/")
                except Exception as exc:  # the server went away since fit
                    raise ConnectionError(
                        f"the LanguageTool server at {label} no longer answers: {exc}. "
                        f"{_HOW_TO}"
                    ) from exc
            tool.disable_spellchecking()
            _TOOLS[label] = tool
        return _TOOLS[label]


def _count_one(tool: Any, text: str, position: int, label: str) -> int:
    if not text.strip():
        return 0
    for delay in (*RETRY_DELAYS, None):
        try:
            matches = tool.check(replace_placeholders(text))
            return sum(1 for m in matches if not is_spelling_match(m))
        except Exception as exc:  # language_tool_python's errors, a reply not its JSON
            if delay is None:
                reason = " ".join(f"{type(exc).__name__}: {exc}".split())
                cut = reason if len(reason) <= 200 else reason[:197] + "..."
                raise GrammarServerError(label, position, cut) from exc
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def count_language_errors(
    texts: Sequence[str], label: str, *, n_jobs: int | None = None, offset: int = 0
) -> list[int]:
    """Number of non-spelling LanguageTool matches of each essay.

    Parameters
    ----------
    texts : list of str
        The essays.
    label : str
        From :func:`resolve_grammar`.
    n_jobs : int, default=None
        Number of requests in flight at once (threads).
    offset : int, default=0
        Position of ``texts[0]`` among all essays, for error messages.

    Returns
    -------
    counts : list of int
        Non-spelling matches of each essay; 0 for an empty essay.
    """
    from joblib import Parallel, delayed, effective_n_jobs

    tool = _tool(label)
    if effective_n_jobs(n_jobs) == 1 or len(texts) < 2:
        return [_count_one(tool, t, offset + i, label) for i, t in enumerate(texts)]
    return Parallel(n_jobs=n_jobs, backend="threading")(
        delayed(_count_one)(tool, t, offset + i, label) for i, t in enumerate(texts)
    )
