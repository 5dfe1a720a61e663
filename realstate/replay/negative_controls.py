"""Negative controls run inside every replay: the same checks on planted bugs must fail, so a
replay whose verdict machinery went blind cannot pass."""

from __future__ import annotations

import time
from collections.abc import Sequence

from realstate.evidence.planted import engine_named
from realstate.kernel.engine import Engine
from realstate.kernel.fragment import Fragment
from realstate.replay import properties as P
from realstate.replay.context import Replay
from realstate.replay.keys import c5_ties
from realstate.replay.orders import c3_permutations, c4_bag_order
from spec import (
    ClaimResult,
    Outcome,
    exit_code_for,
    no_progress,
)


def control_replay(r: Replay, engine: Engine, fragments: Sequence[Fragment] | None = None) -> Replay:
    """A fresh replay of the same agents (or of ``fragments``) with ``engine``: its renders and
    figures are its own, so a control never touches what the real checks recorded."""
    control = Replay(r.lm, r.runs, r.settings, engine, no_progress)
    if fragments is not None:
        control.fragments = list(fragments)
    return control


def caught(result: ClaimResult) -> bool:
    return result.outcome is Outcome.FAILS and exit_code_for([result]) == 1


def control_order(r: Replay) -> ClaimResult:
    """Negative control: the permutations check (a count) fails on an arrival-order render."""
    started = time.perf_counter()
    if len(r.fragments) < 2:
        return P.CONTROL_ORDER.not_applicable("an arrival-order render cannot misorder one fragment (needs at "
                                              "least 2 agents)")
    inner = c3_permutations(control_replay(r, engine_named("order-by-arrival")))
    return P.CONTROL_ORDER.holds_if(caught(inner), f"order-by-arrival: {inner.outcome.value}, exit "
                                    f"{exit_code_for([inner])} ({inner.figure})", time.perf_counter() - started)


def control_ties(r: Replay) -> ClaimResult:
    """Negative control: the ties check (a single comparison) fails without the id tie-break;
    decided by a count, so each verdict path checks the other."""
    started = time.perf_counter()
    inner = c5_ties(control_replay(r, engine_named("no-tie-break")))
    return P.CONTROL_TIES.tally(1, 0 if caught(inner) else 1, "planted bugs", time.perf_counter() - started,
                                figure=f"no-tie-break: {inner.outcome.value}, exit {exit_code_for([inner])} "
                                       f"({inner.figure})")


def control_bag(r: Replay) -> ClaimResult:
    """Negative control: a 'sometimes' check with nothing to find fails — two deliveries of one
    fragment, whose two BagMerge orders are the same bytes."""
    started = time.perf_counter()
    inner = c4_bag_order(control_replay(r, r.engine, [r.fragments[0], r.fragments[0].copy()]))
    return P.CONTROL_BAG.holds_if(caught(inner), f"one fragment twice: {inner.outcome.value}, exit "
                                  f"{exit_code_for([inner])} ({inner.figure})", time.perf_counter() - started)
