"""modelcheck imports only spec and the stdlib (Hypothesis in the randomized mode alone, Ray in
the Ray engine alone, imported when that engine runs); the check command imports realstate only
lazily, inside ``_backend()``."""

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _imports(path, top_level_only=False):
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module or ""


def test_modelcheck_sources_import_only_stdlib_spec_and_hypothesis_for_randomized():
    """The independent oracle (stdlib + numpy, no product code) is the one other dependency, and
    only ``oracle_link`` imports it."""
    for path in (ROOT / "modelcheck").glob("*.py"):
        allowed = {"spec", "modelcheck"} | ({"hypothesis"} if path.name == "randomized.py" else set()) \
            | ({"oracle"} if path.name == "oracle_link.py" else set()) \
            | ({"ray"} if path.name == "executors.py" else set())
        for name in _imports(path):
            top = name.split(".")[0]
            assert top in allowed or top in sys.stdlib_module_names, f"{path.name} imports {name}"


def test_importing_modelcheck_loads_no_torch_realstate_or_hypothesis():
    code = ("import sys, modelcheck, modelcheck.checks, modelcheck.gossip, modelcheck.trace_replay, "
            "modelcheck.properties, modelcheck.reference, modelcheck.universes, modelcheck.trace, "
            "modelcheck.shards, modelcheck.executors\n"
            "bad = {'torch', 'realstate', 'hypothesis', 'transformers', 'ray'} & "
            "{m.split('.')[0] for m in sys.modules}\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_check_command_imports_realstate_lazily():
    path = ROOT / "canonmerge" / "commands" / "check.py"
    top = {name.split(".")[0] for name in _imports(path, top_level_only=True)}
    assert not top & {"realstate", "torch", "transformers", "hypothesis"}
