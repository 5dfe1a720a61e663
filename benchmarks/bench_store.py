"""Benchmark: ``store merge`` between two S3 stores against copying the same bytes with plain boto3.

On a loopback moto server (its own process), a source store holds N fragments of about 1 MiB.
Measured, each into a fresh destination prefix:

- ``merge``: ``realstate.exchange.stores.anti_entropy.merge_stores`` (list both sides, GET each missing
  object with its size checked first, parse and re-hash it, re-encode, conditional PUT), with
  its default 8 concurrent transfers, and with 1;
- the floor: plain boto3 ``get_object(...).read()`` + ``put_object`` of the same keys, one after
  another, and with the same 8 threads.

The budget is merge <= 2x the plain copy.  Figures are medians over repeats; run:
    python benchmarks/bench_store.py [--fragments 100] [--mib 1] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch

from realstate.exchange.stores import open_store
from realstate.exchange.stores.anti_entropy import merge_stores
from realstate.kernel.fingerprint import Fingerprint
from realstate.kernel.fragment import Fragment
from realstate.processes.soak.endpoint import LOCAL_CREDENTIALS, MotoEndpoint

BUCKET = "canonmerge-bench"


def fragments(count: int, mib: float) -> list[Fragment]:
    layers, heads, head_dim = 4, 4, 64
    tokens = max(1, int(mib * (1 << 20) / (2 * layers * heads * head_dim * 4)))
    inv_freq = tuple(1.0 / (10000.0 ** (2 * i / head_dim)) for i in range(head_dim // 2))
    fp = Fingerprint("BenchSynthetic", layers, heads, head_dim, "float32", inv_freq, 10000.0, 1 << 20,
                     "synthetic:bench")
    gen = torch.Generator().manual_seed(0)
    shape = (layers, heads, tokens, head_dim)
    return [Fragment(fp, i, torch.randn(shape, generator=gen), torch.randn(shape, generator=gen))
            for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fragments", type=int, default=100)
    parser.add_argument("--mib", type=float, default=1.0, help="size of each fragment in MiB")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()

    import boto3

    with MotoEndpoint() as endpoint:
        client = boto3.session.Session().client(
            "s3", endpoint_url=endpoint.url, aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"], region_name="us-east-1",
            config=boto3.session.Config(max_pool_connections=32))
        client.create_bucket(Bucket=BUCKET)
        src = open_store(f"s3://{BUCKET}/src", create=True, s3_client=client)
        for fragment in fragments(args.fragments, args.mib):
            src.put(fragment)
        listed = src.listing()
        keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix="src/")["Contents"]
                if o["Key"].endswith(".cmfrag")]
        total = sum(listed.values())
        counter = iter(range(10**6))

        def fresh_prefix() -> str:
            return f"dst-{next(counter)}/"

        def drop(prefix: str) -> None:
            while True:
                found = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
                if not found:
                    return
                client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": o["Key"]} for o in found]})

        def plain_copy(workers: int) -> Callable[[str], None]:
            def run(prefix: str) -> None:
                def copy(key: str) -> None:
                    body = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
                    client.put_object(Bucket=BUCKET, Key=prefix + key[len("src/"):], Body=body)

                if workers == 1:
                    for key in keys:
                        copy(key)
                else:
                    with ThreadPoolExecutor(workers) as pool:
                        list(pool.map(copy, keys))
            return run

        def merge(workers: int) -> Callable[[str], None]:
            def run(prefix: str) -> None:
                dst = open_store(f"s3://{BUCKET}/{prefix}", create=True, s3_client=client)
                result = merge_stores(dst, src, workers=workers)
                assert result.added == len(listed)
            return run

        measures = {"plain boto3, sequential": plain_copy(1), f"plain boto3, {args.workers} threads":
                    plain_copy(args.workers), "store merge, 1 worker": merge(1),
                    f"store merge, {args.workers} workers": merge(args.workers)}
        times: dict[str, list[float]] = {name: [] for name in measures}
        for _ in range(args.repeats):
            for name, run in measures.items():  # interleaved, so load drifts hit every measure
                prefix = fresh_prefix()
                started = time.perf_counter()
                run(prefix)
                times[name].append(time.perf_counter() - started)
                drop(prefix)
    median = {name: statistics.median(t) for name, t in times.items()}
    floor_seq = median["plain boto3, sequential"]
    floor_par = median[f"plain boto3, {args.workers} threads"]
    ours = median[f"store merge, {args.workers} workers"]
    report = {"fragments": len(listed), "bytes": total, "repeats": args.repeats,
              "median_seconds": {k: round(v, 3) for k, v in median.items()},
              "ratio_merge_vs_plain_sequential": round(ours / floor_seq, 3),
              "ratio_merge_vs_plain_same_threads": round(ours / floor_par, 3),
              "ratio_merge_1_worker_vs_plain_sequential": round(median["store merge, 1 worker"] / floor_seq, 3)}
    for name, value in median.items():
        print(f"{name:32s} {value:8.3f} s  ({total / value / (1 << 20):7.1f} MiB/s)")
    print(f"merge ({args.workers} workers) / plain sequential copy: {report['ratio_merge_vs_plain_sequential']:.2f}x")
    print(f"merge ({args.workers} workers) / plain copy, same threads: "
          f"{report['ratio_merge_vs_plain_same_threads']:.2f}x")
    print(f"merge (1 worker) / plain sequential copy: {report['ratio_merge_1_worker_vs_plain_sequential']:.2f}x")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
