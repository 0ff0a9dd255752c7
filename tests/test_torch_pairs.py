"""The torch backend of the pair engine: identical exact counts to the NumPy one.

Every test forces the float32-screened path at small N (no block cache, as the
float32 tests of test_individual_fairness.py do) and checks the torch backend
(CPU torch; a CUDA device runs the same kernels) against the NumPy engine and
against independent references: hand-worked exact distances, the engine's
float64 pair routine, scipy's pdist.
"""

import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from conftest import REPO, require_module
from joblib import Parallel, parallel_config
from scipy.spatial.distance import pdist

import sklearn_fairaes
from sklearn_fairaes import _config
from sklearn_fairaes.metrics import (
    group_lipschitz_fraction,
    lipschitz_fraction,
    score_distance_curve,
)
from sklearn_fairaes.metrics._pairs import (
    _blocks,
    _counters,
    _engine,
    _scaling,
    _torch_backend,
    _types,
)
from sklearn_fairaes.metrics._pairs._types import condensed_to_pairs, n_pairs_of

torch = require_module("torch", "sbert")


@pytest.fixture
def screened(monkeypatch):
    """Large-problem path at small N: float32 screening, many chunks, no caches."""
    monkeypatch.setattr(_engine, "_CACHE_BYTES", 0)
    monkeypatch.setattr(_engine, "_SCREEN_CACHE_BYTES", 0)
    monkeypatch.setattr(_blocks, "_TASK_PAIRS", 3000)


@pytest.fixture
def torch_blocks(monkeypatch):
    """Count the blocks made on the torch device and the float32 NumPy blocks."""
    made = {"torch": 0, "numpy32": 0}
    torch_block = _torch_backend.TorchPairs.block
    numpy_block = _engine.PairwiseEngine._make_block

    def on_torch(self, spec):
        made["torch"] += 1
        return torch_block(self, spec)

    def on_numpy(self, spec, kind="distance"):
        made["numpy32"] += kind == "similarity32"
        return numpy_block(self, spec, kind)

    monkeypatch.setattr(_torch_backend.TorchPairs, "block", on_torch)
    monkeypatch.setattr(_engine.PairwiseEngine, "_make_block", on_numpy)
    return made


def naive_count(d, o, normalize, L):
    """The paper's recipe on condensed distances ``d`` and score differences ``o``."""
    if normalize == "minmax":
        d = (d - d.min()) / (d.max() - d.min())
        o = (o - o.min()) / (o.max() - o.min())
    elif normalize == "max":
        d, o = d / d.max(), o / o.max()
    return int(np.count_nonzero(o <= L * d))


def exact_paired(X):
    """All pair distances from the engine's float64 pair routine (no screening)."""
    engine = _engine.PairwiseEngine(X)
    i, j = condensed_to_pairs(np.arange(n_pairs_of(engine.n_samples)), engine.n_samples)
    return engine.paired_distances(i, j)


def _random_cases():
    rng = np.random.default_rng(7)
    gauss = rng.normal(size=(160, 24))
    small = rng.integers(0, 3, size=(160, 4)).astype(float)  # rational cosines, ties
    small[7] = small[3] * 2  # duplicates (parallel rows)
    small[9] = small[11] = small[40] = 0.0  # zero rows
    return {
        "gauss": (gauss, rng.integers(0, 7, size=160)),
        "small-int": (small, rng.integers(0, 3, size=160)),
        "small-int-continuous": (small, rng.normal(size=160)),
    }


CASES = _random_cases()
SETTINGS = [("minmax", 1.0), ("minmax", 0.5), ("max", 2.0), (None, 3.0)]


# --------------------------------------------------------------------------
# lipschitz_fraction and the distance range
# --------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("normalize, L", SETTINGS)
def test_lipschitz_torch_equals_numpy_and_the_reference(
    screened, torch_blocks, case, normalize, L
):
    X, y = CASES[case]
    assert _engine.PairwiseEngine(X, block_size=37).screenable
    kwargs = dict(normalize=normalize, lipschitz_constant=L, block_size=37)
    ref = lipschitz_fraction(X, y, return_counts=True, **kwargs)
    assert torch_blocks == {"torch": 0, "numpy32": torch_blocks["numpy32"]}
    assert torch_blocks["numpy32"] > 0  # the NumPy run screened in float32
    torch_blocks["numpy32"] = 0
    with sklearn_fairaes.config_context(pair_backend="torch"):
        got = lipschitz_fraction(X, y, return_counts=True, **kwargs)
    # every float32 block of the torch run was made by torch, none by NumPy
    assert torch_blocks["numpy32"] == 0 and torch_blocks["torch"] > 0
    o = pdist(np.asarray(y, dtype=float)[:, None])
    assert got.n_satisfied == naive_count(exact_paired(X), o, normalize, L)
    if case == "gauss":  # no exact ties: pdist's distances agree too
        assert got.n_satisfied == naive_count(pdist(X, "cosine"), o, normalize, L)
    assert (got.n_satisfied, got.n_pairs) == (ref.n_satisfied, ref.n_pairs)
    assert got.distance_range == ref.distance_range


@pytest.mark.parametrize("case", sorted(CASES))
def test_screened_distance_range_torch_is_exact(screened, case):
    X, _ = CASES[case]
    d = exact_paired(X)
    expected = (d.min(), d.max(), d.size)
    numpy_engine = _engine.PairwiseEngine(X, block_size=29, backend="numpy")
    torch_engine = _engine.PairwiseEngine(X, block_size=29, backend="torch", device="cpu")
    assert torch_engine.distance_range(screened=True) == expected
    assert numpy_engine.distance_range(screened=True) == expected


def _axis_rows(rng, n, n_axes=4):
    """Rows ``+-m * e_k`` or zero, and their exact cosine distances (Fractions).

    Same axis and sign: 0; same axis, opposite signs: 2; other axes, or a zero
    row against a non-zero one: 1; two zero rows: 0 (the engine's convention).
    """
    axis = rng.integers(-1, n_axes, size=n)  # -1: a zero row
    sign = rng.choice([-1.0, 1.0], size=n)
    scale = rng.integers(1, 5, size=n).astype(float)  # parallel duplicates
    X = np.zeros((n, n_axes))
    nonzero = axis >= 0
    X[nonzero, axis[nonzero]] = (sign * scale)[nonzero]
    exact = []
    for p in range(n):
        for q in range(p + 1, n):
            if axis[p] < 0 or axis[q] < 0:
                exact.append(Fraction(0 if axis[p] == axis[q] else 1))
            elif axis[p] != axis[q]:
                exact.append(Fraction(1))
            else:
                exact.append(Fraction(0 if sign[p] == sign[q] else 2))
    return X, exact


def _normalised(d, o, normalize):
    """Normalised distances and score differences, in exact rational arithmetic."""
    if normalize == "minmax":
        dlo, dhi, olo, ohi = min(d), max(d), min(o), max(o)
        return [(v - dlo) / (dhi - dlo) for v in d], [(v - olo) / (ohi - olo) for v in o]
    if normalize == "max":
        dhi, ohi = max(d), max(o)
        return [v / dhi for v in d], [v / ohi for v in o]
    return d, o


@pytest.mark.parametrize("normalize, L", [("minmax", 1), ("minmax", 2), ("max", 1),
                                          (None, 2)])  # fmt: skip
def test_ties_exactly_at_the_threshold(screened, normalize, L):
    # Distances 0, 1, 2 and integer scores 0..4: with minmax, orthogonal pairs
    # (d_n = 1/2) whose scores differ by 2 (o_n = 1/2) sit exactly on the
    # boundary, and so do many others; the float32 screen cannot decide them and
    # float64 must get every one right (<= counts them).
    rng = np.random.default_rng(3)
    X, exact = _axis_rows(rng, 120)
    y = rng.integers(0, 5, size=120).astype(float)
    o = [
        Fraction(abs(int(y[p]) - int(y[q]))) for p in range(120) for q in range(p + 1, 120)
    ]
    dn, on = _normalised(exact, o, normalize)
    expected = sum(ov <= L * dv for dv, ov in zip(dn, on))
    n_ties = sum(ov == L * dv for dv, ov in zip(dn, on))
    assert n_ties > 500  # the test is about ties
    for backend in ("numpy", "torch"):
        with sklearn_fairaes.config_context(pair_backend=backend):
            got = lipschitz_fraction(
                X, y, normalize=normalize, lipschitz_constant=L, block_size=31,
                return_counts=True,
            )  # fmt: skip
        assert got.n_satisfied == expected, backend


def test_torch_screen_decides_most_pairs(screened, monkeypatch):
    # exact either way; but a screen that decided nothing would be no backend
    X, y = CASES["gauss"]
    settled = []
    settle = sklearn_fairaes.metrics._pairs._counters._settle

    def spy(engine, y, i, j, *args):
        settled.append(i.size)
        return settle(engine, y, i, j, *args)

    monkeypatch.setattr(sklearn_fairaes.metrics._pairs._counters, "_settle", spy)
    with sklearn_fairaes.config_context(pair_backend="torch"):
        lipschitz_fraction(X, y, block_size=37)
    assert sum(settled) < n_pairs_of(160) // 100  # blocks with none are not settled


# --------------------------------------------------------------------------
# Group metrics, the curve, parallel runs, real data
# --------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("normalize, L", [("minmax", 1.0), ("max", 2.0)])
def test_group_lipschitz_torch_equals_numpy(screened, torch_blocks, case, normalize, L):
    X, y = CASES[case]
    groups = np.random.default_rng(1).choice(["a", "b", "c"], size=len(y))
    kwargs = dict(groups=groups, normalize=normalize, lipschitz_constant=L, block_size=37)
    ref = group_lipschitz_fraction(X, y, **kwargs)
    with sklearn_fairaes.config_context(pair_backend="torch"):
        got = group_lipschitz_fraction(X, y, **kwargs)
    assert torch_blocks["torch"] > 0
    for key in ("n_satisfied", "n_satisfied_within", "n_satisfied_cross", "n_pairs",
                "n_pairs_within", "n_pairs_cross", "distance_range"):  # fmt: skip
        assert got[key] == ref[key], key
    np.testing.assert_array_equal(got.group_n_satisfied, ref.group_n_satisfied)
    np.testing.assert_array_equal(got.group_n_pairs, ref.group_n_pairs)
    # and against brute force, group by group
    d = exact_paired(X)
    i, j = condensed_to_pairs(np.arange(d.size), len(y))
    o = np.abs(np.asarray(y, float)[i] - np.asarray(y, float)[j])
    dn, on = _normalise_np(d, o, normalize)
    hit = on <= L * dn
    for g, label in enumerate(got.group):
        inside = (groups[i] == label) & (groups[j] == label)
        assert got.group_n_satisfied[g] == np.count_nonzero(hit & inside)
    assert got.n_satisfied_cross == np.count_nonzero(hit & (groups[i] != groups[j]))


def _normalise_np(d, o, normalize):
    if normalize == "minmax":
        return (d - d.min()) / (d.max() - d.min()), (o - o.min()) / (o.max() - o.min())
    return d / d.max(), o / o.max()


def test_score_distance_curve_torch_equals_numpy(screened):
    X, y = CASES["small-int"]
    ref = score_distance_curve(X, y, block_size=37)
    with sklearn_fairaes.config_context(pair_backend="torch"):
        got = score_distance_curve(X, y, block_size=37)
    assert got.to_frame().equals(ref.to_frame())


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_torch_backend_with_two_jobs(screened, backend):
    X, y = CASES["small-int-continuous"]
    ref = lipschitz_fraction(X, y, block_size=37, return_counts=True)
    with (
        parallel_config(backend=backend),
        sklearn_fairaes.config_context(pair_backend="torch"),
    ):
        got = lipschitz_fraction(X, y, block_size=37, return_counts=True, n_jobs=2)
        groups = np.arange(len(y)) % 2
        by_group = group_lipschitz_fraction(X, y, groups=groups, block_size=37, n_jobs=2)
    assert (got.n_satisfied, got.distance_range) == (ref.n_satisfied, ref.distance_range)
    assert by_group.n_satisfied == ref.n_satisfied


class _BackendSeen:
    """A reducer that reports which backend made its blocks, in the worker."""

    block_kind = "similarity32"

    def map(self, block):
        return ["numpy"]

    def map_torch(self, block):
        return [f"torch:{block.similarities.device.type}"]

    def combine(self, a, b):
        return a + b

    def empty(self):
        return []


def test_torch_passes_run_on_torch_in_joblib_workers(screened):
    X, _ = CASES["gauss"]
    engine = _engine.PairwiseEngine(X, block_size=37, n_jobs=2, backend="torch")
    with parallel_config(backend="loky"):
        seen = engine.map_reduce(_BackendSeen())
    assert set(seen) == {"torch:cpu"} and len(seen) == len(engine._block_specs())


def test_engine_pickles_without_its_device_state(screened):
    import pickle

    X, y = CASES["gauss"]
    engine = _engine.PairwiseEngine(X, block_size=37, backend="torch")
    expected = engine.distance_range(screened=True)
    assert engine._torch is not None  # made by the torch pass
    copy = pickle.loads(pickle.dumps(engine))
    assert copy._torch is None and copy.backend == "torch" and copy.device == "cpu"
    assert copy.distance_range(screened=True) == expected


class _ConfigSeen:
    """A float64 reducer that reports the settings its worker runs under."""

    def map(self, block):
        return [sklearn_fairaes.get_config()["pair_backend"]]

    def combine(self, a, b):
        return a + b

    def empty(self):
        return []


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_engine_tasks_run_under_the_callers_settings(screened, backend):
    X, _ = CASES["gauss"]
    with sklearn_fairaes.config_context(pair_backend="torch"):
        engine = _engine.PairwiseEngine(X, block_size=37, n_jobs=2)
        with parallel_config(backend=backend):
            seen = engine.map_reduce(_ConfigSeen())
    assert seen == ["torch"] * len(engine._block_specs())


def test_prompt7_tfidf_torch_equals_numpy(screened, asap7):
    from sklearn_fairaes import TfidfEssayVectorizer

    part = asap7.iloc[:400]
    X = TfidfEssayVectorizer().fit_transform(list(part["essay"])).toarray()
    y = part["domain1_score"].astype(float).to_numpy()
    assert _engine.PairwiseEngine(X, block_size=64).screenable
    ref = lipschitz_fraction(X, y, block_size=64, return_counts=True)
    with sklearn_fairaes.config_context(pair_backend="torch"):
        got = lipschitz_fraction(X, y, block_size=64, return_counts=True)
    o = pdist(y[:, None])
    assert (
        got.n_satisfied == ref.n_satisfied == naive_count(exact_paired(X), o, "minmax", 1)
    )
    assert got.distance_range == ref.distance_range


# --------------------------------------------------------------------------
# The float32 products are IEEE float32
# --------------------------------------------------------------------------
def test_products_run_without_tf32_and_settings_come_back(screened, monkeypatch):
    seen = []
    mm = torch.mm

    def spy(a, b):
        seen.append(_torch_backend._matmul_precisions(torch))
        return mm(a, b)

    monkeypatch.setattr(torch, "mm", spy)
    X, y = CASES["gauss"]
    with sklearn_fairaes.config_context(pair_backend="torch"):
        lipschitz_fraction(X, y, block_size=37)
        assert seen and set(seen) == {("ieee", "ieee")}
        assert torch.backends.cuda.matmul.allow_tf32 is False  # untouched default
        before = _torch_backend._matmul_precisions(torch)
        torch.set_float32_matmul_precision("medium")  # TF32 on CUDA, bf16 in oneDNN
        try:
            seen.clear()
            with _torch_backend.ieee_float32_matmul(torch):
                assert _torch_backend._matmul_precisions(torch) == ("ieee", "ieee")
            assert _torch_backend._matmul_precisions(torch) == ("tf32", "bf16")
            lipschitz_fraction(X, y, block_size=37)
            assert set(seen) == {("ieee", "ieee")}
            assert torch.backends.cuda.matmul.allow_tf32 is True  # the user's again
        finally:
            torch.set_float32_matmul_precision("highest")
        assert _torch_backend._matmul_precisions(torch) in (before, ("ieee", "ieee"))


def test_torch_and_numpy_settle_the_same_undecided_pairs(screened):
    # each block's undecided pairs go to the counter's settler on both
    # backends: the same pairs, and settled they give the count

    X, y = CASES["small-int"]
    y = np.asarray(y, dtype=float)
    totals, undecided = {}, {}
    for backend in ("numpy", "torch"):
        engine = _engine.PairwiseEngine(X, block_size=37, backend=backend)
        lo, hi, _ = engine.distance_range(screened=True)
        d_scaling = _scaling._scaling(lo, hi, "minmax", "distance")
        o_scaling = _scaling._scaling(
            *_scaling._outcome_range(y), "minmax", "score difference"
        )
        a, b, c, margin = _counters._screening_coefficients(
            engine, y, d_scaling, o_scaling, 1.0, 0
        )
        settle = _counters._Settler(engine, y, d_scaling, o_scaling, 1.0)
        seen = undecided[backend] = []

        def recording(i, j, settle=settle, seen=seen):
            seen.extend(zip(i.tolist(), j.tolist()))
            return settle(i, j)

        totals[backend] = engine.map_reduce(
            _counters._ScreenedLipschitzCounter(y, a, b, c, margin, recording)
        )
    assert len(undecided["numpy"]) > 0  # ties: some pairs are undecided
    assert sorted(undecided["torch"]) == sorted(undecided["numpy"])
    expected = lipschitz_fraction(X, y, block_size=37, return_counts=True)
    assert totals["torch"] == totals["numpy"] == (expected.n_satisfied, expected.n_pairs)


def test_torch_margin_covers_the_numpy_margin():
    from sklearn_fairaes.metrics._pairs._counters import _ScreenedLipschitzCounter

    counter = _ScreenedLipschitzCounter(np.arange(5.0), 0.5, 0.25, 0.125, 1e-6, None)
    assert counter.torch_margin >= counter.margin
    assert float(counter.torch_margin) >= 1e-6 + _torch_backend.FLUSH_SLACK


# --------------------------------------------------------------------------
# Settings and bad input
# --------------------------------------------------------------------------
def test_config_defaults_set_and_context():
    assert sklearn_fairaes.get_config() == {
        "pair_backend": "numpy",
        "device": "cpu",
        "bf16_range": True,
    }
    with sklearn_fairaes.config_context(pair_backend="torch"):
        assert sklearn_fairaes.get_config()["pair_backend"] == "torch"
        assert _engine.PairwiseEngine(np.eye(3)).backend == "torch"
        # explicit parameters win over the settings
        assert _engine.PairwiseEngine(np.eye(3), backend="numpy").backend == "numpy"
        with pytest.raises(ValueError, match="pair_backend must be one of"):
            with sklearn_fairaes.config_context(pair_backend="cupy"):
                pass  # pragma: no cover - refused before the block
        assert sklearn_fairaes.get_config()["pair_backend"] == "torch"
    assert _engine.PairwiseEngine(np.eye(3)).backend == "numpy"
    sklearn_fairaes.set_config(pair_backend="torch")
    try:
        assert sklearn_fairaes.get_config()["pair_backend"] == "torch"
        # a bad call changes nothing, not even its valid part
        with pytest.raises(ValueError, match="device must be one of 'cpu', 'cuda'"):
            sklearn_fairaes.set_config(pair_backend="numpy", device="gpu")
        assert sklearn_fairaes.get_config()["pair_backend"] == "torch"
    finally:
        sklearn_fairaes.set_config(pair_backend="numpy")
    assert sklearn_fairaes.get_config()["pair_backend"] == "numpy"


def _config_in_worker():
    return sklearn_fairaes.get_config()["pair_backend"]


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_settings_reach_joblib_workers(backend):
    # 40 tasks: beyond the first pre-dispatched ones, joblib draws tasks from
    # its callback threads, whose own settings are the defaults
    with sklearn_fairaes.config_context(pair_backend="torch"):
        task = _config._delayed(_config_in_worker)
        with parallel_config(backend=backend, n_jobs=2):
            carried = list(Parallel(return_as="generator")(task() for _ in range(40)))
    assert carried == ["torch"] * 40
    # the workers' own settings are back to what they were
    with parallel_config(backend=backend, n_jobs=2):
        after = Parallel()(_config._delayed(_config_in_worker)() for _ in range(4))
    assert after == ["numpy"] * 4


def test_new_threads_start_from_the_defaults():
    import threading

    got = []
    with sklearn_fairaes.config_context(pair_backend="torch"):
        worker = threading.Thread(target=lambda: got.append(_config_in_worker()))
        worker.start()
        worker.join()
    assert got == ["numpy"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"backend": "cupy"}, "backend must be one of 'numpy', 'torch', got 'cupy'"),
        ({"backend": "torch", "device": "mps"}, "device must be one of 'cpu', 'cuda'"),
        ({"backend": "torch", "device": "cuda:x"}, "device must be one of"),
        ({"backend": "numpy", "device": "cuda"}, "needs backend='torch'"),
    ],
)
def test_bad_backend_or_device(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _engine.PairwiseEngine(np.eye(3), **kwargs)


def test_cuda_without_cuda_is_a_clear_error_before_any_work(monkeypatch):
    # a machine without CUDA, also where there is one (the test runs everywhere)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    bad_X = object()  # never read: the device is checked first
    with pytest.raises(ValueError, match="CUDA is not available here"):
        _engine.PairwiseEngine(bad_X, backend="torch", device="cuda")
    with sklearn_fairaes.config_context(pair_backend="torch", device="cuda"):
        with pytest.raises(ValueError, match="CUDA is not available here"):
            lipschitz_fraction(np.eye(3), [1, 2, 3])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ValueError, match=r"has 1 CUDA device\(s\) \(cuda:0 to cuda:0\)"):
        _engine.PairwiseEngine(bad_X, backend="torch", device="cuda:3")


def test_torch_missing_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(ImportError, match=r'pip install "sklearn-fairaes\[sbert\]"'):
        _engine.PairwiseEngine(np.eye(3), backend="torch")
    assert (
        _engine.PairwiseEngine(np.eye(3)).backend == "numpy"
    )  # the default needs no torch


def test_default_block_size_on_a_cuda_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert _torch_backend.device_block_size(10**6) == _torch_backend.CUDA_BLOCK_SIZE
    assert _torch_backend.device_block_size(10_000) == _types._default_block_size(10_000)
    engine = _engine.PairwiseEngine(np.ones((100_000, 1)), backend="torch", device="cuda")
    assert engine.block_size == _torch_backend.CUDA_BLOCK_SIZE
    assert (
        _engine.PairwiseEngine(np.ones((100_000, 1))).block_size
        == _types.DEFAULT_BLOCK_SIZE
    )


# --------------------------------------------------------------------------
# benchmarks/bench_gpu.py
# --------------------------------------------------------------------------
def test_bench_gpu_runs_on_the_cpu_with_tiny_sizes():
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_gpu.py"), "--device", "cpu",
         "--n", "600", "--n-check", "400", "--dim", "16", "--no-encode"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "counts equal: True" in out.stdout
    assert "pairs/s" in out.stdout


def test_bench_gpu_without_cuda_exits_2_with_one_line(monkeypatch, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_gpu", REPO / "benchmarks" / "bench_gpu.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as stop:
        bench.main([])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "CUDA is not available" in err
