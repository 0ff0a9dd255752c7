"""The gate: ``fairaes check`` and :func:`check` (issue 33, item 5).

One real audit of demo essays (TF-IDF only, a given engine) is saved and held
to requirements through the command: exit 0 when all hold, 1 when one fails,
2 for a bad expression, metric, system, bound or report. Intervals may not be
in this branch's audits yet, so the CI-bound requirements run on tables built
by hand with ``*_ci_low`` / ``*_ci_high`` columns.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.report import AuditResult, Verdict, check, load_policy


@pytest.fixture(scope="module")
def essays():
    demo = sf.load_demo_essays().iloc[:40].reset_index(drop=True)
    rng = np.random.default_rng(0)
    demo["engine"] = np.clip(demo["score"] + rng.integers(-1, 2, len(demo)), 0, 12)
    return demo


@pytest.fixture(scope="module")
def report(essays, tmp_path_factory):
    result = sf.audit(
        essays,
        text_col="essay",
        score_col="score",
        rater_cols=["rater1", "rater2"],
        systems=["engine"],
        representations=["tfidf"],
        score_range=(0, 12),
        cache=False,
        n_bootstrap=10,
        sections=["agreement", "lipschitz", "review"],
    )
    folder = tmp_path_factory.mktemp("gate") / "report"
    result.save(folder)
    return folder


def _hand_built() -> AuditResult:
    """Two systems with intervals; a pooled row without an SMD."""
    agreement = pd.DataFrame(
        {
            "prompt": ["1", "1", "pooled"],
            "representation": ["", "", ""],
            "system": ["v3", "v4", "v4"],
            "qwk": [0.74, 0.80, 0.79],
            "qwk_ci_low": [0.68, 0.75, 0.76],
            "qwk_ci_high": [0.79, 0.85, 0.82],
            "smd": [-0.05, 0.12, np.nan],
            "smd_ci_low": [-0.20, 0.02, np.nan],
            "smd_ci_high": [0.10, 0.22, np.nan],
        }
    )
    lipschitz = pd.DataFrame(
        {
            "prompt": ["1"] * 4,
            "representation": ["tfidf", "tfidf", "sbert", "tfidf"],
            "system": ["v3", "v4", "v4", "human"],
            "lipschitz_max": [0.97, 0.93, 0.99, 0.90],
        }
    )
    meta = {
        "n_essays": 50,
        "prompts": ["1"],
        "representations": ["tfidf", "sbert"],
        "systems": {"v3": {}, "v4": {}},
        "confidence_level": 0.9,
    }
    return AuditResult({"agreement": agreement, "lipschitz": lipschitz}, meta)


# ------------------------------------------------------------------ grammar


@pytest.mark.parametrize(
    "text, metric, bound, selectors, op, threshold",
    [
        ("qwk>=0.70", "qwk", None, (), ">=", 0.70),
        (" qwk.ci_low >= .7 ", "qwk", "ci_low", (), ">=", 0.7),
        ("ci_low of qwk >= 0.70", "qwk", "ci_low", (), ">=", 0.70),
        ("abs_smd<=0.15", "abs_smd", None, (), "<=", 0.15),
        ("degradation>=-0.10", "degradation", None, (), ">=", -0.10),
        (
            "lipschitz_matched[representation=tfidf, system=engine]>0.95",
            "lipschitz_matched",
            None,
            (("representation", "tfidf"), ("system", "engine")),
            ">",
            0.95,
        ),
        ("qwk.ci_high[prompt=3]<1e0", "qwk", "ci_high", (("prompt", "3"),), "<", 1.0),
    ],
)
def test_grammar_reads(text, metric, bound, selectors, op, threshold):
    from sklearn_fairaes.report._check import Requirement

    req = Requirement.parse(text)
    assert (req.metric, req.bound, req.selectors, req.op) == (metric, bound, selectors, op)
    assert req.threshold == pytest.approx(threshold)


@pytest.mark.parametrize(
    "text, message",
    [
        ("qwk", "cannot read the requirement 'qwk'; write \\[ci_low of\\] METRIC"),
        ("qwk=>0.7", "unknown comparison '=>'; did you mean '>='"),
        ("qwk=0.7", "unknown comparison '='; did you mean '=='"),
        ("qwk.ci_lo>=0.7", "unknown bound 'ci_lo' of qwk; use qwk.ci_low or qwk.ci_high"),
        ("ci_low of qwk.ci_high>=0.7", "names a bound twice"),
        ("qwk>=high", "'high' is not a number"),
        ("qwk>=nan", "the threshold must be finite"),
        ("qwk[model=x]>=0.7", "cannot read the selector 'model=x'; write key=value"),
        ("qwk[system]>=0.7", "cannot read the selector 'system'"),
        ("qwk[]>=0.7", "empty selector"),
    ],
)
def test_grammar_refuses(text, message):
    from sklearn_fairaes.report._check import Requirement

    with pytest.raises(ValueError, match=message):
        Requirement.parse(text)


# ------------------------------------------------------------------ the command


def _run(report, tmp_path, *requires, extra=()):
    args = ["check", str(report)]
    for r in requires:
        args += ["--require", r]
    return main([*args, "--verdict", str(tmp_path / "verdict.json"), *extra])


def test_exit_codes(report, essays, tmp_path, capsys):
    qwk = cohen_kappa_score(
        essays["score"], essays["engine"], weights="quadratic", labels=range(13)
    )
    assert _run(report, tmp_path, f"qwk>={qwk - 0.01:.4f}", "abs_smd<=0.5") == 0
    out = capsys.readouterr().out
    assert f"PASS  qwk>={qwk - 0.01:.4f}  prompt all, system engine: qwk = {qwk:.4f}" in out
    assert "all requirements hold" in out
    assert _run(report, tmp_path, f"qwk>={qwk + 0.01:.4f}", "abs_smd<=0.5") == 1
    out = capsys.readouterr().out
    assert "FAIL  qwk>=" in out and "PASS  abs_smd<=0.5" in out and "1 row(s) fail" in out


@pytest.mark.parametrize(
    "requirement, message",
    [
        ("qkw>=0.7", "unknown metric 'qkw'; this report's metrics are .*qwk"),
        ("qwk[system=engin]>=0.7", "unknown system 'engin'; .* systems are 'engine'"),
        ("qwk[representation=sbert]>=0.7", "unknown representation 'sbert'"),
        ("qwk=>0.7", "did you mean '>='"),
        ("review_list>=1", "unknown metric"),
    ],
)
def test_bad_requirements_exit_2(report, tmp_path, capsys, requirement, message):
    assert _run(report, tmp_path, requirement) == 2
    import re

    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "verdict.json").exists()


def test_interval_bounds_on_a_real_report(report, essays, tmp_path, capsys):
    """The report's own bootstrap intervals decide a CI-bound requirement."""
    saved = sf.AuditResult.load(report)
    row = saved.tables["agreement"].iloc[0]
    key = ("all", "agreement", "", "engine", "qwk")
    low, high = np.quantile(saved.replicates[key], [0.025, 0.975])
    assert (row["qwk_ci_low"], row["qwk_ci_high"]) == pytest.approx((low, high))
    # the lower bound fails where the estimate passes
    assert row["qwk_ci_low"] < row["qwk"]
    between = (row["qwk_ci_low"] + row["qwk"]) / 2
    assert _run(report, tmp_path, f"qwk>={between:.6f}") == 0
    assert _run(report, tmp_path, f"qwk.ci_low>={between:.6f}") == 1
    assert "FAIL  qwk.ci_low>=" in capsys.readouterr().out


def test_interval_bound_without_bootstrap_exit_2(essays, tmp_path, capsys):
    result = sf.audit(essays, text_col="essay", score_col="score", systems=["engine"],
                      representations=["tfidf"], score_range=(0, 12), cache=False,
                      n_bootstrap=0, sections=["agreement"])  # fmt: skip
    result.save(tmp_path / "plain")
    assert _run(tmp_path / "plain", tmp_path, "qwk.ci_low>=0.7") == 2
    import re

    assert re.search(
        "the report has no interval for qwk .*--bootstrap B", capsys.readouterr().err
    )


def test_bad_reports_and_policies_exit_2(report, tmp_path, capsys):
    assert _run(tmp_path / "nowhere", tmp_path, "qwk>=0.7") == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["check", str(report), "--verdict", str(tmp_path / "v.json")]) == 2
    assert "give at least one --require" in capsys.readouterr().err
    assert _run(report, tmp_path, extra=["--policy", "williamson2013"]) == 2
    assert "unknown policy 'williamson2013'" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("require = [qwk>=0.7]\n")
    assert _run(report, tmp_path, extra=["--policy", str(bad)]) == 2
    assert "not valid TOML" in capsys.readouterr().err
    bad.write_text('require = ["qwk>=0.7"]\nthreshold = 1\n')
    assert _run(report, tmp_path, extra=["--policy", str(bad)]) == 2
    assert "unknown key(s) ['threshold']" in capsys.readouterr().err


def test_policy_williamson_and_file(report, tmp_path, capsys):
    policy = load_policy("williamson2012")
    assert policy["require"] == ["qwk>=0.70", "abs_smd<=0.15", "degradation<=0.10"]
    assert "Williamson" in policy["reference"]
    assert _run(report, tmp_path, extra=["--policy", "williamson2012"]) == 0
    out = capsys.readouterr().out
    assert "PASS  degradation<=0.10" in out and "PASS  abs_smd<=0.15" in out
    mine = tmp_path / "mine.toml"
    mine.write_text('name = "strict"\nrequire = ["qwk>=0.99"]\n')
    assert load_policy(mine)["name"] == "strict"
    assert _run(report, tmp_path, "abs_smd<=0.5", extra=["--policy", str(mine)]) == 1


def test_verdict_and_junit_files(report, tmp_path, capsys):
    junit = tmp_path / "gate.xml"
    code = _run(report, tmp_path, "qwk>=0.5", "lipschitz_max>=1.01",
                extra=["--junit", str(junit)])  # fmt: skip
    assert code == 1
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert verdict["tool"] == "sklearn_fairaes" and verdict["kind"] == "verdict"
    assert verdict["passed"] is False and verdict["report"] == str(report)
    assert [r["requirement"] for r in verdict["requirements"]] == ["qwk>=0.5",
                                                                    "lipschitz_max>=1.01"]  # fmt: skip
    assert [r["passed"] for r in verdict["requirements"]] == [True, False]
    row = verdict["requirements"][1]["rows"][0]
    assert row["representation"] == "tfidf" and row["system"] == "engine"
    assert row["status"] == "fail" and row["threshold"] == 1.01
    root = ET.parse(junit).getroot()
    cases = root.findall(".//testcase")
    assert root.get("tests") == "2" and root.get("failures") == "1" and len(cases) == 2
    assert [c.find("failure") is not None for c in cases] == [False, True]
    assert "lipschitz_max>=1.01 [prompt=all, representation=tfidf" in cases[1].get("name")
    # a re-run replaces our own files
    assert _run(report, tmp_path, "qwk>=0.5", extra=["--junit", str(junit)]) == 0
    assert json.loads((tmp_path / "verdict.json").read_text())["passed"] is True
    assert len(ET.parse(junit).getroot().findall(".//testcase")) == 1


def test_never_overwrites_users_files(report, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # default: ./verdict.json
    assert main(["check", str(report), "--require", "qwk>=0.5"]) == 0
    assert json.loads((tmp_path / "verdict.json").read_text())["kind"] == "verdict"
    (tmp_path / "verdict.json").write_text('{"mine": true}')
    assert main(["check", str(report), "--require", "qwk>=0.5"]) == 2
    assert "not a file fairaes check wrote" in capsys.readouterr().err
    assert (tmp_path / "verdict.json").read_text() == '{"mine": true}'
    (tmp_path / "notes.xml").write_text("<notes/>")
    code = main(["check", str(report), "--require", "qwk>=0.5", "--no-verdict",
                 "--junit", "notes.xml"])  # fmt: skip
    assert code == 2 and (tmp_path / "notes.xml").read_text() == "<notes/>"
    code = main(["check", str(report), "--require", "qwk>=0.5", "--verdict",
                 str(report / "verdict.json")])  # fmt: skip
    assert code == 2 and "inside the report folder" in capsys.readouterr().err
    assert not (report / "verdict.json").exists()


# ------------------------------------------------------------------ Python API


def test_check_rows_bounds_and_selectors():
    result = _hand_built()
    verdict = check(result, ["qwk.ci_low>=0.70"])
    assert isinstance(verdict, Verdict)
    # every system and prompt; the lower bound, not the estimate, decides
    assert verdict.results["system"].tolist() == ["v3", "v4", "v4"]
    assert verdict.results["status"].tolist() == ["fail", "pass", "pass"]
    assert verdict.results["value"].tolist() == [0.68, 0.75, 0.76]
    assert not verdict.passed
    assert "(qwk 0.74, 90% CI 0.68 to 0.79)" in verdict.lines()[0]
    # abs_smd's interval from smd's: one crossing zero starts at 0; the pooled row has none
    v = check(result, ["abs_smd.ci_high<=0.21"])
    assert v.results["status"].tolist() == ["pass", "fail", "n/a"]
    assert v.results["ci_low"].tolist()[:2] == [0.0, 0.02]
    assert v.results["value"].tolist()[:2] == [0.20, 0.22]
    assert v.lines()[2].startswith("N/A ")
    # selectors narrow; the human rows only when selected
    v = check(result, ["lipschitz_max[representation=tfidf]>=0.95"])
    assert v.results["system"].tolist() == ["v3", "v4"]
    assert v.results["status"].tolist() == ["pass", "fail"]
    v = check(result, ["lipschitz_max[system=human]>=0.95"])
    assert v.results["status"].tolist() == ["fail"]
    v = check(result, ["qwk[system=v4,prompt=1]>0.8"])
    assert v.results["status"].tolist() == ["fail"] and not v.passed


def test_check_errors_and_paths(report):
    result = _hand_built()
    with pytest.raises(ValueError, match="no requirement given"):
        check(result, [])
    with pytest.raises(
        ValueError, match="no row of the agreement table has a value of smd"
    ):
        check(result, ["smd[prompt=pooled]<=0.1"])
    with pytest.raises(
        ValueError, match="unknown prompt '2'; .* prompts are '1', 'pooled'"
    ):
        check(result, ["qwk[prompt=2]>=0.7"])
    verdict = check(report, ["qwk>=0.5"])
    assert verdict.passed and verdict.report == str(report)
    assert math.isfinite(verdict.results["estimate"].iloc[0])
