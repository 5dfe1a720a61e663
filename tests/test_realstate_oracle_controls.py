"""The oracle comparison's own controls in the replay's oracle row: a layout changed at one entry
(another fragment at the same offset, or the same one at another offset) must be reported."""

from __future__ import annotations

import importlib

import pytest

import oracle
from oracle.render import RenderBytes
from realstate.replay.oracle_row import _comparison_controls

compare_module = importlib.import_module("oracle.compare")  # the module (``oracle.compare`` is the function)

WANT = RenderBytes(b"f" * 32, "bfloat16", (1, 1, 2, 2), 0, bytes(8), bytes(8), ((b"a" * 32, 0), (b"b" * 32, 1)), "d")


def test_the_comparison_reports_both_changed_layouts():
    assert _comparison_controls(oracle, WANT) == []


@pytest.mark.parametrize("weakened", ["want_id != have_id and want_at != have_at", "want_at != have_at",
                                      "want_id != have_id"])
def test_a_comparison_blind_to_one_kind_of_layout_change_is_caught(monkeypatch, weakened):
    def layout_mismatches(got, expected):
        found = []
        for i, ((want_id, want_at), (have_id, have_at)) in enumerate(zip(expected.layout, got.layout)):
            if eval(weakened):
                found.append(compare_module.Mismatch("layout", (i,), "", ""))
        return found

    monkeypatch.setattr(compare_module, "_layout_mismatches", layout_mismatches)
    assert _comparison_controls(oracle, WANT)
