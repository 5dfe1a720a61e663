"""Controls beside the hostile neighbour's verdict, in every soak: the store's refusals and the
verdict itself shown to see, on scratch stores built to be caught.

Why: a correct run never opens a store where none exists, never meets a marker that is not a
regular file, and, when every replica is clean, gives the neighbour's verdict nothing to keep.  So
a store that made a missing store on opening, a marker check that looked only at the marker's size,
or a verdict that kept only the last replica's findings would pass every real run unnoticed.
Each control must come out as the contract says; one that does not makes the neighbour's verdict
report itself blind, so the soak's convergence row fails naming it:

- ``missing store``: a directory store opened without ``create`` where nothing exists is refused,
  and nothing is left behind;
- ``marker not a regular file``: a store whose marker is a directory, or a symbolic link to a
  file holding the right marker text, is refused because the marker is not a small regular file
  (no FIFO: a store that read one would block the soak instead of failing it);
- ``findings of every replica``: two scratch replicas planted into like the real ones, the
  first one judged with its neighbour's file overwritten (what a store that writes into foreign
  entries would do), the second clean, through ``neighbour_verdict`` itself: the first one's
  violation must be reported, and nothing of the second's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from realstate.exchange.stores import MARKER_NAME, MARKER_TEXT, DirectoryStore
from realstate.kernel.fragment import Fragment
from realstate.processes.soak.neighbour import neighbour_verdict, plant
from spec import InputError

MISSING_STORE = "missing store"
ODD_MARKER = "marker not a regular file"
EVERY_REPLICA = "findings of every replica"
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
    if verdict["ok"] or not any("changed during the run" in v for v in first):
        return f"the first replica's overwritten entry was not reported (violations: {verdict['violations'][:2]})"
    if len(first) != len(verdict["violations"]):
        return f"the clean replica was reported: {[v for v in verdict['violations'] if v not in first][:2]}"
    return SEEN


def neighbour_controls(where: Path, outsider: Fragment) -> dict[str, str]:
    """Each control's fate (``SEEN`` or what went wrong), built under ``where`` (which must not
    exist and lie outside every replica); ``outsider`` is a fragment no agent publishes."""
    controls = {MISSING_STORE: _missing_store, ODD_MARKER: _odd_markers,
                EVERY_REPLICA: lambda w: _every_replica(w, outsider)}
    where.mkdir(parents=True)
    fates: dict[str, str] = {}
    for name, control in controls.items():
        try:
            fates[name] = control(where / name.replace(" ", "-"))
        except (InputError, OSError) as exc:  # no verdict at all: not seen
            fates[name] = f"could not be run: {str(exc)[:200]}"
    return fates


def with_controls(verdict: dict[str, Any], fates: dict[str, str]) -> dict[str, Any]:
    """The neighbour's verdict with the controls' fates; a control not seen is a violation that
    names the blind instrument."""
    blind = [f"blind instrument: {name} ({fate})" for name, fate in fates.items() if fate != SEEN]
    violations = [*blind, *verdict["violations"]][:20]
    return {**verdict, "controls": fates, "violations": violations, "ok": verdict["ok"] and not blind}
