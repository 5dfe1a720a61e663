"""The concrete side of canonmerge: fragments from real transformers Qwen3 caches, content ids,
exact order keys, RoPE re-encoding, the three renders, and the bit-for-bit replay of the claims.

Library use (see README): build ``Fragment``s from your agents' caches with
``Fragment.from_cache``, merge replicas with ``fragment_set(...).merge(...)`` and render with
``canonical_merge`` to get a ``DynamicCache`` ready for decoding."""

from realstate.fingerprint import Fingerprint
from realstate.fragment import Fragment, fragment_set
from realstate.render import Rendered, bag_merge, canonical_merge, canonical_render, naive_concat

__all__ = [
    "Fingerprint",
    "Fragment",
    "Rendered",
    "bag_merge",
    "canonical_merge",
    "canonical_render",
    "fragment_set",
    "naive_concat",
]
