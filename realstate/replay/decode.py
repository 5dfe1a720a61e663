"""The replay's checks on what the final agent sees (C8): the greedy decode from every
permutation's render, the rotary frequencies, the re-encoding fidelity; and the render on the
device against the CPU's (C3)."""

from __future__ import annotations

import itertools
import time

from realstate.kernel.render import (
    bag_render,
    canonical_render,
)
from realstate.models.loaded import model_inv_freq
from realstate.replay import properties as P
from realstate.replay.context import Replay, f64_bits
from realstate.replay.fidelity import FidelityRow, placement_fidelity
from realstate.replay.settings import ReplaySettings
from realstate.replay.tables import decodes_json
from spec import (
    ClaimResult,
)

# Fidelity floor per storage dtype: one rounding of the storage format, plus the model's own
# arithmetic at a different position, stays well above these on every layer.
MIN_COSINE = {"bfloat16": 0.9999, "float16": 0.99999, "float32": 0.999999}


def c8_decode(r: Replay) -> ClaimResult:
    """The final agent decodes identically from every permutation's canonical render (each
    permutation rendered by its own calls; the renders decoded in batches of one row count);
    BagMerge decodes of the full set in every order are reported with their text (they are
    expected to differ)."""
    started = time.perf_counter()
    alone_differs = 0  # batch rows that differ from their render decoded beside other renders
    for n in r.arities:
        row, perms = r.row(n), list(itertools.permutations(r.fragments[:n]))
        canonical = list(r.continue_from_each(
            (r.render(r.state_of(perm), n) for perm in perms), f"realstate n={n}: decodes", len(perms)))
        row.canonical_continuations.update(canonical)
        if n == len(r.fragments):
            bag = list(r.continue_from_each((bag_render(perm, engine=r.engine) for perm in perms),
                                            f"realstate n={n}: BagMerge decodes", len(perms)))
            row.bag_continuations.update(bag)
            # the batch must not mix rows: the last order's renders, decoded beside renders of
            # other bytes in a batch of the same shape, give its rows
            last = (r.render(r.state_of(perms[-1])), bag_render(perms[-1], engine=r.engine))
            rows = r.decode_rows(last[0], len(perms))
            position = (len(perms) - 1) % rows
            fillers = (bag_render(perms[0], engine=r.engine), last[1])  # the first of other bytes is used
            for target, decoded in zip(last, (canonical[-1], bag[-1])):
                filler = next((x for x in fillers if x.digest() != target.digest()), target)
                alone_differs += decoded != r.continue_alongside(target, filler, rows, position)
    rows = [r.rows[n] for n in r.arities]
    full = rows[-1]
    canonical = next(iter(full.canonical_continuations))
    shown = (f"decodes {r.text(canonical)} from all {full.n}! orders" if len(full.canonical_continuations) == 1
             else f"{len(full.canonical_continuations)} different decodes at n={full.n}")
    batch = "" if not alone_differs else (f"; {alone_differs} of 2 batch rows DIFFER from the render decoded "
                                          f"beside other renders")
    return P.DECODE.tally(
        len(rows) + 2, sum(len(x.canonical_continuations) > 1 for x in rows) + alone_differs,
        "arities and rows decoded beside other renders", time.perf_counter() - started,
        figure=f"{[len(x.canonical_continuations) for x in rows]} distinct per n; {shown}; BagMerge at "
               f"n={full.n}: {len({c.tokens for c in full.bag_continuations})} different continuations "
               f"({len({c.last_logits_sha256 for c in full.bag_continuations})} logits digests){batch}",
        canonical_tokens=[list(next(iter(x.canonical_continuations)).tokens) for x in rows
                          if len(x.canonical_continuations) == 1],
        decodes=decodes_json(r))


def c8_frequencies(r: Replay) -> ClaimResult:
    """The frequencies the engine re-encodes with are bit for bit the model's own."""
    model_freqs = [f64_bits(f) for f in model_inv_freq(r.lm.model)]
    used = [f64_bits(float(f)) for f in r.engine.frequencies(r.lm.fingerprint)]
    differ = sum(a != b for a, b in zip(model_freqs, used)) + abs(len(model_freqs) - len(used))
    return P.FREQUENCIES.tally(len(model_freqs), differ, "frequencies",
                               figure=f"{differ} of {len(used)} frequencies differ from the model's")


def c8_fidelity(r: Replay) -> ClaimResult:
    """Re-encoded keys against the model's own RoPE at the target offsets, per layer."""
    started = time.perf_counter()
    rows = rendered_fidelity(r, r.settings)
    r.fidelity_rows = rows
    floor = MIN_COSINE[r.lm.dtype]
    worst_cos = min(min(x.rope_min_cosine) for x in rows)
    worst_err = max(max(x.rope_max_abs_error) for x in rows)
    prefill_cos = min(min(x.prefill_min_cosine) for x in rows)
    below = sum(min(x.rope_min_cosine) < floor for x in rows)
    return P.FIDELITY.tally(len(rows), below, "placements", time.perf_counter() - started,
                            figure=f"min cosine {worst_cos:.7f} (floor {floor}) on renders at bases <= "
                                   f"{max(x.base for x in rows)}, max abs error {worst_err:.4g} (full "
                                   f"re-prefill: min cosine {prefill_cos:.7f}, not thresholded)",
                            floor=floor, rows=[x.to_json() for x in rows])


def rendered_fidelity(replay: Replay, settings: ReplaySettings) -> list[FidelityRow]:
    """C8 on rendered caches: the full set rendered by the engine at base 0 and at each fidelity
    offset, and each placement's slice read back from the render and compared with the model's
    own RoPE at that placement's offset."""
    runs = {run.fragment.content_id: run for run in replay.runs}  # captures checked by run_agent
    total = sum(f.tokens for f in replay.fragments)
    limit = replay.fragments[0].fingerprint.max_positions - total
    bases = sorted({0, *(min(o, limit) for o in settings.fidelity_offsets)})
    rows: list[FidelityRow] = []
    for i, base in enumerate(bases):
        rendered = canonical_render(replay.fragments, base, engine=replay.engine)
        position = 0
        for placement in rendered.layout:
            n = placement.fragment.tokens
            run = runs[placement.fragment.content_id]
            moved = rendered.keys[:, :, position:position + n]
            rows.append(placement_fidelity(replay.lm, run, moved, placement.offset, base))
            position += n
        replay.progress("realstate: fidelity", i + 1, len(bases))
    return rows


def c3_cross_device(r: Replay) -> ClaimResult:
    """The canonical render on the device and on the CPU have the same SHA-256."""
    started = time.perf_counter()
    device_digest = canonical_render(r.fragments, engine=r.engine).digest()
    cpu_digest = canonical_render([f.to("cpu") for f in r.fragments], engine=r.engine).digest()
    equal = device_digest == cpu_digest
    return P.CROSS_DEVICE.holds_if(equal, f"{r.lm.device.type} {device_digest[:16]} vs cpu {cpu_digest[:16]}",
                                   time.perf_counter() - started, device_digest=device_digest,
                                   cpu_digest=cpu_digest)
