"""Names of the perturbations and how to build them from a name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._base import BasePerturbation, RandomStateLike
from ._meaning import (
    CaseWhitespaceNoise,
    ContractionSwap,
    PlaceholderRenaming,
    SynonymParaphrase,
    TypoInjection,
)
from ._quality import (
    Negation,
    OffTopicParagraph,
    PromptStuffing,
    SentenceDeletion,
    SentenceRepetition,
    SentenceShuffle,
    WordSalad,
    WordScramble,
)

__all__ = [
    "DEFAULT_PERTURBATIONS",
    "PERTURBATIONS",
    "PERTURBATION_NAMES",
    "get_perturbation",
    "resolve_perturbations",
]

#: Name -> class of every perturbation, meaning-preserving ones first.
PERTURBATIONS: dict[str, type[BasePerturbation]] = {
    cls.name: cls
    for cls in (
        SynonymParaphrase,
        TypoInjection,
        CaseWhitespaceNoise,
        ContractionSwap,
        PlaceholderRenaming,
        SentenceShuffle,
        SentenceDeletion,
        SentenceRepetition,
        OffTopicParagraph,
        PromptStuffing,
        Negation,
        WordSalad,
        WordScramble,
    )
}

#: Names of every perturbation, in report order (meaning-preserving first).
PERTURBATION_NAMES: tuple[str, ...] = tuple(PERTURBATIONS)

#: The perturbations ``perturbation_audit(perturbations="default")`` runs: all
#: of them (``"prompt_stuffing"`` only when a prompt is given).
DEFAULT_PERTURBATIONS: tuple[str, ...] = PERTURBATION_NAMES


def _unknown(name: str) -> ValueError:
    return ValueError(
        f"unknown perturbation {name!r}; the perturbations are "
        f"{', '.join(map(repr, sorted(PERTURBATION_NAMES)))}"
    )


def get_perturbation(
    name: str,
    *,
    random_state: RandomStateLike = None,
    prompt: str | None = None,
    **params: Any,
) -> BasePerturbation:
    """Build a perturbation from its name.

    Parameters
    ----------
    name : str
        One of :data:`PERTURBATION_NAMES`.
    random_state : int, RandomState instance or None, default=None
        Passed to the perturbation.
    prompt : str, default=None
        The task statement; passed to ``"prompt_stuffing"`` (which needs it)
        and ignored by the others.
    **params
        Other parameters of that perturbation's class (e.g. ``rate=0.1``).

    Returns
    -------
    perturbation : BasePerturbation
        A new, unfitted instance of the perturbation's class.

    Raises
    ------
    ValueError
        If ``name`` is not a perturbation name (the message lists them).

    Examples
    --------
    >>> from sklearn_fairaes.perturb import get_perturbation
    >>> get_perturbation("typos", rate=0.1, random_state=0)
    TypoInjection(random_state=0, rate=0.1)
    """
    if not isinstance(name, str):
        raise TypeError(
            f"a perturbation name must be a str, got {name!r} ({type(name).__name__})"
        )
    cls = PERTURBATIONS.get(name)
    if cls is None:
        raise _unknown(name)
    if cls is PromptStuffing:
        params["prompt"] = prompt
    return cls(random_state=random_state, **params)


def resolve_perturbations(
    perturbations: str
    | BasePerturbation
    | Iterable[str | BasePerturbation]
    | Mapping[str, str | BasePerturbation],
    *,
    prompt: str | None = None,
    random_state: RandomStateLike = None,
) -> list[tuple[str, BasePerturbation]]:
    """``[(name, perturbation), ...]`` from the audit's ``perturbations`` argument.

    Parameters
    ----------
    perturbations : "default", "all", str, BasePerturbation, list or dict
        ``"default"``: :data:`DEFAULT_PERTURBATIONS`, without
        ``"prompt_stuffing"`` when ``prompt`` is None. ``"all"``: every
        perturbation (needs ``prompt``). A name, a perturbation object, or a
        list of names and objects. A dict maps labels to names or objects.
        Names are built with ``random_state`` (and ``prompt``); objects are
        used as given (cloned), labelled by their ``name``.
    prompt : str, default=None
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    list of (str, BasePerturbation)
    """
    from sklearn.base import clone

    items: list[tuple[str | None, str | BasePerturbation]]
    if isinstance(perturbations, str) and perturbations in ("default", "all"):
        names: Sequence[str] = (
            PERTURBATION_NAMES if perturbations == "all" else DEFAULT_PERTURBATIONS
        )
        if perturbations == "default" and prompt is None:
            names = [n for n in names if n != "prompt_stuffing"]
        items = [(n, n) for n in names]
    elif isinstance(perturbations, (str, BasePerturbation)):
        items = [(None, perturbations)]
    elif isinstance(perturbations, dict):
        items = list(perturbations.items())
    else:
        try:
            items = [(None, p) for p in perturbations]
        except TypeError:
            raise TypeError(
                f"perturbations must be 'default', 'all', a perturbation name, a "
                f"perturbation object, or a list or dict of them; got "
                f"{type(perturbations).__name__}"
            ) from None
    if not items:
        raise ValueError("perturbations is empty; name at least one perturbation")
    out: list[tuple[str, BasePerturbation]] = []
    for label, spec in items:
        if isinstance(spec, str):
            built = get_perturbation(spec, random_state=random_state, prompt=prompt)
        elif isinstance(spec, BasePerturbation):
            built = clone(spec)
        else:
            raise TypeError(
                f"a perturbation must be a name (one of "
                f"{', '.join(map(repr, sorted(PERTURBATION_NAMES)))}) or a "
                f"BasePerturbation object, got {spec!r:.60} ({type(spec).__name__})"
            )
        label = built.name if label is None else label
        if not isinstance(label, str):
            raise TypeError(f"perturbation labels must be str, got {label!r}")
        if label in dict(out):
            raise ValueError(
                f"perturbation {label!r} is given twice; label repeated perturbations "
                f"with a dict, e.g. {{'typos_5': TypoInjection(0.05), 'typos_20': "
                f"TypoInjection(0.2)}}"
            )
        out.append((label, built))
    return out
