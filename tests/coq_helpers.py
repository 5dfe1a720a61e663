"""What the tests of the proofs share about Coq: whether coqc is here, and the rows a run of
``prove`` gives on this machine (without coqc the Coq rows are not run, by design)."""

from __future__ import annotations

import shutil

import pytest

import proofs
from proofs.obligation import CoqTheorem

HAVE_COQC = shutil.which("coqc") is not None
needs_coqc = pytest.mark.skipif(not HAVE_COQC, reason="coqc not found (apt-get install coq; CI installs it)")


def rows_run(only: str | None = None) -> list[str]:
    """The names ``prove --only only`` reports here, in order."""
    return [ob.name for ob in proofs.select(only) if HAVE_COQC or not isinstance(ob, CoqTheorem)]
