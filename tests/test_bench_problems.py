"""The benchmark's problems: the committed sets are exactly what the seeded generator gives, every
problem is well formed and needs what it says it needs, bad files are refused with the path and
the cause, and HotpotQA's distractor format loads from a hand-written fixture (no model)."""

import json
from pathlib import Path

import pytest

from canonmerge.cli import main
from realstate.bench import generator
from realstate.bench.hotpotqa import read_hotpotqa
from realstate.bench.problems import read_problems, write_problems
from spec import InputError

FIXTURE = Path(__file__).parent / "fixtures" / "hotpotqa_distractor_sample.json"


def test_committed_problem_files_are_exactly_the_seeded_generator_output(tmp_path):
    for name, problems in (("eval.jsonl", generator.eval_problems()), ("dev.jsonl", generator.dev_problems())):
        write_problems(tmp_path / name, problems)
        assert (tmp_path / name).read_bytes() == (generator.DATA / name).read_bytes(), (
            f"{name} differs from the generator: run python -m realstate.bench.generator")


def test_eval_split_has_five_families_over_k_2_3_4_and_dev_is_separate():
    problems = read_problems(generator.DATA / "eval.jsonl")
    dev = read_problems(generator.DATA / "dev.jsonl")
    assert len(problems) >= 100 and {p.family for p in problems} == set(generator.FAMILIES)
    assert {p.k for p in problems} == {2, 3, 4} and {p.split for p in problems} == {"eval"}
    assert {p.split for p in dev} == {"dev"} and not {p.id for p in dev} & {p.id for p in problems}
    assert not {p.agents for p in dev} & {p.agents for p in problems}
    for p in problems:
        facts = " ".join(s for doc in p.agents for s in doc)
        assert all(len(doc) == generator.FACTS_PER_AGENT for doc in p.agents)
        if p.family in ("retrieval", "bridge"):
            assert p.answer in facts
        if p.family == "retrieval":
            assert len(p.holders) == 1
        else:  # the facts the answer needs are spread over at least two agents
            assert len(p.holders) >= 2, p.id
        if p.family == "aggregation":
            assert facts.count("red club") == int(p.answer)
        assert p.cue and p.question.endswith("?")


def test_bad_problem_files_name_the_file_the_line_and_the_cause(tmp_path):
    good = json.dumps({"id": "a", "family": "f", "agents": [["x."], ["y."]], "question": "q?", "answer": "z"})
    cases = {
        r"p.jsonl:1: not JSON": "{oops",
        "'agents' must be a list of 2..4": json.dumps({"id": "a", "family": "f", "agents": [["x."]],
                                                        "question": "q", "answer": "z"}),
        "'answer' must be a non-empty string": json.dumps({"id": "a", "family": "f", "agents": [["x."], ["y."]],
                                                            "question": "q"}),
        "identical documents": json.dumps({"id": "a", "family": "f", "agents": [["x."], ["x."]],
                                           "question": "q", "answer": "z"}),
        "id .a. occurs twice": good + "\n" + good,
    }
    for why, text in cases.items():
        path = tmp_path / "p.jsonl"
        path.write_text(text + "\n", encoding="utf-8")
        with pytest.raises(InputError, match=why) as caught:
            read_problems(path)
        assert str(path) in str(caught.value)
    with pytest.raises(InputError, match="cannot read"):
        read_problems(tmp_path / "missing.jsonl")


def test_hotpotqa_distractor_file_becomes_problems_with_supporting_paragraphs_split_across_agents():
    problems = read_hotpotqa(FIXTURE, agents=2, distractors=2)
    assert [p.family for p in problems] == ["hotpotqa-bridge", "hotpotqa-comparison", "hotpotqa-bridge"]
    first = problems[0]
    assert first.answer == "Kestrel Bay" and first.cue == "" and first.k == 2
    assert first.agents[0][0].startswith("Marlow Footbridge: ") and first.agents[1][0].startswith("Edith Varga: ")
    assert first.holders == (0, 1)  # the bridge entity's two paragraphs sit with different agents
    assert sum(len(doc) for doc in first.agents) == 4  # 2 supporting + 2 distractors of 5 paragraphs
    assert all(p.k == 3 for p in read_hotpotqa(FIXTURE, agents=3, distractors=1))


def test_malformed_hotpotqa_files_are_refused_with_the_example_named(tmp_path):
    data = json.loads(FIXTURE.read_text())
    data[1]["supporting_facts"] = [["No Such Title", 0]]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"bad.json: example 1: supporting_facts\[0\] names 'No Such Title'"):
        read_hotpotqa(bad)
    bad.write_text('{"not": "a list"}')
    with pytest.raises(InputError, match="non-empty JSON list"):
        read_hotpotqa(bad)
    with pytest.raises(InputError, match="cannot fill 4 agents"):
        read_hotpotqa(FIXTURE, agents=4, distractors=0)


def test_bench_command_refuses_bad_input_with_exit_2_before_loading_a_model(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    assert main(["bench", "--hotpotqa", str(bad), "--geometry", "qwen3-tiny"]) == 2
    assert f"{bad}: not JSON" in capsys.readouterr().err
    assert main(["bench", "--latent-steps", "1,2", "--geometry", "qwen3-tiny"]) == 2
    assert "--latent-steps 1,2: must include 0" in capsys.readouterr().err
    assert main(["bench", "--limit", "0", "--geometry", "qwen3-tiny"]) == 2
    assert "--limit 0: must be an integer in 1.." in capsys.readouterr().err
    assert main(["bench", "--families", "nope", "--geometry", "qwen3-tiny"]) == 2
    assert "families nope are not in" in capsys.readouterr().err


def test_limit_keeps_every_k_of_a_family_round_robin():
    from realstate.bench.selection import load_problems
    from realstate.bench.settings import BenchSettings

    chosen, donors = load_problems(BenchSettings(model=None, geometry="qwen3-tiny", limit=3))
    assert len(chosen) == 15 and not donors  # three per family: enough to derange among themselves
    for family in {p.family for p in chosen}:
        assert sorted(p.k for p in chosen if p.family == family) == [2, 3, 4]
    four, _ = load_problems(BenchSettings(model=None, geometry="qwen3-tiny", limit=4, families=("bridge",)))
    assert [p.k for p in four] == [2, 3, 4, 2] and len({p.id for p in four}) == 4
