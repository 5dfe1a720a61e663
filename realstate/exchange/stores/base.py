"""The one interface every replica store offers, and the logic all of them share.

A store holds a grow-only set of fragments keyed by content id.  A backend supplies five
primitives — list the ids with their sizes, read one fragment's bytes, read one fragment's
header, create one fragment if absent, and look after leftovers of killed writers — and this
class builds the rest on them: validated reads (the content id is recomputed and must equal the
key), the one-fingerprint rule, idempotent puts, verification.

Why the primitives are this small: conditional create ("write only if absent") and listing are
exactly what a grow-only set needs, and both a directory (``O_EXCL`` temporaries + rename) and an
S3-compatible object store (``If-None-Match: *``) provide them natively.  Everything a peer
could get wrong is checked here, once, for every backend."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from realstate.exchange.fragment_file import (
    DEFAULT_LIMITS,
    FILE_SUFFIX,
    FormatError,
    FragmentHeader,
    Limits,
    fragment_to_bytes,
    load_fragment,
)
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment, fragment_set
from spec import FragmentSet, content_id_hex, parse_content_id_hex
from spec.store_marker import MARKER_NAME, MARKER_TEXT, MAX_MARKER_BYTES

if TYPE_CHECKING:
    from realstate.kernel.render import Rendered

DEFAULT_TEMP_AGE_S = 3600.0
__all__ = ["DEFAULT_TEMP_AGE_S", "MARKER_NAME", "MARKER_TEXT", "MAX_MARKER_BYTES", "FragmentStore", "StepHook",
           "VerifyReport", "fragment_name", "no_step", "require_one_fingerprint"]

StepHook = Callable[[str], None]


def no_step(name: str) -> None:
    """The default step hook: nothing watches a store's steps but crash tests and the soak's
    nemesis, which stop a writer at a chosen step, and the soak's power-loss model, which
    records them (``FragmentStore.step``)."""


def fragment_name(cid: bytes) -> str:
    """The file or object name of a fragment inside a store: ``<64 hex>.cmfrag``."""
    return f"{content_id_hex(cid)}{FILE_SUFFIX}"


@dataclass
class VerifyReport:
    """What ``FragmentStore.verify`` found: every fragment re-read and re-hashed."""

    location: str
    checked: int = 0
    bytes_read: int = 0
    corrupt: list[tuple[str, str]] = field(default_factory=list)  # (where, problem)
    temporaries: list[str] = field(default_factory=list)
    foreign: list[tuple[str, str]] = field(default_factory=list)  # (where, what): not part of the state

    @property
    def ok(self) -> bool:
        return not self.corrupt


class FragmentStore(ABC):
    """A replica: a grow-only set of validated fragments, named by content id."""

    kind: ClassVar[str]  # "directory" or "s3": for reports

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._fingerprint: Fingerprint | None = None
        # told the name of every point of a write or a clean where a crash could land (after
        # each write, around fsync, around rename): how crashes are injected step by step
        self.step: StepHook = no_step

    # -- what a backend provides ----------------------------------------------------------------

    @property
    @abstractmethod
    def location(self) -> str:
        """How the user names this store (a path or an ``s3://`` URL): printed in every message."""

    @abstractmethod
    def listing(self) -> dict[bytes, int]:
        """Every fragment present as id -> size in bytes.  Anything else (not a fragment, the
        marker or a writer's temporary) is a foreign entry: skipped here, named by ``foreign``."""

    @abstractmethod
    def foreign(self) -> list[tuple[str, str]]:
        """Entries another writer put into the store that are not part of the state, as
        (printable location, what it is); every store command names them."""

    @abstractmethod
    def remove_foreign(self) -> tuple[list[str], list[tuple[str, str]]]:
        """Remove the foreign entries (only ever on request: ``store clean --foreign``); returns
        what was removed and what was kept, with why (one that holds a replica store is kept)."""

    @abstractmethod
    def where(self, cid: bytes) -> str:
        """The printable location of one fragment (a file path or an object URL)."""

    @abstractmethod
    def _read(self, cid: bytes, size: int | None) -> Fragment:
        """The fragment stored under ``cid``, fully validated (``KeyError`` when absent).
        ``size`` is the size the listing reported (checked against the limits before reading)."""

    @abstractmethod
    def _read_header(self, cid: bytes) -> FragmentHeader:
        """Only the validated header of the fragment stored under ``cid``."""

    @abstractmethod
    def _create(self, cid: bytes, data: bytes) -> bool:
        """Store ``data`` under ``cid`` unless something is already there; ``False`` then.
        Atomic: a reader sees all of ``data`` or nothing, even if the writer is killed."""

    @abstractmethod
    def _exists(self, cid: bytes) -> bool:
        """Whether a fragment is stored under ``cid`` (no validation)."""

    @abstractmethod
    def temporaries(self) -> list[str]:
        """Leftovers of writes in flight or of killed writers (not part of the state)."""

    @abstractmethod
    def clean_temporaries(self, older_than_s: float = DEFAULT_TEMP_AGE_S) -> list[str]:
        """Remove leftovers older than ``older_than_s`` seconds; returns what was removed."""

    # -- shared on top ----------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"

    def _parse_id(self, cid: bytes | str) -> bytes:
        """Ids from untrusted input: exactly 64 lowercase hex digits (so no path can be named)."""
        try:
            return parse_content_id_hex(cid) if isinstance(cid, str) else parse_content_id_hex(cid.hex())
        except (ValueError, AttributeError) as exc:
            raise FormatError(self.location, "content id", str(exc)) from None

    def ids(self) -> list[bytes]:
        """The ids present, ascending.  Checks names; contents are checked on read."""
        return sorted(self.listing())

    def __len__(self) -> int:
        return len(self.listing())

    def __contains__(self, cid: object) -> bool:
        try:
            return self._exists(self._parse_id(cid))  # type: ignore[arg-type]
        except FormatError:
            return False  # a malformed id names no fragment

    def get(self, cid: bytes | str, listed_size: int | None = None) -> Fragment:
        """The fragment with this id, fully validated; ``KeyError`` when absent.  ``listed_size``
        (from ``listing()``) saves a backend the size lookup it does before reading."""
        return self._read(self._parse_id(cid), listed_size)

    def fragments(self) -> FragmentSet[Fragment]:
        """The replicated state: every fragment, each fully validated."""
        return fragment_set(self._read(cid, size) for cid, size in sorted(self.listing().items()))

    def fingerprint(self) -> Fingerprint | None:
        """The fingerprint of the fragments held (read from one header), ``None`` when empty."""
        if self._fingerprint is None:
            ids = self.ids()
            if ids:
                self._fingerprint = self._read_header(ids[0]).fingerprint
        return self._fingerprint

    def check_fingerprint(self, fragment: Fragment, source: str) -> None:
        """Fragments with different fingerprints never merge: refuse one that differs from ours.
        (Two first writers racing into an empty store are caught at render time instead.)"""
        self.check_fingerprints([(fragment, source)])

    def check_fingerprints(self, incoming: Iterable[tuple[Fragment, str]]) -> None:
        """``check_fingerprint`` for many fragments, looking the store's fingerprint up once."""
        ours = self.fingerprint()
        if ours is None:
            return
        for fragment, source in incoming:
            if fragment.fingerprint != ours:
                raise FormatError(source, "fingerprint", f"differs from the store's fingerprint in "
                                                                 f"{ours.describe_mismatch(fragment.fingerprint)}")

    def put(self, fragment: Fragment, *, checked: bool = False) -> bool:
        """Add ``fragment``; ``False`` (and nothing written) when its id is already present.
        The bytes stored are canonmerge's own encoding of a validated fragment, never a copy of
        what a peer sent.  ``checked=True``: the caller has just listed the store (the id was
        absent) and checked the fingerprint, so neither is looked up again."""
        if not checked:
            if self._exists(fragment.content_id):
                return False
            self.check_fingerprint(fragment, f"fragment {content_id_hex(fragment.content_id)}")
        added = self._create(fragment.content_id, fragment_to_bytes(fragment))
        if self._fingerprint is None:
            self._fingerprint = fragment.fingerprint
        return added

    def put_file(self, path: str | os.PathLike[str]) -> bool:
        """Validate the fragment file at ``path`` fully, then ``put`` it."""
        fragment = load_fragment(path, self.limits)
        self.check_fingerprint(fragment, str(path))
        return self.put(fragment)

    def put_all(self, fragments: Iterable[Fragment]) -> int:
        """Put several fragments after checking all of them first; returns how many were new."""
        incoming = list(fragments)
        require_one_fingerprint(incoming)
        self.check_fingerprints((f, f"fragment {content_id_hex(f.content_id)}") for f in incoming)
        return sum(self.put(f) for f in incoming)

    def render(self, base: int = 0) -> Rendered:
        """CanonicalMerge of the stored set (``realstate.kernel.render.canonical_render``)."""
        from realstate.kernel.render import canonical_render  # transformers only when rendering

        return canonical_render(self.fragments(), base)

    def verify(self) -> VerifyReport:
        """Re-read and re-hash every fragment, collecting every problem instead of stopping at
        the first, and check that all fragments share one fingerprint."""
        report = VerifyReport(self.location, temporaries=self.temporaries(), foreign=self.foreign())
        first: tuple[str, Fingerprint] | None = None
        for cid, size in sorted(self.listing().items()):
            report.checked += 1
            try:
                fragment = self._read(cid, size)
            except KeyError:
                report.corrupt.append((self.where(cid), "vanished while the store was verified"))
                continue
            except FormatError as exc:
                report.corrupt.append((exc.source, f"{exc.field}: {exc.problem}"))
                continue
            report.bytes_read += size
            if first is None:
                first = (self.where(cid), fragment.fingerprint)
            elif fragment.fingerprint != first[1]:
                report.corrupt.append((self.where(cid), f"fingerprint differs from {first[0]} in "
                                                        f"{first[1].describe_mismatch(fragment.fingerprint)}"))
        return report

    def _check_id_matches(self, cid: bytes, fragment: Fragment) -> Fragment:
        if fragment.content_id != cid:
            raise FormatError(self.where(cid), "file name", f"content hashes to "
                                                                    f"{content_id_hex(fragment.content_id)}, "
                                                                    f"not to the id it is stored under")
        return fragment


def require_one_fingerprint(fragments: Iterable[Fragment]) -> Fingerprint | None:
    """The fingerprint all ``fragments`` share (``None`` for none); an error naming the fields
    where one differs, because fragments with different fingerprints never merge."""
    first: Fragment | None = None
    for fragment in fragments:
        if first is None:
            first = fragment
        elif fragment.fingerprint != first.fingerprint:
            raise FormatError(f"fragment {content_id_hex(fragment.content_id)}", "fingerprint",
                                      f"differs from fragment {content_id_hex(first.content_id)} in "
                                      f"{first.fingerprint.describe_mismatch(fragment.fingerprint)}")
    return None if first is None else first.fingerprint
