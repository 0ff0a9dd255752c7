"""int8 location of the extremes: the range pass on CPUs with int8 dot products (VNNI).

The exact distance range needs only the nearest and the farthest pair, so its
pass over all pairs may use any products whose error is bounded: the pairs
within the bound of an extreme are the candidates, and their exact distances
give the range (``PairwiseEngine._distance_range``). On CPUs without AMX but
with AVX-512 VNNI (AMD Zen 4, Intel Ice Lake and later) int8 products with
int32 sums (``torch._int_mm``) are about twice as fast as float32 ones and
exact: the only error is that of rounding the rows to int8, bounded below.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ._torch_backend import import_torch, keep_near, prune_kept

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ._types import BlockSpec, Pairs

#: Fewest essays for which the range pass uses int8 products, when torch is
#: already imported / when it must be imported first (about 1.5 s, more than
#: the pass saves below some 40,000 essays).
INT8_MIN_ESSAYS = (20_000, 40_000)

#: Most candidate pairs :func:`int8_extreme_candidates` keeps before giving up
#: (massive near-ties: many copies of one essay); the float32 pass then runs.
INT8_MAX_CANDIDATES = 2**22

#: Most dimensions: the int32 sums of ``127 * 127`` products stay exact below
#: ``2**31 / 127**2 = 133,143`` terms; the bound is far below that.
INT8_MAX_FEATURES = 2**14

_VNNI: bool | None = None


def cpu_has_int8_dot() -> bool:
    """Whether this CPU has int8 dot-product instructions (``avx512_vnni``/``avx_vnni``).

    Without them int8 products are not faster than float32 ones.
    """
    global _VNNI
    if _VNNI is None:
        try:
            with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
                _VNNI = any(
                    line.startswith("flags")
                    and (" avx512_vnni" in line or " avx_vnni" in line)
                    for line in fh
                )
        except OSError:
            _VNNI = False
    return _VNNI


def int8_rows(unit: NDArray[np.float64]) -> tuple[NDArray[np.int8], float, float]:
    """``(q, scale, error)``: the rows as int8 and a bound on the similarity error.

    ``q = rint(x / scale)`` with one ``scale`` for all rows (the largest entry
    maps to 127), so ``scale**2 * (q_i . q_j)`` is the int8 similarity, the
    int32 sum being exact. With ``x_i = scale * q_i + r_i``, ``x_i . x_j -
    scale**2 q_i . q_j = r_i . (scale q_j) + (scale q_i) . r_j + r_i . r_j``,
    at most ``2 * R * Q + R**2`` by Cauchy-Schwarz, where ``R`` is the
    largest ``|r_i|`` and ``Q`` the largest ``|scale q_i|``. Both are computed
    in float64 from ``fl(scale * q_i)``, within a relative ``1e-12`` of the
    exact values (a few roundings of ``2**-53`` per entry, summed over at most
    :data:`INT8_MAX_FEATURES` entries); they are raised by ``1e-9``, and the
    bound by 1%. ``error`` bounds ``|s8 - x_i . x_j|`` for the exact product
    of the float64 rows ``x``.
    """
    top = float(np.max(np.abs(unit), initial=0.0))
    if top == 0.0:
        return np.zeros(unit.shape, dtype=np.int8), 1.0, 0.0
    scale = top / 127
    q = np.empty(unit.shape, dtype=np.int8)
    residual = size = 0.0
    # in runs of rows: the float64 temporaries stay a few MB (a copy of the
    # rows would be 3 GB at a million essays)
    step = max(1, 2**19 // max(unit.shape[1], 1))
    for start in range(0, unit.shape[0], step):
        rows = unit[start : start + step]
        scaled = np.clip(np.rint(rows / scale), -127, 127)  # clip: may round to 128
        q[start : start + step] = scaled
        back = np.multiply(scaled, scale, out=scaled)
        diff = rows - back
        residual = max(residual, float(np.max(np.einsum("ij,ij->i", diff, diff))))
        size = max(size, float(np.max(np.einsum("ij,ij->i", back, back))))
    residual = math.sqrt(residual) * (1 + 1e-9)
    size = math.sqrt(size) * (1 + 1e-9)
    return q, scale, 1.01 * (2 * residual * size + residual**2)


def _torch_threads_of_this_thread(torch: Any, n: int) -> None:
    # torch's OpenMP thread count is per calling thread: the pool's threads
    # run one block each on one core, and the caller's setting is untouched
    torch.set_num_threads(n)


def int8_extreme_candidates(
    q: NDArray[np.int8], scale: float, specs: list[BlockSpec], window: float, threads: int
) -> Pairs | None:
    """The pairs ``i < j`` whose int8 similarity is within ``window`` of an extreme.

    The largest and the smallest int8 similarity over all blocks, and every
    pair within ``window`` of either, compared in exact integers (the window
    is rounded up to whole units of ``scale**2``): with ``window >= 2 * e8``
    (``e8`` the bound of :func:`int8_rows`) they include every pair whose
    exact similarity is within ``window - 2 * e8`` of an exact extreme. The
    blocks run in ``threads`` threads of one core each; each keeps its
    candidates against its own extremes (a wider window than the global one),
    and the global extremes filter them at the end. None past
    :data:`INT8_MAX_CANDIDATES` candidates.
    """
    torch = import_torch()
    width = math.ceil(window / (scale * scale)) + 1  # in units of scale**2
    # int8 columns padded to a multiple of 8 with zeros (exact), as the
    # kernels of some torch versions ask
    pad = -q.shape[1] % 8
    if pad:
        q = np.concatenate([q, np.zeros((q.shape[0], pad), dtype=np.int8)], axis=1)
    rows = torch.from_numpy(np.ascontiguousarray(q))

    def run(mine: list[BlockSpec]) -> tuple[int, int, list[Any]] | None:
        _torch_threads_of_this_thread(torch, 1)
        top, bottom = -(2**62), 2**62
        kept: list[Any] = []  # (i, j, value) per block, torch tensors
        n_kept = 0
        lower_of: dict[tuple[int, int], Any] = {}
        # one output buffer per thread, reused by every block: a new 16 MB
        # result per block (and masked copies of diagonal ones) fragmented
        # the heap, 7 GB of peak RSS at N=100,000
        largest = max(((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in mine), default=0)
        buffer = torch.empty(largest, dtype=torch.int32)
        with torch.no_grad():
            for r0, r1, c0, c1 in mine:
                G = buffer[: (r1 - r0) * (c1 - c0)].view(r1 - r0, c1 - c0)
                torch._int_mm(rows[r0:r1], rows[c0:c1].T, out=G)  # exact int32 sums
                lower = None
                if r0 == c0:  # a diagonal block: the pairs i < j only
                    lower = lower_of.get(G.shape)
                    if lower is None:
                        lower = lower_of[G.shape] = ~torch.ones(
                            G.shape, dtype=torch.bool
                        ).triu_(1)
                # the largest first, then the smallest; a diagonal block's
                # lower triangle is overwritten in place by a stand-in that is
                # never near the extreme sought
                for high in (True, False):
                    if lower is not None:
                        G.masked_fill_(lower, -(2**31) if high else 2**31 - 1)
                    row_ext = G.amax(dim=1) if high else G.amin(dim=1)
                    if high:
                        top = max(top, int(row_ext.max()))
                        bound = top - width
                    else:
                        bottom = min(bottom, int(row_ext.min()))
                        bound = bottom + width
                    rows_near = row_ext >= bound if high else row_ext <= bound
                    n_kept += keep_near(torch, G, rows_near, high, bound, (r0, c0), kept)
                if n_kept > INT8_MAX_CANDIDATES:
                    pruned = prune_kept(
                        kept, top - width, bottom + width, INT8_MAX_CANDIDATES
                    )
                    if pruned is None:
                        return None
                    kept, n_kept = pruned
        return top, bottom, kept

    # blocks dealt round-robin, so that each thread gets diagonal and
    # off-diagonal ones; always in a pool, never in the caller's thread (whose
    # torch setting stays as it is)
    from concurrent.futures import ThreadPoolExecutor

    shares = [specs[k::threads] for k in range(max(threads, 1))]
    with ThreadPoolExecutor(len(shares), thread_name_prefix="sklearn_fairaes-int8") as pool:
        parts = list(pool.map(run, shares))
    if any(p is None for p in parts):
        return None
    found = [p for p in parts if p is not None]
    top = max(p[0] for p in found)
    bottom = min(p[1] for p in found)
    kept = [k for p in found for k in p[2]]
    if not kept:
        e = np.empty(0, dtype=np.int64)
        return e, e
    i = torch.cat([a for a, _, _ in kept])
    j = torch.cat([b for _, b, _ in kept])
    v = torch.cat([c for _, _, c in kept])
    # i < j drops the masked lower triangle of a diagonal block, whose
    # stand-in values may lie "near" an extreme of the other side
    m = ((v >= top - width) | (v <= bottom + width)) & (i < j)
    if int(m.sum()) > INT8_MAX_CANDIDATES:
        return None
    return i[m].numpy().astype(np.int64), j[m].numpy().astype(np.int64)
