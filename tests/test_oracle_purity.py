"""The oracle is independent of the product: it imports only the standard library and numpy, and
importing it loads none of torch, transformers, spec, realstate, modelcheck or proofs."""

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield ("." * node.level) + (node.module or "")


def test_oracle_sources_import_only_stdlib_numpy_and_the_oracle():
    paths = sorted((ROOT / "oracle").rglob("*.py"))
    assert len(paths) >= 6
    for path in paths:
        for name in _imports(path):
            top = name.split(".")[0]
            assert top in {"oracle", "numpy"} or top in sys.stdlib_module_names, f"{path.name} imports {name!r}"


def test_oracle_sources_never_import_dynamically():
    for path in (ROOT / "oracle").rglob("*.py"):
        text = path.read_text()
        assert "importlib" not in text and "__import__" not in text, path.name


def test_importing_the_oracle_loads_nothing_from_the_product():
    code = ("import sys, oracle, oracle.known_answers\n"
            "bad = {'torch', 'transformers', 'spec', 'realstate', 'modelcheck', 'proofs', 'canonmerge', 'z3'} & "
            "{m.split('.')[0] for m in sys.modules}\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
