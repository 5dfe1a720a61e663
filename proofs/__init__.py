"""Z3 proof obligations about the abstract model in ``spec`` (claims C1-C7), linked to its code.

One module per concern: ``fragment_set`` (C1, C2, C7), ``ordering`` (C5 and the key encoding),
``render`` (C3 by induction over the length, C6), ``bag`` (C4), ``links`` (bounded-exhaustive
runs of ``spec``'s merge, key and canonical order against the encodings); ``obligation`` holds
the types, ``discharge`` and ``vacuity`` the solver calls, ``runner`` turns verdicts into a
``spec.PartReport``, ``smt2`` exports queries for a second solver."""

from proofs.catalog import OBLIGATIONS, names, select
from proofs.discharge import discharge
from proofs.obligation import CodeCheck, Goal, Obligation, Premise, Result, Verdict, premise
from proofs.runner import DEFAULT_TIMEOUT_S, run

__all__ = ["DEFAULT_TIMEOUT_S", "CodeCheck", "Goal", "OBLIGATIONS", "Obligation", "Premise", "Result",
           "Verdict", "discharge", "names", "premise", "run", "select"]
