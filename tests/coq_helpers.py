"""What the tests of the proofs share about Coq: whether coqc is here, and the rows a run of
``prove`` gives on this machine (without coqc the Coq rows are not run, by design)."""

from __future__ import annotations

import shutil

import proofs
from proofs.obligation import CoqTheorem
from tests.optional import needs_coqc  # noqa: F401 - the Coq tests' marker and skip, re-exported

HAVE_COQC = shutil.which("coqc") is not None


def rows_run(only: str | None = None) -> list[str]:
    """The names ``prove --only only`` reports here, in order."""
    return [ob.name for ob in proofs.select(only) if HAVE_COQC or not isinstance(ob, CoqTheorem)]
