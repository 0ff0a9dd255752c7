"""The backends behind InterpretableFeatures: tokenizer, spelling, POS taggers, the
Fisher test of the good POS n-grams, and the LanguageTool client (through the
loopback server of tests/lt_server.py)."""

from __future__ import annotations

import itertools
import os
import zipfile

import numpy as np
import pytest
from conftest import require_module
from hypothesis import given, settings
from hypothesis import strategies as st
from lt_server import LoopbackLanguageTool, expected_matches
from scipy.stats import fisher_exact

from sklearn_fairaes.features import InterpretableFeatures
from sklearn_fairaes.features._grammar import (
    count_language_errors,
    is_spelling_match,
    resolve_grammar,
)
from sklearn_fairaes.features._pos import (
    learn_good_ngrams,
    pos_ngrams,
    resolve_pos_tagger,
    tag_essays,
)
from sklearn_fairaes.features._spelling import count_spelling_errors
from sklearn_fairaes.features._tokenize import (
    PLACEHOLDER_PATTERN,
    is_placeholder,
    tokenize_essay,
)
from sklearn_fairaes.resources import ResourceNotFoundError

ASAP_PLACEHOLDERS = [
    "@NUM1", "@PERSON2", "@CAPS", "@CAPS12", "@LOCATION1", "@ORGANIZATION1", "@DATE1",
    "@TIME1", "@MONEY1", "@PERCENT1", "@MONTH1", "@CITY1", "@STATE1", "@DR1",
]  # fmt: skip


# ----------------------------------------------------------------- tokenizer
@pytest.mark.parametrize("holder", ASAP_PLACEHOLDERS)
def test_placeholders_are_single_tokens_and_words(holder):
    text = f"{holder} met ({holder}), {holder}'s dog.{holder} left;{holder}{holder}"
    t = tokenize_essay(text)
    assert t.tokens.count(holder) == 6
    assert "@" not in [tok for tok in t.tokens]
    assert t.words == [
        holder,
        "met",
        holder,
        f"{holder}'s",
        "dog",
        holder,
        "left",
        holder,
        holder,
    ]


def test_treebank_tokens_words_and_sentences():
    t = tokenize_essay('I didn\'t wait.Then "she" left... Dr. Smith came!\nNew line')
    assert t.tokens == [
        "I", "did", "n't", "wait", ".", "Then", '"', "she", '"', "left", "...", "Dr.",
        "Smith", "came", "!", "New", "line",
    ]  # fmt: skip
    assert t.words == ["I", "didn't", "wait", "Then", "she", "left", "Dr.", "Smith", "came",
                       "New", "line"]  # fmt: skip
    assert [t.tokens[a:b][-1] for a, b in t.sentences] == [".", "...", "!", "line"]


def test_curly_apostrophes_and_mis_decoded_quotes():
    assert tokenize_essay("I didn\u2019t").words == ["I", "didn't"]
    assert tokenize_essay("I didn\u00e2\u20ac\u2122t").words == ["I", "didn't"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ASAP_PLACEHOLDERS + ["word", "x", ".", ",", " ", "'s", "\n", "...", "-"]
        ),
        max_size=30,
    ).map("".join)
)
def test_tokenizer_properties(text):
    t = tokenize_essay(text)
    assert [tok for tok in t.tokens if is_placeholder(tok)] == PLACEHOLDER_PATTERN.findall(
        text
    )
    assert all(tok.strip() == tok and tok for tok in t.tokens)
    # sentences cover the tokens in order, without gaps
    flat = list(itertools.chain.from_iterable(range(a, b) for a, b in t.sentences))
    assert flat == list(range(len(t.tokens)))
    assert all(any(ch.isalnum() for ch in w) for w in t.words)
    assert len(t.words) <= len(t.tokens)


# ------------------------------------------------------------------ spelling
def test_spelling_against_per_word_reference():
    from spellchecker import SpellChecker

    checker = SpellChecker()
    essays = [
        ["Teh", "cat", "teh", "recieve", "well-knwon", "didn't", "dont"],
        ["@CAPS1's", "@NUM1", "5pm", "...", "ok"],
        [],
    ]
    got = count_spelling_errors(essays, "pyspellchecker")
    ref = []
    for words in essays:
        n = 0
        for w in words:
            if "@" in w or any(c.isdigit() for c in w):
                continue
            parts = [p for p in w.replace("-", " ").split() if any(c.isalpha() for c in p)]
            n += any(checker.unknown([p]) for p in parts)
        ref.append(n)
    assert got == ref == [5, 0, 0]


def test_spelling_checker_must_return_a_collection():
    with pytest.raises(TypeError, match=r"must return a collection of the unknown words"):
        count_spelling_errors([["cat"]], lambda words: 3)


# ------------------------------------------------------------------ POS
def _tiny_nltk_tagger(folder):
    """Train a small NLTK perceptron tagger and save it where NLTK looks for its data."""
    import nltk
    from nltk.tag import PerceptronTagger

    tagged = [
        [("I", "PRP"), ("waited", "VBD"), (".", ".")],
        [("The", "DT"), ("dog", "NN"), ("ran", "VBD"), ("home", "NN"), (".", ".")],
        [("Alex", "NNP"), ("was", "VBD"), ("patient", "JJ"), ("!", ".")],
    ] * 10
    tagger = PerceptronTagger(load=False)
    tagger.train(tagged, nr_iter=5)
    assert str(folder) in nltk.data.path
    tagger.save_to_json(
        lang="eng", loc=str(folder / "taggers" / "averaged_perceptron_tagger_eng")
    )


def test_auto_prefers_nltk_when_its_data_exists(tmp_path, monkeypatch):
    import nltk

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)] + list(nltk.data.path))
    _tiny_nltk_tagger(tmp_path)
    assert resolve_pos_tagger("auto") == "nltk"
    essays = [
        tokenize_essay("I waited. The dog ran home."),
        tokenize_essay("@PERSON1 was patient!"),
    ]
    tags = tag_essays(essays, "nltk")
    assert tags[0] == ["PRP", "VBD", ".", "DT", "NN", "VBD", "NN", "."]
    assert tags[1] == ["NNP", "VBD", "JJ", "."]  # the placeholder's tag is fixed
    feats = InterpretableFeatures(features=["good_pos_ngrams"])
    feats.fit(["I waited.", "The dog ran home.", "I ran."], [3, 1, 2])
    assert feats.pos_tagger_ == "nltk"


def test_spacy_backend_penn_treebank_tags():
    require_module("spacy", "pos")
    label = resolve_pos_tagger("spacy")
    assert label.startswith("spacy:en_core_web_sm")
    tags = tag_essays([tokenize_essay("I waited for @NUM1 minutes. @PERSON1 ran!"),
                       tokenize_essay("")], label)  # fmt: skip
    assert tags[0] == ["PRP", "VBD", "IN", "CD", "NNS", ".", "NNP", "VBD", "."]
    assert tags[1] == []
    again = tag_essays([tokenize_essay("I waited for @NUM1 minutes. @PERSON1 ran!")], label)
    assert again[0] == tags[0]  # deterministic


def test_pos_backend_errors(monkeypatch):
    from sklearn_fairaes.features import _pos

    monkeypatch.setattr(_pos, "_nltk_tagger_path", lambda: None)
    with pytest.raises(ResourceNotFoundError, match=r"pos_tagger='nltk' needs NLTK's"):
        resolve_pos_tagger("nltk")
    with pytest.raises(
        ResourceNotFoundError, match=r"spaCy pipeline 'no_such_model' .* is not installed"
    ):
        resolve_pos_tagger("spacy:no_such_model")
    with pytest.raises(ValueError, match=r"pos_tagger must be one of 'auto'"):
        resolve_pos_tagger("treetagger")
    monkeypatch.setattr(_pos, "_first_spacy_model", lambda: None)
    with pytest.raises(ResourceNotFoundError, match=r"no POS tagger is available"):
        resolve_pos_tagger("auto")
    with pytest.raises(ValueError, match=r"returned 1 tags for 2 tokens"):
        tag_essays([tokenize_essay("a b")], lambda toks: ["X"])


def test_pos_ngrams_are_2_to_4_grams():
    tags = ["A", "B", "C", "D", "E"]
    grams = pos_ngrams(tags)
    assert len(grams) == 4 + 3 + 2
    assert grams[:4] == ["A B", "B C", "C D", "D E"] and grams[-1] == "B C D E"


def test_fisher_p_values_match_scipy(rng):
    n = 40
    y = rng.integers(0, 5, size=n).astype(float)
    tags = [list(rng.choice(["A", "B", "C"], size=rng.integers(0, 7))) for _ in range(n)]
    good, pvalues = learn_good_ngrams(tags, y)
    high = y >= np.median(y)
    assert 0 < high.sum() < n
    seen = {g for t in tags for g in pos_ngrams(t)}
    assert set(pvalues) == seen
    for gram in sorted(seen):
        present = np.array([gram in set(pos_ngrams(t)) for t in tags])
        table = [
            [int((present & high).sum()), int((~present & high).sum())],
            [int((present & ~high).sum()), int((~present & ~high).sum())],
        ]
        ref = fisher_exact(table, alternative="greater").pvalue
        assert pvalues[gram] == pytest.approx(ref, rel=1e-9, abs=1e-12)
        assert (gram in good) == (ref < 0.05)


def test_median_split_with_ties_at_the_bottom():
    # median 1: y >= 1 is everyone, so high becomes y > 1
    tags = [["A", "B"]] * 4 + [["C", "D"]] * 2
    good, pvalues = learn_good_ngrams(tags, np.array([1, 1, 1, 1, 2, 2], dtype=float))
    assert good == [] and pvalues["C D"] == pytest.approx(1 / 15)


# ------------------------------------------------------------------ grammar
@pytest.fixture(scope="module")
def lt():
    with LoopbackLanguageTool() as server:
        yield server


def test_loopback_rules_hand_worked():
    matches = expected_matches("the the the cat. it is teh end")
    assert [m["rule"]["id"] for m in matches] == [
        "UPPERCASE_SENTENCE_START",
        "ENGLISH_WORD_REPEAT_RULE",
        "ENGLISH_WORD_REPEAT_RULE",
        "UPPERCASE_SENTENCE_START",
        "MORFOLOGIK_RULE_EN_US",
    ]


@pytest.mark.network
def test_client_counts_non_spelling_matches(lt):
    label = resolve_grammar(lt.url)
    texts = ["the the the cat. it is teh end", "All good.", "", "wierd recieve teh"]
    assert count_language_errors(texts, label) == [4, 0, 0, 1]
    assert count_language_errors(texts * 5, label, n_jobs=3) == [4, 0, 0, 1] * 5


@pytest.mark.network
def test_client_reads_real_match_objects(lt):
    import language_tool_python

    tool = language_tool_python.LanguageTool("en-US", remote_server=lt.url + "/")
    matches = tool.check("the the cat sat on teh mat")
    assert [is_spelling_match(m) for m in matches] == [False, False, True]
    assert is_spelling_match(
        {"rule": {"id": "HUNSPELL_RULE", "issueType": "other", "category": {"id": "MISC"}}}
    )


@pytest.mark.network
@pytest.mark.parametrize("suffix", ["", "/", "/v2", "/v2/"])
def test_url_forms(lt, suffix):
    assert resolve_grammar(lt.url + suffix) == lt.url
    assert resolve_grammar(lt.url.replace("http://", "") + suffix) == lt.url


@pytest.mark.network
def test_unreachable_server_fails_fast_with_how_to():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectionError, match=r"no LanguageTool server answered.*grammar="):
        InterpretableFeatures(
            features=["language_errors"], grammar=f"http://127.0.0.1:{port}"
        ).fit(["x"])


@pytest.mark.network
def test_server_that_goes_away():
    server = LoopbackLanguageTool().start()
    feats = InterpretableFeatures(features=["language_errors"], grammar=server.url).fit(
        ["x"]
    )
    assert feats.transform(["the the"]).tolist() == [[2.0]]
    server.stop()
    with pytest.raises(ConnectionError, match=r"failed on the essay at position 1"):
        feats.transform(["", "some text"])


def test_local_languagetool_missing_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("LTP_PATH", str(tmp_path))
    feats = InterpretableFeatures(features=["language_errors"], grammar="local")
    with pytest.raises(ResourceNotFoundError, match=r"not downloaded automatically"):
        feats.fit(["x"])
    # a folder whose jar has no LanguageTool server is not accepted either
    broken = tmp_path / "LanguageTool-6.8"
    broken.mkdir()
    with zipfile.ZipFile(broken / "languagetool-server.jar", "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    with pytest.raises(
        ResourceNotFoundError, match=r"found LanguageTool-6.8, but none holds"
    ):
        feats.fit(["x"])
    assert sorted(os.listdir(tmp_path)) == ["LanguageTool-6.8"]  # nothing downloaded


def test_grammar_parameter_type():
    with pytest.raises(TypeError, match=r"grammar must be None, 'local' or a LanguageTool"):
        InterpretableFeatures(features=["language_errors"], grammar=8081).fit(["x"])
