"""The report's figures kept across runs as their PNGs (issue 35).

The page of an audit with a cache folder embeds its figures' PNGs read back
from there on a re-run (nothing drawn: ``savefig`` is counted), and is the
same, byte for byte, as the page drawn without any cache; a changed table
value, matplotlib setting or resolution draws again and gives the page an
uncached render gives; a damaged entry is refused and drawn again. Small
data: 60 essays of ASAP prompt 7, no features, no paraphrases.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
from conftest import require_module

from sklearn_fairaes.exceptions import CacheCorruptionWarning
from sklearn_fairaes.report import AuditResult
from sklearn_fairaes.report._figure_cache import _decode, _encode
from sklearn_fairaes.text import TfidfEssayVectorizer

pd = require_module("pandas", "report")
matplotlib = require_module("matplotlib", "report")

N = 60


def _kw(**changes):
    kw = {
        "text_col": "essay",
        "score_col": "rater1_domain1",
        "systems": {"r2": "rater2_domain1"},
        "id_col": "essay_id",
        "representations": {"tfidf": TfidfEssayVectorizer()},
        "features": False,
        "paraphrases": False,
        "n_bootstrap": 0,
        "score_range": (0, 12),
    }
    kw.update(changes)
    return kw


@pytest.fixture
def saved(monkeypatch):
    """Calls of ``Figure.savefig`` (a figure drawn into a PNG)."""
    from matplotlib.figure import Figure

    calls = []
    original = Figure.savefig

    def counted(self, *args, **kw):
        calls.append(self)
        return original(self, *args, **kw)

    monkeypatch.setattr(Figure, "savefig", counted)
    return calls


@pytest.fixture(scope="module")
def base(asap7, tmp_path_factory):
    """An audit's result and a cache folder holding its figures."""
    from sklearn_fairaes import audit

    folder = tmp_path_factory.mktemp("figures") / "cache"
    result = audit(asap7.iloc[:N].copy(), cache=folder, **_kw())
    page = result.to_html()
    return folder, result, page


def _with_cache(result, folder):
    """The same tables and meta, rendered through the cache ``folder``."""
    from sklearn_fairaes.text import EmbeddingCache

    again = AuditResult(result.tables, result.meta)
    again._figure_cache = EmbeddingCache(folder)
    return again


def test_rerun_reads_the_pngs_back(base, tmp_path, saved):
    folder, result, page = base
    warm = _with_cache(result, folder).to_html()
    assert saved == []  # nothing drawn
    assert warm == page
    uncached = AuditResult(result.tables, result.meta).to_html()
    assert len(saved) >= 5  # drawn, one call per figure
    assert uncached == page
    assert page.count("data:image/png;base64,") == len(saved)
    # and through save(): report.html is that page
    again = _with_cache(result, folder)
    again.save(tmp_path / "report")
    assert (tmp_path / "report" / "report.html").read_text(encoding="utf-8") == page


def test_a_changed_value_draws_again(base, tmp_path, saved):
    folder, result, page = base
    copy = tmp_path / "cache"
    shutil.copytree(folder, copy)
    tables = dict(result.tables)
    lip = tables["lipschitz"].copy()
    lip.loc[lip.index[0], "lipschitz_minmax"] = 0.5
    tables["lipschitz"] = lip
    changed = AuditResult(tables, result.meta)
    changed._figure_cache = _with_cache(result, copy)._figure_cache
    got = changed.to_html()
    # the key holds every table of the prompt: each of its figures is drawn again
    assert len(saved) == page.count("data:image/png;base64,")
    assert got == AuditResult(tables, result.meta).to_html() != page


def test_matplotlib_settings_are_in_the_key(base, tmp_path, saved):
    folder, result, page = base
    copy = tmp_path / "cache"
    shutil.copytree(folder, copy)
    with matplotlib.rc_context({"axes.facecolor": "#eeeeee", "font.size": 13}):
        got = _with_cache(result, copy).to_html()
        assert len(saved) == page.count("data:image/png;base64,")  # all drawn again
        assert got == AuditResult(result.tables, result.meta).to_html()
    assert got != page


def _entries(folder: Path) -> list[Path]:
    out = []
    for meta in folder.glob("*/encoder.json"):
        if '"report:figures"' in meta.read_text(encoding="utf-8"):
            out += sorted(meta.parent.glob("??/*.npy"))
    return out


@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_damaged_entry_is_drawn_again(base, tmp_path, saved, damage):
    folder, result, page = base
    copy = tmp_path / "cache"
    shutil.copytree(folder, copy)
    files = _entries(copy)
    assert files
    for file in files:
        raw = bytearray(file.read_bytes())
        if damage == "truncate":
            file.write_bytes(bytes(raw[: len(raw) // 2]))
        else:
            mid = len(raw) - 40
            raw[mid : mid + 8] = bytes(b ^ 0x5A for b in raw[mid : mid + 8])
            file.write_bytes(bytes(raw))
    with pytest.warns(CacheCorruptionWarning, match="recomputed|refused|corrupt"):
        got = _with_cache(result, copy).to_html()
    assert len(saved) == page.count("data:image/png;base64,")
    assert got == page
    saved.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheCorruptionWarning)
        assert _with_cache(result, copy).to_html() == page  # rewritten: read back
    assert saved == []


def test_archive_refuses_what_is_not_a_png():
    from sklearn_fairaes.features._persist import pack_bytes

    good = {"a": b"\x89PNG\r\n\x1a\n" + bytes(40)}
    assert _decode(pack_bytes(_encode(good))) == good
    with pytest.raises(ValueError, match="not PNG"):
        _decode(pack_bytes(_encode({"a": b"GIF89a" + bytes(40)})))
