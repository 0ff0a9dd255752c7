"""``fairaes export-edits``: the texts to score offline, and the dry run's count.

``export-edits`` takes the data and options of ``fairaes audit`` and writes
every text that audit would ask a scorer for (``report._edits``) to a
``.csv`` file, one row per text with a stable id and an empty ``score``
column; ``fairaes audit ... --scored-edits NAME=FILE`` reads it back once
scored. The file is written whole or not at all (a temporary file renamed
into place), and never over a file we did not write: an existing file is
refused, and ``--force`` replaces only an export of ours whose ``score``
column is still empty (a scored file is the user's work).

Apart from ``cli`` to keep that module within the size rule.
"""

from __future__ import annotations

import argparse
import csv
import functools
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._table_input import BadInput

__all__ = ["add_parser", "cmd_export_edits", "count_calls", "read_prompt_file"]

EXIT_OK = 0


def read_prompt_file(path: str | None) -> str | None:
    """The text of ``--prompt-file``, or None without one; BadInput when unreadable or empty."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8-sig") as fh:
            prompt = fh.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read the prompt ({exc})") from None
    if not prompt:
        raise BadInput(f"{path}: the prompt file is empty")
    return prompt


def _unscored_export(path: Path) -> bool:
    """Whether ``path`` is an export of ours with no score filled in."""
    from ._table_input import read_table
    from .report._edits import EXPORT_COLUMNS

    try:
        frame = read_table(path)
    except BadInput:
        return False
    return (
        tuple(frame.columns) == EXPORT_COLUMNS
        and not (frame["score"].astype(str).str.strip() != "").any()
    )


def _check_out(args: argparse.Namespace) -> Path:
    """``--out``: a new ``.csv`` file, or (with ``--force``) an unscored export of ours."""
    target = Path(args.out)
    if target.suffix.lower() != ".csv":
        raise BadInput(f"--out {args.out}: give a .csv file name (e.g. --out texts.csv)")
    if target.is_dir():
        raise BadInput(f"--out {args.out} is a folder; give a .csv file name")
    if not target.parent.is_dir() and str(target.parent):
        raise BadInput(f"--out {args.out}: the folder {target.parent} does not exist")
    if Path(args.data).resolve() == target.resolve():
        raise BadInput(f"--out {args.out} is the data file; write the export elsewhere")
    if target.exists():
        if not args.force:
            raise BadInput(
                f"--out {args.out} exists and is never overwritten; choose another "
                f"--out, or pass --force to replace an earlier export whose score column "
                f"is still empty"
            )
        if not _unscored_export(target):
            raise BadInput(
                f"--out {args.out} exists and is not an unscored export of fairaes "
                f"export-edits (another file, or scores filled in: the user's work); it "
                f"is never overwritten: choose another --out"
            )
    return target


def _needed(args: argparse.Namespace, run: Callable[..., Any]) -> list[Any]:
    """The texts the audit of these options would ask a scorer for (``report._edits``).

    ``run`` is ``cli.audit_from_args`` (passed in: this module does not import ``cli``).
    """
    from .report._edits import needed_texts
    from .report._export import plan_only

    def plan_texts(data: Any, **options: Any) -> list[Any]:
        return needed_texts(plan_only(data, **options))

    return list(run(args, call=plan_texts, doing="listing the texts of"))


def cmd_export_edits(args: argparse.Namespace, run: Callable[..., Any]) -> int:
    """Run ``fairaes export-edits`` (``run``: ``cli.audit_from_args``)."""
    from ._cli_gate import _write
    from .report._edits import needed_frame

    if args.dry_run:
        raise BadInput(
            "--dry-run counts the calls of fairaes audit; export-edits sends no call "
            "(it lists the texts, which is its own dry run)"
        )
    target = _check_out(args)
    frame = needed_frame(_needed(args, run))
    # every field quoted: a text's line ends and separators come back as written
    text = frame.to_csv(index=False, quoting=csv.QUOTE_ALL, lineterminator="\n")
    _write(target, text)
    if not args.quiet:
        kinds = Counter(frame["kind"])
        print(
            f"fairaes: {len(frame)} texts to score written to {target} ("
            + ", ".join(f"{kinds[k]} {k}" for k in ("original", "edit", "paraphrase"))
            + "); fill in the score column, then run fairaes audit with the same "
            f"options and --scored-edits NAME={target}"
        )
    return EXIT_OK


def count_calls(
    args: argparse.Namespace, scorers: dict[str, Any], run: Callable[..., Any]
) -> None:
    """``--dry-run``: print the calls each scorer needs for every text the audit sends it."""
    from .report._edits import ScoredTexts

    needed = _needed(args, run)
    kinds = Counter(t.kind for t in needed if t.repeat == 0)
    k = max((t.repeat for t in needed), default=0) + 1
    what = (
        f"{len(needed)} texts the audit would send ({kinds['original']} essays"
        + (f" x {k} repeats" if k > 1 else "")
        + f", {kinds['edit']} edited, {kinds['paraphrase']} paraphrased)"
    )
    for name, scorer in scorers.items():
        if isinstance(scorer, ScoredTexts):
            missing = sum((t.sha256, t.repeat) not in scorer.scores_ for t in needed)
            print(f"scored file {name} ({scorer.name}): {missing} of the {what} missing")
            continue
        # repeat r is its own cache entry: raising --repeats counts only the new ones
        n = sum(
            scorer.n_calls_needed([t.text for t in needed if t.repeat == r], repeat=r)
            for r in range(k)
        )
        per = (
            "one text per call"
            if scorer.batch_size == 1
            else f"batches of {scorer.batch_size}"
        )
        print(
            f"scorer {name} ({scorer._spec()}): {n} call(s) for the {what} ({per}, "
            f"cached answers not counted)"
        )


def add_parser(
    sub: Any, add_audit_arguments: Callable[..., None], run: Callable[..., Any]
) -> None:
    """Add ``export-edits`` with the options of ``audit`` (``add_audit_arguments``).

    ``run`` is ``cli.audit_from_args``, which reads the data and options.
    """
    p = sub.add_parser(
        "export-edits",
        help="write every text the audit would ask a scorer for, to score offline",
        description=(
            "Write every text that fairaes audit with the same data and options would\n"
            "ask a scorer for -- the essays, the counterfactual edits (--perturbations)\n"
            "and the paraphrases -- to a .csv file: one row per text with a stable id\n"
            "(text_id, essay_id, prompt, kind, edit, repeat, text) and an empty score\n"
            "column. Score the texts anywhere, fill in the score column, then run\n"
            "fairaes audit with the same options and --scored-edits NAME=FILE: NAME\n"
            "is audited exactly as a live --scorer would be."
        ),
        epilog=(
            "Example:\n"
            "  fairaes export-edits essays.csv --text-col essay --score-col score \\\n"
            "      --perturbations default --out texts.csv\n"
            "  # ... fill in texts.csv's score column ...\n"
            "  fairaes audit essays.csv --text-col essay --score-col score \\\n"
            "      --perturbations default --scored-edits engine=texts.csv --out report"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_audit_arguments(
        p,
        out="the .csv file to write (never over a file we did not write)",
        metavar="FILE.csv",
        force="replace an earlier export at --out whose score column is still empty",
    )
    p.set_defaults(func=functools.partial(cmd_export_edits, run=run))
