"""The replay's arrival-order checks run modelcheck's search (``modelcheck.checks``) on a
universe of the agents' real fragments, so one piece of code decides C3, C4 and C6 for
``canonmerge check`` and ``canonmerge realstate`` alike.

The search sees realstate's backend on the replay's engine; every canonical render it asks for
goes through ``Replay.render``, so it is counted and kept for the oracle row like any other
render the replay made."""

from __future__ import annotations

from collections.abc import Sequence

from modelcheck.checks import APPENDED, HeldUniverse, Tallies, UniverseCheck
from realstate.evidence.checker_backend import RealstateBackend
from realstate.kernel.fragment import Fragment
from realstate.replay.context import Replay
from spec import Check


class ReplayBackend(RealstateBackend):
    """realstate's backend on the replay's engine, rendering through the replay: each state it
    renders holds the first ``n`` agents' fragments (the universe it is given), at base 0."""

    def __init__(self, replay: Replay, n: int) -> None:
        super().__init__(replay.engine)
        self.replay, self.n = replay, n

    def render_digest(self, state: object, base: int = 0) -> str:
        if base:
            raise ValueError(f"the replay renders its held universes at base 0, not {base}")
        return self.replay.digest(state, self.n)

    def render_digests(self, states: Sequence[object], base: int = 0) -> list[str]:
        """One render call per state, as the replay always renders real caches (a batch of
        real-size renders would hold them all at once)."""
        return [self.render_digest(s, base) for s in states]

    def bag_digest(self, fragments: Sequence[Fragment], base: int = 0) -> str:
        if base:
            raise ValueError(f"the replay renders its held universes at base 0, not {base}")
        return self.replay.bag_digest(fragments)


def search(r: Replay, n: int, *checks: Check, bag_copies: str = APPENDED) -> UniverseCheck:
    """modelcheck's search for ``checks`` on the universe of the first ``n`` fragments, with its
    own tallies (one re-delivered copy at most, as the replay's figures count)."""
    backend = ReplayBackend(r, n)
    universe = HeldUniverse(f"agents 1..{n}", tuple(r.fragments[:n]))
    return UniverseCheck(backend, universe, Tallies(), backend_name=backend.name, mutant=backend.mutant,
                         redeliveries=1, selected=checks, bag_copies=bag_copies)

