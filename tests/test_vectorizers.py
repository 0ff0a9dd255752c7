import pickle
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import missing_resource, require_module
from sklearn import config_context
from sklearn.base import clone
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.pipeline import make_pipeline

from sklearn_fairaes import BowVectorizer, TfidfEssayVectorizer

ESSAYS = [
    "The cars were waiting at the lights.",
    "A car was waiting; the driver waited!",
    "Patience: waiting for @NUM1 minutes in the cars.",
    "",
    "I waited and waited for the bus.",
]


def test_letters_only_lowercase_and_lemmas():
    bow = BowVectorizer(min_df=1, ngram_range=(1, 1)).fit(ESSAYS)
    vocab = set(bow.get_feature_names_out())
    assert "car" in vocab and "cars" not in vocab  # lemmatized
    assert "num" in vocab and "num1" not in vocab  # digits and @ removed
    assert "light" in vocab
    assert "the" in vocab  # stop words kept


@pytest.fixture
def no_wordnet_setup(tmp_path, monkeypatch):
    """An empty data folder and NLTK search path; any download attempt fails the test."""
    import nltk

    from sklearn_fairaes import resources
    from sklearn_fairaes.text import _vectorizers

    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("FAIRAES_DATA", str(empty))
    monkeypatch.setenv("NLTK_DATA", str(empty))
    monkeypatch.setattr(nltk.data, "path", [str(empty)])

    def no_network(*args, **kwargs):
        raise AssertionError("fit tried to reach the network")

    monkeypatch.setattr(resources, "_online", no_network)
    monkeypatch.setattr(nltk, "download", no_network)
    # the lemmatizer and WordNet are set up once per process: set them up here
    caches = [_vectorizers._lemmatizer, resources.ensure_wordnet]
    caches += [getattr(resources, "_wordnet_reader_at", resources.ensure_wordnet)]
    for cached in caches:
        cached.cache_clear()
    yield empty
    for cached in caches:
        cached.cache_clear()


def _files_under(folder):
    return [p for p in folder.rglob("*")]


def test_fit_reads_a_system_wordnet_without_writing_or_downloading(no_wordnet_setup):
    import nltk

    from sklearn_fairaes import resources

    if not any((Path(d) / "index.sense").is_file() for d in resources.SYSTEM_WORDNET_DIRS):
        missing_resource(
            "a system WordNet (apt-get install wordnet-base wordnet-sense-index)"
        )
    bow = BowVectorizer(min_df=1, ngram_range=(1, 1)).fit(ESSAYS)
    assert "car" in bow.get_feature_names_out()  # lemmatized with Debian's WordNet
    assert _files_under(no_wordnet_setup) == []  # nothing copied or created
    assert nltk.data.path == [str(no_wordnet_setup)]  # NLTK's search path as it was


def test_fit_without_wordnet_says_to_run_setup(no_wordnet_setup, monkeypatch):
    import nltk

    from sklearn_fairaes import resources

    monkeypatch.setattr(resources, "SYSTEM_WORDNET_DIRS", ())
    with pytest.raises(LookupError, match=r"'fairaes setup'.*wordnet-base"):
        TfidfEssayVectorizer(min_df=1).fit(ESSAYS)
    assert _files_under(no_wordnet_setup) == []
    assert nltk.data.path == [str(no_wordnet_setup)]
    # without lemmas nothing needs WordNet
    assert len(BowVectorizer(min_df=1, lemmatize=False).fit(ESSAYS).vocabulary_) > 0


def test_equals_sklearn_on_preprocessed_text():
    """Our BOW is sklearn's CountVectorizer applied to the prepared text."""
    from nltk.stem import WordNetLemmatizer

    from sklearn_fairaes.resources import ensure_wordnet

    ensure_wordnet()
    wnl = WordNetLemmatizer()
    import re

    def prep(doc):
        doc = re.sub(r"[^A-Za-z]+", " ", doc.lower())
        toks = re.findall(r"(?u)\b\w\w+\b", doc)
        return " ".join(wnl.lemmatize(t) for t in toks)

    prepared = [prep(e) for e in ESSAYS]
    ref = CountVectorizer(ngram_range=(1, 2), min_df=1).fit(prepared)
    ours = BowVectorizer(min_df=1).fit(ESSAYS)
    assert list(ours.get_feature_names_out()) == list(ref.get_feature_names_out())
    np.testing.assert_array_equal(
        ours.transform(ESSAYS).toarray(), ref.transform(prepared).toarray()
    )
    tf_ref = TfidfVectorizer(ngram_range=(1, 2), min_df=1).fit(prepared)
    tf = TfidfEssayVectorizer(min_df=1).fit(ESSAYS)
    np.testing.assert_allclose(
        tf.transform(ESSAYS).toarray(), tf_ref.transform(prepared).toarray(), atol=1e-15
    )


def test_empty_essay_is_zero_row_and_unknown_words_too():
    tf = TfidfEssayVectorizer(min_df=1).fit(ESSAYS)
    X = tf.transform(["", "zzzz qqqq"])
    assert sp.issparse(X)
    assert X.nnz == 0


def test_options_are_parameters():
    bow = BowVectorizer(min_df=1, lemmatize=False, letters_only=False, ngram_range=(1, 1))
    vocab = set(bow.fit(ESSAYS).get_feature_names_out())
    assert {"cars", "num1"} <= vocab


def test_min_df_default_three():
    docs = ["apple pie", "apple tart", "apple cake", "pie"]
    assert BowVectorizer(ngram_range=(1, 1)).fit(docs).get_feature_names_out().tolist() == [
        "apple"
    ]


def test_clone_pickle_params():
    tf = TfidfEssayVectorizer(min_df=2, sublinear_tf=True)
    c = clone(tf)
    assert c.get_params() == tf.get_params()
    fitted = tf.fit(ESSAYS)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(
        again.transform(ESSAYS).toarray(), fitted.transform(ESSAYS).toarray()
    )


@pytest.mark.parametrize("cls", [BowVectorizer, TfidfEssayVectorizer])
def test_sparse_output_refuses_pandas_as_sklearn_does(cls):
    # sklearn 1.9: CountVectorizer has no set_output, so Pipeline.set_output
    # ("pandas") raises for it; set_output refuses sparse data elsewhere
    # (OneHotEncoder). The vectorizers returned sparse pandas columns before.
    pd = require_module("pandas", "report")
    s = pd.Series(ESSAYS, index=list("abcde"))
    for container in ("pandas", "polars"):
        with pytest.raises(ValueError, match=rf"outputs a sparse matrix, so set_output\(transform='{container}'\)"):  # fmt: skip
            cls(min_df=1).set_output(transform=container)
    est = cls(min_df=1).set_output(transform="default")
    assert sp.issparse(est.fit_transform(s))
    with pytest.raises(ValueError, match="Unable to configure output"):
        make_pipeline(CountVectorizer()).set_output(transform="pandas")
    with pytest.raises(ValueError, match="outputs a sparse matrix"):
        make_pipeline(cls(min_df=1)).set_output(transform="pandas")
    # under a global pandas configuration the output stays sparse, as sklearn's
    with config_context(transform_output="pandas"):
        ours, theirs = cls(min_df=1).fit_transform(s), CountVectorizer().fit_transform(s)
    assert sp.issparse(ours) and sp.issparse(theirs)


@pytest.mark.parametrize("cls", [BowVectorizer, TfidfEssayVectorizer])
def test_bad_input(cls):
    est = cls(min_df=1)
    with pytest.raises(ValueError, match="position 1 of X is None"):
        est.fit(["a b", None])
    est.fit(ESSAYS)
    with pytest.raises(TypeError, match="position 0 of X is bytes"):
        est.transform([b"x"])
    with pytest.raises(TypeError, match="single str"):
        est.transform("an essay")


def test_asap7_vocabulary_within_5_percent_of_paper(asap7):
    """The paper reports 14,974 BOW/TF-IDF features on ASAP prompt 7."""
    n = len(BowVectorizer().fit(asap7["essay"]).vocabulary_)
    assert abs(n - 14_974) / 14_974 < 0.05, n


# --------------------------------------------------------------------------
# letters="unicode" (issue 19): other scripts and accented Latin keep their words
# --------------------------------------------------------------------------
MULTILINGUAL = [
    "Кошка сидит на окне. Кошки спят.",
    "我喜欢学习。今天天气很好！",
    "مُدَرِّسَة جديدة",  # with vowel signs (combining marks)
    "Le café est très bon",
    "le cafe\u0301 naïve 2024",  # a decomposed é: NFC makes it the same term
    "١٢٣ 42",  # digits only (Arabic-Indic and ASCII)
]


@pytest.mark.parametrize("cls", [BowVectorizer, TfidfEssayVectorizer])
def test_unicode_letters_hand_worked_vocabulary(cls):
    vec = cls(letters="unicode", min_df=1, ngram_range=(1, 1), lemmatize=False)
    X = vec.fit_transform(MULTILINGUAL)
    # lower-cased runs of letters (and marks) of two letters or more; the
    # Chinese sentences have no spaces, so each run between punctuation is a term
    expected = sorted(
        ["кошка", "сидит", "на", "окне", "кошки", "спят", "我喜欢学习", "今天天气很好",
         "مُدَرِّسَة", "جديدة", "le", "café", "est", "très", "bon", "naïve"]
    )  # fmt: skip
    assert vec.get_feature_names_out().tolist() == expected
    counts = BowVectorizer(
        letters="unicode", min_df=1, ngram_range=(1, 1), lemmatize=False
    ).fit_transform(MULTILINGUAL)
    counts = counts.toarray()
    assert counts.sum(axis=1).tolist() == [6, 2, 2, 5, 3, 0]  # digits are no letters
    assert counts[:, expected.index("café")].tolist() == [0, 0, 0, 1, 1, 0]
    assert X[5].nnz == 0
    # the paper's ASCII letters lose all of them but the Latin ones, cut apart
    ascii_vocab = cls(min_df=1, ngram_range=(1, 1), lemmatize=False).fit(MULTILINGUAL)
    assert ascii_vocab.get_feature_names_out().tolist() == [
        "bon", "caf", "cafe", "est", "le", "na", "tr", "ve"
    ]  # fmt: skip


def test_unicode_letters_equal_ascii_on_ascii_text():
    # the default stays the paper's, and on ASCII text the two modes agree
    ours = BowVectorizer(min_df=1, letters="unicode").fit(ESSAYS)
    paper = BowVectorizer(min_df=1).fit(ESSAYS)
    assert paper.letters == "ascii"
    assert ours.get_feature_names_out().tolist() == paper.get_feature_names_out().tolist()
    np.testing.assert_array_equal(
        ours.transform(ESSAYS).toarray(), paper.transform(ESSAYS).toarray()
    )


def test_unicode_letters_options():
    # mis-decoded apostrophes are repaired, so "didnâ€™t" is "didn t" as in ASCII mode
    vec = BowVectorizer(letters="unicode", min_df=1, ngram_range=(1, 1), lemmatize=False)
    assert vec.fit(["I didn\u00e2\u20ac\u2122t go"]).get_feature_names_out().tolist() == [
        "didn", "go"
    ]  # fmt: skip
    # with letters_only=False only NFC applies; sklearn's token pattern decides
    raw = BowVectorizer(
        letters="unicode", letters_only=False, min_df=1, ngram_range=(1, 1), lemmatize=False
    ).fit(["cafe\u0301 café 42"])
    assert raw.get_feature_names_out().tolist() == ["42", "café"]
    # a token pattern of one's own is honoured
    own = BowVectorizer(
        letters="unicode", token_pattern=r"(?u)\b\w+\b", min_df=1, ngram_range=(1, 1),
        lemmatize=False,
    ).fit(["я и ты"])  # fmt: skip
    assert own.get_feature_names_out().tolist() == ["и", "ты", "я"]
    # lemmas apply to the words WordNet knows, others pass unchanged
    lem = BowVectorizer(letters="unicode", min_df=1, ngram_range=(1, 1)).fit(
        ["Cars in the cafés"]
    )
    assert lem.get_feature_names_out().tolist() == ["cafés", "car", "in", "the"]
    with pytest.raises(ValueError, match="'letters' parameter of BowVectorizer"):
        BowVectorizer(letters="latin").fit(ESSAYS)
    est = TfidfEssayVectorizer(letters="unicode", min_df=1).fit(MULTILINGUAL)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(
        again.transform(MULTILINGUAL).toarray(), est.transform(MULTILINGUAL).toarray()
    )
    assert clone(est).get_params()["letters"] == "unicode"


def test_asap7_unicode_letters_keep_the_paper_vocabulary(asap7):
    # ASAP's non-ASCII characters are curly quotes and their mis-decodings: the
    # repaired text gives the same terms (unigrams, to keep the test short)
    essays = asap7["essay"]
    paper = BowVectorizer(ngram_range=(1, 1)).fit(essays)
    ours = BowVectorizer(ngram_range=(1, 1), letters="unicode").fit(essays)
    assert ours.vocabulary_ == paper.vocabulary_
