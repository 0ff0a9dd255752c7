"""The result type of table-valued pair metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from sklearn.utils import Bunch

if TYPE_CHECKING:
    import pandas as pd


class TableResult(Bunch):
    """A dict of arrays with attribute access and a pandas view.

    Keys are also attributes (``result.mean_abs_diff``). :meth:`to_frame`
    returns the per-row arrays as a :class:`pandas.DataFrame` (pandas is
    imported only then).

    Examples
    --------
    >>> from sklearn_fairaes.metrics._pairs._results import TableResult
    >>> result = TableResult(n_pairs=[3, 3])
    >>> result.n_pairs
    [3, 3]
    """

    #: Keys of the per-row arrays that :meth:`to_frame` puts in columns.
    _frame_keys: tuple[str, ...] = ()
    #: Key of the array that indexes the frame, or None for a range index.
    _frame_index: str | None = None

    def to_frame(self) -> pd.DataFrame:
        """The table as a :class:`pandas.DataFrame` (needs pandas)."""
        from ...resources import require

        pd = require("pandas", purpose="DataFrame output")
        data = {key: np.asarray(self[key]) for key in self._frame_keys}
        index = None if self._frame_index is None else self[self._frame_index]
        frame = pd.DataFrame(data, index=index)
        if self._frame_index is not None:
            frame.index.name = self._frame_index
        return frame
