"""A replica in an S3-compatible object store (AWS S3, MinIO, Ceph RGW, moto): ``s3://bucket/prefix``.

Layout: the marker object ``<prefix>CANONMERGE_STORE`` (the same text as a directory store's
marker) and one object ``<prefix><64 hex content id>.cmfrag`` per fragment, holding the same
bytes a directory store's file holds.

Why this is a faithful grow-only set: S3's conditional create (``PUT`` with ``If-None-Match: *``,
answered ``412 Precondition Failed`` when the key exists) is exactly "add if absent", and a
single ``PUT`` is atomic (an object appears whole or not at all, also when the client dies
mid-upload).  Listing the prefix is the set.

Reads trust nothing: the size the listing (or a ``HEAD``) reports is checked against the limits
before a byte of the body is fetched, the body must have exactly that size, and the fragment is
parsed by the strict reader and its content id recomputed and compared with the key.

Credentials, region and endpoint come only from boto3's standard chain (environment variables
such as ``AWS_ENDPOINT_URL_S3``, shared config files, instance roles); nothing here reads,
stores or prints a secret.  Errors name the object and the cause, never a credential."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from realstate.exchange.fragment_file import (
    DEFAULT_LIMITS,
    FILE_SUFFIX,
    FormatError,
    FragmentHeader,
    Limits,
    fragment_from_bytes,
    header_from_ranges,
)
from realstate.exchange.stores.base import (
    DEFAULT_TEMP_AGE_S,
    MARKER_NAME,
    MARKER_TEXT,
    MAX_MARKER_BYTES,
    FragmentStore,
    fragment_name,
)
from realstate.kernel.fragment import Fragment

SCHEME = "s3://"
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_SEGMENT = re.compile(r"[A-Za-z0-9!_.*'()+=,@~-]{1,255}")  # S3's "safe characters" (and a few more)
MAX_PREFIX_CHARS = 512  # keys are at most 1024 bytes; a fragment name adds 71
_FRAGMENT_NAME = re.compile(r"([0-9a-f]{64})" + re.escape(FILE_SUFFIX))
_CONFLICT_RETRIES = 5  # S3 answers 409 to concurrent conditional writes of one key: retry


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str  # "" or ends with "/"

    @property
    def url(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}"

    def key(self, name: str) -> str:
        return self.prefix + name


def is_s3_url(text: str) -> bool:
    return text.startswith(SCHEME)


def parse_s3_url(text: str) -> S3Location:
    """``s3://bucket`` or ``s3://bucket/some/prefix`` (a trailing ``/`` is optional).  Prefix
    segments use S3's safe characters only, so a location can always be printed literally."""
    if not is_s3_url(text):
        raise FormatError(text[:100], "store", f"not an {SCHEME} URL")
    bucket, _, prefix = text[len(SCHEME):].partition("/")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise FormatError(text[:100], "store", f"bucket name {bucket[:70]!r} is not a valid S3 bucket "
                                                       f"name (3-63 of a-z 0-9 . -)")
    prefix = prefix.rstrip("/")
    if len(prefix) > MAX_PREFIX_CHARS:
        raise FormatError(text[:100] + "...", "store", f"prefix is over {MAX_PREFIX_CHARS} characters")
    if prefix:
        for segment in prefix.split("/"):
            if not _SEGMENT.fullmatch(segment) or segment in (".", ".."):
                raise FormatError(text[:100], "store", f"prefix segment {segment[:40]!r} is not allowed "
                                                               f"(use A-Z a-z 0-9 and !_.*'()+=,@~-; no empty, "
                                                               f"'.' or '..' segments)")
        prefix += "/"
    return S3Location(bucket, prefix)


_CLIENT_LOCK = threading.Lock()
_CLIENT: Any = None


def default_client() -> Any:
    """One S3 client per process, configured only by boto3's standard chain (thread-safe)."""
    global _CLIENT
    with _CLIENT_LOCK:
        if _CLIENT is None:
            try:
                import boto3
                from botocore.config import Config
            except ImportError:
                raise FormatError("s3", "store", "S3 stores need boto3: pip install 'canonmerge[s3]'") \
                    from None
            _CLIENT = boto3.session.Session().client(
                "s3", config=Config(connect_timeout=10, read_timeout=60, max_pool_connections=32))
        return _CLIENT


def _error_code(exc: Exception) -> tuple[str, int]:
    response = getattr(exc, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, status


def _problem(exc: Exception) -> str:
    """A one-line cause for a botocore error (its messages name keys and hosts, never secrets)."""
    code, status = _error_code(exc)
    if code or status:
        message = getattr(exc, "response", {}).get("Error", {}).get("Message", "") or ""
        return f"{code or 'HTTP ' + str(status)}{': ' + message if message else ''}"
    name = type(exc).__name__
    if name == "NoCredentialsError":
        return "no credentials found by boto3's standard chain (environment, shared files, instance role)"
    return f"{name}: {exc}"


def s3_error(at: S3Location, where: str, doing: str, exc: Exception) -> FormatError:
    """A botocore error as an error naming the object (or the bucket) and the cause."""
    if _error_code(exc)[0] == "NoSuchBucket":
        return FormatError(at.url, "store", f"no such bucket {at.bucket!r}")
    return FormatError(where, "store", f"cannot {doing}: {_problem(exc)}")


def call(client: Any, at: S3Location, where: str, doing: str, method: str, **kwargs: Any) -> Any:
    """One S3 call; every botocore error becomes an error naming the object and the cause."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return getattr(client, method)(**kwargs)
    except (BotoCoreError, ClientError) as exc:
        raise s3_error(at, where, doing, exc) from None


def prefix_is_empty(location: str, client: Any = None) -> bool:
    """Whether no object at all lies under the location's prefix."""
    at = parse_s3_url(location)
    page = call(client if client is not None else default_client(), at, at.url, "list", "list_objects_v2",
                Bucket=at.bucket, Prefix=at.prefix, MaxKeys=1)
    return not page.get("Contents")


def enclosing_store_url(location: str, client: Any = None) -> str | None:
    """The store whose prefix strictly contains ``location``'s (its marker object is there),
    if any: a store created there would be a foreign entry of that one."""
    from botocore.exceptions import BotoCoreError, ClientError

    at = parse_s3_url(location)
    client = client if client is not None else default_client()
    segments = at.prefix.rstrip("/").split("/") if at.prefix else []
    for depth in range(len(segments)):
        outer = S3Location(at.bucket, "".join(f"{x}/" for x in segments[:depth]))
        try:
            client.head_object(Bucket=at.bucket, Key=outer.key(MARKER_NAME))
            return outer.url
        except ClientError as exc:
            code, status = _error_code(exc)
            if status != 404 or code == "NoSuchBucket":
                raise s3_error(at, outer.url + MARKER_NAME, "read the store marker", exc) from None
        except BotoCoreError as exc:
            raise s3_error(at, outer.url + MARKER_NAME, "read the store marker", exc) from None
    return None


class S3Store(FragmentStore):
    """A replica under ``s3://bucket/prefix``.  ``create=True`` writes the marker into an empty
    prefix (the bucket must exist: creating buckets is the operator's job)."""

    kind = "s3"

    def __init__(self, location: str | S3Location, *, create: bool = False,
                 limits: Limits = DEFAULT_LIMITS, client: Any = None) -> None:
        super().__init__(limits)
        self.at = location if isinstance(location, S3Location) else parse_s3_url(location)
        self.client = client if client is not None else default_client()
        if create:
            self._create_store()
        self._check_marker()

    @property
    def location(self) -> str:
        return self.at.url

    def where(self, cid: bytes) -> str:
        return self.at.url + fragment_name(cid)

    def _fail(self, where: str, doing: str, exc: Exception) -> FormatError:
        return s3_error(self.at, where, doing, exc)

    def _call(self, where: str, doing: str, method: str, **kwargs: Any) -> Any:
        return call(self.client, self.at, where, doing, method, **kwargs)

    # -- the store ----------------------------------------------------------------------------

    def _create_store(self) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        marker = self.at.key(MARKER_NAME)
        if self._marker_exists():
            return  # a store already: checked by _check_marker
        # no marker: create one only in an empty prefix (listing order puts digits before the
        # marker's name, so the marker is never looked for in a page of the listing)
        page = self._call(self.location, "list", "list_objects_v2", Bucket=self.at.bucket, Prefix=self.at.prefix,
                          Delimiter="/", MaxKeys=3)
        names = [o["Key"][len(self.at.prefix):] for o in page.get("Contents", [])]
        names += [p["Prefix"][len(self.at.prefix):] for p in page.get("CommonPrefixes", [])]
        if names:
            if self._marker_exists():
                return  # a concurrent creator made it (and then a fragment) while we looked
            raise FormatError(self.location, "store", f"not empty and not a canonmerge store "
                                                              f"(no {MARKER_NAME}; found {sorted(names)[:3]})")
        try:
            self.client.put_object(Bucket=self.at.bucket, Key=marker, Body=MARKER_TEXT.encode("ascii"),
                                   IfNoneMatch="*")
        except ClientError as exc:
            if _error_code(exc)[1] not in (409, 412):  # a concurrent creator got there first: fine
                raise self._fail(self.location, "create the store marker", exc) from None
        except BotoCoreError as exc:
            raise self._fail(self.location, "create the store marker", exc) from None

    def _marker_exists(self) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_object(Bucket=self.at.bucket, Key=self.at.key(MARKER_NAME))
            return True
        except ClientError as exc:
            code, status = _error_code(exc)
            if status != 404 or code == "NoSuchBucket":
                raise self._fail(self.location, "read the store marker", exc) from None
            return False
        except BotoCoreError as exc:
            raise self._fail(self.location, "read the store marker", exc) from None

    def _check_marker(self) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        where = self.at.url + MARKER_NAME
        try:
            reply = self.client.get_object(Bucket=self.at.bucket, Key=self.at.key(MARKER_NAME))
        except ClientError as exc:
            code, status = _error_code(exc)
            if code in ("NoSuchKey", "404") or (status == 404 and code != "NoSuchBucket"):
                raise FormatError(self.location, "store",
                                          f"not a canonmerge store (no {MARKER_NAME})") from None
            raise self._fail(where, "read the store marker", exc) from None
        except BotoCoreError as exc:
            raise self._fail(where, "read the store marker", exc) from None
        with reply["Body"] as body:
            if reply.get("ContentLength", 0) > MAX_MARKER_BYTES:
                raise FormatError(where, "store marker", "is not a small object")
            text = self._read_body(body, where, reply.get("ContentLength", 0))
        if text != MARKER_TEXT.encode("ascii"):
            raise FormatError(where, "store marker", "unknown store layout or version")

    def _read_body(self, body: Any, where: str, size: int) -> bytes:
        from botocore.exceptions import BotoCoreError

        try:
            data = body.read()
        except (BotoCoreError, OSError) as exc:
            raise FormatError(where, "store", f"cannot read: {_problem(exc)}") from None
        if len(data) != size:
            raise FormatError(where, "file size", f"got {len(data)} bytes, the object has {size}")
        return data

    def _scan(self) -> tuple[dict[bytes, int], list[tuple[str, str]]]:
        """The fragments as id -> size, and the foreign entries as (object URL, what): objects
        whose name is not a fragment's and nested prefixes are not part of the state."""
        found: dict[bytes, int] = {}
        foreign: list[tuple[str, str]] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.at.bucket, "Prefix": self.at.prefix, "Delimiter": "/"}
            if token:
                kwargs["ContinuationToken"] = token
            page = self._call(self.location, "list", "list_objects_v2", **kwargs)
            for nested in page.get("CommonPrefixes", []):
                foreign.append((self.at.url + nested["Prefix"][len(self.at.prefix):][:200], "a nested prefix"))
            for obj in page.get("Contents", []):
                name = obj["Key"][len(self.at.prefix):]
                if name == MARKER_NAME:
                    continue
                match = _FRAGMENT_NAME.fullmatch(name)
                if match is None:
                    foreign.append((self.at.url + name[:200], f"an object whose name is not <64 lowercase hex "
                                                              f"id>{FILE_SUFFIX}"))
                else:
                    found[bytes.fromhex(match.group(1))] = int(obj["Size"])
            if not page.get("IsTruncated"):
                return found, foreign
            token = page.get("NextContinuationToken")
            if not token:
                raise FormatError(self.location, "store", "the listing is truncated without a "
                                                          "continuation token")

    def listing(self) -> dict[bytes, int]:
        return self._scan()[0]

    def foreign(self) -> list[tuple[str, str]]:
        return self._scan()[1]

    def _keys_under(self, prefix: str) -> list[str]:
        keys: list[str] = []
        kwargs: dict[str, Any] = {"Bucket": self.at.bucket, "Prefix": prefix}
        while True:
            page = self._call(self.at.url, "list", "list_objects_v2", **kwargs)
            keys += [o["Key"] for o in page.get("Contents", [])]
            if not page.get("IsTruncated") or not page.get("NextContinuationToken"):
                return keys
            kwargs["ContinuationToken"] = page["NextContinuationToken"]

    def remove_foreign(self) -> tuple[list[str], list[tuple[str, str]]]:
        removed: list[str] = []
        kept: list[tuple[str, str]] = []
        for where, what in self.foreign():
            key = self.at.prefix + where[len(self.at.url):]
            keys = self._keys_under(key) if what == "a nested prefix" else [key]
            nested = [k for k in keys if k.rsplit("/", 1)[-1] == MARKER_NAME]
            if nested:
                inner = f"{SCHEME}{self.at.bucket}/{nested[0][:-len(MARKER_NAME)]}"
                kept.append((where, f"holds the replica store {inner}; move it out by hand"))
                continue
            for start in range(0, len(keys), 1000):
                batch = [{"Key": k} for k in keys[start:start + 1000]]
                reply = self._call(where, "remove", "delete_objects", Bucket=self.at.bucket,
                                   Delete={"Objects": batch, "Quiet": True})
                if reply.get("Errors"):
                    error = reply["Errors"][0]
                    raise FormatError(where, "foreign entry", f"cannot remove: {error.get('Code', '')}: "
                                                              f"{error.get('Message', '')}")
            removed.append(where)
        return removed, kept

    # -- reading ------------------------------------------------------------------------------

    def _head(self, cid: bytes) -> int | None:
        """The stored size under ``cid``; ``None`` when absent."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            reply = self.client.head_object(Bucket=self.at.bucket, Key=self.at.key(fragment_name(cid)))
        except ClientError as exc:
            code, status = _error_code(exc)
            if status == 404 and code != "NoSuchBucket":
                return None
            raise self._fail(self.where(cid), "stat", exc) from None
        except BotoCoreError as exc:
            raise self._fail(self.where(cid), "stat", exc) from None
        return int(reply["ContentLength"])

    def _exists(self, cid: bytes) -> bool:
        return self._head(cid) is not None

    def _check_size(self, size: int, where: str) -> None:
        if size > self.limits.max_bytes:
            raise FormatError(where, "file size", f"{size} bytes is over the limit of "
                                                          f"{self.limits.max_bytes} bytes")

    def _read(self, cid: bytes, size: int | None) -> Fragment:
        """The header first, with ranged reads, validated and matched against the object's size;
        only then the body: a hostile object's size never shows in this process's memory unless
        its header declares exactly that much valid tensor data."""
        from botocore.exceptions import BotoCoreError, ClientError

        where = self.where(cid)
        if size is None:
            size = self._head(cid)
            if size is None:
                raise KeyError(fragment_name(cid))
        self._check_size(size, where)  # before a byte of the body is fetched
        header = header_from_ranges(self._range_reader(cid, where), size, where, self.limits)
        if header.content_id != cid:
            raise FormatError(where, "content_id", f"declared {header.content_id.hex()}, not the id it is stored "
                                                   f"under")
        try:
            reply = self.client.get_object(Bucket=self.at.bucket, Key=self.at.key(fragment_name(cid)))
        except ClientError as exc:
            code, status = _error_code(exc)
            if status == 404 and code != "NoSuchBucket":
                raise KeyError(fragment_name(cid)) from None
            raise self._fail(where, "read", exc) from None
        except BotoCoreError as exc:
            raise self._fail(where, "read", exc) from None
        with reply["Body"] as body:
            if int(reply["ContentLength"]) != size:
                raise FormatError(where, "file size", f"the object is {reply['ContentLength']} bytes "
                                                              f"but was listed as {size}: it changed")
            data = self._read_body(body, where, size)
        return self._check_id_matches(cid, fragment_from_bytes(data, where, self.limits))

    def _range_reader(self, cid: bytes, where: str) -> Any:
        def read_range(offset: int, length: int) -> bytes:
            if length == 0:
                return b""
            reply = self._call(where, "read", "get_object", Bucket=self.at.bucket,
                               Key=self.at.key(fragment_name(cid)), Range=f"bytes={offset}-{offset + length - 1}")
            with reply["Body"] as body:
                got = int(reply["ContentLength"])
                if got > length:
                    raise FormatError(where, "file size", f"asked for {length} bytes, the endpoint sent {got}")
                return self._read_body(body, where, got)
        return read_range

    def _read_header(self, cid: bytes) -> FragmentHeader:
        where = self.where(cid)
        size = self._head(cid)
        if size is None:
            raise KeyError(fragment_name(cid))
        return header_from_ranges(self._range_reader(cid, where), size, where, self.limits)

    # -- writing ------------------------------------------------------------------------------

    def _create(self, cid: bytes, data: bytes) -> bool:
        """Conditional create: ``If-None-Match: *``; 412 means another writer stored this id
        first (the same fragment, by content addressing).  A body damaged in transit is refused
        by the endpoint through boto3's request checksum (CRC32 by default), and by every reader
        through the content id."""
        from botocore.exceptions import BotoCoreError, ClientError

        for attempt in range(_CONFLICT_RETRIES):
            try:
                self.step("upload sent")
                self.client.put_object(Bucket=self.at.bucket, Key=self.at.key(fragment_name(cid)), Body=data,
                                       IfNoneMatch="*")
                self.step("uploaded")
                return True
            except ClientError as exc:
                status = _error_code(exc)[1]
                if status == 412:
                    return False
                if status != 409 or attempt == _CONFLICT_RETRIES - 1:
                    raise self._fail(self.where(cid), "write", exc) from None
                time.sleep(0.05 * (attempt + 1))  # 409: a concurrent conditional write; retry
            except BotoCoreError as exc:
                raise self._fail(self.where(cid), "write", exc) from None
        raise AssertionError("unreachable")

    # -- leftovers ----------------------------------------------------------------------------

    def _uploads(self) -> list[dict[str, Any]]:
        uploads: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"Bucket": self.at.bucket, "Prefix": self.at.prefix}
        while True:
            page = self._call(self.location, "list multipart uploads", "list_multipart_uploads", **kwargs)
            uploads.extend(page.get("Uploads", []))
            if not page.get("IsTruncated"):
                return uploads
            kwargs.update(KeyMarker=page.get("NextKeyMarker", ""), UploadIdMarker=page.get("NextUploadIdMarker", ""))

    def temporaries(self) -> list[str]:
        """Incomplete multipart uploads under the prefix (canonmerge never starts one; other tools
        or killed uploaders leave them, invisible to listing but stored and billed)."""
        return sorted(f"{u['Key'][len(self.at.prefix):]} (upload {u['UploadId']})" for u in self._uploads())

    def clean_temporaries(self, older_than_s: float = DEFAULT_TEMP_AGE_S) -> list[str]:
        if not older_than_s >= 0:
            raise FormatError(self.location, "older_than_s", f"must be >= 0, got {older_than_s}")
        now, removed = datetime.now(timezone.utc), []
        for upload in self._uploads():
            started = upload.get("Initiated")
            if started is not None and (now - started).total_seconds() < older_than_s:
                continue
            name = f"{upload['Key'][len(self.at.prefix):]} (upload {upload['UploadId']})"
            self._call(self.at.url + upload["Key"][len(self.at.prefix):], "abort an upload", "abort_multipart_upload",
                       Bucket=self.at.bucket, Key=upload["Key"], UploadId=upload["UploadId"])
            removed.append(name)
        return sorted(removed)
