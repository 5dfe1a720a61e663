"""The mechanics a render is made of, gathered in one place so a test can swap exactly one.

``CANONICAL`` is what canonmerge runs.  The replay's negative tests (and ``realstate.mutants``)
replace a single field — the sort, the key, the frequencies, the re-encoding, the dedup — to show
the replay catches that planted bug.  Nothing else in realstate hard-codes these choices."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from realstate.fingerprint import Fingerprint
from realstate.fragment import Fragment, fragment_set
from realstate.rope import reencode_into
from spec import canonical_order


class FragmentCollection(Protocol):
    """What a replica state must offer: a join and its members."""

    def merge(self, other: Any) -> Any: ...

    def __iter__(self) -> Any: ...


@dataclass(frozen=True)
class Engine:
    name: str
    key: Callable[[Fragment], Any]
    sort: Callable[[Sequence[Fragment], Callable[[Fragment], Any]], list[Fragment]]
    frequencies: Callable[[Fingerprint], Sequence[float]]
    reencode: Callable[[torch.Tensor, torch.Tensor, int, Sequence[float]], None]  # (dest, keys, delta, inv_freq)
    collect: Callable[[Iterable[Fragment]], FragmentCollection]

    def order(self, fragments: Sequence[Fragment]) -> list[Fragment]:
        return self.sort(list(fragments), self.key)


def _full_key(fragment: Fragment) -> bytes:
    return fragment.order_key


def model_frequencies(fingerprint: Fingerprint) -> Sequence[float]:
    """The frequencies the loaded model uses, as recorded in the fingerprint."""
    return fingerprint.inv_freq


CANONICAL = Engine(
    name="canonical",
    key=_full_key,
    sort=canonical_order,
    frequencies=model_frequencies,
    reencode=reencode_into,
    collect=fragment_set,
)
