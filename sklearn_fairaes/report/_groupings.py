"""The audit's groupings: group columns, binned numeric columns, intersections.

A *grouping* is one way of splitting the essays into groups: a group column
(``group_col``), a numeric column cut into quantile bins (``bin_cols``), or,
with ``intersections=True``, the intersection of two or more of these. The
group view analyses each grouping on its own (its tables have a ``grouping``
column). :func:`plan_groupings` reads and checks them all, for every prompt,
before any work, and refuses with :class:`AuditInputError` what the group
view cannot use.

Quantile bins are cut per prompt (a prompt's word counts are binned among
that prompt's essays) with :func:`pandas.qcut`. Tied values never straddle
two bins, so heavy ties can merge bins (``duplicates="drop"``): the bins
left are numbered from 1 and a note says how many were asked and made. A
bin's label names its column, its number and the smallest and largest value
in it: ``"word_count Q1 [12, 143]"``. An intersection's label joins its
parts' labels: ``"race=Black & gender=F"`` (a bin label already names its
column, so it is joined as it is).

Groups below ``min_group_size`` are kept: the group view reports them and
does not test them, so they need no bootstrap. A group that *is* tested
needs at least 2 essays for a bootstrap interval; with ``min_group_size`` of
1 and ``n_bootstrap > 0`` a group of one essay is refused (raise
``min_group_size`` or pass ``n_bootstrap=0``).
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..resources import require
from ._config import AuditInputError
from ._inputs import _check_groups, _prompt_order, _Where, column, short

if TYPE_CHECKING:
    from pandas import DataFrame, Series

__all__ = ["Groupings", "bin_labels", "plan_groupings", "split_group_cols"]

# joins the parts of an intersection's name and labels
_AND = " & "


@dataclass
class Groupings:
    """Every grouping of the audit, labels over all data rows.

    ``labels`` maps a grouping's name (a column, or its parts joined with
    ``" & "``) to one label (str) per data row; ``kinds`` says what each is
    (``"column"``, ``"bins"``, ``"intersection"``); ``notes`` report merged
    bins, as (prompt, note).
    """

    labels: dict[str, NDArray[Any]] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    notes: list[tuple[str, str]] = field(default_factory=list)

    def names(self) -> list[str]:
        """The groupings' names, in the order of the tables."""
        return list(self.labels)


def split_group_cols(group_col: str | Sequence[str] | None) -> list[str]:
    """``group_col`` as a list of column names (a str is one column).

    Examples
    --------
    >>> from sklearn_fairaes.report._groupings import split_group_cols
    >>> split_group_cols("race"), split_group_cols(["race", "gender"])
    (['race'], ['race', 'gender'])
    """
    if group_col is None:
        return []
    if isinstance(group_col, str):
        return [group_col]
    names = list(group_col)
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad or not names:
        raise AuditInputError(
            f"group_col must be a column name or a list of column names, got "
            f"{short(group_col)}; pass e.g. group_col=['race', 'gender']"
        )
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise AuditInputError(f"group_col lists {dupes} more than once; name each once")
    return names


def _check_bin_cols(bin_cols: Mapping[str, int] | None) -> dict[str, int]:
    if bin_cols is None:
        return {}
    if not isinstance(bin_cols, Mapping):
        raise AuditInputError(
            f"bin_cols must be a dict of column name -> number of quantile bins, got "
            f"{short(bin_cols)}; pass e.g. bin_cols={{'word_count': 4}}"
        )
    out: dict[str, int] = {}
    for name, k in bin_cols.items():
        if not isinstance(k, numbers.Integral) or isinstance(k, bool) or int(k) < 2:
            raise AuditInputError(
                f"bin column {name!r} asks for {short(k)} bins; quantile bins need a "
                f"whole number of at least 2, e.g. bin_cols={{{name!r}: 4}} "
                f"(--bin-col {name}:4)"
            )
        out[str(name)] = int(k)
    return out


def _number(x: float) -> str:
    return f"{float(x):.6g}"


def bin_labels(
    values: NDArray[np.float64], name: str, n_bins: int
) -> tuple[NDArray[Any], int]:
    """Quantile bins of ``values`` as labels, and how many bins there are.

    ``pandas.qcut(values, n_bins, duplicates="drop")``: ties that fall on a
    quantile merge bins, so there may be fewer than ``n_bins``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.report._groupings import bin_labels
    >>> labels, k = bin_labels(np.array([3.0, 1.0, 2.0, 4.0]), "wc", 2)
    >>> list(labels), k
    (['wc Q2 [3, 4]', 'wc Q1 [1, 2]', 'wc Q1 [1, 2]', 'wc Q2 [3, 4]'], 2)
    """
    pd = require("pandas", purpose="the audit")
    if np.ptp(values) == 0:
        # qcut leaves a constant column uncut (every code NaN): one bin
        codes = np.zeros(values.shape[0], dtype=np.intp)
    else:
        codes = np.asarray(
            pd.qcut(values, n_bins, labels=False, duplicates="drop"), dtype=np.intp
        )
    k = int(codes.max()) + 1
    text = []
    for b in range(k):
        inside = values[codes == b]
        text.append(f"{name} Q{b + 1} [{_number(inside.min())}, {_number(inside.max())}]")
    return np.asarray(text, dtype=object)[codes], k


def _bins(raw: Series, name: str, n_bins: int, prompt_ids: NDArray[Any], where: _Where,
          notes: list[tuple[str, str]]) -> NDArray[Any]:  # fmt: skip
    """The bin labels of one numeric column, cut per prompt."""
    pd = require("pandas", purpose="the audit")
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    text = np.isnan(values) & raw.notna().to_numpy()
    if text.any():
        rows = np.flatnonzero(text)
        raise AuditInputError(
            f"bin column {name!r} has text in {where.row(int(rows[0]))} "
            f"({short(raw.iloc[rows[0]])}; {rows.size} row(s) in all); --bin-col cuts a "
            f"numeric column into quantile bins: pass a column of numbers, or use "
            f"--group-col for a column of labels"
        )
    missing = ~np.isfinite(values)
    if missing.any():
        rows = np.flatnonzero(missing)
        listed = ", ".join(str(int(i) + 1) for i in rows[:5])
        raise AuditInputError(
            f"bin column {name!r} is empty or not finite in {where.row(int(rows[0]))} "
            f"({rows.size} row(s) in all: data rows {listed}"
            f"{', ...' if rows.size > 5 else ''}); fill those cells or drop the rows"
        )
    labels = np.empty(values.shape[0], dtype=object)
    for p in _prompt_order(prompt_ids):
        rows = np.flatnonzero(prompt_ids == p)
        got, k = bin_labels(values[rows], name, n_bins)
        if k < 2:
            raise AuditInputError(
                f"bin column {name!r}{where.of(p)} has one value "
                f"({_number(values[rows][0])}) for every essay, so it makes no bins; "
                f"pick another column or leave it out of bin_cols"
            )
        if k < n_bins:
            notes.append(
                (
                    p,
                    f"Bin column {name!r}{where.of(p)}: ties merged the {n_bins} quantile "
                    f"bins asked for into {k}.",
                )
            )
        labels[rows] = got
    return labels


def _intersection(parts: Sequence[tuple[str, str, NDArray[Any]]]) -> NDArray[Any]:
    pieces = [
        labels
        if kind == "bins"
        else np.asarray([f"{name}={v}" for v in labels], dtype=object)
        for name, kind, labels in parts
    ]
    return np.asarray([_AND.join(row) for row in zip(*pieces)], dtype=object)


def _check_bootstrap_sizes(
    groupings: Groupings, prompt_ids: NDArray[Any], where: _Where, min_group_size: int,
    n_bootstrap: int,
) -> None:  # fmt: skip
    """Refuse a tested group of one essay when there is a bootstrap."""
    if n_bootstrap == 0 or min_group_size >= 2:
        return
    for name, labels in groupings.labels.items():
        for p in _prompt_order(prompt_ids):
            values, counts = np.unique(labels[prompt_ids == p], return_counts=True)
            if (counts < 2).any():
                one = values[counts < 2][0]
                raise AuditInputError(
                    f"grouping {name!r}{where.of(p)}: group {str(one)!r} has 1 essay, "
                    f"too few for a bootstrap interval (min_group_size="
                    f"{min_group_size} tests it); pass min_group_size=2 or more (a "
                    f"smaller group is then reported but not tested), or n_bootstrap=0"
                )


def plan_groupings(
    data: DataFrame,
    group_col: str | Sequence[str] | None,
    bin_cols: Mapping[str, int] | None,
    *,
    intersections: bool,
    min_group_size: int,
    n_bootstrap: int,
    prompt_ids: NDArray[Any],
    where: _Where,
) -> Groupings:
    """Read and check every grouping; see the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn_fairaes.report._groupings import plan_groupings
    >>> from sklearn_fairaes.report._inputs import _Where
    >>> df = pd.DataFrame({"g": list("aabb"), "wc": [10, 20, 30, 40]})
    >>> ids = np.array(["all"] * 4)
    >>> out = plan_groupings(df, "g", {"wc": 2}, intersections=True, min_group_size=2,
    ...                      n_bootstrap=0, prompt_ids=ids, where=_Where(ids, False))
    >>> out.names()
    ['g', 'wc', 'g & wc']
    >>> list(out.labels["g & wc"])[:2]
    ['g=a & wc Q1 [10, 20]', 'g=a & wc Q1 [10, 20]']
    """
    names = split_group_cols(group_col)
    bins = _check_bin_cols(bin_cols)
    both = sorted(set(names) & set(bins))
    if both:
        raise AuditInputError(
            f"{both} given both as group column and as bin column; a column is either "
            f"labels (group_col) or numbers to bin (bin_cols)"
        )
    out = Groupings()
    for name in names:
        out.labels[name] = _check_groups(
            column(data, name, "group"), name, prompt_ids, where
        )
        out.kinds[name] = "column"
    for name, k in bins.items():
        out.labels[name] = _bins(column(data, name, "bin"), name, k, prompt_ids, where,
                                 out.notes)  # fmt: skip
        out.kinds[name] = "bins"
    if intersections:
        if len(out.labels) < 2:
            raise AuditInputError(
                "intersections=True (--intersections) needs at least two groupings "
                f"(group columns or bin columns), got {out.names() or 'none'}; add one "
                "or leave intersections out"
            )
        base = [(n, out.kinds[n], out.labels[n]) for n in out.names()]
        for size in range(2, len(base) + 1):
            for parts in itertools.combinations(base, size):
                name = _AND.join(p[0] for p in parts)
                out.labels[name] = _intersection(parts)
                out.kinds[name] = "intersection"
    _check_bootstrap_sizes(out, prompt_ids, where, min_group_size, n_bootstrap)
    return out
