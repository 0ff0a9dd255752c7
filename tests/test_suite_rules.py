"""The suite cannot go green by skipping, and gives the same result every run."""

import os
import re

import conftest
import pytest
from conftest import REPO
from hypothesis import settings


def test_missing_resource_skips_locally_and_fails_under_ci(monkeypatch):
    monkeypatch.setattr(conftest, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="missing resource: WordNet"):
        conftest.missing_resource("WordNet")
    monkeypatch.setattr(conftest, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="under CI=true: WordNet; CI must"):
        conftest.missing_resource("WordNet")


def test_require_helpers_name_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(conftest, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match=r"no_such_pkg_xyz \(pip install"):
        conftest.require_module("no_such_pkg_xyz", "dask")
    with pytest.raises(pytest.fail.Exception, match="absent.tsv"):
        conftest.require_file(tmp_path / "absent.tsv")
    assert conftest.require_module("numpy", "core").__name__ == "numpy"


def test_an_installed_module_that_fails_to_import_raises(monkeypatch, tmp_path):
    # an import bug must fail the test, not skip it
    (tmp_path / "broken_mod_xyz.py").write_text("raise ImportError('a real bug')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="a real bug"):
        conftest.require_module("broken_mod_xyz", "core")


def test_every_skip_goes_through_missing_resource():
    """Direct skips or ImportError-to-skip would let CI go green without a resource."""
    pattern = re.compile(r"pytest\.skip\(|importorskip|except[^:\n]*ImportError")
    offenders = []
    for path in sorted((REPO / "tests").glob("*.py")):
        if path.name in ("conftest.py", "test_suite_rules.py"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if pattern.search(line):
                offenders.append(f"{path.name}:{number}: {line.strip()}")
    assert not offenders, "use conftest.missing_resource/require_*: " + "; ".join(offenders)


def test_hypothesis_is_derandomized_by_default():
    profile = settings.get_profile("ci")
    assert profile.derandomize is True and profile.database is None
    assert profile.deadline is None and profile.print_blob is True
    if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci":
        assert settings().derandomize is True
