"""The benchmark's three figures (matplotlib, Agg backend: no display needed):

- ``accuracy_by_family.png``: accuracy by condition per family, one panel per latent budget, 95 %
  paired bootstrap intervals;
- ``order_flip_rate.png``: share of problems whose BagMerge answer changes with the input order,
  by k and latent budget;
- ``order_spread.png``: every fixed BagMerge order's accuracy per regime against CanonicalMerge."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

from spec import InputError
from spec.output_files import check_output_tree, write_output

SHOWN = (("canonical", "CanonicalMerge"), ("bag-best-fixed", "BagMerge best fixed"),
         ("bag-worst-fixed", "BagMerge worst fixed"), ("full-prompt", "full prompt"), ("packllm", "PackLLM"),
         ("no-context", "no context"), ("zeroed", "zeroed"), ("deranged", "deranged"),
         ("moment-matched", "moment-matched"))
NAMES = ("accuracy_by_family.png", "order_flip_rate.png", "order_spread.png")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _value(interval: dict[str, Any] | None) -> tuple[float, float, float]:
    if not interval or not interval.get("n") or interval.get("mean") is None:
        return float("nan"), 0.0, 0.0
    mean = interval["mean"]
    return mean, max(mean - interval["low"], 0.0), max(interval["high"] - mean, 0.0)


def accuracy_by_family(plt: Any, summary: dict[str, Any], title: str, path: Path) -> None:
    budgets = sorted({r["latent_steps"] for r in summary["by_family_and_budget"]})
    families = list(dict.fromkeys(r["family"] for r in summary["by_family_and_budget"]))
    fig, axes = plt.subplots(len(budgets), 1, figsize=(max(8, 2.2 * len(families)), 3.4 * len(budgets)),
                             squeeze=False)
    width = 0.8 / len(SHOWN)
    colors = plt.get_cmap("tab10")
    for ax, budget in zip(axes[:, 0], budgets):
        cells = {r["family"]: r for r in summary["by_family_and_budget"] if r["latent_steps"] == budget}
        for j, (condition, label) in enumerate(SHOWN):
            xs, ys, lo, hi = [], [], [], []
            for i, family in enumerate(families):
                mean, down, up = _value(cells[family]["accuracy"].get(condition))
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(mean)
                lo.append(down)
                hi.append(up)
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=1.5, label=label, color=colors(j), error_kw={"lw": 0.7})
        ax.set_xticks(range(len(families)), families)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("accuracy")
        ax.set_title(f"latent steps = {budget}", fontsize=10)
    axes[0, 0].legend(ncol=5, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 1.45))
    fig.suptitle(title, fontsize=10, y=1.0)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def order_flip_rate(plt: Any, summary: dict[str, Any], title: str, path: Path) -> None:
    regimes = summary["regimes"]
    ks = sorted({r["k"] for r in regimes})
    budgets = sorted({r["latent_steps"] for r in regimes})
    fig, ax = plt.subplots(figsize=(6, 3.4))
    width = 0.8 / len(budgets)
    for j, budget in enumerate(budgets):
        for i, k in enumerate(ks):
            match = [r for r in regimes if r["k"] == k and r["latent_steps"] == budget]
            if not match:
                continue
            rate = match[0]["order_flip_rate"]
            x = i - 0.4 + width * (j + 0.5)
            ax.bar(x, rate, width, color=plt.get_cmap("tab10")(j), label=f"L = {budget}" if i == 0 else None)
            ax.text(x, rate + 0.02, f"n={match[0]['cells']}", ha="center", fontsize=7)
    ax.set_xticks(range(len(ks)), [f"k = {k} ({math.factorial(k)} orders)" for k in ks])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of problems whose\nBagMerge answer flips")
    _finish(plt, fig, ax, title, path, legend_size=8)


def order_spread(plt: Any, summary: dict[str, Any], title: str, path: Path) -> None:
    regimes = summary["regimes"]
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(regimes)), 3.6))
    for i, r in enumerate(regimes):
        values = list(r["fixed_orders"].values())
        ax.scatter([i + (j - len(values) / 2) * 0.3 / max(len(values), 1) for j in range(len(values))], values,
                   s=10, color="grey", alpha=0.7, label="BagMerge, one fixed order" if i == 0 else None)
        canonical = r["accuracy"]["canonical"]
        mean, down, up = _value(canonical)
        ax.errorbar([i + 0.25], [mean], yerr=[[down], [up]], fmt="D", color="tab:red", ms=5, capsize=2,
                    label="CanonicalMerge (95% CI)" if i == 0 else None)
        ceiling = r["accuracy"]["full-prompt"]["mean"]
        if ceiling is not None:
            ax.plot([i - 0.3, i + 0.35], [ceiling] * 2, color="tab:green", lw=1,
                    label="full prompt (ceiling)" if i == 0 else None)
    ax.set_xticks(range(len(regimes)), [r["regime"] for r in regimes], fontsize=8)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("accuracy")
    _finish(plt, fig, ax, title, path, legend_size=7)


def _finish(plt: Any, fig: Any, ax: Any, title: str, path: Path, legend_size: int) -> None:
    ax.legend(fontsize=legend_size)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=110)
    plt.close(fig)
    write_output(path, image.getvalue(), "figure")  # atomic, never over a FIFO nor into a store


def write_figures(document: dict[str, Any], out: Path) -> list[Path]:
    """The three PNGs under ``out``; ``InputError`` when matplotlib is missing or ``out`` unwritable."""
    try:
        plt = _pyplot()
    except ImportError:
        raise InputError("figures need matplotlib: pip install 'canonmerge[bench]' (or --no-figures)") from None
    model = document["model"]["geometry"]
    cells = document["summary"]["overall"]["cells"]
    title = f"{model}, {cells} problem-budget cells"
    paths = [out / name for name in NAMES]
    check_output_tree(out, "out")
    try:
        out.mkdir(parents=True, exist_ok=True)
        accuracy_by_family(plt, document["summary"], f"Accuracy by condition and family ({title})", paths[0])
        order_flip_rate(plt, document["summary"], f"BagMerge order flips ({title})", paths[1])
        order_spread(plt, document["summary"], f"Fixed BagMerge orders vs CanonicalMerge ({title})", paths[2])
    except OSError as exc:
        raise InputError(f"{out}: cannot write the figures ({exc.strerror or exc})") from None
    return paths
