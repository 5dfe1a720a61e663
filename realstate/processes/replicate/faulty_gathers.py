"""Faulty gathers: the ranks' agreement shown, in every run, to reject each fault its
cross-checks exist for.

In a correct run every cross-check of ``agreement.compare_ranks`` but the render digest's is
redundant: the ranks hold one set and every gather delivers every rank the same, right list.
So a comparison that stopped requiring one of them would pass every real run unnoticed.  Each
run therefore also feeds the same function controls built from the run's own gathered data,
each with one fault injected and every other check left satisfied:

- a rank's set digest changed (the ranks merged different sets into the same render);
- one rank's gathered list longer than the others' (the gather delivered different data to
  different ranks, every value in it still a rank's own digest);
- one gathered digest, the same on every rank, that is no rank's own (the gather delivered the
  same wrong value everywhere).

Each must come out as a disagreement; a control the comparison accepts (or fails on with an
error instead of a verdict) makes the run report the agreement blind.  Beside them, a gather that
is not faulty (every rank holding the launcher's render, one set, every rank's list the ranks' own
digests; built from the launcher's digest, so whether the real round agreed does not matter) goes
through the same labelling and must come out accepted: labelling that rejected every control
whatever the comparison said would otherwise pass every run.  The first two need two
ranks (with one rank there is no other to differ from) and are reported as not applicable
then.  When the real round itself disagrees the row fails on that alone; the controls are still
run and reported."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

from realstate.processes.replicate.agreement import compare_ranks

SET_CHANGED = "a rank's set digest changed"
LIST_DIFFERS = "one rank's gathered list differs from the others'"
NOT_OWN = "a gathered digest that is no rank's own"
NOT_APPLICABLE = "not applicable with one rank"
NOT_FAULTY = "a gather that is not faulty"


def _other(digest: str, fault: str) -> str:
    """A digest of the same form that no rank holds, derived from ``digest`` and the fault."""
    return hashlib.sha256(f"{fault}:{digest}".encode()).hexdigest()


def _set_changed(results: list[dict[str, Any]]) -> None:
    results[-1]["set_digest"] = _other(results[-1]["set_digest"], SET_CHANGED)


def _list_differs(results: list[dict[str, Any]]) -> None:
    results[-1]["gathered_digests"] = [*results[-1]["gathered_digests"], results[-1]["gathered_digests"][-1]]


def _not_own(results: list[dict[str, Any]]) -> None:
    wrong = _other(results[0]["gathered_digests"][-1], NOT_OWN)
    for r in results:
        r["gathered_digests"] = [*r["gathered_digests"][:-1], wrong]


FAULTS: dict[str, tuple[int, Callable[[list[dict[str, Any]]], None]]] = {  # name -> (ranks needed, fault)
    SET_CHANGED: (2, _set_changed),
    LIST_DIFFERS: (2, _list_differs),
    NOT_OWN: (1, _not_own),
}


def faulty_gathers(results: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]] | None]:
    """Each control: a deep copy of the ranks' results with its one fault injected (``None``
    where the run has too few ranks for it)."""
    controls: dict[str, list[dict[str, Any]] | None] = {}
    for name, (needed, inject) in FAULTS.items():
        if len(results) < needed:
            controls[name] = None
            continue
        control = copy.deepcopy(results)
        inject(control)
        controls[name] = control
    return controls


def not_faulty(results: list[dict[str, Any]], launcher_digest: str) -> list[dict[str, Any]]:
    """A copy of the ranks' results as a correct round would have them: every rank's render the
    launcher's, the first rank's set digest everywhere, every rank's gathered list the ranks' own."""
    control = copy.deepcopy(results)
    for r in control:
        r["digest"] = launcher_digest
        r["set_digest"] = results[0]["set_digest"]
        r["gathered_digests"] = [launcher_digest] * len(results)
    return control


def _fate(control: list[dict[str, Any]], launcher_digest: str) -> str:
    """What the comparison of ranks made of one control, in words."""
    try:
        return "accepted" if compare_ranks(control, launcher_digest).holds else "rejected"
    except (KeyError, IndexError, TypeError, ValueError) as exc:  # no verdict at all: neither
        return f"no verdict ({type(exc).__name__}: {exc})"[:200]


def gather_controls(results: list[dict[str, Any]], launcher_digest: str) -> dict[str, Any]:
    """The instrument's account: as many controls rejected by the comparison of ranks as apply
    (``ok``: all three with two ranks or more, the one that needs no other rank with one) and the
    gather that is not faulty accepted, each control's fate, and the figure that says so."""
    fates: dict[str, str] = {}
    for name, control in faulty_gathers(results).items():
        fates[name] = NOT_APPLICABLE if control is None else _fate(control, launcher_digest)
    missed = [name for name, fate in fates.items() if fate not in ("rejected", NOT_APPLICABLE)]
    rejected = sum(fate == "rejected" for fate in fates.values())
    # counted from the ranks and each fault's needs, not from the fates nor from the controls built
    applicable = sum(needed <= len(results) for needed, _ in FAULTS.values())
    fates[NOT_FAULTY] = _fate(not_faulty(results, launcher_digest), launcher_digest)
    accepted = int(fates[NOT_FAULTY] == "accepted")
    ok = rejected + accepted == applicable + 1  # every control as it must come out, counted from the ranks
    why = "; ".join(missed) or f"{rejected} of {applicable} controls were run"
    if rejected != applicable:
        figure = f"blind instrument: the comparison of ranks (did not reject a faulty gather: {why})"
    elif not ok:
        figure = f"blind instrument: the comparison of ranks (a gather that is not faulty: {fates[NOT_FAULTY]})"
    else:
        figure = f"{rejected} faulty gather(s) rejected by the comparison of ranks, a correct one accepted"
    return {"ok": ok, "controls": fates, "figure": figure}
