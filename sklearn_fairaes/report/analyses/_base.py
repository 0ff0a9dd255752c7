"""What every analysis of the audit shares: the study it reads and what it returns.

An analysis is one module of this package with a module-level ``ANALYSIS``
object: a name (its section id and the key of its template
``templates/sections/<name>.html.j2``), a ``run(study)`` that computes its
tables from one :class:`~sklearn_fairaes.report._study.Study` (one prompt),
and an ``absent(study)`` that says, in a sentence for the report, why it
cannot run on that study (or None when it can). Adding an analysis to the
audit is adding one module and one template, and its name to ``ORDER``.

Tables returned by ``run`` carry no ``prompt`` column: the audit inserts it
in front when it stacks the studies, so every table has one row per
(prompt, system, representation, ...) with those as columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pandas import DataFrame

    from .._study import Study


@dataclass
class AnalysisOutput:
    """The tables of one analysis on one study, with what the reader should know.

    ``notes`` are sentences for the report's notes list (what was sampled,
    undefined values and where); ``warnings`` are dicts with at least
    ``"representation"`` and ``"message"`` shown next to the numbers they
    concern.
    """

    tables: dict[str, DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)


class Analysis(Protocol):
    """One step of the audit; see the module docstring."""

    name: str
    title: str

    def absent(self, study: Study) -> str | None:
        """Why this analysis cannot run on ``study``, or None when it can."""

    def run(self, study: Study) -> AnalysisOutput:
        """Compute this analysis's tables on one study (one prompt)."""
