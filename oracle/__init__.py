"""An independent reference for canonmerge's rendered bytes.

Written from DESIGN.md and docs/FORMAT.md alone, with the standard library and numpy only: it
shares no code with ``realstate`` (no torch, no imports from spec/realstate/modelcheck/proofs;
``tests/test_oracle_purity.py`` enforces it).  Where the product uses float64 ``fsum`` for the
order value, the oracle uses exact integers; where the product rotates with torch, the oracle
rotates with numpy float32 and rounds to bfloat16 with its own bit arithmetic.  A render the two
agree on, bit for bit, is evidence about the definition rather than about one implementation.

Input is plain data (``FragmentData``: fingerprint digest, dtype name, L, H, n, D, start, key and
value bytes) plus the rotary frequencies and the base; ``realstate.evidence.oracle_bridge`` converts
product fragments and renders to and from it."""

from oracle.compare import Mismatch, compare
from oracle.formats import FORMATS, StorageFormat, storage_format
from oracle.identity import HEADER_BYTES, MAGIC, digest_with_inputs, framed_digest, header
from oracle.order import CANONICAL_NAN_BITS, order_key, order_value_bits, total_order_rank
from oracle.render import (
    FragmentData,
    RenderBytes,
    bag_render,
    canonical_order,
    canonical_render,
    naive_render,
    render,
)

__all__ = [
    "CANONICAL_NAN_BITS",
    "FORMATS",
    "FragmentData",
    "HEADER_BYTES",
    "MAGIC",
    "Mismatch",
    "RenderBytes",
    "StorageFormat",
    "bag_render",
    "canonical_order",
    "canonical_render",
    "compare",
    "digest_with_inputs",
    "framed_digest",
    "header",
    "naive_render",
    "order_key",
    "order_value_bits",
    "render",
    "storage_format",
    "total_order_rank",
]
