"""Does each system keep an essay's score when the essay is paraphrased?

The paraphrase section's second half (issue 34): beside the representations'
ranking NDCG, every system that can score a text re-scores the paraphrases
of a random sample of essays -- a trained baseline refitted on the other
essays (as in the counterfactual section), a fitted model or a scorer you
call as it is, through the one check of model calls
(``_scoring.predict_scores``). An essay and its paraphrase say the same
thing, so a fair system gives them the same score.

The sample is :func:`~sklearn_fairaes.report.analyses._counterfactual.held_out`
of ``n_paraphrase_samples`` essays (at most a fifth with a trained baseline);
only the essays whose paraphrase differs from them count (a paraphraser may
leave an essay as it was). A change counts when it is larger than the
tolerance: half the smallest step of the human score scale, as in the
counterfactual section.

Tables: ``paraphrase_scores``, one row per (representation, system):
``representation`` (``""`` for a system whose scores do not depend on one),
``system``, ``n_essays`` (sampled), ``n_paraphrased`` (those whose
paraphrase differs), ``mean_abs_change`` with its bootstrap interval
(``mean_abs_change_ci_low``, ``mean_abs_change_ci_high``; NaN without
``n_bootstrap``), ``mean_change`` (paraphrase minus original),
``share_changed`` (``|change| > tolerance``), ``max_abs_change`` and
``tolerance``; ``paraphrase_essays``, one row per (representation, system,
sampled essay): ``id``, ``paraphrased``, ``score_original``,
``score_paraphrase`` and ``change``.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ...resources import require

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .._study import Study

__all__ = ["ESSAY_COLUMNS", "SCORE_COLUMNS", "paraphrase_sample", "score_change"]

SCORE_COLUMNS = (
    "representation", "system", "n_essays", "n_paraphrased", "mean_abs_change",
    "mean_abs_change_ci_low", "mean_abs_change_ci_high", "mean_change", "share_changed",
    "max_abs_change", "tolerance",
)  # fmt: skip
ESSAY_COLUMNS = (
    "representation", "system", "id", "paraphrased", "score_original",
    "score_paraphrase", "change",
)  # fmt: skip


#: The texts' name in the messages of a model that fails on them.
WHAT = "paraphrased essays"


def paraphrase_sample(n: int, settings: Any, trained: bool) -> NDArray[np.intp]:
    """The positions of the essays whose paraphrases are re-scored, sorted.

    The one draw that the section and ``fairaes export-edits`` share.
    """
    from ._counterfactual import held_out

    return held_out(n, settings.n_paraphrase_samples, settings.random_state, trained)


def _tolerance(human: NDArray[np.float64]) -> float:
    from ...perturb._audit import _resolve_tolerance

    try:
        return _resolve_tolerance("auto", human, None)[0]
    except ValueError:  # a continuous scale has no step: any change counts
        return 0.0


def score_change(study: Study) -> tuple[dict[str, Any], list[str], dict[Any, Any]]:
    """The two tables, the notes and the bootstrap replicates of one study.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.pipeline import make_pipeline
    >>> import sklearn_fairaes as sf
    >>> from sklearn_fairaes.report._study import Settings, Study, System
    >>> demo = sf.load_demo_essays().iloc[:30]
    >>> essays, y = list(demo["essay"]), demo["score"].to_numpy(float)
    >>> engine = make_pipeline(sf.TfidfEssayVectorizer(), Ridge()).fit(essays, y)
    >>> study = Study(
    ...     prompt="all", prompt_text=None, essays=essays, ids=np.arange(1, 31),
    ...     rows=np.arange(1, 31), human=y, score_range=(0, 12),
    ...     score_range_source="declared", settings=Settings(n_paraphrase_samples=10),
    ...     paraphrases=[e.upper() for e in essays], paraphrase_source="given",
    ...     systems={"engine": System("engine", "fitted",
    ...                               {None: engine.predict(essays)}, engine)})
    >>> tables, notes, _ = score_change(study)
    >>> tables["paraphrase_scores"][["system", "n_essays", "n_paraphrased"]].values.tolist()
    [['engine', 10, 10]]
    """
    from ...metrics._bootstrap import bootstrap_interval
    from .._inputs import short
    from .._scoring import predict_scores
    from ._counterfactual import _can_rescore, _names, rescoring_pipelines

    pd = require("pandas", purpose="the audit")
    empty = {
        "paraphrase_scores": pd.DataFrame(columns=list(SCORE_COLUMNS)),
        "paraphrase_essays": pd.DataFrame(columns=list(ESSAY_COLUMNS)),
    }
    notes: list[str] = []
    able = {n: s for n, s in study.systems.items() if _can_rescore(s)}
    left = [n for n in study.systems if n not in able]
    if left:
        notes.append(
            f"Score change under paraphrase: {_names(left)} "
            f"{'is' if len(left) == 1 else 'are'} left out: scores only (or a model "
            f"that does not score bare texts), which cannot score the paraphrases."
        )
    if study.paraphrases is None or not able:
        return empty, notes, {}
    if study.short_answer:
        notes.append(
            "Score change under paraphrase: not computed for short answers (the "
            "grades are scaled to [0, 1], the systems' scores of new texts are not)."
        )
        return empty, notes, {}
    settings = study.settings
    trained = [n for n, s in able.items() if s.kind == "trained"]
    held = paraphrase_sample(study.n, settings, bool(trained))
    train = np.setdiff1d(np.arange(study.n), held)
    originals = [study.essays[i] for i in held]
    paraphrases = [study.paraphrases[i] for i in held]
    differs = np.array([p != o for p, o in zip(paraphrases, originals)], dtype=bool)
    changed = [p for p, d in zip(paraphrases, differs) if d]
    tol = _tolerance(study.human)
    weights = study.bootstrap_weights()
    level = float(settings.confidence_level)
    rows: list[dict[str, Any]] = []
    essays: list[Any] = []
    replicates: dict[Any, Any] = {}
    # a fitted system's scores do not depend on the representation: its
    # paraphrases are scored once, under "", beside its scores of the essays;
    # a trained baseline is refitted, and scores both, under each representation
    fitted = [n for n, s in able.items() if s.kind == "fitted"]
    ids = study.ids[held][differs]
    jobs: list[tuple[str, str, Any]] = [("", n, None) for n in fitted]
    for rname, space in study.spaces.items():
        mine = {n: s for n, s in able.items() if s.kind == "trained" and rname in s.scores}
        if not mine or space.transformer is None:
            continue  # the user's vectors: no representation to refit
        pipes, failed = rescoring_pipelines(
            study, rname, space, mine, train, WHAT, left_out="re-scored on paraphrases"
        )
        if failed is not None:
            notes.append(f"Score change under paraphrase: {failed}")
        jobs += [(rname, n, pipe) for n, pipe in pipes.items()]
    for rep, name, pipe in jobs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            if pipe is None:
                system = able[name]
                y0 = np.asarray(system.scores[None], dtype=float)[held]
                y1 = y0.copy()
                if changed:
                    y1[differs] = predict_scores(
                        name,
                        system.estimator,
                        changed,
                        what=WHAT,
                        where=lambda i: f"the paraphrase of essay {short(ids[i])}",
                    )
            else:
                y0 = np.asarray(pipe.predict(originals), dtype=float)
                y1 = y0.copy()
                if changed:
                    y1[differs] = pipe.predict(changed)
        change = y1 - y0
        c = change[differs]
        row: dict[str, Any] = {
            "representation": rep,
            "system": name,
            "n_essays": len(held),
            "n_paraphrased": int(differs.sum()),
            "tolerance": tol,
        }
        if c.size:
            low = high = float("nan")
            if weights is not None:
                w = weights[:, held][:, differs]
                total = w.sum(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    reps = (w @ np.abs(c)) / total
                replicates[("paraphrase_scores", rep, name, "mean_abs_change")] = reps
                low, high = bootstrap_interval(reps, level)
            row.update(
                mean_abs_change=float(np.mean(np.abs(c))),
                mean_abs_change_ci_low=low,
                mean_abs_change_ci_high=high,
                mean_change=float(np.mean(c)),
                share_changed=float(np.mean(np.abs(c) > tol)),
                max_abs_change=float(np.max(np.abs(c))),
            )
        rows.append(row)
        essays.append(
            pd.DataFrame(
                {
                    "representation": rep,
                    "system": name,
                    "id": study.ids[held],
                    "paraphrased": differs,
                    "score_original": y0,
                    "score_paraphrase": y1,
                    "change": change,
                },
                columns=list(ESSAY_COLUMNS),
            )
        )
    if not rows:
        return empty, notes, {}
    if not differs.any():
        notes.append(
            f"Score change under paraphrase: none of the {len(held)} sampled essays was "
            f"changed by its paraphrase, so there is no change to measure."
        )
    notes.append(
        f"Score change under paraphrase: {len(held)} essays drawn at random"
        + (f", {_names(trained)} refitted on the other {len(train)}" if trained else "")
        + f"; a change beyond {tol:g} score points counts as a change."
    )
    return (
        {
            "paraphrase_scores": pd.DataFrame(rows, columns=list(SCORE_COLUMNS)),
            "paraphrase_essays": pd.concat(essays, ignore_index=True),
        },
        notes,
        replicates,
    )
