"""Mutants judged equivalent: no valid input makes the product give another verdict (any row's
outcome, or an exit code).

Each entry is a mutant id (``audit.mutants.make_id``: file, line, operator, patch hash) and one
line saying why, judged by reading the code (docs/AUDIT.md: how).  The kill ratio excludes them.
An entry that the current source no longer generates is reported as stale; an entry that the
parts *do* detect is reported as a wrong judgement — neither is silently ignored."""

from __future__ import annotations

EQUIVALENT: dict[str, str] = {
    "spec/ordering.py:66:curated:stable-argsort-replaced-by-an-unstable-one:f41a2b7b":
        "keys of distinct fragments are distinct (the id tie-break) and a set holds each id once, so no "
        "two items a render sorts ever tie: any correct sort, stable or not, gives the same order",
    "realstate/order_value.py:78:operator_number:73093684":
        "block = min(count, max(2, ...)) instead of max(1, ...): only the block size of an exact, row-wise "
        "computation changes (rows never span blocks' results), so m has the same bits",
    "realstate/order_value.py:97:operator_name:8f3b1c71":
        "scratch_is_input=False only makes correctly_rounded_row_sums copy its input instead of reusing it: "
        "the same sums",
    "realstate/order_value.py:183:operator_swap_op:c8696ff5":
        "len(levels) >= _MAX_LEVELS in a guard that cannot fire (each level takes >= 12 bits off, 4200 levels "
        "are never reached)",
    "realstate/order_value.py:136:operator_number:c42b85ba":
        "float16 exponent shift 10 -> 11 in the plain-sum exactness test: the field read is floor(f/2) <= f, "
        "so the test only gets more pessimistic and more rows take the exact path: the same bits",
}

# Survivors that are NOT equivalent: gaps left open, each with why (docs/RESULTS.md lists them).
# The two the sampled audit found are closed: Fragment equality is checked under C2 (curated case
# "Fragment equality inverted"), and render_layout has no default base any more.
GAPS: dict[str, str] = {
}
