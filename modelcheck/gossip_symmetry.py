"""The symmetry reduction of the gossip search: one state per orbit of replica relabellings.

Replicas are interchangeable except for the fragments they will still publish: a relabelling π
of the replicas maps a node onto another when π(home(f)) = home(f) for every fragment f not yet
published.  The search keeps one node per orbit under those relabellings."""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Hashable

from modelcheck.gossip_model import GossipConfig, Node, plain_key


class Symmetry:
    """The visited-set key of a node, with or without the reduction."""

    def __init__(self, config: GossipConfig) -> None:
        self.config = config
        self._published: dict[frozenset[int], tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = {}

    def canonical(self, n: Node) -> Hashable:
        """The visited-set key: the node itself (message pools as multisets), or with symmetry
        its orbit under the replica relabellings that keep every unpublished fragment's home."""
        if self.config.symmetry:
            return self.orbit_key(n)
        return plain_key(n)

    def published_fields(self, published: frozenset[int]) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
        """The published fragments as the key writes them (count, then each), and per replica
        the fragments homed there and not yet published (count, then each)."""
        got = self._published.get(published)
        if got is None:
            lists: list[list[int]] = [[] for _ in range(self.config.replicas)]
            for f in range(self.config.fragments):
                if f not in published:
                    lists[self.config.home(f)].append(f)
            got = self._published[published] = ((len(published), *sorted(published)),
                                                tuple((len(x), *x) for x in lists))
        return got

    def orbit_key(self, n: Node) -> bytes:
        """A key equal for two nodes iff a relabelling π of the replicas maps one onto the other
        with π(home(f)) = home(f) for every fragment f not yet published.

        Each replica gets a signature that no relabelling changes (its state, the unpublished
        fragments homed there, the messages it sent and is sent, by kind and snapshot); the
        replicas are listed in signature order, and only the orders among replicas with equal
        signatures are tried, keeping the least encoding of the messages' endpoints.  The key is
        those fields written out as integers, every list after its length (so two different
        keys never write the same integers), packed into bytes: a tenth of the memory of the
        nested tuples, and the search keeps one per state."""
        r_count = self.config.replicas
        marks = n.marks
        published, homes = self.published_fields(n.published)
        if not n.flight and not n.dropped:  # no endpoints to relabel: the signatures are the key
            return array("q", [*published, 0, *itertools.chain.from_iterable(
                sorted([(marks[r], *homes[r], 0, 0) for r in range(r_count)]))]).tobytes()
        sent: list[list[tuple[int, int]]] = [[] for _ in range(r_count)]
        got: list[list[tuple[int, int]]] = [[] for _ in range(r_count)]
        messages = []
        for kind, pool in ((0, n.flight), (1, n.dropped)):
            for (src, dst, mark), _ in pool:
                sent[src].append((kind, mark))
                got[dst].append((kind, mark))
                messages.append((kind, src, dst, mark))
        sig = []
        for r in range(r_count):
            out_r, in_r = sorted(sent[r]), sorted(got[r])
            sig.append((marks[r], *homes[r], len(out_r), *itertools.chain.from_iterable(out_r),
                        len(in_r), *itertools.chain.from_iterable(in_r)))
        order = sorted(range(r_count), key=sig.__getitem__)
        groups: list[list[int]] = []
        for r in order:
            if groups and sig[groups[-1][0]] == sig[r]:
                groups[-1].append(r)
            else:
                groups.append([r])
        best: list[tuple[int, int, int, int]] | None = None
        if len(groups) == r_count:  # every signature differs: one order to try
            label = [0] * r_count
            for new, old in enumerate(order):
                label[old] = new
            best = sorted([(kind, label[src], label[dst], mark) for kind, src, dst, mark in messages])
        else:
            for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
                label = [0] * r_count
                for new, old in enumerate(r for g in choice for r in g):
                    label[old] = new
                encoded = sorted([(kind, label[src], label[dst], mark) for kind, src, dst, mark in messages])
                if best is None or encoded < best:
                    best = encoded
        return array("q", [*published, len(messages), *itertools.chain.from_iterable(best or ()),
                           *itertools.chain.from_iterable(sig[r] for r in order)]).tobytes()
