"""The ``fairaes`` command: a thin shell over the Python API.

Exit codes: 0 ok, 2 bad input (with the file, row and column), 1 internal error,
130 interrupted (Ctrl-C); ``fairaes check`` exits 1 when a requirement fails
(see ``_cli_gate``).

The output folder is claimed before any computation (checked and locked, see
``sklearn_fairaes.report._output``): every output-path problem is reported
before the audit runs, and a second run on the same ``--out`` is refused at once.

Each option of ``fairaes audit`` maps onto one parameter of
:func:`~sklearn_fairaes.report.audit`. The audit's options (``--cv``,
``--n-neighbors``, ...) are declared once, in ``report._config``, which makes
their flags and checks them; the inputs' options are here: the ``parse_*``
functions below turn an option's text (and the files it names) into that
parameter's value, and refuse bad input with :class:`BadInput` (exit 2) naming
the option, file, row and column, before the audit starts. The data file is
read by ``_table_input.read_table``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._cli_cluster import add_scheduler_option, parse_scheduler, scheduler_client
from ._cli_scorers import add_scorer_arguments, build_scorers, check_repeats_flag, dry_run
from ._interrupts import interrupts_kept
from ._table_input import BadInput, parse_bin_cols, parse_embeddings, read_table
from ._version import __version__

if TYPE_CHECKING:
    import pandas as pd

    from .report import AuditResult
    from .report._output import ReportFolder

# the public interface is the command itself; the helpers below (read_table,
# parse_*, load_model_file) are importable for tests and scripts
__all__ = ["build_parser", "main"]

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def _cmd_setup(args: argparse.Namespace) -> int:
    from .resources import setup_resources

    report = setup_resources(verbose=not args.quiet)
    missing = [
        k for k, v in report.items() if str(v).startswith("MISSING") and k == "wordnet"
    ]
    return EXIT_INTERNAL if missing else EXIT_OK


def _log(args: argparse.Namespace, message: str) -> None:
    if not getattr(args, "quiet", False):
        print(f"fairaes: {message}", file=sys.stderr)


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


_TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".txt", ".xlsx", ".xlsm")


def _shown(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[: limit - 3] + "...")


def _prompt_key(value: object) -> str:
    """A prompt id as audit() keys it, so that the CLI's checks match the audit's."""
    from .report._inputs import prompt_id

    return prompt_id(value)


def _pair(value: str, option: str) -> tuple[float, float]:
    """``low,high`` as two numbers (the audit checks the scale itself)."""
    parts = [v.strip() for v in value.split(",")]
    try:
        low, high = (float(v) for v in parts)
    except ValueError:
        raise BadInput(
            f"{option} must be two numbers low,high (e.g. 0,12) or a .csv/.tsv file "
            f"with the columns prompt,low,high; got {_shown(value)}"
        ) from None
    return low, high


def parse_systems(value: str | None) -> dict[str, str] | None:
    """Read ``--system-cols``: the scoring systems whose scores are columns of the data.

    Parameters
    ----------
    value : str or None
        Comma-separated entries, each a column name (the system is named after
        its column) or ``name=column``.

    Returns
    -------
    systems : dict of str to str, or None
        System name -> column name, in the order given; None when ``value`` is
        None (no systems).

    Raises
    ------
    BadInput
        When no column is named, an entry has an empty name or column
        (``=col``, ``name=``), or a system is named twice.

    Examples
    --------
    >>> from sklearn_fairaes.cli import parse_systems
    >>> parse_systems("engine_v3, gpt=gpt4o_score")
    {'engine_v3': 'engine_v3', 'gpt': 'gpt4o_score'}
    """
    if value is None:
        return None
    systems: dict[str, str] = {}
    entries = [e.strip() for e in value.split(",") if e.strip()]
    if not entries:
        raise BadInput(
            f"--system-cols names no columns (got {_shown(value)}); give the score "
            f"columns of your systems, e.g. --system-cols engine_v3,gpt4o"
        )
    for entry in entries:
        name, sep, col = entry.partition("=")
        name, col = name.strip(), (col.strip() if sep else name.strip())
        if not name or not col:
            raise BadInput(
                f"--system-cols entries are column names or name=column, separated by "
                f"commas (e.g. engine_v3,gpt=gpt4o_score); got {_shown(value)}, whose "
                f"entry {_shown(entry)} has an empty {'column' if name else 'name'}"
            )
        if name in systems:
            raise BadInput(
                f"--system-cols names the system {name!r} twice; give each system its "
                f"own name (name=column)"
            )
        systems[name] = col
    return systems


def _read_scale_table(path: Path, encoding: str | None) -> dict[str, tuple[float, float]]:
    """A table of per-prompt scales: columns prompt, low, high."""
    frame = read_table(path, encoding=encoding)
    columns = [str(c).strip().lower() for c in frame.columns]
    missing = [c for c in ("prompt", "low", "high") if c not in columns]
    if missing:
        raise BadInput(
            f"{path}: a per-prompt --score-range table needs the columns prompt, low "
            f"and high (one row per prompt); it has {', '.join(map(repr, frame.columns))}"
            f", without {', '.join(map(repr, missing))}"
        )
    frame.columns = columns
    scales: dict[str, tuple[float, float]] = {}
    first_row: dict[str, int] = {}
    for k, (prompt, low, high) in enumerate(
        frame[["prompt", "low", "high"]].itertuples(index=False), start=1
    ):
        key = _prompt_key(prompt)
        if not key:
            raise BadInput(f"{path}: data row {k} has no prompt id in column 'prompt'")
        ends = []
        for col, cell in (("low", low), ("high", high)):
            try:
                ends.append(float(str(cell).strip()))
            except ValueError:
                raise BadInput(
                    f"{path}: data row {k} (prompt {key!r}) holds {_shown(str(cell))} in "
                    f"column {col!r}; give the score point as a number"
                ) from None
        if key in scales:
            raise BadInput(
                f"{path}: prompt {key!r} is in data rows {first_row[key]} and {k}; give "
                f"each prompt one row"
            )
        scales[key], first_row[key] = (ends[0], ends[1]), k
    return scales


def parse_score_range(
    value: str | None, *, encoding: str | None = None
) -> tuple[float, float] | dict[str, tuple[float, float]] | None:
    """Read ``--score-range``: one scale ``low,high``, or a file of per-prompt scales.

    Parameters
    ----------
    value : str or None
        ``low,high`` (e.g. ``0,6``), or the path of a ``.csv``/``.tsv``/``.xlsx``
        table with the columns ``prompt``, ``low`` and ``high`` (one row per
        prompt; prompts it leaves out have their scale inferred from their
        human scores).
    encoding : str, default=None
        Text encoding of a tsv/csv table; None means UTF-8.

    Returns
    -------
    score_range : tuple of two float, dict of str to tuple, or None
        The audit's ``score_range``: one scale, or prompt id -> scale.

    Raises
    ------
    BadInput
        On text that is neither two numbers nor an existing file, a table
        without the three columns, a cell that is not a number, or a prompt in
        two rows (the message names the file and the data row).

    Examples
    --------
    >>> from sklearn_fairaes.cli import parse_score_range
    >>> parse_score_range("0,6")
    (0.0, 6.0)
    """
    if value is None:
        return None
    path = Path(value)
    if path.is_file():
        return _read_scale_table(path, encoding)
    if path.suffix.lower() in _TABLE_SUFFIXES or os.sep in value:
        raise BadInput(f"--score-range {value}: no such file")
    return _pair(value, "--score-range")


def parse_prompts(
    path: str | os.PathLike[str], *, encoding: str | None = None
) -> dict[str, str]:
    """Read ``--prompts``: the task statement of each prompt.

    Parameters
    ----------
    path : str or path-like
        A folder with one ``<prompt id>.txt`` file per prompt (UTF-8), or a
        ``.csv``/``.tsv``/``.xlsx`` table with the columns ``prompt`` and
        ``text``.
    encoding : str, default=None
        Text encoding of a tsv/csv table; None means UTF-8.

    Returns
    -------
    prompts : dict of str to str
        Prompt id -> task statement.

    Raises
    ------
    BadInput
        On a missing path, a folder without ``.txt`` files, an empty or
        unreadable prompt file, a table without the two columns, an empty text
        or a prompt id given twice (naming the file and data row).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from sklearn_fairaes.cli import parse_prompts
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "7.txt").write_text("Write a story about patience.")
    >>> parse_prompts(folder)
    {'7': 'Write a story about patience.'}
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(
            f for f in path.iterdir() if f.suffix.lower() == ".txt" and f.is_file()
        )
        if not files:
            raise BadInput(
                f"{path}: the --prompts folder holds no .txt files; give one "
                f"<prompt id>.txt per prompt (e.g. 1.txt, 2.txt), or a table with the "
                f"columns prompt,text"
            )
        prompts: dict[str, str] = {}
        for f in files:
            try:
                text = f.read_text(encoding="utf-8-sig").strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise BadInput(f"{f}: cannot read the prompt ({exc})") from None
            if not text:
                raise BadInput(f"{f}: the prompt file is empty")
            key = _prompt_key(f.stem)
            if key in prompts:
                raise BadInput(f"{f}: prompt {key!r} has two files in {path}; keep one")
            prompts[key] = text
        return prompts
    if not path.exists():
        raise BadInput(f"--prompts {path}: no such file or folder")
    frame = read_table(path, encoding=encoding)
    columns = [str(c).strip().lower() for c in frame.columns]
    missing = [c for c in ("prompt", "text") if c not in columns]
    if missing:
        raise BadInput(
            f"{path}: a --prompts table needs the columns prompt and text (one row per "
            f"prompt); it has {', '.join(map(repr, frame.columns))}"
        )
    frame.columns = columns
    prompts = {}
    first_row: dict[str, int] = {}
    for k, (prompt, text) in enumerate(
        frame[["prompt", "text"]].itertuples(index=False), start=1
    ):
        key = _prompt_key(prompt)
        if not key:
            raise BadInput(f"{path}: data row {k} has no prompt id in column 'prompt'")
        if not str(text).strip():
            raise BadInput(
                f"{path}: data row {k} (prompt {key!r}) has no text in column 'text'; "
                f"give the task statement"
            )
        if key in prompts:
            raise BadInput(
                f"{path}: prompt {key!r} is in data rows {first_row[key]} and {k}; give "
                f"each prompt one row"
            )
        prompts[key], first_row[key] = str(text).strip(), k
    return prompts


def load_model_file(entry: str) -> tuple[str, Any]:
    """Load one ``--model-file NAME=PATH``: a fitted estimator saved with joblib or pickle.

    Loading a pickle runs code from the file (that is how pickles rebuild
    objects): load only files you trust, as with ``joblib.load`` itself.

    Parameters
    ----------
    entry : str
        ``NAME=PATH``: the system's name in the report, and the file.

    Returns
    -------
    name : str
        The system's name.
    estimator : object
        The loaded estimator: fitted, with a ``predict`` that takes a list of
        essay texts (the audit checks its predictions on the essays).

    Raises
    ------
    BadInput
        If the entry is not ``NAME=PATH``, the file is missing or cannot be
        loaded, or the object is not a fitted estimator with ``predict``; the
        message names the file.

    Examples
    --------
    >>> import pathlib, tempfile, joblib
    >>> from sklearn.dummy import DummyRegressor
    >>> from sklearn_fairaes.cli import load_model_file
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "engine.joblib"
    >>> _ = joblib.dump(DummyRegressor().fit([[0], [1]], [2, 4]), path)
    >>> load_model_file(f"engine={path}")
    ('engine', DummyRegressor())
    """
    from ._validation import check_predictor

    name, sep, raw = entry.partition("=")
    name, raw = name.strip(), raw.strip()
    if not sep or not name or not raw:
        raise BadInput(
            f"--model-file takes NAME=PATH (the system's name, then the file saved with "
            f"joblib.dump), got {_shown(entry)}"
        )
    path = Path(raw)
    if not path.is_file():
        raise BadInput(f"--model-file {name}={path}: no such file")
    import joblib

    try:
        estimator = joblib.load(path)
    except Exception as exc:  # anything unpickling can raise: refuse the file
        raise BadInput(
            f"{path}: cannot load the model of --model-file {name} "
            f"({type(exc).__name__}: {str(exc)[:200]}); save a fitted estimator with "
            f"joblib.dump(model, path), in an environment with the same packages"
        ) from None
    try:
        check_predictor(estimator, name=f"the model in {path}")
    except Exception as exc:  # TypeError (no predict) or NotFittedError
        raise BadInput(
            f"{path}: --model-file {name} is not a fitted estimator with predict: {exc}"
        ) from None
    return name, estimator


def _model_options(
    args: argparse.Namespace, systems: dict[str, str] | None
) -> dict[str, Any]:
    """``models`` and ``refit`` of audit() from --models and --model-file."""
    names = None if args.models is None else (_split(args.models) or [])
    fitted: dict[str, Any] = {}
    for entry in getattr(args, "model_file", None) or []:
        name, estimator = load_model_file(entry)
        if name in fitted:
            raise BadInput(
                f"--model-file names the system {name!r} twice; give each model its "
                f"own name"
            )
        clash = [n for n in (names or []) if n == name] or [
            n for n in (systems or {}) if n == name
        ]
        if clash:
            which = "--models" if name in (names or []) else "--system-cols"
            raise BadInput(
                f"--model-file {name}=... has the name of a system in {which}; give it "
                f"another name (NAME=PATH)"
            )
        fitted[name] = estimator
    if not fitted:
        # None lets audit() choose: baselines only when no systems are given
        return {"models": names}
    if not names:
        return {"models": fitted, "refit": False}
    # the named baselines are trained, the loaded models used as they are
    return {"models": {**{n: n for n in names}, **fitted}, "refit": names}


def _check_prompt_ids(
    frame: pd.DataFrame,
    prompt_col: str | None,
    given: dict[str, Any] | None,
    option: str,
    source: str,
) -> None:
    """Refuse per-prompt options without --prompt-col, or naming unknown prompts."""
    if given is None:
        return
    if prompt_col is None:
        raise BadInput(
            f"{option} {source} gives a value per prompt, which needs --prompt-col (the "
            f"column of each essay's prompt id)"
        )
    if prompt_col not in frame.columns:
        return  # audit() names the missing column with the columns there are
    ids = {_prompt_key(v) for v in frame[prompt_col] if str(v).strip()}
    # a prompt text for a prompt the data lacks is harmless (a folder of every
    # prompt's text, used on some prompts); a scale for one is a typo in the id
    unknown = [k for k in given if k not in ids] if option != "--prompts" else []
    if unknown:
        shown = ", ".join(map(repr, sorted(ids)[:10]))
        raise BadInput(
            f"{source}: prompt {unknown[0]!r} is not a prompt id of column "
            f"{prompt_col!r} (its ids: {shown}); check the ids"
        )
    if option == "--prompts":
        missing = sorted(k for k in ids if k not in given)
        if missing:
            raise BadInput(
                f"{source}: no prompt text for prompt {missing[0]!r} of column "
                f"{prompt_col!r} ({len(missing)} prompt(s) without one); give a text "
                f"for every prompt id"
            )


def _run_audit(
    args: argparse.Namespace,
    frame: pd.DataFrame,
    *,
    source: str,
    prompt: str | None,
    paraphrases: str | bool | None,
    options: dict[str, Any],
    call: Any = None,
) -> AuditResult:
    from .report import audit

    return (call or audit)(
        frame,
        text_col=args.text_col,
        score_col=args.score_col,
        rater_cols=_split(args.rater_cols),
        prompt=prompt,
        group_col=_split(args.group_col),
        # the demo command has no --covariate-cols
        covariate_cols=_split(getattr(args, "covariate_cols", None)),
        id_col=args.id_col,
        **{**_option_values(args), **options},
        paraphrases=paraphrases,
        # the command owns its interpreter: the Ctrl-C guard (main() holds it
        # already) and the shorter GIL switch interval while paraphrases run
        tune_interpreter=True,
        progress=not args.quiet,
        title=f"Individual-fairness audit of {source}",
    )


def _option_values(args: argparse.Namespace) -> dict[str, Any]:
    """audit()'s options from their flags (see ``report._config.cli_values``)."""
    from .report._config import cli_values

    return cli_values(args)


def _check_options(args: argparse.Namespace) -> None:
    """The options' one check (``AuditConfig.validate``), run before ``--out`` is claimed.

    So that a bad option (``--device cuda`` on a machine without CUDA) is
    refused before the output folder is locked or any data is read.
    """
    from .report import AuditInputError
    from .report._config import AuditConfig

    try:
        AuditConfig(**_option_values(args)).validate()
    except AuditInputError as exc:
        raise BadInput(str(exc)) from None
    check_repeats_flag(args)


def _claim_output(args: argparse.Namespace, inputs: Sequence[str | None]) -> ReportFolder:
    """Check and lock ``--out`` before any computation (see ``report._output``)."""
    from .report._output import OutputError, claim_folder

    _check_cache_outside_out(args)

    def note(message: str) -> None:
        # even under --quiet: it tells of folders restored or removed beside --out
        print(f"fairaes: {message}", file=sys.stderr)

    try:
        claim = claim_folder(
            args.out,
            force=args.force,
            inputs=[p for p in inputs if p],
            option="--out",
            on_note=note,
        )
    except OutputError as exc:
        raise BadInput(str(exc)) from None
    return claim


def _check_cache_outside_out(args: argparse.Namespace) -> None:
    """Refuse an embedding cache inside ``--out``: the swap would drop or block it."""
    if args.no_cache:
        return
    from .text._cache import default_cache_dir

    if args.cache is not None:
        cache, how = Path(args.cache).expanduser(), f"--cache {args.cache}"
    else:
        cache = default_cache_dir()
        how = f"the default cache {cache}"
        if os.environ.get("SKLEARN_FAIRAES_CACHE"):
            how = f"$SKLEARN_FAIRAES_CACHE={os.environ['SKLEARN_FAIRAES_CACHE']}"
    real_cache = Path(os.path.realpath(cache))
    real_out = Path(os.path.realpath(args.out))
    if real_cache == real_out or real_out in real_cache.parents:
        raise BadInput(
            f"the embedding cache ({how}) is inside --out {args.out}, which the report "
            "replaces as a whole: the cache would be lost or block the next --force; "
            f"give a cache folder outside it (e.g. --cache "
            f"{Path(args.out).parent / 'fairaes-cache'}) or pass --no-cache"
        )


def _write_output(
    args: argparse.Namespace, claim: ReportFolder, result: AuditResult
) -> None:
    """Write the report into a partial sibling, then swap it in (never a half report)."""
    from .report._output import OutputError

    try:
        claim.commit(result._write_files)
    except OutputError as exc:
        raise BadInput(str(exc)) from None
    except OSError as exc:  # disk full, quota, permissions changed during the run
        where = f" ({exc.filename})" if exc.filename else ""
        fix = "choose another --out"
        if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            fix = "free some space or " + fix
        elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            fix = "fix the permissions or " + fix
        raise BadInput(
            f"cannot write the report to {args.out}: {exc.strerror or exc}{where}; "
            f"{fix} (nothing at --out was changed)"
        ) from None


def _finish(args: argparse.Namespace, result: AuditResult) -> int:
    try:
        _log(
            args,
            f"report written to {Path(args.out) / 'report.html'} ({result.meta['seconds']} s)",
        )
        cache = result.meta.get("embedding_cache")
        if cache and (cache["encoded"] or cache["served"]):
            where = cache["folder"] or "memory only"
            _log(
                args,
                f"embedding cache {where}: {cache['encoded']} texts encoded, "
                f"{cache['served']} served from the cache",
            )
        if result.meta.get("cluster"):
            from .report._cluster import run_place_text

            _log(args, f"ran on {run_place_text(result.meta)}")
        if not args.quiet:
            print(result.summary())
    except KeyboardInterrupt:
        raise _Interrupted("the report was written") from None
    return EXIT_OK


class _Interrupted(KeyboardInterrupt):
    """Ctrl-C after the report was written: say so instead of "nothing written"."""


def _audit_options(args: argparse.Namespace, frame: pd.DataFrame) -> dict[str, Any]:
    """The audit() parameters of the systems, scales, prompts and references options."""
    if args.reference_sep is not None and args.reference_col is None:
        raise BadInput(
            "--reference-sep splits the cells of --reference-col, which is not given"
        )
    if args.prompts is not None and args.prompt_file is not None:
        raise BadInput(
            "give either --prompt-file (one prompt for every essay) or --prompts (a "
            "text per prompt id), not both"
        )
    systems = parse_systems(args.system_cols)
    score_range = parse_score_range(args.score_range, encoding=args.encoding)
    if isinstance(score_range, dict):
        _check_prompt_ids(
            frame, args.prompt_col, score_range, "--score-range", args.score_range
        )
    prompts = None
    if args.prompts is not None:
        prompts = parse_prompts(args.prompts, encoding=args.encoding)
        _check_prompt_ids(frame, args.prompt_col, prompts, "--prompts", args.prompts)
    # last: loading a model file runs its code, so every cheaper check comes first
    models = _model_options(args, systems)
    scorers = build_scorers(args, score_range)
    if scorers:
        models["scorers"] = scorers
    return {
        "systems": systems,
        "score_range": score_range,
        # the text as typed: audit() checks it (a number or "continuous")
        "score_step": args.score_step,
        "prompt_col": args.prompt_col,
        "prompts": prompts,
        "reference_col": args.reference_col,
        "reference_sep": args.reference_sep,
        "bin_cols": parse_bin_cols(args.bin_col),
        "embeddings": parse_embeddings(args.embeddings),
        **models,
    }


def _inputs(args: argparse.Namespace) -> list[str | None]:
    """Every file the audit reads: ``--out`` may not be, or hold, one of them."""
    files = [args.data, args.prompt_file, args.prompts, args.scorer_prompt]
    if args.score_range is not None and Path(args.score_range).is_file():
        files.append(args.score_range)
    for entry in (
        (args.model_file or []) + (args.embeddings or []) + (args.scored_edits or [])
    ):
        files.append(entry.partition("=")[2].strip() or None)
    return files


def _cmd_audit(args: argparse.Namespace) -> int:
    _check_options(args)
    scheduler = parse_scheduler(args.scheduler)  # exit 2 now, not after the work
    if args.dry_run:
        return dry_run(args, audit_from_args)  # before --out is claimed: writes nothing
    claim = _claim_output(args, _inputs(args))
    try:
        with scheduler_client(scheduler) as client:
            result = audit_from_args(args, client=client)
        _write_output(args, claim, result)
    finally:
        claim.release()
    return _finish(args, result)


def audit_from_args(
    args: argparse.Namespace, call: Any = None, doing: str = "auditing", client: Any = None
) -> Any:
    """Read the data and run ``call`` (default: audit()) with the command's options.

    ``client``: the Dask client of ``--scheduler`` (audit() only).
    """
    from ._cli_edits import read_prompt_file
    from .report import AuditInputError

    frame = read_table(args.data, encoding=args.encoding)
    options = _audit_options(args, frame)
    prompt = read_prompt_file(args.prompt_file)
    _log(args, f"{doing} {len(frame)} essays from {args.data}")
    try:
        return _run_audit(
            args,
            frame,
            source=os.path.basename(str(args.data)),
            prompt=prompt,
            paraphrases=False if args.no_paraphrases else args.paraphrase_col,
            options=options if client is None else {**options, "client": client},
            call=call,
        )
    except AuditInputError as exc:
        raise BadInput(_refusal(args, exc)) from None


def _refusal(args: argparse.Namespace, exc: Exception) -> str:
    """audit()'s refusal as the command says it: a model's failure names its file."""
    model = getattr(exc, "model", None)  # ModelScoringError: the model's name
    for entry in getattr(args, "scorer", None) or []:
        name, _, spec = (part.strip() for part in entry.partition("="))
        if model is not None and name == model:
            return f"--scorer {name}={spec}: {exc}"
    for entry in args.model_file or []:
        name, _, path = (part.strip() for part in entry.partition("="))
        if model is not None and name == model:
            return f"--model-file {name}={path}: {exc}"
    return f"{args.data}: {exc}"


def _cmd_demo(args: argparse.Namespace) -> int:
    from .datasets import load_demo_essays, load_demo_prompt
    from .report import AuditInputError

    _check_options(args)
    claim = _claim_output(args, [])
    try:
        frame = load_demo_essays()
        for name, value in (
            ("text_col", "essay"),
            ("score_col", "score"),
            ("rater_cols", "rater1,rater2"),
            ("group_col", "group"),
            ("id_col", "essay_id"),
        ):
            setattr(args, name, value)
        _log(
            args,
            f"auditing the embedded demo corpus ({len(frame)} essays written for this package)",
        )
        try:
            result = _run_audit(
                args,
                frame,
                source="the demo corpus",
                prompt=load_demo_prompt(),
                paraphrases="paraphrase",
                # the demo has no systems of its own: None trains the baselines
                options={
                    "models": None if args.models is None else _split(args.models) or []
                },
            )
        except AuditInputError as exc:  # a bad option (e.g. --models foo) is bad input
            raise BadInput(f"demo: {exc}") from None
        _write_output(args, claim, result)
    finally:
        claim.release()
    return _finish(args, result)


def _size(n: int) -> str:
    """A byte count as people read it: 512 bytes, 1.5 MiB."""
    if n < 1024:
        return f"{n} bytes"
    units = ("KiB", "MiB", "GiB", "TiB")
    value, i = n / 1024, 0
    while value >= 1024 and i < len(units) - 1:
        value, i = value / 1024, i + 1
    return f"{value:.1f} {units[i]}"


def _cmd_cache(args: argparse.Namespace) -> int:
    from .text._cache import EmbeddingCache, default_cache_dir

    folder = Path(args.cache).expanduser() if args.cache else default_cache_dir()
    if folder.exists() and not folder.is_dir():
        raise BadInput(f"--cache {folder}: not a folder")
    cache = EmbeddingCache(folder)
    if args.action == "info":
        info = cache.info()
        print(f"embedding cache: {folder.absolute()}")
        if not folder.exists():
            print("  (empty: the folder does not exist yet)")
            return EXIT_OK
        print(f"  {info['entries']} entries, {_size(info['bytes'])}")
        for enc in info["encoders"]:
            # packed entries (POS tags, paraphrases) have no vector size
            dim = "-" if enc["backend"] == "packed-json" else enc["dim"]
            print(
                f"  {enc['encoder']} {enc['model']} (backend {enc['backend']}, "
                f"dim {dim}): {enc['entries']} entries, {_size(enc['bytes'])} "
                f"[{enc['key']}]"
            )
        return EXIT_OK
    if not folder.exists():
        _log(args, f"embedding cache {folder}: nothing to remove (no such folder)")
        return EXIT_OK
    removed = cache.purge()
    _log(
        args,
        f"embedding cache {folder}: removed {removed['entries']} entries "
        f"({_size(removed['bytes'])}); other files were left alone",
    )
    return EXIT_OK


def _add_audit_arguments(
    p: argparse.ArgumentParser, *, out: str, metavar: str = "DIR", force: str | None = None
) -> None:
    """The data and system options of ``audit`` (``export-edits`` takes them too)."""
    p.add_argument("data", help="a .tsv, .csv or .xlsx file, one essay per row")
    p.add_argument("--text-col", required=True, help="column with the essay text")
    p.add_argument("--score-col", required=True, help="column with the human score")
    p.add_argument(
        "--rater-cols",
        default=None,
        metavar="R1,R2",
        help="the two raters' columns (for the degradation from human QWK)",
    )
    p.add_argument(
        "--system-cols",
        default=None,
        metavar="COLS",
        help="scoring systems whose scores are columns of the data, comma-separated: "
        "a column name, or name=column (e.g. engine_v3,gpt=gpt4o_score); each is "
        "audited under every representation",
    )
    p.add_argument(
        "--model-file",
        action="append",
        default=None,
        metavar="NAME=PATH",
        help="a fitted scikit-learn estimator or pipeline that takes essay texts, "
        "saved with joblib.dump or pickle; used as it is (never refitted), scored on "
        "the essays and re-scored in the counterfactual audit. Repeatable. Loading a "
        "pickle runs code from the file: give only files you trust",
    )
    add_scorer_arguments(p)
    p.add_argument(
        "--embeddings",
        action="append",
        default=None,
        metavar="NAME=FILE",
        help="your own vectors as a representation named NAME (cosine distance): a "
        ".npy array with one row per data row, or a .csv/.parquet file with the "
        "--id-col column and one numeric column per dimension. Repeatable; "
        "--representations may then be empty ('')",
    )
    p.add_argument(
        "--score-range",
        default=None,
        metavar="LOW,HIGH|FILE",
        help="the rubric's score scale of --score-col, e.g. 0,6, or a .csv/.tsv table "
        "with the columns prompt,low,high (a scale per prompt; prompts it leaves out "
        "are inferred). Used for QWK, agreement rates and the figures; a human or "
        "system score outside it is refused, a model's is trimmed and counted "
        "(default: inferred from the human scores, and the report says so)",
    )
    p.add_argument(
        "--score-step",
        default=None,
        metavar="STEP|continuous",
        help="the step between the human score points, e.g. 0.5 for a 1-5 scale in "
        "half points: each step is one score point of QWK, agreement rates and the "
        "confusion matrix, and a score off the grid low + k*STEP is refused; "
        "'continuous' for averaged scores (RSMTool's continuous QWK). Default: "
        "integer score points",
    )
    p.add_argument(
        "--prompt-col",
        default=None,
        metavar="COL",
        help="column of each essay's prompt (or question) id: each prompt is audited "
        "on its own (representations fitted on its essays, pairs within it only), "
        "with pooled rows across prompts",
    )
    p.add_argument(
        "--prompts",
        default=None,
        metavar="PATH",
        help="the prompts' texts for --prompt-col: a folder with one <prompt id>.txt "
        "per prompt, or a .csv/.tsv table with the columns prompt,text",
    )
    p.add_argument(
        "--prompt-file",
        default=None,
        help="text file with the prompt of every essay (else prompt features are left out)",
    )
    p.add_argument(
        "--reference-col",
        default=None,
        metavar="COL",
        help="short answers: column of the reference answer(s) of each answer's "
        "question; grades are scaled to [0, 1] by the scale and the report adds wRMSE "
        "and reference coverage",
    )
    p.add_argument(
        "--reference-sep",
        default=None,
        metavar="SEP",
        help="separator of several reference answers in one --reference-col cell "
        "(e.g. '||'; default: one reference per cell)",
    )
    p.add_argument(
        "--group-col",
        default=None,
        metavar="COL[,COL...]",
        help="group column(s) for the group view, each analysed on its own "
        "(e.g. race,gender; --intersections adds their intersections)",
    )
    p.add_argument(
        "--bin-col",
        action="append",
        default=None,
        metavar="COL:K[,COL:K...]",
        help="numeric column cut into K quantile bins, a grouping of the group view "
        "(e.g. word_count:4); repeatable",
    )
    p.add_argument(
        "--covariate-cols",
        default=None,
        metavar="COLS",
        help="numeric columns, separated by commas, that the error section relates "
        "each system's error to (beside the interpretable features)",
    )
    p.add_argument("--id-col", default=None, help="column of unique essay ids")
    paraphrase = p.add_mutually_exclusive_group()
    paraphrase.add_argument(
        "--paraphrase-col",
        default=None,
        help="column with a paraphrase of each essay (else WordNet paraphrases)",
    )
    paraphrase.add_argument(
        "--no-paraphrases",
        action="store_true",
        help="skip the paraphrases (no WordNet paraphrasing): the paraphrase section "
        "says it was skipped",
    )
    p.add_argument(
        "--encoding", default=None, help="text encoding of tsv/csv (default UTF-8)"
    )
    p.add_argument("--out", required=True, metavar=metavar, help=out)
    _add_run_options(p, force=force)


def _add_run_options(
    p: argparse.ArgumentParser, *, systems: bool = True, force: str | None = None
) -> None:
    """The audit's options (declared once in ``report._config``), then the command's own."""
    from .report._config import add_arguments

    add_arguments(p, demo=not systems)
    p.add_argument(
        "--force",
        action="store_true",
        help=force
        or "replace an earlier fairaes report at --out (any other folder is refused)",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="print nothing unless something fails (no progress, warnings or summary)",
    )


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of ``fairaes`` (exposed for tests and docs).

    Returns
    -------
    parser : argparse.ArgumentParser
        The parser with the subcommands ``setup``, ``audit``, ``demo``,
        ``cache``, ``compare`` and ``check``; each subcommand stores its
        handler in ``func``.

    Examples
    --------
    >>> from sklearn_fairaes.cli import build_parser
    >>> build_parser().prog
    'fairaes'
    """
    parser = argparse.ArgumentParser(
        prog="fairaes",
        description="Individual-fairness audit for automated essay scoring.",
        epilog=(
            "Examples:\n  fairaes setup\n  fairaes demo --out demo-report\n"
            "  fairaes audit essays.tsv --text-col essay --score-col score \\\n"
            "      --system-cols engine --score-range 0,6 --out report\n"
            "  fairaes check report --policy williamson2012\n"
            "  fairaes --version"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fairaes {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p_setup = sub.add_parser(
        "setup",
        help="prepare language data (WordNet) and report which models are available",
        description=(
            "Prepare offline language data and list what was found: WordNet for NLTK "
            "(built from a system copy when it cannot be downloaded), Sentence-BERT "
            "models, LASER weights, spelling, POS and grammar backends."
        ),
        epilog="Example:\n  fairaes setup",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_setup.add_argument("--quiet", action="store_true", help="print nothing")
    p_setup.set_defaults(func=_cmd_setup)

    p_audit = sub.add_parser(
        "audit",
        help="run the individual-fairness audit on a file of essays with human scores",
        description=(
            "Audit scoring systems against the human scores with the paper's\n"
            "methodology (agreement, Lipschitz fraction, score-difference curves,\n"
            "extreme pairs, feature profiles, paraphrase robustness, group view,\n"
            "counterfactual edits) and write DIR/report.html, DIR/results.json and\n"
            "DIR/tables/*.csv. The systems are your own: scores in columns of the\n"
            "data (--system-cols) or fitted models (--model-file); without either,\n"
            "the audit trains baseline models on BOW/TF-IDF/Sentence-BERT vectors\n"
            "(--models). Every input is checked before any work: bad input exits 2\n"
            "naming the file, row, column or prompt, and writes nothing."
        ),
        epilog=(
            "Examples:\n"
            "  # the scores of your own engine, on a declared 0-6 scale\n"
            "  fairaes audit essays.tsv --text-col essay --score-col score \\\n"
            "      --system-cols engine --score-range 0,6 --out report\n"
            "  # a fitted model (joblib file; loading it runs its code: trust it)\n"
            "  fairaes audit essays.tsv --text-col essay --score-col score \\\n"
            "      --model-file mine=model.joblib --score-range 0,6 --out report\n"
            "  # many prompts, each its own study, with a scale per prompt\n"
            "  fairaes audit asap.tsv --text-col essay --score-col domain1_score \\\n"
            "      --prompt-col essay_set --prompts prompts/ --score-range scales.csv \\\n"
            "      --system-cols engine --representations tfidf --out asap-report\n"
            "  # short answers: the question is the prompt, with reference answers\n"
            "  fairaes audit answers.csv --text-col answer --score-col score \\\n"
            "      --prompt-col question_id --reference-col reference \\\n"
            "      --system-cols grader --out saf-report\n"
            "  # the paper's trained baselines\n"
            "  fairaes audit asap.tsv --text-col essay --score-col domain1_score \\\n"
            "      --rater-cols rater1_domain1,rater2_domain1 --prompt-file prompt.txt \\\n"
            "      --representations tfidf,sbert --models ridge --out asap7-report\n"
            "Exit codes: 0 ok, 2 bad input, 1 internal error, 130 interrupted."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_audit_arguments(p_audit, out="output folder")
    add_scheduler_option(p_audit)
    p_audit.set_defaults(func=_cmd_audit)

    p_demo = sub.add_parser(
        "demo",
        help="run the audit on the embedded demo corpus",
        description="Audit the 180-essay demo corpus written for this package.",
        epilog="Example:\n  fairaes demo --out demo-report",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_demo.add_argument(
        "--out",
        default="demo-report",
        metavar="DIR",
        help="output folder (default: %(default)s)",
    )
    _add_run_options(p_demo, systems=False)
    p_demo.set_defaults(func=_cmd_demo)

    p_cache = sub.add_parser(
        "cache",
        help="show or clear the persistent embedding cache",
        description=(
            "The embedding cache fairaes audit reads and fills: 'info' lists its "
            "folder, entries, size and models; 'clear' removes the entries it wrote "
            "(only files in its own format, under its CACHEDIR.TAG marker)."
        ),
        epilog="Examples:\n  fairaes cache info\n  fairaes cache clear --cache ./emb",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_cache.add_argument("action", choices=("info", "clear"))
    p_cache.add_argument(
        "--cache",
        default=None,
        metavar="DIR",
        help="the cache folder (default: $SKLEARN_FAIRAES_CACHE, else "
        "~/.cache/sklearn_fairaes/embeddings)",
    )
    p_cache.add_argument("--quiet", action="store_true", help="print nothing")
    p_cache.set_defaults(func=_cmd_cache)
    # compare and check read saved reports: their own module keeps this one short
    from ._cli_gate import add_parsers

    add_parsers(sub)
    from ._cli_edits import add_parser as add_export_edits

    add_export_edits(sub, _add_audit_arguments, audit_from_args)
    return parser


@contextlib.contextmanager
def _silenced(quiet: bool) -> Iterator[None]:
    """Under --quiet, print nothing while the command runs; errors come after.

    Warnings are ignored (the report keeps the audit's notes), and file
    descriptors 1 and 2 point to the null device, which silences what libraries
    print by themselves (the progress bar of a model's weights, C and Rust
    code); they are restored before an error is printed.
    """
    if not quiet:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        saved = []
        try:
            for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
                stream.flush()
                try:
                    saved.append((fd, os.dup(fd)))
                except OSError:  # no such descriptor (an embedding program)
                    continue
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, fd)
                os.close(null)
            yield
        finally:
            for fd, copy in saved:
                with contextlib.suppress(ValueError, OSError):
                    (sys.stdout if fd == 1 else sys.stderr).flush()
                os.dup2(copy, fd)
                os.close(copy)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``fairaes`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Parameters
    ----------
    argv : sequence of str, default=None
        The command-line arguments after the program name; None reads
        ``sys.argv[1:]``.

    Returns
    -------
    code : int
        The exit code: 0 ok, 2 bad input (the message names the file, row and
        column, or the output path), 1 internal error (after printing the
        traceback), 130 interrupted (Ctrl-C; ``--out`` is left as it was).

    Examples
    --------
    >>> from sklearn_fairaes.cli import main
    >>> main(["setup", "--quiet"])
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        with interrupts_kept(), _silenced(getattr(args, "quiet", False)):
            return int(args.func(args))
    except BadInput as exc:
        print(f"fairaes: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except _Interrupted as exc:
        print(f"fairaes: interrupted; {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print(
            "fairaes: interrupted; no report was written and --out was left as it was",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    except Exception:  # an internal error: show it, exit 1
        import traceback

        traceback.print_exc()
        print(
            "fairaes: internal error (the traceback is above); no report was written. "
            "Please report it with the command you ran.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
