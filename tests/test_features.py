"""InterpretableFeatures: hand-worked values of every feature, options, errors, and the
sklearn contract.

The backends themselves (tokenizer, spell checker, POS taggers, Fisher test,
LanguageTool client) are tested in test_features_components.py; the
correlations on ASAP prompt 7 in test_features_asap.py.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lt_server import LoopbackLanguageTool
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.metrics.pairwise import cosine_similarity
from sklearn.pipeline import make_pipeline

from sklearn_fairaes.features import FEATURE_NAMES, InterpretableFeatures
from sklearn_fairaes.text import BowVectorizer, SentenceBertEncoder

# Hand-worked essays (values worked out in the comments).
# E1: words The the cat sat it was teh best cat -> 9 words of 3+3+3+3+2+3+3+4+3 = 27
# characters (mean 3.0); 37 characters in all; "." and "!" -> 2 punctuation marks;
# "teh" misspelled; 7 distinct words (the, cat, sat, it, was, teh, best).
E1 = "The the cat sat. it was teh best cat!"
# E3: words @PERSON1's(10) mom(3) didn't(6) wait(4) She(3) left(4) @NUM1(5) times(5)
# well-known(10) -> 9 words, 50 characters, mean 50/9; 63 characters in all;
# punctuation ' ' ... , - . = 1+1+3+1+1+1 = 8 (the "@" of placeholders not counted);
# no spelling error (placeholders skipped, well-known checked as well + known).
E3 = "@PERSON1's mom didn't wait... She left @NUM1 times, well-known."
E4 = "..."  # no words; 3 punctuation marks
LOCAL = [
    "answer_length",
    "word_count",
    "avg_word_length",
    "punctuation_count",
    "spelling_errors",
    "unique_words",
]
CAT_PROMPT = "Write about a cat that sat."


def upper_tags(tokens):
    """A deterministic 'POS tagger' for tests: each token's tag is the token upper-cased."""
    return [t.upper() for t in tokens]


def test_local_features_hand_worked():
    feats = InterpretableFeatures(features=LOCAL)
    X = feats.fit_transform([E1, "", E3, E4])
    assert feats.get_feature_names_out().tolist() == LOCAL
    expected = np.array(
        [
            [37, 9, 3.0, 2, 1, 7],
            [0, 0, 0.0, 0, 0, 0],
            [63, 9, 50 / 9, 8, 0, 9],
            [3, 0, 0.0, 3, 0, 0],
        ]
    )
    np.testing.assert_allclose(X, expected)
    assert X.dtype == np.float64


def test_prompt_overlap_hand_worked():
    # prompt words: write about a cat that sat; E1's words found there: cat sat cat
    feats = InterpretableFeatures(CAT_PROMPT, features=["prompt_overlap"])
    X = feats.fit_transform([E1, "", "Cats sat about."])
    # "Cats" is not "cat" (no lemmatization); "sat" and "about" are prompt words
    np.testing.assert_array_equal(X[:, 0], [3, 0, 2])
    assert feats.prompt_words_ == ["a", "about", "cat", "sat", "that", "write"]


def test_prompt_overlap_synonyms_hand_worked():
    # WordNet lemma names: "be" -> be, exist, live, equal, cost, follow, ...;
    # "patient" -> patient, affected_role, patient_role. Essay 1's words a, patient,
    # role, can, exist, and, live: "patient" is a prompt word (overlap 1) and
    # patient, exist, live are prompt words or synonyms (3); "role" alone is not.
    feats = InterpretableFeatures(
        "Be patient.", features=["prompt_overlap", "prompt_overlap_synonyms"]
    )
    X = feats.fit_transform(
        ["A patient role can exist and live.", "Be patient, be patient!"]
    )
    np.testing.assert_array_equal(X, [[1, 3], [4, 4]])
    assert {"be", "patient", "exist", "live", "affected role", "patient role"} <= set(
        feats.prompt_synonyms_
    )


def test_prompt_synonyms_match_wordnet():
    from nltk.corpus import wordnet

    from sklearn_fairaes.resources import ensure_wordnet

    ensure_wordnet()  # NLTK's own reader, the reference (the features read their own)
    feats = InterpretableFeatures(CAT_PROMPT, features=["prompt_overlap_synonyms"]).fit(
        ["x"]
    )
    reference = {"write", "about", "a", "cat", "that", "sat"}
    for word in list(reference):
        for synset in wordnet.synsets(word):
            reference |= {n.lower().replace("_", " ") for n in synset.lemma_names()}
    assert set(feats.prompt_synonyms_) == reference


def test_prompt_similarity_bow_equals_bow_vectorizer_cosine():
    essays = [E1, "A cat that sat on a mat wrote about cats.", "Nothing alike here."]
    feats = InterpretableFeatures(CAT_PROMPT, features=["prompt_similarity_bow"])
    got = feats.fit_transform(essays)[:, 0]
    for essay, value in zip(essays, got):
        bow = BowVectorizer(min_df=1).fit([essay, CAT_PROMPT])
        V = bow.transform([essay, CAT_PROMPT])
        assert value == pytest.approx(cosine_similarity(V)[0, 1], abs=1e-12)
    assert got[2] == 0.0  # no term in common
    # independent of the other essays: alone it gets the same value
    alone = InterpretableFeatures(CAT_PROMPT, features=["prompt_similarity_bow"])
    assert alone.fit_transform([essays[1]])[0, 0] == pytest.approx(got[1], abs=1e-12)


def test_prompt_similarity_bow_under_global_pandas_output():
    # the feature's own BowVectorizer must not follow a global pandas output
    # setting (it once returned a DataFrame there and crashed on .toarray())
    from sklearn import config_context

    essays = [E1, "A cat that sat on a mat wrote about cats.", "Nothing alike here."]
    feats = InterpretableFeatures(CAT_PROMPT, features=["prompt_similarity_bow"])
    expected = feats.fit_transform(essays)[:, 0]
    with config_context(transform_output="pandas"):
        got = InterpretableFeatures(
            CAT_PROMPT, features=["prompt_similarity_bow"]
        ).fit_transform(essays)
    assert list(got.columns) == ["prompt_similarity_bow"]
    np.testing.assert_allclose(got["prompt_similarity_bow"].to_numpy(), expected)


def test_empty_and_wordless_essays_give_zero_similarities():
    feats = InterpretableFeatures(
        CAT_PROMPT, features=["prompt_similarity_bow", "prompt_overlap_synonyms"]
    )
    X = feats.fit_transform(["", "  ", "...", "1 2 3"])
    np.testing.assert_array_equal(X, np.zeros((4, 2)))


def test_prompt_similarity_sbert_is_cosine_of_encoder(minilm):
    essays = ["I waited for the bus patiently.", "Photosynthesis makes glucose.", ""]
    feats = InterpretableFeatures(
        CAT_PROMPT, features=["prompt_similarity_sbert"], sbert_model=minilm
    )
    got = feats.fit_transform(essays)[:, 0]
    E = (
        SentenceBertEncoder(minilm, cache=None)
        .fit([""])
        .transform(essays[:2] + [CAT_PROMPT])
    )
    ref = cosine_similarity(E[:2], E[2:])[:, 0]
    np.testing.assert_allclose(got[:2], ref, atol=1e-5)
    assert got[2] == 0.0  # an empty essay has no similarity, not the embedding of ""
    assert feats.prompt_embedding_.shape == (384,)


def test_prompt_similarity_sbert_uses_the_given_cache_folder(minilm, tmp_path):
    essays = ["I waited for the bus patiently.", "Photosynthesis makes glucose."]
    folder = tmp_path / "emb"
    feats = InterpretableFeatures(
        CAT_PROMPT, features=["prompt_similarity_sbert"], sbert_model=minilm, cache=folder
    )
    assert feats.get_params()["cache"] == folder  # stored untouched
    got = feats.fit_transform(essays)[:, 0]
    assert feats.sbert_encoder_.cache == folder
    assert folder.is_dir() and any(folder.rglob("*"))  # the vectors went to disk
    uncached = InterpretableFeatures(
        CAT_PROMPT, features=["prompt_similarity_sbert"], sbert_model=minilm, cache=None
    ).fit_transform(essays)[:, 0]
    np.testing.assert_allclose(got, uncached, atol=1e-6)


def test_good_pos_ngrams_hand_worked():
    # High essays (score 3) all contain tags A B C, low ones (score 1) C D E. The
    # n-grams "A B", "B C", "A B C" are in 5/5 high and 0/5 low essays: one-sided
    # Fisher p = 1 / C(10, 5) = 1/252 < 0.05 -> good. The low ones have p = 1.
    essays = ["a b c"] * 5 + ["c d e"] * 5
    y = [3] * 5 + [1] * 5
    feats = InterpretableFeatures(features=["good_pos_ngrams"], pos_tagger=upper_tags)
    X = feats.fit_transform(essays, y)
    assert feats.good_pos_ngrams_ == ["A B", "A B C", "B C"]
    assert feats.pos_ngram_pvalues_["A B"] == pytest.approx(1 / 252)
    assert feats.pos_ngram_pvalues_["C D"] == pytest.approx(1.0)
    assert feats.pos_tagger_ == "callable:upper_tags"
    np.testing.assert_allclose(X[:, 0], [1.0] * 5 + [0.0] * 5)
    # "a b c d": AB BC CD ABC BCD ABCD -> 3 of 6 good; one token has no n-gram
    np.testing.assert_allclose(feats.transform(["a b c d", "a", ""])[:, 0], [0.5, 0, 0])


def test_good_pos_ngrams_from_reference():
    ref = (["a b c"] * 5 + ["c d e"] * 5, [3] * 5 + [1] * 5)
    feats = InterpretableFeatures(
        features=["good_pos_ngrams"], pos_tagger=upper_tags, reference=ref
    )
    X = feats.fit(["c d e", "d e"]).transform(["a b c d"])  # no y needed
    assert feats.good_pos_ngrams_ == ["A B", "A B C", "B C"]
    np.testing.assert_allclose(X[:, 0], [0.5])
    # reference wins over y
    other = clone(feats).fit(["c d e", "a b c"], [1, 9])
    assert other.good_pos_ngrams_ == feats.good_pos_ngrams_


@pytest.mark.network
def test_language_errors_hand_worked():
    # loopback rules: "the the" (repeat) + lower-case start "the" + "it" after ". ";
    # "teh" is a spelling match and is not counted -> 3. Placeholders become
    # different names, so "@CAPS1 @CAPS2" is no repetition but "@CAPS1 @CAPS1" is.
    essays = [
        "the the cat. it sat on teh mat.",
        "",
        "Fine text here.",
        "@CAPS1 @CAPS2 went home.",
        "@CAPS1 @CAPS1 went home.",
    ]
    with LoopbackLanguageTool() as lt:
        feats = InterpretableFeatures(features=["language_errors"], grammar=lt.url)
        X = feats.fit_transform(essays)
        sent = lt.check_requests()
    np.testing.assert_array_equal(X[:, 0], [3, 0, 0, 0, 1])
    assert feats.grammar_ == lt.url
    assert len(sent) == 4  # the empty essay is not sent
    assert all(
        r["language"] == "en-US" and r["disabledCategories"] == "TYPOS" for r in sent
    )
    assert not any("@" in r["text"] for r in sent)


@pytest.mark.network
def test_all_twelve_in_order_with_grammar(minilm):
    essays = ["The cat sat. it sat again!", "A dog ran to teh park.", "The the end."]
    y = [3, 1, 2]
    with LoopbackLanguageTool() as lt:
        feats = InterpretableFeatures(CAT_PROMPT, grammar=lt.url, sbert_model=minilm)
        X = feats.fit_transform(essays, y)
    assert feats.get_feature_names_out().tolist() == list(FEATURE_NAMES)
    assert X.shape == (3, 12) and np.isfinite(X).all()
    np.testing.assert_array_equal(X[:, 11], [1, 0, 1])


def test_grammar_none_leaves_language_errors_out():
    feats = InterpretableFeatures(CAT_PROMPT, pos_tagger=upper_tags, sbert_model="unused")
    names = feats._selected_features()
    assert "language_errors" not in names and len(names) == 11
    no_spell = clone(feats).set_params(spelling=None)._selected_features()
    assert "spelling_errors" not in no_spell


@pytest.mark.parametrize(
    "normalize, names, expected",
    [
        ("per_word", ["word_count", "spelling_errors_per_word", "unique_words_per_word"],
         [[9, 1 / 9, 7 / 9], [0, 0, 0]]),
        ("per_char", ["word_count", "spelling_errors_per_char", "unique_words_per_char"],
         [[9, 1 / 37, 7 / 37], [0, 0, 0]]),
        (["unique_words"], ["word_count", "spelling_errors", "unique_words_per_word"],
         [[9, 1, 7 / 9], [0, 0, 0]]),
        ({"spelling_errors": "per_word", "unique_words": "per_char"},
         ["word_count", "spelling_errors_per_word", "unique_words_per_char"],
         [[9, 1 / 9, 7 / 37], [0, 0, 0]]),
    ],
)  # fmt: skip
def test_normalize(normalize, names, expected):
    feats = InterpretableFeatures(
        features=["word_count", "spelling_errors", "unique_words"], normalize=normalize
    )
    X = feats.fit_transform([E1, ""])
    assert feats.get_feature_names_out().tolist() == names
    np.testing.assert_allclose(X, expected)


@pytest.mark.network
def test_paper_ratios_language_errors_per_char():
    with LoopbackLanguageTool() as lt:
        feats = InterpretableFeatures(
            features=["spelling_errors", "language_errors"],
            grammar=lt.url,
            normalize={"spelling_errors": "per_word", "language_errors": "per_char"},
        )
        X = feats.fit_transform(["the the cat. it sat on teh mat."])
    # 8 words, 31 characters; 1 spelling error; 3 language errors
    np.testing.assert_allclose(X, [[1 / 8, 3 / 31]])


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "params, match",
    [
        ({"features": "all"}, r"prompt is None, but prompt_overlap, prompt_overlap_synonyms"),
        ({"features": "some"}, r"features must be 'auto', 'all' or a list of names"),
        ({"features": "word_count"}, r"pass a list: \['word_count'\]"),
        ({"features": ["word_count", "wordcount"]}, r"unknown feature\(s\) 'wordcount'"),
        ({"features": ["word_count", "word_count"]}, r"lists word_count more than once"),
        ({"features": []}, r"features is empty"),
        ({"features": ["language_errors"]}, r"language_errors but grammar=None"),
        ({"features": ["spelling_errors"], "spelling": None}, r"spelling=None"),
        ({"features": ["word_count"], "normalize": "per_essay"}, r"normalize must be"),
        ({"features": ["word_count"], "normalize": ["word_count"]}, r"not a count feature"),
        ({"features": ["word_count"], "normalize": ["unique_words"]},
         r"not among the output features"),
        ({"features": ["unique_words"], "normalize": {"unique_words": "per_line"}},
         r"use 'per_char' or 'per_word'"),
        ({"features": ["word_count"], "n_jobs": 0}, r"'n_jobs' parameter of InterpretableFeatures must be None, an int in the range \[1, inf\) or"),
        ({"features": ["word_count"], "progress": "yes"}, r"'progress' parameter of InterpretableFeatures must be True or False or a str among \['auto'\]"),
        ({"features": ["word_count"], "spelling": 3}, None),
    ],
)  # fmt: skip
def test_bad_params_raise_in_fit(params, match):
    feats = InterpretableFeatures(**params)  # __init__ never validates
    if match is None:  # spelling only matters when spelling_errors is selected
        feats.fit(["x"])
        return
    with pytest.raises(ValueError, match=match):
        feats.fit(["An essay."])


def test_bad_spelling_checker_type():
    with pytest.raises(TypeError, match=r"spelling must be 'pyspellchecker', an object"):
        InterpretableFeatures(features=["spelling_errors"], spelling=3).fit(["x"])
    with pytest.raises(ValueError, match=r"got 'aspell'"):
        InterpretableFeatures(features=["spelling_errors"], spelling="aspell").fit(["x"])


def test_prompt_errors():
    with pytest.raises(TypeError, match=r"prompt must be a str"):
        InterpretableFeatures(["a prompt"], features=["prompt_overlap"]).fit(["x"])
    with pytest.raises(ValueError, match=r"has no words"):
        InterpretableFeatures("?!", features=["prompt_overlap"]).fit(["x"])


def test_good_pos_ngrams_needs_scores():
    feats = InterpretableFeatures(features=["good_pos_ngrams"], pos_tagger=upper_tags)
    with pytest.raises(ValueError, match=r"call fit\(X, y\) with the essays' scores"):
        feats.fit(["a b", "c d"])
    with pytest.raises(ValueError, match=r"all 3 scores are equal"):
        feats.fit(["a b", "c d", "e f"], [2, 2, 2])
    with pytest.raises(ValueError, match=r"y has 2 samples but 3 were expected"):
        feats.fit(["a b", "c d", "e f"], [1, 2])
    with pytest.raises(TypeError, match=r"reference must be a pair"):
        clone(feats).set_params(reference=["a b"]).fit(["x"])
    with pytest.raises(ValueError, match=r"reference\[1\] has 2 samples but 3 were"):
        clone(feats).set_params(reference=(["a", "b", "c"], [1, 2])).fit(["x"])


def test_non_string_essays_raise_like_representations():
    feats = InterpretableFeatures(features=["word_count"])
    with pytest.raises(TypeError, match=r"essay at position 1 of X is a int"):
        feats.fit(["fine", 3])
    with pytest.raises(ValueError, match=r"essay at position 0 of X is None"):
        feats.fit([None])
    feats.fit(["ok"])
    with pytest.raises(TypeError, match=r"got a single str"):
        feats.transform("one essay")


def test_defaults_fit_without_a_prompt():
    # sklearn's convention: the default estimator works; features="auto" is
    # what the other parameters allow, so without a prompt no prompt feature
    essays = [E1, E3, "The cat waited patiently for an hour.", "I waited."]
    feats = InterpretableFeatures(pos_tagger=upper_tags).fit(essays, [1.0, 2.0, 3.0, 4.0])
    names = [f for f in FEATURE_NAMES if f not in ("language_errors",)]
    names = [f for f in names if not f.startswith("prompt_")]
    assert feats.get_feature_names_out().tolist() == names
    assert feats.transform(essays).shape == (4, 7)
    # with a prompt, "auto" is "all" (what the audit asks for is unchanged)
    both = [
        InterpretableFeatures(CAT_PROMPT, features=f)._selected_features()
        for f in ("auto", "all")
    ]
    assert both[0] == both[1] == [f for f in FEATURE_NAMES if f != "language_errors"]


def test_not_fitted():
    with pytest.raises(NotFittedError, match=r"not fitted yet"):
        InterpretableFeatures(features=["word_count"]).transform(["x"])
    with pytest.raises(NotFittedError, match=r"not fitted yet"):
        InterpretableFeatures().get_feature_names_out()


# ---------------------------------------------------------- sklearn contract
def _fitted():
    essays = ["a b c"] * 3 + ["c d e"] * 3
    y = [3, 3, 3, 1, 1, 1]
    feats = InterpretableFeatures(
        CAT_PROMPT,
        features=[
            "word_count",
            "good_pos_ngrams",
            "prompt_overlap",
            "prompt_similarity_bow",
        ],
        pos_tagger=upper_tags,
    )
    return feats.fit(essays, y)


def test_params_untouched_and_clone():
    spec = {"spelling_errors": "per_word"}
    feats = InterpretableFeatures(CAT_PROMPT, normalize=spec, n_jobs=1)
    assert feats.get_params()["normalize"] is spec
    twin = clone(feats)
    assert twin.get_params()["normalize"] == spec
    assert not hasattr(twin, "feature_names_out_")
    fitted = _fitted()
    fresh = clone(fitted)
    assert not hasattr(fresh, "good_pos_ngrams_")


def test_pickle_roundtrip_gives_same_output():
    feats = _fitted()
    essays = [E1, "a b c d", ""]
    before = feats.transform(essays)
    again = pickle.loads(pickle.dumps(feats))
    np.testing.assert_array_equal(again.transform(essays), before)
    assert again.good_pos_ngrams_ == feats.good_pos_ngrams_


def test_fit_transform_equals_fit_then_transform_and_is_deterministic():
    essays = ["a b c", "a b d", "c d e", "c e e", "a b c d e"]
    y = [3, 3, 1, 1, 2]
    feats = InterpretableFeatures(
        CAT_PROMPT,
        features=["word_count", "good_pos_ngrams", "prompt_overlap_synonyms"],
        pos_tagger=upper_tags,
    )
    a = feats.fit_transform(essays, y)
    b = clone(feats).fit(essays, y).transform(essays)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(feats.transform(essays), a)


def test_set_output_pandas_keeps_index_and_names():
    essays = pd.Series([E1, "", E3], index=[10, 20, 30])
    feats = InterpretableFeatures(features=LOCAL).set_output(transform="pandas")
    out = feats.fit_transform(essays)
    assert isinstance(out, pd.DataFrame)
    assert out.columns.tolist() == LOCAL
    assert out.index.tolist() == [10, 20, 30]
    assert out.loc[20].sum() == 0
    assert essays.tolist() == [E1, "", E3]  # input untouched


def test_in_a_pipeline_with_scores():
    essays = ["a b c"] * 4 + ["c d e"] * 4
    y = np.array([3, 3, 3, 3, 1, 1, 1, 1], dtype=float)
    pipe = make_pipeline(
        InterpretableFeatures(
            features=["word_count", "good_pos_ngrams"], pos_tagger=upper_tags
        ),
        Ridge(alpha=1e-6),
    )
    pred = pipe.fit(essays, y).predict(["a b c", "c d e"])
    np.testing.assert_allclose(pred, [3, 1], atol=1e-3)


def test_empty_input():
    feats = InterpretableFeatures(features=LOCAL).fit(["x"])
    assert feats.transform([]).shape == (0, 6)


def test_progress_bar_when_asked(capsys):
    InterpretableFeatures(features=["word_count"], progress=True).fit_transform(["a"] * 70)
    assert "features" in capsys.readouterr().err
    InterpretableFeatures(features=["word_count"], progress=False).fit_transform(["a"] * 70)
    assert capsys.readouterr().err == ""


def test_custom_spell_checkers():
    class OnlyCats:
        def unknown(self, words):
            return [w for w in words if w.lower() == "cat"]

    def no_the(words):
        return {"the"}

    feats = InterpretableFeatures(features=["spelling_errors"], spelling=OnlyCats())
    np.testing.assert_array_equal(feats.fit_transform([E1])[:, 0], [2])
    assert feats.spelling_ == "custom:OnlyCats"
    feats = InterpretableFeatures(features=["spelling_errors"], spelling=no_the)
    np.testing.assert_array_equal(feats.fit_transform([E1])[:, 0], [2])  # The, the
    assert feats.spelling_ == "callable:no_the"


# ------------------------------------------------------------- invariants
_WORDS = st.sampled_from(
    ["cat", "sat", "a", "teh", "The", "write", "didn't", "@CAPS1", "@NUM2", "well-known",
     "5pm", "about", "Cats", "patient", "...", ",", "!", "'", "(", ")", "\n", "-"]
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(_WORDS, max_size=25).map(" ".join), min_size=1, max_size=4))
def test_invariants(essays):
    feats = InterpretableFeatures(
        CAT_PROMPT,
        features=[f for f in FEATURE_NAMES if f not in ("good_pos_ngrams",
                  "prompt_similarity_sbert", "language_errors")],
    )  # fmt: skip
    X = pd.DataFrame(feats.fit_transform(essays), columns=feats.get_feature_names_out())
    assert np.isfinite(X.to_numpy()).all() and (X.to_numpy() >= 0).all()
    assert (X.word_count >= X.unique_words).all()
    assert (X.spelling_errors <= X.word_count).all()
    assert (X.prompt_overlap <= X.prompt_overlap_synonyms).all()
    assert (X.prompt_overlap_synonyms <= X.word_count).all()
    assert (X.punctuation_count <= X.answer_length).all()
    assert (X.prompt_similarity_bow <= 1 + 1e-12).all()
    np.testing.assert_array_equal(X.answer_length, [len(e) for e in essays])
    ratios = InterpretableFeatures(
        features=["word_count", "unique_words"], normalize="per_word"
    )
    R = ratios.fit_transform(essays)
    assert ((R[:, 1] > 0) <= (R[:, 0] > 0)).all() and (R[:, 1] <= 1).all()
