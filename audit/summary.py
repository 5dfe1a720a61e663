"""The kill matrix summarized: counts, the kill ratio over non-equivalent mutants, survivors.

detected = killed + crashed + timeout; ratio = detected / (mutants run - equivalent survivors).
``not reached`` survivors count as survivors (a mutant in code the parts never run is a gap).
An equivalent-listed mutant that the parts detect counts as detected and is reported: the
equivalence judgement was wrong."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from audit.mutants import path_of_record
from audit.run import CRASHED, KILLED, NOT_REACHED, SURVIVED, TIMEOUT, MutantResult


@dataclass
class Tally:
    mutants: int = 0
    killed: int = 0
    crashed: int = 0
    timeout: int = 0
    survived: int = 0
    not_reached: int = 0
    equivalent: int = 0

    @property
    def detected(self) -> int:
        return self.killed + self.crashed + self.timeout

    @property
    def non_equivalent(self) -> int:
        return self.mutants - self.equivalent

    @property
    def ratio(self) -> float | None:
        return self.detected / self.non_equivalent if self.non_equivalent else None

    def add(self, result: MutantResult, equivalent: bool) -> None:
        self.mutants += 1
        verdict = result.verdict
        if verdict == KILLED:
            self.killed += 1
        elif verdict == CRASHED:
            self.crashed += 1
        elif verdict == TIMEOUT:
            self.timeout += 1
        elif equivalent:
            self.equivalent += 1
        else:
            self.survived += 1
            self.not_reached += not result.reached

    def to_json(self) -> dict[str, Any]:
        ratio = self.ratio
        return {"mutants": self.mutants, "killed": self.killed, "crashed": self.crashed, "timeout": self.timeout,
                "survived": self.survived, "survived_not_reached": self.not_reached,
                "equivalent": self.equivalent, "detected": self.detected, "non_equivalent": self.non_equivalent,
                "kill_ratio": None if ratio is None else round(ratio, 4)}


@dataclass
class Summary:
    overall: Tally = field(default_factory=Tally)
    by_origin: dict[str, Tally] = field(default_factory=dict)
    by_file: dict[str, Tally] = field(default_factory=dict)
    killer: Counter = field(default_factory=Counter)  # part -> mutants it detected first
    gaps: list[MutantResult] = field(default_factory=list)  # non-equivalent survivors
    equivalent_survivors: list[MutantResult] = field(default_factory=list)
    wrongly_equivalent: list[MutantResult] = field(default_factory=list)
    errors: list[MutantResult] = field(default_factory=list)
    curated_survivors: list[MutantResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"overall": self.overall.to_json(),
                "by_origin": {k: v.to_json() for k, v in self.by_origin.items()},
                "by_file": {k: v.to_json() for k, v in sorted(self.by_file.items())},
                "first_detected_by": dict(self.killer),
                "gaps": [r.mutant.id for r in self.gaps],
                "equivalent_survivors": [r.mutant.id for r in self.equivalent_survivors],
                "listed_equivalent_but_detected": [r.mutant.id for r in self.wrongly_equivalent],
                "curated_survivors": [r.mutant.id for r in self.curated_survivors],
                "errors": {r.mutant.id: r.error for r in self.errors}}


def summarize(results: Iterable[MutantResult], equivalent: Mapping[str, str]) -> Summary:
    s = Summary()
    for r in results:
        if r.error:
            s.errors.append(r)
            continue
        listed = r.mutant.id in equivalent
        for tally in (s.overall, s.by_origin.setdefault(r.mutant.origin, Tally()),
                      s.by_file.setdefault(r.mutant.path, Tally())):
            tally.add(r, listed)
        if r.detected:
            s.killer[next(c.part for c in r.cells if c.outcome == r.verdict)] += 1
            if listed:
                s.wrongly_equivalent.append(r)
        elif listed:
            s.equivalent_survivors.append(r)
        else:
            s.gaps.append(r)
            if r.mutant.origin == "curated":
                s.curated_survivors.append(r)
    return s


def entry_key(mutant_id: str) -> tuple[str, str, str] | None:
    """(path of record, operator, patch hash) of a mutant id, the line left out; ``None`` for an
    id of another shape.  The path of record lets a judgement follow code into the file it moved to.  The hash covers the patch's path of record and its text, whose old side
    occurs exactly once in the file, so within one file and operator it names one patch."""
    parts = mutant_id.split(":")
    if len(parts) < 4:
        return None
    return path_of_record(parts[0]), ":".join(parts[2:-1]), parts[-1]


@dataclass
class Attached:
    """Judgements (equivalence or gap reasons) attached to the mutants the source generates now.

    ``judged`` maps a generated id to its reason; ``moved`` maps an entry whose line moved to the
    generated id it follows (same path, operator and patch hash); ``stale`` lists the entries
    that name no generated patch (the patched code changed or left the targets)."""

    judged: dict[str, str] = field(default_factory=dict)
    moved: dict[str, str] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)


def attach(entries: Mapping[str, str], generated_ids: Sequence[str]) -> Attached:
    """Each entry to the generated mutant with its id, else to the one generated mutant with its
    path, operator and patch hash (its line moved).  An entry never attaches to another patch:
    no match, or more than one, or a mutant already judged under its own id, leaves it stale."""
    known = set(generated_ids)
    by_key: dict[tuple[str, str, str], list[str]] = {}
    for i in generated_ids:
        key = entry_key(i)
        if key is not None:
            by_key.setdefault(key, []).append(i)
    out = Attached()
    for i, reason in entries.items():
        if i in known:
            out.judged[i] = reason
            continue
        key = entry_key(i)
        matches = by_key.get(key, []) if key is not None else []
        if len(matches) == 1 and matches[0] not in entries and matches[0] not in out.judged:
            out.judged[matches[0]] = reason
            out.moved[i] = matches[0]
        else:
            out.stale.append(i)
    out.stale.sort()
    return out


def stale_entries(equivalent: Mapping[str, str], generated_ids: Sequence[str]) -> list[str]:
    """Equivalence entries that name no patch the current source generates (``attach``)."""
    return attach(equivalent, generated_ids).stale


CELL_MARK = {KILLED: "killed", CRASHED: "crashed", TIMEOUT: "timeout", SURVIVED: "survived",
             NOT_REACHED: "not reached"}
