"""The result of an audit: its tables, figures and metadata, and their renderers.

:class:`AuditResult` is plain data that :func:`~sklearn_fairaes.audit`
computes; its methods only format it (console summary, notebook HTML, JSON,
the HTML report, the report folder) or read a saved report back
(:meth:`AuditResult.load`).
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._load import REPLICATES_FILE, write_replicates

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure
    from pandas import DataFrame

__all__ = ["AuditResult"]

#: Resolution of the report's embedded PNGs
_DPI = 100


class AuditResult:
    """What :func:`audit` found: tables, figures and metadata, ready to render.

    The result is plain data: :func:`audit` computes the tables, and the
    methods here only format them (text, JSON, HTML, CSV files).

    Parameters
    ----------
    tables : dict of str -> pandas.DataFrame
        The tables of the run, by name (see :func:`audit` for their columns).
    meta : dict
        What was run, what was left out and why, versions and timing.
    replicates : dict or None, default=None
        The bootstrap replicates behind the tables' ``*_ci_low`` /
        ``*_ci_high`` columns: ``(prompt, table, representation, system,
        column)`` -> array of shape ``(n_bootstrap,)``. Replicates of two
        audits of the same essays with the same seed pair one to one
        (``meta["ids_digest"]`` says which essays each prompt resampled).

    Attributes
    ----------
    tables : dict of str -> pandas.DataFrame
        The tables, as given.
    figures : dict of str -> matplotlib.figure.Figure
        Made from the tables on first access (needs the ``report`` extra).
    meta : dict
        The metadata, as given.
    replicates : dict
        The replicates, as given (empty when None).

    See Also
    --------
    audit : Run the audit and get its result.

    Examples
    --------
    A result is usually returned by :func:`audit`; this one is built by hand
    from the two tables its summary reads:

    >>> import pandas as pd
    >>> from sklearn_fairaes.report import AuditResult
    >>> agreement = pd.DataFrame({"prompt": ["all"], "representation": [""],
    ...                           "system": ["engine"], "kind": ["given"],
    ...                           "qwk": [0.712], "smd": [-0.031],
    ...                           "acceptable": [True]})
    >>> lipschitz = pd.DataFrame({"prompt": ["all", "all"],
    ...                           "representation": ["tfidf", "tfidf"],
    ...                           "system": ["engine", "human"],
    ...                           "lipschitz_minmax": [0.9931, 0.9712],
    ...                           "lipschitz_max": [0.9975, 0.9803],
    ...                           "n_pairs": [780, 780]})
    >>> meta = {"title": "Demo audit", "n_essays": 40, "score_min": 2.0,
    ...         "score_max": 12.0, "representations": ["tfidf"], "prompts": ["all"],
    ...         "systems": {"engine": {"kind": "given", "description": ""}},
    ...         "models": [], "omitted_features": [], "notes": []}
    >>> result = AuditResult({"agreement": agreement, "lipschitz": lipschitz}, meta)
    >>> result
    AuditResult(40 essays, representations=['tfidf'], systems=['engine'])
    >>> print(result.summary())  # doctest: +NORMALIZE_WHITESPACE
    Demo audit: 40 essays, scores 2-12
    representation  system        n    QWK  degradation  |SMD|  LF min-max  LF max  accepted
    tfidf           engine            0.712                0.031      0.9931  0.9975  yes
    tfidf           human scores                                      0.9712  0.9803
    >>> result.to_json_dict()["tables"]["agreement"][0]["qwk"]
    0.712
    """

    def __init__(
        self,
        tables: dict[str, DataFrame],
        meta: dict[str, Any],
        replicates: Mapping[tuple[str, str, str, str, str], ArrayLike] | None = None,
    ) -> None:
        self.tables = tables
        self.meta = meta
        self.replicates: dict[tuple[str, str, str, str, str], NDArray[np.float64]] = {
            tuple(map(str, k)): np.asarray(v, dtype=np.float64)  # type: ignore[misc]
            for k, v in (replicates or {}).items()
        }
        self._figures: dict[str, Figure] | None = None
        # the audit's cache folder, where the figures' PNGs are kept (_figure_cache)
        self._figure_cache: Any = None

    def __repr__(self) -> str:
        systems = list(self.meta.get("systems") or self.meta.get("models") or [])
        return (
            f"AuditResult({self.meta['n_essays']} essays, representations="
            f"{self.meta['representations']}, systems={systems})"
        )

    @property
    def figures(self) -> dict[str, Figure]:
        """The report's figures, made from the tables on first access.

        Returns
        -------
        figures : dict of str -> matplotlib.figure.Figure
            One figure per analysis whose table is present (see
            ``make_figures`` of ``sklearn_fairaes.report.analyses``).
        """
        if self._figures is None:
            from .analyses import make_figures

            self._figures = make_figures(self.tables, self.meta)
        return self._figures

    def _summary_rows(self) -> tuple[str, list[str], list[list[str]], list[str]]:
        """The summary's title, column names, rows (as text) and closing notes."""
        several = len(self.meta.get("prompts") or ["all"]) > 1
        agree: dict[tuple[str, str, str], Any] = {}
        if "agreement" in self.tables:
            for _, row in self.tables["agreement"].iterrows():
                agree[(str(row["prompt"]), row["representation"], row["system"])] = row
        cv = f", {self.meta['cv']}-fold CV" if self.meta.get("models") else ""
        if several:
            # each prompt has its own scale: one overall min-max would mislead
            prompts = self.meta["prompts"]
            scope = f"{len(prompts)} prompts, {self.meta['n_essays']} essays, a scale per prompt"
        else:
            scope = (
                f"{self.meta['n_essays']} essays, scores "
                f"{self.meta['score_min']:g}-{self.meta['score_max']:g}"
            )
        columns = ["prompt"] if several else []
        columns += ["representation", "system", "n", "QWK", "degradation", "|SMD|"]
        columns += ["LF min-max", "LF max", "accepted"]

        def number(value: Any, digits: int) -> str:
            try:
                x = float(value)
            except (TypeError, ValueError):
                return ""
            return f"{x:.{digits}f}" if np.isfinite(x) else ""

        rows: list[list[str]] = []
        humans: list[list[str]] = []
        lipschitz = self.tables.get("lipschitz")
        for _, lrow in [] if lipschitz is None else lipschitz.iterrows():
            p, r, s = str(lrow["prompt"]), lrow["representation"], lrow["system"]
            head = [p] if several else []
            lf = [number(lrow["lipschitz_minmax"], 4), number(lrow["lipschitz_max"], 4)]
            if s == "human":
                humans.append([*head, r, "human scores", "", "", "", "", *lf, ""])
                continue
            found = agree.get((p, r, s), agree.get((p, "", s)))
            cells: dict[str, Any] = {} if found is None else dict(found)
            smd = number(cells.get("smd"), 3)
            n = cells.get("n")
            accepted = cells.get("acceptable")
            rows.append(
                [
                    *head,
                    r,
                    s,
                    "" if n is None or number(n, 0) == "" else str(int(n)),
                    number(cells.get("qwk"), 3),
                    number(cells.get("degradation"), 3),
                    smd.lstrip("-"),
                    *lf,
                    # None or NaN (pooled rows, no flags): an empty cell
                    ("yes" if accepted else "no")
                    if isinstance(accepted, (bool, np.bool_))
                    else "",
                ]
            )
        notes = [
            f"note: {item['feature']} left out: {item['reason']}"
            for item in self.meta["omitted_features"]
        ]
        notes += [f"note: {t}" for t in self.meta["notes"]]
        notes += [f"warning: {w['message']}" for w in self.meta.get("warnings") or []]
        return f"{self.meta['title']}: {scope}{cv}", columns, rows + humans, notes

    def summary(self) -> str:
        """Return a plain-text summary: agreement and Lipschitz fraction per system.

        Returns
        -------
        text : str
            One line per (prompt,) representation and system (essays scored,
            QWK, its degradation from the human-human QWK, absolute SMD, both
            Lipschitz fractions and whether it is acceptable), one per
            representation for the human scores, then the notes. The prompt
            column shows only with several prompts; empty cells are figures
            the audit has no value for (no raters: no degradation; pooled
            rows: no SMD; short answers: grades, no QWK).
        """
        title, columns, rows, notes = self._summary_rows()
        # columns as wide as their longest cell: prompt ids and system names
        # are the user's, of any length
        widths = [
            max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(columns)
        ]
        text_columns = {"prompt", "representation", "system", "accepted"}

        def line(cells: list[str]) -> str:
            out = [
                cell.ljust(w) if name in text_columns else cell.rjust(w)
                for cell, w, name in zip(cells, widths, columns)
            ]
            return "  ".join(out).rstrip()

        return "\n".join([title, line(columns), *(line(row) for row in rows), *notes])

    def _repr_html_(self) -> str:
        """The summary as an HTML table, for notebooks (every value escaped)."""
        import pandas as pd

        title, columns, rows, notes = self._summary_rows()
        table = pd.DataFrame(rows, columns=columns).to_html(index=False, escape=True)
        items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        return (
            f"<div><p><b>{html.escape(title)}</b></p>{table}"
            + (f"<ul>{items}</ul>" if items else "")
            + "</div>"
        )

    def to_json_dict(self) -> dict[str, Any]:
        """Return the tables (as records) and metadata as JSON-able Python objects.

        Returns
        -------
        data : dict
            ``{"meta": {...}, "tables": {name: [record, ...]}}``, with NaN and
            missing values as None (see
            ``to_json_dict`` of ``sklearn_fairaes.report._html``).
        """
        from ._html import to_json_dict

        return to_json_dict(self.tables, self.meta)

    def to_json(self, path: str | os.PathLike[str]) -> None:
        """Write ``results.json``-style output to ``path``.

        Parameters
        ----------
        path : str or path-like
            The file to write (UTF-8 JSON, indented; replaced if it exists).
        """
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_json_dict(), fh, indent=1, allow_nan=False)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """Render the self-contained HTML report; write it to ``path`` when given.

        Parameters
        ----------
        path : str or path-like, default=None
            The file to write (UTF-8; replaced if it exists); None writes nothing.

        Returns
        -------
        html : str
            The complete HTML document, with the figures embedded.
        """
        from ._html import render_html

        figures: Mapping[str, Any] | None = self._figures
        if figures is None and self._figure_cache is not None:
            from ._figure_cache import figure_pngs

            figures = figure_pngs(self.tables, self.meta, self._figure_cache, _DPI)
        page = render_html(
            self.tables, self.meta, self.figures if figures is None else figures, dpi=_DPI
        )
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(page)
        return page

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> AuditResult:
        """Read a report folder written by :meth:`save` (or ``fairaes audit --out``).

        The tables come from ``results.json`` (raw values: the CSV files
        neutralise cells a spreadsheet would run as formulas), the replicates
        from ``replicates.npz`` (read without pickle: a report runs no code).

        Parameters
        ----------
        folder : str or path-like
            The report folder.

        Returns
        -------
        result : AuditResult
            Its tables, meta and replicates; NaN where the JSON holds null.

        Raises
        ------
        ValueError
            If ``folder`` is not a report of ours (no ``.fairaes-report``
            marker, or a ``fairaes compare`` folder), its ``results.json`` is
            malformed or of a newer format than this version reads, or
            ``replicates.npz`` is malformed.

        Examples
        --------
        >>> import tempfile, os
        >>> import pandas as pd
        >>> from sklearn_fairaes.report import AuditResult
        >>> table = pd.DataFrame({"prompt": ["all"], "system": ["engine"],
        ...                       "score": [0.71]})
        >>> meta = {"title": "Demo", "n_essays": 40, "prompts": ["all"],
        ...         "representations": ["tfidf"], "systems": {"engine": {}}}
        >>> key = ("all", "scores", "", "engine", "score")
        >>> folder = os.path.join(tempfile.mkdtemp(), "report")
        >>> AuditResult({"scores": table}, meta, {key: [0.70, 0.72]}).save(folder)
        >>> loaded = AuditResult.load(folder)
        >>> loaded.tables["scores"]["score"].tolist(), loaded.replicates[key].tolist()
        ([0.71], [0.7, 0.72])
        """
        from ._load import read_report

        tables, meta, replicates = read_report(folder)
        return cls(tables, meta, replicates=replicates)

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write ``report.html``, ``results.json`` and ``tables/*.csv`` into ``folder``.

        The report is written into a sibling ``.FOLDER.partial-*`` and renamed to
        ``folder`` when complete, with a marker file ``.fairaes-report`` listing
        what was written; an earlier report of ours at ``folder`` is replaced
        (renamed aside, then deleted), so ``folder`` holds either the old or the
        new complete report. A process killed between the two renames leaves the
        old report in ``.FOLDER.old-*``; the next save or ``fairaes`` run on
        ``folder`` puts it back, with a warning (see
        ``sklearn_fairaes.report._output``); only folders a run of ours made are
        ever moved or removed. A new folder and its files get the user's umask;
        a replaced folder's permission bits, group and setgid bit are kept (a
        private 700 folder stays private). CSV cells that begin with ``=``,
        ``+``, ``-``, ``@``, a tab or a carriage return get a leading ``'`` so that
        spreadsheets show them as text; ``results.json`` keeps the raw text.

        Parameters
        ----------
        folder : str or path-like
            A missing or empty folder, or an earlier report of ours holding
            only the files it wrote. Anything else is refused: files of other
            programs are never deleted.

        Raises
        ------
        ValueError
            If ``folder`` is a file, a folder that is not a report of ours or
            holds other files, the current or home folder, a mount point (save
            into a folder inside it), or is being written by another run.
        OSError
            If a file cannot be written (e.g. the disk is full); ``folder`` is
            then unchanged.
        """
        import warnings

        from ._output import claim_folder

        notes: list[str] = []
        try:
            claim = claim_folder(folder, force=True, option="folder", on_note=notes.append)
        finally:
            # an interrupted run's folders restored or removed: never silently
            for note in notes:
                warnings.warn(f"{folder}: {note}", UserWarning, stacklevel=2)
        try:
            claim.commit(self._write_files)
        finally:
            claim.release()

    def _write_files(self, folder: Path) -> list[str]:
        """Write the report's files into the new folder ``folder``; return their names."""
        from ._output import pause, write_tables

        written = write_tables(folder, self.tables)
        self.to_json(folder / "results.json")
        written.append("results.json")
        pause("between-files")
        if self.replicates:
            # plain arrays, never a pickle: loading a report runs no code
            write_replicates(folder / REPLICATES_FILE, self.replicates)
            written.append(REPLICATES_FILE)
        self.to_html(folder / "report.html")
        written.append("report.html")
        return written
