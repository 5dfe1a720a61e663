"""A benchmark problem: facts partitioned over k agents, a question for the final agent, and a
short gold answer; read from and written to JSONL.

The problem is plain data (torch-free).  Every field a reader depends on is validated on load,
and a bad file is an ``InputError`` naming the file, the line and what is wrong, never a
traceback: problem files come from users (``--problems``) as well as from the generator."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spec import FormatError, InputError
from spec.bounded import parse_json
from spec.bounded import read_text as bounded_text

MIN_AGENTS, MAX_AGENTS = 2, 4  # k! BagMerge orders are decoded per problem: 24 at k = 4


@dataclass(frozen=True)
class Problem:
    """One partitioned-reasoning problem.

    ``agents[i]`` is the list of sentences agent ``i`` holds (its document); ``holders`` the agents
    whose facts the answer needs (the rest hold distractors only)."""

    id: str
    family: str
    agents: tuple[tuple[str, ...], ...]
    question: str
    answer: str
    holders: tuple[int, ...] = ()
    aliases: tuple[str, ...] = ()
    split: str = "eval"
    cue: str = ""  # how the final agent's reply starts ("Mira lives in"); empty: it answers freely
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def k(self) -> int:
        return len(self.agents)

    def golds(self) -> tuple[str, ...]:
        """Every accepted answer: the gold first, then its aliases."""
        return (self.answer, *self.aliases)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "family": self.family, "split": self.split, "k": self.k,
                "agents": [list(a) for a in self.agents], "question": self.question, "answer": self.answer,
                "cue": self.cue, "aliases": list(self.aliases), "holders": list(self.holders), "meta": self.meta}


def _require(condition: bool, where: str, problem: str) -> None:
    if not condition:
        raise InputError(f"{where}: {problem}")


def _strings(value: Any, where: str, name: str, allow_empty: bool = False) -> tuple[str, ...]:
    _require(isinstance(value, list) and all(isinstance(s, str) for s in value), where,
             f"'{name}' must be a list of strings")
    _require(allow_empty or (bool(value) and all(s.strip() for s in value)), where,
             f"'{name}' must hold non-empty strings")
    return tuple(value)


def problem_from_json(record: Any, where: str) -> Problem:
    """A ``Problem`` from one decoded JSON object; ``InputError`` naming ``where`` when it is malformed."""
    _require(isinstance(record, dict), where, "a problem must be a JSON object")
    for name in ("id", "family", "question", "answer"):
        _require(isinstance(record.get(name), str) and record[name].strip(), where,
                 f"'{name}' must be a non-empty string")
    agents = record.get("agents")
    _require(isinstance(agents, list) and MIN_AGENTS <= len(agents) <= MAX_AGENTS, where,
             f"'agents' must be a list of {MIN_AGENTS}..{MAX_AGENTS} agents' sentence lists")
    docs = tuple(_strings(a, where, f"agents[{i}]") for i, a in enumerate(agents))
    _require(len(set(docs)) == len(docs), where, "two agents hold identical documents (their fragments would be "
                                                 "one content id, and k! orders would not be distinct)")
    holders = record.get("holders", [])
    _require(isinstance(holders, list) and all(isinstance(h, int) and not isinstance(h, bool)
                                               and 0 <= h < len(docs) for h in holders), where,
             f"'holders' must be agent indices 0..{len(docs) - 1}")
    if "k" in record:
        _require(record["k"] == len(docs), where, f"'k' is {record['k']!r} but {len(docs)} agents are listed")
    meta = record.get("meta", {})
    _require(isinstance(meta, dict), where, "'meta' must be an object")
    split, cue = record.get("split", "eval"), record.get("cue", "")
    _require(isinstance(split, str), where, "'split' must be a string")
    _require(isinstance(cue, str), where, "'cue' must be a string")
    return Problem(record["id"], record["family"], docs, record["question"], record["answer"], tuple(holders),
                   _strings(record.get("aliases", []), where, "aliases", allow_empty=True), split, cue, meta)


MAX_PROBLEM_FILE_BYTES = 64 << 20  # a JSONL problem file: 64 MiB (the committed splits are under 1 MiB)


def read_text(file: Path, limit: int = MAX_PROBLEM_FILE_BYTES) -> str:
    """A user's file as UTF-8 text, read bounded (``spec.bounded``: a regular file, never a FIFO
    or a device, of at most ``limit`` bytes); ``InputError`` naming the path and the cause."""
    try:
        return bounded_text(file, limit)
    except FormatError as exc:
        raise InputError(f"{file}: cannot read ({exc.problem})" if exc.field.startswith("file")
                         else f"{file}: {exc.problem}") from None


def parse_record(line: str, where: str) -> Any:
    """One JSON value, strictly and with bounds (``spec.bounded.parse_json``)."""
    try:
        return parse_json(line, where)
    except FormatError as exc:
        raise InputError(f"{where}: not JSON ({exc.problem})") from None


def read_problems(path: str | Path) -> list[Problem]:
    """Problems from a JSONL file (one object per line; blank lines ignored); ids must be unique."""
    file = Path(path)
    text = read_text(file)
    problems: list[Problem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{file}:{number}"
        problems.append(problem_from_json(parse_record(line, where), where))
    if not problems:
        raise InputError(f"{file}: holds no problems")
    check_unique_ids(problems, str(file))
    return problems


def check_unique_ids(problems: Sequence[Problem], where: str) -> None:
    seen: set[str] = set()
    for p in problems:
        if p.id in seen:
            raise InputError(f"{where}: problem id {p.id!r} occurs twice")
        seen.add(p.id)


def write_problems(path: str | Path, problems: Iterable[Problem]) -> None:
    """JSONL, one problem per line, keys in a fixed order (the committed files are byte-stable)."""
    lines = [json.dumps(p.to_json(), ensure_ascii=False) for p in problems]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
