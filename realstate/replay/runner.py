"""The replay (``canonmerge realstate``): build the agents' fragments and run every registered
check on them, one function per check (``CHECKS``), then the tables and the report."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from realstate.kernel.dtypes import raw_bits
from realstate.kernel.engine import CANONICAL, Engine
from realstate.kernel.render import (
    Placement,
    bag_render,
    layout,
    render_layout,
)
from realstate.models.agents import run_agents
from realstate.models.loaded import LoadedModel
from realstate.replay import properties as P
from realstate.replay.activations import layer_activations
from realstate.replay.composition import c9_decode, c9_gate_full, c9_gate_zero, c9_orders, control_compose
from realstate.replay.context import Replay, load_model
from realstate.replay.decode import c3_cross_device, c8_decode, c8_fidelity, c8_frequencies
from realstate.replay.keys import c5_key_exact, c5_ties
from realstate.replay.negative_controls import control_bag, control_order, control_ties
from realstate.replay.oracle_row import c3_oracle
from realstate.replay.orders import c2_redelivery, c3_permutations, c3_trees, c4_bag_order, c4_bag_redelivery, c6_pair
from realstate.replay.positions import check_positions
from realstate.replay.settings import ReplaySettings
from realstate.replay.tables import activations_table, arity_table, decodes_table, fidelity_table, model_table, row_json
from spec import (
    Check,
    ClaimResult,
    InputError,
    Outcome,
    PartReport,
    Progress,
    no_progress,
)
from spec.fragment_set import iteration_order


def known_answer(check: Check) -> Callable[[Replay], ClaimResult]:
    """The check's row of the known-answer vectors (recomputed once per replay)."""
    def run(r: Replay) -> ClaimResult:
        if r.known_answers is None:
            from realstate.replay.vectors import check_known_answers

            r.known_answers = {row.check: row for row in check_known_answers()}
        return r.known_answers[check.name]
    return run


CHECKS: dict[Check, Callable[[Replay], ClaimResult]] = {
    # first: the known answers take a fraction of a second and read nothing the replay computes,
    # so with --fail-fast (canonmerge audit) a format or arithmetic change stops the run early
    P.KNOWN_IDS: known_answer(P.KNOWN_IDS),
    P.KNOWN_M: known_answer(P.KNOWN_M),
    P.KNOWN_KEYS: known_answer(P.KNOWN_KEYS),
    P.KNOWN_RENDERS: known_answer(P.KNOWN_RENDERS),
    P.REDELIVERY: c2_redelivery,
    P.PERMUTATIONS: c3_permutations,
    P.TREES: c3_trees,
    P.BAG_ORDER: c4_bag_order,
    P.BAG_REDELIVERY: c4_bag_redelivery,
    P.KEY_EXACT: c5_key_exact,
    P.TIES: c5_ties,
    P.PAIR: c6_pair,
    P.DECODE: c8_decode,
    P.FREQUENCIES: c8_frequencies,
    P.FIDELITY: c8_fidelity,
    P.CROSS_DEVICE: c3_cross_device,
    P.ORACLE: c3_oracle,  # after every check that renders: it compares what they rendered
    P.CONTROL_ORDER: control_order,
    P.CONTROL_TIES: control_ties,
    P.CONTROL_BAG: control_bag,
    # composition (C9), run with ReplaySettings.compose: the gates first (they read nothing the
    # others compute), then every schedule composed and decoded, then the control
    P.COMPOSE_GATE_ZERO: c9_gate_zero,
    P.COMPOSE_GATE_FULL: c9_gate_full,
    P.COMPOSE_ORDERS: c9_orders,
    P.COMPOSE_DECODE: c9_decode,
    P.CONTROL_COMPOSE: control_compose,
}


def run_replay(settings: ReplaySettings = ReplaySettings(), progress: Progress = no_progress,
               engine: Engine = CANONICAL, lm: LoadedModel | None = None,
               checks: Sequence[Check] | None = None, fail_fast: bool = False) -> PartReport:
    """Build the agents' fragments and run the selected checks on them (every check of
    ``CHECKS`` by default; see the module docstring).

    Args:
        settings: the weights source (geometry, checkpoint or named model), agents, latent steps,
            dtype, device, decode length, fidelity offsets, prompts and iteration order.
        progress: called as ``progress(label, done, total)`` during long loops.
        engine: the render mechanics under test (a planted bug in the negative tests).
        lm: an already loaded model, instead of loading the one ``settings`` names.
        checks: the registered checks to run (``realstate.replay.properties``); ``None`` for all.
        fail_fast: stop after the first check that does not hold (``canonmerge audit``).

    Example:
        >>> report = run_replay(ReplaySettings(agents=3))  # doctest: +SKIP
        >>> {r.claim for r in report.results if r.outcome is not Outcome.HOLDS}  # doctest: +SKIP
        set()
    """
    settings.validate()
    started = time.perf_counter()
    timings: dict[str, float] = {}
    chosen = [c for c in CHECKS if (checks is None or c in checks)
              and (settings.compose or c not in P.COMPOSE_CHECKS)]
    if checks is not None and not chosen:
        raise InputError("the selected checks are composition's (C9); they run only with compose=True (--compose)")

    def lap(name: str, t0: float) -> float:
        now = time.perf_counter()
        timings[name] = round(now - t0, 3)
        return now

    t = time.perf_counter()
    lm = lm or load_model(settings)
    check_positions(lm, settings)  # before any agent runs: the error names the budget to lower
    if settings.compose:
        settings.composition.validate(lm.fingerprint.layers)  # c against this model's layers
    t = lap("load_model", t)
    if lm.device.type == "cpu":
        chosen = [c for c in chosen if c is not P.CROSS_DEVICE]
    progress("realstate: agents", 0, settings.agents)
    runs = run_agents(lm, settings.agents, settings.latent_steps, settings.seed,
                      list(settings.prompts) if settings.prompts else None, settings.agent_starts,
                      keep_inputs=settings.compose)
    t = lap("agents", t)
    replay = Replay(lm, runs, settings, engine, progress)
    ids = [f.content_id for f in replay.fragments]
    if len(set(ids)) != len(ids):
        raise InputError("two agents produced identical fragments; give them different prompts")

    results: list[ClaimResult] = []
    with iteration_order(settings.iteration):
        for check in chosen:
            results.append(CHECKS[check](replay))
            t = lap(check.name, t)
            if fail_fast and results[-1].outcome is not Outcome.HOLDS:
                break
        incremental_render = incremental(replay)

    tables = [model_table(lm, settings), arity_table([replay.rows[n] for n in sorted(replay.rows)])]
    if any(x.canonical_continuations for x in replay.rows.values()):
        tables.append(decodes_table(replay))
    if replay.fidelity_rows:
        tables.append(fidelity_table(replay.fidelity_rows))
    activations = layer_activations(runs, replay.fidelity_rows)
    tables.append(activations_table(activations, lm.fingerprint.layers // 2))
    notes = [
        f"weights: {lm.source} ({lm.source_detail})"
        + ("; seeded weights are not real weights: the bit-level claims C3, C6, C7 do not depend on "
           "weight values, the decode figures do" if lm.source == "seeded" else ""),
        "incremental re-encoding (render of a render) gives "
        f"{'DIFFERENT' if incremental_render['differs'] else 'the same'} bytes from the flat render "
        f"({incremental_render['key_elements_differing']} key elements differ); "
        "canonmerge always renders flat from stored positions",
        f"FragmentSet iteration order during the replay: {settings.iteration}",
    ]
    if lm.load_messages:  # already escaped and summarised (realstate.models.loader_output)
        notes.append("printed by transformers/torch while loading: " + " | ".join(lm.load_messages))
    if len(results) < len(chosen):
        notes.append(f"--fail-fast: stopped at {results[-1].check}; {len(chosen) - len(results)} checks not run")
    full = replay.rows.get(len(replay.fragments))
    data = {
        "model": lm.describe(),
        "settings": {k: (list(v) if isinstance(v, tuple) else dict(v.__dict__) if k == "composition" else v)
                     for k, v in settings.__dict__.items()},
        "engine": engine.name,
        "checks": [c.name for c in chosen],
        "fragments": [{"agent": x.name, "id": x.fragment.content_id.hex(), "start": x.fragment.start,
                       "tokens": x.fragment.tokens,
                       "prompt_tokens": len(x.prompt_ids), "latent_steps": x.latent_steps,
                       "m": x.fragment.order_value} for x in runs],
        "canonical_digest_full_set": replay.digest(replay.state_of(replay.fragments)),
        "counts": {"permutations": sum(x.permutations for x in replay.rows.values()),
                   "merge_trees": sum(x.trees for x in replay.rows.values()),
                   "redeliveries": sum(x.redeliveries for x in replay.rows.values())},
        "incremental": incremental_render,
        "activations_per_layer": [x.to_json() for x in activations],
        "full_set_row": row_json(full) if full is not None else None,
        "timings_s": {**timings, "total": round(time.perf_counter() - started, 3)},
    }
    return PartReport("realstate", results, tables, data, notes)


def incremental(replay: Replay) -> dict[str, Any]:
    """Flat render vs. rendering the tail first at 0 and then shifting that block into place."""
    ordered = replay.engine.order(replay.fragments)
    flat = render_layout(layout(ordered), 0, replay.engine)
    if len(ordered) < 2:
        return {"differs": False, "key_elements_differing": 0, "note": "needs two fragments"}
    block = bag_render(ordered[1:], 0, replay.engine).as_fragment()
    two_step = render_layout([Placement(ordered[0], 0), Placement(block, ordered[0].tokens)], 0, replay.engine)
    differing = int((raw_bits(flat.keys) != raw_bits(two_step.keys)).sum())
    return {"differs": flat.digest() != two_step.digest(), "key_elements_differing": differing,
            "flat_digest": flat.digest(), "incremental_digest": two_step.digest()}
