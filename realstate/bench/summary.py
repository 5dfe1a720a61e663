"""From per-cell records to the benchmark's numbers: accuracy per condition (with paired bootstrap
intervals) by regime (k x latent budget) and by family, BagMerge's fixed input orders (best and
worst chosen in hindsight per regime, mean, per-problem oracle), the order-flip rate, and the
tests of CanonicalMerge against BagMerge (exact McNemar, TOST, Holm).

Text-level references (full prompt, no context, PackLLM) are decoded once per problem, in the
0-step regime; the same values stand in every regime's row so floors and ceilings sit next to the
numbers they bound."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from realstate.bench.conditions import PACKLLM, order_name
from realstate.bench.scoring import normalized_words
from realstate.bench.statistics import holm, mcnemar_exact, paired_bootstrap, tost_paired

CONDITIONS = ("canonical", "bag-best-fixed", "bag-mean", "bag-worst-fixed", "bag-oracle", "naive", "full-prompt",
              "alone-mean", "alone-any", "no-context", PACKLLM, "zeroed", "deranged", "moment-matched")
TEXT_REFERENCES = ("full-prompt", "no-context", PACKLLM)
ALPHA = 0.05


def _seed(seed: int, label: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{label}".encode()).digest()[:8], "little")


def regime_of(record: dict[str, Any]) -> tuple[int, int]:
    return record["k"], record["latent_steps"]


def regime_name(regime: tuple[int, int]) -> str:
    return f"k={regime[0]} L={regime[1]}"


def orders_of(k: int) -> list[tuple[int, ...]]:
    return list(itertools.permutations(range(k)))


def _correct(record: dict[str, Any], condition: str) -> float:
    answer = record["answers"].get(condition)
    return float("nan") if answer is None else float(answer["correct"])


def fixed_orders(records: Sequence[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    """Per regime: each fixed order's accuracy, and the best and worst chosen in hindsight."""
    out = {}
    for regime in sorted({regime_of(r) for r in records}):
        members = [r for r in records if regime_of(r) == regime]
        accuracy = {order_name(o): float(np.mean([_correct(r, order_name(o)) for r in members]))
                    for o in orders_of(regime[0])}
        names = list(accuracy)  # lexicographic permutation order: ties go to the first
        best = max(names, key=lambda n: (accuracy[n], -names.index(n)))
        worst = min(names, key=lambda n: (accuracy[n], names.index(n)))
        out[regime] = {"accuracy": accuracy, "best": best, "worst": worst}
    return out


def flipped(record: dict[str, Any]) -> bool:
    """BagMerge's answer changes with the input order."""
    answers = {" ".join(normalized_words(record["answers"][order_name(o)]["answer"])) for o in orders_of(record["k"])}
    return len(answers) > 1


def cell_matrix(records: Sequence[dict[str, Any]], fixed: dict[tuple[int, int], dict[str, Any]]) -> np.ndarray:
    """``[cells, len(CONDITIONS)]`` of 0/1 (fractions for means, NaN where a condition is absent)."""
    zero_step = {r["problem"]: r for r in records if r["latent_steps"] == 0}
    rows = []
    for r in records:
        chosen = fixed[regime_of(r)]
        bags = [_correct(r, order_name(o)) for o in orders_of(r["k"])]
        alone = [_correct(r, f"alone[{i}]") for i in range(r["k"])]
        reference = zero_step.get(r["problem"], r)
        value = {
            "canonical": _correct(r, "canonical"),
            "bag-best-fixed": _correct(r, chosen["best"]), "bag-worst-fixed": _correct(r, chosen["worst"]),
            "bag-mean": float(np.mean(bags)), "bag-oracle": float(max(bags)),
            "naive": _correct(r, "naive"), "alone-mean": float(np.mean(alone)), "alone-any": float(max(alone)),
            "zeroed": _correct(r, "zeroed"), "deranged": _correct(r, "deranged"),
            "moment-matched": _correct(r, "moment-matched"),
            **{c: _correct(reference, c) for c in TEXT_REFERENCES},
        }
        rows.append([value[c] for c in CONDITIONS])
    return np.asarray(rows, dtype=float).reshape(len(rows), len(CONDITIONS))


def _canonical_minus_best(matrix: np.ndarray) -> np.ndarray:
    return matrix[:, CONDITIONS.index("canonical")] - matrix[:, CONDITIONS.index("bag-best-fixed")]


def _intervals(matrix: np.ndarray, resamples: int, seed: int, label: str) -> dict[str, Any]:
    return {c: i.to_json() for c, i in zip(CONDITIONS, paired_bootstrap(matrix, resamples, _seed(seed, label)))}


def _difference(matrix: np.ndarray, resamples: int, seed: int, label: str) -> dict[str, Any]:
    interval = paired_bootstrap(_canonical_minus_best(matrix)[:, None], resamples, _seed(seed, label))[0]
    return interval.to_json()


def summarize(records: Sequence[dict[str, Any]], resamples: int, seed: int, margin: float) -> dict[str, Any]:
    fixed = fixed_orders(records)
    matrix = cell_matrix(records, fixed)
    canonical = matrix[:, CONDITIONS.index("canonical")].astype(bool)
    regimes = []
    for regime, chosen in fixed.items():
        picks = np.array([regime_of(r) == regime for r in records])
        members = [r for r in records if regime_of(r) == regime]
        tests = {name: mcnemar_exact(canonical[picks], [bool(_correct(r, name)) for r in members])
                 for name in chosen["accuracy"]}
        adjusted = holm([t.p for t in tests.values()])
        regimes.append({
            "regime": regime_name(regime), "k": regime[0], "latent_steps": regime[1], "cells": int(picks.sum()),
            "accuracy": _intervals(matrix[picks], resamples, seed, f"regime {regime}"),
            "canonical_minus_best_fixed": _difference(matrix[picks], resamples, seed, f"diff {regime}"),
            "fixed_orders": chosen["accuracy"], "best_fixed": chosen["best"], "worst_fixed": chosen["worst"],
            "order_flip_rate": float(np.mean([flipped(r) for r in members])),
            "mcnemar_vs_each_fixed_order": {name: {**t.to_json(), "p_holm_over_orders": round(a, 6)}
                                            for (name, t), a in zip(tests.items(), adjusted)},
            "tost_vs_best_fixed": tost_paired(_canonical_minus_best(matrix[picks]), margin).to_json(),
        })
    families = _family_tests(records, matrix, canonical, resamples, seed, margin)
    by_family_budget = []
    for family in dict.fromkeys(r["family"] for r in records):
        for budget in sorted({r["latent_steps"] for r in records}):
            picks = np.array([r["family"] == family and r["latent_steps"] == budget for r in records])
            by_family_budget.append({"family": family, "latent_steps": budget, "cells": int(picks.sum()),
                                     "accuracy": _intervals(matrix[picks], resamples, seed, f"fb {family} {budget}")})
    return {
        "conditions": list(CONDITIONS),
        "overall": {"cells": len(records), "accuracy": _intervals(matrix, resamples, seed, "overall"),
                    "canonical_minus_best_fixed": _difference(matrix, resamples, seed, "diff overall"),
                    "tost_vs_best_fixed": tost_paired(_canonical_minus_best(matrix), margin).to_json(),
                    "order_flip_rate": float(np.mean([flipped(r) for r in records])) if records else float("nan")},
        "regimes": regimes, "families": families, "by_family_and_budget": by_family_budget,
        "tost_margin": margin, "alpha": ALPHA,
    }


def _family_tests(records: Sequence[dict[str, Any]], matrix: np.ndarray, canonical: np.ndarray, resamples: int,
                  seed: int, margin: float) -> list[dict[str, Any]]:
    """Per family, pooled over regimes: CanonicalMerge vs each cell's best fixed order (McNemar and
    TOST), Holm-adjusted over the families."""
    names = list(dict.fromkeys(r["family"] for r in records))
    best = matrix[:, CONDITIONS.index("bag-best-fixed")]
    rows = []
    for family in names:
        picks = np.array([r["family"] == family for r in records])
        rows.append({"family": family, "cells": int(picks.sum()),
                     "accuracy": _intervals(matrix[picks], resamples, seed, f"family {family}"),
                     "canonical_minus_best_fixed": _difference(matrix[picks], resamples, seed, f"fdiff {family}"),
                     "mcnemar_vs_best_fixed": mcnemar_exact(canonical[picks], best[picks].astype(bool)),
                     "tost_vs_best_fixed": tost_paired(matrix[picks, 0] - best[picks], margin),
                     "order_flip_rate": float(np.mean([flipped(r) for r, p in zip(records, picks) if p]))})
    mcnemar_holm = holm([r["mcnemar_vs_best_fixed"].p for r in rows])
    tost_holm = holm([r["tost_vs_best_fixed"].p for r in rows])
    for row, m, t in zip(rows, mcnemar_holm, tost_holm):
        row["mcnemar_vs_best_fixed"] = {**row["mcnemar_vs_best_fixed"].to_json(), "p_holm_over_families": round(m, 6)}
        row["tost_vs_best_fixed"] = {**row["tost_vs_best_fixed"].to_json(), "p_holm_over_families": round(t, 6),
                                     "equivalent": bool(t < ALPHA)}
    return rows
