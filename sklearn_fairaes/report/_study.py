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

from ._config import AuditConfig

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

    ``pairs`` and ``metric`` are what the pair metrics take as ``X`` and
    ``metric``: one pair engine (``sklearn_fairaes.metrics._pairs``) built
    once, over condensed distances with ``"precomputed"`` when they fit in
    memory, else over the vectors with ``"cosine"`` (the metrics walk the
    pairs in blocks), so that every analysis shares its distance range.
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


#: The audit's options, the same for every study (declared in ``report._config``)
Settings = AuditConfig


@dataclass
class Study:
    """One prompt (or question) of the audit; see the module docstring.

    ``prompt`` is the prompt id as text (``"all"`` when the data has no
    prompt column); ``rows`` the data rows (from 1, header not counted) of
    its essays in the user's table, for messages. ``human`` is the resolved
    human score; with ``short_answer`` true, ``human`` and every system's
    scores are grades scaled to [0, 1] by ``score_range``. ``score_step``
    is audit()'s: None for integer score points, a number for a grid of
    ``low + k * score_step``, or ``"continuous"``. ``groupings``
    maps each grouping of the group view (a group column, a binned numeric
    column, an intersection) to the essays' labels; ``groups``, one array of
    labels, is the same for a study with a single grouping built by hand
    (see :meth:`grouping_labels`). ``covariates`` holds the user's numeric columns
    (``covariate_cols``) by name. ``skipped`` says which shared inputs the
    user chose to skip (``"features"``, ``"paraphrases"``) and why, for the
    sections that need them. ``repeats`` maps each scorer you call to its
    ``(n, K)`` scores with ``repeats=K >= 2`` (column 0 its system's
    scores; see ``report._repeats``), else is empty. A space whose ``transformer`` is None holds the
    user's own vectors (``embeddings``): it cannot embed new texts.
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
    groupings: dict[str, NDArray[Any]] | None = None
    covariates: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    paraphrases: list[str] | None = None
    paraphrase_source: str | None = None
    references: list[list[str]] | None = None
    short_answer: bool = False
    score_step: float | str | None = None
    systems: dict[str, System] = field(default_factory=dict)
    spaces: dict[str, PairSpace] = field(default_factory=dict)
    features: NDArray[np.float64] | None = None
    feature_names: list[str] = field(default_factory=list)
    representations: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    repeats: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    _weights: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)

    @property
    def n(self) -> int:
        """The number of essays."""
        return len(self.essays)

    def bootstrap_weights(self) -> NDArray[np.float64] | None:
        """The study's bootstrap replicates as essay multiplicities, or None.

        ``(n_bootstrap, n)`` from :func:`~sklearn_fairaes.metrics._bootstrap.replicate_weights`
        with the audit's seed, this prompt as the stream and the essays' ids;
        None when ``settings.n_bootstrap`` is 0. Drawn once per study, so that
        every section's intervals come from the same replicates (and the
        differences between systems are paired).
        """
        n_bootstrap = int(getattr(self.settings, "n_bootstrap", 0) or 0)
        if n_bootstrap == 0:
            return None
        if self._weights is None or self._weights.shape[0] != n_bootstrap:
            from ..metrics._bootstrap import replicate_weights

            self._weights = replicate_weights(
                self.ids, n_bootstrap, int(self.settings.random_state), stream=self.prompt
            )
        return self._weights

    def grouping_labels(self) -> dict[str, NDArray[Any]]:
        """Every grouping of the essays: name -> one label per essay.

        ``groupings`` (what the audit builds: group columns, bins and
        intersections); else ``groups`` as one grouping named ``"group"``
        (a study built by hand); else nothing.
        """
        if self.groupings:
            return dict(self.groupings)
        if self.groups is not None:
            return {"group": self.groups}
        return {}

    def scored(self, representation: str) -> dict[str, NDArray[np.float64]]:
        """Every system's scores under ``representation``, then the human scores as ``"human"``."""
        out = {
            name: s
            for name, system in self.systems.items()
            if (s := system.under(representation)) is not None
        }
        out["human"] = self.human
        return out
