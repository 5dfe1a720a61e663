"""The abstract model of canonmerge: content ids, the FragmentSet CvRDT, the ordering contract
and the registry of named claims.  Pure Python on purpose: proofs and checkers reason about this
module, so it must not depend on torch or z3 (``tests/test_layout.py`` enforces it).  Beside the
model, the stdlib-only guards every room shares against hostile input (docs/THREATS.md):
``bounded`` (reading a user's file), ``output_files`` and ``store_marker`` (writing one, never
into a store), ``arguments`` (ranges of library arguments), ``interrupts`` (Ctrl-C around child
processes)."""

from spec.claims import (
    CLAIMS,
    Check,
    Claim,
    ClaimResult,
    Expect,
    Outcome,
    claim,
    declared_in,
    exit_code_for,
    register,
    registered,
    select_checks,
)
from spec.errors import (
    ArgumentError,
    CanonmergeError,
    FormatError,
    InputError,
    InstrumentError,
    UsageError,
)
from spec.fragment_set import FragmentSet
from spec.ids import CONTENT_ID_BYTES, content_id_hex, parse_content_id_hex, require_content_id
from spec.ordering import (
    ORDER_KEY_BYTES,
    bag_order,
    canonical_order,
    order_key,
    total_order_bits,
    total_order_bits_of_pattern,
)
from spec.report import PartReport, Progress, Table, no_progress

__all__ = [
    "CLAIMS",
    "declared_in",
    "Check",
    "Expect",
    "CONTENT_ID_BYTES",
    "Claim",
    "ClaimResult",
    "FragmentSet",
    "ArgumentError",
    "CanonmergeError",
    "FormatError",
    "InputError",
    "InstrumentError",
    "UsageError",
    "ORDER_KEY_BYTES",
    "Outcome",
    "PartReport",
    "Progress",
    "Table",
    "no_progress",
    "bag_order",
    "canonical_order",
    "claim",
    "register",
    "registered",
    "select_checks",
    "content_id_hex",
    "exit_code_for",
    "order_key",
    "parse_content_id_hex",
    "require_content_id",
    "total_order_bits",
    "total_order_bits_of_pattern",
]
