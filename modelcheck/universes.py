"""Named fragment universes: small concrete fragments as pure data, chosen to be adversarial.

Universes have L = 2, 3 or 4 layers (with L >= 3 the order statistic's layer ⌊L/2⌋ is not the
last one, so reading the wrong layer shows), head_dim 4 and 1–3 tokens per fragment; some render
at a non-zero base position (so a render that ignores ``base`` shows against the oracle), and
fragments start at various positions.  Each lists at least 5 fragments so that every prefix is an
interesting set (the checker takes prefixes for N = 1..5).  The opt-in ``specials9`` (``OPT_IN``) has 9,
the one universe ``--max-arity 9`` reaches.  Elements are written as floats that the dtype
represents exactly, or as raw bit patterns (``Raw``) where the bits themselves matter (−0, NaN
payloads, subnormals)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from modelcheck.backend import FragmentDesc, Geometry, Universe
from modelcheck.floatbits import encode, is_exact
from spec import InputError

HEAD_DIM = 4
LAYERS = 2
MIDDLE = LAYERS // 2


class Raw(int):
    """An element given as its raw storage bit pattern rather than as a value."""


Element = float | Raw
Vectors = Sequence[Sequence[Sequence[Element]]]  # [H][n][D]


def make_geometry(kv_heads: int, dtype: str = "bfloat16", head_dim: int = HEAD_DIM,
                  layers: int = LAYERS) -> Geometry:
    """The universes' geometry; inv_freq is the textbook 1/10000**(2i/D) in float64."""
    inv_freq = tuple(1.0 / 10000.0 ** (2 * i / head_dim) for i in range(head_dim // 2))
    return Geometry(layers=layers, kv_heads=kv_heads, head_dim=head_dim, dtype=dtype,
                    inv_freq=inv_freq)


def _bits(x: Element, dtype: str) -> int:
    if isinstance(x, Raw):
        return int(x)
    if not is_exact(x, dtype):
        raise ValueError(f"{x!r} is not exact in {dtype}; write it as Raw bits")
    return encode(x, dtype)


def _tensor(vectors: Vectors, dtype: str) -> tuple[tuple[tuple[int, ...], ...], ...]:
    return tuple(tuple(tuple(_bits(x, dtype) for x in vec) for vec in head) for head in vectors)


def _filler(geometry: Geometry, tokens: int, tag: int) -> list[list[list[float]]]:
    """Deterministic exact small values ([H][n][D]) so that ``tag`` alone changes the content."""
    return [[[((tag * 7 + h * 5 + t * 3 + d) % 13 - 6) * 0.25 for d in range(geometry.head_dim)]
             for t in range(tokens)] for h in range(geometry.kv_heads)]


def desc(geometry: Geometry, start: int, middle: Vectors, *, tag: int = 0,
         other_keys: Vectors | None = None, values: Vectors | None = None) -> FragmentDesc:
    """A fragment whose middle-layer keys are ``middle``; the rest is filler unless given."""
    tokens = len(middle[0])
    if len(middle) != geometry.kv_heads or any(len(h) != tokens for h in middle):
        raise ValueError("middle keys must be [H][n][D] with one n")
    keys = []
    for layer in range(geometry.layers):
        if layer == geometry.layers // 2:
            keys.append(_tensor(middle, geometry.dtype))
        else:
            keys.append(_tensor(other_keys or _filler(geometry, tokens, tag + 100 * layer), geometry.dtype))
    vals = [_tensor(values or _filler(geometry, tokens, tag + 50 + 100 * layer), geometry.dtype)
            for layer in range(geometry.layers)]
    return FragmentDesc(start=start, keys=tuple(keys), values=tuple(vals))


def _random_universe() -> Universe:
    g = make_geometry(kv_heads=2, layers=4)
    rng = random.Random(20250501)  # fixed data, not a schedule: the universe is a constant

    def vectors(n: int) -> list[list[list[float]]]:
        return [[[float(rng.randint(-64, 64)) / 16.0 for _ in range(g.head_dim)] for _ in range(n)]
                for _ in range(g.kv_heads)]

    frags = []
    for _ in range(6):
        n = rng.randint(1, 3)
        frags.append(desc(g, rng.randint(0, 40), vectors(n), other_keys=vectors(n), values=vectors(n)))
    return Universe("random", "seeded random finite fragments (distinct m almost surely), L = 4, base 5",
                    g, tuple(frags), base=5)


def _ties_universe() -> Universe:
    g = make_geometry(kv_heads=2, layers=3)
    v, w = [1.0, 2.0, 3.0, 4.0], [0.5, -1.5, 2.5, 0.25]
    frags = (
        desc(g, 0, [[v], [w]]),
        desc(g, 0, [[v[::-1]], [[w[2], w[0], w[3], w[1]]]]),    # permuted coordinates
        desc(g, 5, [[w], [v]]),                                  # swapped heads
        desc(g, 0, [[[-1.0, 2.0, -3.0, 4.0]], [w]], tag=1),      # sign flips
        desc(g, 0, [[v], [w]], tag=2),                           # same keys, other values
        desc(g, 3, [[v, v[::-1]], [w, [-x for x in w]]]),        # two tokens, same norms
        desc(g, 0, [[v], [v]]),                                  # not a tie (last)
    )
    return Universe("ties", "equal m between different contents: permuted coordinates, swapped "
                    "heads, sign flips, other values, more tokens; L = 3", g, frags)


def _specials_universe() -> Universe:
    g = make_geometry(kv_heads=1)
    nan, neg_snan, zero, neg_zero = Raw(0x7FC0), Raw(0xFF81), Raw(0x0000), Raw(0x8000)
    pinf, ninf = Raw(0x7F80), Raw(0xFF80)
    frags = (
        desc(g, 0, [[[nan, 1.0, 2.0, 3.0]]]),                  # m = NaN
        desc(g, 0, [[[1.0, 1.0, 1.0, 1.0]]]),                  # m = 2
        desc(g, 1, [[[neg_zero] * 4]]),                        # m = +0 from -0 keys
        desc(g, 1, [[[zero] * 4]]),                            # m = +0: tie with -0 keys
        desc(g, 2, [[[pinf, 1.0, 0.0, 0.0]]]),                 # m = +inf
        desc(g, 0, [[[neg_snan, 0.0, 0.0, 0.0]]], tag=3),      # another NaN payload: NaN tie
        desc(g, 2, [[[ninf, 0.0, 0.0, 0.0]]]),                 # m = +inf from -inf: inf tie
        desc(g, 0, [[[1.0, 1.0, 1.0, 1.0]]], other_keys=[[[nan, neg_zero, pinf, 1.0]]],
             values=[[[ninf, neg_snan, zero, 2.0]]]),          # specials outside the key layer
    )
    return Universe("specials", "±0, ±inf and NaN payloads in keys (NaN and inf ties included)",
                    g, frags)


def _specials9_universe() -> Universe:
    """``specials`` with a subnormal key third: its m, 2**-133, is the smallest above the ±0 tie,
    so a key that loses the subnormal ties it with them, and N = 9 exists (opt-in, ``OPT_IN``)."""
    base = _specials_universe()
    tiny = desc(base.geometry, 1, [[[Raw(0x0001), 0.0, 0.0, 0.0]]], tag=4,
                values=[[[Raw(0x8001), Raw(0x7FA1), 1.0, 0.0]]])   # a subnormal and a NaN payload in values
    frags = base.fragments[:2] + (tiny,) + base.fragments[2:]
    return Universe("specials9", "specials and a subnormal key (m = 2**-133 beside the ±0 tie): 9 fragments, "
                    "opt-in, for --max-arity 9", base.geometry, frags)


def _subnormals_universe() -> Universe:
    g = make_geometry(kv_heads=1)
    tiny, ntiny, big_sub, min_normal = Raw(0x0001), Raw(0x8001), Raw(0x007F), Raw(0x0080)
    frags = (
        desc(g, 0, [[[tiny, 0.0, 0.0, 0.0]]]),                 # m = 2**-133
        desc(g, 0, [[[0.0, 0.0, ntiny, 0.0]]]),                # same m, other content
        desc(g, 1, [[[big_sub, tiny, Raw(0x8002), 0.0]]]),
        desc(g, 0, [[[min_normal, 0.0, 0.0, 0.0]]]),
        desc(g, 2, [[[0.0, 0.0, 0.0, 0.0]]]),                  # m = 0
        desc(g, 0, [[[tiny, 0.0, 0.0, 0.0], [0.0, tiny, 0.0, 0.0]]]),  # two tokens: m tie again
    )
    return Universe("subnormals", "bfloat16 subnormal keys, ties among them, and the smallest normal",
                    g, frags)


def _shifted_universe() -> Universe:
    g = make_geometry(kv_heads=2, layers=4)
    keys = [[[0.75, -1.25, 2.0, 0.5], [1.5, 0.25, -0.5, 3.0]], [[-2.0, 1.0, 0.125, 0.5], [0.0, 1.75, -1.0, 2.5]]]
    frags = tuple(desc(g, start, keys) for start in (0, 3, 1, 17, 100))
    frags += (desc(g, 0, keys, tag=9),)
    return Universe("shifted", "the same bytes at different start positions (equal m, distinct ids); "
                    "L = 4, base 9", g, frags, base=9)


def _duplicates_universe() -> Universe:
    g = make_geometry(kv_heads=1, layers=3)
    a = desc(g, 0, [[[1.0, 0.5, 0.25, 2.0]]])
    b = desc(g, 2, [[[0.5, 0.5, -1.0, 1.0], [2.0, 0.0, 0.0, 0.0]]])
    c = desc(g, 0, [[[3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.25], [1.0, 1.0, 1.0, 1.0]]])
    d = desc(g, 4, [[[-0.5, 0.5, 0.5, -0.5]]])
    return Universe("duplicates", "exact duplicates listed more than once (a, b, a, c, b, d); L = 3",
                    g, (a, b, a, c, b, d))


def _float32_universe() -> Universe:
    g = make_geometry(kv_heads=1, dtype="float32", layers=4)
    frags = (
        desc(g, 0, [[[1.5, -2.25, 0.0, 3.0]]]),
        desc(g, 0, [[[3.0, 0.0, -2.25, 1.5]]]),                # permuted: tie
        desc(g, 1, [[[Raw(0x00000001), 0.0, 0.0, 0.0]]]),      # float32 subnormal
        desc(g, 1, [[[Raw(0x80000000)] * 4]]),                 # -0
        desc(g, 2, [[[Raw(0x7FA00001), 0.0, 0.0, 0.0]]]),      # NaN with a payload
        desc(g, 0, [[[1.5 * 2.0**127, 1.5 * 2.0**127, 0.0, 0.0]]]),  # near the float32 maximum
    )
    return Universe("float32", "float32 storage: ties, a subnormal, -0, a NaN payload, huge keys; "
                    "L = 4, base 2", g, frags, base=2)


UNIVERSES: dict[str, Universe] = {
    u.name: u
    for u in (_random_universe(), _ties_universe(), _specials_universe(), _subnormals_universe(),
              _shifted_universe(), _duplicates_universe(), _float32_universe())
}
# selected by name only: their top arity is a cluster-sized job (N = 9: 535,610,880 orderings at
# R = 1), and in the default selection they would also lengthen every N <= 8 run
OPT_IN: dict[str, Universe] = {u.name: u for u in (_specials9_universe(),)}
KNOWN = ", ".join([*UNIVERSES, *(f"{name} (opt-in)" for name in OPT_IN)])


def universe(name: str) -> Universe:
    found = UNIVERSES.get(name) or OPT_IN.get(name)
    if found is None:
        raise InputError(f"unknown universe {name!r}; known: {KNOWN}")
    return found


def select(names: Iterable[str] | None) -> list[Universe]:
    """The named universes in the order given (for ``None``, every one of ``UNIVERSES`` in
    registry order; the ``OPT_IN`` ones only when named)."""
    if names is None:
        return list(UNIVERSES.values())
    chosen = [universe(n) for n in names]
    if not chosen:
        raise InputError(f"no universe selected; known: {KNOWN}")
    seen: dict[str, Universe] = {}
    for u in chosen:
        seen.setdefault(u.name, u)
    return list(seen.values())
