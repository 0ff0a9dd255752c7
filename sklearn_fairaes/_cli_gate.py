"""``fairaes compare`` and ``fairaes check``: thin shells over compare() and check().

Exit codes of ``check``: 0 every requirement holds, 1 one fails, 2 bad input (a
requirement that cannot be read, an unknown metric or system, an interval
bound the report lacks, an unreadable report or an output file that is the
user's). ``compare``: 0 written, 2 bad input.

The verdict is written to ``--verdict FILE`` (default ``verdict.json`` in the
current folder; ``--no-verdict`` writes none), and JUnit XML to ``--junit
FILE``. Never into the report folder (its files are listed in its marker) and
never over a user's file: an existing file is replaced only when it is a
verdict (or JUnit file) that ``fairaes check`` wrote, so a CI job can re-run;
anything else is refused before the requirements are evaluated.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ._table_input import BadInput

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
_JUNIT_NAME = 'name="fairaes check"'


def _ours(path: Path, kind: str) -> bool:
    """Whether ``path`` is a file ``fairaes check`` wrote (a verdict or JUnit file)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(1_000_000)
    except (OSError, UnicodeDecodeError):
        return False
    if kind == "junit":
        return _JUNIT_NAME in text.split(">", 2)[1] if text.count(">") >= 2 else False
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return (
        isinstance(data, dict)
        and data.get("tool") == "sklearn_fairaes"
        and (data.get("kind") == "verdict")
    )


def _check_target(path: str, option: str, kind: str, report: Path) -> Path:
    target = Path(path)
    real = Path(os.path.realpath(target))
    report_real = Path(os.path.realpath(report))
    if real == report_real or report_real in real.parents:
        raise BadInput(
            f"{option} {path} is inside the report folder {report}, whose files are the "
            f"report's own; write it elsewhere (e.g. {option} {target.name})"
        )
    if target.is_dir():
        raise BadInput(f"{option} {path} is a folder; give a file name")
    if target.exists() and not _ours(target, kind):
        raise BadInput(
            f"{option} {path} exists and is not a file fairaes check wrote; it is never "
            f"overwritten: choose another {option}"
        )
    if not target.parent.is_dir() and str(target.parent):
        raise BadInput(f"{option} {path}: the folder {target.parent} does not exist")
    return target


def _write(path: Path, text: str) -> None:
    """Write ``text`` next to ``path`` and rename it into place (never half a file)."""
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _requirements(args: argparse.Namespace) -> list[str]:
    from .report._check import Requirement, load_policy

    texts: list[str] = []
    for policy in args.policy or []:
        try:
            texts += load_policy(policy)["require"]
        except (ValueError, ImportError) as exc:
            raise BadInput(f"--policy {policy}: {exc}") from None
    texts += args.require or []
    if not texts:
        raise BadInput(
            'give at least one --require "METRIC OP NUMBER" (e.g. --require "qwk>=0.70") '
            "or --policy williamson2012"
        )
    for text in texts:
        try:
            Requirement.parse(text)
        except ValueError as exc:
            raise BadInput(f"--require: {exc}") from None
    return texts


def cmd_check(args: argparse.Namespace) -> int:
    """Run ``fairaes check``."""
    from .report import AuditResult, check

    texts = _requirements(args)
    report = Path(args.report)
    verdict_path = (
        None
        if args.no_verdict
        else _check_target(args.verdict or "verdict.json", "--verdict", "verdict", report)
    )
    junit_path = (
        None
        if args.junit is None
        else _check_target(args.junit, "--junit", "junit", report)
    )
    try:
        result = AuditResult.load(report)
        verdict = check(result, texts)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    verdict.report = str(report)
    for line in verdict.lines():
        print(line)
    ok = verdict.passed
    n_fail = int((verdict.results["status"] == "fail").sum())
    print(
        f"fairaes check: {'all requirements hold' if ok else f'{n_fail} row(s) fail'} "
        f"({len(texts)} requirement(s), {len(verdict.results)} row(s))"
    )
    if verdict_path is not None:
        _write(
            verdict_path, json.dumps(verdict.to_dict(), indent=1, allow_nan=False) + "\n"
        )
    if junit_path is not None:
        _write(junit_path, verdict.to_junit_xml())
    return EXIT_OK if ok else EXIT_FAILED


def cmd_compare(args: argparse.Namespace) -> int:
    """Run ``fairaes compare``."""
    from .report import compare
    from .report._output import OutputError

    if len(args.reports) < 2:
        raise BadInput(
            f"give two or more report folders to compare, got {len(args.reports)}"
        )
    names: list[str] | None
    if args.names is not None:
        names = [n.strip() for n in args.names.split(",")]
        if (
            len(names) != len(args.reports)
            or len(set(names)) != len(names)
            or not all(names)
        ):
            raise BadInput(
                f"--names {args.names}: give one unique name per report "
                f"({len(args.reports)} reports), e.g. --names v3,v4"
            )
    else:
        bases = [Path(os.path.realpath(r)).name for r in args.reports]
        names = bases if len(set(bases)) == len(bases) and all(bases) else None
    notes: list[str] = []
    try:
        comparison = compare(*args.reports, names=names)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    try:
        comparison._save(
            args.out,
            force=args.force,
            inputs=args.reports,
            option="--out",
            on_note=notes.append,
        )
    except OutputError as exc:
        raise BadInput(str(exc)) from None
    finally:
        for note in notes:
            print(f"fairaes: note: {note}", file=sys.stderr)
    if not args.quiet:
        print(f"comparison written to {Path(args.out) / 'comparison.html'}")
        print(comparison.summary())
    return EXIT_OK


def add_parsers(sub: Any) -> None:
    """Add the ``compare`` and ``check`` subcommands to ``fairaes``'s subparsers."""
    p = sub.add_parser(
        "compare",
        help="set two or more saved audits side by side (e.g. engine v3 vs v4)",
        description=(
            "Read two or more report folders written by `fairaes audit`, list the\n"
            "figures they share (agreement, Lipschitz fractions, essay consistency)\n"
            "side by side with each later report's difference from the first and,\n"
            "where both resampled the same essays with the same seed and number of\n"
            "replicates, the paired bootstrap interval and p-value; elsewhere the\n"
            "reason there is none. Writes DIR/comparison.html, comparison.json and\n"
            "tables/*.csv."
        ),
        epilog=(
            "Example:\n  fairaes compare report-v3 report-v4 --names v3,v4 --out v3-vs-v4\n"
            "Exit codes: 0 ok, 2 bad input (an unreadable report, different formats,\n"
            "no figure in common, --out taken)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("reports", nargs="+", metavar="REPORT", help="report folders")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument(
        "--names",
        default=None,
        metavar="A,B",
        help="a short name per report (default: the folders' names)",
    )
    p.add_argument(
        "--force", action="store_true", help="replace an earlier fairaes folder at --out"
    )
    p.add_argument("--quiet", action="store_true", help="print nothing unless it fails")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "check",
        help="hold a saved audit to requirements: exit 0 when all hold, 1 when one fails",
        description=(
            "A gate for CI pipelines. Each requirement reads\n"
            "  [ci_low of] METRIC[.ci_low|.ci_high][key=value,...] OP NUMBER\n"
            "METRIC is a figure of the report (qwk, smd, abs_smd = |smd|, degradation,\n"
            "lipschitz_minmax, lipschitz_max, consistency, ...); .ci_low/.ci_high take\n"
            "the bound of its interval (the report must have one); selectors\n"
            "prompt=, representation=, system= narrow the rows; OP is >=, <=, >, <\n"
            "or ==. A requirement applies to every prompt, representation and system\n"
            "(not the human scores) unless selected, and must hold in all of them.\n"
            "The package's degradation is the human-human QWK minus the system's:\n"
            "Williamson et al.'s limit is degradation<=0.10."
        ),
        epilog=(
            "Examples:\n"
            '  fairaes check report --require "qwk>=0.70" --require "abs_smd<=0.15"\n'
            '  fairaes check report --require "qwk.ci_low[system=engine]>=0.70"\n'
            "  fairaes check report --policy williamson2012 --junit gate.xml\n"
            "Exit codes: 0 every requirement holds, 1 one fails, 2 bad input (a\n"
            "requirement that cannot be read, an unknown metric or system, a bound\n"
            "of an interval the report lacks, an unreadable report)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("report", metavar="REPORT_DIR", help="a folder written by fairaes audit")
    p.add_argument(
        "--require",
        action="append",
        default=None,
        metavar="EXPR",
        help='a requirement, e.g. "qwk>=0.70" (repeatable)',
    )
    p.add_argument(
        "--policy",
        action="append",
        default=None,
        metavar="NAME|FILE",
        help="a shipped policy (williamson2012) or a .toml file with "
        'require = ["qwk>=0.70", ...] (repeatable; adds to --require)',
    )
    p.add_argument(
        "--verdict",
        default=None,
        metavar="FILE",
        help="where to write the verdict as JSON (default: ./verdict.json); an "
        "existing file is replaced only if fairaes check wrote it",
    )
    p.add_argument("--no-verdict", action="store_true", help="write no verdict file")
    p.add_argument(
        "--junit",
        default=None,
        metavar="FILE",
        help="also write JUnit XML, one test case per requirement and row",
    )
    p.set_defaults(func=cmd_check)
