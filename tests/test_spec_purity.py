"""spec/ is the abstract model: it must import neither torch nor z3 (nor anything outside stdlib)."""

import ast
import pathlib
import subprocess
import sys

SPEC = pathlib.Path(__file__).resolve().parents[1] / "spec"


def test_importing_spec_loads_neither_torch_nor_z3():
    code = "import sys, spec, spec.laws; assert not {'torch','z3','numpy'} & set(sys.modules), sorted(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=SPEC.parent)


def test_spec_sources_import_only_stdlib_and_spec():
    for path in SPEC.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top == "spec" or top in sys.stdlib_module_names, f"{path.name} imports {name}"
