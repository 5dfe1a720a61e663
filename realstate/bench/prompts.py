"""The text every agent and the final agent see, and how text becomes token ids.

Designed on the dev split only (data/dev.jsonl; see docs/results/bench.md): each agent's document is its
sentences on one line; the final agent asks the question as a chat user turn and its reply starts
with the problem's cue ("Mira lives in"), so that the answer is the first thing it decodes.  A
model without a tokenizer (seeded weights) gets UTF-8 bytes as token ids: structure is testable,
answers are noise, and the report says so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from realstate.bench.problems import Problem

CHATML_START, CHATML_END = "<|im_start|>", "<|im_end|>"
BYTE_VOCAB = 256


def agent_text(sentences: tuple[str, ...]) -> str:
    """One agent's document: its sentences on one line."""
    return " ".join(sentences) + "\n"


@dataclass(frozen=True)
class TextCodec:
    """Text to token ids and back, for one model: its tokenizer, or bytes for seeded weights."""

    kind: str  # "tokenizer" or "bytes"
    tokenizer: Any | None
    chatml: bool  # the tokenizer knows <|im_start|> / <|im_end|> as single tokens
    stop_ids: frozenset[int]  # end-of-sequence tokens that end an answer

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            return list(text.encode("utf-8"))
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: list[int] | tuple[int, ...]) -> str:
        if self.tokenizer is None:
            return bytes(i for i in ids if i < BYTE_VOCAB).decode("utf-8", errors="replace")
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False))

    def final_text(self, problem: Problem) -> str:
        """The final agent's prompt, appended after the merged context."""
        cue = problem.cue
        if self.chatml:
            return f"{CHATML_START}user\n{problem.question}{CHATML_END}\n{CHATML_START}assistant\n{cue}"
        return f"Question: {problem.question}\nAnswer:{' ' + cue if cue else ''}"

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "chat_format": "chatml" if self.chatml else "plain",
                "stop_ids": sorted(self.stop_ids),
                "agent_template": "the agent's sentences joined by spaces, then a newline",
                "final_template": (f"{CHATML_START}user\\n{{question}}{CHATML_END}\\n{CHATML_START}assistant\\n{{cue}}"
                                   if self.chatml else "Question: {question}\\nAnswer: {cue}")}


def codec_for(tokenizer: Any | None, vocab_size: int) -> TextCodec:
    if tokenizer is None:
        if vocab_size < BYTE_VOCAB:
            from spec import InputError

            raise InputError(f"a model without a tokenizer needs a vocabulary of at least {BYTE_VOCAB} ids for "
                             f"byte prompts; this one has {vocab_size}")
        return TextCodec("bytes", None, False, frozenset())
    unk = getattr(tokenizer, "unk_token_id", None)
    ids = [tokenizer.convert_tokens_to_ids(t) for t in (CHATML_START, CHATML_END)]
    chatml = all(isinstance(i, int) and i != unk for i in ids)
    stops = {i for i in (getattr(tokenizer, "eos_token_id", None), ids[1] if chatml else None) if isinstance(i, int)}
    return TextCodec("tokenizer", tokenizer, chatml, frozenset(stops))
