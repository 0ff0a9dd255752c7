"""Smoke test of an installed wheel, run from outside the source tree.

Run by ``make wheel-smoke`` with a fresh venv's python, in a temporary folder,
after ``pip install dist/*.whl`` (core dependencies only, no extras). It checks
that the package imported is the installed one, that the public API answers
with correct numbers on small hand-checked inputs, and that a feature whose
extra is missing says which extra to install.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np

import sklearn_fairaes as sf

here = Path.cwd().resolve()
installed = Path(sf.__file__).resolve()
assert "site-packages" in installed.parts, f"imported from {installed}, not from the wheel"
assert not (installed.parents[1] / "pyproject.toml").exists(), (
    "a source tree is on the path"
)

# every public name resolves
missing = [name for name in sf.__all__ if not hasattr(sf, name)]
assert not missing, missing

# agreement: perfect and hand-worked values
assert sf.qwk([0, 1, 2, 3], [0, 1, 2, 3]) == 1.0
assert math.isclose(sf.qwk([0, 0, 1, 1], [0, 1, 1, 1]), 0.5)

# individual fairness: the paper's recipe on three points, worked by hand.
# distances |0-1|=1, |0-3|=3, |1-3|=2 -> minmax 0, 1, 0.5; scores 0, 2, 1 give
# |dy| = 2, 1, 1 -> minmax 1, 0, 0: pairs (0,2) and (1,2) satisfy, (0,1) does not
X = np.array([[0.0], [1.0], [3.0]])
assert math.isclose(sf.lipschitz_fraction(X, [0.0, 2.0, 1.0], metric="euclidean"), 2 / 3)
assert sf.lipschitz_fraction(X, [5.0, 5.0, 5.0], metric="euclidean") == 1.0

# the demo corpus ships in the wheel and loads without pandas
demo = sf.load_demo_essays(as_frame=False)
assert len(demo.data) == 180 and len(demo.target) == 180
assert sf.load_demo_prompt().strip()

# an extra that is not installed is named in the error
try:
    sf.SentenceBertEncoder().fit(["an essay", "another essay"])
except ImportError as exc:
    assert "sklearn-fairaes[sbert]" in str(exc), exc
else:
    raise AssertionError("SentenceBertEncoder ran without the sbert extra installed")

# the command line
out = subprocess.run(
    [Path(sys.executable).with_name("fairaes"), "--help"], capture_output=True, text=True
)
assert out.returncode == 0 and "audit" in out.stdout, out

print(f"wheel smoke test passed: sklearn_fairaes {sf.__version__} from {installed.parent}")
