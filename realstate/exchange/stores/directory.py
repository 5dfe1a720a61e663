"""A replica in a local directory: one ``<64 hex content id>.cmfrag`` file per fragment.

Layout: a marker file ``CANONMERGE_STORE`` and the fragment files (the format of
``realstate.exchange.fragment_file``).  While a write is in flight it lives in a temporary
``.tmp-<pid>-<16 hex>`` file in the same directory, which listing ignores.

Why it stays valid with many writers and crashes: a fragment file appears only by ``os.replace``
of a complete, fsynced temporary file, so a reader sees the whole file or nothing; two writers of
the same id write the same fragment, so either rename wins.  Nothing is ever deleted except stale
temporary files, on request (``clean_temporaries``).

Why a foreign entry is named but never fatal nor silently removed: anything else in the
directory (a symbolic link, a sub-directory, a file whose name is not an id, a FIFO) is not part
of the state, so listing skips it and every store command names it (``foreign``); refusing the
whole store would let anyone who can drop a file into it make a replica unusable, and deleting
it would destroy what another writer put there.  ``store clean --foreign`` removes foreign
entries when asked to, except one that is itself a replica store.  A fragment-named file whose
content hashes to another id is corruption, not a foreign entry: it is refused (``store verify``
names it)."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from realstate.exchange.fragment_file import (
    DEFAULT_LIMITS,
    FILE_SUFFIX,
    FormatError,
    FragmentHeader,
    Limits,
    load_fragment,
    read_header,
)
from realstate.exchange.stores.base import (
    DEFAULT_TEMP_AGE_S,
    MARKER_NAME,
    MARKER_TEXT,
    MAX_MARKER_BYTES,
    FragmentStore,
    fragment_name,
)
from realstate.kernel.fragment import Fragment
from spec.output_files import replace_atomically


def _foreign_kind(mode: int, store_name: bool) -> str:
    """What a foreign entry is, in words (for the message that names it)."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if not stat.S_ISREG(mode):
        return "a FIFO, socket or device"
    return "a regular file" if store_name else f"a file whose name is not <64 lowercase hex id>{FILE_SUFFIX}"


def _why_kept(directory: Path) -> str | None:
    """Why a foreign directory must not be removed: it holds a replica store at some depth, or
    some part of it cannot be examined (then it may hold one).  Walked by directory descriptors
    (``os.fwalk``: each level opened relative to its parent), so a tree deeper than the OS's path
    limit is examined whole instead of being skipped as unreadable; symbolic links not followed."""
    problems: list[OSError] = []
    try:
        for root, dirs, files, _ in os.fwalk(directory, follow_symlinks=False, onerror=problems.append):
            if MARKER_NAME in files or MARKER_NAME in dirs:
                return f"holds the replica store {root}; move it out by hand"
            if problems:
                break
    except RecursionError:
        return "is nested too deep to be examined whole, so it may hold a replica store; remove it by hand"
    except OSError as exc:
        problems.append(exc)
    if problems:
        return (f"cannot be examined whole ({_os_problem(problems[0])}), so it may hold a replica store; "
                "remove it by hand")
    return None


_FRAGMENT_NAME = re.compile(r"([0-9a-f]{64})" + re.escape(FILE_SUFFIX))
TEMP_NAME = re.compile(r"\.tmp-[0-9]+-[0-9a-f]{16}")
WRITE_BLOCK = 1 << 20  # bytes per write call: a killed writer can leave any prefix of blocks behind


def _os_problem(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


class DirectoryStore(FragmentStore):
    """A replica of the fragment set on disk.  ``create=True`` makes the directory (or adopts an
    empty one); otherwise the directory must already carry the store marker."""

    kind = "directory"
    write_block = WRITE_BLOCK

    def __init__(self, path: str | os.PathLike[str], *, create: bool = False,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        super().__init__(limits)
        self.path = Path(path)
        if create:
            self._create_directory()
        self._check_marker()

    @property
    def location(self) -> str:
        return str(self.path)

    # -- the directory ------------------------------------------------------------------------

    def _create_directory(self) -> None:
        try:
            self.path.mkdir(exist_ok=True)
        except OSError as exc:
            raise FormatError(str(self.path), "store", f"cannot create: {_os_problem(exc)}") from None
        marker = self.path / MARKER_NAME
        if os.path.lexists(marker):
            return  # checked by _check_marker
        others = [n for n in self._names() if n != MARKER_NAME and not TEMP_NAME.fullmatch(n)]
        if others:
            if os.path.lexists(marker):
                return  # a concurrent creator made it (and then a fragment) while we looked
            raise FormatError(str(self.path), "store", f"not empty and not a canonmerge store "
                                                               f"(no {MARKER_NAME}; found {sorted(others)[:3]})")
        self._write_atomic(MARKER_NAME, [MARKER_TEXT.encode("ascii")])

    def _names(self) -> list[str]:
        try:
            with os.scandir(self.path) as scan:
                return sorted(e.name for e in scan)
        except OSError as exc:
            raise FormatError(str(self.path), "store", f"cannot list: {_os_problem(exc)}") from None

    def _check_marker(self) -> None:
        marker = self.path / MARKER_NAME
        if not self.path.is_dir():
            problem = "is not a directory" if os.path.lexists(self.path) else "no such store directory"
            raise FormatError(str(self.path), "store", problem)
        try:
            info = os.lstat(marker)
        except FileNotFoundError:
            raise FormatError(str(self.path), "store", f"not a canonmerge store (no {MARKER_NAME})") from None
        except OSError as exc:
            raise FormatError(str(marker), "store marker", f"cannot stat: {_os_problem(exc)}") from None
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_MARKER_BYTES:
            raise FormatError(str(marker), "store marker", "is not a small regular file")
        try:
            text = marker.read_bytes()
        except OSError as exc:
            raise FormatError(str(marker), "store marker", f"cannot read: {_os_problem(exc)}") from None
        if text != MARKER_TEXT.encode("ascii"):
            raise FormatError(str(marker), "store marker", "unknown store layout or version")

    def _scan(self) -> tuple[list[tuple[bytes, Path, int]], list[tuple[str, str]]]:
        """The fragment files as (id, path, size), and the foreign entries as (where, what)
        (module doc); the marker and writers' temporaries are neither."""
        fragments: list[tuple[bytes, Path, int]] = []
        foreign: list[tuple[str, str]] = []
        for name in self._names():
            if name == MARKER_NAME:
                continue
            where = str(self.path / name)
            temporary, match = TEMP_NAME.fullmatch(name), _FRAGMENT_NAME.fullmatch(name)
            try:
                info = os.lstat(self.path / name)
            except FileNotFoundError:  # a temporary renamed by its writer, or a foreign entry removed
                if match is not None:
                    raise FormatError(where, "file", "vanished while the store was listed") from None
                continue
            except OSError as exc:
                raise FormatError(where, "file", f"cannot stat: {_os_problem(exc)}") from None
            regular = stat.S_ISREG(info.st_mode)
            if regular and match is not None:
                fragments.append((bytes.fromhex(match.group(1)), self.path / name, info.st_size))
            elif not (regular and temporary is not None):  # temporaries: a write in flight or a killed writer's
                foreign.append((where, _foreign_kind(info.st_mode, match is not None or temporary is not None)))
        return fragments, foreign

    def listing(self) -> dict[bytes, int]:
        return {cid: size for cid, _, size in self._scan()[0]}

    def foreign(self) -> list[tuple[str, str]]:
        return self._scan()[1]

    def remove_foreign(self) -> tuple[list[str], list[tuple[str, str]]]:
        removed: list[str] = []
        kept: list[tuple[str, str]] = []
        for where, _ in self.foreign():
            entry = Path(where)
            try:
                if entry.is_dir() and not entry.is_symlink():
                    why = _why_kept(entry)
                    if why is not None:
                        kept.append((where, why))
                        continue
                    try:
                        shutil.rmtree(entry)  # by descriptors too, where the platform allows it
                    except RecursionError:
                        raise FormatError(where, "foreign entry", "cannot remove: nested too deep") from None
                else:
                    os.unlink(entry)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise FormatError(where, "foreign entry", f"cannot remove: {_os_problem(exc)}") from None
            removed.append(where)
        if removed:
            self._fsync_directory()
        return removed, kept

    def path_of(self, cid: bytes | str) -> Path:
        return self.path / fragment_name(self._parse_id(cid))

    def where(self, cid: bytes) -> str:
        return str(self.path_of(cid))

    # -- reading ------------------------------------------------------------------------------

    def _exists(self, cid: bytes) -> bool:
        """Whether the fragment file is there; an error when its name is taken by a foreign
        entry (a put must not report "already present" for a fragment the store does not hold)."""
        path = self.path_of(cid)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise FormatError(str(path), "file", f"cannot stat: {_os_problem(exc)}") from None
        if not stat.S_ISREG(info.st_mode):
            raise FormatError(str(path), "file type", f"the fragment's name is taken by a foreign entry "
                                                      f"({_foreign_kind(info.st_mode, True)}); 'canonmerge store "
                                                      f"clean --foreign' removes it")
        return True

    def _read(self, cid: bytes, size: int | None) -> Fragment:
        path = self.path_of(cid)
        if not os.path.lexists(path):
            raise KeyError(fragment_name(cid))
        return self._check_id_matches(cid, load_fragment(path, self.limits, follow_symlinks=False))

    def _read_header(self, cid: bytes) -> FragmentHeader:
        return read_header(self.path_of(cid), self.limits, follow_symlinks=False)

    # -- writing ------------------------------------------------------------------------------

    def _create(self, cid: bytes, data: bytes) -> bool:
        name = fragment_name(cid)
        if self._exists(cid):
            return False
        block = self.write_block
        self._write_atomic(name, (data[at:at + block] for at in range(0, len(data), block)))
        return True

    def _write_atomic(self, name: str, chunks: Iterable[bytes]) -> None:
        """Temporary file in the store, write, flush, fsync, rename over ``name``, fsync the dir.
        On any error (disk full, read-only, permission) the temporary is removed and the error
        names the store and the cause; the store is left as it was."""
        temp = self.path / f".tmp-{os.getpid()}-{secrets.token_hex(8)}"
        try:
            replace_atomically(temp, self.path / name, chunks, self.step)
        except OSError as exc:
            raise FormatError(str(self.path / name), "store", f"cannot write: {_os_problem(exc)}") from None
        self._fsync_directory()

    def _fsync_directory(self) -> None:
        """Make the renames and removals in the directory durable.  The step is reported only
        once the fsync has returned, so that a step hook reads "directory synced" as a fact (the
        soak's power-loss model keeps a rename only after it)."""
        if os.name != "posix":
            return  # directories cannot be opened for fsync elsewhere
        try:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise FormatError(str(self.path), "store", f"cannot sync: {_os_problem(exc)}") from None
        self.step("directory synced")

    def temporaries(self) -> list[str]:
        names = []
        for name in self._names():
            if TEMP_NAME.fullmatch(name):
                try:
                    if stat.S_ISREG(os.lstat(self.path / name).st_mode):
                        names.append(name)
                except FileNotFoundError:
                    continue
        return names

    def clean_temporaries(self, older_than_s: float = DEFAULT_TEMP_AGE_S) -> list[str]:
        """Remove temporary files last modified more than ``older_than_s`` seconds ago (a live
        writer's file is younger); returns the names removed.  Touches nothing else."""
        if not older_than_s >= 0:
            raise FormatError(str(self.path), "older_than_s", f"must be >= 0, got {older_than_s}")
        now, removed = time.time(), []
        names = self.temporaries()
        self.step("temporaries listed")
        for name in names:
            path = self.path / name
            try:
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode) and now - info.st_mtime >= older_than_s:
                    os.unlink(path)
                    removed.append(name)
                    self.step("temporary removed")
            except FileNotFoundError:
                continue  # its writer finished (renamed it) or another cleaner got there first
            except OSError as exc:
                raise FormatError(str(path), "temporary", f"cannot remove: {_os_problem(exc)}") from None
        if removed:
            self._fsync_directory()
        return removed


