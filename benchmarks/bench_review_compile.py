"""What the compiled review kernel costs the first time (numba's compile), and after.

The screened review pass of ``essay_consistency``, ``lipschitz_violations`` and
``lipschitz_profile`` runs its per-pair work in a numba kernel (the ``fast``
extra) that compiles on first use and is kept in numba's on-disk cache
(``cache=True``). This script runs the shared pass on one problem in three
fresh processes: with an empty cache (``NUMBA_CACHE_DIR`` set to a new
folder: the compile is paid), with that cache filled (loaded), and without the
kernel (the NumPy strips), and prints the wall time of each call.

    python benchmarks/bench_review_compile.py [--n 6000]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

CHILD = """
import sys, time
import numpy as np
sys.path.insert(0, {bench!r})
from bench_pairs import random_problem
from sklearn_fairaes.metrics._pairs import _engine, _review_screened
from sklearn_fairaes.metrics._review import _review_all

_engine._CACHE_BYTES = _engine._SCREEN_CACHE_BYTES = 0  # the screened pass at any n
_review_screened.USE_KERNEL = {kernel}
X, y = random_problem({n}, 384, seed=2)
for call in (1, 2):
    t = time.perf_counter()
    out = _review_all(X, y, n_neighbors=10, top=100)
    print(f"call {{call}}: {{time.perf_counter() - t:.2f}} s")
"""


def run(n, kernel, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    code = CHILD.format(
        bench=os.path.dirname(os.path.abspath(__file__)), n=n, kernel=kernel
    )
    t = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return res.stdout.strip().replace("\n", ", "), time.perf_counter() - t


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=6000)
    args = parser.parse_args()
    print(f"N={args.n:,}, d=384, the three review metrics from one shared pass (screened)")
    with tempfile.TemporaryDirectory() as cache:
        for label, kernel in (
            ("empty numba cache (compiles)", True),
            ("filled numba cache (loads)", True),
            ("NumPy strips (no numba)", False),
        ):
            calls, total = run(args.n, kernel, cache)
            print(f"    {label:30s}: {calls} (process {total:.1f} s)")


if __name__ == "__main__":
    main()
