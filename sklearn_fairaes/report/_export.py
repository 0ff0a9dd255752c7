"""The audit's plan without the audit: what ``fairaes export-edits`` writes.

Apart from ``_edits`` so that the audit's modules, which read scored files,
do not import the audit itself.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ._config import AuditInputError
from ._edits import needed_frame, needed_texts

if TYPE_CHECKING:
    from pandas import DataFrame

    from ._build import Plan

__all__ = ["EXPORT_SYSTEM", "export_texts", "plan_only"]


class _Unscored:
    """The system the export plans for: audited from a file, never called here."""

    def predict(self, X: Any) -> Any:  # pragma: no cover - never called
        raise RuntimeError("the export plans the audit; it scores nothing")


#: The placeholder system's name in the export's plan.
EXPORT_SYSTEM = "scored file"


def plan_only(data: Any, **options: Any) -> Plan:
    """The audit's plan for ``data`` and ``options`` (audit()'s keywords); nothing run.

    When no scorer is named, the plan has the one a scored file becomes
    (``scored_edits``), so that the essays drawn are those of that audit.
    """
    from ._audit import _prepare, audit

    try:
        bound = inspect.signature(audit).bind(data, **options)
    except TypeError as exc:
        raise AuditInputError(str(exc)) from None
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    if not arguments.get("scorers") and not arguments.get("scored_edits"):
        arguments["scorers"] = {EXPORT_SYSTEM: _Unscored()}
    arguments["scored_edits"] = None  # the file to be written is not read
    return _prepare(arguments)[0]


def export_texts(data: Any, **options: Any) -> DataFrame:
    """The export file's rows for ``data`` audited with ``options``; see the module docstring."""
    return needed_frame(needed_texts(plan_only(data, **options)))
