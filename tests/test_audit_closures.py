"""The survivors of the full audit that verify's new inputs close (known answers R, S, T, U, V, the
tiled m, the oracle row's one-fragment renders, probe layouts and third chunk size, content ids
from strided tensors), planted in
the source of a scratch copy and caught by `canonmerge realstate` itself.  Each is a product run,
so they run with ``-m audit`` (docs/results/audit.md lists the same mutants and their kills)."""

from __future__ import annotations

import pytest

from audit.scratch import Patch, ScratchCopy
from tests.audit_helpers import failing_rows

OV, ROPE, RENDER = "realstate/kernel/order_value.py", "realstate/kernel/rope.py", "realstate/kernel/render.py"
FRAGMENT = "realstate/kernel/fragment.py"
KNOWN_M = ("C5", "known answers: order values m (float64 bits, canonical NaN)")
KNOWN_IDS = ("C5", "known answers: fingerprint digests and content ids")
ORACLE = ("C3", "render equals the independent oracle")
PLANTS = {
    "exponent shifted the wrong way (R)": (
        Patch(OV, ".min(axis=1) >> layout.exponent_shift",
              ".min(axis=1) << layout.exponent_shift"),
        KNOWN_M),
    "exponent scaled by 3 (T)": (
        Patch(OV, "lowest_bit = 2 * (np.maximum(lowest_field, 1)",
              "lowest_bit = 3 * (np.maximum(lowest_field, 1)"),
        KNOWN_M),
    "subnormal read as the smallest normal (S)": (
        Patch(OV, "np.maximum(lowest_field, 1)",
              "np.maximum(lowest_field, 2)"),
        KNOWN_M),
    "lower level subtracted for gathered rows (V)": (
        Patch(OV, "            parent[rows] += high\n",
              "            parent[rows] -= high\n"),
        KNOWN_M),
    "largest remainder as max(r), not max|r| (V)": (
        Patch(OV, "np.maximum(remainder.max(axis=1), -remainder.min(axis=1))",
              "np.maximum(remainder.max(axis=1), +remainder.min(axis=1))"),
        KNOWN_M),
    "sticky bit without dropped bits (U)": (
        Patch(OV, "((high << shift) != accumulator)",
              "((high >> shift) != accumulator)"),
        KNOWN_M),
    "float block size (tiled m)": (
        Patch(OV, "BLOCK_ELEMENTS // dim",
              "BLOCK_ELEMENTS / dim"),
        None),
    "token and head axes mixed (long fragment)": (
        Patch(ROPE, "operations\n        dest[:, :, position:position + keys.shape[2]]",
              "operations\n        dest[:, :, position:position + keys.shape[3]]"),
        ORACLE),
    "delta-0 piece rotated (kept -0)": (
        Patch(ROPE, "        if delta != 0:\n            tables",
              "        if delta != 1:\n            tables"),
        ORACLE),
    "groups across a kept piece (probe layout)": (
        Patch(ROPE, "if group and (delta == 0 or position",
              "if group and (delta == 0 and position"),
        ORACLE),
    "piece end inside a later chunk (5-row chunks)": (
        Patch(ROPE, "x[:, lo - r0:hi - r0].copy_",
              "x[:, lo - r0:hi + r0].copy_"),
        ORACLE),
    "per-fragment path reads a second fragment (one fragment alone)": (
        Patch(RENDER, "dtype=p.sources[0].dtype,", "dtype=p.sources[1].dtype,"),
        ORACLE),
    "renders written together share the first one's values (sets rendered together)": (
        Patch(RENDER, "zip(keys.unbind(), values.unbind(), batch)",
              "zip(keys.unbind(), values[:1].expand_as(values).unbind(), batch)"),
        ORACLE),
    "renders written together share the first one's keys (sets rendered together)": (
        Patch(RENDER, "zip(keys.unbind(), values.unbind(), batch)",
              "zip(keys[:1].expand_as(keys).unbind(), values.unbind(), batch)"),
        ORACLE),
    "canonical_renders' default base off by one (library defaults)": (
        Patch(RENDER, "def canonical_renders(states: Iterable[Iterable[Fragment]], base: int = 0,",
              "def canonical_renders(states: Iterable[Iterable[Fragment]], base: int = 1,"),
        ORACLE),
    "the one-render path taken for two layouts (two sets of different shapes rendered together)": (
        Patch(RENDER, "    if len(prepared) == 1:", "    if len(prepared) == 2:"),
        ORACLE),
    "a large render written alone beside others at the next base (batch bound of one fragment)": (
        Patch(RENDER, "            rendered[i] = _render_batch([p], base, engine, batched)[0]",
              "            rendered[i] = _render_batch([p], base + 1, engine, batched)[0]"),
        ORACLE),
    "copying path byte-swaps on a little-endian machine (strided ids)": (
        Patch(FRAGMENT, "    if not _LITTLE_ENDIAN:\n        array = array.byteswap()",
              "    if _LITTLE_ENDIAN:\n        array = array.byteswap()"),
        KNOWN_IDS),
    "strided tensor read in place (strided ids)": (
        Patch(FRAGMENT, "if t.is_cpu and t.is_contiguous() and _LITTLE_ENDIAN:",
              "if t.is_cpu or t.is_contiguous() and _LITTLE_ENDIAN:"),
        KNOWN_IDS),
}


@pytest.mark.audit
@pytest.mark.parametrize("name", sorted(PLANTS))
def test_canonmerge_realstate_catches_the_closed_survivor(name, tmp_path):
    patch, row = PLANTS[name]
    out = ScratchCopy(tmp_path).apply(patch).run("realstate", "--json", timeout=900)
    assert out.returncode != 0, name
    if row is None:  # a crash (TypeError in range()) is a detection; the product must not pass
        return
    assert out.returncode == 1, out.stderr[-2000:]
    assert row in failing_rows(out.stdout), failing_rows(out.stdout)
