"""Replica stores behind one interface: a local directory or an S3-compatible object store.

``open_store("path/to/dir")`` or ``open_store("s3://bucket/prefix")`` returns a
``FragmentStore``; ``merge_stores(dst, src)`` (``realstate.exchange.stores.anti_entropy``) is
anti-entropy between any two of them.  The contract every backend keeps is in docs/STORE.md."""

from __future__ import annotations

from realstate.exchange.stores.base import (
    DEFAULT_TEMP_AGE_S,
    MARKER_NAME,
    MARKER_TEXT,
    FragmentStore,
    StepHook,
    VerifyReport,
    fragment_name,
    no_step,
    require_one_fingerprint,
)
from realstate.exchange.stores.directory import DirectoryStore
from realstate.exchange.stores.locations import open_store, refuse_store_in_store, same_or_inside, store_is_absent
from realstate.exchange.stores.s3 import S3Location, is_s3_url, parse_s3_url

__all__ = [
    "DEFAULT_TEMP_AGE_S",
    "MARKER_NAME",
    "MARKER_TEXT",
    "DirectoryStore",
    "FragmentStore",
    "S3Location",
    "StepHook",
    "VerifyReport",
    "fragment_name",
    "is_s3_url",
    "no_step",
    "open_store",
    "parse_s3_url",
    "refuse_store_in_store",
    "require_one_fingerprint",
    "same_or_inside",
    "store_is_absent",
]
