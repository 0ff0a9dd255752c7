"""The screened review's per-pair work on one block, compiled with numba.

``_review_screened._ScreenedReview`` does, for every pair of a float32
similarity block, about a dozen element-wise steps: the normalised score
difference ``o``, the distance ``dn``, the quotient ``q``, its histogram key,
and the tests that pick the pairs the exact passes settle (near the
constants, in the quantile windows, among the worst violations or the nearest
neighbours). As NumPy passes over 32-row strips they cost more thread time
than the matrix product that made the block. This kernel does them in three
loops per row (the first vectorised, the second the histogram and a list of
the pairs to look at, the third those few), without the GIL (the engine's
pass threads run it side by side), with the same results: its tests are the
NumPy code's float32 tests, its pruning of the candidates of the worst
violations and neighbours uses the same bounds (at other moments, so the
candidates can differ, never the results), and the error bounds of
``_review_screened._Setup`` hold for any order of float32 evaluation (no
``fastmath``, so nothing is reassociated). At N=50,000, d=384 the shared
pass of the three review metrics took 1.32 times :func:`lipschitz_fraction`
with it and 2.5 times with the NumPy strips (``benchmarks/README.md``).

numba is an optional extra (``pip install "sklearn-fairaes[fast]"``): this
module imports it, and ``_review_screened`` imports this module only when
it runs a pass; without numba the NumPy strips run, with the same results. The
functions are at module level so that numba's on-disk cache (``cache=True``)
finds them again: the kernel compiles once per installation (a few seconds),
not once per process. Where numba finds no folder it can write its cache to
(a read-only installation and home, no ``NUMBA_CACHE_DIR``), the kernels are
compiled without it, in every process, and :data:`CACHED` says so.
"""

from __future__ import annotations

import numba
import numpy as np

#: Output counters of :func:`review_block`, in its ``counts`` array.
N_UNDECIDED, N_WINDOW, N_KNN, N_ROUTED, N_TAIL = range(5)

#: False when numba could not cache the kernels on disk (they compile per process).
CACHED = True


def _compiled(**options):
    def wrap(function):
        global CACHED  # noqa: PLW0603 - set once, while the module is imported
        try:
            return numba.njit(nogil=True, cache=True, **options)(function)
        except RuntimeError:
            # "cannot cache function ...: no locator available": numba looks for
            # a cache folder when the function is decorated, not when it compiles
            CACHED = False
            return numba.njit(nogil=True, **options)(function)

    return wrap


@_compiled()
def compact(t_i, t_j, t_v, n_t, top, floor, eps_v):
    """Keep the tail candidates that can still be among the ``top``."""
    kth = np.sort(t_v[:n_t])[n_t - top]
    floor = max(floor, np.float64(kth) - 2 * eps_v)
    kept = 0
    for r in range(n_t):
        if t_v[r] >= floor:
            t_i[kept], t_j[kept], t_v[kept] = t_i[r], t_j[r], t_v[r]
            kept += 1
    return kept, floor


@_compiled()
def below(floor):
    """The largest float32 at most ``floor``: its test keeps all of ``v >= floor``."""
    f = np.float32(floor)
    if np.float64(f) > floor:
        f = np.nextafter(f, np.float32(-np.inf))
    return f


# error_model="numpy": a quotient of the routed pairs (distance about 0) is
# inf or NaN, never read, as in NumPy
@_compiled(error_model="numpy")
def review_block(  # noqa: PLR0913 - one call per block, every input of it
    S, mask, has_mask, zr, zc, sh32, a32, nb32, s_star,
    special, c_of_key, w_of_key, shift, discard, hist,
    c32, c_lo, c_hi, c_err, sure, u_i, u_j, u_e,
    w_lo_key, w_hi_key, w_lo, w_hi, w_below, w_i, w_j, w_q, w_d, w_e,
    thr_r, thr_c, k_i, k_j, k_s,
    r_i, r_j,
    top, L32, floor0, eps_v, t_i, t_j, t_v,
    r0, c0, counts,
):  # fmt: skip
    m, c = S.shape
    hist[:] = 0
    sure[:] = 0
    w_below[:] = 0
    counts[:] = 0
    o = np.empty(c, dtype=np.float32)
    dn = np.empty(c, dtype=np.float32)
    q = np.empty(c, dtype=np.float32)
    flag = np.empty(c, dtype=np.uint8)
    idx = np.empty(c, dtype=np.int64)
    qbits = q.view(np.int32)
    zero = np.float32(0.0)
    n_const = c32.shape[0]
    n_win = w_lo.shape[0]
    cap_u, cap_w, cap_k = u_i.shape[0], w_i.shape[0], k_i.shape[0]
    cap_r, cap_t = r_i.shape[0], t_i.shape[0]
    n_u = n_w = n_k = n_r = n_t = 0
    floor = floor0
    floor32 = below(floor)
    for a in range(m):
        # 1. vectorised: o, d, q, and flags: 1 a neighbour or routed, 2
        # routed (settled exactly), 4 a top violation (a few per row once
        # the bounds are tight), 8 not a pair of the block
        zi = zr[a]
        lo_s = min(thr_r[a], s_star)
        for b in range(c):
            s = S[a, b]
            d = max(abs(zi - zc[b]) - sh32, zero)
            e = s * nb32 + a32
            o[b] = d
            dn[b] = e
            q[b] = d / e
            near = np.uint8((s >= lo_s) | (s >= thr_c[b]))
            routed = np.uint8(s >= s_star)
            tail = np.uint8((d - L32 * e) >= floor32)
            flag[b] = near | (routed << 1) | ((tail & (routed ^ 1)) << 2)
        if has_mask:  # a loop of its own: in the one above it costs 40%
            for b in range(c):
                flag[b] |= np.uint8(mask[a, b] ^ 1) << 3
        # 2. the histogram, and the list of the pairs to look at
        nf = 0
        for b in range(c):
            fb = flag[b]
            key = qbits[b] >> shift  # a finite q >= 0 of a pair: no clipping
            if fb & 10:
                key = discard
            hist[key] += 1
            idx[nf] = b
            nf += ((fb & 5) | special[key]) != 0
        i = r0 + a
        for p in range(nf):
            b = idx[p]
            fb = flag[b]
            if fb & 8:
                continue
            j = c0 + b
            if fb & 1:
                # 3. neighbours and routed pairs
                s = S[a, b]
                if s >= thr_r[a]:
                    if n_k < cap_k:
                        k_i[n_k], k_j[n_k], k_s[n_k] = i, j, s
                    n_k += 1
                if s >= thr_c[b]:
                    if n_k < cap_k:
                        k_i[n_k], k_j[n_k], k_s[n_k] = j, i, s
                    n_k += 1
                if fb & 2:
                    if n_r < cap_r:
                        r_i[n_r], r_j[n_r] = i, j
                    n_r += 1
                    continue
            # 4. pairs in a constant's or a window's bins
            key = qbits[b] >> shift
            ce = c_of_key[key]
            if ce != -1:
                first, last = (ce, ce + 1) if ce >= 0 else (0, n_const)
                for e_ in range(first, last):
                    if c_lo[e_] <= key <= c_hi[e_]:
                        t = o[b] - c32[e_] * dn[b]
                        if t < -c_err[e_]:
                            sure[e_] += 1
                        elif t <= c_err[e_]:
                            if n_u < cap_u:
                                u_i[n_u], u_j[n_u], u_e[n_u] = i, j, e_
                            n_u += 1
            we = w_of_key[key]
            if we != -1:
                qq = q[b]
                first, last = (we, we + 1) if we >= 0 else (0, n_win)
                for e_ in range(first, last):
                    if w_lo_key[e_] <= key <= w_hi_key[e_]:
                        if qq < w_lo[e_]:
                            w_below[e_] += 1
                        elif qq <= w_hi[e_]:
                            if n_w < cap_w:
                                w_i[n_w], w_j[n_w] = i, j
                                w_q[n_w], w_d[n_w], w_e[n_w] = qq, dn[b], e_
                            n_w += 1
            # 5. candidates of the worst violations
            if fb & 4:
                v = o[b] - L32 * dn[b]
                if v < floor:
                    continue
                if n_t == cap_t and cap_t >= top:
                    n_t, floor = compact(t_i, t_j, t_v, n_t, top, floor, eps_v)
                    floor32 = below(floor)
                    if v < floor:
                        continue
                if n_t < cap_t:
                    t_i[n_t], t_j[n_t], t_v[n_t] = i, j, v
                n_t += 1
    hist[discard] = 0
    counts[N_UNDECIDED] = n_u
    counts[N_WINDOW] = n_w
    counts[N_KNN] = n_k
    counts[N_ROUTED] = n_r
    counts[N_TAIL] = n_t


@_compiled()
def remember_and_keep(best, i, j, s, two_eps):
    """Fold candidates into each essay's ``k`` largest similarities; keep the useful.

    ``best[e]`` holds essay ``e``'s ``k`` largest so far, ascending. Then the
    candidates at or above their essay's new ``k``-th largest less ``two_eps``
    (in float64, as ``_review_screened._neighbors`` tests) are moved to the
    front of ``i``, ``j``, ``s``; returns how many.
    """
    k = best.shape[1]
    for p in range(i.shape[0]):
        r = i[p]
        v = s[p]
        if v > best[r, 0]:
            t = 0
            while t + 1 < k and best[r, t + 1] < v:
                best[r, t] = best[r, t + 1]
                t += 1
            best[r, t] = v
    kept = 0
    for p in range(i.shape[0]):
        r = i[p]
        if np.float64(s[p]) >= np.float64(best[r, 0]) - two_eps:
            i[kept], j[kept], s[kept] = i[p], j[p], s[p]
            kept += 1
    return kept
