"""``run_bench``: the whole benchmark as one library call.

Pass 1 runs every agent of every problem ONCE, at the largest latent budget; the fragment at a
smaller budget is its prefix (the prefill and the first latent steps are the same computation,
so the bytes are identical).  Pass 2 decodes every problem at every budget: all conditions of a
cell in one batch (``realstate.bench.conditions``).  Deranged donors need every problem's
fragments, hence the two passes.  ``engine`` is the CanonicalMerge mechanics under test: the
negative tests pass a planted order-dependent one (``realstate.evidence.planted``) and expect the
answer-uniqueness row to fail."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch

from realstate.bench import controls
from realstate.bench.canaries import CANARIES, with_canaries
from realstate.bench.conditions import Cell, References, assemble, cell_rows, decode_cell
from realstate.bench.decoding import decode_rows
from realstate.bench.prompts import agent_text, codec_for
from realstate.bench.selection import load_problems, source_of
from realstate.bench.settings import BenchSettings
from realstate.bench.structural import structural_results
from realstate.bench.summary import summarize
from realstate.kernel.engine import CANONICAL, Engine
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import canonical_render
from realstate.models.agents import run_agent
from realstate.models.checkpoint import load_checkpoint
from realstate.models.gguf import load_named
from realstate.models.loaded import LoadedModel
from realstate.models.seeded import load_seeded
from spec import ClaimResult, Progress, no_progress
from spec.arguments import within_positions

T = TypeVar("T")
PAPER_SCALE = "the core paper measures Qwen3-1.7B and Qwen3-4B"
CANARY_NEW_TOKENS = 1


@dataclass
class Clock:
    """Wall and CPU seconds per phase (reported, never asserted)."""

    wall: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - wall
            self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - cpu

    def to_json(self) -> dict[str, Any]:
        return {"wall_seconds": {k: round(v, 3) for k, v in self.wall.items()},
                "cpu_seconds": {k: round(v, 3) for k, v in self.cpu.items()},
                "total_wall_seconds": round(sum(self.wall.values()), 3),
                "total_cpu_seconds": round(sum(self.cpu.values()), 3)}


@dataclass
class BenchOutcome:
    document: dict[str, Any]  # everything, JSON-ready; document["timings"] is the only part that varies
    results: list[ClaimResult]


def load_bench_model(settings: BenchSettings) -> LoadedModel:
    if settings.model is not None:
        return load_named(settings.model, settings.dtype, settings.device)
    if settings.checkpoint is not None:
        return load_checkpoint(settings.checkpoint, settings.dtype, settings.device)
    assert settings.geometry is not None  # validate() allows exactly one source
    return load_seeded(settings.geometry, settings.dtype, settings.device, settings.seed)


def _dominant_quantization(lm: LoadedModel) -> str:
    """The most common tensor storage type of a GGUF file, as the weights label lists it
    (``... (Q4_1 x210, F32 x61, Q8_0 x1; ...)``, most common first); "GGUF" if not listed."""
    found = re.search(r"\(([A-Z0-9_]+) x\d+", str(lm.describe().get("weights_digest", "")))
    return found.group(1) if found else "GGUF"


def framing(lm: LoadedModel) -> list[str]:
    """What the numbers can and cannot say, in the report's own words."""
    params = sum(p.numel() for p in lm.model.parameters())
    scale = f"{params / 1e6:.0f}M parameters ({lm.fingerprint.layers} layers), {PAPER_SCALE}"
    name = lm.source_detail.split(";")[0].split(":")[0]
    lines = {"package": [f"weights: {name}, real trained weights, {_dominant_quantization(lm)}-quantized (GGUF) then "
                         f"dequantized to {lm.dtype}; {scale}."],
             "checkpoint": [f"weights: a local checkpoint ({lm.source_detail}) in {lm.dtype}; {scale}."],
             "seeded": [f"weights: SEEDED ({lm.source_detail}), not trained: every accuracy here is noise; only the "
                        "structural rows (C2/C3/C4/C8) mean anything."]}.get(lm.source, [f"weights: {lm.source}"])
    return lines + [
        "transfers from the paper: the structural guarantees (one render and one answer per problem whatever the "
        "input order; re-delivery absorbed) do not depend on scale or weights, and are checked on every cell.",
        "does not transfer: accuracy levels, the size of BagMerge's order sensitivity, the PackLLM gap and the k>2 "
        "behaviour are properties of the model; at this scale they are small-model numbers, read them against the "
        "floors (no context, controls) and ceilings (all documents in one prompt) printed next to them.",
        "best and worst fixed BagMerge orders are chosen in hindsight on the evaluation problems themselves "
        "(optimistic for BagMerge); prompts were designed on the dev split only.",
    ]


def _file_sha256(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def check_positions(problems: list[Any], codec: Any, budget: int, settings: BenchSettings, limit: int) -> None:
    """Before any agent runs: the largest latent budget and the decoded tokens fit the model's
    positions for every problem (each agent's prompt + latent steps; the render of all agents'
    fragments + the final agent's prompt + the new tokens), the error naming the budget to lower."""
    for p in problems:
        lengths = [len(codec.encode(agent_text(doc))) for doc in p.agents]
        for length in lengths:
            within_positions(limit, [(None, "prompt", length), ("latent_steps", settings.latent_steps, budget)],
                             f"an agent of problem {p.id}")
        question = len(codec.encode(codec.final_text(p)))
        within_positions(limit, [(None, "prompts and question", sum(lengths) + question),
                                 ("latent_steps", settings.latent_steps, budget * len(lengths)),
                                 ("max_new_tokens", settings.max_new_tokens, settings.max_new_tokens)],
                         f"the final agent's decode for problem {p.id}")


def _tick(progress: Progress, task: str, items: list[T], body: Callable[[T], None]) -> None:
    for done, item in enumerate(items):
        progress(task, done, len(items))
        body(item)
    progress(task, len(items), len(items))


def run_canaries(lm: LoadedModel, codec: Any, cells: list[Cell], settings: BenchSettings) -> dict[str, dict[str, Any]]:
    """Each canary (``realstate.bench.canaries``) on the smallest cell, through the real cells'
    pipeline: rows, batched decode, record, structural rows.  Its rows never join the results;
    ``with_canaries`` reads them.  One decoded token each: the first-step logits are what the
    answer instrument must see differ, and the canaries stay a few per cent of a run."""
    if not cells:
        return {}
    smallest = min(cells, key=lambda c: (len(c.fragments), c.latent_steps))
    out = {}
    for canary in CANARIES:
        cell = Cell(smallest.problem, smallest.latent_steps, smallest.fragments)
        decode_cell(lm, codec, cell, canary.engine, {}, settings.seed, None, CANARY_NEW_TOKENS,
                    canary.plan(len(cell.fragments)))
        out[canary.name] = {"engine": canary.engine.name, "record": cell.record,
                            "rows": structural_results([cell.record], lm.geometry, 0.0)}
    return out


def run_bench(settings: BenchSettings, progress: Progress = no_progress, engine: Engine = CANONICAL) -> BenchOutcome:
    """Run the benchmark; ``document`` holds every setting, seed, per-cell answer and statistic.

    Args:
        settings: what to run (``BenchSettings``; validated here).
        progress: a ``progress(task, done, total)`` sink.
        engine: the CanonicalMerge mechanics under test (``realstate.kernel.engine.CANONICAL``).

    Example:
        >>> outcome = run_bench(BenchSettings(model=None, geometry="qwen3-tiny", quick=True))  # doctest: +SKIP
        >>> [r.outcome.value for r in outcome.results]  # doctest: +SKIP
        ['holds', 'holds', 'holds', 'holds']
    """
    settings.validate()
    problems, donor_only = load_problems(settings)  # bad problem files fail before the model loads
    clock = Clock()
    with clock.phase("load model"):
        lm = load_bench_model(settings)
    if settings.threads is not None:
        torch.set_num_threads(settings.threads)
    codec = codec_for(lm.tokenizer, lm.vocab_size)
    budgets = sorted(settings.effective_latent_steps())
    check_positions(problems + donor_only, codec, budgets[-1], settings, lm.fingerprint.max_positions)
    work: dict[str, int] = {"agent_prompt_tokens": 0, "latent_steps": 0, "reference_prompt_tokens": 0,
                            "decode_rows": 0, "decode_prompt_tokens": 0, "decode_row_steps": 0}

    fragments: dict[str, dict[int, list[Fragment]]] = {}
    references: dict[str, References] = {}

    prompts: dict[str, list[list[int]]] = {}

    def prefill(problem: Any) -> None:
        with clock.phase("agents (prefill + latent steps)"):
            per_budget: dict[int, list[Fragment]] = {b: [] for b in budgets}
            prompts[problem.id] = [codec.encode(agent_text(doc)) for doc in problem.agents]
            for i, ids in enumerate(prompts[problem.id]):
                run = run_agent(lm, f"{problem.id}/{i}", ids, budgets[-1])
                work["agent_prompt_tokens"] += len(ids)
                work["latent_steps"] += budgets[-1]
                for b in budgets:
                    n = len(ids) + b
                    per_budget[b].append(run.fragment if n == run.fragment.tokens else controls.prefix(run.fragment, n))
            fragments[problem.id] = per_budget
        if problem.id in decoded:
            with clock.phase("references (one-prompt prefill)"):
                text = per_budget[0]
                layout = canonical_render(text, engine=engine).layout
                order = [next(i for i, f in enumerate(text) if f.content_id == p.fragment.content_id) for p in layout]
                joined = [t for i in order for t in prompts[problem.id][i]]
                work["reference_prompt_tokens"] += len(joined)
                references[problem.id] = References(run_agent(lm, f"{problem.id}/all", joined, 0).fragment, text)

    decoded = {p.id for p in problems}
    _tick(progress, "bench: agents", problems + donor_only, prefill)

    pools: dict[tuple[str, int], list[tuple[str, int, Fragment]]] = {}
    for p in problems + donor_only:
        for b in budgets:
            pools.setdefault((p.family, b), []).extend((p.id, i, f) for i, f in enumerate(fragments[p.id][b]))
    cells = [Cell(p, b, fragments[p.id][b]) for p in problems for b in budgets]
    donor_counts = {"exact": 0, "prefix": 0, "cells_without_deranged_control": 0}

    def decode(cell: Cell) -> None:
        p, b = cell.problem, cell.latent_steps
        with clock.phase("render (orders, re-deliveries, controls)"):
            donors = {i: controls.choose_donor(f, p.id, pools[(p.family, b)], settings.seed)
                      for i, f in enumerate(cell.fragments)}
            rows, structure, info = cell_rows(lm, cell, engine, donors, settings.seed,
                                              references[p.id] if b == 0 else None)
        if info["deranged_donors"] is None:
            donor_counts["cells_without_deranged_control"] += 1
        else:
            for d in info["deranged_donors"].values():
                donor_counts[d["match"]] += 1
        with clock.phase("decode (batched greedy)"):
            prompt = codec.encode(codec.final_text(p))
            result = decode_rows(lm, codec, rows, prompt, settings.max_new_tokens)
        work["decode_rows"] += len(rows)
        work["decode_prompt_tokens"] += result.prompt_tokens
        work["decode_row_steps"] += len(rows) * max(result.steps - 1, 0)
        cell.record = assemble(cell, rows, result, structure, info, len(prompt))

    _tick(progress, "bench: decode", cells, decode)
    records = [c.record for c in cells]
    with clock.phase("canaries (same pipeline, built to be caught)"):
        canaries = run_canaries(lm, codec, cells, settings)
    with clock.phase("statistics"):
        summary = summarize(records, settings.bootstrap, settings.seed, settings.tost_margin)
    results = with_canaries(structural_results(records, lm.geometry, sum(clock.wall.values())),
                            {name: c["rows"] for name, c in canaries.items()})
    document = {
        "benchmark": "canonmerge bench: CanonicalMerge vs BagMerge on partitioned reasoning",
        "settings": settings.to_json(),
        "engine": engine.name,
        "model": {**lm.describe(), "parameters": sum(p.numel() for p in lm.model.parameters())},
        "framing": framing(lm),
        "problems": {"source": source_of(settings), "sha256": _file_sha256(source_of(settings)),
                     "count": len(problems), "ids": [p.id for p in problems],
                     "derangement_donors_only": [p.id for p in donor_only],
                     "families": {f: sum(1 for p in problems if p.family == f)
                                  for f in dict.fromkeys(p.family for p in problems)},
                     "k": {str(k): sum(1 for p in problems if p.k == k) for k in sorted({p.k for p in problems})}},
        "prompts": codec.describe(),
        "torch_threads": torch.get_num_threads(),
        "work": work,
        "controls": {"checked_per_cell": ["zeroed", "moment-matched", "deranged"], "deranged_donors": donor_counts,
                     "moment_tolerance": controls.MOMENT_TOLERANCE},
        "cells": records,
        "canaries": {name: {"engine": c["engine"], "cell": c["record"]["problem"], "k": c["record"]["k"],
                            "latent_steps": c["record"]["latent_steps"],
                            "canonical_orders": c["record"]["canonical_orders"], "structure": c["record"]["structure"],
                            "claims": [{k: v for k, v in r.to_json().items() if k != "seconds"} for r in c["rows"]]}
                     for name, c in canaries.items()},
        "summary": summary,
        "claims": [{k: v for k, v in r.to_json().items() if k != "seconds"} for r in results],
        "timings": clock.to_json(),
    }
    return BenchOutcome(document, results)


