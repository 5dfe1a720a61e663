"""The soak's report: its rows under the claims, its tables and its JSON data.

The verdict (C7: one set and one digest everywhere, and a neighbour's planted entries neither
read nor touched; C2: nothing acknowledged lost) holds only if the instruments behind it could
see: the nemesis (every planned fault kind landed mid-operation) for C7; the canary (the judge
reported the write it was meant to find lost), the crash table (no invariant broken, its
controls reported, every step reached) and the power-loss model (no acknowledged put lost nor
torn, its controls reported) for C2.  A blind instrument
fails the row it stands behind, naming itself in the figure, so the run exits 1; the JSON has
each instrument's own account under ``instruments``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from realstate.processes import properties as P
from realstate.processes.soak.settings import FAULT_KINDS, SoakSettings
from spec import Outcome, PartReport, Table

PART = "realstate"


def instruments(soak: Any) -> dict[str, dict[str, Any]]:
    """Whether each instrument could see, with the figure that says so (module doc)."""
    tally, plan = soak.tally, soak.plan
    canary = soak.canary or {"seen": False, "problem": "the canary did not run"}
    found: dict[str, dict[str, Any]] = {"canary": {
        "ok": bool(canary["seen"]),
        "figure": "the judge reported the canary's lost acknowledged write" if canary["seen"] else
        f"blind instrument: the soak judge ({canary.get('problem') or 'it did not report the lost write'})",
        **canary}}
    table = soak.crashes
    found["crash table"] = _injected(
        table, "crash table", "the crash table",
        lambda: (f"{len(table.crashes)} crashes (put: {len(table.steps['put'])} steps, clean: "
                 f"{len(table.steps['clean'])} steps), {len(table.violations)} invariant(s) broken, "
                 f"{len(table.controls)} negative controls reported"))
    power = soak.power
    found["power loss"] = _injected(
        power, "power loss", "the power-loss model",
        lambda: (f"power loss after each of {len(power.put.trace)} steps of a put: {power.put.states} crash "
                 f"state(s), {len(power.violations)} invariant(s) broken, {len(power.controls)} negative "
                 f"controls reported"))
    planned = [k for k in FAULT_KINDS if plan.counts.get(k, 0)]
    missed = [k for k in planned if not tally.mid_operation.get(k, 0)]
    found["nemesis"] = {
        "ok": not missed, "missed": missed, "mid_operation": {k: tally.mid_operation.get(k, 0) for k in planned},
        "figure": f"{len(planned) - len(missed)} of {len(planned)} planned fault kinds landed mid-operation"
                  + (f"; blind instrument: the nemesis (never landed: {', '.join(missed)})" if missed else "")}
    return found


def _injected(result: Any, label: str, instrument: str, summary: Callable[[], str]) -> dict[str, Any]:
    """One fault-injection instrument's entry (the crash table, the power-loss model): what it found
    first (one that found something was not blind to it), else its own blindness, else ``summary``."""
    if result is None:
        return {"ok": False, "figure": f"{instrument} did not run"}
    if result.violations:
        figure = f"{label}: {result.violations[0]} (+{len(result.violations) - 1} more)"
    elif result.blind:
        figure = f"blind instrument: {instrument} ({result.blind[0]})"
    else:
        figure = summary()
    return {"ok": not result.violations and not result.blind, "figure": figure, **result.to_json()}


def _with(figure: str, *checks: dict[str, Any]) -> str:
    """The row's figure, followed by each failing instrument's own."""
    return "; ".join([figure, *(c["figure"] for c in checks if not c["ok"])])


def soak_report(settings: SoakSettings, soak: Any, verdict: dict[str, Any] | None, heal_passes: int,
                seconds: float, notes: list[str]) -> PartReport:
    tally = soak.tally
    ops_table = Table("soak: operations", ["operation", "count"], [[k, str(v)] for k, v in sorted(tally.ops.items())])
    ops_table.rows.append(["worker processes started", str(soak.pool.started if soak.pool else 0)])
    ops_table.rows.append(["heal passes", str(heal_passes)])
    faults_table = Table("soak: faults injected", ["fault", "planned", "injected", "mid-operation"],
                         [[k, str(soak.plan.counts.get(k, 0)), str(tally.faults.get(k, 0)),
                           str(tally.mid_operation.get(k, 0))] for k in FAULT_KINDS])
    tables = [ops_table, faults_table]
    ledger_lines = soak.ledger.lines if soak.ledger is not None else 0
    data: dict[str, Any] = {"settings": {k: v for k, v in vars(settings).items() if k != "shape"},
                            "shape": vars(settings.shape), "operations": dict(tally.ops),
                            "faults": dict(tally.faults),
                            "faults_mid_operation": {k: tally.mid_operation.get(k, 0) for k in FAULT_KINDS},
                            "kill_steps": dict(tally.kill_steps), "kills_owed_at_end": dict(+tally.owed),
                            "planned_faults": soak.plan.counts, "errors": tally.errors, "events": tally.events[:50],
                            "ledger_entries": ledger_lines, "canary": soak.canary,
                            "crash_table": soak.crashes.to_json() if soak.crashes is not None else None,
                            "power_loss": soak.power.to_json() if soak.power is not None else None,
                            "neighbour": soak.neighbours,
                            "seconds": round(seconds, 2), "out_of_time": soak.out_of_time}
    if soak.out_of_time:
        notes.append(f"the time budget (--max-seconds {settings.max_seconds:g}) ran out during the fault phase; "
                     f"the remaining operations were not run")
    if verdict is None:
        results = [P.SOAK_CONVERGE.result(Outcome.UNKNOWN, "no verdict", seconds)]
        return PartReport(PART, results, tables, data, notes)
    data["verdict"] = {k: v for k, v in verdict.items() if k != "replicas"}
    data["replicas"] = [{k: v for k, v in r.items() if k != "ids"} | {"fragments": len(r["ids"])}
                        for r in verdict["replicas"]]
    tables.append(Table("soak: replicas at quiescence", ["replica", "kind", "fragments", "render digest",
                                                         "temporaries cleaned", "verify"],
                        [[r["replica"], r["kind"], str(len(r["ids"])), (r["digest"] or "-")[:16],
                          str(r["temporaries_cleaned"]),
                          "ok" if r["verify_ok"] else ("UNREADABLE" if r["error"] else "CORRUPT")]
                         for r in verdict["replicas"]]))
    left = sum(r["temporaries_left"] for r in verdict["replicas"])
    neighbour = soak.neighbours or {"ok": False, "violations": ["the neighbour's entries were not judged"]}
    converged = (verdict["sets"] == 1 and verdict["digests"] == 1 and verdict["union"] > 0 and left == 0
                 and all(r["verify_ok"] for r in verdict["replicas"]) and not verdict["unreadable"]
                 and neighbour["ok"])
    faults = sum(tally.faults.values())
    figure = (f"{len(soak.replicas)} replicas: {verdict['sets']} set(s), {verdict['digests']} render digest(s) "
              f"/ {sum(v for k, v in tally.ops.items() if k.endswith('sent'))} ops, {faults} faults"
              + (f"; {len(verdict['unreadable'])} replica(s) unreadable" if verdict["unreadable"] else "")
              + (f"; {left} temporaries survived a clean with age 0" if left else "")
              + ("" if neighbour["ok"] else f"; hostile neighbour: {(neighbour['violations'] or ['no verdict'])[0]}"
                 + (f" (+{len(neighbour['violations']) - 1} more)" if len(neighbour["violations"]) > 1 else "")))
    books_agree = ledger_lines == tally.ops.get("put acknowledged", 0)
    safe = not verdict["lost"] and not verdict["invented"] and books_agree
    seen = instruments(soak)
    data["instruments"] = seen
    nemesis, canary, crashes, power = seen["nemesis"], seen["canary"], seen["crash table"], seen["power loss"]
    durable = (f"{verdict['acknowledged']} acknowledged (ledger), {len(verdict['lost'])} lost, "
               f"{len(verdict['invented'])} never published"
               + ("" if books_agree else f"; the ledger holds {ledger_lines} entries for "
                  f"{tally.ops.get('put acknowledged', 0)} acknowledgments"))
    results = [
        P.SOAK_CONVERGE.holds_if(converged and nemesis["ok"], _with(figure, nemesis), seconds,
                                 sets=verdict["sets"], digests=verdict["digests"], nemesis=nemesis,
                                 neighbour=neighbour),
        P.SOAK_DURABLE.holds_if(safe and canary["ok"] and crashes["ok"] and power["ok"],
                                _with(durable, canary, crashes, power), 0.0, lost=verdict["lost"][:10],
                                invented=verdict["invented"][:10], canary=canary, crash_table=crashes,
                                power_loss=power),
    ]
    return PartReport(PART, results, tables, data, notes)
