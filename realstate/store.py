"""An on-disk replica: a directory of content-addressed fragment files.

Layout: a marker file ``CANONMERGE_STORE`` and one ``<64 hex content id>.cmfrag`` per fragment
(the fragment file format of ``realstate.fragment_file``).  While a write is in flight it lives
in a temporary ``.tmp-<pid>-<16 hex>`` file in the same directory, which listing ignores.

Why it stays valid with many writers and crashes: a fragment file appears only by ``os.replace``
of a complete, fsynced temporary file, so a reader sees the whole file or nothing; two writers of
the same id write equal content, so either rename wins.  Nothing is ever deleted except stale
temporary files, on request (``clean_temporaries``).

Why it refuses rather than skips: anything else in the directory (a symlink, a file whose name is
not an id, a file whose content hashes to another id) is an error naming the file, never silently
ignored or removed: a replica that drops or invents fragments silently breaks convergence."""

from __future__ import annotations

import os
import re
import secrets
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from realstate.fingerprint import Fingerprint
from realstate.fragment import Fragment, fragment_set
from realstate.fragment_file import (
    DEFAULT_LIMITS,
    FILE_SUFFIX,
    FragmentFormatError,
    Limits,
    fragment_to_bytes,
    load_fragment,
    read_header,
)
from spec import FragmentSet, content_id_hex, parse_content_id_hex

if TYPE_CHECKING:
    from realstate.render import Rendered

MARKER_NAME = "CANONMERGE_STORE"
MARKER_TEXT = "canonmerge replica store 1\nfragments: <64 lowercase hex content id>.cmfrag\n"
_FRAGMENT_NAME = re.compile(r"([0-9a-f]{64})" + re.escape(FILE_SUFFIX))
_TEMP_NAME = re.compile(r"\.tmp-[0-9]+-[0-9a-f]{16}")
DEFAULT_TEMP_AGE_S = 3600.0


class ReplicaStore:
    """A replica of the fragment set on disk.  ``create=True`` makes the directory (or adopts an
    empty one); otherwise the directory must already carry the store marker."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = False,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        self.path = Path(path)
        self.limits = limits
        self._fingerprint: Fingerprint | None = None
        if create:
            self._create()
        self._check_marker()

    def __repr__(self) -> str:
        return f"ReplicaStore({str(self.path)!r})"

    # -- the directory ------------------------------------------------------------------------

    def _create(self) -> None:
        try:
            self.path.mkdir(exist_ok=True)
        except OSError as exc:
            raise FragmentFormatError(str(self.path), "store", f"cannot create: {exc.strerror or exc}") from None
        marker = self.path / MARKER_NAME
        if os.path.lexists(marker):
            return  # checked by _check_marker
        with os.scandir(self.path) as scan:
            others = [e.name for e in scan if e.name != MARKER_NAME and not _TEMP_NAME.fullmatch(e.name)]
        if others:
            if os.path.lexists(marker):
                return  # a concurrent creator made it (and then a fragment) while we looked
            raise FragmentFormatError(str(self.path), "store", f"not empty and not a canonmerge store "
                                                               f"(no {MARKER_NAME}; found {sorted(others)[:3]})")
        self._write_atomic(MARKER_NAME, [MARKER_TEXT.encode("ascii")])

    def _check_marker(self) -> None:
        marker = self.path / MARKER_NAME
        if not self.path.is_dir():
            problem = "is not a directory" if os.path.lexists(self.path) else "no such store directory"
            raise FragmentFormatError(str(self.path), "store", problem)
        try:
            info = os.lstat(marker)
        except FileNotFoundError:
            raise FragmentFormatError(str(self.path), "store", f"not a canonmerge store (no {MARKER_NAME})") from None
        if not stat.S_ISREG(info.st_mode) or info.st_size > 4096:
            raise FragmentFormatError(str(marker), "store marker", "is not a small regular file")
        if marker.read_bytes() != MARKER_TEXT.encode("ascii"):
            raise FragmentFormatError(str(marker), "store marker", "unknown store layout or version")

    def _entries(self) -> Iterator[tuple[bytes, Path]]:
        """Every fragment file as (id, path); refuses anything that is not one (see module doc)."""
        with os.scandir(self.path) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        for entry in entries:
            name, where = entry.name, str(self.path / entry.name)
            if name == MARKER_NAME:
                continue
            temporary, match = _TEMP_NAME.fullmatch(name), _FRAGMENT_NAME.fullmatch(name)
            if temporary is None and match is None:
                raise FragmentFormatError(where, "file name", f"not <64 lowercase hex id>{FILE_SUFFIX}; "
                                                              f"refusing a store with foreign files")
            try:
                symlink, regular = entry.is_symlink(), entry.is_file(follow_symlinks=False)
            except FileNotFoundError:  # only a temporary can vanish: its writer renamed it
                if temporary is not None:
                    continue
                raise FragmentFormatError(where, "file", "vanished while the store was listed") from None
            if symlink:
                raise FragmentFormatError(where, "file type", "is a symbolic link; refused in a store")
            if not regular:
                raise FragmentFormatError(where, "file type", "is not a regular file")
            if match is not None:  # temporaries: a write in flight or a killed writer's; not state
                yield bytes.fromhex(match.group(1)), self.path / name

    def ids(self) -> list[bytes]:
        """The ids present, ascending.  Checks names and file types; contents are checked on read."""
        return [cid for cid, _ in self._entries()]

    def path_of(self, cid: bytes | str) -> Path:
        return self.path / f"{content_id_hex(self._parse_id(cid))}{FILE_SUFFIX}"

    def _parse_id(self, cid: bytes | str) -> bytes:
        """Ids from untrusted input: exactly 64 lowercase hex digits (so no path can be named)."""
        try:
            return parse_content_id_hex(cid) if isinstance(cid, str) else parse_content_id_hex(cid.hex())
        except (ValueError, AttributeError) as exc:
            raise FragmentFormatError(str(self.path), "content id", str(exc)) from None

    def __contains__(self, cid: object) -> bool:
        try:
            return os.path.lexists(self.path_of(cid))  # type: ignore[arg-type]
        except FragmentFormatError:
            return False  # a malformed id names no fragment

    def __len__(self) -> int:
        return len(self.ids())

    # -- reading ------------------------------------------------------------------------------

    def get(self, cid: bytes | str) -> Fragment:
        """The fragment with this id, fully validated; ``KeyError`` when absent."""
        cid = self._parse_id(cid)
        path = self.path_of(cid)
        if not os.path.lexists(path):
            raise KeyError(content_id_hex(cid))
        return self._load(cid, path)

    def _load(self, cid: bytes, path: Path) -> Fragment:
        fragment = load_fragment(path, self.limits, follow_symlinks=False)
        if fragment.content_id != cid:
            raise FragmentFormatError(str(path), "file name", f"content hashes to "
                                                              f"{content_id_hex(fragment.content_id)}, "
                                                              f"not to the id the file is named by")
        return fragment

    def fragments(self) -> FragmentSet[Fragment]:
        """The replicated state: every fragment, each fully validated."""
        return fragment_set(self._load(cid, path) for cid, path in self._entries())

    def fingerprint(self) -> Fingerprint | None:
        """The fingerprint of the fragments held (read from one header), ``None`` when empty."""
        if self._fingerprint is None:
            for _, path in self._entries():
                self._fingerprint = read_header(path, self.limits, follow_symlinks=False).fingerprint
                break
        return self._fingerprint

    def render(self, base: int = 0) -> Rendered:
        """CanonicalMerge of the stored set (``realstate.render.canonical_render``)."""
        from realstate.render import canonical_render  # transformers only when rendering

        return canonical_render(self.fragments(), base)

    # -- writing ------------------------------------------------------------------------------

    def check_fingerprint(self, fragment: Fragment, source: str) -> None:
        """Fragments with different fingerprints never merge: refuse one that differs from ours.
        (Two first writers racing into an empty store are caught at render time instead.)"""
        ours = self.fingerprint()
        if ours is not None and fragment.fingerprint != ours:
            raise FragmentFormatError(source, "fingerprint", f"differs from the store's fingerprint in "
                                                             f"{ours.describe_mismatch(fragment.fingerprint)}")

    def put(self, fragment: Fragment) -> bool:
        """Add ``fragment``; ``False`` (and nothing written) when its id is already present."""
        path = self.path_of(fragment.content_id)
        if os.path.lexists(path):
            return False
        self.check_fingerprint(fragment, f"fragment {content_id_hex(fragment.content_id)}")
        self._write_atomic(path.name, [fragment_to_bytes(fragment)])
        if self._fingerprint is None:
            self._fingerprint = fragment.fingerprint
        return True

    def put_file(self, path: str | os.PathLike[str]) -> bool:
        """Validate the fragment file at ``path`` fully, then ``put`` it."""
        fragment = load_fragment(path, self.limits)
        self.check_fingerprint(fragment, str(path))
        return self.put(fragment)

    def put_all(self, fragments: Iterable[Fragment]) -> int:
        """Put several fragments after checking all of them first; returns how many were new."""
        incoming = list(fragments)
        require_one_fingerprint(incoming)
        for fragment in incoming:
            self.check_fingerprint(fragment, f"fragment {content_id_hex(fragment.content_id)}")
        return sum(self.put(f) for f in incoming)

    def merge(self, other: ReplicaStore) -> int:
        """Set union: add every fragment of ``other`` not present here; returns how many.
        Every file of ``other`` is fully validated (even ids already here) before anything is
        written, so a corrupt source fails the whole merge instead of half-applying it."""
        incoming = [other._load(cid, path) for cid, path in other._entries()]
        ours = set(self.ids())
        return self.put_all(f for f in incoming if f.content_id not in ours)

    def _write_atomic(self, name: str, chunks: Iterable[bytes]) -> None:
        """Temporary file in the store, write, flush, fsync, rename over ``name``, fsync the dir."""
        temp = self.path / f".tmp-{os.getpid()}-{secrets.token_hex(8)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(temp, flags, 0o644)
        try:
            with os.fdopen(fd, "wb") as handle:
                for chunk in chunks:
                    handle.write(chunk)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path / name)
        except BaseException:
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass
            raise
        self._fsync_directory()

    def _fsync_directory(self) -> None:
        if os.name != "posix":
            return  # directories cannot be opened for fsync elsewhere
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def temporaries(self) -> list[str]:
        """Names of temporary files present (writes in flight or left by killed writers)."""
        with os.scandir(self.path) as scan:
            return sorted(e.name for e in scan if _TEMP_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False))

    def clean_temporaries(self, older_than_s: float = DEFAULT_TEMP_AGE_S) -> list[str]:
        """Remove temporary files last modified more than ``older_than_s`` seconds ago (a live
        writer's file is younger); returns the names removed.  Touches nothing else."""
        if older_than_s < 0:
            raise FragmentFormatError(str(self.path), "older_than_s", f"must be >= 0, got {older_than_s}")
        now, removed = time.time(), []
        for name in self.temporaries():
            path = self.path / name
            try:
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode) and now - info.st_mtime >= older_than_s:
                    os.unlink(path)
                    removed.append(name)
            except FileNotFoundError:
                continue  # its writer finished (renamed it) or another cleaner got there first
        return removed


def require_one_fingerprint(fragments: Iterable[Fragment]) -> Fingerprint | None:
    """The fingerprint all ``fragments`` share (``None`` for none); an error naming the fields
    where one differs, because fragments with different fingerprints never merge."""
    first: Fragment | None = None
    for fragment in fragments:
        if first is None:
            first = fragment
        elif fragment.fingerprint != first.fingerprint:
            raise FragmentFormatError(f"fragment {content_id_hex(fragment.content_id)}", "fingerprint",
                                      f"differs from fragment {content_id_hex(first.content_id)} in "
                                      f"{first.fingerprint.describe_mismatch(fragment.fingerprint)}")
    return None if first is None else first.fingerprint
