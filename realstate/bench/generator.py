"""The seeded generator of partitioned-reasoning problems (five families), and the committed set.

Each agent holds two short sentences; the facts the answer needs are spread so that no single
agent can answer alone (one holder for retrieval, two for bridge, comparison and arithmetic,
every agent holding a member for aggregation) and the rest are distractors of the same shape.
``python -m realstate.bench.generator`` rewrites ``data/eval.jsonl`` and ``data/dev.jsonl``; a
test checks the committed files are exactly what the seeds give, so nobody edits them by hand."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from realstate.bench.problems import Problem, write_problems

DATA = Path(__file__).resolve().parent / "data"
FAMILIES = ("retrieval", "bridge", "comparison", "aggregation", "arithmetic")
FACTS_PER_AGENT = 2
EVAL_SEED, DEV_SEED = 2607, 1308
# problems per family and k: the eval split is 5 x 22 = 110 problems (k = 4 costs 24 orders), the dev split 5 x 3 = 15
EVAL_PER_K = {2: 10, 3: 8, 4: 4}
DEV_PER_K = {2: 1, 3: 1, 4: 1}

NAMES = ("Mira", "Tomas", "Ada", "Leon", "Nina", "Omar", "Rosa", "Igor", "Lena", "Hugo", "Vera", "Emil",
         "Sara", "Ivan", "Lucy", "Marco", "Anna", "Pablo", "Greta", "Felix", "Julia", "Oscar", "Clara", "Diego")
CITIES = ("Oslo", "Lima", "Cairo", "Paris", "Tokyo", "Berlin", "Madrid", "Rome", "Dublin", "Vienna", "Prague",
          "Lisbon", "Athens", "Moscow", "London", "Sydney")
LABS = ("Falcon Lab", "Cedar Lab", "Orbit Lab", "Maple Lab", "Harbor Lab", "Summit Lab", "Willow Lab", "Comet Lab")
CLUBS = ("red", "blue")
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")


@dataclass
class Draft:
    """Facts before they are dealt to agents: ``pinned[i]`` is a set of facts that must land on
    pairwise different agents (a two-hop pair, a compared pair)."""

    facts: list[str]
    pinned: list[list[int]]
    question: str
    answer: str
    cue: str  # how the final agent's reply starts, so that the answer is its first word
    aliases: tuple[str, ...] = ()
    needed: tuple[int, ...] = ()  # indices of the facts the answer needs


def _retrieval(rng: random.Random, k: int) -> Draft:
    n = FACTS_PER_AGENT * k
    names, cities = rng.sample(NAMES, n), rng.sample(CITIES, n)
    target = rng.randrange(n)
    return Draft([f"{a} lives in {c}." for a, c in zip(names, cities)], [], f"Where does {names[target]} live?",
                 cities[target], f"{names[target]} lives in", needed=(target,))


def _bridge(rng: random.Random, k: int) -> Draft:
    pairs = FACTS_PER_AGENT * k // 2  # each pair: a person's lab, and that lab's city
    names, labs, cities = rng.sample(NAMES, pairs), rng.sample(LABS, pairs), rng.sample(CITIES, pairs)
    facts: list[str] = []
    for name, lab, city in zip(names, labs, cities):
        facts += [f"{name} works at {lab}.", f"{lab} is in {city}."]
    return Draft(facts, [[0, 1]], f"In which city does {names[0]} work?", cities[0],
                 f"{names[0]} works in", needed=(0, 1))


def _comparison(rng: random.Random, k: int) -> Draft:
    n = FACTS_PER_AGENT * k
    names = rng.sample(NAMES, n)
    ages = rng.sample(range(21, 80, 3), n)  # distinct, at least 3 apart
    asked = [0, 1] if rng.random() < 0.5 else [1, 0]
    older = names[0] if ages[0] > ages[1] else names[1]
    return Draft([f"{a} is {y} years old." for a, y in zip(names, ages)], [[0, 1]],
                 f"Who is older, {names[asked[0]]} or {names[asked[1]]}?", older, "The older one is",
                 needed=(0, 1))


def _aggregation(rng: random.Random, k: int) -> Draft:
    n = FACTS_PER_AGENT * k
    names = rng.sample(NAMES, n)
    red = rng.randint(2, n - 1)  # at least two members, so they can sit with different agents
    clubs = ["red"] * red + ["blue"] * (n - red)
    members = list(range(red))
    # spread the red members over as many agents as there are members (up to k)
    pinned = [members[:k]]
    return Draft([f"{a} is in the {c} club." for a, c in zip(names, clubs)], pinned,
                 "How many people are in the red club?", str(red), "The number of people in the red club is",
                 aliases=(NUMBER_WORDS[red],),
                 needed=tuple(members))


def _arithmetic(rng: random.Random, k: int) -> Draft:
    n = FACTS_PER_AGENT * k
    names = rng.sample(NAMES, n)
    counts = [rng.randint(2, 9) for _ in range(n)]
    total = counts[0] + counts[1]
    return Draft([f"{a} has {c} apples." for a, c in zip(names, counts)], [[0, 1]],
                 f"How many apples do {names[0]} and {names[1]} have together?", str(total),
                 "Together they have", aliases=(NUMBER_WORDS[total],), needed=(0, 1))


DRAFTERS: dict[str, Callable[[random.Random, int], Draft]] = {
    "retrieval": _retrieval, "bridge": _bridge, "comparison": _comparison, "aggregation": _aggregation,
    "arithmetic": _arithmetic,
}


def deal(rng: random.Random, draft: Draft, k: int) -> list[list[int]]:
    """Fact indices per agent, FACTS_PER_AGENT each, every pinned group on distinct agents."""
    while True:
        order = list(range(len(draft.facts)))
        rng.shuffle(order)
        agents = [sorted(order[i * FACTS_PER_AGENT:(i + 1) * FACTS_PER_AGENT]) for i in range(k)]
        owner = {fact: i for i, held in enumerate(agents) for fact in held}
        if all(len({owner[f] for f in group}) == len(group) for group in draft.pinned):
            return agents


def make_problem(rng: random.Random, family: str, k: int, index: int, split: str) -> Problem:
    draft = DRAFTERS[family](rng, k)
    dealt = deal(rng, draft, k)
    for held in dealt:
        rng.shuffle(held)  # the sentence order inside a document carries no hint either
    holders = tuple(sorted({i for i, held in enumerate(dealt) for f in held if f in draft.needed}))
    agents = tuple(tuple(draft.facts[f] for f in held) for held in dealt)
    return Problem(f"{split}-{family}-k{k}-{index:02d}", family, agents, draft.question, draft.answer, holders,
                   draft.aliases, split, cue=draft.cue)


def generate(seed: int, per_k: dict[int, int], split: str) -> list[Problem]:
    """Every family, every k, ``per_k[k]`` problems each, from one ``random.Random(seed)``."""
    rng = random.Random(seed)
    return [make_problem(rng, family, k, i, split)
            for family in FAMILIES for k, count in per_k.items() for i in range(count)]


def eval_problems() -> list[Problem]:
    return generate(EVAL_SEED, EVAL_PER_K, "eval")


def dev_problems() -> list[Problem]:
    return generate(DEV_SEED, DEV_PER_K, "dev")


def main() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    write_problems(DATA / "eval.jsonl", eval_problems())
    write_problems(DATA / "dev.jsonl", dev_problems())
    print(f"wrote {DATA / 'eval.jsonl'} and {DATA / 'dev.jsonl'}")


if __name__ == "__main__":
    main()
