"""Input reading and bad data in the audit: refused with exit 2 before any work.

Each test is written from a reproducer of issue 19: a file or corpus that used
to be read silently wrong, or crashed with exit 1 after the whole computation.
The corpora are generated here (tiny, bag of words, ridge, 2 folds).
"""

import csv
import json

import numpy as np
import pandas as pd
import pytest
from conftest import DATA_DIR, require_file

import sklearn_fairaes as sf
from sklearn_fairaes import features
from sklearn_fairaes.cli import BadInput, main, read_table
from sklearn_fairaes.report import AuditInputError

WORDS = (
    "the cat sat on a mat while dogs ran over green hills and birds sang songs of "
    "joy in the warm summer light near an old river"
).split()

RUN = [
    "--representations",
    "bow",
    "--models",
    "ridge",
    "--cv",
    "2",
    "--quiet",
]


def corpus(n=20, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "essay": [" ".join(rng.choice(WORDS, 25)) + "." for _ in range(n)],
            "score": [i % 4 + 1 for i in range(n)],
        }
    )


def write_tsv(tmp_path, frame, name="essays.tsv"):
    path = tmp_path / name
    frame.to_csv(path, sep="\t", index=False)
    return path


def cli(tmp_path, capsys, path, *extra):
    out = tmp_path / "report"
    args = ["audit", str(path), "--text-col", "essay", "--score-col", "score"]
    code = main([*args, *RUN, *map(str, extra), "--out", str(out)])
    err = capsys.readouterr().err
    return code, err, out


@pytest.fixture
def no_computation(monkeypatch):
    """Fail loudly if the audit gets as far as the features (its first computation)."""

    def computed(*args, **kwargs):
        raise AssertionError("the audit started computing before refusing the input")

    monkeypatch.setattr(features.InterpretableFeatures, "fit_transform", computed)


def assert_refused(code, err, out, *fragments):
    assert code == 2, err
    for fragment in fragments:
        assert fragment in err, err
    assert "np.float64" not in err and "array(" not in err
    assert not out.exists()
    assert not list(out.parent.glob(".report.*"))


# -- reading tables ----------------------------------------------------------


def test_unquoted_tsv_with_an_essay_beginning_with_a_quote(tmp_path, capsys):
    """40 rows in, 35 essays out: the rows after the quote were merged, exit 0."""
    rows = [f"Essay number {i} is about cats and dogs.\t{i % 4 + 1}" for i in range(40)]
    rows[10] = '"Dogs are great, she said. Essay ten goes on.\t2'
    rows[15] = 'Essay fifteen quotes "a book" here.\t3'
    path = tmp_path / "essays.tsv"
    path.write_text("essay\tscore\n" + "\n".join(rows) + "\n", encoding="utf-8")
    # the reproducer's premise, independently: pandas alone reads 35 records
    assert len(pd.read_csv(path, sep="\t")) == 35
    with pytest.raises(BadInput, match=r"40 data line\(s\) but 35 record\(s\)"):
        read_table(path)
    code, err, out = cli(tmp_path, capsys, path)
    # the essay that begins with '"' is data row 11, on line 12 (header: line 1)
    assert_refused(code, err, out, "data row 11 (line 12-17)", "line 13 is a complete row")
    assert "remove the leading quote" in err


def test_quoted_tsv_fields_with_line_breaks_and_tabs_still_load(tmp_path):
    frame = pd.DataFrame(
        {
            "essay": [
                'He said "no".\nThen left.',
                '"Quoted" at the start.',
                "A\ttab",
                "Three\nlines\nof text",
            ],
            "score": ["1", "2", "3", "4"],
        }
    )
    path = tmp_path / "quoted.tsv"
    frame.to_csv(path, sep="\t", index=False, quoting=csv.QUOTE_MINIMAL)
    pd.testing.assert_frame_equal(read_table(path), frame)


@pytest.mark.parametrize("suffix", [".tsv", ".csv"])
def test_essay_longer_than_the_csv_field_limit_is_read(tmp_path, suffix):
    """132,000 characters: exit 1 with ``_csv.Error: field larger than field limit``."""
    frame = corpus(4).astype(str)
    frame.loc[1, "essay"] = "Patience is a virtue. " * 6000
    path = tmp_path / f"big{suffix}"
    frame.to_csv(path, sep="\t" if suffix == ".tsv" else ",", index=False)
    limit = csv.field_size_limit()
    assert len(frame.loc[1, "essay"]) > limit
    pd.testing.assert_frame_equal(read_table(path), frame)
    assert csv.field_size_limit() == limit  # the process-wide limit is put back


@pytest.mark.parametrize(
    "name",
    [
        "asap_aes_prompt7.tsv",
        "asap_aes_prompt8.tsv",
        "prompt7_rubric_shinyqda.tsv",
        "prompt8_rubric_shinyqda.tsv",
    ],
)
def test_real_asap_files_load_with_identical_content(name):
    path = require_file(DATA_DIR / "asap-aes" / name)
    expected = pd.read_csv(
        path, sep="\t", dtype=str, keep_default_na=False, encoding="utf-8-sig"
    )
    pd.testing.assert_frame_equal(read_table(path), expected)


def test_real_fold_file_with_two_essays_merged_is_refused():
    """fold_1's essay 10534 begins with an unbalanced '"' and swallows essay 10540."""
    path = require_file(DATA_DIR / "asap-aes" / "raw_nea_folds" / "fold_1_test.tsv")
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    # independent of the reader: both lines are complete rows of 28 fields
    assert [len(lines[n - 1].split("\t")) for n in (1760, 1761)] == [28, 28]
    assert [lines[n - 1].split("\t")[0] for n in (1760, 1761)] == ["10534", "10540"]
    with pytest.raises(BadInput, match=r"data row 1759 \(line 1760-1761\)"):
        read_table(path)


# -- scores --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("inf", "holds a non-finite score in data row 3 ('inf'"),
        ("-inf", "holds a non-finite score in data row 3 ('-inf'"),
        ("1e308", "spans 1 to 1e+308, more than 1000 score points: data row 3 holds"),
        ("-1e308", "spans -1e+308 to 4, more than 1000 score points: data row 3"),
        ("1e12", "spans 1 to 1e+12, more than 1000 score points: data row 3"),
    ],
)
def test_absurd_human_score_is_refused(tmp_path, capsys, no_computation, value, fragment):
    frame = corpus().astype({"score": object})
    frame.loc[2, "score"] = value
    code, err, out = cli(tmp_path, capsys, write_tsv(tmp_path, frame))
    assert_refused(code, err, out, "score column 'score'", fragment)


def test_rater_score_of_1e12_is_refused(tmp_path, capsys, no_computation):
    """It used to end in a MemoryError (a score range of 10^12 labels)."""
    frame = corpus()
    frame["r1"] = frame["score"].astype(float)
    frame.loc[5, "r1"] = 1e12
    frame["r2"] = frame["score"]
    code, err, out = cli(
        tmp_path, capsys, write_tsv(tmp_path, frame), "--rater-cols", "r1,r2"
    )
    assert_refused(code, err, out, "rater column 'r1' spans 1 to 1e+12", "data row 6")


def test_rater_score_outside_the_declared_scale_is_refused(
    tmp_path, capsys, no_computation
):
    """A rater's 30 on a 0-24 scale widened the raters' scale: another human-human QWK."""
    frame = corpus().assign(r1=lambda d: d["score"], r2=lambda d: 5 - d["score"])
    frame.loc[3, "r1"] = 30
    path = write_tsv(tmp_path, frame)
    code, err, out = cli(
        tmp_path, capsys, path, "--score-range", "0,24", "--rater-cols", "r1,r2"
    )
    assert_refused(
        code,
        err,
        out,
        "rater column 'r1' holds 30 in data row 4, outside the declared score scale "
        "0 to 24",
    )


def test_raters_whose_sum_is_the_score_may_go_below_its_low_end(no_computation):
    """ASAP prompt 1: scores 2-12 are the sum of two raters' 1-6."""
    frame = corpus().assign(r1=lambda d: d["score"], r2=lambda d: d["score"] % 3 + 1)
    frame["score"] = frame["r1"] + frame["r2"]
    frame["engine"] = frame["score"]
    options = dict(
        text_col="essay", score_col="score", systems=["engine"], rater_cols=["r1", "r2"]
    )
    # accepted: the audit gets as far as its first computation
    with pytest.raises(AssertionError, match="started computing"):
        sf.audit(frame, score_range=(2, 8), **options)
    frame.loc[5, "r2"] = 0
    with pytest.raises(
        AuditInputError,
        match=r"rater column 'r2' holds 0 in data row 6, outside 1 to 8, the declared "
        r"score scale 2 to 8 from half its low end",
    ):
        sf.audit(frame, score_range=(2, 8), **options)


def test_score_outside_the_declared_scale_is_refused(tmp_path, capsys, no_computation):
    frame = corpus()
    frame.loc[7, "score"] = 9
    path = write_tsv(tmp_path, frame)
    code, err, out = cli(tmp_path, capsys, path, "--score-range", "1,4")
    assert_refused(
        code, err, out, "holds 9 in data row 8, outside the declared score scale 1 to 4"
    )
    code, err, out = cli(tmp_path, capsys, path, "--score-range", "one,four")
    assert_refused(code, err, out, "--score-range must be two numbers low,high")
    code, err, out = cli(tmp_path, capsys, path, "--score-range", "0,5000")
    assert_refused(code, err, out, "score_range (0, 5000) has 5001 score points")


@pytest.mark.parametrize(
    ("raters", "fragment"),
    [
        ("r1,r1", "rater_cols names column 'r1' twice"),
        ("r1,r2", "rater columns 'r1' and 'r2' are identical in every row"),
    ],
)
def test_identical_rater_columns_are_refused(
    tmp_path, capsys, no_computation, raters, fragment
):
    """They gave a human-human QWK of 1.0."""
    frame = corpus().assign(r1=lambda d: d["score"], r2=lambda d: d["score"])
    code, err, out = cli(
        tmp_path, capsys, write_tsv(tmp_path, frame), "--rater-cols", raters
    )
    assert_refused(code, err, out, fragment)


@pytest.mark.parametrize(
    ("systems", "fragment"),
    [
        ("human scores=engine", "system name 'human scores' is reserved"),
        ("Human  Scores=engine", "system name 'Human  Scores' is reserved"),
        ("POOLED=engine", "system name 'POOLED' is reserved"),
        ("Ridge=engine", "system name 'Ridge' is reserved for a trained baseline"),
        ("Engine=engine,engine", "system 'Engine' and system 'engine' have the same name"),
    ],
)
def test_system_named_like_a_reserved_row_is_refused(
    tmp_path, capsys, no_computation, systems, fragment
):
    """'human scores' showed as a second human-scores row in the summary and report."""
    frame = corpus().assign(engine=lambda d: d["score"])
    code, err, out = cli(
        tmp_path, capsys, write_tsv(tmp_path, frame), "--system-cols", systems
    )
    assert_refused(code, err, out, fragment)


def test_api_refuses_reserved_and_duplicate_names(no_computation):
    frame = corpus().assign(engine=lambda d: d["score"])
    for systems, match in [
        ({"human scores": "engine"}, r"system name 'human scores' is reserved"),
        ({" HUMAN ": "engine"}, r"system name ' HUMAN ' is reserved"),
        ({"a b": "engine", "A  B": "engine"}, r"system 'a b' and system 'A  B' have"),
    ]:
        with pytest.raises(AuditInputError, match=match):
            sf.audit(frame, text_col="essay", score_col="score", systems=systems)


def test_blank_paraphrases_are_refused(tmp_path, capsys, no_computation):
    """40 of 60 blank: the paraphrase figures were reported over every essay, exit 0."""
    frame = corpus(14).assign(para=lambda d: d["essay"])
    frame.loc[:11, "para"] = ""
    frame.loc[12, "para"] = "  \t "
    code, err, out = cli(
        tmp_path, capsys, write_tsv(tmp_path, frame), "--paraphrase-col", "para"
    )
    assert_refused(
        code,
        err,
        out,
        "paraphrase column 'para' is blank in data row(s) 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,"
        " ... (13 row(s) in all)",
    )
    with pytest.raises(AuditInputError, match=r"paraphrases is blank in data row\(s\) 3 "):
        sf.audit(
            corpus(4), text_col="essay", score_col="score", paraphrases=["a", "b", "", "d"]
        )


def test_all_scores_equal_is_refused(tmp_path, capsys, no_computation):
    code, err, out = cli(tmp_path, capsys, write_tsv(tmp_path, corpus().assign(score=3)))
    assert_refused(code, err, out, "holds the same score (3) in every row")


# -- corpora the analyses are not defined on -----------------------------------


@pytest.mark.parametrize("cv", [2, 3])
def test_three_essays_are_refused(tmp_path, capsys, no_computation, cv):
    path = write_tsv(tmp_path, corpus(3))
    code, err, out = cli(tmp_path, capsys, path, "--cv", cv)
    assert_refused(code, err, out, "the audit needs at least 4 essays")


def test_more_folds_than_essays_is_refused(tmp_path, capsys, no_computation):
    code, err, out = cli(tmp_path, capsys, write_tsv(tmp_path, corpus(6)), "--cv", 7)
    assert_refused(
        code, err, out, "cv must be an int between 2 and the number of essays (6)"
    )


def test_numeric_text_column_is_refused(tmp_path, capsys, no_computation):
    frame = corpus().assign(essay=[str(1000 + 7 * i) for i in range(20)])
    code, err, out = cli(tmp_path, capsys, write_tsv(tmp_path, frame))
    assert_refused(code, err, out, "text column 'essay' holds numbers in every row")


def test_essays_without_words_are_refused_before_the_features(
    tmp_path, capsys, no_computation
):
    frame = corpus().assign(essay=[f"{i} + {3 * i} = {4 * i}" for i in range(20)])
    code, err, out = cli(tmp_path, capsys, write_tsv(tmp_path, frame))
    assert_refused(code, err, out, "representation 'bow' keeps no word of the essays")


def test_unreachable_grammar_server_is_refused_up_front(tmp_path, capsys, no_computation):
    # port 9 (discard) on the loopback: nothing listens, the connection is refused
    url = "http://127.0.0.1:9"
    code, err, out = cli(tmp_path, capsys, write_tsv(tmp_path, corpus()), "--grammar", url)
    assert_refused(code, err, out, f"grammar='{url}'", "no LanguageTool server answered")


@pytest.mark.parametrize("failure", ["500", "garbage"])
def test_grammar_server_failing_mid_run_exits_2_naming_it_and_the_essay(
    tmp_path, capsys, monkeypatch, failure
):
    """It passes the start-up check, then fails from essay 16 on (issue 31: exit 1)."""
    from lt_server import LoopbackLanguageTool

    from sklearn_fairaes.features import _grammar

    monkeypatch.setattr(_grammar, "RETRY_DELAYS", (0.0, 0.0))
    with LoopbackLanguageTool(fail_from=15, failure=failure) as lt:
        path = write_tsv(tmp_path, corpus())
        code, err, out = cli(tmp_path, capsys, path, "--grammar", lt.url)
        n_checks = len(lt.check_requests())
    assert_refused(
        code,
        err,
        out,
        f"(--grammar): the LanguageTool server at {lt.url} failed on data row 16 and "
        f"on 2 retries",
        "leave grammar out",
    )
    assert "internal error" not in err
    assert n_checks == 15 + 3  # the essay was tried three times, and no essay after it


def test_grammar_server_failing_for_a_moment_is_retried(monkeypatch):
    from lt_server import LoopbackLanguageTool

    from sklearn_fairaes.features import _grammar

    monkeypatch.setattr(_grammar, "RETRY_DELAYS", (0.0, 0.0))
    frame = corpus(8)
    with LoopbackLanguageTool(fail_from=3, fail_times=2) as lt:
        result = sf.audit(
            frame,
            text_col="essay",
            score_col="score",
            representations=["bow"],
            models=["ridge"],
            cv=2,
            grammar=lt.url,
        )
        n_checks = len(lt.check_requests())
    assert n_checks == 8 + 2
    assert "language_errors" in result.tables["features"].columns


def test_api_refuses_like_the_command_line():
    frame = corpus()
    frame.loc[0, "score"] = 10**12
    with pytest.raises(AuditInputError, match=r"data row 1 holds 1e\+12"):
        sf.audit(frame, text_col="essay", score_col="score", models=["ridge"])
    with pytest.raises(AuditInputError, match=r"score_range must be \(low, high\)"):
        sf.audit(corpus(), text_col="essay", score_col="score", score_range=(4, 1))


# -- notes of a run: empty vectors, degenerate distances, the pair metrics' warnings


@pytest.fixture(scope="module")
def odd_corpus():
    """Identical English essays and three in scripts BOW does not keep (ASCII letters)."""
    essays = ["the cat sat on the mat."] * 17 + [
        "Привет, как дела сегодня",
        "你好世界今天很好",
        "مرحبا بالعالم اليوم",
    ]
    scores = [1, 2, 3, 4] * 5
    return pd.DataFrame({"essay": essays, "score": scores})


@pytest.fixture(scope="module")
def odd_result(odd_corpus):
    return sf.audit(
        odd_corpus,
        text_col="essay",
        score_col="score",
        representations=["bow"],
        models=["ridge"],
        cv=2,
        paraphrases="essay",
    )


def test_empty_vectors_are_noted(odd_result):
    notes = " ".join(odd_result.meta["notes"])
    assert "bow: 3 essay(s) became empty (all-zero) vectors" in notes
    assert "(ids '18', '19', '20')" in notes
    assert odd_result.meta["empty_vectors"] == {"bow": 3}


def test_mostly_equal_distances_are_flagged(odd_result, tmp_path):
    # 17 identical essays: C(17, 2) = 136 of the C(20, 2) = 190 pairs at distance
    # 0, and the 3 empty vectors are at distance 0 from each other: 139/190 = 73%
    (warning,) = odd_result.meta["warnings"]
    assert warning["representation"] == "bow"
    assert warning["message"].startswith("bow: 73% of the essay pairs are at distance 0")
    odd_result.save(tmp_path)
    meta = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["meta"]
    assert meta["warnings"] == odd_result.meta["warnings"]
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.count("73% of the essay pairs are at distance 0") >= 2  # overview + section
    assert 'class="warning"' in html
    assert "warning: bow: 73%" in odd_result.summary()


def test_pair_metric_warnings_become_notes(recwarn):
    """The audit silenced them; one-word essays of distinct words are all at distance 1.

    Min-max normalisation of a constant distance is undefined
    (``lipschitz_fraction`` warns); the run must say so, for the model and for
    the human scores, in its notes, and emit no warning itself.
    """
    frame = pd.DataFrame(
        {
            "essay": ["Alpha.", "Bravo.", "Charlie.", "Delta.", "Echo.", "Foxtrot."],
            "score": [1, 2, 3, 4, 1, 2],
        }
    )
    result = sf.audit(
        frame,
        text_col="essay",
        score_col="score",
        representations={"bow": sf.text.BowVectorizer(min_df=1, ngram_range=(1, 1))},
        models=["ridge"],
        cv=2,
        paraphrases="essay",
        score_range=(0, 4),
    )
    assert result.meta["score_range"] == [0.0, 4.0]
    assert result.meta["score_range_source"] == "declared"
    assert not any("inferred" in n for n in result.meta["notes"])
    (note,) = [n for n in result.meta["notes"] if n.startswith("Pair metrics:")]
    assert "every pair has the same distance (1.0)" in note
    assert note.endswith("(bow + ridge; bow, human scores).")
    assert result.meta["warnings"][0]["message"].startswith(
        "bow: 100% of the essay pairs are at one same distance"
    )
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


def test_inferred_scale_is_recorded(odd_result, tmp_path):
    assert odd_result.meta["score_range"] == [1.0, 4.0]
    assert odd_result.meta["score_range_source"] == "inferred"
    assert any("Score scale 1 to 4 inferred" in n for n in odd_result.meta["notes"])
    html = odd_result.to_html()
    assert "1 to 4, inferred from the human scores" in html


# -- essays in a script the vocabulary representations do not keep -------------

GREEK = (
    "Η υπομονή είναι αρετή και περίμενα πολύ καιρό στην ουρά για το φαγητό μου",
    "Ο φίλος μου ήταν πολύ υπομονετικός όταν του έμαθα να κολυμπάει στη θάλασσα",
)


@pytest.fixture(scope="module")
def greek_corpus():
    """Six essays in Greek, each with one English word: 'patience'."""
    frame = corpus()
    for k in range(6):
        frame.loc[k, "essay"] = f"{GREEK[k % 2]} (patience) {GREEK[(k + 1) % 2][: 20 + k]}"
    return frame


def greek_audit(frame, **options):
    return sf.audit(
        frame,
        text_col="essay",
        score_col="score",
        representations=["tfidf"],
        models=["ridge"],
        cv=2,
        paraphrases="essay",
        **options,
    )


def test_essays_mostly_in_another_script_are_noted(greek_corpus):
    """Each became the vector of 'patience' alone, with no note: no vector was empty."""
    essays = greek_corpus["essay"].tolist()
    X = sf.TfidfEssayVectorizer().fit_transform(essays).toarray()
    assert (X[:6] == X[0]).all() and X[0].any()  # the premise: one same vector
    result = greek_audit(greek_corpus)
    assert result.meta["empty_vectors"] == {"tfidf": 0}
    assert result.meta["letters_dropped"] == {"tfidf": 6}
    assert result.meta["letters"] == "ascii"
    (note,) = [n for n in result.meta["notes"] if "letters" in n]
    assert note.startswith(
        "tfidf: 6 essay(s) are written mostly in letters that the representation does "
        "not keep (ids '1', '2', '3', '4', '5', '6';"
    )
    assert note.endswith(
        'letters="unicode" (--letters unicode) keeps the letters of every script.'
    )
    html = result.to_html()
    assert "6 essay(s) are written mostly in letters" in html
    assert "A-Z only, as in the paper" in html


def test_letters_unicode_keeps_the_other_script(greek_corpus):
    result = greek_audit(greek_corpus, letters="unicode")
    assert result.meta["letters_dropped"] == {"tfidf": 0}
    assert result.meta["letters"] == "unicode"
    assert not [n for n in result.meta["notes"] if "letters" in n]
    with pytest.raises(
        AuditInputError,
        match=r"letters \(--letters\) must be a str among \['ascii', 'unicode'\], got 'latin'",
    ):
        greek_audit(greek_corpus, letters="latin")


def test_cli_letters_option_reaches_the_audit(tmp_path, capsys, monkeypatch):
    from sklearn_fairaes import report

    seen = {}

    def audit(data, **options):
        seen.update(options)
        raise AuditInputError("stop here (test)")

    monkeypatch.setattr(report, "audit", audit)
    path = write_tsv(tmp_path, corpus())
    code, err, out = cli(tmp_path, capsys, path, "--letters", "unicode")
    assert_refused(code, err, out, "stop here (test)")
    assert seen["letters"] == "unicode"
    code, err, out = cli(tmp_path, capsys, path)
    assert seen["letters"] == "ascii"
    with pytest.raises(SystemExit, match="2"):
        cli(tmp_path, capsys, path, "--letters", "latin")
    assert "invalid choice: 'latin'" in capsys.readouterr().err
