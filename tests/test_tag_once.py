"""Tag once (issue 18, item 4): one POS-tagging pass per distinct essay, shared by
the interpretable features, the WordNet paraphraser and the synonym perturbation,
with the same tags, features and paraphrases as tagging every essay afresh.

The tagger is counted at ``_pos._run_tagger``, the one function that hands essays
to a backend; the reference for "distinct" is the set of token lists of
``tokenize_essay``, computed here independently of the memo's digests.
"""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import pytest
from conftest import PROMPT7, missing_resource

import sklearn_fairaes as sf
from sklearn_fairaes.features import InterpretableFeatures, _pos
from sklearn_fairaes.features._tokenize import TokenizedEssay, tokenize_essay
from sklearn_fairaes.paraphrase import WordNetParaphraser
from sklearn_fairaes.resources import ResourceNotFoundError

# every feature computed from the essay alone plus the POS one (no Sentence-BERT,
# no LanguageTool): what the audit's feature profile uses
LOCAL_FEATURES = [
    "answer_length",
    "word_count",
    "avg_word_length",
    "good_pos_ngrams",
    "prompt_overlap",
    "prompt_overlap_synonyms",
    "punctuation_count",
    "spelling_errors",
    "unique_words",
    "prompt_similarity_bow",
]


@pytest.fixture(scope="module")
def wordnet():
    try:
        from sklearn_fairaes.resources import ensure_wordnet

        ensure_wordnet()
    except ResourceNotFoundError as exc:
        missing_resource(f"WordNet ({exc})")


@pytest.fixture
def memo(monkeypatch):
    """An empty tag memo for this test only (the process-wide one is left alone)."""
    fresh = _pos._TagMemo(_pos._TAG_MEMO_MAX_TOKENS)
    monkeypatch.setattr(_pos, "_TAG_MEMO", fresh)
    return fresh


@pytest.fixture
def tagged(monkeypatch):
    """The token tuple of every essay the backend is asked to tag, in order."""
    seen: list[tuple[str, ...]] = []
    real = _pos._run_tagger

    def counting(essays, label):
        seen.extend(tuple(e.tokens) for e in essays)
        return real(essays, label)

    monkeypatch.setattr(_pos, "_run_tagger", counting)
    return seen


@pytest.fixture(scope="module")
def demo():
    frame = sf.load_demo_essays()
    return list(frame["essay"]), frame["score"].to_numpy(dtype=float)


def _distinct(essays):
    return {tuple(tokenize_essay(e).tokens) for e in essays}


def test_one_pass_per_distinct_essay_across_consumers(
    spacy_label, wordnet, memo, tagged, demo
):
    from sklearn_fairaes.perturb import SynonymParaphrase

    texts, y = demo
    # repeated essays and an empty one: each distinct token list is tagged once
    essays = texts[:60] + texts[:7] + [""]
    scores = np.concatenate([y[:60], y[:7], [y[0]]])
    feats = InterpretableFeatures(
        PROMPT7, features=LOCAL_FEATURES, pos_tagger=spacy_label, progress=False
    )
    feats.fit_transform(essays, scores)
    after_features = Counter(tagged)
    assert after_features == Counter(_distinct(essays))  # each once, none left out
    assert max(after_features.values()) == 1

    WordNetParaphraser(random_state=0, pos_tagger=spacy_label).fit_transform(essays)
    SynonymParaphrase(random_state=3, pos_tagger=spacy_label).fit_transform(texts[:20])
    feats.transform(texts[30:50])
    assert Counter(tagged) == after_features  # nothing tagged a second time
    assert memo.hits > 0

    # an essay the others never saw is tagged, once
    new = "My grandmother waited patiently for the train."
    WordNetParaphraser(random_state=0, pos_tagger=spacy_label).fit_transform([new, new])
    assert Counter(tagged) - after_features == Counter(_distinct([new]))


def test_tags_identical_with_and_without_the_memo(spacy_label, memo, demo, asap7):
    essays = [tokenize_essay(e) for e in demo[0][:80] + list(asap7["essay"].iloc[:120])]
    with _pos.tag_memo_disabled():
        plain = _pos.tag_essays(essays, spacy_label)
        assert len(memo) == 0  # disabled: not filled
    first = _pos.tag_essays(essays, spacy_label)
    # second call: every essay from the memo, in a different order and batch
    order = np.random.default_rng(0).permutation(len(essays))
    again = _pos.tag_essays([essays[i] for i in order], spacy_label)
    assert first == plain
    assert again == [plain[i] for i in order]
    assert all(len(t) == len(e.tokens) for t, e in zip(first, essays))
    # the memo hands out copies: a caller editing its lists changes nothing
    first[0].append("XX")
    assert _pos.tag_essays(essays[:1], spacy_label) == plain[:1]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_features_and_paraphrases_unchanged_on_asap(
    spacy_label, wordnet, memo, asap7, n_jobs
):
    # 130 essays = three chunks of 64: with n_jobs=2 the workers tag them and
    # hand the tags back to this process's memo for the paraphraser
    essays = list(asap7["essay"].iloc[200:330])
    y = asap7["domain1_score"].iloc[200:330].astype(float).to_numpy()

    def run():
        feats = InterpretableFeatures(
            PROMPT7,
            features=LOCAL_FEATURES,
            pos_tagger=spacy_label,
            n_jobs=n_jobs,
            progress=False,
        )
        X = feats.fit_transform(essays, y)
        para = WordNetParaphraser(random_state=0, pos_tagger=spacy_label).fit(essays)
        return X, feats.good_pos_ngrams_, para.paraphrase_with_edits(essays)

    with _pos.tag_memo_disabled():
        X_ref, good_ref, (para_ref, edits_ref) = run()
    assert len(memo) == 0
    X, good, (paraphrases, edits) = run()
    np.testing.assert_array_equal(X, X_ref)
    assert good == good_ref
    assert paraphrases == para_ref
    assert edits == edits_ref
    # every distinct essay is in this process's memo, also when workers tagged
    assert len(memo) == len(_distinct(essays))


def test_workers_tags_reach_the_parent(spacy_label, memo, tagged, asap7):
    essays = list(asap7["essay"].iloc[:130])
    y = asap7["domain1_score"].iloc[:130].astype(float).to_numpy()
    InterpretableFeatures(
        features=["good_pos_ngrams"], pos_tagger=spacy_label, n_jobs=2, progress=False
    ).fit_transform(essays, y)
    assert tagged == []  # the workers tagged (this process's counter saw nothing)
    tags = _pos.tag_essays([tokenize_essay(e) for e in essays], spacy_label)
    assert tagged == []  # ... and this process did not tag again
    with _pos.tag_memo_disabled():
        assert tags == _pos.tag_essays([tokenize_essay(e) for e in essays], spacy_label)


def test_callable_tagger_is_called_every_time(memo):
    calls = []

    def tagger(tokens):
        calls.append(list(tokens))
        return ["NN"] * len(tokens)

    essays = [tokenize_essay("The dog waited."), tokenize_essay("The dog waited.")]
    assert _pos.tag_essays(essays, tagger) == [["NN"] * 4] * 2
    _pos.tag_essays(essays, tagger)
    # a callable may not be a pure function of the tokens: never memoised
    assert len(calls) == 4
    assert len(memo) == 0


def test_key_depends_on_tokens_sentences_and_backend():
    a = TokenizedEssay(["I", "waited", ".", "Then", "I", "left"], [(0, 3), (3, 6)], [])
    same = TokenizedEssay(["I", "waited", ".", "Then", "I", "left"], [(0, 3), (3, 6)], [])
    # NLTK tags sentence by sentence: another split is another essay to it
    split = TokenizedEssay(["I", "waited", ".", "Then", "I", "left"], [(0, 6)], [])
    # length-prefixed: ["ab", "c"] and ["a", "bc"] are different token lists
    ab_c = TokenizedEssay(["ab", "c"], [(0, 2)], [])
    a_bc = TokenizedEssay(["a", "bc"], [(0, 2)], [])
    keys = _pos.memo_keys([a, same, split, ab_c, a_bc], "spacy:some_model")
    assert keys[0] == keys[1]
    assert len({keys[0], keys[2], keys[3], keys[4]}) == 4
    other = _pos.memo_keys([a], "spacy:another_model")
    assert other[0] != keys[0]
    assert _pos.memo_keys([a], lambda toks: ["NN"] * len(toks)) is None
    with _pos.tag_memo_disabled():
        assert _pos.memo_keys([a], "spacy:some_model") is None


def test_memo_is_bounded_lru():
    memo = _pos._TagMemo(max_tokens=10)
    memo.put(("b", b"1"), ["NN"] * 4)
    memo.put(("b", b"2"), ["VB"] * 4)
    assert memo.get(("b", b"1")) == ("NN",) * 4  # now the most recent
    memo.put(("b", b"3"), ["JJ"] * 4)  # 12 > 10: the least recent (2) goes
    assert memo.get(("b", b"2")) is None
    assert memo.get(("b", b"1")) == ("NN",) * 4
    assert memo.get(("b", b"3")) == ("JJ",) * 4
    assert memo._n_tokens == 8
    memo.put(("b", b"4"), ["NN"] * 11)  # longer than the bound: not kept
    assert memo.get(("b", b"4")) is None
    assert len(memo) == 2
    assert (memo.hits, memo.misses) == (3, 2)
    memo.clear()
    assert (len(memo), memo._n_tokens, memo.hits) == (0, 0, 0)


def test_memo_under_threads(spacy_label, memo, demo):
    essays = [tokenize_essay(e) for e in demo[0][:40]]
    with _pos.tag_memo_disabled():
        reference = _pos.tag_essays(essays, spacy_label)
    results: dict[int, list[list[str]]] = {}

    def work(k):
        part = essays[k % 4 :: 2] + essays[:5]
        results[k] = _pos.tag_essays(part, spacy_label)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(6))
    for k, tags in results.items():
        expected = [reference[i] for i in range(len(essays))[k % 4 :: 2]] + reference[:5]
        assert tags == expected
    assert memo._n_tokens == sum(len(e.tokens) for e in essays)


def test_sense_counts_equal_nltk_lemma_count(wordnet):
    from nltk.corpus import wordnet as wn

    from sklearn_fairaes.paraphrase import _wordnet

    if _wordnet._sense_counts() is None:
        missing_resource(
            "WordNet's sense counts (cntlist.rev, Debian's wordnet-sense-index): "
            "without them Lemma.count() is used"
        )
    # lemmas of common words (counts > 0) and of rare senses (count 0)
    lemmas = [
        lem
        for word in ("wait", "patient", "car", "run", "good", "time", "longanimity")
        for synset in wn.synsets(word)
        for lem in synset.lemmas()
    ]
    assert any(lem.count() == 0 for lem in lemmas)
    assert any(lem.count() > 10 for lem in lemmas)
    assert [_wordnet._lemma_count(lem) for lem in lemmas] == [lem.count() for lem in lemmas]


def test_sense_counts_fall_back_on_an_unsorted_file(wordnet, monkeypatch):
    from sklearn_fairaes.paraphrase import _wordnet

    class Stream:
        def __init__(self, text):
            self.text = text

        def read(self):
            return self.text

        def close(self):
            pass

    wn = _wordnet._wordnet()[0]
    for text in ("b%1 1 2\na%1 1 3\n", "a%1 1 2\na%1 1 3\n", "a%1 x\n"):
        _wordnet._sense_counts.cache_clear()
        monkeypatch.setattr(wn, "open", lambda name, text=text: Stream(text))
        assert _wordnet._sense_counts() is None
    _wordnet._sense_counts.cache_clear()
    monkeypatch.setattr(wn, "open", lambda name: Stream("a%1 1 2\nb%1 1 3\n"))
    assert _wordnet._sense_counts() == {"a%1": 2, "b%1": 3}
    monkeypatch.undo()
    _wordnet._sense_counts.cache_clear()


def test_an_essay_is_tokenized_once_for_paraphrases_and_features(
    spacy_label, wordnet, monkeypatch, tmp_path
):
    """The chunk's paraphraser and features share the tokenization of each essay."""
    from sklearn_fairaes.features import _tokenize
    from sklearn_fairaes.report._per_essay import PerEssaySpec, chunk_work

    texts = [
        f"Essay {k}: the cat sat on the mat. It was happy, and then it left!"
        for k in range(6)
    ]
    calls: Counter[str] = Counter()
    real = _tokenize._tokenize

    def counted(text):
        calls[text] += 1
        return real(text)

    monkeypatch.setattr(_tokenize, "_tokenize", counted)
    monkeypatch.setattr(_tokenize, "_RECENT", type(_tokenize._RECENT)())
    spec = PerEssaySpec(str(tmp_path), 0, True, tuple(LOCAL_FEATURES[:4]))
    chunk_work(texts, None, spec)
    assert set(calls) >= set(texts)
    assert all(calls[t] == 1 for t in texts), calls


def test_a_remembered_tokenization_is_a_fresh_copy():
    text = "The dog didn't bark. Then it ran!"
    first = tokenize_essay(text)
    reference = (list(first.tokens), list(first.sentences), list(first.words))
    first.tokens.append("X")
    first.words.clear()
    first.sentences.pop()
    again = tokenize_essay(text)
    assert (again.tokens, again.sentences, again.words) == reference
    assert again.tokens == [
        "The",
        "dog",
        "did",
        "n't",
        "bark",
        ".",
        "Then",
        "it",
        "ran",
        "!",
    ]
