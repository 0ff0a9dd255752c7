"""sklearn_fairaes: are similar essays scored similarly?

Individual-fairness evaluation for automated essay and short-answer scoring,
as a scikit-learn extension. Importing the package is light: torch,
sentence-transformers, spaCy and matplotlib load only when a feature that
needs them is used.
"""

from ._config import config_context, get_config, set_config
from ._version import __version__
from .datasets import (
    load_asap,
    load_demo_essays,
    load_demo_prompt,
    load_demo_rubric,
    load_short_answers,
)
from .features import FEATURE_NAMES, InterpretableFeatures
from .metrics import (
    FairnessScorer,
    agreement_rate,
    agreement_report,
    condensed_distances,
    difference_of_standardized_means,
    essay_consistency,
    extreme_pairs,
    fairness_analyses,
    feature_difference_profile,
    get_scorer,
    get_scorer_names,
    group_agreement_report,
    group_lipschitz_fraction,
    lipschitz_fraction,
    lipschitz_profile,
    lipschitz_violations,
    make_fairness_scorer,
    mean_qwk,
    paraphrase_ndcg,
    prmse,
    qwk,
    qwk_degradation,
    score_distance_curve,
    standardized_mean_difference,
    weighted_rmse,
)
from .model_selection import FairGridSearchCV, FairRandomizedSearchCV, fair_refit
from .paraphrase import WordNetParaphraser
from .perturb import PERTURBATION_NAMES, perturbation_audit
from .report import AuditResult, ComparisonResult, Verdict, audit, check, compare
from .scorers import (
    FunctionScorer,
    HTTPScorer,
    OpenAIScorer,
    ScorerError,
    make_scorer_from_spec,
)
from .short_answers import ReferenceSimilarityGrader, reference_coverage_curve
from .text import (
    BowVectorizer,
    EmbeddingCache,
    LaserEncoder,
    SentenceBertEncoder,
    TfidfEssayVectorizer,
)

__all__ = [
    "__version__",
    # settings
    "config_context",
    "get_config",
    "set_config",
    # representations
    "BowVectorizer",
    "EmbeddingCache",
    "LaserEncoder",
    "SentenceBertEncoder",
    "TfidfEssayVectorizer",
    # metrics
    "FairnessScorer",
    "agreement_rate",
    "agreement_report",
    "condensed_distances",
    "difference_of_standardized_means",
    "essay_consistency",
    "extreme_pairs",
    "fairness_analyses",
    "feature_difference_profile",
    "get_scorer",
    "get_scorer_names",
    "group_agreement_report",
    "group_lipschitz_fraction",
    "lipschitz_fraction",
    "lipschitz_profile",
    "lipschitz_violations",
    "make_fairness_scorer",
    "mean_qwk",
    "paraphrase_ndcg",
    "prmse",
    "qwk",
    "qwk_degradation",
    "score_distance_curve",
    "standardized_mean_difference",
    "weighted_rmse",
    # features
    "FEATURE_NAMES",
    "InterpretableFeatures",
    # datasets
    "load_asap",
    "load_demo_essays",
    "load_demo_prompt",
    "load_demo_rubric",
    "load_short_answers",
    # short answers
    "ReferenceSimilarityGrader",
    "reference_coverage_curve",
    # paraphrase, perturbations and audit
    "WordNetParaphraser",
    "PERTURBATION_NAMES",
    "perturbation_audit",
    "AuditResult",
    "audit",
    # comparing audits and the gate
    "ComparisonResult",
    "Verdict",
    "check",
    "compare",
    # scorers you call
    "FunctionScorer",
    "HTTPScorer",
    "OpenAIScorer",
    "ScorerError",
    "make_scorer_from_spec",
    # model selection
    "FairGridSearchCV",
    "FairRandomizedSearchCV",
    "fair_refit",
]
