"""The replica store's marker, and the one question every writer asks before it writes: "does
this path lie inside a store?"

Why here (stdlib only): proofs (``--emit-smt2``), the checker (``--trace-dir``) and every
realstate output must refuse a path inside a store, and only spec is importable by all of them.
A store holds only its own fragments; anything else written into it, at any depth, is a foreign
entry.  The path is checked as written (every ancestor of its absolute form, so ``..`` cannot step
around a store) and as the file system resolves it (every ancestor of its real path, so a
symbolic link cannot lead into one).  A store created concurrently by someone else between the
check and the write is not caught (docs/THREATS.md)."""

from __future__ import annotations

import os

from spec.errors import InputError

MARKER_NAME = "CANONMERGE_STORE"
MARKER_TEXT = "canonmerge replica store 1\nfragments: <64 lowercase hex content id>.cmfrag\n"
MAX_MARKER_BYTES = 4096


def _ancestors(path: str) -> list[str]:
    chain = [path]
    while True:
        parent = os.path.dirname(chain[-1])
        if parent == chain[-1]:
            return chain
        chain.append(parent)


def is_store_directory(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` carries the store marker (whatever the marker holds)."""
    return os.path.lexists(os.path.join(os.fspath(directory), MARKER_NAME))


def enclosing_store(path: str | os.PathLike[str], *, include_self: bool = True) -> str | None:
    """The replica store directory that ``path`` is (``include_self``) or lies inside, at any
    depth, as written or as resolved; ``None`` when there is none."""
    text = os.fspath(path)
    candidates = [os.path.abspath(text)]
    try:
        candidates.append(os.path.realpath(text))
    except (OSError, RuntimeError, ValueError):  # a symlink loop: the written form is still checked
        pass
    for candidate in candidates:
        chain = _ancestors(candidate)
        for directory in chain if include_self else chain[1:]:
            if is_store_directory(directory):
                return directory
    return None


def refuse_inside_store(path: str | os.PathLike[str], what: str, *, include_self: bool = True) -> None:
    """An ``InputError`` naming ``what`` (the flag or argument) when ``path`` lies inside a store."""
    store = enclosing_store(path, include_self=include_self)
    if store is not None:
        text = os.fspath(path)
        own = os.path.abspath(text) == store or os.path.realpath(text) == store
        where = "is a replica store" if own else f"lies inside the replica store {store}"
        raise InputError(f"{text}: {what}: {where}; nothing is written into a store except by 'canonmerge "
                         f"store put' and 'store merge' (a store holds only its own fragments)")
