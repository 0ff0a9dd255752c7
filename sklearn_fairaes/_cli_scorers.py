"""The ``--scorer`` flags of ``fairaes audit``: scorers you call, scored files, the dry run.

An ``openai:MODEL@BASE_URL`` scorer takes its rubric from ``--scorer-prompt
FILE`` (and ``--scorer-temperature``, ``--scorer-seed``): one template for
every such scorer, read and checked here, before any work.

Apart from ``cli`` to keep that module within the size rule; ``cli``
re-exports :func:`build_scorers`.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._table_input import BadInput

__all__ = [
    "add_scorer_arguments",
    "build_scorers",
    "check_repeats_flag",
    "dry_run",
    "positive_int",
    "read_scorer_prompt",
]

#: The command's exit status of a dry run (as ``cli.EXIT_OK``).
EXIT_OK = 0


def positive_int(value: str) -> int:
    """An argparse type: an int >= 1."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value!r}")
    return n


def read_scorer_prompt(path: str) -> str:
    """The rubric template of ``--scorer-prompt``; refused unless it holds ``{essay}``.

    Parameters
    ----------
    path : str
        The template file (UTF-8).

    Returns
    -------
    template : str
        The file's text, as written.

    Examples
    --------
    >>> from sklearn_fairaes._cli_scorers import read_scorer_prompt
    >>> read_scorer_prompt("no/such/rubric.txt")
    Traceback (most recent call last):
    ...
    sklearn_fairaes._table_input.BadInput: --scorer-prompt no/such/rubric.txt: no such file
    """
    try:
        with open(path, encoding="utf-8-sig") as fh:
            template = fh.read()
    except FileNotFoundError:
        raise BadInput(f"--scorer-prompt {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(
            f"--scorer-prompt {path}: cannot read the template ({exc})"
        ) from None
    if "{essay}" not in template:
        raise BadInput(
            f"--scorer-prompt {path}: the template holds no {{essay}} placeholder, so the "
            f"grader would never see the essay; put {{essay}} where the essay goes"
        )
    return template


def build_scorers(args: argparse.Namespace, score_range: Any = None) -> dict[str, Any]:
    """The scorers of ``--scorer NAME=SPEC`` entries, with the command's call options.

    Their answers are kept in ``scorer_responses.sqlite`` of the cache folder
    (``--cache``, else the per-user one; none with ``--no-cache``). They take
    the one scale ``score_range`` declares (``--score-range``) as theirs: a
    score off it is a bad answer.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``fairaes audit`` flags.
    score_range : tuple, dict or None, default=None
        The parsed ``--score-range``.

    Returns
    -------
    scorers : dict of str to scorer
        ``audit()``'s ``scorers``, in the order given; empty without ``--scorer``.

    Examples
    --------
    >>> import argparse
    >>> from sklearn_fairaes.cli import build_scorers
    >>> args = argparse.Namespace(
    ...     scorer=["engine=https://scoring.example.org/score"], scorer_concurrency=8,
    ...     scorer_token_env="ENGINE_TOKEN", max_calls=None, no_cache=True, cache=None,
    ...     scorer_prompt=None, scorer_temperature=None, scorer_seed=None)
    >>> build_scorers(args)["engine"]
    HTTPScorer(concurrency=8, token_env='ENGINE_TOKEN',
               url='https://scoring.example.org/score')
    """
    from .report._config import _cache_from_cli
    from .report._scorers import declared_scale, scorer_cache_path
    from .scorers import make_scorer_from_spec
    from .text._cache import open_cache

    entries = getattr(args, "scorer", None) or []
    grader = _grader_options(args, entries)
    out: dict[str, Any] = {}
    if not entries:
        return _scored_files(args, out)
    folder = open_cache(_cache_from_cli(args)).path
    params: dict[str, Any] = {
        "cache": scorer_cache_path(folder),
        "score_range": declared_scale(score_range),
    }
    if args.scorer_concurrency is not None:
        params["concurrency"] = args.scorer_concurrency
    if args.max_calls is not None:
        params["max_calls"] = args.max_calls
    specs = _named(
        entries,
        "--scorer",
        "NAME=SPEC",
        "python:pkg.mod:fn, a URL or openai:MODEL@BASE_URL",
    )
    for name, spec in specs.items():
        extra = dict(grader) if spec.startswith("openai:") else {}
        if args.scorer_token_env is not None and spec.startswith(
            ("http://", "https://", "openai:")
        ):
            extra["token_env"] = args.scorer_token_env
        try:
            scorer = make_scorer_from_spec(spec, **params, **extra)
            scorer._validate()
        except ValueError as exc:
            raise BadInput(f"--scorer {name}={spec}: {exc}") from None
        out[name] = scorer
    return _scored_files(args, out)


def _named(entries: list[str], flag: str, shape: str, value: str) -> dict[str, str]:
    """The ``NAME=VALUE`` entries of a repeatable ``flag``, in order, or BadInput.

    ``shape`` and ``value`` word the refusal of a malformed entry
    (``NAME=SPEC``; what goes after the ``=``).
    """
    out: dict[str, str] = {}
    for entry in entries:
        name, sep, given = (part.strip() for part in entry.partition("="))
        if not sep or not name or not given:
            raise BadInput(
                f"{flag} takes {shape} (the system's name, then {value}), got {entry!r}"
            )
        if name in out:
            raise BadInput(
                f"{flag} names the system {name!r} twice; give each its own name"
            )
        out[name] = given
    return out


def _grader_options(args: argparse.Namespace, entries: list[str]) -> dict[str, Any]:
    """The OpenAIScorer parameters of ``--scorer-prompt``, ``-temperature``, ``-seed``."""
    given = {
        flag: value
        for flag, value in (
            ("--scorer-prompt", getattr(args, "scorer_prompt", None)),
            ("--scorer-temperature", getattr(args, "scorer_temperature", None)),
            ("--scorer-seed", getattr(args, "scorer_seed", None)),
        )
        if value is not None
    }
    graders = [e for e in entries if e.partition("=")[2].strip().startswith("openai:")]
    if given and not graders:
        raise BadInput(
            f"{', '.join(given)} set(s) the grader of an openai:MODEL@BASE_URL scorer, "
            f"and no --scorer names one; add --scorer NAME=openai:MODEL@BASE_URL"
        )
    options: dict[str, Any] = {}
    if "--scorer-prompt" in given:
        options["prompt"] = read_scorer_prompt(given["--scorer-prompt"])
    if "--scorer-temperature" in given:
        options["temperature"] = given["--scorer-temperature"]
    if "--scorer-seed" in given:
        options["seed"] = given["--scorer-seed"]
    return options


def check_repeats_flag(args: argparse.Namespace) -> None:
    """``--repeats K`` (K >= 2) needs a ``--scorer``: refused before anything is read.

    audit() refuses it too (``report._repeats.check_repeats``); here the
    command says it in its own words before ``--out`` is claimed.
    """
    k = getattr(args, "repeats", 1)
    scored = getattr(args, "scorer", None) or getattr(args, "scored_edits", None)
    # export-edits lists the repeats for a scorer you run offline
    if getattr(args, "command", None) == "export-edits":
        return
    if k is not None and k > 1 and not scored:
        raise BadInput(
            f"--repeats {k} scores each essay again with the scorers you call, and no "
            f"--scorer NAME=SPEC is given (given scores, trained baselines and "
            f"--model-file models are scored once); add a --scorer (or a scored file, "
            f"--scored-edits NAME=FILE), or leave --repeats out"
        )


def _scored_files(args: argparse.Namespace, out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with the systems of ``--scored-edits NAME=FILE``, each file read and checked."""
    from .report import AuditInputError
    from .report._edits import with_scored_edits

    files = _named(
        getattr(args, "scored_edits", None) or [],
        "--scored-edits",
        "NAME=FILE",
        "the file fairaes export-edits wrote, scored",
    )
    if not files:
        return out
    try:
        return dict(with_scored_edits(out, files) or {})
    except AuditInputError as exc:
        raise BadInput(f"--scored-edits: {exc}") from None


def dry_run(args: argparse.Namespace, run: Any) -> int:
    """``--dry-run``: the calls each scorer needs for every text the audit sends it; none is sent.

    The texts are those ``fairaes export-edits`` lists: the essays, the
    counterfactual edits and the paraphrases; ``run`` is ``cli.audit_from_args``.
    """
    scorers = build_scorers(args)
    if not scorers:
        raise BadInput(
            "--dry-run counts the calls of --scorer; give a --scorer NAME=SPEC (or "
            "--scored-edits NAME=FILE to count the texts missing from the file)"
        )
    from ._cli_edits import count_calls

    count_calls(args, scorers, run)
    return EXIT_OK


def add_scorer_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--scorer`` and the options of the scorers you call (``--dry-run`` too)."""
    parser.add_argument(
        "--scorer",
        action="append",
        default=None,
        metavar="NAME=SPEC",
        help="a scorer you call, audited like --model-file: SPEC is "
        "python:package.module:function (texts -> scores), an http:// or https:// "
        'URL answering POST {"texts": [...]} with {"scores": [...]}, or '
        "openai:MODEL@BASE_URL (an OpenAI-compatible chat-completions grader; give "
        "--scorer-prompt). Answers are cached in the --cache folder, so a re-run "
        "sends nothing. Repeatable",
    )
    parser.add_argument(
        "--scorer-prompt",
        default=None,
        metavar="FILE",
        help="the rubric template of the openai: scorers (UTF-8 text holding {essay}, "
        "which the essay replaces); the reply's score is read by the rule of "
        "OpenAIScorer (the last 'Score: <number>', else the only number)",
    )
    parser.add_argument(
        "--scorer-temperature",
        type=float,
        default=None,
        metavar="T",
        help="the openai: scorers' sampling temperature (default 0)",
    )
    parser.add_argument(
        "--scorer-seed",
        type=int,
        default=None,
        metavar="N",
        help="the openai: scorers' sampling seed, sent with each request (default: "
        "none sent)",
    )
    parser.add_argument(
        "--scorer-concurrency",
        type=positive_int,
        default=None,
        metavar="N",
        help="calls in flight at once per --scorer (default: 4 for a URL, 1 for a "
        "Python function)",
    )
    parser.add_argument(
        "--scorer-token-env",
        default=None,
        metavar="VAR",
        help="the environment variable holding the bearer token of the URL scorers "
        "(the token is never written anywhere)",
    )
    parser.add_argument(
        "--max-calls",
        type=positive_int,
        default=None,
        metavar="N",
        help="most calls each --scorer may send; a run that needs more is refused "
        "before any call",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the number of calls each --scorer needs for every text the audit "
        "would send it (the essays, the edited and the paraphrased essays; those "
        "without a cached answer) and exit before any call",
    )
    parser.add_argument(
        "--scored-edits",
        action="append",
        default=None,
        metavar="NAME=FILE",
        help="a system scored offline: the .csv file that fairaes export-edits wrote "
        "with the same options, its score column filled in. NAME is audited as a "
        "--scorer would be, answering each text from the file; a file with a missing, "
        "empty or non-numeric score, or a changed text, is refused before any work. "
        "Repeatable",
    )
