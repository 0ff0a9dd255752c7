"""Short-answer grading against reference answers, and its low-coverage-bias audit.

``ReferenceSimilarityGrader`` grades an answer by its similarity to the
reference answers of its question (the zero-shot embedding baseline of
ASAG2024, optionally calibrated); ``reference_coverage_curve`` measures how
much such a grader under-scores fully correct answers that the few references
do not cover (Choshen & Abend 2018), and ``plot_reference_coverage`` draws it.
Load data with :func:`sklearn_fairaes.datasets.load_short_answers`.
"""

from ._coverage import plot_reference_coverage, reference_coverage_curve
from ._grader import ReferenceSimilarityGrader

__all__ = [
    "ReferenceSimilarityGrader",
    "plot_reference_coverage",
    "reference_coverage_curve",
]
