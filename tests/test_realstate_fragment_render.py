"""Fragments, content ids, RoPE re-encoding and the three renders, on small synthetic tensors."""

import hashlib
import itertools
import math

import pytest
import torch
from transformers import DynamicCache

from realstate import bag_merge, canonical_merge, canonical_render, fragment_set, naive_concat
from realstate.kernel.fragment import Fragment
from realstate.kernel.render import bag_render, naive_render
from realstate.kernel.rope import reencode_keys, reencode_reference, rotate_half, rotation_tables
from spec import InputError
from tests.realstate_helpers import bits, random_fragment, tiny_fingerprint


def test_content_id_is_sha256_of_header_then_raw_little_endian_bytes():
    fp = tiny_fingerprint()
    f = random_fragment(fp, 3, seed=1, start=7)
    from realstate.kernel.fragment import _HEADER, CONTENT_ID_MAGIC

    header = _HEADER.pack(CONTENT_ID_MAGIC, fp.digest, 1, 2, 2, 3, 4, 7)
    expected = hashlib.sha256(header + bits(f.keys).numpy().tobytes() + bits(f.values).numpy().tobytes())
    assert f.content_id == expected.digest()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_content_id_reads_the_same_bytes_in_place_and_through_numpy(dtype):
    """The zero-copy path (a contiguous CPU tensor read at its data pointer) hashes what the numpy
    view gives, also for a contiguous view that starts inside a larger buffer; a strided view
    takes the copying path and still hashes its logical bytes."""
    from realstate.kernel.fragment import _hash_bytes, tensor_bytes

    big = torch.randn(3, 2, 5, 4, generator=torch.Generator().manual_seed(3)).to(dtype)
    for t in (big, big[1:], big[:, :, 1:3], big.transpose(2, 3)):
        fast, slow = hashlib.sha256(), hashlib.sha256(tensor_bytes(t))
        _hash_bytes(fast, t)
        assert fast.digest() == slow.digest()
        assert bytes(tensor_bytes(t)) == bits(t.contiguous()).numpy().tobytes()


def test_content_id_changes_with_any_byte_start_or_fingerprint():
    fp = tiny_fingerprint()
    f = random_fragment(fp, 3, seed=1)
    keys = f.keys.clone()
    bits(keys)[1, 0, 2, 3] ^= 1
    assert Fragment(fp, 0, keys, f.values).content_id != f.content_id
    assert Fragment(fp, 1, f.keys, f.values).content_id != f.content_id
    other_fp = tiny_fingerprint(weights="synthetic:other")
    assert Fragment(other_fp, 0, f.keys, f.values).content_id != f.content_id
    assert f.copy().content_id == f.content_id and f.copy() is not f


def test_fragment_validation_names_the_problem():
    fp = tiny_fingerprint()
    good = random_fragment(fp, 2, seed=0)
    with pytest.raises(InputError, match="dtype"):
        Fragment(fp, 0, good.keys.float(), good.values)
    with pytest.raises(InputError, match="do not match"):
        Fragment(fp, 0, good.keys[:, :1], good.values[:, :1])
    with pytest.raises(InputError, match="start"):
        Fragment(fp, -1, good.keys, good.values)
    with pytest.raises(InputError, match="maximum"):
        Fragment(tiny_fingerprint(max_positions=3), 2, good.keys, good.values)


def test_delta_zero_copies_bits_exactly_including_negative_zero_and_nan():
    keys = torch.tensor([[[[-0.0, float("nan"), 1.0, -2.5]]]], dtype=torch.bfloat16)
    out = reencode_keys(keys, 0, (1.0, 0.01))
    assert torch.equal(bits(out), bits(keys)) and out.data_ptr() != keys.data_ptr()


def test_reencoding_is_the_neox_rotation_by_delta():
    inv_freq = (1.0, 0.01)
    keys = torch.randn(1, 1, 3, 4, dtype=torch.float32, generator=torch.Generator().manual_seed(0))
    delta = 5
    out = reencode_keys(keys, delta, inv_freq)
    x1, x2 = keys[..., :2].double(), keys[..., 2:].double()
    angles = torch.tensor([delta * f for f in inv_freq], dtype=torch.float64)
    expect = torch.cat((x1 * angles.cos() - x2 * angles.sin(), x2 * angles.cos() + x1 * angles.sin()), -1)
    assert torch.allclose(out.double(), expect, atol=1e-6)
    back = reencode_keys(out, -delta, inv_freq)
    assert torch.allclose(back, keys, atol=1e-6)


def test_rotation_tables_are_float64_rounded_once_to_float32():
    cos, sin = rotation_tables((1.0, 0.5), 30000)
    assert cos.dtype == torch.float32
    assert cos[0].item() == torch.tensor(math.cos(30000.0), dtype=torch.float64).float().item()
    assert torch.equal(cos[:2], cos[2:]) and torch.equal(sin[:2], sin[2:])


def test_rotate_half_matches_transformers():
    from transformers.models.qwen3.modeling_qwen3 import rotate_half as hf_rotate_half

    x = torch.randn(2, 3, 8)
    assert torch.equal(rotate_half(x), hf_rotate_half(x))


def frags(n=4, dtype="bfloat16"):
    fp = tiny_fingerprint(dtype)
    return [random_fragment(fp, 1 + i % 3, seed=10 + i) for i in range(n)]


def test_canonical_render_is_one_digest_over_every_permutation_and_bag_is_not():
    fs = frags(4)
    canonical = {canonical_render(p).digest() for p in itertools.permutations(fs)}
    bag = {bag_render(p).digest() for p in itertools.permutations(fs)}
    assert len(canonical) == 1 and len(bag) == 24


def test_render_is_a_dynamic_cache_with_contiguous_re_encoded_layout():
    fs = frags(3)
    cache = canonical_merge(fragment_set(fs))
    assert isinstance(cache, DynamicCache) and len(cache.layers) == 2
    assert cache.get_seq_length() == sum(f.tokens for f in fs)
    rendered = canonical_render(fs)
    for p in rendered.layout:
        n = p.fragment.tokens
        where = [q.offset for q in rendered.layout]
        assert where == sorted(where)
        expect = reencode_keys(p.fragment.keys, p.offset - p.fragment.start, p.fragment.fingerprint.inv_freq)
        assert torch.equal(bits(rendered.keys[:, :, p.offset:p.offset + n]), bits(expect))
        assert torch.equal(bits(rendered.values[:, :, p.offset:p.offset + n]), bits(p.fragment.values))


def test_bag_keeps_duplicates_canonical_does_not():
    a, b = frags(2)
    assert bag_merge([a, b, a.copy()]).get_seq_length() == 2 * a.tokens + b.tokens
    assert canonical_render([a, b, a.copy()]).digest() == canonical_render([b, a]).digest()


def test_naive_concat_does_not_re_encode():
    a, b = frags(2)
    rendered = naive_render([a, b])
    assert torch.equal(bits(rendered.keys[:, :, a.tokens:]), bits(b.keys))
    assert naive_concat([a, b]).get_seq_length() == a.tokens + b.tokens
    assert naive_render([a, b]).digest() != bag_render([a, b]).digest()


def test_n2_canonical_equals_one_bag_order():
    a, b = frags(2)
    assert canonical_render([a, b]).digest() in {bag_render([a, b]).digest(), bag_render([b, a]).digest()}


def test_mismatched_fingerprints_never_merge():
    a = frags(1)[0]
    other = random_fragment(tiny_fingerprint(weights="synthetic:other"), 2, seed=3)
    with pytest.raises(InputError, match="different fingerprints.*weights"):
        canonical_render([a, other])


def test_render_positions_are_bounded_by_the_model_maximum():
    fp = tiny_fingerprint(max_positions=4)
    fs = [random_fragment(fp, 3, seed=i) for i in range(2)]
    with pytest.raises(InputError, match="exceed the model's maximum 4"):
        canonical_render(fs)


def test_empty_render_is_an_error():
    with pytest.raises(InputError, match="no fragments"):
        canonical_render([])


@pytest.fixture(params=["fused", "torch"])
def large_path(request, monkeypatch):
    """Which path renders above the chunk size take: the compiled kernel (realstate.kernel.fused, where
    it applies) or torch's operations (as where numba is not installed)."""
    import realstate.kernel.rope as rope

    if request.param == "torch":
        monkeypatch.setattr(rope, "NUMBA", False)
    return request.param


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("shape", [(2, 2, 3, 8), (3, 2, 700, 64), (1, 1, 1100, 128), (4, 3, 37, 128)])
@pytest.mark.parametrize("chunk", [None, 1000])
def test_fast_reencoding_is_bit_identical_to_the_literal_formula(monkeypatch, large_path, dtype, shape, chunk):
    """Chunked per-half arithmetic (or the compiled kernel) == k*cos + rotate_half(k)*sin rounded
    once, on every non-NaN input: random, signed zeros, infinities, subnormals, the largest finite
    values."""
    import realstate.kernel.rope as rope

    if chunk is not None:
        monkeypatch.setattr(rope, "CHUNK_ELEMENTS", chunk)
    g = torch.Generator().manual_seed(shape[2])
    keys = (torch.randn(shape, generator=g) * 4).to(dtype)
    flat = keys.view(-1)
    specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), 1e-40, -1e-41,
                             torch.finfo(dtype).max, -torch.finfo(dtype).max, torch.finfo(dtype).tiny])
    flat[: len(specials)] = specials.to(dtype)
    inv_freq = tuple(1.0 / (1e6 ** (2 * i / shape[-1])) for i in range(shape[-1] // 2))
    for delta in (1, -3, 30000):
        assert torch.equal(bits(reencode_keys(keys, delta, inv_freq)), bits(reencode_reference(keys, delta, inv_freq)))


@pytest.mark.parametrize("field, value, message", [
    ("version", True, "version"),
    ("version", 1.0, "version"),
    ("inv_freq_f64", ["40c3 88 00 00 00"], "inv_freq_f64"),
    ("inv_freq_f64", ["3FF0000000000000"], "inv_freq_f64"),
    ("rope_theta_f64", "zz", "rope_theta_f64"),
    ("layers", True, "layers"),
    ("dtype", "int8", "dtype"),
])
def test_fingerprint_from_json_rejects_malformed_fields(field, value, message):
    from realstate.kernel.fingerprint import Fingerprint

    data = tiny_fingerprint().to_json()
    if field == "inv_freq_f64":
        value = value * len(data["inv_freq_f64"])
    data[field] = value
    with pytest.raises(InputError, match=message):
        Fingerprint.from_json(data)


def test_fingerprint_json_round_trip():
    from realstate.kernel.fingerprint import Fingerprint

    fp = tiny_fingerprint()
    assert Fingerprint.from_json(fp.to_json()) == fp


@pytest.mark.parametrize("chunk", [64, 256, 1000, 1 << 20])
def test_chunk_boundaries_do_not_change_the_bits(monkeypatch, large_path, chunk):
    """Chunks split across (layer, head) blocks and within a block's rows give the same bits (and
    so does the compiled kernel, here writing into a destination with gaps between its rows)."""
    import realstate.kernel.rope as rope

    keys = torch.randn(3, 2, 37, 16, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    inv_freq = tuple(1.0 / (1e6 ** (2 * i / 16)) for i in range(8))
    expected = reencode_reference(keys, 77, inv_freq)
    monkeypatch.setattr(rope, "CHUNK_ELEMENTS", chunk)
    dest = torch.zeros(3, 2, 40, 16, dtype=torch.bfloat16)
    rope.reencode_into(dest[:, :, 2:39], keys, 77, inv_freq)
    assert torch.equal(bits(dest[:, :, 2:39]), bits(expected))
    assert torch.equal(bits(dest[:, :, :2]), bits(torch.zeros(3, 2, 2, 16, dtype=torch.bfloat16)))


LAYOUTS = {  # (tokens, delta) of fragments lying back to back
    "first in place": [(3, 0), (5, 7), (2, 12), (4, 14)],
    "in place in the middle": [(3, 4), (5, 0), (2, -9), (4, 30000)],
    "none in place": [(1, 1), (6, -2)],
    "all in place (naive)": [(2, 0), (3, 0)],
    "one fragment": [(37, 77)],
}


def literal_render_keys(pieces, inv_freq):
    return torch.cat([reencode_reference(keys, delta, inv_freq) for keys, delta in pieces], dim=2)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("chunk", [16, 100, 1 << 18])
def test_batched_render_keys_equal_the_literal_formula(monkeypatch, large_path, dtype, name, chunk):
    """Every arithmetic layout of a render's keys — rotated in place after one concatenation
    (small), or chunk by chunk from the sources (large; chunks splitting blocks and rows), or by
    the compiled kernel — gives the literal formula's bits, special values included."""
    import realstate.kernel.rope as rope

    monkeypatch.setattr(rope, "CHUNK_ELEMENTS", chunk)
    g = torch.Generator().manual_seed(len(name))
    head_dim = 16
    inv_freq = tuple(1.0 / (1e6 ** (2 * i / head_dim)) for i in range(head_dim // 2))
    specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), 1e-40, -1e-41,
                             torch.finfo(dtype).max, -torch.finfo(dtype).max, torch.finfo(dtype).tiny])
    pieces = []
    for n, delta in LAYOUTS[name]:
        keys = (torch.randn(3, 2, n, head_dim, generator=g) * 4).to(dtype)
        keys.view(-1)[: len(specials)] = specials.to(dtype)
        pieces.append((keys, delta))
    got = rope.render_keys([keys for keys, _ in pieces], tuple((k.shape[2], d) for k, d in pieces), inv_freq)
    assert got.shape == (3, 2, sum(n for n, _ in LAYOUTS[name]), head_dim)
    assert torch.equal(bits(got), bits(literal_render_keys(pieces, inv_freq)))


def test_nan_keys_stay_nan_in_every_layout(monkeypatch, large_path):
    import realstate.kernel.rope as rope

    keys = torch.randn(1, 1, 4, 8).to(torch.bfloat16)
    keys[0, 0, 1, 2] = float("nan")
    inv_freq = (1.0, 0.1, 0.01, 0.001)
    for chunk in (8, 1 << 18):
        monkeypatch.setattr(rope, "CHUNK_ELEMENTS", chunk)
        out = rope.render_keys([keys], ((4, 5),), inv_freq)
        assert torch.isnan(out[0, 0, 1, 2]) and torch.isnan(out[0, 0, 1, 6])
        assert not torch.isnan(out[0, 0, [0, 2, 3]]).any()


def test_batched_render_equals_one_engine_call_per_fragment():
    """The canonical engine's batched twin and its per-fragment re-encoding give the same bytes
    (an engine whose re-encoding has no batched twin, such as a planted bug, takes the latter)."""
    import dataclasses

    from realstate.kernel.engine import CANONICAL
    from realstate.kernel.rope import reencode_into

    per_fragment = dataclasses.replace(CANONICAL, name="per-fragment",
                                       reencode=lambda *args: reencode_into(*args))
    for dtype in ("bfloat16", "float32"):
        fs = [random_fragment(tiny_fingerprint(dtype), n, seed=n, start=s) for n, s in ((3, 0), (2, 9), (4, 1))]
        for base in (0, 5):
            assert canonical_render(fs, base).digest() == canonical_render(fs, base, engine=per_fragment).digest()
            assert bag_render(fs, base).digest() == bag_render(fs, base, engine=per_fragment).digest()


def test_rotation_tables_are_cached_per_delta_and_left_untouched_by_renders():
    from realstate.kernel.rope import _delta_table

    fs = frags(4)
    inv_freq = fs[0].fingerprint.inv_freq
    before = {d: _delta_table(inv_freq, d, torch.device("cpu")).clone() for d in (1, 2, 3)}
    for _ in range(2):
        canonical_render(fs, base=1)
    for d, table in before.items():
        cached = _delta_table(inv_freq, d, torch.device("cpu"))
        assert cached is _delta_table(inv_freq, d, torch.device("cpu"))
        assert torch.equal(cached, table)
        cos, sin = rotation_tables(inv_freq, d)
        assert torch.equal(cached[0, 0], cos) and torch.equal(cached[1, 0], sin)


@pytest.mark.parametrize("keys, position, why", [
    (torch.zeros((2, 3, 4, 8), dtype=torch.bfloat16), 0, "shape: another head count"),
    (torch.zeros((2, 2, 4, 8), dtype=torch.float32), 0, "dtype: float32 into bfloat16"),
    (torch.zeros((2, 2, 4, 8), dtype=torch.bfloat16), 3, "position: runs past the end"),
    (torch.zeros((2, 2, 4, 8), dtype=torch.bfloat16), -1, "position: before the start"),
])
def test_reencode_spans_refuses_pieces_that_do_not_fit_the_destination(keys, position, why):
    from realstate.kernel.rope import reencode_spans

    dest = torch.zeros((2, 2, 6, 8), dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="do not fit the destination"):
        reencode_spans(dest, [(keys, position, 1)], [1.0, 0.5, 0.25, 0.125])


@pytest.mark.parametrize("shape", [(5, 8), (3, 5, 8), (2, 3, 5, 8)])
def test_reencode_keys_takes_any_leading_dimensions(shape):
    """[n, D], [H, n, D] and [L, H, n, D] keys all re-encode as the literal formula does (the
    product passes 4-D keys; the library accepts the others)."""
    keys = torch.randn(shape, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    inv_freq = [1.0, 0.5, 0.25, 0.125]
    assert torch.equal(reencode_keys(keys, 7, inv_freq).view(torch.int16),
                       reencode_reference(keys, 7, inv_freq).view(torch.int16))


def test_reencode_into_refuses_a_destination_of_another_shape():
    from realstate.kernel.rope import reencode_into

    with pytest.raises(ValueError, match=r"destination \(2, 5, 8\) != keys \(2, 4, 8\)"):
        reencode_into(torch.zeros((2, 5, 8), dtype=torch.bfloat16), torch.zeros((2, 4, 8), dtype=torch.bfloat16),
                      1, [1.0, 0.5, 0.25, 0.125])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("chunk", [None, 16])
def test_renders_written_together_hold_the_bytes_each_gives_alone(dtype, chunk):
    """``canonical_renders`` batches the torch calls of states whose layouts share a shape
    (stacked as [B·L, H, T, D], small or chunked path); each render must still be the bytes
    ``canonical_render`` gives that state alone, in the order given, with its own layout —
    across mixed groups (other sets, another fingerprint) and for a per-fragment engine."""
    import dataclasses

    from realstate.kernel.engine import CANONICAL, chunked
    from realstate.kernel.render import canonical_renders
    from realstate.kernel.rope import reencode_into

    engine = CANONICAL if chunk is None else chunked(CANONICAL, chunk)
    per_fragment = dataclasses.replace(engine, name="per-fragment", reencode=lambda *args: reencode_into(*args))
    fp, other = tiny_fingerprint(dtype), tiny_fingerprint(dtype, layers=3)
    fs = [random_fragment(fp, n, seed=n, start=s) for n, s in ((3, 0), (2, 9), (4, 1), (1, 2))]
    gs = [random_fragment(other, n, seed=10 + n, start=s) for n, s in ((2, 4), (3, 0))]
    states = [fragment_set(p) for p in itertools.permutations(fs[:3])]
    twins = [Fragment(fp, f.start, -f.keys, -f.values) for f in fs[:3]]  # other bytes, the same layout shape
    states += [fragment_set(twins), fragment_set(fs[1:]), fragment_set([fs[0]]), fragment_set(gs),
               fragment_set(gs[::-1]), fragment_set([*fs[:3], fs[1].copy()]), fragment_set(fs)]
    for eng in (engine, per_fragment):
        for base in (0, 7):
            together = canonical_renders(states, base, engine=eng)
            alone = [canonical_render(s, base, engine=eng) for s in states]
            assert [r.digest() for r in together] == [r.digest() for r in alone]
            for a, b in zip(together, alone):
                assert a.keys.is_contiguous() and a.values.is_contiguous()
                assert a.keys.shape == b.keys.shape and a.base == b.base
                assert [(p.fragment.content_id, p.offset) for p in a.layout] == \
                       [(p.fragment.content_id, p.offset) for p in b.layout]
                assert torch.equal(bits(a.keys), bits(b.keys)) and torch.equal(bits(a.values), bits(b.values))
    assert canonical_renders([]) == []


def test_small_renders_share_a_batch_and_large_ones_are_written_alone(monkeypatch):
    """Renders of one layout shape up to ``BATCH_ELEMENTS`` key elements are views into one
    batch; above it each owns its tensors (stacking large sources would only add a copy).  The
    bytes are the same either way."""
    import realstate.kernel.render as render

    fp = tiny_fingerprint()
    fs = [random_fragment(fp, n, seed=n, start=s) for n, s in ((3, 0), (2, 9), (4, 1))]
    states = [fragment_set(p) for p in itertools.permutations(fs)]
    alone = [canonical_render(s).digest() for s in states]
    small = render.canonical_renders(states)
    assert len({r.keys.untyped_storage().data_ptr() for r in small}) == 1
    elements = fp.layers * fp.kv_heads * sum(f.tokens for f in fs) * fp.head_dim
    monkeypatch.setattr(render, "BATCH_ELEMENTS", elements)  # at the bound: still one batch
    assert len({r.keys.untyped_storage().data_ptr() for r in render.canonical_renders(states)}) == 1
    monkeypatch.setattr(render, "BATCH_ELEMENTS", elements - 1)
    large = render.canonical_renders(states)
    assert len({r.keys.untyped_storage().data_ptr() for r in large}) == len(states)
    assert all(r.keys.untyped_storage().nbytes() == r.keys.nbytes for r in large)
    assert [r.digest() for r in small] == [r.digest() for r in large] == alone
    monkeypatch.undo()  # the engine's bound (how verify drives both paths) wins over the module's
    from realstate.kernel.engine import CANONICAL, batched_up_to

    for bound, storages in ((elements, 1), (elements - 1, len(states))):
        rendered = render.canonical_renders(states, engine=batched_up_to(CANONICAL, bound))
        assert len({r.keys.untyped_storage().data_ptr() for r in rendered}) == storages
        assert [r.digest() for r in rendered] == alone
