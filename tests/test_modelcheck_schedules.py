"""The schedule enumerators produce exactly the closed-form counts, each schedule once."""

import math

import pytest

from modelcheck import schedules as en
from modelcheck.schedules import Join, Leaf


@pytest.mark.parametrize("n", range(1, 7))
def test_permutations_are_n_factorial_distinct_left_combs(n):
    perms = list(en.permutations(n))
    assert len(perms) == math.factorial(n) == en.permutation_count(n)
    assert len(set(perms)) == len(perms)
    for p in perms:
        assert sorted(leaf.index for leaf in en.leaves(p)) == list(range(n))


@pytest.mark.parametrize("n", range(1, 7))
def test_merge_trees_are_n_factorial_times_catalan(n):
    trees = list(en.merge_trees(n))
    assert len(trees) == en.tree_count(n) == math.factorial(2 * n - 2) // math.factorial(n - 1)
    assert len(set(trees)) == len(trees)
    shapes = list(en.tree_shapes([Leaf(i) for i in range(n)]))
    assert len(shapes) == en.catalan(n - 1)
    for t in trees:
        assert sorted(leaf.index for leaf in en.leaves(t)) == list(range(n))


def test_closed_forms_at_five():
    assert [en.catalan(k) for k in range(6)] == [1, 1, 2, 5, 14, 42]
    assert en.tree_count(5) == 1680
    assert en.redelivery_count(5, 1) == 1800
    assert en.redelivery_count(5, 2) == 1800 + 16800


@pytest.mark.parametrize("n,extra", [(1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (1, 2), (2, 2), (3, 2), (4, 2),
                                     (3, 3)])
def test_redeliveries_match_surjections_and_multinomials(n, extra):
    schedules = list(en.redeliveries(n, extra))
    assert len(schedules) == en.redelivery_count(n, extra) == en.multinomial_redelivery_count(n, extra)
    assert len(set(schedules)) == len(schedules)
    for s in schedules:
        leaves = en.leaves(s)
        indices = [leaf.index for leaf in leaves]
        assert set(indices) == set(range(n)) and n < len(indices) <= n + extra
        for i in range(n):  # copies are numbered in arrival order: the original arrives first
            assert [leaf.copy for leaf in leaves if leaf.index == i] == list(range(indices.count(i)))


def test_redelivery_count_one_extra_is_n_times_half_n_plus_one_factorial():
    for n in range(1, 8):
        assert en.redelivery_count(n, 1) == n * math.factorial(n + 1) // 2


def test_sequence_and_prune():
    s = en.sequence([0, 1, 0])
    assert s == Join(Join(Leaf(0), Leaf(1)), Leaf(0, 1))
    assert en.render_expr(s) == "((0 1) 0')"
    assert en.prune(s, lambda leaf: leaf.index == 1) == Join(Leaf(0), Leaf(0, 1))
    assert en.prune(Leaf(0), lambda leaf: True) is None
