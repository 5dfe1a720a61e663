"""The symmetry reduction of the gossip search: one state per orbit of replica relabellings.

Replicas are interchangeable except for the fragments they will still publish: a relabelling π
of the replicas maps a node onto another when π(home(f)) = home(f) for every fragment f not yet
published.  The search keeps one node per orbit under those relabellings."""

from __future__ import annotations

import hashlib
import itertools
from array import array
from collections.abc import Hashable

from modelcheck.gossip_model import GossipConfig, Node, plain_key


class Symmetry:
    """The visited-set key of a node, with or without the reduction."""

    def __init__(self, config: GossipConfig) -> None:
        self.config = config
        self._published: dict[frozenset[int], tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = {}
        self._waiting: dict[frozenset[int], tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = {}

    def canonical(self, n: Node) -> Hashable:
        """The visited-set key: the node itself (message pools as multisets), or with symmetry
        its orbit under the replica relabellings that keep every unpublished fragment's home."""
        if self.config.symmetry:
            return self.orbit_key(n)
        return plain_key(n)

    def key_and_proof(self, n: Node) -> tuple[Hashable, bytes]:
        """The visited-set key of ``n`` and, with symmetry, the digest of its image under the
        relabelling the key was written under (``relabelled``: what proves a merge into the orbit's
        representative); without symmetry the plain key and no proof."""
        if not self.config.symmetry:
            return plain_key(n), b""
        key, label = self.orbit(n)
        return key, self.relabelled(n, label)

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
        return self.orbit(n)[0]

    def orbit(self, n: Node) -> tuple[bytes, list[int]]:
        """The orbit key of ``n``, and the relabelling (``label[old] = new``) whose image of ``n``
        the key writes out.

        A key equal for two nodes iff a relabelling π of the replicas maps one onto the other
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
            plain = [(marks[r], *homes[r], 0, 0) for r in range(r_count)]
            order = sorted(range(r_count), key=plain.__getitem__)
            return (array("q", [*published, 0, *itertools.chain.from_iterable(plain[r] for r in order)]).tobytes(),
                    _label(order))
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
            best_label = _label(order)
            best = sorted([(kind, best_label[src], best_label[dst], mark) for kind, src, dst, mark in messages])
        else:
            for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
                label = _label([r for g in choice for r in g])
                encoded = sorted([(kind, label[src], label[dst], mark) for kind, src, dst, mark in messages])
                if best is None or encoded < best:
                    best, best_label = encoded, label
        return (array("q", [*published, len(messages), *itertools.chain.from_iterable(best or ()),
                            *itertools.chain.from_iterable(sig[r] for r in order)]).tobytes(), best_label)

    def relabelled(self, n: Node, label: list[int]) -> bytes:
        """A digest of the node that relabelling ``label`` (``label[old] = new``) makes of ``n``,
        written out field by field: each replica's state mark and the fragments still to be
        published at it, under its new label, then both message pools with their endpoints
        relabelled.  Two nodes with equal digests are one node up to their relabellings, so one
        is a relabelling of the other (that keeps every unpublished fragment's home): what the
        search compares when the reduction merges a node into its orbit's representative.
        Written apart from ``orbit``'s key, from the node and the label alone (BLAKE2b, 128
        bits: a collision is not a practical concern)."""
        r_count = self.config.replicas
        if sorted(label) != list(range(r_count)):
            raise ValueError(f"not a relabelling of {r_count} replicas: {label}")
        published, waiting = self._waiting_at(n.published)
        at = [0] * r_count
        for old, new in enumerate(label):
            at[new] = old
        fields = list(published)
        for new in range(r_count):
            fields.append(n.marks[at[new]])
            fields += waiting[at[new]]
        for pool in (n.flight, n.dropped):
            moved = sorted((label[src], label[dst], mark) for (src, dst, mark), _ in pool)
            fields += [len(moved), *itertools.chain.from_iterable(moved)]
        return hashlib.blake2b(array("q", fields).tobytes(), digest_size=16).digest()

    def _waiting_at(self, published: frozenset[int]) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
        """For ``relabelled``, from the configuration alone (not ``published_fields``, which the key
        uses): the published fragments (count, then each), and per replica the fragments still to
        be published at it (count, then each)."""
        got = self._waiting.get(published)
        if got is None:
            per = []
            for r in range(self.config.replicas):
                mine = [f for f in range(self.config.fragments) if f not in published and self.config.home(f) == r]
                per.append((len(mine), *mine))
            got = self._waiting[published] = ((len(published), *sorted(published)), tuple(per))
        return got


def _label(order: list[int]) -> list[int]:
    """The relabelling that lists replicas in ``order``: ``label[order[i]] = i``."""
    label = [0] * len(order)
    for new, old in enumerate(order):
        label[old] = new
    return label
