"""The perturbations of sklearn_fairaes.perturb on hand-made texts: what each edit
does, what it must never touch, the record contract (records rebuild the output),
determinism, the scikit-learn contract, and errors."""

from __future__ import annotations

import pickle
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from conftest import missing_resource, require_module
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from sklearn_fairaes.features._tokenize import PLACEHOLDER_PATTERN
from sklearn_fairaes.perturb import (
    DEFAULT_PERTURBATIONS,
    EXPECTED_DIRECTIONS,
    OFF_TOPIC_PARAGRAPHS,
    PERTURBATION_NAMES,
    PERTURBATIONS,
    BasePerturbation,
    CaseWhitespaceNoise,
    ContractionSwap,
    Edit,
    Negation,
    OffTopicParagraph,
    PlaceholderRenaming,
    PromptStuffing,
    SentenceDeletion,
    SentenceRepetition,
    SentenceShuffle,
    SynonymParaphrase,
    TypoInjection,
    WordSalad,
    WordScramble,
    apply_edits,
    get_perturbation,
)
from sklearn_fairaes.perturb._meaning import _QWERTY
from sklearn_fairaes.perturb._quality import general_english_words
from sklearn_fairaes.perturb._text import analyse
from sklearn_fairaes.resources import ResourceNotFoundError

PROMPT = "Write about patience. Tell a story about a time when you were patient."
ESSAYS = [
    "I waited for the bus with @PERSON1. It was late, so we didn't complain. "
    "Mr. Lee said it's normal.",
    "My sister @CAPS1 can't wait.\nShe is not patient! Is she?",
    "",
    "   ",
    "One sentence about @LOCATION1 and @NUM2 hours",
    "We waited.Then the bus came. I’m sure it wasn’t late.",
    "Patience is a virtue. I have learned that. They have a dog named @CAPS2.",
]


@pytest.fixture(scope="module")
def wordnet():
    try:
        from sklearn_fairaes.resources import ensure_wordnet

        ensure_wordnet()
    except ResourceNotFoundError as exc:
        missing_resource(f"WordNet ({exc})")


def _needs(name, request):
    """Skip when a perturbation's resources are missing."""
    if name in ("negation", "synonym"):
        request.getfixturevalue("wordnet")
    if name == "word_salad":
        require_module("spellchecker", "spelling")
    if name == "synonym":
        try:
            SynonymParaphrase(random_state=0).transform(["A test."])
        except ResourceNotFoundError as exc:
            # only a missing resource; an ImportError from our package is a bug
            missing_resource(f"POS tagger ({exc})")


def _build(name, random_state=0):
    return get_perturbation(name, random_state=random_state, prompt=PROMPT)


def _sentences(text):
    return [text[a:b] for a, b in analyse(text).sentences]


# ------------------------------------------------------------------ registry
def test_registry_lists_every_perturbation_once():
    assert PERTURBATION_NAMES == tuple(PERTURBATIONS)
    assert set(DEFAULT_PERTURBATIONS) == set(PERTURBATION_NAMES)
    for name, cls in PERTURBATIONS.items():
        assert cls.name == name
        assert issubclass(cls, BasePerturbation)
        assert cls.expected in EXPECTED_DIRECTIONS
    # meaning-preserving first, and exactly the five
    stay = [n for n in PERTURBATION_NAMES if PERTURBATIONS[n].expected == "stay"]
    assert stay == list(PERTURBATION_NAMES[: len(stay)])
    assert set(stay) == {
        "synonym",
        "typos",
        "case_whitespace",
        "contractions",
        "placeholders",
    }
    assert PERTURBATIONS["negation"].expected == "change"


def test_get_perturbation_passes_params_and_prompt():
    p = get_perturbation("typos", rate=0.2, random_state=3)
    assert isinstance(p, TypoInjection) and p.rate == 0.2 and p.random_state == 3
    assert get_perturbation("prompt_stuffing", prompt=PROMPT).prompt == PROMPT
    assert get_perturbation("word_scramble", prompt=PROMPT).get_params() == {
        "random_state": None
    }


def test_get_perturbation_rejects_unknown_names():
    with pytest.raises(
        ValueError,
        match=r"unknown perturbation 'shuffle'; the perturbations are 'case_whitespace', 'contractions'",
    ):
        get_perturbation("shuffle")
    with pytest.raises(TypeError, match="a perturbation name must be a str"):
        get_perturbation(3)


# ------------------------------------------------------------------ contract
@pytest.mark.parametrize("name", PERTURBATION_NAMES)
def test_perturbation_contract(name, request):
    _needs(name, request)
    p = _build(name)
    params = p.get_params()
    assert clone(p).get_params() == params
    essays = list(ESSAYS)
    assert p.fit(essays) is p
    out, records = p.transform_with_records(essays)
    assert essays == ESSAYS  # input untouched
    assert len(out) == len(records) == len(ESSAYS)
    assert all(isinstance(t, str) for t in out)
    for text, new, rec in zip(ESSAYS, out, records):
        # the records rebuild the output, and each edit quotes the original
        assert apply_edits(text, rec.edits) == new
        starts = [e.start for e in rec.edits]
        assert starts == sorted(starts)
        for e in rec.edits:
            assert isinstance(e, Edit) and text[e.start : e.end] == e.before
            assert e.kind == p.name or e.kind.split(":")[0] in (
                "typo", "case", "space", "expand", "contract", "rename", "move", "delete",
                "repeat", "append", "insert", "negate", "unnegate", "replace",
            )  # fmt: skip
        assert isinstance(rec.note, str) and rec.n_skipped >= 0
        if not text.strip():
            assert new == text and rec.edits == () and rec.note == "empty essay"
        if new == text:
            assert all(e.before == e.after for e in rec.edits)
    # deterministic, unfitted transform works, and the same in a pickled copy
    assert _build(name).transform(ESSAYS) == out
    assert pickle.loads(pickle.dumps(p)).transform(ESSAYS) == out
    # an essay's edit does not depend on the batch or its position
    assert p.transform(ESSAYS[::-1]) == out[::-1]
    assert p.transform([ESSAYS[0]]) == [out[0]]
    # pandas Series and numpy arrays in, list out
    assert p.transform(pd.Series(ESSAYS, index=range(10, 17))) == out
    assert p.transform(np.array(ESSAYS, dtype=object)) == out


@pytest.mark.parametrize("name", PERTURBATION_NAMES)
def test_perturbation_changes_something_on_a_rich_essay(name, request):
    _needs(name, request)
    text = ESSAYS[0] + " " + ESSAYS[6]
    out = _build(name).transform([text])[0]
    assert out != text


@pytest.mark.parametrize("name", PERTURBATION_NAMES)
def test_perturbation_rejects_bad_essays(name):
    p = _build(name)
    with pytest.raises(ValueError, match="essay at position 2 of X is None"):
        p.transform(["a", "b", None])
    with pytest.raises(TypeError, match="essay at position 1 of X is a int"):
        p.transform(["a", 7])
    with pytest.raises(TypeError, match="got a single str; wrap it in a list"):
        p.transform("an essay")
    with pytest.raises(ValueError, match=r"position 1 \(index label 'b'\) of X is NaN"):
        p.transform(pd.Series(["x", np.nan], index=["a", "b"]))


def test_seeds_change_the_draw_and_differ_across_essays():
    text = ESSAYS[0] + " " + ESSAYS[6]
    outs = {SentenceShuffle(random_state=s).transform([text])[0] for s in range(8)}
    assert len(outs) > 1
    # two essays with the same structure get different permutations
    a = "One. Two. Three. Four. Five. Six."
    b = "Uno. Dos. Tres. Cuatro. Cinco. Seis."
    order = {w: k for k, w in enumerate(["One", "Two", "Three", "Four", "Five", "Six"])}
    spanish = dict(zip(["Uno", "Dos", "Tres", "Cuatro", "Cinco", "Seis"], order))
    ra, rb = SentenceShuffle(random_state=0).transform([a, b])
    perm_a = [order[s.rstrip(".")] for s in ra.split()]
    perm_b = [order[spanish[s.rstrip(".")]] for s in rb.split()]
    assert perm_a != perm_b


def test_random_state_none_draws_a_new_seed_per_call():
    text = "One. Two. Three. Four. Five. Six. Seven. Eight."
    p = SentenceShuffle(random_state=None)
    assert len({p.transform([text])[0] for _ in range(6)}) > 1


# ------------------------------------------------------------ parameters
@pytest.mark.parametrize(
    "perturbation, match",
    [
        (TypoInjection(rate=2), "'rate' parameter of TypoInjection must be a float in the range"),
        (TypoInjection(min_word_length=1), "'min_word_length' parameter"),
        (CaseWhitespaceNoise(rate=-0.1), "'rate' parameter"),
        (PlaceholderRenaming(max_shift=0), "'max_shift' parameter"),
        (SentenceDeletion(rate="a lot"), "'rate' parameter"),
        (OffTopicParagraph(variant=9), "'variant' parameter"),
        (OffTopicParagraph(random_state="x"), "'random_state' parameter"),
        (WordSalad(vocabulary_size=0), "'vocabulary_size' parameter"),
        (ContractionSwap(mode="both"), r"The 'mode' parameter of ContractionSwap must be a str among \['contract', 'expand', 'toggle'\]. Got 'both'"),
        (PromptStuffing(), "PromptStuffing needs the prompt"),
        (PromptStuffing(prompt="Do it."), "the prompt has no content word"),
        (PromptStuffing(prompt=3), "'prompt' parameter of PromptStuffing must be"),
    ],
)  # fmt: skip
def test_bad_parameters_raise_at_fit_and_transform(perturbation, match):
    with pytest.raises(ValueError, match=match):
        perturbation.fit()
    with pytest.raises(ValueError, match=match):
        perturbation.transform(["An essay."])


# --------------------------------------------------------------- apply_edits
def test_apply_edits_rejects_overlaps_and_mismatches():
    text = "I was late."
    assert apply_edits(text, []) == text
    assert apply_edits(
        text, [Edit(11, 11, "", " Sorry.", "append"), Edit(0, 1, "I", "We", "x")]
    ) == ("We was late. Sorry.")
    with pytest.raises(ValueError, match="edits overlap"):
        apply_edits(text, [Edit(0, 5, "I was", "", "x"), Edit(2, 5, "was", "", "x")])
    with pytest.raises(ValueError, match="does not match the text"):
        apply_edits(text, [Edit(0, 3, "You", "We", "x")])


# ----------------------------------------------------------------- sentences
def test_sentences_are_not_split_after_known_abbreviations():
    text = "Mr. Lee met Dr. Ray at 5 p.m. today. The U.S. is big! Is it?\nYes"
    assert _sentences(text) == [
        "Mr. Lee met Dr. Ray at 5 p.m. today.",
        "The U.S. is big!",
        "Is it?",
        "Yes",
    ]
    # every character outside the sentences is whitespace
    spans = analyse(text).sentences
    gaps = [text[b:a] for (_, b), (a, _) in zip(spans[:-1], spans[1:])]
    assert all(not g.strip() for g in gaps)


# -------------------------------------------------------------------- shuffle
def test_shuffle_keeps_the_multiset_of_sentences():
    text = "Mr. Lee waited. The bus was late!\nWe sang songs. Was it fun? It was. The end."
    [out], [rec] = SentenceShuffle(random_state=0).transform_with_records([text])
    assert Counter(_sentences(out)) == Counter(_sentences(text))
    assert _sentences(out) != _sentences(text)
    # the whitespace between sentence slots stays: the line break after the second
    assert len(_sentences(out.split("\n")[0])) == 2 and len(out) == len(text)
    assert {e.kind for e in rec.edits} == {"move"}


def test_shuffle_never_returns_the_original_order():
    text = "A one. B two."
    for seed in range(10):
        assert SentenceShuffle(random_state=seed).transform([text]) == ["B two. A one."]


def test_shuffle_leaves_short_or_uniform_essays_and_says_why():
    for text in ("Only one sentence here.", "Same. Same. Same."):
        out, [rec] = SentenceShuffle(random_state=0).transform_with_records([text])
        assert out == [text] and rec.note == "fewer than two different sentences"


def test_shuffle_does_not_glue_words_when_sentences_touch():
    # "waited.Then" is two sentences with no space; the last has no end mark
    text = "We waited.Then the bus came. It was late and we left"
    for seed in range(10):
        out = SentenceShuffle(random_state=seed).transform([text])[0]
        assert Counter(re.findall(r"\w+", out)) == Counter(re.findall(r"\w+", text))


# --------------------------------------------------------------- deletion
def test_deletion_removes_whole_sentences_and_keeps_the_order():
    sentences = [f"Sentence number {w}." for w in ("one", "two", "three", "four", "five")]
    text = " ".join(sentences) + "\n"
    for seed in range(10):
        [out], [rec] = SentenceDeletion(rate=0.4, random_state=seed).transform_with_records(
            [text]
        )
        kept = _sentences(out)
        assert len(kept) == 3 and kept == [s for s in sentences if s in kept]
        assert out.endswith(".\n") and "  " not in out and not out.startswith(" ")
        assert len(rec.edits) == 2 and all(e.kind == "delete" for e in rec.edits)


def test_deletion_never_deletes_everything():
    out = SentenceDeletion(rate=1.0, random_state=0).transform(["One. Two."])[0]
    assert out in ("One.", "Two.")
    out, [rec] = SentenceDeletion(rate=1.0).transform_with_records(["Just one."])
    assert out == ["Just one."] and rec.note == "one sentence: nothing deleted"


def test_deletion_of_trailing_sentences_keeps_the_text_before():
    text = "Keep me. Drop me. Drop me too."
    # with rate=1 all but one go; whichever stays, nothing dangles
    for seed in range(6):
        out = SentenceDeletion(rate=1.0, random_state=seed).transform([text])[0]
        assert out in ("Keep me.", "Drop me.", "Drop me too.")


# -------------------------------------------------------------- repetition
def test_repetition_writes_chosen_sentences_twice():
    text = "I waited. The bus was late. We sang songs. It was fun."
    out, [rec] = SentenceRepetition(rate=0.5, random_state=1).transform_with_records([text])
    counts = Counter(_sentences(out[0]))
    assert sum(counts.values()) == 6 and sorted(counts.values()) == [1, 1, 2, 2]
    assert {e.kind for e in rec.edits} == {"repeat"}
    # the repeats follow their sentence
    assert _sentences(out[0]) == [s for s in _sentences(text) for _ in range(counts[s])]
    assert SentenceRepetition(random_state=0).transform(["Alone."]) == ["Alone. Alone."]


# ---------------------------------------------------------------- off-topic
def test_off_topic_appends_one_of_the_fixed_paragraphs():
    assert len(OFF_TOPIC_PARAGRAPHS) == 4
    assert all(50 <= len(p.split()) <= 80 for p in OFF_TOPIC_PARAGRAPHS)
    text = "I waited for the bus.  \n"
    out = OffTopicParagraph(variant=1).transform([text])[0]
    assert out == "I waited for the bus.\n\n" + OFF_TOPIC_PARAGRAPHS[1] + "  \n"
    drawn = OffTopicParagraph(random_state=0).transform([f"Essay {k}." for k in range(40)])
    assert {o.split("\n\n")[1] for o in drawn} == set(OFF_TOPIC_PARAGRAPHS)


# ---------------------------------------------------------- prompt stuffing
def test_prompt_stuffing_inserts_prompt_content_words_only():
    text = "I waited for the bus with @PERSON1 in the rain for an hour."
    content = {"write", "patience", "tell", "story", "time", "patient"}
    for seed in range(5):
        [out], [rec] = PromptStuffing(
            prompt=PROMPT, rate=0.3, random_state=seed
        ).transform_with_records([text])
        inserted = " ".join(e.after for e in rec.edits).split()
        assert 3 <= len(inserted) <= 4 and set(inserted) <= content
        assert all(e.before == "" and e.kind == "insert" for e in rec.edits)
        # removing the insertions gives the essay back; the placeholder is intact
        assert apply_edits(text, rec.edits) == out and "@PERSON1" in out
        words = out.split()
        for w in inserted:
            words.remove(w)
        assert " ".join(words) == text


# ------------------------------------------------------------------- negation
@pytest.mark.parametrize(
    "sentence, negated",
    [
        ("I was patient.", "I was not patient."),
        ("Mr. Lee is late.", "Mr. Lee is not late."),
        ("She can wait.", "She cannot wait."),
        ("We should go.", "We should not go."),
        ("We waited an hour.", "We did not wait an hour."),
        ("They went home.", "They did not go home."),
        ("I like pizza.", "I do not like pizza."),
        ("She waits for the bus.", "She does not wait for the bus."),
        ("I finally waited.", "I finally did not wait."),
        ("They have a dog.", "They do not have a dog."),
        ("I have a can of soup.", "I do not have a can of soup."),
        ("He has gone home.", "He has not gone home."),
        ("We had waited.", "We had not waited."),
        ("I did my homework.", "I did not do my homework."),
        ("I'm happy.", "I'm not happy."),
        ("It's late.", "It's not late."),
        ("I'll wait.", "I will not wait."),
        ("Can you wait?", "Can't you wait?"),
        ("What did you see?", "What didn't you see?"),
        ("I didn't cry.", "I did cry."),
        ("He did not wait.", "He did wait."),
        ("I cannot swim.", "I can swim."),
        ("It won't rain.", "It will rain."),
        ("@PERSON1 was not there.", "@PERSON1 was there."),
    ],
)
def test_negation_flips_a_simple_clause(wordnet, sentence, negated):
    out, [rec] = Negation(random_state=0).transform_with_records([sentence])
    assert out == [negated]
    assert len(rec.edits) == 1 and rec.n_skipped == 0
    assert rec.note == "1 of 1 sentences negated; 0 without a handled verb"


@pytest.mark.parametrize(
    "sentence",
    [
        "The bus came.",  # noun subject, no auxiliary
        "@PERSON1 waited.",
        "I never waited.",  # another negative word
        "Nobody is here.",
        "Wait for me.",  # imperative
        "Was it fun.",  # sentence-initial auxiliary, no question mark
    ],
)
def test_negation_leaves_unhandled_sentences_and_counts_them(wordnet, sentence):
    out, [rec] = Negation(random_state=0).transform_with_records([sentence])
    assert out == [sentence] and rec.edits == ()
    assert rec.n_skipped == 1 and rec.note == "no sentence with a handled verb"


def test_negation_twice_restores_copula_sentences(wordnet):
    text = "I was patient. She is kind. We can wait."
    neg = Negation(random_state=0)
    assert neg.transform(neg.transform([text])) == [text]


def test_negation_rate_negates_a_share_of_the_handled_sentences(wordnet):
    text = " ".join(["I was there."] * 10 + ["The bus came."] * 2)
    out, [rec] = Negation(rate=0.5, random_state=0).transform_with_records([text])
    assert out[0].count("was not") == 5 and rec.n_skipped == 2
    assert rec.note == "5 of 12 sentences negated; 2 without a handled verb"


def test_negation_keeps_the_essay_apostrophe_style(wordnet):
    assert Negation().transform(["Is it late?"]) == ["Isn't it late?"]
    assert Negation().transform(["Is it late? It’s fine."]) == [
        "Isn’t it late? It’s not fine."
    ]


# --------------------------------------------------------------- contractions
@pytest.mark.parametrize(
    "text, expanded",
    [
        ("I don't know.", "I do not know."),
        ("Don't go.", "Do not go."),
        ("I can't wait.", "I cannot wait."),
        ("It won't rain.", "It will not rain."),
        ("I'm here.", "I am here."),
        ("i'm here.", "i am here."),
        ("They're late.", "They are late."),
        ("We've won.", "We have won."),
        ("She'll come.", "She will come."),
        ("I'd go.", "I would go."),
        ("I'd gone.", "I had gone."),
        ("It's late.", "It is late."),
        ("It's been late.", "It has been late."),
        ("Let's go.", "Let us go."),
        ("DON'T GO.", "DO NOT GO."),
        ("I didn’t know.", "I did not know."),
    ],
)
def test_contractions_expand(text, expanded):
    assert ContractionSwap("expand").transform([text]) == [expanded]
    # toggling an expanded text back gives a contraction again where one exists
    assert ContractionSwap("toggle").transform([text]) == [expanded]


@pytest.mark.parametrize(
    "text, contracted",
    [
        ("I do not know.", "I don't know."),
        ("Do not go.", "Don't go."),
        ("I cannot wait.", "I can't wait."),
        ("It will not rain.", "It won't rain."),
        ("I am here.", "I'm here."),
        ("They are late.", "They're late."),
        ("It is late.", "It's late."),
        ("He would go.", "He'd go."),
        ("It is not late.", "It isn't late."),  # "not" goes with its auxiliary
        ("He will not go.", "He won't go."),
        ("I know what it is.", "I know what it is."),  # no word after: kept
        ("I have a dog.", "I have a dog."),  # pronoun + have: kept
        ("I did not know. It’s fine.", "I didn’t know. It’s fine."),
    ],
)
def test_contractions_contract(text, contracted):
    assert ContractionSwap("contract").transform([text]) == [contracted]


def test_contractions_leave_possessives_and_placeholders():
    text = "@PERSON1's dog and John's cat. @CAPS1 is not here."
    out = ContractionSwap("toggle").transform([text])[0]
    assert out == "@PERSON1's dog and John's cat. @CAPS1 isn't here."
    out, [rec] = ContractionSwap("expand").transform_with_records(["John's cat."])
    assert out == ["John's cat."] and rec.note == "no contraction site"


def test_contraction_rate_changes_a_share_of_the_sites():
    text = " ".join(["I don't know."] * 10)
    out = ContractionSwap(rate=0.3, random_state=0).transform([text])[0]
    assert out.count("do not") == 3 and out.count("don't") == 7


# ------------------------------------------------------------------ typos
def _is_one_typo(before, after, kind):
    if kind == "typo:swap":
        diff = [k for k in range(len(before)) if before[k] != after[k]]
        return (
            len(before) == len(after)
            and len(diff) == 2
            and diff[1] == diff[0] + 1
            and (before[diff[0]] == after[diff[1]] and before[diff[1]] == after[diff[0]])
        )
    if kind == "typo:delete":
        return any(before[:k] + before[k + 1 :] == after for k in range(len(before)))
    if kind == "typo:double":
        return any(
            before[: k + 1] + before[k] + before[k + 1 :] == after
            for k in range(len(before))
        )
    if kind == "typo:keyboard":
        diff = [k for k in range(len(before)) if before[k] != after[k]]
        return (
            len(diff) == 1
            and after[diff[0]].lower() in _QWERTY[before[diff[0]].lower()]
            and (after[diff[0]].isupper() == before[diff[0]].isupper())
        )
    return False


def test_typos_change_one_letter_pattern_per_eligible_word():
    text = "Patience is a virtue, said @PERSON1 in 2010. We didn't WAIT for @CAPS2's bus."
    out, [rec] = TypoInjection(rate=1.0, random_state=0).transform_with_records([text])
    eligible = {"Patience", "virtue", "said", "WAIT", "for", "bus"}
    assert {e.before for e in rec.edits} == eligible
    kinds = Counter(e.kind for e in rec.edits)
    assert set(kinds) <= {"typo:swap", "typo:delete", "typo:double", "typo:keyboard"}
    for e in rec.edits:
        assert _is_one_typo(e.before, e.after, e.kind), e
    assert PLACEHOLDER_PATTERN.findall(out[0]) == ["@PERSON1", "@CAPS2"]
    assert "2010" in out[0] and "didn't" in out[0]


def test_typo_rate_is_the_share_of_eligible_words():
    text = " ".join(["patience"] * 200)
    n = [
        len(r.edits)
        for r in TypoInjection(rate=0.05, random_state=0).transform_with_records([text])[1]
    ]
    assert n == [10]


# ----------------------------------------------------------- case and spaces
def test_case_whitespace_noise_only_changes_case_and_spacing():
    text = "I met @PERSON1 at the station.\nIt was late, said Mr. Lee."
    out, [rec] = CaseWhitespaceNoise(rate=1.0, random_state=0).transform_with_records(
        [text]
    )
    out = out[0]
    assert out == "i  Met  @PERSON1  At  The  Station.\nit  Was  Late,  Said  Mr.  lee."
    assert " ".join(out.lower().split()) == " ".join(text.lower().split())
    assert out.count("\n") == 1 and PLACEHOLDER_PATTERN.findall(out) == ["@PERSON1"]
    assert {e.kind for e in rec.edits} == {"case", "space"}


# -------------------------------------------------------------- placeholders
def test_placeholder_renaming_is_consistent_and_injective():
    text = "@PERSON1 met @PERSON2 and @PERSON1 again at @LOCATION1 on @DATE1, @CAPS and @CAPS12."
    for seed in range(10):
        out, [rec] = PlaceholderRenaming(
            max_shift=3, random_state=seed
        ).transform_with_records([text])
        before = PLACEHOLDER_PATTERN.findall(text)
        after = PLACEHOLDER_PATTERN.findall(out[0])
        assert len(after) == len(before)
        mapping = {}
        for b, a in zip(before, after):
            assert re.sub(r"\d", "", a) == re.sub(r"\d", "", b)  # same kind
            assert mapping.setdefault(b, a) == a  # consistent
            if b == "@CAPS":
                assert a == b  # unnumbered: kept
            else:
                shift = int(re.sub(r"\D", "", a)) - int(re.sub(r"\D", "", b))
                assert 1 <= shift <= 3
        assert len(set(mapping.values())) == len(mapping)  # injective
        assert PLACEHOLDER_PATTERN.sub("@", out[0]) == PLACEHOLDER_PATTERN.sub("@", text)
    out, [rec] = PlaceholderRenaming().transform_with_records(["No names here."])
    assert out == ["No names here."] and rec.note == "no numbered placeholder"


@pytest.mark.parametrize("name", ["typos", "case_whitespace", "contractions", "synonym"])
def test_placeholders_survive_every_meaning_preserving_edit(name, request):
    _needs(name, request)
    texts = [
        "@PERSON1 didn't wait for @CAPS1. @CAPS2's car and @NUM1 dogs waited @DATE1.",
        "I'm sure @ORGANIZATION1 can't go. It is @LOCATION2, I am @PERSON3.",
    ]
    p = _build(name).set_params(
        **({"rate": 1.0} if "rate" in _build(name).get_params() else {})
    )
    for text, out in zip(texts, p.transform(texts)):
        assert PLACEHOLDER_PATTERN.findall(out) == PLACEHOLDER_PATTERN.findall(text)
        # and each is still a whole token: not glued to letters
        for m in PLACEHOLDER_PATTERN.finditer(out):
            assert m.start() == 0 or not out[m.start() - 1].isalnum()


def test_synonym_paraphrase_matches_the_wordnet_paraphraser(request):
    _needs("synonym", request)
    from sklearn_fairaes.paraphrase import WordNetParaphraser

    texts = ESSAYS + ["The old car was repaired while @PERSON1 waited patiently."]
    out, records = SynonymParaphrase(rate=0.5, random_state=4).transform_with_records(texts)
    expected, edits = (
        WordNetParaphraser(rate=0.5, random_state=4).fit([""]).paraphrase_with_edits(texts)
    )
    assert out == expected
    for rec, word_edits in zip(records, edits):
        assert [(e.start, e.before, e.after) for e in rec.edits] == [
            tuple(w) for w in word_edits
        ]


# ------------------------------------------------------------ salad, scramble
def test_word_salad_has_the_essay_length_in_general_words():
    require_module("spellchecker", "spelling")
    vocabulary = set(general_english_words(20000))
    assert len(vocabulary) == 20000
    texts = [ESSAYS[0], ESSAYS[6], "Short one."]
    out, records = WordSalad(random_state=0).transform_with_records(texts)
    for text, salad, rec in zip(texts, out, records):
        assert len(salad.split()) == len(analyse(text).words)
        assert set(salad.split()) <= vocabulary
        assert [e.kind for e in rec.edits] == ["replace"]
    assert len(set(out)) == 3
    out, [rec] = WordSalad().transform_with_records(["... !!"])
    assert out == ["... !!"] and rec.note == "no word"


def test_word_scramble_keeps_the_bag_of_words():
    text = "I didn't wait for @PERSON1, so @PERSON1 waited for me. Mr. Lee laughed!"
    for seed in range(5):
        out = WordScramble(random_state=seed).transform([text])[0]
        assert Counter(out.split()) == Counter(analyse(text).words)
        assert out.split() != list(analyse(text).words)
    out, [rec] = WordScramble().transform_with_records(["Yes. Yes!"])
    assert out == ["Yes. Yes!"] and rec.note == "fewer than two different words"


# ---------------------------------------------------------------- properties
WORDS = ["I", "was", "patient", "@PERSON1", "@CAPS2", "didn't", "can't", "waited",
         "the", "bus", "Mr.", "Lee", "is", "not", "it's", "home", "@NUM1", "We", "They",
         "have", "a", "dog", "I'm", "like", "it", "cannot", "swim", "don’t"]  # fmt: skip
SENTENCE = st.builds(
    lambda words, end: " ".join(words) + end,
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
    st.sampled_from([".", "!", "?"]),
)
ESSAY = st.builds(
    lambda parts: "".join(s + sep for s, sep in parts).rstrip(),
    st.lists(
        st.tuples(SENTENCE, st.sampled_from([" ", "  ", "\n"])), min_size=1, max_size=6
    ),
)
CHEAP = [n for n in PERTURBATION_NAMES if n not in ("synonym", "word_salad", "negation")]


@settings(max_examples=40, deadline=None)
@given(st.lists(ESSAY, min_size=1, max_size=4), st.integers(0, 2**16))
def test_records_rebuild_the_output_and_placeholders_survive(essays, seed):
    for name in CHEAP:
        p = _build(name, random_state=seed)
        out, records = p.transform_with_records(essays)
        assert p.transform(essays[::-1]) == out[::-1]
        for text, new, rec in zip(essays, out, records):
            assert apply_edits(text, rec.edits) == new
            cursor = 0
            for e in rec.edits:
                assert e.start >= cursor and text[e.start : e.end] == e.before
                cursor = e.end
            if p.expected == "stay" and name != "placeholders":
                assert PLACEHOLDER_PATTERN.findall(new) == PLACEHOLDER_PATTERN.findall(text)
            if name == "placeholders":
                strip = [re.sub(r"\d", "", h) for h in PLACEHOLDER_PATTERN.findall(new)]
                assert strip == [
                    re.sub(r"\d", "", h) for h in PLACEHOLDER_PATTERN.findall(text)
                ]
            if name == "sentence_shuffle":
                assert Counter(_sentences(new)) == Counter(_sentences(text))
            if name == "word_scramble" and new != text:
                assert Counter(new.split()) == Counter(analyse(text).words)


@settings(max_examples=30, deadline=None)
@given(ESSAY)
def test_negation_records_rebuild_the_output(wordnet, essay):
    out, [rec] = Negation(random_state=0).transform_with_records([essay])
    assert apply_edits(essay, rec.edits) == out[0]
    n = len(analyse(essay).sentences)
    assert len(rec.edits) + rec.n_skipped == n
    assert all(e.kind.startswith(("negate:", "unnegate")) for e in rec.edits)
    assert PLACEHOLDER_PATTERN.findall(out[0]) == PLACEHOLDER_PATTERN.findall(essay)
