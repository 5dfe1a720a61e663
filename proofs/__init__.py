"""Z3 proof obligations about the abstract model in ``spec`` (claims C1-C7).

One module per concern: ``fragment_set`` (C1, C2, C7), ``ordering`` (C5 and the key encoding),
``render`` (C3, C6), ``bag`` (C4); ``obligation`` is the type and the solver call, ``runner``
turns verdicts into a ``spec.PartReport``, ``smt2`` exports queries for a second solver."""

from proofs.catalog import OBLIGATIONS, names, select
from proofs.obligation import Goal, Obligation, Result, Verdict, discharge
from proofs.runner import DEFAULT_TIMEOUT_S, run

__all__ = ["DEFAULT_TIMEOUT_S", "Goal", "OBLIGATIONS", "Obligation", "Result", "Verdict",
           "discharge", "names", "run", "select"]
