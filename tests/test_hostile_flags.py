"""Hostile numbers on the command line: any integer or float the parser accepts either works or
is refused with exit 2 before any work, naming the flag the user typed and its value — no
overflow in numpy or torch (seeds of 2**64, negative seeds, huge counts), no NaN or infinity let
through, no budget that runs past the model's positions; and every command works at the edges
its help allows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile_helpers import Case, World, check_case, make_world, run_cli


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def flag(command: list[str], name: str, value: str, says: str) -> Case:
    """``command`` with ``name value``: refused naming both, with ``says`` as the cause."""
    return Case(f"{' '.join(command[:2])} {name} {value}", lambda w: [*[a.replace("STORE", str(w.store))
                                                                       for a in command], name, value],
                says, lambda w: f"{name} {value}")


REAL = ["realstate", "--only", "C5"]
CHECK = ["check", "--no-gossip", "--max-arity", "2", "--workers", "1"]
BENCH = ["bench", "--geometry", "qwen3-tiny", "--quick", "--no-figures"]
SOAK = ["soak", "--s3-replicas", "0"]
BIG = str(2**64)
CASES = [
    flag(REAL, "--seed", BIG, "must be an integer in 0..4,294,967,295"),
    flag(REAL, "--seed", "-1", "must be an integer in 0..4,294,967,295"),
    flag(REAL, "--agents", "0", "must be an integer in 1..6"),
    flag(REAL, "--agents", "7", "must be an integer in 1..6"),
    flag(REAL, "--decode-tokens", str(10**11), "must be an integer in 1..2,147,483,647"),
    flag(REAL, "--latent-steps", "-1", "must be an integer in 0.."),
    flag(REAL, "--fidelity-offsets", str(2**63), "must be integers in 0.."),
    flag(REAL, "--agent-starts", "0,0,0,0,0,0", "must be at most 5 positions"),
    flag(CHECK, "--workers", str(10**20), "must be an integer in 0..4,096"),
    flag(CHECK, "--max-states", "0", "must be an integer in 1..1,000,000,000"),
    flag(CHECK, "--max-states", str(10**30), "must be an integer in 1..1,000,000,000"),
    flag(CHECK, "--max-depth", "-1", "must be an integer in 0..1,000,000"),
    flag(CHECK, "--in-flight", "7", "must be an integer in 1..6"),
    flag(CHECK, "--replicas", "9", "must be an integer in 2..8"),
    flag(CHECK, "--fragments", "0", "must be an integer in 1..7"),
    flag(["check", "--workers", "1"], "--max-arity", "10", "must be an integer in 1..9"),
    flag(["check", "--workers", "1"], "--max-arity", "9", "no selected universe has 9 fragments"),
    flag(["check", "--workers", "1", "--universe", "ties"], "--max-arity", "8", "no selected universe has 8 fragments"),
    flag(["check", "--workers", "1"], "--max-arity", "0", "must be an integer in 1..9"),
    flag(CHECK, "--randomized", "-1", "must be an integer in 0..100,000"),
    flag(CHECK, "--redeliveries", "4", "must be an integer in 0..3"),
    flag(["prove", "--only", "C5"], "--timeout", "nan", "must be a finite number"),
    flag(["prove", "--only", "C5"], "--timeout", "inf", "must be a finite number"),
    Case("prove --timeout 1e300", lambda w: ["prove", "--only", "C5", "--timeout", "1e300"],
         "must be a number of seconds", lambda w: "--timeout 1e300"),
    flag(["prove", "--only", "C5"], "--timeout", "0", "must be a number of seconds"),
    flag(BENCH, "--seed", str(2**32), "must be an integer in 0..4,294,967,295"),
    flag(BENCH, "--bootstrap", str(10**14), "must be an integer in 100..100,000"),
    flag(BENCH, "--threads", str(10**11), "must be an integer in 1..1,024"),
    flag(BENCH, "--tost-margin", "nan", "must be a finite number"),
    flag(BENCH, "--tost-margin", "inf", "must be a finite number"),
    flag(BENCH, "--limit", "0", "must be an integer in 1.."),
    flag(BENCH, "--max-new-tokens", str(10**11), "must be an integer in 1..4,096"),
    flag(BENCH, "--latent-steps", "0,1000000000", "must be integers in 0..4,096"),
    flag(BENCH, "--hotpotqa-agents", "5", "must be an integer in 2..4"),
    flag(BENCH, "--hotpotqa-distractors", str(10**20), "must be an integer in 0..100"),
    flag(SOAK, "--seed", str(2**63), "must be an integer in 0..4,294,967,295"),
    flag(SOAK, "--max-seconds", "nan", "must be a finite number"),
    flag(SOAK, "--op-timeout", "inf", "must be a finite number"),
    flag(SOAK, "--replicas", str(10**20), "must be an integer in 2..16"),
    flag(["replicate"], "--ranks", "0", "must be an integer in 1..64"),
    flag(["replicate"], "--seed", "-1", "must be an integer in 0..4,294,967,295"),
    flag(["replicate"], "--timeout", "nan", "must be a finite number"),
    flag(["replicate"], "--latent-steps", str(10**9), "must be an integer in 0..200"),
    flag(["replicate"], "--drops", "-5", "must be an integer in 0..100"),
    flag(["store", "render", "STORE", "--geometry", "qwen3-tiny"], "--base", "-1", "must be an integer in 0.."),
    flag(["store", "render", "STORE", "--geometry", "qwen3-tiny"], "--seed", BIG, "must be an integer in 0.."),
    flag(["store", "merge", "STORE", "STORE"], "--workers", "0", "must be an integer in 1..64"),
    flag(["store", "clean", "STORE"], "--older-than", "nan", "must be a finite number"),
    flag(["fragment", "make", "made"], "--seed", BIG, "must be an integer in 0.."),
    flag(["fragment", "make", "made"], "--agents", "27", "must be an integer in 1..26"),
    flag(["fragment", "make", "made"], "--latent-steps", "-1", "must be an integer in 0..200"),
    flag(["audit", "--list"], "--target", "nan", "must be a finite number"),
    flag(["audit", "--list"], "--workers", "0", "must be an integer in 1..256"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_number_is_refused_naming_its_flag(case: Case, world: World,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    check_case(case, world, capsys)


def test_a_budget_past_the_models_positions_names_the_flag_that_is_too_large(
        world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """The seeded tiny model has 40960 positions: each budget alone can run past them, and the
    message blames the flag the user made too large (not whichever check trips first)."""
    for argv, blamed in [(["--latent-steps", "100000000"], "--latent-steps 100000000: agent A needs positions"),
                         (["--agent-starts", "40955"], "--agent-starts 40955: agent A needs positions"),
                         (["--decode-tokens", "40950"], "--decode-tokens 40950: the final agent's decode"),
                         (["--latent-steps", "10000", "--agents", "5"], "--latent-steps 10000: the final agent")]:
        result = run_cli(capsys, ["realstate", "--agents", "2", "--only", "C5", *argv])
        assert result.code == 2 and blamed in result.err and "past the model's 40,960 positions" in result.err, \
            result.err


def test_every_arity_the_help_allows_works(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """The edges: one agent and six (realstate), one fragment and the cap of nine (check, on the one universe of nine),
    twenty-six agents (fragment make); a row about two fragments' orders says not applicable at
    one fragment, counts as neither pass nor failure, and a run of nothing else is not a pass."""
    one = run_cli(capsys, ["realstate", "--agents", "1", "--fidelity-offsets", "1", "--decode-tokens", "1", "--json"])
    document = json.loads(one.out)
    rows = {r["check"]: r["outcome"] for p in document["parts"] for r in p["results"]}
    assert one.code == 0, [r for r in rows.items() if r[1] != "holds"]
    not_applicable = {c for c, o in rows.items() if o == "not applicable"}
    assert {"permutations render one digest", "BagMerge order dependence",
            "n = 2 canonical render equals one BagMerge order"} <= not_applicable
    assert all(o in ("holds", "not applicable") for o in rows.values())
    alone = run_cli(capsys, ["realstate", "--agents", "1", "--only", "C6"])
    assert alone.code == 2 and "not applicable" in alone.out and "nothing applicable was checked" in alone.out
    six = run_cli(capsys, ["realstate", "--agents", "6", "--only", "C6"])
    assert six.code == 0, six.out
    edges = [["check", "--max-arity", "1", "--no-gossip", "--universe", "ties", "--workers", "1"],
             ["check", "--max-arity", "8", "--only", "C7", "--replicas", "2", "--fragments", "1", "--workers", "1"],
             ["check", "--max-arity", "9", "--universe", "specials9", "--only", "C7", "--replicas", "2",
              "--fragments", "1", "--workers", "1"],
             ["check", "--only", "C7", "--replicas", "8", "--fragments", "1", "--in-flight", "1", "--workers", "1"],
             ["fragment", "make", str(world.root / "made"), "--agents", "26", "--latent-steps", "0"]]
    for argv in edges:
        result = run_cli(capsys, argv)
        assert result.code == 0, (argv, result.out[-2000:], result.err[-2000:])
    only_c4 = run_cli(capsys, ["check", "--max-arity", "1", "--only", "C4", "--universe", "ties", "--workers", "1",
                               "--json"])
    assert only_c4.code == 2 and {r["outcome"] for p in json.loads(only_c4.out)["parts"]
                                  for r in p["results"]} == {"not applicable"}
