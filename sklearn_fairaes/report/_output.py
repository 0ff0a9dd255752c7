"""The one place that checks, claims, locks, swaps and recovers report folders.

Both the command line and :meth:`AuditResult.save` write a report in four steps:

1. *Check* the output path (before any computation, on the command line): it
   must not be the current folder, the home folder or one of their parents; no
   input file may lie inside it; it must be missing, empty, or an earlier report
   of ours (the marker file ``.fairaes-report`` lists what we wrote) holding only
   files we wrote -- and replacing a report needs ``--force``; its parent must be
   a writable folder.
2. *Claim* it: an exclusive ``flock`` on the sibling file ``.OUT.lock``, which
   records the pid and the names of the temporary siblings the run will create.
   The kernel drops the lock when the process dies (even on SIGKILL), so a second
   run on the same folder is refused at once and a dead run's lock is no obstacle.
3. *Write* the report into ``.OUT.partial-<pid>-<token>``; the marker is
   written last, so a folder without it is incomplete.
4. *Swap*: rename ``OUT`` to ``.OUT.old-<pid>-<token>``, rename the partial to
   ``OUT``, then delete the old report.

Crash windows: a process killed in step 3 leaves only the partial folder, which
the next claim of ``OUT`` deletes (it is named in the dead run's lock file). A
process killed between the two renames of step 4 leaves ``OUT`` missing for an
instant that lasts until the next claim: that claim renames the old report back
to ``OUT`` (the interrupted run is undone) and deletes the partial one. An
exception (Ctrl-C included) between the two renames renames the old report back
at once. Leftovers that carry neither our marker nor a name from our lock file
are never touched.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__

if TYPE_CHECKING:
    from pandas import DataFrame

MARKER = ".fairaes-report"
_TOOL = "sklearn_fairaes"
# OWASP, "CSV Injection": a spreadsheet runs a cell that starts with one of
# these as a formula; a leading single quote makes it text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PAUSE_ENV = "SKLEARN_FAIRAES_TEST_PAUSE"


class OutputError(ValueError):
    """The output folder cannot be used; the message says why and what to do."""


def pause(point: str) -> None:
    """Test-only hook: sleep at ``point`` when ``SKLEARN_FAIRAES_TEST_PAUSE`` asks.

    The variable holds ``POINT=SECONDS`` (points: ``claimed``, ``computing``
    (in :func:`audit`, between building the studies and the analyses),
    ``between-files``, ``between-renames``). The interrupt tests use it to kill a
    real ``fairaes audit`` at a known instant; it is not a user option.
    """
    name, _, seconds = os.environ.get(_PAUSE_ENV, "").partition("=")
    if name == point:
        time.sleep(float(seconds or 0))


def neutralise_formulas(frame: DataFrame) -> DataFrame:
    """Return ``frame`` with string cells that a spreadsheet would run made text.

    String cells (and column names) that begin with ``=``, ``+``, ``-``, ``@``,
    a tab or a carriage return get a leading single quote, as OWASP advises for
    CSV files; numbers (``-0.5`` stored as a number) are left as they are. The
    caller's frame is not changed.
    """

    def fix(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(_FORMULA_START):
            return "'" + value
        return value

    from pandas.api.types import is_object_dtype, is_string_dtype

    out = frame.copy()
    for col in out.columns:
        # object columns and pandas' string dtypes ("str" in pandas 3)
        if is_object_dtype(out[col].dtype) or is_string_dtype(out[col].dtype):
            out[col] = out[col].map(fix)
    out.columns = [fix(c) for c in out.columns]
    return out


def read_marker(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Return the marker of a report folder of ours, or None if it has none."""
    try:
        with open(Path(folder) / MARKER, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("tool") != _TOOL:
        return None
    if not isinstance(data.get("files"), list):
        return None
    return data


def write_marker(folder: Path, files: Iterable[str]) -> None:
    """Write the marker last: a folder that has it is a complete report."""
    data = {
        "tool": _TOOL,
        "version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "files": sorted(files),
    }
    with open(folder / MARKER, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)


def _foreign_entries(folder: Path, marker: dict[str, Any]) -> list[str]:
    """Entries of ``folder`` that its marker does not list (the user's files)."""
    listed = {str(f) for f in marker["files"]} | {MARKER}
    dirs = {p.as_posix() for f in listed for p in Path(f).parents if str(p) != "."}
    extra = []
    for root, dnames, fnames in os.walk(folder):
        rel = Path(root).relative_to(folder)
        for d in list(dnames):
            name = (rel / d).as_posix()
            if name not in dirs:
                extra.append(name + "/")
                dnames.remove(d)
        extra += [
            (rel / f).as_posix() for f in fnames if (rel / f).as_posix() not in listed
        ]
    return sorted(extra)


def _listing(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def _protected(real: Path) -> str | None:
    """Say why ``real`` can never be replaced, or None."""
    cwd = Path.cwd().resolve()
    if real == cwd:
        return "is the current folder"
    if real in cwd.parents:
        return "is a parent of the current folder"
    with contextlib.suppress(RuntimeError, KeyError):
        home = Path.home().resolve()
        if real == home:
            return "is your home folder"
        if real in home.parents:
            return "is a parent of your home folder"
    return None


class ReportFolder:
    """A claimed output folder: checked and locked; :meth:`commit` writes it.

    Use :func:`claim_folder` to make one; call :meth:`release` in a
    ``finally`` (it removes what an unfinished run created and drops the lock).
    """

    def __init__(self, out: Path, real: Path, *, force: bool, option: str) -> None:
        self.out = out
        self.real = real
        self.force = force
        self.option = option
        self.notes: list[str] = []
        self.committed = False
        self._fd: int | None = None
        self._created: list[Path] = []
        tag = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._partial = real.parent / f".{real.name}.partial-{tag}"
        self._old = real.parent / f".{real.name}.old-{tag}"
        self._lock = real.parent / f".{real.name}.lock"

    # -- checks ---------------------------------------------------------------

    def _check_existing(self) -> None:
        """Refuse anything at ``OUT`` that is not missing, empty or a report of ours."""
        out, real = self.out, self.real
        if not _exists(real):
            return
        if not real.is_dir():
            raise OutputError(
                f"{out} is a file, not a folder; {self.option} names the folder to write "
                f"the report into: choose another {self.option}"
            )
        if not any(real.iterdir()):
            return  # an empty folder: nothing to lose
        marker = read_marker(real)
        if marker is None:
            raise OutputError(
                f"{out} already exists and is not a fairaes report (it has no "
                f"{MARKER} file); it is never replaced, even with --force: choose "
                f"another {self.option}"
            )
        foreign = _foreign_entries(real, marker)
        if foreign:
            raise OutputError(
                f"{out} is a fairaes report but also holds files it did not write "
                f"({_listing(foreign)}); move them out or choose another {self.option}"
            )
        if not self.force:
            raise OutputError(
                f"{out} already exists; pass --force to replace it, or choose another "
                f"{self.option}"
            )

    def _check_parent(self) -> None:
        """The first existing ancestor must be a writable folder; create the rest."""
        missing = []
        anc = self.real.parent
        while not _exists(anc):
            missing.append(anc)
            anc = anc.parent
        if not anc.is_dir():
            raise OutputError(
                f"{self.out}: cannot create a folder under {anc}, which is a file; "
                f"choose another {self.option}"
            )
        if not os.access(anc, os.W_OK | os.X_OK):
            raise OutputError(
                f"{self.out}: cannot write into {anc} (no write permission or a "
                f"read-only file system); choose a writable {self.option}"
            )
        for path in reversed(missing):
            try:
                os.mkdir(path)
            except OSError as exc:
                raise OutputError(
                    f"{self.out}: cannot create the folder {path} ({exc.strerror}); "
                    f"choose another {self.option}"
                ) from None
            self._created.append(path)

    # -- the lock -------------------------------------------------------------

    def _acquire(self) -> dict[str, Any]:
        """Take the lock; return the record a dead holder left in it."""
        while True:
            fd = os.open(self._lock, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                _lock_fd(fd)
            except OSError as exc:
                record = _read_record(fd)
                os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                pid = record.get("pid", "unknown")
                raise OutputError(
                    f"{self.out} is being written by another fairaes run (pid {pid}); "
                    f"wait for it to finish or choose another {self.option}"
                ) from None
            # a holder that released between our open and flock unlinked the file
            # we locked: lock the file that is at the path now
            try:
                same = os.stat(self._lock).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                return _read_record(fd)
            os.close(fd)

    def _write_record(self) -> None:
        assert self._fd is not None
        data = json.dumps(
            {"pid": os.getpid(), "partial": self._partial.name, "old": self._old.name}
        ).encode()
        os.ftruncate(self._fd, 0)
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.write(self._fd, data)

    def _recover(self, record: dict[str, Any]) -> None:
        """Undo a dead run's swap and delete its leftovers (only ours)."""
        parent, name = self.real.parent, self.real.name
        named = {str(record.get(k)) for k in ("partial", "old")}
        ours = []
        for p in parent.iterdir():
            kind = (
                "old"
                if p.name.startswith(f".{name}.old-")
                else "partial"
                if p.name.startswith(f".{name}.partial-")
                else None
            )
            if kind is None or p.is_symlink() or not p.is_dir():
                continue
            if p.name in named or read_marker(p) is not None:
                ours.append((kind, p))
        if not _exists(self.real):
            olds = sorted(
                (p for kind, p in ours if kind == "old"),
                key=lambda p: (p.name not in named, -p.stat().st_mtime),
            )
            if olds:
                os.rename(olds[0], self.real)
                ours.remove(("old", olds[0]))
                self.notes.append(
                    f"restored the earlier report {self.out} from {olds[0].name} "
                    "(a run was interrupted while replacing it)"
                )
        for _, p in ours:
            shutil.rmtree(p)
            self.notes.append(f"removed {p.name}, left by an interrupted run")

    # -- the steps ------------------------------------------------------------

    def _claim(self) -> None:
        self._check_parent()
        try:
            record = self._acquire()
        except OSError as exc:
            raise OutputError(
                f"{self.out}: cannot create the lock file {self._lock} "
                f"({exc.strerror}); choose a writable {self.option}"
            ) from None
        try:
            self._write_record()
            self._recover(record)
        except OSError as exc:
            raise OutputError(
                f"{self.out}: cannot tidy up after an earlier run in {self.real.parent} "
                f"({exc.strerror}: {exc.filename}); fix the permissions or choose "
                f"another {self.option}"
            ) from None
        self._check_existing()
        pause("claimed")

    def commit(self, write: Callable[[Path], Iterable[str]]) -> None:
        """Write the report with ``write(folder) -> files`` and swap it in.

        Parameters
        ----------
        write : callable
            Writes the report's files into the (new, empty) folder it is given
            and returns their paths relative to it; the marker is added after.

        Raises
        ------
        OutputError
            If ``OUT`` was changed since the claim by a process that does not
            lock it (the new report is dropped; what is at ``OUT`` is kept).
        OSError
            If a file cannot be written (disk full, ...); ``OUT`` is unchanged
            and the partial folder removed (by :meth:`release`).
        """
        # os.mkdir applies the umask (tempfile.mkdtemp would make it 0700)
        os.mkdir(self._partial)
        files = list(write(self._partial))
        write_marker(self._partial, files)
        # we hold the lock, but a process that does not take it may have
        # written OUT meanwhile: never replace what the first checks did not see
        self._check_existing()
        had_old = _exists(self.real)
        if had_old:
            os.rename(self.real, self._old)
        try:
            pause("between-renames")
            os.rename(self._partial, self.real)
        except BaseException:
            if had_old and not _exists(self.real):
                os.rename(self._old, self.real)
            raise
        self.committed = True
        if had_old:
            shutil.rmtree(self._old, ignore_errors=True)

    def release(self) -> None:
        """Remove what an unfinished run created, then drop the lock."""
        try:
            if not _exists(self.real) and _exists(self._old):
                os.rename(self._old, self.real)
            if _exists(self._old):
                shutil.rmtree(self._old, ignore_errors=True)
            if _exists(self._partial):
                shutil.rmtree(self._partial, ignore_errors=True)
        finally:
            if self._fd is not None:
                # unlink while holding the lock, so a waiter re-checks the inode
                with contextlib.suppress(OSError):
                    os.unlink(self._lock)
                os.close(self._fd)
                self._fd = None
            if not self.committed:
                for path in reversed(self._created):
                    with contextlib.suppress(OSError):
                        os.rmdir(path)  # only if still empty


def _lock_fd(fd: int) -> None:
    """Lock ``fd`` exclusively without waiting; the lock dies with the process."""
    if sys.platform == "win32":
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _read_record(fd: int) -> dict[str, Any]:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = json.loads(os.read(fd, 4096).decode() or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def claim_folder(
    out: str | os.PathLike[str],
    *,
    force: bool,
    inputs: Iterable[str | os.PathLike[str]] = (),
    option: str = "--out",
) -> ReportFolder:
    """Check ``out``, then lock it: the first step of writing a report there.

    Parameters
    ----------
    out : str or path-like
        The report folder (symbolic links are followed: the folder they name is
        the one replaced).
    force : bool
        Whether an earlier report of ours at ``out`` may be replaced.
    inputs : iterable of str or path-like, default=()
        Files the run reads; none may be ``out`` or lie inside it.
    option : str, default="--out"
        How messages name the setting to change.

    Returns
    -------
    folder : ReportFolder
        The claimed folder; call ``commit`` to write it and ``release`` always.

    Raises
    ------
    OutputError
        If ``out`` cannot be used; nothing was created or changed.
    """
    out = Path(out)
    real = Path(os.path.realpath(out))
    why = _protected(real)
    if why is not None:
        raise OutputError(
            f"{out} {why}; a report folder is replaced as a whole: choose a new "
            f"folder for {option}"
        )
    for item in inputs:
        src = Path(os.path.realpath(item))
        if src == real or real in src.parents:
            raise OutputError(
                f"the input {item} is inside {option} {out}; writing the report there "
                f"would replace it: choose another {option}"
            )
    folder = ReportFolder(out, real, force=force, option=option)
    try:
        folder._claim()
    except BaseException:
        folder.release()
        raise
    return folder
