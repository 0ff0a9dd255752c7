"""Scoring offline: the texts a scorer is asked for, exported and read back.

``fairaes export-edits`` (``report._export``) writes every text the audit would ask a scorer for
-- the essays, the counterfactual edits, the paraphrases -- one row per text
with a stable id; the user scores them anywhere and fills the ``score``
column; ``audit(scored_edits={name: file})`` (``--scored-edits NAME=FILE``)
audits ``name`` as it would a live scorer, through a lookup scorer that
answers each text from the file.

One generator, :func:`needed_texts`, lists the texts from the audit's plan:
the export writes its list and the audit checks the file against it before
any long work, so the two cannot drift. It draws the same essays as the
sections that re-score texts (``analyses._counterfactual.held_out``), edits
them with the same perturbations and seed, and takes the same paraphrases
(the given column, or the WordNet paraphrases from the audit's cache).

A text's id is ``<essay id>:<kind>:<edit>:<k>:r<repeat>:<hash>``, where
``hash`` is the first 12 hex digits of the text's SHA-256: the same data and
options give the same ids on any machine, and a text changed in the file
(a spreadsheet that trimmed or re-encoded it) no longer matches its id. The
lookup is keyed by the text's full SHA-256 and the repeat index (0: one
score per text; 1 to K-1 for the essays' repeated scorings, ``repeats=K``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, RegressorMixin

from ._config import AuditInputError

if TYPE_CHECKING:
    from pandas import DataFrame

    from ._build import Plan

__all__ = [
    "EXPORT_COLUMNS",
    "NeededText",
    "ScoredTexts",
    "needed_texts",
    "read_scored",
    "with_scored_edits",
]

#: The columns of an export file, in order (``score`` left empty).
EXPORT_COLUMNS = (
    "text_id",
    "essay_id",
    "prompt",
    "kind",
    "edit",
    "repeat",
    "text",
    "score",
)
#: The columns a scored file must keep.
REQUIRED = ("text_id", "repeat", "text", "score")
#: Hex digits of the text's SHA-256 at the end of its id.
HASH_CHARS = 12
#: Ids named in a message, at most.
SHOWN = 5


def text_sha256(text: str) -> str:
    """The SHA-256 of ``text`` (UTF-8), in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class NeededText:
    """One text the audit would ask a scorer for; see the module docstring."""

    essay_id: str
    prompt: str
    kind: str  # "original", "edit" or "paraphrase"
    edit: str  # the perturbation's name for an edit, else ""
    k: int
    repeat: int
    text: str

    @property
    def sha256(self) -> str:
        """The text's SHA-256."""
        return text_sha256(self.text)

    @property
    def text_id(self) -> str:
        """The stable id of the text (see the module docstring)."""
        return (
            f"{self.essay_id}:{self.kind}:{self.edit}:{self.k}:r{self.repeat}:"
            f"{self.sha256[:HASH_CHARS]}"
        )


def _rescoring_baseline(plan: Plan) -> bool:
    """Whether a trained baseline re-scores texts (the draws then hold out a fifth)."""
    from ._build import REFERENCE_MODEL

    return any(m != REFERENCE_MODEL for m in plan.trained)


def _chosen(plan: Plan, section: str) -> bool:
    sections = plan.settings.sections
    return sections is None or section in sections


def _paraphrases(plan: Plan, rows: NDArray[np.intp], essays: list[str]) -> list[str] | None:
    """The prompt's paraphrases as the audit takes them, or None when it has none."""
    from ._build import _wordnet_paraphrases

    if plan.paraphrases is not None:
        return [plan.paraphrases[i] for i in rows]
    if not plan.make_paraphrases:
        return None
    try:  # from the audit's cache when it made them before
        return _wordnet_paraphrases(essays, plan.settings)
    except (ImportError, LookupError):  # the audit skips the section, and so do we
        return None


def needed_texts(plan: Plan) -> list[NeededText]:
    """Every text the audit of ``plan`` would ask a fitted system for, in a stable order.

    Per prompt: each essay (``"original"``), then the counterfactual edits
    of the drawn essays, and of the few essays whose edits are probed first
    (``_build.probed_rows``), that differ from them (``"edit"``, with
    ``perturbations``), then the paraphrases of the drawn essays that differ
    from them (``"paraphrase"``; not for short answers). Sections left out
    (``sections``), or with no representation that embeds new texts, need
    none of theirs.
    """
    from ..perturb._registry import resolve_perturbations
    from ._build import probed_rows
    from ._embeddings import GivenEmbeddings
    from .analyses._counterfactual import held_out
    from .analyses._paraphrase_scores import paraphrase_sample

    settings = plan.settings
    trained = _rescoring_baseline(plan)
    embeds = any(not isinstance(r, GivenEmbeddings) for r in plan.representations.values())
    out: list[NeededText] = []
    for p in plan.prompts:
        rows = plan.rows_of(p)
        essays = [plan.essays[i] for i in rows]
        ids = [str(plan.ids[i]) for i in rows]
        out += [NeededText(i, p, "original", "", 0, 0, e) for i, e in zip(ids, essays)]
        # repeats (test-retest): each essay again, under its repeat index
        for r in range(1, int(settings.repeats)):
            out += [NeededText(i, p, "original", "", 0, r, e) for i, e in zip(ids, essays)]
        if (
            settings.perturbations is not None
            and embeds
            and _chosen(plan, "counterfactual")
        ):
            held = held_out(
                len(rows), settings.n_perturbation_essays, settings.random_state, trained
            )
            # and the essays whose edits a fitted system scores first (a probe)
            probed = np.searchsorted(rows, probed_rows(plan, p))
            held = np.union1d(held, probed)
            sample = [essays[j] for j in held]
            for label, perturbation in resolve_perturbations(
                list(settings.perturbations),
                prompt=plan.prompt_texts[p],
                random_state=settings.random_state,
            ):
                perturbation.fit()
                texts, _ = perturbation.transform_with_records(sample)
                out += [
                    NeededText(ids[j], p, "edit", label, 0, 0, t)
                    for j, t, o in zip(held, texts, sample)
                    if t != o
                ]
        if plan.short_answer or not embeds or not _chosen(plan, "paraphrase"):
            continue
        paraphrases = _paraphrases(plan, rows, essays)
        if paraphrases is None:
            continue
        for j in paraphrase_sample(len(rows), settings, trained):
            if paraphrases[j] != essays[j]:
                out.append(NeededText(ids[j], p, "paraphrase", "", 0, 0, paraphrases[j]))
    return out


def needed_frame(needed: Sequence[NeededText]) -> DataFrame:
    """The export file's rows: one per distinct text id, ``score`` empty."""
    from ..resources import require

    pd = require("pandas", purpose="the export of texts to score")
    seen: dict[str, NeededText] = {}
    for t in needed:
        seen.setdefault(t.text_id, t)
    return pd.DataFrame(
        [
            (i, t.essay_id, t.prompt, t.kind, t.edit, t.repeat, t.text, "")
            for i, t in seen.items()
        ],
        columns=list(EXPORT_COLUMNS),
    )


# -- reading a scored file ------------------------------------------------------------


def _rows(index: Sequence[int]) -> str:
    shown = ", ".join(str(i + 2) for i in index[:SHOWN])
    return f"line(s) {shown}{', ...' if len(index) > SHOWN else ''}"


def _ids(values: Sequence[str]) -> str:
    shown = ", ".join(repr(v) for v in values[:SHOWN])
    return f"{shown}{', ...' if len(values) > SHOWN else ''}"


def read_scored(source: Any, where: str) -> dict[tuple[str, int], tuple[float, str]]:
    """A scored file as ``(text SHA-256, repeat) -> (score, text id)``, or AuditInputError.

    ``source`` is a DataFrame or the path of a ``.csv``/``.tsv`` file that
    ``fairaes export-edits`` wrote and the user scored; ``where`` names it
    in messages. Refused, naming the text ids and file lines: a missing
    column, duplicate text ids, an empty, non-numeric or non-finite score, a
    text that no longer matches its id, a repeat that is not a whole number
    >= 0, and one text scored twice with two scores.
    """
    from .._table_input import BadInput, read_table
    from ..resources import require

    pd = require("pandas", purpose="reading a scored file")
    if isinstance(source, (str, os.PathLike)):
        try:
            frame = read_table(source)
        except BadInput as exc:
            raise AuditInputError(f"{where}: {exc}") from None
    elif isinstance(source, pd.DataFrame):
        frame = source.reset_index(drop=True)
    else:
        raise AuditInputError(
            f"{where} is {type(source).__name__}; give the path of the file fairaes "
            f"export-edits wrote, scored, or a DataFrame of it"
        )
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise AuditInputError(
            f"{where} has no column(s) {', '.join(missing)}; a scored file is the one "
            f"fairaes export-edits wrote ({', '.join(EXPORT_COLUMNS)}) with the score "
            f"column filled in"
        )
    ids = frame["text_id"].map(lambda v: "" if v is None else str(v)).tolist()
    dup = frame.index[frame["text_id"].duplicated(keep=False)].tolist()
    if dup:
        raise AuditInputError(
            f"{where}: text ids appear more than once ({_ids([ids[i] for i in dup])} at "
            f"{_rows(dup)}); keep one row per text id, as exported"
        )
    raw = frame["score"].tolist()
    empty = [i for i, v in enumerate(raw) if v is None or str(v).strip() == ""]
    if empty:
        raise AuditInputError(
            f"{where}: {len(empty)} text(s) have no score (text id(s) "
            f"{_ids([ids[i] for i in empty])}, {_rows(empty)}); fill in the score "
            f"column of every row"
        )
    scores = np.empty(len(raw))
    for i, v in enumerate(raw):
        try:
            scores[i] = float(str(v).strip()) if not isinstance(v, (int, float)) else v
        except ValueError:
            raise AuditInputError(
                f"{where}: the score of text id {ids[i]!r} ({_rows([i])}) is {str(v)!r}, "
                f"not a number; give one number per text"
            ) from None
    bad = np.flatnonzero(~np.isfinite(scores)).tolist()
    if bad:
        raise AuditInputError(
            f"{where}: {len(bad)} score(s) are not finite numbers (text id(s) "
            f"{_ids([ids[i] for i in bad])}, {_rows(bad)}); a score must be a finite "
            f"number"
        )
    texts = frame["text"].tolist()
    out: dict[tuple[str, int], tuple[float, str]] = {}
    changed: list[int] = []
    for i, (tid, text, rep) in enumerate(zip(ids, texts, frame["repeat"].tolist())):
        text = "" if text is None else str(text)
        digest = text_sha256(text)
        if not tid.endswith(":" + digest[:HASH_CHARS]):
            changed.append(i)
            continue
        try:
            repeat = int(str(rep).strip())
        except ValueError:
            repeat = -1
        if repeat < 0:
            raise AuditInputError(
                f"{where}: the repeat of text id {tid!r} ({_rows([i])}) is {str(rep)!r}; "
                f"it must be a whole number >= 0, as exported"
            )
        key = (digest, repeat)
        if key in out and out[key][0] != scores[i]:
            raise AuditInputError(
                f"{where}: text ids {out[key][1]!r} and {tid!r} hold the same text with "
                f"two scores ({out[key][0]:g} and {scores[i]:g}); give a text one score"
            )
        out[key] = (float(scores[i]), tid)
    if changed:
        raise AuditInputError(
            f"{where}: {len(changed)} text(s) no longer match their text id (text id(s) "
            f"{_ids([ids[i] for i in changed])}, {_rows(changed)}): the text was changed "
            f"after the export (a spreadsheet may trim spaces or change line ends); "
            f"score a fresh export and change only the score column"
        )
    return out


class ScoredTexts(RegressorMixin, BaseEstimator):
    """A scorer that answers each text from a scored file (scoring offline).

    Parameters
    ----------
    source : DataFrame, str or path-like
        The file ``fairaes export-edits`` wrote, with the ``score`` column
        filled in (see :func:`read_scored`).
    name : str, default="scored_edits"
        How messages name it (``--scored-edits NAME=FILE``).

    Attributes
    ----------
    scores_ : dict
        ``(text SHA-256, repeat) -> (score, text id)``.
    """

    #: Answers ``_scores(X, repeat=)`` from the file's ``repeat`` column.
    _repeatable = True

    def __init__(self, source: Any = None, name: str = "scored_edits") -> None:
        self.source = source
        self.name = name

    def fit(self, X: Any = None, y: Any = None) -> ScoredTexts:
        """Read and check the file; nothing is learned."""
        self.scores_ = read_scored(self.source, self.name)
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "scores_")

    def _description(self) -> str:
        # the report's words for it (describe_model): the file, not its rows
        return f"scores read from {self.name} (scored offline)"

    def predict(self, X: Sequence[str]) -> NDArray[np.float64]:
        """The file's score of each text, or a ScorerError naming the first missing one."""
        return self._scores(X, repeat=0)

    def _scores(self, X: Sequence[str], *, repeat: int) -> NDArray[np.float64]:
        # the repeat-th scoring of each text (``repeats``), as CallScorer's
        from sklearn.utils.validation import check_is_fitted

        from ..scorers._base import ScorerError
        from ._inputs import short

        check_is_fitted(self)
        texts = list(X)
        out = np.empty(len(texts))
        missing: list[int] = []
        for i, text in enumerate(texts):
            hit = self.scores_.get((text_sha256(str(text)), int(repeat)))
            if hit is None:
                missing.append(i)
            else:
                out[i] = hit[0]
        if missing:
            raise ScorerError(
                f"{len(missing)} of the {len(texts)} texts are not in {self.name}"
                + (f" for repeat {repeat}" if repeat else "")
                + " (the "
                f"first begins {short(str(texts[missing[0]]), 60)}); export the texts "
                f"with fairaes export-edits and the options of this audit, and score them",
                self.name,
                position=missing[0],
            )
        return out

    def check_covers(self, needed: Sequence[NeededText], system: str) -> None:
        """Refuse, before the long work, a file lacking texts the audit needs."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        missing = [t for t in needed if (t.sha256, t.repeat) not in self.scores_]
        if not missing:
            return
        originals = [t for t in needed if t.kind == "original"]
        found = sum((t.sha256, t.repeat) in self.scores_ for t in originals)
        hint = (
            "none of the data's essays is in it: it was exported from another data set"
            if originals and found == 0
            else "export the texts with fairaes export-edits and the same options as "
            "this audit (data, columns, --perturbations, --models, the sample sizes, "
            "--random-state), and score them all"
        )
        kinds = sorted({t.kind for t in missing})
        raise AuditInputError(
            f"scored_edits {system!r} ({self.name}): {len(missing)} of the {len(needed)} "
            f"texts the audit needs are not in the file ({', '.join(kinds)}; text id(s) "
            f"{_ids([t.text_id for t in missing])}); {hint}"
        )


def with_scored_edits(
    scorers: Mapping[str, Any] | None, scored_edits: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """``scorers`` with each scored file added as a lookup scorer (read and checked now)."""
    from ._inputs import short

    if scored_edits is None:
        return scorers
    if not isinstance(scored_edits, Mapping) or not scored_edits:
        raise AuditInputError(
            f"scored_edits must be a non-empty dict name -> scored file (a path or "
            f"DataFrame), got {short(scored_edits)}; e.g. scored_edits={{'engine': "
            f"'scored.csv'}}"
        )
    out = dict(scorers or {})
    for name, source in scored_edits.items():
        if not isinstance(name, str) or not name.strip():
            raise AuditInputError(
                f"scored_edits has the name {name!r}; name each system with a non-empty "
                f"string"
            )
        if name in out:
            raise AuditInputError(
                f"scorers and scored_edits both name {name!r}; give each system its own "
                f"name"
            )
        label = (
            os.fspath(source) if isinstance(source, (str, os.PathLike)) else "a DataFrame"
        )
        out[name] = ScoredTexts(source, name=label).fit()
    return out


def check_scored_files(plan: Plan) -> None:
    """Refuse, before any scoring, a scored file that lacks a text the audit needs."""
    files = {n: e for n, e in plan.fitted.items() if isinstance(e, ScoredTexts)}
    if not files:
        return
    needed = needed_texts(plan)
    for name, est in files.items():
        est.check_covers(needed, name)
        _check_on_scale(plan, needed, est, name)


def _check_on_scale(
    plan: Plan, needed: Sequence[NeededText], est: ScoredTexts, system: str
) -> None:
    # the rule of the scorers you call: a score off the declared scale is refused
    off = []
    for t in needed:
        (lo, hi), source = plan.scales[t.prompt]
        score = est.scores_[(t.sha256, t.repeat)][0]
        if source == "declared" and not lo <= score <= hi:
            off.append(f"{t.text_id} ({score:g} off [{lo:g}, {hi:g}])")
    if off:
        raise AuditInputError(
            f"scored_edits {system!r} ({est.name}): {len(off)} of the {len(needed)} "
            f"scores are off the declared scale (score_range / --score-range): "
            f"{_ids(off)}; score those texts on the scale, or declare the scale the "
            f"scorer uses"
        )
