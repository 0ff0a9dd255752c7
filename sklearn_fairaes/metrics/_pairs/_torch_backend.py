"""The torch backend of the pairwise engine's float32-screened passes.

With ``PairwiseEngine(..., backend="torch", device=...)`` (or
``sklearn_fairaes.set_config(pair_backend="torch")``), the screened passes --
the distance range (``PairwiseEngine.distance_range(screened=True)``) and the
screened Lipschitz counts of :func:`~sklearn_fairaes.lipschitz_fraction` and
:func:`~sklearn_fairaes.group_lipschitz_fraction` -- compute each block's
float32 similarities and the elementwise screen in torch on ``device``. Only
counts, per-block extremes and the pairs the screen cannot decide come back to
the host, where they are settled with the exact float64 distances of
``PairwiseEngine.paired_distances`` exactly as on the NumPy backend, so the
counts are identical. Passes that read float64 distances stay in NumPy.

Why the NumPy error bound holds here
------------------------------------
``PairwiseEngine._prepare_screening`` bounds the error of a float32 dot
product of two unit rows by ``gamma_n = n u / (1 - n u)`` (``u = 2**-24``),
plus the float32 rounding of the rows. That bound holds for every order of
summation (pairwise, blocked, split-K reductions of cuBLAS, the vectorised
kernels of MKL/oneDNN/OpenBLAS) and with fused multiply-adds (which round
less), as long as every product and sum is an IEEE float32 operation. It does
not hold for the reduced-precision modes torch can use for float32 matrix
products: TF32 on CUDA (10-bit mantissas: errors near ``1e-3``) or bfloat16 /
TF32 in oneDNN on CPUs with AMX. :func:`ieee_float32_matmul` therefore sets
both to IEEE around every product (``torch.backends.cuda.matmul.allow_tf32``
reads False inside) and restores the user's settings afterwards. Products
that underflow (or are flushed to zero by a device) change a dot product by at
most ``n * 2**-126``, far inside the 1% slack of that bound. cuBLAS's
emulation of float32 products with bfloat16 pieces (``BF16x9``, Blackwell
GPUs, opt-in through ``CUBLAS_EMULATION_STRATEGY``) is not covered: leave it
off. The elementwise screen makes the float32 operations of NumPy's (one
subtraction fused with its product, which rounds less); its margin assumes
gradual underflow, so it is widened by ``2**-120`` here, which covers a device
that flushes subnormal values to zero.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._config import check_device_name
from ...resources import require
from ._types import _MIN_BANDS, _MIN_BLOCK_SIZE

if TYPE_CHECKING:
    from collections.abc import Iterator

    from numpy.typing import NDArray

    from ._types import BlockSpec, Pairs

__all__: list[str] = []

#: Added to the screen's margin on this backend (see the module docstring).
FLUSH_SLACK = 2.0**-120

#: Largest default block side on a CUDA device. A 2048 block is a 3 GFLOP
#: product at d=384, tens of microseconds on a large GPU: launches and the
#: per-block transfers to the host would dominate. 8192 blocks (256 MB of
#: float32 similarities, about 1 GB of device memory with the screen's
#: temporaries) make each product about 50 GFLOP.
CUDA_BLOCK_SIZE = 8192

#: Held while an engine makes its device state, so that threads sharing one
#: engine make it once.
setup_lock = threading.Lock()


def device_block_size(n_samples: int) -> int:
    """Default block side on a CUDA device: as on the CPU, up to :data:`CUDA_BLOCK_SIZE`."""
    return min(CUDA_BLOCK_SIZE, max(_MIN_BLOCK_SIZE, -(-n_samples // _MIN_BANDS)))


def import_torch() -> Any:
    """torch, or an ImportError naming the extra that installs it."""
    return require("torch", purpose="the torch pair backend (backend='torch')")


def check_device(device: object) -> str:
    """``device`` if this machine has it, else a ValueError, before any work.

    The spelling is that of ``set_config(device=)``; whether the machine has
    the device is asked of torch as for the neural encoders (one check,
    ``_param_validation.check_device``). Imports torch even for ``"cpu"``: the
    backend needs it there too (an ImportError naming the extra when it is
    missing).
    """
    # function level: the pair engine needs it only on the torch backend
    from ..._param_validation import check_device as check_torch_device

    device = check_device_name(device)
    import_torch()
    check_torch_device(device, purpose="the torch pair backend")
    return device


# The precision switches are process-wide: the first of several concurrent
# products (threads of one engine) saves and sets them, the last restores them.
_precision_lock = threading.Lock()
_precision_depth = 0
_precision_saved: tuple[str, str] | None = None


def _matmul_precisions(torch: Any) -> tuple[str, str]:
    # the per-backend getters of the new API work whichever API the user set
    # them with; the legacy getters raise once both APIs were used
    return (
        torch.backends.cuda.matmul.fp32_precision,
        torch.backends.mkldnn.matmul.fp32_precision,
    )


def _set_matmul_precisions(torch: Any, values: tuple[str, str]) -> None:
    torch.backends.cuda.matmul.fp32_precision = values[0]
    torch.backends.mkldnn.matmul.fp32_precision = values[1]


@contextmanager
def ieee_float32_matmul(torch: Any) -> Iterator[None]:
    """Float32 matrix products in IEEE float32 (no TF32, no bfloat16) inside.

    Restores the previous settings when the last concurrent user leaves;
    settings that already ask for IEEE are not touched. The switches are
    process-wide: another thread that reads torch's legacy flags
    (``allow_tf32``) while a pass runs with reduced precision asked for may
    see torch's "mix of the legacy and new APIs" error.
    """
    global _precision_depth, _precision_saved
    with _precision_lock:
        if _precision_depth == 0:
            saved = _matmul_precisions(torch)
            # "none" defers to the generic setting, which may be reduced
            if saved != ("ieee", "ieee"):
                _set_matmul_precisions(torch, ("ieee", "ieee"))
            _precision_saved = saved
        _precision_depth += 1
    try:
        yield
    finally:
        with _precision_lock:
            _precision_depth -= 1
            if _precision_depth == 0:
                restore = _precision_saved
                _precision_saved = None
                if restore is not None and restore != ("ieee", "ieee"):
                    _set_matmul_precisions(torch, restore)


class TorchBlock:
    """A block of float32 similarities on a torch device.

    The torch counterpart of ``PairBlock`` with ``block_kind = "similarity32"``:
    ``similarities`` and ``mask`` (bool, or None for all pairs) are tensors on
    the engine's device; the reducer that receives the block owns it and may
    overwrite ``similarities``. ``pairs`` is the :class:`TorchPairs` that made
    it (for per-essay data on the device).
    """

    __slots__ = ("row_start", "row_stop", "col_start", "col_stop", "similarities",
                 "mask", "n_valid", "pairs")  # fmt: skip

    def __init__(
        self,
        spec: BlockSpec,
        similarities: Any,
        mask: Any,
        n_valid: int,
        pairs: TorchPairs,
    ) -> None:
        self.row_start, self.row_stop, self.col_start, self.col_stop = spec
        self.similarities = similarities
        self.mask = mask
        self.n_valid = n_valid
        self.pairs = pairs

    def pair_indices(self, positions: Any) -> Pairs:
        """Global ``(i, j)`` (host int64) of block positions ``(k, 2)`` on the device."""
        at = positions.cpu().numpy().astype(np.int64, copy=False)
        return self.row_start + at[:, 0], self.col_start + at[:, 1]


class TorchPairs:
    """The engine's unit rows on a torch device, and its blocks made there.

    Built lazily by the engine (never pickled: each joblib worker builds its
    own). On the CPU the rows are shared with NumPy, not copied.
    """

    def __init__(
        self,
        unit32: NDArray[np.float32],
        zero: NDArray[np.bool_],
        groups: NDArray[np.intp] | None,
        pairs: str,
        device: str,
    ) -> None:
        torch = self.torch = import_torch()
        self.device = torch.device(device)
        self.unit = torch.from_numpy(unit32).to(self.device)
        self.zero = zero
        self.any_zero = bool(zero.any())
        self.groups = (
            None
            if groups is None or pairs == "all"
            else torch.from_numpy(np.asarray(groups, dtype=np.int64)).to(self.device)
        )
        self.pairs = pairs
        self._triu: dict[tuple[int, int], Any] = {}
        self._scores: tuple[NDArray[np.float32], Any] | None = None

    def scores(self, z32: NDArray[np.float32]) -> Any:
        """Per-essay ``z32`` on the device; the last array asked for is kept."""
        # one slot: a pass asks for the same array at every block, and a
        # worker's next task (a new unpickled reducer) replaces it
        got = self._scores
        if got is None or got[0] is not z32:
            got = self._scores = (z32, self.torch.from_numpy(z32).to(self.device))
        return got[1]

    def _mask(self, r0: int, r1: int, c0: int, c1: int) -> tuple[Any, int]:
        torch = self.torch
        shape = (r1 - r0, c1 - c0)
        mask = None
        n_valid = shape[0] * shape[1]
        if r0 == c0:  # a diagonal block (square): pairs above its diagonal
            mask = self._triu.get(shape)
            if mask is None:
                mask = torch.ones(shape, dtype=torch.bool, device=self.device).triu_(1)
                self._triu[shape] = mask
            n_valid = shape[0] * (shape[0] - 1) // 2
        if self.groups is not None:
            same = self.groups[r0:r1, None] == self.groups[None, c0:c1]
            keep = same if self.pairs == "within" else same.logical_not_()
            mask = keep if mask is None else keep.logical_and_(mask)
            n_valid = int(torch.count_nonzero(mask).item())
        return mask, n_valid

    def block(self, spec: BlockSpec) -> TorchBlock:
        """Float32 similarities of block ``spec`` (and its mask) on the device."""
        torch = self.torch
        r0, r1, c0, c1 = spec
        with ieee_float32_matmul(torch):
            G = torch.mm(self.unit[r0:r1], self.unit[c0:c1].T)
        if self.any_zero:
            zr = np.flatnonzero(self.zero[r0:r1])
            zc = np.flatnonzero(self.zero[c0:c1])
            if zr.size and zc.size:
                # two zero vectors: distance 0, as the NumPy backend sets it
                rows = torch.from_numpy(zr).to(self.device)
                cols = torch.from_numpy(zc).to(self.device)
                G[rows[:, None], cols[None, :]] = 1.0
        mask, n_valid = self._mask(r0, r1, c0, c1)
        return TorchBlock(spec, G, mask, n_valid, self)


# --------------------------------------------------------------------------
# Kernels of the screened reducers
# --------------------------------------------------------------------------
def block_extremes(block: TorchBlock) -> tuple[float, float]:
    """Largest and smallest similarity of the block's valid pairs (``n_valid > 0``)."""
    import torch

    G = block.similarities
    low, high = torch.aminmax(G if block.mask is None else G[block.mask])
    top, bottom = torch.stack([high, low]).tolist()  # one transfer
    return float(top), float(bottom)


def valid_per_row(block: TorchBlock) -> NDArray[np.int64]:
    """Number of valid pairs in each row of the block (host int64)."""
    n_rows = block.row_stop - block.row_start
    if block.mask is None:
        return np.full(n_rows, block.col_stop - block.col_start, dtype=np.int64)
    import torch

    return torch.count_nonzero(block.mask, dim=1).cpu().numpy().astype(np.int64)


def block_candidates(
    block: TorchBlock, high: np.float32, low: np.float32, cap: int
) -> tuple[Pairs, Pairs] | None:
    """Pairs with similarity ``>= high`` and ``<= low``; None beyond ``cap`` of them."""
    import torch

    G = block.similarities
    # high and low are float32 numbers, so comparing with them as Python floats
    # (cast to the tensor's float32) tests exactly what NumPy tests
    above = G >= float(high)
    below = G <= float(low)
    if block.mask is not None:
        above &= block.mask
        below &= block.mask
    # count_nonzero: a bool tensor's sum() goes through int64, ten times slower
    n_above, n_below = torch.stack(
        [torch.count_nonzero(above), torch.count_nonzero(below)]
    ).tolist()
    if n_above + n_below > cap:
        return None
    return block.pair_indices(above.nonzero()), block.pair_indices(below.nonzero())


def lipschitz_screen(
    block: TorchBlock,
    z32: NDArray[np.float32],
    a: np.float32,
    b: np.float32,
    c: np.float32,
    margin: np.float32,
    per_row: bool = False,
) -> tuple[Any, Pairs]:
    """Pairs sure to satisfy the screened inequality, and the undecided pairs.

    ``T = a - b * G - c * |z_i - z_j|`` in place of the similarities, in the
    same float32 operations as ``_ScreenedLipschitzCounter.statistic``; pairs
    with ``T >= margin`` are sure, pairs with ``|T| < margin`` undecided (both
    among the valid pairs only). ``z32`` are the screen's scores (host
    float32, copied to the device once per pass); ``margin`` already includes
    :data:`FLUSH_SLACK`. ``per_row`` gives
    the sure count of each row of the block (host int64) instead of the total
    (int).
    """
    import torch

    T = block.similarities
    # a, b, c and margin are float32 numbers: as Python floats they are cast
    # back to the same float32 by each operation
    T.mul_(float(-b)).add_(float(a))
    if c:
        z = block.pairs.scores(z32)
        diff = (
            z[block.row_start : block.row_stop, None]
            - z[None, block.col_start : block.col_stop]
        )
        # T - c * |dz| in one operation: at most the roundings of NumPy's two
        # (one, with a fused multiply-add)
        T.sub_(diff.abs_(), alpha=float(c))
        del diff
    if block.mask is not None:
        T.masked_fill_(block.mask.logical_not(), -np.inf)
    sure_flags = T >= float(margin)
    sure: Any
    if per_row:
        sure = torch.count_nonzero(sure_flags, dim=1).cpu().numpy().astype(np.int64)
    else:
        sure = int(torch.count_nonzero(sure_flags).item())
    del sure_flags
    close = T.abs_() < float(margin)
    if not torch.count_nonzero(close).item():
        empty = np.empty(0, dtype=np.int64)
        return sure, (empty, empty)
    undecided = block.pair_indices(close.nonzero())
    return sure, undecided


# --------------------------------------------------------------------------
# bfloat16 location of the extremes (NumPy backend, CPUs with AMX)
# --------------------------------------------------------------------------
#: Fewest essays for which the NumPy backend's range pass uses bfloat16
#: products, when torch is already imported / when it must be imported first
#: (about 1.5 s, more than the pass saves below some 40,000 essays).
BF16_MIN_ESSAYS = (20_000, 40_000)


_AMX: bool | None = None


def cpu_has_amx_bf16() -> bool:
    """Whether this CPU has AMX bfloat16 tiles (Linux ``/proc/cpuinfo``; else False).

    bfloat16 products are about five times as fast as float32 ones with AMX
    (measured: 0.70 s against 3.77 s for the 1.25e9 pairs of 50,000 essays,
    d=384) and slower than float32 without bfloat16 units, so nothing else
    qualifies.
    """
    global _AMX
    if _AMX is None:
        try:
            with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
                _AMX = any(line.startswith("flags") and " amx_bf16" in line for line in fh)
        except OSError:
            _AMX = False
    return _AMX


def bf16_error(n_features: int) -> float:
    """Bound on ``|s16 - s|``: a bfloat16 product of two float32 unit rows, exact ``s``.

    Each row entry rounded to bfloat16 (relative ``2**-8``, plus ``2**-24``
    for the float32 step before) gives ``2 * 2**-8 + 2**-16 + 2**-24`` times
    ``sum |a_k b_k| <= 1`` (Cauchy-Schwarz); the float32 accumulation of AMX
    (and of every other oneDNN kernel) adds ``n * 2**-24``, the bfloat16
    rounding of the result ``2**-8 * |s16| <= 2**-8 * 1.02``; subnormal
    products flushed to zero change the sum by less than ``2**-100``. Doubled
    for safety.
    """
    return 2 * (2 * 2.0**-8 + 2.0**-16 + 2.0**-24 + n_features * 2.0**-24
                + 1.02 * 2.0**-8 + 2.0**-100)  # fmt: skip


#: Most candidate pairs :func:`bf16_extreme_candidates` keeps before giving up
#: (massive near-ties: many copies of one essay).
BF16_MAX_CANDIDATES = 2**22


def keep_near(
    torch: Any,
    source: Any,
    rows_near: Any,
    high: bool,
    bound: Any,
    origin: tuple[int, int],
    kept: list[tuple[Any, Any, Any]],
) -> int:
    """Append the pairs of a block's ``rows_near`` at or past ``bound``; return how many.

    ``source`` is the block's products (``origin`` its first row and column);
    a pair counts when its value is ``>= bound`` (``high``) or ``<= bound``.
    Floating blocks are compared in float32 (exact for bfloat16 values);
    integer ones as they are. One entry ``(i, j, value)`` of tensors is added.
    """
    r = torch.nonzero(rows_near, as_tuple=True)[0]
    if not r.numel():
        return 0
    sub = source[r]
    if sub.is_floating_point():
        sub = sub.float()
    near = sub >= bound if high else sub <= bound
    ii, jj = torch.nonzero(near, as_tuple=True)
    kept.append((r[ii] + origin[0], jj + origin[1], sub[ii, jj]))
    return int(ii.numel())


def prune_kept(
    kept: list[tuple[Any, Any, Any]], high_bound: Any, low_bound: Any, cap: int
) -> tuple[list[tuple[Any, Any, Any]], int] | None:
    """The kept pairs still at or past either bound, and their number; None past ``cap``.

    The extremes only grow apart while the blocks are read, so a pair dropped
    here can never be needed again.
    """
    kept = [
        (a[m], b[m], v[m])
        for a, b, v in kept
        for m in [(v >= high_bound) | (v <= low_bound)]
    ]
    n_kept = sum(int(a.numel()) for a, _, _ in kept)
    return None if n_kept > cap else (kept, n_kept)


def bf16_extreme_candidates(
    unit32: NDArray[np.float32], specs: list[BlockSpec], window: float
) -> Pairs | None:
    """The pairs ``i < j`` whose bfloat16 similarity is within ``window`` of an extreme.

    The largest and the smallest bfloat16 similarity over all blocks, and
    every pair within ``window`` of either: with ``window >= 2 * e16`` (the
    bound of :func:`bf16_error`) they include every pair whose exact
    similarity is within ``window - 2 * e16`` of an exact extreme. Kept as a
    running set, pruned as the extremes grow; None past
    :data:`BF16_MAX_CANDIDATES`.
    """
    torch = import_torch()
    rows = torch.from_numpy(unit32).to(torch.bfloat16)
    top, bottom = -np.inf, np.inf
    kept: list[tuple[Any, Any, Any]] = []  # (i, j, s16) per block, torch tensors
    n_kept = 0
    # the thresholds are compared in float32 with bfloat16 values (exact)
    lower_of: dict[tuple[int, int], Any] = {}
    with torch.no_grad():
        for r0, r1, c0, c1 in specs:
            G = rows[r0:r1] @ rows[c0:c1].T
            if r0 == c0:
                lower = lower_of.get(G.shape)
                if lower is None:
                    lower = lower_of[G.shape] = ~torch.ones(
                        G.shape, dtype=torch.bool
                    ).triu_(1)
                for_max = G.masked_fill(lower, -torch.inf)
                for_min = G.masked_fill(lower, torch.inf)
            else:
                for_max = for_min = G
            # per row first: the few rows near an extreme are searched alone
            row_max = for_max.amax(dim=1).float()
            row_min = for_min.amin(dim=1).float()
            top = max(top, float(row_max.max()))
            bottom = min(bottom, float(row_min.min()))
            for source, rows_near, high in (
                (for_max, row_max >= top - window, True),
                (for_min, row_min <= bottom + window, False),
            ):
                bound = top - window if high else bottom + window
                n_kept += keep_near(torch, source, rows_near, high, bound, (r0, c0), kept)
            if n_kept > BF16_MAX_CANDIDATES:
                pruned = prune_kept(
                    kept, top - window, bottom + window, BF16_MAX_CANDIDATES
                )
                if pruned is None:
                    return None
                kept, n_kept = pruned
    if not kept:
        e = np.empty(0, dtype=np.int64)
        return e, e
    i = torch.cat([a for a, _, _ in kept])
    j = torch.cat([b for _, b, _ in kept])
    v = torch.cat([c for _, _, c in kept])
    m = (v >= top - window) | (v <= bottom + window)
    return i[m].numpy().astype(np.int64), j[m].numpy().astype(np.int64)
