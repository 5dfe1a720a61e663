"""Source-level planted bugs, each caught by the product's own command.

Every case below was found by an outside review to slip through ``canonmerge check`` and
``canonmerge realstate`` (or is a mutant that survived mutation testing).  Each is planted in the
SOURCE of a scratch copy of the packages (``audit.ScratchCopy``: an exact patch that must apply
once) and the product's own command line is run on the copy; the named check must FAIL and the
command must exit 1.  An unpatched copy of each command passes (exit 0), so a failure is the
bug's doing.  Commands are scoped with ``--only`` and small universes to stay fast."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from audit import Patch, ScratchCopy


@dataclass(frozen=True)
class Planted:
    name: str
    patches: tuple[Patch, ...]
    command: tuple[str, ...]
    caught_by: frozenset[tuple[str, str]]


RENDER, ENGINE, FRAGMENT = "realstate/render.py", "realstate/engine.py", "realstate/fragment.py"
SORTED_RETURN = "    return render_layout(layout(engine.order(members), base), base, engine)"
DELTA = "delta = p.offset - f.start if reencode else 0"

CHECK_C3_RANDOM = ("check", "--only", "C3", "--no-gossip", "--universe", "random", "--max-arity", "4")
CHECK_C3_TIES = ("check", "--only", "C3", "--no-gossip", "--universe", "ties", "--max-arity", "3")
CHECK_ORACLE = ("check", "--only", "render equals the independent oracle", "--no-gossip", "--max-arity", "2")
REALSTATE = ("realstate", "--agents", "2", "--latent-steps", "0")

CASES = [
    Planted("sort skipped from N = 4 on",
            (Patch(RENDER, SORTED_RETURN, "    return render_layout(layout(engine.order(members) if len(members) < 4 "
                                          "else members, base), base, engine)"),),
            CHECK_C3_RANDOM, frozenset({("C3", "permutations")})),
    Planted("tie-break by object identity",
            (Patch(ENGINE, "    return fragment.order_key",
                   "    return fragment.order_key[:8] + id(fragment).to_bytes(8, 'big')"),),
            CHECK_C3_TIES, frozenset({("C3", "engine order over every input order")})),
    Planted("dict insertion order instead of the sort",
            (Patch(RENDER, "    members = list(engine.collect(fragments))\n" + SORTED_RETURN,
                   "    members = list({f.content_id: f for f in fragments}.values())\n"
                   "    return render_layout(layout(members, base), base, engine)"),),
            CHECK_C3_RANDOM, frozenset({("C3", "permutations")})),
    Planted("engine key without the content-id tie-break",
            (Patch(ENGINE, "    return fragment.order_key", "    return fragment.order_key[:8]"),),
            CHECK_C3_TIES, frozenset({("C3", "permutations")})),
    Planted("render alternates between calls (gossip)",
            (Patch(RENDER, "@dataclass(frozen=True)\nclass Placement:",
                   "_CALLS = __import__('itertools').count()\n\n\n@dataclass(frozen=True)\nclass Placement:"),
             Patch(RENDER, "    return Rendered(fp, base, keys, values, list(placements))",
                   "    return Rendered(fp, base + next(_CALLS) % 2, keys, values, list(placements))")),
            ("check", "--only", "C7", "--universe", "ties", "--replicas", "2", "--fragments", "2"),
            frozenset({("C7", "gossip: equal sets render equal")})),
    Planted("render alternates between calls (laws)",
            (Patch(RENDER, "@dataclass(frozen=True)\nclass Placement:",
                   "_CALLS = __import__('itertools').count()\n\n\n@dataclass(frozen=True)\nclass Placement:"),
             Patch(RENDER, "    return Rendered(fp, base, keys, values, list(placements))",
                   "    return Rendered(fp, base + next(_CALLS) % 2, keys, values, list(placements))")),
            ("check", "--only", "semilattice laws on concrete states", "--no-gossip", "--universe", "ties"),
            frozenset({("C1", "semilattice laws on concrete states")})),
    Planted("first placement not re-encoded (check)",
            (Patch(RENDER, DELTA, "delta = p.offset - f.start if reencode and position else 0"),),
            CHECK_ORACLE, frozenset({("C3", "render equals the independent oracle")})),
    Planted("first placement not re-encoded (realstate)",
            (Patch(RENDER, DELTA, "delta = p.offset - f.start if reencode and position else 0"),),
            (*REALSTATE, "--only", "re-encoding fidelity"), frozenset({("C8", "re-encoding fidelity")})),
    Planted("wrong sign of the re-encoding offset (check)",
            (Patch(RENDER, DELTA, "delta = f.start - p.offset if reencode else 0"),),
            CHECK_ORACLE, frozenset({("C3", "render equals the independent oracle")})),
    Planted("wrong sign of the re-encoding offset (realstate)",
            (Patch(RENDER, DELTA, "delta = f.start - p.offset if reencode else 0"),),
            (*REALSTATE, "--only", "re-encoding fidelity"), frozenset({("C8", "re-encoding fidelity")})),
    Planted("re-encoding offset computed as offset + start",
            (Patch(RENDER, DELTA, "delta = p.offset + f.start if reencode else 0"),),
            CHECK_ORACLE, frozenset({("C3", "render equals the independent oracle")})),
    Planted("order statistic read from the last layer",
            (Patch(FRAGMENT, "return self.keys[self.fingerprint.layers // 2]", "return self.keys[-1]"),),
            (*REALSTATE, "--only", "C5"), frozenset({("C5", "known answers: order values m (float64 bits, canonical NaN)")})),
    Planted("sorted by -m",
            (Patch(FRAGMENT, "return order_key(self.order_value, self.content_id)",
                   "return order_key(-self.order_value, self.content_id)"),),
            CHECK_ORACLE, frozenset({("C3", "render equals the independent oracle")})),
    Planted("render ignores a non-zero base",
            (Patch(RENDER, "placements, offset = [], base", "placements, offset = [], 0"),),
            CHECK_ORACLE, frozenset({("C3", "render equals the independent oracle")})),
    Planted("canonical NaN payload changed",
            (Patch("realstate/order_value.py", "0x7FF8000000000000", "0x7FF8000000000001"),),
            (*REALSTATE, "--only", "C5"), frozenset({("C5", "known answers: order values m (float64 bits, canonical NaN)")})),
    Planted("content-id header magic changed",
            (Patch(FRAGMENT, 'CONTENT_ID_MAGIC = b"CMFRAG01"', 'CONTENT_ID_MAGIC = b"CMFRAG02"'),),
            (*REALSTATE, "--only", "C5"), frozenset({("C5", "known answers: fingerprint digests and content ids")})),
]


def failing(stdout: str) -> set[tuple[str, str]]:
    report = json.loads(stdout)
    return {(r["claim"], r["check"]) for part in report["parts"] for r in part["results"]
            if r["outcome"] != "holds"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_product_catches_the_planted_bug(case, tmp_path):
    scratch = ScratchCopy(tmp_path).apply(*case.patches)
    out = scratch.run(*case.command, "--json", timeout=900)
    assert out.returncode == 1, (out.returncode, out.stderr[-2000:])
    assert "Traceback" not in out.stderr
    assert case.caught_by <= failing(out.stdout), failing(out.stdout)


@pytest.mark.parametrize("command", sorted({c.command for c in CASES}))
def test_the_same_commands_pass_on_an_unpatched_copy(command, tmp_path):
    out = ScratchCopy(tmp_path).run(*command, "--json", timeout=900)
    assert out.returncode == 0, (failing(out.stdout) if out.stdout else out.stderr[-2000:])
