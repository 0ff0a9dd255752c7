"""The audit: the paper's methodology on a user's data, and its report.

``audit()`` computes tables and figures; ``AuditResult`` renders them to a
self-contained HTML report, JSON and CSV files.
"""

from ._audit import MODEL_NAMES, REPRESENTATION_NAMES, AuditInputError, AuditResult, audit

__all__ = ["AuditInputError", "AuditResult", "MODEL_NAMES", "REPRESENTATION_NAMES", "audit"]
