"""The gossip search's compact visited set (``gossip_visited``): digests in a flat table, the
trace parent as a fixed-width row; the search's counts with it equal the census's on plain,
reduced and folded configurations (its traces: test_modelcheck_gossip*.py, unchanged)."""

import os

import pytest

from modelcheck.gossip_census import census
from modelcheck.gossip_model import GossipConfig, GossipModel
from modelcheck.gossip_search import search
from modelcheck.gossip_visited import NO_PARENT, Visited, decode_action, digest, encode_action
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe

REF = ReferenceBackend()
TIES = universe("ties")


def test_rows_are_found_by_digest_through_growth_and_rebuild():
    table = Visited(proofs=True)
    digests = [os.urandom(16) for _ in range(5000)]
    for i, d in enumerate(digests):
        assert table.find(d) is None
        table.add(d, NO_PARENT if i == 0 else i - 1, encode_action(("send", 1, 2)), d[::-1])
    assert [table.find(d) for d in digests] == list(range(5000))
    assert table.proof(17) == digests[17][::-1] and table.parent(17) == (16, ("send", 1, 2))
    again = Visited(proofs=True)
    again.extend(list(table.columns(0, table.rows)))
    again.rebuild()
    assert [again.find(d) for d in digests] == list(range(5000)) and again.find(os.urandom(16)) is None


def test_moves_round_trip_and_a_move_too_wide_is_refused():
    for move in [("publish", 3), ("send", 0, 7), ("deliver", (2, 1, 9)), ("duplicate", (0, 3, 2**21 - 1)),
                 ("drop", (1, 0, 0)), ("resend", (3, 2, 5))]:
        assert decode_action(encode_action(move)) == move
    with pytest.raises(ValueError, match="32-bit move record"):
        encode_action(("deliver", (1, 2, 2**21)))


def test_plain_keys_that_differ_have_different_digests():
    model = GossipModel(REF, TIES, GossipConfig())
    n = model.apply(model.apply(model.initial(), ("publish", 0)), ("send", 0, 1))
    a = model.apply(n, ("send", 0, 2))
    from modelcheck.gossip_model import plain_key
    assert digest(plain_key(a)) != digest(plain_key(n))
    assert digest(plain_key(model.apply(n, ("deliver", n.flight[0][0])))) != digest(plain_key(n))


@pytest.mark.parametrize("symmetry,fold", [(False, False), (True, False), (True, True), (False, True)])
def test_counts_equal_the_census(symmetry, fold):
    config = GossipConfig(replicas=3, fragments=2, in_flight=2, symmetry=symmetry, fold_drops=fold)
    r = search(REF, TIES, config)
    c = census(3, 2, 2, None, symmetry=symmetry, fold_drops=fold)
    assert r.violation is None and r.exhaustive
    assert (r.states, r.transitions, r.depth) == (c.states, c.transitions, c.depth)
    assert r.fair_exchanges == r.states and r.unproved_merges == 0
    # the table's own bytes per state (slots, digests, parents, moves, proofs)
    assert r.details["visited_bytes"] > 0

