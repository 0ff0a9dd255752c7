"""perturbation_audit: its tables against a naive recomputation (scipy distances,
pdist ranges, hand-written Lipschitz check), the tolerance rules, the built-in
sanity check on ASAP prompt 7 (a unigram model is blind to sentence order), the
figure, and bad input."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from conftest import PROMPT7, missing_resource, require_module
from scipy.spatial.distance import cosine, pdist
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.dummy import DummyClassifier
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline

from sklearn_fairaes import TfidfEssayVectorizer
from sklearn_fairaes.exceptions import UndefinedMetricWarning
from sklearn_fairaes.perturb import (
    PERTURBATION_NAMES,
    SentenceShuffle,
    TypoInjection,
    get_perturbation,
    perturbation_audit,
    plot_perturbation_audit,
)
from sklearn_fairaes.perturb._audit import DETAIL_COLUMNS, SUMMARY_COLUMNS
from sklearn_fairaes.perturb._registry import resolve_perturbations

ESSAYS = [
    "I waited for the bus with @PERSON1. It was late. I was patient and calm.",
    "My sister can't wait. She is never patient. She cried when the bus came late.",
    "Patience is hard for me. I am not a patient person. I hate waiting in lines.",
    "We waited for hours at the doctor. Nobody complained. My mother read a book.",
    "Being patient means you wait without complaining. I learned that at @LOCATION1.",
    "The line at the store was long. I did not yell. I waited and I smiled at people.",
    "My grandfather taught me patience. He fished for hours. He never gave up.",
    "I was patient when my computer broke. I waited @NUM1 days for the repair.",
    "When I planted seeds I waited every day. Finally they grew. I was so happy.",
    "I don't like waiting. But I waited for my turn at the game. It was worth it.",
    "Patience helps people. Teachers are patient with students. I want to be patient.",
    "Once I waited for a train for two hours. It was cold. I read and I stayed calm.",
]
SCORES = np.array([3, 2, 2, 4, 3, 4, 5, 3, 4, 3, 4, 5], dtype=float)
CHEAP = ["typos", "sentence_deletion", "sentence_shuffle", "word_scramble", "negation"]


@pytest.fixture(scope="module")
def model():
    return make_pipeline(TfidfEssayVectorizer(min_df=1), Ridge(alpha=1.0)).fit(
        ESSAYS, SCORES
    )


@pytest.fixture(scope="module")
def rep():
    return TfidfEssayVectorizer(min_df=1).fit(ESSAYS)


def _reference(model, rep, name, tol, L=1.0):
    """One summary row recomputed naively."""
    texts = get_perturbation(name, random_state=0, prompt=PROMPT7).transform(ESSAYS)
    y0, y1 = model.predict(ESSAYS), model.predict(texts)
    X0, X1 = rep.transform(ESSAYS).toarray(), rep.transform(texts).toarray()
    changed = np.array([t != e for t, e in zip(texts, ESSAYS)])
    d = np.array([cosine(a, b) if c else 0.0 for a, b, c in zip(X0, X1, changed)])
    d = np.where(np.abs(d) < 1e-12, 0.0, d)
    D, Dy = pdist(X0, "cosine"), pdist(y0[:, None])
    dn = np.maximum((d - D.min()) / (D.max() - D.min()), 0)
    on = np.maximum((np.abs(y1 - y0) - Dy.min()) / (Dy.max() - Dy.min()), 0)
    c = (y1 - y0)[changed]
    expected = get_perturbation(name, prompt=PROMPT7).expected
    moves = {"stay": np.abs(c) <= tol, "drop": c < -tol, "change": np.abs(c) > tol}[
        expected
    ]
    return {
        "n_changed": int(changed.sum()),
        "mean_abs_change": np.mean(np.abs(c)),
        "mean_change": np.mean(c),
        "max_abs_change": np.max(np.abs(c)),
        "share_beyond_tolerance": np.mean(np.abs(c) > tol),
        "share_down": np.mean(c < -tol),
        "share_within": np.mean(np.abs(c) <= tol),
        "share_up": np.mean(c > tol),
        "share_expected": np.mean(moves),
        "mean_distance": np.mean(d[changed]),
        "share_zero_distance": np.mean(d[changed] == 0),
        "lipschitz_minmax": np.mean((on <= L * dn)[changed]),
        "lipschitz_max": np.mean((np.abs(y1 - y0) / Dy.max() <= L * d / D.max())[changed]),
    }


def test_summary_matches_a_naive_recomputation(model, rep):
    from sklearn_fairaes.resources import ResourceNotFoundError, ensure_wordnet

    try:
        ensure_wordnet()
    except ResourceNotFoundError as exc:
        missing_resource(f"WordNet ({exc})")
    tol = 0.1
    summary = perturbation_audit(
        model, ESSAYS, perturbations=CHEAP, representation=rep, tolerance=tol
    )
    assert list(summary.columns) == list(SUMMARY_COLUMNS)
    assert list(summary["perturbation"]) == CHEAP
    for row in summary.itertuples(index=False):
        ref = _reference(model, rep, row.perturbation, tol)
        assert row.n_essays == len(ESSAYS) and row.tolerance == tol
        for key, value in ref.items():
            np.testing.assert_allclose(
                getattr(row, key),
                value,
                rtol=1e-9,
                atol=1e-12,
                err_msg=f"{row.perturbation}: {key}",
            )
        assert row.share_down + row.share_within + row.share_up == pytest.approx(1.0)
    attrs = summary.attrs
    D = pdist(rep.transform(ESSAYS).toarray(), "cosine")
    np.testing.assert_allclose(attrs["distance_range"], (D.min(), D.max()), rtol=1e-12)
    Dy = pdist(model.predict(ESSAYS)[:, None])
    np.testing.assert_allclose(attrs["outcome_range"], (Dy.min(), Dy.max()), rtol=1e-12)
    assert attrs["tolerance"] == tol and attrs["metric"] == "cosine"


def test_lipschitz_constant_and_both_normalisations_follow_the_formula(model, rep):
    D = pdist(rep.transform(ESSAYS).toarray(), "cosine")
    Dy = pdist(model.predict(ESSAYS)[:, None])
    for L in (0.5, 3.0, 40.0):
        det = perturbation_audit(
            model,
            ESSAYS,
            perturbations=["typos", "word_scramble"],
            representation=rep,
            lipschitz_constant=L,
            return_details=True,
        ).details
        d, o = det["distance"].to_numpy(), np.abs(det["change"].to_numpy())
        np.testing.assert_array_equal(
            det["lipschitz_ok_max"], o / Dy.max() <= L * d / D.max()
        )
        minmax = np.maximum((o - Dy.min()) / (Dy.max() - Dy.min()), 0) <= L * np.maximum(
            (d - D.min()) / (D.max() - D.min()), 0
        )
        np.testing.assert_array_equal(det["lipschitz_ok_minmax"], minmax)
        # an unchanged essay (distance 0, change 0) always satisfies both
        same = ~det["changed"].to_numpy()
        assert (
            det["lipschitz_ok_minmax"][same].all() and det["lipschitz_ok_max"][same].all()
        )


def test_details_describe_every_essay(model, rep):
    out = perturbation_audit(
        model,
        ESSAYS,
        perturbations=["typos", "sentence_shuffle"],
        representation=rep,
        return_details=True,
    )
    det = out.details
    assert list(det.columns) == list(DETAIL_COLUMNS)
    assert len(det) == 2 * len(ESSAYS)
    for name, group in det.groupby("perturbation", sort=False):
        texts = out.perturbed[name]
        np.testing.assert_array_equal(group["essay"], np.arange(len(ESSAYS)))
        np.testing.assert_array_equal(
            group["changed"], [t != e for t, e in zip(texts, ESSAYS)]
        )
        np.testing.assert_allclose(group["score_perturbed"], model.predict(texts))
        np.testing.assert_allclose(group["score_original"], model.predict(ESSAYS))
        np.testing.assert_allclose(
            group["change"], group["score_perturbed"] - group["score_original"]
        )
        assert list(group["n_edits"]) == [len(r.edits) for r in out.records[name]]
        unchanged = ~group["changed"]
        assert (group.loc[unchanged, "distance"] == 0).all()
        assert (group.loc[unchanged, "change"] == 0).all()
        tol = out.tolerance
        moves = np.where(
            group["change"] > tol, "up", np.where(group["change"] < -tol, "down", "within")
        )
        np.testing.assert_array_equal(group["movement"], moves)
    row = det[(det["perturbation"] == "typos") & det["changed"]].iloc[0]
    assert "->" in row["edit_preview"]
    assert out.summary.equals(
        perturbation_audit(
            model, ESSAYS, perturbations=["typos", "sentence_shuffle"], representation=rep
        )
    )


def test_results_do_not_depend_on_the_essay_order(model, rep):
    a = perturbation_audit(
        model,
        ESSAYS,
        perturbations=["typos", "word_scramble"],
        representation=rep,
        return_details=True,
    )
    order = np.random.default_rng(0).permutation(len(ESSAYS))
    b = perturbation_audit(
        model,
        [ESSAYS[i] for i in order],
        perturbations=["typos", "word_scramble"],
        representation=rep,
        return_details=True,
    )
    for name in ("typos", "word_scramble"):
        assert [b.perturbed[name][k] for k in np.argsort(order)] == a.perturbed[name]
    pd.testing.assert_frame_equal(a.summary, b.summary, check_exact=False, rtol=1e-9)


def test_perturbation_objects_and_labels(model, rep):
    summary = perturbation_audit(
        model,
        ESSAYS,
        representation=rep,
        perturbations={
            "typos_5": TypoInjection(0.05, random_state=1),
            "typos_50": TypoInjection(0.5, random_state=1),
            "shuffle": "sentence_shuffle",
        },
    )
    assert list(summary["perturbation"]) == ["typos_5", "typos_50", "shuffle"]
    # more typos move the representation further
    mean = dict(zip(summary["perturbation"], summary["mean_distance"]))
    assert mean["typos_50"] > mean["typos_5"]
    names = [n for n, _ in resolve_perturbations("default")]
    assert names == [n for n in PERTURBATION_NAMES if n != "prompt_stuffing"]
    names = [n for n, _ in resolve_perturbations("default", prompt=PROMPT7)]
    assert names == list(PERTURBATION_NAMES)
    [(name, shuffle)] = resolve_perturbations(SentenceShuffle(random_state=5))
    assert name == "sentence_shuffle" and shuffle.random_state == 5


def test_several_models_share_one_set_of_edits(model, rep):
    other = make_pipeline(TfidfEssayVectorizer(min_df=1, ngram_range=(1, 1)), Ridge()).fit(
        ESSAYS, SCORES
    )
    names = ["typos", "sentence_shuffle"]
    both = perturbation_audit(
        {"bigram": model, "unigram": other},
        ESSAYS,
        perturbations=names,
        representation=rep,
        score_scale=[1, 2, 3, 4, 5],
        return_details=True,
    )
    assert list(both.summary.columns) == ["model", *SUMMARY_COLUMNS]
    assert list(both.details.columns) == ["model", *DETAIL_COLUMNS]
    assert list(both.summary["model"]) == ["bigram", "bigram", "unigram", "unigram"]
    for label, single in (("bigram", model), ("unigram", other)):
        alone = perturbation_audit(
            single,
            ESSAYS,
            perturbations=names,
            representation=rep,
            score_scale=[1, 2, 3, 4, 5],
            return_details=True,
        )
        block = both.summary[both.summary["model"] == label].drop(columns="model")
        pd.testing.assert_frame_equal(block.reset_index(drop=True), alone.summary)
        rows = both.details[both.details["model"] == label].drop(columns="model")
        pd.testing.assert_frame_equal(rows.reset_index(drop=True), alone.details)
        assert (
            both.summary.attrs["outcome_range"][label]
            == alone.summary.attrs["outcome_range"]
        )
    assert both.tolerance == {"bigram": 0.5, "unigram": 0.5}
    with pytest.raises(ValueError, match="estimator is an empty dict"):
        perturbation_audit({}, ESSAYS, perturbations=names)
    with pytest.raises(TypeError, match="model names \\(the dict's keys\\) must be str"):
        perturbation_audit({1: model}, ESSAYS, perturbations=names)
    with pytest.raises(TypeError, match="estimator\\['bad'\\] must have a predict"):
        perturbation_audit({"ok": model, "bad": rep}, ESSAYS, perturbations=names)


def test_dense_and_pandas_representations(model):
    from sklearn.decomposition import TruncatedSVD

    svd = make_pipeline(TfidfEssayVectorizer(min_df=1), TruncatedSVD(5, random_state=0))
    dense = perturbation_audit(
        model, ESSAYS, perturbations=["typos"], representation=svd, return_details=True
    )
    # pandas output from the SVD step; the vectorizer's is sparse and, like
    # sklearn's own vectorizers, refuses set_output(transform="pandas")
    svd[-1].set_output(transform="pandas")
    frame = perturbation_audit(
        model,
        ESSAYS,
        perturbations=["typos"],
        representation=svd,
        return_details=True,
    )
    pd.testing.assert_frame_equal(dense.details, frame.details)
    fitted = svd.fit(ESSAYS)
    Z0 = fitted.transform(ESSAYS).to_numpy()
    Z1 = fitted.transform(dense.perturbed["typos"]).to_numpy()
    expected = [cosine(a, b) for a, b in zip(Z0, Z1)]
    np.testing.assert_allclose(dense.details["distance"], expected, atol=1e-9)


def test_sentence_bert_model_and_representation(model, minilm):
    from sklearn_fairaes import SentenceBertEncoder

    sbert = make_pipeline(SentenceBertEncoder(minilm), Ridge()).fit(ESSAYS, SCORES)
    out = perturbation_audit(
        {"tfidf": model, "sbert": sbert},
        ESSAYS,
        perturbations=["case_whitespace", "word_salad"],
        representation=SentenceBertEncoder(minilm),
        return_details=True,
    )
    rows = out.summary.set_index(["model", "perturbation"])
    # MiniLM lower-cases its input: extra spaces and case flips do not move it
    assert rows.loc[("sbert", "case_whitespace"), "max_abs_change"] < 1e-4
    assert rows.loc[("sbert", "word_salad"), "mean_distance"] > 0.3


def test_an_edit_that_changes_nothing_warns_and_gives_nan(model, rep):
    essays = [
        e.replace("@PERSON1", "Sam").replace("@LOCATION1", "camp").replace("@NUM1", "ten")
        for e in ESSAYS
    ]
    with pytest.warns(
        UndefinedMetricWarning, match="'placeholders' changed none of the 12"
    ):
        summary = perturbation_audit(
            model, essays, perturbations=["placeholders", "typos"], representation=rep
        )
    row = summary.iloc[0]
    assert row["n_changed"] == 0 and np.isnan(row["mean_abs_change"])
    assert np.isnan(row["lipschitz_minmax"]) and np.isnan(row["lipschitz_max"])
    assert summary.iloc[1]["n_changed"] > 0


# ------------------------------------------------------------------ tolerance
def test_tolerance_rules(model, rep):
    def tol(**kwargs):
        return perturbation_audit(
            model, ESSAYS, perturbations=["typos"], representation=rep, **kwargs
        ).attrs

    assert tol()["tolerance"] == 0.5
    assert "integer scale is assumed" in tol()["tolerance_rule"]
    assert tol(score_scale=range(0, 31))["tolerance"] == 0.5
    assert tol(score_scale=[0, 0.5, 1.5, 1])["tolerance"] == 0.25
    assert tol(score_scale=np.arange(0, 101) * 2.0)["tolerance"] == 1.0
    assert tol(tolerance=0.2, score_scale=[0, 1])["tolerance"] == 0.2
    assert tol(tolerance=0)["tolerance"] == 0.0
    # any real number, as the check promises (a Fraction once crashed in np.isfinite)
    assert tol(tolerance=Fraction(1, 4))["tolerance"] == 0.25
    assert tol(tolerance=np.float32(0.5))["tolerance"] == 0.5
    with pytest.raises(ValueError, match="looks like a continuous scale"):
        tol(score_scale=np.linspace(0, 1, 200))
    with pytest.raises(ValueError, match="score_scale holds one distinct score"):
        tol(score_scale=[3, 3])
    with pytest.raises(ValueError, match="tolerance must be a finite number >= 0"):
        tol(tolerance=-1)
    with pytest.raises(ValueError, match="tolerance must be 'auto' or a number"):
        tol(tolerance="half")
    with pytest.raises(TypeError, match="tolerance must be 'auto' or a number"):
        tol(tolerance=True)
    # a classifier's numeric classes give the scale
    clf = make_pipeline(TfidfEssayVectorizer(min_df=1), LogisticRegression()).fit(
        ESSAYS, SCORES * 2
    )
    attrs = perturbation_audit(
        clf, ESSAYS, perturbations=["typos"], representation=rep
    ).attrs
    assert attrs["tolerance"] == 1.0 and "classes_" in attrs["tolerance_rule"]


# ---------------------------------------------------------------- bad input
def test_bad_input_gives_clear_errors(model, rep):
    def audit(estimator=model, essays=ESSAYS, **kw):
        kw.setdefault("perturbations", ["typos"])
        return perturbation_audit(estimator, essays, representation=rep, **kw)

    with pytest.raises(
        TypeError,
        match="estimator must have a predict\\(\\) method .* got a TfidfEssayVectorizer",
    ):
        audit(estimator=TfidfEssayVectorizer())
    with pytest.raises(TypeError, match="estimator is the class Ridge, not an instance"):
        audit(estimator=Ridge)
    with pytest.raises(NotFittedError, match="estimator \\(Pipeline\\) is not fitted"):
        audit(estimator=make_pipeline(TfidfEssayVectorizer(), Ridge()))
    with pytest.raises(
        ValueError,
        match="unknown perturbation 'shuffle'; the perturbations are 'case_whitespace'",
    ):
        audit(perturbations=["typos", "shuffle"])
    with pytest.raises(TypeError, match="essay at position 1 of essays is a int"):
        audit(essays=["An essay.", 3])
    with pytest.raises(ValueError, match="essay at position 0 of essays is None"):
        audit(essays=[None, "An essay."])
    with pytest.raises(TypeError, match="essays must be a collection of essays"):
        audit(essays="One essay.")
    with pytest.raises(
        ValueError, match="essays has 1 essay\\(s\\); at least 2 are needed"
    ):
        audit(essays=["One essay."])
    with pytest.raises(ValueError, match="PromptStuffing needs the prompt"):
        audit(perturbations=["prompt_stuffing"])
    with pytest.raises(
        ValueError, match="the default task representation, .* could not be"
    ):
        perturbation_audit(model, ["Apples grow.", "Bikes roll."], perturbations=["typos"])
    with pytest.raises(ValueError, match="PromptStuffing needs the prompt"):
        audit(perturbations="all")
    with pytest.raises(ValueError, match="perturbation 'typos' is given twice"):
        audit(perturbations=["typos", TypoInjection()])
    with pytest.raises(ValueError, match="perturbations is empty"):
        audit(perturbations=[])
    with pytest.raises(TypeError, match="a perturbation must be a name"):
        audit(perturbations=[Ridge()])
    with pytest.raises(TypeError, match="perturbations must be 'default', 'all'"):
        audit(perturbations=3)
    with pytest.raises(ValueError, match="lipschitz_constant must be positive"):
        audit(lipschitz_constant=0)
    with pytest.raises(TypeError, match="return_details must be True or False"):
        audit(return_details="yes")
    with pytest.raises(ValueError, match="'rate' parameter of TypoInjection"):
        audit(perturbations=[TypoInjection(rate=3)])
    labels = DummyClassifier(strategy="most_frequent").fit(
        np.zeros((2, 1)), ["good", "bad"]
    )
    with pytest.raises(TypeError, match="the estimator's predictions must hold numbers"):
        audit(
            estimator=make_pipeline(TfidfEssayVectorizer(min_df=1), labels).fit(
                ESSAYS[:2], ["good", "bad"]
            )
        )


# --------------------------------------------------------------------- figure
def test_plot_takes_the_summary(model, rep):
    require_module("matplotlib", "report")
    summary = perturbation_audit(
        model, ESSAYS, perturbations=["typos", "word_scramble"], representation=rep
    )
    fig = plot_perturbation_audit(summary)
    assert [ax.get_title() for ax in fig.axes] == [
        "Where scores moved",
        "Mean score change",
        "Representation distance",
    ]
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["typos (stay)", "word_scramble (drop)"]
    two = pd.concat([summary.assign(model="ridge"), summary.assign(model="$other")])
    fig = plot_perturbation_audit(two, title="Two models")
    assert len(fig.axes) == 6 and fig.axes[3].get_ylabel() == r"\$other"
    with pytest.raises(ValueError, match="summary lacks the column\\(s\\) share_up"):
        plot_perturbation_audit(summary.drop(columns="share_up"))


# ----------------------------------------------------------- ASAP prompt 7
def _asap_models(asap7, ngram_range):
    essays = list(asap7["essay"])
    y = asap7["domain1_score"].astype(float).to_numpy()
    model = make_pipeline(
        TfidfEssayVectorizer(ngram_range=ngram_range), Ridge(alpha=1.0)
    ).fit(essays[:300], y[:300])
    return model, essays[300:450], y[:300]


def test_unigram_model_is_blind_to_sentence_order_on_asap7(asap7):
    """The audit's built-in sanity check: with unigrams only, a shuffle changes
    nothing the model sees, so every score change is exactly 0 (and so are the
    changes under placeholder renaming and case/space noise, which a lower-casing,
    letters-only vectorizer cannot see); with bigrams the shuffle is visible."""
    model, audited, y_train = _asap_models(asap7, (1, 1))
    names = ["sentence_shuffle", "placeholders", "case_whitespace"]
    out = perturbation_audit(
        model, audited, perturbations=names, score_scale=y_train, return_details=True
    )
    summary = out.summary.set_index("perturbation")
    assert (summary["n_changed"] >= 100).all()
    assert (summary["max_abs_change"] == 0.0).all()
    assert (out.details["change"] == 0.0).all()
    assert (summary["share_expected"].loc[["placeholders", "case_whitespace"]] == 1.0).all()
    assert summary.loc["sentence_shuffle", "share_expected"] == 0.0
    # the default task representation (TF-IDF with bigrams) sees most shuffles;
    # not all, as min_df=3 drops many of the bigrams that span two sentences
    assert summary.loc["sentence_shuffle", "share_zero_distance"] < 0.5
    assert summary.loc["sentence_shuffle", "mean_distance"] > 0

    bigram, audited, y_train = _asap_models(asap7, (1, 2))
    shuffled = perturbation_audit(
        bigram,
        audited,
        perturbations=["sentence_shuffle"],
        score_scale=y_train,
        return_details=True,
    )
    changed = shuffled.details[shuffled.details["changed"]]
    # most, not all: a bigram spanning two sentences counts only when it is in the
    # vocabulary (min_df=3 on 300 essays)
    assert (changed["change"] != 0).mean() > 0.5
    assert shuffled.summary["max_abs_change"].iloc[0] > 0


@pytest.mark.slow
def test_every_perturbation_on_all_of_asap7(asap7):
    """TF-IDF + Ridge on all of prompt 7 (in-sample), every perturbation."""
    require_module("spellchecker", "spelling")
    from sklearn_fairaes.resources import ResourceNotFoundError

    essays = list(asap7["essay"])
    y = asap7["domain1_score"].astype(float).to_numpy()
    model = make_pipeline(TfidfEssayVectorizer(), Ridge(alpha=1.0)).fit(essays, y)
    try:
        out = perturbation_audit(
            model,
            essays,
            perturbations="all",
            prompt=PROMPT7,
            score_scale=y,
            return_details=True,
        )
    except ResourceNotFoundError as exc:
        # only a missing resource; an ImportError from our package is a bug
        missing_resource(str(exc))
    summary = out.summary.set_index("perturbation")
    assert list(summary.index) == list(PERTURBATION_NAMES)
    assert (summary["n_changed"] > 1000).all()
    # letters-only, lower-cased TF-IDF cannot see these two edits
    assert (summary.loc[["placeholders", "case_whitespace"], "max_abs_change"] == 0).all()
    # word salad replaces every content word: the representation sees it most
    assert summary["mean_distance"].idxmax() in ("word_salad", "off_topic")
    assert len(out.details) == len(PERTURBATION_NAMES) * len(essays)


# ------------------------------------------ the audit's counterfactual analysis
EDITS = ("typos", "sentence_shuffle")


class _NeverRefit(RegressorMixin, BaseEstimator):
    """A fitted text -> score model whose fit raises: the audit must use it as it is."""

    def __init__(self, pipeline=None):
        self.pipeline = pipeline

    def __sklearn_is_fitted__(self):
        return True

    def fit(self, *args, **kwargs):
        raise AssertionError("a fitted system was refitted")

    def predict(self, texts):
        return self.pipeline.predict(texts)


def _counterfactual_study(n=40, *, systems, perturbations=EDITS, short_answer=False):
    import sklearn_fairaes as sf
    from sklearn_fairaes.report._study import PairSpace, Settings, Study

    df = sf.load_demo_essays().iloc[:n]
    essays = list(df["essay"])
    spaces = {}
    for name, rep in (("tfidf", TfidfEssayVectorizer()), ("bow", sf.BowVectorizer())):
        rep = rep.fit(essays)
        X = rep.transform(essays)
        spaces[name] = PairSpace(name, rep, X, X, "cosine", np.zeros(0))
    y = df["score"].to_numpy(float)
    return Study(
        prompt="all",
        prompt_text=None,
        essays=essays,
        ids=df["essay_id"].to_numpy(),
        rows=np.arange(1, n + 1),
        human=y / 12 if short_answer else y,
        score_range=(0, 12),
        score_range_source="declared",
        settings=Settings(perturbations=perturbations, n_perturbation_essays=200),
        short_answer=short_answer,
        systems=systems,
        spaces=spaces,
    )


def _fitted_engine(n=40):
    import sklearn_fairaes as sf

    df = sf.load_demo_essays().iloc[n:]  # trained on other essays than those audited
    return _NeverRefit(
        make_pipeline(TfidfEssayVectorizer(), Ridge()).fit(
            list(df["essay"]), df["score"].to_numpy(float)
        )
    )


def test_counterfactual_trained_baseline_equals_a_direct_call():
    """A trained baseline is refitted on all essays but the held-out sample."""
    from sklearn.base import clone
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.pipeline import Pipeline

    from sklearn_fairaes.report._study import System
    from sklearn_fairaes.report.analyses._counterfactual import ANALYSIS

    boost = GradientBoostingRegressor(n_estimators=20, random_state=0)
    systems = {
        "ridge": System("ridge", "trained", {"tfidf": np.zeros(40)}, Ridge()),
        "boost": System(
            "boost", "trained", {"tfidf": np.zeros(40), "bow": np.zeros(40)}, boost
        ),
    }
    study = _counterfactual_study(systems=systems)
    assert ANALYSIS.absent(study) is None
    out = ANALYSIS.run(study)
    got = out.tables["perturbation"]
    assert list(got.columns) == ["representation", "system", *SUMMARY_COLUMNS]
    # at most a fifth held out (8 of 40), drawn as the audit always did
    held = np.sort(np.random.default_rng(0).choice(40, size=8, replace=False))
    train = np.setdiff1d(np.arange(40), held)
    essays, y = study.essays, study.human
    for rname, names in (("tfidf", ["ridge", "boost"]), ("bow", ["boost"])):
        rep = clone(study.spaces[rname].transformer)
        pipes = {
            m: Pipeline(
                [("representation", rep), ("model", clone(systems[m].estimator))]
            ).fit([essays[i] for i in train], y[train])
            for m in names
        }
        expected = perturbation_audit(
            pipes,
            [essays[i] for i in held],
            perturbations=list(EDITS),
            representation=study.spaces[rname].transformer,
            score_scale=y,
            random_state=0,
        ).rename(columns={"model": "system"})
        block = got[got["representation"] == rname].drop(columns="representation")
        pd.testing.assert_frame_equal(
            block.reset_index(drop=True), expected, check_dtype=False
        )
    ex = out.tables["perturbation_examples"]
    assert list(ex.columns) == [
        "representation",
        "perturbation",
        "id",
        "edit_preview",
        "note",
    ]
    assert set(ex["id"]) <= set(study.ids[held])
    assert any("8 essays held out" in n and "the other 32" in n for n in out.notes)


def test_counterfactual_fitted_system_is_used_as_it_is_under_every_representation():
    from sklearn_fairaes.report._study import System
    from sklearn_fairaes.report.analyses._counterfactual import ANALYSIS

    engine = _fitted_engine()
    study = _counterfactual_study(
        systems={"engine": System("engine", "fitted", {None: np.zeros(40)}, engine)}
    )
    out = ANALYSIS.run(study)  # _NeverRefit.fit raises if called
    got = out.tables["perturbation"]
    assert list(dict.fromkeys(got["representation"])) == ["tfidf", "bow"]
    assert set(got["system"]) == {"engine"}
    # no trained baseline, so no hold-out: all 40 essays (at most 200) are edited
    sample = np.sort(np.random.default_rng(0).choice(40, size=40, replace=False))
    texts = [study.essays[i] for i in sample]
    for rname in ("tfidf", "bow"):
        expected = perturbation_audit(
            {"engine": engine},
            texts,
            perturbations=list(EDITS),
            representation=study.spaces[rname].transformer,
            score_scale=study.human,
            random_state=0,
        ).rename(columns={"model": "system"})
        block = got[got["representation"] == rname].drop(columns="representation")
        pd.testing.assert_frame_equal(block.reset_index(drop=True), expected)
    # the score changes are the model's, the same under each representation;
    # the distances are each representation's own
    tfidf, bow = (got[got["representation"] == r].reset_index() for r in ("tfidf", "bow"))
    np.testing.assert_array_equal(tfidf["mean_change"], bow["mean_change"])
    assert not np.allclose(tfidf["mean_distance"], bow["mean_distance"])
    assert any("'engine' scored as it is (never refitted)" in n for n in out.notes)


def test_counterfactual_given_scores_cannot_be_rescored():
    from sklearn_fairaes.report._study import System
    from sklearn_fairaes.report.analyses._counterfactual import ANALYSIS, SCORES_ONLY

    given = {"v3": System("v3", "given", {None: np.zeros(40)})}
    study = _counterfactual_study(systems=given)
    assert ANALYSIS.absent(study) == SCORES_ONLY
    assert "--model-file" in SCORES_ONLY and "--models" in SCORES_ONLY
    with pytest.raises(ValueError, match="prompt 'all': scores only"):
        ANALYSIS.run(study)
    # beside a model that can re-score, the given scores are left out with a note
    given["engine"] = System("engine", "fitted", {None: np.zeros(40)}, _fitted_engine())
    out = ANALYSIS.run(_counterfactual_study(systems=given, perturbations=("typos",)))
    assert set(out.tables["perturbation"]["system"]) == {"engine"}
    assert any("'v3' is left out: scores only" in n for n in out.notes)
    none = _counterfactual_study(systems=given, perturbations=None)
    assert ANALYSIS.absent(none) == (
        "no perturbations were requested (perturbations= / --perturbations)"
    )


def test_counterfactual_short_answers_tolerance_and_reference_grader():
    from sklearn_fairaes.report._study import System
    from sklearn_fairaes.report.analyses._counterfactual import ANALYSIS
    from sklearn_fairaes.short_answers import ReferenceSimilarityGrader

    engine = _fitted_engine()
    grader = {"tfidf": ReferenceSimilarityGrader(TfidfEssayVectorizer())}
    systems = {
        "engine": System("engine", "fitted", {None: np.zeros(40)}, engine),
        "reference_similarity": System(
            "reference_similarity", "trained", {"tfidf": np.zeros(40)}, grader
        ),
    }
    study = _counterfactual_study(
        systems=systems, perturbations=("typos",), short_answer=True
    )
    out = ANALYSIS.run(study)
    got = out.tables["perturbation"]
    # grades in [0, 1]: a move of more than 0.05 is a change
    assert set(got["system"]) == {"engine"} and (got["tolerance"] == 0.05).all()
    assert any("'reference_similarity' is left out" in n for n in out.notes)
    only = {"reference_similarity": systems["reference_similarity"]}
    assert "scores only" in ANALYSIS.absent(_counterfactual_study(systems=only))


def test_audit_with_given_scores_and_a_fitted_model():
    """Through audit(): the fitted model is re-scored under each representation,
    the given scores are left out, and with scores only the section is absent."""
    import sklearn_fairaes as sf
    from sklearn_fairaes.report.analyses._counterfactual import SCORES_ONLY

    df = sf.load_demo_essays().iloc[:40].copy()
    df["v3"] = df["rater1"] * 2
    engine = _fitted_engine()
    common = dict(
        text_col="essay",
        score_col="score",
        systems=["v3"],
        cv=3,
        paraphrases="paraphrase",
        perturbations="typos",
        n_perturbation_essays=10,
    )
    res = sf.audit(
        df,
        models={"engine": engine},
        refit=False,
        representations=["tfidf", "bow"],
        **common,
    )
    table = res.tables["perturbation"]
    assert list(table.columns[:3]) == ["prompt", "representation", "system"]
    assert list(zip(table["representation"], table["system"])) == [
        ("tfidf", "engine"),
        ("bow", "engine"),
    ]
    assert (table["n_essays"] == 10).all()
    assert any("'v3' is left out" in n for n in res.meta["notes"])
    scores_only = sf.audit(df, representations=["tfidf"], **common)
    assert "perturbation" not in scores_only.tables
    assert scores_only.meta["absent_sections"]["counterfactual"] == SCORES_ONLY


def test_counterfactual_baseline_whose_representation_cannot_be_refitted():
    """A small prompt: the held-in essays leave the vocabulary empty. The
    baseline is not edited under that representation, and the report says why."""
    from sklearn_fairaes.report._study import PairSpace, Settings, Study, System
    from sklearn_fairaes.report.analyses._counterfactual import ANALYSIS

    essays = [f"The bus came late, said writer {k}." for k in range(5)] + ["Rain."]
    # "the", "bus", "came", "late", "said", "writer" are in 5 of the 6 essays,
    # so in at most 4 of the 4 held-in ones: min_df=5 keeps no word there
    rep = TfidfEssayVectorizer(min_df=5, lemmatize=False).fit(essays)
    X = rep.transform(essays)
    study = Study(
        prompt="p9",
        prompt_text=None,
        essays=essays,
        ids=np.arange(1, 7),
        rows=np.arange(1, 7),
        human=np.array([1.0, 2, 3, 4, 5, 1]),
        score_range=(1, 5),
        score_range_source="declared",
        settings=Settings(perturbations=("typos",)),
        systems={"ridge": System("ridge", "trained", {"tfidf": np.zeros(6)}, Ridge())},
        spaces={"tfidf": PairSpace("tfidf", rep, X, X, "cosine", np.zeros(0))},
    )
    out = ANALYSIS.run(study)
    assert out.tables["perturbation"].empty
    assert list(out.tables["perturbation"].columns) == [
        "representation",
        "system",
        *SUMMARY_COLUMNS,
    ]
    assert any(
        "tfidf could not be refitted on the 4 held-in essays" in n
        and "'ridge' is not edited under it" in n
        for n in out.notes
    )
