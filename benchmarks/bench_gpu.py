"""GPU benchmark: the torch pair backend and Sentence-BERT encoding on CUDA.

Issue 18 item 5. One short run on one CUDA device (about 10 minutes at most):

1. The check, first (``--n-check``, default 50,000): N random unit vectors,
   d=384, integer scores 0-12, exact ``lipschitz_fraction`` with the torch
   backend on the device and with the NumPy CPU engine: both times, and
   whether the counts are equal (they must be).
2. The big run (``--n``, default 1,000,000: 5 x 10^11 pairs): exact
   ``lipschitz_fraction`` on the device, its time and pairs/s. Its time is
   first predicted from the check's pairs/s; when the prediction exceeds
   ``--budget`` seconds, N is lowered to fit and the script says so.
3. MiniLM encoding of the ASAP prompt-7 essays on the device (no cache):
   essays/s (``--no-encode`` skips it; missing essays or model are reported).

Without CUDA it exits with status 2 and one line on stderr. ``--device cpu``
runs the same steps with CPU torch (used by the tests with tiny sizes, and
for the numpy vs torch-CPU figures), e.g.::

    python benchmarks/bench_gpu.py                               # on a GPU
    nice -n 10 python benchmarks/bench_gpu.py --device cpu --n 0 \\
        --n-check 20000 50000 --no-encode                        # CPU torch

The load average is printed with the figures: on a shared machine other
processes slow every one of them, and CPU torch most (its OpenMP threads wait
for each other at every operation when a core is taken: ``--torch-threads 1``
shows how much).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ASAP7 = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "asap-aes"
    / ("asap_aes_prompt7.tsv")
)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def problem(n: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random unit vectors (float32 draws, made unit in float64) and scores 0-12."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dim), dtype=np.float32).astype(np.float64)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, rng.integers(0, 13, size=n)


def count(X, y, backend: str, device: str):
    """Exact Lipschitz count; (seconds, n_satisfied, n_pairs)."""
    import sklearn_fairaes
    from sklearn_fairaes.metrics import lipschitz_fraction

    with sklearn_fairaes.config_context(pair_backend=backend, device=device):
        start = time.perf_counter()
        got = lipschitz_fraction(X, y, return_counts=True)
        seconds = time.perf_counter() - start
    return seconds, int(got.n_satisfied), int(got.n_pairs)


def describe(torch, device: str) -> str:
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        return (
            f"{props.name}, {props.total_memory / 2**30:.0f} GiB, CUDA "
            f"{torch.version.cuda}, torch {torch.__version__}"
        )
    return f"CPU torch {torch.__version__}, {torch.get_num_threads()} threads"


def encode(device: str, essays_path: Path) -> None:
    if not essays_path.exists():
        print(f"[3] encoding: not measured, no essays at {essays_path}")
        return
    try:
        import pandas as pd

        from sklearn_fairaes import SentenceBertEncoder
    except ImportError as exc:
        print(f"[3] encoding: not measured ({exc})")
        return
    essays = list(
        pd.read_csv(essays_path, sep="\t", encoding="utf-8-sig", dtype=str,
                    keep_default_na=False)["essay"]
    )  # fmt: skip
    import warnings

    from sklearn_fairaes.exceptions import LongTextWarning

    encoder = SentenceBertEncoder(device=device, cache=None, batch_size=128)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LongTextWarning)
        try:
            encoder.fit(essays[:8]).transform(essays[:8])  # load and warm up
        except (ImportError, OSError) as exc:
            print(f"[3] encoding: not measured, MiniLM could not load ({exc})")
            return
        start = time.perf_counter()
        vectors = encoder.transform(essays)
        seconds = time.perf_counter() - start
    print(
        f"[3] MiniLM encoding of {len(essays)} prompt-7 essays on {device}: "
        f"{seconds:.2f} s, {len(essays) / seconds:.0f} essays/s "
        f"(vectors {vectors.shape}); {load()}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument("--n", type=int, default=1_000_000,
                        help="essays of the big run (0: none)")  # fmt: skip
    parser.add_argument("--n-check", type=int, nargs="+", default=[50_000],
                        help="essays of the torch vs NumPy checks")  # fmt: skip
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=420.0,
                        help="seconds the big run may take (predicted)")  # fmt: skip
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads for CPU torch")  # fmt: skip
    parser.add_argument("--no-encode", action="store_true")
    parser.add_argument("--essays", type=Path, default=ASAP7)
    args = parser.parse_args(argv)

    from sklearn_fairaes.resources import require

    torch = require("torch", purpose="bench_gpu.py")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(
            f"bench_gpu.py: CUDA is not available here (torch {torch.__version__}); "
            "nothing measured (run with --device cpu for CPU torch)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    print(f"device {args.device}: {describe(torch, args.device)}; {load()}")

    rate = None
    for n in args.n_check:
        X, y = problem(n, args.dim, args.seed)
        t_torch, ok_torch, pairs = count(X, y, "torch", args.device)
        t_numpy, ok_numpy, _ = count(X, y, "numpy", "cpu")
        rate = pairs / t_torch
        print(
            f"[1] N={n:,}, d={args.dim}: torch on {args.device} {t_torch:.2f} s "
            f"({rate / 1e6:.0f} M pairs/s), NumPy CPU {t_numpy:.2f} s "
            f"({pairs / t_numpy / 1e6:.0f} M pairs/s), NumPy/torch "
            f"{t_numpy / t_torch:.2f}x; counts equal: {ok_torch == ok_numpy} "
            f"({ok_torch:,} of {pairs:,}); {load()}"
        )
        if ok_torch != ok_numpy:
            raise SystemExit(f"counts differ: torch {ok_torch}, NumPy {ok_numpy}")
        del X, y

    n = args.n
    if n and rate is not None:
        predicted = n * (n - 1) / 2 / rate
        if predicted > args.budget:
            # pairs grow as n**2: the largest n whose predicted time fits
            fitted = int(n * (args.budget / predicted) ** 0.5)
            print(
                f"[2] N={n:,} predicted {predicted:.0f} s at {rate / 1e6:.0f} M "
                f"pairs/s, over --budget {args.budget:.0f} s: running N={fitted:,}"
            )
            n = fitted
    if n:
        X, y = problem(n, args.dim, args.seed + 1)
        seconds, ok, pairs = count(X, y, "torch", args.device)
        print(
            f"[2] N={n:,}, d={args.dim}: exact lipschitz_fraction on {args.device} "
            f"{seconds:.1f} s, {pairs / seconds / 1e6:.0f} M pairs/s ({pairs:.3g} "
            f"pairs, fraction {ok / pairs:.6f}); {load()}"
        )
        del X, y
    if args.no_encode:
        print("[3] encoding: skipped (--no-encode)")
    else:
        encode(args.device, args.essays)


if __name__ == "__main__":
    main()
