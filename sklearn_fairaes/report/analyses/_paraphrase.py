"""Does each representation's similarity ranking survive paraphrasing?

The paper's §5.2, on one study (one prompt): the essays' paraphrases are
vectorised with each representation as fitted on the essays, and
:func:`~sklearn_fairaes.metrics.paraphrase_ndcg` compares, for a random
sample of ``n_paraphrase_samples`` essays, the ranking of the other essays
by similarity to the original with the ranking of the paraphrases by
similarity to its paraphrase. Table ``"paraphrase"``: one row per
representation with the mean and SD of NDCG, NDCG@10 and Spearman's rho,
the number of sampled essays and where the paraphrases came from. Beside
it, each system that can score a text re-scores paraphrased essays: the
tables ``"paraphrase_scores"`` and ``"paraphrase_essays"`` (see
``_paraphrase_scores``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ...resources import require
from .._cells import _mean_sd, _mod, _num, _num_ci, _pct, _present, _rep, _table
from .._plots import _check_table
from ._base import AnalysisOutput, Heading, Section
from ._common import dense, no_spaces_reason
from ._paraphrase_scores import ESSAY_COLUMNS, SCORE_COLUMNS, score_change

if TYPE_CHECKING:
    import pandas as pd

    from .._study import Study

__all__ = ["ANALYSIS", "ParaphraseAnalysis"]

PARAPHRASE_COLUMNS = [
    "representation", "ndcg", "ndcg_std", "ndcg_at_10", "ndcg_at_10_std", "spearman",
    "spearman_std", "n_samples", "source",
]  # fmt: skip


class ParaphraseAnalysis:
    """Paraphrase robustness of every representation; see the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.feature_extraction.text import CountVectorizer
    >>> from sklearn_fairaes.report._study import PairSpace, Settings, Study
    >>> essays = ["the cat sat", "a dog ran far", "the cat ran", "dogs sat down"]
    >>> rep = CountVectorizer().fit(essays)
    >>> X = rep.transform(essays)
    >>> study = Study(
    ...     prompt="all", prompt_text=None, essays=essays, ids=np.arange(1, 5),
    ...     rows=np.arange(1, 5), human=np.array([1.0, 2, 1, 2]), score_range=(1.0, 2.0),
    ...     score_range_source="inferred", settings=Settings(),
    ...     paraphrases=["the cat sat", "a dog ran far", "the cat ran", "dogs sat down"],
    ...     paraphrase_source="given",
    ...     spaces={"bow": PairSpace("bow", rep, X, X, "cosine", np.zeros(6))},
    ... )
    >>> row = ANALYSIS.run(study).tables["paraphrase"].iloc[0]
    >>> float(row["ndcg"]), int(row["n_samples"]), row["source"]
    (1.0, 4, 'given')
    """

    name = "paraphrase"

    def absent(self, study: Study) -> str | None:
        """Say why the analysis cannot run on ``study`` (no paraphrases), else None.

        Parameters
        ----------
        study : Study
            One prompt's essays, systems and pair spaces.

        Returns
        -------
        reason : str or None
            A sentence for the report, or None when the analysis can run.
        """
        if study.paraphrases is None and "paraphrases" in study.skipped:
            return f"the paraphrases were {study.skipped['paraphrases']}"
        if study.paraphrases is None:
            return (
                "no paraphrases: none were given (paraphrases=<column>, --paraphrase-col "
                "on the command line) and no offline paraphraser could make them (the "
                "WordNet paraphraser needs nltk with its WordNet data; the notes say what "
                "failed)"
            )
        if not study.spaces:
            return no_spaces_reason()
        if all(space.transformer is None for space in study.spaces.values()):
            return (
                "every representation is your own vectors (embeddings), which the "
                "paraphrases do not have; add a built-in representation to rank them"
            )
        return None

    def run(self, study: Study) -> AnalysisOutput:
        """Compute the ``"paraphrase"`` table on one study.

        Parameters
        ----------
        study : Study
            One prompt's essays, systems and pair spaces.

        Returns
        -------
        output : AnalysisOutput
            The tables (no ``prompt`` column), notes and warnings.
        """
        from ...metrics import paraphrase_ndcg

        pd = require("pandas", purpose="the audit")
        if study.paraphrases is None:
            raise ValueError(
                f"prompt {study.prompt!r}: the paraphrase analysis needs the study's "
                f"paraphrases; check ANALYSIS.absent(study) first"
            )
        if len(study.paraphrases) != study.n:
            raise ValueError(
                f"prompt {study.prompt!r}: {len(study.paraphrases)} paraphrases for "
                f"{study.n} essays; give one paraphrase per essay"
            )
        settings = study.settings
        rows: list[tuple[Any, ...]] = []
        notes: list[str] = []
        for rname, space in study.spaces.items():
            if space.transformer is None:
                notes.append(
                    f"Paraphrase robustness: {rname} is your own vectors (embeddings), "
                    f"which the paraphrases do not have, so it is left out."
                )
                continue
            Xp = space.transformer.transform(study.paraphrases)
            Xp = Xp.to_numpy() if hasattr(Xp, "to_numpy") else Xp
            with warnings.catch_warnings():
                # long-text truncation and tie notes of the ranking: not about fairness
                warnings.simplefilter("ignore", category=UserWarning)
                # return_details=True: the scores with their spread and sample
                det = cast(
                    Mapping[str, Any],
                    paraphrase_ndcg(
                        dense(space.X),
                        dense(Xp),
                        n_samples=min(settings.n_paraphrase_samples, study.n),
                        return_details=True,
                        random_state=settings.random_state,
                    ),
                )
            rows.append(
                (
                    rname,
                    det["ndcg"],
                    det["ndcg_std"],
                    det["ndcg_at_10"],
                    det["ndcg_at_10_std"],
                    det["spearman"],
                    det["spearman_std"],
                    len(det["sample_indices"]),
                    study.paraphrase_source,
                )
            )
        # the systems' score change under paraphrase, beside the rankings
        scores, more, replicates = score_change(study)
        return AnalysisOutput(
            tables={"paraphrase": pd.DataFrame(rows, columns=PARAPHRASE_COLUMNS), **scores},
            notes=notes + more,
            replicates=replicates,
        )


ANALYSIS = ParaphraseAnalysis()


# --------------------------------------------------------------------------- view


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The paraphrase rankings' NDCG per representation, and the systems' score change."""
    if not _present(tables, "paraphrase"):
        # the analysis did not run on this prompt: neither half has rows
        return {
            "table": None,
            "source": meta.get("paraphrase_source"),
            "scores": None,
            "worst": None,
            "not_rescored": [],
        }
    scores = _score_view(tables, meta)
    table = tables["paraphrase"]
    _check_table(
        table,
        "paraphrase",
        [
            "representation", "ndcg", "ndcg_std", "ndcg_at_10", "ndcg_at_10_std", "spearman",
            "spearman_std", "n_samples", "source",
        ],
    )  # fmt: skip
    rows = [
        [
            _rep(p["representation"]),
            _mean_sd(p["ndcg_at_10"], p["ndcg_at_10_std"]),
            _mean_sd(p["spearman"], p["spearman_std"]),
            _mean_sd(p["ndcg"], p["ndcg_std"]),
            _num(p["n_samples"]),
            p["source"],
        ]
        for p in table.to_dict("records")
    ]
    return {
        "table": _table(
            [
                "Representation",
                "NDCG@10 (mean ± SD)",
                "Spearman's rho (mean ± SD)",
                "NDCG, full list (mean ± SD)",
                "Essays sampled",
                "Paraphrases from",
            ],
            rows,
            caption="Similarity ranking of originals vs. paraphrases",
        ),
        "source": meta.get("paraphrase_source"),
        **scores,
    }


#: The essays whose score moved most under paraphrase, listed for review.
N_WORST = 10


def _score_view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]
) -> dict[str, Any]:
    """The systems' score change under paraphrase, the worst essays, and who was left out."""
    given = [
        name
        for name, s in (meta.get("systems") or {}).items()
        if isinstance(s, dict) and s.get("kind") == "given"
    ]
    out: dict[str, Any] = {"scores": None, "worst": None, "not_rescored": given}
    if not _present(tables, "paraphrase_scores"):
        return out
    table = tables["paraphrase_scores"]
    _check_table(table, "paraphrase_scores", list(SCORE_COLUMNS))
    out["scores"] = _table(
        [
            "Representation",
            "System",
            "Essays sampled",
            "Paraphrase differs",
            "Mean |change| [CI]",
            "Mean change",
            "% changed",
            "Largest |change|",
        ],
        [
            [
                _rep(r["representation"]) if r["representation"] else "",
                _mod(r["system"]),
                _num(r["n_essays"]),
                _num(r["n_paraphrased"]),
                _num_ci(
                    r["mean_abs_change"],
                    r["mean_abs_change_ci_low"],
                    r["mean_abs_change_ci_high"],
                ),
                _num(r["mean_change"]),
                _pct(r["share_changed"]),
                _num(r["max_abs_change"]),
            ]
            for r in table.to_dict("records")
        ],
        caption="Score change when an essay is paraphrased (paraphrased essays only)",
    )
    if _present(tables, "paraphrase_essays"):
        ess = tables["paraphrase_essays"]
        _check_table(ess, "paraphrase_essays", list(ESSAY_COLUMNS))
        moved = ess[ess["paraphrased"].astype(bool)]
        worst = moved.assign(size=moved["change"].abs()).sort_values(
            "size", ascending=False, kind="stable"
        )
        worst = worst[worst["size"] > 0].head(N_WORST)
        if len(worst):
            out["worst"] = _table(
                [
                    "System",
                    "Representation",
                    "Essay id",
                    "Original",
                    "Paraphrase",
                    "Change",
                ],
                [
                    [
                        _mod(r["system"]),
                        _rep(r["representation"]) if r["representation"] else "",
                        r["id"],
                        _num(r["score_original"]),
                        _num(r["score_paraphrase"]),
                        _num(r["change"]),
                    ]
                    for r in worst.to_dict("records")
                ],
                caption="Essays to review: the largest score changes under paraphrase",
            )
    return out


SECTION = Section(
    "paraphrase",
    (Heading("paraphrase", "Paraphrase robustness", ("paraphrase",)),),
    analysis=ANALYSIS,
    view=view,
    schema={
        "paraphrase": tuple(PARAPHRASE_COLUMNS),
        "paraphrase_scores": SCORE_COLUMNS,
        "paraphrase_essays": ESSAY_COLUMNS,
    },
)
