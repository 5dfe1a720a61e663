"""The benchmark's statistics against hand-computed values (no model, milliseconds)."""

import numpy as np
import pytest

from realstate.bench.statistics import holm, mcnemar_exact, paired_bootstrap, tost_paired


def test_exact_mcnemar_counts_discordant_pairs_and_matches_the_binomial():
    first = [True] * 5 + [False] * 3 + [True] * 2
    second = [False] * 5 + [False] * 3 + [True] * 2
    result = mcnemar_exact(first, second)
    assert (result.only_first, result.only_second) == (5, 0)
    assert result.p == pytest.approx(2 * 0.5 ** 5)  # two-sided binomial, 5 discordant pairs all one way
    assert mcnemar_exact([True, False], [True, False]).p == 1.0  # no discordant pair: no evidence
    with pytest.raises(ValueError):
        mcnemar_exact([True], [True, False])


def test_holm_adjusts_step_down_monotone_and_capped():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_tost_needs_many_agreeing_cells_and_refuses_a_real_difference():
    assert tost_paired([0.0] * 60, 0.10).p < 0.001  # 60 identical answers: equivalent within 10 points
    assert tost_paired([0.0] * 3, 0.10).p > 0.05  # 3 cells prove nothing (sd floored at one discordant pair)
    shifted = [1.0] * 30 + [0.0] * 70  # CanonicalMerge better on 30 of 100 cells
    result = tost_paired(shifted, 0.10)
    assert result.mean_difference == pytest.approx(0.3) and result.p > 0.5
    assert tost_paired([], 0.1).p == 1.0


def test_paired_bootstrap_is_seeded_paired_and_skips_missing_values():
    values = np.array([[1, 1, np.nan], [0, 0, 1], [1, 1, 0], [1, 1, 1]], dtype=float)
    first = paired_bootstrap(values, 500, seed=7)
    again = paired_bootstrap(values, 500, seed=7)
    assert first == again
    assert first[0] == first[1]  # identical columns resampled with the same indices: identical intervals
    assert first[0].mean == pytest.approx(0.75) and first[0].low <= 0.75 <= first[0].high
    assert first[2].n == 3 and first[2].mean == pytest.approx(2 / 3)
    assert paired_bootstrap(np.zeros((0, 2)), 100, 0)[0].n == 0
