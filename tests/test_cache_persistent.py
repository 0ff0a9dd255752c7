"""The persistent embedding cache of the audit (issue 18, item 2).

``audit(cache=True)`` / ``fairaes audit`` keep embeddings in a per-user folder,
so a re-run encodes nothing; a folder that cannot be written gives a warning
and an in-memory cache, never a crash; ``fairaes cache info|clear`` see and
remove only the cache's own entries; two processes filling one folder at once
stay correct. The conftest points ``SKLEARN_FAIRAES_CACHE`` at a session folder,
so nothing here touches the user's real cache.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from sklearn_fairaes.cli import main
from sklearn_fairaes.exceptions import CacheWriteWarning
from sklearn_fairaes.text import EmbeddingCache, get_cache
from sklearn_fairaes.text._cache import MARKER, default_cache_dir, open_cache

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _lengths(texts):
    """A stand-in encoder: (length, number of spaces) of each text, float32."""
    return np.array([[len(t), t.count(" ")] for t in texts], dtype=np.float32)


IDENT = {"encoder": "lengths", "version": 1}
TEXTS = ["one essay", "another essay here", "a third"]


# -- where the cache lives ---------------------------------------------------------


def test_default_folder_follows_env_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("SKLEARN_FAIRAES_CACHE", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("SKLEARN_FAIRAES_CACHE")
    assert default_cache_dir() == tmp_path / "xdg" / "sklearn_fairaes" / "embeddings"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == (
        tmp_path / "home" / ".cache" / "sklearn_fairaes" / "embeddings"
    )


def test_the_suite_never_uses_the_users_cache(_session_embedding_cache):
    # the autouse fixture of conftest.py: every audit of the suite writes here
    assert default_cache_dir() == _session_embedding_cache
    assert Path.home() not in default_cache_dir().parents


def test_open_cache_true_is_the_default_folder_and_false_is_memory(monkeypatch, tmp_path):
    monkeypatch.setenv("SKLEARN_FAIRAES_CACHE", str(tmp_path / "emb"))
    cache = open_cache(True)
    assert cache.path == (tmp_path / "emb").resolve()
    assert (
        (tmp_path / "emb" / MARKER)
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )
    assert open_cache(False) is get_cache(True)
    assert open_cache(None) is get_cache(True)
    own = EmbeddingCache(tmp_path / "own")
    assert open_cache(own) is own


# -- a folder that cannot be written --------------------------------------------------


def _make_unwritable(folder: Path, monkeypatch) -> None:
    """Make ``folder`` refuse writes: chmod, or (root ignores modes) a failing open."""
    if not IS_ROOT:
        folder.chmod(0o555)
        return
    real_open = os.open

    def refuse(path, flags, *args, **kw):
        if str(path).startswith(str(folder)) and flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", refuse)

    real_write_text = Path.write_text

    def refuse_text(self, *args, **kw):
        if str(self).startswith(str(folder)):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_write_text(self, *args, **kw)

    monkeypatch.setattr(Path, "write_text", refuse_text)


def test_unwritable_folder_warns_once_and_serves_from_memory(monkeypatch, tmp_path):
    folder = tmp_path / "ro"
    # one entry written while the folder could be written: it is still read later
    first = EmbeddingCache(folder)
    first.get_or_compute(IDENT, TEXTS[:1], _lengths)
    _make_unwritable(folder, monkeypatch)
    try:
        with pytest.warns(CacheWriteWarning, match="cannot be written") as record:
            cache = open_cache(folder)
        assert str(folder) in str(record[0].message)
        calls = []

        def counted(texts):
            calls.append(list(texts))
            return _lengths(texts)

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no second warning, no crash
            got = cache.get_or_compute(IDENT, TEXTS, counted)
            again = cache.get_or_compute(IDENT, TEXTS, counted)
        np.testing.assert_array_equal(got, _lengths(TEXTS))
        np.testing.assert_array_equal(again, got)
        # the old entry came from disk, the two new ones were computed once
        assert calls == [TEXTS[1:]]
        assert (cache.hits, cache.misses) == (4, 2)
        entries = list(folder.glob("*/*/*.npy"))
        assert len(entries) == 1  # nothing new was written
        # a joblib worker gets the same read-only cache, not one retrying writes
        assert pickle.loads(pickle.dumps(cache))._read_only
    finally:
        folder.chmod(0o755)


def test_folder_failing_mid_run_is_a_warning_not_a_crash(monkeypatch, tmp_path):
    # writable when checked, then full: the error comes while storing entries
    cache = EmbeddingCache(tmp_path / "full")
    assert cache.writable() is None

    def disk_full(self, file, rec):
        raise OSError(errno.ENOSPC, "No space left on device", str(file))

    monkeypatch.setattr(EmbeddingCache, "_publish", disk_full)
    with pytest.warns(CacheWriteWarning, match="No space left on device"):
        got = cache.get_or_compute(IDENT, TEXTS, _lengths)
    np.testing.assert_array_equal(got, _lengths(TEXTS))
    assert cache.misses == 3


def test_audit_with_an_unwritable_cache_warns_before_the_work(monkeypatch, tmp_path):
    from sklearn_fairaes import audit
    from sklearn_fairaes.datasets import load_demo_essays

    folder = tmp_path / "ro"
    folder.mkdir()
    _make_unwritable(folder, monkeypatch)
    try:
        df = load_demo_essays().iloc[:30]
        with pytest.warns(CacheWriteWarning, match=str(folder)):
            res = audit(
                df,
                text_col="essay",
                score_col="score",
                representations=["tfidf"],
                models=["ridge"],
                cv=2,
                paraphrases="paraphrase",
                cache=folder,
            )
        assert res.meta["embedding_cache"]["folder"] == str(folder.resolve())
        assert res.tables["lipschitz"].shape[0] > 0
    finally:
        folder.chmod(0o755)


# -- fairaes cache info | clear ---------------------------------------------------------


def _filled(folder: Path) -> EmbeddingCache:
    cache = EmbeddingCache(folder)
    cache.get_or_compute(
        IDENT, TEXTS, _lengths, about={"encoder": "Lengths", "model": "len-v1"}
    )
    cache.get_or_compute({"encoder": "other"}, TEXTS[:2], lambda t: np.ones((len(t), 5)))
    return cache


def test_info_counts_entries_size_and_models(tmp_path, capsys):
    folder = tmp_path / "emb"
    cache = _filled(folder)
    info = cache.info()
    files = sorted(folder.glob("*/*/*.npy"))
    assert info["entries"] == 5 == len(files)
    assert info["bytes"] == sum(f.stat().st_size for f in files)
    by_encoder = {e["encoder"]: e for e in info["encoders"]}
    assert by_encoder["Lengths"]["model"] == "len-v1"
    assert (by_encoder["Lengths"]["entries"], by_encoder["Lengths"]["dim"]) == (3, 2)
    assert (by_encoder["other"]["entries"], by_encoder["other"]["dim"]) == (2, 5)

    assert main(["cache", "info", "--cache", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"embedding cache: {folder}" in out
    assert "5 entries" in out
    assert "Lengths len-v1 (backend -, dim 2): 3 entries" in out


def test_clear_removes_only_the_caches_own_files(tmp_path, capsys):
    folder = tmp_path / "emb"
    _filled(folder)
    ours = sorted(folder.glob("*/*/*.npy"))
    ekey = ours[0].parent.parent
    # foreign files in every place clear looks: the root, an encoder folder, a
    # shard folder (one with an entry's name but not our format), elsewhere
    (folder / "notes.txt").write_text("mine")
    (ekey / "README").write_text("mine")
    fake = ours[0].parent / ("f" * 64 + ".npy")
    if not fake.name.startswith(ours[0].parent.name):
        fake = ours[0].parent / (ours[0].parent.name + "0" * 62 + ".npy")
    np.save(fake, np.arange(3.0))
    (folder / "projects").mkdir()
    np.save(folder / "projects" / "data.npy", np.arange(3.0))

    assert main(["cache", "clear", "--cache", str(folder)]) == 0
    assert "removed 5 entries" in capsys.readouterr().err
    left = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert left == sorted(
        [
            MARKER,
            "notes.txt",
            str(ekey.relative_to(folder) / "README"),
            str(fake.relative_to(folder)),
            "projects/data.npy",
        ]
    )
    assert EmbeddingCache(folder).info()["entries"] == 0


def test_clear_leaves_a_folder_without_the_marker_alone(tmp_path):
    folder = tmp_path / "emb"
    _filled(folder)
    (folder / MARKER).unlink()
    n = len(list(folder.rglob("*.npy")))
    assert EmbeddingCache(folder).purge() == {"entries": 0, "bytes": 0}
    assert EmbeddingCache(folder).info()["entries"] == 0
    assert len(list(folder.rglob("*.npy"))) == n == 5


def test_clear_of_an_emptied_cache_leaves_an_empty_folder(tmp_path):
    folder = tmp_path / "emb"
    cache = _filled(folder)
    removed = cache.purge()
    assert removed["entries"] == 5
    assert list(folder.iterdir()) == []
    assert cache.stats()["entries"] == 0  # the in-memory copies are gone too


def test_cache_command_on_a_missing_folder(tmp_path, capsys):
    missing = tmp_path / "nothing"
    assert main(["cache", "info", "--cache", str(missing)]) == 0
    assert "does not exist yet" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache", str(missing)]) == 0
    assert not missing.exists()


def test_audit_options_cache_and_no_cache_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--cache", "x", "--no-cache"])
    assert "not allowed with argument" in capsys.readouterr().err


# -- across processes ---------------------------------------------------------------------

ENCODE = """
import json, sys, warnings
from sklearn_fairaes import SentenceBertEncoder
from sklearn_fairaes.datasets import load_demo_essays
from sklearn_fairaes.text import EmbeddingCache

essays = list(load_demo_essays()["essay"].iloc[:{n}])
cache = EmbeddingCache(sys.argv[1])
enc = SentenceBertEncoder("{model}", cache=cache, batch_size=int(sys.argv[2]))
warnings.simplefilter("ignore")
X = enc.fit(essays).transform(essays)
json.dump({{"misses": cache.misses, "hits": cache.hits, "corrupt": cache.corrupt,
           "X": X.tolist()}}, sys.stdout)
"""


def _spawn(script: str, folder: Path, batch: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", script, str(folder), str(batch)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out)


def test_two_processes_fill_one_folder_then_a_third_encodes_nothing(minilm, tmp_path):
    n = 24
    folder = tmp_path / "shared"
    script = ENCODE.format(n=n, model=minilm)
    # different batch sizes: the two vectors of an essay may differ in the last
    # bits, and whichever is published first is the one every later run reads
    a, b = _spawn(script, folder, 8), _spawn(script, folder, 32)
    ra, rb = _result(a), _result(b)
    Xa, Xb = np.asarray(ra["X"], np.float32), np.asarray(rb["X"], np.float32)
    assert ra["corrupt"] == rb["corrupt"] == 0
    assert ra["misses"] + ra["hits"] == rb["misses"] + rb["hits"] == n
    np.testing.assert_allclose(Xa, Xb, atol=1e-5)
    # one entry per distinct essay, no temporary file left behind
    distinct = len(set(list(_demo_essays()[:n])))
    assert len(list(folder.glob("*/*/*.npy"))) == distinct
    assert not list(folder.rglob("*.tmp"))

    rc = _result(_spawn(script, folder, 16))
    assert rc["misses"] == 0 and rc["hits"] == n and rc["corrupt"] == 0
    Xc = np.asarray(rc["X"], np.float32)
    # what the third run read is exactly what is on disk: one of the two
    # writers' vectors per essay, bit for bit
    same_as_a = (Xc == Xa).all(axis=1)
    same_as_b = (Xc == Xb).all(axis=1)
    assert (same_as_a | same_as_b).all()


def _demo_essays():
    from sklearn_fairaes.datasets import load_demo_essays

    return load_demo_essays()["essay"]


def test_rerun_of_an_audit_encodes_nothing_and_gives_the_same_tables(minilm, tmp_path):
    from pandas.testing import assert_frame_equal

    from sklearn_fairaes import audit
    from sklearn_fairaes.datasets import load_demo_essays, load_demo_prompt

    df = load_demo_essays().iloc[:30]
    folder = tmp_path / "emb"

    def run():
        # a new cache object each time: it holds nothing in memory, so every
        # vector the re-run serves comes from the folder, as in a new process
        cache = EmbeddingCache(folder)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = audit(
                df,
                text_col="essay",
                score_col="score",
                prompt=load_demo_prompt(),
                representations=["sbert"],
                sbert_model=minilm,
                models=["ridge"],
                cv=2,
                paraphrases="paraphrase",
                cache=cache,
            )
        return res, cache

    first, c1 = run()
    distinct = len(set(df["essay"]) | set(df["paraphrase"]) | {load_demo_prompt()})
    # essays, paraphrases and the prompt (prompt-similarity feature), each once
    assert first.meta["embedding_cache"]["encoded"] == distinct == c1.misses
    second, c2 = run()
    assert second.meta["embedding_cache"] == {
        "folder": str(folder),
        "encoded": 0,
        "served": first.meta["embedding_cache"]["served"]
        + first.meta["embedding_cache"]["encoded"],
    }
    assert c2.misses == 0
    for name in ("lipschitz", "agreement", "paraphrase"):
        assert_frame_equal(first.tables[name], second.tables[name])


def test_fairaes_audit_cache_options_reach_the_audit(tmp_path, capsys):
    from sklearn_fairaes.datasets import load_demo_essays

    data = tmp_path / "essays.tsv"
    load_demo_essays().iloc[:30].to_csv(data, sep="\t", index=False)
    base = [
        "audit", str(data), "--text-col", "essay", "--score-col", "score",
        "--representations", "tfidf", "--models", "ridge", "--cv", "2",
        "--paraphrase-col", "paraphrase", "--quiet",
    ]  # fmt: skip
    folder = tmp_path / "emb"
    assert main([*base, "--cache", str(folder), "--out", str(tmp_path / "a")]) == 0
    meta = json.loads((tmp_path / "a" / "results.json").read_text())["meta"]
    assert meta["embedding_cache"]["folder"] == str(folder.resolve())
    assert (folder / MARKER).is_file()
    assert main([*base, "--no-cache", "--out", str(tmp_path / "b")]) == 0
    meta = json.loads((tmp_path / "b" / "results.json").read_text())["meta"]
    assert meta["embedding_cache"]["folder"] is None
    # neither option: the default folder ($SKLEARN_FAIRAES_CACHE, the session's)
    assert main([*base, "--out", str(tmp_path / "c")]) == 0
    meta = json.loads((tmp_path / "c" / "results.json").read_text())["meta"]
    assert meta["embedding_cache"]["folder"] == str(default_cache_dir().resolve())
    assert capsys.readouterr().err == ""
