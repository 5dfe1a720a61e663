"""The benchmark's human tables (``spec.Table``) and its JSON document on disk.  Nothing here
computes a result; it formats what ``summary`` and ``runner`` produced."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from spec import InputError, Table
from spec.output_files import check_output_tree, write_output

JSON_NAME = "bench.json"


def pct(interval: dict[str, Any] | None, with_ci: bool = True) -> str:
    """``42 (33-51)``: accuracy in percent with its 95 % interval; ``-`` where not measured."""
    if not interval or interval.get("n", 0) == 0 or interval["mean"] is None or _nan(interval["mean"]):
        return "-"
    text = f"{100 * interval['mean']:.0f}"
    if with_ci:
        text += f" ({100 * interval['low']:.0f}-{100 * interval['high']:.0f})"
    return text


def _nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _p(x: float) -> str:
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def regime_tables(summary: dict[str, Any]) -> list[Table]:
    main = Table("bench: accuracy % (95% paired bootstrap CI) by regime: CanonicalMerge vs BagMerge's fixed orders",
                 ["regime", "cells", "CanonicalMerge", "best fixed", "mean fixed", "worst fixed", "oracle",
                  "order flips", "naive concat"])
    floors = Table("bench: floors, ceilings and causal-audit controls % (same cells; text references decoded at L=0)",
                   ["regime", "full prompt", "agent alone (mean)", "any agent alone", "no context", "PackLLM",
                    "zeroed", "deranged", "moment-matched"])
    rows = [*summary["regimes"], {"regime": "all", **summary["overall"]}]
    for r in rows:
        a = r["accuracy"]
        main.rows.append([r["regime"], str(r["cells"]), pct(a["canonical"]), pct(a["bag-best-fixed"]),
                          pct(a["bag-mean"], False), pct(a["bag-worst-fixed"]), pct(a["bag-oracle"], False),
                          f"{100 * r['order_flip_rate']:.0f}%", pct(a["naive"], False)])
        floors.rows.append([r["regime"], pct(a["full-prompt"]), pct(a["alone-mean"], False), pct(a["alone-any"], False),
                            pct(a["no-context"]), pct(a["packllm"]), pct(a["zeroed"], False), pct(a["deranged"], False),
                            pct(a["moment-matched"], False)])
    return [main, floors]


def test_tables(summary: dict[str, Any]) -> list[Table]:
    margin = summary["tost_margin"]
    families = Table(f"bench: CanonicalMerge vs the best fixed BagMerge order, per family (pooled over regimes; "
                     f"Holm over families; TOST margin ±{100 * margin:.0f} points)",
                     ["family", "cells", "CanonicalMerge", "best fixed", "difference (CI)", "McNemar p (Holm)",
                      "TOST p (Holm)", "equivalent", "order flips"])
    for f in summary["families"]:
        a, d = f["accuracy"], f["canonical_minus_best_fixed"]
        families.rows.append([f["family"], str(f["cells"]), pct(a["canonical"], False), pct(a["bag-best-fixed"], False),
                              f"{100 * d['mean']:+.0f} ({100 * d['low']:+.0f} to {100 * d['high']:+.0f})",
                              _p(f["mcnemar_vs_best_fixed"]["p_holm_over_families"]),
                              _p(f["tost_vs_best_fixed"]["p_holm_over_families"]),
                              "yes" if f["tost_vs_best_fixed"]["equivalent"] else "not shown",
                              f"{100 * f['order_flip_rate']:.0f}%"])
    orders = Table("bench: exact McNemar, CanonicalMerge vs EACH fixed BagMerge order (Holm over a regime's orders)",
                   ["regime", "orders", "significant (p<0.05, Holm)", "smallest p (Holm)", "best fixed", "worst fixed"])
    for r in summary["regimes"]:
        tests = r["mcnemar_vs_each_fixed_order"].values()
        orders.rows.append([r["regime"], str(len(r["fixed_orders"])),
                            str(sum(1 for t in tests if t["p_holm_over_orders"] < summary["alpha"])),
                            _p(min(t["p_holm_over_orders"] for t in tests)),
                            f"{r['best_fixed']} {100 * r['fixed_orders'][r['best_fixed']]:.0f}",
                            f"{r['worst_fixed']} {100 * r['fixed_orders'][r['worst_fixed']]:.0f}"])
    return [families, orders]


def timing_table(document: dict[str, Any]) -> Table:
    timings = document["timings"]
    total = timings["total_wall_seconds"] or 1.0
    table = Table(f"bench: where the time goes ({document['torch_threads']} torch threads)",
                  ["phase", "wall s", "cpu s", "share of wall"])
    for phase, wall in timings["wall_seconds"].items():
        table.rows.append([phase, f"{wall:.1f}", f"{timings['cpu_seconds'][phase]:.1f}", f"{100 * wall / total:.0f}%"])
    table.rows.append(["total", f"{total:.1f}", f"{timings['total_cpu_seconds']:.1f}", "100%"])
    return table


def tables(document: dict[str, Any]) -> list[Table]:
    summary = document["summary"]
    return [*regime_tables(summary), *test_tables(summary), timing_table(document)]


def json_ready(value: Any) -> Any:
    """NaN (a condition with no measured cell) becomes null: the document is strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def to_json(document: dict[str, Any]) -> str:
    return json.dumps(json_ready(document), indent=1, allow_nan=False, ensure_ascii=False)


def without_timings(document: dict[str, Any]) -> dict[str, Any]:
    """The part of the document a rerun with the same seed must reproduce exactly."""
    return {k: v for k, v in document.items() if k != "timings"}


def write_json(document: dict[str, Any], out: Path) -> Path:
    """``out/bench.json``, written atomically; never into a replica store (``spec.output_files``)."""
    check_output_tree(out, "out")
    try:
        out.mkdir(parents=True, exist_ok=True)
        path = out / JSON_NAME
        write_output(path, (to_json(document) + "\n").encode("utf-8"), "report")
    except OSError as exc:
        raise InputError(f"{out}: cannot write the report ({exc.strerror or exc})") from None
    return path
