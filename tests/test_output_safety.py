"""Output safety of ``fairaes audit`` and ``AuditResult.save``: nothing is lost.

Issue 19: ``--force`` deleted whatever ``--out`` named (the input file, the
current folder), the output checks ran after the computation, two runs on one
``--out`` both "succeeded", a crash between the two renames left ``--out``
missing, CSV cells were spreadsheet formulas. Each test below is written from
one of those reproducers.

The computation itself is not under test here: in-process tests replace
``audit()`` by a stub that returns one precomputed result (or fails if it is
called at all, to show that a check ran before the computation). The tests at
the end run real ``fairaes audit`` processes and interrupt them.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import missing_resource

import sklearn_fairaes as sf
import sklearn_fairaes.report as report_pkg
from sklearn_fairaes.cli import main
from sklearn_fairaes.report import _output
from sklearn_fairaes.report._output import MARKER, claim_folder

# group labels beginning with a tab or CR have no glyph in the figures' font;
# matplotlib warns about that when it draws them, which is not under test here
pytestmark = pytest.mark.filterwarnings("ignore:Glyph:UserWarning")

FORMULA_CHARS = ["=", "+", "-", "@", "\t", "\r"]
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
FAST = ["--representations", "bow", "--models", "ridge", "--cv", "2"]


def _corpus(n: int = 30):
    demo = sf.load_demo_essays()
    frame = demo.iloc[:n][["essay_id", "essay", "score", "group"]].reset_index(drop=True)
    return frame.astype({"essay_id": str})


@pytest.fixture(scope="module")
def formula_result():
    """One real audit whose ids, groups and essays start with formula characters."""
    frame = _corpus()
    for i in range(len(frame)):
        char = FORMULA_CHARS[i % len(FORMULA_CHARS)]
        frame.loc[i, "essay_id"] = f"{char}id{i}"
        frame.loc[i, "group"] = f"{char}G"
        if i < len(FORMULA_CHARS):
            frame.loc[i, "essay"] = char + frame.loc[i, "essay"]
    return sf.audit(
        frame,
        text_col="essay",
        score_col="score",
        id_col="essay_id",
        group_col="group",
        representations=["bow"],
        models=["ridge"],
        cv=2,
        random_state=0,
        progress=False,
    )


@pytest.fixture(scope="module")
def page(formula_result):
    return formula_result.to_html()


@pytest.fixture(autouse=True)
def rendered_once(monkeypatch, page):
    """Write the module's one rendered page: drawing figures is not under test."""

    def to_html(self, path=None):
        if path is not None:
            Path(path).write_text(page, encoding="utf-8")
        return page

    monkeypatch.setattr(sf.AuditResult, "to_html", to_html)


def _tree_hash(root: Path) -> dict[str, str]:
    """Every file under ``root`` (hidden ones included) with its SHA-256."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _leftovers(parent: Path, name: str) -> list[str]:
    return sorted(
        p.name
        for p in parent.iterdir()
        if p.name.startswith((f".{name}.partial-", f".{name}.old-", f".{name}.lock"))
    )


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A project folder with the essays file and a prompt file in it."""
    project = tmp_path / "project"
    project.mkdir()
    data = project / "essays.tsv"
    _corpus().to_csv(data, sep="\t", index=False)
    (project / "prompt.txt").write_text(sf.load_demo_prompt(), encoding="utf-8")
    return project, data


def _audit_args(data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "audit",
        str(data),
        "--text-col",
        "essay",
        "--score-col",
        "score",
        *FAST,
        "--quiet",
        "--out",
        str(out),
        *extra,
    ]


@pytest.fixture
def no_compute(monkeypatch):
    """Make any call of audit() fail the test: the checks must come first."""

    def forbidden(*args, **kwargs):
        raise AssertionError("audit() ran although the output path is unusable")

    monkeypatch.setattr(report_pkg, "audit", forbidden)


@pytest.fixture
def precomputed(monkeypatch, formula_result):
    """audit() returns the module's real result at once (the CLI flow is under test)."""
    calls = []

    def fake(*args, **kwargs):
        calls.append(kwargs)
        return formula_result

    monkeypatch.setattr(report_pkg, "audit", fake)
    return calls


@pytest.fixture
def earlier(tmp_path, formula_result):
    """An earlier report of ours at ``tmp_path/out``, and its hashes."""
    out = tmp_path / "out"
    formula_result.save(out)
    return out, _tree_hash(out)


# -- the marker and --force ------------------------------------------------------


def test_save_writes_a_marker_listing_every_file(tmp_path, formula_result):
    out = tmp_path / "report"
    formula_result.save(out)
    marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
    assert marker["tool"] == "sklearn_fairaes" and marker["version"] == sf.__version__
    written = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert set(marker["files"]) == written - {MARKER}
    assert {"report.html", "results.json", "tables/predictions.csv"} <= written
    assert _leftovers(tmp_path, "report") == []


@pytest.mark.parametrize(
    "case",
    ["project_folder", "input_file", "non_report", "file", "dot", "cwd", "home", "symlink"],
)
def test_force_never_replaces_what_is_not_ours(
    tmp_path, capsys, monkeypatch, no_compute, case
):
    # the reproducer: `fairaes audit project/essays.tsv ... --out project --force`
    # deleted the input file and everything else in project/
    project, data = _project(tmp_path)
    before = _tree_hash(tmp_path)
    if case == "project_folder":
        out, match = project, "the input"
    elif case == "input_file":
        out, match = data, "the input"
    elif case == "non_report":
        out = tmp_path / "thesis"
        out.mkdir()
        (out / "chapter1.tex").write_text("precious")
        before = _tree_hash(tmp_path)
        match = "is not a fairaes report"
    elif case == "file":
        out = tmp_path / "notes.txt"
        out.write_text("precious")
        before = _tree_hash(tmp_path)
        match = "is a file, not a folder"
    elif case == "dot":
        monkeypatch.chdir(tmp_path)
        out, match = Path("."), "is the current folder"
    elif case == "cwd":
        monkeypatch.chdir(project)
        out, match = tmp_path, "is a parent of the current folder"
    elif case == "home":
        monkeypatch.setenv("HOME", str(tmp_path))
        out, match = tmp_path, "is your home folder"
    else:  # a link to the project folder: real paths are compared
        out = tmp_path / "link"
        out.symlink_to(project, target_is_directory=True)
        before = _tree_hash(tmp_path)
        match = "the input"
    code = main(_audit_args(data, out, "--force"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert match in err and str(out) in err
    assert "Traceback" not in err
    assert _tree_hash(tmp_path) == before


def test_prompt_file_inside_out_is_refused(tmp_path, capsys, no_compute):
    project, data = _project(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    prompt = reports / "prompt.txt"
    prompt.write_text("Write about patience.")
    code = main(_audit_args(data, reports, "--force", "--prompt-file", str(prompt)))
    err = capsys.readouterr().err
    assert code == 2 and f"the input {prompt} is inside --out" in err
    assert prompt.read_text() == "Write about patience."


def test_force_refuses_a_report_holding_files_it_did_not_write(
    tmp_path, capsys, earlier, no_compute
):
    out, _ = earlier
    (out / "my_notes.txt").write_text("precious")
    before = _tree_hash(out)
    code = main(_audit_args(tmp_path / "x.tsv", out, "--force"))
    err = capsys.readouterr().err
    assert code == 2 and "holds files it did not write (my_notes.txt)" in err
    assert _tree_hash(out) == before


def test_force_replaces_an_earlier_report(tmp_path, capsys, earlier, precomputed, page):
    out, _ = earlier
    project, data = _project(tmp_path)
    (out / "report.html").write_text("an older page")  # to see the replacement
    code = main(_audit_args(data, out, "--force"))
    assert code == 0, capsys.readouterr().err
    # replaced: the page is the result's again (the same result, so the same bytes)
    assert (out / "report.html").read_bytes() == page.encode("utf-8")
    assert len(precomputed) == 1
    assert _leftovers(tmp_path, "out") == []


# -- output-path checks before any computation ------------------------------------


def _read_only_parent(tmp_path, monkeypatch):
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(0o555)
    real_access = os.access

    # root may write anywhere, whatever the mode: report the folder as not
    # writable to os.access too, so the test means the same under root and users
    def access(path, mode, **kwargs):
        if Path(path) == parent and mode & os.W_OK:
            return False
        return real_access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)
    return parent / "out", "cannot write into"


@pytest.mark.parametrize("case", ["read_only_parent", "under_a_file", "out_is_a_file"])
def test_output_path_errors_come_before_the_computation(
    tmp_path, capsys, monkeypatch, no_compute, case
):
    project, data = _project(tmp_path)
    if case == "read_only_parent":
        out, match = _read_only_parent(tmp_path, monkeypatch)
    elif case == "under_a_file":
        out, match = data / "report", "which is a file"
    else:
        out, match = project / "prompt.txt", "is a file, not a folder"
    try:
        code = main(_audit_args(data, out))
    finally:
        if (tmp_path / "locked").exists():
            (tmp_path / "locked").chmod(0o755)  # so that pytest can remove it
    err = capsys.readouterr().err
    assert code == 2, err
    assert match in err and str(out) in err


def test_existing_report_is_refused_before_the_computation(
    tmp_path, capsys, earlier, no_compute
):
    out, before = earlier
    _, data = _project(tmp_path)
    code = main(_audit_args(data, out))
    err = capsys.readouterr().err
    assert code == 2 and "already exists; pass --force" in err
    assert _tree_hash(out) == before


def test_n_jobs_zero_is_refused_at_parse_time(tmp_path, capsys, no_compute):
    with pytest.raises(SystemExit) as exc:
        main(_audit_args(tmp_path / "x.tsv", tmp_path / "out", "--n-jobs", "0"))
    assert exc.value.code == 2
    assert "--n-jobs: 0 runs nothing" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_missing_parents_are_removed_again_when_the_run_fails(tmp_path, capsys):
    _, data = _project(tmp_path)
    out = tmp_path / "a" / "b" / "out"
    code = main(_audit_args(data, out, "--text-col", "no_such_column"))
    assert code == 2, capsys.readouterr().err
    assert not (tmp_path / "a").exists()


# -- one run at a time -------------------------------------------------------------


def test_a_second_run_on_a_claimed_out_is_refused_at_once(tmp_path, capsys, no_compute):
    _, data = _project(tmp_path)
    out = tmp_path / "out"
    first = claim_folder(out, force=False)
    try:
        code = main(_audit_args(data, out))
    finally:
        first.release()
    err = capsys.readouterr().err
    assert (
        code == 2 and f"is being written by another fairaes run (pid {os.getpid()})" in err
    )
    assert not out.exists() and _leftovers(tmp_path, "out") == []


def test_a_report_written_during_the_run_is_not_replaced(
    tmp_path, capsys, monkeypatch, formula_result
):
    # the reproducer: two runs without --force both exited 0, the second
    # replacing the first's report; here the other writer does not lock at all
    _, data = _project(tmp_path)
    out = tmp_path / "out"

    def other_writer_meanwhile(*args, **kwargs):
        out.mkdir()
        (out / MARKER).write_text(json.dumps({"tool": "sklearn_fairaes", "files": ["a"]}))
        (out / "a").write_text("the other run's report")
        return formula_result

    monkeypatch.setattr(report_pkg, "audit", other_writer_meanwhile)
    code = main(_audit_args(data, out))
    err = capsys.readouterr().err
    assert code == 2 and "already exists; pass --force" in err
    assert (out / "a").read_text() == "the other run's report"
    assert _leftovers(tmp_path, "out") == []


# -- the swap and its recovery -----------------------------------------------------


def test_interrupt_between_the_two_renames_puts_the_old_report_back(
    tmp_path, monkeypatch, earlier, formula_result
):
    out, before = earlier

    def interrupt(point):
        if point == "between-renames":
            assert not out.exists()  # the instant the issue describes
            raise KeyboardInterrupt

    monkeypatch.setattr(_output, "pause", interrupt)
    with pytest.raises(KeyboardInterrupt, match="^$"):
        formula_result.save(out)
    assert _tree_hash(out) == before
    assert _leftovers(tmp_path, "out") == []


# a run of ours on argv[1] that a test kills at a pause point (SIGKILL: no
# clean-up at all), to see what the next run does with what it left
KILLED_RUN = """
import sys
from sklearn_fairaes.report._output import claim_folder, pause

def write(folder):
    (folder / "report.html").write_text("the killed run's page")
    pause("between-files")
    return ["report.html"]

claim_folder(sys.argv[1], force=True).commit(write)
"""


def _killed_run(out: Path, point: str, reached) -> None:
    """Run :data:`KILLED_RUN` on ``out``, kill it once ``reached()``."""
    env = {k: v for k, v in os.environ.items() if k != _output._PAUSE_ENV}
    env[_output._PAUSE_ENV] = f"{point}=60"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(reached, proc, timeout=60)
    proc.kill()
    _communicate(proc, 60)


def _users_copy(report: Path, name: str) -> Path:
    """The user's own copy of a report (marker included) plus a file of theirs."""
    copy = report.parent / name
    shutil.copytree(report, copy)
    (copy / "NOTES.txt").write_text("my annotations")
    return copy


def test_next_run_recovers_a_dead_runs_swap(tmp_path, capsys, earlier):
    # a run killed between the two renames: no out, the old report aside, the
    # new one partial; the next run (here refused: no --force) puts the old
    # report back, removes the partial one and says so, even under --quiet
    out, before = earlier
    _, data = _project(tmp_path)
    _killed_run(out, "between-renames", lambda: not out.exists())
    killed = _leftovers(tmp_path, "out")
    assert len(killed) == 3  # lock, old, partial
    backup = _users_copy(tmp_path / killed[1], ".out.old-backup")
    stranger = tmp_path / ".out.partial-not-ours"  # no marker, not named
    stranger.mkdir()
    (stranger / "keep.txt").write_text("precious")
    mine = {p: _tree_hash(p) for p in (backup, stranger)}
    code = main(_audit_args(data, out))
    err = capsys.readouterr().err
    assert code == 2 and "already exists; pass --force" in err
    assert f"fairaes: restored the earlier report {out} from {killed[1]}" in err
    assert f"fairaes: removed {killed[2]}, the unfinished report" in err
    assert _tree_hash(out) == before
    assert _leftovers(tmp_path, "out") == sorted([backup.name, stranger.name])
    assert {p: _tree_hash(p) for p in mine} == mine


@pytest.mark.parametrize("out_exists", [True, False])
def test_a_users_folders_named_like_ours_are_never_moved_or_removed(
    tmp_path, capsys, earlier, precomputed, out_exists
):
    # the reproducer: `cp -a rep .rep.old-backup` (marker included) was deleted
    # by the next run on rep, even one refused with exit 2; with rep missing, it
    # was renamed to rep
    report, _ = earlier
    _, data = _project(tmp_path)
    out = report if out_exists else tmp_path / "rep9"
    folders = [
        _users_copy(report, f".{out.name}.old-backup"),
        _users_copy(report, f".{out.name}.partial-mine"),
    ]
    # a lock file of an earlier run that ended normally is removed; one that a
    # dead run left names its own folders only
    (tmp_path / f".{out.name}.lock").write_text(json.dumps({"pid": 1}))
    mine = {p: _tree_hash(p) for p in folders}
    code = main(_audit_args(data, out))
    err = capsys.readouterr().err
    assert code == (2 if out_exists else 0), err
    assert {p: _tree_hash(p) for p in mine} == mine
    assert "NOTES.txt" not in _tree_hash(out)  # a new report, not the user's copy
    assert sorted(_leftovers(tmp_path, out.name)) == sorted(p.name for p in folders)
    assert "removed" not in err and "restored" not in err


def test_a_copy_in_place_of_a_dead_runs_folder_is_left_alone_with_a_note(tmp_path, earlier):
    # the lock names the folder; a folder of that name that is not the one the
    # dead run made (the user moved it away and put a copy there) is kept
    out, before = earlier
    _killed_run(out, "between-renames", lambda: not out.exists())
    old = tmp_path / _leftovers(tmp_path, "out")[1]
    old.rename(tmp_path / "moved")
    shutil.copytree(tmp_path / "moved", old)
    notes = []
    claim = claim_folder(out, force=True, option="folder", on_note=notes.append)
    claim.release()
    assert _tree_hash(old) == before and not out.exists()
    assert any(n.startswith(f"left {old.name} alone: it is not the report") for n in notes)
    assert any("removed .out.partial-" in n for n in notes)


def test_save_warns_when_it_restores_an_interrupted_runs_report(
    tmp_path, earlier, formula_result
):
    out, _ = earlier
    _killed_run(out, "between-renames", lambda: not out.exists())
    with pytest.warns(UserWarning) as caught:
        formula_result.save(out)
    notes = [str(w.message) for w in caught]
    assert len(notes) == 2
    assert notes[0].startswith(f"{out}: removed .out.partial-")
    assert notes[1].startswith(f"{out}: restored the earlier report {out} from .out.old-")
    assert (out / MARKER).exists() and _leftovers(tmp_path, "out") == []


@pytest.mark.parametrize("kind", ["symlink", "dangling_symlink", "hard_link", "fifo"])
def test_the_lock_file_is_never_written_through_a_link(tmp_path, capsys, no_compute, kind):
    # the reproducer: a symlink planted at .R.lock made the run truncate and
    # overwrite the file it points to
    _, data = _project(tmp_path)
    important = tmp_path / "important.txt"
    important.write_text("VERY IMPORTANT USER DATA")
    lock = tmp_path / ".out.lock"
    if kind == "symlink":
        lock.symlink_to(important)
        match = "is a symbolic link"
    elif kind == "dangling_symlink":
        important.unlink()
        lock.symlink_to(important)
        match = "is a symbolic link"
    elif kind == "hard_link":
        os.link(important, lock)
        match = "is a hard link to another file"
    else:
        os.mkfifo(lock)
        match = "is not a regular file"
    code = main(_audit_args(data, tmp_path / "out"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"the lock file {lock} {match}" in err and f"remove {lock}" in err
    if kind == "dangling_symlink":
        assert not important.exists()  # not created through the link
    else:
        assert important.read_text() == "VERY IMPORTANT USER DATA"
    assert os.path.lexists(lock) and not (tmp_path / "out").exists()


def _other_group() -> int:
    """A group other than the process's, which it may give a folder."""
    if IS_ROOT:
        return next(g for g in range(1, 65536) if g != os.getegid())
    for gid in os.getgroups():
        if gid != os.getegid():
            return gid
    missing_resource("a second group of the user, or root (chgrp to another group)")


@pytest.mark.parametrize("case", ["empty_700", "empty_2770_group", "report_700"])
def test_a_replaced_folder_keeps_its_mode_and_group(
    tmp_path, capsys, monkeypatch, earlier, precomputed, page, case
):
    # the reproducer: --out private/ (700, or 2770 of a team group) became a
    # 755 folder of the user's group: the essays readable by everyone
    report, _ = earlier
    _, data = _project(tmp_path)
    args = []
    if case == "report_700":
        out, mode, gid = report, 0o700, report.stat().st_gid
        args = ["--force"]
    else:
        out = tmp_path / "private"
        out.mkdir()
        mode, gid = 0o700, out.stat().st_gid
        if case == "empty_2770_group":
            mode, gid = 0o2770, _other_group()
            os.chown(out, -1, gid)
    out.chmod(mode)
    seen = []

    def to_html(self, path=None):
        # the folder's mode and group at the time the essays are written
        st = Path(path).parent.stat()
        seen.append((st.st_mode & 0o7777, st.st_gid))
        Path(path).write_text(page, encoding="utf-8")

    monkeypatch.setattr(sf.AuditResult, "to_html", to_html)
    umask = os.umask(0o022)
    try:
        code = main(_audit_args(data, out, *args))
    finally:
        os.umask(umask)
    assert code == 0, capsys.readouterr().err
    st = out.stat()
    assert (st.st_mode & 0o7777, st.st_gid) == (mode, gid)
    assert seen == [(mode | 0o700, gid)]
    assert (out / "report.html").stat().st_gid == gid  # the setgid bit's doing
    assert _leftovers(tmp_path, out.name) == []


def test_save_over_a_private_report_keeps_it_private(tmp_path, earlier, formula_result):
    out, _ = earlier
    out.chmod(0o700)
    old = os.umask(0o022)
    try:
        formula_result.save(out)
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o7777 == 0o700


def test_a_group_folder_the_user_cannot_give_its_group_is_refused(
    tmp_path, capsys, monkeypatch, no_compute
):
    # a non-root user outside the folder's group could not give the new folder
    # that group: refused before any work, not a report of another group
    _, data = _project(tmp_path)
    out = tmp_path / "team"
    out.mkdir()
    out.chmod(0o2770)
    gid = out.stat().st_gid
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    monkeypatch.setattr(os, "getegid", lambda: gid + 1)
    monkeypatch.setattr(os, "getgroups", lambda: [gid + 1])
    code = main(_audit_args(data, out))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{out} belongs to the group" in err and "which you are not a member of" in err
    assert out.stat().st_mode & 0o7777 == 0o2770


@pytest.mark.parametrize("how", ["option", "option_is_out", "env", "force_over_report"])
def test_a_cache_inside_out_is_refused_before_any_work(
    tmp_path, capsys, monkeypatch, earlier, no_compute, how
):
    # the reproducer: --cache out/emb ran the whole audit, then exit 2; over a
    # report with --force the cache was left inside it, blocking every --force
    report, before = earlier
    _, data = _project(tmp_path)
    out = tmp_path / "fresh"
    args = []
    if how == "option":
        args = ["--cache", str(out / "emb")]
    elif how == "option_is_out":
        args = ["--cache", str(out)]
    elif how == "env":
        monkeypatch.setenv("SKLEARN_FAIRAES_CACHE", str(out / "emb"))
    else:
        out = report
        args = ["--cache", str(out / "emb"), "--force"]
    code = main(_audit_args(data, out, *args))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"is inside --out {out}" in err and "--no-cache" in err
    if how == "env":
        assert "$SKLEARN_FAIRAES_CACHE=" in err
    assert _tree_hash(report) == before
    assert not (tmp_path / "fresh").exists()


def test_out_on_a_mount_point_is_refused_before_any_work(
    tmp_path, capsys, monkeypatch, no_compute
):
    _, data = _project(tmp_path)
    out = tmp_path / "volume"
    out.mkdir()
    real_ismount = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == out or real_ismount(p))
    code = main(_audit_args(data, out))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{out} is a mount point" in err and f"--out {out / 'report'}" in err
    assert list(out.iterdir()) == [] and _leftovers(tmp_path, "volume") == []


def test_out_on_a_bind_mount_is_refused_before_any_work(tmp_path, capsys, no_compute):
    # the reproducer: a container volume (here a bind mount, which
    # os.path.ismount does not see) failed the final rename with EBUSY
    if not IS_ROOT:
        missing_resource("root, to bind-mount a folder (mount --bind)")
    _, data = _project(tmp_path)
    results, out = tmp_path / "results", tmp_path / "vol"
    results.mkdir()
    out.mkdir()
    mounted = subprocess.run(
        ["mount", "--bind", str(results), str(out)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        missing_resource(f"a working mount --bind ({mounted.stderr.strip()})")
    try:
        code = main(_audit_args(data, out))
    finally:
        subprocess.run(["umount", str(out)], check=True)
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{out} is a mount point" in err
    assert list(results.iterdir()) == [] and _leftovers(tmp_path, "vol") == []


@pytest.mark.parametrize("error", [errno.EBUSY, errno.EXDEV])
def test_a_late_rename_refusal_names_the_cause_not_the_disk(
    tmp_path, capsys, monkeypatch, earlier, precomputed, error
):
    # a folder that became a mount point during the run: not "free some space"
    out, before = earlier
    _, data = _project(tmp_path)
    real_rename = os.rename

    def rename(src, dst, **kwargs):
        if Path(src) == out:
            raise OSError(error, os.strerror(error), str(src))
        return real_rename(src, dst, **kwargs)

    monkeypatch.setattr(os, "rename", rename)
    code = main(_audit_args(data, out, "--force"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"cannot replace {out} by renaming ({os.strerror(error)})" in err
    assert f"--out {out / 'report'}" in err and "free some space" not in err
    assert _tree_hash(out) == before and _leftovers(tmp_path, "out") == []


def test_report_folder_and_files_follow_the_umask(tmp_path, formula_result):
    old = os.umask(0o027)
    try:
        formula_result.save(tmp_path / "out")
    finally:
        os.umask(old)
    out = tmp_path / "out"
    assert out.stat().st_mode & 0o777 == 0o750  # mkdtemp would give 0o700
    assert (out / "tables").stat().st_mode & 0o777 == 0o750
    assert (out / "report.html").stat().st_mode & 0o777 == 0o640
    assert (out / "tables" / "agreement.csv").stat().st_mode & 0o777 == 0o640


# -- AuditResult.save --------------------------------------------------------------


def test_save_refuses_a_folder_that_is_not_ours(tmp_path, formula_result):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "results.json").write_text("my own results")
    with pytest.raises(ValueError, match="is not a fairaes report"):
        formula_result.save(folder)
    assert (folder / "results.json").read_text() == "my own results"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_save_into_an_empty_folder_and_over_its_own_report(tmp_path, formula_result):
    folder = tmp_path / "empty"
    folder.mkdir()
    formula_result.save(folder)
    (folder / "tables" / "stale.csv").write_text("x")  # not listed: refused
    with pytest.raises(ValueError, match=r"did not write \(tables/stale.csv\)"):
        formula_result.save(folder)
    (folder / "tables" / "stale.csv").unlink()
    formula_result.save(folder)
    assert (folder / MARKER).exists() and _leftovers(tmp_path, "empty") == []


# -- disk full, Ctrl-C, --quiet -----------------------------------------------------


def test_disk_full_during_the_save_exits_2_and_keeps_the_old_report(
    tmp_path, capsys, monkeypatch, earlier, precomputed
):
    out, before = earlier
    _, data = _project(tmp_path)

    def full(self, path=None):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(sf.AuditResult, "to_html", full)
    code = main(_audit_args(data, out, "--force"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"cannot write the report to {out}: No space left on device" in err
    assert "Traceback" not in err
    assert _tree_hash(out) == before
    assert _leftovers(tmp_path, "out") == []


def test_ctrl_c_during_the_computation_exits_130(tmp_path, capsys, monkeypatch, earlier):
    out, before = earlier
    _, data = _project(tmp_path)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_pkg, "audit", interrupted)
    code = main(_audit_args(data, out, "--force"))
    err = capsys.readouterr().err
    assert code == 130
    assert err.count("\n") == 1 and "fairaes: interrupted" in err
    assert _tree_hash(out) == before and _leftovers(tmp_path, "out") == []


# the guard leaves a SIGINT handler other than Python's own as it is
needs_default_sigint = pytest.mark.skipif(
    signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
    reason="the runner has its own SIGINT handler, which main() and audit() keep",
)


class _InterruptedFinaliser:
    """An object whose ``__del__`` gets the Ctrl-C, as regex's ``Group`` did.

    The handler runs at the next bytecode after ``raise_signal``, still inside
    ``__del__``; Python ignores what a finaliser raises (it goes to
    ``sys.unraisablehook``), so nothing would stop the command.
    """

    def __del__(self):
        signal.raise_signal(signal.SIGINT)
        for _ in range(100):
            pass


def _runs_on(*args, **kwargs):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.01)
    raise AssertionError("the Ctrl-C was lost: the audit ran on")


@needs_default_sigint
def test_ctrl_c_that_lands_in_a_finaliser_still_stops_the_audit(
    tmp_path, capsys, monkeypatch, earlier
):
    out, before = earlier
    _, data = _project(tmp_path)

    def audit(*args, **kwargs):
        _InterruptedFinaliser()  # collected at once
        _runs_on()

    monkeypatch.setattr(report_pkg, "audit", audit)
    hook = sys.unraisablehook
    code = main(_audit_args(data, out, "--force"))
    err = capsys.readouterr().err
    assert code == 130, err
    assert err.count("\n") == 1 and "fairaes: interrupted" in err
    assert _tree_hash(out) == before and _leftovers(tmp_path, "out") == []
    # main() put back what it replaced
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert sys.unraisablehook is hook


@needs_default_sigint
def test_ctrl_c_while_another_finaliser_error_is_reported_still_stops(
    tmp_path, capsys, monkeypatch, earlier
):
    # the Ctrl-C lands in the hook that reports an unrelated finaliser's error
    out, before = earlier
    _, data = _project(tmp_path)
    reported = []

    def reporting(unraisable):
        reported.append(unraisable.exc_type)
        signal.raise_signal(signal.SIGINT)
        for _ in range(100):
            pass

    class Broken:
        def __del__(self):
            raise ValueError("a finaliser's own error")

    def audit(*args, **kwargs):
        Broken()
        _runs_on()

    monkeypatch.setattr(sys, "unraisablehook", reporting)
    monkeypatch.setattr(report_pkg, "audit", audit)
    code = main(_audit_args(data, out, "--force"))
    err = capsys.readouterr().err
    assert code == 130, err
    assert reported == [ValueError]  # other errors still reach the hook before
    assert _tree_hash(out) == before and _leftovers(tmp_path, "out") == []
    assert sys.unraisablehook is reporting


@needs_default_sigint
def test_audit_called_from_python_is_stopped_by_a_ctrl_c_in_a_finaliser(monkeypatch):
    from sklearn_fairaes.report import _study_tasks

    def build_studies(*args, **kwargs):
        _InterruptedFinaliser()
        _runs_on()

    monkeypatch.setattr(_study_tasks, "build_studies", build_studies)
    hook = sys.unraisablehook
    with pytest.raises(KeyboardInterrupt):
        sf.audit(
            _corpus(),
            text_col="essay",
            score_col="score",
            representations=["bow"],
            tune_interpreter=True,
        )
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert sys.unraisablehook is hook


def test_audit_called_from_python_leaves_the_interpreter_alone(monkeypatch):
    # the SIGINT handler and sys.unraisablehook are the host program's: a
    # library call changes neither unless asked (tune_interpreter=True)
    from sklearn_fairaes.report import _study_tasks

    seen = []

    def build_studies(*args, **kwargs):
        seen.append((signal.getsignal(signal.SIGINT), sys.unraisablehook))
        raise ValueError("stop here (test)")

    monkeypatch.setattr(_study_tasks, "build_studies", build_studies)
    before = (signal.getsignal(signal.SIGINT), sys.unraisablehook)
    with pytest.raises(ValueError, match="stop here"):
        sf.audit(_corpus(), text_col="essay", score_col="score", representations=["bow"])
    assert seen == [before]


# -- CSV formula injection ----------------------------------------------------------


def _cells(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def test_csv_cells_that_spreadsheets_would_run_are_neutralised(tmp_path, formula_result):
    out = tmp_path / "out"
    formula_result.save(out)
    for path in (out / "tables").glob("*.csv"):
        for row in _cells(path):
            for cell in row:
                if cell.startswith(tuple(FORMULA_CHARS)):
                    float(cell)  # only numbers may start so (e.g. a negative SMD)
    # columns by name: the tables lead with prompt (issue 16)
    predictions = _cells(out / "tables" / "predictions.csv")
    at = predictions[0].index("id")
    ids = [r[at] for r in predictions[1:]]
    assert ids[: len(FORMULA_CHARS)] == [f"'{c}id{i}" for i, c in enumerate(FORMULA_CHARS)]
    group_rows = _cells(out / "tables" / "group_agreement.csv")
    at = group_rows[0].index("group")
    groups = {r[at] for r in group_rows[1:]}
    assert groups == {"all"} | {f"'{c}G" for c in FORMULA_CHARS}
    pairs = _cells(out / "tables" / "extreme_pairs.csv")
    text = pairs[0].index("text_a")
    assert all(not r[text].startswith(tuple(FORMULA_CHARS)) for r in pairs[1:])
    # numbers stay numbers: the CSV's SMD equals the table's, sign included
    agreement = _cells(out / "tables" / "agreement.csv")
    smd = float(agreement[1][agreement[0].index("smd")])
    assert smd == pytest.approx(float(formula_result.tables["agreement"]["smd"].iloc[0]))
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    raw_ids = [r["id"] for r in data["tables"]["predictions"]]
    assert raw_ids[: len(FORMULA_CHARS)] == [
        f"{c}id{i}" for i, c in enumerate(FORMULA_CHARS)
    ]


# -- real processes, interrupted ----------------------------------------------------

ENTRY = "import sys; from sklearn_fairaes.cli import main; sys.exit(main())"


def _start(args: list[str], pause: str | None = None) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.pop(_output._PAUSE_ENV, None)
    if pause:
        env[_output._PAUSE_ENV] = pause
    return subprocess.Popen(
        [sys.executable, "-c", ENTRY, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _communicate(proc, timeout):
    """proc.communicate(), killing the run if it times out.

    A run left behind would be reported, as unraisable warnings, in whatever
    test came next.
    """
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def _wait_for(condition, proc, timeout=300.0):
    end = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended early: {proc.communicate()}")
        if time.monotonic() > end:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"timed out waiting for the run: {err[-2000:]}")
        time.sleep(0.02)


def _glob(parent: Path, pattern: str) -> list[Path]:
    return sorted(parent.glob(pattern))


@pytest.mark.slow  # five real runs, three to the save: ~60 s idle, 3 min on a busy machine
def test_real_runs_interrupted_and_concurrent_lose_nothing(tmp_path, formula_result):
    project, data = _project(tmp_path)
    prompt = project / "prompt.txt"
    out = tmp_path / "out"
    formula_result.save(out)
    inputs = _tree_hash(project)
    report = _tree_hash(out)
    args = _audit_args(data, out, "--force")
    lock = tmp_path / ".out.lock"

    def intact():
        assert _tree_hash(project) == inputs
        assert _tree_hash(out) == report

    # 1. Ctrl-C during the computation: exit 130, one line, nothing changed
    # (held mid-audit for up to 60 s: a fast audit must not end before the signal)
    proc = _start(args, pause="computing=60")
    _wait_for(lock.exists, proc)
    time.sleep(0.6)  # past the claim, into reading and computing
    proc.send_signal(signal.SIGINT)
    _, err = _communicate(proc, 60)
    assert proc.returncode == 130, err
    assert err.count("\n") == 1 and "interrupted" in err and "Traceback" not in err
    intact()
    assert _leftovers(tmp_path, "out") == []

    # 2. a second run while the first one computes: refused at once; then the
    # first is killed between two files of its save
    first = _start(args, pause="between-files=60")
    _wait_for(lock.exists, first)
    second = subprocess.run(
        [sys.executable, "-c", ENTRY, *args], capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 2, second.stderr
    assert f"being written by another fairaes run (pid {first.pid})" in second.stderr
    _wait_for(lambda: bool(_glob(tmp_path, ".out.partial-*/tables/*.csv")), first)
    first.kill()
    _communicate(first, 60)
    intact()
    assert _glob(tmp_path, ".out.partial-*")  # what SIGKILL leaves

    # 3. SIGKILL between the two renames: --out is missing for that instant
    proc = _start(args, pause="between-renames=60")
    _wait_for(lambda: not out.exists() and bool(_glob(tmp_path, ".out.old-*")), proc)
    proc.kill()
    _communicate(proc, 60)
    assert not out.exists()
    assert _tree_hash(_glob(tmp_path, ".out.old-*")[0]) == report

    # 4. the next run (here one that fails on its input) restores the old report
    # and removes what the killed runs left
    proc = _start(_audit_args(data, out, "--force", "--text-col", "no_such_column"))
    _, err = _communicate(proc, 120)
    assert proc.returncode == 2 and "no_such_column" in err, err
    intact()
    assert _leftovers(tmp_path, "out") == []

    # 5. a run to the end under --quiet prints nothing at all (not even the
    # progress bar of the Sentence-BERT weights that the prompt features load)
    # and replaces the report
    proc = _start([*args, "--prompt-file", str(prompt)])
    stdout, stderr = _communicate(proc, 300)
    assert proc.returncode == 0, stderr
    assert (stdout, stderr) == ("", "")
    assert _tree_hash(out) != report and (out / MARKER).exists()
    assert _tree_hash(project) == inputs
    assert _leftovers(tmp_path, "out") == []
