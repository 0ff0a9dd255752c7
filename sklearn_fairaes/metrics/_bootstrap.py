"""The essay-level bootstrap: replicate weights, intervals and paired differences.

Every bootstrap in the package resamples essays (never pairs: a pair
statistic's pairs share essays, and resampling them as if independent makes
its interval far too narrow). A replicate is a vector of multiplicities, one
per essay, drawn from ``Multinomial(n, 1/n)``: essay ``i`` is in the resampled
set ``w[b, i]`` times. A statistic is recomputed on the replicate by weighting:
a mean or a QWK by ``w``, a pair count by ``w[i] * w[j]`` (the pairs of two
different essays of the resampled set; a copy of an essay paired with itself
is not a pair of two essays), which is why all replicates of a pair statistic
come from one pass over the pairs (see the private package ``_pairs``).

Replicates are drawn per study (prompt) from the seed and the prompt's name,
in the order of the essays' ids: two audits of the same essays with the same
seed draw the same replicates whatever the order of their rows, so the
difference of their replicates is the *paired* bootstrap of the difference
(:func:`paired_difference`).
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import Bunch

__all__ = [
    "bootstrap_interval",
    "bootstrap_result",
    "bootstrap_seed",
    "check_n_bootstrap",
    "ids_digest",
    "kappa_replicates",
    "paired_difference",
    "replicate_weights",
    "smd_replicates",
]


def _key_of(ids: Sequence[Any] | NDArray[Any]) -> NDArray[np.intp]:
    """The order of ``ids`` as text (so that ``1`` and ``"1"`` order alike)."""
    text = np.asarray([str(i) for i in ids], dtype=object)
    return np.argsort(text, kind="stable")


def ids_digest(ids: Sequence[Any] | NDArray[Any]) -> str:
    """A digest of a set of essay ids, the same whatever their order.

    Two audits whose studies have the same digest resampled the same essays
    (with the same seed, the same replicates), so their replicates pair.

    Parameters
    ----------
    ids : sequence
        The essays' ids (any values; compared as text).

    Returns
    -------
    digest : str
        The hexadecimal SHA-256 of the sorted ids.

    Examples
    --------
    >>> from sklearn_fairaes.metrics._bootstrap import ids_digest
    >>> ids_digest([3, 1, 2]) == ids_digest(["1", "2", "3"])
    True
    """
    text = sorted(str(i) for i in ids)
    h = hashlib.sha256()
    for t in text:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def replicate_weights(
    ids: Sequence[Any] | NDArray[Any] | int,
    n_bootstrap: int,
    random_state: int = 0,
    *,
    stream: str = "",
) -> NDArray[np.float64]:
    """Draw essay-level bootstrap replicates as multiplicities, one row per replicate.

    Parameters
    ----------
    ids : sequence or int
        The essays' ids, in the order of the scores the weights go with; an
        int ``n`` stands for the ids ``0..n-1``. The replicates are drawn in
        the order of the ids as text, so the same essays in another order get
        the same multiplicities.
    n_bootstrap : int
        Number of replicates ``B`` (>= 1).
    random_state : int, default=0
        The seed (an int: the replicates must be reproducible from the report).
    stream : str, default=""
        Separates independent draws of one seed, e.g. the prompt's name, so
        that two prompts of one audit are not resampled alike.

    Returns
    -------
    weights : ndarray of shape (n_bootstrap, n_essays)
        ``weights[b, i]``: how many times essay ``i`` is in replicate ``b``;
        each row sums to ``n_essays``.

    Examples
    --------
    >>> from sklearn_fairaes.metrics._bootstrap import replicate_weights
    >>> w = replicate_weights(["a", "b", "c", "d"], 3, random_state=0)
    >>> w.shape, w.sum(axis=1).tolist()
    ((3, 4), [4.0, 4.0, 4.0])
    >>> w2 = replicate_weights(["d", "c", "b", "a"], 3, random_state=0)
    >>> bool((w2[:, ::-1] == w).all())
    True
    """
    if isinstance(ids, numbers.Integral):
        ids = np.arange(int(ids))
    if not isinstance(n_bootstrap, numbers.Integral) or isinstance(n_bootstrap, bool):
        raise TypeError(f"n_bootstrap must be an int, got {n_bootstrap!r}")
    if n_bootstrap < 1:
        raise ValueError(f"n_bootstrap must be at least 1, got {n_bootstrap}")
    if not isinstance(random_state, numbers.Integral) or isinstance(random_state, bool):
        raise TypeError(
            f"random_state must be an int seed for reproducible replicates, got {random_state!r}"
        )
    order = _key_of(ids)
    n = len(order)
    if n == 0:
        return np.zeros((int(n_bootstrap), 0))
    salt = int.from_bytes(hashlib.sha256(stream.encode("utf-8")).digest()[:8], "little")
    rng = np.random.default_rng([int(random_state) & (2**63 - 1), salt])
    drawn = rng.multinomial(n, np.full(n, 1.0 / n), size=int(n_bootstrap)).astype(
        np.float64
    )
    weights = np.empty_like(drawn)
    weights[:, order] = drawn
    return weights


def bootstrap_interval(
    replicates: ArrayLike, confidence_level: float = 0.95
) -> tuple[float, float]:
    """Give the percentile interval of bootstrap replicates.

    Replicates where the statistic is undefined (NaN) are left out; with
    fewer than two defined replicates the interval is ``(nan, nan)``.

    Parameters
    ----------
    replicates : array-like of shape (n_bootstrap,)
        The statistic on each replicate.
    confidence_level : float, default=0.95
        Coverage of the interval, in (0, 1).

    Returns
    -------
    low, high : float
        The ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics._bootstrap import bootstrap_interval
    >>> [round(x, 6) for x in bootstrap_interval(np.arange(101.0), 0.9)]
    [5.0, 95.0]
    """
    r = np.asarray(replicates, dtype=np.float64).ravel()
    r = r[np.isfinite(r)]
    if r.size < 2:
        return math.nan, math.nan
    alpha = (1.0 - float(confidence_level)) / 2.0
    low, high = np.quantile(r, [alpha, 1.0 - alpha])
    return float(low), float(high)


def paired_difference(
    estimate_a: float,
    estimate_b: float,
    replicates_a: ArrayLike,
    replicates_b: ArrayLike,
    confidence_level: float = 0.95,
) -> Bunch:
    """Compare two statistics on the same essays with the paired bootstrap.

    ``replicates_a[k]`` and ``replicates_b[k]`` must come from the same
    replicate weights (see :func:`replicate_weights`): the difference of the
    replicates then carries the correlation of the two statistics, which an
    interval from two independent bootstraps would ignore.

    Parameters
    ----------
    estimate_a, estimate_b : float
        The statistics on the essays as they are.
    replicates_a, replicates_b : array-like of shape (n_bootstrap,)
        Their replicates, paired.
    confidence_level : float, default=0.95
        Coverage of the interval.

    Returns
    -------
    result : Bunch
        ``difference`` (``estimate_a - estimate_b``), ``ci_low``, ``ci_high``
        (percentile interval of the replicate differences) and ``p_value``:
        the two-sided bootstrap p-value of "no difference",
        ``min(1, 2 * min(k_le, k_ge) / B')`` with ``k_le`` (``k_ge``) the
        replicate differences at most (at least) 0 plus one, over ``B'`` the
        defined replicates plus one, so that it is never 0. ``n_bootstrap``:
        the replicates where both were defined.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics._bootstrap import paired_difference
    >>> rng = np.random.default_rng(0)
    >>> common = rng.normal(size=1000)
    >>> r = paired_difference(0.8, 0.7, 0.8 + common, 0.7 + common + rng.normal(0, 0.01, 1000))
    >>> round(r.difference, 2), r.ci_low > 0, r.p_value < 0.01
    (0.1, True, True)
    """
    a = np.asarray(replicates_a, dtype=np.float64).ravel()
    b = np.asarray(replicates_b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(
            f"the two sets of replicates must pair one to one; got {a.size} and {b.size}"
        )
    d = a - b
    d = d[np.isfinite(d)]
    low, high = bootstrap_interval(d, confidence_level)
    if d.size:
        k_le = int(np.count_nonzero(d <= 0)) + 1
        k_ge = int(np.count_nonzero(d >= 0)) + 1
        p = min(1.0, 2.0 * min(k_le, k_ge) / (d.size + 1))
    else:
        p = math.nan
    return Bunch(
        difference=float(estimate_a) - float(estimate_b),
        ci_low=low,
        ci_high=high,
        p_value=float(p),
        n_bootstrap=int(d.size),
        confidence_level=float(confidence_level),
    )


def bootstrap_seed(random_state: Any) -> int:
    """An int seed for :func:`replicate_weights` from any ``random_state``.

    An int is used as it is (the replicates are then reproducible); None or a
    ``RandomState`` draws the seed from it.

    Examples
    --------
    >>> from sklearn_fairaes.metrics._bootstrap import bootstrap_seed
    >>> bootstrap_seed(7)
    7
    """
    from sklearn.utils import check_random_state

    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return int(check_random_state(random_state).randint(2**31 - 1))


def check_n_bootstrap(n_bootstrap: object, confidence_level: object) -> int | None:
    """``n_bootstrap`` as an int >= 1 or None, after checking ``confidence_level``.

    Examples
    --------
    >>> from sklearn_fairaes.metrics._bootstrap import check_n_bootstrap
    >>> check_n_bootstrap(None, 0.95), check_n_bootstrap(100, 0.9)
    (None, 100)
    """
    if n_bootstrap is None:
        return None
    if not isinstance(n_bootstrap, numbers.Integral) or isinstance(n_bootstrap, bool):
        raise TypeError(f"n_bootstrap must be None or an int, got {n_bootstrap!r}")
    if n_bootstrap < 1:
        raise ValueError(
            f"n_bootstrap must be at least 1 (or None for no bootstrap), got {n_bootstrap}"
        )
    level = confidence_level
    if (
        not isinstance(level, numbers.Real)
        or isinstance(level, bool)
        or not 0 < float(level) < 1
    ):
        raise ValueError(f"confidence_level must be in (0, 1), e.g. 0.95; got {level!r}")
    return int(n_bootstrap)


def _weighted_extremes(
    x: NDArray[np.float64], weights: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per replicate, the smallest and largest ``x`` among the essays drawn."""
    drawn = weights > 0
    return (
        np.where(drawn, x, np.inf).min(axis=1),
        np.where(drawn, x, -np.inf).max(axis=1),
    )


def kappa_replicates(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    weights: NDArray[np.float64],
    replace_undefined_by: float = np.nan,
) -> NDArray[np.float64]:
    """The quadratic kappa of ``a`` and ``b`` on every replicate at once.

    ``2 Cov / (Var a + Var b + (mean a - mean b)^2)`` with the moments
    weighted by each row of ``weights`` (population moments, as
    ``qwk(..., sample_weight=w)``): a handful of ``(B, n)`` array operations
    instead of ``B`` calls. ``a`` and ``b`` are the score points' positions
    (or the continuous scores), already mapped onto the scale; the mapping
    does not depend on the weights.

    Parameters
    ----------
    a, b : ndarray of shape (n_samples,)
    weights : ndarray of shape (n_bootstrap, n_samples)
        Multiplicities (or any non-negative weights, each row not all 0).
    replace_undefined_by : float, default=nan
        The value of a replicate whose drawn essays all have one and the same
        score in both vectors (no expected disagreement).

    Returns
    -------
    kappas : ndarray of shape (n_bootstrap,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import qwk
    >>> from sklearn_fairaes.metrics._bootstrap import kappa_replicates
    >>> a, b = np.array([0.0, 1, 2, 3, 3]), np.array([0.0, 1, 3, 3, 2])
    >>> w = np.array([[1.0, 1, 1, 1, 1], [2.0, 0, 1, 1, 1]])
    >>> kappa_replicates(a, b, w).round(4).tolist()
    [0.8529, 0.8913]
    >>> round(qwk(a, b, sample_weight=w[1]), 4)
    0.8913
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    # kappa is invariant to a common shift and scale: a unit range keeps the
    # moments away from under- and overflow, as in the single computation
    centre = (a.mean() + b.mean()) / 2
    scale = max(np.abs(a - centre).max(), np.abs(b - centre).max())
    if scale == 0 or not np.isfinite(scale):
        scale = 1.0
    a, b = (a - centre) / scale, (b - centre) / scale
    s = w.sum(axis=1)
    ma, mb = (w @ a) / s, (w @ b) / s
    da = a[None, :] - ma[:, None]
    db = b[None, :] - mb[:, None]
    cov = np.einsum("bi,bi,bi->b", w, da, db) / s
    va = np.einsum("bi,bi,bi->b", w, da, da) / s
    vb = np.einsum("bi,bi,bi->b", w, db, db) / s
    with np.errstate(invalid="ignore", divide="ignore"):
        kappas = 2.0 * cov / (va + vb + (ma - mb) ** 2)
    # undefined exactly where the single computation says so: every drawn
    # essay has one same score in both vectors
    lo_a, hi_a = _weighted_extremes(a, w)
    lo_b, hi_b = _weighted_extremes(b, w)
    undefined = (lo_a == hi_a) & (lo_b == hi_b) & (lo_a == lo_b)
    kappas[undefined] = replace_undefined_by
    return kappas


def smd_replicates(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    weights: NDArray[np.float64],
    *,
    method: str = "pooled",
    ddof: int = 1,
    population_sds: tuple[float | None, float | None] = (None, None),
) -> NDArray[np.float64]:
    """The standardized mean difference ``b - a`` on every replicate at once.

    Weighted means, and SDs with frequency weights (divisor ``sum(w) -
    ddof``), as ``standardized_mean_difference(..., sample_weight=w)``.

    Parameters
    ----------
    a, b : ndarray of shape (n_samples,)
        Human and machine scores.
    weights : ndarray of shape (n_bootstrap, n_samples)
    method : {"pooled", "unpooled", "johnson", "williamson"}, default="pooled"
        ``"johnson"`` and ``"williamson"`` divide by ``population_sds``.
    ddof : int, default=1
    population_sds : (float or None, float or None), default=(None, None)
        The given population SDs of ``a`` and ``b`` (``"johnson"`` uses the
        first, ``"williamson"`` both), fixed across replicates.

    Returns
    -------
    smds : ndarray of shape (n_bootstrap,)
        NaN where the denominator is 0 (constant scores among the drawn essays).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics import standardized_mean_difference
    >>> from sklearn_fairaes.metrics._bootstrap import smd_replicates
    >>> a, b = np.array([1.0, 2, 3, 4]), np.array([1.5, 2.5, 3.5, 4.0])
    >>> w = np.array([[1.0, 1, 1, 1], [0.0, 2, 1, 1]])
    >>> smd_replicates(a, b, w).round(4).tolist()
    [0.3116, 0.4361]
    >>> round(standardized_mean_difference(a, b, sample_weight=w[1]), 4)
    0.4361
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    s = w.sum(axis=1)
    ma, mb = (w @ a) / s, (w @ b) / s
    numerator = mb - ma

    def var(x: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
        d = x[None, :] - m[:, None]
        out: NDArray[np.float64] = np.einsum("bi,bi,bi->b", w, d, d) / (s - ddof)
        return out

    lo_a, hi_a = _weighted_extremes(a, w)
    if method == "unpooled":
        den = np.sqrt(var(a, ma))
        undefined = lo_a == hi_a
    elif method == "pooled":
        lo_b, hi_b = _weighted_extremes(b, w)
        den = np.sqrt((var(a, ma) + var(b, mb)) / 2)
        undefined = (lo_a == hi_a) & (lo_b == hi_b)
    else:
        sd_a, sd_b = (np.nan if v is None else float(v) for v in population_sds)
        fixed = sd_a if method == "johnson" else np.sqrt((sd_a**2 + sd_b**2) / 2)
        den = np.full(w.shape[0], fixed)
        undefined = den == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = numerator / den
    out[undefined | (s <= ddof)] = np.nan
    return out


def bootstrap_result(
    name: str, estimate: float, replicates: NDArray[np.float64], confidence_level: float
) -> Bunch:
    """The Bunch a metric returns with ``n_bootstrap``: estimate, interval, replicates.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.metrics._bootstrap import bootstrap_result
    >>> r = bootstrap_result("qwk", 0.5, np.linspace(0.4, 0.6, 101), 0.9)
    >>> r.qwk, round(r.ci_low, 2), round(r.ci_high, 2), r.n_bootstrap
    (0.5, 0.41, 0.59, 101)
    """
    low, high = bootstrap_interval(replicates, confidence_level)
    return Bunch(
        **{name: float(estimate)},
        ci_low=low,
        ci_high=high,
        replicates=np.asarray(replicates, dtype=np.float64),
        confidence_level=float(confidence_level),
        n_bootstrap=int(np.asarray(replicates).shape[0]),
    )
