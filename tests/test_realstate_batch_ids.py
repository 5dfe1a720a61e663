"""The content ids of renders written together (``BatchContentIds``), against ``content_id_of``
of each render's own tensors: the framing, the slice each id reads, and the fallback for a batch
that cannot be read where it lies."""

import itertools

import pytest
import torch

from realstate import fragment_set
from realstate.kernel.fragment import BatchContentIds, content_id_of
from realstate.kernel.render import canonical_render, canonical_renders
from tests.realstate_helpers import bits, random_fragment, tiny_fingerprint

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_each_id_is_the_content_id_of_its_own_slice(dtype):
    fp = tiny_fingerprint(dtype)
    g = torch.Generator().manual_seed(5)
    keys = torch.randn(4, fp.layers, fp.kv_heads, 3, fp.head_dim, generator=g).to(DTYPES[dtype])
    values = torch.randn(4, fp.layers, fp.kv_heads, 3, fp.head_dim, generator=g).to(DTYPES[dtype])
    strided = keys.transpose(0, 1).contiguous().transpose(0, 1)   # the same elements, not contiguous
    assert not strided.is_contiguous()
    for k, start in ((keys, 0), (keys, 9), (strided, 2)):
        ids = BatchContentIds(fp, start, k, values)
        want = [content_id_of(fp, start, k[i].contiguous(), values[i]) for i in range(4)]
        assert [ids.of(i) for i in range(4)] == want
        assert len(set(want)) == 4


def test_a_batch_differing_in_one_bit_of_one_slice_changes_that_id_only():
    fp = tiny_fingerprint()
    g = torch.Generator().manual_seed(6)
    keys = torch.randn(3, fp.layers, fp.kv_heads, 2, fp.head_dim, generator=g).to(torch.bfloat16)
    values = keys.clone()
    before = [BatchContentIds(fp, 0, keys, values).of(i) for i in range(3)]
    bits(values)[1, -1, -1, -1, -1] ^= 1     # the last byte of the middle slice's values
    after = [BatchContentIds(fp, 0, keys, values).of(i) for i in range(3)]
    assert [a == b for a, b in zip(before, after)] == [True, False, True]


def test_renders_of_one_batch_digest_their_own_tensors_even_when_replaced():
    """A render written in a batch hashes its slice of the batch; one whose tensors were replaced
    since hashes the tensors it holds now."""
    fp = tiny_fingerprint()
    fs = [random_fragment(fp, n, seed=n, start=s) for n, s in ((3, 0), (2, 9), (4, 1))]
    states = [fragment_set(p) for p in itertools.permutations(fs)]
    rendered = canonical_renders(states, 4)
    assert all(r.batch is not None for r in rendered)
    alone = canonical_render(states[0], 4).digest()
    assert {r.digest() for r in rendered} == {alone}
    changed = rendered[2]
    keys = changed.keys.clone()
    bits(keys)[0, 0, 0, 0] ^= 1
    changed.keys = keys
    assert changed.digest() == content_id_of(fp, 4, keys, changed.values).hex() != alone
    assert [r.digest() for i, r in enumerate(rendered) if i != 2] == [alone] * (len(states) - 1)
