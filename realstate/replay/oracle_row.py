"""The replay's oracle row (C3): every distinct render the other checks made, the full set on
every render path and the library's defaults, against the independent oracle byte for byte."""

from __future__ import annotations

import dataclasses

import time
from collections.abc import Sequence
from typing import Any

import torch

from realstate.evidence.probes import KERNEL_PROBE_THREADS, PER_FRAGMENT, large_path_engines
from realstate.kernel.engine import Engine, batched_up_to, chunked, unfused
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import (
    bag_merge,
    bag_render,
    canonical_merge,
    canonical_render,
    canonical_renders,
    layout,
    naive_concat,
    naive_render,
)
from realstate.kernel.rope import NUMBA, fused_kernel
from realstate.replay import properties as P
from realstate.replay.context import Replay, tied_twin
from spec import (
    ClaimResult,
)

ORACLE_BASE = 13  # a non-zero base for the oracle's own cases (a render that ignores base shows)


# what a broken render raises: in the oracle row a crash is a mismatch, named, not a traceback
RENDER_CRASHES = (IndexError, ValueError, RuntimeError, TypeError)


def c3_oracle(r: Replay) -> ClaimResult:
    """Every distinct render recorded by the other checks, the full set in every mode at base 0
    and ORACLE_BASE, and every fragment's id, m and key, against the independent oracle."""
    import oracle
    from realstate.evidence.oracle_bridge import compare_render, fragment_mismatches, oracle_render, render_bytes

    started = time.perf_counter()
    failures: list[dict[str, Any]] = []
    twin = tied_twin(r.fragments[0])
    fragments = [*r.fragments, *([twin] if twin is not None else [])]
    for f in fragments:
        if problems := fragment_mismatches(f):
            failures.append({"fragment": f.content_id.hex()[:16], "first": problems[:2]})
    expected: dict[int, Any] = {}
    for (n, digest), state in r.rendered.items():
        want = expected.setdefault(n, oracle_render("canonical", r.fragments[:n], 0))
        if digest == want.digest:
            continue
        got = render_bytes(canonical_render(state, engine=r.engine))
        mismatches = oracle.compare(got, want, limit=3)
        if mismatches or got.digest != digest:
            failures.append({"n": n, "digest": digest[:16],
                             "first": [str(m) for m in mismatches] or ["the render is not deterministic"]})
    tokens = sum(f.tokens for f in r.fragments)
    head_dim = r.fragments[0].keys.shape[-1]
    # chunks of 5 positions besides chunk_probes' two: a piece that ends inside a later chunk
    # with several of its rows there (what real-size renders, 4,096 rows a chunk, do all the time)
    engines = [r.engine, *large_path_engines(r.engine, tokens, head_dim),
               chunked(unfused(r.engine), 5 * head_dim), PER_FRAGMENT]
    # the full set and its first fragment alone (a path that reads a second fragment breaks there),
    # then layouts the agents' fragments never form (_layout_probes), on every path
    cases = [(mode, base, engine, subset) for mode in ("canonical", "bag", "naive") for base in (0, ORACLE_BASE)
             for engine in engines for subset in (r.fragments, r.fragments[:1])]
    cases += [("bag", base, engine, probe) for probe in _layout_probes(r.fragments) for base in (0, ORACLE_BASE)
              for engine in engines]
    for mode, base, engine, subset in cases:
        try:
            mismatches = compare_render(mode, subset, base, engine, limit=3)
        except RENDER_CRASHES as exc:
            mismatches = [f"the render raised {type(exc).__name__}: {exc}"]
        if mismatches:
            failures.append({"mode": mode, "base": base, "engine": engine.name, "fragments": len(subset),
                             "first": [str(m) for m in mismatches]})
    # the batched paths (the per-fragment engine renders one at a time), and a batch bound of one
    # fragment's render: in one call, the one-fragment sets are written together and the full
    # sets each alone (the path a real-size render takes when rendered beside others)
    first = r.fragments[0]
    together_engines = [*engines[:-1], batched_up_to(r.engine, first.keys.numel())]
    together_count, together = _together_mismatches(r, together_engines)
    failures += together
    api = _public_api_mismatches(r)
    failures += api
    failures += _comparison_controls(oracle, oracle_render("canonical", r.fragments, 0))
    checked = len(fragments) + len(r.rendered) + len(cases) + len(PUBLIC_API) + 2 + together_count + 2
    return P.ORACLE.tally(checked, len(failures), "fragments and renders", time.perf_counter() - started,
                          figure=f"{checked - len(failures)}/{checked} equal: {len(fragments)} fragments' "
                                 f"ids, m and keys; {len(r.rendered)} distinct renders of {r.renders}; "
                                 f"{len(cases)} renders of the full set, of one fragment and of two probe "
                                 f"layouts (canonical, bag, naive at base 0 and {ORACLE_BASE}, each on the small "
                                 f"path, the compiled kernel{_fused_note(r.fragments[0].keys)} on the process's "
                                 f"threads and on {KERNEL_PROBE_THREADS}, the torch chunked path at three "
                                 f"chunk sizes and the per-fragment path); "
                                 f"{together_count} renders of sets written together ({len(together_engines)} "
                                 f"paths, both bases); {len(PUBLIC_API) + 2} "
                                 f"library calls with their defaults (the three DynamicCache renders, layout, "
                                 f"canonical_renders); 2 controls of the comparison (a layout changed at one entry)",
                          failures=failures[:5])


def _comparison_controls(oracle: Any, want: Any) -> list[dict[str, Any]]:
    """The comparison's own controls, in every replay: ``want`` with its layout naming another
    fragment at the same offset, and with the same fragment at another offset (bytes and digest
    unchanged, so only the layout can tell) must each be reported as a layout mismatch."""
    (first, at), rest = want.layout[0], tuple(want.layout[1:])
    other = rest[0][0] if rest else bytes(len(first))
    moved = {"another fragment at the same offset": ((other, at), *rest),
             "the same fragment at another offset": ((first, at + 1), *rest)}
    return [{"control": name, "first": ["the comparison did not report the changed layout"]}
            for name, layout in moved.items()
            if not any(m.field == "layout" for m in oracle.compare(dataclasses.replace(want, layout=layout), want))]


def _fused_note(keys: torch.Tensor) -> str:
    """Says so where the compiled kernel's engine fell back to the torch path (numba missing,
    CUDA keys or float16): the replay still passes, but it has not exercised the kernel."""
    if fused_kernel(keys) is not None:
        return ""
    return f" (which does not apply to {keys.dtype} keys on {keys.device.type}" + (
        "" if NUMBA else " or without numba") + ": the torch path)"


def _together_calls(fragments: Sequence[Fragment]) -> list[list[list[Fragment]]]:
    """The states of each ``canonical_renders`` call: first the full set, the same set with every
    key and value negated (other bytes, the same tokens, starts and m — squared norms do not see
    a sign — so the same layout shape), the full set in reverse, and the first fragment and its
    negated twin (two batches; one that mixed up its members' tensors shows in the twins); then
    two states of different shapes in one call (each its own batch of one)."""
    twins = [Fragment(f.fingerprint, f.start, -f.keys, -f.values) for f in fragments]
    return [[list(fragments), twins, list(fragments)[::-1], twins[:1], list(fragments[:1])],
            [list(fragments), list(fragments[:1])]]


def _together_mismatches(r: Replay, engines: Sequence[Engine]) -> tuple[int, list[dict[str, Any]]]:
    """Each call of ``_together_calls`` made with ``canonical_renders`` per engine and
    base, against the oracle's render of that set (one count per set, engine and base)."""
    import oracle
    from realstate.evidence.oracle_bridge import oracle_render, render_bytes

    calls = _together_calls(r.fragments)
    wanted = {(c, i, base): oracle_render("canonical", s, base) for c, states in enumerate(calls)
              for i, s in enumerate(states) for base in (0, ORACLE_BASE)}
    failures: list[dict[str, Any]] = []
    for engine in engines:
        for base in (0, ORACLE_BASE):
            for c, states in enumerate(calls):
                try:
                    rendered = canonical_renders(states, base, engine)
                except RENDER_CRASHES as exc:
                    failures.append({"together": c, "base": base, "engine": engine.name,
                                     "first": [f"the render raised {type(exc).__name__}: {exc}"]})
                    continue
                for i, got in enumerate(rendered):
                    if mismatches := oracle.compare(render_bytes(got), wanted[c, i, base], limit=3):
                        failures.append({"together": f"{c}.{i}", "base": base, "engine": engine.name,
                                         "first": [str(m) for m in mismatches]})
    return len(engines) * 2 * sum(len(states) for states in calls), failures


def _layout_probes(fragments: Sequence[Fragment]) -> list[list[Fragment]]:
    """Bag layouts the agents' fragments do not form, built from their bytes (at base 0):
    a fragment that lands on its own start (delta 0, so copied untouched, and holding -0 keys that a
    rotation by 0 would turn into +0) between two that move; and one fragment longer than the
    head dimension (a path that mixes up the token and head axes shows there)."""
    first, second, third = (list(fragments) * 3)[:3]
    kept_keys = first.keys.clone() if second is first else second.keys.clone()
    kept_keys.view(-1)[::5] = -0.0
    moved = Fragment(first.fingerprint, first.start + 7, first.keys, first.values)
    kept = Fragment(second.fingerprint, first.tokens, kept_keys, second.values)
    last = Fragment(third.fingerprint, 0, third.keys, third.values)
    head_dim, total = first.keys.shape[-1], sum(f.tokens for f in fragments)
    long = bag_render(list(fragments) * (head_dim // total + 1)).as_fragment()
    return [[moved, kept, last], [long]]


PUBLIC_API = (("canonical", canonical_merge, canonical_render), ("bag", bag_merge, bag_render),
              ("naive", naive_concat, naive_render))


def _public_api_mismatches(r: Replay) -> list[dict[str, Any]]:
    """The library's DynamicCache API with its defaults (base 0, and ``Fragment.from_cache``'s
    start 0) holds the render the oracle checks at base 0: read back as a fragment, the cache has
    the content id of that render packaged at base 0; ``layout``'s default base is 0; and
    ``canonical_renders`` with its default base gives the oracle's render at base 0."""
    found = []
    for mode, api, render in PUBLIC_API:
        back = Fragment.from_cache(api(r.fragments), r.lm.fingerprint).content_id
        want = render(r.fragments).as_fragment().content_id
        if back != want:
            found.append({"api": api.__name__, "first": [f"cache read back as {back.hex()[:16]}, the base-0 "
                                                         f"{mode} render is {want.hex()[:16]}"]})
    offsets, at = [], 0
    for f in r.fragments:
        offsets.append(at)
        at += f.tokens
    if [p.offset for p in layout(r.fragments)] != offsets:
        found.append({"api": "layout", "first": [f"default layout offsets {[p.offset for p in layout(r.fragments)]}, "
                                                 f"want {offsets} (base 0)"]})
    from realstate.evidence.oracle_bridge import oracle_render

    many, want_digest = canonical_renders([r.fragments])[0].digest(), oracle_render("canonical", r.fragments, 0).digest
    if many != want_digest:
        found.append({"api": "canonical_renders", "first": [f"default render {many[:16]}, the oracle's at base 0 "
                                                             f"{want_digest[:16]}"]})
    return found
