"""Which problems a run uses: the committed split, a JSONL file, or a HotpotQA file, narrowed by
family, ``--quick`` and ``--limit``."""

from __future__ import annotations

from realstate.bench.generator import DATA
from realstate.bench.hotpotqa import read_hotpotqa
from realstate.bench.problems import Problem, read_problems
from realstate.bench.settings import QUICK_PROBLEMS_PER_FAMILY, BenchSettings
from spec import InputError

QUICK_K = (2, 3, 4, 2, 3)  # --quick: one problem per family, k cycling so that k = 4 (24 orders) is run once
DONORS_PER_FAMILY = 2  # unselected problems whose fragments a small selection may borrow as deranged controls


def source_of(settings: BenchSettings) -> str:
    if settings.hotpotqa is not None:
        return settings.hotpotqa
    if settings.problems is not None:
        return settings.problems
    return str(DATA / f"{settings.split}.jsonl")


def load_problems(settings: BenchSettings) -> tuple[list[Problem], list[Problem]]:
    """The problems to decode, and donor-only problems (prefilled, never decoded) for families
    with too few selected problems to derange among themselves (``--quick``, ``--limit``)."""
    if settings.hotpotqa is not None:
        problems = read_hotpotqa(settings.hotpotqa, settings.hotpotqa_agents, settings.hotpotqa_distractors)
    else:
        problems = read_problems(source_of(settings))
    chosen = select(problems, settings)
    picked = {p.id for p in chosen}
    donors: list[Problem] = []
    for family in dict.fromkeys(p.family for p in chosen):
        if sum(1 for p in chosen if p.family == family) <= DONORS_PER_FAMILY:
            donors += [p for p in problems if p.family == family and p.id not in picked][:DONORS_PER_FAMILY]
    return chosen, donors


def select(problems: list[Problem], settings: BenchSettings) -> list[Problem]:
    families = list(dict.fromkeys(p.family for p in problems))
    if settings.families:
        unknown = [f for f in settings.families if f not in families]
        if unknown:
            raise InputError(f"families {', '.join(unknown)} are not in {source_of(settings)} "
                             f"(it has {', '.join(families)})")
        families = [f for f in families if f in settings.families]
    chosen: list[Problem] = []
    for index, family in enumerate(families):
        members = [p for p in problems if p.family == family]
        if settings.quick:
            want = QUICK_K[index % len(QUICK_K)]
            preferred = [p for p in members if p.k == want] or members
            members = preferred[:QUICK_PROBLEMS_PER_FAMILY]
        if settings.limit is not None:
            members = spread_over_k(members)[:settings.limit]
        chosen += members
    return chosen


def spread_over_k(members: list[Problem]) -> list[Problem]:
    """The family's problems round-robin over k (first of each k, then the second of each …), so
    that ``--limit N`` keeps every k the family has as soon as N reaches the number of k values."""
    by_k: dict[int, list[Problem]] = {}
    for p in members:
        by_k.setdefault(p.k, []).append(p)
    rounds = max((len(v) for v in by_k.values()), default=0)
    return [by_k[k][i] for i in range(rounds) for k in sorted(by_k) if i < len(by_k[k])]
