"""The one place that checks, claims, locks, swaps and recovers report folders.

Both the command line and :meth:`AuditResult.save` write a report in four steps:

1. *Check* the output path (before any computation, on the command line): it
   must not be the current folder, the home folder or one of their parents, nor
   a mount point (a report is renamed into place, which a mount point cannot
   be: the message names a folder inside it); no input file may lie inside it
   (the command line also refuses an embedding cache inside it, which the swap
   would drop); it must be missing, empty, or an earlier report of ours (the
   marker file ``.fairaes-report`` lists what we wrote) holding only files we
   wrote -- and replacing a report needs ``--force``; its parent must be a
   writable folder.
2. *Claim* it: an exclusive ``flock`` on the sibling file ``.OUT.lock``. The lock
   file is opened without following links (``O_NOFOLLOW``); a link, a file of
   another kind or a file with other names (hard links) there is refused, so a
   planted link never makes us overwrite the file it points to. The lock
   records the run's id (pid and a random token), the names of the siblings the
   run may create and, once each exists, its identity (device and inode). The
   kernel drops the lock when the process dies (even on SIGKILL), so a second
   run on the same folder is refused at once and a dead run's lock is no
   obstacle.
3. *Write* the report into ``.OUT.partial-<run id>``. When it replaces a folder,
   the partial folder gets that folder's permission bits, group owner and
   setgid bit before anything is written into it (a folder of mode 700 or 2770
   stays so; a new folder follows the umask); the marker is written last, so a
   folder without it is incomplete.
4. *Swap*: rename ``OUT`` to ``.OUT.old-<run id>``, rename the partial to
   ``OUT``, then delete the old report.

What may be moved or removed: only a sibling that this run created, or that the
lock record of a dead run (its lock could be taken) names *and* whose identity
is the one recorded there; and only when the lock file is the user's own. A
user's folder with a similar name (``.OUT.old-backup``), even one holding a
marker, a copy of one of ours, and the folders a lock file of another user names
are never touched. Every restore or removal is a note the user sees (printed by
the command line even with ``--quiet``; a warning from ``save``), and so is a
named folder left alone because it is not the one recorded.

Crash windows: a process killed in step 3 leaves only the partial folder, which
the next claim of ``OUT`` deletes. A process killed between the two renames of
step 4 leaves ``OUT`` missing for an instant that lasts until the next claim:
that claim renames the old report back to ``OUT`` (the interrupted run is
undone) and deletes the partial one. An exception (Ctrl-C included) between the
two renames renames the old report back at once. A run that cannot tidy up (a
permission error) keeps its lock file, with the dead runs' entries in it, for
the next run to finish the work.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterable, Mapping
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


def write_tables(folder: Path, tables: Mapping[str, DataFrame]) -> list[str]:
    """Write each table to ``folder/tables/NAME.csv``; return the names written.

    Formula cells are neutralised (:func:`neutralise_formulas`): a spreadsheet
    would run "=cmd|..." in an essay or id as a formula. CRLF rows (RFC 4180)
    make the writer quote a cell holding a lone CR, which a "\\n" terminator
    leaves bare, splitting the row in two.
    """
    written = []
    (folder / "tables").mkdir()
    for name, frame in tables.items():
        path = folder / "tables" / f"{name}.csv"
        neutralise_formulas(frame).to_csv(path, index=False, lineterminator="\r\n")
        written.append(f"tables/{name}.csv")
        pause("between-files")
    return written


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


# at most this many entries of dead runs are carried in a lock record
_MAX_ENTRIES = 64


def _identity(path: Path) -> list[int] | None:
    """``[device, inode]`` of the folder ``path`` (not a link), or None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino] if stat.S_ISDIR(st.st_mode) else None


def _same(path: Path, recorded: Any) -> bool:
    """Whether ``path`` is the very folder whose identity a lock record holds."""
    if not (
        isinstance(recorded, list)
        and len(recorded) == 2
        and all(type(v) is int for v in recorded)
    ):
        return False
    return _identity(path) == recorded


def _empty_folder(path: Path) -> bool:
    return _identity(path) is not None and not any(path.iterdir())


def _template(path: Path) -> tuple[int, int] | None:
    """Permission bits and group of the folder at ``path`` (POSIX), or None."""
    if os.name != "posix":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (stat.S_IMODE(st.st_mode), st.st_gid) if stat.S_ISDIR(st.st_mode) else None


def _give_template(folder: Path, template: tuple[int, int], *, final: bool) -> None:
    """Give ``folder`` the mode and group of the folder it replaces.

    Until ``final`` the owner keeps full access, so that the report can be
    written into a folder that was, say, 0o555; group and others never get
    more than the replaced folder gave them.
    """
    mode, gid = template
    if os.stat(folder).st_gid != gid:
        try:
            os.chown(folder, -1, gid)
        except PermissionError:
            if mode & 0o070:  # the group had access: the check at the claim failed
                raise
    # after chown, which may clear the setgid bit
    os.chmod(folder, mode if final else mode | 0o700)


def _group_name(gid: int) -> str:
    try:
        import grp

        return f"{grp.getgrgid(gid).gr_name!r} (gid {gid})"
    except (ImportError, KeyError):
        return f"gid {gid}"


def _mount_points() -> set[str]:
    """Every mount point of this process (Linux), bind mounts included."""
    try:
        with open("/proc/self/mountinfo", "rb") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return set()
    points = set()
    for line in lines:
        fields = line.split()
        if len(fields) > 4:
            # the kernel writes a space, tab, newline or backslash as \ooo
            raw = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), fields[4])
            points.add(os.fsdecode(raw))
    return points


def _is_mount_point(path: Path) -> bool:
    """Whether ``path`` (a resolved folder) is a mount point.

    ``os.path.ismount`` compares devices and inodes, which misses a bind mount
    of a folder of the same file system: the mount table says so too.
    """
    return os.path.ismount(path) or str(path) in _mount_points()


class ReportFolder:
    """A claimed output folder: checked and locked; :meth:`commit` writes it.

    Use :func:`claim_folder` to make one; call :meth:`release` in a
    ``finally`` (it removes what an unfinished run created and drops the lock).
    """

    def __init__(
        self,
        out: Path,
        real: Path,
        *,
        force: bool,
        option: str,
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        self.out = out
        self.real = real
        self.force = force
        self.option = option
        self.notes: list[str] = []
        self.committed = False
        self._on_note = on_note
        self._fd: int | None = None
        self._created: list[Path] = []
        # the run's id: in the names of its siblings and in its lock record
        self.run = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._partial = real.parent / f".{real.name}.partial-{self.run}"
        self._old = real.parent / f".{real.name}.old-{self.run}"
        self._lock = real.parent / f".{real.name}.lock"
        # identities of the siblings once this run has made them
        self._partial_id: list[int] | None = None
        self._old_id: list[int] | None = None
        # dead runs' entries not yet recovered: kept in our record meanwhile
        self._pending: list[dict[str, Any]] = []

    def _note(self, message: str) -> None:
        self.notes.append(message)
        if self._on_note is not None:
            self._on_note(message)

    def _suggest(self, path: Path) -> str:
        """How the user names ``path``: ``--out PATH`` or the path alone."""
        return f"{self.option} {path}" if self.option.startswith("-") else str(path)

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
        if _is_mount_point(real):
            raise OutputError(
                f"{out} is a mount point (a mounted volume or a bind mount); a report "
                "is written beside its folder and renamed into place, which a mount "
                "point cannot be: write the report into a folder inside it, e.g. "
                f"{self._suggest(out / 'report')}"
            )
        self._check_group()
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

    def _check_group(self) -> None:
        """Refuse a folder whose group (with access) the new one could not get."""
        template = _template(self.real)
        if template is None or not hasattr(os, "getgroups"):
            return
        mode, gid = template
        if not mode & 0o070 or os.geteuid() == 0:
            return
        if gid == os.getegid() or gid in os.getgroups():
            return
        raise OutputError(
            f"{self.out} belongs to the group {_group_name(gid)} (mode {mode:04o}), "
            "which you are not a member of: the new report folder could not keep "
            "that group, so other people than the folder's group could read it; "
            f"ask to be added to the group, or choose another {self.option}"
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

    def _bad_lock(self, why: str) -> OutputError:
        return OutputError(
            f"{self.out}: the lock file {self._lock} {why}; fairaes keeps its lock "
            "in a file of its own and never writes through a link or into another "
            f"file: remove {self._lock} (removing a link leaves the file it points "
            f"to as it is), or choose another {self.option}"
        )

    def _open_lock(self) -> int:
        """Open (or create) the lock file itself: never a link's target."""
        if os.path.islink(self._lock):
            raise self._bad_lock("is a symbolic link")
        flags = os.O_RDWR | os.O_CREAT
        # O_NONBLOCK: a FIFO planted there must not hang the open
        flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self._lock, flags, 0o666)
        except OSError:
            if os.path.islink(self._lock):  # planted between the check and the open
                raise self._bad_lock("is a symbolic link") from None
            raise
        st = os.fstat(fd)
        why = None
        if not stat.S_ISREG(st.st_mode):
            why = "is not a regular file"
        elif st.st_nlink > 1:
            why = "is a hard link to another file (writing it would change that file)"
        if why is not None:
            os.close(fd)
            raise self._bad_lock(why)
        return fd

    def _acquire(self) -> dict[str, Any]:
        """Take the lock; return the record a dead holder left in it."""
        while True:
            fd = self._open_lock()
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
                same = os.lstat(self._lock).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                record = _read_record(fd)
                owner = os.fstat(fd).st_uid
                if hasattr(os, "geteuid") and owner != os.geteuid() and record:
                    # another user wrote it: what it names is not proved ours
                    self._note(
                        f"ignored the record in {self._lock.name}: the file belongs "
                        f"to another user (uid {owner})"
                    )
                    return {}
                return record

    def _write_record(self) -> None:
        assert self._fd is not None
        data = json.dumps(
            {
                "run": self.run,
                "pid": os.getpid(),
                "partial": self._partial.name,
                "partial_id": self._partial_id,
                "old": self._old.name,
                "old_id": self._old_id,
                "pending": self._pending,
            }
        ).encode()
        os.ftruncate(self._fd, 0)
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.write(self._fd, data)

    def _sibling(self, entry: dict[str, Any], kind: str) -> Path | None:
        """The existing sibling of kind ``partial`` or ``old`` an entry names."""
        name = entry.get(kind)
        if not isinstance(name, str) or not name.startswith(f".{self.real.name}.{kind}-"):
            return None
        if os.path.basename(name) != name or (os.altsep and os.altsep in name):
            return None
        path = self.real.parent / name
        return path if _exists(path) else None

    def _recover(self, entry: dict[str, Any]) -> None:
        """Undo a dead run's swap and delete what it created (only that)."""
        who = f"an interrupted run (pid {entry.get('pid', 'unknown')})"
        alone = "remove it yourself if you do not need it"
        partial = self._sibling(entry, "partial")
        if partial is not None:
            if _same(partial, entry.get("partial_id")):
                shutil.rmtree(partial)
                self._note(f"removed {partial.name}, the unfinished report of {who}")
            elif entry.get("partial_id") is None and _empty_folder(partial):
                os.rmdir(partial)  # made, then killed before it was recorded
                self._note(f"removed the empty folder {partial.name}, left by {who}")
            else:
                self._note(
                    f"left {partial.name} alone: it is not the folder that {who} "
                    f"made; {alone}"
                )
        old = self._sibling(entry, "old")
        if old is None:
            return
        if not _same(old, entry.get("old_id")):
            self._note(
                f"left {old.name} alone: it is not the report that {who} set aside; {alone}"
            )
        elif not _exists(self.real):
            os.rename(old, self.real)
            self._note(
                f"restored the earlier report {self.out} from {old.name} ({who} was "
                "replacing it)"
            )
        elif _same(self.real, entry.get("partial_id")):
            shutil.rmtree(old)
            self._note(f"removed {old.name}, the earlier report that {who} had replaced")
        else:
            self._note(
                f"left {old.name} alone: it holds the report that {who} was replacing, "
                f"but {self.out} was made by something else since; {alone}"
            )

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
            # the dead run's entries stay in our record until they are done with
            self._pending = _entries(record)
            self._write_record()
            for entry in self._pending:
                self._recover(entry)
            self._pending = []
            self._write_record()
        except OSError as exc:
            raise OutputError(
                f"{self.out}: cannot tidy up after an earlier run in {self.real.parent} "
                f"({exc.strerror}: {exc.filename}); fix the permissions or choose "
                f"another {self.option}"
            ) from None
        self._check_existing()
        pause("claimed")

    def _unrenamable(self, exc: OSError) -> OutputError:
        return OutputError(
            f"cannot replace {self.out} by renaming ({exc.strerror}): it is a mount "
            "point or on another file system than its parent folder; write the report "
            f"into a folder inside it, e.g. {self._suggest(self.out / 'report')} "
            f"(nothing at {self.out} was changed)"
        )

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
            lock it (the new report is dropped; what is at ``OUT`` is kept), or
            cannot be renamed (a mount point).
        OSError
            If a file cannot be written (disk full, ...); ``OUT`` is unchanged
            and the partial folder removed (by :meth:`release`).
        """
        # a replaced folder's readers are the new one's: its mode and group are
        # set before anything is written (a new folder follows the umask, which
        # os.mkdir applies and tempfile.mkdtemp would not)
        template = _template(self.real)
        os.mkdir(self._partial, 0o700 if template is not None else 0o777)
        self._partial_id = _identity(self._partial)
        self._write_record()
        if template is not None:
            _give_template(self._partial, template, final=False)
        files = list(write(self._partial))
        write_marker(self._partial, files)
        if template is not None:
            _give_template(self._partial, template, final=True)
        # we hold the lock, but a process that does not take it may have
        # written OUT meanwhile: never replace what the first checks did not see
        self._check_existing()
        had_old = _exists(self.real)
        if had_old:
            self._old_id = _identity(self.real)
            self._write_record()
            try:
                os.rename(self.real, self._old)
            except OSError as exc:
                if exc.errno in (errno.EBUSY, errno.EXDEV):
                    raise self._unrenamable(exc) from None
                raise
        try:
            pause("between-renames")
            os.rename(self._partial, self.real)
        except BaseException as exc:
            if had_old and not _exists(self.real):
                os.rename(self._old, self.real)
            if isinstance(exc, OSError) and exc.errno in (errno.EBUSY, errno.EXDEV):
                raise self._unrenamable(exc) from None
            raise
        self.committed = True
        if had_old:
            shutil.rmtree(self._old, ignore_errors=True)

    def release(self) -> None:
        """Remove what this run created and did not keep, then drop the lock.

        Only the siblings this run made are touched. If one cannot be removed
        (or an earlier run's could not), the lock file is kept with the record
        that names them, for the next run to finish the work (with a note).
        """
        try:
            with contextlib.suppress(OSError):
                if _same(self._old, self._old_id):
                    if not _exists(self.real):
                        os.rename(self._old, self.real)
                    elif self.committed:
                        shutil.rmtree(self._old, ignore_errors=True)
                if _same(self._partial, self._partial_id):
                    shutil.rmtree(self._partial, ignore_errors=True)
        finally:
            if self._fd is not None:
                left = self._pending or any(_exists(p) for p in (self._old, self._partial))
                if not left:
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
        data = json.loads(os.read(fd, 1 << 20).decode() or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _entries(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A dead run's own entry and those it had not finished recovering."""
    pending = record.get("pending")
    items = [record, *(pending if isinstance(pending, list) else [])]
    keys = ("pid", "partial", "partial_id", "old", "old_id")
    found = [
        {k: item.get(k) for k in keys}
        for item in items
        if isinstance(item, dict) and (item.get("partial") or item.get("old"))
    ]
    return found[:_MAX_ENTRIES]


def claim_folder(
    out: str | os.PathLike[str],
    *,
    force: bool,
    inputs: Iterable[str | os.PathLike[str]] = (),
    option: str = "--out",
    on_note: Callable[[str], None] | None = None,
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
    on_note : callable, default=None
        Called with each note as it is made (a folder an interrupted run left
        that was restored or removed, or left alone), so that the user sees it
        even if the claim is then refused; the notes are also in ``notes``.

    Returns
    -------
    folder : ReportFolder
        The claimed folder; call ``commit`` to write it and ``release`` always.

    Raises
    ------
    OutputError
        If ``out`` cannot be used; nothing was created or changed, except what
        the notes say was restored or removed.
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
    folder = ReportFolder(out, real, force=force, option=option, on_note=on_note)
    try:
        folder._claim()
    except BaseException:
        folder.release()
        raise
    return folder
