"""The faulty-gather controls of ``canonmerge replicate``: built from agreeing ranks' results,
each is rejected by the comparison of ranks; with the comparison weakened in its source (each
``and`` of its cross-checks made an ``or``, loaded from the patched text of agreement.py) the
controls are accepted and the instrument reports the agreement blind.  A scratch run of the
command with one weakening planted is in tests/test_replicate.py."""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from realstate.processes.replicate import agreement, faulty_gathers
from realstate.processes.replicate.faulty_gathers import (
    LIST_DIFFERS,
    NOT_APPLICABLE,
    NOT_FAULTY,
    NOT_OWN,
    SET_CHANGED,
    gather_controls,
)

AGREE = ("    agree = len(digests) == 1 and len(sets) == 1 and len(gathered) == 1 and "
         "set(next(iter(gathered))) == digests\n")
WEAKENED = {  # the three `and` -> `or` weakenings of the cross-checks, as the source would read
    "set digests or the rest": AGREE.replace("== 1 and len(sets)", "== 1 or len(sets)"),
    "digests and sets, or the gathered lists": AGREE.replace("len(sets) == 1 and", "len(sets) == 1 or"),
    "all but the own-digest check, or it": AGREE.replace("len(gathered) == 1 and", "len(gathered) == 1 or"),
}


def _results(ranks: int) -> tuple[list[dict[str, Any]], str]:
    digest = hashlib.sha256(b"render").hexdigest()
    sets = hashlib.sha256(b"set").hexdigest()
    return [{"rank": r, "digest": digest, "set_digest": sets, "gathered_digests": [digest] * ranks}
            for r in range(ranks)], digest


def _weakened(line: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    source = Path(agreement.__file__).read_text()
    assert source.count(AGREE) == 1 and line != AGREE
    module = types.ModuleType("weakened_agreement")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look their module up
    exec(compile(source.replace(AGREE, line), "weakened_agreement", "exec"), module.__dict__)
    return module


def test_every_faulty_gather_is_rejected_by_the_comparison() -> None:
    results, digest = _results(3)
    assert agreement.compare_ranks(results, digest).holds  # the base agrees
    seen = gather_controls(results, digest)
    assert seen["ok"], seen
    assert seen["controls"] == {SET_CHANGED: "rejected", LIST_DIFFERS: "rejected", NOT_OWN: "rejected",
                                NOT_FAULTY: "accepted"}
    assert seen["figure"] == "3 faulty gather(s) rejected by the comparison of ranks, a correct one accepted"
    assert results == _results(3)[0]  # the controls are copies: the run's own data is untouched


def test_each_control_breaks_only_its_own_cross_check() -> None:
    results, digest = _results(2)
    for name, control in faulty_gathers.faulty_gathers(results).items():
        assert control is not None
        digests = {r["digest"] for r in control}
        sets = {r["set_digest"] for r in control}
        gathered = {tuple(r["gathered_digests"]) for r in control}
        broken = [len(digests) != 1, len(sets) != 1, len(gathered) != 1,
                  any(set(g) != digests for g in gathered)]
        assert digests == {digest} and sum(broken) == 1, (name, broken)


def test_one_rank_runs_only_the_control_that_needs_no_other_rank() -> None:
    results, digest = _results(1)
    seen = gather_controls(results, digest)
    assert seen["ok"] and seen["controls"] == {SET_CHANGED: NOT_APPLICABLE, LIST_DIFFERS: NOT_APPLICABLE,
                                               NOT_OWN: "rejected", NOT_FAULTY: "accepted"}


@pytest.mark.parametrize("line", list(WEAKENED.values()), ids=list(WEAKENED))
def test_a_weakened_comparison_is_reported_blind(line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faulty_gathers, "compare_ranks", _weakened(line, monkeypatch).compare_ranks)
    results, digest = _results(2)
    seen = gather_controls(results, digest)
    assert not seen["ok"] and "accepted" in seen["controls"].values()
    assert seen["figure"].startswith("blind instrument: the comparison of ranks (did not reject a faulty gather: ")


def test_a_comparison_that_fails_on_a_control_is_no_rejection(monkeypatch: pytest.MonkeyPatch) -> None:
    def by_position(results: list[dict[str, Any]], launcher_digest: str) -> agreement.Comparison:
        agree = all(r["gathered_digests"][3] == r["digest"] for r in results)  # an IndexError on 2 ranks
        return agreement.Comparison(frozenset(), frozenset(), agree, True)

    monkeypatch.setattr(faulty_gathers, "compare_ranks", by_position)
    results, digest = _results(2)
    seen = gather_controls(results, digest)
    assert not seen["ok"] and all(f.startswith("no verdict (IndexError") for f in seen["controls"].values())


def test_controls_that_were_never_run_are_no_rejection(monkeypatch: pytest.MonkeyPatch) -> None:
    results, digest = _results(2)
    monkeypatch.setattr(faulty_gathers, "faulty_gathers", lambda rs: {name: None for name in faulty_gathers.FAULTS})
    seen = gather_controls(results, digest)
    assert not seen["ok"] and seen["figure"].endswith("(did not reject a faulty gather: 0 of 3 controls were run)")


def test_the_gather_that_is_not_faulty_is_accepted_even_when_the_real_round_disagrees() -> None:
    results, digest = _results(2)
    results[1]["set_digest"] = hashlib.sha256(b"another set").hexdigest()  # the real round disagrees
    assert not agreement.compare_ranks(results, digest).holds
    control = faulty_gathers.not_faulty(results, digest)
    assert agreement.compare_ranks(control, digest).holds and results[1]["set_digest"] != control[1]["set_digest"]
    assert gather_controls(results, digest)["controls"][NOT_FAULTY] == "accepted"


def test_labelling_that_rejects_whatever_the_comparison_said_is_reported_blind(
        monkeypatch: pytest.MonkeyPatch) -> None:
    source = Path(faulty_gathers.__file__).read_text()
    label = '"accepted" if compare_ranks(control, launcher_digest).holds else "rejected"'
    assert source.count(label) == 1
    module = types.ModuleType("patched_faulty_gathers")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source.replace(label, '"rejected"'), faulty_gathers.__file__, "exec"), module.__dict__)
    results, digest = _results(2)
    seen = module.gather_controls(results, digest)
    assert not seen["ok"] and seen["controls"][NOT_FAULTY] == "rejected"
    assert seen["figure"] == "blind instrument: the comparison of ranks (a gather that is not faulty: rejected)"
