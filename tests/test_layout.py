"""The house rules, in one table: which room may import what, no import circles (function-level
imports included), files of one job under 500 lines, and module names that mean one thing.

Every project import is read from the sources (``ast``, module level and inside functions); a room's
rule lists the project rooms and third-party packages it may use.  The runtime checks then import
the pure rooms in a fresh interpreter and look at what got loaded."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("spec", "oracle", "proofs", "modelcheck", "realstate", "canonmerge", "audit")
ANY = "*"

# room -> (project rooms it may import, third-party packages it may import).  The longest room
# prefix that names a module decides; a room may always import itself.
RULES: dict[str, tuple[frozenset[str], frozenset[str] | str]] = {
    "spec": (frozenset(), frozenset()),
    "oracle": (frozenset(), frozenset({"numpy"})),
    "proofs": (frozenset({"spec"}), frozenset({"z3"})),
    "modelcheck": (frozenset({"spec", "oracle"}), frozenset({"hypothesis", "ray", "numpy"})),
    "realstate": (frozenset(), frozenset()),  # the public face: names resolved lazily by string
    "realstate.kernel": (frozenset({"spec"}), frozenset({"torch", "numpy", "numba", "llvmlite", "transformers"})),
    "realstate.models": (frozenset({"spec", "realstate.kernel"}),
                         frozenset({"torch", "numpy", "transformers", "safetensors", "gguf"})),
    "realstate.exchange": (frozenset({"spec", "realstate.kernel"}),
                           frozenset({"torch", "numpy", "safetensors", "boto3", "botocore"})),
    "realstate.evidence": (frozenset({"spec", "oracle", "modelcheck", "realstate.kernel", "realstate.composition"}),
                           frozenset({"torch", "numpy"})),
    "realstate.composition": (frozenset({"spec", "realstate.kernel", "realstate.models"}),
                              frozenset({"torch", "transformers"})),
    "realstate.replay": (frozenset({"spec", "oracle", "modelcheck", "realstate.kernel", "realstate.models",
                                    "realstate.evidence", "realstate.composition"}), frozenset({"torch", "numpy", "transformers"})),
    "realstate.processes": (frozenset({"spec", "realstate.kernel", "realstate.models", "realstate.exchange",
                                       "realstate.evidence"}), ANY),
    "realstate.bench": (frozenset({"spec", "realstate.kernel", "realstate.models"}), ANY),
    "audit": (frozenset({"spec"}), ANY),
    "canonmerge": (frozenset(PROJECT) | {"realstate.kernel", "realstate.models", "realstate.exchange",
                                          "realstate.evidence", "realstate.replay", "realstate.processes",
                                          "realstate.composition",
                                          "realstate.bench"}, ANY),
}
# rooms only the command line (and tests, benchmarks) may import
CLI_ONLY = ("realstate.bench", "realstate.processes", "audit")

# module names used by more than one module, each with the one job all of them share
SHARED_NAMES = {
    "__init__.py": "a package",
    "__main__.py": "python -m entry point",
    "properties.py": "the checks of one room, registered under their claims (kept apart from the search)",
    "settings.py": "one command's settings: plain data, validated, torch-free",
    "runner.py": "runs one part (proofs, the checker, the benchmark) and returns its report",
    "render.py": "the render: the product's (realstate.kernel), the independent reference's (oracle), "
                 "its proofs (proofs)",
    "ordering.py": "the ordering contract (spec) and its proofs (proofs)",
    "fragment_set.py": "the FragmentSet CvRDT (spec) and its proofs (proofs)",
    "report.py": "a part's report record (spec) or the benchmark's JSON document",
    "summary.py": "a summary of a finished run (audit, bench)",
    "tables.py": "the human tables of a part's report (audit, replay); nothing in them decides a result",
    # canonmerge/commands/<name>.py is the command <name>: one file per subcommand
    "claims.py": "spec's claim registry; the claims subcommand", "fragment.py": "the product's Fragment; the "
    "fragment subcommand", "realstate.py": "the realstate subcommand", "store.py": "the store subcommand",
    "audit.py": "the audit subcommand", "bench.py": "the bench subcommand", "soak.py": "the soak subcommand",
    "check.py": "the check subcommand", "replicate.py": "the replicate subcommand", "prove.py": "the prove "
    "subcommand",
}
MAX_LINES = 500
DATA_TABLES = {"audit/curated.py", "audit/equivalent.py"}  # lists of planted bugs and of judgements


def sources() -> list[Path]:
    return sorted(p for room in PROJECT for p in (ROOT / room).rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sources()}


def imported(path: Path) -> list[tuple[str, int]]:
    """Every module the file imports (``from a import b`` counts as ``a.b`` where that is a
    module of the project), with the line."""
    found = []
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                found.append((full if full in MODULES else base, node.lineno))
    return found


def room_of(module: str) -> str:
    best = ""
    for room in RULES:
        if (module == room or module.startswith(room + ".")) and len(room) > len(best):
            best = room
    return best


def test_every_room_imports_only_what_its_rule_allows():
    bad = []
    for module, path in MODULES.items():
        room = room_of(module)
        rooms, third = RULES[room]
        for name, line in imported(path):
            top = name.split(".")[0]
            if top in PROJECT:
                target = room_of(name)
                if target != room and target not in rooms:
                    bad.append(f"{path.relative_to(ROOT)}:{line} ({room}) imports {name} ({target})")
            elif top not in sys.stdlib_module_names and top != "__future__" and third != ANY and top not in third:
                bad.append(f"{path.relative_to(ROOT)}:{line} ({room}) imports third-party {name}")
    assert not bad, "\n".join(bad)


def test_only_the_command_line_imports_the_bench_the_processes_and_the_audit():
    bad = []
    for module, path in MODULES.items():
        for name, line in imported(path):
            target = room_of(name)
            if target in CLI_ONLY and room_of(module) not in (target, "canonmerge"):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not bad, "\n".join(bad)


def test_there_is_no_import_circle():
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for name, _ in imported(path):
            if name in MODULES and name != module:
                graph[module].add(name)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in list(MODULES):
        if v not in index:
            visit(v)
    assert not circles, circles


def test_the_circle_finder_sees_a_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A check that cannot fail is a defect: two modules importing each other inside functions."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def f():\n    import spec.b_twin\n")
    b.write_text("def g():\n    import spec.a_twin\n")
    fake = {"spec.a_twin": a, "spec.b_twin": b}
    monkeypatch.setattr(sys.modules[__name__], "MODULES", fake)
    monkeypatch.setattr(sys.modules[__name__], "module_name",
                        lambda p: {a: "spec.a_twin", b: "spec.b_twin"}[p])
    with pytest.raises(AssertionError):
        test_there_is_no_import_circle()


def test_no_source_file_is_longer_than_500_lines():
    long = [f"{p.relative_to(ROOT)}: {n}" for p in sources()
            if (n := len(p.read_text().splitlines())) > MAX_LINES and str(p.relative_to(ROOT)) not in DATA_TABLES]
    assert not long, long


def test_a_module_name_used_twice_names_one_job():
    by_name: dict[str, list[str]] = defaultdict(list)
    for p in sources():
        by_name[p.name].append(str(p.relative_to(ROOT)))
    repeated = {name: paths for name, paths in by_name.items() if len(paths) > 1 and name not in SHARED_NAMES}
    assert not repeated, repeated


def test_no_module_shadows_a_builtin():
    import builtins

    shadowing = [str(p.relative_to(ROOT)) for p in sources()
                 if p.stem in dir(builtins)]
    assert not shadowing, shadowing


@pytest.mark.parametrize("modules, forbidden", [
    ("spec, spec.laws, spec.index", {"torch", "z3", "numpy"}),
    ("oracle, oracle.known_answers", {"torch", "transformers", "spec", "realstate", "modelcheck", "proofs",
                                      "canonmerge", "z3"}),
    ("modelcheck, modelcheck.checks, modelcheck.gossip, modelcheck.trace_replay, modelcheck.properties, "
     "modelcheck.reference, modelcheck.universes, modelcheck.trace, modelcheck.shards, modelcheck.executors",
     {"torch", "realstate", "hypothesis", "transformers", "ray"}),
    ("realstate.replay.settings, realstate.models.geometry, realstate.bench.settings", {"torch", "transformers"}),
])
def test_importing_a_pure_room_loads_nothing_it_must_not(modules: str, forbidden: set[str]):
    code = (f"import sys, {modules}\n"
            f"bad = {sorted(forbidden)!r} and set({sorted(forbidden)!r}) & {{m.split('.')[0] for m in sys.modules}}\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_oracle_never_imports_dynamically():
    """A string import would slip past the rule above: the independent reference has none."""
    for path in (ROOT / "oracle").rglob("*.py"):
        text = path.read_text()
        assert "importlib" not in text and "__import__" not in text, path.name


def test_the_check_command_imports_torch_and_realstate_only_when_it_runs():
    """``canonmerge check --help`` and the parser stay fast: no top-level import of the product."""
    tree = ast.parse((ROOT / "canonmerge" / "commands" / "check.py").read_text())
    top = {(a.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
           for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
           for a in (node.names if isinstance(node, ast.Import) else [node])}
    assert not top & {"realstate", "torch", "transformers", "hypothesis"}


def test_the_rule_checker_sees_a_forbidden_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A check that cannot fail is a defect: the kernel importing the replay is refused."""
    bad = ROOT / "realstate" / "kernel" / "bad_for_test.py"  # never written: only read through MODULES
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "from realstate.replay.context import Replay\n")
    monkeypatch.setattr(sys.modules[__name__], "MODULES", {"realstate.kernel.bad": bad})
    monkeypatch.setattr(sys.modules[__name__], "module_name", lambda p: "realstate.kernel.bad")
    with pytest.raises(AssertionError, match="imports realstate.replay.context"):
        test_every_room_imports_only_what_its_rule_allows()
