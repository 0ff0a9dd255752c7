"""The audit: the paper's methodology on a user's data, and its report.

``audit()`` computes tables and figures; ``AuditResult`` renders them to a
self-contained HTML report, JSON and CSV files. ``compare()`` sets saved audits
side by side and ``check()`` holds one to requirements (a gate for CI).
"""

from ._audit import MODEL_NAMES, REPRESENTATION_NAMES, AuditInputError, AuditResult, audit
from ._check import Verdict, check, load_policy
from ._compare import ComparisonResult, compare

__all__ = [
    "AuditInputError",
    "AuditResult",
    "ComparisonResult",
    "MODEL_NAMES",
    "REPRESENTATION_NAMES",
    "Verdict",
    "audit",
    "check",
    "compare",
    "load_policy",
]
