"""The audit's options, each declared once: :class:`Option`, :class:`AuditConfig`.

An option of :func:`~sklearn_fairaes.audit` (``cv``, ``n_neighbors``,
``sbert_backend``, ...) is one :class:`Option`: its name, default,
constraints (those of :func:`~sklearn_fairaes._param_validation.check_params`),
help text, command-line spelling and the label of its row in the report's
settings table, when it has one. Options come in groups (:data:`GROUPS`), and
:class:`AuditConfig` is built from a list of groups, so that an option that
only one report section reads can be declared in that section's module and
handed to :class:`AuditConfig` with the rest.

Everything else is made from the declarations:

* the ``fairaes audit`` and ``fairaes demo`` flags (:func:`add_arguments`)
  and the audit() keywords they give (:func:`cli_values`);
* the default of every option (``AuditConfig()`` holds them);
* the one check of every value, at plan time (:meth:`AuditConfig.validate`,
  called by ``report._build.plan_audit``), whose message says which option,
  where it was given (keyword and flag) and how to fix it;
* the labels of the report's settings rows (:func:`setting_label`).

:func:`~sklearn_fairaes.audit` keeps its explicit signature and numpydoc
docstring (they are the public documentation); ``tests/test_audit_config.py``
checks that they list exactly these options with these defaults.
"""

from __future__ import annotations

import argparse
import numbers
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._param_validation import Interval, Options, check_device, unmet_constraints
from ..text._sbert import BACKENDS as SBERT_BACKENDS


class AuditInputError(ValueError):
    """The data given to the audit is unusable; the message says where and how to fix it.

    :func:`~sklearn_fairaes.report.audit` raises it before any computation;
    it is a :class:`ValueError`, so ``except ValueError`` catches it too.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report import AuditInputError, audit
    >>> data = pd.DataFrame({"essay": ["One.", "Two.", "Three.", "Four."],
    ...                      "score": [1, 2, 3, 4]})
    >>> try:
    ...     audit(data, text_col="text", score_col="score")
    ... except AuditInputError as exc:
    ...     print(exc)
    text column 'text' not found; the columns are: 'essay', 'score'
    """


__all__ = ["AuditConfig", "GROUPS", "Option", "OptionGroup", "add_arguments"]


def _split(value: str | None) -> list[str] | None:
    """A comma-separated option as a list of names (None stays None)."""
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _names(value: str) -> list[str]:
    """--representations as audit() takes it.

    An empty option gives no names, which audit() refuses with a message.
    """
    return _split(value) or []


def _n_jobs(value: str) -> int:
    """argparse type of --n-jobs: a non-zero integer, as joblib reads it."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer, got {value[:40]!r}"
        ) from None
    if n == 0:
        raise argparse.ArgumentTypeError(
            "0 runs nothing; pass a positive number of processes, or -1 for all cores"
        )
    return n


def _check_device(device: Any) -> None:
    """The device option: one the machine has (``_param_validation.check_device``)."""
    check_device(device, purpose="the audit's neural encoders")


@dataclass(frozen=True)
class Option:
    """One option of the audit, declared once.

    Parameters
    ----------
    name : str
        The keyword of :func:`~sklearn_fairaes.audit`.
    default : object
        Its default (for audit() and, unless ``cli_default`` says otherwise,
        for the command line).
    constraints : tuple
        What a value may be, as in
        :func:`~sklearn_fairaes._param_validation.check_params`: it must satisfy
        one of them. Empty: the option is checked where it is used (a
        derived check: ``check`` or the audit's own code), see ``checked_by``.
    help : str
        The command's help text (argparse's ``%(default)s`` allowed); None
        shows no help, as for some flags today.
    fix : str
        How to fix a refused value, ending the message (``"e.g. cv=5"``).
    flag : str or None
        The command-line spelling, default ``--`` and the name with dashes;
        None: not an option of the command.
    metavar, choices, cli_type, cli_default :
        What argparse takes for the flag; ``cli_type`` converts the text
        (``int``); ``cli_default`` is the flag's default when it differs from
        ``default`` in form (``"bow,tfidf,sbert"`` for a tuple of names).
    from_cli : callable or None
        Turns the flag's value into audit()'s (``_split`` for name lists).
    from_args : callable or None
        audit()'s value from the whole parsed command line, for an option
        spelled as several flags (``--cache DIR``, ``--no-cache``).
    composed : bool
        The command builds audit()'s value from this flag and its other
        inputs (``--models`` with ``--model-file``), so :func:`cli_values`
        leaves it to the command.
    demo_help : str or None
        The help text under ``fairaes demo`` when it differs.
    check : callable or None
        A further check of a value the constraints accept (the device this
        machine has); raises ValueError or TypeError with the reason.
    checked_by : str
        Where an option without constraints is checked, for the docs.
    setting : str or None
        The label of the option's row in the report's settings table; None:
        not shown there.
    add : callable or None
        Adds the flag(s) itself, for a flag argparse cannot declare alone
        (``--cache`` and ``--no-cache``, mutually exclusive).

    Examples
    --------
    >>> import numbers
    >>> from sklearn_fairaes._param_validation import Interval
    >>> from sklearn_fairaes.report._config import Option
    >>> opt = Option("n_review", 20, (Interval(numbers.Integral, 1, None),),
    ...              help="rows listed (default: %(default)s)", fix="e.g. n_review=20",
    ...              cli_type=int)
    >>> opt.cli_flag
    '--n-review'
    """

    name: str
    default: Any
    constraints: tuple[Any, ...]
    help: str | None
    fix: str = ""
    flag: str | None = ""
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    cli_type: Callable[[str], Any] | None = None
    cli_default: Any = None
    from_cli: Callable[[Any], Any] | None = None
    from_args: Callable[[argparse.Namespace], Any] | None = None
    composed: bool = False
    demo_help: str | None = None
    check: Callable[[Any], None] | None = None
    checked_by: str = ""
    setting: str | None = None
    add: Callable[[argparse.ArgumentParser, Option], None] | None = None

    @property
    def cli_flag(self) -> str | None:
        """The flag of the command (None: not an option of the command)."""
        if self.flag is None:
            return None
        return self.flag or "--" + self.name.replace("_", "-")

    def refusal(self, value: object) -> str | None:
        """The message refusing ``value``, or None when it is acceptable.

        It names the option (keyword and flag), says what it must be and how
        to fix it.
        """
        where = self.name if self.cli_flag is None else f"{self.name} ({self.cli_flag})"
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        must = unmet_constraints(value, self.constraints) if self.constraints else None
        if must is not None:
            return (
                f"{where} must be {must}, got {shown}; {self.fix or 'give a valid value'}"
                f" (default: {self.default!r})"
            )
        if self.check is not None:
            try:
                self.check(value)
            except (TypeError, ValueError) as exc:
                return f"{where}: {exc}"
        return None


@dataclass(frozen=True)
class OptionGroup:
    """Options declared together (the encoders', one report section's, ...).

    Examples
    --------
    >>> from sklearn_fairaes.report._config import GROUPS
    >>> [g.name for g in GROUPS][:2]
    ['representations', 'run']
    """

    name: str
    options: tuple[Option, ...]


def _add_cache(parser: argparse.ArgumentParser, option: Option) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--cache",
        default=None,
        metavar="DIR",
        help=option.help,
    )
    where.add_argument(
        "--no-cache",
        action="store_true",
        help="keep embeddings in memory for this run only",
    )


def _add_off_switch(parser: argparse.ArgumentParser, option: Option) -> None:
    """A flag that turns an option off (``--no-features`` for ``features=False``)."""
    parser.add_argument(
        str(option.cli_flag), dest=option.name, action="store_false", help=option.help
    )


def _cache_from_cli(args: argparse.Namespace) -> bool | str:
    """audit()'s ``cache``: --no-cache, --cache DIR, else the per-user folder."""
    if args.no_cache:
        return False
    return True if args.cache is None else str(args.cache)


_INT_1 = Interval(numbers.Integral, 1, None)

#: The options of the text representations.
REPRESENTATIONS = OptionGroup(
    "representations",
    (
        Option(
            "representations",
            ("bow", "tfidf", "sbert"),
            # the names (and transformers) are checked by report._build.named
            (),
            help="comma-separated: bow, tfidf, sbert, laser (default: %(default)s)",
            cli_default="bow,tfidf,sbert",
            from_cli=_names,
            checked_by="report._build.named",
            setting="Text representations",
        ),
        Option(
            "letters",
            "ascii",
            (Options(("ascii", "unicode")),),
            help="what bow and tfidf count as letters: ascii (the paper's A-Z; an essay "
            "in another script keeps only its A-Z words, which the report notes) or "
            "unicode (the letters of every script); default: %(default)s",
            fix="pass letters='ascii' (the paper's A-Z) or 'unicode' (every script)",
            choices=("ascii", "unicode"),
            setting="Letters of BOW and TF-IDF",
        ),
    ),
)

#: The options of the audited systems and of the whole run.
RUN = OptionGroup(
    "run",
    (
        Option(
            "models",
            None,
            # names or estimators, checked by report._build._models
            (),
            help="baseline models the audit trains itself, comma-separated: ridge, "
            "random_forest, gradient_boosting (short answers also "
            "reference_similarity); default: all three when no --system-cols or "
            "--model-file is given, else none (name them to add baselines side by side)",
            demo_help="baseline models the audit trains itself, comma-separated: ridge, "
            "random_forest, gradient_boosting; default: all three",
            metavar="NAMES",
            composed=True,
            checked_by="report._build._models",
        ),
        Option(
            "cv",
            5,
            # the upper bound, the essays of the smallest prompt, is checked
            # with the data (report._build.plan_audit)
            (Interval(numbers.Integral, 2, None),),
            help="cross-validation folds (default: 5)",
            fix="pass a number of folds such as cv=5",
            cli_type=int,
            setting="Cross-validation folds",
        ),
        Option(
            "random_state",
            0,
            ("random_state",),
            help=None,
            fix="pass a seed such as random_state=0",
            cli_type=int,
            setting="Random state",
        ),
        Option(
            "n_jobs",
            None,
            (_INT_1, Interval(numbers.Integral, None, -1), None),
            help="parallel processes (-1: all cores; default: one)",
            fix="pass a positive number of processes, -1 for all cores, or None",
            cli_type=_n_jobs,
        ),
        Option(
            "grammar",
            None,
            (None, str),
            help="LanguageTool server for the language_errors feature",
            fix="pass a LanguageTool server URL or 'local'",
            metavar="URL",
            # the server itself is probed at plan time (report._inputs._check_grammar)
        ),
        Option(
            "features",
            True,
            (bool,),
            help="skip the interpretable features (the slowest part of a first run "
            "with the paraphrases): the "
            "extreme pairs lose their feature columns and the feature profile, the "
            "error section keeps only the covariates; the report says so",
            fix="pass features=True (compute them) or False (skip them)",
            flag="--no-features",
            add=_add_off_switch,
            setting="Interpretable features",
        ),
    ),
)

#: The options of the neural encoders (Sentence-BERT, LASER).
ENCODERS = OptionGroup(
    "encoders",
    (
        Option(
            "sbert_model",
            "all-MiniLM-L6-v2",
            (str, os.PathLike),
            help=None,
            fix="give a Sentence-BERT model name or folder",
            setting="Sentence-BERT model",
        ),
        Option(
            "sbert_backend",
            "torch",
            (Options(SBERT_BACKENDS),),
            help="what runs the Sentence-BERT model: torch (the exact float32 vectors; "
            "default), torch-bf16 (the model in bfloat16: faster on CPUs with AMX or "
            "AVX512-BF16, cosine to the float32 vectors above 0.9999), onnx, onnx-int8 "
            "(ONNX Runtime, the onnx extra)",
            fix="pick one of those backends",
            choices=SBERT_BACKENDS,
        ),
        Option(
            "device",
            None,
            (None, str),
            help="torch device of the Sentence-BERT and LASER encoders: cpu, cuda, "
            "cuda:N (default: Sentence-BERT's own choice, LASER on the CPU); checked "
            "before any work",
            fix="pass a torch device name such as 'cpu' or 'cuda', or None",
            metavar="DEVICE",
            check=_check_device,
        ),
    ),
)

#: The options of the extreme pairs and the feature-difference profile.
EXTREMES = OptionGroup(
    "extremes",
    (
        Option(
            "k_extreme",
            1,
            (_INT_1,),
            help="nearest and farthest pairs shown per representation "
            "(default: %(default)s)",
            fix="pass a number of pairs such as k_extreme=1",
            cli_type=int,
        ),
        Option(
            "n_profile_pairs",
            10_000,
            (_INT_1,),
            help="pairs per group of the feature-difference profile (default: %(default)s)",
            fix="pass a number of pairs such as n_profile_pairs=10000",
            cli_type=int,
        ),
    ),
)

#: The option of the paraphrase-robustness ranking.
PARAPHRASE = OptionGroup(
    "paraphrase",
    (
        Option(
            "n_paraphrase_samples",
            100,
            (_INT_1,),
            help="essays sampled for the paraphrase-robustness ranking, whose "
            "paraphrases each system that can score a text re-scores (default: "
            "%(default)s)",
            fix="pass a number of essays such as n_paraphrase_samples=100",
            cli_type=int,
        ),
    ),
)

#: The options of the counterfactual audit.
COUNTERFACTUAL = OptionGroup(
    "counterfactual",
    (
        Option(
            "perturbations",
            None,
            # the names are checked against the data (a prompt_stuffing needs
            # the task statement): report._inputs._check_perturbations
            (None, str, list, tuple),
            help="add the counterfactual audit: 'default', 'all' or comma-separated "
            "names (synonym, typos, sentence_shuffle, word_salad, ...)",
            fix="pass 'default', 'all' or perturbation names",
            metavar="NAMES",
        ),
        Option(
            "n_perturbation_essays",
            200,
            (Interval(numbers.Integral, 2, None),),
            help="held-out essays edited by the counterfactual audit (default: "
            "%(default)s)",
            fix="pass a number of essays such as n_perturbation_essays=200",
            cli_type=int,
        ),
    ),
)

#: The options of the essays to review.
REVIEW = OptionGroup(
    "review",
    (
        Option(
            "n_review",
            20,
            (_INT_1,),
            help="essays to review and worst pairs listed per representation and "
            "system (default: %(default)s)",
            fix="pass a number of rows such as n_review=20",
            cli_type=int,
        ),
        Option(
            "n_neighbors",
            5,
            (_INT_1,),
            help="nearest essays each essay is compared with for the essays to review "
            "(default: %(default)s)",
            fix="pass a number of neighbours such as n_neighbors=5",
            cli_type=int,
        ),
    ),
)

#: The essay-level bootstrap of the report's headline figures.
UNCERTAINTY = OptionGroup(
    "uncertainty",
    (
        Option(
            "n_bootstrap",
            1000,
            (Interval(numbers.Integral, 0, None),),
            help="essay-level bootstrap replicates behind every headline figure's "
            "confidence interval, from one pass over the pairs (0: no intervals; "
            "default: %(default)s)",
            fix="pass a number of replicates such as n_bootstrap=1000, or 0 for none",
            flag="--bootstrap",
            metavar="B",
            cli_type=int,
            setting="Bootstrap replicates",
        ),
        Option(
            "confidence_level",
            0.95,
            (Interval(numbers.Real, 0.5, 0.999),),
            help="coverage of the confidence intervals (default: %(default)s)",
            fix="pass a level such as confidence_level=0.95",
            cli_type=float,
            setting="Confidence level",
        ),
    ),
)

#: How the agreement table measures the systems.
AGREEMENT = OptionGroup(
    "agreement",
    (
        Option(
            "smd_method",
            "unpooled",
            (Options(("pooled", "unpooled")),),
            help="the SD that divides the SMD of the agreement table and its "
            "acceptance flag: 'unpooled', the human scores' SD (RSMTool rsmeval's "
            "default), or 'pooled', the root mean of both variances (Williamson et al. "
            "2012) (default: %(default)s)",
            fix="pass smd_method='unpooled' (RSMTool's) or 'pooled' (Williamson et al.)",
            choices=("pooled", "unpooled"),
            setting="SMD denominator",
        ),
    ),
)


def _add_switch(parser: argparse.ArgumentParser, option: Option) -> None:
    """A flag that turns an option on (``--intersections``)."""
    parser.add_argument(
        str(option.cli_flag), dest=option.name, action="store_true", help=option.help
    )


#: The group view's groupings and which groups it tests.
GROUP_VIEW = OptionGroup(
    "group_view",
    (
        Option(
            "intersections",
            False,
            (bool,),
            help="also analyse the intersections of the group and bin columns "
            "(e.g. race=Black & gender=F)",
            fix="pass intersections=True or False",
            add=_add_switch,
            setting="Group intersections",
        ),
        Option(
            "min_group_size",
            30,
            (_INT_1,),
            help="essays a group needs to be tested (flags, p-values, intervals); a "
            "smaller group is reported, not tested (default: %(default)s)",
            fix="pass a number of essays such as min_group_size=30",
            metavar="N",
            cli_type=int,
            setting="Smallest group tested",
        ),
    ),
)

#: Which of the report's sections run and show.
SECTIONS = OptionGroup(
    "sections",
    (
        Option(
            "sections",
            None,
            # the ids are the report's (report.analyses.section_ids), checked
            # with them in report._audit._check_sections, before any work
            (),
            help="the report's sections to run and show, by id (overview, summary, "
            "agreement, extremes, paraphrase, lipschitz, review, groups, counterfactual, "
            "short_answers, retest); default: all",
            metavar="ID[,ID...]",
            # no flag, or an empty one: every section
            from_cli=lambda value: _split(value) or None,
            checked_by="report._audit._check_sections",
        ),
    ),
)

#: The embedding cache of every encoder the audit makes.
CACHE = OptionGroup(
    "cache",
    (
        Option(
            "cache",
            True,
            # True, False, None, a folder or an EmbeddingCache: text._cache.open_cache
            (),
            help="folder of the persistent embedding cache (default: "
            "$SKLEARN_FAIRAES_CACHE, else ~/.cache/sklearn_fairaes/embeddings); a "
            "re-run encodes nothing again",
            from_args=_cache_from_cli,
            checked_by="text._cache.open_cache",
            add=_add_cache,
        ),
    ),
)

#: Test-retest consistency: each essay scored several times by the scorers you call.
RETEST = OptionGroup(
    "retest",
    (
        Option(
            "repeats",
            1,
            # that a scorer you call is among the systems is checked with
            # them: report._repeats.check_repeats, before any work
            (_INT_1,),
            help="score each essay K times with each --scorer (K >= 2; the cache makes "
            "repeat 1 the first run's answer) for the section 'Same essay, different "
            "score' (default: 1, once)",
            fix="pass repeats=3 to score each essay three times, or 1 for once",
            metavar="K",
            cli_type=int,
        ),
    ),
)

#: Every option of the audit, by group (the order of the command's flags).
GROUPS: tuple[OptionGroup, ...] = (
    REPRESENTATIONS,
    RUN,
    ENCODERS,
    EXTREMES,
    PARAPHRASE,
    COUNTERFACTUAL,
    REVIEW,
    UNCERTAINTY,
    AGREEMENT,
    GROUP_VIEW,
    RETEST,
    SECTIONS,
    CACHE,
)


def collect(groups: Iterable[OptionGroup]) -> dict[str, Option]:
    """The options of ``groups`` by name; a name declared twice is our own bug."""
    options: dict[str, Option] = {}
    for group in groups:
        for option in group.options:
            if option.name in options:
                raise RuntimeError(f"audit option {option.name!r} declared twice")
            options[option.name] = option
    return options


_OPTIONS = collect(GROUPS)


@dataclass(init=False)
class AuditConfig:
    """The values of the audit's options, built from option groups.

    Unnamed options take their declared default; reading an option is an
    attribute (``config.cv``). Nothing is checked when it is made (the
    values are stored as given, as scikit-learn's estimators store their
    parameters): :meth:`validate` checks them all, once, when the audit is
    planned. The audit also keeps here what it made of a value (the opened
    embedding cache, the perturbation names).

    Parameters
    ----------
    groups : sequence of OptionGroup, default=GROUPS
        The declared options.
    tune_interpreter : bool, default=False
        audit(tune_interpreter=): may the audit change interpreter-wide
        settings (SIGINT handler, sys.unraisablehook, GIL switch interval),
        restoring them; a switch of the call, not an option of the analyses.
    **values
        Option name -> value.

    Examples
    --------
    >>> from sklearn_fairaes.report._config import AuditConfig
    >>> config = AuditConfig(cv=3)
    >>> config.cv, config.n_neighbors
    (3, 5)
    >>> AuditConfig(n_review=0).validate()
    Traceback (most recent call last):
    ...
    sklearn_fairaes.report._config.AuditInputError: n_review (--n-review) must be an int in the range [1, inf), got 0; pass a number of rows such as n_review=20 (default: 20)
    """  # noqa: E501

    values: dict[str, Any]
    options: dict[str, Option] = field(repr=False)
    tune_interpreter: bool = False

    def __init__(
        self,
        *,
        groups: Sequence[OptionGroup] | None = None,
        tune_interpreter: bool = False,
        **values: Any,
    ) -> None:
        options = _OPTIONS if groups is None else collect(groups)
        unknown = sorted(set(values) - set(options))
        if unknown:
            raise TypeError(f"AuditConfig got unknown option(s) {unknown}")
        object.__setattr__(self, "options", options)
        object.__setattr__(
            self,
            "values",
            {name: values.get(name, o.default) for name, o in options.items()},
        )
        object.__setattr__(self, "tune_interpreter", tune_interpreter)

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails: the options' values
        values = self.__dict__.get("values")
        if values is None or name not in values:
            raise AttributeError(f"AuditConfig has no option {name!r}")
        return values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__dict__.get("values", ()):
            self.values[name] = value
        else:
            object.__setattr__(self, name, value)

    def validate(self) -> None:
        """Check every value once, before any work.

        Raises
        ------
        AuditInputError
            Naming the first refused option (keyword and flag), what it must
            be and how to fix it.
        """
        for name, option in self.options.items():
            message = option.refusal(self.values[name])
            if message is not None:
                raise AuditInputError(message)


def setting_label(name: str) -> str:
    """The label of option ``name``'s row in the report's settings table.

    Examples
    --------
    >>> from sklearn_fairaes.report._config import setting_label
    >>> setting_label("cv")
    'Cross-validation folds'
    """
    label = _OPTIONS[name].setting
    if label is None:
        raise KeyError(f"option {name!r} has no row in the settings table")
    return label


def add_arguments(
    parser: argparse.ArgumentParser,
    *,
    demo: bool = False,
    groups: Sequence[OptionGroup] = GROUPS,
) -> None:
    """Add the flag of every option of ``groups`` to ``parser``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        ``fairaes audit``'s or ``fairaes demo``'s.
    demo : bool, default=False
        Use the demo's help texts where they differ.
    groups : sequence of OptionGroup, default=GROUPS
        The declared options.

    Examples
    --------
    >>> import argparse
    >>> from sklearn_fairaes.report._config import add_arguments
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> parser.parse_args(["--cv", "3"]).cv
    3
    """
    for option in collect(groups).values():
        flag = option.cli_flag
        if flag is None:
            continue
        if option.add is not None:
            option.add(parser, option)
            continue
        kwargs: dict[str, Any] = {
            "default": option.default if option.cli_default is None else option.cli_default
        }
        help_text = option.demo_help if demo and option.demo_help else option.help
        if help_text is not None:
            kwargs["help"] = help_text
        for key in ("metavar", "choices"):
            if getattr(option, key) is not None:
                kwargs[key] = getattr(option, key)
        if option.cli_type is not None:
            kwargs["type"] = option.cli_type
        # a flag spelled unlike its keyword (--bootstrap for n_bootstrap)
        parser.add_argument(flag, dest=option.name, **kwargs)


def cli_values(
    args: argparse.Namespace, groups: Sequence[OptionGroup] = GROUPS
) -> dict[str, Any]:
    """audit()'s keywords from the parsed flags (options the command composes aside).

    Examples
    --------
    >>> import argparse
    >>> from sklearn_fairaes.report._config import add_arguments, cli_values
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> values = cli_values(parser.parse_args(["--representations", "bow,tfidf"]))
    >>> values["representations"], values["cache"]
    (['bow', 'tfidf'], True)
    """
    out: dict[str, Any] = {}
    for name, option in collect(groups).items():
        if option.cli_flag is None or option.composed:
            continue
        if option.from_args is not None:
            out[name] = option.from_args(args)
            continue
        value = getattr(args, name)
        out[name] = value if option.from_cli is None else option.from_cli(value)
    return out


def check_signature(
    parameters: Mapping[str, Any], groups: Sequence[OptionGroup] = GROUPS
) -> list[str]:
    """How audit()'s parameters differ from the declarations (empty: they agree).

    ``parameters`` maps a name to its default, as
    :func:`inspect.signature` gives them.

    Examples
    --------
    >>> from sklearn_fairaes.report._config import GROUPS, check_signature, collect
    >>> defaults = {name: o.default for name, o in collect(GROUPS).items()}
    >>> check_signature({**defaults, "cv": 4})
    ['cv: default 4 in audit(), 5 declared']
    """
    problems = []
    for name, option in collect(groups).items():
        if name not in parameters:
            problems.append(f"{name}: declared, not a parameter of audit()")
        elif parameters[name] != option.default:
            problems.append(
                f"{name}: default {parameters[name]!r} in audit(), "
                f"{option.default!r} declared"
            )
    return problems
