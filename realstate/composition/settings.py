"""Composition settings: plain data, importable without torch so the command line starts fast.

Errors name the argument as the library spells it (``recompute=1.5 must be ...``), as
``realstate.replay.settings.ReplaySettings`` does, so the command line can re-spell each as its flag."""

from __future__ import annotations

from dataclasses import dataclass

from spec.arguments import integer, number

MAX_ANCHORS = 2**31 - 1
MAX_POSITION = 2**31 - 1


@dataclass(frozen=True)
class ComposeSettings:
    recompute: float = 0.15  # r: the share of tokens re-run through every layer, by deviation
    anchors: int = 2  # s: the first tokens of every fragment but the first, always re-run
    layers: int = 1  # c: layers 0..c re-run for every token; deviation is scored at layer c
    base: int = 0  # the absolute position of the render's first token

    def validate(self, layer_count: int | None = None) -> None:
        """Every field in range; ``layers`` against the model's ``layer_count`` where it is known."""
        number("recompute", self.recompute, 0.0, 1.0, " (a share of the render's tokens)")
        integer("anchors", self.anchors, 0, MAX_ANCHORS, " tokens per fragment")
        top = MAX_POSITION if layer_count is None else layer_count - 1
        integer("layers", self.layers, 0, top, " (the last layer re-run for every token)")
        integer("base", self.base, 0, MAX_POSITION)
