"""Two or more audits side by side: ``fairaes compare`` and :func:`compare`.

Like RSMTool's ``rsmcompare``: the headline figures of every (prompt,
representation, system) the audits share, their values side by side, and the
difference of each later audit from the first (the baseline). Where the two
audits resampled the same essays (the same ids digest for the prompt, the same
seed and number of replicates) and both kept the figure's replicates, the
difference gets the *paired* bootstrap interval and p-value
(:func:`~sklearn_fairaes.metrics._bootstrap.paired_difference`); elsewhere the
row says why there is none ("different essays in prompt '3'", "no bootstrap in
v3"). Nothing is recomputed: the comparison reads the reports' tables.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..metrics._bootstrap import paired_difference
from ._result import AuditResult

if TYPE_CHECKING:
    from pandas import DataFrame

__all__ = ["COMPARED_TABLES", "ComparisonResult", "compare"]

#: The tables whose figures are compared: every numeric column the audits
#: share (counts ``n``/``n_*``, the ``*_ok`` flags and the interval columns
#: excepted; ``acceptable`` is kept), keyed by prompt, representation, system.
COMPARED_TABLES = ("agreement", "lipschitz", "essay_consistency")

_KEYS = ("prompt", "representation", "system")
_CI = ("_ci_low", "_ci_high")


def _figure_columns(frame: DataFrame) -> list[str]:
    out = []
    for column in frame.columns:
        name = str(column)
        if name in _KEYS or name.endswith(_CI) or name == "n" or name.startswith("n_"):
            continue
        if name.endswith("_ok"):
            continue
        kind = frame[column].dtype.kind
        if kind in "biuf" or (kind == "O" and _all_bool(frame[column])):
            out.append(name)
    return out


def _all_bool(series: Any) -> bool:
    values = [v for v in series if v is not None and not _nan(v)]
    return bool(values) and all(isinstance(v, (bool, np.bool_)) for v in values)


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _number(value: Any) -> float:
    if value is None or isinstance(value, str):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _rows(frame: DataFrame) -> dict[tuple[str, str, str], dict[str, Any]]:
    out = {}
    for record in frame.to_dict("records"):
        key = tuple(
            "" if record.get(k) is None or _nan(record.get(k)) else str(record.get(k))
            for k in _KEYS
        )
        out[key] = record
    return out  # type: ignore[return-value]


def _why_unpaired(metas: tuple[dict[str, Any], dict[str, Any]], names: Sequence[str],
                  prompt: str) -> str:  # fmt: skip
    """Why the replicates of two audits do not pair for ``prompt`` ("" when they do)."""
    (ma, mb), (na, nb) = metas, names
    for meta, name in ((ma, na), (mb, nb)):
        if not meta.get("n_bootstrap"):
            return f"no bootstrap in {name}"
    if ma.get("n_bootstrap") != mb.get("n_bootstrap"):
        return (
            f"different numbers of replicates ({na}: {ma.get('n_bootstrap')}, "
            f"{nb}: {mb.get('n_bootstrap')})"
        )
    if ma.get("random_state") != mb.get("random_state"):
        return (
            f"different seeds ({na}: random_state={ma.get('random_state')}, "
            f"{nb}: random_state={mb.get('random_state')})"
        )
    da, db = ma.get("ids_digest") or {}, mb.get("ids_digest") or {}
    if prompt in da or prompt in db:
        same = da.get(prompt) is not None and da.get(prompt) == db.get(prompt)
    else:  # a pooled row: every prompt's essays must match
        same = bool(da) and da == db
    return "" if same else f"different essays in prompt {prompt!r}"


class ComparisonResult:
    """Two or more audits side by side, as returned by :func:`compare`.

    Parameters
    ----------
    tables : dict of str -> pandas.DataFrame
        ``"values"``: one row per prompt, table, representation, system and
        figure, with one column per audit (named by ``names``) and, where the
        audit has an interval, ``<name>_ci_low`` / ``<name>_ci_high``.
        ``"differences"``: one row per figure and later audit, with
        ``baseline``, ``other``, ``value_baseline``, ``value_other``,
        ``difference`` (other minus baseline), ``ci_low``, ``ci_high``,
        ``p_value`` (paired bootstrap), ``paired`` and ``reason`` (why there is
        no paired interval; empty when there is one).
    meta : dict
        ``names``, ``reports`` (title, essays, version, seed and replicates of
        each), ``confidence_level`` and ``notes``.

    Attributes
    ----------
    tables : dict of str -> pandas.DataFrame
        The tables, as given.
    meta : dict
        The metadata, as given.

    See Also
    --------
    compare : Build the comparison from audit results or report folders.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report import ComparisonResult
    >>> values = pd.DataFrame({"prompt": ["all"], "table": ["agreement"],
    ...                        "representation": [""], "system": ["engine"],
    ...                        "figure": ["qwk"], "v3": [0.70], "v4": [0.74]})
    >>> result = ComparisonResult({"values": values}, {"names": ["v3", "v4"],
    ...                           "notes": []})
    >>> result
    ComparisonResult(names=['v3', 'v4'], figures=1)
    """

    def __init__(self, tables: dict[str, DataFrame], meta: dict[str, Any]) -> None:
        self.tables = tables
        self.meta = meta

    def __repr__(self) -> str:
        n = len(self.tables["values"]) if "values" in self.tables else 0
        return f"ComparisonResult(names={self.meta.get('names')}, figures={n})"

    def summary(self) -> str:
        """Return the differences as plain text, one line per figure and audit.

        Returns
        -------
        text : str
            ``prompt representation system figure: baseline -> other
            (difference [ci_low, ci_high], p=...)`` or the reason there is no
            paired interval, then the notes.
        """
        lines = [f"Comparison of {', '.join(map(str, self.meta.get('names', [])))}"]
        frame = self.tables.get("differences")
        for r in [] if frame is None else frame.to_dict("records"):
            where = " ".join(
                x for x in (r["prompt"], r["representation"], r["system"]) if x
            )
            head = (
                f"{where} {r['figure']}: {r['baseline']} {_fmt(r['value_baseline'])} -> "
                f"{r['other']} {_fmt(r['value_other'])}"
            )
            if r["paired"]:
                tail = (
                    f" (difference {_fmt(r['difference'])} [{_fmt(r['ci_low'])}, "
                    f"{_fmt(r['ci_high'])}], p={_fmt(r['p_value'])})"
                )
            else:
                tail = f" (difference {_fmt(r['difference'])}; {r['reason']})"
            lines.append(head + tail)
        lines += [f"note: {n}" for n in self.meta.get("notes", [])]
        return "\n".join(lines)

    def to_json_dict(self) -> dict[str, Any]:
        """Return the tables (as records) and metadata as JSON-able Python objects.

        Returns
        -------
        data : dict
            ``{"meta": {...}, "tables": {name: [record, ...]}}``, NaN as None.
        """
        from ._html import to_json_dict

        return to_json_dict(self.tables, self.meta)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """Render the comparison as one self-contained HTML page.

        Parameters
        ----------
        path : str or path-like, default=None
            The file to write (UTF-8; replaced if it exists); None writes nothing.

        Returns
        -------
        html : str
            The page (every value escaped, no scripts).
        """
        from ._html import _CSP, _environment

        rows = []
        frame = self.tables.get("differences")
        for r in [] if frame is None else frame.to_dict("records"):
            rows.append(
                {
                    "where": [r["prompt"], r["representation"] or "–", r["system"]],
                    "figure": f"{r['table']}: {r['figure']}",
                    "pair": f"{r['other']} − {r['baseline']}",
                    "a": _fmt(r["value_baseline"]),
                    "b": _fmt(r["value_other"]),
                    "difference": _fmt(r["difference"]),
                    "ci": f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]"
                    if r["paired"]
                    else "",
                    "p": _fmt(r["p_value"]) if r["paired"] else "",
                    "reason": r["reason"],
                }
            )
        level = self.meta.get("confidence_level") or 0.95
        page = (
            _environment()
            .get_template("compare.html.j2")
            .render(
                csp=_CSP,
                title=f"Comparison of {', '.join(map(str, self.meta.get('names', [])))}",
                level=f"{100 * float(level):g}%",
                reports=self.meta.get("reports", []),
                rows=rows,
                notes=self.meta.get("notes", []),
            )
        )
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(page)
        return page

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write ``comparison.html``, ``comparison.json`` and ``tables/*.csv`` into ``folder``.

        The folder is claimed and swapped in as :meth:`AuditResult.save` does:
        a missing or empty folder, or an earlier report of ours holding only
        the files it wrote (which is replaced); anything else is refused.

        Parameters
        ----------
        folder : str or path-like
            The output folder.

        Raises
        ------
        ValueError
            If ``folder`` is a user's folder or file (never overwritten).
        """
        self._save(folder, force=True, inputs=(), option="folder")

    def _save(
        self,
        folder: str | os.PathLike[str],
        *,
        force: bool,
        inputs: Sequence[str | os.PathLike[str]],
        option: str,
        on_note: Any = None,
    ) -> None:
        import warnings

        from ._output import claim_folder

        notes: list[str] = []
        try:
            claim = claim_folder(
                folder, force=force, inputs=inputs, option=option, on_note=notes.append
            )
        finally:
            for note in notes:
                if on_note is not None:
                    on_note(note)
                else:
                    warnings.warn(f"{folder}: {note}", UserWarning, stacklevel=3)
        try:
            claim.commit(self._write_files)
        finally:
            claim.release()

    def _write_files(self, folder: Path) -> list[str]:
        import json

        from ._output import write_tables

        written = write_tables(folder, self.tables)
        with open(folder / "comparison.json", "w", encoding="utf-8") as fh:
            json.dump(self.to_json_dict(), fh, indent=1, allow_nan=False)
        written.append("comparison.json")
        self.to_html(folder / "comparison.html")
        written.append("comparison.html")
        return written


def _fmt(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    x = _number(value)
    return "" if not math.isfinite(x) else f"{x:.4f}".rstrip("0").rstrip(".")


def _as_result(item: Any, position: int) -> AuditResult:
    if isinstance(item, AuditResult):
        return item
    if isinstance(item, (str, os.PathLike)):
        return AuditResult.load(item)
    raise TypeError(
        f"report {position + 1} is a {type(item).__name__}; pass an AuditResult or the "
        "folder of a saved report"
    )


def compare(
    result_a: AuditResult | str | os.PathLike[str],
    result_b: AuditResult | str | os.PathLike[str],
    *more: AuditResult | str | os.PathLike[str],
    names: Sequence[str] | None = None,
) -> ComparisonResult:
    """Set two or more audits side by side, with paired intervals where the essays match.

    Every figure of the tables ``COMPARED_TABLES`` (agreement: ``qwk``,
    ``smd``, ``degradation``, ``acceptable``, ...; lipschitz: ``lipschitz_minmax``,
    ``lipschitz_max`` and any other numeric column both audits have; essay
    consistency) that the audits share for a (prompt, representation, system)
    is listed with its values, and each later audit's difference from the
    first. The difference gets a paired bootstrap interval and p-value when
    both audits resampled the same essays of the prompt (same ids digest),
    with the same ``random_state`` and ``n_bootstrap``, and both kept the
    figure's replicates; otherwise the row's ``reason`` says why not.

    Parameters
    ----------
    result_a, result_b, *more : AuditResult or path
        The audits (results, or folders written by ``save`` / ``fairaes
        audit``), the first being the baseline.
    names : sequence of str, default=None
        A short name per audit (e.g. ``["v3", "v4"]``); None names them
        ``A``, ``B``, ...

    Returns
    -------
    comparison : ComparisonResult
        Its tables ``values`` and ``differences`` (see
        :class:`ComparisonResult`).

    Raises
    ------
    ValueError
        If a folder is not a readable report, the names are not one unique
        name per audit, the reports' formats differ, or the audits share no
        figure.

    See Also
    --------
    check : Hold one audit to requirements (a gate for CI pipelines).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fairaes.report import AuditResult, compare
    >>> def result(qwk):
    ...     table = pd.DataFrame({"prompt": ["all"], "representation": [""],
    ...                           "system": ["engine"], "qwk": [qwk]})
    ...     meta = {"n_essays": 40, "prompts": ["all"], "representations": [],
    ...             "systems": {"engine": {}}, "n_bootstrap": 0}
    ...     return AuditResult({"agreement": table}, meta)
    >>> comparison = compare(result(0.70), result(0.74), names=["v3", "v4"])
    >>> row = comparison.tables["differences"].iloc[0]
    >>> round(float(row["difference"]), 2), row["reason"]
    (0.04, 'no bootstrap in v3')
    """
    import pandas as pd

    items = (result_a, result_b, *more)
    results = [_as_result(item, i) for i, item in enumerate(items)]
    if names is None:
        names = [chr(ord("A") + i) if i < 26 else f"R{i + 1}" for i in range(len(results))]
    names = [str(n) for n in names]
    if len(names) != len(results) or len(set(names)) != len(names) or not all(names):
        raise ValueError(
            f"names must give one unique, non-empty name per audit ({len(results)} "
            f"audits), got {names}"
        )
    formats = [r.meta.get("report_format", 1) for r in results]
    if len(set(formats)) > 1:
        listed = ", ".join(f"{n}: format {f}" for n, f in zip(names, formats))
        raise ValueError(
            f"the reports have different formats ({listed}); re-run the older audits "
            "with this version so that their figures mean the same"
        )
    metas = [r.meta for r in results]
    level = float(metas[0].get("confidence_level") or 0.95)
    notes: list[str] = []
    values: list[dict[str, Any]] = []
    diffs: list[dict[str, Any]] = []
    refused: dict[tuple[str, str, str], str] = {}
    for table in COMPARED_TABLES:
        frames = [r.tables.get(table) for r in results]
        if any(f is None or f.empty for f in frames):
            continue
        columns = [set(_figure_columns(f)) for f in frames]  # type: ignore[arg-type]
        shared = [c for c in _figure_columns(frames[0]) if all(c in s for s in columns)]  # type: ignore[arg-type]
        rows = [_rows(f) for f in frames]  # type: ignore[arg-type]
        keys = [k for k in rows[0] if all(k in r for r in rows[1:])]
        for key in keys:
            prompt, representation, system = key
            for figure in shared:
                cells = [r[key].get(figure) for r in rows]
                entry: dict[str, Any] = {
                    "prompt": prompt,
                    "table": table,
                    "representation": representation,
                    "system": system,
                    "figure": figure,
                }
                for name, r in zip(names, rows):
                    entry[name] = r[key].get(figure)
                    for suffix in _CI:
                        if figure + suffix in r[key]:
                            entry[name + suffix] = r[key][figure + suffix]
                values.append(entry)
                flag = any(isinstance(c, (bool, np.bool_)) for c in cells)
                for j in range(1, len(results)):
                    diffs.append(
                        _difference(
                            (results[0], results[j]),
                            (names[0], names[j]),
                            (cells[0], cells[j]),
                            (table, *key, figure),
                            flag,
                            level,
                            refused,
                        )
                    )
    if not values:
        listed = "; ".join(
            f"{n}: {sorted(t for t in COMPARED_TABLES if t in r.tables)}"
            for n, r in zip(names, results)
        )
        raise ValueError(
            "the audits have no figure in common (no prompt, representation and "
            f"system with the same figures in {list(COMPARED_TABLES)}; tables: "
            f"{listed}); compare audits of the same systems and prompts"
        )
    for (a, b, prompt), reason in refused.items():
        notes.append(f"no paired intervals for prompt {prompt!r} ({b} vs {a}): {reason}")
    reports = [
        {
            "name": n,
            "title": m.get("title", ""),
            "n_essays": m.get("n_essays"),
            "prompts": m.get("prompts"),
            "version": (m.get("versions") or {}).get("sklearn_fairaes", ""),
            "random_state": m.get("random_state"),
            "n_bootstrap": m.get("n_bootstrap"),
        }
        for n, m in zip(names, metas)
    ]
    meta = {"names": names, "reports": reports, "confidence_level": level, "notes": notes}
    return ComparisonResult(
        {"values": pd.DataFrame(values), "differences": pd.DataFrame(diffs)}, meta
    )


def _difference(
    pair: tuple[AuditResult, AuditResult],
    names: tuple[str, str],
    cells: tuple[Any, Any],
    where: tuple[str, str, str, str, str],
    flag: bool,
    level: float,
    refused: dict[tuple[str, str, str], str],
) -> dict[str, Any]:
    """One row of the differences table: ``other`` minus ``baseline``, paired if it can."""
    table, prompt, representation, system, figure = where
    a, b = _number(cells[0]), _number(cells[1])
    row: dict[str, Any] = {
        "prompt": prompt,
        "table": table,
        "representation": representation,
        "system": system,
        "figure": figure,
        "baseline": names[0],
        "other": names[1],
        "value_baseline": cells[0],
        "value_other": cells[1],
        "difference": math.nan if flag else b - a,
        "ci_low": math.nan,
        "ci_high": math.nan,
        "p_value": math.nan,
        "paired": False,
        "reason": "",
    }
    if flag:
        row["reason"] = "a yes/no flag"
        return row
    reason = _why_unpaired((pair[0].meta, pair[1].meta), names, prompt)
    if reason:
        refused.setdefault((names[0], names[1], prompt), reason)
        row["reason"] = reason
        return row
    key = (prompt, table, representation, system, figure)
    ra, rb = pair[0].replicates.get(key), pair[1].replicates.get(key)
    if ra is None or rb is None:
        row["reason"] = "no replicates of this figure"
        return row
    if not (math.isfinite(a) and math.isfinite(b)):
        row["reason"] = "no value"
        return row
    out = paired_difference(b, a, rb, ra, confidence_level=level)
    row.update(
        difference=float(out.difference),
        ci_low=float(out.ci_low),
        ci_high=float(out.ci_high),
        p_value=float(out.p_value),
        paired=True,
    )
    return row
