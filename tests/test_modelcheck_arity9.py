"""N = 9: the cap, reached by the opt-in universe ``specials9`` alone.  The whole arity is a
cluster's job (535,610,880 orderings at R = 1), so here its plan is held to the closed forms,
the command's refusals are checked, and its smallest real shards run in this process on
realstate's backend — clean, and with a planted bug caught."""

from __future__ import annotations

import pytest

from canonmerge.commands.check import _backend
from modelcheck import properties as P
from modelcheck import shards
from modelcheck import trace as trace_io
from modelcheck.coverage import closed_forms, samples_due, sample_seed
from modelcheck.plan_coverage import _control_seen, judge_plan, short_of, sums
from modelcheck.runner import MAX_EXHAUSTIVE_ARITY, MAX_REDELIVERIES
from modelcheck.shards import Settings, ShardTask, perform, plan
from spec import Outcome
from tests.hostile_helpers import run_cli

SETTINGS = Settings(9, 1, "arrival", tuple(c.name for c in P.ALL), "realstate", None)


def _smallest_c3_shards(count: int) -> list[shards.Shard]:
    nine = [s for s in plan(["specials9"], SETTINGS) if s.kind == "c3" and s.n == 9]
    return sorted(nine, key=lambda s: (s.orderings, s.prefix))[:count]


def test_the_cap_is_nine_and_its_plan_meets_the_closed_forms():
    assert MAX_EXHAUSTIVE_ARITY == 9
    planned = shards.c3_shards(9, 1)
    forms = closed_forms(9, 1)
    assert len(planned) == 6048 and sum(o for _, o in planned) == sum(forms.values()) == 535_610_880
    assert max(o for _, o in planned) == 176_400          # a task of seconds on a cluster
    assert not short_of(sums(planned, 9, 1), 9, 1)
    assert _control_seen(planned, 9, 1)
    row = judge_plan(MAX_EXHAUSTIVE_ARITY, MAX_REDELIVERIES)
    assert row.outcome is Outcome.HOLDS, row.figure
    nines = [p for p in row.details["plans"] if p["n"] == 9]
    assert len(nines) == MAX_REDELIVERIES + 1 and all(p["exact"] for p in nines)
    # a plan without N = 9, or one prefix short there, fails naming N = 9:
    # tests/test_modelcheck_plan_selection.py


@pytest.mark.parametrize("argv, says", [
    (["--max-arity", "9"], "--max-arity 9: no selected universe has 9 fragments (the most: specials, 8); "
                           "N = 9 runs on --universe specials9"),
    (["--max-arity", "9", "--universe", "ties", "--universe", "float32"],
     "--max-arity 9: no selected universe has 9 fragments (the most: ties, 7)"),
    (["--max-arity", "10", "--universe", "specials9"], "--max-arity 10: must be an integer in 1..9"),
])
def test_an_arity_no_selected_universe_reaches_is_refused_in_one_line(argv, says, capsys):
    result = run_cli(capsys, ["check", "--no-gossip", "--workers", "1", *argv])
    assert result.code == 2 and "Traceback" not in result.err
    (line,) = result.err.strip().splitlines()
    assert says in line, line


def test_the_smallest_nine_fragment_shards_run_clean_and_fully_watched():
    """Two real N = 9 shards (a re-delivered first arrival: 720 orderings each) on realstate's
    render: no violation, each schedule counted once, valid, and sampled as the rule owes."""
    backend = _backend()
    for shard in _smallest_c3_shards(2):
        assert shard.orderings == 720 and len(shard.prefix) == 4
        result = perform(backend, ShardTask(SETTINGS, shard))
        assert {t.check.name: t.found for t in result.tallies.values()} == {
            P.PERMUTATIONS.name: 0, P.MERGE_TREES.name: 0, P.REDELIVERIES.name: 0, P.ORACLE.name: 0}
        assert result.tallies[P.REDELIVERIES].checked == result.tallies[P.ORACLE].checked == 720
        seen = result.coverage["re-deliveries"]
        assert seen.count == seen.distinct == 720 and not seen.invalid and not seen.repeated
        assert seen.sampled == seen.due == samples_due(sample_seed(shard.describe(), "re-deliveries", 9,
                                                                   shard.prefix), 720)
        assert not seen.mismatched and not seen.off_schedule


def test_a_planted_bug_is_caught_in_a_nine_fragment_shard(tmp_path, capsys):
    """``--plant no-tie-break``: the ties among specials9's last six fragments (±0, the infinities,
    the NaN payloads, m = 2) render in arrival order, so re-deliveries differ, with a trace that
    ``canonmerge check --replay`` reproduces."""
    planted = Settings(9, 1, "arrival", SETTINGS.checks, "realstate", "no-tie-break")
    result = perform(_backend("no-tie-break"), ShardTask(planted, _smallest_c3_shards(1)[0]))
    tally = result.tallies[P.REDELIVERIES]
    assert tally.checked == 720 and tally.found > 0 and tally.traces
    assert tally.traces[0]["universe"] == "specials9" and tally.traces[0]["mutant"] == "no-tie-break"
    saved = trace_io.save(tally.traces[0], tmp_path)
    assert run_cli(capsys, ["check", "--replay", str(saved)]).code == 1
