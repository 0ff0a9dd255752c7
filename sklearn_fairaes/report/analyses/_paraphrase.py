"""Does each representation's similarity ranking survive paraphrasing?

The paper's §5.2, on one study (one prompt): the essays' paraphrases are
vectorised with each representation as fitted on the essays, and
:func:`~sklearn_fairaes.metrics.paraphrase_ndcg` compares, for a random
sample of ``n_paraphrase_samples`` essays, the ranking of the other essays
by similarity to the original with the ranking of the paraphrases by
similarity to its paraphrase. Table ``"paraphrase"``: one row per
representation with the mean and SD of NDCG, NDCG@10 and Spearman's rho,
the number of sampled essays and where the paraphrases came from.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ...resources import require
from .._cells import _mean_sd, _num, _present, _rep, _table
from .._plots import _check_table
from ._base import AnalysisOutput, Heading, Section
from ._common import dense, no_spaces_reason

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
        return AnalysisOutput(
            tables={"paraphrase": pd.DataFrame(rows, columns=PARAPHRASE_COLUMNS)},
            notes=notes,
        )


ANALYSIS = ParaphraseAnalysis()


# --------------------------------------------------------------------------- view


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The paraphrase rankings' NDCG and Spearman's rho per representation."""
    if not _present(tables, "paraphrase"):
        return {"table": None, "source": meta.get("paraphrase_source")}
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
    }


SECTION = Section(
    "paraphrase",
    (Heading("paraphrase", "Paraphrase robustness", ("paraphrase",)),),
    analysis=ANALYSIS,
    view=view,
    schema={"paraphrase": tuple(PARAPHRASE_COLUMNS)},
)
