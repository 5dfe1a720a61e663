"""The controls beside the hostile neighbour's verdict (``neighbour.neighbour_controls``), on their own
(fast): a correct store and verdict see every control; the store's refusals and the verdict
weakened in their source (a mutant of directory.py or neighbour.py loaded from the patched text
in this process) each leave their control unseen, and the verdict then reports itself blind."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from realstate.exchange.stores import directory
from realstate.processes.soak import neighbour
from realstate.processes.soak.neighbour import (
    EVERY_REPLICA,
    HEADER_THROUGH_LINK,
    LISTED_THEN_GONE,
    MISSING_STORE,
    ODD_MARKER,
    ODD_NESTED_STORE,
    SEEN,
    with_controls,
)
from realstate.processes.soak.settings import FragmentShape
from realstate.processes.soak.synthetic import soak_fragment

SHAPE = FragmentShape(min_tokens=4, max_tokens=8)
CLEAN = {"planted": 0, "replicas": 0, "violations": [], "ok": True}
OPENS_MISSING = ("create: bool = False,", "create: bool = True,")
MARKER_BY_SIZE = ("if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_MARKER_BYTES:",
                  "if not stat.S_ISREG(info.st_mode) and info.st_size > MAX_MARKER_BYTES:")
_GONE = "            except FileNotFoundError:\n                {}\n            except OSError as exc:\n"
STOPS_AT_A_GONE_ENTRY = (_GONE.format("continue") + '                raise FormatError(where, "foreign entry"',
                         _GONE.format("break") + '                raise FormatError(where, "foreign entry"')
HEADER_FOLLOWS_LINKS = ("read_header(self.path_of(cid), self.limits, follow_symlinks=False)",
                        "read_header(self.path_of(cid), self.limits, follow_symlinks=True)")
NESTED_BY_LISTING_ONLY = ("if MARKER_NAME in files or MARKER_NAME in dirs:", "if MARKER_NAME in files:")
KEEPS_LAST = ('violations += [f"{replica}: {v}"', 'violations = [f"{replica}: {v}"')


def _patched(module: types.ModuleType, patch: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    source = Path(module.__file__).read_text()
    assert source.count(patch[0]) == 1
    patched = types.ModuleType(f"patched_{module.__name__.rsplit('.', 1)[-1]}")
    monkeypatch.setitem(sys.modules, patched.__name__, patched)  # dataclasses look their module up
    exec(compile(source.replace(*patch), module.__file__, "exec"), patched.__dict__)
    return patched


def _fates(tmp_path: Path) -> dict[str, str]:
    return neighbour.neighbour_controls(tmp_path / "controls", soak_fragment(0, 7, 1, SHAPE))


def test_a_correct_store_and_verdict_see_every_control(tmp_path: Path) -> None:
    fates = _fates(tmp_path)
    assert fates == {name: SEEN for name in (MISSING_STORE, ODD_MARKER, EVERY_REPLICA, LISTED_THEN_GONE,
                                             HEADER_THROUGH_LINK, ODD_NESTED_STORE)}
    assert with_controls(CLEAN, fates) == {**CLEAN, "controls": fates}
    assert not (tmp_path / "controls" / "control-0" / "no-store-here").exists()


@pytest.mark.parametrize("module, patch, control", [
    pytest.param(directory, OPENS_MISSING, MISSING_STORE, id="open-makes-a-missing-store"),
    pytest.param(directory, MARKER_BY_SIZE, ODD_MARKER, id="marker-checked-by-size-only"),
    pytest.param(neighbour, KEEPS_LAST, EVERY_REPLICA, id="verdict-keeps-the-last-replica"),
    pytest.param(directory, STOPS_AT_A_GONE_ENTRY, LISTED_THEN_GONE, id="clean-foreign-stops-at-a-gone-entry"),
    pytest.param(directory, HEADER_FOLLOWS_LINKS, HEADER_THROUGH_LINK, id="header-read-follows-links"),
    pytest.param(directory, NESTED_BY_LISTING_ONLY, ODD_NESTED_STORE, id="nested-store-seen-by-listing-only"),
])
def test_a_weakened_refusal_or_verdict_leaves_its_control_unseen(module: types.ModuleType, patch: tuple[str, str],
                                                                 control: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    patched = _patched(module, patch, monkeypatch)
    if module is directory:
        monkeypatch.setattr(neighbour, "DirectoryStore", patched.DirectoryStore)
        fates = _fates(tmp_path)
    else:
        fates = patched.neighbour_controls(tmp_path / "controls", soak_fragment(0, 7, 1, SHAPE))
    assert [name for name, fate in fates.items() if fate != SEEN] == [control], fates
    verdict = with_controls(CLEAN, fates)
    assert not verdict["ok"] and verdict["violations"][0].startswith(f"blind instrument: {control} (")
