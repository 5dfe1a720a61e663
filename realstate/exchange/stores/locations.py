"""Store locations: a directory path or an ``s3://bucket/prefix`` URL, opened by one function.

Why locations are compared as strings here: "is DST inside SRC?" must be answered before DST
exists (a merge creates it only once its input has validated)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from realstate.exchange.fragment_file import DEFAULT_LIMITS, Limits
from realstate.exchange.stores.base import FragmentStore
from realstate.exchange.stores.directory import TEMP_NAME, DirectoryStore
from realstate.exchange.stores.s3 import is_s3_url, parse_s3_url
from spec import FormatError
from spec.store_marker import enclosing_store


def open_store(location: str | os.PathLike[str], *, create: bool = False,
               limits: Limits = DEFAULT_LIMITS, s3_client: Any = None) -> FragmentStore:
    """The store at ``location``: an ``s3://bucket/prefix`` URL or a directory path.
    ``create=True`` makes one where nothing is yet (never over anything else).  ``s3_client``:
    a boto3 S3 client to use instead of the one boto3's standard chain configures."""
    text = os.fspath(location)
    if create:
        refuse_store_in_store(text, s3_client)
    if isinstance(text, str) and is_s3_url(text):
        from realstate.exchange.stores.s3 import S3Store  # boto3 only when an S3 store is used

        return S3Store(text, create=create, limits=limits, client=s3_client)
    return DirectoryStore(text, create=create, limits=limits)


def refuse_store_in_store(location: str | os.PathLike[str], s3_client: Any = None) -> None:
    """Refuse to write a store that lies inside another one, at any depth (as written, through
    ``..`` or a symbolic link; for S3, under another store's prefix): it would be a foreign entry
    of that store."""
    text = os.fspath(location)
    if isinstance(text, str) and is_s3_url(text):
        from realstate.exchange.stores.s3 import enclosing_store_url

        outer = enclosing_store_url(text, s3_client)
        if outer is not None:
            raise FormatError(text, "store", f"lies inside the replica store {outer}; a store is never made or "
                                             f"written inside another (it would be a foreign entry there)")
        return
    outer_dir = enclosing_store(text, include_self=False)
    if outer_dir is not None:
        raise FormatError(text, "store", f"lies inside the replica store {outer_dir}; a store is never made or "
                                         f"written inside another (it would be a foreign entry there)")


def store_is_absent(location: str | os.PathLike[str]) -> bool:
    """Whether nothing is at ``location`` yet (a missing or empty directory, an empty S3
    prefix), so that a command may create a store there once its input has validated."""
    text = os.fspath(location)
    if isinstance(text, str) and is_s3_url(text):
        from realstate.exchange.stores.s3 import prefix_is_empty

        return prefix_is_empty(text)
    try:
        # a directory holding only writers' temporaries is a store being created: another first
        # writer is writing its marker (temporary, then rename), so this one creates it too
        return not os.path.lexists(text) or (os.path.isdir(text) and
                                             all(TEMP_NAME.fullmatch(name) for name in os.listdir(text)))
    except OSError as exc:
        raise FormatError(str(text), "store", f"cannot list: {exc.strerror or exc}") from None


def same_or_inside(inner: str, outer: str) -> bool:
    """Whether the store location ``inner`` is ``outer`` or lies inside it."""
    if is_s3_url(inner) and is_s3_url(outer):
        a, b = parse_s3_url(inner), parse_s3_url(outer)
        return a.bucket == b.bucket and a.prefix.startswith(b.prefix)
    if is_s3_url(inner) or is_s3_url(outer):
        return False
    try:
        return Path(inner).resolve().is_relative_to(Path(outer).resolve())
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        raise FormatError(inner, "store", f"cannot resolve the path: {exc}") from None
