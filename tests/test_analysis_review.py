"""The audit's essays to review, worst pairs and Lipschitz profile (issue 17, item 4).

Every table is checked against the metric functions called directly on the
same representation and scores (and, on a small case, against a brute-force
reference over the full distance matrix); the report section is checked to
escape essay texts.
"""

import re

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import pdist, squareform

import sklearn_fairaes as sf
from sklearn_fairaes import text
from sklearn_fairaes.report import AuditInputError
from sklearn_fairaes.report._study import PairSpace, Settings, Study, System
from sklearn_fairaes.report.analyses import SECTIONS
from sklearn_fairaes.report.analyses._review import ANALYSIS, review_reason

HOSTILE = "<script>alert('x')</script> & <img src=x onerror=alert(1)> "
RUN = {"representations": ["tfidf", "bow"], "paraphrases": "paraphrase", "random_state": 0}
N_REVIEW, K = 6, 4


@pytest.fixture(scope="module")
def demo():
    df = sf.load_demo_essays().iloc[:40].reset_index(drop=True)
    rng = np.random.default_rng(3)
    engine = np.clip(df["score"].to_numpy() + rng.integers(-1, 2, len(df)), 0, 12)
    # essay 0 is scored at the far end of the scale from its human score, and
    # its text tries to inject markup into the report
    engine[0] = 12 if df.loc[0, "score"] < 6 else 0
    df.loc[0, "essay"] = HOSTILE + df.loc[0, "essay"]
    return df.assign(engine=engine)


@pytest.fixture(scope="module")
def given_result(demo):
    return sf.audit(
        demo,
        text_col="essay",
        score_col="score",
        systems=["engine"],
        models=[],
        score_range=(0, 12),
        n_review=N_REVIEW,
        n_neighbors=K,
        **RUN,
    )


def _vectors(demo, rname):
    vectorizer = {"tfidf": text.TfidfEssayVectorizer, "bow": text.BowVectorizer}[rname]
    return vectorizer().fit_transform(demo["essay"].tolist())


def _part(table, rname, system):
    part = table[(table["representation"] == rname) & (table["system"] == system)]
    return part.sort_values("rank").reset_index(drop=True)


def _check_against_metrics(result, demo, rname, system, scores):
    X = _vectors(demo, rname)
    ids = np.array([str(i) for i in range(1, len(demo) + 1)])  # no id_col: the data row
    human = demo["score"].to_numpy(float)
    ec = sf.essay_consistency(X, scores, n_neighbors=K)
    expected = [i for i in ec.review_order[:N_REVIEW] if abs(ec.gap[i]) > 1e-9]
    review = _part(result.tables["review_list"], rname, system)
    assert review["id"].tolist() == ids[expected].tolist()
    assert review["rank"].tolist() == list(range(1, len(expected) + 1))
    np.testing.assert_allclose(review["gap"], ec.gap[expected], atol=1e-9)
    np.testing.assert_allclose(review["neighbor_mean"], ec.neighbor_mean[expected])
    np.testing.assert_allclose(review["max_abs_diff"], ec.max_abs_diff[expected])
    np.testing.assert_array_equal(review["score"], scores[expected])
    np.testing.assert_array_equal(review["human_score"], human[expected])
    assert review["text"].tolist() == demo["essay"].iloc[expected].tolist()
    # the spread beside the figures in score units (issue 33): sample SDs
    table = result.tables["essay_consistency"]
    consistency = table[(table["representation"] == rname) & (table["system"] == system)]
    consistency = consistency.iloc[0]
    assert consistency["score_sd"] == pytest.approx(np.std(scores, ddof=1))
    assert consistency["human_sd"] == pytest.approx(np.std(human, ddof=1))
    neighbors = result.tables["review_neighbors"]
    neighbors = neighbors[
        (neighbors["representation"] == rname) & (neighbors["system"] == system)
    ]
    for rank, i in enumerate(expected, start=1):
        mine = neighbors[neighbors["rank"] == rank].sort_values("neighbor_rank")
        assert mine["neighbor_id"].tolist() == ids[ec.neighbors[i]].tolist()
        np.testing.assert_allclose(mine["distance"], ec.distances[i], atol=1e-9)
        np.testing.assert_array_equal(mine["neighbor_human_score"], human[ec.neighbors[i]])
    lv = sf.lipschitz_violations(X, scores, top=N_REVIEW)
    pairs = _part(result.tables["lipschitz_violations"], rname, system)
    assert pairs["id_a"].tolist() == ids[lv.i].tolist()
    assert pairs["id_b"].tolist() == ids[lv.j].tolist()
    np.testing.assert_allclose(pairs["violation"], lv.violation, atol=1e-9)
    np.testing.assert_array_equal(pairs["score_a"], scores[lv.i])
    summary = _part(result.tables["essay_consistency"].assign(rank=0), rname, system)
    assert int(summary["n_violations"].iloc[0]) == lv.n_violations
    assert int(summary["n_pairs"].iloc[0]) == len(demo) * (len(demo) - 1) // 2
    assert summary["consistency"].iloc[0] == pytest.approx(ec.consistency)
    lp = sf.lipschitz_profile(X, scores)
    constants = result.tables["lipschitz_constants"]
    constants = constants[
        (constants["representation"] == rname) & (constants["system"] == system)
    ]
    assert constants["quantile"].tolist() == [0.9, 0.95, 0.99]
    np.testing.assert_allclose(constants["lipschitz_constant"], lp.quantile_constants)
    curve = result.tables["lipschitz_profile"]
    curve = curve[(curve["representation"] == rname) & (curve["system"] == system)]
    np.testing.assert_allclose(curve["lipschitz_constant"], lp.curve_constant)
    np.testing.assert_allclose(curve["fraction"], lp.curve_fraction)


@pytest.mark.parametrize("rname", ["tfidf", "bow"])
@pytest.mark.parametrize("system", ["engine", "human"])
def test_given_scores_equal_the_metrics_called_directly(given_result, demo, rname, system):
    scores = demo[system if system != "human" else "score"].to_numpy(float)
    _check_against_metrics(given_result, demo, rname, system, scores)


def test_trained_models_equal_the_metrics_called_directly(demo):
    result = sf.audit(
        demo,
        text_col="essay",
        score_col="score",
        models=["ridge"],
        cv=3,
        score_range=(0, 12),
        n_review=N_REVIEW,
        n_neighbors=K,
        **RUN,
    )
    predictions = result.tables["predictions"]
    for rname in ("tfidf", "bow"):
        # a trained baseline is audited under its own representation only
        scores = predictions[f"{rname}+ridge"].to_numpy(float)
        _check_against_metrics(result, demo, rname, "ridge", scores)


def test_the_far_off_essay_is_listed_first_with_its_reason(given_result, demo):
    review = _part(given_result.tables["review_list"], "tfidf", "engine")
    top = review.iloc[0]
    assert top["id"] == "1" and top["data_row"] == 1
    side = "above" if top["gap"] > 0 else "below"
    assert top["reason"] == (
        f"scored {abs(top['gap']):.3g} {side} the mean of its {K} nearest neighbours "
        f"(distance <= {top['farthest_neighbor_distance']:.3g})"
    )
    assert top["score"] - top["neighbor_mean"] == pytest.approx(top["gap"])


def test_report_section_escapes_essay_texts(given_result):
    page = given_result.to_html()
    section = page.split("Essays to review</h2>")[1].split("</section>")[0]
    assert "<script>" not in section and "<img src=x" not in section
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;img src=x" in section
    assert "scored " in section and 'id="figure-lipschitz_profile' in section
    assert "Human scores (rater monitoring)" in section
    # at most REVIEW_ESSAYS_SHOWN essays with their texts per representation and system
    assert section.count("<b>Listed essay</b>") <= 3 * 2 * 2
    assert "tables/review_list.csv" in section


def test_tables_are_written_as_csv(given_result, tmp_path):
    given_result.save(tmp_path / "report")
    written = {p.name for p in (tmp_path / "report" / "tables").iterdir()}
    for name in ("review_list", "review_neighbors", "lipschitz_violations",
                 "lipschitz_constants", "lipschitz_profile", "essay_consistency"):  # fmt: skip
        assert f"{name}.csv" in written
    back = pd.read_csv(tmp_path / "report" / "tables" / "review_list.csv")
    assert list(back.columns[:3]) == ["prompt", "representation", "system"]
    assert len(back) == len(given_result.tables["review_list"])


def test_review_runs_after_lipschitz():
    names = [s.id for s in SECTIONS]
    assert names.index("review") == names.index("lipschitz") + 1


def _study(X, human, systems, settings):
    D = pdist(X, "cosine")
    n = len(human)
    return Study(
        prompt="all",
        prompt_text=None,
        essays=[f"essay {i}" for i in range(n)],
        ids=np.array([f"e{i}" for i in range(n)], dtype=object),
        rows=np.arange(1, n + 1),
        human=human,
        score_range=(float(human.min()), float(human.max())),
        score_range_source="inferred",
        settings=settings,
        systems=systems,
        spaces={"v": PairSpace("v", None, X, D, "precomputed", D)},
    )


def test_brute_force_reference_on_a_small_study():
    rng = np.random.default_rng(7)
    X = rng.random((9, 3))
    human = rng.integers(0, 5, 9).astype(float)
    engine = np.clip(human + rng.integers(-2, 3, 9), 0, 4).astype(float)
    study = _study(
        X, human, {"engine": System("engine", "given", {None: engine})},
        Settings(n_review=4, n_neighbors=3),
    )  # fmt: skip
    out = ANALYSIS.run(study)
    full = squareform(pdist(X, "cosine"))
    np.fill_diagonal(full, np.inf)
    nearest = np.argsort(full, axis=1, kind="stable")[:, :3]
    gap = engine - engine[nearest].mean(axis=1)
    order = sorted(range(9), key=lambda i: (-abs(gap[i]), i))[:4]
    order = [i for i in order if abs(gap[i]) > 1e-9]
    review = _part(out.tables["review_list"], "v", "engine")
    assert review["id"].tolist() == [f"e{i}" for i in order]
    np.testing.assert_allclose(review["gap"], gap[order])
    np.testing.assert_allclose(
        review["nearest_distance"], full[order, nearest[order, 0]], rtol=1e-12
    )
    # worst pairs: normalised |dy| - normalised distance, over all 36 pairs
    d = pdist(X, "cosine")
    dy = pdist(engine[:, None], "cityblock")
    violation = (dy - dy.min()) / (dy.max() - dy.min()) - (d - d.min()) / (
        d.max() - d.min()
    )
    worst = np.sort(violation[violation > 0])[::-1][:4]
    pairs = _part(out.tables["lipschitz_violations"], "v", "engine")
    np.testing.assert_allclose(pairs["violation"], worst)
    summary = out.tables["essay_consistency"]
    row = summary[summary["system"] == "engine"].iloc[0]
    assert row["n_violations"] == int(np.sum(violation > 0)) and row["n_pairs"] == 36


def test_constant_scores_list_nothing_and_say_so():
    X = np.random.default_rng(0).random((6, 3))
    human = np.array([1.0, 2, 3, 1, 2, 3])
    flat = np.full(6, 2.0)
    study = _study(X, human, {"flat": System("flat", "given", {None: flat})}, Settings())
    out = ANALYSIS.run(study)
    assert _part(out.tables["review_list"], "v", "flat").empty
    assert _part(out.tables["lipschitz_violations"], "v", "flat").empty
    assert not out.tables["review_list"]["gap"].isna().any()
    # 6 essays: each is compared with its 5 others although 5 is the default
    assert not any("instead of" in n for n in out.notes)
    study.settings = Settings(n_neighbors=8)
    out = ANALYSIS.run(study)
    assert any("its 5 other essays instead of the 8" in n for n in out.notes)
    assert set(out.tables["review_list"]["n_neighbors"]) == {5}


@pytest.mark.parametrize(
    ("option", "value"), [("n_review", 0), ("n_neighbors", 0), ("n_neighbors", True),
                          ("n_review", 2.5)],
)  # fmt: skip
def test_bad_options_are_refused_up_front(demo, option, value):
    with pytest.raises(
        AuditInputError,
        match=re.escape(
            f"{option} (--{option.replace('_', '-')}) must be an int in the range [1, inf)"
        ),
    ):
        sf.audit(
            demo, text_col="essay", score_col="score", systems=["engine"], models=[],
            **{option: value, **RUN},
        )  # fmt: skip


def test_review_reason_wording():
    assert review_reason(-3.2, 5, 0.12) == (
        "scored 3.2 below the mean of its 5 nearest neighbours (distance <= 0.12)"
    )
    assert (
        review_reason(2.0, 1, 0.5) == "scored 2 above its nearest neighbour (distance 0.5)"
    )


def _cli_essays(path):
    demo = sf.load_demo_essays().iloc[:16].reset_index(drop=True)
    rng = np.random.default_rng(0)
    frame = demo[["essay_id", "essay", "score"]].copy()
    frame["engine"] = np.clip(frame["score"] + rng.integers(-2, 3, len(frame)), 0, 12)
    frame.to_csv(path, index=False)
    return path


CLI = ["--text-col", "essay", "--score-col", "score", "--system-cols", "engine",
       "--id-col", "essay_id", "--representations", "bow", "--score-range", "0,12",
       "--quiet"]  # fmt: skip


def test_cli_passes_n_review_and_n_neighbors(tmp_path):
    from sklearn_fairaes.cli import main

    data = _cli_essays(tmp_path / "essays.csv")
    out = tmp_path / "out"
    code = main(["audit", str(data), *CLI, "--n-review", "3", "--n-neighbors", "2",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    review = pd.read_csv(out / "tables" / "review_list.csv")
    assert review.groupby(["representation", "system"]).size().max() <= 3
    assert set(review["n_neighbors"]) == {2}
    neighbors = pd.read_csv(out / "tables" / "review_neighbors.csv")
    assert neighbors.groupby(["system", "rank"]).size().eq(2).all()
    assert len(pd.read_csv(out / "tables" / "lipschitz_violations.csv")) <= 2 * 3


def test_cli_refuses_a_bad_n_review(tmp_path, capsys):
    from sklearn_fairaes.cli import main

    data = _cli_essays(tmp_path / "essays.csv")
    code = main(
        ["audit", str(data), *CLI, "--n-review", "0", "--out", str(tmp_path / "out")]
    )
    assert code != 0
    assert (
        "n_review (--n-review) must be an int in the range [1, inf), got 0"
        in capsys.readouterr().err
    )


def test_every_prompt_has_its_own_list_and_neighbours_stay_within_it(demo):
    frame = demo.iloc[:24].assign(prompt=np.where(np.arange(24) % 2 == 0, "p1", "p2"))
    result = sf.audit(
        frame, text_col="essay", score_col="score", systems=["engine"], models=[],
        prompt_col="prompt", id_col="essay_id", score_range=(0, 12), n_review=4,
        n_neighbors=3, representations=["bow"], paraphrases="paraphrase",
    )  # fmt: skip
    prompt_of = dict(zip(frame["essay_id"].astype(str), frame["prompt"]))
    neighbors = result.tables["review_neighbors"]
    assert set(neighbors["prompt"]) == {"p1", "p2"}
    for p, n in zip(neighbors["prompt"], neighbors["neighbor_id"].astype(str)):
        assert prompt_of[n] == p
    review = result.tables["review_list"]
    sub = frame[frame["prompt"] == "p2"].reset_index(drop=True)
    X = text.BowVectorizer().fit_transform(sub["essay"].tolist())
    ec = sf.essay_consistency(X, sub["engine"].to_numpy(float), n_neighbors=3)
    expected = [i for i in ec.review_order[:4] if abs(ec.gap[i]) > 1e-9]
    got = review[(review["prompt"] == "p2") & (review["system"] == "engine")]
    assert got["id"].astype(str).tolist() == sub["essay_id"].astype(str)[expected].tolist()
    # one part per prompt in the report, each with its own section and figure
    page = result.to_html()
    assert page.count("Essays to review</h3>") == 2
    assert 'id="figure-lipschitz_profile-p1"' in page
    assert 'id="figure-lipschitz_profile-p2"' in page
