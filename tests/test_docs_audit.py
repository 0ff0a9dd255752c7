"""The code of docs/user_guide/audit.rst runs, and says what it shows.

The page is the first one users read (issue 16: the given-scores workflow
first); its Python blocks run here in order, in one namespace, as a reader
would paste them, and its doctest blocks run as doctests.
"""

from __future__ import annotations

import doctest
import re

import numpy as np
import pytest
from conftest import REPO
from sklearn.metrics import cohen_kappa_score

PAGE = REPO / "docs" / "user_guide" / "audit.rst"


def _python_blocks(text: str) -> list[str]:
    blocks = []
    for match in re.finditer(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)", text):
        lines = [line[3:] if line.strip() else "" for line in match.group(1).splitlines()]
        blocks.append("\n".join(lines).strip() + "\n")
    return blocks


def test_the_pages_python_runs_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # result.save("report") writes here
    blocks = _python_blocks(PAGE.read_text(encoding="utf-8"))
    plain = [b for b in blocks if not b.startswith(">>>")]
    assert len(plain) == 2
    namespace: dict = {}
    exec(compile(plain[0], f"{PAGE.name} block 1", "exec"), namespace)
    data, result = namespace["data"], namespace["result"]
    agreement = result.tables["agreement"]
    assert agreement["system"].tolist() == ["engine"]
    expected = cohen_kappa_score(
        data["score"], data["engine"], labels=np.arange(13), weights="quadratic"
    )
    assert agreement["qwk"].item() == pytest.approx(expected, abs=1e-12)
    assert (tmp_path / "report" / "report.html").is_file()
    for k, block in enumerate(plain[1:], start=2):
        exec(compile(block, f"{PAGE.name} block {k}", "exec"), namespace)
    systems = namespace["result"].meta["systems"]
    assert systems["mine"]["kind"] == "fitted" and systems["ridge"]["kind"] == "trained"


def test_the_pages_doctests_pass():
    blocks = [
        b for b in _python_blocks(PAGE.read_text(encoding="utf-8")) if b.startswith(">>>")
    ]
    assert blocks
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(verbose=False)
    for k, block in enumerate(blocks):
        test = parser.get_doctest(block, {}, f"audit.rst doctest {k}", str(PAGE), 0)
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
