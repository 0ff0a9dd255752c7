"""The group view as an analysis of one hand-built Study: every table equals the
metric function called directly on the same scores, the Lipschitz split equals a
naive recomputation from scipy's pdist, and the section is absent without groups."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import pdist
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_predict

import sklearn_fairaes as sf
from sklearn_fairaes.exceptions import UndefinedMetricWarning
from sklearn_fairaes.metrics import condensed_distances
from sklearn_fairaes.report._study import PairSpace, Settings, Study, System
from sklearn_fairaes.report.analyses._groups import (
    ANALYSIS,
    GROUP_LIPSCHITZ_COLUMNS,
    SECTION,
)

N = 48
SCALE = (0, 12)


def _space(name, rep, essays, *, condensed=True):
    rep = rep.fit(essays)
    X = rep.transform(essays)
    if condensed:
        D = condensed_distances(X)
        return PairSpace(name, rep, X, D, "precomputed", D)
    return PairSpace(name, rep, X, X, "cosine", np.zeros(0))


def _study(df, *, groups=True, condensed=True, engine=None, settings=None):
    essays = list(df["essay"])
    y = df["score"].to_numpy(float)
    spaces = {
        "tfidf": _space("tfidf", sf.TfidfEssayVectorizer(), essays, condensed=condensed),
        "bow": _space("bow", sf.BowVectorizer(), essays, condensed=condensed),
    }
    folds = KFold(3, shuffle=True, random_state=0)
    ridge = {r: cross_val_predict(Ridge(), s.X, y, cv=folds) for r, s in spaces.items()}
    if engine is None:
        # a given system: the second rater, one point off on a few essays
        engine = df["rater2"].to_numpy(float) * 2
    return Study(
        prompt="all",
        prompt_text=None,
        essays=essays,
        ids=df["essay_id"].to_numpy(),
        rows=np.arange(1, len(df) + 1),
        human=y,
        score_range=SCALE,
        score_range_source="declared",
        # groups of about 16 essays: tested (min_group_size=2); no bootstrap,
        # whose intervals test_group_bootstrap checks
        settings=settings or Settings(min_group_size=2, n_bootstrap=0),
        groups=df["group"].to_numpy().astype(str) if groups else None,
        systems={
            "engine": System("engine", "given", {None: engine}),
            "ridge": System("ridge", "trained", ridge, Ridge()),
        },
        spaces=spaces,
    )


@pytest.fixture(scope="module")
def demo():
    return sf.load_demo_essays().iloc[:N]


@pytest.fixture(scope="module")
def study(demo):
    return _study(demo)


@pytest.fixture(scope="module")
def output(study):
    return ANALYSIS.run(study)


# what the group view adds to the metric functions' tables
_ADDED = ["representation", "system", "grouping", "tested", "smd_ci_low", "smd_ci_high",
          "dsm_ci_low", "dsm_ci_high"]  # fmt: skip


def _block(table, representation, system):
    part = table[(table["representation"] == representation) & (table["system"] == system)]
    assert (part["grouping"] == "group").all()
    drop = [c for c in _ADDED if c in part.columns]
    return part.drop(columns=drop).reset_index(drop=True)


def test_protocol_and_absent():
    assert ANALYSIS.name == "groups" and SECTION.title == "Group view"
    demo = sf.load_demo_essays().iloc[:20]
    without = _study(demo, groups=False)
    reason = ANALYSIS.absent(without)
    assert reason is not None and "group column" in reason
    with pytest.raises(ValueError, match="prompt 'all' has no groups"):
        ANALYSIS.run(without)


def test_agreement_and_fairness_tables_equal_direct_calls(study, output):
    t = output.tables
    assert set(t) == {
        "group_agreement",
        "group_fairness",
        "group_fairness_coefficients",
        "group_lipschitz",
    }
    for table in t.values():
        assert list(table.columns[:2]) == ["representation", "system"]
        assert "model" not in table.columns and "prompt" not in table.columns
    # given scores once, with no representation; the baseline under each of its own
    blocks = list(dict.fromkeys(zip(t["group_agreement"]["representation"],
                                    t["group_agreement"]["system"])))  # fmt: skip
    assert blocks == [("", "engine"), ("tfidf", "ridge"), ("bow", "ridge")]
    labels = np.arange(SCALE[0], SCALE[1] + 1)
    for rep, name, scores in (
        ("", "engine", study.systems["engine"].scores[None]),
        ("tfidf", "ridge", study.systems["ridge"].scores["tfidf"]),
        ("bow", "ridge", study.systems["ridge"].scores["bow"]),
    ):
        if name == "ridge":  # RSMTool's trim of continuous predictions
            scores = np.clip(scores, -0.4998, 12.4998)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            expected = sf.group_agreement_report(
                study.human,
                scores,
                groups=study.groups,
                labels=labels,
                smd_method="unpooled",  # the audit's default, RSMTool's
            ).reset_index()
            fair = sf.fairness_analyses(study.human, scores, groups=study.groups)
        pd.testing.assert_frame_equal(_block(t["group_agreement"], rep, name), expected)
        pd.testing.assert_frame_equal(
            _block(t["group_fairness"], rep, name), fair.summary.reset_index()
        )
        pd.testing.assert_frame_equal(
            _block(t["group_fairness_coefficients"], rep, name), fair.coefficients
        )
    agreement = t["group_agreement"]
    assert list(agreement["group"].iloc[:4]) == ["A", "B", "C", "all"]
    # the "all" row's QWK is sklearn's on the declared scale, never the observed range
    from sklearn.metrics import cohen_kappa_score

    engine = study.systems["engine"].scores[None]
    row = agreement[(agreement["system"] == "engine") & (agreement["group"] == "all")]
    assert row["qwk"].iloc[0] == pytest.approx(
        cohen_kappa_score(
            study.human.astype(int), engine.astype(int), labels=labels, weights="quadratic"
        )
    )


def test_continuous_predictions_are_trimmed_onto_the_scale(demo):
    # a baseline predicting far beyond the scale: trimmed to half a point
    # past its ends (RSMTool's trim), as in the agreement table
    study = _study(demo)
    wild = study.human * 3 - 10
    study.systems = {"wild": System("wild", "trained", {"tfidf": wild}, Ridge())}
    t = ANALYSIS.run(study).tables["group_agreement"]
    trimmed = np.clip(wild, -0.4998, 12.4998)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        expected = sf.group_agreement_report(
            study.human,
            trimmed,
            groups=study.groups,
            labels=np.arange(0, 13),
            smd_method="unpooled",
        ).reset_index()
        fair = sf.fairness_analyses(study.human, trimmed, groups=study.groups)
    pd.testing.assert_frame_equal(_block(t, "tfidf", "wild"), expected)
    # and the trim matters here: the untrimmed scores give other numbers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        raw = sf.group_agreement_report(
            study.human, wild, groups=study.groups, labels=np.arange(0, 13)
        )
    assert not np.allclose(raw["machine_mean"], expected["machine_mean"])
    fairness = ANALYSIS.run(study).tables["group_fairness"]
    pd.testing.assert_frame_equal(
        _block(fairness, "tfidf", "wild"), fair.summary.reset_index()
    )


def _naive_group_counts(X, scores, groups):
    """Within/cross Lipschitz counts from scipy's pdist, min-max normalised."""
    d = pdist(X.toarray(), "cosine")
    o = pdist(scores[:, None], "cityblock")
    dn = (d - d.min()) / (d.max() - d.min())
    on = (o - o.min()) / (o.max() - o.min())
    ok = on <= dn + 1e-12
    i, j = np.triu_indices(len(scores), k=1)
    same = groups[i] == groups[j]
    out = {"overall": (len(ok), int(ok.sum()))}
    out["within"] = (int(same.sum()), int(ok[same].sum()))
    out["cross"] = (int((~same).sum()), int(ok[~same].sum()))
    for g in np.unique(groups):
        both = same & (groups[i] == g)
        out[g] = (int(both.sum()), int(ok[both].sum()))
    return out


def test_group_lipschitz_equals_the_metric_and_a_naive_count(study, output):
    glip = output.tables["group_lipschitz"]
    assert list(glip.columns) == list(GROUP_LIPSCHITZ_COLUMNS)
    series = list(dict.fromkeys(zip(glip["representation"], glip["system"])))
    # every system audited under the representation, then the human scores
    assert series == [
        ("tfidf", "engine"), ("tfidf", "ridge"), ("tfidf", "human"),
        ("bow", "engine"), ("bow", "ridge"), ("bow", "human"),
    ]  # fmt: skip
    for rep, name in series:
        scores = study.scored(rep)[name]
        X = study.spaces[rep].X
        part = _block(glip, rep, name).set_index(["scope", "group"])
        direct = sf.group_lipschitz_fraction(X, scores, groups=study.groups)
        naive = _naive_group_counts(X, scores, study.groups)
        for scope in ("overall", "within", "cross"):
            row = part.loc[(scope, "")]
            assert row["fraction"] == pytest.approx(direct[scope], abs=1e-12)
            assert (row["n_pairs"], row["n_satisfied"]) == naive[scope]
            assert row["n_essays"] == N
        for label, expected in direct.to_frame().iterrows():
            row = part.loc[("group", label)]
            assert (row["n_essays"], row["n_pairs"], row["n_satisfied"]) == (
                expected["n_essays"],
                expected["n_pairs"],
                expected["n_satisfied"],
            )
            assert (row["n_pairs"], row["n_satisfied"]) == naive[label]
        assert part.loc[("overall", ""), "fraction"] == pytest.approx(
            sf.lipschitz_fraction(X, scores), abs=1e-12
        )


def test_vectors_instead_of_condensed_distances_give_the_same_tables(demo, output):
    # a large study keeps the vectors ("cosine"), not the condensed distances
    other = ANALYSIS.run(_study(demo, condensed=False))
    for name, table in output.tables.items():
        pd.testing.assert_frame_equal(other.tables[name], table, check_exact=False)


def test_a_group_of_one_essay_gives_nan_and_a_note(demo):
    df = demo.copy()
    df.iloc[0, df.columns.get_loc("group")] = "lonely"
    out = ANALYSIS.run(_study(df))
    agreement = out.tables["group_agreement"]
    lonely = agreement[agreement["group"] == "lonely"]
    assert len(lonely) == 3 and lonely["human_sd"].isna().all()
    glip = out.tables["group_lipschitz"]
    row = glip[(glip["group"] == "lonely")]
    assert (row["n_pairs"] == 0).all() and row["fraction"].isna().all()
    assert out.notes and all(n.startswith("Group view") for n in out.notes)
    assert any("engine" in n and "tfidf + ridge" in n for n in out.notes)
    # below min_group_size (2): reported, not tested, left out of the regressions
    assert not lonely["tested"].any() and lonely["smd_ok"].isna().all()
    assert any("'lonely' (n=1)" in n and "not tested" in n for n in out.notes)
    assert "lonely" not in set(out.tables["group_fairness_coefficients"]["group"])


def test_short_answer_grades_get_the_continuous_qwk(demo):
    # grades in [0, 1]: no score points to round to, so the continuous QWK
    # (RSMTool's for real-valued predictions), predictions clipped to [0, 1]
    study = _study(demo)
    grades = study.human / 12
    ridge = (study.systems["ridge"].scores["tfidf"] / 12 - 0.5) * 4 + 0.5
    assert (ridge < 0).any() and (ridge > 1).any()
    study = Study(
        **{
            **study.__dict__,
            "human": grades,
            "score_range": (0, 12),
            "short_answer": True,
            "systems": {"ridge": System("ridge", "trained", {"tfidf": ridge}, Ridge())},
        }
    )
    t = ANALYSIS.run(study).tables
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        expected = sf.group_agreement_report(
            grades,
            np.clip(ridge, 0, 1),
            groups=study.groups,
            rounding=None,
            smd_method="unpooled",
        ).reset_index()
    pd.testing.assert_frame_equal(_block(t["group_agreement"], "tfidf", "ridge"), expected)
    assert not np.allclose(expected["qwk"], np.round(expected["qwk"], 0))


def test_the_all_row_agrees_with_the_audits_agreement_table(demo):
    """Same scale, same trim: the group view's all-essays row is the agreement row."""
    df = demo.copy()
    # a given engine off the inferred scale's middle, and baselines that may leave it
    df["engine"] = np.clip(df["score"].to_numpy() + np.arange(N) % 3 - 1, 0, 12)
    res = sf.audit(
        df,
        text_col="essay",
        score_col="score",
        group_col="group",
        systems=["engine"],
        models=["ridge"],
        representations=["tfidf", "bow"],
        cv=3,
        paraphrases="paraphrase",
        score_range=SCALE,
    )
    agreement = res.tables["agreement"].set_index(["representation", "system"])
    groups = res.tables["group_agreement"]
    everyone = groups[groups["group"] == "all"].set_index(["representation", "system"])
    assert (
        set(everyone.index)
        == set(agreement.index)
        == {
            ("", "engine"),
            ("tfidf", "ridge"),
            ("bow", "ridge"),
        }
    )
    # a baseline leaves the scale here, so the trim is exercised
    assert agreement["n_outside_scale"].sum() > 0
    for key, row in agreement.iterrows():
        for column in ("qwk", "smd", "qwk_ok", "smd_ok"):
            assert everyone.loc[key, column] == pytest.approx(row[column]), (key, column)
