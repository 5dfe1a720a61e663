"""What every check of the replay shares: the loaded model, the agents' runs and fragments, the
engine under test, the per-arity figures the checks fill in, and the batched decode.  States are
built only through the engine's collection and merge, as replicas would build them."""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from realstate.kernel.engine import Engine
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import (
    Rendered,
    bag_render,
    canonical_render,
)
from realstate.models.agents import DEFAULT_QUESTION, AgentRun
from realstate.models.checkpoint import load_checkpoint
from realstate.models.continuation import Continuation, greedy_continue, greedy_continue_many
from realstate.models.gguf import load_named
from realstate.models.loaded import LoadedModel
from realstate.models.seeded import load_seeded
from realstate.replay.fidelity import FidelityRow
from realstate.replay.settings import ReplaySettings
from spec import (
    ClaimResult,
    Progress,
)

# Renders decoded together in one batch: about this many bytes of rendered keys and values
DECODE_BATCH_BYTES = 256 << 20


def load_model(settings: ReplaySettings) -> LoadedModel:
    if settings.model is not None:
        return load_named(settings.model, settings.dtype, settings.device)
    if settings.checkpoint is not None:
        return load_checkpoint(settings.checkpoint, settings.dtype, settings.device)
    return load_seeded(settings.geometry, settings.dtype, settings.device, settings.seed)


@dataclass
class ArityRow:
    """What the checks that ran found at one arity (a check that did not run leaves its zeros)."""

    n: int
    permutations: int = 0
    canonical_digests: set[str] = field(default_factory=set)
    bag_digests: int = 0  # distinct BagMerge digests over the delivery orders
    trees: int = 0
    tree_digests: set[str] = field(default_factory=set)
    tree_violations: int = 0
    redeliveries: int = 0
    redelivery_canonical_changed: int = 0
    bag_redeliveries: int = 0
    redelivery_bag_changed: int = 0
    canonical_continuations: Counter[Continuation] = field(default_factory=Counter)  # decode -> orders
    bag_continuations: Counter[Continuation] = field(default_factory=Counter)
    c6_match: bool | None = None


class Replay:
    """What every per-claim check of the replay shares: the model, the agents' runs and
    fragments, the engine under test, and the per-arity figures the checks fill in."""

    def __init__(self, lm: LoadedModel, runs: list[AgentRun], settings: ReplaySettings,
                 engine: Engine, progress: Progress) -> None:
        self.lm, self.runs, self.settings, self.engine, self.progress = lm, runs, settings, engine, progress
        self.fragments = [r.fragment for r in runs]
        # with a tokenizer the final agent asks a question in words; otherwise (seeded token ids)
        # it continues from the first agent's first five tokens
        self.question = (settings.question or DEFAULT_QUESTION) if lm.tokenizer is not None else None
        self.final_prompt = (lm.tokenizer(self.question, add_special_tokens=False)["input_ids"]
                             if self.question is not None else runs[0].prompt_ids[:5])
        self.rows: dict[int, ArityRow] = {}
        self.fidelity_rows: list[FidelityRow] = []
        self.rendered: dict[tuple[int, str], Any] = {}  # (n, digest) -> a state that rendered to it
        self.renders = 0
        self.known_answers: dict[str, ClaimResult] | None = None
        self.composition: Any = None  # what the composition checks found (realstate.replay.composition)

    def row(self, n: int) -> ArityRow:
        return self.rows.setdefault(n, ArityRow(n))

    @property
    def arities(self) -> range:
        return range(1, len(self.fragments) + 1)

    # states are built only through the engine's collection and merge, as replicas would
    def state_of(self, sequence: Sequence[Fragment]) -> Any:
        state = self.engine.collect([sequence[0]])
        for f in sequence[1:]:
            state = state.merge(self.engine.collect([f]))
        return state

    def render(self, state: Any, n: int | None = None) -> Rendered:
        """The canonical render of ``state``; with ``n`` (the state holds the first n agents'
        fragments) its digest is recorded for the oracle check, which compares every distinct
        render the replay made with the independent reference."""
        rendered = canonical_render(state, engine=self.engine)
        self.renders += 1
        if n is not None:
            self.rendered.setdefault((n, rendered.digest()), state)
        return rendered

    def digest(self, state: Any, n: int | None = None) -> str:
        return self.render(state, n).digest()

    def bag_digest(self, fragments: Sequence[Fragment]) -> str:
        return bag_render(fragments, engine=self.engine).digest()

    def continue_from(self, rendered: Rendered) -> Continuation:
        return greedy_continue(self.lm, rendered.to_cache(), self.final_prompt, self.settings.decode_tokens)

    @staticmethod
    def decode_rows(rendered: Rendered, total: int) -> int:
        """The row count of every batch ``total`` renders shaped like ``rendered`` are decoded in:
        one count for all of them, because a CPU matrix product's rounding can depend on how many
        rows it multiplies (at the qwen3-1.7b geometry a batch of 18 and one of 102 give other
        logits bytes for the same render), though not on the other rows' contents or a row's place."""
        return max(1, min(total, -(-DECODE_BATCH_BYTES // (2 * rendered.keys.nbytes))))

    def continue_from_each(self, renders: Iterable[Rendered], label: str, total: int) -> Iterator[Continuation]:
        """The final agent's decode from each render, in order, in batches of ``decode_rows`` rows
        (``greedy_continue_many``); the last batch is filled up to that count with copies of its
        first render, whose decodes are dropped."""
        batch: list[Rendered] = []
        rows = done = 0
        for rendered in renders:
            rows = rows or self.decode_rows(rendered, total)
            batch.append(rendered)
            if len(batch) == rows:
                yield from self._decode_batch(batch)
                done += len(batch)
                batch = []
                self.progress(label, done, total)
        if batch:
            yield from self._decode_batch(batch + [batch[0]] * (rows - len(batch)))[:len(batch)]
            self.progress(label, done + len(batch), total)

    def continue_alongside(self, target: Rendered, filler: Rendered, rows: int, position: int) -> Continuation:
        """``target`` decoded at ``position`` of a batch of ``rows`` rows whose other rows hold
        ``filler``: the shape and place its row had in ``continue_from_each``, other neighbours, so
        the two decodes are equal unless the batch mixes rows."""
        batch = [filler] * rows
        batch[position] = target
        return self._decode_batch(batch)[position]

    def _decode_batch(self, batch: list[Rendered]) -> list[Continuation]:
        return greedy_continue_many(self.lm, [x.keys for x in batch], [x.values for x in batch],
                                    self.final_prompt, self.settings.decode_tokens)

    def text(self, continuation: Continuation) -> str:
        """The decoded tokens as text (JSON-quoted, so spaces and newlines show), or their ids."""
        if self.lm.tokenizer is None:
            return "ids " + " ".join(map(str, continuation.tokens))
        return json.dumps(self.lm.tokenizer.decode(list(continuation.tokens)), ensure_ascii=False)


def tied_twin(fragment: Fragment) -> Fragment | None:
    """Another fragment with the same multiset of key-vector norms at every layer (so exactly the
    same m) and other content: heads 0 and 1 swapped, or with one KV head, positions 0 and 1
    swapped (the norms of a layer's rows do not depend on their order).  ``None`` when neither
    gives other bytes (one head and one token, or identical rows)."""
    heads, tokens = fragment.keys.shape[1], fragment.keys.shape[2]
    for axis, count in ((1, heads), (2, tokens)):
        if count < 2:
            continue
        order = torch.tensor([1, 0, *range(2, count)])
        twin = Fragment(fragment.fingerprint, fragment.start, fragment.keys.index_select(axis, order).contiguous(),
                        fragment.values.index_select(axis, order).contiguous())
        if twin.content_id != fragment.content_id:
            return twin
    return None


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]
