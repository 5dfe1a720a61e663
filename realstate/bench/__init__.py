"""``canonmerge bench``: the core paper's experiment on real weights, at small scale.

Partitioned-reasoning problems (five generated families, or HotpotQA's distractor file) are split
over k agents; each agent's cache is computed once per problem and is its fragment; the final
agent answers from CanonicalMerge, from BagMerge in every one of the k! input orders, from naive
concatenation, and from references (all documents in one prompt, each agent alone, no context,
PackLLM output fusion) and causal-audit controls (zeroed, deranged, moment-matched caches).

Modules, one job each: ``problems`` (the record, JSONL), ``generator`` (the seeded families and
the committed data), ``hotpotqa`` (the loader), ``prompts`` (text and tokens), ``selection``,
``controls``, ``packllm``, ``decoding`` (batched greedy), ``scoring``, ``conditions`` (one cell),
``statistics``, ``summary``, ``structural`` (claim rows), ``report`` (tables, JSON),
``figures`` and ``runner`` (``run_bench``).

Library use::

    from realstate.bench import BenchSettings, run_bench
    outcome = run_bench(BenchSettings(quick=True))   # SmolLM2-135M, the committed eval split
    outcome.results        # spec.ClaimResult rows (C2, C3, C4, C8)
    outcome.document       # every setting, seed, answer and statistic (JSON-ready)
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BenchSettings": "realstate.bench.settings",
    "BenchOutcome": "realstate.bench.runner",
    "run_bench": "realstate.bench.runner",
    "Problem": "realstate.bench.problems",
    "read_problems": "realstate.bench.problems",
    "read_hotpotqa": "realstate.bench.hotpotqa",
    "write_figures": "realstate.bench.figures",
    "write_json": "realstate.bench.report",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'realstate.bench' has no attribute {name!r}")
