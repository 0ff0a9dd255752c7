"""The audit: the paper's whole individual-fairness methodology on a user's data.

``audit()`` computes plain data -- tables (pandas) and figures made from them --
and ``AuditResult`` hands them to the renderers (HTML, JSON, CSV). Nothing is
computed in the report layer.

The audit runs in three steps. Every input is checked for every prompt
before any computation (``_build.plan_audit``); then one study per prompt is
built (``_build.build_studies``: the systems' scores, representations fitted
on that prompt's essays, interpretable features, paraphrases and the pair
distances); then the analysis of each selected section of
``analyses.SECTIONS`` runs on each study and the tables are stacked with a
``prompt`` column in front, each section pooling its own across prompts.

The analyses follow the paper: agreement with the human scores (§4.3,
Table 2), extreme pairs (§5.1.2, Figure 1) and aggregate feature differences
(§5.1.3, Figure 2), paraphrase robustness (§5.2), the Lipschitz fraction
(§5.3.2, Table 3, Figure 4) and the score difference by distance bin (§5.3.3,
Figures 5 and 6), then the group view, counterfactual edits and short-answer
grading.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._interrupts import interrupts_kept
from .._version import __version__
from ..metrics._bootstrap import ids_digest
from ..resources import require
from ._build import (
    MODEL_NAMES,
    REPRESENTATION_NAMES,
    AuditInputError,
    Plan,
    Progress,
    describe_model,
    plan_audit,
)
from ._build import make_model as _make_model  # noqa: F401  (tests build baselines)
from ._cluster import run_place
from ._config import AuditConfig
from ._edits import check_scored_files
from ._embeddings import GivenEmbeddings
from ._load import REPORT_FORMAT
from ._repeats import check_repeats
from ._result import AuditResult
from ._scorers import declared_scale, merge_scorers, scorer_cache_path
from ._study import Study
from ._study_tasks import build_and_run

if TYPE_CHECKING:
    # pandas is imported at run time through require(); functions bind it to a
    # local ``pd``, so annotations name the classes themselves
    from pandas import DataFrame

    from ..text import EmbeddingCache
    from .analyses import AnalysisOutput, Section

__all__ = ["audit", "AuditResult", "AuditInputError", "MODEL_NAMES", "REPRESENTATION_NAMES"]


def audit(
    data: DataFrame,
    *,
    text_col: str,
    score_col: str,
    systems: Mapping[str, str | ArrayLike] | Sequence[str] | None = None,
    rater_cols: str | Sequence[str] | None = None,
    score_range: tuple[float, float] | Mapping[Any, tuple[float, float]] | None = None,
    score_step: float | str | None = None,
    prompt: str | None = None,
    prompt_col: str | None = None,
    prompts: Mapping[Any, str] | None = None,
    group_col: str | Sequence[str] | None = None,
    covariate_cols: str | Sequence[str] | None = None,
    id_col: str | None = None,
    representations: Sequence[str] | Mapping[str, Any] = ("bow", "tfidf", "sbert"),
    embeddings: Mapping[str, Any] | None = None,
    letters: str = "ascii",
    models: Sequence[str] | Mapping[str, Any] | None = None,
    refit: bool | Collection[str] = True,
    scorers: Mapping[str, Any] | None = None,
    scored_edits: Mapping[str, Any] | None = None,
    cv: int = 5,
    paraphrases: str | Sequence[str] | bool | None = None,
    reference_col: str | None = None,
    reference_sep: str | None = None,
    random_state: int = 0,
    n_jobs: int | None = None,
    grammar: str | None = None,
    features: bool = True,
    sbert_model: str = "all-MiniLM-L6-v2",
    sbert_backend: str = "torch",
    device: str | None = None,
    k_extreme: int = 1,
    n_profile_pairs: int = 10_000,
    n_paraphrase_samples: int = 100,
    perturbations: str | Sequence[str] | None = None,
    n_perturbation_essays: int = 200,
    n_review: int = 20,
    n_neighbors: int = 5,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    smd_method: str = "unpooled",
    intersections: bool = False,
    min_group_size: int = 30,
    cache: bool | str | os.PathLike[str] | EmbeddingCache | None = True,
    progress: bool = False,
    title: str | None = None,
    tune_interpreter: bool = False,
    sections: Sequence[str] | None = None,
    bin_cols: Mapping[str, int] | None = None,
    repeats: int = 1,
    client: Any = None,
) -> AuditResult:
    """Audit scoring systems for individual fairness (are similar essays scored similarly).

    The systems audited are the user's own -- scores given as columns
    (``systems``) or fitted models that score essay texts (``models`` with
    ``refit=False``) -- and, when asked for (or when nothing else is given),
    baselines trained by the audit with out-of-fold predictions
    (``KFold(cv, shuffle=True, random_state)``), as in the paper. For every
    system it computes the agreement with the human scores (QWK on the
    declared or inferred score scale, SMD, degradation from the human-human
    QWK, the Williamson et al. acceptance flags) and, under every
    representation, the Lipschitz fraction (min-max and max normalisation),
    the 5- and 100-bin score-difference curves and the distributions of
    distances and score differences; the same pair metrics for the human
    scores; and, per representation, the extreme pairs with their
    interpretable features, the nearest/medium/farthest feature-difference
    profile and paraphrase robustness.

    With ``prompt_col`` every prompt (or question) is its own study:
    representations are fitted on its essays, every pair is a pair within
    it (essays on different prompts are not similar individuals, and their
    scales may differ), and each has its own score scale. The tables have
    one row per prompt, with pooled rows (``prompt="pooled"``) for the
    agreement (Fisher-z mean QWK, :func:`~sklearn_fairaes.metrics.mean_qwk`)
    and the Lipschitz fraction (pair-weighted: satisfied pairs over all
    pairs of all prompts).

    Parameters
    ----------
    data : pandas.DataFrame
        One row per essay.
    text_col, score_col : str
        Columns with the essay text and the (resolved) human score.
    systems : list of str, or dict of str to str or array-like, default=None
        The scores of the user's scoring systems, one per essay: column names
        (the column name is the system's name), or a dict name -> column
        name or array of scores. Every score must be a finite number on each
        prompt's score scale (declared, or inferred from the human scores);
        a blank, text or off-scale cell is refused, naming its column, data
        row and prompt. Given systems are audited under every
        representation. When systems are given and ``models`` is not, no
        baseline is trained. A name may not read (case and spacing aside)
        as ``"human"``, ``"human scores"``, ``"pooled"`` or ``"all"``, which
        label the tables' own rows, nor as another system's or model's name.
    rater_cols : list of two str or str, default=None
        The two raters' columns (a list, or one comma-separated string);
        enables the degradation from human-human QWK. The two columns must
        differ. They keep a score scale of their own (a resolved score is
        often the raters' sum), inferred from their values; a rater score off
        a declared ``score_range`` (above its high end, or below its low end,
        halved when positive) is refused, naming its row.
    score_range : tuple of two int, or dict of prompt id to tuple, default=None
        The declared scale ``(low, high)`` of ``score_col``, both ends
        included (e.g. ``(0, 12)``), for every prompt or, as a dict, per
        prompt id (prompts left out are inferred). QWK and the agreement
        rates are computed on this scale, never on the range the scores
        happen to use; a human or given score outside it is refused, naming
        its row. Prompts without one infer it from the human scores (their
        minimum to maximum; ``meta["score_ranges"]`` and the report say it
        was inferred); an inferred scale of more than 1,000 score points is
        refused as a typo (one score of 1e12 among 0-12), and so is every
        rater column spanning more.
    score_step : float or "continuous", default=None
        The step between the human score points. None: integer score points,
        as before (a non-integer human or rater score is refused). A number
        (``0.5`` for ELLIPSE's 1.0-5.0 in half points): every human and rater
        score must lie on ``low + k * score_step`` of its prompt's scale (a
        score off that grid is refused, naming its column, row and value),
        and ``(high - low) / score_step`` must be a whole number (else the
        audit stops before any work). QWK, the agreement rates and the
        confusion matrix then treat each step as one score point: a system's
        score is trimmed to ``[low - 0.4998 * step, high + 0.4998 * step]``
        and rounded to the nearest step, and adjacent agreement means within
        one step. ``"continuous"``: the human scores may take any value (e.g.
        averages of several raters); QWK is the continuous QWK that RSMTool
        reports for real-valued scores (``2 Cov / (Var H + Var M + (mean
        difference) ** 2)`` on the trimmed, unrounded scores), and the
        report says so; the agreement rates and the confusion matrix are not
        computed (NaN, no rows).
    prompt : str, default=None
        The task statement, for one prompt (use ``prompts`` with
        ``prompt_col``). Without it the prompt-based features (overlap and
        prompt similarity) are left out, and the report says so.
    prompt_col : str, default=None
        The column of each essay's prompt (or question) id: one study per
        prompt, each with at least 4 essays.
    prompts : dict of prompt id to str, default=None
        The task statement of every prompt id of ``prompt_col`` (ids compare
        as text: ``3`` and ``"3"`` are the same prompt); a prompt without one
        is refused.
    group_col : str or list of str, default=None
        Group columns (e.g. demographics: ``"race"`` or ``["race",
        "gender"]``); adds the group view (see *Group tables* below), which
        analyses each column on its own (a *grouping*). Every row needs a
        label (an empty cell is refused, naming its row), every prompt needs
        at least two groups, and no group may be called ``"all"`` (the label
        of the all-essays row). Labels are compared as text.
    covariate_cols : str or sequence of str, default=None
        Numeric columns (e.g. ``word_count``, an age) that the error section
        (*Where the errors come from*) relates each system's error to, beside
        the interpretable features; one string may list several, separated by
        commas. A column with text, an empty cell or an infinite value is
        refused, naming the column and its first such rows.
    id_col : str, default=None
        Unique essay ids (default: row numbers from 1).
    representations : sequence of str or dict, default=("bow", "tfidf", "sbert")
        Names from ``REPRESENTATION_NAMES`` or a dict name -> transformer.
        May be empty when ``embeddings`` are given.
    embeddings : dict, default=None
        Your own vectors as representations, name -> vectors: an array (or a
        ``.npy`` file) of shape ``(n_rows, n_dims)`` aligned with the rows of
        ``data``, or a table (a DataFrame, a ``.csv`` or ``.parquet`` file)
        with the column ``id_col`` and one numeric column per dimension, one
        row per essay id (rows of ids not in ``data`` are ignored). Each is
        audited like the built-in representations, with cosine distances,
        under its name; a name of a built-in representation or of
        ``representations`` is refused. Texts you did not embed have no
        vector, so the paraphrase robustness and the counterfactual edits
        leave these representations out (the report says so). A wrong row count, NaN or infinite values, an all-zero
        vector (no cosine), ids without a vector, a non-numeric column or a
        missing file is refused before any work, naming the file and rows.
    letters : {"ascii", "unicode"}, default="ascii"
        What the ``"bow"`` and ``"tfidf"`` representations made from their
        names count as letters (the ``letters`` of
        :class:`~sklearn_fairaes.BowVectorizer`): the paper's A-Z, or the
        letters of every script. With ``"ascii"``, essays written mostly in
        other letters are counted in ``meta["letters_dropped"]`` and named in
        a note. Recorded in ``meta["letters"]``.
    models : sequence of str or dict, default=None
        The models of the audit. With ``refit=True``: baselines to train,
        names from ``MODEL_NAMES`` (and ``"reference_similarity"`` for short
        answers) or a dict name -> regressor, where a regressor may also be a
        dict representation name -> regressor (settings tuned per
        representation, as in the paper); the named models are Ridge(alpha=1),
        a 100-tree random forest and gradient boosting (200 trees of depth 3,
        rate 0.05, 80% row subsampling), both with sqrt features per split.
        A trained baseline is audited under its own representation only. With
        ``refit=False``: a dict name -> fitted estimator (or pipeline) that
        takes a list of essay texts and returns one score each; it is used as
        it is, never refitted, and audited under every representation. None
        trains ``("ridge", "random_forest", "gradient_boosting")`` when no
        ``systems`` are given and nothing otherwise.
    refit : bool or collection of str, default=True
        True: every model is a baseline to train. False: every model is a
        fitted estimator. A collection of model names: those are trained,
        the others are fitted estimators.
    scorers : dict of str to str or estimator, default=None
        Scorers you call, each audited as a system of kind "fitted" (like a
        model with ``refit=False``: it scores the essays and re-scores the
        edited essays of the counterfactual section). A value is a spec --
        ``"python:package.module:function"`` or an ``http://`` / ``https://``
        URL speaking the protocol of
        :class:`~sklearn_fairaes.scorers.HTTPScorer` -- or a scorer object
        (:class:`~sklearn_fairaes.scorers.HTTPScorer`, any estimator with
        ``predict``). A spec's answers are kept in
        ``scorer_responses.sqlite`` of the ``cache`` folder, so a re-run
        sends no call, and the declared ``score_range`` (one scale for every
        prompt) as theirs: a score off it is retried, then refused. Each
        scorer first scores the first 3 essays: one
        that cannot be reached or answers unusably is refused then, naming
        it. Without ``models``, no baseline is trained.
    scored_edits : dict of str to str, path or DataFrame, default=None
        Systems scored offline: name -> the file ``fairaes export-edits``
        wrote (every text this audit asks a scorer for: essays, edits,
        paraphrases), with its ``score`` column filled in. Each is audited
        exactly as a scorer you call would be, its answers read from the
        file by the text's SHA-256. Before any work, the file is refused
        (naming text ids and lines) when a score is empty, not a number or
        not finite, a text no longer matches its id, an id repeats, or a
        text the audit needs is missing (a file of another data set, or
        exported with other options).
    cv : int, default=5
        Number of folds of the shuffled ``KFold`` that gives the trained
        baselines' out-of-fold predictions, between 2 and the number of
        essays of the smallest prompt.
    paraphrases : str, sequence of str or None, default=None
        A column name or one paraphrase per essay; when None, paraphrases are
        made with :class:`~sklearn_fairaes.paraphrase.WordNetParaphraser`;
        False skips them (no WordNet paraphrasing) and the paraphrase
        section says so. A blank
        paraphrase is refused, naming its rows.
    reference_col : str, default=None
        Short answers: the column of each answer's reference answer(s). Human
        and system grades are then scaled to [0, 1] by the score scale, and
        the grading section (RMSE, wRMSE per question and overall) and the
        reference coverage replace the QWK agreement.
    reference_sep : str, default=None
        The separator between several reference answers in one cell.
    random_state : int, default=0
        Seed of the folds, the models, the sampled pairs and essays and the
        generated paraphrases, so that a run can be repeated exactly.
    n_jobs : int, default=None
        Number of jobs to run in parallel (joblib); ``None`` means 1 unless in
        a :obj:`joblib.parallel_config` context, ``-1`` means all processors.
    grammar : str, default=None
        A LanguageTool server URL (or ``"local"``); without it ``language_errors``
        is left out and the report says so.
    features : bool, default=True
        False skips the interpretable features (with the paraphrases, the
        slowest part of a first run): the extreme pairs are listed without their features, the
        feature-difference profile is left out and the error section relates
        the errors to the covariates only (or is left out); the report's
        settings and those sections say that they were skipped.
    sbert_model : str, default="all-MiniLM-L6-v2"
        The Sentence-BERT model of the ``"sbert"`` representation and of the
        prompt-similarity feature (a name or a folder, see
        :func:`~sklearn_fairaes.resources.resolve_sbert_model`).
    sbert_backend : str, default="torch"
        What runs that model, the ``backend`` of
        :class:`~sklearn_fairaes.SentenceBertEncoder`: ``"torch"`` (the exact
        float32 vectors), ``"torch-bf16"`` (the model in bfloat16, faster on
        CPUs with AMX or AVX512-BF16), ``"onnx"`` or ``"onnx-int8"``. Another
        name raises a ValueError listing them, before any work.
    device : str, default=None
        Torch device of every neural encoder the audit makes (``"cpu"``,
        ``"cuda"``); None: each library's default. ``"cuda"`` on a machine
        without CUDA raises a ValueError before any work.
    k_extreme : int, default=1
        Number of nearest and farthest pairs shown per representation.
    n_profile_pairs : int, default=10000
        Pairs per group of the feature-difference profile (capped at a tenth of
        all pairs).
    n_paraphrase_samples : int, default=100
        Essays sampled for the paraphrase-robustness ranking (at most all of
        them), and drawn for the score change under paraphrase: every system
        that can score a text re-scores their paraphrases (tables
        ``"paraphrase_scores"`` and ``"paraphrase_essays"``); with a trained
        baseline at most a fifth of the essays is drawn, and the baseline is
        refitted on the others, as for the counterfactual edits.
    perturbations : None, "default", "all", str or list of str, default=None
        Adds the counterfactual audit (see *Perturbation tables* below): names
        from :data:`~sklearn_fairaes.perturb.PERTURBATION_NAMES`, ``"default"``
        (every default perturbation; ``prompt_stuffing`` only with a prompt
        text) or ``"all"``. None leaves it out.
    n_perturbation_essays : int, default=200
        Essays edited by the counterfactual audit: a random sample held out
        from the baselines it audits (at most a fifth of the essays).
    n_review : int, default=20
        Essays listed per representation and system in the essays to review
        (largest gap to their nearest neighbours first), and worst pairs in
        the table of Lipschitz violations; the report shows the first few of
        each, the tables all of them.
    n_neighbors : int, default=5
        Nearest other essays each essay is compared with for the essays to
        review (:func:`~sklearn_fairaes.metrics.essay_consistency`); a
        prompt with this many essays or fewer uses all its other essays, with
        a note.
    n_bootstrap : int, default=1000
        Essay-level bootstrap replicates behind the confidence intervals of
        the headline figures (the ``*_ci_low`` and ``*_ci_high`` columns):
        essays are resampled within each prompt, and every statistic is
        recomputed on the resampled essays by weighting them (pair statistics
        from one pass over the pairs; see ``sklearn_fairaes.metrics``). The
        replicates are drawn from ``random_state``, the prompt and the
        essays' ids, so two audits of the same essays pair (``sf.compare``).
        0 computes no intervals.
    confidence_level : float, default=0.95
        Coverage of the intervals (percentile intervals of the replicates).
    smd_method : {"pooled", "unpooled"}, default="unpooled"
        The SD that divides the standardized mean difference of the
        agreement table (machine minus human) and its acceptance flag
        (\\|SMD\\| <= 0.15): ``"unpooled"``, the human scores' SD, which is
        RSMTool's ``rsmeval`` default, so the table's ``smd`` equals RSMTool's;
        ``"pooled"``, ``sqrt((sd_h ** 2 + sd_m ** 2) / 2)`` as in Williamson et
        al. (2012), which earlier reports of this package showed. The report says
        which it shows. (RSMTool's ``"johnson"`` and ``"williamson"`` divide
        by population SDs, for subgroups: on the whole data they are these
        two.) The paper's own formula stays in ``abs_smd_paper``.
    intersections : bool, default=False
        Also analyse the intersections of the groupings (``group_col`` and
        ``bin_cols``), every combination of two or more, as groupings of their
        own named ``"race & gender"`` with labels such as ``"race=Black &
        gender=F"``.
    min_group_size : int, default=30
        The essays a group needs to be tested: a smaller group is reported
        (its n, means, SDs and estimates) but gets no flags, no intervals and
        no place in the fairness regressions (the report says "too small to
        test"). 30 is the usual floor of a group comparison; RSMTool's
        ``min_n_per_group`` has no default (every group is analysed) and
        drops small groups from its tables, while here they stay in view.
        With 1 and ``n_bootstrap > 0``, a group of one essay is refused (no
        bootstrap interval on fewer than 2 essays).
    cache : bool, str, path or EmbeddingCache, default=True
        Embedding cache of every encoder the audit makes (the ``"sbert"`` and
        ``"laser"`` representations, the ``prompt_similarity_sbert`` feature;
        paraphrases and edited essays go through the same encoders). True: the
        persistent per-user folder (``$SKLEARN_FAIRAES_CACHE``, else
        ``~/.cache/sklearn_fairaes/embeddings`` or the platform's cache
        folder), so that a re-run of the same audit encodes nothing; a folder:
        that one; False or None: in memory, for this process only. Entries are
        keyed by the model's weights (SHA-256), the backend, the options and
        the text. A folder that cannot be written gives a
        :class:`~sklearn_fairaes.exceptions.CacheWriteWarning` before any work
        and the vectors are kept in memory. ``meta["embedding_cache"]`` counts
        the texts encoded and those served from the cache. The POS tags
        and the WordNet paraphrases are kept in the same folder (they are
        deterministic; the same tags and paraphrases either way), and
        ``meta["result_cache"]`` counts those read from it and those
        computed. Transformers you pass in ``representations`` keep their own
        ``cache``.
    progress : bool, default=False
        Show a tqdm progress bar.
    title : str, default=None
        Title of the report; None gives "Individual-fairness audit".
    tune_interpreter : bool, default=False
        Let the audit change interpreter-wide settings while it runs, each
        put back when it returns: the SIGINT handler and
        ``sys.unraisablehook`` (so that a Ctrl-C landing in a finaliser,
        which Python would ignore, still stops the audit) and the GIL switch
        interval (0.2 ms instead of 5 while the WordNet paraphrases run beside
        the neural encoders: about 1.5 times the encoding speed). They hold
        for every thread of the process, so leave it False in a program that
        is not only the audit (a notebook, a server); the ``fairaes`` command
        sets it.
    sections : sequence of str, default=None
        The ids of the report's sections to run and show (see
        ``sklearn_fairaes.report.analyses.section_ids()``: ``"agreement"``,
        ``"extremes"``, ``"paraphrase"``, ``"lipschitz"``, ``"review"``,
        ``"groups"``, ``"counterfactual"``, ``"short_answers"``, ``"retest"``, and the
        ``"overview"`` and ``"summary"`` that open the report); None: all. A
        section left out is neither run nor shown, and ``meta["sections"]``
        lists those that were selected (absent when all were).
    bin_cols : dict of str to int, default=None
        Numeric columns cut into quantile bins that become groupings of the
        group view: ``{"word_count": 4}`` gives four groups of about equal
        size per prompt, labelled with their ranges (``"word_count Q1 [12,
        143]"``). Ties on a quantile merge bins (a note says so). A column
        with text or an empty cell, an unknown column or fewer than 2 bins is
        refused before any work.
    repeats : int, default=1
        Scores per essay from each scorer you call (``scorers``): with
        ``K >= 2`` each essay is scored K times (repeat 1 is the audit's
        score; each further repeat a call of its own, cached by its repeat
        index) and the section "Same essay, different score" (tables
        ``"retest"`` and ``"retest_essays"``) measures how often the scores
        differ; the ``"lipschitz"`` table gains ``retest_violation_share``.
        Given scores, trained baselines and fitted estimators are scored
        once (an estimator is deterministic by assumption); ``K >= 2``
        without a scorer you call is refused before any work.
    client : distributed.Client, default=None
        A Dask cluster's client (the ``dask`` extra): every prompt's
        per-essay work (POS tagging, feature counts, WordNet paraphrases) is
        mapped over its workers in chunks, which need the ``cache`` folder
        (a shared file system for remote workers); ``meta["per_essay"]``
        names the cluster. So is the Sentence-BERT encoding (the essays,
        given paraphrases, prompt texts; one model per worker), into that
        folder, with the local run's vectors; ``meta["encoding"]`` says what
        ran there, or why it ran here. The studies' pair passes (Lipschitz counts,
        review passes) run there too, over every worker thread, when
        ``n_jobs`` is None (``n_jobs=1`` keeps them here). The tables are
        those of a local run. None: on ``n_jobs`` local processes.

    Returns
    -------
    result : AuditResult
        The tables, figures and metadata of the run, ready to render with
        :meth:`AuditResult.save`, :meth:`AuditResult.to_html` or
        :meth:`AuditResult.to_json`.

    Raises
    ------
    AuditInputError
        For unusable data (missing column, non-numeric or non-finite score, a
        score off the scale, all scores equal, identical rater columns, a
        text column of numbers, empty essay, duplicate id, empty group label,
        a single group, a prompt with fewer than 4 essays or without its
        text, a reserved system name, a bin column with text, empty cells or
        fewer than 2 bins, a group of one essay to bootstrap, a fitted model without ``predict`` or
        predicting the wrong number of scores, a representation that finds
        no words, an unreachable ``grammar`` server, too many folds, ...),
        before any other computation. Rows are data rows counted from 1 (the
        file's header is not counted). Also, later, for what the user brings
        that fails during the run: a fitted model failing on essays edited by
        the counterfactual audit (the subclass ``ModelScoringError``, whose
        ``model`` is its name; a few edits are scored first, before any
        representation is fitted) and a ``grammar`` server failing on an
        essay after two retries (naming the server and the row). A missing
        Sentence-BERT model or LASER weights are refused before any work.
    KeyboardInterrupt
        On Ctrl-C. With ``tune_interpreter=True``, also one that lands in a
        finaliser (where Python would ignore it): called from the main thread
        with Python's own SIGINT handler, the audit delivers such an interrupt
        again instead of running on.

    Notes
    -----
    **Tables.** Every table has ``prompt`` first (``"all"`` without
    ``prompt_col``, ``"pooled"`` on pooled rows), then ``representation``
    and ``system`` where they apply; ``representation`` is ``""`` on the
    agreement rows of given and fitted systems (their scores do not depend on
    one). ``agreement`` also has ``kind`` (``"given"``, ``"fitted"``,
    ``"trained"``) and ``n_outside_scale`` (machine scores off the scale
    before RSMTool's trimming to ``[low - 0.4998, high + 0.4998]``).
    ``predictions`` has one column per system (``"<representation>+<model>"``
    for trained baselines).

    **Group tables.** With ``group_col`` or ``bin_cols``, four tidy tables put
    group fairness beside individual fairness, each a direct call of a metric
    function of :mod:`sklearn_fairaes.metrics` on the systems' scores, per
    grouping (column ``grouping``): ``"group_agreement"`` (with ``tested``,
    and bootstrap intervals of each tested group's SMD and DSM),
    ``"group_fairness"``, ``"group_fairness_coefficients"`` and
    ``"group_lipschitz"`` (whose ``overall`` row equals the ``"lipschitz"``
    table's ``lipschitz_minmax``).

    **Error tables.** Per system (and representation, for trained
    baselines), ``"error_correlates"`` relates the error (system minus human)
    to every interpretable feature and every ``covariate_cols`` column
    (Pearson's r with its Fisher-z interval and p-value, Spearman's rho, the
    error points per SD of the variable), ``"error_regression"`` regresses it
    on all of them jointly (standardised; HC3 robust errors) and
    ``"error_bins"`` gives its mean in quantile bins of each variable; see
    the module ``sklearn_fairaes.report.analyses._errors``.

    **Essays to review.** Per representation and system, and for the human
    scores (system ``"human"``: near-identical essays the raters scored far
    apart), ``"review_list"`` holds the ``n_review`` essays scored farthest
    from the mean of their ``n_neighbors`` nearest other essays
    (:func:`~sklearn_fairaes.metrics.essay_consistency`; essays scored like
    their neighbours are never listed), with the reason each is listed, and
    ``"review_neighbors"`` those neighbours, one row each;
    ``"lipschitz_violations"`` the ``n_review`` worst pairs of
    :func:`~sklearn_fairaes.metrics.lipschitz_violations` (min-max, ``L =
    1``); ``"essay_consistency"`` the consistency and the count of violating
    pairs; ``"lipschitz_constants"`` the smallest ``L`` at which 90, 95 and
    99% of the pairs satisfy the condition and ``"lipschitz_profile"`` the
    whole curve (:func:`~sklearn_fairaes.metrics.lipschitz_profile`).

    **Notes and warnings.** ``meta["notes"]`` records what the reader should
    know about the numbers: essays that became all-zero vectors under a
    representation, or lost most of their letters to it (another script:
    see ``letters``), the UserWarnings of the pair metrics (where they arose),
    an inferred score scale, and analyses left out of a prompt.
    ``meta["warnings"]`` lists, per prompt and representation, a
    representation under which most pair distances are 0 or one same value.
    ``meta["absent_sections"]`` says why an analysis did not run (e.g. the
    counterfactual audit with scores only): one reason, or a dict prompt ->
    reason when it ran on some prompts only.

    **Perturbation tables.** With ``perturbations``, every trained baseline
    is refitted as one pipeline on all essays but a random sample of
    ``n_perturbation_essays`` (held out), fitted systems score the edits as
    they are, and :func:`~sklearn_fairaes.perturb.perturbation_audit` edits
    the sample and scores the edits. Given scores cannot be re-scored.

    Examples
    --------
    Audit an engine's scores (here a noisy copy of the human scores) on a
    declared 0-12 scale:

    >>> import numpy as np
    >>> import sklearn_fairaes as sf
    >>> df = sf.load_demo_essays().iloc[:40]
    >>> rng = np.random.default_rng(0)
    >>> df = df.assign(engine=np.clip(df["score"] + rng.integers(-1, 2, 40), 0, 12))
    >>> res = sf.audit(df, text_col="essay", score_col="score", systems=["engine"],
    ...                score_range=(0, 12), representations=["tfidf"],
    ...                paraphrases="paraphrase")
    >>> res.tables["agreement"][["prompt", "representation", "system", "kind"]].values.tolist()
    [['all', '', 'engine', 'given']]
    >>> res.tables["lipschitz"]["system"].tolist()
    ['engine', 'human']
    """
    # every option declared in report._config, as passed (checked by plan_audit)
    arguments = locals()
    from ..features._persist import result_counts
    from ._analysis_cache import AnalysisCache
    from ._study_cache import counts as study_counts
    from .analyses import selected

    started = time.time()
    results_before = result_counts()
    studies_before = study_counts()
    plan, embedding_cache, (hits, misses) = _prepare(arguments)
    # a scored file holds every text the audit needs, or it stops here
    check_scored_files(plan)
    check_repeats(plan)
    chosen = [s for s in selected(plan.settings.sections) if s.analysis is not None]
    bar = Progress(progress, Progress.steps(plan, len(chosen)))
    # a Ctrl-C stops the audit even where it lands in a finaliser; only when
    # asked: the handler and the hook are the whole process's
    guard = interrupts_kept() if tune_interpreter else contextlib.nullcontext()
    with guard:
        try:
            # outputs kept in the cache folder, keyed by all they read (issue 35)
            kept = AnalysisCache(embedding_cache)
            # here, or each prompt's study a task (a client's workers, n_jobs processes)
            studies, vector_counts, runs = build_and_run(plan, chosen, bar, kept)
        finally:
            bar.close()
    tables = _stack(studies, runs, chosen)
    tables.update(_data_tables(studies))
    meta = _meta(plan, studies, runs, started, title)
    # essays that became empty vectors, or lost most of their letters, per
    # representation (each named in a note)
    meta.update(vector_counts)
    meta.update(run_place(plan.settings.client, plan.settings.n_jobs))  # where it ran
    # how much encoding this run did: 0 encoded on a re-run with the cache filled
    meta["embedding_cache"] = {
        "folder": None if embedding_cache.path is None else str(embedding_cache.path),
        "encoded": embedding_cache.misses - misses,
        "served": embedding_cache.hits - hits,
    }
    # the same for the POS tags and WordNet paraphrases kept in that folder
    # (counted in this process: with n_jobs > 1 the features' workers count theirs)
    meta["result_cache"] = {
        kind: {
            field: n - results_before.get(kind, {}).get(field, 0)
            for field, n in counts.items()
        }
        for kind, counts in result_counts().items()
    }
    if embedding_cache.path is not None:
        meta["analysis_cache"] = kept.counts()
        # the representations' and features' fits read back (_study_cache)
        meta["study_cache"] = {k: n - studies_before[k] for k, n in study_counts().items()}
    result = AuditResult(tables, meta, replicates=_replicates(studies, runs))
    if embedding_cache.path is not None:  # the figures' PNGs are kept there too
        result._figure_cache = embedding_cache
    return result


def _prepare(
    arguments: Mapping[str, Any],
) -> tuple[Plan, EmbeddingCache, tuple[int, int]]:
    """audit()'s arguments checked and resolved into its plan; nothing computed.

    Also the embedding cache it opened and the cache's (hits, misses) before
    the plan (``report._edits`` plans the texts to export with it).
    """
    from ..text._cache import open_cache
    from ._cluster import check_client
    from ._edits import with_scored_edits

    settings = AuditConfig(
        tune_interpreter=bool(arguments["tune_interpreter"]),
        **{name: arguments[name] for name in AuditConfig().options},
    )
    if settings.sections is not None:
        # one id as a str, or any sequence of ids: kept as a tuple (its meta entry)
        ids = settings.sections
        settings.sections = (ids,) if isinstance(ids, str) else tuple(ids)
    embedding_cache = open_cache(arguments["cache"])
    settings.cache = embedding_cache
    # a switch of the call, like tune_interpreter: where the per-essay work runs
    settings.client = check_client(arguments["client"])
    # scorers you call are fitted models; those given as specs keep their
    # answers beside the embeddings, so that a re-run sends nothing; a
    # scored file is a scorer that answers from the file
    scorers = with_scored_edits(arguments["scorers"], arguments["scored_edits"])
    refit = arguments["refit"]
    settings.models, refit = merge_scorers(
        settings.models,
        refit,
        scorers,
        scorer_cache_path(embedding_cache.path),
        declared_scale(arguments["score_range"]),
    )
    counts = (embedding_cache.hits, embedding_cache.misses)
    _check_sections(settings.sections)
    plan = plan_audit(
        arguments["data"],
        **{
            name: arguments[name]
            for name in (
                "text_col",
                "score_col",
                "rater_cols",
                "score_range",
                "score_step",
                "prompt",
                "prompt_col",
                "prompts",
                "group_col",
                "bin_cols",
                "covariate_cols",
                "id_col",
                "systems",
                "paraphrases",
                "embeddings",
                "reference_col",
                "reference_sep",
            )
        },  # fmt: skip
        refit=refit,
        settings=settings,
    )
    return plan, embedding_cache, counts


def _replicates(
    studies: Sequence[Study], runs: Mapping[str, Sequence[AnalysisOutput | str]]
) -> dict[tuple[str, str, str, str, str], NDArray[np.float64]]:
    """Every analysis's bootstrap replicates, keyed by prompt, table, representation, system, column."""
    out: dict[tuple[str, str, str, str, str], NDArray[np.float64]] = {}
    for outputs in runs.values():
        for study, output in zip(studies, outputs):
            if isinstance(output, str):
                continue
            for key, values in output.replicates.items():
                out[(study.prompt, key[0], key[1], key[2], key[3])] = values
    return out


def _check_sections(ids: tuple[str, ...] | None) -> None:
    """``sections=``: known section ids only, refused before any work."""
    from .analyses import section_ids

    if ids is None:
        return
    valid = section_ids()
    unknown = [s for s in ids if not isinstance(s, str) or s not in valid]
    if unknown:
        raise AuditInputError(
            f"sections: unknown section id(s) {', '.join(map(repr, unknown))}; the valid "
            f"ids are {', '.join(valid)} (on the command line: --sections "
            "agreement,lipschitz,...)"
        )


def _with_prompt(frame: DataFrame, prompt: str) -> DataFrame:
    frame = frame.copy()
    frame.insert(0, "prompt", prompt)
    return frame


def _stack(
    studies: Sequence[Study],
    runs: Mapping[str, Sequence[AnalysisOutput | str]],
    sections: Sequence[Section],
) -> dict[str, DataFrame]:
    """Every analysis's tables over the studies, ``prompt`` first, with pooled rows."""
    pd = require("pandas", purpose="the audit")
    parts: dict[str, list[DataFrame]] = {}
    for outputs in runs.values():
        for study, output in zip(studies, outputs):
            if isinstance(output, str):
                continue
            for name, frame in output.tables.items():
                parts.setdefault(name, []).append(_with_prompt(frame, study.prompt))
    tables = {name: pd.concat(frames, ignore_index=True) for name, frames in parts.items()}
    if len(studies) > 1:
        for section in sections:
            if section.pool is not None:
                tables = section.pool(tables, studies)
    return tables


def _data_tables(studies: Sequence[Study]) -> dict[str, DataFrame]:
    """The ``predictions`` and ``features`` tables: one row per essay."""
    pd = require("pandas", purpose="the audit")
    preds, feats = [], []
    for study in studies:
        frame = pd.DataFrame(
            {"prompt": study.prompt, "id": study.ids, "score": study.human}
        )
        for system in study.systems.values():
            for rname, scores in system.scores.items():
                frame[system.name if rname is None else f"{rname}+{system.name}"] = scores
        preds.append(frame)
        if study.features is not None:
            f = pd.DataFrame(study.features, columns=study.feature_names)
            f.insert(0, "id", study.ids)
            f.insert(0, "prompt", study.prompt)
            feats.append(f)
    out = {"predictions": pd.concat(preds, ignore_index=True)}
    if feats:
        out["features"] = pd.concat(feats, ignore_index=True)
    return out


def _meta(
    plan: Plan,
    studies: Sequence[Study],
    runs: Mapping[str, Sequence[AnalysisOutput | str]],
    started: float,
    title: str | None,
) -> dict[str, Any]:
    """What was run, what was left out and why, versions and timing."""
    several = len(studies) > 1

    def at(study: Study, text: str) -> str:
        return f"Prompt {study.prompt!r}: {text}" if several else text

    notes: list[str] = []
    warnings_: list[dict[str, str]] = []
    for study in studies:
        notes += [at(study, t) for t in study.notes]
        warnings_ += [{"prompt": study.prompt, **w} for w in study.warnings]
    # one reason when the analysis is absent from every prompt for one reason,
    # else the reason of each prompt it is absent from
    absent: dict[str, str | dict[str, str]] = {}
    for name, outputs in runs.items():
        reasons = {s.prompt: o for s, o in zip(studies, outputs) if isinstance(o, str)}
        if len(reasons) == len(outputs) and len(set(reasons.values())) == 1:
            absent[name] = next(iter(reasons.values()))
        elif reasons:
            absent[name] = reasons
        for study, output in zip(studies, outputs):
            if isinstance(output, str):
                continue
            notes += [at(study, t) for t in output.notes]
            warnings_ += [{"prompt": study.prompt, **w} for w in output.warnings]
    inferred = [s for s in studies if s.score_range_source == "inferred"]
    if inferred:
        lo, hi = inferred[0].score_range
        scale = (
            f"Score scale {lo:g} to {hi:g} inferred from the human scores"
            if not several
            else "Score scales of prompt(s) "
            + ", ".join(f"{s.prompt!r} ({s.score_range[0]:g} to {s.score_range[1]:g})"
                        for s in inferred)
            + " inferred from their human scores"
        )  # fmt: skip
        notes.append(
            f"{scale} (their lowest and highest); declare it with score_range=(low, "
            f"high) (--score-range low,high) when the rubric's scale is wider."
        )
    first = studies[0]
    systems = {
        name: {"kind": s.kind, "description": s.description}
        for name, s in first.systems.items()
    }
    return {
        # the layout of results.json: AuditResult.load refuses a newer one
        "report_format": REPORT_FORMAT,
        "title": title or "Individual-fairness audit",
        "n_essays": len(plan.essays),
        "score_min": float(plan.human.min()),
        "score_max": float(plan.human.max()),
        "score_range": None if several else list(first.score_range),
        "score_range_source": None if several else first.score_range_source,
        "score_ranges": {s.prompt: [*s.score_range, s.score_range_source] for s in studies},
        "prompts": [s.prompt for s in studies],
        "prompt_col": plan.prompt_col,
        "n_essays_by_prompt": {s.prompt: s.n for s in studies},
        "text_col": plan.text_col,
        "score_col": plan.score_col,
        "rater_cols": None if plan.rater_cols is None else list(plan.rater_cols),
        "score_step": plan.score_step,
        "group_col": ", ".join(plan.group_col) or None,
        "groupings": None if plan.groupings is None else plan.groupings.names(),
        "bin_cols": None
        if plan.groupings is None
        else [n for n, k in plan.groupings.kinds.items() if k == "bins"],
        "covariate_cols": list(plan.covariates),
        "reference_col": plan.reference_col,
        "short_answer": plan.short_answer,
        "prompt_given": any(t is not None for t in plan.prompt_texts.values()),
        "representations": list(plan.representations),
        "systems": systems,
        "models": list(plan.trained),
        "model_settings": {
            m: {r: describe_model(v[r]) for r in plan.representations}
            if isinstance(v, dict)
            else systems[m]["description"]
            if isinstance(v, str)
            else describe_model(v)
            for m, v in plan.trained.items()
        },
        "cv": plan.settings.cv,
        "random_state": plan.settings.random_state,
        "n_bootstrap": plan.settings.n_bootstrap,
        "confidence_level": plan.settings.confidence_level,
        "smd_method": plan.settings.smd_method,
        "intersections": plan.settings.intersections,
        "min_group_size": plan.settings.min_group_size,
        **({"repeats": plan.settings.repeats} if plan.settings.repeats > 1 else {}),
        # the essays each prompt resampled: two audits pair where these agree
        "ids_digest": {s.prompt: ids_digest(s.ids) for s in studies},
        "features": list(first.feature_names),
        "omitted_features": plan.omitted_features,
        "paraphrase_source": first.paraphrase_source,
        # what the user chose to skip (features=False, paraphrases=False), and why
        "skipped": dict(first.skipped),
        # the user's own vectors: where each came from and its dimensions
        "embeddings": {
            name: {"source": rep.source, "dims": int(rep.vectors.shape[1])}
            for name, rep in plan.representations.items()
            if isinstance(rep, GivenEmbeddings)
        },
        "perturbations": (
            None
            if plan.settings.perturbations is None
            else list(plan.settings.perturbations)
        ),
        "sbert_model": plan.settings.sbert_model
        if "sbert" in plan.representations
        else None,
        # which backend made the vectors: a torch-bf16 report's numbers differ
        # from torch's in the fourth digit
        "sbert_backend": plan.settings.sbert_backend
        if "sbert" in plan.representations
        else None,
        "device": plan.settings.device,
        "letters": plan.settings.letters,
        "absent_sections": absent,
        # only when chosen, so that a full audit's results keep their form
        **(
            {}
            if plan.settings.sections is None
            else {"sections": list(plan.settings.sections)}
        ),
        "versions": _versions(),
        "started": datetime.fromtimestamp(started, timezone.utc).isoformat(
            timespec="seconds"
        ),
        "seconds": round(time.time() - started, 1),
        "notes": notes,
        "warnings": warnings_,
    }


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"sklearn_fairaes": __version__, "python": platform.python_version()}
    for pkg in (
        "scikit-learn",
        "numpy",
        "scipy",
        "pandas",
        "sentence-transformers",
        "torch",
    ):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out
