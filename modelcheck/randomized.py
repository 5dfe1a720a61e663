"""Beyond N ≤ 5: C3 on random sets of up to 64 fragments, driven by Hypothesis.

Each example draws N fragments of one geometry (random bit patterns, special values, and tie
variants that permute an earlier fragment's key coordinates), then a random permutation
(``st.permutations``), a random merge tree and a random re-delivery pattern; all must render like
the index-order fold.  Hypothesis runs a fixed example budget, derandomized, so a run is
reproducible.  Hypothesis's own shrinker is off — on 64-fragment examples it takes minutes — and
a violation is minimized like the exhaustive ones instead (fragments and re-delivered copies are
removed while it persists), then saved as a trace carrying its fragments inline."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

from modelcheck import properties as P
from modelcheck import schedules as en
from modelcheck.backend import DTYPE_BITS, Backend, FragmentDesc, Geometry, Universe
from modelcheck.checks import Tallies, UniverseCheck
from modelcheck.program import evaluate
from modelcheck.schedules import Expr, Join, Leaf
from spec import Progress, no_progress

SPECIALS: dict[str, tuple[int, ...]] = {
    "bfloat16": (0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x0001, 0x8001, 0x3F80, 0xBF80),
    "float16": (0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x0001, 0x8001, 0x3C00, 0xBC00),
    "float32": (0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
                0x00000001, 0x80000001, 0x3F800000, 0xBF800000),
}


@dataclass
class RandomizedResult:
    examples: int = 0
    orderings: int = 0
    largest: int = 0
    failing_n: int = 0
    failing_check: str = ""
    seconds: float = 0.0
    trace: dict[str, Any] | None = None


class _Found(Exception):
    def __init__(self, check: str, descs: list[FragmentDesc], ref: Expr, bad: Expr) -> None:
        super().__init__(check)
        self.check, self.descs, self.ref, self.bad = check, descs, ref, bad


def _stream(seed: int, count: int, width: int) -> list[int]:
    """``count`` bit patterns expanded from ``seed`` (filler for the layers m does not read)."""
    out: list[int] = []
    block = 0
    while len(out) < count:
        digest = hashlib.sha256(f"{seed}:{block}".encode()).digest()
        step = width // 8
        out += [int.from_bytes(digest[i:i + step], "little") for i in range(0, len(digest), step)]
        block += 1
    return out[:count]


def _shape(flat: list[int], g: Geometry, tokens: int) -> tuple:
    it = iter(flat)
    return tuple(tuple(tuple(next(it) for _ in range(g.head_dim)) for _ in range(tokens))
                 for _ in range(g.kv_heads))


def _desc(g: Geometry, start: int, tokens: int, middle: list[int], seed: int) -> FragmentDesc:
    width = DTYPE_BITS[g.dtype]
    per_layer = g.kv_heads * tokens * g.head_dim
    filler = _stream(seed, per_layer * (2 * g.layers - 1), width)
    keys, vals, used = [], [], 0
    for layer in range(g.layers):
        if layer == g.layers // 2:
            keys.append(_shape(middle, g, tokens))
        else:
            keys.append(_shape(filler[used:used + per_layer], g, tokens))
            used += per_layer
    for _ in range(g.layers):
        vals.append(_shape(filler[used:used + per_layer], g, tokens))
        used += per_layer
    return FragmentDesc(start, tuple(keys), tuple(vals))


def run_randomized(backend: Backend, geometry: Geometry, examples: int, *, max_n: int = 64,
                   backend_name: str, mutant: str | None, progress: Progress = no_progress) -> RandomizedResult:
    """Run ``examples`` Hypothesis examples of C3 with N up to ``max_n``."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import strategies as st

    result = RandomizedResult()
    started = time.perf_counter()
    width = DTYPE_BITS[geometry.dtype]
    element = st.one_of(st.integers(0, (1 << width) - 1), st.sampled_from(SPECIALS[geometry.dtype]))

    @st.composite
    def fragment_lists(draw: Any) -> list[FragmentDesc]:
        n = draw(st.integers(1, max_n), label="N")
        descs: list[FragmentDesc] = []
        for _ in range(n):
            start, seed = draw(st.integers(0, 255)), draw(st.integers(0, 2**32 - 1))
            if descs and draw(st.integers(0, 3)) == 0:  # a tie: permute an earlier key's coordinates
                base = descs[draw(st.integers(0, len(descs) - 1))]
                perm = draw(st.permutations(range(geometry.head_dim)))
                mid = base.keys[geometry.layers // 2]
                flat = [vec[p] for head in mid for vec in head for p in perm]
                descs.append(_desc(geometry, start, base.tokens, flat, seed))
            else:
                tokens = draw(st.integers(1, 3))
                flat = draw(st.lists(element, min_size=geometry.kv_heads * tokens * geometry.head_dim,
                                     max_size=geometry.kv_heads * tokens * geometry.head_dim))
                descs.append(_desc(geometry, start, tokens, flat, seed))
        return descs

    def random_tree(draw: Any, items: list[Leaf]) -> Expr:
        if len(items) == 1:
            return items[0]
        split = draw(st.integers(1, len(items) - 1))
        return Join(random_tree(draw, items[:split]), random_tree(draw, items[split:]))

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
              report_multiple_bugs=False, phases=(Phase.explicit, Phase.generate))
    @given(descs=fragment_lists(), data=st.data())
    def check(descs: list[FragmentDesc], data: Any) -> None:
        n = len(descs)
        objects = {i: backend.build(geometry, d) for i, d in enumerate(descs)}
        ref_expr = en.fold([Leaf(i) for i in range(n)])
        ref = backend.render_digest(evaluate(backend, ref_expr, objects))
        perm = data.draw(st.permutations(range(n)), label="arrival order")
        tree_order = data.draw(st.permutations(range(n)), label="tree leaf order")
        tree = random_tree(data.draw, [Leaf(i) for i in tree_order])
        seq = list(data.draw(st.permutations(range(n)), label="delivery order"))
        for again in data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4), label="re-delivered"):
            seq.insert(data.draw(st.integers(0, len(seq)), label="at"), again)
        for check_name, expr in (("randomized permutations", en.fold([Leaf(i) for i in perm])),
                                 ("randomized merge trees", tree),
                                 ("randomized re-deliveries", en.sequence(seq))):
            if backend.render_digest(evaluate(backend, expr, objects)) != ref:
                raise _Found(check_name, descs, ref_expr, expr)
        result.examples += 1
        result.orderings += 3
        result.largest = max(result.largest, n)
        progress("randomized C3 (Hypothesis)", result.examples, examples)

    try:
        check()
    except _Found as found:
        result.failing_n = len(found.descs)
        u = Universe("randomized", "fragments drawn by Hypothesis", geometry, tuple(found.descs))
        uc = UniverseCheck(backend, u, Tallies(), backend_name=backend_name, mutant=mutant, selected=P.ALL)
        result.failing_check = found.check
        result.trace = uc.c3_trace(P.RANDOMIZED, found.ref, found.bad)
    result.seconds = time.perf_counter() - started
    return result
