"""``check --replay FILE`` with hostile trace files: a valid trace with one value replaced by
something else anywhere in its tree, or cut short.  Whatever the file, the command answers with
exit 0, 1 or 2 and one JSON document; nothing escapes as a traceback."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelcheck
from canonmerge.cli import main
from modelcheck.reference import ReferenceBackend
from tests.broken_backends import plant

REF = ReferenceBackend()
REPLACEMENTS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                         st.text(max_size=8), st.just([]), st.just({}), st.just([[[]]]), st.just(2**40),
                         st.just(-1), st.just(10**6))


@pytest.fixture(scope="module")
def traces() -> list[dict[str, Any]]:
    report = modelcheck.run(plant(REF, "no-tie-break"), universes=["ties"], max_arity=2, gossip=False)
    program = next(t for r in report.results for t in r.details.get("traces", []) if r.check == "permutations")
    from modelcheck.gossip import explore
    from modelcheck.universes import universe

    gossip = explore(plant(REF, "merge-keeps-duplicates"), universe("ties"), mutant="merge-keeps-duplicates",
                     backend_name="reference").violation
    return [program, gossip]


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):  # the first few elements of long tensors are enough
            out += _paths(v, prefix + (i,))
    return out


def _replace(tree: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    node = tree
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return tree


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_mutated_trace_is_answered_with_an_exit_code(traces: list[dict[str, Any]], data: st.DataObject,
                                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    trace = copy.deepcopy(traces[data.draw(st.integers(0, 1))])
    paths = _paths(trace)
    path = paths[data.draw(st.integers(0, len(paths) - 1))]
    text = json.dumps(_replace(trace, path, data.draw(REPLACEMENTS)))
    if data.draw(st.booleans()):
        text = text[: data.draw(st.integers(0, len(text)))]  # or cut short
    file = Path(tmp_path_factory.mktemp("fuzz")) / "t.json"
    file.write_text(text)
    import io
    from contextlib import redirect_stderr, redirect_stdout

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["check", "--replay", str(file), "--json"])
    assert code in (0, 1, 2)
    document = json.loads(out.getvalue())
    assert document["exit_code"] == code
