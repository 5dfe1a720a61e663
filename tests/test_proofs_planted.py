"""Source-level planted bugs, caught by ``python -m canonmerge prove`` on a scratch copy.

Each case plants one realistic bug in the SOURCE of ``spec`` (the code) or ``proofs`` (the
encoding), runs the product's own command with ``--only`` the rows that must catch it, and
asserts exit 1 with those rows failing.  Both sides are covered because the code links compare
code and encoding in both directions: a wrong encoding fails them as surely as wrong code."""

import json

import pytest

from audit import Patch, ScratchCopy

ORDER_KEY_SPEC = 'return total_order_bits(m).to_bytes(8, "big") + require_content_id(content_id)'
ORDER_KEY_PROOFS = "    return z3.Concat(total_order_bits(m), content_id)\n"

CASES = {
    # C3: the key without the content-id tie-break, in the proofs' key and in spec's key
    "proofs key without tie-break": (
        [Patch("proofs/ordering.py", ORDER_KEY_PROOFS,
               "    return z3.Concat(total_order_bits(m), z3.BitVecVal(0, content_id.size()))\n")],
        "c3_key_le_antisymmetric,c3_link_canonical_order",
        {"c3_key_le_antisymmetric", "c3_link_canonical_order"}),
    "spec key without tie-break": (
        [Patch("spec/ordering.py", ORDER_KEY_SPEC,
               'return total_order_bits(m).to_bytes(8, "big") + bytes(len(require_content_id(content_id)))')],
        "c3_link_canonical_order", {"c3_link_canonical_order"}),
    # C3: the one premise about the world dropped; the induction hypothesis dropped
    "hash-injectivity dropped from the tie-break lemma": (
        [Patch("proofs/render.py", 'premises = [premise("hash-injectivity", *hash_injective([f, g])),\n'
                                   '                premise("bvule antisymmetry',
               'premises = [premise("hash-injectivity"),\n                premise("bvule antisymmetry')],
        "c3_key_le_antisymmetric", {"c3_key_le_antisymmetric"}),
    "induction hypothesis dropped from the step": (
        [Patch("proofs/render.py",
               '        premise("induction hypothesis U(tail s) at tail t", unique_at(tail(s), tail(t))),\n', "")],
        "c3_sorted_unique_step", {"c3_sorted_unique_step"}),
    # C5: the m part of the key as raw float bits or a constant, in proofs and in spec
    "proofs key with raw-bits m": (
        [Patch("proofs/ordering.py", ORDER_KEY_PROOFS, "    return z3.Concat(m, content_id)\n")],
        "c5_key_monotone_in_m,c5_link_order_key", {"c5_key_monotone_in_m", "c5_link_order_key"}),
    "proofs key with constant m": (
        [Patch("proofs/ordering.py", ORDER_KEY_PROOFS, "    return z3.Concat(z3.BitVecVal(0, 64), content_id)\n")],
        "c5_key_monotone_in_m,c5_key_injective", {"c5_key_monotone_in_m", "c5_key_injective"}),
    "spec key with raw-bits m": (
        [Patch("spec/ordering.py", ORDER_KEY_SPEC, 'return struct.pack(">d", m) + require_content_id(content_id)')],
        "c5_link_order_key", {"c5_link_order_key"}),
    "spec key with constant m": (
        [Patch("spec/ordering.py", ORDER_KEY_SPEC, 'return bytes(8) + require_content_id(content_id)')],
        "c5_link_order_key", {"c5_link_order_key"}),
    # C5: total_order_bits wrong in the code (branch-free body, or the range-checking wrapper)
    "spec total_order_bits sets the sign bit of every pattern": (
        [Patch("spec/ordering.py", "    return bits ^ flip\n", "    return bits | _SIGN\n")],
        "c5_link_total_order_bits,c5_link_order_key", {"c5_link_total_order_bits", "c5_link_order_key"}),
    "spec total_order_bits_of_pattern bypasses the branch-free rank": (
        [Patch("spec/ordering.py", "    return total_order_bits_branch_free(bits)\n", "    return bits | _SIGN\n")],
        "c5_link_order_key", {"c5_link_order_key"}),
    # C5: the encoding wrong (flip only the sign of negatives)
    "proofs total_order_bits flips only the sign": (
        [Patch("proofs/ordering.py", "bits ^ z3.BitVecVal(_ALL, 64)", "bits ^ z3.BitVecVal(_SIGN, 64)")],
        "c5_key_monotone_in_m,c5_link_total_order_bits", {"c5_key_monotone_in_m", "c5_link_total_order_bits"}),
    # C1: merge wrong in the code, and in the encoding
    "spec merge drops the other side": (
        [Patch("spec/fragment_set.py", "            table.setdefault(cid, item)\n", "            pass\n")],
        "C1", {"c1_link_fragment_set_merge"}),
    "proofs union_by_id keeps the right payload": (
        [Patch("proofs/fragment_set.py", "z3.If(a.present, a.payload, b.payload)",
               "z3.If(b.present, b.payload, a.payload)")],
        "C1", {"c1_link_fragment_set_merge"}),
    # C3: canonical_order returning arrival order, or sorting by the reversed key
    "canonical_order returns arrival order": (
        [Patch("spec/ordering.py", "    return [items[i] for i in order]\n", "    return list(items)\n")],
        "c3_link_canonical_order", {"c3_link_canonical_order"}),
    "canonical_order sorts by the reversed key": (
        [Patch("spec/ordering.py", "order = sorted(range(len(items)), key=keys.__getitem__)",
               "order = sorted(range(len(items)), key=keys.__getitem__, reverse=True)")],
        "c3_link_canonical_order", {"c3_link_canonical_order"}),
    # C2: inclusion reversed; C4: BagMerge losing its duplicates
    "spec <= reversed": (
        [Patch("spec/fragment_set.py", "return self._by_id.keys() <= other._by_id.keys()",
               "return self._by_id.keys() >= other._by_id.keys()")],
        "c2_link_fragment_set_order", {"c2_link_fragment_set_order"}),
    "spec bag_order drops duplicates": (
        [Patch("spec/ordering.py", "    return list(items)\n", "    return list(dict.fromkeys(items))\n")],
        "c4_link_bag_order", {"c4_link_bag_order"}),
    # C7: FragmentSet.of keeping the last payload on a repeated id
    "spec FragmentSet.of keeps the last payload": (
        [Patch("spec/fragment_set.py", "table.setdefault(require_content_id(content_id(item)), item)",
               "table[require_content_id(content_id(item))] = item")],
        "c7_link_fragment_set_of", {"c7_link_fragment_set_of"}),
    # vacuity: a stray premise the proof does not need fails the obligation
    "a stray premise": (
        [Patch("proofs/render.py", 'return law([definitions("dup_free", dup_free_definition, s)], [hypothesis]',
               'return law([definitions("dup_free", dup_free_definition, s), premise("stray", is_cons(s))],'
               ' [hypothesis]')],
        "c3_head_not_in_tail", {"c3_head_not_in_tail"}),
}


def failing_rows(scratch: ScratchCopy, only: str) -> tuple[int, dict[str, dict]]:
    out = scratch.run("prove", "--only", only, "--json", timeout=120)
    assert out.stdout, out.stderr
    rows = {r["check"]: r for r in json.loads(out.stdout)["parts"][0]["results"]}
    return out.returncode, {name: r for name, r in rows.items() if r["outcome"] != "holds"}


@pytest.mark.parametrize("case", CASES)
def test_prove_catches_a_planted_bug(case, tmp_path):
    patches, only, must_fail = CASES[case]
    scratch = ScratchCopy(tmp_path).apply(*patches)
    code, failing = failing_rows(scratch, only)
    assert code == 1, failing
    assert must_fail <= set(failing), (case, sorted(failing))
    for row in failing.values():
        assert row["outcome"] == "fails" and row["details"]["result"] != "proved"


def test_the_unpatched_copy_passes_the_same_selections(tmp_path):
    """Control: every selection above holds on the unpatched copy, so a failure is the bug's."""
    scratch = ScratchCopy(tmp_path)
    selections = sorted({only for _, only, _ in CASES.values()})
    code, failing = failing_rows(scratch, ",".join(selections))
    assert code == 0 and not failing, failing
