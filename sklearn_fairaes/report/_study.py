"""One prompt's essays, the scores to audit and the shared pair spaces.

The audit builds one :class:`Study` per prompt (or one for all essays when
there is no prompt column): every pair statistic is computed within a study
only, since essays on different prompts are not similar individuals and
their score scales may differ. Analyses (``report/analyses``) read a study
and never change it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

SystemKind = Literal["given", "fitted", "trained"]


@dataclass
class System:
    """One scoring system's scores for every essay of a study.

    ``kind`` is ``"given"`` (a column or array of the user's scores),
    ``"fitted"`` (the user's fitted estimator, scored on the essays as it
    is, never refitted) or ``"trained"`` (one of our baselines,
    out-of-fold predictions per representation, as in the paper).
    ``scores`` maps a representation name to the scores under it; the key
    ``None`` holds scores that do not depend on the representation (given
    and fitted systems), which every representation then audits.
    ``estimator`` is what can re-score edited essays: the user's fitted
    estimator (texts -> scores), or for a trained baseline the unfitted
    regressor (or a dict representation -> regressor); None for given scores.
    """

    name: str
    kind: SystemKind
    scores: dict[str | None, NDArray[np.float64]]
    estimator: Any = None
    description: str = ""

    def under(self, representation: str) -> NDArray[np.float64] | None:
        """The scores audited under ``representation``, or None when it has none."""
        if None in self.scores:
            return self.scores[None]
        return self.scores.get(representation)

    def agreement_rows(self) -> list[tuple[str, NDArray[np.float64]]]:
        """``(representation, scores)`` per agreement row: ``""`` for scores of any."""
        return [("" if r is None else r, s) for r, s in self.scores.items()]


@dataclass
class PairSpace:
    """One representation's essay pairs within one study, shared by every pair analysis.

    ``pairs`` and ``metric`` are what the pair metrics take: condensed
    distances with ``"precomputed"`` when they fit in memory, else the
    vectors with ``"cosine"`` (the metrics walk the pairs in blocks).
    ``distance_sample`` holds every pair's distance in the first case and a
    random sample in the second, whose indices are ``sample_pairs``.
    """

    name: str
    transformer: Any
    X: Any
    pairs: Any
    metric: str
    distance_sample: NDArray[np.float64]
    sample_pairs: tuple[NDArray[np.intp], NDArray[np.intp]] | None = None


@dataclass
class Settings:
    """The audit's options, the same for every study."""

    cv: int = 5
    random_state: int = 0
    n_jobs: int | None = None
    k_extreme: int = 1
    n_profile_pairs: int = 10_000
    n_paraphrase_samples: int = 100
    perturbations: tuple[str, ...] | None = None
    n_perturbation_essays: int = 200
    grammar: str | None = None
    sbert_model: str = "all-MiniLM-L6-v2"
    # SentenceBertEncoder's backend, and the torch device of every neural encoder
    # the audit makes (None: each library's default)
    sbert_backend: str = "torch"
    device: str | None = None
    # what the bow and tfidf representations count as letters: "ascii", "unicode"
    letters: str = "ascii"
    n_review: int = 20
    n_neighbors: int = 5
    # the EmbeddingCache every encoder the audit makes uses (text._cache.open_cache);
    # None: the encoders' own default, no cache
    cache: Any = None
    # audit(tune_interpreter=): may the audit change interpreter-wide settings
    # (SIGINT handler, sys.unraisablehook, GIL switch interval), restoring them
    tune_interpreter: bool = False
    # audit(sections=) / --sections: the ids of the sections to run and show
    # (report.analyses.section_ids()); None: all of them
    sections: tuple[str, ...] | None = None


@dataclass
class Study:
    """One prompt (or question) of the audit; see the module docstring.

    ``prompt`` is the prompt id as text (``"all"`` when the data has no
    prompt column); ``rows`` the data rows (from 1, header not counted) of
    its essays in the user's table, for messages. ``human`` is the resolved
    human score; with ``short_answer`` true, ``human`` and every system's
    scores are grades scaled to [0, 1] by ``score_range``.
    """

    prompt: str
    prompt_text: str | None
    essays: list[str]
    ids: NDArray[Any]
    rows: NDArray[np.intp]
    human: NDArray[np.float64]
    score_range: tuple[float, float]
    score_range_source: Literal["declared", "inferred"]
    settings: Settings
    raters: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    rater_cols: tuple[str, str] | None = None
    groups: NDArray[Any] | None = None
    paraphrases: list[str] | None = None
    paraphrase_source: str | None = None
    references: list[list[str]] | None = None
    short_answer: bool = False
    systems: dict[str, System] = field(default_factory=dict)
    spaces: dict[str, PairSpace] = field(default_factory=dict)
    features: NDArray[np.float64] | None = None
    feature_names: list[str] = field(default_factory=list)
    representations: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)

    @property
    def n(self) -> int:
        """The number of essays."""
        return len(self.essays)

    def scored(self, representation: str) -> dict[str, NDArray[np.float64]]:
        """Every system's scores under ``representation``, then the human scores as ``"human"``."""
        out = {
            name: s
            for name, system in self.systems.items()
            if (s := system.under(representation)) is not None
        }
        out["human"] = self.human
        return out
