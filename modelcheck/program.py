"""Straight-line programs over a backend: what a counterexample trace replays.

A program is a list of operations, each producing one value numbered by its position (SSA):
build a fragment, copy it, make a singleton, merge, render, BagMerge, abstract, order.  A list of
expectations over those values says what the claim requires; replay re-runs the operations on a
backend and re-evaluates the expectations.  Schedules (``Expr``) compile into programs, so every
check that finds a violation can hand back the exact calls that expose it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from modelcheck.backend import Backend, FragmentDesc, Geometry
from modelcheck.schedules import Expr, Leaf
from spec import FragmentSet, canonical_order

# op name -> the operand fields it takes ("ref": one value, "refs": a list of values, "index")
OPS: dict[str, dict[str, str]] = {
    "fragment": {"index": "index"},
    "copy": {"of": "ref"},
    "singleton": {"of": "ref"},
    "merge": {"left": "ref", "right": "ref"},
    "render": {"of": "ref"},
    "bag": {"of": "refs"},
    "abstract": {"of": "ref"},
    "join_abstract": {"left": "ref", "right": "ref"},
    "render_order": {"of": "ref"},
    "canonical_order": {"of": "refs"},
    "order_of": {"of": "refs"},
    "oracle_mismatch": {"of": "ref", "fragments": "refs", "mode": "mode"},
}
# expectation kind -> its fields
EXPECTATIONS: dict[str, dict[str, str]] = {
    "equal": {"left": "ref", "right": "ref"},
    "one_of": {"value": "ref", "among": "refs"},
    "subset": {"left": "ref", "right": "ref"},
    "empty": {"value": "ref"},
}


def evaluate(backend: Backend, expr: Expr, objects: Mapping[int, Any]) -> Any:
    """The state a replica reaches by the schedule ``expr`` (copies are fresh objects)."""
    if isinstance(expr, Leaf):
        obj = objects[expr.index]
        return backend.singleton(obj if expr.copy == 0 else backend.copy(obj))
    return backend.merge(evaluate(backend, expr.left, objects), evaluate(backend, expr.right, objects))


class ProgramBuilder:
    """Appends operations; each method returns the number of the value it produces."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self.expect: list[dict[str, Any]] = []
        self._fragments: dict[int, int] = {}

    def _op(self, name: str, **fields: Any) -> int:
        self.ops.append({"op": name, **fields})
        return len(self.ops) - 1

    def fragment(self, index: int) -> int:
        if index not in self._fragments:
            self._fragments[index] = self._op("fragment", index=index)
        return self._fragments[index]

    def copy(self, of: int) -> int:
        return self._op("copy", of=of)

    def singleton(self, of: int) -> int:
        return self._op("singleton", of=of)

    def merge(self, left: int, right: int) -> int:
        return self._op("merge", left=left, right=right)

    def render(self, of: int) -> int:
        return self._op("render", of=of)

    def bag(self, of: Sequence[int]) -> int:
        return self._op("bag", of=list(of))

    def abstract(self, of: int) -> int:
        return self._op("abstract", of=of)

    def join_abstract(self, left: int, right: int) -> int:
        return self._op("join_abstract", left=left, right=right)

    def render_order(self, of: int) -> int:
        return self._op("render_order", of=of)

    def canonical_order(self, of: Sequence[int]) -> int:
        return self._op("canonical_order", of=list(of))

    def oracle_mismatch(self, of: int, fragments: Sequence[int], mode: str = "canonical") -> int:
        """The first difference between the backend's render of state ``of`` (``mode`` canonical)
        or BagMerge of ``fragments`` (``mode`` bag) and the oracle's render; "" if none."""
        return self._op("oracle_mismatch", of=of, fragments=list(fragments), mode=mode)

    def expect_empty(self, value: int) -> None:
        self.expect.append({"kind": "empty", "value": value})

    def order_of(self, of: Sequence[int]) -> int:
        """The engine's own sort applied to these fragments in this input order."""
        return self._op("order_of", of=list(of))

    def state(self, expr: Expr) -> int:
        """Compile a schedule: a leaf is a singleton of the fragment (or of a fresh copy)."""
        if isinstance(expr, Leaf):
            base = self.fragment(expr.index)
            return self.singleton(base if expr.copy == 0 else self.copy(base))
        return self.merge(self.state(expr.left), self.state(expr.right))

    def expect_equal(self, left: int, right: int) -> None:
        self.expect.append({"kind": "equal", "left": left, "right": right})

    def expect_one_of(self, value: int, among: Sequence[int]) -> None:
        self.expect.append({"kind": "one_of", "value": value, "among": list(among)})

    def expect_subset(self, left: int, right: int) -> None:
        self.expect.append({"kind": "subset", "left": left, "right": right})


def run_program(backend: Backend, geometry: Geometry, descs: Mapping[int, FragmentDesc],
                ops: Sequence[Mapping[str, Any]], base: int = 0) -> list[Any]:
    """Execute ``ops`` (already validated) and return every value; renders start at ``base``."""
    values: list[Any] = []
    descs_of: dict[int, FragmentDesc] = {}   # value number of a fragment op -> its description
    for op in ops:
        name = op["op"]
        get: Callable[[str], Any] = lambda field: values[op[field]]  # noqa: E731
        if name == "fragment":
            v: Any = backend.build(geometry, descs[op["index"]])
            descs_of[len(values)] = descs[op["index"]]
        elif name == "copy":
            v = backend.copy(get("of"))
        elif name == "singleton":
            v = backend.singleton(get("of"))
        elif name == "merge":
            v = backend.merge(get("left"), get("right"))
        elif name == "render":
            v = backend.render_digest(get("of"), base)
        elif name == "bag":
            v = backend.bag_digest([values[k] for k in op["of"]], base)
        elif name == "abstract":
            v = backend.abstract(get("of"))
        elif name == "join_abstract":
            v = get("left").merge(get("right"))
        elif name == "render_order":
            v = [cid.hex() for cid in backend.render_order(get("of"))]
        elif name == "canonical_order":
            frags = [values[k] for k in op["of"]]
            v = [backend.content_id(f).hex() for f in canonical_order(frags, backend.order_key)]
        elif name == "oracle_mismatch":
            from modelcheck.oracle_link import mismatch_text

            if any(k not in descs_of for k in op["fragments"]):
                raise ValueError("oracle_mismatch: every listed value must be a fragment op")
            frags = [values[k] for k in op["fragments"]]
            v = mismatch_text(backend, geometry, [descs_of[k] for k in op["fragments"]], get("of"), frags,
                              op["mode"], base)
        elif name == "order_of":
            v = [cid.hex() for cid in backend.order_of([values[k] for k in op["of"]])]
        else:  # validated before; kept as a guard
            raise ValueError(f"unknown op {name!r}")
        values.append(v)
    return values


def show(value: Any) -> str:
    """A value as text for a report or a trace: digests as-is, id sets and orders as hex lists."""
    if isinstance(value, str):
        return value
    if isinstance(value, FragmentSet):
        return "{" + ", ".join(cid.hex()[:16] for cid in sorted(value.ids())) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(str(x)[:16] for x in value) + "]"
    return repr(value)


def failed_expectations(expect: Sequence[Mapping[str, Any]], values: Sequence[Any]
                        ) -> list[tuple[Mapping[str, Any], str, str]]:
    """The expectations that do not hold, each with (expected, observed) as text."""
    failed = []
    for e in expect:
        if e["kind"] == "equal":
            left, right = values[e["left"]], values[e["right"]]
            if left != right:
                failed.append((e, show(left), show(right)))
        elif e["kind"] == "one_of":
            value, among = values[e["value"]], [values[k] for k in e["among"]]
            if value not in among:
                failed.append((e, " or ".join(show(a) for a in among), show(value)))
        elif e["kind"] == "empty":
            if values[e["value"]]:
                failed.append((e, "the oracle's bytes", str(values[e["value"]])))
        elif e["kind"] == "subset":
            left, right = values[e["left"]], values[e["right"]]
            if not left <= right:
                failed.append((e, f"{show(left)} <= {show(right)}", "not a subset"))
    return failed
