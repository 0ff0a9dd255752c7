"""``import sklearn_fairaes`` stays light.

The heavy dependencies are optional extras imported only by the feature that
needs them; importing the package (and every public subpackage) must not pull
them in. Each check runs in a fresh interpreter, since this test process has
long imported them for other tests.
"""

import json
import subprocess
import sys

import pytest

HEAVY = (
    "torch",
    "sentence_transformers",
    "transformers",
    "spacy",
    "matplotlib",
    "nltk",
    "laserembeddings",
    "language_tool_python",
    "spellchecker",
    "dask",
    "distributed",
    "tqdm",
)

PROBE = """
import json, sys
import {module}
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def _loaded_after_import(module):
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "module",
    [
        "sklearn_fairaes",
        # one import statement covering every public subpackage and the CLI
        "sklearn_fairaes.text, sklearn_fairaes.features, sklearn_fairaes.metrics, "
        "sklearn_fairaes.model_selection, sklearn_fairaes.paraphrase, "
        "sklearn_fairaes.perturb, sklearn_fairaes.short_answers, "
        "sklearn_fairaes.datasets, sklearn_fairaes.report, sklearn_fairaes.cli, "
        "sklearn_fairaes.resources",
    ],
    ids=["package", "all-subpackages"],
)
def test_import_loads_no_heavy_dependency(module):
    assert _loaded_after_import(module) == []


def test_probe_sees_a_heavy_import():
    # the probe itself must be able to fail: importing matplotlib shows up
    assert _loaded_after_import("sklearn_fairaes, matplotlib") == ["matplotlib"]
