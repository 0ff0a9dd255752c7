"""The report's sections, one module each, and the one list that orders them.

Each module has a module-level ``SECTION`` (a
:class:`~sklearn_fairaes.report.analyses._base.Section`): its headings and
titles, its tables' schema, its analysis (``absent`` and ``run`` on one study,
see :mod:`._base`), its pooling across prompts, its view (the values its
template ``templates/sections/<id>.html.j2`` reads) and its figures.
:data:`SECTIONS` is the report's order: the audit runs the analyses in it,
stacks and pools their tables, and the page and the figures follow it.

Adding a section is one module with its ``SECTION``, one template, and its
entry in :data:`SECTIONS` (or, from outside the package,
:func:`register_section`); nothing else names a section.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .._plots import (
    _ordered,
    _present,
    _scale_of,
    audit_prompts,
    figure_key,
    model_colors,
    prompt_tables,
)
from ._agreement import SECTION as AGREEMENT
from ._base import Analysis, AnalysisOutput, FigureContext, Heading, Section
from ._counterfactual import SECTION as COUNTERFACTUAL
from ._errors import SECTION as ERRORS
from ._extremes import SECTION as EXTREMES
from ._groups import SECTION as GROUPS
from ._lipschitz import SECTION as LIPSCHITZ
from ._overview import SECTION as OVERVIEW
from ._paraphrase import SECTION as PARAPHRASE
from ._retest import SECTION as RETEST
from ._review import SECTION as REVIEW
from ._short_answers import SECTION as SHORT_ANSWERS
from ._summary import SECTION as SUMMARY

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

#: The report's sections, in page order: the only place that orders them.
SECTIONS: list[Section] = [
    OVERVIEW,
    SUMMARY,
    AGREEMENT,
    EXTREMES,
    PARAPHRASE,
    LIPSCHITZ,
    REVIEW,
    ERRORS,
    GROUPS,
    COUNTERFACTUAL,
    SHORT_ANSWERS,
    RETEST,
]

#: Names of the paper's figures the built-in sections draw, in report order.
FIGURE_NAMES = tuple(n for s in SECTIONS if s is not REVIEW for n in s.figure_names)

#: Figures of the essays to review (issue 17), kept apart from
#: :data:`FIGURE_NAMES`, which lists the paper's figures.
REVIEW_FIGURE_NAMES = REVIEW.figure_names


def register_section(section: Section, *, after: str | None = None) -> Section:
    """Add a section to the report, after the section ``after`` (default: last).

    The audit then runs its analysis on every prompt, writes its tables to
    ``results.json`` and ``tables/*.csv``, and the page shows its template;
    ``sections=`` / ``--sections`` can select it by its id.

    Parameters
    ----------
    section : Section
        The section; its ``template_dir`` holds ``sections/<id>.html.j2``
        when it is defined outside the package.
    after : str or None, default=None
        The id of the section it follows on the page.

    Returns
    -------
    section : Section
        The same section, registered.

    Raises
    ------
    ValueError
        When a section of that id is already registered, or ``after`` names
        no section.

    Examples
    --------
    >>> from sklearn_fairaes.report.analyses import SECTIONS, Heading, Section
    >>> from sklearn_fairaes.report.analyses import register_section
    >>> toy = Section("toy", (Heading("toy", "A toy section", ("toy",)),), optional=True)
    >>> register_section(toy, after="agreement") is toy
    True
    >>> [s.id for s in SECTIONS][2:4]
    ['agreement', 'toy']
    >>> SECTIONS.remove(toy)
    """
    ids = section_ids()
    if section.id in ids:
        raise ValueError(
            f"a section with id {section.id!r} is already registered; give yours another id"
        )
    if after is not None and after not in ids:
        raise ValueError(
            f"after={after!r} is no section; the sections are {', '.join(ids)}"
        )
    SECTIONS.insert(ids.index(after) + 1 if after else len(SECTIONS), section)
    return section


def section_ids() -> list[str]:
    """The ids of the report's sections, in page order.

    Returns
    -------
    ids : list of str
        What ``sections=`` (``--sections``) accepts.

    Examples
    --------
    >>> from sklearn_fairaes.report.analyses import section_ids
    >>> section_ids()[:3]
    ['overview', 'summary', 'agreement']
    """
    return [s.id for s in SECTIONS]


def selected(ids: Iterable[str] | None) -> list[Section]:
    """The sections of ``ids`` in page order (every section for None)."""
    chosen = None if ids is None else set(ids)
    return [s for s in SECTIONS if chosen is None or s.id in chosen]


__all__ = [
    "FIGURE_NAMES",
    "REVIEW_FIGURE_NAMES",
    "SECTIONS",
    "Analysis",
    "AnalysisOutput",
    "FigureContext",
    "Heading",
    "Section",
    "make_figures",
    "register_section",
    "section_ids",
    "selected",
]


def make_figures(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any] | None
) -> dict[str, Figure]:
    """Build every figure of the audit report that the tables allow.

    A figure whose table is missing (or empty) is left out; nothing is
    raised for it. Each prompt has its own figures, drawn from its rows of
    the tables (the rows pooled over prompts are never drawn). Colours per
    system and the order of representations and systems are the same in
    every figure (taken from ``meta["systems"]`` or ``meta["models"]`` and
    ``meta["representations"]`` when given). Score axes follow the prompt's
    scale (``meta["score_ranges"]``, else ``meta["score_range"]``).

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        The audit's tables (see :class:`~sklearn_fairaes.report.AuditResult`).
    meta : dict or None
        The audit's metadata; ``representations`` and ``systems`` (or
        ``models``) set the order, ``prompts`` the prompts.

    Returns
    -------
    figures : dict of str to matplotlib.figure.Figure
        With one prompt, the figure names of the sections
        (``Section.figure_names``), in report order;
        with several, :func:`~sklearn_fairaes.report._plots.figure_key` of each name and prompt, prompt by
        prompt.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report.analyses import make_figures
    >>> table = pd.DataFrame({"representation": ["bow"], "system": ["ridge"],
    ...                       "lipschitz_minmax": [0.99], "lipschitz_max": [0.997],
    ...                       "n_pairs": [45]})
    >>> list(make_figures({"lipschitz": table}, {}))
    ['lipschitz']
    >>> two = pd.concat([table.assign(prompt="1"), table.assign(prompt="2")])
    >>> list(make_figures({"lipschitz": two}, {}))
    ['lipschitz:1', 'lipschitz:2']
    """
    figures: dict[str, Figure] = {}
    for key_of, section, ptables, context in figure_units(tables, meta):
        assert section.figures is not None  # for mypy: only sections that draw
        for name, fig in section.figures(ptables, context).items():
            figures[key_of(name)] = fig
    return figures


def figure_units(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any] | None
) -> Iterator[tuple[Callable[[str], str], Section, dict[str, pd.DataFrame], FigureContext]]:
    """What :func:`make_figures` draws, one section of one prompt at a time, in order.

    Yields ``(key_of, section, tables, context)``: ``section.figures(tables,
    context)`` draws them, ``key_of(name)`` is each figure's key in
    :func:`make_figures`'s result (the report's figure cache draws them the
    same way, or reads their PNGs back).
    """
    meta = meta or {}
    reps = list(meta.get("representations") or []) or None
    mods = [str(m) for m in (meta.get("systems") or meta.get("models") or [])]
    chosen = meta.get("sections")
    drawing = [s for s in SECTIONS if s.figures and (chosen is None or s.id in chosen)]
    names = list(mods)
    for key, column in (k for s in drawing for k in s.color_keys):
        if _present(tables, key) and column in tables[key].columns:
            names += [s for s in tables[key][column].astype(str) if s != "distance"]
    colors = model_colors(_ordered(names, mods, last=("human",)))
    prompts = audit_prompts(tables, meta)
    for prompt in prompts:
        context = FigureContext(reps, mods or None, colors, _scale_of(meta, prompt))
        ptables = prompt_tables(tables, prompt)
        shown = prompt if len(prompts) > 1 else None

        def key_of(name: str, _shown: str | None = shown) -> str:
            return figure_key(name, _shown)

        for section in drawing:
            yield key_of, section, ptables, context
