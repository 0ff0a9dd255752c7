"""The pairwise engine on worker processes: work is split, results are bit-identical.

Each block is counted where it is mapped (the thread, the worker's process id,
or the Dask worker's address, recorded by the reducer inside the task), so the
counts come from the workers, not from the client.

The two tests on worker processes are marked slow: each new worker imports the
package (about 3.5 s of CPU), and on 2 busy cores they took 28 s (loky) and
43 s (Dask) here.
"""

import os
import sys
import threading
import time
from collections import Counter

import numpy as np
import pytest
from conftest import require_module
from joblib import Parallel, delayed, parallel_config
from scipy.spatial.distance import pdist

import sklearn_fairaes as sf
from sklearn_fairaes.metrics._pairs import _blocks, _types
from sklearn_fairaes.metrics._pairs._engine import PairwiseEngine
from sklearn_fairaes.metrics._pairs._range import MinMaxReducer
from sklearn_fairaes.metrics._pairs._reducers import HistogramReducer

N_ASAP7 = 1569  # essays of ASAP prompt 7


def _where() -> str:
    """Where this code runs: the Dask worker's address, else process and thread."""
    distributed = sys.modules.get("distributed")  # imported in any Dask worker
    if distributed is not None:
        try:
            return distributed.get_worker().address
        except ValueError:  # not in a Dask worker
            pass
    return f"pid:{os.getpid()}:{threading.get_ident()}"


class Counted:
    """Wrap a reducer; each partial also counts its blocks by where they ran.

    Each block also takes ``pause`` seconds, so that a free worker is always
    given the next task while the other one works (otherwise one fast worker
    could take every task and the test would say nothing about splitting).
    """

    def __init__(self, inner, pause=0.1):
        self.inner = inner
        self.pause = pause
        self.block_kind = getattr(inner, "block_kind", "distance")

    def map(self, block):
        time.sleep(self.pause)
        spec = (block.row_start, block.row_stop, block.col_start, block.col_stop)
        return self.inner.map(block), Counter({_where(): 1}), [spec]

    def combine(self, a, b):
        return self.inner.combine(a[0], b[0]), a[1] + b[1], a[2] + b[2]

    def empty(self):
        return self.inner.empty(), Counter(), []


def _asap_sized(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_ASAP7, 24))
    y = rng.integers(0, 31, size=N_ASAP7).astype(float)  # prompt 7's 0-30 scale
    return X, y


def _assert_identical(a, b):
    assert len(a) == len(b)
    for x, z in zip(a, b):
        np.testing.assert_array_equal(x, z)  # bit for bit, float sums included


def test_default_blocks_split_asap_sized_problems():
    engine = PairwiseEngine(np.ones((N_ASAP7, 2)))
    specs = engine._block_specs()
    assert engine.block_size == 512  # 4 bands of rows, not one 1569 x 1569 block
    # 10 blocks of 512 x 512 entries or fewer (1,624,641 in all); chunks of at
    # least 1,624,641 // 16 = 101,540 entries: 7 (the 33-column blocks join the
    # next block)
    assert len(specs) == 10 and len(_blocks._chunk_specs(specs)) == 7
    # large problems keep the measured default
    assert _types._default_block_size(20_000) == _types.DEFAULT_BLOCK_SIZE
    assert (
        _types._default_block_size(5_800) == 725 and _types._default_block_size(10) == 512
    )


def _serial_reference(X, y, n_bins):
    serial = PairwiseEngine(X)  # n_jobs=1: in-process, blocks cached
    lo, hi, count = serial.map_reduce(MinMaxReducer())
    d = pdist(X, "cosine")
    assert count == d.size and lo == pytest.approx(d.min(), abs=1e-14)
    reducer = HistogramReducer(lo, hi, n_bins, y=y)
    ref = serial.map_reduce(reducer)
    assert ref[0].sum() == d.size
    return reducer, ref, serial._block_specs()


def test_n_jobs_2_threads_split_asap_sized_work_with_identical_results():
    X, y = _asap_sized()
    reducer, ref, blocks = _serial_reference(X, y, 97)
    with parallel_config(backend="threading"):
        got, where, specs = PairwiseEngine(X, n_jobs=2).map_reduce(Counted(reducer))
    _assert_identical(got, ref)
    assert sorted(specs) == sorted(blocks)  # every block once
    me = f"pid:{os.getpid()}:{threading.get_ident()}"
    assert me not in where and len(where) == 2, where  # two threads, not the caller
    assert sum(where.values()) == 10, where


@pytest.mark.slow
def test_n_jobs_2_processes_split_asap_sized_work_with_identical_results():
    X, y = _asap_sized()
    reducer, ref, blocks = _serial_reference(X, y, 97)
    # both loky workers up before the work starts (the executor is reused)
    Parallel(n_jobs=2)(delayed(time.sleep)(0.5) for _ in range(2))
    got, where, specs = PairwiseEngine(X, n_jobs=2).map_reduce(Counted(reducer))
    _assert_identical(got, ref)
    assert sorted(specs) == sorted(blocks)
    pids = {w.split(":")[1] for w in where}
    assert len(pids) == 2 and str(os.getpid()) not in pids, where
    assert sum(where.values()) == 10, where
    # the public metrics, on the same workers
    one = sf.lipschitz_fraction(X, y, return_counts=True)
    two = sf.lipschitz_fraction(X, y, return_counts=True, n_jobs=2)
    assert (two.n_satisfied, two.n_pairs) == (one.n_satisfied, one.n_pairs)
    # a curve of float means: the grouping of the sums must not change
    curve_one = sf.score_distance_curve(X, y, n_bins=20)
    curve_two = sf.score_distance_curve(X, y, n_bins=20, n_jobs=2)
    for key in curve_one:
        np.testing.assert_array_equal(
            np.asarray(curve_two[key]), np.asarray(curve_one[key])
        )


@pytest.mark.slow
def test_dask_process_cluster_runs_blocks_on_its_workers():
    distributed = require_module("distributed", "dask")
    X, y = _asap_sized(seed=2)
    reducer, ref, blocks = _serial_reference(X, y, 61)
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:  # fmt: skip
        workers = set(client.scheduler_info()["workers"])
        with parallel_config(backend="dask"):
            got, where, specs = PairwiseEngine(X).map_reduce(Counted(reducer))
            lf = sf.lipschitz_fraction(X, y, return_counts=True)
    _assert_identical(got, ref)
    assert sorted(specs) == sorted(blocks)
    assert set(where) == workers and len(workers) == 2, where  # both, and only them
    assert sum(where.values()) == len(specs)
    assert lf.n_satisfied == sf.lipschitz_fraction(X, y, return_counts=True).n_satisfied


# Blocks whose undecided pairs were settled in this process, by counter class:
# filled in the Dask workers (see _count_settling_here).
_SETTLED_HERE: Counter = Counter()


def _count_settling_here(patch=setattr):
    """Make this process count the blocks each screened counter settles."""
    from sklearn_fairaes.metrics import _group
    from sklearn_fairaes.metrics._pairs import _counters

    for cls in (_counters._ScreenedLipschitzCounter, _group._ScreenedGroupLipschitzCounter):
        real = cls.__dict__["settled"]

        def settled(self, sure, i, j, _real=real):
            _SETTLED_HERE[type(self).__name__] += 1
            return _real(self, sure, i, j)

        patch(cls, "settled", settled)
    _SETTLED_HERE.clear()


def _settled_here():
    return dict(_SETTLED_HERE)


@pytest.mark.slow
def test_dask_process_cluster_counts_screened_lipschitz_pairs_on_its_workers(monkeypatch):
    # The exact counts on the float32-screened path (undecided pairs settled
    # block by block): on the workers of a process cluster, identical to the
    # local run, each worker settling blocks and the client none.
    from sklearn_fairaes.metrics._pairs import _engine

    distributed = require_module("distributed", "dask")
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)  # the screened path at small N
    X, y = _asap_sized(seed=4)
    X[1200:] = X[:369]  # duplicates with their scores: undecided pairs
    y[1200:] = y[:369]
    groups = np.random.default_rng(4).choice(["a", "b", "c"], size=N_ASAP7)
    assert PairwiseEngine(X).screenable
    n_blocks = len(PairwiseEngine(X)._block_specs())
    local = sf.lipschitz_fraction(X, y, return_counts=True)
    local_groups = sf.group_lipschitz_fraction(X, y, groups=groups)
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:  # fmt: skip
        client.run(_count_settling_here)
        _count_settling_here(monkeypatch.setattr)  # the client must settle nothing
        with parallel_config(backend="dask"):
            got = sf.lipschitz_fraction(X, y, return_counts=True)
            got_groups = sf.group_lipschitz_fraction(X, y, groups=groups)
        per_worker = client.run(_settled_here)
    assert (got.n_satisfied, got.n_pairs) == (local.n_satisfied, local.n_pairs)
    for key in ("n_satisfied", "n_satisfied_within", "n_satisfied_cross", "n_pairs"):
        assert got_groups[key] == local_groups[key], key
    np.testing.assert_array_equal(got_groups.group_n_satisfied,
                                  local_groups.group_n_satisfied)  # fmt: skip
    assert _settled_here() == {}  # nothing settled in the client
    assert len(per_worker) == 2 and all(per_worker.values()), per_worker
    total = Counter()
    for counts in per_worker.values():
        total.update(counts)
    # every block of each pass once: the count (sorted by score), then the
    # within-group and the cross-group passes
    assert total == {
        "_SortedScreenedLipschitzCounter": n_blocks,
        "_ScreenedGroupLipschitzCounter": n_blocks,
        "_ScreenedLipschitzCounter": n_blocks,
    }, total


def test_engine_reports_its_arrays_to_sizeof():
    # joblib's Dask backend scatters an argument once (instead of embedding it
    # in every task) when dask.sizeof, i.e. sys.getsizeof, says it is large
    import scipy.sparse as sparse

    dask_sizeof = require_module("dask.sizeof", "dask").sizeof
    X, _ = _asap_sized()
    dense = PairwiseEngine(X)
    assert dask_sizeof(dense) == sys.getsizeof(dense) >= X.size * 8  # float64 rows
    rows = sparse.random(300, 2000, density=0.05, format="csr", random_state=0)
    engine = PairwiseEngine(rows)
    assert sys.getsizeof(engine) >= rows.data.nbytes + rows.indices.nbytes


def test_replicate_counter_reports_its_weights_to_sizeof():
    # the bootstrap counter carries (n_bootstrap, n_samples) weights: scattered
    # once per pass on Dask, not embedded in every task (an 18 MiB graph per
    # pass for 1,000 replicates of ASAP prompt 7, and Dask's warning)
    from sklearn_fairaes.metrics._pairs._bootstrap_pairs import ReplicateLipschitzCounter

    dask_sizeof = require_module("dask.sizeof", "dask").sizeof
    weights = np.ones((1000, N_ASAP7))
    counter = ReplicateLipschitzCounter(weights, [])
    assert dask_sizeof(counter) == sys.getsizeof(counter) >= weights.nbytes * 3 // 2
