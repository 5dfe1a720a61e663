"""Mutants from mutmut's operators, as exact source patches (mutmut's *generation* only).

mutmut 3 plants its mutants behind trampolines and runs a test runner; the audit wants neither.
It borrows mutmut's node operators (``mutmut.mutation.mutators``) and its visitor's rules for
what not to touch (docstrings, type annotations, decorators, non-trivial default arguments),
and turns each node mutation into a ``Patch``: the lines the node spans, before and after,
widened with neighbouring lines until the old text occurs exactly once in the file.  The
operators are pinned by name (``audit.targets.OPERATORS``); an operator missing from the
installed mutmut is an error, never a silently smaller audit."""

from __future__ import annotations

import ast
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, WhitespaceInclusivePositionProvider
from mutmut.mutation import mutators
from mutmut.mutation.file_mutation import MutationVisitor
from mutmut.mutation.pragma_handling import IgnoredCode

from audit.mutants import Mutant, make_id
from audit.scratch import Patch
from audit.targets import OPERATORS, TARGETS, Target


class GenerationError(RuntimeError):
    """The pinned operators or targets do not match the installed mutmut or the source tree."""


def pinned_operators(names: Sequence[str] = OPERATORS) -> list[tuple[str, type, object]]:
    """(name, node type, operator function) for each pinned operator, in mutmut's table order."""
    table = [(op.__name__, node_type, op) for node_type, op in mutators.mutation_operators]
    known = {name for name, _, _ in table}
    missing = sorted(set(names) - known)
    if missing:
        raise GenerationError(f"mutmut {mutmut_version()} has no operator(s) {missing}; known: {sorted(known)}")
    return [row for row in table if row[0] in names]


def mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


@dataclass(frozen=True)
class Span:
    """A region of a file by 1-based inclusive lines."""

    first: int
    last: int
    name: str

    def holds(self, line: int) -> bool:
        return self.first <= line <= self.last


def _regions(tree: ast.Module) -> tuple[list[Span], list[Span]]:
    """(functions, classes and module-level constants with qualified names, raise statements)."""
    scopes: list[Span] = []
    raises: list[Span] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                scopes.append(Span(first, child.end_lineno or child.lineno, name))
                visit(child, name + ".")
            else:
                if prefix == "" and isinstance(child, (ast.Assign, ast.AnnAssign)):
                    targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                    named = [t.id for t in targets if isinstance(t, ast.Name)]
                    if named:  # a module-level constant is a scope of its own, named after it
                        scopes.append(Span(child.lineno, child.end_lineno or child.lineno, named[0]))
                if isinstance(child, ast.Raise):
                    raises.append(Span(child.lineno, child.end_lineno or child.lineno, "raise"))
                visit(child, prefix)

    visit(tree, "")
    return scopes, raises


def _enclosing(scopes: list[Span], line: int) -> str:
    """The innermost function or class holding ``line`` ("<module>" when none)."""
    inside = [s for s in scopes if s.holds(line)]
    return max(inside, key=lambda s: s.first).name if inside else "<module>"


class _Collector(MutationVisitor):
    """mutmut's visitor (its rules for what to skip), recording which operator made each mutation
    so that one pass over the file serves every operator."""

    def __init__(self, operators: list[tuple[str, type, object]]) -> None:
        super().__init__([(node_type, op) for _, node_type, op in operators], IgnoredCode(set(), set(), set()))
        self.made: list[tuple[str, cst.CSTNode, cst.CSTNode]] = []

    def _create_mutations(self, node: cst.CSTNode) -> None:
        for node_type, operator in self._operators:
            if isinstance(node, node_type):
                for mutated in operator(node):
                    self.made.append((operator.__name__, node, mutated))


def _offset(line_starts: list[int], line: int, column: int) -> int:
    return line_starts[line - 1] + column


def _unique_block(text: str, lines: list[str], first: int, last: int, start: int, end: int,
                  replacement: str) -> tuple[str, str] | None:
    """The whole lines ``first..last`` (0-based, inclusive) with ``text[start:end]`` replaced,
    widened by neighbouring lines until the old block occurs exactly once in ``text``."""
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line))
    while True:
        block_start, block_end = line_starts[first], line_starts[last + 1]
        old = text[block_start:block_end]
        if text.count(old) == 1:
            new = old[:start - block_start] + replacement + old[end - block_start:]
            return old, new
        if first == 0 and last == len(lines) - 1:
            return None
        first, last = max(0, first - 1), min(len(lines) - 1, last + 1)


def _short(code: str, limit: int = 70) -> str:
    one_line = " ".join(code.split())
    return one_line if len(one_line) <= limit else one_line[:limit - 3] + "..."


def mutants_of_file(root: Path, target: Target, operators: Sequence[str] = OPERATORS) -> list[Mutant]:
    """Every in-scope mutant the pinned operators make in ``target``'s file."""
    path = root / target.path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GenerationError(f"{target.path}: cannot read ({exc.strerror})") from None
    lines = text.splitlines(keepends=True)
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line))
    scopes, raises = _regions(ast.parse(text, filename=target.path))
    unknown = sorted(set(target.skip) - {s.name for s in scopes})
    if unknown:
        raise GenerationError(f"{target.path}: out-of-scope names not found in the file: {unknown}")
    wrapper = MetadataWrapper(cst.parse_module(text))
    module = wrapper.module
    positions = wrapper.resolve(WhitespaceInclusivePositionProvider)
    collector = _Collector(pinned_operators(operators))
    wrapper.visit(collector)
    found: list[Mutant] = []
    seen: set[tuple[str, str]] = set()
    for name, original, mutated in collector.made:
        where = positions.get(original)
        if where is None:
            continue
        line = where.start.line
        function = _enclosing(scopes, line)
        if any(r.holds(line) for r in raises) or target.out_of_scope(function):
            continue
        start = _offset(line_starts, where.start.line, where.start.column)
        end = _offset(line_starts, where.end.line, where.end.column)
        old_code, new_code = module.code_for_node(original), module.code_for_node(mutated)
        if text[start:end] != old_code or old_code == new_code:
            continue  # libcst could not place the node exactly: skip rather than guess
        block = _unique_block(text, lines, where.start.line - 1, where.end.line - 1, start, end, new_code)
        if block is None or block in seen:
            continue
        try:
            compile(text[:start] + new_code + text[end:], target.path, "exec", dont_inherit=True)
        except SyntaxError:
            continue
        seen.add(block)
        patches = (Patch(target.path, *block),)
        found.append(Mutant(make_id(target.path, line, name, patches), "mutmut", target.path, line, name,
                            patches, f"{_short(old_code)} -> {_short(new_code)}", function))
    return sorted(found, key=lambda m: (m.line, m.id))


def generate(root: Path, targets: Iterable[Target] = TARGETS,
             operators: Sequence[str] = OPERATORS) -> list[Mutant]:
    """The mutmut mutants of every target file, in file order then line order."""
    return [m for t in targets for m in mutants_of_file(root, t, operators)]


def sample(mutants: Sequence[Mutant], k: int, seed: int) -> list[Mutant]:
    """``k`` mutants drawn without replacement by a seeded generator over the id-sorted list, so
    the same seed and the same source draw the same mutants on every machine."""
    ordered = sorted(mutants, key=lambda m: m.id)
    if k >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, k), key=lambda m: m.id)
