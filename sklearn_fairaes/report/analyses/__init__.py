"""The audit's analyses, one module each, in the order of the report.

Each module has a module-level ``ANALYSIS`` (see :mod:`._base`): the audit
runs every one of ``ORDER`` on every study (prompt) and stacks their
tables. Adding an analysis is adding its module, its template
(``templates/sections/<name>.html.j2``) and its entry here.
"""

from ._agreement import ANALYSIS as AGREEMENT
from ._base import Analysis, AnalysisOutput
from ._counterfactual import ANALYSIS as COUNTERFACTUAL
from ._extremes import ANALYSIS as EXTREMES
from ._groups import ANALYSIS as GROUPS
from ._lipschitz import ANALYSIS as LIPSCHITZ
from ._paraphrase import ANALYSIS as PARAPHRASE
from ._review import ANALYSIS as REVIEW
from ._short_answers import ANALYSIS as SHORT_ANSWERS

ORDER: list[Analysis] = [
    AGREEMENT,
    EXTREMES,
    PARAPHRASE,
    LIPSCHITZ,
    REVIEW,
    GROUPS,
    COUNTERFACTUAL,
    SHORT_ANSWERS,
]

__all__ = ["ORDER", "Analysis", "AnalysisOutput"]
