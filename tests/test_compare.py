"""Saved reports read back, and audits side by side (issue 33, item 4).

Real audits of a few demo essays (TF-IDF only, given scores, small B) are saved,
loaded and compared. Intervals and replicates may not be in the tables of this
branch's audits yet, so the paired path is also driven by replicates attached
by hand, and its interval is checked against numpy's percentiles of the
replicate differences.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.report import AuditResult, ComparisonResult, compare

B = 20
SECTIONS = ["agreement", "lipschitz", "review"]


def _essays(rows: slice, seed: int, spread: int) -> pd.DataFrame:
    demo = sf.load_demo_essays().iloc[rows].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    demo["engine"] = np.clip(
        demo["score"] + rng.integers(-spread, spread + 1, len(demo)), 0, 12
    )
    return demo


def _audit(frame: pd.DataFrame) -> AuditResult:
    return sf.audit(
        frame,
        text_col="essay",
        score_col="score",
        rater_cols=["rater1", "rater2"],
        systems=["engine"],
        id_col="essay_id",
        representations=["tfidf"],
        score_range=(0, 12),
        cache=False,
        n_bootstrap=B,
        sections=SECTIONS,
    )


def _with_replicates(result: AuditResult, common: np.ndarray, shift: float) -> AuditResult:
    """Attach replicates of qwk and lipschitz_max: a shared essay effect plus noise."""
    rng = np.random.default_rng(int(shift * 1000) + 7)
    reps = dict(result.replicates)
    for table, figure, rep in (
        ("agreement", "qwk", ""),
        ("lipschitz", "lipschitz_max", "tfidf"),
    ):
        row = result.tables[table]
        value = float(row.loc[row["system"] == "engine", figure].iloc[0])
        reps[("all", table, rep, "engine", figure)] = (
            value + common + rng.normal(0, 0.005, B)
        )
    return AuditResult(result.tables, result.meta, replicates=reps)


@pytest.fixture(scope="module")
def audits():
    a_frame = _essays(slice(0, 40), seed=0, spread=1)
    b_frame = _essays(slice(0, 40), seed=1, spread=2)
    c_frame = _essays(slice(1, 41), seed=1, spread=2)
    common = np.random.default_rng(3).normal(0, 0.03, B)
    a = _with_replicates(_audit(a_frame), common, 0.0)
    b = _with_replicates(_audit(b_frame), common, 0.5)
    c = _with_replicates(_audit(c_frame), common, 0.9)
    return {"a": a, "b": b, "c": c, "frames": (a_frame, b_frame, c_frame)}


@pytest.fixture(scope="module")
def saved(audits, tmp_path_factory):
    root = tmp_path_factory.mktemp("reports")
    for name in ("a", "b", "c"):
        audits[name].save(root / name)
    return root


# ------------------------------------------------------------------ load / save


def test_save_load_round_trip(audits, saved):
    original = audits["a"]
    loaded = AuditResult.load(saved / "a")
    assert set(loaded.tables) == set(original.tables)
    for name, frame in original.tables.items():
        pd.testing.assert_frame_equal(
            loaded.tables[name].reset_index(drop=True),
            frame.reset_index(drop=True),
            check_dtype=False,
            obj=name,
        )
    assert json.loads(json.dumps(loaded.meta)) == loaded.meta
    assert loaded.meta["ids_digest"] == original.meta["ids_digest"]
    assert loaded.meta["report_format"] == 1
    assert set(loaded.replicates) == set(original.replicates)
    for key, values in original.replicates.items():
        np.testing.assert_array_equal(loaded.replicates[key], values)
    marker = json.loads((saved / "a" / ".fairaes-report").read_text())
    assert "replicates.npz" in marker["files"]


def test_no_replicates_no_file(tmp_path):
    table = pd.DataFrame({"prompt": ["all"], "system": ["engine"], "score": [1.0]})
    meta = {"n_essays": 2, "prompts": ["all"], "representations": [], "systems": {}}
    AuditResult({"scores": table}, meta).save(tmp_path / "r")
    assert not (tmp_path / "r" / "replicates.npz").exists()
    assert AuditResult.load(tmp_path / "r").replicates == {}


def test_load_refuses_foreign_and_malformed(saved, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "results.json").write_text('{"meta": {}, "tables": {}}')
    with pytest.raises(ValueError, match="no .fairaes-report marker"):
        AuditResult.load(tmp_path / "mine")
    with pytest.raises(ValueError, match="no such folder"):
        AuditResult.load(tmp_path / "missing")

    import shutil

    newer = tmp_path / "newer"
    shutil.copytree(saved / "a", newer)
    data = json.loads((newer / "results.json").read_text())
    data["meta"]["report_format"] = 99
    (newer / "results.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="report format 99 .* this version reads format 1"):
        AuditResult.load(newer)

    (newer / "results.json").write_text("{not json")
    with pytest.raises(ValueError, match="results.json cannot be read"):
        AuditResult.load(newer)
    (newer / "results.json").write_text('{"meta": [], "tables": {}}')
    with pytest.raises(ValueError, match='is not {"meta"'):
        AuditResult.load(newer)

    broken = tmp_path / "broken"
    shutil.copytree(saved / "a", broken)
    np.savez(broken / "replicates.npz", keys=np.array([["a", "b"]]), values=np.ones((1, 3)))
    with pytest.raises(ValueError, match="expected text keys"):
        AuditResult.load(broken)


# ------------------------------------------------------------------ compare


def test_compare_paired_same_essays(audits):
    a, b = audits["a"], audits["b"]
    result = compare(a, b, names=["v3", "v4"])
    assert isinstance(result, ComparisonResult)
    diffs = result.tables["differences"]
    figures = set(diffs["figure"])
    for figure in ("qwk", "smd", "degradation", "acceptable", "lipschitz_minmax",
                   "lipschitz_max", "consistency"):  # fmt: skip
        assert figure in figures, figure
    row = diffs[(diffs["figure"] == "qwk") & (diffs["system"] == "engine")].iloc[0]
    # independent: the QWK of each engine version from sklearn
    fa, fb, _ = audits["frames"]
    qa = cohen_kappa_score(fa["score"], fa["engine"], weights="quadratic", labels=range(13))
    qb = cohen_kappa_score(fb["score"], fb["engine"], weights="quadratic", labels=range(13))
    assert row["value_baseline"] == pytest.approx(qa)
    assert row["value_other"] == pytest.approx(qb)
    assert row["difference"] == pytest.approx(qb - qa)
    assert bool(row["paired"]) and row["reason"] == ""
    key = ("all", "agreement", "", "engine", "qwk")
    d = b.replicates[key] - a.replicates[key]
    low, high = np.quantile(d, [0.025, 0.975])
    assert row["ci_low"] == pytest.approx(low) and row["ci_high"] == pytest.approx(high)
    k = min((d <= 0).sum(), (d >= 0).sum()) + 1
    assert row["p_value"] == pytest.approx(min(1.0, 2 * k / (B + 1)))
    # a figure without replicates: the values, no interval, and why
    exact = diffs[diffs["figure"] == "exact_agreement"].iloc[0]
    assert not exact["paired"] and exact["reason"] == "no replicates of this figure"
    assert math.isnan(exact["ci_low"])
    # the SMD has replicates: paired too
    assert bool(diffs[diffs["figure"] == "smd"].iloc[0]["paired"])
    flag = diffs[diffs["figure"] == "acceptable"].iloc[0]
    assert flag["reason"] == "a yes/no flag"
    values = result.tables["values"]
    qrow = values[(values["figure"] == "qwk") & (values["system"] == "engine")].iloc[0]
    assert qrow["v3"] == pytest.approx(qa) and qrow["v4"] == pytest.approx(qb)


def test_compare_refuses_pairing_different_essays(audits):
    result = compare(audits["a"], audits["c"], names=["v3", "v4"])
    diffs = result.tables["differences"]
    assert not diffs["paired"].any()
    qwk = diffs[diffs["figure"] == "qwk"].iloc[0]
    assert qwk["reason"] == "different essays in prompt 'all'"
    assert math.isfinite(qwk["difference"]) and math.isnan(qwk["ci_low"])
    assert any("different essays in prompt 'all'" in n for n in result.meta["notes"])
    assert "different essays in prompt" in result.summary()


def test_compare_reasons_seed_and_bootstrap(audits):
    a = audits["a"]
    for change, reason in (
        ({"n_bootstrap": 0}, "no bootstrap in B"),
        ({"random_state": 5}, "different seeds (A: random_state=0, B: random_state=5)"),
        ({"n_bootstrap": 40}, "different numbers of replicates (A: 20, B: 40)"),
    ):
        other = AuditResult(a.tables, {**a.meta, **change}, a.replicates)
        diffs = compare(a, other).tables["differences"]
        assert set(diffs.loc[diffs["reason"] != "a yes/no flag", "reason"]) == {reason}


def test_compare_three_and_extra_lipschitz_column(audits):
    tables = {k: v.copy() if k == "lipschitz" else v for k, v in audits["a"].tables.items()}
    tables["lipschitz"]["lipschitz_extra"] = [0.9, 0.8]
    a = AuditResult(tables, audits["a"].meta, audits["a"].replicates)
    tables_b = {
        k: v.copy() if k == "lipschitz" else v for k, v in audits["b"].tables.items()
    }
    tables_b["lipschitz"]["lipschitz_extra"] = [0.95, 0.8]
    b = AuditResult(tables_b, audits["b"].meta, audits["b"].replicates)
    result = compare(a, b, a)
    diffs = result.tables["differences"]
    matched = diffs[(diffs["figure"] == "lipschitz_extra") & (diffs["system"] == "engine")]
    assert list(matched["other"]) == ["B", "C"]
    assert matched["difference"].tolist() == pytest.approx([0.05, 0.0])
    # a column only one audit has is not compared
    assert "lipschitz_extra" not in set(compare(a, audits["b"]).tables["values"]["figure"])


def test_compare_refusals(audits):
    a = audits["a"]
    with pytest.raises(ValueError, match="one unique, non-empty name per audit"):
        compare(a, a, names=["x", "x"])
    with pytest.raises(ValueError, match="one unique, non-empty name per audit"):
        compare(a, a, names=["x"])
    newer = AuditResult(a.tables, {**a.meta, "report_format": 2})
    with pytest.raises(
        ValueError, match="different formats \\(A: format 1, B: format 2\\)"
    ):
        compare(a, newer)
    other = AuditResult({"features": a.tables["features"]}, a.meta)
    with pytest.raises(ValueError, match="no figure in common"):
        compare(a, other)
    with pytest.raises(TypeError, match="report 2 is a int"):
        compare(a, 3)


def test_compare_html_escapes_names(audits):
    page = compare(audits["a"], audits["b"], names=["<script>x</script>", "v4"]).to_html()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "Content-Security-Policy" in page


# ------------------------------------------------------------------ the command


def test_cli_compare_writes_and_refuses(saved, tmp_path, capsys):
    out = tmp_path / "cmp"
    code = main(["compare", str(saved / "a"), str(saved / "b"), "--out", str(out),
                 "--names", "v3,v4"])  # fmt: skip
    assert code == 0
    for name in ("comparison.html", "comparison.json", "tables/values.csv",
                 "tables/differences.csv", ".fairaes-report"):  # fmt: skip
        assert (out / name).is_file(), name
    data = json.loads((out / "comparison.json").read_text())
    assert data["meta"]["names"] == ["v3", "v4"]
    assert any(r["paired"] for r in data["tables"]["differences"])
    assert "qwk" in capsys.readouterr().out
    # a comparison folder is not an audit report
    with pytest.raises(ValueError, match="is not an audit report"):
        AuditResult.load(out)

    users = tmp_path / "users"
    users.mkdir()
    (users / "notes.txt").write_text("mine")
    code = main(["compare", str(saved / "a"), str(saved / "b"), "--out", str(users)])
    assert code == 2 and (users / "notes.txt").read_text() == "mine"
    assert "is not a fairaes report" in capsys.readouterr().err

    code = main(["compare", str(saved / "a"), "--out", str(tmp_path / "x")])
    assert code == 2 and "two or more" in capsys.readouterr().err
    code = main(["compare", str(saved / "a"), str(users), "--out", str(tmp_path / "x")])
    assert code == 2 and "no .fairaes-report marker" in capsys.readouterr().err
    code = main(["compare", str(saved / "a"), str(saved / "b"), "--out", str(tmp_path / "x"),
                 "--names", "v3"])  # fmt: skip
    assert code == 2 and "one unique name per report" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    # an input inside --out would be replaced with it
    code = main(["compare", str(saved / "a"), str(saved / "b"), "--out", str(saved / "a"),
                 "--force"])  # fmt: skip
    assert code == 2 and (saved / "a" / "results.json").is_file()


def test_cli_compare_different_essays_says_why(saved, tmp_path, capsys):
    code = main(
        ["compare", str(saved / "a"), str(saved / "c"), "--out", str(tmp_path / "o")]
    )
    assert code == 0
    assert "different essays in prompt 'all'" in capsys.readouterr().out
