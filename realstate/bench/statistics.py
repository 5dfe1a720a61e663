"""The statistics of the benchmark, each a small pure function (numpy and scipy only).

- ``paired_bootstrap``: percentile intervals of mean accuracy for several conditions from the SAME
  resampled problems (paired), so intervals of differences are honest;
- ``mcnemar_exact``: two-sided exact McNemar (binomial on the discordant pairs);
- ``tost_paired``: two one-sided paired t-tests of equivalence within ``±margin``;
- ``holm``: Holm's step-down adjustment of a family of p-values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int

    def to_json(self) -> dict[str, float | int]:
        return {"mean": round(self.mean, 6), "low": round(self.low, 6), "high": round(self.high, 6), "n": self.n}


def paired_bootstrap(values: np.ndarray, resamples: int, seed: int, level: float = 0.95) -> list[Interval]:
    """``values [n, c]`` (NaN where a condition has no value for a problem) -> one interval per column.

    Every resample draws one set of problem indices and applies it to every column."""
    n, columns = values.shape
    if n == 0:
        return [Interval(float("nan"), float("nan"), float("nan"), 0) for _ in range(columns)]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(resamples, n))
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    sums = filled[picks].sum(axis=1)  # [resamples, c]
    counts = present[picks].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    alpha = (1.0 - level) / 2.0
    out = []
    for c in range(columns):
        column = means[:, c][~np.isnan(means[:, c])]
        observed = values[present[:, c], c]
        if observed.size == 0:
            out.append(Interval(float("nan"), float("nan"), float("nan"), 0))
            continue
        low, high = np.quantile(column, [alpha, 1.0 - alpha]) if column.size else (np.nan, np.nan)
        out.append(Interval(float(observed.mean()), float(low), float(high), int(observed.size)))
    return out


@dataclass(frozen=True)
class McNemar:
    only_first: int  # first right, second wrong
    only_second: int
    p: float

    def to_json(self) -> dict[str, float | int]:
        return {"only_first": self.only_first, "only_second": self.only_second, "p": round(self.p, 6)}


def mcnemar_exact(first: Sequence[bool], second: Sequence[bool]) -> McNemar:
    a = np.asarray(first, dtype=bool)
    b = np.asarray(second, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"paired samples of different sizes: {a.shape} and {b.shape}")
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    discordant = only_a + only_b
    p = 1.0 if discordant == 0 else float(stats.binomtest(min(only_a, only_b), discordant, 0.5).pvalue)
    return McNemar(only_a, only_b, min(p, 1.0))


@dataclass(frozen=True)
class Tost:
    mean_difference: float
    margin: float
    p_lower: float  # H0: difference <= -margin
    p_upper: float  # H0: difference >= +margin
    n: int

    @property
    def p(self) -> float:
        return max(self.p_lower, self.p_upper)

    def to_json(self) -> dict[str, float | int]:
        return {"mean_difference": round(self.mean_difference, 6), "margin": self.margin,
                "p_lower": round(self.p_lower, 6), "p_upper": round(self.p_upper, 6), "p": round(self.p, 6),
                "n": self.n}


def tost_paired(differences: Sequence[float], margin: float) -> Tost:
    """Equivalence of a paired mean difference to 0 within ``±margin`` (two one-sided t-tests).

    The standard deviation is floored at that of a single discordant pair (1/sqrt(n)): agreement on
    every one of a handful of cells is not evidence of equivalence, only many cells are."""
    d = np.asarray(differences, dtype=float)
    n = int(d.size)
    if n == 0:
        return Tost(float("nan"), margin, 1.0, 1.0, 0)
    mean = float(d.mean())
    if n < 2:
        return Tost(mean, margin, 1.0, 1.0, n)
    sd = max(float(d.std(ddof=1)), 1.0 / np.sqrt(n))
    se = sd / np.sqrt(n)
    p_lower = float(stats.t.sf((mean + margin) / se, n - 1))
    p_upper = float(stats.t.cdf((mean - margin) / se, n - 1))
    return Tost(mean, margin, p_lower, p_upper, n)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return [float(x) for x in adjusted]
