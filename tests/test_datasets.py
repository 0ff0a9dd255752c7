"""Tests of sklearn_fairaes.datasets: the demo corpus and the ASAP reader.

The ASAP tests read the shared data beside the repository (skipped, naming the
file, when absent) and compare with an independent pandas read of the same file;
encoding and error paths use small files written here, with text of our own.
"""

from __future__ import annotations

import csv
import io
import re
import sys

import numpy as np
import pytest
from conftest import ASAP7, DATA_DIR, require_file, require_module
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import pearsonr, spearmanr
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_predict
from sklearn.pipeline import make_pipeline

from sklearn_fairaes.datasets import (
    load_asap,
    load_demo_essays,
    load_demo_prompt,
    load_demo_rubric,
)

ASAP8 = DATA_DIR / "asap-aes" / "asap_aes_prompt8.tsv"
FOLD0 = DATA_DIR / "asap-aes" / "raw_nea_folds" / "fold_0_test.tsv"
FOLD1 = DATA_DIR / "asap-aes" / "raw_nea_folds" / "fold_1_test.tsv"
PLACEHOLDER = re.compile(r"@[A-Z]+\d+")
HEADER = [
    "essay_id",
    "essay_set",
    "essay",
    "rater1_domain1",
    "rater2_domain1",
    "domain1_score",
]


def _words(text):
    return re.findall(r"[a-z']+", text.lower())


@pytest.fixture(scope="module")
def demo():
    require_module("pandas", "report")
    return load_demo_essays()


# --------------------------------------------------------------------------- demo


def test_demo_columns_counts_and_ids(demo):
    assert list(demo.columns) == [
        "essay_id",
        "essay",
        "paraphrase",
        "rater1",
        "rater2",
        "score",
        "group",
    ]
    assert 150 <= len(demo) <= 250
    assert demo["essay_id"].is_unique
    for column in ("essay_id", "rater1", "rater2", "score"):
        assert demo[column].dtype == np.int64
    assert demo["essay"].map(type).eq(str).all()
    assert demo["essay"].str.strip().ne("").all()
    assert demo["essay"].is_unique


def test_demo_bunch_matches_frame(demo):
    bunch = load_demo_essays(as_frame=False)
    assert bunch.data == demo["essay"].tolist()
    assert bunch.paraphrases == demo["paraphrase"].tolist()
    np.testing.assert_array_equal(bunch.target, demo["score"].to_numpy())
    np.testing.assert_array_equal(bunch.raters, demo[["rater1", "rater2"]].to_numpy())
    np.testing.assert_array_equal(bunch.groups, demo["group"].to_numpy(dtype=object))
    np.testing.assert_array_equal(bunch.essay_ids, demo["essay_id"].to_numpy())
    assert bunch.prompt == load_demo_prompt() == demo.attrs["prompt"]
    assert bunch.rubric == load_demo_rubric() == demo.attrs["rubric"]
    assert "not" in bunch.DESCR and "BSD" in bunch.DESCR


def test_demo_prompt_and_rubric_describe_the_scale():
    prompt = load_demo_prompt()
    assert "patient" in prompt and prompt == prompt.strip()
    rubric = load_demo_rubric()
    # Every level of the 0-6 rater scale has a descriptor row in the rubric table.
    levels = {int(m) for m in re.findall(r"^\| (\d) \|", rubric, flags=re.MULTILINE)}
    assert levels == set(range(7))


def test_demo_scores_follow_the_rubric(demo):
    lo, hi = demo.attrs["rater_score_range"]
    assert (lo, hi) == (0, 6)
    assert demo["rater1"].between(lo, hi).all() and demo["rater2"].between(lo, hi).all()
    np.testing.assert_array_equal(demo["score"], demo["rater1"] + demo["rater2"])
    assert demo.attrs["score_range"] == (2 * lo, 2 * hi)
    # The whole scale is used, with most essays in the middle.
    assert demo["score"].min() == 0 and demo["score"].max() == 12
    assert demo["score"].between(4, 9).mean() > 0.5


def test_demo_rater_disagreement_is_present_but_bounded(demo):
    gap = (demo["rater1"] - demo["rater2"]).abs().to_numpy()
    assert gap.max() <= 2
    assert 0.5 <= np.mean(gap == 0) <= 0.85
    assert np.mean(gap == 1) >= 0.1
    assert 1 <= np.sum(gap == 2) <= 0.05 * len(gap)
    # Disagreement goes both ways, not one rater systematically harsher.
    diff = (demo["rater1"] - demo["rater2"]).to_numpy()
    assert (diff > 0).sum() > 0 and (diff < 0).sum() > 0


def test_demo_paraphrases_are_real_rewordings(demo):
    for essay, para in zip(demo["essay"], demo["paraphrase"]):
        assert para.strip(), essay
        assert " ".join(_words(para)) != " ".join(_words(essay)), essay
        e_words, p_words = _words(essay), _words(para)
        # Same content: a good share of the vocabulary is shared ...
        shared = len(set(e_words) & set(p_words)) / len(set(e_words) | set(p_words))
        assert shared > 0.1, essay
        # ... but not a copy with a word or two changed.
        e_bigrams = set(zip(e_words, e_words[1:]))
        p_bigrams = set(zip(p_words, p_words[1:]))
        if len(e_bigrams) >= 5:
            assert len(e_bigrams & p_bigrams) / len(e_bigrams) < 0.85, essay
        assert 0.5 <= len(p_words) / len(e_words) <= 2.0, essay


def test_demo_placeholders_are_preserved_in_paraphrases(demo):
    with_placeholder = 0
    for essay, para in zip(demo["essay"], demo["paraphrase"]):
        found = set(PLACEHOLDER.findall(essay))
        assert found == set(PLACEHOLDER.findall(para)), essay
        with_placeholder += bool(found)
    assert with_placeholder >= 10
    kinds = {re.sub(r"\d+$", "", p) for e in demo["essay"] for p in PLACEHOLDER.findall(e)}
    assert {"@PERSON", "@NUM", "@LOCATION", "@CAPS", "@DATE"} <= kinds


def test_demo_groups_are_imbalanced_but_not_a_proxy(demo):
    shares = demo["group"].value_counts(normalize=True)
    assert set(shares.index) == {"A", "B", "C"}
    assert shares.max() < 0.7 and shares.min() > 0.1
    # Every group spans most of the scale, and group means differ by little.
    for _, scores in demo.groupby("group")["score"]:
        assert scores.max() - scores.min() >= 8
    means = demo.groupby("group")["score"].mean()
    assert means.max() - means.min() < 2.0


def test_demo_lengths_and_special_answers(demo):
    n_words = demo["essay"].str.split().str.len()
    assert n_words.between(40, 200).mean() >= 0.6
    tiny = demo[n_words <= 15]
    assert len(tiny) >= 5 and tiny["score"].max() <= 4
    # Off-topic answers and the copied prompt get 0 from at least one rater.
    assert (demo[["rater1", "rater2"]].min(axis=1) == 0).sum() >= 3


def test_demo_scores_are_learnable(demo):
    essays, y = demo["essay"].tolist(), demo["score"].to_numpy()
    model = make_pipeline(TfidfVectorizer(), Ridge(alpha=1.0))
    pred = cross_val_predict(model, essays, y, cv=KFold(5, shuffle=True, random_state=0))
    assert pearsonr(pred, y)[0] > 0.5
    n_words = demo["essay"].str.split().str.len()
    rho = spearmanr(n_words, y)[0]
    # Longer essays score higher, but length alone does not decide the score.
    assert 0.3 < rho < 0.97


def test_demo_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    bunch = load_demo_essays(as_frame=False)
    assert len(bunch.data) == len(bunch.target) == len(bunch.paraphrases)
    with pytest.raises(ImportError, match=r"sklearn-fairaes\[report\]"):
        load_demo_essays(as_frame=True)


def test_demo_returns_independent_copies(demo):
    first = load_demo_essays()
    first.loc[0, "essay"] = "changed"
    first.attrs["prompt"] = "changed"
    second = load_demo_essays()
    assert second.loc[0, "essay"] == demo.loc[0, "essay"]
    assert second.attrs["prompt"] == load_demo_prompt()


# --------------------------------------------------------------- ASAP (shared data)


def _pandas_read(path):
    """Independent reference: the reading recipe of the data's SOURCE.md."""
    import pandas as pd

    return pd.read_csv(
        path, sep="\t", encoding="utf-8-sig", dtype=str, keep_default_na=False
    )


def test_asap_prompt7_matches_reference(asap7):
    frame = load_asap(ASAP7, prompt=7)
    assert frame.shape == (1569, asap7.shape[1])
    assert list(frame.columns) == list(asap7.columns)
    assert frame["essay"].tolist() == asap7["essay"].tolist()
    for column in asap7.columns.drop("essay"):
        assert frame[column].dtype == np.int64, column
        np.testing.assert_array_equal(frame[column], asap7[column].astype(int))
    np.testing.assert_array_equal(
        frame["domain1_score"], frame["rater1_domain1"] + frame["rater2_domain1"]
    )
    assert (frame["domain1_score"].min(), frame["domain1_score"].max()) == (2, 24)
    assert frame.attrs["encoding"] == "utf-8"
    assert frame.attrs["replaced_bytes"] == 0
    assert frame.attrs["dropped_columns"] == []
    assert frame.attrs["prompt"] == 7


def test_asap_prompt7_bunch(asap7):
    bunch = load_asap(ASAP7, as_frame=False)
    assert len(bunch.data) == 1569
    assert bunch.rater_names == ["rater1_domain1", "rater2_domain1"]
    assert bunch.raters.shape == (1569, 2) and bunch.raters.dtype == np.int64
    np.testing.assert_array_equal(bunch.target, bunch.raters.sum(axis=1))
    assert bunch.trait_names == [f"rater{r}_trait{t}" for r in (1, 2) for t in (1, 2, 3, 4)]
    assert bunch.traits.shape == (1569, 8)
    assert bunch.traits.min() >= 0 and bunch.traits.max() <= 3
    np.testing.assert_array_equal(bunch.essay_ids, asap7["essay_id"].astype(int))
    assert set(bunch.prompts.tolist()) == {7}
    assert "1569 essays" in bunch.DESCR


def test_asap_prompt8_third_rater():
    reference = _pandas_read(require_file(ASAP8))
    frame = load_asap(ASAP8, prompt=8)
    assert len(frame) == 723
    has_third = reference["rater3_domain1"] != ""
    assert frame["rater3_domain1"].dtype == np.float64
    assert frame["rater3_domain1"].notna().sum() == has_third.sum() == 128
    np.testing.assert_array_equal(
        frame.loc[has_third.to_numpy(), "rater3_domain1"],
        reference.loc[has_third, "rater3_domain1"].astype(float),
    )
    assert frame["domain1_score"].dtype == np.int64
    assert {f"rater1_trait{t}" for t in range(1, 7)} <= set(frame.columns)
    bunch = load_asap(ASAP8, prompt=8, as_frame=False)
    assert bunch.raters.shape == (723, 3)
    assert np.isnan(bunch.raters[:, 2]).sum() == 723 - 128


def test_asap_fold_file_all_prompts_and_one_prompt():
    reference = _pandas_read(require_file(FOLD0))
    everything = load_asap(FOLD0, prompt=None)
    assert len(everything) == len(reference) == 2598
    assert list(everything.columns) == list(reference.columns)
    assert everything["essay"].tolist() == reference["essay"].tolist()
    counts = everything["essay_set"].value_counts().sort_index()
    assert counts.to_dict() == reference["essay_set"].astype(int).value_counts().to_dict()
    assert everything.attrs["prompt"] is None

    seven = load_asap(FOLD0, prompt=7)
    assert len(seven) == (reference["essay_set"] == "7").sum() == 314
    # Columns empty for prompt 7 (third rater, traits 5-6, domain 2) are dropped.
    assert "rater3_domain1" in seven.attrs["dropped_columns"]
    assert "rater1_trait5" not in seven.columns and "domain2_score" not in seven.columns
    assert "rater2_trait4" in seven.columns


def test_asap_fold_file_with_a_multiline_essay():
    reference = _pandas_read(require_file(FOLD1))
    frame = load_asap(FOLD1, prompt=None)
    multiline = reference["essay"].str.contains("\n")
    assert multiline.sum() >= 1
    assert frame.loc[multiline.to_numpy(), "essay"].tolist() == (
        reference.loc[multiline, "essay"].tolist()
    )


def test_asap_unknown_prompt_lists_the_available_ones():
    require_file(ASAP7)
    with pytest.raises(ValueError, match=r"prompt 9 is not in .*prompt\(s\) 7; pass one"):
        load_asap(ASAP7, prompt=9)


# ------------------------------------------------------ ASAP (small files written here)


def _write(path, rows, *, header=HEADER, encoding="utf-8"):
    """Write a small ASAP-like file as the fold files are: tabs, CSV quoting, CRLF."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_bytes(buffer.getvalue().encode(encoding))
    return path


TOY_ROWS = [
    [11, 7, "My aunt\u2019s garden took a whole summer to bloom.", 3, 3, 6],
    [12, 7, "We waited at the caf\u00e9 for \u201cages\u201d.", 2, 3, 5],
    [13, 8, "A longer story about a patient coach.", 5, 4, 9],
]


def test_asap_reads_cp1252(tmp_path):
    path = _write(tmp_path / "toy.tsv", TOY_ROWS, encoding="cp1252")
    with pytest.raises(UnicodeDecodeError):
        path.read_bytes().decode("utf-8")
    frame = load_asap(path, prompt=7)
    assert frame.attrs["encoding"] == "cp1252"
    assert frame.attrs["replaced_bytes"] == 0
    assert frame["essay"].tolist() == [TOY_ROWS[0][2], TOY_ROWS[1][2]]
    assert frame["domain1_score"].tolist() == [6, 5]


def test_asap_cp1252_undefined_bytes_become_replacement_characters(tmp_path):
    path = _write(tmp_path / "toy.tsv", TOY_ROWS, encoding="cp1252")
    # 0x9D is undefined in cp1252; Kaggle's file holds a few such bytes.
    path.write_bytes(path.read_bytes().replace(b"garden", b"gar\x9dden"))
    bunch = load_asap(path, prompt=7, as_frame=False)
    assert bunch.encoding == "cp1252" and bunch.replaced_bytes == 1
    assert bunch.data[0] == TOY_ROWS[0][2].replace("garden", "gar\ufffdden")
    # The curly quotes elsewhere still decode as cp1252, not as latin-1 controls.
    assert bunch.data[1] == TOY_ROWS[1][2]


def test_asap_falls_back_to_latin1(tmp_path):
    rows = [[1, 7, "Caf\u00e9 \u00e0 la cr\u00e8me", 2, 2, 4]]
    path = _write(tmp_path / "toy.tsv", rows, encoding="latin-1")
    # Bytes 0x80-0x9F that are not cp1252 punctuation: not a cp1252 file.
    path.write_bytes(path.read_bytes().replace(b"la", b"l\x81\x8d\x8f\x90a"))
    frame = load_asap(path)
    assert frame.attrs["encoding"] == "latin-1"
    assert frame["essay"].iloc[0] == "Caf\u00e9 \u00e0 l\x81\x8d\x8f\x90a cr\u00e8me"


def test_asap_utf8_with_bom_and_explicit_encoding(tmp_path):
    path = _write(tmp_path / "toy.tsv", TOY_ROWS, encoding="utf-8-sig")
    frame = load_asap(path, prompt=8)
    assert frame.attrs["encoding"] == "utf-8-sig"
    assert frame.columns[0] == "essay_id" and frame["essay_id"].tolist() == [13]
    cp = _write(tmp_path / "cp.tsv", TOY_ROWS, encoding="cp1252")
    # An explicit encoding is used as given, even when it is the wrong one.
    forced = load_asap(cp, prompt=7, encoding="latin-1")
    assert forced.attrs["encoding"] == "latin-1"
    assert forced["essay"].iloc[0] == TOY_ROWS[0][2].replace("\u2019", "\x92")


def test_asap_quoting_multiline_and_line_numbers(tmp_path):
    rows = [
        [1, 7, 'She said "wait"\nand then\r\nwe waited\tcalmly.', 2, 3, 5],
        [2, 7, "Second essay.", 3, "x", 6],
    ]
    path = _write(tmp_path / "toy.tsv", rows)
    # The first essay spans lines 2-4, so the bad row starts on line 5.
    with pytest.raises(
        ValueError,
        match=r"column 'rater2_domain1' in data row 2 \(line 5, essay_id 2\) holds 'x'",
    ):
        load_asap(path)
    rows[1][4] = 3
    frame = load_asap(_write(path, rows))
    assert frame["essay"].tolist() == [rows[0][2], "Second essay."]


def test_asap_drops_empty_optional_columns_and_keeps_partial_ones(tmp_path):
    header = [*HEADER, "rater3_domain1", "rater1_trait5", "note"]
    rows = [[1, 7, "One.", 2, 2, 4, "", "", "kept"], [2, 7, "Two.", 3, 3, 6, "4", "", ""]]
    frame = load_asap(_write(tmp_path / "toy.tsv", rows, header=header))
    assert frame.attrs["dropped_columns"] == ["rater1_trait5"]
    assert frame["rater3_domain1"].dtype == np.float64
    assert (
        np.isnan(frame["rater3_domain1"].iloc[0]) and frame["rater3_domain1"].iloc[1] == 4
    )
    assert frame["note"].tolist() == ["kept", ""]
    bunch = load_asap(tmp_path / "toy.tsv", as_frame=False)
    assert bunch.rater_names == ["rater1_domain1", "rater2_domain1", "rater3_domain1"]
    assert bunch.traits.shape == (2, 0) and bunch.trait_names == []


def test_asap_only_checks_the_rows_of_the_requested_prompt(tmp_path):
    rows = [[1, 7, "Fine.", 2, 2, 4], [2, 8, "Broken score.", 2, 2, "n/a"]]
    path = _write(tmp_path / "toy.tsv", rows)
    assert load_asap(path, prompt=7)["domain1_score"].tolist() == [4]
    with pytest.raises(
        ValueError,
        match=r"column 'domain1_score' in data row 2 \(line 3, essay_id 2\) holds 'n/a'",
    ):
        load_asap(path, prompt=8)


@pytest.mark.parametrize(
    "header, rows, match",
    [
        (
            [c for c in HEADER if c != "domain1_score"],
            [[1, 7, "Text.", 2, 2]],
            r"required column\(s\) \['domain1_score'\] not found",
        ),
        (
            HEADER,
            [[1, 7, "Text.", 2, "", 4]],
            r"column 'rater2_domain1' is empty in data row 1",
        ),
        (HEADER, [[1, "seven", "Text.", 2, 2, 4]], r"column 'essay_set' .* holds 'seven'"),
        (HEADER, [[1, 7, "Text.", 2, 2, 4, "extra"]], r"has 7 tab-separated fields"),
        (HEADER, [[5, 7, "A.", 2, 2, 4], [5, 7, "B.", 1, 1, 2]], r"essay_id \[5\] appear"),
    ],
)
def test_asap_bad_files(tmp_path, header, rows, match):
    path = _write(tmp_path / "bad.tsv", rows, header=header)
    with pytest.raises(ValueError, match=match):
        load_asap(path)


def test_asap_bad_paths_and_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"ASAP file not found: .*missing\.tsv"):
        load_asap(tmp_path / "missing.tsv")
    with pytest.raises(ValueError, match=r"is a folder; pass the ASAP file itself"):
        load_asap(tmp_path)
    (tmp_path / "empty.tsv").write_bytes(b"")
    with pytest.raises(ValueError, match=r"the file is empty"):
        load_asap(tmp_path / "empty.tsv")
    path = _write(tmp_path / "toy.tsv", TOY_ROWS)
    for bad in ("7", 7.0, True):
        with pytest.raises(TypeError, match=r"prompt must be an int .* or None"):
            load_asap(path, prompt=bad)
    with pytest.raises(ValueError, match=r"prompt 3 is not in .*prompt\(s\) 7, 8"):
        load_asap(path, prompt=3)
    assert load_asap(path, prompt=np.int64(8))["essay_id"].tolist() == [13]


def test_asap_without_pandas(tmp_path, monkeypatch):
    path = _write(tmp_path / "toy.tsv", TOY_ROWS)
    monkeypatch.setitem(sys.modules, "pandas", None)
    assert load_asap(path, prompt=None, as_frame=False).essay_ids.tolist() == [11, 12, 13]
    with pytest.raises(ImportError, match=r"sklearn-fairaes\[report\]"):
        load_asap(path)


_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(
    essays=st.lists(_TEXT, min_size=1, max_size=5),
    scores=st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=5, max_size=5
    ),
)
def test_asap_round_trips_any_essay_text(tmp_path_factory, essays, scores):
    rows = [
        [i + 1, 1, essay, r1, r2, r1 + r2]
        for i, (essay, (r1, r2)) in enumerate(zip(essays, scores))
    ]
    path = _write(tmp_path_factory.mktemp("rt") / "rt.tsv", rows)
    bunch = load_asap(path, prompt=1, as_frame=False)
    assert bunch.data == essays
    assert bunch.raters.tolist() == [[r[3], r[4]] for r in rows]
    assert bunch.target.tolist() == [r[5] for r in rows]
