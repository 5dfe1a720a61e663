"""Whether a replay's budgets fit the loaded model's positions, checked before any agent runs.

Why here and not where the agents run: every budget the user sets takes positions — an agent's
start, its prompt and its latent steps; the final agent's prompt and decoded tokens after the
whole render — and the error must name the flag whose value is too large (the largest term),
not whichever check happens to trip first.  Fidelity offsets past the model's last position are
clamped to it (their help says so); they take no budget here."""

from __future__ import annotations

from realstate.models.agents import DEFAULT_QUESTION, DEFAULT_TEXT_PROMPTS, seeded_prompts, text_prompts
from realstate.models.loaded import LoadedModel
from realstate.replay.settings import ReplaySettings
from spec.arguments import within_positions


def prompt_lengths(lm: LoadedModel, settings: ReplaySettings) -> list[int] | None:
    """The agents' prompt lengths, chosen as ``run_agents`` chooses them (``None`` when there
    are too few text prompts: ``run_agents`` refuses that itself, naming the prompts)."""
    if settings.prompts is not None or lm.tokenizer is not None:
        pool = list(settings.prompts) if settings.prompts is not None else list(DEFAULT_TEXT_PROMPTS)
        if len(pool) < settings.agents:
            return None
        return [len(p) for p in text_prompts(lm, pool[:settings.agents])]
    return [len(p) for p in seeded_prompts(settings.agents, lm.vocab_size, settings.seed)]


def check_positions(lm: LoadedModel, settings: ReplaySettings) -> None:
    """``spec.ArgumentError`` naming the largest budget when a run would pass the model's
    maximum position: an agent's start + prompt + latent steps, or the render of every
    fragment + the final agent's prompt + the decoded tokens."""
    lengths = prompt_lengths(lm, settings)
    if lengths is None:
        return
    limit = lm.fingerprint.max_positions
    starts = [*settings.agent_starts, *[0] * (settings.agents - len(settings.agent_starts))]
    for i, (start, length) in enumerate(zip(starts, lengths)):
        within_positions(limit, [("agent_starts", settings.agent_starts, start), (None, "prompt", length),
                                 ("latent_steps", settings.latent_steps, settings.latent_steps)],
                         f"agent {chr(ord('A') + i)}")
    if lm.tokenizer is not None:
        question = settings.question or DEFAULT_QUESTION
        final = ("question", settings.question, len(lm.tokenizer(question, add_special_tokens=False)["input_ids"]))
    else:
        final = (None, "final prompt", min(5, lengths[0]))  # the first agent's first five tokens
    within_positions(limit, [(None, "prompts", sum(lengths)),
                             ("latent_steps", settings.latent_steps, settings.latent_steps * settings.agents),
                             final, ("decode_tokens", settings.decode_tokens, settings.decode_tokens)],
                     "the final agent's decode after the render of every fragment")
