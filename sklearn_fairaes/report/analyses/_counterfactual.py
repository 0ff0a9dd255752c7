"""The counterfactual audit: controlled edits of essays, re-scored by each system.

:func:`~sklearn_fairaes.perturb.perturbation_audit` edits a random sample of
the study's essays (typos, shuffled sentences, word salad, ...) and the
systems score the edits; a fair system keeps its score under
meaning-preserving edits and lowers it under damaging ones. Only a system
with a model can score an edited essay:

* a **trained** baseline is refitted as one pipeline (its representation
  and its regressor) on every essay but the sample, which is held out, as
  before the reshape: the out-of-fold scores of the other tables come from
  models that never saw the essays they score, and so do these;
* a **fitted** system (the user's estimator taking texts) is used as it is,
  never refitted, on the same sample;
* a **given** system (a column of scores) cannot score anything new and is
  left out, with a note; when no system can re-score, the section is absent.

Distances between an essay and its edit are measured in each
representation of the study, fitted on all its essays (the shared
:class:`~sklearn_fairaes.report._study.PairSpace`): a trained baseline under
its own representation, a fitted system under every one.

Tables: ``perturbation`` (``representation``, ``system``, then the summary
columns of :func:`~sklearn_fairaes.perturb.perturbation_audit`) and
``perturbation_examples`` (``representation``, ``perturbation``, ``id``,
``edit_preview``, ``note``: one edited essay per perturbation).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...exceptions import UndefinedMetricWarning
from ...perturb._audit import SUMMARY_COLUMNS
from ...resources import require
from .._cells import _mod, _num, _pct, _present, _rep, _table
from .._plots import _check_table, _short, model_label, representation_label
from ._base import AnalysisOutput, FigureContext, Heading, Section
from ._common import no_spaces_reason, noting, pair_notes

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure
    from numpy.typing import NDArray
    from pandas import DataFrame

    from .._study import Study, System

__all__ = ["ANALYSIS", "EXAMPLE_COLUMNS", "SCORES_ONLY"]

#: Why the section is absent when no system can score an edited essay.
SCORES_ONLY = (
    "scores only: no model to re-score the edited essays; give --model-file or train "
    "a baseline with --models"
)

#: Columns of the ``perturbation_examples`` table, in order.
EXAMPLE_COLUMNS = ("representation", "perturbation", "id", "edit_preview", "note")
#: perturbation_audit's summary, one block per (representation, system)
PERTURBATION_COLUMNS = ("representation", "system", *SUMMARY_COLUMNS)

# Short-answer grades lie in [0, 1] and are often continuous (Stita): no step
# of a score scale to take half of. Half of one of ASAG2024's ten grade ranges.
_GRADE_TOLERANCE = 0.05


def _takes_texts(system: System) -> bool:
    """Whether the system's estimator scores a list of texts (ours: not the grader)."""
    from ...short_answers import ReferenceSimilarityGrader

    est = system.estimator
    if isinstance(est, dict):
        est = next(iter(est.values()), None)
    # the reference-similarity grader reads a table of answers with their
    # references, and the edited answers reach a model as bare texts
    return est is not None and not isinstance(est, ReferenceSimilarityGrader)


def _can_rescore(system: System) -> bool:
    if system.kind == "fitted":
        return hasattr(system.estimator, "predict")
    return system.kind == "trained" and _takes_texts(system)


def held_out(n: int, want: int, random_state: int, trained: bool) -> NDArray[np.intp]:
    """The positions of the essays to re-score, sorted: ``want`` of ``n`` at most.

    With a trained baseline, at most a fifth of the essays (and at least 2)
    are held out, as before the reshape, so that its refit keeps most of
    them; fitted systems alone need no hold-out. The one draw of the essays
    that are edited or paraphrased and re-scored: the counterfactual and
    paraphrase sections, and the texts ``fairaes export-edits`` writes
    (``report._edits``), all come from it.
    """
    k = int(min(want, max(2, n // 5))) if trained else int(min(want, n))
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(n, size=k, replace=False))


def _sample(study: Study, trained: bool) -> NDArray[np.intp]:
    """The positions of the essays to edit (``held_out`` of the study's settings)."""
    settings = study.settings
    return held_out(study.n, settings.n_perturbation_essays, settings.random_state, trained)


def rescoring_pipelines(
    study: Study,
    rname: str,
    space: Any,
    able: Mapping[str, System],
    train: NDArray[np.intp],
    what: str,
    left_out: str = "edited",
) -> tuple[dict[str, Any], str | None]:
    """The models that re-score texts under ``rname``, and a note when a refit failed.

    A trained baseline is one pipeline (a clone of the representation and
    its regressor) refitted on the essays ``train``; a fitted system is its
    own estimator, its predictions checked by ``_scoring.predict_scores``
    (``what`` names the texts in messages, ``left_out`` what a baseline
    whose refit failed is not, in the note).
    """
    from sklearn.base import clone

    trained = [n for n, s in able.items() if s.kind == "trained"]
    fitted = [n for n, s in able.items() if s.kind == "fitted"]
    pipes: dict[str, Any] = {}
    failed: str | None = None
    mine = [n for n in trained if rname in able[n].scores]
    if mine:
        # one refit of the representation, shared by the baselines' pipelines
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            rep = clone(space.transformer)
            try:
                X_train = rep.fit_transform([study.essays[i] for i in train])
            except ValueError as exc:
                # a few held-in essays of a small prompt may leave a
                # vocabulary with min_df=3 empty: the report says so
                failed = (
                    f"{rname} could not be refitted on the {len(train)} held-in essays "
                    f"({exc}), so {_names(mine)} {'is' if len(mine) == 1 else 'are'} "
                    f"not {left_out} under it."
                )
                mine = []
        for n in mine:
            pipes[n] = _trained_pipeline(able[n], rname, rep, X_train, study.human[train])
    for n in fitted:
        pipes[n] = _Checked(n, able[n].estimator, what)
    return pipes, failed


def _trained_pipeline(
    system: System, rname: str, rep: Any, X_train: Any, y_train: NDArray[np.float64]
) -> Any:
    """The baseline's regressor refitted on the held-in vectors, behind ``rep``."""
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    model = system.estimator
    model = model[rname] if isinstance(model, dict) else model
    return Pipeline(
        [("representation", rep), ("model", clone(model).fit(X_train, y_train))]
    )


class _Checked:
    """A fitted system's model, its predictions checked as the essays' were.

    The user's model scores the edited essays here for the first time: what
    it raises, and scores that are not one finite number per text, are its
    failure (``predict_scores`` of ``report._scoring``, the check of the
    essays' scores), named as such, not an error of the audit.
    """

    def __init__(self, name: str, estimator: Any, what: str = "edited essays") -> None:
        self.name = name
        self.estimator = estimator
        self.what = what

    def predict(self, X: Any) -> NDArray[np.float64]:
        from .._scoring import predict_scores

        return predict_scores(self.name, self.estimator, X, what=self.what)


class _Counterfactual:
    """The ``counterfactual`` analysis; see the module docstring."""

    name = "counterfactual"

    def absent(self, study: Study) -> str | None:
        """Why the counterfactual audit cannot run on ``study``, or None when it can."""
        if study.settings.perturbations is None:
            return "no perturbations were requested (perturbations= / --perturbations)"
        if not any(_can_rescore(s) for s in study.systems.values()):
            return SCORES_ONLY
        if not study.spaces:
            return no_spaces_reason()
        if all(space.transformer is None for space in study.spaces.values()):
            return (
                "every representation is your own vectors (embeddings), which the "
                "edited essays do not have; add a built-in representation to measure "
                "how far each edit moves an essay"
            )
        return None

    def run(self, study: Study) -> AnalysisOutput:
        """The perturbation tables of one study.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.linear_model import Ridge
        >>> from sklearn.pipeline import make_pipeline
        >>> import sklearn_fairaes as sf
        >>> from sklearn_fairaes.report._study import PairSpace, Settings, Study, System
        >>> from sklearn_fairaes.report.analyses._counterfactual import ANALYSIS
        >>> demo = sf.load_demo_essays().iloc[:30]
        >>> essays, y = list(demo["essay"]), demo["score"].to_numpy(float)
        >>> engine = make_pipeline(sf.TfidfEssayVectorizer(), Ridge()).fit(essays, y)
        >>> tfidf = sf.TfidfEssayVectorizer().fit(essays)
        >>> X = tfidf.transform(essays)
        >>> study = Study(
        ...     prompt="all", prompt_text=None, essays=essays, ids=np.arange(1, 31),
        ...     rows=np.arange(1, 31), human=y, score_range=(1, 6),
        ...     score_range_source="declared",
        ...     settings=Settings(perturbations=("typos",), n_perturbation_essays=10),
        ...     systems={"engine": System("engine", "fitted",
        ...                               {None: engine.predict(essays)}, engine)},
        ...     spaces={"tfidf": PairSpace("tfidf", tfidf, X, X, "cosine",
        ...                                np.zeros(0))})
        >>> out = ANALYSIS.run(study)
        >>> out.tables["perturbation"][["representation", "system", "perturbation",
        ...                             "n_essays"]].values.tolist()
        [['tfidf', 'engine', 'typos', 10]]
        """
        from ...perturb import perturbation_audit

        pd = require("pandas", purpose="the audit")
        reason = self.absent(study)
        if reason is not None:
            raise ValueError(f"prompt {study.prompt!r}: {reason}")
        settings = study.settings
        names = list(settings.perturbations or ())
        able = {n: s for n, s in study.systems.items() if _can_rescore(s)}
        trained = [n for n, s in able.items() if s.kind == "trained"]
        fitted = [n for n, s in able.items() if s.kind == "fitted"]
        held = _sample(study, bool(trained))
        train = np.setdiff1d(np.arange(study.n), held)
        sample = [study.essays[i] for i in held]
        y = study.human
        if study.short_answer:
            scale: dict[str, Any] = {"tolerance": _GRADE_TOLERANCE}
        else:
            scale = {"score_scale": y}
        collected: dict[str, list[str]] = {}
        summaries: list[DataFrame] = []
        examples: list[dict[str, Any]] = []
        refit_failed: list[str] = []  # and the representations left out
        for rname, space in study.spaces.items():
            if space.transformer is None:
                # the user's vectors: an edited essay has none, so its distance
                # from the original (the edit's size) is unknown
                refit_failed.append(
                    f"Counterfactual edits: {rname} is your own vectors (embeddings), "
                    f"which the edited essays do not have, so it is left out."
                )
                continue
            pipes, failed = rescoring_pipelines(
                study, rname, space, able, train, "edited essays"
            )
            if failed is not None:
                refit_failed.append(f"Counterfactual edits: {failed}")
            if not pipes:
                continue
            with warnings.catch_warnings():
                # long-text truncation notes repeat on every predict call
                warnings.simplefilter("ignore", category=UserWarning)
                # return_details=True: a Bunch of the summary and the details
                res: Any = noting(
                    collected,
                    rname,
                    perturbation_audit,
                    pipes,
                    sample,
                    perturbations=names,
                    representation=space.transformer,
                    prompt=study.prompt_text,
                    random_state=settings.random_state,
                    return_details=True,
                    keep=UndefinedMetricWarning,
                    **scale,
                )
            summary = res.summary.rename(columns={"model": "system"})
            summaries.append(summary.assign(representation=rname))
            det = res.details
            det = det[det["model"] == next(iter(pipes))]
            for pname in names:
                rows = det[(det["perturbation"] == pname) & det["changed"]]
                if len(rows):
                    row = rows.iloc[0]
                    examples.append(
                        {
                            "representation": rname,
                            "perturbation": pname,
                            "id": study.ids[held[int(row["essay"])]],
                            "edit_preview": str(row["edit_preview"]),
                            "note": str(row["note"]),
                        }
                    )
        summary = (
            pd.concat(summaries, ignore_index=True)
            if summaries
            else pd.DataFrame(columns=list(PERTURBATION_COLUMNS))
        )
        rest = [c for c in summary.columns if c not in ("representation", "system")]
        notes = [self._sample_note(study, len(held), trained, fitted), *refit_failed]
        given = [n for n in study.systems if n not in able]
        if given:
            notes.append(
                f"Counterfactual edits: {_names(given)} "
                f"{'is' if len(given) == 1 else 'are'} left out: "
                + (
                    "scores only, no model to re-score the edited essays."
                    if all(study.systems[n].kind == "given" for n in given)
                    else "no model that scores bare texts (scores only, or the "
                    "reference-similarity grader, which needs each answer's references)."
                )
            )
        if study.short_answer:
            notes.append(
                f"Counterfactual edits: a grade that moves by more than "
                f"{_GRADE_TOLERANCE:g} on the [0, 1] scale counts as a change."
            )
        notes += pair_notes(collected, "Counterfactual edits")
        return AnalysisOutput(
            tables={
                "perturbation": summary[["representation", "system", *rest]],
                "perturbation_examples": pd.DataFrame(
                    examples, columns=list(EXAMPLE_COLUMNS)
                ),
            },
            notes=notes,
        )

    @staticmethod
    def _sample_note(study: Study, k: int, trained: list[str], fitted: list[str]) -> str:
        parts = []
        if trained:
            parts.append(
                f"{k} essays held out at random, {_names(trained)} refitted on the "
                f"other {study.n - k}"
            )
        else:
            parts.append(f"{k} essays drawn at random")
        if fitted:
            parts.append(
                f"{_names(fitted)} scored as {'it is' if len(fitted) == 1 else 'they are'} "
                f"(never refitted)"
            )
        return "Counterfactual edits: " + "; ".join(parts) + "."


def _names(names: list[str]) -> str:
    """``'a'``, ``'a' and 'b'``, ``'a', 'b' and 'c'``."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


#: The counterfactual audit, as the audit runs it.
ANALYSIS = _Counterfactual()


# --------------------------------------------------------------------------- view


def view(
    tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any], prompt: str
) -> dict[str, Any]:
    """The counterfactual edits' summary and examples as the template shows them."""
    out: dict[str, Any] = {"table": None, "examples": None, "tolerance": None}
    if not _present(tables, "perturbation"):
        return out
    table = tables["perturbation"]
    _check_table(
        table,
        "perturbation",
        [
            "representation", "system", "perturbation", "family", "expected", "n_changed",
            "share_expected", "mean_change", "share_beyond_tolerance", "mean_distance",
            "share_zero_distance", "lipschitz_max", "tolerance",
        ],
    )  # fmt: skip
    expected = {"stay": "stay", "drop": "drop", "change": "move"}
    tol = table["tolerance"].dropna()
    tol_text = f"{float(tol.iloc[0]):g} score points" if len(tol) else "the tolerance"
    out["table"] = _table(
        [
            "Representation",
            "System",
            "Edit",
            "Expected",
            "Essays edited",
            "% as expected",
            "Mean change",
            f"% beyond ±{tol_text}",
            "Mean distance",
            "% at distance 0",
            "% Lipschitz (max)",
        ],
        [
            [
                _rep(r["representation"]),
                _mod(r["system"]),
                r["perturbation"],
                expected.get(str(r["expected"]), str(r["expected"])),
                _num(r["n_changed"]),
                _pct(r["share_expected"]),
                _num(r["mean_change"]),
                _pct(r["share_beyond_tolerance"]),
                _num(r["mean_distance"]),
                _pct(r["share_zero_distance"]),
                _pct(r["lipschitz_max"]),
            ]
            for r in table.to_dict("records")
        ],
        caption="Score changes under controlled edits (changed essays only)",
    )
    if _present(tables, "perturbation_examples"):
        ex = tables["perturbation_examples"]
        _check_table(
            ex,
            "perturbation_examples",
            ["representation", "perturbation", "id", "edit_preview"],
        )
        first = ex.drop_duplicates("perturbation")
        out["examples"] = _table(
            ["Edit", "Essay id", "What changed (first edits)"],
            [
                [r["perturbation"], r["id"], _short(r["edit_preview"], 160)]
                for r in first.to_dict("records")
            ],
            caption="One example of each edit",
        )
    return out


def figures(tables: Mapping[str, pd.DataFrame], ctx: FigureContext) -> dict[str, Figure]:
    """How the scores moved under each edit, one row of panels per system."""
    if not _present(tables, "perturbation"):
        return {}
    from ...perturb import plot_perturbation_audit

    table = tables["perturbation"]
    # one row of panels per representation x system
    labelled = table.drop(
        columns=[c for c in ("prompt", "representation", "system") if c in table]
    ).assign(
        model=[
            f"{representation_label(r)} + {model_label(m)}"
            for r, m in zip(
                table["representation"].astype(str), table["system"].astype(str)
            )
        ]
    )
    return {
        "perturbation": plot_perturbation_audit(
            labelled, title="Counterfactual edits: how scores moved"
        )
    }


SECTION = Section(
    "counterfactual",
    (Heading("counterfactual", "Counterfactual edits", ("perturbation",)),),
    analysis=ANALYSIS,
    view=view,
    schema={
        "perturbation": PERTURBATION_COLUMNS,
        "perturbation_examples": EXAMPLE_COLUMNS,
    },
    figures=figures,
    figure_names=("perturbation",),
    optional=True,
    default_reason=(
        "no perturbations were requested (perturbations=..., or --perturbations "
        "default on the command line)"
    ),
)
