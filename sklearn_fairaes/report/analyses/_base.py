"""What every section of the report shares: the study it reads, what it returns.

A section is one module of this package with a module-level ``SECTION``
(:class:`Section`): its id (also the name of its template
``templates/sections/<id>.html.j2``), its headings, its tables' schema, its
pooling across prompts, its view and its figures. Most sections have an
analysis (``ANALYSIS``): a ``run(study)`` that computes its tables from one
:class:`~sklearn_fairaes.report._study.Study` (one prompt), and an
``absent(study)`` that says, in a sentence for the report, why it cannot run
on that study (or None when it can). Adding a section is adding one module
and one template, and its entry in ``SECTIONS`` (``analyses/__init__.py``).

Tables returned by ``run`` carry no ``prompt`` column: the audit inserts it
in front when it stacks the studies, so every table has one row per
(prompt, system, representation, ...) with those as columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.figure import Figure
    from numpy.typing import NDArray
    from pandas import DataFrame

    from .._study import Study


@dataclass
class AnalysisOutput:
    """The tables of one analysis on one study, with what the reader should know.

    ``notes`` are sentences for the report's notes list (what was sampled,
    undefined values and where); ``warnings`` are dicts with at least
    ``"representation"`` and ``"message"`` shown next to the numbers they
    concern. ``replicates`` holds the bootstrap replicates behind a table's
    interval columns, keyed ``(table, representation, system, column)``
    (``representation`` ``""`` where the table has none), each an array of
    shape ``(n_bootstrap,)`` drawn with the study's
    :meth:`~sklearn_fairaes.report._study.Study.bootstrap_weights`; the audit
    keys them by prompt too (:attr:`~sklearn_fairaes.report.AuditResult.replicates`).
    """

    tables: dict[str, DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    replicates: dict[tuple[str, str, str, str], NDArray[np.float64]] = field(
        default_factory=dict
    )


class Analysis(Protocol):
    """One step of the audit; see the module docstring."""

    name: str

    def absent(self, study: Study) -> str | None:
        """Why this analysis cannot run on ``study``, or None when it can."""

    def run(self, study: Study) -> AnalysisOutput:
        """Compute this analysis's tables on one study (one prompt)."""


@dataclass(frozen=True)
class Heading:
    """One numbered heading of a section, and the tables that make it show.

    ``id`` is what other templates use to refer to it (``ref["lipschitz"]``
    gives its number on the page); ``tables`` are the table names any one
    of which, non-empty, means the heading has something to show.
    """

    id: str
    title: str
    tables: tuple[str, ...] = ()


@dataclass(frozen=True)
class FigureContext:
    """What every figure of one prompt shares: order, colours and score scale."""

    representations: Sequence[str] | None
    systems: Sequence[str] | None
    colors: Mapping[str, str]
    scale: tuple[float, float] | None


#: ``view(tables, meta, prompt)``: the values a section's template reads, from
#: one prompt's rows; a section that opens the report (``per_prompt=False``) is
#: called ``view(tables, meta, prompts, left_out)`` and returns None to be left out
ViewFn = Callable[..., "dict[str, Any] | None"]
#: ``pool(tables, studies)``: the stacked tables with rows pooled across prompts
PoolFn = Callable[["dict[str, DataFrame]", "Sequence[Study]"], "dict[str, DataFrame]"]
#: ``figures(tables, context)``: one prompt's figures, keyed by figure name
FiguresFn = Callable[["Mapping[str, DataFrame]", FigureContext], "dict[str, Figure]"]


@dataclass(frozen=True)
class Section:
    """One section of the report: what it computes, pools, shows and draws.

    Parameters
    ----------
    id : str
        The section's id: the name ``sections=`` (``--sections``) selects it
        by, the key of its reason in ``meta["absent_sections"]`` and the name
        of its template ``sections/<id>.html.j2``.
    headings : tuple of Heading
        Its numbered headings on the page, in order; the first one's title is
        the section's title.
    analysis : Analysis or None
        What runs on each study (``absent``, ``run``); None for a section
        that only shows what the audit already has (overview, summary).
    view : callable or None
        ``view(tables, meta, prompt)``: the values its template reads (as
        ``v``), from one prompt's rows of the tables. A section with
        ``per_prompt=False`` is called ``view(tables, meta, prompts,
        left_out)`` (every prompt's rows, the sections left out) and returns
        None when it has nothing to show.
    schema : dict of str to tuple of str
        Each table it writes and that table's columns (``prompt`` excluded).
    pool : callable or None
        With several prompts, adds the rows pooled across prompts to its
        stacked tables.
    figures : callable or None
        ``figures(tables, context)``: its figures of one prompt's tables.
    figure_names : tuple of str
        The names ``figures`` can return, in order.
    color_keys : tuple of (str, str)
        ``(table, column)`` whose values name the systems its figures colour.
    optional : bool
        Shown only when one of its tables exists; a section that is not
        optional always shows and says why it is empty.
    default_reason : str or None
        Why an optional section is left out when the audit gave no reason.
    applies : callable or None
        ``applies(meta)``: False when the section has no meaning for this
        audit, so that its absence is not even listed (short answers in an
        essay audit); None: it always applies.
    per_prompt : bool
        Shown once per prompt (in each prompt's part); False for the
        sections that open the report.
    template_dir : str or None
        A folder holding ``sections/<id>.html.j2``, for a section defined
        outside the package; None: the package's templates.

    Examples
    --------
    >>> from sklearn_fairaes.report.analyses import SECTIONS
    >>> [s.id for s in SECTIONS][:3]
    ['overview', 'summary', 'agreement']
    >>> SECTIONS[2].title
    'Agreement with human raters'
    """

    id: str
    headings: tuple[Heading, ...]
    analysis: Analysis | None = None
    view: ViewFn | None = None
    schema: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    pool: PoolFn | None = None
    figures: FiguresFn | None = None
    figure_names: tuple[str, ...] = ()
    color_keys: tuple[tuple[str, str], ...] = ()
    optional: bool = False
    default_reason: str | None = None
    applies: Callable[[Mapping[str, Any]], bool] | None = None
    per_prompt: bool = True
    template_dir: str | None = None

    @property
    def title(self) -> str:
        """The section's title: its first heading's."""
        return self.headings[0].title

    @property
    def template(self) -> str:
        """The name of its template."""
        return f"sections/{self.id}.html.j2"
