"""Scoring a decoded answer against the gold: normalized prefix match.

The final agent's reply starts with the problem's cue, so the answer is what it decodes first.
Text is cut at the first line break or end-of-turn, lower-cased, stripped of punctuation and of
the articles a/an/the (SQuAD's normalization); the answer is right when the gold's words (or an
alias's) are the first words decoded.  Nothing is parsed out of the middle of a sentence."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation})
TERMINATORS = ("\n", ".", "!", "?")
END_MARKERS = ("<|im_end|>", "<|endoftext|>", "</s>")


def answer_text(decoded: str) -> str:
    """What counts as the answer: the decoded text up to the first line break or end marker."""
    cut = decoded
    for marker in (*END_MARKERS, "\n"):
        cut = cut.split(marker, 1)[0]
    return cut.strip()


def normalized_words(text: str) -> list[str]:
    lowered = text.lower().translate(_PUNCTUATION)
    return _ARTICLES.sub(" ", lowered).split()


def is_correct(decoded: str, golds: Iterable[str]) -> bool:
    """True when some gold's normalized words are the first normalized words of the answer."""
    predicted = normalized_words(answer_text(decoded))
    for gold in golds:
        want = normalized_words(gold) or gold.lower().split()
        if want and predicted[:len(want)] == want:
            return True
    return False


def finished(decoded: str) -> bool:
    """Early stop: the answer has started and a line break, sentence end or end marker followed."""
    text = decoded.lstrip()
    if any(marker in text for marker in END_MARKERS):
        return True
    return bool(text) and any(t in text for t in TERMINATORS)
