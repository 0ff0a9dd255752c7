"""The embedded demo corpus: 180 short essays on one prompt, written for this package.

The essays, their paraphrases, both raters' scores and the rubric were written by
the package authors (no third-party text); the group column is synthetic. The
corpus is illustrative: it lets examples, doctests and the demo run offline, and
it must not be used for research claims. See ``datasets/data/DEMO_README.md``.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
from sklearn.utils import Bunch

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_demo_essays", "load_demo_prompt", "load_demo_rubric"]

_DATA_PACKAGE = "sklearn_fairaes.datasets"
_ESSAYS_FILE = "demo_essays.jsonl"
_PROMPT_FILE = "demo_prompt.txt"
_RUBRIC_FILE = "demo_rubric.md"
_README_FILE = "DEMO_README.md"

#: Columns of the frame, in order.
DEMO_COLUMNS = ("essay_id", "essay", "paraphrase", "rater1", "rater2", "score", "group")
#: Range of one rater's holistic score (rubric) and of the resolved score (their sum).
RATER_SCORE_RANGE = (0, 6)
SCORE_RANGE = (0, 12)


def _read_text(name: str) -> str:
    return (resources.files(_DATA_PACKAGE) / "data" / name).read_text(encoding="utf-8")


def _read_records() -> list[dict[str, Any]]:
    records = []
    for lineno, line in enumerate(_read_text(_ESSAYS_FILE).splitlines(), start=1):
        if not line.strip():
            continue
        record = json.loads(line)
        if tuple(record) != DEMO_COLUMNS:
            # Only reachable if the packaged file was edited by hand.
            raise ValueError(
                f"{_ESSAYS_FILE} line {lineno} has keys {sorted(record)}; expected "
                f"{list(DEMO_COLUMNS)}; reinstall sklearn-fairaes"
            )
        records.append(record)
    return records


def load_demo_prompt() -> str:
    """Return the prompt that the demo essays answer.

    Returns
    -------
    prompt : str
        The task statement, without surrounding whitespace.

    See Also
    --------
    load_demo_essays : The essays, their paraphrases and scores.

    Examples
    --------
    >>> from sklearn_fairaes.datasets import load_demo_prompt
    >>> load_demo_prompt().startswith("Think of a time when you")
    True
    """
    return _read_text(_PROMPT_FILE).strip()


def load_demo_rubric() -> str:
    """Return the holistic rubric of the demo corpus, as Markdown text.

    Each rater scores an essay from 0 to 6 with this rubric; the resolved score is
    the sum of the two raters' scores (0 to 12).

    Returns
    -------
    rubric : str
        The rubric as Markdown: one table row per score point, 0 to 6.

    Examples
    --------
    >>> from sklearn_fairaes.datasets import load_demo_rubric
    >>> "Not scorable" in load_demo_rubric()
    True
    """
    return _read_text(_RUBRIC_FILE)


@overload
def load_demo_essays(*, as_frame: Literal[True] = ...) -> pd.DataFrame: ...


@overload
def load_demo_essays(*, as_frame: Literal[False]) -> Bunch: ...


@overload
def load_demo_essays(*, as_frame: bool = ...) -> pd.DataFrame | Bunch: ...


def load_demo_essays(*, as_frame: bool = True) -> pd.DataFrame | Bunch:
    """Load the demo corpus: 180 short essays on one prompt, with paraphrases.

    The corpus was written for this package so that examples run offline; it is
    illustrative, not research data. Each essay has a hand-written paraphrase
    (same content and placeholders, different wording), two holistic scores from
    the rubric (:func:`load_demo_rubric`, 0-6 each), a resolved score that is
    their sum (0-12, as for ASAP prompt 7) and a synthetic group label. The
    raters agree exactly on about two essays in three and never differ by more
    than two points. BSD-3-Clause, like the package.

    Parameters
    ----------
    as_frame : bool, default=True
        If True, return a pandas DataFrame (needs pandas, the ``report`` extra);
        else a :class:`~sklearn.utils.Bunch` of lists and NumPy arrays.

    Returns
    -------
    data : pandas.DataFrame or sklearn.utils.Bunch
        With ``as_frame=True``, a DataFrame with columns ``essay_id`` (int),
        ``essay`` (str), ``paraphrase`` (str), ``rater1``, ``rater2``, ``score``
        (int) and ``group`` (str: ``"A"``, ``"B"`` or ``"C"``); its ``attrs``
        hold ``"prompt"``, ``"rubric"``, ``"score_range"`` ``(0, 12)``,
        ``"rater_score_range"`` ``(0, 6)`` and ``"description"``.

        With ``as_frame=False``, a Bunch with

        data : list of str
            The essays.
        target : ndarray of shape (n_essays,), dtype int
            The resolved scores, ``rater1 + rater2``.
        paraphrases : list of str
            The paraphrase of each essay.
        raters : ndarray of shape (n_essays, 2), dtype int
            The two raters' scores.
        groups : ndarray of shape (n_essays,), dtype object
            The synthetic group labels.
        essay_ids : ndarray of shape (n_essays,), dtype int
            The essay ids.
        prompt, rubric, DESCR : str
            The prompt, the rubric and the corpus description.
        score_range, rater_score_range : tuple of int
            The ranges of the resolved score and of one rater's score.

    See Also
    --------
    load_demo_prompt : The prompt alone.
    load_asap : The ASAP essays, when you have the Kaggle file.

    Examples
    --------
    >>> from sklearn_fairaes.datasets import load_demo_essays
    >>> demo = load_demo_essays(as_frame=False)
    >>> len(demo.data), demo.raters.shape, demo.score_range
    (180, (180, 2), (0, 12))
    >>> bool((demo.target == demo.raters.sum(axis=1)).all())
    True
    """
    records = _read_records()
    prompt = load_demo_prompt()
    rubric = load_demo_rubric()
    descr = _read_text(_README_FILE)
    if as_frame:
        from ..resources import require

        pd = require("pandas", purpose="load_demo_essays(as_frame=True)")
        frame = pd.DataFrame.from_records(records, columns=list(DEMO_COLUMNS))
        frame = frame.astype(
            {"essay_id": "int64", "rater1": "int64", "rater2": "int64", "score": "int64"}
        )
        frame.attrs.update(
            prompt=prompt,
            rubric=rubric,
            score_range=SCORE_RANGE,
            rater_score_range=RATER_SCORE_RANGE,
            description=descr,
        )
        return frame
    return Bunch(
        data=[r["essay"] for r in records],
        target=np.array([r["score"] for r in records], dtype=np.int64),
        paraphrases=[r["paraphrase"] for r in records],
        raters=np.array([[r["rater1"], r["rater2"]] for r in records], dtype=np.int64),
        groups=np.array([r["group"] for r in records], dtype=object),
        essay_ids=np.array([r["essay_id"] for r in records], dtype=np.int64),
        prompt=prompt,
        rubric=rubric,
        score_range=SCORE_RANGE,
        rater_score_range=RATER_SCORE_RANGE,
        DESCR=descr,
    )
