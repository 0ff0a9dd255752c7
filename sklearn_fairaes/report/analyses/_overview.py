"""1 Overview: the data, the systems, the settings, and what was left out and why.

Not an analysis: its view reads the audit's metadata, and the sections left
out (from the renderer's plan).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._cells import (
    _KIND_LABELS,
    _NA,
    Cell,
    _cell,
    _missing,
    _mod,
    _num,
    _scale_text,
    _score,
    _systems,
    _table,
    _text,
    _warnings,
)
from .._cluster import run_place_text
from .._config import setting_label
from .._plots import feature_label, feature_number, model_label, representation_label
from ._base import Heading, Section

if TYPE_CHECKING:
    import pandas as pd


# --------------------------------------------------------------------------- view


_LETTERS_LABELS = {
    "ascii": 'A-Z only, as in the paper (letters="ascii")',
    "unicode": 'the letters of every script (letters="unicode")',
}


def _settings_lines(settings: Mapping[str, Any] | None) -> list[str]:
    rows = []
    for model, value in (settings or {}).items():
        if isinstance(value, dict):
            rows += [
                f"{model_label(model)} on {representation_label(r)}: {v}"
                for r, v in value.items()
            ]
        else:
            rows.append(f"{model_label(model)}: {value}")
    return rows


def view(
    tables: Mapping[str, pd.DataFrame],
    meta: Mapping[str, Any],
    prompts: Sequence[str],
    left_out: list[dict[str, Any]],
) -> dict[str, Any]:
    """The overview's values: the data, the systems, the settings, what was left out."""
    reps = list(meta.get("representations") or [])
    systems = _systems(meta)
    multi = len(prompts) > 1
    lo, hi = meta.get("score_min"), meta.get("score_max")

    def listing(values: Iterable[object] | None) -> Cell:
        values = list(values or [])
        return Cell(", ".join(str(v) for v in values)) if values else _NA

    items: list[tuple[str, Cell | list[str]]] = [
        ("Essays", _num(meta.get("n_essays"))),
    ]
    if multi:
        items.append(("Prompts", Cell(f"{len(prompts)}: " + ", ".join(prompts))))
        items.append(("Prompt column", _cell(meta.get("prompt_col"))))
    items += [
        (
            "Score range",
            Cell(f"{_text(_score(lo))} to {_text(_score(hi))}")
            if not (_missing(lo) or _missing(hi))
            else _NA,
        ),
    ]
    if multi:
        items.append(("Score scale", Cell("per prompt, in the summary below")))
    else:
        items.append(("Score scale", _cell(_scale_text(meta, prompts[0]))))
    items += [
        ("Essay text column", _cell(meta.get("text_col") or None)),
        ("Human score column", _cell(meta.get("score_col") or None)),
        (
            "Rater columns",
            listing(meta.get("rater_cols"))
            if meta.get("rater_cols")
            else Cell("none given"),
        ),
        ("Group column", Cell(str(meta.get("group_col") or "none given"))),
        (
            "Groupings",
            listing(meta["groupings"]) if meta.get("groupings") else Cell("none"),
        ),
        (
            setting_label("intersections"),
            Cell("yes" if meta.get("intersections") else "no"),
        ),
        (
            setting_label("min_group_size"),
            Cell(f"{meta['min_group_size']} essays")
            if meta.get("groupings") and meta.get("min_group_size") is not None
            else Cell("no groups"),
        ),
        ("Prompt given", Cell("yes" if meta.get("prompt_given") else "no")),
        (
            setting_label("representations"),
            listing([representation_label(r) for r in reps]),
        ),
        (
            "Your own embeddings",
            Cell(
                "; ".join(
                    f"{name}: {info.get('dims')} dimensions from {info.get('source')}, "
                    f"cosine distance"
                    for name, info in meta["embeddings"].items()
                )
            )
            if meta.get("embeddings")
            else Cell("none given"),
        ),
        (
            setting_label("letters"),
            Cell(_LETTERS_LABELS.get(str(meta["letters"]), str(meta["letters"])))
            if meta.get("letters") and {"bow", "tfidf"} & set(reps)
            else Cell("not used"),
        ),
        ("Scoring systems", listing([model_label(m) for m in systems])),
        ("Model settings", _settings_lines(meta.get("model_settings")) or _NA),
        (setting_label("cv"), _num(meta.get("cv"))),
        (setting_label("random_state"), Cell(str(meta.get("random_state")))),
        (
            setting_label("n_bootstrap"),
            Cell(
                str(meta["n_bootstrap"])
                if meta.get("n_bootstrap")
                else "none (no intervals)"
            ),
        ),
        (
            setting_label("confidence_level"),
            Cell(f"{float(meta['confidence_level']):.0%}")
            if meta.get("n_bootstrap") and meta.get("confidence_level") is not None
            else Cell("no intervals"),
        ),
        (
            setting_label("smd_method"),
            Cell(
                {
                    "unpooled": "human scores' SD (unpooled; RSMTool rsmeval's default)",
                    "pooled": "pooled SD of human and machine scores (Williamson et al.)",
                }.get(str(meta.get("smd_method")), str(meta.get("smd_method")))
            ),
        ),
        (
            "Score step",
            Cell(
                "integer score points"
                if meta.get("score_step") is None
                else "continuous (continuous QWK)"
                if meta.get("score_step") == "continuous"
                else f"{float(meta['score_step']):g} (one score point per step)"
            ),
        ),
        (
            "Paraphrases",
            Cell(
                str(
                    meta.get("paraphrase_source")
                    or (meta.get("skipped") or {}).get("paraphrases")
                    or "none"
                )
            ),
        ),
        (
            setting_label("features"),
            Cell(str((meta.get("skipped") or {}).get("features") or "computed")),
        ),
        (setting_label("sbert_model"), Cell(str(meta.get("sbert_model") or "not used"))),
    ]
    place = run_place_text(meta)
    if place is not None:
        items.append(("Ran on", Cell(place)))
    if meta.get("sections") is not None:
        # only when the run was told which sections to run (audit(sections=...))
        items.append(("Sections run", listing(meta["sections"])))
    trained = [m for m, info in systems.items() if info["kind"] == "trained"]
    combos = None
    if reps and trained:
        n = len(reps) * len(trained)
        combos = (
            f"{n} combination{'s' if n != 1 else ''} of representation and trained "
            f"model {'were' if n != 1 else 'was'} evaluated ({len(reps)} × "
            f"{len(trained)}); the predictions are out-of-fold."
        )
    others = [m for m, info in systems.items() if info["kind"] != "trained"]
    if others and reps:
        which = "system's scores were" if len(others) == 1 else "systems' scores were"
        combos = (combos + " " if combos else "") + (
            f"{len(others)} given or fitted {which} audited under every representation "
            f"({len(reps)})."
        )
    system_table = None
    if systems:
        system_table = _table(
            ["System", "Kind", "Description"],
            [
                [
                    _mod(name),
                    _KIND_LABELS.get(info["kind"], info["kind"] or "—"),
                    info["description"] or _NA,
                ]
                for name, info in systems.items()
            ],
            caption="Scoring systems audited",
        )
    features = list(meta.get("features") or [])
    feature_text = None
    if features:
        ordered = sorted(features, key=lambda f: feature_number(f, features))
        feature_text = "; ".join(
            f"{feature_number(f, features)}. {feature_label(f)} ({f})" for f in ordered
        )
    omitted = []
    for item in meta.get("omitted_features") or []:
        if isinstance(item, Mapping):
            omitted.append(
                {
                    "name": str(item.get("feature", "?")),
                    "reason": str(item.get("reason", "no reason recorded")),
                    "code": True,
                }
            )
        else:
            omitted.append(
                {"name": str(item), "reason": "no reason recorded", "code": True}
            )
    return {
        "items": [
            {
                "label": k,
                "cell": v if isinstance(v, Cell) else None,
                "lines": v if isinstance(v, list) else [],
            }
            for k, v in items
        ],  # fmt: skip
        "combos": combos,
        "systems": system_table,
        "features": feature_text,
        "left_out": omitted + left_out,
        "warnings": _warnings(meta, None, multi=multi),
        "notes": [str(n) for n in meta.get("notes") or []],
    }


SECTION = Section(
    "overview", (Heading("overview", "Overview"),), view=view, per_prompt=False
)
