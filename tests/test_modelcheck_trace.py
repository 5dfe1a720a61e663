"""Traces: what is saved loads back; anything malformed is refused with a message naming it."""

import copy
import json

import pytest

import modelcheck
from modelcheck import trace as tio
from modelcheck.gossip import explore
from modelcheck.reference import ReferenceBackend
from modelcheck.universes import universe
from spec import InputError
from tests.broken_backends import plant, replay_planted

REF = ReferenceBackend()


@pytest.fixture(scope="module")
def program_trace():
    report = modelcheck.run(plant(REF, "no-tie-break"), universes=["ties"], max_arity=2, gossip=False)
    return next(t for r in report.results for t in r.details.get("traces", []) if r.check == "permutations")


@pytest.fixture(scope="module")
def gossip_trace():
    r = explore(plant(REF, "merge-keeps-duplicates"), universe("ties"), mutant="merge-keeps-duplicates",
                backend_name="reference")
    return r.violation


def test_saved_traces_load_back_and_replay(tmp_path, program_trace, gossip_trace):
    for t in (program_trace, gossip_trace):
        path = tio.save(t, tmp_path)
        assert path.parent == tmp_path and path.suffix == ".json" and t["mutant"] in path.name
        loaded = tio.load(path)
        assert loaded == t
        assert replay_planted(loaded, REF).reproduced
        assert set(t) >= {"format", "version", "check", "claim", "backend", "mutant", "universe",
                          "fragments", "ops", "expected", "observed"}


def test_runner_saves_traces_and_says_where(tmp_path):
    report = modelcheck.run(plant(REF, "identity-dedup"), universes=["random"], max_arity=2, gossip=False,
                            trace_dir=tmp_path)
    paths = [p for r in report.results for p in r.details.get("traces", [])]
    assert paths and all(isinstance(p, str) and p.startswith(str(tmp_path)) for p in paths)
    assert any(p in note for note in report.notes for p in paths)


def _write(tmp_path, data, name="t.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _broken(trace, edit):
    t = copy.deepcopy(trace)
    edit(t)
    return t


PROGRAM_CASES = [
    (lambda t: t.update(format="other"), "format"),
    (lambda t: t.update(version=2), "version"),
    (lambda t: t.update(version=True), "version"),
    (lambda t: t.pop("ops"), "missing field"),
    (lambda t: t.update(extra=1), "unknown field"),
    (lambda t: t.update(claim="C99"), "claim"),
    (lambda t: t.update(mutant="No Such Bug!"), "mutant"),
    (lambda t: t.update(kind="shell"), "kind"),
    (lambda t: t["ops"].append({"op": "eval", "of": 0}), "ops"),
    (lambda t: t["ops"][1].update(of=99), "refers to value 99"),
    (lambda t: t["ops"][0].update(index=7), "not among the trace's fragments"),
    (lambda t: t["ops"][1].update(extra=1), "unknown field"),
    (lambda t: t["expect"].clear(), "expect"),
    (lambda t: t["expect"][0].update(left=1000), "refers to value"),
    (lambda t: t["descs"][0]["keys"][0][0][0].__setitem__(0, 1 << 16), "out of range"),
    (lambda t: t["descs"][0]["keys"][0][0][0].__setitem__(0, -1), "out of range"),
    (lambda t: t["descs"][0]["keys"][0][0][0].__setitem__(0, 1.5), "integer"),
    (lambda t: t["descs"][0]["keys"][0][0][0].pop(), "elements"),
    (lambda t: t["descs"][0]["values"][0][0].append([0, 0, 0, 0]), "token"),
    (lambda t: t["descs"].pop(), "one desc per fragment"),
    (lambda t: t["geometry"].update(dtype="int8"), "dtype"),
    (lambda t: t["geometry"].update(head_dim=3), "geometry"),
    (lambda t: t.update(fragments=[0, 0]), "listed twice"),
    (lambda t: t.update(gossip={"replicas": 3}), "gossip"),
]


@pytest.mark.parametrize("edit,message", PROGRAM_CASES)
def test_malformed_program_traces_are_refused(tmp_path, program_trace, edit, message):
    with pytest.raises(InputError, match="malformed trace") as info:
        tio.load(_write(tmp_path, _broken(program_trace, edit)))
    assert message in str(info.value)


GOSSIP_CASES = [
    (lambda t: t["ops"].append({"op": "deliver", "msg": 0}), "not the number of an earlier send"),
    (lambda t: t["ops"].append({"op": "send", "src": 1, "dst": 1}), "does not send to itself"),
    (lambda t: t["ops"].append({"op": "send", "src": 0, "dst": 7}), "out of range"),
    (lambda t: t.pop("gossip"), "gossip"),
    (lambda t: t["expect"].append({"kind": "converged"}), "exactly one"),
    (lambda t: t.update(expect=[{"kind": "same_set_same_render", "replicas": [1, 1]}]), "two different"),
]


@pytest.mark.parametrize("edit,message", GOSSIP_CASES)
def test_malformed_gossip_traces_are_refused(tmp_path, gossip_trace, edit, message):
    with pytest.raises(InputError, match="malformed trace") as info:
        tio.load(_write(tmp_path, _broken(gossip_trace, edit)))
    assert message in str(info.value)


def test_not_json_and_json_constants_are_refused(tmp_path, program_trace):
    with pytest.raises(InputError, match="not valid JSON"):
        tio.load(_write(tmp_path, "{not json"))
    text = json.dumps(program_trace).replace('"observed": "', '"observed": NaN, "x": "', 1)
    with pytest.raises(InputError, match="NaN"):
        tio.load(_write(tmp_path, text))
    with pytest.raises(InputError, match="cannot read"):
        tio.load(tmp_path / "missing.json")
    with pytest.raises(InputError, match="want an object"):
        tio.load(_write(tmp_path, "[]"))


def test_a_trace_that_does_not_execute_is_an_input_error(tmp_path, gossip_trace):
    t = copy.deepcopy(gossip_trace)
    first_send = next(k for k, op in enumerate(t["ops"]) if op["op"] == "send")
    t["ops"].append({"op": "deliver", "msg": first_send})  # delivered already: no longer in flight
    t["ops"].append({"op": "deliver", "msg": first_send})
    with pytest.raises(InputError, match="does not replay"):
        replay_planted(tio.validate(t), REF)
