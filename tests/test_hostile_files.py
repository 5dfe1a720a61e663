"""Hostile input files: traces, problem files, HotpotQA files, fragment files and the audit
journal are read bounded (``spec.bounded``): a FIFO, a device or a directory is refused without
waiting, the size is bounded before reading, JSON is bounded in depth and number length, and
well-formed JSON of the wrong shape is refused naming the field — exit 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile_helpers import Case, World, check_case, make_world


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _write(name: str, data: bytes | str) -> object:
    def prepare(w: World) -> None:
        path = w.root / name
        path.write_bytes(data.encode() if isinstance(data, str) else data)
    return prepare


def _sparse(name: str, size: int) -> object:
    def prepare(w: World) -> None:
        with open(w.root / name, "wb") as handle:
            handle.truncate(size)  # nothing allocated
    return prepare


def _problem(**changes: object) -> str:
    record = {"id": "p1", "family": "f", "agents": [["Ann lives in Oslo."], ["Bo lives in Rome."]],
              "question": "Where does Ann live?", "answer": "Oslo"}
    record.update(changes)
    return json.dumps({k: v for k, v in record.items() if v is not None})


def _hotpot(**changes: object) -> str:
    example = {"_id": "h1", "question": "q?", "answer": "a", "type": "bridge",
               "supporting_facts": [["A", 0], ["B", 0]], "context": [["A", ["a."]], ["B", ["b."]], ["C", ["c."]]]}
    example.update(changes)
    return json.dumps([example])


BENCH = ["bench", "--geometry", "qwen3-tiny", "--no-figures"]


def bench_file(flag: str, name: str, says: str, data: bytes | str | None = None, size: int | None = None,
               names: str | None = None) -> Case:
    prepare = _sparse(name, size) if size is not None else _write(name, data) if data is not None else None
    return Case(f"bench {flag} {name}: {says}", lambda w: [*BENCH, flag, w.at(name), "--out", w.at("out")], says,
                lambda w: w.at(names or name), prepare=prepare or (lambda w: None), absent=lambda w: [w.at("out")])


def replay(name: str, says: str, data: bytes | str) -> Case:
    return Case(f"check --replay {name}: {says}", lambda w: ["check", "--replay", w.at(name)], says,
                lambda w: w.at(name), prepare=_write(name, data))


DEEP = "[" * 100 + "]" * 100  # deeper than the bound, shallower than Python's recursion limit
CASES = [
    Case("bench --problems a FIFO", lambda w: [*BENCH, "--problems", str(w.fifo)], "is a FIFO", lambda w: str(w.fifo)),
    Case("bench --hotpotqa a FIFO", lambda w: [*BENCH, "--hotpotqa", str(w.fifo)], "is a FIFO", lambda w: str(w.fifo)),
    Case("bench --problems /dev/zero", lambda w: [*BENCH, "--problems", "/dev/zero"], "is a device",
         lambda w: "/dev/zero"),
    Case("bench --problems a directory", lambda w: [*BENCH, "--problems", str(w.root)], "is a directory",
         lambda w: str(w.root)),
    bench_file("--problems", "huge.jsonl", "over the limit of", size=(64 << 20) + 1),
    bench_file("--hotpotqa", "huge.json", "over the limit of", size=(256 << 20) + 1),
    bench_file("--problems", "deep.jsonl", "nested more than 64 deep", DEEP, names="deep.jsonl:1"),
    bench_file("--problems", "digits.jsonl", "a number of 1000000 characters", '{"k": ' + "7" * 10**6 + "}",
               names="digits.jsonl:1"),
    bench_file("--problems", "nan.jsonl", "JSON constant NaN", _problem(k=float("nan")), names="nan.jsonl:1"),
    bench_file("--problems", "dup.jsonl", "duplicate JSON key 'answer'", _problem()[:-1] + ', "answer": "Rome"}',
               names="dup.jsonl:1"),
    bench_file("--problems", "surrogate.jsonl", "lone surrogate", _problem(answer="\ud800"), names="surrogate.jsonl:1"),
    bench_file("--problems", "utf.jsonl", "not UTF-8", b'{"id": "\xff"}', names="utf.jsonl"),
    bench_file("--problems", "shape-agents.jsonl", "'agents' must be a list", _problem(agents="everyone"),
               names="shape-agents.jsonl:1"),
    bench_file("--problems", "shape-list.jsonl", "must be a JSON object", "[1, 2, 3]", names="shape-list.jsonl:1"),
    bench_file("--problems", "missing.jsonl", "'answer' must be a non-empty string", _problem(answer=None),
               names="missing.jsonl:1"),
    bench_file("--problems", "strings.jsonl", "'holders' must be agent indices", _problem(holders=["0"]),
               names="strings.jsonl:1"),
    bench_file("--problems", "set.jsonl", "'agents' must be a list", _problem(agents={"0": ["x."], "1": ["y."]}),
               names="set.jsonl:1"),
    bench_file("--hotpotqa", "object.json", "non-empty JSON list", json.dumps({"data": []})),
    bench_file("--hotpotqa", "facts.json", "supporting_facts[0] must be [title, sentence index]",
               _hotpot(supporting_facts=[["A", "0"]])),
    bench_file("--hotpotqa", "context.json", "context[0] must be [title, [sentences]]",
               _hotpot(context=[{"title": "A"}])),
    replay("deep.json", "nested more than 64 deep", DEEP),
    replay("missing.json", "missing field(s) version", json.dumps({"format": "canonmerge-modelcheck-trace"})),
    replay("digits.json", "over the limit of 64", "[" + "1" * 10**6 + "]"),
    replay("constant.json", "JSON constant Infinity", '{"x": Infinity}'),
    replay("float-range.json", "out of a float's range", '{"x": 1e999}'),
    replay("dup.json", "duplicate JSON key", '{"a": 1, "a": 2}'),
    Case("check --replay a FIFO", lambda w: ["check", "--replay", str(w.fifo)], "is a FIFO", lambda w: str(w.fifo)),
    Case("fragment inspect a FIFO", lambda w: ["fragment", "inspect", str(w.fifo)], "not a regular file",
         lambda w: str(w.fifo)),
    Case("store put a FIFO", lambda w: ["store", "put", str(w.store), str(w.fifo)], "not a regular file",
         lambda w: str(w.fifo)),
    Case("store put a device", lambda w: ["store", "put", str(w.store), "/dev/zero"], "not a regular file",
         lambda w: "/dev/zero"),
    Case("audit --journal a FIFO", lambda w: ["audit", "--list", "--journal", str(w.fifo)],
         "not a regular file", lambda w: str(w.fifo), json=False),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_file_is_refused_naming_it(case: Case, world: World, capsys: pytest.CaptureFixture[str]) -> None:
    check_case(case, world, capsys)


def test_wrong_shapes_in_a_trace_name_the_field(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """A valid trace with one field of the wrong JSON type: the message names that field."""
    import modelcheck
    from modelcheck.reference import ReferenceBackend
    from tests.broken_backends import plant
    from tests.hostile_helpers import run_cli

    report = modelcheck.run(plant(ReferenceBackend(), "no-tie-break"), universes=["ties"], max_arity=2, gossip=False)
    trace = next(t for r in report.results for t in r.details.get("traces", []))
    for field, value, says in [("fragments", {"0": 1}, "fragments: want a list"),
                               ("geometry", [4, 2], "geometry: want an object"),
                               ("base", "0", "base: want an integer"),
                               ("ops", None, "ops: want a list")]:
        path = world.root / f"trace-{field}.json"
        path.write_text(json.dumps({**trace, field: value}))
        result = run_cli(capsys, ["check", "--replay", str(path)])
        assert result.code == 2 and says in result.err and str(path) in result.err, result.err
    path = world.root / "trace-mutant.json"
    path.write_text(json.dumps({**trace, "mutant": "nosuch"}))
    result = run_cli(capsys, ["check", "--replay", str(path)])
    assert result.code == 2 and f"{path}: mutant: 'nosuch' is not a planted bug" in result.err, result.err
    path = world.root / "trace-layers.json"
    path.write_text(json.dumps({**trace, "geometry": {**trace["geometry"], "layers": "4"}}))
    result = run_cli(capsys, ["check", "--replay", str(path)])
    assert result.code == 2 and "geometry.layers: want an integer, got str" in result.err
