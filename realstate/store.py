"""The directory replica store under its first name (``realstate.store.ReplicaStore``).

The stores now live in ``realstate.stores`` (a directory or an S3-compatible object store behind
one interface); this module keeps the original import path working."""

from realstate.stores.base import (
    DEFAULT_TEMP_AGE_S,
    MARKER_NAME,
    MARKER_TEXT,
    FragmentStore,
    require_one_fingerprint,
)
from realstate.stores.directory import DirectoryStore, ReplicaStore

__all__ = ["DEFAULT_TEMP_AGE_S", "MARKER_NAME", "MARKER_TEXT", "DirectoryStore", "FragmentStore", "ReplicaStore",
           "require_one_fingerprint"]
