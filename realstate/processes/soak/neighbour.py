"""A hostile or careless neighbour: entries planted into a directory replica mid-run, and the
verdict on what the store did with them.

Why: a directory replica lives where other people and programs can write.  The store's contract
(``DirectoryStore``'s module doc) is that anything but its marker, its fragment files and
writers' temporaries is a foreign entry: skipped by listing, named, never fatal, never read
through, removed only by ``store clean --foreign`` and even then never when it holds a replica
store.  A run that never meets such entries cannot see those guards weakened, so the nemesis
plants, while an operation on that replica is in flight, one case of each guard:

- a symbolic link named like a fragment (``<id>.cmfrag``), pointing at a valid fragment file
  outside every store, of an id no agent publishes;
- a foreign file;
- a foreign directory holding a symbolic link to a replica store outside (the directory holds
  no store itself: the link is not followed);
- a replica store made inside the replica by hand.

The outsider's own material (the fragment file and the store the links point at) lives outside
every replica.  The verdict, after the run's own (``judge``), for every replica planted into:

1. every planted entry and all the outsider's material exactly as planted after the whole run
   (merges, heal, the judge's clean of temporaries), by a tree digest that reads links and
   never follows them;
2. the replica's foreign entries exactly the planted ones;
3. the link's id in no replica's set, and ``get`` of it refused (never read through the link);
4. ``remove_foreign`` (``store clean --foreign``) removes exactly the link, the file and the
   directory, keeps exactly the nested store, and leaves the replica's fragments, the nested
   store and the outsider's material as they were.

And once per run, beside the outsider's material: creating a store over a directory holding the
neighbour's notes is refused and writes nothing; creating one where only a killed creator's
temporary lies succeeds.

Controls (``neighbour_controls``), in every soak, show the store's refusals and this verdict
could see.  A correct run never opens a store where none exists, never meets a marker that is not
a regular file, and, when every replica is clean, gives the verdict nothing to keep; so a store
that made a missing store on opening, a marker check that looked only at the marker's size, or a
verdict that kept only the last replica's findings would pass every real run unnoticed.  Each
control must come out as the contract says; one that does not makes the verdict report itself
blind (``with_controls``), so the soak's convergence row fails naming it:

- ``missing store``: a directory store opened without ``create`` where nothing exists is refused,
  and nothing is left behind;
- ``marker not a regular file``: a store whose marker is a directory, or a symbolic link to a
  file holding the right marker text, is refused because the marker is not a small regular file
  (no FIFO: a store that read one would block the soak instead of failing it);
- ``findings of every replica``: two scratch replicas planted into like the real ones, the first
  one judged with its neighbour's file overwritten (what a store that writes into foreign entries
  would do), the second clean, through ``neighbour_verdict`` itself: the first one's violation
  must be reported, and nothing of the second's;
- ``an entry gone before clean --foreign reached it``: ``clean --foreign`` working from a listing
  taken before another cleaner removed its first entry (the store's own ``foreign`` listing with
  that entry in front) still removes the rest;
- ``a header read through a link``: the store's fingerprint read from a listing taken before the
  neighbour swapped a fragment for a link (the store's own ``ids`` naming the planted link) is
  refused because the entry is a symbolic link, never read through it;
- ``a nested store whose marker is not a regular file``: ``clean --foreign`` keeps two foreign
  directories holding an entry named like the marker that is a directory or a dangling link.

The fourth and fifth stand in for races a real run meets only by chance: the store code they run is
the real one; only the listing it works from is held still."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from realstate.exchange.fragment_file import fragment_to_bytes
from realstate.exchange.stores import MARKER_NAME, MARKER_TEXT, DirectoryStore, fragment_name
from realstate.kernel.fragment import Fragment
from spec import InputError, content_id_hex


def tree_digest(roots: Iterable[Path]) -> dict[str, str]:
    """Path -> what is there, for every entry at or below each root: a link's target (read,
    never followed), a directory, a file's SHA-256, or absent."""
    found: dict[str, str] = {}

    def one(path: Path) -> None:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            found[str(path)] = "absent"
            return
        if stat.S_ISLNK(info.st_mode):
            found[str(path)] = f"link to {os.readlink(path)}"
        elif stat.S_ISDIR(info.st_mode):
            found[str(path)] = "directory"
            for child in sorted(os.listdir(path)):
                one(path / child)
        elif stat.S_ISREG(info.st_mode):
            found[str(path)] = "file " + hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[str(path)] = "special"

    for root in roots:
        one(root)
    return found


@dataclass(frozen=True)
class Planted:
    """What one neighbour planted into ``replica`` (paths), and the outsider's material."""

    replica: str
    link_id: str  # the id the link is named after (hex)
    link: str
    file: str
    directory: str
    nested: str
    outside: str

    @property
    def removable(self) -> set[str]:
        return {self.link, self.file, self.directory}

    @property
    def roots(self) -> list[Path]:
        return [Path(p) for p in (self.link, self.file, self.directory, self.nested, self.outside)]


def _hand_made_store(path: Path, data: bytes, name: str) -> None:
    """A store as someone makes it by hand, without the library: a marker and a fragment file."""
    path.mkdir()
    (path / MARKER_NAME).write_text(MARKER_TEXT, encoding="ascii")
    (path / name).write_bytes(data)


def plant(replica: Path, outside: Path, outsider: Fragment, tag: str) -> tuple[Planted, dict[str, str]]:
    """Plant the four entries (module doc) into ``replica``, the outsider's material into
    ``outside`` (which must lie outside every replica); returns them and their tree digest."""
    data = fragment_to_bytes(outsider)
    name = fragment_name(outsider.content_id)
    outside.mkdir(parents=True)
    (outside / name).write_bytes(data)
    _hand_made_store(outside / "store", data, name)
    planted = Planted(str(replica), content_id_hex(outsider.content_id), str(replica / name),
                      str(replica / f"neighbour-{tag}.txt"), str(replica / f"neighbour-{tag}"),
                      str(replica / f"nested-{tag}"), str(outside))
    Path(planted.link).symlink_to(outside / name)
    Path(planted.file).write_text("a neighbour's notes\n", encoding="ascii")
    Path(planted.directory).mkdir()
    (Path(planted.directory) / "elsewhere").symlink_to(outside / "store", target_is_directory=True)
    _hand_made_store(Path(planted.nested), data, name)
    return planted, tree_digest(planted.roots)


def _changed(before: dict[str, str], roots: Iterable[Path]) -> list[str]:
    after = tree_digest(roots)
    wanted = {k: v for k, v in before.items() if any(k == str(r) or k.startswith(f"{r}/") for r in roots)}
    return sorted(k for k in wanted.keys() | after.keys() if wanted.get(k, "absent") != after.get(k, "absent"))


def _replica_verdict(replica: str, plants: list[tuple[Planted, dict[str, str]]],
                     rows: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    for p, digest in plants:
        changed = _changed(digest, p.roots)
        if changed:
            problems.append(f"the neighbour's entries changed during the run: {changed[:3]}")
        held = [r["replica"] for r in rows if p.link_id in r["ids"]]
        if held:
            problems.append(f"the link {p.link} was read as a fragment: its id is in {held[:2]}")
    store = DirectoryStore(replica)
    planted = {e for p, _ in plants for e in (*p.removable, p.nested)}
    foreign = {where for where, _ in store.foreign()}
    if foreign != planted:
        problems.append(f"foreign entries not as planted: unplanted {sorted(foreign - planted)[:3]}, "
                        f"not named {sorted(planted - foreign)[:3]}")
    for p, _ in plants:
        try:
            store.get(p.link_id)
            problems.append(f"get followed the link {p.link} out of the store and served the fragment")
        except (InputError, KeyError):
            pass  # refused: the link is not the store's
    fragments = store.listing()
    removed, kept = store.remove_foreign()
    if set(removed) != {e for p, _ in plants for e in p.removable}:
        problems.append(f"clean --foreign removed {sorted(removed)[:4]}, not exactly the link, file and directory")
    if {where for where, _ in kept} != {p.nested for p, _ in plants}:
        problems.append(f"clean --foreign kept {sorted(w for w, _ in kept)[:3]}, not exactly the nested store")
    if store.listing() != fragments:
        problems.append("clean --foreign changed the replica's fragments")
    for p, digest in plants:
        changed = _changed(digest, [Path(p.nested), Path(p.outside)])
        if changed:
            problems.append(f"clean --foreign touched the nested store or the outsider's material: {changed[:3]}")
    return problems


def _creation_verdict(where: Path) -> list[str]:
    """A replica pointed at a directory the neighbour uses: creating a store over the neighbour's
    notes is refused and writes nothing, while a directory holding only a killed creator's
    temporary is a store in the making, and creating it succeeds."""
    problems: list[str] = []
    notes, leftover = where / "notes", where / "killed-creator"
    notes.mkdir(parents=True)
    (notes / "neighbour.txt").write_text("a neighbour's notes\n", encoding="ascii")
    try:
        DirectoryStore(notes, create=True)
        problems.append(f"a store was created over a neighbour's directory ({notes})")
    except InputError:
        pass  # refused, as the contract says
    if sorted(os.listdir(notes)) != ["neighbour.txt"]:
        problems.append(f"refusing to create a store over {notes} wrote into it: {sorted(os.listdir(notes))[:3]}")
    leftover.mkdir()
    (leftover / f".tmp-{os.getpid()}-{'0' * 16}").write_bytes(b"half a marker")
    try:
        DirectoryStore(leftover, create=True)
    except InputError as exc:
        problems.append(f"a store could not be created where only a killed creator's temporary lies: {exc}")
    return problems


def neighbour_verdict(planted: list[tuple[Planted, dict[str, str]]], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict on every replica planted into (module doc) and on creating a store where the
    neighbour writes (``_creation_verdict``); ``rows`` are the judge's."""
    violations: list[str] = []
    if planted:   # first, so that nothing below can overwrite what it found
        try:
            violations = _creation_verdict(Path(planted[0][0].outside + "-create"))
        except OSError as exc:
            violations = [f"creating a store where the neighbour writes could not be judged: {str(exc)[:200]}"]
    for replica in sorted({p.replica for p, _ in planted}):
        mine = [(p, d) for p, d in planted if p.replica == replica]
        try:
            violations += [f"{replica}: {v}" for v in _replica_verdict(replica, mine, rows)]
        except (InputError, OSError) as exc:
            violations.append(f"{replica}: the replica could not be judged: {str(exc)[:200]}")
    return {"planted": len(planted), "replicas": len({p.replica for p, _ in planted}),
            "violations": violations[:20], "ok": not violations}


# -- controls of the verdict and the store's refusals (module doc) ---------------------------------

MISSING_STORE = "missing store"
ODD_MARKER = "marker not a regular file"
EVERY_REPLICA = "findings of every replica"
LISTED_THEN_GONE = "an entry gone before clean --foreign reached it"
HEADER_THROUGH_LINK = "a header read through a link"
ODD_NESTED_STORE = "a nested store whose marker is not a regular file"
NOT_REGULAR = "is not a small regular file"  # the refusal's reason the marker check gives
SEEN = "seen"


def _missing_store(where: Path) -> str:
    where.mkdir(parents=True)  # the store's parent exists: only the store itself is missing
    missing = where / "no-store-here"
    try:
        DirectoryStore(missing)
        return f"a store was opened where none exists ({missing})"
    except InputError:
        pass  # refused, as the contract says
    if os.path.lexists(missing):
        return f"refusing to open a missing store left {missing} behind"
    return SEEN


def _odd_markers(where: Path) -> str:
    where.mkdir(parents=True)
    real = where / "marker-text"
    real.write_text(MARKER_TEXT, encoding="ascii")
    makers = {"a directory": lambda marker: marker.mkdir(),
              "a symbolic link to the marker text": lambda marker: marker.symlink_to(real)}
    for n, (what, make) in enumerate(makers.items()):
        store = where / f"store-{n}"
        store.mkdir()
        make(store / MARKER_NAME)
        try:
            DirectoryStore(store)
            return f"a store whose marker is {what} was opened"
        except InputError as exc:
            if NOT_REGULAR not in str(exc):
                return f"a store whose marker is {what} was refused for another reason: {str(exc)[:200]}"
    return SEEN


def _every_replica(where: Path, outsider: Fragment) -> str:
    replicas = [where / "first", where / "second"]  # judged in this order (sorted)
    where.mkdir(parents=True)
    planted = []
    for replica in replicas:
        DirectoryStore(replica, create=True)
        planted.append(plant(replica, where / f"outside-{replica.name}", outsider, replica.name))
    Path(planted[0][0].file).write_text("overwritten by a careless store\n", encoding="ascii")
    verdict = neighbour_verdict(planted, [{"replica": str(r), "ids": []} for r in replicas])
    first = [v for v in verdict["violations"] if v.startswith(f"{replicas[0]}: ")]
    if not any("changed during the run" in v for v in first):  # a violation makes the verdict not ok
        return f"the first replica's overwritten entry was not reported (violations: {verdict['violations'][:2]})"
    if len(first) != len(verdict["violations"]):
        return f"the clean replica was reported: {[v for v in verdict['violations'] if v not in first][:2]}"
    return SEEN


def _listed_then_gone(where: Path) -> str:
    store = DirectoryStore(where, create=True)
    notes = where / "neighbour-notes.txt"
    notes.write_text("a neighbour's notes\n", encoding="ascii")
    listed = [(str(where / "removed-by-another-cleaner"), "a regular file"), *store.foreign()]
    stale = type("ListedBeforeAnotherCleaner", (DirectoryStore,), {"foreign": lambda self: listed})
    removed, kept = stale(where).remove_foreign()
    if (removed, kept, os.path.lexists(notes)) != ([str(notes)], [], False):  # one comparison, no part can drop out
        return f"clean --foreign removed {removed[:3]} and kept {kept[:3]}, not exactly the neighbour's notes"
    return SEEN


def _odd_nested_store(where: Path) -> str:
    """clean --foreign must keep a foreign directory holding anything named like a store's marker,
    even a directory or a dangling link (a store being made, or a broken one): removing it could
    remove a store someone else holds.  The neighbour's own nested store has a regular marker."""
    store = DirectoryStore(where, create=True)
    makers = (lambda marker: marker.mkdir(), lambda marker: marker.symlink_to(where / "nowhere"))
    holders = []
    for n, make in enumerate(makers):
        inner = where / f"holder-{n}" / "inner"
        inner.mkdir(parents=True)
        make(inner / MARKER_NAME)
        holders.append(str(where / f"holder-{n}"))
    removed, kept = store.remove_foreign()
    if (removed, sorted(w for w, _ in kept)) != ([], holders):  # one comparison, no part can drop out
        return f"clean --foreign removed {removed[:3]} and kept {[w for w, _ in kept][:3]}, not both holders kept"
    return SEEN


def _header_through_link(where: Path, outsider: Fragment) -> str:
    where.mkdir(parents=True)
    replica = where / "replica"
    DirectoryStore(replica, create=True)
    planted, _ = plant(replica, where / "outside", outsider, "header")
    stale = type("ListedBeforeTheSwap", (DirectoryStore,), {"ids": lambda self: [bytes.fromhex(planted.link_id)]})
    try:
        stale(replica).fingerprint()
        return f"the fingerprint was read through the neighbour's link {planted.link}"
    except InputError as exc:
        if "symbolic link" not in str(exc):
            return f"the link was refused for another reason: {str(exc)[:200]}"
    return SEEN


def neighbour_controls(where: Path, outsider: Fragment) -> dict[str, str]:
    """Each control's fate (``SEEN`` or what went wrong), built under ``where`` (which must not
    exist and lie outside every replica); ``outsider`` is a fragment no agent publishes."""
    controls = {MISSING_STORE: _missing_store, ODD_MARKER: _odd_markers,
                EVERY_REPLICA: lambda w: _every_replica(w, outsider), LISTED_THEN_GONE: _listed_then_gone,
                HEADER_THROUGH_LINK: lambda w: _header_through_link(w, outsider), ODD_NESTED_STORE: _odd_nested_store}
    where.mkdir(parents=True)
    fates: dict[str, str] = {}
    for name, control in controls.items():
        try:
            fates[name] = control(where / f"control-{len(fates)}")
        except (InputError, OSError) as exc:  # no verdict at all: not seen
            fates[name] = f"could not be run: {str(exc)[:200]}"
    return fates


def with_controls(verdict: dict[str, Any], fates: dict[str, str]) -> dict[str, Any]:
    """The neighbour's verdict with the controls' fates; a control not seen is a violation that
    names the blind instrument."""
    blind = [f"blind instrument: {name} ({fate})" for name, fate in fates.items() if fate != SEEN]
    violations = [*blind, *verdict["violations"]][:20]
    return {**verdict, "controls": fates, "violations": violations, "ok": not violations}
