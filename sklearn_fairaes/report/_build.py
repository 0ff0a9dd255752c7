"""The audit's first two steps: check every input, then build one study per prompt.

:func:`plan_audit` checks everything :func:`~sklearn_fairaes.report.audit`
was given, for every prompt, and computes nothing: a bad cell of the last
prompt is refused before the first prompt's features run. What it returns
(:class:`Plan`) holds the inputs resolved (columns read, names made into
estimators, scales declared or inferred per prompt).

:func:`build_studies` then does the computation every analysis shares, in
the order that surfaces the remaining input errors first: the user's fitted
models score the essays (a model that fails or predicts the wrong number of
scores stops the audit before anything else runs), every prompt's
representations are fitted on that prompt's essays (one that keeps no word
stops it too), and only then come the interpretable features, the
paraphrases, the out-of-fold predictions of the trained baselines and the
pair distances, one :class:`~sklearn_fairaes.report._study.Study` per prompt.
"""

from __future__ import annotations

import re
import sys
import threading
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..resources import require
from ._embeddings import GivenEmbeddings, read_embeddings
from ._encoding import start_encoding
from ._groupings import Groupings, plan_groupings, split_group_cols
from ._inputs import (
    MIN_ESSAYS,
    AuditInputError,
    _check_grammar,
    _check_integer_scale,
    _check_names,
    _check_neural_models,
    _check_paraphrases_given,
    _check_perturbations,
    _check_text_not_numeric,
    _chosen_features,
    _covariates,
    _declared,
    _given,
    _ids,
    _names,
    _numeric,
    _prompts,
    _raters,
    _references,
    _same,
    _scales,
    _texts,
    _Where,
    check_on_step,
    check_score_step,
    check_step_scales,
    column,
    short,
)
from ._per_essay import start_per_essay, wait_per_essay
from ._repeats import attach_repeats, score_repeats
from ._scorers import probe_scorers
from ._scoring import predict_scores
from ._study import PairSpace, Settings, Study, System

if TYPE_CHECKING:
    from concurrent.futures import Future


REPRESENTATION_NAMES = ("bow", "tfidf", "sbert", "laser")
#: Why the features or the paraphrases are missing when the user skipped them.
FEATURES_SKIPPED = "skipped on request: features=False (--no-features)"
PARAPHRASES_SKIPPED = "skipped on request: paraphrases=False (--no-paraphrases)"
MODEL_NAMES = ("ridge", "random_forest", "gradient_boosting")
# The trained baseline of short answers (its scores come from the reference
# answers, not from a representation's vectors).
REFERENCE_MODEL = "reference_similarity"
# Above this many essays the pair distances are not held in memory: every pair
# metric walks the pairs in blocks, and the distribution plots use a sample.
MAX_CONDENSED = 6000
DIST_SAMPLE = 1_000_000


# -- names -> estimators --------------------------------------------------------


def make_representation(
    name: str,
    *,
    sbert_model: str,
    cache: Any = None,
    sbert_backend: str = "torch",
    device: str | None = None,
    letters: str = "ascii",
) -> Any:
    """The unfitted transformer of a representation name.

    ``cache`` (an EmbeddingCache, the audit's) goes to the neural encoders, so a
    re-run of the same audit reads their vectors instead of encoding again;
    None keeps their default (no cache).
    ``sbert_backend`` is the ``backend`` of the Sentence-BERT encoder and
    ``device`` the torch device of both neural encoders (Sentence-BERT, LASER).
    ``letters`` is what the vocabulary representations (bow, tfidf) count as
    letters: ``"ascii"`` (the paper's A-Z) or ``"unicode"`` (every script).
    """
    from .. import text

    neural: dict[str, Any] = {"device": device}
    if cache is not None:
        neural["cache"] = cache
    if name == "bow":
        return text.BowVectorizer(letters=letters)
    if name == "tfidf":
        return text.TfidfEssayVectorizer(letters=letters)
    if name == "sbert":
        return text.SentenceBertEncoder(sbert_model, backend=sbert_backend, **neural)
    if name == "laser":
        return text.LaserEncoder(**neural)
    raise AuditInputError(
        f"unknown representation {name!r}; choose from {sorted(REPRESENTATION_NAMES)} or "
        f"pass a dict name -> transformer"
    )


def make_model(name: str, *, random_state: int | None, n_jobs: int | None) -> Any:
    """The unfitted regressor of a baseline model name."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import Ridge

    if name == "ridge":
        return Ridge(alpha=1.0)
    if name == "random_forest":
        # sqrt features per split: the paper's default (all features) takes
        # minutes per fit on 15,000 n-gram columns; replicate_asap7.py uses it.
        return RandomForestRegressor(
            n_estimators=100, max_features="sqrt", random_state=random_state, n_jobs=n_jobs
        )
    if name == "gradient_boosting":
        # sklearn's exact-split boosting: no OpenMP (the histogram variant spins
        # its threads against joblib's on small machines) and sparse input as is;
        # sqrt features per split and row subsampling, like the paper's XGBoost
        # column/row sampling, keep it fast on 15,000 n-gram columns.
        return GradientBoostingRegressor(
            n_estimators=200,
            learning_rate=0.05,
            max_depth=3,
            subsample=0.8,
            max_features="sqrt",
            random_state=random_state,
        )
    if name == REFERENCE_MODEL:
        # built per study by make_reference_baseline (one grader per representation)
        return REFERENCE_MODEL
    raise AuditInputError(
        f"unknown model {name!r}; choose from {sorted(MODEL_NAMES)} (and "
        f"{REFERENCE_MODEL!r} for short answers with reference_col) or pass a dict "
        f"name -> regressor"
    )


def named(
    objs: Mapping[str, Any] | str | Iterable[str],
    factory: Callable[..., Any],
    kind: str,
    *,
    allow_empty: bool = False,
    **kw: Any,
) -> dict[str, Any]:
    """Names (a list or one comma-separated string) or a dict name -> object, as a dict.

    A dict value that is a name (``{"ridge": "ridge"}``) is made by ``factory``.
    """
    if isinstance(objs, Mapping):
        out = {k: factory(v, **kw) if isinstance(v, str) else v for k, v in objs.items()}
    else:
        out = {n: factory(n, **kw) for n in _names(objs, kind)}
    if not out and not allow_empty:
        raise AuditInputError(f"{kind} is empty; give at least one")
    return out


def check_per_representation(mods: Mapping[str, Any], reps: Mapping[str, Any]) -> None:
    """A model may be one regressor or a dict representation -> regressor.

    The paper tunes each model per representation (e.g. XGBoost's learning rate,
    Ridge's alpha for BOW); a dict value keeps those settings under one model name.
    """
    for mname, model in mods.items():
        if not isinstance(model, dict):
            continue
        missing = [r for r in reps if r not in model]
        extra = sorted(str(r) for r in model if r not in reps)
        if missing or extra:
            raise AuditInputError(
                f"models[{mname!r}] is a dict of per-representation regressors but "
                + (f"has none for {missing}" if missing else f"names unknown {extra}")
                + f"; give one regressor for each of {list(reps)}"
            )


def describe_model(model: Any) -> str:
    """``Name(param=value, ...)`` with only the parameters changed from the defaults.

    sklearn's repr does this already; other libraries' (XGBoost's) list every
    parameter, which drowns the settings that matter in a report. A model
    that says itself what it is (``_description()``: a scored file) is taken
    at its word.
    """
    if callable(getattr(model, "_description", None)):
        return str(model._description())
    params = model.get_params(deep=False) if hasattr(model, "get_params") else {}
    try:
        defaults = type(model)().get_params(deep=False)
    except Exception:  # a class that needs arguments: show every set parameter
        defaults = {}
    changed = []
    for key in sorted(params):
        value = params[key]
        if key in defaults and _same(defaults[key], value):
            continue
        if value is None and key not in defaults:
            continue
        changed.append(f"{key}={value!r}")
    return f"{type(model).__name__}({', '.join(changed)})"


# -- the plan -----------------------------------------------------------------------


@dataclass
class Plan:
    """What the audit was asked to do, checked and resolved; nothing computed yet.

    Arrays are over the data's rows (0-based, in the data's order);
    ``prompt_ids`` gives each row's prompt (``"all"`` without a prompt
    column), ``prompts`` the prompts in report order.
    """

    text_col: str
    score_col: str
    essays: list[str]
    human: NDArray[np.float64]
    ids: NDArray[Any]
    prompt_col: str | None
    prompt_ids: NDArray[Any]
    prompts: list[str]
    prompt_texts: dict[str, str | None]
    scales: dict[str, tuple[tuple[float, float], Literal["declared", "inferred"]]]
    representations: dict[str, Any]
    trained: dict[str, Any]
    fitted: dict[str, Any]
    given: dict[str, NDArray[np.float64]]
    given_columns: dict[str, str | None]
    settings: Settings
    features: list[str]
    omitted_features: list[dict[str, str]]
    rater_cols: tuple[str, str] | None = None
    raters: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    group_col: tuple[str, ...] = ()
    groupings: Groupings | None = None
    covariates: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    paraphrases: list[str] | None = None
    make_paraphrases: bool = True
    reference_col: str | None = None
    references: list[list[str]] | None = None
    score_step: float | str | None = None

    @property
    def short_answer(self) -> bool:
        """Whether the audit grades short answers (a reference column was given)."""
        return self.references is not None

    def rows_of(self, prompt: str) -> NDArray[np.intp]:
        """The 0-based data rows of ``prompt``."""
        return np.flatnonzero(self.prompt_ids == prompt)


def plan_audit(
    data: object,
    *,
    text_col: str,
    score_col: str,
    rater_cols: str | Sequence[str] | None,
    score_range: Any,
    prompt: str | None,
    score_step: float | str | None = None,
    prompt_col: str | None,
    prompts: Mapping[Any, str] | None,
    group_col: str | Sequence[str] | None,
    id_col: str | None,
    systems: Any,
    covariate_cols: str | Sequence[str] | None = None,
    refit: bool | Collection[str],
    paraphrases: str | Sequence[str] | bool | None,
    reference_col: str | None,
    reference_sep: str | None,
    settings: Settings,
    bin_cols: Mapping[str, int] | None = None,
    embeddings: Mapping[str, Any] | None = None,
) -> Plan:
    """Check every input of the audit for every prompt; see the module docstring.

    Every option of ``settings`` is checked here, once (``AuditConfig.validate``),
    before the data; what depends on the data (``cv`` against the smallest
    prompt, perturbations needing a prompt text) is checked with it.
    """
    settings.validate()
    step = check_score_step(score_step)
    pd = require("pandas", purpose="the audit")
    if not isinstance(data, pd.DataFrame):
        raise AuditInputError(
            f"data must be a pandas DataFrame, got {type(data).__name__}; read the file "
            f"first (or use the fairaes command, which reads tsv/csv/xlsx)"
        )
    if len(data) < MIN_ESSAYS:
        raise AuditInputError(
            f"data has {len(data)} row(s); the audit needs at least {MIN_ESSAYS} essays "
            f"(the score-difference curves need two distance bins of two pairs each)"
        )
    text = column(data, text_col, "text")
    _check_text_not_numeric(text, text_col)
    essays = _texts(text, f"column {text_col!r}", allow_empty=False)
    prompt_ids, order, texts = _prompts(data, prompt_col, prompts, prompt)
    where = _Where(prompt_ids, prompt_col is not None)
    short_answer = reference_col is not None
    declared = _declared(score_range, order, short_answer)
    human = _numeric(
        column(data, score_col, "score"),
        score_col,
        "score",
        where,
        {p: (declared.get(p), "declared") for p in order},  # type: ignore[misc]
    )
    if short_answer and step is not None:
        raise AuditInputError(
            "score_step is for essay scores; short answers are graded as fractions of "
            "the question's points (score_range); leave score_step out"
        )
    if not short_answer and step is None:
        _check_integer_scale(human, f"score column {score_col!r}", where)
    scales = _scales(human, order, declared, score_col, where, short_answer)
    if isinstance(step, float):
        check_step_scales(scales, step, where)
        check_on_step(
            human,
            f"score column {score_col!r}",
            where,
            step,
            {p: lo for p, ((lo, _), _) in scales.items()},
        )
    raters, rater_names = _raters(data, rater_cols, where, short_answer, declared, step)
    groupings = None
    if group_col is not None or bin_cols:
        groupings = plan_groupings(
            data,
            group_col,
            bin_cols,
            intersections=bool(settings.intersections),
            min_group_size=int(settings.min_group_size),
            n_bootstrap=int(settings.n_bootstrap),
            prompt_ids=prompt_ids,
            where=where,
        )
    elif settings.intersections:
        raise AuditInputError(
            "intersections=True (--intersections) needs group columns (group_col) or "
            "bin columns (bin_cols) to intersect; add them or leave intersections out"
        )
    covariates = _covariates(data, covariate_cols, where)
    ids = _ids(data, id_col, len(essays))
    para = None
    if paraphrases is True:
        raise AuditInputError(
            "paraphrases=True: give a column name or one paraphrase per essay, None "
            "(WordNet paraphrases) or False (no paraphrases)"
        )
    if paraphrases is not None and paraphrases is not False:
        if isinstance(paraphrases, str):
            para = _texts(
                column(data, paraphrases, "paraphrase"),
                f"paraphrase column {paraphrases!r}",
                allow_empty=True,
            )
        else:
            values = (
                paraphrases.reset_index(drop=True)
                if hasattr(paraphrases, "reset_index")
                else paraphrases
            )
            para = _texts(values, "paraphrases", allow_empty=True)
        if len(para) != len(essays):
            raise AuditInputError(
                f"paraphrases has {len(para)} entries for {len(essays)} essays; "
                f"give one paraphrase per essay, in the same order"
            )
        _check_paraphrases_given(para, paraphrases)
    references = None
    if reference_col is not None:
        references = _references(data, reference_col, reference_sep, prompt_ids, where)
    elif reference_sep is not None:
        raise AuditInputError("reference_sep needs reference_col (the reference answers)")
    reps = named(
        settings.representations,
        make_representation,
        "representations",
        allow_empty=bool(embeddings),
        sbert_model=settings.sbert_model,
        cache=settings.cache,
        sbert_backend=settings.sbert_backend,
        device=settings.device,
        letters=settings.letters,
    )
    own = read_embeddings(
        embeddings, ids=ids, id_col=id_col, taken=sorted({*REPRESENTATION_NAMES, *reps})
    )
    if own and short_answer:
        raise AuditInputError(
            "embeddings are not available for short answers: the reference-similarity "
            "grading embeds the reference answers, which have no vectors of yours; "
            "leave embeddings (--embeddings) out"
        )
    reps.update(own)
    given, given_columns = _given(data, systems, len(essays), scales, where)
    trained, fitted = _models(settings.models, refit, bool(given), settings, short_answer)
    check_per_representation(trained, reps)
    _check_names(given, trained, fitted)
    if trained:
        smallest = min(order, key=lambda p: int(np.sum(prompt_ids == p)))
        n_min = int(np.sum(prompt_ids == smallest))
        # the declared constraint (an int >= 2) was checked by validate()
        if settings.cv > n_min:
            of = "" if prompt_col is None else f" of prompt {smallest!r}"
            raise AuditInputError(
                f"cv must be an int between 2 and the number of essays{of} ({n_min}), "
                f"got {settings.cv!r}"
            )
    if not given and not trained and not fitted:
        raise AuditInputError(
            "nothing to audit: give systems= (columns of your scores), models= "
            "(baselines to train, or fitted models with refit=False), or leave models "
            "at its default"
        )
    _check_grammar(settings.grammar)
    has_prompt = any(t is not None for t in texts.values())
    settings.perturbations = _check_perturbations(settings.perturbations, has_prompt)
    chosen, omitted = _chosen_features(has_prompt, settings.grammar)
    if not settings.features:
        omitted = [{"feature": f, "reason": FEATURES_SKIPPED} for f in chosen] + omitted
        chosen = []
    _check_neural_models(reps, chosen, settings)
    return Plan(
        text_col=text_col,
        score_col=score_col,
        essays=essays,
        human=human,
        ids=ids,
        prompt_col=prompt_col,
        prompt_ids=prompt_ids,
        prompts=order,
        prompt_texts=texts,
        scales=scales,
        representations=reps,
        trained=trained,
        fitted=fitted,
        given=given,
        given_columns=given_columns,
        settings=settings,
        features=chosen,
        omitted_features=omitted,
        rater_cols=rater_names,
        raters=raters,
        group_col=tuple(split_group_cols(group_col)),
        groupings=groupings,
        covariates=covariates,
        paraphrases=para,
        make_paraphrases=paraphrases is not False,
        reference_col=reference_col,
        references=references,
        score_step=step,
    )


def _models(
    models: Any,
    refit: bool | Collection[str],
    have_given: bool,
    settings: Settings,
    short_answer: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The baselines to cross-validate and the fitted models to use as they are."""
    kw = {"random_state": settings.random_state, "n_jobs": settings.n_jobs}
    if models is None:
        # the default: baselines only when there is nothing of the user's to audit
        models = () if have_given else MODEL_NAMES
        if refit is not True:
            raise AuditInputError(
                f"refit={short(refit)} says which models are fitted estimators, but "
                f"models= is not given; pass models={{name: fitted_estimator}} with "
                f"refit=False"
            )
    if isinstance(refit, bool):
        if refit:
            mods = named(models, make_model, "models", allow_empty=have_given, **kw)
            return _baselines(mods, short_answer), {}
        if not isinstance(models, Mapping):
            raise AuditInputError(
                "refit=False uses every entry of models as a fitted model, so models "
                "must be a dict name -> fitted estimator (texts -> scores), got "
                f"{short(models)}"
            )
        return {}, _fitted(dict(models))
    trained_names = _names(refit, "refit")
    if isinstance(models, Mapping):
        spec = dict(models)
    else:
        spec = {n: n for n in _names(models, "models")}
    unknown = [n for n in trained_names if n not in spec]
    if unknown:
        raise AuditInputError(
            f"refit names {unknown}, which models does not have ({list(spec)}); refit "
            f"lists the models the audit trains"
        )
    trained = {}
    for n in trained_names:
        value = spec[n]
        trained[n] = make_model(value, **kw) if isinstance(value, str) else value
    fitted = {n: v for n, v in spec.items() if n not in trained}
    names_only = [n for n, v in fitted.items() if isinstance(v, str)]
    if names_only:
        raise AuditInputError(
            f"models {names_only} are names, not fitted estimators, and refit does not "
            f"list them; add them to refit to train them, or give the fitted estimator"
        )
    return _baselines(trained, short_answer), _fitted(fitted)


def _baselines(mods: dict[str, Any], short_answer: bool) -> dict[str, Any]:
    if REFERENCE_MODEL in mods and not short_answer:
        raise AuditInputError(
            f"model {REFERENCE_MODEL!r} grades answers by their similarity to the "
            f"reference answers; give reference_col (the reference answers), or leave "
            f"it out"
        )
    return mods


def _fitted(fitted: dict[str, Any]) -> dict[str, Any]:
    for name, est in fitted.items():
        if not callable(getattr(est, "predict", None)):
            raise AuditInputError(
                f"model {name!r} ({type(est).__name__}) has no predict method; a fitted "
                f"model must be an estimator or pipeline that takes essay texts and "
                f"returns one score per essay"
            )
    return fitted


# -- the studies ----------------------------------------------------------------------


@dataclass
class Progress:
    """A tqdm bar when asked for and installed; ``tick`` is a no-op otherwise."""

    enabled: bool
    total: int
    bar: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        if not self.enabled:
            return
        try:
            tqdm = require("tqdm", purpose="progress bars").tqdm
        except ImportError:
            return
        self.bar = tqdm(total=self.total, desc="audit", unit="step", leave=False)

    @staticmethod
    def steps(plan: Plan, n_analyses: int) -> int:
        """The ticks of a whole audit: building each study, then each analysis on it."""
        per_rep = len([m for m in plan.trained if m != REFERENCE_MODEL]) + 1
        per_study = 2 + len(plan.representations) * per_rep + n_analyses
        return len(plan.prompts) * per_study

    def tick(self, label: str) -> None:
        """Advance the bar by one step, showing ``label``."""
        if self.bar is not None:
            self.bar.set_postfix_str(label)
            self.bar.update(1)

    def close(self) -> None:
        """Remove the bar."""
        if self.bar is not None:
            self.bar.close()


def score_fitted(plan: Plan) -> dict[str, NDArray[np.float64]]:
    """Score every essay with each fitted model, once; refuse what is not one score each.

    This is the fitted systems' scoring itself, done before any other
    computation so that a model that cannot score the essays stops the audit
    first. The estimator is used as it is: never cloned, never refitted.
    """
    where = _Where(plan.prompt_ids, plan.prompt_col is not None)
    return {
        name: predict_scores(name, est, plan.essays, where=where.row)
        for name, est in plan.fitted.items()
    }


#: Essays per prompt whose edits the fitted models score before the long work.
_PROBED_ESSAYS = 2


def probed_rows(plan: Plan, p: str) -> list[int]:
    """The data rows of prompt ``p`` whose edits are probed: the first and the longest."""
    rows = plan.rows_of(p)
    longest = max(rows, key=lambda i: len(plan.essays[i]))
    first = [int(r) for r in rows[: _PROBED_ESSAYS - 1]]
    return list(dict.fromkeys([*first, int(longest)]))


def probe_edited_essays(plan: Plan) -> None:
    """Score a few edited essays with each fitted model before the long work.

    With ``perturbations``, the counterfactual audit scores edited essays
    last. A model that fails on them (a length limit, NaN for unseen text)
    is found here instead, after seconds rather than after every other
    analysis: per prompt, the first essay and the longest (the likeliest to
    pass a length limit once edited), under every perturbation asked for.
    A perturbation that cannot run here (no WordNet, say) is skipped: the
    counterfactual audit reports it in its place.
    """
    if plan.settings.perturbations is None or not plan.fitted:
        return
    from ..perturb._registry import resolve_perturbations

    edited: list[str] = []
    labels: list[str] = []
    for p in plan.prompts:
        picked = probed_rows(plan, p)
        sample = [plan.essays[i] for i in picked]
        try:
            items = resolve_perturbations(
                list(plan.settings.perturbations),
                prompt=plan.prompt_texts[p],
                random_state=plan.settings.random_state,
            )
        except (ValueError, TypeError):
            continue
        for label, perturbation in items:
            try:
                perturbation.fit()
                texts, _ = perturbation.transform_with_records(sample)
            except (ImportError, LookupError, ValueError):
                continue
            for i, text, original in zip(picked, texts, sample):
                if text != original:
                    edited.append(text)
                    labels.append(f"the {label} edit of data row {i + 1}")
    if not edited:
        return
    for name, est in plan.fitted.items():
        predict_scores(name, est, edited, what="edited essays", where=labels.__getitem__)


def fit_representations(
    reps: Mapping[str, Any],
    essays: Sequence[str],
    text_col: str,
    where: str = "",
    before_encoders: Callable[[], None] | None = None,
    rows: NDArray[np.intp] | None = None,
    cache: Any = None,
) -> dict[str, tuple[Any, Any]]:
    """Fit every representation on ``essays``: (fitted transformer, vectors) by name.

    Vocabulary-based ones go first (they are fast), so that a representation
    that finds no word in any essay stops the audit with a message before the
    slow encoders run. ``before_encoders`` is called once between the two.
    The user's own vectors (:class:`GivenEmbeddings`) are those of the data
    rows ``rows`` of ``essays``, with no transformer (None). With an on-disk
    ``cache`` (the audit's) a built-in vocabulary representation's fit is kept
    there (``_study_cache.fit_representation``).
    """
    from sklearn.feature_extraction.text import CountVectorizer

    from ._study_cache import fit_representation

    def fast(r: str) -> bool:
        return isinstance(reps[r], (CountVectorizer, GivenEmbeddings))

    order = sorted(reps, key=lambda r: not fast(r))
    fitted: dict[str, tuple[Any, Any]] = {}
    for rname in order:
        if isinstance(reps[rname], GivenEmbeddings):
            if rows is None:
                raise ValueError(
                    f"representation {rname!r} is the user's vectors; pass the data "
                    f"rows of the essays (rows=)"
                )
            fitted[rname] = (None, reps[rname].rows(rows))
            continue
        if before_encoders is not None and not fast(rname):
            before_encoders()
            before_encoders = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)  # truncation notes
            try:
                rep, X = fit_representation(reps[rname], essays, cache)
            except ValueError as exc:
                # sklearn's words for "no term in any essay" (before and after
                # the min_df/max_df pruning)
                if not any(m in str(exc) for m in ("empty vocabulary", "no terms remain")):
                    raise
                raise AuditInputError(
                    f"representation {rname!r} keeps no word of the essays in column "
                    f"{text_col!r}{where} (essays of digits or symbols only, words too "
                    f"rare for its min_df, or a script it does not keep); check that the "
                    f"column holds the essays, or use another representation (e.g. sbert)"
                ) from None
        fitted[rname] = (rep, X.to_numpy() if hasattr(X, "to_numpy") else X)
    return {r: fitted[r] for r in reps}


#: A letter of any script (``\w`` without digits and the underscore).
_LETTER = re.compile(r"[^\W\d_]")


def _vector_notes(
    rname: str, space: PairSpace, study: Study
) -> dict[str, tuple[int, str | None]]:
    """What the reader should know about the essays' vectors under ``rname``.

    For each kind of problem (``"empty_vectors"``, ``"letters_dropped"``): how
    many essays of the study have it, and the note saying so (None: none).
    """
    return {
        "empty_vectors": _empty_vector_note(rname, space.X, study.ids),
        "letters_dropped": _letters_dropped_note(
            rname, space.transformer, study.essays, study.ids
        ),
    }


def _letters_dropped_note(
    rname: str, rep: Any, essays: Sequence[str], ids: NDArray[Any]
) -> tuple[int, str | None]:
    """How many essays lose most of their letters to ``rname``'s text preparation.

    The paper's vectorizers keep the letters A-Z only (``letters="ascii"``): an
    essay in Greek with one English word becomes that word's vector, at
    distance 0 from every other such essay, which no empty-vector note
    reveals. An essay is counted when its preprocessor (lower case, letters
    only) keeps fewer than half of its letters.
    """
    build = getattr(rep, "build_preprocessor", None)
    if build is None:  # an encoder: it reads the text whole
        return 0, None
    preprocess = build()
    dropped = np.zeros(len(essays), dtype=bool)
    for i, text in enumerate(essays):
        if text.isascii():  # every letter is one of A-Z
            continue
        n_letters = len(_LETTER.findall(text))
        kept = len(_LETTER.findall(preprocess(text)))
        dropped[i] = n_letters > 0 and kept < n_letters / 2
    k = int(dropped.sum())
    if not k:
        return 0, None
    shown = ", ".join(short(str(i), 20) for i in ids[dropped][:10])
    fix = (
        'letters="unicode" (--letters unicode) keeps the letters of every script.'
        if hasattr(rep, "letters")
        else "A representation that keeps their letters would (e.g. sbert)."
    )
    return k, (
        f"{rname}: {k} essay(s) are written mostly in letters that the representation "
        f"does not keep (ids {shown}{', ...' if k > 10 else ''}; e.g. another script "
        f"than A-Z); each is represented by its few remaining words, or as an empty "
        f"vector, so its distances say little about what it says. {fix}"
    )


def _empty_vector_note(rname: str, X: Any, ids: NDArray[Any]) -> tuple[int, str | None]:
    """How many essays are all-zero vectors under ``rname``, and the note saying so."""
    if hasattr(X, "getnnz"):
        empty = np.asarray(X.getnnz(axis=1)) == 0
    else:
        empty = ~np.any(np.asarray(X) != 0, axis=1)
    k = int(empty.sum())
    if not k:
        return 0, None
    shown = ", ".join(short(str(i), 20) for i in ids[empty][:10])
    return k, (
        f"{rname}: {k} essay(s) became empty (all-zero) vectors, with no word the "
        f"representation keeps (ids {shown}{', ...' if k > 10 else ''}); they are at "
        f"distance 0 from each other whatever they say, so their pairs are not "
        f"evidence of fair or unfair scoring."
    )


def pair_space(rname: str, rep: Any, X: Any, settings: Settings) -> PairSpace:
    """The pairs of one representation within one study.

    One engine per study and representation, which every pair analysis
    passes to the metrics as ``X``: they share its validated rows and its
    distance range. It holds the condensed distances (``"precomputed"``)
    when they fit in memory; above ``MAX_CONDENSED`` essays it walks the
    vectors in blocks and the distance distribution is drawn from random
    pairs, whose distances are the engine's own (the Lipschitz analysis
    notes it).
    """
    from ..metrics import condensed_distances
    from ..metrics._pairs._engine import PairwiseEngine

    n = X.shape[0]
    if n <= MAX_CONDENSED:
        D = condensed_distances(X, n_jobs=settings.n_jobs)
        engine = PairwiseEngine(D, metric="precomputed", n_jobs=settings.n_jobs)
        return PairSpace(rname, rep, X, engine, "precomputed", D)
    engine = PairwiseEngine(X, metric="cosine", n_jobs=settings.n_jobs)
    rng = np.random.default_rng(settings.random_state)
    i = rng.integers(0, n, DIST_SAMPLE)
    j = rng.integers(0, n, DIST_SAMPLE)
    keep = i != j
    i, j = i[keep], j[keep]
    return PairSpace(rname, rep, X, engine, "cosine", engine.paired_distances(i, j), (i, j))


def before_studies(plan: Plan) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """The work before any study: the fitted systems' scores, the repeats, the per-essay run."""
    probe_scorers(
        plan
    )  # a scorer you call answers a few essays: unreachable, it stops here
    fitted_scores = score_fitted(plan)
    repeated = score_repeats(plan, fitted_scores)  # repeats=K: before the long work
    probe_edited_essays(plan)  # the counterfactual audit's edits too
    # the features' tagging and the paraphrases of every prompt, in chunks over
    # the processes, into the result cache the studies read (_per_essay)
    return fitted_scores, repeated, start_per_essay(plan)


def note_vectors(study: Study, counts: dict[str, Any]) -> Study:
    """``study`` with its ``_vector_notes`` first among its notes, counted in ``counts``."""
    first: list[str] = []
    for rname, space in study.spaces.items():
        for kind, (k, note) in _vector_notes(rname, space, study).items():
            counts[kind][rname] += k
            if note is not None:
                first.append(note)
    study.notes[:0] = first
    return study


def build_studies(plan: Plan, bar: Progress) -> tuple[list[Study], dict[str, Any]]:
    """One study per prompt, and the counts of ``_vector_notes`` per representation.

    The counts are ``{"empty_vectors": {rname: k}, "letters_dropped": {rname: k}}``
    over all prompts: essays that became all-zero vectors, and essays most of
    whose letters the representation does not keep. See the module docstring
    for the order of the work.
    """
    from concurrent.futures import ThreadPoolExecutor

    fitted_scores, repeated, prepared = before_studies(plan)
    encoding = start_encoding(plan)  # Sentence-BERT on the workers (_encoding)
    several = plan.prompt_col is not None
    represented = {}
    # The WordNet paraphrases (tagging included) are single-threaded Python;
    # the Sentence-BERT encoders run torch, which releases the GIL. Computing
    # the paraphrases in a thread while the essays are encoded uses the core
    # that encoding leaves idle part of the time. They start after the
    # vocabulary-based representations, which load WordNet in this thread
    # (NLTK's lazy corpus loader is not safe to load from two threads), and
    # each study waits for them before its features tag the essays (one
    # tagger, used by one thread at a time). The results are those of the
    # sequential order: tags and paraphrases depend on the essay and the seed.
    #
    # While that thread runs, the interpreter hands the GIL over every 0.2 ms
    # instead of every 5: the encoder's Python between torch operations
    # otherwise waits up to 5 ms for the paraphraser at each of them.
    # MiniLM beside a busy Python thread: 12.6 -> 18.9 essays/s, the Python
    # thread 21% slower (benchmarks/bench_gil_overlap.py). Restored when the
    # paraphrases are done. The interval holds for every thread of the
    # process, so only when the caller owns the interpreter and asked for it
    # (audit(tune_interpreter=True), which the fairaes command passes).
    pool = ThreadPoolExecutor(1, thread_name_prefix="fairaes-paraphrases")
    paraphrased: dict[str, Future[list[str]]] = {}
    switch = _SwitchInterval(
        _OVERLAP_SWITCH_INTERVAL if plan.settings.tune_interpreter else None
    )

    def start_paraphrases() -> None:
        if (
            (prepared is not None and not prepared.done())
            or paraphrased
            or plan.paraphrases is not None
            or not plan.make_paraphrases
            or not plan.prompts
        ):
            return
        switch.set()  # before the thread starts
        for q in plan.prompts:
            paraphrased[q] = pool.submit(
                _wordnet_paraphrases,
                [plan.essays[i] for i in plan.rows_of(q)],
                plan.settings,
            )
        paraphrased[plan.prompts[-1]].add_done_callback(lambda _: switch.restore())

    try:
        for p in plan.prompts:
            essays = [plan.essays[i] for i in plan.rows_of(p)]
            encoding.wait(p)
            represented[p] = fit_representations(
                plan.representations,
                essays,
                plan.text_col,
                f" of prompt {p!r}" if several else "",
                before_encoders=start_paraphrases,
                rows=plan.rows_of(p),
                cache=plan.settings.cache,
            )
        per_essay = None if prepared is None else wait_per_essay(prepared)
        start_paraphrases()  # no encoder among the representations
        counts: dict[str, Any] = {
            kind: dict.fromkeys(plan.representations, 0)
            for kind in ("empty_vectors", "letters_dropped")
        }
        if per_essay is not None:
            counts["per_essay"] = per_essay
        counts.update(encoding.finish(paraphrased))  # made ones encoded there too
        studies = []
        for p in plan.prompts:
            study = _study(plan, p, fitted_scores, represented[p], bar, paraphrased.get(p))
            studies.append(note_vectors(study, counts))
    finally:
        # an error (or Ctrl-C) stops the paraphrases and chunks not yet started
        if prepared is not None:
            prepared.cancel()
        encoding.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        switch.restore()
    attach_repeats(plan, studies, repeated)
    return studies, counts


#: The GIL switch interval while the paraphrases run beside the encoders (s).
_OVERLAP_SWITCH_INTERVAL = 0.0002


class _SwitchInterval:
    """Sets ``sys.setswitchinterval`` and puts the previous value back, once.

    ``value=None`` changes nothing (the interpreter is not the audit's to tune).
    """

    def __init__(self, value: float | None) -> None:
        self.value = value
        self.previous: float | None = None
        self._lock = threading.Lock()

    def set(self) -> None:
        with self._lock:
            if self.value is not None and self.previous is None:
                self.previous = sys.getswitchinterval()
                sys.setswitchinterval(self.value)

    def restore(self) -> None:
        with self._lock:
            # not over a value that someone else set meanwhile
            if (
                self.previous is not None
                and self.value is not None
                and abs(sys.getswitchinterval() - self.value) < 1e-7
            ):
                sys.setswitchinterval(self.previous)
            self.previous = None


def _out_of_fold(
    model: Any, X: Any, y: NDArray[np.float64], folds: Any, n_jobs: int | None
) -> NDArray[np.float64]:
    """Out-of-fold predictions of ``model``; the folds in threads unless ``n_jobs`` is set.

    With ``n_jobs=None`` (one process) the folds of the package's own baselines
    (:func:`make_model`) are fitted in two threads: scikit-learn's tree
    building and BLAS release the GIL, so the exact-split gradient boosting's
    folds run about 1.6 times as fast (ASAP prompt 7, 384-d vectors: 3.5 s ->
    2.1 s), with the same predictions (each fold's fit is seeded and
    independent of the others). A user's estimator is fitted fold after fold
    (it may not be thread-safe). A given ``n_jobs`` keeps its meaning: that
    many joblib workers.
    """
    from joblib import parallel_config
    from sklearn.base import clone
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import cross_val_predict

    ours = type(model) in (GradientBoostingRegressor, RandomForestRegressor, Ridge)
    if n_jobs is not None or not ours:
        return cross_val_predict(clone(model), X, y, cv=folds, n_jobs=n_jobs)
    with parallel_config(backend="threading"):
        return cross_val_predict(clone(model), X, y, cv=folds, n_jobs=2)


def _wordnet_paraphrases(essays: Sequence[str], settings: Any) -> list[str]:
    """The audit's WordNet paraphrases of ``essays`` (raises ImportError or LookupError)."""
    from ..paraphrase import WordNetParaphraser

    # the audit's cache: a re-run reads the paraphrases instead of tagging
    # and paraphrasing every essay again
    return list(
        WordNetParaphraser(
            random_state=settings.random_state, cache=settings.cache
        ).fit_transform(essays)
    )


def _study(
    plan: Plan,
    p: str,
    fitted_scores: Mapping[str, NDArray[np.float64]],
    represented: Mapping[str, tuple[Any, Any]],
    bar: Progress,
    paraphrased: Future[list[str]] | None = None,
) -> Study:
    settings = plan.settings
    rows = plan.rows_of(p)
    essays = [plan.essays[i] for i in rows]
    (lo, hi), source = plan.scales[p]
    human = plan.human[rows]
    if plan.short_answer:
        human = (human - lo) / (hi - lo)
    study = Study(
        prompt=p,
        prompt_text=plan.prompt_texts[p],
        essays=essays,
        ids=plan.ids[rows],
        rows=rows + 1,
        human=human,
        score_range=(lo, hi),
        score_range_source=source,
        settings=settings,
        raters=None
        if plan.raters is None
        else (plan.raters[0][rows], plan.raters[1][rows]),
        rater_cols=plan.rater_cols,
        groupings=None
        if plan.groupings is None
        else {name: labels[rows] for name, labels in plan.groupings.labels.items()},
        covariates={name: values[rows] for name, values in plan.covariates.items()},
        paraphrases=None
        if plan.paraphrases is None
        else [plan.paraphrases[i] for i in rows],
        paraphrase_source=None if plan.paraphrases is None else "given",
        references=None if plan.references is None else [plan.references[i] for i in rows],
        short_answer=plan.short_answer,
        representations={r: rep for r, (rep, _) in represented.items()},
        score_step=plan.score_step,
    )
    if plan.groupings is not None:
        study.notes += [note for q, note in plan.groupings.notes if q == p]

    def scaled(s: NDArray[np.float64]) -> NDArray[np.float64]:
        return (s - lo) / (hi - lo) if plan.short_answer else s

    for name, values in plan.given.items():
        col = plan.given_columns[name]
        study.systems[name] = System(
            name,
            "given",
            {None: scaled(values[rows])},
            description="given scores" + ("" if col is None else f" (column {col!r})"),
        )
    for name, values in fitted_scores.items():
        est = plan.fitted[name]
        study.systems[name] = System(
            name,
            "fitted",
            {None: scaled(values[rows])},
            estimator=est,
            description=f"fitted model, used as it is: {describe_model(est)}",
        )

    # -- paraphrases (paper §5.2), computed in a thread while the essays were
    # encoded (build_studies); waited for here, before the features use the tagger
    paraphrase_error: Exception | None = None
    if study.paraphrases is None and paraphrased is not None:
        try:
            study.paraphrases = paraphrased.result()
            study.paraphrase_source = "WordNetParaphraser"
        except (ImportError, LookupError) as exc:
            paraphrase_error = exc

    if not plan.make_paraphrases:
        study.skipped["paraphrases"] = PARAPHRASES_SKIPPED
    # -- interpretable features (paper §5.1.1)
    if settings.features:
        _features(study, plan, rows)
    else:
        study.skipped["features"] = FEATURES_SKIPPED
    bar.tick(f"{p}: features")

    if study.paraphrases is None and paraphrase_error is None and plan.make_paraphrases:
        try:  # not started in a thread (e.g. build_studies was bypassed)
            study.paraphrases = _wordnet_paraphrases(essays, settings)
            study.paraphrase_source = "WordNetParaphraser"
        except (ImportError, LookupError) as exc:
            paraphrase_error = exc
    if paraphrase_error is not None:
        study.notes.append(
            f"Paraphrase robustness skipped: no offline paraphraser ({paraphrase_error})."
        )
    bar.tick(f"{p}: paraphrases")
    _baselines_and_spaces(study, plan, represented, bar)
    return study


def _features(study: Study, plan: Plan, rows: NDArray[np.intp]) -> None:
    """The study's interpretable features (paper §5.1.1)."""
    from ..features._grammar import RETRY_DELAYS, GrammarServerError
    from ._study_cache import audit_features, fit_features

    settings = plan.settings
    essays, human = study.essays, study.human
    feat = audit_features(plan, study.prompt_text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # long-text truncation notes
        try:
            # kept in the audit's cache folder across runs (_study_cache)
            study.features, study.feature_names = fit_features(feat, essays, human)
        except GrammarServerError as exc:
            # the user's server, which passed the start-up check, failed later
            where = _Where(plan.prompt_ids, plan.prompt_col is not None)
            raise AuditInputError(
                f"grammar={short(settings.grammar, 80)} (--grammar): the LanguageTool "
                f"server at {exc.server} failed on {where.row(int(rows[exc.position]))} "
                f"and on {len(RETRY_DELAYS)} retries ({exc.reason}); check the server "
                f"(its log says why), or leave grammar out (no --grammar) to audit "
                f"without the language_errors feature"
            ) from None


def _baselines_and_spaces(
    study: Study, plan: Plan, represented: Mapping[str, tuple[Any, Any]], bar: Progress
) -> None:
    """The trained baselines' out-of-fold predictions and the pair spaces (§4.3)."""
    from sklearn.model_selection import KFold

    settings, human, p = plan.settings, study.human, study.prompt
    folds = KFold(settings.cv, shuffle=True, random_state=settings.random_state)
    trained: dict[str, dict[str | None, NDArray[np.float64]]] = {
        m: {} for m in plan.trained
    }
    for rname, (rep, X) in represented.items():
        for mname, model in plan.trained.items():
            if mname == REFERENCE_MODEL:
                continue
            if isinstance(model, dict):
                model = model[rname]
            trained[mname][rname] = _out_of_fold(model, X, human, folds, settings.n_jobs)
            bar.tick(f"{p}: {rname} + {mname}")
        study.spaces[rname] = pair_space(rname, rep, X, settings)
        bar.tick(f"{p}: {rname} pairs")
    for mname, model in plan.trained.items():
        if mname == REFERENCE_MODEL:
            from .analyses._short_answers import make_reference_baseline

            study.systems[mname] = make_reference_baseline(study)
            continue
        desc = (
            "; ".join(f"{r}: {describe_model(m)}" for r, m in model.items())
            if isinstance(model, dict)
            else describe_model(model)
        )
        study.systems[mname] = System(
            mname, "trained", trained[mname], estimator=model, description=desc
        )
