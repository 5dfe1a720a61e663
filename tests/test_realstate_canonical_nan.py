"""A rotated NaN key is the storage dtype's canonical quiet NaN on every path a render can take.

IEEE-754 leaves a NaN result's sign and payload to the hardware, and torch's float32 casts write
different NaNs on their vector and scalar paths; the definition fixes one NaN per dtype so a
render's bytes (and digest) are the same on every machine and device.  Each adversarial universe
(modelcheck.universes), and fragments of every dtype holding NaNs of both signs with payloads and
infinities that make a NaN from no NaN (inf − inf), is rendered on the compiled small path, the
compiled large-render kernel (one thread and three), torch's small path, torch's chunked path
(both branches), the per-fragment path and with numba taken away: one digest, the oracle's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import oracle
from modelcheck.universes import UNIVERSES
from realstate.evidence.checker_backend import RealstateBackend
from realstate.evidence.oracle_bridge import oracle_render, product_render, render_bytes
from realstate.evidence.probes import PER_FRAGMENT, large_path_engines
from realstate.kernel import rope
from realstate.kernel.dtypes import CANONICAL_NAN_BITS, raw_bits, storage_dtype
from realstate.kernel.engine import CANONICAL, Engine, chunked, unfused
from realstate.kernel.fragment import Fragment
from tests.oracle_cases import SPECIALS, fingerprint, finite_bits, fragment_from_bits

NUMBA_DTYPES = ("bfloat16", "float32", "float16")


def _engines(fragments: list[Fragment]) -> list[Engine]:
    layers, heads, _, head_dim = fragments[0].keys.shape
    tokens = sum(f.keys.shape[2] for f in fragments)
    return [CANONICAL, unfused(CANONICAL), PER_FRAGMENT, *large_path_engines(CANONICAL, tokens, head_dim)]


def _digests_on_every_path(mode: str, fragments: list[Fragment], base: int,
                           monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], oracle.RenderBytes]:
    renders = [render_bytes(product_render(mode, fragments, base, e)) for e in _engines(fragments)]
    with monkeypatch.context() as m:  # where numba is not installed: torch's paths only
        m.setattr(rope, "NUMBA", False)
        renders += [render_bytes(product_render(mode, fragments, base, e))
                    for e in (CANONICAL, chunked(CANONICAL, 8))]
    expected = oracle_render(mode, fragments, base)
    assert [oracle.compare(r, expected) for r in renders] == [[]] * len(renders)
    return [r.digest for r in renders], renders[0]


def _nan_keys(render: oracle.RenderBytes) -> np.ndarray:
    fmt = oracle.storage_format(render.dtype)
    keys = np.frombuffer(render.keys, dtype=fmt.bits_dtype)
    return keys[fmt.is_nan(keys)]


@pytest.mark.parametrize("name", list(UNIVERSES))
def test_every_universe_renders_one_digest_on_every_path(name, monkeypatch):
    universe = UNIVERSES[name]
    backend = RealstateBackend()
    fragments = [backend.build(universe.geometry, d) for d in universe.fragments]
    for mode, base in (("canonical", universe.base), ("canonical", universe.base + 5), ("bag", 3)):
        digests, render = _digests_on_every_path(mode, fragments, base, monkeypatch)
        assert digests == [digests[0]] * len(digests), (name, mode, base)
        nans = _nan_keys(render)
        assert (nans == oracle.storage_format(render.dtype).canonical_nan).all()
        if name in ("specials", "float32"):  # the universes with NaN keys: the rule is exercised
            assert len(nans) > 0


@pytest.mark.parametrize("dtype", NUMBA_DTYPES)
def test_nans_of_both_signs_with_payloads_and_inf_minus_inf_become_the_canonical_nan(dtype, monkeypatch):
    specials = SPECIALS[dtype]
    fp = fingerprint(dtype, 3, 2, 4)
    keys = finite_bits(np.random.default_rng(11), dtype, (3, 2, 6, 4), "normal:1")
    middle = keys[1]
    middle[0, 0, 0], middle[0, 1, 1], middle[1, 2, 2] = specials[11], specials[12], specials[10]  # -NaN, sNaN, +qNaN
    middle[1, 3, 0] = middle[1, 3, 2] = specials[8]  # +inf twice in a rotation pair: inf − inf
    middle[0, 4, 1], middle[0, 4, 3] = specials[8], specials[9]  # +inf and −inf: inf + (−inf)
    keys[2, 1, 5, 3] = specials[11]  # a NaN outside the middle layer
    values = keys.copy()  # values are copied untouched: their NaN payloads survive
    other = finite_bits(np.random.default_rng(12), dtype, (3, 2, 3, 4), "normal:1")
    fragments = [fragment_from_bits(fp, 4, keys, values), fragment_from_bits(fp, 0, other, other.copy())]
    for mode, base in (("canonical", 0), ("canonical", 9), ("bag", 1)):
        digests, render = _digests_on_every_path(mode, fragments, base, monkeypatch)
        assert digests == [digests[0]] * len(digests)
        nans = _nan_keys(render)
        assert len(nans) >= 8 and (nans == CANONICAL_NAN_BITS[storage_dtype(dtype)]).all()
        fmt = oracle.storage_format(dtype)
        kept = np.frombuffer(render.values, dtype=fmt.bits_dtype)
        assert int(specials[11]) in kept.tolist() and int(specials[12]) in kept.tolist()


@pytest.mark.parametrize("dtype", NUMBA_DTYPES)
def test_the_literal_formula_and_the_per_fragment_form_write_the_canonical_nan(dtype):
    torch_dtype = storage_dtype(dtype)
    bits = np.array(SPECIALS[dtype][8:12] * 4, dtype=np.uint16 if dtype != "float32" else np.uint32)
    keys = torch.from_numpy(bits.view(np.int16 if dtype != "float32" else np.int32).copy()).view(torch_dtype)
    keys = keys.reshape(1, 1, 4, 4)
    inv_freq = (1.0, 0.01)
    pattern = CANONICAL_NAN_BITS[torch_dtype]
    for turned in (rope.reencode_reference(keys, 3, inv_freq), rope.reencode_keys(keys, 3, inv_freq)):
        nan = turned.isnan()
        assert nan.any() and (raw_bits(turned)[nan] == pattern).all()
    assert torch.equal(raw_bits(rope.reencode_reference(keys, 0, inv_freq)), raw_bits(keys))  # δ = 0: untouched
    assert torch.equal(raw_bits(rope.reencode_keys(keys, 0, inv_freq)), raw_bits(keys))


def test_the_canonical_nans_are_the_oracles_and_the_compiled_kernels():
    """The product's table, the oracle's formula and the literals in the compiled kernels agree."""
    import inspect

    from realstate.kernel import fused

    for name, dtype in (("bfloat16", torch.bfloat16), ("float16", torch.float16), ("float32", torch.float32)):
        assert CANONICAL_NAN_BITS[dtype] == oracle.storage_format(name).canonical_nan
    text = inspect.getsource(fused)
    assert "np.uint16(0x7E00) if ieee_half else np.uint16(0x7FC0)" in text and "np.uint32(0x7FC00000)" in text
