"""The gate: hold a saved audit to requirements (``fairaes check`` and :func:`check`).

A requirement reads ``[BOUND of] METRIC[.BOUND][SELECTORS] OP NUMBER``:

- ``METRIC``: a figure column of the report's tables that have a ``system``
  column, looked up first in ``agreement`` (``qwk``, ``smd``, ``degradation``,
  ``exact_agreement``, ...), then ``lipschitz`` (``lipschitz_minmax``,
  ``lipschitz_max``, ``lipschitz_matched`` where present, ...), then
  ``essay_consistency`` (``consistency``, ...), then the other tables in name
  order; and ``abs_smd``, the absolute value of ``smd``.
- ``BOUND``: ``ci_low`` or ``ci_high``, the bounds of the figure's interval
  (the report's ``<metric>_ci_low`` / ``<metric>_ci_high`` columns, at the
  audit's confidence level, 95% by default): ``qwk.ci_low>=0.70`` or
  ``ci_low of qwk >= 0.70`` reads "the lower 95% bound of QWK is at least
  0.70". Asking for a bound of a report without intervals is an error.
- ``SELECTORS``: ``[key=value,...]`` with keys ``prompt``, ``representation``
  and ``system``, e.g. ``lipschitz_matched[representation=tfidf]>=0.95``.
  Without a selector, a requirement applies to every row of its table (every
  prompt, representation and system); the human scores' rows
  (``system=human``) only when selected.
- ``OP``: ``>=``, ``<=``, ``>``, ``<`` or ``==``; ``NUMBER`` a decimal number.

A requirement holds when it holds in every row it applies to. A row without
a value (a pooled row has no SMD) is listed as ``n/a`` and does not count; a
requirement with no value in any row is an error, as is an unknown metric,
system, representation or prompt.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._compare import COMPARED_TABLES, _figure_columns, _number
from ._result import AuditResult

if TYPE_CHECKING:
    from pandas import DataFrame

__all__ = ["POLICY_NAMES", "Requirement", "Verdict", "check", "load_policy"]

_POLICIES = Path(__file__).with_name("policies")

#: The ready-made policies shipped with the package (``--policy NAME``).
POLICY_NAMES = ("williamson2012",)

_BOUNDS = ("ci_low", "ci_high")
_SELECTOR_KEYS = ("prompt", "representation", "system")
_OPS = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: a == b,
}
_GRAMMAR = (
    "[ci_low of] METRIC[.ci_low|.ci_high][key=value,...] OP NUMBER, with OP one of "
    ">=, <=, >, <, == (e.g. qwk>=0.70, qwk.ci_low>=0.70, abs_smd<=0.15, "
    "lipschitz_max[representation=tfidf,system=engine]>=0.95)"
)
_PATTERN = re.compile(
    r"""^\s*
    (?:(?P<pre>[A-Za-z_]\w*)\s+of\s+)?
    (?P<metric>[A-Za-z_]\w*)
    (?:\.(?P<post>[A-Za-z_]\w*))?
    \s*(?:\[(?P<sel>[^\[\]]*)\])?
    \s*(?P<op>>=|<=|==|=>|=<|!=|>|<|=)
    \s*(?P<num>\S+)\s*$""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Requirement:
    """One parsed requirement (see :func:`check` for the grammar).

    Parameters
    ----------
    text : str
        The requirement as written.
    metric : str
        The figure, e.g. ``"qwk"``.
    bound : {"ci_low", "ci_high"} or None
        The interval bound compared instead of the figure itself.
    selectors : tuple of (str, str)
        ``(key, value)`` pairs restricting the rows.
    op : str
        The comparison.
    threshold : float
        The number compared with.

    Examples
    --------
    >>> from sklearn_fairaes.report._check import Requirement
    >>> Requirement.parse("qwk.ci_low[system=engine] >= 0.70")
    Requirement(text='qwk.ci_low[system=engine] >= 0.70', metric='qwk', bound='ci_low', selectors=(('system', 'engine'),), op='>=', threshold=0.7)
    """  # noqa: E501

    text: str
    metric: str
    bound: str | None
    selectors: tuple[tuple[str, str], ...]
    op: str
    threshold: float

    @classmethod
    def parse(cls, text: str) -> Requirement:
        """Read ``text``; raise ValueError naming what is wrong and the grammar."""
        if not isinstance(text, str):
            raise TypeError(f"a requirement is a string, got {text!r}")
        m = _PATTERN.match(text)
        if m is None:
            raise ValueError(f"cannot read the requirement {text!r}; write {_GRAMMAR}")
        if m["op"] not in _OPS:
            fix = {"=>": ">=", "=<": "<=", "=": "=="}.get(m["op"])
            hint = f"; did you mean {fix!r}?" if fix else ""
            raise ValueError(
                f"requirement {text!r}: unknown comparison {m['op']!r}{hint} "
                f"(one of {', '.join(_OPS)})"
            )
        if m["pre"] and m["post"]:
            raise ValueError(
                f"requirement {text!r} names a bound twice ({m['pre']} of ... "
                f".{m['post']}); give one"
            )
        bound = m["pre"] or m["post"]
        if bound is not None and bound not in _BOUNDS:
            raise ValueError(
                f"requirement {text!r}: unknown bound {bound!r} of {m['metric']}; use "
                f"{m['metric']}.ci_low or {m['metric']}.ci_high (the interval's bounds)"
            )
        try:
            threshold = float(m["num"])
        except ValueError:
            raise ValueError(
                f"requirement {text!r}: {m['num']!r} is not a number; write e.g. 0.70"
            ) from None
        if not math.isfinite(threshold):
            raise ValueError(f"requirement {text!r}: the threshold must be finite")
        selectors: list[tuple[str, str]] = []
        for part in (m["sel"] or "").split(","):
            if not part.strip() and m["sel"] is not None and not m["sel"].strip():
                raise ValueError(f"requirement {text!r}: empty selector []")
            if not part.strip():
                continue
            key, eq, value = (p.strip() for p in part.partition("="))
            if not eq or key not in _SELECTOR_KEYS or not value:
                raise ValueError(
                    f"requirement {text!r}: cannot read the selector {part.strip()!r}; "
                    f"write key=value with key one of {', '.join(_SELECTOR_KEYS)}"
                )
            selectors.append((key, value))
        return cls(text, m["metric"], bound, tuple(selectors), m["op"], threshold)


@dataclass
class Verdict:
    """What :func:`check` found: each requirement in each row, pass or fail.

    Parameters
    ----------
    requirements : list of Requirement
        The requirements checked, in order.
    results : pandas.DataFrame
        One row per requirement and report row: ``requirement``, ``prompt``,
        ``table``, ``representation``, ``system``, ``metric``, ``bound``,
        ``op``, ``threshold``, ``value`` (what was compared), ``estimate``
        (the figure), ``ci_low``, ``ci_high`` and ``status`` (``"pass"``,
        ``"fail"`` or ``"n/a"`` for a row without a value).
    confidence_level : float
        The level of the report's intervals.
    report : str, default=""
        Where the report was read from.

    Attributes
    ----------
    passed : bool
        Whether every requirement holds in every row it applies to.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report import AuditResult, check
    >>> agreement = pd.DataFrame({"prompt": ["all"], "representation": [""],
    ...                           "system": ["engine"], "qwk": [0.72]})
    >>> meta = {"n_essays": 40, "prompts": ["all"], "representations": [],
    ...         "systems": {"engine": {}}}
    >>> verdict = check(AuditResult({"agreement": agreement}, meta), ["qwk>=0.70"])
    >>> verdict.passed
    True
    >>> print(verdict.lines()[0])
    PASS  qwk>=0.70  prompt all, system engine: qwk = 0.72
    """

    requirements: list[Requirement]
    results: DataFrame
    confidence_level: float
    report: str = ""
    passed: bool = field(init=False)

    def __post_init__(self) -> None:
        self.passed = bool((self.results["status"] != "fail").all())

    def lines(self) -> list[str]:
        """Return one line per requirement and row: status, requirement, value, interval.

        Returns
        -------
        lines : list of str
            ``PASS  qwk>=0.70  prompt 3, system engine: qwk = 0.812
            (95% CI 0.771 to 0.846)``.
        """
        out = []
        level = f"{100 * self.confidence_level:g}%"
        for r in self.results.to_dict("records"):
            where = ", ".join(
                f"{k} {r[k]}" for k in ("prompt", "representation", "system") if r[k]
            )
            shown = r["metric"] + (f".{r['bound']}" if r["bound"] else "")
            text = (
                f"{shown} = {_fmt(r['value'])}"
                if r["status"] != "n/a"
                else f"{shown}: no value"
            )
            if math.isfinite(_number(r["ci_low"])):
                est = f"{r['metric']} {_fmt(r['estimate'])}, " if r["bound"] else ""
                text += f" ({est}{level} CI {_fmt(r['ci_low'])} to {_fmt(r['ci_high'])})"
            status = {"pass": "PASS", "fail": "FAIL", "n/a": "N/A "}[r["status"]]
            out.append(f"{status}  {r['requirement']}  {where}: {text}")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Return the verdict as JSON-able data (what ``verdict.json`` holds).

        Returns
        -------
        data : dict
            ``tool``, ``kind`` (``"verdict"``), ``version``, ``report``,
            ``passed``, ``confidence_level`` and ``requirements``: each with
            its ``requirement`` text, ``passed`` and ``rows``.
        """
        from .._version import __version__
        from ._html import _jsonable

        records = self.results.to_dict("records")
        reqs = []
        for req in self.requirements:
            rows = [
                {k: v for k, v in r.items() if k != "requirement"}
                for r in records
                if r["requirement"] == req.text
            ]
            reqs.append(
                {
                    "requirement": req.text,
                    "passed": all(r["status"] != "fail" for r in rows),
                    "rows": rows,
                }
            )
        data: dict[str, Any] = _jsonable(
            {
                "tool": "sklearn_fairaes",
                "kind": "verdict",
                "version": __version__,
                "report": self.report,
                "passed": self.passed,
                "confidence_level": self.confidence_level,
                "requirements": reqs,
            },
            "verdict",
        )
        return data

    def to_junit_xml(self) -> str:
        """Return JUnit XML: one test case per requirement and row, failures as failures.

        Returns
        -------
        xml : str
            A ``<testsuites>`` document that CI systems (GitLab, Jenkins,
            GitHub test reporters) read.
        """
        import xml.etree.ElementTree as ET

        lines = self.lines()
        records = self.results.to_dict("records")
        failures = sum(r["status"] == "fail" for r in records)
        skipped = sum(r["status"] == "n/a" for r in records)
        counts = {"tests": str(len(records)), "failures": str(failures), "errors": "0"}
        root = ET.Element("testsuites", {"name": "fairaes check", **counts})
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": f"fairaes check {self.report}".strip(),
                "skipped": str(skipped),
                **counts,
            },
        )
        for r, line in zip(records, lines):
            where = ", ".join(
                f"{k}={r[k]}" for k in ("prompt", "representation", "system") if r[k]
            )
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"fairaes.check.{r['table']}",
                name=f"{r['requirement']} [{where}]",
            )
            if r["status"] == "fail":
                ET.SubElement(case, "failure", message=line).text = line
            elif r["status"] == "n/a":
                ET.SubElement(case, "skipped", message=line)
        ET.indent(root)
        return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _fmt(value: Any) -> str:
    x = _number(value)
    return (
        "nan"
        if not math.isfinite(x)
        else f"{x:.4g}"
        if abs(x) >= 1000
        else f"{x:.4f}".rstrip("0").rstrip(".")
    )


def _abs_interval(low: float, high: float) -> tuple[float, float]:
    """The interval of ``|x|`` given that of ``x``."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.nan, math.nan
    if low >= 0:
        return low, high
    if high <= 0:
        return -high, -low
    return 0.0, max(-low, high)


def _tables_with_systems(result: AuditResult) -> list[tuple[str, DataFrame]]:
    names = [t for t in COMPARED_TABLES if t in result.tables]
    names += sorted(t for t in result.tables if t not in COMPARED_TABLES)
    out = []
    for n in names:
        frame = result.tables[n]
        if frame is None or "system" not in frame.columns:
            continue
        keys = [k for k in ("prompt", "representation", "system") if k in frame.columns]
        # a table of figures has one row per prompt, representation and system;
        # lists of essays or pairs (review_list, score_distance) are not figures
        if not frame.duplicated(keys).any():
            out.append((n, frame))
    return out


def _locate(result: AuditResult, req: Requirement) -> tuple[str, DataFrame, str]:
    """The table and column of the requirement's metric (``abs_smd`` reads ``smd``)."""
    column = "smd" if req.metric == "abs_smd" else req.metric
    known: set[str] = set()
    for name, frame in _tables_with_systems(result):
        figures = _figure_columns(frame)
        known.update(figures)
        if column in figures:
            return name, frame, column
    if "smd" in known:
        known.add("abs_smd")
    raise ValueError(
        f"requirement {req.text!r}: unknown metric {req.metric!r}; this report's "
        f"metrics are {', '.join(sorted(known)) or 'none'}"
    )


def _evaluate(result: AuditResult, req: Requirement, level: float) -> list[dict[str, Any]]:
    table, frame, column = _locate(result, req)
    absolute = req.metric == "abs_smd"
    has_ci = (
        f"{column}_ci_low" in frame.columns
        and f"{column}_ci_high" in frame.columns
        # an audit run with n_bootstrap=0 keeps the columns, empty
        and bool(frame[f"{column}_ci_low"].notna().any())
    )
    if req.bound is not None and not has_ci:
        raise ValueError(
            f"requirement {req.text!r}: the report has no interval for {req.metric} (its "
            f"{table} table has no {column}_ci_low column: audited with n_bootstrap=0, "
            f"or by a version without intervals); drop .{req.bound} or re-run the "
            "audit with --bootstrap B"
        )
    rows = frame.to_dict("records")
    selected = dict(req.selectors)
    for key, value in req.selectors:
        present = sorted({str(r.get(key, "")) for r in rows})
        if value not in present:
            raise ValueError(
                f"requirement {req.text!r}: unknown {key} {value!r}; the {table} table's "
                f"{key}s are {', '.join(repr(p) for p in present)}"
            )
    out = []
    op = _OPS[req.op]
    for r in rows:
        keys = {k: "" if r.get(k) is None else str(r.get(k)) for k in _SELECTOR_KEYS}
        keys = {k: "" if v == "nan" else v for k, v in keys.items()}
        if any(keys[k] != v for k, v in selected.items()):
            continue
        if keys["system"] == "human" and "system" not in selected:
            continue  # the human scores are the reference, not a system under audit
        estimate = _number(r.get(column))
        low, high = (
            (_number(r.get(f"{column}_ci_low")), _number(r.get(f"{column}_ci_high")))
            if has_ci
            else (math.nan, math.nan)
        )
        if absolute:
            estimate = abs(estimate)
            low, high = _abs_interval(low, high)
        compared = {"ci_low": low, "ci_high": high}.get(req.bound or "", estimate)
        verdict = (
            "n/a"
            if not math.isfinite(compared)
            else "pass"
            if op(compared, req.threshold)
            else "fail"
        )
        out.append(
            {
                "requirement": req.text,
                **keys,
                "table": table,
                "metric": req.metric,
                "bound": req.bound or "",
                "op": req.op,
                "threshold": req.threshold,
                "value": compared,
                "estimate": estimate,
                "ci_low": low,
                "ci_high": high,
                "status": verdict,
            }
        )
    if not out:
        raise ValueError(
            f"requirement {req.text!r}: no row of the {table} table applies (the human "
            "scores' rows are checked only with [system=human])"
        )
    if all(r["status"] == "n/a" for r in out):
        raise ValueError(
            f"requirement {req.text!r}: no row of the {table} table has a value of "
            f"{req.metric}{'.' + req.bound if req.bound else ''} (e.g. degradation needs "
            "--rater-cols); drop the requirement or re-run the audit with what it needs"
        )
    return out


def check(
    result: AuditResult | str | os.PathLike[str],
    requirements: Sequence[str | Requirement],
) -> Verdict:
    """Hold an audit to requirements such as ``qwk>=0.70`` (a gate for CI pipelines).

    Each requirement applies to every row of its metric's table (every
    prompt, representation and system, the human scores excepted) unless a
    selector narrows it, and holds when it holds in all of them. Grammar::

        [ci_low of] METRIC[.ci_low|.ci_high][key=value,...] OP NUMBER

    ``METRIC`` is a figure of the report's tables (``qwk``, ``smd``,
    ``abs_smd`` = ``|smd|``, ``degradation``, ``lipschitz_minmax``,
    ``lipschitz_max``, ``consistency``, ...); ``.ci_low`` / ``.ci_high`` take
    the bound of its interval instead (the report must have one); selector
    keys are ``prompt``, ``representation`` and ``system``; ``OP`` is one of
    ``>=``, ``<=``, ``>``, ``<``, ``==``. Note the package's ``degradation``
    is the human-human QWK minus the system's (positive: worse), so
    Williamson et al.'s limit reads ``degradation<=0.10``.

    Parameters
    ----------
    result : AuditResult or path
        The audit, or the folder of a saved report.
    requirements : sequence of str or Requirement
        The requirements, e.g. ``["qwk>=0.70", "abs_smd<=0.15"]`` or
        ``load_policy("williamson2012")["require"]``.

    Returns
    -------
    verdict : Verdict
        Each requirement in each row, and whether all hold (``passed``).

    Raises
    ------
    ValueError
        If a requirement cannot be read, names an unknown metric, system,
        representation or prompt, asks for an interval bound the report does
        not have, or has no value in any row; or if the folder is not a
        readable report. Nothing is evaluated then.

    See Also
    --------
    load_policy : Read a policy (a list of requirements) such as ``williamson2012``.
    compare : Set two audits side by side.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report import AuditResult, check
    >>> agreement = pd.DataFrame({"prompt": ["all", "all"], "representation": ["", ""],
    ...                           "system": ["v3", "v4"], "qwk": [0.68, 0.74],
    ...                           "smd": [0.02, -0.20]})
    >>> meta = {"n_essays": 40, "prompts": ["all"], "representations": [],
    ...         "systems": {"v3": {}, "v4": {}}}
    >>> verdict = check(AuditResult({"agreement": agreement}, meta),
    ...                 ["qwk>=0.70", "abs_smd[system=v4]<=0.15"])
    >>> verdict.passed
    False
    >>> verdict.results["status"].tolist()
    ['fail', 'pass', 'fail']
    """
    import pandas as pd

    report = ""
    if not isinstance(result, AuditResult):
        report = str(result)
        result = AuditResult.load(result)
    parsed = [
        r if isinstance(r, Requirement) else Requirement.parse(r) for r in requirements
    ]
    if not parsed:
        raise ValueError("no requirement given; pass e.g. ['qwk>=0.70']")
    level = float(result.meta.get("confidence_level") or 0.95)
    rows = [row for req in parsed for row in _evaluate(result, req, level)]
    return Verdict(parsed, pd.DataFrame(rows), level, report)


def _read_toml(path: Path) -> dict[str, Any]:
    import importlib

    try:
        toml = importlib.import_module("tomllib")
    except ImportError:  # Python 3.10: the same parser, released as tomli
        try:
            toml = importlib.import_module("tomli")
        except ImportError:
            raise ImportError(
                "reading a policy file needs Python 3.11, or tomli on 3.10: "
                "pip install tomli"
            ) from None
    with open(path, "rb") as fh:
        data: dict[str, Any] = toml.load(fh)
    return data


def load_policy(policy: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a policy: a named list of requirements, from the package or a TOML file.

    A policy file holds ``require`` (a list of requirement strings, see
    :func:`check`) and optionally ``name``, ``description`` and
    ``reference``. The package ships ``williamson2012``: Williamson, Xi and
    Breyer (2012)'s thresholds for automated scoring, ``qwk>=0.70``,
    ``abs_smd<=0.15`` and ``degradation<=0.10`` (the system's QWK at most
    0.10 below the human-human QWK; RSMTool's sign convention writes it
    ``>= -0.10``).

    Parameters
    ----------
    policy : str or path-like
        A shipped policy's name (``POLICY_NAMES``) or a ``.toml`` file.

    Returns
    -------
    policy : dict
        ``name``, ``description``, ``reference`` and ``require`` (list of str).

    Raises
    ------
    ValueError
        If the name is unknown, the file cannot be read, is not TOML, or its
        ``require`` is not a non-empty list of readable requirements.

    Examples
    --------
    >>> from sklearn_fairaes.report import load_policy
    >>> load_policy("williamson2012")["require"]
    ['qwk>=0.70', 'abs_smd<=0.15', 'degradation<=0.10']
    """
    name = os.fspath(policy)
    path = _POLICIES / f"{name}.toml" if name in POLICY_NAMES else Path(name)
    if not path.is_file():
        raise ValueError(
            f"unknown policy {name!r}: give a shipped policy ({', '.join(POLICY_NAMES)}) "
            'or a .toml file with require = ["qwk>=0.70", ...]'
        )
    try:
        data = _read_toml(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"policy {name}: cannot read it ({exc})") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError
        raise ValueError(f"policy {name}: not valid TOML ({exc})") from None
    unknown = sorted(set(data) - {"name", "description", "reference", "require"})
    if unknown:
        raise ValueError(
            f"policy {name}: unknown key(s) {unknown}; a policy has require and "
            "optionally name, description, reference"
        )
    require = data.get("require")
    if (
        not isinstance(require, list)
        or not require
        or not all(isinstance(r, str) for r in require)
    ):
        raise ValueError(
            f"policy {name}: require must be a non-empty list of strings such as "
            '["qwk>=0.70"]'
        )
    for text in require:
        try:
            Requirement.parse(text)
        except ValueError as exc:
            raise ValueError(f"policy {name}: {exc}") from None
    return {
        "name": str(data.get("name", path.stem)),
        "description": str(data.get("description", "")),
        "reference": str(data.get("reference", "")),
        "require": list(require),
    }
