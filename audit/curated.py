"""The curated catalog: realistic bugs, as exact source patches, with the product command that
must catch each one.

Each entry was either found by an outside review to slip through the product's commands, or
survived mutation testing, or is a bug of the kind the code is most exposed to (RoPE
conventions, float precision, hashing layout, dedup).  Every entry carries

- ``patches``: what to plant (``audit.Patch``: exact text, must match exactly once);
- ``quick``: a scoped product command (``--only``, small universes; for realstate the whole replay
  on two agents, whose checks cost less than its start-up) that catches it in
  seconds — ``tests/test_planted_in_source.py`` and ``tests/test_proofs_planted.py`` run it;
- ``caught_by``: the (claim, check) rows that must FAIL on that command;
- ``in_default_tests``: whether the default test run plants it (the rest run with ``-m audit``
  and in every ``canonmerge audit``, which plants each entry against the full parts).  The default
  set is kept small for the suite's time: where several bugs of one kind fail the same row of the
  same command, one of them runs by default and the others with ``-m audit``.

One entry is equivalent by design (an unstable sort under a key that is a strict total order
on distinct fragments) and is listed in ``audit.equivalent``; it has no quick command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from audit.mutants import Mutant, make_id
from audit.scratch import Patch, PatchError, project_root

RENDER, ENGINE, FRAGMENT = "realstate/kernel/render.py", "realstate/kernel/engine.py", "realstate/kernel/fragment.py"
ROPE, ORDER_VALUE, FINGERPRINT = "realstate/kernel/rope.py", "realstate/kernel/order_value.py", "realstate/kernel/fingerprint.py"
SPEC_ORDERING, SPEC_SET = "spec/ordering.py", "spec/fragment_set.py"
FUSED = "realstate/kernel/fused.py"
UNIONS, SHARDS, CHECKS = "modelcheck/unions.py", "modelcheck/shards.py", "modelcheck/order_checks.py"
COMMON_PREFIX = "    k = 0\n    for x, y in zip(a, b):\n        if x != y:\n            break\n        k += 1\n    return k"

SORTED_LAYOUT = "        layouts.append(layout(engine.order(members), base))"
DELTA = "p.offset - f.start if reencode else 0"
ORDER_KEY_SPEC = 'return total_order_bits(m).to_bytes(8, "big") + require_content_id(content_id)'
ORDER_KEY_PROOFS = "    return z3.Concat(total_order_bits(m), content_id)\n"
ROLL = "    swapped = turned.roll(dest.shape[-1] // 2, -1)  # [k2, k1]\n"
SPLIT_X = "x1, x2 = x.split_with_sizes([half, half], dim=-1)"
SPLIT_Q = "q1, q2 = q.split_with_sizes([half, half], dim=-1)"
ADD_SMALL = "    turned.add_(swapped)  # [k1·c − k2·s, k2·c + k1·s]\n"
SUB_LARGE = "            x1.sub_(q2)  # k1·c − k2·s\n"
VALUES_APPEND = "        values.append(f.values)\n"
PREPARED = "    prepared = [_prepare(p, base, reencode) for p in layouts]"
ORDER_KEY_CALL = "order_key(self.order_value, self.content_id)"
ALTERNATING_BASE = "    base += next(_CALLS) % 2  # every render of one call gets the same base\n" + PREPARED
SINGLE_PREPARED = "    p = _prepare(placements, base, reencode)"
ALTERNATING_SINGLE = "    base += next(_CALLS) % 2  # a single render too\n" + SINGLE_PREPARED
PLACEMENT = "class Placement(NamedTuple):"
COUNTER = "_CALLS = __import__('itertools').count()\n\n\n" + PLACEMENT

def scoped_check(*flags: str) -> tuple[str, ...]:
    """A scoped ``check`` command, its shards run in the command's own process (--workers 1): a
    pool's workers would each import torch afresh, which costs more than these few shards."""
    return ("check", *flags, "--workers", "1")


CHECK_C3_RANDOM = scoped_check("--only", "C3", "--no-gossip", "--universe", "random", "--max-arity", "4")
CHECK_C3_TIES = scoped_check("--only", "C3", "--no-gossip", "--universe", "ties", "--max-arity", "3")
CHECK_ORACLE = scoped_check("--only", "render equals the independent oracle", "--no-gossip", "--max-arity", "2")
# the float32 universe's NaN key fragment is its fifth: prefixes up to N = 5 rotate it
CHECK_ORACLE_FLOAT32 = scoped_check("--only", "render equals the independent oracle", "--no-gossip", "--universe",
                                    "float32", "--max-arity", "5")
CHECK_C3_REDELIVERY = scoped_check("--only", "re-deliveries", "--no-gossip", "--max-arity", "2")
# every realstate case runs the whole (small) replay: its checks take well under a second, the
# process start-up (torch, transformers) ten, so one command for all means one unpatched control
REALSTATE = ("realstate", "--agents", "2", "--latent-steps", "0")

ORACLE_ROW = ("C3", "render equals the independent oracle")
KNOWN_M = ("C5", "known answers: order values m (float64 bits, canonical NaN)")
KNOWN_IDS = ("C5", "known answers: fingerprint digests and content ids")
KNOWN_KEYS = ("C5", "known answers: order keys (totalOrder bits ++ content id)")
KNOWN_RENDERS = ("C3", "known answers: render layouts and digests")
FIDELITY = ("C8", "re-encoding fidelity")


@dataclass(frozen=True)
class Curated:
    name: str
    patches: tuple[Patch, ...]
    quick: tuple[str, ...] = ()
    caught_by: frozenset[tuple[str, str]] = frozenset()
    in_default_tests: bool = False
    why: str = ""

    @property
    def part(self) -> str:
        """The command its quick check runs (``prove``, ``check`` or ``realstate``)."""
        return self.quick[0] if self.quick else ""


def _prove(name: str, patches: list[Patch], only: str, must_fail: str | None = None, why: str = "",
           default: bool = True) -> Curated:
    """A case for ``prove``: run ``--only only``; the rows ``must_fail`` (default: every obligation
    named in ``only``) must fail.  ``only`` may also be a claim id."""
    quick = ("prove", "--only", only)
    names = (must_fail or only).split(",")
    return Curated(name, tuple(patches), quick, frozenset((n[:2].upper(), n) for n in names), default, why)


CATALOG: tuple[Curated, ...] = (
    # --- found by the review: slipped through check/realstate --------------------------------------
    Curated("sort skipped from N = 4 on",
            (Patch(RENDER, SORTED_LAYOUT, "        layouts.append(layout(engine.order(members) if len(members) < 4 "
                                          "else members, base))"),),
            CHECK_C3_RANDOM, frozenset({("C3", "permutations")}), True),
    Curated("tie-break by object identity",
            (Patch(ENGINE, "    return fragment.order_key",
                   "    return fragment.order_key[:8] + id(fragment).to_bytes(8, 'big')"),),
            CHECK_C3_TIES, frozenset({("C3", "engine order over every input order")}), True),
    Curated("dict insertion order instead of the sort",
            (Patch(RENDER, "        members = list(engine.collect(state))\n" + SORTED_LAYOUT,
                   "        members = list({f.content_id: f for f in state}.values())\n"
                   "        layouts.append(layout(members, base))"),),
            CHECK_C3_RANDOM, frozenset({("C3", "permutations")})),
    Curated("engine key without the content-id tie-break",
            (Patch(ENGINE, "    return fragment.order_key", "    return fragment.order_key[:8]"),),
            CHECK_C3_TIES, frozenset({("C3", "permutations")}), True),
    Curated("render alternates between calls (gossip)",
            (Patch(RENDER, PLACEMENT, COUNTER),
             Patch(RENDER, PREPARED, ALTERNATING_BASE),
             Patch(RENDER, SINGLE_PREPARED, ALTERNATING_SINGLE)),
            scoped_check("--only", "C7", "--universe", "ties", "--replicas", "2", "--fragments", "2"),
            frozenset({("C7", "gossip: equal sets render equal")}), True),
    Curated("render alternates between calls (laws)",
            (Patch(RENDER, PLACEMENT, COUNTER),
             Patch(RENDER, PREPARED, ALTERNATING_BASE),
             Patch(RENDER, SINGLE_PREPARED, ALTERNATING_SINGLE)),
            scoped_check("--only", "semilattice laws on concrete states", "--no-gossip", "--universe", "ties"),
            frozenset({("C1", "semilattice laws on concrete states")}), True),
    Curated("first placement not re-encoded (check)",
            (Patch(RENDER, DELTA, "p.offset - f.start if reencode and spans else 0"),),
            CHECK_ORACLE, frozenset({ORACLE_ROW}), True),
    Curated("first placement not re-encoded (realstate)",
            (Patch(RENDER, DELTA, "p.offset - f.start if reencode and spans else 0"),),
            REALSTATE, frozenset({FIDELITY}), True),
    Curated("wrong sign of the re-encoding offset (check)",
            (Patch(RENDER, DELTA, "f.start - p.offset if reencode else 0"),),
            CHECK_ORACLE, frozenset({ORACLE_ROW})),
    Curated("wrong sign of the re-encoding offset (realstate)",
            (Patch(RENDER, DELTA, "f.start - p.offset if reencode else 0"),),
            REALSTATE, frozenset({FIDELITY})),
    # --- survived mutation testing (mutmut against pytest) ------------------------------------------
    Curated("re-encoding offset computed as offset + start",
            (Patch(RENDER, DELTA, "p.offset + f.start if reencode else 0"),),
            CHECK_ORACLE, frozenset({ORACLE_ROW})),
    Curated("order statistic read from the last layer",
            (Patch(FRAGMENT, "return self.keys[self.fingerprint.layers // 2]", "return self.keys[-1]"),),
            REALSTATE, frozenset({KNOWN_M}), True),
    Curated("sorted by -m",
            (Patch(FRAGMENT, ORDER_KEY_CALL, "order_key(-self.order_value, self.content_id)"),),
            CHECK_ORACLE, frozenset({ORACLE_ROW}), True),
    Curated("render ignores a non-zero base",
            (Patch(RENDER, "placements, offset = [], base", "placements, offset = [], 0"),),
            CHECK_ORACLE, frozenset({ORACLE_ROW})),
    Curated("canonical NaN payload changed",
            (Patch(ORDER_VALUE, "0x7FF8000000000000", "0x7FF8000000000001"),),
            REALSTATE, frozenset({KNOWN_M})),
    Curated("content-id header magic changed",
            (Patch(FRAGMENT, 'CONTENT_ID_MAGIC = b"CMFRAG01"', 'CONTENT_ID_MAGIC = b"CMFRAG02"'),),
            REALSTATE, frozenset({KNOWN_IDS}), True),
    # --- prove: the code (spec) and the encodings (proofs), linked both ways -------------------------
    _prove("proofs key without tie-break",
           [Patch("proofs/ordering.py", ORDER_KEY_PROOFS,
                  "    return z3.Concat(total_order_bits(m), z3.BitVecVal(0, content_id.size()))\n")],
           "c3_key_le_antisymmetric,c3_link_canonical_order"),
    _prove("spec key without tie-break",
           [Patch(SPEC_ORDERING, ORDER_KEY_SPEC,
                  'return total_order_bits(m).to_bytes(8, "big") + bytes(len(require_content_id(content_id)))')],
           "c3_link_canonical_order"),
    _prove("hash-injectivity dropped from the tie-break lemma",
           [Patch("proofs/render.py", 'premises = [premise("hash-injectivity", *hash_injective([f, g])),\n'
                                      '                premise("bvule antisymmetry',
                  'premises = [premise("hash-injectivity"),\n                premise("bvule antisymmetry')],
           "c3_key_le_antisymmetric"),
    _prove("induction hypothesis dropped from the step",
           [Patch("proofs/render.py",
                  '        premise("induction hypothesis U(tail s) at tail t", unique_at(tail(s), tail(t))),\n', "")],
           "c3_sorted_unique_step"),
    _prove("proofs key with raw-bits m",
           [Patch("proofs/ordering.py", ORDER_KEY_PROOFS, "    return z3.Concat(m, content_id)\n")],
           "c5_key_monotone_in_m,c5_link_order_key"),
    _prove("proofs key with constant m",
           [Patch("proofs/ordering.py", ORDER_KEY_PROOFS, "    return z3.Concat(z3.BitVecVal(0, 64), content_id)\n")],
           "c5_key_monotone_in_m,c5_key_injective"),
    _prove("spec key with raw-bits m",
           [Patch(SPEC_ORDERING, ORDER_KEY_SPEC, 'return struct.pack(">d", m) + require_content_id(content_id)')],
           "c5_link_order_key"),
    _prove("spec key with constant m",
           [Patch(SPEC_ORDERING, ORDER_KEY_SPEC, 'return bytes(8) + require_content_id(content_id)')],
           "c5_link_order_key"),
    _prove("spec total_order_bits sets the sign bit of every pattern",
           [Patch(SPEC_ORDERING, "    return bits ^ flip\n", "    return bits | _SIGN\n")],
           "c5_link_total_order_bits,c5_link_order_key"),
    _prove("spec total_order_bits_of_pattern bypasses the branch-free rank",
           [Patch(SPEC_ORDERING, "    return total_order_bits_branch_free(bits)\n", "    return bits | _SIGN\n")],
           "c5_link_order_key"),
    _prove("proofs total_order_bits flips only the sign",
           [Patch("proofs/ordering.py", "bits ^ z3.BitVecVal(_ALL, 64)", "bits ^ z3.BitVecVal(_SIGN, 64)")],
           "c5_key_monotone_in_m,c5_link_total_order_bits"),
    _prove("spec merge drops the other side",
           [Patch(SPEC_SET, "            table.setdefault(cid, item)\n", "            pass\n")],
           "C1", "c1_link_fragment_set_merge"),
    _prove("proofs union_by_id keeps the right payload",
           [Patch("proofs/fragment_set.py", "z3.If(a.present, a.payload, b.payload)",
                  "z3.If(b.present, b.payload, a.payload)")],
           "C1", "c1_link_fragment_set_merge"),
    _prove("canonical_order returns arrival order",
           [Patch(SPEC_ORDERING, "    return [items[i] for i in order]\n", "    return list(items)\n")],
           "c3_link_canonical_order"),
    _prove("canonical_order sorts by the reversed key",
           [Patch(SPEC_ORDERING, "order = sorted(range(len(items)), key=keys.__getitem__)",
                  "order = sorted(range(len(items)), key=keys.__getitem__, reverse=True)")],
           "c3_link_canonical_order"),
    _prove("spec FragmentSet <= reversed",
           [Patch(SPEC_SET, "return self._by_id.keys() <= other._by_id.keys()",
                  "return self._by_id.keys() >= other._by_id.keys()")],
           "c2_link_fragment_set_order"),
    _prove("spec bag_order drops duplicates",
           [Patch(SPEC_ORDERING, "    return list(items)\n", "    return list(dict.fromkeys(items))\n")],
           "c4_link_bag_order"),
    _prove("spec FragmentSet.of keeps the last payload",
           [Patch(SPEC_SET, "table.setdefault(require_content_id(content_id(item)), item)",
                  "table[require_content_id(content_id(item))] = item")],
           "c7_link_fragment_set_of"),
    _prove("a stray premise",
           [Patch("proofs/render.py", 'return law([definitions("dup_free", dup_free_definition, s)], [hypothesis]',
                  'return law([definitions("dup_free", dup_free_definition, s), premise("stray", is_cons(s))],'
                  ' [hypothesis]')],
           "c3_head_not_in_tail"),
    # --- realistic bugs added by the audit (planted by every canonmerge audit; tests: -m audit) ------
    Curated("RoPE convention swapped: interleaved pairs instead of NeoX halves",
            (Patch(ROPE, ROLL,
                   "    swapped = turned.unflatten(-1, (-1, 2)).flip(-1).flatten(-2)  # [k2, k1] pairwise\n"),
             Patch(ROPE, SPLIT_X, "x1, x2 = x[..., 0::2], x[..., 1::2]"),
             Patch(ROPE, SPLIT_Q, "q1, q2 = q[..., 0::2], q[..., 1::2]")),
            CHECK_ORACLE, frozenset({ORACLE_ROW}),
            why="GPT-J style rotate_every_two in a NeoX model: the render is self-consistent, the model is not"),
    Curated("cos/sin computed in float32",
            (Patch(ROPE, "    cos = [math.cos(a) for a in angles]\n    sin = [math.sin(a) for a in angles]\n",
                   "    angles32 = torch.tensor(angles, dtype=torch.float32)\n"
                   "    cos, sin = torch.cos(angles32).tolist(), torch.sin(angles32).tolist()\n"),),
            REALSTATE, frozenset({KNOWN_RENDERS}),
            why="angles rounded to float32 before cos/sin: wrong at large offsets (the vectors render at "
                "base 12345), the same bits at the small offsets of a replay"),
    Curated("products rounded to the storage dtype before the sum (rounding twice)",
            (Patch(ROPE, ADD_SMALL, "    turned = turned.to(dest.dtype).float() + swapped.to(dest.dtype).float()\n"
                                    "    region.copy_(turned)\n    return\n"),
             Patch(ROPE, SUB_LARGE, "            x.copy_(x.to(dest.dtype)), q.copy_(q.to(dest.dtype))\n" + SUB_LARGE)),
            CHECK_ORACLE, frozenset({ORACLE_ROW}),
            why="k*cos and rotate_half(k)*sin each rounded to bf16, then added and rounded again"),
    Curated("a fragment's values re-encoded too",
            (Patch(RENDER, VALUES_APPEND,
                   "        values.append(__import__('realstate.kernel.rope', fromlist=['rope']).reencode_keys(\n"
                   "            f.values, p.offset - f.start, fp.inv_freq) if reencode else f.values)\n"),),
            CHECK_ORACLE, frozenset({ORACLE_ROW}),
            why="RoPE applied to V as well as K: values must never be touched"),
    Curated("values written from the keys",
            (Patch(RENDER, VALUES_APPEND, "        values.append(f.keys)\n"),),
            CHECK_ORACLE, frozenset({ORACLE_ROW}), why="copy-paste: the value slice filled from the keys"),
    Curated("fragment set dedups by object identity",
            (Patch(FRAGMENT, "return FragmentSet.of(fragments, lambda f: f.content_id)",
                   'return FragmentSet.of(fragments, lambda f: id(f).to_bytes(32, "big"))'),),
            CHECK_C3_REDELIVERY, frozenset({("C3", "re-deliveries")}),
            why="a re-delivered copy (equal bytes, other object) is kept twice"),
    Curated("stable argsort replaced by an unstable one",
            (Patch(SPEC_ORDERING, "order = sorted(range(len(items)), key=keys.__getitem__)",
                   "order = sorted(range(len(items)), key=lambda i: (keys[i], -i))"),),
            why="equal keys come out in reverse input order (equivalent: see audit.equivalent)"),
    Curated("layout base off by one",
            (Patch(RENDER, "placements, offset = [], base", "placements, offset = [], base + 1"),),
            CHECK_ORACLE, frozenset({ORACLE_ROW}), why="the first placement lands at base + 1"),
    Curated("fingerprint digest ignores the rotary frequencies",
            (Patch(FINGERPRINT, 'return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))',
                   'return json.dumps({k: v for k, v in self.to_json().items() if k != "inv_freq_f64"}, '
                   'sort_keys=True, separators=(",", ":"))'),),
            REALSTATE, frozenset({KNOWN_IDS}),
            why="two models with different inv_freq would merge as one"),
    Curated("content id hashes the values before the keys",
            (Patch(FRAGMENT, "    _hash_bytes(h, keys)\n    _hash_bytes(h, values)\n",
                   "    _hash_bytes(h, values)\n    _hash_bytes(h, keys)\n"),),
            REALSTATE, frozenset({KNOWN_IDS}), why="the canonical encoding's field order"),
    Curated("content id header omits the start position",
            (Patch(FRAGMENT, "                          layers, heads, tokens, head_dim, start)",
                   "                          layers, heads, tokens, head_dim, 0)"),),
            REALSTATE, frozenset({KNOWN_IDS}),
            why="the same tokens encoded at two positions would share an id"),
    Curated("m divided by H*n - 1",
            (Patch(ORDER_VALUE, "    return total / count\n", "    return total / (count - 1)\n"),),
            REALSTATE, frozenset({KNOWN_M}), why="sample-variance habit in a mean"),
    Curated("fsum replaced by sum",
            (Patch(ORDER_VALUE, "        total = math.fsum(norms.tolist())", "        total = sum(norms.tolist())"),),
            REALSTATE, frozenset({KNOWN_M}),
            why="a left-to-right float sum: m no longer correctly rounded"),
    Curated("m read from the values",
            (Patch(FRAGMENT, "return self.keys[self.fingerprint.layers // 2]",
                   "return self.values[self.fingerprint.layers // 2]"),),
            REALSTATE, frozenset({KNOWN_M}), why="the order statistic of the wrong tensor"),
    Curated("order key from m rounded to float32",
            (Patch(FRAGMENT, ORDER_KEY_CALL,
                   'order_key(struct.unpack("<f", struct.pack("<f", self.order_value))[0], self.content_id)'),),
            REALSTATE, frozenset({KNOWN_KEYS}),
            why="a reduced-precision key: near ties resolve by id (the vectors J..N have m off the float32 grid)"),
    Curated("exact m stops after two extraction levels",
            (Patch(ORDER_VALUE, "    while remainder.any():\n", "    while False:\n"),),
            REALSTATE, frozenset({KNOWN_M}),
            why="a truncated exact sum: the tail below the second level is dropped (vectors J, L, M, N)"),
    Curated("render's position bound counts only the last fragment",
            (Patch(RENDER, "        total += n\n", "        total = n\n"),),
            REALSTATE, frozenset({KNOWN_RENDERS}),
            why="a render running past the model's last position is accepted (the refused known-answer renders)"),
    Curated("a count with violations reported as holding",
            (Patch("spec/claims.py", "            outcome = Outcome.FAILS if found else Outcome.HOLDS\n",
                   "            outcome = Outcome.HOLDS\n"),),
            REALSTATE, frozenset({("C3", "control: an arrival-order render fails the permutations check")}),
            why="the verdict machinery itself: every check passes on a correct render, so only a negative "
                "control that must fail can show it"),
    Curated("bag_merge's default base off by one",
            (Patch(RENDER, "def bag_merge(fragments: Sequence[Fragment], base: int = 0)",
                   "def bag_merge(fragments: Sequence[Fragment], base: int = 1)"),),
            REALSTATE, frozenset({ORACLE_ROW}), why="the library API's default, which no product caller used"),
    Curated("per-fragment render path writes every fragment at the start",
            (Patch(RENDER, "        position += n\n", "        position += 0\n"),),
            REALSTATE, frozenset({ORACLE_ROW}),
            why="the path engines without a batched re-encoding take (verify renders it with PER_FRAGMENT)"),
    Curated("chunked re-encoding reads the first chunk's rotation table for every chunk",
            (Patch(ROPE, "            x.mul_(cos[r0:r1])  # [k1·c, k2·c]\n",
                   "            x.mul_(cos[:r1 - r0])  # [k1·c, k2·c]\n"),),
            REALSTATE, frozenset({ORACLE_ROW, KNOWN_RENDERS}),
            why="an indexing slip in the path large renders take; verify drives it with small chunk sizes"),
    Curated("compiled kernel truncates to bfloat16 instead of rounding to nearest even",
            (Patch(FUSED, "    return np.uint16((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> "
                          "np.uint32(16))\n",
                   "    return np.uint16(u >> np.uint32(16))\n"),),
            REALSTATE, frozenset({ORACLE_ROW, KNOWN_RENDERS}), True,
            why="the path every large bfloat16 render on a CPU takes; a hand-written rounding is where such a "
                "kernel goes wrong, and verify drives it with small chunk sizes"),
    Curated("compiled kernel adds the sine term the formula subtracts",
            (Patch(FUSED, "                dst[b, row + t, j] = _narrow(k1 * cos[j] - k2 * sin[j], ieee_half)\n",
                   "                dst[b, row + t, j] = _narrow(k1 * cos[j] + k2 * sin[j], ieee_half)\n"),),
            REALSTATE, frozenset({ORACLE_ROW, KNOWN_RENDERS}),
            why="a sign slip in the kernel's arithmetic (mutmut leaves decorated functions, so the numba "
                "kernels' bodies are audited by curated bugs only)"),
    Curated("compiled kernel writes every piece from the render's first row",
            (Patch(FUSED, "                dst[b, row + t, j] = _narrow(k1 * cos[j] - k2 * sin[j], ieee_half)\n"
                          "                dst[b, row + t, j + half] = "
                          "_narrow(k2 * cos[j + half] + k1 * sin[j + half], ieee_half)\n",
                   "                dst[b, t, j] = _narrow(k1 * cos[j] - k2 * sin[j], ieee_half)\n"
                   "                dst[b, t, j + half] = "
                   "_narrow(k2 * cos[j + half] + k1 * sin[j + half], ieee_half)\n"),),
            REALSTATE, frozenset({ORACLE_ROW, KNOWN_RENDERS}),
            why="an offset dropped: right for a render's first piece, wrong for every later one"),
    Curated("float32 compiled kernel swaps the keys' halves in the second sum",
            (Patch(FUSED, "                dst[b, row + t, j + half] = "
                          "_quiet(k2 * cos[j + half] + k1 * sin[j + half])\n",
                   "                dst[b, row + t, j + half] = _quiet(k1 * cos[j + half] + k2 * sin[j + half])\n"),),
            REALSTATE, frozenset({KNOWN_RENDERS}),
            why="the float32 kernel, which the bfloat16 replay does not take: the known-answer vectors do"),
    Curated("compiled kernel widens float16 keys as bfloat16",
            (Patch(FUSED, "    if ieee_half:\n        return _float_from_half(h)\n", ""),),
            REALSTATE, frozenset({KNOWN_RENDERS}),
            why="the float16 kernel, which the bfloat16 replay does not take: the known-answer vectors do "
                "(where the CPU has F16C; elsewhere float16 renders take torch's path)"),
    Curated("compiled kernel built with fast-math (fused multiply-adds, reassociation)",
            (Patch(FUSED, "        return numba.njit(nogil=True, cache=True)(function)\n",
                   "        return numba.njit(nogil=True, cache=True, fastmath=True)(function)\n"),),
            REALSTATE, frozenset({ORACLE_ROW, KNOWN_RENDERS}),
            why="the one compile option that changes the arithmetic: products rounded once inside a fused "
                "multiply-add instead of twice (the unit tests read the assembly; the product sees the bytes)"),
    Curated("compiled kernel's threads all write the first share of blocks",
            (Patch(FUSED, "    bounds = [blocks * i // threads for i in range(threads + 1)]\n",
                   "    bounds = [0] + [blocks // threads] * threads\n"),),
            REALSTATE, frozenset({ORACLE_ROW, KNOWN_RENDERS}),
            why="a split of the (layer, head) blocks between threads that leaves some unwritten"),
    Curated("torch path keeps the NaN bits its cast writes (no numba)",
            (Patch(ROPE, "        canonical_nan_(dest)  # whatever NaN the arithmetic and the cast wrote\n",
                   "        pass\n"),
             Patch(ROPE, 'NUMBA = importlib.util.find_spec("numba") is not None', "NUMBA = False")),
            CHECK_ORACLE, frozenset({ORACLE_ROW}), True,
            why="where numba is absent (or on CUDA) small renders rotate on torch, whose NaN results carry the "
                "hardware's sign and payload and whose float32 casts write vector- or scalar-path NaNs"),
    Curated("compiled float32 kernel keeps the arithmetic's NaN bits",
            (Patch(FUSED, "    if x != x:\n        return _float_from_bits(np.uint32(0x7FC00000))\n    return x\n",
                   "    return x\n"),),
            CHECK_ORACLE_FLOAT32, frozenset({ORACLE_ROW}), True,
            why="a rotated NaN key with the CPU's NaN (an input's payload carried, a negative default NaN) "
                "instead of the canonical quiet NaN: renders differ between machines"),
    Curated("frequencies recomputed from rope_theta",
            (Patch(ENGINE, "    return fingerprint.inv_freq\n",
                   "    return tuple(1.0 / fingerprint.rope_theta ** (2 * i / fingerprint.head_dim)\n"
                   "                 for i in range(fingerprint.head_dim // 2))\n"),),
            REALSTATE,
            frozenset({("C8", "re-encoding uses the model's own rotary frequencies")}),
            why="exact textbook frequencies instead of the model's own (bf16-rounded) ones"),
    Curated("merge keeps the right operand's payload on shared ids",
            (Patch(SPEC_SET, "            table.setdefault(cid, item)\n", "            table[cid] = item\n"),),
            ("prove", "--only", "c1_link_fragment_set_merge"), frozenset({("C1", "c1_link_fragment_set_merge")}),
            why="equal ids keep the newer object: harmless under hash-injectivity, but not the specified merge"),
    # --- survivors of the sampled audit, closed ----------------------------------------------------
    Curated("Fragment equality inverted",
            (Patch(FRAGMENT, "other.content_id == self.content_id", "other.content_id != self.content_id"),),
            REALSTATE, frozenset({("C2", "re-delivery leaves the canonical render unchanged")}),
            True, why="a re-delivered copy must be the same fragment to a library user (==, hash); the sampled "
                      "audit found no part compared two Fragments"),
    # --- the checker's own instruments: caught by the run's canaries and coverage ------------------
    Curated("incremental union reuses a stale prefix",
            (Patch(UNIONS, COMMON_PREFIX, "    return max((k for k in range(min(len(a), len(b))) "
                                          "if sorted(a[:k]) == sorted(b[:k])), default=0)"),),
            CHECK_C3_RANDOM, frozenset({("C3", "coverage: arrival order fed = schedule (from-scratch sample)")}),
            True, why="a prefix holding the same deliveries in another order is reused: its union is the same "
                      "set, so every render agrees, but the schedule reported is not the one fed to the render"),
    Curated("shard verdicts merged per shard",
            (Patch(SHARDS, "sets.setdefault((s.canary, check, s.universe, s.n), set()).update(digests)",
                   "sets[(s.canary, check, s.universe, s.n)] = set(digests)"),),
            CHECK_C3_RANDOM, frozenset({("C3", "canary: a render that differs between shards is caught")}),
            True, why="each shard's digests replace the last shard's: two shards rendering one set differently "
                      "are never compared"),
    Curated("a batch of C3 renders renders its first state for every schedule",
            (Patch(CHECKS, "self.render_many([state for _, state in batch])",
                   "self.render_many([batch[0][1] for _ in batch])"),),
            CHECK_C3_RANDOM, frozenset({("C3", "canary: order-by-arrival render is caught")}),
            True, why="every schedule of a batch is compared through the first one's render: the real render "
                      "agrees with itself, only a render that depends on the order shows the blindness"),
    Curated("merge trees skip the last root split",
            (Patch(UNIONS, "        for s in range(1, n):", "        for s in range(1, n - 1):"),),
            CHECK_C3_RANDOM, frozenset({("C3", "coverage: schedules checked = closed-form count")}),
            True, why="the trees whose right side is one leaf are never rendered; every tree that is agrees"),
)


def _line_of(root: Path, patch: Patch) -> int:
    """1-based line where the patch's old text starts (0 when the file or the text is missing:
    the patch will then fail to apply, and the audit reports it)."""
    try:
        text = (root / patch.path).read_text(encoding="utf-8")
    except OSError:
        return 0
    at = text.find(patch.old)
    return text.count("\n", 0, at) + 1 if at >= 0 else 0


def slug(name: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in name.lower()).split())


def as_mutants(root: Path | None = None, catalog: tuple[Curated, ...] = CATALOG) -> list[Mutant]:
    """The catalog as mutants: id = first patch's file and line, ``curated:<slug>``, patch hash."""
    base = root or project_root()
    names: dict[tuple[Patch, ...], list[Curated]] = {}
    for case in catalog:  # one mutant per distinct bug: some bugs have a quick command per part
        names.setdefault(case.patches, []).append(case)
    out = []
    for patches, cases in names.items():
        first, name = patches[0], cases[0].name.split(" (")[0]
        line = _line_of(base, first)
        operator = f"curated:{slug(name)}"
        why = cases[0].why
        out.append(Mutant(make_id(first.path, line, operator, patches), "curated", first.path, line,
                          operator, patches, name + (f" ({why})" if why else "")))
    return out


def by_name(name: str) -> Curated:
    for case in CATALOG:
        if case.name == name:
            return case
    raise KeyError(f"no curated case named {name!r}")


def check_applies(root: Path | None = None) -> list[str]:
    """Problems applying each entry's patches to the source tree (empty when all apply once)."""
    base = root or project_root()
    problems = []
    for case in CATALOG:
        texts: dict[str, str] = {}
        for p in case.patches:
            text = texts.get(p.path)
            if text is None:
                try:
                    text = (base / p.path).read_text(encoding="utf-8")
                except OSError as exc:
                    problems.append(f"{case.name}: {p.path}: {exc.strerror}")
                    continue
            if text.count(p.old) != 1:
                problems.append(f"{case.name}: {p.path}: the text to replace occurs {text.count(p.old)} times")
                continue
            texts[p.path] = text.replace(p.old, p.new)
    return problems


__all__ = ["CATALOG", "Curated", "PatchError", "as_mutants", "by_name", "check_applies", "slug"]
