"""The S3 store against a real S3 endpoint on loopback (moto's server over HTTP): conditional
create, validated reads with the size checked before download, refusal of foreign objects,
anti-entropy with directory stores (idempotent, resumable), the command line, and errors."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
from pathlib import Path

import botocore.exceptions
import pytest

from canonmerge.cli import main
from realstate.exchange.fragment_file import Limits, fragment_to_bytes, save_fragment
from realstate.exchange.stores import DirectoryStore, open_store
from realstate.exchange.stores.anti_entropy import merge_stores
from realstate.exchange.stores.s3 import S3Store
from realstate.kernel.fragment import fragment_set
from realstate.kernel.render import canonical_render
from spec import FormatError
from tests.realstate_helpers import random_fragment, tiny_fingerprint
from tests.s3_helpers import SECRET, LoopbackS3, loopback_s3, subprocess_env, use_endpoint

ROOT = Path(__file__).resolve().parent.parent
FP = tiny_fingerprint()
FRAGMENTS = [random_fragment(FP, n, seed=40 + n, start=n) for n in (1, 2, 3, 4, 5)]
_names = itertools.count()


@pytest.fixture(scope="module")
def s3() -> LoopbackS3:
    with loopback_s3() as endpoint:
        yield endpoint


@pytest.fixture
def bucket(s3: LoopbackS3, monkeypatch: pytest.MonkeyPatch) -> str:
    use_endpoint(monkeypatch, s3.env)
    return s3.bucket(f"canonmerge-test-{next(_names)}")


def objects(s3: LoopbackS3, bucket: str) -> dict[str, bytes]:
    """Every object in the bucket with its bytes (to show a failing command changed nothing)."""
    listed = s3.client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"]: s3.client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listed}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_endpoint_honours_if_none_match(s3: LoopbackS3, bucket: str) -> None:
    """What the store's conditional create relies on, checked on the endpoint itself (moto 5.2)."""
    s3.client.put_object(Bucket=bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(botocore.exceptions.ClientError) as caught:
        s3.client.put_object(Bucket=bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert s3.client.get_object(Bucket=bucket, Key="k")["Body"].read() == b"first"


def test_put_is_a_conditional_create_and_reads_validate(s3: LoopbackS3, bucket: str) -> None:
    store = open_store(f"s3://{bucket}/replica/a", create=True)
    assert isinstance(store, S3Store) and store.location == f"s3://{bucket}/replica/a/"
    assert store.ids() == [] and store.fingerprint() is None
    assert store.put(FRAGMENTS[0]) is True
    stored = objects(s3, bucket)
    assert store.put(FRAGMENTS[0].copy()) is False
    assert store._create(FRAGMENTS[0].content_id, b"other bytes") is False  # the 412 path itself
    assert objects(s3, bucket) == stored  # nothing overwritten
    assert store.put(FRAGMENTS[1]) is True
    assert store.ids() == sorted(f.content_id for f in FRAGMENTS[:2])
    assert store.get(FRAGMENTS[1].content_id.hex()) == FRAGMENTS[1]
    assert FRAGMENTS[0].content_id in store and FRAGMENTS[3].content_id not in store
    with pytest.raises(KeyError):
        store.get(FRAGMENTS[3].content_id)
    assert store.fragments() == fragment_set(FRAGMENTS[:2])
    assert open_store(store.location).fingerprint() == FP  # from a ranged read of one header
    assert sorted(stored) == sorted(["replica/a/CANONMERGE_STORE", f"replica/a/{FRAGMENTS[0].content_id.hex()}.cmfrag"])
    assert store.verify().ok and store.verify().checked == 2


def test_concurrent_conditional_creates_admit_exactly_one(bucket: str) -> None:
    store = open_store(f"s3://{bucket}/race", create=True)
    results: list[bool] = []
    barrier = threading.Barrier(6)

    def writer() -> None:
        barrier.wait()
        results.append(store.put(FRAGMENTS[2], checked=True))

    threads = [threading.Thread(target=writer) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 5 + [True]
    assert store.fragments() == fragment_set(FRAGMENTS[2:3])


def test_the_size_limit_is_checked_before_any_download(bucket: str) -> None:
    store = open_store(f"s3://{bucket}/big", create=True)
    store.put(FRAGMENTS[4])
    downloads = []
    store.client.meta.events.register("before-call.s3.GetObject", lambda **kw: downloads.append(kw))
    small = S3Store(store.location, limits=Limits(max_bytes=64), client=store.client)
    downloads.clear()  # opening read the marker
    with pytest.raises(FormatError, match="over the limit of 64 bytes") as caught:
        small.get(FRAGMENTS[4].content_id)
    assert caught.value.source == store.where(FRAGMENTS[4].content_id)
    with pytest.raises(FormatError, match="over the limit"):
        small.fragments()
    assert downloads == []  # refused from HEAD / the listing's size alone


def _corrupt(s3: LoopbackS3, bucket: str, key: str) -> None:
    data = bytearray(s3.client.get_object(Bucket=bucket, Key=key)["Body"].read())
    data[-3] ^= 0x01
    s3.client.put_object(Bucket=bucket, Key=key, Body=bytes(data))


def test_corrupt_misnamed_and_foreign_objects_are_refused(s3: LoopbackS3, bucket: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    store = open_store(f"s3://{bucket}/r", create=True)
    for f in FRAGMENTS[:3]:
        store.put(f)
    _corrupt(s3, bucket, f"r/{FRAGMENTS[1].content_id.hex()}.cmfrag")
    s3.client.put_object(Bucket=bucket, Key=f"r/{FRAGMENTS[3].content_id.hex()}.cmfrag",
                         Body=fragment_to_bytes(FRAGMENTS[4]))  # content of another id
    report = store.verify()
    assert report.checked == 4 and len(report.corrupt) == 2  # every problem, not just the first
    assert {w.rsplit("/", 1)[1][:64] for w, _ in report.corrupt} == {FRAGMENTS[1].content_id.hex(),
                                                                     FRAGMENTS[3].content_id.hex()}
    problems = " | ".join(p for _, p in report.corrupt)
    assert "corrupt or tampered" in problems and "hashes to" in problems
    before = objects(s3, bucket)
    code, out, err = cli(capsys, "store", "verify", store.location)
    assert code == 2 and "2 CORRUPTED" in out and err.count("error: s3://") == 2 and "Traceback" not in err
    code, out, _ = cli(capsys, "store", "verify", store.location, "--json")
    assert code == 2 and json.loads(out)["ok"] is False and len(json.loads(out)["corrupt"]) == 2
    code, _, err = cli(capsys, "store", "list", store.location)
    assert code == 2 and "corrupt or tampered" in err
    assert objects(s3, bucket) == before
    ids = store.ids()  # foreign objects are named, never fatal
    s3.client.put_object(Bucket=bucket, Key="r/notes.txt", Body=b"hi")
    s3.client.put_object(Bucket=bucket, Key="r/nested/x", Body=b"hi")
    assert store.ids() == ids
    assert sorted(store.foreign()) == [(f"s3://{bucket}/r/nested/", "a nested prefix"),
                                       (f"s3://{bucket}/r/notes.txt", "an object whose name is not <64 lowercase "
                                                                      "hex id>.cmfrag")]


def test_store_locations_and_markers_are_checked(s3: LoopbackS3, bucket: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    s3.client.put_object(Bucket=bucket, Key="foreign/data.bin", Body=b"x")
    for location, says in [(f"s3://{bucket}/nothing", "not a canonmerge store"),
                           ("s3://no-such-bucket-here/x", "no such bucket"),
                           ("s3://Bad_Bucket/x", "not a valid S3 bucket name"),
                           (f"s3://{bucket}/a/../b", "not allowed"),
                           (f"s3://{bucket}/a\x1b[2Jb", "not allowed")]:
        with pytest.raises(FormatError, match=says):
            open_store(location)
        code, out, err = cli(capsys, "store", "list", location)
        assert code == 2 and says in err and "Traceback" not in err and "\x1b" not in err
    with pytest.raises(FormatError, match="not empty and not a canonmerge store"):
        open_store(f"s3://{bucket}/foreign", create=True)
    s3.client.put_object(Bucket=bucket, Key="odd/CANONMERGE_STORE", Body=b"something else")
    with pytest.raises(FormatError, match="unknown store layout"):
        open_store(f"s3://{bucket}/odd")
    assert sorted(objects(s3, bucket)) == ["foreign/data.bin", "odd/CANONMERGE_STORE"]


def test_anti_entropy_between_s3_and_directory_stores(bucket: str, tmp_path: Path) -> None:
    a = open_store(f"s3://{bucket}/a", create=True)
    b = DirectoryStore(tmp_path / "b", create=True)
    for f in FRAGMENTS[:3]:
        a.put(f)
    for f in FRAGMENTS[2:]:
        b.put(f)
    first = merge_stores(a, b)
    assert (first.listed, first.missing, first.added) == (3, 2, 2)
    assert merge_stores(a, b).added == 0  # idempotent
    assert merge_stores(b, a).added == 2
    c = merge_stores(f"s3://{bucket}/c", a)  # a destination that does not exist yet is created
    assert c.added == 5 and c.dst == f"s3://{bucket}/c/"
    expected = canonical_render(FRAGMENTS).digest()
    for store in (a, b, open_store(f"s3://{bucket}/c")):
        assert store.fragments() == fragment_set(FRAGMENTS)
        assert store.render().digest() == expected


def test_an_interrupted_merge_leaves_whole_fragments_and_resumes(bucket: str, tmp_path: Path) -> None:
    src = DirectoryStore(tmp_path / "src", create=True)
    for f in FRAGMENTS:
        src.put(f)
    dst = open_store(f"s3://{bucket}/dst", create=True)
    real_put, calls = dst.put, []

    def dying_put(fragment, *, checked=False):  # the process "dies" after two writes
        calls.append(fragment)
        if len(calls) > 2:
            raise KeyboardInterrupt
        return real_put(fragment, checked=checked)

    dst.put = dying_put  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        merge_stores(dst, src, workers=1)
    fresh = open_store(dst.location)
    assert len(fresh.ids()) == 2 and fresh.verify().ok  # only whole, valid fragments
    resumed = merge_stores(fresh, src)
    assert (resumed.missing, resumed.added) == (3, 3)
    assert fresh.fragments() == src.fragments()


def test_a_merge_into_its_own_source_is_refused(bucket: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    outer = open_store(f"s3://{bucket}/outer", create=True)
    outer.put(FRAGMENTS[0])
    local = DirectoryStore(tmp_path / "local", create=True)
    local.put(FRAGMENTS[1])
    cases = [(f"s3://{bucket}/outer/inner", outer.location, "lies inside the source"),
             (outer.location, outer.location, "is the source"),
             (str(tmp_path / "local" / "sub"), str(local.path), "lies inside the source"),
             (str(tmp_path), str(local.path), "lies inside the destination")]
    for dst, src, says in cases:
        code, _, err = cli(capsys, "store", "merge", dst, src)
        assert code == 2 and says in err and "Traceback" not in err, err
    assert outer.ids() == [FRAGMENTS[0].content_id] and local.ids() == [FRAGMENTS[1].content_id]
    assert not (tmp_path / "local" / "sub").exists()


def test_the_command_line_with_s3_stores(s3: LoopbackS3, bucket: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    files = []
    for i, f in enumerate(FRAGMENTS[:3]):
        files.append(str(tmp_path / f"f{i}.cmfrag"))
        save_fragment(f, files[-1])
    s1, s2 = f"s3://{bucket}/s1", f"s3://{bucket}/s2"
    code, out, _ = cli(capsys, "store", "put", s1, *files[:2], "--json")
    assert code == 0 and json.loads(out)["added"] == 2 and json.loads(out)["kind"] == "s3"
    assert cli(capsys, "store", "put", str(tmp_path / "d"), files[2])[0] == 0
    code, out, _ = cli(capsys, "store", "merge", s2, s1, "--json")
    assert code == 0 and json.loads(out)["added"] == 2
    code, out, _ = cli(capsys, "store", "merge", s2, str(tmp_path / "d"), "--json")
    assert code == 0 and json.loads(out)["added"] == 1 and json.loads(out)["total"] == 3
    code, out, _ = cli(capsys, "store", "list", s2, "--json")
    listed = json.loads(out)["fragments"]
    assert code == 0 and len(listed) == 3 and all(r["file"].startswith(s2) for r in listed)
    code, out, _ = cli(capsys, "store", "verify", s2)
    assert code == 0 and "every one is intact" in out
    code, out, _ = cli(capsys, "store", "clean", s2, "--older-than", "0", "--json")
    assert code == 0 and json.loads(out)["removed"] == []
    upload = s3.client.create_multipart_upload(Bucket=bucket, Key=f"s2/{'0' * 64}.cmfrag")  # another tool's
    code, out, _ = cli(capsys, "store", "clean", s2, "--older-than", "0", "--json")
    assert code == 0 and json.loads(out)["removed"] == [f"{'0' * 64}.cmfrag (upload {upload['UploadId']})"]
    assert SECRET not in capsys.readouterr().out


def test_credentials_are_never_printed_and_a_dead_endpoint_is_exit_2(s3: LoopbackS3, bucket: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    store = open_store(f"s3://{bucket}/creds", create=True)
    store.put(FRAGMENTS[0])
    code, out, err = cli(capsys, "store", "list", store.location, "--json")  # the secret is in os.environ
    assert code == 0 and json.loads(out)["fragments"][0]["id"] == FRAGMENTS[0].content_id.hex()
    assert SECRET not in out + err
    dead = {**subprocess_env(s3.env), "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9", "AWS_MAX_ATTEMPTS": "1"}
    run = subprocess.run([sys.executable, "-m", "canonmerge", "store", "list", store.location], capture_output=True,
                         text=True, env=dead, cwd=ROOT, timeout=120)  # a whole process: warnings included
    assert run.returncode == 2 and "cannot" in run.stderr and store.location in run.stderr
    assert SECRET not in run.stdout + run.stderr and "Traceback" not in run.stderr


def test_an_s3_store_takes_version_2_fragments_whole(bucket: str, tmp_path: Path) -> None:
    from tests.test_store_replica import with_inputs

    kept = with_inputs(FRAGMENTS[1])
    a = open_store(f"s3://{bucket}/v2", create=True)
    assert a.put(kept) is True and a.put(FRAGMENTS[0]) is True and a.put(kept.copy()) is False
    back = a.get(kept.content_id)
    assert back.version == 2 and back == kept and back.inputs is not None
    b = DirectoryStore(tmp_path / "b", create=True)
    assert merge_stores(b, a).added == 2 and b.get(kept.content_id).inputs.shape == kept.inputs.shape
