"""A mutant: one source-level bug as exact patches, with a stable id.

Generated mutants (mutmut's operators) and curated ones (``audit.curated``) share this record,
so the runner, the kill matrix and the equivalence list treat them alike.  The id names the
file, the line, the operator and a hash of the patch text, so it survives unrelated edits
elsewhere in the file's history only as long as the patched text and its line stay put — an
equivalence entry whose id is no longer generated is reported as stale, never silently reused."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from audit.scratch import Patch

# where a target file lay when its mutants were first judged: a file that moved keeps its mutants'
# hashes (and so its judgements in audit.equivalent) under the path it had then
PATH_OF_RECORD: dict[str, str] = {
    "realstate/kernel/engine.py": "realstate/engine.py",
    "realstate/kernel/fingerprint.py": "realstate/fingerprint.py",
    "realstate/kernel/fragment.py": "realstate/fragment.py",
    "realstate/kernel/fused.py": "realstate/fused.py",
    "realstate/kernel/order_value.py": "realstate/order_value.py",
    "realstate/kernel/render.py": "realstate/render.py",
    "realstate/kernel/rope.py": "realstate/rope.py",
    # the gossip explorer, split by job: its model, search, symmetry and verdict were one file
    "modelcheck/gossip_model.py": "modelcheck/gossip.py",
    "modelcheck/gossip_search.py": "modelcheck/gossip.py",
    "modelcheck/gossip_symmetry.py": "modelcheck/gossip.py",
    "modelcheck/gossip_verdict.py": "modelcheck/gossip.py",
    "modelcheck/gossip_controls.py": "modelcheck/gossip.py",
}


def path_of_record(path: str) -> str:
    """The path a file's mutant hashes are computed with (``PATH_OF_RECORD``)."""
    return PATH_OF_RECORD.get(path, path)


def patch_hash(patches: tuple[Patch, ...]) -> str:
    """8 hex digits of SHA-256 over the patches' paths (as of record) and texts (framed, so no
    two differ only by where one text ends and the next begins)."""
    h = hashlib.sha256()
    for p in patches:
        for part in (path_of_record(p.path), p.old, p.new):
            data = part.encode("utf-8")
            h.update(len(data).to_bytes(8, "big"))
            h.update(data)
    return h.hexdigest()[:8]


@dataclass(frozen=True)
class Mutant:
    """One bug to plant: ``origin`` is ``mutmut`` or ``curated``; ``operator`` the mutmut
    operator's name (or ``curated:<name>``); ``function`` the enclosing function, for reports."""

    id: str
    origin: str
    path: str
    line: int
    operator: str
    patches: tuple[Patch, ...]
    description: str
    function: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "origin": self.origin, "path": self.path, "line": self.line,
                "operator": self.operator, "function": self.function, "description": self.description,
                "patches": [{"path": p.path, "old": p.old, "new": p.new} for p in self.patches]}


def make_id(path: str, line: int, operator: str, patches: tuple[Patch, ...]) -> str:
    return f"{path}:{line}:{operator}:{patch_hash(patches)}"


def diff_text(patches: tuple[Patch, ...]) -> str:
    """The patches as a small unified-looking diff, for reports."""
    out = []
    for p in patches:
        out.append(f"--- {p.path}")
        out += [f"- {line}" for line in p.old.splitlines()]
        out += [f"+ {line}" for line in p.new.splitlines()]
    return "\n".join(out)
