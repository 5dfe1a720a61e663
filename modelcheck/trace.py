"""Counterexample traces: a self-contained JSON record of one violation, and its strict loader.

A trace carries everything replay needs — the fragments as bit patterns (with the universe name
and indices they came from), the mutant planted, the operations in order and what the claim
expects of their results — so it replays on another machine or after the universes change.
Loading validates every field and reports the first problem by its path; nothing is evaluated
or unpickled."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from modelcheck.backend import DTYPE_BITS, FragmentDesc, Geometry
from modelcheck.program import EXPECTATIONS, OPS
from modelcheck.program_types import ProgramTypeError, check_program
from spec import CLAIMS, FormatError, InputError
from spec.bounded import read_json
from spec.output_files import write_output
from spec.store_marker import refuse_inside_store

# what a trace records as observed when its program, run again at trace time, does not fail:
# a counterexample that does not reproduce (the arrival canary's traces must never say so)
NOT_REPRODUCED = "(did not reproduce)"

FORMAT = "canonmerge-modelcheck-trace"
VERSION = 1
KINDS = ("program", "gossip")
GOSSIP_OPS: dict[str, tuple[str, ...]] = {
    "publish": ("replica", "fragment"),
    "send": ("src", "dst"),
    "deliver": ("msg",),
    "duplicate": ("msg",),
    "drop": ("msg",),
    "resend": ("msg",),
}
GOSSIP_EXPECTATIONS: dict[str, tuple[str, ...]] = {
    "same_set_same_render": ("replicas",),
    "converged": (),
}
MAX_TRACE_BYTES = 16 * 1024 * 1024
_REQUIRED = ("format", "version", "kind", "check", "claim", "backend", "mutant", "universe",
             "geometry", "fragments", "descs", "ops", "expect", "expected", "observed")
_OPTIONAL = ("note", "gossip", "base", "iteration")
ITERATIONS = ("id", "arrival", "shuffled")
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def geometry_to_json(g: Geometry) -> dict[str, Any]:
    return {"layers": g.layers, "kv_heads": g.kv_heads, "head_dim": g.head_dim, "dtype": g.dtype,
            "inv_freq": list(g.inv_freq)}


def desc_to_json(d: FragmentDesc) -> dict[str, Any]:
    return {"start": d.start, "keys": d.keys, "values": d.values}


def make_trace(*, kind: str, check: str, claim: str, backend: str, mutant: str | None,
               universe: str, geometry: Geometry, fragments: dict[int, FragmentDesc],
               ops: list[dict[str, Any]], expect: list[dict[str, Any]], expected: str,
               observed: str, note: str = "", gossip: dict[str, Any] | None = None,
               base: int = 0, iteration: str = "id") -> dict[str, Any]:
    indices = sorted(fragments)
    trace: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "kind": kind, "check": check, "claim": claim,
        "backend": backend, "mutant": mutant, "universe": universe,
        "geometry": geometry_to_json(geometry), "fragments": indices,
        "descs": [desc_to_json(fragments[i]) for i in indices],
        "ops": ops, "expect": expect, "expected": expected, "observed": observed, "note": note,
        "base": base, "iteration": iteration,
    }
    if gossip is not None:
        trace["gossip"] = gossip
    # plain JSON values only, and what we write must be what we accept
    return validate(json.loads(json.dumps(trace, allow_nan=False)))


def save(trace: dict[str, Any], directory: Path) -> Path:
    """Write ``trace`` under ``directory`` with a name that says what it is; returns the path.
    Written atomically and never into a replica store, at any depth (``spec.output_files``)."""
    refuse_inside_store(directory, "trace directory")  # before the directory is made
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{directory}: cannot create the trace directory: {exc.strerror or exc}") from None
    text = json.dumps(trace, indent=1, allow_nan=False)
    slug = re.sub(r"[^a-z0-9]+", "-", f"{trace['claim']} {trace['check']}".lower()).strip("-")
    tag = hashlib.sha256(text.encode()).hexdigest()[:10]
    path = directory / f"{slug}-{trace['universe']}-{trace['mutant'] or 'no-mutant'}-{tag}.json"
    write_output(path, (text + "\n").encode("utf-8"), "trace")
    return path


# --- strict loading ---------------------------------------------------------------------------

def _fail(where: str, what: str) -> InputError:
    return InputError(f"malformed trace: {where}: {what}")


def _int(value: Any, where: str, lo: int = 0, hi: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(where, f"want an integer, got {type(value).__name__}")
    if value < lo or (hi is not None and value > hi):
        raise _fail(where, f"{value} is out of range [{lo}, {hi if hi is not None else '...'}]")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _fail(where, f"want a string, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(where, f"want a list, got {type(value).__name__}")
    return value


def _object(value: Any, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    if not isinstance(value, dict):
        raise _fail(where, f"want an object, got {type(value).__name__}")
    missing = [k for k in required if k not in value]
    extra = [k for k in value if k not in required and k not in optional]
    if missing:
        raise _fail(where, f"missing field(s) {', '.join(missing)}")
    if extra:
        raise _fail(where, f"unknown field(s) {', '.join(map(str, extra))}")
    return value


def _geometry(value: Any) -> Geometry:
    g = _object(value, "geometry", ("layers", "kv_heads", "head_dim", "dtype", "inv_freq"))
    layers = _int(g["layers"], "geometry.layers", 1, 1024)
    heads = _int(g["kv_heads"], "geometry.kv_heads", 1, 1024)
    dim = _int(g["head_dim"], "geometry.head_dim", 2, 4096)
    dtype = _str(g["dtype"], "geometry.dtype")
    if dtype not in DTYPE_BITS:
        raise _fail("geometry.dtype", f"{dtype!r} is not one of {', '.join(DTYPE_BITS)}")
    freqs = _list(g["inv_freq"], "geometry.inv_freq")
    for i, f in enumerate(freqs):
        if not isinstance(f, float) or not math.isfinite(f):
            raise _fail(f"geometry.inv_freq[{i}]", "want a finite float")
    try:
        return Geometry(layers, heads, dim, dtype, tuple(freqs))
    except ValueError as exc:
        raise _fail("geometry", str(exc)) from None


def _bits_tensor(value: Any, where: str, g: Geometry, tokens: int | None) -> tuple:
    top = (1 << DTYPE_BITS[g.dtype]) - 1
    layers = _list(value, where)
    if len(layers) != g.layers:
        raise _fail(where, f"want {g.layers} layers, got {len(layers)}")
    out = []
    for li, layer in enumerate(_list(x, f"{where}[{i}]") for i, x in enumerate(layers)):
        if len(layer) != g.kv_heads:
            raise _fail(f"{where}[{li}]", f"want {g.kv_heads} heads, got {len(layer)}")
        heads = []
        for hi, head in enumerate(layer):
            head = _list(head, f"{where}[{li}][{hi}]")
            if not head or (tokens is not None and len(head) != tokens):
                raise _fail(f"{where}[{li}][{hi}]", f"want {tokens or 'at least 1'} token(s), got {len(head)}")
            tokens = len(head)
            vecs = []
            for ti, vec in enumerate(head):
                vec = _list(vec, f"{where}[{li}][{hi}][{ti}]")
                if len(vec) != g.head_dim:
                    raise _fail(f"{where}[{li}][{hi}][{ti}]", f"want {g.head_dim} elements, got {len(vec)}")
                vecs.append(tuple(_int(x, f"{where}[{li}][{hi}][{ti}][{di}]", 0, top)
                                  for di, x in enumerate(vec)))
            heads.append(tuple(vecs))
        out.append(tuple(heads))
    return tuple(out)


def _desc(value: Any, where: str, g: Geometry) -> FragmentDesc:
    d = _object(value, where, ("start", "keys", "values"))
    start = _int(d["start"], f"{where}.start", 0, 1 << 40)
    keys = _bits_tensor(d["keys"], f"{where}.keys", g, None)
    values = _bits_tensor(d["values"], f"{where}.values", g, len(keys[0][0]))
    return FragmentDesc(start, keys, values)


def _ref(value: Any, where: str, before: int) -> int:
    """A value number that refers back: only the ``before`` values computed so far exist."""
    _int(value, where)
    if value >= before:
        raise _fail(where, f"refers to value {value}, but only {before} value(s) exist at this point")
    return value


def _program_ops(ops: list[Any], fragments: set[int]) -> None:
    for k, op in enumerate(ops):
        where = f"ops[{k}]"
        if not isinstance(op, dict) or _str(op.get("op"), f"{where}.op") not in OPS:
            raise _fail(f"{where}.op", f"want one of {', '.join(OPS)}")
        fields = OPS[op["op"]]
        _object(op, where, ("op", *fields))
        for name, kind in fields.items():
            if kind == "index":
                if _int(op[name], f"{where}.{name}") not in fragments:
                    raise _fail(f"{where}.{name}", f"fragment {op[name]} is not among the trace's fragments")
            elif kind == "ref":
                _ref(op[name], f"{where}.{name}", k)
            elif kind == "mode":
                if _str(op[name], f"{where}.{name}") not in ("canonical", "bag"):
                    raise _fail(f"{where}.{name}", "want canonical or bag")
            else:
                refs = _list(op[name], f"{where}.{name}")
                if not refs:
                    raise _fail(f"{where}.{name}", "want at least one value")
                for j, r in enumerate(refs):
                    _ref(r, f"{where}.{name}[{j}]", k)


def _program_expect(expect: list[Any], count: int) -> None:
    for k, e in enumerate(expect):
        where = f"expect[{k}]"
        if not isinstance(e, dict) or _str(e.get("kind"), f"{where}.kind") not in EXPECTATIONS:
            raise _fail(f"{where}.kind", f"want one of {', '.join(EXPECTATIONS)}")
        fields = EXPECTATIONS[e["kind"]]
        _object(e, where, ("kind", *fields))
        for name, kind in fields.items():
            refs = [e[name]] if kind == "ref" else _list(e[name], f"{where}.{name}")
            for r in refs:
                _ref(r, f"{where}.{name}", count)


def _gossip_ops(ops: list[Any], fragments: set[int], replicas: int) -> None:
    sends: set[int] = set()
    for k, op in enumerate(ops):
        where = f"ops[{k}]"
        if not isinstance(op, dict) or _str(op.get("op"), f"{where}.op") not in GOSSIP_OPS:
            raise _fail(f"{where}.op", f"want one of {', '.join(GOSSIP_OPS)}")
        _object(op, where, ("op", *GOSSIP_OPS[op["op"]]))
        for name in GOSSIP_OPS[op["op"]]:
            if name in ("replica", "src", "dst"):
                _int(op[name], f"{where}.{name}", 0, replicas - 1)
            elif name == "fragment":
                if _int(op[name], f"{where}.{name}") not in fragments:
                    raise _fail(f"{where}.fragment", f"fragment {op[name]} is not among the trace's fragments")
            elif _int(op[name], f"{where}.msg") not in sends:
                raise _fail(f"{where}.msg", f"{op[name]} is not the number of an earlier send")
        if op["op"] == "send":
            if op["src"] == op["dst"]:
                raise _fail(where, "a replica does not send to itself")
            sends.add(k)


def _gossip_expect(expect: list[Any], replicas: int) -> None:
    if len(expect) != 1:
        raise _fail("expect", "a gossip trace has exactly one expectation")
    e = expect[0]
    if not isinstance(e, dict) or _str(e.get("kind"), "expect[0].kind") not in GOSSIP_EXPECTATIONS:
        raise _fail("expect[0].kind", f"want one of {', '.join(GOSSIP_EXPECTATIONS)}")
    _object(e, "expect[0]", ("kind", *GOSSIP_EXPECTATIONS[e["kind"]]))
    if e["kind"] == "same_set_same_render":
        pair = _list(e["replicas"], "expect[0].replicas")
        if len(pair) != 2 or pair[0] == pair[1]:
            raise _fail("expect[0].replicas", "want two different replicas")
        for j, r in enumerate(pair):
            _int(r, f"expect[0].replicas[{j}]", 0, replicas - 1)


def validate(data: Any) -> dict[str, Any]:
    """Check every field of a decoded trace; returns it unchanged or raises ``InputError``."""
    t = _object(data, "trace", _REQUIRED, _OPTIONAL)
    if t["format"] != FORMAT:
        raise _fail("format", f"want {FORMAT!r}, got {t['format']!r}")
    if t["version"] != VERSION or isinstance(t["version"], bool):
        raise _fail("version", f"this canonmerge reads version {VERSION}, got {t['version']!r}")
    if _str(t["kind"], "kind") not in KINDS:
        raise _fail("kind", f"want one of {', '.join(KINDS)}")
    for name in ("check", "backend", "universe", "expected", "observed", *(("note",) if "note" in t else ())):
        _str(t[name], name)
    if _str(t["claim"], "claim") not in CLAIMS:
        raise _fail("claim", f"{t['claim']!r} is not one of {', '.join(CLAIMS)}")
    if t["mutant"] is not None and not _NAME.fullmatch(_str(t["mutant"], "mutant")):
        raise _fail("mutant", "want a planted-bug name (lowercase letters, digits, '-', at most 64)")
    if "base" in t:
        _int(t["base"], "base", 0, 1 << 40)
    if "iteration" in t and _str(t["iteration"], "iteration") not in ITERATIONS:
        raise _fail("iteration", f"want one of {', '.join(ITERATIONS)}")
    g = _geometry(t["geometry"])
    indices = [_int(i, f"fragments[{k}]", 0, 1 << 20) for k, i in enumerate(_list(t["fragments"], "fragments"))]
    if len(set(indices)) != len(indices):
        raise _fail("fragments", "an index is listed twice")
    descs = _list(t["descs"], "descs")
    if len(descs) != len(indices):
        raise _fail("descs", f"want one desc per fragment index ({len(indices)}), got {len(descs)}")
    for k, d in enumerate(descs):
        _desc(d, f"descs[{k}]", g)
    ops, expect = _list(t["ops"], "ops"), _list(t["expect"], "expect")
    if t["kind"] == "program":
        if "gossip" in t:
            raise _fail("gossip", "only a gossip trace has this field")
        _program_ops(ops, set(indices))
        if not expect:
            raise _fail("expect", "want at least one expectation")
        _program_expect(expect, len(ops))
        try:  # before anything runs: a step on the wrong kind of value is no claim's failure
            check_program(ops, expect)
        except ProgramTypeError as exc:
            raise InputError(f"mistyped program: {exc}") from None
    else:
        gs = _object(t.get("gossip"), "gossip", ("replicas",))
        replicas = _int(gs["replicas"], "gossip.replicas", 2, 64)
        _gossip_ops(ops, set(indices), replicas)
        _gossip_expect(expect, replicas)
    return t


def load(path: Path) -> dict[str, Any]:
    """Read and validate a trace file (``InputError`` naming the file for anything that is not a
    valid trace: unreadable, special, oversized, not UTF-8, not JSON, nested absurdly, malformed).
    Read with ``spec.bounded``: a regular file of at most ``MAX_TRACE_BYTES``, strict JSON."""
    where = str(path)
    try:
        decoded = read_json(path, MAX_TRACE_BYTES, source=where)
    except FormatError as exc:
        raise InputError(f"{where}: cannot read trace: {exc.field}: {exc.problem}") from None
    try:
        return validate(decoded)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def fragments_of(trace: dict[str, Any]) -> tuple[Geometry, dict[int, FragmentDesc]]:
    """The geometry and the fragments (by universe index) a validated trace carries."""
    g = _geometry(trace["geometry"])
    return g, {i: _desc(d, f"descs[{k}]", g) for k, (i, d) in enumerate(zip(trace["fragments"], trace["descs"]))}
