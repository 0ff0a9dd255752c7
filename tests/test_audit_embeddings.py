"""Your own representation (``embeddings=``, ``--embeddings``) and skipping the slow parts.

Issue 34 item 6. The corpora are generated here (tiny, bag of words); the
vectors are random or the package's own TF-IDF vectors exported to a file,
so that the embeddings route can be checked against the built-in one.
"""

import numpy as np
import pandas as pd
import pytest

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.report import AuditInputError
from sklearn_fairaes.report._embeddings import GivenEmbeddings

WORDS = (
    "the cat sat on a mat while dogs ran over green hills and birds sang songs of "
    "joy in the warm summer light near an old river"
).split()

# no features, no paraphrases, no intervals: seconds per audit
FAST = {"features": False, "paraphrases": False, "n_bootstrap": 0, "cache": False}


def corpus(n=24, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "essay_id": [f"e{100 + i}" for i in range(n)],
            "essay": [" ".join(rng.choice(WORDS, 25)) + "." for _ in range(n)],
            "score": [i % 4 + 1 for i in range(n)],
            "engine": [(i * 7) % 4 + 1 for i in range(n)],
        }
    )


def vectors(n=24, d=5, seed=1):
    return np.random.default_rng(seed).normal(size=(n, d))


def run(data, **kw):
    args = {
        "text_col": "essay",
        "score_col": "score",
        "systems": ["engine"],
        "id_col": "essay_id",
        **FAST,
        **kw,
    }
    return sf.audit(data, **args)


def as_table(data, X, *, extra=0, seed=2):
    """The vectors as a table keyed by id, rows shuffled, ``extra`` unknown ids added."""
    table = pd.DataFrame(X, columns=[f"d{k}" for k in range(X.shape[1])])
    table.insert(0, "essay_id", data["essay_id"].to_numpy())
    if extra:
        more = pd.DataFrame(vectors(extra, X.shape[1], seed=9), columns=table.columns[1:])
        more.insert(0, "essay_id", [f"other{k}" for k in range(extra)])
        table = pd.concat([table, more], ignore_index=True)
    return table.sample(frac=1.0, random_state=seed).reset_index(drop=True)


PAIR_TABLES = ("lipschitz", "agreement", "extreme_pairs")


def test_npy_and_csv_keyed_by_id_give_identical_tables(tmp_path):
    data = corpus()
    X = vectors()
    np.save(tmp_path / "own.npy", X)
    # shuffled rows and two ids the data does not have: matched by id
    as_table(data, X, extra=2).to_csv(tmp_path / "own.csv", index=False)
    a = run(data, representations=[], embeddings={"own": str(tmp_path / "own.npy")})
    b = run(data, representations=[], embeddings={"own": tmp_path / "own.csv"})
    for name in PAIR_TABLES:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    assert set(a.tables["lipschitz"]["representation"]) == {"own"}
    assert a.meta["representations"] == ["own"]
    assert a.meta["embeddings"] == {"own": {"source": "own.npy", "dims": 5}}
    # a permuted array is another set of vectors: the tables must see it
    c = run(data, representations=[], embeddings={"own": X[::-1].copy()})
    assert not a.tables["extreme_pairs"].equals(c.tables["extreme_pairs"])


def test_exported_tfidf_vectors_give_the_tfidf_lipschitz_table(tmp_path):
    data = corpus(30)
    X = sf.TfidfEssayVectorizer().fit_transform(list(data["essay"]))
    np.save(tmp_path / "tfidf.npy", X.toarray())
    kw = {"models": ["ridge"], "cv": 3}
    builtin = run(data, representations=["tfidf"], **kw)
    own = run(
        data,
        representations=[],
        embeddings={"mine": str(tmp_path / "tfidf.npy")},
        **kw,
    )
    a = builtin.tables["lipschitz"]
    b = own.tables["lipschitz"].replace({"representation": {"mine": "tfidf"}})
    assert list(a["system"]) == list(b["system"]) == ["engine", "ridge", "human"]
    # the given scores and the human scores: the same pairs, the same distances
    exact = a["system"] != "ridge"
    pd.testing.assert_frame_equal(a[exact], b[exact])
    # ridge trained on the sparse and on the dense copy: solvers differ in the last bits
    num = a.select_dtypes("number").columns
    np.testing.assert_allclose(
        a.loc[~exact, num].to_numpy(float), b.loc[~exact, num].to_numpy(float), rtol=1e-6
    )


def test_embeddings_beside_builtin_representations_and_sections_that_leave_them_out():
    data = corpus()
    res = run(
        data,
        representations=["bow"],
        embeddings={"own": vectors()},
        paraphrases=None,  # WordNet paraphrases: the section runs for bow only
        models=["ridge"],
        cv=2,
        perturbations=("typos",),
        n_perturbation_essays=6,
    )
    assert set(res.tables["lipschitz"]["representation"]) == {"bow", "own"}
    assert list(res.tables["paraphrase"]["representation"]) == ["bow"]
    assert set(res.tables["perturbation"]["representation"]) == {"bow"}
    notes = " ".join(res.meta["notes"])
    assert "Paraphrase robustness: own is your own vectors" in notes
    assert "Counterfactual edits: own is your own vectors" in notes
    # the trained baseline is trained on the user's vectors too
    agreement = res.tables["agreement"]
    assert set(agreement[agreement["system"] == "ridge"]["representation"]) == {
        "bow",
        "own",
    }


def test_only_embeddings_the_paraphrase_section_says_why():
    res = run(corpus(), representations=[], embeddings={"own": vectors()}, paraphrases=None)
    assert "own vectors (embeddings)" in res.meta["absent_sections"]["paraphrase"]


# -- bad input: refused before any work, naming the file and the rows ---------------


def _bad(tmp_path, make):
    """Write what ``make(data, X)`` returns (name, content) and audit it."""
    data = corpus()
    name, content = make(data, vectors())
    path = tmp_path / name
    if isinstance(content, np.ndarray):
        np.save(path, content)
    elif content is not None:
        content.to_csv(path, index=False)
    return data, path


def _nan_rows(data, X):
    X[[3, 7]] = np.nan
    X[9, 0] = np.inf
    return "v.npy", X


def _zero_rows(data, X):
    X[[4]] = 0.0
    return "v.npy", X


def _missing_ids(data, X):
    table = as_table(data, X)
    return "v.csv", table[~table["essay_id"].isin(["e101", "e117"])]


def _text_column(data, X):
    table = as_table(data, X)
    table["d2"] = table["d2"].astype(str)
    table.loc[5, "d2"] = "twelve"
    return "v.csv", table


BAD = [
    ("rows", lambda d, X: ("v.npy", X[:-1]), r"v\.npy.*23 rows for 24 data rows"),
    (
        "nan",
        _nan_rows,
        r"v\.npy.*3 vector\(s\) hold NaN or infinite values: data row 4 \(id e103\); "
        r"data row 8 \(id e107\); data row 10 \(id e109\)",
    ),
    ("zero", _zero_rows, r"all zeros.*undefined: data row 5 \(id e104\)"),
    (
        "ids",
        _missing_ids,
        r"v\.csv.*2 of the data's 24 essay ids have no vector in column 'essay_id' "
        r"\(ids e101, e117\)",
    ),
    ("text", _text_column, r"v\.csv.*column 'd2' is not numeric \(file row 7: 'twelve'\)"),
    ("missing", lambda d, X: ("absent.npy", None), r"absent\.npy\): no such file"),
    ("suffix", lambda d, X: ("v.txt", pd.DataFrame(X)), r"unknown file type '\.txt'"),
]


@pytest.mark.parametrize(("case", "make", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_embeddings_are_refused_naming_file_and_rows(tmp_path, case, make, message):
    data, path = _bad(tmp_path, make)
    with pytest.raises(AuditInputError, match=message):
        run(data, representations=["bow"], embeddings={"own": str(path)})


@pytest.mark.parametrize("name", ["tfidf", "bow"])
def test_a_name_of_a_builtin_representation_is_refused(name):
    with pytest.raises(AuditInputError, match=f"embeddings '{name}': the name is already"):
        run(corpus(), representations=["bow"], embeddings={name: vectors()})


def test_a_table_needs_the_id_column():
    data = corpus()
    table = as_table(data, vectors())
    with pytest.raises(AuditInputError, match="no id column is given; pass id_col"):
        run(data, id_col=None, representations=[], embeddings={"own": table})


def test_no_representation_at_all_is_refused():
    with pytest.raises(AuditInputError, match="representations is empty"):
        run(corpus(), representations=[])


def test_refused_before_any_work(tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("a representation was fitted before the input was checked")

    monkeypatch.setattr(sf.BowVectorizer, "fit_transform", boom)
    with pytest.raises(AuditInputError, match="3 rows for 24 data rows"):
        run(corpus(), representations=["bow"], embeddings={"own": vectors(3)})


def _cli(tmp_path, capsys, data, *extra):
    path = tmp_path / "essays.csv"
    data.to_csv(path, index=False)
    args = ["audit", str(path), "--text-col", "essay", "--score-col", "score"]
    args += ["--system-cols", "engine", "--id-col", "essay_id", "--bootstrap", "0"]
    args += ["--no-features", "--no-paraphrases", "--no-cache", "--quiet"]
    code = main([*args, *map(str, extra), "--out", str(tmp_path / "report")])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "message"),
    [(b[1], b[2]) for b in BAD if b[0] in ("rows", "nan", "ids", "missing")],
)
def test_cli_bad_embeddings_exit_2(tmp_path, capsys, make, message):
    data, path = _bad(tmp_path, make)
    code, err = _cli(tmp_path, capsys, data, "--embeddings", f"own={path}")
    assert code == 2
    assert __import__("re").search(message, err), err
    assert not (tmp_path / "report" / "report.html").exists()


@pytest.mark.parametrize("entry", ["own", "=v.npy", "own="])
def test_cli_embeddings_entry_needs_name_and_file(tmp_path, capsys, entry):
    code, err = _cli(tmp_path, capsys, corpus(), "--embeddings", entry)
    assert code == 2
    assert "expected NAME=FILE" in err


def test_cli_embeddings_only(tmp_path, capsys):
    data = corpus()
    as_table(data, vectors()).to_csv(tmp_path / "own.csv", index=False)
    code, err = _cli(
        tmp_path, capsys, data, "--representations", "", "--embeddings",
        f"engine_vectors={tmp_path / 'own.csv'}",
    )  # fmt: skip
    assert code == 0, err
    res = sf.AuditResult.load(tmp_path / "report")
    assert set(res.tables["lipschitz"]["representation"]) == {"engine_vectors"}
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "engine_vectors: 5 dimensions from own.csv, cosine distance" in html


# -- skipping the features and the paraphrases ---------------------------------------


def test_no_features_and_no_paraphrases_skip_the_work_and_say_so(monkeypatch):
    from sklearn_fairaes.features import InterpretableFeatures
    from sklearn_fairaes.paraphrase import WordNetParaphraser

    def boom(*args, **kwargs):
        raise AssertionError("skipped work ran")

    monkeypatch.setattr(InterpretableFeatures, "fit_transform", boom)
    monkeypatch.setattr(WordNetParaphraser, "fit_transform", boom)
    res = run(corpus(), representations=["bow"])
    skipped = res.meta["skipped"]
    assert skipped == {
        "features": "skipped on request: features=False (--no-features)",
        "paraphrases": "skipped on request: paraphrases=False (--no-paraphrases)",
    }
    absent = res.meta["absent_sections"]
    assert absent["paraphrase"] == "the paraphrases were " + skipped["paraphrases"]
    assert "the features were skipped on request" in absent["errors"]
    assert "feature_profile" not in res.tables
    assert len(res.tables["extreme_pairs"])
    assert res.meta["features"] == []
    left_out = {o["feature"]: o["reason"] for o in res.meta["omitted_features"]}
    assert left_out["word_count"] == skipped["features"]
    html = res.to_html()
    assert "Interpretable features" in html
    assert html.count("skipped on request: features=False (--no-features)") >= 2
    assert "skipped on request: paraphrases=False (--no-paraphrases)" in html


def test_without_skipping_the_features_run(monkeypatch):
    # the counterpart: the same audit with features=True computes them
    res = run(corpus(), representations=["bow"], features=True)
    assert res.meta["features"]
    assert "features" not in res.meta["skipped"]
    assert "feature_profile" in res.tables


def test_no_features_keeps_the_covariates_in_the_error_section():
    data = corpus().assign(length=lambda d: d["essay"].str.len().astype(float))
    res = run(data, representations=["bow"], covariate_cols="length")
    assert "errors" not in res.meta["absent_sections"]
    assert set(res.tables["error_correlates"]["variable"]) == {"length"}


def test_cli_no_features_no_paraphrases(tmp_path, capsys, monkeypatch):
    from sklearn_fairaes.features import InterpretableFeatures

    monkeypatch.setattr(
        InterpretableFeatures, "fit_transform", lambda *a, **k: 1 / 0
    )  # fmt: skip
    code, err = _cli(tmp_path, capsys, corpus(), "--representations", "bow")
    assert code == 0, err
    res = sf.AuditResult.load(tmp_path / "report")
    assert set(res.meta["skipped"]) == {"features", "paraphrases"}


def test_paraphrase_col_and_no_paraphrases_exclude_each_other(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        _cli(tmp_path, capsys, corpus(), "--paraphrase-col", "essay")
    assert exc.value.code == 2


def test_paraphrases_true_is_refused():
    with pytest.raises(AuditInputError, match="paraphrases=True: give a column name"):
        run(corpus(), representations=["bow"], paraphrases=True)


def test_given_embeddings_repr():
    emb = GivenEmbeddings("own", np.ones((3, 2)), "own.npy")
    assert repr(emb) == "GivenEmbeddings(own: 3 essays x 2 dims from own.npy)"


def test_parquet_is_read_as_a_table_keyed_by_id(tmp_path, monkeypatch):
    # pyarrow is optional: the reader itself is stood in for, the routing is tested
    import sys
    import types

    data = corpus()
    X = vectors()
    table = as_table(data, X)
    path = tmp_path / "own.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", types.ModuleType("pyarrow"))
    monkeypatch.setattr(pd, "read_parquet", lambda p: table if p == path else None)
    a = run(data, representations=[], embeddings={"own": path})
    b = run(data, representations=[], embeddings={"own": X})
    pd.testing.assert_frame_equal(a.tables["lipschitz"], b.tables["lipschitz"])
    assert a.meta["embeddings"]["own"]["source"] == "own.parquet"


def test_parquet_without_pyarrow_says_how_to_fix(tmp_path, monkeypatch):
    import sys

    path = tmp_path / "own.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import fails
    with pytest.raises(AuditInputError, match=r"own\.parquet\): pyarrow is needed for "
                       r"reading \.parquet embeddings.*save the vectors as \.csv or \.npy"):  # fmt: skip
        run(corpus(), representations=[], embeddings={"own": path})


def test_each_prompt_takes_the_vectors_of_its_own_rows():
    # prompts interleaved, so that a vector taken by position within a prompt
    # instead of by data row would be another essay's
    data = corpus(32).assign(prompt=lambda d: np.where(np.arange(len(d)) % 2, "B", "A"))
    X = vectors(32, 4, seed=5)
    res = run(data, representations=[], embeddings={"own": X}, prompt_col="prompt")
    ext = res.tables["extreme_pairs"]
    row_of = {i: k for k, i in enumerate(data["essay_id"])}
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    for prompt in ("A", "B"):
        rows = np.flatnonzero(data["prompt"] == prompt)
        D = 1.0 - unit[rows] @ unit[rows].T
        iu = np.triu_indices(len(rows), 1)
        for which, best in (("nearest", D[iu].min()), ("farthest", D[iu].max())):
            pair = ext[(ext["prompt"] == prompt) & (ext["which"] == which)].iloc[0]
            a, b = row_of[pair["id_a"]], row_of[pair["id_b"]]
            assert {a % 2, b % 2} == {int(prompt == "B")}
            assert pair["distance"] == pytest.approx(1.0 - unit[a] @ unit[b], abs=1e-9)
            assert pair["distance"] == pytest.approx(best, abs=1e-9)


def test_csv_ids_are_compared_as_written(tmp_path):
    # ids with leading zeros: a csv reader that made them numbers would lose them
    data = corpus().assign(essay_id=[f"{i:03d}" for i in range(24)])
    X = vectors()
    as_table(data, X).to_csv(tmp_path / "own.csv", index=False)
    a = run(data, representations=[], embeddings={"own": tmp_path / "own.csv"})
    b = run(data, representations=[], embeddings={"own": X})
    pd.testing.assert_frame_equal(a.tables["extreme_pairs"], b.tables["extreme_pairs"])


def test_a_file_without_the_id_column_names_its_columns(tmp_path):
    data = corpus()
    as_table(data, vectors()).rename(columns={"essay_id": "key"}).to_csv(
        tmp_path / "own.csv", index=False
    )
    with pytest.raises(AuditInputError, match=r"own\.csv\): no column 'essay_id' \(the id "
                       r"column\); the columns are 'key', 'd0'"):  # fmt: skip
        run(data, representations=[], embeddings={"own": tmp_path / "own.csv"})


def test_cli_out_may_not_hold_the_embeddings_file(tmp_path, capsys):
    # the report folder is replaced on writing: the vectors in it would be lost
    (tmp_path / "report").mkdir()
    np.save(tmp_path / "report" / "own.npy", vectors())
    code, err = _cli(
        tmp_path, capsys, corpus(), "--embeddings", f"own={tmp_path / 'report' / 'own.npy'}"
    )
    assert code == 2
    assert "own.npy" in err
    assert (tmp_path / "report" / "own.npy").is_file()
