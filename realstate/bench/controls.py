"""Causal-audit controls (*When Does Latent Communication Pay? A Causal Audit of Relayed KV Caches
in Multi-Agent LLMs*, Cheng, Das and Ramnath, 2026): does the final agent
use the relayed caches, or merely their presence?  Each control replaces every fragment of the
CanonicalMerge layout, in place (same offsets, same length), by

- ``zeroed``: keys and values all zero;
- ``deranged``: a fragment of ANOTHER problem of the same family, at the same latent budget and
  of the same token count — an exact-length donor when one exists, else the first ``n`` positions
  of a longer donor (a cache prefix is exactly the cache of the input prefix, the model being
  causal); a fragment with no donor at least as long leaves the problem without this control;
- ``moment-matched``: Gaussian noise whose per layer/head/channel mean and standard deviation
  over the fragment's positions equal the real fragment's exactly (the noise is standardized
  before scaling), keys and values separately.

Every control is checked against its definition before it is decoded (``check_*``): a control
that does not differ from the real cache, or differs in the wrong way, is an ``InstrumentError``."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from realstate.kernel.fragment import Fragment
from spec import InstrumentError

MOMENT_TOLERANCE = 0.02  # of the real std, per channel: storage rounding of bf16 noise stays far below


def zeroed(fragment: Fragment) -> Fragment:
    return Fragment(fragment.fingerprint, fragment.start, torch.zeros_like(fragment.keys),
                    torch.zeros_like(fragment.values))


def _moments(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and (population) std over positions, per layer/head/channel: ``[L, H, 1, D]`` each."""
    wide = t.double()
    return wide.mean(dim=2, keepdim=True), wide.std(dim=2, unbiased=False, keepdim=True)


def _matched_noise(real: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    mean, std = _moments(real)
    z = torch.randn(real.shape, generator=generator, dtype=torch.float64)
    z = (z - z.mean(dim=2, keepdim=True)) / z.std(dim=2, unbiased=False, keepdim=True)
    return (mean + std * z).to(real.dtype).to(real.device)


def moment_matched(fragment: Fragment, seed: int) -> Fragment:
    """Noise with the fragment's per layer/head/channel moments, from ``torch.Generator(seed)``."""
    if fragment.tokens < 2:
        raise InstrumentError("causal-audit control", f"{fragment!r}: one position has no spread; moment-matched noise would equal it")
    generator = torch.Generator().manual_seed(seed)
    return Fragment(fragment.fingerprint, fragment.start, _matched_noise(fragment.keys, generator),
                    _matched_noise(fragment.values, generator))


@dataclass(frozen=True)
class Donor:
    """Where a deranged fragment came from."""

    problem: str
    agent: int
    tokens: int  # the donor fragment's own length before trimming
    fragment: Fragment  # trimmed to the recipient's length
    match: str  # "exact" or "prefix"


def prefix(fragment: Fragment, tokens: int) -> Fragment:
    return Fragment(fragment.fingerprint, fragment.start, fragment.keys[:, :, :tokens].clone(),
                    fragment.values[:, :, :tokens].clone())


def choose_donor(recipient: Fragment, problem: str, candidates: Sequence[tuple[str, int, Fragment]],
                 seed: int) -> Donor | None:
    """A donor for ``recipient`` among ``candidates`` (problem id, agent, fragment) of the same family
    and latent budget: another problem's, exact length first, else the shortest longer ones; ties
    broken by a seeded draw (so reruns pick the same donor)."""
    n = recipient.tokens

    def differs(f: Fragment) -> bool:
        # two problems of a family can share a document (same facts, same agent prompt): such a
        # donor would make the "deranged" control the real cache, so it is never chosen
        return (f if f.tokens == n else prefix(f, n)).content_id != recipient.content_id

    usable = [(pid, agent, f) for pid, agent, f in candidates if pid != problem and f.tokens >= n and differs(f)]
    if not usable:
        return None
    best = min(f.tokens for _, _, f in usable)
    tied = sorted((pid, agent, f) for pid, agent, f in usable if f.tokens == best)
    pid, agent, f = random.Random(f"{seed}:{problem}:{recipient.content_id.hex()}").choice(tied)
    return Donor(pid, agent, f.tokens, f if f.tokens == n else prefix(f, n), "exact" if f.tokens == n else "prefix")


def control_seed(seed: int, problem: str, agent: int, latent_steps: int) -> int:
    digest = hashlib.sha256(f"{seed}:{problem}:{agent}:{latent_steps}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


# --- checks: a control must be what it claims to be ------------------------------------------

def _same_frame(real: Fragment, control: Fragment, what: str) -> None:
    if control.keys.shape != real.keys.shape or control.values.shape != real.values.shape:
        raise InstrumentError("causal-audit control", f"{what} control has shape {tuple(control.keys.shape)}, the real fragment "
                             f"{tuple(real.keys.shape)}: a control must fill the same positions")
    if control.fingerprint != real.fingerprint or control.start != real.start:
        raise InstrumentError("causal-audit control", f"{what} control has another fingerprint or start than the real fragment")


def check_zeroed(real: Fragment, control: Fragment) -> None:
    _same_frame(real, control, "zeroed")
    nonzero = int(torch.count_nonzero(control.keys)) + int(torch.count_nonzero(control.values))
    if nonzero:
        raise InstrumentError("causal-audit control", f"zeroed control holds {nonzero} non-zero entries")
    if not (torch.count_nonzero(real.keys) or torch.count_nonzero(real.values)):
        raise InstrumentError("causal-audit control", "the real fragment is itself all zero: zeroing it tests nothing")


def check_deranged(real: Fragment, control: Fragment, problem: str, family: str, donor_problem: str,
                   donor_family: str) -> None:
    _same_frame(real, control, "deranged")
    if donor_problem == problem:
        raise InstrumentError("causal-audit control", f"deranged control for {problem} comes from the same problem")
    if donor_family != family:
        raise InstrumentError("causal-audit control", f"deranged control for {problem} ({family}) comes from family {donor_family}")
    if control.content_id == real.content_id or torch.equal(control.keys, real.keys):
        raise InstrumentError("causal-audit control", f"deranged control for {problem} equals the real fragment")


def check_moment_matched(real: Fragment, control: Fragment, tolerance: float = MOMENT_TOLERANCE) -> None:
    _same_frame(real, control, "moment-matched")
    if control.content_id == real.content_id or torch.equal(control.keys, real.keys):
        raise InstrumentError("causal-audit control", "moment-matched control equals the real fragment")
    for name, want, got in (("keys", real.keys, control.keys), ("values", real.values, control.values)):
        want_mean, want_std = _moments(want)
        got_mean, got_std = _moments(got)
        scale = want_std + 1e-6 * (want.abs().max().double() + 1.0)
        mean_error = float(((got_mean - want_mean).abs() / scale).max())
        std_error = float(((got_std - want_std).abs() / scale).max())
        if mean_error > tolerance or std_error > tolerance:
            raise InstrumentError("causal-audit control", f"moment-matched {name}: per-channel mean off by {mean_error:.3g} and std by "
                                 f"{std_error:.3g} of the real std (tolerance {tolerance})")
