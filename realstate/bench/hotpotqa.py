"""HotpotQA (distractor setting) as partitioned problems: ``--hotpotqa FILE``.

The file is the official JSON list (``hotpot_dev_distractor_v1.json``): objects with ``_id``,
``question``, ``answer``, ``type``, ``supporting_facts`` ([title, sentence index] pairs) and
``context`` ([title, [sentences]] pairs).  The dataset cannot be downloaded here; a small
hand-written fixture in this format is tested.  Each example becomes one problem: the supporting
paragraphs are dealt to different agents first (the bridge split across agents, as in the core
paper), then ``distractors`` non-supporting paragraphs round-robin; a paragraph is an agent's
sentence ``"Title: text"``.  Family ``hotpotqa-<type>``; no cue (the final agent answers freely)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from realstate.bench.problems import MAX_AGENTS, MIN_AGENTS, Problem, check_unique_ids, parse_record, read_text
from spec import InputError

MAX_HOTPOTQA_BYTES = 256 << 20  # the official dev distractor file is 46 MB


def _fail(where: str, problem: str) -> InputError:
    return InputError(f"{where}: {problem}")


def _paragraphs(context: Any, where: str) -> list[tuple[str, list[str]]]:
    if not isinstance(context, list) or not context:
        raise _fail(where, "'context' must be a non-empty list of [title, [sentences]] pairs")
    out = []
    for j, item in enumerate(context):
        if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
                or not isinstance(item[1], list) or not all(isinstance(s, str) for s in item[1])):
            raise _fail(where, f"context[{j}] must be [title, [sentences]]")
        out.append((item[0], item[1]))
    return out


def _supporting_titles(facts: Any, titles: list[str], where: str) -> list[str]:
    if not isinstance(facts, list) or not facts:
        raise _fail(where, "'supporting_facts' must be a non-empty list of [title, sentence index] pairs")
    chosen: list[str] = []
    for j, fact in enumerate(facts):
        if (not isinstance(fact, list) or len(fact) != 2 or not isinstance(fact[0], str)
                or not isinstance(fact[1], int) or isinstance(fact[1], bool)):
            raise _fail(where, f"supporting_facts[{j}] must be [title, sentence index]")
        if fact[0] not in titles:
            raise _fail(where, f"supporting_facts[{j}] names {fact[0]!r}, which is not a context title")
        if fact[0] not in chosen:
            chosen.append(fact[0])
    return chosen


def problem_from_example(example: Any, where: str, agents: int, distractors: int) -> Problem:
    if not isinstance(example, dict):
        raise _fail(where, "an example must be a JSON object")
    for name in ("_id", "question", "answer"):
        if not isinstance(example.get(name), str) or not example[name].strip():
            raise _fail(where, f"'{name}' must be a non-empty string")
    paragraphs = _paragraphs(example.get("context"), where)
    titles = [t for t, _ in paragraphs]
    supporting = _supporting_titles(example.get("supporting_facts"), titles, where)
    others = [t for t in titles if t not in supporting][:distractors]
    used = supporting + others
    if len(used) < agents:
        raise _fail(where, f"{len(used)} paragraphs (supporting plus {distractors} distractors) cannot fill "
                           f"{agents} agents; lower --hotpotqa-agents or raise --hotpotqa-distractors")
    text = {t: f"{t}: {' '.join(s.strip() for s in sentences)}".strip() for t, sentences in paragraphs}
    docs: list[list[str]] = [[] for _ in range(agents)]
    for i, title in enumerate(used):
        docs[i % agents].append(text[title])
    holders = sorted({i % agents for i, t in enumerate(used) if t in supporting})
    kind = example.get("type", "unknown")
    family = f"hotpotqa-{kind if isinstance(kind, str) and kind.isidentifier() else 'unknown'}"
    return Problem(f"hotpotqa-{example['_id']}", family, tuple(tuple(d) for d in docs), example["question"],
                   example["answer"], tuple(holders), (), "eval", "",
                   {"source": "hotpotqa-distractor", "level": str(example.get("level", ""))})


def read_hotpotqa(path: str | Path, agents: int = 2, distractors: int = 2) -> list[Problem]:
    """Problems from a HotpotQA distractor-setting JSON file; ``InputError`` naming the file and
    the example index for anything malformed."""
    if not MIN_AGENTS <= agents <= MAX_AGENTS:
        raise InputError(f"hotpotqa agents={agents} must be {MIN_AGENTS}..{MAX_AGENTS}")
    if distractors < 0:
        raise InputError(f"hotpotqa distractors={distractors} must be >= 0")
    file = Path(path)
    data = parse_record(read_text(file, MAX_HOTPOTQA_BYTES), str(file))
    if not isinstance(data, list) or not data:
        raise InputError(f"{file}: want a non-empty JSON list of HotpotQA examples (the distractor-setting file)")
    problems = [problem_from_example(ex, f"{file}: example {i}", agents, distractors) for i, ex in enumerate(data)]
    for p in problems:
        if len(set(p.agents)) != len(p.agents):
            raise InputError(f"{file}: example {p.id} gives two agents identical documents")
    check_unique_ids(problems, str(file))
    return problems
