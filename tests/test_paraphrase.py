"""WordNetParaphraser: determinism, rate, what must never change, WordNet synonymy,
nearness under Sentence-BERT on real essays, errors and the sklearn contract."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pandas as pd
import pytest
from conftest import missing_resource
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_fairaes.features._tokenize import PLACEHOLDER_PATTERN, placeholder_stand_in
from sklearn_fairaes.paraphrase import EXTRA_STOP_WORDS, WordEdit, WordNetParaphraser
from sklearn_fairaes.paraphrase._wordnet import _inflect
from sklearn_fairaes.resources import ResourceNotFoundError

LONG = (
    "Last summer my little brother and I waited for the bus to the city. The driver "
    "said it would arrive soon, but we stood in the rain for an hour. My brother "
    "started crying because his shoes were wet and he wanted to go home. I asked him "
    "to be patient and told him a story about our grandfather, who worked on a farm "
    "when he was a child. The farmers planted corn every spring and waited months "
    "before they could sell it in the market. Finally the bus came, and the driver "
    "apologized quietly. We found two empty seats near the window and watched the "
    "houses, the trees and the cars pass by. When we arrived, our mother was standing "
    "at the door with warm towels and a big smile. She thanked me for helping my "
    "brother, and I learned that waiting is easier when you help someone else. Later "
    "that evening we cooked dinner together, cleaned the kitchen and played a long "
    "game of cards. My father called from work and promised to buy new shoes for both "
    "of us. The next morning the sun was shining, the streets were dry, and my "
    "brother happily walked to school with his friends."
)
WORD = re.compile(r"[A-Za-z]+")


@pytest.fixture(scope="module")
def wn():
    try:
        from sklearn_fairaes.resources import ensure_wordnet

        ensure_wordnet()
    except ResourceNotFoundError as exc:
        missing_resource(f"WordNet ({exc})")
    from nltk.corpus import wordnet

    return wordnet


@pytest.fixture(scope="module")
def para(wn):
    """Fitted with the default POS backend; skips when no tagger is installed."""
    try:
        return WordNetParaphraser(random_state=0).fit([""])
    except ResourceNotFoundError as exc:
        missing_resource(f"POS tagger ({exc})")


def _with(para, **params):
    return clone(para).set_params(**params).fit([""])


def _rebuild(text, edits):
    """Naive reference: splice each replacement in, right to left."""
    for start, original, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[start + len(original) :]
    return text


def _shares_synset(wn, a, b):
    return bool(set(wn.synsets(a.lower())) & set(wn.synsets(b.lower())))


def _check_edits(text, out, edits):
    """Only whole letter-only words change; everything else is the original text."""
    assert out == _rebuild(text, edits)
    placeholders = [m.span() for m in PLACEHOLDER_PATTERN.finditer(text)]
    prev_end = -1
    for start, original, replacement in edits:
        end = start + len(original)
        assert start > prev_end
        prev_end = end
        assert text[start:end] == original
        assert WORD.fullmatch(original)
        assert start == 0 or not text[start - 1].isalnum()
        assert end == len(text) or not text[end].isalnum()
        assert not any(a < end and start < b for a, b in placeholders)
        assert re.fullmatch(r"[A-Za-z]+(?:[-'][A-Za-z]+)*", replacement)
        if original.islower():
            assert replacement.islower()
        elif original.isupper():
            assert replacement.isupper()
        else:
            assert replacement[0].isupper() and replacement[1:] == replacement[1:].lower()


# ----------------------------------------------------------- determinism
def test_same_seed_same_output_and_different_seed_differs(para):
    first = para.transform([LONG])
    assert para.transform([LONG]) == first
    assert _with(para, random_state=0).transform([LONG]) == first
    assert first[0] != LONG
    assert _with(para, random_state=1).transform([LONG]) != first


def test_independent_of_batch_and_position(para):
    others = ["The old car was repaired quickly.", "", "My sister asked the doctor."]
    alone = para.transform([LONG])[0]
    batch = para.transform([others[0], LONG, others[1], others[2], LONG])
    assert batch[1] == alone and batch[4] == alone
    assert batch[0] == para.transform([others[0]])[0]


def test_random_state_none_draws_a_new_seed_per_call(para):
    free = _with(para, random_state=None)
    outs = {free.transform([LONG])[0] for _ in range(3)}
    assert len(outs) > 1


# ------------------------------------------------------------------ rate
def test_rate_is_the_share_of_eligible_words_replaced(para):
    eligible = _with(para, rate=1.0).paraphrase_with_edits([LONG])[1][0]
    n = len(eligible)
    assert n >= 30  # the text is long enough for the shares below to mean something
    positions = {e.start for e in eligible}
    for rate in (0.1, 0.3, 0.5, 0.8):
        counts = []
        for seed in range(8):
            edits = _with(para, rate=rate, random_state=seed).paraphrase_with_edits([LONG])[
                1
            ][0]
            # stochastic rounding: floor or ceil of rate * n, never anything else
            assert np.floor(rate * n) <= len(edits) <= np.ceil(rate * n)
            assert {e.start for e in edits} <= positions
            counts.append(len(edits))
        assert abs(np.mean(counts) / n - rate) < 0.05


def test_rate_zero_returns_the_text_unchanged(para):
    zero = _with(para, rate=0.0)
    texts = [LONG, "@PERSON1 said: “Wait!”\n\n  The car…", ""]
    out, edits = zero.paraphrase_with_edits(texts)
    assert out == texts
    assert edits == [[], [], []]


def test_empty_and_blank_essays(para):
    out, edits = _with(para, rate=1.0).paraphrase_with_edits(["", "   \n", LONG])
    assert out[:2] == ["", "   \n"]
    assert edits[:2] == [[], []]
    assert out[2] != LONG


# ------------------------------------------------- what must never change
PIECES = st.one_of(
    st.sampled_from(
        ["car", "doctor", "children", "asked", "said", "quickly", "big", "help",
         "started", "stopped", "crying", "house", "friends", "finally", "little",
         "wanted", "phone", "the", "was", "I", "patience", "waited", "wanna"]
    ).flatmap(lambda w: st.sampled_from([w, w.title(), w.upper()])),
    st.sampled_from(["@NUM1", "@PERSON2", "@CAPS", "@LOCATION1", "@CAPS3's"]),
    st.sampled_from([",", ".", "!", "?", "...", "'", '"', "(", ")", "-", "’", "â€™",
                     "“", "”", "..", ";", ":", "2", "3rd"]),
)  # fmt: skip
SEPARATORS = st.sampled_from(["", " ", " ", " ", "  ", "\n", "\t", "\n\n", " \u00a0"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(PIECES, SEPARATORS), min_size=1, max_size=30))
def test_only_whole_words_change(para, parts):
    text = "".join(p + s for p, s in parts)
    fast = _with(para, rate=1.0)
    out, edits = fast.paraphrase_with_edits([text])
    _check_edits(text, out[0], edits[0])
    assert re.findall(r"\s+", out[0]) == re.findall(r"\s+", text)
    assert PLACEHOLDER_PATTERN.findall(out[0]) == PLACEHOLDER_PATTERN.findall(text)


def test_title_and_all_caps_are_kept(wn):
    def adverbs(tokens):
        return ["RB" if t.lower() == "quickly" else "DT" for t in tokens]

    text = "He ran QUICKLY. Quickly, he ran quickly."
    out, edits = (
        WordNetParaphraser(rate=1.0, random_state=0, pos_tagger=adverbs)
        .fit([""])
        .paraphrase_with_edits([text])
    )
    assert [e.original for e in edits[0]] == ["QUICKLY", "Quickly", "quickly"]
    up, title, low = (e.replacement for e in edits[0])
    assert up.isupper() and title.istitle() and low.islower()
    assert {up.lower(), title.lower(), low} <= {"rapidly", "speedily"}
    _check_edits(text, out[0], edits[0])


def test_pieces_of_longer_words_stay(wn):
    # the tokenizer splits "wanna" into "wan" + "na"; "wan" is a WordNet adjective
    def all_adjectives(tokens):
        return ["JJ"] * len(tokens)

    est = WordNetParaphraser(
        rate=1.0, random_state=0, pos_tagger=all_adjectives, min_count=0
    )
    text = "I wanna sit. I was wan and pale."
    got, edits = est.fit([""]).paraphrase_with_edits([text])
    assert got[0].startswith("I wanna sit.")
    assert "wan" in [e.original for e in edits[0]]


def test_offsets_survive_mojibake_and_curly_quotes(para):
    text = "I didnâ€™t wait… The doctor’s car was repaired quickly and the children cried."
    out, edits = _with(para, rate=1.0).paraphrase_with_edits([text])
    assert edits[0], "expected some replacements"
    _check_edits(text, out[0], edits[0])
    assert out[0].startswith("I didnâ€™t wait… The ")


def test_placeholders_replaced_by_stand_ins_only_when_asked(para):
    text = "@PERSON1 waited @NUM2 hours at @LOCATION1."
    kept = _with(para, rate=0.0).transform([text])[0]
    assert kept == text
    out, edits = _with(para, rate=0.0, keep_placeholders=False).paraphrase_with_edits(
        [text]
    )
    expected = [
        WordEdit(0, "@PERSON1", placeholder_stand_in("@PERSON1")[0]),
        WordEdit(16, "@NUM2", placeholder_stand_in("@NUM2")[0]),
        WordEdit(31, "@LOCATION1", placeholder_stand_in("@LOCATION1")[0]),
    ]
    assert edits[0] == expected
    assert out[0] == _rebuild(text, expected)


def test_stop_words_numbers_and_proper_nouns_never_replaced(para):
    text = "John said that 3 cars were there. The good doctors helped Mary quickly."
    out, edits = _with(para, rate=1.0).paraphrase_with_edits([text])
    changed = {e.original for e in edits[0]}
    assert changed, "expected some replacements"
    assert not changed & {"John", "Mary", "3", "that", "were", "there", "The"}
    custom = _with(para, rate=1.0, stop_words=sorted(changed))
    assert custom.paraphrase_with_edits([text])[1][0] == []
    assert {"got", "going", "was"} <= EXTRA_STOP_WORDS


# ------------------------------------------------------------- synonymy
def test_every_replacement_is_a_wordnet_synonym(para, wn):
    texts = [LONG, "The children stopped crying and started laughing at the big dogs."]
    for seed in range(3):
        _, edits = _with(para, rate=1.0, random_state=seed).paraphrase_with_edits(texts)
        for edit in (e for essay in edits for e in essay):
            assert _shares_synset(wn, edit.original, edit.replacement), edit


@pytest.mark.parametrize(
    ("lemma", "pos", "form", "expected"),
    [
        ("stop", "v", "past", "stopped"),  # doubled: from verb.exc
        ("visit", "v", "past", "visited"),  # not doubled
        ("try", "v", "past", "tried"),
        ("hope", "v", "ing", "hoping"),
        ("die", "v", "ing", "dying"),
        ("see", "v", "ing", "seeing"),
        ("cry", "v", "3sg", "cries"),
        ("watch", "v", "3sg", "watches"),
        ("play", "v", "past", "played"),
        ("go", "v", "past", None),  # went or gone: cannot tell
        ("dream", "v", "past", None),  # only "dreamt" is listed
        ("man", "n", "plural", "men"),
        ("box", "n", "plural", "boxes"),
        ("city", "n", "plural", "cities"),
        ("key", "n", "plural", "keys"),
        ("roof", "n", "plural", None),  # roofs or rooves: not guessed
        ("large", "a", "base", "large"),
    ],
)
def test_inflection_rules(wn, lemma, pos, form, expected):
    assert _inflect(lemma, pos, form) == expected


# ----------------------------------------------------- real essays, SBERT
def test_asap7_paraphrases_stay_near_under_sentence_bert(para, asap7, minilm, wn):
    from sklearn_fairaes import SentenceBertEncoder

    essays = asap7["essay"].tolist()[:6]
    out, edits = para.paraphrase_with_edits(essays)
    enc = SentenceBertEncoder(minilm, long_text="chunk_mean", cache=None).fit([""])
    a = enc.transform(essays)
    b = enc.transform(out)
    cos = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert (cos > 0.85).all(), cos
    assert all(o != e for o, e in zip(out, essays))
    for text, new, ed in zip(essays, out, edits):
        _check_edits(text, new, ed)
        for edit in ed:
            assert _shares_synset(wn, edit.original, edit.replacement), edit


# ------------------------------------------------------- input and errors
def test_containers_give_the_same_list_and_input_is_not_mutated(para):
    texts = ["The old car was repaired quickly.", LONG]
    before = list(texts)
    ref = para.transform(texts)
    assert texts == before
    assert isinstance(ref, list) and all(isinstance(t, str) for t in ref)
    series = pd.Series(texts, index=[10, 20])
    for X in (tuple(texts), np.array(texts, dtype=object), series, series.to_frame()):
        assert para.transform(X) == ref
    assert para.fit_transform(texts) == ref


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        ([LONG, None], ValueError, r"position 1 of X is None"),
        (["ok", "fine", b"bytes"], TypeError, r"position 2 of X is bytes"),
        ([3], TypeError, r"position 0 of X is a int"),
        (LONG, TypeError, r"wrap it in a list"),
    ],
)
def test_bad_essays_name_the_position(para, bad, error, match):
    with pytest.raises(error, match=match):
        para.transform(bad)
    with pytest.raises(error, match=match):
        clone(para).fit(bad)


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        (
            {"rate": 1.5},
            ValueError,
            r"'rate' parameter of WordNetParaphraser must be a float in the range \[0, 1\]. Got 1.5",
        ),
        (
            {"rate": "0.3"},
            ValueError,
            r"'rate' parameter of WordNetParaphraser must be a float",
        ),
        (
            {"rate": True},
            ValueError,
            r"'rate' parameter of WordNetParaphraser must be a float",
        ),
        (
            {"min_word_length": 0},
            ValueError,
            r"'min_word_length' parameter of WordNetParaphraser must be an int in the range \[1, inf\)",
        ),
        (
            {"max_senses": 1.5},
            ValueError,
            r"'max_senses' parameter of WordNetParaphraser must be an int in the range \[1, inf\)",
        ),
        (
            {"min_count": -1},
            ValueError,
            r"'min_count' parameter of WordNetParaphraser must be an int in the range \[0, inf\)",
        ),
        (
            {"keep_placeholders": "yes"},
            TypeError,
            r"'keep_placeholders' parameter of WordNetParaphraser must be True or False",
        ),
        ({"stop_words": "french"}, ValueError, r"stop_words must be 'english'"),
        ({"stop_words": ["ok", 3]}, TypeError, r"stop_words must contain only str"),
        ({"stop_words": 3}, TypeError, r"got a int"),
        (
            {"random_state": "seed"},
            ValueError,
            r"'random_state' parameter of WordNetParaphraser must be an int in the range \[0, 4294967295\]",
        ),
        ({"pos_tagger": "bogus"}, ValueError, r"pos_tagger must be one of"),
    ],
)
def test_bad_parameters_raise_in_fit(wn, params, error, match):
    est = WordNetParaphraser(**params)
    assert est.get_params()[next(iter(params))] is params[next(iter(params))]
    with pytest.raises(error, match=match):
        est.fit([""])


def test_not_fitted(wn):
    with pytest.raises(NotFittedError, match="not fitted yet"):
        WordNetParaphraser().transform(["text"])


def test_callable_tagger_is_used_and_recorded(wn):
    def only_proper_nouns(tokens):
        return ["NNP"] * len(tokens)

    def all_nouns(tokens):
        return ["NN" if t.isalpha() else "." for t in tokens]

    none = WordNetParaphraser(rate=1.0, random_state=0, pos_tagger=only_proper_nouns)
    assert none.fit([""]).paraphrase_with_edits([LONG])[1] == [[]]
    assert none.pos_tagger_ == "callable:only_proper_nouns"
    nouns = WordNetParaphraser(rate=1.0, random_state=0, pos_tagger=all_nouns).fit([""])
    _, edits = nouns.paraphrase_with_edits(["The car and the doctor."])
    assert {e.original for e in edits[0]} == {"car", "doctor"}


# ------------------------------------------------------------ contract
def test_clone_and_pickle(para):
    est = _with(para, rate=0.5, random_state=3)
    twin = clone(est)
    assert twin.get_params() == est.get_params()
    assert not hasattr(twin, "pos_tagger_")
    restored = pickle.loads(pickle.dumps(est))
    assert restored.pos_tagger_ == est.pos_tagger_
    assert restored.transform([LONG]) == est.transform([LONG])
    assert twin.fit([""]).transform([LONG]) == est.transform([LONG])
    assert est.__sklearn_tags__().input_tags.string


def test_missing_sense_counts_say_what_to_do(wn, monkeypatch, tmp_path):
    from sklearn_fairaes.paraphrase import _wordnet as module

    nouns = lambda toks: ["NN"] * len(toks)  # noqa: E731
    # fit looks for the counts file without loading WordNet ...
    folder = module._wordnet_folder()
    assert folder is not None and module._has_sense_counts()
    monkeypatch.setattr(module, "_wordnet_folder", lambda: str(tmp_path))
    assert not module._has_sense_counts()  # no cntlist.rev in an empty folder
    with pytest.raises(ResourceNotFoundError, match=r"cntlist\.rev.*min_count=0"):
        WordNetParaphraser(min_count=2, pos_tagger=nouns).fit([""])
    WordNetParaphraser(min_count=0, pos_tagger=nouns).fit([""])
    # ... and the work checks the loaded WordNet itself (a counts file it cannot use)
    monkeypatch.setattr(module, "_wordnet_folder", lambda: folder)
    real = module._wordnet()
    monkeypatch.setattr(module, "_wordnet", lambda: (real[0], real[1], False))
    para = WordNetParaphraser(min_count=2, pos_tagger=nouns).fit([""])
    with pytest.raises(ResourceNotFoundError, match=r"cntlist\.rev.*min_count=0"):
        para.transform(["The old car was repaired."])
    assert para.transform([""]) == [""]  # nothing to compute: nothing to refuse


def test_import_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, sklearn_fairaes.paraphrase; "
        "print(sorted(m for m in ('nltk', 'spacy', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr
