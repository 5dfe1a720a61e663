"""The replay language's types: what kind of value each op takes and makes, checked before a run.

Why: a trace is a file users exchange, and a well-formed one can still apply a step to the wrong
kind of value (``merge`` of a bare fragment, ``render`` of a fragment, ``join_abstract`` of two
digests).  Run as it is, that was an ``AttributeError`` deep in a backend and exit 1 — a false
violation.  ``check_program`` gives every value a kind from the op that made it and refuses the
first operand (or expectation) of the wrong kind, naming the step; every op of
``modelcheck.program.OPS`` must have a signature here (``missing_signatures``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# the kinds of value a program computes
FRAGMENT = "fragment"      # built from the trace's description (``fragment``)
COPY = "copy"              # a fresh copy of a fragment (``copy``): a fragment, but not the trace's own
STATE = "state"            # a replica state (``singleton``, ``merge``)
DIGEST = "digest"          # a render's digest (``render``, ``bag``)
ABSTRACT = "abstract"      # the set of ids a state holds (``abstract``, ``join_abstract``)
ORDER = "order"            # a list of content ids (``render_order``, ``canonical_order``, ``order_of``)
TEXT = "text"              # the oracle's first difference, "" if none (``oracle_mismatch``)
KINDS = (FRAGMENT, COPY, STATE, DIGEST, ABSTRACT, ORDER, TEXT)
FRAGMENTS = frozenset({FRAGMENT, COPY})

# op -> (operand field -> the kinds it accepts, the kind it makes); "index" and "mode" operands
# are not values and are checked by the trace loader
SIGNATURES: dict[str, tuple[dict[str, frozenset[str]], str]] = {
    "fragment": ({}, FRAGMENT),
    "copy": ({"of": FRAGMENTS}, COPY),
    "singleton": ({"of": FRAGMENTS}, STATE),
    "merge": ({"left": frozenset({STATE}), "right": frozenset({STATE})}, STATE),
    "render": ({"of": frozenset({STATE})}, DIGEST),
    "bag": ({"of": FRAGMENTS}, DIGEST),
    "abstract": ({"of": frozenset({STATE})}, ABSTRACT),
    "join_abstract": ({"left": frozenset({ABSTRACT}), "right": frozenset({ABSTRACT})}, ABSTRACT),
    "render_order": ({"of": frozenset({STATE})}, ORDER),
    "canonical_order": ({"of": FRAGMENTS}, ORDER),
    "order_of": ({"of": FRAGMENTS}, ORDER),
    # the oracle rebuilds the listed fragments from the trace's descriptions: the fragment op's own
    "oracle_mismatch": ({"of": frozenset({STATE}), "fragments": frozenset({FRAGMENT})}, TEXT),
}
# expectation -> the kinds its values may have (all of one kind: an equality of a digest and an
# order is a type error, not a failed claim)
COMPARABLE = frozenset({DIGEST, ABSTRACT, ORDER, TEXT})
EXPECTATION_KINDS: dict[str, frozenset[str]] = {
    "equal": COMPARABLE,
    "one_of": frozenset({DIGEST, ABSTRACT, ORDER}),
    "subset": frozenset({ABSTRACT}),
    "empty": frozenset({TEXT}),
}


class ProgramTypeError(ValueError):
    """A step or an expectation applied to a value of the wrong kind; ``where`` names it."""

    def __init__(self, where: str, problem: str) -> None:
        self.where, self.problem = where, problem
        super().__init__(f"{where}: {problem}")


def missing_signatures(ops: Mapping[str, Mapping[str, str]], expectations: Mapping[str, Mapping[str, str]]
                       ) -> list[str]:
    """Ops and expectations of the language without a signature here (or whose value operands
    differ from it): each is a program this checker would let through unchecked."""
    missing = []
    for name, fields in ops.items():
        values = {f for f, kind in fields.items() if kind in ("ref", "refs")}
        if name not in SIGNATURES or set(SIGNATURES[name][0]) != values:
            missing.append(f"op {name}")
    missing += [f"expectation {name}" for name in expectations if name not in EXPECTATION_KINDS]
    return missing


def _refs(value: Any) -> list[int]:
    return list(value) if isinstance(value, list) else [value]


def _article(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _want(accepted: frozenset[str]) -> str:
    return " or ".join(_article(k) for k in sorted(accepted))


def kinds_of(ops: Sequence[Mapping[str, Any]]) -> list[str]:
    """The kind of every value of a structurally valid program; ``ProgramTypeError`` at the first
    operand of the wrong kind, naming the step (``ops[3] (merge).left``)."""
    kinds: list[str] = []
    for k, op in enumerate(ops):
        name = op["op"]
        if name not in SIGNATURES:
            raise ProgramTypeError(f"ops[{k}] ({name})", "the op has no type signature")
        operands, makes = SIGNATURES[name]
        for field, accepted in operands.items():
            for j, ref in enumerate(_refs(op[field])):
                if kinds[ref] not in accepted:
                    at = f".{field}[{j}]" if isinstance(op[field], list) else f".{field}"
                    raise ProgramTypeError(f"ops[{k}] ({name}){at}",
                                           f"want {_want(accepted)}, got value {ref}, {_article(kinds[ref])} "
                                           f"(from ops[{ref}] ({ops[ref]['op']}))")
        kinds.append(makes)
    return kinds


def check_program(ops: Sequence[Mapping[str, Any]], expect: Sequence[Mapping[str, Any]]) -> list[str]:
    """Type-check a structurally valid program and its expectations; the values' kinds."""
    kinds = kinds_of(ops)
    for k, e in enumerate(expect):
        name = e["kind"]
        allowed = EXPECTATION_KINDS.get(name)
        where = f"expect[{k}] ({name})"
        if allowed is None:
            raise ProgramTypeError(where, "the expectation has no type signature")
        refs = [r for field, value in e.items() if field != "kind" for r in _refs(value)]
        seen = {kinds[r] for r in refs}
        bad = sorted(seen - allowed)
        if bad:
            raise ProgramTypeError(where, f"want {_want(allowed)}, got {_article(bad[0])}")
        if len(seen) > 1:
            raise ProgramTypeError(where, f"compares values of different kinds ({', '.join(sorted(seen))})")
    return kinds
